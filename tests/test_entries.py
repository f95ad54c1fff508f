"""Reading, writing and removing entries (tensordict._ops.entries): get, set, update, pop, del, copies."""

from collections.abc import Mapping, MutableMapping

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    tensorclass,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


ALL_KEYS = {"a", "b", ("b", "c"), ("b", "d"), ("b", "d", "e")}


@tensorclass
class Point:
    x: torch.Tensor
    y: torch.Tensor


def make_td():
    """A tensordict with a leaf, a nested one and a nested one two levels down."""
    return TensorDict(
        {
            "a": torch.zeros(3, 4),
            "b": {"c": torch.ones(3), "d": {"e": torch.arange(3)}},
        },
        batch_size=[3],
    )


def make_wide_td():
    """A tensordict of three leaves, two of them in one nested tensordict."""
    return TensorDict(
        a=torch.zeros(3, 2),
        b={"c": torch.zeros(3), "d": torch.ones(3)},
        e=torch.ones(3),
        batch_size=[3],
    )


def leaves(td):
    """The leaf keys of ``td``, sorted."""
    return sorted(td.keys(include_nested=True, leaves_only=True), key=str)


# --- get ----------------------------------------------------------------------


def test_get_and_getitem():
    """get and [] return the stored tensor, for string and nested keys."""
    td = make_td()
    assert td.get("a") is td["a"]
    assert td.get(("b", "d", "e")) is td["b", "d", "e"]
    assert td["b"]["d"]["e"] is td["b", "d", "e"]
    assert td["b"] is td["b"]


def test_get_default():
    """get(key, default) returns the default for a missing key, even nested."""
    td = make_td()
    assert td.get("nope", None) is None
    assert td.get(("b", "nope"), "dflt") == "dflt"
    assert td.get(("b", "nope"), default=7) == 7


def test_getitem_missing_raises_key_error():
    """A missing key raises KeyError naming it."""
    with pytest.raises(KeyError, match="nope"):
        make_td()["nope"]


def test_getitem_missing_nested_raises_key_error():
    """A missing nested key raises KeyError naming the missing part."""
    with pytest.raises(KeyError, match="nope"):
        make_td()["b", "d", "nope"]


def test_get_missing_returns_none():
    """get without a default returns None for a missing key, as dict.get does."""
    td = make_td()
    assert td.get("nope") is None
    assert td.get(("b", "nope")) is None


def test_missing_nested_key_error_names_full_key():
    """The KeyError for a missing nested key names every part of the key."""
    with pytest.raises(KeyError) as info:
        make_td()["b", "d", "nope"]
    message = str(info.value)
    for part in ("'b'", "'d'", "'nope'"):
        assert part in message


def test_get_through_a_leaf_raises():
    """A nested key that goes through a tensor is an error naming the leaf."""
    with pytest.raises(ValueError, match="a"):
        make_td().get(("a", "x"))


@pytest.mark.parametrize("key", [1, ("b", 1), None])
def test_key_of_wrong_type_raises_type_error(key):
    """A key that is not a string or tuple of strings is a TypeError."""
    td = make_td()
    with pytest.raises(TypeError):
        td.get(key)
    with pytest.raises(TypeError):
        td.set(key, torch.zeros(3))


# --- reading one entry --------------------------------------------------------


def test_get_at():
    """get_at indexes the entry, or returns the default for a missing key."""
    td = TensorDict(x=torch.arange(3), n={"y": torch.arange(3)}, batch_size=[3])
    assert td.get_at("x", 1) == 1
    assert td.get_at(("n", "y"), slice(0, 2)).tolist() == [0, 1]
    assert td.get_at("n", 0).batch_size == torch.Size([])
    assert td.get_at("z", 1) is None
    assert td.get_at("z", 1, 5) == 5
    assert td.get_at("z", 1, default=6) == 6
    with pytest.raises(TypeError):
        td.get_at("x")
    with pytest.raises(IndexError):
        td.get_at("x", 7)


