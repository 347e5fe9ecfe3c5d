"""The tolerance table, labels and per-key overrides."""

import pytest

from harness.tolerances import (
    DEFAULTS,
    TABLE_VERSION,
    Tolerance,
    check_overrides,
    default_tolerance,
    resolve,
)


def test_table_defaults_match_the_study():
    assert isinstance(TABLE_VERSION, int)
    assert default_tolerance("float32") == Tolerance(1e-6, reason=DEFAULTS["float32"].reason)
    assert default_tolerance("float32").atol == 1e-6
    assert default_tolerance("float64").atol == 1e-12
    for name in ("int64", "int32", "uint8", "bool", "str", "None", "error", "int"):
        assert default_tolerance(name).is_exact, name


def test_unknown_dtype_compares_exactly():
    assert default_tolerance("complex128").is_exact
    assert default_tolerance(None).is_exact


@pytest.mark.parametrize(
    ("tol", "label"),
    [
        (Tolerance(1e-6), "1e-06"),
        (Tolerance.exact(), "exact"),
        (Tolerance(0.0, ulps=4), "4 ulp"),
        (Tolerance(1e-6, rtol=1e-5), "1e-06+rtol 1e-05"),
        (Tolerance(1e-6, ulps=2), "1e-06 or 2 ulp"),
        (Tolerance(0.0, rtol=0.01), "0+rtol 0.01"),
    ],
)
def test_describe(tol, label):
    assert tol.describe() == label


@pytest.mark.parametrize(
    "kwargs",
    [
        {"atol": -1.0},
        {"atol": float("nan")},
        {"atol": float("inf")},
        {"atol": 0.0, "rtol": -0.1},
        {"atol": 0.0, "ulps": -1},
        {"atol": 0.0, "ulps": 1.5},
        {"atol": "1e-6"},
    ],
)
def test_invalid_tolerances_are_refused(kwargs):
    with pytest.raises(ValueError, match="Tolerance"):
        Tolerance(**kwargs)


def test_override_needs_a_reason():
    with pytest.raises(ValueError, match=r"'grads\.\*' needs a reason"):
        resolve("grads.w", "float32", {"grads.*": Tolerance(1e-4)})
    with pytest.raises(ValueError, match="must be a Tolerance"):
        check_overrides({"x": 1e-4})


def test_resolve_first_matching_glob_wins_else_dtype_default():
    loose = Tolerance(1e-4, reason="accumulated over 10 steps")
    looser = Tolerance(1e-3, reason="second order")
    overrides = {"grads.*": loose, "grads.fc1.*": looser}
    assert resolve("grads.fc1.weight", "float32", overrides) is loose
    assert resolve("logits", "float32", overrides) == default_tolerance("float32")
    assert resolve("steps", "int64", overrides).is_exact
    assert resolve("x", "float64", None) == default_tolerance("float64")
