"""Every pool's VJP against finite differences of its own forward (float64) and against
PyTorch, over a grid of (kernel, stride, padding, [dilation,] ceil_mode, count_include_pad).

Issue 23 reported avg_pool1d([1, 2, 9], kernel 7, stride 3, padding 3, ceil_mode,
count_include_pad): the engine's gradient is not the derivative of its forward (1.3e-2 off),
torch's is (6e-11). That is burn's rule, kept: burn-flex (commit 2c06be35,
crates/burn-flex/src/ops/pool.rs) divides a window by its positions inside the padded input in
the forward (`avg_pool3d_impl`, `pad_count` from `padded_len_avgpool`) and by the whole
kernel in the backward (`avg_pool3d_backward_impl`, `kernel_volume`); they differ only for a
ceil-mode last window that the end of the padded input clips. So the average-pool test states
burn's rule as a derivative: the engine's VJP of cotangent `c` is the finite-difference
gradient of `sum(c * scale * f(x))`, where `scale` per output window is the forward's divisor
over the backward's (1 everywhere but at clipped windows with `count_include_pad`), computed
here from PyTorch's formula for the divisor (`hend = min(hstart + k, L + pad)`), not from the
engine. Max pools and adaptive pools are consistent: their VJP is the plain finite difference.

Tolerances: `assert_fd` (the kernels are piecewise linear in the input, so central differences
are exact up to rounding, ~1e-16 |L| / 1e-6) and `assert_close` (sums of K terms, see
test_kernels_support).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_kernels_support import assert_close, assert_fd, cotangent, finite_difference

from harness.engine.kernels import (
    adaptive_avg_pool1d,
    adaptive_avg_pool1d_backward,
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    avg_pool1d,
    avg_pool1d_backward,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool1d,
    max_pool1d_backward,
    max_pool2d,
    max_pool2d_backward,
)

LENGTH = 9
HW = (7, 6)
REPORTED = (7, 3, 3, True, True)  # issue 23: kernel, stride, padding, ceil_mode, count_pad


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _torch(f, x, c):
    """PyTorch's output and VJP of `c` (trimmed to torch's output shape)."""
    tx = torch.tensor(x, requires_grad=True)
    out = f(tx)
    out = out[0] if isinstance(out, tuple) else out
    out.backward(torch.tensor(c[tuple(slice(0, n) for n in out.shape)]))
    return out.detach().numpy(), tx.grad.numpy()


def _split_extra(out, t_out, fill):
    """flex keeps a ceil-mode last window that starts in the right padding, PyTorch drops it:
    the engine's output is torch's plus at most one more position per spatial axis, holding
    `fill` (the window has no input element). Returns the part torch has."""
    nd = t_out.ndim - 2
    assert out.shape[:2] == t_out.shape[:2]
    extra = [a - b for a, b in zip(out.shape[2:], t_out.shape[2:], strict=True)]
    assert all(e in (0, 1) for e in extra), (out.shape, t_out.shape)
    common = out[(Ellipsis, *[slice(0, n) for n in t_out.shape[2:]])]
    rest = np.ones(out.shape, bool)
    rest[(Ellipsis, *[slice(0, n) for n in t_out.shape[2:]])] = False
    assert np.all(out[rest] == fill), f"{nd}-d: extra windows hold {out[rest]}"
    return common


# ---------------------------------------------------------------------------------------------
# average pools


def _divisors(size, k, s, p, out_len, count_include_pad):
    """Per output window, (the forward's divisor, burn-flex's backward divisor), along one
    axis: PyTorch's count (positions inside the padded input, or input elements), and the
    kernel size for burn's backward with `count_include_pad`."""
    start = np.arange(out_len) * s - p
    if count_include_pad:
        forward = np.minimum(start + k, size + p) - start
        return np.maximum(forward, 1), np.full(out_len, k)
    valid = np.minimum(start + k, size) - np.maximum(start, 0)
    valid = np.maximum(valid, 1)
    return valid, valid


def _assert_burns_rule(f, x, c, scale, gx, t_grad, terms):
    """The engine's VJP `gx` of `c` is the finite-difference gradient of `sum(c * scale *
    f(x))` (burn's rule), torch's `t_grad` that of `sum(c * f(x))` (the derivative); where
    `scale` is 1 everywhere the two rules agree, and so must the VJPs (sums of `terms`)."""
    (burn_rule,) = finite_difference(f, [x], c * scale)
    assert_fd(gx, burn_rule, "engine VJP vs burn's rule as a derivative")
    (derivative,) = finite_difference(f, [x], c)
    assert_fd(t_grad, derivative, "torch VJP vs the forward's derivative")
    if np.all(scale == 1):
        assert_close(gx, t_grad, terms, "VJP")


