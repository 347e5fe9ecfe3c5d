"""The time loop and the direction plumbing that burn's Rnn, Lstm and Gru (and their
bidirectional forms) share (crates/burn-nn/src/modules/rnn/, burn
2c06be351006851d42fdb6df16b976f4a82d9747): each module keeps only its cell's step.

burn writes each step's output into a preallocated tensor with `slice_assign`; here the
steps are concatenated along the time dim in index order, which has the same values and
gradients.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.engine.module import Module
from harness.engine.tensor import Tensor

__all__ = [
    "Bidirectional",
    "one_direction",
    "run_steps",
    "select_direction",
    "stack_directions",
    "two_directions",
]


def run_steps(x: Tensor, steps, carry, step: Callable, hidden: Callable) -> tuple[Tensor, object]:
    """Run `carry = step(x_t, carry)` over the time indices `steps` of batch-first `x`; the
    output holds `hidden(carry)` of each step at its own index. Returns `(output, carry)`."""
    outputs: list[Tensor | None] = [None] * x.shape[1]
    for t in steps:
        carry = step(x.slice([None, (t, t + 1)]).squeeze_dim(1), carry)
        outputs[t] = hidden(carry).unsqueeze_dim(1)
    return Tensor.cat(outputs, 1), carry


def one_direction(x: Tensor, batch_first: bool, reverse: bool, forward_iter, state):
    """burn's one-direction `forward`: `x` to batch-first, `forward_iter(x, steps, state)`
    over the time steps (backwards if `reverse`), the output back to the input's layout."""
    if not batch_first:
        x = x.swap_dims(0, 1)
    steps = range(x.shape[1])
    output, state = forward_iter(x, reversed(steps) if reverse else steps, state)
    return (output if batch_first else output.swap_dims(0, 1)), state


def two_directions(x: Tensor, batch_first: bool, select: Callable, run_forward, reverse, state):
    """burn's bidirectional `forward`: `x` to batch-first, `state` (if any) split into the two
    directions' by `select(state, 0)` and `select(state, 1)`, `run_forward(x, first)` and the
    `reverse` module's `forward_iter` over the steps backwards, outputs concatenated on the
    feature dim (forward first) and back to the input's layout. Returns `(output,
    last_forward, last_reverse)`."""
    if not batch_first:
        x = x.swap_dims(0, 1)
    first = None if state is None else select(state, 0)
    second = None if state is None else select(state, 1)
    out_forward, last_forward = run_forward(x, first)
    steps = reversed(range(x.shape[1]))
    out_reverse, last_reverse = reverse.forward_iter(x, steps, second)
    output = Tensor.cat([out_forward, out_reverse], 2)
    return (output if batch_first else output.swap_dims(0, 1)), last_forward, last_reverse


def select_direction(state: Tensor, index: int) -> Tensor:
    """One direction's `[batch, hidden]` of a `[2, batch, hidden]` state:
    `slice(s![index]).squeeze_dim(0)`."""
    return state.slice([(index, index + 1)]).squeeze_dim(0)


def stack_directions(forward: Tensor, reverse: Tensor) -> Tensor:
    """The two directions' final `[batch, hidden]` states as `[2, batch, hidden]`."""
    return Tensor.cat([forward.unsqueeze(), reverse.unsqueeze()], 0)


class Bidirectional(Module):
    """The fields of burn's BiRnn, BiLstm and BiGru: the two one-direction modules `forward`
    and `reverse`, `d_hidden`, `batch_first`. `forward` is burn's field name, so it shadows
    the method: calling the module runs the subclass's `run` (burn's `forward`)."""

    def __init__(self, forward, reverse, d_hidden: int, batch_first: bool) -> None:
        self.forward = forward
        self.reverse = reverse
        self.d_hidden = d_hidden
        self.batch_first = batch_first

    def __call__(self, x: Tensor, state=None):
        return self.run(x, state)
