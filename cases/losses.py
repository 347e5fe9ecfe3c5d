"""Every loss of burn 0.22's ``burn-nn`` against its PyTorch counterpart:
the loss and its gradient w.r.t. each float input. (Cross-entropy, MSE and binary
cross-entropy on probabilities are in ``cross_entropy_variants``.)

Agree (same formula; rounding order may differ): Huber, smooth L1 (reduced and over dims), Lp
for p = 1, 2, 0.5 and 3 (against ``l1_loss``, ``mse_loss`` and ``abs().pow(p)``; at a zero
error with p = 0.5 both gradients are NaN), KL divergence with ``BatchMean`` / ``log_target``,
Poisson NLL (log input, probabilities, Stirling term), Gaussian NLL, hinge embedding for
targets in {-1, 1}, margin ranking off the margin, soft margin, multi-margin (p = 1, 2),
cosine embedding, CTC (the losses, and the gradients through ``log_softmax``), RNN-T (against
a log-space alpha recursion written in torch ops with ``torch.logaddexp``: PyTorch has no RNN-T
loss; per sample, mean and sum on logits, and on log-probabilities), and binary
cross-entropy on confident logits (flex's log-sigmoid gives ``exp(-20)``, not 0, checked to a
relative 1e-5).

Differ, each documented by the engine class named in its check:

- KL ``Reduction.Auto`` is burn's batch mean: ``C`` times PyTorch's default ``"mean"``; a target
  above 1 is clamped to 1 inside the log (PyTorch: ``t log t``); a negative target is finite
  (PyTorch: NaN);
- Gaussian NLL: where ``var < eps`` the gradient w.r.t. ``var`` is 0 (burn's clamp is tracked,
  PyTorch clamps under ``no_grad``); a negative ``var`` is clamped (PyTorch raises);
- hinge embedding with a target of 0: PyTorch adds ``x``, burn does not;
- margin ranking on the margin: burn's ``relu`` gives gradient 0, PyTorch's ``clamp_min`` 1;
- soft margin for ``y x`` = 20 and 25: burn's ``log(exp(z) + 1)`` is exactly 0, PyTorch's
  ``log1p`` is ``exp(z)``; gradients agree;
- triplet margin: PyTorch's distance adds eps = 1e-6 to the difference, burn's does not (the
  losses follow the two float64 formulas); at a zero anchor-positive distance the engine's
  gradient is NaN;
- cosine embedding with an all-zero row: the engine's gradient is NaN there;
- CTC: w.r.t. ``log_probs`` PyTorch's kernel returns ``exp(log_probs) * g`` more than the
  derivative (a term ``log_softmax``'s backward cancels; through it both agree), and the
  ``Mean`` reduction divides by a zero target length (PyTorch clamps it at 1);
- RNN-T at an exact tie of two alignments (burn's uniform ``single_token_uniform_probs``
  input): ``logaddexp`` splits the gradient over both paths, burn's ``log_sum_exp`` (through
  ``max_pair`` and ``abs``) sends it all to the path through the blank step; the losses agree;
- burn rejects at ``init()`` what PyTorch accepts: smooth L1 with beta 0, Poisson eps 0,
  margin ranking and multi-margin with a negative margin; Poisson NLL rejects negative targets
  at ``forward``.

``CrossEntropyLossConfig(pad_tokens=[])`` raises burn's index-out-of-bounds message at
``forward`` (PyTorch has no list of pad tokens).
"""

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import (
    agree,
    capture,
    differ,
    expect,
    predicate,
    raises_message,
    raises_vs_value,
    scaled,
)
from harness.engine import (
    BinaryCrossEntropyLossConfig,
    CosineEmbeddingLossConfig,
    CrossEntropyLossConfig,
    CTCLossConfig,
    Device,
    GaussianNLLLossConfig,
    HingeEmbeddingLossConfig,
    HuberLossConfig,
    KLDivLossConfig,
    LpLossConfig,
    MarginRankingLossConfig,
    MultiMarginLossConfig,
    PoissonNllLossConfig,
    Reduction,
    RNNTLossConfig,
    SmoothL1LossConfig,
    SoftMarginLoss,
    Tensor,
    TripletMarginLossConfig,
)
from harness.engine.loss.cross_entropy import EMPTY_PAD_TOKENS
from harness.tolerances import Tolerance

