"""Elementwise regression losses: MSE (`mse.rs`), Huber (`huber.rs`), smooth L1
(`smooth_l1.rs`) and Lp (`lp_loss.rs`), all in `crates/burn-nn/src/loss/`.

burn read at commit 2c06be351006851d42fdb6df16b976f4a82d9747 (v0.22.0-pre.2-47).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from harness.engine.loss.functional import mean_dims
from harness.engine.loss.reduction import f32, mean_or_sum
from harness.engine.module import Config, Module
from harness.engine.tensor import Tensor

# ---- MSE ----------------------------------------------------------------------------------


class MseLoss(Module):
    """Mean squared error: `(pred - target)^2`, then mean (`Mean`, `Auto`) or sum (`Sum`).

    `BatchMean` raises (burn rejects it for MSE). PyTorch's `mse_loss` returns 0-d; this
    returns shape `[1]`.
    """

    @classmethod
    def new(cls) -> MseLoss:
        """burn's `MseLoss::new()` (the same as `MseLoss()`)."""
        return cls()

    def forward(self, logits: Tensor, targets: Tensor, reduction) -> Tensor:
        return mean_or_sum(self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The elementwise squared error, same shape as the inputs."""
        return logits.sub(targets).powi_scalar(2)


# ---- Huber --------------------------------------------------------------------------------

HUBER_DELTA = "Delta for Huber loss must be a non-negative number."


@dataclasses.dataclass(frozen=True)
class HuberLossConfig(Config):
    """burn's `HuberLossConfig::new(delta)`: `delta` (an f32, required, >= 0).

    PyTorch's `HuberLoss` defaults `delta=1.0`; burn has no default. `init()` takes no device.
    """

    delta: float

    def init(self) -> HuberLoss:
        delta = f32(self.delta)
        if not delta >= 0.0:  # also rejects NaN, as burn's `delta >= 0.` does
            raise ValueError(HUBER_DELTA)
        lin_bias = float(np.float32(delta) * np.float32(delta) * np.float32(0.5))
        return HuberLoss(delta, lin_bias)


class HuberLoss(Module):
    """Huber loss of the residuals `r = targets - predictions`: `0.5 r^2` where `|r| <= delta`,
    `delta |r| - 0.5 delta^2` elsewhere.

    burn writes the linear part `clamp(r, -delta, delta) * r - lin_bias` (`lin_bias` =
    `delta * delta * 0.5` in f32), so its gradient is `clamp(r)`, and picks it where
    `|r| > delta`. PyTorch's `huber_loss` computes `delta * (|r| - 0.5 delta)` for `|r| >= delta`:
    the same function, rounded in another order. The reduction is an argument of `forward`
    (PyTorch: `reduction="mean"` at construction); the result is `[1]`, not 0-d.
    """

    def __init__(self, delta: float, lin_bias: float) -> None:
        self.delta = delta
        self.lin_bias = lin_bias

    def forward(self, predictions: Tensor, targets: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs."""
        return self.forward_residuals(targets - predictions)

    def forward_residuals(self, residuals: Tensor) -> Tensor:
        """The elementwise loss of given residuals."""
        is_large = residuals.abs().greater_elem(self.delta)
        softsign = residuals.clamp(-self.delta, self.delta)
        outside = softsign.mul(residuals).sub_scalar(self.lin_bias)
        inside = residuals.powi_scalar(2).mul_scalar(0.5)
        return inside.mask_where(is_large, outside)


# ---- smooth L1 ----------------------------------------------------------------------------

SMOOTH_L1_BETA = "The parameter beta must be positive."


@dataclasses.dataclass(frozen=True)
class SmoothL1LossConfig(Config):
    """burn's `SmoothL1LossConfig`: `beta` (an f32, default 1.0, must be > 0).

    PyTorch accepts `beta=0` (plain L1); burn panics at `init()`. `init()` takes no device.
    """

    beta: float = 1.0

    def init(self) -> SmoothL1Loss:
        beta = f32(self.beta)
        if not beta > 0.0:
            raise ValueError(SMOOTH_L1_BETA)
        return SmoothL1Loss(beta)


class SmoothL1Loss(Module):
    """Smooth L1: `0.5 e^2 / beta` where `|e| < beta`, `|e| - 0.5 beta` elsewhere (e = pred -
    target), computed as burn does: `e.square().mul_scalar(0.5).div_scalar(beta)` and
    `|e|.sub_scalar(0.5 * beta)`.

    burn's method names differ from the other losses: `forward` is the **unreduced** loss,
    `forward_with_reduction` reduces, `forward_reduce_dims` averages over given dims (kept).
    PyTorch's `smooth_l1_loss` computes `0.5 * e * e / beta`, a different rounding order, and
    reduces by `reduction="mean"`; the reduced result here is `[1]`, not 0-d.
    """

    def __init__(self, beta: float) -> None:
        self.beta = beta

    def forward(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs (burn's `forward`)."""
        error = predictions.sub(targets)
        abs_error = error.abs()
        l1_loss = abs_error.sub_scalar(f32(np.float32(0.5) * np.float32(self.beta)))
        l2_loss = error.powi_scalar(2).mul_scalar(0.5).div_scalar(self.beta)
        return l1_loss.mask_where(abs_error.lower_elem(self.beta), l2_loss)

    def forward_with_reduction(self, predictions: Tensor, targets: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward(predictions, targets), reduction)

    def forward_reduce_dims(
        self, predictions: Tensor, targets: Tensor, dims: Sequence[int]
    ) -> Tensor:
        """The mean over `dims` (in the given order, negative dims allowed), dims kept."""
        return mean_dims(self.forward(predictions, targets), dims)


# ---- Lp -----------------------------------------------------------------------------------

LP_ORDER = "The order of the norm p must be positive."


@dataclasses.dataclass(frozen=True)
class LpLossConfig(Config):
    """burn's `LpLossConfig::new(p)`: `p` (an f64, required, > 0); `LpLossConfig.l1()` and
    `LpLossConfig.l2()` build the p = 1 and p = 2 losses directly (no check). `init()` takes
    no device.

    PyTorch has no Lp loss: p = 1 is `l1_loss`, p = 2 `mse_loss`, other p
    `(x - y).abs().pow(p).mean()`.
    """

    p: float

    def init(self) -> LpLoss:
        if not float(self.p) > 0.0:
            raise ValueError(LP_ORDER)
        return LpLoss(float(self.p))

    @staticmethod
    def l1() -> LpLoss:
        """The L1 loss (mean absolute error with `Mean`)."""
        return LpLoss(1.0)

    @staticmethod
    def l2() -> LpLoss:
        """The L2 loss (mean squared error with `Mean`)."""
        return LpLoss(2.0)


class LpLoss(Module):
    """`|pred - target|^p` elementwise (not the norm `(sum |e|^p)^(1/p)`): `abs()` for p = 1,
    `e * e` for p = 2, `abs().powf_scalar(p)` otherwise (p cast to the tensor's dtype).

    PyTorch difference: no `LpLoss` class; its `l1_loss`/`mse_loss` match p = 1 and 2. For
    p < 1 the gradient at a zero error is NaN (`p * 0^(p-1)` is inf, times `abs`'s subgradient
    0), as with PyTorch's `abs().pow(p)`.
    """

    def __init__(self, p: float) -> None:
        self.p = p

    def forward(self, predictions: Tensor, targets: Tensor, reduction) -> Tensor:
        """The reduced loss (`Mean`/`Auto` or `Sum`), shape `[1]`."""
        return mean_or_sum(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The elementwise loss, same shape as the inputs."""
        error = predictions.sub(targets)
        if self.p == 1.0:
            return error.abs()
        if self.p == 2.0:
            return error.mul(error)
        return error.abs().powf_scalar(self.p)

    def forward_reduce_dims(
        self, predictions: Tensor, targets: Tensor, dims: Sequence[int]
    ) -> Tensor:
        """The mean over `dims` (in the given order, negative dims allowed), dims kept."""
        return mean_dims(self.forward_no_reduction(predictions, targets), dims)
