"""The op matrix's float16 and bfloat16 rows (issue 25): moving half arrays to and from torch,
and the float32 reference each half comparison is judged against.

A half cell runs torch's half kernel and the engine (burn-flex's half semantics,
harness.engine.ops.half) on the same half inputs, and compares them under the half dtype's
default tolerance (harness.tolerances). The reference is torch's float32 run on the same
inputs (widened exactly), its outputs and gradients then rounded once to the half format: the
best a half result can be when the op is one float32 computation. It is each half comparison's
third opinion (`harness.opmatrix.opinion`), saying which side a divergence comes from.

Half rows run fewer shapes than float32 (`HALF_SHAPES`): the first shape of each pair, its
broadcasting and empty shapes, so that the matrix keeps within `make test`'s time.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np
import torch

from harness.diff import diff_arrays
from harness.float_dtypes import BFLOAT16, numpy_dtype
from harness.tolerances import Tolerance, default_tolerance

HALF_DTYPES = ("float16", "bfloat16")
REFERENCE = "float32-rounded"  # the name of a half cell's reference in opinions
HALF_SHAPES = 2  # the first shapes of a pair's menu that half rows run (see `half_shapes`)


def is_half(dtype: str) -> bool:
    return dtype in HALF_DTYPES


def to_torch(array: np.ndarray) -> torch.Tensor:
    """A torch tensor with `array`'s values and dtype (bfloat16 through its bit patterns:
    torch.from_numpy knows no ml_dtypes bfloat16)."""
    array = np.array(array)
    if array.dtype == BFLOAT16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A detached copy of a torch tensor as NumPy (bfloat16 as ml_dtypes' bfloat16)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(BFLOAT16).copy()
    return tensor.numpy().copy()


def half_shapes(shapes: tuple) -> tuple:
    """The shape cases a half row runs: the first `HALF_SHAPES`, plus any empty case."""
    kept = list(shapes[:HALF_SHAPES])
    kept += [c for c in shapes[HALF_SHAPES:] if "empty" in c.id]
    return tuple(kept)


def widened(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The cell's inputs with half arrays widened (exactly) to float32."""
    return {n: a.astype(np.float32) if a.dtype.itemsize == 2 else a for n, a in arrays.items()}


def rounded(value: np.ndarray | None, dtype: str) -> np.ndarray | None:
    """A float32 reference value (float64 for a cast to it) rounded once to the half `dtype`
    (other dtypes unchanged)."""
    if value is None or value.dtype not in (np.float32, np.float64):
        return value
    return value.astype(numpy_dtype(dtype))


# ---- declarations in half rows ----------------------------------------------------------------


def _within(reference: np.ndarray, value: np.ndarray, dtype_name: str, ulps: int) -> bool:
    base = default_tolerance(dtype_name)
    tol = Tolerance(base.atol * ulps, ulps=ulps, reason=f"{ulps} ulp of the float32 reference")
    return diff_arrays(np.asarray(reference), np.asarray(value), tol).ok


@dataclass(frozen=True)
class ReferenceRelation:
    """A half declaration's relation: the engine is within `ulps` half ULP (or as many eps
    absolute) of the float32 reference rounded once, wherever torch's half kernel lands."""

    ulps: int

    @property
    def text(self) -> str:
        return f"the engine is within {self.ulps} ulp of the float32 reference rounded once"

    def holds(self, t, e) -> bool:  # the plain relation API: no reference, no judgement
        return False

    def holds_ref(self, t, e, reference) -> bool:
        if reference is None or e is None:
            return False
        # A case hands over recorded values (maybe widened); they hold half values exactly.
        reference = np.asarray(reference)
        value = np.asarray(e).astype(reference.dtype)
        return _within(reference, value, reference.dtype.name, self.ulps)


def names_wide_dtypes(pattern: str) -> bool:
    """Whether a declaration's dtype glob (the key's second part) matches float32: one written
    for the float32/float64 rows, applied to half rows through `holds_in_half`."""
    parts = pattern.split("/")
    return len(parts) > 1 and fnmatch.fnmatchcase("float32", parts[1])


def holds_in_half(relation, t, e, wide, dtype_name: str) -> bool:
    """A float32-row declaration in a half cell: its relation holds on the half values, or on
    both sides' float32 values of the same inputs while each half side is that float32 value
    rounded (within the half tolerance): the same divergence, seen through half rounding."""
    if relation.holds(t, e):
        return True
    if wide is None:
        return False
    wt, we = wide
    if not relation.holds(wt, we):
        return False
    dtype = numpy_dtype(dtype_name)
    return _within(wt.astype(dtype), t, dtype_name, 1) and _within(
        we.astype(dtype), e, dtype_name, 1
    )
