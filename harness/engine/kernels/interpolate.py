"""2-D interpolation (nearest, bilinear, bicubic, Lanczos3) with its VJP, as burn-flex computes
it (Lanczos3 has no VJP in flex: its backward raises flex's panic text).

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn-flex/src/ops/
interpolate.rs (`coord_ratio`, `map_coord`, `nearest_index_map`, `interpolate_*_impl`,
`interpolate_*_backward_impl`, `cubic_weight`), burn-flex/src/ops/module.rs (the dispatch:
other modes panic) and burn-autodiff/src/ops/module.rs (`Interpolate`: the backward gets the
saved input and the output gradient).

Coordinates, in float64 as flex computes them:
- `align_corners`: `src = o * (in - 1) / max(out - 1, 1)`; otherwise the half-pixel
  `src = (o + 0.5) * in / out - 0.5`.
- nearest: `floor(o * in / out)` (clamped to `in - 1`), whatever `align_corners` says.
- bilinear: `low = floor(max(src, 0))`, `high = min(low + 1, in - 1)`, weight
  `max(src - low, 0)` cast to the dtype; the four products are summed in the tensor's dtype,
  `a(1-wx)(1-wy) + b wx(1-wy) + c(1-wx)wy + d wx wy` from left to right.
- bicubic: Keys' kernel with a = -0.75, taps `floor(src) - 1 .. floor(src) + 2` clamped to
  the edges, the 16 products (y taps outer) summed in float64 and rounded once.
- Lanczos3: `sinc(t) sinc(t / 3)` weights over taps `floor(src) - 2 .. floor(src) + 3`,
  out-of-range taps skipped, the float64 sum divided by the sum of the used weights.
The VJPs scatter each output gradient to the same taps, output pixel by output pixel in
row-major order (bicubic: each tap's float64 product rounded to the dtype, then added).

PyTorch differences (`F.interpolate`):
- PyTorch computes coordinates and weights in float32 for float32 tensors (its `opmath`
  type) and sums bilinear rows then columns, bicubic in float32: the values agree to float32
  rounding, not bit for bit; in float64 they agree to float64 rounding.
- nearest: with `size=`, PyTorch's `floor(o * in / out)` (in float32) is burn's; with
  `scale_factor=` PyTorch uses `1 / scale_factor` as the ratio (unless
  `recompute_scale_factor=True`) where burn first rounds the output size down and uses
  `in / out`, so the picked indices can differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from ._common import check_float, check_rank, fmt
from .pool import PoolGrads

__all__ = ["INTERPOLATE_MODES", "interpolate", "interpolate_backward"]

INTERPOLATE_MODES = ("nearest", "bilinear", "bicubic", "lanczos3")
_FLEX_DTYPE = {"float32": "F32", "float64": "F64"}
_LAYOUT = "[batch, channels, height, width]"
_CUBIC_A = -0.75


@dataclass(frozen=True)
class _Taps:
    """One axis: for each output coordinate, the input indices and float64 weights of its
    taps (`[out, taps]`)."""

    index: np.ndarray
    weight: np.ndarray


def _coords(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """flex `coord_ratio` then `map_coord` for every output coordinate (float64)."""
    o = np.arange(out_size, dtype=np.float64)
    if align_corners:
        return o * ((in_size - 1.0) / max(max(out_size, 1) - 1, 1))
    return (o + 0.5) * (in_size / out_size) - 0.5


def _nearest_taps(in_size: int, out_size: int) -> _Taps:
    ratio = in_size / out_size if out_size else 0.0
    index = np.minimum(np.floor(np.arange(out_size) * ratio).astype(np.int64), in_size - 1)
    return _Taps(index[:, None], np.ones((out_size, 1)))


def _bilinear_taps(in_size: int, out_size: int, align_corners: bool) -> _Taps:
    src = _coords(in_size, out_size, align_corners)
    low = np.floor(np.maximum(src, 0.0)).astype(np.int64)
    high = np.minimum(low + 1, in_size - 1)
    weight = np.maximum(src - low, 0.0)
    return _Taps(np.stack([low, high], 1), np.stack([1.0 - weight, weight], 1))


def _cubic_weight(t: np.ndarray) -> np.ndarray:
    """flex `cubic_weight(t, a)`, Keys' kernel, in float64."""
    a, t = _CUBIC_A, np.abs(t)
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return np.where(t < 1.0, near, np.where(t < 2.0, far, 0.0))


