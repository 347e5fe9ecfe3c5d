"""Optimizer and scheduler records in burn's layout, to and from burnpack files (burn's
`crates/burn-optim/src/optim/module/{module_optimizer,record/mod}.rs`, `lr_scheduler/base.rs`
and each optimizer's and scheduler's `#[derive(RecordState)]` struct, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

    save_optimizer(optim, "optim.bpk", module=model)   # module: optional, for ranks and paths
    optim = load_optimizer(SgdConfig(...).init(), "optim.bpk", module=model)
    save_scheduler(scheduler, "lr.bpk"); load_scheduler(fresh_scheduler, "lr.bpk")

Each param's state is flattened (see `state`) under the prefix `str(param_id.val())` into
burn's struct layout (`LAYOUTS`), e.g. Adam's `{id}.momentum.time` (UInt), `{id}.momentum.
moment_1`, `{id}.momentum.moment_2` (tensors carrying the param id); `{id}.__rank` holds the
param's rank; the string metadata maps `str(id)` to the param's module path. A scheduler's
record is scalars only (`current_iter`, ...; composed and sequential children under `0.`,
`1.`, ...). Round trips are exact: the arrays' bytes and dtypes, the counters' values.

Engine extensions and differences from burn, each deliberate:
- the metadata also holds `optimizer` (the base optimizer's kind, e.g. `Adam`; burn's loader
  ignores keys that are not param ids) and `optimizer.<id>` for a state whose group's
  optimizer is of another kind (`with_group`); loading rebuilds each state in the layout of
  the group its id and stored path resolve to now, as burn's `optim_from_param(id, path)`,
  and checks the stored kind against it;
- loading is strict: burn's `load_record` silently skips a param whose state cannot be rebuilt
  (it restarts on the next step) and a scheduler keeps its counter when its key is absent;
  here each such case raises `RecordError`, `<file>: <key>: <problem>`, as do a tensor of
  another rank than `__rank`, tensors of one state with different shapes or dtypes, and (given
  `module`) a state whose param is absent or of another shape or dtype;
- RmsProp's `centered.avg` is written as burn computes it (`square_avg`, centered `square_avg
  - grad_avg^2`; the engine recomputes it at each step instead of storing it) and read and
  dropped, as burn's next step does;
- a state with no tensor (plain SGD) has no rank unless `module` is given; without it the
  state is left out of the file, which burn's loader treats the same way as a present empty
  state for plain SGD (nothing to rebuild; the step needs none);
- LBFGS's state is one module-level struct (burn's `LBFGSState`, flattened at the root, tensors
  without param ids, `lbfgs.rs` `to_record`); the same four functions save and load it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.engine.lr_scheduler.module_lr_scheduler import ModuleLrScheduler
from harness.engine.module import Module, ParamId
from harness.engine.optim import groups
from harness.engine.optim.adagrad import AdaGrad, AdaGradState
from harness.engine.optim.adam import Adam, AdamW, AdaptiveMomentumState
from harness.engine.optim.adan import Adan, AdaptiveNesterovMomentumState
from harness.engine.optim.base import ModuleOptimizer
from harness.engine.optim.burnpack import (
    BurnpackError,
    Pack,
    PackTensor,
    Scalar,
    pack_bytes,
    read_pack,
    resolve_load_path,
    save_pack,
    unpack_bytes,
)
from harness.engine.optim.lbfgs import LBFGS, LBFGSState
from harness.engine.optim.muon import Muon
from harness.engine.optim.rmsprop import RmsProp, RmsPropState
from harness.engine.optim.sgd import Sgd, SgdState
from harness.engine.optim.state import (
    Layout,
    StateKeyError,
    StateSink,
    StateSource,
    from_scalar,
    join_path,
    nested,
    opt_nested,
    opt_scalar,
    opt_tensor,
    scalar,
    state_flatten,
    strict_unflatten,
    tensor,
    tensors,
    to_scalar,
)
from harness.engine.untrusted import clip, shown

__all__ = [
    "LAYOUTS",
    "RecordError",
    "load_optimizer",
    "load_optimizer_bytes",
    "load_scheduler",
    "optimizer_bytes",
    "optimizer_pack",
    "save_optimizer",
    "save_scheduler",
    "scheduler_pack",
]

RANK_KEY = "__rank"
KIND_KEY = "optimizer"


class RecordError(ValueError):
    """A record that cannot be written or loaded: one line, `<file>: <key>: <problem>`."""


# ---- burn's state structs -----------------------------------------------------------------

_MOMENTUM = Layout("MomentumState", (tensor("velocity"),))
_ADAPTIVE = Layout(
    "AdaptiveMomentumState",
    (scalar("time", "usize"), tensor("moment_1"), tensor("moment_2"), opt_tensor("max_moment_2")),
)
_NESTEROV = Layout(
    "AdaptiveNesterovMomentumState",
    (
        scalar("time", "usize"),
        tensor("exp_avg"),
        tensor("exp_avg_sq"),
        tensor("exp_avg_diff"),
        tensor("neg_pre_grad"),
    ),
)
LAYOUTS: dict[str, Layout] = {
    "Sgd": Layout("SgdState", (opt_nested("momentum", _MOMENTUM),)),
    "Muon": Layout("MuonState", (nested("momentum", _MOMENTUM),)),
    "Adam": Layout("AdamState", (nested("momentum", _ADAPTIVE),)),
    "AdamW": Layout("AdamWState", (nested("momentum", _ADAPTIVE),)),
    "Adan": Layout("AdanState", (nested("momentum", _NESTEROV),)),
    "AdaGrad": Layout(
        "AdaGradState",
        (nested("lr_decay", Layout("LrDecayState", (scalar("time", "usize"), tensor("sum")))),),
    ),
    "RmsProp": Layout(
        "RmsPropState",
        (
            nested("square_avg", Layout("SquareAvgState", (tensor("square_avg"),))),
            nested("centered", Layout("CenteredState", (opt_tensor("grad_avg"), tensor("avg")))),
            opt_nested("momentum", Layout("RmsPropMomentumState", (tensor("buf"),))),
        ),
    ),
}
_LBFGS = Layout(
    "LBFGSState",
    (
        tensors("history_s"),
        tensors("history_y"),
        opt_tensor("d"),
        opt_scalar("t", "f64"),
        opt_tensor("prev_flat_grad"),
        opt_scalar("prev_loss", "f64"),
        scalar("g_iter", "usize"),
    ),
)
_KINDS = {Sgd: "Sgd", Muon: "Muon", Adam: "Adam", AdamW: "AdamW", Adan: "Adan"}
_KINDS.update({AdaGrad: "AdaGrad", RmsProp: "RmsProp"})


def _to_value(kind: str, state) -> dict:
    """The engine state as a value of burn's struct (arrays copied)."""
    c = np.copy
    if kind in ("Sgd", "Muon"):
        return {"momentum": None if state.velocity is None else {"velocity": c(state.velocity)}}
    if kind in ("Adam", "AdamW"):
        max_2 = None if state.max_moment_2 is None else c(state.max_moment_2)
        moments = {"moment_1": c(state.moment_1), "moment_2": c(state.moment_2)}
        return {"momentum": {"time": state.time, **moments, "max_moment_2": max_2}}
    if kind == "Adan":
        names = ("exp_avg", "exp_avg_sq", "exp_avg_diff", "neg_pre_grad")
        return {"momentum": {"time": state.time, **{n: c(getattr(state, n)) for n in names}}}
    if kind == "AdaGrad":
        return {"lr_decay": {"time": state.time, "sum": c(state.sum)}}
    grad_avg = state.grad_avg
    avg = state.square_avg if grad_avg is None else state.square_avg - np.square(grad_avg)
    return {
        "square_avg": {"square_avg": c(state.square_avg)},
        "centered": {"grad_avg": None if grad_avg is None else c(grad_avg), "avg": c(avg)},
        "momentum": None if state.buf is None else {"buf": c(state.buf)},
    }


