"""LSTM, BiLSTM, GRU and BiGRU against torch.nn.LSTM / GRU (weights imported through the
PyTorch rules), burn's own test vectors, float64 finite differences, and the importer rules."""

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

from harness.engine import (
    GRU_GATES,
    LSTM_GATES,
    BiGruConfig,
    BiLstmConfig,
    GruConfig,
    LstmConfig,
    LstmState,
    Param,
)
from harness.engine.module import Linear
from harness.engine.nn.rnn import GateController

B, T, D_IN, H = 3, 5, 4, 6


def _torch_rnn(kind: str, dtype: str, **kwargs):
    torch.manual_seed(7)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    return cls(D_IN, H, batch_first=True, **kwargs).to(DTYPES[dtype])


def _pytorch_grad(module, burn_path: str, gates, bi: bool) -> np.ndarray:
    """The torch gradient of the packed tensor slice that burn's `burn_path` holds, in burn's
    layout (weights transposed)."""
    parts = burn_path.split(".")
    suffix = ""
    if bi:
        suffix = "_reverse" if parts[0] == "reverse" else ""
        parts = parts[1:]
    gate, transform, name = parts
    packed = {"input_transform": "ih", "hidden_transform": "hh"}[transform]
    tensor_ = getattr(module, f"{name}_{packed}_l0{suffix}")
    chunk = tensor_.grad.detach().numpy().reshape(len(gates), H, -1)[gates.index(gate)]
    return chunk.T if name == "weight" else chunk.reshape(H)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_matches_torch_forward_and_backward(dtype):
    ref = _torch_rnn("lstm", dtype)
    model, _ = import_torch(ref, LstmConfig(D_IN, H, True).init(AD))
    x = rng_array(1, (B, T, D_IN))
    h0, c0 = rng_array(2, (1, B, H)), rng_array(3, (1, B, H))
    cot = rng_array(4, (B, T, H))
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t, (h_t, c_t) = ref(
        xt, (torch.tensor(h0, dtype=DTYPES[dtype]), torch.tensor(c0, dtype=DTYPES[dtype]))
    )
    ((out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum() + h_t.sum() + 2 * c_t.sum()).backward()

    xe = leaf(x, dtype)
    state = LstmState(tensor(c0[0], dtype), tensor(h0[0], dtype))
    out_e, state_e = model(xe, state)
    loss = (out_e * tensor(cot, dtype)).sum() + state_e.hidden.sum() + state_e.cell.sum() * 2.0
    grads = loss.backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(state_e.hidden.numpy(), h_t[0].detach().numpy(), **tol)
    np.testing.assert_allclose(state_e.cell.numpy(), c_t[0].detach().numpy(), **tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
    by_path = grads_by_path(model, grads)
    assert len(by_path) == 16
    for path, g in by_path.items():
        np.testing.assert_allclose(
            g, _pytorch_grad(ref, path, LSTM_GATES, False), **tol, err_msg=path
        )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_matches_torch_forward_and_backward(dtype):
    ref = _torch_rnn("gru", dtype)
    model, _ = import_torch(ref, GruConfig(D_IN, H, True).init(AD))
    x = rng_array(5, (B, T, D_IN))
    h0 = rng_array(6, (1, B, H))
    cot = rng_array(7, (B, T, H))
    xt = torch.tensor(x, dtype=DTYPES[dtype], requires_grad=True)
    out_t, _ = ref(xt, torch.tensor(h0, dtype=DTYPES[dtype]))
    (out_t * torch.tensor(cot, dtype=DTYPES[dtype])).sum().backward()
    xe = leaf(x, dtype)
    out_e = model(xe, tensor(h0[0], dtype))
    grads = (out_e * tensor(cot, dtype)).sum().backward()
    tol = TOL[dtype]
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
    by_path = grads_by_path(model, grads)
    assert len(by_path) == 12
    for path, g in by_path.items():
        np.testing.assert_allclose(
            g, _pytorch_grad(ref, path, GRU_GATES, False), **tol, err_msg=path
        )


def test_bilstm_and_bigru_match_torch_bidirectional():
    x = rng_array(8, (B, T, D_IN))
    cot = rng_array(9, (B, T, 2 * H))
    for kind, config, gates in (
        ("lstm", BiLstmConfig(D_IN, H, True), LSTM_GATES),
        ("gru", BiGruConfig(D_IN, H, True), GRU_GATES),
    ):
        ref = _torch_rnn(kind, "float64", bidirectional=True)
        model, _ = import_torch(ref, config.init(AD))
        xt = torch.tensor(x, requires_grad=True)
        out_t, state_t = ref(xt)
        (out_t * torch.tensor(cot)).sum().backward()
        xe = leaf(x, "float64")
        out_e, state_e = model(xe)
        grads = (out_e * tensor(cot, "float64")).sum().backward()
        tol = TOL["float64"]
        np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **tol)
        hidden_t = state_t[0] if kind == "lstm" else state_t
        hidden_e = state_e.hidden if kind == "lstm" else state_e
        np.testing.assert_allclose(hidden_e.numpy(), hidden_t.detach().numpy(), **tol)
        np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), **tol)
        by_path = grads_by_path(model, grads)
        for path, g in by_path.items():
            np.testing.assert_allclose(
                g, _pytorch_grad(ref, path, gates, True), **tol, err_msg=path
            )


