"""What a handle taken before the optimizer step sees afterwards.

PyTorch updates parameters in place: an alias of ``fc1.weight`` taken before ``step()`` is the
same object and buffer and shows the new values, while a ``.detach().clone()`` copy keeps the old
ones. The engine's step returns a new module: a ``model.clone()`` taken before the step keeps the
old values, the updated parameter keeps its ParamId and is still a marked leaf.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import A1_LR, a1_arrays, a1_engine, a1_torch, engine_params, torch_params
from harness.case import agree, differ, expect, predicate
from harness.engine import CrossEntropyLossConfig, Device, GradientsParams, SgdConfig


def torch_side():
    model, x, y = a1_torch()
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    alias = model.fc1.weight
    copy = model.fc1.weight.detach().clone()
    F.cross_entropy(model(x), y).backward()
    optim.step()
    return {
        "after": torch_params(model),
        "handle.fc1.weight": alias,
        "copy.fc1.weight": copy,
        "alias_is_same_object": alias is model.fc1.weight,
        "alias_same_buffer": alias.data_ptr() == model.fc1.weight.data_ptr(),
    }


def engine_side():
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    optim = SgdConfig().init()
    before = model.clone()
    loss = CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    model = optim.step(A1_LR, model, GradientsParams.from_grads(loss.backward(), model))
    return {
        "after": engine_params(model),
        "handle.fc1.weight": engine_params(before)["fc1.weight"],
        "param_id_unchanged": before.fc1.weight.id == model.fc1.weight.id,
        "new_is_marked_leaf": model.fc1.weight.val().is_require_grad(),
    }


def _torch_moved_engine_kept(torch_handle, engine_handle):
    initial = a1_arrays()["fc1.weight"]
    return not np.array_equal(torch_handle, initial) and np.array_equal(engine_handle, initial)


CHECKS = [
    agree("after.*"),
    differ(
        "handle.fc1.weight",
        because="harness.engine.module.Module.clone",
        relation=predicate(
            "PyTorch's alias shows the update, the engine's clone the initial weights",
            _torch_moved_engine_kept,
        ),
    ),
    agree("fc1.weight", "torch:copy.", "engine:handle."),
    expect("alias_*", "torch", True),
    expect("param_id_unchanged", "engine", True),
    expect("new_is_marked_leaf", "engine", True),
]
