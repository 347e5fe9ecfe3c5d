"""Each documented divergence of issue 4's cases is load-bearing: remove the engine behaviour a
``differ`` check documents (monkeypatched, so nothing leaks) and that check must fail.

One removal per case. Without the patch the same check holds (``test_differ_holds``), so a
failure under the patch is caused by the removed behaviour, not by the case itself.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest
import torch

from harness import engine
from harness.case import discover
from harness.checks import evaluate_check
from harness.engine import lr_scheduler, optim
from harness.engine.loss import CrossEntropyLoss, KLDivLoss, Reduction
from harness.engine.module import params_of
from harness.runner import check_case, run_case
from harness.trajectory import Precision

VANISHED = "expected divergence vanished"

# (case, label of the differ check whose engine behaviour the matching patch removes)
TARGETS = {
    "grad_clipping": "differ:norm.*:torch~engine",
    "lr_schedulers": "differ:linear:torch:naive~engine:aligned",
    "grad_none": "differ:after_from_grads:torch~engine",
    "ops_consume": "differ:detach.require_grad:torch~engine",
    "cross_entropy_variants": "differ:pad.*:engine~torch",
    "losses": "differ:kl_div.auto.*:engine~torch",
}


def _result(case_name, label, tmp_path):
    (case,) = discover([case_name])
    report = check_case(case, golden_dir=tmp_path / "g", out_dir=tmp_path / "o")
    return report.check(label)


@pytest.mark.parametrize("case_name", sorted(TARGETS))
def test_differ_holds(case_name, tmp_path):
    result = _result(case_name, TARGETS[case_name], tmp_path)
    assert result.ok, result.message


# ---- the removals ---------------------------------------------------------------------------


def _no_dampening_by_default(monkeypatch):
    """MomentumConfig() with PyTorch's dampening 0 instead of burn's 0.1."""
    momentum, _, nesterov = optim.MomentumConfig.__init__.__defaults__
    monkeypatch.setattr(optim.MomentumConfig.__init__, "__defaults__", (momentum, 0.0, nesterov))


def _global_norm_clipping(monkeypatch):
    """Norm clipping scaled by the global norm of all A1 gradients (PyTorch's clip_grad_norm_,
    eps 1e-6) instead of each param's own norm."""
    from harness.a1 import a1_engine

    device = engine.Device.flex().autodiff()
    model, x, y = a1_engine(device)
    loss = engine.CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    grads = engine.GradientsParams.from_grads(loss.backward(), model)
    squares = [
        np.square(grads.get(p.id).numpy().astype(np.float64)).sum() for p in params_of(model)
    ]
    total = float(np.sqrt(sum(squares)))
    per_param = optim.GradientClipping.clip_array

    @functools.wraps(per_param)
    def clip_array(self, g):
        if self.kind != "norm":
            return per_param(self, g)
        return g * g.dtype.type(min(1.0, float(self.threshold) / (total + 1e-6)))

    monkeypatch.setattr(optim.GradientClipping, "clip_array", clip_array)


def _no_first_step_shift(monkeypatch):
    """Every leaf scheduler's first call skips the initial LR (PyTorch's get_last_lr after the
    first step); composed and sequential schedulers step their children, so they follow."""
    leaves = (
        lr_scheduler.LinearLrScheduler,
        lr_scheduler.CosineAnnealingLrScheduler,
        lr_scheduler.ExponentialLrScheduler,
        lr_scheduler.StepLrScheduler,
        lr_scheduler.NoamLrScheduler,
    )
    for cls in leaves:
        step = cls.step

        @functools.wraps(step)
        def shifted(self, step=step):
            if not getattr(self, "_skipped_first", False):
                self._skipped_first = True
                step(self)
            return step(self)

        monkeypatch.setattr(cls, "step", shifted)


def _from_grads_copies(monkeypatch):
    """GradientsParams.from_grads reads the gradients and leaves them in `grads`, as PyTorch
    leaves `.grad` on the params."""

    def from_module(cls, grads, module):
        out = cls()
        for param in params_of(module):
            grad = param.val().grad(grads)
            if grad is not None:
                out.register(param.id, grad)
        return out

    monkeypatch.setattr(optim.GradientsParams, "from_module", classmethod(from_module))


def _detach_drops_require_grad(monkeypatch):
    """detach() returns an untracked leaf, as PyTorch's drops requires_grad."""

    @functools.wraps(engine.Tensor.detach)  # keep the docstring the differ's `because` reads
    def detach(self):
        return engine.Tensor.from_numpy(self.numpy(), self.device)

    monkeypatch.setattr(engine.Tensor, "detach", detach)


def _pad_mean_over_kept_rows(monkeypatch):
    """Cross-entropy with pad tokens divides by the kept rows, as PyTorch's ignore_index."""
    default = CrossEntropyLoss._forward_default

    @functools.wraps(default)
    def forward_default(self, logits, targets):
        loss = default(self, logits, targets)
        mask = self._padding_mask(targets)
        if mask is None or self.weights is not None:
            return loss
        return loss * (mask.size / (mask.size - mask.sum()))

    monkeypatch.setattr(CrossEntropyLoss, "_forward_default", forward_default)


def _kl_auto_averages_every_element(monkeypatch):
    """KL divergence's `Reduction.Auto` averages every element, as PyTorch's default "mean",
    instead of burn's batch mean."""
    forward = KLDivLoss.forward

    @functools.wraps(forward)
    def auto_as_mean(self, predictions, targets, reduction):
        if reduction is Reduction.Auto:
            reduction = Reduction.Mean
        return forward(self, predictions, targets, reduction)

    monkeypatch.setattr(KLDivLoss, "forward", auto_as_mean)


