"""The burnpack container, the subset optimizer and scheduler records use (burn's
`crates/burn-pack/src/{lib,base,writer,reader}.rs`, read at burn commit
2c06be351006851d42fdb6df16b976f4a82d9747).

Layout, as burn's crate docs specify it: a 10-byte header (magic `0x4255524E` "BURN" as a
little-endian u32, format version u16 = 1, metadata size u32), the CBOR metadata, zero padding
to the next 256-byte boundary, then the tensor data, each tensor's bytes starting on a 256-byte
boundary (offsets relative to the data section), little-endian. The metadata is the map serde
derives for burn's `Metadata`: `tensors` (name -> `{dtype, shape, data_offsets: [start, end],
param_id?}`, names sorted), `metadata` (string -> string, left out when empty), `scalars`
(name -> `{"Int" | "UInt" | "Float" | "Bool": value}`, left out when empty). The data is
written in the order the tensors are given, as burn's `Writer` does.

Subset implemented: dtypes F64, F32, F16, I64, I32, I16, I8, U64, U32, U16, U8 (not BF16,
Flex32, `Bool(store)` nor `QFloat(scheme)`, which the engine's optimizer states never hold);
CBOR definite lengths on write (what ciborium writes), definite and indefinite on read; floats
written in the shortest width that keeps their bits (ciborium-ll's rule; any width read);
reading is whole (no lazy or memory-mapped tensors, no deferred writes). The reader checks
what burn's does (magic, version, metadata size, recursion depth 128, tensor count,
truncation, offsets) and more, where burn would accept a file its own writer never makes:
version 0 is refused (burn reads versions <= 1), every tensor must start on a 256-byte
boundary (burn's writer aligns them, its reader does not check), each tensor's byte length
must match its shape and dtype, a shape NumPy cannot hold is refused, the metadata's decoded
objects may take at most `MAX_DECODED_BYTES` (see `_Decoder`), and table keys must be strings.
Errors are `BurnpackError`, one line naming the source and the problem, each value from the
file shown in at most 200 characters (`harness.engine.untrusted`).

Saving goes through the harness's one atomic writer (`harness.sidecar.atomic_write`: temp file
in the same folder, fsync, `os.replace`), burn's `write_to_file_atomic` behaviour; burn's
`save` uses `write_to_file`, which leaves a truncated file when it fails partway. As burn, a
path without an extension gets `.bpk` when saving, and when loading if it does not exist as
given.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
from pathlib import Path

import numpy as np

from harness.engine.untrusted import clip, read_file, shape_problem, shown

__all__ = [
    "EXTENSION",
    "BurnpackError",
    "Pack",
    "PackTensor",
    "Scalar",
    "pack_bytes",
    "read_pack",
    "resolve_load_path",
    "save_pack",
    "unpack_bytes",
]

MAGIC = 0x4255524E
VERSION = 1
HEADER_SIZE = 10
ALIGNMENT = 256
EXTENSION = "bpk"
MAX_METADATA_SIZE = 100 * 1024 * 1024
MAX_TENSOR_COUNT = 100_000
MAX_DEPTH = 128
MAX_DECODED_BYTES = 256 << 20  # the metadata's decoded objects, estimated (see _Decoder)

# burn's `DType` variant names (serde: a unit variant is its name as a CBOR text string).
DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class BurnpackError(ValueError):
    """A burnpack container that cannot be written or read: `<source>: <problem>`."""


@dataclasses.dataclass(frozen=True)
class Scalar:
    """burn_pack's `Scalar`: `kind` is its variant (`Int`, `UInt`, `Float`, `Bool`)."""

    kind: str
    value: int | float | bool

    KINDS = ("Int", "UInt", "Float", "Bool")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"Scalar: unknown kind {self.kind!r} (expected one of {self.KINDS})")


@dataclasses.dataclass(frozen=True)
class PackTensor:
    """One tensor entry: name, little-endian array (its dtype and shape) and optional param id."""

    name: str
    array: np.ndarray
    param_id: int | None = None


@dataclasses.dataclass
class Pack:
    """A whole container: tensors (in data order), scalars and string metadata."""

    tensors: list[PackTensor]
    scalars: dict[str, Scalar]
    metadata: dict[str, str]


