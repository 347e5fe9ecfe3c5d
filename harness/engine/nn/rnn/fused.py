"""The LSTM time loop on fused step kernels (harness.engine.nn.rnn.lstm_kernels): the same
values, gradients, errors and consumed steps as the op-by-op `Lstm.step`, with 6 graph nodes
per step instead of ~24 (harness.engine.nn.rnn.step_nodes says why the placement below keeps
every sum).

Per time step the op-by-op step builds the four input Linears `x_t W_k + b_k` (op-by-op order
`o(x_t) + 1`), the four hidden Linears `h W_k + b_k` (order `o(h) + 1`) and ~13 gate ops. Here
the step keeps the slice/squeeze of `x_t` and the output's unsqueeze as they are, and builds:

- a projection node (the input Linears' order) for the four input Linears: its contributions
  to `x_t` (four, summed in walk order: x_t has no other consumer), to each `W_k` and `b_k`
  (one each) are the op-by-op ones at the op-by-op place;
- a step node (the hidden Linears' order) for every other op, whose value is the pair (cell,
  hidden): its contributions to `h` (four, summed in walk order; the walk adds the previous
  output's unsqueeze after them, as op by op), to `U_k` and `c_k` (one each) are at the
  op-by-op place; the previous cell gets two contributions in all (this step's `f * c`, the
  previous step's `tanh(c)`), so there the place does not matter;
- a node reading the hidden state out of the pair at its op-by-op order.

What a backward consumes (harness.engine.autodiff.backward: a second pass stops at the steps
a first one ran) is what op by op consumes, for every root a caller can hold: the output (or
any part of it), the final cell and hidden states, anything built on them. Op by op, a root
past a step before the last is past its hidden state (the step's cell leads only to it and to
the next step's cell, which the next gates, readers of the hidden state, lead to as well), so
it reaches all of the step's ops: one node for them consumes the same. The last
step's output gate ops (its two Linears, the sum, the sigmoid, `tanh(c)`, `o * tanh(c)`) are
not ancestors of the final cell state, so the last step also gets:

- the final cell state's node (the cell read out of the pair, at its op-by-op order), the
  parent of the final hidden state's, so a pass from the hidden state or the output consumes
  it (a later pass from the cell itself raises, as op by op);
- the final hidden state's node and two output-gate nodes at the two Linears' orders (right
  after the step node and the projection node: no node from outside sorts between), parents
  of the output gate's params. While the cell state's node has its step, the hidden state's
  passes its gradient through it to the step node, which runs the output gate with the rest
  (the other two get none: their places are those of the step and projection nodes). After a
  pass from the cell consumed the step, it runs only the output gate's ops, as op by op: the
  params' gradients from the two gate nodes, nothing to the consumed step.

A step runs op by op when that placement would not be the op-by-op one: the gates' Linears of
different orders, the hidden Linears not deeper than the input ones (the first step from a
zero state), or a tracked initial state from outside: its other consumers can sort before
the hidden Linears, and a sum the walk starts with them must not get the Linears' pre-sum.
The whole loop does (`lstm_iter` returns None) unless: the default gates (sigmoid, tanh, no
clip, no coupled forget gate), consistent float shapes and dtypes, every param tracked and
distinct, unwrapped `Linear` / `Activation` forwards (the localiser's capture
must see the op-by-op module calls) and the primitives' own rules (a rule replaced by
harness.opmatrix.inject must take effect); inside `op_by_op()` it always does.
"""

from __future__ import annotations

import contextlib

import numpy as np

from harness.engine.autodiff import NONE
from harness.engine.device import Device
from harness.engine.module.layers import Linear
from harness.engine.ops.arrays import FLOAT_DTYPES
from harness.engine.ops.elementwise import ADD, ADD_SCALAR, MUL
from harness.engine.ops.linalg import LINEAR, MATMUL
from harness.engine.ops.nn import SIGMOID, TANH
from harness.engine.ops.shape import RESHAPE
from harness.engine.ops.unary import NEG
from harness.engine.tensor import Tensor

