"""set_non_tensor, non_tensor_items, filter_non_tensor_data and the pad method."""

from __future__ import annotations

import pytest
import torch

from tensordict import NonTensorData, TensorDict, is_leaf_nontensor, lazy_stack


def _td():
    td = TensorDict(a=torch.zeros(2), s="x", sub={"u": "y", "b": torch.ones(2)}, batch_size=[2])
    td["l"] = ["p", "q"]
    return td


def test_set_non_tensor_keeps_the_python_object():
    """set_non_tensor stores a list or number as one NonTensorData, not a tensor or a stack."""
    td = _td()
    td.set_non_tensor("n", [1, 2])
    td.set_non_tensor("k", 3)
    assert type(td.get("n")) is NonTensorData and td["n"] == [1, 2]
    assert type(td.get("k")) is NonTensorData and td["k"] == 3


def test_set_non_tensor_creates_missing_levels():
    """A nested key creates the levels it goes through, each of the parent's batch size."""
    td = TensorDict(batch_size=[2]).set_non_tensor(("meta", "ids"), [1, 2])
    assert td["meta", "ids"] == [1, 2]
    assert td["meta"].batch_size == torch.Size([2])


def test_non_tensor_items_in_walk_order():
    """non_tensor_items lists the non-tensor entries, nested ones with include_nested."""
    td = _td()
    assert [k for k, _ in td.non_tensor_items()] == ["s", "l"]
    assert [k for k, _ in td.non_tensor_items(include_nested=True)] == ["s", ("sub", "u"), "l"]
    assert all(not isinstance(v, torch.Tensor) for _, v in td.non_tensor_items(True))


def test_filter_non_tensor_data_drops_them_everywhere():
    """filter_non_tensor_data keeps the tensors (shared) and nested levels, without non-tensors."""
    td = _td()
    out = td.filter_non_tensor_data()
    assert set(out.keys(True, True)) == {"a", ("sub", "b")}
    assert out["a"].data_ptr() == td["a"].data_ptr()


def test_pad_method_is_the_function():
    """td.pad(pad_size) pads the batch dims with the value, as tensordict.pad does."""
    td = TensorDict(a=torch.ones(2), batch_size=[2])
    out = td.pad([1, 1], value=-1.0)
    assert out["a"].tolist() == [-1.0, 1.0, 1.0, -1.0]


def test_lazy_stack_set_non_tensor_reaches_every_member():
    """set_non_tensor on a lazy stack stores the value in each member."""
    stack = lazy_stack([TensorDict(a=torch.zeros(3), batch_size=[3])] * 2)
    stack.set_non_tensor("z", "w")
    assert all(m["z"] == "w" for m in stack.tensordicts)


def _tree():
    return TensorDict(a=torch.zeros(2), sub={"b": torch.ones(2), "e": {}}, s="x", batch_size=[2])


def test_rename_keys_moves_entries_and_shares_leaves():
    """rename_keys moves leaves (tensors and non-tensors) to new keys, sharing them."""
    td = _tree()
    out = td.rename_keys({"a": ("sub", "z"), ("sub", "b"): "b2", "s": "t"})
    assert set(out.keys(True, True, is_leaf=is_leaf_nontensor)) == {"b2", ("sub", "z"), "t"}
    assert out["sub", "z"] is td["a"] and out["t"] == "x"
    # the source is unchanged
    assert set(td.keys(True, True, is_leaf=is_leaf_nontensor)) == {"a", ("sub", "b"), "s"}


def test_rename_keys_swaps_and_moves_whole_levels():
    """Sources are read first (a swap works); renaming a level moves what it holds."""
    td = _tree()
    swapped = TensorDict(a=torch.zeros(2), b=torch.ones(2), batch_size=[2]).rename_keys(
        {"a": "b", "b": "a"}
    )
    assert swapped["a"].tolist() == [1.0, 1.0]
    moved = td.rename_keys({"sub": "S"})
    assert "sub" not in moved.keys() and set(moved["S"].keys()) == {"b", "e"}


def test_rename_keys_drops_levels_left_empty_only():
    """A level emptied by the renaming goes; one holding an empty level stays."""
    td = TensorDict(a={"b": torch.zeros(2)}, c={"d": torch.zeros(2), "e": {}}, batch_size=[2])
    out = td.rename_keys({("a", "b"): "x", ("c", "d"): "y"})
    assert "a" not in out.keys()
    assert set(out["c"].keys()) == {"e"}


def test_rename_keys_refuses_what_it_cannot_do():
    """A missing source is a KeyError (unless strict=False); a taken destination a ValueError."""
    td = _tree()
    with pytest.raises(KeyError, match="nope"):
        td.rename_keys({"nope": "x"})
    assert set(td.rename_keys({"nope": "x"}, strict=False).keys()) == set(td.keys())
    for mapping in ({"a": "sub"}, {"a": "s"}):
        with pytest.raises(ValueError, match="destination"):
            td.rename_keys(mapping)


def test_rename_keys_on_a_lazy_stack_renames_each_member():
    """A lazy stack renames the keys of every member and stays lazy."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2]) for _ in range(2)])
    out = stack.rename_keys({"a": "z"})
    assert type(out) is type(stack)
    assert all(set(m.keys()) == {"z"} for m in out.tensordicts)
