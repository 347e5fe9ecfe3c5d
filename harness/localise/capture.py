"""Module-level capture: every module's forward output, the gradient into that output and the
gradient it passes back to its input, recorded while one side runs, keyed by the module's path.

Both sides are captured the same way, so the two records mean the same thing:

- **input** (``"input"``): the module's first tensor argument as the call starts (a field of
  an engine input record: ``MhaInput.query``, ``TransformerEncoderInput.tensor``), so that a
  gap made by code between two modules is seen where it enters the next one;
- **forward** (``"output"``): the module's output (its first tensor: an attention's context,
  an LSTM's output sequence), after the call returned;
- **grad_output** (``"output gradient"``): the whole gradient that reaches that output tensor
  in backward (torch: a tensor hook on the output; the engine: the output node's step, wrapped
  to copy the gradient it receives before it runs);
- **grad_input** (``"input gradient"``): the part of the gradient of the module's first
  tracked tensor argument that comes *through this module* (a residual's own share is not in
  it). torch: the argument is passed on as a ``view_as`` of itself whose hook reads it, as
  torch's own full backward hooks do (``BackwardHookFunction``; every argument that is the
  same tensor gets the same view, so attention's ``q is k is v`` test still holds). The
  engine: the steps of the nodes the call built that take the argument as a parent are
  wrapped to add up what they pass to it (the graph is left as it is). An engine module whose
  argument is not a tensor (``MhaInput``, ``TransformerEncoderInput``) has no input gradient.

Which calls count: the first module called from outside any module is the model; each later
outside call of a module of its class starts a new step (a training step builds the engine's
model anew); other outside calls (a loss module) are not captured. Only the first
``Localise.steps`` steps are kept, and a tensor over ``Localise.cap`` elements is kept as an
even stride of about ``cap`` of its elements (the same elements on both sides, shapes being
equal), so memory is bounded by steps x modules x cap.

The engine's normal path is untouched: capture patches each ``Module`` subclass's ``forward``
only while ``engine_capture()`` is active, and restores it on exit (so a class defined inside
the side, after capture began, is not captured).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.case import Localise

Key = tuple[int, str, str, int]  # (step, phase in harness.results.PHASES, module path, call)


@dataclass(frozen=True)
class Captured:
    """One captured tensor: its shape, and its values (all of them, or a stride of them when
    ``strided``), flattened, in the dtype the side computed them in."""

    shape: tuple[int, ...]
    values: np.ndarray
    strided: bool


@dataclass
class Capture:
    """What one side's run left: ``values`` by key; ``events``: ``("start" | "finish",
    (step, path, call))`` of each module call, in the order the calls started and returned;
    ``module_types``: the model's ``(path, "Struct:<class>")`` (engine only, for path
    mapping)."""

    spec: Localise
    values: dict[Key, Captured] = field(default_factory=dict)
    events: list[tuple[str, tuple[int, str, int]]] = field(default_factory=list)
    module_types: list[tuple[str, str]] = field(default_factory=list)
    _sums: dict[Key, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> list[tuple[int, str, int]]:
        """The calls in the order they returned."""
        return [where for event, where in self.events if event == "finish"]

    def add(self, key: Key, array: np.ndarray) -> None:
        """Add ``array`` to the value summed so far under ``key`` (an input gradient that
        arrives in parts), and keep the sum."""
        total = self._sums.get(key)
        total = np.array(array) if total is None else total + array
        self._sums[key] = total
        self.put(key, total)

    def put(self, key: Key, array: np.ndarray) -> None:
        """Keep ``array`` under ``key`` (a stride of it over the cap); integer and bool
        tensors (token ids, masks) are not values that round and are not kept."""
        if np.asarray(array).dtype.kind != "f":
            return
        flat = np.asarray(array).reshape(-1)
        stride = max(1, math.ceil(flat.size / self.spec.cap))
        kept = flat[::stride].copy()
        self.values[key] = Captured(tuple(np.shape(array)), kept, stride > 1)


@dataclass
class _Calls:
    """The step bookkeeping both sides share: the model's class, the current step, the paths
    of its modules at this step, the calls per path, and how deep inside the model we are."""

    capture: Capture
    root: type | None = None
    step: int = -1
    paths: dict[int, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    depth: int = 0
    active: bool = False
    listener: Any = None  # called as listener("start" | "finish", where) (op-level capture)

    def enter(self, module, named_modules) -> tuple[int, str, int] | None:
        """The key of this call, or None when it is not captured; call ``leave`` after it."""
        if self.depth == 0:
            if self.root is None:
                self.root = type(module)
            self.active = type(module) is self.root
            if self.active:
                self.step += 1
                self.paths = {id(m): path for path, m in named_modules(module)}
                self.counts = {}
        self.depth += 1
        if not self.active or self.step >= self.capture.spec.steps:
            return None
        path = self.paths.get(id(module))  # "" for the model itself
        if path is None:  # a module made on the fly
            return None
        call = self.counts.get(path, 0)
        self.counts[path] = call + 1
        self.capture.events.append(("start", (self.step, path, call)))
        return (self.step, path, call)

    def leave(self, where: tuple[int, str, int] | None) -> None:
        self.depth -= 1
        if where is not None:
            self.capture.events.append(("finish", where))

    def hear(self, event: str, where) -> None:
        if where is not None and self.listener is not None:
            self.listener(event, where)


def _key(where: tuple[int, str, int], phase: str) -> Key:
    step, path, call = where
    return (step, phase, path, call)


# ---------------------------------------------------------------------------------------------
# torch


def _first_torch_tensor(value) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_torch_tensor(item)
            if found is not None:
                return found
    return None


@contextlib.contextmanager
def torch_capture(spec: Localise, listener=None) -> Iterator[Capture]:
    """Capture every ``torch.nn.Module`` call of the model while the block runs (global module
    hooks: any model, no registration per instance); ``listener(event, where)`` hears each
    captured call start and finish (before its output is read)."""
    from torch.nn.modules import module as torch_module

    capture = Capture(spec)
    calls = _Calls(capture, listener=listener)
    pending: dict[int, tuple[int, str, int] | None] = {}

    def named(module):
        return module.named_modules(remove_duplicate=False)

    def pre(module, args):
        where = calls.enter(module, named)
        pending[id(module)] = where  # a module does not re-enter itself
        if where is None:
            return None
        found = _first_torch_tensor(args)
        if found is not None:
            capture.put(_key(where, "input"), found.detach().cpu().numpy())
        import torch

        i = next((i for i, a in enumerate(args) if isinstance(a, torch.Tensor)), None)
        if i is None or not args[i].requires_grad:
            calls.hear("start", where)
            return None  # no tensor argument, or an untracked one: no input gradient
        first = args[i]
        view = first.view_as(first)
        view.register_hook(_torch_hook(capture, _key(where, "grad_input")))
        calls.hear("start", where)
        # Every argument that is this tensor gets the one view: attention's `q is k is v` test
        # picks its packed projection, and must still pick it under capture.
        return tuple(view if a is first else a for a in args)

    def post(module, args, output):
        where = pending.pop(id(module), None)
        calls.hear("finish", where)
        calls.leave(where)
        if where is None:
            return None
        out = _first_torch_tensor(output)
        if out is not None:
            capture.put(_key(where, "forward"), out.detach().cpu().numpy())
            if out.requires_grad:
                out.register_hook(_torch_hook(capture, _key(where, "grad_output")))
        return None

    handles = [
        torch_module.register_module_forward_pre_hook(pre),
        torch_module.register_module_forward_hook(post),
    ]
    try:
        yield capture
    finally:
        for handle in handles:
            handle.remove()


def _torch_hook(capture: Capture, key: Key):
    def hook(grad):
        capture.put(key, grad.detach().cpu().numpy())

    return hook


# ---------------------------------------------------------------------------------------------
# engine


def named_modules(module) -> Iterator[tuple[str, Any]]:
    """``(path, module)`` of an engine module and every sub-module, in declaration order (the
    root is ``""``), as ``Module.named_params`` walks them."""
    from harness.engine.module.core import Module, _children

    yield "", module
    stack = [("", module)]
    while stack:
        prefix, parent = stack.pop(0)
        for name, value in vars(parent).items():
            for suffix, child in _children(value):
                if isinstance(child, Module):
                    path = f"{prefix}{name}{suffix}"
                    yield path, child
                    stack.append((path + ".", child))


def _module_classes() -> list[type]:
    from harness.engine.module.core import Module

    found, queue = [], [Module]
    while queue:
        cls = queue.pop()
        queue.extend(cls.__subclasses__())
        if "forward" in vars(cls) and callable(vars(cls)["forward"]):
            found.append(cls)
    return found


def _first_engine_tensor(value) -> Any:
    from harness.engine.tensor import Tensor

    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_engine_tensor(item)
            if found is not None:
                return found
        return None
    context = getattr(value, "context", None)  # MhaOutput: weights first, context is the output
    if isinstance(context, Tensor):
        return context
    fields = getattr(value, "__dict__", None) or {}
    return next((v for v in fields.values() if isinstance(v, Tensor)), None)


@contextlib.contextmanager
def engine_capture(spec: Localise, listener=None) -> Iterator[Capture]:
    """Capture every engine ``Module`` call of the model while the block runs (``listener``:
    as for ``torch_capture``)."""
    from harness.engine.autodiff import next_node_id
    from harness.engine.tape import observed

    capture = Capture(spec)
    calls = _Calls(capture, listener=listener)
    originals = {cls: vars(cls)["forward"] for cls in _module_classes()}
    inside: list[Any] = []  # the modules whose forward runs, innermost last

    def wrap(original):
        def forward(self, *args, **kwargs):
            if inside and inside[-1] is self:  # super().forward of a wrapped subclass
                return original(self, *args, **kwargs)
            where = calls.enter(self, _named_with_types)
            inside.append(self)
            source = None
            if where is not None:
                source = _first_tracked(args)
                found = _first_engine_tensor(args)
                if found is not None:
                    capture.put(_key(where, "input"), np.array(found._data))
            first_id = next_node_id()  # nodes built by this call have larger ids
            calls.hear("start", where)
            try:
                out = original(self, *args, **kwargs)
            finally:
                calls.hear("finish", where)
                inside.pop()
                calls.leave(where)
            if where is not None:
                if source is not None:
                    _watch_input(capture, where, source, first_id, out)
                _watch_output(capture, where, out)
            return out

        forward.__wrapped__ = original
        return forward

    def _named_with_types(module):
        found = list(named_modules(module))
        if not capture.module_types:
            capture.module_types = [(p, f"Struct:{type(m).__name__}") for p, m in found if p]
        return found

    for cls, original in originals.items():
        cls.forward = wrap(original)
    try:
        with observed():  # a recorded step would replay past the wrapped forwards
            yield capture
    finally:
        for cls, original in originals.items():
            cls.forward = original


def _first_tracked(args: tuple):
    """The first tensor argument's node, when it is tracked (else None)."""
    from harness.engine.autodiff import NONE
    from harness.engine.tensor import Tensor

    arg = next((a for a in args if isinstance(a, Tensor)), None)
    node = None if arg is None else arg._node
    return None if node is None or node.requirement is NONE else node


