"""The weight importers against hostile files (issue 22): every file `hostile_weights` builds is
loaded in one child process under an address-space limit; none may end in a traceback (each
load succeeds or raises its importer's own error, with the fragment the case names), none may
run code (the canary a malicious global would create stays absent), and the child's peak
memory stays below 512 MiB above its baseline whatever the files claim (1 GiB records,
2**62-element storages, 2**40-element views, millions of CBOR items).

The bound is the child's own peak RSS (`getrusage(RUSAGE_SELF).ru_maxrss`) at the end, minus
the peak after its imports (interpreter, NumPy, the engine, safetensors): one child loads all
files, so the peak covers the worst of them. The address-space limit (2 GiB of virtual memory
in all; the child maps ~115 MB after its imports, with OPENBLAS_NUM_THREADS=1) makes a runaway
allocation fail as a MemoryError in the child, counted as a crash, instead of swapping the
machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_weights import CANARY_NAME, hostile_files

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("hostile_weights.py")
PEAK_BOUND_MIB = 512
ADDRESS_SPACE = 2 << 30


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    canary = folder / CANARY_NAME
    cases = hostile_files(str(canary))
    manifest = []
    for case in cases:
        (folder / case.name).write_bytes(case.data)
        manifest.append((case.name, case.reader, str(folder / case.name)))
    special = {"fifo.pt": "pt", "dev_zero.bpk": "bpk", "folder.safetensors": "safetensors"}
    os.mkfifo(folder / "fifo.pt")
    (folder / "dev_zero.bpk").symlink_to("/dev/zero")
    (folder / "folder.safetensors").mkdir()
    manifest += [(name, reader, str(folder / name)) for name, reader in special.items()]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    child = subprocess.run(
        [sys.executable, str(SCRIPT), str(folder / "manifest.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        preexec_fn=_limit_address_space,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return cases, json.loads(child.stdout), canary


def test_no_load_ends_in_a_traceback(loaded):
    cases, report, _ = loaded
    crashes = {n: o["message"] for n, o in report["outcomes"].items() if o["outcome"] == "crash"}
    assert crashes == {}
    assert len(report["outcomes"]) == len(cases) + 3


def test_each_file_fails_with_its_own_one_line_bounded_message(loaded):
    cases, report, _ = loaded
    wrong = {}
    for case in cases:
        outcome = report["outcomes"][case.name]
        if case.expect is None:
            if outcome["outcome"] != "ok":
                wrong[case.name] = outcome
            continue
        message = outcome.get("message", "")
        # The file's path, then the problem: at most a few bounded reprs (200 characters each).
        problem = message.partition(f"{case.name}: ")[2]
        if not (
            outcome["outcome"] == "error"
            and case.expect in message
            and "\n" not in message
            and len(problem) <= 600
        ):
            wrong[case.name] = (case.expect, message[:400])
    assert wrong == {}


def test_special_files_are_refused_without_reading(loaded):
    _, report, _ = loaded
    messages = {n: report["outcomes"][n].get("message", "") for n in ("fifo.pt", "dev_zero.bpk")}
    assert messages["fifo.pt"].endswith("fifo.pt: is a FIFO (named pipe), not a regular file")
    assert messages["dev_zero.bpk"].endswith(
        "dev_zero.bpk: is a character device, not a regular file"
    )
    folder = report["outcomes"]["folder.safetensors"]["message"]
    assert folder.endswith("folder.safetensors: is a directory, expected a weight file")


def test_no_code_runs(loaded):
    cases, _, canary = loaded
    assert sum(c.expect is not None and "refused global" in c.expect for c in cases) >= 30
    assert not canary.exists()


def test_peak_memory_stays_below_the_bound_whatever_the_files_claim(loaded):
    _, report, _ = loaded
    grown_mib = (report["peak_kib"] - report["baseline_kib"]) / 1024
    assert grown_mib < PEAK_BOUND_MIB
