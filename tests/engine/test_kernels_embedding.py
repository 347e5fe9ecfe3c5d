"""Embedding kernel: gather and scatter-add against PyTorch and flex's loop, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_kernels_support import assert_close, assert_fd, cotangent, finite_difference

from harness.engine.errors import ShapeError
from harness.engine.kernels import embedding, embedding_backward


def _table(dtype, n=7, d=5):
    return np.random.default_rng(0).standard_normal((n, d)).astype(dtype)


# Repeated rows (0 three times) and the first and last row.
INDICES = np.array([[0, 3, 0, 6], [2, 0, 5, 3]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_matches_torch(dtype):
    w = _table(dtype)
    out = embedding(w, INDICES)
    c = cotangent(out.shape, dtype)
    tw = torch.tensor(w, requires_grad=True)
    t_out = F.embedding(torch.tensor(INDICES), tw)
    t_out.backward(torch.tensor(c))
    assert out.shape == (2, 4, 5) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, t_out.detach().numpy())
    assert_close(embedding_backward(c, w.shape, INDICES).weight, tw.grad.numpy(), 3, "weight")


def test_embedding_backward_adds_rows_in_index_order_as_flex():
    """flex's select_add_2d adds the gradient rows one by one in index order; with mixed
    magnitudes that order decides the float32 bits (a pairwise sum would differ)."""
    rng = np.random.default_rng(2)
    indices = rng.integers(0, 3, size=(4, 50))
    g = (rng.standard_normal((4, 50, 6)) * 10.0 ** rng.integers(-4, 5, (4, 50, 1))).astype(
        np.float32
    )
    ref = np.zeros((3, 6), dtype=np.float32)
    for i, row in zip(indices.reshape(-1), g.reshape(-1, 6), strict=True):
        ref[i] = ref[i] + row
    np.testing.assert_array_equal(embedding_backward(g, (3, 6), indices).weight, ref)


def test_embedding_vjp_matches_finite_differences():
    w = _table(np.float64)
    c = cotangent((2, 4, 5))
    (fw,) = finite_difference(lambda w: embedding(w, INDICES), [w], c)
    assert_fd(embedding_backward(c, w.shape, INDICES).weight, fw)


def test_embedding_keeps_the_dtype_and_accepts_int32_indices():
    w = _table(np.float32)
    out = embedding(w, INDICES.astype(np.int32))
    assert out.dtype == np.float32
    g = embedding_backward(np.ones_like(out), w.shape, INDICES.astype(np.int32)).weight
    assert g.dtype == np.float32 and g[0].tolist() == [3.0] * 5 and g[1].tolist() == [0.0] * 5


@pytest.mark.parametrize(
    ("indices", "message"),
    [
        (np.array([[1, -1]]), r"embedding: index -1 out of bounds for dimension of size 7"),
        (np.array([[7, 1]]), r"embedding: index 7 out of bounds for dimension of size 7"),
        (np.array([[2, 9], [-3, 0]]), r"index 9 out of bounds"),  # the first in row order
    ],
)
def test_bad_indices_name_the_op_the_index_and_the_size(indices, message):
    with pytest.raises(IndexError, match=message):
        embedding(_table(np.float32), indices)
    with pytest.raises(IndexError, match=message):
        embedding_backward(np.zeros((*indices.shape, 5)), (7, 5), indices)


def test_embedding_argument_errors():
    w = _table(np.float32)
    with pytest.raises(TypeError, match="embedding: indices must be an integer tensor"):
        embedding(w, INDICES.astype(np.float32))
    with pytest.raises(ShapeError, match=r"embedding: expected indices of rank 2 \[batch, seq\]"):
        embedding(w, np.array([0, 1]))
    with pytest.raises(ShapeError, match=r"expected a weight of rank 2"):
        embedding(w[0], INDICES)
    with pytest.raises(ShapeError, match=r"expected an output gradient of shape \[2, 4, 5\]"):
        embedding_backward(np.zeros((2, 4, 4)), w.shape, INDICES)
