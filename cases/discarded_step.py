"""A discarded optimizer step.

The engine's ``optim.step(lr, model, grads)`` consumes ``model``: using it afterwards raises
``MovedValueError`` (the Python form of Rust's E0382) with a message naming the fix
``model = optim.step(lr, model, grads)``. Passing ``model.clone()`` and ignoring the result
leaves the loss unchanged; with Adam the optimizer state advances (step count 1) while the model
does not. PyTorch's step works in place, so there is no result to discard: the loss moves and
the model stays usable.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import A1_LR, a1_engine, a1_torch
from harness.case import (
    agree,
    capture,
    differ,
    expect,
    flags,
    raises_message,
    raises_vs_value,
)
from harness.engine import AdamConfig, CrossEntropyLossConfig, Device, GradientsParams, SgdConfig


def torch_side():
    model, x, y = a1_torch()
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    loss_before = F.cross_entropy(model(x), y)
    loss_before.backward()
    optim.step()
    sgd = {"loss_unchanged": bool(F.cross_entropy(model(x), y) == loss_before)}

    model, x, y = a1_torch()
    adam = torch.optim.Adam(model.parameters(), lr=A1_LR)
    loss_before = F.cross_entropy(model(x), y)
    loss_before.backward()
    adam.step()
    step_count = int(adam.state[model.fc1.weight]["step"])
    return {
        "sgd": sgd,
        "adam.state_steps": step_count,
        "adam.loss_unchanged": bool(F.cross_entropy(model(x), y) == loss_before),
        "use_after_step": capture(lambda: model(x)).shape[0],
    }


def _same(a, b):
    return bool(np.array_equal(a.numpy(), b.numpy()))


def engine_side():
    device = Device.flex().autodiff()
    loss_fn = CrossEntropyLossConfig().init(device)
    model, x, y = a1_engine(device)
    optim = SgdConfig().init()
    loss_before = loss_fn.forward(model.forward(x), y)
    optim.step(A1_LR, model.clone(), GradientsParams.from_grads(loss_before.backward(), model))
    sgd = {"loss_unchanged": _same(loss_fn.forward(model.forward(x), y), loss_before)}

    model, x, y = a1_engine(device)
    adam = AdamConfig().init()
    loss_before = loss_fn.forward(model.forward(x), y)
    adam.step(A1_LR, model.clone(), GradientsParams.from_grads(loss_before.backward(), model))
    step_count = adam.to_record()[model.fc1.weight.id].time
    loss_unchanged = _same(loss_fn.forward(model.forward(x), y), loss_before)
    adam.step(
        A1_LR,
        model,
        GradientsParams.from_grads(loss_fn.forward(model.forward(x), y).backward(), model),
    )
    return {
        "sgd": sgd,
        "adam.state_steps": step_count,
        "adam.loss_unchanged": loss_unchanged,
        "use_after_step": capture(lambda: model.forward(x)),
    }


_MOVED_FIX = "model = optim.step(lr, model, grads)"

CHECKS = [
    differ(
        "*loss_unchanged",
        because="harness.engine.optim.ModuleOptimizer.step",
        relation=flags(
            False, True, "PyTorch's loss moved; the engine's discarded step left it unchanged"
        ),
    ),
    agree("adam.state_steps"),
    expect("adam.state_steps", "engine", 1),
    differ(
        "use_after_step",
        left="engine",
        right="torch",
        because="harness.engine.module.MovedValueError",
        relation=raises_vs_value("MovedValueError"),
    ),
    expect(
        "use_after_step",
        "engine",
        raises_message(_MOVED_FIX, exact=False),
    ),
]
