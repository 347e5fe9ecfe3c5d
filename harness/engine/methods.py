"""Tensor methods from primitives, and the plumbing that decides, once for every op, whether
and how its output is tracked.

`Tensor` binds each primitive of `harness.engine.ops` in one line (`exp = unary_method(EXP)`).
The method runs the forward on the tensor's values and hands the output and the saved record
to one of the `*_result` functions here: a plain tensor on the plain device, an untracked one
when no input is tracked, else a graph node holding the primitive's current backward rule.
Results are built with the operand's own class (always `Tensor`), so this module needs no
import of it. Each method reads `op.forward` when it runs, not once when it is built: a
recorded step (harness.engine.tape) swaps the forwards while it records.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np

from .autodiff import GRAD_IN_BACKWARD, NONE, Node, next_node_id, untracked_node, untracked_output
from .device import Device
from .errors import DeviceMismatchError, ShapeError
from .ops.arrays import broadcast_error, dtype_error, scalar_of
from .ops.base import Primitive

_PLAIN = Device.flex()
_AUTODIFF = _PLAIN.autodiff()
_NDARRAY = np.ndarray
_new = object.__new__


def tracked_output(cls, out, parents: tuple, order: int, op: Primitive, saved):
    """A tensor of class `cls` holding `out`, whose node's step is op's rule with `saved`.

    Node and tensor are built with `object.__new__` and slot stores: in Python 3.11 calling a
    class runs its `__init__` through the slow path of a type call (~700 instructions more),
    and every op output needs both. `op.backward` is read now, so a replaced rule
    (harness.opmatrix.inject) applies to every graph built afterwards.
    """
    node = _new(Node)
    node.id = next_node_id()
    node.requirement = GRAD_IN_BACKWARD
    node.parents = parents
    node.order = order
    node.rule = op.backward
    node.saved = saved
    node.grad = None
    t = _new(cls)
    # NumPy returns scalars, not arrays, from ufuncs on 0-d arrays (as Tensor.__init__ says).
    t._data = out if out.__class__ is _NDARRAY else np.asarray(out)
    t.device = _AUTODIFF
    t._node = node
    return t


def unary_result(x, op: Primitive, out, saved):
    """The output of a one-input op: on x's device, tracked when x is."""
    node = x._node
    if node is None:
        return x.__class__(out, _PLAIN, None)
    if node.requirement is NONE:
        return x.__class__(out, _AUTODIFF, untracked_output())
    return tracked_output(x.__class__, out, (node,), node.order + 1, op, saved)


def untracked_result(x, out):
    """An untracked output on x's device."""
    if x._node is None:
        return x.__class__(out, _PLAIN, None)
    return x.__class__(out, _AUTODIFF, untracked_node())


def binary_result(a, b, op: Primitive, forward: Callable):
    """Run a two-input op on two tensors (`forward` is op's, maybe with a parameter bound).

    The one preamble of every two-tensor op: the dtype test, and NumPy's broadcasting error
    turned into a ShapeError naming the op and both shapes. An untracked op (a comparison)
    returns its output on a's device; comparisons do not check b's device.
    """
    x = a._data
    y = b._data
    if x.dtype is not y.dtype and x.dtype != y.dtype:
        raise dtype_error(op.name, x, y)
    try:
        result = forward(x, y)
    except ShapeError:
        raise
    except ValueError:
        raise broadcast_error(op.name, x, y) from None
    if op.backward is None:
        return untracked_result(a, result)
    out, saved = result
    na = a._node
    nb = b._node
    if na is None or nb is None:
        if na is not nb:
            raise DeviceMismatchError(
                f"{op.name}: tensors on different devices: {a.device!r} and {b.device!r}"
            )
        return a.__class__(out, _PLAIN, None)
    # Branches rather than max() and conditional tuples: this runs for every binary op.
    if na.requirement is NONE:
        if nb.requirement is NONE:
            return a.__class__(out, _AUTODIFF, untracked_output())
        parents = (None, nb)
        order = nb.order + 1
    elif nb.requirement is NONE:
        parents = (na, None)
        order = na.order + 1
    else:
        parents = (na, nb)
        order = (na.order if na.order > nb.order else nb.order) + 1
    return tracked_output(a.__class__, out, parents, order, op, saved)


