"""One cell of the op matrix: (op, dtype, shape, value set), run on both sides and compared.

In each cell both frameworks get the same inputs; forward values are compared after the
pair's declared layout mapping, raw output shapes are compared separately, and vector-Jacobian
products are compared for every float input: the engine backpropagates from `<out, cot>`
(`_seeded`), PyTorch runs `autograd.grad(out, inputs, cot)`, with one seeded random cotangent
per cell. Tolerances come from `harness.tolerances`, the statistics from `harness.diff`; a
failing float32 comparison gets a float64 third opinion (`harness.opmatrix.opinion`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from harness.diff import TensorDiff, diff_arrays
from harness.engine import AutodiffError, Device, Tensor
from harness.engine.ops.facts import Rounding
from harness.float_dtypes import is_float, numpy_dtype, smallest_normal
from harness.opmatrix import half, torch_reference
from harness.opmatrix.opinion import Opinion, third_opinion
from harness.opmatrix.registry import (
    BOOL,
    ENGINE_NAMESPACE,
    FLOAT,
    INDEX,
    INT,
    OpPair,
    ShapeCase,
    template_args,
)
from harness.report import row_summary
from harness.tolerances import Tolerance, default_tolerance

DTYPES = ("float32", "float64", *half.HALF_DTYPES)
VALUESETS = ("random", "kinks", "specials")
PASS, DECLARED, FAIL = "pass", "declared", "fail"
DEVICE = Device.flex().autodiff()


# ---------------------------------------------------------------------------------------------
# Compiling the templates


@dataclass(frozen=True)
class Compiled:
    """The pair's templates as Python functions of the input tensors (keyword arguments)."""

    engine: Callable[..., Any]
    torch: Callable[..., Any]
    layout: Callable[[Any], Any]


_NAMESPACE = {"torch": torch, "torch_reference": torch_reference, **ENGINE_NAMESPACE}
_COMPILED: dict[tuple[str, str], Compiled] = {}


def compile_pair(p: OpPair, dtype: str) -> Compiled:
    """Compile (once) the engine, torch and layout templates of `p` for `dtype`.

    The templates are this package's own source text (the registry), never user input; they
    are compiled rather than written as lambdas so that the fuzzer can print the very text
    the matrix runs.
    """
    key = (p.name, dtype)
    if key not in _COMPILED:
        args = template_args(p, dtype)
        sig = "lambda a=None, b=None, c=None, m=None, i=None: "
        engine = eval(sig + p.engine.format(**args), _NAMESPACE)
        torch_fn = eval(sig + p.torch.format(**args), _NAMESPACE)
        layout = eval("lambda out: " + p.torch_layout.format(out="out"), _NAMESPACE)
        _COMPILED[key] = Compiled(engine, torch_fn, layout)
    return _COMPILED[key]


# ---------------------------------------------------------------------------------------------
# Inputs


def specials(dtype: str) -> np.ndarray:
    """NaN, both infinities, both zeros, subnormals of both signs, and a few ordinary values."""
    dt = numpy_dtype(dtype)
    # The smallest subnormal: 2**-(mantissa bits) of the smallest normal (finfo refuses bfloat16).
    tiny = np.finfo(dt).smallest_subnormal if dt.kind == "f" else smallest_normal(dt) * 2.0**-7
    return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, 1.0, -1.5, 0.5], dt)


def _fill(values: Sequence[float] | np.ndarray, shape, dtype: str, shift: int = 0) -> np.ndarray:
    values = np.roll(np.asarray(values, dtype=numpy_dtype(dtype)), -shift)
    size = int(np.prod(shape, dtype=np.int64))
    return np.resize(values, size).reshape(shape)


