"""L-BFGS with an optional strong-Wolfe line search (burn-optim `optim/lbfgs.rs`, read at burn
commit 2c06be351006851d42fdb6df16b976f4a82d9747; burn ported it from PyTorch's
`torch/optim/lbfgs.py`).

The state is global, not per param: the params are flattened (visit order) into one vector in
their dtype; step sizes, losses and directional derivatives are f64 scalars, cast to the dtype
where they scale a vector, as burn's `mul_scalar` does.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable

import numpy as np

from harness.engine.module import Config, Module, Param, consume_map, params_of
from harness.engine.tensor import Tensor

__all__ = [
    "LBFGS",
    "LBFGSConfig",
    "LBFGSState",
    "LineSearchFn",
    "cubic_interpolate",
    "strong_wolfe",
]


class LineSearchFn(enum.Enum):
    """burn's `LineSearchFn`: `None_` (burn's `None`, a Python keyword) or `StrongWolfe`."""

    None_ = "none"
    StrongWolfe = "strong_wolfe"


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds`
    (default: the interval of the two points); the midpoint when the cubic has no minimum."""
    min_bound, max_bound = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0.0:
        return (min_bound + max_bound) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
    return min(max(min_pos, min_bound), max_bound)


def _dot(a: np.ndarray, b: np.ndarray):
    """burn's `a.dot(b)` = `a.mul(b).sum()`, in the dtype."""
    return np.add.reduce(a * b)


def _abs_max(a: np.ndarray) -> float:
    return float(np.abs(a).max()) if a.size else 0.0


def strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """burn's `strong_wolfe`: bracket, then zoom, an interval holding a step `t` along `d` that
    meets the strong Wolfe conditions. `obj_func(x, t, d) -> (loss, flat gradient)`.

    Returns `(loss, gradient, t, evaluations)`; when nothing better is found, the best bracket
    end (possibly `t = 0`, the start).
    """
    d_norm = _abs_max(d)
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = float(_dot(g_new, d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter, bracket = False, 0, None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            return f_new, g_new, t, evals
        if gtd_new >= 0.0:
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new, gtd_new]]
            break
        t_next = cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, (t + 0.01 * (t - t_prev), t * 10.0)
        )
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1
    if bracket is None:
        bracket = [[0.0, f, g, gtd], [t, f_new, g_new, gtd_new]]
    insufficient_progress = False
    low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1][0] - bracket[0][0]) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(*bracket[0][:2], bracket[0][3], *bracket[1][:2], bracket[1][3])
        b_min, b_max = min(bracket[0][0], bracket[1][0]), max(bracket[0][0], bracket[1][0])
        eps = 0.1 * (b_max - b_min)
        if min(b_max - t, t - b_min) < eps:  # close to a boundary
            if insufficient_progress or t >= b_max or t <= b_min:
                t = b_max - eps if abs(t - b_max) < abs(t - b_min) else b_min + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1
        if not (f_new <= f + c1 * t * gtd and f_new < bracket[low][1]):
            bracket[high] = [t, f_new, g_new, gtd_new]
        else:
            if abs(gtd_new) <= -c2 * gtd:
                return f_new, g_new, t, evals
            if gtd_new * (bracket[high][0] - bracket[low][0]) >= 0.0:
                bracket[high] = list(bracket[low])
            bracket[low] = [t, f_new, g_new, gtd_new]
        low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
    return bracket[low][1], bracket[low][2], bracket[low][0], evals


@dataclasses.dataclass
class LBFGSState:
    """burn's `LBFGSState`: the update history, the last direction, step, gradient and loss,
    and the global iteration count."""

    history_s: list = dataclasses.field(default_factory=list)
    history_y: list = dataclasses.field(default_factory=list)
    d: np.ndarray | None = None
    t: float | None = 1.0
    prev_flat_grad: np.ndarray | None = None
    prev_loss: float | None = None
    g_iter: int = 0

    def copy(self) -> LBFGSState:
        return dataclasses.replace(
            self, history_s=list(self.history_s), history_y=list(self.history_y)
        )


@dataclasses.dataclass(frozen=True)
class LBFGSConfig(Config):
    """burn's `LBFGSConfig`: max_iter 20, history_size 100, tolerance_grad 1e-7,
    tolerance_change 1e-9, max_eval `max_iter * 5 // 4` when None, line_search_fn none."""

    max_iter: int = 20
    history_size: int = 100
    tolerance_grad: float = 1e-7
    tolerance_change: float = 1e-9
    max_eval: int | None = None
    line_search_fn: LineSearchFn = LineSearchFn.None_

    def init(self) -> LBFGS:
        max_eval = self.max_eval if self.max_eval is not None else self.max_iter * 5 // 4
        return LBFGS(dataclasses.replace(self, max_eval=max_eval))


def _flat_params(module: Module) -> np.ndarray:
    parts = [param._value._data.ravel() for param in params_of(module)]
    return np.concatenate(parts) if parts else np.empty(0, np.float32)


def _flat_grads(module: Module, grads) -> np.ndarray:
    """The gradients of `module`'s params found in `grads`, flattened in visit order."""
    parts = [grads._grads[p.id].ravel() for p in params_of(module) if p.id in grads._grads]
    return np.concatenate(parts) if parts else np.empty(0, np.float32)


