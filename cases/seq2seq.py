"""An encoder-decoder translator with cross-attention, ported from PyTorch: ten Adam steps on
a reversal task, both sides from the same PyTorch weights.

The model: source and target token embeddings and a learned position embedding
(``Embedding``, the same ``[n, d_model]`` layout on both sides), burn's
``TransformerEncoder`` and ``TransformerDecoder`` (2 layers each, d_model 32, 2 heads, d_ff
64, post-norm, dropout 0, exact gelu: burn's default, which PyTorch must be told) against
``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` (``batch_first=True``, no final norm, as
burn has none), and a Linear head. Each decoder layer's self-attention is causal (burn's
``generate_autoregressive_mask``, PyTorch a boolean ``tgt_mask``: burn's ``min_float`` -1e4
and PyTorch's ``-inf`` both give weights of exactly 0) and its cross-attention reads the
encoder's memory. With 2 heads ``d_k`` is 16, whose square root burn's float32 ``sqrt(d_k)``
and PyTorch's agree on exactly. The importer maps PyTorch's decoder layers onto burn's
(``multihead_attn`` is ``cross_attn``, ``linear1`` / ``linear2`` the ``pwff``, ``norm1..3``
``norm_1..3``, ``in_proj`` split into query / key / value).

The task: the target is the source reversed; the decoder reads a start token and the target
shifted right (teacher forcing), cross-entropy over all target positions. Adam with burn's
defaults (epsilon 1e-5), PyTorch given the betas and epsilon as burn's f32 fields. Not
PyTorch's epsilon 1e-8: with it, the first Adam step moves a weight by about
``lr * g / (|g| + eps)``, and a gradient element near 0 is then a rounding-decided step:
``decoder.layers.0.linear1.weight[4, 26]`` has a step-0 gradient of 8.57e-09 in float64 (its
row's largest is 1.4e-02), 8.53e-09 in PyTorch's float32 and 8.03e-09 in the engine's, and
so first steps of 1.38e-03 and 1.34e-03. The float32 params then part by 1.4e-04 after 10
steps while the float64 runs part by 2.3e-07; epsilon 1e-5 damps such steps (measured: the
float32 params 5.2e-07 apart).

The per-step losses (``steps.loss``) part by burn's f32 Adam bias corrections
(``harness.engine.optim.Adam``): a systematic differ, the float64 reruns parting as far as
the float32 runs (MEASURED below). The final params (PyTorch's names and layout on both
sides; the key biases of self- and cross-attention left out: their true gradient is 0, as in
``transformer_train``) agree within TOLERANCES.

Before training, both sides translate two other sources greedily from the same (initial)
weights, 8 tokens each: PyTorch with the full causal forward at each step, the engine with it
(``translate.full``) and with burn's ``forward_autoregressive_inference`` over
``new_autoregressive_cache()`` (``translate.cached``: the cross-attention's keys and values of
the memory computed once, the rest for the last position only). Tokens equal on the three,
logits within float32 rounding (the smallest lead of a chosen token, 8.5e-03, is 20000 times
the logits' gap). Every number measured is in MEASURED below.
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import f32, import_torch_weights, mha_torch_state, torch_layout, without_key_bias
from harness.case import agree, differ
from harness.engine import (
    AdamConfig,
    CrossEntropyLossConfig,
    Device,
    EmbeddingConfig,
    GradientsParams,
    LinearConfig,
    Module,
    Tensor,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
)
from harness.tolerances import Tolerance

B, S, V, D, NH, FF, LAYERS = 8, 8, 12, 32, 2, 64, 2
START = V  # the decoder's start token, outside the source vocabulary
TRANSLATE = 2  # sources decoded greedily
STEPS, LR, EPSILON = 10, 3e-3, 1e-5  # burn's AdamConfig epsilon (see the docstring)


def _sources_to_translate() -> np.ndarray:
    return np.random.default_rng(52).integers(0, V, (TRANSLATE, S)).astype(np.int64)


def _task():
    """(source [B, S], decoder input [B, S], targets [B * S]): the reversed source."""
    source = np.random.default_rng(50).integers(0, V, (B, S))
    target = source[:, ::-1]
    decoder_in = np.concatenate([np.full((B, 1), START), target[:, :-1]], axis=1)
    return (a.astype(np.int64) for a in (source, decoder_in, target.reshape(-1)))


# ---------------------------------------------------------------------------------------------
# PyTorch


class TorchModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.src_embed = torch.nn.Embedding(V, D)
        self.tgt_embed = torch.nn.Embedding(V + 1, D)
        self.pos = torch.nn.Embedding(S, D)
        enc = torch.nn.TransformerEncoderLayer(
            D, NH, FF, dropout=0.0, activation="gelu", batch_first=True
        )
        dec = torch.nn.TransformerDecoderLayer(
            D, NH, FF, dropout=0.0, activation="gelu", batch_first=True
        )
        self.encoder = torch.nn.TransformerEncoder(enc, LAYERS, enable_nested_tensor=False)
        self.decoder = torch.nn.TransformerDecoder(dec, LAYERS)
        self.head = torch.nn.Linear(D, V)

    def encode(self, source):
        return self.encoder(self.src_embed(source) + self.pos(torch.arange(source.shape[1])))

    def decode(self, decoder_in, memory):
        length = decoder_in.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool).triu(1)
        target = self.tgt_embed(decoder_in) + self.pos(torch.arange(length))
        return self.head(self.decoder(target, memory, tgt_mask=causal))

    def forward(self, source, decoder_in):
        return self.decode(decoder_in, self.encode(source))


def _torch_model(dtype) -> TorchModel:
    """The initial model (float32 init, then cast exactly)."""
    torch.manual_seed(51)
    return TorchModel().to(dtype)


@torch.no_grad()
def _torch_translate(model) -> dict:
    """Greedy decoding of the first sources, the full causal forward at each step."""
    memory = model.encode(torch.from_numpy(_sources_to_translate()))
    tokens, chosen, margins = torch.full((TRANSLATE, 1), START), [], []
    for _ in range(S):
        logits = model.decode(tokens, memory)[:, -1]
        top = logits.topk(2).values
        next_token = logits.argmax(1)
        chosen.append(logits.gather(1, next_token[:, None])[:, 0])
        margins.append(top[:, 0] - top[:, 1])
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
    return {"tokens": tokens, "logit": torch.stack(chosen), "margin": torch.stack(margins)}


def torch_side(dtype=torch.float32):
    model = _torch_model(dtype)
    translation = _torch_translate(model)
    source, decoder_in, y = (torch.from_numpy(a) for a in _task())
    betas = (f32(0.9), f32(0.999))  # burn's f32 fields (AdamConfig defaults)
    optim = torch.optim.Adam(model.parameters(), lr=LR, betas=betas, eps=f32(EPSILON))
    losses = []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = F.cross_entropy(model(source, decoder_in).reshape(B * S, V), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
    return {
        "steps": {"loss": torch.stack(losses)},
        "params": without_key_bias(dict(model.state_dict()), D),
        "translate": {"full": translation, "cached": translation},
    }


# ---------------------------------------------------------------------------------------------
# Engine


class Model(Module):
    def __init__(self, device) -> None:
        self.src_embed = EmbeddingConfig(V, D).init(device)
        self.tgt_embed = EmbeddingConfig(V + 1, D).init(device)
        self.pos = EmbeddingConfig(S, D).init(device)
        # burn's default activation: ActivationConfig.Gelu
        self.encoder = TransformerEncoderConfig(D, FF, NH, LAYERS, dropout=0.0).init(device)
        self.decoder = TransformerDecoderConfig(D, FF, NH, LAYERS, dropout=0.0).init(device)
        self.head = LinearConfig(D, V).init(device)

    def _positions(self, length: int, device) -> Tensor:
        return self.pos(Tensor.from_numpy(np.arange(length).reshape(1, length), device))

    def encode(self, source: Tensor) -> Tensor:
        x = self.src_embed(source) + self._positions(source.shape[1], source.device)
        return self.encoder(TransformerEncoderInput.new(x))

    def _decoder_input(self, decoder_in: Tensor, memory: Tensor) -> TransformerDecoderInput:
        batch, length = decoder_in.shape
        target = self.tgt_embed(decoder_in) + self._positions(length, decoder_in.device)
        mask = generate_autoregressive_mask(batch, length, decoder_in.device)
        return TransformerDecoderInput.new(target, memory).with_target_mask_attn(mask)

    def decode(self, decoder_in: Tensor, memory: Tensor, cache=None) -> Tensor:
        """The logits; with burn's autoregressive `cache`, through
        `forward_autoregressive_inference` (the last position computed, the rest cached)."""
        input = self._decoder_input(decoder_in, memory)
        if cache is None:
            return self.head(self.decoder(input))
        return self.head(self.decoder.forward_autoregressive_inference(input, cache))

    def forward(self, source: Tensor, decoder_in: Tensor) -> Tensor:
        return self.decode(decoder_in, self.encode(source))


def _layer_state(prefix: str, pwff, norms) -> dict:
    state = {}
    for name, linear in (("linear1", pwff.linear_inner), ("linear2", pwff.linear_outer)):
        state[prefix + f"{name}.weight"] = torch_layout(linear)
        state[prefix + f"{name}.bias"] = linear.bias.val().numpy()
    for i, norm in enumerate(norms, 1):
        state[prefix + f"norm{i}.weight"] = norm.gamma.val().numpy()
        state[prefix + f"norm{i}.bias"] = norm.beta.val().numpy()
    return state


def _pytorch_state(model: Model) -> dict:
    """The engine's params in PyTorch's names and layout."""
    state = {
        name + ".weight": getattr(model, name).weight.val().numpy()
        for name in ("src_embed", "tgt_embed", "pos")
    }
    for i, layer in enumerate(model.encoder.layers):
        p = f"encoder.layers.{i}."
        state |= mha_torch_state(p + "self_attn.", layer.mha)
        state |= _layer_state(p, layer.pwff, (layer.norm_1, layer.norm_2))
    for i, layer in enumerate(model.decoder.layers):
        p = f"decoder.layers.{i}."
        state |= mha_torch_state(p + "self_attn.", layer.self_attn)
        state |= mha_torch_state(p + "multihead_attn.", layer.cross_attn)
        state |= _layer_state(p, layer.pwff, (layer.norm_1, layer.norm_2, layer.norm_3))
    state["head.weight"] = torch_layout(model.head)
    state["head.bias"] = model.head.bias.val().numpy()
    return without_key_bias(state, D)


def _engine_translate(model: Model, cached: bool) -> dict:
    device = model.head.weight.val().device
    memory = model.encode(Tensor.from_numpy(_sources_to_translate(), device))
    cache = model.decoder.new_autoregressive_cache() if cached else None
    tokens, chosen, margins = np.full((TRANSLATE, 1), START, np.int64), [], []
    for _ in range(S):
        logits = model.decode(Tensor.from_numpy(tokens, device), memory, cache).numpy()[:, -1]
        next_token = logits.argmax(1)
        top = np.sort(logits, axis=1)
        chosen.append(logits[np.arange(TRANSLATE), next_token])
        margins.append(top[:, -1] - top[:, -2])
        tokens = np.concatenate([tokens, next_token[:, None]], axis=1)
    return {"tokens": tokens, "logit": np.stack(chosen), "margin": np.stack(margins)}


def engine_side(dtype="float32"):
    device = Device.flex().autodiff()
    model, result = import_torch_weights(_torch_model(getattr(torch, dtype)), Model(device))
    assert not (result.missing or result.errors), result
    # burn's accounting lists a norm's `weight` / `bias` as unused although read as gamma / beta.
    assert all(".norm" in key for key in result.unused), result
    initial = model.valid()
    translation = {
        "full": _engine_translate(initial, cached=False),
        "cached": _engine_translate(initial, cached=True),
    }
    source, decoder_in, y = (Tensor.from_numpy(a, device) for a in _task())
    optim = AdamConfig(epsilon=EPSILON).init()
    loss_fn = CrossEntropyLossConfig().init(device)
    losses = []
    for _ in range(STEPS):
        loss = loss_fn.forward(model(source, decoder_in).reshape([B * S, V]), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(LR, model, grads)
        losses.append(loss.numpy().reshape(()))  # burn's [1] loss, as PyTorch's 0-d one
    return {
        "steps": {"loss": np.stack(losses)},
        "params": _pytorch_state(model),
        "translate": translation,
    }


# Measured under three CPU settings (x86-64-v3 profile, native AVX-512, emulated baseline).
MEASURED = """
steps.loss: float32 gap 2.86e-06 at step 9 (linear, 3.3e-07 a step), float64 gap 2.91e-06
params: float32 gap 5.2e-07 to 5.96e-07; float64 gap 1.9e-07; each side to its own float64
  run: torch 4.7e-07, engine 6.3e-07
