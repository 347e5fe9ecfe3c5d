"""Differential fuzzing: Hypothesis draws small programs over the op set, both sides run them.

A `Program` is a few leaves (float32 tensors of small shapes, values on a 1/4 grid so sums are
exact) and a few steps, each an op of `harness.opmatrix.registry` applied to earlier values. Its
source text is a case file in the project's format (`torch_side`, `engine_side`, `CHECKS`):
the fuzzer runs exactly that text, so what it prints on a failure is what it ran. Both sides
compute the output and the gradients of every leaf for the loss `sum(out * cot)` with
`cot = ones`: the engine's `out.backward()` (burn seeds a non-scalar backward with ones) and
torch's `out.backward(torch.ones_like(out))`. No rule outside the program takes part, so a
shrunk failure names the culprit: with `(out * cot).sum()` a wrong `mul` rule would make every
program fail (and cancel itself in programs that use `mul`). Non-uniform weights come from the
program's own `mul` by a leaf; the op matrix uses random cotangents per op.

Programs stay inside the ops' domains, so that a disagreement is a finding and not a known
divergence: each value carries an interval, and `log`, `sqrt`, `recip`, `div`... are drawn
only where the interval keeps them away from 0, `exp` only where it cannot overflow, and no
value may exceed `BOUND` in magnitude. Which ops are drawn, and the interval rule of each, are
the `fuzz` facts of their registrations (harness/engine/ops/). Ops whose conventions differ
on purpose at kinks (`max()` on ties, `cast`) are left out; `harness.opmatrix.divergences` covers
them in the matrix.

`python -m harness.opmatrix.fuzz --examples 5000` runs a longer search; on a failure it prints the
shrunk program as a case file, the comparison and the float64 third opinion, and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from harness.cli import exit_code, positive_int
from harness.diff import TensorDiff, diff_arrays
from harness.engine.ops.facts import Abs, FuzzBinary, FuzzElementwise, FuzzStructural, size
from harness.opmatrix.inject import flipped_rule, rule_name
from harness.opmatrix.opinion import Opinion, render_opinion, third_opinion
from harness.opmatrix.registry import ENGINE_IMPORT, PAIRS, pair, render
from harness.report import row_summary
from harness.tolerances import Tolerance

BOUND = 50.0  # no intermediate value may exceed this magnitude (keeps rtol meaningful)
DTYPE = "float32"
# Looser than the float32 table (atol 1e-6): a composed program amplifies rounding through
# cancellation. Found by the 5000-example run: d/dx exp(tanh(exp(1.5))) goes through
# tanh' = 1 - y*y at y ~ 0.99975, where the engine's float32 formula is off by 1.2e-6 (torch's
# kernel by 2e-7; float64 as the judge). A wrong rule (sign, formula) is off by O(1).
FUZZ_TOL = Tolerance(
    1e-5,
    rtol=1e-4,
    reason="composed float32 programs amplify rounding (harness.opmatrix.fuzz.FUZZ_TOL)",
)
CI_EXAMPLES = 100
LEAF_SHAPES = ((), (3,), (2, 3), (3, 2), (1, 3), (2, 1))


@dataclass(frozen=True)
class Leaf:
    """A float32 input: its shape and flat values (multiples of 1/4)."""

    shape: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Step:
    """`op` (a registry pair name) applied to earlier values (leaves first, then steps)."""

    op: str
    args: tuple[int, ...]
    params: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Program:
    """Leaves and steps; the last value is the output."""

    leaves: tuple[Leaf, ...]
    steps: tuple[Step, ...]
    out_shape: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.steps)


# ---------------------------------------------------------------------------------------------
# The ops the fuzzer draws, and the abstract value (a shape and an interval holding every
# element) of each step's result: from the checks' `fuzz` facts (harness/engine/ops/).

_FUZZED = [(p.name, p.fuzz) for p in PAIRS if p.fuzz is not None]
UNARY_BY_NAME: dict[str, FuzzElementwise] = {
    n: f for n, f in _FUZZED if isinstance(f, FuzzElementwise)
}
BINARY_BY_NAME: dict[str, FuzzBinary] = {n: f for n, f in _FUZZED if isinstance(f, FuzzBinary)}
STRUCTURAL_BY_NAME: dict[str, FuzzStructural] = {
    n: f for n, f in _FUZZED if isinstance(f, FuzzStructural)
}
UNARY_OPS = tuple(UNARY_BY_NAME)
BINARY_OPS = tuple(BINARY_BY_NAME)
STRUCTURAL_OPS = tuple(STRUCTURAL_BY_NAME)


def binary_result(op: str, a: Abs, b: Abs) -> Abs | None:
    """The result of a two-operand op on `a`, `b`, or None when it does not apply."""
    return BINARY_BY_NAME[op].result(a, b)


def structural_result(op: str, x: Abs, dim: int) -> Abs | None:
    """Reductions, softmaxes and shape ops (one operand, maybe a dim); None if inapplicable."""
    return STRUCTURAL_BY_NAME[op].result(x, dim)


def _fits(v: Abs | None) -> bool:
    return v is not None and v.mag <= BOUND and size(v.shape) <= 36


# ---------------------------------------------------------------------------------------------
# The Hypothesis strategy


@st.composite
def leaves(draw) -> tuple[Leaf, Abs]:
    """A leaf on the 1/4 grid: anywhere in [-2, 2], or positive in [0.5, 2]."""
    shape = draw(st.sampled_from(LEAF_SHAPES))
    positive = draw(st.booleans())
    lo, hi = (2, 8) if positive else (-8, 8)
    n = size(shape)
    ints = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    leaf = Leaf(shape, tuple(k / 4 for k in ints))
    return leaf, Abs(shape, lo / 4, hi / 4)


@st.composite
def steps_for(draw, pool: list[Abs]) -> tuple[Step, Abs]:
    """One applicable step over `pool`; its first operand is preferably the latest value."""
    first = len(pool) - 1 - draw(st.integers(0, len(pool) - 1))
    x = pool[first]
    kind = draw(st.sampled_from(("unary", "structural", "binary")))
    if kind == "binary":
        options = [
            (op, j)
            for op in BINARY_OPS
            for j in range(len(pool))
            if _fits(binary_result(op, x, pool[j]))
        ]
        if options:
            op, j = draw(st.sampled_from(options))
            return Step(op, (first, j)), binary_result(op, x, pool[j])
    if kind == "structural":
        options = []
        for op, fact in STRUCTURAL_BY_NAME.items():
            dims = fact.dims(len(x.shape)) if fact.dims else [0]
            options += [(op, d) for d in dims if _fits(fact.result(x, d))]
        if options:
            op, d = draw(st.sampled_from(options))
            params = (("dim", d),) if STRUCTURAL_BY_NAME[op].dims else ()
            return Step(op, (first,), params), structural_result(op, x, d)
    unary = [op for op, u in UNARY_BY_NAME.items() if u.ok(x) and _fits(Abs(x.shape, *u.bounds(x)))]
    op = draw(st.sampled_from(unary))  # never empty: neg always fits
    return Step(op, (first,)), Abs(x.shape, *UNARY_BY_NAME[op].bounds(x))


@st.composite
def programs(draw, max_leaves: int = 3, max_steps: int = 5) -> Program:
    """A program of 1..max_leaves leaves and 1..max_steps steps, shapes and domains fitting."""
    drawn = [draw(leaves()) for _ in range(draw(st.integers(1, max_leaves)))]
    pool = [a for _, a in drawn]
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        step, result = draw(steps_for(pool))
        steps.append(step)
        pool.append(result)
    return Program(tuple(leaf for leaf, _ in drawn), tuple(steps), pool[-1].shape)


# ---------------------------------------------------------------------------------------------
# Source text: the program as a case file


def _names(program: Program) -> list[str]:
    return [f"x{k}" for k in range(len(program.leaves))] + [
        f"v{k}" for k in range(len(program.steps))
    ]


def _nested(values: Sequence[float], shape: tuple[int, ...]):
    return np.array(values, dtype=np.float64).reshape(shape).tolist()


def _step_exprs(program: Program, dtype: str) -> list[tuple[str, str, str]]:
    """(variable, engine expression, torch expression) per step."""
    names = _names(program)
    rows = []
    for k, step in enumerate(program.steps):
        args = dict(zip(("a", "b"), (names[i] for i in step.args), strict=False))
        engine_expr, torch_expr = render(pair(step.op), dtype, args, dict(step.params))
        rows.append((f"v{k}", engine_expr, torch_expr))
    return rows


def case_source(program: Program, name: str = "fuzz_found", dtype: str = DTYPE) -> str:
    """The program as a ready-to-paste `cases/<name>.py` (torch_side, engine_side, CHECKS)."""
    out = _names(program)[-1]
    data = [_nested(leaf.values, leaf.shape) for leaf in program.leaves]
    steps = _step_exprs(program, dtype)
    grads = ", ".join(f'"grad.x{k}": x{k}.grad' for k in range(len(data)))
    egrads = ", ".join(f'"grad.x{k}": x{k}.grad(grads)' for k in range(len(data)))
    ops = ", ".join(s.op for s in program.steps)
    lines = [
        f'"""{name}: a {len(program.steps)}-step program ({ops}) found by harness.opmatrix.fuzz,',
        "on which the engine and PyTorch disagree (the output or a leaf gradient of sum(out)).",
        '"""',
        "",
        "import torch",
        "",
        "from harness.case import agree",
        ENGINE_IMPORT,
        "from harness.tolerances import Tolerance",
        "",
        "",
        "def torch_side():",
    ]
    lines += [
        f"    x{k} = torch.tensor({d}, dtype=torch.{dtype}, requires_grad=True)"
        for k, d in enumerate(data)
    ]
    lines += [f"    {v} = {t}" for v, _, t in steps]
    lines += [
        f"    {out}.backward(torch.ones_like({out}))",
        f'    return {{"out": {out}, {grads}}}',
        "",
        "",
        "def engine_side():",
        "    device = Device.flex().autodiff()",
    ]
    lines += [
        f'    x{k} = Tensor.from_floats({d}, device, dtype="{dtype}").require_grad()'
        for k, d in enumerate(data)
    ]
    lines += [f"    {v} = {e}" for v, e, _ in steps]
    lines += [
        f"    grads = {out}.backward()  # burn seeds a non-scalar backward with ones",
        f'    return {{"out": {out}, {egrads}}}',
        "",
        "",
        'CHECKS = [agree("out"), agree("grad.*")]',
        "# The fuzzer's tolerance, so that this case fails exactly when the fuzzer did.",
        "TOLERANCES = {",
        '    "*": Tolerance(',
        f"        {FUZZ_TOL.atol!r},",
        f"        rtol={FUZZ_TOL.rtol!r},",
        f'        reason="{FUZZ_TOL.reason}",',
        "    ),",
        "}",
        "",
    ]
    return "\n".join(lines)


