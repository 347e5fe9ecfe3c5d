"""Three Adam steps on the ported layer: parameters and losses agree with PyTorch's Adam.

burn's Adam defaults to ``epsilon = 1e-5`` where PyTorch's ``eps`` defaults to 1e-8; the
PyTorch side passes burn's value, so the two optimizers compute the same update.
"""

import numpy as np
import torch
import torch.nn.functional as F
from porting_model import INPUTS, TARGETS, engine_model, torch_model

from harness.case import agree
from harness.engine import AdamConfig, Device, GradientsParams, MseLoss, Reduction, Tensor

LR, STEPS = 0.01, 3


def torch_side():
    model = torch_model()
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    x, y = torch.from_numpy(INPUTS), torch.from_numpy(TARGETS)
    losses = []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach().reshape(1))
    return {
        "losses": torch.cat(losses),
        "weight": model.weight.detach().T,
        "bias": model.bias.detach(),
    }


def engine_side():
    device = Device.flex().autodiff()
    model = engine_model(device)
    optim = AdamConfig().init()
    x, y = Tensor.from_numpy(INPUTS, device), Tensor.from_numpy(TARGETS, device)
    losses = []
    for _ in range(STEPS):
        loss = MseLoss().forward(model.forward(x), y, Reduction.Mean)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(LR, model, grads)
        losses.append(loss.detach().numpy())
    return {
        "losses": np.concatenate(losses),
        "weight": model.weight.val(),
        "bias": model.bias.val(),
    }


CHECKS = [agree("*")]
