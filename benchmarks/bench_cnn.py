"""A LeNet-style CNN against PyTorch eager (issue 14), interleaved in one process: one SGD
training step (forward, backward, update) at batch 64 on 1x28x28 inputs, conv2d forward +
backward alone, and the step's peak memory in fresh processes.

The network: conv(1->6, 5x5, pad 2) -> relu -> max-pool 2 -> conv(6->16, 5x5) -> relu ->
max-pool 2 -> flatten -> linear(400->10), cross-entropy. Both sides start from the same
PyTorch weights (imported through `PytorchStore`'s adapter); after the timed rounds both have
taken the same number of steps and their parameters must agree.

Run: ``make bench ARGS=benchmarks/bench_cnn.py``. Peak memory: VmHWM after a reset through
/proc/self/clear_refs, minus the resident set after imports and setup (as bench_train_step).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import mlp
import numpy as np
import peak_memory
import torch
import torch.nn.functional as F

from harness.engine import (
    Conv2dConfig,
    CrossEntropyLossConfig,
    Device,
    GradientsParams,
    LinearConfig,
    MaxPool2dConfig,
    Module,
    PaddingConfig2d,
    PytorchStore,
    SgdConfig,
    Tensor,
    module_ops,
)

BATCH, LR, MEMORY_STEPS = 64, 0.01, 3
MEMORY_FRAMEWORKS = ("engine", "torch")


class TorchLeNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc = torch.nn.Linear(400, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class LeNet(Module):
    def __init__(self, device) -> None:
        self.conv1 = Conv2dConfig((1, 6), (5, 5), padding=PaddingConfig2d.Explicit(2, 2, 2, 2))
        self.conv1 = self.conv1.init(device)
        self.conv2 = Conv2dConfig((6, 16), (5, 5)).init(device)
        self.pool = MaxPool2dConfig((2, 2)).init()
        self.fc = LinearConfig(400, 10).init(device)

    def forward(self, x: Tensor) -> Tensor:
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc(x.reshape([x.shape[0], -1]))


def _data(batch: int):
    rng = np.random.default_rng(14)
    x = rng.random((batch, 1, 28, 28), dtype=np.float32)
    return x, rng.integers(0, 10, batch).astype(np.int64)


def sides(batch: int = BATCH) -> dict:
    """Engine and torch trainers from the same weights: `step()` and `params()` each."""
    torch.manual_seed(14)
    ref = TorchLeNet()
    device = Device.flex().autodiff()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lenet.pt"
        torch.save(ref.state_dict(), path)
        model, result = PytorchStore.from_file(path).apply_to(LeNet(device))
    assert not (result.missing or result.errors), result
    x_np, y_np = _data(batch)
    x, y = Tensor.from_numpy(x_np, device), Tensor.from_numpy(y_np, device)
    state = {"model": model}
    optim, loss_fn = SgdConfig().init(), CrossEntropyLossConfig().init(device)
    optim_t = torch.optim.SGD(ref.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def engine_step():
        m = state["model"]
        grads = GradientsParams.from_grads(loss_fn.forward(m(x), y).backward(), m)
        state["model"] = optim.step(LR, m, grads)

    def torch_step():
        optim_t.zero_grad()
        F.cross_entropy(ref(xt), yt).backward()
        optim_t.step()

    def engine_params():
        return {"fc.bias": state["model"].fc.bias.val().numpy()}

    def torch_params():
        return {"fc.bias": ref.fc.bias.detach().numpy()}

    return {
        "engine": (engine_step, engine_params),
        "torch": (torch_step, torch_params),
    }


def test_cnn_step(interleaved):
    mlp.pin_threads()
    trainers = sides()
    interleaved("cnn step b64 / torch", {k: v[0] for k, v in trainers.items()}, max_rounds=100)
    # torch first: the tolerance is relative to torch's values
    mlp.assert_agree({fw: trainers[fw][1]() for fw in ("torch", "engine")}, **mlp.AGREE)


def test_conv2d_forward_backward(interleaved):
    mlp.pin_threads()
    rng = np.random.default_rng(15)
    x_np = rng.standard_normal((BATCH, 6, 14, 14)).astype(np.float32)
    w_np = rng.standard_normal((16, 6, 5, 5)).astype(np.float32) * 0.1
    b_np = rng.standard_normal(16).astype(np.float32)
    device = Device.flex().autodiff()
    options = module_ops.ConvOptions((1, 1), (0, 0), (1, 1), 1)
    grads = {}

    def engine():
        x = Tensor.from_numpy(x_np, device).require_grad()
        w = Tensor.from_numpy(w_np, device).require_grad()
        b = Tensor.from_numpy(b_np, device).require_grad()
        g = module_ops.conv2d(x, w, b, options).sum().backward()
        grads["engine"] = (x.grad(g).numpy(), w.grad(g).numpy())

    def torch_side():
        x = torch.tensor(x_np, requires_grad=True)
        w = torch.tensor(w_np, requires_grad=True)
        b = torch.tensor(b_np, requires_grad=True)
        F.conv2d(x, w, b).sum().backward()
        grads["torch"] = (x.grad.numpy(), w.grad.numpy())

    interleaved("conv2d fwd+bwd / torch", {"engine": engine, "torch": torch_side}, max_rounds=200)
    for e, t in zip(grads["engine"], grads["torch"], strict=True):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-3)


# ---- peak memory of the step, one fresh process per framework -----------------------------


def measure_memory(framework: str) -> dict:
    """In a fresh process: imports and setup, reset the peak, a few steps; the peak above the
    resident set before the first step."""
    mlp.pin_threads()
    step, params = sides()[framework]
    measured = peak_memory.measure(step, MEMORY_STEPS)
    return {**measured, "fc.bias": params()["fc.bias"].tolist()}


def test_cnn_step_peak_memory(benchmark):
    name = "cnn step peak memory / torch"
    records = peak_memory.run_fresh(benchmark, name, __file__, MEMORY_FRAMEWORKS)
    # torch first: the tolerance is relative to torch's values
    biases = {fw: {"fc.bias": np.asarray(records[fw]["fc.bias"])} for fw in ("torch", "engine")}
    mlp.assert_agree(biases, **mlp.AGREE)
    peak_memory.record(name, records)


if __name__ == "__main__":
    peak_memory.main(__file__, measure_memory, MEMORY_FRAMEWORKS)
