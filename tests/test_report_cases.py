"""Case-run rendering in harness.report, on hand-made outcomes (no case is run here)."""

import io
import json
from types import SimpleNamespace as NS

import numpy as np

from harness.diff import diff_values
from harness.report import (
    Progress,
    case_data,
    cases_json,
    cases_markdown,
    render_case,
    render_check,
    render_golden,
    render_summary,
    schema_errors,
    write_requested,
)
from harness.tolerances import default_tolerance


def a_diff(b_value):
    return diff_values(
        {"g": np.array([1.0, 2.0], np.float32)},
        {"g": np.array([1.0, b_value], np.float32)},
        tol_for=lambda key, dtype: default_tolerance(dtype),
        title="demo",
    )


def golden_result(side, status, ok, message, diff=None):
    return NS(case="demo", side=side, status=status, ok=ok, message=message, diff=diff, env=None)


def outcome(ok_agree=True):
    agree = NS(label="agree:g:torch~engine", kind="agree")
    differ = NS(label="differ:h:torch~engine", kind="differ")
    checks = [
        NS(
            check=agree,
            ok=ok_agree,
            diff=a_diff(2.0 if ok_agree else 3.0),
            message="agree" if ok_agree else "values disagree",
            documented_by="",
        ),
        NS(
            check=differ,
            ok=True,
            diff=a_diff(4.0),
            message="differ as documented: 2x",
            documented_by="Gradients.doc",
        ),
    ]
    goldens = {
        "torch": golden_result("torch", "identical", True, "same bytes"),
        "engine": golden_result(
            "engine",
            "mismatch",
            False,
            "values differ from the golden beyond tolerance",
            a_diff(2.5),
        ),
    }
    case = NS(name="demo", doc="A demo case.\n\nMore text.")
    run = NS(error=None, nondeterministic={}, texts={}, env={})
    return NS(case=case, run=run, checks=checks, goldens=goldens, ok=False)


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
    text = render_check("demo", result)
    assert text.splitlines()[0] == "demo: agree:g:torch~engine: FAIL: values disagree"
    assert "FAIL at [1]: torch=2.0 engine=3.0" in text
    golden = outcome().goldens["engine"]
    assert render_golden(golden).startswith(
        "golden demo/engine: mismatch: values differ from the golden beyond tolerance\n== "
    )
    assert render_golden(outcome().goldens["torch"]) == "golden demo/torch: identical: same bytes"


def test_summary_counts_and_names_failures():
    results = [case_data(outcome()), case_data(outcome(ok_agree=False))]
    text = render_summary(results, ["golden/old"])
    assert text.splitlines() == [
        "== summary: 2 cases, 4 checks (3 hold, 2 documented divergences), 4 goldens (2 ok); "
        "worst agree ulp=4194304",
        "FAIL demo::agree:g:torch~engine",
        "FAIL demo::golden:engine",
        "FAIL demo::golden:engine",
        "stale golden: golden/old (no case file; delete it)",
        "FAIL (2 of 2 cases)",
    ]


def test_case_reports_json_validates_and_markdown_has_one_row_per_tensor(tmp_path):
    results = [{**case_data(outcome()), "seconds": 0.5}]
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
    write_requested(results, args)
    assert json.loads((tmp_path / "r.json").read_text())["schema"] == "conformance-report/1"
    assert (tmp_path / "r.md").read_text() == md
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_progress_prints_one_line_per_case():
    stream = io.StringIO()
    progress = Progress(12, stream=stream)
    progress.advance({"case": "a", "ok": True, "seconds": 0.25})
    progress.advance({"case": "b", "ok": False})
    first, second = stream.getvalue().splitlines()
    assert first.startswith("[ 1/12] a ok 0.25s (elapsed ")
    assert second.startswith("[ 2/12] b FAIL (elapsed ")
