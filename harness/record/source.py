"""The bytes of an input file, read safely: only a regular file, its size checked before a
byte is read, the read bounded and stopped early at content that cannot be JSON."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from harness.record.values import RecordError


def read_bytes(path: Path, max_bytes: int) -> bytes | bytearray:
    """The bytes of a regular file of at most ``max_bytes``; RecordError for anything else.

    The kind and size come from ``stat`` before the file is opened, so a FIFO, a device or a
    socket is refused without blocking or reading, and a huge file without reading a byte. The
    file is opened non-blocking and checked again (it may have been swapped meanwhile), then
    read in chunks into one buffer: memory stays bounded by the limit, and a NUL byte (never
    part of JSON text; ``/dev/zero``-like content) stops the read at the chunk it is in.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise RecordError(path, None, "no such file") from None
    except OSError as exc:
        raise RecordError(path, None, f"cannot read ({exc.strerror or exc})") from None
    _check_kind(path, info, max_bytes)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise RecordError(path, None, f"cannot read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        _check_kind(path, os.fstat(fd), max_bytes)
        data = _read_bounded(path, f, max_bytes)
    if not data:
        raise RecordError(path, None, "empty file (0 bytes), expected a JSON object")
    return data


_NOT_REGULAR = (
    (stat.S_ISDIR, "is a directory, expected a JSON file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)
READ_CHUNK = 1 << 24  # bytes per read: a NUL byte is found within the first 16 MiB


def _check_kind(path: Path, info: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        problem = next((p for test, p in _NOT_REGULAR if test(info.st_mode)), None)
        raise RecordError(path, None, problem or "is not a regular file")
    if info.st_size > max_bytes:
        raise RecordError(path, None, f"file is larger than {max_bytes} bytes (max_bytes)")


def _read_bounded(path: Path, f: Any, max_bytes: int) -> bytes | bytearray:
    """Read to the end in chunks, never more than ``max_bytes`` (a file may be longer than
    ``stat`` said, as /proc files are), checking each chunk for a NUL byte before keeping it."""
    data: bytes | bytearray = b""
    while chunk := f.read(min(READ_CHUNK, max_bytes + 1 - len(data))):
        nul = chunk.find(0)
        if nul >= 0:
            offset = len(data) + nul
            raise RecordError(path, None, f"not valid JSON: a NUL byte at offset {offset}")
        if not data:
            data = chunk  # most files are one chunk: no copy
        else:
            data = data if isinstance(data, bytearray) else bytearray(data)
            data += chunk
        if len(data) > max_bytes:
            raise RecordError(path, None, f"file is larger than {max_bytes} bytes (max_bytes)")
    return data