def _with_flat_params(module: Module, flat: np.ndarray) -> Module:
    """`module` with every param's value taken from `flat` (a fresh require-grad leaf)."""
    offset = 0

    def assign(param: Param) -> Param:
        nonlocal offset
        value = param._value
        size = value._data.size
        array = flat[offset : offset + size].reshape(value._data.shape)
        offset += size
        return Param(param.id, Tensor._leaf(array, value.device))

    return module.map(assign)


class LBFGS:
    """L-BFGS over all of a module's params (burn's `LBFGS`). `step(lr, module, closure)`
    calls `closure(module) -> (loss, GradientsParams)` as often as it needs and returns
    `(updated module, loss)`; the module passed in is consumed, as with the other optimizers.

    PyTorch differences (`torch.optim.LBFGS`, which burn ported): the strong-Wolfe search may
    evaluate at most `max_eval` minus the evaluations already made (PyTorch: 25 per search);
    without line search the loss is re-evaluated after the last iteration too (PyTorch skips
    it); `rho = 1 / (y.s)` is recomputed in both loops rather than cached.
    """

    def __init__(self, config: LBFGSConfig) -> None:
        self.config = config
        self.state = LBFGSState()

    def to_record(self) -> LBFGSState:
        """The global state (a copy: its vectors are never written in place)."""
        return self.state.copy()

    def load_record(self, record: LBFGSState) -> LBFGS:
        """Resume from `record`; returns this optimizer."""
        self.state = record.copy()
        return self

    def step(self, lr: float, module: Module, closure: Callable) -> tuple[Module, float]:
        config, state = self.config, self.state
        module = consume_map(module, lambda param: param)  # moved in, as in burn
        loss, grads = closure(module.clone())
        evals = 1
        flat_grad = _flat_grads(module, grads)
        x_flat = _flat_params(module)
        if _abs_max(flat_grad) <= config.tolerance_grad:
            return module, loss
        dt = flat_grad.dtype.type
        d = state.d if state.d is not None else -flat_grad
        t = state.t if state.t is not None else lr
        prev_flat_grad = state.prev_flat_grad
        for _ in range(config.max_iter):
            state.g_iter += 1
            if state.g_iter == 1:
                d = -flat_grad
                state.history_s.clear()
                state.history_y.clear()
            else:
                if prev_flat_grad is not None:
                    self._remember(flat_grad - prev_flat_grad, d * dt(t))
                d = self._direction(flat_grad)
            prev_flat_grad = flat_grad
            prev_loss = loss
            if state.g_iter == 1:
                t = min(1.0 / float(np.add.reduce(np.abs(flat_grad))), 1.0) * lr
            else:
                t = lr
            gtd = float(_dot(flat_grad, d))
            if gtd > -config.tolerance_change:
                break
            if config.line_search_fn is LineSearchFn.StrongWolfe:

                def objective(x, step, direction, base=module):
                    trial = _with_flat_params(base, x + direction * dt(step))
                    trial_loss, trial_grads = closure(trial)
                    return trial_loss, _flat_grads(base, trial_grads)

                loss, flat_grad, t, used = strong_wolfe(
                    objective, x_flat, t, d, loss, flat_grad, gtd,
                    tolerance_change=config.tolerance_change, max_ls=config.max_eval - evals,
                )  # fmt: skip
                x_flat = x_flat + d * dt(t)
                module = _with_flat_params(module, x_flat)
            else:
                x_flat = x_flat + d * dt(t)
                module = _with_flat_params(module, x_flat)
                loss, new_grads = closure(module.clone())
                flat_grad = _flat_grads(module, new_grads)
                used = 1
            evals += used
            if evals >= config.max_eval or _abs_max(flat_grad) <= config.tolerance_grad:
                break
            if _abs_max(d * dt(t)) <= config.tolerance_change:
                break
            if abs(loss - prev_loss) < config.tolerance_change:
                break
        state.d, state.t, state.prev_flat_grad, state.prev_loss = d, t, prev_flat_grad, loss
        return module, loss

    def _remember(self, y: np.ndarray, s: np.ndarray) -> None:
        """Keep `(s, y)` when `y.s > 1e-10`, dropping the oldest pair past `history_size`."""
        state = self.state
        if float(_dot(y, s)) > 1e-10:
            if len(state.history_s) >= self.config.history_size:
                state.history_s.pop(0)
                state.history_y.pop(0)
            state.history_s.append(s)
            state.history_y.append(y)

    def _direction(self, flat_grad: np.ndarray) -> np.ndarray:
        """The two-loop recursion: the L-BFGS inverse Hessian times `-flat_grad`."""
        history = list(zip(self.state.history_s, self.state.history_y, strict=True))
        q = -flat_grad
        if not history:
            return q
        one = flat_grad.dtype.type(1.0)
        alphas = [None] * len(history)
        for i in reversed(range(len(history))):
            s, y = history[i]
            alphas[i] = one / _dot(y, s) * _dot(s, q)
            q = q - y * alphas[i]
        last_s, last_y = history[-1]
        r = q * (_dot(last_y, last_s) / _dot(last_y, last_y))
        for (s, y), alpha in zip(history, alphas, strict=True):
            beta = one / _dot(y, s) * _dot(y, r)
            r = r + s * (alpha - beta)
        return r
