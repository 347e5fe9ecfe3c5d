"""Upsampling as a U-Net writes it: interpolate (nearest, bilinear, bicubic; burn's modes and
``align_corners``, 1-D and 2-D) and pixel shuffle / unshuffle, forward and backward (the
gradient of the input for a fixed cotangent), the same float32 inputs on both sides.

Each interpolation is burn's module (``Interpolate2dConfig`` / ``Interpolate1dConfig`` with an
``output_size``, up 5x6 -> 8x9 and down 5x6 -> 3x4; 1-D 7 -> 11 and 7 -> 4) against
``F.interpolate(size=...)`` with the same ``align_corners`` (PyTorch's ``nearest`` takes none;
burn's ignores it). burn's 1-D ``Linear`` is PyTorch's ``linear``; burn's 1-D ``Cubic`` has no
PyTorch mode, so the torch side runs ``bicubic`` on the ``[N, C, 1, L]`` plane, as burn does.

What agrees and what differs, measured under three CPU settings (the x86-64-v3 profile,
native AVX-512, the emulated x86-64 baseline):
- nearest: bit for bit, forward and backward (a gather, and a scatter of at most a few terms).
- bilinear: within 4e-6 (TOLERANCES; worst 1.04e-06 forward, 7.8e-07 backward, inputs of unit
  scale): PyTorch forms coordinates and weights in float32, flex in float64 rounded once.
- bicubic: not bit for bit, within 1e-5 (worst 1.79e-06 forward, 1.73e-06 backward, some keys
  under 1e-6): PyTorch sums the 16 products in float32, flex in float64 and rounds once
  (``harness.engine.kernels.interpolate``). A ``differ`` with an exact tolerance and that
  bound: it fails if a change makes the two bit-equal or farther apart.
- every interpolation again in float64 (``float64.*``) agrees within the float64 default
  1e-12 (worst 4.0e-15): the two compute one formula, the float32 gaps are rounding.
- pixel shuffle / unshuffle: bit for bit (a reshape, a permute and a reshape).

Two divergences of burn's API are recorded as values:
- ``defaults.bilinear``: ``Interpolate2dConfig``'s ``align_corners`` defaults to True,
  ``nn.Upsample``'s to False, so the same call with the defaults samples other points.
- ``nearest_scale``: with ``scale_factor=1.7`` burn rounds the output size down (8x10) and maps
  with ``in / out``; PyTorch maps with ``1 / scale_factor``, and picks other source pixels
  (``recompute_scale_factor=True`` makes PyTorch burn's: ``nearest_scale_recomputed`` agrees).
"""

import numpy as np
import torch
import torch.nn.functional as F

from harness.case import agree, differ, predicate, within
from harness.engine import Device, Tensor
from harness.engine.nn import (
    Interpolate1dConfig,
    Interpolate2dConfig,
    InterpolateMode,
    PixelShuffleConfig,
    PixelUnshuffleConfig,
)
from harness.tolerances import Tolerance

SHAPE_2D, SHAPE_1D, SHAPE_SHUFFLE = (2, 3, 5, 6), (2, 3, 7), (2, 12, 3, 4)
SIZES = {2: {"up": (8, 9), "down": (3, 4)}, 1: {"up": 11, "down": 4}}
CORNERS = {"corners": True, "half_pixel": False}
BURN_MODES = {
    "nearest": InterpolateMode.Nearest,
    "bilinear": InterpolateMode.Linear,
    "bicubic": InterpolateMode.Cubic,
}
TORCH_1D = {"nearest": "nearest", "bilinear": "linear", "bicubic": "bicubic"}
SCALE, FACTOR = 1.7, 2


def _experiments():
    """(key, rank, mode, align_corners, size): nearest once (burn ignores the flag)."""
    for rank in (2, 1):
        for mode in BURN_MODES:
            for corners, align in CORNERS.items():
                if mode == "nearest" and not align:
                    continue
                for direction, size in SIZES[rank].items():
                    label = "" if mode == "nearest" else f".{corners}"
                    yield f"interp{rank}d.{mode}{label}.{direction}", rank, mode, align, size


def _inputs():
    rng = np.random.default_rng(28)
    x2, x1 = rng.standard_normal(SHAPE_2D), rng.standard_normal(SHAPE_1D)
    return x2.astype(np.float32), x1.astype(np.float32)


def _cotangent(shape) -> np.ndarray:
    return np.random.default_rng(29).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# PyTorch


def _torch_pair(fn, x: np.ndarray, dtype) -> dict:
    """fn's output and the input's gradient for the cotangent of the output's shape."""
    xt = torch.tensor(x, dtype=dtype, requires_grad=True)
    out = fn(xt)
    (out * torch.tensor(_cotangent(tuple(out.shape)), dtype=dtype)).sum().backward()
    return {"out": out.detach(), "grad": xt.grad}


def _torch_interp(rank, mode, align, size):
    corners = {} if mode == "nearest" else {"align_corners": align}
    if rank == 2:
        return lambda x: F.interpolate(x, size=size, mode=mode, **corners)
    if mode == "bicubic":  # burn's 1-D cubic: bicubic on the [N, C, 1, L] plane
        return lambda x: F.interpolate(x.unsqueeze(2), size=(1, size), mode=mode, **corners)[
            :, :, 0
        ]
    return lambda x: F.interpolate(x, size=size, mode=TORCH_1D[mode], **corners)


