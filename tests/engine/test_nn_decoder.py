"""TransformerDecoder (burn-nn transformer/decoder.rs, commit 2c06be35) against
torch.nn.TransformerDecoder (weights imported through the PyTorch rules, post- and pre-norm),
burn's own autoregressive-cache tests transcribed, MultiHeadAttention's cache (mha.rs
`test_autoregressive_mask_should_have_same_output_as_autoregressive_decoding`), and float64
finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, grads_by_path, import_torch, leaf, rng_array, tensor
from test_kernels_support import finite_difference

from harness.engine import (
    MhaInput,
    MultiHeadAttentionConfig,
    generate_autoregressive_mask,
    seed,
)
from harness.engine.nn import (
    DECODER_NORM_FIRST_REMAPPING,
    MhaCache,
    TransformerDecoderConfig,
    TransformerDecoderInput,
)

PLAIN = AD.inner()
B, T, M, D, FF, NH, LAYERS = 2, 5, 4, 8, 12, 2, 2


def _torch_decoder(dtype: str, norm_first: bool) -> torch.nn.TransformerDecoder:
    torch.manual_seed(21)
    layer = torch.nn.TransformerDecoderLayer(
        D, NH, FF, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
    )
    decoder = torch.nn.TransformerDecoder(layer, LAYERS).to(DTYPES[dtype])
    with torch.no_grad():  # norms away from their ones / zeros init, so that importing shows
        for name, p in decoder.named_parameters():
            if ".norm" in name:
                p.uniform_(0.5, 1.5)
    return decoder


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_matches_torch_with_causal_and_memory_padding_masks(dtype, norm_first):
    ref = _torch_decoder(dtype, norm_first)
    config = TransformerDecoderConfig(D, FF, NH, LAYERS, dropout=0.0, norm_first=norm_first)
    remap = DECODER_NORM_FIRST_REMAPPING if norm_first else ()
    # The store reports the norms' PyTorch-named keys unused although it applies them through
    # burn's alternative-name lookup (the encoder's import does the same): not asserted here.
    model, _ = import_torch(ref, config.init(AD), remap)
    tgt, mem, cot = rng_array(1, (B, T, D)), rng_array(2, (B, M, D)), rng_array(3, (B, T, D))
    pad = np.zeros((B, M), bool)
    pad[1, 3:] = True
    td = DTYPES[dtype]
    tt = torch.tensor(tgt, dtype=td, requires_grad=True)
    mt = torch.tensor(mem, dtype=td, requires_grad=True)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    out_t = ref(tt, mt, tgt_mask=causal, memory_key_padding_mask=torch.from_numpy(pad))
    (out_t * torch.tensor(cot, dtype=td)).sum().backward()
    te, me = leaf(tgt, dtype), leaf(mem, dtype)
    inp = (
        TransformerDecoderInput.new(te, me)
        .with_target_mask_attn(generate_autoregressive_mask(B, T, AD))
        .with_memory_mask_pad(tensor(pad, bool))
    )
    out = model(inp)
    grads = (out * tensor(cot, dtype)).sum().backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(te.grad(grads).numpy(), tt.grad.numpy(), **tol)
    np.testing.assert_allclose(me.grad(grads).numpy(), mt.grad.numpy(), **tol)
    g = grads_by_path(model, grads)
    for i in range(LAYERS):
        layer = ref.layers[i]
        # burn's norm_1..3 in torch's names (DECODER_NORM_FIRST_REMAPPING for pre-norm).
        torch_norms = (layer.norm2, layer.norm3, layer.norm1) if norm_first else (
            layer.norm1, layer.norm2, layer.norm3
        )  # fmt: skip
        for k, norm in enumerate(torch_norms, 1):
            np.testing.assert_allclose(
                g[f"layers.{i}.norm_{k}.gamma"], norm.weight.grad.numpy(), **tol
            )
        np.testing.assert_allclose(
            g[f"layers.{i}.pwff.linear_inner.weight"], layer.linear1.weight.grad.numpy().T, **tol
        )
        cross = layer.multihead_attn.in_proj_weight.grad.numpy()
        np.testing.assert_allclose(
            g[f"layers.{i}.cross_attn.key.weight"], cross[D : 2 * D].T, **tol
        )
        self_out = layer.self_attn.out_proj.weight.grad.numpy()
        np.testing.assert_allclose(g[f"layers.{i}.self_attn.output.weight"], self_out.T, **tol)


def test_decoder_gradients_against_finite_differences():
    seed(8)
    model = TransformerDecoderConfig(4, 6, 2, 1, dropout=0.0, norm_first=True).init(AD)
    model = model.map(lambda p: type(p)(p.id, tensor(p.val().numpy(), "float64")))
    tgt, mem, cot = rng_array(4, (1, 3, 4)), rng_array(5, (1, 2, 4)), rng_array(6, (1, 3, 4))

    def run(module, t, m, device):
        mask = generate_autoregressive_mask(1, 3, device)
        return module(TransformerDecoderInput.new(t, m).with_target_mask_attn(mask))

    te, me = leaf(tgt, "float64"), leaf(mem, "float64")
    grads = (run(model, te, me, AD) * tensor(cot, "float64")).sum().backward()
    plain = model.valid()
    numeric = finite_difference(
        lambda a, b: run(
            plain, tensor(a, "float64", PLAIN), tensor(b, "float64", PLAIN), PLAIN
        ).numpy(),
        [tgt, mem],
        cot,
    )
    np.testing.assert_allclose(te.grad(grads).numpy(), numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(me.grad(grads).numpy(), numeric[1], rtol=1e-6, atol=1e-8)


# ---- burn's own tests (commit 2c06be35) ------------------------------------------------------


def _arange(shape) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("norm_first", [False, True])
def test_burn_decoder_autoregressive_cache_matches_masked_forward(norm_first):
    """decoder.rs `test_autoregressive_norm_last` / `test_autoregressive_norm_first`: greedy
    decoding through the cache gives the masked full forward's outputs (burn's tolerance
    rel_abs(5e-3, 1e-4); on burn's default, non-autodiff device, so dropout is off)."""
    seed(0)
    batch, seq, d_model = 3, 4, 12
    decoder = TransformerDecoderConfig(d_model, 24, 2, 3, norm_first=norm_first).init(PLAIN)
    memory = tensor(_arange((batch, seq, d_model)), device=PLAIN)
    target = tensor(_arange((batch, seq, d_model)), device=PLAIN)
    mask = generate_autoregressive_mask(batch, seq, PLAIN)
    full = decoder(TransformerDecoderInput.new(target, memory).with_target_mask_attn(mask))
    cache = decoder.new_autoregressive_cache()
    steps = []
    for i in range(1, seq + 1):
        prefix = target.slice([None, (0, i)])
        mask = generate_autoregressive_mask(batch, i, PLAIN)
        inp = TransformerDecoderInput.new(prefix, memory).with_target_mask_attn(mask)
        out = decoder.forward_autoregressive_inference(inp, cache)
        steps.append(out.numpy()[:, i - 1 : i])
    cached = np.concatenate(steps, 1)
    np.testing.assert_allclose(cached, full.numpy(), rtol=5e-3, atol=1e-4)
    # Measured: the two paths run the same float32 ops on the same rows, so they agree far
    # tighter than burn's tolerance.
    np.testing.assert_allclose(cached, full.numpy(), rtol=1e-5, atol=1e-5)


