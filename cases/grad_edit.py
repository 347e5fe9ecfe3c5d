"""Editing a gradient before the update: clamp the gradient of ``(x*x*10).sum()`` (``[20, 40]``)
to ``[-5, 5]`` and put it back, then take it out.

PyTorch edits ``x.grad`` in place, so a handle taken before the edit sees ``[5, 5]`` too; the
engine reads with ``grad``, writes with ``grad_replace`` and takes with ``grad_remove``, and the
handle read before the edit keeps ``[20, 40]``. After the removal both sides report None.
"""

import torch

from harness.case import agree, differ, predicate
from harness.engine import Device, Tensor


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x * 10).sum().backward()
    handle = x.grad
    raw = handle.clone()
    x.grad.clamp_(-5.0, 5.0)
    edited = x.grad.clone()
    removed, x.grad = x.grad, None
    return {
        "raw": raw,
        "edited": edited,
        "handle_after_edit": handle,
        "removed": removed,
        "after_remove": x.grad,
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    grads = (x * x * 10).sum().backward()
    handle = x.grad(grads)
    raw = handle.clone()
    x.grad_replace(grads, handle.clamp(-5.0, 5.0))
    edited = x.grad(grads)
    removed = x.grad_remove(grads)
    return {
        "raw": raw,
        "edited": edited,
        "handle_after_edit": handle,
        "removed": removed,
        "after_remove": x.grad(grads),
    }


def _edit_visible_in_torch_only(torch_value, engine_value):
    return (torch_value == 5.0).all() and (engine_value == [20.0, 40.0]).all()


CHECKS = [
    agree("raw"),
    agree("edited"),
    agree("removed"),
    agree("after_remove"),
    differ(
        "handle_after_edit",
        because="harness.engine.tensor.Tensor.grad_replace",
        relation=predicate(
            "PyTorch's handle sees the clamp, the engine's keeps [20, 40]",
            _edit_visible_in_torch_only,
        ),
    ),
]
