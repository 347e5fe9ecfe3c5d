"""Log2-ULP histograms of one tensor's element distances, for the HTML report.

Bucket 0 = 0 ULP, bucket k = [2**(k-1), 2**k) ULP (``TensorDiff.ulp_histogram``). PNGs drawn
with matplotlib (the optional ``report`` extra), embedded as data URIs (64-colour palette PNGs,
about 3 kB each, no metadata chunks, so the page stays byte-identical run to run); without
matplotlib, plain HTML bars.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.diff import TensorDiff
from harness.report.html_parts import escape

# Drawn at twice the displayed 280x100 px, so the small labels stay sharp on high-DPI screens.
HISTOGRAM_DPI = 200
MIN_BUCKETS = 8  # histogram x axis spans at least 0 .. 2**6 ULP, so small ones stay readable


def bucket_label(k: int) -> str:
    if k == 0:
        return "0"
    low, high = 1 << (k - 1), (1 << k) - 1
    return str(low) if low == high else f"{low}-{high}"


def _tick_label(k: int) -> str:
    return "0" if k == 0 else (str(1 << (k - 1)) if k <= 11 else f"$2^{{{k - 1}}}$")


def histogram_alt(row: TensorDiff) -> str:
    """The histogram as text (alt text and tooltip): ``ULP distances of w: 0: 10; 1: 2``."""
    parts = [f"{bucket_label(k)}: {c}" for k, c in enumerate(row.ulp_histogram) if c]
    return f"ULP distances of {row.key}: " + "; ".join(parts)


@functools.cache
def _load_matplotlib() -> Any:
    """matplotlib's Figure and Agg canvas, or None (it is the optional ``report`` extra)."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    # Never touch pyplot's global state; the hash salt makes any SVG output reproducible too.
    matplotlib.rcParams["svg.hashsalt"] = "conformance-report"
    return Figure, FigureCanvasAgg


def has_matplotlib() -> bool:
    return _load_matplotlib() is not None


@functools.cache
def histogram_png(hist: tuple[int, ...], tone: str, ulps: int | None) -> bytes:
    """A small bar chart of one ULP histogram as PNG bytes (deterministic: no metadata)."""
    figure_cls, canvas_cls = _load_matplotlib()
    buckets = max(len(hist), MIN_BUCKETS)
    counts = list(hist) + [0] * (buckets - len(hist))
    fig = figure_cls(figsize=(2.8, 1.0), dpi=HISTOGRAM_DPI)
    canvas_cls(fig)
    ax = fig.add_axes((0.1, 0.3, 0.87, 0.64))
    colors = [_BIT_IDENTICAL if k == 0 else _TONES[tone] for k in range(buckets)]
    ax.bar(range(buckets), counts, width=0.8, color=colors)
    if ulps is not None:  # elements at or left of this line are within the ULP tolerance
        ax.axvline(ulps.bit_length() + 0.5, color="#555555", linestyle="--", linewidth=0.8)
    _style_axes(ax, buckets, max(counts))
    return _small_png(fig)


def _small_png(fig: Any) -> bytes:
    """PNG bytes with a 64-colour palette (a third of the RGBA size) and no metadata chunks.

    Pillow is a dependency of matplotlib, so it is there whenever the figure is.
    """
    from PIL import Image

    fig.canvas.draw()
    image = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).convert("RGB")
    out = io.BytesIO()
    image.quantize(64, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


_BIT_IDENTICAL = "#2e7d32"
_TONES = {"ok": "#1565c0", "fail": "#c62828", "documented": "#6a1b9a"}


def _style_axes(ax: Any, buckets: int, top: int) -> None:
    step = max(1, -(-buckets // 10))  # at most ten tick labels fit the small axis
    # Counted from the right, so the largest bucket (the worst elements) is always labelled.
    ticks = list(range(buckets - 1, -1, -step))[::-1]
    if ticks[0] > 1:
        ticks.insert(0, 0)
    ax.set_xticks(ticks, [_tick_label(k) for k in ticks], fontsize=6)
    ax.set_xlim(-0.6, buckets - 0.4)
    ax.set_ylim(0, max(top, 1) * 1.1)
    ax.yaxis.get_major_locator().set_params(integer=True, nbins=3)
    ax.tick_params(axis="y", labelsize=6, length=2)
    ax.tick_params(axis="x", length=2, pad=1)
    ax.set_xlabel("ULP distance (log2 buckets)", fontsize=6, labelpad=1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def histogram_html(row: TensorDiff, tone: str) -> str:
    """An <img> with the PNG, or HTML bars without matplotlib; empty when there is no data.

    ``tone`` colours the non-zero buckets: ``ok``, ``fail`` or ``documented`` (a differ check).
    """
    if row.kind != "tensor" or row.status not in ("ok", "fail"):
        return ""
    if not row.ulp_histogram:  # integer dtypes, or no pair of finite floats
        return "<small>no ULP data</small>"
    alt = escape(histogram_alt(row))
    if not has_matplotlib():
        return _css_histogram(row.ulp_histogram, tone, alt)
    png = histogram_png(tuple(row.ulp_histogram), tone, row.tol.ulps)
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<img class="hist" src="{uri}" width="280" height="100" alt="{alt}" title="{alt}">'


def _css_histogram(hist: Sequence[int], tone: str, alt: str) -> str:
    """The fallback: one fixed-width CSS bar per bucket (padded like the PNG's axis)."""
    counts = list(hist) + [0] * (MIN_BUCKETS - len(hist))
    top = max(counts) or 1
    bars = "".join(
        f'<span class="{"b0" if k == 0 else tone}" style="height:{round(60 * c / top)}px" '
        f'title="{escape(bucket_label(k))} ulp: {c}"></span>'
        for k, c in enumerate(counts)
    )
    axis = f"<small>0 .. {escape(bucket_label(len(counts) - 1))} ulp, log2 buckets</small>"
    return f'<div class="cssbars" role="img" aria-label="{alt}" title="{alt}">{bars}</div>{axis}'
