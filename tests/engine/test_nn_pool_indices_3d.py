"""max_pool1d/2d_with_indices and adaptive_avg_pool3d (burn-tensor module.rs, burn-autodiff
ops/module.rs, burn-flex ops/pool.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747):
burn's own tests transcribed (crates/burn-backend-tests/tests/tensor/float/module/
{maxpool1d,maxpool2d}.rs, names cited), the AdaptiveAvgPool3d module against torch forward
and backward (float32 and float64), the gradient routed through the returned indices, and
burn's `max_pool2d_with_indices_backward` / `avg_pool2d_backward` against ATen's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from nn_support import AD, DTYPES, TOL, assert_burn_approx, leaf, tensor

from harness.engine import module_ops
from harness.engine.errors import AutodiffError
from harness.engine.nn import AdaptiveAvgPool3dConfig

PLAIN = AD.inner()


def _exact_indices(indices, expected):
    assert indices.dtype.name == "int64"
    np.testing.assert_array_equal(indices.numpy(), np.asarray(expected, np.int64))


def test_burn_max_pool1d_with_indices():
    # maxpool1d.rs test_max_pool1d_with_indices, test_max_pool1d_complex
    x = tensor([[[0.2479, 0.6386, 0.3166, 0.5742]]])
    out, idx = module_ops.max_pool1d_with_indices(x, 2, 1, 0, 1)
    assert_burn_approx(out.numpy(), [[[0.6386, 0.6386, 0.5742]]])
    _exact_indices(idx, [[[1, 1, 3]]])
    x = tensor([[[0.5388, 0.0676, 0.7122, 0.8316, 0.0653]]])
    out, idx = module_ops.max_pool1d_with_indices(x, 4, 1, 2, 1)
    assert_burn_approx(out.numpy(), [[[0.5388, 0.7122, 0.8316, 0.8316, 0.8316, 0.8316]]])
    _exact_indices(idx, [[[0, 2, 3, 3, 3, 3]]])


def test_burn_max_pool2d_with_indices():
    # maxpool2d.rs test_max_pool2d_with_indices
    x = tensor(
        [[[[0.2479, 0.6386, 0.3166, 0.5742], [0.7065, 0.1940, 0.6305, 0.8959],
           [0.5416, 0.8602, 0.8129, 0.1662], [0.3358, 0.3059, 0.8293, 0.0990]]]]
    )  # fmt: skip
    out, idx = module_ops.max_pool2d_with_indices(x, (2, 2), (1, 1), (1, 1), (1, 1))
    _exact_indices(
        idx,
        [[[[0, 1, 1, 3, 3], [4, 4, 1, 7, 7], [4, 9, 9, 7, 7], [8, 9, 9, 14, 11],
           [12, 12, 14, 14, 15]]]],
    )  # fmt: skip
    expected = [[[[0.2479, 0.6386, 0.6386, 0.5742, 0.5742],
                  [0.7065, 0.7065, 0.6386, 0.8959, 0.8959],
                  [0.7065, 0.8602, 0.8602, 0.8959, 0.8959],
                  [0.5416, 0.8602, 0.8602, 0.8293, 0.1662],
                  [0.3358, 0.3358, 0.8293, 0.8293, 0.0990]]]]  # fmt: skip
    assert_burn_approx(out.numpy(), expected)


def test_burn_max_pool2d_ceil_mode_with_indices():
    # maxpool2d.rs test_max_pool2d_ceil_mode_with_indices
    x = tensor(np.arange(36.0).reshape(1, 1, 6, 6))
    out, idx = module_ops.max_pool2d_with_indices(x, (3, 3), (2, 2), (0, 0), (1, 1), True)
    expected = [[[[14, 16, 17], [26, 28, 29], [32, 34, 35]]]]
    assert_burn_approx(out.numpy(), expected)
    _exact_indices(idx, expected)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_flows_through_the_indexed_maxima(dtype):
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    out_t, idx_t = F.max_pool2d(xt, (3, 2), (2, 1), (1, 0), (1, 2), return_indices=True)
    cot = np.random.default_rng(3).standard_normal(tuple(out_t.shape)).astype(dtype)
    (out_t * torch.tensor(cot)).sum().backward()
    xe = leaf(x, dtype)
    out_e, idx_e = module_ops.max_pool2d_with_indices(xe, (3, 2), (2, 1), (1, 0), (1, 2))
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    np.testing.assert_array_equal(idx_e.numpy(), idx_t.numpy())
    np.testing.assert_array_equal(out_e.numpy(), out_t.detach().numpy())
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [(2, 3, 4), (1, 1, 1), (5, 2, 7)])
def test_adaptive_avg_pool3d_module_matches_torch(size, dtype):
    """Output sizes below, at and above the input's (4, 5, 3): overlapping and repeated bins."""
    x = np.random.default_rng(7).standard_normal((2, 3, 4, 5, 3)).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    out_t = F.adaptive_avg_pool3d(xt, size)
    cot = np.random.default_rng(8).standard_normal(tuple(out_t.shape)).astype(dtype)
    (out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
    xe = leaf(x, dtype)
    out_e = AdaptiveAvgPool3dConfig(size).init().forward(xe)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **TOL[dtype])


def test_adaptive_avg_pool3d_rank_error_names_the_module():
    with pytest.raises(Exception, match=r"^AdaptiveAvgPool3d: expected an input of rank 5"):
        AdaptiveAvgPool3dConfig((1, 1, 1)).init().forward(tensor(np.zeros((1, 2, 3, 3))))


# ---- the backward functions of burn's tensor::module --------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_with_indices_backward_matches_aten(dtype):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 6, 5)).astype(dtype)
    args = ((3, 2), (2, 1), (1, 0), (1, 2), False)
    out, idx = module_ops.max_pool2d_with_indices(tensor(x, dtype, PLAIN), *args)
    g = rng.standard_normal(out.shape).astype(dtype)
    ours = module_ops.max_pool2d_with_indices_backward(
        tensor(x, dtype, PLAIN), *args, tensor(g, dtype, PLAIN), idx
    )
    theirs = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.tensor(g), torch.tensor(x), *args, torch.tensor(idx.numpy())
    )
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_backward_matches_aten(count_include_pad, dtype):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 6, 7)).astype(dtype)
    g = rng.standard_normal((2, 3, 3, 4)).astype(dtype)  # kernel 3, stride 2, padding 1
    ours = module_ops.avg_pool2d_backward(
        tensor(x, dtype, PLAIN), tensor(g, dtype, PLAIN), (3, 3), (2, 2), (1, 1),
        count_include_pad, False,
    )  # fmt: skip
    theirs = torch.ops.aten.avg_pool2d_backward(
        torch.tensor(g), torch.tensor(x), [3, 3], [2, 2], [1, 1], False, count_include_pad, None
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **TOL[dtype])


def test_backward_functions_panic_on_an_autodiff_device_as_burn():
    x = tensor(np.zeros((1, 1, 4, 4)), "float32")  # nn_support's default: the autodiff device
    g = tensor(np.zeros((1, 1, 2, 2)), "float32")
    with pytest.raises(AutodiffError, match=r"^Can't differentiate avg pool 2d backward\.$"):
        module_ops.avg_pool2d_backward(x, g, (2, 2), (2, 2), (0, 0), True, False)
    _, idx = module_ops.max_pool2d_with_indices(x, (2, 2), (2, 2), (0, 0), (1, 1))
    with pytest.raises(AutodiffError, match=r"^Can't differentiate max pool2d with indices"):
        module_ops.max_pool2d_with_indices_backward(
            x, (2, 2), (2, 2), (0, 0), (1, 1), False, g, idx
        )
