"""burn's `TensorCache` (crates/burn-nn/src/modules/cache/{base,autoregressive}.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): one tensor kept between calls, for the
cross-attention's keys and values (`forward_full`) and a decoder's growing sequence
(`forward_autoregressive`).

burn mutates the cache through `&mut`; here the object is written in place too: it is an
inference helper, not part of a module (no params, never visited).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.engine.tensor import Tensor

__all__ = ["TensorCache"]


class TensorCache:
    """`TensorCache::empty()`; `value` is None while empty."""

    def __init__(self, value: Tensor | None = None) -> None:
        self.value = value

    @classmethod
    def empty(cls) -> TensorCache:
        return cls()

    def forward_full(self, tensor: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
        """The cached tensor if there is one (`tensor` is then ignored), else `func(tensor)`,
        which is kept."""
        if self.value is None:
            self.value = func(tensor)
        return self.value

    def forward_autoregressive(
        self, tensor: Tensor, dim_cat: int, func: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """`func(tensor)` on the first call; afterwards `func` of the last position of
        `tensor` `[batch, seq, d]` only, concatenated to the cache along `dim_cat`."""
        if self.value is None:
            self.value = func(tensor)
        else:
            seq_length = tensor.shape[1]
            last = tensor.slice([None, (seq_length - 1, seq_length)])
            self.value = Tensor.cat([self.value, func(last)], dim_cat)
        return self.value
