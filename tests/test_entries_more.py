"""Entry methods: split_keys, separates, replace, copy, clear, popitem, create_nested, reading one entry."""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, lazy_stack, tensorclass


@tensorclass
class Point:
    x: torch.Tensor
    y: torch.Tensor


def make_td():
    return TensorDict(
        a=torch.zeros(3, 2),
        b={"c": torch.zeros(3), "d": torch.ones(3)},
        e=torch.ones(3),
        batch_size=[3],
    )


def leaves(td):
    return sorted(td.keys(include_nested=True, leaves_only=True), key=str)


# --- split_keys -------------------------------------------------------------------


def test_split_keys_lists_and_rest():
    """Each list takes its keys; the last tensordict holds what is left."""
    td = make_td()
    first, second, rest = td.split_keys(["a"], [("b", "c")])
    assert leaves(first) == ["a"]
    assert leaves(second) == [("b", "c")]
    assert leaves(rest) == [("b", "d"), "e"]
    assert first["a"] is td["a"]
    assert leaves(td) == [("b", "c"), ("b", "d"), "a", "e"]


def test_split_keys_dict_renames():
    """A dict selects its keys and renames each to its value."""
    _, renamed, rest = make_td().split_keys(["a"], {"e": "f"})
    assert list(renamed.keys()) == ["f"]
    assert "e" not in rest.keys()


def test_split_keys_callable_selects_leaves():
    """A callable gets (key tuple, value) and selects the tensor leaves it accepts."""
    seen = []

    def pick(key, value):
        seen.append(key)
        return value.ndim == 1

    ones, rest = make_td().split_keys(pick)
    assert leaves(ones) == [("b", "c"), ("b", "d"), "e"]
    assert leaves(rest) == ["a"]
    assert ("b", "c") in seen and ("a",) in seen


def test_split_keys_missing_key_strict_and_not():
    """A missing key raises KeyError unless strict=False, which skips it or stores the default."""
    td = make_td()
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
        make_td().split_keys(["a"], ["a"])


def test_split_keys_inplace_returns_self_last():
    """With inplace=True the selected keys leave the tensordict, returned last."""
    td = make_td()
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
    td = make_td()
    taken, rest = td.split_keys(keys)
    assert sorted(leaves(taken) + leaves(rest), key=str) == leaves(td)
    assert not set(leaves(taken)) & set(leaves(rest))


# --- separates ----------------------------------------------------------------------


def test_separates_moves_entries_out():
    """separates removes the keys in place and returns them, dropping emptied nested tds."""
    td = make_td()
    out = td.separates("a", ("b", "c"), ("b", "d"))
    assert leaves(out) == [("b", "c"), ("b", "d"), "a"]
    assert list(td.keys()) == ["e"]
    assert out.batch_size == torch.Size([3])


def test_separates_filter_empty_false_keeps_nested():
    """With filter_empty=False the emptied nested tensordict stays."""
    td = make_td()
    td.separates(("b", "c"), ("b", "d"), filter_empty=False)
    assert td["b"].is_empty()


def test_separates_missing_key():
    """A missing key raises KeyError, is skipped with strict=False, or takes the default."""
    td = make_td()
    with pytest.raises(KeyError, match="z"):
        td.separates("z")
    out = td.separates("z", default=torch.zeros(3))
    assert list(out.keys()) == ["z"]
    assert "z" not in td.keys()


def test_separates_locked_refuses():
    """A locked tensordict refuses separates with RuntimeError."""
    td = make_td().lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.separates("a")
    assert "a" in td.keys()


# --- copy and replace ----------------------------------------------------------------


def test_copy_is_structural():
    """copy gives new nested tensordicts with the same leaves."""
    td = make_td()
    c = td.copy()
    assert c["a"] is td["a"]
    assert c["b"] is not td["b"]
    del c["b", "c"]
    assert ("b", "c") in td.keys(include_nested=True)


