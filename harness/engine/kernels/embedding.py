"""Embedding: gather rows of a weight table, and the scatter-add of their gradient.

burn reference (commit 2c06be351006851d42fdb6df16b976f4a82d9747): burn-flex/src/ops/module.rs
`embedding` (indices `[batch, seq]` flattened, `float_select` on dim 0, reshaped to `[batch,
seq, d_model]`) and `embedding_backward` (`float_select_add` of the flattened output gradient
into zeros `[n_embedding, d_model]`); burn-flex/src/ops/gather_scatter.rs `select` /
`select_add_2d` (rows added one by one in index order) and `checked_index`, whose message
`index {index} out of bounds for dimension of size {size}` is kept; burn-autodiff's
ops/module.rs `embedding` registers that backward for the weights only.

Differences from PyTorch: burn takes indices of rank 2 exactly (`Tensor<2, Int>`), PyTorch any
rank; PyTorch's `padding_idx`, `max_norm` and sparse gradients do not exist in burn. An index
out of range is burn's panic text (PyTorch: "index out of range in self").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from ._common import INDEX_OUT_OF_BOUNDS, check_float, check_grad_shape, check_rank, fmt


@dataclass(frozen=True, slots=True)
class EmbeddingGrads:
    """The gradient of the embedding table (indices are not differentiable)."""

    weight: np.ndarray


def embedding(weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """burn `module::embedding(weights, indices)`: weight `[n_embedding, d_model]`, integer
    indices `[batch, seq]` -> `[batch, seq, d_model]`, row `indices[b, s]` of the table."""
    _check("embedding", weight, indices)
    return weight.take(indices.reshape(-1), axis=0).reshape(*indices.shape, weight.shape[1])


def embedding_backward(grad: np.ndarray, weight_shape, indices: np.ndarray) -> EmbeddingGrads:
    """The VJP of `embedding` for the weight: zeros `[n_embedding, d_model]` with each row of
    `grad` `[batch, seq, d_model]` added to the row its index names, in index order (as
    flex's `select_add_2d`; `np.add.at` adds repeated rows one by one, in that order)."""
    weight_shape = tuple(int(n) for n in weight_shape)
    if len(weight_shape) != 2:
        raise ShapeError(
            f"embedding: expected a weight shape [n_embedding, d_model], got {fmt(weight_shape)}"
        )
    check_float("embedding", grad)
    _check_indices("embedding", indices, weight_shape[0])
    check_grad_shape("embedding", grad, (*indices.shape, weight_shape[1]))
    d_model = weight_shape[1]
    out = np.zeros(weight_shape[0] * d_model, dtype=grad.dtype)
    # One flat scatter (NumPy's fast 1-D path, ~8x the 2-D one): element (i, j) of the
    # gradient goes to out[indices[i] * d_model + j], rows in index order as flex adds them.
    flat = (indices.reshape(-1, 1).astype(np.int64) * d_model + np.arange(d_model)).reshape(-1)
    np.add.at(out, flat, grad.reshape(-1))
    return EmbeddingGrads(weight=out.reshape(weight_shape))


def _check(op: str, weight: np.ndarray, indices: np.ndarray) -> None:
    check_float(op, weight)
    check_rank(op, "a weight", weight, "[n_embedding, d_model]")
    _check_indices(op, indices, weight.shape[0])


def _check_indices(op: str, indices: np.ndarray, size: int) -> None:
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be an integer tensor, got {indices.dtype}")
    check_rank(op, "indices", indices, "[batch, seq]")
    if indices.size == 0:
        return
    low, high = indices.min(), indices.max()
    if low < 0 or high >= size:
        # The first offending index in row-major order, as flex's loop meets it.
        bad = indices.reshape(-1)[(indices.reshape(-1) < 0) | (indices.reshape(-1) >= size)][0]
        raise IndexError(f"{op}: " + INDEX_OUT_OF_BOUNDS.format(index=int(bad), size=size))