# Inputs from float64 formulas rounded to float32 once, so both sides start bit-identical.
_B = np.arange(6).reshape(2, 3)
PRED = (0.4 * _B - 1.1).astype(np.float32)
TARGET = (0.25 * ((5 * _B) % 7) - 0.5).astype(np.float32)  # residual t - p = 0.5 exactly once
SIGNS = np.where(_B % 3 == 1, -1.0, 1.0).astype(np.float32)
ZERO_ONE_SIGNS = np.where(_B % 3 == 2, 0.0, SIGNS).astype(np.float32)  # a target of 0 per row
PROBS = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=np.float32)
LOG_PRED = np.log(np.array([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])).astype(np.float32)
ABOVE_ONE = np.array([[0.5, 2.0, 0.0], [3.0, 0.25, 1.0]], dtype=np.float32)
NEGATIVE = np.array([[0.5, -0.25, 0.75], [0.2, 0.3, -0.5]], dtype=np.float32)
COUNTS = np.array([[0.0, 1.0, 3.0], [2.0, 5.0, 1.0]], dtype=np.float32)
VAR = (0.3 + 0.2 * _B).astype(np.float32)
SMALL_VAR = np.array([[1e-8, 0.5, 2e-7], [0.3, 1e-9, 1.5]], dtype=np.float32)
EPS = 1e-6  # GaussianNLLLossConfig's and F.gaussian_nll_loss's default
CLAMPED = SMALL_VAR < EPS
SMALL_VAR_TARGET = np.where(CLAMPED, PRED, TARGET)  # no error where var is clamped: moderate loss
FIRST = (0.3 * _B - 0.4).astype(np.float32)
SECOND = (0.5 - 0.2 * _B).astype(np.float32)
ON_MARGIN = np.array([[0.5, 1.0, 2.0], [1.5, 0.0, -1.0]], dtype=np.float32)
ON_MARGIN_SECOND = np.array([[0.25, 1.5, 1.0], [1.0, 0.5, -0.75]], dtype=np.float32)
ON_MARGIN_TARGET = np.array([[1.0, -1.0, 1.0], [1.0, 1.0, -1.0]], dtype=np.float32)
RANK_MARGIN = 0.25  # row 0, col 0 and row 1, col 2 sit exactly on it
SOFT_LOGITS = np.array([[0.5, -1.5, 2.0], [20.0, -25.0, 0.25]], dtype=np.float32)
SOFT_TARGETS = np.array([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0]], dtype=np.float32)
CONFIDENT = {(1, 0), (1, 1)}  # y * x = 20 and 25
_C = np.arange(12).reshape(3, 4)
SCORES = (0.15 * ((7 * _C) % 11) - 0.6).astype(np.float32)
CLASSES = np.array([2, 0, 3], dtype=np.int64)
_T = np.arange(16).reshape(2, 8)
ANCHOR = (0.1 * _T).astype(np.float32)
POSITIVE = (0.1 * _T - 1.5).astype(np.float32)  # a - p = +1.5 everywhere
NEGATIVE_EMB = (0.1 * _T + 0.9 + 0.05 * (_T % 3)).astype(np.float32)  # a - n < 0 everywhere
TRIPLET_MARGIN = 3.0
_E = np.arange(12).reshape(3, 4)
X1 = (0.2 * ((3 * _E) % 7) - 0.5).astype(np.float32)
X2 = (0.3 * ((5 * _E) % 6) - 0.7).astype(np.float32)
PAIR_TARGETS = np.array([1, -1, -1], dtype=np.int64)
X1_ZERO_ROW = X1.copy()
X1_ZERO_ROW[1] = 0.0
_L = np.arange(6 * 2 * 4).reshape(6, 2, 4)
_Z = np.sin(0.37 * _L + 0.5)
CTC_LOGITS = _Z.astype(np.float32)  # [T, N, C]
LOG_PROBS = (_Z - np.log(np.exp(_Z).sum(axis=2, keepdims=True))).astype(np.float32)
CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0]], dtype=np.int64)
CTC_INPUT_LENGTHS = np.array([6, 5], dtype=np.int64)
CTC_TARGET_LENGTHS = np.array([3, 2], dtype=np.int64)
CTC_EMPTY_TARGET_LENGTHS = np.array([3, 0], dtype=np.int64)
_R = np.arange(2 * 4 * 3 * 4).reshape(2, 4, 3, 4)
RNNT_LOGITS = np.sin(0.23 * _R + 0.3 * np.cos(1.7 * _R)).astype(np.float32)  # [B, T, U+1, V]
RNNT_LOG_PROBS = (
    RNNT_LOGITS - np.log(np.exp(RNNT_LOGITS.astype(np.float64)).sum(axis=3, keepdims=True))
).astype(np.float32)
RNNT_TARGETS = np.array([[1, 2], [3, 0]], dtype=np.int64)  # sample 1 uses one label
RNNT_LOGIT_LENGTHS = np.array([4, 3], dtype=np.int64)
RNNT_TARGET_LENGTHS = np.array([2, 1], dtype=np.int64)
# burn's `single_token_uniform_probs` input: [1, 2, 2, 2] log-probs of 1/2, target [1]. Its two
# alignments are equally likely: at (t, u) = (1, 1) the two paths in tie exactly.
RNNT_TIE_LOG_PROBS = np.full((1, 2, 2, 2), math.log(0.5), dtype=np.float32)
BCE_CONFIDENT = np.array([[20.0, -20.0, 16.0], [-18.0, 25.0, -30.0]], dtype=np.float32)
BCE_CONFIDENT_TARGETS = (BCE_CONFIDENT > 0).astype(np.int64)


# ---- PyTorch side ---------------------------------------------------------------------------


def _torch(fn, inputs, tracked=("input",)):
    """{"loss", "grad.<name>" for each tracked input}; the loss reshaped to burn's [1]."""
    ts = {k: torch.tensor(v, requires_grad=k in tracked) for k, v in inputs.items()}
    loss = fn(**ts)
    loss.sum().backward()
    out = {"loss": loss.reshape(1) if loss.dim() == 0 else loss}
    out.update({f"grad.{k}": ts[k].grad for k in tracked})
    return out


def _value(fn):
    """The loss alone (for a value the engine rejects), or the error it raised."""

    def run():
        loss = fn()
        return loss.reshape(1) if loss.dim() == 0 else loss

    return capture(run)


def _t(array):
    return torch.from_numpy(array)


