"""Keys of a tensordict: nested keys, views, get/set/update/pop and key transforms."""

import pytest
import torch

from tensordict import TensorDict, unravel_key

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)

ALL_KEYS = {"a", "b", ("b", "c"), ("b", "d"), ("b", "d", "e")}
LEAVES = {"a", ("b", "c"), ("b", "d", "e")}


def make_td():
    return TensorDict(
        {
            "a": torch.zeros(3, 4),
            "b": {"c": torch.ones(3), "d": {"e": torch.arange(3)}},
        },
        batch_size=[3],
    )


# --- unravel_key -----------------------------------------------------------------


@pytest.mark.parametrize(
    "key, expected",
    [
        ("a", "a"),
        (("a",), "a"),
        ((("a",),), "a"),
        (("a", "b"), ("a", "b")),
        (("a", ("b", ("c",))), ("a", "b", "c")),
        ((("a", "b"), "c"), ("a", "b", "c")),
    ],
)
def test_unravel_key(key, expected):
    """unravel_key flattens nested tuples and turns a 1-tuple into its string."""
    assert unravel_key(key) == expected


# differs from the reference: it returns () for a tuple with a non-string part.
@pytest.mark.parametrize("key", [("a", 1), ("a", ("b", None))])
def test_unravel_key_non_string_part_raises(key):
    """A tuple key with a non-string part is a TypeError."""
    with pytest.raises(TypeError):
        unravel_key(key)


# differs from the reference: it raises RuntimeError.
@pytest.mark.parametrize("key", [1, None, 1.5])
def test_unravel_key_non_key_raises(key):
    """A key that is neither a string nor a tuple is a TypeError."""
    with pytest.raises(TypeError):
        unravel_key(key)


# differs from the reference: it returns ().
def test_unravel_key_empty_tuple_raises():
    """The empty tuple is not a key."""
    with pytest.raises(ValueError):
        unravel_key(())


# --- keys / values / items -------------------------------------------------------


def test_keys_top_level_in_insertion_order():
    """keys() lists the top-level keys in insertion order."""
    td = TensorDict({"z": torch.zeros(2), "a": torch.zeros(2), "m": torch.zeros(2)}, [2])
    assert list(td.keys()) == ["z", "a", "m"]


def test_keys_include_nested():
    """keys(include_nested=True) lists every key, nested ones as flat tuples."""
    assert set(make_td().keys(include_nested=True)) == ALL_KEYS


def test_keys_leaves_only():
    """keys(True, True) lists only the leaves; keys(False, True) only top-level leaves."""
    td = make_td()
    assert set(td.keys(True, True)) == LEAVES
    assert set(td.keys(include_nested=False, leaves_only=True)) == {"a"}


def test_keys_is_leaf():
    """is_leaf decides, from the entry's class, what counts as a leaf."""
    td = make_td()

    def is_leaf(cls):
        return not issubclass(cls, torch.Tensor)

    keys = td.keys(include_nested=True, leaves_only=True, is_leaf=is_leaf)
    assert set(keys) == {"b", ("b", "d")}


def test_keys_is_live_view():
    """A keys view reflects entries added and removed after it was made."""
    td = make_td()
    keys = td.keys(include_nested=True)
    td["z"] = torch.zeros(3)
    td["b", "y"] = torch.zeros(3)
    assert "z" in keys
    assert ("b", "y") in keys
    assert len(keys) == len(ALL_KEYS) + 2
    del td["a"]
    assert "a" not in keys


def test_keys_view_contains():
    """A top-level keys view contains no nested keys; a nested one does."""
    td = make_td()
    assert ("b", "c") not in td.keys()
    assert ("b", "c") in td.keys(True)
    assert "c" not in td.keys(True)


def test_keys_sort():
    """keys(sort=True) lists the keys sorted."""
    td = TensorDict({"z": 1, "a": 2, "m": {"y": 1, "b": 2}}, [])
    assert list(td.keys(True, sort=True)) == ["a", "m", ("m", "b"), ("m", "y"), "z"]


def test_sorted_keys():
    """sorted_keys is the sorted list of top-level keys."""
    td = TensorDict({"z": 1, "a": 2, "m": {"y": 1}}, [])
    assert td.sorted_keys == ["a", "m", "z"]


def test_values_and_items():
    """values() and items() give the stored objects, matching keys()."""
    td = make_td()
    items = dict(td.items())
    assert list(items) == list(td.keys())
    assert items["a"] is td["a"]
    assert items["b"] is td["b"]
    assert len(list(td.values())) == 2


def test_items_nested_leaves():
    """items(True, True) yields each leaf with its nested key."""
    td = make_td()
    items = dict(td.items(True, True))
    assert set(items) == LEAVES
    assert items["b", "d", "e"] is td["b", "d", "e"]
    assert all(isinstance(v, torch.Tensor) for v in td.values(True, True))


# --- __contains__ ----------------------------------------------------------------


@pytest.mark.parametrize(
    "key, present",
    [
        ("a", True),
        ("b", True),
        (("b", "c"), True),
        (("b", ("c",)), True),
        ((("b",), "d", "e"), True),
        (("b", "x"), False),
        (("a", "x"), False),
        ("c", False),
        ("nope", False),
    ],
)
def test_contains(key, present):
    """`key in td` understands nested tuple keys."""
    assert (key in make_td()) is present


# --- get -------------------------------------------------------------------------


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


# differs from the reference: it names only the last part and the keys of that level.
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


# differs from the reference: it raises KeyError (get) or RuntimeError (set).
@pytest.mark.parametrize("key", [1, ("b", 1), None])
def test_key_of_wrong_type_raises_type_error(key):
    """A key that is not a string or tuple of strings is a TypeError."""
    td = make_td()
    with pytest.raises(TypeError):
        td.get(key)
    with pytest.raises(TypeError):
        td.set(key, torch.zeros(3))