def test_get_item_shape_and_entry_class():
    """get_item_shape gives the entry's shape; entry_class its type."""
    td = make_wide_td()
    assert td.get_item_shape("a") == torch.Size([3, 2])
    assert td.get_item_shape("b") == torch.Size([3])
    assert td.entry_class("a") is torch.Tensor
    assert td.entry_class("b") is TensorDict
    assert td.entry_class("z") is type(None)
    with pytest.raises(KeyError):
        td.get_item_shape("z")


def test_get_item_shape_lazy_ragged():
    """On a lazy stack, a size that differs between members is -1."""
    stack = lazy_stack([TensorDict(x=torch.zeros(2, 3)), TensorDict(x=torch.zeros(2, 4))])
    assert stack.get_item_shape("x") == torch.Size([2, 2, -1])
    assert stack.entry_class("x") is torch.Tensor
    assert isinstance(stack, LazyStackedTensorDict)


def test_is_non_tensor():
    """is_non_tensor tells non-tensor entries apart; a missing key raises KeyError."""
    td = TensorDict(obs=torch.zeros(2), label=NonTensorData("cat"))
    assert td.is_non_tensor("label")
    assert not td.is_non_tensor("obs")
    with pytest.raises(KeyError):
        td.is_non_tensor("z")


# --- set / set_ ---------------------------------------------------------------


def test_set_new_and_nested():
    """set adds entries, creating missing sub-tensordicts of a nested key."""
    td = make_td()
    x = torch.zeros(3, 2)
    assert td.set(("x", "y"), x) is td
    assert td["x", "y"] is x
    assert td["x"].batch_size == torch.Size([3])


def test_set_dict_value_becomes_tensordict():
    """Setting a dict stores a sub-tensordict with the parent's batch size."""
    td = make_td()
    td["x"] = {"y": torch.zeros(3, 5)}
    assert isinstance(td["x"], TensorDict)
    assert td["x"].batch_size == torch.Size([3])


def test_set_existing_rebinds():
    """set on an existing key replaces the tensor and leaves the old one untouched."""
    td = make_td()
    old = td["a"]
    new = torch.ones(3, 4)
    td.set("a", new)
    assert td["a"] is new
    assert old.sum() == 0


def test_set_wrong_batch_size_raises_naming_key():
    """set refuses a value whose leading dims are not the batch size, naming the key."""
    td = make_td()
    with pytest.raises(RuntimeError, match="new"):
        td.set("new", torch.zeros(4))
    assert "new" not in td


def test_set_through_a_leaf_raises():
    """Setting under a key that holds a tensor is a KeyError."""
    with pytest.raises(KeyError):
        make_td().set(("a", "y"), torch.zeros(3))


def test_failed_nested_set_creates_nothing():
    """A refused nested set does not leave new sub-tensordicts behind."""
    td = make_td()
    with pytest.raises(RuntimeError):
        td.set(("n", "x"), torch.zeros(4))
    assert set(td.keys(True)) == ALL_KEYS


def test_set__writes_in_place():
    """set_ copies into the existing tensor, keeping its identity and dtype."""
    td = make_td()
    old = td["a"]
    assert td.set_("a", torch.ones(3, 4, dtype=torch.int64)) is td
    assert td["a"] is old
    assert old.dtype == torch.float32
    assert old.sum() == 12


def test_set__nested():
    """set_ works with nested keys."""
    td = make_td()
    td.set_(("b", "d", "e"), torch.tensor([7, 8, 9]))
    assert td["b", "d", "e"].tolist() == [7, 8, 9]


def test_set__missing_key_raises():
    """set_ on a missing key is a KeyError naming it."""
    td = make_td()
    with pytest.raises(KeyError, match="nope"):
        td.set_("nope", torch.zeros(3))
    with pytest.raises(KeyError, match="nope"):
        td.set_(("b", "nope"), torch.zeros(3))
    assert "nope" not in td


