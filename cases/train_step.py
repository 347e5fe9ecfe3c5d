"""One training step of the A1 model (SGD, lr 0.1) on both sides.

Forward, cross-entropy, backward and the update agree within 1e-6, and each row shows its ULP
count. PyTorch's loss is 0-d and burn's is ``[1]``; the loss is recorded as ``[1]`` on both sides
here so the numbers can be compared (``cross_entropy_variants`` shows the shape difference).
"""

import torch
import torch.nn.functional as F

from harness.a1 import (
    A1_LR,
    a1_engine,
    a1_torch,
    engine_grads,
    engine_params,
    torch_grads,
    torch_params,
)
from harness.case import agree
from harness.engine import CrossEntropyLossConfig, Device, GradientsParams, SgdConfig


def torch_side():
    model, x, y = a1_torch()
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    grads = torch_grads(model)
    optim.step()
    loss_after = F.cross_entropy(model(x), y)
    return {
        "logits": logits,
        "loss": loss.reshape(1),
        "grads": grads,
        "params_after": torch_params(model),
        "loss_after": loss_after.reshape(1),
    }


def engine_side():
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    optim = SgdConfig().init()
    loss_fn = CrossEntropyLossConfig().init(device)
    logits = model.forward(x)
    loss = loss_fn.forward(logits, y)
    grads = GradientsParams.from_grads(loss.backward(), model)
    grad_values = engine_grads(grads, model)
    model = optim.step(A1_LR, model, grads)
    loss_after = loss_fn.forward(model.forward(x), y)
    return {
        "logits": logits,
        "loss": loss,
        "grads": grad_values,
        "params_after": engine_params(model),
        "loss_after": loss_after,
    }


CHECKS = [agree("*")]
