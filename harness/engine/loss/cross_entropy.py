"""Cross-entropy (`crates/burn-nn/src/loss/cross_entropy.rs`), and the config checks it shares
with binary cross-entropy (smoothing alpha in [0, 1], positive weights, at `init()`).

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from harness.engine.loss.reduction import constant, f32, mask_constant
from harness.engine.module import Config, Module, rust_float
from harness.engine.ops.half import finfo
from harness.engine.tensor import Tensor

WEIGHTS_POSITIVE = "Weights of cross-entropy have to be positive."
SMOOTHING_RANGE = (
    "Alpha of Cross-entropy loss with smoothed labels should be in interval [0, 1]. Got {alpha}"
)
# Rust's panic for `pad_tokens[0]` on an empty Vec (burn's `padding_mask`, at forward).
EMPTY_PAD_TOKENS = "index out of bounds: the len is 0 but the index is 0"


def _f32_or_none(value: float | None) -> float | None:
    """burn stores `smoothing` as an f32: round once, at `init()`."""
    return None if value is None else f32(value)


def checked_fields(config, device) -> dict:
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


def smooth(targets: np.ndarray, alpha: float, classes: int) -> np.ndarray:
    """burn's label smoothing `targets * (1 - alpha) + alpha / C`: f32 scalars (as burn's
    fields), cast to the targets' dtype before the tensor ops."""
    dt = targets.dtype.type
    a32 = np.float32(alpha)
    return targets * dt(np.float32(1.0) - a32) + dt(a32 / np.float32(classes))


def _weights_tensor(weights: Sequence[float] | None, device) -> Tensor | None:
    if weights is None:
        return None
    return Tensor.from_numpy(np.asarray(weights, dtype=np.float32), device)


def _checked_pad_tokens(pad_tokens) -> tuple[int, ...] | None:
    """burn's `Option<Vec<usize>>`: None or non-negative integers (an empty list is accepted
    here and fails at `forward`, as in burn)."""
    if pad_tokens is None:
        return None
    tokens = tuple(pad_tokens)
    if not all(
        isinstance(t, int | np.integer) and not isinstance(t, bool) and t >= 0 for t in tokens
    ):
        raise TypeError(
            f"pad_tokens must be non-negative integers (burn's Vec<usize>), got {pad_tokens!r}"
        )
    return tuple(int(t) for t in tokens)


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
        fields = checked_fields(self, device)
        return CrossEntropyLoss(pad_tokens=_checked_pad_tokens(self.pad_tokens), **fields)


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
    - `pad_tokens=[]` raises at `forward` (burn indexes `pad_tokens[0]`: "index out of
      bounds"); PyTorch has a single `ignore_index`, no list;
    - the result has shape `[1]`, not 0-d.
    """

    def __init__(self, pad_tokens, weights, smoothing, logits) -> None:
        self.pad_tokens = pad_tokens
        self.weights = weights
        self.smoothing = smoothing
        self.logits = logits

    @staticmethod
    def new(pad_index: int | None, device) -> CrossEntropyLoss:
        """burn's backward-compatible `CrossEntropyLoss::new(pad_index, device)`: the default
        config with `pad_tokens=[pad_index]` when one is given."""
        pad_tokens = None if pad_index is None else [pad_index]
        return CrossEntropyLossConfig(pad_tokens=pad_tokens).init(device)

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
        if not self.pad_tokens:
            raise IndexError(EMPTY_PAD_TOKENS)
        return np.isin(targets.numpy(), np.asarray(self.pad_tokens, dtype=np.int64))

    def _forward_default(self, logits: Tensor, targets: Tensor) -> Tensor:
        (batch,) = targets.shape
        mask = self._padding_mask(targets)
        # burn's `targets.reshape([batch, 1])`, as an op (not a view of `_data`): a recorded
        # step (harness.engine.tape) replays it, so the labels of every call are gathered.
        indices = targets.reshape([batch, 1])
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
        tensor = logp * constant(smooth(onehot, alpha, classes), logp)
        if self.weights is not None:
            tensor = tensor * self.weights.reshape([1, classes])
            weights = self.weights.gather(0, targets)
            return _mask_rows(tensor, mask).sum().neg() / weights.sum()
        return _mask_rows(tensor, mask).sum_dim(1).mean().neg()


def _prob_floor(probs: Tensor) -> float:
    """burn's clamp for probabilities: sqrt of the dtype's smallest positive normal."""
    return math.sqrt(float(finfo(probs.dtype).tiny))


def _mask_rows(tensor: Tensor, mask: np.ndarray | None) -> Tensor:
    """Zero the rows of pad targets (burn's `mask_fill(mask, 0)`): no gradient flows there."""
    if mask is None:
        return tensor
    if tensor.ndim == 2:
        mask = np.broadcast_to(mask.reshape(-1, 1), tensor.shape)
    return tensor.mask_fill(mask_constant(mask, tensor), 0)