def test_copy_of_locked_is_unlocked_and_tensorclass_keeps_class():
    """The copy of a locked tensordict is unlocked; a tensorclass copy is of its class."""
    assert not make_td().lock_().copy().is_locked
    p = Point(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    c = p.copy()
    assert type(c) is Point
    assert c.x is p.x


def test_replace_writes_into_a_copy():
    """replace returns a copy with the new entries; the original does not change."""
    td = make_td()
    new = td.replace(a=torch.ones(3, 2), b={"c": torch.ones(3)})
    assert new["a"].sum() == 6 and td["a"].sum() == 0
    assert new["b", "c"].sum() == 3 and td["b", "c"].sum() == 0
    assert new["b", "d"] is td["b", "d"]
    assert new["e"] is td["e"]


def test_replace_nothing_returns_self_and_kwargs_win():
    """replace() with nothing returns self; keyword entries win over the positional ones."""
    td = make_td()
    assert td.replace() is td
    new = td.replace({"e": torch.zeros(3)}, e=torch.full((3,), 2.0))
    assert new["e"].tolist() == [2.0, 2.0, 2.0]


def test_replace_bad_arguments():
    """Two positional arguments or a non-mapping raise RuntimeError; a bad value leaves td as it was."""
    td = make_td()
    with pytest.raises(RuntimeError):
        td.replace({"a": 1}, {"a": 2})
    with pytest.raises(RuntimeError):
        td.replace(5)
    with pytest.raises(RuntimeError):
        td.replace(a=torch.ones(4))
    assert td["a"].shape == torch.Size([3, 2])


def test_replace_on_locked_and_tensorclass():
    """A locked tensordict gives an unlocked replaced copy; a tensorclass keeps its class."""
    td = make_td().lock_()
    new = td.replace(z=torch.ones(3))
    assert "z" in new.keys() and "z" not in td.keys()
    p = Point(x=torch.zeros(2), y=torch.zeros(2), batch_size=[2])
    q = p.replace(x=torch.ones(2))
    assert type(q) is Point and q.x.sum() == 2 and p.x.sum() == 0


# --- clear, popitem, filter_empty_ ---------------------------------------------------


def test_clear_and_popitem():
    """clear empties the tensordict; popitem removes the last key and returns it."""
    td = make_td()
    key, value = td.popitem()
    assert key == "e" and value.shape == torch.Size([3])
    assert list(td.keys()) == ["a", "b"]
    assert td.clear() is td
    assert td.is_empty() and td.batch_size == torch.Size([3])
    with pytest.raises(KeyError):
        td.popitem()


def test_clear_popitem_locked():
    """A locked tensordict refuses clear and popitem with RuntimeError and keeps its keys."""
    td = make_td().lock_()
    with pytest.raises(RuntimeError):
        td.clear()
    with pytest.raises(RuntimeError):
        td.popitem()
    assert list(td.keys()) == ["a", "b", "e"]


def test_clear_memmapped_refuses(tmp_path):
    """A memory-mapped tensordict (locked) refuses clear."""
    td = make_td().memmap(tmp_path / "td")
    with pytest.raises(RuntimeError):
        td.clear()
    assert TensorDict.load_memmap(tmp_path / "td")["a"].shape == torch.Size([3, 2])


def test_filter_empty_():
    """filter_empty_ removes nested tensordicts that hold no leaf, however deep."""
    td = TensorDict(
        a=torch.zeros(3), b={}, c={"d": {}}, f={"g": {"h": torch.zeros(3)}, "i": {}}, batch_size=[3]
    )
    assert td.filter_empty_() is td
    assert sorted(td.keys(include_nested=True), key=str) == [("f", "g"), ("f", "g", "h"), "a", "f"]
    with pytest.raises(RuntimeError):
        TensorDict(a={}).lock_().filter_empty_()


# --- create_nested, depth -----------------------------------------------------------


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
    td = make_td().lock_()
    with pytest.raises(RuntimeError):
        td.create_nested("q")
    assert "q" not in td.keys()


def test_depth():
    """depth counts levels of nested tensordicts that hold leaves."""
    assert TensorDict(a=0).depth == 0
    assert TensorDict(a={"x": {}}).depth == 0
    assert TensorDict(a={"x": {"y": 1}}).depth == 2
    assert make_td().depth == 1


# --- reading one entry ----------------------------------------------------------------


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
    td = make_td()
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


# --- copy_at_ ------------------------------------------------------------------------


def test_copy_at_writes_rows():
    """copy_at_ copies the tensors into the rows at idx, nested ones included."""
    td = make_td()
    src = TensorDict(a=torch.ones(2), b={"c": torch.full((), 5.0)})
    assert td.copy_at_(src, 1) is td
    assert td["a"][:, 0].tolist() == [0.0, 1.0, 0.0]
    assert td["b", "c"].tolist() == [0.0, 5.0, 0.0]
    td.copy_at_(TensorDict(e=torch.zeros(2), batch_size=[2]), slice(1, 3))
    assert td["e"].tolist() == [1.0, 0.0, 0.0]


def test_copy_at_fast_refusals_leave_td_unchanged():
    """fast=True refuses a missing key, a dict source, a tensor index or a shape mismatch."""
    td = make_td()
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
    td = make_td().lock_()
    td.copy_at_(TensorDict(e=torch.zeros(())), 0)
    assert td["e"].tolist() == [0.0, 1.0, 1.0]


# --- rename_ -------------------------------------------------------------------------


def test_rename_in_place():
    """rename_ renames the batch dims in place, nested tensordicts included."""
    td = TensorDict(
        a=torch.zeros(2, 3), b={"c": torch.zeros(2, 3, 4)}, batch_size=[2, 3], names=["x", "y"]
    )
    assert td.rename_("p", "q") is td
    assert td.names == ["p", "q"] and td["b"].names == ["p", "q"]
    assert td.rename_(p="z").names == ["z", "q"]
    assert td.rename_(None).names == [None, None]


def test_rename_errors():
    """Bad rename_ arguments raise ValueError and leave the names as they were."""
    td = TensorDict(batch_size=[2, 3], names=["x", "y"])
    for args, kwargs in [((), {"k": "z"}), (("p",), {"x": "z"}), ((), {}), (("p",), {})]:
        with pytest.raises(ValueError):
            td.rename_(*args, **kwargs)
    assert td.names == ["x", "y"]
    assert TensorDict().rename_().batch_size == torch.Size([])


# --- constructors --------------------------------------------------------------------


def test_from_list_dense_and_lazy():
    """from_list stacks dicts densely when they match, lazily when not or when asked."""
    dense = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}])
    assert type(dense) is TensorDict and dense.batch_size == torch.Size([2])
    assert dense["a"][1].tolist() == [1.0, 1.0, 1.0]
    ragged = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(4)}])
    assert isinstance(ragged, LazyStackedTensorDict)
    assert isinstance(TensorDict.from_list([{"a": 1}, {"a": 2}], lazy=True), LazyStackedTensorDict)


