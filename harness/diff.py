"""Per-tensor comparison statistics as data (``TensorDiff`` / ``Diff``); no text here.

``report.py`` renders what this module computes; ``compare.py``, ``case.py`` and the golden
logic all call :func:`diff_values`, so every surface shows the same numbers.

Checks per key, in this order (as pytest-regressions does): present on both sides, then dtype,
then shape, then values. Float32 against float64 is a ``dtype`` failure, never a silent cast.

The agreement rule (see ``harness.tolerances``): ``|a - b| <= atol + rtol * |b|``, or, when
``tol.ulps`` is set, ULP distance ``<= ulps``. NaN against NaN at the same place agrees (counted
as ``matched_nans``); NaN against anything else is a NaN mismatch; an infinity agrees only with
the same infinity, anything else is an inf mismatch. +0 and -0 agree and are 0 ULP apart.
Integer distances are exact and tested against the tolerance exactly; bools compare exactly
whatever the tolerance.

ULP distances are defined in ``harness.ulp``; the chunked pass that computes every statistic
of one pair of arrays, with memory bounded by ``CHUNK`` elements whatever the input size (so
memory-mapped inputs of 5e7 elements are fine), is ``harness.diff_stats``.
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from enum import StrEnum
from typing import Any

import numpy as np

from harness.diff_scalar import FEW, few_float_stats, scalar_float_stats
from harness.diff_stats import (
    dtype_name,
    empty_stats,
    exact_stats,
    float_stats,
    int_agrees,
    int_stats,
    round_down,
)
from harness.tolerances import Tolerance, default_tolerance
from harness.ulp import FLOAT_LAYOUT, ordered_int, ulp_distance

__all__ = [
    "CHUNK",
    "STATUSES",
    "Diff",
    "RowKind",
    "RowStatus",
    "TensorDiff",
    "diff_arrays",
    "diff_value",
    "diff_values",
    "ordered_int",
    "round_down",
    "select_keys",
    "ulp_distance",
    "value_dtype",
]

# Elements per pass step: each chunk costs about 30 NumPy and Python calls, so more elements
# amortise them; measured on 1e7 float32 pairs (AVX2, 512 KiB L2 per core), 2**17 took 78% of
# 2**15's time and 2**18 no less. The scratch buffers then hold about 4 MB (float32).
CHUNK = 1 << 17


class RowStatus(StrEnum):
    """The verdict of one row, in the order the checks run (keys, dtype, shape, values)."""

    OK = "ok"
    FAIL = "fail"
    MISSING = "missing"
    DTYPE = "dtype"
    SHAPE = "shape"


class RowKind(StrEnum):
    """What a row compared: two arrays, or two plain values (numbers, strings, errors...)."""

    TENSOR = "tensor"
    VALUE = "value"


STATUSES = tuple(status.value for status in RowStatus)


@dataclass(frozen=True)
class TensorDiff:
    """The comparison of one key. ``a``/``b`` are the two sides (labels live on ``Diff``).

    ``max_abs``/``max_rel``/``max_ulp`` cover pairs where both values are finite.
    ``worst_index`` points at the element that decides the verdict: the first NaN or inf
    mismatch if there is one, else the largest ``|a - b|`` (first occurrence).
    ``mismatches`` counts every element that does not agree, NaN and inf mismatches included.
    ``ulp_histogram[k]`` counts finite pairs whose ULP distance is 0 (k = 0) or lies in
    ``[2**(k-1), 2**k)``; trailing empty buckets are dropped.
    """

    key: str
    kind: RowKind
    tol: Tolerance
    status: RowStatus = RowStatus.OK
    dtype_a: str | None = None  # None: key absent on that side
    dtype_b: str | None = None
    shape_a: tuple[int, ...] | None = None  # None for non-tensor values
    shape_b: tuple[int, ...] | None = None
    n: int = 0  # elements compared
    max_abs: float | int | None = None
    worst_index: tuple[int, ...] | None = None
    a_worst: Any = None
    b_worst: Any = None
    worst_ulp: int | None = None  # ULP distance at worst_index
    max_rel: float | None = None
    max_ulp: int | None = None
    mismatches: int = 0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    matched_nans: int = 0
    ulp_histogram: tuple[int, ...] = ()
    bit_identical: bool = False

    @property
    def ok(self) -> bool:
        return self.status == RowStatus.OK

    @property
    def missing_from(self) -> str | None:
        """``"a"`` or ``"b"`` for a key present on one side only, else None."""
        if self.status != RowStatus.MISSING:
            return None
        return "a" if self.dtype_a is None else "b"


@dataclass(frozen=True)
class Diff:
    """Every compared key of two value mappings, plus the verdict."""

    title: str
    labels: tuple[str, str]
    rows: tuple[TensorDiff, ...]
    ok: bool
    worst: float | None  # max of max_abs over numeric rows; None without numeric rows
    tol: Tolerance  # the tolerance shown on the verdict line

    @property
    def failures(self) -> tuple[TensorDiff, ...]:
        return tuple(row for row in self.rows if not row.ok)

    @property
    def bit_identical(self) -> bool:
        return all(row.bit_identical for row in self.rows)


# Every field of a row, the defaults filled in: the template diff_arrays copies and fills
_ROW_TEMPLATE = {f.name: None if f.default is MISSING else f.default for f in fields(TensorDiff)}


def _tensor_row(values: dict[str, Any]) -> TensorDiff:
    """``TensorDiff(**values)`` for :func:`diff_arrays`, at a fifth of the cost.

    A frozen dataclass's ``__init__`` calls ``object.__setattr__`` once per field (22 here),
    about 4 us: a sixth of a 1e3-element diff. ``TensorDiff.__init__`` does nothing else, so
    an instance whose ``__dict__`` is a filled copy of ``_ROW_TEMPLATE`` (every field, so no
    key is added and the dict never grows) is the same row (a test compares the two for
    every kind of row).
    """
    row = object.__new__(TensorDiff)
    object.__setattr__(row, "__dict__", values)
    return row


def _verdict(mismatches: int) -> RowStatus:
    return RowStatus.OK if mismatches == 0 else RowStatus.FAIL


# ---------------------------------------------------------------------------------------------
# Arrays


def diff_arrays(a: np.ndarray, b: np.ndarray, tol: Tolerance, key: str = "") -> TensorDiff:
    """Compare two arrays: dtype, then shape, then values (one chunked pass)."""
    a, b = np.asarray(a), np.asarray(b)
    dtype, shape = dtype_name(a.dtype), a.shape
    row = _ROW_TEMPLATE.copy()
    row["key"], row["kind"], row["tol"] = key, RowKind.TENSOR, tol
    row["dtype_a"], row["dtype_b"] = dtype, dtype_name(b.dtype)
    row["shape_a"], row["shape_b"] = shape, b.shape
    if dtype != row["dtype_b"]:
        row["status"] = RowStatus.DTYPE
    elif shape != b.shape:
        row["status"] = RowStatus.SHAPE
    elif a.size == 0:
        row.update(empty_stats(a.dtype))
    else:
        if dtype in FLOAT_LAYOUT:
            if a.size == 1:  # e.g. loose JSON scalars: Python arithmetic, same fields
                row.update(scalar_float_stats(a, b, dtype, tol))
            else:
                few = few_float_stats(a, b, dtype, tol) if a.size <= min(CHUNK, FEW) else None
                row.update(float_stats(a, b, tol, CHUNK) if few is None else few)
        elif a.dtype.kind in "iub":
            row.update(int_stats(a, b, tol, CHUNK))
        else:
            row.update(exact_stats(a, b))
        row["status"] = _verdict(row["mismatches"])
    return _tensor_row(row)


# ---------------------------------------------------------------------------------------------
# Non-tensor values and whole mappings


def value_dtype(value: Any) -> str:
    """The dtype name used for tolerances and reports: numpy's for arrays, else a kind name.

    Python values map to ``bool``, ``int``, ``float``, ``str``, ``None`` and ``error``
    (a captured error: anything with ``type`` and ``message`` attributes).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return dtype_name(value.dtype)
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if hasattr(value, "type") and hasattr(value, "message"):
        return "error"
    return type(value).__name__


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def diff_value(a: Any, b: Any, tol: Tolerance, key: str = "") -> TensorDiff:
    """Compare any two values of a side: arrays via :func:`diff_arrays`, others exactly.

    Python floats follow the float rule (tolerance, NaN, inf, ULPs on the float64 grid);
    ints use the tolerance on exact ints; bools, strings, None and errors must be equal
    (errors: same type and message). Different kinds (an array against a number, an int
    against a float) are a ``dtype`` failure.
    """
    if _is_tensor(a) and _is_tensor(b):
        return diff_arrays(np.asarray(a), np.asarray(b), tol, key)
    dtype_a, dtype_b = value_dtype(a), value_dtype(b)
    base = TensorDiff(
        key=key,
        kind=RowKind.VALUE,
        tol=tol,
        dtype_a=dtype_a,
        dtype_b=dtype_b,
        shape_a=tuple(np.shape(a)) if _is_tensor(a) else None,
        shape_b=tuple(np.shape(b)) if _is_tensor(b) else None,
        a_worst=a if not _is_tensor(a) else None,
        b_worst=b if not _is_tensor(b) else None,
    )
    if dtype_a != dtype_b or _is_tensor(a) or _is_tensor(b):
        return replace(base, status=RowStatus.DTYPE)
    if dtype_a == "float":
        return _float_value(a, b, tol, base)
    if dtype_a == "int":
        agree = int_agrees(abs(a - b), b, tol)
        return replace(
            base,
            status=RowStatus.OK if agree else RowStatus.FAIL,
            n=1,
            max_abs=abs(a - b),
            max_rel=_int_relative(a, b) if a != b else 0.0,
            mismatches=0 if agree else 1,
            bit_identical=a == b,
        )
    same = _same_plain(a, b)
    status = RowStatus.OK if same else RowStatus.FAIL
    return replace(base, status=status, n=1, mismatches=int(not same), bit_identical=same)


