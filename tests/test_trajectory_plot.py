"""harness.report.trajectory's plot: two equal series stay visible, each in its own colour.

A formula difference makes the float32 and float64 pairs' max|diff| coincide step for step, and
two float32 sides are often equally far from the reference; a line drawn on top of an equal
line of the same width hides it. Checked on the figure (widths, drawing order) and on the
rendered PNG (the pixels of each colour).
"""

import io

import numpy as np
import PIL.Image
import pytest

from harness.report import trajectory as tr

pytest.importorskip("matplotlib")

STEPS = 100  # more than 40 steps: lines without markers, so only the line widths differ
SERIES = tuple(float(x) for x in 1e-7 * (1 + np.arange(STEPS)))
APART = tuple(x * 1e3 for x in SERIES)  # three decades away: the lines do not touch


def data(f64, right):
    return (SERIES, f64, 0.0, (SERIES, right), ("torch", "engine"), "float64", "float32")


def test_each_panel_draws_one_series_wide_underneath_and_the_other_thin_on_top():
    gap_ax, ref_ax = tr.trajectory_figure(data(SERIES, SERIES)).axes
    for ax, (top, under) in [
        (gap_ax, ("float32 pair", "float64 pair")),
        (ref_ax, ("engine float32", "torch float32")),
    ]:
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert lines[under].get_linewidth() >= 3 * lines[top].get_linewidth()
        assert lines[top].get_zorder() > lines[under].get_zorder()
        assert lines[top].get_color() != lines[under].get_color()
    # The legend keeps float32 first, as the call order does.
    assert [t.get_text() for t in gap_ax.get_legend().get_texts()] == [
        "float32 pair",
        "float64 pair",
    ]


def colour_pixels(png: bytes, colour: str, panel: int) -> int:
    """Pixels within a small distance of `colour` in the left (0) or right (1) half."""
    image = np.asarray(PIL.Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    half = image.shape[1] // 2
    image = image[:, half * panel : half * (panel + 1)]
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(image - rgb).sum(axis=2) < 40).sum())


@pytest.mark.parametrize(
    ("panel", "colours"),
    [(0, ("f32", "f64")), (1, ("right", "left"))],  # (on top, underneath)
)
def test_equal_series_keep_most_of_their_pixels(panel, colours):
    """Measured at 100 steps: the line on top keeps all its pixels, the wide one about 60% (its
    edges either side of the top line). Drawn as before (the float64 pair dashed over the
    float32 one, 1.4 px over 1.2 px), the float32 line kept 43% of its pixels."""
    equal = tr.trajectory_png(data(SERIES, SERIES))
    apart = tr.trajectory_png(data(APART, APART))
    for name, least in zip(colours, (0.9, 0.4), strict=True):
        colour = tr._COLORS[name]
        kept = colour_pixels(equal, colour, panel) / colour_pixels(apart, colour, panel)
        assert kept >= least, (name, kept)
