"""The explained run, end to end on a ported model: the A1 MLP trained 20 steps with Adam on
both sides, as a user porting it would write it, with variants planted on the engine side.

- Adam alone: burn's f32 bias corrections part the float64 runs; the explained run (the
  engine with its divergence switches on) agrees with torch to rounding, and the advice names
  `adam.bias_correction` and where it is documented.
- Adam and a planted f32 table (the engine builds an input offset in float32 whatever the
  dtype, torch in the model's dtype): Adam's switch closes most of the float64 gap, the table
  remains, reported as unexplained with the keys that part.
- A planted bug (the engine zeroes fc2.bias): unexplained; no `differ` advised, and a
  systematic differ that blames Adam fails.
"""

import html
import json

import numpy as np
import pytest

from harness.case import CaseDefinitionError, load_case
from harness.checks import resolve_because
from harness.engine import divergence
from harness.report.html import render_cases_html
from harness.report.json_doc import cases_json, schema_errors
from harness.report.text import render_case
from harness.runner import check_case, explained_run, run_side

CASE = '''"""The A1 MLP ported with Adam; the engine side has a planted variant: {variant}."""
import numpy as np
import torch
import torch.nn.functional as F

from harness.a1 import a1_engine, a1_torch, engine_params, f32, torch_params
from harness.case import agree, differ, predicate, trajectory
from harness.tolerances import Tolerance
from harness.engine import AdamConfig, CrossEntropyLossConfig, Device, GradientsParams
from harness.engine import Param, Tensor

STEPS, LR, EPS = 20, 0.01, 1e-8
VARIANT = "{variant}"


def offsets(shape, dtype):
    """A small input offset built in ``dtype``: a table, as a positional encoding is."""
    dt = np.dtype(dtype).type
    return np.sin(np.arange(np.prod(shape), dtype=dt).reshape(shape) * dt(0.7)) * dt(0.1)


def torch_side(dtype=torch.float32):
    model, x, y = a1_torch(dtype=dtype)
    x = x + torch.from_numpy(offsets(x.shape, str(dtype).removeprefix("torch.")))
    # burn stores the betas and epsilon as f32: PyTorch is given the same constants.
    optim = torch.optim.Adam(model.parameters(), lr=LR, betas=(f32(0.9), f32(0.999)), eps=f32(EPS))
    losses, params = [], []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
        params.append(torch_params(model))
    return {{"steps": {{"loss": torch.stack(losses), **_stacked(params, torch.stack)}}}}


def _stacked(per_step, stack):
    return {{f"params.{{k}}": stack([p[k] for p in per_step]) for k in per_step[0]}}


def engine_side(dtype="float32"):
    device = Device.flex().autodiff()
    model, x, y = a1_engine(device, dtype=dtype)
    table = offsets(x.shape, "float32" if VARIANT == "f32 table" else dtype)
    x = x + Tensor.from_numpy(table.astype(dtype), device)
    if VARIANT == "zeroed fc2.bias":
        model.fc2.bias = Param.from_tensor(Tensor.from_numpy(np.zeros(3, dtype), device))
    optim = AdamConfig(epsilon=EPS).init()
    loss_fn = CrossEntropyLossConfig().init(device)
    losses, params = [], []
    for _ in range(STEPS):
        loss = loss_fn.forward(model.forward(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(LR, model, grads)
        losses.append(loss.numpy().reshape(()))
        params.append({{k: v.numpy() for k, v in engine_params(model).items()}})
    return {{"steps": {{"loss": np.stack(losses), **_stacked(params, np.stack)}}}}


CHECKS = [{checks}]
'''

