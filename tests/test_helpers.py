"""The small public helpers of ``tensordict.utils``: right-expansion (differential: runs under both)."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.utils import expand_as_right, expand_right


def test_a_scalar_expands_to_a_tensordict_without_batch_dims():
    """A 0-dim tensor against a tensordict of batch size [] stays that 0-dim tensor (a replay
    buffer's ``add`` of one transition does this with its priority)."""
    out = expand_as_right(torch.tensor(3), TensorDict(obs=torch.zeros(2), batch_size=[]))
    assert out.shape == torch.Size([]) and out.item() == 3


def test_a_scalar_expands_to_any_shape():
    """A 0-dim tensor expands to a 0-dim shape and to a shape with dims."""
    assert expand_right(torch.tensor(1.0), ()).shape == torch.Size([])
    assert expand_right(torch.tensor(1.0), (2, 3)).tolist() == [[1.0] * 3] * 2


def test_a_tensor_expands_to_a_tensordicts_batch_size():
    """Against a tensordict, the target shape is its batch size, not its leaves' shapes."""
    td = TensorDict(obs=torch.zeros(4, 3, 2), batch_size=[4, 3])
    out = expand_as_right(torch.arange(4.0).unsqueeze(-1), td)
    assert out.shape == torch.Size([4, 3])
    assert torch.equal(out[:, 2], torch.arange(4.0))


def test_a_tensordict_expands_each_entry_on_the_right():
    """A tensordict expanded on the right keeps each leaf's feature dims after the new ones."""
    td = TensorDict(a=torch.arange(2.0), b=torch.zeros(2, 5), batch_size=[2])
    out = expand_as_right(td, torch.zeros(2, 3))
    assert out.batch_size == torch.Size([2, 3])
    assert out["a"].shape == torch.Size([2, 3]) and out["b"].shape == torch.Size([2, 3, 5])
    assert torch.equal(out["a"][:, 1], torch.arange(2.0))


def test_a_tensordict_without_batch_dims_expands_too():
    """A tensordict of batch size [] expands to a shape (its 0-dim leaves are broadcast)."""
    out = expand_as_right(TensorDict(a=torch.tensor(2.0), batch_size=[]), torch.zeros(3))
    assert out.batch_size == torch.Size([3]) and out["a"].tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize(
    ("tensor", "shape"),
    [(torch.ones(3), (4,)), (torch.ones(2, 3), (2,)), (torch.ones(2, 2), (2, 3, 4))],
)
def test_shapes_that_do_not_line_up_are_refused(tensor, shape):
    """A target with fewer dims, or a leading dim that differs and is not 1: RuntimeError."""
    with pytest.raises(RuntimeError):
        expand_right(tensor, shape)
