"""`PytorchReader`: the tensors of a `torch.save` file as NumPy arrays, without torch.

Transliterates burn-store's reader (crates/burn-store/src/pytorch/reader.rs, burn
2c06be351006851d42fdb6df16b976f4a82d9747) for the two formats `torch.save` writes:

- the zip format (PyTorch >= 1.6, the default): `<name>/data.pkl` holds the pickle, each
  storage is the record `<name>/data/<key>`, `<name>/byteorder` says "little" or "big";
- the legacy format (`_use_new_zipfile_serialization=False`, PyTorch < 1.6): five pickles in a
  row (magic number, protocol version 1001, system info, the object, the sorted storage keys),
  then for each key an int64 element count and the raw little-endian elements.

A plain pickle without storages (a dict of numbers) reads as having no tensors, as in burn.
Not supported, each with a one-line error: TAR checkpoints (old torchvision), big-endian files
(burn refuses them too), storage views (PyTorch < 1.0), complex and quantized storages.

Like burn's `extract_tensors_with_data`, nested dicts are flattened with dots
(`{"model": {"fc.weight": t}}` gives `model.fc.weight`), non-tensor values (epoch numbers,
strings, lists) are skipped, and `top_level_key` selects one nested dict first.

Differences from burn's reader, all where burn would return wrong numbers silently: a missing
or short storage record is an error (burn fills zeros), and strides are honoured (burn reads the
first `prod(shape)` elements after the offset; see `pickle_reader`).

Bounds (`harness.engine.untrusted`), so memory follows the file's size, not its claims: the file
is read whole only when it is a regular file of at most 2 GiB; a stored zip member (what
torch.save writes) is bounded by the file itself, and all DEFLATE members together (other zip
tools) may inflate to at most `INFLATION_RATIO` times the file's size (burn's zip crate inflates
without a cap). BZIP2 and LZMA members are refused (burn reads them): zipfile inflates each of
their chunks whole, so a 785-byte BZIP2 chunk becomes 1 GiB at once, past any cap. A storage
is read only up to the bytes its element count needs; shapes, strides and ranks NumPy cannot
hold are refused before NumPy sees them; values from the file are shown in at most 200
characters in messages.
"""

from __future__ import annotations

import io
import math
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from harness.engine.untrusted import (
    INT64_MAX,
    clip,
    read_file,
    shape_problem,
    shown,
    stride_problem,
)

from .errors import PytorchError
from .pickle_reader import BadPickle, StorageRef, TensorRecord, unpickle
from .snapshot import TensorSnapshot, numpy_dtype

__all__ = ["PytorchReader"]

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_HEADER = b"\x80\x02\x8a\x0a" + _LEGACY_MAGIC.to_bytes(10, "little") + b"."
_LEGACY_PROTOCOL = 1001
_ZIP_HEADER = b"PK\x03\x04"
_MAX_DEPTH = 100
_MAX_ENTRIES = 1_000_000
# Trained float tensors deflate by a few percent, zeros by ~1000x (a bomb's content): a file
# that is mostly zeros can pass 16x and is refused, with the advice to re-save it.
INFLATION_RATIO = 16
_METHODS = {zipfile.ZIP_BZIP2: "BZIP2", zipfile.ZIP_LZMA: "LZMA"}
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    RuntimeError,  # an encrypted member
    ValueError,
)


