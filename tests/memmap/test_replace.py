"""Replacing and updating shared folders: killed at fixed steps, merged in place, own changes only, stale leftovers."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.errors import EntryExistsError
from tensordict.memmap import _fs, _io
from tensordict.memmap import format as fmt

from ._kill import kill_at

KEYS = [f"k{i}" for i in range(12)]


def _tree(value: float) -> TensorDict:
    data = {k: torch.full((8, 4), value) for k in KEYS}
    return TensorDict({**data, "sub": {"x": torch.full((8,), value)}}, [8])


def _values(folder) -> dict:
    """Each entry's one value, after checking that the folder loads with every entry whole."""
    td = TensorDict.load_memmap(folder)
    assert set(td.keys()) == {*KEYS, "sub"}
    values = {}
    for key in [*KEYS, ("sub", "x")]:
        tensor = td[key]
        assert bool((tensor == tensor.flatten()[0]).all()), key
        values[key] = float(tensor.flatten()[0])
    return values


@pytest.mark.parametrize("unrelated", [False, True], ids=["exchanged", "merged"])
def test_memmap_killed_at_every_step_leaves_every_entry_whole(tmp_path, unrelated):
    """kill -9 before each change memmap(prefix) makes: the folder loads with every entry, old or new.

    Exchanged in one step (an ordinary folder), it holds one generation at every
    moment. Merged in place (a folder with a file it does not record), every entry
    holds one generation whole and the unrelated file stays.
    """
    folder = tmp_path / "d"
    _tree(0.0).memmap(folder)
    if unrelated:
        (folder / "notes.txt").write_text("mine")
    written = {0.0}
    killed = 0
    for step in range(1, 120):
        generation = float(step)
        tree = _tree(generation)  # built before the fork: the child only writes
        if not kill_at(step, lambda tree=tree: tree.memmap(folder)):
            written.add(generation)
            assert set(_values(folder).values()) == {generation}
            break
        killed += 1
        written.add(generation)
        values = set(_values(folder).values())
        assert values <= written
        if not unrelated:
            assert len(values) == 1, values
        else:
            assert (folder / "notes.txt").read_text() == "mine"
    assert killed >= 3  # the steps were really there to kill at
    assert not [p for p in tmp_path.rglob("%tmp*")]  # dead writers' leftovers were removed


def test_memmap_merged_in_place_killed_while_shapes_change_never_records_a_missing_file(tmp_path):
    """Where the folder is merged in place and the shapes change, every recorded file has its size."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(8, 2), "b": torch.zeros(8)}, [8]).memmap(folder)
    (folder / "notes.txt").write_text("mine")
    for step in range(1, 80):
        tree = TensorDict({"a": torch.ones(4, 3), "c": torch.ones(4)}, [4])
        done = not kill_at(step, lambda tree=tree: tree.memmap(folder))
        td = TensorDict.load_memmap(folder)  # raises on a file of the wrong size
        for key in td.keys():
            assert td[key].shape[0] == td.batch_size[0]
        if done:
            assert set(td.keys()) == {"a", "c"} and td["a"].shape == (4, 3)
            break
        TensorDict({"a": torch.zeros(8, 2), "b": torch.zeros(8)}, [8]).memmap(folder)


def test_a_lazy_stack_merged_in_place_killed_at_every_step_always_loads(tmp_path):
    """A lazy stack entry whose members change in number and batch size, merged in place: it always loads."""

    def tree(value: float, members: int, rows: int) -> TensorDict:
        stack = lazy_stack(
            [TensorDict({"a": torch.full((rows,), value)}, [rows]) for _ in range(members)]
        )
        return TensorDict({"s": stack, "t": torch.full((2,), value)}, [])

    folder = tmp_path / "d"
    tree(0.0, 3, 3).memmap(folder)
    (folder / "notes.txt").write_text("mine")
    for step in range(1, 120):
        new = tree(1.0, 2, 5)
        done = not kill_at(step, lambda new=new: new.memmap(folder))
        td = TensorDict.load_memmap(folder)  # never members of two sizes, never a gap
        if "s" in td.keys():
            assert td["s"].batch_size in ((3, 3), (2, 5))
        if done:
            assert td["s"].batch_size == (2, 5) and (td["s", "a"] == 1).all()
            break
        tree(0.0, 3, 3).memmap(folder)
    assert (folder / "notes.txt").read_text() == "mine"


def test_a_failing_write_merged_in_place_leaves_the_old_tree(tmp_path, monkeypatch):
    """A failure while files are written (merged in place) leaves the old tree and no temporary file."""
    folder = tmp_path / "d"
    _tree(1.0).memmap(folder)
    (folder / "notes.txt").write_text("mine")
    calls = []
    write = _io._write_tensor

    def failing(*args):
        calls.append(1)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        return write(*args)

    monkeypatch.setattr(_io, "_write_tensor", failing)
    with pytest.raises(OSError, match="No space"):
        _tree(2.0).memmap(folder)
    assert set(_values(folder).values()) == {1.0}
    assert not [p.name for p in folder.iterdir() if p.name.startswith("%tmp")]


def test_adding_entries_never_rereads_an_unchanged_meta_json(tmp_path, monkeypatch):
    """make_memmap re-reads meta.json only when another writer changed it (adds stay linear)."""
    td = TensorDict({}, [2]).memmap(tmp_path / "d")
    reads = []
    read = fmt.read_meta_bytes
    monkeypatch.setattr(fmt, "read_meta_bytes", lambda path: reads.append(path) or read(path))
    for i in range(50):
        td.make_memmap(f"x{i}", (2,))
    assert reads == []
    TensorDict.load_memmap(tmp_path / "d").make_memmap("other", (2,))
    reads.clear()
    td.make_memmap("mine", (2,))
    assert len(reads) == 1  # once, because the other writer changed it
    assert {"other", "mine"} <= set(TensorDict.load_memmap(tmp_path / "d").keys())


def test_writers_adding_in_turn_parse_only_the_members_the_other_appended(tmp_path, monkeypatch):
    """Two views adding entries in turn: each re-read parses only what the other added, and nothing is lost."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(folder)
    first, second = TensorDict.load_memmap(folder), TensorDict.load_memmap(folder)
    first.make_memmap("start", (2,))
    parsed = []
    parse = fmt.parse_meta
    monkeypatch.setattr(
        fmt, "parse_meta", lambda path, raw: parsed.append(path) or parse(path, raw)
    )
    for i in range(30):
        (second if i % 2 else first).make_memmap(f"x{i}", (2,)).fill_(i)
    second.make_memmap("y", (2,))  # second's first add parses the whole file once
    assert len(parsed) <= 1
    monkeypatch.undo()
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"a", "start", "y"} | {f"x{i}" for i in range(30)}
    assert all(loaded[f"x{i}"].tolist() == [float(i)] * 2 for i in range(30))


