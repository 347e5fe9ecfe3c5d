"""burn's RNN-T tests, transcribed: the two `#[cfg(test)]` modules (`tests`,
`pytorch_comparison_tests`) of `crates/burn-nn/src/loss/rnnt.rs` at commit
2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47), one test here per burn test
(named after it), at burn's tolerance (`Tolerance::absolute(1e-4)` and `1e-3`).

burn's expected numbers come from closed forms (uniform probabilities) and from torchaudio's
`rnnt_loss`. Each is also re-derived here, independently of the engine, by `textbook`: the
float64 NumPy forward-backward of Graves 2012 (alpha and beta over the lattice, the gradient
from their product), against which the engine's loss and gradient are checked at tighter
tolerances. The engine's gradient is also checked against float64 finite differences of its own
forward.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from burn_vectors import AD, DEV, ints

from harness.engine import Reduction, RNNTLossConfig, Tensor
from harness.engine.loss.rnnt import _log_sum_exp

NUM_LABELS = 2  # burn's vocab size for the simple unit tests


def approx(actual, expected, tol):
    """burn's `assert_approx_eq::<f32>` with `Tolerance::absolute(tol)` (`burn-std/src/data/
    compare.rs`): equal, or `|a - b| < tol` (the relative part is 0). Not
    `burn_vectors.approx` with rel 0: that one lets NaN match NaN, this one fails on a NaN."""
    a = np.asarray(actual, dtype=np.float32)
    b = np.asarray(expected, dtype=np.float32)
    assert a.shape == b.shape, f"shape {list(a.shape)} != {list(b.shape)}"
    ok = (a == b) | (np.abs(a - b) < np.float32(tol))
    assert ok.all(), f"not approx eq:\n{a}\n{b}"


# ---- the textbook reference: float64 NumPy, Graves 2012 ---------------------------------------


def log_softmax64(x):
    x = np.asarray(x, np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def textbook(log_probs, targets, logit_lengths, target_lengths, blank=0):
    """Per-sample loss `-log P(y|x)` and its gradient w.r.t. `log_probs` `[B, T, U+1, V]`.

    alpha(t, u): log-probability of emitting y[:u] by reaching (t, u); beta(t, u): of finishing
    from (t, u), the final blank included. P = alpha(T-1, U) + blank(T-1, U) = beta(0, 0); a
    transition's posterior is alpha(from) + its log-prob + beta(to) - log P, and the gradient of
    -log P w.r.t. that log-prob is minus the posterior.
    """
    lp = np.asarray(log_probs, np.float64)
    b_size = lp.shape[0]
    losses = np.zeros(b_size)
    grad = np.zeros_like(lp)
    for b in range(b_size):
        t_len, u_len, y = int(logit_lengths[b]), int(target_lengths[b]), targets[b]
        blank_lp = lp[b, :t_len, : u_len + 1, blank]
        label_lp = np.array(
            [[lp[b, t, u, y[u]] for u in range(u_len)] for t in range(t_len)]
        ).reshape(t_len, u_len)
        alpha = np.full((t_len, u_len + 1), -np.inf)
        beta = np.full((t_len + 1, u_len + 2), -np.inf)
        for t in range(t_len):
            for u in range(u_len + 1):
                if t == 0 and u == 0:
                    alpha[t, u] = 0.0
                    continue
                via_blank = alpha[t - 1, u] + blank_lp[t - 1, u] if t > 0 else -np.inf
                via_label = alpha[t, u - 1] + label_lp[t, u - 1] if u > 0 else -np.inf
                alpha[t, u] = np.logaddexp(via_blank, via_label)
        beta[t_len, u_len] = 0.0  # past the final blank
        for t in range(t_len - 1, -1, -1):
            for u in range(u_len, -1, -1):
                via_blank = beta[t + 1, u] + blank_lp[t, u]
                via_label = beta[t, u + 1] + label_lp[t, u] if u < u_len else -np.inf
                beta[t, u] = np.logaddexp(via_blank, via_label)
        log_p = beta[0, 0]
        assert math.isclose(log_p, alpha[-1, -1] + blank_lp[-1, -1], rel_tol=1e-12)
        losses[b] = -log_p
        for t in range(t_len):
            for u in range(u_len + 1):
                grad[b, t, u, blank] -= np.exp(
                    alpha[t, u] + blank_lp[t, u] + beta[t + 1, u] - log_p
                )
                if u < u_len:
                    grad[b, t, u, y[u]] -= np.exp(
                        alpha[t, u] + label_lp[t, u] + beta[t, u + 1] - log_p
                    )
    return losses, grad


def through_log_softmax(logits, grad_lp):
    """The gradient w.r.t. logits from the gradient w.r.t. their log-softmax."""
    p = np.exp(log_softmax64(logits))
    return grad_lp - p * grad_lp.sum(axis=-1, keepdims=True)


def textbook_logits(logits, targets, logit_lengths, target_lengths, g=None):
    """Loss and the gradient of `sum(g * loss)` w.r.t. the raw logits (g = ones by default)."""
    losses, grad_lp = textbook(log_softmax64(logits), targets, logit_lengths, target_lengths)
    g = np.ones_like(losses) if g is None else np.asarray(g, np.float64)
    return losses, through_log_softmax(logits, grad_lp * g[:, None, None, None])


def test_the_textbook_reference_has_the_closed_forms():
    # Guards the reference itself: T paths of T + U emissions of probability 1/V each.
    lp = np.full((1, 2, 2, 2), math.log(0.5))
    losses, _ = textbook(lp, [[1]], [2], [1])
    assert math.isclose(losses[0], -math.log(2 * 0.5**3), rel_tol=1e-12)
    lp = np.full((1, 3, 2, 2), math.log(0.5))
    assert math.isclose(textbook(lp, [[1]], [3], [0])[0][0], 3 * math.log(2), rel_tol=1e-12)


# ---- module `tests` -----------------------------------------------------------------------


def test_config_defaults():
    cfg = RNNTLossConfig()
    assert cfg.blank == 0
    assert cfg.logits is True


@pytest.mark.parametrize(
    ("burn_test", "blank", "shape", "targets", "logit_lengths", "target_lengths", "burn_expects",
     "message"),
    [
        ("panics_on_invalid_blank", 5, (1, 2, 2, 3), [[1]], [2], [1], "blank index",
         "blank index 5 must be less than vocab_size 3"),
        ("panics_on_batch_mismatch", 0, (2, 3, 2, 3), [[1]], [3, 3], [1, 1],
         "must equal batch_size", "targets batch dimension 1 must equal batch_size 2"),
        ("panics_on_logit_lengths_mismatch", 0, (2, 3, 2, 3), [[1], [2]], [3], [1, 1],
         "logit_lengths length", "logit_lengths length 1 must equal batch_size 2"),
        ("panics_on_target_lengths_mismatch", 0, (2, 3, 2, 3), [[1], [2]], [3, 3], [1],
         "target_lengths length", "target_lengths length 1 must equal batch_size 2"),
    ],
)  # fmt: skip
def test_panics(
    burn_test, blank, shape, targets, logit_lengths, target_lengths, burn_expects, message
):
    """burn's `#[should_panic(expected = ...)]` tests: the substring burn expects, inside the
    full message of burn's `check_inputs`."""
    loss = RNNTLossConfig(blank=blank).init()
    with pytest.raises(ValueError) as err:
        loss.forward(
            Tensor.zeros(shape, DEV), ints(targets), ints(logit_lengths), ints(target_lengths)
        )
    assert burn_expects in str(err.value)
    assert str(err.value) == message


