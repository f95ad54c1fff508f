"""Nested keys (tensordict._keys) and the key views and key algebra (tensordict._ops.keys)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack, tensorclass, unravel_key

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


ALL_KEYS = {"a", "b", ("b", "c"), ("b", "d"), ("b", "d", "e")}
LEAVES = {"a", ("b", "c"), ("b", "d", "e")}


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


# --- unravel_key --------------------------------------------------------------


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


@pytest.mark.parametrize("key", [("a", 1), ("a", ("b", None)), (0, slice(3, 4)), ("a", ()), ()])
def test_unravel_key_of_a_tuple_that_is_no_key_is_empty(key):
    """A tuple with a part that is not a string (an index, say) unravels to ``()``, as in the
    reference: code asks ``unravel_key(t)`` to tell keys from indices."""
    assert unravel_key(key) == ()


@pytest.mark.parametrize("key", [1, None, 1.5, ["a", "b"]])
def test_unravel_key_non_key_raises(key):
    """A key that is neither a string nor a tuple raises KeyTypeError, which is the TypeError
    ours raised, the RuntimeError the reference raises and the KeyError its get raises."""
    from tensordict.errors import KeyTypeError

    with pytest.raises(KeyTypeError, match="string or a tuple") as info:
        unravel_key(key)
    assert isinstance(info.value, TypeError) and isinstance(info.value, RuntimeError)
    assert isinstance(info.value, KeyError) and str(info.value).startswith("a key must")


@pytest.mark.parametrize("key", [("a", 1), ("b", ("c", None))])
def test_methods_still_refuse_a_tuple_that_is_no_key(key):
    """get, set and membership check keys strictly: a bad part raises, naming it."""
    from tensordict.errors import KeyTypeError

    td = make_td()
    with pytest.raises(KeyTypeError, match="must be strings"):
        td.get(key)
    with pytest.raises(KeyTypeError, match="must be strings"):
        td.set(key, torch.zeros(3))
    assert key not in td.keys(include_nested=True)


def test_unravel_key_list_refuses_what_is_no_key():
    """unravel_key_list checks each key (RuntimeError in the reference, a TypeError too here)."""
    from tensordict import unravel_key_list

    assert unravel_key_list(["a", ("b",), ("c", ("d",))]) == ["a", "b", ("c", "d")]
    with pytest.raises(RuntimeError):
        unravel_key_list([("a", 1)])
    with pytest.raises(TypeError):
        unravel_key_list("ab")


def test_unravel_key_to_tuple_gives_empty_for_what_is_no_key():
    """unravel_key_to_tuple answers ``()`` for anything that is not a key, as in the reference."""
    from tensordict.utils import unravel_key_to_tuple

    assert unravel_key_to_tuple(("a", ("b",))) == ("a", "b")
    assert unravel_key_to_tuple("a") == ("a",)
    assert unravel_key_to_tuple(("a", 0)) == () and unravel_key_to_tuple(0) == ()


# --- keys / values / items ----------------------------------------------------


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


def test_is_empty():
    """is_empty is True when the tensordict has no leaf, even with empty sub-tensordicts."""
    assert TensorDict({}, []).is_empty()
    assert TensorDict({"a": {"b": {}}}, []).is_empty()
    assert not make_td().is_empty()


def test_depth():
    """depth counts levels of nested tensordicts that hold leaves."""
    assert TensorDict(a=0).depth == 0
    assert TensorDict(a={"x": {}}).depth == 0
    assert TensorDict(a={"x": {"y": 1}}).depth == 2
    assert make_wide_td().depth == 1


# --- select / exclude / filter ------------------------------------------------


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


def test_filter_empty_():
    """filter_empty_ removes nested tensordicts that hold no leaf, however deep."""
    td = TensorDict(
        a=torch.zeros(3), b={}, c={"d": {}}, f={"g": {"h": torch.zeros(3)}, "i": {}}, batch_size=[3]
    )
    assert td.filter_empty_() is td
    assert sorted(td.keys(include_nested=True), key=str) == [("f", "g"), ("f", "g", "h"), "a", "f"]
    with pytest.raises(RuntimeError):
        TensorDict(a={}).lock_().filter_empty_()


# --- split_keys / separates ---------------------------------------------------


def test_split_keys_lists_and_rest():
    """Each list takes its keys; the last tensordict holds what is left."""
    td = make_wide_td()
    first, second, rest = td.split_keys(["a"], [("b", "c")])
    assert leaves(first) == ["a"]
    assert leaves(second) == [("b", "c")]
    assert leaves(rest) == [("b", "d"), "e"]
    assert first["a"] is td["a"]
    assert leaves(td) == [("b", "c"), ("b", "d"), "a", "e"]


def test_split_keys_dict_renames():
    """A dict selects its keys and renames each to its value."""
    _, renamed, rest = make_wide_td().split_keys(["a"], {"e": "f"})
    assert list(renamed.keys()) == ["f"]
    assert "e" not in rest.keys()


def test_split_keys_callable_selects_leaves():
    """A callable gets (key tuple, value) and selects the tensor leaves it accepts."""
    seen = []

    def pick(key, value):
        seen.append(key)
        return value.ndim == 1

    ones, rest = make_wide_td().split_keys(pick)
    assert leaves(ones) == [("b", "c"), ("b", "d"), "e"]
    assert leaves(rest) == ["a"]
    assert ("b", "c") in seen and ("a",) in seen


def test_split_keys_missing_key_strict_and_not():
    """A missing key raises KeyError unless strict=False, which skips it or stores the default."""
    td = make_wide_td()
    with pytest.raises(KeyError, match="x"):
        td.split_keys(["a"], ["x"], inplace=True)
    assert leaves(td) == [("b", "c"), ("b", "d"), "a", "e"]
    _, empty, _ = td.split_keys(["a"], ["x"], strict=False)
    assert list(empty.keys()) == []
    _, filled, _ = td.split_keys(["a"], ["x"], strict=False, default=torch.full((3,), 7.0))
    assert filled["x"].tolist() == [7.0, 7.0, 7.0]


def test_split_keys_later_set_sees_what_is_left():
    """A key taken by an earlier set is missing for the later ones."""
    with pytest.raises(KeyError, match="a"):
        make_wide_td().split_keys(["a"], ["a"])


def test_split_keys_inplace_returns_self_last():
    """With inplace=True the selected keys leave the tensordict, returned last."""
    td = make_wide_td()
    taken, rest = td.split_keys([("b", "c"), ("b", "d")], inplace=True)
    assert rest is td
    assert leaves(td) == ["a", "e"]
    assert leaves(taken) == [("b", "c"), ("b", "d")]


def test_split_keys_drops_empty_nested_unless_reproduce_struct():
    """Empty nested tensordicts leave the rest, except with reproduce_struct=True."""
    td = TensorDict(a=torch.zeros(3), b={"c": torch.zeros(3)}, batch_size=[3])
    _, rest = td.split_keys([("b", "c")])
    assert list(rest.keys()) == ["a"]
    taken, rest = td.split_keys(["a"], reproduce_struct=True)
    assert set(taken.keys(include_nested=True)) == {"a", "b"}
    assert taken["b"].is_empty()
    _, rest = td.split_keys([("b", "c")], reproduce_struct=True)
    assert set(rest.keys()) == {"a", "b"}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["a", ("b", "c"), ("b", "d"), "e"]), unique=True))
def test_split_keys_partitions_the_leaves(keys):
    """The outputs of split_keys hold every leaf exactly once."""
    td = make_wide_td()
    taken, rest = td.split_keys(keys)
    assert sorted(leaves(taken) + leaves(rest), key=str) == leaves(td)
    assert not set(leaves(taken)) & set(leaves(rest))


def test_separates_moves_entries_out():
    """separates removes the keys in place and returns them, dropping emptied nested tds."""
    td = make_wide_td()
    out = td.separates("a", ("b", "c"), ("b", "d"))
    assert leaves(out) == [("b", "c"), ("b", "d"), "a"]
    assert list(td.keys()) == ["e"]
    assert out.batch_size == torch.Size([3])


def test_separates_filter_empty_false_keeps_nested():
    """With filter_empty=False the emptied nested tensordict stays."""
    td = make_wide_td()
    td.separates(("b", "c"), ("b", "d"), filter_empty=False)
    assert td["b"].is_empty()


def test_separates_missing_key():
    """A missing key raises KeyError, is skipped with strict=False, or takes the default."""
    td = make_wide_td()
    with pytest.raises(KeyError, match="z"):
        td.separates("z")
    out = td.separates("z", default=torch.zeros(3))
    assert list(out.keys()) == ["z"]
    assert "z" not in td.keys()


def test_separates_locked_refuses():
    """A locked tensordict refuses separates with RuntimeError."""
    td = make_wide_td().lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.separates("a")
    assert "a" in td.keys()


def test_separates_missing_key_gives_none_entry():
    """strict=False, or a default that does not fit the batch size, stores None under the key."""
    td = make_wide_td()
    out = td.separates("z", strict=False)
    assert "z" in out.keys() and out.get("z").data is None
    with pytest.warns(FutureWarning):
        out = td.separates("y", "a", default=0)
    assert out.get("y").data is None and "a" in out.keys() and "a" not in td.keys()


def test_lazy_stack_split_and_copy():
    """A lazy stack supports split_keys, copy and clear."""
    stack = lazy_stack([make_wide_td(), make_wide_td()])
    taken, rest = stack.split_keys(["a"])
    assert list(taken.keys()) == ["a"] and "a" not in rest.keys()
    assert taken["a"].shape == torch.Size([2, 3, 2])
    assert "a" in stack.keys()
    c = stack.copy()
    assert type(c) is type(stack)
    c.clear()
    assert c.is_empty() and not stack.is_empty()


# --- flatten_keys / unflatten_keys --------------------------------------------


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


def test_flatten_keys_is_leaf_keeps_a_sub_tensordict_whole():
    """flatten_keys(is_leaf=...) keeps the entries of the classes it accepts whole, and only them."""
    td = TensorDict({"a": torch.zeros(2), ("b", "c"): torch.zeros(2)}, [2])
    flat = td.flatten_keys(is_leaf=lambda cls: issubclass(cls, (TensorDict, torch.Tensor)))
    assert list(flat.keys()) == ["a", "b"]
    assert flat["b"] is td["b"]
    assert list(td.flatten_keys(is_leaf=lambda cls: issubclass(cls, TensorDict)).keys()) == ["b"]
    assert list(td.flatten_keys(is_leaf=None).keys()) == ["a", "b.c"]


def test_select_as_tensordict_gives_a_tensordict_for_a_tensorclass():
    """select(..., as_tensordict=True) on a tensorclass instance returns a TensorDict."""

    @tensorclass
    class Pair:
        x: torch.Tensor
        y: torch.Tensor

    pair = Pair(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    selected = pair.select("x", as_tensordict=True)
    assert type(selected) is TensorDict and list(selected.keys()) == ["x"]
    assert type(pair.select("x")) is Pair
    td = TensorDict(x=torch.zeros(2), batch_size=[2])
    assert type(td.select("x", as_tensordict=True)) is TensorDict


@tensorclass
class _Pair:
    left: torch.Tensor
    note: str


class _Doubling(TensorDict):
    """A subclass whose reads double every tensor: values() must read through them."""

    def _get_str(self, key, default):
        value = super()._get_str(key, default)
        return value * 2 if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("leaves_only", [False, True])
def test_values_and_items_are_what_get_gives_in_key_order(nested, leaves_only):
    """items() pairs each key of keys() with get(key), and values() gives the same values, over
    dense levels, a lazy stack (whose leaves are stacked), a tensorclass and non-tensor data."""
    members = [TensorDict({"s": torch.full((3,), float(i))}, [3]) for i in range(2)]
    td = TensorDict(
        {
            "a": torch.zeros(3, 4),
            "b": {"c": torch.ones(3), "text": "hi"},
            "stack": lazy_stack(members, 1),
            "pair": _Pair(left=torch.arange(3), note="n", batch_size=[3]),
        },
        [3],
    )
    keys = list(td.keys(nested, leaves_only))
    pairs = list(td.items(nested, leaves_only))
    assert [key for key, _ in pairs] == keys
    for (key, value), other in zip(pairs, td.values(nested, leaves_only)):
        expected = td.get(key)
        assert type(value) is type(expected) is type(other)
        if isinstance(expected, torch.Tensor):
            assert torch.equal(value, expected) and torch.equal(other, expected)
    if nested:
        stacked = dict(pairs)[("stack", "s")]
        assert stacked.shape == (3, 2) and stacked[0].tolist() == [0.0, 1.0]


def test_values_of_a_subclass_read_through_its_get():
    """A TensorDict subclass that reads its entries another way gives those values in values()."""
    td = _Doubling({"a": torch.ones(2), "b": {"c": torch.ones(2)}}, [2])
    assert [v.tolist() for v in td.values(True, True)] == [[2.0, 2.0], [1.0, 1.0]]
    assert [v.tolist() for _, v in td.items(True, True)] == [[2.0, 2.0], [1.0, 1.0]]


def test_is_empty_counts_non_tensor_values_as_content():
    """A tensordict is empty when no level holds a tensor or a non-tensor value."""
    assert TensorDict({"a": {"b": {}}}, []).is_empty()
    assert not TensorDict({"a": {"b": {}, "c": "a string"}}, []).is_empty()
    assert not TensorDict({"a": {"b": {}, "c": 1}}, []).is_empty()
    assert TensorDict({"a": {"c": "a string"}}, []).depth == 1
