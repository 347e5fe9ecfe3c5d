"""Determinism: the harness pins seeds and threads itself, so two runs write identical bytes;
a side that disagrees with itself is reported as non-deterministic, not as non-conforming."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.case import SIDES, load_case
from harness.runner import check_case, run_case

ROOT = Path(__file__).resolve().parents[1]
FAST_CASES = ["param_ids", "grad_edit", "grad_location"]  # repo cases that run in ~50 ms


def run_script(
    tmp_path: Path, name: str, hash_seed: str, cases=FAST_CASES, *extra: str
) -> subprocess.CompletedProcess:
    """compare.py on the fast cases into fresh out/ and golden/ folders of its own."""
    folders = [f"--out={tmp_path / name / 'out'}", f"--golden-dir={tmp_path / name / 'golden'}"]
    return subprocess.run(
        [sys.executable, str(ROOT / "compare.py"), "--case", *cases, *folders, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        # A different hash seed per run: set or dict ordering that leaks into output shows up.
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )


def test_two_script_runs_write_byte_identical_files(tmp_path, tree):
    first = run_script(tmp_path, "run1", "1")
    second = run_script(tmp_path, "run2", "2")
    assert first.returncode == second.returncode == 1  # empty golden folders: goldens missing
    assert "Traceback" not in first.stderr + second.stderr
    written = tree(tmp_path / "run1" / "out")
    assert sorted(written) == sorted(f"{c}/{s}.json" for c in FAST_CASES for s in SIDES)
    assert tree(tmp_path / "run2" / "out") == written
    assert tree(tmp_path / "run2" / "golden") == tree(tmp_path / "run1" / "golden")
    # The reports too, up to the folder names they print (timings go to stderr).
    assert second.stdout.replace("run2", "run1") == first.stdout


def test_forked_workers_write_the_bytes_of_one_process(tmp_path, tree):
    """compare.py forks its workers (and splits a case with float64 reruns over two of
    them); --jobs 1 runs everything in one process: the same files and report either way."""
    cases = [*FAST_CASES, "grad_accumulation"]  # float64 reruns, about 0.3 s
    forked = run_script(tmp_path, "many", "1", cases)
    alone = run_script(tmp_path, "single", "1", cases, "--jobs", "1")
    assert forked.returncode == alone.returncode == 1  # empty golden folders: goldens missing
    assert "Traceback" not in forked.stderr + alone.stderr
    written = tree(tmp_path / "single" / "out")
    assert "grad_accumulation/engine.float64.json" in written
    assert tree(tmp_path / "many" / "out") == written
    assert tree(tmp_path / "many" / "golden") == tree(tmp_path / "single" / "golden")
    assert forked.stdout.replace("/many/", "/single/") == alone.stdout


SEEDED_BY_THE_HARNESS = '''"""Unseeded draws from every generator: the harness seeds them."""
import random

import numpy as np
import torch
from threadpoolctl import threadpool_info

from harness import engine
from harness.case import agree, expect


def torch_side():
    return {"torch_randn": torch.randn(3), "np_rand": np.random.rand(2),
            "py_random": random.random(), "threads": torch.get_num_threads(),
            "blas_threads": sorted({p["num_threads"] for p in threadpool_info()})}


def engine_side():
    return {"param_id": str(engine.ParamId.new()), "np_rand": np.random.rand(2),
            "py_random": random.random()}


CHECKS = [agree("np_rand"), agree("py_random"), expect("threads", "torch", 1),
          expect("blas_threads", "torch", [1])]
'''


def write_case(folder: Path, name: str, body: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(body)
    return load_case(folder / f"{name}.py")


def test_seeds_and_threads_are_pinned_for_every_run(tmp_path, tree):
    case = write_case(tmp_path / "cases", "seeded", SEEDED_BY_THE_HARNESS)
    first = check_case(case, golden_dir=tmp_path / "g1", out_dir=tmp_path / "o1")
    check_case(case, golden_dir=tmp_path / "g2", out_dir=tmp_path / "o2")
    assert all(r.ok for r in first.checks), [r.message for r in first.checks]
    assert first.nondeterministic == ()
    assert tree(tmp_path / "o1") == tree(tmp_path / "o2")
    # The recorded environment shows the pinned counts, so goldens do not carry the core count.
    env = first.env["torch"]
    assert first.env["engine"] == env  # one environment block for both sides
    assert env["torch_threads"] == 1
    assert {pool["num_threads"] for pool in env["blas"]} == {1}


NOISY = '''"""An engine side with an unseeded generator of its own: different on every call."""
import random

import numpy as np
from harness.case import agree


def torch_side():
    return {"y": np.array([1.0, 2.0], np.float32)}


def engine_side():
    return {"y": np.array([1.0, 2.0], np.float32), "noise": random.Random().random()}


CHECKS = [agree("y")]
'''


def test_a_side_that_disagrees_with_itself_is_reported_non_deterministic(tmp_path):
    case = write_case(tmp_path / "cases", "noisy", NOISY)
    outcome = check_case(case, golden_dir=tmp_path / "golden", out_dir=tmp_path / "out")
    assert [r.ok for r in outcome.checks] == [True]  # conformance holds
    engine = outcome.goldens["engine"]
    assert engine.status == "nondeterministic" and not engine.ok
    assert engine.message == (
        "engine side is non-deterministic: two runs in one process differ"
        " (not a conformance failure)"
    )
    assert outcome.goldens["torch"].status == "missing"  # judged normally
    assert [row.key for row in engine.diff.failures] == ["noise"]
    assert not (tmp_path / "golden" / "noisy" / "engine.json").exists()  # never blessed
    assert (tmp_path / "out" / "noisy" / "engine.rerun.json").is_file()
    assert not outcome.ok


def test_the_rerun_file_goes_once_the_side_is_deterministic_again(tmp_path):
    case = write_case(tmp_path / "cases", "noisy", NOISY)
    run_case(case, tmp_path / "out")
    rerun = tmp_path / "out" / "noisy" / "engine.rerun.json"
    assert rerun.is_file()
    calm = write_case(tmp_path / "cases", "noisy", NOISY.replace("random.Random()", "random"))
    assert run_case(calm, tmp_path / "out").nondeterministic == {}
    assert not rerun.exists()


@pytest.mark.parametrize("repeat", [True, False])
def test_repeat_is_what_detects_it(tmp_path, repeat):
    case = write_case(tmp_path / "cases", "noisy", NOISY)
    run = run_case(case, tmp_path / "out", repeat=repeat)
    assert ("engine" in run.nondeterministic) is repeat


def test_no_repeat_on_the_command_line_runs_each_side_once(tmp_path):
    """--no-repeat: one run per side, so the noisy side is judged as any other (its golden is
    missing here), and no rerun file is written."""
    import json

    import compare

    write_case(tmp_path / "cases", "noisy", NOISY)
    folders = [f"--cases-dir={tmp_path / 'cases'}", f"--golden-dir={tmp_path / 'golden'}"]
    statuses = {}
    for flag in ([], ["--no-repeat"]):
        out, report = tmp_path / f"out{len(flag)}", tmp_path / f"report{len(flag)}.json"
        code = compare.main([*folders, f"--out={out}", f"--json={report}", "-q", *flag])
        (case,) = json.loads(report.read_text())["cases"]
        engine = next(g for g in case["goldens"] if g["side"] == "engine")
        statuses[tuple(flag)] = code, engine["status"]
        assert (out / "noisy" / "engine.rerun.json").exists() is not flag
    assert statuses == {(): (1, "nondeterministic"), ("--no-repeat",): (1, "missing")}


@pytest.mark.parametrize("repeat", [True, False])
def test_the_worker_tasks_run_each_side_as_often_as_the_settings_say(tmp_path, monkeypatch, repeat):
    """A forked run's tasks (harness.session): the float32 half and the float64 half."""
    from harness import runner, session

    write_case(tmp_path / "cases", "noisy", NOISY.replace("_side():", "_side(dtype=None):"))
    runs = []
    real = runner.run_side

    def counted(case, side, threads, dtype=None):
        runs.append((side, dtype))
        return real(case, side, threads, dtype)

    monkeypatch.setattr(runner, "run_side", counted)
    settings = session.Settings(repeat=repeat)
    dirs = session.Dirs(cases=tmp_path / "cases", golden=tmp_path / "g", out=tmp_path / "o")
    session.run_by_name("noisy", settings, dirs)
    session.float64_by_name("noisy", settings, dirs)
    once = [("torch", None), ("engine", None), ("torch", "float64"), ("engine", "float64")]
    explained = [("engine", None), ("engine", "float64")]  # once: runner.explained_run
    assert sorted(runs, key=str) == sorted(once * (2 if repeat else 1) + explained, key=str)


def test_torch_threads_are_pinned_for_the_engine_side_too():
    """An engine side that builds its weights with torch runs torch on one thread as well."""
    import torch

    from harness.pinning import pinned

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pinned("engine", 1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
