"""Values <-> typed JSON records (design.md section 4), exact in both directions.

A side file is ``{"format": 1, "case", "side", "env", "values"}``. Layout, chosen for small
git diffs: the header keys in that fixed order, one ``env`` entry per line (keys sorted), one
value per line in the order given. A tensor record ``{"dtype", "shape", "data"}`` with at most
``ELEMENTS_PER_LINE`` elements is one line; a longer one wraps its data at a fixed count per
line (the last dimension when that is at most ``ELEMENTS_PER_LINE``), so changing one element
is a one-line diff. ``data`` is flat, in C order; floats are the exact doubles of their values
(``float(np.float32(x))``) in shortest round-trip form, ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` are strings and ``-0.0`` is kept. Output is ASCII (``\\u`` escapes), valid
RFC 8259, and byte-identical for equal input with or without orjson.

Decisions (docs/internals.md, record.py section): lists and tuples stay plain JSON lists,
compared exactly; a non-finite Python float becomes a 0-d float64 array (JSON has no literal
for it); torch bfloat16 is refused (no NumPy dtype: convert with ``.float()``), float16 is kept.
Loose files (no ``"format"`` key): numbers become 0-d arrays of ``default_dtype``, numeric nested
lists arrays of it, ``null`` in a numeric list is NaN with a warning (serde_json writes NaN and
infinities as null), NaN / Infinity literals are accepted; in format-1 files all are errors.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from harness import sidecar

try:  # orjson makes the codec several times faster; the stdlib path writes the same bytes.
    import orjson as _orjson
except ImportError:  # pragma: no cover - the fallback test monkeypatches it away
    _orjson = None

FORMAT_VERSION = 1
ELEMENTS_PER_LINE = 8
SIDECAR_THRESHOLD = 65536
MAX_DEPTH = 64
MAX_BYTES = 1 << 30
MAX_ELEMENTS = 1 << 31
FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = (*FLOAT_DTYPES, *INT_DTYPES, "bool")
SPECIALS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_HEADER = ("format", "case", "side", "env", "values")
_TENSOR_KEYS = frozenset({"dtype", "shape", "data"})
_SIDECAR_KEYS = frozenset({"dtype", "shape", "sidecar", "sha256", "summary"})
_SUMMARY_KEYS = ("min", "max", "mean", "l2", "nan", "inf")
_ERROR_KEYS = frozenset({"error", "message"})
_NUMBERS = frozenset({float, int})
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CapturedError:
    """An exception a side produced, compared by type name and message."""

    type: str
    message: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> CapturedError:
        return cls(type(exc).__name__, str(exc))


@dataclass(frozen=True)
class SideRecord:
    """One side file; ``format``, ``case`` and ``side`` are None for loose JSON."""

    case: str | None
    side: str | None
    env: dict
    values: dict
    format: int | None = None
    warnings: tuple[str, ...] = ()
    sidecars: tuple[str, ...] = ()


class RecordError(Exception):
    """Unreadable or malformed input; ``str()`` is one line ``<path>: <key>: <problem>``."""

    def __init__(self, path: str | os.PathLike, key: str | None, problem: str):
        self.path, self.key, self.problem = str(path), key, problem
        parts = [one_line(self.path)] + ([] if key is None else [one_line(key)])
        super().__init__(": ".join([*parts, " ".join(problem.split())]))


def one_line(text: str) -> str:
    """Control characters escaped: one message is one line, whatever a hostile file holds."""
    return text if text.isprintable() else ascii(text)[1:-1]


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------- normalize


def normalize(values: Mapping) -> dict[str, Any]:
    """Flatten nested mappings to dotted keys and turn every tensor into a NumPy array.

    TypeError for an unsupported value, ValueError for a key collision, both naming the key.
    Arrays are not copied; normalizing a normalized mapping returns equal values.
    """
    out: dict[str, Any] = {}
    _flatten_into(out, "", values, 0)
    return out


def _flatten_into(out: dict, prefix: str, mapping: Mapping, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"{prefix}: mappings nested deeper than {MAX_DEPTH} levels")
    for name, value in mapping.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"{prefix}{name!r}: keys must be non-empty str")
        key = prefix + name
        if isinstance(value, Mapping):
            _flatten_into(out, key + ".", value, depth + 1)
        elif key in out:
            raise ValueError(f"{key}: two values flatten to the same dotted key")
        else:
            out[key] = _normalize_value(key, value)


def _normalize_value(key: str, value: Any) -> Any:
    if value is None or isinstance(value, bool | str | CapturedError):
        return value
    if isinstance(value, np.ndarray | np.generic):  # before float: np.float64 is a float
        return _checked_array(key, np.asarray(value))
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise TypeError(f"{key}: int {value} is outside int64; return a str or an array")
        return int(value)
    if isinstance(value, float):
        # JSON has no literal for NaN / inf; a 0-d array carries them as strings.
        return float(value) if math.isfinite(value) else np.array(value, dtype=np.float64)
    if isinstance(value, list | tuple):
        return [_plain_item(key, item) for item in value]
    module = type(value).__module__
    if module.startswith("torch") and hasattr(value, "detach"):
        return _checked_array(key, _torch_to_numpy(key, value))
    if module.startswith("harness.engine") and callable(getattr(value, "numpy", None)):
        return _checked_array(key, np.asarray(value.numpy()))
    raise TypeError(
        f"{key}: unsupported value type {module}.{type(value).__qualname__}; expected a tensor,"
        " numpy array, number, bool, None, str, list, CapturedError or mapping"
    )


def _torch_to_numpy(key: str, tensor: Any) -> np.ndarray:
    if str(tensor.dtype) == "torch.bfloat16":
        raise TypeError(
            f"{key}: torch.bfloat16 has no numpy dtype; convert it explicitly (.float()) so "
            "the record states the dtype that is compared"
        )
    return tensor.detach().cpu().resolve_conj().resolve_neg().numpy()


def _checked_array(key: str, array: np.ndarray) -> np.ndarray:
    if array.dtype.name not in DTYPES:
        raise TypeError(f"{key}: unsupported dtype {array.dtype}; supported: {', '.join(DTYPES)}")
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _plain_item(key: str, item: Any) -> Any:
    """An element of a plain list: JSON scalars and nested lists only."""
    if isinstance(item, np.generic):
        item = item.item()
    if isinstance(item, list | tuple):
        return [_plain_item(key, x) for x in item]
    if isinstance(item, float) and not math.isfinite(item):
        raise TypeError(f"{key}: non-finite float inside a list; return a numpy array instead")
    if item is None or isinstance(item, bool | int | float | str):
        return item
    raise TypeError(f"{key}: a list may hold numbers, bools, None, str, lists; not {item!r}")


# ---------------------------------------------------------------- encode / dumps


def encode(value: Any) -> Any:
    """One normalized value -> JSON-able object (tensor record, error record, or as is)."""
    if isinstance(value, np.ndarray):
        data = value.reshape(-1).tolist()
        if value.dtype.kind == "f":
            data = [json_float(x) for x in data]
        return {"dtype": value.dtype.name, "shape": list(value.shape), "data": data}
    if isinstance(value, CapturedError):
        return {"error": value.type, "message": value.message}
    return value


def json_float(x: float) -> float | str:
    """``x``, or its name when JSON has no literal for it: ``"NaN"``, ``"Infinity"``, ...

    The one spelling of non-finite numbers in every JSON this project writes (side files,
    ``--json`` reports, ``out/ops.json``).
    """
    if math.isfinite(x):
        return x
    return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")


def dumps_side(
    case: str, side: str, values: Mapping, env: Mapping, *, sidecars: Mapping | None = None
) -> str:
    """Canonical text of one side file; tensors are inline unless referenced in ``sidecars``."""
    return _dumps_bytes(case, side, normalize(values), env, sidecars or {}).decode("ascii")


def _dumps_bytes(case: str, side: str, values: dict, env: Mapping, sidecars: Mapping) -> bytes:
    """``dumps_side`` of normalized ``values`` as ASCII bytes (tensor data skips str)."""
    if not isinstance(case, str) or not isinstance(side, str):
        raise TypeError("case and side must be str")
    env_lines = [f"    {_compact(k)}: {_compact(env[k])}".encode() for k in sorted(env)]
    value_lines = [
        f"    {_compact(key)}: ".encode()
        + (_sidecar_text(sidecars[key]) if key in sidecars else _value_text(value))
        for key, value in values.items()
    ]
    header = f'{{\n  "format": {FORMAT_VERSION},\n  "case": {_compact(case)},\n'
    header += f'  "side": {_compact(side)},\n  "env": '
    body = [header.encode(), _block(env_lines), b',\n  "values": ', _block(value_lines)]
    return b"".join([*body, b"\n}\n"])


def _block(lines: list[bytes]) -> bytes:
    return b"{\n" + b",\n".join(lines) + b"\n  }" if lines else b"{}"


def _value_text(value: Any) -> bytes:
    if isinstance(value, np.ndarray):
        return _tensor_text(value)
    return _compact(encode(value)).encode()


def _sidecar_text(ref: Mapping) -> bytes:
    """A sidecar reference on one line, its fields in a fixed reading order."""
    fields = [f'"{k}": {_compact(ref[k])}' for k in ("dtype", "shape", "sidecar", "sha256")]
    stats = ", ".join(f'"{k}": {_compact(ref["summary"][k])}' for k in _SUMMARY_KEYS)
    return ("{" + ", ".join(fields) + ', "summary": {' + stats + "}}").encode()


def _tensor_text(array: np.ndarray) -> bytes:
    shape = _compact(list(array.shape))
    head = f'{{"dtype": "{array.dtype.name}", "shape": {shape}, "data": ['.encode()
    if array.size <= ELEMENTS_PER_LINE:
        return head + _data_rows(array, max(array.size, 1), b"") + b"]}"
    last = array.shape[-1]
    width = last if last <= ELEMENTS_PER_LINE else ELEMENTS_PER_LINE
    return head + b"\n      " + _data_rows(array, width, b"\n      ") + b"\n    ]}"


def _data_rows(array: np.ndarray, width: int, newline: bytes) -> bytes:
    """Flat data as rows of ``width`` comma-separated numbers (no spaces: smaller, faster)."""
    flat = array.reshape(-1)
    if flat.dtype.kind == "f":
        with np.errstate(invalid="ignore"):  # a signalling NaN sets the flag; it stays NaN
            flat = flat.astype(np.float64)  # exact: a record stores doubles
    sep = b"," + newline
    if _orjson is None:
        items = [_compact(x) for x in flat.tolist()]
        rows = (",".join(items[i : i + width]) for i in range(0, len(items), width))
        return sep.join(row.encode() for row in rows)
    option = _orjson.OPT_SERIALIZE_NUMPY
    full = flat.size - flat.size % width
    chunks = []
    if full:  # one orjson call for all full rows, then one C-level replace
        chunks.append(_orjson.dumps(flat[:full].reshape(-1, width), option=option)[2:-2])
        chunks[0] = chunks[0].replace(b"],[", sep)
    if full < flat.size:
        chunks.append(_orjson.dumps(flat[full:], option=option)[1:-1])
    text = sep.join(chunks)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        text = _fill_specials(text, flat)
    return text


def _fill_specials(text: bytes, flat: np.ndarray) -> bytes:
    """orjson writes every non-finite value as null; put the named strings back, in order."""
    odd = flat[~np.isfinite(flat)]
    codes = np.where(np.isnan(odd), 0, np.where(odd > 0, 1, 2)).tolist()
    words = (b'"NaN"', b'"Infinity"', b'"-Infinity"')
    parts = text.split(b"null")
    out = [parts[0]]
    for code, part in zip(codes, parts[1:], strict=True):
        out += [words[code], part]
    return b"".join(out)


def _compact(obj: Any) -> str:
    """Canonical one-line JSON: sorted keys, ", " and ": " separators, orjson float style."""
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return _format_float(obj)
    if isinstance(obj, bool | str) or obj is None:
        return json.dumps(obj)
    if isinstance(obj, int):
        return str(int(obj))
    if isinstance(obj, list | tuple):
        return "[" + ", ".join(_compact(x) for x in obj) + "]"
    if isinstance(obj, Mapping):
        return "{" + ", ".join(f"{_compact(str(k))}: {_compact(obj[k])}" for k in sorted(obj)) + "}"
    raise TypeError(f"not JSON-able: {type(obj).__name__}")


def _format_float(x: float) -> str:
    """Shortest round-trip double, spelled as orjson does (``0.00001``, ``1e-7``)."""
    if not math.isfinite(x):
        return json.dumps(json_float(x))
    mantissa, sep, exponent = repr(x).partition("e-")
    if not sep:
        return mantissa
    if exponent == "05":  # orjson stays positional down to 1e-5, Python's repr to 1e-4
        sign, digits = ("-", mantissa[1:]) if mantissa[0] == "-" else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e-{int(exponent)}"


# ---------------------------------------------------------------- writing


def atomic_write_text(path: str | os.PathLike, text: str | bytes) -> None:
    """Atomically replace ``path`` with ``text`` (UTF-8; temp file, fsync, os.replace)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    sidecar.atomic_write(path, lambda f: f.write(data))


