"""Gradients of intermediates: ``h = x*x``, ``loss = (h*3).sum()``.

Neither side keeps ``h``'s gradient. PyTorch returns None and warns when ``h.grad`` is read (it
offers ``retain_grad()``); the engine drops an intermediate's gradient as soon as its backward
step has run, returns None silently and has no ``retain_grad``.
"""

import warnings

import torch

from harness.case import agree, differ, flags
from harness.engine import Device, Tensor


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    (h * 3).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h_grad = h.grad
    return {
        "h_grad": h_grad,
        "x_grad": x.grad,
        "warned": any(issubclass(w.category, UserWarning) for w in caught),
        "has_retain_grad": hasattr(h, "retain_grad"),
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    h = x * x
    grads = (h * 3).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h_grad = h.grad(grads)
    return {
        "h_grad": h_grad,
        "x_grad": x.grad(grads),
        "warned": any(issubclass(w.category, UserWarning) for w in caught),
        "has_retain_grad": hasattr(h, "retain_grad"),
    }


_TORCH_ONLY = flags(True, False, "PyTorch: True, engine: False")

CHECKS = [
    agree("h_grad"),
    agree("x_grad"),
    differ("warned", because="harness.engine.tensor.Tensor.grad", relation=_TORCH_ONLY),
    differ("has_retain_grad", because="harness.engine.tensor.Tensor.grad", relation=_TORCH_ONLY),
]
