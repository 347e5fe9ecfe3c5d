"""Every differentiable op, checked three ways:

- every check of the op matrix's registry (harness/engine/ops/: each primitive's `Check`s and
  the composites'), its engine VJP against central finite differences of the engine's own
  forward in float64, on every non-empty shape of its menu (`test_registry_vjp_...`, below);
  new registrations are covered without a line here;
- the spellings and compositions of `OPS` (operators, reflected scalars, layers built from
  primitives): the VJP against finite differences, forward and VJP against PyTorch in
  float32 and float64, with a seeded random cotangent `c` (the gradient of `sum(f(x) * c)`);
- at kinks (where finite differences are not valid) the documented subgradient, exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness.engine import PRIMITIVES, Device, Tensor, module_ops
from harness.engine.errors import ShapeError
from harness.opmatrix import cells
from harness.opmatrix.registry import PAIRS, OpPair, ShapeCase

PLAIN = Device.flex()
AD = Device.flex().autodiff()

UNARY = ((),), ((3,),), ((3, 2),)
MATRIX = (((3, 2),),)
BINARY = (
    ((3, 2), (3, 2)),
    ((1, 2), (3, 2)),
    ((3, 2), (2,)),
    ((), (3,)),
)
POS = (0.5, 2.0)
ANY = (-2.0, 2.0)

GATHER_INDEX = np.array([[0, 0], [1, 0], [1, 1]])
GATHER_ND_INDEX = np.array([[0, 1], [2, 0], [0, 1]])  # a repeated point: its gradients add
MASK = np.array([[True, False], [False, False], [True, True]])


@dataclass(frozen=True)
class Op:
    """One op: the engine spelling, the PyTorch spelling, shapes to try, input ranges."""

    name: str
    engine: Callable
    torch: Callable
    shapes: tuple
    domains: tuple = (ANY, ANY)
    grad_rtol_f64: float | None = None  # a documented burn rounding difference, see the op


def _const(array, like: Tensor) -> Tensor:
    return Tensor.from_numpy(array, like.device)


OPS = [
    Op("add", lambda a, b: a + b, lambda a, b: a + b, BINARY),
    Op("sub", lambda a, b: a - b, lambda a, b: a - b, BINARY),
    Op("mul", lambda a, b: a * b, lambda a, b: a * b, BINARY),
    Op("div", lambda a, b: a / b, lambda a, b: a / b, BINARY, (ANY, POS)),
    Op("add_scalar", lambda a: a + 0.7, lambda a: a + 0.7, UNARY),
    Op("radd_scalar", lambda a: 0.7 + a, lambda a: 0.7 + a, UNARY),
    Op("sub_scalar", lambda a: a - 0.7, lambda a: a - 0.7, UNARY),
    Op("rsub_scalar", lambda a: 0.7 - a, lambda a: 0.7 - a, UNARY),
    Op("mul_scalar", lambda a: a * 1.3, lambda a: a * 1.3, UNARY),
    Op("rmul_scalar", lambda a: 1.3 * a, lambda a: 1.3 * a, UNARY),
    # burn's div_scalar backward multiplies by 1/s computed in f32, also for f64 tensors.
    Op("div_scalar", lambda a: a / 1.3, lambda a: a / 1.3, UNARY, grad_rtol_f64=1e-7),
    Op("rdiv_scalar", lambda a: 1.3 / a, lambda a: 1.3 / a, UNARY, (POS,)),
    Op("recip", lambda a: a.recip(), torch.reciprocal, UNARY, (POS,)),
    Op("neg", lambda a: -a, lambda a: -a, UNARY),
    Op("neg_method", lambda a: a.neg(), torch.neg, UNARY),
    Op(
        "matmul",
        lambda a, b: a.matmul(b),
        torch.matmul,
        (((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)), ((2, 3, 4), (4, 5))),
    ),
    Op("matmul_operator", lambda a, b: a @ b, lambda a, b: a @ b, (((3, 4), (4, 2)),)),
    Op("powi_scalar", lambda a: a.powi_scalar(3), lambda a: a**3, UNARY),
    Op("powf_scalar", lambda a: a.powf_scalar(1.5), lambda a: a**1.5, UNARY, (POS,)),
    Op("exp", lambda a: a.exp(), torch.exp, UNARY),
    Op("log", lambda a: a.log(), torch.log, UNARY, (POS,)),
    Op("sqrt", lambda a: a.sqrt(), torch.sqrt, UNARY, (POS,)),
    Op("log1p", lambda a: a.log1p(), torch.log1p, UNARY, ((-0.5, 2.0),)),
    Op("log_sigmoid", lambda a: a.log_sigmoid(), F.logsigmoid, UNARY, ((-4.0, 4.0),)),
    Op(
        "log_sigmoid_large",
        lambda a: (a * 30.0).log_sigmoid(),
        lambda a: F.logsigmoid(a * 30.0),
        UNARY,
    ),
    Op("abs", lambda a: a.abs(), torch.abs, UNARY),
    Op("tanh", lambda a: a.tanh(), torch.tanh, UNARY),
    Op("sigmoid", lambda a: a.sigmoid(), torch.sigmoid, UNARY),
    Op("sigmoid_large", lambda a: (a * 40.0).sigmoid(), lambda a: (a * 40.0).sigmoid(), UNARY),
    Op("relu", lambda a: a.relu(), torch.relu, UNARY),
    Op("clamp", lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), UNARY),
    Op("clamp_min", lambda a: a.clamp_min(-0.3), lambda a: a.clamp(min=-0.3), UNARY),
    Op("clamp_max", lambda a: a.clamp_max(0.4), lambda a: a.clamp(max=0.4), UNARY),
    Op("sum", lambda a: a.sum(), lambda a: a.sum().reshape(1), UNARY),
    Op("mean", lambda a: a.mean(), lambda a: a.mean().reshape(1), UNARY),
    Op("sum_dim0", lambda a: a.sum_dim(0), lambda a: a.sum(0, keepdim=True), MATRIX),
    Op("sum_dim_last", lambda a: a.sum_dim(-1), lambda a: a.sum(-1, keepdim=True), MATRIX),
    Op("mean_dim0", lambda a: a.mean_dim(0), lambda a: a.mean(0, keepdim=True), MATRIX),
    Op("mean_dim1", lambda a: a.mean_dim(1), lambda a: a.mean(1, keepdim=True), MATRIX),
    Op("max_dim", lambda a: a.max_dim(1), lambda a: a.max(1, keepdim=True).values, MATRIX),
    Op("max", lambda a: a.max(), lambda a: a.max().reshape(1), (((3,),), *MATRIX)),
    Op("min_dim", lambda a: a.min_dim(1), lambda a: a.min(1, keepdim=True).values, MATRIX),
    Op("min_dim0", lambda a: a.min_dim(0), lambda a: a.min(0, keepdim=True).values, MATRIX),
    Op("log_softmax", lambda a: a.log_softmax(1), lambda a: a.log_softmax(1), MATRIX),
    Op("log_softmax0", lambda a: a.log_softmax(0), lambda a: a.log_softmax(0), MATRIX),
    Op("softmax", lambda a: a.softmax(-1), lambda a: a.softmax(-1), MATRIX),
    Op("softmax0", lambda a: a.softmax(0), lambda a: a.softmax(0), (((3,),), *MATRIX)),
    Op("reshape", lambda a: a.reshape([2, 3]), lambda a: a.reshape(2, 3), MATRIX),
    Op("reshape_infer", lambda a: a.reshape([-1]), lambda a: a.reshape(-1), MATRIX),
    Op("flatten", lambda a: a.flatten(), lambda a: a.flatten(), (*UNARY, ((2, 3, 4),))),
    Op("flatten_dims", lambda a: a.flatten(1, 2), lambda a: a.flatten(1, 2), (((2, 3, 4, 2),),)),
    Op(
        "flatten_negative",
        lambda a: a.flatten(-3, -2),
        lambda a: a.flatten(-3, -2),
        (((2, 3, 4),),),
    ),
    Op("unsqueeze", lambda a: a.unsqueeze(), lambda a: a.unsqueeze(0), MATRIX),
    Op("unsqueeze_dim", lambda a: a.unsqueeze_dim(1), lambda a: a.unsqueeze(1), MATRIX),
    Op("squeeze", lambda a: a.squeeze(1), lambda a: a.squeeze(1), (((3, 1),),)),
    Op("squeeze_all", lambda a: a.squeeze(), lambda a: a.squeeze(), (((1, 3, 1),),)),
    Op("swap_dims", lambda a: a.swap_dims(0, 2), lambda a: a.transpose(0, 2), (((2, 3, 4),),)),
    Op("transpose", lambda a: a.transpose(), lambda a: a.transpose(-2, -1), (((2, 3, 4),),)),
    Op("slice_tuple", lambda a: a.slice([(0, 2)]), lambda a: a[0:2], MATRIX),
    Op("slice_two_dims", lambda a: a.slice([None, (1, 2)]), lambda a: a[:, 1:2], MATRIX),
    Op("slice_python", lambda a: a.slice([slice(1, None)]), lambda a: a[1:], MATRIX),
    Op("slice_int", lambda a: a.slice([1]), lambda a: a[1:2], MATRIX),
    Op("slice_negative", lambda a: a.slice([(-2, None)]), lambda a: a[-2:], MATRIX),
    Op(
        "cat0",
        lambda a, b: Tensor.cat([a, b], 0),
        lambda a, b: torch.cat([a, b], 0),
        (((2, 2), (3, 2)),),
    ),
    Op(
        "cat1",
        lambda a, b: Tensor.cat([a, b, a], 1),
        lambda a, b: torch.cat([a, b, a], 1),
        (((3, 2), (3, 1)),),
    ),
    Op(
        "gather",
        lambda a: a.gather(1, _const(GATHER_INDEX, a)),
        lambda a: torch.gather(a, 1, torch.from_numpy(GATHER_INDEX)),
        MATRIX,
    ),
    Op(
        "mask_fill",
        lambda a: a.mask_fill(_const(MASK, a), 0.5),
        lambda a: a.masked_fill(torch.from_numpy(MASK), 0.5),
        MATRIX,
    ),
    Op(
        "mask_where",
        lambda a, b: a.mask_where(_const(MASK, a), b),
        lambda a, b: torch.where(torch.from_numpy(MASK), b, a),
        (((3, 2), (3, 2)), ((3, 2), (1, 2))),
    ),
    # The RNN-T loss's primitives (harness.engine.ops.lattice).
    Op("cumsum", lambda a: a.cumsum(1), lambda a: torch.cumsum(a, 1), (*MATRIX, ((2, 3, 2),))),
    Op("cumsum0", lambda a: a.cumsum(0), lambda a: torch.cumsum(a, 0), MATRIX),
    Op(
        "slice_assign",
        lambda a, b: a.slice_assign([(1, 2)], b),
        lambda a, b: torch.slice_scatter(a, b, 0, 1, 2),
        (((3, 2), (1, 2)),),
    ),
    Op(
        "slice_assign_dim1",
        lambda a, b: a.slice_assign([None, (0, 2)], b),
        lambda a, b: torch.slice_scatter(a, b, 1, 0, 2),
        (((3, 4), (3, 2)),),
    ),
    Op(
        "gather_nd",
        lambda a: a.gather_nd(_const(GATHER_ND_INDEX, a)),
        lambda a: a[tuple(torch.from_numpy(GATHER_ND_INDEX).unbind(-1))],
        MATRIX,
    ),
    Op(
        "gather_nd_rows",
        lambda a: a.gather_nd(_const(GATHER_ND_INDEX[:, :1], a)),
        lambda a: a[torch.from_numpy(GATHER_ND_INDEX[:, 0])],
        MATRIX,
    ),
    Op("max_pair", lambda a, b: a.max_pair(b), torch.maximum, BINARY),
    # The fused Linear node (burn-autodiff's `LinearWithBias`): input, weight, bias at once.
    Op(
        "linear",
        lambda x, w, b: module_ops.linear(x, w, b),
        lambda x, w, b: x @ w + b,
        (((4, 3), (3, 5), (5,)), ((2, 4, 3), (3, 5), (5,)), ((1, 3), (3, 2), (1, 2))),
        (ANY, ANY, ANY),
    ),
    Op(
        "linear_layer",
        lambda x, w, b: (x.matmul(w) + b).relu().log_softmax(1),
        lambda x, w, b: (x @ w + b).relu().log_softmax(1),
        (((4, 3), (3, 5), (5,)),),
        (ANY, ANY, ANY),
    ),
]

CASES = [
    pytest.param(op, shapes, id=f"{op.name}-{'x'.join(str(list(s)) for s in shapes)}")
    for op in OPS
    for shapes in op.shapes
]


def _inputs(op: Op, shapes, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    domains = op.domains if len(op.domains) >= len(shapes) else op.domains * len(shapes)
    return [rng.uniform(lo, hi, size=s) for s, (lo, hi) in zip(shapes, domains, strict=False)]


def _cotangent(shape, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _engine_vjp(op: Op, xs, dtype):
    leaves = [Tensor.from_numpy(x.astype(dtype), AD).require_grad() for x in xs]
    out = op.engine(*leaves)
    c = _cotangent(out.shape).astype(dtype)
    grads = (out * Tensor.from_numpy(c, AD)).sum().backward()
    return out, c, [leaf.grad(grads) for leaf in leaves]


def _finite_difference(op: Op, xs, c, eps: float = 1e-6) -> list[np.ndarray]:
    def f(values):
        out = op.engine(*[Tensor.from_numpy(v, PLAIN) for v in values])
        return float(np.sum(out.numpy() * c))

    result = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            plus = [v.copy() for v in xs]
            minus = [v.copy() for v in xs]
            plus[i][j] += eps
            minus[i][j] -= eps
            g[j] = (f(plus) - f(minus)) / (2 * eps)
        result.append(g)
    return result


@pytest.mark.parametrize(("op", "shapes"), CASES)
def test_vjp_matches_finite_differences(op, shapes):
    xs = _inputs(op, shapes)
    _, c, grads = _engine_vjp(op, xs, np.float64)
    expected = _finite_difference(op, xs, c)
    for x, g, fd in zip(xs, grads, expected, strict=True):
        assert g is not None
        assert g.shape == x.shape
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-7)


TORCH_TOL = {np.float32: (2e-5, 2e-6), np.float64: (1e-11, 1e-13)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(("op", "shapes"), CASES)
def test_forward_and_vjp_match_torch(op, shapes, dtype):
    xs = [x.astype(dtype) for x in _inputs(op, shapes)]
    out, c, grads = _engine_vjp(op, xs, dtype)
    txs = [torch.from_numpy(x).requires_grad_() for x in xs]
    tout = op.torch(*txs)
    tout.backward(torch.from_numpy(c))
    rtol, atol = TORCH_TOL[dtype]
    assert out.dtype == dtype
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    if dtype == np.float64 and op.grad_rtol_f64 is not None:
        rtol = op.grad_rtol_f64
    for g, tx in zip(grads, txs, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=rtol * 10, atol=atol * 10)


# --- every registered check: the VJP against finite differences of its own forward -----------
#
# At a random point x of the check's input domains (its "random" value set, in float64, with
# the matrix's own cotangents c), for each element j of each float input: the central
# difference (L(x + h e_j) - L(x - h e_j)) / 2h of L = sum(c * out) (outputs that are not
# finite at x, such as a ceil-mode max-pool window without input, left out: constant, no
# gradient) against the engine's VJP, with h = 1e-6 * max(1, |x_j|).
#
# Tolerance, per element: rounding + truncation.
# - Rounding: each L is exact to about eps * S, S = sum |c * out| and eps the outputs' machine
#   epsilon (2.2e-16 in float64; larger for a cast to float32), so the difference quotient to
#   eps * S / h: `FD_ROUNDING` = 4 of those (the worst element over the registry measured 0.75).
# - Truncation: h^2 |d3L/dx_j^3| / 6 ~ 1e-12 |d3L|, within `FD_RTOL` = 1e-6 of the VJP while
#   the third derivative stays below 6e6 times the first (the registry's functions on their
#   domains, |x| <= 2, are far inside that). burn's div_scalar backward multiplies by a
#   float32 reciprocal (6e-8 relative, pinned exactly by
#   test_div_scalar_backward_uses_the_f32_reciprocal_like_burn) falls inside it too.
# Kinks: at the random point no element lies within `KINK_MARGIN` (10 of the largest steps) of
# one of the check's kink values (relu, abs, clamp...) or of another float input element
# (ties: max, max_pair, pools); the "grid" domain (small integers, to make ties) is drawn
# continuous here.

FD_STEP = 1e-6
FD_ROUNDING = 4.0
FD_RTOL = 1e-6
KINK_MARGIN = 10 * FD_STEP * 2  # the largest step: |x| <= 2 in every domain


def _without_gradient(p: OpPair) -> str:
    """Why a check has no VJP to check (a fact of its registration), or ""."""
    if not p.float_inputs:
        return "no float input"
    op = PRIMITIVES.get(p.op)
    if op is not None and op.backward is None:
        return f"untracked: {op.untracked}"
    if any(d.where.endswith("/error") for d in p.diverges):
        return "raises on the autodiff device, as burn does (a declared divergence)"
    return ""


FD_CASES = [
    pytest.param(p, case, id=f"{p.name}-{case.id}")
    for p in PAIRS
    if not _without_gradient(p)
    for case in p.shapes
    if all(np.prod(s) > 0 for s in case.shapes)
]


def _continuous(p: OpPair) -> OpPair:
    inputs = tuple(
        dataclasses.replace(i, domain="any") if i.domain == "grid" else i for i in p.inputs
    )
    return dataclasses.replace(p, inputs=inputs)


def _near_kinks(p: OpPair, arrays: dict[str, np.ndarray]) -> bool:
    values = np.concatenate([arrays[n].ravel() for n in p.float_inputs])
    gaps = np.diff(np.sort(values))
    if gaps.size and gaps.min() < KINK_MARGIN:
        return True
    kinks = np.asarray(p.kinks if p.kinks is not None else (), dtype=np.float64)
    return bool(kinks.size and np.min(np.abs(values[:, None] - kinks[None, :])) < KINK_MARGIN)


def _point(p: OpPair, case: ShapeCase, key: str) -> dict[str, np.ndarray]:
    """The check's random inputs in float64, redrawn until they are away from kinks."""
    rng = cells.cell_rng(key)
    for _ in range(50):
        arrays = cells.make_inputs(_continuous(p), case, "random", "float64", rng)
        if not _near_kinks(p, arrays):
            return arrays
    raise AssertionError(f"{key}: no draw away from kinks in 50 tries")


