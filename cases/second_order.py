"""Second order: d/dx of ``(x**3).sum()`` and its derivative, with ``x = [1, 2]``.

PyTorch with ``create_graph=True`` gives ``[3, 12]`` and then ``[6, 12]``. The engine gives
``[3, 12]`` as a plain tensor (not autodiff, not require-grad), and ``backward()`` on anything
computed from it raises the engine's error: burn is first order only.
"""

import torch

from harness.case import agree, capture, differ, expect, flags, raises_message, raises_vs_value
from harness.engine import Device, Tensor

BACKWARD_ERROR = (
    "Tensor::backward requires a tracked autodiff tensor; call Tensor::autodiff().require_grad() "
    "on the source leaf before computing the output"
)


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (first,) = torch.autograd.grad((x**3).sum(), [x], create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), [x])
    return {
        "first": first,
        "first_is_tracked": first.requires_grad,
        "second": second,
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    first = x.grad(x.powi_scalar(3).sum().backward())
    return {
        "first": first,
        "first_is_tracked": first.is_autodiff() or first.is_require_grad(),
        "first.is_autodiff": first.is_autodiff(),
        "first.is_require_grad": first.is_require_grad(),
        "second": capture(lambda: first.sum().backward()),
    }


CHECKS = [
    agree("first"),
    differ(
        "first_is_tracked",
        because="harness.engine.tensor.Tensor.backward",
        relation=flags(True, False, "PyTorch's gradient is tracked, the engine's is plain"),
    ),
    differ(
        "second",
        left="engine",
        right="torch",
        because="harness.engine.tensor.Tensor.backward",
        relation=raises_vs_value(),
    ),
    expect("first.is_*", "engine", False),
    expect(
        "second",
        "engine",
        raises_message(BACKWARD_ERROR),
    ),
]
