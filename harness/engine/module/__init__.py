"""Modules, parameters and layers: the core (`core`: ParamId, Param, Module, Config, moved
values, seeding), the layers built on it (`layers`: Linear, Relu, Dropout, LayerNorm) and
LoRA (`lora`: Lora, apply_lora, merge_lora) and parameter groups (`param_group`: ParamGroup,
burn-core's `module::ParamGroup`)."""

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
from harness.engine.module.lora import Lora, LoraAdapter, LoraWeight, apply_lora, merge_lora
from harness.engine.module.param_group import ParamGroup, ParamGroupError

__all__ = [
    "Config",
    "Dropout",
    "DropoutConfig",
    "LayerNorm",
    "LayerNormConfig",
    "Linear",
    "LinearConfig",
    "Lora",
    "LoraAdapter",
    "LoraWeight",
    "Module",
    "MovedValueError",
    "Param",
    "ParamGroup",
    "ParamGroupError",
    "ParamId",
    "Relu",
    "apply_lora",
    "consume",
    "consume_map",
    "merge_lora",
    "params_of",
    "rust_float",
    "seed",
    "value_rng",
]
