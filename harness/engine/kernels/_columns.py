"""im2col and col2im for the convolutions, in a batch-last layout that keeps copies long.

The image batch is first laid out as a zero-padded plane `[C, H_padded, W_padded, N]` (one
transposing copy of the input). A kernel tap then reads, for one channel and one output row,
`OW * N` consecutive elements when the stride along W is 1 (`N` when it is larger), so
gathering the columns and scattering them back are NumPy copies and adds with long inner
loops, where the plain `[N, C, H, W]` layout gives loops of `OW` elements that cost more in
overhead than in arithmetic for small images (LeNet: OW = 8 or 24).

Columns: `[C * KH * KW, OH * OW * N]`, row `(c, i, j)`, column `(oh, ow, n)`, holding
`plane[c, oh*stride[0] + i*dilation[0], ow*stride[1] + j*dilation[1], n]`; every value is a
real input value (no padding columns), so non-finite inputs behave as in a direct sum.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def plane(x: np.ndarray, padding, plane_hw=None, fill=0.0) -> np.ndarray:
    """`[C, H + 2*p0, W + 2*p1, N]` of `fill` (zeros) holding `x` `[N, C, H, W]` at
    `(p0, p1)`; taller or wider (`plane_hw`) when the windows reach further."""
    n, c, h, w = x.shape
    if plane_hw is None:
        plane_hw = (h + 2 * padding[0], w + 2 * padding[1])
    if not any(padding) and tuple(plane_hw) == (h, w):
        return np.ascontiguousarray(x.transpose(1, 2, 3, 0))
    out = np.full((c, *plane_hw, n), fill, dtype=x.dtype)
    out[:, padding[0] : padding[0] + h, padding[1] : padding[1] + w, :] = x.transpose(1, 2, 3, 0)
    return out


def batch_last(a: np.ndarray) -> np.ndarray:
    """`a` `[N, C, H, W]` as `[C, H * W * N]` (a copy): the gradient or input factor of a gemm
    against columns."""
    return np.ascontiguousarray(a.transpose(1, 2, 3, 0)).reshape(a.shape[1], -1)


def batch_first(a: np.ndarray, spatial) -> np.ndarray:
    """`a` `[C, H * W * N]` (or `[C, H, W, N]`) as a view `[N, C, H, W]`."""
    return a.reshape(a.shape[0], *spatial, -1).transpose(3, 0, 1, 2)


def im2col(xp: np.ndarray, out_hw, kernel, stride, dilation) -> np.ndarray:
    """Columns `[C * KH * KW, OH * OW * N]` (a fresh array) of the batch-last plane `xp`."""
    c, _, _, n = xp.shape
    sc, sh, sw, sn = xp.strides
    view = as_strided(
        xp,
        shape=(c, kernel[0], kernel[1], out_hw[0], out_hw[1], n),
        strides=(sc, dilation[0] * sh, dilation[1] * sw, stride[0] * sh, stride[1] * sw, sn),
        writeable=False,
    )
    return np.ascontiguousarray(view).reshape(c * kernel[0] * kernel[1], -1)


def col2im(cols: np.ndarray, plane_hw, out_hw, kernel, stride, dilation) -> np.ndarray:
    """The adjoint of im2col: `cols` `[C * KH * KW, OH * OW * N]` summed into a zero plane
    `[C, *plane_hw, N]` at the positions im2col reads, one strided add per kernel tap."""
    kh, kw = kernel
    cols = cols.reshape(-1, kh, kw, out_hw[0], out_hw[1], cols.shape[-1] // (out_hw[0] * out_hw[1]))
    c, n = cols.shape[0], cols.shape[-1]
    out = np.zeros((c, *plane_hw, n), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dilation[0], j * dilation[1]
            rows = slice(h0, h0 + stride[0] * (out_hw[0] - 1) + 1, stride[0])
            columns = slice(w0, w0 + stride[1] * (out_hw[1] - 1) + 1, stride[1])
            out[:, rows, columns, :] += cols[:, i, j]
    return out
