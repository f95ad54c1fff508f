"""Corrupt memory-mapped folders: each gives a clear error naming the path, and nothing is changed."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import NonTensorData, TensorDict, lazy_stack
from tensordict.cli import main

from conftest import FIXTURES


def _write(folder: Path) -> Path:
    """A small valid folder: a (3, 2) float tensor "a" and a sub-tensordict "sub" with int64 "b"."""
    TensorDict({"a": torch.arange(6.0).reshape(3, 2), "sub": {"b": torch.arange(3)}}, [3]).memmap(
        folder
    )
    return folder


def _meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def _set_meta(folder: Path, meta) -> None:
    (folder / "meta.json").write_text(json.dumps(meta))


def _snapshot(folder: Path) -> dict:
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): "dir" if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


# ------------------------------------------------------------------ file sizes
@pytest.mark.parametrize("size", [0, 12, 23, 25, 48])
def test_a_memmap_file_of_the_wrong_size_is_refused_naming_it_and_both_sizes(tmp_path, size):
    """a.memmap must hold 24 bytes: any other size raises ValueError naming the file and both sizes; it is left as it was."""
    folder = _write(tmp_path / "td")
    os.truncate(folder / "a.memmap", size)
    with pytest.raises(ValueError, match=r"a\.memmap") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "a.memmap") in str(info.value)
    assert str(size) in str(info.value) and "24" in str(info.value)
    assert (folder / "a.memmap").stat().st_size == size


def test_a_truncated_file_in_a_sub_folder_is_refused(tmp_path):
    """The size check applies at every level: sub/b.memmap cut to 8 of 24 bytes is named."""
    folder = _write(tmp_path / "td")
    os.truncate(folder / "sub" / "b.memmap", 8)
    with pytest.raises(ValueError, match=r"sub/b\.memmap"):
        TensorDict.load_memmap(folder)
    assert (folder / "sub" / "b.memmap").stat().st_size == 8


def test_a_truncated_file_is_refused_by_memmap_refresh_too(tmp_path):
    """A writer's entry whose file was cut is refused by a reader's refresh, not read as zeros."""
    folder = _write(tmp_path / "td")
    reader = TensorDict.load_memmap(folder)
    TensorDict.load_memmap(folder).make_memmap("x", (3, 4))
    os.truncate(folder / "x.memmap", 4)
    with pytest.raises(ValueError, match=r"x\.memmap"):
        reader.memmap_refresh_()
    assert (folder / "x.memmap").stat().st_size == 4


def test_a_memmap_path_that_is_a_folder_is_refused(tmp_path):
    """a.memmap replaced by a directory: ValueError naming it, not a crash."""
    folder = _write(tmp_path / "td")
    (folder / "a.memmap").unlink()
    (folder / "a.memmap").mkdir()
    with pytest.raises(ValueError, match=r"a\.memmap"):
        TensorDict.load_memmap(folder)


# ------------------------------------------------------------------ meta.json
def test_a_missing_meta_json_raises_file_not_found_naming_it(tmp_path):
    """A folder without meta.json: FileNotFoundError naming the meta.json path."""
    folder = _write(tmp_path / "td")
    (folder / "meta.json").unlink()
    with pytest.raises(FileNotFoundError, match="meta.json") as info:
        TensorDict.load_memmap(folder)
    assert str(folder) in str(info.value)


def test_a_missing_folder_raises_file_not_found_naming_it(tmp_path):
    """A folder that does not exist: FileNotFoundError naming it."""
    with pytest.raises(FileNotFoundError, match="nowhere"):
        TensorDict.load_memmap(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    "text", ["{not json", "", '{"a": ', "\xff\xfe"], ids=["broken", "empty", "cut", "binary"]
)
def test_meta_json_that_is_not_valid_json_is_refused_naming_it(tmp_path, text):
    """Invalid JSON: ValueError naming meta.json's path and saying it is not valid JSON."""
    folder = _write(tmp_path / "td")
    (folder / "meta.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match="JSON") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value)


@pytest.mark.parametrize("value", [[1, 2], "text", 3, None], ids=["list", "string", "int", "null"])
def test_meta_json_that_is_not_an_object_is_refused(tmp_path, value):
    """A JSON list (or any non-object): ValueError naming meta.json."""
    folder = _write(tmp_path / "td")
    _set_meta(folder, value)
    with pytest.raises(ValueError, match="meta.json") as info:
        TensorDict.load_memmap(folder)
    assert str(folder) in str(info.value)


def test_a_broken_meta_json_in_a_sub_folder_is_refused_naming_it(tmp_path):
    """sub/meta.json that is not JSON raises, naming sub/meta.json."""
    folder = _write(tmp_path / "td")
    (folder / "sub" / "meta.json").write_text("[")
    with pytest.raises(ValueError, match=r"sub/meta\.json"):
        TensorDict.load_memmap(folder)


def test_an_entry_record_that_is_not_an_object_is_refused(tmp_path):
    """A record "b": 3 raises ValueError naming meta.json and the key."""
    folder = _write(tmp_path / "td")
    _set_meta(folder, {**_meta(folder), "b": 3})
    with pytest.raises(ValueError, match="'b'") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value)


