"""Recorded steps: a loss and its gradients, replayed from a flat tape without per-op objects.

`step = recorded(fn)`, then `loss, grads = step(*args)` is `loss = fn(*args); grads =
loss.backward()`: the same values, gradients, `Gradients` container (a fresh one per call,
keyed by the leaves' node ids, in the same order), the same consumed loss (a second
`backward()` on it raises burn's no-step error) and the same errors from the kernels and rules.

How: the first two calls with one *key* (the structure of the arguments: every tensor's shape,
dtype and requirement, which tensors are the same node, module classes and field names, every
other argument's value) run eagerly while the primitives' forwards are swapped for recording
ones (`op.forward` is read at each call, harness.engine.methods), so each call writes a tape:
the forward calls with their arguments as slots or constants, and the backward walk (the steps
in `harness.engine.autodiff`'s order, each parent a step or a leaf). When the two tapes agree,
later calls with that key replay it: one generated straight-line function per tape calls the
same forward kernels on the new arguments' arrays, then the rules in the same order, summing
each gradient in the same order. No Tensor, Node or per-op closure is built and the graph is
not walked: that is what a replay saves, not kernel time. Measured on a tiny MLP (4-8-3, batch
4, cross-entropy: 8 forwards, 7 rules) on an Intel Xeon VM, the fastest of 300 interleaved
rounds: loss and gradients 63.8 us replayed against 74.8 us eager; the kernels are the rest,
and on larger models all but a few percent.

What stays eager, for that key (correct, not faster):
- a value read through the API while recording (`numpy`, `tolist`, `into_scalar`, `__array__`,
  `repr`): control flow or a Python number may depend on the values;
- two tapes that differ: another op sequence (control flow on state outside the arguments), or
  an array that is not the same object in both calls where neither came from an argument or a
  recorded forward (random masks, arrays computed from `_data` outside a primitive, a
  `Tensor.zeros` built inside `fn`, such as an LSTM's zero initial state);
- graph nodes the tape does not know: a tracked argument that is an op output (its graph goes on
  outside `fn`), steps built outside `tracked_output` (the fused recurrent kernels), a root that
  is no op output, a step an earlier backward consumed.
A key seen for the first time is recorded again, so a changed shape, dtype, requires-grad set
or Python argument never replays another key's tape; past `max_keys` keys, new ones run
eagerly.

The contract, as `jax.jit`'s: `fn` reads its inputs through its arguments (a tensor it captures
is a constant of the tape) and reads values only through the API above (`_data` is private).
Node ids are the one difference a caller can see: a replay draws only the loss's, so the ids
of later tensors differ from an eager run's (ids are never in outputs). Recording swaps
process-wide functions for the call: engine ops another thread runs meanwhile would be
recorded too, so record from one thread (replays are thread-safe).

burn has no such tape (its `burn-fusion` records a stream of ops to fuse them); this one only
saves Python time and keeps burn-autodiff's semantics (crates/burn-autodiff/src/graph/
traversal.rs: the same walk; commit 2c06be351006851d42fdb6df16b976f4a82d9747).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from . import autodiff, methods
from .autodiff import GRAD, GRAD_IN_BACKWARD, Gradients, Node
from .module.core import Module, Param
from .ops.base import PRIMITIVES
from .ops.half import float_path
from .tensor import Tensor

__all__ = ["Recorded", "observed", "recorded"]

_AUTODIFF = autodiff._AUTODIFF
_NDARRAY = np.ndarray
_new = object.__new__
_TRACKED = object()  # stands for a tracked parent in a rule's `tracked` tuple
# A forward argument: ("slot", k), or ("const", value). Python values that are not arrays are
# compared by type and value across the two tapes, arrays and other objects by identity.
_SLOT = "slot"
_CONST = "const"
_VALUE_READS = ("numpy", "tolist", "into_scalar", "__array__", "__repr__")
_EAGER = "eager"  # a key that always runs eagerly


_OBSERVERS = [0]  # captures in progress that must see every module call and op


@contextlib.contextmanager
def observed():
    """Recorded steps run eagerly (no record, no replay) while the block runs: a capture of
    module calls or ops (harness.localise.capture) must see each of them."""
    _OBSERVERS[0] += 1
    try:
        yield
    finally:
        _OBSERVERS[0] -= 1


MAX_KEYS = 16  # per recorded function: the tapes it keeps, one per key


def recorded(fn, *, max_keys: int = MAX_KEYS) -> Recorded:
    """`fn(*args) -> loss` as a callable returning `(loss, grads)`, replayed per key; calls
    with a key beyond the first `max_keys` run eagerly (a loader of ever new batch shapes
    would otherwise keep a tape, and its constants, per shape)."""
    return Recorded(fn, max_keys=max_keys)


class Recorded:
    """A function's loss and gradients, recorded per argument key and replayed (see module).

    `eager_keys` and `replayed_keys` say how many keys took which path, `reasons` why a key
    stays eager (for tests and reports).
    """

    def __init__(self, fn, *, max_keys: int = MAX_KEYS) -> None:
        if max_keys < 0:
            raise ValueError(f"recorded: max_keys must be at least 0, got {max_keys}")
        self.fn = fn
        self.max_keys = max_keys
        self._tapes: dict = {}  # key -> Tape, _EAGER, or ("first", Tape)
        self.reasons: dict = {}  # key -> why it stays eager

    @property
    def eager_keys(self) -> int:
        return sum(1 for t in self._tapes.values() if t is _EAGER)

    @property
    def replayed_keys(self) -> int:
        return sum(1 for t in self._tapes.values() if t.__class__ is _Tape)

    def __call__(self, *args):
        if _OBSERVERS[0] or _Recorder.active is not None:
            return _eager(self.fn, args)
        tensors: list = []
        try:
            key = _key(args, tensors)
        except _Unkeyable:
            return _eager(self.fn, args)
        tape = self._tapes.get(key)
        if tape.__class__ is _Tape:
            return tape.replay(tensors)
        if tape is _EAGER or (tape is None and len(self._tapes) >= self.max_keys):
            return _eager(self.fn, args)
        return self._record(key, args, tensors, tape)

    def _record(self, key, args, tensors, first):
        try:
            loss, grads, tape = _Recorder(tensors).run(self.fn, args)
        except _Unreplayable as why:
            self._tapes[key] = _EAGER
            self.reasons[key] = str(why)
            return why.result
        if first is None:
            self._tapes[key] = ("first", tape)
        elif first[1].same_as(tape):
            self._tapes[key] = tape.compile()
        else:
            self._tapes[key] = _EAGER
            self.reasons[key] = "two calls recorded different tapes"
        return loss, grads


def _eager(fn, args):
    return _with_backward(fn(*args))


def _with_backward(loss):
    """`(loss, loss.backward())`: the eager result, also of a call whose tape was refused
    after `fn` ran."""
    return loss, loss.backward()


# ---- the key --------------------------------------------------------------------------------


class _Unkeyable(Exception):
    """An argument without a key (unhashable): the call runs eagerly."""


def _key(args, tensors: list) -> tuple:
    parts: list = []
    _parts(args, parts, tensors)
    # Aliases: the same node twice is another graph, the same array twice other slots.
    arrays = [id(t._data) for t in tensors]
    if len(set(arrays)) != len(arrays):
        ids = [t._node.id if t._node is not None else None for t in tensors]
        parts.append(tuple(arrays.index(i) for i in arrays))
        parts.append(tuple(ids.index(i) for i in ids))
    return tuple(parts)


def _parts(values, parts: list, tensors: list) -> None:
    for value in values:
        cls = value.__class__
        if cls is Param:
            value = value._value
            cls = Tensor
        if cls is Tensor:
            data = value._data
            node = value._node
            # dtype.num, not the dtype: a dtype hashes in ~0.4 us, every call (engine arrays
            # are native-endian, and ml_dtypes' bfloat16 has a number of its own).
            parts.append((data.shape, data.dtype.num, None if node is None else node.requirement))
            tensors.append(value)
        elif isinstance(value, Module):
            parts.append(cls)
            fields = value.__dict__
            parts.append(tuple(fields))
            _parts(fields.values(), parts, tensors)
        elif cls is list or cls is tuple:
            parts.append((cls, len(value)))
            _parts(value, parts, tensors)
        else:
            try:
                hash(value)
            except TypeError:
                raise _Unkeyable from None
            parts.append((cls, value))


# ---- recording --------------------------------------------------------------------------------


class _Unreplayable(Exception):
    """The recorded call cannot be replayed; `result` is its eager (loss, grads)."""

    def __init__(self, reason: str, result=None) -> None:
        super().__init__(reason)
        self.result = result


@dataclass(slots=True)
class _Forward:
    op: object  # the Primitive: its rule is read at replay, as tracked_output reads it
    fn: object  # the forward that ran (the registered one, half dispatch included)
    args: tuple  # (_SLOT, k) / (_CONST, value) per positional argument
    kwargs: tuple  # (name, (_SLOT, k) / (_CONST, value))
    pair: bool  # the forward returns (out, saved)
    out: int  # the output's slot
    free: tuple = ()  # slots last read by this call, dropped after it (peak memory)
    errors: dict | None = None  # np.errstate the call ran under, when not the call's own


@dataclass(slots=True)
class _Step:
    forward: int  # index of the forward whose output's step this is
    parents: tuple  # per parent: None, a step index (>= 0) or -1 - a leaf index
    tracked: tuple  # what the rule gets as `tracked`: None or _TRACKED per parent


class _Recorder:
    """Records one eager call: forwards while `fn` runs, then the backward walk."""

    active: _Recorder | None = None

    def __init__(self, tensors: list) -> None:
        self.tensors = tensors
        self.slots: dict[int, int] = {}  # id(array) -> slot
        self.alive: list = []  # every array a slot names: ids stay unique while recording
        self.forwards: list[_Forward] = []
        self.by_out: dict[int, int] = {}  # id(out) -> forward index
        self.node_forward: dict[int, int] = {}  # node id -> forward index
        self.value_read = False
        self.refused = ""  # why the tape cannot replay what was recorded, found mid-call
        self.depth = 0
        for t in tensors:  # slot k is argument tensor k (a shared array: its first slot)
            self.slots.setdefault(id(t._data), len(self.alive))
            self.alive.append(t._data)

    def _slot(self, array) -> int:
        k = self.slots.get(id(array))
        if k is None:
            k = self.slots[id(array)] = len(self.alive)
            self.alive.append(array)
        return k

    def run(self, fn, args):
        start = autodiff.next_node_id()
        self.ambient = np.geterr()  # a module's np.errstate around an op is part of the tape
        with self._swapped():
            loss = fn(*args)
        if self.value_read:
            raise _Unreplayable("a tensor value was read while recording", _with_backward(loss))
        if self.refused:
            raise _Unreplayable(self.refused, _with_backward(loss))
        tape = self._tape(loss, start)  # raises _Unreplayable with the eager result
        return loss, loss.backward(), tape

    # -- the swaps: forwards record, value reads mark, tracked outputs name their forward --

    @contextlib.contextmanager
    def _swapped(self):
        saved_forwards = {op: op.forward for op in PRIMITIVES.values()}
        saved_reads = {name: Tensor.__dict__[name] for name in _VALUE_READS}
        tracked_output = methods.tracked_output
        _Recorder.active = self
        try:
            for op, forward in saved_forwards.items():
                op.forward = self._recording(op, forward)
            for name, method in saved_reads.items():
                setattr(Tensor, name, self._reading(method))
            methods.tracked_output = self._tracked_output(tracked_output)
            yield
        finally:
            methods.tracked_output = tracked_output
            for name, method in saved_reads.items():
                setattr(Tensor, name, method)
            for op, forward in saved_forwards.items():
                op.forward = forward
            _Recorder.active = None

    def _recording(self, op, forward):
        recorder = self

        def recording(*args, **kwargs):
            if recorder.depth:  # a forward inside a forward: the outer call is the record
                return forward(*args, **kwargs)
            recorder.depth += 1
            try:
                result = forward(*args, **kwargs)
            finally:
                recorder.depth -= 1
            recorder._note(op, forward, args, kwargs, result)
            return result

        return recording

    def _reading(self, method):
        recorder = self

        def reading(*args, **kwargs):
            recorder.value_read = True
            return method(*args, **kwargs)

        return reading

    def _tracked_output(self, tracked_output):
        recorder = self

        def recording(cls, out, parents, order, op, saved):
            t = tracked_output(cls, out, parents, order, op, saved)
            index = recorder.by_out.get(id(out))
            if index is not None:
                recorder.node_forward[t._node.id] = index
            return t

        return recording

    def _note(self, op, forward, args, kwargs, result) -> None:
        pair = result.__class__ is tuple
        out = result[0] if pair else result
        first = args[0] if args else None
        if first.__class__ is _NDARRAY and first.dtype.itemsize != 2:
            forward = float_path(forward)  # the half dispatcher's own test (dtypes are keyed)
        entry = _Forward(
            op,
            forward,
            tuple(self._arg(a) for a in args),
            tuple((name, self._arg(v)) for name, v in kwargs.items()),
            pair,
            -1,
        )
        errors = np.geterr()
        if errors != self.ambient:
            entry.errors = errors
        if out.__class__ is _NDARRAY:  # else the result functions wrap it in a new array
            entry.out = self._slot(out)
            self.by_out[id(out)] = len(self.forwards)
        self.forwards.append(entry)

    def _arg(self, value):
        if value.__class__ is _NDARRAY:
            k = self.slots.get(id(value))
            return (_SLOT, k) if k is not None else (_CONST, value)
        if (value.__class__ is tuple or value.__class__ is list) and any(
            id(v) in self.slots for v in value if v.__class__ is _NDARRAY
        ):
            self.refused = "a forward took a container of graph arrays"
        return (_CONST, value)

    # -- the backward walk --

    def _tape(self, loss, start: int) -> _Tape:
        node = loss._node if loss.__class__ is Tensor else None
        if node is None or node.requirement is not GRAD_IN_BACKWARD or node.rule is None:
            raise _Unreplayable(
                "the loss is not an op output on the autodiff device", _with_backward(loss)
            )
        leaf_index = {}
        for i, t in enumerate(self.tensors):
            n = t._node
            if n is not None and n.requirement is GRAD_IN_BACKWARD:
                raise _Unreplayable("a tracked argument is an op output", _with_backward(loss))
            if n is not None and n.requirement is GRAD:
                leaf_index.setdefault(n.id, i)
        steps = autodiff._collect_steps(node)
        for step in steps:  # collected, not run: the eager backward after this walks again
            step.grad = None
        place = {step.id: k for k, step in enumerate(steps)}
        recorded: list[_Step] = []
        leaves: list = []  # per leaf index: an argument index, or ("const", node id)
        leaf_of: dict[int, int] = {}
        for step in steps:
            forward = self.node_forward.get(step.id)
            if forward is None or step.id < start or not self.forwards[forward].pair:
                raise _Unreplayable("a step the tape did not record", _with_backward(loss))
            parents = []
            for parent in step.parents:
                if parent is None:
                    parents.append(None)
                elif parent.id in place:
                    parents.append(place[parent.id])
                elif parent.rule is None and parent.requirement is GRAD:
                    j = leaf_of.get(parent.id)
                    if j is None:
                        j = leaf_of[parent.id] = len(leaves)
                        arg = leaf_index.get(parent.id)
                        leaves.append(arg if arg is not None else (_CONST, parent.id))
                    parents.append(-1 - j)
                else:  # a consumed step or an untracked intermediate from outside fn
                    raise _Unreplayable("a parent the tape cannot replay", _with_backward(loss))
            tracked = tuple(None if p is None else _TRACKED for p in step.parents)
            recorded.append(_Step(forward, tuple(parents), tracked))
        root = self.forwards[recorded[0].forward].out
        _mark_last_reads(self.forwards, root)
        return _Tape(self.forwards, recorded, tuple(leaves), len(self.tensors), root, node.order)


def _mark_last_reads(forwards: list[_Forward], root: int) -> None:
    """Each forward drops the slots it was the last to read: a replay holds what the eager
    run's live tensors would, not every intermediate (the root stays: it is the loss)."""
    last: dict[int, int] = {}
    for i, entry in enumerate(forwards):
        for k in _slots_of(entry):
            last[k] = i
    per: dict[int, list] = {}
    for k, i in last.items():
        if k != root:
            per.setdefault(i, []).append(k)
    for i, ks in per.items():
        forwards[i].free = tuple(ks)