def _avg_grid(kernels, strides, paddings):
    return [
        (k, s, p, ceil, cip)
        for k, s, p in itertools.product(kernels, strides, paddings)
        if 2 * np.max(p) <= np.min(k)  # PyTorch: padding at most half the kernel
        for ceil in (False, True)
        for cip in (True, False)
    ]


AVG1D = _avg_grid((1, 2, 3, 7), (1, 2, 3), (0, 1, 2, 3))
assert REPORTED in AVG1D


def _ids(grid):
    return ["-".join(str(v) for v in case) for case in grid]


@pytest.mark.parametrize(("k", "s", "p", "ceil", "cip"), AVG1D, ids=_ids(AVG1D))
def test_avg_pool1d_vjp_is_burns_rule_and_matches_torch_where_it_is_the_derivative(
    k, s, p, ceil, cip
):
    x = _x((1, 2, LENGTH))
    out = avg_pool1d(x, k, s, p, cip, ceil)
    c = cotangent(out.shape)
    t_out, t_grad = _torch(lambda t: F.avg_pool1d(t, k, s, p, ceil, cip), x, c)
    assert_close(_split_extra(out, t_out, 0.0), t_out, k, "forward")
    gx = avg_pool1d_backward(c, x.shape, k, s, p, cip, ceil).x
    forward, backward = _divisors(LENGTH, k, s, p, out.shape[-1], cip)
    scale = forward / backward

    _assert_burns_rule(lambda v: avg_pool1d(v, k, s, p, cip, ceil), x, c, scale, gx, t_grad, k)


AVG2D = _avg_grid((2, 3, (3, 2)), (1, 2, (2, 1)), (0, 1, (1, 0)))


def _scale_2d(shape, k, s, p, out_hw, cip):
    k, s, p = (np.broadcast_to(v, 2) for v in (k, s, p))
    axes = [_divisors(shape[a], k[a], s[a], p[a], out_hw[a], cip) for a in range(2)]
    forward = np.outer(axes[0][0], axes[1][0])
    backward = np.prod(k) if cip else forward
    return forward / backward


@pytest.mark.parametrize(("k", "s", "p", "ceil", "cip"), AVG2D, ids=_ids(AVG2D))
def test_avg_pool2d_vjp_is_burns_rule_and_matches_torch_where_it_is_the_derivative(
    k, s, p, ceil, cip
):
    x = _x((1, 2, *HW))
    out = avg_pool2d(x, k, s, p, cip, ceil)
    c = cotangent(out.shape)
    t_out, t_grad = _torch(lambda t: F.avg_pool2d(t, k, s, p, ceil, cip), x, c)
    terms = int(np.prod(k))
    assert_close(_split_extra(out, t_out, 0.0), t_out, terms, "forward")
    gx = avg_pool2d_backward(c, x.shape, k, s, p, cip, ceil).x
    scale = _scale_2d(HW, k, s, p, out.shape[2:], cip)

    _assert_burns_rule(lambda v: avg_pool2d(v, k, s, p, cip, ceil), x, c, scale, gx, t_grad, terms)