def test_set__wrong_shape_raises():
    """set_ with a value of another shape is refused and changes nothing."""
    td = make_td()
    with pytest.raises((RuntimeError, ValueError)):
        td.set_("a", torch.ones(3, 5))
    assert td["a"].sum() == 0


def test_set_in_place_broadcasts_a_number():
    """set_ with a number fills the existing tensor, like the reference's update_."""
    td = TensorDict({"a": torch.ones(2, 3, 4)}, [2, 3])
    td.update_({"a": 0})
    assert (td["a"] == 0).all()


# --- create_nested ------------------------------------------------------------


def test_create_nested():
    """create_nested adds an empty tensordict with the parent's batch size and names."""
    td = TensorDict(
        a=torch.zeros(3, 4), b={"c": torch.zeros(3, 4)}, batch_size=[3, 4], names=["x", "y"]
    )
    td.create_nested(("b", "n"))
    assert td["b", "n"].batch_size == torch.Size([3, 4])
    assert "c" in td["b"].keys()
    td.create_nested(("a", "m"))
    assert td["a", "m"].is_empty()
    assert td.create_nested("q")["q"].names == ["x", "y"]


def test_create_nested_locked():
    """A locked tensordict refuses create_nested."""
    td = make_wide_td().lock_()
    with pytest.raises(RuntimeError):
        td.create_nested("q")
    assert "q" not in td.keys()


# --- update / update_ / setdefault / rows -------------------------------------


def test_update_merges_nested():
    """update sets every entry of a dict, merging into existing sub-tensordicts."""
    td = make_td()
    assert td.update({"a": torch.ones(3, 4), "b": {"c": torch.zeros(3)}, "n": torch.zeros(3)}) is td
    assert set(td.keys(True)) == ALL_KEYS | {"n"}
    assert td["a"].sum() == 12
    assert td["b", "c"].sum() == 0
    assert td["b", "d", "e"].tolist() == [0, 1, 2]


def test_update_from_tensordict():
    """update accepts a tensordict."""
    td = make_td()
    td.update(TensorDict({"n": torch.ones(3)}, [3]))
    assert td["n"].sum() == 3


def test_update_and_update_take_keyword_entries():
    """update(**entries) and update_(**entries) write the keyword arguments as entries."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td.update({"x": torch.ones(3)}, b=torch.ones(3))
    assert td.sorted_keys == ["a", "b", "x"]
    td.update_(a=torch.ones(3))
    assert (td["a"] == 1).all()
    stack = lazy_stack([TensorDict(a=torch.zeros(())) for _ in range(3)])
    stack.update(b=torch.ones(3))
    assert (stack["b"] == 1).all()


def test_update_batch_size_keeps_the_sub_tensordicts():
    """update_batch_size=True takes the source's batch sizes, level by level, keeping the objects there."""
    dest = TensorDict(
        td=TensorDict(
            foo=torch.ones(3),
            nested=TensorDict(bar=torch.ones(3, 5), batch_size=[3, 5]),
            batch_size=[3],
        ),
        stack=lazy_stack([TensorDict(r=torch.ones(n), batch_size=[n]) for n in (3, 4, 5)], -1),
    )
    source = TensorDict(
        td=TensorDict(
            foo=torch.zeros(2),
            nested=TensorDict(bar=torch.zeros(2, 4), batch_size=[2, 4]),
            batch_size=[2],
        ),
        stack=lazy_stack([TensorDict(r=torch.zeros(n), batch_size=[n]) for n in (3, 4)], -1),
    )
    nested, stack = dest["td", "nested"], dest["stack"]
    dest.update(source, update_batch_size=True)
    assert dest["td", "nested"] is nested and nested.batch_size == (2, 4)
    assert dest["stack"] is stack and stack.batch_size == (-1, 2)
    assert (dest["td", "foo"] == 0).all()


