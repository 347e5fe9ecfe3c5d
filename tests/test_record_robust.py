"""Hostile input (Hypothesis), atomic writes and large-tensor sidecars."""

import json
import math
import os
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import record, sidecar
from harness.record import RecordError

HOSTILE = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
KEYS = st.sampled_from(["x", "a", "format", "dtype", "shape", "data", "error", "message",
                        "sidecar", "a.b", "", "k:v"]) | st.text(max_size=4)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "float32", "int64", "bool", "1e400"])
    | st.text(max_size=5)
)


class Obj(list):
    """A JSON object as a list of pairs, so that duplicate keys can be written."""

    def __init__(self, pairs=()):
        super().__init__(pairs.items() if isinstance(pairs, dict) else pairs)


def objects(values, *, min_size=0, duplicate=False):
    if duplicate:  # the first key again, with another value
        pairs = st.lists(st.tuples(KEYS, values), min_size=max(min_size, 1), max_size=4)
        return pairs.map(lambda pairs: Obj([*pairs, (pairs[0][0], None)]))
    return st.dictionaries(KEYS, values, min_size=min_size, max_size=5).map(Obj)


JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | objects(inner), max_leaves=25
)
NUMBERS = st.floats(width=32) | st.sampled_from(["NaN", "Infinity", "-Infinity"]) | SCALARS


@st.composite
def tensor_records(draw):
    """Mostly plausible tensor / sidecar / error records, each field sometimes wrong."""
    kind = draw(st.sampled_from(["tensor", "tensor", "sidecar", "error"]))
    if kind == "error":
        return Obj([("error", draw(st.text(max_size=3) | JSON)), ("message", draw(JSON))])
    data = draw(st.lists(NUMBERS, max_size=12))
    shape = draw(st.sampled_from([[len(data)], [1, len(data)], [len(data), 1], [2, 3], []]))
    dtype = draw(st.sampled_from(["float32", "float64", "int8", "uint8", "bool", "half"]))
    pairs = [("dtype", dtype), ("shape", draw(st.just(shape) | SCALARS | JSON))]
    if kind == "tensor":
        return Obj([*pairs, ("data", draw(st.just(data) | JSON))])
    digest = draw(st.sampled_from(["0" * 64, "xyz"]))
    name = draw(st.sampled_from(["s.npy", "../s.npy", "s.txt", 3]))
    return Obj([*pairs, ("sidecar", name), ("sha256", digest), ("summary", Obj())])


RECORDS = tensor_records() | JSON
VALUES = objects(RECORDS) | objects(RECORDS, duplicate=True)
STRICT = st.tuples(
    st.sampled_from([1] * 6 + [2, "1", True, None]), JSON | st.builds(Obj), VALUES
).map(
    lambda t: Obj([("format", t[0]), ("case", "c"), ("side", "s"), ("env", t[1]), ("values", t[2])])
)
LOOSE = objects(RECORDS, min_size=1) | objects(RECORDS, duplicate=True)


def to_text(obj) -> str:
    """JSON text; floats may become NaN / Infinity literals on purpose."""
    if isinstance(obj, Obj):
        return "{" + ", ".join(f"{json.dumps(k)}: {to_text(v)}" for k, v in obj) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join(to_text(v) for v in obj) + "]"
    return json.dumps(obj)


def assert_record_or_record_error(path):
    """The contract: a SideRecord or a one-line RecordError naming the file, nothing else."""
    try:
        result = record.read_side(path)
    except RecordError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: ") and "\n" not in message
    else:
        assert isinstance(result, record.SideRecord)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile") / "doc.json"


@HOSTILE
@given(doc=st.one_of(STRICT, STRICT, LOOSE, JSON))
def test_hostile_json_documents(scratch, doc):
    scratch.write_text(to_text(doc))
    assert_record_or_record_error(scratch)


def from_bits(bits, dtype):
    with np.errstate(all="ignore"):
        return np.array(bits, dtype=np.uint64).view(np.float64).astype(dtype)


