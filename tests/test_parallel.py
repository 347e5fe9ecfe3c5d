"""Parallel and sharded runs: ``--jobs N`` gives the results and bytes of ``--jobs 1``,
``--shard K/N`` splits the cases exactly, and concurrent writers never tear a file."""

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import compare
from harness import record
from harness.case import case_paths, discover, load_case
from harness.session import (
    Dirs,
    Settings,
    _worker_context,
    check_by_name,
    longest_first,
    parallel,
    run_cases,
    select_shard,
)

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


# -- cases with float64 reruns: two tasks, joined by the parent --------------------------------

TRAJECTORY_CASE = '''"""Synthetic trajectory case {name}: a seeded walk, float64 reruns, {what}."""
import numpy as np
from harness.case import trajectory

FLOAT64_CALLS = []


def walk(dtype, side):
    dtype = str(dtype).removeprefix("torch.")
    if dtype == "float64":
        FLOAT64_CALLS.append(side)
        {float64_body}
    {body}
    steps = np.random.rand(20).astype(dtype) - np.asarray(0.5, dtype)
    return {{"w": np.cumsum(steps), "n": 20}}


def torch_side(dtype="float32"):
    return walk(dtype, "torch")


def engine_side(dtype="float32"):
    return walk(dtype, "engine")


CHECKS = [trajectory("w")]
'''
TRAJECTORY_VARIANTS = {
    "t_plain": ("both halves run", "pass", "pass"),
    "t_engine_float64_raises": (
        "the engine's first float64 run raises",
        'if side == "engine": raise ValueError("no float64")',
        "pass",
    ),
    "t_torch_rerun_raises": (
        "PyTorch's float64 rerun raises",
        'if len(FLOAT64_CALLS) == 2: raise RuntimeError("second float64 run")',
        "pass",
    ),
    "t_float32_raises": (
        "the float32 run raises, so no float64 rerun is written",
        "pass",
        'if str(dtype).endswith("float32") and side == "engine": raise KeyError("f32")',
    ),
}


@pytest.fixture
def mixed_cases_dir(cases_dir):
    """The five plain cases and four with float64 reruns, three of which raise somewhere."""
    for name, (what, float64_body, body) in TRAJECTORY_VARIANTS.items():
        text = TRAJECTORY_CASE.format(name=name, what=what, float64_body=float64_body, body=body)
        (cases_dir / f"{name}.py").write_text(text)
    return cases_dir


def test_split_float64_cases_give_the_results_and_bytes_of_jobs_1(
    tmp_path, capsys, mixed_cases_dir, tree
):
    serial = run(capsys, tmp_path, mixed_cases_dir, "serial", "--jobs", "1")
    parallel = run(capsys, tmp_path, mixed_cases_dir, "parallel", "--jobs", "2")
    errors = {c["case"]: c["error"] for c in serial[3]["cases"] if c["error"]}
    assert errors == {
        "t_engine_float64_raises": "engine_side(dtype=float64) raised ValueError('no float64')",
        "t_float32_raises": "engine_side raised KeyError('f32')",
        "t_torch_rerun_raises": (
            "torch_side(dtype=float64) raised RuntimeError('second float64 run')"
        ),
    }
    assert comparable(parallel[3], "parallel") == comparable(serial[3], "serial")
    assert parallel[1].replace("parallel", "serial") == serial[1]
    written = tree(tmp_path / "serial" / "out")
    float64_files = sorted(p for p in written if ".float64." in p)
    assert float64_files == [
        "t_engine_float64_raises/torch.float64.json",  # written before the engine's raised
        "t_plain/engine.explained.float64.json",  # no explained run after an error
        "t_plain/engine.float64.json",
        "t_plain/torch.float64.json",
        "t_torch_rerun_raises/torch.float64.json",  # its first run, written as always
    ]
    assert tree(tmp_path / "parallel" / "out") == written
    assert tree(tmp_path / "parallel" / "golden") == tree(tmp_path / "serial" / "golden")


