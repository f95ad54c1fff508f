"""make_memmap_from_storage: one test per sentence of SEED.txt, then SPEC.md's decided details."""

from __future__ import annotations

import json
import os
import sys
import warnings

import pytest
import torch

from tensordict import MemoryMappedTensor, TensorDict, lazy_stack, tensorclass


def _file_storage(path, nbytes: int) -> torch.UntypedStorage:
    """A storage backed by the file at ``path`` (created with ``nbytes`` zero bytes)."""
    return torch.UntypedStorage.from_file(str(path), shared=True, nbytes=nbytes)


@pytest.fixture
def td(tmp_path):
    return TensorDict({"a": torch.zeros(3, 2)}, batch_size=[3]).memmap(tmp_path / "td")


def _meta(folder) -> dict:
    return json.loads((folder / "meta.json").read_text())


# ---------------------------------------------------------------------------- SEED.txt
def test_adds_a_memory_mapped_tensor_at_key_that_reads_its_data_from_storage_and_returns_it(
    td, tmp_path
):
    """The returned tensor is a MemoryMappedTensor stored at key, reading the storage's bytes."""
    storage = _file_storage(tmp_path / "td" / "x.memmap", 3 * 4 * 4)
    out = td.make_memmap_from_storage("x", storage, (3, 4))
    assert isinstance(out, MemoryMappedTensor)
    assert out.shape == (3, 4) and out.dtype == torch.float32
    assert td.get("x") is out
    assert out.untyped_storage().data_ptr() == storage.data_ptr()
    view = torch.empty(0, dtype=torch.float32).set_(storage, 0, (12,))
    view.fill_(7.0)
    assert (td["x"] == 7.0).all()


def test_the_tensordict_must_be_memory_mapped():
    """A tensordict that is not memory-mapped raises RuntimeError saying what to do."""
    td = TensorDict({"a": torch.zeros(3)}, [3])
    with pytest.raises(RuntimeError, match="memory-mapped"):
        td.make_memmap_from_storage("x", torch.UntypedStorage(12), (3,))
    assert "x" not in td.keys()


def test_the_entry_is_written_even_though_a_memory_mapped_tensordict_is_locked(td, tmp_path):
    """memmap() locks; the call still adds the entry and the tensordict stays locked."""
    assert td.is_locked
    storage = _file_storage(tmp_path / "td" / "x.memmap", 12)
    td.make_memmap_from_storage("x", storage, (3,))
    assert "x" in td.keys()
    assert td.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        td["y"] = torch.zeros(3)


def test_other_tensordicts_that_share_its_files_see_it_only_after_memmap_refresh_(td, tmp_path):
    """A second tensordict over the same folder sees the new entry after memmap_refresh_(), not before."""
    other = TensorDict.load_memmap(tmp_path / "td")
    storage = _file_storage(tmp_path / "td" / "x.memmap", 12)
    td.make_memmap_from_storage("x", storage, (3,))
    assert "x" not in other.keys()
    other.memmap_refresh_()
    assert "x" in other.keys()
    td["x"][1] = 5.0
    assert other["x"][1] == 5.0


def test_a_storage_with_the_file_of_the_new_entry_is_recorded_and_loads(td, tmp_path):
    """The storage's file is the entry's file: the entry is in meta.json and load_memmap() returns it."""
    storage = _file_storage(tmp_path / "td" / "x.memmap", 24)
    td.make_memmap_from_storage("x", storage, (3, 2), dtype=torch.float32)
    td["x"].copy_(torch.arange(6.0).reshape(3, 2))
    assert _meta(tmp_path / "td")["x"] == {
        "device": "cpu",
        "shape": [3, 2],
        "dtype": "torch.float32",
        "is_nested": False,
    }
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert torch.equal(loaded["x"], torch.arange(6.0).reshape(3, 2))


def test_a_storage_whose_file_is_elsewhere_raises_runtime_error(td, tmp_path):
    """A storage whose file is not the new entry's file raises RuntimeError and changes nothing."""
    before = (tmp_path / "td" / "meta.json").read_bytes()
    storage = _file_storage(tmp_path / "elsewhere.memmap", 12)
    with pytest.raises(RuntimeError, match="not the file of the new entry"):
        td.make_memmap_from_storage("x", storage, (3,))
    assert "x" not in td.keys()
    assert (tmp_path / "td" / "meta.json").read_bytes() == before


def test_a_storage_with_another_entrys_file_raises_runtime_error(td, tmp_path):
    """The file of an existing entry is not the file of the new entry."""
    storage = _file_storage(tmp_path / "td" / "a.memmap", 24)
    with pytest.raises(RuntimeError, match="not the file of the new entry"):
        td.make_memmap_from_storage("b", storage, (3, 2))
    assert "b" not in td.keys()


