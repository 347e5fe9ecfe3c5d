"""A restricted unpickler: enough of pickle to read a PyTorch state_dict, and nothing more.

burn reads `.pt` pickles with its own opcode interpreter (crates/burn-store/src/pytorch/
pickle_reader.rs, burn 2c06be351006851d42fdb6df16b976f4a82d9747). Here Python's own unpickler
runs with `find_class` restricted to an allowlist (the pattern of the `pickle` docs'
"Restricting Globals"): every global a pickle names goes through `find_class`, so nothing
outside the list can be imported, let alone called. The allowed globals are inert stand-ins, not
torch's objects (torch is never imported):

- `collections.OrderedDict` (the state_dict itself and the empty backward-hooks dict);
- `torch._utils._rebuild_tensor_v2`, `_rebuild_tensor` (PyTorch < 1.6), `_rebuild_parameter`
  and `torch._tensor._rebuild_from_type_v2`: they build a `TensorRecord` (storage, offset,
  shape, strides), never a tensor;
- the storage types `torch.FloatStorage`, ... (inside persistent ids) and the classes
  `torch.Tensor` / `torch.nn.parameter.Parameter` (as `_rebuild_from_type_v2` names them);
- dtype names such as `torch.float32` (plain values some checkpoints hold).

Anything else is refused with a one-line error naming the file and the global, before it can
run. The stand-ins are immutable tuples, so a pickle's BUILD opcode cannot alter them.

Differences from burn's reader: burn accepts any GLOBAL and refuses only when it is called
(so `{"f": os.system}` loads there, ignored); here the global itself is refused. burn ignores a
tensor's strides and reads `prod(shape)` elements from the offset; here strides are honoured
(as `torch.load` does), so a saved non-contiguous tensor (e.g. a transposed view) reads right.
"""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from harness.engine.untrusted import INT64_MAX, MAX_RANK, clip, shown

__all__ = ["BadPickle", "StorageRef", "TensorRecord", "unpickle"]

# PyTorch storage class -> stored dtype (burn's `storage_type_to_dtype`).
STORAGE_DTYPES = {
    "DoubleStorage": "float64",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}
# `torch.float32` and its aliases, as a checkpoint may hold dtypes as plain values.
_DTYPE_NAMES = (
    *STORAGE_DTYPES.values(),
    *("double", "float", "half", "long", "int", "short"),
)


class BadPickle(Exception):
    """Internal: a refused or malformed pickle; the reader adds the file name."""


class TorchGlobal(NamedTuple):
    """An allowed global that is only data (a dtype name, a tensor class)."""

    module: str
    name: str


class StorageType(NamedTuple):
    """`torch.FloatStorage` and friends, as named in a persistent id."""

    name: str
    dtype: str


class StorageRef(NamedTuple):
    """A storage a tensor views: its record key, dtype and element count (from the pickle)."""

    key: str
    dtype: str
    numel: int


class TensorRecord(NamedTuple):
    """What `_rebuild_tensor_v2` describes: a strided view of a storage."""

    storage: StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


class _Rebuild(NamedTuple):
    """An allowed callable global; immutable, so BUILD cannot redirect it."""

    qualname: str
    fn: Callable[..., Any]

    def __call__(self, *args):
        return self.fn(*args)


def _int(value, what: str) -> int:
    """A non-negative int64, as PyTorch stores sizes, strides, offsets and element counts."""
    if type(value) is not int or not 0 <= value <= INT64_MAX:
        raise BadPickle(f"{what} must be an int in [0, 2**63), got {shown(value)}")
    return value


def _ints(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple | list):
        raise BadPickle(f"{what} must be a tuple of ints, got {shown(value)}")
    if len(value) > MAX_RANK:
        raise BadPickle(f"{what} has rank {len(value)}, more than {MAX_RANK}")
    return tuple(_int(v, what) for v in value)


def _record(storage, offset, size, stride) -> TensorRecord:
    if not isinstance(storage, StorageRef):
        raise BadPickle(f"tensor storage must be a persistent storage id, got {shown(storage)}")
    shape = _ints(size, "tensor size")
    strides = _ints(stride, "tensor stride")
    if len(strides) != len(shape):
        raise BadPickle(
            f"tensor size {shown(list(shape))} and stride {shown(list(strides))} differ in rank"
        )
    return TensorRecord(storage, _int(offset, "storage offset"), shape, strides)


def _rebuild_tensor_v2(storage, offset, size, stride, _requires_grad=False, *_hooks_metadata):
    return _record(storage, offset, size, stride)