def test_update_from_another_batch_size_needs_update_batch_size():
    """Updating from a tensordict of another batch size is refused unless update_batch_size=True, which
    refuses inplace=, keys_to_update= and a locked destination."""
    small, large = (
        TensorDict(a=torch.zeros(3), batch_size=[3]),
        TensorDict(a=torch.ones(4), batch_size=[4]),
    )
    with pytest.raises(RuntimeError, match="update_batch_size"):
        small.update(large)
    with pytest.raises(RuntimeError, match="inplace"):
        small.update(large, update_batch_size=True, inplace=True)
    with pytest.raises(RuntimeError, match="keys_to_update"):
        small.update(large, update_batch_size=True, keys_to_update=["a"])
    with pytest.raises(RuntimeError, match="lock"):
        small.clone().lock_().update(large, update_batch_size=True)
    assert small.update(large, update_batch_size=True).batch_size == (4,)


def test_update_is_leaf_writes_sub_tensordicts_whole():
    """With is_leaf saying so, a sub-tensordict of the source replaces the one there."""
    dest = TensorDict(b=TensorDict(c=torch.zeros(2, 3), batch_size=[2, 3]), batch_size=[2])
    source = TensorDict(b=TensorDict(c=torch.zeros(2, 2, 4), batch_size=[2, 2]), batch_size=[2])
    dest.update(source, is_leaf=lambda cls: True)
    assert dest["b"].batch_size == (2, 2)


@pytest.mark.parametrize("key", [("a",), "a", ("a", "b"), (("a",), (("b",),))])
def test_update__keys_to_update_reaches_nested_keys(key):
    """update_(keys_to_update=) copies the values at or under the keys asked for, nested ones too."""

    def make(value):
        return TensorDict({"a": {"b": value, "c": {"x": value}}, "d": {"e": value}}, [])

    for source in (make(2), make(2).to_dict()):
        dest = make(1)
        dest.update_(source, keys_to_update=[key])
        assert (dest["a", "b"] == 2).all() and (dest["d", "e"] == 1).all()
        assert (dest["a", "c", "x"] == 2) == (key in (("a",), "a"))


def test_update_keys_to_update():
    """update(keys_to_update=...) only touches the given keys."""
    td = make_td()
    td.update({"a": torch.ones(3, 4), "n": torch.ones(3)}, keys_to_update=["n"])
    assert td["a"].sum() == 0
    assert "n" in td


def test_update__writes_in_place():
    """update_ copies into the existing tensors."""
    td = make_td()
    old = td["a"]
    assert td.update_({"a": torch.ones(3, 4), "b": {"c": torch.zeros(3)}}) is td
    assert td["a"] is old
    assert old.sum() == 12
    assert td["b", "c"].sum() == 0


def test_update__missing_key_raises():
    """update_ with a key the tensordict does not have is a KeyError naming it."""
    td = make_td()
    with pytest.raises(KeyError, match="zz"):
        td.update_({"zz": torch.ones(3)})
    assert "zz" not in td


def test_setdefault():
    """setdefault returns the existing value, or sets and returns the default."""
    td = make_td()
    assert td.setdefault("a", torch.ones(3, 4)) is td["a"]
    assert td["a"].sum() == 0
    assert td.setdefault("q", torch.ones(3)).sum() == 3
    assert td["q"].sum() == 3
    td.setdefault(("b", "r"), torch.ones(3))
    assert td["b", "r"].sum() == 3


def test_set_at_and_update_at_write_rows_in_place():
    """set_at_ and update_at_ write into the given rows of existing entries, nested ones included."""
    td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3, 2)}}, [3])
    td.set_at_("a", 5.0, 1)
    td.update_at_({"b": {"c": torch.ones(2)}}, 2)
    assert td["a"].tolist() == [0.0, 5.0, 0.0]
    assert td["b", "c"][2].tolist() == [1.0, 1.0] and (td["b", "c"][:2] == 0).all()
    with pytest.raises(KeyError, match="missing"):
        td.update_at_({"missing": torch.zeros(())}, 0)


