"""NonTensorStack, LinkedList, MetaData, NonTensorDataBase and the non-tensor predicates.

Differential: every test also runs under the reference (from inside tests/).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    is_leaf_nontensor,
    is_non_tensor,
    lazy_stack,
    set_capture_non_tensor_stack,
    set_list_to_stack,
)
from tensordict.tensorclass import NonTensorDataBase


def names_td() -> TensorDict:
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    td["x"] = ["a", "b", "c"]
    return td


# ---------------------------------------------------------------------- stacking
def test_tutorial_recipe_stack_then_index():
    """Stacking tensordicts with different strings gives a stack; [0] gives the first row's string."""
    td = torch.stack([TensorDict(name="a"), TensorDict(name="b")])
    assert type(td.get("name")) is NonTensorStack
    assert td["name"] == ["a", "b"]
    assert td[0]["name"] == "a" and td[1]["name"] == "b"


def test_equal_values_still_stack():
    """Equal values stack into a NonTensorStack too; its data is the one value."""
    td = torch.stack([TensorDict(name="a"), TensorDict(name="a")])
    assert type(td.get("name")) is NonTensorStack
    assert td.get("name").data == "a" and td["name"] == ["a", "a"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_capture_option_gives_one_entry_for_equal_values():
    """With capture_non_tensor_stack(True), equal values stack into one NonTensorData."""
    with set_capture_non_tensor_stack(True):
        same = torch.stack([TensorDict(name="a"), TensorDict(name="a")])
        different = torch.stack([TensorDict(name="a"), TensorDict(name="b")])
    assert type(same.get("name")) is NonTensorData and same["name"] == "a"
    assert type(different.get("name")) is NonTensorStack


def test_stack_is_a_lazy_stack_of_nontensordata():
    """A stack is a LazyStackedTensorDict whose members are the NonTensorData entries."""
    stack = NonTensorStack("a", "b", "c")
    assert isinstance(stack, LazyStackedTensorDict)
    assert [type(m) for m in stack.tensordicts] == [NonTensorData] * 3
    assert stack.stack_dim == 0 and stack.batch_size == torch.Size([3])
    assert list(stack.keys()) == [] and len(stack) == 3 and stack.numel() == 3


def test_torch_stack_of_nontensordata_and_of_stacks():
    """torch.stack of entries gives a stack; stacking stacks adds a dimension at dim."""
    pair = torch.stack([NonTensorData("a"), NonTensorData("b")])
    assert type(pair) is NonTensorStack and pair.tolist() == ["a", "b"]
    s = NonTensorStack("a", "b", "c")
    assert torch.stack([s, s]).batch_size == torch.Size([2, 3])
    assert torch.stack([s, s], 1).tolist() == [["a", "a"], ["b", "b"], ["c", "c"]]


def test_cat_of_stacks():
    """torch.cat of stacks concatenates the values; of tensordicts, their stack entries."""
    s = NonTensorStack("a", "b")
    assert torch.cat([s, s]).tolist() == ["a", "b", "a", "b"]
    td = names_td()
    assert torch.cat([td, td])["x"] == ["a", "b", "c"] * 2


def test_lazy_stack_get_gives_a_stack():
    """get() of a non-tensor key of a lazy stack gives a stack; [] gives the list."""
    stack = lazy_stack([TensorDict(x="a"), TensorDict(x="b")])
    assert type(stack.get("x")) is NonTensorStack and stack["x"] == ["a", "b"]
    same = lazy_stack([TensorDict(x="a"), TensorDict(x="a")])
    assert type(same.get("x")) is NonTensorStack


def test_stack_of_entries_with_batch_dims():
    """Entries with batch dims stack along dim: every element keeps its entry's value."""
    a, b = NonTensorData("a", batch_size=[2]), NonTensorData("b", batch_size=[2])
    assert torch.stack([a, b], 1).tolist() == [["a", "b"], ["a", "b"]]


# ---------------------------------------------------------------------- reading
def test_getitem_gives_a_linked_list():
    """td[key] of a stack is a LinkedList: a list equal to a plain list, indexable, with its repr."""
    values = names_td()["x"]
    assert isinstance(values, list) and type(values).__name__ == "LinkedList"
    assert values == ["a", "b", "c"] and values != ("a", "b", "c")
    assert values[1] == "b" and values[1:] == ["b", "c"]
    assert repr(values) == "LinkedList(['a', 'b', 'c'])"


def test_linked_list_rows_for_two_batch_dims():
    """A stack of two batch dims reads as a LinkedList of LinkedList rows."""
    td = TensorDict(x=[["a", "b"], ["c", "d"]], batch_size=[2, 2])
    values = td["x"]
    assert values == [["a", "b"], ["c", "d"]] and type(values[0]) is type(values)
    assert values.tolist() == [["a", "b"], ["c", "d"]] and type(values.tolist()) is list


def test_linked_list_item_assignment_writes_back():
    """Assigning an item of the LinkedList writes it into the tensordict."""
    td = names_td()
    values = td["x"]
    values[0] = "z"
    assert td["x"] == ["z", "b", "c"] and values == ["z", "b", "c"]


def test_linked_list_append_unlinks():
    """After append the list no longer writes back; the tensordict keeps its values."""
    td = names_td()
    values = td["x"]
    values.append("d")
    values[0] = "z"
    assert td["x"] == ["a", "b", "c"] and values == ["z", "b", "c", "d"]


def test_row_of_a_tensordict_gives_the_value():
    """td[i] of a tensordict holding a stack gives that row's value; slices and masks give stacks."""
    td = names_td()
    assert td[0]["x"] == "a" and td[2]["x"] == "c"
    assert type(td[0].get("x")) is NonTensorData
    assert td[1:]["x"] == ["b", "c"]
    assert td[torch.tensor([True, False, True])]["x"] == ["a", "c"]


def test_tolist_data_and_iteration():
    """tolist() is a plain list; data needs one value; iterating yields NonTensorData members."""
    stack = NonTensorStack("a", "b")
    assert stack.tolist() == ["a", "b"] and type(stack.tolist()) is list
    with pytest.raises(AttributeError):
        stack.data  # noqa: B018 - the property raises
    assert [m.data for m in stack] == ["a", "b"]
    assert [type(m) for m in stack.unbind(0)] == [NonTensorData, NonTensorData]


def test_to_dict_and_nested_key():
    """to_dict() gives the list of values; a nested key reads the stack's list."""
    td = TensorDict({"n": {"x": ["a", "b"]}}, batch_size=[2])
    assert td["n", "x"] == ["a", "b"]
    assert td.to_dict()["n"]["x"] == ["a", "b"]


# ---------------------------------------------------------------------- indexing and shapes
def test_indexing_a_stack():
    """Ints give NonTensorData; slices, masks, long tensors, None and tuples give stacks."""
    s = NonTensorStack("a", "b", "c")
    assert type(s[0]) is NonTensorData and s[0].data == "a"
    assert s[1:].tolist() == ["b", "c"]
    assert s[torch.tensor([True, False, True])].tolist() == ["a", "c"]
    assert s[torch.tensor([2, 0])].tolist() == ["c", "a"]
    assert s[None].batch_size == torch.Size([1, 3])
    grid = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
    assert grid[0].tolist() == ["a", "b"] and grid[:, 0].tolist() == ["a", "c"]
    assert grid[1, 0].data == "c"


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    start=st.integers(-7, 7) | st.none(),
    stop=st.integers(-7, 7) | st.none(),
    step=st.integers(1, 3) | st.none(),
)
def test_slicing_follows_the_tensor(n, start, stop, step):
    """A slice of a stack holds the values a tensor's slice picks, in order."""
    values = [f"v{i}" for i in range(n)]
    index = slice(start, stop, step)
    picked = torch.arange(n)[index].tolist()
    assert NonTensorStack(*values)[index].tolist() == [values[i] for i in picked]


