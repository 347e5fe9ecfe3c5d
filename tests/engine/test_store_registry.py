"""The PyTorch-to-burn rule table: rules decided by the target module's type name, the modules
burn lists (BatchNorm) and omits (InstanceNorm), and the `unpack` hook that packed PyTorch
tensors (LSTM gates, attention in_proj) will use, shown on a test module."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from harness.engine import Device, LinearConfig, Module, Param, Tensor
from harness.engine.store import (
    PYTORCH_TO_BURN_RULES,
    PyTorchRule,
    PytorchStore,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    TensorSnapshot,
    register_pytorch_rule,
    registry,
    split_snapshot,
)

AD = Device.flex().autodiff()


def param(values) -> Param:
    return Param.from_tensor(Tensor.from_numpy(np.asarray(values, np.float32), AD))


class BatchNorm(Module):
    """Stand-in with burn's BatchNorm field names (the real module arrives later); running
    statistics are params here because burn visits its RunningState as a float param."""

    def __init__(self, n: int) -> None:
        self.gamma = param(np.ones(n))
        self.beta = param(np.zeros(n))
        self.running_mean = param(np.zeros(n))
        self.running_var = param(np.ones(n))


class InstanceNorm(Module):
    def __init__(self, n: int) -> None:
        self.gamma = param(np.ones(n))
        self.beta = param(np.zeros(n))


class Holder(Module):
    def __init__(self, norm: Module) -> None:
        self.norm = norm


def _save(tmp_path, state) -> PytorchStore:
    path = tmp_path / "norm.pt"
    torch.save(state, path)
    return PytorchStore.from_file(path)


def test_batch_norm_loads_by_its_type_name(tmp_path):
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(3)
    with torch.no_grad():
        bn.weight.uniform_()
        bn.bias.uniform_()
    bn(torch.randn(8, 3))  # training mode: running statistics move off their defaults
    store = _save(tmp_path, {f"norm.{k}": v for k, v in bn.state_dict().items()})
    model, result = store.apply_to(Holder(BatchNorm(3)))
    assert result.applied == [
        "norm.gamma",
        "norm.beta",
        "norm.running_mean",
        "norm.running_var",
    ]
    assert result.unused == ["norm.bias", "norm.num_batches_tracked", "norm.weight"]
    for burn, torch_name in [("gamma", "weight"), ("beta", "bias"), ("running_var",) * 2]:
        got = getattr(model.norm, burn).val().numpy()
        assert got.tobytes() == getattr(bn, torch_name).detach().numpy().tobytes()


def test_instance_norm_is_not_renamed_because_burn_omits_it(tmp_path):
    norm = torch.nn.InstanceNorm1d(3, affine=True)
    store = _save(tmp_path, {f"norm.{k}": v for k, v in norm.state_dict().items()})
    _, result = store.allow_partial(True).apply_to(Holder(InstanceNorm(3)))
    assert result.missing_paths() == ["norm.beta", "norm.gamma"]
    assert result.unused == ["norm.bias", "norm.weight"]


def test_a_registered_rule_applies_to_modules_of_that_name(tmp_path, monkeypatch):
    store = _save(tmp_path, {"norm.weight": torch.full((3,), 2.0), "norm.bias": torch.ones(3)})
    monkeypatch.setitem(
        PYTORCH_TO_BURN_RULES, "Struct:InstanceNorm", PyTorchRule({"weight": "gamma"})
    )
    model, result = store.allow_partial(True).apply_to(Holder(InstanceNorm(3)))
    assert result.applied == ["norm.gamma"]
    assert result.missing_paths() == ["norm.beta"]
    assert model.norm.gamma.val().numpy().tolist() == [2.0, 2.0, 2.0]


def test_register_refuses_to_replace_silently(monkeypatch):
    monkeypatch.setattr(
        "harness.engine.store.registry.PYTORCH_TO_BURN_RULES", dict(PYTORCH_TO_BURN_RULES)
    )
    with pytest.raises(ValueError, match="a PyTorch rule for Struct:Linear exists"):
        register_pytorch_rule("Linear", PyTorchRule())
    register_pytorch_rule(InstanceNorm, PyTorchRule({"weight": "gamma"}))
    assert registry.PYTORCH_TO_BURN_RULES["Struct:InstanceNorm"].pytorch_name("gamma") == "weight"
    register_pytorch_rule("Struct:InstanceNorm", PyTorchRule(), replace=True)
    assert registry.PYTORCH_TO_BURN_RULES["Struct:InstanceNorm"].pytorch_name("gamma") is None


class Packed(Module):
    """Two Linears that PyTorch stores as one packed Linear (like attention's in_proj): rows
    0..1 of `proj.weight` are `first`, rows 2..3 are `second`."""

    def __init__(self) -> None:
        self.first = LinearConfig(3, 2).init(AD)
        self.second = LinearConfig(3, 2).init(AD)


class Outer(Module):
    def __init__(self) -> None:
        self.block = Packed()


def _unpack(path: str, snapshots: dict) -> dict:
    for name in ("weight", "bias"):
        packed = snapshots.pop(f"{path}.proj.{name}", None)
        if packed is not None:
            first, second = split_snapshot(packed, 2)
            snapshots[f"{path}.first.{name}"] = first.with_path(f"{path}.first.{name}")
            snapshots[f"{path}.second.{name}"] = second.with_path(f"{path}.second.{name}")
    return snapshots


def test_unpack_splits_a_packed_tensor_before_matching(tmp_path):
    torch.manual_seed(1)
    proj = torch.nn.Linear(3, 4)
    path = tmp_path / "packed.safetensors"
    save_file({f"block.proj.{k}": v for k, v in proj.state_dict().items()}, path)
    rules = {**PYTORCH_TO_BURN_RULES, "Struct:Packed": PyTorchRule(unpack=_unpack)}
    store = SafetensorsStore.from_file(path).with_from_adapter(PyTorchToBurnAdapter(rules))
    model, result = store.apply_to(Outer())
    assert result.applied == [
        "block.first.weight",
        "block.first.bias",
        "block.second.weight",
        "block.second.bias",
    ]
    assert result.unused == [] and result.missing == []
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    engine = np.concatenate(
        [
            model.block.first(Tensor.from_numpy(x, AD)).numpy(),
            model.block.second(Tensor.from_numpy(x, AD)).numpy(),
        ],
        axis=1,
    )
    np.testing.assert_allclose(engine, proj(torch.from_numpy(x)).detach().numpy(), atol=1e-6)
    # Without the rule the packed keys match nothing.
    _, plain = (
        SafetensorsStore.from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter())
        .allow_partial(True)
        .apply_to(Outer())
    )
    assert plain.applied == [] and plain.unused == ["block.proj.bias", "block.proj.weight"]


def test_split_snapshot_refuses_uneven_parts():
    snapshot = TensorSnapshot.from_data(np.zeros((5, 2), np.float32), ["w"])
    with pytest.raises(ValueError, match="w: cannot split dim 0 of size 5 into 2 parts"):
        split_snapshot(snapshot, 2)
    assert [s.to_data().shape for s in split_snapshot(snapshot, 1)] == [(5, 2)]