# --- copy_at_ -----------------------------------------------------------------


def test_copy_at_writes_rows():
    """copy_at_ copies the tensors into the rows at idx, nested ones included."""
    td = make_wide_td()
    src = TensorDict(a=torch.ones(2), b={"c": torch.full((), 5.0)})
    assert td.copy_at_(src, 1) is td
    assert td["a"][:, 0].tolist() == [0.0, 1.0, 0.0]
    assert td["b", "c"].tolist() == [0.0, 5.0, 0.0]
    td.copy_at_(TensorDict(e=torch.zeros(2), batch_size=[2]), slice(1, 3))
    assert td["e"].tolist() == [1.0, 0.0, 0.0]


def test_copy_at_fast_refusals_leave_td_unchanged():
    """fast=True refuses a missing key, a dict source, a tensor index or a shape mismatch."""
    td = make_wide_td()
    for src, idx in [
        (TensorDict(a=torch.ones(2), z=torch.ones(2)), 1),
        ({"a": torch.ones(2)}, 1),
        (TensorDict(a=torch.ones(1, 2), batch_size=[1]), torch.tensor([1])),
        (TensorDict(a=torch.ones(2, 2), batch_size=[2]), slice(0, 1)),
    ]:
        with pytest.raises(RuntimeError):
            td.copy_at_(src, idx)
    assert td["a"].sum() == 0
    with pytest.raises(TypeError):
        td.copy_at_(TensorDict(a=torch.ones(2)), 1, fast=None)


def test_copy_at_slow_path_and_non_tensor():
    """fast=False goes through update_at_; non-tensor entries are skipped with a FutureWarning."""
    td = TensorDict(a=torch.zeros(3, 2), s=NonTensorData("x", batch_size=[3]), batch_size=[3])
    td.copy_at_(TensorDict(a=torch.ones(1, 2), batch_size=[1]), torch.tensor([0]), fast=False)
    assert td["a"][:, 0].tolist() == [1.0, 0.0, 0.0]
    with pytest.warns(FutureWarning):
        td.copy_at_(TensorDict(a=torch.full((2,), 2.0), s="y"), 2)
    assert td["a"][2].tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError):
        td.copy_at_(TensorDict(s="y"), 1)


def test_copy_at_locked_writes_in_place():
    """A locked tensordict accepts copy_at_, which writes in place."""
    td = make_wide_td().lock_()
    td.copy_at_(TensorDict(e=torch.zeros(())), 0)
    assert td["e"].tolist() == [0.0, 1.0, 1.0]


# --- pop / del_ / clear / popitem / rename_key_ -------------------------------


def test_pop():
    """pop removes and returns the entry."""
    td = make_td()
    a = td["a"]
    assert td.pop("a") is a
    assert "a" not in td
    c = td["b", "c"]
    assert td.pop(("b", "c")) is c
    assert ("b", "c") not in td
    assert "b" in td


def test_pop_default_and_missing():
    """pop returns the default for a missing key, or raises KeyError naming it."""
    td = make_td()
    assert td.pop("nope", None) is None
    with pytest.raises(KeyError, match="nope"):
        td.pop("nope")
    with pytest.raises(KeyError, match="x"):
        td.pop(("b", "x"))


def test_del_():
    """del_ removes a (nested) entry and returns the tensordict."""
    td = make_td()
    assert td.del_(("b", "d", "e")) is td
    assert set(td.keys(True)) == ALL_KEYS - {("b", "d", "e")}


def test_delitem():
    """`del td[key]` removes the entry, and a whole sub-tensordict."""
    td = make_td()
    del td["b"]
    assert list(td.keys(True)) == ["a"]


