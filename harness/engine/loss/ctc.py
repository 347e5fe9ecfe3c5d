"""CTC loss (`crates/burn-nn/src/loss/ctc.rs`): burn-nn's assertions and `zero_infinity` around
`burn::tensor::module::ctc_loss` (`harness.engine.module_ops.ctc_loss`, burn-backend's
`ctc_loss_default` written in differentiable tensor ops, whose docstring states how it follows
burn), as burn's `CTCLoss::forward` calls it.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine import module_ops
from harness.engine.loss.reduction import (
    Reduction,
    checked_reduction,
    mask_constant,
    mean_or_sum,
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
        loss = module_ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank)
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