def test_shape_operations():
    """reshape, unsqueeze and expand of a stack keep one value per element."""
    s = NonTensorStack("a", "b", "c", "d")
    assert s.reshape(2, 2).tolist() == [["a", "b"], ["c", "d"]]
    assert s.unsqueeze(0).tolist() == [["a", "b", "c", "d"]]
    td = names_td()
    assert td.reshape(3, 1).get("x").tolist() == [["a"], ["b"], ["c"]]
    assert td.expand(2, 3).get("x").tolist() == [["a", "b", "c"]] * 2
    assert td.split(2)[1].get("x").tolist() == ["c"]


# ---------------------------------------------------------------------- values
def test_equality_gives_a_bool_tensor():
    """== between stacks is a bool tensor of the batch; against a list or str it is False."""
    s = NonTensorStack("a", "b", "c")
    assert (s == NonTensorStack("a", "x", "c")).tolist() == [True, False, True]
    assert (s != NonTensorStack("a", "x", "c")).tolist() == [False, True, False]
    assert (s == ["a", "b", "c"]) is False and (s == "a") is False


def test_clone_to_and_apply():
    """clone() gives new members; to(device) sets the device; apply() keeps the values."""
    s = NonTensorStack("a", "b")
    copy = s.clone()
    assert copy.tolist() == ["a", "b"] and copy.tensordicts[0] is not s.tensordicts[0]
    assert s.to("cpu").device == torch.device("cpu") and s.device is None
    td = names_td()
    out = td.apply(lambda t: t + 1)
    assert type(out.get("x")) is NonTensorStack and out["x"] == ["a", "b", "c"]
    assert out["a"].tolist() == [1, 2, 3]
    assert td.to("cpu").get("x").device == torch.device("cpu")


