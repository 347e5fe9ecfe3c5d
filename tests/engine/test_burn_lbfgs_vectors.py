"""burn-optim's L-BFGS tests, transcribed from the `#[cfg(test)]` module of
`crates/burn-optim/src/optim/lbfgs.rs` at burn commit 2c06be351006851d42fdb6df16b976f4a82d9747
(test name in each docstring), at burn's tolerances, and re-derived with `torch.optim.LBFGS`
(which burn ported) on the same float32 problem.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.optim import lbfgs as torch_lbfgs

from harness.engine import (
    Device,
    GradientsParams,
    LBFGSConfig,
    Linear,
    LineSearchFn,
    Param,
    Tensor,
    load_optimizer_bytes,
    optimizer_bytes,
)
from harness.engine.loss import MseLoss, Reduction
from harness.engine.optim.lbfgs import cubic_interpolate, strong_wolfe

AD = Device.flex().autodiff()
F32 = np.float32


@pytest.mark.parametrize(
    ("args", "bounds", "expected"),
    [
        ((-1.0, 1.0, -2.0, 1.0, 1.0, 2.0), None, 0.0),
        ((0.0, 0.25, -1.0, 1.0, 0.25, 1.0), (0.6, 1.0), 0.6),
        ((0.0, 0.0, 10.0, 1.0, 5.0, 10.0), (0.0, 1.0), 0.5),
        ((0.0, 1.0, -5.0, 1.0, 0.5, 1.0), None, 0.4606553370833684),
        (
            (
                1.231232145,
                -0.12567458754,
                9.1231243007,
                8.239105015,
                -100.9012398021,
                123201321.0293982,
            ),
            None,
            5.9031480234724434,
        ),
        (
            (
                1.231232145,
                -0.12567458754,
                9.1231243007,
                8.239105015,
                -100.9012398021,
                123201321.0293982,
            ),
            (-4.4, 4.4),
            4.4000000000000004,
        ),
    ],
    ids=[
        "basic",
        "bound",
        "no_minimum_midpoint",
        "asymmetric",
        "not_good_value_1",
        "not_good_value_2",
    ],
)
def test_cubic_interpolate(args, bounds, expected):
    """lbfgs.rs `test_cubic_interpolate`, tolerance 1e-8; torch's `_cubic_interpolate` agrees."""
    assert abs(cubic_interpolate(*args, bounds) - expected) < 1e-8
    as_tensors = [torch.tensor(a, dtype=torch.float64) for a in args]  # torch's takes tensors
    assert abs(float(torch_lbfgs._cubic_interpolate(*as_tensors, bounds)) - expected) < 1e-8


def _quartic(x_base, t, d):
    """`f(x) = x^4 - 2 x^2 + x` at `x_base + t d`, in float32 like burn's test."""
    x = x_base + d * F32(t)
    x2 = x * x
    f = x2 * x2 - x2 * F32(2.0) + x
    g = (x2 * x) * F32(4.0) - x * F32(4.0) + np.ones_like(x)
    return float(np.add.reduce(f)), g


def test_strong_wolfe_direct_comparison():
    """lbfgs.rs `test_strong_wolfe_direct_comparison`, tolerance 1e-6: no step along d improves,
    so the search returns the start (t = 0) after 11 evaluations; torch's `_strong_wolfe` on the
    same float32 function ends at the same place."""
    x, d = np.array([2.1321912957], F32), np.array([0.91312321], F32)
    f_init, g_init = _quartic(x, 0.0, d)
    gtd_init = float(np.add.reduce(g_init * d))
    assert abs(f_init - 13.7080059052) < 1e-6 and abs(gtd_init - 28.5305728912) < 1e-6
    f, g, t, evals = strong_wolfe(_quartic, x, 1.213132, d, f_init, g_init, gtd_init, 1e-4, 0.9,
                                  1e-9, 10)  # fmt: skip
    assert abs(f - 13.708005905151367) < 1e-6
    assert abs(float(g[0]) - 31.2450428009) < 1e-6
    assert abs(t - 0.0) < 1e-6 and evals == 11

    def torch_obj(x_, t_, d_):
        f_, g_ = _quartic(x_.numpy(), t_, d_.numpy())
        return f_, torch.from_numpy(g_)

    tf, tg, tt, tevals = torch_lbfgs._strong_wolfe(
        torch_obj, torch.from_numpy(x), 1.213132, torch.from_numpy(d), f_init,
        torch.from_numpy(g_init), gtd_init, max_ls=10,
    )  # fmt: skip
    assert (tf, float(tg[0]), tt, tevals) == (f, float(g[0]), t, evals)