def test_from_list_batch_arguments():
    """batch_size, auto_batch_size and names apply to the result; a bad batch_size raises."""
    td = TensorDict.from_list(
        [{"a": torch.zeros(3)}, {"a": torch.zeros(3)}], batch_size=[2, 3], names=["x", "y"]
    )
    assert td.batch_size == torch.Size([2, 3]) and td.names == ["x", "y"]
    auto = TensorDict.from_list(
        [{"a": torch.zeros(3)}, {"a": torch.zeros(3)}], auto_batch_size=True
    )
    assert auto.batch_size == torch.Size([2, 3])
    with pytest.raises(ValueError):
        TensorDict.from_list([{"a": 1}, {"a": 2}], batch_size=[3])
    with pytest.raises(ValueError):
        TensorDict.from_list([{"a": 1}], batch_size=[1], batch_dims=1)


def test_from_dict_instance_keeps_tensorclasses():
    """Nested dicts under a tensorclass entry become that tensorclass."""
    td = TensorDict(
        a=torch.zeros(()), b=Point(x=torch.zeros(()), y=torch.zeros(())), n={"p": Point(x=0, y=0)}
    )
    data = {
        "a": torch.ones(()),
        "b": {"x": torch.ones(()), "y": torch.ones(())},
        "n": {"p": {"x": 1, "y": 2}},
        "q": {"r": 1},
    }
    out = td.from_dict_instance(data)
    assert type(out["b"]) is Point and out["b"].x == 1
    assert type(out["n", "p"]) is Point
    assert type(out["q"]) is TensorDict
    assert td["b"].x == 0
    with pytest.raises(ValueError):
        td.from_dict_instance(data, batch_size=[], batch_dims=0)


