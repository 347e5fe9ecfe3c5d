"""Convolution primitives over harness.engine.kernels.conv (and kernels.conv_nd for 3-D and the
1-D / 3-D transposed convs), each forward beside its rule and its op-matrix facts: `conv1d`,
`conv2d`, `conv3d`, `conv_transpose1d`, `conv_transpose2d`, `conv_transpose3d`.

The tensor inputs are `(x, weight)` or `(x, weight, bias)` (a variadic input, as `cat`'s): a
rule returns one gradient per input and skips untracked ones. burn's autodiff (crates/
burn-autodiff/src/ops/module.rs, commit 2c06be351006851d42fdb6df16b976f4a82d9747) registers
each convolution as one node with x / weight / bias parents, as here. The Tensor-level
functions (burn's `burn::tensor::module::conv2d`...) are harness.engine.module_ops; the
kernels' docstring lists the differences from PyTorch (`padding_out` without PyTorch's bound,
argument order, error texts), none of which the matrix cells below reach: their values agree
to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import kernels
from .base import Array, Grad, Tracked, differentiable
from .facts import NONFINITE_EITHER, Check, Diverges, Input, Rounding, menu

_XWB = (Input("a"), Input("b"), Input("c"))  # x, weight, bias


# The engine sums by im2col and one gemm, torch in its own kernel's order (oneDNN's, which
# differs between its AVX-512, AVX2, AVX and SSE4.1 kernels): float32 results of n products
# differ by up to the recursive-summation bound (n - 1) * 2^-24 * sum|terms|, about 1e-5
# relative for the ~80 terms of these shapes, and the default 1e-6 is one ULP at values ~10.
_SUMS = Rounding(
    rtol=1e-5,
    atol=1e-5,
    reason="float32 sums of up to ~80 products in another order (im2col + one gemm vs "
    "torch's kernel): the summation bound (n - 1) * 2^-24 * sum|terms|",
)
# Sums with infinities of both signs: which of inf and NaN comes out depends on the order
# (torch's float32 kernel gives inf or -inf where its float64 kernel and the engine give NaN).
_INFINITIES = Diverges(
    "float32/*/specials/forward",
    "sums of infinities of both signs: inf or NaN depends on the summation order (torch's "
    "float32 and float64 kernels disagree; the engine gives float64's NaN); oneDNN's SSE4.1 "
    "kernel gives NaN as well",
    NONFINITE_EITHER,
    torch_kernel="onednn-avx",
)


@dataclass(slots=True)
class SavedConv:
    x: Array
    weight: Array
    columns: Array | None  # im2col columns of x, kept for the weight gradient
    options: dict
    has_bias: bool


def _split(op: str, inputs: tuple[Array, ...]):
    if len(inputs) not in (2, 3):
        raise TypeError(f"{op}: expected (x, weight[, bias]), got {len(inputs)} tensors")
    return inputs[0], inputs[1], inputs[2] if len(inputs) == 3 else None


def _grads(s: SavedConv, r) -> tuple[Grad, ...]:
    return (r.x, r.weight, r.bias) if s.has_bias else (r.x, r.weight)


def _needs(s: SavedConv, tracked: Tracked) -> dict:
    return {
        "need_x": tracked[0] is not None,
        "need_weight": tracked[1] is not None,
        "need_bias": s.has_bias and tracked[2] is not None,
    }


def _given(s: SavedConv) -> dict:
    """The kept columns, taken out of the record and handed to the kernel, which overwrites
    them with the input gradient's columns once the weight gradient has read them (LeNet's
    step at batch 256: no second 15 MB buffer for its second conv), then recycles them for
    the next forward of that size (harness.engine.kernels._columns). Only this record holds
    them, and it is released after its step (harness.engine.autodiff): nothing reads them
    again, and a rule run twice on one record would only re-gather them."""
    columns, s.columns = s.columns, None
    return {"columns": columns, "give_columns": columns is not None}


def conv1d(*inputs: Array, stride, padding, dilation, groups, keep_columns=True):
    """burn's `conv1d(x, weight, bias, ConvOptions)`: x `[batch, in, length]`, weight `[out,
    in / groups, kernel]`; `keep_columns` keeps the im2col columns for the weight gradient
    (False when the weight is untracked)."""
    x, w, b = _split("conv1d", inputs)
    opts = {"stride": stride[0], "padding": padding[0], "dilation": dilation[0], "groups": groups}
    r = kernels.conv1d_forward(x, w, b, keep_columns=keep_columns, **opts)
    return r.output, SavedConv(x, w, r.columns, opts, b is not None)


def conv1d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.conv1d_backward(g, s.x, s.weight, **s.options, **_needs(s, tracked), **_given(s))
    return _grads(s, r)


def _conv_check(name: str, engine: str, torch: str, shapes, **kw) -> Check:
    return Check(name, engine, torch, _XWB, shapes, rounding=_SUMS, **kw)


CONV1D = differentiable(
    "conv1d",
    conv1d,
    conv1d_backward,
    checks=(
        _conv_check(
            "conv1d",
            "module_ops.conv1d({a}, {b}, {c}, module_ops.ConvOptions((2,), (1,), (1,), 2))",
            "torch.nn.functional.conv1d({a}, {b}, {c}, stride=2, padding=1, groups=2)",
            menu(
                ("b2-c4-l7-g2", [(2, 4, 7), (6, 2, 3), (6,)]),
                ("empty", [(0, 4, 7), (6, 2, 3), (6,)]),
            ),
        ),
        _conv_check(
            "conv1d[dilation]",
            "module_ops.conv1d({a}, {b}, {c}, module_ops.ConvOptions((1,), (2,), (2,), 1))",
            "torch.nn.functional.conv1d({a}, {b}, {c}, padding=2, dilation=2)",
            menu(("b2-c3-l6", [(2, 3, 6), (4, 3, 3), (4,)])),
            diverges=(_INFINITIES,),
        ),
    ),
)


def conv2d(*inputs: Array, stride, padding, dilation, groups, keep_columns=True):
    """burn's `conv2d(x, weight, bias, ConvOptions)`: x `[batch, in, h, w]`, weight `[out,
    in / groups, kh, kw]` (see `conv1d` for `keep_columns`)."""
    x, w, b = _split("conv2d", inputs)
    opts = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    r = kernels.conv2d_forward(x, w, b, keep_columns=keep_columns, **opts)
    return r.output, SavedConv(x, w, r.columns, opts, b is not None)


def conv2d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.conv2d_backward(g, s.x, s.weight, **s.options, **_needs(s, tracked), **_given(s))
    return _grads(s, r)


CONV2D = differentiable(
    "conv2d",
    conv2d,
    conv2d_backward,
    checks=(
        _conv_check(
            "conv2d",
            "module_ops.conv2d({a}, {b}, {c}, module_ops.ConvOptions((1, 1), (1, 1), (1, 1), 1))",
            "torch.nn.functional.conv2d({a}, {b}, {c}, padding=1)",
            menu(
                ("b2-c3-5x5", [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]),
                ("empty", [(0, 3, 5, 5), (4, 3, 3, 3), (4,)]),
            ),
            diverges=(_INFINITIES,),
        ),
        _conv_check(
            "conv2d[strided]",
            "module_ops.conv2d({a}, {b}, {c}, module_ops.ConvOptions((2, 1), (1, 0), (2, 1), 2))",
            "torch.nn.functional.conv2d({a}, {b}, {c}, (2, 1), (1, 0), (2, 1), 2)",
            menu(("b2-c4-6x5-g2", [(2, 4, 6, 5), (6, 2, 2, 3), (6,)])),
        ),
    ),
)


def conv_transpose2d(*inputs: Array, stride, padding, padding_out, dilation, groups):
    """burn's `conv_transpose2d(x, weight, bias, ConvTransposeOptions)`: x `[batch, in, h, w]`,
    weight `[in, out / groups, kh, kw]` (no kept columns: the backward recomputes what it
    needs)."""
    x, w, b = _split("conv_transpose2d", inputs)
    opts = {
        "stride": stride,
        "padding": padding,
        "padding_out": padding_out,
        "dilation": dilation,
        "groups": groups,
    }
    out = kernels.conv_transpose2d(x, w, b, **opts)
    return out, SavedConv(x, w, None, opts, b is not None)


def conv_transpose2d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.conv_transpose2d_backward(g, s.x, s.weight, **s.options, **_needs(s, tracked))
    return _grads(s, r)


CONV_TRANSPOSE2D = differentiable(
    "conv_transpose2d",
    conv_transpose2d,
    conv_transpose2d_backward,
    checks=(
        _conv_check(
            "conv_transpose2d",
            "module_ops.conv_transpose2d({a}, {b}, {c}, "
            "module_ops.ConvTransposeOptions((2, 2), (1, 1), (1, 0), (1, 1), 2))",
            # PyTorch's argument order: output_padding, groups, dilation.
            "torch.nn.functional.conv_transpose2d({a}, {b}, {c}, (2, 2), (1, 1), (1, 0), 2)",
            menu(
                ("b2-c4-3x4-g2", [(2, 4, 3, 4), (4, 3, 3, 2), (6,)]),
                ("empty", [(0, 4, 3, 4), (4, 3, 3, 2), (6,)]),
            ),
        ),
    ),
)


# ---- the N-d kernels (harness.engine.kernels.conv_nd): conv3d and the other transposed convs


def conv3d(*inputs: Array, stride, padding, dilation, groups):
    """burn's `conv3d(x, weight, bias, ConvOptions)`: x `[batch, in, d, h, w]`, weight `[out,
    in / groups, kd, kh, kw]` (burn-autodiff's own node, as conv2d's)."""
    x, w, b = _split("conv3d", inputs)
    opts = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    out = kernels.conv_nd(x, w, b, **opts)
    return out, SavedConv(x, w, None, opts, b is not None)


def conv3d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    return _grads(s, kernels.conv_nd_backward(g, s.x, s.weight, **s.options, **_needs(s, tracked)))


CONV3D = differentiable(
    "conv3d",
    conv3d,
    conv3d_backward,
    checks=(
        _conv_check(
            "conv3d",
            "module_ops.conv3d({a}, {b}, {c}, "
            "module_ops.ConvOptions((2, 1, 1), (1, 0, 1), (1, 2, 1), 2))",
            "torch.nn.functional.conv3d({a}, {b}, {c}, (2, 1, 1), (1, 0, 1), (1, 2, 1), 2)",
            menu(
                ("b2-c4-4x5x3-g2", [(2, 4, 4, 5, 3), (4, 2, 2, 2, 2), (4,)]),
                ("empty", [(0, 4, 4, 5, 3), (4, 2, 2, 2, 2), (4,)]),
            ),
        ),
    ),
)


def _transpose_options(stride, padding, padding_out, dilation, groups) -> dict:
    return {
        "stride": stride,
        "padding": padding,
        "padding_out": padding_out,
        "dilation": dilation,
        "groups": groups,
    }


def conv_transpose1d(*inputs: Array, stride, padding, padding_out, dilation, groups):
    """burn's `conv_transpose1d(x, weight, bias, ConvTransposeOptions)`: x `[batch, in, l]`,
    weight `[in, out / groups, k]` (burn-autodiff's own node)."""
    x, w, b = _split("conv_transpose1d", inputs)
    opts = _transpose_options(stride, padding, padding_out, dilation, groups)
    out = kernels.conv_transpose_nd(x, w, b, **opts, op="conv_transpose1d", nd=1)
    return out, SavedConv(x, w, None, opts, b is not None)


def conv_transpose1d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.conv_transpose_nd_backward(
        g, s.x, s.weight, **s.options, **_needs(s, tracked), op="conv_transpose1d", nd=1
    )
    return _grads(s, r)


def conv_transpose3d(*inputs: Array, stride, padding, padding_out, dilation, groups):
    """burn's `conv_transpose3d(x, weight, bias, ConvTransposeOptions)`: x `[batch, in, d, h,
    w]`, weight `[in, out / groups, kd, kh, kw]` (burn-autodiff's own node)."""
    x, w, b = _split("conv_transpose3d", inputs)
    opts = _transpose_options(stride, padding, padding_out, dilation, groups)
    out = kernels.conv_transpose_nd(x, w, b, **opts, op="conv_transpose3d", nd=3)
    return out, SavedConv(x, w, None, opts, b is not None)


def conv_transpose3d_backward(s: SavedConv, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.conv_transpose_nd_backward(
        g, s.x, s.weight, **s.options, **_needs(s, tracked), op="conv_transpose3d", nd=3
    )
    return _grads(s, r)


CONV_TRANSPOSE1D = differentiable(
    "conv_transpose1d",
    conv_transpose1d,
    conv_transpose1d_backward,
    checks=(
        _conv_check(
            "conv_transpose1d",
            "module_ops.conv_transpose1d({a}, {b}, {c}, "
            "module_ops.ConvTransposeOptions((2,), (1,), (1,), (2,), 2))",
            # PyTorch's argument order: output_padding, groups, dilation.
            "torch.nn.functional.conv_transpose1d({a}, {b}, {c}, 2, 1, 1, 2, 2)",
            menu(
                ("b2-c4-l6-g2", [(2, 4, 6), (4, 3, 3), (6,)]),
                ("empty", [(0, 4, 6), (4, 3, 3), (6,)]),
            ),
        ),
    ),
)

CONV_TRANSPOSE3D = differentiable(
    "conv_transpose3d",
    conv_transpose3d,
    conv_transpose3d_backward,
    checks=(
        _conv_check(
            "conv_transpose3d",
            "module_ops.conv_transpose3d({a}, {b}, {c}, "
            "module_ops.ConvTransposeOptions((2, 1, 2), (1, 0, 1), (1, 0, 0), (1, 2, 1), 2))",
            "torch.nn.functional.conv_transpose3d("
            "{a}, {b}, {c}, (2, 1, 2), (1, 0, 1), (1, 0, 0), 2, (1, 2, 1))",
            menu(
                ("b2-c4-3x3x2-g2", [(2, 4, 3, 3, 2), (4, 3, 2, 2, 2), (6,)]),
                ("empty", [(0, 4, 3, 3, 2), (4, 3, 2, 2, 2), (6,)]),
            ),
        ),
    ),
)


# ---- deform_conv2d (harness.engine.kernels.deform_conv) ------------------------------------


@dataclass(slots=True)
class SavedDeform:
    inputs: tuple[Array, ...]  # x, offset, weight and, when given, mask and bias
    options: dict
    has_mask: bool
    has_bias: bool


def _deform_args(inputs: tuple[Array, ...], has_mask: bool, has_bias: bool):
    if len(inputs) != 3 + has_mask + has_bias:
        raise TypeError(
            f"deform_conv2d: expected (x, offset, weight[, mask][, bias]), got {len(inputs)} "
            "tensors"
        )
    x, offset, weight, *rest = inputs
    mask = rest.pop(0) if has_mask else None
    bias = rest.pop(0) if has_bias else None
    return x, offset, weight, mask, bias


def deform_conv2d(
    *inputs: Array, stride, padding, dilation, weight_groups, offset_groups, has_mask, has_bias
):
    """burn's `deform_conv2d(x, offset, weight, mask, bias, DeformConvOptions)`: one node with
    x / offset / weight (/ mask / bias) parents, as burn-autodiff's four `DeformConv2D*`
    nodes. torchvision, its PyTorch counterpart, is not installed: the checks compare with
    harness.opmatrix.torch_reference.deform_conv2d (torch's grid_sample and autograd)."""
    opts = {
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "weight_groups": weight_groups,
        "offset_groups": offset_groups,
    }
    out = kernels.deform_conv2d(*_deform_args(inputs, has_mask, has_bias), **opts)
    return out, SavedDeform(inputs, opts, has_mask, has_bias)


def deform_conv2d_backward(s: SavedDeform, g: Array, tracked: Tracked) -> tuple[Grad, ...]:
    r = kernels.deform_conv2d_backward(
        g, *_deform_args(s.inputs, s.has_mask, s.has_bias), **s.options
    )
    grads = [r.x, r.offset, r.weight]
    if s.has_mask:
        grads.append(r.mask)
    if s.has_bias:
        grads.append(r.bias)
    return tuple(grad if t is not None else None for grad, t in zip(grads, tracked, strict=True))


_DEFORM_OPTIONS = "module_ops.DeformConvOptions((1, 2), (1, 0), (1, 1), 2, 2)"
_DEFORM_TORCH_OPTIONS = (
    "stride=(1, 2), padding=(1, 0), dilation=(1, 1), weight_groups=2, offset_groups=2"
)
# x [2, 4, 5, 5], weight [6, 2, 3, 2] -> [2, 6, 5, 2]: offset 2 groups * 6 taps * 2, mask 12
_DEFORM_SHAPES = [(2, 4, 5, 5), (2, 24, 5, 2), (6, 2, 3, 2)]
# The gradients sum products with infinities of both signs: flex adds them corner by corner
# per (channel, tap, position), torch's grid_sample backward and einsum in their own order,
# so one side's inf is the other's NaN there (forwards and finite cells agree).
_DEFORM_INFINITIES = Diverges(
    "*/*/specials/vjp.*",
    "gradients summing infinities of both signs: inf or NaN depends on the summation order "
    "(flex's corner-by-corner accumulation vs torch's grid_sample backward and einsum)",
    NONFINITE_EITHER,
)

DEFORM_CONV2D = differentiable(
    "deform_conv2d",
    deform_conv2d,
    deform_conv2d_backward,
    checks=(
        Check(
            "deform_conv2d",
            f"module_ops.deform_conv2d({{a}}, {{b}}, {{c}}, None, None, {_DEFORM_OPTIONS})",
            f"torch_reference.deform_conv2d({{a}}, {{b}}, {{c}}, {_DEFORM_TORCH_OPTIONS})",
            (Input("a"), Input("b"), Input("c")),
            menu(("b2-c4-5x5-g2", _DEFORM_SHAPES)),
            rounding=_SUMS,
            diverges=(_DEFORM_INFINITIES,),
        ),
        Check(
            "deform_conv2d[mask]",
            f"module_ops.deform_conv2d({{a}}, {{b}}, {{c}}, {{m}}, None, {_DEFORM_OPTIONS})",
            f"torch_reference.deform_conv2d({{a}}, {{b}}, {{c}}, {{m}}, {_DEFORM_TORCH_OPTIONS})",
            (Input("a"), Input("b"), Input("c"), Input("m")),
            menu(("b2-c4-5x5-g2", [*_DEFORM_SHAPES, (2, 12, 5, 2)])),
            rounding=_SUMS,
            diverges=(_DEFORM_INFINITIES,),
        ),
    ),
)


# ---- unfold4d / fold4d: burn-backend's default composites (harness.engine.module_ops) ------

# unfold4d's conv path and fold4d sum one-hot products: 0 * inf is NaN where torch copies.
_ONE_HOT_SPECIALS = Diverges(
    "*/*/specials/forward",
    "burn builds it as a conv with a one-hot weight (burn-backend ops/modules/unfold.rs): an "
    "inf or NaN in a window meets the weight's zeros, 0 * inf = NaN, where torch's unfold / "
    "fold copies (harness.engine.module_ops.unfold4d)",
    NONFINITE_EITHER,
)

COMPOSITE_CHECKS: tuple[Check, ...] = tuple(
    c.of(c.method)
    for c in (
        Check(
            "unfold4d",
            "module_ops.unfold4d({a}, (2, 3), module_ops.UnfoldOptions((1, 2), (0, 0), (1, 1)))",
            "torch.nn.functional.unfold({a}, (2, 3), stride=(1, 2))",
            (Input("a"),),
            menu(("b2-c3-4x7", [(2, 3, 4, 7)]), ("empty", [(0, 3, 4, 7)])),
        ),
        Check(
            "unfold4d[padded]",
            "module_ops.unfold4d({a}, (2, 2), module_ops.UnfoldOptions((2, 1), (1, 0), (1, 2)))",
            "torch.nn.functional.unfold({a}, (2, 2), (1, 2), (1, 0), (2, 1))",
            (Input("a"),),
            menu(("b2-c3-5x6", [(2, 3, 5, 6)])),
            diverges=(_ONE_HOT_SPECIALS,),
        ),
        Check(
            "fold4d",
            "module_ops.fold4d({a}, (5, 6), (2, 2), "
            "module_ops.UnfoldOptions((2, 1), (1, 0), (1, 2)))",
            "torch.nn.functional.fold({a}, (5, 6), (2, 2), (1, 2), (1, 0), (2, 1))",
            (Input("a"),),
            menu(("b2-c12-12", [(2, 12, 12)]), ("empty", [(0, 12, 12)])),
            diverges=(_ONE_HOT_SPECIALS,),
        ),
    )
)
