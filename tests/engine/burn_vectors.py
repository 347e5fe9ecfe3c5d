"""Shared pieces of the tests transcribed from burn (commit
2c06be351006851d42fdb6df16b976f4a82d9747): the fixtures of burn-optim's unit tests
(`given_linear_layer` and the inputs most `crates/burn-optim/src/optim/*.rs` test modules use),
for the engine and for torch re-derivations; and the tensor constructors and burn's default
`assert_approx_eq` of the loss test modules (`crates/burn-nn/src/loss/*.rs`)."""

from __future__ import annotations

import numpy as np
import torch

from harness.engine import Device, GradientsParams, Linear, LinearConfig, Module, Param, Tensor

DEV = Device.flex()
AD = Device.flex().autodiff()

# burn's `given_linear_layer` weight, in burn's `[d_in, d_out]` layout, and bias.
WEIGHT = [
    [-0.3206, 0.1374, 0.4043, 0.3200, 0.0859, 0.0671],
    [0.0777, -0.0185, -0.3667, 0.2550, 0.1955, -0.2922],
    [-0.0190, 0.0346, -0.2962, 0.2484, -0.2780, 0.3130],
    [-0.2980, -0.2214, -0.3715, -0.2981, -0.0761, 0.1626],
    [0.3300, -0.2182, 0.3717, -0.1729, 0.3796, -0.0304],
    [-0.0159, -0.0120, 0.1258, 0.1921, 0.0293, 0.3833],
]
BIAS = [-0.3905, 0.0884, -0.0970, 0.1176, 0.1366, 0.0130]
X1 = [
    [0.6294, 0.0940, 0.8176, 0.8824, 0.5228, 0.4310],
    [0.7152, 0.9559, 0.7893, 0.5684, 0.5939, 0.8883],
]
X2 = [
    [0.8491, 0.2108, 0.8939, 0.4433, 0.5527, 0.2528],
    [0.3270, 0.0412, 0.5538, 0.9605, 0.3195, 0.9085],
]


def ramp_input(i: int) -> np.ndarray:
    """`Tensor::ones([2, 6]).mul_scalar(i as f32 * 0.1)` of the 50-step tests (f32 product)."""
    return np.ones((2, 6), np.float32) * (np.float32(i) * np.float32(0.1))


def given_linear_layer(weight=WEIGHT, bias=BIAS) -> Linear:
    """burn's `Linear { weight: Param::from_data(weight), bias: Some(Param::from_data(bias)) }`."""
    w = Param.from_tensor(Tensor.from_floats(weight, AD))
    b = None if bias is None else Param.from_tensor(Tensor.from_floats(bias, AD))
    return Linear(weight=w, bias=b)


def engine_step(optim, linear, x, lr: float):
    """`optimizer.step(lr, linear, GradientsParams::from_grads(linear.forward(x).backward()))`:
    burn's backward of the non-scalar output seeds ones (the gradient of its sum)."""
    x = Tensor.from_floats(np.asarray(x, np.float32).tolist(), AD).require_grad()
    grads = GradientsParams.from_grads(linear.forward(x).backward(), linear)
    return optim.step(lr, linear, grads)


def engine_run(optim, inputs, lr: float, linear=None):
    """Steps over `inputs`; returns (weight, bias) of the result, burn's layout, as arrays."""
    linear = given_linear_layer() if linear is None else linear
    for x in inputs:
        linear = engine_step(optim, linear, x, lr)
    bias = None if linear.bias is None else linear.bias.val().numpy()
    return linear.weight.val().numpy(), bias


def torch_run(make_optim, inputs, lr: float, weight=WEIGHT, bias=BIAS, dtype=torch.float32):
    """The same steps with a torch.optim optimizer on `x @ W + b` (W in burn's layout) and the
    sum of the output as the loss; returns (weight, bias) as float64 arrays."""
    w = torch.tensor(weight, dtype=dtype, requires_grad=True)
    b = torch.tensor(bias, dtype=dtype, requires_grad=True)
    optim = make_optim([w, b], lr)
    for x in inputs:
        optim.zero_grad()
        (torch.as_tensor(np.asarray(x), dtype=dtype) @ w + b).sum().backward()
        optim.step()
    return w.detach().double().numpy(), b.detach().double().numpy()


def assert_approx_eq(got, expected, tolerance: float) -> None:
    """burn's `assert_approx_eq::<f32>(.., Tolerance::absolute(tolerance))`."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    assert got.shape == expected.shape
    gap = float(np.abs(got - expected).max())
    assert gap <= tolerance, f"max |diff| {gap:.3e} > {tolerance:g}"


# ---- module/module_optimizer.rs -----------------------------------------------------------


class TwoLayerModel(Module):
    """module_optimizer.rs `TwoLayerModel { layer_a: Linear, layer_b: Linear }` (4 -> 4)."""

    def __init__(self, layer_a, layer_b) -> None:
        self.layer_a = layer_a
        self.layer_b = layer_b


def make_model() -> TwoLayerModel:
    return TwoLayerModel(LinearConfig(4, 4).init(AD), LinearConfig(4, 4).init(AD))


def make_grads(model: TwoLayerModel, x: Tensor) -> GradientsParams:
    """module_optimizer.rs `make_grads`: `(layer_a(x) + layer_b(x)).mean().backward()`."""
    out = model.layer_a.forward(x) + model.layer_b.forward(x)
    return GradientsParams.from_grads(out.mean().backward(), model)


# ---- the loss test modules ------------------------------------------------------------------


def floats(data, device=DEV) -> Tensor:
    return Tensor.from_floats(data, device)


def ints(data, device=DEV) -> Tensor:
    return Tensor.from_ints(data, device)


def approx(actual, expected, rel: float = 0.005, abs_: float = 1e-5) -> None:
    """burn's `TensorData::assert_approx_eq::<f32>` (`crates/burn-std/src/data/compare.rs`):
    same shape, and per element `a == b` or `|a - b| < max(abs, rel * max(|a|, |b|))` in f32,
    NaN matching NaN and infinities of one sign matching. The defaults are burn's
    `Tolerance::default()` (`balanced`: rel 0.005, abs 1e-5)."""
    a = np.asarray(actual, dtype=np.float32)
    b = np.asarray(expected, dtype=np.float32)
    assert a.shape == b.shape, f"shape {list(a.shape)} != {list(b.shape)}"
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
        bound = np.maximum(np.float32(abs_), np.float32(rel) * np.maximum(np.abs(a), np.abs(b)))
        ok = (a == b) | (diff < bound) | (np.isnan(a) & np.isnan(b))
    assert ok.all(), f"not approx eq:\n{a}\n{b}"
