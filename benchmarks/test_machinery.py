"""The benchmark machinery itself: the interleaving order, the rounds budget, the targets table,
and the rule that a target is reported, never asserted (fast; runs with ``make bench``)."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import columns
import pytest
import runs
import table
import targets
from interleave import orders, run_interleaved

from harness import numerics

ROOT = Path(__file__).resolve().parents[1]


class FakeBenchmark:
    """What ``run_interleaved`` uses of pytest-benchmark's fixture."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.extra_info: dict = {}
        self.rounds: int | None = None

    def pedantic(self, fn, rounds=1, iterations=1):
        self.rounds = rounds
        for _ in range(rounds):
            fn()


def logging_sides(log: list[str], names: str) -> dict:
    return {name: (lambda name=name: log.append(name) or name) for name in names}


def test_two_sides_alternate_order_every_round():
    log: list[str] = []
    run_interleaved(
        FakeBenchmark(), logging_sides(log, "AB"), max_time=0.0, min_rounds=4, warmup_rounds=0
    )
    assert log == list("ABBAABBA")


@pytest.mark.parametrize("names", ["ABC", "ABCD", "ABCDE"])
def test_over_a_cycle_each_side_is_first_and_follows_each_other_side_equally_often(names):
    cycle = orders(list(names))
    assert all(sorted(row) == list(names) for row in cycle)
    firsts = Counter(row[0] for row in cycle)
    pairs = Counter((a, b) for row in cycle for a, b in itertools.pairwise(row))
    assert set(firsts.values()) == {len(cycle) // len(names)}
    assert len(pairs) == len(names) * (len(names) - 1) and len(set(pairs.values())) == 1


def test_rounds_follow_the_cycle():
    log: list[str] = []
    bench = FakeBenchmark()
    timings = run_interleaved(
        bench, logging_sides(log, "ABC"), max_time=0.0, min_rounds=4, warmup_rounds=0
    )
    assert log == list("ABCBCACABCBA")
    assert bench.rounds == timings.rounds == 4
    assert timings.results == {"A": "A", "B": "B", "C": "C"}
    assert set(bench.extra_info) == {"median A", "median B", "median C"}


def test_warmup_rounds_are_not_samples_and_the_budget_caps_rounds():
    log: list[str] = []
    timings = run_interleaved(
        FakeBenchmark(), logging_sides(log, "AB"), max_time=10.0, min_rounds=2, max_rounds=7
    )
    assert timings.rounds == 7  # the sides take no time: the cap decides
    assert len(log) == 2 * (7 + 2)  # plus two warm-up rounds


def test_disabled_benchmark_runs_one_round():
    log: list[str] = []
    run_interleaved(
        FakeBenchmark(enabled=False), logging_sides(log, "AB"), max_time=1.0, min_rounds=5
    )
    assert log == ["A", "B"]


def test_value_is_numerator_over_denominator_and_direction_decides():
    measured: dict = {}
    low = targets.record("sgd step tiny / numpy", {"engine": 3.0, "numpy": 1.0}, 9, into=measured)
    high = targets.record(
        "diff 1e7 wide: speed-up",
        {"assert_array_max_ulp": 50.0, "diff_arrays": 10.0},
        3,
        into=measured,
    )
    absolute = targets.record("diff 1e3: time per call", {"diff_arrays": 20e-6}, 5, into=measured)
    assert (low.value, high.value, absolute.value) == (3.0, 5.0, 20e-6)
    assert targets.BY_NAME["sgd step tiny / numpy"].met(low.value) is False  # 3 > 2
    assert targets.BY_NAME["diff 1e7 wide: speed-up"].met(high.value) is False  # 5 < 10
    assert targets.BY_NAME["diff 1e3: time per call"].met(absolute.value) is True


def test_summary_prints_met_missed_and_not_run():
    measured: dict = {}
    targets.record("sgd step tiny / numpy", {"engine": 3.0, "numpy": 1.0}, 9, into=measured)
    targets.record("json 1e6 / orjson", {"record write+read": 1.0, "orjson round trip": 1.0}, 2,
                   into=measured)  # fmt: skip
    lines = table.summary_lines(measured, {"at end": (1.0, 2.0, 3.0)})
    by_name = {line.split("  ")[0]: line for line in lines if " | " in line}
    assert re.search(r"<= 2x +3x +missed \| - +-$", by_name["sgd step tiny / numpy"])
    assert re.search(r"<= 3x +1x +met +\| - +-$", by_name["json 1e6 / orjson"])
    assert any(line.startswith("not run in this session: adam 20 steps / torch;") for line in lines)
    footer = " ".join(lines[-2:])
    assert footer.startswith("2 measured, 1 missed (native 1, AVX2 0), 0 with a verdict")
    assert footer.endswith("Load at end 1.00 2.00 3.00.")


def test_unknown_target_is_an_error():
    with pytest.raises(KeyError):
        targets.record("no such target", {"engine": 1.0}, 1, into={})


def test_targets_are_complete_rows():
    assert len(targets.BY_NAME) == len(targets.TARGETS)
    for t in targets.TARGETS:
        assert t.measures and t.numerator and t.direction in ("<=", ">=")
        assert t.bound is None or t.bound > 0, t.name


def test_no_benchmark_asserts_a_target():
    """A missed target is reported in the table, never a failure (the CI hook's rule)."""
    pattern = re.compile(r"assert\s.*(ratio|speedup|speed_up|\.value\b|TARGETS|bound)")
    for path in sorted(Path(__file__).parent.glob("bench_*.py")):
        hits = [line for line in path.read_text().splitlines() if pattern.search(line)]
        assert not hits, (path.name, hits)


# ---- the AVX2 column (columns.py, table.py) and several runs (runs.py) -------------------


def every_target() -> dict:
    """Every target and its twin measured, each side's median 123.4 s or 123.4 MiB (the widest
    cells a run prints: a ratio's value is 1x)."""
    measured: dict = {}
    for t in targets.TARGETS:
        value = 123.4 * 2**20 if t.unit == "B" else 123.4
        sides = {t.numerator: value} | ({t.denominator: value} if t.denominator else {})
        targets.record(t.name, sides, 3, into=measured)
    return measured


def test_table_aligns_both_columns_within_100_characters():
    measured = every_target()
    targets.record("sgd step tiny / numpy, AVX2", {"engine": 1.0, "numpy": 1.0}, 3, into=measured)
    del measured["json 1e6 / orjson, AVX2"]
    lines = table.verdict_lines(measured)
    assert len(lines) == 2 + len(targets.NATIVE)
    bars = {line.index(" | ") for line in lines}
    assert len(bars) == 1, lines  # one column boundary, the header's too
    assert lines[0].index("native") == lines[1].index("measured")
    assert lines[0].index("AVX2") == lines[1].rindex("measured")
    assert max(map(len, lines)) <= table.WIDTH, max(lines, key=len)
    rows = {line.split("  ")[0]: line for line in lines[2:]}
    # 1x against "<= 2x" natively: met; the AVX2 twin given 1.0 / 1.0 as well: same verdict
    assert re.search(r"<= 2x +1x +met +\| 1x +met$", rows["sgd step tiny / numpy"])
    assert re.search(r"\| - +-$", rows["json 1e6 / orjson"])  # not measured: no verdict
    # a quantity of 123.4 MiB against 32 MiB: missed in both columns
    assert re.search(r"123.4 MiB missed \| 123.4 MiB missed$", rows["diff memmap 5e7: traced peak"])


def test_a_verdict_that_depends_on_the_cpu_is_marked():
    measured: dict = {}
    targets.record("adam 20 steps / torch", {"engine": 0.9, "torch": 1.0}, 3, into=measured)
    targets.record("adam 20 steps / torch, AVX2", {"engine": 1.2, "torch": 1.0}, 3, into=measured)
    targets.record("cnn step b64 / torch", {"engine": 1.0, "torch": 1.0}, 3, into=measured)
    targets.record("cnn step b64 / torch, AVX2", {"engine": 1.1, "torch": 1.0}, 3, into=measured)
    rows = table.verdict_lines(measured)[2:]
    assert rows[0].endswith("met    | 1.2x     missed*"), rows
    assert rows[1].endswith("met    | 1.1x     met"), rows
    assert "1 with a verdict that depends on the CPU" in table.counts(measured)


def test_details_name_both_columns_and_the_shared_note_once():
    measured: dict = {}
    note = "AVX-512 off, torch AVX2"
    targets.record("sgd step tiny / numpy", {"engine": 2e-3, "numpy": 1e-3}, 9, into=measured)
    targets.record("sgd step tiny / torch", {"engine": 2e-3, "numpy": 1e-3, "torch": 4e-3}, 9,
                   into=measured)  # fmt: skip
    twin = {"engine": 3e-6, "numpy": 1e-6, "torch": 4e-6}
    for name in ("sgd step tiny / numpy, AVX2", "sgd step tiny / torch, AVX2"):
        targets.record(name, twin, 7, note=f"{note}; 2 CPUs", into=measured)
    lines = table.summary_lines(measured, {})
    start = lines.index("sgd step tiny / numpy")
    assert lines[start + 1 : start + 3] == [
        "    native  engine 2.0 ms, numpy 1.0 ms (9)",
        "    AVX2    engine 3.0 us, numpy 1.0 us, torch 4.0 us (7); 2 CPUs",
    ]
    # the torch row: its native medians differ from the row above, its AVX2 ones do not
    assert lines[start + 4 : start + 6] == [
        "    native  engine 2.0 ms, numpy 1.0 ms, torch 4.0 ms (9)",
        "    AVX2    (the rounds of the row above)",
    ]
    assert f"AVX2 column, every child process: {note}" in lines


def test_avx2_environment_turns_every_avx512_kernel_off():
    """The AVX2 column's variables: numpy's three AVX-512 targets off (numpy 2.4 needs all
    three named), torch, oneDNN, MKL and OpenBLAS at AVX2; one definition, in harness.numerics,
    that the Makefile prints rather than repeats."""
    env = targets.AVX2_ENV
    assert set(env["NPY_DISABLE_CPU_FEATURES"].split()) == set(numerics.AVX512)
    assert (env["ATEN_CPU_CAPABILITY"], env["ONEDNN_MAX_CPU_ISA"]) == ("avx2", "AVX2")
    assert (env["MKL_CBWR"], env["OPENBLAS_CORETYPE"]) == ("AVX2", "Haswell")
    makefile = (ROOT / "Makefile").read_text()
    assert "NPY_DISABLE_CPU_FEATURES" not in makefile
    assert "$(shell $(BIN)/python -m harness.numerics avx2)" in makefile


def test_cpu_note_says_which_avx512_kernels_were_on():
    off = dict.fromkeys(numerics.AVX512, False)
    assert columns.cpu_note(off | {"AVX2": True}, "AVX2") == "AVX-512 off, torch AVX2"
    on = off | {"AVX512_ICL": True, "AVX512_SPR": True}
    assert columns.cpu_note(on, "AVX512") == "AVX-512 on (AVX512_ICL AVX512_SPR), torch AVX512"


def test_a_benchmark_that_times_its_own_avx2_twin_is_not_run_again():
    recorded = ["diff 1e3: time per call", "diff 1e3: time per call, AVX2", "sgd step tiny / numpy"]
    assert columns.still_wanted(recorded) == ["sgd step tiny / numpy"]
    assert columns.still_wanted(["adam 20 steps / torch, AVX2"]) == []


class ChildConfig:
    """The options ``columns.run_child`` passes on: a short budget."""

    def getoption(self, name: str):
        return {"benchmark_min_rounds": 2, "benchmark_max_time": "0.05"}[name]


def test_child_runs_the_benchmark_under_the_emulated_cpu():
    """A real child, under the x86-64 baseline CPU rather than AVX2 so that the emulation
    shows on any x86-64 machine (this one has no AVX-512): torch reads the environment before
    it loads, the child measures the test's targets and says what held."""
    if not {"avx2", "fma"} <= numerics.cpu_flags():
        pytest.skip("the baseline emulation turns off AVX2, which this CPU lacks already")
    nodeid = "benchmarks/bench_train_step.py::test_sgd_step[tiny]"
    measured = columns.run_child(nodeid, ChildConfig(), numerics.EMULATED_CPUS["baseline"])
    assert set(measured) == {
        "sgd step tiny / numpy",
        "sgd step tiny / torch",
        "sgd step tiny tape / numpy",
    }
    for m in measured.values():
        assert m.note == "AVX-512 off, torch DEFAULT", m.note
        assert m.rounds >= 2 and set(m.medians) == {"engine", "tape", "torch", "numpy"}


def test_a_failing_child_fails_the_benchmark():
    with pytest.raises(columns.ChildFailed, match="exit 4"):  # pytest's usage error: no such test
        columns.run_child("benchmarks/test_machinery.py::no_such_test", ChildConfig())


def test_median_of_runs_from_given_runs():
    def run(*values: float) -> dict:
        measured: dict = {}
        names = ("adam 20 steps / torch", "adam 20 steps / torch, AVX2", "cnn step b64 / torch")
        for name, v in zip(names, values, strict=False):
            targets.record(name, {"engine": v, "torch": 1.0}, 5, into=measured)
        return measured

    merged = table.median_of_runs([run(3.0, 0.5, 1.0), run(1.0, 0.7), run(2.0, 0.9, 4.0)])
    assert merged["adam 20 steps / torch"].value == 2.0  # of 3, 1, 2
    assert merged["adam 20 steps / torch"].rounds == 15
    assert merged["adam 20 steps / torch, AVX2"].value == 0.7
    assert merged["cnn step b64 / torch"].value == 2.5  # of the two runs that measured it
    assert merged["cnn step b64 / torch"].note == "2 of 3 runs"


def test_runs_script_reads_what_runs_wrote(tmp_path, capsys):
    paths = []
    for i, (value, load) in enumerate(((1.2, 0.5), (0.8, 1.5), (0.9, 2.5)), start=1):
        measured: dict = {}
        targets.record("adam 20 steps / torch", {"engine": value, "torch": 1.0}, 3, into=measured)
        targets.record("adam 20 steps / torch, AVX2", {"engine": 1.0, "torch": 1.0}, 3,
                       into=measured)  # fmt: skip
        path = tmp_path / f"run-{i}.json"
        path.write_text(json.dumps(targets.as_json(measured, {"at start": (load, 0.0, 0.0)})))
        paths.append(str(path))
    assert runs.main(paths) == 0
    first = capsys.readouterr().out
    assert runs.main(paths) == 0
    assert capsys.readouterr().out == first  # deterministic
    lines = first.splitlines()
    assert lines[0] == "median of 3 runs' values (run-1, run-2, run-3):"
    assert re.search(r"<= 1x +0.9x +met +\| 1x +met$", lines[3]), lines
    assert "adam 20 steps / torch: native 1.2x 0.8x 0.9x | AVX2 1x 1x 1x" in lines
    assert lines[-3:] == [
        "    run-1: at start 0.50 0.00 0.00",
        "    run-2: at start 1.50 0.00 0.00",
        "    run-3: at start 2.50 0.00 0.00",
    ]


def test_a_run_file_with_an_unknown_target_is_an_error():
    data = {"load": {}, "measured": {"gone": {"value": 1, "medians": {}, "rounds": 1}}}
    with pytest.raises(KeyError, match="gone"):
        targets.from_json(data)


def test_a_child_starts_as_the_parent_started_but_for_the_cpu():
    now = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "HOME": "/root", "MKL_CBWR": "X"}
    started_with = {"OMP_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": "4"}
    env = columns.child_env(now, started_with, {"MKL_CBWR": "AVX2"})
    assert env == {"OPENBLAS_NUM_THREADS": "4", "HOME": "/root", "MKL_CBWR": "AVX2"}
    assert now["OMP_NUM_THREADS"] == "1"  # the parent's own environment is left alone
