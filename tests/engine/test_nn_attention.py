"""Multi-head attention, masks, transformer encoder and the two positional encodings against
torch (weights imported through the PyTorch rules), burn's own vectors, float64 finite
differences, and config defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nn_support import (
    AD,
    DTYPES,
    TOL,
    assert_burn_approx,
    grads_by_path,
    import_torch,
    leaf,
    rng_array,
    tensor,
)
from test_kernels_support import finite_difference

from harness.engine import (
    NORM_FIRST_REMAPPING,
    ActivationConfig,
    MhaInput,
    MultiHeadAttentionConfig,
    PositionalEncodingConfig,
    RotaryEncodingConfig,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
    generate_padding_mask,
    seed,
)
from harness.engine.nn import gelu_approximate, quiet_softmax
from harness.engine.nn.pos_encoding import generate_sinusoids

B, S, D, NH = 2, 5, 8, 2


def _torch_mha(dtype: str) -> torch.nn.MultiheadAttention:
    torch.manual_seed(5)
    return torch.nn.MultiheadAttention(D, NH, dropout=0.0, batch_first=True).to(DTYPES[dtype])


def _masks():
    pad = np.zeros((B, S), bool)
    pad[1, 3:] = True
    causal = generate_autoregressive_mask(B, S, AD)
    return pad, causal


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mha_matches_torch_with_masks(dtype):
    ref = _torch_mha(dtype)
    mha, _ = import_torch(ref, MultiHeadAttentionConfig(D, NH, dropout=0.0).init(AD))
    q, kv, cot = rng_array(1, (B, S, D)), rng_array(2, (B, S, D)), rng_array(3, (B, S, D))
    pad, causal = _masks()
    td = DTYPES[dtype]
    qt = torch.tensor(q, dtype=td, requires_grad=True)
    kvt = torch.tensor(kv, dtype=td, requires_grad=True)
    attn_mask = torch.tensor(causal.numpy()).repeat_interleave(NH, 0)  # [B*H, S, S]
    out_t, w_t = ref(
        qt,
        kvt,
        kvt,
        key_padding_mask=torch.from_numpy(pad),
        attn_mask=attn_mask,
        average_attn_weights=False,
    )
    (out_t * torch.tensor(cot, dtype=td)).sum().backward()
    qe, kve = leaf(q, dtype), leaf(kv, dtype)
    inp = MhaInput.new(qe, kve, kve).with_mask_pad(tensor(pad, bool)).with_mask_attn(causal)
    out = mha(inp)
    grads = (out.context * tensor(cot, dtype)).sum().backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out.context.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(out.weights.numpy(), w_t.detach().numpy(), **tol)
    np.testing.assert_allclose(qe.grad(grads).numpy(), qt.grad.numpy(), **tol)
    np.testing.assert_allclose(kve.grad(grads).numpy(), kvt.grad.numpy(), **tol)
    g = grads_by_path(mha, grads)
    in_proj = ref.in_proj_weight.grad.numpy()
    for i, role in enumerate(("query", "key", "value")):
        np.testing.assert_allclose(g[f"{role}.weight"], in_proj[i * D : (i + 1) * D].T, **tol)
        np.testing.assert_allclose(
            g[f"{role}.bias"], ref.in_proj_bias.grad.numpy()[i * D : (i + 1) * D], **tol
        )
    np.testing.assert_allclose(g["output.weight"], ref.out_proj.weight.grad.numpy().T, **tol)


def test_fully_masked_row_is_uniform_not_nan():
    """burn fills with -1e4: a query whose keys are all masked attends uniformly (torch: NaN)."""
    ref = _torch_mha("float64")
    mha, _ = import_torch(ref, MultiHeadAttentionConfig(D, NH, dropout=0.0).init(AD))
    x = rng_array(4, (1, 3, D))
    mask = np.ones((1, 3), bool)
    xe = leaf(x, "float64")
    out = mha(MhaInput.self_attn(xe).with_mask_pad(tensor(mask, bool)))
    np.testing.assert_allclose(out.weights.numpy(), np.full((1, NH, 3, 3), 1 / 3), rtol=1e-12)
    grads = out.context.sum().backward()
    assert np.isfinite(xe.grad(grads).numpy()).all()
    _, w_t = ref(*(torch.tensor(x),) * 3, key_padding_mask=torch.from_numpy(mask))
    assert torch.isnan(w_t).all()


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
def test_quiet_softmax_formula_and_fd():
    x = rng_array(5, (3, 4))
    x[1] = -1e4
    out = quiet_softmax(tensor(x, "float64"), 1).numpy()
    m = x.max(1, keepdims=True)
    expected = np.exp(x - m) / (np.exp(x - m).sum(1, keepdims=True) + np.exp(-m))
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert out[1].sum() < 1e-300  # a fully "masked" row gives no attention at all
    y = rng_array(6, (3, 4))
    cot = rng_array(7, (3, 4))
    ye = leaf(y, "float64")
    engine = ye.grad((quiet_softmax(ye, 1) * tensor(cot, "float64")).sum().backward()).numpy()
    # max is detached in burn, but the result does not depend on it: the FD gradient agrees.
    (numeric,) = finite_difference(
        lambda v: quiet_softmax(tensor(v, "float64", AD.inner()), 1).numpy(), [y], cot
    )
    np.testing.assert_allclose(engine, numeric, rtol=1e-6, atol=1e-9)


def test_mha_gradients_against_finite_differences():
    seed(128)  # the weights are drawn by the engine's generator: fixed, so the test is too
    mha = MultiHeadAttentionConfig(4, 2, dropout=0.0).init(AD)
    mha = mha.map(lambda p: type(p)(p.id, p.val().cast("float64")))
    x = rng_array(8, (1, 3, 4))
    cot = rng_array(9, (1, 3, 4))
    causal = generate_autoregressive_mask(1, 3, AD)
    xe = leaf(x, "float64")
    out = mha(MhaInput.self_attn(xe).with_mask_attn(causal)).context
    engine = xe.grad((out * tensor(cot, "float64")).sum().backward()).numpy()
    plain = mha.valid()
    mask = generate_autoregressive_mask(1, 3, AD.inner())

    def fn(v):
        return plain(
            MhaInput.self_attn(tensor(v, "float64", AD.inner())).with_mask_attn(mask)
        ).context.numpy()

    (numeric,) = finite_difference(fn, [x], cot)
    # atol: burn's div_scalar backward multiplies by 1/sqrt(d_k) computed in f32 even in
    # float64 (`ops.elementwise.div_scalar_backward`, a declared divergence). Over 40 draws of
    # the weights |engine - FD| reached 3.0e-8 with it and 9.0e-10 with a float64 1/s, and the
    # gap did not move with the FD step (1e-4 .. 1e-6): it is that rounding, not FD error.
    np.testing.assert_allclose(engine, numeric, rtol=1e-6, atol=5e-8)


def test_burn_mask_vectors():
    """mask.rs `test_generate_autoregressive_mask`, `test_generate_padding_mask`."""
    np.testing.assert_array_equal(
        generate_autoregressive_mask(2, 3, AD).numpy(),
        [[[False, True, True], [False, False, True], [False, False, False]]] * 2,
    )
    tokens = [[3, 3, 3], [3, 3, 3], [3, 3, 3, 4], [3, 3, 3, 4, 10, 15]]
    mask = generate_padding_mask(0, tokens, None, AD)
    np.testing.assert_array_equal(
        mask.mask.numpy(),
        [
            [False, False, False, True, True, True],
            [False, False, False, True, True, True],
            [False, False, False, False, True, True],
            [False, False, False, False, False, False],
        ],
    )
    assert mask.tensor.numpy()[2].tolist() == [3, 3, 3, 4, 0, 0]
    assert generate_padding_mask(0, tokens, 4, AD).mask.shape == (4, 4)
    assert generate_padding_mask(0, tokens, ("fixed", 8), AD).mask.shape == (4, 8)


def test_burn_mha_padding_mask_hides_padded_positions():
    """mha.rs `test_self_attention_mask_pad`: changing padded inputs leaves the rest alone."""
    mha = MultiHeadAttentionConfig(32, 2).init(AD.inner())
    pad = np.zeros((3, 6), bool)
    pad[:, 4:] = True
    x1 = rng_array(10, (3, 6, 32))
    x2 = x1.copy()
    x2[:, 4:] = rng_array(11, (3, 2, 32))
    outs = [
        mha(MhaInput.self_attn(tensor(x, device=AD.inner())).with_mask_pad(tensor(pad, bool)))
        for x in (x1, x2)
    ]
    assert_burn_approx(outs[0].context.numpy()[:, :4], outs[1].context.numpy()[:, :4])


def test_mha_config_defaults_and_biases():
    cfg = MultiHeadAttentionConfig(32, 4)
    assert (cfg.dropout, cfg.min_float, cfg.quiet_softmax) == (0.1, -1.0e4, False)
    mha = cfg.with_key_bias(False).init(AD)
    assert mha.key.bias is None and mha.query.bias is not None and mha.d_k == 8
    assert mha.num_params() == 4 * 32 * 32 + 3 * 32


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transformer_encoder_matches_torch(norm_first, dtype):
    torch.manual_seed(11)
    layer = torch.nn.TransformerEncoderLayer(
        D, NH, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=norm_first
    )
    ref = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(DTYPES[dtype])
    config = TransformerEncoderConfig(
        D, 16, NH, 2, dropout=0.0, norm_first=norm_first, activation=ActivationConfig.Relu
    )
    remap = NORM_FIRST_REMAPPING if norm_first else ()
    enc, result = import_torch(ref, config.init(AD), remap)
    # Only the LayerNorm keys applied under their PyTorch names (burn's applier lists them).
    assert all(k.rsplit(".", 2)[-2] in ("norm_1", "norm_2") for k in result.unused)
    assert len(result.applied) == 2 * 16
    x, cot = rng_array(12, (B, S, D)), rng_array(13, (B, S, D))
    pad, causal = _masks()
    td = DTYPES[dtype]
    xt = torch.tensor(x, dtype=td, requires_grad=True)
    mask_t = torch.tensor(causal.numpy()[0])
    out_t = ref(xt, mask=mask_t, src_key_padding_mask=torch.from_numpy(pad))
    (out_t * torch.tensor(cot, dtype=td)).sum().backward()
    xe = leaf(x, dtype)
    inp = TransformerEncoderInput.new(xe).with_mask_pad(tensor(pad, bool)).with_mask_attn(causal)
    out = enc(inp)
    grads = (out * tensor(cot, dtype)).sum().backward()
    tol = {"float32": dict(rtol=1e-4, atol=5e-5), "float64": TOL["float64"]}[dtype]
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
    g = grads_by_path(enc, grads)
    np.testing.assert_allclose(
        g["layers.1.pwff.linear_inner.weight"], ref.layers[1].linear1.weight.grad.numpy().T, **tol
    )
    burn_norm = "norm_2" if norm_first else "norm_1"
    np.testing.assert_allclose(
        g[f"layers.0.{burn_norm}.gamma"], ref.layers[0].norm1.weight.grad.numpy(), **tol
    )


def test_norm_first_without_the_remapping_is_a_different_model():
    torch.manual_seed(12)
    layer = torch.nn.TransformerEncoderLayer(D, NH, 16, 0.0, batch_first=True, norm_first=True)
    with torch.no_grad():
        layer.norm1.weight.mul_(2.0)  # make the two norms differ
    ref = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).double()
    config = TransformerEncoderConfig(D, 16, NH, 1, 0.0, True, activation=ActivationConfig.Relu)
    wrong, _ = import_torch(ref, config.init(AD))
    x = rng_array(14, (B, S, D))
    expected = ref(torch.tensor(x)).detach().numpy()
    assert not np.allclose(
        wrong(TransformerEncoderInput.new(tensor(x, "float64"))).numpy(), expected, atol=1e-3
    )


def test_transformer_config_defaults():
    cfg = TransformerEncoderConfig(32, 64, 4, 2)
    assert (cfg.dropout, cfg.norm_first, cfg.activation, cfg.layer_norm_eps) == (
        0.1,
        False,
        ActivationConfig.Gelu,
        1e-5,
    )
    enc = cfg.with_activation(ActivationConfig.Relu).init(AD)
    assert len(enc.layers) == 2 and enc.layers[0].norm_1.epsilon == 1e-5


def test_gelu_approximate_matches_torch_tanh_gelu():
    x = rng_array(15, (4, 5), 3.0)
    xe = leaf(x, "float64")
    out = gelu_approximate(xe)
    grads = out.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.gelu(xt, approximate="tanh")
    ref.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)


# ---- positional encodings ---------------------------------------------------------------------


def _torch_sinusoids(length: int, d_model: int) -> np.ndarray:
    """The PyTorch tutorial's table ("Language modeling with nn.Transformer"), batch-first."""
    position = torch.arange(length).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.numpy()


