"""burn's `Reduction` (`crates/burn-nn/src/loss/reduction.rs`) and the small helpers every loss
shares: the mean-or-sum reduction, burn's panic for the others, untracked constants.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from harness.engine.tensor import Tensor


class Reduction(Enum):
    """burn's `Reduction`: `Mean` and `Auto` average, `Sum` sums, `BatchMean` divides the sum by
    the batch size. Only `KLDivLoss` takes `BatchMean` (and reads `Auto` as `BatchMean`); every
    other loss raises for it."""

    Mean = "mean"
    Sum = "sum"
    BatchMean = "batch_mean"
    Auto = "auto"


def checked_reduction(reduction) -> Reduction:
    """`reduction` itself, or a clear TypeError for anything that is not a `Reduction`."""
    if not isinstance(reduction, Reduction):
        raise TypeError(
            f"reduction must be a Reduction (Mean, Sum, BatchMean, Auto), got {reduction!r}"
        )
    return reduction


def unsupported(reduction: Reduction) -> ValueError:
    """burn's `panic!("{other:?} reduction is not supported")`."""
    return ValueError(f"{reduction.name} reduction is not supported")


def mean_or_sum(loss: Tensor, reduction) -> Tensor:
    """The reduction of all losses but KL divergence: `Mean`/`Auto` -> `mean()`, `Sum` ->
    `sum()`, `BatchMean` raises burn's message. Shape `[1]` (PyTorch: 0-d)."""
    reduction = checked_reduction(reduction)
    if reduction is Reduction.Mean or reduction is Reduction.Auto:
        return loss.mean()
    if reduction is Reduction.Sum:
        return loss.sum()
    raise unsupported(reduction)


def constant(values: np.ndarray, like: Tensor) -> Tensor:
    """An untracked tensor of `like`'s dtype on `like`'s device (targets, masks, one-hots)."""
    return Tensor._wrap(np.ascontiguousarray(values, dtype=like.dtype), like.device)


def mask_constant(values: np.ndarray, like: Tensor) -> Tensor:
    """An untracked bool mask on `like`'s device."""
    return Tensor._wrap(np.ascontiguousarray(values, dtype=np.bool_), like.device)


def index_constant(values: np.ndarray, like: Tensor) -> Tensor:
    """Untracked int64 indices on `like`'s device."""
    return Tensor._wrap(np.ascontiguousarray(values, dtype=np.int64), like.device)


NEG_INF = float("-inf")  # log(0): the lattice losses' (CTC, RNN-T) empty paths


def neg_inf_constant(shape, like: Tensor) -> Tensor:
    """An untracked tensor of -inf of `like`'s dtype on `like`'s device."""
    return constant(np.full(shape, NEG_INF), like)


def f32(value: float) -> float:
    """A config field burn declares `f32`: rounded once, when the loss is built."""
    return float(np.float32(value))


def targets_shape_error(targets: Tensor, of: str, inputs: Tensor) -> ValueError:
    """burn's `Shape of targets ({targets_dims:?}) should correspond to outer shape of <of>
    ({dims:?}).` (binary cross-entropy, Poisson NLL)."""
    return ValueError(
        f"Shape of targets ({list(targets.shape)}) should correspond to outer shape of {of} "
        f"({list(inputs.shape)})."
    )
