"""`module_ops.linear` (one graph node, as burn's `LinearWithBias`) against the two nodes it
replaces, `x.matmul(w).add(b)`: the same bits forward and backward, the same errors.

The values themselves are checked against torch by the op matrix (`linear` cells) and by
finite differences (test_autodiff_rules); here the point is that fusing changed nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, Tensor, module_ops
from harness.engine.errors import DeviceMismatchError, DTypeMismatchError, ShapeError
from harness.engine.module import Linear, Param

AD = Device.flex().autodiff()
PLAIN = Device.flex()

SHAPES = {
    "4x3@3x2": [(4, 3), (3, 2), (2,)],
    "batch": [(2, 4, 3), (3, 2), (2,)],
    "row": [(1, 3), (3, 2), (2,)],  # a dim of 1: np.matmul instead of ndarray.dot
    "column": [(4, 1), (1, 3), (3,)],
    "bias 1x2": [(4, 3), (3, 2), (1, 2)],
    "bias broadcasts out": [(4, 3), (3, 2), (2, 4, 2)],  # the product's gradient is summed
}


def _tensors(shapes, dtype, tracked):
    rng = np.random.default_rng(7)
    out = []
    for shape, track in zip(shapes, tracked, strict=True):
        t = Tensor.from_numpy(rng.standard_normal(shape).astype(dtype), AD)
        out.append(t.require_grad() if track else t)
    return out


def _bits(t):
    return None if t is None else t.numpy().tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tracked", [(True, True, True), (False, True, True), (True, False, False)])
@pytest.mark.parametrize("case", list(SHAPES))
def test_linear_node_is_bit_identical_to_matmul_then_add(case, tracked, dtype):
    x, w, b = _tensors(SHAPES[case], dtype, tracked)
    fused = module_ops.linear(x, w, b)
    pair = x.matmul(w).add(b)
    assert fused.shape == pair.shape
    assert _bits(fused) == _bits(pair)
    # A downstream op with a non-uniform gradient, so that every rule sees real values.
    weights = Tensor.from_numpy(np.linspace(-2, 3, fused.numel()).reshape(fused.shape), AD)
    g_fused = (fused * weights.cast(fused.dtype)).sum().backward()
    g_pair = (pair * weights.cast(pair.dtype)).sum().backward()
    for t in (x, w, b):
        assert _bits(t.grad(g_fused)) == _bits(t.grad(g_pair))


def test_linear_node_is_one_node_of_burns_order():
    x, w, b = _tensors(SHAPES["4x3@3x2"], np.float32, (False, True, True))
    out = module_ops.linear(x, w, b)
    node = out._node
    assert node.order == 1  # its parents are leaves: one node deep, as burn's LinearWithBias
    assert node.parents == (None, w._node, b._node)


def test_linear_layer_runs_the_linear_node():
    x, w, b = _tensors(SHAPES["4x3@3x2"], np.float32, (False, True, True))
    out = Linear(Param.from_tensor(w), Param.from_tensor(b)).forward(x)
    assert out._node.rule.__name__ == "linear_backward"
    no_bias = Linear(Param.from_tensor(w)).forward(x)
    assert no_bias._node.rule.__name__ == "matmul_backward"


def test_linear_without_bias_is_matmul():
    x, w, _ = _tensors(SHAPES["4x3@3x2"], np.float32, (True, True, True))
    assert _bits(module_ops.linear(x, w)) == _bits(x.matmul(w))


def test_linear_untracked_and_plain_results():
    x, w, b = _tensors(SHAPES["4x3@3x2"], np.float32, (False, False, False))
    untracked = module_ops.linear(x, w, b)
    assert untracked.is_autodiff() and untracked._node.requirement == "none"
    plain = [t.inner() for t in (x, w, b)]
    assert not module_ops.linear(*plain).is_autodiff()


def _message(fn):
    try:
        fn()
    except Exception as exc:  # whatever either raises: the two are compared
        return type(exc), str(exc)
    raise AssertionError("no error")


@pytest.mark.parametrize(
    "shapes, dtypes, error",
    [
        ([(4, 3), (3, 2), (2,)], (np.float32, np.float64, np.float32), DTypeMismatchError),
        ([(4, 3), (3, 2), (2,)], (np.float32, np.float32, np.float64), DTypeMismatchError),
        ([(4, 3), (2, 2), (2,)], (np.float32,) * 3, ShapeError),
        ([(4, 3), (3, 2), (3,)], (np.float32,) * 3, ShapeError),
        ([(2, 4, 3), (3, 3, 2), (2,)], (np.float32,) * 3, ShapeError),
    ],
)
def test_linear_errors_are_those_of_matmul_then_add(shapes, dtypes, error):
    x, w, b = (Tensor.from_numpy(np.ones(s, d), AD) for s, d in zip(shapes, dtypes, strict=True))
    fused = _message(lambda: module_ops.linear(x, w, b))
    assert fused[0] is error
    assert fused == _message(lambda: x.matmul(w).add(b))


def test_linear_device_mismatch_raises():
    x, w, b = _tensors(SHAPES["4x3@3x2"], np.float32, (False, True, True))
    with pytest.raises(DeviceMismatchError, match="linear: tensors on different devices"):
        module_ops.linear(x.inner(), w, b)
