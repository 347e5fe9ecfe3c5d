"""Losses (reference-engine.md section 4): cross-entropy, MSE, binary cross-entropy.

Every loss is a composite of the core's primitive ops, in burn's op order, so its gradient comes
from the core's backward table and its rounding follows burn's formula. Every loss returns shape
`[1]` (burn has no 0-d tensors; PyTorch returns a 0-d scalar). Invalid configs raise
`ValueError` with burn's panic message, at `init()` as burn does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from enum import Enum

import numpy as np

from harness.engine.module import Config, Module, rust_float
from harness.engine.tensor import Tensor

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "MseLoss",
    "Reduction",
]

WEIGHTS_POSITIVE = "Weights of cross-entropy have to be positive."
SMOOTHING_RANGE = (
    "Alpha of Cross-entropy loss with smoothed labels should be in interval [0, 1]. Got {alpha}"
)


class Reduction(Enum):
    """burn's `Reduction`: `Mean` and `Auto` average, `Sum` sums; `BatchMean` exists in the enum
    but `MseLoss` rejects it."""

    Mean = "mean"
    Sum = "sum"
    BatchMean = "batch_mean"
    Auto = "auto"


def _f32_or_none(value: float | None) -> float | None:
    """burn stores `smoothing` as an f32: round once, at `init()`."""
    return None if value is None else float(np.float32(value))


def _checked_fields(config, device) -> dict:
    """The fields both cross-entropies take (`weights` as a tensor, `smoothing` rounded to
    f32, `logits`), after burn's config assertions, which run at `init()`."""
    alpha = _f32_or_none(config.smoothing)
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise ValueError(SMOOTHING_RANGE.format(alpha=rust_float(alpha, f32=True)))
    weights = config.weights
    if weights is not None and not all(float(np.float32(w)) > 0.0 for w in weights):
        raise ValueError(WEIGHTS_POSITIVE)
    return {
        "weights": _weights_tensor(weights, device),
        "smoothing": alpha,
        "logits": config.logits,
    }


def _smooth(targets: np.ndarray, alpha: float, classes: int) -> np.ndarray:
    """burn's label smoothing `targets * (1 - alpha) + alpha / C`: f32 scalars (as burn's
    fields), cast to the targets' dtype before the tensor ops."""
    dt = targets.dtype.type
    a32 = np.float32(alpha)
    return targets * dt(np.float32(1.0) - a32) + dt(a32 / np.float32(classes))


def _weights_tensor(weights: Sequence[float] | None, device) -> Tensor | None:
    if weights is None:
        return None
    return Tensor.from_numpy(np.asarray(weights, dtype=np.float32), device)


def _constant(values: np.ndarray, like: Tensor) -> Tensor:
    """An untracked tensor of `like`'s dtype on `like`'s device (targets, masks, one-hots)."""
    return Tensor._wrap(np.ascontiguousarray(values, dtype=like.dtype), like.device)


# ---- cross-entropy ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CrossEntropyLossConfig(Config):
    """burn's `CrossEntropyLossConfig`: `pad_tokens`, class `weights` (positive), label
    `smoothing` alpha in [0, 1], and `logits` (True: inputs are logits; False: probabilities).
    """

    pad_tokens: Sequence[int] | None = None
    weights: Sequence[float] | None = None
    smoothing: float | None = None
    logits: bool = True

    def init(self, device) -> CrossEntropyLoss:
        fields = _checked_fields(self, device)
        pad_tokens = None if self.pad_tokens is None else tuple(self.pad_tokens)
        return CrossEntropyLoss(pad_tokens=pad_tokens, **fields)