from ..activation import Activation, ActivationConfig
from . import lstm_kernels as kernels
from .step_nodes import StatePair, cell_state, graph_node, hidden_part

__all__ = ["AUTODIFF", "deeper", "gate_params", "lstm_iter", "op_by_op", "order_of", "tracked"]

AUTODIFF = Device.flex().autodiff()
_LINEAR_FORWARD = vars(Linear)["forward"]
_ACTIVATION_FORWARD = vars(Activation)["forward"]
# The primitives whose rules the kernels spell out: a rule replaced since (harness.opmatrix.
# inject) no longer matches them, so the loops then run op by op.
_SPELLED_OUT = (LINEAR, MATMUL, ADD, MUL, SIGMOID, TANH, NEG, ADD_SCALAR, RESHAPE)
_RULES = tuple(op.backward for op in _SPELLED_OUT)
_OUTPUT = 2  # the output gate's place in burn's gate order (input, forget, output, cell)


_OP_BY_OP: list[bool] = []


@contextlib.contextmanager
def op_by_op():
    """Run every recurrent loop op by op while the block runs: the reference the fused loops are
    tested and benchmarked against."""
    _OP_BY_OP.append(True)
    try:
        yield
    finally:
        _OP_BY_OP.pop()


def op_by_op_now() -> bool:
    """True inside `op_by_op()`."""
    return bool(_OP_BY_OP)


def lstm_iter(lstm, x: Tensor, steps, state):
    """`Lstm.forward_iter` on the fused kernels: `(output, (cell, hidden))`, or None when the loop
    must run op by op (see the module docstring)."""
    params = None if _OP_BY_OP else _lstm_params(lstm, x, state)
    if params is None:
        return None
    batch = x.shape[0]
    if state is None:
        zeros = Tensor.zeros([batch, lstm.d_hidden], x.device, x.dtype.name)
        cell, hidden = zeros, zeros
    else:
        cell, hidden = state.cell, state.hidden
    outside = order_of(cell._node) is not None or order_of(hidden._node) is not None
    carry = _Carry(cell, hidden, inside=not outside)
    outputs: list[Tensor | None] = [None] * x.shape[1]
    steps = list(steps)
    last = len(steps) - 1
    for n, t in enumerate(steps):
        x_t = x.slice([None, (t, t + 1)]).squeeze_dim(1)
        if not _fused_step(carry, x_t, params, n == last):
            carry.set(*lstm.step(x_t, carry.cell_tensor(), carry.hidden))
        outputs[t] = carry.hidden.unsqueeze_dim(1)
    return Tensor.cat(outputs, 1), (carry.cell_tensor(), carry.hidden)


def order_of(node):
    """A node's op-by-op order, None when untracked (or on the plain device)."""
    return None if node is None or node.requirement is NONE else node.order


class _Carry:
    """The state between steps: arrays, op-by-op orders, and either tensors (after an
    op-by-op step) or the step node of the pair (after a fused step; the cell tensor is built
    only when something reads it)."""

    __slots__ = ("c", "c_order", "cell", "hidden", "inside", "pair")

    def __init__(self, cell: Tensor, hidden: Tensor, inside: bool) -> None:
        self.set(cell, hidden)
        self.inside = inside  # the state comes from this loop (or is untracked)

    def set(self, cell: Tensor, hidden: Tensor) -> None:
        self.cell, self.hidden, self.pair = cell, hidden, None
        self.c, self.c_order = cell._data, order_of(cell._node)
        self.inside = True

    def cell_tensor(self) -> Tensor:
        if self.cell is None:
            node = graph_node((self.pair,), self.c_order, cell_state, None)
            self.cell = Tensor(self.c, AUTODIFF, node)
        return self.cell


