"""Large tensors: sidecars in out/ and golden/, small readable golden JSON, and conformance
runs whose memory stays near the size of the two inputs (50 million elements within 4 GB)."""

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import record, sidecar
from harness.case import load_case
from harness.record import SIDECAR_THRESHOLD
from harness.runner import check_case

ROOT = Path(__file__).resolve().parents[1]
N = 100_000
assert N > SIDECAR_THRESHOLD
LOOSE = "Tolerance(1.0, reason='the golden, not the check, is under test')"

BIG_CASE = '''"""A 100k-element tensor on both sides (seeded by the harness), plus a small value."""
import numpy as np
from harness.case import agree
from harness.tolerances import Tolerance


def torch_side():
    return {{"w": np.random.rand({n}).astype(np.float32), "n": {n}}}


def engine_side():
    w = np.random.rand({n}).astype(np.float32)
    w[{index}] += np.float32({delta})
    return {{"w": w, "n": {n}}}


CHECKS = [agree("w", tol={tol}), agree("n")]
'''


def write_case(folder: Path, *, delta=0.0, index=7, tol="None"):
    """The case above; ``delta`` changes one engine element, ``tol`` loosens its check."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.py").write_text(BIG_CASE.format(n=N, index=index, delta=delta, tol=tol))
    return load_case(folder / "big.py")


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def sidecar_names(path: Path) -> tuple[str, ...]:
    return record.read_side(path, verify_sidecars=False).sidecars


@pytest.fixture
def dirs(tmp_path):
    return {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}


def test_golden_json_stays_small_and_points_at_a_sidecar(tmp_path, dirs):
    case = write_case(tmp_path / "cases")
    first = check_case(case, **dirs)
    assert [first.goldens[s].status for s in ("torch", "engine")] == ["missing", "missing"]
    assert first.nondeterministic == ()  # in-memory sidecar refs match the written ones
    folder = dirs["golden_dir"] / "big"
    text = (folder / "engine.json").read_text()
    assert len(text) < 2000  # 100k floats would be ~2 MB inline
    assert text == (dirs["out_dir"] / "big" / "engine.json").read_text()
    (name,) = sidecar_names(folder / "engine.json")
    twin = name.replace("engine", "torch", 1)  # both sides draw the same seeded numbers
    assert listing(folder) == sorted(["engine.json", "torch.json", name, twin])
    ref = json.loads(text)["values"]["w"]
    assert ref["sha256"] == sidecar.sha256_of(np.load(folder / name))
    assert set(ref["summary"]) == {"min", "max", "mean", "l2", "nan", "inf"}

    second = check_case(case, **dirs)
    assert second.ok and second.goldens["engine"].status == "identical"


def test_mismatch_writes_obtained_with_its_own_sidecar_and_a_pass_removes_both(tmp_path, dirs):
    check_case(write_case(tmp_path / "cases"), **dirs)
    folder = dirs["golden_dir"] / "big"
    before = {name: (folder / name).read_bytes() for name in listing(folder)}

    changed = check_case(write_case(tmp_path / "cases", delta=0.5, tol=LOOSE), **dirs)
    result = changed.goldens["engine"]
    assert result.status == "mismatch" and not result.ok
    assert result.diff.rows[0].worst_index == (7,)
    obtained = folder / "engine.obtained.json"
    (name,) = sidecar_names(obtained)
    assert name.startswith("engine.obtained.w.") and (folder / name).is_file()
    fresh = record.read_side(dirs["out_dir"] / "big" / "engine.json").values["w"]
    np.testing.assert_array_equal(record.read_side(obtained).values["w"], fresh)
    assert {n: (folder / n).read_bytes() for n in before} == before  # golden untouched

    check_case(write_case(tmp_path / "cases"), **dirs)
    assert sorted(before) == listing(folder)  # .obtained.json and its sidecar are gone


def test_update_replaces_the_sidecar_and_removes_the_stale_one(tmp_path, dirs):
    check_case(write_case(tmp_path / "cases"), **dirs)
    folder = dirs["golden_dir"] / "big"
    (old,) = sidecar_names(folder / "engine.json")
    case = write_case(tmp_path / "cases", delta=0.25, tol=LOOSE)
    updated = check_case(case, update=True, **dirs)
    result = updated.goldens["engine"]
    assert result.status == "updated" and result.diff.rows[0].max_abs == pytest.approx(0.25)
    (new,) = sidecar_names(folder / "engine.json")
    assert new != old and not (folder / old).exists() and (folder / new).is_file()
    assert check_case(case, **dirs).goldens["engine"].status == "identical"


def test_a_damaged_golden_sidecar_is_not_trusted_because_the_text_matches(tmp_path, dirs):
    case = write_case(tmp_path / "cases")
    check_case(case, **dirs)
    folder = dirs["golden_dir"] / "big"
    (name,) = sidecar_names(folder / "engine.json")
    damaged = np.load(folder / name)
    damaged[3] = 0.0
    np.save(folder / name, damaged)
    result = check_case(case, **dirs).goldens["engine"]
    assert result.status == "unreadable" and not result.ok
    assert f"w: sidecar {name} sha256 mismatch" in result.message


# -- compare.py A B on sidecar files: memory follows the inputs, not a multiple of them ---------

PEAK_PROBE = """
import sys, compare
code = compare.main(sys.argv[1:])
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print("VMHWM_KB", int(peak.split()[1]), file=sys.stderr)
sys.exit(code)
"""


def pair_of_sidecar_files(folder: Path, n: int) -> tuple[Path, Path]:
    """Two side files of one ``n``-element float32 tensor differing at element n // 3."""
    a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    paths = folder / "a.json", folder / "b.json"
    record.write_side(paths[0], "big", "torch", {"w": a}, {}, sidecar_threshold=4)
    a[n // 3] += np.float32(0.5)
    record.write_side(paths[1], "big", "engine", {"w": a}, {}, sidecar_threshold=4)
    return paths


def compare_in_child(paths, limit_bytes=None) -> tuple[subprocess.CompletedProcess, int]:
    """compare.py A B in a child process, under an address-space limit; returns its VmHWM."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    proc = subprocess.run(
        [sys.executable, "-c", PEAK_PROBE, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        preexec_fn=limit if limit_bytes else None,
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("VMHWM_KB")]
    assert marker, proc.stderr
    return proc, int(marker[0].split()[1]) * 1024


def assert_found_the_change(proc, n):
    assert proc.returncode == 1, proc.stderr
    assert f"n={n}" in proc.stdout and f"FAIL at [{n // 3}]" in proc.stdout


def test_peak_memory_of_a_5e6_compare_is_about_the_inputs(tmp_path):
    n = 5_000_000
    (tmp_path / "tiny").mkdir()
    _, baseline = compare_in_child(pair_of_sidecar_files(tmp_path / "tiny", 8))
    proc, peak = compare_in_child(pair_of_sidecar_files(tmp_path, n))
    assert_found_the_change(proc, n)
    inputs = 2 * 4 * n  # memory-mapped, so their pages count in the peak
    # A full-size float64 temporary alone would add 1x the inputs.
    assert peak - baseline < 1.5 * inputs, (peak - baseline) / inputs


def test_two_50_million_element_tensors_compare_within_4_gb(tmp_path):
    n = 50_000_000
    proc, peak = compare_in_child(pair_of_sidecar_files(tmp_path, n), limit_bytes=4 << 30)
    assert_found_the_change(proc, n)
    assert peak < 1 << 30  # measured ~0.43 GB: the two 200 MB inputs and the interpreter
    print(f"\n50M-element compare: VmHWM {peak / 2**20:.0f} MiB")
