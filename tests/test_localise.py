"""Module-level localisation on planted differences: each model has several layers, one of
which computes another formula on one side; the verdict must name that module and say formula.
The unchanged model must say rounding and name none. Capture must not change a side's values.

The models are written twice, line for line, and share weights through weight import
(``import_torch_weights``), so the only difference between the sides is the planted one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import record
from harness.a1 import import_torch_weights
from harness.case import localise
from harness.engine import (
    CrossEntropyLossConfig,
    Device,
    Gelu,
    GradientsParams,
    LayerNormConfig,
    LinearConfig,
    Module,
    SgdConfig,
    Tensor,
    activation,
)
from harness.localise import (
    capture_side,
    engine_capture,
    engine_paths,
    localise_sides,
    model_order,
    torch_capture,
)
from harness.report.localise import verdict_text
from harness.runner import run_side
from harness.trajectory import Precision

B, S, D, C = 4, 5, 8, 3
STEPS, LR = 2, 0.1
SPEC = localise(steps=STEPS)
# A product, not a quotient: burn's div_scalar backward computes 1/s in float32 even for
# float64 tensors (harness.engine.ops.elementwise.div_scalar_backward), a formula difference
# of its own (test_burn_div_scalar_backward_is_found).
SCALE = 1 / math.sqrt(D)


def _inputs(dtype: str):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((B, S, D)).astype(dtype)
    y = rng.integers(0, C, B * S).astype(np.int64)
    return x, y


# ---- the torch model -------------------------------------------------------------------------


class NoBiasLinear(nn.Linear):
    """A Linear whose bias is left out of its forward (the planted difference)."""

    def forward(self, x):
        return F.linear(x, self.weight)


class TorchAttention(nn.Module):
    """Single-head self-attention; the last key of every sequence is masked out, and so is
    every key of the first sequence's last query (a fully masked row: filled with -1e4 it
    attends to every key alike, filled with -inf it is NaN)."""

    def __init__(self, divide: bool) -> None:
        super().__init__()
        self.query, self.key, self.value = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.divide = divide

    def forward(self, x):
        scores = self.query(x) @ self.key(x).transpose(1, 2)
        scores = scores / math.sqrt(D) if self.divide else scores * SCALE
        scores = scores.masked_fill(torch.from_numpy(_mask()), -1e4)
        return torch.softmax(scores, dim=-1) @ self.value(x)


def _mask() -> np.ndarray:
    mask = np.zeros((B, S, S), bool)
    mask[:, :, -1] = True
    mask[0, -1, :] = True
    return mask


class TorchNet(nn.Module):
    def __init__(self, plant: str) -> None:
        super().__init__()
        self.fc1 = nn.Linear(D, D)
        self.norm1 = nn.LayerNorm(D)
        self.attn = TorchAttention(divide=plant == "div")
        self.fc2 = NoBiasLinear(D, D) if plant == "bias" else nn.Linear(D, D)
        self.act = nn.GELU()
        self.norm2 = nn.LayerNorm(D)
        self.head = nn.Linear(D, C)

    def forward(self, x):
        h = self.norm1(self.fc1(x))
        h = h + self.attn(h)
        return self.head(self.norm2(self.act(self.fc2(h))))


# ---- the engine model ------------------------------------------------------------------------


class EngineAttention(Module):
    def __init__(self, device, fill: float, divide: bool) -> None:
        self.query, self.key, self.value = (LinearConfig(D, D).init(device) for _ in range(3))
        self.fill, self.divide = fill, divide

    def forward(self, x):
        scores = self.query(x).matmul(self.key(x).swap_dims(1, 2))
        scores = scores.div_scalar(math.sqrt(D)) if self.divide else scores.mul_scalar(SCALE)
        mask = Tensor.from_numpy(_mask(), x.device)
        return activation.softmax(scores.mask_fill(mask, self.fill), 2).matmul(self.value(x))


class EngineNet(Module):
    def __init__(self, device, plant: str) -> None:
        self.fc1 = LinearConfig(D, D).init(device)
        self.norm1 = LayerNormConfig(D).init(device)
        fill = -math.inf if plant == "mask" else -1e4
        self.attn = EngineAttention(device, fill, divide=plant == "div")
        self.fc2 = LinearConfig(D, D).init(device)
        self.act = Gelu.new_approximate() if plant == "tanh" else Gelu()
        self.norm2 = LayerNormConfig(D, epsilon=1e-2 if plant == "epsilon" else 1e-5).init(device)
        self.head = LinearConfig(D, C).init(device)

    def forward(self, x):
        h = self.norm1(self.fc1(x))
        h = h + self.attn(h)
        return self.head(self.norm2(self.act(self.fc2(h))))


# ---- the experiment, written twice -----------------------------------------------------------


def _torch_model(plant: str, dtype) -> TorchNet:
    torch.manual_seed(3)
    return TorchNet(plant).to(dtype)


def torch_side(plant: str, dtype=torch.float32):
    model = _torch_model(plant, dtype)
    x, y = (torch.from_numpy(a) for a in _inputs(str(dtype).removeprefix("torch.")))
    optim = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        optim.zero_grad()
        loss = F.cross_entropy(model(x).reshape(B * S, C), y)
        loss.backward()
        optim.step()
        losses.append(loss.detach())
    return {"loss": torch.stack(losses), "head": model.head.weight.detach()}


def engine_side(plant: str, dtype="float32"):
    device = Device.flex().autodiff()
    model, result = import_torch_weights(
        _torch_model(plant, getattr(torch, dtype)), EngineNet(device, plant)
    )
    assert not (result.missing or result.errors), result
    x_np, y_np = _inputs(dtype)
    x, y = Tensor.from_numpy(x_np, device), Tensor.from_numpy(y_np, device)
    optim, loss_fn = SgdConfig().init(), CrossEntropyLossConfig().init(device)
    losses = []
    for _ in range(STEPS):
        loss = loss_fn.forward(model(x).reshape([B * S, C]), y)
        model = optim.step(LR, model, GradientsParams.from_grads(loss.backward(), model))
        losses.append(loss.numpy().reshape(()))
    return {"loss": np.stack(losses), "head": model.head.weight.val().numpy().T}


def _localise(plant: str):
    return localise_sides(
        lambda dtype: torch_side(plant, dtype), lambda dtype: engine_side(plant, dtype), SPEC
    )


# ---- the verdicts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plant", "module", "op"),
    [
        ("epsilon", "norm2", ("add_scalar", 5, 9)),  # var + epsilon (burn's LayerNorm order)
        ("bias", "fc2", ("linear", 1, 1)),  # the engine's Linear is one primitive
        ("mask", "attn", ("mask_fill", 6, 9)),
        ("tanh", "act", ("powi_scalar", 1, 8)),  # x ** 3.0, burn's whole-exponent powf path
    ],
)
def test_planted_difference_is_named_formula(plant, module, op):
    found = _localise(plant)
    first = found.first
    assert first is not None, verdict_text(found)
    assert (first.step, first.phase, first.path) == (0, "forward", module), verdict_text(found)
    assert first.verdict == Precision.FORMULA
    assert first.excess_bits > 20  # a formula: ~29 bits (float64 eps / float32 eps)
    name, number, count = op
    assert (found.op.name, found.op.index + 1, found.op.count) == op
    text = verdict_text(found)
    assert text.startswith(
        f"first parts at step 0, forward, `{module}` output > `{name}` (engine op {number} of "
        f"{count}): float64 says formula ("
    )
    # Every module before it in model order is rounding.
    before = found.rows[: found.rows.index(first)]
    assert before and all(row.verdict == Precision.ROUNDING for row in before)


def test_burn_div_scalar_backward_is_found():
    """Not planted: burn's div_scalar backward multiplies by 1/s computed in float32, also
    for float64 tensors. The forward agrees; the first gradient it touches is the one into
    the key projection's output (the last of q, k, v in backward order)."""
    found = _localise("div")
    first = found.first
    assert (first.step, first.phase, first.path) == (0, "grad_output", "attn.key")
    assert all(row.verdict == Precision.ROUNDING for row in found.rows if row.phase == "forward"
               and row.step == 0)  # fmt: skip
    assert verdict_text(found).startswith(
        "first parts at step 0, backward, `attn.key` output gradient: float64 says formula ("
    )


