"""Gradients matched to parameters by ``ParamId``.

``GradientsParams.from_grads`` on A1 holds one entry per parameter (``len() == 4``); each
parameter's gradient is found by its ParamId, and fc2.bias's gradient equals PyTorch's
``fc2.bias.grad``. ParamIds print as 13-character lowercase base32hex strings (burn's format)
and are new on every run and for every model built, so the case records their format, not their
value. PyTorch matches gradients to parameters by object identity (``.grad`` on the tensor).
"""

import re

import torch.nn.functional as F

from harness.a1 import a1_engine, a1_torch
from harness.case import agree, expect
from harness.engine import CrossEntropyLossConfig, Device, GradientsParams

BASE32HEX_13 = re.compile(r"[0-9a-v]{13}")


def torch_side():
    model, x, y = a1_torch()
    F.cross_entropy(model(x), y).backward()
    with_grad = [name for name, p in model.named_parameters() if p.grad is not None]
    return {
        "num_grads": len(with_grad),
        "found": {name: model.get_parameter(name).grad is not None for name in with_grad},
        "fc2_bias_grad": model.fc2.bias.grad,
    }


def engine_side():
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    loss = CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    grads = GradientsParams.from_grads(loss.backward(), model)
    ids = [str(param.id) for _, param in model.params()]
    other_ids = [str(param.id) for _, param in a1_engine(device)[0].params()]
    return {
        "num_grads": len(grads),
        "found": {path: grads.get(param.id) is not None for path, param in model.params()},
        "fc2_bias_grad": grads.get(model.fc2.bias.id),
        "param_id.format_ok": all(BASE32HEX_13.fullmatch(i) for i in ids),
        "param_id.distinct": len(set(ids)) == len(ids),
        "param_id.new_per_model": not set(ids) & set(other_ids),
    }


CHECKS = [
    agree("num_grads"),
    agree("found.*"),
    agree("fc2_bias_grad"),
    expect("num_grads", "engine", 4),
    expect("param_id.*", "engine", True),
]
