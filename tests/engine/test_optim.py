"""GradientsParams, GradientsAccumulator, clipping and optimizers (reference-engine.md sections 5
and 6). Trajectories run 10 A1 steps on both frameworks: with hyperparameters aligned they agree
within float32 tolerance; with each side's defaults they differ exactly where the spec says."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from harness.a1 import PARAM_NAMES, a1_arrays, a1_engine, a1_torch, engine_params
from harness.engine import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    CrossEntropyLossConfig,
    Device,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    MomentumConfig,
    MuonConfig,
    Param,
    RmsPropConfig,
    SgdConfig,
    Tensor,
    WeightDecayConfig,
)

AD = Device.flex().autodiff()
STEPS = 10
ATOL = 2e-6  # float32, 10 steps, different rounding order of the same formula


def engine_loss(model, x, y):
    return CrossEntropyLossConfig().init(AD).forward(model.forward(x), y)


def engine_grads(model, x, y) -> GradientsParams:
    return GradientsParams.from_grads(engine_loss(model, x, y).backward(), model)


def torch_layout(model) -> dict[str, np.ndarray]:
    return {path: value.numpy() for path, value in engine_params(model).items()}


def run_engine(config, lr: float, steps: int = STEPS) -> dict[str, np.ndarray]:
    model, x, y = a1_engine(AD)
    optim = config.init()
    for _ in range(steps):
        model = optim.step(lr, model, engine_grads(model, x, y))
    return torch_layout(model)


def run_torch(make_optim, lr: float, steps: int = STEPS) -> dict[str, np.ndarray]:
    model, x, y = a1_torch()
    optim = make_optim(model.parameters(), lr)
    for _ in range(steps):
        optim.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optim.step()
    return {name: model.get_parameter(name).detach().numpy().copy() for name in PARAM_NAMES}


def max_diff(a: dict, b: dict) -> float:
    return max(float(np.abs(a[k] - b[k]).max()) for k in PARAM_NAMES)


def moved_from_start(result: dict) -> float:
    start = a1_arrays()
    return max(float(np.abs(result[k] - start[k]).max()) for k in PARAM_NAMES)


# ---- GradientsParams ----------------------------------------------------------------------


def test_from_grads_has_one_entry_per_param_found_by_param_id():
    model, x, y = a1_engine(AD)
    tmodel, tx, ty = a1_torch()
    torch.nn.functional.cross_entropy(tmodel(tx), ty).backward()
    grads = engine_grads(model, x, y)
    assert len(grads) == 4 and grads.len() == 4
    for path, param in model.params():
        g = grads.get(param.id).numpy()
        tg = tmodel.get_parameter(path).grad.numpy()
        np.testing.assert_allclose(g.T if g.ndim == 2 else g, tg, atol=1e-7)


def test_gradients_of_other_tensors_are_dropped():
    model, x, y = a1_engine(AD)
    x = x.require_grad()
    raw = engine_loss(model, x, y).backward()
    grads = GradientsParams.from_grads(raw, model)
    assert len(grads) == 4
    assert x.grad(raw) is not None  # still in `grads`, never in the GradientsParams


def test_from_grads_takes_the_gradients_out_of_grads():
    model, x, y = a1_engine(AD)
    raw = engine_loss(model, x, y).backward()
    GradientsParams.from_grads(raw, model)
    assert all(param.val().grad(raw) is None for _, param in model.params())


def test_params_without_gradient_get_no_entry():
    model, x, _ = a1_engine(AD)
    loss = model.fc1.forward(x).sum()  # fc2 is not used
    grads = GradientsParams.from_grads(loss.backward(), model)
    assert set(grads.ids()) == {model.fc1.weight.id, model.fc1.bias.id}


def test_grads_of_another_module_give_an_empty_container_silently():
    model, x, y = a1_engine(AD)
    other, _, _ = a1_engine(AD)
    grads = GradientsParams.from_grads(engine_loss(model, x, y).backward(), other)
    assert len(grads) == 0


def test_get_returns_a_copy_remove_takes_register_replaces():
    model, x, y = a1_engine(AD)
    grads = engine_grads(model, x, y)
    pid = model.fc2.bias.id
    first = grads.get(pid)
    assert not first.is_autodiff()
    assert np.array_equal(grads.get(pid).numpy(), first.numpy())
    grads.register(pid, Tensor.from_floats([1.0, 2.0, 3.0], Device.flex()))
    assert grads.get(pid).tolist() == [1.0, 2.0, 3.0]
    assert grads.remove(pid).tolist() == [1.0, 2.0, 3.0]
    assert grads.get(pid) is None and grads.remove(pid) is None and len(grads) == 3


def test_get_with_wrong_rank_raises_clearly():
    model, x, y = a1_engine(AD)
    grads = engine_grads(model, x, y)
    pid = model.fc1.weight.id
    assert grads.get(pid, ndim=2).shape == (4, 8)
    with pytest.raises(ValueError) as info:
        grads.get(pid, ndim=1)
    assert str(info.value) == (
        f"GradientsParams.get: the gradient of param {pid} has rank 2 (shape [4, 8]), "
        "but rank 1 was requested"
    )


def test_accumulator_sums_without_division_and_resets():
    model, x, y = a1_engine(AD)
    parts = [engine_grads(model, x.slice([(a, b)]), y.slice([(a, b)])) for a, b in ((0, 2), (2, 4))]
    want = {pid: parts[0].get(pid).numpy() + parts[1].get(pid).numpy() for pid in parts[0].ids()}
    acc = GradientsAccumulator()
    for part in parts:
        acc.accumulate(model, part)
    total = acc.grads()
    assert len(total) == 4
    for pid, value in want.items():
        assert np.array_equal(total.get(pid).numpy(), value)
    assert len(acc.grads()) == 0


# ---- step semantics -----------------------------------------------------------------------


def test_step_returns_fresh_marked_leaves_with_the_same_param_ids():
    model, x, y = a1_engine(AD)
    ids = [param.id for _, param in model.params()]
    nodes = [param.val() for _, param in model.params()]
    new = SgdConfig().init().step(0.1, model, engine_grads(model, x, y))
    for (_, param), pid, old in zip(new.params(), ids, nodes, strict=True):
        assert param.id == pid
        assert param.val().is_require_grad()
        assert param.val() is not old


def test_sgd_step_matches_torch_one_step():
    result = run_engine(SgdConfig(), 0.1, steps=1)
    want = run_torch(lambda p, lr: torch.optim.SGD(p, lr=lr), 0.1, steps=1)
    assert max_diff(result, want) < 1e-7


def test_param_without_gradient_is_unchanged_and_its_state_does_not_advance():
    model, x, y = a1_engine(AD)
    optim = AdamConfig(weight_decay=WeightDecayConfig(0.5)).init()  # and no decay either
    grads = engine_grads(model, x, y)
    bias = model.fc2.bias
    grads.remove(bias.id)
    new = optim.step(0.01, model, grads)
    assert new.fc2.bias.val() is bias.val()
    assert bias.id not in optim.to_record()
    assert optim.to_record()[new.fc1.weight.id].time == 1


def test_wrong_module_step_is_a_silent_no_op():
    model, x, y = a1_engine(AD)
    other, _, _ = a1_engine(AD)
    grads = GradientsParams.from_grads(engine_loss(model, x, y).backward(), other)
    before = torch_layout(other)
    after = SgdConfig().init().step(0.1, other, grads)
    for key, value in torch_layout(after).items():
        assert np.array_equal(value, before[key])


def test_discarded_step_keeps_the_model_but_advances_adam_state():
    model, x, y = a1_engine(AD)
    optim = AdamConfig().init()
    loss_before = engine_loss(model, x, y).numpy()
    optim.step(0.01, model.clone(), engine_grads(model, x, y))  # result ignored
    assert np.array_equal(engine_loss(model, x, y).numpy(), loss_before)
    assert {state.time for state in optim.to_record().values()} == {1}


def test_lr_must_be_a_number():
    model, x, y = a1_engine(AD)
    with pytest.raises(TypeError):
        SgdConfig().init().step("0.1", model, engine_grads(model, x, y))


# ---- trajectories, aligned hyperparameters ------------------------------------------------

ALIGNED = [
    (
        "sgd_momentum_wd",
        SgdConfig(
            weight_decay=WeightDecayConfig(0.05),
            momentum=MomentumConfig(momentum=0.9, dampening=0.1),
        ),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, dampening=0.1, weight_decay=0.05),
        0.1,
    ),
    (
        "sgd_nesterov",
        SgdConfig(momentum=MomentumConfig(momentum=0.9, dampening=0.0, nesterov=True)),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, nesterov=True),
        0.1,
    ),
    (
        "adam_wd",
        AdamConfig(weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.Adam(p, lr=lr, eps=1e-5, weight_decay=0.01),
        0.01,
    ),
    (
        "adam_amsgrad",
        AdamConfig(amsgrad=True),
        lambda p, lr: torch.optim.Adam(p, lr=lr, eps=1e-5, amsgrad=True),
        0.01,
    ),
    (
        "adamw",
        AdamWConfig(weight_decay=0.1),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, eps=1e-5, weight_decay=0.1),
        0.01,
    ),
    (
        "adamw_amsgrad",
        AdamWConfig(weight_decay=0.1, amsgrad=True),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, eps=1e-5, weight_decay=0.1, amsgrad=True),
        0.01,
    ),
    (
        "rmsprop",
        RmsPropConfig(weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, eps=1e-5, momentum=0.9, weight_decay=0.01),
        0.001,
    ),
    (
        "rmsprop_centered",
        RmsPropConfig(centered=True, momentum=0.0),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, eps=1e-5, centered=True),
        0.001,
    ),
    (
        "adagrad",
        AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.Adagrad(p, lr=lr, eps=1e-5, lr_decay=0.1, weight_decay=0.01),
        0.05,
    ),
]


@pytest.mark.parametrize(
    ("config", "make_torch", "lr"), [a[1:] for a in ALIGNED], ids=[a[0] for a in ALIGNED]
)
def test_aligned_trajectories_agree_with_torch(config, make_torch, lr):
    result = run_engine(config, lr)
    want = run_torch(make_torch, lr)
    assert moved_from_start(result) > 1e-3  # the optimizer did something
    assert max_diff(result, want) < ATOL


# ---- trajectories, each side's defaults ---------------------------------------------------

DEFAULTS = [
    # (name, burn config, torch with its default, torch with only that value aligned, lr)
    (
        "momentum_dampening",
        SgdConfig(momentum=MomentumConfig()),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9),
        lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, dampening=0.1),
        0.1,
    ),
    (
        "adam_epsilon",
        AdamConfig(),
        lambda p, lr: torch.optim.Adam(p, lr=lr),
        lambda p, lr: torch.optim.Adam(p, lr=lr, eps=1e-5),
        0.01,
    ),
    (
        "adamw_weight_decay",
        AdamWConfig(),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, eps=1e-5),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, eps=1e-5, weight_decay=1e-4),
        0.01,
    ),
    (
        "adamw_epsilon",
        AdamWConfig(),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=1e-4),
        lambda p, lr: torch.optim.AdamW(p, lr=lr, eps=1e-5, weight_decay=1e-4),
        0.01,
    ),
    (
        "rmsprop_momentum",
        RmsPropConfig(),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, eps=1e-5),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, eps=1e-5, momentum=0.9),
        0.001,
    ),
    (
        "rmsprop_epsilon",
        RmsPropConfig(),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, momentum=0.9),
        lambda p, lr: torch.optim.RMSprop(p, lr=lr, eps=1e-5, momentum=0.9),
        0.001,
    ),
    (
        "adagrad_epsilon",
        AdaGradConfig(),
        lambda p, lr: torch.optim.Adagrad(p, lr=lr),
        lambda p, lr: torch.optim.Adagrad(p, lr=lr, eps=1e-5),
        0.05,
    ),
]


@pytest.mark.parametrize(
    ("config", "torch_default", "torch_aligned", "lr"),
    [d[1:] for d in DEFAULTS],
    ids=[d[0] for d in DEFAULTS],
)
def test_default_hyperparameters_differ_and_aligning_that_one_removes_it(
    config, torch_default, torch_aligned, lr
):
    result = run_engine(config, lr)
    assert max_diff(result, run_torch(torch_default, lr)) > 10 * ATOL
    assert max_diff(result, run_torch(torch_aligned, lr)) < ATOL


def test_burn_defaults_are_the_documented_ones():
    assert (AdamConfig().epsilon, AdamConfig().beta_1, AdamConfig().beta_2) == (1e-5, 0.9, 0.999)
    assert (AdamWConfig().epsilon, AdamWConfig().weight_decay) == (1e-5, 1e-4)
    assert (MomentumConfig().momentum, MomentumConfig().dampening) == (0.9, 0.1)
    assert not MomentumConfig().nesterov
    rms = RmsPropConfig()
    assert (rms.alpha, rms.momentum, rms.epsilon, rms.centered) == (0.99, 0.9, 1e-5, False)
    assert (AdaGradConfig().lr_decay, AdaGradConfig().epsilon) == (0.0, 1e-5)
    assert not AdamWConfig().amsgrad
    adan = AdanConfig()
    assert (adan.beta_1, adan.beta_2, adan.beta_3, adan.epsilon) == (0.98, 0.92, 0.99, 1e-8)
    assert (adan.weight_decay, adan.no_prox, adan.grad_clipping) == (0.0, False, None)
    assert MuonConfig().adjust_lr_fn is AdjustLrFn.Original


# ---- gradient clipping --------------------------------------------------------------------

G = np.array([[0.6294, -0.094, 0.8176], [-0.7152, 0.9559, 0.1]], dtype=np.float32)
H = np.array([3.0, -4.0], dtype=np.float32)


def test_value_clipping_agrees_with_torch():
    clip = GradientClippingConfig.value(0.5).init()
    out = clip.clip_gradient(Tensor.from_numpy(G, Device.flex())).numpy()
    tg = torch.zeros(2, 3, requires_grad=True)
    tg.grad = torch.from_numpy(G.copy())
    torch.nn.utils.clip_grad_value_([tg], 0.5)
    assert np.array_equal(out, tg.grad.numpy())


def torch_norm_clip(arrays, max_norm):
    params = []
    for a in arrays:
        p = torch.zeros(a.shape, requires_grad=True)
        p.grad = torch.from_numpy(a.copy())
        params.append(p)
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad.numpy() for p in params]


def test_norm_clipping_is_per_parameter():
    clip = GradientClippingConfig.norm(1.0).init()
    outs = [clip.clip_gradient(Tensor.from_numpy(a, Device.flex())).numpy() for a in (G, H)]
    per_param = [torch_norm_clip([a], 1.0)[0] for a in (G, H)]
    for out, want in zip(outs, per_param, strict=True):
        np.testing.assert_allclose(out, want, rtol=2e-6)
        assert np.linalg.norm(out) == pytest.approx(1.0, rel=1e-6)
    global_norm = torch_norm_clip([G, H], 1.0)
    assert not np.allclose(outs[0], global_norm[0], rtol=1e-3)


def test_norm_clipping_leaves_small_gradients_alone():
    clip = GradientClippingConfig.norm(10.0).init()
    assert np.array_equal(clip.clip_gradient(Tensor.from_numpy(G, Device.flex())).numpy(), G)


def test_clipping_runs_inside_the_step_before_weight_decay_and_the_update():
    config = SgdConfig(
        weight_decay=WeightDecayConfig(0.05), gradient_clipping=GradientClippingConfig.value(0.01)
    )
    result = run_engine(config, 0.1, 1)

    def clipped_sgd(params, lr):
        params = list(params)

        class Clipped(torch.optim.SGD):
            def step(self):
                torch.nn.utils.clip_grad_value_(params, 0.01)
                return super().step()

        return Clipped(params, lr=lr, weight_decay=0.05)

    assert max_diff(result, run_torch(clipped_sgd, 0.1, 1)) < 1e-7


def test_param_class_is_reexported():
    assert Param.from_tensor


def test_step_takes_the_used_gradients_out_like_burns_move():
    model, x, y = a1_engine(AD)
    grads = engine_grads(model, x, y)
    SgdConfig().init().step(0.1, model, grads)
    assert len(grads) == 0


def test_update_without_temporary_rounds_like_tensor_minus_delta_times_lr():
    from harness.engine.optim.base import sub_scaled as _sub_scaled

    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        tensor = rng.standard_normal(1000).astype(dtype)
        delta = rng.standard_normal(1000).astype(dtype)
        tensor[:3] = [0.0, -0.0, 1.0]
        delta[:3] = [0.0, 0.0, -0.0]
        for lr in (0.1, 1e-3, 0.0):
            want = tensor - delta * dtype(lr)
            got = _sub_scaled(tensor, delta, lr)
            assert got.dtype == dtype
            assert got.tobytes() == want.tobytes()


def test_clipping_config_reaches_the_new_optimizers():
    optim = AdanConfig(grad_clipping=GradientClippingConfig.value(0.5)).init()
    assert optim.has_gradient_clipping()
    assert not MuonConfig().init().has_gradient_clipping()  # burn's MuonConfig has no clipping


def test_adamw_cautious_decay_skips_weights_whose_sign_differs_from_the_first_moment():
    from harness.engine.optim import AdamW

    tensor = np.array([1.0, 1.0, -1.0], dtype=np.float32)
    grad = np.array([0.5, -0.5, 0.5], dtype=np.float32)
    plain, _ = AdamW(0.9, 0.999, 1e-5, 0.5, False).step(0.1, tensor, grad, None)
    cautious, _ = AdamW(0.9, 0.999, 1e-5, 0.5, True).step(0.1, tensor, grad, None)
    undecayed, _ = AdamW(0.9, 0.999, 1e-5, 0.0, False).step(0.1, tensor, grad, None)
    assert cautious[0] == plain[0]  # same sign: decayed
    assert cautious[1] == undecayed[1] and cautious[2] == undecayed[2]  # signs differ: skipped


@pytest.mark.parametrize(
    "config",
    [
        SgdConfig(WeightDecayConfig(0.5), MomentumConfig(0.7, 0.2, True)),
        AdamConfig(0.8, 0.99, 1e-3, True, WeightDecayConfig(0.5)),
        AdamWConfig(0.8, 0.99, 1e-3, 0.3, True),
        AdamWConfig(0.8, 0.99, 1e-3, 0.3, False, True),
        RmsPropConfig(0.9, 0.5, 1e-3, True, WeightDecayConfig(0.5)),
        AdaGradConfig(0.1, 1e-3, WeightDecayConfig(0.5)),
        AdanConfig(0.9, 0.8, 0.7, 1e-6, 0.1, True),
        MuonConfig(WeightDecayConfig(0.1), MomentumConfig(0.5), (1.0, 2.0, 3.0), 1e-6, 3),
    ],
    ids=lambda c: type(c).__name__,
)
def test_init_hands_every_config_field_but_clipping_to_the_optimizer(config):
    optim = config.init().optim
    assert optim == config.build()
    wanted = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.name not in ("grad_clipping", "gradient_clipping")
    }
    assert {f.name: getattr(optim, f.name) for f in dataclasses.fields(optim)} == wanted


def test_from_params_takes_only_the_listed_params():
    # burn's `GradientsParams::from_params(grads, module, &[ids])` (grads.rs).
    model, x, y = a1_engine(AD)
    raw = engine_loss(model, x, y).backward()
    wanted = [model.fc2.weight.id, model.fc1.bias.id]
    grads = GradientsParams.from_params(raw, model, wanted)
    assert grads.ids() == [model.fc1.bias.id, model.fc2.weight.id]  # visit order
    assert model.fc1.weight.val().grad(raw) is not None  # not taken