# ---- writing ------------------------------------------------------------------------------


def pack_bytes(pack: Pack, source: str = "<bytes>") -> bytes:
    """The container's bytes (burn's `Writer::into_bytes`)."""
    descriptors: dict[str, dict] = {}
    blobs: list[tuple[int, bytes]] = []
    offset = 0
    for tensor in pack.tensors:
        dtype_name = _DTYPE_NAMES.get(tensor.array.dtype.newbyteorder("<"))
        if dtype_name is None:
            raise BurnpackError(
                f"{source}: tensor '{tensor.name}': dtype {tensor.array.dtype} is not in the "
                f"supported subset ({', '.join(DTYPES)})"
            )
        if tensor.name in descriptors:
            raise BurnpackError(f"{source}: duplicate tensor name '{tensor.name}'")
        data = np.ascontiguousarray(tensor.array, dtype=DTYPES[dtype_name]).tobytes()
        start = -(-offset // ALIGNMENT) * ALIGNMENT
        descriptor = {
            "dtype": dtype_name,
            "shape": [int(n) for n in tensor.array.shape],
            "data_offsets": [start, start + len(data)],
        }
        if tensor.param_id is not None:
            descriptor["param_id"] = int(tensor.param_id)
        descriptors[tensor.name] = descriptor
        blobs.append((start, data))
        offset = start + len(data)
    metadata: dict = {"tensors": dict(sorted(descriptors.items()))}
    if pack.metadata:
        metadata["metadata"] = dict(sorted(pack.metadata.items()))
    if pack.scalars:
        metadata["scalars"] = {key: {s.kind: s.value} for key, s in sorted(pack.scalars.items())}
    encoded = _encode(metadata)
    data_start = -(-(HEADER_SIZE + len(encoded)) // ALIGNMENT) * ALIGNMENT
    out = bytearray(data_start + offset)
    out[:HEADER_SIZE] = struct.pack("<IHI", MAGIC, VERSION, len(encoded))
    out[HEADER_SIZE : HEADER_SIZE + len(encoded)] = encoded
    for start, data in blobs:
        out[data_start + start : data_start + start + len(data)] = data
    return bytes(out)


def save_pack(path: str | os.PathLike, pack: Pack) -> Path:
    """Write the container atomically to `path` (`.bpk` appended when it has no extension);
    returns the path written."""
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix("." + EXTENSION)
    # Imported here: the engine's import stays free of the harness until a file is saved.
    from harness.sidecar import atomic_write

    data = pack_bytes(pack, str(path))
    try:
        atomic_write(path, lambda f: f.write(data))
    except OSError as exc:
        raise BurnpackError(f"{path}: cannot write ({exc.strerror or exc})") from exc
    return path


# ---- reading ------------------------------------------------------------------------------


def resolve_load_path(path: str | os.PathLike) -> Path:
    """burn's `Reader::from_file` rule: no extension and absent as given -> `.bpk`."""
    path = Path(path)
    if not path.suffix and not path.exists():
        return path.with_suffix("." + EXTENSION)
    return path


def read_pack(path: str | os.PathLike) -> Pack:
    """Read a container file whole (`BurnpackError` naming the file on any problem): a regular
    file of at most 2 GiB (`harness.engine.untrusted.read_file`; burn's cap is 100 GB)."""
    path = resolve_load_path(path)
    return unpack_bytes(read_file(path, BurnpackError), str(path))


def unpack_bytes(data: bytes, source: str = "<bytes>") -> Pack:
    """Parse a container (burn's `Reader::from_bytes` + `into_tensors`, `scalars`, `metadata`)."""
    if len(data) < HEADER_SIZE:
        raise BurnpackError(f"{source}: not a burnpack file (shorter than its 10-byte header)")
    magic, version, size = struct.unpack_from("<IHI", data)
    if magic != MAGIC:
        raise BurnpackError(f"{source}: not a burnpack file (bad magic number)")
    if version != VERSION:  # burn reads version 0 too, though it never wrote one
        raise BurnpackError(f"{source}: unsupported burnpack version {version} (reads {VERSION})")
    if size > MAX_METADATA_SIZE or HEADER_SIZE + size > len(data):
        raise BurnpackError(
            f"{source}: truncated file: metadata of {size} bytes, {len(data)} bytes in all"
        )
    try:
        metadata, end = _decode(memoryview(data)[HEADER_SIZE : HEADER_SIZE + size])
    except (UnicodeDecodeError, _CborError) as exc:
        raise BurnpackError(f"{source}: unreadable metadata ({clip(str(exc))})") from None
    if end != size or not isinstance(metadata, dict) or "tensors" not in metadata:
        raise BurnpackError(f"{source}: unreadable metadata (not burnpack's metadata map)")
    data_start = -(-(HEADER_SIZE + size) // ALIGNMENT) * ALIGNMENT
    entries = metadata["tensors"]
    if not isinstance(entries, dict) or len(entries) > MAX_TENSOR_COUNT:
        raise BurnpackError(f"{source}: unreadable metadata (bad tensor table)")
    _string_keys(source, "tensors", entries)
    # In data order (the order they were given to the writer), so rewriting gives the same file.
    tensors = [
        _tensor(source, name, d, data, data_start)
        for name, d in sorted(entries.items(), key=_start_offset)
    ]
    return Pack(
        tensors,
        _scalars(source, metadata.get("scalars", {})),
        _strings(source, metadata.get("metadata", {})),
    )


def _start_offset(entry) -> int:
    offsets = entry[1].get("data_offsets") if isinstance(entry[1], dict) else None
    return offsets[0] if isinstance(offsets, list) and offsets and _is_uint(offsets[0]) else 0


def _tensor(source: str, name, d, data: bytes, data_start: int) -> PackTensor:
    def bad(problem: str) -> BurnpackError:
        return BurnpackError(f"{source}: tensor '{clip(name)}': {problem}")

    if not isinstance(d, dict) or not {"dtype", "shape", "data_offsets"} <= d.keys():
        raise bad("descriptor lacks dtype, shape or data_offsets")
    dtype = DTYPES.get(d["dtype"]) if isinstance(d["dtype"], str) else None
    if dtype is None:
        raise bad(f"dtype {shown(d['dtype'])} is not in the supported subset ({', '.join(DTYPES)})")
    shape, offsets = d["shape"], d["data_offsets"]
    if not isinstance(shape, list) or not all(_is_uint(n) for n in shape):
        raise bad(f"bad shape {shown(shape)}")
    problem = shape_problem(shape, dtype.itemsize)
    if problem:
        raise bad(problem)
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_is_uint, offsets)):
        raise bad(f"bad data_offsets {shown(offsets)}")
    start, end = offsets
    if end < start:
        raise bad(f"corrupted offsets: end {end} < start {start}")
    if start % ALIGNMENT:  # burn's writer aligns every start; its reader does not check
        raise bad(f"data offset {start} is not a multiple of {ALIGNMENT} (burnpack's alignment)")
    if data_start + end > len(data):
        raise bad(f"truncated file: data ends at byte {data_start + end}, file has {len(data)}")
    if end - start != math.prod(shape) * dtype.itemsize:
        raise bad(f"{end - start} bytes for shape {shown(shape)} of {d['dtype']}")
    param_id = d.get("param_id")
    if param_id is not None and not _is_uint(param_id):
        raise bad(f"bad param_id {shown(param_id)}")
    raw = data[data_start + start : data_start + end]
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    return PackTensor(name, array, param_id)


def _scalars(source: str, table) -> dict[str, Scalar]:
    if not isinstance(table, dict):
        raise BurnpackError(f"{source}: unreadable metadata (scalars is not a map)")
    _string_keys(source, "scalars", table)
    out = {}
    for key, tagged in table.items():
        if not (isinstance(tagged, dict) and len(tagged) == 1):
            raise BurnpackError(
                f"{source}: scalar '{clip(key)}': not a tagged Scalar ({shown(tagged)})"
            )
        ((kind, value),) = tagged.items()
        checks = {"Int": _is_int, "UInt": _is_uint, "Float": _is_number, "Bool": _is_bool}
        if kind not in checks or not checks[kind](value):
            raise BurnpackError(
                f"{source}: scalar '{clip(key)}': bad Scalar {shown(kind)} = {shown(value)}"
            )
        out[key] = Scalar(kind, float(value) if kind == "Float" else value)
    return out


def _strings(source: str, table) -> dict[str, str]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise BurnpackError(f"{source}: unreadable metadata (metadata is not a string map)")
    _string_keys(source, "metadata", table)
    return dict(table)


def _string_keys(source: str, table_name: str, table: dict) -> None:
    """burn's tables are `BTreeMap<String, _>`: serde refuses any other key."""
    bad = next((k for k in table if not isinstance(k, str)), None)
    if bad is not None:
        raise BurnpackError(
            f"{source}: unreadable metadata ({table_name} key {shown(bad)} is not a string)"
        )


def _is_bool(v) -> bool:
    return isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_uint(v) -> bool:
    return _is_int(v) and v >= 0


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---- the CBOR subset (RFC 8949) the metadata needs ----------------------------------------


class _CborError(ValueError):
    pass


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    for info, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([major << 5 | info]) + struct.pack(fmt, n)
    raise BurnpackError(f"integer {n} does not fit CBOR's 64 bits")


def _encode(value) -> bytes:
    if value is True or value is False:
        return b"\xf5" if value else b"\xf4"
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, float):
        return _encode_float(value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return _head(3, len(raw)) + raw
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(_encode(v) for v in value)
    if isinstance(value, dict):
        return _head(5, len(value)) + b"".join(_encode(k) + _encode(v) for k, v in value.items())
    raise BurnpackError(f"cannot encode {type(value).__name__} in burnpack metadata")


def _encode_float(value: float) -> bytes:
    """The first of half, single, double that gives `value`'s f64 bits back (ciborium-ll's
    `Header::Float` rule, so -0.0 stays half and a NaN keeps its payload or grows)."""
    bits = struct.pack(">d", value)
    for prefix, fmt in ((b"\xf9", ">e"), (b"\xfa", ">f")):
        try:
            packed = struct.pack(fmt, value)
        except OverflowError:
            continue
        if struct.pack(">d", struct.unpack(fmt, packed)[0]) == bits:
            return prefix + packed
    return b"\xfb" + bits


def _decode(buf: memoryview) -> tuple[object, int]:
    """`(value, end position)` of the CBOR item at the start of `buf` (see `_Decoder`)."""
    return _Decoder(buf).item(0)


# CPython 3.11 object sizes, rounded up, with 16 bytes of allocator slack each: what a decoded
# item costs in memory (a list item or map entry is the slots its container holds for it).
_COST_INT, _COST_FLOAT, _COST_STR, _COST_BYTES = 48, 40, 72, 56
_COST_LIST, _COST_LIST_ITEM, _COST_MAP, _COST_MAP_ENTRY = 72, 16, 248, 64


class _Decoder:
    """The CBOR items of `buf`, decoded within a memory budget.

    A CBOR item takes one byte and a Python object 50 to 250; a file of nested one-element
    arrays would cost ~100 times its size (a 40 MB file, 3 GB). Each item's estimated size is
    charged before it is built and decoding stops at `MAX_DECODED_BYTES`; a declared length is
    checked against the bytes left before anything is allocated for it; nesting stops at
    `MAX_DEPTH` (burn's recursion limit). Every failure, truncation included, is a _CborError.
    `item` is one function on purpose: a bomb is refused after ~3 million items, fast.
    """

    def __init__(self, buf: memoryview) -> None:
        self.buf, self.budget = buf, MAX_DECODED_BYTES

    def spend(self, cost: int) -> None:
        self.budget -= cost
        if self.budget < 0:
            raise _CborError(
                f"decodes to more than {MAX_DECODED_BYTES} bytes of objects (a CBOR bomb?)"
            )

    def item(self, pos: int, depth: int = 0):
        """`(value, next position)` of the CBOR item at `pos`."""
        buf = self.buf
        if pos >= len(buf):
            raise _CborError("truncated")
        initial = buf[pos]
        major, n = initial >> 5, initial & 31
        if major == 7:
            return self.simple(pos + 1, n)
        pos += 1
        if n >= 24:
            if n <= 27:
                width = 1 << (n - 24)
                _need(buf, pos, width)
                n, pos = int.from_bytes(buf[pos : pos + width], "big"), pos + width
            elif n == 31 and major in (2, 3, 4, 5):
                n = None
            else:
                raise _CborError(f"unsupported CBOR head 0x{initial:02x}")
        if major <= 1:
            self.spend(_COST_INT)
            return (n if major == 0 else -1 - n), pos
        if major <= 3:
            return self.string(major, n, pos)
        if major == 6:
            raise _CborError("unsupported CBOR major type 6 (tags)")
        if depth >= MAX_DEPTH:
            raise _CborError(f"nesting deeper than {MAX_DEPTH}")
        if n is None:
            return self.indefinite(major, pos, depth)
        _need(buf, pos, n)  # each item takes at least one byte
        if major == 4:
            self.spend(_COST_LIST + _COST_LIST_ITEM * n)
            items = [None] * n
            for i in range(n):
                items[i], pos = self.item(pos, depth + 1)
            return items, pos
        self.spend(_COST_MAP + _COST_MAP_ENTRY * n)
        table: dict = {}
        for _ in range(n):
            pos = self.entry(table, pos, depth)
        return table, pos

    def entry(self, table: dict, pos: int, depth: int) -> int:
        key, pos = self.item(pos, depth + 1)
        if isinstance(key, list | dict):
            raise _CborError("a map key that is an array or a map")
        table[key], pos = self.item(pos, depth + 1)
        return pos

    def indefinite(self, major: int, pos: int, depth: int):
        """An array or map of indefinite length: items up to the 0xFF break."""
        buf, table, items = self.buf, {}, []
        self.spend(_COST_LIST if major == 4 else _COST_MAP)
        while True:
            if pos >= len(buf):
                raise _CborError("truncated")
            if buf[pos] == 0xFF:
                return (items if major == 4 else table), pos + 1
            if major == 4:
                self.spend(_COST_LIST_ITEM)
                item, pos = self.item(pos, depth + 1)
                items.append(item)
            else:
                self.spend(_COST_MAP_ENTRY)
                pos = self.entry(table, pos, depth)

    def simple(self, pos: int, info: int):
        self.spend(_COST_FLOAT)
        if info in (20, 21):
            return info == 21, pos
        if info == 22:
            return None, pos
        formats = {25: ">e", 26: ">f", 27: ">d"}
        if info not in formats:
            raise _CborError(f"unsupported CBOR simple value {info}")
        width = struct.calcsize(formats[info])
        _need(self.buf, pos, width)
        return struct.unpack_from(formats[info], self.buf, pos)[0], pos + width

    def string(self, major: int, n: int | None, pos: int):
        buf = self.buf
        if n is None:  # indefinite: definite chunks of the same major type, then 0xFF
            chunks = []
            while pos >= len(buf) or buf[pos] != 0xFF:
                if pos >= len(buf):
                    raise _CborError("truncated")
                head = buf[pos]
                if head >> 5 != major or head & 31 == 31:
                    kind = "text" if major == 3 else "byte"
                    raise _CborError(f"an indefinite {kind} string holds a chunk of another type")
                chunk, pos = self.item(pos)
                chunks.append(chunk)
            joined = (b"" if major == 2 else "").join(chunks)
            self.spend(_COST_BYTES + 4 * len(joined))  # the chunks and their join, both held
            return joined, pos + 1
        _need(buf, pos, n)
        # 4 bytes a character: the widest a str of n UTF-8 bytes can take
        self.spend(_COST_BYTES + n if major == 2 else _COST_STR + 4 * n)
        raw = buf[pos : pos + n]
        return (bytes(raw) if major == 2 else str(raw, "utf-8")), pos + n


def _need(buf: memoryview, pos: int, n: int) -> None:
    if n > len(buf) - pos:
        raise _CborError(
            f"truncated: {n} bytes or items declared at byte {pos}, {len(buf) - pos} left"
        )
