"""Each engine op paired with its PyTorch counterpart, spelled once.

An `OpPair` holds two expression templates, one per framework, over named inputs (`{a}`,
`{b}` float tensors, `{m}` a bool mask, `{i}` int64 indices) and a few named parameters
(`{dim}`, `{dtype}`, `{other}`). The matrix (`harness.ops.matrix`) compiles the templates into
functions; the fuzzer (`harness.ops.fuzz`) formats them with its own variable names and prints
the very text it ran as a case file. So a spelling (PyTorch's `keepdim=True`, `transpose`,
`torch.where` argument order...) lives in exactly one place.

Layouts: burn has no 0-d tensors, so full reductions return `[1]` where PyTorch returns 0-d.
Such a pair declares `torch_layout="{out}.reshape(1)"`: values are compared after that mapping,
and the matrix separately records the raw shape difference, which is a declared divergence
(see `harness.ops.divergences`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.engine.tensor import TENSOR_OPS

# Input kinds: "float" (differentiable, the matrix dtype), "bool" (mask), "index" (int64 within
# the indexed dim of the first input), "int" (int64 values). Domains restrict float draws.
FLOAT, BOOL, INDEX, INT = "float", "bool", "index", "int"
DOMAINS = ("any", "positive", "nonzero", "grid")


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


@dataclass(frozen=True)
class OpPair:
    """An engine op and its PyTorch counterpart.

    `name` is unique (a variant adds a suffix: `powi_scalar[0]`); `method` is the Tensor method
    (a key of `TENSOR_OPS`). `kinks` are values put into the first float input for the "kinks"
    value set (None: the op has no kink worth a cell); `specials=False` skips NaN/inf/-0.0/
    subnormal inputs where they are meaningless (float -> int truncation is undefined for NaN).
    """

    name: str
    method: str
    engine: str
    torch: str
    inputs: tuple[Input, ...]
    shapes: tuple[ShapeCase, ...]
    params: dict = field(default_factory=dict)
    torch_layout: str = "{out}"
    layout_note: str = ""
    kinks: tuple[float, ...] | None = None
    specials: bool = True

    @property
    def op(self) -> str:
        """The engine's op name (its backward-rule key)."""
        return TENSOR_OPS[self.method]

    @property
    def float_inputs(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.kind == FLOAT)


def template_args(
    p: OpPair, dtype: str, names: dict[str, str] | None = None, params: dict | None = None
) -> dict:
    """Values for a template's fields: input names (or the caller's variable names), the
    dtype, the other float dtype, and the parameters (the pair's, overridden by `params`)."""
    other = "float64" if dtype == "float32" else "float32"
    args = {n: n for n in ("a", "b", "m", "i")}
    args.update(names or {})
    return {**args, "dtype": dtype, "other": other, **p.params, **(params or {})}


def render(
    p: OpPair, dtype: str, names: dict[str, str], params: dict | None = None
) -> tuple[str, str]:
    """(engine expression, torch expression mapped to the engine's layout) as source text."""
    args = template_args(p, dtype, names, params)
    torch_expr = p.torch.format(**args)
    if p.torch_layout != "{out}":
        torch_expr = p.torch_layout.format(out=f"({torch_expr})")
    return p.engine.format(**args), torch_expr


def _menu(*entries: tuple[str, tuple]) -> tuple[ShapeCase, ...]:
    return tuple(ShapeCase(id_, tuple(tuple(s) for s in shapes)) for id_, shapes in entries)


A = (Input("a"),)
AB = (Input("a"), Input("b"))
UNARY = _menu(("0d", [()]), ("3", [(3,)]), ("3x2", [(3, 2)]), ("empty", [(0, 2)]))
UNARY_NONEMPTY = UNARY[:3]
BINARY = _menu(
    ("0d", [(), ()]),
    ("3", [(3,), (3,)]),
    ("3x2", [(3, 2), (3, 2)]),
    ("bcast", [(3, 2), (1, 2)]),
    ("empty", [(0, 2), (0, 2)]),
)
ALONG_DIM1 = _menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("empty", [(0, 2)]))
TWO_D = _menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)]), ("empty", [(0, 2)]))

