"""Rnn and BiRnn (burn-nn rnn/basic.rs) against torch.nn.RNN (weights imported through the
PyTorch rules), burn's own test vectors, and float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_support import (
    AD,
    DTYPES,
    PERMISSIVE,
    TOL,
    assert_burn_approx,
    grads_by_path,
    import_torch,
    leaf,
    rng_array,
    tensor,
)
from test_kernels_support import finite_difference

from harness.engine import ActivationConfig, BiRnnConfig, Initializer, Param, RnnConfig, RnnState
from harness.engine.module import Linear
from harness.engine.nn.rnn import GateController

B, T, D_IN, H = 3, 5, 4, 6


def _torch_grad(module: torch.nn.RNN, burn_path: str) -> np.ndarray:
    """The torch gradient of the tensor burn's `burn_path` holds, in burn's layout."""
    parts = burn_path.split(".")
    suffix = ""
    if parts[0] in ("forward", "reverse"):
        suffix = "_reverse" if parts[0] == "reverse" else ""
        parts = parts[1:]
    _gate, transform, name = parts
    packed = {"input_transform": "ih", "hidden_transform": "hh"}[transform]
    grad = getattr(module, f"{name}_{packed}_l0{suffix}").grad.numpy()
    return grad.T if name == "weight" else grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_matches_torch_forward_and_backward(dtype, nonlinearity):
    torch.manual_seed(7)
    ref = torch.nn.RNN(D_IN, H, nonlinearity=nonlinearity, batch_first=True)
    ref = ref.to(DTYPES[dtype])
    activation = ActivationConfig.Tanh if nonlinearity == "tanh" else ActivationConfig.Relu
    config = RnnConfig(D_IN, H, True, hidden_activation=activation)
    model, result = import_torch(ref, config.init(AD))
    assert len(result.applied) == 4 and result.unused == []
    x, h0, cot = rng_array(1, (B, T, D_IN)), rng_array(2, (1, B, H)), rng_array(3, (B, T, H))
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t, h_t = ref(xt, torch.tensor(h0, dtype=DTYPES[dtype]))
    ((out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum() + 2 * h_t.sum()).backward()
    xe = leaf(x, dtype)
    out_e, state = model(xe, RnnState.new(tensor(h0[0], dtype)))
    grads = ((out_e * tensor(cot, dtype)).sum() + state.hidden.sum() * 2.0).backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(state.hidden.numpy(), h_t[0].detach().numpy(), **tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
    by_path = grads_by_path(model, grads)
    assert len(by_path) == 4
    for path, g in by_path.items():
        np.testing.assert_allclose(g, _torch_grad(ref, path), **tol, err_msg=path)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_birnn_seq_first_matches_torch_bidirectional(dtype):
    torch.manual_seed(8)
    ref = torch.nn.RNN(D_IN, H, bidirectional=True).to(DTYPES[dtype])  # seq first
    model, _ = import_torch(ref, BiRnnConfig(D_IN, H, True, batch_first=False).init(AD))
    x, h0, cot = rng_array(4, (T, B, D_IN)), rng_array(5, (2, B, H)), rng_array(6, (T, B, 2 * H))
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t, h_t = ref(xt, torch.tensor(h0, dtype=DTYPES[dtype]))
    ((out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum() + h_t.sum()).backward()
    xe = leaf(x, dtype)
    out_e, state = model(xe, RnnState(tensor(h0, dtype)))
    grads = ((out_e * tensor(cot, dtype)).sum() + state.hidden.sum()).backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(state.hidden.numpy(), h_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
    by_path = grads_by_path(model, grads)
    assert len(by_path) == 8
    for path, g in by_path.items():
        np.testing.assert_allclose(g, _torch_grad(ref, path), **tol, err_msg=path)


def test_rnn_reverse_is_torch_reverse_direction():
    torch.manual_seed(9)
    ref = torch.nn.RNN(D_IN, H, bidirectional=True, batch_first=True).double()
    x = rng_array(7, (B, T, D_IN))
    out_t, _ = ref(torch.tensor(x))
    single = torch.nn.RNN(D_IN, H, batch_first=True).double()
    single.load_state_dict(
        {k.removesuffix("_reverse"): v for k, v in ref.state_dict().items() if "reverse" in k}
    )
    model, _ = import_torch(single, RnnConfig(D_IN, H, True, reverse=True).init(AD))
    out_e, _ = model(tensor(x, "float64"))
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy()[..., H:], **TOL["float64"])


def test_rnn_gradients_against_finite_differences():
    torch.manual_seed(0)
    rnn, _ = import_torch(
        torch.nn.RNN(2, 3, batch_first=True).double(), RnnConfig(2, 3, True, clip=0.4).init(AD)
    )
    x = rng_array(8, (2, 3, 2))
    cot = rng_array(9, (2, 3, 3))
    xe = leaf(x, "float64")
    out, _ = rnn(xe)
    engine = xe.grad((out * tensor(cot, "float64")).sum().backward()).numpy()
    plain = rnn.valid()
    (numeric,) = finite_difference(
        lambda v: plain(tensor(v, "float64", AD.inner()))[0].numpy(), [x], cot
    )
    np.testing.assert_allclose(engine, numeric, rtol=1e-6, atol=1e-8)
    assert np.abs(out.numpy()).max() <= 0.4


# ---- burn's own tests (crates/burn-nn/src/modules/rnn/basic.rs, commit 2c06be35) ------------


def _gate(w_in, b_in, w_hidden, b_hidden) -> GateController:
    def lin(w, b):
        return Linear(Param.from_tensor(tensor(w)), Param.from_tensor(tensor(b)))

    return GateController(lin(w_in, b_in), lin(w_hidden, b_hidden))


def test_burn_rnn_single_input_and_reverse_sequence():
    """`test_forward_single_input_single_feature` and `test_forward_reverse_sequence`,
    Tolerance::default()."""
    rnn = RnnConfig(1, 1, False).init(AD)
    rnn.gate = _gate([[0.5]], [0.0], [[0.5]], [0.0])
    output, state = rnn(tensor([[[0.1]]]))
    assert_burn_approx(state.hidden.numpy(), [[0.04995]])
    assert_burn_approx(output.numpy()[0], state.hidden.numpy())
    rnn = RnnConfig(1, 1, False, reverse=True).init(AD)
    rnn.gate = _gate([[0.5]], [0.0], [[0.5]], [0.0])
    output, state = rnn(tensor([[[0.1], [0.2], [0.3]]]))
    assert_burn_approx(state.hidden.numpy(), [[0.135508]])
    assert output.shape == (1, 3, 1)


def test_burn_rnn_uniform_initializer_shapes_and_clipping():
    """`test_with_uniform_initializer`, `test_batched_forward_pass_batch_of_one`,
    `test_rnn_clipping` and `display_rnn` / `display_birnn` (their param counts)."""
    rnn = RnnConfig(5, 5, False, initializer=Initializer.Uniform(0.0, 1.0)).init(AD)
    weight = rnn.gate.input_transform.weight.val().numpy()
    assert ((weight >= 0.0) & (weight < 1.0)).all()
    rnn = RnnConfig(64, 1024, True).init(AD)
    output, state = rnn(tensor(rng_array(10, (1, 2, 64))))
    assert output.shape == (1, 2, 1024) and state.hidden.shape == (1, 1024)
    _, state = RnnConfig(4, 8, True, clip=0.3).init(AD)(tensor(rng_array(11, (2, 5, 4), 3.0)))
    assert np.abs(state.hidden.numpy()).max() <= np.float32(0.3)
    assert RnnConfig(2, 3, True).init(AD).num_params() == 21
    assert BiRnnConfig(2, 3, True).init(AD).num_params() == 42


def test_burn_birnn_bidirectional():
    """`test_bidirectional` (values from PyTorch), Tolerance::permissive()."""
    rnn = BiRnnConfig(2, 3, True).init(AD)
    rnn.forward.gate = _gate(
        [[0.367, 0.091, 0.342], [0.322, 0.533, 0.059]],
        [-0.196, 0.354, 0.209],
        [[-0.320, 0.232, -0.165], [0.093, -0.572, -0.315], [-0.467, 0.325, 0.046]],
        [0.181, -0.190, -0.245],
    )
    rnn.reverse.gate = _gate(
        [[-0.055, 0.506, 0.247], [-0.369, 0.178, -0.258]],
        [0.540, -0.164, 0.033],
        [[0.159, 0.180, -0.037], [-0.443, 0.485, -0.488], [0.098, -0.085, -0.140]],
        [-0.510, 0.105, 0.114],
    )
    x = tensor([[[0.949, -0.861], [0.892, 0.927], [-0.173, -0.301], [-0.081, 0.992]]])
    h0 = tensor([[[0.280, 0.360, -1.242]], [[-0.588, 0.729, -0.788]]])
    out, state = rnn(x, RnnState.new(h0))
    assert_burn_approx(
        out.numpy(),
        [
            [
                [0.5226, -0.6370, 0.0210, 0.0685, 0.3867, 0.3602],
                [0.3580, 0.8431, 0.4129, -0.3175, 0.4374, 0.1766],
                [-0.3837, -0.2703, -0.3957, -0.1542, -0.1122, 0.0725],
                [0.5059, 0.5527, 0.1244, -0.6779, 0.3725, -0.3387],
            ]
        ],
        PERMISSIVE,
    )
    assert_burn_approx(
        state.hidden.numpy(), [[[0.5059, 0.5527, 0.1244]], [[0.0685, 0.3867, 0.3602]]], PERMISSIVE
    )
    out, state = rnn(x)
    assert_burn_approx(
        out.numpy(),
        [
            [
                [0.0560, -0.2056, 0.2334, 0.0892, 0.3912, 0.3607],
                [0.4340, 0.7378, 0.3714, -0.2394, 0.4235, 0.2002],
                [-0.3962, -0.2097, -0.3798, 0.0532, -0.2067, 0.1727],
                [0.5075, 0.5298, 0.1083, -0.3200, 0.0764, -0.1282],
            ]
        ],
        PERMISSIVE,
    )
    assert_burn_approx(
        state.hidden.numpy(), [[[0.5075, 0.5298, 0.1083]], [[0.0892, 0.3912, 0.3607]]], PERMISSIVE
    )


def test_rnn_configs_have_burn_defaults():
    config = RnnConfig(2, 3, True)
    assert (config.batch_first, config.reverse, config.clip) == (True, False, None)
    assert config.hidden_activation is ActivationConfig.Tanh
    assert config.initializer == Initializer.XavierNormal(1.0)
    bi = BiRnnConfig(2, 3, True)
    assert (bi.batch_first, bi.clip, bi.hidden_activation) == (True, None, ActivationConfig.Tanh)
    assert RnnConfig(2, 3, False).init(AD).gate.hidden_transform.bias is None
