"""The numerics profile (harness.numerics): which profile a machine gets, that entering it sets
what decides the bits before numpy and torch load, and that it reports what really holds.

Processes that must start without numpy run as children: this test process already has the
profile of its session in force (the plugin put it there at start-up).
"""

import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness import numerics
from harness.project import ConfigError, read_project

ROOT = Path(__file__).resolve().parents[1]
V3_FLAGS = frozenset(["avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm", "sse4_2"])
PROFILE_VARS = [*numerics.VARIABLES, numerics.MARKER]


def child(code: str, env_extra: dict | None = None, clear=PROFILE_VARS) -> dict:
    """Run ``code`` in a fresh interpreter without the profile's variables; its JSON output."""
    env = {k: v for k, v in os.environ.items() if k not in clear}
    env.update(env_extra or {})
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(done.stdout)


def test_portable_means_the_cpu_class_of_the_machine(monkeypatch):
    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    assert numerics.portable_profile(V3_FLAGS) is numerics.X86_64_V3
    assert numerics.portable_profile(V3_FLAGS - {"fma"}) is numerics.X86_64_V2
    assert numerics.portable_profile(frozenset()) is numerics.X86_64_V2
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    assert numerics.portable_profile(V3_FLAGS) is None  # no pinned profile there yet: native


def test_choices_resolve_and_an_unknown_one_is_named():
    assert numerics.resolve("native") is None
    assert numerics.resolve("x86-64-v2") is numerics.X86_64_V2
    with pytest.raises(numerics.NumericsError) as info:
        numerics.resolve("fast", where="pyproject.toml: numerics")
    assert str(info.value) == (
        "pyproject.toml: numerics: unknown numerics 'fast' (known: portable, native, x86-64-v3,"
        " x86-64-v2)"
    )
    assert numerics.choice_in(["-q", "--numerics", "native"]) == "native"
    assert numerics.choice_in(["--numerics=x86-64-v2"]) == "x86-64-v2"
    assert numerics.choice_in(["-q"]) is None


ENTER_THEN_IMPORT = """
import json, os
from harness import numerics
entry = numerics.enter({choice!r})
import numpy, torch
print(json.dumps({{"problem": entry.problem, "record": numerics.in_force(),
                  "env": {{k: os.environ.get(k) for k in numerics.VARIABLES}}}}))
"""


def _vendor_from_proc() -> str:
    """The vendor as /proc/cpuinfo states it, read here apart from harness.numerics."""
    proc = Path("/proc/cpuinfo")
    lines = proc.read_text().splitlines() if proc.exists() else []
    found = [line.split(":", 1)[1].strip() for line in lines if line.startswith("vendor_id")]
    return found[0] if found else platform.machine()


@pytest.mark.skipif(numerics.portable_profile() is None, reason="no portable profile here")
def test_entering_the_profile_before_imports_puts_every_part_in_force():
    profile = numerics.portable_profile()
    found = child(ENTER_THEN_IMPORT.format(choice="portable"))
    assert found["problem"] is None
    record = found["record"]
    assert record["profile"] == profile.name
    assert not set(record["numpy_dispatch"]) & set(profile.numpy_off)
    assert record["torch_cpu_capability"] == profile.torch_capability
    assert record["mkl_cbwr"] == "COMPATIBLE"
    assert "cpu" not in record  # under a profile the CPU model does not decide the bits
    # ... but the vendor does: MKL runs other code on AMD than on Intel under COMPATIBLE
    assert record["cpu_vendor"] == _vendor_from_proc()
    assert {k: v for k, v in found["env"].items() if v is not None} == dict(profile.env)


def test_native_clears_what_a_parent_profile_set_and_keeps_what_was_set_by_hand():
    inherited = {**numerics.X86_64_V3.env, numerics.MARKER: "x86-64-v3"}
    found = child(ENTER_THEN_IMPORT.format(choice="native"), inherited)
    assert found["env"] == dict.fromkeys(numerics.VARIABLES)
    assert found["record"]["profile"] == "native"
    assert "cpu" in found["record"]
    by_hand = child(ENTER_THEN_IMPORT.format(choice="native"), {"MKL_CBWR": "AVX2"})
    assert by_hand["env"]["MKL_CBWR"] == "AVX2"
    assert by_hand["record"]["mkl_cbwr"] == "AVX2"


