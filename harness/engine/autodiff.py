"""Graph nodes, the backward pass and the `Gradients` container (burn-autodiff semantics).

Every tensor on the autodiff device has a `Node`: an id from one global counter and a
requirement (`GRAD`: a leaf marked with `require_grad()`; `GRAD_IN_BACKWARD`: an op output with
at least one tracked input; `NONE`: untracked). An op output keeps only its tracked parents
(`parents[i]` is None for an untracked input) and the step to run in backward: its primitive's
rule plus the record the forward saved for it (harness.engine.ops.base states the contract).
"""

from __future__ import annotations

import itertools
from operator import attrgetter

import numpy as np

from .device import Device
from .errors import (
    BACKWARD_UNTRACKED,
    NO_STEP_REGISTERED,
    NON_LEAF_REQUIRE_GRAD,
    REPLACEMENT_NOT_INNER,
    REQUIRES_AUTODIFF,
    AutodiffError,
    RuleArityError,
)
from .ops.arrays import FLOAT_DTYPES

__all__ = [
    "GRAD",
    "GRAD_IN_BACKWARD",
    "NONE",
    "AutodiffMethods",
    "Gradients",
    "Node",
    "backward",
    "marked_leaf",
    "next_node_id",
    "untracked_node",
    "untracked_output",
]

GRAD = "grad"
GRAD_IN_BACKWARD = "grad_in_backward"
NONE = "none"

next_node_id = itertools.count(1).__next__
_PLAIN = Device.flex()
_AUTODIFF = _PLAIN.autodiff()


class Node:
    """Autodiff bookkeeping of one tensor. `rule` is None once the step ran (or for leaves).

    `grad` holds the gradient summed so far for a pending step, only while a backward pass
    runs (a slot is cheaper than a dict keyed by id on the hot path): `_PENDING` once the pass
    collected the step, None outside a pass.

    Built with `object.__new__` and slot stores (no `__init__`), by `untracked_node`,
    `untracked_output` and `marked_leaf` below and, for tracked op outputs, by
    `harness.engine.methods.tracked_output`:
    in Python 3.11 calling a class runs its `__init__` through the slow path of a type call.
    """

    __slots__ = ("grad", "id", "order", "parents", "requirement", "rule", "saved")

    def __repr__(self) -> str:
        rule = self.rule.__name__ if self.rule is not None else None
        return f"Node(id={self.id}, {self.requirement}, order={self.order}, step={rule})"


_new = object.__new__


def untracked_node() -> Node:
    """A fresh node of a tensor on the autodiff device that takes no part in the graph."""
    node = _new(Node)
    node.id = next_node_id()
    node.requirement = NONE
    node.parents = node.rule = node.saved = node.grad = None
    node.order = 0
    return node


def _untracked_step(saved, g, tracked) -> tuple:
    """The step of an untracked op output: nothing to do (burn's `UntrackedOpsStep`)."""
    return ()


def untracked_output() -> Node:
    """A fresh node of an op output on the autodiff device none of whose inputs is tracked.

    burn registers a no-op step for it (`UntrackedOpsStep`, `crates/burn-autodiff/src/ops/
    base.rs`, commit 2c06be351006851d42fdb6df16b976f4a82d9747), so `backward()` on it runs
    that step instead of raising; order 1 tells it from an untracked leaf once consumed.
    """
    node = _new(Node)
    node.id = next_node_id()
    node.requirement = NONE
    node.parents = node.saved = node.grad = None
    node.order = 1
    node.rule = _untracked_step
    return node


def marked_leaf(node_id: int | None = None) -> Node:
    """A leaf marked with `require_grad()`: a fresh id, or `node_id` (an untracked tensor that
    becomes marked keeps its id)."""
    node = _new(Node)
    node.id = next_node_id() if node_id is None else node_id
    node.requirement = GRAD
    node.parents = node.rule = node.saved = node.grad = None
    node.order = 0
    return node