def test_unchanged_model_is_rounding_everywhere():
    found = _localise("none")
    assert found.first is None
    assert all(row.verdict == Precision.ROUNDING for row in found.rows)
    phases = {row.phase for row in found.rows}
    assert phases == {"input", "forward", "grad_output", "grad_input"}
    assert {row.step for row in found.rows} == {0, 1}
    assert found.unmatched == ()
    assert verdict_text(found) == (
        f"rounding everywhere: {len(found.rows)} module values over 2 step(s) agree to "
        "rounding in float64"
    )


def test_float64_gap_decides_not_float32_gap():
    """The tanh planting parts both dtypes by the same absolute amount; an unchanged model's
    float32 rows differ too (op order), yet their float64 rows stay at float64 rounding."""
    found = _localise("none")
    assert any(row.max_abs32 > 0 for row in found.rows)  # the float32 sides do differ
    assert max(row.max_abs64 for row in found.rows) < 1e-12
    planted = _localise("tanh").first
    assert planted.max_abs64 == pytest.approx(planted.max_abs32, rel=0.1)


# ---- capture ---------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["torch", "engine"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_capture_does_not_change_side_values(side, dtype):
    """What a side returns under capture is what it returns without: the same side text."""
    side_fn = {"torch": torch_side, "engine": engine_side}[side]

    class _Case:  # the one method run_side reads
        def side_fn(self, _side):
            return lambda dtype=None: side_fn("none", dtype)

    plain = run_side(_Case(), side, dtype=dtype)
    captured, capture = capture_side(lambda dtype: side_fn("none", dtype), side, SPEC, dtype)
    assert capture.values  # something was captured
    assert record.side_text("c", side, captured, {}) == record.side_text("c", side, plain, {})


