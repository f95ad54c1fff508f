"""Lazy opening (our extension): ``load_memmap(prefix, lazy=True)`` reads entries on first access."""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch

from tensordict import TensorDict
from tensordict.errors import MappingLimitError, MemmapFormatError, SymlinkError
from tensordict.memmap import _io, _ondemand
from tensordict.memmap import format as fmt

from conftest import ours_only

pytestmark = ours_only  # lazy=True is our extension of load_memmap


def _tree(path):
    td = TensorDict(
        {
            "a": torch.arange(6.0).reshape(3, 2),
            "flag": torch.tensor([True, False, True]),
            "text": "hello",
            "sub": {"b": torch.ones(3), "deep": {"c": torch.zeros(3, 4)}},
        },
        [3],
    )
    return td.memmap(path)


def _episodes(path, levels: int, per: int):
    src = TensorDict(
        {
            f"ep{i}": TensorDict(
                {f"x{j}": torch.full((2,), float(i * per + j)) for j in range(per)}
            )
            for i in range(levels)
        }
    )
    return src.memmap(path)


def _edit_meta(folder, change):
    path = os.path.join(folder, "meta.json")
    with open(path) as handle:
        meta = json.load(handle)
    change(meta)
    with open(path, "w") as handle:
        json.dump(meta, handle)


def _lazy_type(td) -> str:
    return type(td._tensordict).__name__


# ---------------------------------------------------------------------- opening
def test_keys_of_the_top_level_read_only_the_top_meta_json(tmp_path, monkeypatch):
    """Opening lazily and listing the top keys reads one meta.json and maps no file."""
    _tree(tmp_path / "td")
    reads, maps = [], []
    read_meta, from_file = fmt.read_meta, torch.from_file
    monkeypatch.setattr(fmt, "read_meta", lambda folder: reads.append(folder) or read_meta(folder))
    monkeypatch.setattr(torch, "from_file", lambda *a, **k: maps.append(a) or from_file(*a, **k))
    td = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert list(td.keys()) == ["a", "flag", "text", "sub"]
    assert td.batch_size == torch.Size([3])
    assert reads == [str(tmp_path / "td")] and maps == []
    td["sub", "b"]
    assert reads[1:] == [str(tmp_path / "td" / "sub")] and len(maps) == 1


def test_lazy_and_eager_loads_give_the_same_tensordict(tmp_path):
    """Values, keys, batch size, names, non-tensor data and memory-mapping agree with the eager load."""
    _tree(tmp_path / "td")
    eager = TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert lazy.is_memmap() and not lazy.is_locked
    assert list(lazy.keys(True, True)) == list(eager.keys(True, True))
    assert (lazy == eager).all()
    assert lazy["text"] == "hello"
    assert isinstance(lazy["sub", "deep", "c"], type(eager["sub", "deep", "c"]))
    assert lazy["a"].filename == eager["a"].filename
    assert lazy.saved_path == eager.saved_path


