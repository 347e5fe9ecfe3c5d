"""A second ``backward()`` through the same graph.

PyTorch frees the graph's saved values after a backward pass: a second ``y.backward()`` raises
unless the first asked for ``retain_graph=True``, and then the second pass accumulates into
``x.grad`` (``[2, 4]`` becomes ``[4, 8]``). The engine's backward consumes the steps it ran: a
second ``backward()`` on the same root raises burn's "node should have a step registered", and
there is no ``retain_graph``; to differentiate again, the engine recomputes the forward pass.
"""

import inspect

import torch

from harness.case import agree, capture, differ, expect, flags, predicate, raises_message
from harness.engine import Device, Tensor

# burn-autodiff's text, written out here so the case checks the engine against burn, not itself.
NO_STEP_REGISTERED = (
    "Node should have a step registered, did you forget to call `Tensor::register_grad` "
    "on the tensor where you need gradients?"
)


def torch_side():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    second = capture(lambda: y.backward())

    x.grad = None
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return {
        "second": second,
        "has_retain_graph": "retain_graph" in inspect.signature(torch.Tensor.backward).parameters,
        "retained.x_grad": x.grad,
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_floats([1.0, 2.0], device).require_grad()
    y = (x * x).sum()
    y.backward()
    second = capture(lambda: y.backward())

    # No retain_graph: run the forward pass again and add the two containers by hand.
    first_grad = x.grad((x * x).sum().backward())
    again_grad = x.grad((x * x).sum().backward())
    return {
        "second": second,
        "has_retain_graph": "retain_graph" in inspect.signature(Tensor.backward).parameters,
        "retained.x_grad": first_grad + again_grad,
    }


def _both_raise(torch_error, engine_error):
    return "retain_graph" in torch_error.message and engine_error.message == NO_STEP_REGISTERED


CHECKS = [
    differ(
        "second",
        because="harness.engine.tensor.Tensor.backward",
        relation=predicate(
            "both raise: PyTorch names retain_graph, the engine burn's message", _both_raise
        ),
    ),
    differ(
        "has_retain_graph",
        because="harness.engine.tensor.Tensor.backward",
        relation=flags(True, False, "PyTorch has retain_graph, the engine does not"),
    ),
    agree(
        "retained.x_grad",
        note="PyTorch's retained graph accumulates; the engine adds two fresh containers",
    ),
    expect(
        "second",
        "engine",
        raises_message(NO_STEP_REGISTERED),
    ),
]
