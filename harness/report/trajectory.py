"""A trajectory (``harness.trajectory.TrajectoryReport``) as text, JSON and HTML.

- :func:`trajectory_line`: the one line of the terminal report, ``growth=linear 1.4e-07/step,
  first over tol 1e-06 at step 71, float64: parts (formula, 29.1 bits over rounding); ...``;
- :func:`trajectory_headline`: a failed trajectory check's first line (where the float64
  runs part, the worst float32 step);
- :func:`trajectory_json` and :func:`trajectory_schema`: the per-step series and the verdicts;
- :func:`trajectory_html`: per trajectory one PNG with two log-scale panels (the per-step
  max|diff| of the float32 pair and of the float64 pair with the tolerance line; each float32
  side's distance to the float64 reference), deterministic like the histograms; without
  matplotlib, a table of sampled steps.
"""

from __future__ import annotations

import base64
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.record import json_float
from harness.report.histogram import _load_matplotlib, _small_png, has_matplotlib
from harness.report.html_parts import escape, html_table
from harness.trajectory import (
    Growth,
    GrowthFit,
    HalfCause,
    PairSeries,
    Precision,
    TrajectoryReport,
    half_text,
)

# ---------------------------------------------------------------------------------------------
# Text


def trajectory_line(t: TrajectoryReport) -> str:
    """``<keys> (N steps): growth=..., first over tol ..., float64: ...; closer to exact: ...``"""
    return f"trajectory {t.steps} steps: {trajectory_summary(t)}; {closer_text(t)}"


def trajectory_headline(t: TrajectoryReport) -> str:
    """A failed trajectory check's first line: ``adam.loss and 4 more keys: float64 pair parts
    at step 61 (29.3 bits over rounding); float32 max|diff|=3.00e-06 (51 ulp) at step 99,
    first over tol 1e-06 at step 12``."""
    keys = t.keys[0] + (f" and {len(t.keys) - 1} more keys" if len(t.keys) > 1 else "")
    word = "agrees" if t.precision.verdict == Precision.ROUNDING else "parts"
    at = "" if t.precision.at is None else f" at step {t.precision.at}"
    bits = _bits(t.precision.excess_bits)
    worst = int(np.argmax(t.float32.max_abs)) if t.steps else 0
    ulp = t.float32.max_ulp[worst] if t.steps else None
    gap = f"{t.float32.max_abs[worst]:.2e}" if t.steps else "0"
    gap += "" if ulp is None else f" ({ulp} ulp)"
    verdict = f"float64 pair {word}{at} ({bits} bits over rounding)"
    if t.half is not None:
        verdict = f"{t.half.dtype} pair: {t.half.cause} ({bits} bits)"
    return f"{keys}: {verdict}; {t.float32.dtype} max|diff|={gap} at step {worst}, {_tol_text(t)}"


def trajectory_summary(t: TrajectoryReport) -> str:
    """The verdicts without the closeness counts: ``growth=..., float64: parts (...)``."""
    verdict = precision_text(t) if t.half is not None else f"float64: {precision_text(t)}"
    return f"growth={growth_text(t.growth)}, {_tol_text(t)}, {verdict}"


def growth_text(fit: GrowthFit) -> str:
    """``linear 1.4e-07/step (R2=0.98)``, ``bounded at 6.0e-08``, ``undetermined: 5 steps (< 8)``:
    the class's name (``Growth``'s value, as in the JSON) first."""
    r2 = f" (R2={fit.r2:.2f})" if fit.r2 is not None else ""
    match fit.growth:
        case Growth.BOUNDED:
            return f"bounded ({fit.reason})" if fit.level == 0 else f"bounded at {fit.level:.1e}"
        case Growth.LINEAR:
            return f"linear {fit.rate:.1e}/step{r2}"
        case Growth.EXPONENTIAL:
            doubling = math.log(2) / math.log(fit.rate) if fit.rate > 1 else math.inf
            return f"exponential x{fit.rate:.3f}/step (doubles every {doubling:.0f} steps){r2}"
        case Growth.STEP:
            return f"step x{fit.rate:.3g} at step {fit.at}{r2}"
        case Growth.SATURATING:
            return f"saturating {fit.rate:.1e}/step until step {fit.at}, then {fit.level:.1e}{r2}"
    return f"{fit.growth}: {fit.reason}"  # undetermined


