"""ULP distances between floats of one dtype, scalar and vectorised, and their log2 histogram.

The ULP distance of two finite floats is the difference of their ordered-integer images:
``-(bits & 0x7f..f)`` for a negative float, ``bits`` otherwise. The image is monotone in the
value and maps +0 and -0 both to 0, so they are 0 ULP apart. NaN and inf get no distance.

Vectorised distances stay in the float's own integer width where that is exact:

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

# dtype name -> (same-width signed int, magnitude mask, bits of +inf)
FLOAT_LAYOUT = {
    "float16": (np.int16, 0x7FFF, 0x7C00),
    "float32": (np.int32, 0x7FFF_FFFF, 0x7F80_0000),
    "float64": (np.int64, 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000),
}
_STRUCT_CODE = {"float16": "e", "float32": "f", "float64": "d"}

HIST_LEN = 66  # buckets 0..65 cover any float64 distance (< 2**65)
_FEW_BUCKETS = 4  # up to this many buckets above 0, one comparison pass per bucket is cheapest
_POW2_U64 = np.array([1 << k for k in range(64)], dtype=np.uint64)
# float32 / float64 exponent bias -> biased exponents of 2**0, 2**1, ...: the bucket edges
_EDGES = {bias: np.arange(bias, bias + 64, dtype=np.uint16) for bias in (127, 1023)}


def ordered_int(x: float, dtype: str = "float64") -> int:
    """The ordered-integer image of a float's bits: monotone in x, +0 and -0 both map to 0."""
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


def same_sign_distance(bits_a: np.ndarray, bits_b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``|bits_a - bits_b|`` into ``out``: the distance when no pair has opposite sign bits."""
    np.subtract(bits_a, bits_b, out=out)
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


def _ordered64(bits: np.ndarray, mag_mask: int) -> np.ndarray:
    magnitude = (bits & mag_mask).astype(np.int64)
    return np.where(bits < 0, -magnitude, magnitude)


class Log2Histogram:
    """Counts of ULP distances in log2 buckets: 0, then ``[2**(k-1), 2**k)`` for k >= 1.

    ``add`` takes the distances of one chunk with their maximum and scratch buffers of at
    least the chunk's size (``mask`` bool, ``keys`` uint16, ``as_f32`` float32), so a chunk
    costs no allocation on the common paths. Counts are Python ints: a chunk adds a few.
    """

    def __init__(self) -> None:
        self.counts = [0] * HIST_LEN
        self.used = 0  # buckets 0..used-1 may be non-zero; bucket used-1 is

    def add(self, dist: np.ndarray, dist_max: int, mask, keys, as_f32) -> None:
        """Bucket ``dist`` (non-negative ints whose largest value is ``dist_max``)."""
        m = dist.size
        top = dist_max.bit_length()  # buckets 0..top are in use, top is not empty
        self.used = max(self.used, top + 1)
        if top == 0:
            self.counts[0] += m
        elif top <= _FEW_BUCKETS:
            self._by_thresholds(dist, top, mask[:m])
        elif dist_max < 2**24:  # exact in float32
            np.copyto(as_f32[:m], dist, casting="unsafe")
            self._by_sorted_exponents(as_f32[:m].view(np.int32), 23, 127, top, keys[:m])
        elif dist_max < 2**53:  # exact in float64
            as_f64 = dist.astype(np.float64)
            self._by_sorted_exponents(as_f64.view(np.int64), 52, 1023, top, keys[:m])
        else:
            buckets = np.searchsorted(_POW2_U64, dist.view(np.uint64), side="right")
            for k, count in enumerate(np.bincount(buckets, minlength=top + 1).tolist()):
                self.counts[k] += count

    def add_zeros(self, m: int) -> None:
        """Count ``m`` pairs that are 0 ULP apart."""
        self.counts[0] += m
        self.used = max(self.used, 1)

    def trimmed(self) -> tuple[int, ...]:
        """The counts, trailing empty buckets dropped."""
        return tuple(self.counts[: self.used])

    def _by_thresholds(self, dist: np.ndarray, top: int, mask: np.ndarray) -> None:
        below = dist.size  # elements with distance >= 2**(k-2), starting from all
        for k in range(1, top + 1):
            at_least = int(np.count_nonzero(np.greater_equal(dist, 1 << (k - 1), out=mask)))
            self.counts[k - 1] += below - at_least
            below = at_least
        self.counts[top] += below

    def _by_sorted_exponents(self, float_bits, mantissa: int, bias: int, top: int, keys) -> None:
        """Bucket by the biased exponents of exact floats of the distances (0 for 0).

        The exponents are sorted and each bucket edge is one bisection. np.bincount would be
        simpler but increments one counter per element, a serial chain when most elements
        share a few buckets: several times slower than sorting these few distinct keys.
        """
        np.right_shift(float_bits, mantissa, out=keys, casting="unsafe")
        keys.sort()
        below = np.searchsorted(keys, _EDGES[bias][:top]).tolist()  # how many d < 2**j
        previous = 0
        for k, count in enumerate([*below, keys.size]):
            self.counts[k] += count - previous
            previous = count
