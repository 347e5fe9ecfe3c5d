"""The model this project ports: a linear layer 3 -> 2 with fixed weights, trained with MSE.

Written twice, once for PyTorch and once for burn's API in Python (``harness.engine``), so that
the cases and tests can run the same experiment on both and compare. Weights are stored in
burn's layout, ``[d_in, d_out]``; PyTorch's ``nn.Linear`` holds the transpose.
"""

import numpy as np
import torch

from harness.engine import Device, Linear, Param, Tensor

WEIGHT = np.array([[0.5, -0.25], [0.125, 0.75], [-0.5, 0.25]], np.float32)  # [d_in, d_out]
BIAS = np.array([0.1, -0.2], np.float32)
INPUTS = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25], [0.3, -0.7, 1.1]], np.float32)
TARGETS = np.array([[0.5, 1.0], [0.0, -0.5], [0.25, 0.25]], np.float32)


def torch_model() -> torch.nn.Linear:
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(WEIGHT.T.copy()))
        model.bias.copy_(torch.from_numpy(BIAS))
    return model


def engine_model(device: Device) -> Linear:
    return Linear(
        weight=Param.from_tensor(Tensor.from_numpy(WEIGHT, device).require_grad()),
        bias=Param.from_tensor(Tensor.from_numpy(BIAS, device).require_grad()),
    )
