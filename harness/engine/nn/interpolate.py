"""burn's `Interpolate1dConfig` / `Interpolate2dConfig` and their `InterpolateMode` (crates/
burn-nn/src/modules/interpolate/{mod,interpolate1d,interpolate2d}.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `test_calculate_output_size`,
`test_missing_params`, `test_infinite_height`, `test_infinite_width`, `test_module`), over
`module_ops.interpolate` (harness.engine.kernels.interpolate: flex's kernels).

PyTorch differences (`nn.Upsample` / `F.interpolate`):
- `align_corners` defaults to True (PyTorch False; PyTorch's nearest takes none, burn's
  nearest ignores it).
- burn's mode names are `Nearest`, `NearestExact`, `Linear` (bilinear; the 1-D module runs it
  on a `[N, C, 1, L]` plane, PyTorch's `linear`), `Cubic` (bicubic, also for 1-D, where
  PyTorch has no cubic mode) and `Lanczos` (Lanczos3; no PyTorch counterpart, and no
  backward on flex: its gradient raises). On flex `NearestExact` panics (no kernel).
- With `scale_factor`, burn computes the output size `floor(size * scale)` and then maps with
  the ratio `in / out`; PyTorch maps with `1 / scale_factor` unless
  `recompute_scale_factor=True`, so the two sample different points when `size * scale` is
  not an integer. Giving both `output_size` and `scale_factor` panics in burn (PyTorch also
  refuses both).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from harness.engine import module_ops
from harness.engine.errors import expect_input
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = [
    "Interpolate1d",
    "Interpolate1dConfig",
    "Interpolate2d",
    "Interpolate2dConfig",
    "InterpolateMode",
    "calculate_output_size",
]

_USIZE_MAX = 2.0**64 - 1


class InterpolateMode(enum.Enum):
    """burn-nn's `InterpolateMode`; `ops_mode` is the `module_ops.InterpolateMode` it maps to
    (`Linear` -> `Bilinear`, `Cubic` -> `Bicubic`, `Lanczos` -> `Lanczos3`)."""

    Nearest = "nearest"
    NearestExact = "nearest_exact"
    Linear = "bilinear"
    Cubic = "bicubic"
    Lanczos = "lanczos3"

    @property
    def ops_mode(self) -> module_ops.InterpolateMode:
        return module_ops.InterpolateMode(self.value)


def _scaled(size: int, scale: float, message: str) -> int:
    """`(size as f64 * scale as f64) as usize`: truncated, NaN and negatives saturating to 0;
    above usize::MAX it panics with `message`. The scale is an f32 in burn's configs."""
    value = size * float(np.float32(scale))
    if value > _USIZE_MAX:
        raise ValueError(message)
    return int(value) if value == value and value > 0 else 0


def calculate_output_size(input_dims, output_size, scale_factor):
    """burn's `calculate_output_size` of interpolate2d.rs (`[N, C, H, W]` dims, optional
    `[h, w]` size or `[sh, sw]` scales); interpolate1d.rs's for `[N, C, L]` dims and scalars."""
    if (output_size is None) == (scale_factor is None):
        raise ValueError("Either output_size or scale_factor must be provided")
    if output_size is not None:
        return tuple(output_size) if len(input_dims) == 4 else int(output_size)
    if len(input_dims) == 3:
        return _scaled(input_dims[2], scale_factor, "Scale factor is too large")
    return (
        _scaled(input_dims[2], scale_factor[0], "Scale factor for height is too large"),
        _scaled(input_dims[3], scale_factor[1], "Scale factor for width is too large"),
    )


@dataclass(frozen=True)
class Interpolate2dConfig(Config):
    """burn's `Interpolate2dConfig::new()`: no size, no scale (one must be set), mode
    `Nearest`, `align_corners` True."""

    output_size: tuple[int, int] | None = None
    scale_factor: tuple[float, float] | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def init(self) -> Interpolate2d:
        return Interpolate2d(self.output_size, self.scale_factor, self.mode, self.align_corners)


class Interpolate2d(Module):
    """`[N, C, H, W] -> [N, C, H', W']`."""

    def __init__(self, output_size, scale_factor, mode: InterpolateMode, align_corners: bool):
        self.output_size = output_size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners

    def forward(self, x: Tensor) -> Tensor:
        expect_input("Interpolate2d", x.shape, ["batch_size", "channels", "height", "width"])
        size = calculate_output_size(x.shape, self.output_size, self.scale_factor)
        options = module_ops.InterpolateOptions(self.mode.ops_mode, self.align_corners)
        return module_ops.interpolate(x, size, options)


@dataclass(frozen=True)
class Interpolate1dConfig(Config):
    """burn's `Interpolate1dConfig::new()`: the 2-D defaults, with a scalar size / scale."""

    output_size: int | None = None
    scale_factor: float | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def init(self) -> Interpolate1d:
        return Interpolate1d(self.output_size, self.scale_factor, self.mode, self.align_corners)


class Interpolate1d(Module):
    """`[N, C, L] -> [N, C, L']`: burn unsqueezes to `[N, C, 1, L]`, interpolates to
    `[1, L']` and squeezes the plane's height back out."""

    def __init__(self, output_size, scale_factor, mode: InterpolateMode, align_corners: bool):
        self.output_size = output_size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners

    def forward(self, x: Tensor) -> Tensor:
        expect_input("Interpolate1d", x.shape, ["batch_size", "channels", "length"])
        size = calculate_output_size(x.shape, self.output_size, self.scale_factor)
        options = module_ops.InterpolateOptions(self.mode.ops_mode, self.align_corners)
        return module_ops.interpolate(x.unsqueeze_dim(2), (1, size), options).squeeze_dim(2)
