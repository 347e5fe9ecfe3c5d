"""Loading PyTorch weights into engine modules: forward outputs and weights against torch, and
what `ApplyResult` reports (applied / missing / unused / skipped / errors) against torch's
`load_state_dict(strict=False)` where torch has a counterpart.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from harness.engine import (
    Device,
    LayerNormConfig,
    LinearConfig,
    Module,
    Param,
    ParamId,
    Relu,
    Tensor,
)
from harness.engine.store import (
    FloatCastAdapter,
    PytorchStore,
    PytorchStoreError,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    TensorSnapshot,
    apply,
)
from harness.engine.store.apply_result import DTypeMismatch, LoadError, ShapeMismatch

AD = Device.flex().autodiff()
PLAIN = Device.flex()
APPLIED = ["fc1.weight", "fc1.bias", "norm.gamma", "norm.beta", "fc2.weight", "fc2.bias"]


class TorchNet(torch.nn.Module):
    def __init__(self, d_out: int = 3) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.norm = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, d_out)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))


class Net(Module):
    def __init__(self, device=AD, d_out: int = 3) -> None:
        self.fc1 = LinearConfig(4, 8).init(device)
        self.act = Relu()
        self.norm = LayerNormConfig(8).init(device)
        self.fc2 = LinearConfig(8, d_out).init(device)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))


def torch_net() -> TorchNet:
    torch.manual_seed(3)
    net = TorchNet()
    with torch.no_grad():  # defaults of ones and zeros would hide a gamma/beta swap
        net.norm.weight.uniform_(0.5, 1.5)
        net.norm.bias.uniform_(-0.5, 0.5)
    return net


def write(tmp_path, net, fmt: str):
    if fmt == "safetensors":
        path = tmp_path / "net.safetensors"
        save_file(net.state_dict(), path)
        return SafetensorsStore.from_file(path).with_from_adapter(PyTorchToBurnAdapter())
    path = tmp_path / "net.pt"
    torch.save(net.state_dict(), path, _use_new_zipfile_serialization=fmt == "pt")
    return PytorchStore.from_file(path)


def value(param: Param) -> np.ndarray:
    return param.val().numpy()


def forward(model: Module, x: np.ndarray) -> np.ndarray:
    return model.forward(Tensor.from_numpy(x, AD)).numpy()


@pytest.mark.parametrize("fmt", ["pt", "pt-legacy", "safetensors"])
def test_a_torch_model_loads_and_agrees(tmp_path, fmt):
    net = torch_net()
    model, result = write(tmp_path, net, fmt).apply_to(Net())
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    want = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(forward(model, x), want, atol=1e-6, rtol=0)
    # Bit-identical weights: the transpose and the renames move values, never round them.
    for burn, weight in [(model.fc1.weight, net.fc1.weight), (model.fc2.weight, net.fc2.weight)]:
        assert value(burn).tobytes() == weight.detach().numpy().T.tobytes()
    assert value(model.norm.gamma).tobytes() == net.norm.weight.detach().numpy().tobytes()
    assert value(model.norm.beta).tobytes() == net.norm.bias.detach().numpy().tobytes()
    assert value(model.fc2.bias).tobytes() == net.fc2.bias.detach().numpy().tobytes()
    assert result.applied == APPLIED
    assert result.missing == [] and result.errors == [] and result.skipped == []
    # burn lists the keys a norm's params were found under (alternative names) as unused.
    assert result.unused == ["norm.bias", "norm.weight"]


def test_ids_device_and_grad_flags_are_the_targets_and_the_target_is_untouched(tmp_path):
    store = write(tmp_path, torch_net(), "pt")
    target = Net()
    frozen_bias = Param.initialized(
        target.fc2.bias.id, Tensor.from_numpy(np.zeros(3, np.float32), AD)
    )
    target.fc2.bias = frozen_bias  # an untracked param stays untracked
    before = {path: value(p).copy() for path, p in target.params()}
    model, _ = store.apply_to(target)
    assert [p.id for _, p in model.params()] == [p.id for _, p in target.params()]
    flags = {path: p.val().is_require_grad() for path, p in model.params()}
    assert flags == {path: path != "fc2.bias" for path, _ in target.params()}
    assert all(p.val().is_autodiff() for _, p in model.params())
    for path, p in target.params():
        assert np.array_equal(value(p), before[path])
    plain, _ = store.apply_to(Net(PLAIN))
    assert not any(p.val().is_autodiff() for _, p in plain.params())


class Partial(Module):
    """Net without fc2 and with a head the file does not have."""

    def __init__(self) -> None:
        self.fc1 = LinearConfig(4, 8).init(AD)
        self.norm = LayerNormConfig(8).init(AD)
        self.head = LinearConfig(8, 2).init(AD)


class TorchPartial(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 2)


def test_missing_and_unused_keys_against_torch(tmp_path):
    net = torch_net()
    store = write(tmp_path, net, "pt")
    target = Partial()
    head_before = value(target.head.weight).copy()
    model, result = store.allow_partial(True).apply_to(target)
    torch_result = TorchPartial().load_state_dict(net.state_dict(), strict=False)

    assert result.missing == [
        ("head.bias", "Struct:Partial.Struct:Linear"),
        ("head.weight", "Struct:Partial.Struct:Linear"),
    ]
    assert result.missing_paths() == sorted(torch_result.missing_keys)
    assert result.unused == ["fc2.bias", "fc2.weight", "norm.bias", "norm.weight"]
    assert set(result.unused) - set(torch_result.unexpected_keys) == {"norm.bias", "norm.weight"}
    assert result.applied == ["fc1.weight", "fc1.bias", "norm.gamma", "norm.beta"]
    assert np.array_equal(value(model.head.weight), head_before)

    with pytest.raises(PytorchStoreError) as err:
        store.apply_to(Partial())
    assert str(err.value) == (
        f"{store.path}: tensors the module needs are missing from the file: head.bias, "
        "head.weight (use .allow_partial(True) to load the rest and get them in the ApplyResult)"
    )
    assert err.value.result.missing_paths() == ["head.bias", "head.weight"]


def test_shape_mismatch_is_an_error_and_keeps_the_param(tmp_path):
    net = torch_net()
    store = write(tmp_path, net, "pt")
    with pytest.raises(RuntimeError, match=r"size mismatch for fc2\.weight"):
        TorchNet(d_out=5).load_state_dict(net.state_dict(), strict=False)
    with pytest.raises(PytorchStoreError) as err:
        store.apply_to(Net(d_out=5))
    assert str(err.value) == (
        f"{store.path}: import errors: Shape mismatch for 'fc2.weight': expected [8, 5], "
        "found [8, 3]; Shape mismatch for 'fc2.bias': expected [5], found [3]"
    )
    target = Net(d_out=5)
    model, result = store.validate(False).apply_to(target)
    assert result.errors == [
        ShapeMismatch("fc2.weight", (8, 5), (8, 3)),
        ShapeMismatch("fc2.bias", (5,), (3,)),
    ]
    assert result.missing == []  # found but wrong: an error, not missing (burn)
    assert result.applied == APPLIED[:4]
    assert np.array_equal(value(model.fc2.weight), value(target.fc2.weight))


def test_keys_renamed_by_regex(tmp_path):
    net = torch_net()
    renamed = {
        key.replace("fc", "encoder.layer").replace("norm.", "encoder.ln."): tensor
        for key, tensor in net.state_dict().items()
    }
    path = tmp_path / "renamed.pt"
    torch.save(renamed, path)
    store = PytorchStore.from_file(path)
    _, result = store.allow_partial(True).apply_to(Net())
    assert result.applied == [] and len(result.missing) == 6
    assert result.unused == sorted(renamed)
    remapped = store.with_key_remapping(r"^encoder\.layer(\d)\.", "fc$1.").with_key_remapping(
        r"^encoder\.ln\.", "norm."
    )
    assert remapped.keys() == sorted(net.state_dict())
    model, result = remapped.apply_to(Net())
    assert result.applied == APPLIED
    assert value(model.fc1.weight).tobytes() == net.fc1.weight.detach().numpy().T.tobytes()


def test_nested_checkpoint_with_top_level_key(tmp_path):
    net = torch_net()
    path = tmp_path / "checkpoint.pt"
    torch.save({"state_dict": net.state_dict(), "epoch": 7}, path)
    store = PytorchStore.from_file(path)
    assert store.keys() == sorted(f"state_dict.{k}" for k in net.state_dict())
    _, result = store.with_top_level_key("state_dict").apply_to(Net())
    assert result.applied == APPLIED


class TorchSeq(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 3)
        )

    def forward(self, x):
        return self.layers(x)


class Seq(Module):
    """burn's `Vec` of modules: ReLU has no params, so it is not in the list."""

    def __init__(self) -> None:
        self.layers = [
            LinearConfig(4, 8).init(AD),
            LayerNormConfig(8).init(AD),
            LinearConfig(8, 3).init(AD),
        ]

    def forward(self, x):
        first, norm, last = self.layers
        return last(norm(first(x).relu()))


