"""The A1 model and its inputs: the one builder every case and test uses (defined below).

A two-layer MLP `fc2(relu(fc1(x)))`, fc1: 4 -> 8, fc2: 8 -> 3, cross-entropy (mean) on a batch
of 4 rows, SGD with lr 0.1. Every value is computed in float64 and rounded to float32 **once**,
so both frameworks start from bit-identical values. Arrays use PyTorch's layout (`[out, in]`);
the engine's Linear stores the transpose.

    arrays = a1_arrays()                      # dict of np.ndarray, PyTorch layout
    model, x, y = a1_torch()                  # torch.nn.Module with .fc1 / .fc2
    model, x, y = a1_engine(Device.flex().autodiff())   # engine A1 module
    model, result = import_torch_weights(torch_module, engine_module)  # any module pair

`rounding="float32"` builds the variant used by the `input_rounding` case: inputs and biases
computed in float32 arithmetic (`f32(0.1) * f32(k) - f32(0.5)`), which differs from the exact
values by a few ULP in several positions.

`f32(x)` (the engine's own) rounds a hyperparameter to float32 once, as burn's f32 config fields
store it: the Python float to hand PyTorch for the same value.

`dtype="float64"` (torch: `torch.float64`) builds the float64 rerun of a trajectory case: the
same float32 values, exactly, in float64 params and inputs, so that the rerun computes the
float32 experiment without its rounding.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from harness.engine.loss.reduction import f32
from harness.engine.module import Linear, Module, Param, Relu
from harness.engine.store import ApplyResult, PyTorchToBurnAdapter, SafetensorsStore
from harness.engine.tensor import Tensor

__all__ = [
    "A1",
    "A1_HALVES",
    "A1_LR",
    "PARAM_NAMES",
    "a1_arrays",
    "a1_engine",
    "a1_torch",
    "engine_grads",
    "engine_params",
    "f32",
    "import_torch_weights",
    "torch_grads",
    "torch_params",
]

Rounding = Literal["once", "float32"]

A1_LR = 0.1
"""The SGD learning rate of every A1 case."""

A1_HALVES = ((0, 2), (2, 4))
"""Row ranges of the two half batches of the accumulation case."""

PARAM_NAMES = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
"""Param paths in declaration order (the same on both sides)."""


def _exact(values: np.ndarray) -> np.ndarray:
    """float64 values rounded to float32 once."""
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def _inputs(rounding: Rounding) -> np.ndarray:
    k = np.arange(16).reshape(4, 4)  # k = 4r + c, row-major
    if rounding == "float32":
        return np.float32(0.1) * k.astype(np.float32) - np.float32(0.5)
    return _exact(0.1 * k - 0.5)


def _bias(step: float, n: int, rounding: Rounding) -> np.ndarray:
    o = np.arange(n)
    if rounding == "float32":
        return np.float32(step) * o.astype(np.float32)
    # step * 0 keeps the sign of step: fc2.bias[0] = -0.02 * 0 = -0.0
    return _exact(step * o.astype(np.float64))


def a1_arrays(rounding: Rounding = "once") -> dict[str, np.ndarray]:
    """x [4,4] f32, y [4] int64 and the four params in PyTorch layout (weights `[out, in]`).

    Weights are always exact (float64 then rounded once); `rounding` applies to x and biases.
    """
    if rounding not in ("once", "float32"):
        raise ValueError(f"rounding must be 'once' or 'float32', got {rounding!r}")
    o1, i1 = np.meshgrid(np.arange(8), np.arange(4), indexing="ij")
    o2, i2 = np.meshgrid(np.arange(3), np.arange(8), indexing="ij")
    return {
        "x": _inputs(rounding),
        "y": np.array([0, 1, 2, 2], dtype=np.int64),
        "fc1.weight": _exact(0.05 * ((3 * o1 + 5 * i1) % 11) - 0.25),
        "fc1.bias": _bias(0.01, 8, rounding),
        "fc2.weight": _exact(0.04 * ((7 * o2 + 3 * i2) % 13) - 0.24),
        "fc2.bias": _bias(-0.02, 3, rounding),
    }


# ---- engine side --------------------------------------------------------------------------


class A1(Module):
    """The engine's A1 model: fc1 (Linear 4 -> 8), relu, fc2 (Linear 8 -> 3)."""

    def __init__(self, fc1: Linear, fc2: Linear) -> None:
        self.fc1 = fc1
        self.relu = Relu()
        self.fc2 = fc2

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2.forward(self.relu.forward(self.fc1.forward(x)))


def _engine_linear(weight_out_in: np.ndarray, bias: np.ndarray, device) -> Linear:
    weight = Tensor.from_numpy(np.ascontiguousarray(weight_out_in.T), device)
    return Linear(
        weight=Param.from_tensor(weight), bias=Param.from_tensor(Tensor.from_numpy(bias, device))
    )


