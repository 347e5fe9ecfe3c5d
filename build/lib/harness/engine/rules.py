"""The table of backward rules: one named rule per primitive, one gradient per input.

A rule is called as `rule(node, g)` where `g` is the gradient of the node's output and
`node.saved` is what the forward op kept for it. It returns a tuple with one entry per
differentiable input of the op: the gradient (shaped like that input) or None. Inputs listed
in NON_DIFFERENTIABLE_INPUTS (gather's indices, masks) are not graph inputs. An input whose
`node.parents` entry is None is untracked, so its rule skips the work and returns None there.

Rules never write into `g` or into saved arrays: several handles may share them. They may
return views (`reshape`, `swapaxes`, `broadcast_to`), which downstream rules only read.
"""

from __future__ import annotations

import functools

import numpy as np

from .errors import MissingRuleError


def unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum `g` back to `shape`, undoing NumPy broadcasting (a no-op when shapes match)."""
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead == 1 and gshape[1:] == shape:
        # A bias broadcast over the batch: one reduction, no axis bookkeeping.
        return np.add.reduce(g, axis=0)
    if lead:
        g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g


def filled(shape: tuple[int, ...], value: np.generic) -> np.ndarray:
    """An array of `shape` holding `value` (a NumPy scalar, whose dtype it takes).

    Same values as `np.full`, which is a Python function about 3x slower on small shapes.
    """
    out = np.empty(shape, dtype=value.dtype)
    out.fill(value)
    return out


def zero_of(dtype: np.dtype):
    """Zero as a read-only 0-d array of a float `dtype` (a Python 0 for other dtypes).

    A ufunc converts a Python scalar operand at every call; with a 0-d array of the right
    dtype, small calls (`maximum(x, 0)`, `x <= 0`, masked `copyto`) take half the time, with
    the same results.
    """
    zero = _ZEROS.get(dtype)
    return 0 if zero is None else zero


def _read_only_zero(dtype) -> np.ndarray:
    zero = np.zeros((), dtype=dtype)
    zero.flags.writeable = False
    return zero


_ZEROS = {np.dtype(t): _read_only_zero(t) for t in (np.float32, np.float64)}


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)`, through `ndarray.dot` where that is the very same BLAS call.

    For 2-D operands laid out for BLAS (C or Fortran contiguous, so transposed views too) with
    every dim >= 2, both reach the same gemm (or syrk for `a @ a.T`) and give the same bits;
    `dot` skips the gufunc machinery: ~0.3 us instead of ~0.85 us on small inputs. A dim of 1
    sends them to different gemv calls whose bits differ, so those stay on `np.matmul`.
    """
    sa = a.shape
    sb = b.shape
    if (
        len(sa) == 2
        and len(sb) == 2
        and sa[0] > 1
        and sa[1] > 1
        and sb[1] > 1
        and a.flags.forc
        and b.flags.forc
    ):
        return a.dot(b)
    return np.matmul(a, b)


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def zero_where(mask: np.ndarray, g: np.ndarray) -> np.ndarray:
    """`g` with +0.0 where `mask` is true, bit-exact like burn's `mask_fill(grad, mask, 0)`.

    `np.where` is ~10x slower than a multiply on random masks (branch mispredictions), and
    `g * keep` turns masked infinities into NaN and gives -0.0; clearing the bits is exact.
    Small arrays: a copy then a masked `putmask` of +0.0 is ~2x cheaper than `np.where` (and
    than `copyto(where=)`, whose keyword goes through the array-function dispatcher).
    """
    if g.shape != mask.shape or not g.ndim:  # broadcasting, or a 0-d value (maybe a scalar)
        return np.where(mask, 0, g)
    if g.size < 4096:
        out = g.copy()
        np.putmask(out, mask, zero_of(g.dtype))
        return out
    itype = _SAME_SIZE_INT[g.dtype.itemsize]
    bits = mask.astype(itype)
    np.subtract(bits, 1, out=bits)  # 0 where masked, all bits set elsewhere
    np.bitwise_and(g.view(itype), bits, out=bits)
    return bits.view(g.dtype)


# --- elementwise binary (tensor, tensor); saved = (a, b) or the two shapes -------------------


def add_backward(node, g):
    sa, sb = node.saved
    pa, pb = node.parents
    # The shape tests inline unbroadcast's no-op case: an add per layer (bias) takes this path.
    return (
        None if pa is None else g if g.shape == sa else unbroadcast(g, sa),
        None if pb is None else g if g.shape == sb else unbroadcast(g, sb),
    )


def sub_backward(node, g):
    sa, sb = node.saved
    pa, pb = node.parents
    return (
        unbroadcast(g, sa) if pa is not None else None,
        unbroadcast(np.negative(g), sb) if pb is not None else None,
    )


def mul_backward(node, g):
    a, b = node.saved
    pa, pb = node.parents
    return (
        unbroadcast(g * b, a.shape) if pa is not None else None,
        unbroadcast(g * a, b.shape) if pb is not None else None,
    )


