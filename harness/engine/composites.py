"""Tensor methods burn-tensor builds from other ops (`crates/burn-tensor/src/tensor/api/
{base,numeric,float,orderable}.rs`, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747),
written as burn writes them, so that their gradients are the rules of the ops they call.

Each function takes the tensor first and is bound as a method in `harness.engine.tensor`
(`narrow = composites.narrow`); none touches a NumPy array of a tracked value, only methods.
Their op-matrix facts sit beside the primitives' (`harness.engine.ops.layout.COMPOSITE_CHECKS`,
...). Argument checks raise ShapeError with burn's `TensorCheck` text.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import ShapeError
from .ops.arrays import fmt, norm_dim

# ---- shape (api/base.rs) ------------------------------------------------------------------------


def stack(tensors: Sequence, dim: int):
    """burn's `Tensor::stack`: each tensor `unsqueeze_dim(dim)`, then `cat` along `dim`
    (a static method: `Tensor.stack([a, b], 0)`); the shapes must be equal."""
    if not tensors:
        raise ShapeError("stack: Can't stack an empty list of tensors.")
    first = tensors[0]
    d = norm_dim("stack", dim, first.ndim + 1)
    if any(t.shape != first.shape for t in tensors):
        shapes = ", ".join(fmt(t.shape) for t in tensors)
        raise ShapeError(f"stack: Can't stack tensors with different shapes: {shapes}")
    return first.__class__.cat([t.unsqueeze_dim(d) for t in tensors], d)


def narrow(self, dim: int, start: int, length: int):
    """`length` elements from `start` along `dim`: a `slice`, after burn's
    `TensorCheck::narrow` (length > 0, start inside the dim, start + length within it)."""
    d = norm_dim("narrow", dim, self.ndim)
    n = self.shape[d]
    if length <= 0:
        raise ShapeError(f"narrow: Can't narrow at dimension {d}, length must be greater than 0")
    if start >= n:
        raise ShapeError(
            f"narrow: Can't narrow at dimension {d}, start exceeds the size of the tensor "
            f"along this dimension (Size={n})"
        )
    if start + length > n:
        raise ShapeError(
            f"narrow: Can't narrow at dimension {d}, start + length exceeds the size of the "
            f"tensor along this dimension (Size={n})"
        )
    ranges = [None] * self.ndim
    ranges[d] = (start, start + length)
    return self.slice(ranges)


def chunk(self, chunks: int, dim: int) -> list:
    """burn's `chunk`, literally: fewer elements than chunks gives one `narrow` per element;
    a divisible size gives equal chunks; otherwise `chunks - 1` chunks of `size // chunks + 1`
    and a last one of `size % chunk_size`.

    PyTorch difference: torch stops once the elements run out (`torch.chunk` of 6 into 4
    gives 3 chunks of 2). burn's last `narrow` then starts at the end or runs past it, and
    its check panics: here a ShapeError from `narrow` (for 6 into 4, 5 into 4, ...).
    """
    d = norm_dim("chunk", dim, self.ndim)
    size = self.shape[d]
    if size < chunks:
        return [narrow(self, d, i, 1) for i in range(size)]
    if size % chunks == 0:
        step = size // chunks
        return [narrow(self, d, i * step, step) for i in range(chunks)]
    step = size // chunks + 1
    parts = [narrow(self, d, i * step, step) for i in range(chunks - 1)]
    parts.append(narrow(self, d, (chunks - 1) * step, size % step))
    return parts


def split(self, split_size: int, dim: int) -> list:
    """Pieces of `split_size` along `dim`, the last one shorter (burn's `split`); a
    `split_size` of 0 raises unless the dim is empty (which gives no piece)."""
    d = norm_dim("split", dim, self.ndim)
    size = self.shape[d]
    if split_size == 0 and size != 0:
        raise ShapeError(
            "split: split_size must be greater than 0 unless the tensor size along the "
            f"dimension is 0. split_size: '{split_size}', tensor size along dim '{d}': '{size}'."
        )
    return [narrow(self, d, s, min(split_size, size - s)) for s in range(0, size, split_size or 1)]


def split_with_sizes(self, split_sizes: Sequence[int], dim: int) -> list:
    """Pieces of the given sizes along `dim`, which must add up to its size (burn's check).

    PyTorch difference: burn skips a size of 0 (`continue`), where `torch.split` returns an
    empty piece for it.
    """
    d = norm_dim("split_with_sizes", dim, self.ndim)
    size = self.shape[d]
    if sum(split_sizes) != size:
        raise ShapeError(
            "split_with_sizes: The sum of split_sizes must equal the tensor size along the "
            f"specified dimension. Sum of split_sizes: '{sum(split_sizes)}', tensor size "
            f"along dim '{d}': '{size}'."
        )
    starts = np.cumsum([0, *split_sizes[:-1]]) if split_sizes else []
    return [narrow(self, d, int(s), n) for s, n in zip(starts, split_sizes, strict=True) if n]


def roll_dim(self, shift: int, dim: int):
    """burn's `roll_dim`: `cat([slice(shift..), slice(..shift)], dim)` with `shift` wrapped
    into `0..size`; a 0 shift or an empty dim returns the tensor itself.

    PyTorch difference: the element at `shift` comes first, so burn's `roll_dim(s, d)` is
    torch's `roll(x, -s, d)` (burn's test `test_roll_dim`: `[[0, 1, 2], [3, 4, 5]]` rolled
    by 1 along dim 0 is `[[3, 4, 5], [0, 1, 2]]`; torch's roll by 1 gives the same here only
    because the dim has 2 elements).
    """
    d = norm_dim("roll", dim, self.ndim)
    size = self.shape[d]
    if size == 0 or shift % size == 0:
        return self
    return _rolled(self, shift % size, d)


def roll(self, shifts: Sequence[int], dims: Sequence[int]):
    """burn's `roll`: the shifts per dim added up, wrapped, then one `roll_dim` per dim with a
    non-zero shift, in dim order (see `roll_dim` for the direction, opposite to torch's)."""
    if len(shifts) != len(dims):
        raise ShapeError(
            f"roll: Dimensions and shifts must align; found dims={list(dims)}, "
            f"shifts={list(shifts)}"
        )
    total = [0] * self.ndim
    for shift, dim in zip(shifts, dims, strict=True):
        total[norm_dim("roll", dim, self.ndim)] += shift
    if self.numel() == 0:
        return self
    out = self
    for d, shift in enumerate(total):
        if shift % self.shape[d]:
            out = _rolled(out, shift % self.shape[d], d)
    return out


def _rolled(x, shift: int, d: int):
    """burn's `unchecked_roll_dim`, for 0 < shift < size."""
    head = [None] * x.ndim
    tail = [None] * x.ndim
    head[d] = (shift, None)
    tail[d] = (0, shift)
    return x.__class__.cat([x.slice(head), x.slice(tail)], d)


def repeat(self, sizes: Sequence[int]):
    """`repeat_dim(dim, times)` for each dim whose count is above 1 (burn's `repeat`); a count
    of 0 gives an empty tensor of the repeated shape, untracked (burn's `Tensor::empty`)."""
    if len(sizes) > self.ndim:
        raise ShapeError(f"repeat: {len(sizes)} sizes for a tensor of shape {fmt(self.shape)}")
    if 0 in sizes:
        shape = [n * (sizes[i] if i < len(sizes) else 1) for i, n in enumerate(self.shape)]
        return self.__class__.zeros(shape, self.device, self.dtype)
    out = self
    for dim, times in enumerate(sizes):
        if times > 1:
            out = out.repeat_dim(dim, times)
    return out


def movedim(self, src, dst):
    """Move dims `src` to positions `dst` (an int or a list each, negative from the end), the
    others keeping their order: burn's `movedim`, a `permute`."""
    source = [src] if isinstance(src, int) else list(src)
    dest = [dst] if isinstance(dst, int) else list(dst)
    if len(source) != len(dest):
        raise ShapeError(
            "movedim: The number of dimensions in source and destination must be equal. "
            f"Source dimensions: {source}, Destination dimensions: {dest}."
        )
    n = self.ndim
    source = [norm_dim("movedim", s, n) for s in source]
    dest = [norm_dim("movedim", s, n) for s in dest]
    if len(set(source)) != len(source) or len(set(dest)) != len(dest):
        raise ShapeError(f"movedim: repeated dims in source {source} or destination {dest}")
    axes = [-1] * n
    for s, d in zip(source, dest, strict=True):
        axes[d] = s
    rest = iter(i for i in range(n) if i not in source)
    return self.permute([a if a != -1 else next(rest) for a in axes])


def squeeze_dims(self, dims: Sequence[int]):
    """Remove `dims` (each of size 1; repeats count once), or every dim of size 1 when `dims`
    is empty; burn refuses to squeeze as many dims as the tensor has."""
    shape = self.shape
    if dims:
        picked = sorted({norm_dim("squeeze_dims", d, len(shape)) for d in dims})
    else:
        picked = [i for i, n in enumerate(shape) if n == 1]
    if len(picked) >= len(shape):
        raise ShapeError(
            "squeeze_dims: Attempted to squeeze too many dimensions! "
            f"Got {len(picked)} dims, tensor has {len(shape)}"
        )
    for d in picked:
        if shape[d] != 1:
            raise ShapeError(f"squeeze_dims: Can't squeeze dimension {d} because its size is not 1")
    return self.reshape([n for i, n in enumerate(shape) if i not in picked])


def unsqueeze_dims(self, axes: Sequence[int]):
    """Insert a dim of size 1 at each of `axes` of the result (burn's `unsqueeze_dims`: a
    negative axis counts from the end of the result, each further negative one a place
    earlier; a repeated axis inserts several dims from there)."""
    rank = self.ndim + len(axes)
    offset = rank
    fixed = []
    for a in axes:
        _check_unsqueeze_axis(a, rank)
        if a < 0:
            offset -= 1
            a = a + offset + 1
        fixed.append(a)
    fixed.sort()
    for i in range(1, len(fixed)):
        fixed[i] = max(fixed[i], fixed[i - 1] + 1)
    for a in fixed:
        _check_unsqueeze_axis(a, rank)
    old = iter(self.shape)
    return self.reshape([1 if i in fixed else next(old) for i in range(rank)])


def _check_unsqueeze_axis(axis: int, rank: int) -> None:
    if not -rank <= axis < rank:
        raise ShapeError(
            f"unsqueeze_dims: unsqueeze arg {axis} is out of range for the output tensor of "
            f"rank {rank}"
        )


# ---- triangles (api/numeric.rs) -----------------------------------------------------------------


def tril(self, diagonal: int = 0):
    """Zero above the `diagonal`-th diagonal of the last two dims: burn's `tril`, a
    `mask_fill(tril_mask, 0)`, so the gradient is 0 where zeroed (and NaN there becomes 0)."""
    return self.mask_fill(_tri_mask(self, "tril", lambda j_minus_i: j_minus_i > diagonal), 0.0)


def triu(self, diagonal: int = 0):
    """Zero below the `diagonal`-th diagonal of the last two dims (burn's `triu`, as `tril`)."""
    return self.mask_fill(_tri_mask(self, "triu", lambda j_minus_i: j_minus_i < diagonal), 0.0)


def _tri_mask(x, op: str, zeroed):
    if x.ndim < 2:
        raise ShapeError(f"{op}: The input tensor must have at least 2 dimensions, got {x.ndim}")
    rows, cols = x.shape[-2:]
    offsets = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    mask = np.broadcast_to(zeroed(offsets), x.shape)
    return x.__class__.from_numpy(mask, x.device)


# ---- ordering (api/orderable.rs, burn-backend's defaults, stats/mod.rs) -----------------------


def topk_with_indices(self, k: int, dim: int):
    """(the k largest values along `dim`, their int64 indices): burn-backend's default
    `float_topk_with_indices`, the descending sort then `select` of the first k, so the
    gradient is sort's and select's. Ties keep their order (`sort_with_indices`)."""
    d = norm_dim("topk", dim, self.ndim)
    _check_topk(k, d, self.shape)
    values, indices = self.sort_descending_with_indices(d)
    first = self.__class__.from_numpy(np.arange(k), self.device)
    return values.select(d, first), indices.select(d, first)


def topk(self, k: int, dim: int):
    """The k largest values along `dim` (`topk_with_indices` without the indices).

    On the autodiff device burn panics: burn-autodiff's `float_topk` is
    `unimplemented!("topk is not implemented for autodiff")` (`crates/burn-autodiff/src/ops/
    tensor.rs`); `topk_with_indices` is the differentiable spelling. Here a
    NotImplementedError with that message. PyTorch difference: torch's topk is
    differentiable.
    """
    if self.is_autodiff():
        raise NotImplementedError("topk is not implemented for autodiff")
    return topk_with_indices(self, k, dim)[0]


def argtopk(self, k: int, dim: int):
    """int64 indices of the k largest values along `dim` (burn-backend's `float_argtopk`:
    the descending argsort's first k)."""
    d = norm_dim("argtopk", dim, self.ndim)
    _check_topk(k, d, self.shape)
    first = self.__class__.from_numpy(np.arange(k), self.device)
    return self.argsort_descending(d).select(d, first)


def _check_topk(k: int, dim: int, shape) -> None:
    if not 0 < k <= shape[dim]:
        raise ShapeError(f"topk: k ({k}) must be in 1..={shape[dim]} (dim {dim} of {fmt(shape)})")


def median_with_indices(self, dim: int):
    """(the lower median along `dim`, its int64 index), both keeping the dim: burn's
    `stats::median_with_indices`, the ascending sort then `narrow` at `(n - 1) // 2`.

    PyTorch difference: burn's sort puts NaN last, so a lane with a NaN has a finite median
    unless more than half is NaN; torch's median of such a lane is NaN.
    """
    d = norm_dim("median", dim, self.ndim)
    at = (self.shape[d] - 1) // 2
    values, indices = self.sort_with_indices(d)
    return narrow(values, d, at, 1), narrow(indices, d, at, 1)


def median(self, dim: int):
    """The lower median along `dim`, the dim kept (see `median_with_indices`)."""
    return median_with_indices(self, dim)[0]


def _var_with_mean(x, mean, dim: int, n: int):
    # burn's stats::var_with_mean_n: the scalar is `n as f32`, and div_scalar's backward
    # multiplies by 1/n computed in f32 (harness.engine.ops.elementwise.div_scalar).
    return x.sub(mean).square().sum_dim(dim).div_scalar(float(np.float32(n)))


def var(self, dim: int):
    """Sample variance along `dim` (divisor n - 1), the dim kept: burn's `stats::var`,
    `(x - mean_dim).square().sum_dim(dim).div_scalar(n - 1)`.

    PyTorch differences: the float64 gradient carries div_scalar's float32 rounding of
    1/(n - 1), as all of burn's `div_scalar` backward; at an infinite input the composite's
    gradient is NaN (inf - inf) where torch's is +-inf. (`var_mean`'s mean is `mean_dim`'s,
    +-inf for a lane with an infinity, where `torch.var_mean` returns NaN.)
    """
    d = norm_dim("var", dim, self.ndim)
    return _var_with_mean(self, self.mean_dim(d), d, self.shape[d] - 1)


def var_bias(self, dim: int):
    """Population variance along `dim` (divisor n), the dim kept (burn's `stats::var_bias`)."""
    d = norm_dim("var_bias", dim, self.ndim)
    return _var_with_mean(self, self.mean_dim(d), d, self.shape[d])


def var_mean(self, dim: int):
    """(sample variance, mean) along `dim`, the variance from that same mean (burn's order)."""
    d = norm_dim("var_mean", dim, self.ndim)
    mean = self.mean_dim(d)
    return _var_with_mean(self, mean, d, self.shape[d] - 1), mean


def var_mean_bias(self, dim: int):
    """(population variance, mean) along `dim`."""
    d = norm_dim("var_mean_bias", dim, self.ndim)
    mean = self.mean_dim(d)
    return _var_with_mean(self, mean, d, self.shape[d]), mean


def min_pair(self, other):
    """The elementwise minimum as burn composes it: `self.mask_where(other.lower(self),
    other)`. PyTorch differences (`torch.minimum`), as `max_pair`'s: where `other` is NaN the
    result is `self`; at a tie the whole gradient goes to `self`."""
    return self.mask_where(other.lower(self), other)


# ---- selection and products ---------------------------------------------------------------


def mask_select(self, mask):
    """The elements where `mask` (bool, the tensor's own shape: burn does not broadcast it)
    is true, in flattened order, rank 1: `reshape([-1]).select(0, nonzero)`, so the gradient
    is select's (zeros where the mask is false)."""
    if mask.shape != self.shape:
        raise ShapeError(
            f"mask_select: the mask's shape {fmt(mask.shape)} is not the tensor's {fmt(self.shape)}"
        )
    picked = np.flatnonzero(mask.numpy())
    return self.reshape([-1]).select(0, self.__class__.from_numpy(picked, self.device))


def one_hot(self, num_classes: int):
    """burn's `one_hot` (`one_hot_fill(num_classes, 1, 0, -1)`): a new last dim of
    `num_classes`, 1 at each value's class and 0 elsewhere, in the tensor's dtype (int64 or
    float), never tracked. A negative class counts from the end (burn adds `num_classes`);
    a class `>= num_classes`, or fewer than 2 classes, raises burn's `TensorCheck` text.

    PyTorch difference: `torch.nn.functional.one_hot` takes int64 only and raises on a
    negative class.
    """
    values = self.numpy()
    if values.size and values.max() >= num_classes:
        raise ShapeError(
            "one_hot: Can't create a one hot tensor from a tensor containing indexes greater "
            f"or equal to the number of classes ({num_classes})"
        )
    if num_classes <= 1:
        raise ShapeError("one_hot: Can't create a one hot tensor with less than 2 classes")
    classes = values.astype(np.int64)
    classes = np.where(values < 0, classes + num_classes, classes)
    if classes.size and classes.min() < 0:  # burn's scatter then indexes out of bounds
        raise IndexError(
            f"one_hot: index {classes.min()} out of bounds for dimension of size {num_classes}"
        )
    out = (classes[..., None] == np.arange(num_classes)).astype(values.dtype)
    return self.__class__.from_numpy(out, self.device)


def dot(self, other):
    """`self.mul(other).sum()`, shape (1,) (burn's `dot`)."""
    return self.mul(other).sum()


def fmod(self, other):
    """C's fmod (the sign of the dividend), as burn-tensor composes it (api/fmod.rs):
    `self - other * trunc(self / other)`, with `0 * inf` (a finite dividend over an infinite
    divisor) replaced by `self * 0`. The gradient is those ops' (trunc's is 0).

    PyTorch difference: at an infinite or NaN operand outside that one correction the formula
    gives NaN (inf - inf, inf * 0) where C's fmod does not.
    """
    truncated = self.div(other).trunc()
    product = other.mul(truncated)
    zero_times_inf = truncated.equal_elem(0.0).numpy() & other.is_inf().numpy()
    mask = self.__class__.from_numpy(zero_times_inf, self.device)
    return self.sub(product.mask_where(mask, self.mul_scalar(0.0)))


# ---- folds over dims, max_abs, cov, closeness (api/numeric.rs, orderable.rs, float.rs) -----


def _fold(name: str):
    def fold(self, dims: Sequence[int]):
        out = self
        for dim in dims:
            out = getattr(out, f"{name}_dim")(dim)
        return out

    fold.__name__ = f"{name}_dims"
    fold.__doc__ = f"`{name}_dim` over each of `dims` in turn, each kept with size 1 (burn's fold)."
    return fold


sum_dims = _fold("sum")
mean_dims = _fold("mean")
prod_dims = _fold("prod")
min_dims = _fold("min")
max_dims = _fold("max")
max_abs_dims = _fold("max_abs")


def sum_dims_squeeze(self, dims: Sequence[int]):
    """`sum_dims(dims)` then `squeeze_dims(dims)` (burn's `sum_dims_squeeze`)."""
    return squeeze_dims(sum_dims(self, dims), dims)


def max_abs_dim(self, dim: int):
    """`abs().max_dim(dim)` (burn-backend's default `float_max_abs_dim`): the gradient goes
    to the first largest magnitude, times its sign. PyTorch difference: at NaN it is NaN
    (abs's rule `g * sign(x)`), torch's 0."""
    return self.abs().max_dim(dim)


def max_abs(self):
    """The largest magnitude, shape (1,): `reshape([-1])` then `max_abs_dim(0)`."""
    return max_abs_dim(self.reshape([-1]), 0)


def cov(self, dim: int, correction_factor: int):
    """burn's `cov`: the `dim` entries are the observations, centred by `mean_dim(dim)`,
    moved to dim 0; `centered^T @ centered` over the last two dims, divided by
    `n - correction_factor` (computed in f32, as burn's `div_scalar(n as f32 - c as f32)`)."""
    d = norm_dim("cov", dim, self.ndim)
    n = self.shape[d]
    centered = self.sub(self.mean_dim(d)).swap_dims(d, 0)
    divisor = float(np.float32(n) - np.float32(correction_factor))
    return centered.transpose().matmul(centered).div_scalar(divisor)


def is_close(self, other, rtol: float | None = None, atol: float | None = None):
    """Where `|self - other| <= atol + rtol * |other|` with both finite, or both infinite and
    equal (burn's `is_close`, defaults rtol 1e-5, atol 1e-8), a bool tensor."""
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-8 if atol is None else atol
    a, b = self.numpy(), other.numpy()
    with np.errstate(invalid="ignore"):
        finite = (np.abs(a - b) <= np.abs(b) * a.dtype.type(rtol) + a.dtype.type(atol)) & (
            np.isfinite(a) & np.isfinite(b)
        )
    infinite = ~np.isfinite(a) & ~np.isfinite(b) & (a == b)
    return self.__class__.from_numpy(finite | infinite, self.device)


def all_close(self, other, rtol: float | None = None, atol: float | None = None) -> bool:
    """Whether `is_close` holds everywhere, a Python bool (burn's `all_close`)."""
    return bool(np.all(is_close(self, other, rtol, atol).numpy()))


def contains_nan(self):
    """Whether any element is NaN, a bool tensor of shape (1,) (`is_nan().any()`)."""
    return self.is_nan().any()


# ---- scalar forms and conversions --------------------------------------------------------


def deg2rad(self):
    """`mul_scalar(PI / 180)` with burn's `f32::consts::PI / 180.0`, an f32 constant. PyTorch
    difference: a float64 tensor is scaled by that f32 value (about 1e-8 off)."""
    return self.mul_scalar(float(np.float32(np.pi) / np.float32(180.0)))


def rad2deg(self):
    """`mul_scalar(180 / PI)` with burn's constant `180.0 / f32::consts::PI`, computed in f32
    (57.295776). PyTorch difference: torch scales by 180 / pi rounded to the dtype (57.29578
    in float32), one f32 ulp away."""
    return self.mul_scalar(float(np.float32(180.0) / np.float32(np.pi)))


def fmod_scalar(self, scalar: float):
    """C's fmod by a scalar: `self - trunc(self / s) * s`, or `self` itself for an infinite
    `s` (burn's `fmod_scalar`)."""
    if np.isinf(scalar):
        return self
    return self.sub(self.div_scalar(scalar).trunc().mul_scalar(scalar))


def bool_of(self):
    """`not_equal_elem(0)`: where the value is non-zero, NaN included (burn's `bool()`)."""
    return self.not_equal_elem(0)


def one_hot_fill(self, num_classes: int, on_value: float, off_value: float, axis: int = -1):
    """burn's `one_hot_fill`: `on_value` at each class along a new dim `axis` (negative
    from the end of the result), `off_value` elsewhere; negative classes count from the end,
    as `one_hot`. Never tracked."""
    hot = one_hot(self, num_classes).numpy()
    out = np.where(hot == 1, on_value, off_value).astype(self.dtype)
    out = np.moveaxis(out, -1, norm_dim("one_hot_fill", axis, self.ndim + 1))
    return self.__class__.from_numpy(out, self.device)


# ---- slicing by dim, take, iter_dim (api/base.rs, take.rs) --------------------------------


def slice_dim(self, dim: int, index):
    """`slice` with one range along `dim` and full ranges elsewhere (burn's `slice_dim`)."""
    ranges = [None] * self.ndim
    ranges[norm_dim("slice_dim", dim, self.ndim)] = index
    return self.slice(ranges)


def select_dim(self, dim: int, index: int):
    """The slice at `index` along `dim`, that dim removed (`slice_dim` then `squeeze_dim`)."""
    return slice_dim(self, dim, index).squeeze_dim(dim)


def slice_fill(self, ranges, value: float):
    """`value` in the region `ranges` selects (burn's `slice_fill`: a `slice_assign` of the
    value expanded to the region, so no gradient flows into the region)."""
    region = self.slice(ranges).shape
    fill = self.__class__.full(region, value, self.device, self.dtype)
    return self.slice_assign(ranges, fill)


def take(self, dim: int, indices):
    """`select(dim, indices.flatten())`, then the indices' shape in place of `dim`
    (burn's `take`)."""
    d = norm_dim("take", dim, self.ndim)
    picked = self.select(d, indices.reshape([-1]))
    return picked.reshape([*self.shape[:d], *indices.shape, *self.shape[d + 1 :]])


def iter_dim(self, dim: int):
    """Each slice of `dim` in order, the dim kept with size 1 (burn's `DimIter`)."""
    d = norm_dim("iter_dim", dim, self.ndim)
    return (narrow(self, d, i, 1) for i in range(self.shape[d]))


# ---- pad (api/pad.rs) ------------------------------------------------------------------------


def pad(self, padding, mode=0.0):
    """burn's `Tensor::pad`. `padding` is `(left, right, top, bottom)` for the last two dims
    or a list of `(before, after)` pairs for the trailing dims; `mode` is a number (burn's
    `PadMode::Constant(value)`), "reflect" (the edge not repeated; each pad shorter than the
    dim) or "edge" (the edge repeated). As burn builds them: the tensor `slice_assign`ed
    into a new constant tensor, and for reflect/edge the flipped `narrow`s or the
    `repeat_dim`ed edge assigned into the margins, dim by dim."""
    pairs = _padding_pairs(padding, self.ndim)
    if isinstance(mode, str):
        if mode not in ("reflect", "edge"):
            raise ValueError(f"pad: mode must be a number, 'reflect' or 'edge', got {mode!r}")
        out = self
        for d, (before, after) in enumerate(pairs):
            if before or after:
                out = _pad_dim(out, d, before, after, mode)
        return out
    shape = [n + b + a for n, (b, a) in zip(self.shape, pairs, strict=True)]
    ranges = [(b, b + n) for n, (b, _) in zip(self.shape, pairs, strict=True)]
    return self.__class__.full(shape, mode, self.device, self.dtype).slice_assign(ranges, self)


def _padding_pairs(padding, ndim: int) -> list[tuple[int, int]]:
    if len(padding) == 4 and all(isinstance(p, int) for p in padding):
        left, right, top, bottom = padding
        pairs = [(top, bottom), (left, right)]
    else:
        pairs = [tuple(p) for p in padding]
    if len(pairs) > ndim:
        raise ShapeError(f"pad: Padding has {len(pairs)} pairs but tensor only has {ndim} dims")
    return [(0, 0)] * (ndim - len(pairs)) + pairs


def _pad_dim(x, d: int, before: int, after: int, mode: str):
    n = x.shape[d]
    if mode == "reflect" and not (before < n and after < n):
        raise ShapeError(
            f"pad: Reflect padding ({before}, {after}) must be less than dimension {d} size ({n})"
        )
    if mode == "edge" and n == 0:
        raise ShapeError(f"pad: Cannot apply edge padding to zero-sized dimension {d}")
    shape = list(x.shape)
    shape[d] = n + before + after
    out = x.__class__.zeros(shape, x.device, x.dtype).slice_assign(_along(d, before, n, x), x)
    if before:
        if mode == "reflect":
            margin = narrow(x, d, 1, before).flip([d])
        else:
            margin = narrow(x, d, 0, 1).repeat_dim(d, before)
        out = out.slice_assign(_along(d, 0, before, x), margin)
    if after:
        if mode == "reflect":
            margin = narrow(x, d, n - after - 1, after).flip([d])
        else:
            margin = narrow(x, d, n - 1, 1).repeat_dim(d, after)
        out = out.slice_assign(_along(d, before + n, after, x), margin)
    return out


def _along(d: int, start: int, length: int, x) -> list:
    ranges = [None] * x.ndim
    ranges[d] = (start, start + length)
    return ranges


# ---- grid_sample_2d (api/float.rs) --------------------------------------------------------------


class GridSamplePaddingMode(enum.Enum):
    """burn's `GridSamplePaddingMode` (burn-std ops.rs): what a point outside the input reads."""

    Zeros = "zeros"
    Border = "border"
    Reflection = "reflection"


@dataclass(frozen=True)
class GridSampleOptions:
    """burn's `GridSampleOptions`: `GridSampleOptions::default()` is bilinear, zeros padding,
    `align_corners` false (PyTorch's `F.grid_sample` defaults too). `mode` is an
    `InterpolateMode` (harness.engine.module_ops) or its value (`"bilinear"`)."""

    mode: object = "bilinear"
    padding_mode: GridSamplePaddingMode = GridSamplePaddingMode.Zeros
    align_corners: bool = False


def grid_sample_2d(self, grid, options: GridSampleOptions = GridSampleOptions()):
    """Sample `self` `[N, C, H_in, W_in]` at `grid` `[N, H_out, W_out, 2]` (x, y in [-1, 1])
    -> `[N, C, H_out, W_out]`: burn's `grid_sample_2d`.

    burn-autodiff does not override `float_grid_sample_2d`, so on the autodiff device it is
    burn-backend's `float_grid_sample_2d_ref` (ops/modules/grid_sample.rs), this composite in
    its order: the pixel coordinates (`(g + 1) * (size - 1) / 2` aligned, else
    `(g + 1) * size / 2 - 0.5`), the padding (Border: `clamp`; Reflection: burn's triangle
    wave), `floor`, the fractions `g - floor(g)`, four `gather`s of the clamped corner
    indices, out-of-bounds corners `mask_fill`ed with 0 (Zeros), and the weighted sum
    `s00 w00 + s01 w01 + s10 w10 + s11 w11`. The integer corner indices carry no gradient and
    are computed in NumPy (burn's `float_into_int` of the floors, a saturating cast: NaN is 0).
    The gradient into `grid` is that of the composite: through the fractions (floor's
    gradient is 0) and Border's clamp.

    Differences: burn-flex's plain-device kernel (ops/grid_sample.rs) computes in f64 and
    rounds once, the composite rounds each step in the tensor's dtype (float32 results on the
    plain device can differ from flex by a few ulp). Only `Bilinear` is implemented: the
    reference panics with `todo!` for other modes (burn on the autodiff device), and flex's
    `Nearest` kernel is not ported. PyTorch (`F.grid_sample`) computes the same bilinear
    weights; its Reflection and non-finite coordinates follow its own rules.
    """
    mode = getattr(options.mode, "value", options.mode)
    if mode != "bilinear":
        name = {"nearest": "Nearest", "bicubic": "Bicubic"}.get(mode, str(mode))
        raise NotImplementedError(
            f"Default implementation for grid_sample_2d with {name} unimplemented"
        )
    n, c, h_in, w_in = self.shape
    _, h_out, w_out, _ = grid.shape
    padding = GridSamplePaddingMode(options.padding_mode)
    gx = _pixel(grid, 0, w_in, options.align_corners)
    gy = _pixel(grid, 1, h_in, options.align_corners)
    if padding is GridSamplePaddingMode.Border:
        gx, gy = gx.clamp(0.0, float(w_in - 1)), gy.clamp(0.0, float(h_in - 1))
    elif padding is GridSamplePaddingMode.Reflection:
        gx = _reflect(gx, w_in, options.align_corners)
        gy = _reflect(gy, h_in, options.align_corners)
    fx, fy = gx.floor(), gy.floor()
    x_frac, y_frac = gx - fx, gy - fy
    x0, y0 = _saturating_int(fx.numpy()), _saturating_int(fy.numpy())
    flat = self.reshape([n, c, h_in * w_in])
    samples = []
    for dy, dx in ((0, 0), (1, 0), (0, 1), (1, 1)):  # burn's s00, s01, s10, s11
        xi, yi = x0 + dx, y0 + dy
        index = np.clip(yi, 0, h_in - 1) * w_in + np.clip(xi, 0, w_in - 1)
        index = np.broadcast_to(index.reshape(n, 1, h_out * w_out), (n, c, h_out * w_out))
        sample = flat.gather(2, self.__class__.from_numpy(index, self.device))
        sample = sample.reshape([n, c, h_out, w_out])
        if padding is GridSamplePaddingMode.Zeros:
            outside = ~((xi >= 0) & (xi < w_in) & (yi >= 0) & (yi < h_in))
            outside = np.broadcast_to(outside, (n, c, h_out, w_out))
            sample = sample.mask_fill(self.__class__.from_numpy(outside, self.device), 0.0)
        samples.append(sample)
    one_minus_x, one_minus_y = x_frac.neg().add_scalar(1.0), y_frac.neg().add_scalar(1.0)
    weights = (one_minus_x * one_minus_y, one_minus_x * y_frac, x_frac * one_minus_y)
    result = samples[0] * weights[0]
    result = result + samples[1] * weights[1]
    result = result + samples[2] * weights[2]
    return result + samples[3] * (x_frac * y_frac)


def _pixel(grid, axis: int, size: int, align_corners: bool):
    """One coordinate of the grid `[N, 1, H_out, W_out]`, in pixels."""
    n, h_out, w_out, _ = grid.shape
    g = grid.slice([None, None, None, (axis, axis + 1)]).reshape([n, 1, h_out, w_out])
    if align_corners:
        return g.add_scalar(1.0).mul_scalar((size - 1.0) / 2.0)
    return g.add_scalar(1.0).mul_scalar(size / 2.0).sub_scalar(0.5)


def _reflect(coords, size: int, align_corners: bool):
    """burn's `reflect_coordinates`: a triangle wave over [0, size - 1] (aligned) or
    [-0.5, size - 0.5], its bounds and period in f32 as burn computes them."""
    lo, hi = (0.0, np.float32(size - 1.0)) if align_corners else (-0.5, np.float32(size - 0.5))
    span = float(np.float32(hi) - np.float32(lo))
    if span <= 0.0:
        return coords.mul_scalar(0.0).add_scalar(float(lo))
    period = float(np.float32(2.0) * np.float32(span))
    x = coords.sub_scalar(float(lo)).abs()
    x_mod = x - x.div_scalar(period).floor().mul_scalar(period)
    return x_mod.sub_scalar(span).abs().sub_scalar(span).neg().add_scalar(float(lo))


def _saturating_int(values: np.ndarray) -> np.ndarray:
    """Rust's `as` cast to an integer: NaN to 0, out of range to the bound."""
    with np.errstate(invalid="ignore"):
        clipped = np.clip(np.nan_to_num(values, nan=0.0), -(2.0**62), 2.0**62)
    return clipped.astype(np.int64)