def _slots_of(entry: _Forward):
    for kind, value in (*entry.args, *(v for _, v in entry.kwargs)):
        if kind is _SLOT:
            yield value


# ---- the tape ----------------------------------------------------------------------------------


class _Tape:
    """One key's forward calls and backward steps (see module)."""

    def __init__(self, forwards, steps, leaves, n_args: int, root: int, order: int) -> None:
        self.forwards = forwards
        self.steps = steps
        self.leaves = leaves
        self.n_args = n_args
        self.root = root
        self.order = order
        self.source = ""  # what a replay runs (`compile`), for reading
        self._run = None

    def compile(self) -> _Tape:
        """Generate the replay function: once, when the second recording confirmed the tape."""
        self.source, namespace = _source(self.forwards, self.steps, self.root, self.n_args)
        exec(compile(self.source, "<harness.engine.tape>", "exec"), namespace)
        self._run = namespace["run"]
        return self

    def same_as(self, other: _Tape) -> bool:
        """Both calls recorded the same tape: ops, wiring, constants, steps and leaves."""
        if (len(self.forwards), self.root, self.leaves, self.order) != (
            len(other.forwards),
            other.root,
            other.leaves,
            other.order,
        ):
            return False
        for a, b in zip(self.forwards, other.forwards, strict=True):
            if (
                a.op is not b.op
                or a.fn is not b.fn
                or a.pair != b.pair
                or a.out != b.out
                or a.errors != b.errors
            ):
                return False
            if [n for n, _ in a.kwargs] != [n for n, _ in b.kwargs]:
                return False
            if not _same_args(
                a.args + tuple(v for _, v in a.kwargs), b.args + tuple(v for _, v in b.kwargs)
            ):
                return False
        return [(s.forward, s.parents) for s in self.steps] == [
            (s.forward, s.parents) for s in other.steps
        ]

    def replay(self, tensors: list):
        value, leaves = self._run(
            [t._data for t in tensors],
            [tensors[j]._node.id if j.__class__ is int else j[1] for j in self.leaves],
        )
        grads = _new(Gradients)
        grads._grads = leaves
        return _consumed_loss(value, self.order), grads


