"""The limits the weight importers share (harness.engine.untrusted): reprs that stay short
whatever they show, shapes NumPy could not hold, a read that stops at its cap."""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pytest

from harness.engine.untrusted import SHOWN_CHARS, read_file, shape_problem, shown, stride_problem


class Ref(NamedTuple):
    key: str
    numel: int


def shared_lists(levels: int) -> list:
    x: list = []
    for _ in range(levels):
        x = [x, x]
    return x


@pytest.mark.parametrize(
    "value",
    [
        shared_lists(60),  # repr(): 2**60 leaves
        OrderedDict((i, list(range(1000))) for i in range(10_000)),  # reprlib: the builtin repr
        Ref("k" * 1_000_000, 10**5000),  # a NamedTuple: the builtin repr, then str() of the int
        b"\x00" * 1_000_000,
        "x" * 1_000_000,
    ],
    ids=["shared lists", "OrderedDict", "NamedTuple", "bytes", "str"],
)
def test_shown_is_bounded_whatever_it_shows(value):
    text = shown(value)
    assert 0 < len(text) <= SHOWN_CHARS and text.isprintable()


def test_shown_names_ints_too_long_to_print_and_keeps_small_values():
    assert shown(10**5000) == "<integer of 16610 bits>"
    assert shown(-(10**5000)) == "<-integer of 16610 bits>"
    assert shown([1, 2.5, "a", None, True]) == "[1, 2.5, 'a', None, True]"
    assert shown(Ref("w", 4)) == "Ref('w', 4)"
    assert shown(np.float32) == "<type>"  # no repr of arbitrary objects


def test_shape_and_stride_problems_are_numpys_limits():
    assert shape_problem((1 << 70, 0), 4) == (
        "shape [1180591620717411303424, 0] holds more than 9223372036854775807 bytes"
    )
    assert shape_problem((1,) * 65, 1) == "rank 65 is more than 64"
    # The boundary is NumPy's own: it builds the first shape and refuses the second.
    assert shape_problem(((1 << 61) - 1, 0), 4) is None
    np.empty(((1 << 61) - 1, 0), dtype="<f4")
    assert shape_problem((1 << 61, 0), 4) is not None
    with pytest.raises(ValueError, match="array is too big"):
        np.empty((1 << 61, 0), dtype="<f4")
    assert shape_problem((), 8) is None and shape_problem((0,) * 64, 8) is None
    assert stride_problem(((1 << 61) - 1,), 4) is None and stride_problem((1 << 61,), 4) is not None


def test_read_file_stops_at_its_cap_and_names_the_file(tmp_path):
    path = tmp_path / "w.pt"
    path.write_bytes(b"x" * 100)
    assert read_file(path, ValueError, cap=100) == b"x" * 100
    over = f"^{re.escape(str(path))}: is 100 bytes, over the limit of 99 bytes for a weight file$"
    with pytest.raises(ValueError, match=over):
        read_file(path, ValueError, cap=99)
    with pytest.raises(ValueError, match=r"absent.pt: no such file$"):
        read_file(tmp_path / "absent.pt", ValueError)
