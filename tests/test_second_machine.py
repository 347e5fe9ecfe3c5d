"""Under the x86-64-v3 numerics profile this machine computes what a second machine (AMD Zen 3,
AVX2, no AVX-512) computed, bit for bit (``tests/second_machine/README.md``)."""

from pathlib import Path

import pytest

from harness import numerics, record
from harness.case import discover
from harness.diff import diff_values
from harness.runner import run_side
from harness.tolerances import Tolerance

FOLDER = Path(__file__).resolve().parent / "second_machine"
ROOT = FOLDER.parents[1]
FILES = sorted(FOLDER.glob("*/*.json"))


def test_the_fixture_files_are_there():
    assert [f"{p.parent.name}/{p.name}" for p in FILES] == [
        "batch_norm/engine.json",
        "batch_norm/torch.json",
        "cnn_digits/engine.json",
        "conv_layouts/torch.json",
        "losses/engine.json",
        "lstm_gates/engine.json",
    ]


@pytest.mark.skipif(
    numerics.in_force()["profile"] != "x86-64-v3",
    reason="the second machine's bits are those of the x86-64-v3 profile",
)
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_profile_reproduces_the_second_machine_bit_for_bit(path):
    (case,) = discover([path.parent.name], ROOT / "cases")
    theirs = record.read_side(path)
    assert theirs.env["blas"][0]["architecture"] == "Haswell"  # what that machine ran
    ours = record.normalize(run_side(case, path.stem))
    # Written with their environment block, our values give their file byte for byte (the
    # codec is exact: NaN, -0.0 and every float32 bit pattern round-trip).
    text = record.dumps_side(case.name, path.stem, ours, theirs.env)
    if text != path.read_text(encoding="utf-8"):
        diff = diff_values(theirs.values, ours, tol_for=lambda k, d: Tolerance.exact())
        pytest.fail(f"not bit for bit: {[r.key for r in diff.rows if not r.bit_identical]}")