@pytest.mark.parametrize("dtype", ["torch.float99", "float32", 7, None, "torch.qint8"])
def test_an_unknown_dtype_is_refused_naming_the_path_and_the_dtype(tmp_path, dtype):
    """An unknown dtype: ValueError naming meta.json, the entry and the word dtype."""
    folder = _write(tmp_path / "td")
    meta = _meta(folder)
    meta["a"]["dtype"] = dtype
    _set_meta(folder, meta)
    with pytest.raises(ValueError, match="dtype") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value) and "'a'" in str(info.value)


@pytest.mark.parametrize("shape", [[-3, 2], [3, -2], "3", 3, None, [3.0, 2], {"0": 3}], ids=repr)
def test_an_invalid_entry_shape_is_refused_naming_the_path(tmp_path, shape):
    """A negative shape or one that is not a list of ints: ValueError naming meta.json and the entry."""
    folder = _write(tmp_path / "td")
    meta = _meta(folder)
    meta["a"]["shape"] = shape
    _set_meta(folder, meta)
    with pytest.raises(ValueError, match="shape") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value) and "'a'" in str(info.value)


@pytest.mark.parametrize("shape", [[-1], "3", 3, [3.5]], ids=repr)
def test_an_invalid_batch_size_is_refused_naming_the_path(tmp_path, shape):
    """The level's own "shape" (batch size) that is negative or not a list of ints: ValueError naming meta.json."""
    folder = _write(tmp_path / "td")
    _set_meta(folder, {**_meta(folder), "shape": shape})
    with pytest.raises(ValueError, match="shape") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value)


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_an_unsupported_format_version_is_refused(tmp_path, version):
    """_format_version other than 1: ValueError naming meta.json and _format_version."""
    folder = _write(tmp_path / "td")
    _set_meta(folder, {**_meta(folder), "_format_version": version})
    with pytest.raises(ValueError, match="_format_version") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value)


def test_an_unknown_class_is_refused_naming_the_folder(tmp_path):
    """A _type/_class that names no known class: ValueError naming the folder; nothing is imported."""
    folder = _write(tmp_path / "td")
    _set_meta(folder, {**_meta(folder), "_type": "<class 'os.system'>", "_class": "os:system"})
    with pytest.raises(ValueError, match="class") as info:
        TensorDict.load_memmap(folder)
    assert str(folder) in str(info.value)


def test_a_nested_tensor_without_its_shape_file_is_refused(fixture_copy):
    """nt.shape.memmap missing: ValueError naming it (the sizes cannot be guessed)."""
    folder = fixture_copy("nested_tensor")
    (folder / "nt.shape.memmap").unlink()
    with pytest.raises(ValueError, match=r"nt\.shape\.memmap"):
        TensorDict.load_memmap(folder)


# ------------------------------------------------------------------ names that leave the folder
@pytest.mark.parametrize("key", ["../x", "..", "a/../../x", "/etc"])
@pytest.mark.parametrize("record", [{"type": "TensorDict"}, "tensor"])
def test_a_key_that_would_leave_the_folder_with_robust_key_false_is_refused(tmp_path, key, record):
    """With robust_key=False, a key such as "../x" raises ValueError naming the key and the folder."""
    folder = _write(tmp_path / "td")
    outside = tmp_path / "x"
    _write(outside)
    if record == "tensor":
        record = {"device": "cpu", "shape": [3, 2], "dtype": "torch.float32", "is_nested": False}
    _set_meta(folder, {**_meta(folder), key: record})
    with pytest.raises(ValueError, match="folder|file name") as info:
        TensorDict.load_memmap(folder, robust_key=False)
    assert repr(key) in str(info.value)
    assert str(folder) in str(info.value)


