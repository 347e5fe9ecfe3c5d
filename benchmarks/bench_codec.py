"""Codec speed against its references, measured in the same run (issues 3 and 7).

    .venv/bin/python -m pytest benchmarks/bench_codec.py --benchmark-enable -q -p no:cacheprovider

- exact JSON write + read of 1e6 float32 values vs orjson's numpy serialisation round trip
  (target: within 3x);
- sidecar write + read of 5e7 float32 values vs np.save + np.load (target: within 2x).

Both sides write to and read from files in the same folder. Threads are pinned to one so the
numbers do not depend on the machine's load; each reference test prints its group's ratio.
"""

import numpy as np
import orjson
import pytest

from harness import record

RATIOS: dict[str, dict[str, float]] = {}


@pytest.fixture(scope="module")
def million():
    return np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)


@pytest.fixture(scope="module")
def fifty_million():
    return np.random.default_rng(1).standard_normal(50_000_000).astype(np.float32)


def measure(benchmark, group, name, fn):
    result = benchmark.pedantic(fn, rounds=5, iterations=1, warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable
        RATIOS.setdefault(group, {})[name] = benchmark.stats.stats.median
    return result


def report_ratio(capsys, group):
    """Print record / reference for a group once both have run (medians, same session)."""
    times = RATIOS.get(group, {})
    if len(times) == 2:
        ours, reference = times.values()
        with capsys.disabled():
            print(f"\n{group}: record {ours * 1e3:.1f} ms / reference {reference * 1e3:.1f} ms"
                  f" = {ours / reference:.2f}x")  # fmt: skip


def json_round_trip(path, array):
    def run():
        record.write_side(path, "bench", "torch", {"x": array}, {}, sidecar_threshold=10**12)
        return record.read_side(path).values["x"]

    return run


def orjson_round_trip(path, array):
    def run():
        path.write_bytes(orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY))
        return np.array(orjson.loads(path.read_bytes()), dtype=np.float32)

    return run


def test_json_1e6_float32_exact(benchmark, tmp_path, million):
    got = measure(benchmark, "json 1e6", "record", json_round_trip(tmp_path / "a.json", million))
    assert np.array_equal(got.view(np.uint32), million.view(np.uint32))


def test_json_1e6_float32_orjson_reference(benchmark, tmp_path, million, capsys):
    got = measure(benchmark, "json 1e6", "orjson", orjson_round_trip(tmp_path / "b.json", million))
    assert np.array_equal(got, million)
    report_ratio(capsys, "json 1e6")


def sidecar_round_trip(folder, array):
    def run():
        path = folder / "big.json"
        record.write_side(path, "bench", "torch", {"x": array}, {})
        got = record.read_side(path).values["x"]
        return float(got[-1])  # the read verified the sha256 over every byte

    return run


def npy_round_trip(folder, array):
    def run():
        np.save(folder / "ref.npy", array)
        return float(np.load(folder / "ref.npy")[-1])

    return run


def test_sidecar_5e7_float32(benchmark, tmp_path, fifty_million):
    last = measure(benchmark, "sidecar 5e7", "record", sidecar_round_trip(tmp_path, fifty_million))
    assert last == float(fifty_million[-1])


def test_sidecar_5e7_np_save_reference(benchmark, tmp_path, fifty_million, capsys):
    last = measure(benchmark, "sidecar 5e7", "np.save", npy_round_trip(tmp_path, fifty_million))
    assert last == float(fifty_million[-1])
    report_ratio(capsys, "sidecar 5e7")
