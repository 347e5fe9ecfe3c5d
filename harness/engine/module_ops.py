"""burn's `burn::tensor::module` functions (crates/burn-tensor/src/tensor/module.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747) on engine tensors: `linear`, `conv1d`, `conv2d`,
`conv3d`, `conv_transpose1d/2d/3d` (with `ConvOptions` / `ConvTransposeOptions`),
`conv2d_weight_backward`,
`deform_conv2d` (with `DeformConvOptions`), `unfold4d` / `fold4d` (with `UnfoldOptions`),
`max_pool1d/2d` (and `_with_indices`, `max_pool2d_with_indices_backward`), `avg_pool1d/2d`
(and `avg_pool2d_backward`), `adaptive_avg_pool1d/2d/3d`,
`embedding`, `interpolate` (with `InterpolateOptions` / `InterpolateMode`), the constant
`pad` of burn's `Tensor::pad`, and burn-backend's default composites `layer_norm`,
`batch_norm`, `attention` / `attention_fallback` (with `AttentionModuleOptions`) and
`ctc_loss`, which the LayerNorm, BatchNorm and CTCLoss modules call (their checks:
harness.engine.ops.module_checks).

Each op is one primitive registered in harness.engine.ops (linalg.py, conv.py, pool.py:
forward, rule and op-matrix facts), the convolutions and pools over the NumPy kernels of
harness.engine.kernels (whose docstrings list the op-level differences from PyTorch); `pad`
is a composite (`cat` with constant blocks), as burn's `pad` builds it from tensor ops;
`unfold4d` and `fold4d` are the composites of burn-backend's default `ModuleOps` (neither
burn-autodiff nor burn-flex overrides them), so their gradients are those of the ops they call.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.engine import kernels
from harness.engine.autodiff import NONE
from harness.engine.composites import GridSampleOptions, GridSamplePaddingMode
from harness.engine.errors import AutodiffError, ShapeError
from harness.engine.kernels._common import fmt
from harness.engine.loss.reduction import NEG_INF, index_constant, mask_constant, neg_inf_constant
from harness.engine.methods import (
    ternary_result,
    unary_result,
    untracked_result,
    variadic_result,
)
from harness.engine.ops import conv, linalg, pool
from harness.engine.ops import interpolate as interpolate_ops
from harness.engine.ops.half import finfo
from harness.engine.tensor import Tensor

__all__ = [
    "AttentionModuleOptions",
    "ConvOptions",
    "ConvTransposeOptions",
    "DeformConvOptions",
    "GridSampleOptions",
    "GridSamplePaddingMode",
    "InterpolateMode",
    "InterpolateOptions",
    "UnfoldOptions",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "attention",
    "attention_fallback",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool2d_backward",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv2d_weight_backward",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "ctc_loss",
    "deform_conv2d",
    "embedding",
    "fold4d",
    "interpolate",
    "layer_norm",
    "linear",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "pad",
    "unfold4d",
]


def _tracked(t: Tensor) -> bool:
    """Whether `t` takes part in a graph (a weight gradient will be asked for)."""
    return t._node is not None and t._node.requirement is not NONE


def _conv(op, x: Tensor, weight: Tensor, bias: Tensor | None, **params) -> Tensor:
    tensors = (x, weight) if bias is None else (x, weight, bias)
    out, saved = op.forward(*(t._data for t in tensors), **params)
    return variadic_result(tensors, op, out, saved)


def _unary(op, x: Tensor, **params) -> Tensor:
    out, saved = op.forward(x._data, **params)
    return unary_result(x, op, out, saved)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`x @ weight (+ bias)`, weight `[d_in, d_out]`: one graph node with a bias (burn's
    `LinearWithBias`, harness.engine.ops.linalg.linear), the matmul alone without.

    A rank-1 `x` `[d_in]` runs as a batch of one and comes back `[d_out]`, as burn's `D == 1`
    branch does (`unsqueeze::<2>()`, `linear`, `squeeze_dim(0)`: two more graph nodes), which
    is also what `torch.nn.functional.linear` accepts."""
    if x.ndim == 1:
        return linear(x.unsqueeze(), weight, bias).squeeze_dim(0)
    if bias is None:
        return x.matmul(weight)
    op = linalg.LINEAR
    out, saved = op.forward(x._data, weight._data, bias._data)
    return ternary_result(x, weight, bias, op, out, saved)