def div_backward(node, g):
    a, b = node.saved
    pa, pb = node.parents
    # burn's formulas (and so its rounding): g * (1/b) and g * (-a / b^2).
    ga = unbroadcast(g * np.reciprocal(b), a.shape) if pa is not None else None
    gb = unbroadcast(g * (np.negative(a) / (b * b)), b.shape) if pb is not None else None
    return ga, gb


def matmul_backward(node, g):
    a, b = node.saved
    pa, pb = node.parents
    # swapaxes is a view: BLAS reads the transposed strides, no copy is materialized.
    ga = gb = None
    if pa is not None:
        ga = matmul(g, b.swapaxes(-1, -2))
        if ga.shape != a.shape:  # batch dims were broadcast
            ga = unbroadcast(ga, a.shape)
    if pb is not None:
        gb = matmul(a.swapaxes(-1, -2), g)
        if gb.shape != b.shape:
            gb = unbroadcast(gb, b.shape)
    return ga, gb


def mask_where_backward(node, g):
    mask, sa, sb = node.saved
    pa, pb = node.parents
    return (
        unbroadcast(zero_where(mask, g), sa) if pa is not None else None,
        unbroadcast(zero_where(~mask, g), sb) if pb is not None else None,
    )


# --- tensor-scalar ---------------------------------------------------------------------------


def identity_backward(node, g):
    return (g,)


def mul_scalar_backward(node, g):
    return (g * node.saved,)


def div_scalar_backward(node, g):
    # burn computes 1/s in f32 (`1.0 / s.elem::<f32>()`) even for f64 tensors.
    inv = g.dtype.type(np.float32(1.0) / np.float32(node.saved))
    return (g * inv,)


def pow_scalar_backward(node, g):
    x, p = node.saved
    return (g * (p * x ** (p - 1)),)


# --- unary -----------------------------------------------------------------------------------


def neg_backward(node, g):
    return (np.negative(g),)


def exp_backward(node, g):
    return (g * node.saved,)


def recip_backward(node, g):
    x = node.saved
    return (g * np.negative(x**-2),)


def log_backward(node, g):
    return (g * np.reciprocal(node.saved),)


def sqrt_backward(node, g):
    x = node.saved
    return (g * (x**-0.5 / 2),)


def abs_backward(node, g):
    # sign(0) = 0: the subgradient at the kink is 0, as in burn and PyTorch.
    return (g * np.sign(node.saved),)


def clamp_backward(node, g):
    x, lo, hi = node.saved
    # burn clamps with mask_fill(x < min) and mask_fill(x > max): at the bounds themselves the
    # gradient passes, as in PyTorch. A NaN input compares false, so its gradient passes too,
    # where PyTorch gives 0 (declared in harness/ops/divergences.py).
    if lo is None:
        clamped = x > hi
    elif hi is None:
        clamped = x < lo
    else:
        clamped = (x < lo) | (x > hi)
    return (zero_where(clamped, g),)


def relu_backward(node, g):
    # burn masks where output <= 0: the gradient at exactly 0 is 0; NaN passes through.
    out = node.saved
    return (zero_where(np.less_equal(out, zero_of(out.dtype)), g),)


def tanh_backward(node, g):
    out = node.saved
    return (g * (1 - out * out),)


def sigmoid_backward(node, g):
    out = node.saved
    return (g * (out * (1 - out)),)


def mask_fill_backward(node, g):
    return (zero_where(node.saved, g),)


# --- reductions ------------------------------------------------------------------------------


def sum_backward(node, g):
    # g has the output's shape [1].
    return (filled(node.saved, g[0]),)


def sum_dim_backward(node, g):
    return (np.broadcast_to(g, node.saved),)


def mean_backward(node, g):
    shape, n = node.saved
    # burn multiplies by 1/n, it does not divide by n. The forward op saves `n` as a scalar of
    # the tensor's dtype (g's), so `1.0 / n` already has that dtype: no cast needed. (In f32
    # this equals 1/n computed in f64 then cast, checked for every n below 2**20.)
    return (filled(shape, g[0] * (1.0 / n)),)


def mean_dim_backward(node, g):
    shape, n = node.saved
    return (np.broadcast_to(g * (1.0 / n), shape),)


def max_dim_backward(node, g):
    shape, idx, dim = node.saved
    # argmax picks the first maximum, so on ties the whole gradient goes to the first one
    # (burn scatters into the index its max_dim_with_indices returned).
    z = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(z, idx, g, dim)
    return (z,)


# burn builds both from primitives on x' = x - detach(max): e = exp(x'), s = sum_dim(e).
# These rules are that composite's backward, fused, with burn's operation order (its rounding).


def log_softmax_backward(node, g):
    e, s, dim = node.saved
    # out = x' - log(s): g + (-sum(g) * (1/s)) * e
    return (g + (np.negative(np.add.reduce(g, axis=dim, keepdims=True)) * np.reciprocal(s)) * e,)


