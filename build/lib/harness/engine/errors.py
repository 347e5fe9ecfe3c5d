"""Engine exceptions and the message texts burn fixes (reference-engine.md sections 1-2)."""

from __future__ import annotations

# burn 0.22.1's texts, kept to the letter: cases compare them with what burn prints.
BACKWARD_UNTRACKED = (
    "Tensor::backward requires a tracked autodiff tensor; call Tensor::autodiff().require_grad() "
    "on the source leaf before computing the output"
)
NO_STEP_REGISTERED = (
    "Node should have a step registered, did you forget to call `Tensor::register_grad` "
    "on the tensor where you need gradients?"
)
NON_LEAF_REQUIRE_GRAD = "Can't convert a non leaf tensor into a tracked tensor"
REQUIRES_AUTODIFF = "Requires autodiff tensor."
REPLACEMENT_NOT_INNER = "replacement gradients must use the inner backend"


class AutodiffError(RuntimeError):
    """A misuse of the autodiff API that burn reports with a panic."""


class DTypeMismatchError(TypeError):
    """Two tensors of different dtypes met in one op (burn never promotes silently)."""


class ShapeError(ValueError):
    """Shapes that an op cannot combine (matmul, broadcasting, cat, reshape...)."""


class DeviceMismatchError(ValueError):
    """A plain tensor and an autodiff tensor met in one op."""


class MissingRuleError(KeyError):
    """An op has no backward rule and is not declared non-differentiable."""

    def __str__(self) -> str:
        return str(self.args[0])
