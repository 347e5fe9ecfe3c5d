"""The PyTorch-to-burn rules by module type: the table `PyTorchToBurnAdapter` reads.

burn decides by the type of the module that holds a param, spelled as its `#[derive(Module)]`
container name (`"Struct:Linear"`), and has the rules written into
crates/burn-store/src/adapter.rs (burn 2c06be351006851d42fdb6df16b976f4a82d9747,
`adapt_pytorch_tensor`, `is_normalization_layer`):

- `Linear`: `weight` of rank 2 is transposed (PyTorch `[out, in]`, burn `[in, out]`);
- `BatchNorm`, `LayerNorm`, `GroupNorm`, `RmsNorm`: PyTorch's `weight` / `bias` are burn's
  `gamma` / `beta`. BatchNorm's `running_mean` / `running_var` have the same names on both
  sides, so they need no rule (a module must expose them as params, as burn's `RunningState`
  is visited as a float param, to have them loaded); PyTorch's `num_batches_tracked` has no
  burn counterpart and is reported unused;
- every other module type (convolutions, `Embedding`, `PRelu`, ...) loads as stored: their
  layouts agree.

burn omits `InstanceNorm` from its list, so an InstanceNorm's `gamma` / `beta` are reported
missing when loading PyTorch's `weight` / `bias`; the table keeps that omission (register a
rule to change it).

As in burn the match is by type *name*: any module class called `Linear` gets the Linear
rule. Rules are registered for names whose engine module may not exist yet; they apply as soon
as a module class of that name does.

Extending the table (CNN, LSTM, attention modules):

- `register_pytorch_rule(LayerNorm, PyTorchRule(renames={"weight": "gamma"}))` adds or (with
  `replace=True`) replaces a type's rule; a class or a name (`"Lstm"`) is accepted.
- `renames` maps PyTorch param names to burn's; it drives both burn's lookup fallback
  (`get_alternative_param_name`: the burn name is tried first, then the PyTorch one) and the
  rename of a snapshot whose last path segment is a PyTorch name.
- `transforms` maps a burn param name to `fn(snapshot) -> snapshot` turning PyTorch's layout
  into burn's, lazily (see `transpose_2d`).
- `unpack(module_path, snapshots) -> snapshots` (engine extension: burn has no such hook) runs
  once per instance of the type before params are matched, for PyTorch tensors that pack
  several burn params: LSTM's `weight_ih_l0` (`[4*hidden, in]`, gates i, f, g, o) into the four
  gate controllers' `input_transform.weight`, attention's `in_proj_weight` into
  `query/key/value.weight`. It returns the snapshot mapping with the packed keys replaced by
  burn keys in PyTorch layout (a Linear's `weight` slice stays `[out, in]`: the Linear rule
  transposes it when applied). Keys it removes are neither unused nor missing; keys it adds
  and no param uses are unused. `split_snapshot` cuts a packed tensor lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .snapshot import TensorSnapshot

__all__ = [
    "PYTORCH_TO_BURN_RULES",
    "PyTorchRule",
    "module_type_name",
    "register_pytorch_rule",
    "split_snapshot",
    "transpose_2d",
]

Transform = Callable[[TensorSnapshot], TensorSnapshot]
Unpack = Callable[[str, dict[str, TensorSnapshot]], dict[str, TensorSnapshot]]


@dataclass(frozen=True)
class PyTorchRule:
    """How `PyTorchToBurnAdapter` treats the params of one module type (see module doc)."""

    renames: Mapping[str, str] = field(default_factory=dict)
    transforms: Mapping[str, Transform] = field(default_factory=dict)
    unpack: Unpack | None = None

    def burn_name(self, pytorch_name: str) -> str | None:
        """The burn param name of a PyTorch one (`weight` -> `gamma`), or None."""
        return self.renames.get(pytorch_name)

    def pytorch_name(self, burn_name: str) -> str | None:
        """The PyTorch param name of a burn one (`gamma` -> `weight`), or None."""
        for pytorch, burn in self.renames.items():
            if burn == burn_name:
                return pytorch
        return None


PYTORCH_TO_BURN_RULES: dict[str, PyTorchRule] = {}


def module_type_name(module_type: str | type) -> str:
    """The container name burn decides by: `Struct:<ClassName>` (a qualified name is kept)."""
    name = module_type if isinstance(module_type, str) else module_type.__name__
    return name if ":" in name else f"Struct:{name}"


def register_pytorch_rule(
    module_type: str | type, rule: PyTorchRule, *, replace: bool = False
) -> None:
    """Add the rule for a module type to the shared table; an existing rule is only replaced
    with `replace=True` (two modules silently fighting over one name is a bug)."""
    name = module_type_name(module_type)
    if name in PYTORCH_TO_BURN_RULES and not replace:
        raise ValueError(f"a PyTorch rule for {name} exists; pass replace=True to replace it")
    PYTORCH_TO_BURN_RULES[name] = rule


def transpose_2d(snapshot: TensorSnapshot) -> TensorSnapshot:
    """A rank-2 tensor transposed (lazily, as a contiguous copy); other ranks unchanged, as
    burn's `transpose_2d_tensor` leaves them."""
    if len(snapshot.shape) != 2:
        return snapshot
    rows, cols = snapshot.shape
    return snapshot.map_data(lambda a: np.ascontiguousarray(a.T), shape=(cols, rows))


def split_snapshot(snapshot: TensorSnapshot, parts: int, dim: int = 0) -> list[TensorSnapshot]:
    """`parts` equal slices of a packed tensor along `dim` (lazy; PyTorch's `chunk` order)."""
    size = snapshot.shape[dim]
    if parts <= 0 or size % parts:
        raise ValueError(
            f"{snapshot.full_path()}: cannot split dim {dim} of size {size} into {parts} parts"
        )
    step = size // parts
    shape = list(snapshot.shape)
    shape[dim] = step

    def piece(i: int) -> TensorSnapshot:
        index = tuple(
            slice(i * step, (i + 1) * step) if d == dim else slice(None) for d in range(len(shape))
        )
        return snapshot.map_data(lambda a: a[index], shape=shape)

    return [piece(i) for i in range(parts)]


_NORM = PyTorchRule(renames={"weight": "gamma", "bias": "beta"})
PYTORCH_TO_BURN_RULES.update(
    {
        "Struct:Linear": PyTorchRule(transforms={"weight": transpose_2d}),
        "Struct:BatchNorm": _NORM,
        "Struct:LayerNorm": _NORM,
        "Struct:GroupNorm": _NORM,
        "Struct:RmsNorm": _NORM,
    }
)
