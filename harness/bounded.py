"""The one way the harness reads a file it did not just write: bounded, never blocking.

Side files and goldens, ``.obtained`` files, loose JSON, ``.npy`` sidecars, ``pyproject.toml``
and weight files may be anything a user or an attacker put under the name: a FIFO (a plain
``open`` blocks until a writer comes), ``/dev/zero`` behind a symlink (``read_bytes`` never
ends), a socket, a folder, a sparse file of terabytes. So a read here

- takes the kind and size from ``stat`` before opening, so a special file is refused without
  being opened and a huge file without a byte read;
- opens with ``O_NONBLOCK`` (a FIFO swapped in after the ``stat`` cannot block the open) and
  checks again with ``fstat`` on the opened descriptor, which is what is then read;
- reads at most ``limit + 1`` bytes, in chunks, so a file longer than ``stat`` said (a file
  growing under us, a ``/proc`` file that reports size 0) is caught at the limit.

Each kind of file states its own limit beside the code that reads it (``record.MAX_BYTES``,
``sidecar.MAX_SIDECAR_BYTES``, ``project.MAX_CONFIG_BYTES``). Every refusal is one
:class:`RefusedFile`, an ``OSError`` (the command line reports any ``OSError`` as one line and
exit code 2), whose ``problem`` reads after the file's name: ``<path>: <problem>``.
"""

from __future__ import annotations

import errno as errnos
import os
import stat
from typing import BinaryIO

from harness.escape import one_line

__all__ = ["READ_CHUNK", "RefusedFile", "open_bounded", "read_bounded"]

READ_CHUNK = 1 << 24  # bytes per read: a NUL byte of a text file is found within 16 MiB
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_REGULAR = (
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


class RefusedFile(OSError):
    """A file the bounded reader refused; ``str()`` is one line, ``<path>: <problem>``.

    ``filename`` is the path and ``strerror`` the problem (as for any ``OSError``); ``errno``
    is the failing call's (``ENOENT`` for a missing file) or None for a refusal by kind or size.
    """

    def __init__(self, path: str | os.PathLike, problem: str, code: int | None = None) -> None:
        super().__init__(code, problem, os.fspath(path))
        self.path, self.problem = os.fspath(path), problem

    def __str__(self) -> str:
        return one_line(f"{self.path}: {self.problem}")

    def __reduce__(self):  # OSError pickles (errno, strerror, filename): a worker sends it back
        return type(self), (self.path, self.problem, self.errno)


def open_bounded(path: str | os.PathLike, limit: int, what: str) -> BinaryIO:
    """The regular file at ``path``, opened unbuffered for reading, at most ``limit`` bytes.

    ``what`` names the kind of file in messages ("JSON file", ".npy sidecar"). RefusedFile for
    a missing or unreadable file, anything but a regular file, or one over ``limit`` bytes.
    For a caller that maps the file (``fstat`` of ``fileno()`` is what was checked); one that
    reads it whole calls :func:`read_bounded`.
    """
    _check(path, _stat(path, os.stat), limit, what)  # before opening: a FIFO is never opened
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise _refusal(path, exc) from None
    f = os.fdopen(fd, "rb", buffering=0)
    try:
        _check(path, os.fstat(fd), limit, what)  # the file may have been swapped meanwhile
    except BaseException:
        f.close()
        raise
    return f


def read_bounded(
    path: str | os.PathLike, limit: int, what: str, *, text: bool = False
) -> bytes | bytearray:
    """The bytes of the regular file at ``path``, at most ``limit``; RefusedFile otherwise.

    Never reads more than ``limit + 1`` bytes, whatever the file claims or becomes. The
    result is ``bytes`` for a file of one chunk, else a ``bytearray`` (never copied whole).
    ``text``: the file must be text (JSON, TOML), so a NUL byte refuses it at the chunk it is
    in, before the rest is read (``/dev/zero``-like content behind a regular file's name).
    """
    with open_bounded(path, limit, what) as f:
        size = os.fstat(f.fileno()).st_size
        data: bytes | bytearray = b""
        while chunk := f.read(min(READ_CHUNK, limit + 1 - len(data))):
            nul = chunk.find(0) if text else -1
            if nul >= 0:
                raise RefusedFile(path, f"not a {what}: a NUL byte at offset {len(data) + nul}")
            if not data:
                data = chunk  # most files are one chunk: no copy
            else:
                data = data if isinstance(data, bytearray) else bytearray(data)
                data += chunk
            if len(data) > limit:
                problem = f"is over the limit of {limit} bytes for a {what} ({size} bytes by stat)"
                raise RefusedFile(path, problem)
    return data


def _stat(path: str | os.PathLike, how) -> os.stat_result:
    try:
        return how(path)
    except OSError as exc:
        raise _refusal(path, exc) from None


def _refusal(path: str | os.PathLike, exc: OSError) -> RefusedFile:
    if exc.errno == errnos.ENOENT:
        return RefusedFile(path, "no such file", exc.errno)
    return RefusedFile(path, f"cannot read ({exc.strerror or exc})", exc.errno)


def _check(path: str | os.PathLike, info: os.stat_result, limit: int, what: str) -> None:
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise RefusedFile(path, f"is a directory, expected a {what}")
    if not stat.S_ISREG(mode):
        problem = next((p for test, p in _NOT_REGULAR if test(mode)), "is not a regular file")
        raise RefusedFile(path, problem)
    if info.st_size > limit:
        problem = f"is {info.st_size} bytes, over the limit of {limit} bytes for a {what}"
        raise RefusedFile(path, problem)
