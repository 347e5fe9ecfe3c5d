"""The `interpolate` primitive (burn's `module::interpolate`, one autodiff node whose backward
is the backend's `interpolate_backward`, crates/burn-autodiff/src/ops/module.rs, commit
2c06be351006851d42fdb6df16b976f4a82d9747) over harness.engine.kernels.interpolate, whose
docstring states the differences from PyTorch.

The checks give PyTorch `size=` (never `scale_factor=`, whose nearest indices differ, see the
kernel) and its default `align_corners` where burn's is the same mapping: PyTorch's nearest
takes no `align_corners`, burn's ignores it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels
from .base import Array, Grad, Tracked, differentiable
from .facts import Check, Condition, Diverges, Input, menu

_SHAPES = menu(
    ("up-3x4-to-5x7", [(2, 3, 3, 4)]),
    ("down-6x5-to-4x3", [(1, 2, 6, 5)]),
    ("empty-batch", [(0, 2, 3, 4)]),
)


@dataclass(slots=True)
class SavedInterpolate:
    x_shape: tuple[int, ...]
    output_size: tuple[int, int]
    mode: str
    align_corners: bool


def interpolate(x: Array, /, output_size, mode, align_corners):
    """burn's `interpolate(x, output_size, InterpolateOptions { mode, align_corners })`."""
    out = kernels.interpolate(x, output_size, mode, align_corners)
    return out, SavedInterpolate(x.shape, tuple(out.shape[2:]), mode, bool(align_corners))


def interpolate_backward(s: SavedInterpolate, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (kernels.interpolate_backward(g, s.x_shape, s.mode, s.align_corners).x,)


def _float32_sums(t, e) -> bool:
    """Within 1e-5 of the largest value: the measured worst is 2.1e-6 on values near 1."""
    if t is None or e is None or not np.array_equal(np.isfinite(t), np.isfinite(e)):
        return False
    scale = max(1.0, float(np.max(np.abs(t), where=np.isfinite(t), initial=0.0)))
    return bool(np.allclose(t, e, rtol=0.0, atol=1e-5 * scale, equal_nan=True))


_BICUBIC_F32 = Diverges(
    "float32/*/*/*",
    "bicubic in float32: torch computes the cubic coefficients and their 16-term sums in "
    "float32, flex in float64 rounded once (harness.engine.kernels.interpolate)",
    Condition.whole("equal within 1e-5 of the largest value", _float32_sums),
)


def _check(mode: str, align_corners: bool, sizes=((5, 7), (4, 3)), **kw) -> Check:
    torch_mode = "nearest" if mode == "nearest" else mode
    corners = "" if mode == "nearest" else f", align_corners={align_corners}"
    options = f"module_ops.InterpolateOptions({mode!r}, {align_corners})"
    # The output size follows the input's spatial size: upsampling menu entries to 5x7,
    # downsampling ones to 4x3.
    size = f"({sizes[0]} if {{a}}.shape[2] == 3 else {sizes[1]})"
    return Check(
        f"interpolate[{mode}{'-corners' if align_corners else ''}]",
        f"module_ops.interpolate({{a}}, {size}, {options})",
        f"torch.nn.functional.interpolate({{a}}, size={size}, mode={torch_mode!r}{corners})",
        (Input("a"),),
        _SHAPES,
        **kw,
    )


INTERPOLATE = differentiable(
    "interpolate",
    interpolate,
    interpolate_backward,
    checks=(
        _check("nearest", True),
        _check("bilinear", False),
        _check("bilinear", True),
        _check("bicubic", False, diverges=(_BICUBIC_F32,)),
        _check("bicubic", True),
    ),
)
