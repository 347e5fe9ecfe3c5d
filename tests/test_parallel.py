"""Parallel and sharded runs: ``--jobs N`` gives the results and bytes of ``--jobs 1``,
``--shard K/N`` splits the cases exactly, and concurrent writers never tear a file."""

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import compare
from harness import record
from harness.case import case_paths
from harness.session import Dirs, Settings, _worker_context, check_by_name, select_shard

ROOT = Path(__file__).resolve().parents[1]
CASE = '''"""Synthetic case {name}: seeded draws, one agreeing and one documented-free check."""
import numpy as np
from harness.case import agree


def torch_side():
    return {{"x": np.random.rand({n}).astype(np.float32), "n": {n}}}


def engine_side():
    return {{"x": np.random.rand({n}).astype(np.float32), "n": {n}}}


CHECKS = [agree("x"), agree("n")]
'''
NAMES = ["alpha", "bravo", "charlie", "delta", "echo"]


@pytest.fixture
def cases_dir(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    for n, name in enumerate(NAMES, start=1):
        (folder / f"{name}.py").write_text(CASE.format(name=name, n=n))
    return folder


def run(capsys, tmp_path, cases_dir, label, *extra):
    folders = [f"--cases-dir={cases_dir}", f"--out={tmp_path / label / 'out'}",
               f"--golden-dir={tmp_path / label / 'golden'}",
               f"--json={tmp_path / label / 'report.json'}"]  # fmt: skip
    code = compare.main([*folders, *extra])
    out, err = capsys.readouterr()
    report = json.loads((tmp_path / label / "report.json").read_text())
    return code, out, err, report


def comparable(report: dict, label: str) -> str:
    """The report without timings, and with the run's folder name (messages print paths)."""
    report = {**report, "cases": [{**c, "seconds": None} for c in report["cases"]]}
    return json.dumps(report, sort_keys=True).replace(f"/{label}/", "/RUN/")


def test_jobs_2_gives_the_results_and_bytes_of_jobs_1(tmp_path, capsys, cases_dir, tree):
    serial = run(capsys, tmp_path, cases_dir, "serial", "--jobs", "1")
    parallel = run(capsys, tmp_path, cases_dir, "parallel", "--jobs", "2")
    assert serial[0] == parallel[0] == 1  # fresh golden folders: every golden is missing
    assert [c["case"] for c in parallel[3]["cases"]] == NAMES  # case order, not finish order
    assert comparable(parallel[3], "parallel") == comparable(serial[3], "serial")
    assert parallel[1].replace("parallel", "serial") == serial[1]
    written = tree(tmp_path / "serial" / "out")
    assert len(written) == 2 * len(NAMES)
    assert tree(tmp_path / "parallel" / "out") == written
    assert tree(tmp_path / "parallel" / "golden") == tree(tmp_path / "serial" / "golden")


def test_concurrent_runs_of_one_case_never_tear_a_file(tmp_path, cases_dir):
    """What xdist without --dist loadfile could do: two processes writing the same files."""
    dirs = Dirs(cases=cases_dir, golden=tmp_path / "golden", out=tmp_path / "out")
    with ProcessPoolExecutor(max_workers=2, mp_context=_worker_context()) as pool:
        futures = [pool.submit(check_by_name, "echo", Settings(), dirs) for _ in range(8)]
        results = [f.result() for f in futures]
    assert all(r.checks[0].ok for r in results)
    for folder in (tmp_path / "out" / "echo", tmp_path / "golden" / "echo"):
        assert sorted(p.name for p in folder.iterdir()) == ["engine.json", "torch.json"]
        for side in ("torch", "engine"):
            assert record.read_side(folder / f"{side}.json").values["n"] == 5


# -- sharding ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 5, 40])
def test_shards_of_the_repo_cases_partition_them(n):
    names = [p.stem for p in case_paths()]
    shards = [select_shard(names, f"{k}/{n}") for k in range(1, n + 1)]
    assert sorted(name for shard in shards for name in shard) == sorted(names)  # disjoint + all
    assert max(map(len, shards)) - min(map(len, shards)) <= 1  # balanced


def test_shards_at_the_command_line(tmp_path, capsys, cases_dir):
    ran = []
    for k in (1, 2, 3):
        code, _, _, report = run(capsys, tmp_path, cases_dir, f"shard{k}", "--shard", f"{k}/3")
        assert code == 1
        ran.append([c["case"] for c in report["cases"]])
    assert ran == [["alpha", "delta"], ["bravo", "echo"], ["charlie"]]


@pytest.mark.parametrize("shard", ["0/3", "4/3", "1/0", "a/b", "1/2/3", "", "-1/3", "1.0/3", "1"])
def test_bad_shard_values_exit_2_with_one_line(tmp_path, capsys, cases_dir, shard):
    folders = [f"--cases-dir={cases_dir}", f"--out={tmp_path}/out", f"--golden-dir={tmp_path}/g"]
    code = compare.main([*folders, f"--shard={shard}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    problems = ["expected K/N with whole numbers, for example 1/4", "K must be between 1 and N"]
    prefix = f"compare.py: error: --shard {shard!r}: "
    assert any(err.startswith(prefix + problem) for problem in problems), err
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize("jobs", ["0", "-2", "two"])
def test_bad_jobs_values_exit_2(capsys, jobs):
    with pytest.raises(SystemExit) as exc:
        compare.main(["--jobs", jobs])
    assert exc.value.code == 2
    assert "argument --jobs: " in capsys.readouterr().err


def test_missing_cases_dir_exits_2(tmp_path, capsys):
    assert compare.main([f"--cases-dir={tmp_path / 'nope'}"]) == 2
    assert capsys.readouterr().err == (
        f"compare.py: error: {tmp_path / 'nope'}: no such folder of case files\n"
    )


def test_an_unwritable_report_exits_2_with_one_line(tmp_path, capsys, cases_dir):
    target = tmp_path / "no" / "such" / "folder" / "r.json"
    argv = [f"--cases-dir={cases_dir}", f"--out={tmp_path}/out", f"--golden-dir={tmp_path}/g"]
    assert compare.main([*argv, "--case", "alpha", f"--json={target}"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"compare.py: error: {target}: No such file or directory"


def test_make_test_keeps_the_items_of_one_case_on_one_worker():
    """xdist's loadfile mode sends all items of a file (a case) to one worker, so the case
    runs once per session (the outcome cache is per process) and its writes never race."""
    recipe = (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "-n auto" in recipe and "--dist loadfile" in recipe
