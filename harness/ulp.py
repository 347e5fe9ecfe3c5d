"""ULP distances between floats of one dtype, scalar and vectorised, and their log2 histogram.

The ULP distance of two finite floats is the difference of their ordered-integer images:
``-(bits & 0x7f..f)`` for a negative float, ``bits`` otherwise. The image is monotone in the
value and maps +0 and -0 both to 0, so they are 0 ULP apart. NaN and inf get no distance.

Vectorised distances stay in the float's own integer width where that is exact (int16 for
float16 and bfloat16 alike; their largest distances, ``2 * 0x7BFF`` and ``2 * 0x7F7F``, take
the uint64 path of the last case):

- two floats whose sign bits agree are ``|bits_a - bits_b|`` apart, which always fits the
  signed integer of the float's width (both bit patterns lie on the same side of zero);
- with opposite sign bits the distance is the sum of the magnitudes, which fits when every
  ``|a - b| < 2`` (both magnitudes are then below 2.0, whose bit pattern is 0x40..0);
- anything else is computed in uint64, exact up to the float64 extreme of almost 2**64.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from harness.float_dtypes import BFLOAT16

# dtype name -> (same-width signed int, magnitude mask, bits of +inf)
FLOAT_LAYOUT = {
    "float16": (np.int16, 0x7FFF, 0x7C00),
    "bfloat16": (np.int16, 0x7FFF, 0x7F80),  # the upper half of a float32
    "float32": (np.int32, 0x7FFF_FFFF, 0x7F80_0000),
    "float64": (np.int64, 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000),
}
_STRUCT_CODE = {"float16": "e", "float32": "f", "float64": "d"}

HIST_LEN = 66  # buckets 0..65 cover any float64 distance (< 2**65)
_PAIRS_FROM = 4096  # from this many distances on, count bucket keys two at a time
_POW2_U64 = np.array([1 << k for k in range(64)], dtype=np.uint64)
# float kind -> (float type, its signed bits, mantissa bits, exponent bias, log2 of the distance
# limit): every distance d below the limit has d + 0.5 exact, and its exponent is d's bucket
_EXACT_FLOAT = {
    "float32": (np.float32, np.int32, 23, 127, 23),
    "float64": (np.float64, np.int64, 52, 1023, 52),
}
_HALF = {np.float32: np.float32(0.5), np.float64: np.float64(0.5)}
_DIRECT_TOP = 12  # few_log2_counts: one bin per distance below 2**12 (a 32 KB bin array)
_EDGES = np.array([0] + [1 << k for k in range(_DIRECT_TOP)], np.intp)  # first of each bucket


def ordered_int(x: float, dtype: str = "float64") -> int:
    """The ordered-integer image of a float's bits: monotone in x, +0 and -0 both map to 0.

    ``x`` is rounded to ``dtype`` first (to nearest even), as ``struct`` packs it.
    """
    if dtype == "bfloat16":  # struct has no bfloat16
        bits, width = int(np.array(x, BFLOAT16).view(np.uint16)), 16
    else:
        code = _STRUCT_CODE[dtype]
        bits = int.from_bytes(struct.pack("<" + code, x), "little")
        width = 8 * struct.calcsize(code)
    magnitude = bits & ((1 << (width - 1)) - 1)
    return -magnitude if bits >> (width - 1) else magnitude


def ulp_distance(x: float, y: float, dtype: str = "float64") -> int | None:
    """ULP distance of two values of ``dtype``; None when either is NaN or infinite."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    return abs(ordered_int(x, dtype) - ordered_int(y, dtype))


def same_sign_distance(bits_a: np.ndarray, bits_b: np.ndarray, out=None) -> np.ndarray:
    """``|bits_a - bits_b|`` into ``out``: the distance when no pair has opposite sign bits."""
    out = np.subtract(bits_a, bits_b, out=out)
    return np.abs(out, out=out)


def narrow_distance(
    bits_a: np.ndarray, bits_b: np.ndarray, mag_mask: int, out: np.ndarray, scratch: np.ndarray
) -> np.ndarray:
    """Distances in the float's width into ``out``; exact when every ``|a - b| < 2``.

    ``|mag_a - (-mag_b)|`` where the sign bits differ, ``|mag_a - mag_b|`` where they agree.
    """
    shift = 8 * bits_a.dtype.itemsize - 1
    np.bitwise_xor(bits_a, bits_b, out=scratch)
    np.right_shift(scratch, shift, out=scratch)  # -1 where the signs differ, else 0
    np.bitwise_and(bits_b, mag_mask, out=out)
    np.bitwise_xor(out, scratch, out=out)
    np.subtract(out, scratch, out=out)  # (m ^ s) - s == -m when s == -1
    np.subtract(np.bitwise_and(bits_a, mag_mask, out=scratch), out, out=out)
    return np.abs(out, out=out)


