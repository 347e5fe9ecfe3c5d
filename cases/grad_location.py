"""Where gradients live: PyTorch accumulates into ``x.grad``; the engine returns a fresh
``Gradients`` container from every ``backward()``.

``(x*x).sum()`` is computed twice from scratch with ``x = [1, 2]``. PyTorch's ``x.grad`` is
``[2, 4]`` and then ``[4, 8]`` (no ``zero_grad`` in between); the engine gives ``[2, 4]`` both
times, and the sum of its two containers equals PyTorch's second value. PyTorch's functional
``torch.autograd.grad`` returns the gradient without touching ``x.grad``: that is the engine's
model.
"""

import torch

from harness.case import agree, differ, expect, scaled
from harness.engine import Device, Tensor


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    after_first = x.grad.clone()
    (x * x).sum().backward()
    after_second = x.grad.clone()

    z = torch.tensor([1.0, 2.0], requires_grad=True)
    (functional,) = torch.autograd.grad((z * z * 3).sum(), [z])
    return {
        "after_first.x_grad": after_first,
        "after_second.x_grad": after_second,
        "functional.grad": functional,
        "functional.x_grad": z.grad,
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    grads_1 = (x * x).sum().backward()
    after_first = x.grad(grads_1)
    grads_2 = (x * x).sum().backward()
    after_second = x.grad(grads_2)

    z = Tensor.from_floats([1.0, 2.0], device).require_grad()
    functional = z.grad((z * z * 3).sum().backward())
    return {
        "after_first.x_grad": after_first,
        "after_second.x_grad": after_second,
        "summed.x_grad": after_first + after_second,
        "functional.grad": functional,
    }


CHECKS = [
    agree("x_grad", "torch:after_first.", "engine:after_first."),
    differ(
        "x_grad",
        left="torch:after_second.",
        right="engine:after_second.",
        because="harness.engine.autodiff.Gradients",
        relation=scaled(2),
    ),
    agree("x_grad", "torch:after_second.", "engine:summed."),
    agree("functional.grad"),
    expect("functional.x_grad", "torch", None),
]