class _Side:
    """One side of the gates (the input Linears or the hidden ones), in burn's gate order
    (input, forget, output, cell): the weights, the biases stacked `[gates, 1, d_hidden]`
    (None without biases), the param nodes in parent order, and per gate the deepest param's
    order (the Linear's op-by-op order is one more than the max of it and its input's)."""

    __slots__ = ("bias", "biases", "depths", "nodes", "output_nodes", "tensors", "weights")

    def __init__(self, pairs, plain: bool) -> None:
        self.tensors = [w for w, _ in pairs]
        self.weights = [w._data for w, _ in pairs]
        self.biases = [b for _, b in pairs]
        biased = pairs[0][1] is not None
        self.bias = np.stack([b._data for _, b in pairs])[:, None, :] if biased else None
        tensors = [t for pair in pairs for t in (pair if biased else pair[:1])]
        self.nodes = () if plain else tuple(t._node for t in tensors)
        per_gate = 2 if biased else 1
        self.output_nodes = self.nodes[_OUTPUT * per_gate : (_OUTPUT + 1) * per_gate]
        self.depths = (
            [max(t._node.order for t in p if t is not None) for p in pairs] if not plain else []
        )


class _LstmParams:
    __slots__ = ("hidden", "input", "plain")

    def __init__(self, input, hidden, plain: bool) -> None:
        self.input = _Side(input, plain)
        self.hidden = _Side(hidden, plain)
        self.plain = plain


def _lstm_params(lstm, x: Tensor, state):
    if lstm.clip is not None or lstm.input_forget:
        return None
    for act, kind in (
        (lstm.gate_activation, ActivationConfig.Sigmoid),
        (lstm.cell_activation, ActivationConfig.Tanh),
        (lstm.hidden_activation, ActivationConfig.Tanh),
    ):
        if type(act) is not Activation or act.config is not kind:
            return None
    gates = (lstm.input_gate, lstm.forget_gate, lstm.output_gate, lstm.cell_gate)
    linears = [(g.input_transform, g.hidden_transform) for g in gates]
    states = () if state is None else (state.cell, state.hidden)
    return gate_params(linears, x, lstm.d_hidden, states)


def gate_params(linears, x: Tensor, d_hidden: int, states):
    """The weights of `linears` (per gate `(input Linear, hidden Linear)`) when the fused
    kernels can run them on `x` `[batch, seq, d_input]` from the `states` `[batch, d_hidden]`,
    else None."""
    if vars(Linear)["forward"] is not _LINEAR_FORWARD:
        return None
    if vars(Activation)["forward"] is not _ACTIVATION_FORWARD:
        return None
    if any(op.backward is not rule for op, rule in zip(_SPELLED_OUT, _RULES, strict=True)):
        return None
    dtype = x._data.dtype
    if x.ndim != 3 or 0 in x.shape or dtype not in FLOAT_DTYPES:
        return None
    batch, _, d_input = x.shape
    gates, params = [], []
    for lin_x, lin_h in linears:
        if type(lin_x) is not Linear or type(lin_h) is not Linear:
            return None
        gate = []
        for lin, rows in ((lin_x, d_input), (lin_h, d_hidden)):
            w = lin.weight._value
            b = None if lin.bias is None else lin.bias._value
            if w.shape != (rows, d_hidden) or (b is not None and b.shape != (d_hidden,)):
                return None
            gate.append((w, b))
            params += [w] if b is None else [w, b]
        gates.append(gate)
    biased = {b is not None for gate in gates for _, b in gate}
    if len(biased) != 1 or any(s.shape != (batch, d_hidden) for s in states):
        return None
    tensors = [x, *states, *params]
    if any(t._data.dtype != dtype for t in tensors):
        return None
    plain = x._node is None
    if any((t._node is None) != plain for t in tensors):
        return None  # a device mismatch: the op-by-op path raises it
    if not plain:
        nodes = [p._node for p in params]
        if any(n.requirement is NONE for n in nodes) or len({n.id for n in nodes}) != len(nodes):
            return None
    return _LstmParams([g[0] for g in gates], [g[1] for g in gates], plain)


# ---- one step ---------------------------------------------------------------------------------


