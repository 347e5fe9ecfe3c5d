"""The one table of known engine-vs-PyTorch divergences in the op matrix.

A comparison in the matrix is keyed `op/dtype/shape/valueset/check`, for example
`relu/float32/3x2/specials/vjp.a` (checks: `shape`, `forward`, `forward[1]`, `vjp.<input>`).
A `Divergence` matches keys with a glob. A declared divergence must still diverge: in every
(op, dtype) matrix item where it matches at least one comparison, at least one of those
comparisons has to disagree, otherwise the item fails with "declared divergence vanished".
A declaration that matches no comparison of a full run is reported as unused.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Divergence:
    """A glob over comparison keys and why the two sides legitimately differ there."""

    pattern: str
    reason: str

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key, self.pattern)


_RANK = (
    "burn has no 0-d tensors: full reductions return [1] where torch returns 0-d "
    "(harness.engine.tensor.Tensor.sum)"
)

DIVERGENCES: tuple[Divergence, ...] = (
    Divergence("sum/*/*/*/shape", _RANK),
    Divergence("mean/*/*/*/shape", _RANK),
    Divergence("max/*/*/*/shape", _RANK),
)


def declared(key: str, table: tuple[Divergence, ...] = DIVERGENCES) -> Divergence | None:
    """The first declaration matching `key`, or None."""
    for div in table:
        if div.matches(key):
            return div
    return None