def test_a_profile_asked_for_after_numpy_loaded_changes_nothing_and_says_so():
    code = """
import json, os, numpy
from harness import numerics
entry = numerics.enter("x86-64-v2")
print(json.dumps({"problem": entry.problem, "profile": numerics.in_force()["profile"],
                  "env": os.environ.get("ATEN_CPU_CAPABILITY")}))
"""
    found = child(code)
    assert found == {
        "problem": "numerics x86-64-v2 requested, but numpy was imported before it could be"
        " set: this run keeps the settings it started with",
        "profile": "native",
        "env": None,
    }


def test_variables_set_by_hand_without_the_marker_are_not_called_a_profile():
    code = "import json; from harness import numerics; print(json.dumps(numerics.in_force()))"
    record = child(code, dict(numerics.X86_64_V2.env))
    assert record["profile"] == "native"  # the same values, but no profile put them there


def test_the_setting_is_validated_where_it_is_read(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.conformance]\nnumerics = "native"\n')
    assert read_project(pyproject).numerics == "native"
    pyproject.write_text('[tool.conformance]\nnumerics = "fast"\n')
    with pytest.raises(ConfigError) as info:
        read_project(pyproject)
    assert str(info.value) == (
        f"{pyproject}: tool.conformance.numerics: unknown 'fast' (known: portable, native,"
        " x86-64-v3, x86-64-v2)"
    )


def test_the_command_refuses_an_unknown_choice_in_one_line():
    done = subprocess.run(
        [sys.executable, "compare.py", "--case", "train_step", "--numerics", "fast"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "compare.py: error: --numerics: unknown numerics 'fast' (known: portable, native,"
        " x86-64-v3, x86-64-v2)\n"
    )


def test_pytest_names_the_numerics_in_force_in_its_header(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text('[tool.conformance]\nnumerics = "native"\n')
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in PROFILE_VARS},
    )
    assert done.returncode == 0, done.stdout
    header = [line for line in done.stdout.splitlines() if line.startswith("conformance")]
    assert len(header) == 1
    assert header[0].startswith("conformance numerics: native (numpy ")


def test_a_child_runs_the_numerics_its_parent_entered_unless_told_otherwise():
    """xdist's workers and compare.py run by a test see no --numerics of the parent's command
    line: they follow the parent's choice (its marker), and an explicit choice still wins."""
    code = """
import json, sys
from pathlib import Path
from harness.project import enter_numerics
entry = enter_numerics(sys.argv[1:], Path.cwd())
print(json.dumps(entry.profile.name if entry.profile else "native"))
"""
    env = {k: v for k, v in os.environ.items() if k not in PROFILE_VARS}
    env[numerics.MARKER] = "native"
    for args, expected in (([], "native"), (["--numerics", "x86-64-v2"], "x86-64-v2")):
        done = subprocess.run(
            [sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True,
            text=True, check=True,
        )  # fmt: skip
        assert json.loads(done.stdout) == expected


def test_the_makefile_gets_the_emulated_cpus_as_shell_words():
    """`python -m harness.numerics NAME` prints what the Makefile passes to `env`: a shell
    reads it back as the same variables (the quoted numpy list among them)."""
    for name, env in numerics.EMULATED_CPUS.items():
        done = subprocess.run(
            [sys.executable, "-m", "harness.numerics", name],
            capture_output=True, text=True, cwd=ROOT, check=True,
        )  # fmt: skip
        words = shlex.split(done.stdout)
        assert dict(w.split("=", 1) for w in words) == dict(env), name
    unknown = subprocess.run(
        [sys.executable, "-m", "harness.numerics", "avx512"], capture_output=True, text=True
    )
    assert unknown.returncode == 1 and "avx2|baseline" in unknown.stderr


def test_the_emulated_avx2_cpu_runs_avx2_code_everywhere():
    """An AVX2 CPU: numpy's AVX-512 targets off and torch at AVX2 in a fresh process (what a
    child sees when the variables are set before it starts), MKL on its AVX2 branch."""
    avx2 = numerics.EMULATED_CPUS["avx2"]
    assert avx2["MKL_CBWR"] == "AVX2" and avx2["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert numerics.EMULATED_CPUS["baseline"] == numerics.X86_64_V2.env
    code = (
        "import json, torch; from numpy._core._multiarray_umath import __cpu_features__ as f; "
        "print(json.dumps({'on': [t for t in f if f[t]], "
        "'torch': str(torch.backends.cpu.get_cpu_capability())}))"
    )
    found = child(code, dict(avx2))
    assert not set(numerics.AVX512) & set(found["on"]), found
    if "avx2" in numerics.cpu_flags():
        assert found["torch"] == "AVX2"
