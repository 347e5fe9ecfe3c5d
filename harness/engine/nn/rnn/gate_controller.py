"""burn's `GateController` (crates/burn-nn/src/modules/rnn/gate_controller.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): one gate's `input_transform` (`[d_input,
d_output]`) and `hidden_transform` (`[d_output, d_output]`) Linears, each with its own bias.

PyTorch difference: `nn.LSTM` / `nn.GRU` pack every gate's input weights into one
`weight_ih_l0` `[gates*hidden, d_input]` and the hidden ones into `weight_hh_l0`, with two bias
vectors `bias_ih_l0` / `bias_hh_l0`; burn keeps both biases too (one per Linear), so importing
splits and transposes but never sums them.
"""

from __future__ import annotations

from harness.engine.module import Module
from harness.engine.tensor import Tensor

from ..initializer import Initializer, linear

__all__ = ["GateController", "input_layout"]


class GateController(Module):
    """`gate_product(x, h) = input_transform(x) + hidden_transform(h)`."""

    def __init__(self, input_transform, hidden_transform) -> None:
        self.input_transform = input_transform
        self.hidden_transform = hidden_transform

    @classmethod
    def new(cls, d_input: int, d_output: int, bias: bool, init: Initializer, device):
        return cls(
            linear(d_input, d_output, bias, init, device),
            linear(d_output, d_output, bias, init, device),
        )

    def gate_product(self, input: Tensor, hidden: Tensor) -> Tensor:
        return self.input_transform(input) + self.hidden_transform(hidden)


def input_layout(batch_first: bool, gate: GateController) -> list:
    """The input layout of a recurrent module whose first gate is `gate` (its `d_input` last),
    for `harness.engine.errors.expect_input`."""
    d_input = gate.input_transform.weight.val().shape[0]
    if batch_first:
        return ["batch_size", "seq_length", d_input]
    return ["seq_length", "batch_size", d_input]
