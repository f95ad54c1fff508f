"""The lazy views of the legacy lazy mode: shape methods whose result reads and writes its source.

Differential: every test also runs under the reference (from inside tests/), except those
marked ``ours_only`` with a comment saying how the reference differs.
"""

from __future__ import annotations

import gc

import pytest
import torch

from tensordict import TensorDict, lazy_stack, set_lazy_legacy

from conftest import ours_only


def make_td():
    return TensorDict(
        {
            "a": torch.arange(24.0).reshape(2, 3, 1, 4),
            "n": TensorDict({"b": torch.zeros(2, 3, 1, 5, 2)}, [2, 3, 1, 5]),
        },
        batch_size=[2, 3, 1],
        names=["x", "y", "z"],
    )


# Each shape method in the legacy mode, and the call on the view that undoes it.
VIEWS = {
    "permute": (lambda td: td.permute(2, 0, 1), lambda v: v.permute(1, 2, 0)),
    "transpose": (lambda td: td.transpose(0, 1), lambda v: v.transpose(1, 0)),
    "unsqueeze": (lambda td: td.unsqueeze(1), lambda v: v.unsqueeze(1).squeeze(1).squeeze(1)),
    "squeeze": (lambda td: td.squeeze(-1), lambda v: v.unsqueeze(-1)),
    "view": (lambda td: td.view(-1), lambda v: v.view(2, 3, 1)),
}


def _entry_like(td, view):
    """A tensor of the view's batch shape holding a distinct value per batch element."""
    return torch.arange(float(view.numel())).reshape(view.batch_size)


@pytest.mark.parametrize("name", ["permute", "transpose", "unsqueeze", "squeeze", "view"])
@set_lazy_legacy(True)
def test_a_new_entry_set_on_the_view_reaches_the_source_in_its_layout(name):
    """set() of a new key on a view stores it in the source, in the source's layout."""
    td = make_td()
    make, _ = VIEWS[name]
    view = make(td)
    value = _entry_like(td, view)
    view.set("new", value)
    assert td["new"].shape == td.batch_size
    assert (view["new"] == value).all()
    dense = td.to_tensordict()
    with set_lazy_legacy(False):
        expected = make(dense)["new"]
    assert (expected == value).all()


@pytest.mark.parametrize("name", ["permute", "transpose", "unsqueeze", "squeeze", "view"])
@set_lazy_legacy(True)
def test_the_call_that_undoes_the_view_returns_the_source(name):
    """In the legacy mode, the shape call that undoes a view returns its source itself."""
    td = make_td()
    make, undo = VIEWS[name]
    if name == "unsqueeze":
        assert make(td).squeeze(1) is td
    else:
        assert undo(make(td)) is td


@set_lazy_legacy(True)
def test_reads_follow_the_source():
    """A view reads the source when asked: an entry the source gets later shows, permuted."""
    td = make_td()
    view = td.permute(2, 0, 1)
    td["later"] = torch.arange(6.0).reshape(2, 3, 1)
    assert view["later"].shape == torch.Size([1, 2, 3])
    assert (view["later"] == td["later"].permute(2, 0, 1)).all()
    assert view.batch_size == torch.Size([1, 2, 3])
    assert view.names == ["z", "x", "y"]


@set_lazy_legacy(True)
def test_in_place_writes_reach_the_source():
    """set_(), index writes and in-place math on a view write into the source's tensors."""
    td = make_td()
    view = td.permute(2, 0, 1)
    view.set_("a", torch.ones(1, 2, 3, 4))
    assert (td["a"] == 1).all()
    view.apply_(lambda x: x.zero_())
    assert (td["a"] == 0).all()
    view.add_(1)
    assert (td["a"] == 1).all()