def test_a_key_that_would_leave_the_folder_is_encoded_with_robust_key(tmp_path):
    """With robust_key (the default) "../x" names "..%2Fx" inside the folder; the outside folder is never read."""
    folder = _write(tmp_path / "td")
    _write(tmp_path / "x")
    _set_meta(folder, {**_meta(folder), "../x": {"type": "TensorDict"}})
    td = TensorDict.load_memmap(folder)
    assert "../x" not in td.keys()  # its folder "..%2Fx" does not exist: dropped


# ------------------------------------------------------------------ symbolic links
def test_a_symlinked_memmap_file_is_refused(tmp_path):
    """a.memmap as a symlink to a file of the right size: ValueError naming it and 'symbolic link'."""
    folder = _write(tmp_path / "td")
    target = tmp_path / "elsewhere.bin"
    target.write_bytes(b"\x00" * 24)
    (folder / "a.memmap").unlink()
    (folder / "a.memmap").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "a.memmap") in str(info.value)


def test_a_symlinked_sub_folder_is_refused(tmp_path):
    """sub/ as a symlink to a valid folder elsewhere: ValueError naming it."""
    folder = _write(tmp_path / "td")
    real = tmp_path / "real-sub"
    (folder / "sub").rename(real)
    (folder / "sub").symlink_to(real, target_is_directory=True)
    with pytest.raises(ValueError, match="symbolic link") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "sub") in str(info.value)


def test_a_symlinked_meta_json_is_refused(tmp_path):
    """meta.json as a symlink: ValueError naming it."""
    folder = _write(tmp_path / "td")
    real = tmp_path / "meta-copy.json"
    real.write_bytes((folder / "meta.json").read_bytes())
    (folder / "meta.json").unlink()
    (folder / "meta.json").symlink_to(real)
    with pytest.raises(ValueError, match="symbolic link") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "meta.json") in str(info.value)


def test_a_symlinked_top_folder_is_refused(tmp_path):
    """The folder itself given as a symlink: ValueError naming it."""
    folder = _write(tmp_path / "td")
    link = tmp_path / "link"
    link.symlink_to(folder, target_is_directory=True)
    with pytest.raises(ValueError, match="symbolic link"):
        TensorDict.load_memmap(link)


# ------------------------------------------------------------------ pickles
def test_a_pickled_non_tensor_value_loads_only_with_allow_pickle(tmp_path):
    """other.pickle is not unpickled by default (error naming it and allow_pickle); with allow_pickle=True the value is back."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.zeros(3)}, [3])
    td["s"] = NonTensorData({1, 2})
    td.memmap(folder)
    assert (folder / "s" / "other.pickle").is_file()
    with pytest.raises(ValueError, match="allow_pickle") as info:
        TensorDict.load_memmap(folder)
    assert str(folder / "s" / "other.pickle") in str(info.value)
    loaded = TensorDict.load_memmap(folder, allow_pickle=True)
    assert loaded["s"] == {1, 2}


def test_a_pickled_value_is_stored_as_the_reference_stores_it(tmp_path):
    """other.pickle holds {"data": value}, as the reference writes it, and the meta.json has no data."""
    folder = tmp_path / "td"
    TensorDict({"s": NonTensorData({1, 2})}, []).memmap(folder)
    with open(folder / "s" / "other.pickle", "rb") as handle:
        assert pickle.load(handle) == {"data": {1, 2}}
    assert "data" not in _meta(folder / "s")


def test_a_value_pickled_by_the_reference_loads_with_allow_pickle(fixture_copy):
    """The reference's pickled non-tensor value loads back (only) with allow_pickle=True."""
    folder = fixture_copy("reference-0.15.3-pickled", FIXTURES)
    with pytest.raises(ValueError, match="allow_pickle"):
        TensorDict.load_memmap(folder)
    loaded = TensorDict.load_memmap(folder, allow_pickle=True)
    assert loaded["value"] == {1, 2, 3}
    assert loaded["a"].tolist() == [0.0, 1.0]


