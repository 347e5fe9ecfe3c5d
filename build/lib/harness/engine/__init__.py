"""The reference engine: NumPy tensors with burn 0.22's autodiff, modules, losses and optimizers.

Public names mirror burn in Python spelling (docs: ../../../shared/design.md, section 2).
Each submodule re-exports its public names in its own block below; append new blocks, keep
the existing ones as they are.
"""

# --- device.py, errors.py, rules.py, autodiff.py, tensor.py (engine core) ---
from .autodiff import Gradients
from .device import Device
from .errors import (
    AutodiffError,
    DeviceMismatchError,
    DTypeMismatchError,
    MissingRuleError,
    ShapeError,
)
from .rules import BACKWARD_RULES, NON_DIFFERENTIABLE, unbroadcast
from .tensor import Tensor

__all__ = [
    "BACKWARD_RULES",
    "NON_DIFFERENTIABLE",
    "AutodiffError",
    "DTypeMismatchError",
    "Device",
    "DeviceMismatchError",
    "Gradients",
    "MissingRuleError",
    "ShapeError",
    "Tensor",
    "unbroadcast",
]

# --- module.py ---
from .module import (
    Config,
    Dropout,
    DropoutConfig,
    LayerNorm,
    LayerNormConfig,
    Linear,
    LinearConfig,
    Module,
    MovedValueError,
    Param,
    ParamId,
    Relu,
    seed,
)

__all__ += [
    "Config",
    "Dropout",
    "DropoutConfig",
    "LayerNorm",
    "LayerNormConfig",
    "Linear",
    "LinearConfig",
    "Module",
    "MovedValueError",
    "Param",
    "ParamId",
    "Relu",
    "seed",
]

# --- loss.py ---
from .loss import (  # noqa: E402
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    MseLoss,
    Reduction,
)

__all__ += [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "MseLoss",
    "Reduction",
]

# --- optim.py ---
from .optim import (  # noqa: E402
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClipping,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    ModuleOptimizer,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

__all__ += [
    "AdaGradConfig",
    "AdamConfig",
    "AdamWConfig",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "ModuleOptimizer",
    "MomentumConfig",
    "RmsPropConfig",
    "SgdConfig",
    "WeightDecayConfig",
]

# --- lr_scheduler.py ---
from .lr_scheduler import (  # noqa: E402
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)

__all__ += [
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrSchedulerConfig",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "NoamLrSchedulerConfig",
    "SchedulerReduction",
    "SequentialLrSchedulerConfig",
    "StepLrSchedulerConfig",
]
