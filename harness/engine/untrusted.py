"""Reading weight files someone else wrote: a bounded read, bounded messages, checked shapes.

The three importers (`store.reader` for `torch.save` files, `store.safetensors_reader`,
`optim.burnpack`) take their limits from here, so a `.pt`, a `.safetensors` and a `.bpk` file
are held to the same rules:

- `read_file`: a regular file only (a FIFO would block, `/dev/zero` never ends), its size
  checked by `stat` before a byte is read, the read stopped at the cap (the file may grow);
- `shown`: the repr of a value taken from a file, at most `SHOWN_CHARS` characters, built
  without ever formatting the whole value (a pickle of nested shared lists has a repr of
  2**30 characters; an int of 5,000 digits cannot be `str()`ed at all);
- `shape_problem` / `stride_problem`: what NumPy could not hold, found before NumPy sees it
  (NumPy raises its own ValueError or OverflowError there, not the importer's error).
"""

from __future__ import annotations

import os
import reprlib
import stat
from collections.abc import Sequence

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_RANK",
    "SHOWN_CHARS",
    "clip",
    "read_file",
    "shape_problem",
    "shown",
    "stride_problem",
]

# Weight files the engine reads are a small model's: 2 GiB is far above any of them and keeps
# a file the size of the machine's memory from being read at all.
MAX_FILE_BYTES = 2 << 30
MAX_RANK = 64  # NumPy's NPY_MAXDIMS; PyTorch tensors of higher rank cannot be built either
INT64_MAX = (1 << 63) - 1  # NumPy's largest byte size or stride; PyTorch's largest numel
SHOWN_CHARS = 200
_READ_CHUNK = 1 << 24

_NOT_REGULAR = (
    (stat.S_ISDIR, "is a directory, not a weight file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def read_file(path: str | os.PathLike, error: type[Exception], cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `cap` of them; anything else raises
    `error("<path>: <problem>")`. Opened non-blocking and checked again after opening (the
    file may have been swapped for a FIFO in between)."""
    label = str(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        _check_regular(label, os.stat(path), error, cap)
        fd = os.open(path, flags)
    except OSError as exc:
        raise error(f"{label}: cannot read the file: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        _check_regular(label, info, error, cap)
        # One read of the stat size (+1 to see EOF) is the whole file, joined without a copy;
        # a file that grows meanwhile is read on in chunks, up to the cap.
        chunks, size, want = [], 0, min(info.st_size, cap) + 1
        while chunk := f.read(want):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise error(f"{label}: the file is larger than {cap} bytes")
            want = min(_READ_CHUNK, cap + 1 - size)
    return b"".join(chunks)


def _check_regular(label: str, info: os.stat_result, error: type[Exception], cap: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        problem = next((p for test, p in _NOT_REGULAR if test(info.st_mode)), None)
        raise error(f"{label}: {problem or 'is not a regular file'}")
    if info.st_size > cap:
        raise error(f"{label}: the file is larger than {cap} bytes")


class _Bounded(reprlib.Repr):
    """reprlib with every container type dispatched by `isinstance` (reprlib dispatches by type
    name, so an `OrderedDict` or a NamedTuple would get the builtin, unbounded repr) and ints
    too long to print named by their size."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 3, 4, 6, 6
        self.maxstring, self.maxother = 60, 40

    def repr1(self, x, level):
        if isinstance(x, bool) or x is None or isinstance(x, float):
            return repr(x)
        if isinstance(x, int):
            return _int_text(x)
        if isinstance(x, str | bytes):
            return self.repr_str(x, level) if isinstance(x, str) else self._bytes(x)
        for kind, method in ((dict, self.repr_dict), (list, self.repr_list)):
            if isinstance(x, kind):
                return method(x, level)
        if isinstance(x, tuple):
            fields = getattr(x, "_fields", None)  # a NamedTuple: its type name, then the tuple
            return (type(x).__name__ if fields else "") + self.repr_tuple(tuple(x), level)
        return f"<{type(x).__name__}>"

    def _bytes(self, x: bytes) -> str:
        head = repr(x[: self.maxstring])
        return head if len(x) <= self.maxstring else f"{head}...({len(x)} bytes)"


def _int_text(x: int) -> str:
    if x.bit_length() <= 128:
        return repr(x)
    return f"<{'-' if x < 0 else ''}int of {x.bit_length()} bits>"


_REPR = _Bounded()


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` cut to `limit` characters (a name taken from a file, shown in a message)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown(value: object) -> str:
    """A repr of `value` of at most SHOWN_CHARS characters, whatever `value` holds."""
    return clip(_REPR.repr(value))


def shape_problem(shape: Sequence[int], itemsize: int) -> str | None:
    """What makes `shape` (non-negative ints) impossible for an array of `itemsize`-byte
    elements, or None: more than MAX_RANK dims, or more than INT64_MAX bytes (zero-length dims
    left out, as NumPy counts them: `(2**70, 0)` is refused there too)."""
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)} is more than {MAX_RANK}"
    nbytes = itemsize
    for n in shape:
        nbytes *= max(n, 1)
        if nbytes > INT64_MAX:
            return f"shape {shown(list(shape))} holds more than {INT64_MAX} bytes"
    return None


def stride_problem(stride: Sequence[int], itemsize: int) -> str | None:
    """A stride (in elements) NumPy cannot hold in bytes, or None."""
    if any(s * itemsize > INT64_MAX for s in stride):
        return f"stride {shown(list(stride))} is more than {INT64_MAX} bytes"
    return None
