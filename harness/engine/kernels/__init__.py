"""Numerical kernels on NumPy arrays (never torch): convolution, pooling, embedding and
interpolation, each a forward function and a VJP ("backward") that returns a dataclass of
named input gradients.

Pure functions: inputs are never written; outputs are fresh C-contiguous arrays of the input's
float dtype (float32 or float64, never promoted). The engine registers them as primitives.
The convolutions keep their temporaries in reused per-thread scratch buffers (_columns.py);
`release_scratch()` frees them.
Each module's docstring cites the burn files it follows and lists where burn and PyTorch differ.
"""

from ._columns import release_scratch
from .adaptive_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool1d_backward,
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    adaptive_avg_pool3d,
    adaptive_avg_pool3d_backward,
    adaptive_bins,
)
from .conv import (
    ConvForward,
    ConvGrads,
    conv1d,
    conv1d_backward,
    conv1d_forward,
    conv2d,
    conv2d_backward,
    conv2d_forward,
    conv_transpose2d,
    conv_transpose2d_backward,
)
from .conv_nd import (
    conv_nd,
    conv_nd_backward,
    conv_transpose_nd,
    conv_transpose_nd_backward,
)
from .deform_conv import DeformGrads, deform_conv2d, deform_conv2d_backward
from .embedding import EmbeddingGrads, embedding, embedding_backward
from .interpolate import INTERPOLATE_MODES, interpolate, interpolate_backward
from .pool import (
    MaxPoolOutput,
    PoolGrads,
    avg_pool1d,
    avg_pool1d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool1d,
    max_pool1d_backward,
    max_pool2d,
    max_pool2d_backward,
)

__all__ = [
    "INTERPOLATE_MODES",
    "ConvForward",
    "ConvGrads",
    "DeformGrads",
    "EmbeddingGrads",
    "MaxPoolOutput",
    "PoolGrads",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool1d_backward",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "adaptive_avg_pool3d",
    "adaptive_avg_pool3d_backward",
    "adaptive_bins",
    "avg_pool1d",
    "avg_pool1d_backward",
    "avg_pool2d",
    "avg_pool2d_backward",
    "conv1d",
    "conv1d_backward",
    "conv1d_forward",
    "conv2d",
    "conv2d_backward",
    "conv2d_forward",
    "conv_nd",
    "conv_nd_backward",
    "conv_transpose2d",
    "conv_transpose2d_backward",
    "conv_transpose_nd",
    "conv_transpose_nd_backward",
    "deform_conv2d",
    "deform_conv2d_backward",
    "embedding",
    "embedding_backward",
    "interpolate",
    "interpolate_backward",
    "max_pool1d",
    "max_pool1d_backward",
    "max_pool2d",
    "max_pool2d_backward",
    "release_scratch",
]
