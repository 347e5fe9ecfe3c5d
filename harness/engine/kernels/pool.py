"""Pooling: max (with indices) and average, 1-D and 2-D, with their VJPs (adaptive average
pools: adaptive_pool.py).

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn-flex/src/ops/pool.rs
(every pool runs as a 3-D pool; `max_pool3d_with_indices_impl`, `avg_pool3d_impl` and the
`*_backward_impl` functions), burn-backend's ops/modules/pool.rs (1-D pools run as 2-D ones)
and burn-autodiff/src/ops/module.rs (the backward of max pool scatters the output gradient to
the forward's indices; avg pools call the backend's backward with the saved input).

Max and average pools loop over the kernel taps (at most `kernel_h * kernel_w` array
operations, none over output positions) in flex's order, so their values are flex's to the
bit: the same comparisons for max, the same sums in the same order for average (the backward
adds the taps in reverse so that each input element receives its terms in flex's
output-position order).

Differences from PyTorch (burn's behaviour kept), each noted where it applies:
- ceil mode keeps a last window that starts in the right padding (see `pool_output_size`);
- no bound on padding (PyTorch: at most half the kernel); a window with no input element
  gives max -inf with index -1 (no gradient) and average 0;
- max pool and NaN: flex takes a window's first valid element, then any strictly greater
  one, so a NaN wins only as the first element; PyTorch's CPU kernel takes every NaN;
- average pool backward with `count_include_pad` divides by the whole kernel size, where the
  forward divided by the part of the window inside the padded input: they differ for ceil
  mode's clipped last windows, where burn's gradient is not the forward's derivative (flex
  `avg_pool3d_backward_impl`: `kernel_volume`; `avg_pool3d_impl`: `pad_count`). PyTorch's
  backward, and burn-ndarray's `avg_pool2d_backward`, use the forward's divisor; the engine
  follows flex, the backend it reproduces (tests/engine/test_pool_gradcheck.py pins both).
Ties in max pool go to the first maximum in row-major window order in both burn and PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from . import _columns as columns
from ._common import (
    LAYOUT,
    check_float,
    check_grad_shape,
    check_rank,
    fmt,
    input_shape,
    ints_2d,
    pool_output_size,
    tap,
    too_small,
)


@dataclass(frozen=True, slots=True)
class MaxPoolOutput:
    """`output` and, per output element, the flat index `h * W + w` of the input element it
    took within its (batch, channel) plane (`int64`; -1 for a window without input)."""

    output: np.ndarray
    indices: np.ndarray


@dataclass(frozen=True, slots=True)
class PoolGrads:
    """The gradient of a pool's input."""

    x: np.ndarray


