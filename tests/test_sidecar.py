"""harness.sidecar: stale temporary files, summary checks, one hash and few fsyncs per write.

Temporary files of killed writers are produced by really killing a writer process with
SIGKILL (issue 11 item 8); expected summaries come from float64 NumPy computations, expected
file bytes from ``np.save``.
"""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import compare
from harness import record, sidecar
from harness.record import RecordError

ROOT = Path(__file__).resolve().parents[1]
BIG = 3000  # elements: above the threshold the tests pass to write_side


def temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if sidecar._TEMP.fullmatch(n))


def write_big(path: Path, x: np.ndarray) -> None:
    record.write_side(path, "c", "torch", {"w": x, "n": 1}, {}, sidecar_threshold=1000)


# -- temporary files of killed writers ---------------------------------------------------------

# The child writes part of its file, says so on stdout, then hangs until it is killed.
HALF_WRITE = """
import sys, time
from harness import sidecar

def half_then_hang(f):
    f.write(b"x" * 100_000)
    f.flush()
    print("writing", flush=True)
    time.sleep(600)

sidecar.atomic_write(sys.argv[1], half_then_hang)
"""

# The child writes a whole sidecar and hangs in its fsync, before the rename.
SIDECAR_WRITE = """
import os, sys, time
import numpy as np
from harness import record, sidecar

def hang(fd):
    print("syncing", flush=True)
    time.sleep(600)

os.fsync = hang
x = np.arange(3000, dtype=np.float32) + 1
record.write_side(sys.argv[1], "c", "torch", {"w": x, "n": 1}, {}, sidecar_threshold=1000)
"""


def start_writer(code: str, target: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.readline().strip() in ("writing", "syncing")
    return proc


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()


def test_a_sigkilled_text_write_leaves_a_temp_that_the_next_write_removes(tmp_path):
    path = tmp_path / "report.json"
    record.atomic_write_text(path, "old\n")
    kill(start_writer(HALF_WRITE, path))
    (stale,) = temps(tmp_path)
    assert stale.startswith(".report.json.") and path.read_text() == "old\n"
    record.atomic_write_text(tmp_path / "other.json", "{}\n")  # any write to the folder
    assert temps(tmp_path) == [] and path.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["other.json", "report.json"]


def test_a_sigkilled_sidecar_write_keeps_the_old_files_and_the_next_write_cleans_up(tmp_path):
    path = tmp_path / "torch.json"
    old = np.arange(BIG, dtype=np.float32)
    write_big(path, old)
    before = {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path)}
    kill(start_writer(SIDECAR_WRITE, path))
    (stale,) = temps(tmp_path)
    assert stale.startswith(".torch.")  # sidecar temp files are named after the JSON stem
    assert {n: (tmp_path / n).read_bytes() for n in os.listdir(tmp_path) if n != stale} == before
    np.testing.assert_array_equal(record.read_side(path).values["w"], old)
    write_big(path, old + 2)
    assert temps(tmp_path) == []
    np.testing.assert_array_equal(record.read_side(path).values["w"], old + 2)


def test_a_live_writers_temp_file_is_never_removed(tmp_path):
    proc = start_writer(HALF_WRITE, tmp_path / "slow.json")
    try:
        (live,) = temps(tmp_path)
        old = time.time() - 10 * sidecar.STALE_AFTER
        os.utime(tmp_path / live, (old, old))  # even an old-looking file of a live process
        record.atomic_write_text(tmp_path / "fast.json", "{}\n")
        assert temps(tmp_path) == [live]
    finally:
        kill(proc)
    record.atomic_write_text(tmp_path / "fast.json", "{}\n")
    assert temps(tmp_path) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_killed_but_unreaped_writer_counts_as_gone(tmp_path):
    proc = start_writer(HALF_WRITE, tmp_path / "zombie.json")
    os.kill(proc.pid, signal.SIGKILL)
    stat_file = Path(f"/proc/{proc.pid}/stat")
    deadline = time.monotonic() + 30
    while stat_file.read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert len(temps(tmp_path)) == 1
        record.atomic_write_text(tmp_path / "next.json", "{}\n")
        assert temps(tmp_path) == []
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()


