"""`Tensor`: an immutable NumPy array on a device, with burn's autodiff semantics.

Conventions (Python spelling of burn's `Tensor` API):

- `dtype` is a NumPy dtype object: `str(t.dtype) == "float32"`. Floats are float32 (default)
  or float64, integers int64, masks bool. Float32 and float64 never mix: an op on both raises
  `DTypeMismatchError` (a TypeError) naming the op and the dtypes. A Python scalar operand is
  cast to the tensor's dtype first (`np.float32(s)`), as burn converts the scalar to the
  element type.
- Shapes are tuples. burn has no 0-d tensors; here a 0-d tensor can be built with
  `from_numpy`/`from_floats` and used in elementwise ops, but full reductions (`sum()`,
  `mean()`) always return shape `(1,)`.
- Ranges for `slice` are burn's `start..end`: `t.slice([(0, 2), None, (1, 3)])`; an entry can
  also be a Python `slice`, an int `i` (meaning `i..i+1`, the dim is kept) or None (full dim).
- `_data` is never mutated after construction; every op returns a new tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import autodiff as ad
from .autodiff import GRAD, GRAD_IN_BACKWARD, NONE, Gradients, Node, next_node_id
from .device import Device
from .errors import (
    NON_LEAF_REQUIRE_GRAD,
    REPLACEMENT_NOT_INNER,
    REQUIRES_AUTODIFF,
    AutodiffError,
    DeviceMismatchError,
    DTypeMismatchError,
    ShapeError,
)
from .rules import BACKWARD_RULES, NON_DIFFERENTIABLE, along_axis_index, matmul, rule_for, zero_of

__all__ = ["Tensor"]

_PLAIN = Device.flex()
_AUTODIFF = _PLAIN.autodiff()
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INT64 = np.dtype(np.int64)
_KEPT_DTYPES = (*_FLOAT_DTYPES, _INT64, np.dtype(np.bool_))

# Every op of the Tensor API; each has a backward rule or is declared non-differentiable
# (tests/engine/test_autodiff_rules.py checks this list against the tables).
TENSOR_OPS = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "matmul": "matmul",
    "mask_where": "mask_where",
    "add_scalar": "add_scalar",
    "sub_scalar": "sub_scalar",
    "rsub_scalar": "neg",
    "mul_scalar": "mul_scalar",
    "div_scalar": "div_scalar",
    "rdiv_scalar": "recip",
    "recip": "recip",
    "powi_scalar": "powi_scalar",
    "powf_scalar": "powf_scalar",
    "neg": "neg",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "abs": "abs",
    "clamp": "clamp",
    "clamp_min": "clamp",
    "clamp_max": "clamp",
    "relu": "relu",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "mask_fill": "mask_fill",
    "cast": "cast",
    "sum": "sum",
    "sum_dim": "sum_dim",
    "mean": "mean",
    "mean_dim": "mean_dim",
    "max_dim": "max_dim",
    "max_dim_with_indices": "max_dim",
    "max": "max_dim",
    "log_softmax": "log_softmax",
    "softmax": "softmax",
    "reshape": "reshape",
    "unsqueeze": "reshape",
    "unsqueeze_dim": "reshape",
    "squeeze": "reshape",
    "squeeze_dim": "reshape",
    "flatten": "reshape",
    "swap_dims": "swap_dims",
    "transpose": "swap_dims",
    "slice": "slice",
    "cat": "cat",
    "gather": "gather",
    "argmax": "argmax",
    "equal": "equal",
    "equal_elem": "equal_elem",
    "greater": "greater",
    "greater_elem": "greater_elem",
    "greater_equal_elem": "greater_equal_elem",
    "lower": "lower",
    "lower_elem": "lower_elem",
    "lower_equal_elem": "lower_equal_elem",
    "bool_not": "bool_not",
    "int": "int",
    "float": "float",
    "zeros_like": "zeros_like",
    "ones_like": "ones_like",
    "full_like": "full_like",
}


# An op above with neither a rule nor a declaration as non-differentiable fails loudly here, at
# import, naming the op. Ops then read the one table itself at call time (`_R` is the same
# dict), so there is no second copy that could disagree with it.
for _op in sorted(set(TENSOR_OPS.values()) - set(NON_DIFFERENTIABLE)):
    rule_for(_op)
_R = BACKWARD_RULES


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def _dtype_error(op: str, a: np.ndarray, b: np.ndarray) -> DTypeMismatchError:
    return DTypeMismatchError(
        f"{op}: dtype mismatch: {a.dtype} and {b.dtype} (no implicit promotion; "
        f"cast one operand with .cast(...))"
    )


def _broadcast_error(op: str, a: np.ndarray, b: np.ndarray) -> ShapeError:
    return ShapeError(
        f"{op}: shapes {_fmt(a.shape)} and {_fmt(b.shape)} cannot be broadcast together"
    )


def _float_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _FLOAT_DTYPES:
        raise TypeError(f"float tensors are float32 or float64, got {dt}")
    return dt


def _check_device(device) -> Device:
    if device is not _PLAIN and device is not _AUTODIFF:
        raise TypeError(f"expected a Device, got {device!r}")
    return device


def _norm_dim(op: str, dim: int, ndim: int) -> int:
    if dim.__class__ is int and 0 <= dim < ndim:
        return dim
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{op}: dim {dim} out of range for a tensor of rank {ndim}")
    return dim % ndim


class Tensor:
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
        self._data = data if data.__class__ is np.ndarray else np.asarray(data)
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
        return Tensor(array, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))

    @staticmethod
    def _leaf(array: np.ndarray, device: Device) -> Tensor:
        """Internal: a marked leaf around `array` without copying (plain tensor on `flex()`)."""
        if device is _PLAIN:
            return Tensor(array, _PLAIN, None)
        return Tensor(array, _AUTODIFF, Node(next_node_id(), GRAD, None, 0, None, None))

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
            return Tensor(array, _AUTODIFF, Node(next_node_id(), GRAD, None, 0, None, None))
        return Tensor(array, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))

    @staticmethod
    def from_floats(data, device: Device, dtype="float32") -> Tensor:
        """A float tensor from (nested) Python numbers; float32 unless `dtype="float64"`."""
        arr = np.array(data, dtype=_float_dtype(dtype))
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
        """A tensor holding a copy of `array` (float32, float64, int64 and bool kept as they are;
        other integer types become int64)."""
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
        return Tensor._wrap(np.zeros(tuple(shape), dtype=dtype), _check_device(device))

    @staticmethod
    def ones(shape, device: Device, dtype="float32") -> Tensor:
        """A tensor of ones."""
        return Tensor._wrap(np.ones(tuple(shape), dtype=dtype), _check_device(device))

    @staticmethod
    def full(shape, value, device: Device, dtype="float32") -> Tensor:
        """A tensor filled with `value` (cast to `dtype`)."""
        return Tensor._wrap(np.full(tuple(shape), value, dtype=dtype), _check_device(device))

    @staticmethod
    def from_inner(tensor: Tensor) -> Tensor:
        """An untracked autodiff tensor from a plain tensor (burn's `Tensor::from_inner`)."""
        if tensor._node is not None:
            raise AutodiffError("tensor is already associated with autodiff")
        return Tensor._wrap(tensor._data, _AUTODIFF)

    def zeros_like(self) -> Tensor:
        """Zeros with this tensor's shape, dtype and device (untracked)."""
        return Tensor._wrap(np.zeros_like(self._data), self.device)

    def ones_like(self) -> Tensor:
        """Ones with this tensor's shape, dtype and device (untracked)."""
        return Tensor._wrap(np.ones_like(self._data), self.device)

    def full_like(self, value) -> Tensor:
        """`value` everywhere, with this tensor's shape, dtype and device (untracked)."""
        return Tensor._wrap(np.full_like(self._data, value), self.device)

    # ------------------------------------------------------------------ data access

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple."""
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype object (`str(t.dtype)` is "float32", "float64", "int64" or "bool")."""
        return self._data.dtype

    @property
    def ndim(self) -> int:
        """The rank."""
        return self._data.ndim

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
            raise ShapeError(f"into_scalar: expected one element, got shape {_fmt(self.shape)}")
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
        return f"Tensor({values}, shape={_fmt(self.shape)}, dtype={self.dtype}, {where})"

    # ------------------------------------------------------------------ autodiff API

    def is_autodiff(self) -> bool:
        """True when the tensor lives on the autodiff device."""
        return self._node is not None

    def is_require_grad(self) -> bool:
        """True only for leaves marked with `require_grad()`.

        PyTorch difference: `requires_grad` is also True for every op output that depends on
        a tracked leaf; burn reports False for such intermediates.
        """
        node = self._node
        return node is not None and node.requirement is GRAD

    def require_grad(self) -> Tensor:
        """Mark this leaf as requiring a gradient (burn's `require_grad`).

        No-op on a marked leaf; an untracked tensor becomes a marked leaf with the same node id;
        an op output (an intermediate) raises. On the plain device it is a no-op, as in burn.

        PyTorch difference: `requires_grad_()` on a non-leaf that already requires grad returns
        it unchanged (only `requires_grad_(False)` raises); here marking an intermediate raises.
        """
        node = self._node
        if node is None or node.requirement is GRAD:
            return self
        if node.requirement is GRAD_IN_BACKWARD:
            raise AutodiffError(NON_LEAF_REQUIRE_GRAD)
        if self._data.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"require_grad: only float tensors can be tracked, got {self.dtype}")
        return Tensor(self._data, _AUTODIFF, Node(node.id, GRAD, None, 0, None, None))

    def set_require_grad(self, flag: bool) -> Tensor:
        """burn's `set_require_grad`: `require_grad()` for True, an untracked leaf for False."""
        if flag:
            return self.require_grad()
        if self._node is None or self._node.requirement is NONE:
            return self
        return Tensor._wrap(self._data, _AUTODIFF)

    def detach(self) -> Tensor:
        """A new leaf with a new node id and the same values.

        PyTorch difference: PyTorch's `detach()` drops `requires_grad`; burn **keeps** the flag
        of a marked leaf (the detached tensor is a new marked leaf). A detached intermediate is
        an untracked leaf, since `is_require_grad()` was False for it.
        """
        node = self._node
        if node is None:
            return self
        if node.requirement is GRAD:
            return Tensor._leaf(self._data, _AUTODIFF)
        return Tensor._wrap(self._data, _AUTODIFF)

    def clone(self) -> Tensor:
        """An alias: same node, same id, same values; no graph node is created.

        PyTorch difference: `torch.clone` is a graph op with its own backward node; burn's
        clone copies a handle, so gradients of the clone are the original's gradients.
        """
        return Tensor(self._data, self.device, self._node)

    def inner(self) -> Tensor:
        """The plain tensor with the same values, on the inner device, off the graph."""
        if self._node is None:
            raise AutodiffError(REQUIRES_AUTODIFF)
        return Tensor(self._data, _PLAIN, None)

    def backward(self) -> Gradients:
        """Backpropagate from this tensor and return a new `Gradients` container.

        PyTorch differences: any shape is accepted (the seed is ones of this shape, as if
        `sum()` came first); the result is returned, never stored on tensors; intermediates get
        no gradient (no `retain_grad`); the steps run are consumed, so a second `backward()` on
        the same root raises; gradients are plain tensors, so second order is an error (no
        `create_graph`).
        """
        return ad.backward(self._node, self._data.shape, self._data.dtype)

    def _require_autodiff_node(self) -> Node:
        if self._node is None:
            raise AutodiffError(REQUIRES_AUTODIFF)
        return self._node

    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in `grads` as a plain tensor, or None (intermediate,
        untracked, unreachable, another node, entry taken, other container).

        PyTorch differences: PyTorch reads `.grad`, an attribute that accumulates; reading it on
        a non-leaf warns and `retain_grad()` keeps it. Here the gradient is looked up in the
        container one `backward()` returned; an intermediate's entry is dropped as soon as its
        step has run, None comes back without a warning, and there is no `retain_grad`. On a
        tensor of the plain device it raises ("Requires autodiff tensor.") where PyTorch's
        `.grad` is None. A param updated by an optimizer is a new node, so an older container
        has no entry for it (PyTorch's updated param still shows its `.grad`).
        """
        g = grads._grads.get(self._require_autodiff_node().id)
        return None if g is None else Tensor(g, _PLAIN, None)

    def grad_remove(self, grads: Gradients) -> Tensor | None:
        """Take this tensor's gradient out of `grads` (None when there is none)."""
        g = grads._grads.pop(self._require_autodiff_node().id, None)
        return None if g is None else Tensor(g, _PLAIN, None)

    def grad_replace(self, grads: Gradients, grad: Tensor) -> None:
        """Remove any entry for this tensor and insert `grad` (a plain tensor) instead.

        PyTorch difference: PyTorch edits `x.grad` in place (`x.grad.clamp_(...)`), so every
        handle to the old gradient sees the edit. Here the container gets a new entry; a
        gradient read before the replacement keeps its values.
        """
        node = self._require_autodiff_node()
        if grad._node is not None:
            raise AutodiffError(REPLACEMENT_NOT_INNER)
        grads._grads.pop(node.id, None)
        grads._grads[node.id] = grad._data

    # ------------------------------------------------------------------ graph plumbing

    def _unary(self, out: np.ndarray, rule, saved) -> Tensor:
        node = self._node
        if node is None:
            return Tensor(out, _PLAIN, None)
        if node.requirement is NONE:
            return Tensor(out, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))
        return Tensor(
            out,
            _AUTODIFF,
            Node(next_node_id(), GRAD_IN_BACKWARD, (node,), node.order + 1, rule, saved),
        )

    def _untracked(self, out: np.ndarray) -> Tensor:
        if self._node is None:
            return Tensor(out, _PLAIN, None)
        return Tensor(out, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))

    def _binary(self, other: Tensor, out: np.ndarray, rule, saved) -> Tensor:
        na = self._node
        nb = other._node
        if na is None or nb is None:
            if na is not nb:
                raise DeviceMismatchError(
                    f"{rule.__name__.removesuffix('_backward')}: tensors on different devices: "
                    f"{self.device!r} and {other.device!r}"
                )
            return Tensor(out, _PLAIN, None)
        # Branches rather than max() and conditional tuples: this runs for every binary op.
        if na.requirement is NONE:
            if nb.requirement is NONE:
                return Tensor(out, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))
            parents = (None, nb)
            order = nb.order + 1
        elif nb.requirement is NONE:
            parents = (na, None)
            order = na.order + 1
        else:
            parents = (na, nb)
            order = (na.order if na.order > nb.order else nb.order) + 1
        return Tensor(
            out, _AUTODIFF, Node(next_node_id(), GRAD_IN_BACKWARD, parents, order, rule, saved)
        )

    def _scalar(self, value):
        cls = value.__class__
        if cls is not float and cls is not int and np.ndim(value) != 0:
            raise TypeError(f"expected a scalar or a Tensor operand, got {cls.__name__}")
        return self._data.dtype.type(value)

    # ------------------------------------------------------------------ arithmetic

    def add(self, other: Tensor) -> Tensor:
        """Elementwise `self + other` with broadcasting."""
        a = self._data
        b = other._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("add", a, b)
        try:
            out = a + b
        except ValueError:
            raise _broadcast_error("add", a, b) from None
        return self._binary(other, out, _R["add"], (a.shape, b.shape))

    def sub(self, other: Tensor) -> Tensor:
        """Elementwise `self - other` with broadcasting."""
        a = self._data
        b = other._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("sub", a, b)
        try:
            out = a - b
        except ValueError:
            raise _broadcast_error("sub", a, b) from None
        return self._binary(other, out, _R["sub"], (a.shape, b.shape))

    def mul(self, other: Tensor) -> Tensor:
        """Elementwise `self * other` with broadcasting."""
        a = self._data
        b = other._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("mul", a, b)
        try:
            out = a * b
        except ValueError:
            raise _broadcast_error("mul", a, b) from None
        return self._binary(other, out, _R["mul"], (a, b))

    def div(self, other: Tensor) -> Tensor:
        """Elementwise `self / other` with broadcasting."""
        a = self._data
        b = other._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("div", a, b)
        try:
            out = a / b
        except ValueError:
            raise _broadcast_error("div", a, b) from None
        return self._binary(other, out, _R["div"], (a, b))

    def add_scalar(self, value) -> Tensor:
        """`self + value`, the scalar cast to this dtype first."""
        return self._unary(self._data + self._scalar(value), _R["add_scalar"], None)

    def sub_scalar(self, value) -> Tensor:
        """`self - value`, the scalar cast to this dtype first."""
        return self._unary(self._data - self._scalar(value), _R["sub_scalar"], None)

    def rsub_scalar(self, value) -> Tensor:
        """`value - self` (Python's `2.0 - t`): `neg()` then `add_scalar`, as burn does."""
        return self.neg().add_scalar(value)

    def mul_scalar(self, value) -> Tensor:
        """`self * value`, the scalar cast to this dtype first."""
        s = self._scalar(value)
        return self._unary(self._data * s, _R["mul_scalar"], s)

    def div_scalar(self, value) -> Tensor:
        """`self / value`, the scalar cast to this dtype first."""
        s = self._scalar(value)
        return self._unary(self._data / s, _R["div_scalar"], s)

    def rdiv_scalar(self, value) -> Tensor:
        """`value / self` (Python's `2.0 / t`): `recip()` then `mul_scalar`, as burn does."""
        return self.recip().mul_scalar(value)

    def recip(self) -> Tensor:
        """Elementwise 1/x."""
        x = self._data
        return self._unary(np.reciprocal(x), _R["recip"], x)

    def __add__(self, other):
        if other.__class__ is Tensor:
            return self.add(other)
        return self.add_scalar(other)

    def __radd__(self, other):
        return self.add_scalar(other)

    def __sub__(self, other):
        if other.__class__ is Tensor:
            return self.sub(other)
        return self.sub_scalar(other)

    def __rsub__(self, other):
        return self.rsub_scalar(other)

    def __mul__(self, other):
        if other.__class__ is Tensor:
            return self.mul(other)
        return self.mul_scalar(other)

    def __rmul__(self, other):
        return self.mul_scalar(other)

    def __truediv__(self, other):
        if other.__class__ is Tensor:
            return self.div(other)
        return self.div_scalar(other)

    def __rtruediv__(self, other):
        return self.rdiv_scalar(other)

    def __neg__(self):
        return self.neg()

    def __matmul__(self, other):
        return self.matmul(other)

    def neg(self) -> Tensor:
        """`-self`."""
        return self._unary(np.negative(self._data), _R["neg"], None)

    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product over the last two dims; leading (batch) dims broadcast."""
        a = self._data
        b = other._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("matmul", a, b)
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
            raise ShapeError(
                f"matmul: shapes {_fmt(a.shape)} and {_fmt(b.shape)} are incompatible "
                "(need rank >= 2 and lhs.shape[-1] == rhs.shape[-2])"
            )
        try:
            out = matmul(a, b)
        except ValueError:
            raise _broadcast_error("matmul", a, b) from None
        return self._binary(other, out, _R["matmul"], (a, b))

    def powi_scalar(self, exponent: int) -> Tensor:
        """`self ** exponent` for an integer exponent."""
        x = self._data
        p = self._scalar(int(exponent))
        return self._unary(x**p, _R["powi_scalar"], (x, p))

    def powf_scalar(self, exponent: float) -> Tensor:
        """`self ** exponent` for a float exponent (cast to this dtype first)."""
        x = self._data
        p = self._scalar(exponent)
        return self._unary(x**p, _R["powf_scalar"], (x, p))

    # ------------------------------------------------------------------ elementwise math

    def exp(self) -> Tensor:
        """Elementwise e**x."""
        out = np.exp(self._data)
        return self._unary(out, _R["exp"], out)

    def log(self) -> Tensor:
        """Elementwise natural logarithm."""
        x = self._data
        return self._unary(np.log(x), _R["log"], x)

    def sqrt(self) -> Tensor:
        """Elementwise square root."""
        x = self._data
        return self._unary(np.sqrt(x), _R["sqrt"], x)

    def abs(self) -> Tensor:
        """Elementwise absolute value (subgradient 0 at 0)."""
        x = self._data
        return self._unary(np.abs(x), _R["abs"], x)

    def tanh(self) -> Tensor:
        """Elementwise hyperbolic tangent."""
        out = np.tanh(self._data)
        return self._unary(out, _R["tanh"], out)

    def sigmoid(self) -> Tensor:
        """Elementwise logistic function, computed without overflow for large |x|."""
        x = self._data
        e = np.exp(-np.abs(x))
        out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
        return self._unary(out, _R["sigmoid"], out)

    def relu(self) -> Tensor:
        """max(x, 0); the gradient at exactly 0 is 0 (burn masks where output <= 0)."""
        x = self._data
        out = np.maximum(x, zero_of(x.dtype))
        return self._unary(out, _R["relu"], out)

    def clamp(self, min=None, max=None) -> Tensor:
        """Clamp into [min, max] (either bound may be None); the gradient passes at the bounds."""
        x = self._data
        lo = None if min is None else self._scalar(min)
        hi = None if max is None else self._scalar(max)
        if lo is None and hi is None:
            raise ValueError("clamp: give min, max or both")
        out = np.clip(x, lo, hi)
        return self._unary(out, _R["clamp"], (x, lo, hi))

    def clamp_min(self, min) -> Tensor:
        """Clamp from below."""
        return self.clamp(min=min)

    def clamp_max(self, max) -> Tensor:
        """Clamp from above."""
        return self.clamp(max=max)

    def cast(self, dtype) -> Tensor:
        """Convert a float tensor to another float dtype.

        Like burn's autodiff `float_cast`, the result is a new untracked tensor: gradients do
        not flow through a cast (PyTorch's `.to(dtype)` is differentiable).
        """
        dt = _float_dtype(dtype)
        x = self._data
        if x.dtype == dt:
            return self
        return self._untracked(x.astype(dt))

    # ------------------------------------------------------------------ masks

    def mask_fill(self, mask: Tensor, value) -> Tensor:
        """`value` where `mask` (bool) is true, self elsewhere; no gradient where filled."""
        m = _bool_mask("mask_fill", mask)
        x = self._data
        try:
            out = np.where(m, self._scalar(value), x)
        except ValueError:
            raise _broadcast_error("mask_fill", x, m) from None
        if out.shape != x.shape:
            raise _broadcast_error("mask_fill", x, m)
        return self._unary(out, _R["mask_fill"], m)

    def mask_where(self, mask: Tensor, value: Tensor) -> Tensor:
        """`value` where `mask` (bool) is true, self elsewhere (broadcasting)."""
        m = _bool_mask("mask_where", mask)
        a = self._data
        b = value._data
        if a.dtype is not b.dtype and a.dtype != b.dtype:
            raise _dtype_error("mask_where", a, b)
        try:
            out = np.where(m, b, a)
        except ValueError:
            raise _broadcast_error("mask_where", a, b) from None
        return self._binary(value, out, _R["mask_where"], (m, a.shape, b.shape))

    # ------------------------------------------------------------------ reductions

    def sum(self) -> Tensor:
        """Sum of all elements, shape (1,).

        PyTorch difference: burn has no 0-d tensors; PyTorch returns a 0-d tensor.
        """
        x = self._data
        out = np.add.reduce(x, axis=None, keepdims=False).reshape(1)
        return self._unary(out, _R["sum"], x.shape)

    def mean(self) -> Tensor:
        """Mean of all elements, shape (1,) (PyTorch returns 0-d)."""
        x = self._data
        n = x.dtype.type(x.size)
        # sum then divide in the tensor dtype, as burn does (np.mean divides in float64).
        # np.array((scalar,)) keeps the scalar's dtype, in half the time of scalar.reshape(1).
        out = np.array((np.add.reduce(x, axis=None) / n,))
        return self._unary(out, _R["mean"], (x.shape, n))

    def sum_dim(self, dim: int) -> Tensor:
        """Sum over `dim`, keeping it with size 1 (PyTorch drops it by default)."""
        x = self._data
        d = _norm_dim("sum_dim", dim, x.ndim)
        out = np.add.reduce(x, axis=d, keepdims=True)
        return self._unary(out, _R["sum_dim"], x.shape)

    def mean_dim(self, dim: int) -> Tensor:
        """Mean over `dim`, keeping it with size 1 (PyTorch drops it by default)."""
        x = self._data
        d = _norm_dim("mean_dim", dim, x.ndim)
        n = x.dtype.type(x.shape[d])
        out = np.add.reduce(x, axis=d, keepdims=True) / n
        return self._unary(out, _R["mean_dim"], (x.shape, n))

    def max_dim(self, dim: int) -> Tensor:
        """Max over `dim`, keeping it; on ties the gradient goes to the first maximum."""
        return self.max_dim_with_indices(dim)[0]

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """(max over `dim`, int64 index of the first maximum), both keeping `dim`."""
        x = self._data
        d = _norm_dim("max_dim", dim, x.ndim)
        idx = np.argmax(x, axis=d, keepdims=True)
        out = np.take_along_axis(x, idx, axis=d)
        values = self._unary(out, _R["max_dim"], (x.shape, idx, d))
        return values, self._untracked(idx)

    def max(self) -> Tensor:
        """Max of all elements, shape (1,)."""
        return self.reshape([-1]).max_dim(0)

    def argmax(self, dim: int) -> Tensor:
        """int64 index of the first maximum along `dim`, keeping it (not differentiable)."""
        x = self._data
        d = _norm_dim("argmax", dim, x.ndim)
        return self._untracked(np.argmax(x, axis=d, keepdims=True))

    def log_softmax(self, dim: int) -> Tensor:
        """log(softmax(x)) along `dim`, stable as burn's: (x - max) - log(sum(exp(x - max)))."""
        x = self._data
        d = _norm_dim("log_softmax", dim, x.ndim)
        shifted = x - np.maximum.reduce(x, axis=d, keepdims=True)
        e = np.exp(shifted)
        s = np.add.reduce(e, axis=d, keepdims=True)
        return self._unary(shifted - np.log(s), _R["log_softmax"], (e, s, d))

    def softmax(self, dim: int) -> Tensor:
        """exp(x - max) / sum(exp(x - max)) along `dim`."""
        x = self._data
        d = _norm_dim("softmax", dim, x.ndim)
        e = np.exp(x - np.maximum.reduce(x, axis=d, keepdims=True))
        s = np.add.reduce(e, axis=d, keepdims=True)
        return self._unary(e / s, _R["softmax"], (e, s, d))

    # ------------------------------------------------------------------ shape ops

    def reshape(self, shape) -> Tensor:
        """A tensor with the same values in `shape` (one entry may be -1)."""
        x = self._data
        try:
            out = x.reshape(tuple(shape))
        except ValueError:
            raise ShapeError(
                f"reshape: cannot reshape {_fmt(x.shape)} into {_fmt(tuple(shape))}"
            ) from None
        return self._unary(out, _R["reshape"], x.shape)

    def flatten(self) -> Tensor:
        """The values as a rank-1 tensor."""
        return self.reshape([-1])

    def unsqueeze(self) -> Tensor:
        """Add a leading dim of size 1 (burn's `unsqueeze::<D+1>()`)."""
        return self.reshape((1, *self._data.shape))

    def unsqueeze_dim(self, dim: int) -> Tensor:
        """Insert a dim of size 1 at `dim`."""
        shape = list(self._data.shape)
        d = _norm_dim("unsqueeze_dim", dim, len(shape) + 1)
        shape.insert(d, 1)
        return self.reshape(shape)

    def squeeze(self, dim: int | None = None) -> Tensor:
        """Remove dim `dim` (which must have size 1), or every size-1 dim when None."""
        shape = self._data.shape
        if dim is None:
            return self.reshape([n for n in shape if n != 1])
        return self.squeeze_dim(dim)

    def squeeze_dim(self, dim: int) -> Tensor:
        """Remove dim `dim`, which must have size 1."""
        shape = list(self._data.shape)
        d = _norm_dim("squeeze_dim", dim, len(shape))
        if shape[d] != 1:
            raise ShapeError(f"squeeze_dim: dim {dim} of shape {_fmt(self.shape)} is not 1")
        del shape[d]
        return self.reshape(shape)

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        """Swap two dims (a view of the same values)."""
        x = self._data
        a = _norm_dim("swap_dims", dim1, x.ndim)
        b = _norm_dim("swap_dims", dim2, x.ndim)
        return self._unary(x.swapaxes(a, b), _R["swap_dims"], (a, b))

    def transpose(self) -> Tensor:
        """Swap the last two dims."""
        if self._data.ndim < 2:
            raise ShapeError(f"transpose: needs rank >= 2, got shape {_fmt(self.shape)}")
        return self.swap_dims(-2, -1)

    def slice(self, ranges: Sequence) -> Tensor:
        """Slice with one range per leading dim: `(start, end)`, `slice`, int `i` (i..i+1,
        dim kept) or None (whole dim). Negative bounds count from the end; a range out of
        bounds or selecting nothing raises (Python would clamp it silently)."""
        x = self._data
        if len(ranges) > x.ndim:
            raise ShapeError(f"slice: {len(ranges)} ranges for shape {_fmt(x.shape)}")
        index = tuple(_to_slice(r, axis, x.shape) for axis, r in enumerate(ranges))
        return self._unary(x[index], _R["slice"], (x.shape, index))

    @staticmethod
    def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
        """Concatenate along `dim`; all other dims must match."""
        if not tensors:
            raise ValueError("cat: needs at least one tensor")
        first = tensors[0]
        arrays = [t._data for t in tensors]
        for a in arrays[1:]:
            if a.dtype != arrays[0].dtype:
                raise _dtype_error("cat", arrays[0], a)
        d = _norm_dim("cat", dim, arrays[0].ndim)
        try:
            out = np.concatenate(arrays, axis=d)
        except ValueError:
            shapes = ", ".join(_fmt(a.shape) for a in arrays)
            raise ShapeError(f"cat: shapes {shapes} differ outside dim {dim}") from None
        return _cat_result(tensors, first, out, d, [a.shape[d] for a in arrays])

    def gather(self, dim: int, indices: Tensor) -> Tensor:
        """`out[i][j] = self[i][indices[i][j]]` along `dim` (indices int64, same rank)."""
        x = self._data
        idx = indices._data
        if idx.dtype is not _INT64 and idx.dtype != _INT64:
            raise TypeError(f"gather: indices must be int64, got {idx.dtype}")
        d = _norm_dim("gather", dim, x.ndim)
        if idx.ndim != x.ndim:
            raise ShapeError(
                f"gather: indices shape {_fmt(idx.shape)} and tensor shape {_fmt(x.shape)} "
                "differ in rank"
            )
        index = along_axis_index(idx, d)
        try:
            out = x[index]
        except IndexError as exc:
            raise IndexError(f"gather: {exc}") from None
        return self._unary(out, _R["gather"], (x.shape, index))

    # ------------------------------------------------------------------ comparisons & casts

    def _compare(self, op: str, ufunc, other) -> Tensor:
        if other.__class__ is Tensor:
            a = self._data
            b = other._data
            if a.dtype is not b.dtype and a.dtype != b.dtype:
                raise _dtype_error(op, a, b)
            try:
                return self._untracked(ufunc(a, b))
            except ValueError:
                raise _broadcast_error(op, a, b) from None
        return self._untracked(ufunc(self._data, self._scalar(other)))

    def equal(self, other: Tensor) -> Tensor:
        """Elementwise `==`, a bool tensor."""
        return self._compare("equal", np.equal, other)

    def equal_elem(self, value) -> Tensor:
        """Elementwise `== value`, a bool tensor."""
        return self._compare("equal_elem", np.equal, value)

    def greater(self, other: Tensor) -> Tensor:
        """Elementwise `>`, a bool tensor."""
        return self._compare("greater", np.greater, other)

    def greater_elem(self, value) -> Tensor:
        """Elementwise `> value`, a bool tensor."""
        return self._compare("greater_elem", np.greater, value)

    def greater_equal_elem(self, value) -> Tensor:
        """Elementwise `>= value`, a bool tensor."""
        return self._compare("greater_equal_elem", np.greater_equal, value)

    def lower(self, other: Tensor) -> Tensor:
        """Elementwise `<`, a bool tensor."""
        return self._compare("lower", np.less, other)

    def lower_elem(self, value) -> Tensor:
        """Elementwise `< value`, a bool tensor."""
        return self._compare("lower_elem", np.less, value)

    def lower_equal_elem(self, value) -> Tensor:
        """Elementwise `<= value`, a bool tensor."""
        return self._compare("lower_equal_elem", np.less_equal, value)

    def bool_not(self) -> Tensor:
        """Logical not of a bool tensor."""
        return self._untracked(np.logical_not(_bool_mask("bool_not", self)))

    def int(self) -> Tensor:
        """Convert to int64 (truncating floats), untracked."""
        return self._untracked(self._data.astype(np.int64))

    def float(self, dtype="float32") -> Tensor:
        """Convert an int or bool tensor to a float tensor (burn's `.float()`), untracked."""
        if self._data.dtype in _FLOAT_DTYPES:
            raise TypeError("float: tensor is already float; use cast(dtype)")
        return self._untracked(self._data.astype(_float_dtype(dtype)))


def _bool_mask(op: str, mask: Tensor) -> np.ndarray:
    m = mask._data
    if m.dtype != np.bool_:
        raise TypeError(f"{op}: mask must be a bool tensor, got {m.dtype}")
    return m


def _to_slice(r, axis: int, shape: tuple[int, ...]) -> slice:
    """One burn range as a Python slice; like burn, out-of-bounds or empty ranges raise."""
    if r is None:
        s = slice(None)
    elif isinstance(r, slice):
        s = r
    elif isinstance(r, int | np.integer):
        s = slice(r, r + 1 if r != -1 else None)
    else:
        start, end = r
        s = slice(start, end)
    n = shape[axis]
    in_bounds = all(b is None or -n <= b <= n for b in (s.start, s.stop))
    if not in_bounds or (n and not len(range(*s.indices(n)))):
        raise ShapeError(
            f"slice: range {r!r} is out of bounds or empty for dim {axis} of shape {_fmt(shape)}"
        )
    return s


def _cat_result(tensors, first: Tensor, out: np.ndarray, dim: int, sizes) -> Tensor:
    nodes = [t._node for t in tensors]
    if first._node is None:
        if any(n is not None for n in nodes):
            raise DeviceMismatchError("cat: tensors on different devices")
        return Tensor(out, _PLAIN, None)
    if any(n is None for n in nodes):
        raise DeviceMismatchError("cat: tensors on different devices")
    parents = tuple(n if n.requirement is not NONE else None for n in nodes)
    tracked = [n for n in parents if n is not None]
    if not tracked:
        return Tensor(out, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))
    order = max(n.order for n in tracked) + 1
    node = Node(next_node_id(), GRAD_IN_BACKWARD, parents, order, _R["cat"], (dim, sizes))
    return Tensor(out, _AUTODIFF, node)
