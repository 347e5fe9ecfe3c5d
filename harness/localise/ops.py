"""Op-level localisation inside the first module whose output parts: which of the engine's
primitives, in that call, is where the two formulas part.

Capture (four more runs of the sides, as for modules; nothing is written): while the target
call runs, every op output is kept. torch: a ``TorchDispatchMode``, with torch's fused kernels
that have a Python decomposition (``DECOMPOSED``: layer norm, GELU, softmax, ``addmm``) run as
that decomposition, so that their intermediates (mean, variance, ``rsqrt``, ...) exist to be
matched. The engine: every tracked op output (``harness.engine.methods.tracked_output``, where
each primitive's output gets its graph node), with its node and its parents' nodes.

Alignment: the two sides decompose differently (burn's layer norm takes ``sqrt`` and
divides, torch's decomposition multiplies by ``rsqrt``), so ops are not paired one to one. An
engine op is *matched* when some torch op output of that call with as many elements agrees
with it to rounding (the float64 verdict, as for modules). An unmatched op is *cleared* when
a matched op depends on it (its value had no torch counterpart, but what was made of it
agrees). The verdict is the first engine op, in execution order, that is neither: the first
step of the engine's formula that no torch value of the call explains.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.case import Localise
from harness.localise.capture import Captured, Key, engine_capture, torch_capture
from harness.localise.verdict import _same_nonfinite_as_zero
from harness.pinning import FLOAT64, THREADS, pinned, side_dtype
from harness.results import OpVerdict
from harness.trajectory import Precision, eps_gaps, precision_verdict


@dataclass(frozen=True)
class OpValue:
    """One op output of the target call: the op's name, the value, and (engine) the op's node
    id and the ids of its parents' nodes."""

    name: str
    value: Captured
    node: int = 0
    parents: tuple[int, ...] = ()