SCALAR = 0.3  # not exactly representable: shows that both sides round it to the dtype first
ZERO_KINKS = (0.0, -0.0, 1.0, -1.0, 0.0, 2.0)
CLAMP_KINKS = (-0.5, 0.5, 0.0, -1.0, 1.0, 0.25)
# Pairs of equal neighbours: ties along dim 1 of a [3, 2] tensor and within every full row.
TIE_KINKS = (1.0, 1.0, -0.5, -0.5, 2.0, 2.0)
# Rows of a [3, 2] input: one spread so wide that exp(-160) underflows in float32, two ties.
SOFTMAX_KINKS = (80.0, -80.0, 0.0, 0.0, 1.0, 1.0)


def _unary(name, engine, torch, *, domain="any", shapes=UNARY, **kw) -> OpPair:
    method = kw.pop("method", name)
    return OpPair(name, method, engine, torch, (Input("a", FLOAT, domain),), shapes, **kw)


def _along_dim1(name, engine, torch, **kw) -> OpPair:
    """A unary op taking `{dim}`, run along dim 1 of the ALONG_DIM1 menu."""
    return _unary(name, engine, torch, shapes=ALONG_DIM1, params={"dim": 1}, **kw)


def _binary(name, engine, torch, *, b_domain="any", a_domain="any", **kw) -> OpPair:
    inputs = (Input("a", FLOAT, a_domain), Input("b", FLOAT, b_domain))
    return OpPair(name, name, engine, torch, inputs, kw.pop("shapes", BINARY), **kw)


_TO_ONE = dict(
    torch_layout="{out}.reshape(1)",
    layout_note="torch returns 0-d; burn returns [1] (compared after reshape(1))",
)

