"""The conv and max-pool kernels against their earlier op-by-op computation, bit for bit
(issue 26: faster copies out of the batch-last layout, the input gradient's columns written
over the kept columns, recycled column buffers, a two-pass running max).

The references below are the kernels' computation before those changes, written out with
NumPy and the unchanged helpers of harness.engine.kernels._columns: the same gemm calls on
the same operands, the same elementwise operations in the same order, so any changed bit
is a regression. Inputs include -0.0, infinities and NaNs with payloads, where a copy that is
not a bit copy, or a tie broken otherwise, would show.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine.kernels import _columns as columns
from harness.engine.kernels import (
    conv1d_backward,
    conv1d_forward,
    conv2d,
    conv2d_backward,
    conv2d_forward,
    conv_transpose2d,
    max_pool1d,
    max_pool2d,
)
from harness.engine.kernels._common import tap
from harness.engine.kernels.pool import _first_valid_tap, _padded_size, _valid, _window

# Infinities of both signs meet in sums: NaN, as burn computes it, without NumPy's warning.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")

DTYPES = [np.float32, np.float64]
_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}

# (batch, c_in, (h, w), c_out, kernel, stride, padding, dilation, groups)
CONV2D = {
    "lenet-conv1": (4, 1, (28, 28), 6, (5, 5), 1, 2, 1, 1),
    "lenet-conv2": (4, 6, (14, 14), 16, (5, 5), 1, 0, 1, 1),
    "stride-pad-dil-groups": (2, 4, (9, 8), 6, (3, 2), (2, 1), (1, 0), (1, 2), 2),
    "stride-gt-kernel": (3, 2, (8, 9), 2, (2, 2), 3, 0, 1, 1),
    "depthwise": (2, 4, (6, 6), 4, (3, 3), 1, 1, 1, 4),
    "batch1": (1, 2, (6, 5), 3, (2, 3), 1, 1, 1, 1),
}

# (shape, kernel, stride, padding, dilation, ceil_mode)
MAX2D = {
    "lenet": ((4, 6, 28, 28), 2, 2, 0, 1, False),
    "overlap-pad": ((2, 3, 7, 8), 3, 2, 1, 1, False),
    "rect-dilated": ((2, 2, 9, 8), (3, 2), (1, 2), (1, 1), (2, 1), False),
    "ceil-pad": ((2, 1, 6, 7), 3, 2, 1, 1, True),
    "stride-gt-kernel": ((2, 1, 9, 10), 2, 3, 0, 1, False),
    "batch1": ((1, 2, 4, 6), (2, 3), 1, (1, 1), 1, False),
    "window-without-input": ((2, 2, 5, 5), 2, 2, 2, 1, False),  # index -1 (burn allows it)
}


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(_UINT[a.dtype]) if a.dtype in _UINT else a


def assert_same_bits(new: np.ndarray, old: np.ndarray) -> None:
    assert new.shape == old.shape and new.dtype == old.dtype
    assert new.flags.c_contiguous
    assert np.array_equal(_bits(new), _bits(old)), "results differ in some bit"


def _specials(a: np.ndarray, rng) -> np.ndarray:
    """`a` with a few -0.0, +-inf and payload NaNs (quiet and signalling) at random places."""
    a = a.copy()
    flat, u = a.reshape(-1), a.reshape(-1).view(_UINT[a.dtype])
    n = max(1, flat.size // 50)
    spots = rng.choice(flat.size, size=5 * n, replace=False).reshape(5, n)
    flat[spots[0]] = -0.0
    flat[spots[1]] = np.inf
    flat[spots[2]] = -np.inf
    one = u.dtype.type(1)
    quiet = np.array(np.nan, a.dtype).view(u.dtype)
    u[spots[3]] = quiet | (one << u.dtype.type(3))  # a quiet NaN with a payload
    inf = np.array(np.inf, a.dtype).view(u.dtype)
    u[spots[4]] = inf | one  # a signalling NaN
    return a


def _conv_inputs(case, dtype, specials=None, seed=0):
    n, c, hw, o, k, _, _, _, groups = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, *hw)).astype(dtype)
    w = (rng.standard_normal((o, c // groups, *k)) / np.sqrt(c * np.prod(k))).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    if specials == "x":
        x = _specials(x, rng)
    g = rng.standard_normal((n, o, *_out_hw(case))).astype(dtype)
    if specials == "grad":
        g = _specials(g, rng)
    return x, w, b, g


def _out_hw(case):
    _, _, hw, _, k, stride, padding, dilation, _ = case
    s, p, d = _two(stride), _two(padding), _two(dilation)
    return tuple((hw[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))


def _opts(case):
    _, _, _, _, _, stride, padding, dilation, groups = case
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def _two(v):
    return v if isinstance(v, tuple) else (v, v)


# ---- the earlier computation, op by op ------------------------------------------------------


def _old_gemm(a, b):
    """The kernels' gemm: one 2-D matmul for one group, a batched one otherwise."""
    with np.errstate(invalid="ignore"):
        return np.matmul(a[0], b[0])[None] if a.shape[0] == 1 else np.matmul(a, b)


