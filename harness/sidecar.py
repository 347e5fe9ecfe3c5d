"""Atomic file writes and binary sidecars for large tensors.

A tensor above the sidecar threshold is stored next to its JSON file as ``.npy`` and the JSON
keeps only a reference: dtype, shape, file name, sha256 and summary statistics, so a git diff
of a golden shows the hash and the statistics instead of megabytes of numbers.

The file name is content addressed, ``<json stem>.<key>.<first 12 hex of sha256>.npy``: a new
sidecar never overwrites one that the current JSON still references, so a write that dies
midway leaves the old JSON *and* its sidecars intact (see ``record.write_side``).

A bfloat16 tensor is stored as its uint16 bit patterns (NumPy's ``.npy`` header has no
bfloat16; ``harness.float_dtypes``), and the reference names the dtype.

The sha256 covers the array's C-order bytes as stored in the ``.npy`` payload (native byte
order, little-endian on every supported machine), not the ``.npy`` header, so it does not
depend on the NumPy version that wrote the file.

Costs, for the 5e7-element sidecars of the benchmarks:

- one pass: the payload is written chunk by chunk while two threads hash the same chunks and
  compute the summary statistics (hashlib and NumPy release the GIL), and the hash also runs
  during the file's fsync;
- one fsync per file; the folder is fsynced once, by the JSON write that references the
  sidecars (``atomic_write``), which makes every rename before it durable too;
- a sidecar this process wrote is not hashed again when read back: see :func:`read_sidecar`.

Temporary files are named ``.<target>.<host tag>-<pid>.<random>.tmp``. A run killed by SIGKILL
leaves one behind; the next write to that folder removes it once its writer is known to be
gone (same host, no such process) or, for another host's file, when it is older than
``STALE_AFTER`` seconds. A live writer's temporary file is never removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import math
import os
import platform
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from harness.bounded import RefusedFile, open_bounded, read_bounded
from harness.escape import clip
from harness.float_dtypes import numpy_dtype, storage_dtype
from harness.summary import (
    SUMMARY_CHUNK,
    Summary,
    summarize,
    summary_form_problem,
    summary_problem,
)

__all__ = [
    "MAX_SIDECAR_BYTES",
    "STALE_AFTER",
    "SidecarError",
    "atomic_write",
    "read_sidecar",
    "remove_stale_temps",
    "sha256_of",
    "sidecar_name",
    "sidecar_reference",
    "summarize",
    "summary_form_problem",
    "verify_summary",
    "write_sidecar",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_KEY_CHARS = 80
_MAX_TEMP_TARGET = 100  # characters of the target's name kept in its temporary file's name
_PASS_CHUNK = 16 * SUMMARY_CHUNK  # elements per write / hash step (4 MiB of float32)
STALE_AFTER = 300.0  # seconds after which another host's temporary file counts as abandoned
_HOST = hashlib.sha256(platform.node().encode()).hexdigest()[:8]  # no host name on disk
_TEMP = re.compile(r"\.(?P<target>.+)\.(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)\.[a-z0-9_]{8}\.tmp")
_MAX_CACHED = 1024
# The largest sidecar read: 2**31 elements (record.MAX_ELEMENTS) of 8 bytes, plus the header
# (NumPy reads at most 10,000 bytes of it).
MAX_SIDECAR_BYTES = (1 << 34) + (1 << 16)


class SidecarError(ValueError):
    """A sidecar is missing or does not match its reference; ``record`` adds path and key."""


# ---------------------------------------------------------------------------------------------
# Atomic writes


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write a file through ``write(fileobj)`` so that readers see the old or the new file.

    The data goes to a temporary file in the same folder, is flushed and fsynced, and then
    renamed over ``path``; the folder is fsynced after the rename. On any exception the
    temporary file is removed and ``path`` is left as it was. Parent folders are created.
    """
    path = Path(path)
    _commit(_write_temp(path.parent, path.name, write), path)


def _write_temp(folder: Path, name: str, write: Callable[[BinaryIO], None]) -> str:
    """A complete, fsynced temporary file in ``folder``; removed again if anything fails."""
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(folder)
    prefix = f".{name[:_MAX_TEMP_TARGET]}.{_HOST}-{os.getpid()}."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; goldens are shared files
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _commit(tmp: str, path: Path, *, sync_folder: bool = True) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    if sync_folder:
        _fsync_dir(path.parent)


def _unlink(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable; best effort (not every platform can)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove_stale_temps(folder: str | os.PathLike) -> list[str]:
    """Remove temporary files of writers that died in ``folder``; return their names.

    Only names of the ``atomic_write`` pattern are considered. A file of this host is stale
    when its writer process is gone; a file of another host when it has not been modified
    for ``STALE_AFTER`` seconds (its process cannot be looked up from here).
    """
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _TEMP.fullmatch(entry.name)
            if match and _abandoned(match, entry):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
    return removed


def _abandoned(match: re.Match, entry: os.DirEntry) -> bool:
    if match["host"] == _HOST:
        return not _process_alive(int(match["pid"]))
    try:
        age = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    return age > STALE_AFTER


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed, unreaped child)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    with contextlib.suppress(OSError, IndexError):  # RefusedFile is an OSError
        status = read_bounded(f"/proc/{pid}/stat", 4096, "process status file")
        return status.rsplit(b")", 1)[1].split()[0] != b"Z"  # the state after "(name)"
    return True


