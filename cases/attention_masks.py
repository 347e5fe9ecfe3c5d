"""Attention masks: padding and causal masks, a fully masked row, the -1e4 fill, and the two
opposite boolean conventions of PyTorch, on burn's ``MultiHeadAttention`` with weights imported
from ``torch.nn.MultiheadAttention`` (``in_proj_weight`` split into query / key / value).

burn's masks are bool with **True = masked**, the convention of ``nn.MultiheadAttention``'s
``key_padding_mask`` and bool ``attn_mask``: with a padding mask and with a causal mask the
context, the per-head weights (PyTorch with ``average_attn_weights=False``) and the input
gradient agree. Masked scores are *filled* with ``min_float = -1e4`` where PyTorch uses -inf;
in a partly masked row ``exp(-1e4 - max)`` underflows to exactly 0, so the masked weights are
0 on both sides. ``F.scaled_dot_product_attention`` reads a bool mask the other way
(**True = attend**): given the inverted mask it reproduces burn's context; given burn's mask
unchanged it attends to exactly the wrong positions (``differ``).

A query whose keys are all masked is where -1e4 and -inf part: burn's row is a softmax of
equal scores, uniform ``1/S``, with finite gradients; PyTorch's is ``softmax(-inf, ...)`` =
NaN, and the NaN reaches the input gradient of the whole batch element (``differ``).
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import import_torch_weights
from harness.case import agree, differ, expect, predicate
from harness.engine import (
    Device,
    MhaInput,
    MultiHeadAttentionConfig,
    Tensor,
    generate_autoregressive_mask,
)

B, S, D, NH = 2, 4, 8, 2


def _torch_mha() -> torch.nn.MultiheadAttention:
    torch.manual_seed(21)
    return torch.nn.MultiheadAttention(D, NH, dropout=0.0, batch_first=True)


def _data():
    rng = np.random.default_rng(22)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    cot = rng.standard_normal((B, S, D)).astype(np.float32)
    pad = np.zeros((B, S), bool)
    pad[1, 2:] = True  # the second sequence has two padding positions
    causal = np.triu(np.ones((S, S), bool), k=1)  # True above the diagonal = masked
    full = np.zeros((B, S, S), bool)
    full[0, 1, :] = True  # query 1 of the first sequence may attend to nothing
    return x, cot, pad, causal, full


def _torch_run(mha, x_np, cot_np, **masks):
    x = torch.tensor(x_np, requires_grad=True)
    context, weights = mha(x, x, x, average_attn_weights=False, **masks)
    (context * torch.from_numpy(cot_np)).sum().backward()
    return {"context": context, "weights": weights, "grad_x": x.grad}


def _sdpa(mha, x_np, mask) -> torch.Tensor:
    """PyTorch's attention written with F.scaled_dot_product_attention on the same weights."""
    x = torch.from_numpy(x_np)
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)

    def heads(t):
        return t.reshape(B, S, NH, D // NH).transpose(1, 2)

    out = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
    return mha.out_proj(out.transpose(1, 2).reshape(B, S, D))


def torch_side():
    mha = _torch_mha()
    x, cot, pad, causal, full = _data()
    causal_t = torch.from_numpy(causal)
    with torch.no_grad():
        sdpa = {
            "attend_true.context": _sdpa(mha, x, ~causal_t),
            "masked_true.context": _sdpa(mha, x, causal_t),
        }
    causal_run = _torch_run(mha, x, cot, attn_mask=causal_t)
    return {
        "pad": _torch_run(mha, x, cot, key_padding_mask=torch.from_numpy(pad)),
        "causal": causal_run,
        "causal.masked_weights_are_zero": bool((causal_run["weights"][..., causal_t] == 0).all()),
        "sdpa": sdpa,
        "full": _torch_run(mha, x, cot, attn_mask=torch.from_numpy(full).repeat_interleave(NH, 0)),
    }


def _engine_run(mha, device, x_np, cot_np, mask_pad=None, mask_attn=None):
    x = Tensor.from_numpy(x_np, device).require_grad()
    out = mha(MhaInput(x, x, x, mask_pad, mask_attn))
    grads = (out.context * Tensor.from_numpy(cot_np, device)).sum().backward()
    return {"context": out.context, "weights": out.weights, "grad_x": x.grad(grads)}


def engine_side():
    device = Device.flex().autodiff()
    config = MultiHeadAttentionConfig(D, NH, dropout=0.0)
    mha, result = import_torch_weights(_torch_mha(), config.init(device))
    assert not (result.missing or result.unused or result.errors), result
    x, cot, pad, causal, full = _data()
    causal_mask = generate_autoregressive_mask(B, S, device)
    causal_run = _engine_run(mha, device, x, cot, mask_attn=causal_mask)
    weights = causal_run["weights"].numpy()
    return {
        "min_float": mha.min_float,
        "pad": _engine_run(mha, device, x, cot, mask_pad=Tensor.from_numpy(pad, device)),
        "causal": causal_run,
        "causal.masked_weights_are_zero": bool((weights[..., causal] == 0).all()),
        "sdpa": {
            "attend_true.context": causal_run["context"],
            "masked_true.context": causal_run["context"],
        },
        "full": _engine_run(mha, device, x, cot, mask_attn=Tensor.from_numpy(full, device)),
    }


def _nan_row_vs_uniform(torch_w, engine_w) -> bool:
    row_t, row_e = torch_w[0, :, 1], engine_w[0, :, 1]
    others = np.ones(torch_w.shape[:3], bool)
    others[0, :, 1] = False
    return (
        bool(np.isnan(row_t).all())
        and np.allclose(row_e, 1.0 / S, rtol=1e-6)
        and np.allclose(torch_w[others], engine_w[others], atol=1e-6)
    )


def _nan_vs_finite(torch_v, engine_v) -> bool:
    return bool(np.isnan(torch_v).any()) and bool(np.isfinite(engine_v).all())


def _far_apart(a, b) -> bool:
    return not np.allclose(a, b, atol=1e-2)


CHECKS = [
    expect("min_float", "engine", -1.0e4),
    agree("pad.*"),
    agree("causal.*"),
    agree("sdpa.attend_true.context"),
    differ(
        "sdpa.masked_true.context",
        because="harness.engine.nn.mask",
        relation=predicate("PyTorch SDPA attends where burn masks", _far_apart),
    ),
    differ(
        "full.weights",
        because="harness.engine.nn.attention.MultiHeadAttention",
        relation=predicate(
            "the fully masked row: NaN in PyTorch, uniform 1/S in burn; other rows agree",
            _nan_row_vs_uniform,
        ),
    ),
    differ(
        "full.context",
        because="harness.engine.nn.attention.MultiHeadAttention",
        relation=predicate("NaN in PyTorch, finite in burn", _nan_vs_finite),
    ),
    differ(
        "full.grad_x",
        because="harness.engine.nn.attention.MultiHeadAttention",
        relation=predicate("NaN in PyTorch, finite in burn", _nan_vs_finite),
    ),
]
