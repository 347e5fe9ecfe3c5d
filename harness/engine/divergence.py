"""Divergence switches: each engine behaviour that differs from PyTorch by design, as a named
switch that makes the engine follow PyTorch there.

A switch is registered beside the code that diverges (``BIAS_CORRECTION = register(...)`` in
``optim/adam.py``), names the object whose docstring documents the difference (``target``, a
dotted path a ``differ(..., because=...)`` can cite) and says in one line what PyTorch does
instead. The code reads ``SWITCH.on`` at the point of divergence: off (the default, burn's
behaviour) it costs one set lookup.

The harness reruns a case's engine side with every switch on (``follow_pytorch(*names())``,
the "explained" run, ``harness.explain``): if that run agrees with PyTorch to rounding, the
documented divergences explain the whole gap; if not, something else parts the two sides.
Switches are process-wide (a run is single-threaded); ``follow_pytorch`` restores the previous
setting on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Switch", "follow_pytorch", "names", "register", "switch", "switches"]


@dataclass(frozen=True)
class Switch:
    """One documented divergence. ``name``: ``"<area>.<what>"``; ``target``: the dotted path
    of the engine object whose docstring documents it; ``doc``: what PyTorch does instead."""

    name: str
    target: str
    doc: str

    @property
    def on(self) -> bool:
        """Whether the engine follows PyTorch here (read at the point of divergence). Reading
        a switch that is on records it as consulted: the run took the diverging path."""
        if self.name in _ON:
            _CONSULTED.add(self.name)
            return True
        return False


_REGISTRY: dict[str, Switch] = {}
_ON: set[str] = set()
_CONSULTED: set[str] = set()


def register(name: str, target: str, doc: str) -> Switch:
    """Register a switch (once per name; a module imported twice registers the same one)."""
    found = _REGISTRY.get(name)
    if found is not None and (found.target, found.doc) != (target, doc):
        raise ValueError(f"divergence switch {name!r} registered twice, differently")
    _REGISTRY[name] = found or Switch(name, target, doc)
    return _REGISTRY[name]


def switches() -> tuple[Switch, ...]:
    """Every registered switch, by name. Switches register as their modules import:
    ``import harness.engine`` registers them all."""
    return tuple(_REGISTRY[n] for n in sorted(_REGISTRY))


def names() -> tuple[str, ...]:
    return tuple(s.name for s in switches())


def switch(name: str) -> Switch:
    """The switch of that name, or a KeyError listing the known ones."""
    if name not in _REGISTRY:
        raise KeyError(f"no divergence switch {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


@contextlib.contextmanager
def follow_pytorch(*chosen: str) -> Iterator[set[str]]:
    """Within the block the named switches are on; yields the set of those the code read
    (consulted), complete when the block ends."""
    for name in chosen:
        switch(name)  # unknown names fail here, not silently
    global _ON, _CONSULTED
    previous, previous_consulted = _ON, _CONSULTED
    _ON, _CONSULTED = set(chosen), set()
    consulted = _CONSULTED
    try:
        yield consulted
    finally:
        _ON, _CONSULTED = previous, previous_consulted
