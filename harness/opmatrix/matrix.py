"""The op matrix: every registered op x {float32, float64, float16, bfloat16} x shapes x value
sets, both sides (half rows: harness.opmatrix.half).

An *item* is one (op, dtype): every cell of it (`harness.opmatrix.cells`: shapes x value sets,
forward and VJP against PyTorch). A comparison that disagrees is "declared" when
`harness.opmatrix.divergences` lists it, else a failure; a declaration that stops diverging fails.

Data first: `run_item` returns an `ItemResult`; `render_table` / `matrix_json` present it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import numerics
from harness.case import OUT_DIR
from harness.cli import exit_code, names_of
from harness.opmatrix import divergences as div_table
from harness.opmatrix import half
from harness.opmatrix.cells import DECLARED, DTYPES, FAIL, PASS, Comparison, run_cell, valuesets
from harness.opmatrix.inject import flipped_rule, rule_name
from harness.opmatrix.opinion import opinion_json, render_opinion
from harness.opmatrix.registry import PAIRS, PAIRS_BY_NAME, pair
from harness.record import atomic_write_text, json_float
from harness.tolerances import TABLE_VERSION

__all__ = [
    "DECLARED",
    "DTYPES",
    "FAIL",
    "OUT_JSON",
    "PASS",
    "ItemResult",
    "MatrixResult",
    "apply_divergences",
    "main",
    "matrix_json",
    "render_item_failure",
    "render_table",
    "run_item",
    "run_matrix",
    "write_json",
]

OUT_JSON = OUT_DIR / "ops.json"


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
        elif found.relation is None or _relation_holds(found, comp):
            comp.status, comp.reason = DECLARED, found.reason
        else:
            comp.status = FAIL
            comp.note += f" (declared {found.pattern}, but not '{found.relation.text}')"
    # A float32-row declaration need not diverge in a half row (its float32 rows keep it live).
    vanished = [
        d
        for d, cs in matched.items()
        if all(c.ok for c in cs) and not (_in_half_row(cs[0]) and half.names_wide_dtypes(d.pattern))
    ]
    return list(matched), vanished


def _in_half_row(comp: Comparison) -> bool:
    return half.is_half(comp.key.split("/")[1])


def _relation_holds(found: div_table.Divergence, comp: Comparison) -> bool:
    """Whether the comparison keeps the declaration's relation; in a half row, a float32-row
    declaration may hold through half rounding (`half.holds_in_half`), and a half declaration
    is judged against the float32 reference (`half.ReferenceRelation`)."""
    if comp.values is None:
        return False
    relation = found.relation
    if isinstance(relation, half.ReferenceRelation):
        return relation.holds_ref(*comp.values, comp.reference)
    if _in_half_row(comp):
        return half.holds_in_half(relation, *comp.values, comp.wide, comp.key.split("/")[1])
    return relation.holds(*comp.values)


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
    for case in half.half_shapes(p.shapes) if half.is_half(dtype) else p.shapes:
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
        "numerics": numerics.in_force(),  # the kernels compared (a declaration may depend on it)
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
    """`python -m harness.opmatrix`: print the coverage table, write out/ops.json; exit 1 on a
    failure."""
    parser = argparse.ArgumentParser(prog="python -m harness.opmatrix", description=__doc__)
    parser.add_argument(
        "--ops", type=names_of(PAIRS_BY_NAME, "op"), help="comma-separated op names (default: all)"
    )
    parser.add_argument("--dtypes", type=names_of(DTYPES, "dtype"), default=list(DTYPES))
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
    parser.add_argument(
        "--numerics",
        metavar="PROFILE",
        help="portable (default) or native: put in force by `python -m harness.opmatrix` at "
        "start-up",
    )
    args = parser.parse_args(argv)  # a bad name exits 2 with one line, through argparse
    names, dtypes = args.ops, tuple(args.dtypes)
    print(f"numerics: {numerics.describe(numerics.in_force())}")
    with flipped_rule(args.inject_flip) if args.inject_flip else contextlib.nullcontext():
        result = run_matrix(names, dtypes, opinions=args.opinion == "all")
    print(render_table(result))
    write_json(result, args.json)
    print(f"wrote {args.json}")
    return exit_code(result.ok)


if __name__ == "__main__":
    sys.exit(main())