def _loss(p: OpPair, cots, masks):
    fn = cells.compile_pair(p, "float64").engine

    def loss(values: dict[str, np.ndarray]) -> float:
        # On the autodiff device, where the VJP ran (the plain device checks some arguments
        # more strictly: clamp with min > max).
        outs = fn(**{k: Tensor.from_numpy(v, cells.DEVICE) for k, v in values.items()})
        outs = outs if isinstance(outs, tuple | list) else (outs,)
        terms = [
            np.sum(np.where(m, o.numpy() * c, 0.0))
            for o, c, m in zip(outs, cots, masks, strict=True)
            if c is not None
        ]
        return float(np.sum(terms))

    return loss


def _central_differences(loss, arrays: dict[str, np.ndarray], name: str):
    """d loss / d arrays[name], element by element, and the steps taken."""
    x = arrays[name]
    steps = FD_STEP * np.maximum(1.0, np.abs(x))
    fd = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += steps[j]
        down[j] -= steps[j]
        fd[j] = (loss({**arrays, name: up}) - loss({**arrays, name: down})) / (2 * steps[j])
    return fd, steps


@pytest.mark.parametrize(("p", "case"), FD_CASES)
def test_registry_vjp_matches_finite_differences_of_its_own_forward(p, case):
    key = f"{p.name}/float64/{case.id}/fd"
    arrays = _point(p, case, key)
    with np.errstate(invalid="ignore"):  # the seed's -inf * c of an empty max-pool window
        run = cells.run_engine(p, "float64", arrays, key)
    assert run.error is None, run.error
    cots = cells.cotangents(run.outputs, key)
    masks = [np.isfinite(o) for o in run.outputs]
    floats = [(o, c, m) for o, c, m in zip(run.outputs, cots, masks, strict=True) if c is not None]
    if not floats:  # a comparison or predicate: no float output, its inputs get no gradient
        assert all(o.dtype.kind in "biu" for o in run.outputs), [o.dtype for o in run.outputs]
        assert all(g is None or not np.any(g) for g in run.grads.values()), run.grads
        return
    scale = sum(float(np.sum(np.abs(np.where(m, o * c, 0.0)))) for o, c, m in floats)
    eps = max(np.finfo(o.dtype).eps for o, _, _ in floats)
    loss = _loss(p, cots, masks)
    for name in p.float_inputs:
        fd, steps = _central_differences(loss, arrays, name)
        vjp = run.grads[name] if run.grads[name] is not None else np.zeros_like(fd)
        tol = FD_ROUNDING * eps * scale / steps + FD_RTOL * np.abs(vjp)
        within = np.abs(vjp - fd) <= tol
        if p.not_derivative is not None:  # burn's rule, declared: still differs, as stated
            assert not within.all(), f"vjp.{name}: declared not the derivative, but it is"
            assert p.not_derivative.condition.test(fd, vjp), p.not_derivative.condition.text
            continue
        flat = int(np.argmax(np.abs(vjp - fd) - tol))
        worst = tuple(int(i) for i in np.unravel_index(flat, fd.shape))
        assert within.all(), (
            f"vjp.{name}{list(worst)}: engine {vjp[worst]!r}, finite differences {fd[worst]!r}, "
            f"tolerance {tol[worst]:.3g}; {int((~within).sum())} of {fd.size} elements off"
        )