TRAJECTORY = 'trajectory("steps.*")'
SYSTEMATIC = 'differ("steps.*", because="harness.engine.optim.Adam", systematic=True)'
LOOSE = SYSTEMATIC[:-1] + ', tol=Tolerance(1e-3, reason="a test: the gap is under it"))'
AGREE = (
    TRAJECTORY
    + ', agree("steps.*", tol=Tolerance(1e-3, reason="a test: the gap is under it")), '
    + ('agree("steps.loss", tol=Tolerance(1e-9, reason="a test: the gap is over it"))')
)
UNDER = ", ".join(
    [
        TRAJECTORY,
        'differ("steps.loss", because="harness.engine.optim.Adam", tol=Tolerance(1e-3, '
        'reason="a test"), relation=predicate("any", lambda a, b: True))',
    ]
)
LABELS = {
    UNDER: "differ:steps.loss:torch~engine",
    AGREE: "agree:steps.*:torch~engine",
    TRAJECTORY: "trajectory:steps.*:torch~engine",
    SYSTEMATIC: "differ:steps.*:torch~engine",
    LOOSE: "differ:steps.*:torch~engine",
}
ADAM = (
    "adam.bias_correction (PyTorch computes Adam's bias corrections 1 - beta^t in f64; "
    "documented at harness.engine.optim.Adam)"
)
UNEXPLAINED = "unexplained: a difference in one side's code; not a documented burn behaviour"


def run(tmp_path, variant="", checks=TRAJECTORY):
    folder = tmp_path / "cases"
    folder.mkdir()
    path = folder / "ported_a1.py"
    path.write_text(CASE.format(variant=variant, checks=checks))
    report = check_case(load_case(path), golden_dir=tmp_path / "golden", out_dir=tmp_path / "out")
    assert report.error is None, report.error
    return report, report.check(LABELS[checks])


def test_adam_alone_is_explained_by_its_switch(tmp_path):
    _, check = run(tmp_path)
    assert not check.ok  # a trajectory check: the float64 runs part
    assert check.trajectory.precision.verdict == "formula"
    assert check.message == (
        f"formula difference, explained by {ADAM}: with the engine following PyTorch there "
        "the float64 runs agree to rounding; declare it with "
        'differ(..., because="harness.engine.optim.Adam", systematic=True)'
    )
    out = tmp_path / "out" / "ported_a1"
    explained = json.loads((out / "engine.explained.float64.json").read_text())
    assert explained["values"]["steps.loss"]["dtype"] == "float64"
    assert not (tmp_path / "golden" / "ported_a1" / "engine.explained.json").exists()


def test_the_switch_makes_the_engine_agree_with_torch_to_float64_rounding(tmp_path):
    """Cross-check of the switch itself, outside the verdict: with Adam's switch on, the
    engine's float64 losses are within a few float64 ULP of torch's; without it, they part by
    burn's f32 rounding of 1 - 0.999^t (relative ~1e-8 after a few steps)."""
    run(tmp_path)
    case = load_case(tmp_path / "cases" / "ported_a1.py")
    torch64 = run_side(case, "torch", dtype="float64")["steps.loss"]
    engine64 = run_side(case, "engine", dtype="float64")["steps.loss"]
    explained64 = explained_run(case, ("adam.bias_correction",)).values["float64"]["steps.loss"]
    assert np.max(np.abs(explained64 - torch64) / np.abs(torch64)) < 64 * 2.0**-52
    assert np.max(np.abs(engine64 - torch64) / np.abs(torch64)) > 1e-9


def test_a_planted_f32_table_remains_unexplained_beside_adam(tmp_path):
    _, check = run(tmp_path, variant="f32 table")
    assert not check.ok
    assert check.message.startswith(f"formula difference, {UNEXPLAINED} (with the divergence ")
    assert "the float64 runs still part (first keys: steps.loss, steps.params.fc1.weight" in (
        check.message
    )
    # Adam's switch closes most of the gap: named as the part the switches explain.
    assert "; adam.bias_correction explains part of it (float64 max|diff| " in check.message
    assert "differ(" not in check.message


def test_a_planted_bug_gets_no_differ_advice(tmp_path):
    _, check = run(tmp_path, variant="zeroed fc2.bias")
    assert not check.ok
    assert check.message.startswith(f"formula difference, {UNEXPLAINED}")
    assert "differ(" not in check.message and "systematic" not in check.message


def test_a_systematic_differ_cannot_bless_a_bug(tmp_path):
    _, check = run(tmp_path, variant="zeroed fc2.bias", checks=SYSTEMATIC)
    assert not check.ok
    assert check.message.startswith(
        "an unexplained formula difference remains besides harness.engine.optim.Adam: with "
        "the divergence switches on, the float64 runs still part (first keys: steps.loss"
    )
    assert check.message.endswith(UNEXPLAINED)


