"""deform_conv2d and DeformConv2d (burn-flex ops/deform_conv.rs, burn-nn modules/conv/
deform_conv2d.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn's own forward
vectors transcribed (crates/burn-backend-tests/tests/tensor/float/module/deform_conv2d.rs,
names cited), float64 finite differences of every input (offsets away from integer sample
coordinates, where the bilinear kinks are), the module against the torch reference
(harness.opmatrix.torch_reference: grid_sample + autograd; torchvision is not installed), burn's
init checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, TOL, assert_burn_approx, grads_by_path, leaf, tensor
from test_kernels_support import finite_difference

from harness.engine import kernels, module_ops
from harness.engine.module import Param
from harness.engine.nn import DeformConv2dConfig, PaddingConfig2d
from harness.opmatrix.torch_reference import deform_conv2d as torch_deform_conv2d

PERMISSIVE = (0.01, 0.01)  # the test case's Tolerance::permissive()


def _burn_case(b, ci, co, k, pad, stride, dil, wg, og, h, w):
    """burn's DeformConv2dTestCase inputs: `arange(n).reshape(shape) / n` for x, weight,
    offset and mask, bias `arange(co) / co`, all in float32."""
    oh = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1

    def ramp(*shape):
        n = int(np.prod(shape))
        return tensor(np.arange(n).reshape(shape) / np.float32(n), device=AD.inner())

    x, weight = ramp(b, ci, h, w), ramp(co, ci // wg, *k)
    offset, mask = ramp(b, k[0] * k[1] * og * 2, oh, ow), ramp(b, k[0] * k[1] * og, oh, ow)
    bias = tensor(np.arange(co) / np.float32(co), device=AD.inner())
    options = module_ops.DeformConvOptions(stride, pad, dil, wg, og)
    return module_ops.deform_conv2d(x, offset, weight, mask, bias, options).numpy()


def test_burn_deform_conv2d_simple():
    out = _burn_case(1, 3, 5, (3, 3), (0, 0), (1, 1), (1, 1), 1, 1, 4, 4)
    expected = [[[[0.9074, 0.6387], [0.5160, 0.4196]], [[2.4259, 1.8008], [1.5449, 1.3112]],
                 [[3.9444, 2.9629], [2.5738, 2.2027]], [[5.4629, 4.1250], [3.6027, 3.0943]],
                 [[6.9814, 5.2871], [4.6316, 3.9859]]]]  # fmt: skip
    assert_burn_approx(out, expected, PERMISSIVE)


def test_burn_deform_conv2d_batched():
    out = _burn_case(2, 3, 5, (3, 3), (0, 0), (1, 1), (1, 1), 1, 1, 4, 4)
    expected = [
        [[[0.215466, 0.192846], [0.193407, 0.175496]], [[0.725073, 0.675926], [0.687746, 0.648506]],
         [[1.234679, 1.159006], [1.182085, 1.121516]], [[1.744286, 1.642086], [1.676423, 1.594526]],
         [[2.253892, 2.125167], [2.170762, 2.067536]]],
        [[[1.652976, 1.136937], [0.984030, 0.718403]],
         [[4.836801, 3.472453], [3.177263, 2.418021]],
         [[8.020626, 5.807969], [5.370497, 4.117639]],
         [[11.204453, 8.143486], [7.563731, 5.817256]],
         [[14.388277, 10.479003], [9.756965, 7.516875]]],
    ]  # fmt: skip
    assert_burn_approx(out, expected, PERMISSIVE)


def test_burn_deform_conv2d_weight_groups():
    out = _burn_case(1, 3, 6, (3, 3), (0, 0), (1, 1), (1, 1), 3, 1, 4, 4)
    expected = [[[[0.101823, 0.065756], [0.046691, 0.036233]],
                 [[0.412523, 0.336674], [0.306863, 0.282386]],
                 [[1.307585, 1.024152], [0.902454, 0.800008]],
                 [[1.840507, 1.458072], [1.299371, 1.158781]],
                 [[3.402235, 2.634555], [2.305198, 2.014265]],
                 [[4.157379, 3.231476], [2.838861, 2.485659]]]]  # fmt: skip
    assert_burn_approx(out, expected, PERMISSIVE)


def test_burn_deform_conv2d_offset_groups():
    out = _burn_case(1, 3, 6, (3, 3), (0, 0), (1, 1), (1, 1), 1, 3, 4, 4)
    expected = [[[[1.0794, 0.7676], [0.7209, 0.5337]], [[2.7059, 2.0216], [1.9740, 1.5419]],
                 [[4.3325, 3.2755], [3.2271, 2.5501]], [[5.9590, 4.5295], [4.4802, 3.5582]],
                 [[7.5855, 5.7835], [5.7333, 4.5664]],
                 [[9.2120, 7.0375], [6.9864, 5.5746]]]]  # fmt: skip
    assert_burn_approx(out, expected, PERMISSIVE)


OPTIONS = {"stride": (2, 1), "padding": (1, 1), "dilation": (1, 2), "weight_groups": 2,
           "offset_groups": 2}  # fmt: skip


def _inputs(seed: int):
    """x [2, 4, 5, 6], weight [6, 2, 3, 2] -> out [2, 6, 3, 6]; offsets whose sample
    coordinates stay >= 0.05 from an integer (away from the bilinear kinks)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 4, 5, 6))
    weight = rng.standard_normal((6, 2, 3, 2))
    offset = rng.uniform(-1.7, 1.7, (2, 2 * 6 * 2, 3, 6))
    frac = offset - np.floor(offset)
    offset = np.where(np.abs(frac - 0.5) > 0.45, offset + 0.2, offset)
    mask = rng.uniform(0.0, 1.0, (2, 2 * 6, 3, 6))
    bias = rng.standard_normal(6)
    return x, offset, weight, mask, bias