def write_report(path: str | os.PathLike, text: str) -> None:
    """Atomically write a report file the user named (``--json``, ``--markdown``, ``--html``).

    Unlike side files its folder is not created: a mistyped path fails (FileNotFoundError
    naming ``path``) instead of growing a stray tree.
    """
    if not Path(path).parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    atomic_write_text(path, text)


def write_side(
    path: str | os.PathLike,
    case: str,
    side: str,
    values: Mapping,
    env: Mapping,
    *,
    sidecar_threshold: int = SIDECAR_THRESHOLD,
) -> str:
    """Write one side file atomically; tensors above the threshold go to ``.npy`` sidecars.

    Sidecars (content-addressed names) are written first, then the JSON is replaced, then
    sidecars only the old JSON referenced are deleted: a failure at any point leaves the old
    or the new file complete and readable. Returns the JSON text written.
    """
    path = Path(path)
    normalized = normalize(values)
    old = _referenced_sidecars(path)
    refs = {
        key: sidecar.write_sidecar(path.parent, path.stem, key, value)
        for key, value in normalized.items()
        if isinstance(value, np.ndarray) and value.size > sidecar_threshold
    }
    new = {ref["sidecar"] for ref in refs.values()}
    data = _dumps_bytes(case, side, normalized, env, refs)
    try:
        atomic_write_text(path, data)
    except BaseException:
        _remove(path.parent, new - old)
        raise
    _remove(path.parent, old - new)
    return data.decode("ascii")