# ---------------------------------------------------------------------------------------------
# Writing sidecars


def sha256_of(array: np.ndarray) -> str:
    """Hex sha256 of the array's C-order bytes."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()


def sidecar_name(stem: str, key: str, sha256: str) -> str:
    """``<stem>.<key with unsafe characters replaced>.<sha256[:12]>.npy``."""
    safe = _UNSAFE.sub("_", key)[:_MAX_KEY_CHARS]
    return f"{stem}.{safe}.{sha256[:12]}.npy"


class _Fingerprint:
    """The sha256 and summary of an array, computed by two threads beside another pass.

    ``feed`` hands over consecutive chunks of the flat array (views, no copies); each thread
    works through them in order while the caller writes them; ``result`` waits for both.
    """

    def __init__(self, *, with_summary: bool = True) -> None:
        self._hash = hashlib.sha256()
        self._summary = Summary() if with_summary else None
        self._threads = [ThreadPoolExecutor(1) for _ in range(1 + with_summary)]
        self._pending: list[Future] = []

    def feed(self, chunk: np.ndarray) -> None:
        self._pending.append(self._threads[0].submit(self._hash.update, chunk.view(np.uint8)))
        if self._summary is not None:
            self._pending.append(self._threads[1].submit(self._summary.add, chunk))

    def result(self) -> tuple[str, dict | None]:
        for future in self._pending:
            future.result()
        summary = self._summary.result() if self._summary is not None else None
        return self._hash.hexdigest(), summary

    def close(self) -> None:
        for thread in self._threads:
            thread.shutdown(wait=True, cancel_futures=True)


def _passes(flat: np.ndarray, fingerprint: _Fingerprint, sink=None) -> None:
    """Feed ``flat`` to ``fingerprint`` chunk by chunk, and to ``sink`` (a write) if given."""
    for start in range(0, flat.size, _PASS_CHUNK):
        chunk = flat[start : start + _PASS_CHUNK]
        fingerprint.feed(chunk)
        if sink is not None:
            sink(chunk.view(np.uint8))


def _fingerprint_of(array: np.ndarray, *, with_summary: bool = True) -> tuple[str, dict | None]:
    fingerprint = _Fingerprint(with_summary=with_summary)
    try:
        _passes(array.reshape(-1), fingerprint)
        return fingerprint.result()
    finally:
        fingerprint.close()


def write_sidecar(folder: Path, stem: str, key: str, array: np.ndarray) -> dict:
    """Write ``array`` as an atomic ``.npy`` sidecar; return its JSON reference record.

    The folder is not fsynced here: the JSON that references the sidecar is written next,
    in the same folder, and its ``atomic_write`` fsyncs the folder once for both renames.
    """
    array = np.ascontiguousarray(array)
    fingerprint = _Fingerprint()
    try:
        tmp = _write_temp(folder, stem, lambda f: _write_npy(f, array, fingerprint))
        try:
            digest, summary = fingerprint.result()  # the hash ran during the fsync too
            stamp = _stamp_own_file(tmp)
        except BaseException:
            _unlink(tmp)
            raise
    finally:
        fingerprint.close()
    name = sidecar_name(stem, key, digest)
    _commit(tmp, folder / name, sync_folder=False)
    if stamp is not None:
        _remember(folder / name, stamp, digest, summary)
    return _reference(array, name, digest, summary)


def _write_npy(f: BinaryIO, array: np.ndarray, fingerprint: _Fingerprint) -> None:
    """The bytes ``np.save`` writes (same header), fingerprinted on the way out."""
    header = np.lib.format.header_data_from_array_1_0(array.view(storage_dtype(array.dtype)))
    try:
        np.lib.format.write_array_header_1_0(f, header)
    except ValueError:  # a header beyond 64 KiB: what np.save falls back to
        np.lib.format.write_array_header_2_0(f, header)
    _passes(array.reshape(-1), fingerprint, f.write)


def _stamp_own_file(tmp: str) -> tuple | None:
    """Give a just-written file an mtime no later write can produce; return its stat key.

    The file is still under its private temporary name. Its mtime is set 1 ns before its
    own, so any later change of the content (which stamps the current time, at least the time
    of this write) moves the mtime away, whatever the clock's granularity. None when the file
    system cannot store that (coarse timestamps): such a sidecar is hashed again when read.
    """
    written = os.stat(tmp)
    os.utime(tmp, ns=(written.st_atime_ns, written.st_mtime_ns - 1))
    stamped = os.stat(tmp)
    return _stat_key(stamped) if stamped.st_mtime_ns < written.st_mtime_ns else None


def sidecar_reference(stem: str, key: str, array: np.ndarray) -> dict:
    """The reference ``write_sidecar`` would return for ``array``, without writing a file."""
    array = np.ascontiguousarray(array)
    digest, summary = _fingerprint_of(array)
    return _reference(array, sidecar_name(stem, key, digest), digest, summary)


def _reference(array: np.ndarray, name: str, digest: str, summary: dict | None) -> dict:
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "sidecar": name,
        "sha256": digest,
        "summary": summary,
    }


# ---------------------------------------------------------------------------------------------
# Reading sidecars

# path -> (stat key, sha256, summary) of sidecars this process wrote (see _stamp_own_file)
_OWN_FILES: OrderedDict[str, tuple[tuple, str, dict | None]] = OrderedDict()
_OWN_LOCK = threading.Lock()


def _stat_key(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(path: Path, key: tuple, digest: str, summary: dict | None) -> None:
    with _OWN_LOCK:  # sessions may write sides from several threads
        where = os.path.abspath(path)
        _OWN_FILES[where] = (key, digest, summary)
        _OWN_FILES.move_to_end(where)
        while len(_OWN_FILES) > _MAX_CACHED:
            _OWN_FILES.popitem(last=False)


def read_sidecar(
    folder: Path,
    name: str,
    dtype: str,
    shape: list[int],
    sha256: str,
    summary: Mapping[str, Any] | None = None,
):
    """Memory-map a sidecar and verify dtype, shape, sha256 and ``summary``; raise SidecarError.

    A sidecar this process wrote, whose device, inode, size and mtime are unchanged, is not
    hashed again: it was hashed from the bytes written, and any change since would have moved
    the mtime away from the value ``write_sidecar`` gave it. ``summary`` (the reference's
    ``summary`` block) is checked against the data when given (see :func:`verify_summary`).
    """
    shown = clip(name)  # a name from the file, in messages
    array, key = _map_npy(folder / name, shown)
    wanted = numpy_dtype(dtype)
    if array.dtype != storage_dtype(wanted):
        raise SidecarError(f"sidecar {shown} holds dtype {array.dtype}, the record says {dtype}")
    array = array.view(wanted)  # bfloat16 is stored as its bit patterns
    if list(array.shape) != shape:
        raise SidecarError(
            f"sidecar {shown} holds shape {list(array.shape)}, the record says {shape}"
        )
    if array.size and not array.flags.c_contiguous:
        raise SidecarError(f"sidecar {shown} is not stored in C order")
    own = _OWN_FILES.get(os.path.abspath(folder / name))
    if own is not None and own[0] == key and own[1] == sha256:
        found, actual = sha256, own[2]
        if summary is not None and actual is None:
            actual = summarize(array)
    else:
        found, actual = _fingerprint_of(array, with_summary=summary is not None)
    if found != sha256:
        raise SidecarError(
            f"sidecar {shown} sha256 mismatch: file has {found[:16]}..., record says "
            f"{sha256[:16]}... (sidecar changed or corrupt)"
        )
    if summary is not None:
        problem = summary_problem(actual, summary)
        if problem:
            raise SidecarError(f"sidecar {shown}: {problem}")
    # A plain ndarray view keeps the mapping alive without the np.memmap subclass quirks.
    return array.view(np.ndarray)


def verify_summary(array: np.ndarray, summary: Mapping[str, Any]) -> str | None:
    """None when ``summary`` states ``array``'s statistics, else the problem in one line."""
    return summary_problem(summarize(array), summary)