def test_a_storage_with_a_file_on_a_tensordict_without_directory_raises(tmp_path):
    """Without a directory no file can be the entry's file: RuntimeError."""
    td = TensorDict({"a": torch.zeros(3)}, [3]).memmap()
    storage = _file_storage(tmp_path / "x.memmap", 12)
    with pytest.raises(RuntimeError, match="no directory"):
        td.make_memmap_from_storage("x", storage, (3,))


def test_a_storage_without_a_file_is_used_as_it_is_and_not_written_to_the_directory(td, tmp_path):
    """A file-less storage backs the entry directly; no file or meta.json record appears."""
    files_before = sorted(os.listdir(tmp_path / "td"))
    meta_before = (tmp_path / "td" / "meta.json").read_bytes()
    storage = torch.UntypedStorage(12)
    with pytest.warns(FutureWarning):
        out = td.make_memmap_from_storage("x", storage, (3,))
    assert out.untyped_storage().data_ptr() == storage.data_ptr()
    assert sorted(os.listdir(tmp_path / "td")) == files_before
    assert (tmp_path / "td" / "meta.json").read_bytes() == meta_before


def test_a_storage_without_a_file_in_a_directory_is_dropped_by_load_and_refresh_with_a_future_warning(
    td, tmp_path
):
    """Non-empty file-less storage with a directory: FutureWarning naming 0.17; load and refresh drop the entry."""
    with pytest.warns(FutureWarning, match=r"0\.17") as record:
        td.make_memmap_from_storage("x", torch.UntypedStorage(12), (3,))
    message = str(record[0].message)
    assert "RuntimeError" in message
    assert record[0].filename == __file__
    assert "x" not in TensorDict.load_memmap(tmp_path / "td").keys()
    td.memmap_refresh_()
    assert "x" not in td.keys()
    assert "a" in td.keys()


def test_the_warning_points_to_make_memmap_from_tensor_which_copies_into_the_directory(
    td, tmp_path
):
    """The warning names make_memmap_from_tensor(), and that method's entry loads back."""
    with pytest.warns(FutureWarning, match="make_memmap_from_tensor"):
        td.make_memmap_from_storage("x", torch.UntypedStorage(12), (3,))
    td.make_memmap_from_tensor("y", torch.arange(3.0))
    assert torch.equal(TensorDict.load_memmap(tmp_path / "td")["y"], torch.arange(3.0))


def test_a_storage_without_a_file_without_directory_gives_no_warning():
    """In shared memory (no directory) a file-less storage is the normal case: no warning."""
    td = TensorDict({}, [3]).memmap()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = td.make_memmap_from_storage("x", torch.UntypedStorage(12), (3,))
    assert td.get("x") is out


