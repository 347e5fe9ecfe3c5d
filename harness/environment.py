"""The environment block of a side file: versions, platform, BLAS pools and thread counts, the
numerics in force (``harness.numerics``), and which of them decide the last bits of a float
result (the golden fingerprint)."""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness import numerics

# The parts of the environment that decide the exact bits of a float computation.
FINGERPRINT_KEYS = ("torch", "torch_threads", "numpy", "python", "platform", "blas", "numerics")


def probe() -> dict:
    """Versions, platform, BLAS and thread counts; deterministic, no host names or times.

    torch is imported first so that its OpenMP pool is listed whether or not the caller had
    imported torch already; thread counts are those in force (cases record them pinned).
    """
    torch_env = _torch_env()
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": f"{platform.system()}-{platform.machine()}",
        "blas": _blas(),
        **torch_env,
        "numerics": numerics.in_force(),
    }


def _torch_env() -> dict:
    try:
        import torch
    except ImportError:
        return {"torch": "not installed", "torch_threads": None}
    return {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def _blas() -> list[dict] | str:
    """threadpoolctl's view of the BLAS / OpenMP pools, without machine-specific paths."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    fields = ("user_api", "internal_api", "version", "architecture", "threading_layer")
    pools = [{k: info.get(k) for k in (*fields, "num_threads")} for info in threadpool_info()]
    return sorted(pools, key=lambda pool: json.dumps(pool, sort_keys=True, default=str))


def fingerprint(env: Mapping[str, Any]) -> dict[str, Any]:
    """The environment keys whose change may legitimately change the last bits of a result."""
    return {k: env.get(k) for k in FINGERPRINT_KEYS}


def fingerprint_change(golden_env: Mapping[str, Any], fresh_env: Mapping[str, Any]) -> str:
    """In words, how two fingerprints differ: 'written on A; this machine B' naming only the
    entries that differ ('' when none does)."""
    a, b = fingerprint(golden_env), fingerprint(fresh_env)
    keys = [k for k in FINGERPRINT_KEYS if a.get(k) != b.get(k)]
    if not keys:
        return ""
    return f"written on {_words(a, keys)}; this machine {_words(b, keys)}"


def _words(fp: Mapping[str, Any], keys: list[str]) -> str:
    return ", ".join(_entry_words(k, fp.get(k)) for k in keys)


def _entry_words(key: str, value: Any) -> str:
    if key == "numerics":
        return f"numerics {numerics.describe(value)}"
    if key == "blas" and isinstance(value, list):
        kernels = [
            " ".join(str(p) for p in (pool.get("internal_api"), pool.get("architecture")) if p)
            + f" x{pool.get('num_threads')}"
            for pool in value
            if isinstance(pool, Mapping)
        ]
        return f"blas {' / '.join(kernels) or 'none'}"
    return f"{key} {value}"