def _tol_text(t: TrajectoryReport) -> str:
    tol = t.tol.describe()
    if t.first_over_tol is None:
        return f"within tol {tol} at every step"
    return f"first over tol {tol} at step {t.first_over_tol}"


def precision_text(t: TrajectoryReport) -> str:
    """``agrees (rounding, 1.0 bits over rounding)`` or ``parts (formula, 29.3 bits ...)``;
    a half pair: its half verdict (``harness.trajectory.half_text``)."""
    if t.half is not None:
        return half_text(t.half)
    word = "agrees" if t.precision.verdict == Precision.ROUNDING else "parts"
    return f"{word} ({t.precision.verdict}, {_bits(t.precision.excess_bits)} bits over rounding)"


def _bits(bits: float) -> str:
    return f"{bits:.1f}" if math.isfinite(bits) else ("inf" if bits > 0 else "-inf")


def closer_text(t: TrajectoryReport) -> str:
    counts = t.closer_counts()
    left, right = t.labels
    return (
        f"closer to {t.reference}: {left} {counts['left']}, {right} {counts['right']}, "
        f"tie {counts['tie']}"
    )


# ---------------------------------------------------------------------------------------------
# JSON


def trajectory_json(t: TrajectoryReport, tol: dict) -> dict:
    """The trajectory as plain JSON (``tol``: the report's tolerance object for ``t.tol``)."""
    fit = t.growth
    return {
        "keys": list(t.keys),
        "steps": t.steps,
        "labels": list(t.labels),
        "reference": t.reference,
        "tol": tol,
        "float32": _series_json(t.float32),
        "float64": _series_json(t.float64),
        "first_over_tol": t.first_over_tol,
        "growth": {
            "class": fit.growth.value,
            "rate": _number(fit.rate),
            "level": _number(fit.level),
            "r2": _number(fit.r2),
            "at": fit.at,
            "reason": fit.reason,
        },
        "precision": {
            "verdict": t.precision.verdict.value,
            "excess_bits": json_float(t.precision.excess_bits),
            "at": t.precision.at,
            "steps_used": t.precision.used,
        },
        "distance": {"left": _numbers(t.distance[0]), "right": _numbers(t.distance[1])},
        "closer": list(t.closer),
        "half": None if t.half is None else _half_json(t.half),
        "line": trajectory_line(t),
    }


def _half_json(v) -> dict:
    return {
        "dtype": v.dtype,
        "cause": v.cause.value,
        "shrink_bits": json_float(v.shrink.excess_bits),
        "accumulation_bits": json_float(v.accumulation_bits),
        "own": [json_float(x) for x in v.own],
        "gap": json_float(v.gap),
        "float32_verdict": v.float32.verdict.value,
        "float32_excess_bits": json_float(v.float32.excess_bits),
        "float32_pair": _series_json(v.float32_pair),
    }


def _series_json(s: PairSeries) -> dict:
    return {
        "dtype": s.dtype,
        "max_abs": _numbers(s.max_abs),
        "max_ulp": list(s.max_ulp),
        "mismatches": list(s.mismatches),
        "nonfinite": list(s.nonfinite),
        "elements": s.elements,
    }


def _number(x: float | None) -> Any:
    return None if x is None else json_float(float(x))


def _numbers(xs: Sequence[float]) -> list:
    return [json_float(float(x)) for x in xs]


