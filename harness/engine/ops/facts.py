"""What the op matrix, the fuzzer and the divergence list know about an op, as plain data.

Each primitive's registration lists the `Check`s of the Tensor methods built on it: the engine
and PyTorch spellings (templates over named inputs `{a}`, `{b}` float tensors, `{m}` a bool
mask, `{i}` int64 indices, and parameters such as `{dim}`, `{dtype}`, `{other}`), the inputs'
kinds and value domains, a shape menu, kinks, the declared divergences from PyTorch with the
relation the values keep there, and how the fuzzer may draw the op. `harness.opmatrix` reads them;
the engine never imports that package (nor torch: the PyTorch side is text).

Layouts: burn has no 0-d tensors, so full reductions return `[1]` where PyTorch returns 0-d.
Such a check declares `torch_layout="{out}.reshape(1)"`: values are compared after that
mapping, and the raw shape difference is a declared divergence.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# ---- inputs and shape menus -----------------------------------------------------------------

# Input kinds: "float" (differentiable, the matrix dtype), "bool" (mask), "index" (int64 within
# the indexed dim of the first input), "int" (int64 values). Domains restrict float draws.
FLOAT, BOOL, INDEX, INT = "float", "bool", "index", "int"
# "unit": inside (-1, 1) (asin, acos, atanh); "above_one": above 1 (acosh).
DOMAINS = ("any", "positive", "nonzero", "grid", "unit", "above_one")


@dataclass(frozen=True)
class Input:
    """One operand: its template name, kind and (for floats) value domain."""

    name: str
    kind: str = FLOAT
    domain: str = "any"


@dataclass(frozen=True)
class ShapeCase:
    """One entry of a shape menu: a readable id and one shape per input."""

    id: str
    shapes: tuple[tuple[int, ...], ...]


def menu(*entries: tuple[str, list]) -> tuple[ShapeCase, ...]:
    """A shape menu from `(id, [shape per input])` entries."""
    return tuple(ShapeCase(id_, tuple(tuple(s) for s in shapes)) for id_, shapes in entries)


A = (Input("a"),)
AB = (Input("a"), Input("b"))
UNARY = menu(("0d", [()]), ("3", [(3,)]), ("3x2", [(3, 2)]), ("empty", [(0, 2)]))
UNARY_NONEMPTY = UNARY[:3]
BINARY = menu(
    ("0d", [(), ()]),
    ("3", [(3,), (3,)]),
    ("3x2", [(3, 2), (3, 2)]),
    ("bcast", [(3, 2), (1, 2)]),
    ("empty", [(0, 2), (0, 2)]),
)
ALONG_DIM1 = menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("empty", [(0, 2)]))
TWO_D = menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("empty", [(0, 2)]))

SCALAR = 0.3  # not exactly representable: shows that both sides round it to the dtype first
ZERO_KINKS = (0.0, -0.0, 1.0, -1.0, 0.0, 2.0)
CLAMP_KINKS = (-0.5, 0.5, 0.0, -1.0, 1.0, 0.25)
# Pairs of equal neighbours: ties along dim 1 of a [3, 2] tensor and within every full row.
TIE_KINKS = (1.0, 1.0, -0.5, -0.5, 2.0, 2.0)
# Rows of a [3, 2] input: one spread so wide that exp(-160) underflows in float32, two ties.
SOFTMAX_KINKS = (80.0, -80.0, 0.0, 0.0, 1.0, 1.0)

TO_ONE = {
    "torch_layout": "{out}.reshape(1)",
    "layout_note": "torch returns 0-d; burn returns [1] (compared after reshape(1))",
}

# ---- declared divergences -------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """The relation the two sides keep where a declared divergence applies, so that a declared
    difference cannot hide a new bug at the same place. `test(torch, engine)` is either an
    elementwise predicate that must hold at every element where they differ (`only_where`), or
    a test of both whole values, either of which may be None (no gradient on that side)."""

    text: str
    test: Callable
    elementwise: bool

    @classmethod
    def only_where(cls, what: str, predicate: Callable) -> Condition:
        return cls(f"differs only where {what}", predicate, True)

    @classmethod
    def whole(cls, text: str, test: Callable) -> Condition:
        return cls(text, test, False)


def _same_total(t, e) -> bool:
    """The gradient mass is the same, only distributed differently (ties)."""
    return t is not None and e is not None and bool(np.isclose(np.sum(t), np.sum(e)))


def close(rtol: float) -> Condition:
    """Both values exist and agree within `rtol` (no absolute slack)."""

    def test(t, e) -> bool:
        return t is not None and e is not None and bool(np.allclose(t, e, rtol=rtol, atol=0))

    return Condition.whole(f"equal within rtol {rtol:g}", test)


SAME_TOTAL = Condition.whole("same total, distributed differently", _same_total)
ENGINE_NONFINITE = Condition.only_where(
    "the engine's value is NaN or infinite", lambda t, e: ~np.isfinite(e)
)
TORCH_ZERO = Condition.only_where("torch's value is 0", lambda t, e: t == 0)
NONFINITE_EITHER = Condition.only_where(
    "either value is NaN or infinite", lambda t, e: ~(np.isfinite(t) & np.isfinite(e))
)
TORCH_ZERO_ENGINE_NAN = Condition.only_where(
    "torch is 0 and the engine NaN", lambda t, e: (t == 0) & np.isnan(e)
)
ENGINE_ZERO = Condition.only_where("the engine's value is 0", lambda t, e: e == 0)
TORCH_NAN_ENGINE_ZERO = Condition.only_where(
    "torch is NaN and the engine 0", lambda t, e: np.isnan(t) & (e == 0)
)
BOTH_INFINITE = Condition.only_where("both are infinite", lambda t, e: np.isinf(t) & np.isinf(e))


@dataclass(frozen=True)
class Diverges:
    """A declared divergence of one check: `where` globs its comparisons by
    `dtype/shape/valueset/check` (checks: `shape`, `forward`, `forward[1]`, `vjp.<input>`),
    `reason` says why the sides legitimately differ, `condition` what they keep (None: no
    values to relate, such as a shape check)."""

    where: str
    reason: str
    condition: Condition | None = None
    # The torch kernel the difference belongs to, when torch's result depends on the CPU path
    # (a name in harness.opmatrix.divergences.TORCH_KERNELS): declared only while it is in force.
    torch_kernel: str | None = None


@dataclass(frozen=True)
class Rounding:
    """The float32 tolerance of a check whose sides compute the same sums in another order,
    where the default (atol 1e-6) is about one ULP of its values: `reason` states the bound."""

    rtol: float
    atol: float
    reason: str


@dataclass(frozen=True)
class NotDerivative:
    """burn's backward rule is not the derivative of burn's own forward for this check, and
    the engine keeps burn's rule: `reason` says where and why (citing burn), `condition`
    relates the two there, `test(finite differences of the engine's forward, the engine's
    VJP)`, so that the declaration cannot hide another defect. Read by the float64
    finite-difference test of every check (tests/engine/test_gradcheck.py); the difference
    from PyTorch that follows from it is a `Diverges` of its own."""

    reason: str
    condition: Condition


# ---- the fuzzer's view: a shape and an interval holding every element ------------------------


@dataclass(frozen=True)
class Abs:
    shape: tuple[int, ...]
    lo: float
    hi: float

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    def away_from_zero(self, margin: float = 0.25) -> bool:
        return self.lo >= margin or self.hi <= -margin


def _anywhere(x: Abs) -> bool:
    return True


@dataclass(frozen=True)
class FuzzElementwise:
    """A one-operand elementwise step: the interval of its result, and when it applies."""

    bounds: Callable[[Abs], tuple[float, float]]
    ok: Callable[[Abs], bool] = _anywhere


@dataclass(frozen=True)
class FuzzBinary:
    """A two-operand step: its result, or None when it does not apply to the operands."""

    result: Callable[[Abs, Abs], Abs | None]


@dataclass(frozen=True)
class FuzzStructural:
    """A reduction, softmax or shape step: its result for operand and dim (None when it does
    not apply); `dims(rank)` are the dims to draw (None: the op takes no dim)."""

    result: Callable[[Abs, int], Abs | None]
    dims: Callable[[int], range] | None = None


def each_dim(rank: int) -> range:
    return range(rank)


def each_gap(rank: int) -> range:
    """Where a new dim can go (unsqueeze)."""
    return range(rank + 1)


def mono(fn: Callable[[float], float]) -> Callable[[Abs], tuple[float, float]]:
    """Bounds of a nondecreasing function."""
    return lambda x: (fn(x.lo), fn(x.hi))


def products(a: Abs, b: Abs) -> list[float]:
    return [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]


def broadcast(a: Abs, b: Abs) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return None


def size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def kept_dim(x: Abs, dim: int) -> tuple[int, ...]:
    """`x.shape` with `dim` reduced to 1."""
    return (*x.shape[:dim], 1, *x.shape[dim + 1 :])


# ---- one Tensor method as the op matrix checks it ---------------------------------------------


@dataclass(frozen=True)
class Check:
    """A Tensor method (or a variant of it) against its PyTorch counterpart.

    `name` is unique; a variant adds a bracketed suffix (`powi_scalar[0]`), so `method` is the
    name before it. `op` is the primitive that registered the check (its backward rule is the
    one under test). `kinks` are values put into the first float input for the "kinks" value set
    (None: no kink worth a cell); `specials=False` skips NaN/inf/-0.0/subnormal inputs where
    they are meaningless (float -> int truncation is undefined for NaN). `fuzz` says how the
    fuzzer draws the op (None: it does not). `not_derivative` declares that burn's VJP is not
    the derivative of its forward here (None: it is, and finite differences check it).
    """

    name: str
    engine: str
    torch: str
    inputs: tuple[Input, ...] = A
    shapes: tuple[ShapeCase, ...] = UNARY
    params: dict = field(default_factory=dict)
    torch_layout: str = "{out}"
    layout_note: str = ""
    kinks: tuple[float, ...] | None = None
    specials: bool = True
    diverges: tuple[Diverges, ...] = ()
    rounding: Rounding | None = None
    fuzz: FuzzElementwise | FuzzBinary | FuzzStructural | None = None
    not_derivative: NotDerivative | None = None
    op: str = ""

    @property
    def method(self) -> str:
        return self.name.split("[", 1)[0]

    @property
    def float_inputs(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.kind == FLOAT)

    def of(self, op: str) -> Check:
        """This check, owned by primitive `op`."""
        return dataclasses.replace(self, op=op)


def composite(check: Check) -> Check:
    """A check of a composite, owned by no rule (its name stands for the op)."""
    return check.of(check.method)


def unary(name: str, engine: str, torch: str, *, domain: str = "any", **kw) -> Check:
    """A check of one float input (of `domain`) over the UNARY menu unless `shapes` says."""
    return Check(name, engine, torch, (Input("a", FLOAT, domain),), **kw)


def along_dim1(name: str, engine: str, torch: str, **kw) -> Check:
    """A one-input check taking `{dim}`, run along dim 1 of the ALONG_DIM1 menu."""
    return unary(name, engine, torch, shapes=ALONG_DIM1, params={"dim": 1}, **kw)


def binary(
    name: str, engine: str, torch: str, *, a_domain: str = "any", b_domain: str = "any", **kw
) -> Check:
    """A check of two float inputs over the BINARY (broadcasting) menu unless `shapes` says."""
    inputs = (Input("a", FLOAT, a_domain), Input("b", FLOAT, b_domain))
    return Check(name, engine, torch, inputs, kw.pop("shapes", BINARY), **kw)