def test_sequential_gaps_are_closed_by_contiguous_indices(tmp_path):
    net = TorchSeq()
    path = tmp_path / "seq.pt"
    torch.save(net.state_dict(), path)
    store = PytorchStore.from_file(path)
    keys = store.keys()
    assert keys[:2] == ["layers.0.bias", "layers.0.weight"]
    assert "layers.1.gamma" not in keys and "layers.1.weight" in keys
    model, result = store.apply_to(Seq())
    assert result.applied == [
        f"layers.{i}.{name}"
        for i, names in enumerate([("weight", "bias"), ("gamma", "beta"), ("weight", "bias")])
        for name in names
    ]
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    want = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(forward(model, x), want, atol=1e-6, rtol=0)
    _, gaps = (
        store.map_indices_contiguous(False).validate(False).allow_partial(True).apply_to(Seq())
    )
    assert gaps.missing_paths() == ["layers.1.beta", "layers.1.gamma"]
    assert [str(e) for e in gaps.errors] == [
        "Shape mismatch for 'layers.2.weight': expected [8, 3], found [8]",
        "Shape mismatch for 'layers.2.bias': expected [3], found [8]",
    ]


def test_filter_skips_and_keeps_values(tmp_path):
    store = write(tmp_path, torch_net(), "pt").with_regex(r"^fc1\.")
    target = Net()
    model, result = store.apply_to(target)
    assert result.applied == ["fc1.weight", "fc1.bias"]
    assert result.skipped == ["fc2.bias", "fc2.weight", "norm.beta", "norm.gamma"]
    assert result.missing == []
    assert np.array_equal(value(model.fc2.weight), value(target.fc2.weight))


