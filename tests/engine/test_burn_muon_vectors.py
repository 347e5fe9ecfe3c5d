"""burn-optim's Muon tests, transcribed from the `#[cfg(test)]` module of
`crates/burn-optim/src/optim/muon.rs` at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747
(test name in each docstring), re-derived with a float64 Newton-Schulz written here and with
`torch.optim.Muon`, which runs the iteration in bfloat16 (so it agrees to about 1e-2 only: the
PyTorch difference documented on `harness.engine.optim.Muon`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from burn_vectors import AD, engine_step, given_linear_layer
from torch.optim import _muon as torch_muon

from harness.engine import (
    AdjustLrFn,
    Device,
    GradientsParams,
    LinearConfig,
    MomentumConfig,
    MuonConfig,
    ShapeError,
    Tensor,
    WeightDecayConfig,
)

TOLERANCE = 1e-8  # muon.rs TOLERANCE for the ratios
PLAIN = Device.flex()
SQUARE = [[1.0, 0.5], [0.5, 1.0]]
TALL = [
    [1.0, 0.5, 0.3, 0.2],
    [0.5, 1.0, 0.4, 0.1],
    [0.3, 0.4, 1.0, 0.5],
    [0.2, 0.1, 0.5, 1.0],
    [0.1, 0.2, 0.3, 0.4],
    [0.4, 0.3, 0.2, 0.1],
    [0.2, 0.4, 0.1, 0.3],
    [0.3, 0.1, 0.4, 0.2],
]
WIDE = [
    [1.0, 0.5, 0.3, 0.2, 0.1, 0.4, 0.2, 0.3],
    [0.5, 1.0, 0.4, 0.1, 0.2, 0.3, 0.4, 0.1],
    [0.3, 0.4, 1.0, 0.5, 0.3, 0.2, 0.1, 0.4],
    [0.2, 0.1, 0.5, 1.0, 0.4, 0.1, 0.3, 0.2],
]


def newton_schulz_f64(g, coefficients=(3.4445, -4.775, 2.0315), steps=5, eps=1e-7):
    """Keller Jordan's quintic iteration in float64 (github.com/KellerJordan/Muon)."""
    x = np.asarray(g, np.float64)
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / max(np.linalg.norm(x), eps)
    a, b, c = coefficients
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def _muon(**overrides):
    return MuonConfig(**overrides).build()


@pytest.mark.parametrize(
    ("method", "shape", "expected", "torch_name"),
    [
        (AdjustLrFn.Original, (512, 512), 1.0, "original"),
        (AdjustLrFn.Original, (1024, 512), math.sqrt(2.0), "original"),
        (AdjustLrFn.Original, (512, 1024), 1.0, "original"),
        (AdjustLrFn.MatchRmsAdamW, (1024, 512), 0.2 * math.sqrt(1024.0), "match_rms_adamw"),
        (AdjustLrFn.MatchRmsAdamW, (512, 512), 0.2 * math.sqrt(512.0), "match_rms_adamw"),
    ],
)
def test_adjust_lr_fn(method, shape, expected, torch_name):
    """muon.rs `test_adjust_lr_fn_original` and `test_adjust_lr_fn_match_rms_adamw`; torch's
    `_adjust_lr` gives the same ratios."""
    ratio = method.adjustment_ratio(shape)
    assert abs(ratio - expected) < TOLERANCE
    assert abs(torch_muon._adjust_lr(1.0, torch_name, torch.Size(shape)) - ratio) < TOLERANCE


def test_1d_tensor_panics():
    """muon.rs `test_1d_tensor_panics`: burn's panic text, as a ShapeError."""
    tensor_1d = Tensor.zeros([512], PLAIN)
    grad_1d = Tensor.ones([512], PLAIN)
    with pytest.raises(ShapeError, match=r"^Newton-Schulz iteration requires 2D tensors, got 1D$"):
        _muon().step(0.01, tensor_1d, grad_1d, None)


def test_a_linear_with_bias_fails_at_the_bias():
    """ModuleOptimizer visits the weight first: it steps, then the bias raises, as burn's
    `assert!` panics in the middle of the module map."""
    linear = LinearConfig(6, 6).init(AD)
    weight_id = linear.weight.id
    optim = MuonConfig().init()
    x = Tensor.ones([2, 6], AD)
    grads = GradientsParams.from_grads(linear.forward(x).backward(), linear)
    with pytest.raises(ShapeError, match="got 1D"):
        optim.step(0.01, linear, grads)
    assert list(optim.to_record()) == [weight_id]


def test_muon_optimizer_save_load_state():
    """muon.rs `test_muon_optimizer_save_load_state`: a Linear without bias, one step; the
    record loaded into a new optimizer holds as many states."""
    linear = LinearConfig(6, 6, bias=False).init(AD)
    x = Tensor.from_numpy(np.random.default_rng(7).random((2, 6), np.float32), AD)
    optim = MuonConfig().init()
    optim.step(0.01, linear, GradientsParams.from_grads(linear.forward(x).backward(), linear))
    before = optim.to_record()
    assert len(MuonConfig().init().load_record(before).to_record()) == len(before) == 1