def _old_columns(x, case):
    _, _, _, _, k, stride, padding, dilation, groups = case
    xp = columns.plane(x, _two(padding))
    cols = columns.im2col(xp, _out_hw(case), k, _two(stride), _two(dilation))
    return cols.reshape(groups, -1, cols.shape[-1])


def _old_conv2d(x, w, b, case):
    groups, c_out, out_hw = case[8], w.shape[0], _out_hw(case)
    out = _old_gemm(w.reshape(groups, c_out // groups, -1), _old_columns(x, case))
    view = columns.batch_first(out.reshape(c_out, -1), out_hw)
    result = np.empty(view.shape, dtype=view.dtype)
    if b is None:
        np.copyto(result, view)
    else:
        np.add(view, b[None, :, None, None], out=result)  # walked in the result's order
    return result


def _old_conv2d_backward(g, x, w, case):
    _, c_in, (h, wd), c_out, k, stride, padding, dilation, groups = case
    gt = columns.batch_last(g).reshape(groups, c_out // groups, -1)
    wg = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)
    grad_cols = _old_gemm(wg, gt).reshape(c_in * k[0] * k[1], -1)
    p = _two(padding)
    padded = (h + 2 * p[0], wd + 2 * p[1])
    plane = columns.col2im(grad_cols, padded, g.shape[2:], k, _two(stride), _two(dilation))
    gx = np.ascontiguousarray(
        columns.batch_first(plane[:, p[0] : p[0] + h, p[1] : p[1] + wd], (h, wd))
    )
    gw = _old_gemm(gt, _old_columns(x, case).transpose(0, 2, 1)).reshape(w.shape)
    return gx, gw, gt.reshape(c_out, -1).sum(axis=1)


def _old_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
    """The earlier `_max_pool2d`: batch-last taps, `arg += take * (t - arg)`, flat indices
    built batch-last then copied batch-first."""
    w = _window("max_pool2d", x, 2, kernel, stride, padding, dilation, ceil_mode)
    h, width = x.shape[2:]
    plane_hw = (_padded_size(h, w, 0), _padded_size(width, w, 1))
    xp = columns.plane(x, w.padding, plane_hw, fill=-np.inf)
    valid_h, valid_w = _valid(h, w, 0), _valid(width, w, 1)
    taps = [
        (i * w.kernel[1] + j, xp[(slice(None), *tap(w.out, i, j, w.stride, w.dilation))])
        for i in range(w.kernel[0])
        for j in range(w.kernel[1])
    ]
    assert not np.isnan(x).any()  # the NaN scan is unchanged: see the kernels' own tests
    best = taps[0][1].copy()
    arg = np.zeros(best.shape, dtype=np.int32)
    for t, v in taps[1:]:
        take = np.greater(v, best)
        np.maximum(best, v, out=best)
        arg += take * (t - arg)
    worst = best == -np.inf
    if worst.any():
        arg = np.where(worst, _first_valid_tap(valid_h, valid_w, w)[:, :, None], arg)
    i, j = np.divmod(np.arange(w.kernel[0] * w.kernel[1]), w.kernel[1])
    offset = i * w.dilation[0] * width + j * w.dilation[1]
    row0 = np.arange(w.out[0]) * w.stride[0] - w.padding[0]
    col0 = np.arange(w.out[1]) * w.stride[1] - w.padding[1]
    flat = offset[arg] + (row0[:, None] * width + col0[None, :])[:, :, None]
    flat[arg < 0] = -1
    return (
        np.ascontiguousarray(best.transpose(3, 0, 1, 2)),
        np.ascontiguousarray(flat.transpose(3, 0, 1, 2)),
    )


# ---- conv ------------------------------------------------------------------------------------


@pytest.mark.parametrize("specials", [None, "x"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CONV2D)
def test_conv2d_forward_is_the_earlier_computation_to_the_bit(name, dtype, specials):
    case = CONV2D[name]
    x, w, b, _ = _conv_inputs(case, dtype, specials)
    old = _old_conv2d(x, w, b, case)
    assert_same_bits(conv2d(x, w, b, **_opts(case)), old)
    assert_same_bits(conv2d_forward(x, w, b, **_opts(case)).output, old)
    assert_same_bits(conv2d(x, w, None, **_opts(case)), _old_conv2d(x, w, None, case))


@pytest.mark.parametrize("give", [False, True])
@pytest.mark.parametrize("specials", [None, "x", "grad"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CONV2D)
def test_conv2d_backward_is_the_earlier_computation_to_the_bit(name, dtype, specials, give):
    """With the forward's columns handed over (their buffer then holds the input gradient's
    columns), kept, or re-gathered: the same gradients as before, bit for bit."""
    case = CONV2D[name]
    x, w, b, g = _conv_inputs(case, dtype, specials)
    gx, gw, gb = _old_conv2d_backward(g, x, w, case)
    fwd = conv2d_forward(x, w, b, **_opts(case))
    kept = fwd.columns.copy()
    for cols in (fwd.columns, None):
        r = conv2d_backward(g, x, w, **_opts(case), columns=cols, give_columns=give)
        assert_same_bits(r.x, gx)
        assert_same_bits(r.weight, gw)
        assert_same_bits(r.bias, gb)
        if not give:
            assert_same_bits(fwd.columns, kept)  # kept columns are left as they were
        # each gradient alone: the order of the two gemms does not matter either
        alone_w = conv2d_backward(
            g, x, w, **_opts(case), need_x=False, need_bias=False, columns=cols, give_columns=give
        )
        if cols is None:
            assert_same_bits(alone_w.weight, gw)
        alone_x = conv2d_backward(g, x, w, **_opts(case), need_weight=False, need_bias=False)
        assert_same_bits(alone_x.x, gx)


def test_handed_over_columns_are_recycled_and_only_then():
    """The next forward of the same size takes a handed-over buffer; kept columns that were
    not handed over, or were handed over by a forward still alive elsewhere, are not
    overwritten behind their owner's back."""
    case = CONV2D["lenet-conv2"]
    x, w, b, g = _conv_inputs(case, np.float32)
    y, _, _, h = _conv_inputs(case, np.float32, seed=1)
    columns.release_scratch()
    first = conv2d_forward(x, w, b, **_opts(case))
    owner = first.columns.base
    conv2d_backward(g, x, w, **_opts(case), columns=first.columns, give_columns=True)
    columns.recycle(first.columns)  # a second give-back must not queue the buffer twice
    second = conv2d_forward(y, w, b, **_opts(case))
    assert second.columns.base is owner  # recycled
    assert conv2d_forward(y, w, b, **_opts(case)).columns.base is not owner
    assert_same_bits(second.columns, _old_columns(y, case))
    kept = second.columns.copy()
    conv2d_backward(h, y, w, **_opts(case), columns=second.columns)  # not handed over
    third = conv2d_forward(x, w, b, **_opts(case))
    assert third.columns.base is not owner
    assert_same_bits(second.columns, kept)
    columns.release_scratch()
    assert not columns._SCRATCH.spare


@pytest.mark.parametrize("give", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv1d_through_the_2d_path_is_unchanged(dtype, give):
    """conv1d runs the 2-D kernels with a height of 1: the same bits as the 2-D reference."""
    case = (3, 4, (1, 11), 6, (1, 3), (1, 2), (0, 1), (1, 2), 2)
    x, w, b, g = _conv_inputs(case, dtype, "x")
    opts = dict(stride=2, padding=1, dilation=2, groups=2)
    fwd = conv1d_forward(x[:, :, 0], w[:, :, 0], b, **opts)
    assert_same_bits(fwd.output, _old_conv2d(x, w, b, case)[:, :, 0])
    r = conv1d_backward(
        g[:, :, 0], x[:, :, 0], w[:, :, 0], **opts, columns=fwd.columns, give_columns=give
    )
    gx, gw, gb = _old_conv2d_backward(g, x, w, case)
    assert np.array_equal(_bits(r.x), _bits(gx[:, :, 0]))
    assert np.array_equal(_bits(r.weight), _bits(gw[:, :, 0]))
    assert np.array_equal(_bits(r.bias), _bits(gb))


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose2d_output_copy_is_a_bit_copy(dtype):
    """conv_transpose2d's output goes through the same copy out of the batch-last plane."""
    rng = np.random.default_rng(3)
    x = _specials(rng.standard_normal((2, 4, 3, 4)).astype(dtype), rng)
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    opts = dict(stride=(2, 2), padding=(1, 1), padding_out=(1, 0), dilation=(1, 1), groups=2)
    out = conv_transpose2d(x, w, b, **opts)
    assert out.flags.c_contiguous
    # the same crop of the same plane, added to the bias walked in the output's order
    cols = _old_gemm(
        w.reshape(2, 2, -1).transpose(0, 2, 1), columns.batch_last(x).reshape(2, 2, -1)
    ).reshape(6 * 3 * 2, -1)
    plane = columns.col2im(cols, (7, 8), (3, 4), (3, 2), (2, 2), (1, 1))
    view = columns.batch_first(plane[:, 1 : 1 + out.shape[2], 1 : 1 + out.shape[3]], out.shape[2:])
    assert_same_bits(out, view + b[None, :, None, None])


# ---- max pool --------------------------------------------------------------------------------


def _pool_input(shape, dtype, seed=0):
    """Values with many ties (a coarse grid, +0.0 and -0.0 both) and a few infinities."""
    rng = np.random.default_rng(seed)
    x = (np.round(rng.standard_normal(shape) * 2) / 2).astype(dtype)
    x[x == 0] = np.where(rng.random(np.count_nonzero(x == 0)) < 0.5, -0.0, 0.0)
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, size=max(2, flat.size // 40), replace=False)
    flat[spots[::2]] = np.inf
    flat[spots[1::2]] = -np.inf
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MAX2D)
def test_max_pool2d_is_the_earlier_computation_to_the_bit(name, dtype):
    shape, *args = MAX2D[name]
    for x in (_pool_input(shape, dtype), np.full(shape, -np.inf, dtype)):
        r = max_pool2d(x, *args)
        out, idx = _old_max_pool2d(x, *args)
        assert_same_bits(r.output, out)
        assert r.indices.dtype == np.int64 and r.indices.flags.c_contiguous
        np.testing.assert_array_equal(r.indices, idx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_output_is_the_element_its_index_names(dtype):
    """Each output is a bit copy of the input element at its index (NaN payloads, -0.0)."""
    x = _specials(_pool_input((3, 2, 9, 8), dtype), np.random.default_rng(5))
    r = max_pool2d(x, 3, 2, 1)
    planes = x.reshape(6, -1)
    idx = r.indices.reshape(6, -1)
    assert (idx >= 0).all()
    taken = np.take_along_axis(planes, idx, axis=1).reshape(r.output.shape)
    assert_same_bits(r.output, taken)
    r1 = max_pool1d(x[:, :, 0], 3, 2, 1)
    taken1 = np.take_along_axis(x[:, :, 0], r1.indices, axis=2)
    assert np.array_equal(_bits(r1.output), _bits(np.ascontiguousarray(taken1)))