def _source(
    forwards: list[_Forward], steps: list[_Step], root: int, n_args: int
) -> tuple[str, dict]:
    """The tape as one straight-line function `run(A, L) -> (loss array, leaf gradients)`: A
    the argument arrays, L the leaves' node ids. A loop over the tape costs about what the eager
    plumbing does; straight-line code calls the kernels with next to nothing between them.

    Forwards: `s<k>` slot variables, `F<i>` the forwards, `C<i>_<p>` constants, `v<i>` saved
    records, `E<i>` an np.errstate, `del` after a slot's last read. Backward: autodiff.
    _run_steps unrolled, `g<k>` each step's gradient (PENDING until one reaches it), the rule
    `O<i>.backward` read at each run (a replaced rule applies), summed in the walk's order."""
    ns: dict = {
        "float_path": float_path,
        "PENDING": autodiff._PENDING,  # a step's gradient before any reached it
        "ones": autodiff._ones,
        "errstate": np.errstate,
        "arity": _raise_arity,
    }
    lines = ["def run(A, L):"]
    read = {k for e in forwards for k in _slots_of(e)}
    saved_by = {step.forward for step in steps}
    lines += [f"    s{k} = A[{k}]" for k in sorted(read) if k < n_args]
    for i, e in enumerate(forwards):
        ns[f"F{i}"] = e.fn
        words = []
        for p, (kind, value) in enumerate(e.args):
            words.append(f"s{value}" if kind is _SLOT else _constant(ns, f"C{i}_{p}", value))
        for name, (kind, value) in e.kwargs:
            text = f"s{value}" if kind is _SLOT else _constant(ns, f"C{i}_{name}", value)
            words.append(f"{name}={text}")
        call = f"F{i}({', '.join(words)})"
        out = f"s{e.out}" if e.out >= 0 else "_"
        saved = f"v{i}" if i in saved_by else "_"
        target = f"{out}, {saved} = " if e.pair else ("" if e.out < 0 else f"{out} = ")
        if e.errors is None:
            lines.append(f"    {target}{call}")
        else:  # as eager: warnings the module silenced stay silent
            ns[f"E{i}"] = e.errors
            lines += [f"    with errstate(**E{i}):", f"        {target}{call}"]
        if e.free:
            lines.append("    del " + ", ".join(f"s{k}" for k in e.free))
    lines.append(f"    g0 = ones(s{root}.shape, s{root}.dtype)")
    if len(steps) > 1:
        lines.append("    " + " = ".join(f"g{k}" for k in range(1, len(steps))) + " = PENDING")
    lines += ["    leaves = {}", "    get = leaves.get"]
    for k, step in enumerate(steps):
        f = step.forward
        ns[f"O{f}"] = forwards[f].op
        ns[f"T{k}"] = step.tracked
        n = len(step.parents)
        lines += [
            f"    if g{k} is not PENDING:",
            f"        R = O{f}.backward",
            f"        if g{k}.dtype.itemsize != 2:  # the half dispatcher's test",
            "            R = float_path(R)",
            f"        r = R(v{f}, g{k}, T{k})",
            f"        if len(r) != {n}:",
            f"            arity(R, r, {n})",
        ]
        for p, j in enumerate(step.parents):
            if j is None:
                continue
            lines += [f"        gp = r[{p}]", "        if gp is not None:"]
            if j >= 0:
                lines.append(f"            g{j} = gp if g{j} is PENDING else g{j} + gp")
            else:
                lines += [
                    f"            pid = L[{-1 - j}]",
                    "            prev = get(pid)",
                    "            leaves[pid] = gp if prev is None else prev + gp",
                ]
        lines.append(f"    del g{k}, v{f}")  # released as the step runs, as eagerly
    lines.append(f"    return s{root}, leaves")
    return "\n".join(lines) + "\n", ns


