"""harness.report: the text table is an API, pinned to the letter; JSON schema; Markdown."""

import json
import math

import numpy as np
import pytest

from harness.diff import Diff, TensorDiff, diff_values
from harness.record import CapturedError
from harness.report.cells import format_value
from harness.report.html import render_html
from harness.report.json_doc import REPORT_SCHEMA, render_json, schema_errors
from harness.report.markdown import render_markdown
from harness.report.text import render_text
from harness.tolerances import Tolerance, default_tolerance

TOL = Tolerance(1e-6, reason="study")


def tensor_row(key, **fields):
    base = {
        "kind": "tensor",
        "tol": TOL,
        "dtype_a": "float32",
        "dtype_b": "float32",
        "status": "ok",
    }
    return TensorDiff(key=key, **{**base, **fields})


OK_ROWS = (
    tensor_row("logits", shape_a=(3, 4), shape_b=(3, 4), n=12, max_abs=1.49e-08, max_ulp=1),
    tensor_row("grads.fc1.weight", n=32, max_abs=3.73e-09, max_ulp=2),
)


def make_diff(rows, ok=None, worst=1.19e-07, title="train_step"):
    ok = all(r.ok for r in rows) if ok is None else ok
    return Diff(title, ("torch", "engine"), tuple(rows), ok, worst, TOL)


def test_text_ok_in_the_study_style():
    assert render_text(make_diff(OK_ROWS)) == (
        "== torch vs engine (train_step)\n"
        "logits                   n= 12  max|diff|=1.49e-08  ulp=1\n"
        "grads.fc1.weight         n= 32  max|diff|=3.73e-09  ulp=2\n"
        "worst=1.19e-07 tol=1e-06 OK"
    )


FAILING = (
    tensor_row(
        "w",
        status="fail",
        n=6,
        max_abs=0.25,
        max_ulp=4194304,
        worst_index=(2, 1),
        a_worst=float(np.float32(0.123456789)),
        b_worst=0.375,
        worst_ulp=4194304,
        mismatches=3,
    ),
    tensor_row(
        "h",
        status="fail",
        n=4,
        max_abs=0.0,
        max_ulp=0,
        worst_index=(1,),
        a_worst=math.nan,
        b_worst=1.0,
        mismatches=2,
        nan_mismatches=1,
        inf_mismatches=1,
    ),
    tensor_row("bias", status="missing", dtype_b=None),
    tensor_row("x", status="dtype", dtype_b="float64"),
    tensor_row("a_rather_long_key_name_here", status="shape", shape_a=(2, 3), shape_b=(6,)),
    TensorDiff("msg", "value", Tolerance.exact(), "fail", "str", "str", a_worst="a", b_worst="b"),
    TensorDiff(
        "steps",
        "value",
        Tolerance.exact(),
        "ok",
        "int",
        "int",
        n=1,
        max_abs=0,
        a_worst=3,
        b_worst=3,
    ),
    TensorDiff(
        "loss",
        "value",
        TOL,
        "fail",
        "float",
        "float",
        n=1,
        max_abs=0.5,
        a_worst=1.0,
        b_worst=1.5,
        worst_ulp=2**51,
    ),
    TensorDiff(
        "err",
        "value",
        Tolerance.exact(),
        "ok",
        "error",
        "error",
        n=1,
        a_worst=CapturedError("ValueError", "bad"),
        b_worst=CapturedError("ValueError", "bad"),
    ),
)


def test_text_failures_every_row_with_index_values_and_categories():
    text = render_text(make_diff(FAILING, worst=0.5))
    assert text == (
        "== torch vs engine (train_step)\n"
        "w                           n=  6  max|diff|=2.50e-01  ulp=4194304"
        "  FAIL at [2, 1]: torch=0.12345679 engine=0.375 (4194304 ulp, 3 mismatched)\n"
        "h                           n=  4  max|diff|=0.00e+00  ulp=0"
        "  FAIL at [1]: torch=nan engine=1.0 (2 mismatched, 1 NaN mismatch, 1 inf mismatch)\n"
        "bias                        FAIL missing in engine\n"
        "x                           FAIL dtype: torch=float32 engine=float64\n"
        "a_rather_long_key_name_here FAIL shape: torch=[2, 3] engine=[6]\n"
        "msg                         value  torch='a' engine='b'  FAIL (not equal)\n"
        "steps                       value  torch=3 engine=3\n"
        "loss                        value  torch=1.0 engine=1.5"
        "  FAIL (|diff|=5.00e-01, 2251799813685248 ulp)\n"
        "err                         value  torch=ValueError('bad') engine=ValueError('bad')\n"
        "worst=5.00e-01 tol=1e-06 FAIL (7 of 9 keys)"
    )
    assert all(line == line.rstrip() for line in text.splitlines())


