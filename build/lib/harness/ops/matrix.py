"""The op matrix: every registered op x {float32, float64} x shapes x value sets, both sides.

A *cell* is (op, dtype, shape, value set). In each cell both frameworks get the same inputs;
forward values are compared after the pair's declared layout mapping, raw output shapes are
compared separately, and vector-Jacobian products are compared for every float input: the
engine backpropagates from `<out, cot>` (`_seeded`), PyTorch runs `autograd.grad(out, inputs,
cot)`, with one seeded random cotangent per cell. Tolerances come from `harness.tolerances`, the
statistics from `harness.diff`. A comparison that disagrees is "declared" when
`harness.ops.divergences` lists it, else a failure; a declaration that stops diverging fails.

Data first: `run_item` returns an `ItemResult`; `render_table` / `matrix_json` present it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.case import OUT_DIR
from harness.diff import TensorDiff, diff_arrays
from harness.engine import AutodiffError, Device, Tensor
from harness.ops import divergences as div_table
from harness.ops.inject import flipped_rule, rule_name
from harness.ops.opinion import Opinion, opinion_json, render_opinion, third_opinion
from harness.ops.registry import (
    BOOL,
    FLOAT,
    INDEX,
    INT,
    PAIRS,
    PAIRS_BY_NAME,
    OpPair,
    ShapeCase,
    pair,
    template_args,
)
from harness.record import atomic_write_text, json_float
from harness.report import row_summary
from harness.tolerances import TABLE_VERSION, default_tolerance

DTYPES = ("float32", "float64")
VALUESETS = ("random", "kinks", "specials")
PASS, DECLARED, FAIL = "pass", "declared", "fail"
DEVICE = Device.flex().autodiff()
OUT_JSON = OUT_DIR / "ops.json"


# ---------------------------------------------------------------------------------------------
# Compiling the templates


@dataclass(frozen=True)
class Compiled:
    """The pair's templates as Python functions of the input tensors (keyword arguments)."""

    engine: Callable[..., Any]
    torch: Callable[..., Any]
    layout: Callable[[Any], Any]


_NAMESPACE = {"torch": torch, "Tensor": Tensor}
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
        sig = "lambda a=None, b=None, m=None, i=None: "
        engine = eval(sig + p.engine.format(**args), _NAMESPACE)
        torch_fn = eval(sig + p.torch.format(**args), _NAMESPACE)
        layout = eval("lambda out: " + p.torch_layout.format(out="out"), _NAMESPACE)
        _COMPILED[key] = Compiled(engine, torch_fn, layout)
    return _COMPILED[key]


# ---------------------------------------------------------------------------------------------
# Inputs


def specials(dtype: str) -> np.ndarray:
    """NaN, both infinities, both zeros, subnormals of both signs, and a few ordinary values."""
    tiny = np.finfo(dtype).smallest_subnormal
    return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, 1.0, -1.5, 0.5], dtype)


def _fill(values: Sequence[float] | np.ndarray, shape, dtype: str, shift: int = 0) -> np.ndarray:
    values = np.roll(np.asarray(values, dtype=dtype), -shift)
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
    else:
        x = rng.uniform(-2.0, 2.0, shape)
    return np.asarray(x, dtype=dtype)


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


def _cotangents(outputs: Sequence[np.ndarray], key: str) -> list[np.ndarray | None]:
    """One seeded normal cotangent per float output (None for bool/int outputs).

    Values are rounded to float32 first, so a float32 cell and its float64 third opinion use
    exactly the same cotangent."""
    rng = cell_rng(key, "cot")
    cots = []
    for out in outputs:
        if out.dtype.kind == "f":
            cots.append(rng.standard_normal(out.shape).astype(np.float32).astype(out.dtype))
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


def run_engine(p: OpPair, dtype: str, arrays: dict[str, np.ndarray], key: str) -> SideRun:
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
        for out, cot in zip(outs, _cotangents(run.outputs, key), strict=True):
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


