"""The tensors of a `.safetensors` file, read with the `safetensors` package.

`safetensors.deserialize` parses the header and hands back each tensor's raw bytes, dtype and
shape; the arrays are built here (so bfloat16, which `safetensors.numpy` cannot load, comes out
as its bits like every other bfloat16 snapshot). The dtypes accepted are burn's
(`safetensor_dtype_to_burn` in crates/burn-store/src/safetensors/store.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U8 BOOL;
any other dtype (F8, complex, U16) fails the whole file, as in burn. A file is read through
`harness.engine.untrusted.read_file` (regular files of at most 2 GiB), and a shape NumPy cannot
hold (more than 64 dims; `(2**63, 0)`, which safetensors accepts as zero bytes) is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.engine.untrusted import clip, read_file, shape_problem

from .errors import SafetensorsStoreError
from .snapshot import TensorSnapshot, numpy_dtype

__all__ = ["read_safetensors"]

_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U8": "uint8",
    "BOOL": "bool",
}


def read_safetensors(data: bytes, label: str) -> dict[str, TensorSnapshot]:
    """Snapshots of every tensor in a safetensors buffer, sorted by name; `label` names the
    source in errors."""
    import safetensors  # imported on use: loading the engine stays cheap

    try:
        entries = safetensors.deserialize(bytes(data))
    except (safetensors.SafetensorError, ValueError, OSError) as exc:
        raise SafetensorsStoreError(f"{label}: not a safetensors file: {clip(str(exc))}") from None
    out = {}
    for name, info in sorted(entries):
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise SafetensorsStoreError(
                f"{label}: tensor '{clip(name)}': unsupported dtype {clip(str(info['dtype']))}"
            )
        shape = tuple(info["shape"])
        problem = shape_problem(shape, numpy_dtype(dtype).itemsize)
        if problem:
            raise SafetensorsStoreError(f"{label}: tensor '{clip(name)}': {problem}")
        array = np.frombuffer(info["data"], dtype=numpy_dtype(dtype)).reshape(shape)
        array.flags.writeable = False
        out[name] = TensorSnapshot(lambda a=array: a, dtype, shape, tuple(name.split(".")))
    return out


def read_safetensors_file(path: str | Path) -> dict[str, TensorSnapshot]:
    """`read_safetensors` of a file; an unreadable file is a one-line SafetensorsStoreError."""
    return read_safetensors(read_file(path, SafetensorsStoreError), str(path))
