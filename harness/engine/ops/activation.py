"""Activation primitives burn-flex and burn-autodiff have as single ops, `erf` and exact
`gelu`, and the op-matrix facts of the activations burn builds from other ops (burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

- `erf`: flex delegates to libm (`erff` / `erf`, burn-flex/src/ops/unary.rs); here Python's
  `math.erf` (the C library's) in float64, rounded once to float32 for float32 inputs. Its
  rule is burn-autodiff's (ops/tensor.rs `float_erf`): `g * (exp(-(x^2)) * 2 / sqrt(pi))`.
- `gelu`: burn-autodiff's own node (ops/activation.rs) over flex's fused
  `0.5 * x * (1 + erf(x / sqrt(2)))` and flex's exact derivative `g * (cdf + x * pdf)`
  (burn-flex/src/ops/activation.rs `gelu_backward`). burn-backend's *default*
  `gelu_backward` is the derivative of the tanh approximation, but flex overrides it, so the
  seed device's gradient is exact (PyTorch's `gelu(approximate="none")`).

Difference from PyTorch: values agree to the last bit or two (different erf implementations:
float32 erf here is the float64 one rounded, torch's float32 kernel is its own polynomial).

Composites (`COMPOSITE_CHECKS`): under autodiff, burn runs the backend trait's default
decomposition of `leaky_relu`, `prelu`, `hard_sigmoid` (burn-backend ops/activation.rs; flex's
fused versions serve only its plain device) and burn-tensor's compositions of `silu`,
`softplus`, `gelu_approximate`: harness.engine.activation builds them from engine primitives,
so their gradients are those primitives' rules. They register no rule, only their checks
against PyTorch, with the divergences that function's docstring documents; the fuzzer does
not draw them (their steps are primitives it draws already).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import Array, Grad, SavedInput, Tracked, differentiable
from .facts import (
    ZERO_KINKS,
    Abs,
    Check,
    Condition,
    Diverges,
    FuzzElementwise,
    Input,
    composite,
    menu,
    mono,
    unary,
)

_erf64 = np.frompyfunc(math.erf, 1, 1)
_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_PI = math.sqrt(math.pi)


def erf_values(x: Array) -> Array:
    """erf elementwise in x's dtype (float32 or float64), as an array (also for 0-d x)."""
    return np.asarray(_erf64(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def erf(x: Array, /) -> tuple[Array, SavedInput]:
    """The error function, elementwise (burn's `Tensor::erf`)."""
    return erf_values(x), SavedInput(x)


def erf_backward(s: SavedInput, g: Array, tracked: Tracked) -> tuple[Grad]:
    x = s.x
    t = x.dtype.type
    return (g * ((np.exp(np.negative(x * x)) * t(2.0)) / t(_SQRT_PI)),)


ERF = differentiable(
    "erf",
    erf,
    erf_backward,
    checks=(
        unary(
            "erf",
            "activation.erf({a})",
            "torch.erf({a})",
            fuzz=FuzzElementwise(mono(math.erf)),
        ),
        unary("erf[tensor]", "{a}.erf()", "torch.erf({a})"),
    ),
)


@dataclass(slots=True)
class GeluSaved:
    x: Array
    one_plus: Array  # `1 + erf(x / sqrt(2))`, computed once (a Python call per element)


def gelu(x: Array, /) -> tuple[Array, GeluSaved]:
    """Exact GELU, flex's fused `0.5 * x * (1 + erf(x / sqrt(2)))`."""
    t = x.dtype.type
    one_plus = t(1.0) + erf_values(x / t(_SQRT_2))
    return t(0.5) * x * one_plus, GeluSaved(x, one_plus)


def gelu_backward(s: GeluSaved, g: Array, tracked: Tracked) -> tuple[Grad]:
    x = s.x
    t = x.dtype.type
    cdf = t(0.5) * s.one_plus
    pdf = t(_INV_SQRT_2PI) * np.exp(t(-0.5) * x * x)
    return (g * (cdf + x * pdf),)


def _dip_bounds(fn, x: Abs, at: float, low: float) -> tuple[float, float]:
    """Bounds of a function that falls to `low` at `at` and is monotone on either side."""
    values = [fn(x.lo), fn(x.hi)]
    return (low if x.lo < at < x.hi else min(values)), max(values)


def _gelu_bounds(x: Abs) -> tuple[float, float]:
    # GELU's minimum is about -0.17, at x ~ -0.75 (rounded down: the bound must hold).
    return _dip_bounds(lambda v: v * 0.5 * (1 + math.erf(v / _SQRT_2)), x, -0.75, -0.171)


GELU = differentiable(
    "gelu",
    gelu,
    gelu_backward,
    checks=(
        unary(
            "gelu",
            "activation.gelu({a})",
            'torch.nn.functional.gelu({a}, approximate="none")',
            diverges=(
                Diverges(
                    "float32/*/specials/forward",
                    "gelu(+inf): torch's float32 oneDNN AVX-512 kernel gives NaN; its AVX2 and "
                    "SSE4.1 kernels, its float64 one and the engine inf "
                    "(0.5 * inf * (1 + erf(inf)))",
                    Condition.only_where(
                        "torch is NaN and the engine infinite",
                        lambda t, e: np.isnan(t) & np.isinf(e),
                    ),
                    torch_kernel="onednn-avx512",
                ),
            ),
            fuzz=FuzzElementwise(_gelu_bounds),
        ),
    ),
)

# ---- composites: checks only ----------------------------------------------------------------

_SLOPE = 0.1
_AT_ZERO = Condition.only_where(
    "torch's gradient is the slope times the engine's (x == 0)",
    lambda t, e: np.isclose(t, _SLOPE * e) | (np.isnan(t) & np.isnan(e)),
)
_LEAKY_AT_ZERO = tuple(
    Diverges(
        f"*/*/{valueset}/vjp.a",
        "gradient at x == 0: burn's mask_where(x < 0, slope * x, x) takes the x branch "
        "(gradient 1), torch's the slope (harness.engine.activation.leaky_relu)",
        _AT_ZERO,
    )
    for valueset in ("kinks", "specials")
)


def _per_channel_factor(t, e) -> bool:
    """Where the gradients differ, torch's is the engine's times one factor per channel (dim 1:
    that channel's alpha, at x == 0)."""
    if t is None or e is None or np.shape(t) != np.shape(e):
        return False
    differ = ~np.isclose(t, e, equal_nan=True)
    for c in range(np.shape(t)[1]):
        d = differ[:, c]
        if d.any():
            ratios = t[:, c][d] / e[:, c][d]
            if not np.allclose(ratios, ratios[0]):
                return False
    return True


_PRELU_AT_ZERO = tuple(
    Diverges(
        f"*/*/{valueset}/vjp.a",
        "gradient at x == 0: burn's mask_where(x < 0, alpha * x, x) takes the x branch "
        "(gradient 1), torch's alpha (harness.engine.activation.prelu)",
        Condition.whole("torch's is the engine's times the channel's alpha", _per_channel_factor),
    )
    for valueset in ("kinks", "specials")
)
_SOFTPLUS_OVERFLOW = (
    Diverges(
        "*/*/kinks/*",
        "softplus without torch's threshold 20: past it torch returns x (gradient 1), burn "
        "log(exp(x) + 1), which rounds differently and overflows past x ~ 88.7 in float32 (inf "
        "value, NaN gradient) (harness.engine.activation.softplus)",
        Condition.only_where(
            "the engine's value is non-finite or within rtol 1e-9 of torch's",
            lambda t, e: ~np.isfinite(e) | np.isclose(e, t, rtol=1e-9, atol=0),
        ),
    ),
    Diverges(
        "*/*/specials/vjp.a",
        "softplus gradient at +inf: burn's exp(x) / (exp(x) + 1) is inf/inf = NaN, torch's "
        "threshold passes the gradient",
        Condition.only_where("the engine's value is NaN or infinite", lambda t, e: ~np.isfinite(e)),
    ),
)


COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    composite(c)
    for c in (
        unary(
            "silu",
            "activation.silu({a})",
            "torch.nn.functional.silu({a})",
        ),
        unary(
            "gelu_approximate",
            "activation.gelu_approximate({a})",
            'torch.nn.functional.gelu({a}, approximate="tanh")',
        ),
        unary(
            "leaky_relu",
            f"activation.leaky_relu({{a}}, {_SLOPE})",
            f"torch.nn.functional.leaky_relu({{a}}, {_SLOPE})",
            kinks=ZERO_KINKS,
            diverges=_LEAKY_AT_ZERO,
        ),
        Check(
            "prelu",
            "activation.prelu({a}, {b})",
            "torch.nn.functional.prelu({a}, {b})",
            (Input("a"), Input("b")),
            menu(
                ("b2-c3-l4", [(2, 3, 4), (3,)]),
                ("shared", [(2, 3, 4), (1,)]),
            ),
            kinks=ZERO_KINKS,
            diverges=_PRELU_AT_ZERO,
        ),
        unary(
            "softplus",
            "activation.softplus({a}, 1.0)",
            "torch.nn.functional.softplus({a}, 1.0)",
            kinks=(0.0, 25.0, 100.0, -100.0, 1.0, -1.0),
            diverges=_SOFTPLUS_OVERFLOW,
        ),
        unary(
            "hard_sigmoid",
            "activation.hard_sigmoid({a}, 0.2, 0.5)",
            # burn's (ONNX) parameters; PyTorch's F.hardsigmoid is alpha 1/6.
            "torch.clamp({a} * 0.2 + 0.5, 0.0, 1.0)",
            kinks=(-2.5, 2.5, 0.0, -3.0, 3.0, 1.0),
            diverges=(
                Diverges(
                    "*/*/specials/vjp.a",
                    "hard_sigmoid is a clamp: at NaN burn's clamp gradient passes, torch's is "
                    "0 (harness.engine.ops.elementwise.clamp_backward)",
                    Condition.only_where("torch's value is 0", lambda t, e: t == 0),
                ),
            ),
        ),
    )
)
