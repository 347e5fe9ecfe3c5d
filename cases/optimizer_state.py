"""Optimizer state over 20 steps of the A1 model (the same batch at every step).

With hyperparameters aligned, SGD with momentum (plain, nesterov, with weight decay), Adam (plain,
AMSGrad), AdamW, RMSProp (plain, centered) and AdaGrad follow the same trajectory on both sides:
the loss at every step and the final params agree. With each side's *defaults* they part, exactly
where reference-engine.md section 6 says: momentum dampening 0.1 (PyTorch 0), epsilon 1e-5
(PyTorch 1e-8, AdaGrad 1e-10), AdamW weight decay 1e-4 (PyTorch 1e-2), RMSProp momentum 0.9
(PyTorch 0); a PyTorch run given burn's values for just those hyperparameters reproduces the
engine's default run.

Optimizer state is per param: a param whose gradient is missing for some steps (fc2.bias, steps
5..9) is left alone, without decay, and its step count does not advance (PyTorch skips params
whose ``.grad`` is None the same way). State is keyed by ParamId: stepping ``model.clone()`` at
every step leaves the trajectory unchanged (the clone shares the ParamIds), while a model rebuilt
with new ParamIds starts with fresh state, like a new PyTorch optimizer.

Adam and AdamW differ from PyTorch's by formula, not by rounding: burn computes the bias
corrections ``1 - beta^t`` in float32 (``adam.rs``, ``adamw.rs``). Over 120 steps (``long``) the
largest param gap grows about linearly while the updates are full-size, passes the float32
default tolerance 1e-6 at step 13 or 14, and levels off near 6e-6 once the updates shrink; run
again with float64 on both sides, the gap is the same size, so it is not float32 rounding.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import (
    A1,
    A1_LR,
    PARAM_NAMES,
    a1_arrays,
    a1_engine,
    a1_torch,
    engine_params,
    torch_params,
)
from harness.case import agree, differ, expect, predicate
from harness.engine import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    CrossEntropyLossConfig,
    Device,
    GradientsParams,
    Linear,
    MomentumConfig,
    Param,
    RmsPropConfig,
    SgdConfig,
    Tensor,
    WeightDecayConfig,
)
from harness.tolerances import Tolerance, default_tolerance

STEPS = 20
SGD_LR = A1_LR
# Adaptive optimizers move every element by about lr per step whatever the gradient's size; 0.1
# would be a large jump for weights of size ~0.25, so they use a common Adam-style rate.
ADAPTIVE_LR = 0.01
SKIPPED = range(5, 10)  # steps at which fc2.bias has no gradient
REBUILD_AT = 10  # step at which the model gets new ParamIds (engine) / a new optimizer (torch)

# PyTorch's defaults for the hyperparameters where burn's differ (reference-engine.md section 6).
# Each "aligned" run below sets them explicitly on the engine side.
TORCH_DAMPENING, TORCH_EPS, TORCH_ADAGRAD_EPS, TORCH_ADAMW_WD = 0.0, 1e-8, 1e-10, 1e-2
TORCH_RMSPROP_MOMENTUM = 0.0
# burn's defaults, given to PyTorch in the "burn_defaults" runs.
BURN_DAMPENING, BURN_EPS, BURN_ADAMW_WD, BURN_RMSPROP_MOMENTUM = 0.1, 1e-5, 1e-4, 0.9

# The long Adam / AdamW runs: the params after these steps (every step would be 8040 numbers a
# run; these show the early growth and the late level).
LONG_STEPS = 120
SNAPSHOTS = (1, 2, 3, *range(5, LONG_STEPS + 1, 5))
LONG_DTYPES = ("float32", "float64")


# ---- PyTorch side ---------------------------------------------------------------------------


def _torch_run(make_optimizer, *, skip=False, rebuild=False):
    """20 steps; the loss before each step, the final params and the step count of fc2.bias."""
    model, x, y = a1_torch()
    optim = make_optimizer(model.parameters())
    losses = []
    for step in range(STEPS):
        if rebuild and step == REBUILD_AT:
            optim = make_optimizer(model.parameters())
        optim.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if skip and step in SKIPPED:
            model.fc2.bias.grad = None
        if skip and step == SKIPPED.start:
            before_gap = model.fc2.bias.detach().clone()
        optim.step()
        if skip and step == SKIPPED.stop - 1:
            after_gap = model.fc2.bias.detach().clone()
        losses.append(loss.detach())
    run = {"loss": torch.stack(losses), "final": torch_params(model)}
    if skip:
        run["before_gap"] = {"fc2.bias": before_gap}
        run["after_gap"] = {"fc2.bias": after_gap}
        run["fc2_bias_steps"] = int(optim.state[model.fc2.bias]["step"].item())
    return run


def _torch_long(make_optimizer, dtype):
    """LONG_STEPS steps in `dtype`; all params (PyTorch layout, flattened) at each snapshot."""
    model, x, y = a1_torch()
    model, x = model.to(getattr(torch, dtype)), x.to(getattr(torch, dtype))
    optim = make_optimizer(model.parameters())
    rows = []
    for step in range(1, LONG_STEPS + 1):
        optim.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optim.step()
        if step in SNAPSHOTS:
            rows.append(torch.cat([model.get_parameter(n).detach().flatten() for n in PARAM_NAMES]))
    return {"params": torch.stack(rows)}


def torch_side():
    optim = torch.optim
    return {
        # PyTorch's own defaults (momentum 0.9 given, as SGD has none); the engine side sets
        # PyTorch's values explicitly. These runs are also "PyTorch defaults" in the checks.
        "aligned": {
            "sgd_momentum": _torch_run(lambda p: optim.SGD(p, lr=SGD_LR, momentum=0.9)),
            "sgd_nesterov": _torch_run(
                lambda p: optim.SGD(p, lr=SGD_LR, momentum=0.9, nesterov=True)
            ),
            "sgd_weight_decay": _torch_run(
                lambda p: optim.SGD(p, lr=SGD_LR, momentum=0.9, weight_decay=0.01)
            ),
            "adam": _torch_run(lambda p: optim.Adam(p, lr=ADAPTIVE_LR)),
            "adam_amsgrad": _torch_run(lambda p: optim.Adam(p, lr=ADAPTIVE_LR, amsgrad=True)),
            "adamw": _torch_run(lambda p: optim.AdamW(p, lr=ADAPTIVE_LR)),
            "rmsprop": _torch_run(lambda p: optim.RMSprop(p, lr=ADAPTIVE_LR)),
            "rmsprop_centered": _torch_run(
                lambda p: optim.RMSprop(p, lr=ADAPTIVE_LR, momentum=0.9, centered=True)
            ),
            "adagrad": _torch_run(lambda p: optim.Adagrad(p, lr=SGD_LR)),
        },
        # PyTorch given burn's values for exactly the hyperparameters whose defaults differ.
        "burn_defaults": {
            "sgd_momentum": _torch_run(
                lambda p: optim.SGD(p, lr=SGD_LR, momentum=0.9, dampening=BURN_DAMPENING)
            ),
            "adam": _torch_run(lambda p: optim.Adam(p, lr=ADAPTIVE_LR, eps=BURN_EPS)),
            "adamw": _torch_run(
                lambda p: optim.AdamW(p, lr=ADAPTIVE_LR, eps=BURN_EPS, weight_decay=BURN_ADAMW_WD)
            ),
            "rmsprop": _torch_run(
                lambda p: optim.RMSprop(
                    p, lr=ADAPTIVE_LR, eps=BURN_EPS, momentum=BURN_RMSPROP_MOMENTUM
                )
            ),
            "adagrad": _torch_run(lambda p: optim.Adagrad(p, lr=SGD_LR, eps=BURN_EPS)),
        },
        "skip": _torch_run(lambda p: optim.AdamW(p, lr=ADAPTIVE_LR), skip=True),
        # No "clone" run: a PyTorch module has no by-value clone (its optimizer holds the
        # parameter objects), so the engine's clone run is compared with aligned.adam.
        "rebuilt": _torch_run(lambda p: optim.Adam(p, lr=ADAPTIVE_LR), rebuild=True),
        "long": {
            dtype: {
                "adam": _torch_long(lambda p: optim.Adam(p, lr=ADAPTIVE_LR), dtype),
                "adamw": _torch_long(lambda p: optim.AdamW(p, lr=ADAPTIVE_LR), dtype),
            }
            for dtype in LONG_DTYPES
        },
    }


# ---- engine side ----------------------------------------------------------------------------


def _engine_run(config, lr, *, skip=False, rebuild=False, via_clone=False):
    """Same loop: burn's `optim.step(lr, model, grads)` returns the updated model."""
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    optim = config.init()
    loss_fn = CrossEntropyLossConfig().init(device)
    losses = []
    for step in range(STEPS):
        if rebuild and step == REBUILD_AT:
            # Same values, new ParamIds: the optimizer finds no state for them.
            model = model.map(lambda p: Param.from_tensor(p.val()))
        loss = loss_fn.forward(model.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        if skip and step in SKIPPED:
            grads.remove(model.fc2.bias.id)
        if skip and step == SKIPPED.start:
            before_gap = model.fc2.bias.val()
        model = optim.step(lr, model.clone() if via_clone else model, grads)
        if skip and step == SKIPPED.stop - 1:
            after_gap = model.fc2.bias.val()
        losses.append(loss.numpy())
    run = {"loss": np.concatenate(losses), "final": engine_params(model)}
    if skip:
        run["before_gap"] = {"fc2.bias": before_gap}
        run["after_gap"] = {"fc2.bias": after_gap}
        run["fc2_bias_steps"] = optim.to_record()[model.fc2.bias.id].time
    return run


def _a1_engine_in(dtype, device):
    """The A1 model and input in `dtype` (the float32 values widened exactly for float64)."""
    arrays = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in a1_arrays().items()}

    def linear(name):
        weight = Tensor.from_numpy(np.ascontiguousarray(arrays[f"{name}.weight"].T), device)
        bias = Tensor.from_numpy(arrays[f"{name}.bias"], device)
        return Linear(weight=Param.from_tensor(weight), bias=Param.from_tensor(bias))

    model = A1(linear("fc1"), linear("fc2"))
    return model, Tensor.from_numpy(arrays["x"], device), Tensor.from_numpy(arrays["y"], device)


