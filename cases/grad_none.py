"""Every way the engine's ``x.grad(grads)`` gives None, or raises, next to PyTorch.

Both sides give None for a tensor that was never tracked, an intermediate, a leaf that is not
reachable from the loss, a detached copy, a tensor re-created with the same values, a gradient
that was already taken out (``grad_remove`` / ``x.grad = None``), and a gradient asked of another
backward pass that did not involve the tensor. They part where the engine's gradient belongs to
one container and one graph node:

- ``GradientsParams.from_grads`` moves the params' gradients out of the container, so ``grad``
  on a param is None afterwards; PyTorch's ``.grad`` stays on the param through
  ``optimizer.step()``;
- an optimizer step makes each param a new node: its gradient in a container of the old graph is
  None, while PyTorch's updated param keeps its ``.grad`` (the old handle finds it on both sides);
- ``grad`` on a tensor of the plain (non-autodiff) device raises; PyTorch's ``.grad`` of a tensor
  that does not require grad is None.
"""

import warnings

import torch
import torch.nn.functional as F

from harness.a1 import A1_LR, a1_engine, a1_torch
from harness.case import agree, capture, differ, predicate, raises_vs_value
from harness.engine import CrossEntropyLossConfig, Device, GradientsParams, SgdConfig, Tensor

VALUES = [1.0, 2.0]


def torch_side():
    x = torch.tensor(VALUES, requires_grad=True)
    untracked = torch.tensor(VALUES)
    unused = torch.tensor(VALUES, requires_grad=True)
    h = x * x
    (h * untracked).sum().backward()
    detached = x.detach()
    recreated = torch.tensor(VALUES, requires_grad=True)
    # A second pass that does not involve x, asked for x's gradient.
    (other,) = torch.autograd.grad((unused * 3).sum(), [x], allow_unused=True)
    plain = torch.tensor(VALUES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading a non-leaf's .grad warns: intermediate_grad
        intermediate = h.grad
    x_grad = x.grad
    x.grad = None  # PyTorch's way to take a gradient out
    return {
        "x": x_grad,
        "never_tracked": untracked.grad,
        "intermediate": intermediate,
        "unreachable": unused.grad,
        "detached": detached.grad,
        "recreated": recreated.grad,
        "other_backward": other,
        "grad_removed": x.grad,
        "plain_device": plain.grad,
        **_torch_step(),
    }


def _torch_step():
    model, x, y = a1_torch()
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    F.cross_entropy(model(x), y).backward()
    old = model.fc1.weight
    # PyTorch has no second container: `.grad` is the only place a gradient lives.
    optim.step()  # reads each param's .grad and leaves it there
    return {
        "after_from_grads": model.fc1.weight.grad,
        "updated": {"new_param": model.fc1.weight.grad, "old_handle": old.grad},
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats(VALUES, device).require_grad()
    untracked = Tensor.from_floats(VALUES, device)
    unused = Tensor.from_floats(VALUES, device).require_grad()
    h = x * x
    grads = (h * untracked).sum().backward()
    detached = x.detach()
    recreated = Tensor.from_floats(VALUES, device).require_grad()
    # A second pass that does not involve x, asked for x's gradient.
    other = x.grad((unused * 3).sum().backward())
    plain = Tensor.from_floats(VALUES, Device.flex())
    intermediate = h.grad(grads)
    x_grad = x.grad_remove(grads)
    return {
        "x": x_grad,
        "never_tracked": untracked.grad(grads),
        "intermediate": intermediate,
        "unreachable": unused.grad(grads),
        "detached": detached.grad(grads),
        "recreated": recreated.grad(grads),
        "other_backward": other,
        "grad_removed": x.grad(grads),
        "plain_device": capture(lambda: plain.grad(grads)),
        **_engine_step(),
    }


def _engine_step():
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    optim = SgdConfig().init()
    loss_fn = CrossEntropyLossConfig().init(device)
    grads = loss_fn.forward(model.forward(x), y).backward()
    old = model.fc1.weight.val()
    kept = loss_fn.forward(model.forward(x), y).backward()  # a second container, left untouched
    model = optim.step(A1_LR, model, GradientsParams.from_grads(grads, model))
    return {
        # The engine's Linear weight is [in, out]; PyTorch's is [out, in].
        "after_from_grads": _t(old.grad(grads)),
        "updated": {"new_param": model.fc1.weight.grad(kept), "old_handle": _t(old.grad(kept))},
    }


def _t(grad):
    return None if grad is None else grad.transpose()


def _value_vs_none(text):
    return predicate(
        text, lambda torch_value, engine_value: torch_value is not None and engine_value is None
    )


_BOTH_NONE = (
    "never_tracked",
    "intermediate",
    "unreachable",
    "detached",
    "recreated",
    "other_backward",
    "grad_removed",
)

CHECKS = [
    agree("x"),
    *[agree(name, note="None on both sides") for name in _BOTH_NONE],
    agree("updated.old_handle"),
    differ(
        "after_from_grads",
        because="harness.engine.optim.GradientsParams",
        relation=_value_vs_none("PyTorch: .grad stays on the param; engine: None, moved out"),
    ),
    differ(
        "updated.new_param",
        because="harness.engine.tensor.Tensor.grad",
        relation=_value_vs_none("PyTorch: the updated param keeps .grad; engine: a new node, None"),
    ),
    differ(
        "plain_device",
        left="engine",
        right="torch",
        because="harness.engine.tensor.Tensor.grad",
        relation=raises_vs_value("AutodiffError"),
    ),
]
