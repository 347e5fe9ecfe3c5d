"""The rest of burn's activation functions on the engine: burn's own test vectors
(`crates/burn-backend-tests/tests/tensor/float/activation/*.rs`, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747, test names cited; compared as burn does, to the
printed digits: atol 1e-4 where burn prints 4 decimals, 1e-6 for 6), and the gradients at the
kinks where burn's composites differ from torch (the op matrix declares them)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, ShapeError, Tensor, activation

PLAIN = Device.flex()
AD = Device.flex().autodiff()

VECTORS = [
    # (burn test, function, input, expected, atol)
    ("test_celu_d2", lambda x: activation.celu(x, 1.0), [1.0, 7.0, -3.0, 0.5],
     [1.0, 7.0, -0.950213, 0.5], 1e-6),
    ("test_celu_with_alpha", lambda x: activation.celu(x, 2.0), [0.0, -1.0, -2.0],
     [0.0, -0.786939, -1.264241], 1e-6),
    ("test_elu", lambda x: activation.elu(x, 1.0), [1.0, 7.0, 13.0, -3.0],
     [1.0, 7.0, 13.0, -0.950213], 1e-6),
    ("test_elu_alpha", lambda x: activation.elu(x, 2.0), [0.0, -1.0, -2.0],
     [0.0, -1.264241, -1.729329], 1e-6),
    ("test_hardtanh_default_d2", lambda x: activation.hardtanh(x, -1.0, 1.0),
     [-2.0, -1.0, 0.0, 0.5, 1.0, 2.0], [-1.0, -1.0, 0.0, 0.5, 1.0, 1.0], 0.0),
    ("test_relu6_at_boundaries", activation.relu6, [-0.1, 0.0, 6.0, 6.1],
     [0.0, 0.0, 6.0, 6.0], 0.0),
    ("test_selu", activation.selu, [0.0, 1.0, -1.0, 2.0, -2.0, 0.5],
     [0.0, 1.0507, -1.1113, 2.1014, -1.5202, 0.5254], 1e-4),
    ("test_softsign", activation.softsign, [1.0, 7.0, 13.0, -3.0],
     [0.5, 0.875, 0.928571, -0.75], 1e-6),
    ("test_tanhshrink_d2", activation.tanhshrink, [-1.0, 0.0, 1.0, 2.0],
     [-0.238406, 0.0, 0.238406, 1.035972], 1e-6),
    ("test_threshold_d2", lambda x: activation.threshold(x, 1.0, 20.0),
     [-1.0, 0.5, 1.0, 1.5, 2.0, -3.0], [20.0, 20.0, 20.0, 1.5, 2.0, 20.0], 0.0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "fn", "x", "expected", "atol"), VECTORS, ids=[v[0] for v in VECTORS]
)
def test_activation_values_match_burns_vectors(name, fn, x, expected, atol):
    out = fn(Tensor.from_floats(x, PLAIN)).numpy()
    np.testing.assert_allclose(out, expected, rtol=0, atol=atol)


def test_softmin_matches_burns_vector():
    # burn activation/softmin.rs `test_softmin_d2` and `test_softmin_negative_dim`.
    x = Tensor.from_floats([[1.0, 7.0], [13.0, -3.0]], PLAIN)
    expected = [[9.975274e-01, 2.472623e-03], [1.125352e-07, 1.0]]
    for dim in (1, -1):
        np.testing.assert_allclose(activation.softmin(x, dim).numpy(), expected, rtol=1e-5)


def _grad(fn, values):
    x = Tensor.from_floats(values, AD).require_grad()
    return x.grad(fn(x).sum().backward()).numpy()


def test_gradients_at_the_kinks_are_burns():
    # selu's mask is x >= 0: gradient gamma at 0 (torch: gamma * alpha).
    np.testing.assert_allclose(_grad(activation.selu, [0.0]), [1.0507009873554805], rtol=1e-7)
    # hardtanh is a clamp: the gradient passes at the bounds (torch: 0).
    assert _grad(lambda x: activation.hardtanh(x, -1.0, 1.0), [-1.0, 1.0, 2.0]).tolist() == [
        1.0,
        1.0,
        0.0,
    ]
    # hard_swish at -3 and 3: x * clamp(x/6 + 0.5) passes the clamp there (torch: 0 and 1).
    np.testing.assert_allclose(_grad(activation.hard_swish, [-3.0, 3.0]), [-0.5, 1.5], rtol=1e-6)


def test_glu_halves_the_dim_and_refuses_an_odd_size():
    x = Tensor.from_floats([[1.0, 2.0, 0.0, 100.0]], PLAIN)
    np.testing.assert_allclose(activation.glu(x, -1).numpy(), [[0.5, 2.0]], rtol=1e-6)
    with pytest.raises(ShapeError, match="glu: Input tensor along dimension 1 must have an even"):
        activation.glu(Tensor.zeros((2, 3), PLAIN), 1)


def test_shrinks():
    x = Tensor.from_floats([-1.0, -0.5, 0.25, 0.75], PLAIN)
    assert activation.hard_shrink(x, 0.5).tolist() == [-1.0, 0.0, 0.0, 0.75]
    assert activation.soft_shrink(x, 0.5).tolist() == [-0.5, 0.0, 0.0, 0.25]
    assert activation.shrink(x, 0.5, 0.25).tolist() == [-0.75, 0.0, 0.0, 0.5]
