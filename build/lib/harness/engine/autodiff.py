"""Graph nodes, the backward pass and the `Gradients` container (burn-autodiff semantics).

Every tensor on the autodiff device has a `Node`: an id from one global counter and a
requirement (`GRAD`: a leaf marked with `require_grad()`; `GRAD_IN_BACKWARD`: an op output with
at least one tracked input; `NONE`: untracked). An op output keeps only its tracked parents
(`parents[i]` is None for an untracked input) and the step to run in backward: a rule from
`BACKWARD_RULES` plus what the forward op saved for it.
"""

from __future__ import annotations

import itertools
from operator import attrgetter

import numpy as np

from .errors import BACKWARD_UNTRACKED, NO_STEP_REGISTERED, AutodiffError

__all__ = ["GRAD", "GRAD_IN_BACKWARD", "NONE", "Gradients", "Node", "backward", "next_node_id"]

GRAD = "grad"
GRAD_IN_BACKWARD = "grad_in_backward"
NONE = "none"

next_node_id = itertools.count(1).__next__


class Node:
    """Autodiff bookkeeping of one tensor. `rule` is None once the step ran (or for leaves).

    `grad` holds the gradient summed so far for a pending step, only while a backward pass
    runs (a slot is cheaper than a dict keyed by id on the hot path).
    """

    __slots__ = ("grad", "id", "order", "parents", "requirement", "rule", "saved")

    def __init__(self, id, requirement, parents, order, rule, saved):
        self.id = id
        self.requirement = requirement
        self.parents = parents
        self.order = order
        self.rule = rule
        self.saved = saved
        self.grad = None

    def __repr__(self) -> str:
        rule = self.rule.__name__ if self.rule is not None else None
        return f"Node(id={self.id}, {self.requirement}, order={self.order}, step={rule})"


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
        raise AutodiffError(BACKWARD_UNTRACKED)
    seed = _ones(shape, dtype)
    if root.requirement is GRAD:
        return Gradients({root.id: seed})
    if root.rule is None:
        raise AutodiffError(NO_STEP_REGISTERED)
    steps = _collect_steps(root)
    root.grad = seed
    leaves: dict[int, np.ndarray] = {}
    try:
        _run_steps(steps, leaves)
    except BaseException:
        for node in steps:  # a failed pass must not keep gradients alive on the graph
            node.grad = None
        raise
    return Gradients(leaves)


def _run_steps(steps: list[Node], leaves: dict[int, np.ndarray]) -> None:
    """Run `steps` in order: pending steps sum their gradient in `node.grad`, marked leaves in
    `leaves` (keyed by id: two nodes of one leaf, re-marked, share their entry)."""
    get = leaves.get
    for node in steps:
        # The step is consumed, and the node's own gradient dropped (no retain_grad).
        rule, node.rule = node.rule, None
        g, node.grad = node.grad, None
        if g is not None:
            # One gradient per parent (the rule tests check every rule's arity). No `strict=`:
            # any keyword makes zip() build a kwargs dict, ~0.1 us per step.
            for parent, gp in zip(node.parents, rule(node, g)):  # noqa: B905
                if parent is None or gp is None:
                    continue
                if parent.rule is not None:
                    prev = parent.grad
                    parent.grad = gp if prev is None else prev + gp
                elif parent.requirement is GRAD:
                    pid = parent.id
                    prev = get(pid)
                    leaves[pid] = gp if prev is None else prev + gp
                # else: an intermediate whose step an earlier backward consumed (two roots
                # sharing it): the pass stops there and its gradient is not kept.
        # Saved inputs are released as soon as the step ran, so peak memory stays bounded.
        node.saved = None
        node.parents = ()


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


def _collect_steps(root: Node) -> list[Node]:
    """Nodes with a pending step reachable from root, deepest first.

    Marked leaves are not collected: `_run_steps` finds them as parents of the steps it runs.
    """
    steps = [root]
    append = steps.append
    seen = {root.id}
    # Breadth first: `steps` is its own queue (a for loop sees the items appended meanwhile).
    for node in steps:
        for parent in node.parents:
            # No pending step: a marked leaf, or a step an earlier backward consumed.
            if parent is None or parent.rule is None:
                continue
            pid = parent.id
            if pid not in seen:
                seen.add(pid)
                append(parent)
    # An op's order is 1 + its deepest parent's, so descending order is a topological order;
    # ties run by descending id. Two stable single-key sorts are ~2x cheaper than a tuple key.
    if len(steps) > 1:
        steps.sort(key=_by_id, reverse=True)
        steps.sort(key=_by_order, reverse=True)
    return steps
