"""The op matrix: every engine op against PyTorch, forward and VJP, with declared divergences.

One pytest item per (op, dtype); each runs every shape x value set of that op. The expected
values are PyTorch's (run in the same item), never the engine's own output.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import numerics
from harness.engine.ops import PRIMITIVES, rule_for
from harness.opmatrix import cells, matrix
from harness.opmatrix.cells import DECLARED, FAIL, PASS, valuesets
from harness.opmatrix.divergences import DIVERGENCES, Divergence
from harness.opmatrix.inject import differentiable_ops, flipped_rule
from harness.opmatrix.matrix import run_item
from harness.opmatrix.opinion import TORCH_CLOSER
from harness.opmatrix.registry import (
    PAIRS,
    function_of,
    pair,
    tensor_op_methods,
    uncovered_methods,
    unknown_methods,
)

ITEMS = [(p.name, dtype) for p in PAIRS for dtype in matrix.DTYPES]


@pytest.mark.parametrize(("op", "dtype"), ITEMS, ids=[f"{o}-{d}" for o, d in ITEMS])
def test_op_agrees_with_torch_or_diverges_as_declared(op, dtype):
    item = run_item(op, dtype)
    assert item.status != FAIL, matrix.render_item_failure(item)


# --- the registry covers the engine ------------------------------------------------------------


def test_every_engine_tensor_op_has_a_pair():
    # Adding a Tensor op method without a check in its primitive's registration fails here.
    assert uncovered_methods() == []
    # Pairs of burn's tensor::activation / tensor::module functions are not Tensor methods.
    assert {p.method for p in PAIRS if function_of(p) is None} == tensor_op_methods()


def test_every_pair_names_an_engine_tensor_op():
    assert unknown_methods() == []


def test_every_backward_rule_is_exercised_by_some_pair():
    assert set(differentiable_ops()) <= {p.op for p in PAIRS}


def test_pair_names_are_unique():
    names = [p.name for p in PAIRS]
    assert len(names) == len(set(names))


def test_every_pair_has_a_shape_per_input_in_each_menu_entry():
    for p in PAIRS:
        for case in p.shapes:
            assert len(case.shapes) == len(p.inputs), (p.name, case.id)


def test_menu_covers_zero_d_broadcasting_and_empty_shapes():
    ids = {case.id for p in PAIRS for case in p.shapes}
    assert {"0d", "3", "3x2", "bcast", "empty"} <= ids


def test_kinks_and_specials_value_sets_are_chosen_per_op():
    assert valuesets(pair("relu")) == ("random", "kinks", "specials")
    assert valuesets(pair("exp")) == ("random", "specials")
    assert valuesets(pair("int")) == ("random",)  # NaN -> int is undefined


# --- the divergence table ----------------------------------------------------------------------


def _possible_keys():
    """Every comparison key the registry can produce (without running anything)."""
    for p in PAIRS:
        # "error": a cell where one side raises (unfold's window longer than the dim).
        checks = ["shape", "forward", "forward[1]", "error"] + [f"vjp.{n}" for n in p.float_inputs]
        for dtype in matrix.DTYPES:
            for case in p.shapes:
                for vs in valuesets(p):
                    for check in checks:
                        yield f"{p.name}/{dtype}/{case.id}/{vs}/{check}"


def test_every_declaration_has_a_reason_and_can_match_a_comparison():
    keys = list(_possible_keys())
    for div in DIVERGENCES:
        assert len(div.reason) > 20, div.pattern
        assert any(div.matches(k) for k in keys), f"{div.pattern} matches nothing"


def test_a_declared_divergence_that_vanishes_fails_the_item():
    fake = Divergence("neg/*/*/random/vjp.a", "pretend neg's gradient differs")
    item = run_item("neg", "float32", table=(fake,))
    assert item.status == FAIL
    assert item.vanished == [fake]
    assert "declared divergence vanished: neg/*/*/random/vjp.a" in matrix.render_item_failure(item)


def test_an_undeclared_divergence_fails_the_item():
    # max() on ties: torch splits the gradient, the engine gives it to the first maximum.
    item = run_item("max", "float32", table=())
    failing = [c.key for c in item.comparisons if c.status == FAIL]
    assert item.status == FAIL
    assert "max/float32/3/kinks/vjp.a" in failing
    assert "max/float32/3/random/shape" in failing  # [1] against torch's 0-d


def test_declared_divergences_are_reported_as_declared_with_their_reason():
    # (cast was the example until it became differentiable, issue 17: abs at NaN now.)
    item = run_item("abs", "float32")
    assert item.status == DECLARED
    declared = [c for c in item.comparisons if c.status == DECLARED]
    assert {c.check for c in declared} == {"vjp.a"}
    assert all("g * sign(x)" in c.reason for c in declared)


def test_max_ties_torch_splits_the_gradient_evenly():
    # Cross-check of the declared divergence against numbers fixed by construction.
    item = run_item("max", "float64")
    comp = next(c for c in item.comparisons if c.key == "max/float64/3/kinks/vjp.a")
    t, e = comp.values  # inputs [1, 1, -0.5]: ties at 0 and 1
    assert t[0] == t[1] == pytest.approx(e[0] / 2)
    assert e[1] == 0 and t[2] == e[2] == 0


# --- an injected bug is caught -----------------------------------------------------------------


def test_a_sign_flipped_exp_rule_fails_exp_and_torch_is_closer():
    with flipped_rule("exp"):
        item = run_item("exp", "float32")
    failing = [c for c in item.comparisons if c.status == FAIL]
    assert item.status == FAIL
    assert failing and all(c.check == "vjp.a" for c in failing)
    verdicts = {c.opinion.verdict for c in failing if c.opinion is not None}
    assert verdicts == {TORCH_CLOSER}
    assert "torch closer" in matrix.render_item_failure(item)


def test_a_sign_flipped_rule_does_not_leak_into_other_ops_or_outlive_the_block():
    with flipped_rule("exp"):
        assert run_item("tanh", "float32").status == PASS
    assert run_item("exp", "float32").status == PASS


def test_a_sign_flipped_mul_rule_is_caught():
    with flipped_rule("mul"):
        item = run_item("mul", "float64")
    assert item.status == FAIL


# --- the coverage table and JSON -----------------------------------------------------------------


def test_json_output_is_deterministic(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    matrix.write_json(matrix.run_matrix(["sum", "relu"]), first)
    matrix.write_json(matrix.run_matrix(["sum", "relu"]), second)
    assert first.read_bytes() == second.read_bytes()
    doc = json.loads(first.read_text())
    dtypes = ("float32", "float64", "float16", "bfloat16")
    assert [(i["op"], i["dtype"]) for i in doc["items"]] == [
        (op, dtype) for op in ("sum", "relu") for dtype in dtypes
    ]
    assert doc["items"][0]["status"] == DECLARED
    assert doc["summary"]["items"] == 8 and doc["summary"]["fail_items"] == 0
    assert {d["pattern"] for d in doc["declarations"]} == {d.pattern for d in DIVERGENCES}


def test_opinion_all_gives_passing_float32_checks_an_opinion():
    item = run_item("exp", "float32", opinions=True)
    judged = [c for c in item.comparisons if c.opinion is not None]
    assert judged and all(c.status == PASS for c in judged)
    # exp's float32 results on both sides are roundings of the float64 values.
    assert {c.opinion.verdict for c in judged} == {"both within tol of float64"}


def test_cli_prints_the_table_writes_json_and_exits_0(tmp_path, capsys):
    path = tmp_path / "ops.json"
    assert matrix.main(["--ops", "neg,sum", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    first, header = out.splitlines()[:2]
    assert first == f"numerics: {numerics.describe(numerics.in_force())}"
    assert header.split() == ["op", "float32", "float64", "float16", "bfloat16"]
    assert "8 items (4 pass, 4 declared, 0 fail)" in out and "-> OK" in out
    doc = json.loads(path.read_text())
    assert doc["ok"] is True
    assert doc["numerics"] == numerics.in_force()


def test_cli_exits_1_on_an_injected_bug(tmp_path, capsys):
    path = tmp_path / "ops.json"
    assert (
        matrix.main(
            ["--ops", "exp", "--dtypes", "float32", "--json", str(path), "--inject-flip", "exp"]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "FAIL exp/float32/3/random/vjp.a" in out
    assert "torch closer" in out
    assert json.loads(path.read_text())["items"][0]["status"] == FAIL


def test_specials_include_nan_infinities_signed_zero_and_subnormals():
    s = cells.specials("float32")
    assert np.isnan(s).any() and np.isposinf(s).any() and np.isneginf(s).any()
    assert any(x == 0 and np.signbit(x) for x in s)
    tiny = np.finfo(np.float32).smallest_subnormal
    assert tiny in s and -tiny in s


# A sign-flipped zero gradient is the same zero (-0.0 == 0.0), so no comparison can see the flip
# of these rules (burn's float_zeros for the roundings, grad * 0 for sign); the test below pins
# that they are zero, and the matrix compares them with torch's zeros.
FLIP_INVISIBLE = ("ceil", "floor", "round", "sign", "trunc")


@pytest.mark.parametrize("rule", FLIP_INVISIBLE)
def test_piecewise_constant_rules_give_a_zero_gradient(rule):
    g = np.array([[1.5, -2.0], [np.inf, 0.25]], np.float32)
    x = np.array([[0.3, -1.7], [2.5, 0.0]], np.float32)
    _, saved = PRIMITIVES[rule].forward(x)
    with np.errstate(invalid="ignore"):  # sign's g * 0 at g = inf is NaN, as burn's
        (grad,) = rule_for(rule)(saved, g, (object(),))
    finite = np.isfinite(g)
    assert grad.shape == x.shape and np.all(grad[finite] == 0)


@pytest.mark.parametrize("rule", [r for r in differentiable_ops() if r not in FLIP_INVISIBLE])
def test_flipping_any_backward_rule_fails_an_item_that_uses_it(rule):
    # float64 only, and the first failing pair is enough: this runs once per rule.
    names = [p.name for p in PAIRS if p.op == rule]
    with flipped_rule(rule):
        caught = any(run_item(name, "float64").status == FAIL for name in names)
    assert caught, names


def test_json_writes_numpy_scalars_as_their_values():
    # A finite np.float32 used to come out as "Infinity" (every float took the non-finite path).
    doc = {"x": np.float32(1.5), "nan": np.float32("nan"), "n": np.int64(3)}
    text = json.dumps(doc, allow_nan=False, default=matrix._json_default)
    assert json.loads(text) == {"x": 1.5, "nan": "NaN", "n": 3}


@pytest.mark.parametrize(
    "argv", [["--ops", "add,nope"], ["--dtypes", "float8"], ["--inject-flip", "nope"]]
)
def test_cli_names_an_unknown_name_in_one_line_and_exits_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        matrix.main(argv)
    assert exc.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"python -m harness.opmatrix: error: argument {argv[0]}: ")


@pytest.mark.parametrize(
    ("flags", "isa", "declared"),
    [
        ({"avx", "avx2", "avx512f"}, "ALL", True),  # oneDNN's AVX-512 gelu: NaN at +inf
        ({"avx", "avx2", "avx512f"}, "AVX2", False),  # capped: its AVX2 kernel gives inf
        ({"avx", "avx2"}, "ALL", False),  # an AVX2 CPU
    ],
)
def test_a_declaration_tied_to_a_torch_kernel_holds_only_while_it_runs(
    monkeypatch, flags, isa, declared
):
    from harness.opmatrix import divergences
    from harness.opmatrix.registry import PAIRS_BY_NAME

    monkeypatch.setattr(divergences.numerics, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(divergences.numerics, "in_force", lambda: {"onednn_max_cpu_isa": isa})
    table = divergences._declarations((PAIRS_BY_NAME["gelu"],))
    assert any(d.pattern == "gelu/float32/*/specials/forward" for d in table) is declared


# --- the half rows (harness.opmatrix.half) -------------------------------------------------------


def test_half_rows_compare_half_values_under_the_half_tolerance():
    item = run_item("add", "bfloat16")
    rows = [c.row for c in item.comparisons if c.row is not None]
    assert rows and {r.dtype_a for r in rows} == {"bfloat16"}
    assert item.status == PASS


def test_a_half_divergence_is_judged_against_the_float32_reference():
    # torch's half conv2d backward accumulates in float16; the engine keeps the float32 result
    # rounded once, which the declaration requires (harness.opmatrix.divergences, half rows).
    item = run_item("conv2d", "float16")
    declared = [c for c in item.comparisons if c.status == DECLARED]
    assert declared and all(c.opinion.reference == "float32-rounded" for c in declared)
    assert all(c.opinion.engine_error <= c.opinion.torch_error for c in declared)


def test_a_sign_flipped_rule_fails_its_half_rows():
    with flipped_rule("exp"):
        for dtype in ("float16", "bfloat16"):
            item = run_item("exp", dtype)
            assert item.status == FAIL
            assert any(c.key.endswith("vjp.a") and c.status == FAIL for c in item.comparisons)


def test_a_float32_row_declaration_holds_in_a_half_row_only_through_rounding():
    # relu at NaN (flex gives 0, torch NaN) is declared for every dtype; in a half row the
    # relation holds on the half values, and a value broken beyond rounding still fails.
    from harness.opmatrix import half

    div = next(d for d in DIVERGENCES if d.pattern.startswith("relu/") and "forward" in d.pattern)
    t = np.array([np.nan, 1.0, 2.0], dtype=np.float16)
    e = np.array([0.0, 1.0, 2.0], dtype=np.float16)
    assert half.holds_in_half(div.relation, t, e, None, "float16")
    wrong = np.array([0.0, 1.5, 2.0], dtype=np.float16)
    wide = (t.astype(np.float32), e.astype(np.float32))
    assert not half.holds_in_half(div.relation, t, wrong, wide, "float16")
