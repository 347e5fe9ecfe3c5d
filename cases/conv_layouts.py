"""Convolution weight layouts and padding conventions, PyTorch's `Conv2d` / `ConvTranspose2d`
against burn's (burn-nn src/modules/conv/, src/padding.rs, commit
2c06be351006851d42fdb6df16b976f4a82d9747), the engine modules built from PyTorch's tensors
as they are (no transposes).

Agree:
- `groups.*`: a grouped conv (4 -> 6 channels, groups 2): the weight is `[out, in / groups,
  kh, kw]` on both sides; the output and the weight / bias gradients agree;
- `transpose.*`: a grouped transposed conv (stride 2, padding 1, `padding_out` = PyTorch's
  `output_padding` 1): the weight is `[in, out / groups, kh, kw]` on both sides;
- `same_even.out`: `PaddingConfig2d.Same` with a 4x4 kernel vs `padding="same"`: both put
  the extra zero at the bottom / right;
- `explicit.out`: burn's `Explicit(top, left, bottom, right)` = (1, 0, 2, 1) vs PyTorch's
  `F.pad(x, (left, right, top, bottom))` = (0, 1, 1, 2) then a valid conv: only the field
  order differs.
Differ (documented on `harness.engine.nn.padding`):
- `same_dilated.out`: burn's `Same` pads by the kernel size, not the dilated kernel, so with
  dilation 2 the output loses a row and column on each side: it is PyTorch's interior;
- `same_strided.out`: PyTorch refuses `padding="same"` with stride 2, burn computes it from
  the input size.

Float32 sums of 36 to 100 products (values up to ~12) round differently in the engine's
im2col gemm and PyTorch's kernel by a few ULP: compared at 1e-5 (TOLERANCES).
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import agree, capture, differ, predicate, raises_vs_value
from harness.engine import (
    Conv2dConfig,
    ConvTranspose2dConfig,
    Device,
    PaddingConfig2d,
    Tensor,
)
from harness.engine.module import Param
from harness.tolerances import Tolerance


def _rng(seed: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


X = _rng(1, (2, 4, 7, 7))
W_GROUPS, B_GROUPS = _rng(2, (6, 2, 3, 3)), _rng(3, (6,))
W_T, B_T = _rng(4, (4, 3, 3, 3)), _rng(5, (6,))
W_EVEN = _rng(6, (3, 4, 4, 4))
W3 = _rng(7, (3, 4, 3, 3))


def _cot(shape) -> np.ndarray:
    return np.cos(np.arange(int(np.prod(shape)), dtype=np.float32)).reshape(shape)


def torch_side():
    t = torch.from_numpy
    x = t(X).requires_grad_(True)
    w, b = t(W_GROUPS).requires_grad_(True), t(B_GROUPS).requires_grad_(True)
    out = F.conv2d(x, w, b, groups=2)
    (out * t(_cot(out.shape))).sum().backward()
    wt = t(W_T).requires_grad_(True)
    tout = F.conv_transpose2d(t(X), wt, t(B_T), stride=2, padding=1, output_padding=1, groups=2)
    (tout * t(_cot(tout.shape))).sum().backward()
    return {
        "groups.out": out,
        "groups.grad.x": x.grad,
        "groups.grad.weight": w.grad,
        "groups.grad.bias": b.grad,
        "transpose.out": tout,
        "transpose.grad.weight": wt.grad,
        "same_even.out": F.conv2d(t(X), t(W_EVEN), padding="same"),
        "explicit.out": F.conv2d(F.pad(t(X), (0, 1, 1, 2)), t(W3)),
        "same_dilated.out": F.conv2d(t(X), t(W3), padding="same", dilation=2),
        "same_strided.out": capture(lambda: F.conv2d(t(X), t(W3), stride=2, padding="same")),
    }


def _with(module, weight: np.ndarray, bias: np.ndarray | None, device):
    """The module with PyTorch's tensors as its params, unchanged (the layouts are equal)."""
    module.weight = Param.from_tensor(Tensor.from_numpy(weight, device))
    module.bias = None if bias is None else Param.from_tensor(Tensor.from_numpy(bias, device))
    return module


def engine_side():
    ad, plain = Device.flex().autodiff(), Device.flex()
    conv = _with(Conv2dConfig((4, 6), (3, 3), groups=2).init(ad), W_GROUPS, B_GROUPS, ad)
    x = Tensor.from_numpy(X, ad).require_grad()
    out = conv(x)
    grads = (out * Tensor.from_numpy(_cot(out.shape), ad)).sum().backward()
    config = ConvTranspose2dConfig((4, 6), (3, 3), stride=(2, 2), padding=(1, 1), groups=2)
    transpose = _with(config.with_padding_out((1, 1)).init(ad), W_T, B_T, ad)
    tout = transpose(Tensor.from_numpy(X, ad))
    tgrads = (tout * Tensor.from_numpy(_cot(tout.shape), ad)).sum().backward()
    xp = Tensor.from_numpy(X, plain)

    def conv3(**kw):
        return _with(Conv2dConfig((4, 3), (3, 3), bias=False, **kw).init(plain), W3, None, plain)

    same = PaddingConfig2d.Same
    even = _with(
        Conv2dConfig((4, 3), (4, 4), padding=same, bias=False).init(plain), W_EVEN, None, plain
    )
    return {
        "groups.out": out,
        "groups.grad.x": x.grad(grads),
        "groups.grad.weight": conv.weight.val().grad(grads),
        "groups.grad.bias": conv.bias.val().grad(grads),
        "transpose.out": tout,
        "transpose.grad.weight": transpose.weight.val().grad(tgrads),
        "same_even.out": even(xp),
        "explicit.out": conv3(padding=PaddingConfig2d.Explicit(1, 0, 2, 1))(xp),
        "same_dilated.out": conv3(padding=same, dilation=(2, 2))(xp),
        "same_strided.out": conv3(padding=same, stride=(2, 2))(xp),
    }


def _interior(t, e) -> bool:
    t, e = np.asarray(t), np.asarray(e)
    return e.shape == (2, 3, 5, 5) and bool(np.allclose(t[..., 1:-1, 1:-1], e, atol=1e-6))


CHECKS = [
    agree("groups.*"),
    agree("transpose.*"),
    agree("same_even.out"),
    agree("explicit.out"),
    differ(
        "same_dilated.out",
        because="harness.engine.nn.padding",
        relation=predicate(
            "burn's Same pads by the undilated kernel: its output is torch's interior", _interior
        ),
    ),
    differ(
        "same_strided.out",
        because="harness.engine.nn.padding",
        relation=raises_vs_value("RuntimeError"),
    ),
]

_GEMM = Tolerance(1e-5, reason="float32 sums of 36-100 products in another order (im2col gemm)")
TOLERANCES = {"*.out": _GEMM, "*.grad.*": _GEMM}