PAIRS: tuple[OpPair, ...] = (
    # --- binary, broadcasting
    _binary("add", "{a}.add({b})", "torch.add({a}, {b})"),
    _binary("sub", "{a}.sub({b})", "torch.sub({a}, {b})"),
    _binary("mul", "{a}.mul({b})", "torch.mul({a}, {b})"),
    _binary("div", "{a}.div({b})", "torch.div({a}, {b})", b_domain="nonzero"),
    OpPair(
        "matmul",
        "matmul",
        "{a}.matmul({b})",
        "torch.matmul({a}, {b})",
        AB,
        _menu(
            ("2x3@3x4", [(2, 3), (3, 4)]),
            ("batch", [(2, 2, 3), (3, 4)]),
            ("bcast", [(2, 2, 3), (1, 3, 4)]),
            ("k0", [(2, 0), (0, 3)]),
            ("empty", [(0, 3), (3, 4)]),
        ),
    ),
    OpPair(
        "mask_where",
        "mask_where",
        "{a}.mask_where({m}, {b})",
        "torch.where({m}, {b}, {a})",
        (Input("a"), Input("m", BOOL), Input("b")),
        _menu(
            ("3x2", [(3, 2), (3, 2), (3, 2)]),
            ("bcast", [(3, 2), (3, 2), (1, 2)]),
            ("empty", [(0, 2), (0, 2), (0, 2)]),
        ),
    ),
    # --- tensor-scalar
    _unary("add_scalar", f"{{a}}.add_scalar({SCALAR})", f"{{a}} + {SCALAR}"),
    _unary("sub_scalar", f"{{a}}.sub_scalar({SCALAR})", f"{{a}} - {SCALAR}"),
    _unary("rsub_scalar", f"{{a}}.rsub_scalar({SCALAR})", f"{SCALAR} - {{a}}"),
    _unary("mul_scalar", f"{{a}}.mul_scalar({SCALAR})", f"{{a}} * {SCALAR}"),
    _unary("div_scalar", f"{{a}}.div_scalar({SCALAR})", f"{{a}} / {SCALAR}"),
    _unary("rdiv_scalar", f"{{a}}.rdiv_scalar({SCALAR})", f"{SCALAR} / {{a}}", domain="nonzero"),
    _unary("recip", "{a}.recip()", "torch.reciprocal({a})", domain="nonzero"),
    _unary("powi_scalar", "{a}.powi_scalar(3)", "torch.pow({a}, 3)", kinks=ZERO_KINKS),
    _unary(
        "powi_scalar[0]",
        "{a}.powi_scalar(0)",
        "torch.pow({a}, 0)",
        method="powi_scalar",
        kinks=ZERO_KINKS,
    ),
    _unary(
        "powf_scalar",
        "{a}.powf_scalar(2.5)",
        "torch.pow({a}, 2.5)",
        domain="positive",
        kinks=ZERO_KINKS,
    ),
    # --- unary
    _unary("neg", "{a}.neg()", "torch.neg({a})"),
    _unary("exp", "{a}.exp()", "torch.exp({a})"),
    _unary("log", "{a}.log()", "torch.log({a})", domain="positive"),
    _unary("sqrt", "{a}.sqrt()", "torch.sqrt({a})", domain="positive", kinks=ZERO_KINKS),
    _unary("abs", "{a}.abs()", "torch.abs({a})", kinks=ZERO_KINKS),
    _unary("relu", "{a}.relu()", "torch.relu({a})", kinks=ZERO_KINKS),
    _unary("tanh", "{a}.tanh()", "torch.tanh({a})"),
    _unary("sigmoid", "{a}.sigmoid()", "torch.sigmoid({a})"),
    _unary("clamp", "{a}.clamp(-0.5, 0.5)", "torch.clamp({a}, -0.5, 0.5)", kinks=CLAMP_KINKS),
    _unary("clamp_min", "{a}.clamp_min(-0.5)", "torch.clamp({a}, min=-0.5)", kinks=CLAMP_KINKS),
    _unary("clamp_max", "{a}.clamp_max(0.5)", "torch.clamp({a}, max=0.5)", kinks=CLAMP_KINKS),
    OpPair(
        "mask_fill",
        "mask_fill",
        "{a}.mask_fill({m}, 2.5)",
        "{a}.masked_fill({m}, 2.5)",
        (Input("a"), Input("m", BOOL)),
        _menu(
            ("3x2", [(3, 2), (3, 2)]),
            ("bcast", [(3, 2), (1, 2)]),
            ("empty", [(0, 2), (0, 2)]),
        ),
    ),
    _unary("cast", "{a}.cast('{other}')", "{a}.to(torch.{other})"),
    # --- reductions
    _unary("sum", "{a}.sum()", "torch.sum({a})", **_TO_ONE),
    _unary("mean", "{a}.mean()", "torch.mean({a})", shapes=UNARY_NONEMPTY, **_TO_ONE),
    _along_dim1("sum_dim", "{a}.sum_dim({dim})", "torch.sum({a}, {dim}, keepdim=True)"),
    _along_dim1("mean_dim", "{a}.mean_dim({dim})", "torch.mean({a}, {dim}, keepdim=True)"),
    _along_dim1(
        "max_dim",
        "{a}.max_dim({dim})",
        "torch.max({a}, {dim}, keepdim=True).values",
        kinks=TIE_KINKS,
    ),
    _along_dim1(
        "max_dim_with_indices",
        "{a}.max_dim_with_indices({dim})",
        "tuple(torch.max({a}, {dim}, keepdim=True))",
        kinks=TIE_KINKS,
    ),
    _unary("max", "{a}.max()", "torch.max({a})", shapes=UNARY_NONEMPTY, kinks=TIE_KINKS, **_TO_ONE),
    _along_dim1(
        "argmax", "{a}.argmax({dim})", "torch.argmax({a}, {dim}, keepdim=True)", kinks=TIE_KINKS
    ),
    _along_dim1(
        "log_softmax",
        "{a}.log_softmax({dim})",
        "torch.log_softmax({a}, {dim})",
        kinks=SOFTMAX_KINKS,
    ),
    _along_dim1("softmax", "{a}.softmax({dim})", "torch.softmax({a}, {dim})", kinks=SOFTMAX_KINKS),
    # --- shapes and indexing
    _unary("reshape", "{a}.reshape([-1])", "torch.reshape({a}, (-1,))"),
    _unary("unsqueeze", "{a}.unsqueeze()", "torch.unsqueeze({a}, 0)"),
    _unary(
        "unsqueeze_dim",
        "{a}.unsqueeze_dim({dim})",
        "torch.unsqueeze({a}, {dim})",
        shapes=UNARY[1:],
        params={"dim": 1},
    ),
    _unary(
        "squeeze",
        "{a}.squeeze()",
        "torch.squeeze({a})",
        shapes=_menu(("3x1", [(3, 1)]), ("1x3x1", [(1, 3, 1)]), ("1", [(1,)])),
    ),
    _unary(
        "squeeze_dim",
        "{a}.squeeze_dim({dim})",
        "torch.squeeze({a}, {dim})",
        shapes=_menu(("1x3", [(1, 3)]), ("1x0", [(1, 0)])),
        params={"dim": 0},
    ),
    _unary("flatten", "{a}.flatten()", "torch.flatten({a})"),
    _unary("swap_dims", "{a}.swap_dims(0, 1)", "torch.transpose({a}, 0, 1)", shapes=TWO_D),
    _unary("transpose", "{a}.transpose()", "torch.transpose({a}, -2, -1)", shapes=TWO_D),
    _unary("slice", "{a}.slice([(0, 2), None])", "{a}[0:2, :]", shapes=TWO_D[:2]),
    _unary(
        "slice[int]",
        "{a}.slice([1, (-1, None)])",
        "{a}[1:2, -1:]",
        method="slice",
        shapes=TWO_D[:2],
    ),
    OpPair(
        "cat",
        "cat",
        "Tensor.cat([{a}, {b}], {dim})",
        "torch.cat([{a}, {b}], {dim})",
        AB,
        _menu(
            ("3x2+1x2", [(3, 2), (1, 2)]),
            ("3+2", [(3,), (2,)]),
            ("0x2+3x2", [(0, 2), (3, 2)]),
        ),
        params={"dim": 0},
    ),
    OpPair(
        "gather",
        "gather",
        "{a}.gather({dim}, {i})",
        "torch.gather({a}, {dim}, {i})",
        (Input("a"), Input("i", INDEX)),
        # The wider index repeats columns, so the backward scatter-add must sum duplicates.
        _menu(("3x2", [(3, 2), (3, 2)]), ("3x2->3x4", [(3, 2), (3, 4)])),
        params={"dim": 1},
    ),
    # --- comparisons and conversions (no gradient on either side)
    _binary("equal", "{a}.equal({b})", "torch.eq({a}, {b})", a_domain="grid", b_domain="grid"),
    _binary("greater", "{a}.greater({b})", "torch.gt({a}, {b})", a_domain="grid", b_domain="grid"),
    _binary("lower", "{a}.lower({b})", "torch.lt({a}, {b})", a_domain="grid", b_domain="grid"),
    _unary("equal_elem", "{a}.equal_elem(1.0)", "torch.eq({a}, 1.0)", domain="grid"),
    _unary("greater_elem", "{a}.greater_elem(0.0)", "torch.gt({a}, 0.0)", domain="grid"),
    _unary(
        "greater_equal_elem", "{a}.greater_equal_elem(0.0)", "torch.ge({a}, 0.0)", domain="grid"
    ),
    _unary("lower_elem", "{a}.lower_elem(0.0)", "torch.lt({a}, 0.0)", domain="grid"),
    _unary("lower_equal_elem", "{a}.lower_equal_elem(0.0)", "torch.le({a}, 0.0)", domain="grid"),
    OpPair(
        "bool_not",
        "bool_not",
        "{a}.bool_not()",
        "torch.logical_not({a})",
        (Input("a", BOOL),),
        UNARY,
    ),
    _unary("int", "{a}.int()", "{a}.to(torch.int64)", specials=False),
    OpPair(
        "float", "float", "{a}.float('{dtype}')", "{a}.to(torch.{dtype})", (Input("a", INT),), UNARY
    ),
    _unary("zeros_like", "{a}.zeros_like()", "torch.zeros_like({a})"),
    _unary("ones_like", "{a}.ones_like()", "torch.ones_like({a})"),
    _unary("full_like", "{a}.full_like(2.5)", "torch.full_like({a}, 2.5)"),
)

PAIRS_BY_NAME: dict[str, OpPair] = {p.name: p for p in PAIRS}


def pair(name: str) -> OpPair:
    """The pair called `name`; a KeyError lists the known names."""
    try:
        return PAIRS_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known: {', '.join(PAIRS_BY_NAME)}") from None


def uncovered_methods() -> list[str]:
    """Tensor methods of the engine's op registry that no pair exercises (should be empty)."""
    covered = {p.method for p in PAIRS}
    return sorted(set(TENSOR_OPS) - covered)


def unknown_methods() -> list[str]:
    """Pairs whose method is not in the engine's op registry (should be empty)."""
    return sorted({p.method for p in PAIRS} - set(TENSOR_OPS))
