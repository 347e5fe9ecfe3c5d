"""The new losses' contracts beyond burn's own vectors: config checks and messages, reductions,
shapes, dtypes, and the burn-tensor functions they are built from (`harness.engine.loss.
functional`) against PyTorch and float64 formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness import engine
from harness.engine import (
    CosineEmbeddingLoss,
    CosineEmbeddingLossConfig,
    CrossEntropyLoss,
    Device,
    GaussianNLLLossConfig,
    HingeEmbeddingLossConfig,
    HuberLossConfig,
    KLDivLossConfig,
    LpLossConfig,
    MarginRankingLossConfig,
    MseLoss,
    MultiMarginLossConfig,
    PoissonNllLossConfig,
    Reduction,
    SmoothL1LossConfig,
    SoftMarginLoss,
    Tensor,
    TripletMarginLossConfig,
)
from harness.engine.loss import functional

DEV = Device.flex()
AD = Device.flex().autodiff()
RNG = np.random.default_rng(23)
P = RNG.standard_normal((3, 4)).astype(np.float32)
T = RNG.standard_normal((3, 4)).astype(np.float32)


def t(values, device=DEV):
    """A tensor of an array as it is, or of a list of floats in float32 (ints stay int64)."""
    array = np.asarray(values)
    if not isinstance(values, np.ndarray) and array.dtype == np.float64:
        array = array.astype(np.float32)
    return Tensor.from_numpy(array, device)


# Each loss whose reduction is Mean/Auto -> mean, Sum -> sum, BatchMean -> burn's panic,
# with a call taking the reduction.
MEAN_OR_SUM = {
    "huber": lambda r: HuberLossConfig(0.5).init().forward(t(P), t(T), r),
    "smooth_l1": lambda r: SmoothL1LossConfig().init().forward_with_reduction(t(P), t(T), r),
    "lp": lambda r: LpLossConfig(3.0).init().forward(t(P), t(T), r),
    "poisson": lambda r: PoissonNllLossConfig().init().forward(t(P), t(np.abs(T)), r),
    "gaussian": lambda r: GaussianNLLLossConfig().init().forward(t(P), t(T), t(np.abs(T)), r),
    "hinge": lambda r: HingeEmbeddingLossConfig().init().forward(t(P), t(np.sign(T)), r),
    "margin_ranking": lambda r: (
        MarginRankingLossConfig().init().forward(t(P), t(T), t(np.sign(T)), r)
    ),
    "soft_margin": lambda r: SoftMarginLoss().forward(t(P), t(np.sign(T)), r),
    "multi_margin": lambda r: MultiMarginLossConfig().init().forward(t(P), t([0, 3, 1]), r),
    "triplet": lambda r: TripletMarginLossConfig().init().forward(t(P), t(T), t(P * 2), r),
    "cosine": lambda r: (
        CosineEmbeddingLossConfig(reduction=r).init().forward(t(P), t(T), t([1, -1, 1]))
    ),
}


@pytest.mark.parametrize("name", sorted(MEAN_OR_SUM))
def test_mean_auto_and_sum_reductions_return_shape_1(name):
    loss = MEAN_OR_SUM[name]
    mean, auto, total = (loss(r).numpy() for r in (Reduction.Mean, Reduction.Auto, Reduction.Sum))
    assert mean.shape == total.shape == (1,)
    assert mean.tolist() == auto.tolist()
    assert total[0] != mean[0]


@pytest.mark.parametrize("name", sorted(MEAN_OR_SUM))
def test_batch_mean_raises_burns_message(name):
    with pytest.raises(ValueError) as info:
        MEAN_OR_SUM[name](Reduction.BatchMean)
    assert str(info.value) == "BatchMean reduction is not supported"


@pytest.mark.parametrize("name", sorted(MEAN_OR_SUM))
def test_a_reduction_that_is_not_a_reduction_is_a_clear_type_error(name):
    with pytest.raises(TypeError, match="reduction must be a Reduction"):
        MEAN_OR_SUM[name]("mean")


def test_kl_div_reductions():
    """KL: BatchMean and Auto divide the sum by dims()[0]; Mean averages every element."""
    loss = KLDivLossConfig().init()
    x, y = np.log(np.full((3, 4), 0.25, np.float32)), np.abs(T) / np.abs(T).sum(1, keepdims=True)
    values = {r: loss.forward(t(x), t(y), r).numpy() for r in Reduction}
    total = values[Reduction.Sum][0]
    assert values[Reduction.BatchMean].tolist() == values[Reduction.Auto].tolist()
    assert values[Reduction.BatchMean][0] == np.float32(total) / np.float32(3)
    np.testing.assert_allclose(values[Reduction.Mean][0], total / 12, rtol=1e-6)
    torch_batchmean = F.kl_div(torch.from_numpy(x), torch.from_numpy(y), reduction="batchmean")
    np.testing.assert_allclose(values[Reduction.Auto][0], torch_batchmean.item(), rtol=1e-6)


# ---- config checks (burn's messages, at init) ----------------------------------------------

_DELTA = "Delta for Huber loss must be a non-negative number."
_BETA = "The parameter beta must be positive."
_P_ONLY = "Multi margin loss only supports p = 1 or p = 2, got {}"
INVALID = [
    (lambda: HuberLossConfig(-0.5).init(), _DELTA),
    (lambda: HuberLossConfig(math.nan).init(), _DELTA),
    (lambda: SmoothL1LossConfig(beta=0.0).init(), _BETA),
    (lambda: SmoothL1LossConfig(beta=math.nan).init(), _BETA),
    (lambda: LpLossConfig(-2.0).init(), "The order of the norm p must be positive."),
    (lambda: PoissonNllLossConfig(eps=-1e-3).init(),
     "eps for PoissonNllLoss must be a positive number."),
    (lambda: MarginRankingLossConfig(margin=-0.1).init(),
     "Margin for margin ranking loss must be a non-negative number."),
    (lambda: MultiMarginLossConfig(margin=-0.5).init(),
     "Margin for multi margin loss must be non-negative, got -0.5"),
    (lambda: MultiMarginLossConfig(margin=-2.0).init(),
     "Margin for multi margin loss must be non-negative, got -2"),
    (lambda: MultiMarginLossConfig(p=3).init(), _P_ONLY.format(3)),
    (lambda: MultiMarginLossConfig(p=0).init(), _P_ONLY.format(0)),
]  # fmt: skip


@pytest.mark.parametrize(("build", "message"), INVALID)
def test_invalid_configs_raise_burns_message_at_init(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value) == message


def test_boundary_configs_are_accepted():
    assert HuberLossConfig(0.0).init().delta == 0.0
    assert MarginRankingLossConfig(margin=0.0).init().margin == 0.0
    assert MultiMarginLossConfig(margin=0.0, p=2).init().p == 2
    assert LpLossConfig.l1().p == 1.0 and LpLossConfig.l2().p == 2.0


def test_defaults_are_burns():
    assert SmoothL1LossConfig().beta == 1.0
    assert KLDivLossConfig().log_target is False
    poisson = PoissonNllLossConfig()
    assert (poisson.log_input, poisson.full, poisson.eps) == (True, False, 1e-8)
    gaussian = GaussianNLLLossConfig()
    assert (gaussian.eps, gaussian.full) == (1e-6, False)
    assert HingeEmbeddingLossConfig().margin == 1.0
    assert MarginRankingLossConfig().margin == 0.0
    multi = MultiMarginLossConfig()
    assert (multi.margin, multi.p) == (1.0, 1)
    triplet = TripletMarginLossConfig()
    assert (triplet.margin, triplet.p) == (1.0, 2.0)
    cosine = CosineEmbeddingLossConfig()
    assert (cosine.margin, cosine.reduction) == (0.0, Reduction.Mean)
    plain = CosineEmbeddingLoss()
    assert (plain.margin, plain.reduction) == (0.0, Reduction.Mean)


def test_f32_fields_are_rounded_once_at_init():
    """burn declares Huber's delta, smooth L1's beta and cosine's margin f32; Huber's
    `lin_bias = delta * delta * 0.5` is computed in f32 too."""
    d = np.float32(0.1)
    huber = HuberLossConfig(0.1).init()
    assert huber.delta == float(d)
    assert huber.lin_bias == float(d * d * np.float32(0.5))
    assert SmoothL1LossConfig(beta=0.1).init().beta == float(d)
    assert CosineEmbeddingLossConfig(margin=0.1).init().margin == float(d)
    assert MarginRankingLossConfig(margin=0.1).init().margin == 0.1  # an f64 field


def test_with_builders():
    assert SmoothL1LossConfig().with_beta(2.5).init().beta == 2.5
    assert PoissonNllLossConfig().with_full(True).full is True


def test_gaussian_nll_spelling_alias():
    assert engine.GaussianNllLossConfig is engine.GaussianNLLLossConfig
    assert engine.GaussianNllLoss is engine.GaussianNLLLoss


# ---- input checks (burn's messages, at forward) --------------------------------------------


def test_poisson_input_checks():
    loss = PoissonNllLossConfig().init()
    with pytest.raises(ValueError) as info:
        loss.forward_no_reduction(t(P), t(T[:, :2]))
    assert str(info.value) == (
        "Shape of targets ([3, 2]) should correspond to outer shape of predictions ([3, 4])."
    )
    with pytest.raises(ValueError, match=r"All the values of `targets` must be non-negative\."):
        loss.forward_no_reduction(t([1.0, 2.0]), t([1.0, math.nan]))  # NaN >= 0 is false
    no_log = PoissonNllLossConfig(log_input=False).init()
    with pytest.raises(ValueError, match="When `log_input` is `false`"):
        no_log.forward_no_reduction(t([0.5, -0.1]), t([1.0, 1.0]))
    assert loss.forward_no_reduction(t([-0.5]), t([1.0])).shape == (1,)  # log input: any sign


@pytest.mark.parametrize(
    ("x1", "x2", "target", "message"),
    [
        ((2, 3), (3, 3), 2, "Batch size of input1 (2) must match batch size of input2 (3)"),
        ((2, 3), (2, 4), 2,
         "Embedding dimension of input1 (3) must match embedding dimension of input2 (4)"),
        ((2, 3), (2, 3), 3, "Batch size of inputs (2) must match batch size of target (3)"),
        ((6,), (6,), 1, "CosineEmbeddingLoss: input1 must have rank 2, got shape [6]"),
    ],
)  # fmt: skip
def test_cosine_embedding_assertions(x1, x2, target, message):
    loss = CosineEmbeddingLossConfig().init()
    with pytest.raises(ValueError) as info:
        loss.forward(t(np.ones(x1, np.float32)), t(np.ones(x2, np.float32)), t([1] * target))
    assert str(info.value) == message


# ---- shapes and dtypes ----------------------------------------------------------------------


def test_per_sample_losses_have_shape_batch():
    assert MultiMarginLossConfig().init().forward_no_reduction(t(P), t([0, 1, 2])).shape == (3,)
    assert TripletMarginLossConfig().init().forward_no_reduction(t(P), t(T), t(P)).shape == (3,)
    cos = CosineEmbeddingLossConfig().init().forward_no_reduction(t(P), t(T), t([1, -1, 0]))
    assert cos.shape == (3,)
    assert cos.numpy()[2] == 0.0  # a target outside {-1, 1} costs nothing, as in PyTorch


def test_losses_keep_float64():
    """In float64 every loss stays float64 and matches its float64 formula."""
    p, y = P.astype(np.float64), T.astype(np.float64)
    huber = HuberLossConfig(0.5).init().forward_no_reduction(t(p), t(y)).numpy()
    r = np.abs(y - p)
    assert huber.dtype == np.float64
    np.testing.assert_allclose(huber, np.where(r <= 0.5, 0.5 * r**2, 0.5 * r - 0.125), rtol=1e-14)
    var = np.abs(y) + 0.1
    nll = GaussianNLLLossConfig().init().forward_no_reduction(t(p), t(y), t(var)).numpy()
    np.testing.assert_allclose(nll, 0.5 * (np.log(var) + (p - y) ** 2 / var), rtol=1e-14)
    soft = SoftMarginLoss().forward_no_reduction(t(p), t(np.sign(y))).numpy()
    np.testing.assert_allclose(soft, np.log1p(np.exp(-np.sign(y) * p)), rtol=1e-12)
    kl = KLDivLossConfig().init().forward_no_reduction(t(p), t(np.zeros_like(p))).numpy()
    assert kl.dtype == np.float64 and np.all(kl == 0)  # t = 0: clamped to f64 tiny, times 0


def test_kl_div_clamps_targets_into_tiny_and_one():
    loss = KLDivLossConfig().init()
    out = loss.forward_no_reduction(t([0.0, 0.0]), t([2.0, -1.0])).numpy()
    # t = 2 reads log(1) = 0; t = -1 reads log(tiny): -1 * (log(tiny) - 0)
    tiny = np.finfo(np.float32).tiny
    np.testing.assert_allclose(out, [0.0, -np.log(np.float64(tiny))], rtol=1e-6)


def test_hinge_embedding_reads_every_non_one_target_as_negative():
    loss = HingeEmbeddingLossConfig(margin=2.0).init()
    out = loss.forward_no_reduction(t([0.5, 0.5, 0.5, 3.0]), t([1.0, -1.0, 0.0, 5.0])).numpy()
    np.testing.assert_array_equal(out, [0.5, 1.5, 1.5, 0.0])
    tout = F.hinge_embedding_loss(
        torch.tensor([0.5, 0.5, 0.5, 3.0]),
        torch.tensor([1.0, -1.0, 0.0, 5.0]),
        2.0,
        reduction="none",
    )
    np.testing.assert_array_equal(tout.numpy(), [0.5, 1.5, 2.0, 3.0])  # PyTorch adds x for t != +-1


def test_margin_ranking_gradient_on_the_margin_is_zero():
    first = t([0.5, 2.0], AD).require_grad()
    loss = MarginRankingLossConfig(margin=0.5).init()
    out = loss.forward(first, t([0.0, 0.0], AD), t([1.0, 1.0], AD), Reduction.Sum)
    assert out.tolist() == [0.0]
    assert first.grad(out.backward()).tolist() == [0.0, 0.0]  # relu at 0 (PyTorch: -1 at [0])


# ---- functional: the burn-tensor functions --------------------------------------------------


# log1p and log_sigmoid were composites here; they are primitives now (Tensor.log1p,
# Tensor.log_sigmoid), checked with the same vectors.


def _flex_sigmoid(x: np.ndarray) -> np.ndarray:
    """flex's sigmoid_f32 (crates/burn-flex/src/ops/activation.rs), written out for the test."""
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))