@dataclass(frozen=True)
class ConvOptions:
    """burn's `ConvOptions::new(stride, padding, dilation, groups)` (one entry per spatial
    dim; symmetric padding)."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]
    groups: int = 1


@dataclass(frozen=True)
class ConvTransposeOptions:
    """burn's `ConvTransposeOptions::new(stride, padding, padding_out, dilation, groups)`."""

    stride: Sequence[int]
    padding: Sequence[int]
    padding_out: Sequence[int]
    dilation: Sequence[int]
    groups: int = 1


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x `[batch, in, length]`, weight `[out, in / groups, kernel]` -> `[batch, out, l_out]`."""
    return _conv_with(conv.CONV1D, x, weight, bias, options)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x `[batch, in, h, w]`, weight `[out, in / groups, kh, kw]` -> `[batch, out, h', w']`."""
    return _conv_with(conv.CONV2D, x, weight, bias, options)


def _conv_with(op, x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """A forward convolution `op` with `options`; the columns are kept only for a weight
    gradient."""
    return _conv(
        op, x, weight, bias,
        stride=tuple(options.stride), padding=tuple(options.padding),
        dilation=tuple(options.dilation), groups=options.groups,
        keep_columns=_tracked(weight),
    )  # fmt: skip


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x `[batch, in, d, h, w]`, weight `[out, in / groups, kd, kh, kw]` -> `[batch, out, d',
    h', w']` (no kept columns: the N-d kernel gathers windows as strided views)."""
    return _conv(
        conv.CONV3D, x, weight, bias,
        stride=tuple(options.stride), padding=tuple(options.padding),
        dilation=tuple(options.dilation), groups=options.groups,
    )  # fmt: skip


def conv2d_weight_backward(
    x: Tensor, weight: Tensor, output_grad: Tensor, options: ConvOptions
) -> Tensor:
    """burn's `conv2d_weight_backward(x, weight, output_grad, options)`: the gradient of
    `conv2d`'s weight, as burn-backend's default (ops/modules/conv.rs, which burn-autodiff
    and burn-flex keep): a conv2d of the batch-swapped input with the batch-swapped gradient
    (stride and dilation exchanged), swapped back and sliced to the kernel, per group with
    groups > 1. A composite, so it is differentiable. burn writes each group's block into a
    zero gradient with `slice_assign`; here the blocks are `cat` along dim 0 (the same values
    and gradients)."""
    stride, padding, dilation = (
        tuple(options.stride),
        tuple(options.padding),
        tuple(options.dilation),
    )
    swapped = ConvOptions(dilation, padding, stride, 1)
    x_s, g_s = x.swap_dims(0, 1), output_grad.swap_dims(0, 1)
    c_out, per_group, kh, kw = weight.shape
    per_group_out = c_out // options.groups
    blocks = []
    for g in range(options.groups):
        xg = x_s.slice([(g * per_group, (g + 1) * per_group)]) if options.groups > 1 else x_s
        gg = (
            g_s.slice([(g * per_group_out, (g + 1) * per_group_out)]) if options.groups > 1 else g_s
        )
        block = conv2d(xg, gg, None, swapped).swap_dims(0, 1)
        if block.shape[2:] != (kh, kw):
            block = block.slice([None, None, (0, kh), (0, kw)])
        blocks.append(block)
    return blocks[0] if len(blocks) == 1 else Tensor.cat(blocks, 0)


def conv_transpose1d(
    x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvTransposeOptions
) -> Tensor:
    """x `[batch, in, l]`, weight `[in, out / groups, k]` -> `[batch, out, l']`."""
    return _conv_transpose_with(conv.CONV_TRANSPOSE1D, x, weight, bias, options)


def conv_transpose2d(
    x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvTransposeOptions
) -> Tensor:
    """x `[batch, in, h, w]`, weight `[in, out / groups, kh, kw]` -> `[batch, out, h', w']`."""
    return _conv_transpose_with(conv.CONV_TRANSPOSE2D, x, weight, bias, options)


def conv_transpose3d(
    x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvTransposeOptions
) -> Tensor:
    """x `[batch, in, d, h, w]`, weight `[in, out / groups, kd, kh, kw]` -> `[batch, out, d',
    h', w']`."""
    return _conv_transpose_with(conv.CONV_TRANSPOSE3D, x, weight, bias, options)


def _conv_transpose_with(op, x, weight, bias, options: ConvTransposeOptions) -> Tensor:
    return _conv(
        op, x, weight, bias,
        stride=tuple(options.stride), padding=tuple(options.padding),
        padding_out=tuple(options.padding_out), dilation=tuple(options.dilation),
        groups=options.groups,
    )  # fmt: skip


@dataclass(frozen=True)
class DeformConvOptions:
    """burn's `DeformConvOptions::new(stride, padding, dilation, weight_groups,
    offset_groups)`."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]
    weight_groups: int = 1
    offset_groups: int = 1


def deform_conv2d(
    x: Tensor,
    offset: Tensor,
    weight: Tensor,
    mask: Tensor | None,
    bias: Tensor | None,
    options: DeformConvOptions,
) -> Tensor:
    """burn's `deform_conv2d(x, offset, weight, mask, bias, options)`: x `[batch, in, h, w]`,
    offset `[batch, offset_groups * kh * kw * 2, h', w']`, weight `[out, in / weight_groups,
    kh, kw]`, mask `[batch, offset_groups * kh * kw, h', w']` -> `[batch, out, h', w']`
    (harness.engine.kernels.deform_conv states the sampling and its rule)."""
    tensors = tuple(t for t in (x, offset, weight, mask, bias) if t is not None)
    op = conv.DEFORM_CONV2D
    out, saved = op.forward(
        *(t._data for t in tensors),
        stride=tuple(options.stride), padding=tuple(options.padding),
        dilation=tuple(options.dilation), weight_groups=options.weight_groups,
        offset_groups=options.offset_groups, has_mask=mask is not None,
        has_bias=bias is not None,
    )  # fmt: skip
    return variadic_result(tensors, op, out, saved)


@dataclass(frozen=True)
class UnfoldOptions:
    """burn's `UnfoldOptions::new(stride, padding, dilation)` (two entries each)."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]


def _unfolding_weight(channels: int, kernel_size, like: Tensor) -> Tensor:
    """burn's `create_unfolding_weight` (burn-backend ops/modules/unfold.rs): `[channels * kh
    * kw, channels, kh, kw]`, 1 where output channel `(c * kh + i) * kw + j` reads input
    channel c at tap (i, j), 0 elsewhere; untracked, in the input's dtype."""
    kh, kw = kernel_size
    weight = np.zeros((channels * kh * kw, channels, kh, kw), dtype=like.dtype.name)
    c, i, j = np.meshgrid(np.arange(channels), np.arange(kh), np.arange(kw), indexing="ij")
    weight[((c * kh + i) * kw + j).ravel(), c.ravel(), i.ravel(), j.ravel()] = 1.0
    return Tensor.from_numpy(weight, like.device)


def unfold4d(x: Tensor, kernel_size, options: UnfoldOptions) -> Tensor:
    """burn's `unfold4d(x, kernel_size, options)`: x `[batch, channels, h, w]` -> `[batch,
    channels * kh * kw, blocks]`, PyTorch's `F.unfold` layout (burn-backend's default
    `ModuleOps::unfold4d`, which burn-autodiff and burn-flex keep).

    Without padding and dilation, two `unfold`s, a `permute` and a `reshape` (exact copies).
    Otherwise burn's `unfold4d_using_conv2d`: a conv2d with a one-hot weight. PyTorch
    difference there: each output sums every element of its window times 0 or 1, so an inf
    or NaN in a window makes NaN of every other column entry of that window (`0 * inf`),
    where torch's `F.unfold` copies (float values agree exactly: `x * 1 + 0 * y` is exact)."""
    kernel_size = tuple(int(k) for k in kernel_size)
    stride, padding, dilation = (tuple(options.stride), tuple(options.padding),
                                 tuple(options.dilation))  # fmt: skip
    if x.ndim != 4:
        raise ShapeError(
            f"unfold4d: expected an input of rank 4 [batch, channels, height, width], got "
            f"shape [{', '.join(map(str, x.shape))}]"
        )
    if padding == (0, 0) and dilation == (1, 1):
        blocks = x.unfold(2, kernel_size[0], stride[0]).unfold(3, kernel_size[1], stride[1])
        blocks = blocks.permute([0, 1, 4, 5, 2, 3])  # batch, channels, kh, kw, h_blocks, w_blocks
        b, c, kh, kw, hb, wb = blocks.shape
        return blocks.reshape([b, c * kh * kw, hb * wb])
    weight = _unfolding_weight(x.shape[1], kernel_size, x)
    out = conv2d(x, weight, None, ConvOptions(stride, padding, dilation, 1))
    b, c_out, oh, ow = out.shape
    return out.reshape([b, c_out, oh * ow])


def fold4d(x: Tensor, output_size, kernel_size, options: UnfoldOptions) -> Tensor:
    """burn's `fold4d(x, output_size, kernel_size, options)`: columns `[batch, channels * kh *
    kw, blocks]` -> `[batch, channels, out_h, out_w]`, overlapping blocks summed (PyTorch's
    `F.fold`). burn-backend's default: a `conv_transpose2d` with `unfold4d`'s one-hot weight
    and `padding_out` recovering the exact size; burn's asserts as ShapeError with its text.
    PyTorch difference: as `unfold4d`'s conv path, an inf or NaN column entry makes NaN of
    every output its channel's transposed conv reaches (`0 * inf`)."""
    (oh, ow), (kh, kw) = (tuple(int(n) for n in output_size),
                          tuple(int(k) for k in kernel_size))  # fmt: skip
    stride, padding, dilation = (tuple(options.stride), tuple(options.padding),
                                 tuple(options.dilation))  # fmt: skip
    if x.ndim != 3:
        raise ShapeError(
            f"fold4d: expected an input of rank 3 [batch, channels * kernel, blocks], got "
            f"shape [{', '.join(map(str, x.shape))}]"
        )
    b, channels_col, blocks = x.shape
    if channels_col % (kh * kw):
        raise ShapeError(
            f"fold4d: input channels ({channels_col}) must be divisible by the kernel size "
            f"product ({kh * kw})"
        )
    spans = [n + 2 * p - d * (k - 1) - 1
             for n, p, d, k in zip((oh, ow), padding, dilation, (kh, kw), strict=True)]  # fmt: skip
    grid = [span // st + 1 for span, st in zip(spans, stride, strict=True)]
    if blocks != grid[0] * grid[1]:
        raise ShapeError(
            f"fold4d: number of blocks ({blocks}) does not match the expected grid "
            f"({grid[0]} x {grid[1]}) for the given output size and options"
        )
    weight = _unfolding_weight(channels_col // (kh * kw), (kh, kw), x)
    padding_out = tuple(span % st for span, st in zip(spans, stride, strict=True))
    columns = x.reshape([b, channels_col, grid[0], grid[1]])
    options = ConvTransposeOptions(stride, padding, padding_out, dilation, 1)
    return conv_transpose2d(columns, weight, None, options)


def max_pool2d(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False) -> Tensor:
    """burn's `max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)`."""
    return _unary(
        pool.MAX_POOL2D, x, kernel_size=tuple(kernel_size), stride=tuple(stride),
        padding=tuple(padding), dilation=tuple(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def max_pool1d(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False) -> Tensor:
    """burn's `max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode)`."""
    return _unary(
        pool.MAX_POOL1D, x, kernel_size=int(kernel_size), stride=int(stride),
        padding=int(padding), dilation=int(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def _with_indices(op, x: Tensor, **params) -> tuple[Tensor, Tensor]:
    out, saved = op.forward(x._data, **params)
    return unary_result(x, op, out, saved), untracked_result(x, saved.indices.astype(np.int64))


def max_pool2d_with_indices(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False):
    """burn's `max_pool2d_with_indices`: (output, int64 indices), each index the flat position
    `h * width + w` of the element taken in its input plane (PyTorch's `return_indices`
    layout). One graph node, the max pool's: burn-autodiff's `max_pool2d_with_indices`
    routes the gradient through the same indices."""
    return _with_indices(
        pool.MAX_POOL2D, x, kernel_size=tuple(kernel_size), stride=tuple(stride),
        padding=tuple(padding), dilation=tuple(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def max_pool1d_with_indices(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False):
    """burn's `max_pool1d_with_indices`: (output, int64 positions along the length)."""
    return _with_indices(
        pool.MAX_POOL1D, x, kernel_size=int(kernel_size), stride=int(stride),
        padding=int(padding), dilation=int(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def max_pool2d_with_indices_backward(
    x: Tensor, kernel_size, stride, padding, dilation, ceil_mode, output_grad, indices
) -> Tensor:
    """burn's `max_pool2d_with_indices_backward(x, kernel_size, stride, padding, dilation,
    ceil_mode, output_grad, indices)`: each output gradient added to the input element its
    index names (flex's rule, the one `max_pool2d`'s node runs; the pool arguments are
    burn's signature, the indices carry what they decide). On an autodiff device burn
    panics (burn-autodiff ops/module.rs): AutodiffError with its text."""
    if x.is_autodiff():
        raise AutodiffError("Can't differentiate max pool2d with indices backward.")
    gx = kernels.max_pool2d_backward(output_grad._data, indices._data, tuple(x.shape)).x
    return untracked_result(x, gx)


def avg_pool2d_backward(
    x: Tensor, grad: Tensor, kernel_size, stride, padding, count_include_pad, ceil_mode
) -> Tensor:
    """burn's `avg_pool2d_backward(x, grad, kernel_size, stride, padding, count_include_pad,
    ceil_mode)`: flex's rule (harness.engine.kernels.pool.avg_pool2d_backward, which states
    where it is not the derivative of the forward); AutodiffError on an autodiff device, as
    burn panics ("Can't differentiate avg pool 2d backward.")."""
    if x.is_autodiff():
        raise AutodiffError("Can't differentiate avg pool 2d backward.")
    gx = kernels.avg_pool2d_backward(
        grad._data, tuple(x.shape), tuple(kernel_size), tuple(stride), tuple(padding),
        bool(count_include_pad), bool(ceil_mode),
    ).x  # fmt: skip
    return untracked_result(x, gx)


def avg_pool2d(x: Tensor, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False):
    """burn's `avg_pool2d(x, kernel_size, stride, padding, count_include_pad, ceil_mode)`."""
    return _unary(
        pool.AVG_POOL2D, x, kernel_size=tuple(kernel_size), stride=tuple(stride),
        padding=tuple(padding), count_include_pad=bool(count_include_pad),
        ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def avg_pool1d(x: Tensor, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False):
    """burn's `avg_pool1d(x, kernel_size, stride, padding, count_include_pad, ceil_mode)`."""
    return _unary(
        pool.AVG_POOL1D, x, kernel_size=int(kernel_size), stride=int(stride),
        padding=int(padding), count_include_pad=bool(count_include_pad),
        ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def adaptive_avg_pool2d(x: Tensor, output_size) -> Tensor:
    return _unary(pool.ADAPTIVE_AVG_POOL2D, x, output_size=tuple(output_size))


def adaptive_avg_pool3d(x: Tensor, output_size) -> Tensor:
    return _unary(pool.ADAPTIVE_AVG_POOL3D, x, output_size=tuple(output_size))


def adaptive_avg_pool1d(x: Tensor, output_size: int) -> Tensor:
    return _unary(pool.ADAPTIVE_AVG_POOL1D, x, output_size=int(output_size))


def embedding(weights: Tensor, indices: Tensor) -> Tensor:
    """weights `[n_embedding, d_model]`, int indices `[batch, seq]` -> `[batch, seq, d_model]`."""
    return _unary(pool.EMBEDDING, weights, indices=indices._data)


def pad(x: Tensor, padding: tuple[int, int, int, int], value: float = 0.0) -> Tensor:
    """burn's `x.pad((left, right, top, bottom), PadMode::Constant(value))`: the last dim
    padded by (left, right), the one before by (top, bottom) (PyTorch's `F.pad` order).
    The padded positions get no gradient."""
    left, right, top, bottom = (int(p) for p in padding)
    if min(left, right, top, bottom) < 0:
        raise ValueError(f"pad: padding must be non-negative, got {padding!r}")
    out = x
    for dim, before, after in ((x.ndim - 1, left, right), (x.ndim - 2, top, bottom)):
        if before == 0 and after == 0:
            continue
        parts = []
        for n in (before, after):
            shape = list(out.shape)
            shape[dim] = n
            parts.append(_constant(out, shape, value) if n else None)
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = Tensor.cat(pieces, dim)
    return out


def _constant(like: Tensor, shape, value: float) -> Tensor:
    return Tensor.full(shape, value, like.device, dtype=like.dtype)


class InterpolateMode(enum.Enum):
    """burn's `InterpolateMode` (crates/burn-std/src/ops.rs), computed as flex does.
    `NearestExact` raises flex's own panic text (flex has no kernel for it); `Lanczos3` has a
    forward and, as in flex, a backward that raises."""

    Nearest = "nearest"
    NearestExact = "nearest_exact"
    Bilinear = "bilinear"
    Bicubic = "bicubic"
    Lanczos3 = "lanczos3"


@dataclass(frozen=True)
class InterpolateOptions:
    """burn's `InterpolateOptions::new(mode)`: `align_corners` defaults to True (PyTorch's
    `F.interpolate` to False); `mode` is an `InterpolateMode` or its value (`"bilinear"`)."""

    mode: InterpolateMode | str
    align_corners: bool = True

    def with_align_corners(self, align_corners: bool) -> InterpolateOptions:
        return InterpolateOptions(self.mode, align_corners)


def interpolate(x: Tensor, output_size, options: InterpolateOptions) -> Tensor:
    """burn's `module::interpolate(x, output_size, options)`: x `[N, C, H, W]` ->
    `[N, C, out_h, out_w]`, one graph node (harness.engine.ops.interpolate)."""
    mode = InterpolateMode(options.mode)
    if mode is InterpolateMode.NearestExact:
        dtype = {"float32": "F32", "float64": "F64"}.get(x.dtype.name, x.dtype.name)
        raise ValueError(f"interpolate: unsupported mode NearestExact / dtype {dtype}")
    return _unary(
        interpolate_ops.INTERPOLATE, x, output_size=tuple(int(n) for n in output_size),
        mode=mode.value, align_corners=bool(options.align_corners),
    )  # fmt: skip


# ---- normalisation and attention: burn-backend's default composites -------------------------


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor | None, epsilon: float) -> Tensor:
    """burn's `layer_norm`: `(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last
    dimension, biased variance.

    burn-autodiff does not override the backend's `layer_norm`, so on the autodiff device it
    is `ModuleOps::layer_norm`'s default (burn-backend ops/modules/base.rs), this composite of
    primitives in this order: `mean_dim`, `sub`, `mul(centered, centered)`, `mean_dim` (the
    variance), `add_scalar(eps)`, `sqrt`, `div`, `mul(gamma)`, `add(beta)`. The variance's
    gradient therefore goes through `mean_dim`'s backward, whose `1/n` is computed in f64
    (`float_mean_dim`), not through a division by a scalar (whose backward rounds `1/s` to f32
    even for f64 tensors). On the plain device burn-flex runs a fused row kernel
    (ops/activation.rs `layer_norm`) that rounds differently; the engine keeps the composite.
    """
    dim = x.ndim - 1
    mean = x.mean_dim(dim)
    centered = x - mean
    var = (centered * centered).mean_dim(dim)
    out = centered / (var + epsilon).sqrt()
    out = out * gamma
    return out if beta is None else out + beta


def batch_norm(x: Tensor, gamma, beta, mean, variance, epsilon: float) -> Tensor:
    """burn's `burn::tensor::module::batch_norm` (burn-backend `ModuleOps::batch_norm`'s
    default): each `[channels]` tensor reshaped to `[1, channels, 1, ...]`, then
    `(x - mean) / sqrt(variance + epsilon) * gamma + beta`."""
    if x.ndim < 2:
        raise ShapeError("batch norm requires an input rank of at least 2")
    channels = x.shape[1]
    shape = [1] * x.ndim
    shape[1] = channels
    for name, t in (("gamma", gamma), ("beta", beta), ("mean", mean), ("variance", variance)):
        if tuple(t.shape) != (channels,):
            raise ShapeError(
                f"invalid batch norm {name} shape: expected [{channels}], got {fmt(t.shape)}"
            )
    std = (variance.reshape(shape) + epsilon).sqrt()
    normalized = (x - mean.reshape(shape)) / std
    return normalized * gamma.reshape(shape) + beta.reshape(shape)


@dataclass(frozen=True)
class AttentionModuleOptions:
    """burn's `AttentionModuleOptions` (burn-std ops.rs): `scale` (None: `1/sqrt(head_dim)`),
    `softcap` (None: off; positive) and `is_causal` (bottom-right aligned)."""

    scale: float | None = None
    softcap: float | None = None
    is_causal: bool = False


def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    attn_bias: Tensor | None = None,
    options: AttentionModuleOptions = AttentionModuleOptions(),
) -> Tensor:
    """burn's `attention`: `softmax(q k^T * scale) v` over `[batch, heads, seq, dim]`, with an
    optional Bool `mask` (true: masked, -inf), additive `attn_bias`, softcap and causal mask.

    burn-autodiff's `attention` is `attention_fallback` (burn-backend ops/modules/attention.rs),
    the composite here, in its order: `matmul(q, k^T)`, `mul_scalar(scale)`, softcap
    (`tanh(s / cap) * cap`), the mask and then the causal mask filled with -inf, `add(bias)`,
    and a NaN-safe softmax: the row max clamped below at the dtype's most negative finite
    value and the row sum at its smallest normal, so a fully masked row gives 0 (and a zero
    gradient). On the plain device burn-flex runs its own kernel (ops/attention.rs); the
    engine keeps the fallback. MultiHeadAttention does not call this function (burn-nn's
    module divides by `sqrt(d_k)` and fills -1e4, see harness.engine.nn.attention).

    PyTorch differences (`F.scaled_dot_product_attention`, whose Bool `attn_mask` is true where
    a key takes part, burn's `mask` where it is masked):
    - a fully masked row is 0 here, NaN in torch's math path;
    - a masked score is replaced by -inf here; torch adds -inf to it, so a masked +inf score is
      NaN there;
    - `is_causal` is aligned at the bottom-right corner here (key j masked for query i when
      `j > i + seq_k - seq_q`), at the top-left in torch (`j > i`): they agree when
      `seq_q == seq_k`;
    - torch scales `q` and `k` by `sqrt(scale)` each before the product, so the two round
      differently (about 1 ulp).
    """
    if options.softcap is not None and not options.softcap > 0.0:
        raise ValueError(f"softcap must be positive, got {options.softcap}")
    scale = options.scale
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = query.matmul(key.transpose()).mul_scalar(scale)
    if options.softcap is not None:
        scores = scores.div_scalar(options.softcap).tanh().mul_scalar(options.softcap)
    if mask is not None:
        scores = scores.mask_fill(mask, -math.inf)
    if options.is_causal:
        scores = scores.mask_fill(_causal_mask(scores), -math.inf)
    if attn_bias is not None:
        scores = scores + attn_bias
    limits = finfo(scores.dtype)
    row_max = scores.max_dim(3).clamp_min(float(limits.min))
    numerator = (scores - row_max).exp()
    return (numerator / numerator.sum_dim(3).clamp_min(float(limits.tiny))).matmul(value)


attention_fallback = attention
"""burn's `attention_fallback` (what burn exports to test a backend's `attention` against):
on the autodiff device burn's `attention` is this function, and so is the engine's."""


def _causal_mask(scores: Tensor) -> Tensor:
    """burn's `build_causal_mask`: true where `col > row + (seq_k - seq_q)`, expanded."""
    seq_q, seq_k = scores.shape[2], scores.shape[3]
    rows = np.arange(seq_q)[:, None] + (seq_k - seq_q)
    future = np.broadcast_to(rows < np.arange(seq_k)[None, :], tuple(scores.shape))
    return mask_constant(future, scores)