# ---------------------------------------------------------------------- own changes only
def test_memmap_in_its_own_folder_removes_what_it_deleted_and_rewrites_what_it_changed(tmp_path):
    """memmap_() into its folder: deleted keys' records (and files) go, a changed string is rewritten."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3), "b": torch.ones(3), "note": "hi"}, [3]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    other = TensorDict.load_memmap(folder)
    other.make_memmap("theirs", (3,)).fill_(7)
    del td["b"]
    td["note"] = "changed"
    td.memmap_()
    meta = json.loads((folder / "meta.json").read_text())
    assert "b" not in meta and "theirs" in meta
    assert not (folder / "b.memmap").exists() and (folder / "theirs.memmap").exists()
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"a", "note", "theirs"}
    assert loaded["note"] == "changed" and loaded["theirs"].tolist() == [7.0] * 3


def test_memmap_in_its_own_folder_keeps_a_key_another_writer_recorded_again(tmp_path):
    """A key deleted in memory that another writer re-added meanwhile keeps that writer's record and file."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3), "b": torch.zeros(3)}, [3]).memmap(folder)
    mine = TensorDict.load_memmap(folder)
    other = TensorDict.load_memmap(folder)
    del other["b"]
    other.memmap_()
    other.unlock_()
    other.make_memmap("b", (3, 2)).fill_(5)
    del mine["b"]
    mine.memmap_()
    assert TensorDict.load_memmap(folder)["b"].tolist() == [[5.0, 5.0]] * 3


def test_memmap_in_its_own_folder_keeps_the_record_of_an_entry_it_could_not_load(tmp_path):
    """An entry dropped at load (its file missing) was not deleted by this tensordict: its record stays."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3), "b": torch.ones(3)}, [3]).memmap(folder)
    os.rename(folder / "b.memmap", tmp_path / "b.memmap")
    td = TensorDict.load_memmap(folder)
    assert set(td.keys()) == {"a"}
    td.memmap_()
    os.rename(tmp_path / "b.memmap", folder / "b.memmap")
    assert TensorDict.load_memmap(folder)["b"].tolist() == [1.0] * 3


def test_a_non_tensor_value_another_writer_rewrote_is_not_overwritten(tmp_path):
    """Two views change one string: the second memmap_() raises naming the key; the first's value stays."""
    folder = tmp_path / "d"
    TensorDict({"note": "hi"}, [2]).memmap(folder)
    first, second = TensorDict.load_memmap(folder), TensorDict.load_memmap(folder)
    first["note"] = "first"
    first.memmap_()
    second["note"] = "second"
    with pytest.raises(EntryExistsError, match=r"'note'.*another writer rewrote it"):
        second.memmap_()
    assert TensorDict.load_memmap(folder)["note"] == "first"


