"""The reference's arguments of the load and write methods: ``mode``, ``subpath``, ``num_threads``,
``atomic``, ``existsok`` and ``allow_pickle``, with its meaning."""

from __future__ import annotations

import inspect
import json
import os
import subprocess

import pytest
import torch

import tensordict
from tensordict import TensorDict, tensorclass
from tensordict.errors import ExistingFileError, ReadOnlyMemmapError

from conftest import ours_only


@tensorclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


def _tree(path):
    td = TensorDict(
        {"a": torch.arange(3.0), "sub": {"b": torch.ones(3), "deep": {"c": torch.zeros(3)}}}, [3]
    )
    return td.memmap(path)


# ---------------------------------------------------------------------- mode
def test_mode_r_maps_copy_on_write_and_never_changes_the_folder(tmp_path):
    """With mode="r", writes into leaves stay in the process; adding entries raises naming the folder."""
    _tree(tmp_path / "td")
    td = TensorDict.load_memmap(tmp_path / "td", mode="r")
    td["a"][0] = 42.0
    td["sub", "b"].fill_(5.0)
    assert td["a"][0] == 42.0
    fresh = TensorDict.load_memmap(tmp_path / "td")
    assert fresh["a"].tolist() == [0.0, 1.0, 2.0] and fresh["sub", "b"].tolist() == [1.0] * 3
    before = sorted(os.listdir(tmp_path / "td"))
    with pytest.raises(ReadOnlyMemmapError, match=r"loaded with mode='r'") as info:
        td.make_memmap("x", (3,))
    assert isinstance(info.value, RuntimeError) and str(tmp_path / "td") in str(info.value)
    with pytest.raises(ReadOnlyMemmapError):
        td.make_memmap_from_tensor(("sub", "y"), torch.zeros(3))
    td.unlock_()
    td["new"] = torch.zeros(3)
    with pytest.raises(ReadOnlyMemmapError):
        td.memmap_()
    assert sorted(os.listdir(tmp_path / "td")) == before
    assert "new" not in TensorDict.load_memmap(tmp_path / "td").keys()