def _engine_long(config, dtype):
    """The same LONG_STEPS steps: burn's loop in `dtype`."""
    device = Device.flex().autodiff()
    model, x, y = _a1_engine_in(dtype, device)
    optim = config.init()
    loss_fn = CrossEntropyLossConfig().init(device)
    rows = []
    for step in range(1, LONG_STEPS + 1):
        grads = GradientsParams.from_grads(loss_fn.forward(model.forward(x), y).backward(), model)
        model = optim.step(ADAPTIVE_LR, model, grads)
        if step in SNAPSHOTS:
            rows.append(np.concatenate([v.numpy().ravel() for v in engine_params(model).values()]))
    return {"params": np.stack(rows)}


def engine_side():
    momentum = MomentumConfig(momentum=0.9, dampening=TORCH_DAMPENING)
    return {
        "aligned": {
            "sgd_momentum": _engine_run(SgdConfig(momentum=momentum), SGD_LR),
            "sgd_nesterov": _engine_run(SgdConfig(momentum=momentum.with_nesterov(True)), SGD_LR),
            "sgd_weight_decay": _engine_run(
                SgdConfig(momentum=momentum, weight_decay=WeightDecayConfig(0.01)), SGD_LR
            ),
            "adam": _engine_run(AdamConfig(epsilon=TORCH_EPS), ADAPTIVE_LR),
            "adam_amsgrad": _engine_run(AdamConfig(epsilon=TORCH_EPS, amsgrad=True), ADAPTIVE_LR),
            "adamw": _engine_run(
                AdamWConfig(epsilon=TORCH_EPS, weight_decay=TORCH_ADAMW_WD), ADAPTIVE_LR
            ),
            "rmsprop": _engine_run(
                RmsPropConfig(momentum=TORCH_RMSPROP_MOMENTUM, epsilon=TORCH_EPS), ADAPTIVE_LR
            ),
            "rmsprop_centered": _engine_run(
                RmsPropConfig(momentum=0.9, epsilon=TORCH_EPS, centered=True), ADAPTIVE_LR
            ),
            "adagrad": _engine_run(AdaGradConfig(epsilon=TORCH_ADAGRAD_EPS), SGD_LR),
        },
        "defaults": {
            "sgd_momentum": _engine_run(SgdConfig(momentum=MomentumConfig()), SGD_LR),
            "adam": _engine_run(AdamConfig(), ADAPTIVE_LR),
            "adamw": _engine_run(AdamWConfig(), ADAPTIVE_LR),
            "rmsprop": _engine_run(RmsPropConfig(), ADAPTIVE_LR),
            "adagrad": _engine_run(AdaGradConfig(), SGD_LR),
        },
        "skip": _engine_run(
            AdamWConfig(epsilon=TORCH_EPS, weight_decay=TORCH_ADAMW_WD), ADAPTIVE_LR, skip=True
        ),
        "clone": _engine_run(AdamConfig(epsilon=TORCH_EPS), ADAPTIVE_LR, via_clone=True),
        "rebuilt": _engine_run(AdamConfig(epsilon=TORCH_EPS), ADAPTIVE_LR, rebuild=True),
        "long": {
            dtype: {
                "adam": _engine_long(AdamConfig(epsilon=TORCH_EPS), dtype),
                "adamw": _engine_long(
                    AdamWConfig(epsilon=TORCH_EPS, weight_decay=TORCH_ADAMW_WD), dtype
                ),
            }
            for dtype in LONG_DTYPES
        },
    }


