"""burn's attention masks (crates/burn-nn/src/modules/attention/mask.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747, tests `test_generate_autoregressive_mask`,
`test_generate_padding_mask`): bool tensors where **True means masked** (the score is replaced
by `min_float`).

PyTorch difference: `nn.MultiheadAttention`'s `key_padding_mask` / bool `attn_mask` use the
same polarity (True = not allowed), but `F.scaled_dot_product_attention`'s bool `attn_mask`
is the opposite (True = attend): pass `mask.bool_not()` there. PyTorch's causal mask is
usually `torch.triu(ones, diagonal=1).bool()` (True above the diagonal), which is this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.engine.tensor import Tensor

__all__ = ["GeneratePaddingMask", "generate_autoregressive_mask", "generate_padding_mask"]


def generate_autoregressive_mask(batch_size: int, seq_length: int, device) -> Tensor:
    """`[batch, seq, seq]` bool, True strictly above the diagonal (future positions)."""
    upper = np.triu(np.ones((seq_length, seq_length), dtype=bool), k=1)
    return Tensor.from_numpy(np.broadcast_to(upper, (batch_size, seq_length, seq_length)), device)


@dataclass(frozen=True)
class GeneratePaddingMask:
    """`tensor`: `[batch, size]` int64 tokens padded with the pad token; `mask`: True at pads."""

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(
    pad_token: int, tokens_list: Sequence[Sequence[int]], seq_length, device
) -> GeneratePaddingMask:
    """burn's `generate_padding_mask(pad_token, tokens_list, seq_length, device)`.

    `seq_length`: None (burn's `NoMax`: the longest list), an int (burn's `Max`: at most that,
    from `Option<usize>`), or `("fixed", n)` (burn's `Fixed(n)`: exactly n). Longer lists are
    cut. The mask compares with the pad token, so a real token equal to it is masked too.
    """
    longest = max((len(t) for t in tokens_list), default=1)
    if seq_length is None:
        size = longest
    elif isinstance(seq_length, tuple) and seq_length[0] == "fixed":
        size = int(seq_length[1])
    else:
        size = min(longest, int(seq_length))
    tokens = np.full((len(tokens_list), size), pad_token, dtype=np.int64)
    for row, values in enumerate(tokens_list):
        kept = list(values)[:size]
        tokens[row, : len(kept)] = kept
    tensor = Tensor.from_numpy(tokens, device)
    return GeneratePaddingMask(tensor, tensor.equal_elem(pad_token))