def wide_distance(bits_a: np.ndarray, bits_b: np.ndarray, mag_mask: int) -> np.ndarray:
    """Distances that may not fit the float's width, as uint64 (exact, no saturation).

    float64 distances reach almost 2**64, beyond int64: the wrapped uint64 difference is
    exact once the smaller ordered value is subtracted from the larger.
    """
    ord_a, ord_b = _ordered64(bits_a, mag_mask), _ordered64(bits_b, mag_mask)
    up, down = ord_a.view(np.uint64), ord_b.view(np.uint64)
    return np.where(ord_a >= ord_b, up - down, down - up)


def finite_distances(
    bits_a, bits_b, opposite: bool, worst: float, mag_mask: int, out=None, scratch=None
):
    """The ULP distances of finite pairs from their bit patterns, in the cheapest exact width.

    In the float's own width, into ``out`` (``scratch`` for the intermediate; both like the
    bits, new arrays when None), when no pair has opposite sign bits or every ``|a - b|`` (at
    most ``worst``) is below 2; else new uint64 distances.
    """
    if not opposite:
        return same_sign_distance(bits_a, bits_b, out)
    if worst < 2.0:
        out = np.empty_like(bits_a) if out is None else out
        scratch = np.empty_like(bits_a) if scratch is None else scratch
        return narrow_distance(bits_a, bits_b, mag_mask, out, scratch)
    return wide_distance(bits_a, bits_b, mag_mask)


def _ordered64(bits: np.ndarray, mag_mask: int) -> np.ndarray:
    magnitude = (bits & mag_mask).astype(np.int64)
    return np.where(bits < 0, -magnitude, magnitude)


class Log2Histogram:
    """Counts of ULP distances in log2 buckets: 0, then ``[2**(k-1), 2**k)`` for k >= 1.

    ``add`` takes the distances of one chunk with their maximum and scratch buffers of at
    least the chunk's size (``mask`` bool, ``keys`` uint8 with one spare element, ``as_f32``
    float32, optionally ``as_f64`` float64), so a chunk costs no chunk-sized allocation on the
    common paths. No path sorts: sorting is fast only where NumPy has SIMD sorting for the key
    type (AVX-512 for 16-bit keys), so its cost would depend on the CPU. Each path is a fixed
    number of passes that every x86-64 level vectorises, and ``np.bincount``.
    """

    __slots__ = ("counts", "used")

    def __init__(self) -> None:
        self.counts = np.zeros(HIST_LEN, np.int64)
        self.used = 0  # buckets 0..used-1 may be non-zero; bucket used-1 is

    def add(self, dist: np.ndarray, dist_max: int, mask, keys, as_f32, as_f64=None) -> None:
        """Bucket ``dist`` (non-negative ints whose largest value is ``dist_max``)."""
        m = dist.size
        top = dist_max.bit_length()  # buckets 0..top are in use, top is not empty
        self.used = max(self.used, top + 1)
        if m < _PAIRS_FROM or top <= _few_buckets(m) or top > _EXACT_FLOAT["float64"][4]:
            self.counts[: top + 1] += log2_counts(dist, top, mask[:m])
        elif top <= _EXACT_FLOAT["float32"][4]:
            self._by_paired_exponents(dist, top, "float32", keys, as_f32[:m])
        else:
            floats = np.empty(m, np.float64) if as_f64 is None else as_f64[:m]
            self._by_paired_exponents(dist, top, "float64", keys, floats)

    def add_zeros(self, m: int) -> None:
        """Count ``m`` pairs that are 0 ULP apart."""
        self.counts[0] += m
        self.used = max(self.used, 1)

    def trimmed(self) -> tuple[int, ...]:
        """The counts, trailing empty buckets dropped."""
        return tuple(self.counts[: self.used].tolist())

    def _by_paired_exponents(self, dist: np.ndarray, top: int, kind: str, keys, floats) -> None:
        """Many distances: bucket by the exponent of ``d + 0.5``, exact in the float ``kind``.

        ``d + 0.5`` lies in ``[2**(k-1), 2**k)`` exactly when d is in bucket k (0.5 for d = 0,
        bucket 0), so its biased exponent is ``bias - 1 + k``: consecutive bucket numbers,
        narrowed to uint8 and counted two at a time (:func:`_count_pairs`). The narrowing
        keeps the exponent modulo 256 and the uint8 subtraction wraps the same way, so
        float64's exponents near 1023 come out right.
        """
        ftype, bits, mantissa, bias, _ = _EXACT_FLOAT[kind]
        m = dist.size
        np.copyto(floats, dist, casting="unsafe")  # exact: below the limit
        np.add(floats, _HALF[ftype], out=floats)
        # the shift writes its uint8 keys directly: no exponent array to narrow afterwards
        np.right_shift(floats.view(bits), mantissa, out=keys[:m], casting="unsafe")
        np.subtract(keys[:m], np.uint8((bias - 1) & 0xFF), out=keys[:m])
        self.counts[: top + 1] += _count_pairs(keys, m, top + 1)


