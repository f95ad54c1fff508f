"""LazyStackedTensorDict and lazy_stack: members kept, keys shared, reads stacked, writes split."""

from __future__ import annotations

import json
import os

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    assert_close,
    lazy_stack,
    set_list_to_stack,
    tensorclass,
)

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")


def episodes():
    """Three members whose 'r' differ in length and where only the first has 'extra'."""
    return [
        TensorDict(
            {"obs": torch.full((2,), float(i)), "r": torch.arange(n, dtype=torch.float32)}, []
        )
        for i, n in enumerate((3, 5, 4))
    ]


def same_shape(n: int = 3):
    return [
        TensorDict({"a": torch.full((4, 2), float(i)), "b": {"c": torch.full((4,), float(i))}}, [4])
        for i in range(n)
    ]


def test_batch_size_inserts_the_stack_dimension():
    """The batch size is the members' with the number of members at stack_dim."""
    assert lazy_stack(same_shape(), 0).batch_size == torch.Size([3, 4])
    assert lazy_stack(same_shape(), 1).batch_size == torch.Size([4, 3])
    assert lazy_stack(same_shape(), -1).stack_dim == 1


def test_keys_are_those_every_member_has():
    """A key that only one member has is not a key of the stack."""
    members = episodes()
    members[0]["extra"] = torch.zeros(())
    stack = lazy_stack(members)
    assert sorted(stack.keys()) == ["obs", "r"]
    assert "extra" not in stack.keys()


def test_get_stacks_the_members_leaves():
    """Reading a leaf of equal shapes stacks it along the stack dimension."""
    stack = lazy_stack(same_shape(), 1)
    assert stack["a"].shape == torch.Size([4, 3, 2])
    assert torch.equal(stack["a"][:, 2], torch.full((4, 2), 2.0))
    assert stack["b", "c"].shape == torch.Size([4, 3])


def test_get_of_leaves_with_different_shapes_raises_naming_the_key():
    """Different shapes cannot be stacked densely: RuntimeError naming the key and the shapes."""
    with pytest.raises(RuntimeError, match="'r'.*shapes differ"):
        lazy_stack(episodes())["r"]


def test_get_as_nested_tensor_keeps_each_members_shape():
    """as_nested_tensor=True returns a jagged nested tensor of the members' leaves (strided on request)."""
    nested = lazy_stack(episodes()).get("r", as_nested_tensor=True)
    assert nested.is_nested and nested.layout is torch.jagged
    assert [t.shape[0] for t in nested.unbind()] == [3, 5, 4]
    strided = lazy_stack(episodes()).get("r", as_nested_tensor=True, layout=torch.strided)
    assert strided.layout is torch.strided


def test_get_as_list_gives_each_members_leaf():
    """as_list=True gives the members' leaves in a list, through nested keys and outer tensordicts."""
    stack = lazy_stack(episodes())
    assert [t.shape for t in stack.get("r", as_list=True)] == [(3,), (5,), (4,)]
    outer = TensorDict({"inner": stack}, [3])
    assert [t.shape for t in outer.get(("inner", "r"), as_list=True)] == [(3,), (5,), (4,)]
    of_stacks = lazy_stack([stack, stack.clone()])
    assert [[t.shape[0] for t in row] for row in of_stacks.get("r", as_list=True)] == [
        [3, 5, 4]
    ] * 2


def test_get_as_padded_tensor_pads_every_dim():
    """as_padded_tensor=True pads each dim to its largest size, on the side and with the value asked."""
    stack = lazy_stack(
        [TensorDict({"a": torch.ones(2, 3)}, [2]), TensorDict({"a": torch.ones(2, 2)}, [2])], 1
    )
    padded = stack.get("a", as_padded_tensor=True)
    assert padded.shape == (2, 2, 3)  # the members along a new first dim, whatever the stack dim
    assert padded[1].tolist() == [[1.0, 1.0, 0.0]] * 2
    left = stack.get("a", as_padded_tensor=True, padding_side="left", padding_value=-1)
    assert left[1].tolist() == [[-1.0, 1.0, 1.0]] * 2
    of_stacks = lazy_stack([lazy_stack(episodes()), lazy_stack(episodes()[:2] * 2)[:3]])
    assert of_stacks.get("r", as_padded_tensor=True).shape == (2, 3, 5)


