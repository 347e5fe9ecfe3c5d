"""burn's `burn::tensor::module` functions (crates/burn-tensor/src/tensor/module.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747) on engine tensors: `conv1d`, `conv2d`,
`conv_transpose2d` (with `ConvOptions` / `ConvTransposeOptions`), `max_pool1d/2d`,
`avg_pool1d/2d`, `adaptive_avg_pool1d/2d`, `embedding`, and the constant `pad` of burn's
`Tensor::pad`.

Each op is one primitive over the NumPy kernels of harness.engine.kernels (whose docstrings
list the op-level differences from PyTorch); `pad` is a composite (`cat` with constant
blocks), as burn's `pad` builds it from tensor ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.engine.autodiff import GRAD_IN_BACKWARD, NONE, Node, next_node_id
from harness.engine.device import Device
from harness.engine.errors import DeviceMismatchError
from harness.engine.ops import activation as _act
from harness.engine.ops import conv as _conv
from harness.engine.ops import pool as _pool
from harness.engine.tensor import Tensor

__all__ = [
    "ConvOptions",
    "ConvTransposeOptions",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "embedding",
    "max_pool1d",
    "max_pool2d",
    "pad",
]


@dataclass(frozen=True)
class _Op:
    """A primitive: forward on arrays -> (out, saved), rule(saved, g, tracked) -> grads."""

    name: str
    forward: object
    backward: object


class vision:
    CONV1D = _Op("conv1d", _conv.conv1d, _conv.conv1d_backward)
    CONV2D = _Op("conv2d", _conv.conv2d, _conv.conv2d_backward)
    CONV_TRANSPOSE2D = _Op(
        "conv_transpose2d", _conv.conv_transpose2d, _conv.conv_transpose2d_backward
    )
    MAX_POOL1D = _Op("max_pool1d", _pool.max_pool1d, _pool.max_pool1d_backward)
    MAX_POOL2D = _Op("max_pool2d", _pool.max_pool2d, _pool.max_pool2d_backward)
    AVG_POOL1D = _Op("avg_pool1d", _pool.avg_pool1d, _pool.avg_pool1d_backward)
    AVG_POOL2D = _Op("avg_pool2d", _pool.avg_pool2d, _pool.avg_pool2d_backward)
    ADAPTIVE_AVG_POOL1D = _Op(
        "adaptive_avg_pool1d", _pool.adaptive_avg_pool1d, _pool.adaptive_avg_pool1d_backward
    )
    ADAPTIVE_AVG_POOL2D = _Op(
        "adaptive_avg_pool2d", _pool.adaptive_avg_pool2d, _pool.adaptive_avg_pool2d_backward
    )
    EMBEDDING = _Op("embedding", _pool.embedding, _pool.embedding_backward)
    ERF = _Op("erf", _act.erf, _act.erf_backward)
    GELU = _Op("gelu", _act.gelu, _act.gelu_backward)

    @staticmethod
    def apply(op: _Op, tensors: tuple[Tensor, ...], **params) -> Tensor:
        """Run `op` on the tensors' values; the output is tracked when any input is."""
        out, saved = op.forward(*(t._data for t in tensors), **params)
        return _result(tensors, op, out, saved)


_PLAIN = Device.flex()
_AUTODIFF = _PLAIN.autodiff()


def _result(tensors, op: _Op, out, saved) -> Tensor:
    nodes = [t._node for t in tensors]
    if nodes[0] is None:
        if any(n is not None for n in nodes):
            raise DeviceMismatchError(f"{op.name}: tensors on different devices")
        return Tensor(out, _PLAIN, None)
    if any(n is None for n in nodes):
        raise DeviceMismatchError(f"{op.name}: tensors on different devices")
    parents = tuple(n if n.requirement is not NONE else None for n in nodes)
    tracked = [n for n in parents if n is not None]
    if not tracked:
        return Tensor(out, _AUTODIFF, Node(next_node_id(), NONE, None, 0, None, None))
    order = max(n.order for n in tracked) + 1
    node = Node(next_node_id(), GRAD_IN_BACKWARD, parents, order, op.backward, saved)
    return Tensor(out, _AUTODIFF, node)


def _tracked(t: Tensor) -> bool:
    return t._node is not None and t._node.requirement is not NONE


@dataclass(frozen=True)
class ConvOptions:
    """burn's `ConvOptions::new(stride, padding, dilation, groups)` (one entry per spatial
    dim; symmetric padding)."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]
    groups: int = 1


@dataclass(frozen=True)
class ConvTransposeOptions:
    """burn's `ConvTransposeOptions::new(stride, padding, padding_out, dilation, groups)`."""

    stride: Sequence[int]
    padding: Sequence[int]
    padding_out: Sequence[int]
    dilation: Sequence[int]
    groups: int = 1


