"""burn's own tests of the `burn::tensor::module` composites `batch_norm`, `attention_fallback`
and `ctc_loss`, transcribed from crates/burn-backend-tests/tests/tensor/float/module/
{batch_norm,attention,ctc}.rs, and of `Tensor::grid_sample_2d` (tests/tensor/float/ops/
grid_sample.rs), burn commit 2c06be351006851d42fdb6df16b976f4a82d9747, on the engine.
(Their comparisons against PyTorch are op-matrix checks: harness.engine.ops.module_checks;
burn-nn's CTCLoss vectors: test_burn_ctc_vectors.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.engine import Device, Tensor, module_ops

DEVICE = Device.flex()


def _floats(values) -> Tensor:
    return Tensor.from_floats(values, DEVICE)


def _ints(values) -> Tensor:
    return Tensor.from_ints(values, DEVICE)


def test_batch_norm_forward():
    """batch_norm.rs, `test_batch_norm_forward` (epsilon 1: every std is exact)."""
    x = _floats(
        [
            [[0.9601, 0.7277], [0.6272, 0.9034], [0.9378, 0.7230]],
            [[0.6356, 0.1362], [0.0249, 0.9509], [0.6600, 0.5945]],
        ]
    )
    out = module_ops.batch_norm(
        x,
        _floats([2.0, 3.0, 4.0]),
        _floats([0.5, -1.0, 2.0]),
        _floats([1.0, 2.0, 3.0]),
        _floats([3.0, 8.0, 15.0]),
        1.0,
    )
    expected = [
        [[0.4601, 0.2277], [-2.3728, -2.0966], [-0.0622, -0.2770]],
        [[0.1356, -0.3638], [-2.9751, -2.0491], [-0.3400, -0.4055]],
    ]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


def _qkv(seed: int, shape) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    return [_floats(rng.uniform(-1.0, 1.0, shape).astype(np.float32)) for _ in range(3)]


def test_attention_fully_masked_rows_no_nan():
    """attention.rs, `test_attention_fully_masked_rows_no_nan`: every key masked gives 0."""
    q, k, v = _qkv(0, (1, 1, 4, 8))
    mask = Tensor.from_numpy(np.ones((1, 1, 4, 4), np.bool_), DEVICE)
    out = module_ops.attention_fallback(q, k, v, mask).numpy()
    assert not np.isnan(out).any()
    assert (np.abs(out) < 1e-4).all()


def test_attention_fully_masked_rows_causal_no_nan():
    """attention.rs, `test_attention_fully_masked_rows_causal_no_nan`: key 0 masked and the
    causal mask leave row 0 nothing (0), rows 1 to 3 something."""
    q, k, v = _qkv(1, (1, 1, 4, 8))
    mask = np.zeros((1, 1, 4, 4), np.bool_)
    mask[..., 0] = True
    options = module_ops.AttentionModuleOptions(is_causal=True)
    out = module_ops.attention_fallback(q, k, v, Tensor.from_numpy(mask, DEVICE), None, options)
    values = out.numpy().reshape(-1)
    assert not np.isnan(values).any()
    assert (np.abs(values[:8]) < 1e-4).all()
    assert (np.abs(values[8:]) > 1e-4).any()


def test_attention_rejects_a_non_positive_softcap():
    """attention.rs's `attention_fallback` asserts `softcap > 0` (burn's panic text)."""
    q, k, v = _qkv(2, (1, 1, 2, 2))
    options = module_ops.AttentionModuleOptions(softcap=0.0)
    with pytest.raises(ValueError, match=r"^softcap must be positive, got 0.0$"):
        module_ops.attention(q, k, v, None, None, options)


def test_ctc_loss_unreachable_target_is_inf():
    """ctc.rs, `test_ctc_loss_unreachable_target_is_inf`: target [1, 1] needs 3 steps, T = 2."""
    log_probs = _floats(np.full((2, 1, 3), np.log(np.float32(1.0 / 3.0)), np.float32))
    loss = module_ops.ctc_loss(log_probs, _ints([[1, 1]]), _ints([2]), _ints([2]), 0)
    value = loss.numpy()[0]
    assert math.isinf(value) and value > 0


@pytest.mark.parametrize(
    ("burn_test", "targets", "target_length"),
    [("test_ctc_loss_empty_target", [[0]], 0), ("test_ctc_loss_uniform", [[1, 1]], 2)],
)
def test_ctc_loss_uniform_paths(burn_test, targets, target_length):
    """ctc.rs, `test_ctc_loss_empty_target` (all blanks) and `test_ctc_loss_uniform` (only
    path 1, 0, 1): one path of probability (1/2)^3, loss 3 ln 2 (burn's tolerance)."""
    log_probs = _floats(np.full((3, 1, 2), np.log(np.float32(0.5)), np.float32))
    loss = module_ops.ctc_loss(log_probs, _ints(targets), _ints([3]), _ints([target_length]), 0)
    np.testing.assert_allclose(loss.numpy(), [3.0 * math.log(2.0)], rtol=1e-3, atol=1e-3)


_GRID_INPUT = [[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]]]
_GRID = [[[[0.0, 0.0], [-1.0, 0.25]], [[1.0, 1.0], [0.2, -0.8]]]]
_PAD = module_ops.GridSamplePaddingMode


@pytest.mark.parametrize(
    ("burn_test", "grid", "padding", "align_corners", "expected"),
    [
        ("should_grid_sample_2d_default", _GRID, _PAD.Zeros, False, [[4.0, 2.0625], [2.0, 1.04]]),
        ("should_grid_sample_2d_align_corners_border", _GRID, _PAD.Border, True,
         [[4.0, 3.75], [8.0, 1.8]]),
        ("should_pad_zeros_grid_sample_2d", [[[[0.0, -2.0]]]], _PAD.Zeros, False, [[0.0]]),
        ("should_pad_border_grid_sample_2d", [[[[0.0, -2.0]]]], _PAD.Border, False, [[1.0]]),
        ("should_pad_reflection_grid_sample_2d", _GRID, _PAD.Reflection, False,
         [[4.0, 4.125], [8.0, 1.3]]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("device", [DEVICE, DEVICE.autodiff()], ids=["plain", "autodiff"])
def test_grid_sample_2d(burn_test, grid, padding, align_corners, expected, device):
    """grid_sample.rs (burn's expected values, computed there with PyTorch's grid_sample)."""
    options = module_ops.GridSampleOptions("bilinear", padding, align_corners)
    x = Tensor.from_floats(_GRID_INPUT, device)
    out = x.grid_sample_2d(Tensor.from_floats(grid, device), options)
    np.testing.assert_allclose(out.numpy(), [[expected]], rtol=1e-6, atol=1e-6)


def test_grid_sample_2d_nearest_is_burns_unimplemented_default():
    """burn-backend's `float_grid_sample_2d_ref` (what burn-autodiff runs) has `todo!` for any
    mode but bilinear; the engine raises its text on either device."""
    x = Tensor.from_floats(_GRID_INPUT, DEVICE)
    grid = Tensor.from_floats([[[[0.0, 0.0]]]], DEVICE)
    options = module_ops.GridSampleOptions(module_ops.InterpolateMode.Nearest)
    with pytest.raises(NotImplementedError, match=r"^Default implementation for grid_sample_2d "
                       r"with Nearest unimplemented$"):  # fmt: skip
        x.grid_sample_2d(grid, options)
