"""float16 and bfloat16 tensors as burn-flex computes them: in float32, rounded once per op.

burn-flex (`crates/burn-flex/src/ops/`, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747)
keeps a half tensor's storage in f16/bf16 and computes each op in f32: `binary_op` is
`f16::from_f32(f32_op(a.to_f32(), b.to_f32()))` (binary.rs), `unary_op` the same on one
operand (unary.rs), a scalar operand is first rounded to the half format
(`f16::from_f32(scalar as f32)`, `scalar_op` in binary.rs), bf16 matmul and conv convert to
f32, run the f32 kernel once and round the result (`matmul_bf16` in matmul.rs, `bf16_via_f32!`
in conv.rs), the deformable convolutions `cast_to_f32`/`cast_from_f32` (module.rs), cumulative
ops fold in f32 and round each output (`cumulative_op_half`, cumulative.rs). So the default
here (`via_f32`): every primitive's forward runs its float32 code on the inputs widened to
float32 (exact), and rounds each float output once to the half format; what the forward saves
for its backward is rounded too, as burn-autodiff saves half tensors. The ops whose flex kernel
is not one f32 computation rounded once have their own half forward (`HALF_FORWARDS`, filled by
`harness.engine.ops.half_ops`).

Backward: burn-autodiff runs each rule with the same backend ops, in the half dtype, so a rule
made of several backend ops rounds after each. The engine's rules are fused NumPy expressions;
in half precision they run in float32 on the widened gradient and saved values and round each
input's gradient once (softmax's and log_softmax's run burn's ops one by one, half_ops). Where
burn's rule is one flex kernel (relu, sigmoid, gelu, log_sigmoid backward; matmul's two
products; a mul or div by a saved value) that is exactly burn's; where it is several ops
(tanh's `1 - out^2` then `* grad`, powf's, atan2's, a broadcast's sum per dim), it is not.
Measured on 64x32 normal inputs against the same rule run as separately rounded NumPy half ops:
tanh's gradient parts on half of the elements by up to 10 float16 / 6 bfloat16 ULP, powf's by 5,
atan2's and hypot's by 2, div's by 1 (where |grad| >= 1/16).

PyTorch differences (declared in the op matrix's half rows, harness.opmatrix.divergences): torch
computes most CPU half kernels in float32 and rounds once, as here, but its half convolutions,
transposed and deformable convolutions, cumprod's and asin's backward accumulate or round
partial results in the half format (measured up to 3e4 ULP from the float32 result rounded,
where the engine stays within 1 ULP); its half softmax, log_softmax, layer_norm and attention
compute in float32 where burn composes backend ops, each rounded (the engine, as burn, up to 128
ULP from the float32 result rounded in attention's gradient).

Casting: burn-flex's `float_cast` (float.rs) goes through f64 and `f16::from_f64` /
`bf16::from_f64` of the `half` crate 2.7.1 (default features off: its software conversion),
which drops the low 32 bits of the f64 before rounding (`f64_to_f16_fallback` /
`f64_to_bf16`: "truncating the last 32-bits of mantissa"). For a float32 source those are its
lowest 3 mantissa bits, so a value a hair above a rounding tie (only those bits set past the
tie) rounds to even instead of up (`burn_round`). PyTorch difference: torch's `.to(torch.half)`
rounds the float32 value correctly; the two differ on about 1 in 2300 random float32 values
for float16 and 1 in 10000 for bfloat16, by 1 ULP.
"""

from __future__ import annotations

import functools
import inspect

import ml_dtypes
import numpy as np

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
HALF_DTYPES = (FLOAT16, BFLOAT16)
_NAMES = {"bfloat16": BFLOAT16, "BF16": BFLOAT16, "F16": FLOAT16, "F32": FLOAT32, "F64": FLOAT64}


class FloatDType:
    """burn's `FloatDType` (burn-std `tensor/dtype.rs`): `t.cast(FloatDType.BF16)`.

    The members are NumPy dtypes, so `t.dtype == FloatDType.F16` reads as in burn. burn's
    `Flex32` (f32 storage computed at f16 precision, for GPU backends) has no flex kernel and
    is left out.
    """

    F64 = FLOAT64
    F32 = FLOAT32
    F16 = FLOAT16
    BF16 = BFLOAT16


def dtype_of(dtype) -> np.dtype:
    """`dtype` as a NumPy dtype: a dtype, a NumPy name, "bfloat16" or burn's "F16"/"BF16"."""
    if dtype.__class__ is str:
        found = _NAMES.get(dtype)
        if found is not None:
            return found
    return np.dtype(dtype)


