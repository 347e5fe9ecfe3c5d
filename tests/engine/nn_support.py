"""Shared pieces of the test_nn_* files: torch weights into engine modules through the
importer, engine gradients by param path (finite differences: test_kernels_support)."""

from __future__ import annotations

import numpy as np
import torch

from harness.a1 import import_torch_weights
from harness.engine import Device, Tensor

AD = Device.flex().autodiff()
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def import_torch(torch_module: torch.nn.Module, engine_module, remap=()):
    """`engine_module` with `torch_module`'s weights, through safetensors bytes and burn's
    adapter plus the registered sequence rules; asserts nothing was left over."""
    model, result = import_torch_weights(torch_module, engine_module, remap)
    assert result.errors == [], result.errors
    assert result.missing == [], result.missing
    return model, result


def tensor(array, dtype="float32", device=AD) -> Tensor:
    return Tensor.from_numpy(np.asarray(array, dtype=dtype), device)


def leaf(array, dtype="float32") -> Tensor:
    return tensor(array, dtype).require_grad()


def grads_by_path(model, grads) -> dict[str, np.ndarray]:
    out = {}
    for path, param in model.params():
        g = param.val().grad(grads)
        if g is not None:
            out[path] = g.numpy()
    return out


def rng_array(seed: int, shape, scale=1.0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * scale


TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


BALANCED = (0.005, 1e-5)  # burn-std data/compare.rs Tolerance::default() (balanced)
PERMISSIVE = (0.01, 0.01)  # Tolerance::permissive()


def assert_burn_approx(actual, expected, tolerance=BALANCED) -> None:
    """burn's `assert_approx_eq`: `|x - y| < max(relative * max(|x|, |y|), absolute)`."""
    relative, absolute = tolerance
    x = np.asarray(actual, np.float64)
    y = np.asarray(expected, np.float64)
    assert x.shape == y.shape, (x.shape, y.shape)
    bound = np.maximum(relative * np.maximum(np.abs(x), np.abs(y)), absolute)
    ok = (x == y) | (np.abs(x - y) < bound)
    assert ok.all(), f"{x[~ok]} != {y[~ok]}"