def torch_side():
    lp = {"input": PRED, "target": TARGET}
    gauss = {"input": PRED, "target": TARGET, "var": VAR}
    return {
        "huber": _torch(lambda input, target: F.huber_loss(input, target, delta=0.5), lp),
        "smooth_l1": {
            "mean": _torch(lambda input, target: F.smooth_l1_loss(input, target), lp),
            "reduce_dims": _torch(
                lambda input, target: F.smooth_l1_loss(input, target, reduction="none").mean(
                    1, keepdim=True
                ),
                lp,
            ),
            "beta_zero": _value(lambda: F.smooth_l1_loss(_t(PRED), _t(TARGET), beta=0.0)),
        },
        "lp": {
            "p1": _torch(lambda input, target: F.l1_loss(input, target), lp),
            "p2": _torch(lambda input, target: F.mse_loss(input, target), lp),
            "p_half": _torch(lambda input, target: (input - target).abs().pow(0.5).mean(), lp),
            "p3": _torch(lambda input, target: (input - target).abs().pow(3.0).sum(), lp),
            "p_half_zero_error": _torch(
                lambda input, target: (input - target).abs().pow(0.5).mean(),
                {"input": PRED, "target": PRED},
            ),
        },
        "kl_div": _torch_kl(),
        "poisson": _torch_poisson(),
        "gaussian": {
            "plain": _torch(F.gaussian_nll_loss, gauss, ("input", "var")),
            "full": _torch(
                lambda **a: F.gaussian_nll_loss(**a, full=True, reduction="sum"),
                gauss,
                ("input", "var"),
            ),
            "small_var": _torch(
                F.gaussian_nll_loss,
                {**gauss, "target": SMALL_VAR_TARGET, "var": SMALL_VAR},
                ("input", "var"),
            ),
            "negative_var": _value(
                lambda: F.gaussian_nll_loss(_t(PRED), _t(TARGET), _t(VAR - 1.0))
            ),
        },
        "hinge": {
            "pm_one": _torch(F.hinge_embedding_loss, {"input": PRED, "target": SIGNS}),
            "zero_target": _torch(
                lambda input, target: F.hinge_embedding_loss(input, target, reduction="sum"),
                {"input": PRED, "target": ZERO_ONE_SIGNS},
            ),
        },
        "margin_ranking": _torch_margin_ranking(),
        "soft_margin": {
            "plain": _torch(F.soft_margin_loss, {"input": PRED, "target": SIGNS}),
            "confident": _torch(
                lambda input, target: F.soft_margin_loss(input, target, reduction="none"),
                {"input": SOFT_LOGITS, "target": SOFT_TARGETS},
            ),
        },
        "multi_margin": {
            "p1": _torch(F.multi_margin_loss, {"input": SCORES, "target": CLASSES}),
            "p2": _torch(
                lambda input, target: F.multi_margin_loss(input, target, p=2, margin=0.5),
                {"input": SCORES, "target": CLASSES},
            ),
            "negative_margin": _value(
                lambda: F.multi_margin_loss(_t(SCORES), _t(CLASSES), margin=-0.5)
            ),
        },
        "triplet": _torch_triplet(),
        "cosine": _torch_cosine(),
        "ctc": _torch_ctc(),
        "rnnt": _torch_rnnt_cases(),
        "bce": {
            "confident_logits": _torch(
                lambda logits, targets: F.binary_cross_entropy_with_logits(logits, targets.float()),
                {"logits": BCE_CONFIDENT, "targets": BCE_CONFIDENT_TARGETS},
                ("logits",),
            )
        },
    }


def _torch_rnnt(log_probs, blank=0, lengths=None):
    """The RNN-T loss of each sample (PyTorch has none built in; torchaudio is not a
    dependency): Graves' alpha recursion in log space, written here in torch ops under
    autograd, `alpha(t, u) = logaddexp(alpha(t-1, u) + blank(t-1, u), alpha(t, u-1) +
    label(t, u-1))`, loss `-(alpha(T-1, U) + blank(T-1, U))`."""
    losses = []
    logit_lengths, target_lengths = lengths or (RNNT_LOGIT_LENGTHS, RNNT_TARGET_LENGTHS)
    for b, (t_len, u_len) in enumerate(zip(logit_lengths, target_lengths, strict=True)):
        lp, y = log_probs[b], RNNT_TARGETS[b]
        alpha = {}
        for t in range(t_len):
            for u in range(u_len + 1):
                paths = []
                if t > 0:
                    paths.append(alpha[t - 1, u] + lp[t - 1, u, blank])
                if u > 0:
                    paths.append(alpha[t, u - 1] + lp[t, u - 1, y[u - 1]])
                alpha[t, u] = (
                    lp.new_zeros(())
                    if not paths
                    else paths[0]
                    if len(paths) == 1
                    else torch.logaddexp(*paths)
                )
        losses.append(-(alpha[t_len - 1, u_len] + lp[t_len - 1, u_len, blank]))
    return torch.stack(losses)


def _torch_rnnt_cases():
    def from_logits(reduce):
        return lambda logits: reduce(_torch_rnnt(torch.log_softmax(logits, 3)))

    def same(x):
        return x

    logits = {"logits": RNNT_LOGITS}
    return {
        "none": _torch(from_logits(same), logits, ("logits",)),
        "mean": _torch(from_logits(torch.mean), logits, ("logits",)),
        "sum": _torch(from_logits(torch.sum), logits, ("logits",)),
        "log_probs": _torch(_torch_rnnt, {"log_probs": RNNT_LOG_PROBS}, ("log_probs",)),
        "tie": _torch(
            lambda log_probs: _torch_rnnt(log_probs, lengths=([2], [1])),
            {"log_probs": RNNT_TIE_LOG_PROBS},
            ("log_probs",),
        ),
    }


def _torch_ctc():
    def ctc(reduction, target_lengths=CTC_TARGET_LENGTHS):
        return lambda log_probs: F.ctc_loss(
            log_probs,
            _t(CTC_TARGETS),
            _t(CTC_INPUT_LENGTHS),
            _t(target_lengths),
            reduction=reduction,
        )

    def through_log_softmax(reduction):
        return lambda logits: ctc(reduction)(torch.log_softmax(logits, 2))

    tracked = ("log_probs",)
    return {
        "none": _torch(ctc("none"), {"log_probs": LOG_PROBS}, tracked),
        "mean": _torch(ctc("mean"), {"log_probs": LOG_PROBS}, tracked),
        "logits": _torch(through_log_softmax("none"), {"logits": CTC_LOGITS}, ("logits",)),
        "logits_mean": _torch(through_log_softmax("mean"), {"logits": CTC_LOGITS}, ("logits",)),
        "empty_target_mean": _torch(
            ctc("mean", CTC_EMPTY_TARGET_LENGTHS), {"log_probs": LOG_PROBS}, tracked
        ),
    }


