"""The LSTM and GRU loops on fused step kernels (harness.engine.nn.rnn.fused, fused_gru)
against the op-by-op loops (`op_by_op()`): the same bits for outputs, final states, input and
param gradients, in float32 and float64, over the configurations and graph shapes that change
the fused nodes' placement; and each fallback to op by op taken when its condition changes."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from harness.engine import Device, GruConfig, LstmConfig, Tensor
from harness.engine.module import Param
from harness.engine.nn.rnn import fused
from harness.engine.nn.rnn.fused import op_by_op

AUTODIFF = Device.flex().autodiff()
PLAIN = Device.flex()
B, S, D_IN, H = 3, 5, 4, 6


def _module(config, dtype: str, device=AUTODIFF):
    """`config.init(device)` with its params cast exactly to `dtype` (fresh marked leaves)."""
    module = config.init(device)
    if dtype == "float32":
        return module
    return module.map(
        lambda p: Param.from_tensor(Tensor._wrap(p.val()._data.astype(dtype), device))
    )


def _data(dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((B, S, D_IN)).astype(np.float32).astype(dtype)


def _lstm_loss(out, state):
    """Every output used, the final cell state twice (three consumers with the tape's own)."""
    cell, hidden = state.cell, state.hidden
    return out.sum() + cell.sum().mul_scalar(2.0) + cell.mul(cell).sum() + hidden.mul(hidden).sum()


def _run(module, x_np, loss_fn, device=AUTODIFF, call=None, tape: bool = True, leaves=None):
    """(values, gradients) of one forward + backward, on tapes or op by op; `leaves` (a dict
    the call fills) names more leaves whose gradients are compared."""
    with contextlib.nullcontext() if tape else op_by_op():
        x = Tensor.from_numpy(x_np, device)
        if device is AUTODIFF:
            x = x.require_grad()
        result = module(x) if call is None else call(module, x)
        values = _values(result)
        if device is not AUTODIFF:
            return values, {}
        grads = loss_fn(*result if isinstance(result, tuple) else (result,)).backward()
    found = {"x": x.grad(grads)}
    found |= {path: p.val().grad(grads) for path, p in module.params()}
    found |= {name: t.grad(grads) for name, t in (leaves or {}).items()}
    return values, {k: None if g is None else g.numpy() for k, g in found.items()}


def _values(result) -> list[np.ndarray]:
    if isinstance(result, Tensor):
        return [result.numpy()]
    out, state = result
    states = [state] if isinstance(state, Tensor) else vars(state).values()
    return [out.numpy(), *(t.numpy() for t in states)]


def assert_same_bits(module, x_np, loss_fn, **kw):
    values, grads = _run(module, x_np, loss_fn, tape=True, **kw)
    ref_values, ref_grads = _run(module, x_np, loss_fn, tape=False, **kw)
    assert len(values) == len(ref_values)
    for got, ref in zip(values, ref_values, strict=True):
        assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes()
    assert grads.keys() == ref_grads.keys()
    for key, ref in ref_grads.items():
        got = grads[key]
        assert (got is None) == (ref is None), key
        if ref is not None:
            assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), key


LSTM_CONFIGS = {
    "bias": LstmConfig(D_IN, H, True),
    "no_bias": LstmConfig(D_IN, H, False),
    "reverse": LstmConfig(D_IN, H, True, reverse=True),
    "seq_first": LstmConfig(D_IN, H, True, batch_first=False),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(LSTM_CONFIGS))
def test_lstm_tape_same_bits(name, dtype):
    assert_same_bits(_module(LSTM_CONFIGS[name], dtype), _data(dtype), _lstm_loss)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_tape_same_bits_output_only_and_cell_only(dtype):
    lstm = _module(LSTM_CONFIGS["bias"], dtype)
    assert_same_bits(lstm, _data(dtype), lambda out, state: out.sum())
    assert_same_bits(lstm, _data(dtype), lambda out, state: state.cell.sum())


def test_lstm_tape_same_bits_deep_input_and_tracked_state():
    """An input deep in a graph (its Linears deeper than the first hidden ones) and a given
    tracked initial state (the cell's other consumers: the first step runs op by op)."""
    lstm = _module(LSTM_CONFIGS["bias"], "float32")
    rng = np.random.default_rng(3)
    c0 = Tensor.from_numpy(rng.standard_normal((B, H)).astype(np.float32), AUTODIFF)
    h0 = Tensor.from_numpy(rng.standard_normal((B, H)).astype(np.float32), AUTODIFF)
    state = {}

    def call(module, x):
        deep = x
        for _ in range(12):
            deep = deep.mul_scalar(1.0001).add_scalar(0.0)
        c, h = c0.require_grad(), h0.require_grad()
        state["c"], state["h"] = c, h
        return module(deep, fused_state(c.mul_scalar(1.5), h.tanh()))

    def loss(out, st):
        return _lstm_loss(out, st) + state["c"].sum() + state["c"].mul(state["c"]).sum()

    assert_same_bits(lstm, _data("float32"), loss, call=call, leaves=state)


