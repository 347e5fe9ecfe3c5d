"""Reading weight files someone else wrote: a bounded read, bounded messages, checked shapes.

The three importers (`store.reader` for `torch.save` files, `store.safetensors_reader`,
`optim.burnpack`) take their limits from here, so a `.pt`, a `.safetensors` and a `.bpk` file
are held to the same rules:

- `read_file`: the harness's bounded reader (`harness.bounded`): a regular file only (a FIFO
  would block, `/dev/zero` never ends), its size checked by `stat` before a byte is read, the
  read stopped at the cap (the file may grow);
- `shown`: the repr of a value taken from a file (`harness.escape.preview`), at most
  `SHOWN_CHARS` characters, built without ever formatting the whole value (a pickle of
  nested shared lists has a repr of
  2**30 characters; an int of 5,000 digits cannot be `str()`ed at all);
- `shape_problem` / `stride_problem`: what NumPy could not hold, found before NumPy sees it
  (NumPy raises its own ValueError or OverflowError there, not the importer's error).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# The harness's one bounded reader and its bounded echo of values: the engine reads weight
# files someone else wrote under the same rules as the harness reads goldens.
from harness.bounded import RefusedFile, read_bounded
from harness.escape import clip, preview

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


def read_file(
    path: str | os.PathLike, error: type[Exception], cap: int = MAX_FILE_BYTES
) -> bytes | bytearray:
    """The bytes of the regular file `path`, at most `cap` of them, through the harness's one
    bounded reader (`harness.bounded`); a refusal raises `error("<path>: <problem>")`."""
    try:
        return read_bounded(path, cap, "weight file")
    except RefusedFile as exc:
        raise error(str(exc)) from None
    except OSError as exc:
        raise error(f"{path}: cannot read the file: {exc.strerror or exc}") from None


def shown(value: object) -> str:
    """A repr of `value` of at most SHOWN_CHARS characters, whatever `value` holds."""
    return preview(value, SHOWN_CHARS)


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
