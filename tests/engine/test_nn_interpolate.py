"""`module_ops.interpolate` and the Interpolate1d / Interpolate2d modules: against
`F.interpolate` / `nn.Upsample` (forward and backward, float32 and float64), burn's own test
vectors (burn-backend-tests and burn-nn, commit 2c06be35), float64 finite differences, and
the exact flex formulas where torch rounds differently."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from nn_support import AD, DTYPES, PERMISSIVE, TOL, assert_burn_approx, leaf, rng_array, tensor
from test_kernels_support import assert_fd, finite_difference

from harness.engine import module_ops
from harness.engine.errors import ShapeError
from harness.engine.nn import (
    Interpolate1dConfig,
    Interpolate2dConfig,
    InterpolateMode,
)
from harness.engine.nn.interpolate import calculate_output_size

PLAIN = AD.inner()
MODES = ("nearest", "bilinear", "bicubic")
# (input shape, output size): up, down, to one pixel, from a one-pixel-high plane.
GEOMETRIES = (((2, 3, 3, 4), (5, 7)), ((1, 2, 6, 5), (4, 3)), ((1, 1, 4, 4), (1, 1)),
              ((1, 1, 1, 3), (3, 5)))  # fmt: skip


def _options(mode: str, align_corners: bool):
    return module_ops.InterpolateOptions(mode, align_corners)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("mode", "align_corners"), itertools.product(MODES, (False, True)))
def test_interpolate_matches_torch(dtype, mode, align_corners):
    rng = np.random.default_rng(0)
    for shape, size in GEOMETRIES:
        x = rng.normal(size=shape)
        cot = rng.normal(size=(*shape[:2], *size))
        xe = leaf(x, dtype)
        out = module_ops.interpolate(xe, size, _options(mode, align_corners))
        grad = xe.grad((out * tensor(cot, dtype)).sum().backward()).numpy()
        xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
        corners = {} if mode == "nearest" else {"align_corners": align_corners}
        ref = F.interpolate(xt, size=size, mode=mode, **corners)
        (ref * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
        what = f"{shape} -> {size}"
        # float32: torch forms coordinates and bicubic sums in float32, flex in float64;
        # the measured worst is 2.4e-6 (bicubic), within TOL's atol of 1e-5.
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **TOL[dtype], err_msg=what)
        np.testing.assert_allclose(grad, xt.grad.numpy(), **TOL[dtype], err_msg=what)


@pytest.mark.parametrize(("mode", "align_corners"), itertools.product(MODES, (False, True)))
def test_interpolate_gradient_against_finite_differences(mode, align_corners):
    x, cot = rng_array(1, (1, 2, 3, 4)), rng_array(2, (1, 2, 5, 6))
    xe = leaf(x, "float64")
    options = _options(mode, align_corners)
    grad = xe.grad(
        (module_ops.interpolate(xe, (5, 6), options) * tensor(cot, "float64")).sum().backward()
    )
    (numeric,) = finite_difference(
        lambda v: module_ops.interpolate(tensor(v, "float64", PLAIN), (5, 6), options).numpy(),
        [x],
        cot,
    )
    assert_fd(grad.numpy(), numeric, f"{mode} align_corners={align_corners}")


def test_bilinear_float32_is_flex_formula_bit_for_bit():
    """flex's bilinear in float32: the weight rounded from float64, `1 - w` in float32, the
    four products summed left to right in float32 (interpolate.rs)."""
    x = rng_array(3, (1, 1, 3, 4)).astype(np.float32)
    out = module_ops.interpolate(tensor(x), (5, 7), _options("bilinear", False)).numpy()
    expected = np.empty((5, 7), np.float32)
    one = np.float32(1.0)
    for oh, ow in itertools.product(range(5), range(7)):
        ys, xs = (oh + 0.5) * (3 / 5) - 0.5, (ow + 0.5) * (4 / 7) - 0.5
        y0, x0 = int(np.floor(max(ys, 0.0))), int(np.floor(max(xs, 0.0)))
        y1, x1 = min(y0 + 1, 2), min(x0 + 1, 3)
        wy, wx = np.float32(max(ys - y0, 0.0)), np.float32(max(xs - x0, 0.0))
        p = x[0, 0]
        expected[oh, ow] = (
            p[y0, x0] * (one - wx) * (one - wy)
            + p[y0, x1] * wx * (one - wy)
            + p[y1, x0] * (one - wx) * wy
            + p[y1, x1] * wx * wy
        )
    np.testing.assert_array_equal(out[0, 0], expected)


# ---- burn's own vectors (crates/burn-backend-tests/tests/, commit 2c06be35) ------------------


def _arange(shape) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def test_burn_bilinear_vectors():
    """tensor/float/module/bilinear_interpolate.rs `test_upsample_interpolation` (first rows),
    `test_downsample_interpolation`, `test_1d_bilinear`, `should_interpolate_cast`
    (align_corners true, burn's default)."""
    options = module_ops.InterpolateOptions("bilinear")
    up = module_ops.interpolate(tensor(_arange((2, 1, 7, 5))), (8, 7), options).numpy()
    assert_burn_approx(
        up[0, 0, :2], [[0.0, 0.6667, 1.3333, 2.0, 2.6667, 3.3333, 4.0],
                       [4.2857, 4.9524, 5.6190, 6.2857, 6.9524, 7.6190, 8.2857]], PERMISSIVE
    )  # fmt: skip
    assert_burn_approx(up[1, 0, -1], [65.0, 65.6667, 66.3333, 67.0, 67.6667, 68.3333, 69.0])
    down = module_ops.interpolate(tensor(_arange((1, 1, 45, 14))), (4, 6), options).numpy()
    expected = [
        [0.0, 2.6, 5.2, 7.8, 10.4, 13.0],
        [205.3333, 207.9333, 210.5333, 213.1333, 215.7333, 218.3333],
        [410.6667, 413.2667, 415.8667, 418.4667, 421.0667, 423.6667],
        [616.0, 618.6, 621.2, 623.8, 626.4, 629.0],
    ]
    assert_burn_approx(down[0, 0], expected, PERMISSIVE)
    line = tensor([[[[1.5410, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]]]])
    out = module_ops.interpolate(line, (1, 9), options).numpy()
    expected = [1.541, 0.39450002, -0.76475, -1.943125, -0.80520004, 0.36178753, -0.671275,
                -1.2022874, -1.3986]  # fmt: skip
    assert_burn_approx(out[0, 0, 0], expected)
    cast = module_ops.interpolate(tensor(_arange((1, 1, 4, 4))), (8, 8), options).numpy()
    assert_burn_approx(
        cast[0, 0, 0], [0.0, 0.42857, 0.8571, 1.2857, 1.7142, 2.1428, 2.5714, 3.0], PERMISSIVE
    )


def test_burn_bicubic_vectors():
    """tensor/float/module/bicubic_interpolate.rs `test_upsample_interpolation` (rows 0-1),
    `test_downsample_interpolation`, `test_1d_bicubic`."""
    options = module_ops.InterpolateOptions("bicubic")
    up = module_ops.interpolate(tensor(_arange((2, 1, 7, 5))), (8, 7), options).numpy()
    assert_burn_approx(
        up[0, 0, :2], [[0.0, 0.5741, 1.3704, 2.0, 2.6296, 3.4259, 4.0],
                       [4.0015, 4.5755, 5.3718, 6.0015, 6.6311, 7.4274, 8.0015]], PERMISSIVE
    )  # fmt: skip
    down = module_ops.interpolate(tensor(_arange((1, 1, 45, 14))), (4, 6), options).numpy()
    expected = [
        [0.0, 2.5760, 5.2480, 7.7520, 10.4240, 13.0],
        [204.8148, 207.3908, 210.0628, 212.5668, 215.2388, 217.8148],
        [411.1852, 413.7612, 416.4331, 418.9371, 421.6091, 424.1852],
        [616.0, 618.576, 621.2479, 623.7519, 626.4239, 629.0],
    ]
    assert_burn_approx(down[0, 0], expected, PERMISSIVE)
    line = tensor([[[[1.5410, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986]]]])
    out = module_ops.interpolate(line, (1, 9), options).numpy()
    expected = [1.541, 0.5747652, -1.010614, -2.197787, -0.8269969, 0.59609234, -0.5803058,
                -1.3792794, -1.3986]  # fmt: skip
    assert_burn_approx(out[0, 0, 0], expected)


def test_burn_nearest_backward_vectors():
    """autodiff/nearest_interpolate.rs `test_upsample_interpolation`,
    `test_downsample_interpolation` (the input gradient of `output.backward()`)."""
    options = module_ops.InterpolateOptions("nearest")
    x = leaf(_arange((2, 1, 7, 5)))
    grad = x.grad(module_ops.interpolate(x, (8, 7), options).backward()).numpy()
    plane = [[4.0, 2.0, 4.0, 2.0, 2.0]] + [[2.0, 1.0, 2.0, 1.0, 1.0]] * 6
    assert_burn_approx(grad, [[plane], [plane]], PERMISSIVE)
    x = leaf(_arange((1, 1, 8, 8)))
    grad = x.grad(module_ops.interpolate(x, (4, 6), options).backward()).numpy()
    plane = [[1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0], [0.0] * 8] * 4
    assert_burn_approx(grad, [[plane]], PERMISSIVE)


def test_burn_lanczos3_vectors_and_missing_backward():
    """tensor/float/module/lanczos3_interpolate.rs `test_upsample_interpolation` (rows 0-2),
    `test_downsample_interpolation`, `test_upsample_2x` (row 0), `test_upsample_half_pixel`
    (rows 0-1), Tolerance::permissive(); flex's `interpolate_backward` has no Lanczos3 arm."""
    options = module_ops.InterpolateOptions("lanczos3")
    up = module_ops.interpolate(tensor(_arange((2, 1, 7, 5))), (8, 7), options).numpy()
    expected = [
        [0.0, 0.5685, 1.3918, 2.0, 2.6082, 3.4315, 4.0],
        [4.0822, 4.6507, 5.4740, 6.0822, 6.6904, 7.5137, 8.0822],
        [8.7971, 9.3656, 10.1889, 10.7971, 11.4053, 12.2286, 12.7971],
    ]
    assert_burn_approx(up[0, 0, :3], expected, PERMISSIVE)
    down = module_ops.interpolate(tensor(_arange((1, 1, 45, 14))), (4, 6), options).numpy()
    expected = [
        [0.0, 2.6107, 5.1803, 7.8197, 10.3893, 13.0],
        [205.5606, 208.1713, 210.7408, 213.3802, 215.9498, 218.5606],
        [410.4395, 413.0502, 415.6198, 418.2592, 420.8287, 423.4395],
        [616.0, 618.6107, 621.1803, 623.8197, 626.3893, 629.0],
    ]
    assert_burn_approx(down[0, 0], expected, PERMISSIVE)
    x = tensor(_arange((1, 1, 4, 4)))
    two = module_ops.interpolate(x, (8, 8), options).numpy()
    row = [0.0, 0.2972, 0.8164, 1.3131, 1.6869, 2.1836, 2.7028, 3.0]
    assert_burn_approx(two[0, 0, 0], row, PERMISSIVE)
    half = module_ops.interpolate(x, (8, 8), options.with_align_corners(False)).numpy()
    expected = [
        [-0.4626, -0.2276, 0.3055, 0.9087, 1.3512, 1.9543, 2.4875, 2.7225],
        [0.4773, 0.7123, 1.2454, 1.8486, 2.2911, 2.8942, 3.4274, 3.6623],
    ]
    assert_burn_approx(half[0, 0, :2], expected, PERMISSIVE)
    xe = leaf(_arange((1, 1, 4, 4)))
    out = module_ops.interpolate(xe, (8, 8), options)
    with pytest.raises(
        ValueError, match=r"^interpolate_backward: unsupported mode Lanczos3 / dtype F32$"
    ):
        out.sum().backward()


def test_interpolate_errors():
    with pytest.raises(ShapeError, match=r"^interpolate: input spatial dimensions must be > 0$"):
        module_ops.interpolate(tensor(np.zeros((1, 1, 0, 3))), (2, 2), _options("nearest", True))
    with pytest.raises(
        ValueError, match=r"^interpolate: unsupported mode NearestExact / dtype F32"
    ):
        module_ops.interpolate(
            tensor(np.zeros((1, 1, 2, 2))), (2, 2), _options("nearest_exact", True)
        )
    with pytest.raises(ShapeError, match=r"^interpolate: expected an input of rank 4"):
        module_ops.interpolate(tensor(np.zeros((1, 2, 2))), (2, 2), _options("bilinear", True))


# ---- the modules (crates/burn-nn/src/modules/interpolate/, commit 2c06be35) ---------------


def test_burn_calculate_output_size():
    """interpolate2d.rs `test_calculate_output_size`, `test_missing_params`,
    `test_infinite_height`, `test_infinite_width`."""
    dims = (1, 1, 4, 4)
    assert calculate_output_size(dims, (2, 2), None) == (2, 2)
    assert calculate_output_size(dims, None, (2.0, 2.0)) == (8, 8)
    assert calculate_output_size(dims, None, (0.5, 0.5)) == (2, 2)
    assert calculate_output_size(dims, None, (2.0, 1.5)) == (8, 6)
    with pytest.raises(ValueError, match=r"^Either output_size or scale_factor must be provided$"):
        calculate_output_size(dims, None, None)
    big = 2**64 - 2
    with pytest.raises(ValueError, match=r"^Scale factor for height is too large$"):
        calculate_output_size((1, 1, big, 4), None, (2.0, 1.0))
    with pytest.raises(ValueError, match=r"^Scale factor for width is too large$"):
        calculate_output_size((1, 1, 4, big), None, (1.0, 2.0))
    assert calculate_output_size((1, 1, 5), None, 1.5) == 7


def test_burn_interpolate2d_module_shapes_and_defaults():
    """interpolate2d.rs `test_module`; `Interpolate2dConfig::new()` defaults."""
    x = tensor(rng_array(4, (2, 3, 4, 4)))
    assert Interpolate2dConfig(output_size=(8, 8)).init()(x).shape == (2, 3, 8, 8)
    assert Interpolate2dConfig(scale_factor=(0.5, 0.5)).init()(x).shape == (2, 3, 2, 2)
    linear = Interpolate2dConfig(output_size=(6, 6), mode=InterpolateMode.Linear).init()
    assert linear(x).shape == (2, 3, 6, 6)
    config = Interpolate2dConfig()
    assert (config.output_size, config.scale_factor) == (None, None)
    assert (config.mode, config.align_corners) == (InterpolateMode.Nearest, True)
    assert Interpolate1dConfig().mode is InterpolateMode.Nearest


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("mode", "torch_mode"),
    [(InterpolateMode.Nearest, "nearest"), (InterpolateMode.Linear, "linear")],
)
def test_interpolate1d_matches_torch(dtype, mode, torch_mode):
    x, cot = rng_array(5, (2, 3, 5)), rng_array(6, (2, 3, 8))
    for align_corners in (True, False):
        module = Interpolate1dConfig(output_size=8, mode=mode, align_corners=align_corners).init()
        xe = leaf(x, dtype)
        out = module(xe)
        grad = xe.grad((out * tensor(cot, dtype)).sum().backward()).numpy()
        xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
        corners = {} if torch_mode == "nearest" else {"align_corners": align_corners}
        ref = torch.nn.Upsample(size=8, mode=torch_mode, **corners)(xt)
        (ref * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **TOL[dtype])
        np.testing.assert_allclose(grad, xt.grad.numpy(), **TOL[dtype])