def test_panics_on_targets_length_dimension():
    # burn's fifth check (no burn test): targets [B, U] must match U+1 of the logits.
    with pytest.raises(ValueError) as err:
        RNNTLossConfig().init().forward(
            Tensor.zeros((1, 2, 3, 3), DEV), ints([[1]]), ints([2]), ints([1])
        )
    assert str(err.value) == "targets length dimension 1 must equal max_target_len (max_u) 2"


def test_single_token_uniform_probs():
    # B=1, T=2, U=1, V=2: two paths of T + U = 3 emissions of probability 1/2: loss 2 ln 2.
    time_steps, target_len, v = 2, 1, float(NUM_LABELS)
    log_uniform = np.float32(math.log(1.0 / v))
    logits = Tensor.full((1, time_steps, target_len + 1, NUM_LABELS), log_uniform, DEV)
    loss = RNNTLossConfig(logits=False).init()
    out = loss.forward(logits, ints([[1]]), ints([time_steps]), ints([target_len]))
    expected = -math.log(time_steps * v ** -(time_steps + target_len))
    approx(out.numpy(), [expected], 1e-4)
    ref, _ = textbook(np.full(logits.shape, math.log(1.0 / v)), [[1]], [time_steps], [target_len])
    assert math.isclose(ref[0], expected, rel_tol=1e-12)


