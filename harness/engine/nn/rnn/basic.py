"""burn's plain (Elman) RNN and BiRNN (crates/burn-nn/src/modules/rnn/basic.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `test_forward_single_input_single_feature`,
`test_forward_reverse_sequence`, `test_bidirectional`, `test_rnn_clipping`).

Per step, in burn's op order: `h = act(gate.gate_product(x_t, h))` (one `GateController`:
`x_t W_i + b_i + h W_h + b_h`), then clamped to ±clip if set. burn writes each step's `h`
into a preallocated output with `slice_assign`; here the steps are concatenated along the
time dim in index order (same values and gradients; harness.engine.nn.rnn.sequence, the loop
`Lstm` and `Gru` share).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.errors import expect_input
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

from ..activation import ActivationConfig
from ..initializer import XAVIER_NORMAL, Initializer
from .gate_controller import GateController, input_layout
from .sequence import (
    Bidirectional,
    one_direction,
    run_steps,
    select_direction,
    stack_directions,
    two_directions,
)

__all__ = ["BiRnn", "BiRnnConfig", "Rnn", "RnnConfig", "RnnState"]


@dataclass(frozen=True)
class RnnState:
    """burn's `RnnState { hidden }`: `[batch, hidden]` for `Rnn`, `[2, batch, hidden]` for
    `BiRnn` (forward direction first).

    PyTorch difference: `nn.RNN` takes and returns `h` as `[num_layers * directions, batch,
    hidden]`, also for one layer and with `batch_first`."""

    hidden: Tensor

    @classmethod
    def new(cls, hidden: Tensor) -> RnnState:
        return cls(hidden)

    def select(self, index: int) -> RnnState:
        """The state of one direction: `slice(s![index]).squeeze_dim(0)`."""
        return RnnState(select_direction(self.hidden, index))


@dataclass(frozen=True)
class RnnConfig(Config):
    """burn's `RnnConfig::new(d_input, d_hidden, bias)` (`bias` has no default).

    PyTorch differences (`nn.RNN(input_size, hidden_size)`): `batch_first` defaults to True
    (PyTorch False); `reverse` runs one direction backwards (PyTorch only through
    `bidirectional`); `clip` clamps the hidden state (no PyTorch counterpart);
    `hidden_activation` is any `ActivationConfig` (PyTorch's `nonlinearity` is "tanh" or
    "relu": `ActivationConfig.Tanh` / `Relu`); one layer only (no `num_layers`, no dropout);
    weights are Xavier-normal (PyTorch U(±1/sqrt(hidden))).
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = XAVIER_NORMAL
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device) -> Rnn:
        gate = GateController.new(self.d_input, self.d_hidden, self.bias, self.initializer, device)
        return Rnn(gate, self)


class Rnn(Module):
    """One RNN layer; `forward(x, state=None) -> (output, RnnState)`.

    The single gate is the field `gate` (`gate.input_transform`, `gate.hidden_transform`).
    PyTorch's `weight_ih_l0` / `bias_ih_l0` are `gate.input_transform.*` and `weight_hh_l0` /
    `bias_hh_l0` are `gate.hidden_transform.*` (harness.engine.nn.store_rules; weights
    transposed by the Linear rule).
    """

    def __init__(self, gate: GateController, config: RnnConfig) -> None:
        self.gate = gate
        self.d_hidden = config.d_hidden
        self.batch_first = config.batch_first
        self.reverse = config.reverse
        self.clip = config.clip
        self.hidden_activation = config.hidden_activation.init()

    def forward(self, x: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        expect_input("Rnn", x.shape, input_layout(self.batch_first, self.gate))
        return one_direction(x, self.batch_first, self.reverse, self.forward_iter, state)

    def forward_iter(self, x: Tensor, steps, state: RnnState | None):
        """Run the cell over the time indices `steps` of batch-first `x`; the output holds each
        step's hidden state at its own index."""
        batch_size, _, _ = x.shape
        if state is None:
            hidden = Tensor.zeros([batch_size, self.d_hidden], x.device, x.dtype.name)
        else:
            hidden = state.hidden
        output, hidden = run_steps(x, steps, hidden, self.step, lambda h: h)
        return output, RnnState(hidden)

    def step(self, x_t: Tensor, hidden: Tensor) -> Tensor:
        """One time step: the hidden state after input `x_t` `[batch, d_input]`."""
        hidden = self.hidden_activation(self.gate.gate_product(x_t, hidden))
        return hidden if self.clip is None else hidden.clamp(-self.clip, self.clip)


@dataclass(frozen=True)
class BiRnnConfig(Config):
    """burn's `BiRnnConfig::new(d_input, d_hidden, bias)`; no `reverse` field (both inner
    RNNs are batch-first, the BiRnn converts the layout)."""

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = XAVIER_NORMAL
    batch_first: bool = True
    clip: float | None = None
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device) -> BiRnn:
        base = RnnConfig(
            self.d_input,
            self.d_hidden,
            self.bias,
            self.initializer,
            batch_first=True,
            clip=self.clip,
            hidden_activation=self.hidden_activation,
        )
        return BiRnn(base.init(device), base.init(device), self.d_hidden, self.batch_first)


class BiRnn(Bidirectional):
    """Two RNNs, `forward` and `reverse`; outputs concatenated on the feature dim (forward
    first), final states stacked on a new dim 0, PyTorch's `bidirectional=True` layout. Call
    the module (or `run`): `forward` is burn's field name for the forward direction.

    PyTorch difference: its reverse direction's weights are the `*_l0_reverse` tensors.
    """

    def run(self, x: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        """burn's `BiRnn::forward`."""
        expect_input("BiRnn", x.shape, input_layout(self.batch_first, self.forward.gate))
        output, last_forward, last_reverse = two_directions(
            x, self.batch_first, RnnState.select, self.forward.forward, self.reverse, state
        )
        return output, RnnState(stack_directions(last_forward.hidden, last_reverse.hidden))
