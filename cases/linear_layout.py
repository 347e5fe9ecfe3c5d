"""The layout of a Linear layer's weight.

PyTorch's ``nn.Linear(4, 8)`` stores its weight as ``[out, in] = [8, 4]`` and computes
``x @ W.T + b``; burn's ``LinearConfig::new(4, 8)`` stores ``[in, out] = [4, 8]`` and computes
``x @ W + b``. Both initialise weight and bias from U(-1/sqrt(in), 1/sqrt(in)) (different
generators, so different values). Given the same values, one transposed, the outputs agree:
this is why every A1 report compares weights in PyTorch's layout.
"""

import numpy as np
import torch

from harness.a1 import a1_arrays
from harness.case import agree, differ, expect, predicate
from harness.engine import Device, Linear, LinearConfig, Param, Tensor

D_IN, D_OUT = 4, 8
BOUND = 1 / np.sqrt(D_IN)


def torch_side():
    layer = torch.nn.Linear(D_IN, D_OUT)
    weight, bias = layer.weight.detach(), layer.bias.detach()
    arrays = a1_arrays()
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(arrays["fc1.weight"]))
        layer.bias.copy_(torch.from_numpy(arrays["fc1.bias"]))
    return {
        "weight_shape": list(weight.shape),
        "init_within_bound": bool((weight.abs() <= BOUND).all() and (bias.abs() <= BOUND).all()),
        "forward": layer(torch.from_numpy(arrays["x"])),
    }


def engine_side():
    device = Device.flex().autodiff()
    layer = LinearConfig(D_IN, D_OUT).init(device)
    weight, bias = layer.weight.val().numpy(), layer.bias.val().numpy()
    arrays = a1_arrays()
    layer = Linear(
        weight=Param.from_tensor(Tensor.from_numpy(arrays["fc1.weight"].T.copy(), device)),
        bias=Param.from_tensor(Tensor.from_numpy(arrays["fc1.bias"], device)),
    )
    return {
        "weight_shape": list(weight.shape),
        "init_within_bound": bool(
            (np.abs(weight) <= BOUND).all() and (np.abs(bias) <= BOUND).all()
        ),
        "forward": layer.forward(Tensor.from_numpy(arrays["x"], device)),
    }


CHECKS = [
    differ(
        "weight_shape",
        because="harness.engine.module.Linear",
        relation=predicate(
            "the engine's shape is PyTorch's reversed", lambda t, e: list(reversed(t)) == e
        ),
    ),
    expect("weight_shape", "engine", [D_IN, D_OUT]),
    agree("init_within_bound"),
    expect("init_within_bound", "engine", True),
    agree("forward"),
]
