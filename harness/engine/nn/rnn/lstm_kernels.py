"""burn's LSTM step (crates/burn-nn/src/modules/rnn/lstm/lstm_module.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747) as fused NumPy kernels on plain arrays: the
op-by-op step's arithmetic, operand for operand, with the four gates side by side.

Same bits as the op-by-op primitives (harness.engine.ops): each gate's matmul is the same
BLAS call on the same operands (`blas_matmul_into` writes it into the gate's row of a
`[gates, batch, hidden]` buffer), and every other op is an elementwise ufunc (`+`, `*`, `1 - s`,
`tanh`, flex's sigmoid) computed once on the stacked gates instead of once per gate: an
elementwise ufunc gives each element the same result whatever the array around it (NumPy's
SIMD loops treat a tail with the same vector code; tests/test_rnn_fused.py holds it on this
project's NumPy with its X86_V3 and, under NPY_DISABLE_CPU_FEATURES=X86_V3, X86_V2 loops). The
backward spells out the primitives' rules in the op-by-op walk's order (linear's, add's, the
sigmoid's `(g * s) * (1 - s)`, tanh's `g * (1 - t * t)`, mul's `g * other`); where the walk
sums several contributions into one array (the previous hidden state, the step's input), they
are summed in its order: the cell gate's Linear first (the largest id), the input gate's last.
A gate no gradient reaches (the output gate when the hidden state gets none) contributes
nothing, as its op-by-op nodes would not run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.engine.ops.linalg import blas_matmul, blas_matmul_into
from harness.engine.ops.nn import _flex_sigmoid

__all__ = [
    "LstmStep",
    "Projection",
    "lstm_backward",
    "lstm_forward",
    "output_gate_backward",
    "param_grads",
    "project",
    "project_backward",
]


def project(x: np.ndarray, weights: list, bias: np.ndarray | None) -> np.ndarray:
    """`[x @ W_k + b_k for each gate]` as one `[gates, batch, d_out]` array: each gate's
    `linear` (the matmul, then the bias added in place)."""
    out = np.empty((len(weights), x.shape[0], weights[0].shape[1]), x.dtype)
    for k, w in enumerate(weights):
        blas_matmul_into(x, w, out[k])
    if bias is not None:
        np.add(out, bias, out=out)
    return out


@dataclass(slots=True)
class Projection:
    """What the input Linears' rules read: their input and weights."""

    x: np.ndarray
    weights: list
    biased: bool
    x_tracked: bool


def project_backward(s: Projection, gates: list) -> tuple:
    """The input Linears' rules: `(gx, W_0, b_0, W_1, b_1, ...)` (no b without biases)."""
    gx, params = linear_grads(s.x, s.weights, s.biased, gates, s.x_tracked)
    return (gx, *params)


def linear_grads(x, weights, biased: bool, gates, x_tracked: bool, gx=None):
    """Each gate's `linear` rule on gradient `gates[k]`: the summed gradient of `x` (None when
    untracked), after `gx` when given (a contribution the walk adds first), and the params'
    gradients in gate order. `gates` is a list (None: the gate got no gradient) or, when every
    gate got one, the stacked `[gates, batch, d_out]` array, whose bias gradients come from one
    reduction over the batch (each gate's sum in the same order: the same bits)."""
    params: list = [None] * (len(weights) * (2 if biased else 1))
    stacked = gates if gates.__class__ is np.ndarray else None
    xt = x.swapaxes(-1, -2)
    for k in range(len(weights) - 1, -1, -1):  # the walk: the last gate's Linear first
        g = gates[k]
        if g is None:
            continue
        if x_tracked:
            part = blas_matmul(g, weights[k].swapaxes(-1, -2))
            gx = part if gx is None else gx + part
        if biased:
            params[2 * k] = blas_matmul(xt, g)
            if stacked is None:
                params[2 * k + 1] = np.add.reduce(g, axis=0)  # unbroadcast over the batch
        else:
            params[k] = blas_matmul(xt, g)
    if biased and stacked is not None:
        params[1::2] = list(np.add.reduce(stacked, axis=1))
    return gx, params


def param_grads(x, weight, biased: bool, g) -> tuple:
    """One gate's `linear` rule for its params only: `(W, b)` (no b without biases)."""
    return tuple(linear_grads(x, [weight], biased, [g], False)[1])


@dataclass(slots=True)
class LstmStep:
    """One step's values and what its rules read. `gates` holds sigmoid(input, forget,
    output) `[3, batch, hidden]`; `candidate` is tanh of the cell gate, `squashed` tanh of the
    new cell. `pair` and `tracked` are set by the graph node (harness.engine.nn.rnn.fused)."""

    c_prev: np.ndarray
    h_prev: np.ndarray
    weights: list
    biased: bool
    gates: np.ndarray
    candidate: np.ndarray
    squashed: np.ndarray
    cell: np.ndarray
    hidden: np.ndarray
    pair: bool = False
    tracked: tuple = (True, True)  # (cell, hidden) of the previous step


def lstm_forward(proj, c_prev, h_prev, weights, bias) -> LstmStep:
    """`Lstm.step` after the input Linears (`proj`, `[4, batch, hidden]`)."""
    sums = project(h_prev, weights, bias)
    np.add(proj, sums, out=sums)  # input part + hidden part, per gate
    gates = _flex_sigmoid(sums[:3])
    candidate = np.tanh(sums[3])
    cell = gates[1] * c_prev + gates[0] * candidate
    squashed = np.tanh(cell)
    hidden = gates[2] * squashed
    biased = bias is not None
    return LstmStep(c_prev, h_prev, weights, biased, gates, candidate, squashed, cell, hidden)


def lstm_backward(s: LstmStep, g_cell, g_hidden):
    """The step's rules from the gradients of its cell and hidden state (either may be None):
    `(per-gate gradients of the input parts, g_c_prev, g_h_prev, hidden params' gradients)`."""
    gates, squashed = s.gates, s.squashed
    g_gates = np.empty_like(gates)  # the gradients of sigmoid(input, forget, output)
    if g_hidden is not None:
        np.multiply(g_hidden, squashed, out=g_gates[2])
        g_tanh = (g_hidden * gates[2]) * (1 - squashed * squashed)
        g_cell = g_tanh if g_cell is None else g_cell + g_tanh
    else:
        g_gates[2] = 0  # not used: the output gate gets no gradient
    np.multiply(g_cell, s.candidate, out=g_gates[0])
    np.multiply(g_cell, s.c_prev, out=g_gates[1])
    g_c_prev = g_cell * gates[1] if s.tracked[0] else None
    g_candidate = g_cell * gates[0]
    sums = np.empty((4, *gates.shape[1:]), gates.dtype)
    np.multiply(g_gates * gates, 1 - gates, out=sums[:3])
    np.multiply(g_candidate, 1 - s.candidate * s.candidate, out=sums[3])
    parts = sums if g_hidden is not None else [sums[0], sums[1], None, sums[3]]
    g_h_prev, params = linear_grads(s.h_prev, s.weights, s.biased, parts, s.tracked[1])
    return parts, g_c_prev, g_h_prev, params


def output_gate_backward(s: LstmStep, g_hidden: np.ndarray) -> np.ndarray:
    """The gradient of the output gate's sum from the hidden state's, as `lstm_backward`
    computes it: mul's rule `g * tanh(c)`, then the sigmoid's."""
    out = s.gates[2]
    return (np.multiply(g_hidden, s.squashed) * out) * (1 - out)