def test_get_as_nested_tensor_of_stacks_of_stacks_raises():
    """A nested tensor has one nested level: a stack of lazy stacks read as one is a ValueError."""
    stack = lazy_stack([lazy_stack(episodes()), lazy_stack(episodes())])
    with pytest.raises(ValueError):
        stack.get("r", as_nested_tensor=True)


def test_get_keywords_leave_dense_leaves_as_they_are():
    """A dense tensordict, and sub-tensordicts of a stack, are read as they are whatever the keywords say."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2])
    assert td.get("a", as_list=True).shape == (2, 3)
    assert td.get("a", as_padded_tensor=True).shape == (2, 3)
    stack = lazy_stack(
        [TensorDict({"n": {"x": torch.zeros(1)}}), TensorDict({"n": {"x": torch.zeros(2)}})]
    )
    assert isinstance(stack.get("n", as_list=True), LazyStackedTensorDict)


def test_get_with_a_bad_padding_side_raises():
    """padding_side is "left" or "right": another value is a RuntimeError."""
    with pytest.raises(RuntimeError):
        lazy_stack(episodes()).get("r", as_padded_tensor=True, padding_side="up")


@ours_only  # the reference reads with one of them and ignores the others
def test_get_with_two_ways_of_reading_raises():
    """as_list, as_padded_tensor and as_nested_tensor exclude one another: TypeError."""
    with pytest.raises(TypeError, match="at most one"):
        lazy_stack(episodes()).get("r", as_list=True, as_padded_tensor=True)


def test_indexing_the_stack_dimension_returns_members():
    """An int on the stack dimension returns that member itself; a slice a smaller stack."""
    members = episodes()
    stack = lazy_stack(members)
    assert stack[1] is members[1]
    part = stack[1:]
    assert isinstance(part, LazyStackedTensorDict)
    assert part.tensordicts == members[1:]
    picked = stack[torch.tensor([2, 0])]
    assert picked.tensordicts == [members[2], members[0]]


def test_indexing_other_dimensions_indexes_each_member():
    """An index on another batch dim is applied to every member."""
    stack = lazy_stack(same_shape(), 0)
    row = stack[:, 1]
    assert row.batch_size == torch.Size([3])
    assert torch.equal(row["a"][:, 0], torch.tensor([0.0, 1.0, 2.0]))
    assert stack[2, 3]["b", "c"] == 2.0


def test_set_splits_the_value_across_members():
    """Setting a key gives each member its slice along the stack dimension."""
    members = same_shape()
    stack = lazy_stack(members, 1)
    stack["z"] = torch.arange(12.0).reshape(4, 3)
    for i, member in enumerate(members):
        assert torch.equal(member["z"], torch.arange(12.0).reshape(4, 3)[:, i])


def test_index_assignment_writes_into_the_members():
    """Assigning to an index of the stack dimension writes into that member."""
    members = same_shape()
    stack = lazy_stack(members)
    stack[1] = TensorDict({"a": torch.ones(4, 2) * 9, "b": {"c": torch.ones(4) * 9}}, [4])
    assert (members[1]["a"] == 9).all()
    assert (members[0]["a"] == 0).all()


def test_apply_maps_every_member_and_stays_lazy():
    """apply works member by member, so members of different shapes are fine."""
    out = lazy_stack(episodes()).apply(lambda x: x * 2)
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out.tensordicts[1]["r"], torch.arange(5.0) * 2)


def test_contiguous_makes_a_dense_tensordict():
    """contiguous() and to_tensordict() stack every shared entry into a TensorDict."""
    dense = lazy_stack(same_shape()).contiguous()
    assert type(dense) is TensorDict
    assert dense["a"].shape == torch.Size([3, 4, 2])
    assert type(lazy_stack(same_shape()).to_tensordict()) is TensorDict


def test_unbind_on_the_stack_dimension_returns_the_members():
    """unbind(stack_dim) gives the members back."""
    members = same_shape()
    assert list(lazy_stack(members, 0).unbind(0)) == members


def test_torch_stack_with_a_lazy_member_is_lazy():
    """torch.stack of lazy stacks keeps them lazy."""
    out = torch.stack([lazy_stack(episodes()), lazy_stack(episodes())], 0)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([2, 3])


def test_members_with_different_batch_sizes_make_a_ragged_stack():
    """Members of different batch sizes give -1 where they differ; strict_shape refuses them."""
    assert lazy_stack([TensorDict({}, [3, 5]), TensorDict({}, [4, 5])], -1).batch_size == (-1, 5, 2)
    with pytest.raises(RuntimeError):
        lazy_stack([TensorDict({}, [3]), TensorDict({}, [2])], strict_shape=True)
    with pytest.raises(RuntimeError):
        LazyStackedTensorDict(TensorDict({}, [3]), TensorDict({}, [2]), strict_shape=True)


def test_members_with_different_numbers_of_batch_dims_are_refused():
    """Members must share their number of batch dims: RuntimeError naming both batch sizes."""
    with pytest.raises(RuntimeError):
        lazy_stack([TensorDict({}, [3]), TensorDict({}, [])])


def test_a_ragged_stack_indexes_through_its_members():
    """Indices of a ragged stack reach each member, which checks them against its own size."""
    stack = LazyStackedTensorDict(
        TensorDict(a=torch.zeros(3, 4), batch_size=[3, 4]),
        TensorDict(a=torch.ones(3, 5), batch_size=[3, 5]),
        stack_dim=1,
    )
    assert stack.batch_size == (3, 2, -1)
    assert stack[0].batch_size == (2, -1)
    assert stack[:, :, 0].batch_size == (3, 2)
    assert stack[:, :, -2:].batch_size == (3, 2, 2)
    assert stack[:, 1]["a"].shape == (3, 5)
    assert [a.shape for a in stack.get("a", as_list=True)] == [(3, 4), (3, 5)]
    with pytest.raises(ValueError):
        stack.unbind(2)


def test_torch_stack_of_lazy_stacks_of_different_batch_sizes_raises():
    """torch.stack needs one batch size, lazy stacks included: RuntimeError."""
    with pytest.raises(RuntimeError):
        torch.stack([lazy_stack([TensorDict({}, [3])]), lazy_stack([TensorDict({}, [4])])])


def test_lock_locks_every_member():
    """Locking the stack locks its members."""
    members = same_shape()
    stack = lazy_stack(members).lock_()
    assert stack.is_locked and all(m.is_locked for m in members)
    with pytest.raises(RuntimeError, match="locked"):
        stack["new"] = torch.zeros(3, 4)


# ---------------------------------------------------------------------------- memory mapping
def test_memmap_writes_one_folder_per_member(tmp_path):
    """The folder holds meta.json with the lazy fields and members 0/, 1/, 2/."""
    lazy_stack(episodes()).memmap(tmp_path / "s")
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta == {
        "_type": "<class 'tensordict._lazy.LazyStackedTensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:LazyStackedTensorDict",
        "stack_dim": 0,
        "stack_dim_name": None,
    }
    assert sorted(n for n in os.listdir(tmp_path / "s") if n != "meta.json" and "%" not in n) == [
        "0",
        "1",
        "2",
    ]


def test_memmap_and_load_round_trip(tmp_path):
    """load_memmap gives a lazy stack of memory-mapped members with the same content."""
    lazy_stack(episodes()).memmap(tmp_path / "s")
    loaded = TensorDict.load_memmap(tmp_path / "s")
    assert isinstance(loaded, LazyStackedTensorDict)
    assert loaded.is_memmap() and loaded.saved_path == str(tmp_path / "s")
    assert [m["r"].shape[0] for m in loaded.tensordicts] == [3, 5, 4]
    assert torch.equal(loaded.tensordicts[2]["obs"], torch.full((2,), 2.0))


def test_a_smaller_stack_over_a_larger_one_leaves_no_stale_member(tmp_path):
    """Writing 2 members where 4 were gives back 2 members, not 4."""
    lazy_stack(same_shape(4)).memmap(tmp_path / "s")
    lazy_stack(same_shape(2)).memmap(tmp_path / "s")
    loaded = TensorDict.load_memmap(tmp_path / "s")
    assert len(loaded.tensordicts) == 2
    assert not (tmp_path / "s" / "3").exists()


def test_a_member_folder_missing_is_an_error(tmp_path):
    """A gap in the member numbering is refused, naming the missing member."""
    lazy_stack(same_shape(3)).memmap(tmp_path / "s")
    (tmp_path / "s" / "1").rename(tmp_path / "moved")
    with pytest.raises(ValueError, match=r"members \[1\] are missing"):
        TensorDict.load_memmap(tmp_path / "s")


def test_an_extra_member_folder_beyond_a_gap_is_an_error(tmp_path):
    """A stray member folder (5/ after 0/-2/) is refused rather than loaded."""
    lazy_stack(same_shape(3)).memmap(tmp_path / "s")
    (tmp_path / "s" / "0").rename(tmp_path / "s" / "5")
    with pytest.raises(ValueError, match="missing"):
        TensorDict.load_memmap(tmp_path / "s")


def test_make_memmap_from_storage_gives_each_member_a_view_of_the_one_storage(tmp_path):
    """A storage without a file: each member's entry is its slice of the storage, no copy."""
    stack = lazy_stack(same_shape(3), 0).memmap()
    storage = torch.UntypedStorage(3 * 4 * 4)
    out = stack.make_memmap_from_storage("x", storage, (3, 4))
    out.copy_(torch.arange(12.0).reshape(3, 4))
    for i, member in enumerate(stack.tensordicts):
        assert torch.equal(member["x"], torch.arange(12.0).reshape(3, 4)[i])
        assert member["x"].untyped_storage().data_ptr() == storage.data_ptr()