def test_burn_mha_cache_matches_autoregressive_mask():
    """mha.rs `test_autoregressive_mask_should_have_same_output_as_autoregressive_decoding`
    (Tolerance::default(); plain device as in burn)."""
    seed(1)
    batch, seq, d_model = 3, 4, 12
    mha = MultiHeadAttentionConfig(d_model, 2).init(PLAIN)
    x = tensor(rng_array(7, (batch, seq, d_model)), device=PLAIN)
    mask = generate_autoregressive_mask(batch, seq, PLAIN)
    full = mha(MhaInput.self_attn(x).with_mask_attn(mask)).context.numpy()
    cache = MhaCache.autoregressive()
    steps = []
    for i in range(1, seq + 1):
        out = mha.forward_cache(MhaInput.self_attn(x.slice([None, (0, i)])), cache)
        steps.append(out.context.numpy()[:, i - 1 : i])
    np.testing.assert_allclose(np.concatenate(steps, 1), full, rtol=0.005, atol=1e-5)


def test_burn_decoder_display_params_and_defaults():
    """decoder.rs `display`: `TransformerDecoderConfig::new(2, 4, 2, 3)` has 246 params."""
    config = TransformerDecoderConfig(2, 4, 2, 3)
    assert config.init(AD).num_params() == 246
    assert (config.dropout, config.norm_first, config.quiet_softmax) == (0.1, False, False)
    assert config.layer_norm_eps == 1e-5
    names = [path for path, _ in config.init(AD).params()][:2]
    assert names == ["layers.0.cross_attn.query.weight", "layers.0.cross_attn.query.bias"]
