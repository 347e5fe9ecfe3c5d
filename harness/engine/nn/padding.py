"""burn's `PaddingConfig1d` / `PaddingConfig2d` / `PaddingConfig3d` (crates/burn-nn/src/
padding.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747): `Valid`, `Same`,
`Explicit(...)`, spelled as burn's enum, `PaddingConfig2d.Same`,
`PaddingConfig2d.Explicit(1, 1, 1, 1)`.

`Same` follows burn's `calculate_same_padding(kernel_size, stride, size_in)`: the output has
`ceil(size_in / stride)` positions, the total padding `(out - 1) * stride + kernel - size_in`
(never negative) is split with the smaller half first (`start = total // 2`, the extra one at
the end). A module then pads asymmetric pairs explicitly before its op.

Differences from PyTorch (`padding="same"`):
- PyTorch refuses `"same"` with a stride > 1; burn computes it from the input size, so the
  padding of a strided `Same` conv depends on the input's height and width.
- burn's formula uses the kernel size, not the dilated kernel: with dilation > 1, `Same` does
  not keep the size (PyTorch pads `dilation * (kernel - 1)` in total and does).
- Even kernels: both put the extra zero at the end (bottom / right), so they agree there.
- `Explicit(top, left, bottom, right)` is burn's field order (PyTorch's `F.pad` takes
  `(left, right, top, bottom)`); PyTorch's `Conv2d(padding=(h, w))` is symmetric only.
- `PaddingConfig3d.Explicit(depth, height, width)` is symmetric (burn's); its `Same` panics
  on an asymmetric split (burn: "Asymmetric 3D 'Same' padding is not supported"), and
  `Conv3dConfig.init` refuses `Same` with an even kernel (`check_same_padding_support`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PaddingConfig1d", "PaddingConfig2d", "PaddingConfig3d", "same_padding"]


def same_padding(kernel_size: int, stride: int, size_in: int) -> tuple[int, int]:
    """burn's `calculate_same_padding`: (start, end) zeros for one spatial dim."""
    size_out = -(-size_in // stride)
    total = max((size_out - 1) * stride + kernel_size - size_in, 0) if size_out > 0 else 0
    start = total // 2
    return start, total - start


def _count(name: str, values: tuple, n: int) -> tuple[int, ...]:
    if len(values) != n or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(f"{name}: expected {n} non-negative ints, got {values!r}")
    return tuple(values)


@dataclass(frozen=True)
class _Padding1d:
    kind: str
    pads: tuple[int, int] = (0, 0)

    def pair(self, length: int, kernel_size: int, stride: int) -> tuple[int, int]:
        """burn's `calculate_padding_1d_pair`: (left, right)."""
        if self.kind == "Same":
            return same_padding(kernel_size, stride, length)
        return self.pads

    def __repr__(self) -> str:
        if self.kind == "Explicit":
            return f"PaddingConfig1d.Explicit{self.pads}"
        return f"PaddingConfig1d.{self.kind}"


@dataclass(frozen=True)
class _Padding2d:
    kind: str
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # burn's order: top, left, bottom, right

    def pairs(
        self, height: int, width: int, kernel_size, stride
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """burn's `calculate_padding_2d_pairs`: ((top, bottom), (left, right))."""
        if self.kind == "Same":
            return (
                same_padding(kernel_size[0], stride[0], height),
                same_padding(kernel_size[1], stride[1], width),
            )
        top, left, bottom, right = self.pads
        return (top, bottom), (left, right)

    def __repr__(self) -> str:
        if self.kind == "Explicit":
            return f"PaddingConfig2d.Explicit{self.pads}"
        return f"PaddingConfig2d.{self.kind}"


class PaddingConfig1d:
    """burn's `PaddingConfig1d`: `Valid`, `Same`, `Explicit(left, right)`."""

    Valid = _Padding1d("Valid")
    Same = _Padding1d("Same")

    @staticmethod
    def Explicit(left: int, right: int) -> _Padding1d:
        return _Padding1d("Explicit", _count("PaddingConfig1d.Explicit", (left, right), 2))


class PaddingConfig2d:
    """burn's `PaddingConfig2d`: `Valid`, `Same`, `Explicit(top, left, bottom, right)`."""

    Valid = _Padding2d("Valid")
    Same = _Padding2d("Same")

    @staticmethod
    def Explicit(top: int, left: int, bottom: int, right: int) -> _Padding2d:
        values = _count("PaddingConfig2d.Explicit", (top, left, bottom, right), 4)
        return _Padding2d("Explicit", values)


@dataclass(frozen=True)
class _Padding3d:
    kind: str
    pads: tuple[int, int, int] = (0, 0, 0)  # depth, height, width: each on both sides

    def padding_3d(self, spatial, kernel_size, stride) -> tuple[int, int, int]:
        """burn's `calculate_padding_3d`: one symmetric padding per spatial dim."""
        if self.kind != "Same":
            return self.pads
        pairs = [
            same_padding(k, s, n) for n, k, s in zip(spatial, kernel_size, stride, strict=True)
        ]
        if any(a != b for a, b in pairs):
            raise ValueError(
                "PaddingConfig3d: Asymmetric 3D 'Same' padding is not supported. "
                "Use odd kernel sizes for symmetric padding."
            )
        return tuple(a for a, _ in pairs)

    def __repr__(self) -> str:
        if self.kind == "Explicit":
            return f"PaddingConfig3d.Explicit{self.pads}"
        return f"PaddingConfig3d.{self.kind}"


class PaddingConfig3d:
    """burn's `PaddingConfig3d`: `Valid`, `Same`, `Explicit(depth, height, width)`."""

    Valid = _Padding3d("Valid")
    Same = _Padding3d("Same")

    @staticmethod
    def Explicit(depth: int, height: int, width: int) -> _Padding3d:
        return _Padding3d("Explicit", _count("PaddingConfig3d.Explicit", (depth, height, width), 3))
