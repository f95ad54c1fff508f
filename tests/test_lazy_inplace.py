"""In-place math on lazy stacks writes into the members' own tensors."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, lazy_stack


def _stack():
    return lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2]) for _ in range(2)])


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda s: s.add_(1.0), 1.0),
        (lambda s: s.mul_(0.0).add_(3.0), 3.0),
        (lambda s: s.zero_().add_(2.0).neg_(), -2.0),
    ],
)
def test_in_place_methods_reach_the_members(call, expected):
    """add_, mul_, neg_ and friends change the members, not a stacked copy."""
    stack = _stack()
    call(stack)
    assert all(torch.equal(m["a"], torch.full((2,), expected)) for m in stack.tensordicts)


def test_augmented_assignment_reaches_the_members():
    """stack += 1 and stack *= other write into each member's tensors."""
    stack = _stack()
    members = [m["a"] for m in stack.tensordicts]
    stack += 1
    stack *= TensorDict(a=torch.tensor([[1.0, 2.0], [3.0, 4.0]]), batch_size=[2, 2])
    assert [m.tolist() for m in members] == [[1.0, 2.0], [3.0, 4.0]]


def test_set_at_and_update_at_write_the_members_rows():
    """set_at_/update_at_ on a lazy stack write the indexed rows of its members."""
    stack = lazy_stack(
        [TensorDict(a=torch.zeros(3), b={"c": torch.zeros(3)}, batch_size=[3]) for _ in range(2)]
    )
    stack.set_at_("a", 1.0, (1, slice(0, 2)))
    assert stack.tensordicts[1]["a"].tolist() == [1.0, 1.0, 0.0]
    assert stack.tensordicts[0]["a"].tolist() == [0.0, 0.0, 0.0]
    rows = TensorDict(a=torch.tensor([8.0, 9.0]), b={"c": torch.tensor([1.0, 2.0])}, batch_size=[2])
    stack.update_at_(rows, (slice(None), 2))
    assert [m["a"][2].item() for m in stack.tensordicts] == [8.0, 9.0]
    assert [m["b", "c"][2].item() for m in stack.tensordicts] == [1.0, 2.0]


def test_setting_a_new_nested_key_reaches_every_member():
    """stack[("n", "d")] = v creates "n" in each member and stores its row of v there."""
    stack = lazy_stack([TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(2)])
    stack.set(("n", "d"), torch.arange(6.0).reshape(2, 3))
    stack["m", "e", "f"] = torch.ones(2, 3)
    assert stack.tensordicts[1]["n", "d"].tolist() == [3.0, 4.0, 5.0]
    assert stack.tensordicts[0]["m", "e", "f"].tolist() == [1.0, 1.0, 1.0]


def test_a_tensorclass_entry_of_a_lazy_stack_reads_as_its_class():
    """get() of a tensorclass entry gives one instance over the members'; contiguous() works."""
    from tensordict import tensorclass

    @tensorclass
    class Point:
        x: torch.Tensor

    stack = lazy_stack(
        [
            TensorDict(p=Point(x=torch.full((3,), float(i)), batch_size=[3]), batch_size=[3])
            for i in range(2)
        ]
    )
    entry = stack.get("p")
    assert type(entry) is Point and entry.batch_size == torch.Size([2, 3])
    dense = stack.contiguous()
    assert type(dense["p"]) is Point
    assert dense["p"].x.tolist() == [[0.0] * 3, [1.0] * 3]