class CrossEntropyLoss(Module):
    """Cross-entropy of `logits [batch, classes]` against int64 `targets [batch]`.

    PyTorch differences (see the `cross_entropy_variants` case):
    - pad tokens are zeroed but still **counted in the denominator**: the mean runs over all
      rows (PyTorch's `ignore_index` divides by the number of kept rows);
    - with class weights the denominator is the sum of the target weights **pads included**;
    - smoothing alpha builds `onehot * (1 - alpha) + alpha / C` (same target as PyTorch's
      `label_smoothing`), but the weighted + smoothed denominator is burn's (sum of target
      weights), not PyTorch's;
    - `logits=False` takes probabilities and clamps them at sqrt(f32 min positive) before the
      log, except on the smoothing path, which takes the log unclamped;
    - the result has shape `[1]`, not 0-d.
    """

    def __init__(self, pad_tokens, weights, smoothing, logits) -> None:
        self.pad_tokens = pad_tokens
        self.weights = weights
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        height = logits.shape[0]
        target_height = targets.shape[0]
        if height != target_height:
            raise ValueError(
                f"Shape of targets ({target_height}) should correspond to outer shape of "
                f"logits ({height})."
            )
        if self.smoothing is not None:
            return self._forward_smoothed(logits, targets, self.smoothing)
        return self._forward_default(logits, targets)

    def _padding_mask(self, targets: Tensor) -> np.ndarray | None:
        if self.pad_tokens is None:
            return None
        return np.isin(targets.numpy(), np.asarray(self.pad_tokens, dtype=np.int64))

    def _forward_default(self, logits: Tensor, targets: Tensor) -> Tensor:
        (batch,) = targets.shape
        mask = self._padding_mask(targets)
        # burn's `targets.reshape([batch, 1])`: int data, never tracked (burn's autodiff int
        # tensors have no graph node either), so a plain view suffices: no node to allocate.
        indices = Tensor._plain(targets._data.reshape(batch, 1))
        if self.logits:
            picked = logits.log_softmax(1).gather(1, indices)
        else:
            picked = logits.clamp_min(_prob_floor(logits)).gather(1, indices).log()
        if self.weights is None and mask is None:
            # burn reshapes to [batch] first; the mean of the [batch, 1] column is the same
            # sum in the same order, so the hot path skips that no-op node.
            return picked.mean().neg()
        picked = picked.reshape([batch])
        if self.weights is not None:
            weights = self.weights.gather(0, targets)
            weighted = _mask_rows(picked * weights, mask)
            return weighted.sum().neg() / weights.sum()
        return _mask_rows(picked, mask).mean().neg()

    def _forward_smoothed(self, logits: Tensor, targets: Tensor, alpha: float) -> Tensor:
        mask = self._padding_mask(targets)
        # No clamp here, unlike the default path (burn takes the log of the raw probabilities).
        logp = logits.log_softmax(1) if self.logits else logits.log()
        classes = logp.shape[1]
        onehot = np.zeros((targets.shape[0], classes), dtype=logp.dtype)
        np.put_along_axis(onehot, targets.numpy().reshape(-1, 1), 1, axis=1)
        tensor = logp * _constant(_smooth(onehot, alpha, classes), logp)
        if self.weights is not None:
            tensor = tensor * self.weights.reshape([1, classes])
            weights = self.weights.gather(0, targets)
            return _mask_rows(tensor, mask).sum().neg() / weights.sum()
        return _mask_rows(tensor, mask).sum_dim(1).mean().neg()


def _prob_floor(probs: Tensor) -> float:
    """burn's clamp for probabilities: sqrt of the dtype's smallest positive normal."""
    return math.sqrt(float(np.finfo(probs.dtype).tiny))


def _mask_rows(tensor: Tensor, mask: np.ndarray | None) -> Tensor:
    """Zero the rows of pad targets (burn's `mask_fill(mask, 0)`): no gradient flows there."""
    if mask is None:
        return tensor
    if tensor.ndim == 2:
        mask = np.broadcast_to(mask.reshape(-1, 1), tensor.shape)
    return tensor.mask_fill(Tensor._wrap(np.ascontiguousarray(mask), tensor.device), 0)


# ---- MSE ----------------------------------------------------------------------------------


