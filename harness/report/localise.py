"""The localisation of a case in the reports: the one line (``verdict_text``), the JSON
per-module table (``localise_json``) and its schema (``localise_schema``), the HTML strip
(``localise_html``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.record import json_float
from harness.report.trajectory import closed_object
from harness.results import PHASES, Localisation, ModuleRow
from harness.trajectory import Precision


def verdict_text(found: Localisation) -> str:
    """The one line: where the two runs first part and why, or that they do not."""
    first = found.first
    if first is None:
        return (
            f"rounding everywhere: {len(found.rows)} module values over {found.steps} "
            f"step(s) agree to rounding in float64"
        )
    where = f"`{first.path}`" if first.path else "the model's"
    if first.engine_path != first.path:
        where += f" (engine `{first.engine_path}`)"
    if first.call:
        where += f" call {first.call}"
    where += f" {first.what}"
    if found.op is not None:
        op = found.op
        where += f" > `{op.name}` (engine op {op.index + 1} of {op.count})"
    if first.phase == "input":  # the gap was made by code outside any captured module
        before = found.rows[: found.rows.index(first)]
        if before:
            where += f" (after `{before[-1].path or '(model)'}` {before[-1].what})"
    finite = np.isfinite(first.excess_bits)
    why = f"{first.excess_bits:.0f} bits over rounding" if finite else "not finite on one side"
    return (
        f"first parts at step {first.step}, {first.direction}, {where}: "
        f"float64 says formula ({why})"
    )


def localise_json(found: Localisation | None) -> dict[str, Any] | None:
    """The verdict line, the first parting row's index, and every row in model order."""
    if found is None:
        return None
    first = None if found.first is None else found.rows.index(found.first)
    return {
        "line": verdict_text(found),
        "first": first,
        "steps": found.steps,
        "op": None if found.op is None else _op_json(found.op),
        "rows": [_row_json(row) for row in found.rows],
        "unmatched": list(found.unmatched),
    }


def _op_json(op) -> dict[str, Any]:
    return {
        "name": op.name,
        "index": op.index,
        "count": op.count,
        "shape": list(op.shape),
        "torch_ops": op.torch_ops,
    }


def _row_json(row: ModuleRow) -> dict[str, Any]:
    return {
        "step": row.step,
        "phase": row.phase,
        "path": row.path,
        "engine_path": row.engine_path,
        "call": row.call,
        "shape": list(row.shape),
        "strided": row.strided,
        "max_abs32": json_float(row.max_abs32),
        "max_abs64": json_float(row.max_abs64),
        "excess_bits": json_float(row.excess_bits),
        "verdict": row.verdict.value,
    }


def localise_schema(number: dict) -> dict:
    """The JSON schema of :func:`localise_json` (``number``: the report's optional number)."""
    count = {"type": "integer", "minimum": 0}
    row = closed_object(
        {
            "step": count,
            "phase": {"enum": list(PHASES)},
            "path": {"type": "string"},
            "engine_path": {"type": "string"},
            "call": count,
            "shape": {"type": "array", "items": count},
            "strided": {"type": "boolean"},
            "max_abs32": number,
            "max_abs64": number,
            "excess_bits": number,
            "verdict": {"enum": [p.value for p in Precision]},
        }
    )
    body = closed_object(
        {
            "line": {"type": "string"},
            "first": {"type": ["integer", "null"], "minimum": 0},
            "steps": count,
            # the first engine op of the parting forward call no torch op explains, or null
            "op": {
                "anyOf": [
                    closed_object(
                        {
                            "name": {"type": "string"},
                            "index": count,
                            "count": count,
                            "shape": {"type": "array", "items": count},
                            "torch_ops": count,
                        }
                    ),
                    {"type": "null"},
                ]
            },
            "rows": {"type": "array", "items": row},
            "unmatched": {"type": "array", "items": {"type": "string"}},
        }
    )
    return {"anyOf": [body, {"type": "null"}]}


def localise_html(found: Localisation | None) -> str:
    """The verdict and a strip of the first parting step (step 0 when rounding everywhere):
    one cell per compared value in model order, coloured by its bits over rounding (green at
    0, red from 29, the formula's 2**29), its path and value in its title."""
    if found is None or not found.rows:
        return ""
    from harness.report.html_parts import escape

    step = found.first.step if found.first is not None else found.rows[0].step
    cells = "".join(_strip_cell(row, row is found.first) for row in found.rows if row.step == step)
    return (
        f'<div class="localise"><p class="verdict">localise: {escape(verdict_text(found))}</p>'
        f'<div class="strip" style="display:flex;flex-wrap:wrap;gap:1px">{cells}</div></div>'
    )


_FORMULA_BITS = 29.0  # float64 eps / float32 eps: where a formula difference sits


def _strip_cell(row: ModuleRow, first: bool) -> str:
    from harness.report.html_parts import escape

    bits = row.excess_bits
    share = 1.0 if bits != bits or bits > _FORMULA_BITS else max(bits, 0.0) / _FORMULA_BITS
    hue = round(120 * (1 - share))
    border = "2px solid black" if first else "1px solid #ccc"
    title = escape(
        f"step {row.step} {row.path or '(model)'} {row.what}: {bits:.1f} bits, {row.verdict}"
    )
    return (
        f'<span title="{title}" style="display:inline-block;width:10px;height:18px;'
        f'background:hsl({hue},70%,50%);border:{border}"></span>'
    )