def test_every_registered_check_is_finite_differenced_or_has_no_gradient_by_its_facts():
    """The checks left out of the test above, each with the fact that leaves it out."""
    left_out = {p.name: why for p in PAIRS if (why := _without_gradient(p))}
    checked = {p.name for p in PAIRS} - set(left_out)
    assert checked == {c.values[0].name for c in FD_CASES}  # each has a non-empty shape
    assert {"exp", "avg_pool1d[clipped]", "conv2d", "max_pair", "silu"} <= checked
    assert {"argmax", "equal", "bool_not", "int"} <= set(left_out)
    print(f"{len(checked)} checks finite-differenced, {len(left_out)} without a gradient")


# --- kinks: the documented subgradient, exactly ------------------------------------------------


def _grad_of(fn, values, dtype=np.float32):
    x = Tensor.from_numpy(np.array(values, dtype=dtype), AD).require_grad()
    return fn(x).backward(), x


def test_relu_gradient_at_zero_is_zero():
    grads, x = _grad_of(lambda t: t.relu(), [-1.0, 0.0, -0.0, 2.0])
    assert x.grad(grads).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_clamp_gradient_passes_at_both_bounds():
    grads, x = _grad_of(lambda t: t.clamp(-0.5, 0.5), [-1.0, -0.5, 0.0, 0.5, 1.0])
    assert x.grad(grads).tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_clamp_min_and_max_gradient_at_bound_is_one():
    grads, x = _grad_of(lambda t: t.clamp_min(0.5) + t.clamp_max(0.5), [0.0, 0.5, 1.0])
    # clamp_min passes at >= 0.5, clamp_max passes at <= 0.5: the bound itself gets both.
    assert x.grad(grads).tolist() == [1.0, 2.0, 1.0]