class MseLoss(Module):
    """Mean squared error: `(pred - target)^2`, then mean (`Mean`, `Auto`) or sum (`Sum`).

    `BatchMean` raises (burn rejects it for MSE). PyTorch's `mse_loss` returns 0-d; this
    returns shape `[1]`.
    """

    def forward(self, logits: Tensor, targets: Tensor, reduction: Reduction) -> Tensor:
        tensor = self.forward_no_reduction(logits, targets)
        if reduction is Reduction.Mean or reduction is Reduction.Auto:
            return tensor.mean()
        if reduction is Reduction.Sum:
            return tensor.sum()
        raise ValueError(f"{reduction.name} reduction is not supported")

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The elementwise squared error, same shape as the inputs."""
        return logits.sub(targets).powi_scalar(2)


# ---- binary cross-entropy -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BinaryCrossEntropyLossConfig(Config):
    """burn's `BinaryCrossEntropyLossConfig`: per-class `weights`, `smoothing`, and
    `logits` (default **False**: inputs are probabilities)."""

    weights: Sequence[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device) -> BinaryCrossEntropyLoss:
        return BinaryCrossEntropyLoss(**_checked_fields(self, device))


class BinaryCrossEntropyLoss(Module):
    """Binary cross-entropy of `logits` against int `targets` of the same shape, mean over all
    elements.

    - probabilities (default): `(t - 1) * max(log1p(-p), -100) - t * max(log(p), -100)`; the
      -100 floor is the same as PyTorch's `binary_cross_entropy`;
    - `logits=True`: `(1 - t) * x - log_sigmoid(x)` (PyTorch: `binary_cross_entropy_with_logits`);
    - weights: rank 1 gathers `weights[target]` per element; rank > 1 weights the last dim
      (per class). PyTorch's `weight=` is an elementwise tensor instead.
    """

    def __init__(self, weights, smoothing, logits) -> None:
        self.weights = weights
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        self._assertions(logits, targets)
        shape = targets.shape
        target_values = targets.numpy().astype(logits.dtype)
        if self.smoothing is not None:
            classes = shape[-1] if len(shape) > 1 else 2
            target_values = _smooth(target_values, self.smoothing, classes)
        t = _constant(target_values, logits)
        if self.logits:
            loss = (t.neg() + 1.0) * logits - _log_sigmoid(logits)
        else:
            loss = (t - 1.0) * _log1p_neg(logits).clamp_min(-100.0) - t * logits.log().clamp_min(
                -100.0
            )
        if self.weights is not None:
            # rank > 1: one weight per class (last dim); rank 1: the weight of each target.
            per_class = len(shape) > 1
            loss = loss * (self.weights if per_class else self.weights.gather(0, targets))
        return loss.mean()

    def _assertions(self, logits: Tensor, targets: Tensor) -> None:
        logits_dims = list(logits.shape)
        targets_dims = list(targets.shape)
        if logits_dims != targets_dims:
            raise ValueError(
                f"Shape of targets ({targets_dims}) should correspond to outer shape of logits "
                f"({logits_dims})."
            )
        if self.weights is not None and len(targets_dims) > 1:
            weights_classes = self.weights.shape[0]
            targets_classes = targets_dims[-1]
            if weights_classes != targets_classes:
                raise ValueError(
                    f"The number of classes ({weights_classes}) does not match the weights "
                    f"provided ({targets_classes})."
                )


def _log_sigmoid(x: Tensor) -> Tensor:
    """burn's default `log_sigmoid`: `-max(-x, 0) - log(exp(-max(-x, 0)) + exp(-x - max))`,
    the log-sum-exp trick so large |x| neither overflows nor loses precision."""
    neg = x.neg()
    max_elem = neg.mask_fill(neg.lower_elem(0.0), 0.0)
    max_neg = max_elem.neg()
    z = max_neg.exp() + (neg - max_elem).exp()
    return max_neg - z.log()


def _log1p_neg(p: Tensor) -> Tensor:
    """`log1p(-p)` with the gradient of `log(1 - p)` (the same: -1 / (1 - p)).

    The core has no `log1p`; `log(1 - p)` loses digits for small p, so the exact log1p value
    is added as an untracked correction (exact by Sterbenz: both terms are within 2x).
    """
    approx = (p.neg() + 1.0).log()
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.log1p(-p.numpy())
        correction = np.where(np.isfinite(exact), exact - approx.numpy(), 0.0)
    if not correction.any():
        return approx
    return approx + _constant(correction, p)