def _torch_kl():
    kl = {"input": LOG_PRED, "target": PROBS}
    return {
        "batch_mean": _torch(lambda **a: F.kl_div(**a, reduction="batchmean"), kl),
        "auto": _torch(_kl_default_mean, kl),
        "log_target": _torch(
            lambda input, target: F.kl_div(input, target, reduction="sum", log_target=True),
            {"input": LOG_PRED, "target": np.log(PROBS)},
        ),
        "target_above_one": _torch(
            lambda **a: F.kl_div(**a, reduction="sum"), {"input": LOG_PRED, "target": ABOVE_ONE}
        ),
        "negative_target": _torch(
            lambda **a: F.kl_div(**a, reduction="sum"), {"input": LOG_PRED, "target": NEGATIVE}
        ),
    }


def _kl_default_mean(input, target):
    """`F.kl_div` with its default `reduction="mean"` (its warning about the default is the
    point of the check, so it is not repeated on every run)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="reduction: 'mean' divides", category=UserWarning)
        return F.kl_div(input, target)


def _torch_poisson():
    counts = {"input": PRED, "target": COUNTS}
    return {
        "log_input": _torch(F.poisson_nll_loss, counts),
        "probabilities": _torch(
            lambda input, target: F.poisson_nll_loss(input, target, log_input=False),
            {"input": VAR, "target": COUNTS},
        ),
        "full": _torch(lambda **a: F.poisson_nll_loss(**a, full=True, reduction="sum"), counts),
        "negative_target": _value(lambda: F.poisson_nll_loss(_t(PRED), _t(NEGATIVE))),
        "eps_zero": _value(
            lambda: F.poisson_nll_loss(_t(VAR), _t(COUNTS), log_input=False, eps=0.0)
        ),
    }


def _torch_margin_ranking():
    def ranking(margin, reduction="mean"):
        return lambda input1, input2, target: F.margin_ranking_loss(
            input1, input2, target, margin=margin, reduction=reduction
        )

    return {
        "plain": _torch(
            ranking(0.15),
            {"input1": FIRST, "input2": SECOND, "target": SIGNS},
            ("input1", "input2"),
        ),
        "on_margin": _torch(
            ranking(RANK_MARGIN, "sum"),
            {"input1": ON_MARGIN, "input2": ON_MARGIN_SECOND, "target": ON_MARGIN_TARGET},
            ("input1", "input2"),
        ),
        "negative_margin": _value(
            lambda: F.margin_ranking_loss(_t(FIRST), _t(SECOND), _t(SIGNS), margin=-0.5)
        ),
    }


def _torch_triplet():
    triplet = {"anchor": ANCHOR, "positive": POSITIVE, "negative": NEGATIVE_EMB}
    zero = {**triplet, "positive": ANCHOR.copy()}
    tracked = ("anchor", "positive", "negative")
    return {
        "plain": _torch(
            lambda **a: F.triplet_margin_loss(**a, margin=TRIPLET_MARGIN, reduction="none"),
            triplet,
            tracked,
        ),
        "zero_distance": {
            k: v
            for k, v in _torch(
                lambda **a: F.triplet_margin_loss(**a, margin=TRIPLET_MARGIN), zero, tracked
            ).items()
            if k == "grad.anchor"
        },
    }


def _torch_cosine():
    def cosine(reduction):
        return lambda input1, input2, target: F.cosine_embedding_loss(
            input1, input2, target, margin=0.2, reduction=reduction
        )

    tracked = ("input1", "input2")
    return {
        "mean": _torch(
            cosine("mean"), {"input1": X1, "input2": X2, "target": PAIR_TARGETS}, tracked
        ),
        "sum": _torch(cosine("sum"), {"input1": X1, "input2": X2, "target": PAIR_TARGETS}, tracked),
        "zero_row": _torch(
            cosine("mean"), {"input1": X1_ZERO_ROW, "input2": X2, "target": PAIR_TARGETS}, tracked
        ),
    }


# ---- engine side ----------------------------------------------------------------------------

AD = Device.flex().autodiff()


def _engine(fn, inputs, tracked=("input",), nan_expected=False):
    """The engine's {"loss", "grad.<name>"}: tracked inputs are marked leaves, and burn's
    backward of a `[batch]` or `[1]` loss seeds it with ones (PyTorch: `loss.sum()`).
    `nan_expected` silences NumPy's warnings where the case shows a NaN gradient."""
    ts = {k: Tensor.from_numpy(v, AD) for k, v in inputs.items()}
    ts = {k: t.require_grad() if k in tracked else t for k, t in ts.items()}
    quiet = "ignore" if nan_expected else "warn"
    with np.errstate(divide=quiet, invalid=quiet):
        loss = fn(**ts)
        grads = loss.backward()
    return {"loss": loss, **{f"grad.{k}": ts[k].grad(grads) for k in tracked}}


def _e(array):
    return Tensor.from_numpy(array, AD)


def _reduced(loss, reduction):
    """`forward(..., reduction)` for losses whose arguments are named like PyTorch's."""
    return lambda input, target: loss.forward(input, target, reduction)


