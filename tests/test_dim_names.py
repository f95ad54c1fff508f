"""Dimension names through the batch-dim methods (the rules of tensordict._dim_names), and the methods that work in place."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, tensorclass


def make_td():
    return TensorDict(
        {"a": torch.arange(24.0).reshape(2, 3, 4), "n": {"b": torch.zeros(2, 3, 4, 5)}},
        [2, 3, 4],
        names=["x", "y", "z"],
    )


T = torch.tensor([0, 1])

CASES = {
    "expand with new leading dims": (lambda td: td.expand(5, 2, 3, 4), [None, "x", "y", "z"]),
    "expand to the same size": (lambda td: td.expand(2, 3, 4), ["x", "y", "z"]),
    "unsqueeze(0)": (lambda td: td.unsqueeze(0), [None, "x", "y", "z"]),
    "unsqueeze(-1)": (lambda td: td.unsqueeze(-1), ["x", "y", "z", None]),
    "unsqueeze(2)": (lambda td: td.unsqueeze(2), ["x", "y", None, "z"]),
    "permute": (lambda td: td.permute(2, 0, 1), ["z", "x", "y"]),
    "transpose": (lambda td: td.transpose(0, 2), ["z", "y", "x"]),
    "reshape": (lambda td: td.reshape(6, 4), [None, None]),
    "reshape to the same size": (lambda td: td.reshape(2, 3, 4), ["x", "y", "z"]),
    "view": (lambda td: td.view(-1), [None]),
    "flatten(0, 1)": (lambda td: td.flatten(0, 1), [None, "z"]),
    "flatten(1, 2)": (lambda td: td.flatten(1, 2), ["x", None]),
    "flatten(1, -1)": (lambda td: td.flatten(1, -1), ["x", None]),
    "flatten(0, 0)": (lambda td: td.flatten(0, 0), [None, "y", "z"]),
    "unflatten(1, (3, 1))": (lambda td: td.unflatten(1, (3, 1)), ["x", None, "y", "z"]),
    "unflatten(0, (1, 2, 1))": (lambda td: td.unflatten(0, (1, 2, 1)), [None, None, "x", "y", "z"]),
    "unflatten(-1, (2, 2))": (lambda td: td.unflatten(-1, (2, 2)), ["x", "y", None, "z"]),
    "unflatten into one dim": (lambda td: td.unflatten(1, (3,)), ["x", "y", "z"]),
    "gather": (lambda td: td.gather(1, torch.zeros(2, 2, 4, dtype=torch.long)), ["x", "y", "z"]),
    "repeat": (lambda td: td.repeat(1, 2, 1), ["x", "y", "z"]),
    "repeat_interleave": (lambda td: td.repeat_interleave(2, dim=1), ["x", "y", "z"]),
    "repeat_interleave with a tensor": (
        lambda td: td.repeat_interleave(torch.tensor([1, 2]), dim=0),
        ["x", "y", "z"],
    ),
    "expand_as": (lambda td: td.expand_as(torch.zeros(5, 2, 3, 4)), [None, "x", "y", "z"]),
    "td[0]": (lambda td: td[0], ["y", "z"]),
    "td[:, 0]": (lambda td: td[:, 0], ["x", "z"]),
    "td[None]": (lambda td: td[None], [None, "x", "y", "z"]),
    "td[:, None]": (lambda td: td[:, None], ["x", None, "y", "z"]),
    "td[..., None]": (lambda td: td[..., None], ["x", "y", "z", None]),
    "td[long]": (lambda td: td[T], ["x", "y", "z"]),
    "td[:, long]": (lambda td: td[:, T], ["x", "y", "z"]),
    "td[..., long]": (lambda td: td[..., T], ["x", "y", "z"]),
    "td[list]": (lambda td: td[[0, 1]], ["x", "y", "z"]),
    "td[long, long]": (lambda td: td[T, T], [None, "z"]),
    "td[:, long, long]": (lambda td: td[:, T, T], ["x", None]),
    "td[long, :, long]": (lambda td: td[T, :, T], [None, "y"]),
    "td[0, long]": (lambda td: td[0, T], ["y", "z"]),
    "td[long, 0]": (lambda td: td[T, 0], ["x", "z"]),
    "td[:, 0, long]": (lambda td: td[:, 0, T], ["x", "z"]),
    "td[None, long]": (lambda td: td[None, T], [None, "x", "y", "z"]),
    "td[long, None]": (lambda td: td[T, None], ["x", None, "y", "z"]),
    "td[2-d long]": (lambda td: td[torch.tensor([[0, 1]])], [None, "x", "y", "z"]),
    "td[:, 2-d long]": (
        lambda td: td[:, torch.tensor([[0, 1], [1, 2]])],
        ["x", None, None, "z"],
    ),
    "td[mask]": (lambda td: td[torch.tensor([True, False])], ["x", "y", "z"]),
    "td[:, mask]": (lambda td: td[:, torch.tensor([True, False, True])], ["x", "y", "z"]),
    "td[2-d mask]": (lambda td: td[torch.ones(2, 3, dtype=torch.bool)], [None, "z"]),
    "td[:, 2-d mask]": (lambda td: td[:, torch.ones(3, 4, dtype=torch.bool)], ["x", None]),
    "td[3-d mask]": (lambda td: td[torch.ones(2, 3, 4, dtype=torch.bool)], [None]),
    "masked_select with a 2-d mask": (
        lambda td: td.masked_select(torch.ones(2, 3, dtype=torch.bool)),
        [None, "z"],
    ),
    "clone": (lambda td: td.clone(), ["x", "y", "z"]),
    "apply": (lambda td: td.apply(lambda x: x + 1), ["x", "y", "z"]),
    "apply with a batch size": (
        lambda td: td.apply(lambda x: x[0], batch_size=[3, 4]),
        [None, None],
    ),
    "stack": (lambda td: torch.stack([td, td], 1), ["x", None, "y", "z"]),
    "cat": (lambda td: torch.cat([td, td], 1), ["x", "y", "z"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_shape_method_keeps_the_names_of_surviving_dims(case):
    """Each shape method gives the dim names the well-known API gives, nested levels included."""
    fn, expected = CASES[case]
    out = fn(make_td())
    assert out.names == expected
    assert out["n"].names[: len(expected)] == expected


SPLITS = {
    "unbind(0)": (lambda td: td.unbind(0), ["y", "z"]),
    "unbind(1)": (lambda td: td.unbind(1), ["x", "z"]),
    "unbind(-1)": (lambda td: td.unbind(-1), ["x", "y"]),
    "split(2, 1)": (lambda td: td.split(2, 1), ["x", "y", "z"]),
    "split([1, 2], 1)": (lambda td: td.split([1, 2], 1), ["x", "y", "z"]),
    "chunk(2, 2)": (lambda td: td.chunk(2, 2), ["x", "y", "z"]),
}


@pytest.mark.parametrize("case", list(SPLITS), ids=list(SPLITS))
def test_splitting_methods_keep_the_names_in_every_part(case):
    """unbind, split and chunk name the dims of every part like the tensordict's own."""
    fn, expected = SPLITS[case]
    for part in fn(make_td()):
        assert part.names == expected


