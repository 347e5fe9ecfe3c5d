"""Modules and parameters (reference-engine.md section 3), cross-checked against PyTorch and
NumPy where numbers are involved."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from harness.a1 import a1_engine
from harness.engine import (
    Device,
    DropoutConfig,
    LayerNorm,
    LayerNormConfig,
    Linear,
    LinearConfig,
    Module,
    MovedValueError,
    Param,
    ParamId,
    Relu,
    SgdConfig,
    Tensor,
    seed,
)
from harness.engine.optim import GradientsParams

AD = Device.flex().autodiff()
PLAIN = Device.flex()


def leaf(values, device=AD) -> Param:
    return Param.from_tensor(Tensor.from_numpy(np.asarray(values, dtype=np.float32), device))


# ---- ParamId ------------------------------------------------------------------------------


def test_param_id_prints_13_char_lowercase_base32hex_of_le_bytes():
    pid = ParamId(0x0123456789ABCDEF)
    text = str(pid)
    assert re.fullmatch(r"[0-9a-v]{13}", text)
    # Independent decode: base32hex digits, 5 bits each, big-endian over the LE byte string.
    bits = "".join(f"{'0123456789abcdefghijklmnopqrstuv'.index(c):05b}" for c in text)
    raw = int(bits[:64], 2).to_bytes(8, "big")
    assert int.from_bytes(raw, "little") == 0x0123456789ABCDEF
    assert bits[64:] == "0"  # 65 bits carry 64: one padding bit


def test_param_ids_are_random_per_run_and_reproducible_when_seeded():
    code = "from harness.engine import ParamId; print(ParamId.new())"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(runs) == 2
    seed(7)
    first = [ParamId.new() for _ in range(3)]
    seed(7)
    assert [ParamId.new() for _ in range(3)] == first
    assert len(set(first)) == 3


# ---- Param --------------------------------------------------------------------------------


def test_param_from_tensor_marks_the_tensor_as_requiring_grad():
    param = leaf([1.0, 2.0])
    assert param.val().is_require_grad()
    assert param.val() is param.val()


def test_each_val_use_is_the_same_node_so_gradients_add_up():
    param = leaf([1.0, 2.0])
    loss = (param.val() * param.val() + param.val()).sum()
    grad = param.val().grad(loss.backward())
    assert grad.tolist() == [3.0, 5.0]  # 2x + 1


def test_param_on_plain_device_stays_plain():
    param = leaf([1.0], PLAIN)
    assert not param.val().is_autodiff()


# ---- walking ------------------------------------------------------------------------------


class Block(Module):
    def __init__(self) -> None:
        self.scale = 0.5  # non-param field
        self.lin = Linear(leaf(np.ones((2, 2))), leaf([0.0, 0.0]))
        self.act = Relu()


class Net(Module):
    def __init__(self) -> None:
        self.first = leaf([1.0])
        self.blocks = [Block(), Block()]
        self.head = Linear(leaf(np.ones((2, 1))))
        self.name = "net"


@dataclasses.dataclass
class DataNet(Module):
    b: Linear
    a: Param


def test_fields_are_walked_in_declaration_order_with_dotted_paths():
    paths = [path for path, _ in Net().params()]
    assert paths == [
        "first",
        "blocks.0.lin.weight",
        "blocks.0.lin.bias",
        "blocks.1.lin.weight",
        "blocks.1.lin.bias",
        "head.weight",
    ]


def test_dataclass_modules_walk_field_order():
    net = DataNet(b=Linear(leaf(np.ones((1, 1)))), a=leaf([1.0]))
    assert [path for path, _ in net.params()] == ["b.weight", "a"]
    assert [path for path, _ in net.clone().params()] == ["b.weight", "a"]


def test_visit_sees_params_in_order():
    net = Net()
    seen = []
    net.visit(seen.append)
    assert seen == [param for _, param in net.params()]


def test_map_returns_a_new_module_and_leaves_the_original():
    net = Net()
    doubled = net.map(lambda p: Param(p.id, p.val() * 2.0))
    assert doubled is not net and type(doubled) is Net
    assert doubled.first.val().tolist() == [2.0]
    assert net.first.val().tolist() == [1.0]
    assert doubled.blocks[1].scale == 0.5 and doubled.name == "net"
    assert [p.id for _, p in doubled.params()] == [p.id for _, p in net.params()]


def test_clone_shares_param_ids_and_tensors():
    net = Net()
    clone = net.clone()
    for (_, a), (_, b) in zip(net.params(), clone.params(), strict=True):
        assert a.id == b.id
        assert a.val() is b.val()


def test_clone_taken_before_a_step_keeps_the_old_values():
    model, x, _ = a1_engine(AD)
    before = model.clone()
    grads = GradientsParams.from_grads(model.forward(x).sum().backward(), model)
    after = SgdConfig().init().step(0.1, model, grads)
    for (_, old), (_, new) in zip(before.params(), after.params(), strict=True):
        assert old.id == new.id
        assert not np.array_equal(old.val().numpy(), new.val().numpy())
        assert new.val().is_require_grad()


def test_num_params_counts_frozen_params_too():
    frozen = Param(ParamId.new(), Tensor.from_floats([1.0, 2.0, 3.0], AD))  # not require_grad
    layer = Linear(leaf(np.ones((3, 2))), frozen)
    assert not frozen.val().is_require_grad()
    assert layer.num_params() == 6 + 3


def test_num_params_counts_every_float_element():
    net = Net()
    assert net.num_params() == 1 + 2 * (4 + 2) + 2
    assert LayerNormConfig(6).init(AD).num_params() == 12
    assert LinearConfig(3, 5).init(AD).num_params() == 20


# ---- Linear -------------------------------------------------------------------------------


def test_linear_config_defaults_and_shapes():
    layer = LinearConfig(4, 3).init(AD)
    assert layer.weight.val().shape == (4, 3)
    assert layer.bias.val().shape == (3,)
    assert LinearConfig(4, 3, bias=False).init(AD).bias is None


def test_linear_init_is_uniform_within_one_over_sqrt_d_input():
    seed(0)
    layer = LinearConfig(64, 256).init(AD)
    bound = 1.0 / math.sqrt(64)
    for values in (layer.weight.val().numpy(), layer.bias.val().numpy()):
        assert values.dtype == np.float32
        assert np.all(np.abs(values) <= bound)
    weight = layer.weight.val().numpy()
    # U(-a, a): mean 0, variance a^2 / 3 (16384 samples, loose bounds).
    assert abs(weight.mean()) < 0.01 * bound * 10
    assert weight.var() == pytest.approx(bound**2 / 3, rel=0.05)


def test_seed_makes_init_reproducible():
    seed(3)
    a = LinearConfig(4, 3).init(AD).weight.val().numpy().copy()
    seed(3)
    assert np.array_equal(LinearConfig(4, 3).init(AD).weight.val().numpy(), a)


def test_linear_from_given_values_matches_torch_with_transposed_weight():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((5, 3)).astype(np.float32)  # engine layout [in, out]
    b = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    layer = Linear(weight=leaf(w), bias=leaf(b))
    out = layer.forward(Tensor.from_numpy(x, AD))
    tl = torch.nn.Linear(5, 3)
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(w.T.copy()))
        tl.bias.copy_(torch.from_numpy(b))
    np.testing.assert_allclose(out.numpy(), tl(torch.from_numpy(x)).detach().numpy(), atol=1e-6)


# ---- Relu / Dropout -----------------------------------------------------------------------


def test_relu_module():
    out = Relu().forward(Tensor.from_floats([-1.0, 0.0, 2.0], AD))
    assert out.tolist() == [0.0, 0.0, 2.0]


def test_dropout_is_active_exactly_on_autodiff_inputs():
    dropout = DropoutConfig(0.5).init()
    ones = np.ones((100, 100), np.float32)
    plain = Tensor.from_numpy(ones, PLAIN)
    assert dropout.forward(plain) is plain
    out = dropout.forward(Tensor.from_numpy(ones, AD)).numpy()
    assert set(np.unique(out)) == {0.0, 2.0}  # kept values scaled by 1 / (1 - p)
    assert 0.4 < (out == 0).mean() < 0.6


def test_dropout_p1_gives_nan_from_zero_times_inf():
    out = DropoutConfig(1.0).init().forward(Tensor.from_numpy(np.ones(4, np.float32), AD))
    assert np.isnan(out.numpy()).all()


def test_dropout_p0_is_identity():
    x = Tensor.from_floats([1.0, 2.0], AD)
    assert DropoutConfig(0.0).init().forward(x) is x


@pytest.mark.parametrize(("prob", "text"), [(-10.0, "-10"), (1.5, "1.5"), (-0.1, "-0.1")])
def test_dropout_invalid_prob_raises_burns_message(prob, text):
    with pytest.raises(ValueError) as info:
        DropoutConfig(prob).init()
    assert str(info.value) == f"Dropout probability should be between 0 and 1, but got {text}"


# ---- LayerNorm ----------------------------------------------------------------------------


def test_layer_norm_forward_and_backward_match_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    gamma = rng.standard_normal(6).astype(np.float32)
    beta = rng.standard_normal(6).astype(np.float32)
    upstream = rng.standard_normal((3, 6)).astype(np.float32)

    norm = LayerNorm(leaf(gamma), leaf(beta), 1e-5)
    xe = Tensor.from_numpy(x, AD).require_grad()
    out = norm.forward(xe)
    grads = (out * Tensor.from_numpy(upstream, AD)).sum().backward()

    xt = torch.from_numpy(x).requires_grad_()
    tn = torch.nn.LayerNorm(6, eps=1e-5)
    with torch.no_grad():
        tn.weight.copy_(torch.from_numpy(gamma))
        tn.bias.copy_(torch.from_numpy(beta))
    tout = tn(xt)
    (tout * torch.from_numpy(upstream)).sum().backward()

    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), atol=2e-6)
    np.testing.assert_allclose(xe.grad(grads).numpy(), xt.grad.numpy(), atol=2e-5)
    np.testing.assert_allclose(norm.gamma.grad(grads).numpy(), tn.weight.grad.numpy(), atol=2e-5)
    np.testing.assert_allclose(norm.beta.grad(grads).numpy(), tn.bias.grad.numpy(), atol=2e-5)


def test_layer_norm_config_defaults():
    norm = LayerNormConfig(4).init(AD)
    assert norm.epsilon == 1e-5
    assert norm.gamma.val().tolist() == [1.0] * 4
    assert norm.beta.val().tolist() == [0.0] * 4
    assert LayerNormConfig(4, bias=False).init(AD).beta is None


# ---- consumed modules ---------------------------------------------------------------------

MOVED = (
    "use of moved value: this A1 was moved into `optim.step(lr, model, grads)`, which returns "
    "the updated module; write `model = optim.step(lr, model, grads)` (pass `model.clone()` to "
    "keep using the original)"
)


def test_using_a_consumed_module_raises_moved_value_error_naming_the_fix():
    model, x, _ = a1_engine(AD)
    grads = GradientsParams.from_grads(model.forward(x).sum().backward(), model)
    new = SgdConfig().init().step(0.1, model, grads)
    for use in (
        lambda: model.forward(x),
        lambda: model.fc1,
        lambda: model(x),
        lambda: model.params(),
    ):
        with pytest.raises(MovedValueError) as info:
            use()
        assert str(info.value) == MOVED
    assert isinstance(model, Module)  # isinstance and repr keep working
    assert repr(model) == "<moved A1>"
    assert new.forward(x).shape == (4, 3)
    assert issubclass(MovedValueError, RuntimeError)


def test_passing_a_clone_consumes_the_clone_only():
    model, x, _ = a1_engine(AD)
    grads = GradientsParams.from_grads(model.forward(x).sum().backward(), model)
    clone = model.clone()
    SgdConfig().init().step(0.1, clone, grads)
    with pytest.raises(MovedValueError):
        clone.forward(x)
    assert model.forward(x).shape == (4, 3)


def test_frozen_dataclass_module_can_be_consumed():
    @dataclasses.dataclass(frozen=True)
    class Frozen(Module):
        lin: Linear

    module = Frozen(Linear(leaf(np.ones((1, 1)))))
    out = SgdConfig().init().step(0.1, module, GradientsParams())
    assert isinstance(out, Frozen)
    with pytest.raises(MovedValueError):
        module.lin  # noqa: B018
