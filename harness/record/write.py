"""Writing side files: values -> canonical JSON text (byte-identical with or without orjson),
and atomic writes of side files with their ``.npy`` sidecars."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness import sidecar
from harness.escape import one_line
from harness.float_dtypes import is_float
from harness.record.read import read_side
from harness.record.source import read_bytes
from harness.record.values import (
    ELEMENTS_PER_LINE,
    FORMAT_VERSION,
    MAX_BYTES,
    SIDECAR_THRESHOLD,
    CapturedError,
    RecordError,
    normalize,
)

try:  # orjson makes the codec several times faster; the stdlib path writes the same bytes.
    import orjson as _orjson
except ImportError:  # pragma: no cover - the fallback test monkeypatches it away
    _orjson = None

_SUMMARY_KEYS = ("min", "max", "mean", "l2", "nan", "inf")


# ---------------------------------------------------------------- encode / dumps


def encode(value: Any) -> Any:
    """One normalized value -> JSON-able object (tensor record, error record, or as is)."""
    if isinstance(value, np.ndarray):
        data = value.reshape(-1).tolist()
        if is_float(value.dtype):
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


def side_text(
    case_name: str,
    side: str,
    values: Mapping[str, Any],
    env: Mapping[str, Any],
    sidecar_threshold: int = SIDECAR_THRESHOLD,
    stem: str | None = None,
    *,
    summary_only: Collection[str] = (),
) -> str:
    """The JSON text ``write_side`` writes to ``<stem or side>.json`` for normalized values.

    Sidecar references (sha256, summary, content-addressed name) are computed in memory, so
    two runs can be compared by text without writing the second one: equal texts mean equal
    data, because the sha256 of every sidecar is part of the text. ``summary_only``: the
    tensor keys written as summary-only references (see ``write_side``).
    """
    refs = {
        key: sidecar.sidecar_reference(stem or side, key, value)
        for key, value in values.items()
        if isinstance(value, np.ndarray) and value.size > sidecar_threshold
    }
    refs |= _summary_refs(values, summary_only)
    return dumps_side(case_name, side, values, env, sidecars=refs)


def _summary_refs(values: Mapping[str, Any], keys: Collection[str]) -> dict[str, dict]:
    """Summary-only references (no file name, ``summary_only: true``) of the tensor ``keys``."""
    refs = {}
    for key in keys:
        if isinstance(values.get(key), np.ndarray):
            ref = sidecar.sidecar_reference("", key, values[key])
            del ref["sidecar"]
            refs[key] = ref | {"summary_only": True}
    return refs


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
    """A sidecar reference on one line, its fields in a fixed reading order (a summary-only
    one has no file name, and says so last)."""
    names = ("dtype", "shape", "sidecar", "sha256")
    fields = [f'"{k}": {_compact(ref[k])}' for k in names if k in ref]
    stats = ", ".join(f'"{k}": {_compact(ref["summary"][k])}' for k in _SUMMARY_KEYS)
    tail = ', "summary_only": true' if ref.get("summary_only") else ""
    return ("{" + ", ".join(fields) + ', "summary": {' + stats + "}" + tail + "}").encode()


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
    if is_float(flat.dtype):
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
    """Atomically replace ``path`` with ``text`` (UTF-8; temp file, fsync, os.replace).

    An OSError names ``path`` (not the temporary file, nor nothing, as a failed ``write``
    on a full disk would).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        sidecar.atomic_write(path, lambda f: f.write(data))
    except OSError as exc:
        raise write_error(exc, path) from exc


def write_error(exc: OSError, path: str | os.PathLike, key: str | None = None) -> OSError:
    """``exc`` (same errno, so the same OSError subclass) naming the file being written and,
    for a sidecar, its key: ``str()`` reads ``[Errno 28] <key>: cannot write its sidecar
    (No space left on device): '<path>'``; ``strerror`` and ``filename`` carry the parts."""
    problem = exc.strerror or str(exc)
    if key is not None:
        problem = f"{one_line(key)}: cannot write its sidecar ({problem})"
    return OSError(exc.errno, problem, str(path))


def write_side(
    path: str | os.PathLike,
    case: str,
    side: str,
    values: Mapping,
    env: Mapping,
    *,
    sidecar_threshold: int = SIDECAR_THRESHOLD,
    summary_only: Collection[str] = (),
) -> str:
    """Write one side file atomically; tensors above the threshold go to ``.npy`` sidecars.

    The tensor keys in ``summary_only`` (a golden's ``GOLDEN_SUMMARY`` keys) keep no data at
    all: their entry is a sidecar reference without a file (dtype, shape, sha256, summary,
    ``"summary_only": true``), and no sidecar is written for them.

    Sidecars (content-addressed names) are written first, then the JSON is replaced, then
    sidecars only the old JSON referenced are deleted: a failure at any point leaves the old
    or the new file complete and readable. Returns the JSON text written.
    """
    path = Path(path)
    normalized = normalize(values)
    old = _referenced_sidecars(path)
    refs: dict[str, dict] = {}
    summarised = _summary_refs(normalized, summary_only)
    for key, value in normalized.items():
        if key in summarised:
            continue
        if isinstance(value, np.ndarray) and value.size > sidecar_threshold:
            try:
                refs[key] = sidecar.write_sidecar(path.parent, path.stem, key, value)
            except OSError as exc:  # e.g. a name too long, a full disk: say which key
                _remove(path.parent, {ref["sidecar"] for ref in refs.values()} - old)
                raise write_error(exc, path, key) from exc
    new = {ref["sidecar"] for ref in refs.values()}
    data = _dumps_bytes(case, side, normalized, env, refs | summarised)
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
        data = read_bytes(path, MAX_BYTES)
        if b'"sidecar"' not in data:
            return set()
        record = read_side(path, verify_sidecars=False, data=data)  # the file is read once
    except (OSError, RecordError):
        return set()
    return set(record.sidecars)


def _remove(folder: Path, names: set[str]) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)
