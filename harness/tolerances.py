"""One versioned table of default tolerances per dtype, plus per-key overrides.

An element of a compared pair agrees when ``|a - b| <= atol + rtol * |b|`` (``b`` is the
reference side, as in ``numpy.testing.assert_allclose``), or when ``ulps`` is set and the ULP
distance of the pair is at most ``ulps``. ``harness.diff`` applies the rule; this module only
says which numbers to use. Integer distances meet atol and rtol exactly (no rounding to
float64) and have no ULPs; bools, strings, None and errors compare exactly whatever the
tolerance.

A case may override the default for some keys with ``{glob: Tolerance(..., reason="...")}``.
An override without a reason is refused: a loosened tolerance that nobody explained is the
first thing a reviewer has to ask about.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# Bump whenever a value in DEFAULTS changes: reports and goldens record it, so a changed
# verdict can be traced to a changed table rather than a changed computation.
TABLE_VERSION = 2  # 2: float16 gains "or 1 ulp", bfloat16 added (issue 25)


@dataclass(frozen=True)
class Tolerance:
    """How far apart two values may be and still agree."""

    atol: float
    rtol: float = 0.0
    ulps: int | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"Tolerance.{name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"Tolerance.{name} must be finite and >= 0, got {value!r}")
        if self.ulps is not None and (
            isinstance(self.ulps, bool) or not isinstance(self.ulps, int) or self.ulps < 0
        ):
            raise ValueError(f"Tolerance.ulps must be an int >= 0 or None, got {self.ulps!r}")

    @classmethod
    def exact(cls, reason: str = "") -> Tolerance:
        """Bitwise-equal values only (except +0 == -0 and NaN == NaN at the same place)."""
        return cls(0.0, 0.0, None, reason)

    @property
    def is_exact(self) -> bool:
        """True when no difference at all is allowed."""
        return self.atol == 0 and self.rtol == 0 and not self.ulps

    def describe(self) -> str:
        """Short label for reports: ``1e-06``, ``exact``, ``4 ulp``, ``1e-06+rtol 1e-05``.

        Parts are joined with ``+`` (atol and rtol add up) and `` or `` (ULPs are an
        alternative way to agree).
        """
        if self.is_exact:
            return "exact"
        parts = []
        if self.atol or self.rtol:
            parts.append(f"{self.atol:g}")
        if self.rtol:
            parts[-1] += f"+rtol {self.rtol:g}"
        if self.ulps:
            parts.append(f"{self.ulps} ulp")
        return " or ".join(parts)


_EXACT = Tolerance.exact("integers, bools, strings, None and errors compare exactly")

DEFAULTS: dict[str, Tolerance] = {
    # The study compares float32 results at tol=1e-06 (about 8 float32 ULP at unit scale):
    # room for a different summation order or fused multiply-add, not for a wrong formula.
    "float32": Tolerance(1e-6, reason="study default tol=1e-06 for float32"),
    # float64 eps is 2.2e-16, so 1e-12 is ~4500 ULP at unit scale: the same "reordering, not
    # a bug" slack as float32's 1e-6 relative to its 1.2e-7 eps, a little tighter.
    "float64": Tolerance(1e-12, reason="~4.5e3 float64 ULP at unit scale"),
    # Half formats: burn-flex and most of torch's CPU half kernels compute an op in float32
    # and round once, so two correct runs part by that rounding. Measured on 2**16 standard
    # normal samples (tests/test_half_precision.py: add, div, exp, sigmoid, log, 64-term sum,
    # 64-deep matmul): half(f32_op(x)) and half(f64_op(x)) are at most 1 ULP apart wherever
    # |result| >= 1/16; nearer zero, where a matmul's float32 sum cancels, up to 3 float16 /
    # 64 bfloat16 ULP, but less than the format's eps absolute. Hence 1 ULP, or eps absolute.
    "float16": Tolerance(
        2.0**-10, ulps=1, reason="1 ULP: the rounding of a float32-computed op (eps 2**-10)"
    ),
    "bfloat16": Tolerance(
        2.0**-7, ulps=1, reason="1 ULP: the rounding of a float32-computed op (eps 2**-7)"
    ),
    # Python floats mostly carry float32 results (`tensor.item()`), so they get the float32
    # slack; a case that computes in float64 overrides it for its keys.
    "float": Tolerance(1e-6, reason="Python floats usually hold float32 results"),
}
_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DEFAULTS.update(dict.fromkeys((*_INTEGERS, "bool", "int", "str", "None", "error"), _EXACT))


def default_tolerance(dtype_name: str | None) -> Tolerance:
    """The table's tolerance for a dtype name; anything not in the table compares exactly."""
    return DEFAULTS.get(str(dtype_name), _EXACT)


def explicit_tolerance(
    atol: float | None, rtol: float | None, ulps: int | None, reason: str
) -> Tolerance | None:
    """The tolerance the arguments give (unset parts 0 / None), or None when none is given."""
    if atol is None and rtol is None and ulps is None:
        return None
    return Tolerance(atol or 0.0, rtol or 0.0, ulps, reason=reason)


def tol_for_every_key(tol: Tolerance | None) -> Callable[[str, str | None], Tolerance]:
    """A ``tol_for(key, dtype)``: ``tol`` for every key when given, else the dtype default."""
    if tol is not None:
        return lambda key, dtype: tol
    return lambda key, dtype: default_tolerance(dtype)


def check_overrides(overrides: Mapping[str, Tolerance] | None) -> None:
    """Raise ValueError unless every override is a Tolerance with a reason."""
    for pattern, tol in (overrides or {}).items():
        if not isinstance(tol, Tolerance):
            raise ValueError(f"tolerance override {pattern!r} must be a Tolerance, got {tol!r}")
        if not tol.reason.strip():
            raise ValueError(
                f"tolerance override {pattern!r} needs a reason: Tolerance(..., reason=...)"
            )


def resolve(
    key: str, dtype: str | None, overrides: Mapping[str, Tolerance] | None = None
) -> Tolerance:
    """The tolerance for one key: the first matching override glob, else the dtype default."""
    check_overrides(overrides)
    for pattern, tol in (overrides or {}).items():
        if fnmatch.fnmatchcase(key, pattern):
            return tol
    return default_tolerance(dtype)
