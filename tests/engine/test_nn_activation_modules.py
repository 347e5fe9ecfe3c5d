"""The parameter-only activation modules and RRelu of burn-nn (crates/burn-nn/src/activation/
{celu,elu,hard_shrink,hardtanh,shrink,soft_shrink,threshold,thresholded_relu,rrelu}.rs, burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn's defaults, burn's own module tests
transcribed (names cited), forward and backward against torch.nn (float32 and float64) on
inputs away from the kinks (where the documented gradient differences live), and RRelu's
seeded training draws: bounds, per-element slopes, their gradient and their distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, assert_burn_approx, leaf, tensor

from harness.engine import seed
from harness.engine.nn import (
    ActivationConfig,
    CeluConfig,
    EluConfig,
    HardShrinkConfig,
    HardtanhConfig,
    RReluConfig,
    ShrinkConfig,
    SoftShrinkConfig,
    ThresholdConfig,
    ThresholdedReluConfig,
)


def test_burn_defaults():
    # each file's `#[config(default = ...)]`
    assert CeluConfig().alpha == 1.0 and EluConfig().alpha == 1.0
    assert ThresholdedReluConfig().alpha == 1.0
    assert HardShrinkConfig().lambd == 0.5 and SoftShrinkConfig().lambd == 0.5
    assert (ShrinkConfig().lambd, ShrinkConfig().bias) == (0.5, 0.5)
    assert (HardtanhConfig().min_val, HardtanhConfig().max_val) == (-1.0, 1.0)
    with pytest.raises(TypeError):
        ThresholdConfig()  # burn's fields have no defaults: `ThresholdConfig::new(t, v)`
    m = ThresholdConfig(1.0, 20.0).init()
    assert (m.threshold, m.value) == (1.0, 20.0)


def _run(module, rows):
    return module.forward(tensor(rows, device=AD.inner())).numpy()


def test_burn_celu_forward_and_with_alpha():
    # celu.rs test_celu_forward, test_celu_with_alpha (Tolerance::default())
    out = _run(CeluConfig().init(), [[0.5, -0.5, -1.0]])
    assert_burn_approx(out, [[0.5, -0.393469, -0.632121]])
    out = _run(CeluConfig().with_alpha(2.0).init(), [[0.0, -2.0]])
    assert_burn_approx(out, [[0.0, -1.264241]])


def test_burn_elu_forward():
    # elu.rs test_elu_forward
    assert_burn_approx(_run(EluConfig().init(), [[0.4410, -0.2507]]), [[0.4410, -0.22186]])


def _exact(actual, expected):
    """burn's `assert_eq` against `TensorData::from([[0.0_f32, ...]])`: float32 literals."""
    np.testing.assert_array_equal(actual, np.asarray(expected, np.float32))


def test_burn_shrinks_forward_exact():
    # hard_shrink.rs, soft_shrink.rs, shrink.rs tests (assert_eq: exact)
    x = [[0.5, -0.5, -1.0], [8.0, 0.3, 0.0]]
    _exact(_run(HardShrinkConfig().init(), x), [[0.0, 0.0, -1.0], [8.0, 0.0, 0.0]])
    x2 = [[0.1, -0.1, -0.3], [0.5, 0.1, 0.0]]
    _exact(
        _run(HardShrinkConfig().with_lambda(0.2).init(), x2), [[0.0, 0.0, -0.3], [0.5, 0.0, 0.0]]
    )
    for cfg in (SoftShrinkConfig(), ShrinkConfig()):
        _exact(_run(cfg.init(), x), [[0.0, 0.0, -0.5], [7.5, 0.0, 0.0]])
    x3 = [[0.125, -0.125, -0.5], [0.75, 0.1, 0.0]]
    _exact(
        _run(SoftShrinkConfig().with_lambda(0.25).init(), x3),
        [[0.0, 0.0, -0.25], [0.5, 0.0, 0.0]],
    )
    shrink = ShrinkConfig().with_lambda(0.25).with_bias(0.125).init()
    _exact(_run(shrink, x3), [[0.0, 0.0, -0.375], [0.625, 0.0, 0.0]])


