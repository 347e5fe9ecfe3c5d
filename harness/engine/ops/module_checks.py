"""The op-matrix facts of the `burn::tensor::module` functions burn-backend composes from other
ops (burn commit 2c06be351006851d42fdb6df16b976f4a82d9747): `layer_norm`, `batch_norm`,
`attention` (burn-autodiff's `attention_fallback`) and `ctc_loss` (`ctc_loss_default`), in
harness.engine.module_ops. They register no rule: their gradients are those of the
primitives they call, checked here against PyTorch with the divergences their docstrings
state; and the Tensor method `grid_sample_2d` (harness.engine.composites), burn-backend's
`float_grid_sample_2d_ref` on the autodiff device, against `F.grid_sample` with burn's options.
"""

from __future__ import annotations

import numpy as np

from . import facts
from .facts import BOOL, Check, Diverges, Input, Rounding, menu

F = "torch.nn.functional"

_LAYER_NORM_SHAPES = menu(
    ("2x3x4", [(2, 3, 4), (4,), (4,)]),
    ("5", [(5,), (5,), (5,)]),
    ("empty", [(0, 4), (4,), (4,)]),
)

# batch_norm's running statistics are constants on both sides: torch's batch_norm refuses a
# gradient for them (native_batch_norm is not differentiable in running_mean / running_var);
# the gradient through batch statistics is BatchNorm's, checked with the module.
_BN_MEAN, _BN_VAR = "[0.5, -0.25, 1.0]", "[0.75, 1.5, 2.0]"


def _engine_const(values: str) -> str:
    return f'Tensor.from_floats({values}, {{a}}.device, "{{dtype}}")'


def _row(name: str, i: int) -> str:
    return f"{{{name}}}.slice([({i}, {i + 1}), None]).reshape([-1])"


# q [batch, heads, seq_q, d], k [.., seq_k, d], v [.., seq_k, d_v]: cross attention, seq_k 5.
_QKV = [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)]
_ATTENTION_SHAPES = menu(("b2-h2-3x5", _QKV), ("empty-batch", [(0, 2, 3, 4), (0, 2, 5, 4),
                                                               (0, 2, 5, 3)]))  # fmt: skip
_QKV_INPUTS = (Input("a"), Input("b"), Input("c"))

_TORCH_NAN = facts.Condition.only_where("torch's value is NaN", lambda t, e: np.isnan(t))
_FILL = (
    "burn fills a masked score with -inf (mask_fill), torch's math path adds -inf to it, so a "
    "masked score of +inf is NaN in torch and the row's result NaN"
)
_MASKED = Diverges(
    "*/*/*/*",
    "a query whose keys are all masked: burn's NaN-safe softmax (max clamped to finfo.min, sum "
    f"to finfo.tiny) gives 0 and a zero gradient, torch's math path NaN; and {_FILL} "
    "(harness.engine.module_ops.attention)",
    _TORCH_NAN,
)
_CAUSAL_FILL = Diverges(
    "*/*/specials/*", f"{_FILL} (harness.engine.module_ops.attention)", _TORCH_NAN
)


# ctc_loss on the log_softmax of logits: torch's ctc_loss backward assumes normalised
# log-probabilities (harness.engine.module_ops.ctc_loss). Targets padded with 0 (the blank).
_CTC_ARGS = "[[1, 2, 2], [3, 1, 0]]", "[6, 5]", "[3, 2]"


def _ctc_engine() -> str:
    ints = ", ".join(f"Tensor.from_ints({v}, {{a}}.device)" for v in _CTC_ARGS)
    return f"module_ops.ctc_loss(activation.log_softmax({{a}}, 2), {ints}, 0)"


def _ctc_torch() -> str:
    ints = ", ".join(f"torch.tensor({v})" for v in _CTC_ARGS)
    return f'{F}.ctc_loss({F}.log_softmax({{a}}, 2), {ints}, 0, "none")'


_GRID_SHAPES = menu(("b2-c3-4x5-to-3x6", [(2, 3, 4, 5), (2, 3, 6, 2)]))


_GRID_NONFINITE = Diverges(
    "*/*/specials/vjp.*",
    "a NaN or infinite grid coordinate: burn's composite casts its floor to a corner index "
    "(NaN to 0) and weights it with NaN fractions, so the input's gradient there is NaN and the "
    "other coordinate's is finite; torch's kernel gives such a point no gradient "
    "(harness.engine.composites.grid_sample_2d)",
    facts.TORCH_ZERO,
)


