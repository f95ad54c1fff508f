"""SPEC.md "Traps the reference falls into": one or more tests per trap, asserting our behaviour."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
import torch

import tensordict
from tensordict import TensorDict


def _snapshot(folder: Path) -> dict:
    """Every path under ``folder`` with its bytes (files) or "dir"; {} if the folder is missing."""
    if not folder.exists():
        return {}
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = "dir" if path.is_dir() else path.read_bytes()
    return out


def _stamps(folder: Path) -> dict:
    """Every file under ``folder`` with its (bytes, mtime_ns, inode)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _nested(*rows) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor([torch.full(r, float(i)) for i, r in enumerate(rows)])


# ------------------------------------------------------------------ level field names
@pytest.mark.parametrize("name", ["shape", "device", "_type"])
def test_a_leaf_named_like_a_level_field_is_refused_before_anything_is_written(tmp_path, name):
    """memmap() of a leaf named shape/device/_type raises ValueError naming it; no meta.json appears."""
    folder = tmp_path / "td"
    td = TensorDict({name: torch.arange(3.0), "ok": torch.zeros(3)}, [3])
    with pytest.raises(ValueError, match=name):
        td.memmap(folder)
    assert not (folder / "meta.json").exists()
    assert _snapshot(folder) == {}
    assert not td.is_locked and not td.is_memmap()


@pytest.mark.parametrize("name", ["shape", "device", "_type"])
def test_a_nested_leaf_named_like_a_level_field_is_refused_and_nothing_is_written(tmp_path, name):
    """The same refusal at a nested level: no meta.json anywhere, no .memmap file."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.zeros(2), "sub": {name: torch.ones(2)}}, [2])
    with pytest.raises(ValueError, match=name):
        td.memmap(folder)
    assert _snapshot(folder) == {}


@pytest.mark.parametrize("name", ["shape", "device", "_type"])
def test_a_level_field_name_over_an_existing_folder_leaves_it_unchanged(tmp_path, name):
    """Refusing the key over an earlier tensordict's folder leaves every file as it was."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.arange(2.0)}, [2]).memmap(folder)
    before = _snapshot(folder)
    with pytest.raises(ValueError, match=name):
        TensorDict({"a": torch.ones(2), name: torch.ones(2)}, [2]).memmap(folder)
    assert _snapshot(folder) == before
    assert torch.equal(TensorDict.load_memmap(folder)["a"], torch.arange(2.0))


@pytest.mark.parametrize("name", ["shape", "device", "_type"])
def test_make_memmap_refuses_a_level_field_name_and_leaves_meta_json_unchanged(tmp_path, name):
    """Adding an entry named like a level field to a loaded tensordict raises; meta.json is untouched."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    before = _snapshot(folder)
    with pytest.raises(ValueError, match=name):
        td.make_memmap(name, (2,))
    assert _snapshot(folder) == before
    assert name not in td.keys()


# ------------------------------------------------------------------ colliding names
def test_a_leaf_x_shape_beside_a_nested_tensor_x_is_refused(tmp_path):
    """ "x.shape" would overwrite x.shape.memmap of the nested tensor "x": ValueError naming both, nothing written."""
    folder = tmp_path / "td"
    td = TensorDict({"x": _nested((3, 2), (3, 1)), "x.shape": torch.zeros(2)}, [2])
    with pytest.raises(ValueError, match=r"x\.shape"):
        td.memmap(folder)
    assert _snapshot(folder) == {}


def test_a_leaf_x_shape_beside_a_loaded_nested_tensor_is_refused(fixture_copy, tmp_path):
    """The reference's nested-tensor folder plus a leaf "nt.shape": refused, the target stays empty."""
    td = TensorDict.load_memmap(fixture_copy("nested_tensor"))
    td["nt.shape"] = torch.zeros(2)
    folder = tmp_path / "out"
    with pytest.raises(ValueError, match=r"nt\.shape"):
        td.memmap(folder)
    assert _snapshot(folder) == {}


