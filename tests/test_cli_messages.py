"""Case mode (issue 11 items 5 and 6): a failed write names the file being written (and the
key of a sidecar), and the ``--json`` report is byte-identical for the same results unless
``--timings`` asks for wall-clock times."""

import errno
import json
import os

import pytest

import compare
from harness import sidecar

CASE = '''"""Synthetic case: one small and one sidecar-sized tensor, equal on both sides."""
import numpy as np
from harness.case import agree


def torch_side():
    return {"x": np.arange(3, dtype=np.float32), "big": np.zeros(70000, np.float32)}


def engine_side():
    return {"x": np.arange(3, dtype=np.float32), "big": np.zeros(70000, np.float32)}


CHECKS = [agree("x"), agree("big")]
'''


@pytest.fixture
def dirs(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "alpha.py").write_text(CASE)
    return tmp_path


def run(capsys, dirs, *extra):
    argv = [f"--cases-dir={dirs / 'cases'}", f"--out={dirs / 'out'}",
            f"--golden-dir={dirs / 'golden'}", *extra]  # fmt: skip
    code = compare.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_full_disk_names_the_file_being_written(dirs, capsys, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what write() raises: no file

    monkeypatch.setattr(sidecar.os, "fsync", full)
    code, out, err = run(capsys, dirs)
    assert code == 2 and out == ""
    # The sidecar of "big" is the first file written: its key is named with the side file.
    path = dirs / "out" / "alpha" / "torch.json"
    assert err.splitlines()[-1] == (
        f"compare.py: error: {path}: big: cannot write its sidecar (No space left on device)"
    )


def test_a_sidecar_name_too_long_names_the_key(dirs, capsys, monkeypatch):
    def too_long(folder, stem, key, array):
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), f"{folder}/.tmp")

    monkeypatch.setattr(sidecar, "write_sidecar", too_long)
    code, _, err = run(capsys, dirs)
    path = dirs / "out" / "alpha" / "torch.json"
    assert code == 2
    assert err.splitlines()[-1] == (
        f"compare.py: error: {path}: big: cannot write its sidecar (File name too long)"
    )


def test_the_json_report_is_byte_identical_without_timings(dirs, capsys):
    run(capsys, dirs, "--update-golden")
    reports = []
    for n in range(2):
        report = dirs / f"r{n}.json"
        assert run(capsys, dirs, f"--json={report}")[0] == 0
        reports.append(report.read_bytes())
    assert reports[0] == reports[1]
    assert [c["seconds"] for c in json.loads(reports[0])["cases"]] == [None]


def test_timings_put_the_wall_time_in_the_report(dirs, capsys):
    report = dirs / "r.json"
    run(capsys, dirs, f"--json={report}", "--timings")
    (seconds,) = [c["seconds"] for c in json.loads(report.read_text())["cases"]]
    assert isinstance(seconds, float) and seconds > 0


def test_timings_belong_to_case_mode(tmp_path, capsys):
    a = tmp_path / "a.json"
    a.write_text('{"x": 1.0}')
    with pytest.raises(SystemExit) as info:
        compare.main([str(a), str(a), "--timings"])
    assert info.value.code == 2
    assert "--timings runs cases; it cannot be combined with FILE arguments" in (
        capsys.readouterr().err
    )