def _int_relative(x: int, y: int) -> float:
    return abs(x - y) / abs(y) if y else math.inf


def _same_plain(a: Any, b: Any) -> bool:
    if value_dtype(a) == "error":
        return (a.type, a.message) == (b.type, b.message)
    return a == b


def _float_value(a: float, b: float, tol: Tolerance, base: TensorDiff) -> TensorDiff:
    row = diff_arrays(np.array(a, np.float64), np.array(b, np.float64), tol)
    return replace(
        row,
        key=base.key,
        kind=RowKind.VALUE,
        dtype_a="float",
        dtype_b="float",
        shape_a=None,
        shape_b=None,
        worst_index=None,
        a_worst=a,
        b_worst=b,
    )


def _missing_row(key: str, value: Any, in_a: bool, tol: Tolerance) -> TensorDiff:
    dtype = value_dtype(value)
    shape = tuple(np.shape(value)) if _is_tensor(value) else None
    return TensorDiff(
        key=key,
        kind=RowKind.TENSOR if _is_tensor(value) else RowKind.VALUE,
        tol=tol,
        status=RowStatus.MISSING,
        dtype_a=dtype if in_a else None,
        dtype_b=None if in_a else dtype,
        shape_a=shape if in_a else None,
        shape_b=None if in_a else shape,
    )


