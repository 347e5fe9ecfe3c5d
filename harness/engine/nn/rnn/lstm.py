"""burn's LSTM and BiLSTM (crates/burn-nn/src/modules/rnn/lstm/lstm_module.rs,
bilstm_module.rs, lstm_state.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747; tests
`test_forward_single_input_single_feature`, `test_bidirectional`).

The recurrence, per time step, in burn's op order (each gate a `GateController`):
`i = σ(gp_i)`, `f = σ(gp_f)` (or `1 - i` with `input_forget`), `o = σ(gp_o)`,
`g = tanh(gp_g)`, `c = f*c + i*g` (clamped to ±clip if set), `h = o * tanh(c)`. The
activations are configurable (`gate_activation`, `cell_activation`, `hidden_activation`).
The time loop and the direction plumbing are harness.engine.nn.rnn.sequence's (shared with
`Rnn` and `Gru`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.errors import expect_input
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

from ..activation import ActivationConfig
from ..initializer import XAVIER_NORMAL, Initializer
from .fused import lstm_iter
from .gate_controller import GateController, input_layout
from .sequence import Bidirectional, one_direction, run_steps, select_direction, two_directions

__all__ = ["BiLstm", "BiLstmConfig", "Lstm", "LstmConfig", "LstmState"]


@dataclass(frozen=True)
class LstmState:
    """burn's `LstmState { cell, hidden }`: `[batch, hidden]` for `Lstm`, `[2, batch, hidden]`
    for `BiLstm` (forward direction first).

    PyTorch difference: `nn.LSTM` takes and returns `(h, c)` (hidden first), each
    `[num_layers * directions, batch, hidden]` even for one layer and with `batch_first`.
    """

    cell: Tensor
    hidden: Tensor

    @classmethod
    def new(cls, cell: Tensor, hidden: Tensor) -> LstmState:
        if cell.shape != hidden.shape:
            raise ValueError(f"cell shape {list(cell.shape)} != hidden shape {list(hidden.shape)}")
        return cls(cell, hidden)

    @classmethod
    def initial(cls, shape, device, dtype="float32") -> LstmState:
        zeros = Tensor.zeros(shape, device, dtype)
        return cls(zeros, zeros)

    def unpack(self) -> tuple[Tensor, Tensor]:
        return self.cell, self.hidden

    def select(self, index: int) -> LstmState:
        """The state of one direction: `slice(s![index]).squeeze_dim(0)`."""
        return LstmState(*(select_direction(t, index) for t in self.unpack()))

    @staticmethod
    def stack(states, dim: int) -> LstmState:
        def stacked(parts):
            return Tensor.cat([p.unsqueeze_dim(dim) for p in parts], dim)

        return LstmState(stacked([s.cell for s in states]), stacked([s.hidden for s in states]))


@dataclass(frozen=True)
class LstmConfig(Config):
    """burn's `LstmConfig::new(d_input, d_hidden, bias)` (`bias` has no default).

    PyTorch differences (`nn.LSTM(input_size, hidden_size)`): `batch_first` defaults to True
    (PyTorch False); `reverse` runs one direction backwards (PyTorch only through
    `bidirectional`); `clip` clamps the cell state and `input_forget` couples `f = 1 - i`
    (no PyTorch counterpart); one layer only (no `num_layers`, no `proj_size`, no inter-layer
    dropout); weights are Xavier-normal (PyTorch U(±1/sqrt(hidden))).
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = XAVIER_NORMAL
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    input_forget: bool = False
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid
    cell_activation: ActivationConfig = ActivationConfig.Tanh
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device) -> Lstm:
        def gate():
            return GateController.new(
                self.d_input, self.d_hidden, self.bias, self.initializer, device
            )

        return Lstm(
            input_gate=gate(),
            forget_gate=gate(),
            output_gate=gate(),
            cell_gate=gate(),
            config=self,
        )


