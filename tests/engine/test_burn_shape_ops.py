"""burn's shape functions where they differ from PyTorch or check their arguments: burn's own
test vectors (`crates/burn-backend-tests/tests/{tensor/float/ops,tensor/int/ops,autodiff}/`,
burn commit 2c06be351006851d42fdb6df16b976f4a82d9747, test names cited), and the messages of
burn's `TensorCheck`. The op matrix compares the same ops with torch where they agree."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, ShapeError, Tensor

AD = Device.flex().autodiff()


def _t(values, dtype="float32"):
    return Tensor.from_floats(values, AD, dtype)


def test_roll_moves_the_element_at_shift_to_the_front():
    # burn int/ops/roll.rs `test_roll` and `test_roll_dim` (opposite to torch.roll's direction).
    x = _t([[0, 1, 2], [3, 4, 5]])
    expected = [[5, 3, 4], [2, 0, 1]]
    assert x.roll([1, -1], [0, 1]).tolist() == expected
    assert x.roll([-1, 1], [1, 0]).tolist() == expected
    assert x.roll([2 * 32 + 1, 3 * (-400) - 1], [0, 1]).tolist() == expected
    assert x.roll_dim(1, 0).tolist() == [[3, 4, 5], [0, 1, 2]]
    assert x.roll_dim(-1, 1).tolist() == [[2, 0, 1], [5, 3, 4]]
    assert x.roll([0, 0], [0, 1]) is x  # a zero shift is the tensor itself


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.roll([1], [2]), "roll: dim 2 out of range for a tensor of rank 2"),
        (lambda x: x.roll([1], [-3]), "roll: dim -3 out of range for a tensor of rank 2"),
        (lambda x: x.roll([1, 2], [0]), "roll: Dimensions and shifts must align"),
        (lambda x: x.roll_dim(1, 2), "roll: dim 2 out of range for a tensor of rank 2"),
    ],
)
def test_roll_panics_become_shape_errors(call, message):
    with pytest.raises(ShapeError, match=message.replace("[", r"\[")):
        call(_t([[0, 1, 2], [3, 4, 5]]))


@pytest.mark.parametrize(
    ("size", "chunks", "lengths"),
    [
        (12, 6, [2] * 6),  # test_chunk_evenly_divisible
        (11, 6, [2, 2, 2, 2, 2, 1]),  # test_chunk_not_evenly_divisible
        (100, 8, [13] * 7 + [9]),  # test_chunk_not_evenly_divisible_remains_several
        (6, 7, [1] * 6),  # test_chunk_not_divisible
    ],
)
def test_chunk_follows_burns_vectors(size, chunks, lengths):
    parts = _t(list(range(size))).chunk(chunks, 0)
    assert [p.shape[0] for p in parts] == lengths
    assert np.concatenate([p.numpy() for p in parts]).tolist() == list(range(size))


@pytest.mark.parametrize(
    ("size", "message"),
    [
        (6, "length must be greater than 0"),  # 3 chunks of 2, then a last of 6 % 2 = 0
        (5, r"start \+ length exceeds the size"),  # the third chunk, narrow(4, 2), passes 5
    ],
)
def test_chunk_panics_where_torch_returns_fewer_chunks(size, message):
    # burn's chunk size is size // chunks + 1; torch.chunk(arange(6), 4) has 3 chunks of 2.
    with pytest.raises(ShapeError, match=message):
        _t(list(range(size))).chunk(4, 0)


def test_split_with_sizes_skips_empty_pieces_and_checks_the_sum():
    parts = _t([[1, 2, 3, 4]]).split_with_sizes([1, 0, 3], 1)
    assert [p.tolist() for p in parts] == [[[1]], [[2, 3, 4]]]
    with pytest.raises(ShapeError, match="Sum of split_sizes: '3', tensor size along dim '1'"):
        _t([[1, 2, 3, 4]]).split_with_sizes([1, 2], 1)


def test_split_size_zero_raises_unless_the_dim_is_empty():
    with pytest.raises(ShapeError, match="split_size must be greater than 0"):
        _t([1, 2]).split(0, 0)
    assert Tensor.zeros((0, 2), AD).split(0, 0) == []


def test_narrow_checks_as_burn():
    x = _t([[1, 2, 3], [4, 5, 6]])
    assert x.narrow(1, 1, 2).tolist() == [[2, 3], [5, 6]]
    with pytest.raises(ShapeError, match="Can't narrow at dimension 1, length must be"):
        x.narrow(1, 0, 0)
    with pytest.raises(ShapeError, match=r"start \+ length exceeds the size .* \(Size=3\)"):
        x.narrow(1, 2, 2)


@pytest.mark.parametrize(
    ("shape", "axes", "expected"),
    [
        ((3, 4, 5), [1, -2], (3, 1, 4, 1, 5)),  # should_unsqueeze_dims_support_dim_inference
        ((3, 4, 5), [0, 4], (1, 3, 4, 5, 1)),  # ..._handle_first_last
        ((3, 4, 5), [0, -1, -1], (1, 3, 4, 5, 1, 1)),  # ..._multiple_trailing_negatives
        ((3, 4, 5), [0, 1, 3], (1, 1, 3, 1, 4, 5)),  # ..._consecutive_first_then_gap
        ((4,), [-1, 0, 0], (1, 1, 4, 1)),  # ..._handle_duplicate_axes_after_sort
        ((5,), [1, 1, 1], (5, 1, 1, 1)),  # ..._handle_repeated_middle_axes
    ],
)
def test_unsqueeze_dims_follows_burns_vectors(shape, axes, expected):
    assert Tensor.zeros(shape, AD).unsqueeze_dims(axes).shape == expected


@pytest.mark.parametrize(("shape", "axes"), [((3, 4, 5), [0, -6]), ((4,), [2, 2])])
def test_unsqueeze_dims_out_of_range_raises(shape, axes):
    # should_unsqueeze_dims_panic, ..._panic_duplicate_pushed_out_of_range
    with pytest.raises(ShapeError, match="is out of range for the output tensor of rank"):
        Tensor.zeros(shape, AD).unsqueeze_dims(axes)


def test_squeeze_dims_follows_burns_vectors():
    assert Tensor.zeros((1, 1, 3), AD).squeeze_dims([]).shape == (3,)
    assert Tensor.zeros((1, 3, 1, 5), AD).squeeze_dims([0, 2]).shape == (3, 5)
    assert Tensor.zeros((2, 1, 3, 1), AD).squeeze_dims([-3, -1]).shape == (2, 3)
    with pytest.raises(ShapeError, match="Can't squeeze dimension 1 because its size is not 1"):
        Tensor.zeros((2, 3, 4), AD).squeeze_dims([1])
    with pytest.raises(ShapeError, match="Attempted to squeeze too many dimensions"):
        Tensor.zeros((1, 1, 1), AD).squeeze_dims([0, 1, 2])


def test_repeat_dim_gradient_is_burns_interleaved_sum():
    # burn autodiff/repeat_dim.rs `should_diff_repeat` and `should_diff_repeat_multi_dim`.
    w = _t([[1.0, 7.0], [-2.0, -3.0]])
    for data, expected in (
        ([[4.0], [2.0]], [[-3.0], [12.0]]),
        ([[4.0, 2.0], [2.0, 4.0]], [[-3.0, -3.0], [12.0, 12.0]]),
    ):
        x = _t(data).require_grad()
        grads = w.matmul(x.repeat_dim(1, 3)).sum().backward()
        assert x.grad(grads).tolist() == expected
    # A cotangent that varies along the dim: x = [a, b] tiled to [a, b, a, b] with cotangent
    # [1, 2, 3, 4]. Summing each element's copies gives [1 + 3, 2 + 4] = [4, 6]; burn's rule
    # reads the four as [[1, 2], [3, 4]] (n = 2 rows of `times` = 2) and sums rows: [3, 7].
    x = _t([10.0, 20.0]).require_grad()
    grads = (x.repeat_dim(0, 2) * _t([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad(grads).tolist() == [3.0, 7.0]


def test_unfold_gives_no_window_when_the_window_is_longer_than_the_dim():
    out = _t([[1.0, 2.0]]).unfold(1, 3, 1)
    assert out.shape == (1, 0, 3)


def test_expand_keeps_minus_one_and_checks_the_target():
    x = _t([[1.0], [2.0]])
    assert x.expand([3, -1, 4]).shape == (3, 2, 4)
    with pytest.raises(ShapeError, match="Broadcast arguments must be positive or -1! Got 0"):
        x.expand([2, 0])
    with pytest.raises(ShapeError, match="can't be broadcasted to the target shape"):
        x.expand([3, 1])


def test_permute_and_flip_refuse_repeated_axes():
    x = Tensor.zeros((2, 3), AD)
    with pytest.raises(ShapeError, match="permute: The axes must be unique"):
        x.permute([0, 0])
    with pytest.raises(ShapeError, match="flip: The axes must be unique"):
        x.flip([1, -1])


def test_stack_checks_shapes_and_tri_needs_a_matrix():
    with pytest.raises(
        ShapeError, match=r"Can't stack tensors with different shapes: \[2\], \[3\]"
    ):
        Tensor.stack([Tensor.zeros((2,), AD), Tensor.zeros((3,), AD)], 0)
    with pytest.raises(ShapeError, match="tril: The input tensor must have at least 2 dim"):
        Tensor.zeros((3,), AD).tril(0)


def test_movedim_matches_burns_example():
    # burn-tensor api/base.rs `movedim` doc example: [3, 2, 1] moved (1 -> 0) is [2, 3, 1].
    x = _t([[[1.0], [5.0]], [[-2.0], [9.0]], [[3.0], [6.0]]])
    assert x.movedim(1, 0).tolist() == [[[1.0], [-2.0], [3.0]], [[5.0], [9.0], [6.0]]]


def test_pad_modes_follow_burn():
    x = _t([[1.0, 2.0, 3.0]])
    assert x.pad([(0, 0), (2, 1)], "reflect").tolist() == [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    assert x.pad([(0, 0), (2, 1)], "edge").tolist() == [[1.0, 1.0, 1.0, 2.0, 3.0, 3.0]]
    assert x.pad((1, 0, 1, 0), 9.0).tolist() == [[9.0, 9.0, 9.0, 9.0], [9.0, 1.0, 2.0, 3.0]]
    with pytest.raises(ShapeError, match=r"Reflect padding \(3, 0\) must be less than dimension 1"):
        x.pad([(0, 0), (3, 0)], "reflect")
    # The gradient of the edge margins lands on the edge elements (repeat_dim of size 1).
    leaf = _t([[1.0, 2.0, 3.0]]).require_grad()
    grads = leaf.pad([(0, 0), (2, 1)], "edge").sum().backward()
    assert leaf.grad(grads).tolist() == [[3.0, 1.0, 2.0]]
