"""Gradient accumulation on A1: the full batch against two half batches (rows 0..2 and 2..4),
each half's loss divided by 2, for one step and then over 30 SGD steps (lr 0.1).

PyTorch accumulates by not calling ``zero_grad`` between the halves; the engine adds the two
``GradientsParams`` with a ``GradientsAccumulator``. At the first step four comparisons hold
within 1e-6: full torch vs full engine, accumulated torch vs accumulated engine, and full vs
accumulated within each side. The same-side results are close but not bit-identical: the full
batch sums four rows in one reduction, the halves sum two rows each and then add the two
partial gradients, and float addition is not associative.

Over 30 steps (``steps.loss`` and the accumulated ``steps.grads.*`` of every step, the step on
the first axis; a gap in the params shows in the next step's gradients) the four pairs are
trajectories: their float64 reruns agree to float64 rounding, so whatever gap the float32 runs
build up is rounding, not a formula difference, both across the frameworks and between full
and accumulated batches within one.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import (
    A1_HALVES,
    A1_LR,
    a1_engine,
    a1_torch,
    engine_grads,
    torch_grads,
)
from harness.case import agree, trajectory
from harness.engine import (
    CrossEntropyLossConfig,
    Device,
    GradientsAccumulator,
    GradientsParams,
    SgdConfig,
)

STEPS = 30

SUMMATION_ORDER = (
    "close, not bit-identical: two partial sums added differ from one sum of four rows"
)


# ---- PyTorch side ---------------------------------------------------------------------------


def _torch_step(model, x, y, accumulate):
    """One backward pass over the full batch, or two over the halves (no zero_grad between)."""
    if not accumulate:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss.detach()
    total = 0.0
    for start, stop in A1_HALVES:
        loss = F.cross_entropy(model(x[start:stop]), y[start:stop]) / 2
        loss.backward()  # no zero_grad: .grad accumulates
        total = total + loss.detach()
    return total


def _torch_run(dtype, accumulate):
    """STEPS SGD steps: the first step's gradients, and the loss and gradients of every step."""
    model, x, y = a1_torch(dtype=dtype)
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    losses, grads = [], []
    for _ in range(STEPS):
        optim.zero_grad(set_to_none=True)
        losses.append(_torch_step(model, x, y, accumulate))
        grads.append(torch_grads(model))
        optim.step()
    return {"grads": grads[0], "steps": _stacked(losses, grads, torch.stack)}


def torch_side(dtype=torch.float32):
    return {"full": _torch_run(dtype, False), "acc": _torch_run(dtype, True)}


# ---- engine side ----------------------------------------------------------------------------


def _engine_step(model, x, y, loss_fn, accumulate):
    if not accumulate:
        loss = loss_fn.forward(model.forward(x), y)
        return loss, GradientsParams.from_grads(loss.backward(), model)
    accumulator = GradientsAccumulator()
    total = None
    for start, stop in A1_HALVES:
        half = [(start, stop)]
        loss = loss_fn.forward(model.forward(x.slice(half)), y.slice(half)) / 2
        accumulator.accumulate(model, GradientsParams.from_grads(loss.backward(), model))
        total = loss if total is None else total + loss
    return total, accumulator.grads()


def _engine_run(dtype, accumulate):
    device = Device.flex().autodiff()
    loss_fn = CrossEntropyLossConfig().init(device)
    model, x, y = a1_engine(device, dtype=dtype)
    optim = SgdConfig().init()
    losses, grads = [], []
    for _ in range(STEPS):
        loss, step_grads = _engine_step(model, x, y, loss_fn, accumulate)
        losses.append(loss.numpy().reshape(()))  # burn's [1] loss, as PyTorch's 0-d one
        grads.append(engine_grads(step_grads, model))
        model = optim.step(A1_LR, model, step_grads)
    return {"grads": grads[0], "steps": _stacked(losses, grads, _np_stack)}


def engine_side(dtype="float32"):
    return {"full": _engine_run(dtype, False), "acc": _engine_run(dtype, True)}


# ---- recording ------------------------------------------------------------------------------


def _np_stack(values):
    return np.stack([v if isinstance(v, np.ndarray) else v.numpy() for v in values])


def _stacked(losses, grads, stack):
    """Per-step values with the step on the first axis (the trajectory key scheme)."""
    return {
        "loss": stack(losses),
        "grads": {name: stack([g[name] for g in grads]) for name in grads[0]},
    }


CHECKS = [
    agree("grads.*", "torch:full.", "engine:full."),
    agree("grads.*", "torch:acc.", "engine:acc."),
    agree("grads.*", "torch:full.", "torch:acc.", note=SUMMATION_ORDER),
    agree("grads.*", "engine:full.", "engine:acc.", note=SUMMATION_ORDER),
    trajectory("steps.*", "torch:full.", "engine:full."),
    trajectory("steps.*", "torch:acc.", "engine:acc."),
    trajectory("steps.*", "torch:full.", "torch:acc.", note=SUMMATION_ORDER),
    trajectory("steps.*", "engine:full.", "engine:acc.", note=SUMMATION_ORDER),
]