def run_torch(p: OpPair, dtype: str, arrays: dict[str, np.ndarray], key: str) -> SideRun:
    """Forward (mapped to the engine's layout), then `autograd.grad` with the same cotangents.

    `dtype` picks the compiled templates; the arrays' own dtype is what runs (the third
    opinion passes float64 copies of float32 inputs)."""
    run = SideRun()
    try:
        tensors = {}
        for inp in p.inputs:
            t = torch.from_numpy(np.array(arrays[inp.name]))
            tensors[inp.name] = t.requires_grad_(True) if inp.kind == FLOAT else t
        fns = compile_pair(p, dtype)
        raw = _as_tuple(fns.torch(**tensors))
        run.raw_shapes = [tuple(o.shape) for o in raw]
        outs = [fns.layout(o) for o in raw]
        run.outputs = [o.detach().numpy().copy() for o in outs]
        # Each cotangent already has its output's dtype (`_cotangents` reads run.outputs).
        cots = _cotangents(run.outputs, key)
        diff_outs = [
            (o, c) for o, c in zip(outs, cots, strict=True) if c is not None and o.requires_grad
        ]
        inputs = [tensors[n] for n in p.float_inputs]
        grads: Sequence[Any] = [None] * len(inputs)
        if diff_outs and inputs:
            grads = torch.autograd.grad(
                [o for o, _ in diff_outs],
                inputs,
                grad_outputs=[torch.from_numpy(c) for _, c in diff_outs],
                allow_unused=True,
            )
        for name, g in zip(p.float_inputs, grads, strict=True):
            run.grads[name] = None if g is None else g.numpy().copy()
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

    @property
    def check(self) -> str:
        return self.key.rsplit("/", 1)[1]


def _compare_values(key: str, t: np.ndarray | None, e: np.ndarray | None) -> Comparison:
    if t is None and e is None:
        return Comparison(key, True, "no gradient on either side")
    if t is None or e is None:
        side = "torch" if t is None else "engine"
        return Comparison(key, False, f"no gradient on the {side} side", values=(t, e))
    tol = default_tolerance(t.dtype.name)
    row = diff_arrays(t, e, tol, key=key)
    return Comparison(key, row.ok, "" if row.ok else row_summary(row), row, values=(t, e))


def compare_cell(prefix: str, t: SideRun, e: SideRun) -> list[Comparison]:
    """Shape, forward and VJP comparisons of one cell (keys `prefix/check`)."""
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
        out.append(_compare_values(f"{prefix}/forward{suffix}", t.outputs[k], eo))
    for name in e.grads:
        out.append(_compare_values(f"{prefix}/vjp.{name}", t.grads.get(name), e.grads[name]))
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
    comps = compare_cell(prefix, t, e)
    if dtype == "float32":
        _attach_opinions(comps, p, arrays, prefix, opinions)
    return comps


# ---------------------------------------------------------------------------------------------
# One (op, dtype) item and the whole matrix


@dataclass
class ItemResult:
    """All cells of one (op, dtype), with the divergence table applied."""

    op: str
    dtype: str
    comparisons: list[Comparison]
    vanished: list[div_table.Divergence]
    used: list[div_table.Divergence]

    @property
    def counts(self) -> dict[str, int]:
        c = {PASS: 0, DECLARED: 0, FAIL: 0}
        for comp in self.comparisons:
            c[comp.status] += 1
        c[FAIL] += len(self.vanished)
        return c

    @property
    def status(self) -> str:
        counts = self.counts
        if counts[FAIL]:
            return FAIL
        return DECLARED if counts[DECLARED] else PASS

    @property
    def cells(self) -> int:
        return len({c.key.rsplit("/", 1)[0] for c in self.comparisons})


def apply_divergences(
    comps: list[Comparison], table: Sequence[div_table.Divergence]
) -> tuple[list[div_table.Divergence], list[div_table.Divergence]]:
    """Set each comparison's status; return (declarations used here, declarations vanished)."""
    matched: dict[div_table.Divergence, list[Comparison]] = {}
    table = tuple(table)
    for comp in comps:
        found = div_table.declared(comp.key, table)
        if found is not None:
            matched.setdefault(found, []).append(comp)
        if comp.ok:
            comp.status = PASS
        elif found is None:
            comp.status = FAIL
        elif found.relation is None or (
            comp.values is not None and found.relation.holds(*comp.values)
        ):
            comp.status, comp.reason = DECLARED, found.reason
        else:
            comp.status = FAIL
            comp.note += f" (declared {found.pattern}, but not '{found.relation.text}')"
    vanished = [d for d, cs in matched.items() if all(c.ok for c in cs)]
    return list(matched), vanished


