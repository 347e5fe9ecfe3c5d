"""Two findings of issue 28 in modules the engine has: `Linear` on a rank-1 input (burn's
`linear` `D == 1` branch) and shape errors naming the module (Linear, LayerNorm, the
recurrent and attention modules); `BatchNorm` training on an empty batch (burn writes NaN
into the running statistics, PyTorch leaves them unchanged)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import AD, DTYPES, TOL, import_torch, leaf, rng_array, tensor

from harness.engine.errors import ShapeError
from harness.engine.module import LayerNormConfig, LinearConfig
from harness.engine.nn import (
    BatchNormConfig,
    BiGruConfig,
    BiLstmConfig,
    BiRnnConfig,
    CrossAttentionConfig,
    GruConfig,
    Initializer,
    LstmConfig,
    MhaInput,
    MultiHeadAttentionConfig,
    RnnConfig,
)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_rank1_input_matches_torch(dtype, bias):
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 5, bias=bias).to(DTYPES[dtype])
    model, _ = import_torch(ref, LinearConfig(3, 5, bias).init(AD))
    x = rng_array(1, (3,))
    cot = rng_array(2, (5,))
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t = ref(xt)
    (out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
    xe = leaf(x, dtype)
    out_e = model(xe)
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    assert out_e.shape == (5,)
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(
        model.weight.val().grad(grads).numpy(), ref.weight.grad.numpy().T, **TOL[dtype]
    )


def test_burn_linear_1d():
    """linear.rs `test_linear_1d` (commit 2c06be35): a rank-1 input gives the rank-2 result of
    a batch of one, exactly."""
    linear = LinearConfig(2, 3).init(AD)
    constant = Initializer.Constant(2.0)
    linear.weight = constant.init((2, 3), AD)
    linear.bias = constant.init((3,), AD)
    result_1d = linear(tensor(np.ones(2))).unsqueeze()
    result_2d = linear(tensor(np.ones((1, 2))))
    np.testing.assert_array_equal(result_1d.numpy(), result_2d.numpy())
    np.testing.assert_array_equal(result_2d.numpy(), [[6.0, 6.0, 6.0]])


@pytest.mark.parametrize("shape", [(4,), (2, 4), (2, 7, 4)])
def test_linear_shape_error_names_the_module(shape):
    linear = LinearConfig(3, 5).init(AD)
    expected = f"Linear: input last dim 4 != d_input 3 (input shape {list(shape)})"
    with pytest.raises(ShapeError) as error:
        linear(tensor(np.ones(shape)))
    assert str(error.value) == expected


@pytest.mark.parametrize(
    ("name", "run", "message"),
    [
        ("Lstm", lambda x: LstmConfig(3, 4, True).init(AD)(x), "[batch_size, seq_length, 3]"),
        ("Gru", lambda x: GruConfig(3, 4, True).init(AD)(x), "[batch_size, seq_length, 3]"),
        ("Rnn", lambda x: RnnConfig(3, 4, True).init(AD)(x), "[batch_size, seq_length, 3]"),
        (
            "BiLstm",
            lambda x: BiLstmConfig(3, 4, True, batch_first=False).init(AD)(x),
            "[seq_length, batch_size, 3]",
        ),
        ("BiGru", lambda x: BiGruConfig(3, 4, True).init(AD)(x), "[batch_size, seq_length, 3]"),
        ("BiRnn", lambda x: BiRnnConfig(3, 4, True).init(AD)(x), "[batch_size, seq_length, 3]"),
        (
            "MultiHeadAttention",
            lambda x: MultiHeadAttentionConfig(3, 1).init(AD)(MhaInput.self_attn(x)),
            "[batch_size, seq_length (query), 3]",
        ),
        (
            "CrossAttention",
            lambda x: CrossAttentionConfig(3, 4, 1, 1, 3).init(AD)(x, x),
            "[batch_size, l_q, 3]",
        ),
        ("LayerNorm", lambda x: LayerNormConfig(3).init(AD)(x), "[..., 3]"),
    ],
)
def test_module_shape_errors_name_the_module(name, run, message):
    with pytest.raises(ShapeError) as error:
        run(tensor(np.ones((2, 5, 4))))
    assert str(error.value) == f"{name}: expected an input of shape {message}, got shape [2, 5, 4]"


def test_batch_norm_empty_batch_writes_nan_running_stats_as_burn():
    """burn's `forward_train` (batch.rs, commit 2c06be35) has no empty-input branch: the batch
    mean and variance are flex `mean_dim`s over 0 elements (reduce.rs: 0 / 0 = NaN), which the
    momentum update carries into both running statistics. Output and gradients agree with
    PyTorch, which leaves its running statistics unchanged."""
    ref = torch.nn.BatchNorm1d(5)
    model, _ = import_torch(ref, BatchNormConfig(5).init(AD))
    x = np.zeros((0, 5, 9), np.float32)
    xt = torch.tensor(x, requires_grad=True)
    out_t = ref(xt)
    out_t.sum().backward()
    xe = leaf(x)
    out_e = model(xe)
    grads = out_e.sum().backward()
    assert out_e.shape == tuple(out_t.shape) == (0, 5, 9)
    assert xe.grad(grads).shape == (0, 5, 9)
    for name, torch_param in (("gamma", ref.weight), ("beta", ref.bias)):
        engine = getattr(model, name).val().grad(grads).numpy()
        np.testing.assert_array_equal(engine, torch_param.grad.numpy(), err_msg=name)
        np.testing.assert_array_equal(engine, np.zeros(5, np.float32))
    assert np.isnan(model.running_mean.value_sync().numpy()).all()
    assert np.isnan(model.running_var.value_sync().numpy()).all()
    np.testing.assert_array_equal(ref.running_mean.numpy(), np.zeros(5, np.float32))
    np.testing.assert_array_equal(ref.running_var.numpy(), np.ones(5, np.float32))
