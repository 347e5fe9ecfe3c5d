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

# --- loss/ (a package: one module per loss family) ---
from .loss import (  # noqa: E402
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
    CosineEmbeddingLoss,
    CosineEmbeddingLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    CTCLoss,
    CTCLossConfig,
    GaussianNLLLoss,
    GaussianNllLoss,
    GaussianNLLLossConfig,
    GaussianNllLossConfig,
    HingeEmbeddingLoss,
    HingeEmbeddingLossConfig,
    HuberLoss,
    HuberLossConfig,
    KLDivLoss,
    KLDivLossConfig,
    LpLoss,
    LpLossConfig,
    MarginRankingLoss,
    MarginRankingLossConfig,
    MseLoss,
    MultiMarginLoss,
    MultiMarginLossConfig,
    PoissonNllLoss,
    PoissonNllLossConfig,
    Reduction,
    SmoothL1Loss,
    SmoothL1LossConfig,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginLossConfig,
)

__all__ += [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CTCLoss",
    "CTCLossConfig",
    "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "GaussianNLLLoss",
    "GaussianNLLLossConfig",
    "GaussianNllLoss",
    "GaussianNllLossConfig",
    "HingeEmbeddingLoss",
    "HingeEmbeddingLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "KLDivLoss",
    "KLDivLossConfig",
    "LpLoss",
    "LpLossConfig",
    "MarginRankingLoss",
    "MarginRankingLossConfig",
    "MseLoss",
    "MultiMarginLoss",
    "MultiMarginLossConfig",
    "PoissonNllLoss",
    "PoissonNllLossConfig",
    "Reduction",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginLossConfig",
]

# --- optim.py ---
from .optim import (  # noqa: E402
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientClipping,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    LBFGSConfig,
    LineSearchFn,
    ModuleOptimizer,
    MomentumConfig,
    MuonConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

__all__ += [
    "AdaGradConfig",
    "AdamConfig",
    "AdamWConfig",
    "AdanConfig",
    "AdjustLrFn",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LBFGSConfig",
    "LineSearchFn",
    "ModuleOptimizer",
    "MomentumConfig",
    "MuonConfig",
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

# --- store/ (PyTorch and safetensors weights into modules) ---
from .store import (  # noqa: E402
    ApplyError,
    ApplyResult,
    FloatCastAdapter,
    KeyRemapper,
    PathFilter,
    PytorchReader,
    PytorchStore,
    PyTorchToBurnAdapter,
    SafetensorsStore,
)

__all__ += [
    "ApplyError",
    "ApplyResult",
    "FloatCastAdapter",
    "KeyRemapper",
    "PathFilter",
    "PyTorchToBurnAdapter",
    "PytorchReader",
    "PytorchStore",
    "SafetensorsStore",
]

# --- nn/ (vision modules), activation functions, burn::tensor::module functions ---
from . import activation, module_ops, nn  # noqa: E402
from .nn import (  # noqa: E402
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    AvgPool2d,
    AvgPool2dConfig,
    BatchNorm,
    BatchNormConfig,
    Conv1d,
    Conv1dConfig,
    Conv2d,
    Conv2dConfig,
    ConvTranspose2d,
    ConvTranspose2dConfig,
    Embedding,
    EmbeddingConfig,
    Gelu,
    GroupNorm,
    GroupNormConfig,
    Initializer,
    InstanceNorm,
    InstanceNormConfig,
    LeakyReluConfig,
    MaxPool2d,
    MaxPool2dConfig,
    PaddingConfig1d,
    PaddingConfig2d,
    PReluConfig,
    RmsNorm,
    RmsNormConfig,
    RunningState,
)

__all__ += [
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "BatchNorm",
    "BatchNormConfig",
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "Embedding",
    "EmbeddingConfig",
    "Gelu",
    "GroupNorm",
    "GroupNormConfig",
    "Initializer",
    "InstanceNorm",
    "InstanceNormConfig",
    "LeakyReluConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "PReluConfig",
    "PaddingConfig1d",
    "PaddingConfig2d",
    "RmsNorm",
    "RmsNormConfig",
    "RunningState",
    "activation",
    "module_ops",
    "nn",
]
