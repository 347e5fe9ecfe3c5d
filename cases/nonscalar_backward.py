"""Backward from a non-scalar output: PyTorch refuses without an explicit gradient; the engine
seeds with ones, which is the same as calling ``sum()`` first.

``y = x*x`` with ``x = [1, 2]``. PyTorch's ``y.backward()`` raises; ``y.backward(ones)`` gives
``[2, 4]`` and ``y.backward([1, 10])`` gives ``[2, 40]``. The engine's ``y.backward()`` gives
``[2, 4]``; its vector-Jacobian product is written ``(y * v).sum().backward()``.
"""

import torch

from harness.case import agree, capture, differ, raises_vs_value
from harness.engine import Device, Tensor


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    implicit = capture(lambda: y.backward())

    y = x * x
    y.backward(torch.ones(2))
    seed_ones = x.grad.clone()

    x.grad = None
    y = x * x
    y.backward(torch.tensor([1.0, 10.0]))
    return {
        "implicit.x_grad": implicit,
        "seed_ones.x_grad": seed_ones,
        "seed_v.x_grad": x.grad,
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    y = x * x
    implicit = x.grad(y.backward())

    y = x * x
    seed_ones = x.grad((y * Tensor.from_floats([1.0, 1.0], device)).sum().backward())

    y = x * x
    seed_v = x.grad((y * Tensor.from_floats([1.0, 10.0], device)).sum().backward())
    return {
        "implicit.x_grad": implicit,
        "seed_ones.x_grad": seed_ones,
        "seed_v.x_grad": seed_v,
    }


CHECKS = [
    differ(
        "implicit.x_grad",
        because="harness.engine.tensor.Tensor.backward",
        relation=raises_vs_value("RuntimeError"),
    ),
    agree("seed_*"),
    agree("x_grad", "torch:seed_ones.", "engine:implicit."),
]