def test_an_empty_storage_without_a_file_gives_no_warning_and_loads(td, tmp_path):
    """An empty storage loses nothing: no warning, and the zero-size entry loads back."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        td.make_memmap_from_storage("e", torch.UntypedStorage(0), (3, 0))
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["e"].shape == (3, 0)


# ---------------------------------------------------------------------------- parameters
def test_a_tuple_key_creates_the_missing_nested_tensordicts_on_disk_too(td, tmp_path):
    """("n", "m", "x") creates n and n/m (locked like the parent), with their folders and meta.json."""
    folder = tmp_path / "td" / "n" / "m"
    folder.mkdir(parents=True)
    storage = _file_storage(folder / "x.memmap", 12)
    td.make_memmap_from_storage(("n", "m", "x"), storage, (3,))
    assert td["n"].is_locked and td["n", "m"].is_locked
    assert td["n", "m"].saved_path == str(folder)
    assert _meta(tmp_path / "td")["n"] == {"type": "TensorDict"}
    assert _meta(tmp_path / "td" / "n")["m"] == {"type": "TensorDict"}
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["n", "m", "x"].shape == (3,)


def test_a_tuple_key_with_a_file_less_storage_still_creates_nested_tensordicts_on_disk(
    td, tmp_path
):
    """The sub-tensordicts of a tuple key exist on disk even when the entry itself is not recorded."""
    with pytest.warns(FutureWarning):
        td.make_memmap_from_storage(("n", "x"), torch.UntypedStorage(12), (3,))
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert "n" in loaded.keys() and ("n", "x") not in loaded.keys(True)


def test_the_storage_must_be_in_physical_memory(td):
    """A storage on the meta device gets ValueError saying it must be in physical memory."""
    storage = torch.empty(3, device="meta").untyped_storage()
    with pytest.raises(ValueError, match="physical memory"):
        td.make_memmap_from_storage("x", storage, (3,))


def test_a_typed_storage_is_unwrapped(td, tmp_path):
    """A TypedStorage is accepted and its untyped storage used."""
    typed = torch.zeros(3).storage()
    with pytest.warns(FutureWarning):
        out = td.make_memmap_from_storage("x", typed, (3,))
    assert out.untyped_storage().data_ptr() == typed._untyped_storage.data_ptr()


def test_a_list_instead_of_a_storage_gets_type_error(td):
    """A list is not a storage: TypeError naming what was given."""
    with pytest.raises(TypeError, match="UntypedStorage.*list"):
        td.make_memmap_from_storage("x", [0.0, 1.0, 2.0], (3,))


def test_a_storage_of_the_wrong_size_gets_value_error_naming_both_sizes(td):
    """12 bytes cannot hold shape (3, 2) float32 (24 bytes)."""
    with pytest.raises(ValueError, match="12 bytes.*need 24"):
        td.make_memmap_from_storage("x", torch.UntypedStorage(12), (3, 2))
    assert "x" not in td.keys()


def test_shape_as_a_tensor_makes_a_nested_tensor(td, tmp_path):
    """A 2-D shape tensor makes a nested tensor; with the entry's file it is recorded and loads."""
    shapes = torch.tensor([[3, 2], [3, 1]])
    storage = _file_storage(tmp_path / "td" / "nt.memmap", (6 + 3) * 4)
    out = td.make_memmap_from_storage("nt", storage, shapes)
    assert out.is_nested
    assert [c.shape for c in out.unbind()] == [torch.Size([3, 2]), torch.Size([3, 1])]
    record = _meta(tmp_path / "td")["nt"]
    assert record["is_nested"] is True and record["shape"] == [2, 2]
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert [c.shape for c in loaded["nt"].unbind()] == [torch.Size([3, 2]), torch.Size([3, 1])]


def test_dtype_defaults_to_torch_get_default_dtype(td, tmp_path):
    """Without dtype the default dtype is used, following torch.set_default_dtype."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with pytest.warns(FutureWarning):
            out = td.make_memmap_from_storage("x", torch.UntypedStorage(24), (3,))
    finally:
        torch.set_default_dtype(previous)
    assert out.dtype == torch.float64


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("a/b", "a%2Fb"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("", "%"),
        ("sp ace", "sp%20ace"),
        ("per%cent", "per%25cent"),
    ],
)
@pytest.mark.parametrize("robust_key", [True, None])
def test_robust_key_percent_encodes_the_file_name(td, tmp_path, key, name, robust_key):
    """robust_key True (and None) keep every file inside the directory, with %XX names."""
    storage = _file_storage(tmp_path / "td" / f"{name}.memmap", 12)
    td.make_memmap_from_storage(key, storage, (3,), robust_key=robust_key)
    assert _meta(tmp_path / "td")[key]["shape"] == [3]
    assert torch.equal(TensorDict.load_memmap(tmp_path / "td")[key], torch.zeros(3))


def test_robust_key_false_uses_the_key_as_the_file_name(td, tmp_path):
    """robust_key=False names the file after the key unchanged."""
    storage = _file_storage(tmp_path / "td" / "sp ace.memmap", 12)
    td.make_memmap_from_storage("sp ace", storage, (3,), robust_key=False)
    assert "sp ace" in td.keys()


@pytest.mark.parametrize("key", ["a/b", "..", ".", ""])
def test_robust_key_false_refuses_keys_that_are_not_file_names(td, tmp_path, key):
    """With robust_key=False a key that would leave the directory is refused with ValueError."""
    with pytest.raises(ValueError, match="not a valid file name"):
        td.make_memmap_from_storage(
            key, _file_storage(tmp_path / "s.memmap", 12), (3,), robust_key=False
        )
    assert key not in td.keys()


def test_an_existing_key_raises_runtime_error(td, tmp_path):
    """Adding a key that exists raises RuntimeError naming it."""
    with pytest.raises(RuntimeError, match="'a'.*already exists"):
        td.make_memmap_from_storage("a", torch.UntypedStorage(24), (3, 2))


def test_a_key_of_the_wrong_type_gets_type_error(td):
    """Keys are strings or tuples of strings."""
    with pytest.raises(TypeError, match="string"):
        td.make_memmap_from_storage(3, torch.UntypedStorage(12), (3,))


def test_a_tuple_key_through_a_tensor_gets_runtime_error(td):
    """("a", "x") cannot go through the tensor "a"."""
    with pytest.raises(RuntimeError, match="not a tensordict"):
        td.make_memmap_from_storage(("a", "x"), torch.UntypedStorage(12), (3,))


def test_the_returned_tensor_shares_its_storage_with_the_stored_one(td):
    """td.get(key) is the returned tensor: no copy."""
    storage = torch.UntypedStorage(12)
    with pytest.warns(FutureWarning):
        out = td.make_memmap_from_storage("x", storage, (3,))
    out[0] = 4.0
    assert td.get("x")[0] == 4.0
    assert td.get("x").untyped_storage().data_ptr() == storage.data_ptr()


def test_a_loaded_tensordict_accepts_the_call_at_once(td, tmp_path):
    """load_memmap() returns a memory-mapped tensordict: no memmap_() needed first."""
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded.is_memmap() and not loaded.is_locked
    storage = _file_storage(tmp_path / "td" / "x.memmap", 12)
    loaded.make_memmap_from_storage("x", storage, (3,))
    assert "x" in TensorDict.load_memmap(tmp_path / "td").keys()


def test_many_calls_keep_every_record(td, tmp_path):
    """Successive calls each add their record: none is lost."""
    for i in range(50):
        storage = _file_storage(tmp_path / "td" / f"k{i}.memmap", 12)
        td.make_memmap_from_storage(f"k{i}", storage, (3,))
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert {f"k{i}" for i in range(50)} <= set(loaded.keys())


@tensorclass
class _Record:
    obs: torch.Tensor
    extra: torch.Tensor = None


@pytest.mark.parametrize("kind", ["tensordict", "lazy stack", "tensorclass"])
def test_the_future_warning_points_at_the_callers_line_through_every_class(tmp_path, kind):
    """The FutureWarning names the user's file and line, however the call is forwarded."""
    if kind == "tensordict":
        obj = TensorDict({}, [3]).memmap(tmp_path / "d")
        shape = (3,)
    elif kind == "lazy stack":
        obj = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap(tmp_path / "d")
        shape = (2,)
    else:
        obj = _Record(obs=torch.zeros(3), batch_size=[3]).memmap(tmp_path / "d")
        shape = (3,)
    storage = torch.UntypedStorage(shape[0] * 4)
    with pytest.warns(FutureWarning) as record:
        line = sys._getframe().f_lineno + 1
        obj.make_memmap_from_storage("extra", storage, shape)
    assert (record[0].filename, record[0].lineno) == (__file__, line)


