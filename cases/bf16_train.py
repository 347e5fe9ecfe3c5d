"""Training in half precision: the A1 MLP and the small transformer 50 SGD steps in bfloat16
three ways, and loss scaling where float16 gradients underflow.

Three bfloat16 runs of A1 (lr 0.1, the same batch each step; loss and every param recorded per
step, in PyTorch's names and layout), and the same three of ``cases/transformer_train.py``'s
transformer and task (its model and weights, loaded from that file; SGD with lr 0.05 instead of
Adam, whose float32 bias corrections in burn are a formula difference at every precision,
shown there; the loss, ``head.bias`` and the last layer's ``norm2.weight`` per step):

- ``torch:bfloat16.mlp.params``: torch with bfloat16 parameters and inputs (``model.to(
  torch.bfloat16)``): every op and the SGD update ``p.add_(g, alpha=-lr)`` round to bfloat16;
- ``torch:bfloat16.mlp.autocast``: ``torch.autocast("cpu", dtype=torch.bfloat16)`` with float32
  master weights: the linears run in bfloat16, cross-entropy in float32 (autocast's fp32 list),
  the update in float32. Recorded rounded to bfloat16 (the values its forward uses; the loss, a
  float32 under autocast, likewise), so that each pair is compared in one format;
- ``engine:bfloat16.mlp``: the engine in bfloat16 (burn-flex: each op computed in float32 and
  rounded once; burn's SGD update ``p - g * lr`` rounds twice, and ``mul_scalar`` rounds the
  rate to bfloat16 first: 0.1 becomes 0.10009765625, 0.05 becomes 0.050048828125, where torch's
  ``add_(g, alpha=-lr)`` keeps it in float32. A 2**-10 relative difference of every update,
  below the half format's resolution over these 50 steps: the half verdict is rounding).

All start from A1's float32 values rounded to bfloat16. The references are the same experiment
in float32 (``float32.mlp``: for both torch runs the plain float32 loop, which is what autocast
and bfloat16 parameters compute without the half format) and in float64 (the float64 rerun,
recorded under each run's keys). Each pair gets the half verdict (``harness.trajectory.half``):
rounding (the gap shrinks in float32 and both sides round alike), or a formula difference:
accumulation (one side keeps more of the computation in float32) or a gap that does not shrink.

Loss scaling (``float16.loss_scale``): the A1 loss weighted by ``2**-20`` (a small auxiliary
term) has gradients of about 1e-8, below float16's smallest subnormal (``2**-24``, 6e-8), so a
float16 backward flushes them to zero. Measured here: ``unscaled`` (torch, float16 parameters)
and ``autocast`` (torch autocast float16, float32 master weights, no scaler) lose them;
``torch.amp.GradScaler("cpu")`` (initial scale ``2**16``; CPU supports it in torch 2.13)
scales the loss before the backward and unscales the float32 gradients, which then agree
with the float32 run's. burn has no loss scaler: ``git grep -i -E
"gradscaler|grad_scaler|loss_scale|lossscale|scaler"`` over ``crates/`` at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747 finds nothing of the kind (one unrelated CTC test
name), nor autocast or master weights (``autocast|mixed.precision|master.weight|unscale``:
only quantization and storage adapters). PyTorch difference: a burn float16 run has no
GradScaler, so its underflowed gradients stay zero; the engine's float16 run
(``engine:float16.loss_scale.unscaled``) is checked to equal torch's unscaled float16 run
there, not the scaled one.
"""

import importlib.util
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import A1_LR, PARAM_NAMES, a1_engine, a1_torch, engine_params, import_torch_weights
from harness.case import agree, expect, predicate, trajectory
from harness.engine import (
    CrossEntropyLossConfig,
    Device,
    FloatDType,
    GradientsParams,
    SgdConfig,
    Tensor,
)
from harness.engine.module.core import Param
from harness.tolerances import Tolerance

STEPS = 50
TRANSFORMER_LR = 0.05
TRACKED = ("head.bias", "encoder.layers.1.norm2.weight")  # recorded at every step, with the loss
LOSS_WEIGHT = 2.0**-20  # the loss-scaling experiment's weight: gradients near 1e-8
INIT_SCALE = 2.0**16  # GradScaler's default initial scale

# ---- torch side ------------------------------------------------------------------------------


def _torch_mlp(dtype, autocast=False):
    """50 SGD steps of A1 with parameters and inputs in ``dtype``; ``autocast``: float32
    parameters, the forward under bfloat16 autocast."""
    model, x, y = a1_torch()
    model, x = model.to(dtype), x.to(dtype)
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    losses, params = [], []
    for _ in range(STEPS):
        optim.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
        params.append({n: p.detach().clone() for n, p in model.named_parameters()})
    run = {"loss": torch.stack(losses)}
    run |= {f"params.{n}": torch.stack([step[n] for step in params]) for n in PARAM_NAMES}
    if autocast:  # recorded as its bfloat16 forward sees them
        run = {k: v.to(torch.bfloat16) for k, v in run.items()}
    return run


