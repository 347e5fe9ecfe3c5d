"""PyTorch-to-burn importer rules for the sequence modules, registered in the shared table
(harness.engine.store.registry) when this package is imported.

burn-store has no rule for these modules (crates/burn-store/src/adapter.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747, knows only Linear and the norms): in burn a
PyTorch LSTM or attention checkpoint needs hand-written key remapping, and packed tensors
cannot be split at all. The rules below are an engine extension built on the `unpack` hook:

- `Lstm`: `weight_ih_l0` / `weight_hh_l0` / `bias_ih_l0` / `bias_hh_l0` (`[4*hidden, ...]`,
  PyTorch's chunk order i, f, g, o) become `<gate>.input_transform.weight` /
  `<gate>.hidden_transform.weight` / the two biases of the gate in `LSTM_GATES` order; the
  Linear rule then transposes each weight. The two biases stay two biases (burn has one per
  Linear), so nothing is summed.
- `BiLstm` / `BiGru` / `BiRnn`: the `*_l0` tensors go to `forward`, the `*_l0_reverse` ones to
  `reverse`, which the Lstm / Gru rule then splits.
- `Gru`: the same with three chunks in PyTorch's order r, z, n (`GRU_GATES`).
- `Rnn`: the same with one chunk, burn's single `gate`; `BiRnn` as BiLstm.
- `MultiHeadAttention`: `in_proj_weight` `[3*d_model, d_model]` / `in_proj_bias` (order q, k,
  v) become `query` / `key` / `value`; separate `q_proj_weight` / `k_proj_weight` /
  `v_proj_weight` (PyTorch with kdim / vdim) too; `out_proj` is `output`. `CrossAttention`
  takes the same rule (PyTorch's `nn.MultiheadAttention` with `kdim = vdim = d_context`).
- `TransformerEncoderLayer`: `self_attn` is `mha`, `linear1` / `linear2` are
  `pwff.linear_inner` / `pwff.linear_outer`, `norm1` / `norm2` are `norm_1` / `norm_2`.
  That pairing is right for post-norm layers only; for `norm_first=True` remap first with
  `NORM_FIRST_REMAPPING` (see TransformerEncoderLayer).
- `TransformerDecoderLayer`: `multihead_attn` is `cross_attn` (`self_attn` keeps its name),
  `linear1` / `linear2` as in the encoder, `norm1..3` are `norm_1..3` (post-norm; pre-norm
  layers remap first with `DECODER_NORM_FIRST_REMAPPING`).

Only single-layer tensors (`_l0`) are mapped: burn's recurrent modules have one layer.
"""

from __future__ import annotations

from harness.engine.store.registry import PyTorchRule, register_pytorch_rule, split_snapshot

__all__ = ["DECODER_NORM_FIRST_REMAPPING", "GRU_GATES", "LSTM_GATES", "NORM_FIRST_REMAPPING"]

LSTM_GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")
"""burn's gate field for each chunk of PyTorch's packed LSTM tensors (i, f, g, o)."""

GRU_GATES = ("reset_gate", "update_gate", "new_gate")
"""burn's gate field for each chunk of PyTorch's packed GRU tensors (r, z, n)."""

NORM_FIRST_REMAPPING = ((r"\.norm1\.", ".norm_2."), (r"\.norm2\.", ".norm_1."))
"""`KeyRemapper` patterns (applied in order) for a PyTorch `norm_first=True` encoder layer:
PyTorch's pre-attention `norm1` is burn's `norm_2`, its pre-feed-forward `norm2` is `norm_1`."""

DECODER_NORM_FIRST_REMAPPING = (
    (r"\.norm1\.", ".norm_3."),
    (r"\.norm2\.", ".norm_1."),
    (r"\.norm3\.", ".norm_2."),
)
"""The same for a PyTorch `norm_first=True` decoder layer: its pre-self-attention `norm1` is
burn's `norm_3`, its pre-cross-attention `norm2` is `norm_1`, its pre-feed-forward `norm3` is
`norm_2`."""

