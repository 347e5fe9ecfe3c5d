"""burn's transformer encoder (crates/burn-nn/src/modules/transformer/encoder.rs, pwff.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): `TransformerEncoderConfig`, `TransformerEncoder`,
`TransformerEncoderLayer`, `TransformerEncoderInput`, `PositionWiseFeedForwardConfig`,
`PositionWiseFeedForward`. No autoregressive cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.module import Config, DropoutConfig, LayerNormConfig, Module
from harness.engine.tensor import Tensor

from .activation import ActivationConfig
from .attention import MhaInput, MultiHeadAttentionConfig
from .initializer import KAIMING_UNIFORM, Initializer, linear

__all__ = [
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "TransformerEncoder",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "TransformerEncoderLayer",
]


@dataclass(frozen=True)
class PositionWiseFeedForwardConfig(Config):
    """burn's `PositionWiseFeedForwardConfig::new(d_model, d_ff)`: dropout 0.1, Gelu."""

    d_model: int
    d_ff: int
    dropout: float = 0.1
    initializer: Initializer = KAIMING_UNIFORM
    activation: ActivationConfig = ActivationConfig.Gelu

    def init(self, device) -> PositionWiseFeedForward:
        return PositionWiseFeedForward(
            linear(self.d_model, self.d_ff, True, self.initializer, device),
            linear(self.d_ff, self.d_model, True, self.initializer, device),
            DropoutConfig(self.dropout).init(),
            self.activation.init(device),
        )


class PositionWiseFeedForward(Module):
    """`linear_outer(dropout(activation(linear_inner(x))))`: PyTorch's encoder layer's
    `linear2(dropout(activation(linear1(x))))`."""

    def __init__(self, linear_inner, linear_outer, dropout, activation) -> None:
        self.linear_inner = linear_inner
        self.linear_outer = linear_outer
        self.dropout = dropout
        self.activation = activation

    def forward(self, x: Tensor) -> Tensor:
        x = self.activation(self.linear_inner(x))
        return self.linear_outer(self.dropout(x))


@dataclass(frozen=True)
class TransformerStackConfig(Config):
    """The fields, defaults included, that burn's `TransformerEncoderConfig` and
    `TransformerDecoderConfig` share (encoder.rs, decoder.rs), and the parts every layer of
    either builds from them."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = KAIMING_UNIFORM
    activation: ActivationConfig = ActivationConfig.Gelu
    layer_norm_eps: float = 1e-5

    def attention(self, device):
        """One layer's `MultiHeadAttention` (self- or cross-attention)."""
        return MultiHeadAttentionConfig(
            self.d_model,
            self.n_heads,
            dropout=self.dropout,
            quiet_softmax=self.quiet_softmax,
            initializer=self.initializer,
        ).init(device)

    def layer_norm(self) -> LayerNormConfig:
        return LayerNormConfig(self.d_model, epsilon=self.layer_norm_eps)

    def feed_forward(self, device) -> PositionWiseFeedForward:
        return PositionWiseFeedForwardConfig(
            self.d_model, self.d_ff, self.dropout, self.initializer, self.activation
        ).init(device)


@dataclass(frozen=True)
class TransformerEncoderConfig(TransformerStackConfig):
    """burn's `TransformerEncoderConfig::new(d_model, d_ff, n_heads, n_layers)`.

    PyTorch differences (`nn.TransformerEncoderLayer(d_model, nhead)` in
    `nn.TransformerEncoder(layer, num_layers)`): the activation defaults to Gelu (PyTorch
    relu); inputs are always batch-first (PyTorch `batch_first=False`: `[seq, batch, d]`);
    `d_ff` has no default (PyTorch `dim_feedforward=2048`); dropout 0.1 and
    `layer_norm_eps=1e-5` agree; there is no final `norm` (PyTorch's optional `norm=`).
    """

    def init(self, device) -> TransformerEncoder:
        layers = [TransformerEncoderLayer.new(self, device) for _ in range(self.n_layers)]
        return TransformerEncoder(layers, self)


