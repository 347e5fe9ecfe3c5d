"""The codec against hostile input (issue 11 items 2-4 and 6, issue 12 item 8): special files
and huge files refused before any read, integers outside int64 never read as floats, loose
JSON read as written, and every error naming the file, the key and the problem."""

import errno
import json
import os
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from harness import bounded, record, sidecar
from harness.record import RecordError, read_side, source, write_side
from harness.record.read import _MAYBE_INT


def strict(values: str) -> str:
    return f'{{"format": 1, "case": "c", "side": "torch", "env": {{}}, "values": {values}}}'


def error_of(path, **kwargs) -> str:
    with pytest.raises(RecordError) as info:
        read_side(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.isprintable()
    return message


# -- not a regular file: refused from stat, before anything is opened or read ------------------


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    # No writer ever opens the FIFO: a plain open() would block here forever.
    assert error_of(fifo) == f"{fifo}: is a FIFO (named pipe), not a regular file"


def test_a_fifo_swapped_in_after_stat_is_refused_without_blocking(tmp_path, monkeypatch):
    """The check is repeated on the opened descriptor, which is opened non-blocking."""
    path = tmp_path / "f.json"
    path.write_text("{}")
    real_stat = os.stat

    def stat_then_swap(target, *args, **kwargs):
        info = real_stat(target, *args, **kwargs)
        if str(target) == str(path):
            path.unlink()
            os.mkfifo(path)
        return info

    monkeypatch.setattr(os, "stat", stat_then_swap)
    assert error_of(path) == f"{path}: is a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize(
    ("device", "problem"),
    [("/dev/zero", "is a character device"), ("/dev/null", "is a character device")],
)
def test_devices_are_refused(device, problem):
    assert error_of(device) == f"{device}: {problem}, not a regular file"


def test_a_socket_and_a_folder_are_refused(tmp_path):
    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert error_of(path) == f"{path}: is a socket, not a regular file"
    assert error_of(tmp_path) == f"{tmp_path}: is a directory, expected a JSON file"


def test_an_empty_file_name_is_not_the_current_folder():
    assert error_of("") == "'': empty file name, expected a JSON file"


# -- size: from stat, then a bounded read --------------------------------------------------------


def test_a_sparse_file_over_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(2 << 30)  # 2 GiB, no blocks on disk

    def no_read(*args, **kwargs):
        raise AssertionError("the file was opened")

    monkeypatch.setattr(os, "open", no_read)
    monkeypatch.setattr("builtins.open", no_read)
    limit = f"over the limit of {1 << 30} bytes for a JSON file"
    assert error_of(big) == f"{big}: is {2 << 30} bytes, {limit}"


def test_nul_bytes_stop_the_read_at_the_first_chunk(tmp_path, fdopen_reads):
    path = tmp_path / "nul.json"
    with open(path, "wb") as f:
        f.write(b'{"a": ')
        f.truncate(64 << 20)  # 64 MiB of NUL bytes after the opening
    assert error_of(path) == f"{path}: not a JSON file: a NUL byte at offset 6"
    assert len(fdopen_reads) == 1  # one 16 MiB chunk read, not 64 MiB


def test_a_file_longer_than_stat_said_is_still_bounded():
    """/proc files report size 0; the read itself stops past max_bytes."""
    assert os.stat("/proc/self/status").st_size == 0
    assert len(source.read_bytes(Path("/proc/self/status"), 1 << 20)) > 10
    message = error_of("/proc/self/status", max_bytes=10)
    limit = "over the limit of 10 bytes for a JSON file"
    assert message == f"/proc/self/status: is {limit} (0 bytes by stat)"


def test_a_file_larger_than_one_chunk_reads_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded, "READ_CHUNK", 7)
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"x": [1.5] * 50, "y": "z" * 30}))
    values = read_side(path).values
    assert values["x"].shape == (50,) and values["y"] == "z" * 30


# -- integers: exact, int64, quoted as written ---------------------------------------------------

BEYOND = ["-9223372036854775809", "9223372036854775808", "18446744073709551616", "1" + "0" * 30]


