"""CrossAttention (burn-nn attention/cross_attention.rs, commit 2c06be35) against
torch.nn.MultiheadAttention with `kdim` / `vdim` (weights imported through the PyTorch rule),
grouped-query attention against a torch formula with repeated heads, burn's own tests
transcribed, float64 finite differences, and the cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, grads_by_path, import_torch, leaf, rng_array, tensor
from test_kernels_support import finite_difference

from harness.engine import seed
from harness.engine.nn import CrossAttentionCache, CrossAttentionConfig

B, LQ, LK, D, DC, NH, DH = 2, 4, 6, 8, 10, 2, 4


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("d_context", [DC, D])  # separate q/k/v weights, or PyTorch's packed
def test_cross_attention_matches_torch_mha_with_padding_mask(dtype, d_context):
    torch.manual_seed(11)
    td = DTYPES[dtype]
    ref = torch.nn.MultiheadAttention(
        D, NH, dropout=0.0, kdim=d_context, vdim=d_context, batch_first=True
    ).to(td)
    config = CrossAttentionConfig(D, d_context, NH, NH, D // NH, dropout=0.0)
    model, _ = import_torch(ref, config.init(AD))
    q, ctx, cot = (
        rng_array(1, (B, LQ, D)),
        rng_array(2, (B, LK, d_context)),
        rng_array(3, (B, LQ, D)),
    )
    pad = np.zeros((B, LK), bool)
    pad[1, 4:] = True
    qt = torch.tensor(q, dtype=td, requires_grad=True)
    ct = torch.tensor(ctx, dtype=td, requires_grad=True)
    out_t, _ = ref(qt, ct, ct, key_padding_mask=torch.from_numpy(pad), need_weights=False)
    (out_t * torch.tensor(cot, dtype=td)).sum().backward()
    qe, ce = leaf(q, dtype), leaf(ctx, dtype)
    out = model(qe, ce, tensor(pad, bool))
    grads = (out * tensor(cot, dtype)).sum().backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(qe.grad(grads).numpy(), qt.grad.numpy(), **tol)
    np.testing.assert_allclose(ce.grad(grads).numpy(), ct.grad.numpy(), **tol)
    g = grads_by_path(model, grads)
    assert len(g) == 8
    bias = ref.in_proj_bias.grad.numpy()
    for i, role in enumerate(("query", "key", "value")):
        if d_context == D:
            weight = ref.in_proj_weight.grad.numpy()[i * D : (i + 1) * D]
        else:
            weight = getattr(ref, f"{role[0]}_proj_weight").grad.numpy()
        np.testing.assert_allclose(g[f"{role}.weight"], weight.T, **tol, err_msg=role)
        np.testing.assert_allclose(g[f"{role}.bias"], bias[i * D : (i + 1) * D], **tol)
    np.testing.assert_allclose(g["output.weight"], ref.out_proj.weight.grad.numpy().T, **tol)


def _torch_gqa(model, q, ctx, n_heads, n_heads_kv, dtype):
    """Grouped-query cross-attention written in torch from the engine's weights: each
    key/value head repeated for its `n_heads / n_heads_kv` query heads."""
    w = {p: torch.tensor(v.val().numpy(), dtype=DTYPES[dtype]) for p, v in model.params()}

    def lin(name, x):
        return x @ w[f"{name}.weight"] + w[f"{name}.bias"]

    def heads(x, n):
        return x.reshape(B, -1, n, DH).transpose(1, 2)

    qh = heads(lin("query", q), n_heads)
    kh = heads(lin("key", ctx), n_heads_kv).repeat_interleave(n_heads // n_heads_kv, 1)
    vh = heads(lin("value", ctx), n_heads_kv).repeat_interleave(n_heads // n_heads_kv, 1)
    weights = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(DH), -1)
    return lin("output", (weights @ vh).transpose(1, 2).reshape(B, LQ, n_heads * DH))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grouped_query_attention_matches_torch_formula(dtype):
    seed(4)
    n_heads, n_heads_kv = 4, 2
    model = CrossAttentionConfig(D, DC, n_heads, n_heads_kv, DH, dropout=0.0).init(AD)
    model = model.map(lambda p: type(p)(p.id, tensor(p.val().numpy(), dtype)))
    q, ctx, cot = rng_array(4, (B, LQ, D)), rng_array(5, (B, LK, DC)), rng_array(6, (B, LQ, D))
    qt = torch.tensor(q, dtype=DTYPES[dtype], requires_grad=True)
    ct = torch.tensor(ctx, dtype=DTYPES[dtype], requires_grad=True)
    out_t = _torch_gqa(model, qt, ct, n_heads, n_heads_kv, dtype)
    (out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
    qe, ce = leaf(q, dtype), leaf(ctx, dtype)
    out = model(qe, ce)
    grads = (out * tensor(cot, dtype)).sum().backward()
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(qe.grad(grads).numpy(), qt.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(ce.grad(grads).numpy(), ct.grad.numpy(), **TOL[dtype])


def test_cross_attention_gradients_against_finite_differences():
    seed(6)
    model = CrossAttentionConfig(4, 3, 2, 1, 2, dropout=0.0, quiet_softmax=True).init(AD)
    model = model.map(lambda p: type(p)(p.id, tensor(p.val().numpy(), "float64")))
    q, ctx, cot = rng_array(7, (1, 2, 4)), rng_array(8, (1, 3, 3)), rng_array(9, (1, 2, 4))
    qe, ce = leaf(q, "float64"), leaf(ctx, "float64")
    grads = (model(qe, ce) * tensor(cot, "float64")).sum().backward()
    plain = model.valid()
    numeric = finite_difference(
        lambda a, b: plain(
            tensor(a, "float64", AD.inner()), tensor(b, "float64", AD.inner())
        ).numpy(),
        [q, ctx],
        cot,
    )
    np.testing.assert_allclose(qe.grad(grads).numpy(), numeric[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ce.grad(grads).numpy(), numeric[1], rtol=1e-6, atol=1e-9)


# ---- burn's own tests (cross_attention.rs, commit 2c06be35) ---------------------------------


@pytest.mark.parametrize("n_heads_kv", [4, 2, 1])
def test_burn_cross_attention_mha_gqa_mqa_shapes(n_heads_kv):
    """`test_cross_attention_mha_shapes`, `_gqa_shapes`, `_mqa_shapes`."""
    config = CrossAttentionConfig(32, 40, 4, n_heads_kv, 8, dropout=0.1)
    out = config.init(AD)(tensor(rng_array(10, (7, 13, 32))), tensor(rng_array(11, (7, 15, 40))))
    assert out.shape == (7, 13, 32)


def test_burn_cross_attention_mask():
    """`test_cross_attention_mask`: changing the padded part of the context changes nothing
    (Tolerance::default())."""
    model = CrossAttentionConfig(12, 16, 4, 4, 3, dropout=0.0).init(AD)
    mask = np.zeros((3, 8), bool)
    mask[:, 6:] = True
    query = tensor(rng_array(12, (3, 6, 12)))
    context_1 = rng_array(13, (3, 8, 16))
    context_2 = context_1.copy()
    context_2[:, 6:] = rng_array(14, (3, 2, 16))
    out_1 = model(query, tensor(context_1), tensor(mask, bool)).numpy()
    out_2 = model(query, tensor(context_2), tensor(mask, bool)).numpy()
    np.testing.assert_array_equal(out_1, out_2)


def test_burn_gqa_panics_if_heads_do_not_divide():
    """`test_gqa_panic_if_n_heads_not_divisible_by_n_heads_kv`."""
    with pytest.raises(ValueError, match=r"^Query heads must be divisible by KV heads$"):
        CrossAttentionConfig(32, 32, 5, 2, 8).init(AD)


def test_burn_cross_attention_cache():
    """`test_cross_attention_cache`: the cached keys and values give the uncached outputs,
    also for a new query; the cache then ignores a different context."""
    model = CrossAttentionConfig(12, 16, 4, 4, 3, dropout=0.0).init(AD)
    query_1, query_2 = tensor(rng_array(15, (3, 6, 12))), tensor(rng_array(16, (3, 6, 12)))
    context = tensor(rng_array(17, (3, 8, 16)))
    cache = CrossAttentionCache.new()
    first = model.forward_cache(query_1, context, None, cache).numpy()
    np.testing.assert_array_equal(first, model(query_1, context).numpy())
    third = model.forward_cache(query_2, context, None, cache).numpy()
    np.testing.assert_array_equal(third, model(query_2, context).numpy())
    other = tensor(rng_array(18, (3, 8, 16)))
    np.testing.assert_array_equal(model.forward_cache(query_2, other, None, cache).numpy(), third)


def test_cross_attention_config_defaults_and_init_bounds():
    config = CrossAttentionConfig(12, 16, 4, 2, 3)
    assert (config.dropout, config.min_float, config.quiet_softmax) == (0.1, -1.0e4, False)
    model = config.init(AD)
    assert model.key.weight.val().shape == (16, 6) and model.output.weight.val().shape == (12, 12)
    bound = math.sqrt(3.0) / math.sqrt(3) / math.sqrt(16)  # sqrt(3) * gain / sqrt(fan_in)
    assert np.abs(model.key.weight.val().numpy()).max() <= bound
    assert np.abs(model.key.bias.val().numpy()).max() <= bound