def test_clone_of_a_tensordict_is_independent():
    """Writing into a clone's stack leaves the source's values alone."""
    td = names_td()
    copy = td.clone()
    copy["x"][0] = "z"
    assert td["x"] == ["a", "b", "c"] and copy["x"] == ["z", "b", "c"]


# ---------------------------------------------------------------------- writing
def test_index_assignment_into_a_stack_entry():
    """Assigning rows of a tensordict, or items and slices of its stack, writes the values."""
    td = names_td()
    td[0] = TensorDict(a=10, x="z")
    assert td["x"] == ["z", "b", "c"] and td["a"].tolist() == [10, 1, 2]
    td.get("x")[1] = "q"
    assert td["x"] == ["z", "q", "c"]
    td.get("x")[1:] = ["r", "s"]
    assert td["x"] == ["z", "r", "s"]
    td.get("x")[:2] = NonTensorStack("u", "v")
    assert td["x"] == ["u", "v", "s"]


def test_set_replaces_the_stack():
    """set_ and set(inplace=True) with new values replace the stack's values."""
    td = names_td()
    td.set_("x", ["u", "v", "w"])
    assert td["x"] == ["u", "v", "w"]
    td.set("x", NonTensorStack("p", "q", "r"), inplace=True)
    assert td["x"] == ["p", "q", "r"]


# ---------------------------------------------------------------------- assigning lists
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 2, 3], [1, 2, 3]),
        ([1.0, 2, 3], [1.0, 2.0, 3.0]),
        ([True, False, True], [True, False, True]),
    ],
)
def test_list_of_numbers_becomes_a_tensor(value, expected):
    """A list of numbers assigned to a key is stored as a tensor."""
    td = TensorDict(batch_size=[3])
    td["x"] = value
    assert isinstance(td.get("x"), torch.Tensor) and td["x"].tolist() == expected


def test_list_of_strings_becomes_a_stack():
    """A list of strings (or mixed values) is stored as a NonTensorStack of the batch."""
    td = TensorDict(batch_size=[3])
    td["x"] = ["a", "b", "c"]
    td["mixed"] = ["a", 1, None]
    assert type(td.get("x")) is NonTensorStack and td.get("x").batch_size == torch.Size([3])
    assert td["mixed"] == ["a", 1, None]


def test_nested_lists():
    """Nested numbers give a tensor; nested strings a stack with one dim per level."""
    td = TensorDict(batch_size=[2])
    td["n"] = [[1, 2], [3, 4]]
    td["s"] = [["a", "b"], ["c", "d"]]
    assert td["n"].shape == torch.Size([2, 2])
    assert td.get("s").batch_size == torch.Size([2, 2])


def test_list_length_must_match_the_batch():
    """A list whose length is not the batch size is refused, naming the key; nothing is stored."""
    td = TensorDict(batch_size=[3])
    with pytest.raises(RuntimeError, match="'x'"):
        td["x"] = ["a", "b"]
    with pytest.raises(RuntimeError, match="'x'"):
        td["x"] = []
    assert "x" not in td.keys()


def test_list_in_a_tensordict_without_batch_dims():
    """With batch size [], a list of strings is a stack of its own length; numbers a tensor."""
    td = TensorDict()
    td["s"] = ["a", "b"]
    td["n"] = [1, 2]
    assert td.get("s").batch_size == torch.Size([2]) and td["n"].tolist() == [1, 2]


def test_list_of_tensordicts_and_of_tensors_are_stacked():
    """A list of tensordicts or of tensors is stacked densely."""
    td = TensorDict(batch_size=[2])
    td["t"] = [TensorDict(a=1), TensorDict(a=2)]
    td["v"] = [torch.zeros(3), torch.ones(3)]
    assert td["t", "a"].tolist() == [1, 2] and td["v"].shape == torch.Size([2, 3])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_list_to_stack_off_keeps_one_entry():
    """With set_list_to_stack(False), a list of strings is one NonTensorData; numbers a tensor."""
    with set_list_to_stack(False):
        td = TensorDict(batch_size=[3])
        td["x"] = ["a", "b", "c"]
        td["n"] = [1, 2, 3]
    assert type(td.get("x")) is NonTensorData and list(td["x"]) == ["a", "b", "c"]
    assert td["n"].tolist() == [1, 2, 3]


def test_constructor_with_a_list():
    """TensorDict(x=list, batch_size) stores a stack as assignment does."""
    td = TensorDict({"x": ["a", "b"]}, batch_size=[2])
    assert type(td.get("x")) is NonTensorStack and td["x"] == ["a", "b"]


