"""Reading side files: format-1 files strictly, loose JSON from other programs (the loose
rules are ``harness.record.loose``); every problem is one ``RecordError`` line."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from harness import sidecar
from harness.escape import clip, preview
from harness.float_dtypes import numpy_dtype
from harness.record.loose import MAYBE_INT, LooseReading
from harness.record.source import read_bytes
from harness.record.values import (
    DTYPES,
    ERROR_KEYS,
    FLOAT_DTYPES,
    FORMAT_VERSION,
    INT64_RANGE,
    INT_DTYPES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    SIDECAR_KEYS,
    SPECIALS,
    SUMMARY_ONLY_KEYS,
    TENSOR_KEYS,
    CapturedError,
    RecordError,
    SideRecord,
    SummaryOnly,
)

try:  # orjson makes the codec several times faster; the stdlib path writes the same bytes.
    import orjson as _orjson
except ImportError:  # pragma: no cover - the fallback test monkeypatches it away
    _orjson = None

_HEADER = ("format", "case", "side", "env", "values")
_NUMBERS = frozenset({float, int})
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAYBE_INT = MAYBE_INT  # see harness.record.loose


def _preview(value: Any) -> str:
    """A value quoted in a message: short, as one value of a record seldom needs more."""
    return preview(value, 40)


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
    if not os.fspath(path):  # Path("") would be ".", the current folder
        raise RecordError("''", None, "empty file name, expected a JSON file")
    reader = _Reader(Path(path), default_dtype, max_elements, verify_sidecars)
    if data is None:
        data = read_bytes(reader.path, max_bytes)
    elif not data:
        raise reader.fail(None, "empty file (0 bytes), expected a JSON object")
    try:
        return reader.document(reader.parse(data))
    except _Reparse:
        reader = _Reader(reader.path, default_dtype, max_elements, verify_sidecars)
        doc = reader.parse_stdlib(reader.text(data))
        reader.census(doc)
        return reader.document(doc)


def is_side_file(doc: dict) -> bool:
    """A top-level ``"format"`` is a header only when it is this harness's format number and
    ``values`` is present; otherwise the file is loose JSON and ``format`` is data."""
    version = doc.get("format")
    return type(version) is int and version == FORMAT_VERSION and "values" in doc


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


class _Reparse(Exception):
    """orjson may have read an integer beyond 64 bits as a float: parse with the stdlib."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _DuplicateKey(name)
            seen.add(name)
    return out