def _from_value(kind: str, value: dict):
    """The engine state from a value of burn's struct."""
    if kind in ("Sgd", "Muon"):
        return SgdState(None if value["momentum"] is None else value["momentum"]["velocity"])
    if kind in ("Adam", "AdamW"):
        m = value["momentum"]
        return AdaptiveMomentumState(m["time"], m["moment_1"], m["moment_2"], m["max_moment_2"])
    if kind == "Adan":
        m = value["momentum"]
        arrays = (m["exp_avg"], m["exp_avg_sq"], m["exp_avg_diff"], m["neg_pre_grad"])
        return AdaptiveNesterovMomentumState(m["time"], *arrays)
    if kind == "AdaGrad":
        return AdaGradState(value["lr_decay"]["time"], value["lr_decay"]["sum"])
    momentum = value["momentum"]
    return RmsPropState(
        value["square_avg"]["square_avg"],
        value["centered"]["grad_avg"],
        None if momentum is None else momentum["buf"],
    )


def _kind_of(per_tensor, source: str) -> str:
    kind = _KINDS.get(type(per_tensor))
    if kind is None:
        name = type(per_tensor).__name__
        raise RecordError(f"{source}: {KIND_KEY}: optimizer kind {name!r} has no record layout")
    return kind


def _state_kind(optim: ModuleOptimizer, pid: ParamId, source: str) -> str:
    """The kind of the optimizer that owns `pid`'s state: its group's (its context), else the
    base optimizer's."""
    context = None if optim.grouping is None else optim.grouping.contexts.get(pid)
    return _kind_of(optim.optim if context is None else context[0], source)


