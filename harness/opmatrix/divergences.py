"""The table of known engine-vs-PyTorch divergences in the op matrix, built from the
declarations in the primitives' registrations (harness/engine/ops/, `Diverges`).

A comparison in the matrix is keyed `op/dtype/shape/valueset/check`, for example
`relu/float32/3x2/specials/vjp.a` (checks: `shape`, `forward`, `forward[1]`, `vjp.<input>`).
A `Divergence` matches keys with a glob. A declared divergence must still diverge: in every
(op, dtype) matrix item where it matches at least one comparison, at least one of those
comparisons has to disagree, otherwise the item fails with "declared divergence vanished".
A declaration that matches no comparison of a full run is reported as unused. A declaration
also states the `Relation` the values keep where they diverge (for example "the engine has no
gradient", or "differs only where torch is 0"): a divergence outside it fails, so that a
declared difference cannot hide a new bug at the same place.
"""

from __future__ import annotations

import fnmatch
import glob
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# The relation a declaration keeps is the case API's `Relation` (text + `holds`): here
# `holds(torch_value, engine_value)`, either of which may be None (no gradient on that side).
# A declared divergence is not a blank cheque: if a later change breaks the engine further at
# the same place (a flipped sign inside a declared rounding difference), the relation fails
# and so does the item.
from harness import numerics
from harness.case import Relation
from harness.engine.ops.facts import Condition
from harness.opmatrix.registry import PAIRS, OpPair
from harness.tolerances import default_tolerance


@dataclass(frozen=True)
class Divergence:
    """A glob over comparison keys, why the two sides legitimately differ there, and the
    relation their values keep (None: no values to relate, such as a shape check)."""

    pattern: str
    reason: str
    relation: Relation | None = None

    def matches(self, key: str) -> bool:
        return fnmatch.fnmatchcase(key, self.pattern)


def _differing(t: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Elements that disagree under the dtype's default tolerance (NaN matches NaN)."""
    atol = default_tolerance(t.dtype.name).atol
    with np.errstate(invalid="ignore"):
        agree = (t == e) | (np.abs(t - e) <= atol) | (np.isnan(t) & np.isnan(e))
    return ~agree


def only_where(text: str, pred: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Relation:
    """The values differ only at elements where `pred(torch, engine)` is true; `text` reads
    "differs only where ..."."""

    def holds(t, e) -> bool:
        if t is None or e is None or np.shape(t) != np.shape(e):
            return False
        t, e = np.asarray(t), np.asarray(e)
        d = _differing(t, e)
        return bool(np.all(pred(t[d], e[d])))

    return Relation(text, holds)


def relation_of(condition: Condition) -> Relation:
    """The case API's relation for a registration's condition."""
    if condition.elementwise:
        return only_where(condition.text, condition.test)
    return Relation(condition.text, condition.test)


def _onednn_avx512() -> bool:
    """oneDNN runs its AVX-512 kernels: the CPU has them and ``ONEDNN_MAX_CPU_ISA`` (read by
    oneDNN at its first use) does not cap it below them."""
    isa = numerics.in_force()["onednn_max_cpu_isa"].upper()
    capped = not (isa == "ALL" or isa.startswith(("AVX512", "AVX10")))
    return "avx512f" in numerics.cpu_flags() and not capped


def _onednn_avx() -> bool:
    """oneDNN runs AVX or wider kernels (not its SSE4.1 ones)."""
    return numerics.in_force()["onednn_max_cpu_isa"].upper() != "SSE41" and (
        "avx" in numerics.cpu_flags()
    )


# torch kernels whose results some declared divergences depend on: name -> whether it runs.
TORCH_KERNELS: dict[str, Callable[[], bool]] = {
    "onednn-avx512": _onednn_avx512,
    "onednn-avx": _onednn_avx,
}


def _declarations(pairs: tuple[OpPair, ...]) -> tuple[Divergence, ...]:
    """The declarations of every registration whose torch kernel (if it names one) runs here."""
    return tuple(
        Divergence(
            f"{glob.escape(p.name)}/{d.where}",
            d.reason,
            None if d.condition is None else relation_of(d.condition),
        )
        for p in pairs
        for d in p.diverges
        if d.torch_kernel is None or TORCH_KERNELS[d.torch_kernel]()
    )


DIVERGENCES: tuple[Divergence, ...] = _declarations(PAIRS)


def declared(key: str, table: tuple[Divergence, ...] = DIVERGENCES) -> Divergence | None:
    """The first declaration matching `key`, or None."""
    for div in table:
        if div.matches(key):
            return div
    return None
