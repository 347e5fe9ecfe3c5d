"""Malformed input: every problem is one RecordError line naming the file and the key."""

import json
import re

import pytest

from harness import record
from harness.record import RecordError


def header(values="{}", env="{}"):
    return f'{{"format": 1, "case": "c", "side": "torch", "env": {env}, "values": {values}}}'


def tensor(dtype="float32", shape="[2]", data="[1.0, 2.0]"):
    return header(f'{{"x": {{"dtype": "{dtype}", "shape": {shape}, "data": {data}}}}}')


def read_error(tmp_path, content, **kwargs):
    path = tmp_path / "in.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(RecordError) as info:
        record.read_side(path, **kwargs)
    return path, str(info.value)


def expect(tmp_path, content, key, problem, **kwargs):
    """The message is exactly ``<path>: <key>: <problem>`` (a regex for the problem)."""
    path, message = read_error(tmp_path, content, **kwargs)
    prefix = f"{path}: " + ("" if key is None else f"{key}: ")
    assert message.startswith(prefix), message
    assert re.fullmatch(problem, message[len(prefix) :]), message
    assert "\n" not in message


def test_missing_file(tmp_path):
    with pytest.raises(RecordError) as info:
        record.read_side(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: no such file"


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(RecordError) as info:
        record.read_side(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory, expected a JSON file"


def test_empty_file(tmp_path):
    expect(tmp_path, b"", None, r"empty file \(0 bytes\), expected a JSON object")


def test_truncated_json_reports_line_and_column(tmp_path):
    text = tensor()
    expect(tmp_path, text[:-7], None, r"truncated JSON: .* at line 1 column \d+")
    expect(tmp_path, text.replace("]", "]\n", 1)[:-9], None, r"truncated JSON: .* at line 2 .*")


def test_not_json(tmp_path):
    expect(tmp_path, "hello", None, r"not valid JSON: Expecting value at line 1 column 1")
    expect(tmp_path, "  \n ", None, r"truncated JSON: Expecting value at line 2 column 2")
    expect(tmp_path, '{"a": 1} trailing', None, r"not valid JSON: Extra data at line 1 column 10")


def test_non_utf8_bytes(tmp_path):
    expect(tmp_path, b'{"x": "\xff"}', None, r"not UTF-8 text \(byte 0xff at offset 7\)")


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + tensor().encode())
    assert record.read_side(path).values["x"].tolist() == [1.0, 2.0]


def test_top_level_must_be_an_object(tmp_path):
    expect(tmp_path, "[1, 2]", None, r"top level must be a JSON object, not an array")
    expect(tmp_path, "3", None, r"top level must be a JSON object, not a number")


def test_duplicate_key_is_named(tmp_path):
    expect(tmp_path, header('{"x": 1, "x": 2}'), "x", r"duplicate key in a JSON object")
    expect(tmp_path, '{"a": {"b": [1], "b": [1]}}', "b", r"duplicate key in a JSON object")


def test_colon_in_strings_does_not_hide_a_duplicate(tmp_path):
    # The fast orjson path counts ':' characters; strings with colons must not confuse it.
    text = header('{"m": {"error": "E", "message": "a: b"}, "m": 1}', env='{"k": "x:y"}')
    expect(tmp_path, text, "m", r"duplicate key in a JSON object")
    escaped = header('{"a\\u003a": 1, "a\\u003a": 2}')
    expect(tmp_path, escaped, "a:", r"duplicate key in a JSON object")


def test_nan_literals_are_rejected_in_format_1(tmp_path):
    words = r'use "NaN", "Infinity" or "-Infinity"'
    expect(tmp_path, tensor(data="[1.0, NaN]"), "x", rf"data\[1\] is a bare nan literal .*{words}")
    problem = r"NaN/Infinity literal or overflowing number is not JSON.*0-d tensor record"
    expect(tmp_path, header('{"y": -Infinity}'), "y", problem)
    expect(tmp_path, header('{"y": [1, NaN]}'), "y", problem)
    expect(tmp_path, header(env='{"a": [NaN]}'), "env", r"NaN/Infinity literal .* not JSON")


def test_overflowing_numbers(tmp_path):
    problem = r"data\[1\] overflows float64 \(beyond 1.8e308 in magnitude\)"
    expect(tmp_path, tensor(data="[1.0, 1e400]"), "x", problem)
    expect(tmp_path, tensor(data="[1.0, " + "9" * 400 + "]"), "x", problem)
    expect(tmp_path, tensor(data="[3.4e38, 1e39]"), "x", r"data\[0\] = 3.4e\+38 is not .*")
    expect(tmp_path, '{"x": [1, 1e39]}', "x", r"data\[1\] = 1e\+39 overflows float32")
    expect(tmp_path, '{"x": 1e400}', "x", r"data\[0\] overflows float64 .*")
    digits = "1" * 5000
    expect(tmp_path, f'{{"x": {digits}}}', None, r"not valid JSON: Exceeds the limit .*")


def test_integer_ranges(tmp_path):
    big = str(2**63)
    expect(tmp_path, header(f'{{"n": {big}}}'), "n", rf"integer {big} is outside int64")
    expect(tmp_path, tensor("int64", data=f"[0, {big}]"), "x",
           rf"data\[1\] = {big} is out of range for int64")  # fmt: skip
    expect(tmp_path, tensor("uint8", data="[255, 256]"), "x",
           r"data\[1\] = 256 is out of range for uint8")  # fmt: skip
    expect(tmp_path, tensor("uint8", data="[-1, 2]"), "x",
           r"data\[0\] = -1 is out of range for uint8")  # fmt: skip


def test_wrong_types_in_data(tmp_path):
    expected = r'expected a number or "NaN", "Infinity", "-Infinity"'
    expect(tmp_path, tensor(data='[1.0, "nan"]'), "x", rf"data\[1\] is a string 'nan', {expected}")
    expect(tmp_path, tensor(data="[true, 1.0]"), "x", rf"data\[0\] is a bool True, {expected}")
    expect(tmp_path, tensor(data="[null, 1.0]"), "x", rf"data\[0\] is null None, {expected}")
    expect(tmp_path, tensor(data="[[1.0], 1.0]"), "x", rf"data\[0\] is an array .*{expected}")
    expect(tmp_path, tensor("int32", data="[1, 1.5]"), "x",
           r"data\[1\] is a number 1.5, expected an integer")  # fmt: skip
    expect(tmp_path, tensor("bool", data="[true, 1]"), "x",
           r"data\[1\] is a number 1, expected a bool")  # fmt: skip


def test_float32_data_must_be_exact(tmp_path):
    expect(tmp_path, tensor(data="[0.5, 0.1]"), "x",
           r"data\[1\] = 0.1 is not exactly a float32 value")  # fmt: skip


@pytest.mark.parametrize(
    ("content", "key", "problem"),
    [
        (header().replace('"side": "torch", ', ""), "side", r"missing header key of a .*"),
        (header().replace("{", '{"extra": 0, ', 1), "extra", r"unknown header key \(format 1 .*"),
        # "format": 2 / "1" / true are data now, with a warning (issue 12 item 8): see
        # test_record_hostile.py::test_a_format_key_is_a_header_only_for_format_1_with_values.
        (header().replace('"case": "c"', '"case": 3'), "case", r"must be a string, not a number"),
        (header(env="[]"), "env", r"must be an object, not an array"),
        (header(values="null"), "values", r"must be an object, not null"),
        (tensor("float8"), "x", r"unknown dtype 'float8' \(known: float16, .*, bool\)"),
        (tensor(shape='"2"'), "x", r"shape must be a list of at most 32 sizes, not a string"),
        (tensor(shape="[-2]"), "x", r"shape \[-2\] is not all non-negative integers"),
        (tensor(shape="[2.0]"), "x", r"shape \[2.0\] is not all non-negative integers"),
        (tensor(shape="[" + ",".join(["1"] * 33) + "]"), "x", r"shape must be a list of .*"),
        (tensor(shape="[2, 2]"), "x", r"data has 2 entries but shape \[2, 2\] needs 4"),
        (tensor(data='{"a": 1}'), "x", r"data must be a flat list, not an object"),
        (
            header('{"e": {"error": "E", "message": 3}}'),
            "e",
            r"an error record needs string 'error' and 'message'",
        ),
        (
            header('{"r": {"dtype": "float32"}}'),
            "r",
            r"unrecognised record with keys \['dtype'\]; want \{dtype, shape, data\}.*",
        ),
        (header('{"l": [1, {"a": 2}]}'), "l", r"a plain list may not contain objects"),
    ],
)
def test_malformed_format_1_records(tmp_path, content, key, problem):
    expect(tmp_path, content, key, problem)


def test_depth_limit_names_the_key(tmp_path):
    deep = '{"a": ' * 70 + "1" + "}" * 70
    expect(tmp_path, deep, "a" + ".a" * 63, r"JSON nested deeper than 64 levels")
    deeper = "[" * 100_000 + "]" * 100_000
    expect(tmp_path, deeper, None, r"JSON nested deeper than 64 levels")


def test_size_limits(tmp_path):
    problem = r"is \d+ bytes, over the limit of 10 bytes for a JSON file"
    expect(tmp_path, tensor(), None, problem, max_bytes=10)
    expect(
        tmp_path,
        tensor(shape="[1000000, 1000000]"),
        "x",
        r"tensor has 1000000000000 elements, more than the limit \d+ \(max_elements\)",
    )
    expect(
        tmp_path,
        '{"x": [[1, 2], [3, 4]]}',
        "x",
        r"list has 4 numbers, more than the limit 3 \(max_elements\)",
        max_elements=3,
    )


@pytest.mark.parametrize(
    ("content", "key", "problem"),
    [
        ('{"x": [[1, 2], [3]]}', "x", r"ragged nested list: lengths \[1, 2\] at depth 1"),
        ('{"x": [[1, 2], 3]}', "x", r"ragged nested list: lists and scalars at depth 1"),
        ('{"g": {"x": [[[1], [2]], [[3], []]]}}', "g.x", r"ragged nested list: lengths .*"),
        ('{"x": [{"a": 1}]}', "x", r"lists of objects are not supported in loose JSON"),
        ('{"x": [true, 1]}', "x", r"list mixes bools with other values"),
        ('{"x": [1, "a"]}', "x", r"data\[1\] is a string 'a', expected .*"),
        ('{"a.b": 1, "a": {"b": 2}}', "a.b", r"two entries flatten to the same dotted key"),
        (
            '{"x": {"dtype": "float32", "shape": [1], "data": [0.1]}}',
            "x",
            r"data\[0\] = 0.1 is not exactly a float32 value",
        ),
    ],
)
def test_malformed_loose_json(tmp_path, content, key, problem):
    expect(tmp_path, content, key, problem)


def test_keys_with_control_characters_stay_on_one_line(tmp_path):
    content = json.dumps({"bad\nkey": [[1], [2, 3]]})
    path, message = read_error(tmp_path, content)
    assert message == f"{path}: bad\\nkey: ragged nested list: lengths [1, 2] at depth 1"


def test_default_dtype_must_be_a_float_dtype(tmp_path):
    with pytest.raises(ValueError, match="default_dtype"):
        record.read_side(tmp_path / "x.json", default_dtype="int64")


def test_record_error_fields():
    err = RecordError("f.json", None, "multi\nline  problem")
    assert str(err) == "f.json: multi line problem"
    assert (err.path, err.key) == ("f.json", None)
    assert str(RecordError("f.json", "k", "p")) == "f.json: k: p"
