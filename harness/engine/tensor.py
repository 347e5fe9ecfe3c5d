"""`Tensor`: an immutable NumPy array on a device, with burn's autodiff semantics.

Conventions (Python spelling of burn's `Tensor` API):

- `dtype` is a NumPy dtype object: `str(t.dtype) == "float32"`. Floats are float32 (default),
  float64, float16 or bfloat16 (ml_dtypes'; burn's `FloatDType.F16`/`BF16`), integers int64,
  masks bool. Float dtypes never mix: an op on two raises `DTypeMismatchError` (a TypeError)
  naming the op and the dtypes. A Python scalar operand is cast to the tensor's dtype first
  (`np.float32(s)`; to a half format through float32), as burn converts the scalar to the
  element type. Half tensors compute as burn-flex does (harness.engine.ops.half).
- Shapes are tuples. burn has no 0-d tensors; here a 0-d tensor can be built with
  `from_numpy`/`from_floats` and used in elementwise ops, but full reductions (`sum()`,
  `mean()`) always return shape `(1,)`.
- Ranges for `slice` are burn's `start..end`: `t.slice([(0, 2), None, (1, 3)])`; an entry can
  also be a Python `slice`, an int `i` (meaning `i..i+1`, the dim is kept) or None (full dim).
- `_data` is never mutated after construction; every op returns a new tensor.

The ops are primitives registered in `harness.engine.ops` (forward, backward rule, facts);
each method here binds one of them in a line (`harness.engine.methods`). The autodiff API
(`require_grad`, `backward`, `grad`...) comes from `harness.engine.autodiff.AutodiffMethods`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from . import autodiff, composites
from .autodiff import GRAD, AutodiffMethods, Node
from .device import Device
from .errors import AutodiffError, ShapeError
from .methods import (
    binary_method,
    binary_result,
    compare_method,
    indexed_method,
    param_binary_method,
    unary_method,
    unary_result,
    untracked_method,
    untracked_result,
    variadic_result,
)
from .ops import activation as activation_ops
from .ops import (
    conversions,
    elementwise,
    half_ops,
    indexing,
    lattice,
    layout,
    linalg,
    nn,
    ordering,
    reductions,
    rounding,
    selection,
    trig,
    unary,
)
from .ops import shape as shape_ops
from .ops.arrays import FLOAT_DTYPES, bool_mask, float_dtype, fmt, norm_dim
from .ops.half import dtype_of, is_half

__all__ = ["NON_OP_API", "Tensor"]

_PLAIN = Device.flex()
_AUTODIFF = _PLAIN.autodiff()
_NDARRAY = np.ndarray
_KEPT_DTYPES = (*FLOAT_DTYPES, np.dtype(np.int64), np.dtype(np.bool_))

# The public Tensor API that is not an op: construction, data access and the autodiff API.
# Every other public attribute is an op, which the op matrix must check against PyTorch
# (harness.opmatrix.registry.uncovered_methods).
NON_OP_API = frozenset(
    {
        *("from_floats", "from_ints", "from_numpy", "zeros", "ones", "full", "from_inner", "eye"),
        *("device", "shape", "dtype", "ndim", "dims", "numel", "numpy", "tolist", "into_scalar"),
        *("is_autodiff", "is_require_grad", "require_grad", "set_require_grad", "detach"),
        *("clone", "inner", "no_grad", "backward", "grad", "grad_remove", "grad_replace"),
        "all_close",  # a Python bool read back from the device (is_close is the op)
        *("rank", "empty", "empty_like"),  # the rank; tensors of unspecified values (zeros)
    }
)


class Tensor(AutodiffMethods):
    """An immutable tensor on `Device.flex()` or `Device.flex().autodiff()`.

    `_data` is the NumPy array, `device` the device, `_node` the autodiff node (None on the
    plain device). Build tensors with `from_floats`, `from_ints`, `from_numpy`, `zeros`...

    PyTorch difference: PyTorch's in-place ops (`a += 1`, `a[1:] *= 2`, `clamp_`) change what
    every alias and view of the storage sees. Here no op mutates a value: `a += 1` rebinds `a`
    to a new tensor, and other handles keep the old values.
    """

    __slots__ = ("_data", "_node", "device")

    # NumPy must defer to our reflected operators (np.float32(2) * t -> Tensor.__rmul__).
    __array_ufunc__ = None

    def __init__(self, data: np.ndarray, device: Device, node: Node | None) -> None:
        # NumPy returns scalars, not arrays, from ufuncs on 0-d arrays.
        self._data = data if data.__class__ is _NDARRAY else np.asarray(data)
        self.device = device
        self._node = node

    # ------------------------------------------------------------------ construction

    @staticmethod
    def _wrap(array: np.ndarray, device: Device) -> Tensor:
        """Internal: an untracked tensor around `array` without copying (the caller owns it).

        A marked leaf is `_leaf`; an optimizer update, which keeps the old flag, is `_updated`.
        """
        if device is _PLAIN:
            return Tensor(array, _PLAIN, None)
        return Tensor(array, _AUTODIFF, autodiff.untracked_node())

    @staticmethod
    def _leaf(array: np.ndarray, device: Device) -> Tensor:
        """Internal: a marked leaf around `array` without copying (plain tensor on `flex()`)."""
        if device is _PLAIN:
            return Tensor(array, _PLAIN, None)
        return Tensor(array, _AUTODIFF, autodiff.marked_leaf())

    @staticmethod
    def _plain(array: np.ndarray) -> Tensor:
        """Internal: a plain tensor around `array` (a gradient), without copying."""
        return Tensor(array, _PLAIN, None)

    def _updated(self, array: np.ndarray) -> Tensor:
        """Internal: a fresh leaf holding `array` (not copied) with this tensor's device and its
        require-grad flag: an optimizer update, burn's `Tensor::from_inner(new)` followed by
        `require_grad()` when the old value required it."""
        node = self._node
        if node is None:
            return Tensor(array, _PLAIN, None)
        if node.requirement is GRAD:
            return Tensor(array, _AUTODIFF, autodiff.marked_leaf())
        return Tensor(array, _AUTODIFF, autodiff.untracked_node())

    @staticmethod
    def from_floats(data, device: Device, dtype="float32") -> Tensor:
        """A float tensor from (nested) Python numbers; float32 unless `dtype` says otherwise
        ("float64", "float16", "bfloat16", or burn's `FloatDType.F16`...).

        A half tensor gets each number rounded to float32, then to the half format: burn's
        `from_floats` takes f32 elements and converts them with `f16::from_f32` (ml_dtypes'
        own float64-to-bfloat16 cast also goes through float32; NumPy's float16 would round
        the float64 directly)."""
        dt = float_dtype(dtype)
        if is_half(dt):
            arr = np.array(data, dtype=np.float32).astype(dt)
        else:
            arr = np.array(data, dtype=dt)
        return Tensor._wrap(arr, _check_device(device))

    @staticmethod
    def from_ints(data, device: Device) -> Tensor:
        """An int64 tensor (labels, indices) from (nested) Python integers."""
        arr = np.array(data)
        if arr.dtype.kind not in "iub" and arr.size:
            raise TypeError(f"from_ints: expected integers, got {arr.dtype}")
        return Tensor._wrap(arr.astype(np.int64), _check_device(device))

    @staticmethod
    def from_numpy(array: np.ndarray, device: Device) -> Tensor:
        """A tensor holding a copy of `array` (float32, float64, float16, bfloat16, int64 and
        bool kept as they are; other integer types become int64)."""
        arr = np.asarray(array)
        dt = arr.dtype
        if dt.kind in "iu" and dt != np.int64:
            dt = np.dtype(np.int64)
        elif dt.newbyteorder("=") in _KEPT_DTYPES:
            dt = dt.newbyteorder("=")
        else:
            raise TypeError(f"from_numpy: unsupported dtype {arr.dtype}")
        return Tensor._wrap(np.array(arr, dtype=dt, order="C", copy=True), _check_device(device))

    @staticmethod
    def zeros(shape, device: Device, dtype="float32") -> Tensor:
        """A tensor of zeros."""
        return Tensor._wrap(np.zeros(tuple(shape), dtype=dtype_of(dtype)), _check_device(device))

    @staticmethod
    def ones(shape, device: Device, dtype="float32") -> Tensor:
        """A tensor of ones."""
        return Tensor._wrap(np.ones(tuple(shape), dtype=dtype_of(dtype)), _check_device(device))

    @staticmethod
    def full(shape, value, device: Device, dtype="float32") -> Tensor:
        """A tensor filled with `value` (cast to `dtype`; to a half format through float32,
        as `from_floats`)."""
        dt = dtype_of(dtype)
        if is_half(dt) and value.__class__ is float:
            value = np.float32(value)
        return Tensor._wrap(np.full(tuple(shape), value, dtype=dt), _check_device(device))

    @staticmethod
    def empty(shape, device: Device, dtype="float32") -> Tensor:
        """A tensor whose values burn leaves unspecified (`Tensor::empty`); here zeros."""
        return Tensor.zeros(shape, device, dtype)

    def empty_like(self) -> Tensor:
        """`empty` with this tensor's shape, dtype and device (untracked)."""
        return Tensor._wrap(np.zeros_like(self._data), self.device)

    def rank(self) -> int:
        """The number of dims (burn's `rank()`)."""
        return self._data.ndim

    @staticmethod
    def eye(size: int, device: Device, dtype="float32") -> Tensor:
        """The `size x size` identity (burn's `Tensor::eye`: a scatter of ones into zeros, a
        constant, never tracked)."""
        return Tensor._wrap(np.eye(size, dtype=float_dtype(dtype)), _check_device(device))

    @staticmethod
    def from_inner(tensor: Tensor) -> Tensor:
        """An untracked autodiff tensor from a plain tensor (burn's `Tensor::from_inner`)."""
        if tensor._node is not None:
            raise AutodiffError("tensor is already associated with autodiff")
        return Tensor._wrap(tensor._data, _AUTODIFF)

    # ------------------------------------------------------------------ data access

    # attrgetter: the property runs in C, with no Python frame (losses read shapes per step).
    shape = property(attrgetter("_data.shape"), doc="The shape, as a tuple.")
    dtype = property(
        attrgetter("_data.dtype"),
        doc="The NumPy dtype object (`str(t.dtype)`: float32, float64, float16, bfloat16, int64 "
        "or bool).",
    )
    ndim = property(attrgetter("_data.ndim"), doc="The rank.")

    def dims(self) -> list[int]:
        """The shape as a list (burn's `dims()`)."""
        return list(self._data.shape)

    def numel(self) -> int:
        """The number of elements."""
        return self._data.size

    def numpy(self) -> np.ndarray:
        """A read-only view of the values: callers cannot mutate the engine's state.

        PyTorch difference: `torch.Tensor.numpy()` shares memory, so writing into the array
        changes the tensor; here the view is read-only and a write raises.
        """
        view = self._data.view()
        view.flags.writeable = False
        return view

    def tolist(self):
        """The values as nested Python lists."""
        return self._data.tolist()

    def into_scalar(self):
        """The single value of a one-element tensor, as a Python number."""
        if self._data.size != 1:
            raise ShapeError(f"into_scalar: expected one element, got shape {fmt(self.shape)}")
        return self._data.reshape(()).item()

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        view = self.numpy()
        return view if dtype is None else view.astype(dtype)

    def __repr__(self) -> str:
        if self._node is None:
            where = "flex()"
        else:
            where = f"flex().autodiff(), node={self._node.id}, {self._node.requirement}"
        values = np.array2string(self._data, threshold=20, separator=", ")
        return f"Tensor({values}, shape={fmt(self.shape)}, dtype={self.dtype}, {where})"

    # ------------------------------------------------------------------ ops (harness.engine.ops)

    add = binary_method(elementwise.ADD)
    sub = binary_method(elementwise.SUB)
    mul = binary_method(elementwise.MUL)
    div = binary_method(elementwise.DIV)
    matmul = binary_method(linalg.MATMUL)
    add_scalar = unary_method(elementwise.ADD_SCALAR)
    sub_scalar = unary_method(elementwise.SUB_SCALAR)
    mul_scalar = unary_method(elementwise.MUL_SCALAR)
    div_scalar = unary_method(elementwise.DIV_SCALAR)
    neg = unary_method(unary.NEG)
    recip = unary_method(unary.RECIP)
    exp = unary_method(unary.EXP)
    log = unary_method(unary.LOG)
    log1p = unary_method(unary.LOG1P)
    sqrt = unary_method(unary.SQRT)
    abs = unary_method(unary.ABS)
    relu = unary_method(nn.RELU)
    tanh = unary_method(nn.TANH)
    sigmoid = unary_method(nn.SIGMOID)
    log_sigmoid = unary_method(nn.LOG_SIGMOID)
    log_softmax = unary_method(nn.LOG_SOFTMAX)
    _softmax = unary_method(nn.SOFTMAX)
    sum = unary_method(reductions.SUM)
    mean = unary_method(reductions.MEAN)
    sum_dim = unary_method(reductions.SUM_DIM)
    mean_dim = unary_method(reductions.MEAN_DIM)
    max_dim = unary_method(reductions.MAX_DIM)
    min_dim = unary_method(reductions.MIN_DIM)
    argmax = untracked_method(reductions.ARGMAX)
    argmin = untracked_method(reductions.ARGMIN)
    reshape = unary_method(shape_ops.RESHAPE)
    swap_dims = unary_method(shape_ops.SWAP_DIMS)
    slice = unary_method(shape_ops.SLICE)
    equal = compare_method(conversions.EQUAL)
    equal_elem = compare_method(conversions.EQUAL_ELEM)
    greater = compare_method(conversions.GREATER)
    greater_elem = compare_method(conversions.GREATER_ELEM)
    greater_equal_elem = compare_method(conversions.GREATER_EQUAL_ELEM)
    lower = compare_method(conversions.LOWER)
    lower_elem = compare_method(conversions.LOWER_ELEM)
    lower_equal_elem = compare_method(conversions.LOWER_EQUAL_ELEM)
    greater_equal = compare_method(conversions.GREATER_EQUAL)
    lower_equal = compare_method(conversions.LOWER_EQUAL)
    not_equal = compare_method(conversions.NOT_EQUAL)
    not_equal_elem = compare_method(conversions.NOT_EQUAL_ELEM)
    is_nan = untracked_method(conversions.IS_NAN)
    is_inf = untracked_method(conversions.IS_INF)
    is_finite = untracked_method(conversions.IS_FINITE)
    bool_not = untracked_method(conversions.BOOL_NOT)
    int = untracked_method(conversions.TO_INT)
    float = untracked_method(conversions.TO_FLOAT)
    zeros_like = untracked_method(conversions.ZEROS_LIKE)
    ones_like = untracked_method(conversions.ONES_LIKE)
    full_like = untracked_method(conversions.FULL_LIKE)
    cumsum = unary_method(lattice.CUMSUM)
    slice_assign = param_binary_method(lattice.SLICE_ASSIGN)
    gather_nd = indexed_method(lattice.GATHER_ND)
    max_pair = binary_method(lattice.MAX_PAIR)
    permute = unary_method(layout.PERMUTE)
    flip = unary_method(layout.FLIP)
    expand = unary_method(layout.EXPAND)
    repeat_dim = unary_method(layout.REPEAT_DIM)
    unfold = unary_method(layout.UNFOLD)
    sin = unary_method(trig.SIN)
    cos = unary_method(trig.COS)
    tan = unary_method(trig.TAN)
    sinh = unary_method(trig.SINH)
    cosh = unary_method(trig.COSH)
    asin = unary_method(trig.ASIN)
    acos = unary_method(trig.ACOS)
    atan = unary_method(trig.ATAN)
    asinh = unary_method(trig.ASINH)
    acosh = unary_method(trig.ACOSH)
    atanh = unary_method(trig.ATANH)
    atan2 = binary_method(trig.ATAN2)
    hypot = binary_method(trig.HYPOT)
    round = unary_method(rounding.ROUND)
    floor = unary_method(rounding.FLOOR)
    ceil = unary_method(rounding.CEIL)
    trunc = unary_method(rounding.TRUNC)
    sign = unary_method(rounding.SIGN)
    erf = unary_method(activation_ops.ERF)
    powf = binary_method(elementwise.POWF)
    prod = unary_method(ordering.PROD)
    prod_dim = unary_method(ordering.PROD_DIM)
    cumprod = unary_method(ordering.CUMPROD)
    cummin = unary_method(ordering.CUMMIN)
    cummax = unary_method(ordering.CUMMAX)
    any = untracked_method(ordering.ANY)
    all = untracked_method(ordering.ALL)
    any_dim = untracked_method(ordering.ANY_DIM)
    all_dim = untracked_method(ordering.ALL_DIM)
    remainder = binary_method(selection.REMAINDER)
    remainder_scalar = unary_method(selection.REMAINDER_SCALAR)

    def cast(self, dtype) -> Tensor:
        """Convert a float tensor to another float dtype, tracked: the gradient is cast back
        (`harness.engine.ops.conversions.cast`). The same dtype gives back the tensor itself."""
        op = conversions.CAST
        out, saved = op.forward(self._data, dtype)
        return self if out is self._data else unary_result(self, op, out, saved)

    def softmax(self, dim: int) -> Tensor:
        """exp(x - max) / sum(exp(x - max)) along `dim` (`harness.engine.ops.nn.softmax`).

        A half tensor on the plain device takes flex's fused kernel, which rounds twice
        (`harness.engine.ops.half_ops.fused_softmax`); on the autodiff device burn runs the
        five-op composite, each op rounded (`half_ops.softmax`)."""
        if self._node is None and is_half(self._data.dtype):
            return Tensor(half_ops.fused_softmax(self._data, dim), _PLAIN, None)
        return self._softmax(dim)

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """`out[i][j] = self[i][indices[i][j]]` along `dim` (indices int64, same rank)."""
        out, saved = indexing.GATHER.forward(self._data, dim, indices._data)
        return unary_result(self, indexing.GATHER, out, saved)

    def mask_fill(self, mask: Tensor, value) -> Tensor:
        """`value` where `mask` (bool) is true, self elsewhere; no gradient where filled."""
        op = indexing.MASK_FILL
        out, saved = op.forward(self._data, bool_mask("mask_fill", mask._data), value)
        return unary_result(self, op, out, saved)

    def mask_where(self, mask: Tensor, value: Tensor) -> Tensor:
        """`value` where `mask` (bool) is true, self elsewhere (broadcasting)."""
        op = indexing.MASK_WHERE
        forward = functools.partial(op.forward, mask=bool_mask("mask_where", mask._data))
        return binary_result(self, value, op, forward)

    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Concatenate along `dim`; all other dims must match."""
        out, saved = shape_ops.CAT.forward(*(t._data for t in tensors), dim=dim)
        return variadic_result(tensors, shape_ops.CAT, out, saved)

    # ------------------------------------------------------------------ composites (as burn's)

    def rsub_scalar(self, value) -> Tensor:
        """`value - self` (Python's `2.0 - t`): `neg()` then `add_scalar`, as burn does."""
        return self.neg().add_scalar(value)

    def rdiv_scalar(self, value) -> Tensor:
        """`value / self` (Python's `2.0 / t`): `recip()` then `mul_scalar`, as burn does."""
        return self.recip().mul_scalar(value)

    def clamp(self, min=None, max=None) -> Tensor:
        """Clamp into [min, max] (either bound may be None). On the autodiff device it is burn's
        autodiff clamp (`harness.engine.ops.unary.clamp`: NaN kept, min > max gives min); on
        the plain device flex's fused clamps (`unary.flex_clamp`: clamp_min/clamp_max map NaN
        to the bound, min > max raises). Both PyTorch differences are stated there."""
        x = self._data
        if self._node is None:
            return Tensor(unary.flex_clamp(x, min, max), _PLAIN, None)
        out, saved = unary.CLAMP.forward(x, min, max)
        return unary_result(self, unary.CLAMP, out, saved)

    def clamp_min(self, min) -> Tensor:
        """Clamp from below (see `clamp` for NaN on each device)."""
        return self.clamp(min=min)

    def clamp_max(self, max) -> Tensor:
        """Clamp from above (see `clamp` for NaN on each device)."""
        return self.clamp(max=max)

    def powi_scalar(self, exponent: int) -> Tensor:
        """`self ** exponent` for an integer exponent, with burn-backend's default shortcuts
        (`harness.engine.ops.elementwise.powi_scalar`): 0 gives ones (untracked), 1 the tensor
        itself, 2 `x * x`, -1 `recip(x)`, -2 `recip(x * x)`; other exponents the power op."""
        k = int(exponent)
        if k == 0:
            return self.ones_like()
        if k == 1:
            return self
        if k == 2:
            return self.mul(self)
        if k == -1:
            return self.recip()
        if k == -2:
            return self.mul(self).recip()
        op = elementwise.POWI_SCALAR
        out, saved = op.forward(self._data, k)
        return unary_result(self, op, out, saved)

    def powf_scalar(self, exponent: float) -> Tensor:
        """`self ** exponent`, the exponent cast to this dtype; an integer-valued exponent
        takes `powi_scalar`'s path, as burn-backend's default `float_powf_scalar` does."""
        value = float(exponent)
        if value.is_integer():
            return self.powi_scalar(int(value))
        op = elementwise.POWF_SCALAR
        out, saved = op.forward(self._data, value)
        return unary_result(self, op, out, saved)

    def powi(self, other: Tensor) -> Tensor:
        """`self ** other` for an int tensor of exponents: burn-backend's default `float_powi`,
        `powf` with the exponents converted to this dtype (untracked)."""
        return self.powf(other.float(self.dtype))

    def square(self) -> Tensor:
        """`self * self`: burn's `square` is `powi_scalar(2)`, which the autodiff backend's
        default `float_powi_scalar` computes as `mul(x, x)`; the gradient is `g*x + g*x`."""
        return self.mul(self)

    def _sorted(self, dim: int, descending: bool) -> tuple[Tensor, Tensor]:
        op = ordering.SORT
        out, saved = op.forward(self._data, dim, descending)
        return unary_result(self, op, out, saved), untracked_result(self, saved.indices)

    def sort_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """(values sorted along `dim`, int64 indices where they came from): ties keep their
        order, -0.0 sorts before +0.0 and NaN last (`harness.engine.ops.ordering.sort`)."""
        return self._sorted(dim, False)

    def sort_descending_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """`sort_with_indices` in descending order (ties keep their order)."""
        return self._sorted(dim, True)

    def sort(self, dim: int) -> Tensor:
        """The values sorted along `dim` (see `sort_with_indices`)."""
        return self._sorted(dim, False)[0]

    def sort_descending(self, dim: int) -> Tensor:
        """The values sorted along `dim`, largest first."""
        return self._sorted(dim, True)[0]

    def argsort(self, dim: int) -> Tensor:
        """int64 indices sorting each lane along `dim` (see `sort_with_indices`)."""
        return untracked_result(self, ordering.ARGSORT.forward(self._data, dim, False))

    def argsort_descending(self, dim: int) -> Tensor:
        """int64 indices sorting each lane along `dim`, largest first."""
        return untracked_result(self, ordering.ARGSORT.forward(self._data, dim, True))

    def select(self, dim: int, indices: Tensor) -> Tensor:
        """The slices at `indices` (rank-1 int64) along `dim`, in that order."""
        out, saved = selection.SELECT.forward(self._data, dim, indices._data)
        return unary_result(self, selection.SELECT, out, saved)

    def select_assign(self, dim: int, indices: Tensor, values: Tensor, update="add") -> Tensor:
        """`values` added at `indices` along `dim` (burn's `IndexingUpdateOp::Add`; flex has
        no `Assign`: see harness.engine.ops.selection)."""
        op = selection.SELECT_ASSIGN
        forward = functools.partial(op.forward, dim=dim, indices=indices._data, update=update)
        return binary_result(self, values, op, forward)

    def scatter(self, dim: int, indices: Tensor, values: Tensor, update="add") -> Tensor:
        """`values[i][j]` added at `[i][indices[i][j]]` along `dim` (burn's `scatter` with
        `IndexingUpdateOp::Add`, torch's `scatter_add`)."""
        op = selection.SCATTER
        forward = functools.partial(op.forward, dim=dim, indices=indices._data, update=update)
        return binary_result(self, values, op, forward)

    def scatter_nd(self, indices: Tensor, values: Tensor, update="add") -> Tensor:
        """`values` added (or, `update="assign"`, written) at the multi-indices `indices`
        (their last axis addresses the leading dims): burn's `scatter_nd`."""
        op = selection.SCATTER_ND
        forward = functools.partial(op.forward, indices=indices._data, update=update)
        return binary_result(self, values, op, forward)

    def cross(self, other: Tensor, dim: int) -> Tensor:
        """The cross product of 3-vectors along `dim`, broadcasting the other dims."""
        op = selection.CROSS
        return binary_result(self, other, op, functools.partial(op.forward, dim=dim))

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """(max over `dim`, int64 index of the first maximum), both keeping `dim`."""
        return self.max_dim(dim), self.argmax(dim)

    def min_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """(min over `dim`, int64 index of the first minimum), both keeping `dim`."""
        return self.min_dim(dim), self.argmin(dim)

    def max(self) -> Tensor:
        """Max of all elements, shape (1,)."""
        return self.reshape([-1]).max_dim(0)

    def min(self) -> Tensor:
        """Min of all elements, shape (1,): `reshape([-1]).min_dim(0)`, as burn's default.
        PyTorch difference: on ties the whole gradient goes to the first minimum, where
        torch's min() splits it evenly."""
        return self.reshape([-1]).min_dim(0)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Dims `start_dim` to `end_dim` (inclusive; negative counts from the end) merged into
        one, as burn's `Tensor::flatten(start_dim, end_dim)` (crates/burn-tensor/src/tensor/api/
        base.rs, checks `TensorCheck::flatten` in check.rs, burn
        2c06be351006851d42fdb6df16b976f4a82d9747; tests `should_flatten_*` in
        crates/burn-backend-tests/tests/tensor/float/ops/flatten.rs). A reshape: the gradient
        is the output gradient reshaped back.

        burn requires both arguments and the result rank as a type parameter; the defaults
        `(0, -1)` are burn's `flatten(0, D - 1)` and `torch.flatten`'s. A rank-0 tensor (burn
        has none) is read as rank 1, as torch does: it becomes shape `[1]`.
        """
        shape = self._data.shape or (1,)
        start = norm_dim("flatten", start_dim, len(shape))
        end = norm_dim("flatten", end_dim, len(shape))
        if start > end:  # burn's text; torch: "start_dim cannot come after end_dim"
            raise ShapeError(
                f"flatten: the start dim ({start}) must be smaller than or equal to the end dim "
                f"({end})"
            )
        merged = math.prod(shape[start : end + 1])
        return self.reshape([*shape[:start], merged, *shape[end + 1 :]])

    def unsqueeze(self) -> Tensor:
        """Add a leading dim of size 1 (burn's `unsqueeze::<D+1>()`)."""
        return self.reshape((1, *self._data.shape))

    def unsqueeze_dim(self, dim: int) -> Tensor:
        """Insert a dim of size 1 at `dim`."""
        shape = list(self._data.shape)
        shape.insert(norm_dim("unsqueeze_dim", dim, len(shape) + 1), 1)
        return self.reshape(shape)

    def squeeze(self, dim: int | None = None) -> Tensor:
        """Remove dim `dim` (which must have size 1), or every size-1 dim when None."""
        if dim is None:
            return self.reshape([n for n in self._data.shape if n != 1])
        return self.squeeze_dim(dim)

    def squeeze_dim(self, dim: int) -> Tensor:
        """Remove dim `dim`, which must have size 1."""
        shape = list(self._data.shape)
        d = norm_dim("squeeze_dim", dim, len(shape))
        if shape[d] != 1:
            raise ShapeError(f"squeeze_dim: dim {dim} of shape {fmt(self.shape)} is not 1")
        del shape[d]
        return self.reshape(shape)

    def t(self) -> Tensor:
        """`transpose()` (burn's `t`)."""
        return self.transpose()

    def transpose(self) -> Tensor:
        """Swap the last two dims."""
        if self._data.ndim < 2:
            raise ShapeError(f"transpose: needs rank >= 2, got shape {fmt(self.shape)}")
        return self.swap_dims(-2, -1)

    # ------------------------------------------------------------------ burn-tensor composites

    stack = staticmethod(composites.stack)
    narrow = composites.narrow
    grid_sample_2d = composites.grid_sample_2d
    chunk = composites.chunk
    split = composites.split
    split_with_sizes = composites.split_with_sizes
    roll = composites.roll
    roll_dim = composites.roll_dim
    repeat = composites.repeat
    movedim = composites.movedim
    squeeze_dims = composites.squeeze_dims
    unsqueeze_dims = composites.unsqueeze_dims
    tril = composites.tril
    triu = composites.triu
    topk = composites.topk
    topk_with_indices = composites.topk_with_indices
    argtopk = composites.argtopk
    median = composites.median
    median_with_indices = composites.median_with_indices
    var = composites.var
    var_bias = composites.var_bias
    var_mean = composites.var_mean
    var_mean_bias = composites.var_mean_bias
    min_pair = composites.min_pair
    mask_select = composites.mask_select
    one_hot = composites.one_hot
    dot = composites.dot
    fmod = composites.fmod
    fmod_scalar = composites.fmod_scalar
    sum_dims = composites.sum_dims
    mean_dims = composites.mean_dims
    prod_dims = composites.prod_dims
    min_dims = composites.min_dims
    max_dims = composites.max_dims
    sum_dims_squeeze = composites.sum_dims_squeeze
    max_abs = composites.max_abs
    max_abs_dim = composites.max_abs_dim
    max_abs_dims = composites.max_abs_dims
    cov = composites.cov
    is_close = composites.is_close
    all_close = composites.all_close
    contains_nan = composites.contains_nan
    deg2rad = composites.deg2rad
    rad2deg = composites.rad2deg
    bool = composites.bool_of
    one_hot_fill = composites.one_hot_fill
    slice_dim = composites.slice_dim
    select_dim = composites.select_dim
    slice_fill = composites.slice_fill
    take = composites.take
    iter_dim = composites.iter_dim
    pad = composites.pad
    # burn's `*_scalar` comparisons; the `*_elem` names are its aliases of them.
    equal_scalar = equal_elem
    not_equal_scalar = not_equal_elem
    greater_scalar = greater_elem
    greater_equal_scalar = greater_equal_elem
    lower_scalar = lower_elem
    lower_equal_scalar = lower_equal_elem

    # ------------------------------------------------------------------ operators

    def __add__(self, other):
        return self.add(other) if other.__class__ is Tensor else self.add_scalar(other)

    def __sub__(self, other):
        return self.sub(other) if other.__class__ is Tensor else self.sub_scalar(other)

    def __mul__(self, other):
        return self.mul(other) if other.__class__ is Tensor else self.mul_scalar(other)

    def __truediv__(self, other):
        return self.div(other) if other.__class__ is Tensor else self.div_scalar(other)

    __radd__ = add_scalar
    __rsub__ = rsub_scalar
    __rmul__ = mul_scalar
    __rtruediv__ = rdiv_scalar
    __neg__ = neg
    __matmul__ = matmul


def _check_device(device) -> Device:
    if device is not _PLAIN and device is not _AUTODIFF:
        raise TypeError(f"expected a Device, got {device!r}")
    return device