def test_abs_gradient_at_zero_is_zero():
    grads, x = _grad_of(lambda t: t.abs(), [-2.0, 0.0, -0.0, 3.0])
    assert x.grad(grads).tolist() == [-1.0, 0.0, 0.0, 1.0]


def test_max_dim_ties_send_the_whole_gradient_to_the_first_maximum():
    grads, x = _grad_of(lambda t: t.max_dim(1) * 3.0, [[1.0, 5.0, 5.0], [7.0, 7.0, 7.0]])
    assert x.grad(grads).tolist() == [[0.0, 3.0, 0.0], [3.0, 0.0, 0.0]]


def test_max_dim_with_indices_returns_the_first_maximum_index():
    x = Tensor.from_floats([[1.0, 5.0, 5.0], [7.0, 7.0, 2.0]], AD)
    values, indices = x.max_dim_with_indices(1)
    assert values.tolist() == [[5.0], [7.0]]
    assert indices.tolist() == [[1], [0]]
    assert str(indices.dtype) == "int64"


def test_gather_repeated_index_adds_gradients():
    grads, x = _grad_of(lambda t: t.gather(0, Tensor.from_ints([0, 0, 2], AD)), [1.0, 2.0, 3.0])
    assert x.grad(grads).tolist() == [2.0, 0.0, 1.0]