def test_the_reported_avg_pool1d_case_is_burns_declared_inconsistency():
    """Issue 23's numbers, as burn-flex computes them: the last window (padded positions
    9..15 of 0..14) divides by its 6 positions inside in the forward and by 7 in the backward,
    so the last 3 input positions receive c_3 / 7 where the forward's derivative is c_3 / 6."""
    k, s, p, ceil, cip = REPORTED
    x = _x((1, 2, LENGTH))
    out = avg_pool1d(x, k, s, p, cip, ceil)
    assert out.shape == (1, 2, 4)
    np.testing.assert_allclose(out[..., 3], x[..., 6:].sum(-1) / 6, rtol=1e-15)
    c = np.zeros(out.shape)
    c[..., 3] = 1.0
    gx = avg_pool1d_backward(c, x.shape, k, s, p, cip, ceil).x
    np.testing.assert_array_equal(gx[..., 6:], 1 / 7)
    np.testing.assert_array_equal(gx[..., :6], 0.0)
    (fd,) = finite_difference(lambda v: avg_pool1d(v, k, s, p, cip, ceil), [x], c)
    np.testing.assert_allclose(fd[..., 6:], 1 / 6, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# max pools: the VJP is the forward's derivative (random inputs: no ties)


def _finite(f):
    """`f` with its non-finite outputs (windows without input: -inf, constant) set to 0, so
    finite differences of `sum(f * c)` stay finite; the engine gives those no gradient."""

    def g(v):
        out = f(v)
        return np.where(np.isfinite(out), out, 0.0)

    return g


MAX1D = [
    (k, s, p, d, ceil)
    for k, s, d in itertools.product((1, 2, 3), (1, 2, 3), (1, 2))
    for p in range(k // 2 + 1)
    for ceil in (False, True)
]


@pytest.mark.parametrize(("k", "s", "p", "d", "ceil"), MAX1D, ids=_ids(MAX1D))
def test_max_pool1d_vjp_is_the_derivative_and_matches_torch(k, s, p, d, ceil):
    x = _x((1, 2, LENGTH))
    r = max_pool1d(x, k, s, p, d, ceil)
    c = cotangent(r.output.shape)
    t_out, t_grad = _torch(lambda t: F.max_pool1d(t, k, s, p, d, ceil), x, c)
    assert_close(_split_extra(r.output, t_out, -np.inf), t_out, 1, "forward")
    gx = max_pool1d_backward(c, r.indices, x.shape).x
    (fd,) = finite_difference(_finite(lambda v: max_pool1d(v, k, s, p, d, ceil).output), [x], c)
    assert_fd(gx, fd)
    assert_close(gx, t_grad, 1, "VJP")


MAX2D = [
    (k, s, p, d, ceil)
    for k, s, d in itertools.product((2, 3, (3, 2)), (1, 2, (2, 1)), (1, (2, 1)))
    for p in (0, 1)
    for ceil in (False, True)
]


@pytest.mark.parametrize(("k", "s", "p", "d", "ceil"), MAX2D, ids=_ids(MAX2D))
def test_max_pool2d_vjp_is_the_derivative_and_matches_torch(k, s, p, d, ceil):
    x = _x((1, 2, *HW))
    r = max_pool2d(x, k, s, p, d, ceil)
    c = cotangent(r.output.shape)
    t_out, t_grad = _torch(lambda t: F.max_pool2d(t, k, s, p, d, ceil), x, c)
    assert_close(_split_extra(r.output, t_out, -np.inf), t_out, 1, "forward")
    gx = max_pool2d_backward(c, r.indices, x.shape).x
    (fd,) = finite_difference(_finite(lambda v: max_pool2d(v, k, s, p, d, ceil).output), [x], c)
    assert_fd(gx, fd)
    assert_close(gx, t_grad, 1, "VJP")


# ---------------------------------------------------------------------------------------------
# adaptive average pools: linear, the VJP is the derivative


@pytest.mark.parametrize("length", [5, 7, 9])
@pytest.mark.parametrize("out_size", [1, 2, 3, 4, 5])
def test_adaptive_avg_pool1d_vjp_is_the_derivative_and_matches_torch(length, out_size):
    x = _x((1, 2, length))
    out = adaptive_avg_pool1d(x, out_size)
    c = cotangent(out.shape)
    t_out, t_grad = _torch(lambda t: F.adaptive_avg_pool1d(t, out_size), x, c)
    assert_close(out, t_out, length, "forward")
    gx = adaptive_avg_pool1d_backward(c, x.shape).x
    (fd,) = finite_difference(lambda v: adaptive_avg_pool1d(v, out_size), [x], c)
    assert_fd(gx, fd)
    assert_close(gx, t_grad, length, "VJP")


@pytest.mark.parametrize("out_hw", [(1, 1), (2, 3), (3, 3), (4, 5), (7, 6)])
def test_adaptive_avg_pool2d_vjp_is_the_derivative_and_matches_torch(out_hw):
    x = _x((1, 2, *HW))
    out = adaptive_avg_pool2d(x, out_hw)
    c = cotangent(out.shape)
    t_out, t_grad = _torch(lambda t: F.adaptive_avg_pool2d(t, out_hw), x, c)
    assert_close(out, t_out, int(np.prod(HW)), "forward")
    gx = adaptive_avg_pool2d_backward(c, x.shape).x
    (fd,) = finite_difference(lambda v: adaptive_avg_pool2d(v, out_hw), [x], c)
    assert_fd(gx, fd)
    assert_close(gx, t_grad, int(np.prod(HW)), "VJP")
