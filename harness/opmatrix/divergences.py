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
from harness.opmatrix import half
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


# ---- the half rows (issue 25; harness.opmatrix.half) -------------------------------------------
# Measured with `python -m harness.opmatrix --dtypes float16,bfloat16` (distances to the float32
# reference rounded once, the largest over the half cells of the op; ULP, or as many format
# eps absolute near zero). Each PyTorch difference is stated in the engine docstring named.

_TORCH_HALF_ACCUMULATES = (
    "torch's CPU half kernel (or its backward) accumulates in the half format or rounds partial "
    "sums; the engine, as burn-flex (bf16 via f32, f16 gemm with f32 accumulation), computes in "
    "float32 and rounds once (harness.engine.ops.half): measured engine 0-1 ULP, torch up to "
    "3e4 ULP from the float32 reference"
)
_BURN_COMPOSITE = (
    "burn composes this op from backend ops, each rounded to the half format (the engine does "
    "the same, harness.engine.ops.half); torch's CPU half kernel computes in float32 and rounds "
    "once"
)
_BOTH = "*16"
_HALF_ROWS: tuple[tuple[str, str, Relation | None], ...] = (
    # Specific rows first: `declared` takes the first match.
    (
        "grid_sample_2d[[]reflection]/bfloat16/*/random/vjp.b",
        "a grid coordinate rounded to bfloat16 lands on a reflection boundary, where the "
        "engine's per-op rounded composite (burn's) and torch's float32 kernel fall on opposite "
        "sides of the kink (measured: one element, engine -14.25, torch 0; elsewhere within "
        "512 ULP of the float32 reference)",
        None,
    ),
    (
        "powi/*16/*/specials/vjp.a",
        "burn's powf rule g * y * x^(y - 1) at x = 0, y = 0 is 0 * inf = NaN, torch's 0 "
        "(harness.engine.ops.elementwise.powf); the half specials pair 0 with a 0 exponent",
        only_where("differs only where the engine is NaN", lambda t, e: np.isnan(e)),
    ),
    (
        "grid_sample_2d*/*16/*/specials/vjp.*",
        "torch's half grid_sampler backward gives NaN (or a value) at special grid values where "
        "its float32 one and the engine give 0",
        only_where("differs only where the engine's value is 0", lambda t, e: e == 0),
    ),
    (
        "ctc_loss/*16/*/*/error",
        "torch has no CPU half ctc_loss ('ctc_loss_cpu' not implemented for 'Half'/'BFloat16'); "
        "the engine computes burn's",
        None,
    ),
    (
        "argtopk/bfloat16/*/random/forward",
        "bfloat16's 8-bit significand makes random inputs tie; torch.topk orders tied values "
        "unspecified, the engine (burn's sort) by first index",
        None,
    ),
    *(
        (
            f"{glob.escape(op)}/{dtype}/*/random/*",
            _TORCH_HALF_ACCUMULATES,
            half.ReferenceRelation(1),
        )
        for op, dtype in (
            *(("conv2d", _BOTH), ("conv2d[strided]", _BOTH), ("conv3d", _BOTH)),
            *(("conv1d", "float16"), ("conv1d[dilation]", "float16")),
            *(("conv_transpose1d", _BOTH), ("conv_transpose2d", _BOTH)),
            *(("conv_transpose3d", _BOTH), ("deform_conv2d", _BOTH)),
            *(("deform_conv2d[mask]", _BOTH), ("cumprod", "float16"), ("asin", "bfloat16")),
            ("powi_scalar[-2]", "float16"),
        )
    ),
    *(
        # pad's gradient sums the cotangent of the padded border: any value set.
        (f"{glob.escape(op)}/*16/*/*/vjp.a", f"{_BURN_COMPOSITE}: measured {seen}", relation)
        for op, seen, relation in (
            ("pad[edge]", "3 ULP", half.ReferenceRelation(32)),
            ("pad[reflect]", "24 ULP", half.ReferenceRelation(32)),
        )
    ),
    *(
        (f"{glob.escape(op)}/{dtype}/*/random/*", f"{_BURN_COMPOSITE}: measured {seen}", relation)
        for op, dtype, seen, relation in (
            ("attention", "bfloat16", "69 ULP", half.ReferenceRelation(128)),
            ("attention[causal]", "bfloat16", "22 ULP", half.ReferenceRelation(128)),
            ("layer_norm", _BOTH, "39 ULP", half.ReferenceRelation(64)),
            ("layer_norm[no_beta]", "bfloat16", "12 ULP", half.ReferenceRelation(64)),
            ("var_mean", "float16", "2 ULP", half.ReferenceRelation(4)),
            ("batch_norm", "float16", "2 ULP", half.ReferenceRelation(4)),
            ("grid_sample_2d", _BOTH, "66 ULP", half.ReferenceRelation(512)),
            ("grid_sample_2d[border-aligned]", _BOTH, "134 ULP", half.ReferenceRelation(512)),
            ("grid_sample_2d[reflection]", _BOTH, "286 ULP", half.ReferenceRelation(512)),
        )
    ),
)

# Half rows first: their patterns match half keys only, and there they take precedence.
DIVERGENCES = tuple(Divergence(*row) for row in _HALF_ROWS) + DIVERGENCES