def _constant(namespace: dict, name: str, value) -> str:
    namespace[name] = value
    return name


def _raise_arity(rule, grads, n: int):
    raise autodiff.rule_arity_error(rule, grads, n)


def _same_args(a: tuple, b: tuple) -> bool:
    """Slots equal, arrays and other objects the same object, Python values equal (and of one
    type: 1 and 1.0 and True are other constants)."""
    if len(a) != len(b):
        return False
    for (ka, va), (kb, vb) in zip(a, b, strict=True):
        if ka is not kb:
            return False
        if ka is _SLOT:
            if va != vb:
                return False
        elif not _same_value(va, vb):
            return False
    return True


def _same_value(a, b) -> bool:
    """One constant in both tapes: the same object, or equal Python / NumPy values of one type
    (so 1, 1.0 and True differ), containers item by item."""
    if a is b:
        return True
    cls = a.__class__
    if cls is not b.__class__:
        return False
    if cls is tuple or cls is list:
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if cls in _VALUES or isinstance(a, (np.generic, np.dtype)):
        return bool(a == b)
    return False


# Python values a forward takes as parameters, compared by value across two tapes (a float
# NaN never equals itself, so a NaN parameter keeps its key eager: correct, if slower).
# Arrays are never compared by value: a constant array must be the same object.
_VALUES = frozenset({int, float, bool, str, type(None), slice, type(Ellipsis), complex})


def _consumed_loss(value, order: int) -> Tensor:
    """The loss as the eager run leaves it after backward: its step consumed, no parents."""
    node = _new(Node)
    node.id = autodiff.next_node_id()
    node.requirement = GRAD_IN_BACKWARD
    node.parents = ()
    node.order = order
    node.rule = node.saved = node.grad = None
    t = _new(Tensor)
    t._data = value
    t.device = _AUTODIFF
    t._node = node
    return t