class Lstm(Module):
    """One LSTM layer; `forward(x, state=None) -> (output, LstmState)`.

    The gates are fields named by role, declared in burn's order input, forget, output, cell.

    PyTorch difference: `nn.LSTM` packs them in the order i, f, g, o (input, forget, *cell*,
    output) in `weight_ih_l0` / `weight_hh_l0` / `bias_ih_l0` / `bias_hh_l0`; the importer maps
    chunk 0 -> input_gate, 1 -> forget_gate, 2 -> cell_gate, 3 -> output_gate (see
    harness.engine.nn.store_rules.LSTM_GATES).
    """

    def __init__(self, input_gate, forget_gate, output_gate, cell_gate, config: LstmConfig):
        self.input_gate = input_gate
        self.forget_gate = forget_gate
        self.output_gate = output_gate
        self.cell_gate = cell_gate
        self.d_hidden = config.d_hidden
        self.batch_first = config.batch_first
        self.reverse = config.reverse
        self.clip = config.clip
        self.input_forget = config.input_forget
        self.gate_activation = config.gate_activation.init()
        self.cell_activation = config.cell_activation.init()
        self.hidden_activation = config.hidden_activation.init()

    def forward(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        expect_input("Lstm", x.shape, input_layout(self.batch_first, self.input_gate))
        return one_direction(x, self.batch_first, self.reverse, self.forward_iter, state)

    def forward_iter(self, x: Tensor, steps, state: LstmState | None):
        """Run the cell over the time indices `steps` of batch-first `x`; the output holds each
        step's hidden state at its own index."""
        fused = lstm_iter(self, x, steps, state)
        if fused is not None:
            output, (cell, hidden) = fused
            return output, LstmState(cell, hidden)
        if state is None:
            state = LstmState.initial([x.shape[0], self.d_hidden], x.device, x.dtype.name)
        output, (cell, hidden) = run_steps(
            x, steps, state.unpack(), lambda x_t, c: self.step(x_t, *c), lambda c: c[1]
        )
        return output, LstmState(cell, hidden)

    def step(self, x_t: Tensor, cell: Tensor, hidden: Tensor) -> tuple[Tensor, Tensor]:
        """One time step: `(cell, hidden)` after input `x_t` `[batch, d_input]`."""
        gate = self.gate_activation
        input_values = gate(self.input_gate.gate_product(x_t, hidden))
        if self.input_forget:
            forget_values = input_values.neg().add_scalar(1.0)
        else:
            forget_values = gate(self.forget_gate.gate_product(x_t, hidden))
        output_values = gate(self.output_gate.gate_product(x_t, hidden))
        candidate = self.cell_activation(self.cell_gate.gate_product(x_t, hidden))
        cell = forget_values * cell + input_values * candidate
        if self.clip is not None:
            cell = cell.clamp(-self.clip, self.clip)
        return cell, output_values * self.hidden_activation(cell)


@dataclass(frozen=True)
class BiLstmConfig(Config):
    """burn's `BiLstmConfig::new(d_input, d_hidden, bias)`; no `reverse` field."""

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = XAVIER_NORMAL
    batch_first: bool = True
    clip: float | None = None
    input_forget: bool = False
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid
    cell_activation: ActivationConfig = ActivationConfig.Tanh
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device) -> BiLstm:
        base = LstmConfig(
            self.d_input,
            self.d_hidden,
            self.bias,
            self.initializer,
            batch_first=True,
            clip=self.clip,
            input_forget=self.input_forget,
            gate_activation=self.gate_activation,
            cell_activation=self.cell_activation,
            hidden_activation=self.hidden_activation,
        )
        return BiLstm(base.init(device), base.init(device), self.d_hidden, self.batch_first)


class BiLstm(Bidirectional):
    """Two LSTMs, `forward` and `reverse`; outputs concatenated on the feature dim (forward
    first), states stacked on a new dim 0, as PyTorch's `bidirectional=True` lays them out.

    PyTorch difference: its reverse direction's weights are the `*_l0_reverse` tensors.
    """

    def run(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """burn's `BiLstm::forward` (the name `forward` is the forward-direction field)."""
        expect_input("BiLstm", x.shape, input_layout(self.batch_first, self.forward.input_gate))
        output, state_forward, state_reverse = two_directions(
            x, self.batch_first, LstmState.select, self.forward.forward, self.reverse, state
        )
        return output, LstmState.stack([state_forward, state_reverse], 0)