def test_burn_sinusoid_vectors_and_torch_reference():
    """pos_encoding.rs `test_generate_sinusoids` (values from PyTorch) and `test_module`."""
    expected = [
        [0.00000, 1.00000, 0.00000, 1.00000, 0.00000, 1.00000],
        [0.84147, 0.54030, 0.04640, 0.99892, 0.00215, 1.00000],
        [0.90930, -0.41615, 0.09270, 0.99569, 0.00431, 0.99999],
        [0.14112, -0.98999, 0.13880, 0.99032, 0.00646, 0.99998],
        [-0.75680, -0.65364, 0.18460, 0.98281, 0.00862, 0.99996],
        [-0.95892, 0.28366, 0.23000, 0.97319, 0.01077, 0.99994],
        [-0.27942, 0.96017, 0.27491, 0.96147, 0.01293, 0.99992],
        [0.65699, 0.75390, 0.31922, 0.94768, 0.01508, 0.99989],
        [0.98936, -0.14550, 0.36285, 0.93185, 0.01723, 0.99985],
        [0.41212, -0.91113, 0.40570, 0.91401, 0.01939, 0.99981],
        [-0.54402, -0.83907, 0.44767, 0.89420, 0.02154, 0.99977],
        [-0.99999, 0.00443, 0.48868, 0.87246, 0.02370, 0.99972],
    ]
    table = generate_sinusoids(12, 6, 10_000, AD).numpy()
    assert_burn_approx(table, expected)
    np.testing.assert_allclose(
        generate_sinusoids(64, 32, 10_000, AD).numpy(), _torch_sinusoids(64, 32), atol=2e-5
    )
    pe = PositionalEncodingConfig(6).init(AD)
    out = pe(tensor(np.zeros((2, 3, 6))))
    assert_burn_approx(out.numpy(), [expected[:3]] * 2)
    with pytest.raises(
        ValueError, match=r"d_model\(10\) of the input must be equal to d_model of encoding\(8\)"
    ):
        PositionalEncodingConfig(8).init(AD)(tensor(np.zeros((1, 5, 10))))
    with pytest.raises(
        ValueError, match=r"max_sequence_size\(5000\) must be greater or equal than length\(6000\)"
    ):
        PositionalEncodingConfig(8).init(AD)(tensor(np.zeros((1, 6000, 8))))
    with pytest.raises(ValueError, match="d_model must be even"):
        PositionalEncodingConfig(7).init(AD)