def test_log1p_value_is_exact_and_gradient_is_burns():
    x = np.array([1e-10, -1e-9, 3e-8, 6e-8, 1e-7, 0.5, -0.5, 5.0, -0.999], dtype=np.float32)
    xt = t(x, AD).require_grad()
    out = xt.log1p()
    np.testing.assert_array_equal(out.numpy(), np.log1p(x))
    g = xt.grad(out.backward()).numpy()
    np.testing.assert_array_equal(g, np.ones_like(x) * np.reciprocal(x + np.float32(1)))


def test_log_sigmoid_value_and_gradient_are_flexs_bit_for_bit():
    x = np.array([-100, -30, -1, -1e-3, 0, 1e-3, 1, 17, 20, 30, 88, 100], dtype=np.float32)
    xt = t(x, AD).require_grad()
    out = xt.log_sigmoid()
    with np.errstate(over="ignore"):
        flex = np.where(x >= 0, -np.log1p(np.exp(-x)), x - np.log1p(np.exp(x)))
    np.testing.assert_array_equal(out.numpy(), flex)
    c = np.linspace(0.5, 2.0, x.size).astype(np.float32)
    g = xt.grad((out * t(c, AD)).sum().backward()).numpy()
    np.testing.assert_array_equal(g, c * _flex_sigmoid(-x))
    want = F.logsigmoid(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-44)  # x = 100: subnormal


