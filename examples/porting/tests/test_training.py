"""A training run of the ported layer recorded as a golden with the ``conformance`` fixture:
the loss trajectory and final parameters of five SGD steps on the engine."""

import numpy as np
from porting_model import INPUTS, TARGETS, engine_model

from harness.engine import Device, GradientsParams, MseLoss, Reduction, SgdConfig, Tensor


def test_sgd_trajectory(conformance):
    device = Device.flex().autodiff()
    model, optim = engine_model(device), SgdConfig().init()
    x, y = Tensor.from_numpy(INPUTS, device), Tensor.from_numpy(TARGETS, device)
    losses = []
    for _ in range(5):
        loss = MseLoss().forward(model.forward(x), y, Reduction.Mean)
        model = optim.step(0.1, model, GradientsParams.from_grads(loss.backward(), model))
        losses.append(loss.detach().numpy())
    trajectory = np.concatenate(losses)  # an array: compared within tolerance, not exactly
    conformance.check(
        {"losses": trajectory, "weight": model.weight.val(), "bias": model.bias.val()}
    )