@dataclass(frozen=True, slots=True)
class _Window:
    """Validated 2-D pooling arguments (1-D ones with a height of 1) and the output size."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    out: tuple[int, int]


# ---------------------------------------------------------------------------------------------
# max pool
# ---------------------------------------------------------------------------------------------


def max_pool1d(
    x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
) -> MaxPoolOutput:
    """burn `module::max_pool1d_with_indices(x, kernel_size, stride, padding, dilation,
    ceil_mode)`: x `[N, C, L]` -> `MaxPoolOutput` `[N, C, L_out]` (indices = positions in L).
    `stride` None = `kernel_size` (burn-nn's `MaxPool1dConfig` default)."""
    w = _window("max_pool1d", x, 1, kernel_size, stride, padding, dilation, ceil_mode)
    r = _max_pool2d(x[:, :, None, :], w)
    return MaxPoolOutput(output=r.output[:, :, 0, :], indices=r.indices[:, :, 0, :])


def max_pool2d(
    x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False
) -> MaxPoolOutput:
    """burn `module::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation,
    ceil_mode)`: x `[N, C, H, W]` -> `MaxPoolOutput` `[N, C, H_out, W_out]`,
    `H_out = (H + 2*padding - dilation*(K-1) - 1) // stride + 1` (ceil in ceil mode)."""
    w = _window("max_pool2d", x, 2, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool2d(x, w)


def max_pool1d_backward(grad, indices, x_shape) -> PoolGrads:
    """The VJP of `max_pool1d`: each output gradient added to the input element its index
    names (flex `max_pool3d_backward_impl`); `x_shape` = the input's shape `[N, C, L]`."""
    x_shape = input_shape("max_pool1d", x_shape, 1)
    if grad.ndim != 3 or indices.ndim != 3:
        raise ShapeError(
            f"max_pool1d: expected an output gradient and indices {LAYOUT[1]}, got "
            f"{fmt(grad.shape)} and {fmt(indices.shape)}"
        )
    r = _max_pool_backward(
        "max_pool1d", grad[:, :, None, :], indices[:, :, None, :], (*x_shape[:2], 1, x_shape[2])
    )
    return PoolGrads(x=r[:, :, 0, :])


def max_pool2d_backward(grad, indices, x_shape) -> PoolGrads:
    """The VJP of `max_pool2d`: each output gradient added, in output order, to the input
    element its index names (flex `max_pool3d_backward_impl`; index -1 adds nothing)."""
    x_shape = input_shape("max_pool2d", x_shape, 2)
    return PoolGrads(x=_max_pool_backward("max_pool2d", grad, indices, x_shape))


def _max_pool2d(x: np.ndarray, w: _Window) -> MaxPoolOutput:
    """flex's scan: per window, its first valid element, then each strictly greater one.

    Kernel taps (row-major) are compared for all output positions at once, on a batch-last
    copy `[C, H, W, N]` of the input (long inner loops). Without NaN the scan is a running
    `maximum` plus a branch-free update of the tap taken; windows whose result is -inf then
    take their first valid element (flex keeps it: `max_idx < 0 ||`) or -1 if they have none.
    With a NaN, the masked scan reproduces flex's comparisons one by one."""
    h, width = x.shape[2:]
    plane_hw = (_padded_size(h, w, 0), _padded_size(width, w, 1))
    xp = columns.plane(x, w.padding, plane_hw, fill=-np.inf, slot="plane")
    valid_h, valid_w = _valid(h, w, 0), _valid(width, w, 1)  # [out, kernel] each
    taps = [
        (i * w.kernel[1] + j, xp[(slice(None), *tap(w.out, i, j, w.stride, w.dilation))])
        for i in range(w.kernel[0])
        for j in range(w.kernel[1])
    ]
    if np.isnan(x).any():
        best, arg = _masked_scan(taps, valid_h, valid_w, w)
    else:
        best, arg = _running_max(taps)
        worst = best == -np.inf
        if worst.any():  # all -inf, or no input element: flex's first valid tap (or -1)
            first = _first_valid_tap(valid_h, valid_w, w)[:, :, None]
            arg = np.where(worst, first, arg)
    output = np.empty((x.shape[0], x.shape[1], *w.out), dtype=x.dtype)
    np.positive(best, out=_batch_last_view(output))  # every bit copied, NaN payloads too
    return MaxPoolOutput(output=output, indices=_flat_indices(arg, w, width))


def _batch_last_view(a: np.ndarray) -> np.ndarray:
    """`a` `[N, C, H, W]` seen as `[C, H, W, N]`: results are written through it in the
    batch-last order the scan computed them in (contiguous reads, strided writes), 2-3x
    faster than a copy walked in the result's order (LeNet's first pool at batch 256:
    0.74 -> 0.27 ms for the int64 indices, measured on AMD EPYC Zen 4)."""
    return a.transpose(1, 2, 3, 0)


def _running_max(taps):
    """Maximum over the taps and the first tap that reaches it (ties: the first)."""
    best = taps[0][1].copy()
    arg = np.zeros(best.shape, dtype=np.int32)
    take = np.empty(best.shape, dtype=bool)
    taken = np.empty(best.shape, dtype=np.int32)
    for t, v in taps[1:]:
        np.greater(v, best, out=take)
        np.maximum(best, v, out=best)
        # The taps come in increasing order, so `arg` (>= 0) is below t: max(arg, take * t)
        # is t where taken and arg elsewhere. Arithmetic, not a masked copy (no branch per
        # element): two passes instead of three, and no temporaries (LeNet's first pool at
        # batch 256: 1.25 -> 0.78 ms, measured on AMD EPYC Zen 4).
        np.multiply(take, t, out=taken, dtype=np.int32)
        np.maximum(arg, taken, out=arg)
    return best, arg


def _masked_scan(taps, valid_h, valid_w, w: _Window):
    """flex's loop, vectorised over output positions: `max_idx < 0 || val > max_val` over the
    valid taps in order (a NaN compares false, so it wins only as a window's first element)."""
    best = np.full(taps[0][1].shape, -np.inf, dtype=taps[0][1].dtype)
    arg = np.full(best.shape, -1, dtype=np.int32)
    kw = w.kernel[1]
    for t, v in taps:
        mask = (valid_h[:, t // kw, None] & valid_w[None, :, t % kw])[:, :, None]
        take = np.greater(v, best) | (arg < 0)
        take &= mask
        np.copyto(best, v, where=take)
        np.copyto(arg, t, where=take)
    return best, arg


def _first_valid_tap(valid_h, valid_w, w: _Window) -> np.ndarray:
    """`[OH, OW]`: the first tap reading an input element, -1 for a window without any."""
    first_h = np.where(valid_h.any(1), valid_h.argmax(1), -1)
    first_w = np.where(valid_w.any(1), valid_w.argmax(1), -1)
    tap_index = first_h[:, None] * w.kernel[1] + first_w[None, :]
    return np.where((first_h[:, None] < 0) | (first_w[None, :] < 0), -1, tap_index)


def _flat_indices(arg: np.ndarray, w: _Window, width: int) -> np.ndarray:
    """Tap numbers `[C, OH, OW, N]` -> flat input indices `ih * width + iw` `[N, C, OH, OW]`
    (int64); -1 stays -1 (a window without input element). Separable: the window's origin
    plus the tap's offset."""
    i, j = np.divmod(np.arange(w.kernel[0] * w.kernel[1]), w.kernel[1])
    offset = i * w.dilation[0] * width + j * w.dilation[1]
    row0 = np.arange(w.out[0]) * w.stride[0] - w.padding[0]
    col0 = np.arange(w.out[1]) * w.stride[1] - w.padding[1]
    origin = (row0[:, None] * width + col0[None, :])[:, :, None]  # [OH, OW, 1]
    c, oh, ow, n = arg.shape
    flat = np.empty((n, c, oh, ow), dtype=np.int64)
    view = _batch_last_view(flat)
    np.add(offset[arg], origin, out=view)
    empty = arg < 0
    if empty.any():
        view[empty] = -1
    return flat


def _max_pool_backward(op, grad, indices, x_shape) -> np.ndarray:
    check_float(op, grad)
    n, c, h, w = x_shape
    if grad.shape[:2] != (n, c) or indices.shape != grad.shape:
        raise ShapeError(
            f"{op}: an output gradient {fmt(grad.shape)} and indices {fmt(indices.shape)} do "
            f"not match the input {fmt(x_shape)}"
        )
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers, got {indices.dtype}")
    plane = h * w
    if indices.size and (indices.min() < -1 or indices.max() >= plane):
        raise ShapeError(f"{op}: indices out of range for an input plane of {plane} elements")
    gx = np.zeros(n * c * plane, dtype=grad.dtype)
    if gx.size == 0 or grad.size == 0:
        return gx.reshape(x_shape)
    flat = indices.reshape(n * c, -1) + (np.arange(n * c) * plane)[:, None]
    values = grad.reshape(n * c, -1)
    keep = indices.reshape(n * c, -1) >= 0
    if not keep.all():
        flat, values = flat[keep], values[keep]
    # In output order, as flex's loop; np.add.at sums repeated indices one by one.
    np.add.at(gx, flat.reshape(-1), values.reshape(-1))
    return gx.reshape(x_shape)


# ---------------------------------------------------------------------------------------------
# average pool
# ---------------------------------------------------------------------------------------------


def avg_pool1d(
    x, kernel_size, stride=None, padding=0, count_include_pad=True, ceil_mode=False
) -> np.ndarray:
    """burn `module::avg_pool1d(x, kernel_size, stride, padding, count_include_pad,
    ceil_mode)`: x `[N, C, L]` -> `[N, C, L_out]` (see `avg_pool2d`)."""
    w = _window("avg_pool1d", x, 1, kernel_size, stride, padding, 1, ceil_mode)
    return _avg_pool2d(x[:, :, None, :], w, count_include_pad)[:, :, 0, :]


def avg_pool2d(
    x, kernel_size, stride=None, padding=0, count_include_pad=True, ceil_mode=False
) -> np.ndarray:
    """burn `module::avg_pool2d(x, kernel_size, stride, padding, count_include_pad,
    ceil_mode)`: x `[N, C, H, W]` -> `[N, C, H_out, W_out]`, each window's sum over its input
    elements divided by the number of its positions inside the padded input
    (`count_include_pad`, burn's and PyTorch's default) or of its input elements, at least 1
    (flex `avg_pool3d_impl`: `pad_count.max(1)` / `count.max(1)`)."""
    w = _window("avg_pool2d", x, 2, kernel_size, stride, padding, 1, ceil_mode)
    return _avg_pool2d(x, w, count_include_pad)


def avg_pool1d_backward(
    grad, x_shape, kernel_size, stride=None, padding=0, count_include_pad=True, ceil_mode=False
) -> PoolGrads:
    """The VJP of `avg_pool1d` (burn's rule, see `avg_pool2d_backward`)."""
    x_shape = input_shape("avg_pool1d", x_shape, 1)
    w = _window_for_shape("avg_pool1d", x_shape, 1, kernel_size, stride, padding, ceil_mode)
    shape2 = (*x_shape[:2], 1, x_shape[2])
    check_grad_shape("avg_pool1d", grad, (*x_shape[:2], w.out[1]))
    gx = _avg_pool_backward(grad[:, :, None, :], shape2, w, count_include_pad)
    return PoolGrads(x=gx[:, :, 0, :])


def avg_pool2d_backward(
    grad, x_shape, kernel_size, stride=None, padding=0, count_include_pad=True, ceil_mode=False
) -> PoolGrads:
    """The VJP of `avg_pool2d` as burn computes it (flex `avg_pool3d_backward_impl`): each
    output gradient divided by the kernel size (`count_include_pad`) or by its window's count
    of input elements, then added to those elements.

    Differs from PyTorch (and from the derivative of burn's own forward) for ceil mode's
    clipped last windows with `count_include_pad`: the forward divided by the positions inside
    the padded input, this divides by the whole kernel."""
    x_shape = input_shape("avg_pool2d", x_shape, 2)
    w = _window_for_shape("avg_pool2d", x_shape, 2, kernel_size, stride, padding, ceil_mode)
    check_grad_shape("avg_pool2d", grad, (*x_shape[:2], *w.out))
    return PoolGrads(x=_avg_pool_backward(grad, x_shape, w, count_include_pad))


def _avg_pool2d(x: np.ndarray, w: _Window, count_include_pad: bool) -> np.ndarray:
    xp = _padded_for(x, w)
    total = np.zeros((*x.shape[:2], *w.out), dtype=x.dtype)
    kh, kw = w.kernel
    for i in range(kh):  # flex's order: a running sum from 0 over the taps, row-major
        for j in range(kw):
            total += xp[(slice(None), slice(None), *tap(w.out, i, j, w.stride, w.dilation))]
    if count_include_pad:
        divisor = _inside_padded(x.shape[2], w, 0)[:, None] * _inside_padded(x.shape[3], w, 1)
    else:
        divisor = _valid(x.shape[2], w, 0).sum(1)[:, None] * _valid(x.shape[3], w, 1).sum(1)
    total /= np.maximum(divisor, 1).astype(x.dtype)
    return total


def _avg_pool_backward(grad, x_shape, w: _Window, count_include_pad: bool) -> np.ndarray:
    check_float("avg_pool", grad)
    n, c, h, width = x_shape
    if count_include_pad:
        divisor = np.full(w.out, w.kernel[0] * w.kernel[1])
    else:
        divisor = _valid(h, w, 0).sum(1)[:, None] * _valid(width, w, 1).sum(1)
    share = grad / np.maximum(divisor, 1).astype(grad.dtype)
    hp, wp = _padded_size(h, w, 0), _padded_size(width, w, 1)
    plane = np.zeros((n, c, hp, wp), dtype=grad.dtype)
    kh, kw = w.kernel
    # Reverse tap order: each input element then receives its terms in flex's order (output
    # positions ascending), starting from 0, so the sums are flex's to the bit.
    for i in reversed(range(kh)):
        for j in reversed(range(kw)):
            plane[(slice(None), slice(None), *tap(w.out, i, j, w.stride, w.dilation))] += share
    p0, p1 = w.padding
    return np.ascontiguousarray(plane[:, :, p0 : p0 + h, p1 : p1 + width])


# ---------------------------------------------------------------------------------------------
# window geometry
# ---------------------------------------------------------------------------------------------


def _window(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode) -> _Window:
    check_float(op, x)
    check_rank(op, "an input", x, LAYOUT[nd])
    return _window_for_shape(op, x.shape, nd, kernel_size, stride, padding, ceil_mode, dilation)


def _window_for_shape(op, shape, nd, kernel_size, stride, padding, ceil_mode, dilation=1):
    """Arguments as 2-D tuples (a 1-D pool gets height 1) and the output size (flex's)."""
    kernel = ints_2d(op, "kernel_size", kernel_size, nd, minimum=1, fill=1)
    stride = kernel if stride is None else ints_2d(op, "stride", stride, nd, minimum=1, fill=1)
    pad = ints_2d(op, "padding", padding, nd, minimum=0, fill=0)
    dil = ints_2d(op, "dilation", dilation, nd, minimum=1, fill=1)
    spatial = tuple(shape[2:]) if nd == 2 else (1, shape[-1])
    out = tuple(
        pool_output_size(spatial[a], kernel[a], stride[a], pad[a], dil[a], ceil_mode)
        for a in range(2)
    )
    if min(out) < 1:
        raise too_small(op, shape, kernel[2 - nd :], dil[2 - nd :], pad[2 - nd :])
    return _Window(kernel=kernel, stride=stride, padding=pad, dilation=dil, out=out)


def _positions(size: int, w: _Window, axis: int) -> np.ndarray:
    """`[out, kernel]` input coordinates the taps read (negative or >= size: outside)."""
    o = np.arange(w.out[axis])[:, None] * w.stride[axis] - w.padding[axis]
    return o + np.arange(w.kernel[axis])[None, :] * w.dilation[axis]


def _valid(size: int, w: _Window, axis: int) -> np.ndarray:
    """`[out, kernel]` True where a tap reads an input element (flex `valid_range_*`)."""
    pos = _positions(size, w, axis)
    return (pos >= 0) & (pos < size)


def _inside_padded(size: int, w: _Window, axis: int) -> np.ndarray:
    """Per output, the window positions inside the padded input: flex `padded_len_avgpool`,
    `clamp(size + 2*padding - o*stride, 0, kernel)` (avg pools have no dilation)."""
    o = np.arange(w.out[axis]) * w.stride[axis]
    return np.clip(size + 2 * w.padding[axis] - o, 0, w.kernel[axis])


def _padded_size(size: int, w: _Window, axis: int) -> int:
    """The padded extent the taps reach: the padding on both sides, or further in ceil mode."""
    reach = (w.out[axis] - 1) * w.stride[axis] + (w.kernel[axis] - 1) * w.dilation[axis] + 1
    return max(size + 2 * w.padding[axis], reach)


def _padded_for(x: np.ndarray, w: _Window) -> np.ndarray:
    """x zero-padded far enough for every tap (values outside the input are never used by
    max pool, which masks them, and add 0 in average pools)."""
    h, width = x.shape[2:]
    p0, p1 = w.padding
    # One copy: the padding on both sides plus, after it, ceil mode's extra reach.
    after = (_padded_size(h, w, 0) - h - p0, _padded_size(width, w, 1) - width - p1)
    if not (p0 or p1 or any(after)):
        return x
    return np.pad(x, ((0, 0), (0, 0), (p0, after[0]), (p1, after[1])))