def test_log_sigmoid_at_infinities():
    xt = t(np.array([np.inf, -np.inf], dtype=np.float32), AD).require_grad()
    with np.errstate(invalid="ignore"):
        out = xt.log_sigmoid()
    assert out.tolist() == [0.0, -math.inf]
    # flex's g * sigmoid(-x): 0 at +inf, g at -inf (the composite this replaced gave 0 there).
    assert xt.grad(out.backward()).tolist() == [0.0, 1.0]


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 0.5, 2.5, math.inf, -math.inf])
def test_lp_norm_matches_torch_vector_norm(p):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    x[0, 1] = 0.0
    got = functional.lp_norm(t(x), p, 1).numpy()
    want = torch.linalg.vector_norm(torch.from_numpy(x), ord=p, dim=1, keepdim=True).numpy()
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_lp_norm_even_integer_skips_the_abs():
    """burn's `lp_signed_norm`: an even p takes `powi` of the signed values (same result)."""
    x = t(np.array([[-2.0, 1.0]], np.float32), AD).require_grad()
    out = functional.lp_norm(x, 4.0, 1)
    np.testing.assert_allclose(out.numpy(), [[17**0.25]], rtol=1e-6)
    g = x.grad(out.backward()).numpy()
    np.testing.assert_allclose(g, [[-8 * 17**-0.75, 17**-0.75]], rtol=1e-6)


