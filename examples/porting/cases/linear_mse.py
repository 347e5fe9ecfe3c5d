"""Forward, MSE loss and gradients of the ported linear layer agree with PyTorch.

The weight gradient is compared in burn's layout ``[d_in, d_out]``: PyTorch's is transposed
before it is recorded. The loss is recorded as ``[1]`` on both sides (burn's shape).
"""

import torch
import torch.nn.functional as F
from porting_model import INPUTS, TARGETS, engine_model, torch_model

from harness.case import agree
from harness.engine import Device, MseLoss, Reduction, Tensor


def torch_side():
    model = torch_model()
    out = model(torch.from_numpy(INPUTS))
    loss = F.mse_loss(out, torch.from_numpy(TARGETS))
    loss.backward()
    return {
        "out": out,
        "loss": loss.reshape(1),
        "grads": {"weight": model.weight.grad.T, "bias": model.bias.grad},
    }


def engine_side():
    device = Device.flex().autodiff()
    model = engine_model(device)
    out = model.forward(Tensor.from_numpy(INPUTS, device))
    loss = MseLoss().forward(out, Tensor.from_numpy(TARGETS, device), Reduction.Mean)
    grads = loss.backward()
    return {
        "out": out,
        "loss": loss,
        "grads": {"weight": model.weight.val().grad(grads), "bias": model.bias.val().grad(grads)},
    }


CHECKS = [agree("*")]