class Gradients:
    """The gradients of one backward pass, keyed by node id.

    PyTorch difference: PyTorch accumulates into `.grad` on each leaf and needs `zero_grad`;
    here every `backward()` returns a new container, nothing is stored on tensors and nothing
    accumulates across calls. Only marked leaves have entries; read them with `x.grad(grads)`,
    take them with `x.grad_remove(grads)`, replace them with `x.grad_replace(grads, g)`.
    """

    __slots__ = ("_grads",)

    def __init__(self, grads: dict[int, np.ndarray]) -> None:
        self._grads = grads

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._grads

    def __repr__(self) -> str:
        return f"Gradients({len(self._grads)} entries)"


def backward(root: Node | None, shape: tuple[int, ...], dtype: np.dtype) -> Gradients:
    """Run the steps reachable from `root`, deepest first, seeded with ones of `shape`.

    PyTorch difference: any output shape is accepted (the seed is ones, as if `sum()` came
    first) where PyTorch requires a scalar or an explicit gradient. The pass consumes the steps
    it runs, so a second backward on the same root raises; there is no `retain_graph` and no
    `create_graph` (gradients are plain tensors: first order only).

    Two roots sharing an intermediate: the first backward consumes the shared steps, so the
    second one stops there (as burn's tape, which only holds steps still registered). A marked
    leaf used as the root has no step to consume: its gradient is the seed, every time.
    """
    if root is None or root.requirement is NONE:
        return _untracked_backward(root, shape, dtype)
    seed = _ones(shape, dtype)
    if root.requirement is GRAD:
        return Gradients({root.id: seed})
    if root.rule is None:
        raise AutodiffError(NO_STEP_REGISTERED)
    steps = _collect_steps(root)
    root.grad = seed  # the other steps start at _PENDING (see _collect_steps)
    leaves: dict[int, np.ndarray] = {}
    try:
        _run_steps(steps, leaves)
    except BaseException:
        for node in steps:  # a failed pass must not keep gradients alive on the graph
            node.grad = None
        raise
    result = _new(Gradients)  # the container without a type call (one per training step)
    result._grads = leaves
    return result


def _untracked_backward(root: Node | None, shape, dtype) -> Gradients:
    """backward() from a tensor no tracked leaf reaches.

    An untracked op output on the autodiff device runs burn's no-op step once: the container
    holds only the root's seed of ones (`Gradients::new` registers it, `crates/burn-autodiff/
    src/grads.rs`, and the no-op step never consumes it); a second call finds no step, as
    burn's `steps.remove(..).expect(..)`. A plain tensor (a gradient) and an untracked leaf
    raise the seed spec's "requires a tracked autodiff tensor" (burn panics there too, with
    "Requires autodiff tensor." for the first and no-step for the second).

    PyTorch difference: `backward()` on a tensor that does not require grad raises.
    """
    if root is not None and root.rule is _untracked_step:
        root.rule = None
        return Gradients({root.id: _ones(shape, dtype)})
    if root is not None and root.order:
        raise AutodiffError(NO_STEP_REGISTERED)
    raise AutodiffError(BACKWARD_UNTRACKED)


def _run_steps(steps: list[Node], leaves: dict[int, np.ndarray]) -> None:
    """Run `steps` in order: pending steps sum their gradient in `node.grad`, marked leaves in
    `leaves` (keyed by id: two nodes of one leaf, re-marked, share their entry)."""
    get = leaves.get
    pending = _PENDING
    for node in steps:
        # The step is consumed, and the node's own gradient dropped (no retain_grad).
        rule, node.rule = node.rule, None
        g, node.grad = node.grad, None
        if g is not pending:  # else no gradient reached it: nothing to pass on
            parents = node.parents
            grads = rule(node.saved, g, parents)
            # One gradient per parent, as the rule's registration promised. A length test, not
            # zip's `strict=`: any keyword makes zip() build a kwargs dict, ~0.1 us per step.
            if len(grads) != len(parents):
                raise rule_arity_error(rule, grads, len(parents))
            for parent, gp in zip(parents, grads):  # noqa: B905
                if parent is None or gp is None:
                    continue
                if parent.rule is not None:
                    prev = parent.grad
                    parent.grad = gp if prev is pending else prev + gp
                elif parent.requirement is GRAD:
                    pid = parent.id
                    prev = get(pid)
                    leaves[pid] = gp if prev is None else prev + gp
                # else: an intermediate whose step an earlier backward consumed (two roots
                # sharing it): the pass stops there and its gradient is not kept.
        # Saved inputs are released as soon as the step ran, so peak memory stays bounded.
        node.saved = None
        node.parents = ()


