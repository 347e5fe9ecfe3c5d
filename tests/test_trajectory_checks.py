"""Trajectory checks and systematic differs, end to end: a synthetic case run by the runner
(float32 runs, float64 reruns, out/ files, goldens), its verdicts, and the reports."""

import dataclasses
import html
import json

import html5lib
import numpy as np
import pytest

from harness.case import CaseDefinitionError, differ, load_case, predicate
from harness.report.html import render_cases_html
from harness.report.json_doc import REPORT_SCHEMA, cases_json, schema_errors
from harness.report.markdown import cases_markdown
from harness.report.text import render_case, render_check, render_summary
from harness.runner import check_case
from harness.trajectory import Growth
from harness.trajectory.growth import MIN_STEPS

BECAUSE = "harness.engine.optim.Adam"
STEPS = 40
# The engine's formula difference as a documented divergence: the switch Adam's docstring
# documents undoes it (the explained run then agrees with torch to rounding).
DOCUMENTED = "eps=1e-3 if ADAM_BIAS_CORRECTION.on else 1.001e-3"

CASE = '''"""A synthetic trajectory case: RMS-normalised least squares; the engine, a variant."""
import numpy as np
import torch  # noqa: F401  (loads torch's OpenMP pool before the environment is recorded)

from harness.case import differ, trajectory
from harness.engine.optim.adam import ADAM_BIAS_CORRECTION

A = (((np.arange(48).reshape(12, 4) * 7) % 11) * 0.1 - 0.5).astype(np.float32)
B = ((np.arange(12) % 5) * 0.2 - 0.3).astype(np.float32)
CALLS = []


def descent(dtype, reverse=False, eps=1e-3):
    dtype = str(dtype).removeprefix("torch.")
    dt = np.dtype(dtype).type
    a, b, w = A.astype(dtype), B.astype(dtype), np.zeros(4, dtype)
    ws, losses = [], []
    for _ in range({steps}):
        r = a @ w - b
        terms = a * r[:, None]
        g = np.cumsum(terms[::-1] if reverse else terms, axis=0)[-1]
        w = w - dt(0.05) * g / (np.sqrt(np.mean(g * g)) + dt(eps))
        ws.append(w)
        losses.append(np.mean(r * r))
    return {{"w": np.stack(ws), "loss": np.array(losses, dtype)}}


def torch_side(dtype="float32"):
    return {{"run": descent(dtype), "plain": 1.0}}


def engine_side(dtype="float32"):
    CALLS.append(dtype)
    {engine_body}
    return {{"run": descent(dtype, {variant}), "plain": 1.0}}


CHECKS = [{checks}]
'''

TRAJECTORY = 'trajectory("run.*")'
SYSTEMATIC = f'differ("run.*", because="{BECAUSE}", systematic={{systematic}})'
LABELS = {
    "trajectory": "trajectory:run.*:torch~engine",
    "differ": "differ:run.*:torch~engine",
}


def run(
    tmp_path, *, variant="", checks=TRAJECTORY, engine_body="pass", systematic="True", steps=STEPS
):
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    text = CASE.format(
        steps=steps,
        variant=variant,
        checks=checks.format(systematic=systematic),
        engine_body=engine_body,
    )
    path = folder / "synthetic_trajectory.py"
    path.write_text(text)
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    return check_case(load_case(path), **dirs)


def test_a_reordered_sum_passes_the_trajectory_check(tmp_path):
    report = run(tmp_path, variant="reverse=True")
    check = report.check(LABELS["trajectory"])
    assert check.ok, check.message
    assert check.message == "same formula: the float64 runs agree to float64 rounding"
    assert check.kind == "trajectory" and check.diff is None
    assert check.trajectory.steps == STEPS and check.trajectory.keys == ("run.w", "run.loss")


def test_a_formula_change_fails_the_trajectory_check(tmp_path):
    report = run(tmp_path, variant="eps=1.001e-3")
    check = report.check(LABELS["trajectory"])
    assert not check.ok
    # A planted change, not a documented divergence: no switch explains it, no differ advised.
    assert check.message == (
        "formula difference, unexplained: a difference in one side's code; not a documented "
        "burn behaviour (with the divergence switches on, the float64 runs still part "
        "(first keys: run.w, run.loss))"
    )
    assert f"FAIL synthetic_trajectory::{LABELS['trajectory']}" in render_summary([report])