def test_lstm_seq_first_and_reverse_match_torch():
    torch.manual_seed(3)
    ref = torch.nn.LSTM(D_IN, H, bidirectional=True).double()  # PyTorch default: seq first
    x = rng_array(10, (T, B, D_IN))
    out_t, _ = ref(torch.tensor(x))
    bi, _ = import_torch(ref, BiLstmConfig(D_IN, H, True, batch_first=False).init(AD))
    out_e, _ = bi(tensor(x, "float64"))
    np.testing.assert_allclose(out_e.numpy(), out_t.detach().numpy(), **TOL["float64"])
    # A burn `reverse` Lstm is PyTorch's reverse direction alone.
    reverse = LstmConfig(D_IN, H, True, batch_first=False, reverse=True).init(AD)
    weights = {k.removesuffix("_reverse"): v for k, v in ref.state_dict().items() if "reverse" in k}
    single = torch.nn.LSTM(D_IN, H).double()
    single.load_state_dict(weights)
    reverse, _ = import_torch(single, reverse)
    out_r, _ = reverse(tensor(x, "float64"))
    np.testing.assert_allclose(out_r.numpy(), out_t.detach().numpy()[..., H:], **TOL["float64"])


def _reset_before_reference(gru: torch.nn.GRU, x: torch.Tensor) -> torch.Tensor:
    """A GRU with the reset gate applied before the hidden matmul (burn's reset_after=False),
    written from the formula on torch's packed weights (r, z, n)."""
    w_ih, w_hh = gru.weight_ih_l0, gru.weight_hh_l0
    b_ih, b_hh = gru.bias_ih_l0, gru.bias_hh_l0
    h = torch.zeros(x.shape[0], H, dtype=x.dtype)
    outs = []
    for t in range(x.shape[1]):
        gi = x[:, t] @ w_ih.T + b_ih
        r = torch.sigmoid(gi[:, :H] + h @ w_hh[:H].T + b_hh[:H])
        z = torch.sigmoid(gi[:, H : 2 * H] + h @ w_hh[H : 2 * H].T + b_hh[H : 2 * H])
        n = torch.tanh(gi[:, 2 * H :] + (r * h) @ w_hh[2 * H :].T + b_hh[2 * H :])
        h = (1 - z) * n + z * h
        outs.append(h)
    return torch.stack(outs, 1)


