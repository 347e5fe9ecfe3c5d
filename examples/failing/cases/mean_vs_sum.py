"""A porting bug on purpose: the engine side sums the squared errors where PyTorch averages.

Run by the README to show a failing check (``python compare.py --cases-dir
examples/failing/cases --golden-dir examples/failing/golden``); its goldens were blessed with
``--force`` so that only the check fails.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import agree
from harness.engine import Device, MseLoss, Reduction, Tensor

PRED = np.array([[0.5, 1.5], [2.0, -1.0]], np.float32)
TARGET = np.array([[0.0, 1.0], [2.0, 0.0]], np.float32)


def torch_side():
    pred = torch.from_numpy(PRED).requires_grad_()
    loss = F.mse_loss(pred, torch.from_numpy(TARGET))
    loss.backward()
    return {"loss": loss.reshape(1), "grad": pred.grad}


def engine_side():
    device = Device.flex().autodiff()
    pred = Tensor.from_numpy(PRED, device).require_grad()
    loss = MseLoss().forward(pred, Tensor.from_numpy(TARGET, device), Reduction.Sum)  # the bug
    return {"loss": loss, "grad": pred.grad(loss.backward())}


CHECKS = [agree("*")]