def test_mode_r_memmap_without_changes_writes_nothing_and_refresh_maps_copy_on_write(tmp_path):
    """memmap_() of an unchanged mode="r" tensordict is a no-op; entries seen by refresh are copy-on-write too."""
    writer = _tree(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td", mode="r")
    reader.memmap_()
    writer.make_memmap("late", (3,)).fill_(3.0)
    reader.memmap_refresh_()
    reader["late"][0] = -1.0
    assert writer["late"].tolist() == [3.0] * 3
    with pytest.raises(ReadOnlyMemmapError):
        reader.make_memmap("x", (3,))


def test_mode_r_plus_shares_the_files(tmp_path):
    """mode="r+": writes into the leaves reach the files, and entries can be added."""
    _tree(tmp_path / "td")
    td = TensorDict.load_memmap(tmp_path / "td", mode="r+")
    td["a"][1] = 9.0
    td.make_memmap("x", (3,))
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["a"].tolist() == [0.0, 9.0, 2.0] and "x" in loaded.keys()


@pytest.mark.parametrize("mode", ["w", "rw", 1])
def test_an_unknown_mode_is_refused(tmp_path, mode):
    """A mode other than None, "r" and "r+" raises ValueError quoting it."""
    _tree(tmp_path / "td")
    with pytest.raises(ValueError, match=f"mode must be None, 'r' or 'r\\+', got {mode!r}"):
        tensordict.load_memmap(tmp_path / "td", mode=mode)


def test_load_memmap_in_place_takes_a_mode(tmp_path):
    """load_memmap_(prefix, mode="r") loads copy-on-write into the tensordict."""
    _tree(tmp_path / "td")
    td = TensorDict({}, [])
    assert td.load_memmap_(tmp_path / "td", None, mode="r") is td
    td["a"][0] = 5.0
    assert TensorDict.load_memmap(tmp_path / "td")["a"][0] == 0.0


def test_mode_r_on_an_archive_is_copy_on_write(tmp_path):
    """An archive loaded with mode="r" (its default) keeps writes into leaves in memory."""
    TensorDict({"a": torch.zeros(4)}, [4]).save(tmp_path / "td.tdz")
    td = tensordict.load_memmap(tmp_path / "td.tdz", mode="r")
    td["a"][0] = 1.0
    assert tensordict.load_memmap(tmp_path / "td.tdz")["a"].tolist() == [0.0] * 4


# ---------------------------------------------------------------------- subpath
@pytest.mark.parametrize("subpath", [("sub", "deep"), "sub/deep"])
def test_subpath_loads_one_nested_level(tmp_path, subpath):
    """subpath as a nested key or a "/" path loads that level only, memory-mapped in its folder."""
    _tree(tmp_path / "td")
    deep = TensorDict.load_memmap(tmp_path / "td", subpath=subpath)
    assert list(deep.keys()) == ["c"] and deep.batch_size == (3,)
    assert deep.saved_path == str(tmp_path / "td" / "sub" / "deep")
    deep.make_memmap("d", (3,))
    assert "d" in TensorDict.load_memmap(tmp_path / "td")["sub", "deep"].keys()


def test_subpath_in_an_archive_and_through_a_tensorclass(tmp_path):
    """subpath reads a nested level of an archive, and passes through a tensorclass to its fields."""
    pair = Pair(torch.zeros(2), TensorDict({"x": torch.ones(2)}, [2]), batch_size=[2])
    td = TensorDict({"pair": pair}, [2])
    td.save(tmp_path / "td.tdz")
    td.memmap(tmp_path / "td")
    for path in (tmp_path / "td.tdz", tmp_path / "td"):
        assert tensordict.load_memmap(path, subpath="pair/right")["x"].tolist() == [1.0, 1.0]
        assert isinstance(tensordict.load_memmap(path, subpath="pair"), Pair)


def test_subpath_steps_through_a_lazy_stack_by_member_position(tmp_path):
    """A subpath step through a lazy stack is a member's position, in folders and archives alike."""
    stack = tensordict.lazy_stack(
        [
            TensorDict({"x": torch.full((2,), float(i)), "sub": {"y": torch.ones(2) * i}}, [2])
            for i in range(3)
        ]
    )
    for path in (tmp_path / "st", tmp_path / "st.tdz"):
        stack.save(path)
        for subpath in ("1/sub", ("1", "sub"), ("1", ("sub",))):
            assert tensordict.load_memmap(path, subpath=subpath)["y"].tolist() == [1.0, 1.0]
        assert tensordict.load_memmap(path, subpath="2")["x"].tolist() == [2.0, 2.0]
        for subpath in ("3/sub", "x", "01"):
            with pytest.raises(ValueError, match="names no saved tensordict"):
                tensordict.load_memmap(path, subpath=subpath)


@ours_only  # the message: the reference says "No tensordict found under subpath"
def test_a_subpath_step_that_is_no_member_names_the_positions(tmp_path):
    """A step through a lazy stack that is no member's position names the folder and the positions."""
    stack = tensordict.lazy_stack([TensorDict({"x": torch.zeros(2)}, [2])] * 2)
    stack.memmap(tmp_path / "st")
    with pytest.raises(ValueError, match=r"lazy stack of 2 members.*position 0 to 1, not '5'"):
        tensordict.load_memmap(tmp_path / "st", subpath="5")


@pytest.mark.parametrize(
    ("subpath", "match"),
    [
        ("a", "holds a tensor, not a tensordict, at 'a'"),
        ("nope", "holds no entry at 'nope'"),
        ("sub/b", "holds a tensor, not a tensordict, at 'b'"),
    ],
)
def test_a_subpath_that_names_no_sub_tensordict_raises(tmp_path, subpath, match):
    """A subpath through a tensor or a missing key: ValueError naming the subpath, the folder and the key."""
    _tree(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td").save(tmp_path / "td.tdz")
    for path in (tmp_path / "td", tmp_path / "td.tdz"):
        with pytest.raises(ValueError, match=f"names no saved tensordict: .*{match}"):
            tensordict.load_memmap(path, subpath=subpath)


def test_a_bad_subpath_value_is_refused(tmp_path):
    """A subpath that is not a key (an int, an empty part) raises TypeError or ValueError."""
    _tree(tmp_path / "td")
    with pytest.raises(TypeError, match="subpath must be a nested key"):
        tensordict.load_memmap(tmp_path / "td", subpath=3)
    with pytest.raises(ValueError, match="empty part"):
        tensordict.load_memmap(tmp_path / "td", subpath="sub//deep")


# ---------------------------------------------------------------------- num_threads, atomic
def test_num_threads_is_accepted_and_checked(tmp_path):
    """num_threads of 0 or more loads as without it; a negative count raises ValueError."""
    _tree(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td").save(tmp_path / "td.tdz", compression="deflate")
    for path in (tmp_path / "td", tmp_path / "td.tdz"):
        assert tensordict.load_memmap(path, num_threads=4)["a"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="num_threads must be 0 or more"):
        tensordict.load_memmap(tmp_path / "td", num_threads=-1)


@pytest.mark.parametrize("atomic", [True, False])
def test_atomic_is_accepted_by_every_writer_and_changes_nothing(tmp_path, atomic):
    """memmap, memmap_, save, tensordict.save and tensordict.memmap take atomic=True or False."""
    td = TensorDict({"a": torch.arange(2.0)}, [2])
    td.memmap(tmp_path / "m", atomic=atomic)
    td.save(tmp_path / "s", atomic=atomic)
    td.save(tmp_path / "s.tdz", atomic=atomic)
    tensordict.save(td, tmp_path / "f", atomic=atomic)
    tensordict.memmap(td, tmp_path / "g", atomic=atomic)
    td.clone().memmap_(tmp_path / "i", atomic=atomic)
    for name in ("m", "s", "s.tdz", "f", "g", "i"):
        assert tensordict.load_memmap(tmp_path / name)["a"].tolist() == [0.0, 1.0]


# ---------------------------------------------------------------------- existsok, allow_pickle
def test_make_memmap_from_tensor_existsok_false_refuses_a_file_in_the_way(tmp_path):
    """A leftover file at the new entry's path: existsok=False raises naming it; True replaces it."""
    td = _tree(tmp_path / "td")
    (tmp_path / "td" / "x.memmap").write_bytes(b"junk")
    with pytest.raises(ExistingFileError, match=r"x\.memmap.*existsok=False"):
        td.make_memmap_from_tensor("x", torch.ones(3), existsok=False)
    assert (tmp_path / "td" / "x.memmap").read_bytes() == b"junk"
    assert "x" not in td.keys()
    td.make_memmap_from_tensor("x", torch.ones(3), existsok=True)
    assert TensorDict.load_memmap(tmp_path / "td")["x"].tolist() == [1.0] * 3


def test_memmap_refresh_takes_allow_pickle(tmp_path):
    """A pickled value another writer added loads on refresh with allow_pickle=True only."""
    reader = _tree(tmp_path / "td")
    writer = TensorDict.load_memmap(tmp_path / "td")
    writer.unlock_()
    writer["value"] = {1, 2}  # JSON cannot hold a set: it is pickled
    writer.memmap_()
    with pytest.raises(RuntimeError, match="allow_pickle=True"):
        reader.memmap_refresh_()
    assert reader.memmap_refresh_(allow_pickle=True)["value"] == {1, 2}


@pytest.mark.parametrize("allow_pickle", [0, 1, "yes"])
def test_allow_pickle_that_is_not_a_bool_raises_type_error(tmp_path, allow_pickle):
    """load_memmap(allow_pickle=1) raises TypeError naming allow_pickle: only True unpickles."""
    TensorDict({"value": {1, 2}}, []).memmap(tmp_path / "td")
    with pytest.raises(TypeError, match="allow_pickle"):
        TensorDict.load_memmap(tmp_path / "td", allow_pickle=allow_pickle)


def test_refusing_to_unpickle_is_a_runtime_error(tmp_path):
    """The refusal of a pickled value without allow_pickle=True is a RuntimeError (also a ValueError here)."""
    TensorDict({"value": {1, 2}, "x": torch.zeros(1)}, []).memmap(tmp_path / "td")
    with pytest.raises(RuntimeError, match="allow_pickle=True"):
        TensorDict.load_memmap(tmp_path / "td", allow_pickle=False)
    assert TensorDict.load_memmap(tmp_path / "td", allow_pickle=True)["value"] == {1, 2}


# ---------------------------------------------------------------------- the reference's names
@ours_only  # compares the signatures with the reference's, run in its interpreter
def test_every_argument_of_the_reference_is_taken(reference_python, tmp_path):
    """Each keyword the reference's load and write methods take, ours take too."""
    names = [
        "load_memmap",
        "load_memmap_",
        "memmap",
        "memmap_",
        "save",
        "make_memmap_from_tensor",
        "memmap_refresh_",
    ]
    script = f"""
import inspect, json, tensordict
from tensordict import TensorDict
out = {{n: list(inspect.signature(getattr(TensorDict, n)).parameters) for n in {names!r}}}
for n in ("load_memmap", "save", "memmap"):
    out["module " + n] = list(inspect.signature(getattr(tensordict, n)).parameters)
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [reference_python, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    theirs = json.loads(proc.stdout)
    for name, params in theirs.items():
        if name == "module memmap":  # the module tensordict.memmap is callable: its function
            function = tensordict.memmap.memmap
        elif name.startswith("module"):
            function = getattr(tensordict, name.split()[1])
        else:
            function = getattr(TensorDict, name)
        ours = set(inspect.signature(function).parameters)
        if "kwargs" in ours:  # save forwards its keywords to memmap
            ours |= set(inspect.signature(TensorDict.memmap).parameters)
        assert set(params) - {"self", "args", "kwargs"} <= ours, name
