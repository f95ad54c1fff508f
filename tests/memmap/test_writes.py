"""Writing folders: every entry gets its own whole file, and no writer destroys what is not its own."""

from __future__ import annotations

import os

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.errors import EntryExistsError, SymlinkError


def test_one_tensor_under_two_keys_gets_two_files(tmp_path):
    """A tensor stored at two keys is written to two files, and each entry maps its own."""
    t = torch.zeros(3)
    out = TensorDict({"a": t, "b": t}, [3]).memmap(tmp_path / "x")
    assert out["a"].filename != out["b"].filename
    out["a"][0] = 5
    loaded = TensorDict.load_memmap(tmp_path / "x")
    assert loaded["a"].tolist() == [5.0, 0.0, 0.0] and loaded["b"].tolist() == [0.0] * 3


def test_a_lazy_stack_of_one_member_repeated_gets_a_file_per_member(tmp_path):
    """lazy_stack([td] * 2).memmap(p): each member maps its own folder's file."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 2).memmap(tmp_path / "p")
    first, second = (m.get("a").filename for m in stack.tensordicts)
    assert first.endswith(os.path.join("0", "a.memmap")) and second.endswith(
        os.path.join("1", "a.memmap")
    )


def test_a_view_written_back_to_its_own_folder_holds_the_view(tmp_path):
    """s[1:3].memmap(folder of s) writes the two rows, not the whole file under a 2-row record."""
    source = TensorDict({"a": torch.arange(4.0)}, [4]).memmap(tmp_path / "v")
    source[1:3].memmap(tmp_path / "v")
    assert TensorDict.load_memmap(tmp_path / "v")["a"].tolist() == [1.0, 2.0]


def test_memmap_in_place_writes_an_entry_mapped_from_another_folder(tmp_path):
    """A loaded tensordict given a tensor mapped in another folder: memmap_() copies it into its own."""
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "A")
    TensorDict({"y": torch.ones(2)}, [2]).memmap(tmp_path / "B")
    td = TensorDict.load_memmap(tmp_path / "A")
    td["x"] = TensorDict.load_memmap(tmp_path / "B")["y"]
    td.memmap_()
    assert (tmp_path / "A" / "x.memmap").is_file()
    assert TensorDict.load_memmap(tmp_path / "A")["x"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kind", ["sub-tensordict", "non-tensor"])
def test_memmap_in_place_never_overwrites_another_writers_new_entry(tmp_path, kind):
    """Two writers give a key a new value and memmap_(): the second is refused, the first's value stays."""
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "A")
    first, second = (TensorDict.load_memmap(tmp_path / "A") for _ in range(2))
    if kind == "sub-tensordict":
        first["s"], second["s"] = {"v": torch.ones(2)}, {"q": torch.ones(2)}
    else:
        first["s"], second["s"] = "one", "two"
    first.memmap_()
    with pytest.raises(EntryExistsError, match="another writer added it"):
        second.memmap_()
    loaded = TensorDict.load_memmap(tmp_path / "A")
    assert (set(loaded["s"].keys()) == {"v"}) if kind == "sub-tensordict" else loaded["s"] == "one"


def test_a_nested_key_through_another_writers_new_entry_is_refused(tmp_path):
    """w2.make_memmap(("s", "x")) after w1 added the tensor "s": refused, w1's record kept."""
    TensorDict({}, [2]).memmap(tmp_path / "A")
    first, second = (TensorDict.load_memmap(tmp_path / "A") for _ in range(2))
    first.make_memmap("s", (2,)).fill_(4)
    with pytest.raises(EntryExistsError, match="'s'"):
        second.make_memmap(("s", "x"), (2,))
    assert TensorDict.load_memmap(tmp_path / "A")["s"].tolist() == [4.0, 4.0]


def test_a_failing_write_over_a_tree_in_a_new_parent_keeps_the_old_tree(tmp_path):
    """The first write creates the parent; a later failing write still leaves the old tree whole."""
    TensorDict({"a": torch.arange(3.0)}, [3]).memmap(tmp_path / "P" / "x")
    bad = TensorDict({"a": torch.ones(5), "m": torch.zeros(5, device="meta")}, [5])
    with pytest.raises(ValueError, match="meta device"):
        bad.memmap(tmp_path / "P" / "x")
    assert TensorDict.load_memmap(tmp_path / "P" / "x")["a"].tolist() == [0.0, 1.0, 2.0]


def test_a_failing_write_after_files_are_written_keeps_the_old_tree(tmp_path):
    """A value that fails while files are written (an unpicklable one) leaves the old tree whole."""
    import threading

    TensorDict({"a": torch.arange(3.0), "b": torch.ones(3)}, [3]).memmap(tmp_path / "A")
    with pytest.raises(TypeError):
        TensorDict({"a": torch.ones(5), "bad": threading.Lock()}, [5]).memmap(tmp_path / "A")
    loaded = TensorDict.load_memmap(tmp_path / "A")
    assert loaded["a"].tolist() == [0.0, 1.0, 2.0] and loaded["b"].tolist() == [1.0] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["A"]


def test_a_user_file_inside_an_entrys_folder_is_kept(tmp_path):
    """A file the format does not record, inside a non-tensor entry's folder, survives a rewrite."""
    TensorDict({"a": torch.zeros(2), "nt": "x"}, [2]).memmap(tmp_path / "B")
    (tmp_path / "B" / "nt" / "user.txt").write_text("mine")
    TensorDict({"a": torch.ones(2), "nt": "y"}, [2]).memmap(tmp_path / "B")
    assert (tmp_path / "B" / "nt" / "user.txt").read_text() == "mine"
    assert TensorDict.load_memmap(tmp_path / "B")["nt"] == "y"


def test_a_symlinked_prefix_is_refused_before_anything_changes(tmp_path):
    """memmap() into a symbolic link: SymlinkError, and the link and its target are as they were."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(SymlinkError, match="symbolic link"):
        TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "link")
    assert os.path.islink(tmp_path / "link") and os.listdir(tmp_path / "real") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_a_symlinked_sub_folder_in_the_prefix_is_refused_and_nothing_is_written_through(tmp_path):
    """memmap() where a nested level's folder is a symbolic link: SymlinkError (a RuntimeError)
    naming it, and the link's target stays empty."""
    (tmp_path / "saved").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "saved" / "nested").symlink_to(tmp_path / "outside", target_is_directory=True)
    td = TensorDict({"nested": {"x": torch.randn(3)}}, [])
    with pytest.raises(RuntimeError, match="nested' of the memory-mapped folder.*symbolic link"):
        td.memmap(tmp_path / "saved")
    assert os.listdir(tmp_path / "outside") == []
    assert os.path.islink(tmp_path / "saved" / "nested")


def test_a_rewritten_folder_keeps_its_mode(tmp_path):
    """Replacing the tree in a folder keeps that folder's permission bits."""
    (tmp_path / "A").mkdir()
    os.chmod(tmp_path / "A", 0o2770)
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "A")
    TensorDict({"a": torch.ones(2)}, [2]).memmap(tmp_path / "A")
    assert os.stat(tmp_path / "A").st_mode & 0o7777 == 0o2770