@pytest.mark.parametrize("kind", ["tensordict", "lazy stack"])
def test_a_dtype_that_is_not_a_torch_dtype_gets_the_same_type_error_on_every_class(tmp_path, kind):
    """dtype="float32" is refused with the same TypeError by a TensorDict and a lazy stack."""
    if kind == "tensordict":
        obj = TensorDict({}, [2]).memmap(tmp_path / "d")
    else:
        obj = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap(tmp_path / "d")
    with pytest.raises(TypeError, match=r"dtype must be a torch\.dtype, got 'float32'"):
        obj.make_memmap_from_storage("x", torch.UntypedStorage(8), (2,), dtype="float32")
    assert "x" not in obj.keys()


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


def test_a_storage_whose_file_was_renamed_into_the_folder_is_its_entry_file(tmp_path):
    """The storage of a leaf written by memmap(prefix) (staged, then renamed into place) is
    accepted as the file of its entry: the file is compared where it is now, not by the name
    torch kept from the staging folder."""
    base = TensorDict({"a": torch.zeros(3, 4), "b": torch.ones(2)}, []).memmap(tmp_path / "d")
    storage = base["a"].untyped_storage()
    td = TensorDict.load_memmap(tmp_path / "d")
    td.del_("a")
    out = td.make_memmap_from_storage("a", storage, shape=[3, 4], dtype=torch.float32)
    assert out.filename == str(tmp_path / "d" / "a.memmap")
    out.fill_(7.0)
    assert (TensorDict.load_memmap(tmp_path / "d")["a"] == 7).all()


def test_a_storage_whose_file_was_replaced_names_the_deleted_file(tmp_path):
    """memmap_ of another tensordict over the folder replaces the tree: the old storage's file is
    gone, and make_memmap_from_storage raises RuntimeError naming it as deleted."""
    base = TensorDict({"a": torch.zeros(3, 4)}, []).memmap_(tmp_path / "d")
    td = TensorDict({}, []).memmap_(tmp_path / "d")
    with pytest.raises(RuntimeError, match=r"\(deleted\).*not the file of the new entry"):
        td.make_memmap_from_storage("a", base["a"].untyped_storage(), shape=[3, 4])
    assert "a" not in td.keys()