def _kind_key(prefix: str) -> str:
    """The metadata key naming one state's kind when it is not the base optimizer's."""
    return join_path(KIND_KEY, prefix)


# ---- optimizer records --------------------------------------------------------------------


def optimizer_pack(optim: ModuleOptimizer | LBFGS, module: Module | None = None) -> Pack:
    """burn's `ModuleOptimizer::to_record` (or `LBFGS::to_record`), as a burnpack container
    (copies of the state)."""
    if isinstance(optim, LBFGS):
        return _lbfgs_pack(optim.state)
    base_kind = _kind_of(optim.optim, "<record>")
    params = {} if module is None else {p.id: (path, p) for path, p in module.params()}
    tensors: list[PackTensor] = []
    scalars: dict[str, Scalar] = {}
    paths = {KIND_KEY: base_kind}
    # Sorted by prefix: the file does not depend on the order the params were stepped in.
    for prefix, pid, state in sorted((str(int(p)), p, s) for p, s in optim.records.items()):
        kind = _state_kind(optim, pid, "<record>")
        if kind != base_kind:
            paths[_kind_key(prefix)] = kind
        sink = StateSink()
        state_flatten(LAYOUTS[kind], _to_value(kind, state), prefix, sink)
        path, param = params.get(pid, (optim.paths.get(pid), None))
        if sink.tensors:
            rank = sink.tensors[0][1].ndim
        elif param is not None:
            rank = len(param.val().shape)
        else:
            continue  # no tensor, no rank known: see the module docstring
        scalars[join_path(prefix, RANK_KEY)] = to_scalar(rank, "usize")
        if path is not None:
            paths[prefix] = path
        tensors += [PackTensor(name, data, int(pid)) for name, data in sink.tensors]
        scalars.update(sink.scalars)
    return Pack(tensors, scalars, paths)


def optimizer_bytes(optim: ModuleOptimizer | LBFGS, module: Module | None = None) -> bytes:
    """burn's `ModuleOptimizer::into_bytes`."""
    return pack_bytes(optimizer_pack(optim, module))


def save_optimizer(optim: ModuleOptimizer | LBFGS, path, module: Module | None = None) -> str:
    """burn's `ModuleOptimizer::save`, atomically; returns the path written."""
    return str(save_pack(path, optimizer_pack(optim, module)))


def load_optimizer(optim: ModuleOptimizer | LBFGS, path, module: Module | None = None):
    """burn's `ModuleOptimizer::load`: `optim` with the file's state (strict, see above)."""
    pack, path = _read(path)
    return _load_pack(optim, pack, str(path), module)


def load_optimizer_bytes(optim: ModuleOptimizer | LBFGS, data: bytes, module: Module | None = None):
    """burn's `ModuleOptimizer::from_bytes`."""
    try:
        pack = unpack_bytes(data)
    except BurnpackError as exc:
        raise RecordError(str(exc)) from None
    return _load_pack(optim, pack, "<bytes>", module)


def _read(path) -> tuple[Pack, Path]:
    """The container at `path` (burn's default extension resolved) and the path read; a file
    that cannot be read or parsed is a RecordError naming it."""
    path = resolve_load_path(path)
    try:
        return read_pack(path), path
    except BurnpackError as exc:
        raise RecordError(str(exc)) from None


