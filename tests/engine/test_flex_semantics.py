"""Where the engine follows burn 0.22's flex backend and autodiff rules rather than PyTorch
(issue 17 items 2, 4, 5, 6): out-of-range indices, NaN and kinks, clamp with min > max, the
backward entry point, sigmoid's rounding order, softmax over an empty dim, cast's gradient.

Expected values come from burn's code read at commit 2c06be351006851d42fdb6df16b976f4a82d9747
(the file is named at each test) or from a float64 computation, never from an engine run.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import AutodiffError, CrossEntropyLossConfig, Device, Tensor

PLAIN = Device.flex()
AD = Device.flex().autodiff()
NAN = float("nan")


def leaf(values, dtype="float32") -> Tensor:
    return Tensor.from_floats(values, AD, dtype).require_grad()


# ---- item 2: indices out of range raise (flex `checked_index`, gather_scatter.rs) -------------


@pytest.mark.parametrize(("index", "bad"), [([[-1], [0]], -1), ([[0], [2]], 2), ([[0], [-3]], -3)])
@pytest.mark.parametrize("device", [PLAIN, AD], ids=["plain", "autodiff"])
def test_gather_out_of_range_index_raises_naming_op_index_and_size(index, bad, device):
    x = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], device)
    with pytest.raises(IndexError) as err:
        x.gather(1, Tensor.from_ints(index, device))
    assert str(err.value) == f"gather: index {bad} out of bounds for dimension of size 2"


def test_gather_on_an_empty_index_is_fine():
    x = Tensor.from_floats([[1.0, 2.0]], PLAIN)
    assert x.gather(1, Tensor.from_ints(np.zeros((1, 0), np.int64), PLAIN)).shape == (1, 0)


def test_cross_entropy_target_minus_one_raises():
    loss = CrossEntropyLossConfig().init(AD)
    logits = leaf([[0.1, 0.2, 0.3], [1.0, 0.0, -1.0]])
    with pytest.raises(IndexError, match="index -1 out of bounds for dimension of size 3"):
        loss.forward(logits, Tensor.from_ints([-1, 0], AD))


# ---- item 4: relu and clamp at NaN, clamp with min > max --------------------------------------


@pytest.mark.parametrize("device", [PLAIN, AD], ids=["plain", "autodiff"])
def test_relu_of_nan_is_zero_as_flex_max(device):
    # flex relu is Rust's x.max(0.0), which returns 0.0 for NaN (activation.rs).
    x = Tensor.from_floats([NAN, -1.0, 2.0], device)
    assert x.relu().tolist() == [0.0, 0.0, 2.0]


def test_relu_gradient_at_nan_is_zero():
    # flex relu_backward: `if out > 0.0 { g } else { 0.0 }`.
    x = leaf([NAN, 0.0, 2.0])
    assert x.grad(x.relu().backward()).tolist() == [0.0, 0.0, 1.0]


def test_plain_clamp_min_and_max_map_nan_to_the_bound():
    # flex float_clamp_min is x.max(min), float_clamp_max x.min(max) (float.rs).
    x = Tensor.from_floats([NAN, -1.0, 1.0], PLAIN)
    assert x.clamp_min(0.5).tolist() == [0.5, 0.5, 1.0]
    assert x.clamp_max(0.5).tolist() == [0.5, -1.0, 0.5]


def test_plain_clamp_keeps_nan_and_refuses_min_above_max():
    # flex float_clamp is Rust's x.clamp(min, max): NaN stays NaN, min > max panics.
    x = Tensor.from_floats([NAN, -1.0, 1.0], PLAIN)
    assert np.isnan(x.clamp(-0.5, 0.5).numpy()[0])
    with pytest.raises(ValueError, match=r"clamp: min > max, or either was NaN. min = 0.5"):
        x.clamp(0.5, -0.5)


def test_autodiff_clamp_keeps_nan():
    # burn-autodiff has no clamp: the FloatTensorOps default is mask_fill(x < min), which
    # leaves NaN in place (burn-backend/src/backend/ops/tensor.rs).
    x = Tensor.from_floats([NAN, -1.0, 1.0], AD)
    assert np.isnan(x.clamp_min(0.5).numpy()[0])
    assert np.isnan(x.clamp_max(0.5).numpy()[0])


def test_autodiff_clamp_with_min_above_max_gives_min_and_no_gradient():
    # default float_clamp: clamp_min(clamp_max(x, max), min): all values <= max < min -> min.
    x = leaf([-1.0, 0.0, 0.25, 1.0])
    y = x.clamp(0.5, -0.5)
    assert y.tolist() == [0.5, 0.5, 0.5, 0.5]
    assert x.grad(y.backward()).tolist() == [0.0, 0.0, 0.0, 0.0]


# ---- item 5: backward entry point, sigmoid order, softmax over an empty dim -------------------


def test_backward_on_an_untracked_op_output_is_a_no_op_step():
    # burn registers an UntrackedOpsStep for it (burn-autodiff/src/ops/base.rs): backward runs
    # it (nothing to do) and the container holds only the root's seed of ones (grads.rs).
    y = Tensor.from_floats([1.0, 2.0], AD) * 2.0
    grads = y.backward()
    assert y.grad(grads).tolist() == [1.0, 1.0]
    assert len(grads) == 1


def test_second_backward_on_an_untracked_op_output_has_no_step():
    y = Tensor.from_floats([1.0], AD) * 2.0
    y.backward()
    with pytest.raises(AutodiffError, match="Node should have a step registered"):
        y.backward()


def test_sigmoid_backward_multiplies_left_to_right_like_flex():
    # flex sigmoid_backward: g * s * (1 - s), i.e. (g * s) * (1 - s), in the tensor dtype.
    values = np.array([0.3, -1.7, 2.9, 0.05], np.float32)
    g = np.array([0.7, 1.3, -0.9, 3.1], np.float32)
    x = Tensor.from_numpy(values, AD).require_grad()
    y = x.sigmoid()
    grads = (y * Tensor.from_numpy(g, AD)).backward()
    s = y.numpy()
    assert x.grad(grads).numpy().tobytes() == ((g * s) * (np.float32(1) - s)).tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_forward_is_flexs_two_branches_bit_for_bit(dtype):
    """harness.engine.ops.nn._flex_sigmoid (one division, a max for the numerator) against
    flex's two branches written out (`sigmoid_f32`: 1 / (1 + exp(-x)) for x >= 0, else
    exp(x) / (1 + exp(x)), with exp(-|x|) for either exp): every float16, and for float32 and
    float64 random bit patterns (NaN payloads, infinities, subnormals), scales and a strided
    view."""
    from harness.engine.ops.nn import _flex_sigmoid

    rng = np.random.default_rng(21)
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    if dtype is np.float16:
        x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(dtype)
    else:
        x = rng.integers(0, np.iinfo(uint).max, 100_000, dtype=uint, endpoint=True).view(dtype)
    scales = (1e-8, 1e-3, 1.0, 10.0, 100.0, 1e4)
    x = np.concatenate([x, *(rng.standard_normal(20_000).astype(dtype) * dtype(s) for s in scales)])
    one = dtype(1)
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        expected = np.where(x >= 0, one / (one + e), e / (one + e))
        got = _flex_sigmoid(x)
        strided = _flex_sigmoid(x[: x.size // 3 * 3].reshape(3, -1)[:, ::2])
    assert got.dtype == x.dtype and got.tobytes() == expected.tobytes()
    expected_strided = expected[: x.size // 3 * 3].reshape(3, -1)[:, ::2]
    assert strided.tobytes() == np.ascontiguousarray(expected_strided).tobytes()
    scalar = _flex_sigmoid(np.array(-0.75, dtype))  # a 0-d array stays one
    e = np.exp(np.array(-0.75, dtype))
    assert type(scalar) is np.ndarray and scalar.shape == ()
    assert scalar.tobytes() == (e / (one + e)).tobytes()


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_dim_raises_the_engines_error(op):
    x = Tensor.zeros((2, 0), AD)
    with pytest.raises(ValueError, match=rf"^{op}: dim 1 of shape \[2, 0\] is empty"):
        getattr(x, op)(1)


def test_softmax_along_a_nonempty_dim_of_an_empty_tensor_is_empty():
    assert Tensor.zeros((0, 2), AD).softmax(1).shape == (0, 2)


# ---- item 6: cast is differentiable (burn-autodiff float_cast) ---------------------------------


def test_cast_is_tracked_and_casts_the_gradient_back():
    x = leaf([1.0, 2.0], "float32")
    y = x.cast("float64")
    assert not y.is_require_grad()
    g = x.grad((y * y).backward())
    assert str(g.dtype) == "float32"
    assert g.tolist() == [2.0, 4.0]


def test_cast_to_the_same_dtype_is_the_tensor_itself():
    x = leaf([1.0])
    assert x.cast("float32") is x


# ---- item 5: LayerNorm's variance gradient takes mean_dim's f64 1/n -----------------------------


def test_layer_norm_float64_gradient_matches_torch_to_float64_rounding():
    # burn's LayerNorm is the ModuleOps::layer_norm composite (burn-backend modules/base.rs):
    # var = mean_dim(centered * centered), whose backward's 1/n is f64. A var built with a
    # scalar division had the f32-rounded 1/3 in its gradient (relative error ~1e-8).
    import torch

    from harness.engine import LayerNorm, Param

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3))
    cot = rng.standard_normal((4, 3))
    gamma = rng.standard_normal(3)
    norm = LayerNorm(Param.from_tensor(Tensor.from_numpy(gamma, AD)), None, 1e-5)
    xe = Tensor.from_numpy(x, AD).require_grad()
    engine = xe.grad((norm.forward(xe) * Tensor.from_numpy(cot, AD)).sum().backward()).numpy()
    xt = torch.tensor(x, requires_grad=True)
    out = torch.nn.functional.layer_norm(xt, (3,), torch.tensor(gamma), None, 1e-5)
    (expected,) = torch.autograd.grad((out * torch.tensor(cot)).sum(), [xt])
    np.testing.assert_allclose(engine, expected.numpy(), rtol=1e-12, atol=1e-14)


def test_cast_gradient_matches_finite_differences_on_an_exact_grid():
    # float64 -> float32 -> float64 is the identity on values exact in f32, and a step of 2^-4
    # keeps them exact: the central difference is then exactly the derivative (the cotangent).
    x = np.array([[0.5, -1.25], [3.0, 0.125]])
    c = np.array([[0.25, -1.5], [2.0, 0.875]])  # exact in f32: the f32 gradient keeps them
    xe = Tensor.from_numpy(x, AD).require_grad()
    y = xe.cast("float32").cast("float64")
    engine = xe.grad((y * Tensor.from_numpy(c, AD)).sum().backward()).numpy()

    def f(v):
        return float(
            np.sum(Tensor.from_numpy(v, PLAIN).cast("float32").cast("float64").numpy() * c)
        )

    eps = 2.0**-4
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (f(up) - f(down)) / (2 * eps)
    np.testing.assert_allclose(engine, numeric, rtol=1e-12)
    np.testing.assert_array_equal(engine, c)


def test_cast_gradient_passes_through_the_narrow_dtype():
    # The f32 step's backward casts the f64 cotangent to f32 (burn's float_cast backward).
    xe = Tensor.from_numpy(np.array([1.0]), AD).require_grad()
    y = xe.cast("float32").cast("float64")
    g = xe.grad((y * Tensor.from_numpy(np.array([0.3]), AD)).sum().backward())
    assert g.tolist() == [float(np.float32(0.3))]