def test_burn_thresholded_relu_forward():
    # thresholded_relu.rs test_thresholded_relu_forward
    out = _run(ThresholdedReluConfig().init(), [[0.5, 1.5, -0.2]])
    np.testing.assert_array_equal(out, [[0.0, 1.5, 0.0]])


def _shrink_torch(x, lambd, bias):
    return torch.where(x.abs() > lambd, x - torch.sign(x) * bias, torch.zeros_like(x))


MODULES = {
    # alpha a power of two: celu's float64 gradient carries div_scalar's float32 rounding of
    # 1 / alpha otherwise (harness.engine.activation.celu, measured 5e-8 relative at 0.7)
    "celu": (CeluConfig(alpha=0.5), lambda: torch.nn.CELU(alpha=0.5)),
    "elu": (EluConfig(alpha=1.3), lambda: torch.nn.ELU(alpha=1.3)),
    "hardtanh": (HardtanhConfig(-0.6, 0.9), lambda: torch.nn.Hardtanh(-0.6, 0.9)),
    "hard_shrink": (HardShrinkConfig(0.4), lambda: torch.nn.Hardshrink(0.4)),
    "soft_shrink": (SoftShrinkConfig(0.4), lambda: torch.nn.Softshrink(0.4)),
    "shrink": (ShrinkConfig(0.4, 0.25), lambda: lambda x: _shrink_torch(x, 0.4, 0.25)),
    "threshold": (ThresholdConfig(0.2, -3.0), lambda: torch.nn.Threshold(0.2, -3.0)),
    "thresholded_relu": (ThresholdedReluConfig(0.3), lambda: lambda x: x * (x > 0.3)),
}


def _away_from_kinks(dtype):
    """Values in [-2, 2], none within 0.05 of a kink (0, +-0.2, +-0.3, +-0.4, -0.6, 0.9):
    at a kink the gradients differ as documented in harness.engine.activation."""
    x = np.random.default_rng(28).uniform(-2.0, 2.0, (3, 4, 5))
    kinks = np.array([0.0, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4, -0.6, 0.9])
    near = np.abs(x[..., None] - kinks).min(axis=-1) < 0.05
    return np.where(near, x + 0.11, x).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_forward_and_backward_match_torch(name, dtype):
    config, torch_module = MODULES[name]
    x = _away_from_kinks(dtype)
    cot = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t = torch_module()(xt)
    (out_t * torch.tensor(cot)).sum().backward()
    xe = leaf(x, dtype)
    out_e = config.init().forward(xe)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **TOL[dtype])


def test_modules_hold_no_params():
    for config, _ in MODULES.values():
        assert list(config.init().params()) == []


# ---- RRelu (rrelu.rs) ---------------------------------------------------------------------


def test_burn_rrelu_eval_matches_leaky_relu_midpoint():
    # rrelu.rs eval_matches_leaky_relu_midpoint (a plain device: deterministic)
    model = RReluConfig().with_lower(0.1).with_upper(0.3).init()
    out = _run(model, [[-2.0, -1.0, 0.0], [0.5, 1.0, 2.0]])
    assert_burn_approx(out, [[-0.4, -0.2, 0.0], [0.5, 1.0, 2.0]])


def test_burn_rrelu_defaults_and_rejects_lower_above_upper():
    # rrelu.rs: `default = "0.125"`, `"1.0 / 3.0"`; rejects_lower_above_upper
    assert (RReluConfig().lower, RReluConfig().upper) == (0.125, 1.0 / 3.0)
    with pytest.raises(ValueError, match=r"^RRelu: lower bound \(0.5\) must be <= upper bound"):
        RReluConfig(0.5, 0.2).init()


