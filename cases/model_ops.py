"""Burn's wider tensor API the way models use it (issue 23), written twice, line for line:
a rotary/sinusoidal table from `sin`/`cos`, causal attention masked with `tril`, a gated
unit split with `chunk`, top-k sampling with `topk_with_indices`, a `scatter`-built one-hot
loss, and `repeat_dim`'s gradient, where burn's rule reads the copies as interleaved
(harness.engine.ops.layout.repeat_dim) and torch sums each element's copies.

Inputs are fixed by a seeded NumPy generator and fed to both sides; every value is float32.
"""

import math

import numpy as np
import torch

from harness.case import agree, differ, predicate
from harness.engine import Device, Tensor

_RNG = np.random.default_rng(23)
Q, K, V = (_RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(3))
GATE_IN = _RNG.standard_normal((3, 8)).astype(np.float32)
LOGITS = _RNG.standard_normal((2, 6)).astype(np.float32)
LABELS = np.array([[4], [1]], dtype=np.int64)
REPEATED = np.array([10.0, 20.0], dtype=np.float32)
COTANGENT = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
POSITIONS = np.arange(6, dtype=np.float32)[:, None]
FREQS = (1.0 / 10000.0 ** (np.arange(0, 4, 2, dtype=np.float32) / 4)).astype(np.float32)[None, :]


def torch_side():
    angles = torch.from_numpy(POSITIONS) * torch.from_numpy(FREQS)
    table = torch.cat([angles.sin(), angles.cos()], -1)

    q, k, v = (torch.from_numpy(a.copy()).requires_grad_(True) for a in (Q, K, V))
    scores = q @ k.T / math.sqrt(3.0)
    causal = torch.ones(4, 4).tril(0) == 0
    attn = scores.masked_fill(causal, -1e9).softmax(-1)
    attended = attn @ v
    dq, dk, dv = torch.autograd.grad(attended.sum(), [q, k, v])

    x = torch.from_numpy(GATE_IN.copy()).requires_grad_(True)
    a, b = x.chunk(2, -1)
    gated = a * b.sigmoid()
    (dx,) = torch.autograd.grad((gated * gated).sum(), [x])

    logits = torch.from_numpy(LOGITS.copy()).requires_grad_(True)
    top, top_idx = logits.topk(3, -1)
    probs = top.softmax(-1)
    (dlogits,) = torch.autograd.grad((probs * torch.arange(3.0)).sum(), [logits])

    scored = torch.from_numpy(LOGITS.copy()).requires_grad_(True)
    hot = torch.zeros(2, 6).scatter_add(1, torch.from_numpy(LABELS), torch.ones(2, 1))
    nll = -(hot * scored.log_softmax(-1)).sum()
    (dscored,) = torch.autograd.grad(nll, [scored])

    r = torch.from_numpy(REPEATED.copy()).requires_grad_(True)
    (dr,) = torch.autograd.grad((r.repeat(2) * torch.from_numpy(COTANGENT)).sum(), [r])
    return {
        "rotary_table": table,
        "attention": {"out": attended, "dq": dq, "dk": dk, "dv": dv},
        "gate": {"out": gated, "dx": dx},
        "topk": {"values": top, "indices": top_idx, "dlogits": dlogits},
        "one_hot_nll": {"loss": nll.reshape(1), "dlogits": dscored},
        "repeat_dim_grad": dr,
    }


def engine_side():
    device = Device.flex().autodiff()
    angles = Tensor.from_numpy(POSITIONS, device) * Tensor.from_numpy(FREQS, device)
    table = Tensor.cat([angles.sin(), angles.cos()], -1)

    q, k, v = (Tensor.from_numpy(a, device).require_grad() for a in (Q, K, V))
    scores = q.matmul(k.transpose()) / math.sqrt(3.0)
    causal = Tensor.ones((4, 4), device).tril(0).equal_elem(0.0)
    attn = scores.mask_fill(causal, -1e9).softmax(-1)
    attended = attn.matmul(v)
    grads = attended.sum().backward()
    dq, dk, dv = (t.grad(grads) for t in (q, k, v))

    x = Tensor.from_numpy(GATE_IN, device).require_grad()
    a, b = x.chunk(2, -1)
    gated = a * b.sigmoid()
    dx = x.grad((gated * gated).sum().backward())

    logits = Tensor.from_numpy(LOGITS, device).require_grad()
    top, top_idx = logits.topk_with_indices(3, -1)
    probs = top.softmax(-1)
    ramp = Tensor.from_floats([0.0, 1.0, 2.0], device)
    dlogits = logits.grad((probs * ramp).sum().backward())

    scored = Tensor.from_numpy(LOGITS, device).require_grad()
    labels = Tensor.from_numpy(LABELS, device)
    hot = Tensor.zeros((2, 6), device).scatter(1, labels, Tensor.ones((2, 1), device))
    nll = (hot * scored.log_softmax(-1)).sum().neg()
    dscored = scored.grad(nll.backward())

    r = Tensor.from_numpy(REPEATED, device).require_grad()
    dr = r.grad((r.repeat_dim(0, 2) * Tensor.from_numpy(COTANGENT, device)).sum().backward())
    return {
        "rotary_table": table,
        "attention": {"out": attended, "dq": dq, "dk": dk, "dv": dv},
        "gate": {"out": gated, "dx": dx},
        "topk": {"values": top, "indices": top_idx, "dlogits": dlogits},
        "one_hot_nll": {"loss": nll, "dlogits": dscored},
        "repeat_dim_grad": dr,
    }


def _same_total(torch_value, engine_value) -> bool:
    """The gradient mass is the same (every copy's cotangent lands somewhere)."""
    return bool(np.isclose(np.sum(torch_value), np.sum(engine_value)))


CHECKS = [
    agree("rotary_table"),
    agree("attention.*"),
    agree("gate.*"),
    agree("topk.*"),
    agree("one_hot_nll.*"),
    # x = [10, 20] tiled to [10, 20, 10, 20], cotangent [1, 2, 3, 4]: torch sums each
    # element's copies, [1 + 3, 2 + 4]; burn's rule sums [[1, 2], [3, 4]] by rows, [3, 7].
    differ(
        "repeat_dim_grad",
        because="harness.engine.ops.layout.repeat_dim",
        relation=predicate("the same total, distributed differently", _same_total),
    ),
]
