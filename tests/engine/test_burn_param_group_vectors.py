"""burn's parameter groups: the `#[cfg(test)]` modules of
`crates/burn-optim/src/optim/module/module_optimizer.rs` (5 tests),
`crates/burn-optim/src/lr_scheduler/module_lr_scheduler.rs` (7 tests) and
`crates/burn-core/src/module/param/group.rs` (13 tests), transcribed at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747 (test name in each docstring), at burn's tolerances
(`Tolerance::absolute(1e-6)` for the optimizer tests, `1e-10` for the scheduler ones).

Then PyTorch: `torch.optim` param groups (`[{"params": ..., "lr": ..., "weight_decay": ...}]`)
and a per-group `LambdaLR` against `with_group` and a `ModuleLrScheduler` on A1, compared at
the float32 default tolerance of the plain optimizers' cases; and where burn's groups are not
PyTorch's (overlap, a param in no group, adding a group after training), each side's
behaviour.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from burn_vectors import AD, assert_approx_eq, make_grads, make_model

from harness.a1 import a1_engine, a1_torch, engine_params, torch_params
from harness.engine import (
    AdamConfig,
    AdamWConfig,
    CrossEntropyLossConfig,
    Device,
    ExponentialLrSchedulerConfig,
    GradientClipping,
    GradientsParams,
    LinearConfig,
    LinearLrSchedulerConfig,
    Module,
    ModuleLearningRate,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    MomentumConfig,
    MuonConfig,
    ParamGroup,
    ParamGroupError,
    ParamId,
    SgdConfig,
    ShapeError,
    Tensor,
    WeightDecayConfig,
)
from harness.engine.module import seed

OPTIM_TOL = 1e-6  # module_optimizer.rs: Tolerance::absolute(1e-6)
EPSILON = 1e-10  # module_lr_scheduler.rs: EPSILON


# ---- module_optimizer.rs ------------------------------------------------------------------


def random_x(rng, low=0.0, high=1.0) -> Tensor:
    """`Tensor::random([2, 4], Distribution::Default | Uniform(low, high))`."""
    return Tensor.from_numpy(rng.uniform(low, high, (2, 4)).astype(np.float32), AD)


LR = 0.01  # lr(): ModuleLearningRate::from(0.01)


def sgd():
    return SgdConfig().init()


def weight(model, layer: str) -> np.ndarray:
    return getattr(model, layer).weight.val().numpy()


def step_both(optim_a, optim_b, model, rng):
    """One step of each optimizer from the same model and batch (burn's from_orig /
    from_reload)."""
    x = random_x(rng)
    grads_a, grads_b = make_grads(model, x), make_grads(model, x)
    return optim_a.step(LR, model.clone(), grads_a), optim_b.step(LR, model.clone(), grads_b)


@pytest.fixture
def rng():
    seed(17)
    return np.random.default_rng(17)


def train(optim, model, rng, steps: int):
    for _ in range(steps):
        model = optim.step(ModuleLearningRate(LR), model, make_grads(model, random_x(rng)))
    return model


def test_default_optimizer_state_survives_round_trip(rng):
    """module_optimizer.rs `default_optimizer_state_survives_round_trip`."""
    model = make_model()
    optim = AdamConfig().init()
    model = train(optim, model, rng, 3)
    reloaded = AdamConfig().init().load_record(optim.to_record())
    from_orig, from_reload = step_both(optim, reloaded, model, rng)
    assert_approx_eq(weight(from_reload, "layer_a"), weight(from_orig, "layer_a"), OPTIM_TOL)
    # The check can fail: a fresh Adam (step 1 again) takes another step.
    fresh = AdamConfig().init().step(LR, model.clone(), make_grads(model, random_x(rng)))
    assert np.abs(weight(fresh, "layer_a") - weight(from_orig, "layer_a")).max() > 1e-4


def _layer_a_adam():
    return sgd().with_group(ParamGroup.from_predicate("layer_a"), AdamConfig().build(), None)


def test_group_optimizer_routes_correctly_after_record_round_trip(rng):
    """module_optimizer.rs `group_optimizer_routes_correctly_after_record_round_trip`."""
    model = make_model()
    optim = _layer_a_adam()
    model = train(optim, model, rng, 3)
    record = optim.to_record()
    assert set(record.paths.values()) == {
        "layer_a.weight",
        "layer_a.bias",
        "layer_b.weight",
        "layer_b.bias",
    }
    reloaded = _layer_a_adam().load_record(record)
    from_orig, from_reload = step_both(optim, reloaded, model, rng)
    for layer in ("layer_a", "layer_b"):
        assert_approx_eq(weight(from_reload, layer), weight(from_orig, layer), OPTIM_TOL)


def test_a_record_without_its_paths_routes_group_states_to_the_base(rng):
    """The converse of the routing test: without paths, layer_a's Adam states go to the base
    SGD at load (burn's `optim_from_param(id, None)`), so the restored step differs."""
    model = make_model()
    optim = _layer_a_adam()
    model = train(optim, model, rng, 3)
    reloaded = _layer_a_adam().load_record(dict(optim.to_record()))
    from_orig, from_reload = step_both(optim, reloaded, model, rng)
    assert np.abs(weight(from_reload, "layer_a") - weight(from_orig, "layer_a")).max() > 1e-4
    assert_approx_eq(weight(from_reload, "layer_b"), weight(from_orig, "layer_b"), OPTIM_TOL)


def test_with_group_clears_state_for_matching_params(rng):
    """module_optimizer.rs `with_group_clears_state_for_matching_params`: burn counts the
    record's scalar keys containing `time` (one per Adam state); here, states with `time`."""
    model = make_model()
    optim = AdamConfig().init()
    model = train(optim, model, rng, 2)
    assert sum(hasattr(s, "time") for s in optim.to_record().values()) == 4
    optim = optim.with_group(ParamGroup.from_predicate("layer_a"), SgdConfig().build(), None)
    assert len(optim.to_record()) == 2  # cleared at once, before any step
    optim.step(LR, model.clone(), make_grads(model, random_x(rng)))
    record = optim.to_record()
    assert sum(hasattr(s, "time") for s in record.values()) == 2
    timed = {record.paths[pid] for pid, s in record.items() if hasattr(s, "time")}
    assert timed == {"layer_b.weight", "layer_b.bias"}
    assert all(s.time == 3 for s in record.values() if hasattr(s, "time"))


def test_group_grad_clipping_applies_only_to_matching_params(rng):
    """module_optimizer.rs `group_grad_clipping_applies_only_to_matching_params`."""
    model = make_model()
    lr_value, threshold = 0.01, 0.01
    bound = np.float32(lr_value * np.float64(np.float32(threshold)))
    optim = sgd().with_group(
        ParamGroup.from_predicate("layer_a"),
        SgdConfig().build(),
        GradientClipping.Value(threshold),
    )
    assert optim.has_gradient_clipping() and optim.grad_clipping is None
    x = random_x(rng, 100.0, 200.0)
    before_a, before_b = weight(model, "layer_a"), weight(model, "layer_b")
    model = optim.step(ModuleLearningRate(lr_value), model, make_grads(model, x))
    eps = np.float32(1e-6)
    assert (np.abs(before_a - weight(model, "layer_a")) <= bound + eps).all()
    assert (np.abs(before_b - weight(model, "layer_b")) > bound + eps).any()


def test_record_without_paths_loads_without_panic(rng):
    """module_optimizer.rs `record_without_paths_loads_without_panic` (`record.paths.clear()`)."""
    model = make_model()
    optim = AdamConfig().init()
    model = train(optim, model, rng, 1)
    record = optim.to_record()
    record.paths.clear()
    loaded = AdamConfig().init().load_record(record)
    from_orig, from_reload = step_both(optim, loaded, model, rng)
    for layer in ("layer_a", "layer_b"):
        assert_approx_eq(weight(from_reload, layer), weight(from_orig, layer), OPTIM_TOL)


def test_a_param_keeps_the_optimizer_it_was_resolved_to(rng):
    """burn's mapper takes a stateful param's optimizer and clipping from its context:
    `with_grad_clipping` after the first step does not reach params that already have state,
    while `load_record` resolves the loaded states against the groups as they are now."""
    model = make_model()
    optim = AdamConfig().init()
    model = train(optim, model, rng, 1)
    record = optim.to_record()
    optim.with_grad_clipping(GradientClipping.Value(1e-9))
    tight = AdamConfig().init().with_grad_clipping(GradientClipping.Value(1e-9))
    tight.load_record(record)
    free = AdamConfig().init().load_record(record)
    x = random_x(rng)
    late, unclipped, clipped = (
        o.step(LR, model.clone(), make_grads(model, x)) for o in (optim, free, tight)
    )
    assert_approx_eq(weight(late, "layer_a"), weight(unclipped, "layer_a"), 0.0)
    assert np.abs(weight(late, "layer_a") - weight(clipped, "layer_a")).max() > 1e-4


def test_the_last_matching_group_wins_and_unmatched_params_use_the_base(rng):
    """`optim_from_param`: `filter_map(..).next_back()` over the groups, base first."""
    model = make_model()
    x = random_x(rng)
    optim = (
        sgd()
        .with_group(ParamGroup.from_predicate("layer"), SgdConfig().build(), None)
        .with_group(
            ParamGroup.from_predicate("layer_a"),
            SgdConfig(weight_decay=WeightDecayConfig(10.0)).build(),
            None,
        )
    )
    grads = make_grads(model, x)
    plain = sgd().step(LR, model.clone(), make_grads(model, x))
    stepped = optim.step(LR, model.clone(), grads)
    assert_approx_eq(weight(stepped, "layer_b"), weight(plain, "layer_b"), 0.0)
    # The later group's decay: w - lr (g + 10 w) = plain - 0.1 w (a first-wins rule: plain).
    decayed = weight(plain, "layer_a") - np.float32(LR * 10.0) * weight(model, "layer_a")
    assert_approx_eq(weight(stepped, "layer_a"), decayed, 1e-6)
    assert np.abs(weight(stepped, "layer_a") - weight(plain, "layer_a")).max() > 1e-3


def test_muon_for_the_weights_and_adamw_for_the_rest(rng):
    """burn's use of groups for Muon (2-D params only): the base AdamW takes the biases,
    which Muon alone refuses with its rank panic."""
    model = make_model()
    x = random_x(rng)
    with pytest.raises(ShapeError):
        MuonConfig().init().step(LR, model.clone(), make_grads(model, x))
    optim = (
        AdamWConfig()
        .init()
        .with_group(ParamGroup.from_predicate("weight"), MuonConfig().build(), None)
    )
    stepped = optim.step(LR, model.clone(), make_grads(model, x))
    muon_only = MuonConfig().build()
    grad = make_grads(model, x).get(model.layer_a.weight.id)
    expected, _ = muon_only.step(LR, model.layer_a.weight.val(), grad)
    assert_approx_eq(weight(stepped, "layer_a"), expected.numpy(), 0.0)
    adamw = AdamWConfig().init().step(LR, model.clone(), make_grads(model, x))
    bias = stepped.layer_b.bias.val().numpy()
    assert_approx_eq(bias, adamw.layer_b.bias.val().numpy(), 0.0)


def test_with_group_refuses_what_burn_does_not_compile():
    with pytest.raises(TypeError, match="per-tensor optimizer"):
        sgd().with_group(ParamGroup.all(), AdamConfig(), None)
    with pytest.raises(TypeError, match="ParamGroup"):
        sgd().with_group("layer_a", AdamConfig().build(), None)
    with pytest.raises(TypeError, match="lr must be a float or a ModuleLearningRate"):
        sgd().step("0.1", make_model(), GradientsParams())


# ---- module_lr_scheduler.rs ---------------------------------------------------------------


def check_approx(actual: float, expected: float) -> None:
    assert abs(actual - expected) < EPSILON, f"expected {expected}, got {actual}"


def test_step_yields_constant_default_lr():
    """module_lr_scheduler.rs `step_yields_constant_default_lr`."""
    scheduler = ModuleLrScheduler(0.01)
    for _ in range(3):
        check_approx(scheduler.step().base(), 0.01)


def test_step_advances_linear_default_scheduler():
    """module_lr_scheduler.rs `step_advances_linear_default_scheduler`."""
    scheduler = ModuleLrScheduler(LinearLrSchedulerConfig(0.9, 0.5, 4).build())
    for expected in (0.9, 0.8, 0.7, 0.6, 0.5, 0.5):
        check_approx(scheduler.step().base(), expected)


def test_save_load_preserves_default_scheduler_state():
    """module_lr_scheduler.rs `save_load_preserves_default_scheduler_state`."""

    def make():
        return ModuleLrScheduler(LinearLrSchedulerConfig(1.0, 0.1, 9).build())

    original, truth = make(), make()
    for _ in range(5):
        original.step()
        truth.step()
    restored = make().load_record(original.to_record())
    assert make().step().base() == 1.0  # without the record it would start over
    for _ in range(4):
        check_approx(restored.step().base(), truth.step().base())


def test_group_param_gets_group_lr():
    """module_lr_scheduler.rs `group_param_gets_group_lr`."""
    id_group, id_default = ParamId.new(), ParamId.new()
    scheduler = (
        ModuleLrSchedulerConfig(0.001).with_group(ParamGroup.from_ids([id_group]), 0.1).init()
    )
    policy = scheduler.step()
    check_approx(policy.lr_from_param(id_group, None), 0.1)
    check_approx(policy.lr_from_param(id_default, None), 0.001)


def test_path_group_matches_param_by_path_substring():
    """module_lr_scheduler.rs `path_group_matches_param_by_path_substring`."""
    scheduler = (
        ModuleLrSchedulerConfig(0.001).with_group(ParamGroup.from_predicate("backbone"), 0.1).init()
    )
    policy = scheduler.step()
    pid = ParamId.new()
    check_approx(policy.lr_from_param(pid, "model.backbone.layer.weight"), 0.1)
    check_approx(policy.lr_from_param(pid, "model.head.layer.weight"), 0.001)


def test_multiple_groups_are_independent():
    """module_lr_scheduler.rs `multiple_groups_are_independent`."""
    id_a, id_b, id_default = ParamId.new(), ParamId.new(), ParamId.new()
    scheduler = (
        ModuleLrSchedulerConfig(LinearLrSchedulerConfig(0.001, 0.0001, 4))
        .with_group(ParamGroup.from_ids([id_a]), LinearLrSchedulerConfig(0.1, 0.01, 4))
        .with_group(ParamGroup.from_ids([id_b]), LinearLrSchedulerConfig(0.5, 0.05, 4))
        .init()
    )
    policy = scheduler.step()
    check_approx(policy.lr_from_param(id_a, None), 0.1)
    check_approx(policy.lr_from_param(id_b, None), 0.5)
    check_approx(policy.lr_from_param(id_default, None), 0.001)
    policy = scheduler.step()
    lr_a, lr_b = policy.lr_from_param(id_a, None), policy.lr_from_param(id_b, None)
    lr_default = policy.lr_from_param(id_default, None)
    assert 0.01 < lr_a < 0.1, f"group-a LR should have decayed: {lr_a}"
    assert 0.05 < lr_b < 0.5, f"group-b LR should have decayed: {lr_b}"
    assert 0.0001 < lr_default < 0.001, f"default LR should have decayed: {lr_default}"


def test_save_load_with_groups_preserves_state():
    """module_lr_scheduler.rs `save_load_with_groups_preserves_state`."""
    id_group = ParamId.new()

    def make():
        return (
            ModuleLrSchedulerConfig(LinearLrSchedulerConfig(0.01, 0.001, 9))
            .with_group(ParamGroup.from_ids([id_group]), LinearLrSchedulerConfig(0.1, 0.01, 9))
            .init()
        )

    original, truth = make(), make()
    for _ in range(5):
        original.step()
        truth.step()
    record = original.to_record()
    assert set(record) == {"0.remaining_iters", "1.remaining_iters"}
    restored = make().load_record(record)
    for _ in range(4):
        lr_restored = restored.step().lr_from_param(id_group, None)
        check_approx(lr_restored, truth.step().lr_from_param(id_group, None))


def test_an_empty_policy_panics_with_burns_text():
    """`ModuleLearningRate::default()` has no group: burn's `expect` texts."""
    with pytest.raises(RuntimeError, match=r"^Should match at least one parameter group\.$"):
        ModuleLearningRate().lr_from_param(ParamId.new())
    with pytest.raises(RuntimeError, match=r"^Should have at least one learning rate\.$"):
        ModuleLearningRate().base()


def test_the_config_reports_burns_build_error():
    config = ModuleLrSchedulerConfig(0.01).with_group(
        ParamGroup.all(), LinearLrSchedulerConfig(0.0, 0.1, 4)
    )
    with pytest.raises(ValueError, match=r"^Initial learning rate must be greater than 0"):
        config.init()


# ---- group.rs -----------------------------------------------------------------------------


def test_all_matches_any_parameter():
    """group.rs `all_matches_any_parameter`."""
    assert ParamGroup.all().matches(ParamId.new(), None)


def test_explicit_matches_only_selected_ids():
    """group.rs `explicit_matches_only_selected_ids`."""
    pid, other = ParamId.new(), ParamId.new()
    group = ParamGroup.from_ids([pid])
    assert group.matches(pid, None) and not group.matches(other, None)


def test_path_matcher_requires_path_and_matches_exactly():
    """group.rs `path_matcher_requires_path_and_matches_exactly`."""
    group, pid = ParamGroup.from_path("model.backbone.weight"), ParamId.new()
    assert group.matches(pid, "model.backbone.weight")
    assert not group.matches(pid, "model.backbone.bias")
    assert not group.matches(pid, None)


def test_predicate_matcher_matches_substrings():
    """group.rs `predicate_matcher_matches_substrings`."""
    group, pid = ParamGroup.from_predicate("backbone"), ParamId.new()
    assert group.matches(pid, "model.backbone.weight")
    assert not group.matches(pid, "model.other.weight")


def test_regex_matcher_matches_pattern():
    """group.rs `regex_matcher_matches_pattern`."""
    group, pid = ParamGroup.from_regex(r"^model\.layer\.[0-9]+\.weight$"), ParamId.new()
    assert group.matches(pid, "model.layer.3.weight")
    assert not group.matches(pid, "model.layer.weight")


def test_ids_from_module_collects_all_param_ids():
    """group.rs `ids_from_module_collects_all_param_ids` (SimpleLinear 4 -> 8)."""
    module = LinearConfig(4, 8).init(AD)
    group = ParamGroup.ids_from_module(module)
    assert group.matches(module.weight.id, "weight")
    assert group.matches(module.bias.id, "bias")
    assert not group.matches(ParamId.new(), "weight")


def test_fuse_combines_multiple_groups():
    """group.rs `fuse_combines_multiple_groups`."""
    pid = ParamId.new()
    fused = ParamGroup.from_ids([pid]).fuse(ParamGroup.from_path("model.layer.weight"))
    assert fused.matches(pid, "model.other.bias")
    assert fused.matches(ParamId.new(), "model.layer.weight")
    assert not fused.matches(ParamId.new(), "model.layer.bias")


def test_exclude_removes_matching_ids_from_a_group():
    """group.rs `exclude_removes_matching_ids_from_a_group`."""
    pid, excluded = ParamId.new(), ParamId.new()
    group = ParamGroup.from_ids([pid, excluded]).exclude(ParamGroup.from_ids([excluded]))
    assert group.matches(pid, None) and not group.matches(excluded, None)


def test_exclude_filters_path_matches():
    """group.rs `exclude_filters_path_matches`."""
    pid = ParamId.new()
    group = ParamGroup.from_predicate("backbone").exclude(
        ParamGroup.from_path("model.backbone.bias")
    )
    assert group.matches(pid, "model.backbone.weight")
    assert not group.matches(pid, "model.backbone.bias")


def test_exclude_ignores_excludes_on_the_provided_group():
    """group.rs `exclude_ignores_excludes_on_the_provided_group`."""
    pid = ParamId.new()
    excluded = ParamGroup.from_path("model.backbone.bias").exclude(
        ParamGroup.from_path("model.backbone.weight")
    )
    group = ParamGroup.from_path("model.backbone.weight").exclude(excluded)
    assert group.matches(pid, "model.backbone.weight")
    assert not group.matches(pid, "model.backbone.bias")


def test_from_any_predicates_matches_any_predicate():
    """group.rs `from_any_predicates_matches_any_predicate`."""
    group, pid = ParamGroup.from_any_predicates(["backbone", "encoder"]), ParamId.new()
    assert group.matches(pid, "model.backbone.weight")
    assert group.matches(pid, "model.encoder.weight")
    assert not group.matches(pid, "model.decoder.weight")


def test_from_any_regexes_matches_any_pattern():
    """group.rs `from_any_regexes_matches_any_pattern`."""
    group = ParamGroup.from_any_regexes([r"^model\.layer\.[0-9]+\.weight$", r"^model\.bias$"])
    pid = ParamId.new()
    assert group.matches(pid, "model.layer.3.weight")
    assert group.matches(pid, "model.bias")
    assert not group.matches(pid, "model.layer.weight")
    assert not group.matches(pid, "model.other.weight")


def test_from_regexes_with_invalid_pattern():
    """group.rs `from_regexes_with_invalid_pattern`."""
    for build in (
        lambda: ParamGroup.from_regex(r"[invalid("),
        lambda: ParamGroup.from_regexes([r"[invalid("]),
        lambda: ParamGroup.from_any_regexes([r"[invalid("]),
    ):
        with pytest.raises(ParamGroupError, match=r"^Invalid regex pattern: "):
            build()


def test_burns_edge_rules_of_the_matchers():
    """From group.rs's code: a fused group loses its excludes; an empty predicate list matches
    every path but not a missing one; an empty list of exact paths matches nothing; regexes
    are unanchored."""
    pid = ParamId.new()
    excluding = ParamGroup.all().exclude(ParamGroup.from_ids([pid]))
    assert not excluding.matches(pid, None)
    assert excluding.fuse(ParamGroup.from_paths([])).matches(pid, None)
    assert ParamGroup.from_any_predicates([]).matches(pid, "x")
    assert not ParamGroup.from_any_predicates([]).matches(pid, None)
    assert not ParamGroup.from_paths([]).matches(pid, "x")
    assert ParamGroup.from_regex("layer").matches(pid, "model.layer.weight")


# ---- module paths -------------------------------------------------------------------------


def test_a_params_path_is_burns_mapper_path():
    """burn's `ModuleOptimizerMapper` path: field names from the stepped module down, list
    items by index, the top module's name left out (derive `enter_module(field)`, Vec
    `enter_module(index)`)."""

    class Stack(Module):
        def __init__(self) -> None:
            self.blocks = [LinearConfig(2, 2).init(AD), LinearConfig(2, 2).init(AD)]

    model = Stack()
    optim = sgd()
    x = Tensor.ones((1, 2), AD)
    loss = model.blocks[1].forward(model.blocks[0].forward(x)).sum()
    optim.step(LR, model, GradientsParams.from_grads(loss.backward(), model))
    assert sorted(optim.to_record().paths.values()) == [
        "blocks.0.bias",
        "blocks.0.weight",
        "blocks.1.bias",
        "blocks.1.weight",
    ]


# ---- PyTorch: torch.optim param groups and per-group LambdaLR ---------------------------

STEPS = 8
A1_TOL = 1e-6  # the float32 default of the plain optimizers' cases (harness.tolerances)
FC1_LR, FC2_LR, FC1_WD, MU = 0.1, 0.05, 0.01, float(np.float32(0.9))


def _torch_a1_run(groups_of, scheduler=None):
    model, x, y = a1_torch()
    optim = torch.optim.SGD(groups_of(model), lr=FC2_LR)
    sched = None if scheduler is None else scheduler(optim)
    for _ in range(STEPS):
        optim.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optim.step()
        if sched is not None:
            sched.step()
    return {k: v.double().numpy() for k, v in torch_params(model).items()}


def _engine_a1_run(optim, policy):
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    loss_fn = CrossEntropyLossConfig().init(device)
    for _ in range(STEPS):
        loss = loss_fn.forward(model.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(policy(), model, grads)
    return {k: v.numpy().astype(np.float64) for k, v in engine_params(model).items()}


def _torch_two_groups(model):
    return [
        {
            "params": list(model.fc1.parameters()),
            "lr": FC1_LR,
            "weight_decay": float(np.float32(FC1_WD)),
            "momentum": MU,
        },
        {"params": list(model.fc2.parameters())},
    ]


def _engine_two_groups():
    fc1 = SgdConfig(
        weight_decay=WeightDecayConfig(FC1_WD),
        momentum=MomentumConfig(momentum=0.9, dampening=0.0),
    )
    return SgdConfig().init().with_group(ParamGroup.from_predicate("fc1"), fc1.build(), None)


def _assert_close(got: dict, want: dict, tol: float) -> None:
    assert got.keys() == want.keys()
    for key in want:
        gap = float(np.abs(got[key] - want[key]).max())
        assert gap <= tol, f"{key}: max |diff| {gap:.3e} > {tol:g}"


def test_two_groups_agree_with_torch_param_groups():
    """fc1: lr 0.1, weight decay 0.01, momentum 0.9; fc2: lr 0.05, plain. PyTorch's groups
    against a fc1 group optimizer and a fc1 rate group."""
    rates = ModuleLrScheduler(FC2_LR).with_group(ParamGroup.from_predicate("fc1"), FC1_LR)
    got = _engine_a1_run(_engine_two_groups(), rates.step)
    want = _torch_a1_run(_torch_two_groups)
    _assert_close(got, want, A1_TOL)
    # Not the same as one group: the fc1 settings matter by far more than the tolerance.
    single = _torch_a1_run(lambda m: m.parameters())
    assert np.abs(single["fc1.weight"] - want["fc1.weight"]).max() > 1e-3


def _linear_factor(e: int) -> float:
    """LinearLrSchedulerConfig(0.1, 0.01, 4) over FC1_LR, at PyTorch's epoch e."""
    return (0.1 + (0.01 - 0.1) * min(e, 4) / 4) / FC1_LR


def test_per_group_schedulers_agree_with_a_per_group_lambda_lr():
    """fc1 on a linear schedule, fc2 on an exponential one: `LambdaLR(optim, [f1, f2])` (the
    LR in each group when `optim.step()` runs) against a ModuleLrScheduler with a scheduler
    per group (its `step()` before each optimizer step)."""
    rates = ModuleLrScheduler(ExponentialLrSchedulerConfig(FC2_LR, 0.8).build()).with_group(
        ParamGroup.from_predicate("fc1"), LinearLrSchedulerConfig(0.1, 0.01, 4).build()
    )
    got = _engine_a1_run(_engine_two_groups(), rates.step)
    want = _torch_a1_run(
        _torch_two_groups,
        lambda o: torch.optim.lr_scheduler.LambdaLR(o, [_linear_factor, lambda e: 0.8**e]),
    )
    _assert_close(got, want, A1_TOL)
    constant = _torch_a1_run(_torch_two_groups)
    assert np.abs(constant["fc2.weight"] - want["fc2.weight"]).max() > 1e-3


# ---- where burn's groups are not PyTorch's -------------------------------------------------


def test_a_param_in_two_groups():
    """PyTorch refuses it; burn takes the last group (here fc1 in both: the second wins)."""
    model, _, _ = a1_torch()
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter"):
        torch.optim.SGD(
            [{"params": model.parameters()}, {"params": model.fc1.parameters(), "lr": 1.0}],
            lr=0.1,
        )
    policy = ModuleLrScheduler(0.1).with_group(ParamGroup.from_predicate("fc1"), 1.0).step()
    assert policy.lr_from_param(ParamId.new(), "fc1.weight") == 1.0
    assert policy.lr_from_param(ParamId.new(), "fc2.weight") == 0.1


def test_a_param_in_no_group():
    """A tensor in no PyTorch group is never updated; burn's base group catches it."""
    fc1_only = _torch_a1_run(lambda m: [{"params": list(m.fc1.parameters()), "lr": FC1_LR}])
    initial = {k: v.double().numpy() for k, v in torch_params(a1_torch()[0]).items()}
    assert np.array_equal(fc1_only["fc2.weight"], initial["fc2.weight"])
    rates = ModuleLrScheduler(FC2_LR).with_group(ParamGroup.from_predicate("fc1"), FC1_LR)
    engine = _engine_a1_run(SgdConfig().init(), rates.step)
    assert np.abs(engine["fc2.weight"] - initial["fc2.weight"]).max() > 1e-3


def test_adding_a_group_after_training():
    """PyTorch's `add_param_group` refuses a tensor it already holds; burn's `with_group`
    accepts it and drops that param's state (the others keep theirs)."""
    model, x, y = a1_torch()
    optim = torch.optim.Adam(model.parameters(), lr=0.01)
    F.cross_entropy(model(x), y).backward()
    optim.step()
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter"):
        optim.add_param_group({"params": list(model.fc1.parameters())})
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device)
    engine = AdamConfig().init()
    loss = CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    model = engine.step(0.01, model, GradientsParams.from_grads(loss.backward(), model))
    engine.with_group(ParamGroup.from_predicate("fc1"), AdamConfig().build())
    assert sorted(engine.to_record().paths.values()) == ["fc2.bias", "fc2.weight"]