def _referenced_sidecars(path: Path) -> set[str]:
    """Sidecar names the file now at ``path`` references (best effort, never raises)."""
    try:
        prefix = path.stem + "."
        if not any(n.startswith(prefix) and n.endswith(".npy") for n in os.listdir(path.parent)):
            return set()  # no sidecar can be referenced: skip reading the old file
        data = _read_bytes(path, MAX_BYTES)
        if b'"sidecar"' not in data:
            return set()
        record = read_side(path, verify_sidecars=False, data=data)  # the file is read once
    except (OSError, RecordError):
        return set()
    return set(record.sidecars)


def _remove(folder: Path, names: set[str]) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)


# ---------------------------------------------------------------- reading


def read_side(
    path: str | os.PathLike,
    *,
    default_dtype: str = "float32",
    max_bytes: int = MAX_BYTES,
    max_elements: int = MAX_ELEMENTS,
    verify_sidecars: bool = True,
    data: bytes | None = None,
) -> SideRecord:
    """Read a format-1 file strictly, or loose JSON from another program; RecordError if bad.

    ``data``: the file's bytes, when the caller has read them already (``path`` then names
    the file in messages and locates its sidecars).
    """
    if default_dtype not in FLOAT_DTYPES:
        raise ValueError(f"default_dtype must be one of {FLOAT_DTYPES}, got {default_dtype!r}")
    reader = _Reader(Path(path), default_dtype, max_elements, verify_sidecars)
    if data is None:
        data = _read_bytes(reader.path, max_bytes)
    elif not data:
        raise reader.fail(None, "empty file (0 bytes), expected a JSON object")
    doc = reader.parse(data)
    if type(doc) is not dict:
        raise reader.fail(None, f"top level must be a JSON object, not {_kind(doc)}")
    return reader.strict(doc) if "format" in doc else reader.loose(doc)


