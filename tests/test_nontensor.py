"""NonTensorData and MetaData as entries of a tensordict: keys, device, lock, writes and comparisons.

Differential: every test also runs under the reference (from inside tests/), unless
marked ``ours_only`` with the reason.
"""

from __future__ import annotations

import pickle

import pytest
import torch
from torch.utils import _pytree

from tensordict import MetaData, NonTensorData, NonTensorStack, TensorDict

from conftest import ours_only


# ---------------------------------------------------------------------- keys
def test_entry_has_no_keys():
    """keys(), values() and items() of a non-tensor entry are empty, whatever the arguments."""
    entry = NonTensorData("a", batch_size=[2])
    assert list(entry.keys()) == [] and len(entry.keys()) == 0
    assert list(entry.keys(include_nested=True, leaves_only=True)) == []
    assert "data" not in entry.keys()
    assert list(entry.values()) == [] and list(entry.items(True, True)) == []


def test_walk_through_keys_stops_at_entries():
    """A walk of a tree through keys() and get() treats a non-tensor entry as a leaf with no keys."""
    td = TensorDict(a=torch.zeros(2), s="x", sub={"m": MetaData("y")}, batch_size=[2])
    found = []

    def walk(node, path):
        for key in node.keys():
            found.append((*path, key))
            value = node.get(key)
            if hasattr(value, "keys"):
                walk(value, (*path, key))

    walk(td, ())
    assert sorted(found) == [("a",), ("s",), ("sub",), ("sub", "m")]


def test_vars_of_an_entry_is_empty():
    """vars(entry) holds none of the fields: the value is read through ``data`` only."""
    entry = NonTensorData("a")
    assert "data" not in vars(entry)
    assert entry.data == "a"


def test_unknown_attribute_is_refused():
    """Setting an attribute that is not a field raises AttributeError and sets nothing."""
    entry = NonTensorData("a")
    with pytest.raises(AttributeError):
        entry.extra = 1
    assert not hasattr(entry, "extra")


# ---------------------------------------------------------------------- device
@pytest.mark.parametrize("value", ["x", NonTensorData("x"), MetaData("x")])
def test_entry_takes_the_device_of_its_tensordict(value):
    """A non-tensor entry set in a tensordict with a device reports that device, nested too."""
    td = TensorDict(a=value, sub={"b": value}, batch_size=[], device="cpu")
    assert td.get("a").device == torch.device("cpu")
    assert td.get(("sub", "b")).device == torch.device("cpu")


def test_entry_follows_the_tensordict_to_a_device():
    """td.to(device) gives the non-tensor entries that device; the source keeps None."""
    td = TensorDict(a="x", n=["p", "q"], batch_size=[2])
    moved = td.to("cpu")
    assert moved.get("a").device == torch.device("cpu")
    assert moved.get("n").device == torch.device("cpu")
    assert td.get("a").device is None


# ---------------------------------------------------------------------- lock
def test_entry_locks_with_its_tensordict():
    """Entries of a locked tensordict are locked, nested ones and stacks too; unlock_ unlocks them."""
    td = TensorDict(a="x", n=["p", "q"], sub={"b": "y"}, batch_size=[2]).lock_()
    assert td.get("a").is_locked and td.get(("sub", "b")).is_locked
    assert td.get("n").is_locked
    td.unlock_()
    assert not td.get("a").is_locked and not td.get("n").is_locked


def test_entry_set_into_a_locked_tensordict_is_locked():
    """set_() into a locked tensordict stores a locked entry."""
    td = TensorDict(a="x", batch_size=[]).lock_()
    td.set_("a", "y")
    assert td["a"] == "y" and td.get("a").is_locked


def test_locked_entry_refuses_a_new_value():
    """A locked entry refuses ``entry.data = value`` with RuntimeError and keeps its value."""
    td = TensorDict(a="x", batch_size=[]).lock_()
    with pytest.raises(RuntimeError, match="lock"):
        td.get("a").data = "y"
    assert td["a"] == "x"


def test_derived_entries_are_unlocked():
    """Indexing or cloning a locked entry gives an unlocked one."""
    entry = NonTensorData("a", batch_size=[2]).lock_()
    assert not entry[0].is_locked and not entry.clone().is_locked
    assert not entry.unlock_().is_locked