def engine_side():
    lp = {"input": PRED, "target": TARGET}
    mean, total = Reduction.Mean, Reduction.Sum
    huber = HuberLossConfig(0.5).init()
    smooth_l1 = SmoothL1LossConfig().init()
    return {
        "huber": _engine(_reduced(huber, mean), lp),
        "smooth_l1": {
            "mean": _engine(
                lambda input, target: smooth_l1.forward_with_reduction(input, target, mean), lp
            ),
            "reduce_dims": _engine(
                lambda input, target: smooth_l1.forward_reduce_dims(input, target, [1]), lp
            ),
            "beta_zero": capture(lambda: SmoothL1LossConfig(beta=0.0).init()),
        },
        "lp": {
            "p1": _engine(_reduced(LpLossConfig.l1(), mean), lp),
            "p2": _engine(_reduced(LpLossConfig.l2(), mean), lp),
            "p_half": _engine(_reduced(LpLossConfig(0.5).init(), mean), lp),
            "p3": _engine(_reduced(LpLossConfig(3.0).init(), total), lp),
            "p_half_zero_error": _engine(
                _reduced(LpLossConfig(0.5).init(), mean),
                {"input": PRED, "target": PRED},
                nan_expected=True,
            ),
        },
        "kl_div": _engine_kl(),
        "poisson": _engine_poisson(),
        "gaussian": _engine_gaussian(),
        "hinge": {
            "pm_one": _engine(
                _reduced(HingeEmbeddingLossConfig().init(), mean), {"input": PRED, "target": SIGNS}
            ),
            "zero_target": _engine(
                _reduced(HingeEmbeddingLossConfig().init(), total),
                {"input": PRED, "target": ZERO_ONE_SIGNS},
            ),
        },
        "margin_ranking": _engine_margin_ranking(),
        "soft_margin": {
            "plain": _engine(_reduced(SoftMarginLoss(), mean), {"input": PRED, "target": SIGNS}),
            "confident": _engine(
                lambda input, target: SoftMarginLoss().forward_no_reduction(input, target),
                {"input": SOFT_LOGITS, "target": SOFT_TARGETS},
            ),
        },
        "multi_margin": {
            "p1": _engine(
                _reduced(MultiMarginLossConfig().init(), mean), {"input": SCORES, "target": CLASSES}
            ),
            "p2": _engine(
                _reduced(MultiMarginLossConfig(margin=0.5, p=2).init(), mean),
                {"input": SCORES, "target": CLASSES},
            ),
            "negative_margin": capture(lambda: MultiMarginLossConfig(margin=-0.5).init()),
        },
        "triplet": _engine_triplet(),
        "cosine": _engine_cosine(),
        "bce": {
            "confident_logits": _engine(
                BinaryCrossEntropyLossConfig(logits=True).init(AD).forward,
                {"logits": BCE_CONFIDENT, "targets": BCE_CONFIDENT_TARGETS},
                ("logits",),
            )
        },
        "ctc": _engine_ctc(),
        "rnnt": _engine_rnnt(),
        "cross_entropy": {
            "empty_pad_tokens": capture(
                lambda: (
                    CrossEntropyLossConfig(pad_tokens=[]).init(AD).forward(_e(SCORES), _e(CLASSES))
                )
            )
        },
    }


def _engine_ctc():
    loss = CTCLossConfig().init()

    def ctc(reduction, target_lengths=CTC_TARGET_LENGTHS):
        args = (_e(CTC_TARGETS), _e(CTC_INPUT_LENGTHS), _e(target_lengths))
        if reduction is None:
            return lambda log_probs: loss.forward(log_probs, *args)
        return lambda log_probs: loss.forward_with_reduction(log_probs, *args, reduction)

    def through_log_softmax(reduction):
        return lambda logits: ctc(reduction)(logits.log_softmax(2))

    tracked = ("log_probs",)
    return {
        "none": _engine(ctc(None), {"log_probs": LOG_PROBS}, tracked),
        "mean": _engine(ctc(Reduction.Mean), {"log_probs": LOG_PROBS}, tracked),
        "logits": _engine(through_log_softmax(None), {"logits": CTC_LOGITS}, ("logits",)),
        "logits_mean": _engine(
            through_log_softmax(Reduction.Mean), {"logits": CTC_LOGITS}, ("logits",)
        ),
        "empty_target_mean": _engine(
            ctc(Reduction.Mean, CTC_EMPTY_TARGET_LENGTHS),
            {"log_probs": LOG_PROBS},
            tracked,
            nan_expected=True,
        ),
    }


def _engine_rnnt():
    args = (_e(RNNT_TARGETS), _e(RNNT_LOGIT_LENGTHS), _e(RNNT_TARGET_LENGTHS))
    fused = RNNTLossConfig().init()

    def reduced(reduction):
        return lambda logits: fused.forward_with_reduction(logits, *args, reduction)

    logits = {"logits": RNNT_LOGITS}
    on_log_probs = RNNTLossConfig(logits=False).init()
    return {
        "none": _engine(lambda logits: fused.forward(logits, *args), logits, ("logits",)),
        "mean": _engine(reduced(Reduction.Mean), logits, ("logits",)),
        "sum": _engine(reduced(Reduction.Sum), logits, ("logits",)),
        "log_probs": _engine(
            lambda log_probs: on_log_probs.forward(log_probs, *args),
            {"log_probs": RNNT_LOG_PROBS},
            ("log_probs",),
        ),
        "tie": _engine(
            lambda log_probs: on_log_probs.forward(
                log_probs, _e(RNNT_TARGETS[:1, :1]), _e(np.array([2])), _e(np.array([1]))
            ),
            {"log_probs": RNNT_TIE_LOG_PROBS},
            ("log_probs",),
        ),
    }


def _engine_kl():
    kl = {"input": LOG_PRED, "target": PROBS}
    plain = KLDivLossConfig().init()
    return {
        "batch_mean": _engine(_reduced(plain, Reduction.BatchMean), kl),
        "auto": _engine(_reduced(plain, Reduction.Auto), kl),
        "log_target": _engine(
            _reduced(KLDivLossConfig(log_target=True).init(), Reduction.Sum),
            {"input": LOG_PRED, "target": np.log(PROBS)},
        ),
        "target_above_one": _engine(
            _reduced(plain, Reduction.Sum), {"input": LOG_PRED, "target": ABOVE_ONE}
        ),
        "negative_target": _engine(
            _reduced(plain, Reduction.Sum), {"input": LOG_PRED, "target": NEGATIVE}
        ),
    }


