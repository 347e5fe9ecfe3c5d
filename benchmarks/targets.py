"""The one table of performance targets, and what a benchmark run measured against them.

Every benchmark records its result here under a target's name (an unknown name is an error);
``benchmarks/conftest.py`` prints the table at the end of the run. A target's value is always
``numerator / denominator`` (medians of the same interleaved run), or the numerator alone when
there is no denominator (an absolute time or size). A missed target is printed as ``missed``
and never fails the run: the machine is shared and its load is not ours to assert on.

Bounds come from the issues that set them (``source``): 13, performance round two; 2, the
engine's step and memory targets; 3 and 7, the codec and large tensors (the two peak-memory
bounds of issue 7's "small multiple of the inputs" are the ones its benchmarks asserted); 21,
the same diff speed as on an AVX2 CPU; 26, how cost grows with work (rows starting "sweep:")
and every target on both CPUs. A row with ``bound=None`` is context for the rows around it
(printed as ``info``), not a target.

Every target is measured twice (issue 26): natively, and under ``AVX2_ENV`` in a child process
(``benchmarks/columns.py``), recorded under its name with ", AVX2" appended and printed as the
second column of the table (``benchmarks/table.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import Literal

from harness.numerics import EMULATED_CPUS


@dataclass(frozen=True)
class Target:
    name: str
    measures: str
    numerator: str
    denominator: str | None  # None: the value is the numerator itself
    bound: float | None
    direction: Literal["<=", ">="] = "<="
    unit: Literal["s", "B"] = "s"  # of the medians: seconds, or bytes for memory
    source: str = "issue 13"
    avx2_source: str = "issue 26"  # the issue that asked for its AVX2 column

    def met(self, value: float) -> bool | None:
        if self.bound is None:
            return None
        return value <= self.bound if self.direction == "<=" else value >= self.bound


def _sgd(size: str, layers: str, vs: str, bound: float | None, source: str) -> Target:
    return Target(
        f"sgd step {size} / {vs}",
        f"one SGD step (forward, backward, update), MLP {layers}, float32, 1 thread",
        "engine",
        vs,
        bound,
        source=source,
    )


def _sgd_tape(size: str, layers: str, bound: float | None) -> Target:
    """The same step, loss and gradients replayed from a recorded tape (issue 26)."""
    return Target(
        f"sgd step {size} tape / numpy",
        f"one SGD step, MLP {layers}, float32, 1 thread; loss and gradients from "
        "harness.engine.tape's recorded step",
        "tape",
        "numpy",
        bound,
        source="issue 26",
    )


# The environment of the child processes that measure the AVX2 column: the AVX2 CPU emulated
# as `make emulated-cpus` does (no AVX-512 kernels in numpy, torch, oneDNN, MKL or OpenBLAS),
# set before the child imports numpy or torch.
AVX2_ENV = dict(EMULATED_CPUS["avx2"])
AVX2 = ", AVX2"  # suffix of a target measured under AVX2_ENV
_AVX2_SETTING = " ".join(f"{k}={v}" for k, v in AVX2_ENV.items())


def avx2_twin(target: Target) -> Target:
    """The same target and bound, measured in a child process under ``AVX2_ENV``."""
    return replace(
        target,
        name=target.name + AVX2,
        measures=f"{target.measures}; in a child process as on an AVX2 CPU ({_AVX2_SETTING})",
        source=target.avx2_source,
    )


def _native_and_avx2(*native: Target) -> Iterator[Target]:
    """Each target, then its AVX2 twin."""
    for target in native:
        yield target
        yield avx2_twin(target)


TINY, MEDIUM, LARGE = "4-8-3 b4", "784-256-10 b128", "1024-4096-1024 b512"

# How cost grows with work (issue 26): the same step at three sizes, each size its own row, so
# the table shows the trend. bench_scaling.py sweeps these.
TRANSFORMER_WIDTHS = (64, 256, 512)  # d_model; batch 16, sequence 32 at every width
CNN_BATCHES = (16, 64, 256)
_TRANSFORMER = (
    "one Adam training step, 2-layer encoder d_model {}, 4 heads, d_ff 2 x d_model, batch 16, "
    "sequence 32, float32, 1 thread"
)
_CNN = "one SGD training step, bench_cnn's LeNet-style CNN, batch {} on 1x28x28, float32, 1 thread"
_PEAK = "resident-set peak above the pre-step RSS over 3 steps, fresh processes: "


def sweep_name(model: str, size: int, memory: bool = False) -> str:
    """``sweep: transformer step d64 / torch``, ``sweep: cnn peak memory b16 / torch``."""
    prefix = "d" if model == "transformer" else "b"
    return f"sweep: {model} {'peak memory' if memory else 'step'} {prefix}{size} / torch"


def _sweep() -> Iterator[Target]:
    for model, sizes, measures, bound in (
        ("transformer", TRANSFORMER_WIDTHS, _TRANSFORMER, 1.2),
        ("cnn", CNN_BATCHES, _CNN, 1.3),
    ):
        for size in sizes:
            text = measures.format(size)
            yield Target(sweep_name(model, size), text, "engine", "torch", bound, source="issue 26")
        for size in sizes:
            yield Target(
                sweep_name(model, size, memory=True),
                _PEAK + measures.format(size),
                "engine",
                "torch",
                1.5,
                unit="B",
                source="issue 26",
            )


def _issue_21(*targets: Target) -> Iterator[Target]:
    """The diff speeds, whose AVX2 column issue 21 asked for first (bench_diff times it)."""
    for target in targets:
        yield replace(target, avx2_source="issue 21")


FIRST_ROUND = "issue 2"  # the engine's first performance targets

NATIVE: tuple[Target, ...] = (
    Target(
        "adam 20 steps / torch",
        f"20 training steps with Adam from a fresh model and optimizer, MLP {MEDIUM}",
        "engine",
        "torch",
        1.0,
    ),
    _sgd("tiny", TINY, "numpy", 2.0, "issue 13"),
    _sgd("tiny", TINY, "torch", 0.5, FIRST_ROUND),
    _sgd_tape("tiny", TINY, 2.0),
    _sgd("medium", MEDIUM, "numpy", 1.05, "issue 13"),
    _sgd_tape("medium", MEDIUM, 1.05),
    _sgd("medium", MEDIUM, "torch", 0.9, FIRST_ROUND),
    _sgd("large", LARGE, "numpy", None, "context"),
    _sgd_tape("large", LARGE, None),
    _sgd("large", LARGE, "torch", 1.1, FIRST_ROUND),
    Target(
        "step peak memory large / torch",
        f"resident-set peak above the pre-step RSS over 3 SGD steps, {LARGE}, fresh processes",
        "engine",
        "torch",
        1.0,
        unit="B",
        source=FIRST_ROUND,
    ),
    Target(
        "transformer step / torch",
        "one Adam training step, 2-layer encoder d_model 32, 4 heads, d_ff 64, batch 16, "
        "sequence 32, float32, 1 thread",
        "engine",
        "torch",
        1.5,
        source="issue 15",
    ),
    Target(
        "lstm 32 steps fwd+bwd / torch",
        "LSTM forward + backward over 32 time steps, batch 16, d_input 32, d_hidden 64, "
        "float32, 1 thread",
        "engine",
        "torch",
        2.0,
        source="issue 15",
    ),
    Target(
        "gru 32 steps fwd+bwd / torch",
        "GRU forward + backward over 32 time steps, batch 16, d_input 32, d_hidden 64, "
        "float32, 1 thread",
        "engine",
        "torch",
        2.0,
        source="issue 26",
    ),
    Target(
        "cnn step b64 / torch",
        "one SGD training step (forward, backward, update), LeNet-style CNN (2 convs, 2 max "
        "pools, a Linear), batch 64 on 1x28x28, float32, 1 thread",
        "engine",
        "torch",
        1.5,
        source="issue 14",
    ),
    Target(
        "conv2d fwd+bwd / torch",
        "conv2d forward + backward (input, weight, bias), [64, 6, 14, 14] * [16, 6, 5, 5], "
        "float32, 1 thread",
        "engine",
        "torch",
        2.0,
        source="issue 14",
    ),
    Target(
        "cnn step peak memory / torch",
        "resident-set peak above the pre-step RSS over 3 CNN SGD steps (batch 64, 1x28x28), "
        "fresh processes",
        "engine",
        "torch",
        2.0,
        unit="B",
        source="issue 14",
    ),
    *_sweep(),
    *_issue_21(
        Target(
            "diff 1e7 wide: speed-up",
            "statistics of two 1e7 float32 arrays, absolute noise 1e-7 (ULP over 20+ buckets)",
            "assert_array_max_ulp",
            "diff_arrays",
            10.0,
            ">=",
        ),
        Target(
            "diff 1e7 narrow: speed-up",
            "statistics of two 1e7 float32 arrays, relative noise of about 1 ULP",
            "assert_array_max_ulp",
            "diff_arrays",
            10.0,
            ">=",
        ),
        Target(
            "diff 1e3: time per call",
            "statistics of two 1e3 float32 arrays (assert_array_max_ulp alongside as context)",
            "diff_arrays",
            None,
            25e-6,
        ),
    ),
    Target(
        "diff memmap 5e7: traced peak",
        "peak traced allocations comparing two memory-mapped 5e7 float32 .npy files",
        "diff_arrays",
        None,
        32 * 2**20,
        unit="B",
        source="issue 7",
    ),
    Target(
        "diff 5e7: peak / inputs",
        "peak traced allocations of diff_arrays on two in-memory 5e7 arrays, over their size",
        "diff_arrays peak",
        "input bytes",
        0.05,
        unit="B",
        source="issue 7",
    ),
    Target(
        "sidecar 5e7 / durable npy",
        "write + read of one 5e7 float32 tensor as a sidecar vs the same durability in NumPy",
        "sidecar write+read",
        "np.save+fsync+np.load",
        1.2,
    ),
    Target(
        "sidecar 5e7 / plain npy",
        "the same round trip vs np.save + np.load (no fsync: the page cache absorbs it)",
        "sidecar write+read",
        "np.save+np.load",
        2.0,
        source="issue 7",
    ),
    Target(
        "json 1e6 / orjson",
        "exact JSON write + read of 1e6 float32 values vs orjson's NumPy round trip",
        "record write+read",
        "orjson round trip",
        3.0,
        source="issue 3",
    ),
    Target(
        "compare.py loose json 100k keys",
        "compare.py A.json B.json on two loose JSON files of 100,000 scalar keys (1.3 MB)",
        "compare.py",
        None,
        2.0,
    ),
    Target(
        "make compare, all cases",
        "python compare.py over every case (what `make compare` runs), wall time",
        "compare.py",
        None,
        4.0,
    ),
    Target(
        "make compare, all cases, --jobs 1",
        "the same run in one process (compare.py --jobs 1), against the default (forked workers)",
        "compare.py --jobs 1",
        "compare.py",
        None,
        source="context",
    ),
    Target(
        "start-up: harness.startup, imports",
        "python -c 'import torch, torch._dynamo', the same through harness.startup",
        "imports via harness.startup",
        "imports",
        None,
        source="context",
    ),
    Target(
        "import torch + torch._dynamo",
        "python -c 'import torch, torch._dynamo': the start-up floor of a case run",
        "imports",
        None,
        None,
        source="context",
    ),
    Target(
        "one case: optimizer_trajectories --jobs 1 / split",
        "compare.py --case optimizer_trajectories with --jobs 1, against the default (its float32 "
        "runs and float64 reruns in two workers at once)",
        "optimizer_trajectories --jobs 1",
        "optimizer_trajectories",
        None,
        source="context",
    ),
    Target(
        "localise capture / torch",
        "transformer_train's torch side (20 Adam steps) with its first 2 steps under module "
        "capture (harness.localise), against the same side uncaptured",
        "captured",
        "plain",
        None,
        source="context",
    ),
    Target(
        "localise capture / engine",
        "transformer_train's engine side (20 Adam steps) with its first 2 steps under module "
        "capture (harness.localise), against the same side uncaptured",
        "captured",
        "plain",
        None,
        source="context",
    ),
    Target(
        "one case: train_step",
        "compare.py --case train_step (builds a torch.optim optimizer: imports torch._dynamo)",
        "train_step",
        None,
        None,
        source="context",
    ),
    Target(
        "one case: grad_location",
        "compare.py --case grad_location (no optimizer: torch._dynamo is never imported)",
        "grad_location",
        None,
        None,
        source="context",
    ),
)
TARGETS: tuple[Target, ...] = tuple(_native_and_avx2(*NATIVE))
BY_NAME = {t.name: t for t in TARGETS}


@dataclass
class Measurement:
    value: float
    medians: dict[str, float]  # per side, seconds (or the side's own unit)
    rounds: int
    note: str = ""


MEASURED: dict[str, Measurement] = {}
LOAD: dict[str, tuple[float, float, float]] = {}


def record(
    name: str,
    medians: dict[str, float],
    rounds: int,
    note: str = "",
    into: dict[str, Measurement] = MEASURED,
) -> Measurement:
    """Store the medians of one benchmark under its target; the value follows from the table."""
    target = BY_NAME[name]
    value = medians[target.numerator]
    if target.denominator is not None:
        value /= medians[target.denominator]
    into[name] = Measurement(value, dict(medians), rounds, note)
    return into[name]


def note_load(moment: str) -> None:
    LOAD[moment] = os.getloadavg()


def as_json(measured: dict[str, Measurement] = MEASURED, load: dict = LOAD) -> dict:
    """What a run measured, as ``--targets-json`` writes it (``from_json`` reads it back)."""
    return {
        "load": {moment: list(averages) for moment, averages in load.items()},
        "measured": {name: asdict(m) for name, m in measured.items()},
    }


def from_json(data: dict) -> tuple[dict[str, Measurement], dict[str, tuple]]:
    """(measured, load) of one run's ``as_json``; an unknown target name is an error."""
    measured = {name: Measurement(**fields) for name, fields in data["measured"].items()}
    unknown = [name for name in measured if name not in BY_NAME]
    if unknown:
        raise KeyError(f"targets not in benchmarks/targets.py: {unknown}")
    return measured, {moment: tuple(v) for moment, v in data["load"].items()}