def fused_state(cell, hidden):
    from harness.engine import LstmState

    return LstmState.new(cell, hidden)


def test_lstm_tape_same_values_on_the_plain_device():
    lstm = _module(LSTM_CONFIGS["bias"], "float64", PLAIN)
    assert_same_bits(lstm, _data("float64"), None, device=PLAIN)


def test_lstm_tape_errors_are_the_op_by_op_ones():
    lstm = _module(LSTM_CONFIGS["bias"], "float32")
    bad = Tensor.from_numpy(_data("float64"), AUTODIFF)
    with pytest.raises(Exception) as tape_error:
        lstm(bad)
    with op_by_op(), pytest.raises(Exception) as ref_error:
        lstm(bad)
    assert type(tape_error.value) is type(ref_error.value)
    assert str(tape_error.value) == str(ref_error.value)


# ---- the fallbacks: each condition changed, the loop runs op by op ----------------------------


def _count_tape_steps(monkeypatch):
    calls = []
    original = fused._fused_step

    def counted(*args):
        done = original(*args)
        calls.append(done)
        return done

    monkeypatch.setattr(fused, "_fused_step", counted)
    return calls


def test_lstm_tape_runs_every_step_after_the_first(monkeypatch):
    calls = _count_tape_steps(monkeypatch)
    lstm = _module(LSTM_CONFIGS["bias"], "float32")
    _run(lstm, _data("float32"), _lstm_loss)
    # the first step from the zero state: its hidden Linears are not deeper than the input's
    assert calls == [False] + [True] * (S - 1)


@pytest.mark.parametrize(
    "change",
    ["clip", "input_forget", "gate_activation", "frozen_param", "shared_param", "dtype"],
)
def test_lstm_tape_falls_back_when_a_condition_changes(monkeypatch, change):
    from harness.engine import ActivationConfig

    config = LSTM_CONFIGS["bias"]
    if change == "clip":
        config = LstmConfig(D_IN, H, True, clip=0.5)
    elif change == "input_forget":
        config = LstmConfig(D_IN, H, True, input_forget=True)
    elif change == "gate_activation":
        config = LstmConfig(D_IN, H, True, gate_activation=ActivationConfig.Relu)
    lstm = _module(config, "float32")
    if change == "frozen_param":  # a param not tracked: the requires-grad set changed
        gate = lstm.forget_gate.hidden_transform
        gate.bias = Param(gate.bias.id, gate.bias.val().set_require_grad(False))
    elif change == "shared_param":
        lstm.cell_gate.hidden_transform.weight = lstm.input_gate.hidden_transform.weight
    calls = _count_tape_steps(monkeypatch)
    x_np = _data("float64" if change == "dtype" else "float32")
    if change == "dtype":
        with pytest.raises(TypeError):
            _run(lstm, x_np, _lstm_loss)
    else:
        assert_same_bits(lstm, x_np, _lstm_loss)
    assert calls == []


# ---- GRU --------------------------------------------------------------------------------------

GRU_CONFIGS = {"bias": GruConfig(D_IN, H, True), "no_bias": GruConfig(D_IN, H, False)}


def _gru_loss(out):
    return out.sum() + out.mul(out).sum()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(GRU_CONFIGS))
def test_gru_tape_same_bits(name, dtype):
    assert_same_bits(_module(GRU_CONFIGS[name], dtype), _data(dtype), _gru_loss)


def test_gru_tape_same_bits_deep_input_and_tracked_state():
    gru = _module(GRU_CONFIGS["bias"], "float32")
    h0 = Tensor.from_numpy(np.random.default_rng(4).standard_normal((B, H)), AUTODIFF)
    leaf = {}

    def call(module, x):
        deep = x
        for _ in range(12):
            deep = deep.mul_scalar(1.0001)
        leaf["h"] = h0.cast("float32").require_grad()
        return module(deep, leaf["h"].tanh())

    def loss(out):
        return _gru_loss(out) + leaf["h"].sum() + leaf["h"].mul(leaf["h"]).sum()

    assert_same_bits(gru, _data("float32"), loss, call=call, leaves=leaf)


def test_gru_tape_same_values_on_the_plain_device():
    gru = _module(GRU_CONFIGS["bias"], "float64", PLAIN)
    assert_same_bits(gru, _data("float64"), None, device=PLAIN)


def test_gru_tape_runs_every_step_after_the_first(monkeypatch):
    from harness.engine.nn.rnn import fused_gru

    calls = []
    original = fused_gru._fused_step

    def counted(*args):
        new = original(*args)
        calls.append(new is not None)
        return new

    monkeypatch.setattr(fused_gru, "_fused_step", counted)
    _run(_module(GRU_CONFIGS["bias"], "float32"), _data("float32"), _gru_loss)
    assert calls == [False] + [True] * (S - 1)


