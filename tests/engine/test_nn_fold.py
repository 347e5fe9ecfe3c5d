"""unfold4d / fold4d and the Unfold4d / Fold4d modules (crates/burn-nn/src/modules/{unfold,
fold}.rs, burn-backend ops/modules/{base,unfold}.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747): burn's own tests transcribed (names cited), both of
burn's unfold paths and fold against torch's F.unfold / F.fold forward and backward (float32
and float64), and burn's assert texts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from nn_support import AD, DTYPES, assert_burn_approx, leaf, tensor

from harness.engine import module_ops
from harness.engine.errors import ShapeError
from harness.engine.nn import Fold4dConfig, Unfold4dConfig

PLAIN = AD.inner()
GRID = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0],
        [13.0, 14.0, 15.0, 16.0]]  # fmt: skip


def test_burn_defaults():
    u = Unfold4dConfig((3, 3))
    assert (u.stride, u.dilation, u.padding) == ((1, 1), (1, 1), (0, 0))
    f = Fold4dConfig((4, 4), (2, 2))
    assert (f.stride, f.dilation, f.padding) == ((1, 1), (1, 1), (0, 0))
    assert list(u.init().params()) == [] and list(f.init().params()) == []


def test_burn_fold4d_known_values():
    # fold.rs fold4d_known_values (Tolerance::default())
    out = Fold4dConfig((3, 3), (2, 2)).init().forward(tensor([GRID], device=PLAIN))
    assert_burn_approx(out.numpy(), [[[[1.0, 7.0, 6.0], [12.0, 34.0, 22.0], [11.0, 27.0, 16.0]]]])


def test_burn_fold_of_unfold_matches_reference():
    # fold.rs fold_of_unfold_matches_reference
    x = tensor([[GRID]], device=PLAIN)
    cols = module_ops.unfold4d(x, (2, 2), module_ops.UnfoldOptions((1, 1), (0, 0), (1, 1)))
    out = Fold4dConfig((4, 4), (2, 2)).init().forward(cols)
    expected = [[[[1.0, 4.0, 6.0, 4.0], [10.0, 24.0, 28.0, 16.0], [18.0, 40.0, 44.0, 24.0],
                  [13.0, 28.0, 30.0, 16.0]]]]  # fmt: skip
    assert_burn_approx(out.numpy(), expected)


# (kernel, stride, dilation, padding): the first runs burn's unfold path, the others its
# one-hot conv2d path (padding or dilation)
OPTIONS = [((2, 3), (1, 2), (1, 1), (0, 0)), ((3, 2), (2, 1), (1, 2), (1, 0)),
           ((2, 2), (1, 1), (2, 1), (0, 1))]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kernel,stride,dilation,padding", OPTIONS)
def test_unfold_and_fold_modules_match_torch(kernel, stride, dilation, padding, dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 7)).astype(dtype)
    kw = dict(kernel_size=kernel, stride=stride, dilation=dilation, padding=padding)
    xt = torch.tensor(x, requires_grad=True)
    cols_t = F.unfold(xt, **kw)
    back_t = F.fold(cols_t, (6, 7), **kw)
    cot = rng.standard_normal((2, 3, 6, 7)).astype(dtype)
    (back_t * torch.tensor(cot)).sum().backward()
    xe = leaf(x, dtype)
    cols_e = Unfold4dConfig(kernel, stride, dilation, padding).init().forward(xe)
    back_e = Fold4dConfig((6, 7), kernel, stride, dilation, padding).init().forward(cols_e)
    grads = (back_e * tensor(cot, dtype)).sum().backward()
    # one-hot sums are exact (x * 1 + 0 * y); fold's overlapping sums may order differently
    np.testing.assert_array_equal(cols_e.numpy(), cols_t.detach().numpy())
    tol = {"float32": 1e-6, "float64": 1e-14}[dtype]
    np.testing.assert_allclose(back_e.numpy(), back_t.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
    assert back_e.dtype.name == dtype and str(xt.grad.dtype) == str(DTYPES[dtype])


def test_fold4d_asserts_with_burns_text():
    opts = module_ops.UnfoldOptions((1, 1), (0, 0), (1, 1))
    with pytest.raises(ShapeError, match=r"input channels \(5\) must be divisible by the kernel"):
        module_ops.fold4d(tensor(np.zeros((1, 5, 4))), (3, 3), (2, 2), opts)
    with pytest.raises(ShapeError, match=r"number of blocks \(5\) does not match .*\(2 x 2\)"):
        module_ops.fold4d(tensor(np.zeros((1, 4, 5))), (3, 3), (2, 2), opts)


def test_unfold4d_with_padding_turns_an_inf_window_into_nan():
    """burn's one-hot conv path: 0 * inf = NaN in every other column entry of a window
    holding the inf (documented in module_ops.unfold4d); torch's unfold copies the inf."""
    x = np.arange(9.0, dtype="float32").reshape(1, 1, 3, 3)
    x[0, 0, 1, 1] = np.inf
    opts = module_ops.UnfoldOptions((1, 1), (1, 1), (1, 1))
    out = module_ops.unfold4d(tensor(x, device=PLAIN), (2, 2), opts).numpy()
    theirs = F.unfold(torch.tensor(x), (2, 2), padding=1).numpy()
    sees_inf = np.isinf(theirs).any(axis=1)  # the windows (blocks) that hold the inf
    window = out[:, :, sees_inf[0]]
    is_inf = np.isinf(theirs[:, :, sees_inf[0]])
    assert np.isinf(window[is_inf]).all() and np.isnan(window[~is_inf]).all()
    np.testing.assert_array_equal(out[:, :, ~sees_inf[0]], theirs[:, :, ~sees_inf[0]])
