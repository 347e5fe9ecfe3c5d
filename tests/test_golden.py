"""The golden workflow: create, pass, mismatch with .obtained, update, refuse, stale report."""

import json
from pathlib import Path

import numpy as np
import pytest

from harness import environment, golden, prune, record
from harness.case import SIDES, Case, agree, load_case
from harness.report.text import render_golden
from harness.runner import check_case

ENV = {"numpy": "2.4.6", "python": "3.11.7", "torch": "2.13.0"}


# A case with no checks and no tolerance overrides: goldens are judged by the default table.
DEMO = Case("demo", "", Path("demo.py"), dict, dict, (), {})


def side_text(values, env=ENV):
    return record.dumps_side("demo", "engine", record.normalize(values), env)


def decoded(text, tmp_path):
    path = tmp_path / "scratch.json"
    path.write_text(text)
    return record.read_side(path).values


@pytest.fixture
def golden_dir(tmp_path):
    return tmp_path / "golden"


def test_missing_golden_fails_and_is_written(golden_dir, tmp_path):
    text = side_text({"y": np.array([1.0, 2.0], np.float32)})
    result = golden.check_golden(DEMO, "engine", text, decoded(text, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("missing", False)
    assert (golden_dir / "demo" / "engine.json").read_text() == text


def test_identical_golden_passes(golden_dir, tmp_path):
    text = side_text({"y": np.array([1.0, 2.0], np.float32)})
    golden.check_golden(DEMO, "engine", text, decoded(text, tmp_path), golden_dir)
    result = golden.check_golden(DEMO, "engine", text, decoded(text, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("identical", True)


def test_identical_golden_is_not_decoded(golden_dir, tmp_path, monkeypatch):
    """Equal bytes settle it: the common case costs one read and no parse of the golden."""
    text = side_text({"y": np.array([1.0, 2.0], np.float32)})
    values = decoded(text, tmp_path)
    golden.check_golden(DEMO, "engine", text, values, golden_dir)

    def no_parse(*args, **kwargs):
        raise AssertionError("the identical golden was decoded")

    monkeypatch.setattr(record, "read_side", no_parse)
    result = golden.check_golden(DEMO, "engine", text, values, golden_dir)
    assert (result.status, result.env) == ("identical", ENV)


def test_mismatch_writes_obtained_and_keeps_golden(golden_dir, tmp_path):
    old = side_text({"y": np.array([1.0, 2.0], np.float32)})
    new = side_text({"y": np.array([1.0, 3.0], np.float32)})
    golden.check_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    result = golden.check_golden(DEMO, "engine", new, decoded(new, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("mismatch", False)
    assert (golden_dir / "demo" / "engine.json").read_text() == old
    assert (golden_dir / "demo" / "engine.obtained.json").read_text() == new
    # A later passing run removes the stale .obtained file.
    golden.check_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    assert not (golden_dir / "demo" / "engine.obtained.json").exists()


def one_ulp_up(x):
    return np.nextafter(np.float32(x), np.float32(np.inf))


def test_last_bit_change_needs_identity_only_in_same_environment(golden_dir, tmp_path):
    old = side_text({"y": np.array([1.0], np.float32)})
    golden.check_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)

    same_env = side_text({"y": np.array([one_ulp_up(1.0)], np.float32)})
    result = golden.check_golden(DEMO, "engine", same_env, decoded(same_env, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("mismatch", False)
    assert "environment fingerprint matches" in result.message

    other_env = side_text({"y": np.array([one_ulp_up(1.0)], np.float32)}, {**ENV, "numpy": "9.9"})
    result = golden.check_golden(
        DEMO, "engine", other_env, decoded(other_env, tmp_path), golden_dir
    )
    assert (result.status, result.ok) == ("within_tol", True)
    assert result.message == (
        "written on numpy 2.4.6; this machine numpy 9.9; compared within tolerance, not bit for bit"
    )


V3 = {
    "profile": "x86-64-v3",
    "numpy_dispatch": ["X86_V3"],
    "torch_cpu_capability": "AVX2",
    "mkl_cbwr": "COMPATIBLE",
    "onednn_max_cpu_isa": "AVX2",
    "libm": "glibc 2.36",
}
NATIVE = {
    **V3,
    "profile": "native",
    "numpy_dispatch": ["X86_V3", "X86_V4"],
    "torch_cpu_capability": "AVX512",
    "mkl_cbwr": "AUTO",
    "cpu": "GenuineIntel family 6 model 143",
}


def test_a_golden_from_another_cpu_vendor_under_the_same_profile_is_compared_within_tolerance(
    golden_dir, tmp_path
):
    """MKL runs other code on AMD than on Intel under MKL_CBWR=COMPATIBLE (harness.numerics),
    so the same profile on another vendor is not a matching fingerprint."""
    intel = {**V3, "cpu_vendor": "GenuineIntel"}
    old = side_text({"y": np.array([1.0], np.float32)}, {**ENV, "numerics": intel})
    golden.check_golden(DEMO, "torch", old, decoded(old, tmp_path), golden_dir)
    amd = {**V3, "cpu_vendor": "AuthenticAMD"}
    fresh = side_text({"y": np.array([one_ulp_up(1.0)], np.float32)}, {**ENV, "numerics": amd})
    result = golden.check_golden(DEMO, "torch", fresh, decoded(fresh, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("within_tol", True)
    assert "MKL COMPATIBLE on GenuineIntel" in result.message
    assert "MKL COMPATIBLE on AuthenticAMD" in result.message
    same = side_text({"y": np.array([one_ulp_up(1.0)], np.float32)}, {**ENV, "numerics": intel})
    result = golden.check_golden(DEMO, "torch", same, decoded(same, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("mismatch", False)  # same vendor: bits must hold


def test_a_golden_of_other_numerics_is_compared_within_tolerance_and_says_so(golden_dir, tmp_path):
    old = side_text({"y": np.array([1.0], np.float32)}, {**ENV, "numerics": V3})
    golden.check_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    fresh = side_text({"y": np.array([one_ulp_up(1.0)], np.float32)}, {**ENV, "numerics": NATIVE})
    result = golden.check_golden(DEMO, "engine", fresh, decoded(fresh, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("within_tol", True)
    assert result.message == (
        "written on numerics x86-64-v3 (numpy X86_V3, torch AVX2, MKL COMPATIBLE, oneDNN AVX2,"
        " glibc 2.36); this machine numerics native (numpy X86_V3 X86_V4, torch AVX512,"
        " MKL AUTO, oneDNN AVX2, glibc 2.36, GenuineIntel family 6 model 143);"
        " compared within tolerance, not bit for bit"
    )
    beyond = side_text({"y": np.array([1.5], np.float32)}, {**ENV, "numerics": NATIVE})
    result = golden.check_golden(DEMO, "engine", beyond, decoded(beyond, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("mismatch", False)
    assert result.message.startswith(
        "values differ from the golden beyond tolerance (written on numerics x86-64-v3 ("
    )
    assert "fingerprint matches" not in result.message


def test_update_reports_change_and_rewrites(golden_dir, tmp_path):
    old = side_text({"y": np.array([1.0, 2.0], np.float32)})
    new = side_text({"y": np.array([1.0, 2.5], np.float32)})
    created = golden.update_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    assert created.status == "created"
    unchanged = golden.update_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    assert unchanged.status == "unchanged"
    updated = golden.update_golden(DEMO, "engine", new, decoded(new, tmp_path), golden_dir)
    assert updated.status == "updated"
    assert updated.diff.rows[0].max_abs == pytest.approx(0.5)
    assert (golden_dir / "demo" / "engine.json").read_text() == new


def test_unreadable_golden_is_reported_not_raised(golden_dir, tmp_path):
    text = side_text({"y": np.array([1.0], np.float32)})
    path = golden_dir / "demo" / "engine.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"format": 1, "values": {')
    result = golden.check_golden(DEMO, "engine", text, decoded(text, tmp_path), golden_dir)
    assert (result.status, result.ok) == ("unreadable", False)
    assert str(path) in result.message


def test_stale_goldens_are_listed(golden_dir):
    (golden_dir / "kept").mkdir(parents=True)
    (golden_dir / "deleted_case").mkdir()
    scan = prune.scan(golden_dir, {"kept"}, SIDES)
    assert scan == prune.Scan(stale=(golden_dir / "deleted_case",))


CASE_BODY = '''"""A tiny case for the workflow tests."""
import numpy as np
from harness.case import agree

def torch_side():
    return {{"y": np.array([1.0, 2.0], np.float32)}}

def engine_side():
    return {{"y": np.array([1.0, {engine_y}], np.float32)}}

CHECKS = [agree("y")]
'''


def write_case(tmp_path: Path, engine_y: float) -> Case:
    path = tmp_path / "cases" / "tiny.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(CASE_BODY.format(engine_y=engine_y))
    return load_case(path)


def test_update_refuses_a_case_whose_agree_checks_fail(tmp_path):
    case = write_case(tmp_path, engine_y=3.0)
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    refused = check_case(case, update=True, **dirs)
    for side in SIDES:
        assert refused.goldens[side].status == "refused"
        assert (
            refused.goldens[side].message
            == "refusing to bless tiny: its agree checks fail (fix them, or pass --force)"
        )
    assert not (tmp_path / "golden" / "tiny").exists()

    forced = check_case(case, update=True, force=True, **dirs)
    assert all(forced.goldens[side].status == "created" for side in SIDES)


def test_full_cycle_through_outcomes(tmp_path):
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    case = write_case(tmp_path, engine_y=2.0)
    first = check_case(case, **dirs)
    assert [first.goldens[s].status for s in SIDES] == ["missing", "missing"]
    assert not first.ok
    second = check_case(case, **dirs)
    assert second.ok
    out = json.loads((tmp_path / "out" / "tiny" / "engine.json").read_text())
    assert out["values"]["y"]["data"] == [1.0, 2.0]
    assert isinstance(case.checks[0], type(agree("y")))


def test_fingerprint_covers_versions_blas_and_threads_of_the_real_environment():
    env = environment.probe()
    fingerprint = environment.fingerprint(env)
    assert set(fingerprint) == {
        "torch", "torch_threads", "numpy", "python", "platform", "blas", "numerics"
    }  # fmt: skip
    assert all(fingerprint[key] == env[key] for key in fingerprint)
    assert environment.fingerprint({**env, "numpy": "0.0"}) != fingerprint
    # Each thing that decides the bits is in the numerics record, as this process has it.
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    assert set(env["numerics"]) >= {
        "profile", "numpy_dispatch", "torch_cpu_capability", "mkl_cbwr", "onednn_max_cpu_isa",
        "libm",
    }  # fmt: skip
    assert env["numerics"]["numpy_dispatch"] == [t for t in __cpu_dispatch__ if __cpu_features__[t]]
    import torch

    assert env["numerics"]["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_update_report_says_what_changed_without_calling_it_a_failure(golden_dir, tmp_path):
    old = side_text({"y": np.array([1.0, 2.0], np.float32)})
    new = side_text({"y": np.array([1.0, 2.5], np.float32)})
    golden.update_golden(DEMO, "engine", old, decoded(old, tmp_path), golden_dir)
    updated = golden.update_golden(DEMO, "engine", new, decoded(new, tmp_path), golden_dir)
    text = render_golden(updated)
    assert "FAIL" not in text
    assert "y                        n=  2  max|diff|=5.00e-01" in text
    assert text.splitlines()[-1] == "worst=5.00e-01 tol=1e-06 CHANGED (1 of 1 keys)"