ARRAYS = st.sampled_from(["float32", "float64", "int64", "bool"]).flatmap(
    lambda dtype: st.lists(st.integers(0, 2**64 - 1), max_size=20).map(
        lambda bits: from_bits(bits, dtype)
    )
)
JUNK = st.sampled_from([b",", b"]", b"}", b'"', b"1", b"-", b"e", b"\xff", b"[", b"{", b"null",
                        b"NaN", b" ", b":", b"\\", b"1e999"])  # fmt: skip


@HOSTILE
@given(arrays=st.lists(ARRAYS, min_size=1, max_size=3), data=st.data())
def test_damaged_documents(scratch, arrays, data):
    """Truncate, splice into or cut out of a valid format-1 file."""
    values = {f"k{i}": a for i, a in enumerate(arrays)}
    raw = record.dumps_side("c", "s", values, {"v": 1}).encode()
    i = data.draw(st.integers(0, len(raw)))
    how = data.draw(st.sampled_from(["truncate", "insert", "delete", "replace"]))
    junk = data.draw(JUNK)
    damaged = {
        "truncate": raw[:i],
        "insert": raw[:i] + junk + raw[i:],
        "delete": raw[:i] + raw[i + 2 :],
        "replace": raw[:i] + junk + raw[i + 1 :],
    }
    scratch.write_bytes(damaged[how])
    assert_record_or_record_error(scratch)


@HOSTILE
@given(raw=st.binary(max_size=64) | st.just(b"[" * 5000) | st.just(b'{"a":' * 3000))
def test_random_bytes(scratch, raw):
    scratch.write_bytes(raw)
    assert_record_or_record_error(scratch)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(values=st.dictionaries(st.text(min_size=1, max_size=4).filter(lambda k: "." not in k),
                              st.floats(allow_nan=True) | st.integers(-(2**63), 2**63 - 1)
                              | st.booleans() | st.none() | st.text(max_size=5),
                              max_size=5))  # fmt: skip