def test_make_memmap_from_storage_with_a_file_raises_on_a_lazy_stack(tmp_path):
    """Each member keeps its own files, so a storage with a file is refused with RuntimeError."""
    stack = lazy_stack(same_shape(3), 0).memmap(tmp_path / "s")
    storage = torch.UntypedStorage.from_file(str(tmp_path / "x.memmap"), shared=True, nbytes=48)
    with pytest.raises(RuntimeError, match="storage with a file"):
        stack.make_memmap_from_storage("x", storage, (3, 4))
    assert all("x" not in m.keys() for m in stack.tensordicts)


def test_make_memmap_from_tensor_writes_each_members_slice_to_its_folder(tmp_path):
    """Each member gets its slice in its own folder, and the folder loads with it."""
    stack = lazy_stack(same_shape(3), 0).memmap(tmp_path / "s")
    stack.make_memmap_from_tensor("y", torch.arange(12.0).reshape(3, 4))
    loaded = TensorDict.load_memmap(tmp_path / "s")
    assert torch.equal(loaded["y"], torch.arange(12.0).reshape(3, 4))


def test_memmap_refresh_sees_members_added_to_the_folder(tmp_path):
    """A reader's memmap_refresh_() picks up entries added to the members by a writer."""
    writer = lazy_stack(same_shape(2), 0).memmap(tmp_path / "s")
    reader = TensorDict.load_memmap(tmp_path / "s")
    writer.make_memmap_from_tensor("y", torch.ones(2, 4))
    assert "y" not in reader.keys()
    assert reader.memmap_refresh_() is reader
    assert torch.equal(reader["y"], torch.ones(2, 4))