def _draw(domain: str, shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random values of a domain; magnitudes stay near 1 so float32's atol 1e-6 is ~10 ULP."""
    if domain == "positive":
        x = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "grid":  # small integers: comparisons see ties
        x = rng.integers(-2, 3, shape).astype(np.float64)
    elif domain == "unit":  # away from the poles of asin's and atanh's gradients at -1, 1
        x = rng.uniform(-0.9, 0.9, shape)
    elif domain == "above_one":  # away from acosh's pole at 1
        x = rng.uniform(1.1, 3.0, shape)
    else:
        x = rng.uniform(-2.0, 2.0, shape)
    return np.asarray(x, dtype=numpy_dtype(dtype))


def make_inputs(
    p: OpPair, case: ShapeCase, valueset: str, dtype: str, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """The arrays fed to both sides of one cell, by input name."""
    arrays: dict[str, np.ndarray] = {}
    floats = 0
    for inp, shape in zip(p.inputs, case.shapes, strict=True):
        if inp.kind == FLOAT:
            if valueset == "kinks" and floats == 0:
                arrays[inp.name] = _fill(p.kinks, shape, dtype)
            elif valueset == "specials":
                # Rotate per input so a binary op also sees NaN with inf, -0.0 with 0.0...
                arrays[inp.name] = _fill(specials(dtype), shape, dtype, shift=3 * floats)
            else:
                arrays[inp.name] = _draw(inp.domain, shape, dtype, rng)
            floats += 1
        elif inp.kind == BOOL:
            arrays[inp.name] = rng.random(shape) < 0.5
        elif inp.kind == INDEX:
            size = case.shapes[0][p.params["dim"]]
            arrays[inp.name] = rng.integers(0, size, shape, dtype=np.int64)
        elif inp.kind == INT:
            arrays[inp.name] = rng.integers(-3, 4, shape, dtype=np.int64)
    return arrays


def valuesets(p: OpPair) -> tuple[str, ...]:
    """The value sets that make sense for `p`."""
    has_float = bool(p.float_inputs)
    sets = ["random"]
    if p.kinks is not None:
        sets.append("kinks")
    if p.specials and has_float:
        sets.append("specials")
    return tuple(sets)


def cell_rng(*parts: str) -> np.random.Generator:
    """A generator seeded from the cell's name: stable across runs, processes and orders."""
    return np.random.default_rng(zlib.crc32("/".join(parts).encode()))


# ---------------------------------------------------------------------------------------------
# Running one side


@dataclass
class SideRun:
    """What one side produced: outputs (numpy), raw shapes, input gradients, or an error."""

    outputs: list[np.ndarray] = field(default_factory=list)
    raw_shapes: list[tuple[int, ...]] = field(default_factory=list)
    grads: dict[str, np.ndarray | None] = field(default_factory=dict)
    error: str | None = None


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, tuple | list) else (out,)


def cotangents(
    outputs: Sequence[np.ndarray], key: str, through: str | None = None
) -> list[np.ndarray | None]:
    """One seeded normal cotangent per float output (None for bool/int outputs).

    Values are rounded to float32 first, so a float32 cell and its float64 third opinion use
    exactly the same cotangent; `through` a half dtype too, so that a half cell's float32
    reference runs get the half cell's cotangent."""
    rng = cell_rng(key, "cot")
    cots = []
    for out in outputs:
        if is_float(out.dtype):
            cot = rng.standard_normal(out.shape).astype(np.float32)
            if through is not None:
                cot = cot.astype(numpy_dtype(through))
            cots.append(cot.astype(out.dtype))
        else:
            cots.append(None)
    return cots


def _seeded(out: Tensor, cot: Tensor, op: str) -> Tensor:
    """A root whose backward sends exactly `cot` into `out`, through rules other than `op`'s.

    The seed path must not share a rule with the op under test: with a sign-flipped `mul`,
    `(out * cot).sum()` would flip the seed too and the two flips would cancel. The default
    path is reshape + matmul (`[1, n] @ [n, 1]`: the rule multiplies by 1, exactly); the ops
    it uses are tested through `(out * cot).sum()` instead.
    """
    if op in ("reshape", "matmul"):
        return (out * cot).sum()
    return out.reshape([1, -1]).matmul(cot.reshape([-1, 1]))


def run_engine(
    p: OpPair, dtype: str, arrays: dict[str, np.ndarray], key: str, through: str | None = None
) -> SideRun:
    """Forward, then the VJP with the cell's cotangent (see `_seeded`) for every float input."""
    run = SideRun()
    try:
        tensors = {}
        for inp in p.inputs:
            t = Tensor.from_numpy(arrays[inp.name], DEVICE)
            tensors[inp.name] = t.require_grad() if inp.kind == FLOAT else t
        outs = _as_tuple(compile_pair(p, dtype).engine(**tensors))
        run.outputs = [np.array(o.numpy()) for o in outs]
        run.raw_shapes = [o.shape for o in run.outputs]
        loss = None
        for out, cot in zip(outs, cotangents(run.outputs, key, through), strict=True):
            if cot is not None:
                term = _seeded(out, Tensor.from_numpy(cot, DEVICE), p.op)
                loss = term if loss is None else loss + term
        try:
            grads = loss.backward() if loss is not None else None
        except AutodiffError:  # untracked output (cast, comparisons): no gradient at all
            grads = None
        for name in p.float_inputs:
            g = tensors[name].grad(grads) if grads is not None else None
            run.grads[name] = None if g is None else np.array(g.numpy())
    except Exception as exc:  # a side that raises is a finding, reported per cell
        run.error = f"{type(exc).__name__}: {exc}"
    return run


def run_torch(
    p: OpPair, dtype: str, arrays: dict[str, np.ndarray], key: str, through: str | None = None
) -> SideRun:
    """Forward (mapped to the engine's layout), then `autograd.grad` with the same cotangents.

    `dtype` picks the compiled templates; the arrays' own dtype is what runs (the third
    opinion passes float64 copies of float32 inputs)."""
    run = SideRun()
    try:
        tensors = {}
        for inp in p.inputs:
            t = half.to_torch(arrays[inp.name])
            tensors[inp.name] = t.requires_grad_(True) if inp.kind == FLOAT else t
        fns = compile_pair(p, dtype)
        raw = _as_tuple(fns.torch(**tensors))
        run.raw_shapes = [tuple(o.shape) for o in raw]
        outs = [fns.layout(o) for o in raw]
        run.outputs = [half.to_numpy(o) for o in outs]
        # Each cotangent already has its output's dtype (`cotangents` reads run.outputs).
        cots = cotangents(run.outputs, key, through)
        diff_outs = [
            (o, c) for o, c in zip(outs, cots, strict=True) if c is not None and o.requires_grad
        ]
        inputs = [tensors[n] for n in p.float_inputs]
        grads: Sequence[Any] = [None] * len(inputs)
        if diff_outs and inputs:
            grads = torch.autograd.grad(
                [o for o, _ in diff_outs],
                inputs,
                grad_outputs=[half.to_torch(c) for _, c in diff_outs],
                allow_unused=True,
            )
        for name, g in zip(p.float_inputs, grads, strict=True):
            run.grads[name] = None if g is None else half.to_numpy(g)
    except Exception as exc:  # a side that raises is a finding, reported per cell
        run.error = f"{type(exc).__name__}: {exc}"
    return run


# ---------------------------------------------------------------------------------------------
# Comparing


@dataclass
class Comparison:
    """One check of one cell. `row` is the harness.diff statistics when values were compared."""

    key: str  # op/dtype/shape/valueset/check
    ok: bool
    note: str = ""
    row: TensorDiff | None = None
    status: str = PASS  # pass | declared | fail, after the divergence table is applied
    reason: str = ""
    opinion: Opinion | None = None
    values: tuple[Any, Any] | None = field(default=None, repr=False)  # (torch, engine)
    # Half cells that disagree: the float32 reference rounded once, and both sides' float32
    # values on the same inputs (harness.opmatrix.half judges declarations with them).
    reference: Any = field(default=None, repr=False)
    wide: tuple[Any, Any] | None = field(default=None, repr=False)

    @property
    def check(self) -> str:
        return self.key.rsplit("/", 1)[1]


def _compare_values(
    key: str, t: np.ndarray | None, e: np.ndarray | None, rounding: Rounding | None = None
) -> Comparison:
    if t is None and e is None:
        return Comparison(key, True, "no gradient on either side")
    if t is None or e is None:
        side = "torch" if t is None else "engine"
        return Comparison(key, False, f"no gradient on the {side} side", values=(t, e))
    tol = default_tolerance(t.dtype.name)
    if rounding is not None and t.dtype == np.float32:
        tol = Tolerance(rounding.atol, rounding.rtol, reason=rounding.reason)
    row = diff_arrays(t, e, tol, key=key)
    return Comparison(key, row.ok, "" if row.ok else row_summary(row), row, values=(t, e))


def compare_cell(
    prefix: str, t: SideRun, e: SideRun, rounding: Rounding | None = None
) -> list[Comparison]:
    """Shape, forward and VJP comparisons of one cell (keys `prefix/check`); float32 values
    within the check's `rounding` tolerance when it states one, else the dtype's default."""
    if t.error or e.error:
        same = t.error is not None and e.error is not None
        note = f"torch: {t.error or 'ok'}; engine: {e.error or 'ok'}"
        return [Comparison(f"{prefix}/error", same, note)]
    if len(t.outputs) != len(e.outputs):
        return [Comparison(f"{prefix}/outputs", False, f"{len(t.outputs)} vs {len(e.outputs)}")]
    out: list[Comparison] = []
    for k, (tr, eo) in enumerate(zip(t.raw_shapes, e.outputs, strict=True)):
        suffix = "" if k == 0 else f"[{k}]"
        same = tuple(tr) == eo.shape
        note = "" if same else f"torch {list(tr)} vs engine {list(eo.shape)}"
        out.append(Comparison(f"{prefix}/shape{suffix}", same, note))
        out.append(_compare_values(f"{prefix}/forward{suffix}", t.outputs[k], eo, rounding))
    for name in e.grads:
        grads = t.grads.get(name), e.grads[name]
        out.append(_compare_values(f"{prefix}/vjp.{name}", *grads, rounding))
    return out


def _reference(comp: Comparison, t64: SideRun) -> np.ndarray | None:
    """The float64 value of the same check, if the float64 torch run produced it."""
    check = comp.check
    if t64.error:
        return None
    if check.startswith("forward"):
        k = int(check[8:-1]) if "[" in check else 0
        return t64.outputs[k]
    if check.startswith("vjp."):
        return t64.grads.get(check[4:])
    return None


def _attach_opinions(
    comps: list[Comparison], p: OpPair, arrays: dict[str, np.ndarray], key: str, every: bool
) -> None:
    """Give float32 value comparisons (failing ones, or all when `every`) a float64 opinion."""
    wanted = [
        c
        for c in comps
        if c.row is not None
        and c.row.status in ("ok", "fail")
        and c.row.dtype_a == "float32"
        and (every or not c.ok)
    ]
    if not wanted:
        return
    up = {n: a.astype(np.float64) if a.dtype == np.float32 else a for n, a in arrays.items()}
    t64 = run_torch(p, "float64", up, key)
    for c in wanted:
        ref = _reference(c, t64)
        if ref is not None and ref.shape == c.row.shape_a:
            t, e = c.values
            c.opinion = third_opinion(t, e, ref, worst_index=c.row.worst_index)


def run_cell(
    p: OpPair, dtype: str, case: ShapeCase, valueset: str, *, opinions: bool = False
) -> list[Comparison]:
    """Run one cell on both sides and compare; failing float32 checks get a float64 opinion."""
    prefix = f"{p.name}/{dtype}/{case.id}/{valueset}"
    arrays = make_inputs(p, case, valueset, dtype, cell_rng(prefix))
    t = run_torch(p, dtype, arrays, prefix)
    # Special values make NumPy warn (log(0), inf - inf); the comparison is the report.
    with np.errstate(all="ignore"):
        e = run_engine(p, dtype, arrays, prefix)
    comps = compare_cell(prefix, t, e, p.rounding)
    if dtype == "float32":
        _attach_opinions(comps, p, arrays, prefix, opinions)
    elif half.is_half(dtype):
        _attach_half_opinions(comps, p, dtype, arrays, prefix)
    return comps


def _attach_half_opinions(
    comps: list[Comparison], p: OpPair, dtype: str, arrays: dict[str, np.ndarray], key: str
) -> None:
    """Give every half value comparison that disagrees the float32 reference's opinion (torch
    in float32 on the same inputs, rounded once to `dtype`: harness.opmatrix.half), and keep
    both sides' float32 values for the declarations."""
    wanted = [c for c in comps if c.row is not None and not c.ok]
    if not wanted:
        return
    wide = half.widened(arrays)
    t32 = run_torch(p, "float32", wide, key, through=dtype)
    with np.errstate(all="ignore"):  # as the cell's own engine run
        e32 = run_engine(p, "float32", wide, key, through=dtype)
    for c in wanted:
        t, e = c.values
        wt, we = _reference(c, t32), _reference(c, e32)
        if wt is None or not wt.shape == np.shape(t) == np.shape(e):
            continue
        c.reference = half.rounded(wt, dtype)
        c.opinion = third_opinion(
            t, e, c.reference, worst_index=c.row.worst_index, reference_name=half.REFERENCE
        )
        if we is not None and we.shape == wt.shape:
            c.wide = (wt, we)
