"""harness.prune and ``--prune-stale``: nothing is deleted that is not a golden.

The configurations that deleted a project on 1f53228 (``golden = "."``, ``".."``, ``"tests"``,
``fixture_golden`` equal to ``golden``) are refused before anything runs; a folder holding
anything but golden files is reported and left alone; symbolic links are never followed; and a
prune killed at random moments leaves every other file as it was and every stale folder either
untouched or in the trash, which the next run finishes.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness import command, prune, record, sidecar
from harness.case import SIDES
from tests.test_failure_first import ALPHA, write_cases

REPO = Path(__file__).resolve().parent.parent


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry under ``folder``, symbolic links unfollowed: file bytes, link targets,
    and folders (an empty one counts too)."""
    found: dict[str, object] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


def make_project(root: Path, config: str) -> Path:
    """A project with one passing case, its goldens, a test module and a fixture golden."""
    root.mkdir(parents=True, exist_ok=True)
    write_cases(root / "cases", alpha=ALPHA)
    (root / "tests" / "test_port").mkdir(parents=True)
    (root / "tests" / "test_port.py").write_text("def test_x():\n    pass\n")
    (root / "tests" / "test_port" / "test_x.json").write_text("{}\n")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(f"[tool.conformance]\n{config}")
    return pyproject


def run(pyproject: Path, capsys, *argv: str) -> tuple[int, str, str]:
    code = command.main(["-q", *argv], project=pyproject)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------
# The configurations that deleted a project


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ('golden = "."\n', "tool.conformance.golden: is the project folder {root}"),
        ('golden = ".."\n', "tool.conformance.golden: '..' leaves the project folder {root}"),
        (
            'golden = ".."\nallow_outside_project = true\n',
            "tool.conformance.golden: holds the project folder {root}",
        ),
        ('golden = "cases/.."\n', "tool.conformance.golden: is the project folder {root}"),
        ('cases = "tests"\ngolden = "tests"\n', "tool.conformance.golden: holds the cases folder"),
        (
            'fixture_golden = "golden"\n',
            "tool.conformance.golden: overlaps tool.conformance.fixture_golden",
        ),
        (
            'fixture_golden = "golden/fixtures"\n',
            "tool.conformance.golden: overlaps tool.conformance.fixture_golden",
        ),
        ('golden = "tests"\nfixture_golden = "tests"\n', "overlaps tool.conformance.fixture_"),
        ('out = "golden"\n', "tool.conformance.golden: overlaps tool.conformance.out"),
    ],
)
def test_a_golden_folder_holding_the_project_is_refused_and_nothing_deleted(
    tmp_path, capsys, config, problem
):
    root = tmp_path / "project"
    pyproject = make_project(root, config)
    run(pyproject, capsys, "--allow-stale")  # whatever it writes, the pruning run may not delete
    before = snapshot(tmp_path)
    code, out, err = run(pyproject, capsys, "--prune-stale")
    assert (code, out) == (2, "")
    assert err.startswith(f"conformance: error: {pyproject}: ")
    assert problem.format(root=root) in err and len(err.splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_golden_tests_prunes_no_test_folder(tmp_path, capsys):
    """``golden = "tests"`` with the fixture's goldens beside the tests (no overlap the
    configuration can see): the test module folders hold no golden file, so they are
    reported as stale folders that are not pruned, and stay."""
    pyproject = make_project(tmp_path, 'golden = "tests"\n')
    (tmp_path / "tests" / "empty_stale").mkdir()
    run(pyproject, capsys, "--allow-stale")
    before = snapshot(tmp_path)
    code, out, _ = run(pyproject, capsys, "--prune-stale")
    assert code == 1
    lines = out.splitlines()
    fixture = tmp_path / "tests" / "test_port"
    assert lines[-2:] == [
        f"FAIL stale golden: {fixture} (no case file; not pruned: holds {fixture / 'test_x.json'}"
        ", which is not a golden file; --allow-stale accepts it)",
        "FAIL (1 stale golden)",
    ]
    assert lines[0] == f"deleting stale golden folder {tmp_path / 'tests' / 'empty_stale'}: (empty)"
    del before["tests/empty_stale"]  # an empty folder is a stale golden folder
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--golden-dir=.", "--golden-dir=..", "--golden-dir=cases"])
def test_a_golden_dir_option_holding_the_project_or_its_cases_is_refused(
    tmp_path, capsys, monkeypatch, option
):
    pyproject = make_project(tmp_path / "p", "")
    monkeypatch.chdir(tmp_path / "p")
    before = snapshot(tmp_path)
    code, out, err = run(pyproject, capsys, "--prune-stale", option, "--cases-dir=cases")
    assert (code, out) == (2, "")
    golden = option.split("=")[1]
    what = "holds the cases folder cases" if golden == "cases" else "the project folder"
    assert err.startswith(f"conformance: error: {golden}: golden folder ") and what in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("key", ["cases", "golden", "out", "fixture_golden"])
@pytest.mark.parametrize("value", ["../elsewhere", "/tmp/elsewhere", "sub/../../elsewhere"])
def test_a_path_leaving_the_project_needs_the_opt_in(tmp_path, capsys, key, value):
    (tmp_path / "elsewhere").mkdir()
    root = tmp_path / "p"
    root.mkdir()
    pyproject = root / "pyproject.toml"
    pyproject.write_text(f'[tool.conformance]\n{key} = "{value}"\n')
    code, _, err = run(pyproject, capsys)
    assert code == 2
    assert err == (
        f"conformance: error: {pyproject}: tool.conformance.{key}: {value!r} leaves the project"
        f" folder {root}; set allow_outside_project = true to allow it\n"
    )


def test_a_symbolic_link_out_of_the_project_is_leaving_it(tmp_path, capsys):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "link").symlink_to(tmp_path / "elsewhere")
    pyproject = tmp_path / "p" / "pyproject.toml"
    pyproject.write_text('[tool.conformance]\ngolden = "link/golden"\n')
    code, _, err = run(pyproject, capsys)
    assert code == 2 and "tool.conformance.golden: 'link/golden' leaves the project" in err


