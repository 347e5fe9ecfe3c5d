"""float16 and bfloat16 engine tensors (issue 25): creation, burn's cast and its gradient,
and each half op computed as burn-flex does (harness.engine.ops.half, half_ops).

Expected values are computed here independently of the engine: the float32 op in NumPy on the
widened operands, rounded once with NumPy's float16 / ml_dtypes' bfloat16 cast, or bit
patterns worked out by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from harness.engine import Device, FloatDType, Tensor

AD = Device.flex().autodiff()
PLAIN = Device.flex()
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [F16, BF16]
NAMES = {F16: "float16", BF16: "bfloat16"}


def rng_values(n: int, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


def once(f32: np.ndarray, dtype) -> np.ndarray:
    """A float32 result rounded once to the half format (the reference of every op)."""
    return np.asarray(f32, dtype=np.float32).astype(dtype)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).view(np.uint16)


# ---- creation --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_creation_in_each_half_dtype_and_burns_names(dtype):
    burn_name = FloatDType.F16 if dtype == F16 else FloatDType.BF16
    for spelling in (NAMES[dtype], dtype, burn_name):
        t = Tensor.from_floats([[1.0, -2.5], [0.1, 3.0]], AD, dtype=spelling)
        assert t.dtype == dtype and t.shape == (2, 2)
    assert Tensor.zeros([2], AD, dtype=burn_name).dtype == dtype
    assert Tensor.ones([2], AD, dtype=NAMES[dtype]).tolist() == [1.0, 1.0]
    full = Tensor.full([3], 0.1, AD, dtype=NAMES[dtype])
    assert bits(full.numpy()).tolist() == [bits(np.float32(0.1).astype(dtype)).item()] * 3
    assert Tensor.from_numpy(np.array([0.5, 2.0], dtype=dtype), AD).dtype == dtype


def test_from_floats_rounds_through_float32_as_burns_f32_elements():
    # 1 + 2**-11 + 2**-40 as a float64 rounds up to 1 + 2**-10 in float16 directly, but its
    # float32 (1 + 2**-11, a tie) rounds to even: 1.0. burn's from_floats takes f32 elements.
    v = 1 + 2**-11 + 2**-40
    assert Tensor.from_floats([v], AD, dtype="float16").tolist() == [1.0]
    assert np.array([v]).astype(np.float16).tolist() == [1 + 2**-10]


# ---- cast ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_cast_round_trips_are_exact_for_representable_values(dtype):
    # Every finite half value (all bit patterns but NaNs) survives half -> wide -> half.
    patterns = np.arange(2**16, dtype=np.uint16).view(dtype)
    finite = patterns[np.isfinite(patterns.astype(np.float32))]
    t = Tensor.from_numpy(finite, PLAIN)
    for wide in (FloatDType.F32, FloatDType.F64):
        back = t.cast(wide).cast(dtype)
        assert bits(back.numpy()).tolist() == bits(finite).tolist()
    other = F16 if dtype == BF16 else BF16
    assert t.cast(dtype) is t
    # Between the two half formats: exact where the other holds the value.
    small = finite[np.abs(finite.astype(np.float32)) < 1]
    narrow = Tensor.from_numpy(small, PLAIN).cast(other)
    exact = narrow.numpy().astype(np.float32) == small.astype(np.float32)
    assert np.array_equal(narrow.cast(dtype).numpy()[exact], small[exact])


def test_cast_to_half_rounds_as_the_half_crate_not_correctly():
    # 1 + 2**-11 + 2**-23 in float32: past the float16 tie only by its lowest mantissa bit,
    # which the half crate's f64 conversion drops (it keeps the high 32 bits of the f64), so
    # burn gets the tie and rounds to even (1.0); a correct rounding gives 1 + 2**-10.
    x = np.array([1 + 2**-11 + 2**-23], dtype=np.float32)
    assert x.astype(np.float16).tolist() == [1 + 2**-10]  # NumPy (and torch): correct
    assert Tensor.from_numpy(x, PLAIN).cast("float16").tolist() == [1.0]
    # bfloat16: the tie is at 2**-8; the same bit past it.
    y = np.array([1 + 2**-8 + 2**-23], dtype=np.float32)
    assert y.astype(BF16).astype(np.float32).tolist() == [1 + 2**-7]
    assert Tensor.from_numpy(y, PLAIN).cast(FloatDType.BF16).numpy().astype(float).tolist() == [1.0]
    # With a bit above the dropped ones set, both round up.
    z = np.array([1 + 2**-11 + 2**-20], dtype=np.float32)
    assert Tensor.from_numpy(z, PLAIN).cast("float16").tolist() == [1 + 2**-10]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_cast_gradient_is_cast_back(dtype):
    x = Tensor.from_floats([0.3, -1.7, 2.2], AD).require_grad()
    h = x.cast(dtype)
    assert h.dtype == dtype
    loss = (h * Tensor.from_floats([1.0, 2.0, 0.1], AD, dtype=dtype)).sum()
    grads = loss.backward()
    gx = x.grad(grads)
    assert gx.dtype == np.float32
    # d/dx of sum(w * cast(x)) is w, as a half value widened: 0.1 rounded to the half format.
    assert (
        gx.tolist()
        == once(np.array([1.0, 2.0, 0.1], np.float32), dtype).astype(np.float32).tolist()
    )
    # And from half to float32: the float32 gradient comes back rounded to the half format.
    hx = Tensor.from_floats([0.5, 1.5], AD, dtype=dtype).require_grad()
    out = hx.cast("float32").mul_scalar(0.1).sum()
    ghx = hx.grad(out.backward())
    assert ghx.dtype == dtype
    assert bits(ghx.numpy()).tolist() == bits(once(np.float32(0.1) * np.ones(2), dtype)).tolist()


def test_float_dtypes_never_mix():
    a = Tensor.from_floats([1.0], AD, dtype="float16")
    b = Tensor.from_floats([1.0], AD, dtype="bfloat16")
    with pytest.raises(TypeError, match="add: dtype mismatch: float16 and bfloat16"):
        a + b