def run_item(
    name: str,
    dtype: str,
    *,
    table: Sequence[div_table.Divergence] = div_table.DIVERGENCES,
    opinions: bool = False,
) -> ItemResult:
    """Every cell of one op in one dtype (all shapes x value sets)."""
    p = pair(name)
    comps: list[Comparison] = []
    for case in p.shapes:
        for valueset in valuesets(p):
            comps.extend(run_cell(p, dtype, case, valueset, opinions=opinions))
    used, vanished = apply_divergences(comps, table)
    return ItemResult(p.name, dtype, comps, vanished, used)


@dataclass
class MatrixResult:
    items: list[ItemResult]
    unused: list[div_table.Divergence]
    table: Sequence[div_table.Divergence] = div_table.DIVERGENCES  # the declarations applied

    @property
    def ok(self) -> bool:
        return not self.unused and all(i.status != FAIL for i in self.items)


def run_matrix(
    names: Iterable[str] | None = None,
    dtypes: Sequence[str] = DTYPES,
    *,
    table: Sequence[div_table.Divergence] = div_table.DIVERGENCES,
    opinions: bool = False,
) -> MatrixResult:
    """The matrix over `names` (default: every pair); unused declarations count only when
    the whole registry ran."""
    selected = list(names) if names is not None else [p.name for p in PAIRS]
    items = [run_item(n, d, table=table, opinions=opinions) for n in selected for d in dtypes]
    used = {d for item in items for d in item.used}
    full = names is None and tuple(dtypes) == DTYPES
    unused = [d for d in table if d not in used] if full else []
    return MatrixResult(items, unused, tuple(table))


# ---------------------------------------------------------------------------------------------
# Presentation


def render_item_failure(item: ItemResult) -> str:
    """The failing comparisons of one item, with notes and float64 opinions."""
    lines = [f"{item.op} {item.dtype}: {item.counts[FAIL]} failing comparisons"]
    for c in item.comparisons:
        if c.status == FAIL:
            lines.append(f"  FAIL {c.key}: {c.note}")
            if c.opinion is not None:
                lines.append(f"       {render_opinion(c.opinion)}")
    for d in item.vanished:
        lines.append(f"  FAIL declared divergence vanished: {d.pattern} ({d.reason})")
    return "\n".join(lines)


def render_table(result: MatrixResult, *, details: bool = True) -> str:
    """Coverage table (op x dtype: status and counts pass/declared/fail), then details."""
    dtypes = list(dict.fromkeys(i.dtype for i in result.items))
    by_key = {(i.op, i.dtype): i for i in result.items}
    ops = list(dict.fromkeys(i.op for i in result.items))
    width = max(len(o) for o in ops) + 2
    lines = [f"{'op':<{width}}" + "".join(f"{d:<31}" for d in dtypes)]
    for op in ops:
        cells = []
        for d in dtypes:
            item = by_key[(op, d)]
            n = item.counts
            cells.append(
                f"{item.status:<9}{n[PASS]:>3}/{n[DECLARED]:>2}/{n[FAIL]:>2} ({item.cells} cells)"
            )
        lines.append(f"{op:<{width}}" + "".join(f"{c:<31}" for c in cells))
    lines.append("(counts: comparisons pass/declared/fail)")
    if details:
        lines.extend(_details(result))
    lines.append(_summary(result))
    return "\n".join(lines)


def _details(result: MatrixResult) -> list[str]:
    lines = []
    reasons: dict[str, list[str]] = {}
    for item in result.items:
        for c in item.comparisons:
            if c.status == DECLARED:
                reasons.setdefault(c.reason, []).append(c.key)
    if reasons:
        lines.append("\ndeclared divergences seen:")
        for reason, keys in reasons.items():
            lines.append(f"  {len(keys):>3} x {reason}")
            lines.append(f"        e.g. {keys[0]}")
    failing = [i for i in result.items if i.status == FAIL]
    if failing:
        lines.append("\nfailures:")
        lines.extend(render_item_failure(i) for i in failing)
    for d in result.unused:
        lines.append(f"FAIL unused declaration (matches no comparison): {d.pattern}")
    return lines