def _fused_step(carry: _Carry, x_t: Tensor, p: _LstmParams, last: bool) -> bool:
    """One step on the fused kernels, the carry updated; False (nothing built) when it must
    run op by op. The `last` step of the loop also gets the output gate's nodes and its cell
    state's node (see the module docstring)."""
    hidden = carry.hidden
    if p.plain:
        proj = kernels.project(x_t._data, p.input.weights, p.input.bias)
        step = kernels.lstm_forward(proj, carry.c, hidden._data, p.hidden.weights, p.hidden.bias)
        carry.set(Tensor._plain(step.cell), Tensor._plain(step.hidden))
        return True
    x_order, h_order, c_order = order_of(x_t._node), order_of(hidden._node), carry.c_order
    lx = {deeper(x_order, d) + 1 for d in p.input.depths}
    lh = {deeper(h_order, d) + 1 for d in p.hidden.depths}
    if len(lx) != 1 or len(lh) != 1 or not carry.inside:
        return False
    (lx,), (lh,) = lx, lh
    if lh <= lx:
        return False
    proj = kernels.project(x_t._data, p.input.weights, p.input.bias)
    step = kernels.lstm_forward(proj, carry.c, hidden._data, p.hidden.weights, p.hidden.bias)
    # Op-by-op orders: the sums lh + 1, the gates lh + 2, then f * c, i * g, their sum.
    gates = lh + 2
    cell_order = max(deeper(c_order, gates) + 1, gates + 1) + 1
    saved = kernels.Projection(
        x_t._data, p.input.weights, p.input.bias is not None, x_order is not None
    )
    proj_node = graph_node((tracked(x_t._node), *p.input.nodes), lx, _projection_rule, saved)
    pair = carry.pair
    state = (pair, pair) if pair is not None else (tracked(carry.cell._node), tracked(hidden._node))
    step.pair = pair is not None
    step.tracked = (c_order is not None, h_order is not None)
    node = graph_node((proj_node, *state, *p.hidden.nodes), lh, _lstm_rule, step)
    carry.pair, carry.cell = node, None
    carry.c, carry.c_order = step.cell, cell_order
    if last:
        x_side = graph_node(p.input.output_nodes, lx, _output_input_rule, saved)
        h_side = graph_node((x_side, *p.hidden.output_nodes), lh, _output_hidden_rule, step)
        cell_node = carry.cell_tensor()._node
        hidden_node = graph_node((cell_node, h_side), cell_order + 2, _last_hidden_rule, step)
    else:
        hidden_node = graph_node((node,), cell_order + 2, hidden_part, None)
    carry.hidden = Tensor(step.hidden, AUTODIFF, hidden_node)
    carry.inside = True
    return True


def deeper(order, other: int) -> int:
    return other if order is None or order < other else order


def tracked(node):
    return None if node is None or node.requirement is NONE else node


def _projection_rule(s, g: list, tracked) -> tuple:
    return kernels.project_backward(s, g)


def _last_hidden_rule(s: kernels.LstmStep, g, tracked) -> tuple:
    """The last step's hidden state: its gradient goes to the step node through the cell
    state's node when that node still has its step (it then runs in this pass, after this
    one); else a pass from the cell consumed them, and only the output gate's ops are left."""
    if tracked[0].rule is not None:
        return (StatePair(None, g), None)
    return (None, kernels.output_gate_backward(s, g))


def _output_hidden_rule(s: kernels.LstmStep, g, tracked) -> tuple:
    """The output gate's hidden Linear (and the sum of its gate): the sum's gradient goes on
    to the input Linear's node."""
    return (g, *kernels.param_grads(s.h_prev, s.weights[_OUTPUT], s.biased, g))


def _output_input_rule(s: kernels.Projection, g, tracked) -> tuple:
    return kernels.param_grads(s.x, s.weights[_OUTPUT], s.biased, g)


def _lstm_rule(s, g: StatePair, tracked) -> tuple:
    gates, gc, gh, params = kernels.lstm_backward(s, g.cell, g.hidden)
    if s.pair:
        gc = None if gc is None else StatePair(gc, None)
        gh = None if gh is None else StatePair(None, gh)
    return (gates, gc, gh, *params)
