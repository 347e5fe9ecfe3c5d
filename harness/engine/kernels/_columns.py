"""im2col and col2im for the convolutions, in a row-extended layout that keeps copies long.

A plain im2col column row holds `OH * OW` values gathered `OW` at a time; a col2im adds them
back `OW` at a time. With small images (LeNet: `OW` = 8 or 24) NumPy then spends its time in
the per-row overhead of its inner loops. Here each output row is extended to `row_len`
columns (`row_len * stride_w` = the padded plane's width), so that with `stride_h` == 1 the
values a kernel tap reads for all output positions of one (batch, channel) pair are one
strided run of the flattened plane: one long inner loop instead of `OH` short ones.

The extra `row_len - OW` columns of each row ("garbage") read real plane values (the next
row's start). They cost a few percent more gemm work and are handled so that they never leak:
- a forward output drops them (`compact`);
- a gradient is extended with zeros there (`extend`), so a gemm against garbage columns adds
  `0 * value`; when that value is not finite (inf * 0 = NaN) `clear` zeroes the garbage first;
- col2im adds garbage columns too, which are zero by the rule above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided


@dataclass(frozen=True, slots=True)
class Grid:
    """The windows of one convolution over a zero-padded plane of `rows` x `width`.

    Output position `(oh, r)`, `r < row_len`, of kernel tap `(i, j)` reads plane element
    `(oh*stride[0] + i*dilation[0], r*stride[1] + j*dilation[1])` of the flattened plane (a
    column past `width` wraps into the next row); `r >= out_w` is garbage.
    """

    out_h: int
    out_w: int
    row_len: int
    width: int
    rows: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]

    @property
    def garbage(self) -> bool:
        return self.row_len > self.out_w

    @property
    def positions(self) -> int:
        """Extended positions per (batch, channel) pair: `out_h * row_len`."""
        return self.out_h * self.row_len


def grid(plane_hw, out_hw, kernel, stride, dilation) -> Grid:
    """The grid for windows over a padded plane of `plane_hw` (padding included)."""
    row_len = -(-plane_hw[1] // stride[1])
    # One spare row: the last tap's garbage columns run past the last padded row.
    return Grid(
        out_h=out_hw[0],
        out_w=out_hw[1],
        row_len=row_len,
        width=row_len * stride[1],
        rows=plane_hw[0] + 1,
        kernel=tuple(kernel),
        stride=tuple(stride),
        dilation=tuple(dilation),
    )


def plane(x: np.ndarray, gr: Grid, padding) -> np.ndarray:
    """`[N, C, rows, width]` zeros holding the 4-D `x` at row `padding[0]`, column `padding[1]`."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, gr.rows, gr.width), dtype=x.dtype)
    out[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w] = x
    return out


def im2col(xp: np.ndarray, gr: Grid, groups: int, *, clean: bool) -> np.ndarray:
    """Columns `[groups, C/groups * KH * KW, N * positions]` of the plane `xp` (see `plane`):
    row `(c, i, j)`, column `(n, oh, r)`. `clean` zeroes garbage columns when `xp` holds a
    non-finite value (needed when the columns meet a gradient in a gemm)."""
    n, c = xp.shape[:2]
    e = xp.itemsize
    kh, kw = gr.kernel
    view = as_strided(
        xp,
        shape=(c, kh, kw, n, gr.out_h, gr.row_len),
        strides=(
            xp.strides[1],
            gr.dilation[0] * gr.width * e,
            gr.dilation[1] * e,
            xp.strides[0],
            gr.stride[0] * gr.width * e,
            gr.stride[1] * e,
        ),
        writeable=False,
    )
    cols = np.ascontiguousarray(view)
    if clean and gr.garbage and not np.isfinite(xp).all():
        cols[..., gr.out_w :] = 0
    return cols.reshape(groups, -1, n * gr.positions)


def col2im(cols: np.ndarray, gr: Grid, *, clean: bool) -> np.ndarray:
    """The adjoint of im2col: `cols` `[C * KH * KW, N * positions]` (row `(c, i, j)`) summed
    into a zero plane `[C, N, rows, width]`, one strided add per kernel tap. `clean` zeroes
    the garbage columns of `cols` (in place) first: the caller asks for it when they may not
    be zero, i.e. when the factor that produced them is not finite."""
    kh, kw = gr.kernel
    cols = cols.reshape(-1, kh, kw, cols.shape[-1] // gr.positions, gr.out_h, gr.row_len)
    c, n = cols.shape[0], cols.shape[3]
    if clean and gr.garbage:
        cols[..., gr.out_w :] = 0
    out = np.zeros((c, n, gr.rows, gr.width), dtype=cols.dtype)
    flat = out.reshape(-1)
    e = out.itemsize
    shape = (c, n, gr.out_h, gr.row_len)
    strides = (
        out.strides[0],
        out.strides[1],
        gr.stride[0] * gr.width * e,
        gr.stride[1] * e,
    )
    for i in range(kh):
        for j in range(kw):
            start = i * gr.dilation[0] * gr.width + j * gr.dilation[1]
            # No two output positions of one tap write the same element: a safe in-place add.
            target = as_strided(flat[start:], shape=shape, strides=strides)
            target += cols[:, i, j]
    return out


def extend(a: np.ndarray, gr: Grid) -> np.ndarray:
    """`a` `[A, B, out_h, out_w]` as `[A, B * positions]` with zero garbage columns."""
    lead = a.shape[:2]
    out = np.zeros((*lead, gr.out_h, gr.row_len), dtype=a.dtype)
    out[..., : gr.out_w] = a
    return out.reshape(lead[0], -1)


def compact(a: np.ndarray, gr: Grid, lead: int) -> np.ndarray:
    """`a` `[lead, N * positions]` as a view `[lead, N, out_h, out_w]` without the garbage."""
    return a.reshape(lead, -1, gr.out_h, gr.row_len)[..., : gr.out_w]