def _lbfgs_pack(state: LBFGSState) -> Pack:
    sink = StateSink()
    state_flatten(_LBFGS, vars(state), "", sink)
    tensors_ = [PackTensor(name, data.copy()) for name, data in sink.tensors]
    return Pack(tensors_, dict(sink.scalars), {KIND_KEY: "LBFGS"})


def _load_lbfgs(optim: LBFGS, pack: Pack, source: str) -> LBFGS:
    """burn's `LBFGS::load_record`, strict: every leaf present and typed."""
    _check_kind(source, KIND_KEY, pack.metadata.get(KIND_KEY), "LBFGS")
    src = StateSource(pack.scalars)
    for t in pack.tensors:
        src.insert_tensor(t.name, t.array)
    value = _unflatten(source, _LBFGS, "", src, "LBFGS")
    _check_all_taken(source, src, "LBFGS")
    optim.state = LBFGSState(**value)
    return optim


def _check_kind(source: str, key: str, stored: str | None, kind: str, where: str = "") -> None:
    """The kind a file stores under `key` (None: not stored) is the kind loading into."""
    if stored is not None and stored != kind:
        known = "" if stored in LAYOUTS or stored == "LBFGS" else "unknown "
        raise RecordError(
            f"{source}: {key}: the file holds {known}optimizer kind {shown(stored)}, the "
            f"optimizer is {kind!r}{where}"
        )


def _unflatten(source: str, layout: Layout, prefix: str, src: StateSource, kind: str) -> dict:
    try:
        return strict_unflatten(layout, prefix, src)
    except StateKeyError as exc:
        raise RecordError(f"{source}: {exc.key}: {exc.problem} ({kind} state)") from None


def _check_all_taken(source: str, src: StateSource, kind: str) -> None:
    """No tensor of the file is left over once every state has taken its own."""
    leftover = sorted(src.tensors)
    if leftover:
        raise RecordError(f"{source}: {clip(leftover[0])}: unexpected tensor for a {kind} state")


def _load_pack(optim: ModuleOptimizer | LBFGS, pack: Pack, source: str, module: Module | None):
    """burn's `load_record`: each state rebuilt in the layout of the group its id and stored
    path resolve to now (burn's `optim_from_param(id, path)`), then routed by `load_record`."""
    if isinstance(optim, LBFGS):
        return _load_lbfgs(optim, pack, source)
    base_kind = pack.metadata.get(KIND_KEY)
    if base_kind is not None and base_kind not in LAYOUTS:  # LBFGS or unknown: no per-param
        _check_kind(source, KIND_KEY, base_kind, _kind_of(optim.optim, source))  # layout
    src = StateSource(pack.scalars)
    ranks: dict[int, int] = {}
    for key, s in pack.scalars.items():
        head, _, leaf = key.rpartition(".")
        if leaf == RANK_KEY:
            pid = _param_id(head)
            rank = None if pid is None else from_scalar(s, "usize")
            if rank is None:
                raise RecordError(
                    f"{source}: {clip(key)}: not a param id's rank ({s.kind} {shown(s.value)})"
                )
            ranks[pid] = rank
    for t in pack.tensors:
        if t.param_id is None:
            raise RecordError(f"{source}: {clip(t.name)}: tensor without a param id")
        ranks.setdefault(t.param_id, t.array.ndim)
        src.insert_tensor(t.name, t.array)
    params = {} if module is None else {p.id: p for _, p in module.params()}
    records, paths = {}, {}
    for pid, rank in sorted(ranks.items()):
        prefix, param_id = str(pid), ParamId(pid)
        path = pack.metadata.get(prefix)
        kind = _kind_of(groups.resolve(optim, param_id, path)[0], source)
        key = _kind_key(prefix) if _kind_key(prefix) in pack.metadata else KIND_KEY
        _check_kind(source, key, pack.metadata.get(key), kind, f" (param {prefix})")
        value = _unflatten(source, LAYOUTS[kind], prefix, src, kind)
        records[param_id] = _from_value(kind, value)
        if path is not None:
            paths[param_id] = path
        _check_arrays(source, prefix, rank, value, params, pid)
    _check_all_taken(source, src, str(base_kind))
    # The loaded states are this call's own: no copy needed, only burn's routing.
    optim.records, optim.paths = records, paths
    groups.loaded(optim)
    return optim


