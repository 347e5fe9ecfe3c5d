"""One BLAS thread for every benchmark module; the engine's time and memory ratios after the
train-step benchmarks."""

from __future__ import annotations

import os

# Before any benchmark module imports torch or starts a child process.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest
from threadpoolctl import threadpool_limits

TARGETS = {"tiny": 0.5, "medium": 0.9, "large": 1.1}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Pin BLAS to one thread, so the numbers do not depend on the machine's cores or load."""
    with threadpool_limits(limits=1):
        yield


def pytest_terminal_summary(terminalreporter):
    import sys

    # Only when the train-step benchmark ran in this session (never import it here).
    module = next(
        (m for name, m in sys.modules.items() if name.rpartition(".")[2] == "bench_train_step"),
        None,
    )
    if module is None:
        return
    memory, results, sizes = module.MEMORY, module.RESULTS, module.SIZES
    write = terminalreporter.write_line
    if results:
        write("")
        write("train step, median per step (1 thread):")
        write(
            f"{'size':8} {'engine':>10} {'torch':>10} {'numpy':>10} {'eng/torch':>10} "
            f"{'target':>7} {'eng/numpy':>10}"
        )
        for size in sizes:
            times = {fw: results.get((size, fw)) for fw in ("engine", "torch", "numpy")}
            if None in times.values():
                continue
            vs_torch = times["engine"] / times["torch"]
            vs_numpy = times["engine"] / times["numpy"]
            flag = "ok" if vs_torch <= TARGETS[size] else "MISS"
            write(
                f"{size:8} {_us(times['engine']):>10} {_us(times['torch']):>10} "
                f"{_us(times['numpy']):>10} {vs_torch:>10.2f} {TARGETS[size]:>5.1f} {flag:>3}"
                f" {vs_numpy:>8.2f}"
            )
    if memory:
        write("")
        write("large size, peak memory during steps above the pre-step RSS (fresh processes):")
        for framework, rec in memory.items():
            write(
                f"  {framework:8} step peak {rec['step_peak_kib'] / 1024:8.1f} MiB"
                f"   (baseline {rec['baseline_kib'] / 1024:.1f} MiB, "
                f"VmHWM {rec['peak_kib'] / 1024:.1f} MiB)"
            )
        if "engine" in memory and "torch" in memory:
            ratio = memory["engine"]["step_peak_kib"] / memory["torch"]["step_peak_kib"]
            write(f"  engine/torch step peak ratio: {ratio:.2f} (target <= 1.0)")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f}us" if seconds < 1e-2 else f"{seconds * 1e3:.1f}ms"