# ---------------------------------------------------------------------------------------------
# Only golden files are pruned


def test_the_pattern_knows_every_file_the_golden_writer_makes(tmp_path):
    values = {"w": np.arange(10, dtype=np.float32), "b": np.float32(1), "odd key/x": np.ones(9)}
    for name in ("torch.json", "torch.obtained.json", "engine.json"):
        record.write_side(tmp_path / name, "c", name.split(".")[0], values, {},
                          sidecar_threshold=4)  # fmt: skip
    sidecar._write_temp(tmp_path, "torch.json", lambda f: f.write(b"{"))  # a killed write's
    long_key = "k" * 80  # the temporary file keeps 100 characters of a long sidecar name
    name = sidecar.sidecar_name("torch.obtained", long_key, "0" * 64)
    sidecar._write_temp(tmp_path, name, lambda f: f.write(b""))
    pattern = prune.golden_file_pattern(SIDES)
    written = os.listdir(tmp_path)
    assert len(written) == 11  # 3 JSON files, 2 sidecars each, 2 temporary files
    assert [n for n in written if not pattern.fullmatch(n)] == []
    others = ["test_port.py", "notes.txt", "torch.json.bak", "torch.json~", "README.md",
              "other.json", "torch.w.0123456789ab.npy.orig", ".torch.json.swp", "torch.w.npy",
              "model.pt", "torch.obtained.obtained.json"]  # fmt: skip
    assert [n for n in others if pattern.fullmatch(n)] == []


def stale_tree(golden: Path) -> None:
    (golden / "alpha").mkdir(parents=True, exist_ok=True)
    if not (golden / "alpha" / "torch.json").exists():
        (golden / "alpha" / "torch.json").write_text("case alpha's golden\n")
    (golden / "gone").mkdir()
    (golden / "gone" / "torch.json").write_text("{}\n")
    (golden / "gone" / "torch.w.0123456789ab.npy").write_bytes(b"\x93NUMPY")
    (golden / "empty").mkdir()
    (golden / "notes").mkdir()
    (golden / "notes" / "torch.json").write_text("{}\n")
    (golden / "notes" / "notes.txt").write_text("mine\n")
    (golden / "nested" / "inner").mkdir(parents=True)
    (golden / "nested" / "inner" / "torch.json").write_text("{}\n")
    (golden / "README.md").write_text("a file beside the case folders\n")


