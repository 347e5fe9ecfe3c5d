"""Modules and parameters (reference-engine.md section 3): ParamId, Param, Module, the `Config`
mixin of every config type, `seed()` and `MovedValueError`.

A module is plain data: its fields are walked in declaration (= assignment) order, exactly like
burn's `#[derive(Module)]`. Params and sub-modules are found by type; anything else (floats,
configs, activations without params) is carried along untouched. Updates never mutate a module:
`map()` builds a new one, and the optimizer's `step()` *consumes* the module it is given.
"""

from __future__ import annotations

import base64
import dataclasses
import random
from collections.abc import Callable, Iterator

import numpy as np

from harness.engine.tensor import Tensor

__all__ = [
    "Config",
    "Module",
    "MovedValueError",
    "Param",
    "ParamId",
    "consume",
    "consume_map",
    "params_of",
    "rust_float",
    "seed",
    "value_rng",
]


# ---- randomness ---------------------------------------------------------------------------


class _Rngs:
    """The two sources of randomness: ParamIds and tensor values (inits, dropout masks).

    Unseeded, both come from OS entropy, so every run gives new ParamIds (as burn's
    `IdGenerator`). `seed(n)` makes inits, dropout masks *and* ParamIds reproducible.
    """

    ids = random.Random()
    values = np.random.default_rng()


def seed(n: int) -> None:
    """Seed the engine's randomness (burn's `Device::seed`): inits, dropout masks, ParamIds."""
    _Rngs.ids = random.Random(n)
    _Rngs.values = np.random.default_rng(n)


def value_rng() -> np.random.Generator:
    """The generator used for parameter inits and dropout masks."""
    return _Rngs.values


def rust_float(value: float, f32: bool = False) -> str:
    """Format a float as Rust's `Display` does (`2` not `2.0`, no exponent), for error texts."""
    x = np.float32(value) if f32 else np.float64(value)
    if not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return np.format_float_positional(x, unique=True, trim="-")


# ---- configs ------------------------------------------------------------------------------


class Config:
    """Mixin for config dataclasses: burn's `#[derive(Config)]` builder methods.

    `cfg.with_epsilon(1e-8)` returns a copy with that field replaced, so a burn line
    `AdamConfig::new().with_epsilon(1e-8)` reads `AdamConfig().with_epsilon(1e-8)`.
    """

    def __getattr__(self, name: str):
        if name.startswith("with_"):
            field = name[5:]
            if field in {f.name for f in dataclasses.fields(self)}:
                return lambda value: dataclasses.replace(self, **{field: value})
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


# ---- ParamId / Param ----------------------------------------------------------------------


class ParamId(int):
    """A parameter's identity: a random u64, printed like burn (`BASE32_DNSSEC` of its 8
    little-endian bytes: lowercase base32hex, no padding, 13 characters, alphabet 0-9a-v).

    An `int` subclass, so hashing and dict lookups by id stay in C on the optimizer's path.

    PyTorch difference: an optimizer binds to parameter *objects* at construction; burn's
    optimizer finds state and gradients by ParamId at every step.
    """

    __slots__ = ()

    @classmethod
    def new(cls) -> ParamId:
        """A fresh random id (reproducible only after `seed(n)`)."""
        return cls(_Rngs.ids.getrandbits(64))

    @property
    def value(self) -> int:
        """The u64 value."""
        return int(self)

    def val(self) -> int:
        """The u64 value (burn's `val()`)."""
        return int(self)

    def encode(self) -> str:
        """burn's text form: 13 lowercase base32hex characters."""
        raw = base64.b32hexencode(int(self).to_bytes(8, "little"))
        return raw.decode("ascii").rstrip("=").lower()

    def __str__(self) -> str:
        return self.encode()

    def __format__(self, spec: str) -> str:
        return format(self.encode(), spec)

    def __repr__(self) -> str:
        return f"ParamId({self.encode()})"


