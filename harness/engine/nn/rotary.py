"""burn's rotary positional encoding (crates/burn-nn/src/modules/rope_encoding.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747, tests `test_rotary_encoding_forward`,
`test_rotary_encoding_3d`): `RotaryEncodingConfig`, `RotaryEncoding`.

Pairs of *adjacent* features `(x[2k], x[2k+1])` are rotated by the angle `pos * theta_k`,
`theta_k = 1 / theta**(2k / d_model)`: the "complex" layout of the original RoPE and LLaMA's
reference code. The frequencies are constants built in NumPy float32 in burn's op order
(`exp(exponent * ln(theta))` then `recip`); the rotation is engine ops (reshape, matmul by
the constant sign matrix, mul, sum_dim), as burn does it, so it carries a gradient.

PyTorch has no RoPE module. Hugging Face's `rotate_half` layout pairs feature k with
k + d/2 instead; on the same weights that is a different function (permute the features to
convert).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = ["RotaryEncoding", "RotaryEncodingConfig"]

# The 2-D rotation [[cos, -sin], [sin, cos]] as burn's sign matrix.
_SIGNS = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, -1.0, 1.0, 0.0]], np.float32)


@dataclass(frozen=True)
class RotaryEncodingConfig(Config):
    """burn's `RotaryEncodingConfig::new(max_sequence_length, d_model)`, theta 10000."""

    max_sequence_length: int
    d_model: int
    theta: float = 10000.0

    def init(self, device) -> RotaryEncoding:
        if self.d_model % 2:
            raise ValueError("The input embedding dimension must be even")
        if not self.theta > 0.0:
            raise ValueError("Theta parameter must be positive (default: 10000).")
        exponent = np.arange(0, self.d_model, 2, dtype=np.float32) / np.float32(self.d_model)
        theta = np.float32(1.0) / np.exp(exponent * np.log(np.float32(self.theta)))
        return RotaryEncoding(_frequencies(self.max_sequence_length, theta), theta, device)


def _frequencies(length: int, theta: np.ndarray) -> np.ndarray:
    """`[length, d_model, 2]`: (cos, sin) of `pos * theta_k`, repeated for features 2k, 2k+1."""
    angles = np.arange(length, dtype=np.float32)[:, None] * theta[None, :]
    pairs = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # [length, d/2, 2]
    return np.repeat(pairs, 2, axis=1)


class RotaryEncoding(Module):
    """`forward(x)` for `x` of shape `[..., seq, d_model]` (3-D or 4-D)."""

    def __init__(self, freq_complex: np.ndarray, theta: np.ndarray, device) -> None:
        self.freq_complex = Tensor.from_numpy(freq_complex, device)
        self.theta = Tensor.from_numpy(theta, device)
        self._signs = Tensor.from_numpy(_SIGNS, device)

    def forward(self, x: Tensor) -> Tensor:
        return self.apply(x, 0)

    def apply(self, x: Tensor, start: int) -> Tensor:
        if x.ndim < 2:
            raise ValueError(
                "Input tensor must have at least 2 dimensions for sequence length and hidden "
                "dimension"
            )
        shape = x.shape
        seq_len, d_model = shape[-2], shape[-1]
        rest = int(np.prod(shape[:-2], dtype=np.int64))
        signs = self._signs.cast(x.dtype).unsqueeze()
        freqs = self.freq_complex.slice([(start, start + seq_len)]).cast(x.dtype).unsqueeze()
        out = x.reshape([rest, seq_len, d_model // 2, 2]).matmul(signs)
        out = out.reshape([rest, seq_len, d_model, 2]) * freqs
        return out.sum_dim(3).reshape(shape)
