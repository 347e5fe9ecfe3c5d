"""burn's elementwise math on the engine: burn's own test vectors (`crates/burn-backend-tests/
tests/{autodiff/trig.rs,tensor/float/ops/{round,sign}.rs}`, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747, test names cited), and the burn-specific values the
op matrix declares against torch (sign of NaN and -0.0, zero gradients of the roundings).

The trig vectors all run `(x1 @ f(x2)) @ x2` and differentiate both inputs (a sum of the
output), in float32; burn compares them with its default tolerance, here rtol 1e-4 (they are
printed with 6 or 7 significant digits)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, Tensor

AD = Device.flex().autodiff()
X1 = [[0.0, 1.0], [3.0, 4.0]]
X1_SMALL = [[0.0, 0.1], [0.3, 0.4]]

# (method, x1, x2, grad of x1, grad of x2), from burn autodiff/trig.rs `should_diff_<method>`.
TRIG_VECTORS = [
    (
        "cos",
        X1,
        [[6.0, 7.0], [9.0, 10.0]],
        [[26.8063, -27.7870], [26.8063, -27.7870]],
        [[9.222064, -39.123375], [-28.721354, 49.748356]],
    ),
    (
        "sin",
        X1,
        [[6.0, 7.0], [9.0, 10.0]],
        [[8.8500, -4.9790], [8.8500, -4.9790]],
        [[38.668987, 44.194775], [-59.97261, -80.46094]],
    ),
    (
        "cosh",
        X1,
        [[0.5, 1.0], [1.5, 2.0]],
        [[7.092221, 16.696301], [7.092221, 16.696301]],
        [[17.489855, 27.484539], [39.409813, 86.910278]],
    ),
    (
        "sinh",
        X1,
        [[0.5, 1.0], [1.5, 2.0]],
        [[4.894847, 15.887931], [4.894847, 15.887931]],
        [[17.284000, 28.412029], [39.302979, 87.498329]],
    ),
    (
        "tan",
        X1,
        [[0.5, 1.0], [0.3, 0.8]],
        [[2.532602, 1.596607], [2.532602, 1.596607]],
        [[9.028598, 14.489801], [18.038082, 21.151270]],
    ),
    (
        "asin",
        X1_SMALL,
        [[0.2, 0.3], [0.5, 0.6]],
        [[0.435841, 0.969651], [0.435841, 0.969651]],
        [[0.475300, 0.668141], [0.701834, 1.100658]],
    ),
    (
        "acos",
        X1_SMALL,
        [[0.2, 0.3], [0.5, 0.6]],
        [[2.077433, 1.543624], [2.077433, 1.543624]],
        [[0.781337, 0.588496], [0.554804, 0.155979]],
    ),
    (
        "atan",
        X1,
        [[0.5, 1.0], [1.5, 2.0]],
        [[3.444365, 5.349211], [3.444365, 5.349211]],
        [[9.904911, 11.554912], [10.199631, 11.391938]],
    ),
    (
        "asinh",
        X1,
        [[0.5, 1.0], [1.5, 2.0]],
        [[3.806625, 6.844869], [3.806625, 6.844869]],
        [[11.442373, 14.842072], [14.022551, 17.688538]],
    ),
    (
        "acosh",
        X1,
        [[1.5, 2.0], [2.5, 3.0]],
        [[10.611752, 15.178907], [10.611752, 15.178907]],
        [[20.112753, 20.247547], [20.402235, 22.487328]],
    ),
    (
        "atanh",
        X1_SMALL,
        [[0.2, 0.3], [0.5, 0.6]],
        [[0.441838, 1.037115], [0.441838, 1.037115]],
        [[0.491723, 0.698110], [0.772763, 1.298805]],
    ),
]


def _leaf(values):
    return Tensor.from_floats(values, AD).require_grad()


@pytest.mark.parametrize(
    ("method", "x1", "x2", "grad1", "grad2"), TRIG_VECTORS, ids=[v[0] for v in TRIG_VECTORS]
)
def test_trig_gradients_match_burns_vectors(method, x1, x2, grad1, grad2):
    a, b = _leaf(x1), _leaf(x2)
    grads = a.matmul(getattr(b, method)()).matmul(b).sum().backward()
    np.testing.assert_allclose(a.grad(grads).numpy(), grad1, rtol=1e-4)
    np.testing.assert_allclose(b.grad(grads).numpy(), grad2, rtol=1e-4)


def test_atan2_gradients_match_burns_vector():
    # burn autodiff/trig.rs `should_diff_atan2`: (x1 @ atan2(x2, x3)) @ x2.
    a, y, x = _leaf(X1), _leaf([[0.5, 1.0], [1.5, 2.0]]), _leaf([[1.0, 0.5], [2.0, 1.5]])
    grads = a.matmul(y.atan2(x)).matmul(y).sum().backward()
    np.testing.assert_allclose(a.grad(grads).numpy(), [[4.570492, 4.210785]] * 2, rtol=1e-4)
    np.testing.assert_allclose(
        y.grad(grads).numpy(), [[8.208448, 8.808449], [10.357923, 12.157923]], rtol=1e-4
    )
    np.testing.assert_allclose(x.grad(grads).numpy(), [[-1.8, -8.4], [-1.8, -5.6]], rtol=1e-4)


def test_round_is_half_to_even():
    # burn tensor/float/ops/round.rs `should_round_ties_even`, `should_support_round_ops`.
    x = Tensor.from_floats([1.5, 2.5, 3.5, 4.5, 5.5, 6.5], AD)
    assert x.round().tolist() == [2.0, 2.0, 4.0, 4.0, 6.0, 6.0]
    y = Tensor.from_floats([24.0423, 87.9478, 76.1838, 59.6929, 43.8169, 94.8826], AD)
    assert y.round().tolist() == [24.0, 88.0, 76.0, 60.0, 44.0, 95.0]


def test_sign_keeps_nan_and_maps_negative_zero_to_positive_zero():
    # burn tensor/float/ops/sign.rs; NaN kept is flex's float_sign (torch.sign(NaN) is 0).
    x = Tensor.from_floats([-0.2, -1.0, 2.0, 3.0, 0.0, -5.0, -0.0, np.nan], AD)
    out = x.sign().numpy()
    assert out[:6].tolist() == [-1.0, -1.0, 1.0, 1.0, 0.0, -1.0]
    assert not np.signbit(out[6]) and np.isnan(out[7])


@pytest.mark.parametrize("method", ["round", "floor", "ceil", "trunc", "sign"])
def test_piecewise_constant_ops_have_a_zero_gradient_not_none(method):
    # burn returns float_zeros (sign: grad * 0), so the input has a gradient, and it is 0.
    x = _leaf([0.3, -1.7, 2.5])
    grads = (getattr(x, method)() * Tensor.from_floats([1.0, 2.0, -3.0], AD)).sum().backward()
    assert np.all(x.grad(grads).numpy() == 0)


def test_square_is_mul_and_powi_takes_int_exponents():
    x = _leaf([1.5, -2.0])
    grads = x.square().sum().backward()
    assert x.grad(grads).tolist() == [3.0, -4.0]
    e = Tensor.from_ints([2, -1], AD)
    assert x.powi(e).tolist() == [2.25, -0.5]


def test_powi_scalar_takes_burns_shortcuts():
    # burn-backend's default float_powi_scalar (not overridden by burn-autodiff): x^0 is a
    # constant, so x gets no gradient from it (torch: zeros); x^1 is x itself.
    x = _leaf([0.0, 2.0])
    assert x.powi_scalar(1) is x
    y = _leaf([3.0])
    grads = (x.powi_scalar(0).sum() + y.sum()).backward()
    assert x.grad(grads) is None and y.grad(grads).tolist() == [1.0]
    assert x.powf_scalar(2.0).tolist() == [0.0, 4.0]  # integer-valued: x * x
