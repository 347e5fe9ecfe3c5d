"""CTC loss (`crates/burn-nn/src/loss/ctc.rs`), on flex: burn's `ctc_loss_default`
(`crates/burn-backend/src/backend/ops/modules/ctc.rs`), the forward (alpha) recursion written
in differentiable tensor ops, so its gradient is autodiff's through those ops (flex has no
`ctc_loss_backward`: `has_ctc_loss_backward()` is false, see `burn-autodiff/src/ops/module.rs`).

The same ops in the same order, with two changes that keep values and gradients: the t = 0 row
of alpha, which burn writes with two `slice_assign`s into a -inf tensor, is a `cat` of the two
gathered values and -inf padding; and the full alpha history (`AlphaCtx::full`), which burn
fills at every step but never reads for the loss, is not built. The integer bookkeeping
(blank-inserted targets, masks, indices) carries no gradient and is computed in NumPy.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine.loss.reduction import (
    NEG_INF,
    Reduction,
    checked_reduction,
    index_constant,
    mask_constant,
    mean_or_sum,
    neg_inf_constant,
)
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor


@dataclasses.dataclass(frozen=True)
class CTCLossConfig(Config):
    """burn's `CTCLossConfig`: `blank` (default 0) and `zero_infinity` (default False).
    `init()` takes no device."""

    blank: int = 0
    zero_infinity: bool = False

    def init(self) -> CTCLoss:
        return CTCLoss(int(self.blank), self.zero_infinity)


class CTCLoss(Module):
    """Connectionist temporal classification of log-probabilities `[T, N, C]` against padded
    int targets `[N, S]` with per-sample `input_lengths` and `target_lengths` `[N]`.

    PyTorch differences (`F.ctc_loss`, see the `losses` case):
    - `forward` returns the per-sample losses (PyTorch's `reduction="none"`);
      `forward_with_reduction` takes the reduction; the reduced result is `[1]`, not 0-d;
    - the `Mean` reduction divides by the raw target lengths: a zero-length target gives
      inf/NaN where PyTorch clamps the lengths at 1;
    - the gradient w.r.t. `log_probs` is the derivative of burn's recursion, `-posterior`
      (autodiff through it). PyTorch's alpha-beta kernel returns `exp(log_probs) * g -
      posterior`: it assumes `log_probs` come from `log_softmax`, whose backward cancels that
      term. Through `log_softmax` the two gradients agree (rounded differently).
    """

    def __init__(self, blank: int, zero_infinity: bool) -> None:
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor
    ) -> Tensor:
        """The loss of each sample, shape `[N]` (`zero_infinity`: infinite losses become 0)."""
        if log_probs.ndim != 3 or targets.ndim != 2:
            raise ValueError(
                f"CTCLoss: log_probs must be [T, N, C] and targets [N, S], got shapes "
                f"{list(log_probs.shape)} and {list(targets.shape)}"
            )
        max_input_length, batch_size, num_classes = log_probs.shape
        il, tl = input_lengths.numpy(), target_lengths.numpy()
        self._assertions(batch_size, num_classes, targets, il.shape[0], tl.shape[0])
        _length_assertions(il, tl, targets.shape[1], max_input_length)
        loss = _ctc_loss_default(log_probs, targets.numpy(), il, tl, self.blank)
        if self.zero_infinity:
            inf_mask = mask_constant(np.isinf(loss.numpy()), loss)
            loss = loss.mask_where(inf_mask, loss.zeros_like())
        return loss

    def forward_with_reduction(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
        reduction,
    ) -> Tensor:
        """`Mean`/`Auto`: each loss divided by its target length, then the mean (PyTorch's
        rule, without its clamp at 1); `Sum`: the sum. Shape `[1]`."""
        reduction = checked_reduction(reduction)
        loss = self.forward(log_probs, targets, input_lengths, target_lengths)
        if reduction is Reduction.Auto or reduction is Reduction.Mean:
            return loss.div(target_lengths.float(loss.dtype)).mean()
        return mean_or_sum(loss, reduction)

    def _assertions(self, batch_size, num_classes, targets, input_lengths_len, target_lengths_len):
        """burn's `assertions` (the `assert_eq!` messages without Rust's left/right lines)."""
        if not self.blank < num_classes:
            raise ValueError(
                f"blank index {self.blank} must be less than num_classes {num_classes}"
            )
        checks = (
            ("targets batch dimension", targets.shape[0]),
            ("input_lengths length", input_lengths_len),
            ("target_lengths length", target_lengths_len),
        )
        for what, size in checks:
            if size != batch_size:
                raise ValueError(f"{what} {size} must equal batch_size {batch_size}")


def _length_assertions(input_lengths, target_lengths, max_target_len, max_input_length):
    """burn's `length_assertions` (run in debug builds, as burn's own tests do)."""
    for i, (tl, il) in enumerate(zip(target_lengths.tolist(), input_lengths.tolist(), strict=True)):
        if tl < 0:
            raise ValueError(f"target_lengths[{i}] = {tl} must be non-negative")
        if tl > max_target_len:
            raise ValueError(
                f"target_lengths[{i}] = {tl} exceeds the targets tensor width {max_target_len}"
            )
        if il < tl:
            raise ValueError(
                f"input_lengths[{i}] = {il} must be >= target_lengths[{i}] = {tl} "
                "(no valid CTC alignment otherwise)"
            )
        if il > max_input_length:
            raise ValueError(
                f"input_lengths[{i}] = {il} exceeds the log_probs time dimension {max_input_length}"
            )


def _ctc_loss_default(log_probs, targets, input_lengths, target_lengths, blank) -> Tensor:
    """burn's `ctc_loss_default`: the alpha recursion, then `extract_loss`."""
    max_input_length, batch_size, num_classes = log_probs.shape
    max_target_len = targets.shape[1]
    max_l_prime_len = 2 * max_target_len + 1
    l_prime = np.full((batch_size, max_l_prime_len), blank, dtype=np.int64)
    l_prime[:, 1::2] = targets

    # alpha[0, :, 0] = log_probs[0, :, blank], alpha[0, :, 1] = log_probs[0, :, l'[1]].
    log_probs_t0 = log_probs.slice([(0, 1), None, None]).reshape([batch_size, num_classes])
    row0 = [
        log_probs_t0.gather(1, index_constant(l_prime[:, 0:1], log_probs)).reshape(
            [1, batch_size, 1]
        )
    ]
    if max_l_prime_len > 1:
        first = log_probs_t0.gather(1, index_constant(l_prime[:, 1:2], log_probs))
        row0.append(first.reshape([1, batch_size, 1]))
    if max_l_prime_len > 2:
        row0.append(neg_inf_constant((1, batch_size, max_l_prime_len - 2), log_probs))
    log_alpha = Tensor.cat(row0, 2).reshape([batch_size, max_l_prime_len])

    cols = np.arange(max_l_prime_len)
    shifted = np.concatenate([np.full((batch_size, 2), blank), l_prime[:, :-2]], axis=1)
    skip = (l_prime != blank) & (l_prime != shifted[:, :max_l_prime_len]) & (cols >= 2)
    l_prime_mask = mask_constant(skip, log_probs)
    s_mask = cols[None, :] < (2 * target_lengths + 1)[:, None]
    t_mask = input_lengths[None, :] > np.arange(max_input_length)[:, None]
    combined_all = t_mask[:, :, None] & s_mask[None, :, :]

    pad_1 = neg_inf_constant((batch_size, 1), log_probs)
    pad_2 = neg_inf_constant((batch_size, 2), log_probs)
    indices_3d = np.broadcast_to(l_prime, (max_input_length, batch_size, max_l_prime_len))
    log_probs_at_l_full = log_probs.gather(2, index_constant(indices_3d, log_probs))

    for t in range(1, max_input_length):
        combined = mask_constant(combined_all[t], log_probs)
        s_m1 = _right_shift(log_alpha, pad_1, max_l_prime_len, 1)
        s_m2 = _right_shift(log_alpha, pad_2, max_l_prime_len, 2)
        bar = _log_sum_exp(log_alpha, s_m1)
        bar_with_skip = _log_sum_exp(bar, s_m2)
        log_alpha_combined = bar.mask_where(l_prime_mask, bar_with_skip)
        log_probs_at_l = log_probs_at_l_full.slice([(t, t + 1), None, None]).reshape(
            [batch_size, max_l_prime_len]
        )
        log_alpha = log_alpha.mask_where(combined, log_alpha_combined + log_probs_at_l)
    return _extract_loss(log_alpha, target_lengths)


def _extract_loss(log_alpha: Tensor, target_lengths: np.ndarray) -> Tensor:
    """`-logsumexp(alpha[T-1, 2 L], alpha[T-1, 2 L - 1])` (the second -inf when L = 0)."""
    batch_size = log_alpha.shape[0]
    last_blank = (2 * target_lengths).reshape(batch_size, 1)
    last_label = np.maximum(last_blank - 1, 0)
    at_blank = log_alpha.gather(1, index_constant(last_blank, log_alpha)).reshape([batch_size])
    at_label = log_alpha.gather(1, index_constant(last_label, log_alpha)).reshape([batch_size])
    at_label = at_label.mask_fill(mask_constant(target_lengths == 0, at_label), NEG_INF)
    return _log_sum_exp(at_blank, at_label).neg()


def _right_shift(tensor: Tensor, padding: Tensor, cols: int, shift: int) -> Tensor:
    """burn's `right_shift`: `shift` columns of -inf, then the first `cols - shift` columns."""
    if cols < shift:
        return padding.slice([None, (0, cols)])
    if cols == shift:  # burn cats an empty slice; the engine's slice refuses empty ranges
        return padding
    return Tensor.cat([padding, tensor.slice([None, (0, cols - shift)])], 1)


def _log_sum_exp(a: Tensor, b: Tensor) -> Tensor:
    """burn's CTC `log_sum_exp`: `max(a, b) + log1p(exp(-|a - b|))`, -inf inputs replaced by 0
    in the difference so that no NaN reaches the gradient."""
    a_inf, b_inf = a.equal_elem(NEG_INF), b.equal_elem(NEG_INF)
    either = mask_constant(np.logical_or(a_inf.numpy(), b_inf.numpy()), a)
    a_safe, b_safe = a.mask_fill(a_inf, 0.0), b.mask_fill(b_inf, 0.0)
    mx = a.mask_where(a.lower(b), b)
    diff = (a_safe - b_safe).abs().neg().mask_fill(either, NEG_INF)
    return mx + diff.exp().log1p()
