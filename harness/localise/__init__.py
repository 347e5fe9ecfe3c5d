"""Where inside a step two runs part: module-level capture on both sides (``capture``), torch
paths matched to engine paths by weight import's rules (``paths``), and the first module whose
output or gradient leaves rounding by the float64 reruns (``verdict``). Import from here."""

from harness.localise.capture import (
    Capture,
    Captured,
    Localise,
    engine_capture,
    localise,
    torch_capture,
)
from harness.localise.ops import OpVerdict, localise_ops
from harness.localise.paths import engine_paths
from harness.localise.run import capture_side, localise_sides
from harness.localise.verdict import Localisation, ModuleRow, compare, model_order, verdict_text

__all__ = [
    "Capture",
    "Captured",
    "Localisation",
    "Localise",
    "ModuleRow",
    "OpVerdict",
    "capture_side",
    "compare",
    "engine_capture",
    "engine_paths",
    "localise",
    "localise_ops",
    "localise_sides",
    "model_order",
    "torch_capture",
    "verdict_text",
]