_PACKED = {
    "weight_ih": "input_transform.weight",
    "weight_hh": "hidden_transform.weight",
    "bias_ih": "input_transform.bias",
    "bias_hh": "hidden_transform.bias",
}


def _key(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _move(snapshots: dict, old: str, new: str) -> None:
    snapshot = snapshots.pop(old, None)
    if snapshot is not None:
        snapshots[new] = snapshot.with_path(new)


def _split(snapshots: dict, old: str, new_keys) -> None:
    packed = snapshots.pop(old, None)
    if packed is None:
        return
    for key, piece in zip(new_keys, split_snapshot(packed, len(new_keys)), strict=True):
        snapshots[key] = piece.with_path(key)


def _gates_unpack(gates):
    def unpack(path: str, snapshots: dict) -> dict:
        for packed, target in _PACKED.items():
            keys = [_key(path, f"{gate}.{target}") for gate in gates]
            _split(snapshots, _key(path, f"{packed}_l0"), keys)
        return snapshots

    return unpack


def _bidirectional_unpack(path: str, snapshots: dict) -> dict:
    for packed in _PACKED:
        _move(snapshots, _key(path, f"{packed}_l0"), _key(path, f"forward.{packed}_l0"))
        _move(snapshots, _key(path, f"{packed}_l0_reverse"), _key(path, f"reverse.{packed}_l0"))
    return snapshots


_QKV = ("query", "key", "value")


def _mha_unpack(path: str, snapshots: dict) -> dict:
    for name in ("weight", "bias"):
        keys = [_key(path, f"{role}.{name}") for role in _QKV]
        _split(snapshots, _key(path, f"in_proj_{name}"), keys)
        _move(snapshots, _key(path, f"out_proj.{name}"), _key(path, f"output.{name}"))
    for letter, role in zip("qkv", _QKV, strict=True):
        _move(snapshots, _key(path, f"{letter}_proj_weight"), _key(path, f"{role}.weight"))
    return snapshots


_ENCODER_RENAMES = {
    "self_attn.": "mha.",
    "linear1.": "pwff.linear_inner.",
    "linear2.": "pwff.linear_outer.",
    "norm1.": "norm_1.",
    "norm2.": "norm_2.",
}
_DECODER_RENAMES = {
    "multihead_attn.": "cross_attn.",
    "linear1.": "pwff.linear_inner.",
    "linear2.": "pwff.linear_outer.",
    "norm1.": "norm_1.",
    "norm2.": "norm_2.",
    "norm3.": "norm_3.",
}


def _layer_unpack(renames: dict):
    """Rename the keys under the layer's path that start with a PyTorch field name."""

    def unpack(path: str, snapshots: dict) -> dict:
        prefix = _key(path, "")
        for key in list(snapshots):
            if not key.startswith(prefix):
                continue
            rest = key[len(prefix) :]
            for old, new in renames.items():
                if rest.startswith(old):
                    _move(snapshots, key, prefix + new + rest[len(old) :])
                    break
        return snapshots

    return unpack


register_pytorch_rule("Lstm", PyTorchRule(unpack=_gates_unpack(LSTM_GATES)))
register_pytorch_rule("Gru", PyTorchRule(unpack=_gates_unpack(GRU_GATES)))
register_pytorch_rule("Rnn", PyTorchRule(unpack=_gates_unpack(("gate",))))
register_pytorch_rule("BiRnn", PyTorchRule(unpack=_bidirectional_unpack))
register_pytorch_rule("BiLstm", PyTorchRule(unpack=_bidirectional_unpack))
register_pytorch_rule("BiGru", PyTorchRule(unpack=_bidirectional_unpack))
register_pytorch_rule("MultiHeadAttention", PyTorchRule(unpack=_mha_unpack))
register_pytorch_rule("CrossAttention", PyTorchRule(unpack=_mha_unpack))
for _layer, _renames in (
    ("TransformerEncoderLayer", _ENCODER_RENAMES),
    ("TransformerDecoderLayer", _DECODER_RENAMES),
):
    register_pytorch_rule(_layer, PyTorchRule(unpack=_layer_unpack(_renames)))
