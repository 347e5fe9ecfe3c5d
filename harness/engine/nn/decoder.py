"""burn's transformer decoder (crates/burn-nn/src/modules/transformer/decoder.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747; tests `test_autoregressive_norm_last`,
`test_autoregressive_norm_first`, `display`): `TransformerDecoderConfig`,
`TransformerDecoder`, `TransformerDecoderLayer`, `TransformerDecoderInput` and the
autoregressive caches (`new_autoregressive_cache`, `forward_autoregressive_inference`).

The cached path computes, per call, only the last target position through the norms, the
feed-forward and the attention projections (harness.engine.nn.cache.TensorCache), and the
cross-attention's keys and values of the memory once; its outputs equal the causally masked
full forward's at every position (burn's tests compare them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.engine.module import DropoutConfig, Module
from harness.engine.tensor import Tensor

from .attention import MhaCache, MhaInput
from .cache import TensorCache
from .transformer import TransformerStack, TransformerStackConfig

__all__ = [
    "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerDecoderLayer",
    "TransformerDecoderLayerAutoregressiveCache",
]


@dataclass(frozen=True)
class TransformerDecoderConfig(TransformerStackConfig):
    """burn's `TransformerDecoderConfig::new(d_model, d_ff, n_heads, n_layers)`.

    PyTorch differences (`nn.TransformerDecoderLayer(d_model, nhead)` in
    `nn.TransformerDecoder(layer, num_layers)`): the activation defaults to Gelu (PyTorch
    relu); inputs are batch-first (PyTorch `batch_first=False`); `d_ff` has no default
    (PyTorch 2048); dropout 0.1 and `layer_norm_eps` 1e-5 agree; no final `norm`.
    """

    def init(self, device) -> TransformerDecoder:
        layers = [TransformerDecoderLayer.new(self, device) for _ in range(self.n_layers)]
        return TransformerDecoder(layers, self)


@dataclass(frozen=True)
class TransformerDecoderInput:
    """`target` `[batch, seq_t, d_model]` and `memory` `[batch, seq_m, d_model]`, each with
    optional `mask_pad` `[batch, seq]` and `mask_attn` `[batch, seq_t, seq]` (True = masked)."""

    target: Tensor
    memory: Tensor
    target_mask_pad: Tensor | None = None
    target_mask_attn: Tensor | None = None
    memory_mask_pad: Tensor | None = None
    memory_mask_attn: Tensor | None = None

    @classmethod
    def new(cls, target: Tensor, memory: Tensor) -> TransformerDecoderInput:
        return cls(target, memory)

    def with_target_mask_pad(self, mask: Tensor) -> TransformerDecoderInput:
        return replace(self, target_mask_pad=mask)

    def with_target_mask_attn(self, mask: Tensor) -> TransformerDecoderInput:
        return replace(self, target_mask_attn=mask)

    def with_memory_mask_pad(self, mask: Tensor) -> TransformerDecoderInput:
        return replace(self, memory_mask_pad=mask)

    def with_memory_mask_attn(self, mask: Tensor) -> TransformerDecoderInput:
        return replace(self, memory_mask_attn=mask)


@dataclass
class TransformerDecoderLayerAutoregressiveCache:
    """burn's per-layer cache: the two attentions' `MhaCache`s and one `TensorCache` per
    norm and for the feed-forward."""

    cross_attn: MhaCache = field(default_factory=MhaCache.autoregressive_cross_attention)
    self_attn: MhaCache = field(default_factory=MhaCache.autoregressive)
    pwff: TensorCache = field(default_factory=TensorCache.empty)
    norm_1: TensorCache = field(default_factory=TensorCache.empty)
    norm_2: TensorCache = field(default_factory=TensorCache.empty)
    norm_3: TensorCache = field(default_factory=TensorCache.empty)


@dataclass
class TransformerDecoderAutoregressiveCache:
    layers: list[TransformerDecoderLayerAutoregressiveCache]

    @classmethod
    def empty(cls, n_layers: int) -> TransformerDecoderAutoregressiveCache:
        return cls([TransformerDecoderLayerAutoregressiveCache() for _ in range(n_layers)])


class _Direct:
    """The uncached counterpart of the caches: every call computes everything."""

    @staticmethod
    def norm(cache, module, x: Tensor) -> Tensor:
        return module(x)

    @staticmethod
    def attention(cache, mha, input: MhaInput) -> Tensor:
        return mha(input).context


class _Cached:
    @staticmethod
    def norm(cache: TensorCache, module, x: Tensor) -> Tensor:
        return cache.forward_autoregressive(x, 1, module)

    @staticmethod
    def attention(cache: MhaCache, mha, input: MhaInput) -> Tensor:
        return mha.forward_cache(input, cache).context


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over the memory and feed-forward, with residuals;
    post-norm by default. Fields in burn's order: `cross_attn`, `self_attn`, `pwff`,
    `norm_1`, `norm_2`, `norm_3`, `dropout`.

    PyTorch differences (`nn.TransformerDecoderLayer`):
    - Post-norm (the default) applies `norm_1` after self-attention, `norm_2` after
      cross-attention, `norm_3` after the feed-forward: PyTorch's `norm1`, `norm2`, `norm3`.
      With `norm_first=True` burn normalises before self-attention with `norm_3`, before
      cross-attention with `norm_1` and before the feed-forward with `norm_2`; PyTorch with
      `norm1`, `norm2`, `norm3`: import a pre-norm layer through
      `harness.engine.nn.store_rules.DECODER_NORM_FIRST_REMAPPING`.
    - PyTorch's `multihead_attn`, `linear1` / `linear2` are burn's `cross_attn`,
      `pwff.linear_inner` / `pwff.linear_outer` (the importer renames them); one `dropout`
      serves the three residual branches (PyTorch `dropout1..3`, same p).
    - Attention masks fill with `min_float` and dropout acts on the scores (see
      `MultiHeadAttention`).
    """

    def __init__(self, cross_attn, self_attn, pwff, norm_1, norm_2, norm_3, dropout, norm_first):
        self.cross_attn = cross_attn
        self.self_attn = self_attn
        self.pwff = pwff
        self.norm_1 = norm_1
        self.norm_2 = norm_2
        self.norm_3 = norm_3
        self.dropout = dropout
        self.norm_first = norm_first

    @classmethod
    def new(cls, config: TransformerDecoderConfig, device) -> TransformerDecoderLayer:
        self_attn, cross_attn = config.attention(device), config.attention(device)
        norm = config.layer_norm()
        norm_1, norm_2, norm_3 = norm.init(device), norm.init(device), norm.init(device)
        dropout = DropoutConfig(config.dropout).init()
        pwff = config.feed_forward(device)
        return cls(cross_attn, self_attn, pwff, norm_1, norm_2, norm_3, dropout, config.norm_first)

    def forward(self, input: TransformerDecoderInput) -> TransformerDecoderInput:
        return self._run(input, _Direct, TransformerDecoderLayerAutoregressiveCache())

    def forward_autoregressive_inference(
        self, input: TransformerDecoderInput, cache: TransformerDecoderLayerAutoregressiveCache
    ) -> TransformerDecoderInput:
        return self._run(input, _Cached, cache)

    def _run(self, input: TransformerDecoderInput, via, cache) -> TransformerDecoderInput:
        """burn's `forward` (`via` = _Direct) and `forward_autoregressive_inference`
        (`via` = _Cached): one body, as burn's two share their op order."""
        x = input.target
        residual = via.norm(cache.norm_3, self.norm_3, x) if self.norm_first else x
        self_input = MhaInput(
            residual, residual, residual, input.target_mask_pad, input.target_mask_attn
        )
        residual = via.attention(cache.self_attn, self.self_attn, self_input)
        x = x + self.dropout(residual)

        if self.norm_first:
            residual = via.norm(cache.norm_1, self.norm_1, x)
        else:
            x = residual = via.norm(cache.norm_1, self.norm_1, x)
        memory = input.memory
        cross_input = MhaInput(
            residual, memory, memory, input.memory_mask_pad, input.memory_mask_attn
        )
        residual = via.attention(cache.cross_attn, self.cross_attn, cross_input)
        x = x + self.dropout(residual)

        if self.norm_first:
            residual = via.norm(cache.norm_2, self.norm_2, x)
        else:
            x = residual = via.norm(cache.norm_2, self.norm_2, x)
        residual = via.norm(cache.pwff, self.pwff, residual)
        x = x + self.dropout(residual)

        if not self.norm_first:
            x = via.norm(cache.norm_3, self.norm_3, x)
        return replace(input, target=x)


class TransformerDecoder(TransformerStack):
    """The layers in order, each fed the previous one's target and the same memory and
    masks; `forward` returns the last target."""

    def forward(self, input: TransformerDecoderInput) -> Tensor:
        for layer in self.layers:
            input = layer.forward(input)
        return input.target

    def forward_autoregressive_inference(
        self, input: TransformerDecoderInput, cache: TransformerDecoderAutoregressiveCache
    ) -> Tensor:
        for layer, layer_cache in zip(self.layers, cache.layers, strict=True):
            input = layer.forward_autoregressive_inference(input, layer_cache)
        return input.target

    def new_autoregressive_cache(self) -> TransformerDecoderAutoregressiveCache:
        return TransformerDecoderAutoregressiveCache.empty(len(self.layers))