class Param:
    """A parameter: a ParamId and a tensor. `val()` returns the same tensor (the same graph
    node) every time, so gradients from several uses in one forward pass add up.

    Like burn's `Param<Tensor>`, which derefs to the tensor, tensor methods work on the param
    directly (`param.grad(grads)`, `param.shape`).
    """

    __slots__ = ("_value", "id")

    def __init__(self, id: ParamId, value: Tensor) -> None:
        self.id = id
        self._value = value

    @classmethod
    def from_tensor(cls, tensor: Tensor) -> Param:
        """A new param with a fresh id; marks `tensor` as requiring grad (burn's
        `Param::from_tensor`), which is a no-op on a plain device."""
        return cls(ParamId.new(), _mark(tensor))

    @classmethod
    def initialized(cls, id: ParamId, value: Tensor) -> Param:
        """A param with a given id and value (burn's `Param::initialized`)."""
        return cls(id, value)

    def val(self) -> Tensor:
        """The tensor: the same node at every call."""
        return self._value

    def __getattr__(self, name: str):
        # Only reached for names Param lacks; dunders and our own slot stay ordinary misses
        # so copy/pickle machinery never recurses through a half-built object.
        if name.startswith("__") or name == "_value":
            raise AttributeError(name)
        return getattr(self._value, name)

    def __repr__(self) -> str:
        return f"Param(id={self.id.encode()}, shape={list(self._value.shape)})"


def _mark(tensor: Tensor) -> Tensor:
    """`require_grad()` on an autodiff tensor; plain tensors stay as they are (as in burn)."""
    return tensor.require_grad() if tensor.is_autodiff() else tensor


# ---- moved values -------------------------------------------------------------------------

MOVED_MESSAGE = (
    "use of moved value: this {name} was moved into `optim.step(lr, model, grads)`, which "
    "returns the updated module; write `model = optim.step(lr, model, grads)` "
    "(pass `model.clone()` to keep using the original)"
)


class MovedValueError(RuntimeError):
    """Use of a module after `optim.step()` consumed it: the Python form of Rust's E0382
    ("borrow of moved value"). In burn the mistake does not compile; here it raises on the
    first attribute access or call, and the message names the fix.

    PyTorch difference: `optimizer.step()` updates the model in place and returns nothing, so
    the model stays usable after the step; here the step takes the model by value.
    """


_TOMBSTONES: dict[type, type] = {}


def _tombstone(cls: type) -> type:
    """A subclass of `cls` whose every attribute access raises MovedValueError.

    Swapping `__class__` costs nothing on the normal forward path (no flag to check) and
    keeps the object's layout, so it works for any plain or dataclass module.
    """
    tomb = _TOMBSTONES.get(cls)
    if tomb is not None:
        return tomb
    message = MOVED_MESSAGE.format(name=cls.__name__)

    def __getattribute__(self, name):
        if name == "__class__":  # isinstance() and repr machinery stay usable
            return object.__getattribute__(self, name)
        raise MovedValueError(message)

    def __call__(self, *args, **kwargs):
        raise MovedValueError(message)

    def __repr__(self):
        return f"<moved {cls.__name__}>"

    namespace = {
        "__getattribute__": __getattribute__,
        "__call__": __call__,
        "__repr__": __repr__,
        "__slots__": (),
        "__module__": cls.__module__,
    }
    tomb = type(f"Moved{cls.__name__}", (cls,), namespace)
    _TOMBSTONES[cls] = tomb
    return tomb


def consume(module: Module) -> None:
    """Mark `module` as moved: any later use raises MovedValueError."""
    # object.__setattr__: frozen dataclass modules forbid ordinary attribute assignment.
    cls = module.__class__
    object.__setattr__(module, "__class__", _TOMBSTONES.get(cls) or _tombstone(cls))


def consume_map(module: Module, fn: Callable[[Param], Param]) -> Module:
    """`module.map(fn)` for a module that is being moved (the optimizer step).

    Each top-level field is taken out of the old module while its replacement is built, so old
    tensors are freed as soon as their new values exist (peak memory stays at one parameter set
    plus one field, not two full sets). The old module is marked moved in any case, as a Rust
    value is gone once moved, even if the callee panics.
    """
    if not isinstance(module, Module):
        raise TypeError(f"expected a Module, got {type(module).__name__}")
    fields = vars(module)
    new = object.__new__(type(module))
    out = new.__dict__
    try:
        for name in list(fields):
            value = fields.pop(name)
            # The two common cases inline (see Module.map), the rest through _map_value.
            if value.__class__ is Param:
                out[name] = fn(value)
            elif isinstance(value, Module):
                out[name] = value.map(fn)
            else:
                out[name] = _map_value(value, fn)
    finally:
        consume(module)
    return new


# ---- Module -------------------------------------------------------------------------------


