"""Gradients per ParamId, gradient clipping and the optimizers of burn-optim
(reference-engine.md sections 5 and 6), one file per burn file: `grads` (GradientsParams,
GradientsAccumulator), `clipping`, `base` (ModuleOptimizer, shared configs, in-place helpers),
`sgd`, `adam` (Adam, AdamW), `rmsprop`, `adagrad`, `adan`, `muon`, `lbfgs`; `groups`
(optimizer groups, per-param contexts, StateRecord; the groups themselves, `ParamGroup`, are
burn-core's and live in `harness.engine.module`).

An optimizer is built without params: `SgdConfig(...).init()` returns a `ModuleOptimizer` whose
`step(lr, module, grads)` walks the module's params in order and returns the **updated module**.
For each param with a gradient: clip (if configured), then the optimizer's own weight decay /
momentum, then the update, computed off the graph in the param's dtype with burn's op order and
burn's scalar types (f32 hyperparameters, f64 learning rate, both cast to the tensor dtype). The
new value is a fresh marked leaf with the **same ParamId**; state is stored per ParamId.

PyTorch differences, all deliberate (each is a case):
- binding: `torch.optim` holds parameter objects from construction; here gradients and state
  are found by ParamId at every step, so gradients of *another* module (new ParamIds) match
  nothing: the step is a silent no-op, as in PyTorch's "optimizer built on another model";
- out of place: `step` returns a new module and consumes the one passed in (using it again
  raises `MovedValueError`, the Python form of Rust's E0382); clones taken before the step keep
  the old values, where PyTorch aliases see the in-place update;
- `step` is not must-use: ignoring its result (e.g. passing `model.clone()`) loses the update,
  while a stateful optimizer's state has advanced;
- `grads` is taken by value in burn: the step removes the entries it uses from the
  GradientsParams passed in (PyTorch leaves `.grad` in place until `zero_grad()`);
- groups (`with_group`, `ParamGroup`, per-group rates from a `ModuleLearningRate`) are rules
  over ParamIds and paths with a catch-all base, not PyTorch's disjoint tensor lists: a param
  in two groups takes the last, a param in none the base optimizer (see `groups`);
- a param without gradient is skipped entirely: no decay, no state change, its step count does
  not advance (PyTorch also skips params whose `.grad` is None);
- defaults: epsilon 1e-5 everywhere (PyTorch 1e-8; AdaGrad 1e-10), AdamW weight decay 1e-4
  (PyTorch 1e-2), momentum dampening 0.1 (PyTorch 0), RMSProp momentum 0.9 (PyTorch 0);
- gradient-norm clipping is per parameter and runs inside the step (PyTorch's
  `clip_grad_norm_` uses one global norm over all params, eps 1e-6, before `step()`);
- Adam and AdamW compute the bias corrections `1 - beta^t` in f32 from f32 betas (PyTorch:
  f64), a formula-level difference that grows with the step count (see `adam`);
- Muon orthogonalises in the param's dtype (PyTorch's `torch.optim.Muon` in bfloat16).

State is held by the optimizer and updated in place (see `base`); a step allocates one new
array per param, its new value.
"""

from harness.engine.module.param_group import ParamGroup, ParamGroupError
from harness.engine.optim.adagrad import AdaGrad, AdaGradConfig, AdaGradState
from harness.engine.optim.adam import Adam, AdamConfig, AdamW, AdamWConfig, AdaptiveMomentumState
from harness.engine.optim.adan import Adan, AdanConfig, AdaptiveNesterovMomentumState
from harness.engine.optim.base import (
    ModuleOptimizer,
    MomentumConfig,
    OptimizerState,
    TensorOptimizer,
    WeightDecayConfig,
)
from harness.engine.optim.clipping import GradientClipping, GradientClippingConfig
from harness.engine.optim.grads import GradientsAccumulator, GradientsParams
from harness.engine.optim.groups import StateRecord
from harness.engine.optim.lbfgs import LBFGS, LBFGSConfig, LBFGSState, LineSearchFn
from harness.engine.optim.muon import AdjustLrFn, Muon, MuonConfig
from harness.engine.optim.rmsprop import RmsProp, RmsPropConfig, RmsPropState
from harness.engine.optim.sgd import Sgd, SgdConfig, SgdState

__all__ = [
    "LBFGS",
    "AdaGrad",
    "AdaGradConfig",
    "AdaGradState",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "Adan",
    "AdanConfig",
    "AdaptiveMomentumState",
    "AdaptiveNesterovMomentumState",
    "AdjustLrFn",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LBFGSConfig",
    "LBFGSState",
    "LineSearchFn",
    "ModuleOptimizer",
    "MomentumConfig",
    "Muon",
    "MuonConfig",
    "OptimizerState",
    "ParamGroup",
    "ParamGroupError",
    "RmsProp",
    "RmsPropConfig",
    "RmsPropState",
    "Sgd",
    "SgdConfig",
    "SgdState",
    "StateRecord",
    "TensorOptimizer",
    "WeightDecayConfig",
]

# --- state.py, records.py, burnpack.py: optimizer and scheduler records in burnpack files ---
from harness.engine.optim.records import (
    RecordError,
    load_optimizer,
    load_optimizer_bytes,
    load_scheduler,
    optimizer_bytes,
    save_optimizer,
    save_scheduler,
)

__all__ += [
    "RecordError",
    "load_optimizer",
    "load_optimizer_bytes",
    "load_scheduler",
    "optimizer_bytes",
    "save_optimizer",
    "save_scheduler",
]
