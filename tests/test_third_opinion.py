"""The float64 third opinion, on arrays whose answer is known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.opmatrix.opinion import (
    BOTH_WITHIN,
    ENGINE_CLOSER,
    EQUALLY_FAR,
    TORCH_CLOSER,
    opinion_json,
    render_opinion,
    third_opinion,
)
from harness.tolerances import Tolerance

REF = np.array([1.0, -2.0, 0.5], dtype=np.float64)


def f32(values):
    return np.array(values, dtype=np.float32)


def test_torch_closer_when_only_the_engine_is_off():
    op = third_opinion(f32([1.0, -2.0, 0.5]), f32([1.0, -2.0, 0.75]), REF)
    assert op.verdict == TORCH_CLOSER
    assert op.worst_index == (2,)
    assert (op.torch_worst, op.engine_worst, op.reference_worst) == (0.5, 0.75, 0.5)
    assert op.worst_verdict == TORCH_CLOSER
    assert op.torch_error == 0.0 and op.engine_error == 0.25


def test_engine_closer_when_only_torch_is_off():
    op = third_opinion(f32([1.0, -2.5, 0.5]), f32([1.0, -2.0, 0.5]), REF)
    assert op.verdict == ENGINE_CLOSER
    assert op.worst_index == (1,)
    assert op.worst_verdict == ENGINE_CLOSER


def test_both_within_tol_when_each_side_is_a_rounding_of_float64():
    # 1/3 rounded to float32 two ways, one ULP apart: both are within 1e-6 of the float64 value.
    third = np.float32(1 / 3)
    up = np.nextafter(third, np.float32(1))
    op = third_opinion(f32([third]), f32([up]), np.array([1 / 3]))
    assert op.verdict == BOTH_WITHIN
    assert op.worst_verdict == BOTH_WITHIN


def test_the_closer_side_wins_even_when_both_are_outside_tol():
    ref = np.array([10.0])
    op = third_opinion(f32([10.5]), f32([9.0]), ref)
    assert op.verdict == TORCH_CLOSER
    assert op.torch_error == 0.5 and op.engine_error == 1.0


def test_equally_far_when_both_miss_by_the_same_amount():
    op = third_opinion(f32([1.5]), f32([0.5]), np.array([1.0]))
    assert op.verdict == EQUALLY_FAR


def test_nan_is_infinitely_far_from_a_finite_reference():
    op = third_opinion(f32([0.0, 1.0]), f32([np.nan, 1.0]), np.array([0.0, 1.0]))
    assert op.verdict == TORCH_CLOSER
    assert math.isinf(op.engine_error)
    assert op.worst_index == (0,)


def test_nan_matches_a_nan_reference():
    op = third_opinion(f32([np.nan]), f32([0.0]), np.array([np.nan]))
    assert op.verdict == TORCH_CLOSER
    assert op.torch_error == 0.0


def test_an_infinity_of_the_wrong_sign_is_infinitely_far():
    op = third_opinion(f32([np.inf]), f32([-np.inf]), np.array([-np.inf]))
    assert op.verdict == ENGINE_CLOSER


def test_given_tolerance_is_used():
    loose = Tolerance(0.5, reason="test")
    op = third_opinion(f32([1.25]), f32([0.75]), np.array([1.0]), loose)
    assert op.verdict == BOTH_WITHIN


def test_per_tensor_and_worst_element_verdicts_can_differ():
    # The sides differ most at [0], where torch is exact; but at [1] both are off, torch more.
    t = f32([1.0, -3.5, 0.5])
    e = f32([2.0, -3.25, 0.5])
    op = third_opinion(t, e, REF)
    assert op.worst_index == (0,)
    assert op.worst_verdict == TORCH_CLOSER
    assert (op.torch_error, op.engine_error) == (1.5, 1.25)
    assert op.verdict == ENGINE_CLOSER


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shapes differ"):
        third_opinion(f32([1.0]), f32([1.0, 2.0]), np.array([1.0]))


def test_empty_tensors_have_no_worst_element():
    op = third_opinion(f32([]), f32([]), np.array([]))
    assert op.verdict == BOTH_WITHIN and op.worst_index is None


def test_render_and_json():
    op = third_opinion(f32([0.0]), f32([np.nan]), np.array([0.0]))
    text = render_opinion(op)
    assert text.startswith("float64 opinion: torch closer (max err torch 0, engine inf)")
    assert "at [0]: torch=0.0 engine=nan float64=0.0: torch closer" in text
    doc = opinion_json(op)
    assert doc["engine_error"] == "Infinity" and doc["engine_worst"] == "NaN"
    assert doc["verdict"] == TORCH_CLOSER and doc["tol"] == "1e-06"
