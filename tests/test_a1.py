"""The A1 builder (shared/a1-model.md): values equal the float64-then-round formulas, both
frameworks get bit-identical values, and the float32-arithmetic variant differs by a few ULP."""

from __future__ import annotations

import numpy as np
import pytest

from harness.a1 import A1_HALVES, A1_LR, PARAM_NAMES, a1_arrays, a1_engine, a1_torch
from harness.diff import ulp_distance
from harness.engine import Device

AD = Device.flex().autodiff()


def rounded(value: float) -> np.float32:
    return np.float32(value)  # float64 Python value rounded to float32 once


def test_values_equal_the_float64_then_round_formulas():
    a = a1_arrays()
    for r in range(4):
        for c in range(4):
            assert a["x"][r, c] == rounded(0.1 * (4 * r + c) - 0.5)
    for o in range(8):
        assert a["fc1.bias"][o] == rounded(0.01 * o)
        for i in range(4):
            assert a["fc1.weight"][o, i] == rounded(0.05 * ((3 * o + 5 * i) % 11) - 0.25)
    for o in range(3):
        assert a["fc2.bias"][o] == rounded(-0.02 * o)
        for i in range(8):
            assert a["fc2.weight"][o, i] == rounded(0.04 * ((7 * o + 3 * i) % 13) - 0.24)
    assert a["y"].tolist() == [0, 1, 2, 2] and a["y"].dtype == np.int64


def test_shapes_dtypes_and_torch_layout():
    a = a1_arrays()
    shapes = {k: v.shape for k, v in a.items()}
    assert shapes == {
        "x": (4, 4),
        "y": (4,),
        "fc1.weight": (8, 4),
        "fc1.bias": (8,),
        "fc2.weight": (3, 8),
        "fc2.bias": (3,),
    }
    assert all(a[k].dtype == np.float32 for k in (*PARAM_NAMES, "x"))


def test_fc2_bias_0_is_negative_zero():
    bias = a1_arrays()["fc2.bias"]
    assert bias[0] == 0.0 and np.signbit(bias[0])


def test_engine_and_torch_builders_hold_bit_identical_values():
    arrays = a1_arrays()
    model, x, y = a1_engine(AD)
    tmodel, tx, ty = a1_torch()
    assert [path for path, _ in model.params()] == list(PARAM_NAMES)
    for path, param in model.params():
        value = param.val().numpy()
        engine_torch_layout = value.T if value.ndim == 2 else value
        assert engine_torch_layout.tobytes() == arrays[path].tobytes()
        assert tmodel.get_parameter(path).detach().numpy().tobytes() == arrays[path].tobytes()
        assert param.val().is_require_grad()
    assert model.fc1.weight.val().shape == (4, 8)  # engine layout [in, out]
    assert x.numpy().tobytes() == tx.numpy().tobytes() == arrays["x"].tobytes()
    assert y.numpy().tolist() == ty.tolist() == [0, 1, 2, 2]


def test_forward_matches_torch():
    model, x, _ = a1_engine(AD)
    tmodel, tx, _ = a1_torch()
    np.testing.assert_allclose(model.forward(x).numpy(), tmodel(tx).detach().numpy(), atol=1e-7)


def test_float32_arithmetic_variant_differs_by_a_few_ulp_in_several_positions():
    exact = a1_arrays()
    f32 = a1_arrays("float32")
    assert f32["x"][1, 0] == np.float32(0.1) * np.float32(4) - np.float32(0.5)
    ulps = np.array(
        [ulp_distance(a, b, "float32") for a, b in zip(f32["x"].flat, exact["x"].flat, strict=True)]
    )
    assert 1 <= ulps.max() <= 3
    assert np.count_nonzero(ulps) >= 2
    for key in ("fc1.weight", "fc2.weight", "y"):
        assert np.array_equal(f32[key], exact[key])
    assert np.signbit(f32["fc2.bias"][0])


def test_constants_and_bad_rounding():
    assert A1_LR == 0.1
    assert A1_HALVES == ((0, 2), (2, 4))
    with pytest.raises(ValueError):
        a1_arrays("float16")
