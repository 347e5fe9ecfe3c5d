"""A recorded tape of one recurrent step: the step's primitives run on arrays, their rules
replayed in the order the op-by-op backward walk would run them, as one or two graph nodes.

Why: an LSTM runs burn's ~21 gate ops per time step, and each op-by-op node costs a Tensor,
a `Node`, the method plumbing and a place in the backward walk's sort (issue 26). A
`StepTape` runs the same `op.forward` calls in the same order on the same arrays (so the values
are the same bits) and records `(op.backward, saved, inputs)` per op; the rule is read when
the op runs, as `harness.engine.methods.tracked_output` reads it, so a rule replaced by
harness.opmatrix.inject applies here too.

Exactness of the gradients. The op-by-op walk runs steps by descending (order, id)
(harness.engine.autodiff) and sums the contributions into each node in that order. The tape
keeps every op's op-by-op `order` (the max over its tracked inputs, plus one, exactly as
harness.engine.methods computes it) and its creation index for the id, and replays its records
by descending (order, index): inside the tape every sum has the op-by-op operands in the
op-by-op order. What a tape node contributes to a node outside it is the sum of its records'
contributions in that order, added at the tape node's place in the walk. That is the op-by-op
sum when every record contributing to that outer node has the same op-by-op order and the tape
node takes that order (its id lies among the records' ids: no outer node sorts between them),
or when the outer node gets at most two contributions in all (float addition commutes). The
callers (harness.engine.nn.rnn.fused) check the first where it is not structural and state
the second where they rely on it.

A step with two outputs (an LSTM's cell and hidden state) is one node whose gradient is a
`StatePair`: each consumer adds its part, in walk order, with `+` (the walk's own sum).
"""

from __future__ import annotations

from operator import itemgetter

from harness.engine.autodiff import GRAD_IN_BACKWARD, Node, next_node_id

__all__ = ["StatePair", "StepTape", "cell_part", "graph_node", "hidden_part"]

_new = object.__new__
_walk_key = itemgetter(0, 1)


class StepTape:
    """Primitives of one step on arrays. Slots `0..len(inputs)-1` are the inputs, given with
    their op-by-op order (None: untracked); `run` appends the output's slot.

    With `record=False` (the plain device) only the values are kept: no rule, no order.
    """

    __slots__ = ("inputs", "orders", "record", "records", "values")

    def __init__(self, inputs, orders, record: bool = True) -> None:
        self.values = list(inputs)
        self.orders = list(orders)
        self.inputs = len(self.values)
        self.record = record
        self.records: list[tuple] = []

    def run(self, op, *slots: int, **params) -> int:
        """Run `op.forward` on the slots' values (and `params`); the output's slot."""
        values = self.values
        out, saved = op.forward(*[values[s] for s in slots], **params)
        values.append(out)
        order = None
        if self.record:
            orders = self.orders
            for s in slots:
                o = orders[s]
                if o is not None and (order is None or o > order):
                    order = o
            if order is not None:  # else untracked: no record, as no step is registered
                order += 1
                tracked = tuple(None if orders[s] is None else True for s in slots)
                self.records.append((order, len(values) - 1, op.backward, saved, slots, tracked))
        self.orders.append(order)
        return len(values) - 1

    def __getitem__(self, slot: int):
        return self.values[slot]

    def close(self) -> None:
        """Sort the records into the op-by-op walk order (descending order, then id)."""
        self.records.sort(key=_walk_key, reverse=True)

    def backward(self, seeds) -> list:
        """Replay the rules from `seeds` (`(slot, gradient or None)`, the first contribution
        to each slot); the summed gradient of every input slot (None: nothing reached it)."""
        grads = [None] * len(self.values)
        for slot, g in seeds:
            grads[slot] = g
        for _, out, rule, saved, slots, tracked in self.records:
            g = grads[out]
            if g is None:  # no gradient reached this op: nothing to pass on
                continue
            grads[out] = None
            for slot, gp in zip(slots, rule(saved, g, tracked)):  # noqa: B905 (the walk's)
                if gp is not None:
                    prev = grads[slot]
                    grads[slot] = gp if prev is None else prev + gp
        return grads[: self.inputs]


class StatePair:
    """The gradient of a two-output step node: the cell part and the hidden part, each an
    array or None. `prev + new` is the walk's sum, part by part, in the walk's order."""

    __slots__ = ("cell", "hidden")
    __array_ufunc__ = None  # never summed with an array: only tape nodes consume the pair

    def __init__(self, cell, hidden) -> None:
        self.cell = cell
        self.hidden = hidden

    def __add__(self, other: StatePair) -> StatePair:
        return StatePair(_plus(self.cell, other.cell), _plus(self.hidden, other.hidden))


def _plus(prev, new):
    if prev is None:
        return new
    return prev if new is None else prev + new


def graph_node(parents: tuple, order: int, rule, saved) -> Node:
    """A tracked node (as `harness.engine.methods.tracked_output` builds one) with `order`
    given: a tape node takes the op-by-op order of the records it stands for."""
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


def cell_part(saved, g, tracked) -> tuple:
    """The rule of the cell state read out of a two-output step node."""
    return (StatePair(g, None),)