def _bicubic_taps(in_size: int, out_size: int, align_corners: bool) -> _Taps:
    src = _coords(in_size, out_size, align_corners)
    base = np.floor(src).astype(np.int64)
    offsets = np.arange(-1, 3)
    index = np.clip(base[:, None] + offsets, 0, in_size - 1)
    weight = _cubic_weight((src - base)[:, None] - offsets)
    return _Taps(index, weight)


def _lanczos3_weight(t: np.ndarray) -> np.ndarray:
    """flex `lanczos3_weight`: 1 at 0, `sin(pi t) sin(pi t / 3) / (pi t * pi t / 3)` inside
    |t| < 3, 0 outside."""
    pi_t = np.pi * t
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = (np.sin(pi_t) * np.sin(pi_t / 3.0)) / (pi_t * (pi_t / 3.0))
    return np.where(t == 0.0, 1.0, np.where(np.abs(t) >= 3.0, 0.0, inside))


def _lanczos3_taps(in_size: int, out_size: int, align_corners: bool) -> _Taps:
    """Six taps per output coordinate; a tap outside the input gets weight 0 (flex skips it,
    and a 0 weight adds +0.0 to both of its float64 sums), its index clamped to be valid."""
    src = _coords(in_size, out_size, align_corners)
    base = np.floor(src)
    offsets = np.arange(-2, 4)
    index = base[:, None].astype(np.int64) + offsets
    weight = _lanczos3_weight(src[:, None] - (base[:, None] + offsets))
    weight = np.where((index >= 0) & (index < in_size), weight, 0.0)
    return _Taps(np.clip(index, 0, in_size - 1), weight)


def _taps(mode: str, in_size: int, out_size: int, align_corners: bool) -> _Taps:
    if mode == "lanczos3":
        return _lanczos3_taps(in_size, out_size, align_corners)
    if mode == "nearest":
        return _nearest_taps(in_size, out_size)
    if mode == "bilinear":
        return _bilinear_taps(in_size, out_size, align_corners)
    return _bicubic_taps(in_size, out_size, align_corners)


def _check_args(x_shape, output_size, mode: str) -> tuple[int, int]:
    if mode not in INTERPOLATE_MODES:
        raise ValueError(f"interpolate: mode must be one of {INTERPOLATE_MODES}, got {mode!r}")
    size = tuple(output_size)
    if len(size) != 2 or not all(isinstance(n, int | np.integer) and n >= 0 for n in size):
        raise ValueError(f"interpolate: output_size must be 2 ints >= 0, got {output_size!r}")
    if x_shape[2] == 0 or x_shape[3] == 0:
        # flex's assert text (interpolate.rs).
        raise ShapeError("interpolate: input spatial dimensions must be > 0")
    return int(size[0]), int(size[1])


def interpolate(x: np.ndarray, output_size, mode: str, align_corners: bool) -> np.ndarray:
    """burn `module::interpolate(x, output_size, options)` on flex: x `[N, C, H, W]` ->
    `[N, C, out_h, out_w]`."""
    dtype = check_float("interpolate", x)
    check_rank("interpolate", "an input", x, _LAYOUT)
    out_h, out_w = _check_args(x.shape, output_size, mode)
    ty = _taps(mode, x.shape[2], out_h, align_corners)
    tx = _taps(mode, x.shape[3], out_w, align_corners)
    if mode == "nearest":
        return np.ascontiguousarray(x[:, :, ty.index[:, 0]][:, :, :, tx.index[:, 0]])
    if mode == "bilinear":
        return _bilinear(x, ty, tx, dtype)
    if mode == "lanczos3":
        return _lanczos3(x, ty, tx, dtype)
    return _bicubic(x, ty, tx, dtype)


def _dtype_weights(mode: str, taps: _Taps, dtype) -> np.ndarray:
    """The nearest / bilinear weights in the tensor's dtype as flex forms them: bilinear's
    `w` rounded from float64, its partner `1 - w` computed in the dtype."""
    if mode == "nearest":
        return np.ones(taps.weight.shape, dtype)
    w = taps.weight[:, 1].astype(dtype)
    return np.stack([dtype.type(1.0) - w, w], 1)


