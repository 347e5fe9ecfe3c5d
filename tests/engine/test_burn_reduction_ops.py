"""burn's sorting, products, cumulative ops, selection and boolean functions on the engine:
burn's own test vectors (`crates/burn-backend-tests/tests/{autodiff,tensor/float/ops}/`,
burn commit 2c06be351006851d42fdb6df16b976f4a82d9747, test names cited; their expected
gradients are PyTorch's, the tests say), and the burn-specific behaviour the op matrix declares
against torch (NaN at prod's zeros, -0.0 before +0.0, topk's panic under autodiff, flex's
missing `Assign`)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, ShapeError, Tensor

AD = Device.flex().autodiff()
PLAIN = Device.flex()


def _leaf(values):
    return Tensor.from_floats(values, AD).require_grad()


def _grad_of_sum(values, fn):
    x = _leaf(values)
    return x.grad(fn(x).sum().backward()).tolist()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([2.0, 3.0, 4.0], [16.0, 10.0, 6.0]),  # should_diff_cumprod
        ([2.0, 0.0, 3.0, 4.0], [1.0, 32.0, 0.0, 0.0]),  # ..._zero_in_middle
        ([0.0, 2.0, 3.0, 4.0], [33.0, 0.0, 0.0, 0.0]),  # ..._zero_at_start
        ([2.0, 3.0, 4.0, 0.0], [16.0, 10.0, 6.0, 24.0]),  # ..._zero_at_end
        ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 8.0, 0.0, 0.0, 0.0]),  # ..._multiple_zeros
    ],
)
def test_cumprod_gradient_is_burns_zero_safe_rule(values, expected):
    # burn autodiff/cumprod.rs.
    assert _grad_of_sum(values, lambda x: x.cumprod(0)) == expected


def test_cumprod_2d_gradient():
    # burn autodiff/cumprod.rs `should_diff_cumprod_2d`.
    got = _grad_of_sum([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], lambda x: x.cumprod(1))
    assert got == [[9.0, 4.0, 2.0], [36.0, 28.0, 20.0]]


@pytest.mark.parametrize(
    ("method", "values", "expected"),
    [
        ("cummax", [1.0, 3.0, 2.0], [1.0, 2.0, 0.0]),  # should_diff_cummax
        ("cummax", [1.0, 3.0, 3.0, 2.0], [1.0, 1.0, 2.0, 0.0]),  # ..._duplicate_values
        ("cummax", [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]),  # ..._all_same
        ("cummin", [3.0, 2.0, 4.0], [1.0, 2.0, 0.0]),  # should_diff_cummin
        ("cummin", [3.0, 2.0, 2.0, 4.0], [1.0, 1.0, 2.0, 0.0]),  # ..._duplicate_values
    ],
)
def test_cumulative_extrema_send_the_gradient_to_the_last_tie(method, values, expected):
    # burn autodiff/cummax.rs, cummin.rs.
    assert _grad_of_sum(values, lambda x: getattr(x, method)(0)) == expected


def test_sort_gradient_matches_burns_vector():
    # burn autodiff/sort.rs `should_diff_sort`: x1 * sort(x1 @ x2, 1), all-ones cotangent.
    a, b = _leaf([[1.0, 7.0], [-2.0, -3.0]]), _leaf([[4.0, -7.0], [2.0, 3.0]])
    grads = a.mul(a.matmul(b).sort(1)).sum().backward()
    assert a.grad(grads).tolist() == [[35.0, 35.0], [-1.0, -8.0]]


def test_sort_orders_signed_zeros_and_nan_like_total_cmp_and_keeps_ties():
    x = Tensor.from_floats([0.0, np.nan, -0.0, 1.0, -np.inf, 1.0], PLAIN)
    values, indices = x.sort_with_indices(0)
    assert indices.tolist() == [4, 2, 0, 3, 5, 1]  # -inf, -0.0, +0.0, the ties in order, NaN
    assert np.signbit(values.numpy()[1]) and not np.signbit(values.numpy()[2])
    assert x.argsort_descending(0).tolist() == [1, 3, 5, 0, 2, 4]


def test_int_tensors_sort_by_value():
    x = Tensor.from_ints([3, -1, 2, -5, 2], PLAIN)
    assert x.sort(0).tolist() == [-5, -1, 2, 2, 3]
    assert x.argsort_descending(0).tolist() == [0, 2, 4, 1, 3]
    assert x.sign().tolist() == [1, -1, 1, -1, 1] and str(x.sign().dtype) == "int64"


def test_topk_with_indices_matches_burns_vector_and_topk_panics_under_autodiff():
    # burn tensor/float/ops/topk.rs `test_topk_with_indices_3d`.
    data = [[[1.0, 4.0, 7.0], [2.0, 5.0, 6.0]], [[3.0, 0.0, 9.0], [8.0, 2.0, 7.0]]]
    values, indices = Tensor.from_floats(data, AD).topk_with_indices(2, 2)
    assert values.tolist() == [[[7.0, 4.0], [6.0, 5.0]], [[9.0, 3.0], [8.0, 7.0]]]
    assert indices.tolist() == [[[2, 1], [2, 1]], [[2, 0], [0, 2]]]
    assert Tensor.from_floats(data, PLAIN).topk(2, -1).tolist() == values.tolist()
    with pytest.raises(NotImplementedError, match="topk is not implemented for autodiff"):
        Tensor.from_floats(data, AD).topk(2, -1)


def test_median_is_the_lower_middle_and_nan_sorts_last():
    x = Tensor.from_floats([[4.0, 1.0, 3.0, 2.0], [np.nan, 5.0, 0.0, 1.0]], PLAIN)
    values, indices = x.median_with_indices(1)
    assert values.tolist() == [[2.0], [1.0]] and indices.tolist() == [[3], [3]]


def test_prod_gradient_is_nan_at_a_zero_input():
    # burn-autodiff's `Prod` rule `g * prod / x` (burn issue #3864); torch gives 2 * 3 = 6.
    with np.errstate(invalid="ignore"):  # 0/0, as burn's kernel
        got = np.array(_grad_of_sum([0.0, 2.0, 3.0], lambda x: x.prod()))
    assert np.isnan(got[0]) and got[1:].tolist() == [0.0, 0.0]
    assert _grad_of_sum([[1.0, 2.0], [3.0, 4.0]], lambda x: x.prod_dim(1)) == [
        [2.0, 1.0],
        [4.0, 3.0],
    ]


def test_var_divides_by_n_minus_one_and_var_bias_by_n():
    x = Tensor.from_floats([[1.0, 2.0, 3.0, 6.0]], PLAIN)
    # mean 3, squared deviations 4 + 1 + 0 + 9 = 14: 14 / 3 and 14 / 4.
    assert np.isclose(x.var(1).into_scalar(), 14 / 3, rtol=1e-7, atol=0)
    assert x.var_bias(1).tolist() == [[3.5]]
    var, mean = x.var_mean(1)
    assert mean.tolist() == [[3.0]] and np.isclose(var.into_scalar(), 14 / 3)


def test_one_hot_matches_burns_vectors_and_wraps_negative_classes():
    # burn tensor/float/ops/one_hot.rs `float_should_support_one_hot`, and the negative class
    # of `one_hot_fill_with_negative_axis_and_indices` (-1 is the last class).
    x = Tensor.from_floats([0.0, 1.0, 4.0], PLAIN)
    assert x.one_hot(5).tolist() == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 1]]
    labels = Tensor.from_ints([[0, 2], [1, -1]], PLAIN)
    assert labels.one_hot(3).tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 1]]]
    assert str(labels.one_hot(3).dtype) == "int64"
    with pytest.raises(IndexError, match="index -1 out of bounds for dimension of size 3"):
        Tensor.from_ints([-4], PLAIN).one_hot(3)  # -4 + 3 is still negative
    with pytest.raises(ShapeError, match="greater or equal to the number of classes"):
        Tensor.from_floats([5.0], PLAIN).one_hot(5)
    # burn checks the classes first: one_hot(0) of [0.0] fails that test; one_hot(1) the count.
    with pytest.raises(ShapeError, match="less than 2 classes"):
        Tensor.from_floats([0.0], PLAIN).one_hot(1)


def test_scatter_and_select_assign_add_and_refuse_assign():
    x = Tensor.zeros((2, 3), PLAIN)
    idx = Tensor.from_ints([[0, 0], [2, 1]], PLAIN)
    ones = Tensor.ones((2, 2), PLAIN)
    assert x.scatter(1, idx, ones).tolist() == [[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    rows = Tensor.from_ints([1, 1], PLAIN)
    assert x.select_assign(0, rows, Tensor.ones((2, 3), PLAIN)).tolist() == [[0.0] * 3, [2.0] * 3]
    with pytest.raises(NotImplementedError, match="float_scatter with Assign update"):
        x.scatter(1, idx, ones, update="assign")
    with pytest.raises(NotImplementedError, match="float_select_assign with Assign update"):
        x.select_assign(0, rows, Tensor.ones((2, 3), PLAIN), update="assign")


def test_select_adds_the_gradient_of_repeated_indices():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    grads = x.select(0, Tensor.from_ints([1, 1, 0], AD)).sum().backward()
    assert x.grad(grads).tolist() == [[1.0, 1.0], [2.0, 2.0]]
    with pytest.raises(IndexError, match="select: index 2 out of bounds for dimension of size 2"):
        x.select(0, Tensor.from_ints([2], AD))


def test_mask_select_gives_zero_gradient_where_false_and_refuses_broadcasting():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    mask = Tensor.from_numpy(np.array([[True, False], [False, True]]), AD)
    picked = x.mask_select(mask)
    assert picked.tolist() == [1.0, 4.0]
    assert x.grad(picked.sum().backward()).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ShapeError, match="mask_select: the mask's shape"):
        x.mask_select(Tensor.from_numpy(np.array([True, False]), AD))


def test_remainder_takes_the_divisors_sign_and_fmod_the_dividends():
    a = Tensor.from_floats([5.0, -5.0, 5.0, -5.0], PLAIN)
    b = Tensor.from_floats([3.0, 3.0, -3.0, -3.0], PLAIN)
    assert a.remainder(b).tolist() == [2.0, 1.0, -1.0, -2.0]
    assert a.fmod(b).tolist() == [2.0, -2.0, 2.0, -2.0]
    with np.errstate(invalid="ignore"):  # inf * 0 before burn's correction, as in burn
        assert a.fmod(Tensor.from_floats([np.inf] * 4, PLAIN)).tolist() == a.tolist()


def test_eye_any_all_and_predicates():
    assert Tensor.eye(2, PLAIN).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    x = Tensor.from_floats([[0.0, np.nan], [0.0, 0.0]], PLAIN)
    assert x.any().tolist() == [True] and x.all().tolist() == [False]  # NaN != 0
    assert x.any_dim(1).tolist() == [[True], [False]]
    assert x.is_nan().tolist() == [[False, True], [False, False]]
    assert x.is_finite().tolist() == [[True, False], [True, True]]


def test_scalar_forms_and_small_composites_follow_burn():
    x = Tensor.from_floats([[1.0, -2.0, 3.0], [-4.0, 5.0, np.nan]], PLAIN)
    # burn's 180.0 / f32::consts::PI is computed in f32: 57.295776, not float32(180 / pi).
    assert Tensor.from_floats([1.0], PLAIN).rad2deg().tolist() == [
        float(np.float32(180.0) / np.float32(np.pi))
    ]
    assert x.bool().tolist() == [[True, True, True], [True, True, True]]  # NaN != 0
    assert x.contains_nan().tolist() == [True]
    assert x.remainder_scalar(-3.0).tolist()[0] == [-2.0, -2.0, -0.0]
    assert x.max_abs_dim(1).tolist()[0] == [3.0]
    assert x.all_close(x) is False and x.slice_dim(1, (0, 2)).all_close(x.slice_dim(1, (0, 2)))
    taken = x.take(1, Tensor.from_ints([[0, 2], [1, 1]], PLAIN))
    assert taken.shape == (2, 2, 2) and taken.tolist()[0] == [[1.0, 3.0], [-2.0, -2.0]]
    assert [t.shape for t in x.iter_dim(1)] == [(2, 1)] * 3
    labels = Tensor.from_ints([0, -1], PLAIN)
    assert labels.one_hot_fill(3, 5.0, -1.0, 0).tolist() == [[5, -1], [-1, -1], [-1, 5]]


def test_cov_centres_the_observations_of_dim():
    # 3 observations (dim 0) of 2 variables: y = 2x exactly, so cov = [[1, 2], [2, 4]].
    x = Tensor.from_floats([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]], PLAIN)
    np.testing.assert_allclose(x.cov(0, 1).numpy(), [[1.0, 2.0], [2.0, 4.0]], rtol=1e-6)


def test_scatter_nd_adds_or_assigns_and_assign_zeroes_the_gradient_there():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    idx = Tensor.from_ints([[1], [1]], AD)
    values = _leaf([[10.0, 20.0], [30.0, 40.0]])
    assert x.scatter_nd(idx, values).tolist() == [[1.0, 2.0], [43.0, 64.0]]
    assigned = x.scatter_nd(idx, values, update="assign")
    assert assigned.tolist() == [[1.0, 2.0], [30.0, 40.0]]  # the last write wins
    grads = assigned.sum().backward()
    assert x.grad(grads).tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert values.grad(grads).tolist() == [[1.0, 1.0], [1.0, 1.0]]  # gather_nd(g), as burn
    with pytest.raises(NotImplementedError, match="update 'mul' is not reproduced"):
        x.scatter_nd(idx, values, update="mul")
