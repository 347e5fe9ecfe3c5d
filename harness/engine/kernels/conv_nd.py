"""Convolutions over any number of spatial dims, used for `conv3d`, `conv_transpose1d` and
`conv_transpose3d` and their vector-Jacobian products (the 1-D and 2-D forward convolutions
and `conv_transpose2d` run the tuned im2col kernels of conv.py).

Layouts are burn's (and PyTorch's): x `[N, C, spatial...]`, conv weight `[C_out, C_in / groups,
kernel...]`, transposed-conv weight `[C_in, C_out / groups, kernel...]`, bias `[C_out]`.

How: a strided view lists every (dilated, strided) kernel window of the zero-padded input
without a copy (`[N, C, out..., kernel...]`); one `tensordot` per group does the sums. The
adjoint direction (the input gradient, the transposed conv's forward) is a `tensordot` into
per-tap columns and a scatter-add over the kernel taps (one strided array addition per tap).

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747):
- forward: burn-flex/src/ops/conv.rs (`conv3d_impl`, im2col + gemm) and
  ops/conv_transpose.rs (`conv_transpose3d_impl`; `conv_transpose1d` is expanded to 3-D);
- backward: burn-autodiff/src/ops/module.rs (`conv3d`, `conv_transpose1d`,
  `conv_transpose3d`: one node with x / weight / bias parents) calling burn-backend
  ops/modules/conv.rs: `conv3d_x_backward` = conv_transpose3d of the output gradient,
  `conv3d_weight_backward` = a conv of the swapped input and gradient, bias = the sum over
  batch and positions; `conv_transpose{1,3}d_x_backward` = a conv of the output gradient
  with the same weight, sliced to the input size. The sums here are the same products in
  another order: values agree with burn and PyTorch to rounding, not bit for bit.

Differences from PyTorch (burn's behaviour kept, as conv.py): `padding_out` has no bound
(PyTorch requires `output_padding < stride or < dilation`); burn's argument order
(`stride, padding, padding_out, dilation, groups`); channel errors in burn's wording.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ShapeError
from ._common import (
    check_channels,
    check_float,
    check_grad_shape,
    check_groups,
    check_rank,
    conv_output_size,
    fmt,
    ints,
    too_small,
)
from .conv import ConvGrads

_LAYOUT = {1: "[batch, channels, length]", 3: "[batch, channels, depth, height, width]"}
_KERNEL = {1: "kernel", 3: "kernel_d, kernel_h, kernel_w"}


def conv_nd(x, weight, bias=None, *, stride, padding, dilation, groups, op="conv3d"):
    """burn `module::conv3d(x, weight, bias, ConvOptions::new(stride, padding, dilation,
    groups))` for 3 spatial dims: `[N, C_in, D, H, W]` -> `[N, C_out, D', H', W']`, each size
    `(n + 2*padding - dilation*(k-1) - 1) // stride + 1` (the same as PyTorch)."""
    g = _Geometry.of_conv(op, x, weight, bias, stride, padding, dilation, groups)
    out = _correlate(_padded(x, g.padding), weight, g, g.conv_out(x.shape[2:]))
    return _with_bias(out, bias)


def conv_nd_backward(
    grad, x, weight, *, stride, padding, dilation, groups,
    need_x=True, need_weight=True, need_bias=True, op="conv3d",
) -> ConvGrads:  # fmt: skip
    """The VJP of `conv_nd` for an output gradient `[N, C_out, out...]`."""
    g = _Geometry.of_conv(op, x, weight, None, stride, padding, dilation, groups)
    check_float(op, grad, x, weight)
    check_grad_shape(op, grad, (x.shape[0], weight.shape[0], *g.conv_out(x.shape[2:])))
    gx = gw = None
    if need_x:
        padded = tuple(n + 2 * p for n, p in zip(x.shape[2:], g.padding, strict=True))
        gx = _crop(_scatter(grad, weight, g, padded), g.padding, x.shape[2:])
    if need_weight:
        gw = _weight_grad(_padded(x, g.padding), grad, g, weight.shape)
    gb = grad.sum(axis=(0, *range(2, grad.ndim))) if need_bias else None
    return ConvGrads(x=gx, weight=gw, bias=gb)


def conv_transpose_nd(
    x, weight, bias=None, *, stride, padding, padding_out, dilation, groups, op, nd
) -> np.ndarray:
    """burn `module::conv_transpose{1,3}d(x, weight, bias, ConvTransposeOptions::new(stride,
    padding, padding_out, dilation, groups))`: x `[N, C_in, in...]`, weight `[C_in,
    C_out / groups, kernel...]` -> `[N, C_out, out...]` with
    `out = (n - 1)*stride + dilation*(k - 1) + 1 + padding_out - 2*padding`."""
    g, pad_out = _Geometry.of_transpose(op, nd, x, weight, bias, stride, padding, padding_out,
                                        dilation, groups)  # fmt: skip
    full = g.transpose_full(x.shape[2:], pad_out)
    plane = _scatter(x, weight, g, full)
    return _with_bias(_crop(plane, g.padding, g.transpose_out(x.shape[2:], pad_out)), bias)


def conv_transpose_nd_backward(
    grad, x, weight, *, stride, padding, padding_out, dilation, groups,
    need_x=True, need_weight=True, need_bias=True, op, nd,
) -> ConvGrads:  # fmt: skip
    """The VJP of `conv_transpose_nd`: x = a conv of the output gradient (placed back into
    the uncropped plane) with the same weight, its first `in...` positions; weight = the input
    against the gradient's windows; bias = the sum over batch and positions."""
    g, pad_out = _Geometry.of_transpose(op, nd, x, weight, None, stride, padding, padding_out,
                                        dilation, groups)  # fmt: skip
    check_float(op, grad, x, weight)
    c_out = weight.shape[1] * g.groups
    out = g.transpose_out(x.shape[2:], pad_out)
    check_grad_shape(op, grad, (x.shape[0], c_out, *out))
    plane = np.zeros((*grad.shape[:2], *g.transpose_full(x.shape[2:], pad_out)), grad.dtype)
    inner = tuple(slice(p, p + n) for p, n in zip(g.padding, out, strict=True))
    plane[(slice(None), slice(None), *inner)] = grad
    gx = gw = None
    if need_x:
        gx = _correlate(plane, weight, g, x.shape[2:])
    if need_weight:
        # the transposed conv is the adjoint of a conv from the output plane to x: its
        # weight gradient is that conv's, x in the role of the output gradient
        gw = _weight_grad(plane, x, g, weight.shape)
    gb = grad.sum(axis=(0, *range(2, grad.ndim))) if need_bias else None
    return ConvGrads(x=gx, weight=gw, bias=gb)


