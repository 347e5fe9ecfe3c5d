"""Losses (reference-engine.md section 4): every loss of burn 0.22's `crates/burn-nn/src/loss/`,
one module per family.

Every loss is a composite of the core's primitive ops, in burn's op order, so its gradient comes
from the core's backward table and its rounding follows burn's formula. Reduced losses return
shape `[1]` (burn has no 0-d tensors; PyTorch returns a 0-d scalar). Invalid configs raise
`ValueError` with burn's panic message, at `init()` as burn does; invalid inputs raise at
`forward`. Configs and `forward` signatures read like burn's: `HuberLossConfig(0.5).init()`
(most loss configs take no device, as in burn), `loss.forward(predictions, targets,
Reduction.Mean)`.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from harness.engine.loss.binary_cross_entropy import (
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
)
from harness.engine.loss.cross_entropy import CrossEntropyLoss, CrossEntropyLossConfig
from harness.engine.loss.ctc import CTCLoss, CTCLossConfig
from harness.engine.loss.embedding import (
    CosineEmbeddingLoss,
    CosineEmbeddingLossConfig,
    TripletMarginLoss,
    TripletMarginLossConfig,
)
from harness.engine.loss.likelihood import (
    GaussianNLLLoss,
    GaussianNllLoss,
    GaussianNLLLossConfig,
    GaussianNllLossConfig,
    KLDivLoss,
    KLDivLossConfig,
    PoissonNllLoss,
    PoissonNllLossConfig,
)
from harness.engine.loss.margin import (
    HingeEmbeddingLoss,
    HingeEmbeddingLossConfig,
    MarginRankingLoss,
    MarginRankingLossConfig,
    MultiMarginLoss,
    MultiMarginLossConfig,
    SoftMarginLoss,
)
from harness.engine.loss.reduction import Reduction
from harness.engine.loss.regression import (
    HuberLoss,
    HuberLossConfig,
    LpLoss,
    LpLossConfig,
    MseLoss,
    SmoothL1Loss,
    SmoothL1LossConfig,
)
from harness.engine.loss.rnnt import RNNTLoss, RNNTLossConfig

__all__ = [
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
    "RNNTLoss",
    "RNNTLossConfig",
    "Reduction",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginLossConfig",
]
