"""harness.engine.tape: a recorded step replays bit for bit what the eager step computes, and
falls back to the eager path whenever the shape, dtype, requires-grad set or control flow
changes. Every comparison is against the eager engine run side by side (the eager engine is
itself checked against torch and burn's vectors elsewhere); equality is bit for bit
(`np.array_equal` on the arrays and their dtypes)."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from harness.engine import (
    AdamConfig,
    AutodiffError,
    CrossEntropyLossConfig,
    Device,
    DropoutConfig,
    GradientsParams,
    SgdConfig,
    Tensor,
    recorded,
    seed,
)
from harness.engine.module import Linear, Module, Param, Relu
from harness.engine.ops.base import PRIMITIVES

AD = Device.flex().autodiff()


class Mlp(Module):
    def __init__(self, fc1, fc2, dropout=None) -> None:
        self.fc1 = fc1
        self.relu = Relu()
        self.fc2 = fc2
        self.dropout = dropout

    def forward(self, x):
        h = self.relu.forward(self.fc1.forward(x))
        if self.dropout is not None:
            h = self.dropout.forward(h)
        return self.fc2.forward(h)


def make_mlp(d_in=4, hidden=8, classes=3, dtype=np.float32, seed_=0, dropout=None) -> Mlp:
    rng = np.random.default_rng(seed_)

    def param(*shape):
        return Param.from_tensor(Tensor.from_numpy(rng.standard_normal(shape).astype(dtype), AD))

    return Mlp(
        Linear(param(d_in, hidden), param(hidden)),
        Linear(param(hidden, classes), param(classes)),
        dropout,
    )


def batch(n=4, d_in=4, classes=3, dtype=np.float32, seed_=1):
    rng = np.random.default_rng(seed_)
    x = Tensor.from_numpy(rng.standard_normal((n, d_in)).astype(dtype), AD)
    y = Tensor.from_numpy(rng.integers(0, classes, n), AD)
    return x, y


CE = CrossEntropyLossConfig().init(AD)


def mlp_loss(model, x, y):
    return CE.forward(model.forward(x), y)


def eager(fn):
    def step(*args):
        loss = fn(*args)
        return loss, loss.backward()

    return step


def train(step, model, batches, optim=None, lr=0.05):
    """Losses, per-step gradients (by param path) and final params of a short training run."""
    optim = optim or SgdConfig().init()
    losses, grads_seen = [], []
    for x, y in batches:
        loss, grads = step(model, x, y)
        losses.append(loss.numpy().copy())
        params = GradientsParams.from_grads(grads, model)
        grads_seen.append({path: params.get(p.id).numpy().copy() for path, p in model.params()})
        model = optim.step(lr, model, params)
    return losses, grads_seen, {path: p.val().numpy().copy() for path, p in model.params()}


def assert_same_bits(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same_bits(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b, strict=True):
            assert_same_bits(u, v)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True), (a, b)


def batches(k=6, **kw):
    return [batch(seed_=i, **kw) for i in range(k)]


@pytest.mark.parametrize("optim", [SgdConfig, AdamConfig])
def test_replayed_training_is_bit_identical_to_eager(optim):
    data = batches(8)
    step = recorded(mlp_loss)
    want = train(eager(mlp_loss), make_mlp(), data, optim().init())
    got = train(step, make_mlp(), data, optim().init())
    assert_same_bits(got, want)
    assert step.replayed_keys == 1 and step.eager_keys == 0  # replayed from the third call


def test_shared_intermediates_and_a_reused_weight_sum_their_gradients_in_eager_order():
    """An intermediate with four contributions and a weight used twice: the replay sums them
    in the walk's order (float32 sums of three or more terms depend on it; visiting a step's
    parents in reverse fails this test and six others)."""

    def loss_fn(model, x, y):
        h = model.fc1.forward(x)
        mixed = h.mul(h).add(h.tanh()).sub(h.mul_scalar(0.5))
        return CE.forward(model.fc2.forward(mixed.relu()), y).add(
            model.fc1.weight.val().sum().mul_scalar(1e-3)
        )

    data = batches(6)
    want = train(eager(loss_fn), make_mlp(), data)
    step = recorded(loss_fn)
    got = train(step, make_mlp(), data)
    assert_same_bits(got, want)
    assert step.replayed_keys == 1


def test_a_replay_runs_no_tensor_method_and_builds_no_node(monkeypatch):
    """What makes it faster: a replayed call goes straight to the kernels."""
    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    for _ in range(2):
        step(model, x, y)
    calls = []
    monkeypatch.setattr("harness.engine.methods.tracked_output", lambda *a: calls.append(a) or None)
    _, grads = step(model, x, y)
    assert calls == [] and len(grads) == 4


def test_the_loss_is_consumed_as_after_an_eager_backward():
    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    for _ in range(3):
        loss, _ = step(model, x, y)
        with pytest.raises(AutodiffError) as replayed:
            loss.backward()
    eager_loss = mlp_loss(model, x, y)
    eager_loss.backward()
    with pytest.raises(AutodiffError) as expected:
        eager_loss.backward()
    assert str(replayed.value) == str(expected.value)
    assert loss.is_autodiff() and not loss.is_require_grad()


def test_gradients_are_a_fresh_container_keyed_as_eager():
    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    containers = [step(model, x, y)[1] for _ in range(4)]
    assert len({id(c) for c in containers}) == 4
    want = eager(mlp_loss)(model, x, y)[1]
    for grads in containers:
        assert list(grads._grads) == list(want._grads)  # same leaves, same order
        assert_same_bits(
            [grads._grads[k] for k in grads._grads], [want._grads[k] for k in want._grads]
        )
    taken = containers[-1]
    model.fc1.weight.grad_remove(taken)
    assert model.fc1.weight.grad(containers[-2]) is not None  # containers share nothing


@pytest.mark.parametrize(
    "change",
    ["batch size", "width", "dtype", "requires grad", "python argument", "alias"],
)
def test_a_changed_key_never_replays_another_tape(change):
    """Each change is a new key: it is recorded (twice) before it replays, and every call, of
    either key, gives the eager bits."""

    def loss_fn(model, x, y, scale=1.0):
        loss = CE.forward(model.forward(x), y)
        return loss.mul_scalar(scale) if scale != 1.0 else loss

    base = (make_mlp(), *batch())
    if change == "batch size":
        other = (make_mlp(), *batch(n=7))
    elif change == "width":
        other = (make_mlp(hidden=5), *batch())
    elif change == "dtype":
        other = (make_mlp(dtype=np.float64), *batch(dtype=np.float64))
    elif change == "requires grad":
        frozen = make_mlp()
        w = frozen.fc1.weight
        frozen.fc1.weight = Param.initialized(w.id, w.val().set_require_grad(False))
        other = (frozen, *batch())
    elif change == "python argument":
        other = (*base, 2.0)
    else:  # the same tensor as input and as a weight-shaped argument: another graph
        model = make_mlp(d_in=3, hidden=3, classes=3)
        x = model.fc2.weight.val()
        other = (model, x, batch(n=3)[1])
    step = recorded(loss_fn)
    reference = eager(loss_fn)
    for args in (base, base, base, other, other, other, base):
        got_loss, got = step(*args)
        want_loss, want = reference(*args)
        assert_same_bits(got_loss.numpy(), want_loss.numpy())
        assert list(got._grads) == list(want._grads)
        assert_same_bits(list(got._grads.values()), list(want._grads.values()))
    assert step.replayed_keys == 2


def test_a_value_read_keeps_the_key_eager():
    """Control flow on a value: `into_scalar` while recording, so the tape is refused."""

    def loss_fn(model, x, y):
        loss = CE.forward(model.forward(x), y)
        return loss.mul_scalar(2.0) if loss.into_scalar() > 1.0 else loss

    step = recorded(loss_fn)
    model = make_mlp()
    for x, y in batches(6):
        got = step(model, x, y)[0].numpy()
        assert_same_bits(got, loss_fn(model, x, y).numpy())
    assert step.replayed_keys == 0 and step.eager_keys == 1
    assert "value was read" in next(iter(step.reasons.values()))


def test_control_flow_on_outside_state_that_changes_between_records_stays_eager():
    flag = {"double": False}

    def loss_fn(model, x, y):
        flag["double"] = not flag["double"]  # another op sequence on every call
        loss = CE.forward(model.forward(x), y)
        return loss.mul_scalar(2.0) if flag["double"] else loss

    step = recorded(loss_fn)
    model, (x, y) = make_mlp(), batch()
    values = [step(model, x, y)[0].numpy().copy() for _ in range(4)]
    assert step.replayed_keys == 0 and step.eager_keys == 1
    assert values[0] == 2 * values[1] and values[2] == values[0]


def test_dropout_draws_a_fresh_mask_at_every_call_so_its_key_stays_eager():
    model = make_mlp(dropout=DropoutConfig(0.5).init())
    step = recorded(mlp_loss)
    x, y = batch()
    seed(7)
    got = [step(model, x, y)[0].numpy().copy() for _ in range(4)]
    seed(7)
    want = [eager(mlp_loss)(model, x, y)[0].numpy().copy() for _ in range(4)]
    assert_same_bits(got, want)
    assert len({float(v[0]) for v in want}) > 1  # the masks differ from call to call
    assert step.replayed_keys == 0 and step.eager_keys == 1


def test_a_captured_tensor_is_a_constant_of_the_tape_and_a_captured_leaf_gets_its_gradient():
    bias = Tensor.from_numpy(np.full(3, 0.25, np.float32), AD).require_grad()
    scale = Tensor.from_numpy(np.full(3, 3.0, np.float32), AD)

    def loss_fn(model, x, y):
        return CE.forward(model.forward(x).add(bias).mul(scale), y)

    step = recorded(loss_fn)
    model = make_mlp()
    for x, y in batches(4):
        got_loss, got = step(model, x, y)
        want_loss, want = eager(loss_fn)(model, x, y)
        assert_same_bits(got_loss.numpy(), want_loss.numpy())
        assert_same_bits(bias.grad(got).numpy(), bias.grad(want).numpy())
    assert step.replayed_keys == 1


def test_kernel_errors_are_the_eager_errors():
    """A label out of range fails in the gather kernel on replay as it does eagerly."""
    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    for _ in range(3):
        step(model, x, y)
    bad = Tensor.from_numpy(np.array([0, 1, 9, 2]), AD)
    with pytest.raises(Exception) as replayed:
        step(model, x, bad)
    with pytest.raises(Exception) as expected:
        mlp_loss(model, x, bad)
    assert type(replayed.value) is type(expected.value)
    assert str(replayed.value) == str(expected.value)


def test_a_replaced_rule_applies_to_replays_as_to_new_graphs(monkeypatch):
    """The rule is read at each replay, as tracked_output reads `op.backward` per graph
    (harness.opmatrix.inject replaces rules)."""
    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    for _ in range(3):
        step(model, x, y)
    op = PRIMITIVES["neg"]
    original = op.backward

    @functools.wraps(original)  # as a tracing wrapper would: it copies the dispatcher's dict
    def zeroed(saved, g, tracked):
        return (original(saved, g, tracked)[0] * 0,)

    monkeypatch.setattr(op, "backward", zeroed)
    _, grads = step(model, x, y)
    assert not np.any(model.fc1.weight.grad(grads).numpy())
    want = eager(mlp_loss)(model, x, y)[1]
    assert not np.any(model.fc1.weight.grad(want).numpy())


def test_a_root_that_is_no_op_output_and_an_intermediate_argument_run_eagerly():
    leaf = Tensor.from_numpy(np.ones(3, np.float32), AD).require_grad()
    identity = recorded(lambda t: t)
    for _ in range(3):
        _, grads = identity(leaf)
        assert_same_bits(leaf.grad(grads).numpy(), np.ones(3, np.float32))
    assert identity.eager_keys == 1
    inner = recorded(lambda t: t.sum())
    for _ in range(3):
        mid = leaf.mul_scalar(2.0)
        _, grads = inner(mid)
        assert_same_bits(leaf.grad(grads).numpy(), np.full(3, 2.0, np.float32))
    assert inner.eager_keys == 1 and inner.replayed_keys == 0


def test_recording_restores_every_swapped_forward_and_method():
    before = {name: op.forward for name, op in PRIMITIVES.items()}
    reads = {name: Tensor.__dict__[name] for name in ("numpy", "tolist", "into_scalar")}

    def failing(model, x, y):
        mlp_loss(model, x, y)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        recorded(failing)(make_mlp(), *batch())
    assert {name: op.forward for name, op in PRIMITIVES.items()} == before
    assert {name: Tensor.__dict__[name] for name in reads} == reads


def test_a_call_inside_a_recording_runs_eagerly():
    """The inner step neither records nor replays while the outer one records (its kernels
    are the outer tape's), and the outer step replays both."""
    inner = recorded(mlp_loss)

    def outer(model, x, y):
        loss, _ = inner(model, x, y)
        return CE.forward(model.forward(x), y).add(loss.detach())

    def reference(model, x, y):
        return CE.forward(model.forward(x), y).add(mlp_loss(model, x, y).detach())

    step = recorded(outer)
    model, (x, y) = make_mlp(), batch()
    want = eager(reference)(model, x, y)[0].numpy()
    for _ in range(4):
        got, _ = step(model, x, y)
        assert_same_bits(got.numpy(), want)
    assert step.replayed_keys == 1 and inner.replayed_keys == 0 and inner.eager_keys == 0


def test_a_capture_of_module_calls_sees_every_call_of_a_recorded_step():
    """harness.localise's engine capture wraps module forwards, which a replay would skip."""
    from harness.case import localise
    from harness.localise.capture import engine_capture

    step = recorded(mlp_loss)
    model, (x, y) = make_mlp(), batch()
    for _ in range(3):
        step(model, x, y)
    with engine_capture(localise()) as capture:
        step(model, x, y)
    assert any("fc1" in str(key) for key in capture.values), list(capture.values)[:5]


def test_keys_past_the_bound_run_eagerly_and_keep_no_tape():
    step = recorded(mlp_loss, max_keys=2)
    model = make_mlp()
    for n in (2, 3, 5, 7):
        for _ in range(3):
            x, y = batch(n=n)
            got, _ = step(model, x, y)
            assert_same_bits(got.numpy(), mlp_loss(model, x, y).numpy())
    assert step.replayed_keys == 2 and len(step._tapes) == 2
    with pytest.raises(ValueError, match="max_keys must be at least 0"):
        recorded(mlp_loss, max_keys=-1)


def test_a_replay_keeps_the_errstate_a_module_set_around_an_op():
    """A module that silences a warning around one op (Dropout's prob 1 does: 0 * inf) keeps
    it silent on replay, and the caller's own setting applies to the rest, as eagerly."""

    def loss_fn(model, x, y):
        logits = model.forward(x)
        with np.errstate(over="ignore"):
            huge = logits.mul_scalar(1e38).mul_scalar(1e38)  # overflows to inf, silently
        return CE.forward(logits, y).add(huge.clamp(-1.0, 1.0).mean().mul_scalar(1e-3))

    step = recorded(loss_fn)
    model, (x, y) = make_mlp(), batch()
    for _ in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got, _ = step(model, x, y)
    assert step.replayed_keys == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same_bits(got.numpy(), loss_fn(model, x, y).numpy())


class SmallCnn(Module):
    def __init__(self) -> None:
        from harness.engine import Conv2dConfig, LinearConfig, MaxPool2dConfig, PaddingConfig2d

        self.conv = Conv2dConfig((1, 3), (3, 3), padding=PaddingConfig2d.Explicit(1, 1, 1, 1))
        self.conv = self.conv.init(AD)
        self.pool = MaxPool2dConfig((2, 2)).init()
        self.fc = LinearConfig(3 * 4 * 4, 3).init(AD)

    def forward(self, x):
        x = self.pool(self.conv(x).relu())
        return self.fc(x.reshape([x.shape[0], -1]))


class SmallEncoder(Module):
    def __init__(self) -> None:
        from harness.engine import LinearConfig, TransformerEncoderConfig

        self.encoder = TransformerEncoderConfig(8, 16, 2, 1, dropout=0.0).init(AD)
        self.head = LinearConfig(8, 3).init(AD)

    def forward(self, x):
        from harness.engine import TransformerEncoderInput

        return self.head(self.encoder(TransformerEncoderInput.new(x))).reshape([-1, 3])


@pytest.mark.parametrize(
    ("make", "shape", "n_labels"),
    [(SmallCnn, (4, 1, 8, 8), 4), (SmallEncoder, (2, 5, 8), 10)],
    ids=["conv-pool-linear", "transformer-encoder"],
)
def test_a_cnn_and_a_transformer_replay_bit_for_bit(make, shape, n_labels):
    """Beyond the MLP: convolution (with its kept im2col columns), pooling with indices,
    attention, layer norm; Adam, so every gradient reaches an update."""
    seed(3)
    model = make()
    rng = np.random.default_rng(5)
    data = [
        (
            Tensor.from_numpy(rng.standard_normal(shape).astype(np.float32), AD),
            Tensor.from_numpy(rng.integers(0, 3, n_labels), AD),
        )
        for _ in range(5)
    ]
    step = recorded(mlp_loss)
    want = train(eager(mlp_loss), model.clone(), data, AdamConfig().init(), lr=1e-2)
    got = train(step, model.clone(), data, AdamConfig().init(), lr=1e-2)
    assert_same_bits(got, want)
    assert step.replayed_keys == 1, step.reasons
