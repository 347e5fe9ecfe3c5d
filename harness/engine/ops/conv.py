"""Convolution primitives over harness.engine.kernels.conv, each forward beside its rule:
`conv1d`, `conv2d`, `conv_transpose2d`. The tensor inputs are `(x, weight)` or
`(x, weight, bias)`; a rule returns one gradient per input and skips untracked ones.

burn's autodiff (crates/burn-autodiff/src/ops/module.rs, commit 2c06be35) registers each
convolution as one node with x / weight / bias parents, as here; the kernels' docstring lists
the differences from PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels

Array = np.ndarray
Grad = np.ndarray | None


@dataclass(slots=True)
class SavedConv:
    x: Array
    weight: Array
    columns: Array | None
    options: dict
    has_bias: bool


def _split(inputs):
    if len(inputs) not in (2, 3):
        raise TypeError(f"convolution: expected (x, weight[, bias]), got {len(inputs)} tensors")
    return inputs[0], inputs[1], inputs[2] if len(inputs) == 3 else None


def conv1d(*inputs: Array, stride, padding, dilation, groups, keep_columns=True):
    """burn `conv1d`: `(out, SavedConv)`; `keep_columns` keeps the im2col columns for the
    weight gradient (False when the weight is untracked)."""
    x, w, b = _split(inputs)
    opts = dict(stride=stride[0], padding=padding[0], dilation=dilation[0], groups=groups)
    r = kernels.conv1d_forward(x, w, b, keep_columns=keep_columns, **opts)
    return r.output, SavedConv(x, w, r.columns, opts, b is not None)


def conv1d_backward(s: SavedConv, g: Array, tracked) -> tuple[Grad, ...]:
    r = kernels.conv1d_backward(
        g, s.x, s.weight, **s.options, need_x=tracked[0] is not None,
        need_weight=tracked[1] is not None, need_bias=s.has_bias and tracked[2] is not None,
        columns=s.columns,
    )  # fmt: skip
    return (r.x, r.weight, r.bias) if s.has_bias else (r.x, r.weight)


def conv2d(*inputs: Array, stride, padding, dilation, groups, keep_columns=True):
    """burn `conv2d`: `(out, SavedConv)` (see `conv1d`)."""
    x, w, b = _split(inputs)
    opts = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    r = kernels.conv2d_forward(x, w, b, keep_columns=keep_columns, **opts)
    return r.output, SavedConv(x, w, r.columns, opts, b is not None)


def conv2d_backward(s: SavedConv, g: Array, tracked) -> tuple[Grad, ...]:
    r = kernels.conv2d_backward(
        g, s.x, s.weight, **s.options, need_x=tracked[0] is not None,
        need_weight=tracked[1] is not None, need_bias=s.has_bias and tracked[2] is not None,
        columns=s.columns,
    )  # fmt: skip
    return (r.x, r.weight, r.bias) if s.has_bias else (r.x, r.weight)


def conv_transpose2d(
    *inputs: Array, stride, padding, padding_out, dilation, groups, keep_columns=True
):
    """burn `conv_transpose2d`: `(out, SavedConv)`."""
    x, w, b = _split(inputs)
    opts = dict(
        stride=stride, padding=padding, padding_out=padding_out, dilation=dilation, groups=groups
    )
    out = kernels.conv_transpose2d(x, w, b, **opts)
    return out, SavedConv(x, w, None, opts, b is not None)


def conv_transpose2d_backward(s: SavedConv, g: Array, tracked) -> tuple[Grad, ...]:
    r = kernels.conv_transpose2d_backward(
        g, s.x, s.weight, **s.options, need_x=tracked[0] is not None,
        need_weight=tracked[1] is not None, need_bias=s.has_bias and tracked[2] is not None,
    )  # fmt: skip
    return (r.x, r.weight, r.bias) if s.has_bias else (r.x, r.weight)
