"""burn-nn's `Embedding` / `EmbeddingConfig(n_embedding, d_model)` (crates/burn-nn/src/modules/
embedding.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747): weight
`[n_embedding, d_model]` initialised `Normal(0, 1)` (PyTorch's `nn.Embedding` default too;
same layout, so the importer loads it as stored); `forward(indices [batch, seq] int) ->
[batch, seq, d_model]` through the `embedding` primitive (gather rows, scatter-add backward).

PyTorch difference: no `padding_idx`, `max_norm` or sparse gradients; an index out of range
raises flex's text.
"""

from __future__ import annotations

import dataclasses

from harness.engine import module_ops
from harness.engine.module import Config, Module, Param
from harness.engine.tensor import Tensor

from .initializer import Normal

__all__ = ["Embedding", "EmbeddingConfig"]


@dataclasses.dataclass(frozen=True)
class EmbeddingConfig(Config):
    n_embedding: int
    d_model: int
    initializer: object = Normal(mean=0.0, std=1.0)

    def init(self, device) -> Embedding:
        return Embedding(self.initializer.init((self.n_embedding, self.d_model), device))


class Embedding(Module):
    def __init__(self, weight: Param) -> None:
        self.weight = weight

    def forward(self, indices: Tensor) -> Tensor:
        return module_ops.embedding(self.weight.val(), indices)
