"""PyTorch weights into engine modules, the way burn-store does it, and where PyTorch differs.

Transliterates burn 0.22's crates/burn-store (commit 2c06be351006851d42fdb6df16b976f4a82d9747):

    from harness.engine.store import PytorchStore, SafetensorsStore, PyTorchToBurnAdapter

    model, result = PytorchStore.from_file("model.pt").allow_partial(True).apply_to(model)
    result.applied, result.missing, result.unused, result.errors

    store = SafetensorsStore.from_file("model.safetensors").with_from_adapter(
        PyTorchToBurnAdapter())
    model, result = store.apply_to(model)

Supported:
- `.pt` / `.pth` files from `torch.save` in the zip format (PyTorch >= 1.6) and the legacy
  format (`_use_new_zipfile_serialization=False`), read by a restricted unpickler that never
  imports torch and refuses every global a state_dict of tensors does not need (`reader`,
  `pickle_reader`); nested dicts flattened with dots, `with_top_level_key` for
  `{"state_dict": ...}` / `{"model": ...}` checkpoints; strides and storage offsets honoured.
- `.safetensors` files and buffers, read with the `safetensors` package.
- Dtypes float64, float32, float16, bfloat16, int64/32/16/8, uint8 (and for safetensors
  uint64/32), bool. Engine tensors are float32, float64, int64 or bool: integers load as int64,
  float16 / bfloat16 only through `FloatCastAdapter.to("float32")` (a `LoadError` otherwise).
- burn's `PyTorchToBurnAdapter` (Linear weight transposed; BatchNorm / LayerNorm / GroupNorm /
  RmsNorm `weight` / `bias` as `gamma` / `beta`), decided by the target module's type through
  a table other modules add rules to (`registry.register_pytorch_rule`), `ChainAdapter`,
  `FloatCastAdapter`, `IdentityAdapter`; `KeyRemapper` (regex renames, burn's `$1`
  replacement syntax), `map_indices_contiguous`, `PathFilter`; `ApplyResult` with burn's
  fields (`applied`, `skipped`, `missing`, `unused`, `errors`) and `ApplyError` kinds
  (`ShapeMismatch`, `DTypeMismatch`, `AdapterError`, `LoadError`).

Not supported: saving (burn's PytorchStore cannot save either), burnpack files, TAR
checkpoints of old torchvision models, big-endian files, storage views (PyTorch < 1.0),
complex or quantized tensors, full-model pickles (`torch.save(model)`: refused, they name
the model's classes), enum modules and `skip_enum_variants` (the engine has no enum modules),
lazy or memory-mapped reading (files are read whole), the "did you mean" hints of burn's
summary.

How this differs from PyTorch's `model.load_state_dict(state_dict, strict)`:
- A new module is returned; the given one is untouched (PyTorch copies in place).
- Params keep their ParamIds, device and require-grad flag but take the file's float dtype
  (PyTorch casts into the existing parameter's dtype).
- Keys are burn's paths: `norm.gamma`, not `norm.weight`; Linear weights are transposed.
- `missing` and `unused` (PyTorch: `missing_keys`, `unexpected_keys`) are sorted, and `unused`
  also lists the PyTorch keys of norm params that were applied under their alternative name
  (`norm.weight`), as burn's applier does (see `ApplyResult`).
- Strictness is two switches: `allow_partial(False)` raises on missing tensors only (unused
  tensors never raise); `validate(True)` raises on shape or dtype errors (PyTorch raises on
  a size mismatch even with `strict=False`).
- With `PytorchStore`, numeric key segments are renumbered to be contiguous before matching
  (`0`, `2`, `3` become `0`, `1`, `2`), so an `nn.Sequential` with ReLUs between layers loads
  into a list of modules without them.
"""

from .adapter import (
    ChainAdapter,
    FloatCastAdapter,
    IdentityAdapter,
    ModuleAdapter,
    PyTorchToBurnAdapter,
)
from .applier import Applier, apply
from .apply_result import ApplyError, ApplyResult
from .errors import (
    PytorchError,
    PytorchStoreError,
    SafetensorsStoreError,
    StoreError,
    TensorSnapshotError,
)
from .filter import PathFilter
from .keyremapper import KeyRemapper, map_indices_contiguous
from .reader import PytorchReader
from .registry import (
    PYTORCH_TO_BURN_RULES,
    PyTorchRule,
    register_pytorch_rule,
    split_snapshot,
    transpose_2d,
)
from .snapshot import TensorSnapshot
from .store import PytorchStore, SafetensorsStore, load_from

__all__ = [
    "PYTORCH_TO_BURN_RULES",
    "Applier",
    "ApplyError",
    "ApplyResult",
    "ChainAdapter",
    "FloatCastAdapter",
    "IdentityAdapter",
    "KeyRemapper",
    "ModuleAdapter",
    "PathFilter",
    "PyTorchRule",
    "PyTorchToBurnAdapter",
    "PytorchError",
    "PytorchReader",
    "PytorchStore",
    "PytorchStoreError",
    "SafetensorsStore",
    "SafetensorsStoreError",
    "StoreError",
    "TensorSnapshot",
    "TensorSnapshotError",
    "apply",
    "load_from",
    "map_indices_contiguous",
    "register_pytorch_rule",
    "split_snapshot",
    "transpose_2d",
]
