"""A golden is never lost: a write killed midway leaves the old golden (and its sidecars)
whole and no temporary file behind; ``--update-golden`` refuses to bless failing cases."""

import io
import os
from pathlib import Path

import numpy as np
import pytest

import compare
from harness import golden, record, sidecar
from harness.case import SIDES, Case, load_case

BIG = 70_000  # above record.SIDECAR_THRESHOLD: stored as a .npy sidecar


# A case with no checks and no tolerance overrides: goldens are judged by the default table.
DEMO = Case("demo", "", Path("demo.py"), dict, dict, (), {})


def fresh(folder: Path, values: dict) -> tuple[str, dict]:
    """A side written the way run_case writes out/: its JSON text and decoded values."""
    path = folder / "engine.json"
    record.write_side(path, "demo", "engine", values, {"numpy": "2.4.6"})
    return path.read_text(), record.read_side(path).values


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def dying_writer(monkeypatch):
    """Make atomic writes of files whose name ends with ``suffix`` die after half the bytes.

    The real ``sidecar._write_temp`` runs (so its cleanup is what is tested); only the
    ``write`` callback is replaced by one that writes half and raises KeyboardInterrupt,
    a BaseException like the SIGINT of a killed run.
    """
    real = sidecar._write_temp

    def arm(suffix: str):
        def maybe_dying(folder, name, write):
            if not name.endswith(suffix):
                return real(folder, name, write)

            def half_then_die(f):
                buffer = io.BytesIO()
                write(buffer)
                data = buffer.getvalue()
                f.write(data[: len(data) // 2])
                f.flush()
                raise KeyboardInterrupt

            return real(folder, name, half_then_die)

        monkeypatch.setattr(sidecar, "_write_temp", maybe_dying)

    return arm


def golden_with(tmp_path: Path, values: dict) -> Path:
    text, decoded = fresh(tmp_path / "out1", values)
    result = golden.update_golden(DEMO, "engine", text, decoded, tmp_path / "golden")
    assert result.status == "created"
    return tmp_path / "golden" / "demo"


def test_killed_json_write_keeps_the_old_golden(tmp_path, dying_writer):
    folder = golden_with(tmp_path, {"y": np.arange(4, dtype=np.float32)})
    before = snapshot(folder)
    text, decoded = fresh(tmp_path / "out2", {"y": np.arange(4, dtype=np.float32) + 1})
    dying_writer(".json")
    with pytest.raises(KeyboardInterrupt):
        golden.update_golden(DEMO, "engine", text, decoded, tmp_path / "golden")
    assert snapshot(folder) == before  # same files, same bytes: no temp file, no torn golden


def big(offset: float) -> np.ndarray:
    return np.linspace(0, 1, BIG, dtype=np.float32) + np.float32(offset)


@pytest.mark.parametrize("dies", [".json", "engine"], ids=["json-after-sidecar", "sidecar"])
def test_killed_write_keeps_old_golden_and_its_sidecar(tmp_path, dying_writer, dies):
    """Killed while writing the JSON (new sidecar already in place) or the sidecar itself."""
    folder = golden_with(tmp_path, {"w": big(0), "n": 3})
    before = snapshot(folder)
    assert len(before) == 2  # engine.json and its sidecar
    text, decoded = fresh(tmp_path / "out2", {"w": big(1), "n": 3})
    dying_writer(dies)  # sidecar temp files are named after the JSON stem, "engine"
    with pytest.raises(KeyboardInterrupt):
        golden.update_golden(DEMO, "engine", text, decoded, tmp_path / "golden")
    assert snapshot(folder) == before
    np.testing.assert_array_equal(record.read_side(folder / "engine.json").values["w"], big(0))


def test_killed_obtained_write_leaves_the_golden_alone(tmp_path, dying_writer):
    folder = golden_with(tmp_path, {"w": big(0)})
    before = snapshot(folder)
    text, decoded = fresh(tmp_path / "out2", {"w": big(0.5)})
    dying_writer(".obtained.json")
    with pytest.raises(KeyboardInterrupt):
        golden.check_golden(DEMO, "engine", text, decoded, tmp_path / "golden")
    assert snapshot(folder) == before  # no half .obtained.json, no orphaned sidecar


def test_without_the_fault_the_same_update_goes_through(tmp_path):
    """The control for the tests above: the update they interrupt does change the golden."""
    folder = golden_with(tmp_path, {"w": big(0), "n": 3})
    before = snapshot(folder)
    text, decoded = fresh(tmp_path / "out2", {"w": big(1), "n": 3})
    result = golden.update_golden(DEMO, "engine", text, decoded, tmp_path / "golden")
    assert result.status == "updated" and result.diff.rows[0].max_abs == pytest.approx(1.0)
    after = snapshot(folder)
    assert after != before and len(after) == 2  # the old sidecar was removed as stale
    assert (folder / "engine.json").read_text() == text


# -- --update-golden at the command line -------------------------------------------------------

FAILING_CASE = '''"""Sides that disagree, so that blessing them must be refused."""
import numpy as np
from harness.case import agree


def torch_side():
    return {"y": np.array([1.0, 2.0], np.float32)}


def engine_side():
    return {"y": np.array([1.0, 3.0], np.float32)}


CHECKS = [agree("y")]
'''


@pytest.fixture
def failing_case_dirs(tmp_path):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "tiny.py").write_text(FAILING_CASE)
    return [f"--{name}={tmp_path / folder}" for name, folder in
            [("cases-dir", "cases"), ("golden-dir", "golden"), ("out", "out")]]  # fmt: skip


REFUSAL = "refusing to bless tiny: its agree checks fail (fix them, or pass --force)"


def test_update_golden_refuses_a_failing_case_at_the_cli(tmp_path, capsys, failing_case_dirs):
    code = compare.main(["--update-golden", *failing_case_dirs])
    out = capsys.readouterr().out
    assert code == 1
    for side in SIDES:
        assert f"[FAIL] golden:{side}: refused: {REFUSAL}\n" in out
    assert not (tmp_path / "golden" / "tiny").exists()


def test_force_blesses_the_failing_case(tmp_path, capsys, failing_case_dirs):
    code = compare.main(["--update-golden", "--force", *failing_case_dirs])
    out = capsys.readouterr().out
    assert code == 1  # the agree check still fails; the goldens are written regardless
    assert f"[ok  ] golden:torch: created: created {tmp_path / 'golden'}" in out
    assert sorted(os.listdir(tmp_path / "golden" / "tiny")) == ["engine.json", "torch.json"]
    case = load_case(tmp_path / "cases" / "tiny.py")
    assert record.read_side(tmp_path / "golden" / "tiny" / "engine.json").case == case.name
