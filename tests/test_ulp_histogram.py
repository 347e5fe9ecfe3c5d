"""The log2 ULP histogram against a brute-force reference, on adversarial inputs.

The reference is pure Python: each finite pair's distance from the IEEE bit layout (the
ordered-integer images of the two bit patterns, written out here again rather than taken
from ``harness.ulp``), bucketed by ``int.bit_length``. Inputs mix NaN payloads, infinities,
signed zeros, subnormals, the extremes and random bit patterns, for float16/32/64, at sizes
on both sides of each counting path (thresholds, single and paired key counts, odd and even
counts, several chunks).
"""

import numpy as np
import pytest

from harness.diff import diff_arrays
from harness.diff_stats import float_stats
from harness.tolerances import Tolerance
from harness.ulp import _PAIRS_FROM, HIST_LEN, Log2Histogram, _count_pairs

LOOSE = Tolerance(1e300)
WIDTH = {np.float16: 16, np.float32: 32, np.float64: 64}
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def reference_histogram(distances) -> tuple[int, ...]:
    counts = [0] * HIST_LEN
    for d in distances:
        counts[int(d).bit_length()] += 1
    while counts and counts[-1] == 0:
        counts.pop()
    return tuple(counts)


def ordered(bits: int, width: int) -> int:
    magnitude = bits & ((1 << (width - 1)) - 1)
    return -magnitude if bits >> (width - 1) else magnitude


def finite_distances(a: np.ndarray, b: np.ndarray) -> list[int]:
    width = WIDTH[a.dtype.type]
    out = []
    bits_a, bits_b = a.view(UINT[width]).tolist(), b.view(UINT[width]).tolist()
    for x, y, bx, by in zip(a.tolist(), b.tolist(), bits_a, bits_b, strict=True):
        if np.isfinite(x) and np.isfinite(y):
            out.append(abs(ordered(bx, width) - ordered(by, width)))
    return out


def specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = np.nextafter(dtype(0), dtype(1))
    width = WIDTH[dtype]
    nan_payload = np.array([(1 << (width - 1)) - 1], UINT[width]).view(dtype)[0]
    values = [0.0, -0.0, tiny, -tiny, 3 * tiny, info.smallest_normal, -info.smallest_normal]
    values += [info.max, -info.max, np.inf, -np.inf, np.nan, 1.0, -1.0, info.eps, 2.0]
    return np.array([*values, nan_payload], dtype)


