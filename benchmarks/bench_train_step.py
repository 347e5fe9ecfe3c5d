"""One training step (forward, backward, SGD update) of Linear-ReLU-Linear + cross-entropy,
float32: engine vs PyTorch eager vs a hand-written NumPy forward/backward (the floor).

Run: `.venv/bin/python -m pytest benchmarks/bench_train_step.py --benchmark-enable -q
-p no:cacheprovider`. Threads are pinned to 1 for torch and for BLAS (threadpoolctl), identically
for every framework. The terminal summary prints the median time per step, the ratios
engine/torch and engine/numpy per size, and the peak memory of the large size, measured in a
fresh subprocess per framework (VmHWM from /proc/self/status, reset with /proc/self/clear_refs
after setup, minus the resident set before the first step).

Targets: engine/torch <= 0.5 (tiny), <= 0.9 (medium), <= 1.1 (large); engine peak <= torch's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

THREADS = 1
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))

SIZES = {
    # name: (d_in, hidden, classes, batch)
    "tiny": (4, 8, 3, 4),
    "medium": (784, 256, 10, 128),
    "large": (1024, 4096, 1024, 512),
}
ROUNDS = {"tiny": 3000, "medium": 200, "large": 8}
LR = 0.01
FRAMEWORKS = ("engine", "torch", "numpy")

RESULTS: dict[tuple[str, str], float] = {}
"""(size, framework) -> median seconds per step; read by benchmarks/conftest.py."""
MEMORY: dict[str, dict] = {}
"""framework -> peak memory record of the large size; read by benchmarks/conftest.py."""


def pin_threads() -> None:
    """One thread for torch and for every BLAS/OpenMP pool, for all frameworks alike."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=THREADS)
    try:
        import torch

        torch.set_num_threads(THREADS)
    except ImportError:  # pragma: no cover - the engine needs no torch
        pass


def make_data(size: str):
    """Seeded float32 weights in engine layout ([in, out]), inputs and int64 labels."""
    d_in, hidden, classes, batch = SIZES[size]
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((d_in, hidden)) / np.sqrt(d_in)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    w2 = (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32)
    b2 = np.zeros(classes, np.float32)
    x = rng.standard_normal((batch, d_in)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int64)
    return (w1, b1, w2, b2), x, y


# ---- the three implementations: setup(size) -> step() ------------------------------------


def engine_setup(size: str):
    from harness.engine import CrossEntropyLossConfig, Device, GradientsParams, SgdConfig, Tensor
    from harness.engine.module import Linear, Module, Param, Relu

    class Mlp(Module):
        def __init__(self, fc1, fc2) -> None:
            self.fc1 = fc1
            self.relu = Relu()
            self.fc2 = fc2

        def forward(self, x):
            return self.fc2.forward(self.relu.forward(self.fc1.forward(x)))

    device = Device.flex().autodiff()
    (w1, b1, w2, b2), x, y = make_data(size)

    def param(a):
        return Param.from_tensor(Tensor.from_numpy(a, device))

    state = {"model": Mlp(Linear(param(w1), param(b1)), Linear(param(w2), param(b2)))}
    xt, yt = Tensor.from_numpy(x, device), Tensor.from_numpy(y, device)
    loss_fn = CrossEntropyLossConfig().init(device)
    optim = SgdConfig().init()

    def step():
        model = state.pop("model")
        loss = loss_fn.forward(model.forward(xt), yt)
        grads = GradientsParams.from_grads(loss.backward(), model)
        state["model"] = optim.step(LR, model, grads)

    return step


def torch_setup(size: str):
    import torch
    from torch import nn

    (w1, b1, w2, b2), x, y = make_data(size)
    d_in, hidden, classes, _ = SIZES[size]
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, classes))
    with torch.no_grad():
        for layer, w, b in ((model[0], w1, b1), (model[2], w2, b2)):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    optim = torch.optim.SGD(model.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = nn.functional.cross_entropy

    def step():
        optim.zero_grad(set_to_none=True)
        loss_fn(model(xt), yt).backward()
        optim.step()

    return step


def numpy_setup(size: str):
    """The floor: forward, backward and an in-place SGD update, no framework at all."""
    (w1, b1, w2, b2), x, y = make_data(size)
    batch = x.shape[0]
    rows = np.arange(batch)
    lr = np.float32(LR)

    def step():
        h = x @ w1
        h += b1
        a = np.maximum(h, 0)
        z = a @ w2
        z += b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        e /= e.sum(axis=1, keepdims=True)  # softmax: dloss/dz = (p - onehot) / batch
        e[rows, y] -= 1
        e /= np.float32(batch)
        gw2 = a.T @ e
        gb2 = e.sum(axis=0)
        da = e @ w2.T
        da[h <= 0] = 0
        gw1 = x.T @ da
        gb1 = da.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            g *= lr
            p -= g

    return step


SETUPS = {"engine": engine_setup, "torch": torch_setup, "numpy": numpy_setup}


# ---- timing -------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("size", list(SIZES))
def test_train_step(benchmark, size, framework):
    pin_threads()
    step = SETUPS[framework](size)
    benchmark.group = f"train_step[{size}]"
    benchmark.pedantic(step, rounds=ROUNDS[size], warmup_rounds=2 if size == "large" else 20)
    if benchmark.stats is not None:  # None under --benchmark-disable
        RESULTS[(size, framework)] = benchmark.stats.stats.median


# ---- peak memory of the large size, one fresh process per framework -----------------------


def _status(field: str) -> int:
    """A /proc/self/status field in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def measure_memory(framework: str, steps: int = 3) -> dict:
    """Run in a fresh process: setup, reset the peak, `steps` steps; the step peak is the
    high-water mark minus the resident set before the first step (params and data included in
    the baseline, the library code too, so torch's larger import does not count)."""
    pin_threads()
    step = SETUPS[framework]("large")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    baseline = _status("VmRSS")
    for _ in range(steps):
        step()
    peak = _status("VmHWM")
    return {"baseline_kib": baseline, "peak_kib": peak, "step_peak_kib": peak - baseline}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_peak_memory_large(framework):
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--memory", framework],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
        check=True,
    )
    MEMORY[framework] = json.loads(result.stdout.strip().splitlines()[-1])
    assert MEMORY[framework]["step_peak_kib"] > 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--memory":
        print(json.dumps(measure_memory(sys.argv[2])))
    else:
        sys.exit("usage: bench_train_step.py --memory engine|torch|numpy")
