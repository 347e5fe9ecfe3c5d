"""Gradients per ParamId and their accumulation (burn-optim `optim/grads.rs`,
`optim/grad_accum.rs`, read at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747;
reference-engine.md section 5)."""

from __future__ import annotations

import numpy as np

from harness.engine.autodiff import Gradients
from harness.engine.errors import REQUIRES_AUTODIFF, AutodiffError
from harness.engine.module import Module, ParamId, params_of
from harness.engine.tensor import Tensor

__all__ = ["GradientsAccumulator", "GradientsParams"]


class GradientsParams:
    """Gradients keyed by ParamId (burn's `GradientsParams`), plain tensors.

    Build it with `GradientsParams.from_grads(grads, module)`, which takes each param's
    gradient out of `grads`. Entries are held as NumPy arrays and wrapped as plain tensors on
    the way out (`get`, `remove`): the optimizer reads the arrays at every step.

    PyTorch difference: PyTorch keeps gradients on the params (`p.grad`); burn detaches them
    from the graph into this container, and the optimizer looks them up by ParamId.
    """

    __slots__ = ("_grads",)

    def __init__(self) -> None:
        self._grads: dict[ParamId, np.ndarray] = {}

    @classmethod
    def new(cls) -> GradientsParams:
        """An empty container."""
        return cls()

    @classmethod
    def from_grads(cls, grads: Gradients, module: Module) -> GradientsParams:
        """Visit `module`'s params in order and move each one's gradient out of `grads`.

        Params without a gradient get no entry (no zero fill); gradients of other tensors are
        dropped. A `grads` from another module (other ParamIds / nodes) gives an empty
        container, silently.
        """
        return cls.from_module(grads, module)

    @classmethod
    def from_module(cls, grads: Gradients, module: Module) -> GradientsParams:
        """Same as `from_grads` (burn's variant taking `&mut Gradients`)."""
        return cls._take(grads, params_of(module))

    @classmethod
    def from_params(cls, grads: Gradients, module: Module, params) -> GradientsParams:
        """Like `from_module`, for the params of `module` whose ids are in `params` only."""
        wanted = set(params)
        return cls._take(grads, [p for p in params_of(module) if p.id in wanted])

    @classmethod
    def _take(cls, grads: Gradients, params) -> GradientsParams:
        out = cls()
        container = out._grads
        take = grads._grads.pop
        for param in params:
            # `param.grad_remove(grads)`, inlined: this runs for every param at every step.
            node = param._value._node
            if node is None:
                raise AutodiffError(REQUIRES_AUTODIFF)
            grad = take(node.id, None)
            if grad is not None:
                container[param.id] = grad
        return out

    def get(self, id: ParamId, ndim: int | None = None) -> Tensor | None:
        """The gradient of `id` (a copy-on-write handle: tensors are immutable), or None.

        burn's `get::<D>` is typed by rank; pass `ndim` to get the same check: a gradient of
        another rank raises `ValueError` instead of handing back a wrongly shaped tensor.
        """
        grad = self._grads.get(id)
        if grad is not None and ndim is not None:
            _check_rank("get", id, grad, ndim)
        return None if grad is None else Tensor._plain(grad)

    def remove(self, id: ParamId, ndim: int | None = None) -> Tensor | None:
        """Take the gradient of `id` out of the container (None when absent)."""
        grad = self._grads.get(id)
        if grad is not None and ndim is not None:
            _check_rank("remove", id, grad, ndim)
        grad = self._grads.pop(id, None)
        return None if grad is None else Tensor._plain(grad)

    def register(self, id: ParamId, value: Tensor) -> None:
        """Store `value` as the gradient of `id`, replacing any previous one."""
        self._grads[id] = value._data  # the inner (plain) values of an autodiff tensor too

    def len(self) -> int:
        """Number of gradients held (burn's `len()`)."""
        return len(self._grads)

    def is_empty(self) -> bool:
        """True when no gradient is held."""
        return not self._grads

    def ids(self) -> list[ParamId]:
        """The ParamIds held, in insertion order."""
        return list(self._grads)

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, id: ParamId) -> bool:
        return id in self._grads

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} entries)"


def _check_rank(op: str, id: ParamId, grad: np.ndarray, ndim: int) -> None:
    if grad.ndim != ndim:
        raise ValueError(
            f"GradientsParams.{op}: the gradient of param {id.encode()} has rank {grad.ndim} "
            f"(shape {list(grad.shape)}), but rank {ndim} was requested"
        )


class GradientsAccumulator:
    """Sums GradientsParams per ParamId over several backward passes (burn's
    `GradientsAccumulator`). No division by the number of parts: scale the losses yourself.

    PyTorch difference: PyTorch accumulates implicitly into `.grad` until `zero_grad()`.
    """

    def __init__(self) -> None:
        self._grads = GradientsParams()

    def accumulate(self, module: Module, grads: GradientsParams) -> None:
        """Add `grads` (for `module`'s params) to the running sums: `sum + new`."""
        store = self._grads._grads
        for param in params_of(module):
            new = grads._grads.pop(param.id, None)
            old = store.pop(param.id, None)
            if new is None and old is None:
                continue
            if new is None:
                total = old
            elif old is None:
                total = new
            else:
                total = old + new
            store[param.id] = total

    def grads(self) -> GradientsParams:
        """The accumulated sums; the accumulator starts over empty."""
        out, self._grads = self._grads, GradientsParams()
        return out