def adversarial_pair(dtype, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random bit patterns, near neighbours and specials, paired every which way."""
    rng = np.random.default_rng(seed)
    width = WIDTH[dtype]
    raw = rng.integers(0, 1 << width, size=(2, n), dtype=UINT[width], endpoint=False)
    a, b = raw[0].view(dtype).copy(), raw[1].view(dtype).copy()
    near = rng.random(n) < 0.5  # b a few ULP from a: small buckets alongside huge ones
    steps = rng.integers(-40, 41, n).astype(UINT[width])  # negative steps wrap: unsigned
    b[near] = (a.view(UINT[width]) + steps)[near].view(dtype)
    pool = specials(dtype)
    for side in (a, b):
        spots = rng.random(n) < 0.15
        side[spots] = rng.choice(pool, int(spots.sum()))
    return a, b


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, _PAIRS_FROM - 1, _PAIRS_FROM, _PAIRS_FROM + 1, 20_001])
def test_histogram_matches_brute_force(dtype, n):
    a, b = adversarial_pair(dtype, n, seed=n)
    distances = finite_distances(a, b)
    row = diff_arrays(a, b, LOOSE)
    assert row.ulp_histogram == reference_histogram(distances)
    assert row.max_ulp == (max(distances) if distances else None)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("chunk", [1, 3, 1024, _PAIRS_FROM + 1])
def test_histogram_is_the_same_whatever_the_chunking(dtype, chunk):
    a, b = adversarial_pair(dtype, 9_001, seed=chunk)
    fields = float_stats(a, b, LOOSE, chunk)
    assert fields["ulp_histogram"] == reference_histogram(finite_distances(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_sign_neighbours_only(dtype):
    """Distances of a few ULP on both sides of zero: the paths that never widen."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(30_000).astype(dtype)
    b = (a * (1 + rng.standard_normal(a.size) * 1e-6)).astype(dtype)
    assert diff_arrays(a, b, LOOSE).ulp_histogram == reference_histogram(finite_distances(a, b))


def edge_distances() -> list[int]:
    """Each bucket edge and its neighbours, up to the largest uint64."""
    out = [0, 1, 2, 3]
    for k in range(2, 65):
        out += [(1 << k) - 1, 1 << k, (1 << k) + 1]
    return [d for d in out if d < 1 << 64]


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("n", [5, _PAIRS_FROM - 1, _PAIRS_FROM + 2])
def test_add_buckets_every_edge(dtype, n):
    """Log2Histogram.add straight on distances: the float32 / float64 / uint64 cut-overs."""
    limit = np.iinfo(dtype).max
    pool = np.array([d for d in edge_distances() if d <= limit], dtype)
    rng = np.random.default_rng(n)
    for cap in (2**4, 2**23, 2**24, 2**52, 2**53, None):  # each path, each side of its limit
        chosen = pool if cap is None else pool[pool < cap]
        dist = rng.choice(chosen, n)
        dist[0] = chosen.max()
        hist = Log2Histogram()
        m = dist.size
        hist.add(
            dist,
            int(dist.max()),
            np.empty(m, bool),
            np.empty(m + 1, np.uint8),
            np.empty(m, np.float32),
        )
        assert hist.trimmed() == reference_histogram(dist.tolist()), (dtype, cap)


def test_counts_accumulate_over_calls():
    hist = Log2Histogram()
    for dist in ([0, 0, 1], [2**30, 5], [2**60 + 3]):
        d = np.array(dist, np.uint64)
        hist.add(d, int(d.max()), np.empty(3, bool), np.empty(4, np.uint8), np.empty(3, np.float32))
    hist.add_zeros(4)
    assert hist.trimmed() == reference_histogram([0, 0, 1, 2**30, 5, 2**60 + 3, 0, 0, 0, 0])


@pytest.mark.parametrize(
    "m", [0, 1, _PAIRS_FROM - 1, _PAIRS_FROM, _PAIRS_FROM + 1, 3 * _PAIRS_FROM]
)
def test_count_pairs_is_a_bincount(m):
    """Odd or even count: np.bincount's answer, slot 0 included."""
    rng = np.random.default_rng(m)
    keys = np.empty(m + 1, np.uint8)
    keys[:m] = rng.integers(0, 64, m)
    keys[m] = 7  # the spare holds junk; it must not be counted
    expected = np.bincount(keys[:m], minlength=64)
    assert _count_pairs(keys, m, 64).tolist() == expected.tolist()


# ---------------------------------------------------------------------------------------------
# The other per-tensor statistics of the same pass, against the plain NumPy formulas: the pass
# finds the largest |a - b| from the signed differences' argmax / argmin and max_rel from the
# signed quotients, with no |a - b| or |b| array.


def reference_row(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> dict:
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        absdiff = np.abs(a - b)  # in the inputs' dtype, as torch.isclose
        nan_bad = np.isnan(a) ^ np.isnan(b)
        inf_bad = ~finite & ~np.isnan(a) & ~np.isnan(b) & ~(a == b)
        bad = nan_bad | inf_bad
        rel = absdiff[finite] / np.abs(b[finite])
        limit = np.abs(b) * a.dtype.type(tol.rtol) + a.dtype.type(tol.atol)
    masked = np.where(finite, absdiff, -1)
    worst = int(np.flatnonzero(bad)[0]) if bad.any() else int(np.argmax(masked))
    return {
        "worst_index": worst,
        "max_rel": max(0.0, float(np.fmax.reduce(rel))) if rel.size else 0.0,
        "mismatches": int(np.count_nonzero(finite & (absdiff > limit)) + bad.sum()),
    }


def tied_pair(dtype, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Few distinct values: many pairs share the largest |a - b|, with either sign."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, n).astype(dtype)
    return a, rng.integers(-3, 4, n).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("make", [adversarial_pair, tied_pair])
@pytest.mark.parametrize("n", [2, 9, 5_000])
def test_worst_index_max_rel_and_mismatches_match_numpy(dtype, make, n):
    a, b = make(dtype, n, seed=n)
    tol = Tolerance(1e-3, 1e-2)
    for chunk in (n, 3):
        fields = float_stats(a, b, tol, chunk)
        expected = reference_row(a, b, tol)
        assert fields["worst_index"] == (expected["worst_index"],), chunk
        assert fields["max_rel"] == expected["max_rel"], chunk
        assert fields["mismatches"] == expected["mismatches"], chunk


def test_ties_of_either_sign_keep_the_first_occurrence():
    b = np.zeros(5, np.float32)
    for a, first in (([1, 3, -3, 3, 0], 1), ([1, -3, 3, -3, 0], 1), ([-0.0, 0.0, 0, 0, 0], 0)):
        row = diff_arrays(np.array(a, np.float32), b, LOOSE)
        assert row.worst_index == (first,), a