def test_torch_stack_into_a_lazy_stack_writes_its_members():
    """torch.stack(..., out=lazy) writes into the lazy stack's members."""
    a = TensorDict({"x": torch.ones(3)}, [3])
    out = lazy_stack([a.clone() * 0, a.clone() * 0])
    torch.stack([a, a], 0, out=out)
    assert (out.tensordicts[1]["x"] == 1).all()


def test_lazy_stack_takes_input_by_name():
    """lazy_stack(input=...) names its sequence as the well-known API does."""
    parts = [TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(2)]
    assert lazy_stack(input=parts).batch_size == torch.Size([2, 3])


def test_lazy_reshape_and_view_take_the_keywords():
    """A lazy stack takes reshape(size=) and view(dtype, batch_size=) too."""
    stack = lazy_stack([TensorDict({"x": torch.zeros(3, 2)}, [3]) for _ in range(2)])
    assert stack.reshape(size=(6,)).batch_size == torch.Size([6])
    viewed = stack.view(torch.uint8, batch_size=[])
    assert viewed.batch_size == torch.Size([]) and viewed["x"].dtype == torch.uint8


def hetero(offset: float = 0.0) -> LazyStackedTensorDict:
    """Two members whose "a" differ in feature shape, and a "b" they share."""
    return lazy_stack(
        [
            TensorDict({"a": torch.full((3, 4), offset), "b": torch.zeros(3)}, [3]),
            TensorDict({"a": torch.full((3, 5), offset), "b": torch.zeros(3)}, [3]),
        ]
    )


