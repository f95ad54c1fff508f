"""Behaviours found in review: each test names the rule it guards."""

from __future__ import annotations

import json
import os

import pytest
import torch

from tensordict import MemoryMappedTensor, TensorDict, lazy_stack


def test_legacy_unencoded_file_names_still_load(tmp_path):
    """A folder whose files use the raw key (written with robust_key=False) loads every entry."""
    TensorDict({"a b": torch.zeros(2), "c": torch.ones(2)}, [2]).memmap(
        tmp_path / "f", robust_key=False
    )
    assert (tmp_path / "f" / "a b.memmap").exists()
    assert sorted(TensorDict.load_memmap(tmp_path / "f").keys()) == ["a b", "c"]


def test_refresh_follows_a_new_batch_size(tmp_path):
    """After the folder is rewritten with another batch size, a refreshed reader is consistent."""
    TensorDict({"a": torch.zeros(2, 3)}, [2]).memmap(tmp_path / "f")
    reader = TensorDict.load_memmap(tmp_path / "f")
    TensorDict({"a": torch.ones(4, 3)}, [4]).memmap(tmp_path / "f")
    reader.memmap_refresh_()
    assert reader.batch_size == torch.Size([4]) and torch.equal(reader["a"], torch.ones(4, 3))


def test_a_file_less_storage_over_a_stale_record_does_not_bring_the_old_entry_back(tmp_path):
    """SEED: load_memmap() and memmap_refresh_() drop a file-less entry, even where a record of the key lingered."""
    TensorDict({"a": torch.arange(3.0)}, [3]).memmap(tmp_path / "f")
    reader = TensorDict.load_memmap(tmp_path / "f")
    del reader["a"]
    with pytest.warns(FutureWarning):
        reader.make_memmap_from_storage("a", torch.UntypedStorage(12), (3,)).fill_(7)
    assert "a" not in json.loads((tmp_path / "f" / "meta.json").read_text())
    assert "a" not in TensorDict.load_memmap(tmp_path / "f").keys()
    assert "a" not in reader.memmap_refresh_().keys()


def test_a_storage_reached_through_a_symlinked_folder_is_the_entrys_file(tmp_path):
    """SPEC: the storage's file matches when both resolve to the same file."""
    td = TensorDict({}, [3]).memmap(tmp_path / "f")
    os.symlink(tmp_path / "f", tmp_path / "link")
    storage = MemoryMappedTensor.zeros(3, filename=tmp_path / "link" / "y.memmap").untyped_storage()
    td.make_memmap_from_storage("y", storage, (3,))
    assert "y" in TensorDict.load_memmap(tmp_path / "f").keys()


def test_a_refused_row_assignment_writes_nothing_and_names_the_key(tmp_path):
    """Index assignment checks every leaf before writing: a bad one leaves the others untouched."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.zeros(3, 2)}, [3]).memmap(tmp_path / "f")
    with pytest.raises(RuntimeError, match="'b'"):
        td[0] = TensorDict({"a": torch.ones(2), "b": torch.ones(5)}, [])
    assert (td["a"] == 0).all()


def test_set_in_place_broadcasts_a_number():
    """set_ with a number fills the existing tensor, like the reference's update_."""
    td = TensorDict({"a": torch.ones(2, 3, 4)}, [2, 3])
    td.update_({"a": 0})
    assert (td["a"] == 0).all()


def test_views_of_a_memory_mapped_tensordict_stay_mapped_and_locked(tmp_path):
    """buf[3] shares the files and the lock: writes through it are refused rather than lost."""
    buf = TensorDict({"obs": torch.zeros(10, 3)}, [10]).memmap(tmp_path / "f")
    row = buf[3]
    assert row.is_memmap() and row.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        row["obs"] = torch.ones(3)


def test_torch_stack_into_a_lazy_stack_writes_its_members():
    """torch.stack(..., out=lazy) writes into the lazy stack's members."""
    a = TensorDict({"x": torch.ones(3)}, [3])
    out = lazy_stack([a.clone() * 0, a.clone() * 0])
    torch.stack([a, a], 0, out=out)
    assert (out.tensordicts[1]["x"] == 1).all()


def test_apply_returning_none_everywhere_returns_none():
    """apply(fn) where fn returns None for every leaf returns None, as the reference."""
    assert TensorDict({"a": torch.zeros(2)}, [2]).apply(lambda x: None) is None


def test_from_dict_infers_the_batch_size_only_when_asked():
    """from_dict gives [] by default, the inferred batch size with auto_batch_size or batch_dims."""
    d = {"a": torch.zeros(3, 4)}
    assert TensorDict.from_dict(d).batch_size == torch.Size([])
    assert TensorDict.from_dict(d, auto_batch_size=True).batch_size == torch.Size([3, 4])
    assert TensorDict.from_dict(d, batch_dims=1).batch_size == torch.Size([3])