def _bilinear(x: np.ndarray, ty: _Taps, tx: _Taps, dtype) -> np.ndarray:
    wy, wx = _dtype_weights("bilinear", ty, dtype), _dtype_weights("bilinear", tx, dtype)
    wy1, wx1 = wy[:, 0, None], wx[None, :, 0]
    wy, wx = wy[:, 1, None], wx[None, :, 1]
    rows = [x[:, :, ty.index[:, k]] for k in (0, 1)]
    a, b = rows[0][..., tx.index[:, 0]], rows[0][..., tx.index[:, 1]]
    c, d = rows[1][..., tx.index[:, 0]], rows[1][..., tx.index[:, 1]]
    return a * wx1 * wy1 + b * wx * wy1 + c * wx1 * wy + d * wx * wy


def _bicubic(x: np.ndarray, ty: _Taps, tx: _Taps, dtype) -> np.ndarray:
    x64 = x.astype(np.float64)
    total = np.zeros((*x.shape[:2], ty.index.shape[0], tx.index.shape[0]))
    for i in range(4):
        rows = x64[:, :, ty.index[:, i]]
        for j in range(4):
            total += rows[..., tx.index[:, j]] * tx.weight[:, j] * ty.weight[:, i, None]
    return total.astype(dtype)


def _lanczos3(x: np.ndarray, ty: _Taps, tx: _Taps, dtype) -> np.ndarray:
    """flex `lanczos3_sample`: `sum(value * (wy * wx)) / sum(wy * wx)` in float64 over the used
    taps (y outer), not divided when the weight sum is 0, rounded once. A skipped tap's
    product is taken as +0.0 (its clamped value may be inf or NaN)."""
    x64 = x.astype(np.float64)
    out_shape = (*x.shape[:2], ty.index.shape[0], tx.index.shape[0])
    total, weight_sum = np.zeros(out_shape), np.zeros(out_shape[2:])
    for i in range(ty.index.shape[1]):
        rows = x64[:, :, ty.index[:, i]]
        for j in range(tx.index.shape[1]):
            weight = ty.weight[:, i, None] * tx.weight[None, :, j]
            used = weight != 0.0
            with np.errstate(invalid="ignore"):
                total += np.where(used, rows[..., tx.index[:, j]] * weight, 0.0)
            weight_sum += weight
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(weight_sum != 0.0, total / weight_sum, total)
    return total.astype(dtype)


def interpolate_backward(grad: np.ndarray, x_shape, mode: str, align_corners: bool) -> PoolGrads:
    """The VJP of `interpolate`: flex `interpolate_*_backward_impl`, the input's gradient."""
    dtype = check_float("interpolate", grad)
    if mode == "lanczos3":  # flex's interpolate_backward has no Lanczos3 arm (module.rs)
        raise ValueError(
            f"interpolate_backward: unsupported mode Lanczos3 / dtype {_FLEX_DTYPE[dtype.name]}"
        )
    x_shape = tuple(int(n) for n in x_shape)
    out_h, out_w = _check_args(x_shape, grad.shape[2:], mode)
    if grad.ndim != 4 or grad.shape[:2] != x_shape[:2]:
        raise ShapeError(
            f"interpolate: an output gradient {fmt(grad.shape)} does not match the input "
            f"{fmt(x_shape)}"
        )
    in_h, in_w = x_shape[2:]
    ty = _taps(mode, in_h, out_h, align_corners)
    tx = _taps(mode, in_w, out_w, align_corners)
    # [out_h, out_w, ty, tx] taps, flattened in flex's order: output pixel, then y, then x.
    index = (ty.index[:, None, :, None] * in_w + tx.index[None, :, None, :]).reshape(-1)
    planes = grad.reshape(x_shape[0] * x_shape[1], out_h, out_w)
    if mode == "bicubic":
        weight = tx.weight[None, :, None, :] * ty.weight[:, None, :, None]
        values = (weight[None] * planes.astype(np.float64)[..., None, None]).astype(dtype)
    else:
        # nearest (weight 1) and bilinear: `grad * wx * wy` in the dtype, left to right.
        wy, wx = _dtype_weights(mode, ty, dtype), _dtype_weights(mode, tx, dtype)
        values = planes[..., None, None] * wx[None, None, :, None, :]
        values = values * wy[None, :, None, :, None]
    out = np.zeros((planes.shape[0], in_h * in_w), dtype)
    np.add.at(out, (slice(None), index), values.reshape(planes.shape[0], index.size))
    return PoolGrads(x=out.reshape(x_shape))