def _rebuild_tensor(storage, offset, size, stride):
    return _record(storage, offset, size, stride)


def _rebuild_parameter(data, _requires_grad=False, _backward_hooks=None):
    if not isinstance(data, TensorRecord):
        raise BadPickle(f"_rebuild_parameter expects a tensor, got {shown(data)}")
    return data


_TENSOR_TYPES = {
    TorchGlobal("torch", "Tensor"),
    TorchGlobal("torch._tensor", "Tensor"),
    TorchGlobal("torch.nn.parameter", "Parameter"),
}


def _rebuild_from_type_v2(func, new_type, args, _state=None):
    # torch calls func(*args) and then casts to new_type; only tensor types are known here.
    if not isinstance(func, _Rebuild) or func.fn is _rebuild_from_type_v2:
        raise BadPickle(
            f"_rebuild_from_type_v2 expects a tensor rebuild function, got {shown(func)}"
        )
    if new_type not in _TENSOR_TYPES:
        raise BadPickle(f"_rebuild_from_type_v2 to {shown(new_type)} is not a tensor type")
    if not isinstance(args, tuple):
        raise BadPickle(f"_rebuild_from_type_v2 expects an argument tuple, got {shown(args)}")
    return func(*args)


def _ordered_dict(*args):
    return OrderedDict(*args)


def _allowed() -> dict[tuple[str, str], object]:
    table: dict[tuple[str, str], object] = {
        ("collections", "OrderedDict"): _Rebuild("collections.OrderedDict", _ordered_dict),
        ("torch._utils", "_rebuild_tensor_v2"): _Rebuild("_rebuild_tensor_v2", _rebuild_tensor_v2),
        ("torch._utils", "_rebuild_tensor"): _Rebuild("_rebuild_tensor", _rebuild_tensor),
        ("torch._utils", "_rebuild_parameter"): _Rebuild("_rebuild_parameter", _rebuild_parameter),
        ("torch._tensor", "_rebuild_from_type_v2"): _Rebuild(
            "_rebuild_from_type_v2", _rebuild_from_type_v2
        ),
    }
    for name, dtype in STORAGE_DTYPES.items():
        table["torch", name] = StorageType(name, dtype)
    for name in _DTYPE_NAMES:
        table["torch", name] = TorchGlobal("torch", name)
    for global_ in _TENSOR_TYPES:
        table[global_.module, global_.name] = global_
    return table


ALLOWED = _allowed()
ALLOWED_TEXT = "collections.OrderedDict, torch._utils._rebuild_tensor_v2 and torch.*Storage"


def storage_ref(pid) -> StorageRef:
    """A persistent id `('storage', torch.FloatStorage, key, location, numel[, view])`."""
    if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
        raise BadPickle(f"persistent id {shown(pid)} is not a storage id")
    storage_type, key, numel = pid[1], pid[2], pid[4]
    if not isinstance(storage_type, StorageType):
        raise BadPickle(f"storage type {shown(storage_type)} is not a torch storage class")
    if not isinstance(key, str):
        raise BadPickle(f"storage key {shown(key)} is not a string")
    if len(pid) > 5 and pid[5] is not None:
        raise BadPickle("storage views (files written by PyTorch < 1.0) are not supported")
    return StorageRef(key, storage_type.dtype, _int(numel, "storage size"))


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        found = ALLOWED.get((module, name))
        if found is None:
            raise BadPickle(
                f"refused global '{clip(f'{module}.{name}')}': a state_dict of tensors needs only "
                f"{ALLOWED_TEXT} (for a saved model, save model.state_dict() instead)"
            )
        return found

    def persistent_load(self, pid):
        ref = storage_ref(pid)
        known = self.storages.setdefault(ref.key, ref)
        if known != ref:
            raise BadPickle(
                f"storage '{clip(ref.key)}' is described twice: {shown(known)} and {shown(ref)}"
            )
        return ref


def unpickle(data: bytes | io.BufferedIOBase) -> tuple[Any, dict[str, StorageRef]]:
    """Unpickle `data` (bytes, or a stream positioned at a pickle) with the allowlist.

    Returns the object and the storages its tensors refer to, by key. Raises BadPickle for a
    refused global or any malformed content.
    """
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    unpickler = _Unpickler(stream)
    unpickler.storages = {}
    try:
        obj = unpickler.load()
    except BadPickle:
        raise
    except Exception as exc:  # truncated or corrupt bytes: every failure is the file's fault
        raise BadPickle(f"corrupt pickle ({type(exc).__name__}: {clip(str(exc))})") from exc
    return obj, unpickler.storages