def test_locked_stack_takes_writes():
    """A stack of a locked tensordict is locked and still takes writes into its elements."""
    td = TensorDict(n=NonTensorStack("a", "b"), batch_size=[2]).lock_()
    td.get("n")[0] = "z"
    assert td.get("n").tolist() == ["z", "b"] and td.get("n").is_locked


def test_locked_entry_pickles():
    """A locked entry pickles and unpickles with its value, batch size and lock."""
    entry = NonTensorData({"k": 1}, batch_size=[3]).lock_()
    out = pickle.loads(pickle.dumps(entry))
    assert out.data == {"k": 1} and out.batch_size == torch.Size([3]) and out.is_locked


# ---------------------------------------------------------------------- writes at an index
def test_another_value_at_an_index_makes_a_stack():
    """td[index] = ... with another value turns the NonTensorData into a NonTensorStack."""
    td = TensorDict(s="a", x=torch.zeros(3), batch_size=[3])
    td[0] = TensorDict(s="b", x=torch.ones(()))
    assert isinstance(td.get("s"), NonTensorStack)
    assert td.get("s").tolist() == ["b", "a", "a"] and td["x"].tolist() == [1.0, 0.0, 0.0]


def test_the_same_value_at_an_index_keeps_the_entry():
    """Writing the value the entry already holds keeps one NonTensorData."""
    td = TensorDict(s="a", batch_size=[3])
    td[1:] = TensorDict(s="a", batch_size=[2])
    assert type(td.get("s")) is NonTensorData and td["s"] == "a"


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (slice(1, None, 2), ["a", "b", "a", "b"]),
        (torch.tensor([True, False, False, True]), ["b", "a", "a", "b"]),
        (torch.tensor([2]), ["a", "a", "b", "a"]),
    ],
)
def test_write_at_index_kinds(index, expected):
    """Slices, masks and index tensors all write the new value at the rows they select."""
    td = TensorDict(s=NonTensorData("a", batch_size=[4]), batch_size=[4])
    rows = len(torch.arange(4)[index])
    td[index] = TensorDict(s=NonTensorData("b", batch_size=[rows]), batch_size=[rows])
    assert td.get("s").tolist() == expected


def test_write_a_stack_at_an_index():
    """A NonTensorStack written at a slice puts one value per row."""
    td = TensorDict(s="a", batch_size=[3])
    td[1:] = TensorDict(s=NonTensorStack("b", "c"), batch_size=[2])
    assert td.get("s").tolist() == ["a", "b", "c"]


def test_write_at_an_index_in_two_dims():
    """An index over two batch dims writes one element of a [3, 2] entry."""
    td = TensorDict(s="a", batch_size=[3, 2])
    td[0, 1] = TensorDict(s="b", batch_size=[])
    assert td.get("s").tolist() == [["a", "b"], ["a", "a"], ["a", "a"]]


@pytest.mark.parametrize("method", ["update_at_", "copy_at_"])
def test_update_at_and_copy_at_make_a_stack(method):
    """update_at_ and copy_at_(fast=False) write another value as index assignment does."""
    td = TensorDict(val=NonTensorData(0, batch_size=[6]), batch_size=[6])
    new = TensorDict(val=NonTensorData(1, batch_size=[3]), batch_size=[3])
    kwargs = {"fast": False} if method == "copy_at_" else {}
    getattr(td, method)(new, slice(1, None, 2), **kwargs)
    assert td.get("val").tolist() == [0, 1] * 3


def test_set_at_makes_a_stack():
    """set_at_ of another value at an index makes the entry a NonTensorStack."""
    td = TensorDict(s="a", batch_size=[3])
    td.set_at_("s", "b", 2)
    assert td.get("s").tolist() == ["a", "a", "b"]


def test_write_at_an_index_into_a_locked_tensordict():
    """Index assignment works in a locked tensordict; the tensordict stays locked."""
    td = TensorDict({"a": {"b": "1"}}, batch_size=[3]).lock_()
    td[0] = TensorDict({"a": {"b": "0"}}, [])
    assert td.is_locked and td["a"].is_locked
    assert td[0]["a", "b"] == "0" and td[1]["a", "b"] == "1"


