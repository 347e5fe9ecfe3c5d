"""harness.diff: statuses, worst element, NaN/inf categories, counts, histogram, chunking."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import harness.diff as diff_module
from harness.diff import diff_arrays, diff_value, diff_values
from harness.record import CapturedError
from harness.tolerances import Tolerance, default_tolerance

F32 = Tolerance(1e-6, reason="test")
EXACT = Tolerance.exact()


def arr(values, dtype=np.float32):
    return np.array(values, dtype)


# -- statuses, in the order keys -> dtype -> shape -> values ----------------------------------


def test_dtype_is_checked_before_shape_and_never_promoted():
    row = diff_arrays(arr([1.0, 2.0]), arr([1.0, 2.0, 3.0], np.float64), F32, "w")
    assert (row.status, row.dtype_a, row.dtype_b) == ("dtype", "float32", "float64")
    assert row.n == 0


def test_shape_mismatch_reports_both_shapes():
    row = diff_arrays(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), F32)
    assert (row.status, row.shape_a, row.shape_b, row.n) == ("shape", (2, 3), (3, 2), 0)


def test_missing_keys_on_either_side_are_rows():
    d = diff_values(
        {"x": arr([1.0]), "only_a": arr([2.0])},
        {"x": arr([1.0]), "only_b": 3},
        tol_for=lambda key, dtype: default_tolerance(dtype),
    )
    assert [r.key for r in d.rows] == ["x", "only_a", "only_b"]
    assert [r.status for r in d.rows] == ["ok", "missing", "missing"]
    assert [r.missing_from for r in d.rows] == [None, "b", "a"]
    assert d.rows[2].dtype_b == "int" and d.rows[2].kind == "value"
    assert not d.ok


# -- values ------------------------------------------------------------------------------------


def test_worst_index_is_a_multi_index_with_both_values():
    a = np.zeros((3, 4), np.float32)
    b = a.copy()
    b[2, 1], b[0, 3] = 0.5, 0.25
    row = diff_arrays(a, b, F32)
    assert row.status == "fail"
    assert (row.worst_index, row.a_worst, row.b_worst, row.max_abs) == ((2, 1), 0.0, 0.5, 0.5)
    assert row.mismatches == 2 and row.n == 12


def test_max_abs_is_exact_for_float32_pairs():
    a, b = arr([1.0]), arr([np.nextafter(np.float32(1), np.float32(2))])
    assert diff_arrays(a, b, F32).max_abs == 2.0**-23


def test_relative_difference_uses_b_as_reference():
    row = diff_arrays(arr([1.0, 2.0], np.float64), arr([1.1, 4.0], np.float64), EXACT)
    assert row.max_rel == pytest.approx(0.5)
    assert diff_arrays(arr([1e-3]), arr([0.0]), F32).max_rel == math.inf
    assert diff_arrays(arr([0.0]), arr([0.0]), F32).max_rel == 0.0


def test_rtol_scales_with_b():
    a, b = arr([1.0, 2.0], np.float64), arr([1.05, 2.5], np.float64)
    row = diff_arrays(a, b, Tolerance(0.0, rtol=0.1))
    assert (row.mismatches, row.worst_index) == (1, (1,))


def test_atol_boundary_is_not_widened_by_float32_rounding():
    # float32(1e-6) is below 1e-6; a difference of exactly that float32 still agrees, and the
    # next float32 difference above 1e-6 does not.
    below = float(np.float32(1e-6))
    assert below < 1e-6
    above = float(np.nextafter(np.float32(1e-6), np.float32(1)))
    assert diff_arrays(arr([0.0]), arr([below]), Tolerance(1e-6)).ok
    assert not diff_arrays(arr([0.0]), arr([above]), Tolerance(1e-6)).ok
    # with atol = float32(1e-6) itself the boundary value agrees
    assert diff_arrays(arr([0.0]), arr([below]), Tolerance(below)).ok


def test_nan_categories():
    row = diff_arrays(arr([np.nan, 1.0, np.nan, 2.0]), arr([np.nan, np.nan, 1.0, 2.0]), F32)
    assert (row.matched_nans, row.nan_mismatches, row.inf_mismatches) == (1, 2, 0)
    assert row.mismatches == 2 and row.status == "fail"
    assert row.worst_index == (1,) and row.a_worst == 1.0 and math.isnan(row.b_worst)
    assert row.worst_ulp is None
    assert row.max_abs == 0.0  # over the finite pairs only


def test_matched_nans_alone_agree():
    row = diff_arrays(arr([np.nan, 1.0]), arr([np.nan, 1.0]), EXACT)
    assert row.ok and row.matched_nans == 1 and row.bit_identical


def test_inf_categories():
    a = arr([np.inf, -np.inf, np.inf, 1.0, np.inf, -np.inf])
    b = arr([np.inf, np.inf, 1.0, np.inf, np.nan, -np.inf])
    row = diff_arrays(a, b, F32)
    assert (row.inf_mismatches, row.nan_mismatches, row.mismatches) == (3, 1, 4)
    assert row.worst_index == (1,)
    assert (row.a_worst, row.b_worst) == (-math.inf, math.inf)
    assert row.max_ulp is None  # no finite pair at all; inf is never a ULP count


def test_signed_zeros_agree_but_are_not_bit_identical():
    row = diff_arrays(arr([0.0, 1.0]), arr([-0.0, 1.0]), EXACT)
    assert row.ok and row.max_ulp == 0 and row.max_abs == 0.0
    assert not row.bit_identical
    assert diff_arrays(arr([0.0, 1.0]), arr([0.0, 1.0]), EXACT).bit_identical


def test_histogram_buckets_are_log2_of_ulp_distance():
    one = np.float32(1.0)
    ks = [0, 0, 1, 2, 3, 4, 7, 8]
    b = [one]
    for _ in range(max(ks)):
        b.append(np.nextafter(b[-1], np.float32(2)))
    row = diff_arrays(arr([one] * len(ks)), arr([b[k] for k in ks]), Tolerance(1.0))
    assert row.ulp_histogram == (2, 1, 2, 2, 1)  # 0 | [1,2) | [2,4) | [4,8) | [8,16)
    assert row.max_ulp == 8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histogram_with_many_buckets_matches_bit_lengths(dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(5000).astype(dtype)
    b = (a * (1 + rng.standard_normal(5000) * 1e-3)).astype(dtype)
    b[:10] = -a[:10]  # opposite signs: huge distances, the wide path
    row = diff_arrays(a, b, Tolerance(1e9))
    expected = [0] * 70
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        expected[reference_ulp(x, y, dtype).bit_length()] += 1
    while expected[-1] == 0:
        expected.pop()
    assert row.ulp_histogram == tuple(expected)
    assert sum(row.ulp_histogram) == 5000


def test_empty_tensor():
    row = diff_arrays(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32), F32)
    assert (row.status, row.n, row.max_abs, row.worst_index) == ("ok", 0, 0, None)


def test_int_tensors_are_exact_ints():
    row = diff_arrays(arr([1, 5, -3], np.int64), arr([1, 2, -3], np.int64), EXACT)
    assert (row.status, row.max_abs, row.worst_index, row.mismatches) == ("fail", 3, (1,), 1)
    assert isinstance(row.max_abs, int) and row.max_ulp is None
    info = np.iinfo(np.int64)
    row = diff_arrays(arr([info.max], np.int64), arr([info.min], np.int64), EXACT)
    assert row.max_abs == 2**64 - 1
    assert diff_arrays(arr([True, False], bool), arr([True, True], bool), EXACT).mismatches == 1


def test_other_dtypes_compare_by_equality():
    row = diff_arrays(np.array(["a", "b"]), np.array(["a", "c"]), EXACT)
    assert (row.status, row.worst_index, row.a_worst, row.b_worst) == ("fail", (1,), "b", "c")
    assert row.max_abs is None
    c = np.array([1 + 1j, complex("nan+0j")])
    assert diff_arrays(c, c.copy(), EXACT).ok


def test_non_native_and_non_contiguous_inputs_match_the_plain_result():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    b = (a + rng.standard_normal((40, 30)).astype(np.float32) * 1e-6).astype(np.float32)
    plain = diff_arrays(a.T.copy(), b.T.copy(), F32)
    assert diff_arrays(a.T, b.T, F32) == plain
    assert diff_arrays(a.T.copy().astype(">f4"), b.T.copy(), F32) == plain


def test_memory_mapped_inputs(tmp_path):
    a = np.lib.format.open_memmap(tmp_path / "a.npy", "w+", np.float32, (1000,))
    b = np.lib.format.open_memmap(tmp_path / "b.npy", "w+", np.float32, (1000,))
    a[:] = np.arange(1000, dtype=np.float32)
    b[:] = a
    b[999] += 1
    row = diff_arrays(a, b, F32)
    assert (row.worst_index, row.max_abs, row.mismatches) == ((999,), 1.0, 1)


# -- chunk boundaries --------------------------------------------------------------------------


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(diff_module, "CHUNK", 8)
    return 8


def test_worst_in_the_last_partial_chunk(small_chunks):
    n = 3 * small_chunks + 5
    a = np.zeros(n, np.float32)
    b = a.copy()
    b[3] = 1e-3
    b[n - 1] = 2e-3
    row = diff_arrays(a, b, F32)
    assert row.worst_index == (n - 1,) and row.mismatches == 2
    assert row.max_abs == float(np.float32(2e-3))


def test_first_occurrence_of_the_max_wins_across_chunks(small_chunks):
    a = np.zeros(3 * small_chunks, np.float32)
    b = a.copy()
    b[5] = b[small_chunks + 1] = 0.5
    assert diff_arrays(a, b, F32).worst_index == (5,)


def test_nan_mismatch_in_a_later_chunk_is_the_worst(small_chunks):
    a = np.zeros(2 * small_chunks + 1, np.float32)
    b = a.copy()
    b[0] = 0.5
    b[small_chunks + 2] = np.nan
    row = diff_arrays(a, b, F32)
    assert row.worst_index == (small_chunks + 2,)
    assert row.max_abs == 0.5 and row.mismatches == 2 and row.nan_mismatches == 1


def test_real_chunk_plus_one():
    n = diff_module.CHUNK + 1
    a = np.ones(n, np.float32)
    b = a.copy()
    b[-1] = np.nextafter(np.float32(1), np.float32(2))
    row = diff_arrays(a, b, EXACT)
    assert (row.worst_index, row.max_ulp, row.mismatches, row.n) == ((n - 1,), 1, 1, n)
    assert row.ulp_histogram == (n - 1, 1)


# -- against a per-element reference -----------------------------------------------------------


def reference_ulp(x, y, dtype):
    code = "f" if np.dtype(dtype) == np.float32 else "d"
    width = 32 if code == "f" else 64

    def ordered(v):
        (bits,) = struct.unpack("<I" if code == "f" else "<Q", struct.pack("<" + code, v))
        mag = bits & ((1 << (width - 1)) - 1)
        return -mag if bits >> (width - 1) else mag

    return abs(ordered(x) - ordered(y))


def reference(a, b, tol, dtype):
    """Per-element Python statement of the agreement rule and the counters."""
    out = {"mism": 0, "nan": 0, "inf": 0, "matched": 0, "max_ulp": -1, "max_abs": 0.0}
    out["near"] = 0  # elements within rounding of the limit: either verdict is acceptable
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if math.isnan(x) or math.isnan(y):
            out["matched" if math.isnan(x) and math.isnan(y) else "nan"] += 1
        elif math.isinf(x) or math.isinf(y):
            out["inf"] += x != y
        else:
            ulp = reference_ulp(x, y, dtype)
            out["max_ulp"] = max(out["max_ulp"], ulp)
            d = abs(x - y)  # exact doubles of float32 values
            out["max_abs"] = max(out["max_abs"], d)
            limit = tol.atol + tol.rtol * abs(y)
            if tol.ulps is not None and ulp <= tol.ulps:
                continue
            out["mism"] += d > limit
            out["near"] += abs(d - limit) <= 1e-6 * max(limit, d) or math.isinf(d - limit)
    out["mism"] += out["nan"] + out["inf"]
    return out


floats32 = hnp.from_dtype(np.dtype(np.float32), allow_subnormal=True)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.float32, n, elements=floats32),
            hnp.arrays(np.float32, n, elements=floats32),
        )
    ),
    st.sampled_from([Tolerance(1e-6), Tolerance(0.0, ulps=3), Tolerance(1e-3, rtol=1e-2)]),
)
def test_chunked_pass_matches_per_element_reference(pair, tol):
    a, b = pair
    old = diff_module.CHUNK
    diff_module.CHUNK = 8
    try:
        row = diff_arrays(a, b, tol)
    finally:
        diff_module.CHUNK = old
    ref = reference(a, b, tol, np.float32)
    assert row.nan_mismatches == ref["nan"]
    assert row.inf_mismatches == ref["inf"]
    assert row.matched_nans == ref["matched"]
    assert row.max_ulp == (ref["max_ulp"] if ref["max_ulp"] >= 0 else None)
    assert abs(row.mismatches - ref["mism"]) <= ref["near"]
    assert row.max_abs == pytest.approx(ref["max_abs"], rel=2**-23)
    assert sum(row.ulp_histogram) == a.size - ref["nan"] - ref["inf"] - ref["matched"] - sum(
        1 for x, y in zip(a.tolist(), b.tolist(), strict=True) if math.isinf(x) and x == y
    )


# -- non-tensor values and whole mappings ------------------------------------------------------


def test_values_compare_exactly_by_kind():
    assert diff_value("abc", "abc", EXACT).ok
    row = diff_value("abc", "abd", EXACT, "msg")
    assert (row.kind, row.status, row.a_worst, row.b_worst) == ("value", "fail", "abc", "abd")
    assert diff_value(None, None, EXACT).ok
    assert diff_value(True, True, EXACT).ok
    assert diff_value(3, 3.0, EXACT).status == "dtype"
    assert diff_value(1, True, EXACT).status == "dtype"
    assert diff_value(arr(1.0), 1.0, F32).status == "dtype"
    assert diff_value([1, 2], [1, 2], EXACT).ok
    assert not diff_value([1, 2], [1, 3], EXACT).ok


def test_int_values_report_the_difference():
    row = diff_value(7, 4, EXACT)
    assert (row.status, row.max_abs, row.n) == ("fail", 3, 1)


def test_float_values_use_the_float_rule():
    assert diff_value(0.1, 0.1 + 1e-9, default_tolerance("float")).ok
    assert diff_value(float("nan"), float("nan"), EXACT).ok
    row = diff_value(1.0, 1.5, default_tolerance("float"), "loss")
    assert (row.status, row.kind, row.max_abs, row.dtype_a) == ("fail", "value", 0.5, "float")
    assert row.worst_ulp == 2**51  # 0.5 apart in [1, 2): 2**52 ULP per unit


def test_captured_errors_compare_type_and_message():
    err = CapturedError("ValueError", "bad shape")
    assert diff_value(err, CapturedError("ValueError", "bad shape"), EXACT).ok
    assert not diff_value(err, CapturedError("TypeError", "bad shape"), EXACT).ok
    assert diff_value(err, "bad shape", EXACT).status == "dtype"


def test_diff_values_filters_keys_and_computes_verdict():
    calls = []

    def tol_for(key, dtype):
        calls.append((key, dtype))
        return default_tolerance(dtype)

    a = {"logits": arr([1.0, 2.0]), "grads.w": arr([1.0]), "steps": 3}
    b = {"logits": arr([1.0, 2.5]), "grads.w": arr([1.0]), "steps": 3}
    d = diff_values(a, b, tol_for=tol_for, keys="grads.*", title="t", labels=("x", "y"))
    assert [r.key for r in d.rows] == ["grads.w"] and d.ok and d.worst == 0.0
    assert calls == [("grads.w", "float32")]
    d = diff_values(a, b, tol_for=tol_for, keys=["logits", "steps"])
    assert not d.ok and d.worst == 0.5 and d.failures[0].key == "logits"
    assert d.tol == default_tolerance("float32")  # dominant by element count
    given_tol = Tolerance(1.0, reason="cli")
    assert diff_values(a, b, tol_for=lambda k, t: given_tol, tol=given_tol).ok


def test_rows_equal_the_dataclass_built_rows():
    """diff_arrays fills TensorDiff's __dict__ directly; every kind of row is the same as the
    one TensorDiff(...) builds, no field missing and none extra."""
    from dataclasses import fields

    from harness.diff import TensorDiff

    tol = Tolerance(1e-3)
    pairs = [
        (arr([1.0, np.nan, 3.0]), arr([1.0, 2.0, 3.5])),
        (np.array([2.0]), np.array([2.5])),  # one element: the scalar path
        (np.array([1, 5], np.int64), np.array([1, 7], np.int64)),
        (np.array([True, False]), np.array([True, True])),
        (np.array([1 + 2j]), np.array([1 + 2j])),
        (np.array(["x", "y"]), np.array(["x", "z"])),
        (np.zeros(0, np.float32), np.zeros(0, np.float32)),
        (arr([1.0]), np.array([1.0])),  # dtype
        (arr([1.0, 2.0]), arr([1.0])),  # shape
    ]
    for a, b in pairs:
        row = diff_arrays(a, b, tol, "k")
        rebuilt = TensorDiff(**{f.name: getattr(row, f.name) for f in fields(TensorDiff)})
        assert vars(row) == vars(rebuilt), (a, b)