# ---- checks ---------------------------------------------------------------------------------

# Measured over the 20 steps (max over the loss and the final params of the runs listed).
# Adam-style: burn's float32 bias corrections, a formula difference (the `long` differ below
# shows it in float64 too), not rounding. RMSProp: burn's `1 - alpha` in float32 (the update is
# about 5e-7 relative larger from step 1: float64 gap 9.0e-7 at step 20), which float32 rounding
# in the centered variance `sa - ga^2` and in the momentum buffer then enlarges.
ADAM_BIAS_CORRECTION = Tolerance(
    atol=1e-5,
    reason="burn's float32 bias corrections 1 - beta^t (formula, see the long.* differ): "
    "measured max 3.3e-6 over 20 steps (Adam, AMSGrad, AdamW, skip, rebuilt, clone, burn's "
    "defaults); up to 3.3e-6 with float64 on both sides",
)
RMSPROP_ALPHA = Tolerance(
    atol=1e-5,
    reason="burn's float32 1 - alpha (float64 gap 9.0e-7 at step 20) enlarged by float32 "
    "rounding: measured max 2.2e-6 centered, 4.4e-6 with burn's defaults (momentum 0.9) over 20 "
    "steps",
)
TOLERANCES = {
    "aligned.adam*": ADAM_BIAS_CORRECTION,
    "aligned.rmsprop_centered.*": RMSPROP_ALPHA,
    "skip.*": ADAM_BIAS_CORRECTION,
    "rebuilt.*": ADAM_BIAS_CORRECTION,
}
_STUDY_TOL = default_tolerance("float32")