def test_empty_target():
    # B=1, T=3, U=0, V=2: the all-blanks path only: loss 3 ln 2.
    time_steps, target_len, v = 3, 0, float(NUM_LABELS)
    log_uniform = np.float32(math.log(1.0 / v))
    logits = Tensor.full((1, time_steps, 2, NUM_LABELS), log_uniform, DEV)
    loss = RNNTLossConfig(logits=False).init()
    out = loss.forward(logits, ints([[1]]), ints([time_steps]), ints([target_len]))
    expected = -math.log(v ** -(time_steps + target_len))
    approx(out.numpy(), [expected], 1e-4)
    ref, _ = textbook(np.full(logits.shape, math.log(1.0 / v)), [[1]], [time_steps], [target_len])
    assert math.isclose(ref[0], expected, rel_tol=1e-12)


def test_logits_equivalence():
    bs, time_steps, up1, vocab = 1, 2, 3, 4
    data = np.sin(np.arange(bs * time_steps * up1 * vocab, dtype=np.float32) * np.float32(0.3))
    logits = Tensor.from_numpy(data.reshape(bs, time_steps, up1, vocab), DEV)
    args = (ints([[1, 2]]), ints([time_steps]), ints([up1 - 1]))
    fused = RNNTLossConfig(logits=True).init().forward(logits, *args)
    manual = RNNTLossConfig(logits=False).init().forward(logits.log_softmax(3), *args)
    approx(fused.numpy(), manual.numpy(), 1e-4)
    ref, _ = textbook_logits(logits.numpy(), [[1, 2]], [time_steps], [up1 - 1])
    np.testing.assert_allclose(fused.numpy(), ref, rtol=0, atol=2e-6)


# ---- module `pytorch_comparison_tests` (expected values from torchaudio) -----------------------

TOL = 1e-3


def make_logits(bs, t, u, v, dtype=np.float32):
    """burn's `make_logits`: `sin((b*11 + t*7 + u*13 + v*3) as f32 * 0.1)`, in f32."""
    idx = (
        np.arange(bs)[:, None, None, None] * 11
        + np.arange(t)[None, :, None, None] * 7
        + np.arange(u)[None, None, :, None] * 13
        + np.arange(v) * 3
    )
    x = np.sin(idx.astype(np.float32) * np.float32(0.1))
    return x.astype(dtype)


def run(logits_np, targets, logit_lengths, target_lengths, reduction=None):
    """(loss, gradient of `sum(loss)` w.r.t. the logits) from the engine on autodiff."""
    logits = Tensor.from_numpy(logits_np, AD).require_grad()
    loss_fn = RNNTLossConfig().init()
    args = (logits, ints(targets, AD), ints(logit_lengths, AD), ints(target_lengths, AD))
    if reduction is None:
        loss = loss_fn.forward(*args)
        grads = loss.sum().backward()
    else:
        loss = loss_fn.forward_with_reduction(*args, reduction)
        grads = loss.backward()
    return loss.numpy(), logits.grad(grads).numpy()


def check_vocab_grad_sums(grad):
    """burn's `check_vocab_grad_sums`: through log_softmax each (b, t, u) row sums to ~0."""
    for row in grad.reshape(-1, grad.shape[-1]):
        approx([row.sum(dtype=np.float32)], [0.0], TOL)


def check_against_textbook(logits_np, targets, logit_lengths, target_lengths, loss, grad):
    ref_loss, ref_grad = textbook_logits(logits_np, targets, logit_lengths, target_lengths)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=1e-6)
    return ref_loss, ref_grad


B1 = ([[1, 2]], [4], [2])
B2 = ([[1, 2, 3], [2, 1, 3]], [5, 5], [3, 3])
B3 = ([[1, 2, 3], [4, 1, 0], [2, 0, 0]], [6, 4, 5], [3, 2, 1])