def trajectory_schema(tol: dict, number: dict) -> dict:
    """The JSON schema of :func:`trajectory_json` (``tol`` / ``number``: the report's
    tolerance and optional-number schemas), null when a check has no trajectory."""
    count = {"type": "integer", "minimum": 0}
    numbers = {"type": "array", "items": number}
    series = closed_object(
        {
            "dtype": {"type": "string"},
            "max_abs": numbers,
            "max_ulp": {"type": "array", "items": {"type": ["integer", "null"]}},
            "mismatches": {"type": "array", "items": count},
            "nonfinite": {"type": "array", "items": count},
            "elements": count,
        }
    )
    opt_int = {"type": ["integer", "null"]}
    body = closed_object(
        {
            "keys": {"type": "array", "items": {"type": "string"}},
            "steps": count,
            "labels": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
            "reference": {"type": "string"},
            "tol": tol,
            "float32": series,
            "float64": series,
            "first_over_tol": opt_int,
            "growth": closed_object(
                {
                    "class": {"enum": [g.value for g in Growth]},
                    "rate": number,
                    "level": number,
                    "r2": number,
                    "at": opt_int,
                    "reason": {"type": "string"},
                }
            ),
            "precision": closed_object(
                {
                    "verdict": {"enum": [p.value for p in Precision]},
                    "excess_bits": number,
                    "at": opt_int,
                    "steps_used": count,
                }
            ),
            "distance": closed_object({"left": numbers, "right": numbers}),
            "closer": {"type": "array", "items": {"enum": ["left", "right", "tie"]}},
            "half": {"anyOf": [{"type": "null"}, _half_schema(series, number)]},
            "line": {"type": "string"},
        }
    )
    return {"anyOf": [body, {"type": "null"}]}


def _half_schema(series: dict, number: dict) -> dict:
    return closed_object(
        {
            "dtype": {"type": "string"},
            "cause": {"enum": [c.value for c in HalfCause]},
            "shrink_bits": number,
            "accumulation_bits": number,
            "own": {"type": "array", "items": number, "minItems": 2, "maxItems": 2},
            "gap": number,
            "float32_verdict": {"enum": [p.value for p in Precision]},
            "float32_excess_bits": number,
            "float32_pair": series,
        }
    )


def closed_object(properties: dict) -> dict:
    """A JSON Schema object with exactly these properties, every one required."""
    return {
        "type": "object",
        "required": list(properties),
        "additionalProperties": False,
        "properties": properties,
    }


# ---------------------------------------------------------------------------------------------
# HTML

PLOT_SIZE = (900, 260)  # displayed px; drawn at PLOT_SCALE times that
PLOT_SCALE = 1.5
_COLORS = {"f32": "#1565c0", "f64": "#ef6c00", "left": "#2e7d32", "right": "#6a1b9a"}


def trajectory_html(t: TrajectoryReport) -> str:
    """The plot (or, without matplotlib, a table of sampled steps) and the one-line verdict."""
    line = f'<p class="trajectory-line"><code>{escape(trajectory_line(t))}</code></p>'
    keys = f"<small>keys: <code>{escape(', '.join(t.keys))}</code></small>"
    if has_matplotlib():
        png = trajectory_png(_plot_data(t))
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        width, height = PLOT_SIZE
        alt = escape(plot_alt(t))
        body = (
            f'<img class="trajectory" src="{uri}" width="{width}" height="{height}" '
            f'alt="{alt}" title="{alt}">'
        )
    else:
        body = _sampled_table(t)
    return f'<div class="trajectory">{line}{body}{keys}</div>'


def plot_alt(t: TrajectoryReport) -> str:
    """The plot as words (alt text): what is drawn and the verdicts."""
    left, right = t.labels
    return (
        f"Per-step max|diff| over {t.steps} steps, {left} vs {right}: float32 pair up to "
        f"{max(t.float32.max_abs):.2e}, float64 pair up to {max(t.float64.max_abs):.2e}, "
        f"tolerance {t.tol.describe()}; growth={t.growth.growth}, float64 "
        f"{t.precision.verdict}. Right: distance of each float32 side to {t.reference}."
    )


def _plot_data(t: TrajectoryReport) -> tuple:
    """Hashable plot inputs (the PNG cache key)."""
    return (
        t.float32.max_abs,
        t.float64.max_abs,
        t.tol.atol,
        t.distance,
        t.labels,
        t.reference,
        t.float32.dtype,
    )