def _drift_tol(name):
    """The tolerance for comparing two runs of `name` that should match: Adam and AdamW differ
    by their bias corrections, RMSProp by its `1 - alpha`; SGD and AdaGrad agree within the
    default."""
    if name.startswith("adam"):
        return ADAM_BIAS_CORRECTION
    return RMSPROP_ALPHA if name.startswith("rmsprop") else None


def _parts_at(k, tol):
    """The loss trajectories agree (within the check's tolerance) for the first k steps and are
    further apart than it at step k."""
    atol = (tol or _STUDY_TOL).atol

    def holds(torch_loss, engine_loss):
        gap = np.abs(np.asarray(torch_loss, np.float64) - np.asarray(engine_loss, np.float64))
        return bool((gap[:k] <= atol).all() and gap[k] > atol)

    return predicate(f"losses agree for steps 0..{k - 1} and part at step {k}", holds)


# Dampening only scales the velocity from the second update on (the first sets v = g), so the
# losses part at step 2; an epsilon or a weight decay changes the first update already.
_DEFAULTS = {
    "sgd_momentum": ("harness.engine.optim.MomentumConfig", 2),
    "adam": ("harness.engine.optim.Adam", 1),
    "adamw": ("harness.engine.optim.AdamW", 1),
    "rmsprop": ("harness.engine.optim.RmsProp", 1),
    "adagrad": ("harness.engine.optim.AdaGrad", 1),
}