def test_scan_sorts_stale_from_foreign_folders(tmp_path):
    golden = tmp_path / "golden"
    stale_tree(golden)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "torch.json").write_text("not ours\n")
    (golden / "linked").symlink_to(tmp_path / "outside")
    (golden / "withlink").mkdir()
    (golden / "withlink" / "torch.json").symlink_to(tmp_path / "outside" / "torch.json")
    (golden / "fifo").mkdir()
    os.mkfifo(golden / "fifo" / "torch.json")
    scan = prune.scan(golden, {"alpha"}, SIDES)
    assert scan.stale == (golden / "empty", golden / "gone")
    assert [(f.path.name, f.problem) for f in scan.foreign] == [
        ("fifo", f"holds {golden / 'fifo' / 'torch.json'}, which is not a regular file"),
        ("linked", "is a symbolic link (never followed)"),
        ("nested", f"holds the folder {golden / 'nested' / 'inner'}"),
        ("notes", f"holds {golden / 'notes' / 'notes.txt'}, which is not a golden file"),
        ("withlink", f"holds {golden / 'withlink' / 'torch.json'}, a symbolic link"),
    ]


def test_a_folder_that_cannot_be_listed_is_not_stale(tmp_path, monkeypatch):
    golden = tmp_path / "golden"
    stale_tree(golden)
    scandir = os.scandir

    def refusing(path):
        if Path(path).name == "gone":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(prune.os, "scandir", refusing)
    scan = prune.scan(golden, {"alpha"}, SIDES)
    assert golden / "gone" not in scan.stale
    assert prune.Foreign(golden / "gone", "cannot be listed (Permission denied)") in scan.foreign


def test_prune_stale_deletes_golden_files_only_and_follows_no_link(tmp_path, capsys):
    pyproject = make_project(tmp_path, "")
    run(pyproject, capsys)  # writes alpha's goldens
    golden = tmp_path / "golden"
    stale_tree(golden)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "torch.json").write_text("not ours\n")
    (golden / "linked").symlink_to(tmp_path / "outside")
    before = snapshot(tmp_path)
    code, out, _ = run(pyproject, capsys, "--prune-stale")
    lines = out.splitlines()
    gone = golden / "gone"
    assert lines[:2] == [
        f"deleting stale golden folder {golden / 'empty'}: (empty)",
        f"deleting stale golden folder {gone}: torch.json, torch.w.0123456789ab.npy",
    ]
    assert f"pruned stale golden file {gone / 'torch.json'}" in lines
    assert f"FAIL stale golden: {golden / 'linked'} (no case file; not pruned: is a symbolic " \
        "link (never followed); --allow-stale accepts it)" in lines  # fmt: skip
    assert (code, lines[-1]) == (1, "FAIL (3 stale goldens)")  # linked, nested, notes
    for name in ("empty", "gone", "gone/torch.json", "gone/torch.w.0123456789ab.npy"):
        del before[f"golden/{name}"]
    assert snapshot(tmp_path) == before


def test_a_file_added_while_pruning_puts_the_folder_back(tmp_path):
    golden = tmp_path / "golden"
    stale_tree(golden)

    def meanwhile(files):  # between the scan and the rename
        (golden / "gone" / "fresh.txt").write_text("written during the prune\n")

    deleted, kept = prune.prune(golden, [golden / "gone"], SIDES, announce=meanwhile)
    assert deleted == []
    assert kept == [prune.Foreign(golden / "gone", f"holds {golden / 'gone' / 'fresh.txt'}, "
                                  "which is not a golden file")]  # fmt: skip
    assert sorted(os.listdir(golden / "gone")) == ["fresh.txt", "torch.json",
                                                   "torch.w.0123456789ab.npy"]  # fmt: skip
    assert not [n for n in os.listdir(golden) if n.startswith(prune.TRASH_PREFIX)]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_the_next_run_finishes_a_killed_prune(tmp_path, capsys):
    pyproject = make_project(tmp_path, "")
    run(pyproject, capsys)
    golden = tmp_path / "golden"
    trash = golden / f"{prune.TRASH_PREFIX}{dead_pid()}"
    (trash / "gone").mkdir(parents=True)
    (trash / "gone" / "engine.json").write_text("{}\n")
    (trash / "mine").mkdir()
    (trash / "mine" / "notes.txt").write_text("not a golden\n")
    code, out, _ = run(pyproject, capsys)
    assert f"pruned stale golden file {golden / 'gone' / 'engine.json'}" in out.splitlines()
    assert not trash.exists()
    assert (golden / "mine" / "notes.txt").read_text() == "not a golden\n"  # put back
    assert code == 1  # and reported as a folder no case is named after


# ---------------------------------------------------------------------------------------------
# SIGKILL at random moments