def test_a_failed_trajectory_check_starts_with_where_the_float64_runs_part(tmp_path):
    """Failure first: the first line names the keys, the float64 verdict and the worst float32
    step, then the verdict line and the trajectory line, as pytest shows it."""
    report = run(tmp_path, variant="eps=1.001e-3")
    check = report.check(LABELS["trajectory"])
    first, verdict, line = render_check(report.case, check).splitlines()[:3]
    t = check.trajectory
    worst = int(np.argmax(t.float32.max_abs))
    assert first.startswith("run.w and 1 more keys: float64 pair parts at step ")
    assert f"bits over rounding); float32 max|diff|={t.float32.max_abs[worst]:.2e}" in first
    assert f" at step {worst}, " in first
    assert verdict.startswith(f"synthetic_trajectory: {LABELS['trajectory']}: FAIL: formula")
    assert line.startswith(f"trajectory {STEPS} steps: growth=")
    brief = render_case(report, verbose=False)  # the failing check and its line survive -q
    assert f"[FAIL] {LABELS['trajectory']}: formula difference" in brief
    assert f"trajectory {STEPS} steps: growth=" in brief


def test_trajectory_text_goes_through_the_escaping(tmp_path):
    report = run(tmp_path, variant="eps=1.001e-3")
    check = report.check(LABELS["trajectory"])
    hostile = dataclasses.replace(
        check,
        trajectory=dataclasses.replace(
            check.trajectory, keys=("run.\x1b[2Jw", "run.loss"), labels=("torch\n", "engine")
        ),
    )
    for text in (
        render_check(report.case, hostile),
        render_case(dataclasses.replace(report, checks=(hostile,))),
        cases_markdown([dataclasses.replace(report, checks=(hostile,))]),
    ):
        assert "\x1b" not in text and "torch\n" not in text  # no raw ESC, no broken line
        assert ": torch\\n 40" in text  # the trajectory line, escaped
    assert render_check(report.case, hostile).startswith("run.\\x1b[2Jw and 1 more keys")


def test_a_systematic_differ_holds_while_the_formula_differs(tmp_path):
    report = run(tmp_path, variant=DOCUMENTED, checks=SYSTEMATIC)
    check = report.check(LABELS["differ"])
    assert check.ok, check.message
    assert check.message.startswith("systematic divergence as documented: the float64 runs part")
    assert check.message.endswith(
        "; the documented divergences explain it: adam.bias_correction (PyTorch computes "
        "Adam's bias corrections 1 - beta^t in f64; documented at harness.engine.optim.Adam)"
    )
    assert check.relation == "systematic: the float64 runs part too"
    assert check.documented_by and check.diff is not None  # the float32 table, as any differ


def test_a_fix_that_leaves_rounding_makes_the_systematic_divergence_vanish(tmp_path):
    report = run(tmp_path, variant="reverse=True", checks=SYSTEMATIC)
    check = report.check(LABELS["differ"])
    assert not check.ok
    assert check.message.startswith("expected divergence vanished: the float64 runs agree")


def test_a_declared_growth_class_must_be_the_measured_one(tmp_path):
    report = run(tmp_path, variant=DOCUMENTED, checks=SYSTEMATIC, systematic='"exponential"')
    check = report.check(LABELS["differ"])
    measured = check.trajectory.growth.growth
    assert measured != Growth.EXPONENTIAL
    assert not check.ok
    assert check.message == (
        f"the float64 runs part, but growth={measured}, not exponential as declared"
    )
    assert check.relation == "systematic: the float64 runs part too, growth=exponential"


def test_float64_reruns_go_to_out_never_to_the_goldens(tmp_path, tree):
    first = run(tmp_path, variant="reverse=True")
    out = tmp_path / "out" / "synthetic_trajectory"
    assert sorted(p.name for p in out.iterdir()) == [
        "engine.explained.float64.json",  # the explained run: every divergence switch on
        "engine.explained.json",
        "engine.float64.json",
        "engine.json",
        "torch.float64.json",
        "torch.json",
    ]
    float64 = json.loads((out / "torch.float64.json").read_text())
    assert {v["dtype"] for v in float64["values"].values() if isinstance(v, dict)} == {"float64"}
    goldens = tree(tmp_path / "golden")
    assert sorted(goldens) == [
        "synthetic_trajectory/engine.json",
        "synthetic_trajectory/torch.json",
    ]
    assert b"float64" not in goldens["synthetic_trajectory/torch.json"].split(b'"values"')[1]
    outputs = tree(out)
    second = run(tmp_path, variant="reverse=True")
    assert tree(out) == outputs  # the float64 reruns are deterministic, byte for byte
    assert {g.status for g in first.goldens.values()} == {"missing"}  # written, for review
    assert second.ok and not second.nondeterministic
    assert {g.status for g in second.goldens.values()} == {"identical"}


def test_a_nondeterministic_float64_rerun_is_reported(tmp_path):
    # the engine side's epsilon changes with each float64 call (calls 3 and 4)
    variant = "eps=1e-3 + (1e-9 * len(CALLS) if dtype == 'float64' else 0)"
    report = run(tmp_path, variant=variant)
    assert report.nondeterministic == ("engine.float64",)
    assert not report.ok


def test_a_float64_rerun_that_raises_is_the_case_error(tmp_path):
    body = 'if dtype == "float64": raise ValueError("no float64 here")'
    report = run(tmp_path, engine_body=body)
    assert report.error == "engine_side(dtype=float64) raised ValueError('no float64 here')"
    assert not report.check(LABELS["trajectory"]).ok