def _grows_then_levels(torch_params, engine_params):
    """The largest param gap at each snapshot: a line over steps 1..50 (slope 5e-8..3e-7 a
    step, correlation > 0.95), above 1e-6 from step 20 on, and level at the end (step 120
    within 25% of step 80). Measured (Adam, AdamW): slope 1.1e-7 (float32), 1.2e-7 (float64);
    2.9e-6 to 3.2e-6 at step 20; 5.5e-6 to 6.0e-6 (float32), 6.2e-6 to 6.5e-6 (float64) at step
    120."""
    gap = np.abs(np.asarray(torch_params, np.float64) - np.asarray(engine_params, np.float64))
    gap = gap.max(axis=1)
    steps = np.asarray(SNAPSHOTS)
    early = steps <= 50
    slope = np.polyfit(steps[early], gap[early], 1)[0]
    linear = np.corrcoef(steps[early], gap[early])[0, 1] > 0.95
    level = gap[steps == LONG_STEPS][0] / gap[steps == 80][0]
    return bool(
        5e-8 <= slope <= 3e-7
        and linear
        and (gap[steps >= 20] > 1e-6).all()
        and 0.8 <= level <= 1.25
    )


_BIAS_CORRECTION_GAP = predicate(
    "largest param gap grows linearly over steps 1..50 (5e-8..3e-7 a step), stays above 1e-6 "
    "from step 20, then levels off as the updates shrink; the same in float64 (formula, not "
    "rounding)",
    _grows_then_levels,
)

_ADAMW = "aligned AdamW: fc2.bias got no gradient at steps 5..9"
_UNCHANGED = Tolerance.exact("a param without a gradient is returned unchanged, bit for bit")

CHECKS = [
    agree("aligned.*"),
    # PyTorch's defaults are its aligned runs; the engine's are its "defaults" runs.
    *[
        differ(
            "loss",
            left=f"torch:aligned.{name}.",
            right=f"engine:defaults.{name}.",
            because=because,
            relation=_parts_at(k, _drift_tol(name)),
            tol=_drift_tol(name),
        )
        for name, (because, k) in _DEFAULTS.items()
    ],
    *[
        agree(
            "*",
            f"torch:burn_defaults.{name}.",
            f"engine:defaults.{name}.",
            tol=_drift_tol(name),
            note="PyTorch given burn's default for the hyperparameters that differ",
        )
        for name in _DEFAULTS
    ],
    agree("skip.*", note=_ADAMW),
    agree("fc2.bias", "engine:skip.before_gap.", "engine:skip.after_gap.", tol=_UNCHANGED),
    expect("skip.fc2_bias_steps", "engine", STEPS - len(SKIPPED)),
    agree("*", "torch:aligned.adam.", "engine:clone.", tol=ADAM_BIAS_CORRECTION),
    agree("*", "engine:clone.", "engine:aligned.adam.", tol=Tolerance.exact("same ParamIds")),
    agree("rebuilt.*", note="new ParamIds: the engine's Adam restarts like a new torch optimizer"),
    differ(
        "long.*.adam.params",
        because="harness.engine.optim.Adam",
        relation=_BIAS_CORRECTION_GAP,
    ),
    differ(
        "long.*.adamw.params",
        because="harness.engine.optim.AdamW",
        relation=_BIAS_CORRECTION_GAP,
    ),
]