def test_delete_missing_raises():
    """Deleting a missing key is a KeyError naming it."""
    td = make_td()
    with pytest.raises(KeyError, match="nope"):
        td.del_("nope")
    with pytest.raises(KeyError, match="nope"):
        del td["b", "nope"]
    assert set(td.keys(True)) == ALL_KEYS


def test_rename_key_():
    """rename_key_ moves the entry without copying it."""
    td = make_td()
    a = td["a"]
    assert td.rename_key_("a", "z") is td
    assert "a" not in td
    assert td["z"] is a


def test_rename_key_nested():
    """rename_key_ moves entries between nesting levels."""
    td = make_td()
    c = td["b", "c"]
    td.rename_key_(("b", "c"), ("b", "x"))
    assert td["b", "x"] is c
    td.rename_key_(("b", "x"), "top")
    assert td["top"] is c
    assert ("b", "x") not in td


def test_rename_key_missing_raises():
    """Renaming a missing key is a KeyError naming it."""
    with pytest.raises(KeyError, match="nope"):
        make_td().rename_key_("nope", "q")


def test_rename_key_safe():
    """rename_key_(safe=True) refuses to overwrite an existing key."""
    td = make_td()
    td["z"] = torch.zeros(3)
    with pytest.raises(KeyError, match="z"):
        td.rename_key_("a", "z", safe=True)
    assert "a" in td
    assert td["a"].shape == (3, 4)


def test_clear_and_popitem():
    """clear empties the tensordict; popitem removes the last key and returns it."""
    td = make_wide_td()
    key, value = td.popitem()
    assert key == "e" and value.shape == torch.Size([3])
    assert list(td.keys()) == ["a", "b"]
    assert td.clear() is td
    assert td.is_empty() and td.batch_size == torch.Size([3])
    with pytest.raises(KeyError):
        td.popitem()


def test_clear_popitem_locked():
    """A locked tensordict refuses clear and popitem with RuntimeError and keeps its keys."""
    td = make_wide_td().lock_()
    with pytest.raises(RuntimeError):
        td.clear()
    with pytest.raises(RuntimeError):
        td.popitem()
    assert list(td.keys()) == ["a", "b", "e"]


def test_clear_memmapped_refuses(tmp_path):
    """A memory-mapped tensordict (locked) refuses clear."""
    td = make_wide_td().memmap(tmp_path / "td")
    with pytest.raises(RuntimeError):
        td.clear()
    assert TensorDict.load_memmap(tmp_path / "td")["a"].shape == torch.Size([3, 2])


# --- copies -------------------------------------------------------------------


def test_copy_is_structural():
    """copy gives new nested tensordicts with the same leaves."""
    td = make_wide_td()
    c = td.copy()
    assert c["a"] is td["a"]
    assert c["b"] is not td["b"]
    del c["b", "c"]
    assert ("b", "c") in td.keys(include_nested=True)


