"""The GRU time loop on fused step kernels (harness.engine.nn.rnn.gru_kernels): the same
values, gradients and errors as the op-by-op `Gru.step`, with 11 graph nodes per step instead
of ~33, placed as harness.engine.nn.rnn.fused places the LSTM's (see its docstring and
harness.engine.nn.rnn.step_nodes for why the placement keeps every sum in the op-by-op order).

Per step the op-by-op step builds the three input matmuls (order `o(x_t) + 1`), the six bias
unsqueezes (each bias's order plus one), the three hidden matmuls (order `o(h) + 1`) and ~21
gate ops. Here the slice/squeeze of `x_t`, the bias unsqueezes and the output's unsqueeze stay
op-by-op nodes, and the step adds a projection node (the input matmuls, at their order), a step
node (every other op, at the hidden matmuls' order: its contributions to `h` are `z * h`'s then
the three matmuls', in the walk's order, before the previous output's unsqueeze, as op by op)
and a node reading the new hidden state out at its op-by-op order.

The loop runs op by op (`gru_iter` returns None) unless `reset_after` (the default), no clip,
sigmoid and tanh, and the conditions of the LSTM's loop; a step does when the hidden matmuls
are not deeper than the input ones (the first step from a zero state) or its hidden state is a
tracked one from outside (whose other consumers could sort between `z * h` and the matmuls).

A second backward consumes what op by op consumes (harness.engine.nn.rnn.step_nodes): every op
of a step leads out of it only through its hidden state, so a root reaches all of the step's
ops or none, and one node for them consumes the same (tests/test_rnn_fused_roots.py).
"""

from __future__ import annotations

from harness.engine.tensor import Tensor

from ..activation import Activation, ActivationConfig
from . import fused
from .gru_kernels import gru_backward, gru_forward
from .lstm_kernels import Projection, project, project_backward
from .step_nodes import graph_node

__all__ = ["gru_iter"]


def gru_iter(gru, x: Tensor, steps, state):
    """`Gru.forward_iter` on the fused kernels: `(output, hidden)`, or None when the loop must
    run op by op."""
    params = None if fused.op_by_op_now() else _gru_params(gru, x, state)
    if params is None:
        return None
    hidden = state
    if hidden is None:
        hidden = Tensor.zeros([x.shape[0], gru.d_hidden], x.device, x.dtype.name)
    inside = fused.order_of(hidden._node) is None
    outputs: list[Tensor | None] = [None] * x.shape[1]
    for t in steps:
        x_t = x.slice([None, (t, t + 1)]).squeeze_dim(1)
        new = _fused_step(x_t, hidden, inside, params)
        hidden = gru.step(x_t, hidden) if new is None else new
        inside = True
        outputs[t] = hidden.unsqueeze_dim(1)
    return Tensor.cat(outputs, 1), hidden


def _gru_params(gru, x: Tensor, state):
    if not gru.reset_after or gru.clip is not None:
        return None
    for act, kind in (
        (gru.gate_activation, ActivationConfig.Sigmoid),
        (gru.hidden_activation, ActivationConfig.Tanh),
    ):
        if type(act) is not Activation or act.config is not kind:
            return None
    gates = (gru.update_gate, gru.reset_gate, gru.new_gate)
    linears = [(g.input_transform, g.hidden_transform) for g in gates]
    return fused.gate_params(linears, x, gru.d_hidden, () if state is None else (state,))


def _fused_step(x_t: Tensor, hidden: Tensor, inside: bool, p):
    """One step on the fused kernels: the new hidden state, or None (nothing built) when it
    must run op by op."""
    h = hidden._data
    if p.plain:
        proj = project(x_t._data, p.input.weights, None)
        step = gru_forward(proj, h, p.hidden.weights, p.input.bias, p.hidden.bias)
        return Tensor._plain(step.hidden)
    order = fused.order_of
    x_order, h_order = order(x_t._node), order(hidden._node)
    if not (inside or h_order is None):
        return None
    lx = {fused.deeper(x_order, w._node.order) + 1 for w in p.input.tensors}
    lh = {fused.deeper(h_order, w._node.order) + 1 for w in p.hidden.tensors}
    if len(lx) != 1 or len(lh) != 1:
        return None
    (lx,), (lh,) = lx, lh
    biased = p.input.bias is not None
    unsqueezed = []
    if biased:  # op-by-op nodes: each bias's contributions stay at their place
        for b_in, b_h in zip(p.input.biases, p.hidden.biases, strict=True):
            unsqueezed += [b_in.unsqueeze(), b_h.unsqueeze()]
    if lh <= lx or any(u._node.order >= lh for u in unsqueezed):
        return None
    proj = project(x_t._data, p.input.weights, None)
    step = gru_forward(proj, h, p.hidden.weights, p.input.bias, p.hidden.bias)
    step.h_tracked = h_order is not None
    hidden_order = _hidden_order(lx, lh, h_order, [u._node.order for u in unsqueezed])
    saved = Projection(x_t._data, p.input.weights, False, x_order is not None)
    inputs = tuple(w._node for w in p.input.tensors)
    proj_node = graph_node((fused.tracked(x_t._node), *inputs), lx, _projection_rule, saved)
    parents = (
        proj_node,
        fused.tracked(hidden._node),
        *(w._node for w in p.hidden.tensors),
        *(u._node for u in unsqueezed),
    )
    node = graph_node(parents, lh, _gru_rule, step)
    return Tensor(step.hidden, fused.AUTODIFF, graph_node((node,), hidden_order, _passed, None))


def _hidden_order(lx: int, lh: int, h_order, bias_orders: list[int]) -> int:
    """The new hidden state's op-by-op order: `Gru.step`'s ops, one more than their deepest
    tracked input each (biases: the unsqueezes' orders, input's then hidden's per gate)."""
    if bias_orders:
        ax = [max(lx, bias_orders[2 * k]) + 1 for k in range(3)]
        ah = [max(lh, bias_orders[2 * k + 1]) + 1 for k in range(3)]
    else:
        ax, ah = [lx] * 3, [lh] * 3
    update, reset = (max(ax[k], ah[k]) + 2 for k in range(2))  # the sum, then the sigmoid
    candidate = max(ax[2], max(reset, ah[2]) + 1) + 2  # r * hidden part, the sum, tanh
    keep = update + 2  # neg, add_scalar
    kept = fused.deeper(h_order, update) + 1  # z * h
    return max(max(candidate, keep) + 1, kept) + 1


def _projection_rule(s: Projection, g: list, tracked) -> tuple:
    return project_backward(s, g)


def _gru_rule(s, g, tracked) -> tuple:
    gates, g_h, params, biases = gru_backward(s, g)
    return (gates, g_h, *params, *biases)


def _passed(saved, g, tracked) -> tuple:
    """The rule of the hidden state read out of the step node."""
    return (g,)
