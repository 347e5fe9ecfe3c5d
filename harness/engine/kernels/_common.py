"""What the convolution, pooling and embedding kernels share: argument checks, output sizes
and kernel-tap slices.

Shape errors are `ShapeError` (a ValueError) whose one-line message starts with the op's name
and states the expected and the given shape. Where burn has a runtime message, its text is kept
(`CHANNELS_MISMATCH`, `GROUPS_NOT_DIVIDING`, `INDEX_OUT_OF_BOUNDS`); where burn relies on its
type system (the rank of `Tensor<4>`) or on a usize underflow (a kernel larger than the padded
input, see `conv_output_size`), the text is ours.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ShapeError
from ..ops.arrays import FLOAT_DTYPES, dtype_error

LAYOUT = {1: "[batch, channels, length]", 2: "[batch, channels, height, width]"}

# burn-tensor/src/tensor/api/check.rs, TensorCheck::conv and ::conv_transpose (commit 2c06be35).
CHANNELS_MISMATCH = (
    "Number of channels in input tensor and input channels of convolution must be equal. "
    "got: {got}, expected: {expected}"
)
# burn-nn/src/modules/conv/checks.rs, checks_channels_div_groups (commit 2c06be35).
GROUPS_NOT_DIVIDING = (
    "Both channels must be divisible by the number of groups. "
    "Got channels_in={channels_in}, channels_out={channels_out}, groups={groups}"
)
# burn-flex/src/ops/gather_scatter.rs, index_oob (commit 2c06be35).
INDEX_OUT_OF_BOUNDS = "index {index} out of bounds for dimension of size {size}"


def fmt(shape: Sequence[int]) -> str:
    """A shape as burn prints it: `[2, 3, 4]`."""
    return "[" + ", ".join(str(int(n)) for n in shape) + "]"


def ints(op: str, name: str, value, n: int, *, minimum: int) -> tuple[int, ...]:
    """`value` (an int or a sequence of `n` ints) as an `n`-tuple of ints >= `minimum`."""

    def is_int(v) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)

    items = (value,) * n if is_int(value) else value
    if not isinstance(items, tuple | list) or len(items) != n or not all(map(is_int, items)):
        raise ValueError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if any(v < minimum for v in items):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return tuple(int(v) for v in items)


def ints_2d(op: str, name: str, value, nd: int, *, minimum: int, fill: int) -> tuple[int, int]:
    """`value` (an int or `nd` ints, see `ints`) for a 2-D kernel: a 1-D op's gets `fill` in
    front (a plane of height 1)."""
    values = ints(op, name, value, nd, minimum=minimum)
    return values if nd == 2 else (fill, *values)


def check_float(op: str, *arrays: np.ndarray) -> np.dtype:
    """The common float dtype of `arrays` (float32, float64, float16 or bfloat16; burn never
    promotes)."""
    dtype = arrays[0].dtype
    if dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{op}: float tensors are float32, float64, float16 or bfloat16, got {dtype}"
        )
    for other in arrays[1:]:
        if other.dtype != dtype:
            raise dtype_error(op, arrays[0], other)
    return dtype


def check_rank(op: str, what: str, array: np.ndarray, layout: str) -> None:
    """Raise unless `array` has as many dims as `layout` names (`"[batch, channels, length]"`)."""
    rank = layout.count(",") + 1
    if array.ndim != rank:
        raise ShapeError(
            f"{op}: expected {what} of rank {rank} {layout}, got shape {fmt(array.shape)}"
        )


def input_shape(op: str, shape, nd: int) -> tuple[int, ...]:
    """`shape` as ints, checked to be an input shape of an `nd`-D pool."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != nd + 2:
        raise ShapeError(f"{op}: expected an input shape {LAYOUT[nd]}, got {fmt(shape)}")
    return shape


def check_grad_shape(op: str, grad: np.ndarray, expected: Sequence[int]) -> None:
    if grad.shape != tuple(expected):
        raise ShapeError(
            f"{op}: expected an output gradient of shape {fmt(expected)}, got {fmt(grad.shape)}"
        )


def check_groups(op: str, channels_in: int, channels_out: int, groups: int) -> None:
    if channels_in % groups or channels_out % groups:
        raise ShapeError(
            f"{op}: "
            + GROUPS_NOT_DIVIDING.format(
                channels_in=channels_in, channels_out=channels_out, groups=groups
            )
        )


def check_channels(op: str, got: int, expected: int, x: np.ndarray, weight: np.ndarray) -> None:
    if got != expected:
        raise ShapeError(
            f"{op}: "
            + CHANNELS_MISMATCH.format(got=got, expected=expected)
            + f" (input shape {fmt(x.shape)}, weight shape {fmt(weight.shape)})"
        )


def too_small(op: str, shape: Sequence[int], kernel, dilation, padding) -> ShapeError:
    """The error for a (dilated) kernel that does not fit in the padded input of `shape`."""
    spatial = tuple(shape[2:])
    padded = [n + 2 * p for n, p in zip(spatial, padding, strict=True)]
    dilated = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
    return ShapeError(
        f"{op}: kernel size {fmt(kernel)} (dilated {fmt(dilated)}) is larger than the padded "
        f"input {fmt(padded)} (input shape {fmt(shape)}, padding {fmt(padding)})"
    )


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """burn-backend's `calculate_conv_output_size` (ops/modules/conv.rs, commit 2c06be35), the
    same floor formula as PyTorch; <= 0 when the dilated kernel exceeds the padded input.

    burn computes it in usize, so that case underflows (a panic in a debug build, a huge
    allocation in release); PyTorch raises "Kernel size can't be greater than actual input
    size". Callers raise `too_small` instead.
    """
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool
) -> int:
    """burn-flex's `pool_output_size` (ops/pool.rs, commit 2c06be35); <= 0 = kernel too large.

    Differs from PyTorch in ceil mode: PyTorch drops a last window that would start inside the
    right padding (`(out - 1) * stride >= size + padding`), flex keeps it. Input 5, kernel 2,
    stride 2, padding 1: flex 4 windows (the last one sees no input element), PyTorch 3.
    Where the dilated kernel exceeds the padded input, flex returns 0 windows (1 in ceil
    mode) where PyTorch raises; the kernels raise (issue 14, "Errors"), so 0 is returned here.
    """
    numerator = size + 2 * padding - dilation * (kernel - 1) - 1
    if numerator < 0:
        return 0
    if ceil_mode:
        return -(-numerator // stride) + 1
    return numerator // stride + 1


def tap(out_hw: Sequence[int], i: int, j: int, stride, dilation) -> tuple[slice, slice]:
    """The slices of a padded plane that kernel tap (i, j) reads for every output position."""
    h0 = i * dilation[0]
    w0 = j * dilation[1]
    return (
        slice(h0, h0 + stride[0] * (out_hw[0] - 1) + 1, stride[0]),
        slice(w0, w0 + stride[1] * (out_hw[1] - 1) + 1, stride[1]),
    )
