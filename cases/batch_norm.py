"""BatchNorm2d in training and inference, PyTorch against burn's `BatchNorm` (burn-nn
src/modules/norm/batch.rs, commit 2c06be351006851d42fdb6df16b976f4a82d9747).

Both start from gamma 1, beta 0, running mean 0, running variance 1, momentum 0.3 (the same
convention on both sides: new = (1 - m) * old + m * batch statistic), and see two training
batches x1, x2 `[2, 3, 2, 2]` (n = 8 elements per channel), then one inference batch x3.

Agree: the training output and its input gradient (both normalise with the biased batch
variance), the running mean after two updates (read after burn's `valid()`, which syncs).
Differ, each documented on `harness.engine.nn.norm.BatchNorm` / `RunningState`:
- the stored running variance: burn updates it with the biased batch variance (/ n),
  PyTorch with the unbiased one (/ (n - 1));
- so the inference output (PyTorch `eval()`, burn a plain-device input) differs too;
- the mode is the input's device in burn: a plain-device input to the trained module is an
  inference forward, where a PyTorch module in `train()` mode normalises with the batch;
- the running mean read through `params()` right after the second training forward lags one
  update in burn (`RunningState`), PyTorch's buffer is current.
The relations recompute each side's value from the data in float64.
"""

import copy

import numpy as np
import torch

from harness.case import agree, differ, predicate
from harness.engine import BatchNormConfig, Device, Tensor

M, EPS, C = 0.3, 1e-5, 3


def _batches() -> list[np.ndarray]:
    rng = np.random.default_rng(41)
    return [rng.normal(k, 1.0 + k, (2, C, 2, 2)).astype(np.float32) for k in range(3)]


def _cot() -> np.ndarray:
    return np.cos(np.arange(2 * C * 4, dtype=np.float32)).reshape(2, C, 2, 2)


def torch_side():
    x1, x2, x3 = (torch.from_numpy(b) for b in _batches())
    bn = torch.nn.BatchNorm2d(C, eps=EPS, momentum=M)
    x = x1.clone().requires_grad_(True)
    out = bn(x)
    (out * torch.from_numpy(_cot())).sum().backward()
    bn(x2)
    train_mode_out = copy.deepcopy(bn)(x3)  # train() mode: the batch statistics
    bn.eval()
    with torch.no_grad():
        eval_out = bn(x3)
    return {
        "train.out": out,
        "train.grad.x": x.grad,
        "running_mean": bn.running_mean,
        "running_var": bn.running_var,
        "running_mean.visited": bn.running_mean,
        "plain_input.out": train_mode_out,
        "eval.out": eval_out,
    }


def engine_side():
    device = Device.flex().autodiff()
    x1, x2, x3 = _batches()
    bn = BatchNormConfig(C, epsilon=EPS, momentum=M).init(device)
    x = Tensor.from_numpy(x1, device).require_grad()
    out = bn(x)
    grads = (out * Tensor.from_numpy(_cot(), device)).sum().backward()
    bn(Tensor.from_numpy(x2, device))
    visited = dict(bn.params())["running_mean"].val()  # lags one update (RunningState)
    valid = bn.valid()  # burn's valid() syncs the running statistics
    state = dict(valid.params())
    plain_out = valid(Tensor.from_numpy(x3, Device.flex()))  # a plain input: inference
    return {
        "train.out": out,
        "train.grad.x": x.grad(grads),
        "running_mean": state["running_mean"].val(),
        "running_var": state["running_var"].val(),
        "running_mean.visited": visited,
        "plain_input.out": plain_out,
        "eval.out": plain_out,
    }


# ---- float64 recomputations for the relations -------------------------------------------------


def _stats(x: np.ndarray, unbiased: bool) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    return x.mean((0, 2, 3)), x.var((0, 2, 3), ddof=1 if unbiased else 0)


def _running_mean(updates: int) -> np.ndarray:
    mean = np.zeros(C)
    for x in _batches()[:updates]:
        mean = (1 - M) * mean + M * _stats(x, False)[0]
    return mean


def _running_var(unbiased: bool) -> np.ndarray:
    var = np.ones(C)
    for x in _batches()[:2]:
        var = (1 - M) * var + M * _stats(x, unbiased)[1]
    return var


def _normalise(x: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    shape = (1, C, 1, 1)
    return (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + EPS)


def _close(a, b) -> bool:
    return bool(np.allclose(np.asarray(a, np.float64), b, rtol=1e-5, atol=1e-5))


def _variances(t, e) -> bool:
    return _close(t, _running_var(unbiased=True)) and _close(e, _running_var(unbiased=False))


def _eval_outputs(t, e) -> bool:
    x3, mean = _batches()[2], _running_mean(2)
    return _close(t, _normalise(x3, mean, _running_var(True))) and _close(
        e, _normalise(x3, mean, _running_var(False))
    )


def _mode_by_device(t, e) -> bool:
    x3 = _batches()[2]
    batch_mean, batch_var = _stats(x3, False)
    return _close(t, _normalise(x3, batch_mean, batch_var)) and _close(
        e, _normalise(x3, _running_mean(2), _running_var(False))
    )


def _lags_one_update(t, e) -> bool:
    return _close(t, _running_mean(2)) and _close(e, _running_mean(1))


CHECKS = [
    agree("train.*"),
    agree("running_mean"),
    differ(
        "running_var",
        because="harness.engine.nn.norm.BatchNorm",
        relation=predicate(
            "torch stores the unbiased batch variance (/ (n - 1)), burn the biased (/ n)",
            _variances,
        ),
    ),
    differ(
        "eval.out",
        because="harness.engine.nn.norm.BatchNorm",
        relation=predicate("each normalises with its own stored variance", _eval_outputs),
    ),
    differ(
        "plain_input.out",
        because="harness.engine.nn.norm.BatchNorm",
        relation=predicate(
            "torch in train() uses the batch statistics; burn's plain-device input the "
            "running ones (the mode is the device)",
            _mode_by_device,
        ),
    ),
    differ(
        "running_mean.visited",
        because="harness.engine.nn.norm.RunningState",
        relation=predicate(
            "burn's visited state is one update behind torch's buffer", _lags_one_update
        ),
    ),
]