def test_copy_of_locked_is_unlocked_and_tensorclass_keeps_class():
    """The copy of a locked tensordict is unlocked; a tensorclass copy is of its class."""
    assert not make_wide_td().lock_().copy().is_locked
    p = Point(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    c = p.copy()
    assert type(c) is Point
    assert c.x is p.x


def test_replace_writes_into_a_copy():
    """replace returns a copy with the new entries; the original does not change."""
    td = make_wide_td()
    new = td.replace(a=torch.ones(3, 2), b={"c": torch.ones(3)})
    assert new["a"].sum() == 6 and td["a"].sum() == 0
    assert new["b", "c"].sum() == 3 and td["b", "c"].sum() == 0
    assert new["b", "d"] is td["b", "d"]
    assert new["e"] is td["e"]


def test_replace_nothing_returns_self_and_kwargs_win():
    """replace() with nothing returns self; keyword entries win over the positional ones."""
    td = make_wide_td()
    assert td.replace() is td
    new = td.replace({"e": torch.zeros(3)}, e=torch.full((3,), 2.0))
    assert new["e"].tolist() == [2.0, 2.0, 2.0]


def test_replace_bad_arguments():
    """Two positional arguments or a non-mapping raise RuntimeError; a bad value leaves td as it was."""
    td = make_wide_td()
    with pytest.raises(RuntimeError):
        td.replace({"a": 1}, {"a": 2})
    with pytest.raises(RuntimeError):
        td.replace(5)
    with pytest.raises(RuntimeError):
        td.replace(a=torch.ones(4))
    assert td["a"].shape == torch.Size([3, 2])


def test_replace_on_locked_and_tensorclass():
    """A locked tensordict gives an unlocked replaced copy; a tensorclass keeps its class."""
    td = make_wide_td().lock_()
    new = td.replace(z=torch.ones(3))
    assert "z" in new.keys() and "z" not in td.keys()
    p = Point(x=torch.zeros(2), y=torch.zeros(2), batch_size=[2])
    q = p.replace(x=torch.ones(2))
    assert type(q) is Point and q.x.sum() == 2 and p.x.sum() == 0


def test_tensorclass_reaches_entry_methods():
    """A tensorclass instance gets the entry methods through its tensordict."""
    p = Point(x=torch.zeros(3), y=torch.ones(3), batch_size=[3])
    assert p.get_item_shape("x") == torch.Size([3])
    assert p.get_at("y", 0) == 1
    assert p.depth == 0
    p.copy_at_(TensorDict(x=torch.ones(()), y=torch.zeros(())), 1)
    assert p.x.tolist() == [0.0, 1.0, 0.0]


# --- to_tensordict ------------------------------------------------------------


@tensorclass
class Sparse:
    x: torch.Tensor
    y: torch.Tensor = None


def test_to_tensordict_retain_none():
    """retain_none=True writes the None fields of tensorclasses, at any depth, as None entries."""
    s = Sparse(x=torch.zeros(2), batch_size=[2])
    assert list(s.to_tensordict().keys()) == ["x"]
    assert list(s.to_tensordict(retain_none=True).keys()) == ["x", "y"]
    td = TensorDict(a=s, b={"c": s}, batch_size=[2])
    out = td.to_tensordict(retain_none=True)
    assert ("b", "c", "y") in out.keys(include_nested=True)
    assert ("a", "y") not in td.to_tensordict().keys(include_nested=True)


def test_to_tensordict_plain_copies():
    """to_tensordict gives plain, unlocked TensorDicts at every depth, with copied tensors."""
    s = Sparse(x=torch.zeros(2), batch_size=[2])
    td = TensorDict(a=s, b={"c": torch.zeros(2)}, batch_size=[2]).lock_()
    out = td.to_tensordict()
    assert type(out["a"]) is TensorDict and not out.is_locked
    assert out["b", "c"] is not td["b", "c"]
    stack = lazy_stack([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(3))])
    dense = stack.to_tensordict(retain_none=True)
    assert type(dense) is TensorDict and dense["x"].shape == torch.Size([2, 3])


# --- the keyword arguments of the well-known API --------------------------------------


def test_set__and_set_at__take_non_blocking():
    """set_(..., non_blocking=) and set_at_(..., non_blocking=) write as without it."""
    td = make_td()
    td.set_("a", torch.ones(3, 4), non_blocking=True)
    td.set_at_(("b", "c"), 5.0, 1, non_blocking=True)
    assert (td["a"] == 1).all()
    assert td["b", "c"].tolist() == [1.0, 5.0, 1.0]


def test_setdefault_passes_inplace_to_set():
    """setdefault(key, default, inplace=True) stores a missing key as set(..., inplace=True) does."""
    td = make_td()
    assert (td.setdefault("new", torch.ones(3), inplace=True) == 1).all()
    kept = td["a"]
    assert td.setdefault("a", torch.ones(3, 4), inplace=True) is kept