def test_update_and_update_from_a_stack_of_different_shapes():
    """update and update_ with a lazy stack of ragged members write member by member."""
    target, source = hetero(), hetero(1.0)
    target.update(source)
    assert [m["a"].sum().item() for m in target.tensordicts] == [12.0, 15.0]
    target = hetero()
    kept = target.tensordicts[1]["a"]
    target.update_(hetero(2.0))
    assert target.tensordicts[1]["a"] is kept
    assert (kept == 2).all()


def test_update_of_a_dense_entry_with_a_lazy_stack_makes_it_lazy():
    """A dense sub-tensordict updated from a lazy stack of ragged members becomes a lazy stack of its slices."""
    dense = TensorDict({"sub": {"a": torch.zeros(2, 3, 4), "only": torch.ones(2, 3)}}, [2])
    dense.update(TensorDict({"sub": hetero(1.0)}, [2]))
    sub = dense.get("sub")
    assert isinstance(sub, LazyStackedTensorDict)
    assert [m["a"].shape for m in sub.tensordicts] == [(3, 4), (3, 5)]
    assert (sub["only"] == 1).all()


def test_update_batch_size_takes_the_source_batch_size():
    """update(update_batch_size=True) takes a source of another batch size, dense or lazy."""
    for make in (lambda td: td, lambda td: td.to_lazystack(0)):
        td = TensorDict(a=torch.zeros(3, 4), b=torch.zeros(3, 4), batch_size=[3, 4])
        td = make(td)
        source = TensorDict(a=torch.ones(2, 4), b=torch.ones(2, 4), batch_size=[2, 4])
        td.update(source, update_batch_size=True)
        assert td.batch_size == (2, 4)
        assert (td["a"] == 1).all()


def test_update_batch_size_refuses_to_leave_entries_behind():
    """update_batch_size with a source that lacks one of the keys is a RuntimeError."""
    td = TensorDict(a=torch.zeros(3), c=torch.zeros(3), batch_size=[3])
    with pytest.raises(RuntimeError):
        td.update(TensorDict(a=torch.ones(2), batch_size=[2]), update_batch_size=True)