def test_basic_b1():
    logits = make_logits(1, 4, 3, 3)
    loss, grad = run(logits, *B1)
    approx(loss, [4.4491], TOL)
    spots = {
        (0, 0, 0): [-0.2041, -0.2246, 0.4287],
        (0, 2, 0): [0.0079, -0.0640, 0.0561],
        (0, 3, 2): [-0.6899, 0.3231, 0.3667],
    }
    for at, expected in spots.items():
        approx(grad[at], expected, TOL)
    check_vocab_grad_sums(grad)
    ref_loss, ref_grad = check_against_textbook(logits, *B1, loss, grad)
    approx(ref_loss, [4.4491], TOL)  # burn's torchaudio numbers, re-derived
    for at, expected in spots.items():
        approx(ref_grad[at], expected, TOL)


B2_SPOTS = {
    (0, 0, 0): [-0.3161, -0.3113, 0.2796, 0.3479],
    (1, 0, 0): [-0.2766, 0.2602, -0.2248, 0.2411],
    (0, 4, 3): [-0.8216, 0.2296, 0.2786, 0.3133],
    (1, 4, 3): [-0.7185, 0.2735, 0.2437, 0.2012],
}


def test_batched_b2():
    logits = make_logits(2, 5, 4, 4)
    loss, grad = run(logits, *B2)
    approx(loss, [7.9356, 7.2033], TOL)
    for at, expected in B2_SPOTS.items():
        approx(grad[at], expected, TOL)
    check_vocab_grad_sums(grad)
    ref_loss, ref_grad = check_against_textbook(logits, *B2, loss, grad)
    approx(ref_loss, [7.9356, 7.2033], TOL)
    for at, expected in B2_SPOTS.items():
        approx(ref_grad[at], expected, TOL)


def test_variable_lengths_b3():
    logits = make_logits(3, 6, 4, 5)
    loss, grad = run(logits, *B3)
    approx(loss, [10.7458, 8.0196, 8.3316], TOL)
    spots = {
        (0, 0, 0): [-0.4232, -0.3114, 0.1992, 0.2478, 0.2876],
        (0, 5, 3): [-0.8016, 0.2170, 0.2172, 0.1991, 0.1683],
        (1, 0, 0): [-0.2502, 0.2160, 0.2173, 0.2002, -0.3833],
    }
    for at, expected in spots.items():
        approx(grad[at], expected, TOL)
    assert np.all(np.abs(grad[1, 4:]) < 1e-3)  # sample 1: logit_length 4
    for ti in range(4):  # sample 1: target_length 2, so u = 3 is outside the lattice
        approx(grad[1, ti, 3], np.zeros(5), TOL)
    assert np.all(np.abs(grad[2, 5]) < 1e-3)  # sample 2: logit_length 5
    check_vocab_grad_sums(grad)
    ref_loss, ref_grad = check_against_textbook(logits, *B3, loss, grad)
    approx(ref_loss, [10.7458, 8.0196, 8.3316], TOL)
    for at, expected in spots.items():
        approx(ref_grad[at], expected, TOL)
    # Outside each sample's lattice the engine's gradient is exactly 0, as the reference's.
    assert np.all(grad[1, 4:] == 0) and np.all(grad[1, :, 3] == 0) and np.all(grad[2, 5] == 0)


def test_sum_reduction():
    logits = make_logits(2, 5, 4, 4)
    loss, grad = run(logits, *B2, reduction=Reduction.Sum)
    approx(loss, [15.1389], TOL)
    approx(grad.reshape(-1)[:4], [-0.3161, -0.3113, 0.2796, 0.3479], TOL)
    ref_loss, ref_grad = textbook_logits(logits, *B2)
    np.testing.assert_allclose(loss, [ref_loss.sum()], rtol=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=1e-6)


def test_mean_reduction():
    logits = make_logits(2, 5, 4, 4)
    loss, grad = run(logits, *B2, reduction=Reduction.Mean)
    approx(loss, [7.5694], TOL)
    approx(grad.reshape(-1)[:4], [-0.1581, -0.1557, 0.1398, 0.1739], TOL)
    ref_loss, ref_grad = textbook_logits(logits, *B2, g=[0.5, 0.5])
    np.testing.assert_allclose(loss, [ref_loss.mean()], rtol=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=0, atol=1e-6)


# ---- beyond burn's tests ------------------------------------------------------------------


