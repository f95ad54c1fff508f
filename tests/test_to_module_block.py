"""``with td.to_module(module):`` puts the module's previous tensors back when the block ends.

torchrl's losses call their networks with other parameters this way; the tests also cover
the two writes the restore makes: a parameter back where a plain tensor stood
(``preserve_module_state=False``), and a parameter written over a buffer.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import TensorDict


def _zeros(module):
    return TensorDict.from_module(module).data.clone().zero_()


def test_block_restores_the_parameters():
    """Inside the block the module uses the given values; after it, its own parameter objects."""
    module = nn.Linear(2, 3)
    weight = module.weight
    with _zeros(module).to_module(module) as previous:
        assert module.weight.abs().sum() == 0
        assert previous["weight"] is weight
    assert module.weight is weight and isinstance(module.weight, nn.Parameter)


def test_block_restores_after_an_error():
    """An exception inside the block still puts the parameters back."""
    module = nn.Linear(2, 3)
    weight = module.weight
    with pytest.raises(ZeroDivisionError), _zeros(module).to_module(module):
        _ = 1 / 0
    assert module.weight is weight


def test_block_without_preserving_module_state():
    """With preserve_module_state=False plain tensors stand in; the parameters come back after."""
    module = nn.Linear(2, 3)
    weight = module.weight
    with _zeros(module).to_module(module, preserve_module_state=False):
        assert "weight" not in module._parameters and type(module.weight) is torch.Tensor
    assert module._parameters["weight"] is weight
    assert {n for n, _ in module.named_parameters()} == {"weight", "bias"}


def test_block_in_place_copies_back():
    """inplace=True copies the values in and the previous ones back, keeping the objects."""
    module = nn.Linear(2, 3)
    before = module.weight.detach().clone()
    with _zeros(module).to_module(module, inplace=True):
        assert module.weight.abs().sum() == 0
    torch.testing.assert_close(module.weight.detach(), before)


def test_block_on_nested_modules():
    """Sub-modules are restored too."""
    module = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1)))
    inner = module[1][0].bias
    with _zeros(module).to_module(module):
        assert module[1][0].bias.abs().sum() == 0
    assert module[1][0].bias is inner


def test_a_parameter_over_a_buffer_stays_a_buffer():
    """With preserve_module_state (the default), a parameter written over a buffer is stored as a buffer."""
    module = nn.Module()
    module.register_buffer("buffer", torch.ones(3))
    TensorDict({"buffer": nn.Parameter(torch.zeros(3))}, []).to_module(module)
    assert "buffer" in dict(module.named_buffers()) and "buffer" not in dict(
        module.named_parameters()
    )
    assert not isinstance(module.buffer, nn.Parameter)
    torch.testing.assert_close(module.buffer, torch.zeros(3))


def test_any_other_tensordict_is_a_block_that_does_nothing():
    """As in the reference, a tensordict that no method offered as a block is a context
    manager whose end changes nothing."""
    td = TensorDict(a=torch.zeros(1))
    with td as inside:
        inside["a"] += 1
    assert inside is td and td["a"].item() == 1