def finfo(dtype):
    """`np.finfo`, also for bfloat16 (ml_dtypes' finfo; NumPy's refuses it)."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype) if dtype.kind == "f" else ml_dtypes.finfo(dtype)


def is_half(dtype: np.dtype) -> bool:
    """Whether `dtype` is float16 or bfloat16 (itemsize 2: the engine has no int16)."""
    return dtype.itemsize == 2


def burn_round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`x` (float32 or float64) in the half `dtype` as burn's `float_cast` rounds it.

    The `half` crate's `from_f64` keeps the high 32 bits of the f64 and rounds those to
    nearest-even (module docstring); NaN stays NaN (its payload may sit in the low bits).
    The kept value has at most 20 fraction bits, so its conversion to the half format (NumPy
    float16, or ml_dtypes' bfloat16 through float32) is one correct rounding, except for
    bfloat16 below float32's normal range (<1.2e-38), where the float32 step rounds first.
    """
    wide = np.asarray(x, dtype=FLOAT64)
    bits = wide.view(np.uint64) & np.uint64(0xFFFF_FFFF_0000_0000)
    kept = np.where(np.isnan(wide), wide, bits.view(FLOAT64))
    if dtype == BFLOAT16:
        return kept.astype(FLOAT32).astype(BFLOAT16)
    return kept.astype(dtype)


def widen(x):
    """A half array as float32 (exact); anything else unchanged."""
    if x.__class__ is np.ndarray and x.dtype.itemsize == 2:
        return x.astype(FLOAT32)
    return x


def narrow(x, dtype: np.dtype):
    """float32 arrays (also inside tuples and lists) rounded once to `dtype`; others as given.
    Past the format's range a value becomes an infinity, silently, as flex's `from_f32`."""
    if x.__class__ is np.ndarray:
        if x.dtype != FLOAT32:
            return x
        with np.errstate(over="ignore"):
            return x.astype(dtype)
    if isinstance(x, np.generic) and x.dtype == FLOAT32:
        return np.asarray(x).astype(dtype)
    if x.__class__ in (tuple, list):
        return x.__class__(narrow(v, dtype) for v in x)
    return x


def half_scalar(value, dtype: np.dtype) -> float:
    """A scalar operand as flex uses it on a half tensor: `f16::from_f32(scalar as f32)`,
    widened back to f32 (`scalar_op` in binary.rs)."""
    if value is None or value.__class__ is bool:
        return value
    if isinstance(value, (float, np.floating)):
        return np.float32(np.float32(value).astype(dtype))
    return value


def map_saved(saved, fn):
    """A copy of the saved record with `fn` applied to every field (dataclass slots, tuples).

    None and records without array fields come back as they are."""
    if saved is None:
        return None
    if saved.__class__ in (tuple, list):
        return saved.__class__(fn(v) for v in saved)
    slots = getattr(saved.__class__, "__slots__", None)
    if not slots:
        return fn(saved)
    fields = {name: getattr(saved, name) for name in slots}
    mapped = {name: fn(value) for name, value in fields.items()}
    if all(mapped[name] is fields[name] for name in slots):
        return saved
    copy = object.__new__(saved.__class__)
    for name, value in mapped.items():
        object.__setattr__(copy, name, value)
    return copy


def _narrow_arrays(x, dtype: np.dtype):
    if x.__class__ is np.ndarray:
        return narrow(x, dtype)
    if x.__class__ in (tuple, list):
        return x.__class__(_narrow_arrays(v, dtype) for v in x)
    return x


def _widen_deep(x):
    if x.__class__ in (tuple, list):
        return x.__class__(widen(v) for v in x)
    return widen(x)


def via_f32_forward(forward, scalar_params, tracked: bool):
    """The half forward of a primitive: its float32 forward on widened inputs, each float output
    (and, when `tracked`, each saved float array) rounded once to the inputs' dtype."""

    def half_forward(dtype, args, kwargs):
        wide = tuple(_widen_deep(a) for a in args)
        if scalar_params:
            kwargs = {
                k: half_scalar(v, dtype) if k in scalar_params else v for k, v in kwargs.items()
            }
        kwargs = {k: _widen_deep(v) for k, v in kwargs.items()}
        result = forward(*wide, **kwargs)
        if not tracked:
            return narrow(result, dtype)
        out, saved = result
        # Saved arrays as burn-autodiff saves them (half tensors); saved scalars (a count, a
        # scalar operand already rounded) stay as they are.
        return narrow(out, dtype), map_saved(saved, lambda v: _narrow_arrays(v, dtype))

    half_forward.__name__ = f"half_{forward.__name__}"
    return half_forward