class PytorchReader:
    """The tensors of one PyTorch checkpoint, keyed by their dotted names in file order.

    `PytorchReader(path)` is burn's `PytorchReader::new(path)`; `PytorchReader(path, key)` is
    `PytorchReader::with_top_level_key(path, key)`. `format` is "zip", "legacy" or "pickle".
    """

    def __init__(self, path: str | Path, top_level_key: str | None = None) -> None:
        self.path = Path(path)
        label = str(path)
        data = _read_bytes(label, self.path)
        try:
            self.format, obj, arrays = _parse(label, data)
            records = _flatten(obj, top_level_key)
            self._tensors = {
                name: _snapshot(name, record, arrays) for name, record in records.items()
            }
        except BadPickle as exc:
            raise PytorchError(f"{label}: {exc}") from None

    def keys(self) -> list[str]:
        """The tensor names, in the file's order."""
        return list(self._tensors)

    def get(self, name: str) -> TensorSnapshot | None:
        """One tensor, or None."""
        return self._tensors.get(name)

    def tensors(self) -> dict[str, TensorSnapshot]:
        """All tensors by name (a new dict)."""
        return dict(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def _read_bytes(label: str, path: Path) -> bytes:
    data = read_file(path, PytorchError)
    if not data:
        raise PytorchError(f"{label}: the file is empty, not a PyTorch checkpoint")
    return data


def _parse(label: str, data: bytes) -> tuple[str, object, dict[str, np.ndarray]]:
    if data.startswith(_ZIP_HEADER):
        obj, arrays = _parse_zip(label, data)
        return "zip", obj, arrays
    if data.startswith(_LEGACY_HEADER):
        obj, arrays = _parse_legacy(data)
        return "legacy", obj, arrays
    if data[257:262] == b"ustar":
        raise BadPickle("TAR checkpoints (old torchvision models) are not supported")
    try:
        obj, storages = unpickle(data)
    except BadPickle as exc:
        raise BadPickle(
            f"not a PyTorch checkpoint (not a zip archive, not the legacy format): {exc}"
        ) from None
    if storages:
        raise BadPickle("a plain pickle with tensor data but no storages (expected a zip archive)")
    return "pickle", obj, {}


def _parse_zip(label: str, data: bytes) -> tuple[object, dict[str, np.ndarray]]:
    with _Archive(data) as archive:
        pickle_name = _data_pkl(archive.names)
        prefix = pickle_name[: -len("data.pkl")]
        if _byteorder(archive, prefix) == "big":
            raise BadPickle("big-endian checkpoints are not supported (burn refuses them too)")
        obj, storages = unpickle(archive.read(pickle_name))
        arrays = {
            key: _storage_array(ref, _record(archive, f"{prefix}data/{key}", ref))
            for key, ref in storages.items()
        }
    return obj, arrays


class _Archive:
    """A zip archive whose members are read with a bound: a stored member is no longer than the
    file; compressed members share one inflation budget of INFLATION_RATIO x the file's size.
    Every zip failure is a BadPickle ("corrupt or truncated")."""

    def __init__(self, data: bytes) -> None:
        self._size, self._budget = len(data), INFLATION_RATIO * len(data)
        self._zip = self._guard(lambda: zipfile.ZipFile(io.BytesIO(data)))
        self.names = self._zip.namelist()

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()

    def read(self, name: str, limit: int | None = None) -> bytes:
        """Member `name`'s bytes, at most `limit` of them (None: all); KeyError if absent."""
        info = self._zip.getinfo(name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = _METHODS.get(info.compress_type, f"method {info.compress_type}")
            raise BadPickle(
                f"record '{clip(name)}' is compressed with {method}, which is not read (only "
                "stored records, as torch.save writes them, and DEFLATE)"
            )
        compressed = info.compress_type == zipfile.ZIP_DEFLATED
        want = self._budget + 1 if compressed else min(info.compress_size, self._size)
        if limit is not None:
            want = min(want, limit)

        def read() -> bytes:
            with self._zip.open(info) as member:
                return member.read(want)

        raw = self._guard(read)
        if compressed:
            if len(raw) > self._budget:
                raise BadPickle(
                    f"compressed record '{clip(name)}' inflates past {INFLATION_RATIO} times the "
                    "file's size (a zip bomb?); torch.save stores records uncompressed: re-save it"
                )
            self._budget -= len(raw)
        return raw

    @staticmethod
    def _guard(action):
        try:
            return action()
        except _ZIP_ERRORS as exc:
            raise BadPickle(f"corrupt or truncated zip archive ({clip(str(exc))})") from None


def _data_pkl(names: list[str]) -> str:
    for preferred in ("data.pkl", "archive/data.pkl"):
        if preferred in names:
            return preferred
    for name in names:
        if name.endswith("/data.pkl"):
            return name
    raise BadPickle("no data.pkl in the zip archive (not a torch.save file)")


def _byteorder(archive: _Archive, prefix: str) -> str:
    try:
        return archive.read(f"{prefix}byteorder", 16).decode("ascii", "replace").strip()
    except KeyError:
        return "little"  # files older than the byteorder record are little-endian


def _record(archive: _Archive, name: str, ref: StorageRef) -> bytes:
    """The bytes the storage's elements need, and no more: a record that claims to unpack to
    more than that is not decompressed beyond it."""
    try:
        return archive.read(name, ref.numel * numpy_dtype(ref.dtype).itemsize)
    except KeyError:
        raise BadPickle(f"storage record '{clip(name)}' is missing from the archive") from None


def _parse_legacy(data: bytes) -> tuple[object, dict[str, np.ndarray]]:
    stream = io.BytesIO(data)
    magic, protocol, sys_info = (unpickle(stream)[0] for _ in range(3))
    if magic != _LEGACY_MAGIC or protocol != _LEGACY_PROTOCOL:
        raise BadPickle(
            f"unsupported legacy format (magic {shown(magic)}, protocol {shown(protocol)})"
        )
    if not isinstance(sys_info, Mapping) or sys_info.get("little_endian") is not True:
        raise BadPickle("big-endian checkpoints are not supported (burn refuses them too)")
    obj, storages = unpickle(stream)
    keys, _ = unpickle(stream)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise BadPickle("the legacy storage key list is malformed")
    if set(keys) != set(storages):
        raise BadPickle("the legacy storage key list does not match the tensors' storages")
    arrays, offset = {}, stream.tell()
    for key in keys:
        ref = storages[key]
        count = int.from_bytes(data[offset : offset + 8], "little", signed=True)
        nbytes = max(count, 0) * numpy_dtype(ref.dtype).itemsize
        arrays[key] = _storage_array(ref, data[offset + 8 : offset + 8 + nbytes])
        offset += 8 + nbytes
    return obj, arrays


def _storage_array(ref: StorageRef, raw: bytes) -> np.ndarray:
    dtype = numpy_dtype(ref.dtype)
    need = ref.numel * dtype.itemsize
    if len(raw) < need:
        raise BadPickle(
            f"storage '{clip(ref.key)}' holds {len(raw)} bytes, its {ref.numel} {ref.dtype} "
            f"elements need {need} (truncated file?)"
        )
    return np.frombuffer(raw, dtype=dtype, count=ref.numel)


def _flatten(obj: object, top_level_key: str | None) -> dict[str, TensorRecord]:
    if not isinstance(obj, dict):
        raise BadPickle(
            f"expected a dict (a state_dict) at the root, found {type(obj).__name__}; "
            "the file may be a full model save rather than a state_dict"
        )
    if top_level_key is not None:
        nested = obj.get(top_level_key)
        if not isinstance(nested, dict):
            keys = [k for k in obj if isinstance(k, str)]
            raise BadPickle(
                f"top-level key '{clip(top_level_key)}' not found or not a dict; "
                f"top-level keys in the file: {shown(keys)}"
            )
        obj = nested
    out: dict[str, TensorRecord] = {}
    _walk(obj, (), out, set(), [0])
    return out


def _walk(
    obj: dict, prefix: tuple[str, ...], out: dict[str, TensorRecord], open_: set, count: list
) -> None:
    # A pickle can share one dict at many places; the limits stop one that nests 2**40 paths
    # (burn stops its reader at 1M memo nodes for the same reason).
    where = clip(".".join(prefix))
    if id(obj) in open_:
        raise BadPickle(f"the dict at '{where}' contains itself")
    if len(prefix) > _MAX_DEPTH:
        raise BadPickle(f"dicts nested deeper than {_MAX_DEPTH} levels at '{where}'")
    count[0] += len(obj)
    if count[0] > _MAX_ENTRIES:
        raise BadPickle(f"more than {_MAX_ENTRIES} dict entries (shared dicts repeated?)")
    open_.add(id(obj))
    for key, value in obj.items():
        if isinstance(key, int) and abs(key) <= INT64_MAX:
            key = str(key)  # burn's get_dict_key: integer keys (optimizer state) as strings
        elif not isinstance(key, str):
            raise BadPickle(f"dict key {shown(key)} at '{where}' is not a string or an int64")
        path = (*prefix, key)
        if isinstance(value, TensorRecord):
            name = ".".join(path)
            if name in out:
                raise BadPickle(f"two tensors flatten to the same key '{clip(name)}'")
            out[name] = value
        elif isinstance(value, dict):
            _walk(value, path, out, open_, count)
    open_.discard(id(obj))


def _snapshot(name: str, record: TensorRecord, arrays: dict[str, np.ndarray]) -> TensorSnapshot:
    view = _view(name, record, arrays[record.storage.key])
    return TensorSnapshot(lambda: view, record.storage.dtype, record.shape, tuple(name.split(".")))


def _view(name: str, record: TensorRecord, storage: np.ndarray) -> np.ndarray:
    """The tensor as a read-only strided view of its storage, bounds checked first
    (`as_strided` itself would read past the buffer)."""
    shape, stride = record.shape, record.stride
    itemsize = storage.dtype.itemsize
    problem = shape_problem(shape, itemsize) or stride_problem(stride, itemsize)
    if problem:
        raise BadPickle(f"tensor '{clip(name)}': {problem}")
    if math.prod(shape) == 0:
        return np.empty(shape, dtype=storage.dtype)
    last = record.offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    if last >= storage.size:
        raise BadPickle(
            f"tensor '{clip(name)}' (offset {record.offset}, shape {shown(list(shape))}, stride "
            f"{shown(list(stride))}) reads element {last} of a storage of {storage.size}"
        )
    return np.lib.stride_tricks.as_strided(
        storage[record.offset :], shape, tuple(s * itemsize for s in stride), writeable=False
    )