def test_write_at_an_index_keeps_the_device():
    """The stack made by a write at an index keeps the tensordict's device."""
    td = TensorDict(s="a", batch_size=[2], device="cpu")
    td[0] = TensorDict(s="b", batch_size=[])
    assert td.get("s").device == torch.device("cpu")


def test_entry_refuses_another_value_at_an_index():
    """entry[index] = value on a NonTensorData itself raises ValueError: it cannot change class."""
    entry = NonTensorData("a", batch_size=[3])
    with pytest.raises(ValueError):
        entry[0] = "b"
    assert entry.data == "a"


# ---------------------------------------------------------------------- tolist and shapes
def test_tolist_gives_one_value_per_element():
    """tolist() nests the value once per batch element; without batch dims it is the value."""
    assert NonTensorData(0, batch_size=[2, 3]).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert NonTensorData([1, 2], batch_size=[2]).tolist() == [[1, 2], [1, 2]]
    assert NonTensorData("a", batch_size=[0]).tolist() == []
    assert NonTensorData("a").tolist() == "a"
    assert MetaData("a", batch_size=[2]).tolist() == ["a", "a"]


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda e: e.expand(2, 1, 3), (2, 1, 3)),
        (lambda e: e.expand(4, 2, 3), (4, 2, 3)),
        (lambda e: e.unsqueeze(0), (1, 1, 3)),
        (lambda e: e.unsqueeze(-1), (1, 3, 1)),
    ],
)
def test_expand_and_unsqueeze_give_a_stack(make, shape):
    """expand() to more batch dims and unsqueeze() give a NonTensorStack of the value."""
    out = make(NonTensorData(0, batch_size=[1, 3]))
    assert isinstance(out, NonTensorStack) and out.batch_size == torch.Size(shape)
    assert out.tolist() == torch.zeros(shape, dtype=torch.long).tolist()


@pytest.mark.parametrize(("size", "shape"), [([2, 3], (-1, 3)), ([1, 3], (2, 3))])
def test_expand_over_as_many_dims_keeps_the_entry(size, shape):
    """expand() that adds no batch dim gives a NonTensorData."""
    out = NonTensorData("a", batch_size=size).expand(*shape)
    assert type(out) is NonTensorData and out.batch_size == torch.Size([2, 3])


def test_metadata_stays_one_entry():
    """MetaData spread by expand() or unsqueeze() stays one MetaData."""
    entry = MetaData("a", batch_size=[2])
    assert type(entry.expand(3, 2)) is MetaData and type(entry.unsqueeze(0)) is MetaData


