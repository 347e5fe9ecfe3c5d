"""Conv3d, ConvTranspose1d and ConvTranspose3d (crates/burn-nn/src/modules/conv/{conv3d,
conv_transpose1d,conv_transpose3d}.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747):
burn's defaults and param shapes, torch's weights imported through burn's PyTorch adapter
(the same layout, loaded as stored), then forward and every gradient against torch.nn in
float32 and float64; PaddingConfig3d as burn's padding.rs tests; burn's
`conv2d_weight_backward` against torch.nn.grad.conv2d_weight and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, grads_by_path, import_torch, leaf, tensor
from test_kernels_support import finite_difference

from harness.engine import module_ops
from harness.engine.nn import (
    Conv3dConfig,
    ConvTranspose1dConfig,
    ConvTranspose3dConfig,
    PaddingConfig3d,
)


def _pairs():
    """(engine config, torch module, input shape) with non-default strides, padding,
    dilation and groups."""
    return {
        "conv3d": (
            Conv3dConfig((4, 6), (3, 2, 3), stride=(2, 1, 1), dilation=(1, 2, 1), groups=2,
                         padding=PaddingConfig3d.Explicit(1, 0, 1)),
            torch.nn.Conv3d(4, 6, (3, 2, 3), (2, 1, 1), (1, 0, 1), (1, 2, 1), 2),
            (2, 4, 5, 5, 4),
        ),
        "conv3d_same": (
            Conv3dConfig((2, 3), (3, 3, 1), padding=PaddingConfig3d.Same),
            torch.nn.Conv3d(2, 3, (3, 3, 1), padding="same"),
            (1, 2, 4, 3, 5),
        ),
        "conv_transpose1d": (
            ConvTranspose1dConfig((4, 6), 3, stride=2, dilation=2, groups=2, padding=1,
                                  padding_out=1),
            torch.nn.ConvTranspose1d(4, 6, 3, 2, 1, 1, 2, True, 2),
            (2, 4, 7),
        ),
        "conv_transpose3d": (
            ConvTranspose3dConfig((4, 6), (2, 3, 2), stride=(2, 1, 2), padding=(1, 0, 1),
                                  padding_out=(1, 0, 0), dilation=(1, 2, 1), groups=2),
            torch.nn.ConvTranspose3d(4, 6, (2, 3, 2), (2, 1, 2), (1, 0, 1), (1, 0, 0), 2,
                                     True, (1, 2, 1)),
            (2, 4, 3, 4, 3),
        ),
    }  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["conv3d", "conv3d_same", "conv_transpose1d", "conv_transpose3d"])
def test_torch_weights_forward_and_backward(name, dtype):
    config, torch_module, shape = _pairs()[name]
    torch.manual_seed(3)
    torch_module = torch_module.to(DTYPES[dtype])
    model, _ = import_torch(torch_module, config.init(AD))
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    out_t = torch_module(xt)
    cot = np.random.default_rng(6).standard_normal(tuple(out_t.shape)).astype(dtype)
    (out_t * torch.tensor(cot)).sum().backward()
    xe = leaf(x, dtype)
    out_e = model.forward(xe)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **TOL[dtype])
    by_path = grads_by_path(model, grads)
    assert sorted(by_path) == ["bias", "weight"]
    for path, g in by_path.items():
        expected = getattr(torch_module, path).grad.numpy()
        np.testing.assert_allclose(g, expected, **TOL[dtype])


def test_burn_defaults_and_param_shapes():
    c3 = Conv3dConfig((2, 4), (3, 3, 3))
    assert (c3.stride, c3.dilation, c3.groups, c3.bias) == ((1, 1, 1), (1, 1, 1), 1, True)
    assert c3.padding == PaddingConfig3d.Valid
    assert c3.init(AD).weight.val().shape == (4, 2, 3, 3, 3)
    t1 = ConvTranspose1dConfig((4, 6), 3, groups=2)
    assert (t1.stride, t1.dilation, t1.padding, t1.padding_out) == (1, 1, 0, 0)
    assert t1.init(AD).weight.val().shape == (4, 3, 3)
    t3 = ConvTranspose3dConfig((4, 6), (1, 2, 3))
    assert (t3.padding, t3.padding_out) == ((0, 0, 0), (0, 0, 0))
    assert t3.init(AD).weight.val().shape == (4, 6, 1, 2, 3)
    assert ConvTranspose3dConfig((4, 6), (1, 2, 3), bias=False).init(AD).bias is None


def test_initializer_bound_uses_burns_fans():
    """KaimingUniform(gain 1/sqrt(3)): bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in);
    conv3d fan_in = in/groups * kernel elements, transposed fan_in = out/groups * kernel."""
    w = Conv3dConfig((4, 2), (2, 3, 3), groups=2).init(AD).weight.val().numpy()
    assert np.abs(w).max() <= 1 / np.sqrt(2 * 18) and np.abs(w).max() > 0.8 / np.sqrt(36)
    w = ConvTranspose1dConfig((2, 8), 5, groups=2).init(AD).weight.val().numpy()
    assert np.abs(w).max() <= 1 / np.sqrt(4 * 5)


def test_padding_config_3d_burn_tests():
    # padding.rs test_padding_config_3d_calculate_{valid,explicit,same_odd_kernel}
    args = ((10, 10, 10), (3, 3, 3), (1, 1, 1))
    assert PaddingConfig3d.Valid.padding_3d(*args) == (0, 0, 0)
    assert PaddingConfig3d.Explicit(1, 2, 3).padding_3d(*args) == (1, 2, 3)
    assert PaddingConfig3d.Same.padding_3d(*args) == (1, 1, 1)
    with pytest.raises(ValueError, match="Asymmetric 3D 'Same' padding is not supported"):
        PaddingConfig3d.Same.padding_3d((10, 10, 10), (2, 3, 3), (1, 1, 1))
    with pytest.raises(ValueError, match="even kernel size is not supported"):
        Conv3dConfig((1, 1), (2, 3, 3), padding=PaddingConfig3d.Same).init(AD)


def test_input_rank_errors_name_the_module():
    with pytest.raises(Exception, match=r"^Conv3d: expected an input of rank 5"):
        Conv3dConfig((2, 2), (1, 1, 1)).init(AD).forward(tensor(np.zeros((1, 2, 3, 3))))
    with pytest.raises(Exception, match=r"^ConvTranspose1d: .*expects an input \[batch_size, 2"):
        ConvTranspose1dConfig((2, 2), 1).init(AD).forward(tensor(np.zeros((1, 3, 4))))


# ---- conv2d_weight_backward (burn-backend ops/modules/conv.rs) -----------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "groups,stride,padding,dilation,shape",
    # the third: a stride that leaves input rows unread, so burn slices the result to the kernel
    [(1, (2, 1), (1, 0), (1, 2), (2, 3, 7, 6)), (2, (1, 2), (0, 1), (2, 1), (2, 4, 7, 8)),
     (1, (3, 3), (0, 0), (1, 1), (1, 2, 10, 10))],
)  # fmt: skip
def test_conv2d_weight_backward_matches_torch(groups, stride, padding, dilation, shape, dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((6, shape[1] // groups, 3, 2)).astype(dtype)
    out = torch.nn.functional.conv2d(
        torch.tensor(x), torch.tensor(w), None, stride, padding, dilation, groups
    )
    g = rng.standard_normal(tuple(out.shape)).astype(dtype)
    theirs = torch.nn.grad.conv2d_weight(
        torch.tensor(x), w.shape, torch.tensor(g), stride, padding, dilation, groups
    )
    options = module_ops.ConvOptions(stride, padding, dilation, groups)
    plain = AD.inner()
    ours = module_ops.conv2d_weight_backward(
        tensor(x, dtype, plain), tensor(w, dtype, plain), tensor(g, dtype, plain), options
    )
    tol = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": TOL["float64"]}[dtype]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), **tol)


def test_conv2d_weight_backward_is_differentiable():
    """A composite of conv2d / swap_dims / slice: its gradient in x against float64 finite
    differences of its own forward."""
    rng = np.random.default_rng(12)
    x, g = rng.standard_normal((2, 4, 5, 5)), rng.standard_normal((2, 6, 2, 2))
    w = np.zeros((6, 2, 2, 3))
    options = module_ops.ConvOptions((2, 2), (0, 0), (1, 1), 2)
    cot = rng.standard_normal(w.shape)

    def plain(xv):
        t = lambda a: tensor(a, "float64", AD.inner())  # noqa: E731
        return module_ops.conv2d_weight_backward(t(xv), t(w), t(g), options).numpy()

    xe = leaf(x, "float64")
    out = module_ops.conv2d_weight_backward(xe, tensor(w, "float64"), tensor(g, "float64"), options)
    grads = (out * tensor(cot, "float64")).sum().backward()
    (numeric,) = finite_difference(plain, [x.copy()], cot)
    np.testing.assert_allclose(xe.grad(grads).numpy(), numeric, rtol=1e-7, atol=1e-8)