def _children(value) -> Iterator[tuple[str, object]]:
    """The walkable items of one field value: a Param, a Module, or a list/tuple of them."""
    if isinstance(value, (Param, Module)):
        yield "", value
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            for suffix, child in _children(item):
                yield f".{index}{suffix}", child


def params_of(module: Module) -> list[Param]:
    """The params of `module` in declaration order, without paths (the optimizer's hot path:
    no generators, no string formatting)."""
    out: list[Param] = []
    _collect(module.__dict__.values(), out)
    return out


def _collect(values, out: list[Param]) -> None:
    for value in values:
        if value.__class__ is Param:
            out.append(value)
        elif isinstance(value, Module):
            # The fields of a layer inline (a call per sub-module is most of this walk's cost).
            for field in value.__dict__.values():
                if field.__class__ is Param:
                    out.append(field)
                else:
                    _collect((field,), out)
        elif isinstance(value, (list, tuple)):
            _collect(value, out)
        elif isinstance(value, Param):  # a Param subclass (rare): after the fast checks
            out.append(value)


class Module:
    """Base of every module. Subclasses assign their fields in `__init__` (or are
    dataclasses); fields are walked in declaration order, like burn's derive.

    A field may hold a Param, a Module, a list/tuple of those, or anything else (kept as is,
    shared between copies). Modules are never mutated by the engine: `map()` and the optimizer
    build new modules, and `clone()` shares ParamIds and tensors.

    PyTorch difference: `nn.Module` parameters are updated in place, so every alias sees the
    step; here a clone taken before a step keeps the old values.
    """

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- walking --

    def named_params(self, prefix: str = "") -> Iterator[tuple[str, Param]]:
        """(path, param) in declaration order; paths look like `fc1.weight`, `layers.0.bias`."""
        for name, value in vars(self).items():
            for suffix, child in _children(value):
                path = f"{prefix}{name}{suffix}"
                if isinstance(child, Param):
                    yield path, child
                else:
                    yield from child.named_params(path + ".")

    def params(self) -> list[tuple[str, Param]]:
        """Every param as (path, Param), in declaration order."""
        return list(self.named_params())

    def visit(self, fn: Callable[[Param], None]) -> None:
        """Call `fn(param)` for every param in order (burn's `ModuleVisitor`)."""
        for param in params_of(self):
            fn(param)

    def map(self, fn: Callable[[Param], Param]) -> Module:
        """A new module with every param replaced by `fn(param)` (burn's `ModuleMapper`).

        The structure is copied (new module objects at every level); non-param fields are
        shared. `self` is left untouched.
        """
        new = object.__new__(self.__class__)
        fields = new.__dict__
        for name, value in self.__dict__.items():
            # Params and sub-modules inline: the optimizer maps the whole tree at every step,
            # and a call through _map_value per field is a measurable part of it.
            if value.__class__ is Param:
                fields[name] = fn(value)
            elif isinstance(value, Module):
                fields[name] = value.map(fn)
            else:
                fields[name] = _map_value(value, fn)
        return new

    def clone(self) -> Module:
        """A copy sharing ParamIds and tensors (burn's `Clone`): cheap, no data copied.

        PyTorch difference: an optimizer step here returns new tensors, so a clone taken before
        the step keeps the old values; a PyTorch alias of a parameter sees the in-place update.
        """
        return self.map(_same_param)

    def num_params(self) -> int:
        """Number of float parameter elements, frozen params included."""
        return sum(int(np.prod(p.val().shape, dtype=np.int64)) for p in params_of(self))

    def apply_lora(self, lora) -> Module:
        """burn's `Module::apply_lora`: `lora.apply(self)` (see `harness.engine.module.lora`)."""
        return lora.apply(self)

    def valid(self) -> Module:
        """The module on the inner (plain) device: no tracking, dropout off (burn's
        `AutodiffModule::valid`)."""
        return self.map(lambda p: Param(p.id, p.val().inner()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _same_param(param: Param) -> Param:
    return Param(param.id, param.val())


def _map_value(value, fn: Callable[[Param], Param]):
    # The callers map exact Params and Modules inline; this is reached for the other fields
    # and for the items of lists and tuples.
    if isinstance(value, Module):
        return value.map(fn)
    if isinstance(value, Param):
        return fn(value)
    if isinstance(value, (list, tuple)) and any(
        isinstance(v, (Param, Module, list, tuple)) for v in value
    ):
        return type(value)(_map_value(v, fn) for v in value)
    return value
