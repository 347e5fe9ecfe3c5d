"""burn-nn's sequence modules (crates/burn-nn/src/modules/, burn
2c06be351006851d42fdb6df16b976f4a82d9747) as composites of engine ops: attention and its
masks, the transformer encoder, positional and rotary encodings, LSTM / BiLSTM / GRU / BiGRU.
Importing the package registers their PyTorch importer rules (`store_rules`)."""

from . import store_rules
from .activation import Activation, ActivationConfig, gelu_approximate
from .attention import (
    MhaInput,
    MhaOutput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    quiet_softmax,
)
from .initializer import KAIMING_UNIFORM, XAVIER_NORMAL, Initializer
from .mask import GeneratePaddingMask, generate_autoregressive_mask, generate_padding_mask
from .pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from .rnn import (
    BiGru,
    BiGruConfig,
    BiLstm,
    BiLstmConfig,
    GateController,
    Gru,
    GruConfig,
    Lstm,
    LstmConfig,
    LstmState,
)
from .rotary import RotaryEncoding, RotaryEncodingConfig
from .store_rules import GRU_GATES, LSTM_GATES, NORM_FIRST_REMAPPING
from .transformer import (
    PositionWiseFeedForward,
    PositionWiseFeedForwardConfig,
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    TransformerEncoderLayer,
)

__all__ = [
    "GRU_GATES",
    "KAIMING_UNIFORM",
    "LSTM_GATES",
    "NORM_FIRST_REMAPPING",
    "XAVIER_NORMAL",
    "Activation",
    "ActivationConfig",
    "BiGru",
    "BiGruConfig",
    "BiLstm",
    "BiLstmConfig",
    "GateController",
    "GeneratePaddingMask",
    "Gru",
    "GruConfig",
    "Initializer",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "TransformerEncoder",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "TransformerEncoderLayer",
    "gelu_approximate",
    "generate_autoregressive_mask",
    "generate_padding_mask",
    "generate_sinusoids",
    "quiet_softmax",
    "store_rules",
]