def _param_id(text: str) -> int | None:
    """The param id `text` spells (burn's `ParamId` is a u64 written in ASCII decimal), or
    None: `str.isdigit` alone accepts "²" and "٣", which `int()` refuses or reads."""
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        return None
    value = int(text)
    return value if value < 1 << 64 else None


def _check_arrays(source, prefix, rank, value, params, pid) -> None:
    """Every array of one state: the state's rank, one shape and dtype, the param's if known."""
    arrays = list(_leaves(prefix, value))
    if params and pid not in params:
        raise RecordError(f"{source}: {prefix}: no param with this id in the module")
    if params:
        want = params[pid].val()
        shape, dtype = tuple(want.shape), np.dtype(want.dtype)
    elif arrays:
        shape, dtype = arrays[0][1].shape, arrays[0][1].dtype
    for key, array in arrays:
        if array.ndim != rank:
            raise RecordError(f"{source}: {key}: rank {array.ndim}, the state's rank is {rank}")
        if array.shape != shape or array.dtype != dtype:
            raise RecordError(
                f"{source}: {key}: {array.dtype} {list(array.shape)}, expected "
                f"{dtype} {list(shape)}"
            )


def _leaves(prefix: str, value):
    for name, v in value.items():
        key = join_path(prefix, name)
        if isinstance(v, np.ndarray):
            yield key, v
        elif isinstance(v, dict):
            yield from _leaves(key, v)


# ---- scheduler records --------------------------------------------------------------------


# Each scheduler state field's Rust type (burn's `*LrSchedulerState` structs).
def _scheduler_types(scheduler, prefix: str, source: str) -> dict[str, str]:
    """Every record key of `scheduler` with its Rust type, children under `"<index>."`."""
    state = getattr(type(scheduler), "_state", None)  # the scheduler's own keys and types
    if state is None:
        name = type(scheduler).__name__
        raise RecordError(f"{source}: {prefix or '<root>'}: scheduler {name!r} has no record")
    out = {join_path(prefix, key): t for key, (_, t) in state.items()}
    for index, child in enumerate(_children(scheduler)):
        out.update(_scheduler_types(child, join_path(prefix, str(index)), source))
    return out


def _children(scheduler) -> list:
    """The schedulers whose records sit under `"<index>."`: a composed or sequential one's
    children, a `ModuleLrScheduler`'s group schedulers (the base first)."""
    if isinstance(scheduler, ModuleLrScheduler):
        return [child for _, child in scheduler.groups]
    return list(getattr(scheduler, "schedulers", ()))


def scheduler_pack(scheduler) -> Pack:
    """burn's `LrSchedulerRecord` of `scheduler.to_record()`: typed scalars, no tensors."""
    record = scheduler.to_record()
    types = _scheduler_types(scheduler, "", "<record>")
    untyped = sorted(set(record) - set(types))  # e.g. a custom scheduler's own to_record
    if untyped:
        name = type(scheduler).__name__
        raise RecordError(f"<record>: {untyped[0]}: no record type for this key ({name})")
    return Pack([], {key: to_scalar(record[key], t) for key, t in types.items()}, {})


def save_scheduler(scheduler, path) -> str:
    """burn's `LrSchedulerRecord::save` of the scheduler's record, atomically."""
    return str(save_pack(path, scheduler_pack(scheduler)))


def load_scheduler(scheduler, path):
    """`scheduler.load_record` of the file's record (strict: every key present and typed)."""
    pack, path = _read(path)
    if pack.tensors:
        name = clip(pack.tensors[0].name)
        raise RecordError(f"{path}: {name}: a scheduler record has no tensors")
    record = {}
    for key, t in _scheduler_types(scheduler, "", str(path)).items():
        s = pack.scalars.get(key)
        value = None if s is None else from_scalar(s, t)
        if value is None:
            problem = "missing scalar" if s is None else f"{s.kind}({s.value!r}) is not a {t}"
            raise RecordError(f"{path}: {key}: {problem} ({type(scheduler).__name__})")
        record[key] = value
    return scheduler.load_record(record)