def test_an_unchanged_non_tensor_value_is_not_rewritten(tmp_path):
    """memmap_() of a loaded tensordict whose string did not change writes nothing."""
    folder = tmp_path / "d"
    TensorDict({"note": "hi", "a": torch.zeros(2)}, [2]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("meta.json")}
    td.memmap_()
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("meta.json")} == before


# ---------------------------------------------------------------------- relative prefixes
def test_memmap_into_the_working_directory_keeps_it(tmp_path, monkeypatch):
    """memmap(".") writes into the working directory without removing it, again and again."""
    monkeypatch.chdir(tmp_path)
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(".")
    out = TensorDict({"a": torch.ones(3)}, [3]).memmap(".")
    assert os.getcwd() == str(tmp_path) and os.path.samefile(".", tmp_path)
    assert out.saved_path == str(tmp_path)
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [1.0] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.memmap", "meta%lock", "meta.json"]


def test_relative_prefixes_resolve_against_the_working_directory(tmp_path, monkeypatch):
    """memmap("d"), then memmap("..") from inside a folder: paths resolve against the cwd."""
    monkeypatch.chdir(tmp_path)
    td = TensorDict({"a": torch.zeros(2)}, [2]).memmap("d")
    assert td.saved_path == str(tmp_path / "d")
    (tmp_path / "d" / "inner").mkdir()
    monkeypatch.chdir(tmp_path / "d" / "inner")
    TensorDict({"b": torch.ones(2)}, [2]).memmap("..")
    assert os.path.samefile(".", tmp_path / "d" / "inner")  # the cwd was not moved away
    assert set(TensorDict.load_memmap(tmp_path / "d").keys()) == {"b"}
    assert TensorDict.load_memmap("..")["b"].tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------- stale leftovers
def _leave_temporaries(folder) -> tuple:
    """A forked child makes a temporary file in ``folder`` and a staging folder beside it, then dies."""
    names = os.path.join(str(folder), "names.txt")
    pid = os.fork()
    if pid == 0:
        try:
            data = _fs.temporary_name(os.path.join(str(folder), "x"))
            stage = _fs.temporary_name(str(folder) + ".")
            open(data, "wb").close()
            os.mkdir(stage)
            with open(names, "w") as handle:
                handle.write(f"{data}\n{stage}")
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    with open(names) as handle:
        data, stage = handle.read().split("\n")
    os.unlink(names)
    return data, stage


def test_a_killed_writers_temporaries_are_removed_by_the_next_writer(tmp_path):
    """Leftovers of a dead writer on this host go; a live writer's and another host's stay."""
    folder = tmp_path / "d"
    td = TensorDict({"a": torch.zeros(2)}, [2]).memmap(folder)
    data, stage = _leave_temporaries(folder)
    live = _fs.temporary_name(str(folder / "x"))  # this process's: alive
    open(live, "wb").close()
    other_host = folder / f"%tmp.{'0' * 8 if _fs.HOST_TAG != '0' * 8 else '1' * 8}.1.ab"
    other_host.write_bytes(b"")
    legacy = folder / "%tmp.1.abcdef"  # an older writer's, without a host: unknown
    legacy.write_bytes(b"")
    td.make_memmap("b", (2,))
    assert not os.path.exists(data)
    assert os.path.exists(live) and other_host.exists() and legacy.exists()
    assert os.path.exists(stage)  # beside the folder: the next memmap(prefix) removes it
    TensorDict({"c": torch.zeros(2)}, [2]).memmap(folder)
    assert not os.path.exists(stage)


def test_a_non_tensor_value_changed_again_after_memmap_is_rewritten_each_time(tmp_path):
    """memmap(prefix), then memmap_() after each change of a string: the folder holds the last one."""
    td = TensorDict({"note": "a"}, [2]).memmap(tmp_path / "d")
    td.unlock_()
    for text in ("b", "c"):
        td["note"] = text
        td.memmap_()
        td.unlock_()
        td["new"] = text
        td.memmap_()
        td.unlock_()
        del td["new"]
        td.memmap_()
        td.unlock_()
        assert TensorDict.load_memmap(tmp_path / "d")["note"] == text
    assert set(TensorDict.load_memmap(tmp_path / "d").keys()) == {"note"}
    assert not (tmp_path / "d" / "new").exists()  # the deleted value's folder went with it


def test_a_key_renamed_in_memory_moves_on_disk_with_memmap(tmp_path):
    """rename_key_ on a loaded tensordict, then memmap_(): the data is under the new key only."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.arange(3.0)}, [3]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    td.rename_key_("a", "b")
    td.memmap_()
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"b"} and loaded["b"].tolist() == [0.0, 1.0, 2.0]
    assert sorted(p.name for p in folder.glob("*.memmap")) == ["b.memmap"]
