"""Memory-mapping tensordicts that hold NonTensorStack and MetaData entries, in the reference's layout.

The fixture ``tests/fixtures/reference-0.15.3-nontensor-stack/`` was written by the
reference with ``tests/fixtures/generate_nontensor_stack.py`` (see the fixtures README).
Differential: these tests also run under the reference (from inside tests/).
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from tensordict import MetaData, NonTensorData, NonTensorStack, TensorDict

from conftest import FIXTURES, ours_only

STACKS = FIXTURES / "reference-0.15.3-nontensor-stack"


def build() -> TensorDict:
    """The tensordict that the generate script writes as the ``plain`` case."""
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    td["x"] = ["a", "b", "c"]
    td["n"] = {"y": NonTensorStack.from_list([[1, "u"], [2, "v"], [3, "w"]])}
    td["same"] = torch.stack([NonTensorData("z")] * 3)
    td["m"] = MetaData({"k": 1}, batch_size=[3])
    td["d1"] = torch.stack([NonTensorStack("p", "q", "r"), NonTensorStack("s", "t", "u")], 1)
    return td


def files_of(folder) -> set:
    """The data and metadata files of a folder tree, relative to it (not our lock files)."""
    found = set()
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith((".json", ".memmap", ".pkl", ".pickle")):
                found.add(os.path.relpath(os.path.join(root, name), folder))
    return found


def meta_of(folder, relative: str) -> dict:
    return json.loads((folder / relative).read_text())


def test_loads_the_reference_stacks(fixture_copy):
    """A folder the reference wrote loads its stacks, MetaData and tensors with their values."""
    td = TensorDict.load_memmap(fixture_copy("plain", STACKS))
    assert td["a"].tolist() == [0, 1, 2]
    assert type(td.get("x")) is NonTensorStack and td["x"] == ["a", "b", "c"]
    assert td.get(("n", "y")).batch_size == torch.Size([3, 2])
    assert td["n", "y"] == [[1, "u"], [2, "v"], [3, "w"]]
    assert td["same"] == ["z", "z", "z"]
    assert type(td.get("m")) is MetaData and td["m"] == {"k": 1}
    assert td["d1"] == [["p", "s"], ["q", "t"], ["r", "u"]]
    assert td[1]["x"] == "b" and td[2]["d1"] == ["r", "u"]


def test_loads_pickled_stack_only_when_allowed(fixture_copy):
    """A stack the reference pickled to pickle.pkl loads with allow_pickle=True."""
    td = TensorDict.load_memmap(fixture_copy("pickled", STACKS), allow_pickle=True)
    values = td.get("o").tolist()
    assert torch.equal(values[0], torch.zeros(2)) and values[1] == 3


# differs from the reference: it unpickles pickle.pkl on load without being asked
def test_pickled_stack_is_refused_without_allow_pickle(fixture_copy):
    """Loading a pickled stack without allow_pickle raises ValueError naming pickle.pkl."""
    folder = fixture_copy("pickled", STACKS)
    with pytest.raises(ValueError, match="pickle.pkl"):
        TensorDict.load_memmap(folder)


def test_writes_the_reference_layout(tmp_path, fixture_copy):
    """The folder we write has the reference's files and the same meta.json content."""
    reference = fixture_copy("plain", STACKS)
    ours = tmp_path / "ours"
    build().memmap(ours)
    assert files_of(ours) == files_of(reference)
    for relative in sorted(files_of(reference)):
        if relative.endswith(".json"):
            assert meta_of(ours, relative) == meta_of(reference, relative), relative


def test_stack_meta_fields(tmp_path):
    """A stack's meta.json holds _type, _format_version, _class, stack_dim, device and data."""
    build().memmap(tmp_path / "td")
    meta = meta_of(tmp_path / "td", "d1/meta.json")
    assert meta == {
        "_type": "<class 'tensordict.tensorclass.NonTensorStack'>",
        "_format_version": 1,
        "_class": "tensordict:NonTensorStack",
        "stack_dim": 1,
        "device": None,
        "data": [["p", "s"], ["q", "t"], ["r", "u"]],
    }
    assert meta_of(tmp_path / "td", "meta.json")["x"] == {"type": "NonTensorStack"}
    assert meta_of(tmp_path / "td", "meta.json")["m"] == {"type": "MetaData"}