def test_make_memmap_refuses_names_that_collide_with_a_nested_tensors_shape_file(tmp_path):
    """make_memmap of "x.shape" after a nested "x", and of a nested "x" after "x.shape", are refused."""
    td = TensorDict({}, [2]).memmap(tmp_path / "one")
    td.make_memmap("x", torch.tensor([[3, 2], [3, 1]]))
    before = _snapshot(tmp_path / "one")
    with pytest.raises(ValueError, match=r"x\.shape"):
        td.make_memmap("x.shape", (2,))
    assert _snapshot(tmp_path / "one") == before
    other = TensorDict({"x.shape": torch.arange(2.0)}, [2]).memmap(tmp_path / "two")
    with pytest.raises(ValueError, match=r"x\.shape"):
        other.make_memmap("x", torch.tensor([[3, 2], [3, 1]]))
    assert torch.equal(TensorDict.load_memmap(tmp_path / "two")["x.shape"], torch.arange(2.0))


def test_a_sub_tensordict_named_meta_json_is_refused(tmp_path):
    """A sub-tensordict "meta.json" would take the level's meta.json: ValueError, nothing written."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.zeros(2), "meta.json": {"b": torch.zeros(2)}}, [2])
    with pytest.raises(ValueError, match=r"meta\.json"):
        td.memmap(folder)
    assert _snapshot(folder) == {}


@pytest.mark.parametrize("name", ["meta.json", "shape", "device", "_type"])
def test_make_memmap_refuses_a_nested_key_through_a_reserved_name(tmp_path, name):
    """(name, "b") would create a sub-tensordict named meta.json or like a level field: refused, folder unchanged."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.zeros(2)}, [2]).memmap(folder)
    before = _snapshot(folder)
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        td.make_memmap((name, "b"), (2,))
    assert {k: v for k, v in _snapshot(folder).items() if k != "meta%lock"} == before
    assert set(TensorDict.load_memmap(folder).keys()) == {"a"}


# ------------------------------------------------------------------ truncated files
def test_a_truncated_memmap_file_is_refused_naming_the_file_and_both_sizes(tmp_path):
    """A 12-of-24-byte file raises ValueError with its path, 12 and 24; the file is not extended."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.arange(6.0).reshape(3, 2)}, [3]).memmap(folder)
    path = folder / "a.memmap"
    os.truncate(path, 12)
    with pytest.raises(ValueError, match=r"a\.memmap") as info:
        TensorDict.load_memmap(folder)
    assert "12" in str(info.value) and "24" in str(info.value)
    assert path.stat().st_size == 12


# ------------------------------------------------------------------ stale content
def test_a_two_member_lazy_stack_over_a_four_member_folder_loads_two_members(tmp_path):
    """Writing 2 stacked members where 4 were gives back 2, and the folders 2/ and 3/ are gone."""
    lazy = getattr(tensordict, "LazyStackedTensorDict", None)
    if lazy is None:
        pytest.skip("tensordict.LazyStackedTensorDict does not exist yet")
    folder = tmp_path / "stack"
    four = [TensorDict({"a": torch.full((2,), float(i))}, [2]) for i in range(4)]
    lazy(*four, stack_dim=0).memmap(folder)
    two = [TensorDict({"a": torch.full((2,), 10.0 + i)}, [2]) for i in range(2)]
    lazy(*two, stack_dim=0).memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    assert isinstance(loaded, lazy)
    assert len(loaded.tensordicts) == 2 and loaded.batch_size == (2, 2)
    assert torch.equal(loaded["a"], torch.tensor([[10.0, 10.0], [11.0, 11.0]]))
    assert not (folder / "2").exists() and not (folder / "3").exists()


def test_a_tensordict_with_fewer_keys_over_an_earlier_folder_loads_only_its_keys(tmp_path):
    """{a} written over {a, b}: loading gives {a}; b.memmap is gone."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "b": torch.ones(3)}, [3]).memmap(folder)
    TensorDict({"a": torch.arange(3.0)}, [3]).memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"a"}
    assert torch.equal(loaded["a"], torch.arange(3.0))
    assert not (folder / "b.memmap").exists()