def _transformer_case():
    """``cases/transformer_train.py``, the one definition of the small transformer and its
    task (loaded from beside this file, as ``harness.case.load_case`` loads a case)."""
    path = Path(__file__).with_name("transformer_train.py")
    spec = importlib.util.spec_from_file_location("cases.transformer_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TT = _transformer_case()


def _torch_transformer(dtype, autocast=False):
    """50 SGD steps of the small transformer: float32 weights (and position table) cast to
    ``dtype`` as ``model.to(dtype)`` does; ``autocast``: float32, under bfloat16 autocast.
    The float64 rerun builds its table in float64, as transformer_train's does."""
    model = TT._torch_model(torch.float64 if dtype == torch.float64 else torch.float32)
    model = model.to(dtype)
    x, y = (torch.from_numpy(a) for a in TT._task())
    optim = torch.optim.SGD(model.parameters(), lr=TRANSFORMER_LR)
    losses, tracked = [], []
    for _ in range(STEPS):
        optim.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(x).reshape(TT.B * TT.S, TT.V), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
        state = model.state_dict()
        tracked.append({k: state[k].detach().clone() for k in TRACKED})
    run = {"loss": torch.stack(losses)}
    run |= {k: torch.stack([step[k] for step in tracked]) for k in TRACKED}
    if autocast:
        run = {k: v.to(torch.bfloat16) for k, v in run.items()}
    return run


def _torch_grads(mode):
    """The first step's gradients of the weighted loss: ``unscaled`` (float16 parameters),
    ``autocast`` (float16 autocast, float32 master weights, no scaler), ``scaled``
    (``GradScaler``, then ``unscale_``) or ``float32``."""
    model, x, y = a1_torch()
    if mode == "unscaled":
        model, x = model.to(torch.float16), x.to(torch.float16)
    optim = torch.optim.SGD(model.parameters(), lr=A1_LR)
    scaler = torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, enabled=mode == "scaled")
    with torch.autocast("cpu", dtype=torch.float16, enabled=mode in ("autocast", "scaled")):
        loss = F.cross_entropy(model(x), y) * LOSS_WEIGHT
    scaler.scale(loss).backward()
    scaler.unscale_(optim)
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def torch_side(dtype=None):
    if dtype == torch.float64:  # the float64 rerun, under each half run's keys
        mlp, transformer = _torch_mlp(torch.float64), _torch_transformer(torch.float64)
        return {
            "bfloat16": {
                "mlp": {"params": mlp, "autocast": mlp},
                "transformer": {"params": transformer, "autocast": transformer},
            }
        }
    return {
        "bfloat16": {
            "mlp": {
                "params": _torch_mlp(torch.bfloat16),
                "autocast": _torch_mlp(torch.float32, autocast=True),
            },
            "transformer": {
                "params": _torch_transformer(torch.bfloat16),
                "autocast": _torch_transformer(torch.float32, autocast=True),
            },
        },
        "float32": {
            "mlp": _torch_mlp(torch.float32),
            "transformer": _torch_transformer(torch.float32),
        },
        "float16": {
            "loss_scale": {mode: _torch_grads(mode) for mode in ("unscaled", "autocast", "scaled")}
        },
        "float32_grads": {"loss_scale": _torch_grads("float32")},
    }


# ---- engine side -----------------------------------------------------------------------------


