"""The float dtypes of side files, goldens and diffs, bfloat16 among them.

NumPy has no bfloat16; ``ml_dtypes`` (pinned in pyproject.toml) registers one whose
``dtype.name`` is ``"bfloat16"`` but whose ``kind`` is ``"V"`` and whose ``.npy`` header is
an anonymous ``<V2`` that reads back as raw bytes. So the harness asks this module, not
``dtype.kind``, whether a dtype is a float, and stores a bfloat16 sidecar as its uint16 bit
patterns (:func:`storage_dtype`), with the record naming the dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_BY_NAME = {"bfloat16": BFLOAT16}


def numpy_dtype(name: str) -> np.dtype:
    """The dtype a record's ``"dtype"`` names (``np.dtype`` does not know ``"bfloat16"``)."""
    found = _BY_NAME.get(name)
    return np.dtype(name) if found is None else found


def is_float(dtype: np.dtype) -> bool:
    """Whether arrays of ``dtype`` hold real floats (float16/32/64 or bfloat16)."""
    return dtype.kind == "f" or dtype == BFLOAT16


def storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a ``.npy`` file stores ``dtype`` as: uint16 bit patterns for bfloat16."""
    return np.dtype(np.uint16) if dtype == BFLOAT16 else dtype


def smallest_normal(dtype: np.dtype) -> float:
    """``finfo(dtype).tiny``; NumPy's finfo refuses bfloat16, ml_dtypes' knows every float."""
    return float(ml_dtypes.finfo(dtype).tiny)