def _inputs(x: Tensor, weight: Tensor, bias: Tensor | None) -> tuple[Tensor, ...]:
    return (x, weight) if bias is None else (x, weight, bias)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x `[batch, in, length]`, weight `[out, in / groups, kernel]` -> `[batch, out, l_out]`."""
    return vision.apply(
        vision.CONV1D, _inputs(x, weight, bias),
        stride=tuple(options.stride), padding=tuple(options.padding),
        dilation=tuple(options.dilation), groups=options.groups,
        keep_columns=_tracked(weight),
    )  # fmt: skip


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvOptions) -> Tensor:
    """x `[batch, in, h, w]`, weight `[out, in / groups, kh, kw]` -> `[batch, out, h', w']`."""
    return vision.apply(
        vision.CONV2D, _inputs(x, weight, bias),
        stride=tuple(options.stride), padding=tuple(options.padding),
        dilation=tuple(options.dilation), groups=options.groups,
        keep_columns=_tracked(weight),
    )  # fmt: skip


def conv_transpose2d(
    x: Tensor, weight: Tensor, bias: Tensor | None, options: ConvTransposeOptions
) -> Tensor:
    """x `[batch, in, h, w]`, weight `[in, out / groups, kh, kw]` -> `[batch, out, h', w']`."""
    return vision.apply(
        vision.CONV_TRANSPOSE2D, _inputs(x, weight, bias),
        stride=tuple(options.stride), padding=tuple(options.padding),
        padding_out=tuple(options.padding_out), dilation=tuple(options.dilation),
        groups=options.groups,
    )  # fmt: skip


def max_pool2d(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False) -> Tensor:
    """burn's `max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)`."""
    return vision.apply(
        vision.MAX_POOL2D, (x,), kernel_size=tuple(kernel_size), stride=tuple(stride),
        padding=tuple(padding), dilation=tuple(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def max_pool1d(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode=False) -> Tensor:
    """burn's `max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode)`."""
    return vision.apply(
        vision.MAX_POOL1D, (x,), kernel_size=int(kernel_size), stride=int(stride),
        padding=int(padding), dilation=int(dilation), ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def avg_pool2d(x: Tensor, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False):
    """burn's `avg_pool2d(x, kernel_size, stride, padding, count_include_pad, ceil_mode)`."""
    return vision.apply(
        vision.AVG_POOL2D, (x,), kernel_size=tuple(kernel_size), stride=tuple(stride),
        padding=tuple(padding), count_include_pad=bool(count_include_pad),
        ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def avg_pool1d(x: Tensor, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False):
    """burn's `avg_pool1d(x, kernel_size, stride, padding, count_include_pad, ceil_mode)`."""
    return vision.apply(
        vision.AVG_POOL1D, (x,), kernel_size=int(kernel_size), stride=int(stride),
        padding=int(padding), count_include_pad=bool(count_include_pad),
        ceil_mode=bool(ceil_mode),
    )  # fmt: skip


def adaptive_avg_pool2d(x: Tensor, output_size) -> Tensor:
    return vision.apply(vision.ADAPTIVE_AVG_POOL2D, (x,), output_size=tuple(output_size))


def adaptive_avg_pool1d(x: Tensor, output_size: int) -> Tensor:
    return vision.apply(vision.ADAPTIVE_AVG_POOL1D, (x,), output_size=int(output_size))


def embedding(weights: Tensor, indices: Tensor) -> Tensor:
    """weights `[n_embedding, d_model]`, int indices `[batch, seq]` -> `[batch, seq, d_model]`."""
    return vision.apply(vision.EMBEDDING, (weights,), indices=indices.numpy())


def pad(x: Tensor, padding: tuple[int, int, int, int], value: float = 0.0) -> Tensor:
    """burn's `x.pad((left, right, top, bottom), PadMode::Constant(value))`: the last dim
    padded by (left, right), the one before by (top, bottom) (PyTorch's `F.pad` order).
    The padded positions get no gradient."""
    left, right, top, bottom = (int(p) for p in padding)
    if min(left, right, top, bottom) < 0:
        raise ValueError(f"pad: padding must be non-negative, got {padding!r}")
    out = x
    for dim, before, after in ((x.ndim - 1, left, right), (x.ndim - 2, top, bottom)):
        if before == 0 and after == 0:
            continue
        parts = []
        for n in (before, after):
            shape = list(out.shape)
            shape[dim] = n
            parts.append(_constant(out, shape, value) if n else None)
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = Tensor.cat(pieces, dim)
    return out


def _constant(like: Tensor, shape, value: float) -> Tensor:
    return Tensor.full(shape, value, like.device, dtype=like.dtype)