@dataclass(frozen=True)
class TransformerEncoderInput:
    """`tensor` `[batch, seq, d_model]`, optional `mask_pad` `[batch, seq]` and `mask_attn`
    `[batch, seq, seq]` (True = masked, as `MhaInput`)."""

    tensor: Tensor
    mask_pad: Tensor | None = None
    mask_attn: Tensor | None = None

    @classmethod
    def new(cls, tensor: Tensor) -> TransformerEncoderInput:
        return cls(tensor)

    def with_mask_pad(self, mask_pad: Tensor) -> TransformerEncoderInput:
        return TransformerEncoderInput(self.tensor, mask_pad, self.mask_attn)

    def with_mask_attn(self, mask_attn: Tensor) -> TransformerEncoderInput:
        return TransformerEncoderInput(self.tensor, self.mask_pad, mask_attn)


class TransformerStack(Module):
    """The fields burn's `TransformerEncoder` and `TransformerDecoder` share: the layers,
    then their config's hyperparameters."""

    def __init__(self, layers: list, config: TransformerStackConfig) -> None:
        self.layers = layers
        self.d_model = config.d_model
        self.d_ff = config.d_ff
        self.n_heads = config.n_heads
        self.n_layers = config.n_layers
        self.dropout = config.dropout
        self.norm_first = config.norm_first
        self.quiet_softmax = config.quiet_softmax


class TransformerEncoder(TransformerStack):
    """The layers applied in order with the same masks."""

    def forward(self, input: TransformerEncoderInput) -> Tensor:
        x = input.tensor
        for layer in self.layers:
            x = layer(x, input.mask_pad, input.mask_attn)
        return x


class TransformerEncoderLayer(Module):
    """Self-attention and feed-forward blocks with residuals, post-norm by default.

    PyTorch differences (`nn.TransformerEncoderLayer`):
    - With `norm_first=True` burn normalises *before attention with `norm_2`* and before the
      feed-forward with `norm_1`; PyTorch uses `norm1` then `norm2`. Post-norm (the default)
      pairs them the natural way (`norm_1` after attention, `norm_2` after the feed-forward).
      Importing a pre-norm PyTorch layer therefore needs the two norms swapped
      (`harness.engine.nn.store_rules.NORM_FIRST_REMAPPING`).
    - One `dropout` serves both residual branches (PyTorch `dropout1` / `dropout2`, same p).
    - PyTorch's `self_attn`, `linear1` / `linear2` are burn's `mha`, `pwff.linear_inner` /
      `pwff.linear_outer` (the importer renames them).
    """

    def __init__(self, mha, pwff, norm_1, norm_2, dropout, norm_first: bool) -> None:
        self.mha = mha
        self.pwff = pwff
        self.norm_1 = norm_1
        self.norm_2 = norm_2
        self.dropout = dropout
        self.norm_first = norm_first

    @classmethod
    def new(cls, config: TransformerEncoderConfig, device) -> TransformerEncoderLayer:
        mha = config.attention(device)
        norm = config.layer_norm()
        norm_1 = norm.init(device)
        norm_2 = norm.init(device)
        dropout = DropoutConfig(config.dropout).init()
        pwff = config.feed_forward(device)
        return cls(mha, pwff, norm_1, norm_2, dropout, config.norm_first)

    def forward(self, x: Tensor, mask_pad=None, mask_attn=None) -> Tensor:
        residual = self.norm_2(x) if self.norm_first else x
        residual = self.mha(MhaInput(residual, residual, residual, mask_pad, mask_attn)).context
        x = x + self.dropout(residual)
        if self.norm_first:
            residual = self.norm_1(x)
        else:
            x = self.norm_1(x)
            residual = x
        x = x + self.dropout(self.pwff(residual))
        return x if self.norm_first else self.norm_2(x)