def test_a_stale_sub_tensordict_folder_does_not_come_back(tmp_path):
    """{a} written over {a, sub: {c}}: the sub-folder is removed and loading gives {a}."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "sub": {"c": torch.ones(3)}}, [3]).memmap(folder)
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(folder)
    assert set(TensorDict.load_memmap(folder).keys(True)) == {"a"}
    assert not (folder / "sub").exists()


def test_memmap_like_into_a_folder_with_files_returns_zeros(tmp_path):
    """memmap_like over a folder holding ones gives fresh zero storage, not the old bytes."""
    folder = tmp_path / "td"
    template = TensorDict(
        {"a": torch.ones(4, 2), "sub": {"b": torch.ones(4, dtype=torch.int64)}}, [4]
    )
    old = template.memmap(folder)
    like = template.memmap_like(folder)
    assert (like["a"] == 0).all() and (like["sub", "b"] == 0).all()
    loaded = TensorDict.load_memmap(folder)
    assert (loaded["a"] == 0).all() and (loaded["sub", "b"] == 0).all()
    like["a"].fill_(3.0)
    assert (old["a"] == 1).all()  # the old mapping is not the new storage


# ------------------------------------------------------------------ loaded = memory-mapped
def test_a_loaded_tensordict_is_memory_mapped_at_once(tmp_path):
    """After load_memmap: is_memmap(), saved_path is the folder, make_memmap works with no memmap_()."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "sub": {"b": torch.zeros(3)}}, [3]).memmap(folder)
    td = TensorDict.load_memmap(folder)
    assert td.is_memmap() and not td.is_locked
    assert td.saved_path == str(folder)
    assert td["sub"].saved_path == str(folder / "sub")
    td.make_memmap("x", (3, 2)).fill_(1.0)
    td.make_memmap(("sub", "y"), (3,))
    again = TensorDict.load_memmap(folder)
    assert (again["x"] == 1).all() and ("sub", "y") in again.keys(True)


def test_memmap_inplace_on_a_loaded_tensordict_locks_it_and_rewrites_no_data(tmp_path):
    """memmap_() on a loaded tensordict locks it; the .memmap files keep their inode, bytes and mtime."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.arange(3.0), "sub": {"b": torch.ones(3)}}, [3]).memmap(folder)
    before = {k: v for k, v in _stamps(folder).items() if k.endswith(".memmap")}
    td = TensorDict.load_memmap(folder)
    assert td.memmap_() is td
    assert td.is_locked and td.is_memmap()
    after = {k: v for k, v in _stamps(folder).items() if k.endswith(".memmap")}
    assert after == before


# ------------------------------------------------------------------ readers never write
def test_memmap_refresh_in_a_reader_never_writes_meta_json(tmp_path):
    """A reader's refresh after a writer's additions leaves every file's bytes and mtime unchanged."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "sub": {"b": torch.zeros(3)}}, [3]).memmap(folder)
    reader = TensorDict.load_memmap(folder)
    writer = TensorDict.load_memmap(folder)
    writer.make_memmap("x", (3,))
    writer.make_memmap(("sub", "y"), (3,))
    before = _stamps(folder)
    reader.memmap_refresh_()
    reader.memmap_refresh_()
    assert ("sub", "y") in reader.keys(True) and "x" in reader.keys()
    assert _stamps(folder) == before


def test_load_never_writes_or_creates_files(tmp_path):
    """load_memmap leaves every file unchanged and adds none (no lock or temporary file)."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "sub": {"b": torch.zeros(3)}}, [3]).memmap(folder)
    before = _stamps(folder)
    names = sorted(str(p) for p in folder.rglob("*"))
    td = TensorDict.load_memmap(folder)
    td.memmap_refresh_()
    assert _stamps(folder) == before
    assert sorted(str(p) for p in folder.rglob("*")) == names


# ------------------------------------------------------------------ concurrent writers
def test_two_writers_in_one_process_alternating_lose_no_record(tmp_path):
    """Two tensordicts loaded from one folder add entries in turn (top level and nested): every record is kept."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.zeros(3), "sub": {"b": torch.zeros(3)}}, [3]).memmap(folder)
    one, two = TensorDict.load_memmap(folder), TensorDict.load_memmap(folder)
    for i in range(20):
        one.make_memmap(f"one{i}", (3,))
        two.make_memmap(("sub", f"two{i}"), (3,))
        two.make_memmap(f"two{i}", (3,))
    loaded = TensorDict.load_memmap(folder)
    assert set(loaded.keys()) == {"a", "sub"} | {
        f"{w}{i}" for w in ("one", "two") for i in range(20)
    }
    assert set(loaded["sub"].keys()) == {"b"} | {f"two{i}" for i in range(20)}


