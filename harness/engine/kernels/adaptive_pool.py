"""Adaptive average pools, 1-D, 2-D and 3-D, with their VJPs.

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn-flex/src/ops/pool.rs
`adaptive_avg_pool3d_impl` and `adaptive_avg_pool3d_backward_impl` (2-D and 1-D pools run as
3-D ones), burn-backend's ops/modules/pool.rs (`adaptive_avg_pool1d_from_2d`) and
burn-autodiff/src/ops/module.rs (the backward gets the saved input and the output gradient).

Bins: bin o of `out` over `size` elements covers `[floor(o * size / out), ceil((o + 1) * size /
out))`, flex's formula; PyTorch's `start_index` / `end_index` give the same bins (checked for
every size up to 9 in the tests), overlapping ones included when `size % out != 0`, and
repeated ones when `out > size`. The sums run along W, then along H (flex: one running sum
over the bin), so values agree with flex to rounding, not bit for bit; only a bin's own
elements enter its sum (an inf stays in its bins).
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ._common import LAYOUT, check_float, check_rank, fmt, input_shape, ints
from .pool import PoolGrads


def adaptive_avg_pool1d(x, output_size) -> np.ndarray:
    """burn `module::adaptive_avg_pool1d(x, output_size)`: x `[N, C, L]` -> `[N, C, out]`;
    bin o covers `[floor(o * L / out), ceil((o + 1) * L / out))` (flex
    `adaptive_avg_pool3d_impl`; PyTorch's `start_index` / `end_index` give the same bins)."""
    out = _adaptive_args("adaptive_avg_pool1d", x, 1, output_size)
    return _adaptive_forward(x[:, :, None, :], out)[:, :, 0, :]


def adaptive_avg_pool2d(x, output_size) -> np.ndarray:
    """burn `module::adaptive_avg_pool2d(x, output_size)`: x `[N, C, H, W]` ->
    `[N, C, out_h, out_w]`, each bin's mean (bins as `adaptive_avg_pool1d`, per dim)."""
    out = _adaptive_args("adaptive_avg_pool2d", x, 2, output_size)
    return _adaptive_forward(x, out)


def adaptive_avg_pool1d_backward(grad, x_shape) -> PoolGrads:
    """The VJP of `adaptive_avg_pool1d` (flex `adaptive_avg_pool3d_backward_impl`)."""
    x_shape = input_shape("adaptive_avg_pool1d", x_shape, 1)
    check_float("adaptive_avg_pool1d", grad)
    if grad.ndim != 3 or grad.shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"adaptive_avg_pool1d: an output gradient {fmt(grad.shape)} does not match the "
            f"input {fmt(x_shape)}"
        )
    gx = _adaptive_backward(grad[:, :, None, :], (*x_shape[:2], 1, x_shape[2]))
    return PoolGrads(x=gx[:, :, 0, :])


def adaptive_avg_pool2d_backward(grad, x_shape) -> PoolGrads:
    """The VJP of `adaptive_avg_pool2d`: each output gradient divided by its bin's size and
    added to every element of the bin (flex `adaptive_avg_pool3d_backward_impl`)."""
    x_shape = input_shape("adaptive_avg_pool2d", x_shape, 2)
    check_float("adaptive_avg_pool2d", grad)
    if grad.ndim != 4 or grad.shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"adaptive_avg_pool2d: an output gradient {fmt(grad.shape)} does not match the "
            f"input {fmt(x_shape)}"
        )
    return PoolGrads(x=_adaptive_backward(grad, x_shape))


def adaptive_avg_pool3d(x, output_size) -> np.ndarray:
    """burn `module::adaptive_avg_pool3d(x, output_size)`: x `[N, C, D, H, W]` ->
    `[N, C, out_d, out_h, out_w]`, each bin's mean (flex `adaptive_avg_pool3d_impl`; bins as
    `adaptive_avg_pool1d`, per dim; the sums run along W, then H, then D)."""
    op = "adaptive_avg_pool3d"
    check_float(op, x)
    check_rank(op, "an input", x, "[batch, channels, depth, height, width]")
    out = ints(op, "output_size", output_size, 3, minimum=1)
    if min(x.shape[2:]) < 1:
        raise ShapeError(f"{op}: expected a non-empty input, got shape {fmt(x.shape)}")
    sums = x
    divisor = np.ones((1, 1, 1), dtype=np.int64)
    for axis, size_out in ((4, out[2]), (3, out[1]), (2, out[0])):
        start, end = adaptive_bins(x.shape[axis], size_out)
        sums = _segment_sums(sums, axis, start, end)
        divisor = divisor * (end - start).reshape([-1 if a == axis else 1 for a in (2, 3, 4)])
    return sums / divisor.astype(x.dtype)