def test_every_gradient_matches_float64_finite_differences():
    arrays = _inputs(0)

    def plain(x, offset, weight, mask, bias):
        return kernels.deform_conv2d(x, offset, weight, mask, bias, **OPTIONS)

    cot = np.random.default_rng(1).standard_normal(plain(*arrays).shape)
    leaves = [leaf(a, "float64") for a in arrays]
    out = module_ops.deform_conv2d(*leaves, module_ops.DeformConvOptions(**OPTIONS))
    grads = (out * tensor(cot, "float64")).sum().backward()
    numeric = finite_difference(plain, [a.copy() for a in arrays], cot)
    for t, expected in zip(leaves, numeric, strict=True):
        np.testing.assert_allclose(t.grad(grads).numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_mask", [True, False])
def test_module_matches_the_torch_reference(dtype, with_mask):
    x, offset, weight, mask, bias = (a.astype(dtype) for a in _inputs(2))
    config = DeformConv2dConfig((4, 6), (3, 2), stride=(2, 1), dilation=(1, 2),
                                weight_groups=2, offset_groups=2,
                                padding=PaddingConfig2d.Explicit(1, 1, 1, 1))  # fmt: skip
    model = config.init(AD)
    assert model.weight.val().shape == weight.shape and model.bias.val().shape == bias.shape
    model.weight = Param.from_tensor(tensor(weight, dtype))
    model.bias = Param.from_tensor(tensor(bias, dtype))
    xt, ot = torch.tensor(x, requires_grad=True), torch.tensor(offset, requires_grad=True)
    wt, bt = torch.tensor(weight, requires_grad=True), torch.tensor(bias, requires_grad=True)
    mt = torch.tensor(mask, requires_grad=True) if with_mask else None
    out_t = torch_deform_conv2d(xt, ot, wt, mt, bt, **OPTIONS)
    cot = np.random.default_rng(3).standard_normal(tuple(out_t.shape)).astype(dtype)
    (out_t * torch.tensor(cot)).sum().backward()
    xe, oe = leaf(x, dtype), leaf(offset, dtype)
    me = leaf(mask, dtype) if with_mask else None
    out_e = model.forward(xe, oe, me)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
    pairs = [(xe, xt), (oe, ot)] + ([(me, mt)] if with_mask else [])
    for e, t in pairs:
        np.testing.assert_allclose(e.grad(grads).numpy(), t.grad.numpy(), **tol)
    by_path = grads_by_path(model, grads)
    np.testing.assert_allclose(by_path["weight"], wt.grad.numpy(), **tol)
    np.testing.assert_allclose(by_path["bias"], bt.grad.numpy(), **tol)


def test_burn_init_checks():
    with pytest.raises(ValueError, match=r"offset_groups=2"):
        DeformConv2dConfig((3, 6), (3, 3), offset_groups=2).init(AD)
    with pytest.raises(ValueError, match="even kernel size"):
        DeformConv2dConfig((2, 2), (2, 3), padding=PaddingConfig2d.Same).init(AD)
    c = DeformConv2dConfig((4, 6), (3, 3))
    assert (c.stride, c.dilation, c.weight_groups, c.offset_groups) == ((1, 1), (1, 1), 1, 1)
    assert c.init(AD).weight.val().shape == (6, 4, 3, 3)