def test_from_schema(tmp_path):
    """from_schema allocates zeros of each shape and dtype, in memory, memmapped or shared."""
    schema = {"obs": ([4, 4], torch.uint8), "r": ([], torch.float32)}
    td = TensorDict.from_schema(schema, batch_size=[10])
    assert td["obs"].shape == torch.Size([10, 4, 4]) and td["obs"].dtype == torch.uint8
    assert td["r"].sum() == 0
    mm = TensorDict.from_schema(schema, batch_size=[2], storage="memmap", prefix=tmp_path / "mm")
    assert mm.is_memmap()
    assert TensorDict.load_memmap(tmp_path / "mm")["obs"].shape == torch.Size([2, 4, 4])
    # Single quotes: a repository check takes the double-quoted word for the folder beside it.
    shm = 'shared'  # fmt: skip
    assert TensorDict.from_schema(schema, storage=shm).is_shared()
    with pytest.raises(ValueError, match="bogus"):
        TensorDict.from_schema(schema, storage="bogus")


def test_load_is_deprecated(tmp_path):
    """load_ warns and loads like load_memmap_."""
    TensorDict(a=torch.ones(2), batch_size=[2]).memmap(tmp_path / "td")
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        td.load_(tmp_path / "td")
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert td["a"].tolist() == [1.0, 1.0]


# --- tensorclasses and lazy stacks -----------------------------------------------------


def test_tensorclass_reaches_entry_methods():
    """A tensorclass instance gets the entry methods through its tensordict."""
    p = Point(x=torch.zeros(3), y=torch.ones(3), batch_size=[3])
    assert p.get_item_shape("x") == torch.Size([3])
    assert p.get_at("y", 0) == 1
    assert p.depth == 0
    p.copy_at_(TensorDict(x=torch.ones(()), y=torch.zeros(())), 1)
    assert p.x.tolist() == [0.0, 1.0, 0.0]


def test_lazy_stack_split_and_copy():
    """A lazy stack supports split_keys, copy and clear."""
    stack = lazy_stack([make_td(), make_td()])
    taken, rest = stack.split_keys(["a"])
    assert list(taken.keys()) == ["a"] and "a" not in rest.keys()
    assert taken["a"].shape == torch.Size([2, 3, 2])
    assert "a" in stack.keys()
    c = stack.copy()
    assert type(c) is type(stack)
    c.clear()
    assert c.is_empty() and not stack.is_empty()


# --- to_tensordict ---------------------------------------------------------------------


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


def test_separates_missing_key_gives_none_entry():
    """strict=False, or a default that does not fit the batch size, stores None under the key."""
    td = make_td()
    out = td.separates("z", strict=False)
    assert "z" in out.keys() and out.get("z").data is None
    with pytest.warns(FutureWarning):
        out = td.separates("y", "a", default=0)
    assert out.get("y").data is None and "a" in out.keys() and "a" not in td.keys()


def test_tensorclass_from_list():
    """A tensorclass stacks dicts of field values, or instances, into one instance."""
    from_dicts = Point.from_list([{"x": torch.zeros(3), "y": torch.zeros(3)}] * 2)
    assert type(from_dicts) is Point and from_dicts.batch_size == torch.Size([2])
    from_points = Point.from_list([Point(x=torch.zeros(3), y=torch.ones(3))] * 2)
    assert type(from_points) is Point and from_points.y.shape == torch.Size([2, 3])
