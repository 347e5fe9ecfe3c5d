"""Pooling and embedding primitives over harness.engine.kernels, each forward beside its rule:
`max_pool1d/2d` (the forward's indices saved for the backward, as burn-autodiff's
`max_pool2d_with_indices` node does), `avg_pool1d/2d`, `adaptive_avg_pool1d/2d`, `embedding`
(gather rows; scatter-add backward). The kernels' docstrings list the differences from
PyTorch (ceil-mode window counts, NaN in max pool, the average pool's backward divisor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kernels

Array = np.ndarray
Grad = np.ndarray | None


@dataclass(slots=True)
class SavedIndices:
    indices: Array
    x_shape: tuple[int, ...]


@dataclass(slots=True)
class SavedWindow:
    x_shape: tuple[int, ...]
    options: dict


@dataclass(slots=True)
class SavedShape:
    x_shape: tuple[int, ...]


@dataclass(slots=True)
class SavedRows:
    weight_shape: tuple[int, ...]
    indices: Array


def max_pool2d(x: Array, /, kernel_size, stride, padding, dilation, ceil_mode):
    r = kernels.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
    return r.output, SavedIndices(r.indices, x.shape)


def max_pool2d_backward(s: SavedIndices, g: Array, tracked) -> tuple[Grad]:
    return (kernels.max_pool2d_backward(g, s.indices, s.x_shape).x,)


def max_pool1d(x: Array, /, kernel_size, stride, padding, dilation, ceil_mode):
    r = kernels.max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode)
    return r.output, SavedIndices(r.indices, x.shape)


def max_pool1d_backward(s: SavedIndices, g: Array, tracked) -> tuple[Grad]:
    return (kernels.max_pool1d_backward(g, s.indices, s.x_shape).x,)


def avg_pool2d(x: Array, /, kernel_size, stride, padding, count_include_pad, ceil_mode):
    opts = dict(
        kernel_size=kernel_size, stride=stride, padding=padding,
        count_include_pad=count_include_pad, ceil_mode=ceil_mode,
    )  # fmt: skip
    return kernels.avg_pool2d(x, **opts), SavedWindow(x.shape, opts)


def avg_pool2d_backward(s: SavedWindow, g: Array, tracked) -> tuple[Grad]:
    return (kernels.avg_pool2d_backward(g, s.x_shape, **s.options).x,)


def avg_pool1d(x: Array, /, kernel_size, stride, padding, count_include_pad, ceil_mode):
    opts = dict(
        kernel_size=kernel_size, stride=stride, padding=padding,
        count_include_pad=count_include_pad, ceil_mode=ceil_mode,
    )  # fmt: skip
    return kernels.avg_pool1d(x, **opts), SavedWindow(x.shape, opts)


def avg_pool1d_backward(s: SavedWindow, g: Array, tracked) -> tuple[Grad]:
    return (kernels.avg_pool1d_backward(g, s.x_shape, **s.options).x,)


def adaptive_avg_pool2d(x: Array, /, output_size):
    return kernels.adaptive_avg_pool2d(x, output_size), SavedShape(x.shape)


def adaptive_avg_pool2d_backward(s: SavedShape, g: Array, tracked) -> tuple[Grad]:
    return (kernels.adaptive_avg_pool2d_backward(g, s.x_shape).x,)


def adaptive_avg_pool1d(x: Array, /, output_size):
    return kernels.adaptive_avg_pool1d(x, output_size), SavedShape(x.shape)


def adaptive_avg_pool1d_backward(s: SavedShape, g: Array, tracked) -> tuple[Grad]:
    return (kernels.adaptive_avg_pool1d_backward(g, s.x_shape).x,)


def embedding(weight: Array, /, indices):
    return kernels.embedding(weight, indices), SavedRows(weight.shape, indices)


def embedding_backward(s: SavedRows, g: Array, tracked) -> tuple[Grad]:
    return (kernels.embedding_backward(g, s.weight_shape, s.indices).weight,)
