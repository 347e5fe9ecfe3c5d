"""Each engine op paired with its PyTorch counterpart: the checks the primitives registered.

An `OpPair` (the engine's `harness.engine.ops.facts.Check`) holds two expression templates,
one per framework, over named inputs (`{a}`, `{b}` float tensors, `{m}` a bool mask, `{i}`
int64 indices) and a few named parameters (`{dim}`, `{dtype}`, `{other}`). The matrix
(`harness.opmatrix.matrix`) compiles the templates into functions; the fuzzer
(`harness.opmatrix.fuzz`) formats them with its own variable names and prints the very text
it ran as a case file. So a spelling (PyTorch's `keepdim=True`, `transpose`, `torch.where`
argument order...) lives in exactly one place: the registration of the primitive
(harness/engine/ops/).
"""

from __future__ import annotations

from harness.engine import activation, module_ops
from harness.engine.ops import checks, composite_checks
from harness.engine.ops.facts import BOOL, DOMAINS, FLOAT, INDEX, INT, Input, ShapeCase
from harness.engine.ops.facts import Check as OpPair
from harness.engine.tensor import NON_OP_API, Tensor

__all__ = [
    "BOOL",
    "DOMAINS",
    "ENGINE_IMPORT",
    "ENGINE_NAMESPACE",
    "FLOAT",
    "FUNCTION_MODULES",
    "INDEX",
    "INT",
    "PAIRS",
    "PAIRS_BY_NAME",
    "Input",
    "OpPair",
    "ShapeCase",
    "function_of",
    "pair",
    "render",
    "template_args",
    "uncovered_methods",
    "unknown_methods",
]

PAIRS: tuple[OpPair, ...] = checks() + composite_checks()
PAIRS_BY_NAME: dict[str, OpPair] = {p.name: p for p in PAIRS}
# Engine templates are Tensor methods (`{a}.exp()`) or functions of these modules, burn's
# `burn::tensor::activation` and `burn::tensor::module` (`module_ops.conv2d({a}, {b}, {c}, ...)`).
FUNCTION_MODULES = {"activation": activation, "module_ops": module_ops}
ENGINE_NAMESPACE = {"Tensor": Tensor, **FUNCTION_MODULES}
ENGINE_IMPORT = "from harness.engine import Device, Tensor, " + ", ".join(FUNCTION_MODULES)


def template_args(
    p: OpPair, dtype: str, names: dict[str, str] | None = None, params: dict | None = None
) -> dict:
    """Values for a template's fields: input names (or the caller's variable names), the
    dtype, the other float dtype, and the parameters (the pair's, overridden by `params`)."""
    other = "float64" if dtype == "float32" else "float32"
    args = {n: n for n in ("a", "b", "c", "m", "i")}
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


def pair(name: str) -> OpPair:
    """The pair called `name`; a KeyError lists the known names."""
    try:
        return PAIRS_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known: {', '.join(PAIRS_BY_NAME)}") from None


def tensor_op_methods() -> set[str]:
    """The public Tensor methods that are ops (everything but `NON_OP_API`)."""
    return {n for n in dir(Tensor) if not n.startswith("_")} - NON_OP_API


def function_of(p: OpPair) -> str | None:
    """`module.function` when the pair's engine template calls a function, else None."""
    head = p.engine.split("(", 1)[0]
    return head if head.split(".", 1)[0] in FUNCTION_MODULES else None


def uncovered_methods() -> list[str]:
    """Tensor op methods that no pair exercises (should be empty)."""
    return sorted(tensor_op_methods() - {p.method for p in PAIRS if function_of(p) is None})


def unknown_methods() -> list[str]:
    """Pairs whose method is not a Tensor op method, or whose function does not exist (should
    be empty)."""
    methods = {p.method for p in PAIRS if function_of(p) is None} - tensor_op_methods()
    missing = {
        f
        for p in PAIRS
        if (f := function_of(p)) is not None
        and not hasattr(FUNCTION_MODULES[f.split(".")[0]], f.split(".", 1)[1])
    }
    return sorted(methods | missing)
