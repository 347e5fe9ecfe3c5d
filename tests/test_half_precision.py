"""float16 and bfloat16 in side files, sidecars, diffs, ULPs and tolerances (issue 25).

Every one of the 65,536 bit patterns of each format goes through the codec; the reference
values are computed from the bits without the code under test (a bfloat16 is the float32
whose upper half it is; a float16 widens exactly through NumPy's own float16).
"""

import json

import numpy as np
import pytest

from harness import record
from harness.float_dtypes import BFLOAT16, numpy_dtype
from harness.record import RecordError

torch = pytest.importorskip("torch")

HALF = {"float16": np.dtype(np.float16), "bfloat16": BFLOAT16}
ALL_BITS = np.arange(1 << 16, dtype=np.uint16)


def exact_values(name: str) -> np.ndarray:
    """The float64 value of every bit pattern, computed without ml_dtypes or the codec."""
    with np.errstate(invalid="ignore"):  # signalling NaNs widen to quiet ones
        if name == "bfloat16":
            return (ALL_BITS.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return ALL_BITS.view(np.float16).astype(np.float64)


def round_trip(tmp_path, values, **kwargs):
    path = tmp_path / "side.json"
    text = record.write_side(path, "case", "torch", values, {}, **kwargs)
    return text, record.read_side(path).values


@pytest.mark.parametrize("name", sorted(HALF))
def test_every_bit_pattern_round_trips_inline(tmp_path, name):
    """Inline JSON keeps every non-NaN pattern bit for bit (-0.0, subnormals, infinities) and
    writes each value as its exact double; NaN patterns come back NaN (JSON's "NaN" has no
    payload)."""
    array = ALL_BITS.view(HALF[name])
    want = exact_values(name)
    nan = np.isnan(want)
    text, got = round_trip(tmp_path, {"w": array}, sidecar_threshold=1 << 20)
    data = json.loads(text)["values"]["w"]
    assert data["dtype"] == name and data["shape"] == [1 << 16]
    assert all(x == "NaN" for x in np.array(data["data"], dtype=object)[nan])
    kept = [x for x, bad in zip(data["data"], nan, strict=True) if not bad]
    written = np.array([record.SPECIALS.get(x, x) if isinstance(x, str) else x for x in kept])
    assert written.dtype == np.float64 and sum(isinstance(x, str) for x in kept) == 2
    np.testing.assert_array_equal(written.view(np.uint64), want[~nan].view(np.uint64))
    w = got["w"]
    assert w.dtype == HALF[name]
    np.testing.assert_array_equal(w.view(np.uint16)[~nan], ALL_BITS[~nan])
    with np.errstate(invalid="ignore"):
        assert np.isnan(w[nan].astype(np.float64)).all()


@pytest.mark.parametrize("name", sorted(HALF))
def test_every_bit_pattern_round_trips_through_a_sidecar(tmp_path, name):
    """A sidecar stores the bits: every pattern comes back, NaN payloads included, and the
    reference names the half dtype."""
    array = ALL_BITS.view(HALF[name])
    text, got = round_trip(tmp_path, {"w": array}, sidecar_threshold=100)
    ref = json.loads(text)["values"]["w"]
    assert ref["dtype"] == name and "sidecar" in ref
    np.testing.assert_array_equal(got["w"].view(np.uint16), ALL_BITS)
    assert got["w"].dtype == HALF[name]
    finite = exact_values(name)[np.isfinite(exact_values(name))]
    assert ref["summary"]["min"] == finite.min() and ref["summary"]["max"] == finite.max()
    assert ref["summary"]["nan"] == int(np.isnan(exact_values(name)).sum())


def test_a_tampered_bfloat16_sidecar_is_refused(tmp_path):
    array = ALL_BITS.view(BFLOAT16)
    path = tmp_path / "side.json"
    text = record.write_side(path, "case", "torch", {"w": array}, {}, sidecar_threshold=100)
    name = json.loads(text)["values"]["w"]["sidecar"]
    np.save(tmp_path / name, ALL_BITS[::-1].copy())
    with pytest.raises(RecordError, match=r"w: sidecar .* sha256 mismatch"):
        record.read_side(path)
    np.save(tmp_path / name, ALL_BITS.view(np.float16))  # same bytes, another dtype
    with pytest.raises(RecordError, match=r"holds dtype float16, the record says bfloat16"):
        record.read_side(path)


def test_torch_bfloat16_is_recorded_bit_for_bit(tmp_path):
    bits = torch.from_numpy(ALL_BITS.view(np.int16).copy()).view(torch.bfloat16)
    values = {"w": bits, "strided": bits.reshape(256, 256).t(), "neg": -bits[:4]}
    _, got = round_trip(tmp_path, values, sidecar_threshold=100)
    assert got["w"].dtype == BFLOAT16
    np.testing.assert_array_equal(got["w"].view(np.uint16), ALL_BITS)
    want_t = ALL_BITS.reshape(256, 256).T
    np.testing.assert_array_equal(got["strided"].view(np.uint16), want_t)
    np.testing.assert_array_equal(got["neg"].astype(np.float64), -exact_values("bfloat16")[:4])


def test_a_value_that_is_no_bfloat16_is_refused(tmp_path):
    """1 + 2**-9 lies between two bfloat16 values: a format-1 file may not round it."""
    path = tmp_path / "side.json"
    values = '{"w": {"dtype": "bfloat16", "shape": [2], "data": [1.0, 1.001953125]}}'
    path.write_text(f'{{"format": 1, "case": "c", "side": "s", "env": {{}}, "values": {values}}}')
    with pytest.raises(RecordError, match=r"w: data\[1\] = 1.001953125 is not exactly a bfloat16"):
        record.read_side(path)


def test_numpy_dtype_names_bfloat16():
    assert numpy_dtype("bfloat16") == BFLOAT16 and numpy_dtype("float16") == np.float16


# ---------------------------------------------------------------- ULP and diff statistics


def reference_ulps(bits_a: np.ndarray, bits_b: np.ndarray) -> np.ndarray:
    """Brute-force ULP distances in int64 from the bits: the ordered-integer images."""

    def ordered(bits):
        magnitude = (bits & 0x7FFF).astype(np.int64)
        return np.where(bits >= 0x8000, -magnitude, magnitude)

    return np.abs(ordered(bits_a) - ordered(bits_b))


def sample_pairs(seed: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Bit patterns of pairs: random ones, near neighbours, both sides of zero, every pattern
    against each extreme (largest finite of either sign, both zeros, smallest subnormal)."""
    rng = np.random.default_rng(seed)
    random_a = rng.integers(0, 1 << 16, 1 << 18, dtype=np.uint16)
    random_b = rng.integers(0, 1 << 16, 1 << 18, dtype=np.uint16)
    near_a = rng.integers(0, 1 << 16, 1 << 16, dtype=np.uint16)
    near_b = (near_a.astype(np.int64) + rng.integers(-40, 41, near_a.size)) % (1 << 16)
    small = rng.integers(0, 0x100, 1 << 14, dtype=np.uint16)
    zero_a, zero_b = small, rng.integers(0, 0x100, small.size, dtype=np.uint16) | 0x8000
    extremes = [0x0000, 0x8000, 0x0001, 0x8001, 0x7BFF, 0xFBFF, 0x7F7F, 0xFF7F]
    every_a = np.tile(ALL_BITS, len(extremes))
    every_b = np.repeat(np.array(extremes, np.uint16), ALL_BITS.size)
    a = np.concatenate([random_a, near_a, zero_a, every_a])
    b = np.concatenate([random_b, near_b.astype(np.uint16), zero_b, every_b])
    return a, b


def in_dtype(x64: np.ndarray, name: str) -> np.ndarray:
    """A float64 result rounded as the dtype's arithmetic rounds it: float32, then the dtype."""
    with np.errstate(all="ignore"):
        return x64.astype(np.float32).astype(HALF[name]).astype(np.float64)


@pytest.mark.parametrize("name", sorted(HALF))
def test_scalar_ulp_distance_matches_the_brute_force_over_every_pattern(name):
    from harness.ulp import ulp_distance

    values = exact_values(name)
    for anchor in (0x0000, 0x8000, 0x3F80, 0xBC00, 0x7BFF):
        want = reference_ulps(ALL_BITS, np.full_like(ALL_BITS, anchor))
        got = [ulp_distance(x, values[anchor], name) for x in values.tolist()]
        finite = np.isfinite(values) & np.isfinite(values[anchor])
        assert all(g is None for g, ok in zip(got, finite, strict=True) if not ok)
        np.testing.assert_array_equal(np.array(got, dtype=object)[finite], want[finite])


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("chunk", [4096, 1 << 20])
def test_every_diff_statistic_matches_the_brute_force(name, chunk):
    """max_ulp, worst_ulp, the histogram, max_abs, max_rel, the NaN/inf categories and the
    mismatch count under atol-or-ulps, against float64 and int64 computations from the bits
    (``|a - b|`` rounded as the dtype's arithmetic rounds it, the rule harness.diff states)."""
    from harness.diff_stats import float_stats, round_down
    from harness.tolerances import Tolerance

    bits_a, bits_b = sample_pairs()
    a, b = bits_a.view(HALF[name]), bits_b.view(HALF[name])
    tol = Tolerance(2.0**-6, ulps=3, reason="test")
    got = float_stats(a, b, tol, chunk)

    with np.errstate(all="ignore"):
        a64, b64 = exact_values(name)[bits_a], exact_values(name)[bits_b]
    nan_a, nan_b, inf_a, inf_b = np.isnan(a64), np.isnan(b64), np.isinf(a64), np.isinf(b64)
    finite = ~(nan_a | nan_b | inf_a | inf_b)
    dist = reference_ulps(bits_a, bits_b)[finite]
    fa, fb = a64[finite], b64[finite]
    absdiff = in_dtype(np.abs(fa - fb), name)
    with np.errstate(all="ignore"):
        rel = np.abs(in_dtype(in_dtype(fa - fb, name) / fb, name))
    atol = float(round_down(tol.atol, HALF[name]))
    bad = (absdiff > atol) & (dist > tol.ulps)
    nan_bad = int((nan_a ^ nan_b).sum())
    inf_bad = int(((inf_a | inf_b) & ~(nan_a | nan_b) & ~(inf_a & inf_b & (a64 == b64))).sum())
    buckets = np.array([int(d).bit_length() for d in dist])

    assert got["max_ulp"] == dist.max()
    assert got["ulp_histogram"] == tuple(np.bincount(buckets).tolist())
    # the float64 |a - b| of the first pair whose |a - b| is largest in the dtype (a
    # difference beyond the dtype's range is inf there: the first such pair)
    assert got["max_abs"] == abs(fa - fb)[np.argmax(absdiff)]
    assert got["max_rel"] == np.nanmax(rel)
    assert got["matched_nans"] == int((nan_a & nan_b).sum())
    assert (got["nan_mismatches"], got["inf_mismatches"]) == (nan_bad, inf_bad)
    assert got["mismatches"] == int(bad.sum()) + nan_bad + inf_bad
    assert got["bit_identical"] is False
    assert got["worst_ulp"] is None  # the first pair of the worst kind is a NaN / inf one


@pytest.mark.parametrize("name", sorted(HALF))
def test_one_element_rows_agree_with_the_chunked_pass(name):
    """diff_arrays takes Python arithmetic for one element: same fields as the chunked pass."""
    from harness.diff import diff_arrays
    from harness.diff_stats import float_stats
    from harness.tolerances import Tolerance

    bits_a, bits_b = sample_pairs(seed=7)
    keep = np.random.default_rng(7).choice(bits_a.size, 400, replace=False)
    tol = Tolerance(1e-3, rtol=1e-2, ulps=2, reason="test")
    fields = ("max_abs", "max_rel", "max_ulp", "mismatches", "ulp_histogram", "bit_identical")
    for i in keep:
        a = bits_a[i : i + 1].view(HALF[name])
        b = bits_b[i : i + 1].view(HALF[name])
        row, want = diff_arrays(a, b, tol), float_stats(a, b, tol, 1 << 20)
        for field in fields:
            assert getattr(row, field) == want[field] or (
                field == "max_rel" and np.isnan(want[field]) is np.isnan(getattr(row, field))
            ), (field, bits_a[i], bits_b[i])


@pytest.mark.parametrize("name", sorted(HALF))
def test_a_failing_half_row_lists_its_mismatches(name):
    """The mismatch listing (compare.py's and assert_conforms' "at [i]" lines) reads half rows:
    one element 4 ULP away under a 1-ULP tolerance, its ULP distance from the bits."""
    from harness.diff import diff_arrays
    from harness.mismatches import inspect_row
    from harness.tolerances import Tolerance

    a = np.ones(16, HALF[name])
    b = a.copy()
    b.view(np.uint16)[5] += 4
    tol = Tolerance(0.0, ulps=1, reason="test")
    row = diff_arrays(a, b, tol)
    assert (row.status, row.mismatches, row.max_ulp) == ("fail", 1, 4)
    detail = inspect_row(a, b, row, limit=None)
    assert detail.mismatched == 1 and detail.dtype == name
    assert (detail.worst_ulp.index, detail.worst_ulp.ulp) == ((5,), 4)
    assert detail.first[0].b == float(b[5]) and detail.ulp_floor == (
        2.0**-14 if name == "float16" else 2.0**-126
    )


# ---------------------------------------------------------------- default tolerances

OPS = {
    "add": lambda x, y: x + y,
    "div": lambda x, y: x / (np.abs(y) + 0.5),
    "exp": lambda x, y: np.exp(x),
    "sigmoid": lambda x, y: 1 / (1 + np.exp(-x)),
    "log": lambda x, y: np.log(np.abs(x) + 1e-3),
    "sum64": lambda x, y: x.reshape(-1, 64).sum(1),
    "matmul64": lambda x, y: x.reshape(-1, 64) @ y[: 64 * 64].reshape(64, 64),
}


@pytest.mark.parametrize("name", sorted(HALF))
@pytest.mark.parametrize("op", sorted(OPS))
def test_the_default_tolerance_takes_the_rounding_of_a_float32_op(name, op):
    """The measurement behind DEFAULTS: an op computed in float32 and rounded once agrees with
    the float64 op rounded once (at most 1 ULP apart); 2 ULP more on one element fails."""
    from harness.diff import diff_arrays
    from harness.tolerances import default_tolerance

    rng = np.random.default_rng(25)
    x, y = (rng.standard_normal(1 << 16).astype(HALF[name]) for _ in range(2))
    f32 = OPS[op](x.astype(np.float32), y.astype(np.float32)).astype(HALF[name])
    f64 = OPS[op](x.astype(np.float64), y.astype(np.float64)).astype(HALF[name])
    tol = default_tolerance(name)
    row = diff_arrays(f32, f64, tol)
    assert row.status == "ok", (row.max_ulp, row.max_abs)
    a, b = f32.reshape(-1), f64.reshape(-1)
    away = np.abs(b.astype(np.float64)) >= 2.0**-4  # near zero a cancelled sum may part more
    assert reference_ulps(a.view(np.uint16), b.view(np.uint16))[away].max() <= 1
    # the smallest shift of the largest element beyond both atol and 1 ULP is refused
    k = int(np.argmax(np.abs(b.astype(np.float64))))
    wrong, shift = a.copy(), 2
    while (
        abs(float((b.view(np.uint16)[k : k + 1] + shift).view(HALF[name])[0]) - float(b[k]))
        <= tol.atol
    ):
        shift += 1
    wrong.view(np.uint16)[k] = b.view(np.uint16)[k] + shift
    assert diff_arrays(wrong, b, tol).status == "fail"


def test_assert_conforms_compares_torch_bfloat16_with_ml_dtypes_bfloat16():
    """A torch bf16 tensor against a NumPy bfloat16 array: same dtype, 1 ULP passes the
    default, 2 ULP at 256 fails naming the element."""
    from harness.testing import assert_conforms

    w = torch.tensor([1.0, -3.0, 256.0], dtype=torch.bfloat16)
    assert_conforms({"w": w}, {"w": np.array([1.0, -3.0, 258.0], BFLOAT16)})
    with pytest.raises(AssertionError, match=r"w\[2\]: actual=256.0 expected=260.0 .*2 ulp"):
        assert_conforms({"w": w}, {"w": np.array([1.0, -3.0, 260.0], BFLOAT16)})
