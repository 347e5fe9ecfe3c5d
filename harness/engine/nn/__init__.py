"""burn-nn's modules beyond the core ones (harness.engine.module), as composites of engine ops
and the vision primitives (burn 2c06be351006851d42fdb6df16b976f4a82d9747, crates/burn-nn/src/
modules/):

- sequence: attention and its masks, cross-attention and its cache, the transformer
  encoder and decoder (with its autoregressive cache), positional and rotary encodings,
  LSTM / BiLSTM / GRU / BiGRU / RNN / BiRNN;
- vision: convolutions, pooling, normalisation (with local response norm), embeddings,
  activation modules (with SwiGLU), padding configs, pixel (un)shuffle, interpolation;
- the distance modules (cosine similarity, pairwise distance) and Gaussian noise;
- the initializers both use (burn's `Initializer` variants).

Each file cites the burn files it follows and lists where burn and PyTorch differ. Importing
the package registers the sequence modules' PyTorch importer rules (`store_rules`).
"""

from . import store_rules
from .activation import Activation, ActivationConfig, gelu_approximate
from .activation_modules import (
    Gelu,
    HardSigmoid,
    HardSigmoidConfig,
    LeakyRelu,
    LeakyReluConfig,
    PRelu,
    PReluConfig,
    Sigmoid,
    SiLU,
    Softplus,
    SoftplusConfig,
    Swish,
    Tanh,
)
from .attention import (
    MhaCache,
    MhaInput,
    MhaOutput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    quiet_softmax,
)
from .cache import TensorCache
from .conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig, ConvTranspose2d, ConvTranspose2dConfig
from .cross_attention import CrossAttention, CrossAttentionCache, CrossAttentionConfig
from .decoder import (
    TransformerDecoder,
    TransformerDecoderAutoregressiveCache,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerDecoderLayer,
    TransformerDecoderLayerAutoregressiveCache,
)
from .distance import (
    CosineSimilarity,
    CosineSimilarityConfig,
    PairwiseDistance,
    PairwiseDistanceConfig,
)
from .embedding import Embedding, EmbeddingConfig
from .initializer import KAIMING_UNIFORM, XAVIER_NORMAL, Initializer
from .interpolate import (
    Interpolate1d,
    Interpolate1dConfig,
    Interpolate2d,
    Interpolate2dConfig,
    InterpolateMode,
)
from .local_response_norm import LocalResponseNorm, LocalResponseNormConfig
from .mask import GeneratePaddingMask, generate_autoregressive_mask, generate_padding_mask
from .noise import GaussianNoise, GaussianNoiseConfig
from .norm import (
    BatchNorm,
    BatchNormConfig,
    GroupNorm,
    GroupNormConfig,
    InstanceNorm,
    InstanceNormConfig,
    RmsNorm,
    RmsNormConfig,
    RunningState,
)
from .padding import PaddingConfig1d, PaddingConfig2d
from .pixel_shuffle import (
    PixelShuffle,
    PixelShuffleConfig,
    PixelUnshuffle,
    PixelUnshuffleConfig,
)
from .pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    AvgPool1d,
    AvgPool1dConfig,
    AvgPool2d,
    AvgPool2dConfig,
    MaxPool1d,
    MaxPool1dConfig,
    MaxPool2d,
    MaxPool2dConfig,
)
from .pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from .rnn import (
    BiGru,
    BiGruConfig,
    BiLstm,
    BiLstmConfig,
    BiRnn,
    BiRnnConfig,
    GateController,
    Gru,
    GruConfig,
    Lstm,
    LstmConfig,
    LstmState,
    Rnn,
    RnnConfig,
    RnnState,
)
from .rotary import RotaryEncoding, RotaryEncodingConfig
from .store_rules import DECODER_NORM_FIRST_REMAPPING, GRU_GATES, LSTM_GATES, NORM_FIRST_REMAPPING
from .swiglu import SwiGlu, SwiGluConfig
from .transformer import (
    PositionWiseFeedForward,
    PositionWiseFeedForwardConfig,
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    TransformerEncoderLayer,
)

__all__ = [
    "DECODER_NORM_FIRST_REMAPPING",
    "GRU_GATES",
    "KAIMING_UNIFORM",
    "LSTM_GATES",
    "NORM_FIRST_REMAPPING",
    "XAVIER_NORMAL",
    "Activation",
    "ActivationConfig",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "BatchNorm",
    "BatchNormConfig",
    "BiGru",
    "BiGruConfig",
    "BiLstm",
    "BiLstmConfig",
    "BiRnn",
    "BiRnnConfig",
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "CosineSimilarity",
    "CosineSimilarityConfig",
    "CrossAttention",
    "CrossAttentionCache",
    "CrossAttentionConfig",
    "Embedding",
    "EmbeddingConfig",
    "GateController",
    "GaussianNoise",
    "GaussianNoiseConfig",
    "Gelu",
    "GeneratePaddingMask",
    "GroupNorm",
    "GroupNormConfig",
    "Gru",
    "GruConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "Initializer",
    "InstanceNorm",
    "InstanceNormConfig",
    "Interpolate1d",
    "Interpolate1dConfig",
    "Interpolate2d",
    "Interpolate2dConfig",
    "InterpolateMode",
    "LeakyRelu",
    "LeakyReluConfig",
    "LocalResponseNorm",
    "LocalResponseNormConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "PRelu",
    "PReluConfig",
    "PaddingConfig1d",
    "PaddingConfig2d",
    "PairwiseDistance",
    "PairwiseDistanceConfig",
    "PixelShuffle",
    "PixelShuffleConfig",
    "PixelUnshuffle",
    "PixelUnshuffleConfig",
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "RmsNorm",
    "RmsNormConfig",
    "Rnn",
    "RnnConfig",
    "RnnState",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "RunningState",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "SoftplusConfig",
    "SwiGlu",
    "SwiGluConfig",
    "Swish",
    "Tanh",
    "TensorCache",
    "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerDecoderLayer",
    "TransformerDecoderLayerAutoregressiveCache",
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
