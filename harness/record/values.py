"""What a side file holds: the format's vocabulary and limits, its value types, and
``normalize`` (a case side's mapping -> flat dotted keys of arrays and plain values)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.escape import MAX_ECHO, clip, one_line, preview
from harness.float_dtypes import BFLOAT16

FORMAT_VERSION = 1
ELEMENTS_PER_LINE = 8
SIDECAR_THRESHOLD = 65536  # larger tensors go to .npy sidecars, in out/ and golden/ alike
MAX_DEPTH = 64
MAX_BYTES = 1 << 30
MAX_ELEMENTS = 1 << 31
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DTYPES = (*FLOAT_DTYPES, *INT_DTYPES, "bool")
SPECIALS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
INT64_RANGE = (-(1 << 63), (1 << 63) - 1)
TENSOR_KEYS = frozenset({"dtype", "shape", "data"})
SIDECAR_KEYS = frozenset({"dtype", "shape", "sidecar", "sha256", "summary"})
# A golden entry of a key the user marked as bulky (GOLDEN_SUMMARY): a sidecar reference
# without its file; harness.golden.summary_only says how it is compared.
SUMMARY_ONLY_KEYS = frozenset({"dtype", "shape", "sha256", "summary", "summary_only"})
ERROR_KEYS = frozenset({"error", "message"})
MAX_PROBLEM = 5 * MAX_ECHO  # characters of a RecordError's problem: a few quoted values


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


@dataclass(frozen=True)
class SummaryOnly:
    """A tensor a golden keeps as dtype, shape, sha256 and summary statistics only.

    ``summary`` is ``harness.summary.summarize``'s mapping; no element is stored, so a
    comparison with it can be bit-exact (equal sha256) or statistical, never element-level.
    """

    dtype: str
    shape: tuple[int, ...]
    sha256: str
    summary: dict


class RecordError(Exception):
    """Unreadable or malformed input; ``str()`` is one line ``<path>: <key>: <problem>``.

    Path, key and problem are escaped by ``harness.escape.one_line`` (a hostile key or sidecar
    name cannot put control characters on the terminal); runs of whitespace in the problem
    become one space. The key (from the file) is cut at ``MAX_ECHO`` characters and the
    problem, whose values from the file are quoted by ``preview``, at ``MAX_PROBLEM``: the line
    stays short whatever the file holds.
    """

    def __init__(self, path: str | os.PathLike, key: str | None, problem: str):
        self.path, self.key, self.problem = str(path), key, problem
        shown = [] if key is None else [clip(key)]
        parts = [self.path, *shown, clip(" ".join(problem.split()), MAX_PROBLEM)]
        super().__init__(": ".join(one_line(part) for part in parts))


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
            raise TypeError(f"{clip(prefix)}{preview(name)}: keys must be non-empty str")
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
        return _int64(key, value)
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
    plain = tensor.detach().cpu().resolve_conj().resolve_neg()
    if str(plain.dtype) == "torch.bfloat16":  # torch has no numpy bfloat16: pass the bits
        import torch  # only reached with a torch tensor in hand

        return plain.view(torch.int16).numpy().view(BFLOAT16)
    return plain.numpy()


def _checked_array(key: str, array: np.ndarray) -> np.ndarray:
    if array.dtype.name not in DTYPES:
        raise TypeError(f"{key}: unsupported dtype {array.dtype}; supported: {', '.join(DTYPES)}")
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _int64(key: str, value: int) -> int:
    if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        raise TypeError(f"{key}: int {preview(value)} is outside int64; return a str or an array")
    return int(value)


def _plain_item(key: str, item: Any) -> Any:
    """An element of a plain list: JSON scalars and nested lists only."""
    if isinstance(item, np.generic):
        item = item.item()
    if isinstance(item, list | tuple):
        return [_plain_item(key, x) for x in item]
    if isinstance(item, float) and not math.isfinite(item):
        raise TypeError(f"{key}: non-finite float inside a list; return a numpy array instead")
    if isinstance(item, int) and not isinstance(item, bool):
        return _int64(key, item)
    if item is None or isinstance(item, bool | float | str):
        return item
    raise TypeError(f"{key}: a list may hold numbers, bools, None, str, lists; not {preview(item)}")
