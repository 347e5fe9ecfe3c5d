"""Engine exceptions and the message texts burn fixes (reference-engine.md sections 1-2)."""

from __future__ import annotations

# burn 0.22.1's texts, kept to the letter: cases compare them with what burn prints.
# BACKWARD_UNTRACKED is the seed spec's text (reference-engine.md section 2) for backward() on a
# plain tensor (a gradient) or an untracked leaf; burn at 2c06be35 panics there with
# REQUIRES_AUTODIFF (burn-dispatch) or NO_STEP_REGISTERED. An untracked op output does not
# raise: burn runs its no-op step (harness.engine.autodiff._untracked_backward).
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


class RuleArityError(TypeError):
    """A backward rule that does not return one gradient per input of its op: refused when it
    is registered (from its `-> tuple[Grad, ...]` annotation) and when it runs."""


def expect_input(module: str, shape, layout) -> None:
    """Raise a ShapeError naming `module` unless `shape` fits `layout`, one entry per dim: an
    int is a fixed size, a str names a free one (`["batch_size", "seq_length", 3]`). burn
    checks these through its types or panics deeper down, in an op that names no module."""
    fits = len(shape) == len(layout) and all(
        isinstance(want, str) or int(got) == want for got, want in zip(shape, layout, strict=False)
    )
    if not fits:
        expected = ", ".join(str(want) for want in layout)
        got = ", ".join(str(int(n)) for n in shape)
        raise ShapeError(f"{module}: expected an input of shape [{expected}], got shape [{got}]")