def test_gru_reset_before_matches_its_formula():
    ref = _torch_rnn("gru", "float64")
    model, _ = import_torch(ref, GruConfig(D_IN, H, True, reset_after=False).init(AD))
    x = rng_array(11, (B, T, D_IN))
    expected = _reset_before_reference(ref, torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(model(tensor(x, "float64")).numpy(), expected, **TOL["float64"])
    default = import_torch(ref, GruConfig(D_IN, H, True).init(AD))[0]
    assert not np.allclose(default(tensor(x, "float64")).numpy(), expected, atol=1e-6)


def test_lstm_clip_and_input_forget_match_their_formulas():
    x = rng_array(12, (2, 3, 2), 3.0)
    lstm = LstmConfig(2, 2, True, clip=0.3, input_forget=True).init(AD)
    _out, state = lstm(tensor(x))
    w = {p: v.val().numpy().astype(np.float64) for p, v in lstm.params()}

    def gp(gate, xt, h):
        i, hh = f"{gate}.input_transform", f"{gate}.hidden_transform"
        return xt @ w[f"{i}.weight"] + w[f"{i}.bias"] + h @ w[f"{hh}.weight"] + w[f"{hh}.bias"]

    def sig(v):
        return 1 / (1 + np.exp(-v))

    c = h = np.zeros((2, 2))
    for t in range(3):
        i = sig(gp("input_gate", x[:, t], h))
        c = np.clip((1 - i) * c + i * np.tanh(gp("cell_gate", x[:, t], h)), -0.3, 0.3)
        h = sig(gp("output_gate", x[:, t], h)) * np.tanh(c)
    np.testing.assert_allclose(state.cell.numpy(), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.hidden.numpy(), h, rtol=1e-5, atol=1e-6)
    assert np.abs(state.cell.numpy()).max() <= 0.3 + 1e-7


def test_lstm_gradients_against_finite_differences():
    torch.manual_seed(0)
    lstm, _ = import_torch(
        torch.nn.LSTM(2, 3, batch_first=True).double(), LstmConfig(2, 3, True).init(AD)
    )
    x = rng_array(13, (2, 3, 2))
    cot = rng_array(14, (2, 3, 3))
    xe = leaf(x, "float64")
    out, _ = lstm(xe)
    engine = xe.grad((out * tensor(cot, "float64")).sum().backward()).numpy()
    plain = lstm.valid()
    (numeric,) = finite_difference(
        lambda v: plain(tensor(v, "float64", AD.inner()))[0].numpy(), [x], cot
    )
    np.testing.assert_allclose(engine, numeric, rtol=1e-6, atol=1e-8)


# ---- burn's own vectors (crates/burn-nn/src/modules/rnn/, commit 2c06be35) -------------------


def _gate(w_in, b_in, w_hidden, b_hidden) -> GateController:
    def lin(w, b):
        return Linear(Param.from_tensor(tensor(w)), Param.from_tensor(tensor(b)))

    return GateController(lin(w_in, b_in), lin(w_hidden, b_hidden))


def test_burn_lstm_forward_single_input_single_feature():
    """lstm_module.rs `test_forward_single_input_single_feature`, Tolerance::default()."""
    lstm = LstmConfig(1, 1, False).init(AD)
    for name, w in (
        ("input_gate", 0.5),
        ("forget_gate", 0.7),
        ("cell_gate", 0.9),
        ("output_gate", 1.1),
    ):
        setattr(lstm, name, _gate([[w]], [0.0], [[w]], [0.0]))
    output, state = lstm(tensor([[[0.1]]]))
    assert_burn_approx(state.cell.numpy(), [[0.046]])
    assert_burn_approx(state.hidden.numpy(), [[0.0242]])
    np.testing.assert_array_equal(output.numpy()[:, 0], state.hidden.numpy())


def test_burn_gru_forward_vectors():
    """gru.rs `tests_forward_single_input_single_feature` and `tests_forward_seq_len_3`."""
    for reset_after in (False, True):
        gru = GruConfig(1, 1, False, reset_after=reset_after).init(AD)
        gru.update_gate = _gate([[0.5]], [0.0], [[0.5]], [0.0])
        gru.reset_gate = _gate([[0.6]], [0.0], [[0.6]], [0.0])
        gru.new_gate = _gate([[0.7]], [0.0], [[0.7]], [0.0])
        assert_burn_approx(gru(tensor([[[0.1]]])).numpy()[0], [[0.034]])
        out = gru(tensor([[[0.1], [0.2], [0.3]]])).numpy()[0]
        assert_burn_approx(out, [[0.0341], [0.0894], [0.1575]])


_BI_GATES = {
    "forward.input_gate": (
        [[0.367, 0.091, 0.342], [0.322, 0.533, 0.059]],
        [-0.196, 0.354, 0.209],
        [[-0.320, 0.232, -0.165], [0.093, -0.572, -0.315], [-0.467, 0.325, 0.046]],
        [0.181, -0.190, -0.245],
    ),
    "forward.forget_gate": (
        [[-0.342, -0.084, -0.420], [-0.432, 0.119, 0.191]],
        [0.315, -0.413, -0.041],
        [[0.453, 0.063, 0.561], [0.211, 0.149, 0.213], [-0.499, -0.158, 0.068]],
        [-0.431, -0.535, 0.125],
    ),
    "forward.cell_gate": (
        [[-0.046, -0.382, 0.321], [-0.533, 0.558, 0.004]],
        [-0.358, 0.282, -0.078],
        [[-0.358, 0.109, 0.139], [-0.345, 0.091, -0.368], [-0.508, 0.221, -0.507]],
        [0.502, -0.509, -0.247],
    ),
    "forward.output_gate": (
        [[-0.577, -0.359, 0.216], [-0.550, 0.268, 0.243]],
        [-0.227, -0.274, 0.039],
        [[-0.383, 0.449, 0.222], [-0.357, -0.093, 0.449], [-0.106, 0.236, 0.360]],
        [-0.361, -0.209, -0.454],
    ),
    "reverse.input_gate": (
        [[-0.055, 0.506, 0.247], [-0.369, 0.178, -0.258]],
        [0.540, -0.164, 0.033],
        [[0.159, 0.180, -0.037], [-0.443, 0.485, -0.488], [0.098, -0.085, -0.140]],
        [-0.510, 0.105, 0.114],
    ),
    "reverse.forget_gate": (
        [[-0.154, -0.432, -0.547], [-0.369, -0.310, -0.175]],
        [0.141, 0.004, 0.055],
        [[-0.005, -0.277, -0.515], [-0.011, -0.101, -0.365], [0.426, 0.379, 0.337]],
        [-0.382, 0.331, -0.176],
    ),
    "reverse.cell_gate": (
        [[-0.571, 0.228, -0.287], [-0.331, 0.110, 0.219]],
        [-0.206, -0.546, 0.462],
        [[0.449, -0.240, 0.071], [-0.045, 0.131, 0.124], [0.138, -0.201, 0.191]],
        [-0.030, 0.211, -0.352],
    ),
    "reverse.output_gate": (
        [[0.491, -0.442, 0.333], [0.313, -0.121, -0.070]],
        [-0.387, -0.250, 0.066],
        [[-0.030, 0.268, 0.299], [-0.019, -0.280, -0.314], [0.466, -0.365, -0.248]],
        [-0.398, -0.199, -0.566],
    ),
}


def test_burn_bilstm_bidirectional():
    """bilstm_module.rs `test_bidirectional` (values from PyTorch), Tolerance::permissive()."""
    bi = BiLstmConfig(2, 3, True).init(AD)
    for path, values in _BI_GATES.items():
        direction, gate = path.split(".")
        setattr(getattr(bi, direction), gate, _gate(*values))
    x = tensor([[[0.949, -0.861], [0.892, 0.927], [-0.173, -0.301], [-0.081, 0.992]]])
    h0 = tensor([[[0.280, 0.360, -1.242]], [[-0.588, 0.729, -0.788]]])
    c0 = tensor([[[0.723, 0.397, -0.262]], [[0.471, 0.613, 1.885]]])
    out, state = bi(x, LstmState.new(c0, h0))
    assert_burn_approx(
        out.numpy(),
        [
            [
                [0.23764, -0.03442, 0.04414, -0.15635, -0.03366, -0.05798],
                [0.00473, -0.02254, 0.02988, -0.16510, -0.00306, 0.08742],
                [0.06210, -0.06509, -0.05339, -0.01710, 0.02091, 0.16012],
                [-0.03420, 0.07774, -0.09774, -0.02604, 0.12584, 0.20872],
            ]
        ],
        PERMISSIVE,
    )
    assert_burn_approx(
        state.hidden.numpy(),
        [[[-0.03420, 0.07774, -0.09774]], [[-0.15635, -0.03366, -0.05798]]],
        PERMISSIVE,
    )
    assert_burn_approx(
        state.cell.numpy(),
        [[[-0.13593, 0.17125, -0.22395]], [[-0.45425, -0.11206, -0.12908]]],
        PERMISSIVE,
    )
    out, state = bi(x)
    assert_burn_approx(
        out.numpy(),
        [
            [
                [0.08679, -0.08776, -0.00528, -0.15969, -0.05322, -0.08863],
                [-0.02577, -0.05057, 0.00033, -0.17558, -0.03679, 0.03142],
                [0.02942, -0.07411, -0.06044, -0.03601, -0.09998, 0.04846],
                [-0.04026, 0.07178, -0.10189, -0.07349, -0.04576, 0.05550],
            ]
        ],
        PERMISSIVE,
    )
    assert_burn_approx(
        state.cell.numpy(),
        [[[-0.15839, 0.15923, -0.23569]], [[-0.47407, -0.17493, -0.19643]]],
        PERMISSIVE,
    )


def test_importer_maps_packed_lstm_tensors_and_reports_leftovers():
    ref = torch.nn.LSTM(2, 3, batch_first=True)
    lstm, result = import_torch(ref, LstmConfig(2, 3, True).init(AD))
    assert len(result.applied) == 16 and result.unused == []
    h = 3
    # weight_ih_l0 chunk 2 (g) is burn's cell_gate, chunk 3 (o) the output_gate, transposed.
    np.testing.assert_array_equal(
        lstm.cell_gate.input_transform.weight.val().numpy(),
        ref.weight_ih_l0.detach().numpy()[2 * h : 3 * h].T,
    )
    np.testing.assert_array_equal(
        lstm.output_gate.hidden_transform.bias.val().numpy(),
        ref.bias_hh_l0.detach().numpy()[3 * h :],
    )
    # A two-layer checkpoint: the second layer's tensors match nothing and are reported unused.
    two = torch.nn.LSTM(2, 3, num_layers=2)
    state = {k: v.detach() for k, v in two.state_dict().items()}
    import safetensors.torch

    from harness.engine.store import PyTorchToBurnAdapter, SafetensorsStore

    store = SafetensorsStore.from_bytes(safetensors.torch.save(state)).with_from_adapter(
        PyTorchToBurnAdapter()
    )
    _, result = store.apply_to(LstmConfig(2, 3, True).init(AD))
    assert result.unused == ["bias_hh_l1", "bias_ih_l1", "weight_hh_l1", "weight_ih_l1"]
    assert result.missing == []


def test_rnn_configs_have_burn_defaults():
    lstm = LstmConfig(2, 3, True)
    assert (lstm.batch_first, lstm.reverse, lstm.clip, lstm.input_forget) == (
        True,
        False,
        None,
        False,
    )
    assert GruConfig(2, 3, True).reset_after is True
    assert BiLstmConfig(2, 3, True).with_batch_first(False).batch_first is False
    assert LstmConfig(2, 3, False).init(AD).input_gate.input_transform.bias is None