def test_squeeze_keeps_the_names_of_the_dims_left():
    """squeeze() and squeeze(dim) drop the names of the squeezed dims only."""
    td = TensorDict({}, [1, 2, 1], names=["a", "b", "c"])
    assert td.squeeze().names == ["b"]
    assert td.squeeze(-1).names == ["a", "b"]
    assert td.squeeze(1).names == ["a", "b", "c"]


def test_expand_with_minus_one_keeps_the_names():
    """expand(-1) keeps the size and the name of a dim; grown size-1 dims keep theirs too."""
    td = TensorDict({}, [1, 2], names=["a", "b"])
    out = td.expand(3, 5, -1)
    assert out.batch_size == torch.Size([3, 5, 2])
    assert out.names == [None, "a", "b"]


def test_unnamed_tensordicts_stay_unnamed():
    """An unnamed tensordict gives unnamed results."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    assert td.flatten(0, 0).names == [None, None]
    assert td.unsqueeze(0).names == [None, None, None]
    assert td[torch.tensor([0])].names == [None, None]


def test_flatten_refuses_an_end_before_the_start():
    """flatten(2, 1) raises ValueError instead of returning the tensordict."""
    with pytest.raises(ValueError, match="end"):
        make_td().flatten(2, 1)


def test_flatten_without_batch_dims_gives_one_dim():
    """flatten() on a tensordict without batch dims gives batch size [1]."""
    out = TensorDict({}, []).flatten()
    assert out.batch_size == torch.Size([1])
    assert out.names == [None]


def test_lazy_stack_names_come_from_the_members_and_the_stack_dim():
    """A lazy stack names its dims after its members, with stack_dim_name at the stack dim."""
    b = TensorDict({"a": torch.zeros(3)}, [3], names=["t"])
    assert LazyStackedTensorDict(b, b.clone()).names == [None, "t"]
    s = LazyStackedTensorDict(b, b.clone(), stack_dim=1, stack_dim_name="env")
    assert s.names == ["t", "env"]
    assert s[:, :1].names == ["t", "env"]
    assert s[0].names == ["env"]
    assert s[:, torch.tensor([0, 1])].names == ["t", "env"]
    assert s.contiguous().names == ["t", "env"]
    assert s.unsqueeze(0).names == [None, "t", "env"]
    assert s.flatten().names == [None]
    assert lazy_stack([TensorDict({}, [3]), TensorDict({}, [3])]).names == [None, None]


INPLACE = {
    "flatten": (lambda td: td.flatten(0, 1, inplace=True), (6,), [None]),
    "flatten(1, 1)": (lambda td: td.flatten(1, 1, inplace=True), (2, 3), ["x", None]),
    "unflatten": (lambda td: td.unflatten(1, (3, 1), inplace=True), (2, 3, 1), ["x", None, "y"]),
    "gather": (
        lambda td: td.gather(1, torch.zeros(2, 2, dtype=torch.long), inplace=True),
        (2, 2),
        ["x", "y"],
    ),
    "repeat": (lambda td: td.repeat(1, 2, inplace=True), (2, 6), ["x", "y"]),
    "repeat_interleave": (
        lambda td: td.repeat_interleave(2, dim=1, inplace=True),
        (2, 6),
        ["x", "y"],
    ),
    "reshape": (lambda td: td.reshape(6, inplace=True), (6,), [None]),
}


def make_small():
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "n": {"b": torch.zeros(2, 3, 4)}},
        [2, 3],
        names=["x", "y"],
    )


@pytest.mark.parametrize("case", list(INPLACE), ids=list(INPLACE))
def test_inplace_shape_method_changes_the_tensordict_itself(case):
    """With inplace=True the method returns the tensordict itself, reshaped, sub-tensordicts kept."""
    fn, size, names = INPLACE[case]
    td = make_small()
    sub = td["n"]
    out = fn(td)
    assert out is td
    assert td.batch_size == torch.Size(size)
    assert td.names == names
    assert td["n"] is sub
    assert sub.batch_size == torch.Size(size)
    assert td["a"].shape == torch.Size(size)


@pytest.mark.parametrize("case", list(INPLACE), ids=list(INPLACE))
def test_inplace_results_equal_the_out_of_place_ones(case):
    """An in-place shape method leaves the values the same call without inplace returns."""
    fn = INPLACE[case][0]
    expected = fn(make_small())
    td = make_small()
    fn(td)
    assert set(td.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert torch.equal(td[key], expected[key])


def test_inplace_shape_method_refuses_a_locked_tensordict():
    """A locked tensordict refuses inplace=True with a RuntimeError and keeps its shape."""
    td = make_small().lock_()
    with pytest.raises(RuntimeError, match="[Ll]ocked"):
        td.flatten(0, 1, inplace=True)
    assert td.batch_size == torch.Size([2, 3])
    assert td["a"].shape == torch.Size([2, 3])


def test_inplace_shape_method_is_refused_on_a_lazy_stack():
    """A lazy stack raises NotImplementedError for inplace=True and keeps its members."""
    s = lazy_stack([make_small(), make_small()])
    with pytest.raises(NotImplementedError, match="inplace"):
        s.flatten(1, 2, inplace=True)
    assert s.batch_size == torch.Size([2, 2, 3])


@pytest.mark.parametrize(
    "method",
    ["unsqueeze", "squeeze", "permute", "expand", "view", "transpose"],
)
def test_methods_without_inplace_refuse_the_keyword(method):
    """unsqueeze, squeeze, permute, expand, view and transpose take no inplace keyword."""
    args = {
        "unsqueeze": (0,),
        "squeeze": (0,),
        "permute": (1, 0),
        "expand": (4, 2, 3),
        "view": (6,),
        "transpose": (0, 1),
    }[method]
    with pytest.raises(TypeError):
        getattr(make_small(), method)(*args, inplace=True)


@given(perm=st.permutations([0, 1, 2]))
def test_permute_names_follow_their_dims(perm):
    """After any permutation, the name at position i is the name of dim perm[i]."""
    out = make_td().permute(*perm)
    assert out.names == [["x", "y", "z"][d] for d in perm]
    assert out.batch_size == torch.Size([2, 3, 4][d] for d in perm)


def test_setting_the_batch_size_keeps_the_names_of_remaining_dims():
    """A new batch size keeps the names of the dims it keeps; new dims are unnamed."""
    td = TensorDict(a=torch.zeros(3, 2, 4), batch_size=[3], names=["t"])
    td.batch_size = [3, 2]
    assert td.names == ["t", None]
    td = TensorDict(a=torch.zeros(3, 2, 4), batch_size=[3, 2], names=["t", "u"])
    td.batch_size = [3]
    assert td.names == ["t"]


def test_a_locked_tensordict_may_change_its_batch_size():
    """Locking freezes the keys, not the batch size."""
    td = TensorDict(a=torch.zeros(3, 2), batch_size=[3]).lock_()
    td.batch_size = [3, 2]
    assert td.batch_size == (3, 2) and td.is_locked


_I1 = torch.tensor([0, 1])
_I2 = torch.tensor([[0, 1, 2], [1, 2, 0]])
_M2 = torch.ones(3, 3, dtype=torch.bool)


@pytest.mark.parametrize(
    "index, names",
    [
        ((slice(None), _I2), ["a", None, None, "c", "d"]),
        ((0, _I2), [None, None, "c", "d"]),
        (_I2, [None, None, "b", "c", "d"]),
        (_I1, ["a", "b", "c", "d"]),
        ((slice(None), _I1), ["a", "b", "c", "d"]),
        ((_I1, _I1), [None, "c", "d"]),
        ((slice(None), _I1, _I1), ["a", None, "d"]),
        ((_I1, slice(None), _I1), [None, "b", "d"]),
        ((0, slice(None), _I1), ["b", "c", "d"]),
        ((slice(None), 0, _I1), ["a", "c", "d"]),
        (_M2, [None, "c", "d"]),
        ((slice(None), _M2), ["a", None, "d"]),
        ((slice(None), _I2, 0), ["a", None, None, "d"]),
        ((None, _I1), [None, "a", "b", "c", "d"]),
        ((_I1, None), ["a", None, "b", "c", "d"]),
        (torch.tensor([[0, 1]]), [None, "a", "b", "c", "d"]),
        ((slice(None), torch.tensor([[0], [1]])), ["a", "b", None, "c", "d"]),
    ],
)
def test_names_after_tensor_indices(index, names):
    """A lone tensor index keeps its dim's name on its one wide dim; others give unnamed dims where torch puts them."""
    td = TensorDict({"x": torch.zeros(3, 3, 3, 3)}, [3, 3, 3, 3], names=["a", "b", "c", "d"])
    assert td[index].names == names