def _engine_poisson():
    counts = {"input": PRED, "target": COUNTS}
    return {
        "log_input": _engine(_reduced(PoissonNllLossConfig().init(), Reduction.Mean), counts),
        "probabilities": _engine(
            _reduced(PoissonNllLossConfig(log_input=False).init(), Reduction.Mean),
            {"input": VAR, "target": COUNTS},
        ),
        "full": _engine(_reduced(PoissonNllLossConfig(full=True).init(), Reduction.Sum), counts),
        "negative_target": capture(
            lambda: PoissonNllLossConfig().init().forward(_e(PRED), _e(NEGATIVE), Reduction.Mean)
        ),
        "eps_zero": capture(lambda: PoissonNllLossConfig(log_input=False, eps=0.0).init()),
    }


def _engine_gaussian():
    gauss = {"input": PRED, "target": TARGET, "var": VAR}
    tracked = ("input", "var")

    def nll(reduction, **config):
        loss = GaussianNLLLossConfig(**config).init()
        return lambda input, target, var: loss.forward(input, target, var, reduction)

    return {
        "plain": _engine(nll(Reduction.Mean), gauss, tracked),
        "full": _engine(nll(Reduction.Sum, full=True), gauss, tracked),
        "small_var": _engine(
            nll(Reduction.Mean), {**gauss, "target": SMALL_VAR_TARGET, "var": SMALL_VAR}, tracked
        ),
        "negative_var": capture(
            lambda: (
                GaussianNLLLossConfig()
                .init()
                .forward(_e(PRED), _e(TARGET), _e(VAR - 1.0), Reduction.Mean)
            )
        ),
    }


def _engine_margin_ranking():
    def ranking(margin, reduction):
        loss = MarginRankingLossConfig(margin=margin).init()
        return lambda input1, input2, target: loss.forward(input1, input2, target, reduction)

    tracked = ("input1", "input2")
    return {
        "plain": _engine(
            ranking(0.15, Reduction.Mean),
            {"input1": FIRST, "input2": SECOND, "target": SIGNS},
            tracked,
        ),
        "on_margin": _engine(
            ranking(RANK_MARGIN, Reduction.Sum),
            {"input1": ON_MARGIN, "input2": ON_MARGIN_SECOND, "target": ON_MARGIN_TARGET},
            tracked,
        ),
        "negative_margin": capture(lambda: MarginRankingLossConfig(margin=-0.5).init()),
    }


def _engine_triplet():
    loss = TripletMarginLossConfig(margin=TRIPLET_MARGIN).init()
    triplet = {"anchor": ANCHOR, "positive": POSITIVE, "negative": NEGATIVE_EMB}
    tracked = ("anchor", "positive", "negative")
    zero = _engine(
        lambda **a: loss.forward(**a, reduction=Reduction.Mean),
        {**triplet, "positive": ANCHOR.copy()},
        tracked,
        nan_expected=True,
    )
    return {
        "plain": _engine(loss.forward_no_reduction, triplet, tracked),
        "zero_distance": {"grad.anchor": zero["grad.anchor"]},
    }


def _engine_cosine():
    def cosine(reduction):
        return CosineEmbeddingLossConfig(margin=0.2, reduction=reduction).init().forward

    tracked = ("input1", "input2")
    pairs = {"input1": X1, "input2": X2, "target": PAIR_TARGETS}
    return {
        "mean": _engine(cosine(Reduction.Mean), pairs, tracked),
        "sum": _engine(cosine(Reduction.Sum), pairs, tracked),
        "zero_row": _engine(
            cosine(Reduction.Mean), {**pairs, "input1": X1_ZERO_ROW}, tracked, nan_expected=True
        ),
    }


# ---- checks ---------------------------------------------------------------------------------

_LOSS = "harness.engine.loss."


def _because(name: str) -> str:
    return _LOSS + name


def _engine_vs_torch(pattern, because, relation, **kwargs):
    """A divergence whose relation reads the engine's value first."""
    return differ(
        pattern,
        left="engine",
        right="torch",
        because=_because(because),
        relation=relation,
        **kwargs,
    )


def _rejects(pattern, because):
    """burn rejects (at init or forward) what PyTorch computes."""
    return _engine_vs_torch(pattern, because, raises_vs_value("ValueError"))


def _close(a, b, tol):
    return bool(np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=0))


# KL: a target above 1 is read as 1 inside the log, so the engine lacks t log t there.
_T_LOG_T_ABOVE_ONE = float(sum(t * math.log(t) for t in ABOVE_ONE.ravel() if t > 1))


def _kl_above_one(engine, torch_value):
    return _close(np.asarray(engine) + _T_LOG_T_ABOVE_ONE, torch_value, 1e-6)


def _nan_vs_finite(engine, torch_value):
    return bool(np.isfinite(engine).all() and np.isnan(torch_value).all())


def _zero_where_clamped(engine, torch_value):
    """Engine 0 where var < eps, PyTorch the formula's derivative at eps; equal elsewhere."""
    engine, torch_value = np.asarray(engine), np.asarray(torch_value)
    return bool(
        np.all(engine[CLAMPED] == 0)
        and np.all(np.abs(torch_value[CLAMPED]) > 1e3)
        and _close(engine[~CLAMPED], torch_value[~CLAMPED], 1e-5)
    )


_ZERO_TARGETS = ZERO_ONE_SIGNS == 0


def _hinge_adds_x(torch_value, engine):
    """PyTorch = engine + x where the target is 0 (sum reduction): the loss by their sum,
    the gradient by 1 at those places."""
    torch_value, engine = np.asarray(torch_value, np.float64), np.asarray(engine, np.float64)
    if torch_value.shape == (1,):
        return _close(torch_value - engine, [PRED[_ZERO_TARGETS].astype(np.float64).sum()], 1e-6)
    return bool(np.allclose(torch_value - engine, _ZERO_TARGETS.astype(np.float64), atol=1e-6))