@pytest.mark.parametrize("change", ["reset_before", "clip", "frozen_param"])
def test_gru_tape_falls_back_when_a_condition_changes(monkeypatch, change):
    from harness.engine.nn.rnn import fused_gru

    config = {
        "reset_before": GruConfig(D_IN, H, True, reset_after=False),
        "clip": GruConfig(D_IN, H, True, clip=0.5),
    }.get(change, GRU_CONFIGS["bias"])
    gru = _module(config, "float32")
    if change == "frozen_param":
        gate = gru.new_gate.input_transform
        gate.weight = Param(gate.weight.id, gate.weight.val().set_require_grad(False))
    calls = []
    monkeypatch.setattr(fused_gru, "_fused_step", lambda *a: calls.append(a))
    assert_same_bits(gru, _data("float32"), _gru_loss)
    assert calls == []


def test_a_replaced_rule_or_a_wrapped_forward_runs_op_by_op(monkeypatch):
    """harness.opmatrix.inject's replaced rule must reach the LSTM's sigmoids, and the
    localiser's wrapped module forwards must see the op-by-op Linear calls."""
    from harness.engine.module.layers import Linear
    from harness.opmatrix.inject import flipped_rule

    lstm = _module(LSTM_CONFIGS["bias"], "float32")
    calls = _count_tape_steps(monkeypatch)
    with flipped_rule("sigmoid"):
        assert_same_bits(lstm, _data("float32"), _lstm_loss)
    seen = []
    original = Linear.forward

    def wrapped(self, x):
        seen.append(self)
        return original(self, x)

    monkeypatch.setattr(Linear, "forward", wrapped)
    assert_same_bits(lstm, _data("float32"), _lstm_loss)
    assert calls == [] and len(seen) == 2 * 8 * S  # both runs, 8 Linears per step


@pytest.mark.parametrize("kind", ["bilstm", "bigru"])
def test_bidirectional_tape_same_bits(kind):
    from harness.engine import BiGruConfig, BiLstmConfig

    config = (BiLstmConfig if kind == "bilstm" else BiGruConfig)(D_IN, H, True)
    module = _module(config, "float64")

    def loss(out, state):
        return out.sum() + state.cell.sum() if kind == "bilstm" else out.sum() + state.sum()

    assert_same_bits(module, _data("float64"), loss)


@pytest.mark.parametrize("shape", [(1, 4, 1), (2, 3, 1), (1, 1, 4)])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_tape_same_bits_with_dims_of_one(kind, shape):
    """Batch, features or hidden size 1: the matmuls take NumPy's gemv paths, as op by op."""
    batch, d_in, hidden = shape
    config = (LstmConfig if kind == "lstm" else GruConfig)(d_in, hidden, True)
    x_np = np.random.default_rng(5).standard_normal((batch, S, d_in)).astype(np.float32)
    loss = _lstm_loss if kind == "lstm" else _gru_loss
    assert_same_bits(_module(config, "float32"), x_np, loss)


def test_lstm_tape_same_bits_tracked_hidden_state_used_after():
    """A tracked initial hidden state (untracked cell) that the loss also uses: its other
    consumers sort before the first step's hidden Linears, so that step runs op by op."""
    lstm = _module(LSTM_CONFIGS["bias"], "float64")
    rng = np.random.default_rng(6)
    zeros = Tensor.zeros([B, H], AUTODIFF, "float64")
    h0 = Tensor.from_numpy(rng.standard_normal((B, H)), AUTODIFF)
    leaf = {}

    def call(module, x):
        leaves["h0"] = h0.require_grad()
        leaf["h"] = leaves["h0"].tanh().tanh().tanh()  # deeper than the input Linears
        return module(x, fused_state(zeros, leaf["h"]))

    def loss(out, state):
        h = leaf["h"]
        return _lstm_loss(out, state) + h.mul_scalar(3.0).sum() + h.exp().sum() + h.sum()

    leaves = {}
    assert_same_bits(lstm, _data("float64"), loss, call=call, leaves=leaves)


def test_gru_tape_same_bits_deep_tracked_state_used_after():
    """A tracked initial hidden state deeper than the input matmuls, which the loss also
    uses: the first step runs op by op (its state is from outside), the others fused."""
    gru = _module(GRU_CONFIGS["bias"], "float64")
    h0 = Tensor.from_numpy(np.random.default_rng(7).standard_normal((B, H)), AUTODIFF)
    leaves, deep = {}, {}

    def call(module, x):
        leaves["h0"] = h0.require_grad()
        deep["h"] = leaves["h0"].tanh().tanh().tanh().tanh()
        return module(x, deep["h"])

    def loss(out):
        h = deep["h"]
        return _gru_loss(out) + h.mul_scalar(3.0).sum() + h.exp().sum() + h.sum()

    assert_same_bits(gru, _data("float64"), loss, call=call, leaves=leaves)
