"""The op-matrix facts of the activations burn-tensor composes from other ops (activation/
base.rs, burn commit 2c06be351006851d42fdb6df16b976f4a82d9747): elu, celu, selu, glu,
hardtanh, relu6, hard_swish, mish, softsign, softmin, threshold, thresholded_relu, the
shrinks and tanhshrink (harness.engine.activation). They register no rule: their gradients
are those of the primitives they call, checked here against PyTorch with the divergences
their docstrings state. (A module of its own beside `activation`'s COMPOSITE_CHECKS.)
"""

from __future__ import annotations

import numpy as np

from . import facts
from .facts import CLAMP_KINKS, ZERO_KINKS, Check, Condition, Diverges, composite, menu, unary

_CLAMP_NAN = Diverges(
    "*/*/specials/vjp.a",
    "a clamp at NaN: burn's autodiff clamp masks only x > max and x < min, so the gradient "
    "passes at NaN; torch's is 0 (harness.engine.ops.unary.clamp)",
    facts.TORCH_ZERO,
)


def _at_bounds(valueset: str) -> Diverges:
    return Diverges(
        f"*/*/{valueset}/vjp.a",
        "hardtanh/relu6 at a bound: burn's clamp passes the gradient there, torch's hardtanh "
        "gives 0 (harness.engine.activation.hardtanh)",
        facts.TORCH_ZERO,
    )


_SELU_ALPHA = 1.6732632423543772


def _where_trap(name: str) -> Diverges:
    """The gradient of a mask_where composite at +inf: the unselected exp branch gets a zero
    cotangent, and exp's rule multiplies it by exp(inf) = inf: 0 * inf = NaN."""
    return Diverges(
        "*/*/specials/vjp.a",
        f"{name}'s gradient at +inf: burn builds it with mask_where, so the unselected exp "
        "branch's zero gradient meets exp's rule g * exp(x) = 0 * inf = NaN; torch's fused "
        f"backward gives the selected branch's (harness.engine.activation.{name})",
        facts.ENGINE_NONFINITE,
    )


COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    composite(c)
    for c in (
        unary(
            "elu",
            "activation.elu({a}, 0.5)",
            "torch.nn.functional.elu({a}, 0.5)",
            kinks=ZERO_KINKS,
            diverges=(_where_trap("elu"),),
        ),
        # alpha 2: div_scalar's f32 1/alpha is exact, so float64 agrees too.
        unary(
            "celu",
            "activation.celu({a}, 2.0)",
            "torch.nn.functional.celu({a}, 2.0)",
            kinks=ZERO_KINKS,
            diverges=(_where_trap("celu"),),
        ),
        unary(
            "selu",
            "activation.selu({a})",
            "torch.nn.functional.selu({a})",
            kinks=ZERO_KINKS,
            diverges=(
                Diverges(
                    "*/*/kinks/vjp.a",
                    "selu's gradient at exactly 0: burn's mask is x >= 0 (gamma), torch's "
                    "x > 0 (gamma * alpha) (harness.engine.activation.selu)",
                    Condition.only_where(
                        "torch's is alpha times the engine's",
                        lambda t, e: np.isclose(t, _SELU_ALPHA * e, rtol=1e-6),
                    ),
                ),
                Diverges(
                    "*/*/specials/vjp.a",
                    "selu's gradient at +-0.0 (burn's x >= 0 mask: gamma, torch's gamma * "
                    "alpha) and at +inf (mask_where's unselected exp branch: 0 * inf = NaN) "
                    "(harness.engine.activation.selu)",
                    Condition.only_where(
                        "torch's is alpha times the engine's, or the engine's is NaN",
                        lambda t, e: np.isclose(t, _SELU_ALPHA * e, rtol=1e-6) | np.isnan(e),
                    ),
                ),
            ),
        ),
        unary(
            "glu",
            "activation.glu({a}, -1)",
            "torch.nn.functional.glu({a}, -1)",
            shapes=menu(("3x4", [(3, 4)]), ("2x3x2", [(2, 3, 2)]), ("0x2", [(0, 2)])),
        ),
        unary(
            "hardtanh",
            "activation.hardtanh({a}, -0.5, 0.5)",
            "torch.nn.functional.hardtanh({a}, -0.5, 0.5)",
            kinks=CLAMP_KINKS,
            diverges=(_at_bounds("kinks"),),
        ),
        unary(
            "relu6",
            "activation.relu6({a})",
            "torch.nn.functional.relu6({a})",
            kinks=(0.0, 6.0, -0.0, 3.0, 7.0, -1.0),
            diverges=(_at_bounds("kinks"), _CLAMP_NAN),
        ),
        unary(
            "hard_swish",
            "activation.hard_swish({a})",
            "torch.nn.functional.hardswish({a})",
            kinks=(-3.0, 3.0, 0.0, -4.0, 4.0, 1.0),
            diverges=(
                Diverges(
                    "*/*/kinks/vjp.a",
                    "hard_swish at x = -3 and 3: burn's x * clamp(x / 6 + 0.5, 0, 1) passes "
                    "the clamp's gradient at its bounds (-0.5 and 1.5 times g), torch's "
                    "hardswish backward gives 0 and g there (harness.engine.activation."
                    "hard_swish)",
                    Condition.only_where(
                        "torch's is 0 or two thirds of the engine's",
                        lambda t, e: (t == 0) | np.isclose(e, 1.5 * t, rtol=1e-6),
                    ),
                ),
                Diverges(
                    "*/*/specials/vjp.a",
                    "hard_swish at NaN and +-inf: burn's product rule gives NaN (inf * 0, "
                    "NaN passing the clamp); torch's backward gives g or 0",
                    facts.ENGINE_NONFINITE,
                ),
            ),
        ),
        unary(
            "mish",
            "activation.mish({a})",
            "torch.nn.functional.mish({a})",
        ),
        unary("softsign", "activation.softsign({a})", "torch.nn.functional.softsign({a})"),
        Check(
            "softmin",
            "activation.softmin({a}, {dim})",
            "torch.nn.functional.softmin({a}, {dim})",
            shapes=menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)])),
            params={"dim": 1},
        ),
        unary(
            "threshold",
            "activation.threshold({a}, 0.5, -2.0)",
            "torch.nn.functional.threshold({a}, 0.5, -2.0)",
            kinks=(0.5, -0.5, 0.0, 1.0, 0.25, 2.0),
        ),
        unary(
            "thresholded_relu",
            "activation.thresholded_relu({a}, 0.5)",
            "{a}.masked_fill({a} <= 0.5, 0.0)",
            kinks=(0.5, -0.5, 0.0, 1.0, 0.25, 2.0),
        ),
        unary(
            "hard_shrink",
            "activation.hard_shrink({a}, 0.5)",
            "torch.nn.functional.hardshrink({a}, 0.5)",
            kinks=(0.5, -0.5, 0.0, 1.0, -0.25, 2.0),
        ),
        unary(
            "soft_shrink",
            "activation.soft_shrink({a}, 0.5)",
            "torch.nn.functional.softshrink({a}, 0.5)",
            kinks=(0.5, -0.5, 0.0, 1.0, -0.25, 2.0),
        ),
        unary(
            "shrink",
            "activation.shrink({a}, 0.5, 0.25)",
            "({a} - torch.sign({a}) * 0.25).masked_fill({a}.abs() <= 0.5, 0.0)",
            kinks=(0.5, -0.5, 0.0, 1.0, -0.25, 2.0),
        ),
        unary("tanhshrink", "activation.tanhshrink({a})", "torch.nn.functional.tanhshrink({a})"),
        unary(
            "log_sigmoid[function]",
            "activation.log_sigmoid({a})",
            "torch.nn.functional.logsigmoid({a})",
        ),
        Check(
            "quiet_softmax",
            "activation.quiet_softmax({a}, {dim})",
            "(lambda m: torch.exp({a} - m) / (torch.exp({a} - m).sum({dim}, keepdim=True) "
            "+ torch.exp(-m)))(torch.max({a}.detach(), {dim}, keepdim=True).values)",
            shapes=menu(("3x2", [(3, 2)]), ("2x3x2", [(2, 3, 2)])),
            params={"dim": 1},
        ),
    )
)
