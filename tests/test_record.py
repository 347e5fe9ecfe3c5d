"""The typed JSON codec: exact round trips, canonical text, values of every kind, loose JSON."""

import json
import math

import numpy as np
import pytest

import harness.record.read as record_read
import harness.record.write as record_write
from harness import environment, record
from harness.record import CapturedError, RecordError

F32 = np.finfo(np.float32)
F64 = np.finfo(np.float64)
SPECIALS = {
    "float32": [
        -0.0, 0.0, math.nan, math.inf, -math.inf, F32.smallest_subnormal, F32.smallest_normal,
        F32.smallest_normal - F32.smallest_subnormal, F32.max, -F32.max, 1 / 3, 0.1, 1e-5, 1e-7,
    ],
    "float64": [
        -0.0, 0.0, math.nan, math.inf, -math.inf, F64.smallest_subnormal, F64.smallest_normal,
        F64.smallest_normal - F64.smallest_subnormal, F64.max, -F64.max, 1 / 3, 0.1, 1e-5, 1e-7,
    ],
}  # fmt: skip
UINT = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16}


def round_trip(tmp_path, values, env=None, **kwargs):
    path = tmp_path / "side.json"
    record.write_side(path, "case", "torch", values, env or {}, **kwargs)
    return record.read_side(path)


def write_json(tmp_path, text, name="in.json"):
    path = tmp_path / name
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def assert_bits_equal(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = UINT[want.dtype.name]
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_special_value_round_trips_bit_for_bit(tmp_path, dtype):
    want = np.array(SPECIALS[dtype], dtype=dtype)
    got = round_trip(tmp_path, {"x": want}).values["x"]
    assert_bits_equal(got, want)
    assert np.signbit(got[0]) and not np.signbit(got[1])  # -0.0 and +0.0 both survive


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_specials_also_round_trip_as_0d_and_inside_matrices(tmp_path, dtype):
    grid = np.array(SPECIALS[dtype], dtype=dtype).reshape(2, 7)
    values = {"grid": grid, "scalar": grid[0, 2].copy(), "T": grid.T}
    got = round_trip(tmp_path, values).values
    assert_bits_equal(got["grid"], grid)
    assert_bits_equal(got["T"], np.ascontiguousarray(grid.T))
    assert got["scalar"].shape == () and np.isnan(got["scalar"])


def test_random_float32_bits_round_trip(tmp_path):
    bits = np.random.default_rng(0).integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32)
    want = bits.view(np.float32)
    got = round_trip(tmp_path, {"x": want}).values["x"]
    nan = np.isnan(want)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], bits[~nan])
    assert np.isnan(got[nan]).all()  # NaN payloads are not kept: "NaN" is one value


def test_float32_data_is_written_as_exact_doubles():
    text = record.dumps_side("c", "torch", {"x": np.float32(0.1)}, {})
    assert '"data": [0.10000000149011612]' in text
    assert float(np.float32(0.1)) == 0.10000000149011612


def test_text_for_specials_and_negative_zero():
    x = np.array([-0.0, np.nan, np.inf, -np.inf, 1e-5, 1e-7], dtype=np.float64)
    text = record.dumps_side("c", "torch", {"x": x}, {})
    data = '"data": [-0.0,"NaN","Infinity","-Infinity",0.00001,1e-7]'
    assert data in text
    json.loads(text, parse_constant=pytest.fail)  # strict RFC 8259: no NaN literal anywhere


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int64", [-(2**63), 2**63 - 1, 0, -1]),
        ("int32", [-(2**31), 2**31 - 1]),
        ("uint8", [0, 255]),
        ("uint64", [0, 2**64 - 1]),
        ("bool", [True, False]),
        ("float16", [-0.0, 65504.0, 6e-8, math.inf]),
    ],
)
def test_other_dtypes_round_trip_exactly(tmp_path, dtype, values):
    want = np.array(values, dtype=dtype)
    got = round_trip(tmp_path, {"x": want}).values["x"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if dtype == "float16":
        assert np.signbit(got[0])


def test_bool_tensor_is_written_as_json_bools():
    text = record.dumps_side("c", "s", {"b": np.array([True, False])}, {})
    assert '"data": [true,false]' in text


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 2, 5)])
def test_empty_and_0d_shapes(tmp_path, shape):
    want = np.ones(shape, dtype=np.float32)
    got = round_trip(tmp_path, {"x": want}).values["x"]
    assert got.shape == shape and got.dtype == np.float32