def rule_arity_error(rule, grads, n_inputs: int) -> RuleArityError:
    """A rule returned other than one gradient per input (also raised by harness.engine.tape's
    replays)."""
    return RuleArityError(
        f"rule {rule.__name__} returned {len(grads)} gradient(s) for {n_inputs} input(s)"
    )


_ONE = {}


def _ones(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The seed. A loss is `[1]`-shaped: copying a cached one is ~8x cheaper than np.ones."""
    if shape == (1,):
        one = _ONE.get(dtype)
        if one is None:
            one = _ONE[dtype] = np.ones(1, dtype=dtype)
        return one.copy()
    return np.ones(shape, dtype=dtype)


_by_id = attrgetter("id")
_by_order = attrgetter("order")


# The gradient slot of a collected step before any gradient reached it; it also marks the
# node as collected, which a set of ids would do at twice the cost.
_PENDING = object()


def _collect_steps(root: Node) -> list[Node]:
    """Nodes with a pending step reachable from root, deepest first, their `grad` _PENDING.

    Marked leaves are not collected: `_run_steps` finds them as parents of the steps it runs.
    """
    steps = [root]
    append = steps.append
    try:
        # Breadth first: `steps` is its own queue (a for loop sees the items appended).
        for node in steps:
            for parent in node.parents:
                # No pending step: a marked leaf, or a step an earlier backward consumed.
                if parent is None or parent.rule is None:
                    continue
                if parent.grad is None:
                    parent.grad = _PENDING
                    append(parent)
    except BaseException:
        for node in steps:
            node.grad = None
        raise
    # An op's order is 1 + its deepest parent's, so descending order is a topological order;
    # ties run by descending id. Two stable single-key sorts are ~2x cheaper than a tuple key.
    if len(steps) > 1:
        steps.sort(key=_by_id, reverse=True)
        steps.sort(key=_by_order, reverse=True)
    return steps


class AutodiffMethods:
    """The autodiff part of `Tensor`'s API (burn's methods of an autodiff tensor), a base class
    of `harness.engine.tensor.Tensor`, whose `_data` and `_node` these methods read."""

    __slots__ = ()

    def is_autodiff(self) -> bool:
        """True when the tensor lives on the autodiff device."""
        return self._node is not None

    def is_require_grad(self) -> bool:
        """True only for leaves marked with `require_grad()`.

        PyTorch difference: `requires_grad` is also True for every op output that depends on
        a tracked leaf; burn reports False for such intermediates.
        """
        node = self._node
        return node is not None and node.requirement is GRAD

    def require_grad(self):
        """Mark this leaf as requiring a gradient (burn's `require_grad`).

        No-op on a marked leaf; an untracked tensor becomes a marked leaf with the same node id;
        an op output (an intermediate) raises. On the plain device it is a no-op, as in burn.

        PyTorch difference: `requires_grad_()` on a non-leaf that already requires grad returns
        it unchanged (only `requires_grad_(False)` raises); here marking an intermediate raises.
        """
        node = self._node
        if node is None or node.requirement is GRAD:
            return self
        if node.requirement is GRAD_IN_BACKWARD:
            raise AutodiffError(NON_LEAF_REQUIRE_GRAD)
        if self._data.dtype not in FLOAT_DTYPES:
            raise TypeError(f"require_grad: only float tensors can be tracked, got {self.dtype}")
        return self.__class__(self._data, _AUTODIFF, marked_leaf(node.id))

    def set_require_grad(self, flag: bool):
        """burn's `set_require_grad`: `require_grad()` for True, an untracked leaf for False."""
        if flag:
            return self.require_grad()
        if self._node is None or self._node.requirement is NONE:
            return self
        return self._wrap(self._data, _AUTODIFF)

    def detach(self):
        """A new leaf with a new node id and the same values.

        PyTorch difference: PyTorch's `detach()` drops `requires_grad`; burn **keeps** the flag
        of a marked leaf (the detached tensor is a new marked leaf). A detached intermediate is
        an untracked leaf, since `is_require_grad()` was False for it.
        """
        node = self._node
        if node is None:
            return self
        if node.requirement is GRAD:
            return self._leaf(self._data, _AUTODIFF)
        return self._wrap(self._data, _AUTODIFF)

    def clone(self):
        """An alias: same node, same id, same values; no graph node is created.

        PyTorch difference: `torch.clone` is a graph op with its own backward node; burn's
        clone copies a handle, so gradients of the clone are the original's gradients.
        """
        return self.__class__(self._data, self.device, self._node)

    def inner(self):
        """The plain tensor with the same values, on the inner device, off the graph."""
        if self._node is None:
            raise AutodiffError(REQUIRES_AUTODIFF)
        return self.__class__(self._data, _PLAIN, None)

    def no_grad(self):
        """burn's `Tensor::no_grad` (burn-tensor api/autodiff.rs): `inner()` on the autodiff
        device (the plain tensor, off the graph), the tensor itself on the plain device.

        PyTorch difference: `torch.no_grad()` is a context for the ops run inside it; this
        moves one value off the autodiff device, so later ops on it are never recorded."""
        return self.inner() if self.is_autodiff() else self

    def backward(self) -> Gradients:
        """Backpropagate from this tensor and return a new `Gradients` container.

        PyTorch differences: any shape is accepted (the seed is ones of this shape, as if
        `sum()` came first); the result is returned, never stored on tensors; intermediates get
        no gradient (no `retain_grad`); the steps run are consumed, so a second `backward()` on
        the same root raises; gradients are plain tensors, so second order is an error (no
        `create_graph`); an untracked op output on the autodiff device runs burn's no-op step
        and returns a container holding only its own seed, where PyTorch raises.
        """
        return backward(self._node, self._data.shape, self._data.dtype)

    def _require_autodiff_node(self) -> Node:
        if self._node is None:
            raise AutodiffError(REQUIRES_AUTODIFF)
        return self._node

    def grad(self, grads: Gradients):
        """This tensor's gradient in `grads` as a plain tensor, or None (intermediate,
        untracked, unreachable, another node, entry taken, other container).

        PyTorch differences: PyTorch reads `.grad`, an attribute that accumulates; reading it on
        a non-leaf warns and `retain_grad()` keeps it. Here the gradient is looked up in the
        container one `backward()` returned; an intermediate's entry is dropped as soon as its
        step has run, None comes back without a warning, and there is no `retain_grad`. On a
        tensor of the plain device it raises ("Requires autodiff tensor.") where PyTorch's
        `.grad` is None. A param updated by an optimizer is a new node, so an older container
        has no entry for it (PyTorch's updated param still shows its `.grad`).
        """
        g = grads._grads.get(self._require_autodiff_node().id)
        return None if g is None else self.__class__(g, _PLAIN, None)

    def grad_remove(self, grads: Gradients):
        """Take this tensor's gradient out of `grads` (None when there is none)."""
        g = grads._grads.pop(self._require_autodiff_node().id, None)
        return None if g is None else self.__class__(g, _PLAIN, None)

    def grad_replace(self, grads: Gradients, grad) -> None:
        """Remove any entry for this tensor and insert `grad` (a plain tensor) instead.

        PyTorch difference: PyTorch edits `x.grad` in place (`x.grad.clamp_(...)`), so every
        handle to the old gradient sees the edit. Here the container gets a new entry; a
        gradient read before the replacement keeps its values.
        """
        node = self._require_autodiff_node()
        if grad._node is not None:
            raise AutodiffError(REPLACEMENT_NOT_INNER)
        grads._grads.pop(node.id, None)
        grads._grads[node.id] = grad._data
