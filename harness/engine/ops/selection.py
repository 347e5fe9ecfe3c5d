"""Selection and scatter primitives, `remainder` and `cross`, each with burn-autodiff's rule
(`crates/burn-autodiff/src/ops/tensor.rs`: `float_select`, `float_select_assign`,
`float_scatter`, `float_remainder`, `float_cross`), burn commit
2c06be351006851d42fdb6df16b976f4a82d9747.

`select_assign` and `scatter` take burn's `IndexingUpdateOp` as `update="add"`: flex (the
seed device) implements only `Add` (burn-backend's default `float_scatter` /
`float_select_assign` are `unimplemented!` for `Assign`, and flex does not override them), so
`update="assign"` raises NotImplementedError with burn's message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from . import facts
from .arrays import INT64, along_axis_index, fmt, norm_dim, scalar_of, unbroadcast
from .base import Array, Grad, Tracked, differentiable
from .elementwise import Operands
from .facts import (
    BOOL,
    INDEX,
    INT,
    Check,
    Condition,
    Diverges,
    Input,
    binary,
    composite,
    menu,
    unary,
)
from .indexing import check_indices


def check_update(op: str, update: str) -> None:
    """flex implements only `IndexingUpdateOp::Add` (see the module docstring)."""
    if update == "assign":
        raise NotImplementedError(f"float_{op} with Assign update is not implemented")
    if update != "add":
        raise ValueError(f"{op}: update must be 'add' or 'assign', got {update!r}")


def _int_indices(op: str, indices: Array) -> Array:
    if indices.dtype != INT64:
        raise TypeError(f"{op}: indices must be int64, got {indices.dtype}")
    return indices


# ---- select ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Selected:
    shape: tuple[int, ...]  # the input's shape
    dim: int
    indices: Array  # int64, rank 1


def select(x: Array, /, dim: int, indices: Array) -> tuple[Array, Selected]:
    """The slices at `indices` (rank-1 int64, repeats allowed) along `dim`, in that order
    (torch's `index_select`); an index outside the dim raises, as flex's bounds check."""
    d = norm_dim("select", dim, x.ndim)
    _int_indices("select", indices)
    if indices.ndim != 1:
        raise ShapeError(f"select: indices must have rank 1, got shape {fmt(indices.shape)}")
    check_indices("select", indices, x.shape[d])
    return np.take(x, indices, axis=d), Selected(x.shape, d, indices)


def _select_added(shape, d: int, indices: Array, g: Array) -> Array:
    # burn's `float_select_add(zeros, dim, indices, grad)`: repeated indices add up.
    z = np.zeros(shape, dtype=g.dtype)
    index = [slice(None)] * len(shape)
    index[d] = indices
    np.add.at(z, tuple(index), g)
    return z


def select_backward(s: Selected, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (_select_added(s.shape, s.dim, s.indices, g),)


SELECT = differentiable(
    "select",
    select,
    select_backward,
    checks=(
        # 4 draws of 3 rows repeat some: the backward adds them.
        Check(
            "select",
            "{a}.select({dim}, {i})",
            "torch.index_select({a}, {dim}, {i})",
            (Input("a"), Input("i", INDEX)),
            menu(("3x2[4]", [(3, 2), (4,)]), ("3[5]", [(3,), (5,)])),
            params={"dim": 0},
        ),
        Check(
            "select[dim1]",
            "{a}.select({dim}, {i})",
            "torch.index_select({a}, {dim}, {i})",
            (Input("a"), Input("i", INDEX)),
            menu(("2x3[2]", [(2, 3), (2,)])),
            params={"dim": 1},
        ),
    ),
)


@dataclass(slots=True)
class SelectAssigned:
    dim: int
    indices: Array


def select_assign(
    x: Array, values: Array, /, dim: int, indices: Array, update: str = "add"
) -> tuple[Array, SelectAssigned]:
    """`self` with `values` added at `indices` along `dim` (burn's `select_assign` with
    `IndexingUpdateOp::Add`; repeated indices add up). `values` has `len(indices)` along
    `dim` (burn's `TensorCheck::select_assign`)."""
    check_update("select_assign", update)
    d = norm_dim("select_assign", dim, x.ndim)
    _int_indices("select_assign", indices)
    if values.shape[d] != indices.shape[0]:
        raise ShapeError(
            f"select_assign: Number of indices ({indices.shape[0]}) should be equal to value "
            f"tensor dimensions {fmt(values.shape)} on axis (dim={d})"
        )
    check_indices("select_assign", indices, x.shape[d])
    out = x.copy()
    index = [slice(None)] * x.ndim
    index[d] = indices
    np.add.at(out, tuple(index), values)
    return out, SelectAssigned(d, indices)


def select_assign_backward(s: SelectAssigned, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn-autodiff's `IndexSelectDimAssign` (Add): g for self, select(g) for the values.
    pa, pb = tracked
    return (g if pa is not None else None), (
        np.take(g, s.indices, axis=s.dim) if pb is not None else None
    )


SELECT_ASSIGN = differentiable(
    "select_assign",
    select_assign,
    select_assign_backward,
    checks=(
        Check(
            "select_assign",
            "{a}.select_assign({dim}, {i}, {b})",
            "{a}.index_add({dim}, {i}, {b})",
            (Input("a"), Input("i", INDEX), Input("b")),
            menu(("3x2[4]<-4x2", [(3, 2), (4,), (4, 2)])),
            params={"dim": 0},
        ),
    ),
)

# ---- scatter --------------------------------------------------------------------------------


@dataclass(slots=True)
class Scattered:
    index: tuple[Array, ...]  # the fancy index of `indices` along dim


def scatter(
    x: Array, values: Array, /, dim: int, indices: Array, update: str = "add"
) -> tuple[Array, Scattered]:
    """`self` with `values[i][j]` added at `[i][indices[i][j]]` along `dim` (burn's `scatter`
    with `IndexingUpdateOp::Add`, torch's `scatter_add`); `indices` and `values` have the
    same shape, and their other dims fit inside self's."""
    check_update("scatter", update)
    d = norm_dim("scatter", dim, x.ndim)
    _int_indices("scatter", indices)
    if indices.shape != values.shape:
        raise ShapeError(
            "scatter: Indices tensor shape should be the same as the value tensor shape. "
            f"The shape differs: {fmt(indices.shape)} != {fmt(values.shape)}"
        )
    if indices.ndim != x.ndim or any(
        n > m for i, (n, m) in enumerate(zip(indices.shape, x.shape, strict=True)) if i != d
    ):
        raise ShapeError(
            f"scatter: indices shape {fmt(indices.shape)} does not fit tensor shape "
            f"{fmt(x.shape)} outside dim {d}"
        )
    check_indices("scatter", indices, x.shape[d])
    index = along_axis_index(indices, d)
    out = x.copy()
    np.add.at(out, index, values)
    return out, Scattered(index)


def scatter_backward(s: Scattered, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn-autodiff's `ScatterAdd`: g for self, gather(dim, g, indices) for the values.
    pa, pb = tracked
    return (g if pa is not None else None), (g[s.index] if pb is not None else None)


SCATTER = differentiable(
    "scatter",
    scatter,
    scatter_backward,
    checks=(
        Check(
            "scatter",
            "{a}.scatter({dim}, {i}, {b})",
            "torch.scatter_add({a}, {dim}, {i}, {b})",
            (Input("a"), Input("i", INDEX), Input("b")),
            # 3 draws into 2 columns repeat one: the forward adds both.
            menu(("3x2<-3x3", [(3, 2), (3, 3), (3, 3)]), ("3x4<-2x2", [(3, 4), (2, 2), (2, 2)])),
            params={"dim": 1},
        ),
    ),
)

# ---- scatter_nd -----------------------------------------------------------------------------


@dataclass(slots=True)
class ScatteredNd:
    index: tuple[Array, ...]  # one index array per leading dim of self
    assign: bool


def scatter_nd(
    x: Array, values: Array, /, indices: Array, update: str = "add"
) -> tuple[Array, ScatteredNd]:
    """burn's `scatter_nd`: the last axis of `indices` (size K) addresses the leading K dims
    of self; `values` has shape `indices.shape[:-1] + self.shape[K:]` and is added
    (`update="add"`) or written (`"assign"`, the last write winning, as flex's loop) there.

    burn-autodiff's rules: Add passes g to self and `gather_nd(g)` to the values; Assign
    zeroes g at the written positions for self. flex also has Mul, Min and Max, not
    reproduced here (NotImplementedError).
    """
    if update not in ("add", "assign"):
        raise NotImplementedError(f"scatter_nd: update {update!r} is not reproduced")
    _int_indices("scatter_nd", indices)
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim == 0 or k > x.ndim:
        raise ShapeError(
            f"scatter_nd: indices of shape {fmt(indices.shape)} do not address {fmt(x.shape)}"
        )
    expected = (*indices.shape[:-1], *x.shape[k:])
    if values.shape != expected:
        raise ShapeError(
            f"scatter_nd: values shape {fmt(values.shape)} is not {fmt(expected)} "
            "(indices.shape[:-1] + self.shape[K:])"
        )
    index = tuple(indices[..., j] for j in range(k))
    for j, column in enumerate(index):
        check_indices("scatter_nd", column, x.shape[j])
    out = x.copy()
    if update == "add":
        np.add.at(out, index, values)
    else:
        out[index] = values
    return out, ScatteredNd(index, update == "assign")


def scatter_nd_backward(s: ScatteredNd, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    pa, pb = tracked
    ga = None
    if pa is not None:
        ga = g
        if s.assign:
            ga = g.copy()
            ga[s.index] = 0
    return ga, (g[s.index] if pb is not None else None)


SCATTER_ND = differentiable(
    "scatter_nd",
    scatter_nd,
    scatter_nd_backward,
    checks=(
        # 4 index rows into 3 x 3 repeat some: the forward adds them (index_put accumulates).
        Check(
            "scatter_nd",
            "{a}.scatter_nd({i}, {b})",
            "{a}.index_put(tuple({i}.unbind(-1)), {b}, accumulate=True)",
            (Input("a"), Input("i", INDEX), Input("b")),
            menu(
                ("3x3x2[4x2]", [(3, 3, 2), (4, 2), (4, 2)]), ("3x2[5x1]", [(3, 2), (5, 1), (5, 2)])
            ),
            params={"dim": 0},
        ),
    ),
)

# ---- remainder ------------------------------------------------------------------------------


def remainder(a: Array, b: Array, /) -> tuple[Array, Operands]:
    """Python-style remainder (the sign of the divisor): flex's `((a % b) + b) % b`, with
    Rust's `%` (C's fmod), broadcasting.

    burn-autodiff's rule: `g` for self, `g * -floor(a / b)` for the divisor.
    PyTorch differences: a dividend too small to move `b` (a subnormal against a divisor of
    the other sign) gives `(a % b + b) % b = b % b = 0` where torch gives `b`; at infinite
    operands the formula gives NaN where torch's kernel gives `b` or inf.
    """
    return np.fmod(np.fmod(a, b) + b, b), Operands(a, b)


def remainder_backward(s: Operands, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    a, b = s.a, s.b
    pa, pb = tracked
    ga = unbroadcast(g, a.shape) if pa is not None else None
    gb = unbroadcast(g * np.negative(np.floor(a / b)), b.shape) if pb is not None else None
    return ga, gb


REMAINDER = differentiable(
    "remainder",
    remainder,
    remainder_backward,
    checks=(
        binary(
            "remainder",
            "{a}.remainder({b})",
            "torch.remainder({a}, {b})",
            b_domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/forward",
                    "remainder at infinite or subnormal operands: flex's ((a % b) + b) % b "
                    "gives NaN where torch's a - b * floor(a / b) gives b or inf, and 0 for a "
                    "subnormal a against a b of the other sign ((a % b) + b rounds to b, and "
                    "b % b is 0), where torch gives b (harness.engine.ops.selection.remainder)",
                    Condition.only_where(
                        "either value is NaN or infinite, or the engine's is 0",
                        lambda t, e: ~(np.isfinite(t) & np.isfinite(e)) | (e == 0),
                    ),
                ),
                Diverges(
                    "*/*/specials/vjp.b",
                    "remainder's divisor gradient at infinite operands: burn's "
                    "g * -floor(a / b) is NaN or inf where torch's is finite",
                    facts.NONFINITE_EITHER,
                ),
            ),
        ),
    ),
)


def remainder_scalar(x: Array, /, value) -> tuple[Array, None]:
    """`remainder` by a scalar (cast to this dtype): flex's `((a % s) + s) % s`; burn-autodiff's
    `float_remainder_scalar` passes the gradient unchanged (see `remainder` for a subnormal
    dividend)."""
    s = scalar_of(x, value)
    return np.fmod(np.fmod(x, s) + s, s), None


def remainder_scalar_backward(s: None, g: Array, tracked: Tracked) -> tuple[Grad]:
    return (g,)


REMAINDER_SCALAR = differentiable(
    "remainder_scalar",
    remainder_scalar,
    remainder_scalar_backward,
    checks=(
        unary(
            "remainder_scalar",
            "{a}.remainder_scalar(-0.75)",
            "torch.remainder({a}, -0.75)",
            diverges=(
                Diverges(
                    "*/*/specials/forward",
                    "remainder_scalar at infinite or subnormal dividends: flex's "
                    "((a % s) + s) % s gives NaN at +-inf and 0 for a subnormal of the other "
                    "sign, where torch gives NaN, s or a (harness.engine.ops.selection.remainder)",
                    Condition.only_where(
                        "either value is NaN or infinite, or the engine's is 0",
                        lambda t, e: ~(np.isfinite(t) & np.isfinite(e)) | (e == 0),
                    ),
                ),
            ),
        ),
    ),
)

# ---- cross ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Crossed:
    a: Array
    b: Array
    dim: int


def cross(a: Array, b: Array, /, dim: int) -> tuple[Array, Crossed]:
    """The cross product of 3-vectors along `dim` (flex asserts that dim has size 3), with
    broadcasting of the other dims."""
    d = norm_dim("cross", dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise ShapeError(
            f"cross: cross product requires dimension {d} to have size 3, got "
            f"{fmt(a.shape)} and {fmt(b.shape)}"
        )
    return np.cross(a, b, axis=d), Crossed(a, b, d)


def cross_backward(s: Crossed, g: Array, tracked: Tracked) -> tuple[Grad, Grad]:
    # burn-autodiff's `Cross`: cross(b, g) for a, cross(g, a) for b.
    pa, pb = tracked
    ga = unbroadcast(np.cross(s.b, g, axis=s.dim), s.a.shape) if pa is not None else None
    gb = unbroadcast(np.cross(g, s.a, axis=s.dim), s.b.shape) if pb is not None else None
    return ga, gb


CROSS = differentiable(
    "cross",
    cross,
    cross_backward,
    checks=(
        binary(
            "cross",
            "{a}.cross({b}, {dim})",
            "torch.linalg.cross({a}, {b}, dim={dim})",
            shapes=menu(("4x3", [(4, 3), (4, 3)]), ("bcast", [(4, 3), (1, 3)])),
            params={"dim": -1},
        ),
    ),
)


# ---- composites: checks only ----------------------------------------------------------------


_F32_CONSTANT = Diverges(
    "float64/*/*/*",
    "deg2rad/rad2deg scale by burn's f32 constant (f32::consts::PI / 180.0), so float64 "
    "values are off by its f32 rounding (harness.engine.composites.deg2rad)",
    facts.close(1e-7),
)


def _grid_scalar(name: str, torch: str) -> Check:
    """A `*_scalar` comparison (burn's names; `*_elem` are its aliases) against the value in
    the torch spelling, on the integer grid so that ties occur."""
    value = torch.rsplit(", ", 1)[1].rstrip(")")
    return unary(name, f"{{a}}.{name}({value})", torch, domain="grid")


COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    composite(c)
    for c in (
        Check(
            "mask_select",
            "{a}.mask_select({m})",
            "torch.masked_select({a}, {m})",
            (Input("a"), Input("m", BOOL)),
            menu(("3x2", [(3, 2), (3, 2)]), ("4", [(4,), (4,)])),
        ),
        unary(
            "deg2rad",
            "{a}.deg2rad()",
            "torch.deg2rad({a})",
            diverges=(_F32_CONSTANT,),
        ),
        unary(
            "rad2deg",
            "{a}.rad2deg()",
            "torch.rad2deg({a})",
            diverges=(
                Diverges(
                    "*/*/*/*",
                    "rad2deg scales by burn's 180.0 / f32::consts::PI computed in f32 "
                    "(57.295776), torch by 180 / pi rounded to the dtype (57.29578 in "
                    "float32): one f32 ulp apart (harness.engine.composites.rad2deg)",
                    facts.close(1e-6),
                ),
            ),
        ),
        unary(
            "fmod_scalar",
            "{a}.fmod_scalar(-0.75)",
            "torch.fmod({a}, -0.75)",
        ),
        unary("bool", "{a}.bool()", "{a} != 0"),
        Check(
            "one_hot_fill",
            "{i}.one_hot_fill(4, 2.0, -1.0, 0)",
            "torch.movedim(torch.nn.functional.one_hot({i} % 4, 4) * 3 - 1, -1, 0)",
            (Input("i", INT),),
            menu(("3x2", [(3, 2)])),
        ),
        Check(
            "take",
            "{a}.take({dim}, {i})",
            "torch.index_select({a}, {dim}, {i}.reshape(-1)).reshape(2, 2, 2)",
            (Input("a"), Input("i", INDEX)),
            menu(("2x3[2x2]", [(2, 3), (2, 2)])),
            params={"dim": 1},
        ),
        *(
            _grid_scalar(name, torch)
            for name, torch in (
                ("equal_scalar", "torch.eq({a}, 1.0)"),
                ("not_equal_scalar", "torch.ne({a}, 1.0)"),
                ("greater_scalar", "torch.gt({a}, 0.0)"),
                ("greater_equal_scalar", "torch.ge({a}, 0.0)"),
                ("lower_scalar", "torch.lt({a}, 0.0)"),
                ("lower_equal_scalar", "torch.le({a}, 0.0)"),
            )
        ),
        # burn wraps a negative class (adds num_classes): torch's one_hot of i % 4 is that.
        Check(
            "one_hot",
            "{i}.one_hot(4)",
            "torch.nn.functional.one_hot({i} % 4, 4)",
            (Input("i", INT),),
            menu(("3x2", [(3, 2)]), ("5", [(5,)])),
        ),
        binary(
            "fmod",
            "{a}.fmod({b})",
            "torch.fmod({a}, {b})",
            b_domain="nonzero",
            diverges=(
                Diverges(
                    "*/*/specials/*",
                    "fmod at infinite or NaN operands: burn's a - b * trunc(a / b) gives NaN "
                    "(inf - inf, inf * 0 outside its one correction) where C's fmod does not, "
                    "and its gradient follows (harness.engine.composites.fmod)",
                    facts.NONFINITE_EITHER,
                ),
            ),
        ),
    )
)
