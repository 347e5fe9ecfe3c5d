"""Convolution modules: `Conv1d`, `Conv2d`, `Conv3d`, `ConvTranspose1d`, `ConvTranspose2d`,
`ConvTranspose3d`, `DeformConv2d` and their configs, as burn-nn's crates/burn-nn/src/modules/
conv/{conv1d,conv2d,conv3d,conv_transpose1d,conv_transpose2d,conv_transpose3d,deform_conv2d,
checks}.rs (burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

Weights are stored in PyTorch's layout (`[out, in / groups, kernel...]`; transposed conv
`[in, out / groups, kernel...]`), so the importer loads them as stored. The default
initializer is `KaimingUniform(gain=1/sqrt(3))` with fan_in = in/groups * kernel elements and
fan_out = out/groups * kernel elements, for the weight and the bias (harness.engine.nn.
initializer says how PyTorch's default compares).

Differences from PyTorch (`nn.Conv2d`):
- `channels=[in, out]` is one field; padding is a `PaddingConfig` (`Same` computed per
  forward from the input size, split with the extra zero at the end, asymmetric pairs padded
  explicitly before a zero-padding conv; see harness.engine.nn.padding for `Same` with
  stride > 1 or dilation > 1, where burn and PyTorch part).
- `ConvTranspose2dConfig` takes `padding_out` (PyTorch `output_padding`) without PyTorch's
  bound (see harness.engine.kernels.conv).
- A channel mismatch raises burn's text (harness.engine.kernels._common); a groups count that
  does not divide the channels raises at `init`, as burn's `checks_channels_div_groups`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator

from harness.engine import module_ops
from harness.engine.errors import ShapeError
from harness.engine.kernels._common import GROUPS_NOT_DIVIDING, fmt
from harness.engine.module import Config, Module, Param
from harness.engine.tensor import Tensor

from .initializer import KaimingUniform
from .padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d

__all__ = [
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "Conv3d",
    "Conv3dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "DeformConv2d",
    "DeformConv2dConfig",
]

_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


def _check_groups(channels_in: int, channels_out: int, groups: int) -> None:
    if groups < 1 or channels_in % groups or channels_out % groups:
        raise ValueError(
            GROUPS_NOT_DIVIDING.format(
                channels_in=channels_in, channels_out=channels_out, groups=groups
            )
        )


@contextlib.contextmanager
def in_module(module: str, expects: str) -> Iterator[None]:
    """The op's ShapeError (a channel mismatch, a kernel larger than the padded input) raised
    again naming the module and the input it expects; the op's text (burn's wording where
    burn has one) and the given shape are kept."""
    try:
        yield
    except ShapeError as e:
        detail = str(e).split(": ", 1)[-1]
        raise ShapeError(f"{module}: {detail}; {module} expects an input {expects}") from None


def _check_input(module: str, x: Tensor, rank: int, layout: str) -> None:
    if x.ndim != rank:
        raise ShapeError(
            f"{module}: expected an input of rank {rank} {layout}, got shape {fmt(x.shape)}"
        )


def _pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def _padded_2d(x: Tensor, padding, kernel, stride, fill: float):
    """(input, symmetric padding): asymmetric pairs padded with `fill` first."""
    (top, bottom), (left, right) = padding.pairs(x.shape[2], x.shape[3], kernel, stride)
    if top != bottom or left != right:
        return module_ops.pad(x, (left, right, top, bottom), fill), (0, 0)
    return x, (top, left)


def _padded_1d(x: Tensor, padding, kernel, stride, fill: float):
    left, right = padding.pair(x.shape[2], kernel, stride)
    if left != right:
        return module_ops.pad(x, (left, right, 0, 0), fill), 0
    return x, left


@dataclasses.dataclass(frozen=True)
class Conv2dConfig(Config):
    """burn's `Conv2dConfig::new(channels, kernel_size)`: stride [1, 1], dilation [1, 1],
    groups 1, padding `Valid`, bias true, `KaimingUniform(1/sqrt(3))`."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    padding: object = PaddingConfig2d.Valid
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> Conv2d:
        c_in, c_out = self.channels
        _check_groups(c_in, c_out, self.groups)
        kh, kw = _pair(self.kernel_size)
        fan_in = c_in // self.groups * kh * kw
        fan_out = c_out // self.groups * kh * kw
        shape = (c_out, c_in // self.groups, kh, kw)
        weight = self.initializer.init_with(shape, fan_in, fan_out, device)
        bias = self.initializer.init_with((c_out,), fan_in, fan_out, device) if self.bias else None
        return Conv2d(
            weight, bias, _pair(self.stride), (kh, kw), _pair(self.dilation), self.groups,
            self.padding,
        )  # fmt: skip


class Conv2d(Module):
    """burn's `Conv2d`: `forward(x [batch, in, height, width]) -> [batch, out, h_out, w_out]`."""

    def __init__(self, weight, bias, stride, kernel_size, dilation, groups, padding) -> None:
        self.weight = weight
        self.bias = bias
        self.stride = tuple(stride)
        self.kernel_size = tuple(kernel_size)
        self.dilation = tuple(dilation)
        self.groups = groups
        self.padding = padding

    def forward(self, x: Tensor) -> Tensor:
        _check_input("Conv2d", x, 4, "[batch_size, channels_in, height, width]")
        bias = None if self.bias is None else self.bias.val()
        x, padding = _padded_2d(x, self.padding, self.kernel_size, self.stride, 0.0)
        options = module_ops.ConvOptions(self.stride, padding, self.dilation, self.groups)
        c_in = self.weight.val().shape[1] * self.groups
        with in_module("Conv2d", f"[batch_size, {c_in}, height, width]"):
            return module_ops.conv2d(x, self.weight.val(), bias, options)


@dataclasses.dataclass(frozen=True)
class Conv1dConfig(Config):
    """burn's `Conv1dConfig::new(channels_in, channels_out, kernel_size)`: stride 1,
    dilation 1, groups 1, padding `Valid`, bias true, `KaimingUniform(1/sqrt(3))`."""

    channels_in: int
    channels_out: int
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: object = PaddingConfig1d.Valid
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> Conv1d:
        c_in, c_out, k = self.channels_in, self.channels_out, self.kernel_size
        _check_groups(c_in, c_out, self.groups)
        fan_in, fan_out = c_in // self.groups * k, c_out // self.groups * k
        shape = (c_out, c_in // self.groups, k)
        weight = self.initializer.init_with(shape, fan_in, fan_out, device)
        bias = self.initializer.init_with((c_out,), fan_in, fan_out, device) if self.bias else None
        return Conv1d(weight, bias, self.stride, k, self.dilation, self.groups, self.padding)


class Conv1d(Module):
    """burn's `Conv1d`: `forward(x [batch, in, length]) -> [batch, out, l_out]`."""

    def __init__(self, weight, bias, stride, kernel_size, dilation, groups, padding) -> None:
        self.weight = weight
        self.bias = bias
        self.stride = stride
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.groups = groups
        self.padding = padding

    def forward(self, x: Tensor) -> Tensor:
        _check_input("Conv1d", x, 3, "[batch_size, channels_in, length]")
        bias = None if self.bias is None else self.bias.val()
        x, left = _padded_1d(x, self.padding, self.kernel_size, self.stride, 0.0)
        options = module_ops.ConvOptions((self.stride,), (left,), (self.dilation,), self.groups)
        c_in = self.weight.val().shape[1] * self.groups
        with in_module("Conv1d", f"[batch_size, {c_in}, length]"):
            return module_ops.conv1d(x, self.weight.val(), bias, options)


@dataclasses.dataclass(frozen=True)
class ConvTranspose2dConfig(Config):
    """burn's `ConvTranspose2dConfig::new(channels, kernel_size)`: stride [1, 1], dilation
    [1, 1], groups 1, padding [0, 0], padding_out [0, 0], bias true; fan_in = out/groups *
    kernel elements and no fan_out (burn passes `None`)."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    padding: tuple[int, int] = (0, 0)
    padding_out: tuple[int, int] = (0, 0)
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> ConvTranspose2d:
        c_in, c_out = self.channels
        _check_groups(c_in, c_out, self.groups)
        kh, kw = _pair(self.kernel_size)
        fan_in = c_out // self.groups * kh * kw
        shape = (c_in, c_out // self.groups, kh, kw)
        weight = self.initializer.init_with(shape, fan_in, None, device)
        bias = self.initializer.init_with((c_out,), fan_in, None, device) if self.bias else None
        options = module_ops.ConvTransposeOptions(
            _pair(self.stride), _pair(self.padding), _pair(self.padding_out),
            _pair(self.dilation), self.groups,
        )  # fmt: skip
        return ConvTranspose2d(weight, bias, options)


class ConvTranspose2d(Module):
    """burn's `ConvTranspose2d`: `forward(x [batch, in, h, w]) -> [batch, out, h_out, w_out]`."""

    def __init__(self, weight: Param, bias: Param | None, options) -> None:
        self.weight = weight
        self.bias = bias
        self.options = options

    def forward(self, x: Tensor) -> Tensor:
        _check_input("ConvTranspose2d", x, 4, "[batch_size, channels_in, height, width]")
        bias = None if self.bias is None else self.bias.val()
        c_in = self.weight.val().shape[0]
        with in_module("ConvTranspose2d", f"[batch_size, {c_in}, height, width]"):
            return module_ops.conv_transpose2d(x, self.weight.val(), bias, self.options)


def _triple(value) -> tuple[int, int, int]:
    return (value,) * 3 if isinstance(value, int) else tuple(value)


@dataclasses.dataclass(frozen=True)
class Conv3dConfig(Config):
    """burn's `Conv3dConfig::new(channels, kernel_size)`: stride [1, 1, 1], dilation
    [1, 1, 1], groups 1, padding `Valid`, bias true, `KaimingUniform(1/sqrt(3))`; `Same`
    with an even kernel raises at `init` (burn's `check_same_padding_support`)."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    groups: int = 1
    padding: object = PaddingConfig3d.Valid
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> Conv3d:
        c_in, c_out = self.channels
        _check_groups(c_in, c_out, self.groups)
        kernel = _triple(self.kernel_size)
        if self.padding == PaddingConfig3d.Same and any(k % 2 == 0 for k in kernel):
            raise ValueError("Conv3dConfig: Same padding with an even kernel size is not supported")
        k = math.prod(kernel)
        fan_in, fan_out = c_in // self.groups * k, c_out // self.groups * k
        shape = (c_out, c_in // self.groups, *kernel)
        weight = self.initializer.init_with(shape, fan_in, fan_out, device)
        bias = self.initializer.init_with((c_out,), fan_in, fan_out, device) if self.bias else None
        return Conv3d(
            weight, bias, _triple(self.stride), kernel, _triple(self.dilation), self.groups,
            self.padding,
        )  # fmt: skip


class Conv3d(Conv2d):
    """burn's `Conv3d`: `forward(x [batch, in, depth, height, width]) -> [batch, out, d', h',
    w']` (the same fields as `Conv2d`)."""

    def forward(self, x: Tensor) -> Tensor:
        _check_input("Conv3d", x, 5, "[batch_size, channels_in, depth, height, width]")
        bias = None if self.bias is None else self.bias.val()
        padding = self.padding.padding_3d(x.shape[2:], self.kernel_size, self.stride)
        options = module_ops.ConvOptions(self.stride, padding, self.dilation, self.groups)
        c_in = self.weight.val().shape[1] * self.groups
        with in_module("Conv3d", f"[batch_size, {c_in}, depth, height, width]"):
            return module_ops.conv3d(x, self.weight.val(), bias, options)


def _transpose_params(config, kernel: tuple[int, ...], device):
    """burn's transposed-conv `init`: weight `[in, out / groups, kernel...]`, fan_in = out /
    groups * kernel elements, no fan_out; the bias with the same fans."""
    c_in, c_out = config.channels
    _check_groups(c_in, c_out, config.groups)
    fan_in = c_out // config.groups * math.prod(kernel)
    shape = (c_in, c_out // config.groups, *kernel)
    weight = config.initializer.init_with(shape, fan_in, None, device)
    bias = config.initializer.init_with((c_out,), fan_in, None, device) if config.bias else None
    return weight, bias


@dataclasses.dataclass(frozen=True)
class ConvTranspose1dConfig(Config):
    """burn's `ConvTranspose1dConfig::new(channels, kernel_size)`: stride 1, dilation 1,
    groups 1, padding 0, padding_out 0, bias true (fans as `ConvTranspose2dConfig`)."""

    channels: tuple[int, int]
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: int = 0
    padding_out: int = 0
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> ConvTranspose1d:
        weight, bias = _transpose_params(self, (self.kernel_size,), device)
        options = module_ops.ConvTransposeOptions(
            (self.stride,), (self.padding,), (self.padding_out,), (self.dilation,), self.groups
        )
        return ConvTranspose1d(weight, bias, options)


class ConvTranspose1d(ConvTranspose2d):
    """burn's `ConvTranspose1d`: `forward(x [batch, in, length]) -> [batch, out, l_out]`."""

    def forward(self, x: Tensor) -> Tensor:
        _check_input("ConvTranspose1d", x, 3, "[batch_size, channels_in, length]")
        bias = None if self.bias is None else self.bias.val()
        c_in = self.weight.val().shape[0]
        with in_module("ConvTranspose1d", f"[batch_size, {c_in}, length]"):
            return module_ops.conv_transpose1d(x, self.weight.val(), bias, self.options)


@dataclasses.dataclass(frozen=True)
class ConvTranspose3dConfig(Config):
    """burn's `ConvTranspose3dConfig::new(channels, kernel_size)`: stride [1, 1, 1], dilation
    [1, 1, 1], groups 1, padding [0, 0, 0], padding_out [0, 0, 0], bias true."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    groups: int = 1
    padding: tuple[int, int, int] = (0, 0, 0)
    padding_out: tuple[int, int, int] = (0, 0, 0)
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> ConvTranspose3d:
        weight, bias = _transpose_params(self, _triple(self.kernel_size), device)
        options = module_ops.ConvTransposeOptions(
            _triple(self.stride), _triple(self.padding), _triple(self.padding_out),
            _triple(self.dilation), self.groups,
        )  # fmt: skip
        return ConvTranspose3d(weight, bias, options)


class ConvTranspose3d(ConvTranspose2d):
    """burn's `ConvTranspose3d`: `forward(x [batch, in, d, h, w]) -> [batch, out, d', h', w']`."""

    def forward(self, x: Tensor) -> Tensor:
        _check_input("ConvTranspose3d", x, 5, "[batch_size, channels_in, depth, height, width]")
        bias = None if self.bias is None else self.bias.val()
        c_in = self.weight.val().shape[0]
        with in_module("ConvTranspose3d", f"[batch_size, {c_in}, depth, height, width]"):
            return module_ops.conv_transpose3d(x, self.weight.val(), bias, self.options)


@dataclasses.dataclass(frozen=True)
class DeformConv2dConfig(Config):
    """burn's `DeformConv2dConfig::new(channels, kernel_size)`: stride [1, 1], dilation
    [1, 1], weight_groups 1, offset_groups 1, padding `Valid`, bias true,
    `KaimingUniform(1/sqrt(3))` with conv2d's fans (over weight_groups). `init` checks the
    groups as burn: `Same` needs an odd kernel, the input channels must divide by
    offset_groups. No PyTorch module (torchvision's `DeformConv2d` has the same weight
    layout `[out, in / groups, kh, kw]`, its offset and mask passed to `forward` too)."""

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    weight_groups: int = 1
    offset_groups: int = 1
    padding: object = PaddingConfig2d.Valid
    bias: bool = True
    initializer: object = _DEFAULT_INIT

    def init(self, device) -> DeformConv2d:
        c_in, c_out = self.channels
        _check_groups(c_in, c_out, self.weight_groups)
        kh, kw = _pair(self.kernel_size)
        if self.padding == PaddingConfig2d.Same and (kh % 2 == 0 or kw % 2 == 0):
            raise ValueError(
                "DeformConv2dConfig: Same padding with an even kernel size is not supported"
            )
        if c_in % self.offset_groups:
            raise ValueError(
                "Channels must be divisible by the number of groups. Got "
                f"channels_in={c_in}, offset_groups={self.offset_groups}"
            )
        fan_in = c_in // self.weight_groups * kh * kw
        fan_out = c_out // self.weight_groups * kh * kw
        shape = (c_out, c_in // self.weight_groups, kh, kw)
        weight = self.initializer.init_with(shape, fan_in, fan_out, device)
        bias = self.initializer.init_with((c_out,), fan_in, fan_out, device) if self.bias else None
        return DeformConv2d(
            weight, bias, _pair(self.stride), (kh, kw), _pair(self.dilation),
            self.weight_groups, self.offset_groups, self.padding,
        )  # fmt: skip


class DeformConv2d(Module):
    """burn's `DeformConv2d`: `forward(x [batch, in, h, w], offset, mask=None) -> [batch,
    out, h', w']`. Padding is burn's `calculate_padding_2d`: symmetric only (an asymmetric
    `Explicit` or `Same` split raises, as burn panics)."""

    def __init__(self, weight, bias, stride, kernel_size, dilation, weight_groups,
                 offset_groups, padding) -> None:  # fmt: skip
        self.weight = weight
        self.bias = bias
        self.stride = tuple(stride)
        self.kernel_size = tuple(kernel_size)
        self.dilation = tuple(dilation)
        self.weight_groups = weight_groups
        self.offset_groups = offset_groups
        self.padding = padding

    def forward(self, x: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        _check_input("DeformConv2d", x, 4, "[batch_size, channels_in, height, width]")
        (top, bottom), (left, right) = self.padding.pairs(
            x.shape[2], x.shape[3], self.kernel_size, self.stride
        )
        if top != bottom or left != right:
            raise ValueError(
                "DeformConv2d: Asymmetric padding should be handled via "
                "calculate_padding_2d_pairs()"
            )
        options = module_ops.DeformConvOptions(
            self.stride, (top, left), self.dilation, self.weight_groups, self.offset_groups
        )
        bias = None if self.bias is None else self.bias.val()
        c_in = self.weight.val().shape[1] * self.weight_groups
        with in_module("DeformConv2d", f"[batch_size, {c_in}, height, width]"):
            return module_ops.deform_conv2d(x, offset, self.weight.val(), mask, bias, options)
