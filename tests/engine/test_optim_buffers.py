"""Optimizer state in preallocated buffers (issue 13): the in-place updates give the same bits as
burn's expressions evaluated one fresh array at a time (the engine's former code, written out
below), a steady step allocates about one param's worth of memory, and nothing a caller holds
(a clone of the module, a gradient handle, a record) changes under later steps."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from test_optim import engine_grads

from harness.a1 import a1_engine
from harness.engine import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    Device,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    Tensor,
    WeightDecayConfig,
)
from harness.engine.lr_scheduler import powi

F32 = np.float32


# ---- burn's expressions, one new array per operation ----------------------------------------


def _decay(tensor, grad, penalty):
    return grad if penalty is None else tensor * tensor.dtype.type(F32(penalty)) + grad


def ref_sgd(lr, tensor, grad, state, *, penalty=None, momentum=None, dampening=0.1, nesterov=False):
    dt = tensor.dtype.type
    grad = _decay(tensor, grad, penalty)
    if momentum is not None:
        mu = dt(F32(momentum))
        velocity = grad if state is None else grad * dt(1.0 - dampening) + state * mu
        grad = velocity * mu + grad if nesterov else velocity
        state = velocity
    return tensor - grad * dt(lr), state


def _moments(grad, state, b1, b2, amsgrad):
    dt = grad.dtype.type
    f1, f2 = dt(F32(1) - F32(b1)), dt(F32(1) - F32(b2))
    if state is None:
        m, v = grad * f1, np.square(grad) * f2
        return (1, m, v, v if amsgrad else None)
    t, m, v, vmax = state
    m = m * dt(F32(b1)) + grad * f1
    v = v * dt(F32(b2)) + np.square(grad) * f2
    if amsgrad:
        vmax = np.maximum(v if vmax is None else vmax, v)
    return (t + 1, m, v, vmax)


def ref_adam(lr, tensor, grad, state, *, b1=0.9, b2=0.999, eps=1e-5, amsgrad=False, penalty=None):
    """adam.rs: `(m * (sqrt(1 - b2^t) / (1 - b1^t))) / (sqrt(v) + eps * sqrt(1 - b2^t))`."""
    dt = tensor.dtype.type
    state = _moments(_decay(tensor, grad, penalty), state, b1, b2, amsgrad)
    t, m, v, vmax = state
    bc2 = np.sqrt(F32(1) - powi(F32(b2), t))
    combined = bc2 / (F32(1) - powi(F32(b1), t))
    delta = m * dt(combined) / (np.sqrt(vmax if amsgrad else v) + dt(F32(eps) * bc2))
    return tensor - delta * dt(lr), state


def ref_adamw(lr, tensor, grad, state, *, b1=0.9, b2=0.999, eps=1e-5, wd=1e-4, cautious=False,
              amsgrad=False):  # fmt: skip
    """adamw.rs: `m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps)`, decoupled decay."""
    dt = tensor.dtype.type
    state = _moments(grad, state, b1, b2, amsgrad)
    t, m, v, vmax = state
    m_hat = m / dt(F32(1) - powi(F32(b1), t))
    v_hat = (vmax if amsgrad else v) / dt(F32(1) - powi(F32(b2), t))
    delta = m_hat / (np.sqrt(v_hat) + dt(F32(eps)))
    rate = lr * float(F32(wd))
    if rate == 0.0:
        decayed = tensor
    elif cautious:
        differ = (tensor >= 0) != (m >= 0)
        decayed = tensor - np.where(differ, dt(0.0), tensor * dt(rate))
    else:
        decayed = tensor * dt(1.0 - rate)
    return decayed - delta * dt(lr), state


def ref_rmsprop(lr, tensor, grad, state, *, alpha=0.99, momentum=0.9, eps=1e-5, centered=False,
                penalty=None):  # fmt: skip
    dt = tensor.dtype.type
    keep, rest = dt(F32(alpha)), dt(F32(1) - F32(alpha))
    grad = _decay(tensor, grad, penalty)
    sa, ga, buf = (None, None, None) if state is None else state
    square = np.square(grad) * rest
    sa = square if sa is None else sa * keep + square
    avg = sa
    if centered:
        term = grad * rest
        ga = term if ga is None else ga * keep + term
        avg = sa - np.square(ga)
    grad = grad / (np.sqrt(avg) + dt(F32(eps)))
    if F32(momentum) > 0:
        buf = grad if buf is None else buf * dt(F32(momentum)) + grad
        grad = buf
    return tensor - grad * dt(lr), (sa, ga, buf)


def ref_adagrad(lr, tensor, grad, state, *, lr_decay=0.0, eps=1e-5, penalty=None):
    dt = tensor.dtype.type
    grad = _decay(tensor, grad, penalty)
    t, total = (1, np.square(grad)) if state is None else (state[0] + 1, state[1] + np.square(grad))
    clr = lr / (1.0 + (float(t) - 1.0) * lr_decay)
    return tensor - grad / (np.sqrt(total) + dt(F32(eps))) * dt(clr), (t, total)


def ref_adan(lr, tensor, grad, state, *, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, wd=0.0,
             no_prox=False):  # fmt: skip
    """adan.rs, expression by expression."""
    dt = tensor.dtype.type
    b1, b2, b3 = F32(b1), F32(b2), F32(b3)
    if state is None:
        state = (1, grad * dt(F32(1) - b1), np.square(grad) * dt(F32(1) - b3), np.zeros_like(grad),
                 grad * dt(-1.0))  # fmt: skip
    else:
        t, m, v, n, neg = state
        diff = neg + grad
        diff_sq = np.square(diff * dt(b2) + grad)
        m = m * dt(b1) + grad * dt(F32(1) - b1)
        n = n * dt(b2) + diff * dt(F32(1) - b2)
        v = v * dt(b3) + diff_sq * dt(F32(1) - b3)
        state = (t + 1, m, v, n, grad * dt(-1.0))
    t, m, v, n, _ = state
    denom = np.sqrt(v) / dt(np.sqrt(F32(1) - powi(b3, t))) + dt(F32(eps))
    update = m / dt(F32(1) - powi(b1, t)) / denom + n * dt(b2) / dt(F32(1) - powi(b2, t)) / denom
    delta = update * dt(lr)
    rate = lr * float(F32(wd))
    if no_prox:
        return (tensor - delta if rate == 0.0 else tensor * dt(1.0 - rate) - delta), state
    updated = tensor - delta
    return (updated if rate == 0.0 else updated / dt(1.0 + rate)), state


CASES = {
    "sgd_decay": (SgdConfig(weight_decay=WeightDecayConfig(0.05)), ref_sgd, dict(penalty=0.05)),
    "sgd_momentum": (
        SgdConfig(momentum=MomentumConfig(0.9, 0.1)),
        ref_sgd,
        dict(momentum=0.9, dampening=0.1),
    ),
    "sgd_nesterov_decay": (
        SgdConfig(WeightDecayConfig(0.05), MomentumConfig(0.8, 0.0, True)),
        ref_sgd,
        dict(penalty=0.05, momentum=0.8, dampening=0.0, nesterov=True),
    ),
    "adam": (AdamConfig(), ref_adam, {}),
    "adam_amsgrad_decay": (
        AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.5)),
        ref_adam,
        dict(amsgrad=True, penalty=0.5),
    ),
    "adamw": (AdamWConfig(weight_decay=0.3), ref_adamw, dict(wd=0.3)),
    "adamw_cautious_amsgrad": (
        AdamWConfig(weight_decay=0.3, cautious_weight_decay=True, amsgrad=True),
        ref_adamw,
        dict(wd=0.3, cautious=True, amsgrad=True),
    ),
    "rmsprop": (RmsPropConfig(), ref_rmsprop, {}),
    "rmsprop_centered_decay": (
        RmsPropConfig(centered=True, weight_decay=WeightDecayConfig(0.1)),
        ref_rmsprop,
        dict(centered=True, penalty=0.1),
    ),
    "rmsprop_no_momentum": (RmsPropConfig(momentum=0.0), ref_rmsprop, dict(momentum=0.0)),
    "adagrad_decay": (
        AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.05)),
        ref_adagrad,
        dict(lr_decay=0.1, penalty=0.05),
    ),
    "adan": (AdanConfig(weight_decay=0.02), ref_adan, dict(wd=0.02)),
    "adan_no_prox": (
        AdanConfig(weight_decay=0.02, no_prox=True),
        ref_adan,
        dict(wd=0.02, no_prox=True),
    ),
}


def _inputs(dtype, steps, shape=(7, 5), seed=3):
    rng = np.random.default_rng(seed)
    tensor = rng.standard_normal(shape).astype(dtype)
    tensor.flat[:2] = [0.0, -0.0]
    return tensor, [rng.standard_normal(shape).astype(dtype) for _ in range(steps)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_in_place_update_has_the_bits_of_burns_expressions(name, dtype):
    config, reference, options = CASES[name]
    optim = config.build()
    tensor, grads = _inputs(dtype, 6)
    got, state, want, ref_state = tensor, None, tensor, None
    for lr, grad in zip((0.1, 0.05, 0.05, 0.02, 0.0, 0.01), grads, strict=True):
        got, state = optim.update(lr, got, grad, state)
        want, ref_state = reference(lr, want, grad, ref_state, **options)
        assert got.dtype == dtype
        assert got.tobytes() == want.tobytes(), f"{name}: step with lr {lr}"


# ---- allocation ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_steady_step_allocates_one_param_worth(name):
    """After two warm-up steps, one update's peak traced allocation is the new value plus a
    little: about 1x the param's bytes (burn's expressions allocate 3x to 11x)."""
    optim = CASES[name][0].build()
    tensor, grads = _inputs(np.float32, 3, shape=(256, 256))
    state = None
    for grad in grads[:2]:
        tensor, state = optim.update(0.01, tensor, grad, state)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        new, state = optim.update(0.01, tensor, grads[2], state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert new is not tensor
    assert peak < 1.25 * tensor.nbytes, f"{name}: peak {peak / tensor.nbytes:.2f}x the param"


def test_burns_expressions_allocate_several_params_worth():
    """The measurement above can fail: the reference Adam allocates far more."""
    tensor, grads = _inputs(np.float32, 3, shape=(256, 256))
    state = None
    for grad in grads[:2]:
        tensor, state = ref_adam(0.01, tensor, grad, state)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        ref_adam(0.01, tensor, grads[2], state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak > 3 * tensor.nbytes


# ---- nothing the caller holds changes -----------------------------------------------------

AD = Device.flex().autodiff()


def _values(model):
    return {path: param.val().numpy().copy() for path, param in model.params()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_clones_gradients_and_records_taken_before_a_step_keep_their_values(name):
    config = CASES[name][0]
    optim = config.init()
    model, x, y = a1_engine(AD)
    model = optim.step(0.05, model, engine_grads(model, x, y))  # state exists from here on
    clone = model.clone()
    clone_values = _values(clone)
    grads = engine_grads(model, x, y)
    handles = {pid: grads.get(pid) for pid in grads.ids()}
    handle_values = {pid: t.numpy().copy() for pid, t in handles.items()}
    record = optim.to_record()
    record_arrays = {
        pid: {k: v.copy() for k, v in vars(s).items() if isinstance(v, np.ndarray)}
        for pid, s in record.items()
    }
    for _ in range(3):
        model = optim.step(0.05, model, grads)
        grads = engine_grads(model, x, y)
    for path, value in _values(clone).items():
        assert np.array_equal(value, clone_values[path]), path
    for pid, handle in handles.items():
        assert np.array_equal(handle.numpy(), handle_values[pid])
    for pid, arrays in record_arrays.items():
        for key, value in arrays.items():
            assert np.array_equal(getattr(record[pid], key), value), (pid, key)
    # and the clone still trains like the original did from that point
    assert not np.array_equal(_values(model)["fc1.weight"], clone_values["fc1.weight"])


def test_bare_step_takes_and_returns_tensors_and_leaves_the_input_alone():
    """burn's `Optimizer::step(lr, tensor, grad, state)` on engine tensors."""
    tensor = Tensor.from_floats([[1.0, -2.0], [0.5, 0.0]], Device.flex())
    grad = Tensor.from_floats([[0.1, 0.2], [-0.3, 0.4]], Device.flex())
    before = tensor.numpy().copy()
    new, state = AdamConfig().build().step(0.1, tensor, grad, None)
    assert isinstance(new, Tensor) and state.time == 1
    assert np.array_equal(tensor.numpy(), before)
    want, _ = ref_adam(0.1, before, grad.numpy(), None)
    assert new.numpy().tobytes() == want.tobytes()
