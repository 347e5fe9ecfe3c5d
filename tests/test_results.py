"""harness.results: every status and check kind is produced, rendered by every renderer that
shows it, and accepted by the JSON schema; a report survives pickling (``--jobs N``)."""

import ast
import json
import pickle
from pathlib import Path

import html5lib
import numpy as np
import pytest

from harness.case import agree, differ, expect, scaled, trajectory
from harness.diff import diff_values
from harness.report.html import KIND_NOUNS, render_cases_html
from harness.report.json_doc import REPORT_SCHEMA, cases_json, schema_errors
from harness.report.markdown import cases_markdown
from harness.report.text import render_case, render_golden, render_summary
from harness.results import CaseReport, CheckKind, CheckReport, GoldenReport, GoldenStatus
from harness.tolerances import default_tolerance

ROOT = Path(__file__).resolve().parents[1]


def a_diff(b_value=2.0):
    return diff_values(
        {"g": np.array([1.0, 2.0], np.float32)},
        {"g": np.array([1.0, b_value], np.float32)},
        tol_for=lambda key, dtype: default_tolerance(dtype),
        title="demo",
    )


def a_check(kind=CheckKind.AGREE, ok=True):
    return CheckReport(f"{kind}:g:torch~engine", kind, ok, "a message", a_diff(), pattern="g")


def a_report(checks=(), goldens=None):
    return CaseReport("demo", "A demo case.", tuple(checks) or (a_check(),), goldens or {})


def a_golden(status, ok=True, side="torch"):
    return GoldenReport("demo", side, status, ok, f"{status} message", a_diff(2.5), env={})


def parse(page):
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)


def statuses_named_in(*paths):
    """``GoldenStatus.X`` attributes used in these files' code."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "GoldenStatus":
                names.add(node.attr)
    return names


def test_every_golden_status_is_produced_by_the_golden_workflow_or_the_runner():
    produced = statuses_named_in("harness/golden.py", "harness/runner.py")
    assert produced == {status.name for status in GoldenStatus}


def test_every_check_kind_is_declared_by_the_case_api():
    because = "harness.engine.tensor.Tensor.detach"
    checks = [agree("g"), differ("g", because=because, relation=scaled(2)), expect("g", "torch", 1)]
    checks.append(trajectory("g"))
    assert [c.kind for c in checks] == list(CheckKind)


def test_the_json_schema_enumerates_every_kind_and_status():
    case = REPORT_SCHEMA["properties"]["cases"]["items"]["properties"]
    kinds = case["checks"]["items"]["properties"]["kind"]["enum"]
    statuses = case["goldens"]["items"]["properties"]["status"]["enum"]
    assert (kinds, statuses) == (list(CheckKind), list(GoldenStatus))
    assert json.loads(json.dumps(REPORT_SCHEMA))["$id"] == REPORT_SCHEMA["$id"]  # plain JSON


@pytest.mark.parametrize("status", list(GoldenStatus))
def test_every_golden_status_is_rendered_by_text_json_and_html(status):
    ok = status not in {GoldenStatus.MISMATCH, GoldenStatus.MISSING, GoldenStatus.REFUSED}
    report = a_report(goldens={"torch": a_golden(status, ok)})
    assert f"[{'ok  ' if ok else 'FAIL'}] golden:torch: {status.value}: {status.value} message" in (
        render_case(report).splitlines()
    )
    golden_lines = render_golden(report.goldens["torch"]).splitlines()
    assert any(line.startswith(f"golden demo/torch: {status.value}: ") for line in golden_lines)
    assert ("FAIL demo::golden:torch" in render_summary([report])) is not ok
    doc = cases_json([report])
    assert schema_errors(doc) == []
    assert json.loads(json.dumps(doc))["cases"][0]["goldens"][0]["status"] == status.value
    page = render_cases_html([report])
    parse(page)
    assert f"torch: {status.value}</td>" in page  # the case index
    if status == GoldenStatus.IDENTICAL:  # named in one line, not tabulated
        assert "1 of 1 goldens are byte-identical" in page
    else:
        assert f'id="golden-demo-torch">demo/torch: {status.value}</h3>' in page


@pytest.mark.parametrize("kind", list(CheckKind))
def test_every_check_kind_is_rendered_by_every_renderer(kind):
    check = a_check(kind, ok=False)
    report = a_report(checks=[check])
    assert f"[FAIL] {check.label}: a message" in render_case(report).splitlines()
    summary = render_summary([report]).splitlines()
    assert f"FAIL demo::{check.label}" in summary
    doc = cases_json([report])
    assert schema_errors(doc) == []
    assert json.loads(json.dumps(doc))["cases"][0]["checks"][0]["kind"] == kind.value
    assert f"- `{check.label}`: FAIL: a message" in cases_markdown([report])
    page = render_cases_html([report])
    parse(page)
    assert f"&nbsp;&nbsp;{KIND_NOUNS[kind]}</td><td>1 (0 hold," in page
    assert f"<th>{kind.value}</th>" in page  # a column of the case index


def test_a_differ_check_reads_as_the_documented_outcome():
    report = a_report(checks=[a_check(CheckKind.DIFFER)])
    assert "DIFFER as documented" not in render_case(report)  # within tolerance: SAME
    assert "SAME (divergence vanished)" in render_case(report)


def test_a_case_report_survives_pickling_with_its_enums():
    report = CaseReport(
        "demo",
        "A demo case.",
        (a_check(), a_check(CheckKind.DIFFER)),
        {"torch": a_golden(GoldenStatus.UPDATED), "engine": a_golden(GoldenStatus.MISMATCH)},
        nondeterministic=("engine",),
        env={"torch": {"numpy": "2.4.6"}},
        seconds=0.5,
    )
    again = pickle.loads(pickle.dumps(report))
    assert again == report
    assert again.checks[1].kind is CheckKind.DIFFER
    assert again.goldens["torch"].status is GoldenStatus.UPDATED
    assert render_case(again) == render_case(report)


def test_case_report_verdict_and_lookups():
    failing_golden = {"torch": a_golden(GoldenStatus.MISMATCH, ok=False)}
    assert a_report().ok
    assert not a_report(goldens=failing_golden).ok
    assert not CaseReport("demo", "", (a_check(),), {}, nondeterministic=("torch",)).ok
    assert not a_report(checks=[a_check(ok=False)]).ok
    report = a_report(checks=[a_check(), a_check(CheckKind.EXPECT)])
    assert report.check("expect:g:torch~engine").kind == CheckKind.EXPECT
    with pytest.raises(KeyError):
        report.check("nope")
    assert report.agree_ulps() == [(0, "demo::g")]  # agree checks only
