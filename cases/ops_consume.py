"""What clone, detach and the update operators mean on each side.

- ``clone`` is an alias in the engine: the same graph node, so ``grad`` of the clone and of the
  original look up the same entry (and ``is_require_grad()`` stays true: still the marked leaf).
  PyTorch's ``clone`` is a graph op: the clone is a non-leaf whose ``.grad`` is None; the
  gradient reaches the original through the clone's backward. The original's gradient agrees.
- ``detach`` keeps require-grad in the engine, with a new node id: a loss built on the detached
  tensor gives *it* a gradient and the original none. PyTorch's ``detach`` drops
  ``requires_grad``, so ``backward()`` on such a loss raises.
- ``require_grad()`` on an intermediate raises in the engine (burn's message); PyTorch's
  ``requires_grad_()`` on a non-leaf that already requires grad is a no-op that returns it.
- No engine op changes a value another handle can see: ``a += 1`` rebinds ``a``, a slice keeps
  its values when the sliced tensor is "multiplied in place", and ``numpy()`` is a read-only
  view. In PyTorch the same lines write in place: the alias, the view and the tensor behind
  ``.numpy()`` all change. The rebound name itself shows the new value on both sides.
"""

import warnings

import torch

from harness.case import (
    agree,
    capture,
    differ,
    equals,
    expect,
    flags,
    predicate,
    raises_message,
    raises_vs_value,
)
from harness.engine import Device, Tensor
from harness.record import CapturedError

VALUES = [1.0, 2.0]
MATRIX = [[1.0, 2.0], [3.0, 4.0]]
WRITTEN = 5.0  # written through .numpy()
NON_LEAF_REQUIRE_GRAD = "Can't convert a non leaf tensor into a tracked tensor"  # burn 0.22.1


def _write_first(array):
    array[0] = WRITTEN


def _torch_grad(tensor, backward):
    """The error `backward()` raised, else the tensor's `.grad`."""
    return backward if isinstance(backward, CapturedError) else tensor.grad


def _engine_grad(tensor, grads):
    """The error `backward()` raised, else the tensor's gradient in `grads`."""
    return grads if isinstance(grads, CapturedError) else tensor.grad(grads)


def torch_side():
    x = torch.tensor(VALUES, requires_grad=True)
    c = x.clone()
    (c * c).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns: intermediate_grad
        clone_grad = c.grad
    original = torch.tensor(VALUES, requires_grad=True)
    d = original.detach()
    detached_backward = capture(lambda: (d * d).sum().backward())
    h = x * x
    a = torch.tensor(VALUES)
    handle = a
    a += 1
    m = torch.tensor(MATRIX)
    row = m[0:1]
    m *= 2
    t = torch.tensor(VALUES)
    write = capture(lambda: _write_first(t.numpy()))
    return {
        "clone": {
            "original": {"grad": x.grad},
            "alias": {"grad": clone_grad, "is_marked_leaf": c.is_leaf},
        },
        "detach": {
            "require_grad": d.requires_grad,
            "grad_of_detached": _torch_grad(d, detached_backward),
            "grad_of_original": original.grad,
        },
        "require_grad_intermediate": capture(lambda: h.requires_grad_() is h),
        "no_mutation": {
            "rebound": a,
            "alias": handle,
            "slice": row,
            "numpy_write": write,
            "after_numpy_write": t,
        },
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats(VALUES, device).require_grad()
    c = x.clone()
    grads = (c * c).sum().backward()
    clone_grad = c.grad(grads)
    original = Tensor.from_floats(VALUES, device).require_grad()
    d = original.detach()
    detached_grads = capture(lambda: (d * d).sum().backward())
    h = x * x
    a = Tensor.from_floats(VALUES, device)
    handle = a
    a += 1  # Tensor has no __iadd__: Python rebinds `a` to `a + 1`
    m = Tensor.from_floats(MATRIX, device)
    row = m.slice([(0, 1)])
    m *= 2
    t = Tensor.from_floats(VALUES, device)
    write = capture(lambda: _write_first(t.numpy()))
    return {
        "clone": {
            "original": {"grad": x.grad(grads)},
            # `is_require_grad()` is true only for marked leaves (PyTorch's is_leaf and
            # requires_grad together).
            "alias": {"grad": clone_grad, "is_marked_leaf": c.is_require_grad()},
        },
        "detach": {
            "require_grad": d.is_require_grad(),
            "grad_of_detached": _engine_grad(d, detached_grads),
            "grad_of_original": _engine_grad(original, detached_grads),
        },
        "require_grad_intermediate": capture(lambda: h.require_grad() is h),
        "no_mutation": {
            "rebound": a,
            "alias": handle,
            "slice": row,
            "numpy_write": write,
            "after_numpy_write": t,
        },
    }


def _plus_one(torch_value, engine_value):
    return bool((torch_value == engine_value + 1).all())


CHECKS = [
    agree("clone.original.grad"),
    agree(
        "grad",
        "engine:clone.original.",
        "engine:clone.alias.",
        note="the clone is the same node: both lookups find one entry",
    ),
    differ(
        "clone.alias.grad",
        left="engine",
        right="torch",
        because="harness.engine.tensor.Tensor.clone",
        relation=predicate(
            "engine: the original's gradient; PyTorch: None (the clone is a non-leaf)",
            lambda engine_value, torch_value: engine_value is not None and torch_value is None,
        ),
    ),
    differ(
        "clone.alias.is_marked_leaf",
        because="harness.engine.tensor.Tensor.clone",
        relation=flags(False, True, "PyTorch: a graph op (False); engine: the leaf itself (True)"),
    ),
    differ(
        "detach.require_grad",
        because="harness.engine.tensor.Tensor.detach",
        relation=flags(
            False, True, "PyTorch drops requires_grad (False); the engine keeps it (True)"
        ),
    ),
    differ(
        "detach.grad_of_detached",
        because="harness.engine.tensor.Tensor.detach",
        relation=raises_vs_value("RuntimeError"),
    ),
    agree(
        "detach.grad_of_original", note="None on both: a new id in the engine, no graph in PyTorch"
    ),
    differ(
        "require_grad_intermediate",
        left="engine",
        right="torch",
        because="harness.engine.tensor.Tensor.require_grad",
        relation=raises_vs_value("AutodiffError"),
    ),
    expect(
        "require_grad_intermediate",
        "engine",
        raises_message(NON_LEAF_REQUIRE_GRAD),
    ),
    agree("no_mutation.rebound"),
    differ(
        "no_mutation.alias",
        because="harness.engine.tensor.Tensor",
        relation=predicate("PyTorch's alias saw the in-place +1: torch = engine + 1", _plus_one),
    ),
    differ(
        "no_mutation.slice",
        because="harness.engine.tensor.Tensor",
        relation=predicate(
            "PyTorch's view saw the in-place *2: torch = 2 x engine",
            lambda t, e: bool((t == 2 * e).all()),
        ),
    ),
    differ(
        "no_mutation.numpy_write",
        left="engine",
        right="torch",
        because="harness.engine.tensor.Tensor.numpy",
        relation=raises_vs_value("ValueError"),
    ),
    differ(
        "no_mutation.after_numpy_write",
        because="harness.engine.tensor.Tensor.numpy",
        relation=predicate(
            "PyTorch's tensor shows the write through .numpy(); the engine's is unchanged",
            lambda t, e: t[0] == WRITTEN != e[0] and bool((t[1:] == e[1:]).all()),
        ),
    ),
    expect("no_mutation.after_numpy_write", "engine", equals(VALUES)),
]
