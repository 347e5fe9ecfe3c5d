"""Summary-only goldens (GOLDEN_SUMMARY): a bulky key's golden keeps dtype, shape, sha256 and
summary statistics; bit-identical output still passes bit for bit, any other output under the
golden's own fingerprint fails, and under other numerics only the summary is compared."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness import golden, record
from harness.case import Case, CaseDefinitionError, golden_summary_of, load_case
from harness.summary import summarize
from harness.testing import GoldenTarget, check_values

ENV = {"numpy": "2.4.6", "python": "3.11.7", "torch": "2.13.0"}
OTHER = {**ENV, "numpy": "9.9"}  # another fingerprint: other numerics
BULKY = Case("demo", "", Path("demo.py"), dict, dict, (), {}, golden_summary=("params.*",))
N = 100_000
STAT_ROWS = [f"params.w:{s}" for s in ("min", "max", "mean", "l2", "nan", "inf")]


def weights() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, N).astype(np.float32)


def values(w: np.ndarray) -> dict:
    return {"loss": np.array([0.25], np.float32), "params.w": w}


def check(w: np.ndarray, golden_dir: Path, env=ENV, case=BULKY):
    fresh = record.normalize(values(w))
    text = record.side_text(case.name, "engine", fresh, env)
    return golden.check_golden(case, "engine", text, fresh, golden_dir)


@pytest.fixture
def golden_dir(tmp_path):
    check(weights(), tmp_path / "golden")  # the golden: missing, so written
    return tmp_path / "golden"


def golden_file(golden_dir: Path) -> Path:
    return golden.golden_path(golden_dir, "demo", "engine")


def test_the_golden_of_a_summarised_key_holds_no_data(golden_dir):
    path = golden_file(golden_dir)
    assert path.stat().st_size < 600  # the sidecar of the same key: 400 kB
    assert sorted(p.name for p in path.parent.iterdir()) == ["engine.json"]
    entry = json.loads(path.read_text())["values"]["params.w"]
    w = weights()
    assert entry["sha256"] == hashlib.sha256(w.tobytes()).hexdigest()
    assert entry["summary_only"] is True and "sidecar" not in entry
    assert (entry["dtype"], entry["shape"]) == ("float32", [N])
    assert entry["summary"]["min"] == float(w.min()) and entry["summary"]["max"] == float(w.max())
    np.testing.assert_allclose(entry["summary"]["mean"], w.astype(np.float64).mean(), rtol=1e-9)


def test_bit_identical_output_passes_as_bit_identical(golden_dir):
    result = check(weights(), golden_dir)
    assert (result.status, result.ok, result.message) == ("identical", True, "bit-identical")
    result = check(weights(), golden_dir, env=OTHER)  # text differs (env), bytes the same
    assert (result.status, result.ok) == ("equal_values", True)
    assert "summary only" not in result.message


def one_ulp_up_at(w: np.ndarray, i: int) -> np.ndarray:
    w = w.copy()
    w[i] = np.nextafter(w[i], np.float32(np.inf))
    return w


def test_one_ulp_under_the_same_fingerprint_fails(golden_dir):
    result = check(one_ulp_up_at(weights(), 7), golden_dir)
    obtained = golden.obtained_path(golden_dir, "demo", "engine")
    assert (result.status, result.ok) == ("mismatch", False)
    assert result.message == (
        "not bit-identical although the environment fingerprint matches the golden's;"
        " summary only (GOLDEN_SUMMARY) for params.w: sha256 differs; min/max/mean/l2 within"
        f" tolerance and nan/inf counts equal; elements not compared; wrote {obtained}"
    )
    rows = {r.key: r for r in result.diff.rows}
    assert list(rows) == ["loss", *STAT_ROWS]
    assert [r.ok for r in rows.values()] == [True] * 7  # only the bytes differ
    assert not any(rows[k].bit_identical for k in STAT_ROWS)
    # the .obtained file keeps every element, for the reviewer
    kept = record.read_side(obtained).values["params.w"]
    np.testing.assert_array_equal(kept, one_ulp_up_at(weights(), 7))


def test_under_other_numerics_a_small_change_passes_on_the_summary_only(golden_dir):
    result = check(one_ulp_up_at(weights(), 7), golden_dir, env=OTHER)
    assert (result.status, result.ok) == ("within_tol", True)
    assert result.message == (
        "written on numpy 2.4.6; this machine numpy 9.9; compared within tolerance, not bit for"
        " bit; summary only (GOLDEN_SUMMARY) for params.w: sha256 differs; min/max/mean/l2"
        " within tolerance and nan/inf counts equal; elements not compared"
    )
    assert not golden.obtained_path(golden_dir, "demo", "engine").exists()


def test_under_other_numerics_a_large_change_fails(golden_dir):
    w = weights()
    w[3] = 50.0  # the max moves from ~1 to 50
    result = check(w, golden_dir, env=OTHER)
    assert (result.status, result.ok) == ("mismatch", False)
    assert "values differ from the golden beyond tolerance" in result.message
    assert "only min/max/mean/l2 and the nan/inf counts were compared" in result.message
    assert [r.key for r in result.diff.failures] == ["params.w:max", "params.w:mean", "params.w:l2"]
    assert result.details[0].key == "params.w:max"  # a statistic, never an element


def test_under_other_numerics_a_new_nan_fails_although_the_statistics_agree(golden_dir):
    w = weights()
    w[3] = np.nan
    result = check(w, golden_dir, env=OTHER)
    assert (result.status, result.ok) == ("mismatch", False)
    assert "params.w:nan" in [r.key for r in result.diff.failures]


def test_a_changed_shape_is_reported_as_such(golden_dir):
    result = check(weights()[:-1], golden_dir, env=OTHER)
    assert (result.status, result.ok) == ("mismatch", False)
    assert [(r.key, r.status, r.shape_a) for r in result.diff.failures] == [
        ("params.w", "shape", (N,))
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda e: e.update(summary_only=False), "summary_only must be true, not False"),
        (lambda e: e["summary"].pop("l2"), "summary must have the keys min, max, mean, l2"),
        (lambda e: e["summary"].update(nan=-1), "summary nan must be a non-negative integer"),
        (lambda e: e["summary"].update(mean="x"), "summary mean must be a number or null"),
        (lambda e: e.update(sha256="abc"), "sha256 must be 64 lowercase hex digits"),
    ],
)
def test_the_reader_refuses_a_malformed_summary_only_entry(golden_dir, change, problem):
    path = golden_file(golden_dir)
    doc = json.loads(path.read_text())
    change(doc["values"]["params.w"])
    path.write_text(json.dumps(doc))
    with pytest.raises(record.RecordError) as caught:
        record.read_side(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: params.w: {problem}")
    assert "\n" not in message


def test_update_rewrites_the_golden_as_a_summary(golden_dir):
    fresh = record.normalize(values(one_ulp_up_at(weights(), 7)))
    text = record.side_text("demo", "engine", fresh, ENV)
    result = golden.update_golden(BULKY, "engine", text, fresh, golden_dir)
    assert (result.status, result.ok) == ("updated", True)
    entry = record.read_side(golden_file(golden_dir)).values["params.w"]
    assert entry == record.SummaryOnly(
        "float32",
        (N,),
        hashlib.sha256(fresh["params.w"].tobytes()).hexdigest(),
        summarize(fresh["params.w"]),
    )
    assert check(one_ulp_up_at(weights(), 7), golden_dir).status == "identical"


def test_keys_not_matched_keep_their_data(golden_dir):
    plain = Case("demo", "", Path("demo.py"), dict, dict, (), {})
    result = check(weights(), golden_dir.parent / "plain", case=plain)
    assert result.status == "missing"
    assert record.read_side(result.path).sidecars  # the ordinary .npy sidecar


def test_the_fixture_target_summarises_its_keys(tmp_path):
    target = GoldenTarget("test_port", golden_summary=("params.*",))
    first = check_values(values(weights()), folder=tmp_path, target=target, side="test_w")
    assert first.status == "missing"
    assert sorted(p.name for p in first.path.parent.iterdir()) == ["test_w.json"]  # no .npy
    assert isinstance(record.read_side(first.path).values["params.w"], record.SummaryOnly)
    again = check_values(values(weights()), folder=tmp_path, target=target, side="test_w")
    assert (again.status, again.ok) == ("identical", True)


def test_golden_summary_must_be_a_list_of_globs(tmp_path):
    case = tmp_path / "bulky.py"
    body = '"""Doc."""\nfrom harness.case import agree\nCHECKS = [agree("*")]\n'
    body += "def torch_side(): return {}\ndef engine_side(): return {}\n"
    case.write_text(body + 'GOLDEN_SUMMARY = ["params.*"]\n')
    assert load_case(case).golden_summary == ("params.*",)
    case.write_text(body + 'GOLDEN_SUMMARY = "params.*"\n')
    with pytest.raises(CaseDefinitionError) as caught:
        load_case(case)
    assert str(caught.value) == (
        f"{case}: GOLDEN_SUMMARY: expected a list of key globs, got 'params.*'"
    )
    with pytest.raises(CaseDefinitionError, match="'' is not a non-empty key glob"):
        golden_summary_of(["a", ""], "here")


def test_no_committed_golden_is_summary_only():
    root = Path(__file__).resolve().parent.parent / "golden"
    assert not [p for p in root.rglob("*.json") if '"summary_only"' in p.read_text()]


def test_file_mode_refuses_a_summary_only_file_in_one_line(golden_dir, tmp_path, capsys):
    import compare

    full = tmp_path / "full.json"
    record.write_side(full, "demo", "engine", values(weights()), ENV)
    path = golden_file(golden_dir)
    assert compare.main([str(path), str(full)]) == 2
    assert capsys.readouterr().err == (
        f"compare.py: error: {path}: params.w: a summary-only golden entry (GOLDEN_SUMMARY)"
        " holds no elements to compare; compare its .obtained or out/ file instead\n"
    )
