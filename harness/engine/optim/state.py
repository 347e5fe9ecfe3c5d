"""Decomposition of a state into named tensors and typed scalars, burn's `RecordState`
(`crates/burn-optim/src/optim/state.rs` and its derive, `crates/burn-derive/src/record_state/
mod.rs`, read at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747).

burn derives the decomposition from a struct's field types; here a `Layout` lists the fields
with the same seven kinds, and a state value is a dict from field name to value (NumPy arrays
for tensors, Python numbers for scalars, dicts for nested states, None for an absent
optional). The naming is the derive's: a leaf is `{prefix}.{field}` (`join_path`; an empty
prefix gives the bare field), a nested state's leaves sit under `{prefix}.{field}`, a
`Vec<Tensor>` field `f` stores its length as the scalar `{prefix}.f.len` and its items as
`{prefix}.f.0`, `{prefix}.f.1`, ... (`join_index`).

`state_unflatten` follows the derive to the letter: `None` when a required leaf is absent or
a scalar holds an incompatible variant; an optional scalar of the wrong variant is `None`; an
optional nested state is `None` when nothing was recorded under its path (`has_under`), and
also when something was but it cannot be rebuilt. `strict_unflatten` is the engine's checked
form for files: every one of those cases raises `StateKeyError` naming the key and the
problem instead.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.engine.optim.burnpack import Scalar

__all__ = [
    "Field",
    "Layout",
    "StateKeyError",
    "StateSink",
    "StateSource",
    "join_index",
    "join_path",
    "nested",
    "opt_nested",
    "opt_scalar",
    "opt_tensor",
    "scalar",
    "state_flatten",
    "state_unflatten",
    "strict_unflatten",
    "tensor",
    "tensors",
]


def join_path(prefix: str, leaf: str) -> str:
    """`"prefix.leaf"`; an empty prefix gives `leaf` unchanged."""
    return f"{prefix}.{leaf}" if prefix else leaf


def join_index(prefix: str, index: int) -> str:
    """`"prefix.index"` (always dotted, as burn's: an empty prefix gives `".index"`)."""
    return f"{prefix}.{index}"


# ---- sink and source ----------------------------------------------------------------------


@dataclasses.dataclass
class StateSink:
    """The `(name, array)` tensor leaves and `(name, Scalar)` scalar leaves, in order."""

    tensors: list[tuple[str, np.ndarray]] = dataclasses.field(default_factory=list)
    scalars: list[tuple[str, Scalar]] = dataclasses.field(default_factory=list)

    def push_tensor(self, prefix: str, leaf: str, data: np.ndarray) -> None:
        self.tensors.append((join_path(prefix, leaf), data))

    def push_scalar(self, prefix: str, leaf: str, value: Scalar) -> None:
        self.scalars.append((join_path(prefix, leaf), value))


class StateSource:
    """Named tensors (taken, i.e. removed, by name) and scalars (read, left in place)."""

    def __init__(self, scalars: dict[str, Scalar] | None = None) -> None:
        self.tensors: dict[str, np.ndarray] = {}
        self.scalars: dict[str, Scalar] = dict(scalars or {})

    def insert_tensor(self, name: str, data: np.ndarray) -> None:
        self.tensors[name] = data

    def take_tensor(self, prefix: str, leaf: str) -> np.ndarray | None:
        return self.tensors.pop(join_path(prefix, leaf), None)

    def take_scalar(self, prefix: str, leaf: str) -> Scalar | None:
        return self.scalars.get(join_path(prefix, leaf))

    def has_under(self, prefix: str) -> bool:
        """Whether any leaf's name starts with `"{prefix}."`."""
        head = join_path(prefix, "")
        return any(k.startswith(head) for k in self.tensors) or any(
            k.startswith(head) for k in self.scalars
        )


# ---- layouts ------------------------------------------------------------------------------

# Scalar field types: the burn_pack variant `From` gives, and the range `TryFrom` accepts.
_INT_RANGES = {
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
    "usize": (0, 2**64 - 1),
}
SCALAR_TYPES = (*_INT_RANGES, "f32", "f64", "bool")


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a derived state: `kind` is one of the derive's seven field shapes
    (`tensor`, `opt_tensor`, `vec_tensor`, `scalar`, `opt_scalar`, `nested`, `opt_nested`,
    built by the functions below)."""

    name: str
    kind: str
    scalar_type: str | None = None
    layout: Layout | None = None


@dataclasses.dataclass(frozen=True)
class Layout:
    """A state struct: its (burn) name and its fields in declaration order."""

    name: str
    fields: tuple[Field, ...]


def tensor(name: str) -> Field:
    """A `Tensor<D>` field."""
    return Field(name, "tensor")


def opt_tensor(name: str) -> Field:
    """An `Option<Tensor<D>>` field."""
    return Field(name, "opt_tensor")


def tensors(name: str) -> Field:
    """A `Vec<Tensor<D>>` field."""
    return Field(name, "vec_tensor")


def scalar(name: str, scalar_type: str) -> Field:
    """A scalar field of Rust type `scalar_type` (`usize`, `i64`, `f64`, `bool`, ...)."""
    if scalar_type not in SCALAR_TYPES:
        raise ValueError(f"scalar {name!r}: unknown type {scalar_type!r}")
    return Field(name, "scalar", scalar_type)


def opt_scalar(name: str, scalar_type: str) -> Field:
    """An `Option<scalar>` field."""
    return dataclasses.replace(scalar(name, scalar_type), kind="opt_scalar")


def nested(name: str, layout: Layout) -> Field:
    """A nested state field."""
    return Field(name, "nested", layout=layout)


def opt_nested(name: str, layout: Layout) -> Field:
    """An `Option<nested state>` field."""
    return Field(name, "opt_nested", layout=layout)


def to_scalar(value, scalar_type: str) -> Scalar:
    """burn_pack's `Scalar::from(value)` for a field of `scalar_type`."""
    if scalar_type == "bool":
        return Scalar("Bool", bool(value))
    if scalar_type in ("f32", "f64"):
        # `From<f32>` widens: the f32 value, exactly, as an f64.
        return Scalar("Float", float(np.float32(value)) if scalar_type == "f32" else float(value))
    low, high = _INT_RANGES[scalar_type]
    if not isinstance(value, (int, np.integer)) or not low <= int(value) <= high:
        raise ValueError(f"{value!r} is not a {scalar_type}")
    return Scalar("Int" if scalar_type[0] == "i" else "UInt", int(value))


def from_scalar(s: Scalar, scalar_type: str):
    """burn_pack's `TryFrom<Scalar>` for `scalar_type`; None where it returns an error."""
    if scalar_type == "bool":
        return s.value if s.kind == "Bool" else None
    if scalar_type in ("f32", "f64"):
        if s.kind == "Bool":
            return None
        return float(np.float32(s.value)) if scalar_type == "f32" else float(s.value)
    low, high = _INT_RANGES[scalar_type]
    if s.kind in ("Int", "UInt") and low <= s.value <= high:
        return int(s.value)
    return None


# ---- flatten / unflatten ------------------------------------------------------------------


def state_flatten(layout: Layout, value: dict, prefix: str, out: StateSink) -> None:
    """Push `value`'s leaves under `prefix` into `out` (burn's `state_flatten`)."""
    for f in layout.fields:
        v = value[f.name]
        if f.kind in ("tensor", "opt_tensor"):
            if v is not None or f.kind == "tensor":
                out.push_tensor(prefix, f.name, _array(v, join_path(prefix, f.name)))
        elif f.kind == "vec_tensor":
            out.push_scalar(prefix, f"{f.name}.len", to_scalar(len(v), "usize"))
            for index, item in enumerate(v):
                leaf = join_index(f.name, index)
                out.push_tensor(prefix, leaf, _array(item, join_path(prefix, leaf)))
        elif f.kind in ("scalar", "opt_scalar"):
            if v is not None or f.kind == "scalar":
                out.push_scalar(prefix, f.name, to_scalar(v, f.scalar_type))
        elif v is not None or f.kind == "nested":
            state_flatten(f.layout, v, join_path(prefix, f.name), out)


def _array(v, key: str) -> np.ndarray:
    if not isinstance(v, np.ndarray):
        raise TypeError(f"{key}: expected a NumPy array, got {type(v).__name__}")
    return v


class StateKeyError(ValueError):
    """A leaf a state needs is absent or unusable: `key` and `problem`."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


def state_unflatten(layout: Layout, prefix: str, src: StateSource) -> dict | None:
    """Rebuild a value from `src` (burn's `state_unflatten`): None when it cannot be."""
    try:
        return _unflatten(layout, prefix, src, strict=False)
    except StateKeyError:
        return None


def strict_unflatten(layout: Layout, prefix: str, src: StateSource) -> dict:
    """Rebuild a value from `src`, raising `StateKeyError` where burn's gives None (engine
    extension, for files: a broken leaf is an error, not a silently dropped state)."""
    return _unflatten(layout, prefix, src, strict=True)


def _unflatten(layout: Layout, prefix: str, src: StateSource, strict: bool) -> dict:
    out = {}
    for f in layout.fields:
        key = join_path(prefix, f.name)
        if f.kind == "tensor":
            out[f.name] = _required(src.take_tensor(prefix, f.name), key, "tensor")
        elif f.kind == "opt_tensor":
            out[f.name] = src.take_tensor(prefix, f.name)
        elif f.kind == "vec_tensor":
            length = _scalar_leaf(src, prefix, f"{f.name}.len", "usize", strict, required=True)
            out[f.name] = [
                _required(src.take_tensor(prefix, join_index(f.name, i)), f"{key}.{i}", "tensor")
                for i in range(length)
            ]
        elif f.kind in ("scalar", "opt_scalar"):
            required = f.kind == "scalar"
            out[f.name] = _scalar_leaf(src, prefix, f.name, f.scalar_type, strict, required)
        elif f.kind == "nested":
            out[f.name] = _unflatten(f.layout, key, src, strict)
        elif not src.has_under(key):
            out[f.name] = None
        elif strict:
            out[f.name] = _unflatten(f.layout, key, src, strict)
        else:
            out[f.name] = state_unflatten(f.layout, key, src)
    return out


def _required(value, key: str, what: str):
    if value is None:
        raise StateKeyError(key, f"missing {what}")
    return value


def _scalar_leaf(src, prefix, leaf, scalar_type, strict, required):
    key = join_path(prefix, leaf)
    s = src.take_scalar(prefix, leaf)
    if s is None:
        if required:
            raise StateKeyError(key, "missing scalar")
        return None
    value = from_scalar(s, scalar_type)
    if value is None and (required or strict):
        raise StateKeyError(key, f"scalar {s.kind}({s.value!r}) does not fit a {scalar_type}")
    return value
