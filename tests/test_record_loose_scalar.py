"""The loose reader's scalar fast path gives what the list path gives ``[value]``, errors too.

The reference is ``array(key, [value], dtype, strict=False).reshape(())``: the path every loose
scalar float took before the fast path, and the one loose lists still take.
"""

from pathlib import Path

import numpy as np
import pytest

from harness.record.read import _Literal, _Reader, read_side
from harness.record.values import FLOAT_DTYPES, MAX_ELEMENTS, RecordError

VALUES = [
    0.0,
    -0.0,
    1.0,
    0.1,
    -2.5,
    1e-45,  # float32 subnormal
    1e-46,  # below float32's smallest subnormal: rounds to 0
    5e-324,  # float64's smallest subnormal
    1e-8,  # below float16's smallest subnormal
    65504.0,  # float16 max
    65519.0,  # rounds down to float16 max
    65520.0,  # rounds to float16 inf: overflow error
    3.4028234663852886e38,  # float32 max
    3.4028235677973366e38,  # rounds to float32 inf: overflow error
    1e300,
    -1e300,
    2.0**63 - 1024,  # just below the re-parse threshold
    2.0**63,  # at it: maybe an integer orjson rounded
    -(2.0**63),
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    _Literal("nan"),
    _Literal("inf"),
    _Literal("-inf"),
]


def outcome(call):
    try:
        value = call()
    except RecordError as exc:
        return "error", str(exc)
    except Exception as exc:
        return "raised", type(exc).__name__
    return value.dtype.str, value.shape, value.tobytes()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("exact_ints", [True, False])
def test_scalar_path_equals_list_path(dtype, exact_ints):
    for value in VALUES:
        fast = _Reader(Path("side.json"), dtype, MAX_ELEMENTS, True)
        slow = _Reader(Path("side.json"), dtype, MAX_ELEMENTS, True)
        fast.exact_ints = slow.exact_ints = exact_ints
        got = outcome(lambda: fast.loose_value("k", value))  # noqa: B023
        want = outcome(lambda: slow.array("k", [value], dtype, strict=False).reshape(()))  # noqa: B023
        assert got == want, (dtype, value, got, want)
        assert fast.warnings == slow.warnings


def test_loose_file_scalars_end_to_end(tmp_path):
    """Through read_side: ints stay int64, floats take the default dtype, errors name the key."""
    path = tmp_path / "loose.json"
    path.write_text('{"i": 3, "f": 0.1, "n": NaN, "big": 9223372036854775807}')
    values = read_side(path).values
    assert values["i"].dtype == np.int64 and values["i"].shape == ()
    assert values["big"] == 2**63 - 1
    assert values["f"].dtype == np.float32 and values["f"] == np.float32(0.1)
    assert np.isnan(values["n"]) and values["n"].dtype == np.float32
    assert read_side(path, default_dtype="float64").values["f"] == 0.1
    path.write_text('{"x": 1e39}')
    with pytest.raises(RecordError, match=r"x.*overflows float32"):
        read_side(path)
    path.write_text('{"x": 9223372036854775808}')
    with pytest.raises(RecordError, match=r"x.*outside int64"):
        read_side(path)
