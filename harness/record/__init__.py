"""Values <-> typed JSON records (design.md section 4), exact in both directions.

A side file is ``{"format": 1, "case", "side", "env", "values"}``. Layout, chosen for small
git diffs: the header keys in that fixed order, one ``env`` entry per line (keys sorted), one
value per line in the order given. A tensor record ``{"dtype", "shape", "data"}`` with at most
``ELEMENTS_PER_LINE`` elements is one line; a longer one wraps its data at a fixed count per
line (the last dimension when that is at most ``ELEMENTS_PER_LINE``), so changing one element
is a one-line diff. ``data`` is flat, in C order; floats are the exact doubles of their values
(``float(np.float32(x))``) in shortest round-trip form, ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` are strings and ``-0.0`` is kept. Output is ASCII (``\\u`` escapes), valid
RFC 8259, and byte-identical for equal input with or without orjson.

Decisions (docs/internals.md, record section): lists and tuples stay plain JSON lists,
compared exactly; a non-finite Python float becomes a 0-d float64 array (JSON has no literal
for it); float16 is kept, and torch bfloat16 becomes ``ml_dtypes.bfloat16`` bit for bit
(``harness.float_dtypes``).
Loose files (no ``"format"`` key): numbers become 0-d arrays of ``default_dtype``, numeric nested
lists arrays of it, ``null`` in a numeric list is NaN with a warning (serde_json writes NaN and
infinities as null), NaN / Infinity literals are accepted; in format-1 files all are errors.

The package: ``values`` (vocabulary, value types, ``normalize``), ``write`` (canonical text,
atomic side files), ``read`` (strict format 1), ``loose`` (JSON from other programs) and
``source`` (a file's bytes, through the bounded reader of ``harness.bounded``). Import the
names from ``harness.record``; the modules are its layout, not its interface.
"""

from harness.escape import one_line
from harness.record.read import decode, read_side, side_env
from harness.record.source import json_bytes
from harness.record.values import (
    DTYPES,
    ELEMENTS_PER_LINE,
    FLOAT_DTYPES,
    FORMAT_VERSION,
    INT_DTYPES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    SIDECAR_THRESHOLD,
    SPECIALS,
    CapturedError,
    RecordError,
    SideRecord,
    SummaryOnly,
    normalize,
)
from harness.record.write import (
    atomic_write_text,
    dumps_side,
    encode,
    json_float,
    side_text,
    write_side,
)

__all__ = [
    "DTYPES",
    "ELEMENTS_PER_LINE",
    "FLOAT_DTYPES",
    "FORMAT_VERSION",
    "INT_DTYPES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "SIDECAR_THRESHOLD",
    "SPECIALS",
    "CapturedError",
    "RecordError",
    "SideRecord",
    "SummaryOnly",
    "atomic_write_text",
    "decode",
    "dumps_side",
    "encode",
    "json_bytes",
    "json_float",
    "normalize",
    "one_line",
    "read_side",
    "side_env",
    "side_text",
    "write_side",
]
