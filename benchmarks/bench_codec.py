"""The side-file codec against its references, interleaved in one process, same folder.

Run: ``make bench ARGS=benchmarks/bench_codec.py``.

- Exact JSON write + read of 1e6 float32 values (``record.write_side`` with no sidecar, then
  ``record.read_side``) against orjson's NumPy serialisation round trip.
- One 5e7-element float32 tensor as a ``.npy`` sidecar (``record.write_side`` +
  ``record.read_side``, which verifies the sha256 of every sidecar it reads) against
  ``np.save`` + fsync + ``np.load`` (the same durability: the codec fsyncs so that a golden
  survives a crash) and against plain ``np.save`` + ``np.load`` (the page cache absorbs it).

Every side must read back exactly the values it wrote.
"""

from __future__ import annotations

import os

import numpy as np
import orjson

from harness import record


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_json_1e6(interleaved, tmp_path):
    values = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    ours, reference = tmp_path / "a.json", tmp_path / "b.json"

    def codec():
        record.write_side(ours, "bench", "torch", {"x": values}, {}, sidecar_threshold=10**12)
        return record.read_side(ours).values["x"]

    def orjson_round_trip():
        reference.write_bytes(orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY))
        return np.array(orjson.loads(reference.read_bytes()), dtype=np.float32)

    timings = interleaved(
        "json 1e6 / orjson",
        {"record write+read": codec, "orjson round trip": orjson_round_trip},
        max_rounds=20,
    )
    assert all(same_bits(got, values) for got in timings.results.values())


def test_sidecar_5e7(interleaved, tmp_path):
    values = np.random.default_rng(1).standard_normal(50_000_000, dtype=np.float32)
    side, npy = tmp_path / "big.json", tmp_path / "ref.npy"

    def sidecar_round_trip():
        record.write_side(side, "bench", "torch", {"x": values}, {})
        return record.read_side(side).values["x"]

    def npy_fsync_round_trip():
        with open(npy, "wb") as f:
            np.save(f, values)
            f.flush()
            os.fsync(f.fileno())
        return np.load(npy)

    def npy_round_trip():
        np.save(npy, values)
        return np.load(npy)

    timings = interleaved(
        "sidecar 5e7 / durable npy",
        {
            "sidecar write+read": sidecar_round_trip,
            "np.save+fsync+np.load": npy_fsync_round_trip,
            "np.save+np.load": npy_round_trip,
        },
        also=["sidecar 5e7 / plain npy"],
        max_rounds=10,
        warmup_rounds=1,
    )
    assert all(same_bits(np.asarray(got), values) for got in timings.results.values())