def test_a_float64_file_gives_float64_params_where_torch_casts(tmp_path):
    net = torch_net().double()
    model, _ = write(tmp_path, net, "pt").apply_to(Net())
    assert {str(p.val().dtype) for _, p in model.params()} == {"float64"}
    assert value(model.fc1.weight).tobytes() == net.fc1.weight.detach().numpy().T.tobytes()
    torch_target = TorchNet()
    torch_target.load_state_dict(net.state_dict())
    assert torch_target.fc1.weight.dtype == torch.float32


def test_half_precision_needs_a_float_cast(tmp_path):
    net = torch_net().half()
    with pytest.raises(PytorchStoreError, match=r"Load error for 'fc1.weight': float16 has no"):
        write(tmp_path, net, "pt").apply_to(Net())
    store = write(tmp_path, net, "safetensors")
    cast = store.with_from_adapter(PyTorchToBurnAdapter().chain(FloatCastAdapter.to("float32")))
    model, result = cast.apply_to(Net())
    assert result.applied == APPLIED
    assert value(model.fc1.weight).tobytes() == net.fc1.weight.float().detach().numpy().T.tobytes()


def test_integer_data_for_a_float_param_is_a_dtype_mismatch(tmp_path):
    state = torch_net().state_dict()
    state["fc1.bias"] = torch.arange(8)
    path = tmp_path / "ints.pt"
    torch.save(state, path)
    _, result = PytorchStore.from_file(path).validate(False).apply_to(Net())
    assert result.errors == [DTypeMismatch("fc1.bias", "float32", "int64")]
    assert str(result.errors[0]) == "DType mismatch for 'fc1.bias': expected float32, found int64"


def test_integer_params_take_int64_and_refuse_what_int64_cannot_hold():
    class Counter(Module):
        def __init__(self) -> None:
            self.count = Param.initialized(ParamId.new(), Tensor.from_ints([0, 0], AD))

    small = TensorSnapshot.from_data(np.array([7, 9], np.uint8), ["count"])
    model, result = apply(Counter(), [small])
    assert result.applied == ["count"] and model.count.val().tolist() == [7, 9]
    assert str(model.count.val().dtype) == "int64"
    huge = TensorSnapshot.from_data(np.array([1, 2**63], np.uint64), ["count"])
    _, result = apply(Counter(), [huge])
    assert result.errors == [LoadError("count", "uint64 values above the int64 range")]


def test_a_failing_read_is_a_load_error(tmp_path):
    store = write(tmp_path, torch_net(), "pt")
    state = store.get_all_snapshots()
    state["fc2.bias"] = state["fc1.bias"].map_data(lambda a: a.reshape(2, 4)).with_path("fc2.bias")
    _, result = apply(Net(), state.values(), adapter=PyTorchToBurnAdapter())
    assert result.errors == [
        LoadError(
            "fc2.bias",
            "Failed to load tensor data: fc2.bias: data has shape [2, 4], the snapshot says [8]",
        ),
    ]