def test_comparisons_of_ragged_stacks():
    """== of lazy stacks of ragged members compares member by member; all() and any() answer."""
    stack = hetero()
    assert (stack == stack.clone()).all()
    assert not (stack.exclude("b") == hetero(1.0).exclude("b")).any()


def test_assert_close_compares_lazy_stacks_member_by_member():
    """assert_close compares lazy stacks of ragged members member by member."""
    assert assert_close(hetero(), hetero())
    with pytest.raises(AssertionError):
        assert_close(hetero(), hetero(1.0))


def test_select_keeps_the_members_leaves():
    """select on a lazy stack selects in each member: the leaves are shared, not stacked copies."""
    members = same_shape()
    selected = lazy_stack(members).select("a")
    assert isinstance(selected, LazyStackedTensorDict)
    assert selected.tensordicts[1]["a"] is members[1]["a"]
    members[1].zero_()
    assert (selected["a"][1] == 0).all()


def test_copy_copies_the_members():
    """copy() of a lazy stack of ragged members copies each member, sharing the leaves."""
    stack = lazy_stack([lazy_stack(episodes()), lazy_stack(episodes())])
    copy = stack.copy()
    assert copy.tensordicts[0] is not stack.tensordicts[0]
    assert copy.tensordicts[0].tensordicts[1]["r"] is stack.tensordicts[0].tensordicts[1]["r"]
    assert set(copy.keys(True, True)) == {"obs", "r"}


def test_membership_of_a_tensordict_is_by_identity():
    """`td in stack` is True for a member itself, False for an equal copy; `key in stack` checks keys."""
    members = same_shape()
    stack = lazy_stack(members)
    assert members[1] in stack and members[1].clone() not in stack
    assert "a" in stack and "missing" not in stack


def test_maybe_dense_stack_stacks_densely_what_it_can():
    """Equal keys give a dense tensordict whose differing sub-tensordicts stack lazily."""
    a = TensorDict({"x": 1, "sub": TensorDict({"c": 2}, [])}, [])
    b = TensorDict({"x": 1, "sub": TensorDict({"d": 2}, [])}, [])
    out = LazyStackedTensorDict.maybe_dense_stack([a, b])
    assert type(out) is TensorDict
    assert isinstance(out.get("sub"), LazyStackedTensorDict)
    ragged_a = LazyStackedTensorDict.maybe_dense_stack(episodes()[:2])
    assert isinstance(ragged_a, LazyStackedTensorDict)
    of_stacks = LazyStackedTensorDict.maybe_dense_stack([ragged_a, ragged_a.clone()])
    assert of_stacks.stack_dim == 1  # stacked member by member: each column is dense
    assert all(type(m) is TensorDict for m in of_stacks.tensordicts)


def test_setting_a_list_gives_each_member_its_item():
    """With list_to_stack, a (nested) list of the batch shape gives each member its items, shapes may differ."""
    with set_list_to_stack(True):
        stack = LazyStackedTensorDict(TensorDict(), TensorDict())
        stack["name"] = ["first", "second"]
        stack["r"] = [torch.ones(2), torch.ones(1)]
        assert stack[1]["name"] == "second"
        assert [r.shape for r in stack.get("r", as_list=True)] == [(2,), (1,)]
        grid = lazy_stack([lazy_stack([TensorDict() for _ in range(2)]) for _ in range(3)], 1)
        grid["x"] = [[torch.ones(3 * i + j + 1) for j in range(3)] for i in range(2)]
        assert [[grid[i, j]["x"].shape[0] for j in range(3)] for i in range(2)] == [
            [1, 2, 3],
            [4, 5, 6],
        ]


def test_all_of_a_tensordict_holding_a_ragged_stack():
    """all()/any() of a dense tensordict look into a ragged lazy sub-stack member by member."""
    outer = TensorDict({"lazy": hetero(1.0)}, [2]).exclude(("lazy", "b"))
    assert outer.all() and outer.any()
    assert not (outer == 0).any()


