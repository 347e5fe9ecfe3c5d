"""The case API: side references, the three check kinds, and case-file validation."""

import os
from pathlib import Path

import numpy as np
import pytest

from harness import record
from harness.case import (
    Agree,
    Case,
    CaseDefinitionError,
    SideRef,
    agree,
    capture,
    differ,
    equals,
    expect,
    load_case,
    raises_vs_value,
    same_values_other_shape,
    scaled,
)
from harness.checks import DOC_SENTENCE_LIMIT, doc_sentence, evaluate_check, resolve_because
from harness.runner import CaseRun
from harness.tolerances import Tolerance, resolve

F32 = np.float32


def make_run(torch_values: dict, engine_values: dict, checks=(), tolerances=None) -> CaseRun:
    case = Case(
        name="synthetic",
        doc="synthetic",
        path=Path("synthetic.py"),
        torch_side=lambda: torch_values,
        engine_side=lambda: engine_values,
        checks=tuple(checks),
        tolerances=tolerances or {},
    )
    return CaseRun(case, {}, {"torch": torch_values, "engine": engine_values}, {})


def arr(*values, dtype=F32):
    return np.array(values, dtype=dtype)


class TestSideRef:
    def test_parse_plain_and_prefixed(self):
        assert SideRef.parse("torch") == SideRef("torch", "")
        assert SideRef.parse("engine:full.") == SideRef("engine", "full.")
        assert SideRef.parse("engine:full.").label == "engine:full"

    def test_unknown_side_is_rejected(self):
        with pytest.raises(CaseDefinitionError, match="expected 'torch' or 'engine'"):
            SideRef.parse("jax")

    def test_select_strips_prefix_and_matches_pattern(self):
        values = {"full.grads.a": 1, "full.loss": 2, "acc.grads.a": 3}
        assert SideRef("torch", "full.").select(values, "grads.*") == {"grads.a": 1}
        assert SideRef("torch", "").select(values, "*.loss") == {"full.loss": 2}


class TestAgree:
    def test_within_tolerance_passes(self):
        run = make_run({"y": arr(1.0, 2.0)}, {"y": arr(1.0, np.nextafter(F32(2.0), F32(3.0)))})
        assert evaluate_check(run, agree("y")).ok

    def test_beyond_tolerance_fails_with_diff(self):
        run = make_run({"y": arr(1.0, 2.0)}, {"y": arr(1.0, 2.5)})
        result = evaluate_check(run, agree("y"))
        assert not result.ok
        assert result.diff is not None and not result.diff.ok

    def test_explicit_tolerance_overrides_default(self):
        run = make_run({"y": arr(1.0)}, {"y": arr(1.1)})
        assert evaluate_check(run, agree("y", tol=Tolerance(atol=0.2, reason="test"))).ok

    def test_case_override_applies_per_key(self):
        tolerances = {"y": Tolerance(atol=0.2, reason="test")}
        run = make_run({"y": arr(1.0)}, {"y": arr(1.1)}, tolerances=tolerances)
        assert evaluate_check(run, agree("y")).ok

    def test_pattern_matching_nothing_fails(self):
        run = make_run({"y": arr(1.0)}, {"y": arr(1.0)})
        result = evaluate_check(run, agree("nothing*"))
        assert not result.ok
        assert result.message == "pattern 'nothing*' matched no value"

    def test_key_on_one_side_only_fails(self):
        run = make_run({"y": arr(1.0), "z": arr(2.0)}, {"y": arr(1.0)})
        assert not evaluate_check(run, agree("*")).ok

    def test_prefixes_compare_two_parts_of_one_side(self):
        run = make_run({"full.g": arr(1.0), "acc.g": arr(1.0)}, {})
        assert evaluate_check(run, agree("g", "torch:full.", "torch:acc.")).ok

    def test_none_agrees_with_none(self):
        assert evaluate_check(make_run({"g": None}, {"g": None}), agree("g")).ok


