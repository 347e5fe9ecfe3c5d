"""`TensorSnapshot`: one stored tensor, its data produced lazily, plus where it sits in a module.

Transliterates burn-store's `TensorSnapshot` (crates/burn-store/src/tensor_snapshot.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747): a data function, the dtype and shape known without
reading the data, the path stack (`["fc1", "weight"]`), the container stack
(`["Struct:Net", "Struct:Linear"]`, filled while a module is walked) and the tensor id (always
None for PyTorch and safetensors files, which carry no parameter identity).

Dtypes are named as NumPy names them (`"float32"`, `"int64"`, `"bool"`), plus `"bfloat16"`,
which NumPy lacks: its data comes out as the raw uint16 bit patterns (`FloatCastAdapter` widens
them exactly to float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .errors import TensorSnapshotError

__all__ = ["FLOAT_DTYPES", "TensorSnapshot", "numpy_dtype"]

# Little-endian storage dtypes by name; bfloat16 is held as its bits.
_NUMPY = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    "bfloat16": "<u2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint64": "<u8",
    "uint32": "<u4",
    "uint16": "<u2",
    "uint8": "u1",
    "bool": "?",
}
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def numpy_dtype(name: str) -> np.dtype:
    """The little-endian NumPy dtype that holds a stored dtype (bfloat16: uint16 bits)."""
    return np.dtype(_NUMPY[name])


def module_type(container_stack: Sequence[str] | None) -> str | None:
    """The innermost `Struct:` / `Enum:` container of `container_stack`, skipping `Vec` /
    `Tuple` wrappers; None when there is none (or no stack)."""
    for container in reversed(container_stack or ()):
        if container.startswith(("Struct:", "Enum:")):
            return container
    return None


@dataclass(frozen=True)
class TensorSnapshot:
    """A tensor whose values are read only when `to_data()` is called.

    `data_fn()` returns a NumPy array of `shape`; it may be a read-only view of the file's
    storage (a strided view, as PyTorch's tensors view their storage).
    """

    data_fn: Callable[[], np.ndarray]
    dtype: str
    shape: tuple[int, ...]
    path_stack: tuple[str, ...] | None = None
    container_stack: tuple[str, ...] | None = None
    tensor_id: object | None = None

    @classmethod
    def from_data(
        cls,
        array: np.ndarray,
        path_stack: Sequence[str] = (),
        container_stack: Sequence[str] = (),
        dtype: str | None = None,
    ) -> TensorSnapshot:
        """A snapshot of an array already in memory (`dtype` defaults to the array's)."""
        array = np.asarray(array)
        name = dtype or array.dtype.name
        if name not in _NUMPY:
            raise TensorSnapshotError(f"{'.'.join(path_stack)}: unsupported dtype {name}")
        return cls(
            lambda: array, name, tuple(array.shape), tuple(path_stack), tuple(container_stack)
        )

    def to_data(self) -> np.ndarray:
        """The values; raises TensorSnapshotError when they cannot be produced."""
        data = self.data_fn()
        if tuple(data.shape) != self.shape:
            raise TensorSnapshotError(
                f"{self.full_path()}: data has shape {list(data.shape)}, "
                f"the snapshot says {list(self.shape)}"
            )
        return data

    def full_path(self) -> str:
        """The dotted path, `fc1.weight`."""
        return ".".join(self.path_stack or ())

    def module_type(self) -> str | None:
        """The innermost user-defined module around the tensor (`Struct:Linear`), skipping
        `Vec` / `Tuple` wrappers; None without container information (burn's
        `TensorSnapshot::module_type`)."""
        return module_type(self.container_stack)

    def with_path(self, path: str | Sequence[str]) -> TensorSnapshot:
        """The same tensor under another path (a dotted string or its segments)."""
        parts = tuple(path.split(".")) if isinstance(path, str) else tuple(path)
        return replace(self, path_stack=parts)

    def with_context(
        self, path_stack: Sequence[str], container_stack: Sequence[str]
    ) -> TensorSnapshot:
        """The same tensor seen from a place in a module (what adapters decide by)."""
        return replace(self, path_stack=tuple(path_stack), container_stack=tuple(container_stack))

    def map_data(
        self,
        fn: Callable[[np.ndarray], np.ndarray],
        shape: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> TensorSnapshot:
        """A snapshot whose data is `fn(self.to_data())`, computed lazily; `shape` / `dtype`
        describe the result (default: unchanged)."""
        source = self.to_data
        return replace(
            self,
            data_fn=lambda: fn(source()),
            shape=self.shape if shape is None else tuple(shape),
            dtype=dtype or self.dtype,
        )