@functools.cache
def trajectory_png(data: tuple) -> bytes:
    """Two log-scale panels as PNG bytes (deterministic: no metadata)."""
    return _small_png(trajectory_figure(data))


def trajectory_figure(data: tuple) -> Any:
    """The two panels as a matplotlib Figure. Zero gaps (bit-identical steps) are left out of a
    log axis and show as breaks in the line.

    Two series of a panel are often equal (a formula difference makes the float32 and float64
    pairs coincide; both float32 sides can sit at the same distance from the reference), so
    one is drawn wide underneath (the float64 pair; the first side) and the other thin on top
    (zorder, not the call order, which keeps the legend's): where they coincide the thin line
    shows inside the wide one, both in their own colours.
    """
    f32, f64, atol, (left, right), labels, reference, dtype = data
    figure_cls, canvas_cls = _load_matplotlib()
    width, height = PLOT_SIZE
    fig = figure_cls(figsize=(width / 100, height / 100), dpi=100 * PLOT_SCALE)
    canvas_cls(fig)
    gap_ax = fig.add_axes((0.07, 0.2, 0.41, 0.68))
    ref_ax = fig.add_axes((0.57, 0.2, 0.41, 0.68))
    steps = np.arange(len(f32))
    _line(gap_ax, steps, f32, _COLORS["f32"], f"{dtype} pair")
    _line(gap_ax, steps, f64, _COLORS["f64"], "float64 pair", under=True)
    if atol > 0:
        gap_ax.axhline(atol, color="#c62828", linestyle="--", linewidth=0.9, label="tolerance")
    _style(gap_ax, "max|diff| between the sides")
    _line(ref_ax, steps, left, _COLORS["left"], f"{labels[0]} {dtype}", under=True)
    _line(ref_ax, steps, right, _COLORS["right"], f"{labels[1]} {dtype}")
    _style(ref_ax, f"distance to {reference}")
    return fig


UNDER_WIDTH = 3.6  # the series drawn underneath, three times as wide as the one on top
TOP_WIDTH = 1.2


def _line(
    ax: Any,
    steps: np.ndarray,
    values: Sequence[float],
    color: str,
    label: str,
    *,
    under: bool = False,
) -> None:
    y = np.asarray(values, np.float64)
    y = np.where(y > 0, y, np.nan)  # a log axis has no 0
    if under:
        style = {"linewidth": UNDER_WIDTH, "zorder": 2, "solid_capstyle": "butt"}
    else:
        style = {"linewidth": TOP_WIDTH, "zorder": 3, "marker": "." if len(y) < 40 else ""}
    ax.plot(steps, y, color=color, label=label, **style)


def _style(ax: Any, title: str) -> None:
    ax.set_yscale("log")
    ax.set_title(title, fontsize=8, loc="left")
    ax.set_xlabel("step", fontsize=7, labelpad=1)
    ax.tick_params(which="both", labelsize=6.5, length=2)
    ax.grid(True, which="major", linewidth=0.4, color="#dddddd")
    ax.legend(fontsize=6.5, frameon=False, loc="best")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


_SAMPLES = 10


def _sci(x: float) -> str:
    return f"{x:.2e}"


def _sampled_table(t: TrajectoryReport) -> str:
    """Without matplotlib: about ten steps (always the first and the last) as a table."""
    every = max(1, -(-t.steps // _SAMPLES))
    picked = sorted({*range(0, t.steps, every), t.steps - 1})
    left, right = t.labels
    head = [
        "step",
        f"{t.float32.dtype} max|diff|",
        "float64 max|diff|",
        f"{left} to ref",
        f"{right} to ref",
    ]
    rows = [
        [
            str(k),
            _sci(t.float32.max_abs[k]),
            _sci(t.float64.max_abs[k]),
            _sci(t.distance[0][k]),
            _sci(t.distance[1][k]),
        ]
        for k in picked
    ]
    return html_table([escape(h) for h in head], rows, "trajectory")