class TestDiffer:
    because = "harness.engine.autodiff.Gradients"

    def test_passes_while_values_differ_and_relation_holds(self):
        run = make_run({"g": arr(4.0, 8.0)}, {"g": arr(2.0, 4.0)})
        result = evaluate_check(run, differ("g", because=self.because, relation=scaled(2)))
        assert result.ok, result.message
        assert result.documented_by == "The gradients of one backward pass, keyed by node id."

    def test_fails_when_divergence_vanishes(self):
        run = make_run({"g": arr(2.0, 4.0)}, {"g": arr(2.0, 4.0)})
        result = evaluate_check(run, differ("g", because=self.because, relation=scaled(2)))
        assert not result.ok
        assert result.message == "expected divergence vanished"

    def test_fails_when_relation_breaks(self):
        run = make_run({"g": arr(5.0, 8.0)}, {"g": arr(2.0, 4.0)})
        result = evaluate_check(run, differ("g", because=self.because, relation=scaled(2)))
        assert not result.ok
        assert result.message == "values differ but the relation 'left = 2 x right' fails for ['g']"

    def test_unresolvable_because_fails(self):
        run = make_run({"g": arr(4.0)}, {"g": arr(2.0)})
        check = differ("g", because="harness.engine.no_such_thing", relation=scaled(2))
        result = evaluate_check(run, check)
        assert not result.ok
        assert "because='harness.engine.no_such_thing'" in result.message

    def test_because_is_required(self):
        with pytest.raises(CaseDefinitionError, match="'because' must name an engine docstring"):
            differ("g", because="", relation=scaled(2))

    def test_raises_vs_value(self):
        error = record.CapturedError("RuntimeError", "boom")
        run = make_run({"g": error}, {"g": arr(2.0)})
        check = differ("g", because=self.because, relation=raises_vs_value("RuntimeError"))
        assert evaluate_check(run, check).ok
        wrong_type = differ("g", because=self.because, relation=raises_vs_value("ValueError"))
        assert not evaluate_check(run, wrong_type).ok

    def test_same_values_other_shape(self):
        run = make_run({"loss": np.array(F32(1.5))}, {"loss": arr(1.5)})
        check = differ("loss", because=self.because, relation=same_values_other_shape())
        assert evaluate_check(run, check).ok


class TestExpect:
    def test_value_expectation(self):
        run = make_run({}, {"h_grad": None, "n": 4})
        assert evaluate_check(run, expect("h_grad", "engine", None)).ok
        assert evaluate_check(run, expect("n", "engine", 4)).ok
        failed = evaluate_check(run, expect("n", "engine", 5))
        assert not failed.ok
        assert failed.message == "expected == 5; got n=4"

    def test_array_expectation_is_exact(self):
        run = make_run({}, {"g": arr(2.0, 4.0)})
        assert evaluate_check(run, expect("g", "engine", equals([2.0, 4.0]))).ok
        assert not evaluate_check(run, expect("g", "engine", equals([2.0, 4.000001]))).ok


def test_capture_returns_value_or_error():
    assert capture(lambda: 3) == 3
    error = capture(lambda: 1 / 0)
    assert error == record.CapturedError("ZeroDivisionError", "division by zero")


def test_resolve_because_returns_first_docstring_line():
    first_line = "Backpropagate from this tensor and return a new `Gradients` container."
    assert resolve_because("harness.engine.tensor.Tensor.backward") == first_line


def test_resolve_because_reads_the_first_sentence_across_wrapped_lines():
    assert resolve_because("harness.engine.tensor.Tensor.grad") == (
        "This tensor's gradient in `grads` as a plain tensor, or None (intermediate, untracked, "
        "unreachable, another node, entry taken, other container)."
    )


def test_doc_sentence_stops_at_the_first_full_stop_of_the_first_paragraph():
    doc = """Adam, in burn's order: f32
    scalars. Then more.

    A second paragraph."""
    assert doc_sentence(doc) == "Adam, in burn's order: f32 scalars."
    assert doc_sentence("No full stop\n  across lines\n\nnext") == "No full stop across lines"
    assert doc_sentence("Rounds, e.g. sqrt, in f32. Rest.") == "Rounds, e.g. sqrt, in f32."
    assert doc_sentence("Ends with v1.2 inside. Rest.") == "Ends with v1.2 inside."


def test_doc_sentence_cuts_a_long_sentence_at_a_word_with_an_ellipsis():
    assert doc_sentence("aaa bbb, ccc ddd.", limit=12) == "aaa bbb…"  # comma dropped
    assert doc_sentence("aaa bbb ccc.", limit=12) == "aaa bbb ccc."  # fits exactly
    assert doc_sentence("aaaaaaaaaaaaaaaa.", limit=8) == "aaaaaaa…"  # no space: a hard cut
    assert doc_sentence("x " * 200, limit=DOC_SENTENCE_LIMIT).endswith("x…")
    assert len(doc_sentence("word " * 100)) <= DOC_SENTENCE_LIMIT