REMOVALS = {
    "grad_clipping": _global_norm_clipping,
    "lr_schedulers": _no_first_step_shift,
    "grad_none": _from_grads_copies,
    "ops_consume": _detach_drops_require_grad,
    "cross_entropy_variants": _pad_mean_over_kept_rows,
    "losses": _kl_auto_averages_every_element,
}


@pytest.mark.parametrize("case_name", sorted(REMOVALS))
def test_removing_the_behaviour_fails_the_differ(case_name, tmp_path, monkeypatch):
    REMOVALS[case_name](monkeypatch)
    result = _result(case_name, TARGETS[case_name], tmp_path)
    assert not result.ok
    assert result.message == VANISHED


def _pytorch_bias_corrections(monkeypatch):
    """Adam with PyTorch's formula: bias corrections `1 - beta**t` in Python floats (f64),
    `lerp` for the first moment, on the engine's f32 hyperparameters (the values the aligned
    PyTorch runs are given), so the only change is the "fix" of burn's float32 bias
    corrections."""
    from harness.engine.optim.adam import Adam, AdaptiveMomentumState

    def update(self, lr, tensor, grad, state):
        dt = tensor.dtype.type
        b1, b2, eps = (float(np.float32(v)) for v in (self.beta_1, self.beta_2, self.epsilon))
        if state is None:
            state = AdaptiveMomentumState(0, np.zeros_like(grad), np.zeros_like(grad))
        state.time += 1
        state.moment_1 = state.moment_1 + (grad - state.moment_1) * dt(1 - b1)
        state.moment_2 = state.moment_2 * dt(b2) + np.square(grad) * dt(1 - b2)
        bc1, bc2 = 1 - b1**state.time, 1 - b2**state.time
        denom = np.sqrt(state.moment_2) / dt(math.sqrt(bc2)) + dt(eps)
        return tensor - dt(lr / bc1) * state.moment_1 / denom, state

    monkeypatch.setattr(Adam, "update", update)


def _one_pair(case_name, label):
    """``optimizer_trajectories`` cut down to the two runs a check compares and that check
    (4 runs with the float64 reruns, not 140). Labels read ``...:torch:<group>.<name>~
    engine:<group>.<name>``; each side's ``_<side>_<group>()`` builds its runs."""
    (case,) = discover([case_name])
    check = next(c for c in case.checks if c.label == label)
    names = case.torch_side.__globals__  # the case module's helpers
    (tg, tn), (eg, en) = (ref.prefix.rstrip(".").split(".") for ref in (check.left, check.right))

    def torch_side(dtype=torch.float32):
        return {tg: {tn: names["_torch_run"](names[f"_torch_{tg}"]()[tn], dtype)}}

    def engine_side(dtype="float32"):
        config, lr = names[f"_engine_{eg}"]()[en]
        return {eg: {en: names["_engine_run"](config, lr, dtype)}}

    small = dataclasses.replace(
        case, torch_side=torch_side, engine_side=engine_side, checks=(check,)
    )
    return small, check


ADAM = "differ:*:torch:aligned.adam~engine:aligned.adam"


def test_pytorch_bias_corrections_remove_the_adam_formula_differ(tmp_path, monkeypatch):
    """The aligned Adam gap of ``optimizer_trajectories`` is burn's float32 bias corrections:
    with PyTorch's formula in the engine, the trajectories become rounding: the systematic
    differ fails, the float64 runs agree (before the patch the same cut-down check holds)."""
    small, check = _one_pair("optimizer_trajectories", ADAM)
    before = evaluate_check(run_case(small, tmp_path / "a", repeat=False), check)
    assert before.ok, before.message
    _pytorch_bias_corrections(monkeypatch)
    result = evaluate_check(run_case(small, tmp_path / "b", repeat=False), check)
    assert not result.ok
    assert result.message.startswith(VANISHED)
    assert result.trajectory.precision.verdict == Precision.ROUNDING


DAMPENING = "trajectory:*:torch:burn_defaults.sgd_momentum~engine:defaults.sgd_momentum"


def test_pytorch_dampening_breaks_the_burn_defaults_trajectory(tmp_path, monkeypatch):
    """burn's default dampening 0.1 is what PyTorch given dampening 0.1 reproduces: with
    PyTorch's 0 as the engine's default, that rounding-level trajectory becomes a formula
    difference (the float64 runs part)."""
    small, check = _one_pair("optimizer_trajectories", DAMPENING)
    before = evaluate_check(run_case(small, tmp_path / "a", repeat=False), check)
    assert before.ok, before.message
    _no_dampening_by_default(monkeypatch)
    result = evaluate_check(run_case(small, tmp_path / "b", repeat=False), check)
    assert not result.ok
    assert result.message.startswith("formula difference")
    assert result.trajectory.precision.verdict == Precision.FORMULA


def test_every_shifted_scheduler_loses_its_differ(tmp_path, monkeypatch):
    """Not only linear: with the shift removed, every scheduler's shift check fails."""
    _no_first_step_shift(monkeypatch)
    (case,) = discover(["lr_schedulers"])
    report = check_case(case, golden_dir=tmp_path / "g", out_dir=tmp_path / "o")
    shift_checks = [r for r in report.checks if r.label.endswith("~engine:aligned")]
    shifted = [r for r in shift_checks if r.kind == "differ"]
    assert len(shifted) == 7  # the eight schedulers but the constant one
    assert all(r.message == VANISHED for r in shifted), [r.message for r in shifted]