def test_capture_keys_steps_paths_and_calls():
    with torch_capture(localise(steps=1)) as capture:
        torch_side("none")
    paths = [path for _, path, _ in capture.finished]
    # Inner modules return before the module that holds them; only step 0 is kept.
    assert paths == ["fc1", "norm1", "attn.query", "attn.key", "attn.value", "attn", "fc2",
                     "act", "norm2", "head", ""]  # fmt: skip
    assert {step for step, _, _, _ in capture.values} == {0}
    assert model_order(capture)[:5] == [
        (0, "input", "", 0),  # the model's own input
        (0, "input", "fc1", 0),
        (0, "forward", "fc1", 0),
        (0, "input", "norm1", 0),
        (0, "forward", "norm1", 0),
    ]
    # Backward: the head first, then the gradient it passed back.
    backward = [k for k in model_order(capture) if k[1] not in ("input", "forward")]
    assert backward[:3] == [
        (0, "grad_output", "", 0),
        (0, "grad_output", "head", 0),
        (0, "grad_input", "head", 0),
    ]


def test_engine_capture_restores_forward_and_matches_torch_values():
    original = EngineNet.forward
    with engine_capture(SPEC) as capture:
        engine_side("none")
    assert EngineNet.forward is original
    assert Gelu.forward.__name__ == "forward" and not hasattr(Gelu.forward, "__wrapped__")
    with torch_capture(SPEC) as reference:
        torch_side("none")
    assert set(capture.values) == set(reference.values)
    key = (0, "forward", "norm1", 0)
    np.testing.assert_allclose(capture.values[key].values, reference.values[key].values, atol=1e-6)


def test_large_tensors_keep_a_stride():
    with torch_capture(localise(steps=1, cap=7)) as capture:
        torch_side("none")
    kept = capture.values[(0, "forward", "fc1", 0)]
    assert kept.shape == (B, S, D) and kept.strided
    assert kept.values.size == math.ceil(B * S * D / math.ceil(B * S * D / 7))


def test_paths_follow_weight_import_rules():
    types = [
        ("encoder", "Struct:TransformerEncoder"),
        ("encoder.layers.1", "Struct:TransformerEncoderLayer"),
        ("encoder.layers.1.mha", "Struct:MultiHeadAttention"),
        ("encoder.layers.1.pwff", "Struct:PositionWiseFeedForward"),
    ]
    torch_paths = ["encoder.layers.1.self_attn", "encoder.layers.1.self_attn.out_proj",
                   "encoder.layers.1.linear1", "encoder.layers.1.norm2", "head"]  # fmt: skip
    assert engine_paths(torch_paths, types, paths={"head": "output"}) == {
        "encoder.layers.1.self_attn": "encoder.layers.1.mha",
        "encoder.layers.1.self_attn.out_proj": "encoder.layers.1.mha.output",
        "encoder.layers.1.linear1": "encoder.layers.1.pwff.linear_inner",
        "encoder.layers.1.norm2": "encoder.layers.1.norm_2",
        "head": "output",
        "": "",  # the model itself
    }
    assert engine_paths(["blocks.0"], [], remap=[(r"^blocks\.", "layers.")]) == {
        "blocks.0": "layers.0",
        "": "",
    }


@pytest.mark.parametrize("side", ["torch", "engine"])
@pytest.mark.parametrize("name", ["transformer_train", "cnn_digits", "lstm_gates"])
def test_capture_does_not_change_an_opted_in_case(name, side):
    """The opted-in cases record the same side text under capture as without it."""
    from harness.case import CASES_DIR, load_case

    case = load_case(CASES_DIR / f"{name}.py")
    plain = run_side(case, side)
    captured, capture = capture_side(case.side_fn(side), side, case.localise, "float32")
    assert capture.values
    assert record.side_text(name, side, captured, {}) == record.side_text(name, side, plain, {})


def test_op_capture_leaves_the_engine_and_torch_as_they_were():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    from harness.engine import methods
    from harness.localise.ops import capture_ops

    original = methods.tracked_output
    ops = capture_ops(lambda dtype: engine_side("none", dtype), "engine", SPEC, (0, "norm2", 0),
                      "float32")  # fmt: skip
    assert [o.name for o in ops][:2] == ["mean_dim", "sub"]  # burn's LayerNorm order
    assert methods.tracked_output is original

    def raising(dtype):  # the target call raises: its post-hook never runs
        model = _torch_model("none", dtype)

        def fails(x):
            raise RuntimeError("inside the target call")

        model.norm2.forward = fails
        model(torch.from_numpy(_inputs("float32")[0]))

    with pytest.raises(RuntimeError, match="inside the target call"):
        capture_ops(raising, "torch", SPEC, (0, "norm2", 0), "float32")
    assert _get_current_dispatch_mode() is None
