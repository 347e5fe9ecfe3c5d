"""compare.py A B on hostile input: every run ends in exit 0, 1 or 2, never a traceback.

Hypothesis writes two files per example (format-1 documents, loose JSON from other programs,
damaged bytes, empty files, folders, FIFOs, sockets, devices, huge sparse files, NUL bytes,
an empty argument; keys, case and side names with lone surrogates and control characters;
integers at and beyond the int64 edges) and runs ``compare.main`` in-process. The contract:

- exit 0 or 1: a table ending in the verdict line, and every stderr line is one warning;
- exit 2: nothing on stdout and exactly one stderr line naming the offending file;
- every line printed is printable (``str.isprintable``: no ESC, no surrogate, no newline
  inside a message), and a file compared with itself never exits 1;
- a run never blocks (an alarm fails it) and, in a subprocess under ``RLIMIT_AS``, refuses
  special and huge files with bounded memory.

The codec's own hostile tests (test_record_robust.py) hammer the reader; this file aims at what
lies behind it (diff, report, the CLI shell), so most documents here are readable and share
keys, with values of every kind, dtype and shape colliding.
"""

import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compare

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = settings(
    derandomize=True,
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
KEYS = ["w", "grads.w", "loss", "a.b", "é", "k\nl", "\ud800", "\x1b[2J", "x\u202ey"]
# Input text that must never reach a terminal raw: surrogates, ESC sequences, bidi overrides.
HOSTILE_TEXT = st.text(
    st.characters(codec=None, categories=None) | st.sampled_from("\x1b\x07\x00\ud800\udfff\u202e"),
    max_size=4,
)
INT64_EDGES = [-(2**63) - 1, -(2**63), 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30]
DTYPES = ["float32"] * 4 + ["float64", "float16", "bfloat16", "int64", "int8", "uint8"]
DTYPES += ["bool", "half"]
NUMBERS = (
    st.floats(width=32)
    | st.floats(allow_nan=False)
    | st.integers(-(2**70), 2**70)
    | st.sampled_from(INT64_EDGES)
    | st.sampled_from(["NaN", "Infinity", "-Infinity", 0.0, -0.0, 1e38, 1e-45, True, None])
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.sampled_from(INT64_EDGES)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
    | HOSTILE_TEXT
)
PLAIN = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=8)


class Raw(str):
    """JSON text spliced in verbatim (NaN literals, huge numbers, duplicate keys)."""


FITTING = {  # data each dtype can hold exactly, so that most tensors are readable
    "float32": st.floats(width=32) | st.sampled_from(["NaN", "Infinity", "-Infinity", -0.0]),
    "float64": st.floats(allow_nan=False) | st.sampled_from(["NaN", "-Infinity", 5e-324]),
    "float16": st.floats(width=16, allow_nan=False, allow_infinity=False),
    "bfloat16": st.integers(0, 0xFFFF)  # a finite bfloat16 is the upper half of a float32
    .filter(lambda bits: bits & 0x7F80 != 0x7F80)
    .map(lambda bits: struct.unpack("<f", struct.pack("<I", bits << 16))[0])
    | st.sampled_from(["NaN", "Infinity", "-Infinity", -0.0]),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "int8": st.integers(-128, 127),
    "uint8": st.integers(0, 255),
    "bool": st.booleans(),
    "half": NUMBERS,
}


