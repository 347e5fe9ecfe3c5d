"""burn's `PixelShuffleConfig` / `PixelUnshuffleConfig` (crates/burn-nn/src/modules/
pixel_shuffle.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747; tests
`pixel_shuffle_known_values`, `pixel_unshuffle_inverts_pixel_shuffle`,
`pixel_shuffle_inverts_pixel_unshuffle`, `pixel_shuffle_round_trip_factor_3`).

Both are a reshape, a permute and a reshape, as burn writes them, so their gradient is the
inverse rearrangement. The engine has no `permute` primitive: `_permute` composes it from
`swap_dims` (the same values and gradients; a permutation's transpositions move data only).

PyTorch differences (`nn.PixelShuffle` / `nn.PixelUnshuffle`): the input must be rank 4
(PyTorch accepts any leading batch dims, `[*, C * r^2, H, W]`); a factor of 0 or channels /
sizes that do not divide raise burn's panic texts (ValueError), PyTorch its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.errors import expect_input
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

__all__ = ["PixelShuffle", "PixelShuffleConfig", "PixelUnshuffle", "PixelUnshuffleConfig"]


def _permute(x: Tensor, axes) -> Tensor:
    """burn's `permute(axes)` as a chain of `swap_dims`: output dim i is input dim axes[i]."""
    order = list(range(x.ndim))
    for i, axis in enumerate(axes):
        j = order.index(axis)
        if j != i:
            x = x.swap_dims(i, j)
            order[i], order[j] = order[j], order[i]
    return x


def _rank4(module: str, x: Tensor) -> tuple[int, int, int, int]:
    expect_input(module, x.shape, ["batch_size", "channels", "height", "width"])
    return tuple(int(n) for n in x.shape)


@dataclass(frozen=True)
class PixelShuffleConfig(Config):
    """burn's `PixelShuffleConfig::new(upscale_factor)`."""

    upscale_factor: int

    def init(self) -> PixelShuffle:
        return PixelShuffle(self.upscale_factor)


class PixelShuffle(Module):
    """`[N, C * r^2, H, W] -> [N, C, H * r, W * r]`: reshape `[N, C, r, r, H, W]`, permute
    `[0, 1, 4, 2, 5, 3]`, reshape."""

    def __init__(self, upscale_factor: int) -> None:
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        batch, channels, height, width = _rank4("PixelShuffle", x)
        r = self.upscale_factor
        if r <= 0:
            raise ValueError("PixelShuffle: upscale_factor must be greater than 0")
        if channels % (r * r):
            raise ValueError(
                f"PixelShuffle: input channels ({channels}) must be divisible by "
                f"upscale_factor^2 ({r * r})"
            )
        out_channels = channels // (r * r)
        x = x.reshape([batch, out_channels, r, r, height, width])
        x = _permute(x, [0, 1, 4, 2, 5, 3])
        return x.reshape([batch, out_channels, height * r, width * r])


@dataclass(frozen=True)
class PixelUnshuffleConfig(Config):
    """burn's `PixelUnshuffleConfig::new(downscale_factor)`."""

    downscale_factor: int

    def init(self) -> PixelUnshuffle:
        return PixelUnshuffle(self.downscale_factor)


class PixelUnshuffle(Module):
    """`[N, C, H * r, W * r] -> [N, C * r^2, H, W]`: reshape `[N, C, H, r, W, r]`, permute
    `[0, 1, 3, 5, 2, 4]`, reshape."""

    def __init__(self, downscale_factor: int) -> None:
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        batch, channels, height, width = _rank4("PixelUnshuffle", x)
        r = self.downscale_factor
        if r <= 0:
            raise ValueError("PixelUnshuffle: downscale_factor must be greater than 0")
        for name, size in (("height", height), ("width", width)):
            if size % r:
                raise ValueError(
                    f"PixelUnshuffle: input {name} ({size}) must be divisible by "
                    f"downscale_factor ({r})"
                )
        out_height, out_width = height // r, width // r
        x = x.reshape([batch, channels, out_height, r, out_width, r])
        x = _permute(x, [0, 1, 3, 5, 2, 4])
        return x.reshape([batch, channels * r * r, out_height, out_width])
