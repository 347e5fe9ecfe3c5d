"""Case-run rendering in harness.report, on hand-made reports (no case is run here)."""

import dataclasses
import io
import json
from types import SimpleNamespace as NS

import numpy as np

from harness.diff import diff_values
from harness.mismatches import inspect_row
from harness.report.files import write_case_reports
from harness.report.json_doc import cases_json, schema_errors
from harness.report.markdown import cases_markdown
from harness.report.text import render_case, render_check, render_golden, render_summary
from harness.results import CaseReport, CheckKind, CheckReport, GoldenReport, GoldenStatus
from harness.session import Progress
from harness.tolerances import default_tolerance


def a_diff(b_value):
    return diff_values(
        {"g": np.array([1.0, 2.0], np.float32)},
        {"g": np.array([1.0, b_value], np.float32)},
        tol_for=lambda key, dtype: default_tolerance(dtype),
        title="demo",
    )


def details_of(b_value):
    """The element detail the checks module computes for a_diff(b_value)'s row."""
    row = a_diff(b_value).rows[0]
    return (
        inspect_row(np.array([1.0, 2.0], np.float32), np.array([1.0, b_value], np.float32), row),
    )


def golden_result(side, status, ok, message, diff=None):
    return GoldenReport(case="demo", side=side, status=status, ok=ok, message=message, diff=diff)


def outcome(ok_agree=True):
    checks = (
        CheckReport(
            label="agree:g:torch~engine",
            kind=CheckKind.AGREE,
            ok=ok_agree,
            diff=a_diff(2.0 if ok_agree else 3.0),
            message="agree" if ok_agree else "values disagree",
            details=details_of(2.0 if ok_agree else 3.0),
        ),
        CheckReport(
            label="differ:h:torch~engine",
            kind=CheckKind.DIFFER,
            ok=True,
            diff=a_diff(4.0),
            message="differ as documented: 2x",
            documented_by="Gradients.doc",
        ),
    )
    goldens = {
        "torch": golden_result("torch", GoldenStatus.IDENTICAL, True, "same bytes"),
        "engine": golden_result(
            "engine",
            GoldenStatus.MISMATCH,
            False,
            "values differ from the golden beyond tolerance",
            a_diff(2.5),
        ),
    }
    report = CaseReport("demo", "A demo case.\n\nMore text.", checks, goldens)
    assert not report.ok  # the engine golden fails
    return report


def test_render_case_lists_every_check_and_golden():
    text = render_case(outcome())
    lines = text.splitlines()
    assert lines[0] == "=== demo: A demo case."
    assert lines[1] == "[ok  ] agree:g:torch~engine: agree"
    assert lines[2] == "== torch vs engine (demo)"
    assert (
        "[ok  ] differ:h:torch~engine: differ as documented: 2x (documented: Gradients.doc)"
        in lines
    )
    assert "[ok  ] golden:torch: identical: same bytes" in lines
    assert "[FAIL] golden:engine: mismatch: values differ from the golden beyond tolerance" in lines
    assert lines[-1] == "demo: FAIL"


def test_render_check_and_golden_for_pytest_messages():
    result = outcome(ok_agree=False).checks[0]
    lines = render_check("demo", result).splitlines()
    # The first line names the key, the element, both values and the distance: 2.0 and 3.0
    # are 2**22 float32 steps apart, |diff| 1.0 is 1e6 times the 1e-6 tolerance.
    assert lines[0] == (
        "g[1]: torch=2.0 engine=3.0 |diff|=1.00e+00 4194304 ulp (1e+06x tol 1e-06); "
        "1 of 2 elements and 1 of 1 keys fail"
    )
    assert lines[1] == "demo: agree:g:torch~engine: FAIL: values disagree"
    assert "FAIL at [1]: torch=2.0 engine=3.0 (4194304 ulp, 1 mismatched)" in lines[3]
    assert lines[4] == "    at [1]: torch=2.0 engine=3.0 |diff|=1.00e+00 4194304 ulp (1e+06x tol)"
    golden = outcome().goldens["engine"]
    text = render_golden(golden, update="conformance --update-golden --case demo")
    assert text.splitlines()[1] == (
        "golden demo/engine: mismatch: values differ from the golden beyond tolerance"
    )
    assert text.splitlines()[-1] == (
        "to accept this output as the golden: conformance --update-golden --case demo"
    )
    assert render_golden(outcome().goldens["torch"]) == "golden demo/torch: identical: same bytes"


def test_summary_counts_and_names_failures():
    results = [outcome(), outcome(ok_agree=False)]
    text = render_summary(results, ["golden/old"])
    assert text.splitlines() == [
        "== summary: 2 cases, 4 checks (3 hold, 2 documented divergences), 4 goldens (2 ok)",
        "worst agree: 1e+06x tol at demo::agree:g:torch~engine g[1] (2.0 vs 3.0)",
        "max agree ulp: 4194304 at demo::agree:g:torch~engine g[1] (2.0 vs 3.0)"
        " (over 4 of 4 float elements)",
        "FAIL demo::agree:g:torch~engine",
        "FAIL demo::golden:engine",
        "FAIL demo::golden:engine",
        "FAIL stale golden: golden/old (no case file; --prune-stale deletes it,"
        " --allow-stale accepts it)",
        "FAIL (2 of 2 cases, 1 stale golden)",
    ]
    allowed = render_summary([outcome(ok_agree=True)], ["golden/old"], allow_stale=True)
    assert "stale golden: golden/old (no case file; accepted by --allow-stale)" in allowed
    pruned = render_summary([], [], pruned=["golden/old/torch.json"])
    assert pruned.splitlines()[-2:] == ["pruned stale golden file golden/old/torch.json", "OK"]


def test_case_reports_json_validates_and_markdown_has_one_row_per_tensor(tmp_path):
    results = [dataclasses.replace(outcome(), seconds=0.5)]
    doc = cases_json(results)
    assert schema_errors(doc) == []
    assert [c["comparison"] for c in doc["cases"][0]["checks"]] == [0, 1]
    assert doc["cases"][0]["goldens"][1]["comparison"] == 2 and len(doc["comparisons"]) == 3
    md = cases_markdown(results)
    assert md.count("| `g` |") == 2  # one table row per tensor of each check
    args = NS(
        json=str(tmp_path / "r.json"),
        markdown=str(tmp_path / "r.md"),
        html=str(tmp_path / "r.html"),
    )
    write_case_reports(results, args)
    assert json.loads((tmp_path / "r.json").read_text())["schema"] == "conformance-report/1"
    assert (tmp_path / "r.md").read_text() == md
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_progress_prints_one_line_per_case():
    stream = io.StringIO()
    progress = Progress(12, stream=stream)
    progress.advance(CaseReport("a", "", (), {}, seconds=0.25))
    progress.advance(dataclasses.replace(outcome(), case="b"))
    first, second = stream.getvalue().splitlines()
    assert first.startswith("[ 1/12] a ok 0.25s (elapsed ")
    assert second.startswith("[ 2/12] b FAIL (elapsed ")
