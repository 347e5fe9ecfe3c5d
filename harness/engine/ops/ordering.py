"""Sorting, products, cumulative extrema and boolean reductions, each as burn builds it (burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747):

- `sort` (with its indices, ascending or descending) is a primitive with burn-autodiff's
  `SortDim` rule (`crates/burn-autodiff/src/ops/sort.rs`): the gradient is scattered (added)
  into zeros at the indices the sort returned. flex sorts each lane with `sort_unstable_by`
  on `total_cmp` (`crates/burn-flex/src/ops/sort.rs`): -0.0 before +0.0, NaN after +inf.
  Rust's unstable sort is an insertion sort for lanes of at most 20 elements, which keeps
  ties in their original order (also when descending, the comparator being reversed); the
  engine sorts stably for every length (longer lanes: burn's tie order is unspecified).
- `prod`, `prod_dim`: burn-autodiff's `Prod`/`ProdDim`, `g * prod / x`, NaN at a zero input
  (burn issue #3864); `cumprod`: its zero-safe `CumProd` rule (split at each lane's first
  zero); `cummin`/`cummax`: `CumMin`/`CumMax`, the gradient to the last position up to each
  output where the output equals the input.
- `any`/`all` (and `_dim`): flex's `x != 0` tests, bool outputs never tracked.

Composites (`harness.engine.composites`, api/orderable.rs and stats/mod.rs): `topk_with_indices`
is burn-backend's default, the descending sort then `select` of the first k; `median` is
`sort` then `narrow` at `(n - 1) // 2`; `var` is `(x - mean).square().sum_dim / (n - 1)`.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass

import numpy as np

from . import facts
from .arrays import along_axis_index, norm_dim, scatter_added
from .base import Array, Grad, Tracked, differentiable, untracked
from .facts import (
    ALONG_DIM1,
    TO_ONE,
    UNARY_NONEMPTY,
    Check,
    Condition,
    Diverges,
    binary,
    composite,
    menu,
    unary,
)
from .lattice import ALL_TO_SELF, HALVED_TIE, NAN_OTHER

_RANK = Diverges(
    "*/*/*/shape",
    "burn has no 0-d tensors: full reductions return [1] where torch returns 0-d "
    "(harness.engine.ops.reductions.sum_all)",
)


def along_dim1(name: str, engine: str, torch: str, *, shapes=ALONG_DIM1, **kw) -> Check:
    """A one-input check taking `{dim}`, run along dim 1 of `shapes`."""
    return unary(name, engine, torch, shapes=shapes, params={"dim": 1}, **kw)


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}

# ---- sort -----------------------------------------------------------------------------------


def total_order_key(x: Array) -> Array:
    """Integers that sort as Rust's `total_cmp` orders the floats: -NaN < -inf < ... < -0.0 <
    +0.0 < ... < +inf < +NaN (the sign-magnitude bits turned two's complement). Int and
    bool tensors sort by value (flex's `Ord::cmp`)."""
    if x.dtype.kind in "iub":
        return x.astype(np.int64)
    itype = _SAME_SIZE_INT[x.dtype.itemsize]  # float16 and bfloat16: int16
    bits = np.ascontiguousarray(x).view(itype)
    mask = np.iinfo(itype).max
    return np.where(bits < 0, bits ^ mask, bits)


def argsort_lanes(x: Array, dim: int, descending: bool) -> Array:
    """int64 indices that sort each lane along `dim` by `total_cmp`, ties in their original
    order (see the module docstring)."""
    key = total_order_key(x)
    if descending:
        key = ~key  # reverses the order without overflow
    return np.argsort(key, axis=dim, kind="stable").astype(np.int64)


@dataclass(slots=True)
class Sorted:
    indices: Array  # int64, where each output element came from along dim
    shape: tuple[int, ...]  # the input's shape
    dim: int


def sort(x: Array, /, dim: int, descending: bool) -> tuple[Array, Sorted]:
    """The values of each lane along `dim` in order (see the module docstring for ties, NaN
    and -0.0); `Sorted.indices` are burn's `sort_with_indices` indices.

    PyTorch difference: -0.0 sorts before +0.0 (`total_cmp`), where torch compares them
    equal and keeps their order, so the indices and the gradient of the two zeros swap.
    """
    d = norm_dim("sort", dim, x.ndim)
    idx = argsort_lanes(x, d, descending)
    return np.take_along_axis(x, idx, axis=d), Sorted(idx, x.shape, d)


def sort_backward(s: Sorted, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `SortDim`: scatter_add(dim, zeros, indices, grad).
    return (scatter_added(s.shape, along_axis_index(s.indices, s.dim), g),)


# A menu with ties and signed zeros in the kinks, along dim 1 (lanes of 3 or 4).
_SORT_MENU = menu(("2x3", [(2, 3)]), ("3x4", [(3, 4)]), ("0x3", [(0, 3)]))
_SORT_KINKS = (1.0, -0.5, 1.0, 0.0, -0.0, 2.0)
_ZERO_ORDER = (
    "flex's total_cmp sorts -0.0 before +0.0; torch compares them equal and keeps their order "
    "(harness.engine.ops.ordering.sort)"
)


_PICKED = Condition.only_where(
    "both are positions (the first k picked the other zero)", lambda t, e: (t >= 0) & (e >= 0)
)


def _signed_zeros(indices: str | None, first_k: bool = False) -> tuple[Diverges, ...]:
    """The declarations of a sort-based check whose kinks or specials hold -0.0 and +0.0:
    the indices (check `indices`, None when the op returns none; of the first k only when
    `first_k`) and the gradient, which lands on the other zero."""
    out = [
        Diverges(
            "*/*/[ks]*/vjp.a",
            "gradient of a sort with -0.0 and +0.0: " + _ZERO_ORDER,
            facts.SAME_TOTAL,
        )
    ]
    if indices is not None:
        out.insert(
            0,
            Diverges(
                f"*/*/[ks]*/{glob.escape(indices)}",
                "indices of -0.0 and +0.0: " + _ZERO_ORDER,
                _PICKED
                if first_k
                else Condition.whole("the same indices, in another order", _same_multiset),
            ),
        )
    return tuple(out)


_MEDIAN_NAN = (
    Diverges(
        "*/*/specials/forward",
        "median of a lane with NaN: burn sorts NaN last and takes the lower middle, so the "
        "median is a number; torch's median is NaN (harness.engine.composites.median)",
        Condition.only_where("torch's median is NaN", lambda t, e: np.isnan(t)),
    ),
    Diverges(
        "*/*/specials/forward[[]1]",
        "median index of a lane with NaN: burn's points at the lower middle after NaN sorts "
        "last; torch's at a NaN",
        Condition.only_where("the engine's index is a position", lambda t, e: e >= 0),
    ),
    Diverges(
        "*/*/specials/vjp.a",
        "median's gradient in a lane with NaN goes to burn's (finite) median, torch's to the NaN",
        facts.SAME_TOTAL,
    ),
)


def _same_multiset(t, e) -> bool:
    return t is not None and e is not None and bool(np.all(np.sort(t) == np.sort(e)))


SORT = differentiable(
    "sort",
    sort,
    sort_backward,
    checks=(
        along_dim1(
            "sort",
            "{a}.sort({dim})",
            "torch.sort({a}, dim={dim}, stable=True).values",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros(None),
        ),
        along_dim1(
            "sort_descending",
            "{a}.sort_descending({dim})",
            "torch.sort({a}, dim={dim}, descending=True, stable=True).values",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros(None),
        ),
        along_dim1(
            "sort_with_indices",
            "{a}.sort_with_indices({dim})",
            "tuple(torch.sort({a}, dim={dim}, stable=True))",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros("forward[1]"),
        ),
        along_dim1(
            "sort_descending_with_indices",
            "{a}.sort_descending_with_indices({dim})",
            "tuple(torch.sort({a}, dim={dim}, descending=True, stable=True))",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros("forward[1]"),
        ),
        along_dim1(
            "topk_with_indices",
            "{a}.topk_with_indices(2, {dim})",
            "tuple(torch.topk({a}, 2, {dim}))",
            shapes=_SORT_MENU[:2],
            diverges=_signed_zeros("forward[1]", first_k=True),
        ),
        along_dim1(
            "median",
            "{a}.median({dim})",
            "torch.median({a}, {dim}, keepdim=True).values",
            shapes=_SORT_MENU[:2],
            diverges=_MEDIAN_NAN[:1] + _MEDIAN_NAN[2:],
        ),
        along_dim1(
            "median_with_indices",
            "{a}.median_with_indices({dim})",
            "tuple(torch.median({a}, {dim}, keepdim=True))",
            shapes=_SORT_MENU[:2],
            diverges=_MEDIAN_NAN,
        ),
    ),
)


def argsort(x: Array, /, dim: int, descending: bool) -> Array:
    """int64 indices that sort each lane along `dim` (burn's `argsort`; see `sort`)."""
    return argsort_lanes(x, norm_dim("argsort", dim, x.ndim), descending)


ARGSORT = untracked(
    "argsort",
    argsort,
    because="integer output",
    checks=(
        along_dim1(
            "argsort",
            "{a}.argsort({dim})",
            "torch.argsort({a}, dim={dim}, stable=True)",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros("forward")[:1],
        ),
        along_dim1(
            "argsort_descending",
            "{a}.argsort_descending({dim})",
            "torch.argsort({a}, dim={dim}, descending=True, stable=True)",
            shapes=_SORT_MENU,
            kinks=_SORT_KINKS,
            diverges=_signed_zeros("forward")[:1],
        ),
        along_dim1(
            "argtopk",
            "{a}.argtopk(2, {dim})",
            "torch.topk({a}, 2, {dim}).indices",
            shapes=_SORT_MENU[:2],
            diverges=_signed_zeros("forward", first_k=True)[:1],
        ),
    ),
)

# ---- products -------------------------------------------------------------------------------


@dataclass(slots=True)
class Product:
    x: Array
    out: Array


def prod(x: Array, /) -> tuple[Array, Product]:
    """Product of all elements, shape (1,) (torch returns 0-d).

    PyTorch difference: burn-autodiff's rule `g * prod / x` is NaN at a zero input (burn issue
    #3864) where torch gives the product of the other elements.
    """
    out = np.multiply.reduce(x, axis=None).reshape(1)
    return out, Product(x, out)


def prod_dim(x: Array, /, dim: int) -> tuple[Array, Product]:
    """Product over `dim`, kept with size 1 (see `prod` for the gradient at zeros)."""
    d = norm_dim("prod_dim", dim, x.ndim)
    out = np.multiply.reduce(x, axis=d, keepdims=True)
    return out, Product(x, out)


def prod_backward(s: Product, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn's `(ones * (g * out)) / x`, broadcasting g * out (shape [1] or kept dim) over x.
    x = s.x
    scaled = g * s.out
    if scaled.ndim != x.ndim:  # the full prod's [1] against the input's rank (0-d included)
        scaled = scaled.reshape((1,) * x.ndim)
    return (np.broadcast_to(scaled, x.shape) / x,)


_AT_ZERO = tuple(
    Diverges(
        f"*/*/{valueset}/vjp.a",
        "prod's gradient at a zero input: burn's g * prod / x is 0/0 = NaN (burn issue #3864); "
        "torch gives the product of the other elements (harness.engine.ops.ordering.prod)",
        facts.ENGINE_NONFINITE,
    )
    for valueset in ("kinks", "specials")
)
_PROD_KINKS = (0.0, 2.0, -1.5, 0.5, 1.0, -1.0)
PROD = differentiable(
    "prod",
    prod,
    prod_backward,
    checks=(
        unary(
            "prod",
            "{a}.prod()",
            "torch.prod({a})",
            kinks=_PROD_KINKS,
            diverges=(_RANK, *_AT_ZERO),
            **TO_ONE,
        ),
    ),
)
PROD_DIM = differentiable(
    "prod_dim",
    prod_dim,
    prod_backward,
    checks=(
        along_dim1(
            "prod_dim",
            "{a}.prod_dim({dim})",
            "torch.prod({a}, {dim}, keepdim=True)",
            kinks=_PROD_KINKS,
            diverges=_AT_ZERO,
        ),
    ),
)


@dataclass(slots=True)
class Cumulated:
    x: Array
    dim: int


def cumprod(x: Array, /, dim: int) -> tuple[Array, Cumulated]:
    """Cumulative product along `dim`, multiplied left to right in the dtype (flex's loop).

    PyTorch difference: with infinite or NaN inputs burn's gradient (float masks multiplied
    in, a division by x) is NaN where torch's is finite or 0.
    """
    d = norm_dim("cumprod", dim, x.ndim)
    return np.cumprod(x, axis=d), Cumulated(x, d)


def _reverse_cumsum(a: Array, d: int) -> Array:
    return np.flip(np.cumsum(np.flip(a, d), axis=d), d)


def cumprod_backward(s: Cumulated, g: Array, tracked: Tracked) -> tuple[Grad]:
    # burn-autodiff's `CumProd`, step for step: the classic reverse_cumsum(g * out) / x
    # before each lane's first zero, the product with that zero replaced by one at it, and 0
    # after it (masks as floats, so NaN and inf propagate as in burn's kernels).
    x, d = s.x, s.dim
    t = x.dtype.type
    zero_mask = (x == 0).astype(x.dtype)
    zeros_seen = np.cumsum(zero_mask, axis=d)
    before_first = (zeros_seen < t(0.5)).astype(x.dtype)
    at_first = zero_mask * (zeros_seen < t(1.5)).astype(x.dtype)
    output_one = np.cumprod(x + at_first, axis=d)
    output = output_one * before_first
    classic = _reverse_cumsum(g * output, d) / (x + zero_mask)
    omitted = _reverse_cumsum(g * output_one, d)
    return (classic * before_first + omitted * at_first,)


CUMPROD = differentiable(
    "cumprod",
    cumprod,
    cumprod_backward,
    checks=(
        along_dim1(
            "cumprod",
            "{a}.cumprod({dim})",
            "torch.cumprod({a}, {dim})",
            shapes=menu(("3x4", [(3, 4)]), ("2x3x2", [(2, 3, 2)]), ("0x2", [(0, 2)])),
            # A zero first, in the middle and last along the rows of 3x4: burn's split.
            kinks=(1.5, 0.0, -2.0, 0.0, 0.5, 2.0, -1.0, 0.0),
            diverges=(
                Diverges(
                    "*/*/specials/vjp.a",
                    "cumprod's gradient with infinite or NaN inputs: burn's masks are floats "
                    "multiplied in (0 * inf = NaN leaks into regions torch zeroes), and its "
                    "classic form divides by x (harness.engine.ops.ordering.cumprod_backward)",
                    facts.NONFINITE_EITHER,
                ),
            ),
        ),
    ),
)


def cummin(x: Array, /, dim: int) -> tuple[Array, Cumulated]:
    """Running minimum along `dim`; a NaN, once met, stays (flex's `val.is_nan() || val <
    acc`).

    PyTorch difference: burn's rule takes the sources where `out == x`, which a NaN never is,
    so after a NaN the gradient goes to the last finite source; torch's goes to the NaN.
    """
    d = norm_dim("cummin", dim, x.ndim)
    return np.minimum.accumulate(x, axis=d), Cumulated(x, d)


def cummax(x: Array, /, dim: int) -> tuple[Array, Cumulated]:
    """Running maximum along `dim` (NaN stays, and its gradient goes elsewhere, as `cummin`)."""
    d = norm_dim("cummax", dim, x.ndim)
    return np.maximum.accumulate(x, axis=d), Cumulated(x, d)


def _source_backward(s: Cumulated, g: Array, out: Array) -> Array:
    # burn's `CumMin`/`CumMax`: sources are where out == x; each output takes the last source
    # up to it (int cummax of arange * is_source), and g is scatter-added there.
    x, d = s.x, s.dim
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    arange = np.arange(x.shape[d]).reshape(shape)
    source = np.maximum.accumulate(arange * (out == x), axis=d)
    return scatter_added(x.shape, along_axis_index(source, d), g)


def cummin_backward(s: Cumulated, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (_source_backward(s, g, np.minimum.accumulate(s.x, axis=s.dim)),)


def cummax_backward(s: Cumulated, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (_source_backward(s, g, np.maximum.accumulate(s.x, axis=s.dim)),)


_CUM_NAN = Diverges(
    "*/*/specials/vjp.a",
    "cummin/cummax gradient after a NaN: burn's sources are where out == x, which NaN never "
    "is, so the gradient goes to the last finite source; torch sends it to the NaN "
    "(harness.engine.ops.ordering.cummax)",
    facts.SAME_TOTAL,
)
_CUM_MENU = menu(("3x4", [(3, 4)]), ("2x3x2", [(2, 3, 2)]))
_CUM_KINKS = (1.0, 1.0, -0.5, 2.0, 2.0, -0.5, 0.0, 3.0)
CUMMIN = differentiable(
    "cummin",
    cummin,
    cummin_backward,
    checks=(
        along_dim1(
            "cummin",
            "{a}.cummin({dim})",
            "torch.cummin({a}, {dim}).values",
            shapes=_CUM_MENU,
            kinks=_CUM_KINKS,
            diverges=(_CUM_NAN,),
        ),
    ),
)
CUMMAX = differentiable(
    "cummax",
    cummax,
    cummax_backward,
    checks=(
        along_dim1(
            "cummax",
            "{a}.cummax({dim})",
            "torch.cummax({a}, {dim}).values",
            shapes=_CUM_MENU,
            kinks=_CUM_KINKS,
            diverges=(_CUM_NAN,),
        ),
    ),
)

# ---- any / all ------------------------------------------------------------------------------


def any_all(x: Array, /) -> Array:
    """Whether any element is non-zero (NaN counts), shape (1,) (flex's `any_float`)."""
    return np.array([np.any(x != 0)])


def all_all(x: Array, /) -> Array:
    """Whether every element is non-zero (NaN counts), shape (1,) (flex's `all_float`)."""
    return np.array([np.all(x != 0)])


def any_dim(x: Array, /, dim: int) -> Array:
    """Whether any element along `dim` is non-zero, the dim kept."""
    return np.any(x != 0, axis=norm_dim("any_dim", dim, x.ndim), keepdims=True)


def all_dim(x: Array, /, dim: int) -> Array:
    """Whether every element along `dim` is non-zero, the dim kept."""
    return np.all(x != 0, axis=norm_dim("all_dim", dim, x.ndim), keepdims=True)


def _boolean(name: str, forward, engine: str, torch: str, **kw):
    return untracked(
        name, forward, because="boolean output", checks=(unary(name, engine, torch, **kw),)
    )


_ZEROS = (0.0, 1.0, -0.0, 0.0, 2.0, 0.0)
ANY = _boolean(
    "any", any_all, "{a}.any()", "torch.any({a})", kinks=_ZEROS, diverges=(_RANK,), **TO_ONE
)
ALL = _boolean(
    "all", all_all, "{a}.all()", "torch.all({a})", kinks=_ZEROS, diverges=(_RANK,), **TO_ONE
)
ANY_DIM = _boolean(
    "any_dim",
    any_dim,
    "{a}.any_dim(1)",
    "torch.any({a}, 1, keepdim=True)",
    shapes=ALONG_DIM1,
    kinks=_ZEROS,
)
ALL_DIM = _boolean(
    "all_dim",
    all_dim,
    "{a}.all_dim(1)",
    "torch.all({a}, 1, keepdim=True)",
    shapes=ALONG_DIM1,
    kinks=_ZEROS,
)


# ---- composites: checks only ----------------------------------------------------------------


_VAR_SPECIALS = Diverges(
    "*/*/specials/vjp.a",
    "var's gradient at infinite inputs: burn's composite gives (inf - inf) * ... = NaN where "
    "torch's var backward gives +-inf (harness.engine.composites.var)",
    facts.NONFINITE_EITHER,
)
_VAR_MEAN_INF = Diverges(
    "*/*/specials/forward[[]1]",
    "var_mean's mean of a lane with an infinity: burn's mean_dim is +-inf; torch.var_mean's "
    "one-pass mean gives NaN (torch.mean gives inf) (harness.engine.composites.var_mean)",
    Condition.only_where(
        "torch is NaN and the engine infinite", lambda t, e: np.isnan(t) & np.isinf(e)
    ),
)
_VAR_F32_INVERSE = Diverges(
    "float64/2x3x2/random/vjp.a",
    "var's float64 gradient: burn divides by `n as f32` with div_scalar, whose backward "
    "multiplies by 1/n computed in f32 (inexact for n = 3 here) "
    "(harness.engine.ops.elementwise.div_scalar_backward)",
    facts.close(1e-6),
)
_ABS_AT_NAN = Diverges(
    "*/*/specials/vjp.a",
    "max_abs at NaN: it is abs().max_dim(), and abs's rule g * sign(x) is NaN at NaN where "
    "torch's abs backward gives 0 (harness.engine.ops.unary.absolute)",
    facts.TORCH_ZERO_ENGINE_NAN,
)
# min_pair is mask_where(other < self), max_pair's mirror: the same relations hold.
_MIN_PAIR = (
    Diverges(
        "*/*/random/vjp.a",
        "burn's min_pair is mask_where(other < self): at a tie the whole gradient goes to self; "
        "torch.minimum gives half to each (harness.engine.composites.min_pair)",
        HALVED_TIE,
    ),
    Diverges(
        "*/*/*/vjp.b",
        "burn's min_pair is mask_where(other < self): other gets no gradient at a tie or where "
        "either is NaN; torch gives it half at a tie, all at a NaN",
        ALL_TO_SELF,
    ),
    Diverges(
        "*/*/specials/forward",
        "burn's min_pair keeps self where other is NaN (the comparison is false); "
        "torch.minimum propagates the NaN",
        NAN_OTHER,
    ),
)

COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    composite(c)
    for c in (
        # Lanes of 2 and 3: var divides by 1 and 2 (exact in f32), var_bias by 2 and 3.
        along_dim1(
            "var",
            "{a}.var({dim})",
            "torch.var({a}, {dim}, keepdim=True)",
            diverges=(_VAR_SPECIALS,),
        ),
        along_dim1(
            "var_bias",
            "{a}.var_bias({dim})",
            "torch.var({a}, {dim}, correction=0, keepdim=True)",
            diverges=(_VAR_SPECIALS, _VAR_F32_INVERSE),
        ),
        along_dim1(
            "var_mean",
            "{a}.var_mean({dim})",
            "tuple(torch.var_mean({a}, {dim}, keepdim=True))",
            diverges=(_VAR_SPECIALS, _VAR_MEAN_INF),
        ),
        along_dim1(
            "var_mean_bias",
            "{a}.var_mean_bias({dim})",
            "tuple(torch.var_mean({a}, {dim}, correction=0, keepdim=True))",
            diverges=(_VAR_SPECIALS, _VAR_MEAN_INF, _VAR_F32_INVERSE),
        ),
        along_dim1(
            "topk",
            "{a}.topk(2, {dim})",
            "torch.topk({a}, 2, {dim}).values",
            shapes=_SORT_MENU[:1],
            specials=False,
            diverges=(
                Diverges(
                    "*/*/*/error",
                    "topk on the autodiff device: burn-autodiff's float_topk is "
                    "unimplemented!() (use topk_with_indices); torch's topk is differentiable "
                    "(harness.engine.composites.topk)",
                ),
            ),
        ),
        binary(
            "min_pair",
            "{a}.min_pair({b})",
            "torch.minimum({a}, {b})",
            a_domain="grid",
            b_domain="grid",
            shapes=menu(("4x5", [(4, 5), (4, 5)]), ("3", [(3,), (3,)])),
            diverges=_MIN_PAIR,
        ),
        binary(
            "dot",
            "{a}.dot({b})",
            "torch.dot({a}, {b})",
            shapes=menu(("4", [(4,), (4,)])),
            diverges=(_RANK,),
            **TO_ONE,
        ),
        along_dim1(
            "sum_dims",
            "{a}.sum_dims([0, -1])",
            "torch.sum({a}, (0, -1), keepdim=True)",
            shapes=ALONG_DIM1[:2],
        ),
        along_dim1(
            "mean_dims",
            "{a}.mean_dims([0, 1])",
            "torch.mean({a}, (0, 1), keepdim=True)",
            shapes=ALONG_DIM1[:2],
        ),
        along_dim1(
            "prod_dims",
            "{a}.prod_dims([1, 0])",
            "torch.prod(torch.prod({a}, 1, keepdim=True), 0, keepdim=True)",
            shapes=ALONG_DIM1[:2],
        ),
        along_dim1(
            "max_dims",
            "{a}.max_dims([0, 1])",
            "torch.max(torch.max({a}, 0, keepdim=True).values, 1, keepdim=True).values",
            shapes=ALONG_DIM1[:2],
        ),
        along_dim1(
            "min_dims",
            "{a}.min_dims([0, 1])",
            "torch.min(torch.min({a}, 0, keepdim=True).values, 1, keepdim=True).values",
            shapes=ALONG_DIM1[:2],
        ),
        along_dim1(
            "max_abs_dim",
            "{a}.max_abs_dim({dim})",
            "torch.max(torch.abs({a}), {dim}, keepdim=True).values",
            shapes=ALONG_DIM1[:2],
            diverges=(_ABS_AT_NAN,),
        ),
        along_dim1(
            "max_abs_dims",
            "{a}.max_abs_dims([0, 1])",
            "torch.max(torch.max({a}.abs(), 0, keepdim=True).values, 1, keepdim=True).values",
            shapes=ALONG_DIM1[:2],
            diverges=(_ABS_AT_NAN,),
        ),
        unary(
            "max_abs",
            "{a}.max_abs()",
            "torch.max(torch.abs({a}).reshape(-1), 0).values",
            shapes=UNARY_NONEMPTY,
            diverges=(_RANK, _ABS_AT_NAN),
            **TO_ONE,
        ),
        # The 4 observations of dim 0 divided by n - 1 = 3: div_scalar's f32 1/3 in float64.
        unary(
            "cov",
            "{a}.cov(0, 1)",
            "torch.cov({a}.T)",
            shapes=menu(("4x3", [(4, 3)])),
            diverges=(
                Diverges(
                    "float64/*/*/vjp.a",
                    "cov's float64 gradient: burn divides by (n - c) as f32 with div_scalar, "
                    "whose backward multiplies by 1/3 computed in f32 "
                    "(harness.engine.ops.elementwise.div_scalar_backward)",
                    facts.close(1e-6),
                ),
            ),
        ),
        binary(
            "is_close",
            "{a}.is_close({b}, 0.1, 0.5)",
            "torch.isclose({a}, {b}, 0.1, 0.5)",
            shapes=menu(("3x2", [(3, 2), (3, 2)]), ("4", [(4,), (4,)])),
        ),
        unary(
            "contains_nan",
            "{a}.contains_nan()",
            "torch.isnan({a}).any()",
            diverges=(_RANK,),
            **TO_ONE,
        ),
    )
)
