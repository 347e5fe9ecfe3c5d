"""Where inside a step two runs part: module-level capture on both sides (``capture``), torch
paths matched to engine paths by weight import's rules (``paths``), the first module whose
input, output or gradient leaves rounding by the float64 reruns (``verdict``), and the first
engine op inside it no torch op explains (``ops``). A case opts in with
``harness.case.localise``; the results are ``harness.results.Localisation`` data, rendered by
``harness.report.localise``. Import from here."""

from harness.localise.capture import Capture, Captured, engine_capture, torch_capture
from harness.localise.ops import localise_ops
from harness.localise.paths import engine_paths
from harness.localise.run import capture_side, localise_sides
from harness.localise.verdict import compare, model_order

__all__ = [
    "Capture",
    "Captured",
    "capture_side",
    "compare",
    "engine_capture",
    "engine_paths",
    "localise_ops",
    "localise_sides",
    "model_order",
    "torch_capture",
]
