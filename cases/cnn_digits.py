"""A LeNet-style CNN trained 20 SGD-momentum steps on scikit-learn's 8x8 digits, both sides.

conv(1->6, 3x3, pad 1) -> relu -> max-pool 2 -> conv(6->12, 3x3, pad 1) -> batch-norm ->
relu -> adaptive avg-pool 2x2 -> flatten -> linear(48->10), cross-entropy, a fixed batch of
the first 64 digits (pixels / 16; scikit-learn's `load_digits` data, read from its file) at
every step, SGD lr 0.05 with momentum 0.9.

Same initial weights: torch builds the model (seed 0) and saves its state_dict with
`torch.save`; the engine loads that file through `PytorchStore` (burn's adapter: the Linear
weight transposed, BatchNorm `weight` / `bias` into `gamma` / `beta`; PyTorch's
`num_batches_tracked` reported unused). Momentum aligned: burn's `MomentumConfig` defaults to
dampening 0.1, PyTorch to 0, so the engine uses `dampening=0.0`; and PyTorch is given the
momentum as burn stores it, float32(0.9) (`MOMENTUM_F32`): the float32 runs are bit-identical
either way (PyTorch rounds the scalar to the tensor's dtype), but with the plain 0.9 the float64
reruns part by that constant alone (measured: 27.9 bits over float64 rounding; with the f32
value 1.5 bits, rounding).

The per-step losses (`steps.loss`, the step on the first axis) are a trajectory: compared
step by step, with both sides rerun in float64 to tell rounding from a formula difference.
The final parameters agree; the BatchNorm running mean agrees; its running variance differs as
documented (burn stores the biased batch variance).
"""

import gzip
import importlib.util
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import agree, differ, expect, localise, predicate, trajectory
from harness.engine import (
    AdaptiveAvgPool2dConfig,
    BatchNormConfig,
    Conv2dConfig,
    CrossEntropyLossConfig,
    Device,
    GradientsParams,
    LinearConfig,
    MaxPool2dConfig,
    Module,
    MomentumConfig,
    PaddingConfig2d,
    PytorchStore,
    SgdConfig,
    Tensor,
)

STEPS = 20
LR = 0.05
BATCH = 64
SGD_MOMENTUM = 0.9
MOMENTUM_F32 = float(np.float32(SGD_MOMENTUM))  # burn's f32 field, as PyTorch's Python float
MOMENTUM = 0.1  # BatchNorm's, the same convention and default on both sides
_N_PER_CHANNEL = BATCH * 4 * 4  # elements per channel at the batch-norm (4x4 after the pool)


def _digits() -> np.ndarray:
    """scikit-learn's digits file, rows of 64 pixels then the label: what
    `sklearn.datasets.load_digits()` reads (its `data` and `target`), found without importing
    scikit-learn, whose import loads SciPy's own BLAS into the process (and so into every
    later record's environment)."""
    root = Path(importlib.util.find_spec("sklearn").submodule_search_locations[0])
    with gzip.open(root / "datasets" / "data" / "digits.csv.gz") as f:
        return np.loadtxt(f, delimiter=",")


def _data(dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    digits = _digits()[:BATCH]
    x = (digits[:, :-1] / 16.0).astype(dtype).reshape(BATCH, 1, 8, 8)
    return x, digits[:, -1].astype(np.int64)


class TorchCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(6, 12, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(12, momentum=MOMENTUM)
        self.fc = torch.nn.Linear(48, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.bn(self.conv2(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, (2, 2)), 1))


class Cnn(Module):
    """The same network in the engine, written as its burn version would be."""

    def __init__(self, device: Device) -> None:
        same = PaddingConfig2d.Explicit(1, 1, 1, 1)
        self.conv1 = Conv2dConfig((1, 6), (3, 3), padding=same).init(device)
        self.pool = MaxPool2dConfig((2, 2)).init()
        self.conv2 = Conv2dConfig((6, 12), (3, 3), padding=same).init(device)
        self.bn = BatchNormConfig(12, momentum=MOMENTUM).init(device)
        self.avg = AdaptiveAvgPool2dConfig((2, 2)).init()
        self.fc = LinearConfig(48, 10).init(device)

    def forward(self, x: Tensor) -> Tensor:
        x = self.pool(self.conv1(x).relu())
        x = self.avg(self.bn(self.conv2(x)).relu())
        return self.fc(x.reshape([x.shape[0], -1]))  # burn: x.flatten(1, 3)


def _initial_state() -> dict:
    torch.manual_seed(0)
    return TorchCnn().state_dict()


def _torch_params(model: TorchCnn) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if "num_batches" not in k}


def _initial_state_in(dtype: torch.dtype) -> dict:
    """The float32 initial weights cast (exactly) to `dtype`, the integer counter kept."""
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in _initial_state().items()}


