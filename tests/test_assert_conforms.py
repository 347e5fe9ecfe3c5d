"""harness.testing.assert_conforms: any value a case side returns, every failing key in one
AssertionError whose first line names the worst element, and the CLI's table below it."""

import json

import numpy as np
import pytest
import torch

import compare
from harness.diff import Diff
from harness.engine import Device, Tensor
from harness.testing import assert_conforms


def failure(*args, **kwargs) -> list[str]:
    with pytest.raises(AssertionError) as raised:
        assert_conforms(*args, **kwargs)
    return str(raised.value).splitlines()


def test_conforming_values_of_every_kind_return_the_comparison():
    device = Device.flex()
    actual = {
        "torch": torch.tensor([1.0, 2.0]),
        "engine": Tensor.from_floats([3.0], device),
        "numpy": np.arange(3, dtype=np.int64),
        "number": 0.5,
        "count": 3,
        "flag": True,
        "nested": {"grads": {"w": torch.ones(2, 2)}},
    }
    expected = {**actual, "torch": np.array([1.0, 2.0], np.float32)}
    diff = assert_conforms(actual, expected)
    assert isinstance(diff, Diff) and diff.ok
    assert [row.key for row in diff.rows] == [
        "torch", "engine", "numpy", "number", "count", "flag", "nested.grads.w"
    ]  # fmt: skip


def test_every_failing_key_is_listed_and_the_first_line_names_the_worst_element():
    actual = {"w": torch.tensor([1.0, 2.0, 3.0]), "b": torch.tensor([0.5]), "n": 3, "ok": 1.0}
    expected = {"w": torch.tensor([1.0, 2.5, 3.01]), "b": torch.tensor([0.25]), "n": 4, "ok": 1.0}
    lines = failure(actual, expected)
    # An int compares exactly: any difference is infinitely beyond its tolerance, first.
    assert lines[0] == "n: actual=3 expected=4 |diff|=1 (tol exact); 3 of 4 keys fail"
    # 2.0 vs 2.5: 0.5 is 5e5 times the 1e-6 tolerance and 2**21 float32 steps in [2, 4).
    floats = failure({"w": actual["w"], "b": actual["b"]}, {"w": expected["w"], "b": expected["b"]})
    assert floats[0] == (
        "w[1]: actual=2.0 expected=2.5 |diff|=5.00e-01 2097152 ulp (5e+05x tol 1e-06); "
        "2 of 3 elements and 2 of 2 keys fail"
    )
    rows = [line.split()[0] for line in lines[2:] if not line.startswith(" ")]
    assert rows[:4] == ["w", "b", "n", "ok"]
    assert "    at [2]: actual=3.0 expected=3.01 |diff|=1.00e-02 41943 ulp (1e+04x tol)" in lines
    assert lines[-1] == "worst=1.00e+00 tol=1e-06 FAIL (3 of 4 keys)"  # |3 - 4| of n


def test_the_message_is_the_cli_table(tmp_path, capsys):
    """Same values through ``compare.py A B``: the table below the first line is identical."""
    a = {"x": np.array([1.0, 2.0, 4.0], np.float32)}
    b = {"x": np.array([1.0, 2.0, 4.5], np.float32)}
    for name, values in (("actual", a), ("expected", b)):
        doc = {"x": {"dtype": "float32", "shape": [3], "data": values["x"].tolist()}}
        (tmp_path / f"{name}.json").write_text(json.dumps({"format": 1, "case": "", "side": name,
                                                           "env": {}, "values": doc}))  # fmt: skip
    assert compare.main([str(tmp_path / "actual.json"), str(tmp_path / "expected.json")]) == 1
    table = capsys.readouterr().out.rstrip("\n").splitlines()
    assert failure(a, b)[1:] == table


def test_single_values_shapes_and_dtypes():
    assert failure(torch.zeros(2), torch.zeros(3))[0] == (
        "value: shape: actual=[2] expected=[3]; 1 of 1 keys fail"
    )
    assert failure(np.zeros(2, np.float32), np.zeros(2))[0] == (
        "value: dtype: actual=float32 expected=float64; 1 of 1 keys fail"
    )
    assert failure({"a": 1}, {"b": 1})[0] == "a: missing in expected; 2 of 2 keys fail"
    assert (
        failure(True, False)[0] == "value: actual=True expected=False (not equal); 1 of 1 keys fail"
    )
    assert assert_conforms(torch.tensor(1.5), np.float32(1.5)).ok


def test_tolerance_options_keys_labels_and_msg():
    a, b = {"w": np.float32([1.0, 2.0]), "x": 1.0}, {"w": np.float32([1.0, 2.001]), "x": 9.0}
    assert assert_conforms(a, b, atol=1e-2, keys="w").ok
    assert assert_conforms(a, b, rtol=1e-3, keys=["w"]).ok  # 0.001 <= 1e-3 * 2.001
    assert assert_conforms({"w": np.float32([1.0])}, {"w": np.float32([1.0000001])}, ulps=1).ok
    lines = failure(a, b, keys="w", labels=("engine", "torch"), msg="after step 3")
    assert lines[0].startswith("after step 3: w[1]: engine=2.0 torch=2.001 |diff|=1.00e-03")
    assert lines[1] == "== engine vs torch"
    with pytest.raises(ValueError, match=r"keys 'nope\*' match no key of actual or expected"):
        assert_conforms(a, b, keys="nope*")


def test_five_mismatched_elements_by_default_and_all_on_request():
    a, b = np.zeros(9, np.float32), np.ones(9, np.float32)
    lines = failure(a, b)
    assert sum(line.startswith("    at [") for line in lines) == 5
    assert "    ... and 4 more mismatched (-v or --all-mismatches shows every one)" in lines
    assert sum(line.startswith("    at [") for line in failure(a, b, limit=None)) == 9


def test_unsupported_values_name_the_side_and_key():
    with pytest.raises(TypeError, match=r"^actual: w: "):
        assert_conforms({"w": torch.ones(2, dtype=torch.complex64)}, {"w": np.ones(2)})
    with pytest.raises(TypeError, match=r"^expected: "):
        assert_conforms({"w": 1}, {"w": object()})