def test_interpolate2d_bicubic_module_matches_torch_upsample():
    x, cot = rng_array(7, (1, 2, 4, 5)), rng_array(8, (1, 2, 8, 10))
    module = Interpolate2dConfig(scale_factor=(2.0, 2.0), mode=InterpolateMode.Cubic).init()
    xe = leaf(x, "float64")
    out = module(xe)
    grad = xe.grad((out * tensor(cot, "float64")).sum().backward()).numpy()
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.Upsample(scale_factor=2.0, mode="bicubic", align_corners=True)(xt)
    (ref * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **TOL["float64"])
    np.testing.assert_allclose(grad, xt.grad.numpy(), **TOL["float64"])


def test_nearest_scale_factor_differs_from_torch_as_documented():
    """5 * 1.3 = 6.5 -> 6 outputs: burn maps with the ratio 5 / 6, torch with 1 / 1.3."""
    x = np.arange(5.0).reshape(1, 1, 5)
    out = Interpolate1dConfig(scale_factor=1.3).init()(tensor(x, "float64")).numpy()
    ref = F.interpolate(torch.tensor(x), scale_factor=1.3, mode="nearest").numpy()
    same_size = F.interpolate(torch.tensor(x), size=6, mode="nearest").numpy()
    assert out.shape == ref.shape == (1, 1, 6)
    np.testing.assert_array_equal(out[0, 0], [0, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ref[0, 0], [0, 0, 1, 2, 3, 3])
    np.testing.assert_array_equal(out, same_size)


def test_interpolate_modules_reject_other_ranks_naming_the_module():
    expected = (
        r"^Interpolate2d: expected an input of shape \[batch_size, channels, height, width\], "
        r"got shape \[1, 2, 3\]$"
    )
    with pytest.raises(ShapeError, match=expected):
        Interpolate2dConfig(output_size=(2, 2)).init()(tensor(np.zeros((1, 2, 3))))
    expected = (
        r"^Interpolate1d: expected an input of shape \[batch_size, channels, length\], "
        r"got shape \[1, 2, 3, 3\]$"
    )
    with pytest.raises(ShapeError, match=expected):
        Interpolate1dConfig(output_size=2).init()(tensor(np.zeros((1, 2, 3, 3))))
