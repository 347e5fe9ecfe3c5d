"""burn's `Initializer` (crates/burn-core/src/module/initializer.rs, burn commit
2c06be351006851d42fdb6df16b976f4a82d9747), spelled as its enum: `Initializer.Zeros`,
`Initializer.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)`, ...

Formulas (burn's, with `fan` = fan_out if `fan_out_only` else fan_in):
- `KaimingUniform`: U(-a, a), a = sqrt(3) * gain / sqrt(fan);
- `KaimingNormal`: N(0, gain / sqrt(fan));
- `XavierUniform`: U(-a, a), a = sqrt(3) * gain * sqrt(2 / (fan_in + fan_out));
- `XavierNormal`: N(0, gain * sqrt(2 / (fan_in + fan_out)));
- `Uniform(min, max)`, `Normal(mean, std)`, `Constant(value)`, `Ones`, `Zeros`;
- `Orthogonal(gain)`: QR of a normal matrix, signs fixed by diag(R) (PyTorch's algorithm).
A Kaiming / Xavier init without the fans it needs raises burn's panic text. The modules pass
the fans as burn does (Linear: d_input / d_output; Conv: channels/groups * kernel elements).
Every variant is an `Initializer`, the one type the modules' configs hold: the vision modules
(conv, norm, embedding, PReLU) and the sequence ones (attention and the feed-forward block
default to `KAIMING_UNIFORM`, LSTM / GRU to `XAVIER_NORMAL`, through `linear`).

Values come from the engine's seeded generator (`harness.engine.seed`), never PyTorch's draws:
compare models by importing PyTorch's weights (harness.engine.store), not by seeding.

Differences from PyTorch's `torch.nn.init`:
- burn's default for Linear and Conv is `KaimingUniform(gain=1/sqrt(3))`, U(+-1/sqrt(fan_in)),
  for the weight *and the bias* (the bias with the weight's fan_in). PyTorch's layers use
  `kaiming_uniform_(a=sqrt(5))` for the weight, the same bound 1/sqrt(fan_in), and
  U(+-1/sqrt(fan_in)) for the bias: the ranges agree, the draws do not.
- `gain` is a plain factor here; PyTorch's `kaiming_*_(a=..., nonlinearity=...)` computes the
  gain from the nonlinearity (`sqrt(2)` for relu): pass `gain=math.sqrt(2)` for that.
- PyTorch computes a conv transpose's fan_in from `weight.size(1) * kernel` (out / groups
  * kernel), as burn's ConvTranspose does; burn gives ConvTranspose no fan_out, so Xavier
  inits refuse it there (PyTorch uses `weight.size(0) * kernel`).
- `nn.LSTM` / `nn.GRU` draw every weight and bias from U(-1/sqrt(hidden), 1/sqrt(hidden)), not
  from burn's Xavier normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.engine.module import Linear, Param, value_rng
from harness.engine.tensor import Tensor

__all__ = ["KAIMING_UNIFORM", "XAVIER_NORMAL", "Initializer", "linear"]

_KAIMING_FAN = "Can't use Kaiming initialization without specifying fan. Use init_with method."
_XAVIER_FAN_IN = (
    "Can't use Xavier initialization without specifying fan in. Use init_with method and "
    "provide fan_in."
)
_XAVIER_FAN_OUT = (
    "Can't use Xavier initialization without specifying fan out. Use init_with method and "
    "provide fan_out."
)


class Initializer:
    """burn's `Initializer` enum. Each variant is a subclass (`Initializer.KaimingUniform(
    gain=...)`; `Initializer.Ones` / `Initializer.Zeros` are values): `sample` draws the
    values, `init_with` makes the Param."""

    def sample(self, shape, fan_in: int | None = None, fan_out: int | None = None) -> np.ndarray:
        return np.asarray(self._draw(tuple(shape), fan_in, fan_out), dtype=np.float64)

    def init_with(self, shape, fan_in=None, fan_out=None, device=None, dtype="float32") -> Param:
        """burn's `init_with(shape, fan_in, fan_out, device)`: a new Param (fresh ParamId)."""
        values = self.sample(shape, fan_in, fan_out).astype(np.dtype(dtype))
        return Param.from_tensor(Tensor.from_numpy(values, device))

    def init(self, shape, device=None, dtype="float32") -> Param:
        """burn's `init(shape, device)`: `init_with` without fans."""
        return self.init_with(shape, None, None, device, dtype)

    def _draw(self, shape, fan_in, fan_out):
        raise NotImplementedError


def _kaiming_std(fan_out_only: bool, fan_in, fan_out) -> float:
    fan = fan_out if fan_out_only else fan_in
    if fan is None:
        raise ValueError(_KAIMING_FAN)
    return 1.0 / math.sqrt(fan)


def _xavier_std(fan_in, fan_out) -> float:
    if fan_in is None:
        raise ValueError(_XAVIER_FAN_IN)
    if fan_out is None:
        raise ValueError(_XAVIER_FAN_OUT)
    return math.sqrt(2.0 / (fan_in + fan_out))


@dataclass(frozen=True)
class Constant(Initializer):
    value: float

    def _draw(self, shape, fan_in, fan_out):
        return np.full(shape, self.value)


@dataclass(frozen=True)
class _Ones(Initializer):
    def _draw(self, shape, fan_in, fan_out):
        return np.ones(shape)

    def __repr__(self) -> str:
        return "Initializer.Ones"


@dataclass(frozen=True)
class _Zeros(Initializer):
    def _draw(self, shape, fan_in, fan_out):
        return np.zeros(shape)

    def __repr__(self) -> str:
        return "Initializer.Zeros"


@dataclass(frozen=True)
class Uniform(Initializer):
    min: float
    max: float

    def _draw(self, shape, fan_in, fan_out):
        return value_rng().uniform(self.min, self.max, shape)


@dataclass(frozen=True)
class Normal(Initializer):
    mean: float
    std: float

    def _draw(self, shape, fan_in, fan_out):
        return value_rng().normal(self.mean, self.std, shape)


@dataclass(frozen=True)
class KaimingUniform(Initializer):
    gain: float
    fan_out_only: bool = False

    def bound(self, fan_in=None, fan_out=None) -> float:
        return math.sqrt(3.0) * self.gain * _kaiming_std(self.fan_out_only, fan_in, fan_out)

    def _draw(self, shape, fan_in, fan_out):
        a = self.bound(fan_in, fan_out)
        return value_rng().uniform(-a, a, shape)


@dataclass(frozen=True)
class KaimingNormal(Initializer):
    gain: float
    fan_out_only: bool = False

    def std(self, fan_in=None, fan_out=None) -> float:
        return self.gain * _kaiming_std(self.fan_out_only, fan_in, fan_out)

    def _draw(self, shape, fan_in, fan_out):
        return value_rng().normal(0.0, self.std(fan_in, fan_out), shape)


@dataclass(frozen=True)
class XavierUniform(Initializer):
    gain: float

    def bound(self, fan_in=None, fan_out=None) -> float:
        return math.sqrt(3.0) * self.gain * _xavier_std(fan_in, fan_out)

    def _draw(self, shape, fan_in, fan_out):
        a = self.bound(fan_in, fan_out)
        return value_rng().uniform(-a, a, shape)


@dataclass(frozen=True)
class XavierNormal(Initializer):
    gain: float

    def std(self, fan_in=None, fan_out=None) -> float:
        return self.gain * _xavier_std(fan_in, fan_out)

    def _draw(self, shape, fan_in, fan_out):
        return value_rng().normal(0.0, self.std(fan_in, fan_out), shape)


@dataclass(frozen=True)
class Orthogonal(Initializer):
    gain: float

    def _draw(self, shape, fan_in, fan_out):
        if len(shape) < 2:
            raise ValueError("Expected D (in Tensor<D>) to be greater or equal 2; (D >= 2)")
        rows = shape[0]
        cols = int(np.prod(shape)) // rows
        t = value_rng().normal(0.0, 1.0, (rows, cols))
        if rows < cols:
            t = t.T
        q, r = np.linalg.qr(t)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return q.reshape(shape) * self.gain


# The variants as attributes of the enum, burn's spelling.
Initializer.Constant = Constant
Initializer.Ones = _Ones()
Initializer.Zeros = _Zeros()
Initializer.Uniform = Uniform
Initializer.Normal = Normal
Initializer.KaimingUniform = KaimingUniform
Initializer.KaimingNormal = KaimingNormal
Initializer.XavierUniform = XavierUniform
Initializer.XavierNormal = XavierNormal
Initializer.Orthogonal = Orthogonal

# The defaults burn's modules name (LinearConfig, Conv*Config: KaimingUniform; LSTM / GRU:
# XavierNormal).
KAIMING_UNIFORM = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)
XAVIER_NORMAL = XavierNormal(gain=1.0)


def linear(d_input: int, d_output: int, bias: bool, init: Initializer, device) -> Linear:
    """burn's `LinearConfig { d_input, d_output, bias, initializer }.init(device)` (row layout:
    weight `[d_input, d_output]`); the bias is drawn with the same fans, as burn does."""
    weight = init.init_with((d_input, d_output), d_input, d_output, device)
    return Linear(weight, init.init_with((d_output,), d_input, d_output, device) if bias else None)