@ours_only  # index writes into a view fail in the reference (a truth-value RuntimeError)
@set_lazy_legacy(True)
def test_index_writes_reach_the_source():
    """view[index] = value writes into the source's tensors, sub-tensordicts included."""
    td = make_td()
    view = td.permute(2, 0, 1)
    view[0, 1] = TensorDict(
        {
            "a": torch.full((3, 4), 2.0),
            "n": TensorDict({"b": torch.full((3, 5, 2), 3.0)}, [3, 5]),
        },
        [3],
    )
    assert (td["a"][1] == 2).all() and (td["a"][0] == torch.arange(12.0).reshape(3, 1, 4)).all()
    assert (td["n", "b"][1] == 3).all() and (td["n", "b"][0] == 0).all()
    view[:, 0] = 5.0
    assert (td["a"][0] == 5).all()


@set_lazy_legacy(True)
def test_a_nested_key_set_on_a_transposed_view_reaches_the_source():
    """A new nested key set on a view makes the sub-tensordicts in the source."""
    td = make_td()
    view = td.transpose(0, 1)
    view.set(("some", "transposed", "tensor"), torch.zeros(view.shape))
    assert td.get(("some", "transposed", "tensor")).shape == td.shape


@set_lazy_legacy(True)
def test_a_sub_tensordict_read_in_legacy_mode_is_a_view_too():
    """A sub-tensordict of a view is a view of the source's sub-tensordict: writes reach it."""
    td = make_td()
    view = td.unsqueeze(0)
    sub = view["n"]
    assert sub.batch_size == torch.Size([1, 2, 3, 1, 5])
    sub.set("c", torch.ones(1, 2, 3, 1, 5))
    assert td["n", "c"].shape == torch.Size([2, 3, 1, 5])


@set_lazy_legacy(True)
def test_a_shape_call_on_a_view_that_does_not_undo_it_gives_a_view_of_the_view():
    """In the legacy mode, a view of a view still writes through to the first source."""
    td = make_td()
    view = td.permute(2, 0, 1).squeeze(0)
    assert view.batch_size == torch.Size([2, 3])
    view.set("new", torch.ones(2, 3))
    assert td["new"].shape == torch.Size([2, 3, 1])


@pytest.mark.parametrize("name", ["permute", "transpose", "unsqueeze", "squeeze", "view"])
def test_outside_the_legacy_mode_shape_calls_on_a_view_raise(name):
    """Outside the legacy mode, a shape call that changes a view is a RuntimeError."""
    with set_lazy_legacy(True):
        view = VIEWS[name][0](make_td())
    calls = [lambda v: v.unsqueeze(0), lambda v: v.view(1, -1)]
    if view.batch_dims > 1:
        calls.append(lambda v: v.permute(*reversed(range(v.ndim))))
    for call in calls:
        with pytest.raises(RuntimeError):
            call(view)


def test_outside_the_legacy_mode_reshape_and_flatten_give_a_tensordict():
    """reshape() and flatten() of a view give a new dense tensordict."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    assert type(view.reshape(-1)) is TensorDict
    assert view.reshape(-1).batch_size == torch.Size([6])
    assert type(view.flatten(0, 1)) is TensorDict


@pytest.mark.parametrize(
    "call",
    [
        lambda v: v.select("a", inplace=True),
        lambda v: v.exclude("a", inplace=True),
        lambda v: v.flatten_keys(inplace=True),
    ],
    ids=["select", "exclude", "flatten_keys"],
)
def test_in_place_key_changes_raise(call):
    """select/exclude/flatten_keys with inplace=True on a view are RuntimeErrors."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    with pytest.raises(RuntimeError):
        call(view)


def test_out_of_place_key_changes_give_a_tensordict():
    """select/exclude without inplace give a dense tensordict of the view's layout."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    out = view.select("a")
    assert type(out) is TensorDict and out["a"].shape == torch.Size([1, 2, 3, 4])
    assert type(view.exclude("a")) is TensorDict


def test_the_batch_size_and_names_of_a_view_cannot_be_set():
    """Setting batch_size or names on a view is a RuntimeError: they follow the source."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    with pytest.raises(RuntimeError):
        view.batch_size = [1, 2]
    with pytest.raises(RuntimeError):
        view.names = ["p", "q", "r"]