@st.composite
def tensors(draw):
    """Tensor records: usually well formed, sometimes with wrong counts or foreign data."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from([[], [0], [1], [3], [2, 2], [1, 3], [3, 1], [0, 2]]))
    count = 1
    for n in shape:
        count *= n
    broken = draw(st.integers(0, 9)) == 0
    if broken:
        count = max(count + draw(st.sampled_from([-1, 1])), 0)
    items = NUMBERS if broken or draw(st.integers(0, 9)) == 0 else FITTING[dtype]
    data = draw(st.lists(items, min_size=count, max_size=count))
    return {"dtype": dtype, "shape": shape, "data": data}


RAW_VALUES = st.sampled_from(
    [Raw("NaN"), Raw("-Infinity"), Raw("1e400"), Raw("9" * 5000), Raw("[" * 80 + "]" * 80),
     Raw('{"a": 1, "a": 2}'), Raw("[1, [2, 3]]"), Raw("[[1, 2], [3]]"), Raw("[[], []]"),
     Raw("[1, null, 2]"), Raw('["NaN", 1]'), Raw("[true, 1]"), Raw('[{"a": 1}]')]
)  # fmt: skip
VALUES = (
    tensors()
    | tensors()
    | tensors()
    | st.fixed_dictionaries({"error": HOSTILE_TEXT, "message": st.text(max_size=6) | HOSTILE_TEXT})
    | st.fixed_dictionaries(
        {
            "dtype": st.just("float32"),
            "shape": st.just([2]),
            "sidecar": st.just("x.npy"),
            "sha256": st.just("0" * 64),
            "summary": st.just({}),
        }
    )
    | PLAIN
    | RAW_VALUES
    | st.dictionaries(st.sampled_from(KEYS), tensors() | PLAIN, max_size=2)  # nesting
)
HEADERS = st.sampled_from(["strict"] * 8 + ["loose"] * 6 + ["bad-format", "bad-env", "extra"])
DAMAGE = st.sampled_from(["none"] * 20 + ["truncate", "latin-1", "bom", "trailing"])
SPECIAL_FILES = st.sampled_from(
    ["file"] * 60
    + ["empty", "folder", "missing", "deep", "array"]
    + ["fifo", "socket", "devnull", "sparse", "nul", "noname"]
)
NAMES_OF_SIDES = st.sampled_from(["torch", "engine", "\ud800", "t\x1b]0;title\x07"])


def to_text(obj) -> str:
    if isinstance(obj, Raw):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {to_text(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join(to_text(v) for v in obj) + "]"
    return json.dumps(obj)


@st.composite
def documents(draw, keys):
    """The bytes of one side file (or a marker for a folder / a missing file)."""
    special = draw(SPECIAL_FILES)
    if special != "file":
        return special
    values = {k: draw(VALUES) for k in keys if draw(st.integers(0, 5))}  # a key may be absent
    header = draw(HEADERS)
    if header == "loose":
        doc = values
    else:
        doc = {"format": 1, "case": draw(st.sampled_from(["c", "c\x1b[2J", "\udcff"])),
               "side": draw(NAMES_OF_SIDES),
               "env": {"torch": draw(st.sampled_from(["2.13.0", "2.12.0", "a\nb", "\x1b[31m"]))},
               "values": values}  # fmt: skip
        if header == "bad-format":
            doc["format"] = draw(st.sampled_from([2, "1", None, 1.0]))
        elif header == "bad-env":
            doc["env"] = Raw("NaN")
        elif header == "extra":
            doc["extra"] = 1
    return damaged(to_text(doc).encode(), draw(DAMAGE))


def damaged(raw: bytes, how: str) -> bytes:
    if how == "truncate":
        return raw[: len(raw) // 2]
    if how == "latin-1":
        return raw[:-1] + b'"\xe9"}' if raw.endswith(b"}") else raw + b"\xff"
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how == "trailing":
        return raw + b" {}"
    return raw


PAIRS = st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True).flatmap(
    lambda keys: st.tuples(documents(keys), documents(keys))
)
_NAMES = itertools.count()


def materialize(folder: Path, content, stem: str) -> str:
    """Write ``content`` at a fresh path; the markers make a folder, nothing, odd JSON or a
    special file. Returns the command-line argument."""
    path = folder / f"{stem}{next(_NAMES)}.json"
    if content == "noname":
        return ""
    if content == "devnull":
        return "/dev/null"
    if content == "fifo":
        os.mkfifo(path)  # nobody ever writes: opening it plainly would block
    elif content == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
    elif content == "sparse":
        with open(path, "wb") as f:
            f.truncate(2 << 30)  # 2 GiB without blocks: over the limit
    elif content == "nul":
        with open(path, "wb") as f:
            f.truncate(1000 << 20)  # 1000 MB of NUL bytes: under the limit, never JSON
    elif content == "folder":
        path.mkdir()
    elif content == "empty":
        path.write_bytes(b"")
    elif content == "deep":
        path.write_bytes(b'{"a":' * 100 + b"1" + b"}" * 100)
    elif content == "array":
        path.write_bytes(b"[1, 2, 3]")
    elif content != "missing":
        path.write_bytes(content)
    return str(path)


def assert_contract(code: int, out: str, err: str, paths: tuple[str, str]) -> None:
    assert code in (0, 1, 2)
    assert "Traceback" not in out + err
    assert all(line.isprintable() for line in (out + err).splitlines()), out + err
    if code == 2:
        assert out == ""
        assert err.count("\n") == 1 and err.endswith("\n"), err
        assert err.startswith("compare.py: error: ")
        named = [p or "''" for p in paths] + [ascii(p)[1:-1] for p in paths if p]
        assert any(name in err for name in named), err
        return
    assert all(line.startswith("compare.py: warning: ") for line in err.splitlines()), err
    verdict = out.splitlines()[-1]
    assert verdict.endswith(" OK") if code == 0 else " FAIL (" in verdict, out


def _blocked(signum, frame):
    raise TimeoutError("compare.main blocked (a FIFO opened for reading?)")


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    previous = signal.signal(signal.SIGALRM, _blocked)
    signal.alarm(20)  # a hang fails the example instead of the whole suite
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a NumPy RuntimeWarning would be a stray stderr line
            code = compare.main(list(argv))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()  # capsys encodes strictly: a surrogate printed would raise
    return code, out, err


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile_cli")


OPTIONS = st.sampled_from(
    [[], [], ["--atol", "0.5"], ["--ulps", "3"], ["--rtol", "1e-3", "--dtype", "float64"],
     ["--keys", "w*"], ["--keys", "[a-"], ["--keys", "nothing"]]
)  # fmt: skip


@HOSTILE
@given(pair=PAIRS, options=OPTIONS)
def test_hostile_pairs_end_in_0_1_or_2_with_one_line(folder, capsys, pair, options):
    paths = (materialize(folder, pair[0], "a"), materialize(folder, pair[1], "b"))
    code, out, err = run_main(capsys, *paths, *options)
    assert_contract(code, out, err, paths)


@settings(HOSTILE, max_examples=120)
@given(doc=st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True).flatmap(documents))
def test_a_file_compared_with_itself_never_differs(folder, capsys, doc):
    """Identical inputs agree (a surrogate once made them exit 1, by a traceback)."""
    path = materialize(folder, doc, "same")
    code, out, err = run_main(capsys, path, path)
    assert_contract(code, out, err, (path, path))
    assert code in (0, 2), out


def test_the_generator_reaches_every_exit_code(folder, capsys):
    """Guards the property test against a generator that only produces exit 2."""
    seen = set()

    @settings(HOSTILE, max_examples=80)
    @given(pair=PAIRS)
    def collect(pair):
        paths = (materialize(folder, pair[0], "a"), materialize(folder, pair[1], "b"))
        seen.add(run_main(capsys, *paths)[0])

    collect()
    assert seen == {0, 1, 2}


# -- the messages name the file and the key ----------------------------------------------------


def strict(values) -> bytes:
    doc = {"format": 1, "case": "c", "side": "torch", "env": {}, "values": values}
    return to_text(doc).encode()


GOOD = strict({"w": {"dtype": "float32", "shape": [1], "data": [1.0]}})


@pytest.mark.parametrize(
    ("content", "key", "problem"),
    [
        (
            strict({"w": Raw('{"dtype": "float32", "shape": [1], "data": [NaN]}')}),
            "w",
            "data[0] is a bare nan literal",
        ),
        (
            strict({"w": {"dtype": "float32", "shape": [1], "data": [1e39]}}),
            "w",
            "is not exactly a float32 value",
        ),
        (
            strict({"w": {"dtype": "float32", "shape": [2, 2], "data": [1.0]}}),
            "w",
            "data has 1 entries but shape [2, 2] needs 4",
        ),
        (b'{"x": [[1, 2], [3]]}', "x", "ragged nested list"),
        (b'{"x": 1, "x": 2}', "x", "duplicate key"),
        (b'{"x": [1e39]}', "x", "overflows float32"),
        (b'{"x": {"y": ' + b"[" * 70 + b"]" * 70 + b"}}", "x.y", "nested deeper than 64"),
    ],
    ids=["nan-literal", "inexact", "count", "ragged", "duplicate", "overflow", "depth"],
)
def test_malformed_values_name_file_and_key(tmp_path, capsys, content, key, problem):
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_bytes(content)
    good.write_bytes(GOOD)
    code, out, err = run_main(capsys, str(good), str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"compare.py: error: {bad}: {key}: ") and problem in err, err
    assert err.count("\n") == 1


def test_a_newline_in_the_file_name_stays_on_one_line(tmp_path, capsys):
    odd = tmp_path / "a\nb.json"
    odd.write_bytes(b"{")
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    code, _, err = run_main(capsys, str(odd), str(good))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"compare.py: error: {tmp_path}/a\\nb.json: ")


def test_env_values_with_newlines_warn_on_one_line(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(GOOD.replace(b'"env": {}', b'"env": {"torch": "2.13.0"}'))
    b.write_bytes(GOOD.replace(b'"env": {}', b'"env": {"torch": "2.13\\nlocal"}'))
    code, _, err = run_main(capsys, str(a), str(b))
    assert code == 0
    assert err == "compare.py: warning: environments differ: torch (2.13.0 vs 2.13\\nlocal)\n"


# -- real processes: the script, not just main() -----------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("folder", "is a directory"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b'{"x": NaN, "y": [1, 2], "y": 3}', "y: duplicate key"),
        (b"", "empty file"),
    ],
    ids=["folder", "non-utf8", "duplicate-after-nan", "empty"],
)
def test_script_reports_one_line_and_exit_2(tmp_path, content, problem):
    bad = materialize(tmp_path, content, "bad")
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "compare.py"), str(good), str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"compare.py: error: {bad}: ") and problem in proc.stderr
    assert proc.stderr.count("\n") == 1


# -- special and huge files: refused before reading, quickly, with bounded memory ---------------

# Runs compare.main on each input in one process under an address-space limit far below the
# sizes involved, and reports each exit code and stderr, then the peak resident set in MB.
BOUNDED = """
import contextlib, io, json, resource, sys
limit = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.path.insert(0, sys.argv[2])
import compare
results = []
for bad in sys.argv[4:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = compare.main([bad, sys.argv[3]])
    results.append([int(code), err.getvalue()])
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked copy of the parent.
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) >> 10
print(json.dumps({"results": results, "peak_mb": peak}))
"""
LIMIT_MB = 600  # RLIMIT_AS: enough for Python and NumPy, far from 1 GiB of file
PEAK_MB = 200


def test_special_and_huge_files_are_refused_with_bounded_memory(tmp_path):
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    bad = {name: materialize(tmp_path, name, name) for name in ("fifo", "socket", "sparse", "nul")}
    bad["zero"] = "/dev/zero"
    proc = subprocess.run(
        [sys.executable, "-c", BOUNDED, str(LIMIT_MB), str(ROOT), str(good), *bad.values()],
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO opened for reading would block: fail, do not hang
        check=True,
    )
    report = json.loads(proc.stdout)
    problems = {
        "fifo": "is a FIFO (named pipe), not a regular file",
        "socket": "is a socket, not a regular file",
        "sparse": f"is {1 << 31} bytes, over the limit of {1 << 30} bytes for a JSON file",
        "nul": "not a JSON file: a NUL byte at offset 0",
        "zero": "is a character device, not a regular file",
    }
    for (name, path), (code, err) in zip(bad.items(), report["results"], strict=True):
        assert (code, err) == (2, f"compare.py: error: {path}: {problems[name]}\n")
    assert report["peak_mb"] < PEAK_MB, report


# -- integers, empty arguments -------------------------------------------------------------------


@pytest.mark.parametrize(
    "literal", ["-9223372036854775809", "9223372036854775808", "18446744073709551616"]
)
@pytest.mark.parametrize("where", ["loose", "strict"])
def test_integers_outside_int64_exit_2_quoting_the_literal(tmp_path, capsys, literal, where):
    bad = tmp_path / "bad.json"
    if where == "loose":
        bad.write_text(f'{{"w": [0.5, {literal}]}}')
    else:
        record = f'{{"dtype": "float64", "shape": [2], "data": [0.5, {literal}]}}'
        bad.write_bytes(strict({"w": Raw(record)}))
    code, out, err = run_main(capsys, str(bad), str(bad))
    assert (code, out) == (2, "")
    assert err == f"compare.py: error: {bad}: w: data[1] = integer {literal} is outside int64\n"


def test_an_empty_argument_is_named_as_empty(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    code, out, err = run_main(capsys, "", str(good))
    assert (code, out) == (2, "")
    assert err == "compare.py: error: '': empty file name, expected a JSON file\n"


def test_control_characters_never_reach_the_terminal(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"\\u001b[2J": [1.0], "s": "\\u001b]0;x\\u0007", "\\ud800": 1.5}')
    b.write_text('{"\\u001b[2J": [2.0], "s": "\\u001b]0;x\\u0007", "\\ud800": 1.5}')
    code, out, _ = run_main(capsys, str(a), str(b))
    assert code == 1 and "\x1b" not in out
    assert out.splitlines()[1].startswith("\\x1b[2J                  n=  1  max|diff|=1.00e+00")
    assert "x='\\x1b]0;x\\x07'" in out.replace("a=", "x=")
    assert any(line.startswith("\\ud800 ") for line in out.splitlines())


@pytest.mark.parametrize("option", ["--json", "--markdown", "--html", "--out", "--golden-dir"])
def test_an_empty_path_option_is_a_usage_error(tmp_path, capsys, option):
    """``--json ""`` once wrote nothing silently; ``--out ""`` would write into "."."""
    good = tmp_path / "good.json"
    good.write_bytes(GOOD)
    files = [str(good), str(good)] if option in ("--json", "--markdown", "--html") else []
    with pytest.raises(SystemExit) as info:
        compare.main([*files, option, ""])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"compare.py: error: {option}: empty file or folder name ('')"
    )


def test_warnings_name_the_file(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"x": [1.0, null]}')
    b.write_text('{"format": 2, "values": {}, "x": [1.0, NaN]}')
    code, _, err = run_main(capsys, str(a), str(b))
    assert code == 1  # b has keys a lacks
    assert err.splitlines() == [
        f"compare.py: warning: {a}: x: 1 null entries read as NaN (serde_json writes NaN and "
        "infinities as null)",
        f"compare.py: warning: {b}: format: 2 is not this harness's format 1; the file is read "
        "as loose JSON (every key is data)",
    ]