# ---------------------------------------------------------------------------------------------
# the sums
# ---------------------------------------------------------------------------------------------


def _windows(xp: np.ndarray, g, out) -> np.ndarray:
    """`[N, C, out..., kernel...]`: a read-only strided view of the padded input's windows."""
    nd = len(out)
    s = xp.strides
    strides = (*s[:2], *(s[2 + i] * g.stride[i] for i in range(nd)),
               *(s[2 + i] * g.dilation[i] for i in range(nd)))  # fmt: skip
    return as_strided(xp, (*xp.shape[:2], *out, *g.kernel), strides, writeable=False)


def _by_group(a: np.ndarray, groups: int) -> np.ndarray:
    """`[N, C, ...]` -> `[N, groups, C / groups, ...]`."""
    return a.reshape(a.shape[0], groups, a.shape[1] // groups, *a.shape[2:])


def _correlate(xp, weight, g, out) -> np.ndarray:
    """`y[n, o, p...] = sum_{c, k...} w[o, c, k...] * xp[n, c, p*stride + k*dilation]` per
    group, `weight` `[C_out, C_in / groups, k...]` (a transposed conv's weight `[C_in,
    C_out / groups, k...]` is this layout for the conv it is the adjoint of)."""
    nd = len(out)
    win = _by_group(_windows(xp, g, out), g.groups)  # [N, groups, C/g, out..., k...]
    wg = weight.reshape(g.groups, weight.shape[0] // g.groups, *weight.shape[1:])
    axes = ((1, *range(2 + nd, 2 + 2 * nd)), (1, *range(2, 2 + nd)))
    with np.errstate(invalid="ignore"):
        parts = [np.tensordot(win[:, j], wg[j], axes=axes) for j in range(g.groups)]
    y = np.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]  # [N, out..., C_out]
    return np.moveaxis(y, -1, 1)


def _scatter(grad, weight, g, plane_shape) -> np.ndarray:
    """The adjoint of `_correlate` in its input: `grad` `[N, C_out, out...]` (a conv's output
    gradient, or a transposed conv's input with `weight` `[C_in, C_out/g, k...]` read as a
    conv weight of `C_in` outputs) scattered onto a zero plane `[N, C_in, plane...]`."""
    nd = grad.ndim - 2
    out = grad.shape[2:]
    c_out = weight.shape[0]
    gg = _by_group(grad, g.groups)  # [N, groups, C_out/g, out...]
    wg = weight.reshape(g.groups, c_out // g.groups, *weight.shape[1:])
    # cols[n, j, c, out..., k...] = sum_o grad[n, j, o, out...] * w[j, o, c, k...]
    cols = np.stack([np.tensordot(gg[:, j], wg[j], axes=((1,), (0,))) for j in range(g.groups)],
                    axis=1)  # [N, groups, out..., C/g, k...]  # fmt: skip
    cols = np.moveaxis(cols, 2 + nd, 2)  # [N, groups, C/g, out..., k...]
    c_in = weight.shape[1] * g.groups
    plane = np.zeros((grad.shape[0], c_in, *plane_shape), grad.dtype)
    flat = cols.reshape(grad.shape[0], c_in, *cols.shape[3:])
    with np.errstate(invalid="ignore"):
        for tap in np.ndindex(*g.kernel):
            starts = [t * d for t, d in zip(tap, g.dilation, strict=True)]
            region = tuple(
                slice(starts[i], starts[i] + g.stride[i] * (out[i] - 1) + 1, g.stride[i])
                for i in range(nd)
            )
            plane[(slice(None), slice(None), *region)] += flat[(Ellipsis, *tap)]
    return plane


def _weight_grad(xp, grad, g, shape) -> np.ndarray:
    """`dw[o, c, k...] = sum_{n, p...} grad[n, o, p...] * xp[n, c, p*stride + k*dilation]`
    per group (`grad` the conv's output gradient, `xp` its padded input)."""
    nd = grad.ndim - 2
    win = _by_group(_windows(xp, g, grad.shape[2:]), g.groups)
    gg = _by_group(grad, g.groups)
    axes = ((0, *range(2, 2 + nd)), (0, *range(2, 2 + nd)))
    with np.errstate(invalid="ignore"):
        parts = [np.tensordot(gg[:, j], win[:, j], axes=axes) for j in range(g.groups)]
    return np.concatenate(parts, axis=0).reshape(shape)


def _padded(x: np.ndarray, padding) -> np.ndarray:
    if not any(padding):
        return x
    return np.pad(x, ((0, 0), (0, 0), *((p, p) for p in padding)))


def _crop(plane, padding, size) -> np.ndarray:
    region = tuple(slice(p, p + n) for p, n in zip(padding, size, strict=True))
    return np.ascontiguousarray(plane[(slice(None), slice(None), *region)])


def _with_bias(out: np.ndarray, bias) -> np.ndarray:
    out = np.ascontiguousarray(out)
    if bias is not None:
        out = out + bias.reshape(1, -1, *(1,) * (out.ndim - 2))
    return out


# ---------------------------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------------------------


class _Geometry:
    """Validated arguments of one convolution: per-dim tuples and the groups count."""

    def __init__(self, op, nd, kernel, stride, padding, dilation, groups):
        self.stride = ints(op, "stride", stride, nd, minimum=1)
        self.padding = ints(op, "padding", padding, nd, minimum=0)
        self.dilation = ints(op, "dilation", dilation, nd, minimum=1)
        self.kernel = tuple(int(k) for k in kernel)
        self.groups = groups

    def conv_out(self, spatial) -> tuple[int, ...]:
        return tuple(
            conv_output_size(n, k, s, p, d)
            for n, k, s, p, d in zip(spatial, self.kernel, self.stride, self.padding,
                                     self.dilation, strict=True)
        )  # fmt: skip

    def transpose_full(self, spatial, pad_out) -> tuple[int, ...]:
        """The transposed conv's plane before the `padding` crop."""
        return tuple(
            (n - 1) * s + d * (k - 1) + 1 + q
            for n, k, s, d, q in zip(spatial, self.kernel, self.stride, self.dilation, pad_out,
                                     strict=True)
        )  # fmt: skip

    def transpose_out(self, spatial, pad_out) -> tuple[int, ...]:
        full = self.transpose_full(spatial, pad_out)
        return tuple(f - 2 * p for f, p in zip(full, self.padding, strict=True))

    @classmethod
    def of_conv(cls, op, x, weight, bias, stride, padding, dilation, groups) -> _Geometry:
        nd = 3
        check_float(op, x, weight, *(() if bias is None else (bias,)))
        check_rank(op, "an input", x, _LAYOUT[nd])
        check_rank(op, "a weight", weight, f"[out, in / groups, {_KERNEL[nd]}]")
        groups = ints(op, "groups", groups, 1, minimum=1)[0]
        check_groups(op, x.shape[1], weight.shape[0], groups)
        check_channels(op, x.shape[1], weight.shape[1] * groups, x, weight)
        g = cls(op, nd, weight.shape[2:], stride, padding, dilation, groups)
        _check_bias(op, bias, weight.shape[0])
        if min(g.conv_out(x.shape[2:])) < 1:
            raise too_small(op, x.shape, g.kernel, g.dilation, g.padding)
        return g

    @classmethod
    def of_transpose(cls, op, nd, x, weight, bias, stride, padding, padding_out, dilation, groups):
        check_float(op, x, weight, *(() if bias is None else (bias,)))
        check_rank(op, "an input", x, _LAYOUT[nd])
        check_rank(op, "a weight", weight, f"[in, out / groups, {_KERNEL[nd]}]")
        groups = ints(op, "groups", groups, 1, minimum=1)[0]
        check_channels(op, x.shape[1], weight.shape[0], x, weight)
        check_groups(op, x.shape[1], weight.shape[1] * groups, groups)
        g = cls(op, nd, weight.shape[2:], stride, padding, dilation, groups)
        pad_out = ints(op, "padding_out", padding_out, nd, minimum=0)
        _check_bias(op, bias, weight.shape[1] * groups)
        if min(g.transpose_out(x.shape[2:], pad_out)) < 1:
            raise ShapeError(
                f"{op}: padding {fmt(g.padding)} leaves no output: the output before cropping "
                f"is {fmt(g.transpose_full(x.shape[2:], pad_out))} (input shape "
                f"{fmt(x.shape)}, weight shape {fmt(weight.shape)})"
            )
        return g, pad_out


def _check_bias(op, bias, channels_out: int) -> None:
    if bias is not None and bias.shape != (channels_out,):
        raise ShapeError(
            f"{op}: expected a bias of shape {fmt((channels_out,))}, got {fmt(bias.shape)}"
        )
