"""Every backward rule of the vision primitives (harness/engine/ops/conv.py, pool.py,
activation.py) against central finite differences in float64, on the op matrix's own inputs
(each check's first shape), for every float input; composites are covered by their
primitives' rules. The one rule that is not its forward's derivative (burn's average-pool
backward on a clipped ceil-mode window) is shown to differ."""

from __future__ import annotations

import numpy as np
import pytest

from harness.engine import Device, Tensor
from harness.engine.ops import activation as act_ops
from harness.engine.ops import conv, pool
from harness.ops.cells import compile_pair, make_inputs

AD = Device.flex().autodiff()
PLAIN = Device.flex()
CHECKS = [
    c for m in (conv, pool, act_ops) for op in vars(m).values() if hasattr(op, "checks")
    for c in op.checks
]  # fmt: skip
NOT_THE_DERIVATIVE = {"avg_pool2d[clipped]"}


def _vjp_and_fd(check):
    arrays = make_inputs(check, check.shapes[0], "random", "float64", np.random.default_rng(5))
    fn = compile_pair(check, "float64").engine
    floats = [i.name for i in check.inputs if i.kind == "float"]

    def run(values, device):
        tensors = {k: Tensor.from_numpy(v, device) for k, v in values.items()}
        return tensors, fn(**tensors)

    out_shape = run(arrays, PLAIN)[1].shape
    cot = np.cos(np.arange(int(np.prod(out_shape)))).reshape(out_shape)

    def scalar(values) -> float:
        out = run(values, PLAIN)[1].numpy()
        # A ceil-mode window without input is -inf and has no gradient: leave it out.
        return float((np.where(np.isfinite(out), out, 0.0) * cot).sum())

    tensors = {k: Tensor.from_numpy(v, AD) for k, v in arrays.items()}
    for name in floats:
        tensors[name] = tensors[name].require_grad()
    grads = (fn(**tensors) * Tensor.from_numpy(cot, AD)).sum().backward()
    for name in floats:
        x = arrays[name]
        fd = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            hi, lo = dict(arrays), dict(arrays)
            hi[name], lo[name] = x.copy(), x.copy()
            hi[name][i] += 1e-6
            lo[name][i] -= 1e-6
            fd[i] = (scalar(hi) - scalar(lo)) / 2e-6
        yield name, tensors[name].grad(grads).numpy(), fd


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
def test_rule_matches_finite_differences_in_float64(check):
    for name, vjp, fd in _vjp_and_fd(check):
        if check.name in NOT_THE_DERIVATIVE:
            assert not np.allclose(vjp, fd, atol=1e-6), name
        else:
            np.testing.assert_allclose(vjp, fd, atol=1e-6, rtol=1e-6, err_msg=name)


def test_every_vision_primitive_is_checked():
    owned = {c.op for c in CHECKS}
    assert {"conv1d", "conv2d", "conv_transpose2d", "max_pool1d", "max_pool2d"} <= owned
    assert {"avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d"} <= owned
    assert {"embedding", "erf", "gelu"} <= owned