# ---- ctc_loss: burn-backend's ctc_loss_default ----------------------------------------------


def ctc_loss(
    log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor, blank: int
) -> Tensor:
    """burn's `ctc_loss`: the per-sample loss `[N]` of log-probabilities `[T, N, C]` against
    padded Int targets `[N, S]` and Int lengths `[N]`.

    burn-backend's `ctc_loss_default` (ops/modules/ctc.rs), which burn-autodiff calls on a
    backend without `ctc_loss_backward` (flex has none), so the gradient is autodiff's through
    these ops: the alpha recursion, then `extract_loss`. The same ops in the same order, with
    two changes that keep values and gradients: the t = 0 row of alpha, which burn writes with
    two `slice_assign`s into a -inf tensor, is a `cat` of the two gathered values and -inf
    padding; and the full alpha history (`AlphaCtx::full`), which burn fills at every step but
    never reads for the loss, is not built. The integer bookkeeping (blank-inserted targets,
    masks, indices) carries no gradient and is computed in NumPy. Like burn's function it
    checks nothing (burn-nn's `CTCLoss` asserts the shapes and lengths).

    PyTorch difference: `F.ctc_loss`'s backward assumes `log_probs` are normalised (it returns
    `exp(log_probs) - posterior`, the gradient through a `log_softmax`); burn's is the gradient
    of the recursion itself. They agree on the gradient through a `log_softmax` of logits.
    """
    targets = targets.numpy()
    input_lengths, target_lengths = input_lengths.numpy(), target_lengths.numpy()
    max_input_length, batch_size, num_classes = log_probs.shape
    max_target_len = targets.shape[1]
    max_l_prime_len = 2 * max_target_len + 1
    l_prime = np.full((batch_size, max_l_prime_len), blank, dtype=np.int64)
    l_prime[:, 1::2] = targets

    # alpha[0, :, 0] = log_probs[0, :, blank], alpha[0, :, 1] = log_probs[0, :, l'[1]].
    log_probs_t0 = log_probs.slice([(0, 1), None, None]).reshape([batch_size, num_classes])
    row0 = [
        log_probs_t0.gather(1, index_constant(l_prime[:, 0:1], log_probs)).reshape(
            [1, batch_size, 1]
        )
    ]
    if max_l_prime_len > 1:
        first = log_probs_t0.gather(1, index_constant(l_prime[:, 1:2], log_probs))
        row0.append(first.reshape([1, batch_size, 1]))
    if max_l_prime_len > 2:
        row0.append(neg_inf_constant((1, batch_size, max_l_prime_len - 2), log_probs))
    log_alpha = Tensor.cat(row0, 2).reshape([batch_size, max_l_prime_len])

    cols = np.arange(max_l_prime_len)
    shifted = np.concatenate([np.full((batch_size, 2), blank), l_prime[:, :-2]], axis=1)
    skip = (l_prime != blank) & (l_prime != shifted[:, :max_l_prime_len]) & (cols >= 2)
    l_prime_mask = mask_constant(skip, log_probs)
    s_mask = cols[None, :] < (2 * target_lengths + 1)[:, None]
    t_mask = input_lengths[None, :] > np.arange(max_input_length)[:, None]
    combined_all = t_mask[:, :, None] & s_mask[None, :, :]

    pad_1 = neg_inf_constant((batch_size, 1), log_probs)
    pad_2 = neg_inf_constant((batch_size, 2), log_probs)
    indices_3d = np.broadcast_to(l_prime, (max_input_length, batch_size, max_l_prime_len))
    log_probs_at_l_full = log_probs.gather(2, index_constant(indices_3d, log_probs))

    for t in range(1, max_input_length):
        combined = mask_constant(combined_all[t], log_probs)
        s_m1 = _right_shift(log_alpha, pad_1, max_l_prime_len, 1)
        s_m2 = _right_shift(log_alpha, pad_2, max_l_prime_len, 2)
        bar = _log_sum_exp(log_alpha, s_m1)
        bar_with_skip = _log_sum_exp(bar, s_m2)
        log_alpha_combined = bar.mask_where(l_prime_mask, bar_with_skip)
        log_probs_at_l = log_probs_at_l_full.slice([(t, t + 1), None, None]).reshape(
            [batch_size, max_l_prime_len]
        )
        log_alpha = log_alpha.mask_where(combined, log_alpha_combined + log_probs_at_l)
    return _extract_loss(log_alpha, target_lengths)


