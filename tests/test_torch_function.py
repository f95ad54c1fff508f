"""``torch.*`` functions called on tensordicts (tensordict._torch_function); differential: runs under both."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, is_tensor_collection

from conftest import ours_only


def _td():
    return TensorDict(
        a=torch.arange(24.0).reshape(2, 3, 4),
        b={"c": torch.arange(6.0).reshape(2, 3)},
        batch_size=[2, 3],
    )


def _same(x, y) -> None:
    assert x.batch_size == y.batch_size
    assert set(x.keys(True, True)) == set(y.keys(True, True))
    for key in x.keys(True, True):
        assert torch.equal(x[key], y[key]), key


@pytest.mark.parametrize(
    ("call", "method"),
    [
        (lambda td: torch.flip(td, (0,)), lambda td: td.flip(0)),
        (lambda td: torch.flip(td, dims=[0, 1]), lambda td: td.flip((0, 1))),
        (torch.fliplr, lambda td: td.fliplr()),
        (torch.flipud, lambda td: td.flipud()),
        (lambda td: torch.roll(td, 1, 0), lambda td: td.roll(1, 0)),
        (torch.rot90, lambda td: td.rot90()),
        (lambda td: torch.narrow(td, 1, 0, 2), lambda td: td.narrow(1, 0, 2)),
        (lambda td: torch.tile(td, (2,)), lambda td: td.tile((2,))),
        (lambda td: torch.broadcast_to(td, (4, 2, 3)), lambda td: td.broadcast_to((4, 2, 3))),
        (torch.atleast_1d, lambda td: td.atleast_1d()),
        (torch.atleast_3d, lambda td: td.atleast_3d()),
        (lambda td: torch.swapaxes(td, 0, 1), lambda td: td.swapaxes(0, 1)),
        (lambda td: torch.swapdims(td, 0, 1), lambda td: td.swapdims(0, 1)),
        (lambda td: torch.movedim(td, 0, 1), lambda td: td.movedim(0, 1)),
        (lambda td: torch.moveaxis(td, 0, 1), lambda td: td.moveaxis(0, 1)),
        (lambda td: torch.repeat_interleave(td, 2, 0), lambda td: td.repeat_interleave(2, 0)),
        (lambda td: torch.clamp_min_(td.clone(), 3.0), lambda td: td.clamp_min(3.0)),
        (lambda td: torch.abs_(-td), lambda td: td.abs()),
    ],
)
def test_a_torch_function_gives_what_the_method_gives(call, method):
    """Each torch function on a tensordict returns what the method of the same name returns."""
    td = _td()
    _same(call(td), method(td))


def test_tensor_split_gives_the_pieces():
    """torch.tensor_split on a tensordict gives one tensordict per piece along the batch dim."""
    pieces = torch.tensor_split(_td(), 2, 1)
    assert [p.batch_size for p in pieces] == [torch.Size([2, 2]), torch.Size([2, 1])]


@pytest.mark.parametrize("loss", ["l1_loss", "mse_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_a_loss_is_computed_leaf_by_leaf(loss, reduction):
    """An elementwise loss of two tensordicts is the loss of each pair of leaves: with 'none' the
    batch size is kept, with 'mean' and 'sum' each leaf is one number and the batch size is []."""
    td = _td()
    fn = getattr(torch.nn.functional, loss)
    out = fn(td, -td, reduction=reduction)
    assert is_tensor_collection(out)
    assert out.batch_size == (td.batch_size if reduction == "none" else torch.Size([]))
    for key in td.keys(True, True):
        assert torch.equal(out[key], fn(td[key], -td[key], reduction=reduction))


def test_a_loss_reduces_by_the_mean_by_default():
    """Without a reduction, the loss of each leaf is its mean."""
    td = _td()
    out = torch.nn.functional.l1_loss(td, td + 1)
    assert out.batch_size == torch.Size([])
    assert out["a"].item() == 1.0


def test_a_loss_refuses_an_unknown_reduction():
    """An unknown reduction mode raises ValueError."""
    td = _td()
    with pytest.raises(ValueError):
        torch.nn.functional.mse_loss(td, td, reduction="median")


@ours_only  # the reference's atleast_*d take one tensordict only (TypeError for more)
def test_atleast_of_several_tensordicts_gives_a_tuple():
    """torch.atleast_2d of one tensordict gives it back; of several, a tuple of results."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    one = torch.atleast_2d(td)
    assert one.batch_size == torch.Size([1, 3])
    two = torch.atleast_1d(td, td)
    assert isinstance(two, tuple) and len(two) == 2


def test_where_with_the_tensordict_second_picks_it_where_the_condition_is_false():
    """torch.where(condition, value, td) takes the value where condition is True, td elsewhere."""
    td = TensorDict(a=torch.arange(3.0), batch_size=[3])
    out = torch.where(torch.tensor([True, False, True]), -1.0, td)
    assert out["a"].tolist() == [-1.0, 1.0, -1.0]


def test_a_torch_function_refuses_a_tensor_before_the_tensordict():
    """torch.add(tensor, td) raises TypeError: the tensordict must come first."""
    with pytest.raises(TypeError):
        torch.add(torch.zeros(()), _td())