def _in_dtype(arrays: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """The float arrays cast (exactly) to `dtype`; y stays int64."""
    return {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in arrays.items()}


def a1_engine(
    device, rounding: Rounding = "once", dtype: str = "float32"
) -> tuple[A1, Tensor, Tensor]:
    """(A1 engine model, x, y) on `device`; params are marked leaves with fresh ParamIds.

    x is a plain (untracked) tensor on `device`; y is int64.
    """
    arrays = _in_dtype(a1_arrays(rounding), dtype)
    model = A1(
        _engine_linear(arrays["fc1.weight"], arrays["fc1.bias"], device),
        _engine_linear(arrays["fc2.weight"], arrays["fc2.bias"], device),
    )
    return model, Tensor.from_numpy(arrays["x"], device), Tensor.from_numpy(arrays["y"], device)


# ---- PyTorch side -------------------------------------------------------------------------


def a1_torch(rounding: Rounding = "once", dtype=None):
    """(torch A1 model, x, y): an `nn.Module` with `.fc1`, `.relu`, `.fc2`, CPU, float32 or
    `dtype` (`torch.float64`).

    torch is imported here, so importing this module never needs it.
    """
    import torch
    from torch import nn

    class A1Torch(nn.Module):
        """The PyTorch A1 model, parallel to the engine's `A1`."""

        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    dtype = dtype or torch.float32
    arrays = _in_dtype(a1_arrays(rounding), str(dtype).removeprefix("torch."))
    model = A1Torch().to(dtype)
    with torch.no_grad():
        for name in PARAM_NAMES:
            model.get_parameter(name).copy_(torch.from_numpy(arrays[name]))
    return model, torch.from_numpy(arrays["x"].copy()), torch.from_numpy(arrays["y"].copy())


def import_torch_weights(
    torch_module, engine_module: Module, remap=()
) -> tuple[Module, ApplyResult]:
    """`(engine_module with torch_module's weights, ApplyResult)`: the state_dict as
    safetensors bytes, read by `SafetensorsStore` through the `remap` rules (`(pattern,
    replacement)` pairs, in order) and burn's `PyTorchToBurnAdapter`.

    Asserts nothing: each caller checks the result for what its import may leave over.
    """
    import safetensors.numpy  # imported on use, as the engine's reader does

    state = {k: v.detach().numpy().copy() for k, v in torch_module.state_dict().items()}
    store = SafetensorsStore.from_bytes(safetensors.numpy.save(state))
    for pattern, replacement in remap:
        store = store.with_key_remapping(pattern, replacement)
    return store.with_from_adapter(PyTorchToBurnAdapter()).apply_to(engine_module)


# ---- recording helpers: every A1 case reports params in PyTorch's layout -------------------


def _torch_layout(path: str, tensor: Tensor) -> Tensor:
    # The engine's Linear weight is [in, out]; reports compare in PyTorch's [out, in].
    return tensor.transpose() if path.endswith("weight") and len(tensor.shape) == 2 else tensor


def engine_params(model: Module) -> dict[str, Tensor]:
    """`{path: value}` of an engine module's params, weights transposed to `[out, in]`."""
    return {path: _torch_layout(path, param.val()) for path, param in model.params()}


def engine_grads(grads, model: Module) -> dict[str, Tensor | None]:
    """`{path: gradient}` from a `GradientsParams` (looked up by ParamId, `[out, in]` layout)."""
    found = {}
    for path, param in model.params():
        grad = grads.get(param.id)
        found[path] = None if grad is None else _torch_layout(path, grad)
    return found


def torch_params(model) -> dict:
    """`{path: value}` of a torch module's params (detached copies)."""
    return {path: p.detach().clone() for path, p in model.named_parameters()}


def torch_grads(model) -> dict:
    """`{path: .grad}` of a torch module's params (copies; None where there is none)."""
    return {
        path: None if p.grad is None else p.grad.clone() for path, p in model.named_parameters()
    }


def torch_layout(linear: Linear) -> np.ndarray:
    """A burn Linear's weight (``[d_in, d_out]``) in PyTorch's layout (``[d_out, d_in]``)."""
    return linear.weight.val().numpy().T


def mha_torch_state(prefix: str, mha: Module) -> dict[str, np.ndarray]:
    """A burn MultiHeadAttention's params as ``torch.nn.MultiheadAttention`` names them: the
    query, key and value projections packed into ``in_proj_*``, the output as ``out_proj``."""
    qkv = (mha.query, mha.key, mha.value)
    return {
        prefix + "in_proj_weight": np.concatenate([torch_layout(m) for m in qkv]),
        prefix + "in_proj_bias": np.concatenate([m.bias.val().numpy() for m in qkv]),
        prefix + "out_proj.weight": torch_layout(mha.output),
        prefix + "out_proj.bias": mha.output.bias.val().numpy(),
    }


def without_key_bias(state: dict[str, np.ndarray], d_model: int) -> dict[str, np.ndarray]:
    """Each ``in_proj_bias`` split, its key third left out: the key bias's true gradient is 0
    (adding ``q . b_k`` to every score of a query does not change its softmax), so Adam turns
    each side's rounding noise there into steps of arbitrary sign that no check can compare."""
    for name in [k for k in state if k.endswith("in_proj_bias")]:
        bias = state.pop(name)
        state[name + ".query"] = bias[:d_model]
        state[name + ".value"] = bias[2 * d_model :]
    return state