X_DATA, Y_TRUE = [[1.0], [2.0], [3.0]], [[3.0], [5.0], [7.0]]


def _closure(model):
    loss = MseLoss().forward(
        model.forward(Tensor.from_floats(X_DATA, AD)),
        Tensor.from_floats(Y_TRUE, AD),
        Reduction.Sum,
    )
    return float(loss.into_scalar()), GradientsParams.from_grads(loss.backward(), model)


def _layer():
    """burn's `given_linear_layer([[0.5]], [0.1])` (float64 data, stored as float32)."""
    return Linear(
        weight=Param.from_tensor(Tensor.from_floats([[0.5]], AD)),
        bias=Param.from_tensor(Tensor.from_floats([0.1], AD)),
    )


def _torch_lbfgs(line_search_fn):
    w = torch.tensor([[0.5]], requires_grad=True)
    b = torch.tensor([0.1], requires_grad=True)
    optim = torch.optim.LBFGS([w, b], lr=0.001, line_search_fn=line_search_fn)
    x, y = torch.tensor(X_DATA), torch.tensor(Y_TRUE)

    def closure():
        optim.zero_grad()
        loss = ((x @ w + b - y) ** 2).sum()
        loss.backward()
        return loss

    optim.step(closure)
    return float(closure().detach()), float(w.detach()), float(b.detach())


@pytest.mark.parametrize(
    ("line_search_fn", "torch_name", "loss", "weight", "bias"),
    [
        (LineSearchFn.StrongWolfe, "strong_wolfe", 0.0234732367, 2.0570652485, 0.8106800914),
        (LineSearchFn.None_, None, 48.2181930542, 0.5302446192, 0.1142520783),
    ],
    ids=["test_lbfgs_strong_wolfe_comparison", "test_lbfgs_no_strong_wolfe_comparison"],
)
def test_lbfgs_comparison(line_search_fn, torch_name, loss, weight, bias):
    """lbfgs.rs `test_lbfgs_strong_wolfe_comparison` / `test_lbfgs_no_strong_wolfe_comparison`,
    tolerance 1e-5, on the engine and with torch.optim.LBFGS."""
    assert abs(_closure(_layer())[0] - 50.1300048828) < 1e-5
    optim = LBFGSConfig().with_line_search_fn(line_search_fn).init()
    model, final_loss = optim.step(0.001, _layer(), _closure)
    got = (
        final_loss,
        float(model.weight.val().into_scalar()),
        float(model.bias.val().into_scalar()),
    )
    want = _torch_lbfgs(torch_name)
    for value in (got, want):
        assert abs(value[0] - loss) < 1e-5
        assert abs(value[1] - weight) < 1e-5 and abs(value[2] - bias) < 1e-5


def test_lbfgs_burnpack_round_trip():
    """lbfgs.rs `test_lbfgs_burnpack_round_trip`: after one strong-Wolfe step, a new optimizer
    loaded from the state's burnpack bytes (`into_bytes` / `from_bytes`) takes a further step
    to the same loss (burn: 1e-6; here exactly)."""
    config = LBFGSConfig().with_line_search_fn(LineSearchFn.StrongWolfe)
    optim = config.init()
    model, _ = optim.step(0.001, _layer(), _closure)
    assert optim.to_record().history_s  # the round trip carries a history
    reloaded = load_optimizer_bytes(config.init(), optimizer_bytes(optim))
    _, loss_original = optim.step(0.001, model.clone(), _closure)
    _, loss_reloaded = reloaded.step(0.001, model, _closure)
    assert loss_original == loss_reloaded
    assert optim.to_record().g_iter == reloaded.to_record().g_iter > 0


def test_lbfgs_defaults_are_burns():
    """lbfgs.rs `LBFGSConfig` defaults; `init()` fills max_eval with max_iter * 5 / 4."""
    config = LBFGSConfig()
    assert (config.max_iter, config.history_size, config.max_eval) == (20, 100, None)
    assert (config.tolerance_grad, config.tolerance_change) == (1e-7, 1e-9)
    assert config.line_search_fn is LineSearchFn.None_
    assert config.init().config.max_eval == 25
