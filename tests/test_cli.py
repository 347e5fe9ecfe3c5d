"""harness.cli: the exit codes, the one-line messages and the shared argparse pieces."""

import argparse

import pytest

from harness import cli


def test_exit_codes_are_the_documented_numbers():
    assert [int(c) for c in cli.ExitCode] == [0, 1, 2]
    assert (cli.exit_code(True), cli.exit_code(False)) == (cli.ExitCode.OK, cli.ExitCode.FAIL)


def test_error_and_warning_are_one_line_on_stderr(capsys):
    assert cli.error("prog", "bad.json: no such file") == cli.ExitCode.USAGE
    cli.warn("prog", "environments differ")
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "prog: error: bad.json: no such file\nprog: warning: environments differ\n"


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (cli.non_negative_float, "x", "not a number: 'x'"),
        (cli.non_negative_float, "-1", "must be a finite number >= 0, got '-1'"),
        (cli.non_negative_float, "inf", "must be a finite number >= 0, got 'inf'"),
        (cli.non_negative_float, "nan", "must be a finite number >= 0, got 'nan'"),
        (cli.non_negative_int, "1.5", "not an integer: '1.5'"),
        (cli.non_negative_int, "-2", "must be >= 0, got '-2'"),
        (cli.positive_int, "0", "must be >= 1, got '0'"),
        (cli.names_of(["exp", "log"], "op"), "exp,sin", "unknown op(s) sin; known: exp, log"),
    ],
)
def test_bad_values_raise_argparse_type_errors(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse(text)
    assert str(info.value) == message


def test_good_values_parse():
    assert cli.non_negative_float("0") == 0.0 and cli.non_negative_int("0") == 0
    assert cli.positive_int("3") == 3
    assert cli.names_of(["exp", "log"], "op")("log,exp") == ["log", "exp"]


def test_an_option_of_the_other_mode_is_named_with_the_reason():
    args = argparse.Namespace(atol=0.0, keys=None, update_golden=False, case=[])
    assert cli.foreign_option(args, ["keys", "atol"], "is for files") == "--atol is for files"
    assert cli.foreign_option(args, ["keys", "update_golden", "case"], "x") is None
    assert cli.given(0) and not cli.given(None) and not cli.given(False) and not cli.given([])