def test_cosine_similarity_matches_torch_for_non_zero_vectors():
    x1, x2 = RNG.standard_normal((4, 6)), RNG.standard_normal((4, 6))
    got = functional.cosine_similarity(t(x1), t(x2), 1).numpy()
    want = F.cosine_similarity(torch.from_numpy(x1), torch.from_numpy(x2), dim=1).numpy()
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-12)


def test_softplus_is_burns_naive_formula():
    z = t(np.array([-20.0, 0.0, 5.0, 100.0], np.float32))
    with np.errstate(over="ignore"):
        out = functional.softplus(z, 1.0).numpy()
    assert out[0] == 0.0  # log(exp(-20) + 1) rounds to log(1) in f32; PyTorch: exp(-20)
    np.testing.assert_allclose(out[1:3], np.log1p(np.exp([0.0, 5.0])), rtol=1e-6)
    assert out[3] == math.inf  # exp overflows; PyTorch's softplus returns x above 20


def test_mean_dims_folds_in_the_given_order():
    x = t(RNG.standard_normal((2, 3, 4)).astype(np.float32))
    a = functional.mean_dims(x, [2, 0]).numpy()
    assert a.shape == (1, 3, 1)
    np.testing.assert_array_equal(a, x.mean_dim(2).mean_dim(0).numpy())


def test_burns_new_constructors():
    """burn's `MseLoss::new()`, `SoftMarginLoss::new()`, `CosineEmbeddingLoss::new()` and the
    backward-compatible `CrossEntropyLoss::new(pad_index, device)`."""
    assert isinstance(MseLoss.new(), MseLoss)
    assert isinstance(SoftMarginLoss.new(), SoftMarginLoss)
    assert CosineEmbeddingLoss.new().reduction is Reduction.Mean
    assert CrossEntropyLoss.new(1, AD).pad_tokens == (1,)
    assert CrossEntropyLoss.new(None, AD).pad_tokens is None
