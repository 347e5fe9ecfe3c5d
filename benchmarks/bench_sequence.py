"""The sequence modules' speed against PyTorch eager (issue 15), interleaved in one process:
one Adam training step of a 2-layer transformer encoder (batch 16, sequence 32, d_model 32,
4 heads, d_ff 64, relu, dropout 0, a Linear head, cross-entropy over every position), and an
LSTM and a GRU forward + backward over 32 time steps (batch 16, 32 -> 64).

Run: ``make bench ARGS=benchmarks/bench_sequence.py``. Both sides start from the same PyTorch
weights (imported through the PyTorch rules); after the timed rounds the LSTM and GRU input
gradients must agree and the two transformers must have taken the same number of steps.
"""

from __future__ import annotations

import mlp
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.a1 import import_torch_weights
from harness.engine import (
    ActivationConfig,
    AdamConfig,
    CrossEntropyLossConfig,
    Device,
    GradientsParams,
    GruConfig,
    LinearConfig,
    LstmConfig,
    Module,
    Tensor,
    TransformerEncoderConfig,
    TransformerEncoderInput,
)

B, S, D, NH, FF, V = 16, 32, 32, 4, 64, 16
LSTM_IN, LSTM_H = 32, 64


def _load(engine_module, torch_module):
    model, result = import_torch_weights(torch_module, engine_module)
    assert not (result.missing or result.errors), result
    return model


class TorchNet(torch.nn.Module):
    def __init__(self, d_model: int = D, d_ff: int = FF) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model, NH, d_ff, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d_model, V)

    def forward(self, x):
        return self.head(self.encoder(x))


class Net(Module):
    def __init__(self, device, d_model: int = D, d_ff: int = FF) -> None:
        config = TransformerEncoderConfig(d_model, d_ff, NH, 2, dropout=0.0)
        self.encoder = config.with_activation(ActivationConfig.Relu).init(device)
        self.head = LinearConfig(d_model, V).init(device)

    def forward(self, x):
        return self.head(self.encoder(TransformerEncoderInput.new(x)))


def _transformer_data(d_model: int):
    rng = np.random.default_rng(41)
    x = rng.standard_normal((B, S, d_model)).astype(np.float32)
    return x, rng.integers(0, V, B * S).astype(np.int64)


def transformer_sides(d_model: int = D, d_ff: int = FF) -> dict:
    """Engine and torch Adam trainers from the same torch weights: `step()` and `params()`
    each, the head's parameters in the engine's layout (weight ``[d_model, V]``)."""
    torch.manual_seed(40)
    ref = TorchNet(d_model, d_ff)
    x_np, y_np = _transformer_data(d_model)
    device = Device.flex().autodiff()
    state = {
        "model": _load(Net(device, d_model, d_ff), ref),
        "optim": AdamConfig(epsilon=1e-8).init(),
    }
    x, y = Tensor.from_numpy(x_np, device), Tensor.from_numpy(y_np, device)
    loss_fn = CrossEntropyLossConfig().init(device)
    optim_t = torch.optim.Adam(ref.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def engine_step():
        model = state["model"]
        loss = loss_fn.forward(model(x).reshape([B * S, V]), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        state["model"] = state["optim"].step(1e-3, model, grads)

    def torch_step():
        optim_t.zero_grad()
        F.cross_entropy(ref(xt).reshape(B * S, V), yt).backward()
        optim_t.step()

    def engine_params():
        head = state["model"].head
        return {"head.weight": head.weight.val().numpy(), "head.bias": head.bias.val().numpy()}

    def torch_params():
        return {
            "head.weight": ref.head.weight.detach().numpy().T,
            "head.bias": ref.head.bias.detach().numpy(),
        }

    return {"engine": (engine_step, engine_params), "torch": (torch_step, torch_params)}


def test_transformer_step(interleaved):
    mlp.pin_threads()
    sides = {fw: t[0] for fw, t in transformer_sides().items()}
    interleaved("transformer step / torch", sides, max_rounds=200)


def _recurrent_sides(torch_module, engine_module) -> tuple[dict, dict]:
    """Engine and torch forward + backward of the whole output's sum, from the same weights and
    input; the second dict receives each side's input gradient."""
    device = Device.flex().autodiff()
    module = _load(engine_module(device), torch_module)
    x_np = np.random.default_rng(43).standard_normal((B, S, LSTM_IN)).astype(np.float32)
    grads: dict = {}

    def engine():
        x = Tensor.from_numpy(x_np, device).require_grad()
        out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        grads["engine"] = x.grad(out.sum().backward()).numpy()

    def torch_side():
        x = torch.tensor(x_np, requires_grad=True)
        torch_module(x)[0].sum().backward()
        grads["torch"] = x.grad.numpy()

    return {"engine": engine, "torch": torch_side}, grads


@pytest.mark.parametrize(
    ("kind", "seed", "config"),
    [("lstm", 42, LstmConfig), ("gru", 44, GruConfig)],
    ids=["lstm", "gru"],
)
def test_recurrent_forward_backward(interleaved, kind, seed, config):
    mlp.pin_threads()
    torch.manual_seed(seed)
    ref = getattr(torch.nn, kind.upper())(LSTM_IN, LSTM_H, batch_first=True)
    sides, grads = _recurrent_sides(ref, config(LSTM_IN, LSTM_H, True).init)
    interleaved(f"{kind} 32 steps fwd+bwd / torch", sides, max_rounds=200)
    np.testing.assert_allclose(grads["engine"], grads["torch"], rtol=1e-4, atol=1e-5)
