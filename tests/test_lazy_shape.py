"""Shape methods of lazy stacks stay lazy; the legacy lazy mode stacks lazily."""

from __future__ import annotations

import warnings

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, set_lazy_legacy


def _ragged():
    return lazy_stack(
        [
            TensorDict(x=torch.zeros(3, 2), batch_size=[3]),
            TensorDict(x=torch.ones(3, 5), batch_size=[3]),
        ]
    )


@pytest.mark.parametrize(
    ("method", "args", "batch_size", "stack_dim"),
    [
        ("unsqueeze", (0,), [1, 2, 3], 1),
        ("unsqueeze", (-1,), [2, 3, 1], 0),
        ("unsqueeze", (1,), [2, 1, 3], 0),
        ("permute", (1, 0), [3, 2], 1),
        ("transpose", (0, 1), [3, 2], 1),
    ],
)
def test_shape_methods_keep_members_apart(method, args, batch_size, stack_dim):
    """unsqueeze/permute/transpose of a lazy stack give a lazy stack, even of ragged members."""
    out = getattr(_ragged(), method)(*args)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size(batch_size)
    assert out.stack_dim == stack_dim


def test_permuted_members_hold_the_data():
    """A permuted lazy stack reads the same values as the dense permute."""
    a = TensorDict(x=torch.arange(6.0).reshape(3, 2), batch_size=[3, 2])
    b = TensorDict(x=-torch.arange(6.0).reshape(3, 2), batch_size=[3, 2])
    stack = lazy_stack([a, b], 1)
    out = stack.permute(2, 0, 1)
    assert torch.equal(out["x"], stack.contiguous()["x"].permute(2, 0, 1))


def test_squeeze_undoes_unsqueeze():
    """squeeze() of an unsqueezed lazy stack gives back its batch size and stack dim."""
    stack = _ragged()
    for dim in (0, 1, 2, -1):
        back = stack.unsqueeze(dim).squeeze()
        assert isinstance(back, LazyStackedTensorDict)
        assert back.batch_size == stack.batch_size and back.stack_dim == stack.stack_dim


def test_squeezing_the_stack_dim_of_one_member_gives_it():
    """squeeze(stack_dim) of a one-member stack returns that member."""
    member = TensorDict(x=torch.zeros(3), batch_size=[3])
    assert lazy_stack([member]).squeeze(0) is member


def test_out_of_range_dims_raise():
    """A dim out of range is a RuntimeError (unsqueeze) or a ValueError (permute) naming it."""
    with pytest.raises(RuntimeError, match="4"):
        _ragged().unsqueeze(4)
    with pytest.raises(ValueError):
        _ragged().permute(5, 0)


