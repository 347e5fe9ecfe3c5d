"""burn's multi-head attention (crates/burn-nn/src/modules/attention/mha.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): `MultiHeadAttentionConfig`, `MultiHeadAttention`,
`MhaInput`, `MhaOutput`, `MhaCache` (autoregressive decoding), and burn-tensor's
`quiet_softmax` (activation/base.rs).

Built from engine ops in burn's order, so its gradient comes from the primitives' rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.engine import divergence
from harness.engine.errors import expect_input
from harness.engine.module import Config, DropoutConfig, Module
from harness.engine.tensor import Tensor

from .cache import TensorCache
from .initializer import KAIMING_UNIFORM, Initializer, linear

__all__ = [
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "quiet_softmax",
]


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """burn's `quiet_softmax`: `exp(x - max) / (sum(exp(x - max)) + exp(-max))`, max detached.

    Softmax with an extra zero logit: a row of very negative scores gives weights near 0
    instead of a uniform row. PyTorch has no such function.
    """
    max_vals = x.detach().max_dim(dim)
    exp_x = (x - max_vals).exp()
    return exp_x / (exp_x.sum_dim(dim) + max_vals.neg().exp())


@dataclass(frozen=True)
class MultiHeadAttentionConfig(Config):
    """burn's `MultiHeadAttentionConfig::new(d_model, n_heads)` with its defaults.

    PyTorch differences (`nn.MultiheadAttention(embed_dim, num_heads)`): dropout defaults to
    0.1 (PyTorch 0.0); the four projections have their own bias switches (PyTorch one `bias`);
    `n_heads` must divide `d_model` in both, but burn does not check it at init (PyTorch raises
    "embed_dim must be divisible by num_heads"): burn's `d_k` is `d_model // n_heads` and the
    forward's reshape fails.
    """

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = KAIMING_UNIFORM
    key_bias: bool = True
    value_bias: bool = True
    query_bias: bool = True
    output_bias: bool = True

    def init(self, device) -> MultiHeadAttention:
        def proj(bias: bool):
            return linear(self.d_model, self.d_model, bias, self.initializer, device)

        return MultiHeadAttention(
            query=proj(self.query_bias),
            key=proj(self.key_bias),
            value=proj(self.value_bias),
            output=proj(self.output_bias),
            dropout=DropoutConfig(self.dropout).init(),
            d_model=self.d_model,
            n_heads=self.n_heads,
            min_float=self.min_float,
            quiet_softmax=self.quiet_softmax,
        )


@dataclass(frozen=True)
class MhaInput:
    """Query `[batch, seq_q, d_model]`, key and value `[batch, seq_k, d_model]`; `mask_pad`
    `[batch, seq_k]` and `mask_attn` `[batch, seq_q, seq_k]` bool, True = masked."""

    query: Tensor
    key: Tensor
    value: Tensor
    mask_pad: Tensor | None = None
    mask_attn: Tensor | None = None

    @classmethod
    def self_attn(cls, tensor: Tensor) -> MhaInput:
        return cls(tensor, tensor, tensor)

    @classmethod
    def new(cls, query: Tensor, key: Tensor, value: Tensor) -> MhaInput:
        return cls(query, key, value)

    def with_mask_pad(self, mask_pad: Tensor) -> MhaInput:
        """burn's builder `.mask_pad(mask)` (the field has the name here)."""
        return MhaInput(self.query, self.key, self.value, mask_pad, self.mask_attn)

    def with_mask_attn(self, mask_attn: Tensor) -> MhaInput:
        """burn's builder `.mask_attn(mask)`."""
        return MhaInput(self.query, self.key, self.value, self.mask_pad, mask_attn)


@dataclass(frozen=True)
class MhaOutput:
    """`weights` `[batch, n_heads, seq_q, seq_k]` (per head) and `context` `[batch, seq_q,
    d_model]`."""

    weights: Tensor
    context: Tensor


