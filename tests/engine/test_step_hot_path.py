"""The training step's fast paths give what the general code gives: gather tests only for
negative indices before indexing (NumPy raises past the end), and still names flex's
out-of-bounds index before any other indexing error (the texts of check_indices)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, Tensor

AD = Device.flex().autodiff()


@pytest.mark.parametrize(
    ("index", "message"),
    [
        # Past the end of dim 1 and more rows than the tensor: flex's bounds text comes first.
        ([[0], [2], [0]], "gather: index 2 out of bounds for dimension of size 2"),
        ([[0], [-1], [0]], "gather: index -1 out of bounds for dimension of size 2"),
        # Both ends out of range: the low one is named, as check_indices does.
        ([[-3], [5]], "gather: index -3 out of bounds for dimension of size 2"),
    ],
)
def test_gather_bounds_errors_come_before_other_index_errors(index, message):
    x = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], AD)
    with pytest.raises(IndexError) as err:
        x.gather(1, Tensor.from_ints(index, AD))
    assert str(err.value) == message


def test_gather_with_more_rows_than_the_tensor_names_numpys_error():
    x = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0]], AD)
    with pytest.raises(IndexError, match=r"^gather: index 2 is out of bounds for axis 0"):
        x.gather(1, Tensor.from_ints([[0], [1], [0]], AD))


@pytest.mark.parametrize("rows", [1, 4, 32, 33, 200])  # both sides of _LIST_MIN_SIZE
@pytest.mark.parametrize("where", [0, -1])
def test_gather_finds_a_negative_index_among_few_or_many(rows, where):
    x = Tensor.from_numpy(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3), AD)
    index = np.full((rows, 1), 2, np.int64)
    assert x.gather(1, Tensor.from_numpy(index, AD)).numpy().ravel().tolist() == [
        3.0 * r + 2 for r in range(rows)
    ]
    index[where] = -2
    with pytest.raises(IndexError) as err:
        x.gather(1, Tensor.from_numpy(index, AD))
    assert str(err.value) == "gather: index -2 out of bounds for dimension of size 3"
