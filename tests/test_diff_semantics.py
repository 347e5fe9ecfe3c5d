"""Issue 11 item 9: bools compare exactly, integer distances meet the tolerance exactly.

Every expectation here is stated with Python ints (exact by construction), never taken from
harness.diff itself. Row statuses and kinds are StrEnums with the old string values.
"""

import json

import numpy as np
import pytest

import compare
import harness.diff as diff_module
from harness.diff import RowKind, RowStatus, diff_arrays, diff_value, diff_values
from harness.tolerances import Tolerance, default_tolerance

TWO_53 = 2**53


# -- bools --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tol", [Tolerance(1.0), Tolerance(0.0, rtol=10.0), Tolerance(5.0, ulps=3)], ids=str
)
def test_bool_tensors_compare_exactly_whatever_the_tolerance(tol):
    row = diff_arrays(np.array([True, True]), np.array([False, True]), tol)
    assert (row.status, row.mismatches, row.worst_index) == ("fail", 1, (0,))
    assert diff_arrays(np.array([True, False]), np.array([True, False]), tol).ok


def test_bool_values_compare_exactly_whatever_the_tolerance():
    assert not diff_value(True, False, Tolerance(1.0)).ok
    assert diff_value(False, False, Tolerance(1.0)).ok


def test_cli_atol_1_does_not_make_true_and_false_agree(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"mask": [True, False, True]}))
    b.write_text(json.dumps({"mask": [True, True, True]}))
    code = compare.main([str(a), str(b), "--atol", "1"])
    out, _ = capsys.readouterr()
    assert code == 1, out
    assert "mask" in out and "FAIL" in out


# -- integers: exact distances against the exact tolerance ---------------------------------------


def test_int_distance_is_not_rounded_to_float64_before_the_atol_test():
    # 2**53 + 1 rounds to 2**53 in float64; exactly it is one more than atol
    a, b = np.array([TWO_53 + 1], np.int64), np.array([0], np.int64)
    row = diff_arrays(a, b, Tolerance(float(TWO_53)))
    assert (row.status, row.mismatches, row.max_abs) == ("fail", 1, TWO_53 + 1)
    assert diff_arrays(np.array([TWO_53], np.int64), b, Tolerance(float(TWO_53))).ok


def test_int_distance_against_rtol_is_exact():
    # |b| = 2**54: the limit 0.5 * |b| is exactly 2**53, and the distance is 2**53 + 1
    b = np.array([2**54, 5], np.int64)
    a = np.array([2**54 + TWO_53 + 1, 5], np.int64)
    row = diff_arrays(a, b, Tolerance(0.0, rtol=0.5))
    assert (row.status, row.mismatches, row.worst_index) == ("fail", 1, (0,))
    # |b| = 2**54 + 2 rounds to 2**54 in float64, but the exact limit is 2**53 + 1: agrees
    b2 = np.array([2**54 + 2], np.int64)
    a2 = np.array([2**54 + 2 + TWO_53 + 1], np.int64)
    assert diff_arrays(a2, b2, Tolerance(0.0, rtol=0.5)).ok
    assert not diff_arrays(a2 + 1, b2, Tolerance(0.0, rtol=0.5)).ok


def test_uint64_and_int64_extremes_against_atol():
    big = np.array([2**64 - 1], np.uint64)
    zero = np.array([0], np.uint64)
    assert not diff_arrays(big, zero, Tolerance(float(2**63))).ok
    assert diff_arrays(big, zero, Tolerance(float(2**64))).ok  # 2**64 - 1 <= 2**64
    info = np.iinfo(np.int64)
    a, b = np.array([info.max], np.int64), np.array([info.min], np.int64)
    row = diff_arrays(a, b, Tolerance(1e300))
    assert row.ok and row.max_abs == 2**64 - 1


def test_many_int_elements_near_the_limit_are_each_decided_exactly():
    # |b| = 2**56 + 8 is 2**56 in float64, so a float64 limit would be 3 * 2**54; the exact
    # limit is 0.75 * (2**56 + 8) = 3 * 2**54 + 6, and distances there are 8 apart in float64
    b = np.full(1000, 2**56 + 8, np.int64)
    offsets = np.arange(-500, 500, dtype=np.int64)
    a = b + 3 * 2**54 + 6 + offsets
    row = diff_arrays(a, b, Tolerance(0.0, rtol=0.75))
    assert row.mismatches == int(np.count_nonzero(offsets > 0)) == 499


def test_int_values_meet_rtol_exactly():
    b = 2**54 + 2
    assert diff_value(b + TWO_53 + 1, b, Tolerance(0.0, rtol=0.5)).ok
    assert not diff_value(b + TWO_53 + 2, b, Tolerance(0.0, rtol=0.5)).ok
    assert not diff_value(TWO_53 + 1, 0, Tolerance(float(TWO_53))).ok


# -- statuses and kinds as StrEnums ---------------------------------------------------------------


def test_statuses_and_kinds_are_str_enums_with_the_old_values():
    assert [s.value for s in RowStatus] == ["ok", "fail", "missing", "dtype", "shape"]
    assert list(diff_module.STATUSES) == ["ok", "fail", "missing", "dtype", "shape"]
    assert all(type(s) is str for s in diff_module.STATUSES)
    assert [k.value for k in RowKind] == ["tensor", "value"]
    d = diff_values(
        {"x": np.ones(2, np.float32), "y": 1, "z": np.ones(1)},
        {"x": np.zeros(2, np.float32), "y": 1, "w": 2},
        tol_for=lambda key, dtype: default_tolerance(dtype),
    )
    rows = {r.key: r for r in d.rows}
    assert rows["x"].status is RowStatus.FAIL and rows["x"].status == "fail"
    assert rows["x"].kind is RowKind.TENSOR and rows["y"].kind is RowKind.VALUE
    assert rows["z"].status is RowStatus.MISSING and rows["w"].missing_from == "a"
    assert json.dumps([rows["x"].status, rows["y"].kind]) == '["fail", "value"]'
    assert f"{rows['y'].status}" == "ok" and str(rows["x"].kind) == "tensor"


def test_diff_module_keeps_its_exports():
    for name in ("diff_arrays", "diff_value", "diff_values", "TensorDiff", "Diff", "STATUSES",
                 "ordered_int", "ulp_distance", "CHUNK", "select_keys", "value_dtype"):  # fmt: skip
        assert hasattr(diff_module, name), name