def _torch_interpolations(dtype) -> dict:
    x2, x1 = _inputs()
    return {
        key: _torch_pair(_torch_interp(rank, mode, align, size), x2 if rank == 2 else x1, dtype)
        for key, rank, mode, align, size in _experiments()
    }


def torch_side():
    x2, _ = _inputs()
    shuffle_in = np.random.default_rng(30).standard_normal(SHAPE_SHUFFLE).astype(np.float32)
    upsample = torch.nn.Upsample(size=SIZES[2]["up"], mode="bilinear")  # the defaults
    values = _torch_interpolations(torch.float32)
    values |= {
        "float64": _torch_interpolations(torch.float64),
        "defaults.bilinear": _torch_pair(upsample, x2, torch.float32),
        "nearest_scale": _torch_pair(
            lambda x: F.interpolate(x, scale_factor=SCALE, mode="nearest"), x2, torch.float32
        ),
        "nearest_scale_recomputed": _torch_pair(
            lambda x: F.interpolate(
                x, scale_factor=SCALE, mode="nearest", recompute_scale_factor=True
            ),
            x2,
            torch.float32,
        ),
        "pixel_shuffle": _torch_pair(torch.nn.PixelShuffle(FACTOR), shuffle_in, torch.float32),
        "pixel_unshuffle": _torch_pair(
            torch.nn.PixelUnshuffle(FACTOR), _shuffled(shuffle_in), torch.float32
        ),
    }
    return values


def _shuffled(x: np.ndarray) -> np.ndarray:
    """The unshuffle's input: a `[2, 3, 6, 8]` tensor of its own values."""
    n, c, h, w = x.shape
    return x.reshape(n, c // FACTOR**2, h * FACTOR, w * FACTOR)


# ---------------------------------------------------------------------------------------------
# Engine


def _engine_pair(module, x: np.ndarray, dtype: str) -> dict:
    device = Device.flex().autodiff()
    xe = Tensor.from_numpy(x.astype(dtype), device).require_grad()
    out = module(xe)
    cot = Tensor.from_numpy(_cotangent(tuple(out.shape)).astype(dtype), device)
    return {"out": out, "grad": xe.grad((out * cot).sum().backward())}


def _engine_interp(rank, mode, align, size):
    config = Interpolate2dConfig if rank == 2 else Interpolate1dConfig
    return config(output_size=size, mode=BURN_MODES[mode], align_corners=align).init()


def _engine_interpolations(dtype: str) -> dict:
    x2, x1 = _inputs()
    return {
        key: _engine_pair(_engine_interp(rank, mode, align, size), x2 if rank == 2 else x1, dtype)
        for key, rank, mode, align, size in _experiments()
    }


def engine_side():
    x2, _ = _inputs()
    shuffle_in = np.random.default_rng(30).standard_normal(SHAPE_SHUFFLE).astype(np.float32)
    defaults = Interpolate2dConfig(output_size=SIZES[2]["up"], mode=InterpolateMode.Linear)
    scaled = Interpolate2dConfig(scale_factor=(SCALE, SCALE), mode=InterpolateMode.Nearest)
    values = _engine_interpolations("float32")
    values |= {
        "float64": _engine_interpolations("float64"),
        "defaults.bilinear": _engine_pair(defaults.init(), x2, "float32"),
        "nearest_scale": _engine_pair(scaled.init(), x2, "float32"),
        "nearest_scale_recomputed": _engine_pair(scaled.init(), x2, "float32"),
        "pixel_shuffle": _engine_pair(PixelShuffleConfig(FACTOR).init(), shuffle_in, "float32"),
        "pixel_unshuffle": _engine_pair(
            PixelUnshuffleConfig(FACTOR).init(), _shuffled(shuffle_in), "float32"
        ),
    }
    return values


# ---------------------------------------------------------------------------------------------
# Checks


def _other_samples(a, b) -> bool:
    """Same shape, some outputs apart by far more than rounding."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.abs(a - b).max() > 1e-2)


_BIT_FOR_BIT = Tolerance.exact(
    "a gather / scatter of unit-scale values, or a rearrangement: no arithmetic to round"
)
TOLERANCES = {
    "interp*.nearest.*": _BIT_FOR_BIT,
    "pixel_*": _BIT_FOR_BIT,
    "nearest_scale_recomputed.*": _BIT_FOR_BIT,
    "interp*.bilinear.*": Tolerance(
        4e-6,
        reason="float32 coordinates and weights (PyTorch) against float64 ones rounded once "
        "(flex): measured up to 1.04e-06 under three CPU settings; 4x that",
    ),
}

CHECKS = [
    agree("interp*.nearest.*"),
    agree("interp*.bilinear.*"),
    differ(
        "interp*.bicubic.*",
        because="harness.engine.kernels.interpolate",
        tol=Tolerance.exact("the divergence is the float64 accumulation: bit-equal would end it"),
        relation=within(1e-5, "float32 rounding of two orders"),
    ),
    agree("float64.*"),
    differ(
        "defaults.bilinear.*",
        because="harness.engine.nn.interpolate",
        relation=predicate("same shape, other sample points", _other_samples),
    ),
    differ(
        "nearest_scale.*",
        because="harness.engine.kernels.interpolate",
        relation=predicate("same shape, other source pixels", _other_samples),
    ),
    agree("nearest_scale_recomputed.*"),
    agree("pixel_shuffle.*"),
    agree("pixel_unshuffle.*"),
]
