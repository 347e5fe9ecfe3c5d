"""Where burn 0.22 (flex device, burn-autodiff rules) and PyTorch part ways at the edges.

- ``relu`` at NaN: flex's ``x.max(0.0)`` gives 0 and its backward passes the gradient only
  where the output is positive, so 0; PyTorch keeps NaN and passes the cotangent.
- ``clamp`` on the autodiff device is burn-autodiff's default composite (``mask_fill`` where
  ``x > max``, then where ``x < min``): NaN stays NaN as in PyTorch, but its gradient passes
  where PyTorch's is 0. With min > max every value becomes min (PyTorch: max); the gradient is
  0 on both sides. On the plain device flex's fused clamps run: ``clamp_min`` maps NaN to the
  bound, and ``clamp`` with min > max raises (flex panics).
- A negative index raises on both sides (``gather`` and a cross-entropy target of -1), with
  the engine naming the op, the index and the dim size as flex does.
- ``cast`` is differentiable on both sides: the gradient is cast back to the source dtype.
- ``backward()`` on an op output no tracked leaf reaches runs burn's no-op step and returns a
  container holding only that output's seed of ones; PyTorch raises.
"""

import torch
import torch.nn.functional as F

from harness.case import agree, capture, differ, expect, predicate, raises_message, raises_vs_value
from harness.engine import CrossEntropyLossConfig, Device, Tensor

NAN = float("nan")
VALUES = [NAN, -1.0, 0.0, 2.0]
GATHER_ERROR = "gather: index -1 out of bounds for dimension of size 2"
CE_ERROR = "gather: index -1 out of bounds for dimension of size 3"


def _torch_value_and_grad(fn, values=VALUES):
    x = torch.tensor(values, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    return {"value": y.detach(), "grad": x.grad}


def _engine_value_and_grad(fn, values=VALUES):
    x = Tensor.from_floats(values, Device.flex().autodiff()).require_grad()
    y = fn(x)
    return {"value": y, "grad": x.grad(y.sum().backward())}


def _torch_untracked_backward():
    (torch.tensor([1.0, 2.0]) * 2.0).sum().backward()


def torch_side():
    matrix = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(torch.float64)
    (y * y).sum().backward()
    logits = torch.tensor([[0.1, 0.2, 0.3], [1.0, 0.0, -1.0]])
    return {
        "relu": _torch_value_and_grad(torch.relu),
        "clamp_min": {
            "autodiff": _torch_value_and_grad(lambda t: t.clamp(min=0.5)),
            "plain": torch.tensor(VALUES).clamp(min=0.5),
        },
        "clamp_inverted": {
            "autodiff": _torch_value_and_grad(lambda t: t.clamp(0.5, -0.5), [-1.0, 0.25, 1.0]),
            "plain": torch.tensor([-1.0, 0.25, 1.0]).clamp(0.5, -0.5),
        },
        "gather_negative": capture(lambda: matrix.gather(1, torch.tensor([[-1], [0]]))),
        "cross_entropy_target_minus_one": capture(
            lambda: F.cross_entropy(logits, torch.tensor([-1, 0]))
        ),
        "cast": {"grad": x.grad, "grad_is_source_dtype": x.grad.dtype == torch.float32},
        "untracked_backward": capture(_torch_untracked_backward),
    }


def _engine_untracked_backward():
    y = (Tensor.from_floats([1.0, 2.0], Device.flex().autodiff()) * 2.0).sum()
    grads = y.backward()
    return {"entries": len(grads), "root": y.grad(grads)}


def engine_side():
    ad = Device.flex().autodiff()
    plain = Device.flex()
    matrix = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], plain)
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    y = x.cast("float64")
    grad = x.grad((y * y).sum().backward())
    logits = Tensor.from_floats([[0.1, 0.2, 0.3], [1.0, 0.0, -1.0]], ad)
    loss = CrossEntropyLossConfig().init(ad)
    untracked = _engine_untracked_backward()
    return {
        "relu": _engine_value_and_grad(lambda t: t.relu()),
        "clamp_min": {
            "autodiff": _engine_value_and_grad(lambda t: t.clamp_min(0.5)),
            "plain": Tensor.from_floats(VALUES, plain).clamp_min(0.5),
        },
        "clamp_inverted": {
            "autodiff": _engine_value_and_grad(lambda t: t.clamp(0.5, -0.5), [-1.0, 0.25, 1.0]),
            "plain": capture(lambda: Tensor.from_floats([-1.0, 0.25, 1.0], plain).clamp(0.5, -0.5)),
        },
        "gather_negative": capture(lambda: matrix.gather(1, Tensor.from_ints([[-1], [0]], plain))),
        "cross_entropy_target_minus_one": capture(
            lambda: loss.forward(logits, Tensor.from_ints([-1, 0], ad))
        ),
        "cast": {"grad": grad, "grad_is_source_dtype": str(grad.dtype) == "float32"},
        "untracked_backward": untracked["root"],
        "untracked_backward_entries": untracked["entries"],
    }