def test_tensordict_shapes_spread_entries():
    """td.unsqueeze and td.expand give stacks of the entry's value; squeeze() brings one back."""
    td = TensorDict(foo=NonTensorData(3))
    tdu = td.unsqueeze(0)
    assert isinstance(tdu.get("foo"), NonTensorStack) and tdu["foo"] == [3]
    assert type(tdu.squeeze().get("foo")) is NonTensorData and tdu.squeeze()["foo"] == 3
    assert type(tdu.squeeze(0).get("foo")) is NonTensorData
    expanded = TensorDict(foo=NonTensorData(0, batch_size=(1,)), batch_size=(1,)).expand(2, 3)
    assert expanded.get("foo").tolist() == [[0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("dims", [(None, None), (0, -1), (None, 0), (0, None)])
def test_flatten_without_batch_dims(dims):
    """flatten() of an entry without batch dims gives batch size [1]; None means the default dims."""
    out = NonTensorData(0).flatten(*dims)
    assert out.batch_size == torch.Size([1]) and out.tolist() == [0]


# ---------------------------------------------------------------------- comparisons
def test_entries_compare_element_by_element():
    """== and != between non-tensor entries give bool tensors of the broadcast batch size."""
    a = NonTensorData("a", batch_size=[2])
    assert (a == NonTensorData("a", batch_size=[2])).tolist() == [True, True]
    assert (a == NonTensorStack("a", "b")).tolist() == [True, False]
    assert (NonTensorStack("a", "b") == a).tolist() == [True, False]
    assert (a != NonTensorData("b", batch_size=[2])).tolist() == [True, True]
    assert (NonTensorData("a") == NonTensorData("a")).item()


def test_tensordict_comparison_compares_values():
    """td == other compares the non-tensor entries: a differing string makes all() False."""
    a = TensorDict(x=torch.zeros(2), s="a", batch_size=[2])
    b = TensorDict(x=torch.zeros(2), s="b", batch_size=[2])
    assert not (a == b).all() and (a == a.clone()).all()
    assert (a == b).get("s").tolist() == [False, False]
    assert (a != b).get("s").tolist() == [True, True]
    assert (a != b).any()


def test_tensordict_comparison_of_stacks():
    """A stack compares element by element with another stack or a NonTensorData."""
    a = TensorDict(s=NonTensorStack("a", "b"), batch_size=[2])
    b = TensorDict(s=NonTensorStack("a", "c"), batch_size=[2])
    c = TensorDict(s=NonTensorData("a", batch_size=[2]), batch_size=[2])
    assert (a == b).get("s").tolist() == [True, False]
    assert (c == b).get("s").tolist() == [True, False]


def test_logical_operators_combine_values():
    """|, ^ and & of tensordicts combine boolean non-tensor values into tensors."""
    td = TensorDict(b=NonTensorData(True))
    assert (td | td).get("b").item() and not (td ^ td).get("b").item()
    assert (td == td).get("b").item() and not (td != td).get("b").item()


@ours_only  # the reference gives an empty TensorDict for a value compared with a tensor
def test_entry_compares_with_a_tensor_of_its_batch_size():
    """A non-tensor entry compared with a tensor leaf compares the value with its numbers."""
    a = TensorDict(b=NonTensorData(3))
    b = TensorDict(b=torch.tensor(3))
    assert (a == b).get("b").item() and (b == a).get("b").item()
    assert not (a != b).get("b").item()


# ---------------------------------------------------------------------- views of a stack
def test_write_through_a_slice_reaches_the_stack():
    """A write into a slice of a NonTensorStack reaches the stack, and the other way round."""
    stack = NonTensorStack.from_list(["a", "b", "c"])
    view = stack[1:3]
    view[0] = "z"
    assert stack.tolist() == ["a", "z", "c"]
    stack[2] = "q"
    assert view.tolist() == ["z", "q"]


@pytest.mark.parametrize(
    ("view", "index", "expected"),
    [
        (lambda s: s[:, 1], 0, [["a", "z"], ["c", "d"]]),
        (lambda s: s.reshape(-1), 0, [["z", "b"], ["c", "d"]]),
        (lambda s: s.permute(1, 0), (0, 1), [["a", "b"], ["z", "d"]]),
        (lambda s: s.unsqueeze(0), (0, 1, 0), [["a", "b"], ["z", "d"]]),
    ],
)
def test_write_through_a_shape_view_reaches_the_stack(view, index, expected):
    """Column slices, reshape, permute and unsqueeze of a stack are views that take writes."""
    stack = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
    view(stack)[index] = "z"
    assert stack.tolist() == expected


def test_element_of_a_stack_is_its_cell():
    """stack[i] of a one-dim stack is the element's NonTensorData: a new value reaches the stack."""
    stack = NonTensorStack.from_list(["a", "b", "c"])
    stack[1].data = "z"
    assert stack.tolist() == ["a", "z", "c"]


def test_advanced_index_copies():
    """An index tensor gives a copy, as with a tensor: a write into it leaves the stack alone."""
    stack = NonTensorStack.from_list(["a", "b", "c"])
    copy = stack[torch.tensor([1, 2])]
    copy[0] = "z"
    assert stack.tolist() == ["a", "b", "c"] and copy.tolist() == ["z", "c"]


def test_write_through_a_tensordict_view():
    """td[1:3][0] = ... writes both the tensor and the stack entry of td."""
    td = TensorDict(v=NonTensorStack.from_list(["a", "b", "c"]), x=torch.zeros(3), batch_size=[3])
    td[1:3][0] = TensorDict({"v": "z", "x": torch.ones(())}, [])
    assert td["v"] == ["a", "z", "c"] and td["x"].tolist() == [0.0, 1.0, 0.0]


def test_stack_of_entries_writes_into_them():
    """A stack over entries given to it writes into those entries, as the reference does."""
    first, second = NonTensorData("a"), NonTensorData("b")
    stack = NonTensorStack(first, second)
    stack[0] = "z"
    assert first.data == "z" and stack.tolist() == ["z", "b"]


def test_stack_of_batched_entries_takes_writes():
    """Members that hold one value for several elements take a write at one element."""
    stack = NonTensorStack(
        NonTensorData("a", batch_size=(3,)), NonTensorData("b", batch_size=(3,)), stack_dim=1
    )
    stack[1, 0] = "z"
    assert stack.tolist() == [["a", "b"], ["z", "b"], ["a", "b"]]


def test_contiguous_is_the_stack():
    """contiguous() of a stack is the stack itself: a stack of values is its own dense form."""
    stack = NonTensorStack("a", "b")
    assert stack.contiguous() is stack


@ours_only  # the reference's to_tensordict() shares the elements: a write reaches the stack
def test_to_tensordict_is_a_copy():
    """to_tensordict() of a stack is an independent copy, as it is for every tensordict."""
    stack = NonTensorStack("a", "b")
    copy = stack.to_tensordict()
    copy[0] = "z"
    assert stack.tolist() == ["a", "b"]


# ---------------------------------------------------------------------- entries in tensordict methods
@pytest.mark.parametrize(
    "method",
    [
        lambda td: td.flip(0),
        lambda td: td.roll(1, 0),
        lambda td: td.tile((2, 1)),
        lambda td: td.narrow(0, 0, 2),
        lambda td: td.rot90(),
        lambda td: td.repeat_interleave(2, 0),
        lambda td: td.gather(0, torch.tensor([[0, 1], [2, 2]])),
    ],
)
def test_rearranging_methods_keep_single_values(method):
    """flip, roll, tile, narrow, rot90, repeat_interleave and gather keep NonTensorData and MetaData."""
    td = TensorDict(
        a=torch.zeros(3, 2), s="x", m=MetaData("y", batch_size=[3, 2]), batch_size=[3, 2]
    )
    out = method(td)
    assert type(out.get("s")) is NonTensorData and out["s"] == "x"
    assert isinstance(out.get("m"), MetaData) and out.get("s").batch_size == out.batch_size


def test_auto_batch_size_counts_batched_entries():
    """auto_batch_size_ counts non-tensor entries that have batch dims, not single values."""
    td = TensorDict.from_dict({"query": ["a", "b", "c", "d"]}, auto_batch_size=True, batch_dims=1)
    assert td.batch_size == torch.Size([4])
    td = TensorDict(a=torch.zeros(4, 3), s="x", n=["p"] * 4, batch_size=[4])
    td.batch_size = []
    assert td.auto_batch_size_().batch_size == torch.Size([4])
    assert TensorDict(a=torch.zeros(4, 3), s="x").auto_batch_size_().batch_size == (4, 3)


def test_auto_batch_size_of_a_level_of_entries():
    """A sub-tensordict holding only a batched entry keeps that entry's batch size."""
    td = TensorDict(
        a=torch.zeros(4, 3), d={"s": NonTensorData("x", batch_size=[4, 3])}, batch_size=[4, 3]
    )
    td.batch_size = []
    assert td.auto_batch_size_().batch_size == torch.Size([4, 3])


def test_tree_map_walks_the_values_of_a_stack():
    """torch.utils._pytree.tree_map walks the items of td[key] for a stack, as a list."""
    td = TensorDict(n=NonTensorStack("a", "b"), batch_size=[2])
    seen = []
    out = _pytree.tree_map(lambda v: seen.append(v) or v.upper(), td["n"])
    assert seen == ["a", "b"] and out == ["A", "B"]


@ours_only  # the reference's stack entry becomes a stack of empty tensordicts
def test_new_zeros_of_a_stack_entry():
    """new_zeros of a tensordict gives its stack entries the new batch size (the first value)."""
    td = TensorDict(a=torch.zeros(3), n=NonTensorStack("x", "y", "z"), batch_size=[3])
    out = td.new_zeros(4)
    assert out.get("n").batch_size == torch.Size([4]) and out.get("n").tolist() == ["x"] * 4


def test_string_set_into_a_lazy_stack():
    """A string set at a key of a lazy stack is held by every element."""
    td = TensorDict(a=TensorDict(b=NonTensorStack("a"), batch_size=(1,)), batch_size=(1,))
    td = td.to_lazystack()
    td["a", "b"] = "new"
    assert td["a", "b"] == ["new"]


# ---------------------------------------------------------------------- writing one value
@ours_only  # the reference refuses any value at an index of a NonTensorData (ValueError)
@pytest.mark.parametrize("index", [..., True, slice(None)])
def test_entry_takes_one_new_value_for_every_element(index):
    """entry[index] = value over every element changes the one value, in place."""
    entry = NonTensorData("a", batch_size=[2])
    entry[index] = NonTensorStack("b", "b") if index is True else "b"
    assert entry.data == "b" and entry.batch_size == torch.Size([2])


def test_element_of_a_stack_written_whole():
    """stack[0][True] = other writes the element of a stack, through its cell."""
    stack = NonTensorStack("a string")
    stack[0][True] = NonTensorStack("another string")
    assert stack[0].data == "another string"


@pytest.mark.parametrize("index", [None, True])
def test_stack_written_through_a_new_dim(index):
    """stack[:, None] = ... (and True) writes a stack of batch size [n, 1] element by element."""
    stack = NonTensorStack("0", "1")
    stack[:, index] = NonTensorStack(NonTensorStack("2", "3"), stack_dim=1)
    assert stack.tolist() == ["2", "3"]


def test_entry_holding_a_function_is_callable():
    """A NonTensorData holding a function calls it; apply passes such entries of other tensordicts."""
    funcs = TensorDict({"a": lambda x, y: x - y, "b": lambda x, y: x + y})
    out = TensorDict({"a": 0, "b": 0}).apply(
        lambda x, y, func: func(x, y), TensorDict({"a": 1, "b": 1}), funcs
    )
    assert out["a"] == -1 and out["b"] == 1
    assert funcs.get("a")(3, 1) == 2


def test_where_of_stacks():
    """stack.where(condition, other, out=...) picks the values element by element into ``out``."""
    stack = NonTensorStack(NonTensorData(["a"]), NonTensorData(["a"]))
    other = NonTensorStack(NonTensorData(["b"]), NonTensorData(["b"]))
    out = NonTensorStack(NonTensorData(["none"]), NonTensorData(["none"]))
    result = stack.where(condition=torch.tensor([True, False]), other=other, out=out, pad=0)
    assert result.tolist() == [["a"], ["b"]] and out.tolist() == [["a"], ["b"]]


# ---------------------------------------------------------------------- names
def test_entry_takes_the_names_of_its_tensordict():
    """td.names = ... names the batch dims of its non-tensor entries, also when locked."""
    td = TensorDict({"s": "a", "x": torch.zeros(2, 3)}, [2, 3])
    td.names = ["a", "b"]
    td.lock_()
    assert td.get("s").names == ["a", "b"]
    td.names = ["c", "d"]
    assert td.get("s").names == ["c", "d"]


def test_entry_names():
    """An entry without names reports None per batch dim; names= names it."""
    assert NonTensorData("a", batch_size=[2]).names == [None]
    assert NonTensorData("a", batch_size=[2], names=["t"]).names == ["t"]


@ours_only  # the reference gets this on a lazy stack only; a TensorDict's gives empty tensordicts
def test_new_zeros_keeps_the_further_dims_of_a_stack_entry():
    """new_zeros gives a stack entry the new batch size followed by its own further dims."""
    td = TensorDict(
        a=TensorDict(b=NonTensorStack("a", "b", "c").unsqueeze(-1), batch_size=(3,)),
        batch_size=(3,),
    )
    zeros = td.new_zeros(4)
    assert zeros.get(("a", "b")).batch_size == torch.Size([4, 1])
    zeros[torch.tensor([True, True, False, True])] = td
    assert zeros.get(("a", "b")).tolist() == [["a"], ["b"], ["a"], ["c"]]


def test_typed_metadata_pickles():
    """MetaData[cls] entries pickle and unpickle as MetaData[cls], alone and in a tensordict."""
    entry = MetaData[str]("a", batch_size=[2])
    out = pickle.loads(pickle.dumps(entry))
    assert type(out) is type(entry) and out.data == "a" and out.batch_size == torch.Size([2])
    td = TensorDict(x=torch.zeros(2), m=MetaData[str]("b"), batch_size=[2])
    assert pickle.loads(pickle.dumps(td))["m"] == "b"


def test_metadata_goes_through_conversions():
    """to_namedtuple and densify treat MetaData as the single value it holds, as NonTensorData."""
    td = TensorDict(
        a=torch.zeros(2), d={"n": NonTensorData("s"), "m": MetaData[str]("x")}, batch_size=[2]
    )
    named = td.to_namedtuple()
    assert named.d.m == "x" and named.d.n == "s"
    assert td.densify()["d", "m"] == "x"


def test_new_tensor_from_a_tensordict_with_entries():
    """new_tensor(other) of tensordicts holding non-tensor entries keeps them, with the new batch size."""
    td = TensorDict(a=torch.ones(4, 3), s=NonTensorData("x", batch_size=[4, 3]), batch_size=[4, 3])
    with pytest.warns(UserWarning):
        out = td.new_tensor(td[0] * 0)
    assert out.batch_size == torch.Size([3]) and (out == 0).all() and out["s"] == "x"


# ---------------------------------------------------------------------- values in shared memory
# ours only: the reference keeps shared values in multiprocessing objects, whose private
# attributes tell them; here the entry's behaviour is checked, as a user sees it.
@ours_only
def test_share_memory_keeps_every_value_readable_and_writable():
    """After share_memory_() values of every JSON kind read back, and writes into them are seen."""
    td = TensorDict(
        {"s": "hello", "n": NonTensorStack("a", "b"), "d": NonTensorData({"k": [1, None]})}, [2]
    ).share_memory_()
    assert td["s"] == "hello" and td["n"] == ["a", "b"] and td["d"] == {"k": [1, None]}
    td[1] = TensorDict({"s": "hello", "n": "z", "d": {"k": [1, None]}}, [])
    assert td["n"] == ["a", "z"]
    view = td[0]
    td[0] = TensorDict({"s": "hello", "n": "y", "d": {"k": [1, None]}}, [])
    assert view["n"] == "y"  # a view reads the shared value


@ours_only
def test_a_value_json_cannot_hold_stays_a_plain_value():
    """A tuple or an object is not moved to shared memory: it reads back as the same object."""
    value = (1, 2)
    td = TensorDict({"t": NonTensorData(value)}, []).share_memory_()
    assert td["t"] is value


@ours_only
def test_a_clone_of_a_shared_entry_is_independent():
    """Writing into a clone of a shared tensordict leaves the source's values alone."""
    td = TensorDict({"n": NonTensorStack("a", "b")}, [2]).share_memory_()
    copy = td.clone()
    copy[0] = TensorDict({"n": "x"}, [])
    assert td["n"] == ["a", "b"] and copy["n"] == ["x", "b"]


@ours_only
def test_a_shared_value_refuses_what_it_cannot_hold():
    """A write of a longer value than its room, or of a value JSON cannot hold, raises, naming why."""
    from tensordict.errors import SharedValueError

    td = TensorDict({"n": NonTensorStack("a", "b")}, [2]).share_memory_()
    with pytest.raises(SharedValueError, match="bytes"):
        td[0] = TensorDict({"n": "x" * 1000}, [])
    with pytest.raises(TypeError, match="JSON"):
        td[0] = TensorDict({"n": NonTensorData((1, 2))}, [])
    assert td["n"] == ["a", "b"]


@ours_only
def test_a_shared_value_pickles_as_its_value():
    """pickle of a shared tensordict loads back with the same values."""
    td = TensorDict({"s": "hello", "n": NonTensorStack("a", "b")}, [2]).share_memory_()
    back = pickle.loads(pickle.dumps(td))
    assert back["s"] == "hello" and back["n"] == ["a", "b"]