def test_output_is_byte_identical_and_canonical(tmp_path):
    values = {"w": np.arange(20, dtype=np.float32) / 7, "loss": 0.25, "err": None}
    env = environment.probe()
    first = record.dumps_side("c", "torch", values, env)
    second = record.dumps_side("c", "torch", dict(values), dict(reversed(env.items())))
    assert first == second
    record.write_side(tmp_path / "a.json", "c", "torch", values, env)
    record.write_side(tmp_path / "b.json", "c", "torch", values, env)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "a.json").read_text() == first and first.endswith("}\n")


def test_layout_header_order_sorted_env_values_in_given_order():
    values = {"z": 1, "a": np.float32(2.0), "m": "text"}
    text = record.dumps_side("c", "engine", values, {"b": 1, "a": [2]})
    assert text == (
        "{\n"
        '  "format": 1,\n'
        '  "case": "c",\n'
        '  "side": "engine",\n'
        '  "env": {\n'
        '    "a": [2],\n'
        '    "b": 1\n'
        "  },\n"
        '  "values": {\n'
        '    "z": 1,\n'
        '    "a": {"dtype": "float32", "shape": [], "data": [2.0]},\n'
        '    "m": "text"\n'
        "  }\n"
        "}\n"
    )


def test_one_element_change_is_a_one_line_diff():
    w = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    big = np.arange(100, dtype=np.float64)
    before = record.dumps_side("c", "s", {"w": w, "big": big}, {}).splitlines()
    w[2, 1], big[57] = -1.5, 0.5
    after = record.dumps_side("c", "s", {"w": w, "big": big}, {}).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("      6.0,7.0,8.0,", "      6.0,-1.5,8.0,"),
                       ("      56.0,57.0,58.0,59.0,60.0,61.0,62.0,63.0,",
                        "      56.0,0.5,58.0,59.0,60.0,61.0,62.0,63.0,")]  # fmt: skip


def test_stdlib_fallback_writes_the_same_bytes_and_reads_the_same(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    values = {
        "f32": (rng.standard_normal(300) * 10.0 ** rng.integers(-40, 38, 300)).astype(np.float32),
        "f64": rng.standard_normal(300) * 10.0 ** rng.integers(-300, 300, 300),
        "odd": np.array([np.nan, -0.0, np.inf, 1e-5, 5e-324]),
        "i": np.arange(-5, 5),
        "b": np.array([[True], [False]]),
    }
    fast = record.dumps_side("c", "s", values, {"x": 1e-5})
    path = write_json(tmp_path, fast)
    fast_values = record.read_side(path).values
    monkeypatch.setattr(record_write, "_orjson", None)
    monkeypatch.setattr(record_read, "_orjson", None)
    assert record.dumps_side("c", "s", values, {"x": 1e-5}) == fast
    slow_values = record.read_side(path).values
    for key, want in values.items():
        assert_equal_bits(fast_values[key], want)
        assert_equal_bits(slow_values[key], want)


def assert_equal_bits(got, want):
    if want.dtype.kind == "f":
        assert_bits_equal(got, want)
    else:
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


# ---------------------------------------------------------------- normalize


def test_normalize_flattens_and_keeps_plain_values():
    err = CapturedError("RuntimeError", "boom")
    values = {
        "grads": {"fc1": {"weight": np.zeros(2)}, "bias": np.float64(1.5)},
        "n": 3,
        "x": 0.5,
        "flag": True,
        "none": None,
        "name": "relu",
        "err": err,
        "shape": (2, [3, 4]),
    }
    out = record.normalize(values)
    assert list(out) == ["grads.fc1.weight", "grads.bias", "n", "x", "flag", "none", "name",
                         "err", "shape"]  # fmt: skip
    assert out["grads.bias"].shape == () and out["grads.bias"].dtype == np.float64
    assert out["n"] == 3 and type(out["n"]) is int
    assert out["flag"] is True and out["none"] is None and out["err"] is err
    assert out["shape"] == [2, [3, 4]]
    assert record.normalize(out).keys() == out.keys()


def test_non_finite_python_float_becomes_a_0d_float64_array(tmp_path):
    out = record.normalize({"x": -math.inf})
    assert out["x"].dtype == np.float64 and out["x"].shape == () and out["x"] == -math.inf
    assert round_trip(tmp_path, {"x": math.nan}).values["x"].dtype == np.float64


def test_plain_values_round_trip_with_their_types(tmp_path):
    err = CapturedError("ValueError", 'bad "value": \u00e9\n2nd line')
    values = {"i": -7, "f": 0.1, "neg0": -0.0, "t": True, "n": None, "s": "a\tb", "e": err,
              "l": [1, 2.5, None, "x", [True]]}  # fmt: skip
    got = round_trip(tmp_path, values).values
    assert got == values
    assert type(got["f"]) is float and math.copysign(1, got["neg0"]) == -1


def test_torch_tensors_are_converted_with_their_dtype(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1.0, -0.0], [float("nan"), 3.0]], requires_grad=True)
    values = {
        "t": t * 2,
        "t64": torch.tensor([0.1], dtype=torch.float64),
        "i": torch.tensor([1, 2]),
        "b": torch.tensor([True]),
        "neg": torch.tensor([1.0, 2.0]).neg().conj(),
        "p": torch.nn.Parameter(torch.ones(2)),
    }
    got = round_trip(tmp_path, values).values
    assert_bits_equal(got["t"], (t * 2).detach().numpy())
    assert got["t64"].dtype == np.float64 and got["t64"][0] == 0.1
    assert got["i"].dtype == np.int64 and got["b"].dtype == np.bool_
    np.testing.assert_array_equal(got["neg"], [-1.0, -2.0])
    assert got["p"].dtype == np.float32


