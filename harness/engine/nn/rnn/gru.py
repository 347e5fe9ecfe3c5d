"""burn's GRU and BiGRU (crates/burn-nn/src/modules/rnn/gru.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `tests_forward_single_input_single_feature`,
`tests_forward_seq_len_3`).

Per step, in burn's op order: `z = σ(gp_z)`, `r = σ(gp_r)`, the candidate
`n = tanh(W_in x + b_in + r * (W_hn h + b_hn))` with `reset_after` (the default, PyTorch's
and cuDNN's form) or `n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)` without (the original
paper's form, which PyTorch does not offer), then `h = (1 - z) * n + z * h` (clamped to
±clip if set).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.errors import expect_input
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

from ..activation import ActivationConfig
from ..initializer import XAVIER_NORMAL, Initializer
from .fused_gru import gru_iter
from .gate_controller import GateController, input_layout
from .sequence import Bidirectional, run_steps, select_direction, stack_directions, two_directions

__all__ = ["BiGru", "BiGruConfig", "Gru", "GruConfig"]


@dataclass(frozen=True)
class GruConfig(Config):
    """burn's `GruConfig::new(d_input, d_hidden, bias)`; `reset_after` defaults to True.

    PyTorch differences (`nn.GRU(input_size, hidden_size)`): no `batch_first` switch, the
    input is always `[batch, seq, d_input]` (PyTorch defaults to `[seq, batch, d_input]`);
    `clip` clamps the hidden state (no PyTorch counterpart); one layer, one direction.
    """

    d_input: int
    d_hidden: int
    bias: bool
    reset_after: bool = True
    initializer: Initializer = XAVIER_NORMAL
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid
    hidden_activation: ActivationConfig = ActivationConfig.Tanh
    clip: float | None = None

    def init(self, device) -> Gru:
        def gate():
            return GateController.new(
                self.d_input, self.d_hidden, self.bias, self.initializer, device
            )

        return Gru(gate(), gate(), gate(), self)


class Gru(Module):
    """One GRU layer; `forward(x, state=None) -> output` `[batch, seq, hidden]` (burn returns
    no final state: it is the output's last step).

    PyTorch difference: `nn.GRU` returns `(output, h_n)` and packs the gates in the order
    r, z, n (reset, update, new) in `weight_ih_l0` / `weight_hh_l0`; burn's fields are
    update, reset, new. The importer maps chunk 0 -> reset_gate, 1 -> update_gate,
    2 -> new_gate (harness.engine.nn.store_rules.GRU_GATES).
    """

    def __init__(self, update_gate, reset_gate, new_gate, config: GruConfig) -> None:
        self.update_gate = update_gate
        self.reset_gate = reset_gate
        self.new_gate = new_gate
        self.d_hidden = config.d_hidden
        self.reset_after = config.reset_after
        self.gate_activation = config.gate_activation.init()
        self.hidden_activation = config.hidden_activation.init()
        self.clip = config.clip

    def forward(self, x: Tensor, state: Tensor | None = None) -> Tensor:
        expect_input("Gru", x.shape, input_layout(True, self.update_gate))
        return self.forward_iter(x, range(x.shape[1]), state)[0]

    def forward_iter(self, x: Tensor, steps, state: Tensor | None) -> tuple[Tensor, Tensor]:
        fused = gru_iter(self, x, steps, state)
        if fused is not None:
            return fused
        hidden = state
        if hidden is None:
            hidden = Tensor.zeros([x.shape[0], self.d_hidden], x.device, x.dtype.name)
        return run_steps(x, steps, hidden, self.step, lambda h: h)

    def step(self, x_t: Tensor, hidden: Tensor) -> Tensor:
        gate = self.gate_activation
        update_values = gate(_gate_product(x_t, hidden, None, self.update_gate))
        reset_values = gate(_gate_product(x_t, hidden, None, self.reset_gate))
        if self.reset_after:
            new_sum = _gate_product(x_t, hidden, reset_values, self.new_gate)
        else:
            new_sum = _gate_product(x_t, hidden * reset_values, None, self.new_gate)
        candidate = self.hidden_activation(new_sum)
        one_minus_z = update_values.neg().add_scalar(1.0)
        hidden = candidate * one_minus_z + update_values * hidden
        return hidden if self.clip is None else hidden.clamp(-self.clip, self.clip)


def _gate_product(x: Tensor, hidden: Tensor, reset: Tensor | None, gate: GateController):
    """burn's `Gru::gate_product`: the two matmuls, biases added (unsqueezed), the hidden part
    scaled by `reset` when given."""
    input_part = x.matmul(gate.input_transform.weight.val())
    if gate.input_transform.bias is not None:
        input_part = input_part + gate.input_transform.bias.val().unsqueeze()
    hidden_part = hidden.matmul(gate.hidden_transform.weight.val())
    if gate.hidden_transform.bias is not None:
        hidden_part = hidden_part + gate.hidden_transform.bias.val().unsqueeze()
    return input_part + (hidden_part if reset is None else reset * hidden_part)


@dataclass(frozen=True)
class BiGruConfig(Config):
    """burn's `BiGruConfig::new(d_input, d_hidden, bias)`; `batch_first` True by default."""

    d_input: int
    d_hidden: int
    bias: bool
    reset_after: bool = True
    initializer: Initializer = XAVIER_NORMAL
    batch_first: bool = True
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid
    hidden_activation: ActivationConfig = ActivationConfig.Tanh
    clip: float | None = None

    def init(self, device) -> BiGru:
        base = GruConfig(
            self.d_input,
            self.d_hidden,
            self.bias,
            self.reset_after,
            self.initializer,
            self.gate_activation,
            self.hidden_activation,
            self.clip,
        )
        return BiGru(base.init(device), base.init(device), self.d_hidden, self.batch_first)


class BiGru(Bidirectional):
    """Two GRUs, `forward` and `reverse`; call the module (or `run`) for
    `(output [batch, seq, 2*hidden], state [2, batch, hidden])`, PyTorch's bidirectional
    layout."""

    def run(self, x: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        expect_input("BiGru", x.shape, input_layout(self.batch_first, self.forward.update_gate))
        output, last_forward, last_reverse = two_directions(
            x, self.batch_first, select_direction, self._run_forward, self.reverse, state
        )
        return output, stack_directions(last_forward, last_reverse)

    def _run_forward(self, x: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        return self.forward.forward_iter(x, range(x.shape[1]), state)