def test_written_plain_values_read_back_equal(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("plain") / "side.json"
    record.write_side(path, "c", "s", values, {})
    got = record.read_side(path).values
    assert got.keys() == values.keys()
    for key, want in values.items():
        if isinstance(want, float) and not math.isfinite(want):
            assert got[key].dtype == np.float64 and np.array_equal(got[key], want, equal_nan=True)
        else:
            assert got[key] == want and type(got[key]) is type(want)


# ---------------------------------------------------------------- atomic writes


def test_failure_midway_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "golden" / "torch.json"
    record.write_side(path, "c", "torch", {"x": np.arange(100.0)}, {})
    before = path.read_bytes()

    def half_then_crash(f):
        f.write(before[: len(before) // 2])
        raise KeyboardInterrupt  # like a kill: BaseException, not Exception

    with pytest.raises(KeyboardInterrupt):
        sidecar.atomic_write(path, half_then_crash)
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == ["torch.json"]


def test_failure_in_fsync_during_write_side_keeps_the_old_golden(tmp_path, monkeypatch):
    path = tmp_path / "torch.json"
    record.write_side(path, "c", "torch", {"x": np.arange(100.0)}, {})
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(sidecar.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        record.write_side(path, "c", "torch", {"x": np.arange(100.0) + 1}, {})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["torch.json"]


def test_atomic_write_text_creates_folders_and_readable_files(tmp_path):
    path = tmp_path / "a" / "b" / "f.json"
    record.atomic_write_text(path, "{}\n")
    assert path.read_text() == "{}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# ---------------------------------------------------------------- sidecars


def write_big(path, x, **kwargs):
    record.write_side(path, "c", "torch", {"g": {"w": x}, "small": np.ones(3)}, {}, **kwargs)


def test_sidecar_round_trip_keeps_json_small(tmp_path):
    x = np.random.default_rng(0).standard_normal((300, 40)).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    path = tmp_path / "torch.json"
    write_big(path, x, sidecar_threshold=1000)
    rec = record.read_side(path)
    got = rec.values["g.w"]
    np.testing.assert_array_equal(got.view(np.uint32), x.view(np.uint32))
    assert not got.flags.writeable  # memory-mapped, not loaded
    digest = sidecar.sha256_of(x)
    name = f"torch.g.w.{digest[:12]}.npy"
    assert rec.sidecars == (name,) and (tmp_path / name).is_file()
    assert path.stat().st_size < 1000
    line = next(line for line in path.read_text().splitlines() if '"g.w"' in line)
    assert f'"sidecar": "{name}", "sha256": "{digest}"' in line
    finite = x[np.isfinite(x)].astype(np.float64)
    summary = json.loads(path.read_text())["values"]["g.w"]["summary"]
    assert summary["nan"] == 1 and summary["inf"] == 1
    assert summary["min"] == finite.min() and summary["max"] == finite.max()
    assert summary["mean"] == pytest.approx(finite.mean(), rel=1e-9)
    assert summary["l2"] == pytest.approx(np.linalg.norm(finite), rel=1e-9)


def test_sidecar_of_ints_and_awkward_key(tmp_path):
    path = tmp_path / "engine.json"
    x = np.arange(5000, dtype=np.int64)
    record.write_side(path, "c", "engine", {"grads/fc 1": x}, {}, sidecar_threshold=10)
    rec = record.read_side(path)
    (name,) = rec.sidecars
    assert name.startswith("engine.grads_fc_1.") and name.endswith(".npy")
    np.testing.assert_array_equal(rec.values["grads/fc 1"], x)


def test_sidecar_hash_mismatch(tmp_path):
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(2000, np.float32), sidecar_threshold=1000)
    (name,) = record.read_side(path).sidecars
    changed = np.zeros(2000, np.float32)
    changed[7] = 1.0
    np.save(tmp_path / name, changed)
    with pytest.raises(RecordError) as info:
        record.read_side(path)
    assert str(info.value).startswith(f"{path}: g.w: sidecar {name} sha256 mismatch: file has ")


def test_sidecar_missing_or_wrong_dtype_shape_or_not_npy(tmp_path):
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(2000, np.float32), sidecar_threshold=1000)
    (name,) = record.read_side(path).sidecars
    cases = [
        (
            np.zeros(2000, np.float64),
            f"sidecar {name} holds dtype float64, the record says float32",
        ),
        (np.zeros(2001, np.float32), f"sidecar {name} holds shape [2001], the record says [2000]"),
        (b"not numpy", f"sidecar {name} is not a valid .npy file"),
        (None, f"sidecar file {name} is missing"),
    ]
    for content, problem in cases:
        (tmp_path / name).unlink(missing_ok=True)
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        elif content is not None:
            np.save(tmp_path / name, content)
        with pytest.raises(RecordError) as info:
            record.read_side(path)
        assert str(info.value).startswith(f"{path}: g.w: {problem}")


def test_sidecar_name_cannot_leave_the_folder(tmp_path):
    ref = {"dtype": "float32", "shape": [1], "sidecar": "../evil.npy", "sha256": "0" * 64,
           "summary": {}}  # fmt: skip
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"x": ref}))
    with pytest.raises(RecordError, match=r"x: sidecar must name a .npy file beside the JSON"):
        record.read_side(path)


def test_rewrite_replaces_sidecars_and_removes_stale_ones(tmp_path):
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(2000, np.float32), sidecar_threshold=1000)
    (old,) = record.read_side(path).sidecars
    write_big(path, np.ones(2000, np.float32), sidecar_threshold=1000)
    (new,) = record.read_side(path).sidecars
    assert old != new and not (tmp_path / old).exists()
    write_big(path, np.ones(2), sidecar_threshold=1000)
    assert record.read_side(path).sidecars == () and sorted(os.listdir(tmp_path)) == ["torch.json"]


def test_failed_json_write_keeps_old_sidecar_and_drops_new_one(tmp_path, monkeypatch):
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(2000, np.float32), sidecar_threshold=1000)
    before = path.read_bytes()
    real_replace = os.replace

    def fail_for_json(src, dst):
        if str(dst).endswith(".json"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(sidecar.os, "replace", fail_for_json)
    with pytest.raises(OSError, match="No space left"):
        write_big(path, np.ones(2000, np.float32), sidecar_threshold=1000)
    monkeypatch.undo()
    assert path.read_bytes() == before
    rec = record.read_side(path)
    assert rec.values["g.w"].sum() == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["torch.json", *rec.sidecars])
