"""LoRA (issue 17): burn's own tests transcribed, from `crates/burn-optim/src/optim/sgd.rs`
(`lora_finetune_trains_adapter_and_freezes_base`) and `crates/burn-core/src/module/lora.rs`
at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747 (test name in each docstring), and a
cross-check against a LoRA linear written here in PyTorch (base frozen with
`requires_grad_(False)`, the same initial arrays), trained with the same SGD steps.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.engine import (
    AdamConfig,
    Device,
    GradientsParams,
    LinearConfig,
    SgdConfig,
    Tensor,
    load_optimizer,
    save_optimizer,
    seed,
)
from harness.engine.module import (
    Lora,
    LoraWeight,
    Module,
    Param,
    ParamGroup,
    apply_lora,
    merge_lora,
)

AD = Device.flex().autodiff()


def random(shape, rng) -> Tensor:
    return Tensor.from_numpy(rng.random(shape, dtype=np.float32), AD)


def mse(output: Tensor, target: Tensor) -> Tensor:
    return (output - target).powf_scalar(2.0).mean()


def test_lora_finetune_trains_adapter_and_freezes_base():
    """sgd.rs `lora_finetune_trains_adapter_and_freezes_base`: 30 SGD steps at lr 0.5."""
    seed(17)
    rng = np.random.default_rng(17)
    linear = LinearConfig(8, 8).init(AD)
    base_before = linear.weight.val().numpy().copy()
    model = linear.apply_lora(Lora(4, 8.0))  # burn's `linear.apply_lora(Lora::new(4, 8.0))`
    assert model.weight.adapter() is not None
    b_before = model.weight.adapter().b.val().numpy().copy()
    x, target = random((16, 8), rng), random((16, 8), rng)
    optim = SgdConfig().init()
    first_loss = last_loss = None
    for _ in range(30):
        loss = mse(model.forward(x), target)
        last_loss = float(loss.into_scalar())
        first_loss = first_loss if first_loss is not None else last_loss
        model = optim.step(0.5, model, GradientsParams.from_grads(loss.backward(), model))
    assert last_loss < first_loss, f"expected loss to decrease ({first_loss} -> {last_loss})"
    assert model.weight.adapter() is not None
    b_change = np.abs(model.weight.adapter().b.val().numpy() - b_before).sum()
    assert b_change > 0.0, "adapter factor B should be updated by training"
    # burn checks at Tolerance::default(); frozen means untouched, so bit for bit here.
    assert model.weight.base().numpy().tobytes() == base_before.tobytes()


def lora_model(d_in: int, d_out: int):
    lora = Lora(2, 4.0)
    return apply_lora(LinearConfig(d_in, d_out).init(AD), lora), lora


def test_materialize_lora_matches_base_plus_delta():
    """lora.rs `materialize_lora_matches_base_plus_delta`; scale is alpha / rank."""
    model, config = lora_model(4, 6)
    weight = model.weight
    adapter = weight.adapter()
    expected = weight.base().numpy() + adapter.delta().numpy()
    np.testing.assert_allclose(weight.val().numpy(), expected, rtol=1e-6)
    assert adapter.scale == config.alpha / config.rank
    a, b = adapter.a.val().numpy(), adapter.b.val().numpy()
    np.testing.assert_allclose(adapter.delta().numpy(), (a @ b) * np.float32(2.0), rtol=1e-6)


def test_lora_freezes_base_and_trains_adapter():
    """lora.rs `lora_freezes_base_and_trains_adapter`: three distinct ids; num_params counts
    the factors (burn's SimpleLinear(4, 6) stores weight [6, 4]: a [6, 2], b [2, 4]; the
    engine's Linear stores [d_in, d_out] = [4, 6]: a [4, 2], b [2, 6]; 50 either way)."""
    model, _ = lora_model(4, 6)
    weight = model.weight
    adapter = weight.adapter()
    assert len({weight.id, adapter.a.id, adapter.b.id}) == 3
    assert model.num_params() == 24 + 6 + 8 + 12
    assert adapter.a.val().shape == (4, 2) and adapter.b.val().shape == (2, 6)
    assert [path for path, _ in model.params()] == [
        "weight",
        "weight.lora.a",
        "weight.lora.b",
        "bias",
    ]


def test_lora_b_is_zero_initialized_so_initial_delta_is_zero():
    """lora.rs `lora_b_is_zero_initialized_so_initial_delta_is_zero`."""
    model, _ = lora_model(4, 6)
    assert not model.weight.adapter().b.val().numpy().any()
    assert model.weight.val().numpy().tobytes() == model.weight.base().numpy().tobytes()


def test_a_is_normal_with_std_one_over_rank():
    """lora.rs: `A ~ N(0, init_std)`, default `1 / rank`, in the base's dtype."""
    seed(3)
    model = apply_lora(LinearConfig(400, 300).init(AD), Lora(4, 8.0))
    a = model.weight.adapter().a.val().numpy()
    assert a.dtype == np.float32 and a.shape == (400, 4)
    assert abs(a.std() - 0.25) < 0.01 and abs(a.mean()) < 0.01
    a = apply_lora(LinearConfig(400, 300).init(AD), Lora(4, 8.0, init_std=0.5))
    assert abs(a.weight.adapter().a.val().numpy().std() - 0.5) < 0.02


def test_lora_backward_grads_adapter_only():
    """lora.rs `lora_backward_grads_adapter_only`; every base param is frozen (the bias too)."""
    model, _ = lora_model(4, 6)
    grads = model.weight.val().sum().backward()
    adapter = model.weight.adapter()
    assert adapter.a.val().grad(grads) is not None
    assert adapter.b.val().grad(grads) is not None
    assert model.weight.base().grad(grads) is None
    assert not model.weight.base().is_require_grad() and not model.bias.val().is_require_grad()


def test_lora_valid_folds_adapter_for_inference():
    """lora.rs `lora_valid_folds_adapter_for_inference`, with `merge_lora` as the fold."""
    model, _ = lora_model(4, 6)
    model.weight.adapter().b._value = Tensor.from_numpy(np.full((2, 6), 0.5, np.float32), AD)
    folded = merge_lora(model)
    assert not isinstance(folded.weight, LoraWeight)
    assert folded.weight.id == model.weight.id
    np.testing.assert_allclose(folded.weight.val().numpy(), model.weight.val().numpy(), rtol=1e-6)
    assert folded.weight.val().numpy().tobytes() != model.weight.base().numpy().tobytes()


def test_adapter_state_saves_and_resumes_exactly(tmp_path):
    """Only the factors have optimizer state (the frozen params get no gradient); it saves
    and resumes bit for bit, found through the LoRA'd module's params."""
    rng = np.random.default_rng(9)
    x, target = random((16, 4), rng), random((16, 6), rng)

    def run(model, optim, steps):
        for _ in range(steps):
            loss = mse(model.forward(x), target)
            model = optim.step(0.01, model, GradientsParams.from_grads(loss.backward(), model))
        return model

    model, _ = lora_model(4, 6)
    straight = run(model.clone(), AdamConfig().init(), 6)
    optim = AdamConfig().init()
    half = run(model, optim, 3)
    adapter = half.weight.adapter()
    assert set(optim.records) == {adapter.a.id, adapter.b.id}
    path = save_optimizer(optim, tmp_path / "lora.bpk", module=half)
    resumed = run(half, load_optimizer(AdamConfig().init(), path, module=half), 3)
    for name in ("a", "b"):
        got = getattr(resumed.weight.adapter(), name).val().numpy()
        want = getattr(straight.weight.adapter(), name).val().numpy()
        assert got.tobytes() == want.tobytes()


def test_nested_reparameterization_is_refused():
    model, lora = lora_model(4, 6)
    with pytest.raises(ValueError, match="nested reparameterizations"):
        apply_lora(model, lora)


# ---- against a LoRA linear written in PyTorch ---------------------------------------------


class TorchLoraLinear(torch.nn.Module):
    """`x @ (W + (A @ B) * scale) + bias`, W and bias frozen, the engine's layouts."""

    def __init__(self, weight, bias, a, b, scale) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(weight)).requires_grad_(False)
        self.bias = torch.nn.Parameter(torch.tensor(bias)).requires_grad_(False)
        self.a = torch.nn.Parameter(torch.tensor(a))
        self.b = torch.nn.Parameter(torch.tensor(b))
        self.scale = scale

    def forward(self, x):
        return x @ (self.weight + (self.a @ self.b) * self.scale) + self.bias


