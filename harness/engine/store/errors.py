"""The importer's errors: one line each, naming the file (or tensor path) and the problem.

burn-store has one error enum per layer (`PytorchError` for the reader, `PytorchStoreError` and
`SafetensorsStoreError` for the stores, `TensorSnapshotError` for lazy data); the classes keep
those names. All are `ValueError`s: bad input, never a bug in the caller's code.
"""

from __future__ import annotations

__all__ = [
    "PytorchError",
    "PytorchStoreError",
    "SafetensorsStoreError",
    "StoreError",
    "TensorSnapshotError",
]


class StoreError(ValueError):
    """Base of the importer's errors. The message is one line, control characters escaped."""

    def __init__(self, message: str) -> None:
        one_line = " ".join(str(message).split())
        super().__init__(one_line if one_line.isprintable() else ascii(one_line)[1:-1])


class PytorchError(StoreError):
    """A `.pt`/`.pth` file that cannot be read: not a checkpoint, corrupt, truncated, or a
    pickle that asks for something other than a state_dict of tensors (burn's
    `pytorch::PytorchError`)."""


class TensorSnapshotError(StoreError):
    """The data of one tensor cannot be produced (burn's `TensorSnapshotError`)."""


class _StoreRefused(StoreError):
    """A store's `apply_to` refused the load; `result` is the ApplyResult that caused it (None
    when the file itself could not be read)."""

    def __init__(self, message: str, result=None) -> None:
        super().__init__(message)
        self.result = result


class PytorchStoreError(_StoreRefused):
    """`PytorchStore.apply_to` refused the result: errors while validating, or tensors missing
    without `allow_partial(True)` (burn's `PytorchStoreError`)."""


class SafetensorsStoreError(_StoreRefused):
    """`SafetensorsStore`'s counterpart of `PytorchStoreError` (burn's
    `SafetensorsStoreError`), also raised for a file the safetensors package cannot parse."""