def test_a_stored_sub_tensordict_and_its_parent_share_the_names_of_their_common_dims():
    """Storing a sub-tensordict names its leading dims as the parent's, or names the parent's."""
    td = TensorDict(batch_size=[3, 4], names=["a", "b"])
    td["sub"] = TensorDict(batch_size=[3, 4, 2])
    assert td["sub"].names == ["a", "b", None]
    td["empty"] = TensorDict()
    assert td["empty"].names == ["a", "b"]
    plain = TensorDict({}, [3])
    plain["sub"] = TensorDict({}, [3, 4], names=["x", "y"])
    assert plain.names == ["x"]
    assert plain["sub"].names == ["x", "y"]


def test_a_sub_tensordict_whose_names_differ_from_its_parent_is_refused():
    """A leading dim named differently by the parent and the sub-tensordict raises RuntimeError."""
    td = TensorDict({}, [3], names=["x"])
    with pytest.raises(RuntimeError):
        td["sub"] = TensorDict({}, [3, 4], names=["a", "b"])
    assert "sub" not in td.keys()


def test_names_must_stay_unique_along_a_path_of_sub_tensordicts():
    """Naming a dim as a sub-tensordict already names one of its own dims raises ValueError."""
    td = TensorDict({"": TensorDict({}, [3, 4], names=["c", "d"])}, [3], names=["c"])
    stack = LazyStackedTensorDict.lazy_stack([td, td], -1)
    with pytest.raises(ValueError):
        stack.names = ["c", "d"]
    stack.names = ["c", "e"]
    assert stack[""].names == ["c", "e", "d"]
    plain = TensorDict({"s": TensorDict({}, [3, 4], names=[None, "d"])}, [3])
    with pytest.raises(ValueError):
        plain.names = ["d"]


