"""Every row of reference-engine.md's table of differences is shown by a case's `differ` check.

The table is the product's promise to users porting code; a row without a case is a silent
claim. Each topic maps to the case and a glob matching the key pattern of the check that shows it.
"""

from fnmatch import fnmatchcase

import pytest

from harness.case import Differ, discover

TABLE = {
    "where gradients live": ("grad_location", "x_grad"),
    "zero_grad": ("grad_location", "x_grad"),
    "non-scalar backward": ("nonscalar_backward", "implicit.x_grad"),
    "intermediate grads": ("intermediate_grad", "has_retain_grad"),
    "second order": ("second_order", "second"),
    "second backward on one graph": ("second_backward", "second"),
    "detach": ("ops_consume", "detach.*"),
    "clone": ("ops_consume", "clone.*"),
    # Binding differs in mechanism, not outcome: both sides silently skip an unbound model.
    "optimizer binding": ("wrong_model", None),
    "step result": ("step_aliasing", "handle.fc1.weight"),
    "Linear weight": ("linear_layout", "weight_shape"),
    "CE ignore_index / pad": ("cross_entropy_variants", "pad.*"),
    "loss shape": ("cross_entropy_variants", "shape.loss"),
    "grad-norm clipping": ("grad_clipping", "norm.*"),
    "optimizer defaults": ("optimizer_trajectories", "*"),
    "scheduler": ("lr_schedulers", "*"),
}

CASES = {case.name: case for case in discover()}


@pytest.mark.parametrize("topic", sorted(TABLE))
def test_table_row_has_a_case(topic):
    name, pattern = TABLE[topic]
    case = CASES[name]
    if pattern is None:
        assert case.checks
        return
    differs = [c for c in case.checks if isinstance(c, Differ)]
    assert any(fnmatchcase(c.pattern, pattern) for c in differs), [c.pattern for c in differs]
