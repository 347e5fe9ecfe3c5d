"""Pooling modules: `MaxPool1d/2d`, `AvgPool1d/2d`, `AdaptiveAvgPool1d/2d/3d` and their configs, as
burn-nn's crates/burn-nn/src/modules/pool/*.rs (burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

The stride defaults to the kernel size (`strides` in the 2-D configs: burn's field name).
Padding is a `PaddingConfig`; asymmetric pairs (`Same` on even kernels, `Explicit`) are padded
explicitly first, with -inf for max pools and zeros for average pools, then pooled without
padding. The kernels' docstrings (harness.engine.kernels.pool) list the op-level divergences
from PyTorch (ceil mode, NaN, padding bound, average-pool backward).

Differences from PyTorch at the module level:
- An average pool over an explicitly padded (asymmetric) input counts the padded zeros as
  input elements, so `count_include_pad=False` still divides by them there.
- `Same` for pools uses the kernel size, not the dilated kernel (harness.engine.nn.padding).
- PyTorch's `nn.MaxPool2d(padding=p)` pads symmetrically only.
"""

from __future__ import annotations

import dataclasses

from harness.engine import module_ops
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

from .conv import _check_input, _padded_1d, _padded_2d, _pair, in_module
from .padding import PaddingConfig1d, PaddingConfig2d

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AdaptiveAvgPool3d",
    "AdaptiveAvgPool3dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
]

_LAYOUT_2D = "[batch_size, channels, height, width]"
_LAYOUT_1D = "[batch_size, channels, length]"


@dataclasses.dataclass(frozen=True)
class MaxPool2dConfig(Config):
    """burn's `MaxPool2dConfig::new(kernel_size)`: strides = kernel_size, padding `Valid`,
    dilation [1, 1], ceil_mode false."""

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: object = PaddingConfig2d.Valid
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def init(self, device=None) -> MaxPool2d:
        kernel = _pair(self.kernel_size)
        stride = kernel if self.strides is None else _pair(self.strides)
        return MaxPool2d(stride, kernel, self.padding, _pair(self.dilation), self.ceil_mode)


class MaxPool2d(Module):
    def __init__(self, stride, kernel_size, padding, dilation, ceil_mode: bool) -> None:
        self.stride = tuple(stride)
        self.kernel_size = tuple(kernel_size)
        self.padding = padding
        self.dilation = tuple(dilation)
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        _check_input("MaxPool2d", x, 4, _LAYOUT_2D)
        x, pad = _padded_2d(x, self.padding, self.kernel_size, self.stride, float("-inf"))
        with in_module("MaxPool2d", f"{_LAYOUT_2D} no smaller than the kernel {self.kernel_size}"):
            return module_ops.max_pool2d(
                x, self.kernel_size, self.stride, pad, self.dilation, self.ceil_mode
            )


@dataclasses.dataclass(frozen=True)
class MaxPool1dConfig(Config):
    """burn's `MaxPool1dConfig::new(kernel_size)`: stride = kernel_size, padding `Valid`,
    dilation 1, ceil_mode false."""

    kernel_size: int
    stride: int | None = None
    padding: object = PaddingConfig1d.Valid
    dilation: int = 1
    ceil_mode: bool = False

    def init(self, device=None) -> MaxPool1d:
        stride = self.kernel_size if self.stride is None else self.stride
        return MaxPool1d(stride, self.kernel_size, self.padding, self.dilation, self.ceil_mode)


class MaxPool1d(Module):
    def __init__(self, stride, kernel_size, padding, dilation, ceil_mode: bool) -> None:
        self.stride = stride
        self.kernel_size = kernel_size
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        _check_input("MaxPool1d", x, 3, _LAYOUT_1D)
        x, pad = _padded_1d(x, self.padding, self.kernel_size, self.stride, float("-inf"))
        with in_module("MaxPool1d", f"{_LAYOUT_1D} no smaller than the kernel {self.kernel_size}"):
            return module_ops.max_pool1d(
                x, self.kernel_size, self.stride, pad, self.dilation, self.ceil_mode
            )


