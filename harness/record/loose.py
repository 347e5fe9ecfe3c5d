"""Loose JSON (not a format-1 side file), read as written: nested objects flattened with dots;
integers, and rectangular lists of integers, as int64 arrays (an integer outside int64 is an
error, never a float); other numbers and numeric lists as arrays of the default dtype; typed
records recognised at any depth. A mixin of the reader in ``harness.record.read``, which
supplies ``typed``, ``array``, ``int_array``, ``int64``, ``record``, ``fail``,
``default_dtype`` and ``max_elements``."""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from harness.record.values import ERROR_KEYS, SIDECAR_KEYS, SPECIALS, TENSOR_KEYS, SideRecord


class LooseReading:
    """The loose-JSON half of a reader."""

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
        if type(value) is int:
            return np.array(self.int64(key, value, "integer"), dtype=np.int64)
        if type(value) is float and abs(value) < MAYBE_INT:  # finite, not a rounded integer
            scalar = _finite_scalar(value, self.default_dtype)
            if scalar is not None:
                return scalar
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
        if kinds == {int}:
            for i, x in enumerate(leaves):
                self.int64(key, x, f"data[{i}] = integer")
            return self.int_array(key, leaves, "int64").reshape(shape)
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


# orjson reads an integer literal outside [-2**63, 2**64) as a float. Any float this large may
# have been one, so a document holding one is parsed again by the stdlib (exact integers).
MAYBE_INT = 2.0**63
_FLOAT16_MAX = 65504.0


def _finite_scalar(value: float, dtype: str) -> np.ndarray | None:
    """A finite JSON float as a 0-d array of ``dtype``; None if it overflows (the full path
    words the error). What ``array`` makes of ``[value]``, without its list machinery."""
    if dtype == "float16" and abs(value) >= _FLOAT16_MAX:  # float32 and 64 hold any |x| < 2**63
        return None
    return np.array(value, dtype=dtype)


def _is_record(obj: dict) -> bool:
    """A typed record inside loose JSON (tensor, sidecar, or error with string fields)."""
    found = frozenset(obj)
    if found == ERROR_KEYS:
        return type(obj["error"]) is str and type(obj["message"]) is str
    return found in (TENSOR_KEYS, SIDECAR_KEYS)