def test_other_hosts_temps_are_removed_only_when_old(tmp_path):
    other = "0123abcd" if sidecar._HOST != "0123abcd" else "fedc4321"
    fresh, stale = f".a.json.{other}-1.abcdefgh.tmp", f".b.npy.{other}-2.k_9zzzzz.tmp"
    for name in (fresh, stale, ".c.json.tmp", ".d.json.abcdefgh.tmp", "e.npy"):
        (tmp_path / name).write_bytes(b"partial")
    old = time.time() - 2 * sidecar.STALE_AFTER
    os.utime(tmp_path / stale, (old, old))
    assert sidecar.remove_stale_temps(tmp_path) == [stale]
    # names that do not follow the pattern are never touched, however old
    for name in (".c.json.tmp", ".d.json.abcdefgh.tmp", "e.npy"):
        os.utime(tmp_path / name, (old, old))
    assert sidecar.remove_stale_temps(tmp_path) == []
    kept = [fresh, ".c.json.tmp", ".d.json.abcdefgh.tmp", "e.npy"]
    assert sorted(os.listdir(tmp_path)) == sorted(kept)


def test_temp_names_of_long_targets_stay_within_the_name_limit(tmp_path):
    path = tmp_path / ("x" * 250 + ".json")
    record.atomic_write_text(path, "{}\n")
    assert path.read_text() == "{}\n" and temps(tmp_path) == []


# -- names, special files, summaries on read --------------------------------------------------


def sidecar_json(tmp_path: Path, **changes) -> Path:
    """A format-1 side file with one sidecar reference, written by the codec then edited."""
    path = tmp_path / "torch.json"
    x = np.linspace(-2, 3, BIG, dtype=np.float32)
    write_big(path, x)
    doc = json.loads(path.read_text())
    doc["values"]["w"].update(changes)
    path.write_text(json.dumps(doc))
    return path


def compare_exit(capsys, path: Path) -> tuple[int, str]:
    code = compare.main([str(path), str(path)])
    return code, capsys.readouterr().err


def test_a_300_character_sidecar_name_is_an_error_naming_the_key(tmp_path, capsys):
    path = sidecar_json(tmp_path, sidecar="a" * 296 + ".npy")
    with pytest.raises(RecordError, match=r"torch\.json: w: sidecar a+\.\.\. cannot read \("):
        record.read_side(path)
    code, err = compare_exit(capsys, path)
    assert code == 2 and err.count("\n") == 1
    assert ": w: sidecar " in err and "File name too long" in err


@pytest.mark.parametrize(
    ("kind", "problem"),
    [("fifo", "is a FIFO (named pipe), not a regular file"),
     ("folder", "is a directory, expected a .npy sidecar"),
     ("zero", "is a character device, not a regular file")],
)  # fmt: skip
def test_a_special_file_under_a_sidecar_name_is_refused_without_blocking(tmp_path, kind, problem):
    path = sidecar_json(tmp_path, sidecar="special.npy")
    if kind == "fifo":
        os.mkfifo(tmp_path / "special.npy")
    elif kind == "folder":
        (tmp_path / "special.npy").mkdir()
    else:
        (tmp_path / "special.npy").symlink_to("/dev/zero")
    with pytest.raises(RecordError) as info:
        record.read_side(path)
    assert str(info.value) == f"{path}: w: sidecar special.npy {problem}"


def reference_summary(x: np.ndarray) -> dict:
    finite = x[np.isfinite(x)].astype(np.float64)
    return {
        "min": float(finite.min()),
        "max": float(finite.max()),
        "mean": float(finite.mean()),
        "l2": float(np.sqrt(np.sum(finite**2))),
        "nan": int(np.isnan(x).sum()),
        "inf": int(np.isinf(x).sum()),
    }


def test_verify_summary_accepts_the_true_statistics_and_names_a_wrong_key():
    x = np.random.default_rng(1).standard_normal(200_000).astype(np.float32)
    x[[5, 70_000]] = [np.nan, -np.inf]
    true = reference_summary(x)
    written = sidecar.summarize(x)
    assert written["nan"] == 1 and written["inf"] == 1
    assert written["min"] == true["min"] and written["max"] == true["max"]
    assert sidecar.verify_summary(x, written) is None
    wrong = [("mean", true["mean"] + 1e-3), ("l2", true["l2"] * 1.01), ("nan", 0), ("inf", 2),
             ("min", true["min"] + 1e-6), ("max", None), ("nan", 1.0)]  # fmt: skip
    for key, value in wrong:
        problem = sidecar.verify_summary(x, {**written, key: value})
        assert problem is not None and problem.startswith(f"summary {key} is {value!r}"), problem
    without_l2 = {k: v for k, v in written.items() if k != "l2"}
    assert "missing l2" in sidecar.verify_summary(x, without_l2)
    assert "unknown extra" in sidecar.verify_summary(x, {**written, "extra": 0})
    # the 10-digit rounding of mean and l2 is not a contradiction
    assert sidecar.verify_summary(x, {**written, "mean": true["mean"], "l2": true["l2"]}) is None


