"""Two or three backward passes from roots of one forward of the fused LSTM and GRU loops
(harness.engine.nn.rnn.fused, fused_gru) consume what the op-by-op loops consume: the first
pass consumes the steps it runs (harness.engine.autodiff.backward, as burn's tape), so the
second gets exactly the gradients op by op gets from the steps left (the same bits, or None
both) and a pass from a consumed root raises op by op's error.

The roots are everything a caller holds: the output, a time step of it, the final cell and
hidden states (each itself, or summed), both states together. Op by op, the final cell state
is not an ancestor of the last step's output gate (its input and hidden Linears, sigmoid,
`tanh(c)` and `o * tanh(c)`), so after a pass from the cell a pass from the output still gives
the output gate's params a gradient; and the cell state is an ancestor of the hidden state
and of the output, so after a pass from either, a pass from the cell itself raises."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest

from harness.engine import (
    BiGruConfig,
    BiLstmConfig,
    Device,
    GruConfig,
    LstmConfig,
    LstmState,
    Tensor,
)
from harness.engine.nn.rnn.fused import op_by_op

AUTODIFF = Device.flex().autodiff()
B, S, D_IN, H = 3, 4, 4, 5

# Each root from the forward's (output, final state); the state is an LstmState or, for the
# GRU, the final hidden state. A root named *_itself is backpropagated without a sum (seed of
# ones), so a consumed one raises rather than giving an empty container.
LSTM_ROOTS = {
    "out": lambda out, state: out.sum(),
    "out_step": lambda out, state: out.slice([None, (1, 2)]).mul(out.slice([None, (1, 2)])).sum(),
    "out_last": lambda out, state: out.slice([None, (S - 1, S)]).sum(),
    "out_itself": lambda out, state: out,
    "cell": lambda out, state: state.cell.sum(),
    "cell_itself": lambda out, state: state.cell,
    "hidden": lambda out, state: state.hidden.mul_scalar(3.0).sum(),
    "hidden_itself": lambda out, state: state.hidden,
    "state": lambda out, state: state.cell.sum() + state.hidden.sum(),
}
GRU_ROOTS = {
    "out": LSTM_ROOTS["out"],
    "out_step": LSTM_ROOTS["out_step"],
    "out_itself": LSTM_ROOTS["out_itself"],
    "hidden": lambda out, state: state.mul_scalar(3.0).sum(),
    "hidden_itself": lambda out, state: state,
}


def _outcome(root: Tensor, leaves: dict) -> tuple:
    """`("error", type, text)` or `("grads", {leaf: bytes or None})` of `root.backward()`."""
    try:
        grads = root.backward()
    except Exception as error:  # the error itself is what is compared
        return ("error", type(error), str(error))
    found = {}
    for name, leaf in leaves.items():
        g = leaf.grad(grads)
        found[name] = None if g is None else (g.numpy().dtype, g.numpy().tobytes())
    return ("grads", found)


def _passes(module, x_np, call, roots: list, *, fused: bool, state=None) -> list:
    """The outcome of each backward, in turn, from `roots` (root functions; the last one is
    run twice, from the same root tensor) of one forward."""
    with contextlib.nullcontext() if fused else op_by_op():
        x = Tensor.from_numpy(x_np, AUTODIFF).require_grad()
        leaves = {"x": x} | {path: p.val() for path, p in module.params()}
        initial = None
        if state is not None:
            initial = state()
            leaves |= initial[1]
            initial = initial[0]
        out, final = call(module, x, initial)
        outcomes = [_outcome(root(out, final), leaves) for root in roots[:-1]]
        last = roots[-1](out, final)
        outcomes += [_outcome(last, leaves), _outcome(last, leaves)]
    return outcomes


def assert_passes_as_op_by_op(module, call, roots: list, state=None, steps: int = S):
    x_np = np.random.default_rng(11).standard_normal((B, steps, D_IN)).astype(np.float32)
    got = _passes(module, x_np, call, roots, fused=True, state=state)
    ref = _passes(module, x_np, call, roots, fused=False, state=state)
    assert got == ref


def _lstm(module, x, state):
    return module(x, state)


def _gru(module, x, state):
    return module.forward_iter(x, range(x.shape[1]), state)


def _bigru(module, x, state):
    return module(x, state)


PAIRS = list(itertools.product(LSTM_ROOTS, repeat=2))


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_lstm_two_roots_as_op_by_op(first, second):
    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    assert_passes_as_op_by_op(lstm, _lstm, [LSTM_ROOTS[first], LSTM_ROOTS[second]])


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_bilstm_two_roots_as_op_by_op(first, second):
    bilstm = BiLstmConfig(D_IN, H, True).init(AUTODIFF)
    assert_passes_as_op_by_op(bilstm, _lstm, [LSTM_ROOTS[first], LSTM_ROOTS[second]])


@pytest.mark.parametrize(
    "config",
    [
        LstmConfig(D_IN, H, False),
        LstmConfig(D_IN, H, True, reverse=True),
        LstmConfig(D_IN, H, True, batch_first=False),
    ],
    ids=["no_bias", "reverse", "seq_first"],
)
@pytest.mark.parametrize(
    "names",
    [("cell", "out"), ("cell_itself", "hidden"), ("out", "cell_itself"), ("cell", "state")],
)
def test_lstm_variants_two_roots_as_op_by_op(config, names):
    roots = [LSTM_ROOTS[name] for name in names]
    assert_passes_as_op_by_op(config.init(AUTODIFF), _lstm, roots)


@pytest.mark.parametrize("names", [("cell", "hidden", "out"), ("cell", "out_last", "out")])
def test_lstm_three_roots_as_op_by_op(names):
    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    assert_passes_as_op_by_op(lstm, _lstm, [LSTM_ROOTS[name] for name in names])


SHORT_PAIRS = [("cell", "out"), ("out", "cell_itself"), ("hidden", "out"), ("cell", "hidden")]


@pytest.mark.parametrize(("first", "second"), SHORT_PAIRS)
@pytest.mark.parametrize("steps", [1, 2])
def test_lstm_two_roots_short_sequences_as_op_by_op(steps, first, second):
    """One step (op by op: from the zero state) and two (the last step is the first fused)."""
    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    roots = [LSTM_ROOTS[first], LSTM_ROOTS[second]]
    assert_passes_as_op_by_op(lstm, _lstm, roots, steps=steps)


@pytest.mark.parametrize(("first", "second"), SHORT_PAIRS)
def test_lstm_two_roots_deep_input_as_op_by_op(first, second):
    """An input deep in a graph, so the orders of the fused nodes are set by it, not by the
    params (the first step runs op by op, the others fused)."""

    def deep_input(module, x, state):
        for _ in range(14):
            x = x.mul_scalar(1.0001)
        return module(x, state)

    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    roots = [LSTM_ROOTS[first], LSTM_ROOTS[second]]
    assert_passes_as_op_by_op(lstm, deep_input, roots, steps=6)


def _tracked_states(shape):
    """A tracked initial state `(LstmState, leaves)`: marked leaves, one of them through an op."""
    rng = np.random.default_rng(12)
    c = Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32), AUTODIFF).require_grad()
    h = Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32), AUTODIFF).require_grad()
    return LstmState.new(c, h.tanh()), {"c0": c, "h0": h}


@pytest.mark.parametrize(
    ("first", "second"), [("cell", "out"), ("hidden", "cell"), ("out", "cell")]
)
def test_lstm_two_roots_from_a_tracked_state_as_op_by_op(first, second):
    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    roots = [LSTM_ROOTS[first], LSTM_ROOTS[second]]
    assert_passes_as_op_by_op(lstm, _lstm, roots, state=lambda: _tracked_states((B, H)))


@pytest.mark.parametrize(("first", "second"), list(itertools.product(GRU_ROOTS, repeat=2)))
@pytest.mark.parametrize("kind", ["gru", "bigru"])
def test_gru_two_roots_as_op_by_op(kind, first, second):
    """Every op of a GRU step is an ancestor of its hidden state, so a pass that reaches a
    step consumes all of it, fused or not."""
    roots = [GRU_ROOTS[first], GRU_ROOTS[second]]
    if kind == "gru":
        assert_passes_as_op_by_op(GruConfig(D_IN, H, True).init(AUTODIFF), _gru, roots)
    else:
        assert_passes_as_op_by_op(BiGruConfig(D_IN, H, True).init(AUTODIFF), _bigru, roots)


def test_gru_two_roots_from_a_tracked_state_as_op_by_op():
    def state():
        h = np.random.default_rng(13).standard_normal((B, H)).astype(np.float32)
        leaf = Tensor.from_numpy(h, AUTODIFF).require_grad()
        return leaf.tanh(), {"h0": leaf}

    gru = GruConfig(D_IN, H, True).init(AUTODIFF)
    assert_passes_as_op_by_op(gru, _gru, [GRU_ROOTS["hidden"], GRU_ROOTS["out"]], state=state)


def test_lstm_after_the_cell_the_output_reaches_the_last_output_gate_only():
    """What the pair tests compare is not empty: op by op (and fused), after a pass from the
    final cell state, a pass from the output gives a gradient to exactly the output gate's
    four params (the last step's output gate ops), nonzero, and to nothing else."""
    lstm = LstmConfig(D_IN, H, True).init(AUTODIFF)
    gate = lstm.output_gate
    names = {
        f"output_gate.{side}.{kind}"
        for side in ("input_transform", "hidden_transform")
        for kind in ("weight", "bias")
    }
    assert names <= {path for path, _ in lstm.params()}
    x_np = np.random.default_rng(11).standard_normal((B, S, D_IN)).astype(np.float32)
    for fused in (True, False):
        roots = [LSTM_ROOTS["cell"], LSTM_ROOTS["out"]]
        _, (kind, second), _ = _passes(lstm, x_np, _lstm, roots, fused=fused)
        assert kind == "grads"
        assert {name for name, g in second.items() if g is not None} == names
        weight = gate.hidden_transform.weight.val().numpy()
        nonzero = np.frombuffer(second["output_gate.hidden_transform.weight"][1], weight.dtype)
        assert np.abs(nonzero).sum() > 0
