"""harness.bounded, the one reader of files the harness did not just write (issue 22): special
files refused from ``stat`` without blocking, sizes checked against each kind's stated limit,
reads capped at the limit + 1 byte; and the readers built on it (sidecars, pyproject.toml),
whose refusals name the file, its size and the limit."""

import errno
import json
import os
import pickle
import socket

import numpy as np
import pytest

import compare
from harness import bounded, command, record, sidecar
from harness.bounded import RefusedFile, open_bounded, read_bounded
from harness.escape import MAX_ECHO, preview
from harness.project import MAX_CONFIG_BYTES, ConfigError, read_project
from harness.testing import assert_conforms


def refusal(path, limit=1 << 20, what="JSON file", **kwargs) -> RefusedFile:
    with pytest.raises(RefusedFile) as info:
        read_bounded(path, limit, what, **kwargs)
    assert str(info.value).count("\n") == 0
    return info.value


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("fifo", "is a FIFO (named pipe), not a regular file"),
        ("zero", "is a character device, not a regular file"),
        ("socket", "is a socket, not a regular file"),
        ("folder", "is a directory, expected a JSON file"),
    ],
)
def test_anything_but_a_regular_file_is_refused_from_stat(tmp_path, kind, problem):
    path = tmp_path / "x.json"
    with socket.socket(socket.AF_UNIX) as server:
        if kind == "fifo":
            os.mkfifo(path)  # no writer: a plain open() would block forever
        elif kind == "zero":
            path.symlink_to("/dev/zero")  # a plain read() would never end
        elif kind == "socket":
            server.bind(str(path))
        else:
            path.mkdir()
        exc = refusal(path)
    assert (str(exc), exc.errno, exc.filename) == (f"{path}: {problem}", None, str(path))
    assert isinstance(exc, OSError)  # the command line's one line and exit 2


def test_a_missing_or_unopenable_file_keeps_its_errno(tmp_path):
    exc = refusal(tmp_path / "nope.json")
    assert (exc.problem, exc.errno) == ("no such file", errno.ENOENT)
    exc = refusal(tmp_path / ("a" * 300))
    assert (exc.problem, exc.errno) == ("cannot read (File name too long)", errno.ENAMETOOLONG)


def test_the_size_from_stat_and_the_limit_are_named(tmp_path):
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * 101)
    exc = refusal(path, 100, "weight file")
    assert exc.problem == "is 101 bytes, over the limit of 100 bytes for a weight file"
    assert read_bounded(path, 101, "weight file") == b"x" * 101


def test_a_file_longer_than_stat_said_is_read_no_further_than_the_limit(monkeypatch, fdopen_reads):
    """/proc files report size 0, as a file growing under the reader would: the cap holds."""
    monkeypatch.setattr(bounded, "READ_CHUNK", 4)
    exc = refusal("/proc/self/status", 10, "status file")
    assert exc.problem == "is over the limit of 10 bytes for a status file (0 bytes by stat)"
    assert sum(fdopen_reads) == 11  # limit + 1 bytes, in chunks of 4, 4 and 3


def test_text_mode_stops_at_a_nul_byte_binary_mode_keeps_it(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"ab\0cd")
    assert refusal(path, text=True).problem == "not a JSON file: a NUL byte at offset 2"
    assert read_bounded(path, 5, "weight file") == b"ab\0cd"


def test_open_bounded_gives_the_checked_file_and_a_refusal_pickles(tmp_path):
    path = tmp_path / "x.npy"
    path.write_bytes(b"12345")
    with open_bounded(path, 5, ".npy sidecar") as f:
        assert os.fstat(f.fileno()).st_size == 5 and f.read() == b"12345"
    exc = pickle.loads(pickle.dumps(RefusedFile(path, "is a socket, not a regular file")))
    assert (type(exc), str(exc)) == (RefusedFile, f"{path}: is a socket, not a regular file")


# -- the readers on top: each kind of file with its stated limit --------------------------------


def test_a_sidecar_over_its_limit_is_refused_with_its_size_and_the_limit(tmp_path):
    text = record.write_side(tmp_path / "torch.json", "c", "torch", {"w": np.ones(70000)}, {})
    (name,) = [n for n in os.listdir(tmp_path) if n.endswith(".npy")]
    size = sidecar.MAX_SIDECAR_BYTES + 1
    os.truncate(tmp_path / name, size)  # sparse: no blocks written
    with pytest.raises(record.RecordError) as info:
        record.read_side(tmp_path / "torch.json")
    limit = f"over the limit of {sidecar.MAX_SIDECAR_BYTES} bytes for a .npy sidecar"
    where = f"{tmp_path / 'torch.json'}: w: sidecar {name}"
    assert str(info.value) == f"{where} is {size} bytes, {limit}"
    assert '"sidecar"' in text
    assert sidecar.MAX_SIDECAR_BYTES >= record.MAX_ELEMENTS * 8  # any record's data fits


