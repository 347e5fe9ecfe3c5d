"""The parameter-only activation modules of burn-nn (crates/burn-nn/src/activation/{celu,elu,
hard_shrink,hardtanh,shrink,soft_shrink,threshold,thresholded_relu}.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): burn's defaults, burn's own module tests
transcribed (names cited), and forward and backward against torch.nn (float32 and float64)
on inputs away from the kinks (where the documented gradient differences live)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, assert_burn_approx, leaf, tensor

from harness.engine.nn import (
    CeluConfig,
    EluConfig,
    HardShrinkConfig,
    HardtanhConfig,
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
