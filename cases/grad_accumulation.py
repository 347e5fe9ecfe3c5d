"""Gradient accumulation on A1: the full batch against two half batches (rows 0..2 and 2..4),
each half's loss divided by 2.

PyTorch accumulates by not calling ``zero_grad`` between the halves; the engine adds the two
``GradientsParams`` with a ``GradientsAccumulator``. Four comparisons hold within 1e-6: full
torch vs full engine, accumulated torch vs accumulated engine, and full vs accumulated within
each side. The same-side results are close but not bit-identical: the full batch sums four
rows in one reduction, the halves sum two rows each and then add the two partial gradients, and
float addition is not associative.
"""

import torch.nn.functional as F

from harness.a1 import A1_HALVES, a1_engine, a1_torch, engine_grads, torch_grads
from harness.case import agree
from harness.engine import CrossEntropyLossConfig, Device, GradientsAccumulator, GradientsParams

SUMMATION_ORDER = (
    "close, not bit-identical: two partial sums added differ from one sum of four rows"
)


def torch_side():
    model, x, y = a1_torch()
    F.cross_entropy(model(x), y).backward()
    full = torch_grads(model)

    model, x, y = a1_torch()
    for start, stop in A1_HALVES:
        loss = F.cross_entropy(model(x[start:stop]), y[start:stop]) / 2
        loss.backward()  # no zero_grad: .grad accumulates
    return {"full.grads": full, "acc.grads": torch_grads(model)}


def engine_side():
    device = Device.flex().autodiff()
    loss_fn = CrossEntropyLossConfig().init(device)
    model, x, y = a1_engine(device)
    full = GradientsParams.from_grads(loss_fn.forward(model.forward(x), y).backward(), model)
    full_grads = engine_grads(full, model)

    model, x, y = a1_engine(device)
    accumulator = GradientsAccumulator()
    for start, stop in A1_HALVES:
        loss = (
            loss_fn.forward(model.forward(x.slice([(start, stop)])), y.slice([(start, stop)])) / 2
        )
        accumulator.accumulate(model, GradientsParams.from_grads(loss.backward(), model))
    return {"full.grads": full_grads, "acc.grads": engine_grads(accumulator.grads(), model)}


CHECKS = [
    agree("grads.*", "torch:full.", "engine:full."),
    agree("grads.*", "torch:acc.", "engine:acc."),
    agree("grads.*", "torch:full.", "torch:acc.", note=SUMMATION_ORDER),
    agree("grads.*", "engine:full.", "engine:acc.", note=SUMMATION_ORDER),
]