# ---------------------------------------------------------------------- constructors
def test_from_list_and_from_nontensordata():
    """from_list nests one dim per level; from_nontensordata repeats the value over the batch."""
    grid = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
    assert grid.batch_size == torch.Size([2, 2]) and grid.tolist() == [["a", "b"], ["c", "d"]]
    repeated = NonTensorStack.from_nontensordata(NonTensorData("a", batch_size=[2]))
    assert type(repeated) is NonTensorStack and repeated.tolist() == ["a", "a"]


def test_constructor_forms():
    """NonTensorStack() is empty with batch [0]; entries given are kept as members."""
    assert NonTensorStack().batch_size == torch.Size([0])
    stack = NonTensorStack(NonTensorData("a"), NonTensorData("b"))
    assert stack.tolist() == ["a", "b"]


def test_stack_is_unhashable_and_not_locked():
    """A stack cannot be hashed and has no lock of its own."""
    stack = NonTensorStack("a")
    with pytest.raises(TypeError):
        hash(stack)
    assert stack.is_locked is False


# ---------------------------------------------------------------------- MetaData
def test_metadata_keeps_the_object():
    """A MetaData entry reads back as the very object; indexing and unsqueeze keep a MetaData."""
    config = {"lr": 0.1}
    entry = MetaData(config, batch_size=[3])
    td = TensorDict(a=torch.zeros(3), config=entry, batch_size=[3])
    assert td["config"] is config
    assert type(td[0].get("config")) is MetaData
    assert type(entry[1:]) is MetaData and entry[1:].batch_size == torch.Size([2])
    assert type(entry.unsqueeze(0)) is MetaData and entry.unsqueeze(0).batch_size == torch.Size(
        [1, 3]
    )


def test_metadata_stacking_compares_identity():
    """Stacking MetaData holding the same object gives one MetaData; equal copies give a stack."""
    config = {"lr": 0.1}
    td = TensorDict(config=MetaData(config, batch_size=[3]), batch_size=[3])
    stacked = torch.stack([td, td])
    assert type(stacked.get("config")) is MetaData and stacked["config"] is config
    assert stacked.get("config").batch_size == torch.Size([2, 3])
    copies = torch.stack([MetaData({"a": 1}), MetaData({"a": 1})])
    assert type(copies) is NonTensorStack


def test_metadata_clone_copies_the_value():
    """clone() of a MetaData holds an equal but distinct value."""
    entry = MetaData({"lr": 0.1})
    copy = entry.clone()
    assert copy.data == entry.data and copy.data is not entry.data


def test_typed_metadata():
    """MetaData[cls] refuses values of another type with a TypeError; the class is cached."""
    assert MetaData[str]("a").data == "a"
    assert MetaData[str] is MetaData[str] and issubclass(MetaData[str], MetaData)
    with pytest.raises(TypeError, match="str"):
        MetaData[str](1)


def test_nontensordatabase_is_the_common_base():
    """NonTensorData and MetaData derive from NonTensorDataBase; MetaData is no NonTensorData."""
    assert isinstance(NonTensorData(1), NonTensorDataBase)
    assert isinstance(MetaData(1), NonTensorDataBase)
    assert not isinstance(MetaData(1), NonTensorData)


def test_nontensordata_refuses_unknown_attributes():
    """Setting an attribute that is not a field raises AttributeError naming it."""
    entry = NonTensorData("a", batch_size=[2])
    with pytest.raises(AttributeError, match="foo"):
        entry.foo = 1
    with pytest.raises(AttributeError, match="foo"):
        MetaData("a").foo = 1


# ---------------------------------------------------------------------- predicates
def test_is_non_tensor():
    """is_non_tensor is True for the non-tensor entries only (not for classes nor plain values)."""
    for value in (NonTensorData(1), NonTensorStack(1, 2), MetaData(1)):
        assert is_non_tensor(value)
    for value in (torch.zeros(1), TensorDict(), 1, "a", NonTensorData):
        assert not is_non_tensor(value)


def test_is_leaf_nontensor():
    """is_leaf_nontensor is True for tensor and non-tensor classes; it lists non-tensors as leaves."""
    for cls in (torch.Tensor, NonTensorData, NonTensorStack, MetaData, NonTensorDataBase):
        assert is_leaf_nontensor(cls)
    for cls in (TensorDict, LazyStackedTensorDict, int, str):
        assert not is_leaf_nontensor(cls)
    td = TensorDict(a={}, b="text", c=torch.zeros(()))
    assert sorted(td.keys(leaves_only=True, is_leaf=is_leaf_nontensor)) == ["b", "c"]
