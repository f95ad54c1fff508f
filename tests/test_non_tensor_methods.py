"""set_non_tensor, non_tensor_items, filter_non_tensor_data and the pad method."""

from __future__ import annotations

import torch

from tensordict import NonTensorData, TensorDict, lazy_stack


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