def test_text_of_an_equality_only_tensor():
    row = tensor_row(
        "names",
        dtype_a="str32",
        dtype_b="str32",
        status="fail",
        n=2,
        worst_index=(1,),
        a_worst="b",
        b_worst="c",
        mismatches=1,
    )
    assert render_text(make_diff([row], worst=None)).splitlines()[1] == (
        "names                    n=  2  max|diff|=n/a  FAIL at [1]: torch='b' engine='c'"
        " (1 mismatched)"
    )


def test_text_title_optional_and_missing_side_named():
    rows = [tensor_row("only_b", status="missing", dtype_a=None)]
    diff = Diff("", ("golden", "fresh"), tuple(rows), False, None, Tolerance.exact())
    assert render_text(diff) == (
        "== golden vs fresh\nonly_b                   FAIL missing in golden\n"
        "worst=n/a tol=exact FAIL (1 of 1 keys)"
    )


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        (0.1, "float64", "0.1"),
        (float.fromhex("0x1.99999ap-4"), "float32", "0.1"),  # float32(0.1), shortest form
        (float.fromhex("0x1.99999cp-4"), "float32", "0.10000001"),
        (-0.0, "float32", "-0.0"),
        (math.inf, "float64", "inf"),
        (1e-45, "float32", "1e-45"),
        (True, "bool", "True"),
        (None, "None", "None"),
        (7, "int64", "7"),
    ],
)
def test_values_print_exactly(value, dtype, text):
    assert format_value(value, dtype) == text


def real_diff():
    a = {"x": [1.0, float("nan")], "y": 2, "s": "a", "e": CapturedError("E", "m")}
    b = {"x": [1.5, 1.0], "y": 2, "s": "b", "only": 1.0}

    a["x"], b["x"] = np.array(a["x"], np.float32), np.array(b["x"], np.float32)
    a["inf"] = b["inf"] = np.array([np.inf], np.float32)
    return diff_values(a, b, tol_for=lambda k, d: default_tolerance(d), title="case")


def test_json_validates_against_the_schema_and_is_strict_json():
    doc = render_json([real_diff(), make_diff(OK_ROWS)], meta={"files": ["a", "b"]})
    assert schema_errors(doc) == []
    text = json.dumps(doc, allow_nan=False)  # raises on NaN/inf: none may be left
    assert json.loads(text)["schema"] == "conformance-report/1"
    rows = doc["comparisons"][0]["rows"]
    assert rows[0]["b_worst"] == 1.0 and rows[0]["a_worst"] == "NaN"
    assert [r["status"] for r in rows] == ["fail", "ok", "fail", "missing", "ok", "missing"]
    assert rows[4]["ulp_histogram"] == []


def test_json_schema_with_the_jsonschema_package_when_installed():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(render_json(real_diff()), REPORT_SCHEMA)


def test_the_hand_validator_catches_errors():
    doc = render_json(make_diff(OK_ROWS))
    doc["comparisons"][0]["rows"][0]["status"] = "weird"
    del doc["comparisons"][0]["rows"][1]["n"]
    doc["extra"] = 1
    errors = schema_errors(doc)
    assert "$: unexpected 'extra'" in errors
    assert any("rows[0].status: 'weird' not one of" in e for e in errors)
    assert "$.comparisons[0].rows[1]: missing 'n'" in errors


def test_markdown_one_row_per_tensor():
    diff = make_diff(FAILING, worst=0.5)
    md = render_markdown(diff)
    lines = md.splitlines()
    assert lines[0] == "### torch vs engine (train_step)"
    table = [line for line in lines if line.startswith("| ")]
    assert len(table) == 1 + len(FAILING)  # header + one per key
    assert lines[lines.index(table[0]) + 1].startswith("|:--")
    assert table[1] == (
        "| `w` | FAIL | 6 | 2.50e-01 |  | 4194304 | [2, 1] | 0.12345679 | 0.375 "
        "| 4194304 ulp, 3 mismatched |"
    )
    assert "| `bias` | missing |" in md and "missing in engine" in md
    assert lines[-1] == "**worst=5.00e-01 tol=1e-06 FAIL (7 of 9 keys)**"
    assert all(row.count(" | ") == table[0].count(" | ") for row in table)


def test_markdown_escapes_pipes():
    row = TensorDiff(
        "a|b", "value", Tolerance.exact(), "ok", "str", "str", n=1, a_worst="x|y", b_worst="x|y"
    )
    md = render_markdown(make_diff([row]))
    assert "`a\\|b`" in md and "'x\\|y'" in md


def test_html_page_has_every_key():  # the layout is tested in test_html_report.py
    page = render_html(make_diff(OK_ROWS), meta={"files": ["a.json", "b.json"]})
    assert page.startswith("<!DOCTYPE html>")
    assert "<code>logits</code>" in page and "<code>grads.fc1.weight</code>" in page
