"""burn's sinusoidal positional encoding (crates/burn-nn/src/modules/pos_encoding.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747, tests `test_module`, `test_generate_sinusoids`).

The table is a constant (no gradient), built in NumPy in float32 exactly as burn's loop does:
`div_term = exp(k * (-ln(max_timescale) / d_model))` for even k, then `sin(div_term * i)` at
column k and `cos(div_term * i)` at column k + 1 (all float32).

PyTorch has no module for it; the usual PyTorch reference ("Attention is all you need"
tutorial) builds the same interleaved table, but sequence-first (`[max_len, 1, d_model]`) and
usually in float32 with `torch.exp(arange * -log(10000) / d)`, which rounds differently in
the last bits. A PyTorch model built in float64 builds its table in float64; burn's table is
float32 whatever the model's dtype, a formula-level difference in float64 runs (the entries
are float32-rounded, up to 3e-8 off). Switch `pos_encoding.f32_table`
(``harness.engine.divergence``) builds the table in the input's dtype instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.engine import divergence
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = ["PositionalEncoding", "PositionalEncodingConfig", "generate_sinusoids"]


F32_TABLE = divergence.register(
    "pos_encoding.f32_table",
    "harness.engine.nn.pos_encoding.PositionalEncoding",
    "a PyTorch model in float64 builds its sinusoid table in float64, not float32",
)


def generate_sinusoids(
    length: int, d_model: int, max_timescale: int, device, dtype=np.float32
) -> Tensor:
    """The `[length, d_model]` table (burn's asserts and messages), built in float32 as burn's
    (``dtype`` float64: the same loop in float64, for switch `pos_encoding.f32_table`)."""
    if d_model % 2:
        raise ValueError("d_model must be even")
    if max_timescale < length:
        raise ValueError("max_timescale must be greater than or equal to length")
    dt = np.dtype(dtype).type
    increment = dt(-np.log(dt(max_timescale)) / dt(d_model))
    k = np.arange(0, d_model, 2, dtype=dt)
    div_term = np.exp(k * increment)
    angles = div_term[None, :] * np.arange(length, dtype=dt)[:, None]
    table = np.empty((length, d_model), dt)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return Tensor.from_numpy(table, device)


@dataclass(frozen=True)
class PositionalEncodingConfig(Config):
    """burn's `PositionalEncodingConfig::new(d_model)`: max_sequence_size 5000, max_timescale
    10000 (burn's field order puts `max_sequence_size` first; here `d_model` is the one
    positional argument, as in `new`)."""

    d_model: int
    max_sequence_size: int = 5_000
    max_timescale: int = 10_000

    def init(self, device) -> PositionalEncoding:
        table = generate_sinusoids(
            self.max_sequence_size, self.d_model, self.max_timescale, device
        ).unsqueeze()
        return PositionalEncoding(table, self.max_sequence_size, self.max_timescale)


class PositionalEncoding(Module):
    """`input + sinusoids[:, :seq]` for batch-first `[batch, seq, d_model]` input.

    PyTorch difference (no PyTorch module; a PyTorch model's own table): the table is built in
    float32 and cast to the input's dtype, so a float64 model adds float32-rounded sinusoids
    where a PyTorch model built in float64 adds float64 ones (module docstring; switch
    `pos_encoding.f32_table`).
    """

    def __init__(self, sinusoids: Tensor, max_sequence_size: int, max_timescale: int) -> None:
        self.sinusoids = sinusoids
        self.max_sequence_size = max_sequence_size
        self.max_timescale = max_timescale

    def forward(self, input: Tensor) -> Tensor:
        _, seq_length, d_model_input = input.shape
        batch_size, max_sequence_size, d_model = self.sinusoids.shape
        if max_sequence_size < seq_length:
            raise ValueError(
                f"max_sequence_size({max_sequence_size}) must be greater or equal than "
                f"length({seq_length})"
            )
        if d_model_input != d_model:
            raise ValueError(
                f"d_model({d_model_input}) of the input must be equal to d_model of "
                f"encoding({d_model})"
            )
        if input.dtype != np.float32 and F32_TABLE.on:
            table = generate_sinusoids(
                seq_length, d_model, self.max_timescale, input.device, input.dtype
            ).unsqueeze()
            return input.add(table)
        table = self.sinusoids.slice([(0, batch_size), (0, seq_length), (0, d_model)])
        return input.add(table.cast(input.dtype))
