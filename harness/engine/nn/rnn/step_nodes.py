"""The graph nodes of a fused recurrent step (harness.engine.nn.rnn.fused, fused_gru), and
why they give the op-by-op gradients bit for bit.

Why fuse: an LSTM runs burn's ~21 gate ops per time step, and each op-by-op node costs a
Tensor, a `Node`, the method plumbing, a place in the backward walk's sort and, above all, its
own NumPy calls per gate (issue 26). A fused step runs the same arithmetic on the gates side
by side (harness.engine.nn.rnn.lstm_kernels says why the values are the same bits) as a few
nodes.

Why the gradients are the same bits. The op-by-op walk runs steps by descending (order, id)
(harness.engine.autodiff) and sums the contributions into each node in that order, so a sum of
three or more contributions depends on where each contributor sorts. A fused node stands for
a group of op-by-op nodes; what it contributes to a node outside the group is the sum of the
group's contributions in the walk's order, added at the fused node's place in the walk. That is
the op-by-op sum when the group's contributions come first in the walk for that outer node
(a pre-sum added after another contribution would be associated differently), every group
node contributing to it has the same op-by-op order and the fused node takes that order (its
id lies among the group's ids, so no outer node sorts between); or when the outer node gets
at most two contributions in all (float addition commutes). Nodes a caller can see (the
states, the output) keep their op-by-op orders, so every node outside the module sorts as it
would op by op. The callers check the first
condition where it is not structural and state the second where they rely on it.

Why a second backward stops where op by op stops. A pass consumes the steps it runs, and a
later pass stops at them (harness.engine.autodiff.backward). A fused node is consumed whole,
so a group must be one every root a caller can hold reaches all or nothing of, op by op: its
ops lead out of the group only through nodes whose ancestors hold the whole group (harness.
engine.nn.rnn.fused says where that holds and how the LSTM's last step is split where not).

A step with two outputs (an LSTM's cell and hidden state) is one node whose gradient is a
`StatePair`: each consumer adds its part, in walk order, with `+` (the walk's own sum; an
array added to a pair is a part of the cell's).
"""

from __future__ import annotations

from harness.engine.autodiff import GRAD_IN_BACKWARD, Node, next_node_id

__all__ = ["StatePair", "cell_state", "graph_node", "hidden_part"]

_new = object.__new__


class StatePair:
    """The gradient of a two-output step node: the cell part and the hidden part, each an
    array or None. `prev + new` is the walk's sum, part by part, in the walk's order."""

    __slots__ = ("cell", "hidden")
    __array_ufunc__ = None  # never summed with an array: only fused step nodes consume it

    def __init__(self, cell, hidden) -> None:
        self.cell = cell
        self.hidden = hidden

    def __add__(self, other) -> StatePair:
        if other.__class__ is not StatePair:  # an array: a gradient of the cell state
            return StatePair(_plus(self.cell, other), self.hidden)
        return StatePair(_plus(self.cell, other.cell), _plus(self.hidden, other.hidden))

    def __radd__(self, other) -> StatePair:
        """`array + pair`: the array (the sum so far) is a gradient of the cell state."""
        return StatePair(_plus(other, self.cell), self.hidden)


def _plus(prev, new):
    if prev is None:
        return new
    return prev if new is None else prev + new


def graph_node(parents: tuple, order: int, rule, saved) -> Node:
    """A tracked node (as `harness.engine.methods.tracked_output` builds one) with `order`
    given: a fused node takes the op-by-op order of the nodes it stands for."""
    node = _new(Node)
    node.id = next_node_id()
    node.requirement = GRAD_IN_BACKWARD
    node.parents = parents
    node.order = order
    node.rule = rule
    node.saved = saved
    node.grad = None
    return node


def hidden_part(saved, g, tracked) -> tuple:
    """The rule of the hidden state read out of a two-output step node."""
    return (StatePair(None, g),)


def cell_state(saved, g, tracked) -> tuple:
    """The rule of the cell state read out of a two-output step node: its gradient, an array,
    or a pair when the last step's hidden state passed its own through it."""
    return (g if g.__class__ is StatePair else StatePair(g, None),)