def test_log_softmax_is_stable_for_large_logits():
    x = Tensor.from_floats([[1000.0, 0.0], [-1000.0, 0.0]], AD).require_grad()
    out = x.log_softmax(1)
    assert out.tolist() == [[0.0, -1000.0], [-1000.0, 0.0]]
    grads = out.gather(1, Tensor.from_ints([[0], [0]], AD)).sum().backward()
    # d/dx of log_softmax(x)[0] = onehot(0) - softmax(x): exactly [0, 0] and [1, -1] here.
    assert x.grad(grads).tolist() == [[0.0, 0.0], [1.0, -1.0]]


def test_softmax_is_stable_for_large_logits():
    x = Tensor.from_floats([[1000.0, 1000.0]], AD)
    assert x.softmax(1).tolist() == [[0.5, 0.5]]


def test_sigmoid_saturates_without_overflow():
    with np.errstate(over="raise"):
        out = Tensor.from_floats([-1000.0, 0.0, 1000.0], AD).sigmoid()
    assert out.tolist() == [0.0, 0.5, 1.0]


def test_div_scalar_backward_uses_the_f32_reciprocal_like_burn():
    grads, x = _grad_of(lambda t: t / 1.3, [1.0, 2.0], dtype=np.float64)
    inverse = float(np.float32(1.0) / np.float32(1.3))
    assert x.grad(grads).tolist() == [inverse, inverse]
    assert inverse != 1 / 1.3