def test_a_pickle_that_is_not_the_reference_layout_is_refused_naming_it(tmp_path):
    """An other.pickle that does not hold {"data": ...} is a clear error naming the file."""
    folder = tmp_path / "td"
    TensorDict({"s": NonTensorData({1, 2})}, []).memmap(folder)
    with open(folder / "s" / "other.pickle", "wb") as handle:
        pickle.dump([1, 2], handle)
    with pytest.raises(
        ValueError, match=r"other\.pickle' must hold a pickled dict with a 'data' item"
    ):
        TensorDict.load_memmap(folder, allow_pickle=True)


def test_a_planted_pickle_is_not_executed_without_allow_pickle(tmp_path):
    """A non-tensor folder whose pickle would run code: refused before unpickling; nothing runs."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.zeros(3)}, [3])
    td["s"] = NonTensorData({1})
    td.memmap(folder)
    marker = tmp_path / "ran"
    payload = (
        b"cbuiltins\nopen\n(V" + str(marker).encode() + b"\nVw\ntR."
    )  # open(marker, "w") when unpickled
    (folder / "s" / "other.pickle").write_bytes(payload)
    with pytest.raises(ValueError, match="allow_pickle"):
        TensorDict.load_memmap(folder)
    assert not marker.exists()


# ------------------------------------------------------------------ failed writes leave nothing
def test_a_failed_memmap_leaves_no_meta_json_and_no_files(tmp_path):
    """A refused key deep in the tree: memmap() raises and the folder holds nothing afterwards."""
    folder = tmp_path / "td"
    td = TensorDict(
        {"a": torch.ones(3), "sub": {"b": torch.ones(3), "deeper": {"shape": torch.ones(3)}}}, [3]
    )
    with pytest.raises(ValueError, match="shape"):
        td.memmap(folder)
    assert _snapshot(folder) == {}
    assert not td.is_locked and not td.is_memmap()


def test_a_failed_memmap_over_an_existing_folder_leaves_it_as_it_was(tmp_path):
    """The refused write over an earlier folder leaves its files and meta.json byte-identical; it still loads."""
    folder = _write(tmp_path / "td")
    before = _snapshot(folder)
    td = TensorDict(
        {"a": torch.zeros(3), "c": torch.zeros(3), "sub": {"device": torch.zeros(3)}}, [3]
    )
    with pytest.raises(ValueError, match="device"):
        td.memmap(folder)
    assert _snapshot(folder) == before
    assert torch.equal(TensorDict.load_memmap(folder)["sub", "b"], torch.arange(3))


def test_a_meta_device_tensor_fails_memmap_before_anything_is_written(tmp_path):
    """A leaf on the meta device has no data: ValueError naming it, nothing written."""
    folder = tmp_path / "td"
    td = TensorDict({"a": torch.ones(3), "m": torch.empty(3, device="meta")}, [3])
    with pytest.raises(ValueError, match="'m'"):
        td.memmap(folder)
    assert _snapshot(folder) == {}


def test_existsok_false_fails_before_anything_is_written(tmp_path):
    """existsok=False with one existing file raises FileExistsError naming it; no other file is written."""
    folder = tmp_path / "td"
    folder.mkdir()
    (folder / "b.memmap").write_bytes(b"old")
    td = TensorDict({"a": torch.ones(3), "b": torch.ones(3)}, [3])
    with pytest.raises(FileExistsError, match=r"b\.memmap"):
        td.memmap(folder, existsok=False)
    assert _snapshot(folder) == {"b.memmap": b"old"}


def _file_storage(path: Path, nbytes: int) -> torch.UntypedStorage:
    return torch.UntypedStorage.from_file(str(path), shared=True, nbytes=nbytes)


@pytest.mark.parametrize(
    "case",
    [
        "wrong size",
        "wrong file",
        "existing key",
        "level field",
        "through a tensor",
        "not a file name",
        "not a storage",
        "meta device",
    ],
)
def test_a_failed_make_memmap_from_storage_leaves_meta_json_byte_identical(tmp_path, case):
    """Every refused make_memmap_from_storage leaves meta.json (bytes and mtime) and the keys unchanged."""
    folder = _write(tmp_path / "td")
    td = TensorDict.load_memmap(folder)
    meta = folder / "meta.json"
    before = (meta.read_bytes(), meta.stat().st_mtime_ns)
    keys = set(td.keys(True))
    calls = {
        "wrong size": lambda: td.make_memmap_from_storage(
            "x", _file_storage(folder / "x.memmap", 8), (3,)
        ),
        "wrong file": lambda: td.make_memmap_from_storage(
            "x", _file_storage(tmp_path / "y.memmap", 12), (3,)
        ),
        "existing key": lambda: td.make_memmap_from_storage(
            "a", _file_storage(folder / "z.memmap", 24), (3, 2)
        ),
        "level field": lambda: td.make_memmap_from_storage(
            "shape", _file_storage(folder / "shape.memmap", 12), (3,)
        ),
        "through a tensor": lambda: td.make_memmap_from_storage(
            ("a", "x"), torch.UntypedStorage(12), (3,)
        ),
        "not a file name": lambda: td.make_memmap_from_storage(
            "../x", _file_storage(tmp_path / "x.memmap", 12), (3,), robust_key=False
        ),
        "not a storage": lambda: td.make_memmap_from_storage("x", torch.zeros(3), (3,)),
        "meta device": lambda: td.make_memmap_from_storage(
            "x", torch.empty(3, device="meta").untyped_storage(), (3,)
        ),
    }
    with pytest.raises((RuntimeError, ValueError, TypeError)):
        calls[case]()
    assert (meta.read_bytes(), meta.stat().st_mtime_ns) == before
    assert set(td.keys(True)) == keys
    assert set(TensorDict.load_memmap(folder).keys(True)) == keys


# ------------------------------------------------------------------ a strict reader
@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", ["load", "refresh"])
def test_a_fifo_in_place_of_meta_json_is_refused_without_blocking(tmp_path, how):
    """A FIFO named meta.json is refused at once (never opened for a blocking read)."""
    folder = _write(tmp_path / "td")
    reader = TensorDict.load_memmap(folder)
    (folder / "sub" / "meta.json").unlink()
    os.mkfifo(folder / "sub" / "meta.json")
    os.utime(folder / "meta.json", ns=(1, 1))  # the root changed, so a refresh re-reads it
    with pytest.raises(ValueError, match=r"sub/meta\.json.*not a regular file"):
        TensorDict.load_memmap(folder) if how == "load" else reader.memmap_refresh_()


def test_a_folder_in_place_of_meta_json_is_refused_naming_it(tmp_path):
    """A folder named meta.json gives an error naming it, not 'Is a directory: 3'."""
    (tmp_path / "td" / "meta.json").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"td/meta\.json': it is not a regular file"):
        TensorDict.load_memmap(tmp_path / "td")


def test_json_nested_too_deeply_is_refused_naming_the_file(tmp_path):
    """A 100,000-deep JSON value is a clear error naming meta.json, not a RecursionError."""
    folder = _write(tmp_path / "td")
    (folder / "meta.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match=r"meta\.json' nests its JSON values too deeply"):
        TensorDict.load_memmap(folder)


def _nest(depth: int) -> dict:
    inner = {"x": torch.zeros(1)}
    for _ in range(depth):
        inner = {"s": inner}
    return inner


def test_deep_folders_load_up_to_the_bound_and_are_refused_past_it(tmp_path):
    """64 (and up to 127) nested levels load; a deeper tree is refused before anything is written."""
    for depth in (64, 127):
        TensorDict(_nest(depth), [1]).memmap(tmp_path / str(depth))
        loaded = TensorDict.load_memmap(tmp_path / str(depth))
        assert loaded.get(("s",) * depth + ("x",)).shape == torch.Size([1])
    with pytest.raises(ValueError, match="more than 128 levels deep"):
        TensorDict(_nest(128), [1]).memmap(tmp_path / "deep")
    assert not (tmp_path / "deep").exists()


def test_a_hand_made_folder_of_2000_levels_is_refused_naming_the_level(tmp_path):
    """Loading a folder nested 2,000 levels deep stops at the bound with a clear error."""
    folder = tmp_path / "deep"
    level = folder
    for _ in range(2000):
        level.mkdir()
        meta = {"s": {"type": "TensorDict"}, "shape": [], "device": "cpu"}
        meta.update(_type="<class 'tensordict._td.TensorDict'>", _format_version=1)
        (level / "meta.json").write_text(json.dumps({**meta, "_class": "tensordict:TensorDict"}))
        level = level / "s"
    try:
        with pytest.raises(ValueError, match="more than 128 levels deep"):
            TensorDict.load_memmap(folder)
    finally:  # removed level by level: a recursive removal would overflow the stack
        while level != folder:
            level = level.parent
            (level / "meta.json").unlink()
            level.rmdir()


@pytest.mark.parametrize("shape", [[2**63], [2**40, 2**40]], ids=["dim", "product"])
def test_a_shape_whose_bytes_overflow_int64_is_refused_naming_the_path(tmp_path, shape):
    """A record shape that no file can hold is a clear error naming meta.json and the entry."""
    folder = _write(tmp_path / "td")
    meta = _meta(folder)
    meta["a"]["shape"] = shape
    _set_meta(folder, meta)
    with pytest.raises(ValueError, match=r"td/meta\.json', entry 'a'"):
        TensorDict.load_memmap(folder)


def test_an_entry_shape_that_does_not_start_with_the_batch_size_is_refused(tmp_path):
    """An entry of shape [2, 2] in a level of batch size [3] is refused, naming both."""
    folder = _write(tmp_path / "td")
    meta = _meta(folder)
    meta["a"]["shape"] = [2, 3]
    _set_meta(folder, meta)
    with pytest.raises(
        ValueError, match=r"entry 'a': its shape \[2, 3\] does not start with the batch size \[3\]"
    ):
        TensorDict.load_memmap(folder)


def test_a_lone_surrogate_key_in_meta_json_is_refused_naming_the_folder(tmp_path):
    """A key that is not valid Unicode gives an error naming meta.json and the key."""
    folder = _write(tmp_path / "td")
    text = (folder / "meta.json").read_text().replace('"a":', '"a\\ud800":', 1)
    (folder / "meta.json").write_text(text)
    with pytest.raises(ValueError, match=r"td/meta\.json.*lone surrogate"):
        TensorDict.load_memmap(folder)


@pytest.mark.parametrize("stack_dim", [5, -4], ids=["too-high", "too-low"])
def test_a_lazy_stack_dim_out_of_range_is_refused_naming_the_file(tmp_path, stack_dim):
    """A lazy stack whose stack_dim does not fit its members' batch size is refused."""
    lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 2).memmap(tmp_path / "s")
    meta = _meta(tmp_path / "s")
    meta["stack_dim"] = stack_dim
    _set_meta(tmp_path / "s", meta)
    with pytest.raises(ValueError, match=rf"s/meta\.json.*stack_dim {stack_dim} is out of range"):
        TensorDict.load_memmap(tmp_path / "s")