def test_casting_a_view_in_place_is_a_type_error():
    """to(dtype, inplace=True) on a view is a TypeError; out of place it casts."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    with pytest.raises(TypeError):
        view.to(torch.float64, inplace=True)
    assert view.to(torch.float64)["a"].dtype == torch.float64


def test_deleting_and_locking_act_on_the_source():
    """del_ on a view removes the source's entry; lock_ locks the source."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    view.del_("a")
    assert "a" not in td.keys()
    view.lock_()
    assert td.is_locked
    view.unlock_()
    assert not td.is_locked


def test_a_sub_tensordict_read_outside_the_legacy_mode_is_dense():
    """Outside the legacy mode a view's sub-tensordict is a TensorDict in the view's layout."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    sub = view["n"]
    assert type(sub) is TensorDict
    assert sub.batch_size == torch.Size([1, 2, 3, 5])


def test_to_tensordict_copies():
    """to_tensordict() of a view is a TensorDict that shares no memory with the source."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    dense = view.to_tensordict()
    assert type(dense) is TensorDict
    dense["a"].zero_()
    assert td["a"].sum() > 0


def test_indexing_a_view_gives_a_tensordict_sharing_memory():
    """view[i] is a dense tensordict whose leaves are views of the source's."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    row = view[0]
    assert type(row) is TensorDict and row.batch_size == torch.Size([2, 3])
    row["a"].fill_(-1.0)
    assert (td["a"] == -1).all()


@ours_only  # the reference's views repr as "_PermutedTensorDict(source=..., op=...)"
def test_a_view_repr_names_its_source_and_call():
    """The repr of a view shows its source and the call that made it."""
    with set_lazy_legacy(True):
        view = make_td().permute(2, 0, 1)
    text = repr(view)
    assert "source=TensorDict" in text and "permute(2, 0, 1)" in text


@ours_only  # the reference's messages differ; the classes (RuntimeError) are the same
def test_the_errors_name_the_view_and_the_way_out():
    """The errors of a view say which view it is and what to do instead."""
    with set_lazy_legacy(True):
        view = make_td().unsqueeze(0)
    with pytest.raises(RuntimeError, match="lazy unsqueeze view.*to_tensordict"):
        view.permute(1, 0, 2, 3)
    with pytest.raises(RuntimeError, match=r"select\(inplace=True\).*lazy unsqueeze view"):
        view.select("a", inplace=True)


def test_nested_writes_reach_the_source_outside_the_legacy_mode():
    """A nested key set, renamed or defaulted on a view lands in the source, in any mode."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    view["p", "q"] = torch.ones(1, 2, 3)
    assert td["p", "q"].shape == torch.Size([2, 3, 1])
    view.rename_key_(("p", "q"), ("p", "r"))
    assert ("p", "r") in td.keys(True) and ("p", "q") not in td.keys(True)
    view.setdefault(("p", "s"), torch.zeros(1, 2, 3))
    assert td["p", "s"].shape == torch.Size([2, 3, 1])


def test_exclude_of_a_nested_key_leaves_the_source_alone():
    """exclude() of a nested key on a view gives a tensordict without it; the source keeps it."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    out = view.exclude("a", ("n", "b"))
    assert ("n", "b") not in out.keys(True) and "a" not in out.keys()
    assert ("n", "b") in td.keys(True) and "a" in td.keys()


@set_lazy_legacy(True)
def test_a_non_tensor_entry_reads_as_a_non_tensor_value():
    """A non-tensor entry of the source reads from a view as a non-tensor value, not a view."""
    td = make_td()
    td["text"] = "hello"
    view = td.squeeze(-1)
    assert view["text"] == "hello"


@set_lazy_legacy(True)
def test_a_lazy_stack_viewed_writes_into_its_members():
    """view() of a lazy stack in the legacy mode is a view: a set reaches the members."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(3, 2)}, [3]) for _ in range(4)])
    flat = stack.view(-1)
    assert flat.batch_size == torch.Size([12])
    flat.set("a", torch.ones(12, 2))
    assert all((member["a"] == 1).all() for member in stack.tensordicts)
    assert flat.view(4, 3) is stack


