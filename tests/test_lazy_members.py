"""A lazy stack's member list (append, insert, extend), its builders and its dim names."""

from __future__ import annotations

import warnings

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, tensorclass


def member(value: float = 0.0) -> TensorDict:
    return TensorDict(a=torch.full((2,), value), batch_size=[2])


def make_stack(n: int = 2) -> LazyStackedTensorDict:
    return LazyStackedTensorDict(*[member(i) for i in range(n)])


def test_append_insert_extend_grow_the_stack():
    """append, insert and extend add members, kept as they are, and the batch size follows."""
    stack = make_stack()
    last = member(9)
    stack.append(last)
    assert stack.batch_size == (3, 2)
    assert stack.tensordicts[-1] is last
    stack.insert(0, member(7))
    assert stack["a"][:, 0].tolist() == [7, 0, 1, 9]
    stack.extend([member(5), member(6)])
    assert stack.batch_size == (6, 2)
    assert stack["a"][-2:, 0].tolist() == [5, 6]


def test_extend_with_a_tensordict_splits_it():
    """extend with one tensordict adds each of its rows as a member."""
    stack = make_stack()
    stack.extend(TensorDict(a=torch.ones(3, 2), batch_size=[3, 2]))
    assert stack.batch_size == (5, 2)


def test_append_refuses_another_batch_size():
    """A member of another batch size is refused and the stack is unchanged."""
    stack = make_stack()
    with pytest.raises(ValueError, match=r"\[3\]"):
        stack.append(TensorDict(a=torch.zeros(3), batch_size=[3]))
    assert stack.batch_size == (2, 2)


def test_extend_refuses_all_when_one_does_not_fit():
    """extend checks every member first: none is added when one is refused."""
    stack = make_stack()
    with pytest.raises(ValueError):
        stack.extend([member(), TensorDict(a=torch.zeros(3), batch_size=[3])])
    assert len(stack.tensordicts) == 2


# differs from the reference: it adds a member to a locked stack
def test_append_refuses_a_locked_stack():
    """A locked stack cannot grow."""
    stack = make_stack().lock_()
    with pytest.raises(RuntimeError, match="locked"):
        stack.append(member())


def test_from_dict_list_and_dict_of_dicts():
    """from_dict builds one member per dict, from a list or a dict keyed "0", "1", ..."""
    stack = LazyStackedTensorDict.from_dict([{"a": torch.zeros(3)}, {"a": torch.zeros(4)}])
    assert type(stack) is LazyStackedTensorDict
    assert stack.batch_size == (2,)
    assert [t.shape for t in stack.tensordicts[1].values()] == [torch.Size([4])]
    stack = LazyStackedTensorDict.from_dict(
        {"0": {"a": torch.zeros(3)}, "1": {"a": torch.zeros(4)}}
    )
    assert stack.batch_size == (2,)


def test_from_dict_with_auto_batch_size_and_stack_dim():
    """auto_batch_size infers each member's batch size, stack_dim places the stack dim."""
    stack = LazyStackedTensorDict.from_dict(
        [{"a": torch.zeros(2, 3)}, {"a": torch.zeros(2, 4)}], auto_batch_size=True, stack_dim=1
    )
    assert stack.batch_size[:2] == (2, 2)
    assert stack.stack_dim == 1


def test_fromkeys_gives_a_tensordict():
    """fromkeys has nothing to stack: it gives a TensorDict."""
    out = LazyStackedTensorDict.fromkeys(["a", "b"], 1)
    assert type(out) is TensorDict
    assert out["b"] == 1


def test_get_nestedtensor_and_valid_keys():
    """get_nestedtensor reads an entry of every member as one nested tensor."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(3))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: nested tensors are a prototype
        nested = stack.get_nestedtensor("a")
    assert nested.is_nested
    assert [t.tolist() for t in nested.unbind()] == [[0, 0], [1, 1, 1]]
    assert list(stack.valid_keys()) == ["a"]


def test_refine_names_and_rename():
    """refine_names names the stack dim and the members' dims; rename gives a renamed copy."""
    stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3])])
    assert stack.refine_names("env", None) is stack
    assert stack.names == ["env", None]
    renamed = stack.rename("e", "t")
    assert renamed.names == ["e", "t"]
    assert stack.names == ["env", None]
    assert stack.rename(env="x").names == ["x", None]


# differs from the reference: it raises IndexError from inside its name bookkeeping
def test_refine_names_refuses_a_wrong_count():
    """One name per batch dim, or ValueError."""
    stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3])])
    with pytest.raises(ValueError, match="one entry per batch dimension"):
        stack.refine_names("a", "b", "c")


# differs from the reference: it refuses to change a lazy stack's batch size
def test_auto_batch_size_on_a_lazy_stack():
    """auto_batch_size_ grows the members' batch size to what their entries share."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2, 3)), TensorDict(a=torch.zeros(2, 3))])
    assert stack.auto_batch_size_().batch_size == (2, 2, 3)


def test_hooks_are_none():
    """hook_in and hook_out exist and are None: values pass unchanged."""
    stack = make_stack()
    assert stack.hook_in is None and stack.hook_out is None


@tensorclass
class Point:
    x: torch.Tensor
    tag: str = "a"


def test_tensorclass_fields():
    """C.fields() and instance.fields() are the dataclass fields."""
    assert [f.name for f in Point.fields()] == ["x", "tag"]
    assert [f.name for f in Point(x=torch.zeros(2), batch_size=[2]).fields()] == ["x", "tag"]


# differs from the reference: its extend refuses tensorclass instances
def test_tensorclass_extend_on_a_lazy_stack():
    """extend on an instance over a lazy stack adds members (with a DeprecationWarning)."""
    p = Point(x=torch.zeros(2), batch_size=[2])
    stack = lazy_stack([p, p])
    with pytest.warns(DeprecationWarning):
        stack.extend([p])
    assert stack.batch_size == (3, 2)


def test_tensorclass_extend_on_a_dense_instance_raises():
    """A dense instance has no member list to extend."""
    p = Point(x=torch.zeros(2), batch_size=[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises((TypeError, AttributeError)):
            p.extend(p)


def test_keys_of_members_whose_leaves_differ_in_shape():
    """Listing nested keys never stacks leaves: members of different shapes list theirs."""
    stack = lazy_stack(
        [
            TensorDict(a=torch.zeros(2), n=TensorDict(b=torch.zeros(3))),
            TensorDict(a=torch.zeros(3), n=TensorDict(b=torch.zeros(4))),
        ]
    )
    assert list(stack.keys(True, True)) == ["a", ("n", "b")]
    assert list(stack.keys(True)) == ["a", ("n", "b"), "n"]