_ON_THE_MARGIN = (
    -ON_MARGIN_TARGET.astype(np.float64) * (ON_MARGIN - ON_MARGIN_SECOND) + RANK_MARGIN == 0
)


def _relu_kink(torch_value, engine):
    """Engine 0 on the margin, PyTorch +-1 there; the same elsewhere."""
    torch_value, engine = np.asarray(torch_value), np.asarray(engine)
    on = _ON_THE_MARGIN
    return bool(
        np.all(engine[on] == 0)
        and np.all(np.abs(torch_value[on]) == 1)
        and np.array_equal(torch_value[~on], engine[~on])
    )


_CONFIDENT = np.zeros(SOFT_LOGITS.shape, dtype=bool)
for _i, _j in CONFIDENT:
    _CONFIDENT[_i, _j] = True


def _softplus_underflow(torch_value, engine):
    """Engine exactly 0 where y x >= 20, PyTorch exp(-y x) there; equal to 1e-6 elsewhere."""
    torch_value, engine = np.asarray(torch_value, np.float64), np.asarray(engine, np.float64)
    yx = (SOFT_LOGITS * SOFT_TARGETS).astype(np.float64)
    return bool(
        np.all(engine[_CONFIDENT] == 0)
        and _close(torch_value[_CONFIDENT], np.exp(-yx[_CONFIDENT]), 1e-5)
        and np.allclose(torch_value[~_CONFIDENT], engine[~_CONFIDENT], atol=1e-6, rtol=0)
    )


def _triplet_f64(eps):
    a, p, n = (v.astype(np.float64) for v in (ANCHOR, POSITIVE, NEGATIVE_EMB))
    d_pos = np.linalg.norm(a - p + eps, axis=1)
    d_neg = np.linalg.norm(a - n + eps, axis=1)
    return np.maximum(d_pos - d_neg + TRIPLET_MARGIN, 0.0)


def _triplet_eps(torch_value, engine):
    """Each side is its float64 formula (PyTorch with eps = 1e-6 inside the norm, burn
    without); the two formulas are several float32 tolerances apart."""
    with_eps, without = _triplet_f64(1e-6), _triplet_f64(0.0)
    return bool(
        np.all(np.abs(with_eps - without) > 2e-6)
        and np.allclose(torch_value, with_eps, atol=5e-7, rtol=0)
        and np.allclose(engine, without, atol=5e-7, rtol=0)
    )


def _nan_where_zero_norm(rows):
    """Engine NaN exactly in `rows`, finite and within 1e-6 of PyTorch elsewhere; PyTorch
    finite everywhere."""

    def holds(torch_value, engine):
        torch_value, engine = np.asarray(torch_value), np.asarray(engine)
        bad = np.zeros(engine.shape[0], dtype=bool)
        bad[list(rows)] = True
        return bool(
            np.isfinite(torch_value).all()
            and np.isnan(engine[bad]).all()
            and np.allclose(engine[~bad], torch_value[~bad], atol=1e-6, rtol=0)
        )

    return holds


def _cancellation_only(torch_value, engine):
    """Both are d/dx of `(1 - t) x - log_sigmoid(x)` (mean): burn sums `g (1 - t)` and
    `-g sigmoid(-x)`, PyTorch computes `g (sigmoid(x) - t)`; each loses what falls below an
    ulp of 1 in its own subtraction, so they differ by at most ulp(1) * g."""
    g = 1.0 / BCE_CONFIDENT.size
    gap = np.abs(np.asarray(torch_value, np.float64) - np.asarray(engine, np.float64))
    return bool(np.all(gap <= np.finfo(np.float32).eps * g))


def _ctc_softmax_term(g_per_sample):
    """PyTorch's CTC kernel returns `exp(log_probs) * g - posterior` as the gradient w.r.t.
    log_probs (the softmax term cancels after log_softmax's backward); burn's autodiff gives the
    derivative itself, `-posterior`. Zero past each input length on both sides."""
    live = np.arange(LOG_PROBS.shape[0])[:, None] < CTC_INPUT_LENGTHS[None, :]  # [T, N]
    g = np.asarray(g_per_sample, np.float64)[None, :, None] * live[:, :, None]
    term = np.exp(LOG_PROBS.astype(np.float64)) * g

    def holds(torch_value, engine):
        gap = np.asarray(torch_value, np.float64) - np.asarray(engine, np.float64)
        return bool(np.allclose(gap, term, atol=1e-6, rtol=0))

    return holds


def _rnnt_tie_paths(torch_value, engine):
    """At the tie (1, 1) of burn's uniform lattice PyTorch's `logaddexp` splits the gradient
    1/2 : 1/2 over the two alignments (the posterior); burn's `log_sum_exp` sends all of it to
    its first operand, the blank step from (0, 1): the engine's gradient is minus the one path
    label at t = 0, blank at (0, 1), final blank at (1, 1). Indices [b, t, u, v], blank 0."""
    early = np.zeros(RNNT_TIE_LOG_PROBS.shape)
    for at in ((0, 0, 0, 1), (0, 0, 1, 0), (0, 1, 1, 0)):
        early[at] = -1.0
    late = np.zeros(RNNT_TIE_LOG_PROBS.shape)
    for at in ((0, 0, 0, 0), (0, 1, 0, 1), (0, 1, 1, 0)):
        late[at] = -1.0
    return bool(
        np.array_equal(np.asarray(engine, np.float64), early)
        and np.array_equal(np.asarray(torch_value, np.float64), (early + late) / 2)
    )


def _inf_or_nan_vs_finite(engine, torch_value):
    engine = np.asarray(engine)
    return bool(np.isfinite(torch_value).all() and not np.isfinite(engine).all())


