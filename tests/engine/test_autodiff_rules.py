"""The backward-rule table: every op has a rule or is declared non-differentiable."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import BACKWARD_RULES, NON_DIFFERENTIABLE, MissingRuleError, Tensor, unbroadcast
from harness.engine.rules import NON_DIFFERENTIABLE_INPUTS, rule_for, zero_where
from harness.engine.tensor import TENSOR_OPS


@pytest.mark.parametrize(("method", "op"), sorted(TENSOR_OPS.items()))
def test_every_op_has_a_rule_or_is_declared_non_differentiable(method, op):
    assert callable(getattr(Tensor, method))
    assert (op in BACKWARD_RULES) != (op in NON_DIFFERENTIABLE)


def test_every_rule_is_used_by_some_op():
    assert set(BACKWARD_RULES) <= set(TENSOR_OPS.values())


def test_rules_are_named_after_their_op():
    for op, rule in BACKWARD_RULES.items():
        assert rule.__name__ in (f"{op}_backward", "identity_backward", "pow_scalar_backward")


def test_non_differentiable_inputs_belong_to_differentiable_ops():
    assert NON_DIFFERENTIABLE_INPUTS["gather"] == ("indices",)
    assert set(NON_DIFFERENTIABLE_INPUTS) <= set(BACKWARD_RULES)


def test_a_missing_rule_raises_naming_the_op():
    with pytest.raises(MissingRuleError) as err:
        rule_for("cumsum")
    assert str(err.value) == "no backward rule registered for op 'cumsum'"


def test_unbroadcast_returns_the_same_array_when_shapes_match():
    g = np.ones((3, 2))
    assert unbroadcast(g, (3, 2)) is g


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((2,), [9.0, 12.0]),
        ((1, 2), [[9.0, 12.0]]),
        ((3, 1), [[3.0], [7.0], [11.0]]),
        ((), 21.0),
    ],
)
def test_unbroadcast_sums_over_broadcast_dims(shape, expected):
    g = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = unbroadcast(g, shape)
    assert out.shape == shape
    assert out.tolist() == expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [6, 8192], ids=["small", "large"])
def test_zero_where_is_bit_exact_like_mask_fill(dtype, size):
    rng = np.random.default_rng(0)
    g = rng.standard_normal(size).astype(dtype)
    g[:4] = [np.inf, -np.inf, np.nan, -0.0]
    mask = rng.random(size) < 0.5
    mask[:4] = [True, True, True, False]
    out = zero_where(mask, g)
    assert out.dtype == dtype
    assert out[:3].tolist() == [0.0, 0.0, 0.0]
    assert not np.signbit(out[mask]).any()
    assert np.signbit(out[3])
    assert np.array_equal(out[~mask], g[~mask], equal_nan=True)
    assert np.array_equal(out[mask], np.zeros(mask.sum(), dtype))


def test_ops_read_the_one_rule_table_at_call_time(monkeypatch):
    """Patching BACKWARD_RULES changes what ops do: there is no second copy of the table."""
    from harness.engine import BACKWARD_RULES, Device, Tensor

    monkeypatch.setitem(BACKWARD_RULES, "exp", lambda node, g: (-g * node.saved,))
    x = Tensor.from_floats([0.0], Device.flex().autodiff()).require_grad()
    assert x.grad(x.exp().backward()).tolist() == [-1.0]
