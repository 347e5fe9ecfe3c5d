"""Linear-ReLU-Linear + cross-entropy training steps, float32, in three implementations: the
engine, PyTorch eager and a hand-written NumPy forward/backward (the floor).

``setup(size, optimizer)`` returns a ``Trainer``: ``step()`` runs one training step in place,
``params()`` returns the current parameters as NumPy arrays in the engine's layout
(``fc1.weight`` is ``[in, out]``), so that the sides of a benchmark can be checked to agree.
All sides start from the same seeded weights and batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SIZES = {
    # name: (d_in, hidden, classes, batch)
    "tiny": (4, 8, 3, 4),
    "medium": (784, 256, 10, 128),
    "large": (1024, 4096, 1024, 512),
}
LR = {"sgd": 0.01, "adam": 1e-3}
ADAM_EPSILON = 1e-5  # burn's default; torch's Adam is given the same
NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
AGREE = {"rtol": 1e-4, "atol": 1e-5}  # float32 sides summing in different orders


@dataclass(frozen=True)
class Trainer:
    step: Callable[[], None]
    params: Callable[[], dict[str, np.ndarray]]


def pin_threads() -> None:
    """One thread for torch and for every BLAS/OpenMP pool, for all frameworks alike."""
    import torch
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    torch.set_num_threads(1)


def make_data(size: str):
    """Seeded float32 weights in engine layout ([in, out]), inputs and int64 labels."""
    d_in, hidden, classes, batch = SIZES[size]
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((d_in, hidden)) / np.sqrt(d_in)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    w2 = (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32)
    b2 = np.zeros(classes, np.float32)
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int64)
    return (w1, b1, w2, b2), x, y


def engine_setup(size: str, optimizer: str = "sgd", tape: bool = False) -> Trainer:
    """The engine's step; with ``tape``, loss and gradients come from a recorded step
    (harness.engine.tape: replayed from the third step on, the same bits)."""
    from harness.engine import (
        AdamConfig,
        CrossEntropyLossConfig,
        Device,
        GradientsParams,
        SgdConfig,
        Tensor,
    )
    from harness.engine.module import Linear, Module, Param, Relu

    class Mlp(Module):
        def __init__(self, fc1, fc2) -> None:
            self.fc1 = fc1
            self.relu = Relu()
            self.fc2 = fc2

        def forward(self, x):
            return self.fc2.forward(self.relu.forward(self.fc1.forward(x)))

    device = Device.flex().autodiff()
    (w1, b1, w2, b2), x, y = make_data(size)

    def param(a):
        return Param.from_tensor(Tensor.from_numpy(a, device))

    state = {"model": Mlp(Linear(param(w1), param(b1)), Linear(param(w2), param(b2)))}
    xt, yt = Tensor.from_numpy(x, device), Tensor.from_numpy(y, device)
    loss_fn = CrossEntropyLossConfig().init(device)
    optim = (AdamConfig(epsilon=ADAM_EPSILON) if optimizer == "adam" else SgdConfig()).init()
    lr = LR[optimizer]

    def loss_of(model, x, y):
        return loss_fn.forward(model.forward(x), y)

    def loss_and_grads(model, x, y):
        loss = loss_of(model, x, y)
        return loss, loss.backward()

    if tape:
        from harness.engine import recorded

        loss_and_grads = recorded(loss_of)

    def step():
        model = state.pop("model")  # the optimizer consumes the model and returns a new one
        _, grads = loss_and_grads(model, xt, yt)
        state["model"] = optim.step(lr, model, GradientsParams.from_grads(grads, model))

    def params():
        return {path: p.val().numpy() for path, p in state["model"].params()}

    return Trainer(step, params)


def torch_setup(size: str, optimizer: str = "sgd") -> Trainer:
    import torch
    from torch import nn

    (w1, b1, w2, b2), x, y = make_data(size)
    d_in, hidden, classes, _ = SIZES[size]
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, classes))
    with torch.no_grad():
        for layer, w, b in ((model[0], w1, b1), (model[2], w2, b2)):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    lr = LR[optimizer]
    if optimizer == "adam":
        optim = torch.optim.Adam(model.parameters(), lr=lr, eps=ADAM_EPSILON)
    else:
        optim = torch.optim.SGD(model.parameters(), lr=lr)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = nn.functional.cross_entropy

    def step():
        optim.zero_grad(set_to_none=True)
        loss_fn(model(xt), yt).backward()
        optim.step()

    def params():
        layers = (model[0].weight.T, model[0].bias, model[2].weight.T, model[2].bias)
        return {n: t.detach().numpy().copy() for n, t in zip(NAMES, layers, strict=True)}

    return Trainer(step, params)


def numpy_setup(size: str, optimizer: str = "sgd") -> Trainer:
    """The floor: forward, backward and an in-place SGD update, no framework at all."""
    if optimizer != "sgd":
        raise ValueError(f"the NumPy floor implements SGD only, not {optimizer!r}")
    (w1, b1, w2, b2), x, y = make_data(size)
    batch = x.shape[0]
    rows = np.arange(batch)
    lr = np.float32(LR["sgd"])

    def step():
        h = x @ w1
        h += b1
        a = np.maximum(h, 0)
        z = a @ w2
        z += b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        e /= e.sum(axis=1, keepdims=True)  # softmax: dloss/dz = (p - onehot) / batch
        e[rows, y] -= 1
        e /= np.float32(batch)
        gw2 = a.T @ e
        gb2 = e.sum(axis=0)
        da = e @ w2.T
        da[h <= 0] = 0
        gw1 = x.T @ da
        gb1 = da.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            g *= lr
            p -= g

    def params():
        return {n: p.copy() for n, p in zip(NAMES, (w1, b1, w2, b2), strict=True)}

    return Trainer(step, params)


SETUPS = {
    "engine": engine_setup,
    "tape": lambda size, optimizer="sgd": engine_setup(size, optimizer, tape=True),
    "torch": torch_setup,
    "numpy": numpy_setup,
}


def assert_agree(params: dict[str, dict[str, np.ndarray]], rtol: float, atol: float) -> None:
    """Every side's parameters equal the first side's within ``atol + rtol * |first|``."""
    (first, reference), *others = params.items()
    for side, values in others:
        assert values.keys() == reference.keys(), (side, sorted(values), sorted(reference))
        for name, ref in reference.items():
            np.testing.assert_allclose(
                values[name], ref, rtol=rtol, atol=atol, err_msg=f"{side} vs {first}: {name}"
            )
