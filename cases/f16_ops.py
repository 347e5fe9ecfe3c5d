"""The op matrix's float16 and bfloat16 rows, one op of each family: the same half inputs through
torch's half kernel and through the engine, which computes as burn-flex does (harness.engine.
ops.half: each op in float32, rounded once to the half format; burn's composites rounded per
op, harness.engine.ops.half_ops).

Each op runs the op matrix's first shape on its random value set (`harness.opmatrix.cells`:
the same inputs, cotangents and templates as `python -m harness.opmatrix --dtypes
float16,bfloat16`), forward and vector-Jacobian product. Values agree within the half dtype's
default tolerance (1 ULP, or eps absolute) where both sides compute the op in float32 and round
once. They part where the kernels do not:

- ``conv2d``: torch's CPU half convolution (and its backward) accumulates in the half format;
  the engine, as flex (bfloat16 via float32, float16 gemm accumulating in float32), rounds
  once, so it stays at the float32 result rounded (`harness.engine.ops.half`).
- ``layer_norm``: burn composes it from backend ops (mean, sub, var, sqrt, div...), each rounded
  to the half format, where torch's half kernel computes in float32 and rounds once
  (`harness.engine.ops.half`).

Each divergence is judged against the float32 reference (torch in float32 on the same inputs,
rounded once): the engine stays within the stated ULP of it.
"""

from __future__ import annotations

import numpy as np

from harness.case import agree, differ, predicate
from harness.opmatrix import cells, half
from harness.opmatrix.registry import pair

DTYPES = half.HALF_DTYPES
# One op per family: elementwise, scalar, unary math, activations, matmul, reductions,
# softmax, cumulative, cast, convolution, normalisation.
OPS = (
    *("add", "mul", "div", "mul_scalar", "exp", "log", "sqrt", "tanh", "sigmoid", "gelu"),
    *("matmul", "linear", "sum", "mean", "sum_dim", "mean_dim", "softmax", "log_softmax"),
    *("cumsum", "cast", "conv2d", "layer_norm"),
)
# The values that part (dtype, op, check) and the ULP of the float32 reference the engine
# keeps there, as the op matrix measures them (harness.opmatrix.divergences, its half rows).
DIVERGING = {
    ("float16", "conv2d", "vjp.a"): 1,
    ("bfloat16", "conv2d", "vjp.a"): 1,
    ("bfloat16", "conv2d", "vjp.b"): 1,
    **{("float16", "layer_norm", c): 64 for c in ("forward", "vjp.a")},
    **{("bfloat16", "layer_norm", c): 64 for c in ("forward", "vjp.a")},
}


_AGREE = "both compute the op in float32 and round once to the half format"
# The values of the diverging ops (input, weight, bias: a, b, c), checked one by one.
_CHECKS_OF = {op: ("forward", "vjp.a", "vjp.b", "vjp.c") for op in ("conv2d", "layer_norm")}


def _cell(op: str, dtype: str):
    p = pair(op)
    case = p.shapes[0]
    key = f"{op}/{dtype}/{case.id}/random"
    return p, key, cells.make_inputs(p, case, "random", dtype, cells.cell_rng(key))


def _values(run: cells.SideRun) -> dict:
    if run.error:
        return {"error": run.error}
    out = {"forward" if k == 0 else f"forward_{k}": v for k, v in enumerate(run.outputs)}
    out.update({f"vjp.{name}": g for name, g in run.grads.items() if g is not None})
    return out


def _side(run) -> dict:
    return {dtype: {op: _values(run(*_cell(op, dtype), dtype)) for op in OPS} for dtype in DTYPES}


def torch_side():
    return _side(lambda p, key, arrays, dtype: cells.run_torch(p, dtype, arrays, key))


def engine_side():
    with np.errstate(all="ignore"):
        return _side(lambda p, key, arrays, dtype: cells.run_engine(p, dtype, arrays, key))


def _reference(op: str, dtype: str, check: str) -> np.ndarray:
    """The float32 reference of one value: torch in float32 on the widened inputs, rounded."""
    p, key, arrays = _cell(op, dtype)
    run = cells.run_torch(p, "float32", half.widened(arrays), key, through=dtype)
    value = run.outputs[0] if check == "forward" else run.grads[check[4:]]
    return half.rounded(value, dtype)


def _within_reference(dtype: str, op: str, check: str, ulps: int):
    relation = half.ReferenceRelation(ulps)
    return predicate(
        relation.text,
        lambda t, e: relation.holds_ref(t, e, _reference(op, dtype, check)),
    )


CHECKS = [
    *(
        differ(
            f"{dtype}.{op}.{check}",
            because="harness.engine.ops.half",
            relation=_within_reference(dtype, op, check, ulps),
        )
        for (dtype, op, check), ulps in DIVERGING.items()
    ),
    *(
        agree(f"{dtype}.{op}.{check}", note=_AGREE)
        for dtype in DTYPES
        for op in OPS
        for check in (_CHECKS_OF.get(op, ("*",)))
        if (dtype, op, check) not in DIVERGING
    ),
]