def test_resolve_because_requires_a_documented_pytorch_difference():
    with pytest.raises(CaseDefinitionError, match="does not document a PyTorch difference"):
        resolve_because("harness.case.agree")


class TestLoadCase:
    def write(self, tmp_path, body):
        path = tmp_path / "mycase.py"
        path.write_text(body)
        return path

    def test_valid_case_loads(self, tmp_path):
        path = self.write(
            tmp_path,
            '"""Doc."""\nfrom harness.case import agree\n'
            "def torch_side(): return {}\ndef engine_side(): return {}\nCHECKS = [agree('*')]\n",
        )
        case = load_case(path)
        assert case.name == "mycase" and case.doc == "Doc." and isinstance(case.checks[0], Agree)

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ("def engine_side(): pass\nCHECKS=[1]\n", "torch_side: missing"),
            (
                '"""D."""\ndef torch_side(): pass\ndef engine_side(): pass\nCHECKS=[]\n',
                "CHECKS: empty",
            ),
            ("def torch_side(): pass\ndef engine_side(): pass\nCHECKS=[1]\n", "docstring: missing"),
            (
                '"""D."""\ndef torch_side(): pass\ndef engine_side(): pass\nCHECKS=[1]\n',
                "is not agree/differ/expect",
            ),
            (
                '"""D."""\nfrom harness.case import agree\n'
                "from harness.tolerances import Tolerance\n"
                "def torch_side(): pass\ndef engine_side(): pass\nCHECKS=[agree('*')]\n"
                "TOLERANCES = {'w': Tolerance(1e-5)}\n",
                "TOLERANCES: tolerance override 'w' needs a reason",
            ),
        ],
    )
    def test_malformed_case_names_file_and_problem(self, tmp_path, body, message):
        path = self.write(tmp_path, body)
        with pytest.raises(CaseDefinitionError, match=message) as info:
            load_case(path)
        assert str(info.value).startswith(str(path))


def test_tolerance_resolution_prefers_case_override():
    override = Tolerance(atol=0.5, reason="why")
    assert resolve("grads.w", "float32", {"grads.*": override}) == override
    assert resolve("loss", "float32", {"grads.*": override}) != override


class TestOneSidedAndFlagRelations:
    error = record.CapturedError("AutodiffError", "Requires autodiff tensor.")

    def test_raises_message_is_exact_by_default(self):
        from harness.case import raises_message

        assert raises_message("Requires autodiff tensor.").holds(self.error, None)
        assert not raises_message("Requires autodiff").holds(self.error, None)
        assert raises_message("Requires autodiff", exact=False).holds(self.error, None)
        assert not raises_message("Requires autodiff tensor.").holds("a value", None)

    def test_flags_need_the_exact_pair_of_bools(self):
        from harness.case import flags

        relation = flags(True, False, "left only")
        assert relation.holds(True, False)
        assert not relation.holds(False, True)
        assert not relation.holds(1, 0)  # flags are bools, not truthy values
        assert relation.text == "left only"


def test_within_relates_same_shapes_within_an_absolute_bound():
    from harness.case import within

    relation = within(0.5, "a stated gap")
    assert relation.text == "within 0.5: a stated gap"
    assert relation.holds(np.array([1.0, 2.0]), np.array([1.4, 2.5]))
    assert not relation.holds(np.array([1.0, 2.0]), np.array([1.6, 2.0]))
    assert not relation.holds(np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]))


def test_a_case_edited_within_the_second_of_its_last_run_runs_as_edited(tmp_path, monkeypatch):
    """A bytecode cache is keyed by the source's mtime in whole seconds and its size: a digit
    changed within a second must not run the case as it was (load_case compiles the source)."""
    monkeypatch.setattr("sys.dont_write_bytecode", False)  # as under `make`, which writes them
    path = tmp_path / "edited.py"
    body = '"""Edited."""\nfrom harness.case import agree\n\n\ndef torch_side():\n'
    body += '    return {{"x": {}}}\n\n\nengine_side = torch_side\nCHECKS = [agree("x")]\n'
    path.write_text(body.format(1))
    stamp = path.stat().st_mtime_ns
    assert load_case(path).side_fn("torch")() == {"x": 1}
    path.write_text(body.format(2))  # the same size
    os.utime(path, ns=(stamp, stamp))  # and the same second
    assert load_case(path).side_fn("torch")() == {"x": 2}
