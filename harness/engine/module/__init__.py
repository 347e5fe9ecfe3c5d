"""Modules, parameters and layers: the core (`core`: ParamId, Param, Module, Config, moved
values, seeding) and the layers built on it (`layers`: Linear, Relu, Dropout, LayerNorm)."""

from harness.engine.module.core import (
    Config,
    Module,
    MovedValueError,
    Param,
    ParamId,
    consume,
    consume_map,
    params_of,
    rust_float,
    seed,
    value_rng,
)
from harness.engine.module.layers import (
    Dropout,
    DropoutConfig,
    LayerNorm,
    LayerNormConfig,
    Linear,
    LinearConfig,
    Relu,
)

__all__ = [
    "Config",
    "Dropout",
    "DropoutConfig",
    "LayerNorm",
    "LayerNormConfig",
    "Linear",
    "LinearConfig",
    "Module",
    "MovedValueError",
    "Param",
    "ParamId",
    "Relu",
    "consume",
    "consume_map",
    "params_of",
    "rust_float",
    "seed",
    "value_rng",
]
