"""Memory-mapped tensordicts across spawned processes: refresh sees a writer's entries, queues share data."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from tensordict import NonTensorData, TensorDict
from tensordict.errors import EntryExistsError


def _get(results, expected: str):
    """The next report from a child; a child's traceback fails the test with its text."""
    report = results.get(timeout=120)
    assert report[0] != "error", report[1]
    assert report[0] == expected, report
    return report


def _file_storage(path: Path, nbytes: int) -> torch.UntypedStorage:
    return torch.UntypedStorage.from_file(str(path), shared=True, nbytes=nbytes)


@pytest.mark.timeout(180)
def test_a_child_sees_the_parents_new_entries_only_after_memmap_refresh(tmp_path, children):
    """A spawned reader does not see entries added by the parent until memmap_refresh_(); then it sees them all and later writes."""
    folder = tmp_path / "td"
    writer = TensorDict({"a": torch.arange(3.0), "sub": {"b": torch.ones(3)}}, [3]).memmap(folder)
    ctx = torch.multiprocessing.get_context("spawn")
    commands, results = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=children.watch_folder, args=(str(folder), commands, results))
    child.start()
    try:
        original = sorted(map(str, writer.keys(True, True)))
        assert _get(results, "loaded")[1] == original

        writer.make_memmap_from_storage("s", _file_storage(folder / "s.memmap", 12), (3,))
        writer.make_memmap_from_storage(
            ("sub", "t"), _file_storage(folder / "sub" / "t.memmap", 24), (3, 2), dtype=torch.int32
        )
        writer.make_memmap("m", (3, 2))
        writer.make_memmap(("new", "n"), (3,), dtype=torch.int64)
        added = ["s", ("sub", "t"), "m", ("new", "n")]

        commands.put(("keys",))
        assert _get(results, "keys")[1] == original

        commands.put(("refresh",))
        _, keys, same_td, same_sub, is_memmap = _get(results, "refreshed")
        assert keys == sorted(map(str, writer.keys(True, True)))
        assert set(map(str, added)) <= set(keys)
        assert same_td and same_sub and is_memmap

        writer["s"].copy_(torch.tensor([1.0, 2.0, 3.0]))
        writer["sub", "t"].fill_(-4)
        writer["m"][1] = 6.0
        writer["new", "n"].copy_(torch.tensor([7, 8, 9]))
        writer["a"][0] = 10.0
        commands.put(("values", added + ["a"]))
        _, values = _get(results, "values")
        assert values == {
            "s": [1.0, 2.0, 3.0],
            str(("sub", "t")): [[-4, -4]] * 3,
            "m": [[0.0, 0.0], [6.0, 6.0], [0.0, 0.0]],
            str(("new", "n")): [7, 8, 9],
            "a": [10.0, 1.0, 2.0],
        }
        commands.put(("stop",))
        child.join(timeout=60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join()


@pytest.mark.timeout(180)
def test_a_memory_mapped_tensordict_sent_through_a_queue_is_shared_not_copied(tmp_path, children):
    """File-backed and shared-memory tensordicts sent to a spawned child: the child's writes are seen by the parent."""
    source = TensorDict({"a": torch.zeros(4), "sub": {"b": torch.zeros(4, 2)}}, [4])
    on_disk = source.memmap(tmp_path / "td")
    in_memory = source.memmap()
    ctx = torch.multiprocessing.get_context("spawn")
    queue, results = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=children.write_received, args=(queue, results))
    child.start()
    try:
        queue.put(on_disk)
        assert _get(results, "written")[1] == (True, str(tmp_path / "td"))
        assert on_disk["a"][0] == 42 and (on_disk["sub", "b"][1] == 7).all()
        assert TensorDict.load_memmap(tmp_path / "td")["a"][0] == 42

        queue.put(in_memory)
        assert _get(results, "written")[1] == (True, None)
        assert in_memory["a"][0] == 42 and (in_memory["sub", "b"][1] == 7).all()

        assert (source["a"] == 0).all()  # the original, not memory-mapped, was never shared
        queue.put(None)
        child.join(timeout=60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join()


# ---------------------------------------------------------------------- coherent writers
def test_memmap_on_a_loaded_tensordict_writes_nothing(tmp_path):
    """memmap_() of a tensordict already mapped in its folder leaves another writer's entry alone."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(folder)
    reader = TensorDict.load_memmap(folder)
    writer = TensorDict.load_memmap(folder).memmap_()
    writer.make_memmap("x", (3,)).fill_(5)
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert reader.memmap_() is reader and reader.is_locked
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    assert TensorDict.load_memmap(folder)["x"].tolist() == [5.0, 5.0, 5.0]


def test_a_key_another_writer_added_meanwhile_is_refused_and_its_file_kept(tmp_path):
    """Two writers add the same key: the second gets a clear error; the first's file lives on."""
    folder = tmp_path / "d"
    TensorDict({}, [2]).memmap(folder)
    first, second = TensorDict.load_memmap(folder), TensorDict.load_memmap(folder)
    mine = first.make_memmap("k", (2,))
    with pytest.raises(EntryExistsError, match=r"cannot add 'k' in .*another writer added it"):
        second.make_memmap_from_tensor("k", torch.ones(2))
    mine.fill_(3)
    assert TensorDict.load_memmap(folder)["k"].tolist() == [3.0, 3.0]
    assert "k" not in second.keys()
    assert [p.name for p in folder.iterdir() if p.name.startswith("%tmp")] == []


@pytest.mark.timeout(300)
def test_three_writers_that_memmap_then_add_lose_no_entry(tmp_path, children):
    """Three spawned processes each load_memmap(d).memmap_() then add 100 entries: all 300 stay."""
    folder = tmp_path / "d"
    TensorDict({}, [3]).memmap(folder)
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    args = [(str(folder), f"w{w}_", 100, barrier, results, True) for w in range(3)]
    procs = [ctx.Process(target=children.add_entries, args=a) for a in args]
    for p in procs:
        p.start()
    for _ in procs:
        _get(results, "done")
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    loaded = TensorDict.load_memmap(folder)
    assert len(loaded.keys()) == 300
    assert all(loaded[f"w{w}_99"].tolist() == [99.0] * 3 for w in range(3))


def test_memmap_after_setting_new_keys_adds_them_and_keeps_another_writers_entry(tmp_path):
    """A loaded tensordict given new keys, then memmap_(): its keys are added, nothing else changes."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(folder)
    mine = TensorDict.load_memmap(folder)
    other = TensorDict.load_memmap(folder)
    other.make_memmap("theirs", (3,)).fill_(7)
    mine["new"] = torch.ones(3)
    mine["note"] = "hello"
    mine["sub"] = {"x": torch.full((3, 2), 2.0)}
    mine.memmap_()
    assert mine.is_memmap() and mine.is_locked
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"a", "theirs", "new", "note", "sub"}
    assert loaded["theirs"].tolist() == [7.0] * 3 and loaded["new"].tolist() == [1.0] * 3
    assert loaded["note"] == "hello" and loaded["sub", "x"].tolist() == [[2.0, 2.0]] * 3


def test_memmap_after_rebinding_a_key_replaces_its_file_on_purpose(tmp_path):
    """Rebinding a loaded entry then memmap_() writes the new value in that entry's place."""
    folder = tmp_path / "d"
    TensorDict({"a": torch.zeros(3), "b": torch.zeros(3)}, [3]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    td["a"] = torch.arange(3.0)
    td.memmap_()
    assert TensorDict.load_memmap(folder)["a"].tolist() == [0.0, 1.0, 2.0]
    assert [p.name for p in folder.iterdir() if p.name.startswith("%tmp")] == []


# ---------------------------------------------------------------------- replacing a folder
@pytest.mark.timeout(300)
@pytest.mark.parametrize("unrelated", [False, True], ids=["exchanged", "merged"])
def test_two_processes_replacing_one_folder_each_leave_it_whole(tmp_path, children, unrelated):
    """Two processes memmap(prefix) the same folder at once: it always loads as one of them.

    Also where the folder holds a file it does not record, so that each tree is merged
    in entry by entry (under the folder's lock) instead of exchanged.
    """
    folder = tmp_path / "d"
    TensorDict({}, [8]).memmap(folder)
    if unrelated:
        (folder / "notes.txt").write_text("mine")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=children.rewrite_times, args=(str(folder), v, 20, barrier, results))
        for v in (1.0, 2.0)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        _get(results, "done")
    for p in procs:
        p.join(60)
    td = TensorDict.load_memmap(folder)
    values = {float(td[f"k{i}"][0]) for i in range(30)}
    assert len(td.keys()) == 30 and len(values) == 1
    assert [p.name for p in tmp_path.rglob("%tmp*")] == []
    assert not unrelated or (folder / "notes.txt").read_text() == "mine"


@pytest.mark.timeout(180)
def test_two_writers_creating_one_new_sub_tensordict_at_once_both_add_their_entries(
    tmp_path, children
):
    """Two processes add ("g<n>", "w0") and ("g<n>", "w1") at the same moment, round after
    round: the sub-tensordict the other created is adopted, and both entries land in it."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(folder)
    rounds = 12
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(
            target=children.create_in_new_levels,
            args=(str(folder), me, rounds, barrier, results),
        )
        for me in range(2)
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            _get(results, "done")
    finally:
        for proc in procs:
            proc.join(30)
    loaded = TensorDict.load_memmap(folder)
    for round_ in range(rounds):
        assert set(loaded[f"g{round_}"].keys()) == {"w0", "w1"}, round_
        for me in range(2):
            assert loaded[f"g{round_}", f"w{me}"].tolist() == [me] * 3


def test_a_new_sub_tensordict_where_another_writer_put_a_tensor_is_refused(tmp_path):
    """A tuple key through a name another writer recorded as a tensor meanwhile: EntryExistsError."""
    mine = TensorDict({"a": torch.zeros(3)}, [3]).memmap(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td").make_memmap("grp", (3,))
    with pytest.raises(EntryExistsError, match=r"'grp'.*a tensor"):
        mine.make_memmap(("grp", "w"), (3,))
    assert TensorDict.load_memmap(tmp_path / "td")["grp"].shape == (3,)


def test_a_new_sub_tensordict_another_writer_created_is_adopted_with_its_entries(tmp_path):
    """The other writer's sub-tensordict (and its entries) appear beside the entry added to it."""
    mine = TensorDict({"a": torch.zeros(3)}, [3]).memmap(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td").make_memmap(("grp", "theirs"), (3,)).fill_(1)
    mine.make_memmap(("grp", "mine"), (3,)).fill_(2)
    assert set(mine["grp"].keys()) == {"theirs", "mine"}
    assert mine["grp", "theirs"].tolist() == [1.0] * 3
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["grp", "mine"].tolist() == [2.0] * 3
    with pytest.raises(EntryExistsError, match="already exists"):
        mine.make_memmap(("grp", "theirs"), (3,))


def _stack_of_values() -> TensorDict:
    td = TensorDict({"val": NonTensorData(data=0, batch_size=[10])}, [10])
    td[1::2] = TensorDict({"val": NonTensorData(data=1, batch_size=[5])}, [5])
    return td


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", ["share_memory_", "memmap_shared", "memmap_not_shared"])
def test_a_child_writes_non_tensor_values_the_parent_reads(tmp_path, children, how):
    """After share_memory_() or memmap_(share_non_tensor=True), a spawned child's write into a
    stack of values reaches the parent; with share_non_tensor=False only the folder gets it."""
    td = _stack_of_values()
    if how == "share_memory_":
        td.share_memory_()
    else:
        td.memmap_(tmp_path, share_non_tensor=how == "memmap_shared")
    td[1::2] = TensorDict({"val": NonTensorData(data=2, batch_size=[5])}, [5])
    assert td.get("val").tolist() == [0, 2] * 5
    child = mp.get_context("spawn").Process(target=children.write_non_tensor_rows, args=(td,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0
    expected = [0, 2] * 5 if how == "memmap_not_shared" else [0, 3] * 5
    assert td.get("val").tolist() == expected
    if how != "share_memory_":
        assert TensorDict.load_memmap(tmp_path).get("val").tolist() == [0, 3] * 5
