"""Half trajectory checks end to end: a synthetic bfloat16 case (a toy least-squares loop,
each op in float32 rounded once) run by the runner, whose half runs, float32 reruns (recorded
beside them) and float64 reruns give the half verdict; the check holds only for the verdict it
expects, and the text, JSON and HTML reports state it. ``cases/bf16_train.py`` is the real
case."""

import pytest

from harness.case import CaseDefinitionError, load_case, trajectory
from harness.report.html import render_cases_html
from harness.report.json_doc import cases_json, schema_errors
from harness.report.text import render_case
from harness.runner import check_case

CASE = '''"""A synthetic half case: least squares in bfloat16, the engine with float32 weights."""
import ml_dtypes
import numpy as np
import torch  # noqa: F401  (loads torch's OpenMP pool before the environment is recorded)

from harness.case import trajectory

X = (((np.arange(64).reshape(16, 4) * 7) % 11) * 0.1 - 0.5).astype(np.float32)
LOW = {{"bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.float32, "float64": np.float64}}


def descent(dtype, master=False):
    low = LOW[str(dtype).removeprefix("torch.")]
    work = np.float64 if low == np.float64 else np.float32

    def r(v):
        return np.asarray(v, work).astype(low).astype(work)

    w = r(np.ones(4))
    x = r(X)
    ws, losses = [], []
    for _ in range(30):
        weights = r(w) if master else w
        out = r(x @ weights)
        losses.append(r(np.mean(out * out)))
        g = r(r(x.T @ out) * work(2 / 16))
        if master and low != work:  # float32 master weights
            w = (w - work({lr}) * g).astype(np.float32)
        else:
            w = r(w - r(work({lr}) * g))
        ws.append(r(w))
    return {{"w": np.stack(ws).astype(low), "loss": np.stack(losses).astype(low)}}


def torch_side(dtype=None):
    if dtype is not None:
        return {{"bf16": {{"run": descent(dtype)}}}}
    return {{"bf16": {{"run": descent("bfloat16")}}, "f32": {{"run": descent("float32")}}}}


def engine_side(dtype=None):
    if dtype is not None:
        return {{"bf16": {{"run": descent(dtype, {master})}}}}
    half = descent("bfloat16", {master})
    return {{"bf16": {{"run": half}}, "f32": {{"run": descent("float32", {master})}}}}


CHECKS = [
    trajectory(
        "*",
        "torch:bf16.run.",
        "engine:bf16.run.",
        float32=("torch:f32.run.", "engine:f32.run."),
        expect="{expect}",
    )
]
'''
LABEL = "trajectory:*:torch:bf16.run~engine:bf16.run"
LR = 4 * 2.0**-7  # updates (lr * g, g about 0.05) of a fraction of the weights' ULP


def run(tmp_path, *, master, expect):
    folder = tmp_path / "cases"
    folder.mkdir(parents=True)
    path = folder / "synthetic_half.py"
    path.write_text(CASE.format(master=master, expect=expect, lr=LR))
    return check_case(load_case(path), golden_dir=tmp_path / "golden", out_dir=tmp_path / "out")


@pytest.mark.parametrize(
    ("master", "cause"), [(False, "rounding"), (True, "accumulation")], ids=["same", "master"]
)
def test_the_check_holds_for_the_verdict_it_expects_only(tmp_path, master, cause):
    held = run(tmp_path / "a", master=master, expect=cause).check(LABEL)
    assert held.ok, held.message
    assert held.message == f"bfloat16 {cause} as expected"
    assert held.trajectory.half.cause == cause
    other = "accumulation" if cause == "rounding" else "rounding"
    failed = run(tmp_path / "b", master=master, expect=other).check(LABEL)
    assert not failed.ok
    assert failed.message == f"expected {other}, but the bfloat16 verdict is {cause}"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return [run(tmp_path_factory.mktemp("r"), master=True, expect="accumulation")]


def test_text_states_the_half_verdict(reports):
    text = render_case(reports[0])
    line = next(s.strip() for s in text.splitlines() if s.strip().startswith("trajectory 30"))
    assert ", bfloat16: formula (accumulation: one side keeps more in float32); " in line
    assert "float64:" not in line.split("bfloat16:")[0]  # the half verdict replaces it


def test_json_carries_the_half_verdict_and_validates(reports):
    doc = cases_json(reports)
    assert schema_errors(doc) == []
    half = doc["cases"][0]["checks"][0]["trajectory"]["half"]
    assert half["cause"] == "accumulation" and half["dtype"] == "bfloat16"
    assert half["float32_pair"]["dtype"] == "float32"
    doc["cases"][0]["checks"][0]["trajectory"]["half"]["cause"] = "luck"
    assert schema_errors(doc)


def test_html_shows_the_half_verdict(reports):
    page = render_cases_html(reports)
    assert "bfloat16: formula (accumulation: one side keeps more in float32)" in page
    assert "bfloat16 pair" in page or "<img" in page  # the plot (or its table) is there


def test_expect_other_than_rounding_needs_a_half_pair():
    with pytest.raises(CaseDefinitionError, match="only for a half pair"):
        trajectory("*", expect="accumulation")
    with pytest.raises(CaseDefinitionError, match="one of"):
        trajectory("*", float32=("torch:a.", "engine:a."), expect="luck")
