"""Pooling kernels: forward and VJP against PyTorch (float32 and float64), finite differences
(float64), burn's own test vectors, and every place where burn's rule (kept) and PyTorch's
differ: ties, NaN, ceil mode, padding beyond half the kernel, avg backward in ceil mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_kernels_support import assert_close, assert_fd, cotangent, finite_difference

from harness.engine.errors import ShapeError
from harness.engine.kernels import (
    adaptive_avg_pool1d,
    adaptive_avg_pool1d_backward,
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    adaptive_bins,
    avg_pool1d,
    avg_pool1d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool1d,
    max_pool1d_backward,
    max_pool2d,
    max_pool2d_backward,
)

DTYPES = [np.float32, np.float64]

# (shape, kernel, stride, padding, dilation, ceil_mode); ceil cases where flex and PyTorch
# agree on the output size (see test_ceil_mode_keeps_a_window_pytorch_drops for the others).
MAX2D = {
    "lenet": ((2, 3, 8, 8), 2, 2, 0, 1, False),
    "overlap-pad": ((2, 3, 7, 8), 3, 2, 1, 1, False),
    "rect-dilated": ((2, 2, 9, 8), (3, 2), (1, 2), (1, 1), (2, 1), False),
    "kernel-is-input": ((1, 2, 5, 5), 5, 1, 0, 1, False),
    "stride-gt-kernel": ((2, 1, 9, 10), 2, 3, 0, 1, False),
    "ceil": ((1, 2, 6, 6), 3, 2, 0, 1, True),
    "ceil-pad": ((2, 1, 6, 7), 3, 2, 1, 1, True),
    "batch1-channel1": ((1, 1, 4, 6), (2, 3), 1, (1, 1), 1, False),
}


def _input(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _torch_vjp(f, x, c):
    tx = torch.tensor(x, requires_grad=True)
    out = f(tx)
    first = out[0] if isinstance(out, tuple) else out
    first.backward(torch.tensor(c))
    return out, tx.grad.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MAX2D)
def test_max_pool2d_matches_torch(name, dtype):
    shape, k, s, p, d, ceil = MAX2D[name]
    x = _input(shape, dtype)
    r = max_pool2d(x, k, s, p, d, ceil)
    c = cotangent(r.output.shape, dtype)
    (t_out, t_idx), tx = _torch_vjp(
        lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True), x, c
    )
    np.testing.assert_array_equal(r.output, t_out.detach().numpy())
    np.testing.assert_array_equal(r.indices, t_idx.numpy())
    assert r.indices.dtype == np.int64 and r.output.dtype == dtype
    gx = max_pool2d_backward(c, r.indices, x.shape).x
    # Overlapping windows can send several terms to one input element.
    assert_close(gx, tx, 4, "x")


@pytest.mark.parametrize("name", ["overlap-pad", "rect-dilated", "ceil-pad"])
def test_max_pool2d_vjp_matches_finite_differences(name):
    shape, k, s, p, d, ceil = MAX2D[name]
    x = _input(shape, np.float64)  # distinct values: no tie within a step of 1e-6
    r = max_pool2d(x, k, s, p, d, ceil)
    c = cotangent(r.output.shape)
    (fx,) = finite_difference(lambda x: max_pool2d(x, k, s, p, d, ceil).output, [x], c)
    assert_fd(max_pool2d_backward(c, r.indices, x.shape).x, fx)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool1d_matches_torch(dtype):
    x = _input((2, 3, 11), dtype)
    for k, s, p, d, ceil in [(3, 2, 1, 2, False), (2, 2, 0, 1, True), (4, 1, 2, 1, False)]:
        r = max_pool1d(x, k, s, p, d, ceil)
        c = cotangent(r.output.shape, dtype)
        (t_out, t_idx), tx = _torch_vjp(
            lambda t, k=k, s=s, p=p, d=d, ceil=ceil: F.max_pool1d(
                t, k, s, p, d, ceil_mode=ceil, return_indices=True
            ),
            x,
            c,
        )
        np.testing.assert_array_equal(r.output, t_out.detach().numpy())
        np.testing.assert_array_equal(r.indices, t_idx.numpy())
        assert_close(max_pool1d_backward(c, r.indices, x.shape).x, tx, 4, "x")


def test_max_pool1d_vjp_matches_finite_differences():
    x = _input((2, 3, 11), np.float64)
    r = max_pool1d(x, 3, 2, 1, 2)
    c = cotangent(r.output.shape)
    (fx,) = finite_difference(lambda x: max_pool1d(x, 3, 2, 1, 2).output, [x], c)
    assert_fd(max_pool1d_backward(c, r.indices, x.shape).x, fx)


def test_max_pool_ties_send_the_gradient_to_the_first_maximum():
    """flex's scan keeps the first maximum in row-major window order (`val > max_val`,
    burn-flex/src/ops/pool.rs max_pool3d_with_indices_impl); PyTorch's CPU kernel does too."""
    x = np.array([[[[1.0, 3.0, 3.0], [3.0, 2.0, 3.0], [0.0, 3.0, 3.0]]]])
    r = max_pool2d(x, 2, 1)
    # windows: (0,0) [1 3; 3 2] -> 3 at (0,1); (0,1) [3 3; 2 3] -> (0,1);
    #          (1,0) [3 2; 0 3] -> (1,0);       (1,1) [2 3; 3 3] -> (1,2)
    np.testing.assert_array_equal(r.indices[0, 0], [[1, 1], [3, 5]])
    gx = max_pool2d_backward(np.ones((1, 1, 2, 2)), r.indices, x.shape).x
    np.testing.assert_array_equal(gx[0, 0], [[0, 2, 0], [1, 0, 1], [0, 0, 0]])
    _, t_idx = F.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
    np.testing.assert_array_equal(r.indices, t_idx.numpy())  # the same rule in PyTorch
    flat = max_pool1d(np.full((1, 1, 4), 7.0), 4)
    assert flat.indices.tolist() == [[[0]]]