def _extract_loss(log_alpha: Tensor, target_lengths: np.ndarray) -> Tensor:
    """`-logsumexp(alpha[T-1, 2 L], alpha[T-1, 2 L - 1])` (the second -inf when L = 0)."""
    batch_size = log_alpha.shape[0]
    last_blank = (2 * target_lengths).reshape(batch_size, 1)
    last_label = np.maximum(last_blank - 1, 0)
    at_blank = log_alpha.gather(1, index_constant(last_blank, log_alpha)).reshape([batch_size])
    at_label = log_alpha.gather(1, index_constant(last_label, log_alpha)).reshape([batch_size])
    at_label = at_label.mask_fill(mask_constant(target_lengths == 0, at_label), NEG_INF)
    return _log_sum_exp(at_blank, at_label).neg()


def _right_shift(tensor: Tensor, padding: Tensor, cols: int, shift: int) -> Tensor:
    """burn's `right_shift`: `shift` columns of -inf, then the first `cols - shift` columns."""
    if cols < shift:
        return padding.slice([None, (0, cols)])
    if cols == shift:  # burn cats an empty slice; the engine's slice refuses empty ranges
        return padding
    return Tensor.cat([padding, tensor.slice([None, (0, cols - shift)])], 1)


def _log_sum_exp(a: Tensor, b: Tensor) -> Tensor:
    """burn's CTC `log_sum_exp`: `max(a, b) + log1p(exp(-|a - b|))`, -inf inputs replaced by 0
    in the difference so that no NaN reaches the gradient."""
    a_inf, b_inf = a.equal_elem(NEG_INF), b.equal_elem(NEG_INF)
    either = mask_constant(np.logical_or(a_inf.numpy(), b_inf.numpy()), a)
    a_safe, b_safe = a.mask_fill(a_inf, 0.0), b.mask_fill(b_inf, 0.0)
    mx = a.mask_where(a.lower(b), b)
    diff = (a_safe - b_safe).abs().neg().mask_fill(either, NEG_INF)
    return mx + diff.exp().log1p()