def torch_side(dtype=torch.float32):
    model = TorchCnn().to(dtype)
    model.load_state_dict(_initial_state_in(dtype))
    optim = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM_F32)
    x, y = (torch.from_numpy(a) for a in _data(str(dtype).removeprefix("torch.")))
    losses = []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
    out = {"steps": {"loss": torch.stack(losses)}}
    out["params"] = _torch_params(model)
    return out


def _engine_params(model: Cnn) -> dict:
    # Recorded under PyTorch's names and layouts: the Linear weight transposed back.
    valid = model.valid()  # burn's valid() syncs the running statistics
    names = {"gamma": "weight", "beta": "bias"}
    out = {}
    for path, param in valid.params():
        module, name = path.rsplit(".", 1)
        value = param.val().numpy()
        if path == "fc.weight":
            value = value.T
        out[f"{module}.{names.get(name, name) if module == 'bn' else name}"] = value
    return out


def engine_side(dtype="float32"):
    device = Device.flex().autodiff()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cnn.pt"  # the params take the file's dtype (harness.engine.store)
        torch.save(_initial_state_in(getattr(torch, dtype)), path)
        model, result = PytorchStore.from_file(path).allow_partial(True).apply_to(Cnn(device))
    out = {"import.unused": sorted(result.unused), "import.missing": sorted(result.missing)}
    optim = SgdConfig(momentum=MomentumConfig(momentum=SGD_MOMENTUM, dampening=0.0)).init()
    loss_fn = CrossEntropyLossConfig().init(device)
    xa, ya = _data(dtype)
    x, y = Tensor.from_numpy(xa, device), Tensor.from_numpy(ya, device)
    losses = []
    for _ in range(STEPS):
        loss = loss_fn.forward(model(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(LR, model, grads)
        losses.append(loss.numpy().reshape(()))  # burn's [1] loss, as PyTorch's 0-d one
    out["steps"] = {"loss": np.stack(losses)}
    out["params"] = _engine_params(model)
    return out


def _unbiased_running_var(torch_var, engine_var) -> bool:
    # Both start at 1 and see the same batch variances v_k: torch adds m * v_k * n / (n - 1),
    # burn m * v_k, so their distances from the untouched (1 - m)^K part scale by n / (n - 1).
    start = (1.0 - MOMENTUM) ** STEPS
    scale = _N_PER_CHANNEL / (_N_PER_CHANNEL - 1)
    t = np.asarray(torch_var, np.float64) - start
    e = np.asarray(engine_var, np.float64) - start
    return bool(np.allclose(t, e * scale, rtol=1e-5, atol=1e-7))


# Where inside the first two steps the sides part (harness.localise): more runs of the
# sides, kept out of the side files.
LOCALISE = localise(steps=2)

CHECKS = [
    # The store lists PyTorch's BatchNorm keys it loaded through the gamma / beta fallback as
    # unused too (harness.engine.store); num_batches_tracked has no burn counterpart.
    expect("import.unused", "engine", ["bn.bias", "bn.num_batches_tracked", "bn.weight"]),
    expect("import.missing", "engine", []),
    trajectory("steps.*"),
    agree("params.conv*"),
    agree("params.fc*"),
    agree("params.bn.weight"),
    agree("params.bn.bias"),
    agree("params.bn.running_mean"),
    differ(
        "params.bn.running_var",
        because="harness.engine.nn.norm.BatchNorm",
        relation=predicate(
            "torch's running variance is the unbiased update (n / (n - 1) times burn's)",
            _unbiased_running_var,
        ),
    ),
]