@dataclasses.dataclass(frozen=True)
class AvgPool2dConfig(Config):
    """burn's `AvgPool2dConfig::new(kernel_size)`: strides = kernel_size, padding `Valid`,
    count_include_pad true, ceil_mode false."""

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: object = PaddingConfig2d.Valid
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device=None) -> AvgPool2d:
        kernel = _pair(self.kernel_size)
        stride = kernel if self.strides is None else _pair(self.strides)
        return AvgPool2d(stride, kernel, self.padding, self.count_include_pad, self.ceil_mode)


class AvgPool2d(Module):
    def __init__(self, stride, kernel_size, padding, count_include_pad, ceil_mode) -> None:
        self.stride = tuple(stride)
        self.kernel_size = tuple(kernel_size)
        self.padding = padding
        self.count_include_pad = count_include_pad
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AvgPool2d", x, 4, _LAYOUT_2D)
        x, pad = _padded_2d(x, self.padding, self.kernel_size, self.stride, 0.0)
        with in_module("AvgPool2d", f"{_LAYOUT_2D} no smaller than the kernel {self.kernel_size}"):
            return module_ops.avg_pool2d(
                x, self.kernel_size, self.stride, pad, self.count_include_pad, self.ceil_mode
            )


@dataclasses.dataclass(frozen=True)
class AvgPool1dConfig(Config):
    """burn's `AvgPool1dConfig::new(kernel_size)`: stride = kernel_size, padding `Valid`,
    count_include_pad true, ceil_mode false."""

    kernel_size: int
    stride: int | None = None
    padding: object = PaddingConfig1d.Valid
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device=None) -> AvgPool1d:
        stride = self.kernel_size if self.stride is None else self.stride
        return AvgPool1d(
            stride, self.kernel_size, self.padding, self.count_include_pad, self.ceil_mode
        )


class AvgPool1d(Module):
    def __init__(self, stride, kernel_size, padding, count_include_pad, ceil_mode) -> None:
        self.stride = stride
        self.kernel_size = kernel_size
        self.padding = padding
        self.count_include_pad = count_include_pad
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AvgPool1d", x, 3, _LAYOUT_1D)
        x, pad = _padded_1d(x, self.padding, self.kernel_size, self.stride, 0.0)
        with in_module("AvgPool1d", f"{_LAYOUT_1D} no smaller than the kernel {self.kernel_size}"):
            return module_ops.avg_pool1d(
                x, self.kernel_size, self.stride, pad, self.count_include_pad, self.ceil_mode
            )


@dataclasses.dataclass(frozen=True)
class AdaptiveAvgPool2dConfig(Config):
    """burn's `AdaptiveAvgPool2dConfig::new(output_size)`."""

    output_size: tuple[int, int]

    def init(self, device=None) -> AdaptiveAvgPool2d:
        return AdaptiveAvgPool2d(_pair(self.output_size))


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size) -> None:
        self.output_size = tuple(output_size)

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AdaptiveAvgPool2d", x, 4, _LAYOUT_2D)
        return module_ops.adaptive_avg_pool2d(x, self.output_size)


@dataclasses.dataclass(frozen=True)
class AdaptiveAvgPool1dConfig(Config):
    """burn's `AdaptiveAvgPool1dConfig::new(output_size)`."""

    output_size: int

    def init(self, device=None) -> AdaptiveAvgPool1d:
        return AdaptiveAvgPool1d(self.output_size)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size: int) -> None:
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AdaptiveAvgPool1d", x, 3, _LAYOUT_1D)
        return module_ops.adaptive_avg_pool1d(x, self.output_size)


@dataclasses.dataclass(frozen=True)
class AdaptiveAvgPool3dConfig(Config):
    """burn's `AdaptiveAvgPool3dConfig::new(output_size)`."""

    output_size: tuple[int, int, int]

    def init(self, device=None) -> AdaptiveAvgPool3d:
        return AdaptiveAvgPool3d(self.output_size)


class AdaptiveAvgPool3d(Module):
    def __init__(self, output_size) -> None:
        self.output_size = tuple(output_size)

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AdaptiveAvgPool3d", x, 5, "[batch_size, channels, depth, height, width]")
        return module_ops.adaptive_avg_pool3d(x, self.output_size)