STALE = 30
CHILD = """
import sys
from pathlib import Path
from harness import prune
golden = Path(sys.argv[1])
sys.stdout.write("ready\\n")
sys.stdout.flush()
prune.finish_interrupted(golden, ("torch", "engine"))
scan = prune.scan(golden, {"alpha"}, ("torch", "engine"))
prune.prune(golden, scan.stale, ("torch", "engine"))
"""


def build_kill_tree(root: Path) -> tuple[dict, dict]:
    """Non-golden files (and alpha's goldens) that must survive, and the stale folders."""
    golden = root / "golden"
    stale_tree(golden)
    (root / "cases").mkdir()
    (root / "cases" / "alpha.py").write_text("# a case\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_port.py").write_text("def test(): pass\n")
    stale = {"gone": {"torch.json": b"{}\n", "torch.w.0123456789ab.npy": b"\x93NUMPY"}, "empty": {}}
    blob = bytes(range(256)) * 16  # 4 KiB: rmtree takes long enough to be caught midway
    for i in range(STALE):
        folder = golden / f"s{i:03d}"
        folder.mkdir()
        files = {"torch.json": b"{}\n", "engine.json": b"{ }\n", f"torch.w.{i:012x}.npy": blob}
        for name, data in files.items():
            (folder / name).write_bytes(data)
        stale[folder.name] = files
    stale_keys = ("golden/s", "golden/gone", "golden/empty")  # the empty folder is stale too
    keep = {k: v for k, v in snapshot(root).items() if not k.startswith(stale_keys)}
    return keep, stale


def check_after_kill(root: Path, keep: dict, stale: dict) -> bool:
    """Every kept entry as it was; every stale folder in place and whole, or gone, or (part
    of it) in a trash folder; nothing else. Returns whether a trash folder was left."""
    now = snapshot(root)
    for key, value in keep.items():
        assert now.pop(key) == value, key
    golden = root / "golden"
    trashes = [n for n in os.listdir(golden) if n.startswith(prune.TRASH_PREFIX)]
    assert len(trashes) <= 1
    for name, files in stale.items():
        in_place = {n: now.pop(f"golden/{name}/{n}") for n in files if f"golden/{name}/{n}" in now}
        if now.pop(f"golden/{name}", None) is not None:
            assert in_place == files, name  # a folder in its place is untouched
        for trash in trashes:
            for n, data in files.items():
                assert now.pop(f"golden/{trash}/{name}/{n}", data) == data
            now.pop(f"golden/{trash}/{name}", None)
    for trash in trashes:
        now.pop(f"golden/{trash}")
    assert now == {}  # nothing that was not there before
    return bool(trashes)


def finish(root: Path) -> None:
    """The next run: finish an interrupted prune, then prune."""
    prune.finish_interrupted(root / "golden", SIDES)
    prune.prune(root / "golden", prune.scan(root / "golden", {"alpha"}, SIDES).stale, SIDES)


def test_a_prune_killed_at_random_moments_deletes_nothing_else(tmp_path):
    """50 kills of a child pruning; each kill's tree is pruned again by the next child (which
    finishes the trash first), a new tree once half its stale folders are gone."""
    rng = random.Random(22)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", CHILD]
    whole = tmp_path / "whole"
    build_kill_tree(whole)
    child = subprocess.Popen([*argv, str(whole / "golden")], env=env, stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"ready\n"
    started = time.perf_counter()  # how long a whole prune takes: the span the kills sample
    assert child.wait() == 0
    span = time.perf_counter() - started
    child.stdout.close()
    trees, trashes_left = [], 0
    for kill in range(50):
        if not trees or in_place(trees[-1][0], trees[-1][2]) < STALE // 2:
            if trees:
                finish(trees[-1][0])
                assert snapshot(trees[-1][0]) == trees[-1][1]
            trees.append((tmp_path / f"t{kill}", *build_kill_tree(tmp_path / f"t{kill}")))
        root, keep, stale = trees[-1]
        child = subprocess.Popen([*argv, str(root / "golden")], env=env, stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0, span))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        trashes_left += check_after_kill(root, keep, stale)
    finish(trees[-1][0])
    assert snapshot(trees[-1][0]) == trees[-1][1]
    print(f"{trashes_left} of 50 kills left a trash folder, {len(trees)} trees, span {span:.3f} s")


def in_place(root: Path, stale: dict) -> int:
    return sum((root / "golden" / name).exists() for name in stale)
