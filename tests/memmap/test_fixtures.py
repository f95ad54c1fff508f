"""Folders written by the reference implementation load and match MANIFEST.json; ours match theirs."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import torch

from tensordict import NonTensorData, TensorDict, TensorDictBase

from conftest import MANIFEST, TD_CASES


def _leaf_bytes(tensor: torch.Tensor) -> bytes:
    if tensor.is_nested:
        return b"".join(_leaf_bytes(c) for c in tensor.unbind())
    return (
        tensor.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        if tensor.numel()
        else b""
    )


def _check_entries(td: TensorDictBase, entries: dict) -> None:
    tensor_keys = {k for k in td.keys(True, True) if isinstance(td.get(k), torch.Tensor)}
    expected = {tuple(json.loads(k)) for k in entries}
    assert {(k,) if isinstance(k, str) else k for k in tensor_keys} == expected
    for raw_key, info in entries.items():
        value = td.get(tuple(json.loads(raw_key)))
        assert str(value.dtype) == info["dtype"], raw_key
        assert value.is_nested == info["nested"], raw_key
        if info["nested"]:
            assert [list(c.shape) for c in value.unbind()] == info["shape"], raw_key
        else:
            assert list(value.shape) == info["shape"], raw_key
        assert hashlib.sha256(_leaf_bytes(value)).hexdigest() == info["sha256"], raw_key


def test_the_manifest_lists_every_case():
    """The manifest is there and names the cases these tests read (guards against an empty parametrisation)."""
    assert {"basic", "empty", "from_storage", "nested_tensor", "non_tensor", "robust_keys"} <= set(
        TD_CASES
    )


@pytest.mark.parametrize("case", TD_CASES)
def test_reference_folders_load_and_match_the_manifest(fixture_copy, case):
    """Each TensorDict case loads with the manifest's batch size, dtypes, shapes and bytes."""
    folder = fixture_copy(case)
    td = TensorDict.load_memmap(folder)
    assert list(td.batch_size) == MANIFEST[case]["batch_size"]
    assert td.is_memmap() and td.saved_path == str(folder)
    _check_entries(td, MANIFEST[case]["entries"])


def test_from_storage_drops_the_entry_whose_file_is_missing(fixture_copy):
    """'dropped' is listed in meta.json but has no file: loading drops it."""
    folder = fixture_copy("from_storage")
    assert "dropped" in json.loads((folder / "meta.json").read_text())
    assert "dropped" not in TensorDict.load_memmap(folder).keys()


def test_non_tensor_values_load_as_their_python_values(fixture_copy):
    """Strings stored as non-tensor entries come back as NonTensorData with the level's batch size."""
    td = TensorDict.load_memmap(fixture_copy("non_tensor"))
    assert td["name"] == "hello" and td["cfg"] == "world"
    assert isinstance(td.get("name"), NonTensorData)
    assert td.get("name").batch_size == td.batch_size


def test_loading_a_reference_folder_writes_nothing(fixture_copy):
    """Loading and refreshing never write: every file keeps its bytes and modification time."""
    folder = fixture_copy("basic")
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}
    td = TensorDict.load_memmap(folder)
    td.memmap_refresh_()
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}
    assert after == before


def _tree(folder) -> dict:
    """Every file and folder under ``folder`` with, for meta.json, its parsed content."""
    out = {}
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        for name in dirs:
            out[os.path.join(rel, name)] = "dir"
        for name in files:
            path = os.path.join(root, name)
            if name == "meta.json":
                out[os.path.join(rel, name)] = json.loads(open(path).read())
            elif name.endswith(".memmap"):
                out[os.path.join(rel, name)] = open(path, "rb").read()
    return out


@pytest.mark.parametrize("case", ["basic", "robust_keys", "nested_tensor", "non_tensor", "empty"])
def test_our_folder_for_the_same_content_has_the_same_files_and_fields(
    fixture_copy, tmp_path, case
):
    """Writing the loaded content again gives the reference's files, bytes and meta.json fields."""
    reference = fixture_copy(case)
    td = TensorDict.load_memmap(reference)
    ours = tmp_path / f"ours-{case}"
    td.memmap(ours)
    assert _tree(ours) == _tree(reference)


def test_the_lazy_stacked_reference_folder_loads_with_its_members(fixture_copy):
    """lazy_stacked loads as a LazyStackedTensorDict whose members match the manifest."""
    from tensordict import LazyStackedTensorDict

    case = MANIFEST["lazy_stacked"]
    td = TensorDict.load_memmap(fixture_copy("lazy_stacked"))
    assert isinstance(td, LazyStackedTensorDict)
    assert list(td.batch_size) == case["batch_size"] and td.stack_dim == case["stack_dim"]
    assert len(td.tensordicts) == len(case["members"])
    for member, expected in zip(td.tensordicts, case["members"]):
        assert list(member.batch_size) == expected["batch_size"]
        _check_entries(member, expected["entries"])


def test_our_lazy_stacked_folder_has_the_references_files_and_fields(fixture_copy, tmp_path):
    """Writing the loaded lazy stack again gives the same member folders, bytes and meta.json."""
    reference = fixture_copy("lazy_stacked")
    ours = tmp_path / "ours-lazy"
    TensorDict.load_memmap(reference).memmap(ours)
    assert _tree(ours) == _tree(reference)