@pytest.mark.timeout(180)
def test_two_writer_processes_adding_entries_lose_no_record(tmp_path, children):
    """Two spawned processes each add 50 entries to one folder at once: all 100 plus the originals load."""
    folder = tmp_path / "td"
    TensorDict({"a": torch.arange(3.0), "sub": {"b": torch.ones(3)}}, [3]).memmap(folder)
    ctx = torch.multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=children.add_entries, args=(str(folder), p, 50, barrier, results))
        for p in ("p", "q")
    ]
    try:
        for proc in procs:
            proc.start()
        reports = [results.get(timeout=150) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
    assert all(kind == "done" for kind, _ in reports), reports
    assert [proc.exitcode for proc in procs] == [0, 0]
    loaded = TensorDict.load_memmap(folder)
    expected = {f"{p}{i}" for p in "pq" for i in range(50)} | {"a", "sub"}
    assert set(loaded.keys()) == expected
    assert torch.equal(loaded["a"], torch.arange(3.0))
    for p in "pq":
        for i in range(50):
            assert (loaded[f"{p}{i}"] == i).all(), f"{p}{i}"


# ------------------------------------------------------------------ long names
@pytest.mark.parametrize("key", ["k" * 300, "é" * 300, "/" * 100])
def test_a_key_whose_encoded_name_is_over_255_bytes_memmaps_and_loads(tmp_path, key):
    """A tensor and a sub-tensordict with an over-long key round-trip; every name fits in 255 bytes."""
    folder = tmp_path / "td"
    td = TensorDict({key: torch.arange(3.0), "sub": {key: {"c": torch.ones(3)}}}, [3])
    td.memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    assert torch.equal(loaded[key], torch.arange(3.0))
    assert torch.equal(loaded["sub", key, "c"], torch.ones(3))
    assert all(len(p.name.encode()) <= 255 for p in folder.rglob("*"))
    assert key in json.loads((folder / "meta.json").read_text())


def test_long_keys_sharing_a_prefix_stay_distinct(tmp_path):
    """ "k"*300 + "a" and "k"*300 + "b" get different files and load back with their own values."""
    folder = tmp_path / "td"
    ka, kb = "k" * 300 + "a", "k" * 300 + "b"
    TensorDict({ka: torch.zeros(3), kb: torch.ones(3)}, [3]).memmap(folder)
    assert len(list(folder.glob("*.memmap"))) == 2
    loaded = TensorDict.load_memmap(folder)
    assert torch.equal(loaded[ka], torch.zeros(3)) and torch.equal(loaded[kb], torch.ones(3))


def test_make_memmap_with_long_keys_loads_back_in_another_tensordict(tmp_path):
    """Long keys added with make_memmap / make_memmap_from_tensor are seen by load and refresh."""
    folder = tmp_path / "td"
    td = TensorDict({}, [2]).memmap(folder)
    reader = TensorDict.load_memmap(folder)
    ka, kb = "é" * 200 + "a", "é" * 200 + "b"
    td.make_memmap(ka, (2,)).fill_(5.0)
    td.make_memmap_from_tensor((kb, "x" * 300), torch.ones(2))
    reader.memmap_refresh_()
    assert (reader[ka] == 5).all() and (reader[kb, "x" * 300] == 1).all()
    assert (TensorDict.load_memmap(folder)[ka] == 5).all()


# ------------------------------------------------------------------ storages that are not
def test_a_meta_device_storage_gets_a_clear_error(tmp_path):
    """A storage on the meta device: ValueError saying it must be in physical memory."""
    td = TensorDict({}, [3]).memmap(tmp_path / "td")
    with pytest.raises(ValueError, match="physical memory"):
        td.make_memmap_from_storage("x", torch.empty(3, device="meta").untyped_storage(), (3,))
    assert "x" not in td.keys()


@pytest.mark.parametrize(
    "storage",
    [[0.0, 1.0, 2.0], torch.zeros(3), None, b"\x00" * 12],
    ids=["list", "tensor", "none", "bytes"],
)
def test_something_that_is_not_a_storage_gets_type_error_naming_it(tmp_path, storage):
    """A list, a plain tensor, None or bytes: TypeError naming UntypedStorage and what was given."""
    folder = tmp_path / "td"
    td = TensorDict({}, [3]).memmap(folder)
    before = _snapshot(folder)
    with pytest.raises(TypeError, match="UntypedStorage") as info:
        td.make_memmap_from_storage("x", storage, (3,))
    assert type(storage).__name__ in str(info.value)
    assert "x" not in td.keys() and _snapshot(folder) == before
