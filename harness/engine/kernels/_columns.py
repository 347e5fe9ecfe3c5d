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

Scratch buffers: the temporaries (planes, columns, gemm results; `kernel_h * kernel_w` times
an activation for the columns) can live in per-thread buffers reused from call to call
(`slot` arguments). Fresh memory costs a page fault per 4 KiB on first touch, about 1 us on
this VM: for LeNet's second conv, 0.1 ms of im2col became 1.2 ms when its columns were
freshly allocated each call. A slot's buffer only grows; `release_scratch()` frees them all.
Nothing a kernel returns is a view of a scratch buffer.

Kept columns (a forward's, for its backward) outlive the call, so they cannot be a slot's; a
backward that was handed them gives their buffer back (`recycle`) and the next forward of
the same size takes it (`KEPT`) instead of fresh memory. Without that, glibc returned the
freed top of its heap to the system after each LeNet step at batch 256 and the next step
faulted ~4,500 pages back in (63 ms a step instead of 44, measured on AMD EPYC Zen 4).
"""

from __future__ import annotations

import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._common import tap


class _Scratch(threading.local):
    def __init__(self) -> None:
        self.buffers: dict[str, np.ndarray] = {}
        self.spare: dict[int, list[np.ndarray]] = {}  # recycled kept buffers, by size


_SCRATCH = _Scratch()
KEPT = "kept"  # the `slot` of an array that outlives the call: a recycled buffer or fresh
_SPARES_PER_SIZE = 4  # a bound on what recycling holds (a few convolutions of one size)


def scratch(slot: str | None, shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array: fresh when `slot` is None, a recycled buffer of
    the same size (else fresh) when it is `KEPT`, else a view of this thread's buffer for
    `slot` (valid until the next request for the same slot)."""
    if slot is None:
        return np.empty(shape, dtype=dtype)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if slot is KEPT:
        spares = _SCRATCH.spare.get(nbytes)
        buffer = spares.pop() if spares else np.empty(nbytes, dtype=np.uint8)
        return buffer.view(dtype).reshape(shape)
    buffer = _SCRATCH.buffers.get(slot)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = np.empty(nbytes, dtype=np.uint8)
        _SCRATCH.buffers[slot] = buffer
    return buffer[:nbytes].view(dtype).reshape(shape)


def recycle(a: np.ndarray) -> None:
    """Give back the buffer of a dead `KEPT` array (nothing may read or write it after): the
    next `KEPT` request of its size reuses it. Arrays of other origins are left alone."""
    owner = a.base
    if owner is None or owner.dtype != np.uint8 or owner.ndim != 1 or owner.nbytes != a.nbytes:
        return
    spares = _SCRATCH.spare.setdefault(owner.nbytes, [])
    # Given back twice, a buffer would go to two later forwards at once.
    if len(spares) < _SPARES_PER_SIZE and not any(s is owner for s in spares):
        spares.append(owner)


def release_scratch() -> None:
    """Free this thread's scratch and recycled buffers (allocated again when needed)."""
    _SCRATCH.buffers.clear()
    _SCRATCH.spare.clear()


def plane(x: np.ndarray, padding, plane_hw=None, fill=0.0, slot=None) -> np.ndarray:
    """`[C, H + 2*p0, W + 2*p1, N]` of `fill` (zeros) holding `x` `[N, C, H, W]` at
    `(p0, p1)`; taller or wider (`plane_hw`) when the windows reach further."""
    n, c, h, w = x.shape
    if plane_hw is None:
        plane_hw = (h + 2 * padding[0], w + 2 * padding[1])
    out = scratch(slot, (c, *plane_hw, n), x.dtype)
    if any(padding) or tuple(plane_hw) != (h, w):
        out.fill(fill)
    out[:, padding[0] : padding[0] + h, padding[1] : padding[1] + w, :] = x.transpose(1, 2, 3, 0)
    return out


def batch_last(a: np.ndarray, slot=None) -> np.ndarray:
    """`a` `[N, C, H, W]` as `[C, H * W * N]` (a copy): the gradient or input factor of a gemm
    against columns."""
    n, c, h, w = a.shape
    out = scratch(slot, (c, h, w, n), a.dtype)
    np.copyto(out, a.transpose(1, 2, 3, 0))
    return out.reshape(c, h * w * n)


def batch_first(a: np.ndarray, spatial) -> np.ndarray:
    """`a` `[C, H * W * N]` (or `[C, H, W, N]`) as a view `[N, C, H, W]`."""
    return a.reshape(a.shape[0], *spatial, -1).transpose(3, 0, 1, 2)


def im2col(xp: np.ndarray, out_hw, kernel, stride, dilation, slot=None) -> np.ndarray:
    """Columns `[C * KH * KW, OH * OW * N]` of the batch-last plane `xp`."""
    c, _, _, n = xp.shape
    sc, sh, sw, sn = xp.strides
    view = as_strided(
        xp,
        shape=(c, kernel[0], kernel[1], out_hw[0], out_hw[1], n),
        strides=(sc, dilation[0] * sh, dilation[1] * sw, stride[0] * sh, stride[1] * sw, sn),
        writeable=False,
    )
    out = scratch(slot, view.shape, xp.dtype)
    np.copyto(out, view)
    return out.reshape(c * kernel[0] * kernel[1], out_hw[0] * out_hw[1] * n)


def col2im(cols: np.ndarray, plane_hw, out_hw, kernel, stride, dilation, slot=None) -> np.ndarray:
    """The adjoint of im2col: `cols` `[C * KH * KW, OH * OW * N]` summed into a zero plane
    `[C, *plane_hw, N]` at the positions im2col reads, one strided add per kernel tap."""
    kh, kw = kernel
    n = cols.shape[-1] // (out_hw[0] * out_hw[1])
    cols = cols.reshape(cols.shape[0] // (kh * kw), kh, kw, out_hw[0], out_hw[1], n)
    c = cols.shape[0]
    out = scratch(slot, (c, *plane_hw, n), cols.dtype)
    out.fill(0)
    for i in range(kh):
        for j in range(kw):
            rows, columns = tap(out_hw, i, j, stride, dilation)
            out[:, rows, columns, :] += cols[:, i, j]
    return out
