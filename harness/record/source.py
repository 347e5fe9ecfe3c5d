"""The bytes of an input JSON file, read through the one bounded reader (``harness.bounded``):
only a regular file, its size checked before a byte is read, the read capped at ``max_bytes``
and stopped early at a NUL byte (never part of JSON text)."""

from __future__ import annotations

import os

from harness.bounded import RefusedFile, read_bounded
from harness.record.values import MAX_BYTES, RecordError


def json_bytes(path: str | os.PathLike, max_bytes: int = MAX_BYTES) -> bytes | bytearray:
    """The bytes of a regular file of at most ``max_bytes`` (maybe none); RefusedFile (an
    ``OSError``) for anything else: for a caller to whom such a file is not a malformed record
    but unusable input (a golden that is a FIFO or ``/dev/zero``)."""
    return read_bounded(path, max_bytes, "JSON file", text=True)


def read_bytes(path: str | os.PathLike, max_bytes: int) -> bytes | bytearray:
    """The bytes of a non-empty regular file of at most ``max_bytes``; RecordError otherwise."""
    try:
        data = json_bytes(path, max_bytes)
    except RefusedFile as exc:
        raise RecordError(path, None, exc.problem) from None
    if not data:
        raise RecordError(path, None, "empty file (0 bytes), expected a JSON object")
    return data
