"""compare.py file mode: one test per exit code and per error message.

Fixtures are written by hand with json.dumps (not by harness.record's writer), so these tests
also pin the file format that other programs produce.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compare
from harness import command
from harness.report.json_doc import schema_errors

ROOT = Path(__file__).resolve().parents[1]
ENV = {"torch": "2.13.0", "numpy": "2.4.6"}


def tensor(data, shape=None, dtype="float32"):
    return {"dtype": dtype, "shape": [len(data)] if shape is None else shape, "data": data}


def side(path, values, *, side_name, case="train_step", env=ENV):
    doc = {"format": 1, "case": case, "side": side_name, "env": env, "values": values}
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def pair(tmp_path):
    def write(a_values, b_values, **kw):
        a = side(tmp_path / "torch.json", a_values, side_name="torch", **kw)
        b = side(tmp_path / "engine.json", b_values, side_name="engine", **kw)
        return a, b

    return write


def run(capsys, *argv):
    code = compare.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BASE = {"logits": tensor([1.0, 2.0, 3.0, 4.0], [2, 2]), "steps": 3}
OFF = {**BASE, "logits": tensor([1.0, 2.0, 3.0, 4.5], [2, 2])}  # [1, 1] is 0.5 off


def test_identical_files_exit_0_with_the_study_table(pair, capsys):
    code, out, err = run(capsys, *pair(BASE, BASE))
    assert code == 0 and err == ""
    assert out == (
        "== torch vs engine (train_step)\n"
        "logits                   n=  4  max|diff|=0.00e+00  ulp=0\n"
        "steps                    value  torch=3 engine=3\n"
        "worst=0.00e+00 tol=1e-06 OK\n"
    )


def test_value_beyond_tolerance_exits_1_with_index_and_values(pair, capsys):
    code, out, _ = run(capsys, *pair(BASE, OFF))
    assert code == 1
    assert (
        "logits                   n=  4  max|diff|=5.00e-01  ulp=1048576"
        "  FAIL at [1, 1]: torch=4.0 engine=4.5 (1048576 ulp, 1 mismatched)\n"
    ) in out
    assert out.endswith("worst=5.00e-01 tol=1e-06 FAIL (1 of 2 keys)\n")


def test_atol_makes_a_failing_compare_pass(pair, capsys):
    files = pair(BASE, OFF)
    code, out, _ = run(capsys, *files, "--atol", "0.5")
    assert code == 0 and out.endswith("worst=5.00e-01 tol=0.5 OK\n")
    assert run(capsys, *files, "--atol", "0.4")[0] == 1
    assert run(capsys, *files, "--ulps", "1048576")[0] == 0
    assert run(capsys, *files, "--rtol", "0.125")[0] == 0  # 0.5 <= 0.125 * 4.5


def test_missing_key_exits_1_and_says_where(pair, capsys):
    code, out, _ = run(capsys, *pair({**BASE, "bias": tensor([0.5])}, BASE))
    assert code == 1
    assert "bias                     FAIL missing in engine\n" in out


def test_shape_mismatch(pair, capsys):
    b = {**BASE, "logits": tensor([1.0, 2.0, 3.0, 4.0], [4])}
    code, out, _ = run(capsys, *pair(BASE, b))
    assert code == 1
    assert "logits                   FAIL shape: torch=[2, 2] engine=[4]\n" in out


def test_dtype_mismatch(pair, capsys):
    b = {**BASE, "logits": tensor([1.0, 2.0, 3.0, 4.0], [2, 2], "float64")}
    code, out, _ = run(capsys, *pair(BASE, b))
    assert code == 1
    assert "logits                   FAIL dtype: torch=float32 engine=float64\n" in out


def test_nan_against_a_number(pair, capsys):
    a = {"h": tensor([1.0, "NaN", "NaN"])}
    b = {"h": tensor([1.0, 2.0, "NaN"])}
    code, out, _ = run(capsys, *pair(a, b))
    assert code == 1
    assert (
        "h                        n=  3  max|diff|=0.00e+00  ulp=0  nan=1"
        "  FAIL at [1]: torch=nan engine=2.0 (1 mismatched, 1 NaN mismatch)\n"
    ) in out


def test_empty_tensor_is_ok(pair, capsys):
    empty = {"e": tensor([], [0, 3])}
    code, out, _ = run(capsys, *pair(empty, empty))
    assert code == 0
    assert "e                        n=  0  max|diff|=0.00e+00  ulp=0\n" in out


def test_keys_filter(pair, capsys):
    a = {"logits": tensor([1.0]), "grads.w": tensor([1.0]), "grads.b": tensor([2.0])}
    b = {"logits": tensor([9.0]), "grads.w": tensor([1.0]), "grads.b": tensor([2.0])}
    code, out, _ = run(capsys, *pair(a, b), "--keys", "grads.*")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == ["grads.w", "grads.b"]


def test_keys_matching_nothing_is_a_usage_error(pair, capsys):
    code, out, err = run(capsys, *pair(BASE, BASE), "--keys", "nope*")
    assert code == 2 and out == ""
    assert err.startswith("compare.py: error: --keys 'nope*' matches no key of ")


def test_json_and_markdown_reports_are_written(pair, capsys, tmp_path):
    b = {**BASE, "logits": tensor([1.0, 2.0, 3.0, "Infinity"], [2, 2])}
    report, md = tmp_path / "r.json", tmp_path / "r.md"
    code, _, _ = run(capsys, *pair(BASE, b), "--json", str(report), "--markdown", str(md))
    assert code == 1
    doc = json.loads(report.read_text())
    assert schema_errors(doc) == []
    assert doc["ok"] is False and doc["comparisons"][0]["title"] == "train_step"
    assert doc["comparisons"][0]["rows"][0]["b_worst"] == "Infinity"
    assert "NaN" not in report.read_text().replace('"NaN"', "")  # strict JSON, no bare NaN
    table = [line for line in md.read_text().splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in table] == ["logits", "steps"]


def test_html_report_is_written_in_file_mode(pair, capsys, tmp_path):
    page = tmp_path / "r.html"
    code, _, err = run(capsys, *pair(BASE, BASE), "--html", str(page))
    assert code == 0 and err == ""
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<code>logits</code>" in text


def test_environment_difference_warns_but_passes(tmp_path, capsys):
    a = side(tmp_path / "a.json", BASE, side_name="torch")
    b = side(tmp_path / "b.json", BASE, side_name="engine", env={**ENV, "torch": "2.12.0"})
    code, _, err = run(capsys, a, b)
    assert code == 0
    assert err == "compare.py: warning: environments differ: torch (2.13.0 vs 2.12.0)\n"


def test_loose_json_uses_file_stems_and_the_dtype_option(tmp_path, capsys):
    # Floats written as floats: integer literals would be read as int64 (issue 12 item 8).
    (tmp_path / "rust.json").write_text(json.dumps({"a": {"b": [1.0, 2.0, 3.0]}, "c": 2.5}))
    (tmp_path / "py.json").write_text(json.dumps({"a": {"b": [1, 2, 3.0000001]}, "c": 2.5}))
    files = str(tmp_path / "rust.json"), str(tmp_path / "py.json")
    code, out, _ = run(capsys, *files)
    assert code == 0 and out.startswith("== rust vs py\na.b ")  # 3.0000001 is 3.0 in float32
    code, out, _ = run(capsys, *files, "--dtype", "float64")
    assert code == 1 and "FAIL at [2]: rust=3.0 py=3.0000001 " in out


def test_same_side_names_fall_back_to_paths(tmp_path, capsys):
    a = side(tmp_path / "a.json", BASE, side_name="torch")
    b = side(tmp_path / "b.json", BASE, side_name="torch")
    code, out, _ = run(capsys, a, b)
    assert code == 0 and out.splitlines()[0] == f"== {a} vs {b} (train_step)"


# -- exit 2: usage and unreadable input --------------------------------------------------------


def test_one_argument_is_a_usage_error(pair, capsys):
    a, _ = pair(BASE, BASE)
    with pytest.raises(SystemExit) as exc:
        compare.main([a])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"compare.py: error: expected two files to compare (A.json B.json), got one: {a}"
    )


def test_three_files_is_a_usage_error(pair, capsys):
    a, b = pair(BASE, BASE)
    with pytest.raises(SystemExit) as exc:
        compare.main([a, b, a])
    assert exc.value.code == 2
    assert "expected two files to compare, got 3" in capsys.readouterr().err


def test_negative_tolerance_is_a_usage_error(pair, capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main([*pair(BASE, BASE), "--atol", "-1"])
    assert exc.value.code == 2
    assert "argument --atol: must be a finite number >= 0, got '-1'" in capsys.readouterr().err


def bad_input(capsys, tmp_path, name, content, pair):
    bad = tmp_path / name
    if content is None:
        bad.mkdir()
    else:
        bad.write_bytes(content)
    _, good = pair(BASE, BASE)
    code, out, err = run(capsys, str(bad), good)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"compare.py: error: {bad}: ")
    return err


def test_nonexistent_file(pair, capsys, tmp_path):
    _, good = pair(BASE, BASE)
    missing = tmp_path / "nope.json"
    code, _, err = run(capsys, good, str(missing))
    assert code == 2
    assert err == f"compare.py: error: {missing}: no such file\n"


def test_truncated_file(pair, capsys, tmp_path):
    text = json.dumps({"format": 1, "case": "c", "side": "torch", "env": {}, "values": BASE})
    err = bad_input(capsys, tmp_path, "cut.json", text[:40].encode(), pair)
    assert "not valid JSON" in err


def test_not_json(pair, capsys, tmp_path):
    err = bad_input(capsys, tmp_path, "text.json", b"hello world\n", pair)
    assert "not valid JSON" in err


def test_empty_file(pair, capsys, tmp_path):
    err = bad_input(capsys, tmp_path, "zero.json", b"", pair)
    assert "empty file" in err


def test_directory_instead_of_file(pair, capsys, tmp_path):
    err = bad_input(capsys, tmp_path, "folder.json", None, pair)
    assert "is a directory" in err


def test_malformed_tensor_names_the_key(pair, capsys, tmp_path):
    doc = {"format": 1, "case": "c", "side": "t", "env": {}, "values": {"w": tensor([1.0], [3])}}
    err = bad_input(capsys, tmp_path, "bad.json", json.dumps(doc).encode(), pair)
    assert err.startswith(f"compare.py: error: {tmp_path / 'bad.json'}: w: ")


def test_as_a_script_no_traceback(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "compare.py"), str(tmp_path / "bad.json"), "x.json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"compare.py: error: {tmp_path / 'bad.json'}: ")


# -- case mode is delegated --------------------------------------------------------------------


def test_no_files_runs_cases_through_main_run(monkeypatch):
    seen = []

    def fake_main_run(case_names, args):
        seen.append((case_names, args.jobs))
        return 7

    monkeypatch.setattr(command, "_case_runner", lambda: fake_main_run)
    assert compare.main(["--case", "a", "--case", "b", "--jobs", "2"]) == 7
    assert compare.main([]) == 7
    assert seen == [(["a", "b"], 2), ([], 1)]


def test_case_runner_import_failure_is_exit_2(monkeypatch, capsys):
    def broken():
        raise ImportError("No module named 'harness.case'")

    monkeypatch.setattr(command, "_case_runner", broken)
    assert compare.main([]) == 2
    assert capsys.readouterr().err == (
        "compare.py: error: cannot run cases: No module named 'harness.case'\n"
    )


def test_case_with_files_is_a_usage_error(pair, capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main([*pair(BASE, BASE), "--case", "x"])
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--atol", "0"], "--atol applies to comparing two files (A.json B.json), not to cases"),
        (["--dtype", "float64"], "--dtype applies to comparing two files"),
        (["--keys", "w"], "--keys applies to comparing two files"),
    ],
)
def test_file_options_in_case_mode_are_a_usage_error(argv, message, capsys):
    """Ignored silently, a loosened --atol would change nothing and look like it did."""
    with pytest.raises(SystemExit) as exc:
        compare.main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"compare.py: error: {message}")


@pytest.mark.parametrize(
    "option",
    [["--update-golden"], ["--shard", "1/2"], ["--out", "x"], ["--jobs", "1"], ["--timings"]],
)
def test_case_options_with_files_are_a_usage_error(pair, capsys, option):
    with pytest.raises(SystemExit) as exc:
        compare.main([*pair(BASE, BASE), *option])
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert (
        err
        == f"compare.py: error: {option[0]} runs cases; it cannot be combined with FILE arguments"
    )


BF16 = {"w": tensor([1.0, 1.0078125, -3.0, 256.0], dtype="bfloat16")}  # exact bfloat16 values


def test_bfloat16_files_within_one_ulp_pass_and_two_fail(pair, capsys):
    """bfloat16 side files: 1 ULP apart passes the dtype's default (1 ULP or eps), 2 ULP at
    256 (4.0 apart) fails with the element and its distance."""
    one_ulp = {"w": tensor([1.0, 1.015625, -3.0, 258.0], dtype="bfloat16")}
    code, out, err = run(capsys, *pair(BF16, one_ulp))
    assert (code, err) == (0, "")
    assert "w                        n=  4  max|diff|=2.00e+00  ulp=1\n" in out
    two_ulp = {"w": tensor([1.0, 1.0078125, -3.0, 260.0], dtype="bfloat16")}
    code, out, _ = run(capsys, *pair(BF16, two_ulp))
    assert code == 1
    assert "FAIL at [3]: torch=256.0 engine=260.0 (2 ulp, 1 mismatched)" in out


def test_bfloat16_sidecars_compare_like_inline_data(tmp_path, capsys):
    """Side files written by harness.record with the tensor in a .npy sidecar (uint16 bit
    patterns): compare.py reads them back as bfloat16 and finds the one changed element."""
    from harness import record
    from harness.float_dtypes import BFLOAT16

    bits = np.arange(0x3F80, 0x3F80 + 300, dtype=np.uint16)  # 1.0 and up, 300 steps
    changed = bits.copy()
    changed[123] += 2
    a, b = tmp_path / "torch.json", tmp_path / "engine.json"
    for path, side_bits in ((a, bits), (b, changed)):
        values = {"w": side_bits.view(BFLOAT16)}
        record.write_side(path, "c", path.stem, values, ENV, sidecar_threshold=100)
    assert '"sidecar"' in a.read_text() and '"dtype": "bfloat16"' in a.read_text()
    code, out, _ = run(capsys, str(a), str(b))
    assert code == 1 and "FAIL at [123]" in out and "(2 ulp, 1 mismatched)" in out