def adaptive_avg_pool3d_backward(grad, x_shape) -> PoolGrads:
    """The VJP of `adaptive_avg_pool3d` (flex `adaptive_avg_pool3d_backward_impl`): each
    output gradient divided by its bin's size and added to every element of the bin."""
    op = "adaptive_avg_pool3d"
    x_shape = tuple(int(n) for n in x_shape)
    check_float(op, grad)
    if grad.ndim != 5 or len(x_shape) != 5 or grad.shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"{op}: an output gradient {fmt(grad.shape)} does not match the input {fmt(x_shape)}"
        )
    bins = {axis: adaptive_bins(x_shape[axis], grad.shape[axis]) for axis in (2, 3, 4)}
    divisor = np.ones((1, 1, 1), dtype=np.int64)
    for axis, (start, end) in bins.items():
        divisor = divisor * (end - start).reshape([-1 if a == axis else 1 for a in (2, 3, 4)])
    share = grad / divisor.astype(grad.dtype)
    for axis in (4, 3, 2):
        share = _spread(share, axis, *bins[axis], x_shape[axis])
    return PoolGrads(x=np.ascontiguousarray(share))


def _spread(share: np.ndarray, axis: int, start, end, size_in: int) -> np.ndarray:
    """Along `axis`, each input element's sum of the shares of the bins that contain it
    (input element e is in the contiguous run of bins with start <= e < end)."""
    e = np.arange(size_in)
    first = np.searchsorted(end, e, side="right")
    last = np.searchsorted(start, e, side="right")
    return _segment_sums(share, axis, first, last)


def adaptive_bins(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of the `size_out` bins over `size_in` elements (flex's formula)."""
    o = np.arange(size_out)
    return (o * size_in) // size_out, -((-(o + 1) * size_in) // size_out)


def _adaptive_forward(x: np.ndarray, out) -> np.ndarray:
    sums = x
    counts = []
    for axis, size_out in ((3, out[1]), (2, out[0])):
        start, end = adaptive_bins(x.shape[axis], size_out)
        sums = _segment_sums(sums, axis, start, end)
        counts.append(end - start)
    divisor = counts[1][:, None] * counts[0][None, :]
    return sums / divisor.astype(x.dtype)


def _adaptive_backward(grad: np.ndarray, x_shape) -> np.ndarray:
    bins = [adaptive_bins(x_shape[axis], grad.shape[axis]) for axis in (2, 3)]
    counts = [end - start for start, end in bins]
    share = grad / (counts[0][:, None] * counts[1][None, :]).astype(grad.dtype)
    for axis, (start, end) in ((3, bins[1]), (2, bins[0])):
        share = _spread(share, axis, start, end, x_shape[axis])
    return np.ascontiguousarray(share)


def _segment_sums(a: np.ndarray, axis: int, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Along `axis`, out[k] = the sum of a[start[k]:end[k]] (segments may overlap, none is
    empty): a reshaped sum when the segments tile the axis, else one gather per offset within
    a segment (sequential, only the segment's own elements: an inf stays in its segment)."""
    length = end - start
    k = int(length[0])
    if (
        (length == k).all()
        and (start == np.arange(len(start)) * k).all()
        and end[-1] == a.shape[axis]
    ):
        shape = (*a.shape[:axis], len(start), k, *a.shape[axis + 1 :])
        return a.reshape(shape).sum(axis=axis + 1)
    out = np.take(a, start, axis=axis)
    along = [1] * a.ndim
    along[axis] = len(start)
    for u in range(1, int(length.max())):
        term = np.take(a, np.minimum(start + u, a.shape[axis] - 1), axis=axis)
        out += np.where((u < length).reshape(along), term, 0)
    return out


def _adaptive_args(op, x, nd, output_size) -> tuple[int, int]:
    check_float(op, x)
    check_rank(op, "an input", x, LAYOUT[nd])
    out = ints(op, "output_size", output_size, nd, minimum=1)
    if min(x.shape[2:], default=1) < 1:
        raise ShapeError(f"{op}: expected a non-empty input, got shape {fmt(x.shape)}")
    return out if nd == 2 else (1, *out)