def test_expand_of_members_with_different_keys_stays_lazy():
    """Members whose keys differ are expanded one by one: no key is lost."""
    stack = lazy_stack([TensorDict({"a": [1]}, []), TensorDict({"b": [1]}, [])])
    out = stack.expand(10, 2)
    assert isinstance(out, LazyStackedTensorDict)
    assert "a" in out.tensordicts[0].keys() and "b" in out.tensordicts[1].keys()


def test_setting_a_dict_or_a_shorter_batch_tensordict_in_a_stack():
    """A dict, or a tensordict whose batch size starts the stack's, is set as a dense tensordict would set it."""
    stack = lazy_stack(same_shape(), 1)
    stack["d"] = {"e": torch.ones(4, 3, 2)}
    assert stack["d", "e"].shape == (4, 3, 2)
    inner = TensorDict({"x": torch.ones(4, 3)}, [])
    stack["inner"] = inner
    assert stack["inner"].batch_size == (4, 3) and inner.batch_size == ()


def test_create_nested_through_a_stack_reaches_the_members():
    """create_nested of a nested key in a lazy stack creates every level in every member."""
    stack = lazy_stack(same_shape())
    stack.create_nested(("some", "nested", "key"))
    assert stack.get(("some", "nested", "key")).batch_size == (3, 4)
    assert all(("some", "nested", "key") in m.keys(True) for m in stack.tensordicts)


def test_load_state_dict_writes_into_the_members():
    """load_state_dict writes a lazy stack's members' own tensors."""
    stack = lazy_stack(same_shape())
    state = stack.state_dict()
    target = stack.clone().zero_()
    target.load_state_dict(state)
    assert torch.equal(target["a"], stack["a"])


@tensorclass
class _Episode:
    """A tensorclass whose field "r" may differ in length across instances."""

    r: torch.Tensor


def test_tensorclass_over_a_ragged_stack_reads_with_get_keywords():
    """A tensorclass instance over a ragged lazy stack passes get's keywords on."""
    stack = lazy_stack([TensorDict(r=torch.ones(3)), TensorDict(r=torch.ones(2) * 2)])
    episode = _Episode.from_tensordict(stack)
    assert [r.shape for r in episode.get("r", as_list=True)] == [(3,), (2,)]
    assert episode.get("r", as_padded_tensor=True).shape == (2, 3)


def test_maybe_dense_stack_of_ragged_tensorclass_instances_keeps_the_class():
    """Instances that cannot be stacked densely give an instance of their class over a lazy stack."""
    out = LazyStackedTensorDict.maybe_dense_stack(
        [_Episode(r=torch.ones(3)), _Episode(r=torch.ones(2))]
    )
    assert type(out) is _Episode


def test_maybe_dense_stack_into_out():
    """maybe_dense_stack(out=td) writes the stack into td in place and returns it."""
    out = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    members = [TensorDict(a=torch.ones(3)), TensorDict(a=torch.full((3,), 2.0))]
    assert LazyStackedTensorDict.maybe_dense_stack(members, 0, out=out) is out
    assert out["a"][:, 0].tolist() == [1.0, 2.0]


def test_to_with_a_batch_size_raises_type_error_on_a_lazy_stack():
    """to(..., batch_size=) of a lazy stack raises TypeError; a TensorDict takes it."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(3, 2)}, [3]) for _ in range(2)], 1)
    with pytest.raises(TypeError):
        stack.to(torch.int32, batch_size=torch.Size([]))
    assert stack.to(torch.int32)["a"].dtype == torch.int32
    dense = TensorDict({"a": torch.zeros(3, 2)}, [3]).to(torch.int32, batch_size=torch.Size([]))
    assert dense.batch_size == torch.Size([]) and dense["a"].dtype == torch.int32
