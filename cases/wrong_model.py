"""Training a model the optimizer is not bound to.

PyTorch: the optimizer is built on one model while a deep copy is trained; ``step()`` updates
the original's parameters, which have no gradients, so nothing moves: the copy is not updated
and the original has no gradients. Engine: gradients paired with another A1 instance (new
ParamIds) give an empty ``GradientsParams`` (``len() == 0``), and the step leaves the trained
model unchanged. Neither side warns.
"""

import copy
import warnings

import torch
import torch.nn.functional as F

from harness.a1 import (
    A1_LR,
    PARAM_NAMES,
    a1_arrays,
    a1_engine,
    a1_torch,
    engine_params,
    torch_params,
)
from harness.case import agree, equals, expect
from harness.engine import CrossEntropyLossConfig, Device, GradientsParams, SgdConfig


def torch_side():
    bound, x, y = a1_torch()
    optim = torch.optim.SGD(bound.parameters(), lr=A1_LR)
    trained = copy.deepcopy(bound)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.cross_entropy(trained(x), y).backward()
        optim.step()
    return {
        "trained": torch_params(trained),
        "bound_has_grads": any(p.grad is not None for p in bound.parameters()),
        "warned": bool(caught),
    }


def engine_side():
    device = Device.flex().autodiff()
    bound, _, _ = a1_engine(device)
    optim = SgdConfig().init()
    trained, x, y = a1_engine(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = CrossEntropyLossConfig().init(device).forward(trained.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), bound)
        num_grads = len(grads)
        trained = optim.step(A1_LR, trained, grads)
    return {
        "trained": engine_params(trained),
        "num_grads": num_grads,
        "warned": bool(caught),
    }


CHECKS = [
    agree("trained.*"),
    agree("warned"),
    expect("warned", "engine", False),
    expect("num_grads", "engine", 0),
    expect("bound_has_grads", "torch", False),
    *[
        expect(f"trained.{name}", side, equals(value))
        for name, value in a1_arrays().items()
        if name in PARAM_NAMES
        for side in ("torch", "engine")
    ],
]
