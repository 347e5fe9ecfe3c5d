"""The gradient of a 2-D right operand under batch dims, summed one product at a time
(`linalg._summed_products`), against the batched product it replaces: the same bits.

The reference is the route the engine took before: `np.matmul` of the transposed left operand
with the gradient, then `unbroadcast` back to the operand's shape. Both are float32 and float64
BLAS results; a layout or call split that changed OpenBLAS's accumulation order would show here
as different bytes (folding the batch into one gemm does, measured: float32 rows differ).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import (
    Device,
    Tensor,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    module_ops,
)
from harness.engine.module import Param
from harness.engine.module.core import params_of
from harness.engine.ops import linalg
from harness.engine.ops.arrays import unbroadcast

AD = Device.flex().autodiff()

# (left operand, right operand) shapes; the gradient is `[*batch, m, n]`.
SHAPES = {
    "transformer d512": ((16, 32, 512), (512, 512)),
    "wide out": ((16, 32, 256), (256, 1024)),
    "4-D batch": ((3, 4, 8, 256), (256, 300)),
    "k 1": ((5, 7, 1), (1, 70000)),
    "n 1": ((5, 7, 70000), (70000, 1)),
    "m 1": ((6, 1, 300), (300, 300)),
    "one item": ((1, 9, 260), (260, 260)),
}


def _batched(a, b, g):
    return unbroadcast(np.matmul(a.swapaxes(-1, -2), g), b.shape)


def _operands(left, right, dtype, layout, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(left).astype(dtype)
    b = rng.standard_normal(right).astype(dtype)
    g = rng.standard_normal((*left[:-1], right[-1])).astype(dtype)
    if layout == "transposed":  # both operands' last two dims read through swapped strides
        a = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
        g = np.ascontiguousarray(g.swapaxes(-1, -2)).swapaxes(-1, -2)
    elif layout == "strided":  # every other row of a larger array: not contiguous at all
        a = np.repeat(a, 2, axis=-2)[..., ::2, :]
        g = np.repeat(g, 2, axis=-2)[..., ::2, :]
    return a, b, g


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(SHAPES))
def test_summed_products_are_the_batched_products_bits(case, dtype, layout):
    a, b, g = _operands(*SHAPES[case], dtype, layout)
    assert linalg._sum_per_item(a, b, g)
    _, gb = linalg._product_grads(a, b, g, False, True)
    reference = _batched(a, b, g)
    assert gb.dtype == reference.dtype and gb.shape == reference.shape
    assert gb.tobytes() == reference.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_operands_summed_one_by_one_keep_the_bits_too(monkeypatch, dtype):
    # Below the size threshold the engine keeps the batched product; with the threshold lowered,
    # the per-item loop agrees on small shapes, and on inputs holding infinities and NaN.
    monkeypatch.setattr(linalg, "_SUMMED_PRODUCT_SIZE", 1)
    for seed, (left, right) in enumerate([((2, 3, 4), (4, 5)), ((4, 1, 2, 3), (3, 1))]):
        a, b, g = _operands(left, right, dtype, "contiguous", seed)
        a.flat[1], g.flat[2] = np.inf, np.nan
        _, gb = linalg._product_grads(a, b, g, False, True)
        assert gb.tobytes() == _batched(a, b, g).tobytes()


def test_integers_and_empty_batches_keep_the_batched_product():
    a, b, g = (np.ones(s, np.int32) for s in ((2, 3, 300), (300, 300), (2, 3, 300)))
    assert not linalg._sum_per_item(a, b, g)  # unbroadcast widens the int32 sum to int64
    a, b, g = _operands((0, 3, 300), (300, 300), np.float32, "contiguous")
    assert not linalg._sum_per_item(a, b, g)
    assert linalg._product_grads(a, b, g, False, True)[1].tobytes() == bytes(300 * 300 * 4)


def test_linear_backward_takes_the_per_item_sum_with_the_same_bits():
    a, b, g = _operands((16, 8, 256), (256, 256), np.float32, "contiguous")
    x, w = Tensor.from_numpy(a, AD), Tensor.from_numpy(b, AD).require_grad()
    bias = Tensor.from_numpy(np.zeros(256, np.float32), AD)
    out = module_ops.linear(x, w, bias)
    grads = (out * Tensor.from_numpy(g, AD)).sum().backward()
    assert w.grad(grads).numpy().tobytes() == _batched(a, b, g).tobytes()


def _encoder(dtype):
    model = TransformerEncoderConfig(16, 32, 4, 2, dropout=0.0).init(AD)
    return model.map(lambda p: Param(p.id, _leaf(p.val().numpy(), dtype)))


def _encoder_grads(model, dtype) -> list[bytes]:
    """Every parameter gradient of a 2-layer encoder (batch 4, sequence 6, d_model 16) under a
    loss that weighs each output differently, as raw bytes."""
    rng = np.random.default_rng(3)
    out = model(TransformerEncoderInput.new(_leaf(rng.standard_normal((4, 6, 16)), dtype)))
    weights = Tensor.from_numpy(rng.standard_normal(out.shape).astype(dtype), AD)
    grads = (out * weights).sum().backward()
    return [p.val().grad(grads).numpy().tobytes() for p in params_of(model)]


def _leaf(array, dtype):
    return Tensor.from_numpy(array.astype(dtype), AD).require_grad()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_encoders_gradients_are_the_same_bits_summed_per_item(monkeypatch, dtype):
    # Every weight of every Linear (rank-3 inputs) through the per-item sum, against the
    # batched product: the whole backward pass, attention and layer norm included.
    model = _encoder(dtype)
    reference = _encoder_grads(model, dtype)
    monkeypatch.setattr(linalg, "_SUMMED_PRODUCT_SIZE", 1)
    calls = []
    summed = linalg._summed_products
    monkeypatch.setattr(linalg, "_summed_products", lambda a, g: calls.append(1) or summed(a, g))
    assert _encoder_grads(model, dtype) == reference
    assert len(calls) == 12  # q, k, v, out, two feed-forward Linears, in each of 2 layers
