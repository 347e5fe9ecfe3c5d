"""Tensor construction, data access, dtype rules and bad input (messages asserted)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from harness.engine import Device, DTypeMismatchError, ShapeError, Tensor

PLAIN = Device.flex()
AD = Device.flex().autodiff()


def test_devices_are_singletons():
    assert Device.flex() is Device.flex()
    assert Device.flex().autodiff() is Device.flex().autodiff()
    assert repr(AD) == "Device.flex().autodiff()"


def test_from_floats_defaults_to_float32_and_supports_float64():
    t = Tensor.from_floats([[1.0, 2.0]], AD)
    assert str(t.dtype) == "float32"
    assert t.shape == (1, 2)
    assert t.tolist() == [[1.0, 2.0]]
    assert str(Tensor.from_floats([1.0], AD, dtype="float64").dtype) == "float64"
    assert Tensor.from_floats([1.0], AD, dtype=np.float64).dtype == np.float64


def test_from_floats_rejects_non_float_dtypes():
    expected = "float tensors are float32, float64, float16 or bfloat16, got int64"
    with pytest.raises(TypeError, match=expected):
        Tensor.from_floats([1], AD, dtype="int64")


def test_from_ints_gives_int64():
    t = Tensor.from_ints([[0], [2]], AD)
    assert str(t.dtype) == "int64"
    assert t.tolist() == [[0], [2]]
    with pytest.raises(TypeError, match="from_ints: expected integers, got float64"):
        Tensor.from_ints([1.5], AD)


@pytest.mark.parametrize(
    ("dtype", "kept"),
    [
        ("float32", "float32"),
        ("float64", "float64"),
        ("int64", "int64"),
        ("int32", "int64"),
        ("bool", "bool"),
        (">f4", "float32"),
    ],
)
def test_from_numpy_keeps_or_normalizes_the_dtype(dtype, kept):
    t = Tensor.from_numpy(np.zeros((2, 3), dtype=dtype), AD)
    assert str(t.dtype) == kept
    assert t.shape == (2, 3)


def test_from_numpy_keeps_half_dtypes_and_rejects_complex():
    half = Tensor.from_numpy(np.array([1.5, -2.0], dtype=np.float16), AD)
    assert half.dtype == np.float16 and half.tolist() == [1.5, -2.0]
    with pytest.raises(TypeError, match="from_numpy: unsupported dtype complex64"):
        Tensor.from_numpy(np.zeros(2, dtype=np.complex64), AD)


def test_from_numpy_copies_and_numpy_is_read_only():
    source = np.arange(3, dtype=np.float32)
    t = Tensor.from_numpy(source, AD)
    source[0] = 9.0
    assert t.tolist() == [0.0, 1.0, 2.0]
    out = t.numpy()
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[1] = 5.0


def test_zero_dim_tensors_work_in_elementwise_ops():
    t = Tensor.from_numpy(np.array(2.0, dtype=np.float32), AD).require_grad()
    y = t * t + 1.0
    assert y.shape == ()
    assert y.tolist() == 5.0
    assert t.grad(y.backward()).tolist() == 4.0


def test_constructors_and_like_helpers():
    assert Tensor.zeros([2], AD).tolist() == [0.0, 0.0]
    assert Tensor.ones([2], AD, dtype="float64").dtype == np.float64
    assert Tensor.full([2], 1.5, AD).tolist() == [1.5, 1.5]
    t = Tensor.from_floats([1.0, 2.0], AD, dtype="float64")
    assert t.zeros_like().tolist() == [0.0, 0.0]
    assert t.ones_like().dtype == np.float64
    assert t.full_like(3.0).tolist() == [3.0, 3.0]
    assert Tensor.from_floats([4.0], AD).into_scalar() == 4.0


def test_inner_and_from_inner():
    x = Tensor.from_floats([1.0], AD).require_grad()
    inner = x.inner()
    assert inner.device is PLAIN
    back = Tensor.from_inner(inner)
    assert back.is_autodiff()
    assert not back.is_require_grad()


def test_python_scalar_is_cast_to_the_tensor_dtype_first():
    t = Tensor.from_floats([1.0], AD)
    out = t + 0.1
    assert out.dtype == np.float32
    assert out.numpy()[0] == np.float32(1.0) + np.float32(0.1)
    d = Tensor.from_floats([1.0], AD, dtype="float64")
    assert (d + 0.1).numpy()[0] == 1.0 + 0.1
    assert (2.0 - t).dtype == np.float32
    assert (np.float64(2.0) * t).dtype == np.float32


def test_mixing_float32_and_float64_raises():
    a = Tensor.from_floats([1.0], AD)
    b = Tensor.from_floats([1.0], AD, dtype="float64")
    with pytest.raises(DTypeMismatchError) as err:
        a + b
    assert isinstance(err.value, TypeError)
    assert str(err.value) == (
        "add: dtype mismatch: float32 and float64 (no implicit promotion; cast one operand "
        "with .cast(...))"
    )
    with pytest.raises(DTypeMismatchError, match=r"^matmul: dtype mismatch: float64 and float32"):
        Tensor.from_floats([[1.0]], AD, dtype="float64").matmul(Tensor.from_floats([[1.0]], AD))
    with pytest.raises(DTypeMismatchError, match=r"^cat: dtype mismatch: float32 and float64"):
        Tensor.cat([a, b], 0)


def test_cast_converts_float_dtypes_off_the_graph():
    x = Tensor.from_floats([1.5], AD).require_grad()
    y = x.cast("float64")
    assert y.dtype == np.float64
    assert y.tolist() == [1.5]
    assert not y.is_require_grad()


def test_broadcast_mismatch_names_the_op_and_both_shapes():
    a = Tensor.from_floats([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], AD)
    b = Tensor.from_floats([1.0, 2.0, 3.0], AD)
    for op, call in (("add", a.add), ("sub", a.sub), ("mul", a.mul), ("div", a.div)):
        with pytest.raises(ShapeError) as err:
            call(b)
        assert isinstance(err.value, ValueError)
        assert str(err.value) == f"{op}: shapes [3, 2] and [3] cannot be broadcast together"


def test_matmul_mismatch_names_both_shapes():
    a = Tensor.zeros([2, 3], AD)
    b = Tensor.zeros([4, 5], AD)
    with pytest.raises(ShapeError) as err:
        a.matmul(b)
    assert str(err.value) == (
        "matmul: shapes [2, 3] and [4, 5] are incompatible "
        "(need rank >= 2 and lhs.shape[-1] == rhs.shape[-2])"
    )
    with pytest.raises(ShapeError, match=r"^matmul: shapes \[2, 3, 4\] and \[3, 4, 5\] cannot"):
        Tensor.zeros([2, 3, 4], AD).matmul(Tensor.zeros([3, 4, 5], AD))


def test_cat_mismatch_names_all_shapes():
    with pytest.raises(ShapeError) as err:
        Tensor.cat([Tensor.zeros([2, 2], AD), Tensor.zeros([3, 3], AD)], 0)
    assert str(err.value) == "cat: shapes [2, 2], [3, 3] differ outside dim 0"


def test_reshape_and_squeeze_errors_name_the_shapes():
    t = Tensor.zeros([3, 2], AD)
    with pytest.raises(ShapeError, match=r"^reshape: cannot reshape \[3, 2\] into \[4\]$"):
        t.reshape([4])
    with pytest.raises(ShapeError, match=r"^squeeze_dim: dim 0 of shape \[3, 2\] is not 1$"):
        t.squeeze(0)
    with pytest.raises(ShapeError, match=r"^sum_dim: dim 2 out of range for a tensor of rank 2$"):
        t.sum_dim(2)


def test_gather_requires_int64_indices_of_the_same_rank():
    t = Tensor.zeros([3, 2], AD)
    with pytest.raises(TypeError, match="gather: indices must be int64, got float32"):
        t.gather(1, Tensor.zeros([3, 1], AD))
    with pytest.raises(ShapeError, match=r"^gather: indices shape \[3\] and tensor shape"):
        t.gather(1, Tensor.from_ints([0, 1, 0], AD))


def test_comparisons_and_masks():
    t = Tensor.from_floats([1.0, 2.0, 3.0], AD)
    assert t.equal_elem(2.0).tolist() == [False, True, False]
    assert t.greater_elem(1.5).tolist() == [False, True, True]
    assert t.lower_equal_elem(2.0).tolist() == [True, True, False]
    assert t.lower_elem(2.0).bool_not().tolist() == [False, True, True]
    assert t.greater(Tensor.from_floats([2.0, 2.0, 2.0], AD)).tolist() == [False, False, True]
    assert t.argmax(0).tolist() == [2]
    assert t.equal_elem(2.0).float().tolist() == [0.0, 1.0, 0.0]
    assert t.mask_fill(t.greater_elem(1.5), -1.0).tolist() == [1.0, -1.0, -1.0]


def test_max_returns_shape_one():
    t = Tensor.from_floats([[1.0, 4.0], [3.0, 2.0]], AD)
    assert t.max().tolist() == [4.0]


def test_only_float_tensors_can_require_grad():
    with pytest.raises(TypeError) as err:
        Tensor.from_ints([1], AD).require_grad()
    assert str(err.value) == "require_grad: only float tensors can be tracked, got int64"


def test_integer_and_bool_tensors_stay_untracked_in_ops():
    x = Tensor.from_floats([1.0, 2.0], AD).require_grad()
    idx = x.argmax(0)
    mask = x.greater_elem(1.0)
    assert not idx.is_require_grad()
    assert mask._node.requirement == "none"


def test_untracked_methods_return_a_new_tensor_over_a_new_array():
    # Also for an input already of the output's dtype (int() of an int64 tensor): nothing may
    # alias the input's buffer.
    floats = Tensor.from_floats([[1.0, 2.0]], AD).require_grad()
    ints = Tensor.from_ints([[1, 2]], AD)
    mask = floats.greater_elem(1.0)
    calls = [
        (floats, lambda t: t.argmax(1)),
        (ints, lambda t: t.argmin(1)),
        (mask, lambda t: t.bool_not()),
        (ints, lambda t: t.int()),
        (floats, lambda t: t.int()),
        (ints, lambda t: t.float()),
        (floats, lambda t: t.zeros_like()),
        (ints, lambda t: t.ones_like()),
        (floats, lambda t: t.full_like(2.0)),
    ]
    for t, call in calls:
        out = call(t)
        assert out is not t
        assert not np.shares_memory(np.asarray(out), np.asarray(t))
        assert not out.is_require_grad()


def test_repr_names_shape_dtype_device_and_node():
    x = Tensor.from_floats([1.0, 2.0], AD).require_grad()
    text = repr(x)
    assert text.startswith("Tensor([1., 2.], shape=[2], dtype=float32, flex().autodiff(), node=")
    assert text.endswith(", grad)")
    plain = Tensor.from_floats([1.0], PLAIN)
    assert repr(plain) == "Tensor([1.], shape=[1], dtype=float32, flex())"


def test_the_engine_never_imports_torch():
    code = "import sys, harness.engine; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("bad", [[(0, 4)], [3], [(2, 1)], [None, (-3, 1)]])
def test_slice_out_of_bounds_or_empty_raises(bad):
    t = Tensor.zeros([3, 2], AD)
    with pytest.raises(ShapeError, match=r"^slice: range .* of shape \[3, 2\]$"):
        t.slice(bad)


def test_slice_too_many_ranges_raises():
    with pytest.raises(ShapeError, match=r"^slice: 3 ranges for shape \[3, 2\]$"):
        Tensor.zeros([3, 2], AD).slice([None, None, None])


def test_non_scalar_operand_raises():
    t = Tensor.zeros([2], AD)
    with pytest.raises(TypeError) as err:
        t.mul_scalar([1.0, 2.0])
    assert str(err.value) == "expected a scalar or a Tensor operand, got list"


def test_numpy_asarray_gives_the_values_read_only():
    t = Tensor.from_floats([1.0, 2.0], AD)
    arr = np.asarray(t)
    assert arr.tolist() == [1.0, 2.0]
    assert not arr.flags.writeable
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize(
    ("start", "end", "shape"),
    [(0, 3, [120]), (1, 2, [2, 12, 5]), (0, 2, [24, 5]), (1, 3, [2, 60]), (-3, -1, [2, 60])],
)
def test_flatten_shapes_are_burns(start, end, shape):
    """burn's vectors: crates/burn-backend-tests/tests/tensor/float/ops/flatten.rs
    (`should_flatten_to_1d`, `_middle`, `_begin`, `_end`, `_end_negative_indices`)."""
    assert Tensor.ones([2, 3, 4, 5], AD).flatten(start, end).shape == tuple(shape)


@pytest.mark.parametrize(
    ("shape", "start", "end"),
    [
        ((2, 3, 4, 5), 0, -1),
        ((2, 3, 4, 5), 2, 2),
        ((2, 3, 4, 5), -4, 1),
        ((2, 0, 3), 0, 1),
        ((3,), 0, 0),
        ((), 0, -1),
    ],
)
def test_flatten_is_torch_flatten(shape, start, end):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = Tensor.from_numpy(x, AD).flatten(start, end).numpy()
    want = torch.flatten(torch.from_numpy(x), start, end).numpy()
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_flatten_refuses_what_burn_refuses():
    """burn's `TensorCheck::flatten` panics for a start after the end (`should_flatten_panic`)
    and an end past the rank; torch.flatten raises for both too."""
    t = Tensor.ones([2, 3, 4, 5], AD)
    with pytest.raises(ShapeError) as err:
        t.flatten(2, 0)
    assert str(err.value) == (
        "flatten: the start dim (2) must be smaller than or equal to the end dim (0)"
    )
    with pytest.raises(ShapeError, match=r"^flatten: the start dim \(3\) .* end dim \(1\)$"):
        t.flatten(-1, 1)  # compared after wrapping, as burn's `try_dim_index` does
    with pytest.raises(RuntimeError):
        torch.flatten(torch.ones(2, 3, 4, 5), 2, 0)
    with pytest.raises(ShapeError, match=r"^flatten: dim 4 out of range for a tensor of rank 4$"):
        t.flatten(0, 4)
    with pytest.raises(IndexError):
        torch.flatten(torch.ones(2, 3, 4, 5), 0, 4)