_RELATIVE = Tolerance(0.0, rtol=1e-5, reason="values near 0: an absolute 1e-6 would hide them")

CHECKS = [
    agree("huber.*"),
    agree("smooth_l1.mean.*"),
    agree("smooth_l1.reduce_dims.*"),
    _rejects("smooth_l1.beta_zero", "SmoothL1LossConfig"),
    agree("lp.*"),
    agree("kl_div.batch_mean.*"),
    _engine_vs_torch("kl_div.auto.*", "KLDivLoss", scaled(PROBS.shape[1])),
    agree("kl_div.log_target.*"),
    differ(
        "kl_div.target_above_one.loss",
        because=_because("KLDivLoss"),
        left="engine",
        right="torch",
        relation=predicate("engine + sum of t log t over t > 1 = torch", _kl_above_one),
    ),
    agree("kl_div.target_above_one.grad.*"),
    _engine_vs_torch(
        "kl_div.negative_target.loss",
        "KLDivLoss",
        predicate("engine finite, torch NaN (xlogy of a negative target)", _nan_vs_finite),
    ),
    agree("kl_div.negative_target.grad.*"),
    agree("poisson.log_input.*"),
    agree("poisson.probabilities.*"),
    agree("poisson.full.*"),
    _rejects("poisson.negative_target", "PoissonNllLoss"),
    _rejects("poisson.eps_zero", "PoissonNllLossConfig"),
    agree("gaussian.plain.*"),
    agree("gaussian.full.*"),
    agree("gaussian.small_var.loss"),
    agree("gaussian.small_var.grad.input"),
    _engine_vs_torch(
        "gaussian.small_var.grad.var",
        "GaussianNLLLoss",
        predicate("engine 0 where var < eps (tracked clamp), equal elsewhere", _zero_where_clamped),
    ),
    differ(
        "gaussian.negative_var",
        because=_because("GaussianNLLLoss"),
        relation=raises_vs_value("ValueError"),
    ),
    agree("hinge.pm_one.*"),
    differ(
        "hinge.zero_target.*",
        because=_because("HingeEmbeddingLoss"),
        relation=predicate("torch = engine + x where the target is 0", _hinge_adds_x),
    ),
    agree("margin_ranking.plain.*"),
    agree("margin_ranking.on_margin.loss"),
    differ(
        "margin_ranking.on_margin.grad.*",
        because=_because("MarginRankingLoss"),
        relation=predicate("on the margin: engine 0 (relu), torch +-1 (clamp_min)", _relu_kink),
    ),
    _rejects("margin_ranking.negative_margin", "MarginRankingLossConfig"),
    agree("soft_margin.plain.*"),
    differ(
        "soft_margin.confident.loss",
        because=_because("SoftMarginLoss"),
        relation=predicate("engine 0 where y x >= 20, torch exp(-y x)", _softplus_underflow),
        tol=Tolerance.exact("exp(-20) is far below the absolute default; its absence is the point"),
    ),
    agree("soft_margin.confident.grad.*"),
    agree("multi_margin.p1.*"),
    agree("multi_margin.p2.*"),
    _rejects("multi_margin.negative_margin", "MultiMarginLossConfig"),
    differ(
        "triplet.plain.loss",
        because=_because("TripletMarginLoss"),
        relation=predicate("each side is its float64 formula, eps 1e-6 or none", _triplet_eps),
    ),
    agree("triplet.plain.grad.*"),
    differ(
        "triplet.zero_distance.grad.anchor",
        because=_because("TripletMarginLoss"),
        relation=predicate("engine NaN where anchor == positive", _nan_where_zero_norm([0, 1])),
    ),
    agree("cosine.mean.*"),
    agree("cosine.sum.*"),
    agree("cosine.zero_row.loss"),
    differ(
        "cosine.zero_row.grad.*",
        because=_because("CosineEmbeddingLoss"),
        relation=predicate("engine NaN in the all-zero row", _nan_where_zero_norm([1])),
    ),
    agree("ctc.none.loss"),
    agree("ctc.mean.loss"),
    differ(
        "ctc.none.grad.log_probs",
        because=_because("CTCLoss"),
        relation=predicate("torch = engine + exp(log_probs) * g", _ctc_softmax_term([1.0, 1.0])),
    ),
    differ(
        "ctc.mean.grad.log_probs",
        because=_because("CTCLoss"),
        relation=predicate(
            "torch = engine + exp(log_probs) * g",
            _ctc_softmax_term(1.0 / (CTC_TARGET_LENGTHS * len(CTC_TARGET_LENGTHS))),
        ),
    ),
    agree("ctc.logits.*"),
    agree("ctc.logits_mean.*"),
    _engine_vs_torch(
        "ctc.empty_target_mean.*",
        "CTCLoss",
        predicate("engine divides by a target length of 0, torch by 1", _inf_or_nan_vs_finite),
    ),
    agree("rnnt.none.*"),
    agree("rnnt.mean.*"),
    agree("rnnt.sum.*"),
    agree("rnnt.log_probs.*"),
    agree("rnnt.tie.loss"),
    differ(
        "rnnt.tie.grad.log_probs",
        because="harness.engine.loss.rnnt._log_sum_exp",
        relation=predicate(
            "torch: half on each of the two tied paths; engine: all on the first", _rnnt_tie_paths
        ),
    ),
    agree("bce.confident_logits.loss", tol=_RELATIVE),
    differ(
        "bce.confident_logits.grad.logits",
        because=_because("BinaryCrossEntropyLoss"),
        relation=predicate("apart by at most ulp(1) / n (cancellation)", _cancellation_only),
        tol=_RELATIVE,
    ),
    expect("cross_entropy.empty_pad_tokens", "engine", raises_message(EMPTY_PAD_TOKENS)),
]
