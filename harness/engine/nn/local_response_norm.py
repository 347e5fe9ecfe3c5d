"""burn's `LocalResponseNormConfig` / `LocalResponseNorm` (crates/burn-nn/src/modules/norm/
local_response.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747; tests
`forward_default_params`, `forward_custom_params`, `forward_even_size`,
`forward_even_size_uses_asymmetric_positive_side_window`, `forward_3d`, `forward_5d`,
`forward_size_1`, `forward_c_less_than_size`, `backward`).

`x / (k + alpha * avg_c(x^2))^beta`, the average over a window of `size` channels, in
burn's op order: square, reshape to `[N * D_flat, 1, C]`, zero-padded `avg_pool1d`
(`count_include_pad`), reshape back, `mul_scalar(alpha)`, `add_scalar(k)`,
`powf_scalar(beta)`, divide.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from harness.engine import module_ops
from harness.engine.errors import ShapeError
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = ["LocalResponseNorm", "LocalResponseNormConfig"]


@dataclass(frozen=True)
class LocalResponseNormConfig(Config):
    """burn's `LocalResponseNormConfig::new(size)`: alpha 1e-4, beta 0.75, k 1 (PyTorch's
    `nn.LocalResponseNorm` defaults); `init()` panics on size 0."""

    size: int
    alpha: float = 0.0001
    beta: float = 0.75
    k: float = 1.0

    def init(self) -> LocalResponseNorm:
        if self.size <= 0:
            raise ValueError("size must be greater than 0.")
        return LocalResponseNorm(self.size, self.alpha, self.beta, self.k)


class LocalResponseNorm(Module):
    """Over dim 1 of a `[N, C, D1, ..., Dk]` input (rank >= 3).

    PyTorch difference (`nn.LocalResponseNorm`): for an even `size` burn's window around
    channel c is `[c - (size-1)/2, c + size/2]` (one extra channel on the positive side),
    PyTorch's is `[c - size/2, c + (size-1)/2]` (the extra one on the negative side); odd
    sizes agree. PyTorch pads and pools with `avg_pool2d` / `avg_pool3d`, burn with
    `avg_pool1d`, so sums may round differently (a few ulp).
    """

    def __init__(self, size: int, alpha: float, beta: float, k: float) -> None:
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 3:
            raise ShapeError(f"LocalResponseNorm requires input rank >= 3, got {x.ndim}")
        shape = [int(n) for n in x.shape]
        n, c = shape[0], shape[1]
        d_flat = prod(shape[2:])
        batched = x.powi_scalar(2).reshape([n, c, d_flat]).swap_dims(1, 2)
        batched = batched.reshape([n * d_flat, 1, c])
        pad_left, pad_right = (self.size - 1) // 2, self.size // 2
        if pad_left != pad_right:
            padded = module_ops.pad(batched, (pad_left, pad_right, 0, 0))
            square_avg = module_ops.avg_pool1d(padded, self.size, 1, 0, True, False)
        else:
            square_avg = module_ops.avg_pool1d(batched, self.size, 1, pad_left, True, False)
        square_avg = square_avg.reshape([n, d_flat, c]).swap_dims(1, 2).reshape(shape)
        return x / square_avg.mul_scalar(self.alpha).add_scalar(self.k).powf_scalar(self.beta)
