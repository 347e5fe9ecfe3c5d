"""Twenty Adam training steps of the medium MLP (784-256-10, batch 128), each call from a fresh
model and optimizer (so the first step's state allocation counts, as in a short run): the
engine against ``torch.optim.Adam`` with the same epsilon, interleaved in one process.

Run: ``make bench ARGS=benchmarks/bench_adam.py``. The parameters of both sides after the last
timed call must agree; the ratio goes to the targets table.
"""

from __future__ import annotations

import mlp

STEPS = 20
SIZE = "medium"


def twenty_steps(framework: str):
    def run():
        trainer = mlp.SETUPS[framework](SIZE, "adam")
        for _ in range(STEPS):
            trainer.step()
        return trainer.params()

    return run


def test_adam_twenty_steps(interleaved):
    mlp.pin_threads()
    timings = interleaved(
        "adam 20 steps / torch", {fw: twenty_steps(fw) for fw in ("engine", "torch")}
    )
    mlp.assert_agree(timings.results, **mlp.AGREE)
