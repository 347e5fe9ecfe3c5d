"""The one-pass path of small float arrays (``harness.diff_scalar.few_float_stats``) against
the chunked pass (``harness.diff_stats.float_stats``), the reference: every field, on random
and adversarial finite inputs of every float dtype, whatever the tolerance; None (the chunked
pass's turn) whenever an input is NaN or infinite or ``a - b`` overflows.

The chunked pass is itself checked against per-element references (``test_diff.py``,
``test_ulp_histogram.py``); here it is run both as one chunk and as chunks of 3, so the two
agree with each other too.
"""

import numpy as np
import pytest

import harness.diff as diff_module
from harness.diff import diff_arrays
from harness.diff_scalar import FEW, few_float_stats
from harness.diff_stats import dtype_name, float_stats
from harness.float_dtypes import BFLOAT16
from harness.tolerances import Tolerance

DTYPES = [np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64)]
TOLERANCES = [
    Tolerance(1e-6),
    Tolerance(0.0),
    Tolerance(1e-3, rtol=1e-2),
    Tolerance(0.0, ulps=3),
    Tolerance(1e-7, rtol=1e-6, ulps=1),
    Tolerance(1e300),
]
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def as_dtype(values, dtype) -> np.ndarray:
    return np.asarray(values, np.float64).astype(dtype)


def finite_pool(dtype) -> np.ndarray:
    """Signed zeros, subnormals, the largest value and neighbours of 1."""
    ones = as_dtype([1.0, -1.0], dtype)
    bits = ones.view(UINT[dtype.itemsize])
    tiny = np.array([1, 3], UINT[dtype.itemsize]).view(dtype)
    info_max = as_dtype([np.inf], dtype).view(UINT[dtype.itemsize]) - 1
    extremes = info_max.view(dtype)
    pool = [ones, (bits + 1).view(dtype), (bits - 1).view(dtype), tiny, -tiny, extremes]
    pool.append(as_dtype([0.0, -0.0, 2.0, -0.5, 1e-3], dtype))  # no -max: max - -max overflows
    return np.concatenate(pool)


def pair(dtype, kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = as_dtype(rng.standard_normal(n), dtype)
    width = UINT[dtype.itemsize]
    if kind == "narrow":  # a few ULP apart, same signs
        steps = rng.integers(-3, 4, n).astype(width)
        b = (a.view(width) + steps).view(dtype)
    elif kind == "wide":  # absolute noise: distances over many buckets, some sign changes
        b = as_dtype(a.astype(np.float64) + rng.standard_normal(n) * 1e-2, dtype)
    elif kind == "near_zero":  # opposite signs, |a - b| < 2: the narrow opposite-sign path
        a = as_dtype(rng.standard_normal(n) * 1e-3, dtype)
        b = as_dtype(rng.standard_normal(n) * 1e-3, dtype)
    elif kind == "far":  # opposite signs far apart: the wide (uint64) distances
        b = as_dtype(-a.astype(np.float64) * 1e3, dtype)
    elif kind == "identical":
        b = a.copy()
    else:  # "specials": every finite special against every other
        pool = finite_pool(dtype)
        a, b = rng.choice(pool, n), rng.choice(pool, n)
        a[: n // 2] = as_dtype(rng.standard_normal(n // 2), dtype)
    return a, b


KINDS = ["narrow", "wide", "near_zero", "far", "identical", "specials"]


def chunked(a, b, tol, chunk):
    with np.errstate(all="ignore"):
        return float_stats(a, b, tol, chunk)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: dtype_name(d))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 7, 1000, FEW])
def test_every_field_equals_the_chunked_pass(dtype, kind, n):
    a, b = pair(dtype, kind, n, seed=n)
    for tol in TOLERANCES:
        few = few_float_stats(a, b, dtype_name(dtype), tol)
        reference = chunked(a, b, tol, n)
        assert few is not None, (kind, tol)
        assert few == reference, (kind, tol)
        assert few == chunked(a, b, tol, 3), (kind, tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: dtype_name(d))
def test_not_finite_inputs_are_left_to_the_chunked_pass(dtype):
    for special in (np.nan, np.inf, -np.inf):
        a = as_dtype([1.0, 2.0, 3.0], dtype)
        b = a.copy()
        b[1] = special
        assert few_float_stats(a, b, dtype_name(dtype), Tolerance(1e-3)) is None
        assert few_float_stats(b, a, dtype_name(dtype), Tolerance(1e-3)) is None
    big = as_dtype([1.0, 1.0], dtype).view(UINT[dtype.itemsize])
    top = (as_dtype([np.inf], dtype).view(UINT[dtype.itemsize]) - 1).view(dtype)
    a, b = np.concatenate([big.view(dtype), top]), np.concatenate([big.view(dtype), -top])
    assert few_float_stats(a, b, dtype_name(dtype), Tolerance(1e-3)) is None  # overflow


def test_diff_arrays_takes_the_path_up_to_few_elements_and_a_chunk(monkeypatch):
    calls = []
    real = diff_module.few_float_stats
    monkeypatch.setattr(
        diff_module, "few_float_stats", lambda *args: calls.append(args[0].size) or real(*args)
    )
    for n in (2, FEW, FEW + 1):
        a, b = pair(np.dtype(np.float32), "wide", n, seed=1)
        diff_arrays(a, b, Tolerance(1e-6))
    monkeypatch.setattr(diff_module, "CHUNK", 8)
    a, b = pair(np.dtype(np.float32), "wide", 9, seed=1)
    diff_arrays(a, b, Tolerance(1e-6))  # more than a chunk: the chunked pass's boundaries
    assert calls == [2, FEW]


@pytest.mark.parametrize("kind", KINDS)
def test_rows_are_the_same_with_and_without_the_path(monkeypatch, kind):
    """Through diff_arrays, whatever the layout: strided, byte-swapped, 2-D, memory-mapped."""
    a, b = pair(np.dtype(np.float32), kind, 2000, seed=7)
    layouts = {
        "plain": (a, b),
        "strided": (a[::2], b[::2]),
        "swapped": (a.astype(">f4"), b.astype(">f4")),
        "2-D, transposed": (a.reshape(40, 50).T, b.reshape(40, 50).T),
    }
    tol = Tolerance(1e-6, rtol=1e-5)
    for name, (x, y) in layouts.items():
        with_path = diff_arrays(x, y, tol, "k")
        monkeypatch.setattr(diff_module, "FEW", 1)
        without = diff_arrays(x, y, tol, "k")
        monkeypatch.setattr(diff_module, "FEW", FEW)
        assert vars(with_path) == vars(without), name


def test_memory_mapped_inputs_take_the_path(tmp_path):
    a, b = pair(np.dtype(np.float32), "wide", 1000, seed=3)
    maps = []
    for name, source in (("a", a), ("b", b)):
        out = np.lib.format.open_memmap(tmp_path / f"{name}.npy", "w+", np.float32, source.shape)
        out[:] = source
        out.flush()
        maps.append(np.load(tmp_path / f"{name}.npy", mmap_mode="r"))
    assert few_float_stats(*maps, "float32", Tolerance(1e-6)) == chunked(a, b, Tolerance(1e-6), 7)
