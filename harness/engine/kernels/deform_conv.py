"""Deformable 2-D convolution (`deform_conv2d`, DCNv2 with an optional mask) and its VJP.

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn-flex/src/ops/
deform_conv.rs (`deform_im2col_f32`, `bilinear_interpolate`, `deform_conv2d_backward_f32`,
`bilinear_interpolate_backward_f32`; the f64 versions are the same code), called by
burn-autodiff/src/ops/module.rs `deform_conv2d` (one node with x / offset / weight / mask /
bias parents, the gradients from `B::deform_conv2d_backward`).

Layouts (burn's, torchvision's `deform_conv2d`): x `[N, C_in, H, W]`, offset `[N, offset_groups
* kh * kw * 2, H', W']` (per group and kernel tap a (dh, dw) pair), weight `[C_out, C_in /
weight_groups, kh, kw]`, mask `[N, offset_groups * kh * kw, H', W']`, bias `[C_out]`. Input
channel c reads the offsets of group `c // (C_in / offset_groups)`.

Sampling, as flex: tap (i, j) of output (oh, ow) reads x at `(oh*stride + i*dilation - padding
+ dh, ow*stride + j*dilation - padding + dw)` by bilinear interpolation; a point with
`h <= -1`, `h >= H`, `w <= -1` or `w >= W` reads 0, and a corner outside the input reads 0.
The backward is flex's: the four corners get `grad * mask * w` times their weight, the offset
the derivative of the interpolation (`hw * (v3 - v1) + lw * (v4 - v2)` for dh), which at an
integer coordinate is the one-sided derivative from above (`floor`), the mask `grad * w *
sample`. PyTorch (torchvision, not installed here) defines the same op; burn's own test
vectors and float64 finite differences check this one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


@dataclass(frozen=True, slots=True)
class DeformGrads:
    x: np.ndarray
    offset: np.ndarray
    weight: np.ndarray
    mask: np.ndarray | None
    bias: np.ndarray | None


@dataclass(frozen=True, slots=True)
class _Samples:
    """The bilinear reads of every (channel, tap, output position): `value` `[N, C, K, P]`,
    and per corner its flat index into an input plane, its weight and whether it is inside."""

    value: np.ndarray
    index: tuple[np.ndarray, ...]  # 4 x [N, G, 1, K, P] (int64)
    weight: tuple[np.ndarray, ...]  # 4 x [N, G, 1, K, P]
    inside: tuple[np.ndarray, ...]  # 4 x [N, G, 1, K, P] (bool)
    fraction: tuple[np.ndarray, np.ndarray]  # (lh, lw) [N, G, 1, K, P]
    corner: tuple[np.ndarray, ...]  # the 4 corner values [N, G, C/G, K, P]


def deform_conv2d(x, offset, weight, mask=None, bias=None, *, stride, padding, dilation,
                  weight_groups, offset_groups) -> np.ndarray:  # fmt: skip
    """burn `module::deform_conv2d(x, offset, weight, mask, bias, DeformConvOptions::new(
    stride, padding, dilation, weight_groups, offset_groups))` -> `[N, C_out, H', W']`."""
    g = _Geometry.check(x, offset, weight, mask, bias, stride, padding, dilation,
                        weight_groups, offset_groups)  # fmt: skip
    cols = _columns(_sample(x, offset, g), mask, g)
    out = _weights_times(cols, weight, g)
    if bias is not None:
        out = out + bias[None, :, None]
    return np.ascontiguousarray(out.reshape(x.shape[0], weight.shape[0], *g.out))


def deform_conv2d_backward(grad, x, offset, weight, mask=None, bias=None, *, stride, padding,
                           dilation, weight_groups, offset_groups) -> DeformGrads:  # fmt: skip
    """flex's `deform_conv2d_backward`: every input's gradient (mask / bias: None without)."""
    g = _Geometry.check(x, offset, weight, mask, bias, stride, padding, dilation,
                        weight_groups, offset_groups)  # fmt: skip
    n, c_in, h, w = x.shape
    check_float("deform_conv2d", grad, x)
    check_grad_shape("deform_conv2d", grad, (n, weight.shape[0], *g.out))
    s = _sample(x, offset, g)
    m = _mask(mask, g)  # [N, G, 1, K, P] or None
    cols = _columns(s, mask, g)
    gout = grad.reshape(n, g.weight_groups, weight.shape[0] // g.weight_groups, -1)
    cg = cols.reshape(n, g.weight_groups, c_in // g.weight_groups, g.taps, -1)
    wg = weight.reshape(g.weight_groups, weight.shape[0] // g.weight_groups, -1, g.taps)
    # d(sample) = sum_o grad * w: [N, C, K, P]
    dsample = np.einsum("ngop,gock->ngckp", gout, wg).reshape(n, g.offset_groups, -1, g.taps,
                                                                g.positions)  # fmt: skip
    gw = np.einsum("ngop,ngckp->gock", gout, cg).reshape(weight.shape)
    gmask = None
    if mask is not None:
        gmask = (dsample * s.value.reshape(dsample.shape)).sum(axis=2).reshape(mask.shape)
    dval = dsample if m is None else dsample * m  # grad * mask * w
    gx = np.zeros((n, g.offset_groups, c_in // g.offset_groups, h * w), dtype=x.dtype)
    for index, weight_c, inside in zip(s.index, s.weight, s.inside, strict=True):
        contribution = np.where(inside, weight_c, 0) * dval
        idx = np.broadcast_to(index, contribution.shape)
        _scatter_add(gx, idx, contribution)
    v1, v2, v3, v4 = s.corner
    lh, lw = s.fraction
    d_h = (1 - lw) * (v3 - v1) + lw * (v4 - v2)
    d_w = (1 - lh) * (v2 - v1) + lh * (v4 - v3)
    goff = np.stack([(dval * d_h).sum(axis=2), (dval * d_w).sum(axis=2)], axis=3)
    gb = grad.sum(axis=(0, 2, 3)) if bias is not None else None
    return DeformGrads(
        x=gx.reshape(x.shape),
        offset=np.ascontiguousarray(goff.reshape(offset.shape)),
        weight=gw,
        mask=gmask,
        bias=gb,
    )


def _scatter_add(gx, index, values) -> None:
    """`gx[n, g, c, index[n, g, c, ...]] += values[n, g, c, ...]`, repeated indices summed."""
    n, groups, cg, plane = gx.shape
    lead = np.arange(n * groups * cg).reshape(n, groups, cg, 1, 1) * plane
    np.add.at(gx.reshape(-1), (lead + index).reshape(-1), values.reshape(-1))


def _sample(x, offset, g) -> _Samples:
    n, c_in, h, w = x.shape
    kh, kw = g.kernel
    oh, ow = g.out
    # base coordinates [K, P] (tap-major, as flex's kernel_idx = i * kw + j)
    i, j = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    r, c = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    base_h = (r.reshape(1, -1) * g.stride[0] + i.reshape(-1, 1) * g.dilation[0]) - g.padding[0]
    base_w = (c.reshape(1, -1) * g.stride[1] + j.reshape(-1, 1) * g.dilation[1]) - g.padding[1]
    off = offset.reshape(n, g.offset_groups, g.taps, 2, g.positions)
    ph = (base_h.astype(x.dtype) + off[:, :, :, 0])[:, :, None]  # [N, G, 1, K, P]
    pw = (base_w.astype(x.dtype) + off[:, :, :, 1])[:, :, None]
    in_range = (ph > -1) & (ph < h) & (pw > -1) & (pw < w)
    h0, w0 = np.floor(ph), np.floor(pw)
    lh, lw = ph - h0, pw - w0
    h0i, w0i = h0.astype(np.int64), w0.astype(np.int64)
    planes = x.reshape(n, g.offset_groups, c_in // g.offset_groups, h * w)
    corners, indices, weights, insides = [], [], [], []
    for dh, dw, weight in ((0, 0, (1 - lh) * (1 - lw)), (0, 1, (1 - lh) * lw),
                           (1, 0, lh * (1 - lw)), (1, 1, lh * lw)):  # fmt: skip
        hh, ww = h0i + dh, w0i + dw
        inside = in_range & (hh >= 0) & (hh < h) & (ww >= 0) & (ww < w)
        index = np.where(inside, hh * w + ww, 0)
        flat = index.reshape(n, g.offset_groups, 1, -1)
        flat = np.broadcast_to(flat, (*planes.shape[:3], flat.shape[-1]))
        read = np.take_along_axis(planes, flat, axis=3)
        read = read.reshape(n, g.offset_groups, -1, g.taps, g.positions)
        corners.append(np.where(inside, read, 0))
        indices.append(index)
        weights.append(weight)
        insides.append(inside)
    with np.errstate(invalid="ignore"):
        value = sum(wt * v for wt, v in zip(weights, corners, strict=True))
    return _Samples(value, tuple(indices), tuple(weights), tuple(insides), (lh, lw),
                    tuple(corners))  # fmt: skip


def _mask(mask, g):
    if mask is None:
        return None
    return mask.reshape(mask.shape[0], g.offset_groups, 1, g.taps, g.positions)


def _columns(s: _Samples, mask, g) -> np.ndarray:
    """The (masked) samples `[N, C_in, K, P]`."""
    m = _mask(mask, g)
    value = s.value if m is None else s.value * m
    return value.reshape(value.shape[0], -1, g.taps, g.positions)


def _weights_times(cols, weight, g) -> np.ndarray:
    n, c_in = cols.shape[:2]
    cg = cols.reshape(n, g.weight_groups, c_in // g.weight_groups, g.taps, g.positions)
    wg = weight.reshape(g.weight_groups, weight.shape[0] // g.weight_groups, -1, g.taps)
    with np.errstate(invalid="ignore"):
        out = np.einsum("ngckp,gock->ngop", cg, wg)
    return out.reshape(n, weight.shape[0], g.positions)


@dataclass(frozen=True, slots=True)
class _Geometry:
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    kernel: tuple[int, int]
    weight_groups: int
    offset_groups: int
    out: tuple[int, int]

    @property
    def taps(self) -> int:
        return self.kernel[0] * self.kernel[1]

    @property
    def positions(self) -> int:
        return self.out[0] * self.out[1]

    @classmethod
    def check(cls, x, offset, weight, mask, bias, stride, padding, dilation, weight_groups,
              offset_groups) -> _Geometry:  # fmt: skip
        op = "deform_conv2d"
        check_float(op, x, offset, weight, *(t for t in (mask, bias) if t is not None))
        check_rank(op, "an input", x, "[batch, channels, height, width]")
        check_rank(op, "a weight", weight, "[out, in / weight_groups, kernel_h, kernel_w]")
        wgroups = ints(op, "weight_groups", weight_groups, 1, minimum=1)[0]
        ogroups = ints(op, "offset_groups", offset_groups, 1, minimum=1)[0]
        check_groups(op, x.shape[1], weight.shape[0], wgroups)
        check_channels(op, x.shape[1], weight.shape[1] * wgroups, x, weight)
        if x.shape[1] % ogroups:
            raise ShapeError(
                f"{op}: Channels must be divisible by the number of groups. Got "
                f"channels_in={x.shape[1]}, offset_groups={ogroups}"
            )
        stride = ints(op, "stride", stride, 2, minimum=1)
        padding = ints(op, "padding", padding, 2, minimum=0)
        dilation = ints(op, "dilation", dilation, 2, minimum=1)
        kernel = tuple(weight.shape[2:])
        out = tuple(
            conv_output_size(x.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a])
            for a in range(2)
        )
        if min(out) < 1:
            raise too_small(op, x.shape, kernel, dilation, padding)
        taps = kernel[0] * kernel[1]
        expected = (x.shape[0], ogroups * taps * 2, *out)
        for what, array, shape in (
            ("an offset", offset, expected),
            ("a mask", mask, (x.shape[0], ogroups * taps, *out)),
            ("a bias", bias, (weight.shape[0],)),
        ):
            if array is not None and array.shape != shape:
                raise ShapeError(
                    f"{op}: expected {what} of shape {fmt(shape)}, got {fmt(array.shape)}"
                )
        return cls(stride, padding, dilation, kernel, wgroups, ogroups, out)