def via_f32_rule(rule):
    """The half backward of a rule: the float32 rule on the widened gradient and saved values,
    each input's gradient rounded once to the gradient's dtype."""

    def half_rule(saved, g, tracked):
        dtype = g.dtype
        grads = rule(map_saved(saved, _widen_deep), g.astype(FLOAT32), tracked)
        return tuple(narrow(gp, dtype) for gp in grads)

    half_rule.__name__ = f"half_{rule.__name__}"
    return half_rule


# ---- dispatch: the f32 code path untouched, half arrays routed to the op's half code ----------

# Differentiable primitives that run on half arrays as they are: `cast` converts dtypes itself.
NATIVE = frozenset({"cast"})
# Parameters that are scalar operands, rounded to the half format as flex's `scalar_op` does.
SCALAR_PARAMS = frozenset({"value", "min", "max", "exponent"})


def dispatch(op) -> None:
    """Wrap `op.forward` and `op.backward` so that half inputs take `op.half_forward` and
    `op.half_rule` (read at each call: `harness.engine.ops.half_ops` replaces some), float32
    and float64 the op's own code. The forward wrapper has the forward's own parameters when
    they are plain (a call through `*args, **kwargs` costs ~0.3 us more on every float32 op)."""
    forward, rule = op.forward, op.backward
    scalars = SCALAR_PARAMS.intersection(op.params)
    op.half_forward = _keyword_call(via_f32_forward(forward, scalars, tracked=True))
    op.half_rule = via_f32_rule(rule)
    op.forward = _forward_dispatcher(op, forward)
    op.backward = _rule_dispatcher(op, rule)


def _keyword_call(half_forward):
    def call(*args, **kwargs):
        return half_forward(args[0].dtype, args, kwargs)

    call.__name__ = half_forward.__name__
    return call


def _forward_dispatcher(op, forward):
    params = list(inspect.signature(forward).parameters.values())
    n_inputs = len(op.inputs)
    plain = not op.variadic and all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[n_inputs:])
    if plain:
        inputs = ", ".join(op.inputs)
        names = [p.name for p in params[n_inputs:]]
        sig = f"{inputs}, /" + "".join(f", {n}" for n in names)
        call = f"{inputs}" + "".join(f", {n}" for n in names)
        keywords = "".join(f", {n}={n}" for n in names)
        first = op.inputs[0]
        source = (
            f"def dispatcher({sig}):\n"
            f"    if {first}.dtype.itemsize != 2:\n"
            f"        return forward({call})\n"
            f"    return op.half_forward({inputs}{keywords})\n"
        )
        namespace = {"forward": forward, "op": op}
        exec(source, namespace)
        dispatcher = namespace["dispatcher"]
        dispatcher.__defaults__ = (
            tuple(p.default for p in params[n_inputs:] if p.default is not p.empty) or None
        )
    else:
        names = [p.name for p in params[n_inputs:] if p.kind is p.POSITIONAL_OR_KEYWORD]

        def dispatcher(*args, **kwargs):
            if args[0].dtype.itemsize != 2:
                return forward(*args, **kwargs)
            if not op.variadic and len(args) > n_inputs:
                kwargs = {**dict(zip(names, args[n_inputs:], strict=False)), **kwargs}
                args = args[:n_inputs]
            return op.half_forward(*args, **kwargs)

    dispatcher = functools.update_wrapper(dispatcher, forward)
    dispatcher.float_path = forward  # what a float32/float64 call runs (harness.engine.tape)
    return dispatcher


def float_path(fn):
    """What `fn` runs for float32/float64 arrays when it is one of the dispatchers below (its
    `float_path`), else `fn`. A function that wraps a dispatcher with `functools.wraps` gets a
    copy of its `float_path` too, but its `__wrapped__` is the dispatcher: it is left alone."""
    path = getattr(fn, "float_path", None)
    return path if path is not None and getattr(fn, "__wrapped__", None) is path else fn


def _rule_dispatcher(op, rule):
    def dispatcher(saved, g, tracked):
        if g.dtype.itemsize != 2:
            return rule(saved, g, tracked)
        return op.half_rule(saved, g, tracked)

    dispatcher = functools.update_wrapper(dispatcher, rule)
    dispatcher.float_path = rule
    return dispatcher