def test_a_pyproject_over_its_limit_is_refused_with_its_size_and_the_limit(tmp_path, capsys):
    pyproject = tmp_path / "pyproject.toml"
    comment = "# " + "x" * 98 + "\n"
    pyproject.write_text("[tool.conformance]\n" + comment * (MAX_CONFIG_BYTES // 100))
    size = pyproject.stat().st_size
    limit = f"over the limit of {MAX_CONFIG_BYTES} bytes for a pyproject.toml"
    message = f"{pyproject}: tool.conformance.*: is {size} bytes, {limit}"
    with pytest.raises(ConfigError) as info:
        read_project(pyproject)
    assert str(info.value) == message
    code = command.main(["-q"], prog="compare.py", project=pyproject)
    assert (code, capsys.readouterr().err) == (2, f"compare.py: error: {message}\n")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_pyproject_that_is_a_special_file_is_refused_without_blocking(tmp_path, kind):
    pyproject = tmp_path / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(pyproject)
    else:
        pyproject.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match=r"pyproject\.toml: tool\.conformance\.\*: is a "):
        read_project(pyproject)


def test_a_loose_json_input_that_is_dev_zero_is_refused(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text('{"w": [1.0, 2.0]}')
    code = compare.main(["/dev/zero", str(good)])
    problem = "is a character device, not a regular file"
    assert (code, capsys.readouterr().err) == (2, f"compare.py: error: /dev/zero: {problem}\n")


# -- echoes: a value or key from the file never makes a message long ----------------------------


def test_preview_caps_any_value_at_200_characters_cheaply():
    assert preview(10**5000) == "<integer of 16610 bits>"  # str() would raise ValueError
    assert preview(-(10**30)) == repr(-(10**30))
    assert preview("a\x1bb") == "'a\\x1bb'"
    nested: list = []
    for _ in range(100_000):  # repr() of this would recurse past the interpreter's limit
        nested = [nested, "x" * 10_000]
    for value in (nested, "x" * 10**6, {str(i): i for i in range(10**5)}, 10**1000):
        text = preview(value)
        assert len(text) <= MAX_ECHO and text.isprintable()


def test_a_long_key_is_cut_in_a_record_error(tmp_path):
    path = tmp_path / "dup.json"
    key = "k" * 100_000
    path.write_text(f'{{"{key}": 1, "{key}": 2}}')
    with pytest.raises(record.RecordError) as info:
        record.read_side(path)
    assert str(info.value) == f"{path}: {'k' * 197}...: duplicate key in a JSON object"


def test_a_record_with_many_keys_is_quoted_in_a_few(tmp_path):
    path = tmp_path / "keys.json"
    keys = {f"key{i:05d}" + "x" * 100: 0 for i in range(10_000)}
    path.write_text(json.dumps({"format": 1, "case": "c", "side": "s", "env": {},
                                "values": {"w": keys}}))  # fmt: skip
    with pytest.raises(record.RecordError) as info:
        record.read_side(path)
    message = str(info.value)
    assert message.startswith(f"{path}: w: unrecognised record with keys ['key00000")
    assert len(message) < len(str(path)) + 400


def test_a_summary_value_from_the_file_is_quoted_in_at_most_200_characters(tmp_path):
    text = record.write_side(tmp_path / "torch.json", "c", "torch", {"w": np.ones(70000)}, {})
    doc = json.loads(text)
    doc["values"]["w"]["summary"]["mean"] = "9" * 1_000_000
    (tmp_path / "torch.json").write_text(json.dumps(doc))
    with pytest.raises(record.RecordError) as info:
        record.read_side(tmp_path / "torch.json")
    message = str(info.value)
    assert f": w: sidecar {doc['values']['w']['sidecar']}: summary mean is '999" in message
    assert message.endswith("999' but the data gives 1.0") and len(message) < 600


def test_a_case_value_too_big_to_print_is_named_by_its_size():
    with pytest.raises(TypeError) as info:
        record.normalize({"n": 10**5000})
    assert str(info.value) == (
        "n: int <integer of 16610 bits> is outside int64; return a str or an array"
    )


def test_a_failure_headline_cuts_a_long_key_and_a_long_value():
    key = "k" * 10_000
    with pytest.raises(AssertionError) as info:
        assert_conforms({key: np.float32(1.0), "s": "a" * 10_000}, {key: np.float32(2.0), "s": ""})
    first = str(info.value).splitlines()[0]
    assert first.startswith("k" * 197 + "...[]: actual=1.0 expected=2.0 ") and len(first) < 400
    with pytest.raises(AssertionError) as info:
        assert_conforms({"s": "a" * 10_000}, {"s": "b" * 10_000})
    first = str(info.value).splitlines()[0]
    assert first.startswith("s: actual='aaa") and "...a" in first and len(first) < 500