def log2_counts(dist: np.ndarray, top: int, mask: np.ndarray | None = None) -> list[int]:
    """Counts of buckets 0..top of ``dist``, whose largest value is in bucket ``top``, in a
    few NumPy calls: for fewer than ``_PAIRS_FROM`` distances, few buckets, or distances
    beyond float64's exact integers (``Log2Histogram`` pairs the keys of the other chunks).

    - Up to ``_few_buckets`` buckets: one count per bucket edge, how many distances reach it
      (the first edge, 1, is ``count_nonzero``, no comparison; ``mask`` is scratch).
    - Distances below ``2**_DIRECT_TOP``: one bin each, summed per bucket (``reduceat`` at
      the bucket edges).
    - Below ``2**52``: a distance d >= 1 is exact in float64 with the biased exponent
      ``1023 + floor(log2 d)``, ``1022 + k`` for bucket k, and d = 0 has the exponent field 0;
      the exponents are int64 already, so ``np.bincount`` casts nothing.
    - Beyond: a bisection of the powers of two.
    """
    m = dist.size
    if top == 0:
        return [m]
    if top <= _few_buckets(m):
        reach = [m, int(np.count_nonzero(dist))]
        for k in range(2, top + 1):
            reach.append(int(np.count_nonzero(np.greater_equal(dist, 1 << (k - 1), out=mask))))
        reach.append(0)
        return [reach[k] - reach[k + 1] for k in range(top + 1)]
    if top > _EXACT_FLOAT["float64"][4]:
        buckets = np.searchsorted(_POW2_U64, dist.view(np.uint64), side="right")
        return np.bincount(buckets, minlength=top + 1).tolist()
    if dist.dtype.kind == "u":  # wide distances, below 2**52 here: bincount takes signed ints
        dist = dist.view(np.int64)
    if top <= _DIRECT_TOP:
        return np.add.reduceat(np.bincount(dist), _EDGES[: top + 1]).tolist()
    exponent = dist.astype(np.float64).view(np.int64)  # exact: below the limit
    np.right_shift(exponent, 52, out=exponent)
    per_exponent = np.bincount(exponent)
    return [int(per_exponent[0]), *per_exponent[1023 : 1023 + top].tolist()]


def _few_buckets(m: int) -> int:
    """Up to how many buckets above 0 one comparison pass per bucket edge is cheaper than
    counting, for m distances. Measured (AVX2, numpy 2.4): an edge costs about 1.5 us at 1e3
    distances and 10 us at 2**15; one bincount and reduceat about 4.5 us at 1e3, the paired
    exponents about 55 us at 2**15."""
    return 2 if m < _PAIRS_FROM else 5


def _count_pairs(keys: np.ndarray, m: int, slots: int) -> np.ndarray:
    """How often each value below ``slots`` (<= 256) occurs in ``keys[:m]``, two at a time.

    np.bincount is one scalar increment per element; here the increments are for the 16-bit
    values ``low + 256 * high`` of adjacent pairs (``keys[m]`` is the spare that pads an odd
    count), and the pair counts are summed back per key: half the increments for a small
    fold. Both orders of a pair's bytes fold the same way, so byte order does not matter.
    """
    padded = m + (m & 1)
    keys[m] = 0  # the pad, taken off again below
    pairs = np.bincount(keys[:padded].view(np.uint16), minlength=256 * slots)
    grid = pairs[: 256 * slots].reshape(slots, 256)[:, :slots]
    per_key = grid.sum(axis=0) + grid.sum(axis=1)
    per_key[0] -= padded - m
    return per_key
