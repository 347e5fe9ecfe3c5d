"""burn's `CrossAttentionConfig` / `CrossAttention` / `CrossAttentionCache` (crates/burn-nn/src/
modules/attention/cross_attention.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747; tests
`test_cross_attention_mha_shapes`, `test_cross_attention_gqa_shapes`,
`test_cross_attention_mqa_shapes`, `test_cross_attention_mask`,
`test_gqa_panic_if_n_heads_not_divisible_by_n_heads_kv`, `test_cross_attention_cache`).

Queries `[batch, l_q, d_model]` attend to a context `[batch, l_k, d_context]` with
`n_heads` query heads and `n_heads_kv` key/value heads of size `d_head` (grouped-query
attention when they differ: each key/value head serves `n_heads / n_heads_kv` query heads).
In burn's op order: the three projections, heads split (`reshape`, `swap_dims(1, 2)`),
key/value heads repeated, `q @ k^T * (1 / sqrt(d_head))`, the padding mask filled with
`min_float`, softmax (or `quiet_softmax`), dropout on the *weights*, `@ v`, heads merged,
the output projection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.engine.errors import expect_input
from harness.engine.module import Config, DropoutConfig, Module
from harness.engine.tensor import Tensor

from .attention import quiet_softmax
from .cache import TensorCache
from .initializer import Initializer, linear

__all__ = ["CrossAttention", "CrossAttentionCache", "CrossAttentionConfig"]


@dataclass(frozen=True)
class CrossAttentionConfig(Config):
    """burn's `CrossAttentionConfig::new(d_model, d_context, n_heads, n_heads_kv, d_head)`:
    dropout 0.1, min_float -1e4, quiet_softmax false. `init()` panics unless `n_heads_kv`
    divides `n_heads`; every Linear (with bias) is KaimingUniform with gain
    `1 / sqrt(d_head)`, i.e. U(±sqrt(3 / (d_head * fan_in))), not burn's usual 1/sqrt(3).

    PyTorch differences (`nn.MultiheadAttention(embed_dim, num_heads, kdim=, vdim=,
    batch_first=True)`, the counterpart when `n_heads_kv == n_heads` and
    `n_heads * d_head == d_model`): dropout 0.1 (PyTorch 0.0); grouped-query heads (PyTorch's
    module has none); PyTorch's `embed_dim` fixes the head size, burn's `d_head` is free.
    """

    d_model: int
    d_context: int
    n_heads: int
    n_heads_kv: int
    d_head: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False

    def init(self, device) -> CrossAttention:
        if self.n_heads_kv <= 0 or self.n_heads % self.n_heads_kv:
            raise ValueError("Query heads must be divisible by KV heads")
        init = Initializer.KaimingUniform(gain=1.0 / math.sqrt(self.d_head), fan_out_only=False)
        d_q, d_kv = self.n_heads * self.d_head, self.n_heads_kv * self.d_head
        return CrossAttention(
            query=linear(self.d_model, d_q, True, init, device),
            key=linear(self.d_context, d_kv, True, init, device),
            value=linear(self.d_context, d_kv, True, init, device),
            output=linear(d_q, self.d_model, True, init, device),
            dropout=DropoutConfig(self.dropout).init(),
            config=self,
        )


@dataclass
class CrossAttentionCache:
    """burn's `CrossAttentionCache::new()`: the projected keys and values, computed on the
    first `forward_cache` and reused after (whatever context is passed then)."""

    k: TensorCache = field(default_factory=TensorCache.empty)
    v: TensorCache = field(default_factory=TensorCache.empty)

    @classmethod
    def new(cls) -> CrossAttentionCache:
        return cls()


class CrossAttention(Module):
    """`forward(query, context, mask=None)`; `mask` `[batch, l_k]` bool, True = padded.

    PyTorch differences (see the config for the module): masked scores are filled with
    `min_float` (-1e4) rather than -inf (a fully masked row is uniform, PyTorch's NaN); the
    scale multiplies the scores after `q @ k^T` by `1 / sqrt(d_head)` rounded to the dtype
    (PyTorch scales `q` first, so they round differently); dropout acts on the softmax
    weights, as PyTorch's. The repeated key/value heads are concatenated copies here (burn
    `expand`s): the same values; their gradients are summed over the copies in index order.
    """

    def __init__(self, query, key, value, output, dropout, config: CrossAttentionConfig):
        self.query = query
        self.key = key
        self.value = value
        self.output = output
        self.dropout = dropout
        self.n_heads = config.n_heads
        self.n_heads_kv = config.n_heads_kv
        self.d_head = config.d_head
        self.scale = 1.0 / math.sqrt(config.d_head)
        self.min_float = config.min_float
        self.quiet_softmax = config.quiet_softmax

    def forward(self, query: Tensor, context: Tensor, mask: Tensor | None = None) -> Tensor:
        self._check(query, context)
        q = self.query(query)
        k, v = self._kv(self.key, context), self._kv(self.value, context)
        return self._attend(query.shape, q, k, v, mask)

    def forward_cache(
        self, query: Tensor, context: Tensor, mask: Tensor | None, cache: CrossAttentionCache
    ) -> Tensor:
        self._check(query, context)
        q = self.query(query)
        k = cache.k.forward_full(context, lambda c: self._kv(self.key, c))
        v = cache.v.forward_full(context, lambda c: self._kv(self.value, c))
        return self._attend(query.shape, q, k, v, mask)

    def _check(self, query: Tensor, context: Tensor) -> None:
        d_model = self.query.weight.val().shape[0]
        d_context = self.key.weight.val().shape[0]
        expect_input("CrossAttention", query.shape, ["batch_size", "l_q", d_model])
        expect_input("CrossAttention", context.shape, ["batch_size", "l_k", d_context])

    def _kv(self, layer, context: Tensor) -> Tensor:
        batch, l_k, _ = context.shape
        out = layer(context).reshape([batch, l_k, self.n_heads_kv, self.d_head])
        return out.swap_dims(1, 2)

    def _attend(self, query_shape, q: Tensor, k: Tensor, v: Tensor, mask) -> Tensor:
        batch, l_q, _ = query_shape
        l_k = k.shape[2]
        q = q.reshape([batch, l_q, self.n_heads, self.d_head]).swap_dims(1, 2)
        if self.n_heads != self.n_heads_kv:
            n_rep = self.n_heads // self.n_heads_kv
            k, v = _repeat_kv(k, n_rep), _repeat_kv(v, n_rep)
        scores = q.matmul(k.transpose()) * self.scale
        if mask is not None:
            scores = scores.mask_fill(mask.reshape([batch, 1, 1, l_k]), self.min_float)
        weights = quiet_softmax(scores, 3) if self.quiet_softmax else scores.softmax(3)
        output = self.dropout(weights).matmul(v).swap_dims(1, 2)
        return self.output(output.reshape([batch, l_q, self.n_heads * self.d_head]))


def _repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """burn's `repeat_kv`: `[b, h, l, d]` -> `[b, h * n_rep, l, d]`, each head repeated
    `n_rep` times in place (head i serves query heads i * n_rep ..)."""
    b, h, l, d = x.shape
    x = x.reshape([b, h, 1, l, d])
    return Tensor.cat([x] * n_rep, 2).reshape([b, h * n_rep, l, d])