def _watch_input(capture: Capture, where, source, first_id: int, out) -> None:
    """Wrap the step of every node the module built (id above ``first_id``) that takes
    ``source`` (the first tracked argument's node) as a parent, so that the gradients they pass
    to it are summed into the module's input gradient. The graph itself is left as it is (an
    identity node in front of the module would change the order in which a shared input's
    gradients are summed, and so the side's own values)."""
    tensor = _first_engine_tensor(out)
    if tensor is None or tensor._node is None or tensor._node.id <= first_id:
        return  # the module returned a tensor it did not build
    key, seen, stack = _key(where, "grad_input"), set(), [tensor._node]
    while stack:
        node = stack.pop()
        if id(node) in seen or node.rule is None:
            continue
        seen.add(id(node))
        slots = [i for i, parent in enumerate(node.parents) if parent is source]
        if slots:
            node.rule = _passing_to(capture, key, node.rule, slots)
        stack += [p for p in node.parents if p is not None and p is not source and p.id > first_id]


def _passing_to(capture: Capture, key: Key, rule, slots: list[int]):
    def watched(saved, g, parents):
        grads = rule(saved, g, parents)
        for i in slots:
            if i < len(grads) and grads[i] is not None:
                capture.add(key, grads[i])
        return grads

    watched.__name__ = rule.__name__  # arity errors name the op's rule, as unwatched
    return watched


def _watch_output(capture: Capture, where, out) -> None:
    tensor = _first_engine_tensor(out)
    if tensor is None:
        return
    capture.put(_key(where, "forward"), np.array(tensor._data))
    from harness.engine.autodiff import GRAD_IN_BACKWARD

    node = tensor._node
    if node is None or node.requirement is not GRAD_IN_BACKWARD or node.rule is None:
        return  # untracked, or a marked leaf returned as is: no step to watch
    rule, key = node.rule, _key(where, "grad_output")

    def watched(saved, g, parents):
        capture.put(key, g)
        return rule(saved, g, parents)

    watched.__name__ = rule.__name__  # arity errors name the op's rule, as unwatched
    node.rule = watched
