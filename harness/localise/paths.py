"""Which engine module a torch module is: the path rules weight import already uses.

A torch module path is turned into the engine's as a parameter key under it would be when
PyTorch weights are loaded (``harness.a1.import_torch_weights``): the case's ``remap`` patterns
first (burn-store's ``KeyRemapper``, as ``SafetensorsStore.with_key_remapping``), then the
``PyTorchToBurnAdapter``'s per-module-type renames (``prepare``: ``self_attn.`` is ``mha.`` in
a ``TransformerEncoderLayer``, ``out_proj`` is ``output`` in a ``MultiHeadAttention``, ...). A
probe key ``<path>.weight`` is what goes through them: the renames act on parameter keys, and
``weight`` is the name every rule moves. The case's exact ``paths`` pairs win over both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.engine.store.adapter import PyTorchToBurnAdapter
from harness.engine.store.keyremapper import KeyRemapper

_PROBE = "weight"


@dataclass(frozen=True)
class _Probe:
    """Stands for a snapshot in the adapter's ``prepare``: it only ever gets a new path."""

    origin: str

    def with_path(self, path) -> _Probe:
        return self


def engine_paths(
    torch_paths: Iterable[str],
    module_types: Sequence[tuple[str, str]],
    *,
    paths: Mapping[str, str] | None = None,
    remap: Sequence[tuple[str, str]] = (),
) -> dict[str, str]:
    """``{torch path: engine path}`` for every torch path (the model's own ``""`` is ``""``);
    ``module_types``: the engine model's ``(path, "Struct:<class>")``, parents first."""
    remapper = KeyRemapper.from_patterns(remap)
    probes = {}
    for path in torch_paths:
        if path:
            probes[remapper.remap_path(f"{path}.{_PROBE}")] = _Probe(path)
    prepared = PyTorchToBurnAdapter().prepare(probes, list(module_types))
    found = {probe.origin: key[: -len(_PROBE) - 1] for key, probe in prepared.items()}
    found[""] = ""
    found.update(paths or {})
    return found