def test_auto_is_mean_and_batch_mean_raises_burns_message():
    logits = make_logits(2, 5, 4, 4)
    auto, _ = run(logits, *B2, reduction=Reduction.Auto)
    mean, _ = run(logits, *B2, reduction=Reduction.Mean)
    assert np.array_equal(auto, mean)
    with pytest.raises(ValueError, match=r"^BatchMean reduction is not supported$"):
        run(logits, *B2, reduction=Reduction.BatchMean)


@pytest.mark.parametrize("case", ["b3", "blank_last"])
def test_float64_engine_matches_the_textbook_closely(case):
    blank = 0 if case == "b3" else 4
    targets = B3[0] if case == "b3" else [[0, 1, 3], [2, 0, 0], [1, 1, 0]]
    logits = make_logits(3, 6, 4, 5, np.float64)
    t = Tensor.from_numpy(logits, AD).require_grad()
    loss = (
        RNNTLossConfig(blank=blank)
        .init()
        .forward(t, ints(targets, AD), ints(B3[1], AD), ints(B3[2], AD))
    )
    grad = t.grad(loss.sum().backward()).numpy()
    ref_loss, ref_grad_lp = textbook(log_softmax64(logits), targets, B3[1], B3[2], blank)
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-13)
    np.testing.assert_allclose(grad, through_log_softmax(logits, ref_grad_lp), rtol=0, atol=1e-13)


def test_gradient_matches_finite_differences_in_float64():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(2, 3, 3, 3))
    targets, il, tl = [[1, 2], [2, 0]], [3, 2], [2, 1]
    g = np.array([0.7, -1.3])
    loss_fn = RNNTLossConfig().init()

    def f(x):
        out = loss_fn.forward(Tensor.from_numpy(x, DEV), ints(targets), ints(il), ints(tl))
        return float(np.sum(out.numpy() * g))

    t = Tensor.from_numpy(logits, AD).require_grad()
    out = loss_fn.forward(t, ints(targets, AD), ints(il, AD), ints(tl, AD))
    grad = t.grad((out * Tensor.from_numpy(g, AD)).sum().backward()).numpy()
    eps = 1e-6
    fd = np.zeros_like(logits)
    for j in np.ndindex(logits.shape):
        plus, minus = logits.copy(), logits.copy()
        plus[j] += eps
        minus[j] -= eps
        fd[j] = (f(plus) - f(minus)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    assert np.any(grad != 0) and np.all(grad[1, 2:] == 0)  # sample 1 stops at t = 2


def test_log_sum_exp_handles_minus_infinity_without_nan():
    a = Tensor.from_floats([float("-inf"), 0.5, float("-inf")], AD, "float64").require_grad()
    b = Tensor.from_floats([0.25, float("-inf"), float("-inf")], AD, "float64").require_grad()
    out = _log_sum_exp(a, b)
    assert out.tolist() == [0.25, 0.5, float("-inf")]
    grads = out.mask_fill(out.equal_elem(float("-inf")), 0.0).sum().backward()
    assert a.grad(grads).tolist() == [0.0, 1.0, 0.0]
    assert b.grad(grads).tolist() == [1.0, 0.0, 0.0]


def test_log_sum_exp_at_a_tie_sends_the_gradient_to_the_first_operand():
    # burn's op rules, not the derivative (1/2 each): max_pair keeps self at a tie, and abs's
    # subgradient at 0 is 0. Documented in harness.engine.loss.rnnt._log_sum_exp.
    a = Tensor.from_floats([0.5], AD, "float64").require_grad()
    b = Tensor.from_floats([0.5], AD, "float64").require_grad()
    out = _log_sum_exp(a, b)
    assert math.isclose(out.into_scalar(), 0.5 + math.log(2), rel_tol=1e-15)
    grads = out.sum().backward()
    assert (a.grad(grads).tolist(), b.grad(grads).tolist()) == ([1.0], [0.0])


def test_a_length_outside_the_lattice_raises_index_error():
    logits = Tensor.from_numpy(make_logits(1, 4, 3, 3), DEV)
    with pytest.raises(
        IndexError, match="gather_nd: index 4 out of bounds for dimension of size 4"
    ):
        RNNTLossConfig().init().forward(logits, ints([[1, 2]]), ints([5]), ints([2]))