def _nan_position(torch_value, engine_value, *, torch_at_nan, engine_at_nan):
    """Equal at the non-NaN inputs (positions 1..3); at the NaN input (position 0) the sides
    give the stated values (None: NaN)."""

    def at(value, want):
        return bool(value != value) if want is None else bool(value == want)

    rest = bool((torch_value[1:] == engine_value[1:]).all())
    return rest and at(torch_value[0], torch_at_nan) and at(engine_value[0], engine_at_nan)


CHECKS = [
    differ(
        "relu.value",
        because="harness.engine.ops.nn.relu",
        relation=predicate(
            "at the NaN input torch is NaN and the engine 0; equal elsewhere",
            lambda t, e: _nan_position(t, e, torch_at_nan=None, engine_at_nan=0.0),
        ),
    ),
    differ(
        "relu.grad",
        because="harness.engine.ops.nn.relu",
        relation=predicate(
            "at the NaN input torch passes the cotangent (1) and the engine gives 0",
            lambda t, e: _nan_position(t, e, torch_at_nan=1.0, engine_at_nan=0.0),
        ),
    ),
    agree("clamp_min.autodiff.value", note="NaN stays NaN on both sides (burn's mask_fill)"),
    differ(
        "clamp_min.autodiff.grad",
        because="harness.engine.ops.unary.clamp",
        relation=predicate(
            "at the NaN input torch gives 0 and the engine passes the cotangent (1)",
            lambda t, e: _nan_position(t, e, torch_at_nan=0.0, engine_at_nan=1.0),
        ),
    ),
    differ(
        "clamp_min.plain",
        because="harness.engine.ops.unary.flex_clamp",
        relation=predicate(
            "flex maps NaN to the bound (0.5); torch keeps NaN",
            lambda t, e: _nan_position(t, e, torch_at_nan=None, engine_at_nan=0.5),
        ),
    ),
    differ(
        "clamp_inverted.autodiff.value",
        because="harness.engine.ops.unary.clamp",
        relation=predicate(
            "min > max: torch fills with max (-0.5), the engine with min (0.5)",
            lambda t, e: bool((t == -0.5).all() and (e == 0.5).all()),
        ),
    ),
    agree("clamp_inverted.autodiff.grad", note="no value passes either clamp: 0 on both sides"),
    differ(
        "clamp_inverted.plain",
        left="engine",
        right="torch",
        because="harness.engine.ops.unary.flex_clamp",
        relation=raises_vs_value("ValueError"),
    ),
    expect("gather_negative", "engine", raises_message(GATHER_ERROR)),
    expect("gather_negative", "torch", raises_message("index -1 is out of bounds", exact=False)),
    expect("cross_entropy_target_minus_one", "engine", raises_message(CE_ERROR)),
    expect(
        "cross_entropy_target_minus_one",
        "torch",
        raises_message("Target -1 is out of bounds", exact=False),
    ),
    agree("cast.*", note="both cast the gradient back to the source dtype (float32)"),
    differ(
        "untracked_backward",
        because="harness.engine.autodiff.AutodiffMethods.backward",
        relation=raises_vs_value("RuntimeError"),
    ),
    expect("untracked_backward_entries", "engine", 1),
]