def test_split_keys_in_place_takes_the_keys_out_of_the_source():
    """split_keys(inplace=True) on a view moves the keys out of the source, as del_ does."""
    with set_lazy_legacy(True):
        td = make_td()
        view = td.permute(2, 0, 1)
    out, rest = view.split_keys(["a"], inplace=True)
    assert list(out.keys()) == ["a"] and out["a"].shape == torch.Size([1, 2, 3, 4])
    assert "a" not in rest.keys()
    assert "a" not in td.keys() and "n" in td.keys()


def test_refine_names_of_a_view_is_refused():
    """refine_names() on a view is a RuntimeError; its names stay those of the source."""
    with set_lazy_legacy(True):
        view = TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).permute(1, 0)
    with pytest.raises(RuntimeError):
        view.refine_names("y", "x")
    assert view.names == [None, None]


@pytest.mark.parametrize("name", ["permute", "transpose", "unsqueeze", "squeeze", "view"])
@set_lazy_legacy(True)
def test_to_with_a_batch_size_is_a_type_error(name):
    """to(batch_size=...) on a view is a TypeError, alone or with a device and a dtype, even
    for the view's own batch size: the batch size of a view follows its source."""
    view = VIEWS[name][0](make_td())
    for args in ((), (torch.device("cpu"), torch.int32)):
        for batch_size in (torch.Size([]), view.batch_size):
            with pytest.raises(TypeError):
                view.to(*args, batch_size=batch_size)
    assert view.to(torch.int32)["a"].dtype == torch.int32


@pytest.mark.parametrize("name", ["permute", "transpose", "unsqueeze", "squeeze", "view"])
@set_lazy_legacy(True)
def test_a_view_of_a_locked_sub_tensordict_cannot_be_unlocked_alone(name):
    """unlock_() on a view of a sub-tensordict of a locked tensordict raises RuntimeError and
    leaves it locked, as unlocking the sub-tensordict itself does; once the locked parent is
    gone, it unlocks."""
    make = VIEWS[name][0]
    view = make(
        TensorDict({"a": torch.zeros(2, 3, 1, 4), "some": {"b": torch.zeros(2, 3, 1)}}, [2, 3, 1])
    )
    view.lock_()
    some = view.get("some")
    assert some.is_locked
    with pytest.raises(RuntimeError):
        some.unlock_()
    assert some.is_locked and view.is_locked
    del view
    gc.collect()
    assert not some.unlock_().is_locked


@pytest.mark.parametrize(
    ("name", "source_size", "make"),
    [
        ("view", [4, 4], lambda td: td.view(-1)),
        ("unsqueeze", [16], lambda td: td.unsqueeze(-1)),
        ("squeeze", [16, 1], lambda td: td.squeeze(-1)),
    ],
)
@set_lazy_legacy(True)
def test_index_writes_fill_an_empty_view(name, source_size, make):
    """Writing a tensordict with new keys at each index of an empty view creates the entries in
    the source, in its layout, and each row holds what was written there."""
    source = TensorDict(batch_size=source_size)
    view = make(source)
    rows = []
    for i in range(16):
        row = TensorDict({"a": torch.full((10,), float(i)), "b": torch.ones(1)}, [])
        if name == "unsqueeze":
            row = row.unsqueeze(-1).to_tensordict()
        view[i] = row
        rows.append(row)
    assert source["a"].shape == torch.Size([*source_size, 10])
    assert (view.get("b") == 1).all()
    for i, row in enumerate(rows):
        assert (view[i]["a"] == row["a"]).all()
