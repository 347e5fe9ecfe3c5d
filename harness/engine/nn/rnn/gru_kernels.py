"""burn's GRU step with `reset_after` (crates/burn-nn/src/modules/rnn/gru.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747) as fused NumPy kernels on plain arrays: the
op-by-op `Gru.step` arithmetic, operand for operand, with the three gates side by side.

The same bits as the op-by-op primitives, for the reasons harness.engine.nn.rnn.lstm_kernels
gives: each gate's matmul is the same BLAS call on the same operands, every other op an
elementwise ufunc computed once on the stacked gates, and each rule spelled out as the
primitive's (matmul's, add's with the `[1, hidden]` bias unbroadcast, the sigmoid's, tanh's,
mul's, neg's, add_scalar's) with several contributions into one array summed in the op-by-op
walk's order: into the previous hidden state `z * h`'s first (the deepest), then the new,
reset and update gates' matmuls (descending id).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.engine.ops.arrays import scalar_of, unbroadcast
from harness.engine.ops.nn import _flex_sigmoid

from .lstm_kernels import linear_grads, project

__all__ = ["GruStep", "gru_backward", "gru_forward"]


@dataclass(slots=True)
class GruStep:
    """One step's values and what its rules read. `gates` holds sigmoid(update, reset)
    `[2, batch, hidden]`; `hidden_new` is the new gate's hidden part (with its bias), `candidate`
    tanh of the new gate's sum, `keep` `1 - z`."""

    h_prev: np.ndarray
    weights: list
    biased: bool
    gates: np.ndarray
    hidden_new: np.ndarray
    candidate: np.ndarray
    keep: np.ndarray
    hidden: np.ndarray
    h_tracked: bool = True


def gru_forward(proj, h_prev, weights, input_bias, hidden_bias) -> GruStep:
    """`Gru.step` after the input matmuls (`proj`, `[3, batch, hidden]`, overwritten): the
    biases are the unsqueezed `[3, 1, hidden]` ones (None without biases)."""
    if input_bias is not None:
        np.add(proj, input_bias, out=proj)
    parts = project(h_prev, weights, hidden_bias)
    gates = _flex_sigmoid(proj[:2] + parts[:2])
    update = gates[0]
    candidate = np.tanh(proj[2] + gates[1] * parts[2])
    keep = np.negative(update) + scalar_of(update, 1.0)
    hidden = candidate * keep + update * h_prev
    biased = input_bias is not None
    return GruStep(h_prev, weights, biased, gates, parts[2], candidate, keep, hidden)


def gru_backward(s: GruStep, g: np.ndarray):
    """The step's rules from the new hidden state's gradient: `(the input matmuls'
    gradients per gate, g_h_prev, the hidden matmuls' weights' gradients, per gate the
    gradients of the input and hidden biases `[1, hidden]` (empty without biases))`."""
    update, reset = s.gates[0], s.gates[1]
    g_candidate = g * s.keep
    g_keep = g * s.candidate
    g_gates = np.empty_like(s.gates)
    np.multiply(g, s.h_prev, out=g_gates[0])
    g_h = g * update if s.h_tracked else None
    np.add(g_gates[0], np.negative(g_keep), out=g_gates[0])  # neg after add_scalar's identity
    g_sum = g_candidate * (1 - s.candidate * s.candidate)
    np.multiply(g_sum, s.hidden_new, out=g_gates[1])
    g_hidden_new = g_sum * reset
    sums = np.empty((3, *update.shape), update.dtype)
    np.multiply(g_gates * s.gates, 1 - s.gates, out=sums[:2])
    sums[2] = g_sum
    hidden_parts = [sums[0], sums[1], g_hidden_new]
    g_h, params = linear_grads(s.h_prev, s.weights, False, hidden_parts, s.h_tracked, g_h)
    biases = []
    if s.biased:  # the `[1, hidden]` biases' add rule: unbroadcast over the batch
        shape = (1, update.shape[-1])
        inputs = np.add.reduce(sums, axis=1, keepdims=True)  # the three at once: the same bits
        for k in range(3):
            biases += [inputs[k], unbroadcast(hidden_parts[k], shape)]
    return sums, g_h, params, biases