def _torch_rope(x: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Interleaved-pair RoPE written from the formula (LLaMA's reference layout)."""
    *_, seq, d = x.shape
    freqs = 1.0 / theta ** (torch.arange(0, d, 2, dtype=x.dtype) / d)
    angles = torch.arange(seq, dtype=x.dtype)[:, None] * freqs[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], -1).flatten(-2)


def test_rotary_encoding_against_burn_vectors_and_torch():
    """rope_encoding.rs `test_rotary_encoding_forward`, and a torch reference with gradients."""
    rope = RotaryEncodingConfig(10, 4).init(AD)
    x = [
        [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
        [[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]],
    ]
    out = rope(tensor([x])).numpy()[0]
    expected = [
        [[1.0, 2.0, 3.0, 4.0], [-2.3473, 7.4492, 6.9197, 8.0696]],
        [[9.0, 10.0, 11.0, 12.0], [-4.7567, 18.5034, 14.8393, 16.1492]],
    ]
    assert_burn_approx(out, expected)
    y = rng_array(16, (2, 3, 7, 8))
    cot = rng_array(17, (2, 3, 7, 8))
    ye = leaf(y)
    out = RotaryEncodingConfig(16, 8).init(AD)(ye)
    grads = (out * tensor(cot)).sum().backward()
    yt = torch.tensor(y, dtype=torch.float32, requires_grad=True)
    ref = _torch_rope(yt)
    (ref * torch.tensor(cot, dtype=torch.float32)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ye.grad(grads).numpy(), yt.grad.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="The input embedding dimension must be even"):
        RotaryEncodingConfig(10, 5).init(AD)


def test_exact_gelu_activation_matches_torch_gelu():
    # ActivationConfig.Gelu (the transformer default) is the gelu primitive now that erf exists.
    x = rng_array(16, (4, 5), 3.0)
    xe = leaf(x, "float64")
    out = ActivationConfig.Gelu.init()(xe)
    grads = out.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.gelu(xt)
    ref.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