# --- set / set_ ------------------------------------------------------------------


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


# differs from the reference: it leaves the new sub-tensordict "n" behind.
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


# --- update / update_ / setdefault -----------------------------------------------


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


# --- pop / del_ / __delitem__ ----------------------------------------------------


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


# --- select / exclude ------------------------------------------------------------


def test_select():
    """select keeps the given keys and shares their tensors."""
    td = make_td()
    out = td.select("a", ("b", "c"))
    assert set(out.keys(True)) == {"a", "b", ("b", "c")}
    assert out["a"] is td["a"]
    assert out.batch_size == td.batch_size
    assert set(td.keys(True)) == ALL_KEYS


def test_select_whole_subtree():
    """Selecting a sub-tensordict keeps all of it."""
    assert set(make_td().select("b").keys(True)) == ALL_KEYS - {"a"}


def test_select_missing_key():
    """select of a missing key is a KeyError, unless strict=False."""
    td = make_td()
    with pytest.raises(KeyError, match="nope"):
        td.select("nope")
    assert list(td.select("nope", strict=False).keys()) == []


def test_select_inplace():
    """select(inplace=True) drops the other keys of the tensordict itself."""
    td = make_td()
    assert td.select("a", inplace=True) is td
    assert list(td.keys(True)) == ["a"]


def test_exclude():
    """exclude drops the given keys, nested ones too, and ignores missing ones."""
    td = make_td()
    assert set(td.exclude("a").keys(True)) == ALL_KEYS - {"a"}
    assert set(td.exclude(("b", "d", "e")).keys(True)) == ALL_KEYS - {("b", "d", "e")}
    assert set(td.exclude("nope").keys(True)) == ALL_KEYS
    assert set(td.keys(True)) == ALL_KEYS


def test_exclude_inplace():
    """exclude(inplace=True) removes the keys from the tensordict itself."""
    td = make_td()
    assert td.exclude("b", inplace=True) is td
    assert list(td.keys()) == ["a"]


# --- rename_key_ -----------------------------------------------------------------


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


# --- flatten_keys / unflatten_keys -----------------------------------------------


def test_flatten_keys():
    """flatten_keys joins nested keys with '.' and shares the tensors."""
    td = make_td()
    flat = td.flatten_keys()
    assert set(flat.keys()) == {"a", "b.c", "b.d.e"}
    assert flat["b.d.e"] is td["b", "d", "e"]
    assert set(td.keys(True)) == ALL_KEYS


def test_flatten_keys_separator():
    """flatten_keys takes the separator."""
    assert set(make_td().flatten_keys("/").keys()) == {"a", "b/c", "b/d/e"}


def test_flatten_keys_collision_raises():
    """Flattening keys that collide is an error naming the key."""
    td = TensorDict({"a": {"b": torch.zeros(3)}, "a.b": torch.zeros(3)}, [3])
    with pytest.raises(KeyError, match="a.b"):
        td.flatten_keys()


def test_unflatten_keys_round_trip():
    """unflatten_keys inverts flatten_keys."""
    td = make_td()
    back = td.flatten_keys().unflatten_keys()
    assert set(back.keys(True)) == ALL_KEYS
    assert back["b"].batch_size == torch.Size([3])
    assert (back == td).all()


def test_unflatten_keys_conflict_raises():
    """Unflattening into a key that holds a tensor is an error."""
    td = TensorDict({"a.b": torch.zeros(3, 2), "a": torch.zeros(3)}, [3])
    with pytest.raises(KeyError):
        td.unflatten_keys()


# --- is_empty / __len__ / __iter__ -----------------------------------------------


def test_is_empty():
    """is_empty is True when the tensordict has no leaf, even with empty sub-tensordicts."""
    assert TensorDict({}, []).is_empty()
    assert TensorDict({"a": {"b": {}}}, []).is_empty()
    assert not make_td().is_empty()


def test_len_is_first_batch_dim():
    """len() is the size of the first batch dim, and 0 without batch dims."""
    assert len(make_td()) == 3
    assert len(TensorDict({"a": torch.zeros(5, 2)}, [5, 2])) == 5
    assert len(TensorDict({"a": torch.zeros(5)}, [])) == 0


def test_iter_goes_over_first_batch_dim():
    """Iterating yields the tensordict indexed along its first batch dim."""
    td = make_td()
    rows = list(td)
    assert len(rows) == 3
    for i, row in enumerate(rows):
        assert row.batch_size == torch.Size([])
        assert torch.equal(row["b", "d", "e"], td["b", "d", "e"][i])


def test_iter_without_batch_dims_raises():
    """Iterating over a tensordict without batch dims is a TypeError."""
    with pytest.raises(TypeError):
        iter(TensorDict({"a": torch.zeros(2)}, []))


def test_set_at_and_update_at_write_rows_in_place():
    """set_at_ and update_at_ write into the given rows of existing entries, nested ones included."""
    td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3, 2)}}, [3])
    td.set_at_("a", 5.0, 1)
    td.update_at_({"b": {"c": torch.ones(2)}}, 2)
    assert td["a"].tolist() == [0.0, 5.0, 0.0]
    assert td["b", "c"][2].tolist() == [1.0, 1.0] and (td["b", "c"][:2] == 0).all()
    with pytest.raises(KeyError, match="missing"):
        td.update_at_({"missing": torch.zeros(())}, 0)


def test_set_in_place_broadcasts_a_number():
    """set_ with a number fills the existing tensor, like the reference's update_."""
    td = TensorDict({"a": torch.ones(2, 3, 4)}, [2, 3])
    td.update_({"a": 0})
    assert (td["a"] == 0).all()
