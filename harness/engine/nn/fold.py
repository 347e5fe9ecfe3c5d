"""burn-nn's `Unfold4d` / `Fold4d` (crates/burn-nn/src/modules/{unfold,fold}.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): modules without params over `module_ops.unfold4d`
/ `module_ops.fold4d` (whose docstrings state the PyTorch differences: NaN from `0 * inf`
where burn's one-hot conv path runs). PyTorch's `nn.Unfold` / `nn.Fold` take the same
arguments (`kernel_size, dilation, padding, stride`; Fold's `output_size` first) with the same
defaults; burn's field order is `stride, dilation, padding`.
"""

from __future__ import annotations

import dataclasses

from harness.engine import module_ops
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = ["Fold4d", "Fold4dConfig", "Unfold4d", "Unfold4dConfig"]


@dataclasses.dataclass(frozen=True)
class Unfold4dConfig(Config):
    """burn's `Unfold4dConfig::new(kernel_size)`: stride [1, 1], dilation [1, 1], padding
    [0, 0]."""

    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    def init(self, device=None) -> Unfold4d:
        return Unfold4d(self.kernel_size, self.stride, self.dilation, self.padding)


class Unfold4d(Module):
    """`forward(x [batch, channels, h, w]) -> [batch, channels * kh * kw, blocks]`."""

    def __init__(self, kernel_size, stride, dilation, padding) -> None:
        self.kernel_size = tuple(kernel_size)
        self.stride = tuple(stride)
        self.dilation = tuple(dilation)
        self.padding = tuple(padding)

    def forward(self, x: Tensor) -> Tensor:
        options = module_ops.UnfoldOptions(self.stride, self.padding, self.dilation)
        return module_ops.unfold4d(x, self.kernel_size, options)


@dataclasses.dataclass(frozen=True)
class Fold4dConfig(Config):
    """burn's `Fold4dConfig::new(output_size, kernel_size)`: stride [1, 1], dilation [1, 1],
    padding [0, 0]."""

    output_size: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    def init(self, device=None) -> Fold4d:
        return Fold4d(self.output_size, self.kernel_size, self.stride, self.dilation, self.padding)


class Fold4d(Module):
    """`forward(columns [batch, channels * kh * kw, blocks]) -> [batch, channels, out_h,
    out_w]`, overlapping blocks summed."""

    def __init__(self, output_size, kernel_size, stride, dilation, padding) -> None:
        self.output_size = tuple(output_size)
        self.kernel_size = tuple(kernel_size)
        self.stride = tuple(stride)
        self.dilation = tuple(dilation)
        self.padding = tuple(padding)

    def forward(self, x: Tensor) -> Tensor:
        options = module_ops.UnfoldOptions(self.stride, self.padding, self.dilation)
        return module_ops.fold4d(x, self.output_size, self.kernel_size, options)
