"""LOCALISE in a case file: the runner localises the case, the text line and the JSON table
report it, and a malformed LOCALISE is a one-line error naming the file and key."""

from __future__ import annotations

import textwrap

import pytest

from harness.case import CaseDefinitionError, load_case
from harness.report.html import render_cases_html
from harness.report.json_doc import cases_json
from harness.report.localise import verdict_text
from harness.report.schema import REPORT_SCHEMA, schema_errors
from harness.report.text import render_case_line
from harness.results import Localisation, ModuleRow
from harness.runner import check_case
from harness.trajectory import Precision

# The A1 model (fc1, relu, fc2) on both sides; the engine's fc2 output gets 1e-3 added in its
# forward when PLANT is set: a formula difference in fc2.
CASE = '''
"""A1 forward and backward, localised."""
import torch
import torch.nn.functional as F

from harness.a1 import a1_engine, a1_torch
from harness.case import agree, localise
from harness.engine import CrossEntropyLossConfig, Device
from harness.engine.module.layers import Linear

PLANT = {plant}


def torch_side(dtype=torch.float32):
    model, x, y = a1_torch(dtype=dtype)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return {{"loss": loss.detach()}}


class Planted(Linear):
    def forward(self, x):
        return super().forward(x).add_scalar(1e-3)


def engine_side(dtype="float32"):
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device, dtype=dtype)
    if PLANT:
        model.fc2.__class__ = Planted
    loss = CrossEntropyLossConfig().init(device).forward(model.forward(x), y)
    loss.backward()
    return {{"loss": loss.reshape([])}}


LOCALISE = {localise}
CHECKS = [agree("loss")]
TOLERANCES = {{}}
'''


def _case(tmp_path, plant=False, localise="localise(steps=1)"):
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    path = folder / "a1_localised.py"
    path.write_text(textwrap.dedent(CASE.format(plant=plant, localise=localise)))
    return load_case(path)


def _report(tmp_path, plant):
    dirs = {"golden_dir": tmp_path / "golden", "out_dir": tmp_path / "out"}
    return check_case(_case(tmp_path, plant), **dirs)


def test_a_localised_case_reports_its_first_parting_module(tmp_path):
    report = _report(tmp_path, plant=True)
    first = report.localisation.first
    assert (first.step, first.phase, first.path) == (0, "forward", "fc2")
    line = render_case_line(report).splitlines()[1]
    assert line.startswith(
        "       localise: first parts at step 0, forward, `fc2` output > `add_scalar` (engine op "
        "2 of 2): float64 says formula ("
    )
    doc = cases_json([report])
    assert schema_errors(doc, REPORT_SCHEMA) == []
    table = doc["cases"][0]["localisation"]
    assert table["rows"][table["first"]]["path"] == "fc2"
    assert table["op"] == {"name": "add_scalar", "index": 1, "count": 2, "shape": [4, 3],
                           "torch_ops": table["op"]["torch_ops"]}  # fmt: skip
    assert table["line"] == verdict_text(report.localisation)
    page = render_cases_html([report])
    assert '<p class="verdict">localise: first parts at step 0, forward, `fc2` output' in page
    assert page.count("background:hsl(") == len(report.localisation.rows)  # one step
    assert "border:2px solid black" in page  # the first parting value is outlined


def test_an_unchanged_case_says_rounding_everywhere(tmp_path):
    report = _report(tmp_path, plant=False)
    assert report.localisation.first is None
    assert render_case_line(report).splitlines()[1] == (
        f"       localise: rounding everywhere: {len(report.localisation.rows)} module values "
        "over 1 step(s) agree to rounding in float64"
    )
    assert schema_errors(cases_json([report]), REPORT_SCHEMA) == []


def test_a_case_without_localise_has_no_line(tmp_path):
    report = check_case(
        _case(tmp_path, localise="None"),
        golden_dir=tmp_path / "golden",
        out_dir=tmp_path / "out",
    )
    assert report.localisation is None
    assert "\n" not in render_case_line(report)
    assert cases_json([report])["cases"][0]["localisation"] is None


def test_a_malformed_localise_is_a_one_line_error(tmp_path):
    with pytest.raises(CaseDefinitionError) as raised:
        _case(tmp_path, localise="2")
    assert str(raised.value) == (
        f"{tmp_path / 'cases' / 'a1_localised.py'}: LOCALISE: expected "
        "harness.case.localise(...), got 2"
    )


def _row(phase, path, verdict, bits):
    return ModuleRow(0, phase, path, path, 0, (2, 3), False, 1e-3, 1e-3, bits, verdict)


def test_verdict_lines_to_the_letter():
    rounding = _row("forward", "embed", Precision.ROUNDING, 0.0)
    parting = _row("input", "encoder", Precision.FORMULA, 28.4)
    found = Localisation((rounding, parting), parting, 1, ())
    assert verdict_text(found) == (
        "first parts at step 0, forward, `encoder` input (after `embed` output): "
        "float64 says formula (28 bits over rounding)"
    )
    nan = _row("grad_input", "attn", Precision.FORMULA, float("inf"))
    assert verdict_text(Localisation((nan,), nan, 1, ())) == (
        "first parts at step 0, backward, `attn` input gradient: float64 says formula "
        "(not finite on one side)"
    )


def test_a_side_raising_under_localise_is_reported_not_raised(tmp_path):
    case = _case(tmp_path)
    text = case.path.read_text().replace(
        "    device = Device.flex().autodiff()\n",
        "    device = Device.flex().autodiff()\n"
        "    if dtype == 'float64':\n"
        "        raise ValueError('no float64 here')\n",
    )
    case.path.write_text(text)
    report = check_case(load_case(case.path), golden_dir=tmp_path / "g", out_dir=tmp_path / "o")
    assert report.localisation is None
    assert report.localise_error == "localise: ValueError: no float64 here"
    assert render_case_line(report).splitlines()[1] == (
        "       localise: ValueError: no float64 here"
    )
    assert schema_errors(cases_json([report]), REPORT_SCHEMA) == []