def side_env(text: str) -> dict:
    """The ``env`` object of a side file's text, decoded alone: ``env`` precedes the values.

    ``{}`` when the text has no ``env``; ValueError when it is not JSON there.
    """
    start = text.find('"env":')
    if start < 0:
        return {}
    env, _ = json.JSONDecoder().raw_decode(text, text.index("{", start))
    return env if isinstance(env, dict) else {}


def decode(obj: Any, *, path: str | os.PathLike, key: str) -> Any:
    """One format-1 JSON value -> value (array, CapturedError, scalar or plain list)."""
    return _Reader(Path(path), "float32", MAX_ELEMENTS, True).typed(key, obj)


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    if path.is_dir():
        raise RecordError(path, None, "is a directory, expected a JSON file")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise RecordError(path, None, "no such file") from None
    except OSError as exc:
        raise RecordError(path, None, f"cannot read ({exc.strerror or exc})") from None
    if not data:
        raise RecordError(path, None, "empty file (0 bytes), expected a JSON object")
    if len(data) > max_bytes:
        raise RecordError(path, None, f"file is larger than {max_bytes} bytes (max_bytes)")
    return data


def _kind(obj: Any) -> str:
    if isinstance(obj, bool):
        return "a bool"
    if isinstance(obj, int | float):
        return "a number"
    names = {dict: "an object", list: "an array", str: "a string", type(None): "null"}
    return names.get(type(obj), type(obj).__name__)