def run_source(source: str) -> tuple[dict, dict]:
    """Execute a case text; return (torch values, engine values) as numpy arrays or None."""
    namespace: dict = {}
    exec(compile(source, "<fuzz case>", "exec"), namespace)
    with np.errstate(all="ignore"):
        return _to_numpy(namespace["torch_side"]()), _to_numpy(namespace["engine_side"]())


def _to_numpy(values: dict) -> dict:
    out = {}
    for key, v in values.items():
        if v is None:
            out[key] = None
        elif hasattr(v, "detach"):
            out[key] = v.detach().numpy().copy()
        else:
            out[key] = np.array(v.numpy())
    return out


# ---------------------------------------------------------------------------------------------
# Checking one program


@dataclass
class Verdict:
    """The comparison of one program: rows by key, failures, and float64 opinions."""

    program: Program
    rows: dict[str, TensorDiff | str] = field(default_factory=dict)
    opinions: dict[str, Opinion] = field(default_factory=dict)

    @property
    def failures(self) -> list[str]:
        return [k for k, r in self.rows.items() if isinstance(r, str) or not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failures


def check_program(program: Program, *, opinions: bool = True) -> Verdict:
    """Run the program's case text on both sides and compare every value."""
    verdict = Verdict(program)
    t, e = run_source(case_source(program))
    for key in t:
        a, b = t[key], e.get(key)
        if a is not None and b is not None:
            verdict.rows[key] = diff_arrays(a, b, FUZZ_TOL, key=key)
        elif a is not None or b is not None:  # an unused leaf has no gradient on either side
            verdict.rows[key] = _missing(a, b)
    if opinions and not verdict.ok:
        _add_opinions(verdict, t, e)
    return verdict


def _missing(a, b) -> str:
    return f"gradient missing on the {'torch' if a is None else 'engine'} side"


def _add_opinions(verdict: Verdict, t: dict, e: dict) -> None:
    """Recompute the torch side in float64 and judge each failing tensor."""
    ref, _ = run_source(case_source(verdict.program, dtype="float64"))
    for key in verdict.failures:
        row = verdict.rows[key]
        if isinstance(row, TensorDiff) and row.status == "fail" and ref.get(key) is not None:
            verdict.opinions[key] = third_opinion(
                t[key], e[key], ref[key], FUZZ_TOL, row.worst_index
            )


def render_verdict(verdict: Verdict) -> str:
    """Failing rows with the worst element and the float64 opinion."""
    lines = []
    for key in verdict.failures:
        row = verdict.rows[key]
        if isinstance(row, str):
            lines.append(f"FAIL {key}: {row}")
            continue
        lines.append(f"FAIL {key}: {row_summary(row)}")
        if key in verdict.opinions:
            lines.append(f"     {render_opinion(verdict.opinions[key])}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Searching


@dataclass
class FuzzRun:
    """The outcome of a search: examples tried and the shrunk failure, if any."""

    examples: int
    failure: Verdict | None

    @property
    def ok(self) -> bool:
        return self.failure is None


def fuzz(
    max_examples: int = CI_EXAMPLES,
    *,
    seed: int | None = None,
    max_steps: int = 5,
    on_example: Callable[[int], None] | None = None,
) -> FuzzRun:
    """Search for a disagreeing program; shrink the first one found. `on_example(count)` is
    called after each program run (progress display).

    Deterministic: without `seed` Hypothesis derandomizes (a fixed seed derived from the test),
    and no example database is read or written. The last failing program Hypothesis runs is
    its shrunk minimal example (it replays it once more after shrinking).
    """
    count = 0
    failures: list[Verdict] = []

    @settings(
        max_examples=max_examples,
        derandomize=seed is None,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs(max_steps=max_steps))
    def prop(program: Program) -> None:
        nonlocal count
        count += 1
        verdict = check_program(program, opinions=False)
        if on_example is not None:
            on_example(count)
        if not verdict.ok:
            failures.append(verdict)
            raise AssertionError(render_verdict(verdict))

    if seed is not None:
        prop = hypothesis_seed(seed)(prop)
    try:
        prop()
    except AssertionError:
        shrunk = failures[-1].program
        return FuzzRun(count, check_program(shrunk))
    return FuzzRun(count, None)


def render_run(run: FuzzRun, name: str = "fuzz_found") -> str:
    """The report of a search: a one-line summary, and on failure the case text to paste."""
    if run.ok:
        return f"fuzz: {run.examples} programs, torch and engine agree (tol {FUZZ_TOL.describe()})"
    failure = run.failure
    return "\n".join(
        [
            f"fuzz: FAIL after {run.examples} programs; shrunk to {len(failure.program)} step(s)",
            render_verdict(failure),
            f"\n# ---- cases/{name}.py " + "-" * 40,
            case_source(failure.program, name).rstrip("\n"),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.opmatrix.fuzz [--examples N] [--seed S]`: exit 1 on a disagreement."""
    parser = argparse.ArgumentParser(prog="python -m harness.opmatrix.fuzz", description=__doc__)
    parser.add_argument("--examples", type=positive_int, default=CI_EXAMPLES)
    parser.add_argument("--seed", type=int, help="random seed (default: derandomized)")
    parser.add_argument("--max-steps", type=positive_int, default=5)
    parser.add_argument(
        "--inject-flip", type=rule_name, metavar="OP", help="demo: flip OP's backward rule"
    )
    parser.add_argument("--name", default="fuzz_found", help="case name for a failure")
    args = parser.parse_args(argv)

    with flipped_rule(args.inject_flip) if args.inject_flip else contextlib.nullcontext():
        run = fuzz(
            args.examples,
            seed=args.seed,
            max_steps=args.max_steps,
            on_example=_progress(args.examples, sys.stderr),
        )
    print(render_run(run, args.name))
    return exit_code(run.ok)


def _progress(total: int, stream: TextIO) -> Callable[[int], None]:
    """One stderr line per tenth of the programs (shrinking runs past `total` are not shown)."""
    start = time.perf_counter()
    every = max(1, total // 10)

    def show(count: int) -> None:
        if count % every == 0 and count <= total:
            elapsed = time.perf_counter() - start
            print(f"fuzz: {count}/{total} programs ({elapsed:.1f} s)", file=stream, flush=True)

    return show


if __name__ == "__main__":
    sys.exit(main())