def test_compare_py_forks_its_workers_and_writes_the_bytes_of_jobs_1(
    tmp_path, capsys, mixed_cases_dir, tree
):
    """As a program, compare.py runs with --jobs defaulting to the CPUs, its workers forked
    from itself (harness.startup.fork_is_safe): the same reports and files as --jobs 1."""
    serial = run(capsys, tmp_path, mixed_cases_dir, "serial", "--jobs", "1")
    label = "program"
    folders = [f"--cases-dir={mixed_cases_dir}", f"--out={tmp_path / label / 'out'}",
               f"--golden-dir={tmp_path / label / 'golden'}",
               f"--json={tmp_path / label / 'report.json'}"]  # fmt: skip
    probe = "import sys, compare; from harness import command, startup; "
    forked = []
    script = (  # compare.py's own entry point, recording whether run_cases was told to fork
        probe + "from harness import session; real = session.run_cases\n"
        "def spy(*a, **k):\n"
        "    print('fork', k['fork'], file=sys.stderr); return real(*a, **k)\n"
        "session.run_cases = spy\n"
        "code = compare.main(sys.argv[1:], program=True); startup.skip_final_collection()\n"
        "sys.exit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *folders], cwd=ROOT, capture_output=True, text=True
    )
    forked = [line for line in proc.stderr.splitlines() if line.startswith("fork ")]
    assert proc.returncode == serial[0] == 1, proc.stderr
    assert forked == ["fork True"]
    report = json.loads((tmp_path / label / "report.json").read_text())
    assert comparable(report, label) == comparable(serial[3], "serial")
    assert proc.stdout.replace(label, "serial") == serial[1]
    assert tree(tmp_path / label / "out") == tree(tmp_path / "serial" / "out")
    assert tree(tmp_path / label / "golden") == tree(tmp_path / "serial" / "golden")


def test_longest_looking_cases_start_first(tmp_path, mixed_cases_dir):
    cases = [load_case(p) for p in case_paths(mixed_cases_dir)]
    golden_dir = tmp_path / "golden"
    for name, size in {"alpha": 300, "bravo": 500, "t_plain": 200, "t_float32_raises": 100}.items():
        (golden_dir / name).mkdir(parents=True)
        (golden_dir / name / "torch.json").write_text("x" * size)
    order = [c.name for c in longest_first(cases, Dirs(mixed_cases_dir, golden_dir))]
    # float64 reruns count twice: t_plain (2 x 200) before alpha (300); no goldens: name order
    assert order == ["bravo", "t_plain", "alpha", "t_float32_raises", "charlie", "delta", "echo",
                     "t_engine_float64_raises", "t_torch_rerun_raises"]  # fmt: skip


def test_a_single_case_with_float64_reruns_is_split_over_two_workers(mixed_cases_dir):
    (case,) = discover(["t_plain"], mixed_cases_dir)
    (plain,) = discover(["alpha"], mixed_cases_dir)
    assert parallel([case], jobs=2) and not parallel([case], jobs=1)
    assert not parallel([plain], jobs=2) and parallel([plain, plain], jobs=2)


def test_jobs_defaults_to_the_usable_cpus_in_a_program_only(monkeypatch):
    from harness import command

    seen = []
    monkeypatch.setattr(command, "_case_runner", lambda: lambda names, args: seen.append(args))
    compare.main([], program=True)
    compare.main([])
    compare.main(["--jobs", "3"], program=True)
    assert [(a.jobs, a.program) for a in seen] == [
        (command.usable_cpus(), True),
        (1, False),
        (3, True),
    ]


MUTATING_CASE = '''"""Synthetic trajectory case: float64 runs return one array, changed in place."""
import numpy as np
from harness.case import trajectory

SHARED = np.zeros(3)


def side(dtype):
    if str(dtype).endswith("float64"):
        SHARED[:] += 1.0  # the rerun changes what the first run returned
        return {"w": SHARED}
    return {"w": np.zeros(3, np.float32)}


def torch_side(dtype="float32"):
    return side(dtype)


def engine_side(dtype="float32"):
    return {"w": np.zeros(3, str(dtype).removeprefix("torch."))}


CHECKS = [trajectory("w")]
'''


def test_a_float64_rerun_cannot_change_what_the_first_run_recorded(tmp_path, tree):
    """The first float64 run is kept (pickled) before its rerun, in a worker as in one process,
    so the file holds the first run's values and the rerun's change is non-determinism."""
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "mutating.py").write_text(MUTATING_CASE)
    (folder / "alpha.py").write_text(CASE.format(name="alpha", n=1))
    reports = {}
    for label, jobs in (("serial", 1), ("parallel", 2)):
        dirs = Dirs(folder, tmp_path / label / "golden", tmp_path / label / "out")
        reports[label] = run_cases(discover([], folder), jobs=jobs, dirs=dirs)
    mutating = next(r for r in reports["serial"] if r.case == "mutating")
    assert mutating.nondeterministic == ("torch.float64",)
    written = record.read_side(tmp_path / "serial" / "out" / "mutating" / "torch.float64.json")
    assert written.values["w"].tolist() == [1.0, 1.0, 1.0]  # the first run's, not the rerun's
    assert [r.nondeterministic for r in reports["parallel"]] == [
        r.nondeterministic for r in reports["serial"]
    ]
    assert tree(tmp_path / "parallel" / "out") == tree(tmp_path / "serial" / "out")