# The grid's float32 gradient is a difference of corner samples (cancellation) times the
# fraction weights and size / 2, each step rounded in another order than torch's kernel.
_GRID_ROUNDING = Rounding(
    rtol=1e-5,
    atol=1e-5,
    reason="float32 grid gradients from differences of samples scaled by size / 2, rounded "
    "per step (burn's composite) or in torch's kernel order: measured worst |engine - "
    "float64| 8.6e-6 and |engine - torch| 1.4e-6 (values about 5)",
)


def _grid_sample(name: str, padding: str, align_corners: bool) -> Check:
    # Border and Reflection see no specials: torch's grid_sampler_2d backward crashes the
    # process (a segmentation fault, torch 2 on CPU) on a non-finite grid coordinate there.
    specials = padding == "Zeros"
    options = (
        f'module_ops.GridSampleOptions("bilinear", module_ops.GridSamplePaddingMode.{padding}, '
        f"{align_corners})"
    )
    return Check(
        name,
        f"{{a}}.grid_sample_2d({{b}}, {options})",
        f'{F}.grid_sample({{a}}, {{b}}, "bilinear", "{padding.lower()}", {align_corners})',
        (Input("a"), Input("b")),
        _GRID_SHAPES,
        specials=specials,
        rounding=_GRID_ROUNDING,
        diverges=(_GRID_NONFINITE,) if specials else (),
    )


COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    facts.composite(c)
    for c in (
        Check(
            "layer_norm",
            "module_ops.layer_norm({a}, {b}, {c}, 1e-5)",
            f"{F}.layer_norm({{a}}, ({{a}}.shape[-1],), {{b}}, {{c}}, 1e-5)",
            (Input("a"), Input("b"), Input("c")),
            _LAYER_NORM_SHAPES,
        ),
        Check(
            "layer_norm[no_beta]",
            "module_ops.layer_norm({a}, {b}, None, 1e-5)",
            f"{F}.layer_norm({{a}}, ({{a}}.shape[-1],), {{b}}, None, 1e-5)",
            (Input("a"), Input("b")),
            menu(("2x3x4", [(2, 3, 4), (4,)])),
        ),
        Check(
            "batch_norm",
            f"module_ops.batch_norm({{a}}, {_row('b', 0)}, {_row('b', 1)}, "
            f"{_engine_const(_BN_MEAN)}, {_engine_const(_BN_VAR)}, 1e-5)",
            f"{F}.batch_norm({{a}}, torch.tensor({_BN_MEAN}, dtype=torch.{{dtype}}), "
            f"torch.tensor({_BN_VAR}, dtype=torch.{{dtype}}), {{b}}[0], {{b}}[1], False, 0.1, "
            "1e-5)",
            (Input("a"), Input("b")),
            menu(("2x3x4", [(2, 3, 4), (2, 3)]), ("2x3", [(2, 3), (2, 3)])),
        ),
        Check(
            "attention",
            "module_ops.attention({a}, {b}, {c})",
            f"{F}.scaled_dot_product_attention({{a}}, {{b}}, {{c}})",
            _QKV_INPUTS,
            _ATTENTION_SHAPES,
        ),
        Check(
            "attention[mask]",
            "module_ops.attention({a}, {b}, {c}, {m})",
            f"{F}.scaled_dot_product_attention({{a}}, {{b}}, {{c}}, attn_mask=~{{m}})",
            (*_QKV_INPUTS, Input("m", BOOL)),
            menu(("b2-h2-3x5", [*_QKV, (2, 2, 3, 5)])),
            diverges=(_MASKED,),
        ),
        Check(
            "attention[causal]",
            "module_ops.attention({a}, {b}, {c}, None, None, "
            "module_ops.AttentionModuleOptions(is_causal=True))",
            f"{F}.scaled_dot_product_attention({{a}}, {{b}}, {{c}}, is_causal=True)",
            _QKV_INPUTS,
            menu(("b2-h2-4x4", [(2, 2, 4, 3), (2, 2, 4, 3), (2, 2, 4, 2)])),
            diverges=(_CAUSAL_FILL,),
        ),
        Check(
            "attention[softcap]",
            "module_ops.attention({a}, {b}, {c}, None, None, "
            "module_ops.AttentionModuleOptions(scale=0.5, softcap=2.0))",
            "torch.softmax(torch.tanh({a} @ {b}.transpose(-2, -1) * 0.5 / 2.0) * 2.0, -1) @ {c}",
            _QKV_INPUTS,
            menu(("b2-h2-3x5", _QKV)),
        ),
        Check(
            "ctc_loss",
            _ctc_engine(),
            _ctc_torch(),
            (Input("a"),),
            menu(("t6-n2-c4", [(6, 2, 4)])),
        ),
        _grid_sample("grid_sample_2d", "Zeros", False),
        _grid_sample("grid_sample_2d[border-aligned]", "Border", True),
        _grid_sample("grid_sample_2d[reflection]", "Reflection", False),
    )
)