def test_max_pool_nan_wins_only_as_a_windows_first_element_in_burn():
    """flex compares `val > max_val` after taking the first valid element: a later NaN never
    wins, a leading NaN is never replaced. PyTorch's CPU kernel takes every NaN."""
    x = np.array([[[1.0, np.nan, 3.0, 0.0], [np.nan, 1.0, 3.0, 0.0]]])
    r = max_pool1d(x, 4)
    assert r.output[0, 0, 0] == 3.0 and r.indices[0, 0, 0] == 2
    assert np.isnan(r.output[0, 1, 0]) and r.indices[0, 1, 0] == 0
    t_out, t_idx = F.max_pool1d(torch.tensor(x), 4, return_indices=True)
    assert np.isnan(t_out[0, 0, 0].item()) and t_idx[0, 0, 0].item() == 1  # differs
    assert t_idx[0, 1, 0].item() == 0


@pytest.mark.parametrize("name", ["overlap-pad", "rect-dilated", "ceil-pad", "batch1-channel1"])
def test_max_pool_scan_with_a_nan_elsewhere_gives_the_same_result(name):
    """A NaN anywhere switches to the masked scan (flex's comparisons one by one); channels
    without NaN must come out as from the running-maximum scan."""
    shape, k, s, p, d, ceil = MAX2D[name]
    x = _input(shape, np.float64)
    x[:, :, 0, 0] = -np.inf  # a -inf corner: with padding, a window whose max is -inf
    plain = max_pool2d(x, k, s, p, d, ceil)
    y = np.concatenate([x, np.full((*x.shape[:1], 1, *x.shape[2:]), np.nan)], axis=1)
    masked = max_pool2d(y, k, s, p, d, ceil)
    np.testing.assert_array_equal(masked.output[:, :-1], plain.output)
    np.testing.assert_array_equal(masked.indices[:, :-1], plain.indices)
    _, t_idx = F.max_pool2d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(plain.indices, t_idx.numpy())


