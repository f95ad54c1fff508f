"""Values of a lazy stack written through its members (tensordict._lazy_values): masks, fills, where."""

from __future__ import annotations

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def ragged(value: float = 1.0) -> LazyStackedTensorDict:
    """Two members of batch size [3] whose "a" differ in feature shape, with a nested "n"."""
    return lazy_stack(
        [
            TensorDict({"a": torch.full((3, 2), value), "n": {"b": torch.full((3,), value)}}, [3]),
            TensorDict({"a": torch.full((3, 4), value), "n": {"b": torch.full((3,), value)}}, [3]),
        ],
        1,
    )


def test_zero_and_detach_reach_the_members():
    """zero_() and detach_() write the members' own tensors, not stacked copies."""
    stack = ragged()
    stack.zero_()
    assert all((m["a"] == 0).all() and (m["n", "b"] == 0).all() for m in stack.tensordicts)
    grad = lazy_stack([TensorDict(x=torch.ones(2, requires_grad=True) * 2) for _ in range(2)])
    grad.detach_()
    assert not any(m["x"].requires_grad for m in grad.tensordicts)


@ours_only  # the reference stacks the members' leaves first and fails on members of different shapes
def test_fill_reaches_the_members_through_nested_keys():
    """fill_ of a key, nested or not, fills each member's entry in place."""
    stack = ragged()
    stack.fill_("a", 5.0)
    assert all((m["a"] == 5).all() for m in stack.tensordicts)
    outer = TensorDict({"lazy": ragged()}, [3])
    outer.fill_(("lazy", "n", "b"), -1.0)
    assert (outer["lazy", "n", "b"] == -1).all()


def test_masked_fill_cuts_the_mask_along_the_stack_dim():
    """masked_fill and masked_fill_ give each member its slice of the mask."""
    mask = torch.tensor([[True, False], [False, False], [True, True]])
    out = ragged().masked_fill(mask, -1.0)
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out["n", "b"] == -1, mask)
    stack = ragged()
    assert stack.masked_fill_(mask, -1.0) is stack
    assert (stack.tensordicts[1]["a"][2] == -1).all() and (stack.tensordicts[1]["a"][0] == 1).all()


@ours_only  # the reference rebinds the entries of out= instead of writing into them
def test_where_cuts_the_condition_and_the_other_along_the_stack_dim():
    """where and torch.where of a lazy stack go member by member; out= is written in place."""
    mask = torch.tensor([[True, False], [False, True], [True, True]])
    out = torch.where(mask, ragged(), 0)
    assert torch.equal(out["n", "b"], mask.float())
    other = ragged(7.0)
    out = ragged().where(mask, other)
    assert torch.equal(out["n", "b"], torch.where(mask, 1.0, 7.0))
    target = ragged(0.0)
    kept = target.tensordicts[0]["a"]
    assert torch.where(mask, ragged(), other, out=target) is target
    assert target.tensordicts[0]["a"] is kept and (kept[0] == 1).all() and (kept[1] == 7).all()


def test_in_place_operators_reach_a_lazy_sub_stack():
    """td += other writes a lazy sub-stack's members, keys only some members have included."""

    def make():
        stack = LazyStackedTensorDict(TensorDict({"a": -2}), TensorDict({"a": -1, "b": -2}))
        return TensorDict({"super": stack})

    td = make()
    td += make()
    assert td["super", "a"].tolist() == [-4, -2]
    assert td["super"].tensordicts[1]["b"] == -4
