"""NonTensorData and MetaData as entries of a tensordict: keys, device, lock, writes and comparisons.

Differential: every test also runs under the reference (from inside tests/), unless
marked ``ours_only`` with the reason.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from tensordict import MetaData, NonTensorData, NonTensorStack, TensorDict


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