def test_engine_tensors_are_converted():
    engine = pytest.importorskip("harness.engine")
    t = engine.Tensor.from_floats([[1.0, -0.0]], engine.Device.flex())
    out = record.normalize({"t": t})["t"]
    assert out.dtype == np.float32 and np.signbit(out[0, 1])


def test_duck_typed_engine_class_is_recognised():
    fake = type("Tensor", (), {"__module__": "harness.engine.fake", "numpy": lambda self: [1.5]})
    out = record.normalize({"t": fake()})["t"]
    np.testing.assert_array_equal(out, [1.5])


def test_unsupported_type_names_key_and_type():
    with pytest.raises(TypeError, match=r"^a\.b: unsupported value type builtins\.set"):
        record.normalize({"a": {"b": {1}}})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"x": np.array([1 + 2j])}, r"^x: unsupported dtype complex128"),
        ({"x": np.array(["s"])}, r"^x: unsupported dtype <U1"),
        ({"x": [math.nan]}, r"^x: non-finite float inside a list"),
        ({"x": [object()]}, r"^x: a list may hold"),
        ({"x": 2**64}, r"^x: int 18446744073709551616 is outside int64"),
        ({1: 2}, r"^1: keys must be non-empty str"),
    ],
)
def test_normalize_rejects_with_the_key(values, message):
    with pytest.raises(TypeError, match=message):
        record.normalize(values)


def test_key_collision_names_the_key():
    with pytest.raises(ValueError, match=r"^a\.b: two values flatten to the same dotted key"):
        record.normalize({"a.b": 1, "a": {"b": 2}})


def test_non_native_byte_order_is_normalized(tmp_path):
    want = np.array([1.5, -0.0], dtype=">f4")
    got = round_trip(tmp_path, {"x": want}).values["x"]
    assert got.dtype == np.float32 and got.dtype.isnative
    assert_bits_equal(got, want.astype(np.float32))


def test_captured_error_from_exception():
    err = CapturedError.from_exception(ZeroDivisionError("division by zero"))
    assert err == CapturedError("ZeroDivisionError", "division by zero")
    assert record.encode(err) == {"error": "ZeroDivisionError", "message": "division by zero"}


def test_encode_and_decode_one_value(tmp_path):
    x = np.array([[np.nan, -0.0]], dtype=np.float32)
    obj = record.encode(x)
    assert obj == {"dtype": "float32", "shape": [1, 2], "data": ["NaN", -0.0]}
    back = record.decode(json.loads(json.dumps(obj)), path=tmp_path / "f.json", key="x")
    assert_bits_equal(back, x)
    with pytest.raises(RecordError, match=r"f\.json: y: unknown dtype 'half'"):
        record.decode({**obj, "dtype": "half"}, path=tmp_path / "f.json", key="y")


