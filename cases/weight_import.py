"""A PyTorch checkpoint loaded into the engine through the weight importer.

A small model (Linear 4->8, ReLU, LayerNorm(8), Linear 8->3) with fixed weights is written by
torch (``torch.save`` in the zip and the legacy format, and ``safetensors.torch.save_file``)
into a temporary folder, on each side by the same helper. PyTorch loads it with
``load_state_dict``; the engine with ``PytorchStore`` / ``SafetensorsStore``, which read the
files without torch and apply burn's ``PyTorchToBurnAdapter`` (Linear weights transposed,
LayerNorm ``weight`` / ``bias`` as ``gamma`` / ``beta``). The weights, recorded in PyTorch's
layout and names on both sides, agree bit for bit, and the forward outputs within 1e-6.

Where the reports part: burn's ``ApplyResult.unused`` also lists the LayerNorm keys it applied
under their alternative names (``norm.weight``, ``norm.bias``), which PyTorch's
``unexpected_keys`` does not; a float64 file gives the engine float64 params (burn keeps the
file's dtype) where PyTorch casts into its float32 parameters; and a shape mismatch is refused
by both, PyTorch naming its ``[out, in]`` shapes, the engine burn's transposed ones. Missing and
unused keys are recorded sorted on both sides (burn sorts them; PyTorch lists them in model
order).
"""

import tempfile
from pathlib import Path

import numpy as np
import safetensors.torch
import torch

from harness.case import agree, capture, differ, expect, predicate
from harness.engine import (
    Device,
    LayerNormConfig,
    LinearConfig,
    Module,
    PytorchStore,
    PyTorchToBurnAdapter,
    Relu,
    SafetensorsStore,
    Tensor,
)
from harness.record import CapturedError
from harness.tolerances import Tolerance

SHAPES = {
    "fc1.weight": (8, 4),
    "fc1.bias": (8,),
    "norm.weight": (8,),
    "norm.bias": (8,),
    "fc2.weight": (3, 8),
    "fc2.bias": (3,),
}
NORM_KEYS = ["norm.bias", "norm.weight"]
EXACT = Tolerance.exact("the importer moves values (transpose, rename) and never rounds them")


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(14)
    return {k: rng.uniform(-0.5, 0.5, shape).astype(np.float32) for k, shape in SHAPES.items()}


def _input() -> np.ndarray:
    return np.random.default_rng(15).standard_normal((5, 4)).astype(np.float32)


class TorchNet(torch.nn.Module):
    def __init__(self, d_out: int = 3) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.norm = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, d_out)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))