def select_keys(names: Sequence[str], keys: str | Sequence[str] | None) -> list[str]:
    """The names matching any of the glob patterns (all names when ``keys`` is None)."""
    if keys is None:
        return list(names)
    patterns = [keys] if isinstance(keys, str) else list(keys)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def diff_values(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    tol_for: Callable[[str, str], Tolerance],
    keys: str | Sequence[str] | None = None,
    title: str = "",
    labels: tuple[str, str] = ("torch", "engine"),
    tol: Tolerance | None = None,
) -> Diff:
    """Compare two value mappings key by key; every selected key gets a row.

    Rows follow ``a``'s key order, then keys only in ``b``. ``tol_for(key, dtype_name)``
    gives each row's tolerance. ``tol`` is the tolerance printed on the verdict line; by
    default the most common row tolerance, weighted by element count.
    """
    names = select_keys(list(a) + [k for k in b if k not in a], keys)
    rows = tuple(_row(name, a, b, tol_for) for name in names)
    numeric = [float(r.max_abs) for r in rows if r.max_abs is not None]
    return Diff(
        title=title,
        labels=(str(labels[0]), str(labels[1])),
        rows=rows,
        ok=all(r.ok for r in rows),
        worst=max(numeric) if numeric else None,
        tol=tol if tol is not None else _dominant_tolerance(rows),
    )


def _row(name: str, a: Mapping[str, Any], b: Mapping[str, Any], tol_for: Callable) -> TensorDiff:
    if name not in b:
        return _missing_row(name, a[name], True, tol_for(name, value_dtype(a[name])))
    if name not in a:
        return _missing_row(name, b[name], False, tol_for(name, value_dtype(b[name])))
    return diff_value(a[name], b[name], tol_for(name, value_dtype(a[name])), name)


def _dominant_tolerance(rows: Sequence[TensorDiff]) -> Tolerance:
    weights: Counter[Tolerance] = Counter()
    for row in rows:
        weights[row.tol] += max(row.n, 1)
    if not weights:
        return default_tolerance("float32")
    return weights.most_common(1)[0][0]