# ---------------------------------------------------------------- loose JSON


def test_loose_serde_style_json_is_flattened(tmp_path):
    text = json.dumps({
        "logits": [[1.5, -2.0], [0.1, 3]],
        "grads": {"fc1": {"weight": [[1, 2, 3]], "bias": [0.5]}},
        "loss": 0.25,
        "step": 3,
        "ok": True,
        "name": "mlp",
        "none": None,
        "labels": ["a", "b"],
        "mask": [True, False],
        "empty": [],
    })  # fmt: skip
    rec = record.read_side(write_json(tmp_path, text))
    v = rec.values
    assert rec.format is None and rec.case is None and rec.env == {}
    assert list(v) == ["logits", "grads.fc1.weight", "grads.fc1.bias", "loss", "step", "ok",
                       "name", "none", "labels", "mask", "empty"]  # fmt: skip
    assert v["logits"].dtype == np.float32 and v["logits"].shape == (2, 2)
    assert v["logits"][1, 0] == np.float32(0.1)  # rounded, not rejected: serde writes f32 short
    assert v["grads.fc1.weight"].shape == (1, 3)
    assert v["loss"].shape == () and v["loss"].dtype == np.float32
    # Read as written (issue 12 item 8): an integer literal stays an integer, int64.
    assert v["step"] == 3 and v["step"].dtype == np.int64 and v["step"].shape == ()
    assert v["grads.fc1.weight"].dtype == np.int64  # all integers; [0.1, 3] above: floats
    assert v["ok"] is True and v["name"] == "mlp" and v["none"] is None
    assert v["labels"] == ["a", "b"] and v["mask"].dtype == np.bool_
    assert v["empty"].shape == (0,)


def test_loose_default_dtype_float64(tmp_path):
    path = write_json(tmp_path, '{"x": [0.1, 1e300]}')
    got = record.read_side(path, default_dtype="float64").values["x"]
    assert got.dtype == np.float64 and got[0] == 0.1


def test_loose_null_is_nan_with_a_warning_and_literals_are_accepted(tmp_path):
    path = write_json(tmp_path, '{"x": [1.0, null, NaN, -Infinity], "y": Infinity}')
    rec = record.read_side(path)
    assert np.isnan(rec.values["x"][1:3]).all() and rec.values["x"][3] == -np.inf
    assert rec.values["y"] == np.inf
    assert rec.warnings == (
        "x: 1 null entries read as NaN (serde_json writes NaN and infinities as null)",
    )


def test_loose_json_may_hold_typed_records(tmp_path):
    text = json.dumps({
        "outer": {"t": {"dtype": "int64", "shape": [2], "data": [1, 2]},
                  "e": {"error": "RuntimeError", "message": "x"}},
        "plain": {"error": 1, "message": "not a record: flattened"},
    })  # fmt: skip
    v = record.read_side(write_json(tmp_path, text)).values
    assert v["outer.t"].dtype == np.int64
    assert v["outer.e"] == CapturedError("RuntimeError", "x")
    assert v["plain.error"] == 1 and v["plain.message"] == "not a record: flattened"


def test_format_1_files_and_loose_files_agree(tmp_path):
    x = np.array([[0.5, -1.25]], dtype=np.float32)
    typed = round_trip(tmp_path, {"a": {"x": x}}).values
    loose = record.read_side(write_json(tmp_path, '{"a": {"x": [[0.5, -1.25]]}}')).values
    assert typed.keys() == loose.keys()
    assert_bits_equal(loose["a.x"], typed["a.x"])


def test_environment_is_deterministic_and_has_no_host_name():
    import platform

    env = environment.probe()
    assert env == environment.probe()
    assert {"torch", "numpy", "python", "platform", "blas", "torch_threads"} <= env.keys()
    assert env["numpy"] == np.__version__
    assert platform.node() not in json.dumps(env)
    for pool in env["blas"]:
        assert {"internal_api", "version", "architecture", "num_threads"} <= pool.keys()


def test_side_env_reads_only_the_header():
    text = '{\n  "format": 1,\n  "env": {"numpy": "2.4.6"},\n  "values": {"x": [1, '  # cut short
    assert record.side_env(text) == {"numpy": "2.4.6"}