def test_training_agrees_with_a_pytorch_lora_linear():
    seed(5)
    rng = np.random.default_rng(5)
    model = apply_lora(LinearConfig(8, 8).init(AD), Lora(4, 8.0))
    adapter = model.weight.adapter()
    twin = TorchLoraLinear(
        model.weight.base().numpy(),
        model.bias.val().numpy(),
        adapter.a.val().numpy(),
        adapter.b.val().numpy(),
        adapter.scale,
    )
    x, target = random((16, 8), rng), random((16, 8), rng)
    tx, ttarget = torch.tensor(x.numpy()), torch.tensor(target.numpy())
    optim, toptim = SgdConfig().init(), torch.optim.SGD([twin.a, twin.b], lr=0.5)
    losses, tlosses = [], []
    for _ in range(10):
        loss = mse(model.forward(x), target)
        losses.append(float(loss.into_scalar()))
        model = optim.step(0.5, model, GradientsParams.from_grads(loss.backward(), model))
        toptim.zero_grad()
        tloss = torch.nn.functional.mse_loss(twin(tx), ttarget)
        tlosses.append(tloss.item())
        tloss.backward()
        toptim.step()
    adapter = model.weight.adapter()
    assert losses[-1] < losses[0] / 2
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5)
    np.testing.assert_allclose(adapter.a.val().numpy(), twin.a.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(adapter.b.val().numpy(), twin.b.detach().numpy(), atol=1e-5)
    assert model.weight.base().numpy().tobytes() == twin.weight.numpy().tobytes()
    assert model.bias.val().numpy().tobytes() == twin.bias.numpy().tobytes()


class TwoWeights(Module):
    """lora.rs's `TwoWeights { a: Param<Tensor<2>>, b: Param<Tensor<2>> }`."""

    def __init__(self, rng) -> None:
        self.a = Param.from_tensor(random((4, 4), rng))
        self.b = Param.from_tensor(random((4, 4), rng))


def test_param_group_restricts_adapter_to_matching_parameters():
    """lora.rs `param_group_restricts_adapter_to_matching_parameters`: only the param whose
    path matches `ParamGroup::from_predicate("a")` gets an adapter; both are frozen."""
    model = TwoWeights(np.random.default_rng(3))
    lora = Lora(2, 4.0).set_param_group(ParamGroup.from_predicate("a"))
    model = model.apply_lora(lora)
    assert isinstance(model.a, LoraWeight) and model.a.adapter() is not None
    assert isinstance(model.b, Param)  # no adapter: the plain, frozen param
    assert not model.a.base().is_require_grad()
    assert not model.b.val().is_require_grad()


def test_param_group_matches_nested_paths_and_ids():
    """The group sees the param's full path (`layers.1.weight`) and its id, as burn's mapper
    path; unmatched 2-D params stay plain and frozen, and none of them trains."""
    seed(5)
    model = Stack([LinearConfig(3, 3).init(AD), LinearConfig(3, 3).init(AD)])
    by_path = model.apply_lora(
        Lora(2, 2.0).set_param_group(ParamGroup.from_path("layers.1.weight"))
    )
    assert [isinstance(layer.weight, LoraWeight) for layer in by_path.layers] == [False, True]
    by_id = model.apply_lora(
        Lora(2, 2.0).set_param_group(ParamGroup.from_ids([model.layers[0].weight.id]))
    )
    assert [isinstance(layer.weight, LoraWeight) for layer in by_id.layers] == [True, False]
    with pytest.raises(TypeError, match="expected a ParamGroup"):
        Lora(2, 2.0).set_param_group("layers.1.weight")


class Stack(Module):
    def __init__(self, layers) -> None:
        self.layers = layers


def test_lora_keeps_running_statistics_running_state():
    """A BatchNorm under apply_lora still trains a forward: its running statistics stay
    RunningState params (a plain Param there made the forward raise TypeError)."""
    from harness.engine import BatchNormConfig

    norm = BatchNormConfig(3).init(AD)
    adapted = norm.apply_lora(Lora(2, 4.0))
    assert type(adapted.running_mean) is type(norm.running_mean)
    x = random((4, 3, 2, 2), np.random.default_rng(0))
    out = adapted.forward(x)
    assert out.shape == (4, 3, 2, 2)