def test_refine_names_keeps_names_and_refuses_to_change_one():
    """As Tensor.refine_names: ... keeps names, a new name fills an unnamed dim, a named
    dim cannot take another name nor None (RuntimeError)."""
    td = TensorDict(batch_size=[3, 4, 5, 6])
    assert td.refine_names(None, None, None, "d").names == [None, None, None, "d"]
    assert td.refine_names(None, None, "c", "d").names == [None, None, "c", "d"]
    with pytest.raises(RuntimeError):
        td.refine_names(None, None, "d", "d")
    assert td.refine_names(..., "d").names == [None, None, "c", "d"]
    assert td.refine_names("a", ..., "d").names == ["a", None, "c", "d"]
    stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3])])
    stack.refine_names("env", None)
    assert stack.refine_names("env", "t").names == ["env", "t"]
    with pytest.raises(RuntimeError):
        stack.refine_names(None, "t")


def test_rename_leaves_the_source_sub_tensordicts_names_alone():
    """rename() gives a copy whose sub-tensordicts (and tensorclasses) carry the new names;
    the source's keep theirs. names and rename_ reach a nested tensorclass too."""

    @tensorclass
    class Box:
        x: torch.Tensor

    td = TensorDict(
        {
            "c": Box(x=torch.zeros(3, 4, 5), batch_size=[3, 4, 5]),
            "d": TensorDict(x=torch.zeros(3, 4, 5), batch_size=[3, 4, 5]),
        },
        [3, 4],
        names=["a", "b"],
    )
    assert td.get("c").names == ["a", "b", None]
    renamed = td.rename(b="q")
    assert renamed.get("c").names == renamed["d"].names == ["a", "q", None]
    assert td.get("c").names == td["d"].names == ["a", "b", None]
    td.rename_(a="g")
    assert td.get("c").names == ["g", "b", None]