def test_nested_levels_open_lazily_on_first_access(tmp_path):
    """A nested level is itself opened lazily: its deeper levels are read only when reached."""
    _tree(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert _lazy_type(lazy["sub"]) == "LazyEntries"
    assert lazy["sub"]._tensordict.loaded_items() == []


def test_indexing_apply_iteration_and_pickle_match_eager(tmp_path):
    """td[idx], apply, items and a pickle round trip give the eager results."""
    _tree(tmp_path / "td")
    eager = TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    for index in (1, slice(0, 2), torch.tensor([2, 0])):
        assert (lazy[index] == eager[index]).all()
    assert (lazy.apply(lambda x: x * 2) == eager.apply(lambda x: x * 2)).all()
    assert [k for k, _ in lazy.items(True)] == [k for k, _ in eager.items(True)]
    again = pickle.loads(pickle.dumps(TensorDict.load_memmap(tmp_path / "td", lazy=True)))
    assert (again == eager).all()


def test_writes_reach_the_files(tmp_path):
    """A write into a lazily read leaf, or an index assignment, reaches the file as eager ones do."""
    _tree(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    lazy["sub", "b"][1] = 5.0
    lazy[torch.tensor([0])] = lazy[torch.tensor([2])].clone()
    fresh = TensorDict.load_memmap(tmp_path / "td")
    assert fresh["sub", "b"].tolist() == [1.0, 5.0, 1.0]
    assert fresh["a"][0].tolist() == [4.0, 5.0] and fresh["flag"].tolist() == [True, False, True]


def test_memmap_inplace_writes_only_new_entries_and_locks_later_reads(tmp_path):
    """memmap_() of a lazy tensordict writes the new entries; a level read after the lock is locked."""
    _tree(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    lazy["new"] = torch.full((3,), 2.0)
    lazy["sub", "deep", "extra"] = torch.ones(3, 1)
    lazy.memmap_()
    assert lazy.is_locked and lazy.is_memmap()
    assert lazy["sub"]._tensordict.loaded_items()  # read while adding "extra"
    eager = TensorDict.load_memmap(tmp_path / "td")
    assert eager["new"].tolist() == [2.0] * 3 and eager["sub", "deep", "extra"].shape == (3, 1)
    other = TensorDict.load_memmap(tmp_path / "td", lazy=True).lock_()
    assert other["sub"].is_locked and other["sub", "deep"].is_locked


def test_memmap_refresh_sees_other_writers_and_keeps_unread_entries_unread(tmp_path):
    """memmap_refresh_() of a lazy tensordict brings in new entries as an eager refresh does."""
    writer = _tree(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    first = lazy["a"]
    writer.unlock_()
    writer["added"] = torch.full((3,), 4.0)
    writer["sub", "more"] = torch.full((3,), 9.0)
    writer.memmap_()
    lazy["sub"]  # read before the refresh: refreshed in place
    lazy.memmap_refresh_()
    eager = TensorDict.load_memmap(tmp_path / "td")
    assert (lazy == eager).all()
    assert lazy["a"] is first
    assert lazy["sub", "more"].tolist() == [9.0] * 3


# ---------------------------------------------------------------------- checks
def _wrong_size(root):
    with open(os.path.join(root, "sub", "b.memmap"), "ab") as handle:
        handle.write(b"\0" * 4)
    return ("sub", "b")


def _unknown_dtype(root):
    _edit_meta(os.path.join(root, "sub"), lambda m: m["b"].update(dtype="torch.float99"))
    return ("sub", "b")


def _bad_batch(root):
    _edit_meta(root, lambda m: m["a"].update(shape=[2, 3]))
    return ("a",)


def _bad_json(root):
    with open(os.path.join(root, "sub", "deep", "meta.json"), "w") as handle:
        handle.write("{not json")
    return ("sub", "deep")


def _symlink(root):
    path = os.path.join(root, "sub", "b.memmap")
    os.rename(path, path + ".real")
    os.symlink(path + ".real", path)
    return ("sub", "b")


def _deep_symlinked_folder(root):
    path = os.path.join(root, "sub", "deep")
    os.rename(path, path + "-real")
    os.symlink(path + "-real", path)
    return ("sub", "deep")


@pytest.mark.parametrize(
    "damage", [_wrong_size, _unknown_dtype, _bad_batch, _bad_json, _symlink, _deep_symlinked_folder]
)
def test_each_check_of_the_eager_load_runs_on_first_access_with_the_same_error(tmp_path, damage):
    """A damaged entry does not stop the lazy open; its first access raises the eager load's error."""
    _tree(tmp_path / "td")
    key = damage(str(tmp_path / "td"))
    with pytest.raises((ValueError, OSError, RuntimeError)) as eager:
        TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert "a" in lazy.keys() and "sub" in lazy.keys()
    with pytest.raises(type(eager.value)) as found:
        lazy[key]
    assert str(found.value) == str(eager.value)
    assert isinstance(found.value, (MemmapFormatError, SymlinkError, OSError, RuntimeError))


def test_a_level_whose_fields_are_bad_raises_at_open(tmp_path):
    """The checks of the opened level itself (batch size, device) run when it is opened."""
    _tree(tmp_path / "td")
    _edit_meta(str(tmp_path / "td"), lambda m: m.update(shape="three"))
    with pytest.raises(MemmapFormatError) as eager:
        TensorDict.load_memmap(tmp_path / "td")
    with pytest.raises(MemmapFormatError) as lazy:
        TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert str(lazy.value) == str(eager.value)


def test_an_entry_whose_file_is_missing_is_dropped_on_first_access(tmp_path):
    """As the eager load drops it at load, the lazy level drops it when first accessed."""
    _tree(tmp_path / "td")
    os.unlink(tmp_path / "td" / "sub" / "b.memmap")
    eager = TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert "b" in lazy["sub"].keys()
    with pytest.raises(KeyError):
        lazy["sub", "b"]
    assert "b" not in lazy["sub"].keys()
    assert list(lazy.keys(True, True)) == list(eager.keys(True, True))


def test_the_depth_limit_holds_for_levels_opened_later(tmp_path, monkeypatch):
    """A tree deeper than the format's limit raises when the too-deep level is reached."""
    _tree(tmp_path / "td")
    monkeypatch.setattr(fmt, "MAX_DEPTH", 2)
    with pytest.raises(MemmapFormatError) as eager:
        TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    lazy["sub", "b"]
    with pytest.raises(MemmapFormatError) as found:
        lazy["sub", "deep"]
    assert str(found.value) == str(eager.value)


# ---------------------------------------------------------------------- bounded mappings
def test_a_lazy_tree_holds_a_bounded_number_of_mappings(tmp_path, monkeypatch):
    """Iterating every entry keeps at most MAX_MAPPED tensors held; a tensor the user holds stays valid."""
    monkeypatch.setattr(_ondemand, "MAX_MAPPED", 8)
    monkeypatch.setattr(_ondemand, "CHUNK", 4)
    monkeypatch.setattr(_ondemand, "_RECENT", type(_ondemand._RECENT)())
    _episodes(tmp_path / "td", 6, 10)
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    held = lazy["ep0", "x1"]
    seen = {key: value[0].item() for key, value in lazy.items(True, True)}
    assert len(seen) == 60 and seen[("ep5", "x9")] == 59.0
    assert _ondemand.held_mappings() <= 8
    assert held[0].item() == 1.0 and lazy["ep0", "x1"] is held
    again = lazy["ep3", "x4"]
    assert again[0].item() == 34.0


def test_memmap_beyond_the_mapping_limit_writes_file_by_file_and_returns_a_lazy_result(
    tmp_path, monkeypatch
):
    """A tree with more leaves than the process may map is written whole; its result opens lazily."""
    monkeypatch.setattr(_ondemand, "MAX_MAPPED", 4)
    monkeypatch.setattr(
        _ondemand, "MAX_MAP_COUNT", _io._mappings_in_use() + _io.MAPPINGS_MARGIN + 10
    )
    monkeypatch.setattr(_ondemand, "_RECENT", type(_ondemand._RECENT)())
    out = _episodes(tmp_path / "td", 4, 5)
    assert _lazy_type(out) == "LazyEntries" and out.is_locked and out.is_memmap()
    assert out["ep3", "x4"].tolist() == [19.0, 19.0]
    monkeypatch.setattr(_ondemand, "MAX_MAP_COUNT", 1 << 20)
    eager = TensorDict.load_memmap(tmp_path / "td")
    assert (out == eager).all() and len(list(eager.keys(True, True))) == 20


@pytest.mark.parametrize("where", ["shared memory", "in place"])
def test_memmap_beyond_the_limit_without_a_lazy_result_raises_before_writing(
    tmp_path, monkeypatch, where
):
    """Without a folder, or in place, it raises naming vm.max_map_count, and writes nothing."""
    monkeypatch.setattr(_ondemand, "MAX_MAPPED", 4)
    monkeypatch.setattr(
        _ondemand, "MAX_MAP_COUNT", _io._mappings_in_use() + _io.MAPPINGS_MARGIN + 10
    )
    src = TensorDict({f"x{j}": torch.zeros(2) for j in range(30)})
    with pytest.raises(MappingLimitError, match=r"vm\.max_map_count.*memmap\(prefix\)"):
        if where == "in place":
            src.memmap_(tmp_path / "td")
        else:
            src.memmap()
    assert not (tmp_path / "td").exists()
    assert isinstance(MappingLimitError("x"), RuntimeError)


def test_listing_every_key_of_a_lazy_tree_maps_no_file(tmp_path, monkeypatch):
    """keys(True, True) of a lazy tree reads the levels' meta.json files, and maps no tensor."""
    _episodes(tmp_path / "td", 3, 4)
    os.unlink(tmp_path / "td" / "ep1" / "x2.memmap")
    eager = TensorDict.load_memmap(tmp_path / "td")
    maps = []
    from_file = torch.from_file
    monkeypatch.setattr(torch, "from_file", lambda *a, **k: maps.append(a) or from_file(*a, **k))
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    assert list(lazy.keys(True, True)) == list(eager.keys(True, True))
    assert maps == []
    values = list(lazy.values(True, True))
    assert len(maps) == len(values) == 11
    assert all(type(v) is type(eager["ep0", "x0"]) and v.numel() == 2 for v in values)


def test_a_dropped_lazy_tree_lets_go_of_its_mappings(tmp_path, monkeypatch):
    """Once a lazily opened tree is dropped, the bounded queue holds none of its tensors."""
    monkeypatch.setattr(_ondemand, "_RECENT", type(_ondemand._RECENT)())
    _episodes(tmp_path / "td", 2, 3)
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    kept = lazy["ep1", "x2"]
    assert sum(1 for _ in lazy.values(True, True)) == 6
    assert _ondemand.held_mappings() == 6
    del lazy
    assert _ondemand.held_mappings() == 0
    assert kept.tolist() == [5.0, 5.0]


def test_values_and_items_of_a_lazy_tree_match_eager_in_key_order(tmp_path):
    """values() and items() of a lazy tree give the eager values in the order of keys(),
    each level's entries read a chunk at a time (one read per level, not one per entry)."""
    _episodes(tmp_path / "td", 3, 4)
    os.unlink(tmp_path / "td" / "ep1" / "x2.memmap")  # dropped, as by the eager load
    eager = TensorDict.load_memmap(tmp_path / "td")
    lazy = TensorDict.load_memmap(tmp_path / "td", lazy=True)
    reads = []
    for i in range(3):
        level = lazy.get(f"ep{i}")._tensordict
        read = level.read
        level.read = lambda *a, _read=read, **k: reads.append(a[0]) or _read(*a, **k)
    pairs = list(lazy.items(True, True))
    assert [key for key, _ in pairs] == list(eager.keys(True, True))
    assert all(torch.equal(value, eager[key]) for key, value in pairs)
    assert len(reads) == 3
    values = list(lazy.values(True))
    assert len(values) == len(list(eager.keys(True))) == 14
    assert [type(v).__name__ for v in values] == [type(v).__name__ for v in eager.values(True)]