def test_read_sidecar_checks_a_given_summary(tmp_path):
    path = tmp_path / "torch.json"
    x = np.linspace(-2, 3, BIG, dtype=np.float32)
    write_big(path, x)
    ref = json.loads(path.read_text())["values"]["w"]
    args = (tmp_path, ref["sidecar"], "float32", [BIG], ref["sha256"])
    np.testing.assert_array_equal(sidecar.read_sidecar(*args, summary=ref["summary"]), x)
    with pytest.raises(sidecar.SidecarError, match=r"sidecar torch\.w\.\w+\.npy: summary max is 4"):
        sidecar.read_sidecar(*args, summary={**ref["summary"], "max": 4.0})
    sidecar._OWN_FILES.clear()  # a file written by another process: hashed and summarized
    with pytest.raises(sidecar.SidecarError, match="summary mean is 7"):
        sidecar.read_sidecar(*args, summary={**ref["summary"], "mean": 7.0})


def test_a_contradicting_summary_exits_2_naming_file_and_key(tmp_path, capsys):
    path = sidecar_json(tmp_path)
    doc = json.loads(path.read_text())
    doc["values"]["w"]["summary"]["mean"] = 100.0
    path.write_text(json.dumps(doc))
    code, err = compare_exit(capsys, path)
    assert code == 2 and err.count("\n") == 1
    assert f"{path}: w: sidecar " in err and "summary mean is 100.0" in err


# -- one hash, few fsyncs, np.save's bytes ----------------------------------------------------


def test_sidecar_files_hold_exactly_what_np_save_writes(tmp_path):
    arrays = [np.arange(70_000, dtype=np.float32).reshape(7, 10_000), np.ones(70_000, bool),
              np.arange(70_000, dtype=np.int64)[::-1], np.zeros((3, 0, 2), np.float16)]  # fmt: skip
    for x in arrays:
        ref = sidecar.write_sidecar(tmp_path, "s", "k", x)
        expected = io.BytesIO()
        np.save(expected, x, allow_pickle=False)
        assert (tmp_path / ref["sidecar"]).read_bytes() == expected.getvalue()
        assert ref["sha256"] == sidecar.sha256_of(x)
        assert ref == sidecar.sidecar_reference("s", "k", x)


def test_a_write_and_its_read_back_hash_the_data_once(tmp_path, monkeypatch):
    hashed = []
    real = sidecar.hashlib.sha256

    def counting(*args):
        hashed.append(args)
        return real(*args)

    monkeypatch.setattr(sidecar.hashlib, "sha256", counting)
    x = np.arange(BIG, dtype=np.float32)
    write_big(tmp_path / "torch.json", x)
    np.testing.assert_array_equal(record.read_side(tmp_path / "torch.json").values["w"], x)
    assert len(hashed) == 1


def test_one_fsync_per_file_and_one_for_the_folder(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def counting(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if Path("/proc/self").exists() else fd)
        real(fd)

    monkeypatch.setattr(sidecar.os, "fsync", counting)
    write_big(tmp_path / "torch.json", np.arange(BIG, dtype=np.float32))
    assert len(synced) == 3, synced  # the sidecar, the JSON, the folder


def test_a_sidecar_changed_right_after_its_write_is_not_trusted(tmp_path):
    """Same size, same inode, within the same clock tick: the stamped mtime still moves."""
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(BIG, np.float32))
    (name,) = record.read_side(path).sidecars
    with open(tmp_path / name, "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(np.float32(1).tobytes())
    with pytest.raises(RecordError, match=f"w: sidecar {name} sha256 mismatch"):
        record.read_side(path)


def test_rereading_a_sidecar_is_cheap_but_follows_replacements(tmp_path):
    path = tmp_path / "torch.json"
    write_big(path, np.zeros(BIG, np.float32))
    (name,) = record.read_side(path).sidecars
    replacement = np.zeros(BIG, np.float32)
    replacement[0] = 1
    np.save(tmp_path / "other.npy", replacement)
    os.replace(tmp_path / "other.npy", tmp_path / name)  # a new inode under the old name
    with pytest.raises(RecordError, match="sha256 mismatch"):
        record.read_side(path)


def test_summary_module_matches_a_float64_computation():
    x = np.random.default_rng(2).standard_normal(300_001).astype(np.float32) * 10
    got, true = sidecar.summarize(x), reference_summary(x)
    assert (got["min"], got["max"], got["nan"], got["inf"]) == (
        true["min"], true["max"], 0, 0,
    )  # fmt: skip
    assert got["mean"] == pytest.approx(true["mean"], rel=1e-9, abs=1e-12)
    assert got["l2"] == pytest.approx(true["l2"], rel=1e-9)
    assert sidecar.summarize(np.array([np.nan, np.inf], np.float32)) == {
        "min": None, "max": None, "mean": None, "l2": None, "nan": 1, "inf": 1,
    }  # fmt: skip