def _map_npy(file: Path, name: str) -> tuple[np.ndarray, tuple]:
    """Open a regular ``.npy`` file without blocking and map it read-only; its stat key too.

    The file is opened once, by the bounded reader: the stat key, the header and the mapping
    all belong to the same inode, and a FIFO, a folder or a file over ``MAX_SIDECAR_BYTES``
    under the name is refused before any read.
    """
    try:
        f = open_bounded(file, MAX_SIDECAR_BYTES, ".npy sidecar")
    except RefusedFile as exc:
        if exc.errno == errno.ENOENT:
            raise SidecarError(f"sidecar file {name} is missing") from None
        raise SidecarError(f"sidecar {name} {exc.problem}") from None
    with f:
        st = os.fstat(f.fileno())
        try:
            array = _map_open_npy(f, st.st_size)
        except Exception as exc:  # the header readers raise many types for hostile bytes
            problem = clip(str(exc))
            raise SidecarError(f"sidecar {name} is not a valid .npy file ({problem})") from None
    return array, _stat_key(st)


def _map_open_npy(f: BinaryIO, size: int) -> np.ndarray:
    """What ``np.load(mmap_mode="r", allow_pickle=False)`` does, on an open file."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError(f"unsupported .npy version {version[0]}.{version[1]}")
    if dtype.hasobject:
        raise ValueError("it holds Python objects")
    offset = f.tell()
    nbytes = math.prod(shape) * dtype.itemsize
    if offset + nbytes > size:
        raise ValueError(f"{size - offset} data bytes, the header needs {nbytes}")
    if nbytes == 0:
        return np.empty(shape, dtype, order="F" if fortran else "C")
    order = "F" if fortran else "C"
    return np.memmap(f, dtype=dtype, mode="r", shape=tuple(shape), order=order, offset=offset)
