"""Atomic file writes and binary sidecars for large tensors.

A tensor above the sidecar threshold is stored next to its JSON file as ``.npy`` and the JSON
keeps only a reference: dtype, shape, file name, sha256 and summary statistics, so a git diff
of a golden shows the hash and the statistics instead of megabytes of numbers.

The file name is content addressed, ``<json stem>.<key>.<first 12 hex of sha256>.npy``: a new
sidecar never overwrites one that the current JSON still references, so a write that dies
midway leaves the old JSON *and* its sidecars intact (see ``record.write_side``).

The sha256 covers the array's C-order bytes as stored in the ``.npy`` payload (native byte
order, little-endian on every supported machine), not the ``.npy`` header, so it does not
depend on the NumPy version that wrote the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import numpy as np

# Small enough to stay in L2 cache: the summary makes several passes over each chunk.
_CHUNK = 1 << 16
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_KEY_CHARS = 80


class SidecarError(ValueError):
    """A sidecar is missing or does not match its reference; ``record`` adds path and key."""


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write a file through ``write(fileobj)`` so that readers see the old or the new file.

    The data goes to a temporary file in the same folder, is flushed and fsynced, and then
    renamed over ``path``. On any exception the temporary file is removed and ``path`` is
    left as it was. Parent folders are created.
    """
    path = Path(path)
    _commit(_write_temp(path.parent, path.name, write), path)


def _write_temp(folder: Path, name: str, write: Callable[[BinaryIO], None]) -> str:
    """A complete, fsynced temporary file in ``folder``; removed again if anything fails."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
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


def _commit(tmp: str, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _unlink(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; best effort (not every platform can open a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sha256_of(array: np.ndarray) -> str:
    """Hex sha256 of the array's C-order bytes."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()


def sidecar_name(stem: str, key: str, sha256: str) -> str:
    """``<stem>.<key with unsafe characters replaced>.<sha256[:12]>.npy``."""
    safe = _UNSAFE.sub("_", key)[:_MAX_KEY_CHARS]
    return f"{stem}.{safe}.{sha256[:12]}.npy"


def write_sidecar(folder: Path, stem: str, key: str, array: np.ndarray) -> dict:
    """Write ``array`` as an atomic ``.npy`` sidecar; return its JSON reference record."""
    array = np.ascontiguousarray(array)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # hashlib releases the GIL: the hash runs beside the statistics and the save, and
        # the file gets its content-addressed name once both are done.
        hashing = pool.submit(sha256_of, array)
        summary = summarize(array)
        tmp = _write_temp(folder, stem, lambda f: np.save(f, array, allow_pickle=False))
        try:
            digest = hashing.result()
        except BaseException:
            _unlink(tmp)
            raise
    name = sidecar_name(stem, key, digest)
    _commit(tmp, folder / name)
    return _reference(array, name, digest, summary)


def sidecar_reference(stem: str, key: str, array: np.ndarray) -> dict:
    """The reference ``write_sidecar`` would return for ``array``, without writing a file."""
    array = np.ascontiguousarray(array)
    digest = sha256_of(array)
    return _reference(array, sidecar_name(stem, key, digest), digest, summarize(array))


def _reference(array: np.ndarray, name: str, digest: str, summary: dict) -> dict:
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "sidecar": name,
        "sha256": digest,
        "summary": summary,
    }


def read_sidecar(folder: Path, name: str, dtype: str, shape: list[int], sha256: str):
    """Memory-map a sidecar and verify dtype, shape and sha256; raise SidecarError."""
    file = folder / name
    if not file.is_file():
        raise SidecarError(f"sidecar file {name} is missing")
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # np.load raises many types for a hostile header
        raise SidecarError(f"sidecar {name} is not a valid .npy file ({exc})") from None
    if array.dtype != np.dtype(dtype):
        raise SidecarError(f"sidecar {name} holds dtype {array.dtype}, the record says {dtype}")
    if list(array.shape) != shape:
        raise SidecarError(
            f"sidecar {name} holds shape {list(array.shape)}, the record says {shape}"
        )
    if array.size and not array.flags.c_contiguous:
        raise SidecarError(f"sidecar {name} is not stored in C order")
    found = sha256_of(array) if array.size else sha256_of(np.empty(0, array.dtype))
    if found != sha256:
        raise SidecarError(
            f"sidecar {name} sha256 mismatch: file has {found[:16]}..., record says "
            f"{sha256[:16]}... (sidecar changed or corrupt)"
        )
    # A plain ndarray view keeps the mapping alive without the np.memmap subclass quirks.
    return array.view(np.ndarray)


def summarize(array: np.ndarray) -> dict:
    """min, max, mean, l2 over the finite values, and the nan / inf counts.

    Sums run in float64 over cache-sized chunks with NumPy's pairwise summation (not BLAS),
    so they do not depend on thread counts; mean and l2 are rounded to 10 significant digits
    to keep golden diffs quiet (the sha256 is the exact fingerprint).
    """
    flat = array.reshape(-1)
    if not flat.size:
        return {"min": None, "max": None, "mean": None, "l2": None, "nan": 0, "inf": 0}
    lo, hi = flat.min(), flat.max()  # NaN propagates: a finite pair means all are finite
    if flat.dtype.kind == "f" and not (np.isfinite(lo) and np.isfinite(hi)):
        return _summarize_nonfinite(flat)
    total = squares = 0.0
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK].astype(np.float64)
        total += float(chunk.sum())
        squares += float(np.square(chunk, out=chunk).sum())
    return _stats(float(lo), float(hi), total, squares, flat.size, 0, 0)


def _summarize_nonfinite(flat: np.ndarray) -> dict:
    """The slow path: mask out NaN and infinities chunk by chunk."""
    lo, hi = math.inf, -math.inf
    total = squares = 0.0
    count = nan = inf = 0
    for start in range(0, flat.size, _CHUNK):
        chunk = flat[start : start + _CHUNK].astype(np.float64)
        nan += int(np.count_nonzero(np.isnan(chunk)))
        inf += int(np.count_nonzero(np.isinf(chunk)))
        chunk = chunk[np.isfinite(chunk)]
        if chunk.size:
            lo, hi = min(lo, float(chunk.min())), max(hi, float(chunk.max()))
            total += float(chunk.sum())
            squares += float(np.square(chunk).sum())
            count += chunk.size
    if not count:
        return {"min": None, "max": None, "mean": None, "l2": None, "nan": nan, "inf": inf}
    return _stats(lo, hi, total, squares, count, nan, inf)


def _stats(lo, hi, total, squares, count, nan, inf) -> dict:
    mean, l2 = _round(total / count), _round(math.sqrt(squares))
    return {"min": lo, "max": hi, "mean": mean, "l2": l2, "nan": nan, "inf": inf}


def _round(x: float) -> float:
    return float(f"{x:.10g}")