translate (initial weights): float32 gap up to 4.2e-07, float64 6.7e-16; smallest margin 8.5e-03;
  engine cached against full up to 4.2e-07
goldens (x86-64-v3) against native and baseline runs: steps.loss 2.4e-07, params 1.70e-06,
  translate 4.8e-07
"""
_DECODING = Tolerance(
    2e-6,
    reason="8 greedy decoding forwards in float32 (another summation order per side, the "
    "cached path's one-row projections): measured up to 4.2e-07 under three CPU settings; ~4x",
)
TOLERANCES = {
    "params.*": Tolerance(
        3e-6,
        reason="10 Adam steps: each side lies up to 6.3e-07 from its own float64 run and the "
        "float64 runs part by 1.9e-07 (f32 bias corrections): 1.3e-06 at most; measured "
        "5.96e-07 under three CPU settings",
    ),
    "translate.*": _DECODING,
}
GOLDEN_TOLERANCES = {
    "params.*": Tolerance(
        7e-6,
        reason="a golden of other numerics: the params after 10 Adam steps part by up to "
        "1.70e-06 between CPU kernels (three CPU settings); 4x",
    ),
    "translate.*": Tolerance(
        2e-6,
        reason="a golden of other numerics: decoding logits part by up to 4.8e-07 between CPU "
        "kernels (three CPU settings); 4x",
    ),
}

CHECKS = [
    differ("steps.*", because="harness.engine.optim.Adam", systematic="linear"),
    agree("params.*"),
    agree("translate.*"),
    agree("*", "engine:translate.full.", "engine:translate.cached.", tol=_DECODING),
]