@pytest.mark.parametrize("literal", BEYOND)
@pytest.mark.parametrize(
    ("template", "where"),
    [
        ('{"x": @}', "integer @"),
        ('{"x": [1.5, @]}', "data[1] = integer @"),
        ('{"x": [[1], [@]]}', "data[1] = integer @"),
        ('{"a": {"x": @}}', "integer @"),
        (strict('{"x": @}'), "integer @"),
        (strict('{"x": [[2], [@]]}'), "integer @"),
        (strict('{"x": {"dtype": "float64", "shape": [2], "data": [0.5, @]}}'),
         "data[1] = integer @"),
        (strict('{"x": {"dtype": "float32", "shape": [1], "data": [@]}}'), "data[0] = integer @"),
    ],
    ids=["loose", "loose-floats", "loose-ints", "nested", "plain", "plain-list", "f64", "f32"],
)  # fmt: skip
def test_integers_outside_int64_are_errors_quoting_the_literal(tmp_path, template, where, literal):
    path = tmp_path / "in.json"
    path.write_text(template.replace("@", literal))
    key = "a.x" if template.startswith('{"a"') else "x"
    assert error_of(path) == f"{path}: {key}: {where.replace('@', literal)} is outside int64"


@pytest.mark.parametrize("literal", ["-9223372036854775809", "18446744073709551616"])
def test_int_dtype_records_quote_the_literal_not_a_float(tmp_path, literal):
    path = tmp_path / "in.json"
    path.write_text(strict(f'{{"x": {{"dtype": "int64", "shape": [1], "data": [{literal}]}}}}'))
    assert error_of(path) == f"{path}: x: data[0] = {literal} is out of range for int64"