def test_sides_of_a_trajectory_case_must_take_a_dtype(tmp_path):
    path = tmp_path / "no_dtype.py"
    path.write_text(
        '"""Doc."""\nfrom harness.case import trajectory\n\n'
        "def torch_side():\n    return {}\n\n"
        'def engine_side(dtype="float32"):\n    return {}\n\n'
        'CHECKS = [trajectory("*")]\n'
    )
    with pytest.raises(CaseDefinitionError, match="torch_side: needs a 'dtype' parameter"):
        load_case(path)


def test_differ_arguments_are_checked():
    with pytest.raises(CaseDefinitionError, match="systematic='wavy'"):
        differ("x", because=BECAUSE, systematic="wavy")
    with pytest.raises(CaseDefinitionError, match="'relation' is required"):
        differ("x", because=BECAUSE)
    check = differ("x", because=BECAUSE, systematic="linear", relation=predicate("p", min))
    assert check.systematic == Growth.LINEAR


def test_not_a_trajectory_is_a_failing_check_with_the_key(tmp_path):
    report = run(tmp_path, checks='trajectory("plain")')
    check = report.check("trajectory:plain:torch~engine")
    assert not check.ok
    assert check.message.startswith("not a trajectory: plain: a trajectory value is a float")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    rounding = run(tmp_path_factory.mktemp("rounding"), variant="reverse=True")
    both = f"{TRAJECTORY}, {SYSTEMATIC}"
    formula = run(tmp_path_factory.mktemp("formula"), variant=DOCUMENTED, checks=both)
    return [rounding, formula]


def test_text_prints_one_line_per_trajectory(reports):
    text = render_case(reports[0])
    lines = [line for line in text.splitlines() if line.lstrip().startswith("trajectory ")]
    assert len(lines) == 1
    line = lines[0].strip()
    assert line.startswith(f"trajectory {STEPS} steps: growth=")
    assert ", float64: agrees (rounding, " in line
    assert "; closer to torch float64: torch " in line
    formula = render_case(reports[1])
    assert formula.count("float64: parts (formula, ") == 2  # the trajectory and the differ


def test_json_carries_the_series_and_validates(reports):
    doc = cases_json(reports)
    assert schema_errors(doc) == []
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, REPORT_SCHEMA)
    text = json.dumps(doc, allow_nan=False)
    checks = json.loads(text)["cases"][1]["checks"]
    trajectory = checks[0]["trajectory"]
    assert len(trajectory["float32"]["max_abs"]) == STEPS == len(trajectory["closer"])
    assert trajectory["precision"]["verdict"] == "formula"
    assert trajectory["growth"]["class"] in [g.value for g in Growth]
    assert checks[1]["trajectory"]["line"] == trajectory["line"]  # same values, same analysis


def test_json_schema_rejects_a_malformed_trajectory(reports):
    doc = cases_json(reports)
    doc["cases"][0]["checks"][0]["trajectory"]["growth"]["class"] = "wavy"
    assert any("matches none of the allowed forms" in e for e in schema_errors(doc))


def test_markdown_has_the_line(reports):
    assert "`trajectory 40 steps: growth=" in cases_markdown(reports)


def test_html_draws_one_plot_per_trajectory(reports):
    page = render_cases_html(reports)
    tree = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)
    images = tree.findall(".//img[@class='trajectory']")
    assert len(images) == sum(c.trajectory is not None for r in reports for c in r.checks) == 3
    assert all(img.get("src").startswith("data:image/png;base64,") for img in images)
    assert all(img.get("alt").startswith("Per-step max|diff| over 40 steps") for img in images)
    assert "<th>trajectory</th>" in page  # the case index counts them
    assert render_cases_html(reports) == page  # byte-identical


def test_an_undetermined_growth_has_one_name_in_text_json_and_html(tmp_path):
    """A class reads as its ``Growth`` value everywhere (the JSON's ``class``), followed by why:
    never "too short to tell" in one report and "undetermined" in another."""
    steps = MIN_STEPS - 1
    report = run(tmp_path, variant="reverse=True", steps=steps)
    check = report.check(LABELS["trajectory"])
    assert check.trajectory.growth.growth == Growth.UNDETERMINED
    said = f"growth=undetermined: {steps} steps (< {MIN_STEPS}), "
    assert said in render_case(report)
    assert said in cases_markdown([report])
    growth = cases_json([report])["cases"][0]["checks"][0]["trajectory"]["growth"]
    assert growth["class"] == "undetermined"
    assert growth["reason"] == f"{steps} steps (< {MIN_STEPS})"
    page = html.unescape(render_cases_html([report]))
    assert said in page and "growth=undetermined, float64 rounding." in page  # line, alt text
    for text in (render_case(report), json.dumps(growth), page):
        assert "too short" not in text