def softmax_backward(node, g):
    e, s, dim = node.saved
    # out = e / s: (g * (1/s) + sum(g * (-e / s^2))) * e
    through_s = np.add.reduce(g * (np.negative(e) / (s * s)), axis=dim, keepdims=True)
    return ((g * np.reciprocal(s) + through_s) * e,)


# --- shape and indexing ----------------------------------------------------------------------


def reshape_backward(node, g):
    return (g.reshape(node.saved),)


def swap_dims_backward(node, g):
    a, b = node.saved
    return (g.swapaxes(a, b),)


def slice_backward(node, g):
    shape, index = node.saved
    z = np.zeros(shape, dtype=g.dtype)
    z[index] = g
    return (z,)


def cat_backward(node, g):
    dim, sizes = node.saved
    bounds = np.cumsum(sizes)[:-1]
    parts = np.split(g, bounds, axis=dim)
    return tuple(
        p if parent is not None else None for p, parent in zip(parts, node.parents, strict=True)
    )


def gather_backward(node, g):
    shape, index = node.saved
    z = np.zeros(shape, dtype=g.dtype)
    # Scatter-add: an index may be gathered several times and its gradients add up.
    np.add.at(z, index, g)
    return (z,)


def along_axis_index(indices: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """The fancy index that picks `indices` along `dim` (take_along_axis, without its overhead)."""
    index = list(_axis_ranges(indices.shape, dim))
    index[dim] = indices
    return tuple(index)


@functools.lru_cache(maxsize=64)
def _axis_ranges(shape: tuple[int, ...], dim: int) -> tuple[np.ndarray | None, ...]:
    """For each axis but `dim` (None there), `arange(n)` shaped to run along that axis.

    Read-only, so they can be cached: a training loop gathers with the same batch shape at
    every step, and one lookup replaces building the ranges axis by axis.
    """
    ndim = len(shape)
    ranges = []
    for axis, n in enumerate(shape):
        if axis == dim:
            ranges.append(None)
            continue
        axis_shape = [1] * ndim
        axis_shape[axis] = n
        values = np.arange(n).reshape(axis_shape)
        values.flags.writeable = False
        ranges.append(values)
    return tuple(ranges)


BACKWARD_RULES = {
    "add": add_backward,
    "sub": sub_backward,
    "mul": mul_backward,
    "div": div_backward,
    "matmul": matmul_backward,
    "mask_where": mask_where_backward,
    "add_scalar": identity_backward,
    "sub_scalar": identity_backward,
    "mul_scalar": mul_scalar_backward,
    "div_scalar": div_scalar_backward,
    "powi_scalar": pow_scalar_backward,
    "powf_scalar": pow_scalar_backward,
    "neg": neg_backward,
    "exp": exp_backward,
    "log": log_backward,
    "sqrt": sqrt_backward,
    "abs": abs_backward,
    "clamp": clamp_backward,
    "relu": relu_backward,
    "tanh": tanh_backward,
    "sigmoid": sigmoid_backward,
    "mask_fill": mask_fill_backward,
    "recip": recip_backward,
    "sum": sum_backward,
    "sum_dim": sum_dim_backward,
    "mean": mean_backward,
    "mean_dim": mean_dim_backward,
    "max_dim": max_dim_backward,
    "log_softmax": log_softmax_backward,
    "softmax": softmax_backward,
    "reshape": reshape_backward,
    "swap_dims": swap_dims_backward,
    "slice": slice_backward,
    "cat": cat_backward,
    "gather": gather_backward,
}

# Ops whose output never carries a gradient (integer or boolean results, or plain-value
# helpers), with the reason. An op listed in neither table has no backward and is an error.
NON_DIFFERENTIABLE = {
    "argmax": "integer output",
    "equal": "boolean output",
    "equal_elem": "boolean output",
    "greater": "boolean output",
    "greater_elem": "boolean output",
    "greater_equal_elem": "boolean output",
    "lower": "boolean output",
    "lower_elem": "boolean output",
    "lower_equal_elem": "boolean output",
    "bool_not": "boolean output",
    "int": "integer output",
    "float": "conversion of an integer or boolean tensor (never tracked)",
    "cast": "burn's autodiff float_cast returns a new untracked tensor",
    "zeros_like": "constant",
    "ones_like": "constant",
    "full_like": "constant",
}

# Inputs of differentiable ops that never receive a gradient.
NON_DIFFERENTIABLE_INPUTS = {
    "gather": ("indices",),
    "mask_fill": ("mask",),
    "mask_where": ("mask",),
}


def rule_for(op: str):
    """The backward rule of `op`; raises MissingRuleError naming the op when it has none."""
    try:
        return BACKWARD_RULES[op]
    except KeyError:
        raise MissingRuleError(f"no backward rule registered for op '{op}'") from None