def test_muon_with_weight_decay():
    """muon.rs `test_muon_with_weight_decay`: every weight of the all-ones 4x4 layer drops
    below 1.0 after one step with weight decay 0.01."""
    linear = given_linear_layer([[1.0] * 4] * 4, None)
    optim = MuonConfig(weight_decay=WeightDecayConfig(0.01)).init()
    linear = engine_step(optim, linear, [[0.5] * 4] * 2, 0.01)
    assert (linear.weight.val().numpy() < 1.0).all()


def test_newton_schulz_orthogonalization():
    """muon.rs `test_newton_schulz_orthogonalization`: O O^T has a diagonal within 0.1 of 1;
    the engine's iteration matches the float64 one within 1e-6 and torch's bfloat16 one
    within 2e-2."""
    matrix = Tensor.from_floats(SQUARE, PLAIN)
    orthogonalized = _muon().zeropower_via_newtonschulz(matrix)
    product = orthogonalized.matmul(orthogonalized.transpose()).numpy()
    assert abs(product[0, 0] - 1.0) < 0.1 and abs(product[1, 1] - 1.0) < 0.1
    np.testing.assert_allclose(orthogonalized.numpy(), newton_schulz_f64(SQUARE), atol=1e-6)
    bf16 = torch_muon._zeropower_via_newtonschulz(
        torch.tensor(SQUARE), (3.4445, -4.775, 2.0315), 5, 1e-7
    )
    np.testing.assert_allclose(orthogonalized.numpy(), bf16.float().numpy(), atol=2e-2)


@pytest.mark.parametrize("matrix", [TALL, WIDE], ids=["tall", "wide"])
def test_tall_matrix_transpose(matrix):
    """muon.rs `test_tall_matrix_transpose`: a tall [8, 4] and a wide [4, 8] matrix keep their
    shape and change; both match the float64 iteration (which transposes the tall one)."""
    result = _muon().zeropower_via_newtonschulz(Tensor.from_floats(matrix, PLAIN))
    assert result.shape == np.shape(matrix)
    assert not np.array_equal(result.numpy(), np.asarray(matrix, np.float32))
    np.testing.assert_allclose(result.numpy(), newton_schulz_f64(matrix), atol=1e-5)


def test_zero_gradient():
    """muon.rs `test_zero_gradient`: a zero gradient leaves the tensor unchanged (within
    1e-6), no NaN; with weight decay every nonzero value shrinks."""
    tensor = Tensor.from_floats(TALL[:4], PLAIN)
    zero_grad = Tensor.zeros([4, 4], PLAIN)
    updated, state = _muon().step(0.01, tensor, zero_grad, None)
    assert state is not None
    assert np.abs(updated.numpy() - tensor.numpy()).max() < 1e-6
    assert not np.isnan(updated.numpy()).any()
    decayed, _ = _muon(weight_decay=WeightDecayConfig(0.01)).step(0.01, tensor, zero_grad, None)
    assert not np.isnan(decayed.numpy()).any()
    assert (np.abs(decayed.numpy()) < np.abs(tensor.numpy())).all()


# ---- re-derivation of whole steps ---------------------------------------------------------


def _muon_f64(weight, grads, lr, momentum=0.95, wd=0.0, ratio=1.0):
    """burn's Muon in float64: v = mu v + g, nesterov g + mu v, NS, decay, adjusted update."""
    w, velocity = np.asarray(weight, np.float64), None
    for g in grads:
        velocity = g if velocity is None else momentum * velocity + g
        w = w * (1 - lr * wd) - lr * ratio * newton_schulz_f64(g + momentum * velocity)
    return w


def _steps(weight, grads, lr, config):
    optim, state = config.build(), None
    tensor = Tensor.from_floats(weight, PLAIN)
    for g in grads:
        tensor, state = optim.step(lr, tensor, Tensor.from_numpy(g, PLAIN), state)
    return tensor.numpy()


def test_muon_steps_match_float64_and_torch():
    """Three steps on a tall [6, 4] weight (ratio sqrt(6/4)) with weight decay: the engine
    follows the float64 formula within 1e-6 and torch.optim.Muon within its bfloat16 error."""
    rng = np.random.default_rng(11)
    weight = rng.standard_normal((6, 4)).astype(np.float32).tolist()
    grads = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(3)]
    config = MuonConfig(weight_decay=WeightDecayConfig(0.1))
    got = _steps(weight, grads, 0.02, config)
    want = _muon_f64(weight, grads, 0.02, wd=float(np.float32(0.1)), ratio=math.sqrt(6 / 4))
    np.testing.assert_allclose(got, want, atol=1e-6)
    param = torch.tensor(weight, requires_grad=True)
    optim = torch.optim.Muon([param], lr=0.02, weight_decay=0.1)
    for g in grads:
        param.grad = torch.from_numpy(g)
        optim.step()
    assert np.abs(param.detach().numpy() - got).max() < 0.02 * 3 * 2e-2


def test_muon_defaults_are_burns():
    """muon.rs `MuonConfig` defaults."""
    config = MuonConfig()
    assert config.weight_decay is None
    assert config.momentum == MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    assert config.ns_coefficients == (3.4445, -4.775, 2.0315)
    assert (config.epsilon, config.ns_steps, config.adjust_lr_fn) == (
        1e-7,
        5,
        AdjustLrFn.Original,
    )