def test_max_pool_all_minus_inf_window_takes_its_first_valid_element():
    x = np.full((1, 1, 3, 3), -np.inf)
    r = max_pool2d(x, 2, 2, padding=1)
    np.testing.assert_array_equal(r.indices[0, 0], [[0, 1], [3, 4]])
    _, t_idx = F.max_pool2d(torch.tensor(x), 2, 2, 1, return_indices=True)
    np.testing.assert_array_equal(r.indices, t_idx.numpy())


def test_ceil_mode_keeps_a_window_pytorch_drops():
    """Input 5, kernel 2, stride 2, padding 1, ceil mode: flex (pool_output_size) 4 windows,
    PyTorch 3 (it drops a last window starting in the right padding). The 4th window holds
    no input element: max -inf with index -1 (no gradient), average 0."""
    x = np.arange(5.0).reshape(1, 1, 5)
    r = max_pool1d(x, 2, 2, 1, ceil_mode=True)
    t = F.max_pool1d(torch.tensor(x), 2, 2, 1, ceil_mode=True)
    assert r.output.shape == (1, 1, 4) and t.shape == (1, 1, 3)
    np.testing.assert_array_equal(r.output[..., :3], t.numpy())
    assert r.output[0, 0, 3] == -np.inf and r.indices[0, 0, 3] == -1
    gx = max_pool1d_backward(np.ones((1, 1, 4)), r.indices, x.shape).x
    np.testing.assert_array_equal(gx, [[[1.0, 0.0, 1.0, 0.0, 1.0]]])
    avg = avg_pool1d(x, 2, 2, 1, count_include_pad=False, ceil_mode=True)
    np.testing.assert_array_equal(avg, [[[0.0, 1.5, 3.5, 0.0]]])


def test_padding_beyond_half_the_kernel_is_allowed_as_in_burn():
    x = _input((1, 1, 3, 3), np.float64)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(torch.tensor(x), 2, 2, 2)
    r = max_pool2d(x, 2, 2, 2)  # windows start at input rows / columns -2, 0, 2
    assert r.output.shape == (1, 1, 3, 3)
    assert r.output[0, 0, 0, 0] == -np.inf and r.indices[0, 0, 0, 0] == -1
    corner = x[0, 0, :2, :2]
    assert r.output[0, 0, 1, 1] == corner.max()
    row, col = np.unravel_index(corner.argmax(), (2, 2))
    assert r.indices[0, 0, 1, 1] == row * 3 + col
    gx = max_pool2d_backward(np.ones((1, 1, 3, 3)), r.indices, x.shape).x
    assert gx.sum() == 4.0  # the 5 windows of row or column -2 are empty: no gradient


def test_max_pool2d_matches_burn_test_vectors():
    """burn-backend-tests/tests/autodiff/maxpool2d.rs (commit 2c06be35): test_max_pool2d_simple_2
    and test_max_pool2d_complex (gradients of the output's sum), and
    tests/tensor/float/module/maxpool2d.rs test_max_pool2d_ceil_mode_with_indices_and_padding."""
    x = np.array(
        [[0.2479, 0.6386, 0.3166, 0.5742], [0.7065, 0.1940, 0.6305, 0.8959],
         [0.5416, 0.8602, 0.8129, 0.1662], [0.3358, 0.3059, 0.8293, 0.0990]],
        dtype=np.float32,
    )[None, None]  # fmt: skip
    r = max_pool2d(x, 2, 1, 1)
    gx = max_pool2d_backward(np.ones_like(r.output), r.indices, x.shape).x
    np.testing.assert_array_equal(
        gx[0, 0], [[1, 3, 0, 2], [3, 0, 0, 4], [1, 4, 0, 1], [2, 0, 3, 1]]
    )
    x = np.array(
        [[0.5388, 0.0676, 0.7122, 0.8316, 0.0653], [0.9154, 0.1536, 0.9089, 0.8016, 0.7518],
         [0.2073, 0.0501, 0.8811, 0.5604, 0.5075], [0.4384, 0.9963, 0.9698, 0.4988, 0.2609],
         [0.3391, 0.2230, 0.4610, 0.5365, 0.6880]],
        dtype=np.float32,
    )[None, None]  # fmt: skip
    r = max_pool2d(x, (4, 2), (1, 2), (2, 1))
    gx = max_pool2d_backward(np.ones_like(r.output), r.indices, x.shape).x
    np.testing.assert_array_equal(
        gx[0, 0],
        [[0, 0, 0, 3, 0], [4, 0, 2, 1, 0], [0, 0, 0, 0, 0], [2, 4, 0, 0, 0], [0, 0, 0, 0, 2]],
    )
    r = max_pool2d(np.arange(25.0).reshape(1, 1, 5, 5), 3, 2, 1, ceil_mode=True)
    np.testing.assert_array_equal(r.output[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])
    np.testing.assert_array_equal(r.indices[0, 0], [[6, 8, 9], [16, 18, 19], [21, 23, 24]])