class _Literal(float):
    """A NaN / Infinity literal: not JSON, accepted in loose files only."""


class _DuplicateKey(Exception):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _DuplicateKey(name)
            seen.add(name)
    return out


def _all_finite(obj: Any) -> bool:
    """No NaN / Infinity literal or overflowed number anywhere (depth is already bounded)."""
    if type(obj) is dict:
        return all(_all_finite(v) for v in obj.values())
    if type(obj) is list:
        return all(_all_finite(v) for v in obj)
    return not isinstance(obj, float) or math.isfinite(obj)


class _Reader:
    """Parsing and validation of one file: path for messages, limits, collected warnings."""

    def __init__(self, path: Path, default_dtype: str, max_elements: int, verify: bool):
        self.path, self.default_dtype = path, default_dtype
        self.max_elements, self.verify = max_elements, verify
        self.warnings: list[str] = []
        self.sidecars: list[str] = []
        self.kinds: dict[int, set] = {}  # id(list) -> element types, found by census

    def fail(self, key: str | None, problem: str) -> RecordError:
        return RecordError(self.path, key, problem)

    # -- parsing

    def parse(self, data: bytes) -> Any:
        """orjson when it can prove there is no duplicate key, else the stdlib parser."""
        if _orjson is not None:
            try:
                doc = _orjson.loads(data)
            except _orjson.JSONDecodeError:
                pass  # the stdlib parser words the message (or accepts NaN literals)
            else:
                keys, colons = self.census(doc)
                # Each ':' outside strings separates one key. orjson keeps the last of
                # duplicate keys, which breaks this count; so does a ':' written as \u003a.
                escapes = b"\\" in data and b"\\u" in data  # one memchr pass when none
                if not escapes and data.count(b":") == keys + colons:
                    return doc
                self.kinds.clear()
        doc = self.parse_stdlib(self.text(data))
        self.census(doc)
        return doc

    def text(self, data: bytes) -> str:
        try:
            return data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            raise self.fail(None, problem) from None

    def parse_stdlib(self, text: str) -> Any:
        try:
            return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_Literal)
        except _DuplicateKey as exc:
            raise self.fail(str(exc), "duplicate key in a JSON object") from None
        except json.JSONDecodeError as exc:
            what = "truncated JSON" if exc.pos >= len(text.rstrip()) else "not valid JSON"
            where = f"line {exc.lineno} column {exc.colno}"
            raise self.fail(None, f"{what}: {exc.msg} at {where}") from None
        except RecursionError:
            raise self.fail(None, f"JSON nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as exc:  # e.g. an integer literal with thousands of digits
            raise self.fail(None, f"not valid JSON: {exc}") from None

    def census(self, doc: Any) -> tuple[int, int]:
        """Count object keys and ':' inside strings; enforce the depth limit."""
        keys = colons = 0
        stack: list[tuple[Any, str, int]] = [(doc, "", 1)]
        while stack:
            obj, where, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise self.fail(where or None, f"JSON nested deeper than {MAX_DEPTH} levels")
            if type(obj) is dict:
                keys += len(obj)
                colons += sum(name.count(":") for name in obj)
                pairs = [(f"{where}.{name}" if where else name, v) for name, v in obj.items()]
            elif type(obj) is list:
                kinds = self.kinds[id(obj)] = set(map(type, obj))
                if not kinds & {dict, list, str}:
                    continue  # a numeric list: nothing to count, nothing nested
                pairs = [(where, v) for v in obj]
            else:
                continue  # a scalar document
            for inner, value in pairs:
                if type(value) is dict or type(value) is list:
                    stack.append((value, inner, depth + 1))
                elif type(value) is str:
                    colons += value.count(":")
        return keys, colons

    # -- format 1

    def strict(self, doc: dict) -> SideRecord:
        for name in [*_HEADER, *doc]:
            if name not in doc:
                raise self.fail(name, "missing header key of a format-1 file")
            if name not in _HEADER:
                raise self.fail(name, f"unknown header key (format 1 has {', '.join(_HEADER)})")
        version = doc["format"]
        if type(version) is not int or version != FORMAT_VERSION:
            problem = f"unsupported format version {_preview(version)} (this harness reads 1)"
            raise self.fail("format", problem)
        for name, kind in (("case", str), ("side", str), ("env", dict), ("values", dict)):
            if type(doc[name]) is not kind:
                raise self.fail(name, f"must be {_kind(kind())}, not {_kind(doc[name])}")
        values = {key: self.typed(key, obj) for key, obj in doc["values"].items()}
        if not _all_finite(doc["env"]):
            raise self.fail("env", "NaN/Infinity literal or overflowing number is not JSON")
        return self.record(doc["case"], doc["side"], doc["env"], values, FORMAT_VERSION)

    def record(self, case, side, env, values, version) -> SideRecord:
        warnings, sidecars = tuple(self.warnings), tuple(self.sidecars)
        return SideRecord(case, side, env, values, version, warnings, sidecars)

    def typed(self, key: str, obj: Any) -> Any:
        """A format-1 value: records recognised by their key sets, plain JSON otherwise."""
        if type(obj) is dict:
            found = frozenset(obj)
            if found == _TENSOR_KEYS:
                return self.tensor(key, obj)
            if found == _SIDECAR_KEYS:
                return self.sidecar(key, obj)
            if found == _ERROR_KEYS:
                return self.error(key, obj)
            wanted = "{dtype, shape, data}, a sidecar reference or {error, message}"
            raise self.fail(key, f"unrecognised record with keys {sorted(found)}; want {wanted}")
        if not _all_finite(obj):
            problem = "NaN/Infinity literal or overflowing number is not JSON"
            raise self.fail(key, f"{problem}; format 1 writes it as a 0-d tensor record")
        if type(obj) is list:
            self.plain_list(key, obj)
        elif type(obj) is int and not _INT64[0] <= obj <= _INT64[1]:
            raise self.fail(key, f"integer {_preview(obj)} is outside int64")
        return obj

    def plain_list(self, key: str, items: list) -> None:
        for item in items:
            if type(item) is list:
                self.plain_list(key, item)
            elif type(item) is dict:
                raise self.fail(key, "a plain list may not contain objects")

    def error(self, key: str, obj: dict) -> CapturedError:
        if type(obj["error"]) is not str or type(obj["message"]) is not str:
            raise self.fail(key, "an error record needs string 'error' and 'message'")
        return CapturedError(obj["error"], obj["message"])

    def header(self, key: str, obj: dict) -> tuple[str, list[int], int]:
        """Validated dtype, shape and element count of a tensor or sidecar record."""
        dtype, shape = obj["dtype"], obj["shape"]
        if dtype not in DTYPES:
            raise self.fail(key, f"unknown dtype {_preview(dtype)} (known: {', '.join(DTYPES)})")
        if type(shape) is not list or len(shape) > 32:
            raise self.fail(key, f"shape must be a list of at most 32 sizes, not {_kind(shape)}")
        if not all(type(n) is int and n >= 0 for n in shape):
            raise self.fail(key, f"shape {_preview(shape)} is not all non-negative integers")
        count = math.prod(shape)
        if count > self.max_elements:
            limit = f"{self.max_elements} (max_elements)"
            raise self.fail(key, f"tensor has {count} elements, more than the limit {limit}")
        return dtype, shape, count

    def tensor(self, key: str, obj: dict) -> np.ndarray:
        dtype, shape, count = self.header(key, obj)
        data = obj["data"]
        if type(data) is not list:
            raise self.fail(key, f"data must be a flat list, not {_kind(data)}")
        if len(data) != count:
            raise self.fail(key, f"data has {len(data)} entries but shape {shape} needs {count}")
        return self.array(key, data, dtype, strict=True).reshape(shape)

    def sidecar(self, key: str, obj: dict) -> np.ndarray | None:
        dtype, shape, _ = self.header(key, obj)
        name, digest = obj["sidecar"], obj["sha256"]
        if type(name) is not str or Path(name).name != name or not name.endswith(".npy"):
            raise self.fail(key, f"sidecar must name a .npy file beside the JSON: {name!r}")
        if type(digest) is not str or not _SHA256.fullmatch(digest):
            raise self.fail(key, "sha256 must be 64 lowercase hex digits")
        if type(obj["summary"]) is not dict:
            raise self.fail(key, "summary must be an object")
        self.sidecars.append(name)
        if not self.verify:
            return None
        try:
            return sidecar.read_sidecar(self.path.parent, name, dtype, shape, digest)
        except sidecar.SidecarError as exc:
            raise self.fail(key, str(exc)) from None

    # -- numbers

    def array(self, key: str, data: list, dtype: str, *, strict: bool) -> np.ndarray:
        """A flat list of JSON numbers (and the special strings) -> 1-d array of ``dtype``."""
        if dtype == "bool" or dtype in INT_DTYPES:
            return self.int_array(key, data, dtype)
        wide = None
        if self.types(data) <= _NUMBERS:
            with contextlib.suppress(OverflowError):
                wide = np.array(data, dtype=np.float64)
        if wide is None or not np.isfinite(wide).all():
            wide = self.slow_floats(key, data, strict)  # names the offending entry
        return self.narrow(key, data, wide, dtype, strict)

    def types(self, items: list) -> set:
        found = self.kinds.get(id(items))
        return set(map(type, items)) if found is None else found

    def slow_floats(self, key: str, data: list, strict: bool) -> np.ndarray:
        out = np.empty(len(data), dtype=np.float64)
        nulls = 0
        for i, x in enumerate(data):
            kind = type(x)
            if kind is str and x in SPECIALS:
                out[i] = SPECIALS[x]
            elif kind is float or kind is int:
                out[i] = self.finite(key, i, x)
            elif kind is _Literal and not strict:
                out[i] = x
            elif x is None and not strict:
                out[i], nulls = math.nan, nulls + 1
            elif kind is _Literal:
                words = '"NaN", "Infinity" or "-Infinity"'
                raise self.fail(key, f"data[{i}] is a bare {x} literal (not JSON); use {words}")
            else:
                found = f"{_kind(x)} {_preview(x)}"
                raise self.fail(
                    key,
                    f'data[{i}] is {found}, expected a number or "NaN", "Infinity", "-Infinity"',
                )
        if nulls:
            note = "NaN (serde_json writes NaN and infinities as null)"
            self.warnings.append(f"{key}: {nulls} null entries read as {note}")
        return out

    def finite(self, key: str, i: int, x: float | int) -> float:
        try:
            value = float(x)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):  # 1e400 parses as inf: only the strings may say so
            raise self.fail(key, f"data[{i}] overflows float64 (beyond 1.8e308 in magnitude)")
        return value

    def narrow(self, key: str, data: list, wide: np.ndarray, dtype: str, strict: bool):
        """Cast to ``dtype``: exactly in a format-1 file, without overflow in loose JSON."""
        if dtype == "float64":
            return wide
        with np.errstate(over="ignore"):
            narrow = wide.astype(dtype)
        # Widening back is exact, so != finds every value the writer rounded.
        exact = (narrow != wide) & ~np.isnan(wide)
        bad = exact if strict else np.isinf(narrow) & np.isfinite(wide)
        if bad.any():
            i = int(np.argmax(bad))
            problem = f"is not exactly a {dtype} value" if strict else f"overflows {dtype}"
            raise self.fail(key, f"data[{i}] = {_preview(data[i])} {problem}")
        return narrow

    def int_array(self, key: str, data: list, dtype: str) -> np.ndarray:
        want = bool if dtype == "bool" else int
        if not self.types(data) <= {want}:
            i = next(i for i, x in enumerate(data) if type(x) is not want)
            expected = "a bool" if want is bool else "an integer"
            found = f"{_kind(data[i])} {_preview(data[i])}"
            raise self.fail(key, f"data[{i}] is {found}, expected {expected}")
        try:
            return np.array(data, dtype=dtype)
        except OverflowError:
            info = np.iinfo(dtype)
            i = next(i for i, x in enumerate(data) if not info.min <= x <= info.max)
            problem = f"data[{i}] = {_preview(data[i])} is out of range for {dtype}"
            raise self.fail(key, problem) from None

    # -- loose JSON

    def loose(self, doc: dict) -> SideRecord:
        values: dict[str, Any] = {}
        self.flatten(values, "", doc)
        return self.record(None, None, {}, values, None)

    def flatten(self, out: dict, prefix: str, obj: dict) -> None:
        for name, value in obj.items():
            key = prefix + name
            if type(value) is dict and not _is_record(value):
                self.flatten(out, key + ".", value)
            elif key in out:
                raise self.fail(key, "two entries flatten to the same dotted key")
            else:
                out[key] = self.loose_value(key, value)

    def loose_value(self, key: str, value: Any) -> Any:
        if type(value) is dict:
            return self.typed(key, value)
        if type(value) is list:
            return self.loose_list(key, value)
        if isinstance(value, bool) or value is None or type(value) is str:
            return value
        return self.array(key, [value], self.default_dtype, strict=False).reshape(())

    def loose_list(self, key: str, items: list) -> Any:
        shape, leaves = self.nested_shape(key, items)
        if len(leaves) > self.max_elements:
            limit = f"{self.max_elements} (max_elements)"
            raise self.fail(key, f"list has {len(leaves)} numbers, more than the limit {limit}")
        kinds = set(map(type, leaves))
        if dict in kinds:
            raise self.fail(key, "lists of objects are not supported in loose JSON")
        if kinds == {str} and not set(leaves) <= SPECIALS.keys():
            return items  # labels, compared exactly
        if kinds == {bool}:
            return np.array(leaves, dtype=bool).reshape(shape)
        if bool in kinds:
            raise self.fail(key, "list mixes bools with other values")
        return self.array(key, leaves, self.default_dtype, strict=False).reshape(shape)

    def nested_shape(self, key: str, items: list) -> tuple[list[int], list]:
        """Shape of a rectangular nested list and its leaves in C order; ragged -> error."""
        shape: list[int] = []
        level = [items]
        while True:
            lengths = {len(x) for x in level}
            if len(lengths) > 1:
                problem = f"lengths {sorted(lengths)[:4]} at depth {len(shape)}"
                raise self.fail(key, f"ragged nested list: {problem}")
            shape.append(lengths.pop())
            children = list(chain.from_iterable(level))
            kinds = set(map(type, children))
            if list not in kinds:
                return shape, children
            if kinds != {list}:
                raise self.fail(key, f"ragged nested list: lists and scalars at depth {len(shape)}")
            level = children