class _Reader(LooseReading):
    """Parsing and validation of one file: path for messages, limits, collected warnings."""

    def __init__(self, path: Path, default_dtype: str, max_elements: int, verify: bool):
        self.path, self.default_dtype = path, default_dtype
        self.max_elements, self.verify = max_elements, verify
        self.warnings: list[str] = []
        self.sidecars: list[str] = []
        self.kinds: dict[int, set] = {}  # id(list) -> element types, found by census
        self.exact_ints = True  # False while decoding what orjson parsed (see _MAYBE_INT)

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
                    self.exact_ints = False
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

    def inexact(self, found: bool) -> None:
        """``found``: a float of at least 2**63 in magnitude, maybe an integer orjson rounded."""
        if found and not self.exact_ints:
            raise _Reparse

    def document(self, doc: Any) -> SideRecord:
        if type(doc) is not dict:
            raise self.fail(None, f"top level must be a JSON object, not {_kind(doc)}")
        if is_side_file(doc):
            return self.strict(doc)
        if "format" in doc and "values" in doc:  # a side file of another version, perhaps
            version = _preview(doc["format"])
            self.warnings.append(
                f"format: {version} is not this harness's format {FORMAT_VERSION}; "
                "the file is read as loose JSON (every key is data)"
            )
        return self.loose(doc)

    # -- format 1

    def strict(self, doc: dict) -> SideRecord:
        for name in [*_HEADER, *doc]:
            if name not in doc:
                raise self.fail(name, "missing header key of a format-1 file")
            if name not in _HEADER:
                raise self.fail(name, f"unknown header key (format 1 has {', '.join(_HEADER)})")
        for name, kind in (("case", str), ("side", str), ("env", dict), ("values", dict)):
            if type(doc[name]) is not kind:
                raise self.fail(name, f"must be {_kind(kind())}, not {_kind(doc[name])}")
        values = {key: self.typed(key, obj) for key, obj in doc["values"].items()}
        if not self.plain_numbers("env", doc["env"]):
            raise self.fail("env", "NaN/Infinity literal or overflowing number is not JSON")
        return self.record(doc["case"], doc["side"], doc["env"], values, FORMAT_VERSION)

    def record(self, case, side, env, values, version) -> SideRecord:
        warnings, sidecars = tuple(self.warnings), tuple(self.sidecars)
        return SideRecord(case, side, env, values, version, warnings, sidecars)

    def typed(self, key: str, obj: Any) -> Any:
        """A format-1 value: records recognised by their key sets, plain JSON otherwise."""
        if type(obj) is dict:
            found = frozenset(obj)
            if found == TENSOR_KEYS:
                return self.tensor(key, obj)
            if found == SIDECAR_KEYS:
                return self.sidecar(key, obj)
            if found == SUMMARY_ONLY_KEYS:
                return self.summary_only(key, obj)
            if found == ERROR_KEYS:
                return self.error(key, obj)
            wanted = "{dtype, shape, data}, a sidecar reference (or a summary-only one)"
            wanted += " or {error, message}"
            keys = preview(sorted(found))
            raise self.fail(key, f"unrecognised record with keys {keys}; want {wanted}")
        if type(obj) is list:
            self.plain_list(key, obj)
        if not self.plain_numbers(key, obj):
            problem = "NaN/Infinity literal or overflowing number is not JSON"
            raise self.fail(key, f"{problem}; format 1 writes it as a 0-d tensor record")
        return obj

    def plain_list(self, key: str, items: list) -> None:
        for item in items:
            if type(item) is list:
                self.plain_list(key, item)
            elif type(item) is dict:
                raise self.fail(key, "a plain list may not contain objects")

    def plain_numbers(self, key: str, obj: Any) -> bool:
        """False for a non-finite number anywhere in a plain value; RecordError for an integer
        outside int64 (depth is already bounded)."""
        if type(obj) is dict:
            return all(self.plain_numbers(key, v) for v in obj.values())
        if type(obj) is list:
            return all(self.plain_numbers(key, v) for v in obj)
        if type(obj) is int:
            self.int64(key, obj, "integer")
        elif isinstance(obj, float):  # _Literal (NaN, Infinity) included
            self.inexact(abs(obj) >= _MAYBE_INT)
            return math.isfinite(obj)
        return True

    def int64(self, key: str, value: int, what: str) -> int:
        """``value``, or RecordError quoting the literal when it is outside int64."""
        if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
            raise self.fail(key, f"{what} {_preview(value)} is outside int64")
        return value

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
        self.inexact(any(type(n) is float and abs(n) >= _MAYBE_INT for n in shape))
        if not all(type(n) is int and n >= 0 for n in shape):
            raise self.fail(key, f"shape {_preview(shape)} is not all non-negative integers")
        count, limit = math.prod(shape), f"{self.max_elements} (max_elements)"
        if count > self.max_elements:
            raise self.fail(key, f"tensor has {count} elements, more than the limit {limit}")
        if any(n > self.max_elements for n in shape):  # beside a 0; NumPy refuses it beyond int64
            raise self.fail(key, f"shape {_preview(shape)} has a size over the limit {limit}")
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
            raise self.fail(key, f"sidecar must name a .npy file beside the JSON: {preview(name)}")
        self.fingerprint(key, obj)
        self.sidecars.append(name)
        if not self.verify:
            return None
        try:
            array = sidecar.read_sidecar(
                self.path.parent, name, dtype, shape, digest, summary=obj["summary"]
            )
        except sidecar.SidecarError as exc:
            raise self.fail(key, str(exc)) from None
        except OSError as exc:  # a name too long for the file system, a permission, ...
            problem = f"sidecar {clip(name)}: cannot read ({exc.strerror or exc})"
            raise self.fail(key, problem) from None
        return array

    def fingerprint(self, key: str, obj: dict) -> None:
        """RecordError unless ``obj`` has a well-formed sha256 and summary object."""
        if type(obj["sha256"]) is not str or not _SHA256.fullmatch(obj["sha256"]):
            raise self.fail(key, "sha256 must be 64 lowercase hex digits")
        if type(obj["summary"]) is not dict:
            raise self.fail(key, "summary must be an object")

    def summary_only(self, key: str, obj: dict) -> SummaryOnly:
        """A summary-only golden entry: no file to read, so its summary is checked for form
        here (every statistic present, a number or null, counts non-negative integers)."""
        dtype, shape, _ = self.header(key, obj)
        if obj["summary_only"] is not True:
            raise self.fail(key, f"summary_only must be true, not {_preview(obj['summary_only'])}")
        self.fingerprint(key, obj)
        problem = sidecar.summary_form_problem(obj["summary"])
        if problem:
            raise self.fail(key, problem)
        return SummaryOnly(dtype, tuple(shape), obj["sha256"], dict(obj["summary"]))

    # -- numbers

    def array(self, key: str, data: list, dtype: str, *, strict: bool) -> np.ndarray:
        """A flat list of JSON numbers (and the special strings) -> 1-d array of ``dtype``."""
        if dtype == "bool" or dtype in INT_DTYPES:
            return self.int_array(key, data, dtype)
        wide = None
        kinds = self.types(data)
        if kinds <= _NUMBERS:
            with contextlib.suppress(OverflowError):  # beyond float64: slow_floats says so
                wide = np.array(data, dtype=np.float64)
            if wide is not None and int in kinds:  # never silently a float: ints fit int64
                for i, x in enumerate(data):
                    if type(x) is int:
                        self.int64(key, x, f"data[{i}] = integer")
            if wide is not None and float in kinds:
                self.inexact(bool((np.abs(wide) >= _MAYBE_INT).any()))
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
            self.warnings.append(f"{clip(key)}: {nulls} null entries read as {note}")
        return out

    def finite(self, key: str, i: int, x: float | int) -> float:
        try:
            value = float(x)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):  # 1e400 parses as inf: only the strings may say so
            raise self.fail(key, f"data[{i}] overflows float64 (beyond 1.8e308 in magnitude)")
        if type(x) is int:
            self.int64(key, x, f"data[{i}] = integer")
        else:
            self.inexact(abs(x) >= _MAYBE_INT)
        return value

    def narrow(self, key: str, data: list, wide: np.ndarray, dtype: str, strict: bool):
        """Cast to ``dtype``: exactly in a format-1 file, without overflow in loose JSON."""
        if dtype == "float64":
            return wide
        with np.errstate(over="ignore"):
            narrow = wide.astype(numpy_dtype(dtype))
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
            self.inexact(any(type(x) is float and abs(x) >= _MAYBE_INT for x in data))
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