class MultiHeadAttention(Module):
    """Scaled dot-product attention over `n_heads` heads of size `d_k = d_model // n_heads`.

    PyTorch differences (`nn.MultiheadAttention` with `batch_first=True`):
    - Masked scores are *filled* with `min_float` (-1e4), not set to -inf (switch
      `mha.mask_fill`, ``harness.engine.divergence``, fills -inf as PyTorch). A row whose keys are
      all masked gets a uniform softmax (every score -1e4) and a finite gradient; in PyTorch it
      is NaN (every score -inf; `F.scaled_dot_product_attention` and the fast path give NaN or
      zeros depending on the kernel). A masked score that is not the row's max gets weight
      `exp(-1e4 - max)`, which underflows to exactly 0 while the row's largest real score is
      above about -9.9e3 (float32; -9.2e3 in float64), so partly masked rows agree with
      PyTorch's; the gradient into a filled score is 0 in both.
    - Dropout is applied to the *scores* before masking and softmax (burn's `attn_scores`);
      PyTorch drops attention *weights* after the softmax. The two agree only with dropout 0.
    - `weights` are per head; PyTorch returns them averaged over heads unless
      `average_attn_weights=False`, and `None` with `need_weights=False`.
    - Scores are `q @ k^T / sqrt(d_k)` (division after the product, sqrt in float32); PyTorch
      multiplies `q` by `sqrt(1 / d_k)` first, so the two round differently (about 1 ulp). The
      float32 sqrt is a formula-level difference in float64 runs (sqrt(8) rounded to float32
      is 2.6e-8 off): switch `mha.sqrt_scale` divides by the f64 `sqrt(d_k)` instead.
    - PyTorch packs the q/k/v projections in `in_proj_weight` `[3*d_model, d_model]` (order q,
      k, v) and `in_proj_bias`, the output one in `out_proj`; the importer splits them (see
      harness.engine.nn.store_rules).
    """

    def __init__(
        self,
        query,
        key,
        value,
        output,
        dropout,
        d_model: int,
        n_heads: int,
        min_float: float = -1.0e4,
        quiet_softmax: bool = False,
    ) -> None:
        self.query = query
        self.key = key
        self.value = value
        self.output = output
        self.dropout = dropout
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.min_float = min_float
        self.quiet_softmax = quiet_softmax

    def forward(self, input: MhaInput) -> MhaOutput:
        self._check(input)
        batch_size, seq_length_1, d_model = input.query.shape
        query = self._attention_linear(input.query, self.query)
        key = self._attention_linear(input.key, self.key)
        value = self._attention_linear(input.value, self.value)
        scores = self.attn_scores(query, key)
        weights = self.attn_weights(scores, input.mask_pad, input.mask_attn)
        context = weights.matmul(value).swap_dims(1, 2)
        context = context.reshape([batch_size, seq_length_1, d_model])
        return MhaOutput(weights, self.output(context))

    def forward_cache(self, input: MhaInput, cache: MhaCache) -> MhaOutput:
        """burn's `forward_cache`: the projections and the output Linear through `cache`
        (autoregressive: only the last position is computed and appended; full: computed
        once), the scores over everything cached so far."""
        self._check(input)
        batch_size, seq_length_1, d_model = input.query.shape
        query = cache.query.forward(input.query, lambda t: self._attention_linear(t, self.query))
        key = cache.key.forward(input.key, lambda t: self._attention_linear(t, self.key))
        value = cache.value.forward(input.value, lambda t: self._attention_linear(t, self.value))
        scores = self.attn_scores(query, key)
        weights = self.attn_weights(scores, input.mask_pad, input.mask_attn)
        context = weights.matmul(value).swap_dims(1, 2)
        context = context.reshape([batch_size, seq_length_1, d_model])
        return MhaOutput(weights, cache.output.forward(context, self.output))

    def _check(self, input: MhaInput) -> None:
        for name in ("query", "key", "value"):
            layout = ["batch_size", f"seq_length ({name})", self.d_model]
            expect_input("MultiHeadAttention", getattr(input, name).shape, layout)

    def attn_scores(self, query: Tensor, key: Tensor) -> Tensor:
        scale = math.sqrt(self.d_k) if SQRT_SCALE.on else _f32_sqrt(self.d_k)
        scores = query.matmul(key.transpose()).div_scalar(scale)
        return self.dropout(scores)

    def attn_weights(self, scores: Tensor, mask_pad, mask_attn) -> Tensor:
        masked = mask_pad is not None or mask_attn is not None
        fill = -math.inf if masked and MASK_FILL.on else self.min_float
        if mask_pad is not None:
            batch_size, seq_length = mask_pad.shape
            scores = scores.mask_fill(mask_pad.reshape([batch_size, 1, 1, seq_length]), fill)
        if mask_attn is not None:
            batch_size, seq_1, seq_2 = mask_attn.shape
            scores = scores.mask_fill(mask_attn.reshape([batch_size, 1, seq_1, seq_2]), fill)
        return quiet_softmax(scores, 3) if self.quiet_softmax else scores.softmax(3)

    def _attention_linear(self, x: Tensor, layer) -> Tensor:
        batch_size, seq_length, _ = x.shape
        out = layer(x).reshape([batch_size, seq_length, self.n_heads, self.d_k])
        return out.swap_dims(1, 2)


SQRT_SCALE = divergence.register(
    "mha.sqrt_scale",
    "harness.engine.nn.attention.MultiHeadAttention",
    "PyTorch scales attention scores by the f64 sqrt(d_k), not one rounded to float32",
)
MASK_FILL = divergence.register(
    "mha.mask_fill",
    "harness.engine.nn.attention.MultiHeadAttention",
    "PyTorch sets masked attention scores to -inf, not to min_float (-1e4)",
)


def _f32_sqrt(n: int) -> float:
    """burn's `(d_k as f32).sqrt()`: the square root rounded to float32."""
    return float(np.sqrt(np.float32(n)))


@dataclass
class MhaLinearCache:
    """burn's `MhaLinearCache`: `Autoregressive(cache, dim)` (`dim` set: append the last
    position along it) or `Full(cache)` (`dim` None: compute once)."""

    cache: TensorCache
    dim: int | None

    def forward(self, tensor: Tensor, func) -> Tensor:
        if self.dim is None:
            return self.cache.forward_full(tensor, func)
        return self.cache.forward_autoregressive(tensor, self.dim, func)


@dataclass
class MhaCache:
    """burn's `MhaCache`: `autoregressive()` for self-attention (queries, keys and values
    grow along dim 2, outputs along dim 1); `autoregressive_cross_attention()` keeps the
    keys and values of a fixed memory."""

    query: MhaLinearCache
    key: MhaLinearCache
    value: MhaLinearCache
    output: MhaLinearCache

    @classmethod
    def autoregressive(cls) -> MhaCache:
        return cls(*(MhaLinearCache(TensorCache.empty(), d) for d in (2, 2, 2, 1)))

    @classmethod
    def autoregressive_cross_attention(cls) -> MhaCache:
        return cls(*(MhaLinearCache(TensorCache.empty(), d) for d in (2, None, None, 1)))