def test_a_systematic_differ_holds_while_its_switch_explains_it(tmp_path):
    _, check = run(tmp_path, checks=SYSTEMATIC)
    assert check.ok, check.message
    assert check.message.endswith(f"; the documented divergences explain it: {ADAM}")


def test_a_systematic_differ_under_its_tolerance_never_reads_vanished(tmp_path):
    """The float32 values agree within a loose tolerance, the float64 runs part: the check
    holds, and neither its message nor its tables say the divergence vanished."""
    report, check = run(tmp_path, checks=LOOSE)
    assert check.ok and check.diff.ok, check.message
    words = "within tolerance (a systematic divergence: the float64 runs judge it)"
    text = render_case(report)
    assert words in text and "vanished" not in text
    page = render_cases_html([report])
    assert words in page and "vanished" not in page


def test_agree_checks_carry_the_float64_verdict_per_key(tmp_path):
    """An agree check of a case with float64 reruns (it has a trajectory check) within a loose
    tolerance still reports the formula difference its float64 runs show (Adam's), in text,
    JSON and HTML; a failing key gets its own sentence."""
    report, check = run(tmp_path, checks=AGREE)
    assert check.ok and check.precision
    assert {p.verdict for p in check.precision} == {"formula"}
    assert all(p.within_tol for p in check.precision)
    assert [p.key for p in check.precision] == list(check.parts64)
    assert check.explanation == f"float64: explained by {ADAM}"  # Adam's switch, as a trajectory
    tight = report.check("agree:steps.loss:torch~engine")
    assert not tight.ok
    (loss,) = tight.precision
    sentence = f"steps.loss: formula: the float64 runs part too ({loss.excess_bits:.1f} bits over"
    text = render_case(report)
    assert f"float64: {sentence}" in text
    assert f"float64: {len(check.precision)} keys within tolerance, but formula: " in text
    doc = cases_json([report])
    assert schema_errors(doc) == []
    (_, first, second) = doc["cases"][0]["checks"]
    assert first["precision"][0] == {
        "key": "steps.loss",
        "verdict": "formula",
        "excess_bits": check.precision[0].excess_bits,
        "within_tolerance": True,
    }
    assert second["precision"][0]["within_tolerance"] is False
    assert first["explanation"] == check.explanation
    page = html.unescape(render_cases_html([report]))
    assert sentence in page and "keys within tolerance, but formula" in page
    assert check.explanation in page


def test_a_differ_under_its_tolerance_whose_float64_runs_part_has_not_vanished(tmp_path):
    report, check = run(tmp_path, checks=UNDER)
    assert not check.ok and check.diff.ok
    assert check.message == (
        "values within tolerance, but the float64 runs part at ['steps.loss']: the divergence "
        "is under the tolerance (tighten tol, or for a trajectory use systematic=True)"
    )
    text = render_case(report)
    assert "within tolerance, but the float64 runs part" in text and "vanished" not in text


def test_switches_are_off_by_default_and_restored():
    bias = divergence.switch("adam.bias_correction")
    assert not bias.on
    with divergence.follow_pytorch("adam.bias_correction") as consulted:
        assert bias.on and consulted == {"adam.bias_correction"}
        with divergence.follow_pytorch():
            assert not bias.on
        assert bias.on
    assert not bias.on
    known = r"no divergence switch 'adam\.nope'; known: adam\.bias_correction, "
    with pytest.raises(KeyError, match=known), divergence.follow_pytorch("adam.nope"):
        pass


def test_every_switch_names_an_object_whose_docstring_documents_it():
    for switch in divergence.switches():
        assert resolve_because(switch.target), switch  # resolves, and documents PyTorch


def test_because_accepts_positional_encoding_and_says_what_to_add():
    assert resolve_because("harness.engine.nn.pos_encoding.PositionalEncoding").startswith(
        "`input + sinusoids[:, :seq]`"
    )
    with pytest.raises(CaseDefinitionError) as raised:
        resolve_because("harness.engine.device.Device")
    assert str(raised.value) == (
        "because='harness.engine.device.Device': its docstring does not document a PyTorch "
        "difference (add a sentence naming PyTorch, e.g. 'PyTorch difference: ...', to the "
        "docstring of harness.engine.device.Device or of its module)"
    )