class TorchPartial(torch.nn.Module):
    """The model without fc2, with a head the checkpoint does not have."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 2)


class Net(Module):
    def __init__(self, device: Device, d_out: int = 3) -> None:
        self.fc1 = LinearConfig(4, 8).init(device)
        self.act = Relu()
        self.norm = LayerNormConfig(8).init(device)
        self.fc2 = LinearConfig(8, d_out).init(device)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))


class Partial(Module):
    def __init__(self, device: Device) -> None:
        self.fc1 = LinearConfig(4, 8).init(device)
        self.norm = LayerNormConfig(8).init(device)
        self.head = LinearConfig(8, 2).init(device)


def _write_checkpoints(folder: Path) -> dict[str, Path]:
    """The fixture, written by torch: the same files for both sides."""
    state = {k: torch.from_numpy(v) for k, v in _weights().items()}
    paths = {
        "pt": folder / "net.pt",
        "legacy": folder / "net_legacy.pt",
        "safetensors": folder / "net.safetensors",
        "float64": folder / "net64.pt",
    }
    torch.save(state, paths["pt"])
    torch.save(state, paths["legacy"], _use_new_zipfile_serialization=False)
    safetensors.torch.save_file(state, paths["safetensors"])
    torch.save({k: v.double() for k, v in state.items()}, paths["float64"])
    return paths


def _torch_loaded(state) -> TorchNet:
    net = TorchNet()
    net.load_state_dict(state)
    return net


def torch_side():
    x = torch.from_numpy(_input())
    with tempfile.TemporaryDirectory() as tmp:
        paths = _write_checkpoints(Path(tmp))
        state = torch.load(paths["pt"], weights_only=True)
        full = TorchNet()
        full_result = full.load_state_dict(state, strict=False)
        partial = TorchPartial()
        head_before = partial.head.weight.detach().clone()
        partial_result = partial.load_state_dict(state, strict=False)
        values = {
            "full.forward": full(x),
            "full.weights": dict(full.state_dict()),
            "full.missing": sorted(full_result.missing_keys),
            "full.unused": sorted(full_result.unexpected_keys),
            "legacy.forward": _torch_loaded(torch.load(paths["legacy"], weights_only=True))(x),
            "safetensors.forward": _torch_loaded(safetensors.torch.load_file(paths["safetensors"]))(
                x
            ),
            "partial.missing": sorted(partial_result.missing_keys),
            "partial.unused": sorted(partial_result.unexpected_keys),
            "partial.head_kept": bool(torch.equal(partial.head.weight, head_before)),
            "mismatch.error": capture(lambda: TorchNet(d_out=5).load_state_dict(state, False)),
            "float64_file.param_dtype": str(
                _torch_loaded(torch.load(paths["float64"], weights_only=True)).fc1.weight.dtype
            ).removeprefix("torch."),
        }
    return values


def _pytorch_layout(model: Net) -> dict[str, np.ndarray]:
    """The engine's params under PyTorch's names, Linear weights transposed back."""
    return {
        "fc1.weight": model.fc1.weight.val().numpy().T,
        "fc1.bias": model.fc1.bias.val(),
        "norm.weight": model.norm.gamma.val(),
        "norm.bias": model.norm.beta.val(),
        "fc2.weight": model.fc2.weight.val().numpy().T,
        "fc2.bias": model.fc2.bias.val(),
    }


def engine_side():
    device = Device.flex().autodiff()
    x = Tensor.from_numpy(_input(), device)
    with tempfile.TemporaryDirectory() as tmp:
        paths = _write_checkpoints(Path(tmp))
        store = PytorchStore.from_file(paths["pt"])
        target = Net(device)
        full, full_result = store.apply_to(target)
        legacy, _ = PytorchStore.from_file(paths["legacy"]).apply_to(Net(device))
        from_safetensors, _ = (
            SafetensorsStore.from_file(paths["safetensors"])
            .with_from_adapter(PyTorchToBurnAdapter())
            .apply_to(Net(device))
        )
        partial_target = Partial(device)
        partial, partial_result = store.allow_partial(True).apply_to(partial_target)
        mismatch = capture(lambda: store.apply_to(Net(device, d_out=5)))
        _, mismatch_result = store.validate(False).apply_to(Net(device, d_out=5))
        float64, _ = PytorchStore.from_file(paths["float64"]).apply_to(Net(device))
        if isinstance(mismatch, CapturedError):  # the message names the file: keep it stable
            mismatch = CapturedError(mismatch.type, mismatch.message.replace(tmp, "<tmp>"))
    return {
        "full.forward": full.forward(x),
        "full.weights": _pytorch_layout(full),
        "full.missing": full_result.missing_paths(),
        "full.unused": list(full_result.unused),
        "full.applied": list(full_result.applied),
        "full.ids_kept": [p.id for _, p in full.params()] == [p.id for _, p in target.params()],
        "legacy.forward": legacy.forward(x),
        "safetensors.forward": from_safetensors.forward(x),
        "partial.missing": partial_result.missing_paths(),
        "partial.unused": list(partial_result.unused),
        "partial.head_kept": bool(
            np.array_equal(partial.head.weight.val().numpy(), partial_target.head.weight.val())
        ),
        "mismatch.error": mismatch,
        "mismatch.errors": [str(e) for e in mismatch_result.errors],
        "float64_file.param_dtype": str(float64.fc1.weight.val().dtype),
    }


def _plus_norm_keys(torch_keys, engine_keys) -> bool:
    return engine_keys == sorted([*torch_keys, *NORM_KEYS])


def _both_refuse(torch_error, engine_error) -> bool:
    return (
        isinstance(torch_error, CapturedError)
        and isinstance(engine_error, CapturedError)
        and "size mismatch for fc2.weight" in torch_error.message
        and "torch.Size([5, 8])" in torch_error.message
        and "Shape mismatch for 'fc2.weight': expected [8, 5], found [8, 3]" in engine_error.message
    )


CHECKS = [
    agree("full.weights.*", tol=EXACT),
    agree("*.forward"),
    agree("full.missing"),
    agree("partial.missing"),
    agree("partial.head_kept"),
    expect("partial.missing", "engine", ["head.bias", "head.weight"]),
    expect("partial.head_kept", "engine", True),
    expect("full.ids_kept", "engine", True),
    expect(
        "full.applied",
        "engine",
        ["fc1.weight", "fc1.bias", "norm.gamma", "norm.beta", "fc2.weight", "fc2.bias"],
    ),
    differ(
        "*.unused",
        because="harness.engine.store.apply_result.ApplyResult",
        relation=predicate(
            "the engine lists PyTorch's unexpected keys plus the LayerNorm keys it applied "
            "under their alternative names",
            _plus_norm_keys,
        ),
    ),
    expect("partial.unused", "torch", ["fc2.bias", "fc2.weight"]),
    differ(
        "mismatch.error",
        because="harness.engine.store",
        relation=predicate(
            "both refuse the load: PyTorch names [out, in] shapes, the engine burn's [in, out]",
            _both_refuse,
        ),
    ),
    expect(
        "mismatch.errors",
        "engine",
        [
            "Shape mismatch for 'fc2.weight': expected [8, 5], found [8, 3]",
            "Shape mismatch for 'fc2.bias': expected [5], found [3]",
        ],
    ),
    differ(
        "float64_file.param_dtype",
        because="harness.engine.store.applier",
        relation=predicate(
            "PyTorch casts into its float32 params, the engine keeps the file's float64",
            lambda t, e: (t, e) == ("float32", "float64"),
        ),
    ),
]
