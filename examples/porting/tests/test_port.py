"""The port checked inside an ordinary test with ``assert_conforms``: engine against PyTorch."""

import numpy as np
import pytest
import torch
from porting_model import INPUTS, WEIGHT, engine_model, torch_model

from harness.engine import Device, Tensor
from harness.testing import assert_conforms


def forward_both():
    device = Device.flex().autodiff()
    engine_out = engine_model(device).forward(Tensor.from_numpy(INPUTS, device))
    torch_out = torch_model()(torch.from_numpy(INPUTS))
    return engine_out, torch_out


def test_forward_conforms():
    engine_out, torch_out = forward_both()
    diff = assert_conforms({"out": engine_out}, {"out": torch_out}, labels=("engine", "torch"))
    assert [row.key for row in diff.rows] == ["out"]


def test_a_wrong_port_is_caught_with_the_element_that_differs():
    """Forgetting that nn.Linear stores the transpose: the weight is used as [d_out, d_in]."""
    x = torch.from_numpy(INPUTS)
    wrong = x @ torch.from_numpy(WEIGHT.reshape(2, 3).T.copy())
    right = x @ torch.from_numpy(WEIGHT)
    with pytest.raises(AssertionError) as failure:
        assert_conforms({"out": wrong}, {"out": right}, labels=("port", "torch"))
    first_line = str(failure.value).splitlines()[0]
    assert first_line.startswith("out[")
    assert first_line.endswith("elements and 1 of 1 keys fail")
    assert np.allclose(right.numpy(), INPUTS @ WEIGHT)
