"""RNN Transducer loss (`crates/burn-nn/src/loss/rnnt.rs`, Graves 2012,
https://arxiv.org/abs/1211.3711): the negative log-likelihood over the (T, U) lattice of encoder
steps and output labels, marginalised over every alignment.

burn writes the forward (alpha) recursion in differentiable tensor ops, so its gradient is
autodiff's through those ops; this module runs the same ops in the same order (`slice`,
`gather`, `cat`, `cumsum`, `mask_where`, `slice_assign`, `max_pair`, `gather_nd`...). The
integer bookkeeping (expanded targets, the u mask, the valid-time masks and the gather
coordinates), which carries no gradient, is computed in NumPy.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine.loss.reduction import (
    NEG_INF,
    checked_reduction,
    constant,
    index_constant,
    mask_constant,
    mean_or_sum,
    neg_inf_constant,
)
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

_VOCAB_DIM = 3  # the last dim of [B, T, U+1, V]


@dataclasses.dataclass(frozen=True)
class RNNTLossConfig(Config):
    """burn's `RNNTLossConfig`: `blank` (default 0) and `logits` (default True: a log-softmax
    over the vocabulary is applied first; False: the input is log-probabilities already).
    `init()` takes no device."""

    blank: int = 0
    logits: bool = True

    def init(self) -> RNNTLoss:
        return RNNTLoss(int(self.blank), bool(self.logits))


class RNNTLoss(Module):
    """RNN-T loss of joiner outputs `[B, T, U+1, V]` against int targets `[B, U]` (no blank
    among them) with per-sample `logit_lengths` and `target_lengths` `[B]`.

    PyTorch has no RNN-T loss (torchaudio's `rnnt_loss` is outside PyTorch). Against
    torchaudio's conventions:
    - `forward` returns the per-sample losses `[B]` (torchaudio's `reduction="none"`);
      `forward_with_reduction` takes the reduction: `Mean`/`Auto` the plain mean over the
      batch (as torchaudio's `"mean"`), `Sum` the sum; the reduced result is `[1]`, not 0-d;
    - the gradient is autodiff's through burn's recursion; at an exact tie of the two paths
      into a lattice point it is not the derivative (see `_log_sum_exp`);
    - an index outside the lattice (a length of 0, a target length above U or a logit length
      above T) raises IndexError from `gather_nd`, where flex's kernel does not check.
    """

    def __init__(self, blank: int, logits: bool) -> None:
        self.blank = blank
        self.logits = logits

    def forward(
        self, logits: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor
    ) -> Tensor:
        """The loss of each sample, shape `[B]`."""
        if logits.ndim != 4 or targets.ndim != 2:
            raise ValueError(
                f"RNNTLoss: logits must be [B, T, U+1, V] and targets [B, U], got shapes "
                f"{list(logits.shape)} and {list(targets.shape)}"
            )
        b, max_t, max_up1, v = logits.shape
        self._check_inputs(b, v, targets, logit_lengths, target_lengths, max_up1 - 1)
        log_probs = logits.log_softmax(_VOCAB_DIM) if self.logits else logits
        lpb, lpl = self._extract_log_probs(log_probs, targets.numpy())
        tl, il = target_lengths.numpy(), logit_lengths.numpy()
        u_mask = mask_constant(np.arange(max_up1)[None, :] <= tl[:, None], logits)
        neg_inf = neg_inf_constant((b, max_up1), logits)

        alpha = neg_inf.mask_where(u_mask, _init_alpha(lpl, b, max_up1))
        for t in range(1, max_t):
            new = neg_inf.mask_where(u_mask, _step_alpha(alpha, lpb, lpl, t))
            # Only samples with t < logit_lengths[b] move on.
            valid = mask_constant(np.broadcast_to((il > t)[:, None], (b, max_up1)), logits)
            alpha = alpha.mask_where(valid, new)
        return _gather_loss(alpha, lpb, il, tl)

    def forward_with_reduction(
        self,
        logits: Tensor,
        targets: Tensor,
        logit_lengths: Tensor,
        target_lengths: Tensor,
        reduction,
    ) -> Tensor:
        """`Mean`/`Auto`: the mean of the per-sample losses; `Sum`: their sum. Shape `[1]`;
        `BatchMean` raises burn's "BatchMean reduction is not supported"."""
        reduction = checked_reduction(reduction)
        loss = self.forward(logits, targets, logit_lengths, target_lengths)
        return mean_or_sum(loss, reduction)

    def _check_inputs(self, b, v, targets, logit_lengths, target_lengths, max_u) -> None:
        """burn's `check_inputs` (the `assert_eq!` messages without Rust's left/right lines)."""
        if not self.blank < v:
            raise ValueError(f"blank index {self.blank} must be less than vocab_size {v}")
        checks = (
            (targets.shape[0], b, "targets batch dimension {} must equal batch_size {}"),
            (
                targets.shape[1],
                max_u,
                "targets length dimension {} must equal max_target_len (max_u) {}",
            ),
            (logit_lengths.shape[0], b, "logit_lengths length {} must equal batch_size {}"),
            (target_lengths.shape[0], b, "target_lengths length {} must equal batch_size {}"),
        )
        for size, expected, message in checks:
            if size != expected:
                raise ValueError(message.format(size, expected))

    def _extract_log_probs(self, log_probs: Tensor, targets: np.ndarray) -> tuple[Tensor, Tensor]:
        """burn's `extract_log_probs`: blank log-probs `[B, T, U+1]` (a slice of the vocab
        dim) and the targets' log-probs `[B, T, U]` (a gather over the first U positions)."""
        b, max_t, max_up1, v = log_probs.shape
        max_u = max_up1 - 1
        lpb = log_probs.slice([None, None, None, (self.blank, self.blank + 1)])
        lpb = lpb.squeeze_dim(_VOCAB_DIM)
        tgt = np.broadcast_to(targets.reshape(b, 1, max_u, 1), (b, max_t, max_u, 1))
        lpl = log_probs.slice([None, None, (0, max_u), (0, v)]).gather(
            _VOCAB_DIM, index_constant(tgt, log_probs)
        )
        return lpb, lpl.squeeze_dim(_VOCAB_DIM)


def _init_alpha(lpl: Tensor, b: int, max_up1: int) -> Tensor:
    """burn's `init_alpha`: `alpha(0, 0) = 0`, then the cumulative sum of the t = 0 label
    log-probs along u."""
    lpl_0 = lpl.slice([None, (0, 1), None]).squeeze_dim(1)
    zero_col = constant(np.zeros((b, 1)), lpl)
    prefix = Tensor.cat([zero_col, lpl_0.slice([None, (0, max_up1 - 1)])], 1)
    return prefix.cumsum(1)


def _step_alpha(alpha: Tensor, lpb: Tensor, lpl: Tensor, t: int) -> Tensor:
    """burn's `step_alpha`, one time step of the recursion:
    `alpha(t, u) = logaddexp(alpha(t-1, u) + blank(t-1, u), alpha(t, u-1) + label(t, u-1))`,
    written column by column with `slice_assign` into a -inf tensor."""
    b, max_up1 = alpha.shape
    blank_prob = lpb.slice([None, (t - 1, t), None]).squeeze_dim(1)
    from_blank = alpha.add(blank_prob)
    new = neg_inf_constant((b, max_up1), alpha)
    new = new.slice_assign([None, (0, 1)], from_blank.slice([None, (0, 1)]))
    label_prob = lpl.slice([None, (t, t + 1), None]).squeeze_dim(1)
    for u in range(1, max_up1):
        via_blank = from_blank.slice([None, (u, u + 1)])
        via_label = new.slice([None, (u - 1, u)]).add(label_prob.slice([None, (u - 1, u)]))
        new = new.slice_assign([None, (u, u + 1)], _log_sum_exp(via_blank, via_label))
    return new


def _gather_loss(alpha: Tensor, lpb: Tensor, logit_lengths, target_lengths) -> Tensor:
    """burn's `gather_loss`: `-(alpha(T_b, U_b) + blank(T_b - 1, U_b))` per sample, read with
    `gather_nd` at `(b, U_b)` and `(b, T_b - 1, U_b)`."""
    b = alpha.shape[0]
    b_idx = np.arange(b)
    u_idx = np.asarray(target_lengths, dtype=np.int64)
    t_idx = np.asarray(logit_lengths, dtype=np.int64) - 1
    alpha_tu = alpha.gather_nd(index_constant(np.stack([b_idx, u_idx], 1), alpha))
    lpb_tu = lpb.gather_nd(index_constant(np.stack([b_idx, t_idx, u_idx], 1), lpb))
    return alpha_tu.add(lpb_tu).neg()


def _log_sum_exp(a: Tensor, b: Tensor) -> Tensor:
    """burn's RNN-T `log_sum_exp`: `max(a, b) + log(1 + exp(-|a - b|))` on `a`, `b` with -inf
    replaced by 0, then `b` where `a` is -inf and `a` where `b` is -inf (so -inf inputs give no
    NaN, in the value or the gradient).

    PyTorch difference (`torch.logaddexp`, the `losses` case's reference): at an exact tie
    `a == b` the gradient is not the derivative (1/2 to each): `max_pair` sends all of it to
    `a` and `abs`'s subgradient at 0 is 0, so `a` gets 1 and `b` 0 (burn's own op rules). In
    the lattice a tie of the two paths into a point (equally likely alignments) puts the whole
    gradient on the path through the blank step. `exp(.).add_scalar(1).log()` instead of
    `log1p` could round differently; on the case's inputs the losses are bit-identical.
    """
    a_inf, b_inf = a.equal_elem(NEG_INF), b.equal_elem(NEG_INF)
    a_safe, b_safe = a.mask_fill(a_inf, 0.0), b.mask_fill(b_inf, 0.0)
    mx = a_safe.max_pair(b_safe)
    result = mx.add(a_safe.sub(b_safe).abs().neg().exp().add_scalar(1.0).log())
    return result.mask_where(a_inf, b).mask_where(b_inf, a)
