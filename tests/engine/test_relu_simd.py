"""relu's forward through NumPy's SIMD fmax loop (harness.engine.ops.nn._fmax_zero) gives the
bits of the scalar loop it replaced, `np.fmax(x, zero)` with a 0-d zero: float32 bit patterns
of every class, float64 random bit patterns and specials, every path (scalar below the
threshold, one zero block, several blocks with a partial last one, strided views), and the
op's gradient."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, Tensor
from harness.engine.ops import nn
from harness.engine.ops.arrays import zero_of

AD = Device.flex().autodiff()
UINT = {4: np.uint32, 8: np.uint64}


def old_relu(x: np.ndarray) -> np.ndarray:
    """The forward before the SIMD path: fmax against a 0-d zero of x's dtype."""
    return np.fmax(x, zero_of(x.dtype))


def assert_same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    uint = UINT[got.dtype.itemsize]
    assert np.array_equal(got.view(uint), expected.view(uint))


def specials(dtype) -> np.ndarray:
    """Signed zeros, infinities, NaNs with payloads and signs, subnormals, the extremes."""
    info = np.finfo(dtype)
    uint = UINT[np.dtype(dtype).itemsize]
    bits = np.dtype(dtype).itemsize * 8
    sign = uint(1) << uint(bits - 1)
    quiet = np.array([np.nan], dtype).view(uint)[0]
    nans = np.array([quiet, quiet | uint(1), quiet + uint(12345), quiet - uint(1)], uint)
    nans = np.concatenate([nans, nans | sign]).view(dtype)
    values = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        info.tiny,
        -info.tiny,
        info.max,
        -info.max,
        info.smallest_subnormal,
        -info.smallest_subnormal,
        1.0,
        -1.0,
    ]
    return np.concatenate([np.array(values, dtype), nans])


def _float32_patterns():
    """Blocks of float32 bit patterns: every pattern of exponent 0 and 255 (signed zeros,
    subnormals, infinities, every NaN payload of both signs), and one pattern in 17 of the rest
    (every exponent, both signs, about 490,000 mantissas each). The sweep over all 2**32
    patterns passed once (8 s, too slow to stand here)."""
    block = 1 << 22  # several zero blocks per call, so the block loop is what is checked
    for top in (0x0000_0000, 0x8000_0000, 0x7F80_0000, 0xFF80_0000):  # exponent 0 or 255
        for start in range(top, top + (1 << 23), block):
            yield np.arange(start, start + block, dtype=np.uint32)
    step = 17 * block
    for start in range(0, 1 << 32, step):
        yield np.arange(start, min(start + step, 1 << 32), 17, dtype=np.uint32)


def test_float32_bit_patterns_of_every_class():
    zero = zero_of(np.dtype(np.float32))
    for bits in _float32_patterns():
        x = bits.view(np.float32)
        got = nn._fmax_zero(x)
        assert np.array_equal(got.view(np.uint32), np.fmax(x, zero).view(np.uint32)), hex(bits[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape",
    [
        (7,),  # scalar loop
        (nn._SIMD_MIN - 1,),
        (nn._SIMD_MIN,),  # first size through the zero block
        (128, 256),  # the medium MLP's hidden layer: one block
        (nn._ZERO_BLOCK,),
        (nn._ZERO_BLOCK + 1,),  # a one-element last block
        (3, 5, nn._ZERO_BLOCK // 7),  # several blocks, a partial last one, rank 3
        (0, 4096),
    ],
)
def test_random_bit_patterns_and_specials_on_every_path(dtype, shape):
    rng = np.random.default_rng(26)
    uint = UINT[np.dtype(dtype).itemsize]
    size = int(np.prod(shape))
    x = rng.integers(0, np.iinfo(uint).max, size, dtype=uint, endpoint=True).view(dtype)
    k = min(size // 2, len(specials(dtype)))  # the specials at the start and mid-array
    x[:k] = specials(dtype)[:k]
    x[size // 2 : size // 2 + k] = specials(dtype)[:k]
    x = x.reshape(shape)
    assert_same_bits(nn._fmax_zero(x), old_relu(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_and_fortran_inputs_take_the_scalar_loop_with_the_same_bits(dtype):
    rng = np.random.default_rng(27)
    x = rng.standard_normal((300, 400)).astype(dtype)
    x[::7, ::3] = -0.0
    x[1::11, ::5] = np.nan
    for view in (x[:, ::2], x.T, x[::-1]):
        assert_same_bits(nn._fmax_zero(view), old_relu(view))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_relu_op_and_its_gradient_are_the_old_ones(dtype):
    rng = np.random.default_rng(28)
    values = rng.standard_normal((128, 256)).astype(dtype)
    values[::5] = 0.0
    values[1::9] = -0.0
    values[2::13, ::4] = np.nan
    cot = rng.standard_normal((128, 256)).astype(dtype)
    x = Tensor.from_numpy(values, AD).require_grad()
    y = x.relu()
    grad = x.grad((y * Tensor.from_numpy(cot, AD)).backward()).numpy()
    expected = old_relu(values)
    assert_same_bits(y.numpy(), expected)
    assert_same_bits(grad, np.where(expected > 0, cot, np.zeros((), dtype)))