@dataclass
class _OpRecorder:
    target: tuple[int, str, int]
    spec: Localise
    ops: list[OpValue] = field(default_factory=list)
    active: bool = False

    def keep(self, array: np.ndarray) -> Captured | None:
        array = np.asarray(array)
        if array.dtype.kind != "f":
            return None
        flat = array.reshape(-1)
        stride = max(1, -(-flat.size // self.spec.cap))
        return Captured(array.shape, flat[::stride].copy(), stride > 1)


def _decomposed() -> dict:
    import torch
    from torch._decomp import decomposition_table

    aten = torch.ops.aten
    ops = (
        aten.native_layer_norm.default,
        aten.gelu.default,
        aten._softmax.default,
        aten._log_softmax.default,
        aten.addmm.default,
    )
    return {op: decomposition_table[op] for op in ops if op in decomposition_table}


DECOMPOSED = ("native_layer_norm", "gelu", "_softmax", "_log_softmax", "addmm")


@contextlib.contextmanager
def torch_op_capture(spec: Localise, target: tuple[int, str, int]) -> Iterator[_OpRecorder]:
    """Keep every aten op output while the ``target`` module call runs."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    recorder = _OpRecorder(target, spec)
    table = _decomposed()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in table:
                with self:  # the decomposition's own ops are recorded too
                    return table[func](*args, **kwargs)
            out = func(*args, **kwargs)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for item in outs:
                if isinstance(item, torch.Tensor):
                    kept = recorder.keep(item.detach().cpu().numpy())
                    if kept is not None:
                        recorder.ops.append(OpValue(func.__name__, kept))
            return out

    mode = Record()

    def listener(event, where):
        if where != target:
            return
        if event == "start":
            mode.__enter__()
            recorder.active = True
        elif recorder.active:
            mode.__exit__(None, None, None)
            recorder.active = False

    try:
        with torch_capture(spec, listener):
            yield recorder
    finally:
        if recorder.active:  # the call raised: its post-hook never ran
            mode.__exit__(None, None, None)


@contextlib.contextmanager
def engine_op_capture(spec: Localise, target: tuple[int, str, int]) -> Iterator[_OpRecorder]:
    """Keep every tracked op output the engine makes while the ``target`` module call runs."""
    from harness.engine import methods

    recorder = _OpRecorder(target, spec)
    original = methods.tracked_output

    def tracked_output(cls, out, parents, order, op, saved):
        t = original(cls, out, parents, order, op, saved)
        if recorder.active:
            kept = recorder.keep(out)
            if kept is not None:
                ids = tuple(p.id for p in parents if p is not None)
                recorder.ops.append(OpValue(op.name, kept, t._node.id, ids))
        return t

    def listener(event, where):
        if where == target:
            recorder.active = event == "start"

    methods.tracked_output = tracked_output
    try:
        with engine_capture(spec, listener):
            yield recorder
    finally:
        methods.tracked_output = original


_CAPTURES = {"torch": torch_op_capture, "engine": engine_op_capture}


def capture_ops(
    fn: Callable[..., Mapping[str, Any]],
    side: str,
    spec: Localise,
    target: tuple[int, str, int],
    dtype: str,
    threads: int = THREADS,
) -> list[OpValue]:
    """Run one side (pinned, as the runner runs it) keeping the op outputs of ``target``."""
    with pinned(side, threads), _CAPTURES[side](spec, target) as recorder:
        fn(dtype=side_dtype(side, dtype))
    return recorder.ops


def localise_ops(
    torch_fn: Callable[..., Mapping[str, Any]],
    engine_fn: Callable[..., Mapping[str, Any]],
    spec: Localise,
    target: Key,
    engine_path: str,
    threads: int = THREADS,
) -> OpVerdict | None:
    """The first engine op of the ``target`` forward call that no torch op explains (None
    when every engine op is matched or cleared, or when the runs did not line up)."""
    step, _, path, call = target
    ops = {
        (side, dtype): capture_ops(fn, side, spec, where, dtype, threads)
        for dtype in ("float32", FLOAT64)
        for side, fn, where in (
            ("torch", torch_fn, (step, path, call)),
            ("engine", engine_fn, (step, engine_path, call)),
        )
    }
    return first_unexplained(
        ops["torch", "float32"],
        ops["engine", "float32"],
        ops["torch", FLOAT64],
        ops["engine", FLOAT64],
    )


def first_unexplained(
    t32: list[OpValue], e32: list[OpValue], t64: list[OpValue], e64: list[OpValue]
) -> OpVerdict | None:
    """See the module docstring; None when the dtypes' runs recorded other op sequences."""
    if [o.name for o in t32] != [o.name for o in t64] or [o.name for o in e32] != [
        o.name for o in e64
    ]:
        return None
    matched = [
        any(_agrees(e, t, e_, t_) for t, t_ in zip(t32, t64, strict=True))
        for e, e_ in zip(e32, e64, strict=True)
    ]
    cleared = _ancestors_of([o for o, m in zip(e32, matched, strict=True) if m], e32)
    for index, op in enumerate(e32):
        if not matched[index] and op.node not in cleared:
            return OpVerdict(op.name, index, len(e32), op.value.shape, len(t32))
    return None


def _agrees(e: OpValue, t: OpValue, e64: OpValue, t64: OpValue) -> bool:
    a, b, a64, b64 = (v.value.values for v in (t, e, t64, e64))
    if a.size != b.size or a64.size != b64.size or a.size != a64.size:
        return False
    a, b = _same_nonfinite_as_zero(a, b)
    a64, b64 = _same_nonfinite_as_zero(a64, b64)
    n32 = eps_gaps({"v": a[None]}, {"v": b[None]}, {"v": a64[None]}, 1, a.dtype.name)
    n64 = eps_gaps({"v": a64[None]}, {"v": b64[None]}, {"v": a64[None]}, 1, a64.dtype.name)
    return precision_verdict(n32, n64).verdict == Precision.ROUNDING


def _ancestors_of(matched: list[OpValue], ops: list[OpValue]) -> set[int]:
    """The node ids every matched op depends on, through the recorded ops."""
    parents = {o.node: o.parents for o in ops}
    seen: set[int] = set()
    stack = [p for o in matched for p in o.parents]
    while stack:
        node = stack.pop()
        if node in seen or node not in parents:
            continue
        seen.add(node)
        stack += parents[node]
    return seen