# ---------------------------------------------------------------------------------------------
# average pool
# ---------------------------------------------------------------------------------------------

# (shape, kernel, stride, padding, ceil_mode)
AVG2D = {
    "lenet": ((2, 3, 8, 8), 2, 2, 0, False),
    "overlap-pad": ((2, 3, 7, 8), 3, 2, 1, False),
    "rect": ((2, 2, 9, 8), (3, 2), (1, 2), (1, 1), False),
    "kernel-is-input": ((1, 2, 5, 5), 5, 1, 0, False),
    "stride-gt-kernel": ((2, 1, 9, 10), 2, 3, 1, False),
    "ceil": ((1, 2, 6, 6), 3, 2, 0, True),
    "batch1-channel1": ((1, 1, 4, 6), (2, 3), 1, (1, 1), False),
}


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", AVG2D)
def test_avg_pool2d_matches_torch(name, dtype, count_include_pad):
    shape, k, s, p, ceil = AVG2D[name]
    x = _input(shape, dtype)
    out = avg_pool2d(x, k, s, p, count_include_pad, ceil)
    c = cotangent(out.shape, dtype)
    t_out, tx = _torch_vjp(
        lambda t: F.avg_pool2d(t, k, s, p, ceil, count_include_pad=count_include_pad), x, c
    )
    terms = int(np.prod(k)) if isinstance(k, tuple) else k * k
    assert_close(out, t_out.detach().numpy(), terms, "out")
    gx = avg_pool2d_backward(c, x.shape, k, s, p, count_include_pad, ceil).x
    if ceil and count_include_pad:
        return  # burn's backward differs here on purpose: see the test after the next
    assert_close(gx, tx, terms, "x")


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_vjp_matches_finite_differences(count_include_pad):
    x = _input((2, 2, 7, 6), np.float64)
    c = cotangent(avg_pool2d(x, 3, 2, 1, count_include_pad).shape)
    (fx,) = finite_difference(lambda x: avg_pool2d(x, 3, 2, 1, count_include_pad), [x], c)
    assert_fd(avg_pool2d_backward(c, x.shape, 3, 2, 1, count_include_pad).x, fx)
    x1 = _input((2, 3, 9), np.float64)
    c1 = cotangent(avg_pool1d(x1, 4, 3, 2, count_include_pad).shape)
    (f1,) = finite_difference(lambda x: avg_pool1d(x, 4, 3, 2, count_include_pad), [x1], c1)
    assert_fd(avg_pool1d_backward(c1, x1.shape, 4, 3, 2, count_include_pad).x, f1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool1d_matches_torch(dtype):
    x = _input((2, 3, 11), dtype)
    for k, s, p, cip, ceil in [
        (3, 2, 1, True, False),
        (2, 2, 0, False, True),
        (4, 1, 2, False, False),
    ]:
        out = avg_pool1d(x, k, s, p, cip, ceil)
        c = cotangent(out.shape, dtype)
        t_out, tx = _torch_vjp(
            lambda t, k=k, s=s, p=p, cip=cip, ceil=ceil: F.avg_pool1d(t, k, s, p, ceil, cip), x, c
        )
        assert_close(out, t_out.detach().numpy(), k, "out")
        assert_close(avg_pool1d_backward(c, x.shape, k, s, p, cip, ceil).x, tx, k, "x")


def test_avg_pool_sums_in_flex_order_to_the_bit():
    """flex sums a window's elements one by one from 0 in row-major order (avg_pool3d_impl);
    the reference is that loop in float32, step by step. With these magnitudes the order
    matters: summing the taps column-major instead changes 20 of the 72 outputs."""
    x = (np.random.default_rng(7).standard_normal((1, 2, 6, 6)) * 10.0 ** np.arange(6)).astype(
        np.float32
    )
    out = avg_pool2d(x, 3, 1, 1, count_include_pad=False)
    ref = np.zeros_like(out)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for c in range(2):
        for oh in range(6):
            for ow in range(6):
                total, count = np.float32(0), 0
                for i in range(3):
                    for j in range(3):
                        ih, iw = oh + i - 1, ow + j - 1
                        if 0 <= ih < 6 and 0 <= iw < 6:
                            total = np.float32(total + xp[0, c, ih + 1, iw + 1])
                            count += 1
                ref[0, c, oh, ow] = total / np.float32(count)
    np.testing.assert_array_equal(out, ref)
    # The backward (avg_pool3d_backward_impl): output positions in order, each adding its
    # share to its window's input elements; the kernel adds its taps in reverse for this.
    g = x[:, :, ::-1, :].copy()
    ref_gx = np.zeros_like(x)
    for c in range(2):
        for oh in range(6):
            for ow in range(6):
                rows = [r for r in range(oh - 1, oh + 2) if 0 <= r < 6]
                cols = [q for q in range(ow - 1, ow + 2) if 0 <= q < 6]
                share = g[0, c, oh, ow] / np.float32(len(rows) * len(cols))
                for r in rows:
                    for q in cols:
                        ref_gx[0, c, r, q] = np.float32(ref_gx[0, c, r, q] + share)
    gx = avg_pool2d_backward(g, x.shape, 3, 1, 1, count_include_pad=False).x
    np.testing.assert_array_equal(gx, ref_gx)


def test_avg_pool_backward_with_ceil_mode_divides_by_the_kernel_as_burn():
    """flex's avg_pool3d_backward_impl divides by the whole kernel with count_include_pad,
    while the forward divided a clipped ceil-mode window by its positions inside the padded
    input (burn-backend-tests avgpool2d.rs test_avg_pool2d_ceil_mode_count_include_pad:
    corner 8.75 = 35 / 4). PyTorch's backward uses the forward's divisor."""
    x = np.arange(36.0).reshape(1, 1, 6, 6)
    out = avg_pool2d(x, 3, 2, 1, True, True)
    np.testing.assert_allclose(
        out[0, 0],
        [[1.5556, 3.3333, 4.6667, 2.6667], [8.3333, 14.0, 16.0, 8.5],
         [16.3333, 26.0, 28.0, 14.5], [10.1667, 16.0, 17.0, 8.75]],
        atol=1e-4,
    )  # fmt: skip
    g = np.zeros_like(out)
    g[0, 0, 3, 3] = 1.0  # the clipped corner window: rows/cols 5..6 of the padded 8x8
    gx = avg_pool2d_backward(g, x.shape, 3, 2, 1, True, True).x
    assert gx[0, 0, 5, 5] == 1.0 / 9.0  # burn: the kernel's 9 positions
    _, tx = _torch_vjp(lambda t: F.avg_pool2d(t, 3, 2, 1, True, True), x, g)
    assert tx[0, 0, 5, 5] == 0.25  # PyTorch: the window's 4 positions, as in the forward


def test_avg_pool2d_matches_burn_test_vectors():
    """burn-backend-tests/tests/autodiff/avgpool2d.rs (commit 2c06be35): test_avg_pool2d_complex
    and test_avg_pool2d_complex_dont_include_pad, gradients of the output's sum."""
    shape = (1, 1, 4, 6)
    ones = np.ones((1, 1, 4, 4), dtype=np.float32)
    gx = avg_pool2d_backward(ones, shape, (3, 4), (1, 2), (1, 2), True).x
    np.testing.assert_allclose(gx[0, 0, :, 0], [1 / 3, 0.5, 0.5, 1 / 3], rtol=1e-6)
    assert np.ptp(gx, axis=3).max() == 0.0
    gx = avg_pool2d_backward(ones, shape, (3, 4), (1, 2), (1, 2), False).x
    np.testing.assert_allclose(
        gx[0, 0],
        [[0.625, 0.625, 0.41667, 0.41667, 0.625, 0.625],
         [0.875, 0.875, 0.58333, 0.58333, 0.875, 0.875],
         [0.875, 0.875, 0.58333, 0.58333, 0.875, 0.875],
         [0.625, 0.625, 0.41667, 0.41667, 0.625, 0.625]],
        atol=1e-5,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# adaptive average pool
# ---------------------------------------------------------------------------------------------


def test_adaptive_bins_are_pytorchs():
    """Bins read back from PyTorch: one-hot channels make output[c, o] = 1/len(bin o) exactly
    when input element c is in bin o."""
    for size_in in range(1, 10):
        eye = torch.eye(size_in, dtype=torch.float64)[None]
        for size_out in range(1, 12):
            member = F.adaptive_avg_pool1d(eye, size_out)[0].numpy() > 0  # [in, out]
            start, end = adaptive_bins(size_in, size_out)
            for o in range(size_out):
                assert member[:, o].nonzero()[0].tolist() == list(range(start[o], end[o]))


ADAPTIVE = {
    "global": ((2, 3, 5, 7), (1, 1)),
    "divisible": ((2, 2, 8, 6), (4, 3)),
    "overlapping": ((1, 2, 7, 5), (3, 4)),
    "upsampling": ((2, 1, 2, 3), (5, 4)),
    "identity": ((1, 2, 3, 4), (3, 4)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_avg_pool2d_matches_torch(name, dtype):
    shape, size = ADAPTIVE[name]
    x = _input(shape, dtype)
    out = adaptive_avg_pool2d(x, size)
    c = cotangent(out.shape, dtype)
    t_out, tx = _torch_vjp(lambda t: F.adaptive_avg_pool2d(t, size), x, c)
    terms = -(-shape[2] // size[0]) * -(-shape[3] // size[1]) * 4
    assert_close(out, t_out.detach().numpy(), terms, "out")
    assert_close(adaptive_avg_pool2d_backward(c, x.shape).x, tx, terms, "x")


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool1d_matches_torch(dtype):
    x = _input((2, 3, 7), dtype)
    for size in (1, 3, 7, 10):
        out = adaptive_avg_pool1d(x, size)
        c = cotangent(out.shape, dtype)
        t_out, tx = _torch_vjp(lambda t, size=size: F.adaptive_avg_pool1d(t, size), x, c)
        assert_close(out, t_out.detach().numpy(), 7, "out")
        assert_close(adaptive_avg_pool1d_backward(c, x.shape).x, tx, 7, "x")


def test_adaptive_avg_pool_vjp_matches_finite_differences():
    x = _input((1, 2, 7, 5), np.float64)
    c = cotangent((1, 2, 3, 4))
    (fx,) = finite_difference(lambda x: adaptive_avg_pool2d(x, (3, 4)), [x], c)
    assert_fd(adaptive_avg_pool2d_backward(c, x.shape).x, fx)
    x1 = _input((2, 1, 3), np.float64)
    c1 = cotangent((2, 1, 5))
    (f1,) = finite_difference(lambda x: adaptive_avg_pool1d(x, 5), [x1], c1)
    assert_fd(adaptive_avg_pool1d_backward(c1, x1.shape).x, f1)


def test_adaptive_avg_pool_keeps_non_finite_values_in_their_bins():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.inf
    out = adaptive_avg_pool2d(x, (2, 2))
    np.testing.assert_array_equal(out[0, 0], [[np.inf, 0], [0, 0]])
    g = np.zeros((1, 1, 2, 2))
    g[0, 0, 1, 1] = np.nan
    gx = adaptive_avg_pool2d_backward(g, x.shape).x
    assert np.isnan(gx[0, 0, 2:, 2:]).all() and (gx[0, 0, :2] == 0).all()


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: max_pool2d(np.zeros((3, 8, 8)), 2), r"max_pool2d: expected an input of rank 4"),
        (lambda: max_pool1d(np.zeros((1, 3, 2)), 3), r"max_pool1d: kernel size \[3\] "
         r"\(dilated \[3\]\) is larger than the padded input \[2\]"),
        (lambda: avg_pool2d(np.zeros((1, 1, 2, 5)), 3, padding=0), r"avg_pool2d: kernel size "
         r"\[3, 3\] \(dilated \[3, 3\]\) is larger than the padded input \[2, 5\] "
         r"\(input shape \[1, 1, 2, 5\], padding \[0, 0\]\)"),
        (lambda: max_pool2d(np.zeros((1, 1, 4, 4)), 2, dilation=4), r"dilated \[5, 5\]"),
        (lambda: adaptive_avg_pool1d(np.zeros((1, 4)), 2), r"adaptive_avg_pool1d: expected an "
         r"input of rank 3"),
        (lambda: max_pool2d_backward(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2), np.int64),
                                     (1, 1, 4)), r"max_pool2d: expected an input shape"),
        (lambda: max_pool1d_backward(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2), np.int64),
                                     (1, 1, 4)), r"max_pool1d: expected an output gradient and "
         r"indices \[batch, channels, length\], got \[1, 1, 2, 2\] and \[1, 1, 2\]"),
        (lambda: max_pool2d_backward(np.zeros((1, 1, 2, 2)), np.full((1, 1, 2, 2), 16),
                                     (1, 1, 4, 4)), r"indices out of range"),
        (lambda: avg_pool2d_backward(np.zeros((1, 1, 3, 3)), (1, 1, 4, 4), 2), r"avg_pool2d: "
         r"expected an output gradient of shape \[1, 1, 2, 2\], got \[1, 1, 3, 3\]"),
    ],
)  # fmt: skip
def test_errors_name_the_op_and_the_shapes(call, message):
    with pytest.raises(ShapeError, match=message):
        call()


def test_an_empty_batch_gives_empty_outputs_and_gradients():
    x = np.zeros((0, 2, 5, 5), np.float32)
    r = max_pool2d(x, 2)
    assert r.output.shape == (0, 2, 2, 2) and r.indices.shape == (0, 2, 2, 2)
    assert max_pool2d_backward(r.output, r.indices, x.shape).x.shape == x.shape
    assert avg_pool2d_backward(avg_pool2d(x, 2), x.shape, 2).x.shape == x.shape
    y = adaptive_avg_pool2d(x, 3)
    assert y.shape == (0, 2, 3, 3) and adaptive_avg_pool2d_backward(y, x.shape).x.shape == x.shape


def test_pool_arguments_are_checked():
    with pytest.raises(ValueError, match="max_pool2d: stride must be >= 1"):
        max_pool2d(np.zeros((1, 1, 4, 4)), 2, stride=0)
    with pytest.raises(ValueError, match="kernel_size must be >= 1"):
        avg_pool1d(np.zeros((1, 1, 4)), 0)
    with pytest.raises(TypeError, match="float32, float64, float16 or bfloat16"):
        max_pool2d(np.zeros((1, 1, 4, 4), dtype=np.int32), 2)