def test_round_trip(tmp_path):
    """memmap then load_memmap gives back every stack's values and batch size."""
    source = build()
    loaded = TensorDict.load_memmap(source.memmap(tmp_path / "td").saved_path)
    for key in ("x", ("n", "y"), "same", "d1"):
        assert loaded.get(key).tolist() == source.get(key).tolist()
        assert loaded.get(key).batch_size == source.get(key).batch_size
    assert loaded["m"] == {"k": 1}


def test_pickled_stack_round_trip(tmp_path):
    """Values JSON cannot hold are pickled to pickle.pkl and read back (allowed)."""
    td = TensorDict(batch_size=[2])
    td["o"] = NonTensorStack(NonTensorData(torch.zeros(2)), NonTensorData(3))
    td.memmap(tmp_path / "td")
    assert (tmp_path / "td" / "o" / "pickle.pkl").is_file()
    assert meta_of(tmp_path / "td", "o/meta.json")["data"] == "pickle.pkl"
    loaded = TensorDict.load_memmap(tmp_path / "td", allow_pickle=True)
    assert loaded.get("o").tolist()[1] == 3


# ---------------------------------------------------------------------- writes reach the folder
def test_write_into_a_stack_mapped_on_its_own(tmp_path):
    """stack.memmap(dir)[i] = value rewrites the folder: load_memmap sees the new value."""
    stack = NonTensorStack.from_list(["a", "b"]).memmap(tmp_path / "s")
    stack[0] = "z"
    assert TensorDict.load_memmap(tmp_path / "s").tolist() == ["z", "b"]


@pytest.mark.parametrize(
    "write",
    [
        lambda td: td.get("v").__setitem__(0, "z"),
        lambda td: td["v"].__setitem__(0, "z"),
        lambda td: td.__setitem__(0, TensorDict(v="z", x=torch.ones(()))),
        lambda td: td.update_at_(TensorDict(v="z", x=torch.ones(())), 0),
        lambda td: td.set_("v", NonTensorStack("z", "b", "c")),
    ],
)
def test_write_into_a_stack_entry_of_a_mapped_tensordict(tmp_path, write):
    """Index writes, LinkedList writes, update_at_ and set_ on a stack entry reach the folder."""
    td = TensorDict(v=NonTensorStack("a", "b", "c"), x=torch.zeros(3), batch_size=[3])
    td = td.memmap(tmp_path / "td")
    write(td)
    assert TensorDict.load_memmap(tmp_path / "td")["v"] == ["z", "b", "c"]


def test_set_of_a_value_of_a_mapped_tensordict(tmp_path):
    """set_ of a NonTensorData entry of a memory-mapped tensordict rewrites its folder."""
    td = TensorDict(v="a", x=torch.zeros(3), batch_size=[3]).memmap(tmp_path / "td")
    td.set_("v", "b")
    assert TensorDict.load_memmap(tmp_path / "td")["v"] == "b"


def test_write_through_a_stack_keeps_the_source_apart(tmp_path):
    """memmap(dir) copies the stacks: writing the mapped one leaves the source alone."""
    source = TensorDict(v=NonTensorStack("a", "b"), batch_size=[2])
    mapped = source.memmap(tmp_path / "td")
    mapped.get("v")[0] = "z"
    assert source["v"] == ["a", "b"] and mapped["v"] == ["z", "b"]


@ours_only  # the reference's loaded stacks keep writes in memory
def test_write_into_a_loaded_stack_reaches_the_folder(tmp_path):
    """A stack loaded with load_memmap writes to its folder, as its tensors do."""
    TensorDict(v=NonTensorStack("a", "b"), batch_size=[2]).memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    loaded.get("v")[1] = "q"
    assert TensorDict.load_memmap(tmp_path / "td")["v"] == ["a", "q"]
    NonTensorStack.from_list(["a", "b"]).memmap(tmp_path / "s")
    alone = TensorDict.load_memmap(tmp_path / "s")
    alone[0] = "z"
    assert TensorDict.load_memmap(tmp_path / "s").tolist() == ["z", "b"]


@ours_only  # the reference refuses another value at an index of a memory-mapped NonTensorData
def test_value_of_a_mapped_tensordict_becomes_a_stack_on_disk(tmp_path):
    """Another value written at an index of a mapped NonTensorData entry makes a stack on disk."""
    td = TensorDict(v="a", x=torch.zeros(3), batch_size=[3]).memmap(tmp_path / "td")
    td[0] = TensorDict(v="z", x=torch.ones(()))
    assert TensorDict.load_memmap(tmp_path / "td")["v"] == ["z", "a", "a"]