def test_max_pair_ties_send_the_whole_gradient_to_self():
    # burn's max_pair is self.mask_where(self.lower(other), other) (orderable.rs, commit
    # 2c06be351006851d42fdb6df16b976f4a82d9747): at a tie the mask is false, so self gets all
    # of mask_where's gradient; torch.maximum gives half to each.
    a = Tensor.from_floats([1.0, 2.0, 3.0], AD).require_grad()
    b = Tensor.from_floats([1.0, 5.0, 0.0], AD).require_grad()
    grads = a.max_pair(b).sum().backward()
    assert a.grad(grads).tolist() == [1.0, 0.0, 1.0]
    assert b.grad(grads).tolist() == [0.0, 1.0, 0.0]


def test_max_pair_with_nan_keeps_self_as_burns_comparison_does():
    nan = float("nan")
    a = Tensor.from_floats([nan, 1.0], AD).require_grad()
    b = Tensor.from_floats([1.0, nan], AD).require_grad()
    out = a.max_pair(b)
    assert np.isnan(out.numpy()[0]) and out.numpy()[1] == 1.0  # torch.maximum: NaN, NaN
    grads = out.sum().backward()
    assert a.grad(grads).tolist() == [1.0, 1.0]
    assert b.grad(grads).tolist() == [0.0, 0.0]


def test_slice_assign_refuses_a_value_of_another_shape():
    a = Tensor.zeros((3, 2), AD)
    with pytest.raises(Exception, match=r"slice_assign: the value's shape \[1, 1\]"):
        a.slice_assign([(0, 1)], Tensor.zeros((1, 1), AD))


def test_slice_assign_names_itself_for_a_bad_range():
    a, value = Tensor.zeros((3, 2), AD), Tensor.zeros((1, 2), AD)
    with pytest.raises(ShapeError, match=r"^slice_assign: range \(5, 6\) is out of bounds or "):
        a.slice_assign([(5, 6)], value)
    with pytest.raises(ShapeError, match=r"^slice_assign: 3 ranges for shape \[3, 2\]$"):
        a.slice_assign([None, None, None], value)


def test_gather_nd_checks_its_indices_like_burn():
    a = Tensor.zeros((3, 2), AD)
    with pytest.raises(Exception, match=r"K=3\) must be <= data rank \(D=2\)"):
        a.gather_nd(Tensor.from_ints([[0, 0, 0]], AD))
    with pytest.raises(IndexError, match="gather_nd: index -1 out of bounds"):
        a.gather_nd(Tensor.from_ints([[-1, 0]], AD))