def test_rrelu_eval_matches_torch_eval():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype("float32")
    ours = _run(RReluConfig().init(), x)
    theirs = torch.nn.RReLU().eval()(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rrelu_training_slopes_in_bounds_with_their_gradient(dtype):
    """burn's training_scales_negatives_randomly, made exact: on the autodiff device each
    negative element is scaled by its own slope in [lower, upper), positives pass, and the
    gradient is that slope (negatives) or 1."""
    seed(28)
    x = np.random.default_rng(1).uniform(-2.0, 2.0, (50, 40)).astype(dtype)
    x[x == 0] = 1.0
    xe = leaf(x, dtype)
    out = RReluConfig(0.1, 0.3).init().forward(xe)
    grad = xe.grad(out.sum().backward()).numpy()
    y = out.numpy()
    neg = x < 0
    np.testing.assert_array_equal(y[~neg], x[~neg])
    np.testing.assert_array_equal(grad[~neg], 1.0)
    slope = y[neg] / x[neg]
    assert slope.min() >= 0.1 * (1 - 1e-6) and slope.max() < 0.3 * (1 + 1e-6)
    np.testing.assert_allclose(grad[neg], slope, rtol=1e-6 if dtype == "float32" else 1e-14)
    # ~1000 draws of Uniform[0.1, 0.3): sd 0.2 / sqrt(12) ~ 0.058, standard error ~ 0.0018;
    # 5 standard errors around the midpoint and a spread near the uniform's
    se = 0.2 / np.sqrt(12) / np.sqrt(neg.sum())
    assert abs(slope.mean() - 0.2) < 5 * se
    assert abs(slope.std() - 0.2 / np.sqrt(12)) < 0.01
    assert len(np.unique(slope)) > 0.9 * neg.sum()  # per-element draws, not one slope


def test_rrelu_training_is_seeded():
    x = -np.arange(1.0, 7.0).reshape(2, 3).astype("float32")
    model = RReluConfig().init()
    runs = []
    for _ in range(2):
        seed(5)
        runs.append(model.forward(tensor(x)).numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], x)  # burn's training_scales_negatives_randomly


# ---- ActivationConfig variants (activation_wrapper.rs) ------------------------------------


VARIANTS = {
    "Elu": (EluConfig(1.3), "elu"),
    "Celu": (CeluConfig(0.5), "celu"),
    "HardShrink": (HardShrinkConfig(0.4), "hard_shrink"),
    "SoftShrink": (SoftShrinkConfig(0.4), "soft_shrink"),
    "Shrink": (ShrinkConfig(0.4, 0.25), "shrink"),
    "ThresholdedRelu": (ThresholdedReluConfig(0.3), "thresholded_relu"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_activation_config_variants_forward_their_module(variant):
    """burn's `ActivationConfig::Elu(EluConfig)` ... `init` builds `conf.init()`: the wrapper
    gives the module's values, which match torch (MODULES above)."""
    config, name = VARIANTS[variant]
    x = _away_from_kinks("float32")
    wrapped = getattr(ActivationConfig, variant)(config).init()
    np.testing.assert_array_equal(_run(wrapped, x), _run(config.init(), x))
    out_t = MODULES[name][1]()(torch.tensor(x))
    np.testing.assert_allclose(_run(wrapped, x), out_t.numpy(), **TOL["float32"])


def test_activation_config_payload_free_variants_match_torch():
    x = _away_from_kinks("float64")
    xt = torch.tensor(x)
    for variant, theirs in (
        (ActivationConfig.Selu, torch.nn.functional.selu(xt)),
        (ActivationConfig.HardSwish, torch.nn.functional.hardswish(xt)),
        (ActivationConfig.Softsign, torch.nn.functional.softsign(xt)),
    ):
        ours = variant.init().forward(tensor(x, "float64", AD.inner())).numpy()
        np.testing.assert_allclose(ours, theirs.numpy(), **TOL["float64"])


def test_activation_config_variant_rejects_another_config():
    with pytest.raises(
        TypeError, match=r"^ActivationConfig.Elu: expected EluConfig, got CeluConfig"
    ):
        ActivationConfig.Elu(CeluConfig())
