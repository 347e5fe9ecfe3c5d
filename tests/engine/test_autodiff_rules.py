"""The primitive registry: every op has a rule or is declared untracked, every rule returns one
gradient per input (checked at registration and when it runs), forwards save named records."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.engine import (
    PRIMITIVES,
    Device,
    MissingRuleError,
    RuleArityError,
    Tensor,
    unbroadcast,
)
from harness.engine.ops import base, checks, differentiable, rule_for
from harness.engine.ops.arrays import zero_where
from harness.engine.ops.base import Array, Grad, Tracked, rule_arity
from harness.opmatrix.cells import compile_pair, make_inputs
from harness.opmatrix.registry import function_of

AD = Device.flex().autodiff()
CHECKS = checks()
DIFFERENTIABLE = [op for op in PRIMITIVES.values() if op.backward is not None]


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
def test_every_op_has_a_rule_or_is_declared_non_differentiable(check):
    op = PRIMITIVES[check.op]
    # A Tensor method, or a function of burn's tensor::activation / tensor::module.
    assert callable(getattr(Tensor, check.method, None)) or function_of(check) is not None
    assert (op.backward is not None) != bool(op.untracked)


def test_every_rule_is_used_by_some_op():
    assert {op.name for op in DIFFERENTIABLE} <= {c.op for c in CHECKS}


def test_rules_are_named_after_their_op():
    for op in DIFFERENTIABLE:
        assert op.backward.__name__ in (
            f"{op.name}_backward",
            "identity_backward",
            "pow_scalar_backward",
            "zeros_backward",  # round, floor, ceil, trunc: burn's float_zeros
            "prod_backward",  # prod_dim: burn's ProdDim is Prod's rule on a kept dim
        )


def test_non_differentiable_inputs_belong_to_differentiable_ops():
    # Indices and masks are parameters of the forward, not graph inputs: no gradient slot.
    assert PRIMITIVES["gather"].inputs == ("x",)
    assert "indices" in PRIMITIVES["gather"].params
    assert "mask" in PRIMITIVES["mask_fill"].params
    assert PRIMITIVES["mask_where"].inputs == ("a", "b")
    assert "mask" in PRIMITIVES["mask_where"].params


def test_a_missing_rule_raises_naming_the_op():
    with pytest.raises(MissingRuleError) as err:
        rule_for("logcumsumexp")  # not an engine op (cumsum and cumprod are)
    assert str(err.value) == "no backward rule registered for op 'logcumsumexp'"
    # cast is differentiable since issue 17 (burn's float_cast); argmax is registered untracked.
    with pytest.raises(MissingRuleError, match="'argmax'"):
        rule_for("argmax")  # registered, but untracked


# ---- arity --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=[op.name for op in DIFFERENTIABLE])
def test_every_registered_rule_has_the_arity_of_its_forward(op):
    arity = rule_arity(op.name, op.backward)
    if op.variadic:
        assert arity is None
    else:
        assert arity == len(op.inputs) >= 1


def _tracked_output(check):
    """Run a check's engine expression on tracked float inputs (its first shape case)."""
    arrays = make_inputs(check, check.shapes[0], "random", "float64", np.random.default_rng(0))
    tensors = {}
    for inp in check.inputs:
        t = Tensor.from_numpy(arrays[inp.name], AD)
        tensors[inp.name] = t.require_grad() if inp.kind == "float" else t
    out = compile_pair(check, "float64").engine(**tensors)
    return out[0] if isinstance(out, tuple) else out


_OWN_CHECKS = [c for c in CHECKS if PRIMITIVES[c.op].backward is not None]
# burn's powi_scalar shortcuts build no node: x^0 is a constant ones, x^1 the input itself.
_NODELESS = {"powi_scalar[0]", "powi_scalar[1]"}


@pytest.mark.parametrize("check", _OWN_CHECKS, ids=[c.name for c in _OWN_CHECKS])
def test_the_node_of_every_op_has_a_parent_per_input_and_a_named_record(check):
    out = _tracked_output(check)
    node = out._node
    if check.name in _NODELESS:
        assert not node.parents  # a constant or the input leaf: nothing to differentiate
        return
    op = PRIMITIVES[check.op]
    if node.rule is not op.backward:  # a composite: its last primitive built the node
        op = next(p for p in PRIMITIVES.values() if p.backward is node.rule)
    n_inputs = sum(i.kind == "float" for i in check.inputs) if op.variadic else len(op.inputs)
    assert len(node.parents) == n_inputs
    saved = node.saved
    assert saved is None or (dataclasses.is_dataclass(saved) and hasattr(saved, "__slots__"))
    assert not isinstance(saved, tuple)
    grads = node.rule(saved, np.ones_like(out._data), node.parents)
    assert len(grads) == n_inputs


def _two_inputs(a: Array, b: Array, /) -> tuple[Array, None]:
    return a + b, None


def _one_gradient(s: None, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g,)


def _unannotated(s, g, tracked):
    return (g, g)


def test_registering_a_rule_with_the_wrong_arity_raises_at_registration(monkeypatch):
    monkeypatch.setattr(base, "PRIMITIVES", {})
    with pytest.raises(RuleArityError) as err:
        differentiable("two", _two_inputs, _one_gradient)
    assert str(err.value) == (
        "two: rule _one_gradient returns 1 gradient(s), but _two_inputs has 2 input(s) (a, b)"
    )
    with pytest.raises(RuleArityError, match="must be annotated -> tuple"):
        differentiable("two", _two_inputs, _unannotated)
    assert base.PRIMITIVES == {}  # nothing half-registered


def test_a_forward_without_a_tensor_input_is_refused(monkeypatch):
    monkeypatch.setattr(base, "PRIMITIVES", {})

    def no_inputs(a, b):
        return a, None

    with pytest.raises(RuleArityError, match="has no tensor input"):
        differentiable("none", no_inputs, _one_gradient)


def test_a_rule_returning_the_wrong_number_of_gradients_raises_when_it_runs(monkeypatch):
    monkeypatch.setattr(PRIMITIVES["sum"], "backward", _unannotated)
    y = Tensor.from_floats([1.0], AD).require_grad().exp().sum()
    with pytest.raises(RuleArityError) as err:
        y.backward()
    assert str(err.value) == "rule _unannotated returned 2 gradient(s) for 1 input(s)"


# ---- array helpers ------------------------------------------------------------------------


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
    """Replacing a primitive's rule changes what ops do: there is no second copy of it."""
    monkeypatch.setattr(PRIMITIVES["exp"], "backward", lambda s, g, tracked: (-g * s.out,))
    x = Tensor.from_floats([0.0], AD).require_grad()
    assert x.grad(x.exp().backward()).tolist() == [-1.0]