def ternary_result(a, b, c, op: Primitive, out, saved):
    """The output of a three-input op (linear's x, weight, bias), as `binary_result`'s: tracked
    when any input is, a device mismatch named after `op`."""
    na = a._node
    nb = b._node
    nc = c._node
    if na is None or nb is None or nc is None:
        if not (na is None and nb is None and nc is None):
            raise DeviceMismatchError(
                f"{op.name}: tensors on different devices: "
                f"{a.device!r}, {b.device!r} and {c.device!r}"
            )
        return a.__class__(out, _PLAIN, None)
    parents = (
        None if na.requirement is NONE else na,
        None if nb.requirement is NONE else nb,
        None if nc.requirement is NONE else nc,
    )
    order = -1  # the deepest tracked parent's (an untracked input's order does not count)
    for node in parents:
        if node is not None and node.order > order:
            order = node.order
    if order < 0:
        return a.__class__(out, _AUTODIFF, untracked_output())
    return tracked_output(a.__class__, out, parents, order + 1, op, saved)


def variadic_result(tensors: Sequence, op: Primitive, out, saved):
    """The output of an op on any number of tensors (cat)."""
    nodes = [t._node for t in tensors]
    cls = tensors[0].__class__
    if nodes[0] is None:
        if any(n is not None for n in nodes):
            raise DeviceMismatchError(f"{op.name}: tensors on different devices")
        return cls(out, _PLAIN, None)
    if any(n is None for n in nodes):
        raise DeviceMismatchError(f"{op.name}: tensors on different devices")
    parents = tuple(n if n.requirement is not NONE else None for n in nodes)
    tracked = [n for n in parents if n is not None]
    if not tracked:
        return cls(out, _AUTODIFF, untracked_output())
    order = max(n.order for n in tracked) + 1
    return tracked_output(cls, out, parents, order, op, saved)


# ---- method factories -------------------------------------------------------------------------


def unary_method(op: Primitive):
    """`t.<op>(params...)`: the forward on the tensor's values, tracked like the tensor."""
    body = "out, saved = op.forward(self._data{params})\n    "
    return _compiled(op, body + "return unary_result(self, op, out, saved)")


def untracked_method(op: Primitive):
    """`t.<op>(params...)` for an op whose output is never tracked. Every such forward returns
    a new array (argmax/argmin, bool_not, int, float, the `*_like` constants), so the result
    is always a new tensor."""
    return _compiled(op, "return untracked_result(self, op.forward(self._data{params}))")


def binary_method(op: Primitive):
    """`t.<op>(other)` for two tensors (broadcasting)."""

    def method(self, other):
        return binary_result(self, other, op, op.forward)

    return _named(method, op)


def compare_method(op: Primitive):
    """`t.<op>(other)` against a tensor (broadcasting) or a scalar cast to the dtype."""

    def method(self, other):
        if other.__class__ is self.__class__:
            return binary_result(self, other, op, op.forward)
        x = self._data
        return untracked_result(self, op.forward(x, scalar_of(x, other)))

    return _named(method, op)


def param_binary_method(op: Primitive):
    """`t.<op>(param, other)`: a two-tensor op whose one parameter comes before the other
    tensor, in burn's argument order (`slice_assign(ranges, values)`)."""

    def method(self, param, other):
        return binary_result(self, other, op, lambda x, y: op.forward(x, y, param))

    return _named(method, op)


def indexed_method(op: Primitive):
    """`t.<op>(indices)`: a one-tensor op taking an int tensor of indices (`gather_nd`)."""

    def method(self, indices):
        out, saved = op.forward(self._data, indices._data)
        return unary_result(self, op, out, saved)

    return _named(method, op)


def _compiled(op: Primitive, body: str):
    """`def <op>(self, <the forward's parameters>): <body>`, built from source as dataclasses
    builds `__init__`: the method has the forward's own parameters (keywords, defaults, errors
    naming them) without forwarding `*args, **kwargs`, which costs ~250 ns a call."""
    params = [p for p in _parameters(op) if p.kind is not p.POSITIONAL_ONLY]
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        raise TypeError(f"{op.name}: a Tensor method takes plain parameters only")
    passed = "".join(f", {p.name}" for p in params)
    source = f"def {op.name}(self{passed}):\n    " + body.replace("{params}", passed) + "\n"
    namespace = {
        "op": op,
        "unary_result": unary_result,
        "untracked_result": untracked_result,
    }
    exec(source, namespace)
    method = namespace[op.name]
    method.__defaults__ = tuple(p.default for p in params if p.default is not p.empty) or None
    method.__module__ = __name__
    return _named(method, op)


def _parameters(op: Primitive) -> list[inspect.Parameter]:
    return list(inspect.signature(op.forward).parameters.values())


def _named(method, op: Primitive):
    """The method takes the op's name and the forward's docstring (help(), error messages)."""
    method.__name__ = op.name
    method.__qualname__ = f"Tensor.{op.name}"
    method.__doc__ = op.forward.__doc__
    return method