def test_the_int64_edges_and_large_floats_are_read_exactly(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(
        '{"lo": -9223372036854775808, "hi": 9223372036854775807, "big": [1e19, -2e30],'
        ' "huge": 1.8446744073709552e19}'
    )
    v = read_side(path).values
    assert v["lo"].dtype == np.int64 and int(v["lo"]) == -(2**63)
    assert int(v["hi"]) == 2**63 - 1
    assert v["big"].tolist() == [np.float32(1e19), np.float32(-2e30)]
    assert float(v["huge"]) == float(np.float32(1.8446744073709552e19))
    assert _MAYBE_INT == 2.0**63


def test_uint64_records_keep_their_whole_range(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(
        strict('{"x": {"dtype": "uint64", "shape": [1], "data": [18446744073709551615]}}')
    )
    assert read_side(path).values["x"].tolist() == [2**64 - 1]


def test_a_huge_integer_in_env_or_a_shape_is_not_a_float(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(strict('{"x": {"dtype": "float32", "shape": [18446744073709551616], '
                           '"data": []}}'))  # fmt: skip
    assert "tensor has 18446744073709551616 elements" in error_of(path)


def test_normalize_refuses_an_out_of_range_int_inside_a_list():
    with pytest.raises(TypeError, match=r"^x: int 18446744073709551616 is outside int64"):
        record.normalize({"x": [1, [2**64]]})


# -- loose JSON, read as written (issue 12 item 8) -----------------------------------------------


def test_loose_integers_stay_integers(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"step": 3, "ids": [[1, 2], [3, 4]], "mixed": [1, 2.5], "f": 2.0}')
    v = read_side(path).values
    assert v["step"].dtype == np.int64 and v["step"].shape == () and int(v["step"]) == 3
    assert v["ids"].dtype == np.int64 and v["ids"].tolist() == [[1, 2], [3, 4]]
    assert v["mixed"].dtype == np.float32 and v["f"].dtype == np.float32


@pytest.mark.parametrize("version", ["2", '"1"', "true", "1.0", "null"])
def test_a_format_key_is_a_header_only_for_format_1_with_values(tmp_path, version):
    path = tmp_path / "in.json"
    path.write_text(strict("{}").replace('"format": 1', f'"format": {version}'))
    rec = read_side(path)
    assert rec.format is None and rec.case is None  # loose: every key is data
    assert rec.values["case"] == "c" and rec.values["side"] == "torch"
    assert rec.warnings == (
        f"format: {json.loads(version)!r} is not this harness's format 1; the file is read as "
        "loose JSON (every key is data)",
    )


def test_format_1_without_values_is_data(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"format": 1, "loss": [0.5]}')
    rec = read_side(path)
    assert rec.format is None and rec.warnings == ()
    assert int(rec.values["format"]) == 1 and rec.values["format"].dtype == np.int64


# -- every message names the file, the key and the problem --------------------------------------


def test_a_sidecar_name_too_long_names_the_key_and_is_cut_at_200_characters(tmp_path):
    name = "a" * 296 + ".npy"
    ref = {"dtype": "float32", "shape": [2], "sidecar": name, "sha256": "0" * 64, "summary": {}}
    path = tmp_path / "in.json"
    path.write_text(strict(json.dumps({"w": ref})))
    shown = "a" * 197 + "..."
    assert error_of(path) == f"{path}: w: sidecar {shown} cannot read (File name too long)"


def test_control_characters_in_a_sidecar_name_are_escaped(tmp_path):
    ref = {"dtype": "float32", "shape": [2], "sidecar": "a\x1b[2J.npy", "sha256": "0" * 64,
           "summary": {}}  # fmt: skip
    path = tmp_path / "in.json"
    path.write_text(strict(json.dumps({"k\x1b": ref})))
    assert error_of(path) == f"{path}: k\\x1b: sidecar file a\\x1b[2J.npy is missing"


def test_a_surrogate_key_in_an_error_is_escaped(tmp_path):
    path = tmp_path / "in.json"
    path.write_text('{"\\ud800": [[1], [2, 3]]}')
    assert error_of(path) == f"{path}: \\ud800: ragged nested list: lengths [1, 2] at depth 1"


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write() raises it: no file


def test_a_full_disk_names_the_side_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sidecar.os, "fsync", full_disk)
    path = tmp_path / "out" / "torch.json"
    with pytest.raises(OSError) as info:
        write_side(path, "c", "torch", {"x": 1.0}, {})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert info.value.strerror == "No space left on device"
    assert not list(path.parent.iterdir())  # no temporary file left


def test_a_failing_sidecar_write_names_the_file_and_the_key(tmp_path, monkeypatch):
    path = tmp_path / "torch.json"
    values = {"small": np.zeros(3, np.float32), "big\x1b": np.zeros(10, np.float32),
              "big2": np.ones(10, np.float32)}  # fmt: skip
    calls = []
    real = sidecar.write_sidecar

    def second_fails(folder, stem, key, array):
        calls.append(key)
        if len(calls) == 2:
            full_disk()
        return real(folder, stem, key, array)

    monkeypatch.setattr(sidecar, "write_sidecar", second_fails)
    values = {"a": np.zeros(10, np.float32), **values}
    with pytest.raises(OSError) as info:
        write_side(path, "c", "torch", values, {}, sidecar_threshold=5)
    assert info.value.filename == str(path)
    assert info.value.strerror == "big\\x1b: cannot write its sidecar (No space left on device)"
    assert list(tmp_path.iterdir()) == []  # the first key's new sidecar is removed again


def test_a_write_error_keeps_its_subclass(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "sub" / "x.json"
    with pytest.raises(OSError) as raw:
        sidecar.atomic_write(target, lambda f: None)
    with pytest.raises(OSError) as info:
        record.atomic_write_text(target, "{}")
    assert type(info.value) is type(raw.value) and info.value.errno == raw.value.errno
    assert info.value.filename == str(target) != raw.value.filename


def test_the_reader_does_not_leak_threads_or_descriptors(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"x": [1.0]}')
    before = len(os.listdir("/proc/self/fd")), threading.active_count()
    for _ in range(20):
        read_side(path)
        with pytest.raises(RecordError):
            read_side("/dev/null")
    assert (len(os.listdir("/proc/self/fd")), threading.active_count()) == before
