"""float16 and bfloat16 engine tensors (issue 25): creation, burn's cast and its gradient,
and each half op computed as burn-flex does (harness.engine.ops.half, half_ops).

Expected values are computed here independently of the engine: the float32 op in NumPy on the
widened operands, rounded once with NumPy's float16 / ml_dtypes' bfloat16 cast, or bit
patterns worked out by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from harness.engine import Device, FloatDType, Tensor

AD = Device.flex().autodiff()
PLAIN = Device.flex()
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [F16, BF16]
NAMES = {F16: "float16", BF16: "bfloat16"}


def rng_values(n: int, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


def once(f32: np.ndarray, dtype) -> np.ndarray:
    """A float32 result rounded once to the half format (the reference of every op)."""
    return np.asarray(f32, dtype=np.float32).astype(dtype)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).view(np.uint16)


# ---- creation --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_creation_in_each_half_dtype_and_burns_names(dtype):
    burn_name = FloatDType.F16 if dtype == F16 else FloatDType.BF16
    for spelling in (NAMES[dtype], dtype, burn_name):
        t = Tensor.from_floats([[1.0, -2.5], [0.1, 3.0]], AD, dtype=spelling)
        assert t.dtype == dtype and t.shape == (2, 2)
    assert Tensor.zeros([2], AD, dtype=burn_name).dtype == dtype
    assert Tensor.ones([2], AD, dtype=NAMES[dtype]).tolist() == [1.0, 1.0]
    full = Tensor.full([3], 0.1, AD, dtype=NAMES[dtype])
    assert bits(full.numpy()).tolist() == [bits(np.float32(0.1).astype(dtype)).item()] * 3
    assert Tensor.from_numpy(np.array([0.5, 2.0], dtype=dtype), AD).dtype == dtype


def test_from_floats_rounds_through_float32_as_burns_f32_elements():
    # 1 + 2**-11 + 2**-40 as a float64 rounds up to 1 + 2**-10 in float16 directly, but its
    # float32 (1 + 2**-11, a tie) rounds to even: 1.0. burn's from_floats takes f32 elements.
    v = 1 + 2**-11 + 2**-40
    assert Tensor.from_floats([v], AD, dtype="float16").tolist() == [1.0]
    assert np.array([v]).astype(np.float16).tolist() == [1 + 2**-10]


# ---- cast ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_cast_round_trips_are_exact_for_representable_values(dtype):
    # Every finite half value (all bit patterns but NaNs) survives half -> wide -> half.
    patterns = np.arange(2**16, dtype=np.uint16).view(dtype)
    finite = patterns[np.isfinite(patterns.astype(np.float32))]
    t = Tensor.from_numpy(finite, PLAIN)
    for wide in (FloatDType.F32, FloatDType.F64):
        back = t.cast(wide).cast(dtype)
        assert bits(back.numpy()).tolist() == bits(finite).tolist()
    other = F16 if dtype == BF16 else BF16
    assert t.cast(dtype) is t
    # Between the two half formats: exact where the other holds the value.
    small = finite[np.abs(finite.astype(np.float32)) < 1]
    narrow = Tensor.from_numpy(small, PLAIN).cast(other)
    exact = narrow.numpy().astype(np.float32) == small.astype(np.float32)
    assert np.array_equal(narrow.cast(dtype).numpy()[exact], small[exact])


def test_cast_to_half_rounds_as_the_half_crate_not_correctly():
    # 1 + 2**-11 + 2**-23 in float32: past the float16 tie only by its lowest mantissa bit,
    # which the half crate's f64 conversion drops (it keeps the high 32 bits of the f64), so
    # burn gets the tie and rounds to even (1.0); a correct rounding gives 1 + 2**-10.
    x = np.array([1 + 2**-11 + 2**-23], dtype=np.float32)
    assert x.astype(np.float16).tolist() == [1 + 2**-10]  # NumPy (and torch): correct
    assert Tensor.from_numpy(x, PLAIN).cast("float16").tolist() == [1.0]
    # bfloat16: the tie is at 2**-8; the same bit past it.
    y = np.array([1 + 2**-8 + 2**-23], dtype=np.float32)
    assert y.astype(BF16).astype(np.float32).tolist() == [1 + 2**-7]
    assert Tensor.from_numpy(y, PLAIN).cast(FloatDType.BF16).numpy().astype(float).tolist() == [1.0]
    # With a bit above the dropped ones set, both round up.
    z = np.array([1 + 2**-11 + 2**-20], dtype=np.float32)
    assert Tensor.from_numpy(z, PLAIN).cast("float16").tolist() == [1 + 2**-10]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_cast_gradient_is_cast_back(dtype):
    x = Tensor.from_floats([0.3, -1.7, 2.2], AD).require_grad()
    h = x.cast(dtype)
    assert h.dtype == dtype
    loss = (h * Tensor.from_floats([1.0, 2.0, 0.1], AD, dtype=dtype)).sum()
    grads = loss.backward()
    gx = x.grad(grads)
    assert gx.dtype == np.float32
    # d/dx of sum(w * cast(x)) is w, as a half value widened: 0.1 rounded to the half format.
    assert (
        gx.tolist()
        == once(np.array([1.0, 2.0, 0.1], np.float32), dtype).astype(np.float32).tolist()
    )
    # And from half to float32: the float32 gradient comes back rounded to the half format.
    hx = Tensor.from_floats([0.5, 1.5], AD, dtype=dtype).require_grad()
    out = hx.cast("float32").mul_scalar(0.1).sum()
    ghx = hx.grad(out.backward())
    assert ghx.dtype == dtype
    assert bits(ghx.numpy()).tolist() == bits(once(np.float32(0.1) * np.ones(2), dtype)).tolist()


def test_float_dtypes_never_mix():
    a = Tensor.from_floats([1.0], AD, dtype="float16")
    b = Tensor.from_floats([1.0], AD, dtype="bfloat16")
    with pytest.raises(TypeError, match="add: dtype mismatch: float16 and bfloat16"):
        a + b


# ---- ops: one float32 computation rounded once (harness.engine.ops.half) -----------------------


def _pair(seed: int, dtype, n: int = 4096):
    a = once(rng_values(n, seed), dtype)
    b = once(rng_values(n, seed + 1), dtype)
    return a, b


def _sigmoid_f32(x32: np.ndarray) -> np.ndarray:
    # flex's sigmoid_f32 (crates/burn-flex/src/ops/activation.rs): two branches, in f32.
    e = np.exp(-np.abs(x32))
    return np.where(x32 >= 0, np.float32(1) / (np.float32(1) + e), e / (np.float32(1) + e))


UNARY = {
    "exp": (lambda t: t.exp(), np.exp),
    "log": (lambda t: t.abs().log(), lambda x: np.log(np.abs(x))),
    "sqrt": (lambda t: t.abs().sqrt(), lambda x: np.sqrt(np.abs(x))),
    "tanh": (lambda t: t.tanh(), np.tanh),
    "sin": (lambda t: t.sin(), np.sin),
    "sigmoid": (lambda t: t.sigmoid(), _sigmoid_f32),
}


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_a_unary_half_op_is_the_float32_op_rounded_once(dtype, name):
    engine_op, f32_op = UNARY[name]
    a, _ = _pair(3, dtype)
    out = engine_op(Tensor.from_numpy(a, PLAIN)).numpy()
    x32 = a.astype(np.float32)
    if name in ("log", "sqrt"):  # abs is exact: its rounding changes nothing
        x32 = np.abs(x32)
        f32_op = {"log": np.log, "sqrt": np.sqrt}[name]
    with np.errstate(all="ignore"):
        want = once(f32_op(x32), dtype)
    assert bits(out).tolist() == bits(want).tolist()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_binary_and_scalar_ops_round_once_with_the_scalar_rounded_first(dtype):
    a, b = _pair(5, dtype)
    ta, tb = Tensor.from_numpy(a, PLAIN), Tensor.from_numpy(b, PLAIN)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for got, want in (
        (ta + tb, a32 + b32),
        (ta * tb, a32 * b32),
        (ta / tb, a32 / b32),
        (ta.powf(tb.abs()), np.power(a32, np.abs(b32))),
    ):
        with np.errstate(all="ignore"):
            assert bits(got.numpy()).tolist() == bits(once(want, dtype)).tolist()
    # flex's scalar_op: f16::from_f32(scalar as f32), then the f32 op, then one rounding.
    s = np.float32(np.float32(0.1).astype(dtype))
    got = ta.mul_scalar(0.1).numpy()
    assert bits(got).tolist() == bits(once(a32 * s, dtype)).tolist()
    unrounded = once(a32 * np.float32(0.1), dtype)
    assert (bits(got) != bits(unrounded)).any()  # the scalar's own rounding shows


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_sum_folds_in_order_in_float32(dtype):
    # 4096 ones: a half accumulator would stall (float16 at 2048, bfloat16 at 256); NumPy's
    # own bfloat16 add.reduce does stall, so the engine must widen.
    ones = np.ones(4096, dtype=dtype)
    assert np.add.reduce(ones).astype(np.float32) != 4096 or dtype == F16
    assert Tensor.from_numpy(ones, PLAIN).sum().tolist() == [4096.0]
    # Against a Python loop of float32 additions in order (flex's reduce_scalar_half).
    x = once(rng_values(2000, 9, scale=50.0), dtype).reshape(40, 50)
    acc = np.float32(0)
    for v in x.astype(np.float32).ravel():
        acc = np.float32(acc + v)
    assert bits(Tensor.from_numpy(x, PLAIN).sum().numpy()).tolist() == [bits(once(acc, dtype))]
    rows = []
    for row in x.astype(np.float32):
        acc = np.float32(0)
        for v in row:
            acc = np.float32(acc + v)
        rows.append(acc)
    got = Tensor.from_numpy(x, PLAIN).sum_dim(1).numpy()
    assert got.shape == (40, 1)
    assert bits(got.ravel()).tolist() == bits(once(np.array(rows), dtype)).tolist()


def test_mean_sums_and_divides_in_float32_before_rounding():
    # flex's mean_dim_half: a float16 sum of 3 x 60000 overflows (65504 is float16's max);
    # the mean in float32 does not.
    x = np.full((1, 3), 60000.0, dtype=np.float16)
    t = Tensor.from_numpy(x, PLAIN)
    assert t.mean_dim(1).tolist() == [[60000.0]]
    assert t.mean().tolist() == [60000.0]
    assert np.isinf(t.sum().numpy()).all()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_mean_gradient_rounds_one_over_n_to_the_half_format_first(dtype):
    # burn-autodiff's mean rule: ones * (1/n), then times the gradient; flex rounds the scalar
    # 1/n to the half format first (scalar_op), so it is round(half(1/n) * g).
    n, g = 3, np.float32(np.float32(1.7).astype(dtype))
    x = Tensor.from_numpy(np.zeros(n, dtype=dtype), AD).require_grad()
    grad = x.grad(x.mean().mul_scalar(1.7).backward()).numpy()
    inv = np.float32(np.float32(1 / n).astype(dtype))
    want = once(np.full(n, inv * g), dtype)
    assert bits(grad).tolist() == bits(want).tolist()
    assert bits(want)[0] != bits(once(np.float32(g) / np.float32(n), dtype))  # it matters here


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_matmul_is_one_float32_matmul_rounded_once(dtype):
    a = once(rng_values(64 * 96, 1).reshape(64, 96), dtype)
    b = once(rng_values(96 * 32, 2).reshape(96, 32), dtype)
    got = Tensor.from_numpy(a, PLAIN).matmul(Tensor.from_numpy(b, PLAIN)).numpy()
    want = once(a.astype(np.float64) @ b.astype(np.float64), dtype)  # float64 as the sum
    # One rounding of a float32 sum of 96 products: within 1 ULP of the float64 result rounded.
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    spacing = np.abs(want.astype(np.float64)) * (2.0**-10 if dtype == F16 else 2.0**-7)
    assert np.all(diff <= np.maximum(spacing, 2.0**-10 if dtype == F16 else 2.0**-7))
    f32 = once(a.astype(np.float32) @ b.astype(np.float32), dtype)
    assert np.mean(bits(got) == bits(f32)) > 0.99


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_linear_rounds_the_product_then_the_bias_add(dtype):
    # flex runs burn's default linear: a matmul, then an add, each rounded.
    x = once(rng_values(8 * 16, 3).reshape(8, 16), dtype)
    w = once(rng_values(16 * 4, 4).reshape(16, 4), dtype)
    b = once(rng_values(4, 5), dtype)
    from harness.engine import module_ops

    got = module_ops.linear(
        Tensor.from_numpy(x, PLAIN), Tensor.from_numpy(w, PLAIN), Tensor.from_numpy(b, PLAIN)
    ).numpy()
    product = Tensor.from_numpy(x, PLAIN).matmul(Tensor.from_numpy(w, PLAIN)).numpy()
    want = once(product.astype(np.float32) + b.astype(np.float32), dtype)
    assert bits(got).tolist() == bits(want).tolist()


def _flex_fused_softmax(x: np.ndarray, dtype) -> np.ndarray:
    """softmax_row_half (crates/burn-flex/src/ops/activation.rs), row by row in a loop."""
    out = np.empty_like(x)
    for i, row in enumerate(x.astype(np.float32)):
        m = row.max()
        e = [np.float32(np.exp(np.float32(v - m))) for v in row]
        stored = [np.float32(np.float32(v).astype(dtype)) for v in e]
        total = np.float32(0)
        for v in e:
            total = np.float32(total + v)
        inv = np.float32(1) / total
        out[i] = [np.float32(v * inv).astype(dtype) for v in stored]
    return out


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_plain_device_softmax_rounds_twice_as_flexs_fused_kernel(dtype):
    x = once(rng_values(64 * 33, 6).reshape(64, 33), dtype)
    got = Tensor.from_numpy(x, PLAIN).softmax(1).numpy()
    assert bits(got).tolist() == bits(_flex_fused_softmax(x, dtype)).tolist()
    x32 = x.astype(np.float32)
    e = np.exp(x32 - x32.max(axis=1, keepdims=True))
    single = once(e / e.sum(axis=1, keepdims=True), dtype)
    assert (bits(got) != bits(single)).any()  # the double rounding shows


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_autodiff_softmax_is_burns_five_op_composite_each_rounded(dtype):
    x = once(rng_values(16 * 9, 7).reshape(16, 9), dtype)
    got = Tensor.from_numpy(x, AD).softmax(1).numpy()

    def r(v):
        return np.asarray(v, np.float32).astype(dtype).astype(np.float32)

    x32 = x.astype(np.float32)
    shifted = r(x32 - x32.max(axis=1, keepdims=True))
    e = r(np.exp(shifted))
    s = np.zeros((16, 1), np.float32)
    for k in range(9):
        s[:, 0] = s[:, 0] + e[:, k]
    want = once(e / r(s), dtype)
    assert bits(got).tolist() == bits(want).tolist()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_half_gradients_are_the_float32_rule_rounded_once(dtype):
    # exp's rule g * out, with out the saved half output (as burn saves it), in float32, rounded.
    a, c = _pair(11, dtype, n=256)
    x = Tensor.from_numpy(a, AD).require_grad()
    out = x.exp()
    cot = Tensor.from_numpy(c, AD)
    grad = x.grad((out * cot).sum().backward()).numpy()
    out32 = out.numpy().astype(np.float32)
    want = once(c.astype(np.float32) * out32, dtype)
    assert bits(grad).tolist() == bits(want).tolist()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_every_float_op_keeps_the_half_dtype(dtype):
    x = Tensor.from_numpy(once(rng_values(12, 12).reshape(3, 4), dtype), AD).require_grad()
    outs = [x.exp(), x.softmax(1), x.log_softmax(1), x.sum_dim(0), x.mean(), x.matmul(x.t())]
    outs += [x.argmax(1).float(dtype), x.sort(1), x.cumsum(1), x.var(1), x.max_dim(1)]
    assert all(o.dtype == dtype for o in outs)
    loss = outs[0].sum()
    for o in outs[1:]:
        loss = loss + o.sum()
    assert x.grad(loss.backward()).dtype == dtype


def _r(v, dtype):
    return np.asarray(v, np.float32).astype(dtype).astype(np.float32)


def _composite_run(method: str, rows: int, cols: int, seed: int, dtype):
    """The engine's gradient of `sum(method(x, 1) * c)` on half inputs, and the reference's
    float32 values of the gradient c, the rounded exp(x - max) and its in-order f32 sum."""
    x = once(rng_values(rows * cols, seed).reshape(rows, cols), dtype)
    c = once(rng_values(rows * cols, seed + 1, scale=1.0).reshape(rows, cols), dtype)
    t = Tensor.from_numpy(x, AD).require_grad()
    out = getattr(t, method)(1)
    grad = t.grad((out * Tensor.from_numpy(c, AD)).sum().backward()).numpy()
    x32, g = x.astype(np.float32), c.astype(np.float32)
    e = _r(np.exp(_r(x32 - x32.max(axis=1, keepdims=True), dtype)), dtype)
    s = np.zeros((rows, 1), np.float32)
    for k in range(cols):
        s[:, 0] += e[:, k]
    return grad, g, e, s


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_softmax_gradient_is_burns_composite_backward_op_by_op(dtype):
    # burn-autodiff on the composite exp(x - max) / sum: div's grad * recip(s) and
    # grad * (-e / s^2) summed back, added, then exp's grad * output; each op rounded.
    grad, g, e, s = _composite_run("softmax", 6, 7, 21, dtype)
    s = _r(s, dtype)
    direct = _r(g * _r(1 / s, dtype), dtype)
    prod = _r(g * _r(-e / _r(s * s, dtype), dtype), dtype)
    back = np.zeros((6, 1), np.float32)
    for k in range(7):
        back[:, 0] += prod[:, k]
    want = once(_r(direct + _r(back, dtype), dtype) * e, dtype)
    assert bits(grad).tolist() == bits(want).tolist()


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_log_softmax_gradient_is_burns_composite_backward_op_by_op(dtype):
    grad, g, e, s = _composite_run("log_softmax", 5, 8, 23, dtype)
    neg = np.zeros((5, 1), np.float32)
    for k in range(8):
        neg[:, 0] -= g[:, k]
    g_sum = _r(_r(neg, dtype) * _r(1 / _r(s, dtype), dtype), dtype)
    want = once(g + _r(g_sum * e, dtype), dtype)
    assert bits(grad).tolist() == bits(want).tolist()


def test_gradient_norm_clipping_sums_half_squares_in_float32():
    # 4096 gradients of 0.5: squares 0.25 sum to 1024 (norm 32); a bfloat16 accumulator would
    # stall at 64 (norm 8) and clip four times too little.
    from harness.engine.optim.clipping import GradientClipping

    g = np.full(4096, 0.5, dtype=BF16)
    clipped = GradientClipping.norm(1.0).clip_array(g)
    assert clipped.dtype == BF16
    coef = np.float32(np.float32(1.0) / np.float32(32.0)).astype(BF16)  # 1 / (32 + tiny)
    assert (
        bits(clipped).tolist()
        == bits(once(np.float32(0.5) * coef.astype(np.float32), BF16))[None].repeat(4096).tolist()
    )