def _engine_mlp(dtype):
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device, dtype=dtype)
    optim, loss_fn = SgdConfig().init(), CrossEntropyLossConfig().init(device)
    losses, params = [], []
    for _ in range(STEPS):
        loss = loss_fn.forward(model.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(A1_LR, model, grads)
        losses.append(loss.numpy().reshape(()))  # burn's [1] loss, as PyTorch's 0-d one
        params.append({k: v.numpy() for k, v in engine_params(model).items()})
    run = {"loss": np.stack(losses)}
    return run | {f"params.{n}": np.stack([step[n] for step in params]) for n in PARAM_NAMES}


def _engine_transformer(dtype):
    """The same loop in the engine: PyTorch's float32 weights imported, each param cast to
    ``dtype`` (burn's ``cast(FloatDType::BF16)``; the float64 rerun imports float64 weights)."""
    device = Device.flex().autodiff()
    start = TT._torch_model(torch.float64 if dtype == "float64" else torch.float32)
    model, result = import_torch_weights(start, TT.Model(device))
    assert not (result.missing or result.errors), result
    if dtype == "bfloat16":
        model = model.map(lambda p: Param.from_tensor(p.val().cast(FloatDType.BF16).detach()))
    x_np, y_np = TT._task()
    x, y = Tensor.from_numpy(x_np, device), Tensor.from_numpy(y_np, device)
    optim, loss_fn = SgdConfig().init(), CrossEntropyLossConfig().init(device)
    losses, tracked = [], []
    for _ in range(STEPS):
        loss = loss_fn.forward(model(x).reshape([TT.B * TT.S, TT.V]), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(TRANSFORMER_LR, model, grads)
        losses.append(loss.numpy().reshape(()))
        tracked.append(
            {
                "head.bias": model.head.bias.val().numpy(),
                "encoder.layers.1.norm2.weight": model.encoder.layers[1].norm_2.gamma.val().numpy(),
            }
        )
    run = {"loss": np.stack(losses)}
    return run | {k: np.stack([step[k] for step in tracked]) for k in TRACKED}


def _engine_grads(dtype):
    """The first step's gradients of the weighted loss, in ``dtype`` (burn has no scaler)."""
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device, dtype=dtype)
    loss = CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    grads = GradientsParams.from_grads(loss.mul_scalar(LOSS_WEIGHT).backward(), model)
    return {path: grads.get(p.id).numpy() for path, p in model.params()}


def engine_side(dtype=None):
    def runs(dtype):
        return {"mlp": _engine_mlp(dtype), "transformer": _engine_transformer(dtype)}

    if dtype == "float64":  # the float64 rerun, under the half runs' keys
        return {"bfloat16": runs("float64")}
    grads16 = _engine_grads("float16")
    return {
        "bfloat16": runs("bfloat16"),
        "float32": runs("float32"),
        "float16": {"loss_scale": {"unscaled": _torch_layout(grads16)}},
    }


def _torch_layout(grads):
    return {k: v.T if k.endswith("weight") else v for k, v in grads.items()}


# ---- checks ----------------------------------------------------------------------------------


def _half(model, left, right, expect_):
    """A half check between two of the runs ``params``, ``autocast`` (torch) and ``engine``."""

    def run(name, dtype="bfloat16"):
        side = "engine" if name == "engine" else "torch"
        at = f"{side}:{dtype}.{model}."
        return at if side == "engine" or dtype == "float32" else f"{at}{name}."

    return trajectory(
        "*",
        run(left),
        run(right),
        float32=(run(left, "float32"), run(right, "float32")),
        expect=expect_,
    )


_UNDERFLOWS = predicate(
    "every element is 0 (underflowed)", lambda v, _: bool(np.all(np.asarray(v) == 0))
)
_KEPT = predicate("no element is 0", lambda v, _: bool(np.all(np.asarray(v) != 0)))
_SCALED_TOL = Tolerance(
    5e-10,
    reason="gradients up to 1.7e-7 through a float16 forward: GradScaler's unscaled ones are "
    "up to 1.1e-10 from the float32 run's (measured), about 4.5x; unscaled ones miss by 8.8e-8",
)

GOLDEN_TOLERANCES = {
    "bfloat16.*": Tolerance(
        2.0**-7,
        ulps=8,
        reason="a golden of other numerics: torch's bfloat16 kernels of another CPU (ATen "
        "default against AVX2, the x86-64 baseline emulated) move the 50-step losses by up to "
        "3 bfloat16 ULP (0.0117 at 0.79) and the params within eps; the format's own rounding "
        "moves them further (each bfloat16 loss against its float32 rerun: up to 0.074, about "
        "5 ULP at 2.0, in the transformer); 8 ULP is that scale, not one CPU's bits",
    ),
}

CHECKS = [
    _half("mlp", "params", "engine", "rounding"),
    _half("mlp", "params", "autocast", "accumulation"),
    _half("mlp", "autocast", "engine", "accumulation"),
    _half("transformer", "params", "engine", "rounding"),
    _half("transformer", "params", "autocast", "accumulation"),
    _half("transformer", "autocast", "engine", "accumulation"),
    # Loss scaling: fc1's weight gradients (about 4e-8) flush to 0 in float16 without it.
    expect("fc1.weight", "torch:float16.loss_scale.unscaled.", _UNDERFLOWS),
    expect("fc1.weight", "torch:float16.loss_scale.autocast.", _UNDERFLOWS),
    expect("fc1.weight", "engine:float16.loss_scale.unscaled.", _UNDERFLOWS),
    expect("*", "torch:float16.loss_scale.scaled.", _KEPT),
    agree(
        "*", "torch:float16.loss_scale.scaled.", "torch:float32_grads.loss_scale.", tol=_SCALED_TOL
    ),
    # burn has no loss scaler (module docstring): the engine's float16 run is torch's unscaled.
    agree(
        "*",
        "torch:float16.loss_scale.unscaled.",
        "engine:float16.loss_scale.unscaled.",
        tol=Tolerance.exact("both round every op to float16 and scale nothing"),
        note="burn has no GradScaler: the engine's float16 gradients underflow as torch's do "
        "without one",
    ),
]