def test_lazy_members_of_different_batch_sizes_are_refused_naming_the_folder(tmp_path):
    """Members whose batch sizes differ make the lazy stack folder invalid, with a clear error."""
    lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 2).memmap(tmp_path / "s")
    TensorDict({"a": torch.zeros(3)}, [3]).memmap(tmp_path / "s" / "1")
    with pytest.raises(ValueError, match=r"members of different batch sizes: \[\(2,\), \(3,\)\]"):
        TensorDict.load_memmap(tmp_path / "s")


# ------------------------------------------------------------------ any meta.json field value
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = ["shape", "device", "_type", "_class", "_format_version"]
_RECORD_FIELDS = ["shape", "dtype", "is_nested", "device", "type"]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    level=st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=3),
    record=st.dictionaries(st.sampled_from(_RECORD_FIELDS), _JSON, max_size=3),
)
def test_any_value_in_a_meta_json_field_loads_or_raises_a_clear_error(
    tmp_path_factory, level, record
):
    """Whatever JSON a field holds, load_memmap and verify either work or raise ValueError/OSError."""
    folder = _write(tmp_path_factory.mktemp("td") / "td")
    meta = _meta(folder)
    meta.update(level)
    meta["a"] = {**meta["a"], **record}
    _set_meta(folder, meta)
    try:
        TensorDict.load_memmap(folder)
    except (ValueError, OSError) as err:
        assert str(folder) in str(err) or "meta.json" in str(err), err
    assert main(["verify", str(folder)]) in (0, 1)