def _summary(result: MatrixResult) -> str:
    t = _totals(result)
    n = t["pass_comparisons"] + t["declared_comparisons"] + t["fail_comparisons"]
    verdict = "OK" if result.ok else "FAIL"
    return (
        f"{t['items']} items ({t['pass_items']} pass, {t['declared_items']} declared, "
        f"{t['fail_items']} fail), {t['cells']} cells, {n} comparisons: "
        f"{t['pass_comparisons']} pass, {t['declared_comparisons']} declared, "
        f"{t['fail_comparisons']} fail -> {verdict}"
    )


def matrix_json(result: MatrixResult) -> dict:
    """Deterministic JSON data: registry order, no timings, non-finite numbers as strings."""
    return {
        "format": "ops-matrix/1",
        "tolerance_table_version": TABLE_VERSION,
        "ok": result.ok,
        "summary": _totals(result),
        "items": [_item_json(i) for i in result.items],
        "declarations": [
            {
                "pattern": d.pattern,
                "reason": d.reason,
                "relation": d.relation.text if d.relation else None,
            }
            for d in result.table
        ],
        "unused_declarations": [d.pattern for d in result.unused],
    }


def _totals(result: MatrixResult) -> dict:
    totals = {"items": len(result.items), "cells": sum(i.cells for i in result.items)}
    for status in (PASS, DECLARED, FAIL):
        totals[f"{status}_items"] = sum(i.status == status for i in result.items)
        totals[f"{status}_comparisons"] = sum(i.counts[status] for i in result.items)
    return totals


def _item_json(item: ItemResult) -> dict:
    return {
        "op": item.op,
        "dtype": item.dtype,
        "status": item.status,
        "cells": item.cells,
        "counts": item.counts,
        "not_passing": [
            {
                "key": c.key,
                "status": c.status,
                "note": c.note,
                "reason": c.reason,
                "opinion": opinion_json(c.opinion) if c.opinion else None,
            }
            for c in item.comparisons
            if c.status != PASS
        ],
        "vanished": [d.pattern for d in item.vanished],
        # With --opinion all, passing float32 comparisons carry an opinion too.
        "opinions_of_passing": [
            {"key": c.key, "opinion": opinion_json(c.opinion)}
            for c in item.comparisons
            if c.status == PASS and c.opinion is not None
        ],
    }


def write_json(result: MatrixResult, path: Path) -> None:
    text = json.dumps(matrix_json(result), indent=1, allow_nan=False, default=_json_default)
    atomic_write_text(path, text + "\n")


def _json_default(value):
    """NumPy scalars as their Python values (json calls this only for types it cannot write)."""
    if isinstance(value, np.generic):
        item = value.item()
        return json_float(item) if isinstance(item, float) else item
    raise TypeError(f"not JSON serializable: {value!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.ops`: print the coverage table, write out/ops.json, exit 1 on fail."""
    parser = argparse.ArgumentParser(prog="python -m harness.ops", description=__doc__)
    parser.add_argument(
        "--ops", type=_names_of(PAIRS_BY_NAME, "op"), help="comma-separated op names (default: all)"
    )
    parser.add_argument("--dtypes", type=_names_of(DTYPES, "dtype"), default=list(DTYPES))
    parser.add_argument("--json", type=Path, default=OUT_JSON, help="default: <repo>/out/ops.json")
    parser.add_argument(
        "--opinion",
        choices=("fail", "all"),
        default="fail",
        help="float64 third opinion for failing float32 checks, or for all",
    )
    parser.add_argument(
        "--inject-flip",
        type=rule_name,
        metavar="OP",
        help="demo: flip the sign of OP's backward rule for this run",
    )
    args = parser.parse_args(argv)  # a bad name exits 2 with one line, through argparse
    names, dtypes = args.ops, tuple(args.dtypes)
    with flipped_rule(args.inject_flip) if args.inject_flip else contextlib.nullcontext():
        result = run_matrix(names, dtypes, opinions=args.opinion == "all")
    print(render_table(result))
    write_json(result, args.json)
    print(f"wrote {args.json}")
    return 0 if result.ok else 1


def _names_of(known: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated list of names, each one of ``known``."""
    known = list(known)

    def parse(text: str) -> list[str]:
        names = text.split(",")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return names

    return parse


if __name__ == "__main__":
    sys.exit(main())