def test_update_at__takes_idx_and_keys_to_update():
    """update_at_(source, idx=..., keys_to_update=[...]) writes only those keys at idx."""
    td = make_td()
    source = {"a": torch.ones(4), "b": {"c": torch.zeros(()), "d": {"e": torch.tensor(9)}}}
    td.update_at_(source, idx=1, keys_to_update=[("b", "d")], non_blocking=True)
    assert (td["a"] == 0).all()
    assert td["b", "c"].tolist() == [1.0, 1.0, 1.0]
    assert td["b", "d", "e"].tolist() == [0, 9, 2]
    assert td.update_at_(source, 0, keys_to_update=[]) is td
    assert td["b", "d", "e"].tolist() == [0, 9, 2]


def test_update_at__with_the_empty_index_writes_whole_entries():
    """update_at_(source, ()) writes each entry whole, as update_ does."""
    td = make_td()
    td.update_at_({"a": torch.ones(3, 4)}, ())
    assert (td["a"] == 1).all()


def test_set__of_a_value_that_does_not_fit_is_a_value_error():
    """set_ of a value that does not broadcast to the entry raises ValueError (also RuntimeError)."""
    td = TensorDict({"a": torch.zeros(())}, [])
    with pytest.raises(ValueError):
        td.set_("a", torch.zeros(2))
    with pytest.raises(RuntimeError):
        td.update_({"a": torch.zeros(2)})


def test_numpy_arrays_are_written_at_an_index_as_tensors():
    """set_at_ and td[index] = {key: array} take numeric numpy arrays, cast to the entry's dtype."""
    np = pytest.importorskip("numpy")
    td = TensorDict({"k": torch.zeros(4, 2), "sub": {"i": torch.zeros(4, dtype=torch.int64)}}, [4])
    td.set_at_("k", np.full(2, 42.0), 2)
    td[1] = {"k": np.full(2, 3.0)}
    td["sub"][0] = {"i": np.array(7)}
    assert td["k"].tolist() == [[0.0, 0.0], [3.0, 3.0], [42.0, 42.0], [0.0, 0.0]]
    assert td["k"].dtype == torch.float32 and td["sub", "i"].tolist() == [7, 0, 0, 0]


def test_a_tensordict_is_a_mutable_mapping_and_a_tensorclass_is_not():
    """TensorDict, lazy stacks and NonTensorStack are MutableMappings; tensorclass instances are not."""
    td = make_td()
    for obj in (td, lazy_stack([td, td]), NonTensorStack(NonTensorData("x"), NonTensorData("y"))):
        assert isinstance(obj, MutableMapping) and isinstance(obj, Mapping)
    point = Point(x=torch.zeros(2), y=torch.zeros(2), batch_size=[2])
    assert not isinstance(point, Mapping) and not isinstance(NonTensorData("x"), Mapping)


def test_a_tensordict_is_taken_where_torch_and_python_take_a_mapping():
    """module.load_state_dict(td) loads it, and dict(**td) gives its top-level entries."""
    module = torch.nn.Linear(2, 3)
    state = TensorDict({k: torch.full_like(v, 2.0) for k, v in module.state_dict().items()}, [])
    module.load_state_dict(state)
    assert (module.weight == 2).all() and (module.bias == 2).all()
    td = make_td()
    assert sorted(dict(**td)) == sorted(td.keys())


def test_updating_with_a_tensordict_keeps_its_non_tensor_stacks_and_sub_tensordicts():
    """update() of a tensordict holding a NonTensorStack sets the stack as one entry, and merges sub-tensordicts."""
    target = TensorDict({"sub": {"x": torch.zeros(2)}}, [2])
    source = TensorDict({"sub": {"y": torch.ones(2)}}, [2])
    source["names"] = ["a", "b"]
    target.update(source)
    assert set(target.keys(True, True)) == {("sub", "x"), ("sub", "y")}
    assert target["names"] == ["a", "b"]