def _is_record(obj: dict) -> bool:
    """A typed record inside loose JSON (tensor, sidecar, or error with string fields)."""
    found = frozenset(obj)
    if found == _ERROR_KEYS:
        return type(obj["error"]) is str and type(obj["message"]) is str
    return found in (_TENSOR_KEYS, _SIDECAR_KEYS)


# ---------------------------------------------------------------- environment


def environment() -> dict:
    """Versions, platform, BLAS and thread counts; deterministic, no host names or times.

    torch is imported first so that its OpenMP pool is listed whether or not the caller had
    imported torch already; thread counts are those in force (cases record them pinned).
    """
    torch_env = _torch_env()
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": f"{platform.system()}-{platform.machine()}",
        "blas": _blas(),
        **torch_env,
    }


def _torch_env() -> dict:
    try:
        import torch
    except ImportError:
        return {"torch": "not installed", "torch_threads": None}
    return {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def _blas() -> list[dict] | str:
    """threadpoolctl's view of the BLAS / OpenMP pools, without machine-specific paths."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    fields = ("user_api", "internal_api", "version", "architecture", "threading_layer")
    pools = [{k: info.get(k) for k in (*fields, "num_threads")} for info in threadpool_info()]
    return sorted(pools, key=lambda pool: json.dumps(pool, sort_keys=True, default=str))