def test_legacy_mode_stacks_lazily():
    """In the legacy lazy mode torch.stack gives a lazy stack, and expand keeps it lazy."""
    td = TensorDict(a=torch.zeros(3, 4), batch_size=[3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with set_lazy_legacy(True):
            stacked = torch.stack([td, td])
            expanded = lazy_stack([td, td]).expand(5, 2, 3)
    assert isinstance(stacked, LazyStackedTensorDict)
    assert stacked.tensordicts[0] is td
    assert isinstance(expanded, LazyStackedTensorDict)
    assert expanded.batch_size == torch.Size([5, 2, 3]) and expanded.stack_dim == 1
    assert type(torch.stack([td, td])) is TensorDict
    assert type(lazy_stack([td, td]).expand(5, 2, 3)) is TensorDict


@pytest.mark.parametrize("method", ["view", "reshape"])
def test_reshape_to_one_dim_stacks_the_rows_lazily(method):
    """view(-1)/reshape(-1) of a lazy stack is a lazy stack of its rows, ragged members too."""
    stack = _ragged()
    out = getattr(stack, method)(-1)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([6]) and out.stack_dim == 0
    assert len(out.tensordicts) == 6
    assert out.tensordicts[4]["x"].shape == torch.Size([5])


def test_flatten_all_dims_stacks_the_rows_and_keeps_values():
    """flatten() of a lazy stack is lazy and reads as the dense flatten."""
    a = TensorDict(x=torch.arange(6.0).reshape(3, 2), batch_size=[3])
    stack = lazy_stack([a, a * 10])
    out = stack.flatten()
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out["x"], stack.contiguous().flatten()["x"])


def test_view_adding_unit_dims_keeps_the_stack_lazy():
    """A reshape that only adds dims of size 1 keeps a ragged stack lazy."""
    out = _ragged().view(1, 2, 3)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([1, 2, 3])


def test_expand_of_ragged_members_stays_lazy():
    """Members of different shapes are expanded one by one; a dense-able stack expands densely."""
    out = _ragged().expand(4, 2, 3)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == (4, 2, 3)
    assert out.tensordicts[1]["x"].shape == (4, 3, 5)
    same = lazy_stack([TensorDict(x=torch.zeros(3), batch_size=[3])] * 2)
    assert type(same.expand(4, 2, 3)) is TensorDict


def test_expand_of_a_one_member_stack_dim_repeats_the_member():
    """A stack dim of size 1 expands to as many views of its member."""
    one = lazy_stack([TensorDict(x=torch.zeros(3, 2), batch_size=[3])], 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with set_lazy_legacy(True):
            out = one.expand(3, 4)
    assert out.batch_size == (3, 4)
    assert len(out.tensordicts) == 4


@pytest.mark.parametrize("dim", [0, 1])
def test_split_and_chunk_give_lazy_parts(dim):
    """split and chunk cut a lazy stack into lazy stacks (members of different shapes stay apart)."""
    stack = _ragged()
    parts = stack.split(1, dim)
    assert all(isinstance(p, LazyStackedTensorDict) for p in parts)
    assert [p.batch_size[dim] for p in parts] == [1] * stack.batch_size[dim]
    assert all(isinstance(p, LazyStackedTensorDict) for p in stack.chunk(2, dim))
    assert (torch.cat(parts, dim) == stack).all()


def test_cat_along_the_stack_dim_joins_the_member_lists():
    """torch.cat of lazy stacks along the stack dim is a lazy stack of every member, kept as they are."""
    a, b = _ragged(), _ragged()
    out = torch.cat([a, b], 0)
    assert isinstance(out, LazyStackedTensorDict)
    assert len(out.tensordicts) == 4
    assert all(x is y for x, y in zip(out.tensordicts, a.tensordicts + b.tensordicts))


def test_cat_along_another_dim_concatenates_the_members():
    """torch.cat along a dim other than the stack dim concatenates the members pairwise."""
    out = torch.cat([_ragged(), _ragged()], 1)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == (2, 6)
    assert [m["x"].shape for m in out.tensordicts] == [(6, 2), (6, 5)]


def test_cat_of_lazy_and_dense_is_lazy_along_the_lazy_stack_dim():
    """A dense tensordict is cut into its slices along the lazy stack's stack dim and joined."""
    stack = lazy_stack([TensorDict(a=torch.full((3,), float(i)), batch_size=[3]) for i in range(2)])
    dense = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3])
    out = torch.cat([dense, stack], 0)
    assert isinstance(out, LazyStackedTensorDict) and out.stack_dim == 0
    assert len(out.tensordicts) == 4
    assert torch.equal(out["a"], torch.cat([dense["a"], stack["a"]]))
    side = torch.cat([stack, dense], 1)
    assert isinstance(side, LazyStackedTensorDict) and side.batch_size == (2, 6)
    with pytest.raises(RuntimeError):
        torch.cat([stack, TensorDict(a=torch.zeros(3, 3), batch_size=[3, 3])], 1)


def test_cat_into_out_writes_in_place():
    """torch.cat(..., out=) writes the result into out and returns it."""
    stack = _ragged()
    out = stack.clone().apply(lambda x: x * 0)
    before = out.tensordicts[1]["x"]
    res = torch.cat([stack], 0, out=out)
    assert res is out
    assert out.tensordicts[1]["x"] is before
    assert (out.tensordicts[1]["x"] == 1).all()


def test_view_into_more_dims_nests_lazy_stacks_of_the_rows():
    """A view that splits the stack dim stacks the rows lazily into the new shape."""
    stack = LazyStackedTensorDict(*[TensorDict(a=i) for i in range(60)], stack_dim=0)
    view = stack.view(3, 4, 5)
    assert isinstance(view, LazyStackedTensorDict) and isinstance(view[0, 0], LazyStackedTensorDict)
    assert torch.equal(view["a"], torch.arange(60).view(3, 4, 5))
    assert (view.view(60) == stack).all()


def test_reshape_of_the_other_dims_stays_lazy():
    """A reshape that keeps the stack dim whole is a lazy stack that reads as the dense reshape."""
    members = [TensorDict(a=torch.arange(6) + 10 * i, batch_size=[6]) for i in range(2)]
    out = lazy_stack(members, 1).reshape(2, 3, 2)
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out["a"], torch.stack([m["a"] for m in members], 1).reshape(2, 3, 2))
