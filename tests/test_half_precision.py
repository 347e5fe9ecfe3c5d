"""float16 and bfloat16 in side files, sidecars, diffs, ULPs and tolerances (issue 25).

Every one of the 65,536 bit patterns of each format goes through the codec; the reference
values are computed from the bits without the code under test (a bfloat16 is the float32
whose upper half it is; a float16 widens exactly through NumPy's own float16).
"""

import json

import numpy as np
import pytest

from harness import record
from harness.float_dtypes import BFLOAT16, numpy_dtype
from harness.record import RecordError

torch = pytest.importorskip("torch")

HALF = {"float16": np.dtype(np.float16), "bfloat16": BFLOAT16}
ALL_BITS = np.arange(1 << 16, dtype=np.uint16)


def exact_values(name: str) -> np.ndarray:
    """The float64 value of every bit pattern, computed without ml_dtypes or the codec."""
    with np.errstate(invalid="ignore"):  # signalling NaNs widen to quiet ones
        if name == "bfloat16":
            return (ALL_BITS.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return ALL_BITS.view(np.float16).astype(np.float64)


def round_trip(tmp_path, values, **kwargs):
    path = tmp_path / "side.json"
    text = record.write_side(path, "case", "torch", values, {}, **kwargs)
    return text, record.read_side(path).values


@pytest.mark.parametrize("name", sorted(HALF))
def test_every_bit_pattern_round_trips_inline(tmp_path, name):
    """Inline JSON keeps every non-NaN pattern bit for bit (-0.0, subnormals, infinities) and
    writes each value as its exact double; NaN patterns come back NaN (JSON's "NaN" has no
    payload)."""
    array = ALL_BITS.view(HALF[name])
    want = exact_values(name)
    nan = np.isnan(want)
    text, got = round_trip(tmp_path, {"w": array}, sidecar_threshold=1 << 20)
    data = json.loads(text)["values"]["w"]
    assert data["dtype"] == name and data["shape"] == [1 << 16]
    assert all(x == "NaN" for x in np.array(data["data"], dtype=object)[nan])
    kept = [x for x, bad in zip(data["data"], nan, strict=True) if not bad]
    written = np.array([record.SPECIALS.get(x, x) if isinstance(x, str) else x for x in kept])
    assert written.dtype == np.float64 and sum(isinstance(x, str) for x in kept) == 2
    np.testing.assert_array_equal(written.view(np.uint64), want[~nan].view(np.uint64))
    w = got["w"]
    assert w.dtype == HALF[name]
    np.testing.assert_array_equal(w.view(np.uint16)[~nan], ALL_BITS[~nan])
    with np.errstate(invalid="ignore"):
        assert np.isnan(w[nan].astype(np.float64)).all()


@pytest.mark.parametrize("name", sorted(HALF))
def test_every_bit_pattern_round_trips_through_a_sidecar(tmp_path, name):
    """A sidecar stores the bits: every pattern comes back, NaN payloads included, and the
    reference names the half dtype."""
    array = ALL_BITS.view(HALF[name])
    text, got = round_trip(tmp_path, {"w": array}, sidecar_threshold=100)
    ref = json.loads(text)["values"]["w"]
    assert ref["dtype"] == name and "sidecar" in ref
    np.testing.assert_array_equal(got["w"].view(np.uint16), ALL_BITS)
    assert got["w"].dtype == HALF[name]
    finite = exact_values(name)[np.isfinite(exact_values(name))]
    assert ref["summary"]["min"] == finite.min() and ref["summary"]["max"] == finite.max()
    assert ref["summary"]["nan"] == int(np.isnan(exact_values(name)).sum())


def test_a_tampered_bfloat16_sidecar_is_refused(tmp_path):
    array = ALL_BITS.view(BFLOAT16)
    path = tmp_path / "side.json"
    text = record.write_side(path, "case", "torch", {"w": array}, {}, sidecar_threshold=100)
    name = json.loads(text)["values"]["w"]["sidecar"]
    np.save(tmp_path / name, ALL_BITS[::-1].copy())
    with pytest.raises(RecordError, match=r"w: sidecar .* sha256 mismatch"):
        record.read_side(path)
    np.save(tmp_path / name, ALL_BITS.view(np.float16))  # same bytes, another dtype
    with pytest.raises(RecordError, match=r"holds dtype float16, the record says bfloat16"):
        record.read_side(path)


def test_torch_bfloat16_is_recorded_bit_for_bit(tmp_path):
    bits = torch.from_numpy(ALL_BITS.view(np.int16).copy()).view(torch.bfloat16)
    values = {"w": bits, "strided": bits.reshape(256, 256).t(), "neg": -bits[:4]}
    _, got = round_trip(tmp_path, values, sidecar_threshold=100)
    assert got["w"].dtype == BFLOAT16
    np.testing.assert_array_equal(got["w"].view(np.uint16), ALL_BITS)
    want_t = ALL_BITS.reshape(256, 256).T
    np.testing.assert_array_equal(got["strided"].view(np.uint16), want_t)
    np.testing.assert_array_equal(got["neg"].astype(np.float64), -exact_values("bfloat16")[:4])


def test_a_value_that_is_no_bfloat16_is_refused(tmp_path):
    """1 + 2**-9 lies between two bfloat16 values: a format-1 file may not round it."""
    path = tmp_path / "side.json"
    values = '{"w": {"dtype": "bfloat16", "shape": [2], "data": [1.0, 1.001953125]}}'
    path.write_text(f'{{"format": 1, "case": "c", "side": "s", "env": {{}}, "values": {values}}}')
    with pytest.raises(RecordError, match=r"w: data\[1\] = 1.001953125 is not exactly a bfloat16"):
        record.read_side(path)


def test_numpy_dtype_names_bfloat16():
    assert numpy_dtype("bfloat16") == BFLOAT16 and numpy_dtype("float16") == np.float16
