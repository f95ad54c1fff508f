"""One contract for the three storages of one tree: a folder, a ``.tdz`` archive, a consolidated file.

zarr's ``StoreTests`` is the model: :class:`StorageContract` holds the cases, and each
subclass says how its kind of storage is written, opened and damaged. The cases are
the same for every kind: a round trip keeps values, dtypes, levels, batch sizes,
names and the device; a file the reference wrote loads with the values it records;
a damaged file raises the library's error naming the path and is left as it was;
and ``memmap_refresh_()`` does on a loaded tree what that kind supports. A subclass
that overrides a case says in the docstring why its kind differs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import struct
import zipfile
from pathlib import Path

import pytest
import torch

from tensordict import NonTensorData, TensorDict
from tensordict.errors import (
    ArchiveFormatError,
    ConsolidatedFormatError,
    MemmapFormatError,
    MemmapNotFoundError,
    NotMemmapError,
    TensorDictError,
)

from conftest import ARCHIVES, FIXTURES, MANIFEST, REFERENCE

CONSOLIDATED = FIXTURES / "reference-0.15.3-consolidated"
_spec = importlib.util.spec_from_file_location("consolidated_cases", CONSOLIDATED / "generate.py")
consolidated_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(consolidated_cases)
SAVED_MANIFEST = json.loads((ARCHIVES / "saved" / "MANIFEST.json").read_text())


# ---------------------------------------------------------------------- trees and checks
def _batched_tree() -> TensorDict:
    """Three levels, several dtypes, a zero-size leaf and a string; a named batch dim, on the CPU."""
    deeper = TensorDict({"y": torch.full((3, 2, 1), -1.5)}, batch_size=[3, 2])
    sub = TensorDict(
        {"x": torch.arange(6).reshape(3, 2), "deeper": deeper, "flag": torch.ones(3, 2).bool()},
        batch_size=[3, 2],
    )
    return TensorDict(
        {
            "bool": torch.tensor([True, False, True]),
            "int64": torch.arange(3) * 1000 - 1,
            "float16": torch.linspace(-1, 1, 6, dtype=torch.float16).reshape(3, 2),
            "bfloat16": torch.arange(3, dtype=torch.bfloat16) / 4,
            "float32": torch.arange(12.0).reshape(3, 4),
            "empty": torch.zeros(3, 0),
            "label": NonTensorData("hello", batch_size=[3]),
            "sub": sub,
        },
        batch_size=[3],
        names=["time"],
        device="cpu",
    )


def _scalar_tree() -> TensorDict:
    """No batch dimension: 0-dim leaves of several dtypes, a sub-level, a string."""
    return TensorDict(
        {
            "step": torch.tensor(7),
            "reward": torch.tensor(0.25),
            "done": torch.tensor(True),
            "half": torch.tensor(1.5, dtype=torch.bfloat16),
            "info": {"count": torch.tensor(3, dtype=torch.float16), "note": NonTensorData("x")},
        },
        batch_size=[],
        device="cpu",
    )


TREES = {"batched": _batched_tree, "scalar": _scalar_tree}


def _check_same_tree(loaded, expected) -> None:
    """Same keys at every level, same batch sizes, and each leaf of the same dtype, shape and value."""
    assert type(loaded) is type(expected)
    assert loaded.batch_size == expected.batch_size
    assert sorted(loaded.keys()) == sorted(expected.keys())  # the order is not kept by every kind
    for key in expected.keys():
        want, got = expected.get(key), loaded.get(key)
        if isinstance(want, NonTensorData):
            assert isinstance(got, NonTensorData) and got.data == want.data, key
        elif isinstance(want, torch.Tensor):
            assert got.dtype == want.dtype and got.shape == want.shape, key
            assert torch.equal(got, want), key
        else:
            _check_same_tree(got, want)


def _leaf_bytes(tensor: torch.Tensor) -> bytes:
    tensor = tensor.detach().contiguous()
    return tensor.view(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def _manifest_entries(td) -> dict:
    """The tensor leaves of ``td`` in the form of the fixtures' MANIFEST.json ``entries``."""
    out = {}
    for key in td.keys(True, True):
        value = td.get(key)
        if isinstance(value, torch.Tensor):
            parts = [key] if isinstance(key, str) else list(key)
            out[json.dumps(parts)] = {
                "dtype": str(value.dtype),
                "nested": False,
                "sha256": hashlib.sha256(_leaf_bytes(value)).hexdigest(),
                "shape": list(value.shape),
            }
    return out


def _snapshot(path: Path) -> dict:
    """Every file at or under ``path`` with its bytes and modification time."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


# ---------------------------------------------------------------------- the contract
class StorageContract:
    """The cases every storage of one tree passes; a subclass says how its kind is handled.

    A subclass defines :meth:`write` and :meth:`load`, :meth:`reference_fixture`, the
    three damages (:meth:`truncate`, :meth:`garble_metadata`, :meth:`remove_metadata`),
    each returning the path the error must name, and the error each damage raises.
    """

    truncated_error: type[TensorDictError]
    garbled_error: type[TensorDictError]
    missing_error: type[TensorDictError]

    def write(self, td, tmp_path: Path) -> Path:
        """Writes ``td`` to a new storage of this kind under ``tmp_path``; returns its path."""
        raise NotImplementedError

    def load(self, path: Path):
        """Opens the storage at ``path`` the way users do."""
        raise NotImplementedError

    def reference_fixture(self, tmp_path: Path) -> tuple:
        """``(path, batch_size, entries)``: a copy of a file the reference wrote, and what it holds."""
        raise NotImplementedError

    def truncate(self, path: Path) -> Path:
        """Cuts a data file of the storage short; returns the path the error names."""
        raise NotImplementedError

    def garble_metadata(self, path: Path) -> Path:
        """Replaces the storage's metadata with bytes that are not JSON; returns the path to name."""
        raise NotImplementedError

    def remove_metadata(self, path: Path) -> Path:
        """Takes the storage's metadata away; returns the path the error names."""
        raise NotImplementedError

    # ------------------------------------------------------------------ round trip
    @pytest.mark.parametrize("tree", list(TREES))
    def test_a_round_trip_keeps_every_level_dtype_and_value(self, tmp_path, tree):
        """Nested levels, bool/int64/float16/bfloat16/float32 leaves, zero-size and 0-dim leaves and
        strings come back as written, with every level's batch size and the device."""
        expected = TREES[tree]()
        loaded = self.load(self.write(expected, tmp_path))
        _check_same_tree(loaded, expected)
        assert loaded.device == torch.device("cpu")

    def test_a_round_trip_keeps_the_names_of_the_batch_dimensions(self, tmp_path):
        """Named batch dimensions come back named, at the root and at a deeper level."""
        loaded = self.load(self.write(_batched_tree(), tmp_path))
        assert loaded.names == ["time"]
        assert loaded["sub"].names == ["time", None]

    # ------------------------------------------------------------------ the reference's files
    def test_a_file_the_reference_wrote_loads_with_the_values_it_records(self, tmp_path):
        """A copy of a reference-written fixture of this kind loads with the batch size, dtypes,
        shapes and bytes it records."""
        path, batch_size, entries = self.reference_fixture(tmp_path)
        loaded = self.load(path)
        assert list(loaded.batch_size) == batch_size
        assert _manifest_entries(loaded) == entries

    # ------------------------------------------------------------------ damage
    def _check_damage(self, tmp_path, damage, error) -> None:
        path = self.write(_batched_tree(), tmp_path)
        named = damage(path)
        before = _snapshot(path)
        with pytest.raises(error, match=re.escape(str(named))):
            self.load(path)
        assert _snapshot(path) == before

    def test_a_truncated_data_file_raises_naming_it_and_changes_nothing(self, tmp_path):
        """A data file cut short raises this kind's format error naming the path; the failed load
        leaves every file with its bytes and modification time."""
        self._check_damage(tmp_path, self.truncate, self.truncated_error)

    def test_garbage_metadata_raises_naming_it_and_changes_nothing(self, tmp_path):
        """Metadata that is not JSON raises this kind's format error naming the path; the failed
        load changes no file."""
        self._check_damage(tmp_path, self.garble_metadata, self.garbled_error)

    def test_missing_metadata_raises_naming_it_and_changes_nothing(self, tmp_path):
        """Metadata that is not there raises the library's error naming the path; the failed load
        changes no file."""
        self._check_damage(tmp_path, self.remove_metadata, self.missing_error)

    # ------------------------------------------------------------------ refresh
    def test_refresh_picks_up_an_entry_written_since_the_load(self, tmp_path):
        """memmap_refresh_() of a loaded tree sees an entry another writer added, in place."""
        path = self.write(_batched_tree(), tmp_path)
        reader = self.load(path)
        TensorDict.load_memmap(path).make_memmap("added", (3, 2)).fill_(4.0)
        assert reader.memmap_refresh_() is reader
        assert reader["added"].tolist() == [[4.0, 4.0]] * 3
        _check_same_tree(reader.exclude("added"), _batched_tree())


class TestMemmapFolder(StorageContract):
    """A memory-mapped folder: ``td.memmap(prefix)`` and ``TensorDict.load_memmap(prefix)``."""

    truncated_error = MemmapFormatError
    garbled_error = MemmapFormatError
    missing_error = MemmapNotFoundError

    def write(self, td, tmp_path):
        td.memmap(tmp_path / "tree")
        return tmp_path / "tree"

    def load(self, path):
        return TensorDict.load_memmap(path)

    def reference_fixture(self, tmp_path):
        path = tmp_path / "basic"
        shutil.copytree(REFERENCE / "basic", path)
        return path, MANIFEST["basic"]["batch_size"], MANIFEST["basic"]["entries"]

    def truncate(self, path):
        target = path / "sub" / "x.memmap"
        os.truncate(target, 8)
        return target

    def garble_metadata(self, path):
        target = path / "sub" / "meta.json"
        target.write_bytes(b'{"x": {"device": "cpu", ')
        return target

    def remove_metadata(self, path):
        (path / "meta.json").unlink()
        return path / "meta.json"


class TestTdzArchive(StorageContract):
    """A ``.tdz`` archive: ``td.save("x.tdz")`` and ``TensorDict.load_memmap("x.tdz")``."""

    truncated_error = ArchiveFormatError
    garbled_error = MemmapFormatError
    missing_error = MemmapNotFoundError

    def write(self, td, tmp_path):
        td.save(tmp_path / "tree.tdz")
        return tmp_path / "tree.tdz"

    def load(self, path):
        return TensorDict.load_memmap(path)

    def reference_fixture(self, tmp_path):
        path = tmp_path / "nested.tdz"
        shutil.copyfile(ARCHIVES / "saved" / "nested.tdz", path)
        case = SAVED_MANIFEST["nested"]
        return path, case["batch_size"], case["entries"]

    def truncate(self, path):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return path

    def _rewrite(self, path, meta: bytes | None) -> None:
        """Rewrites the archive with its root meta.json replaced by ``meta`` (left out if None)."""
        with zipfile.ZipFile(path) as zf:
            members = {name: zf.read(name) for name in zf.namelist()}
        if meta is None:
            del members["meta.json"]
        else:
            members["meta.json"] = meta
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)

    def garble_metadata(self, path):
        self._rewrite(path, b"{garbage")
        return path / "meta.json"

    def remove_metadata(self, path):
        self._rewrite(path, None)
        return path

    def test_refresh_picks_up_an_entry_written_since_the_load(self, tmp_path):
        """A loaded archive is a tree of views of one mapping, not memory-mapped entries: an archive
        is rewritten whole, never grown, so memmap_refresh_() refuses it, saying what to do."""
        reader = self.load(self.write(_batched_tree(), tmp_path))
        with pytest.raises(NotMemmapError, match=r"memmap_refresh_\(\) needs a memory-mapped"):
            reader.memmap_refresh_()
        _check_same_tree(reader, _batched_tree())


class TestConsolidatedFile(StorageContract):
    """A consolidated file: ``td.consolidate(filename=...)`` and ``TensorDict.from_consolidated``."""

    truncated_error = ConsolidatedFormatError
    garbled_error = ConsolidatedFormatError
    missing_error = ConsolidatedFormatError

    def write(self, td, tmp_path):
        td.consolidate(filename=tmp_path / "tree.bin")
        return tmp_path / "tree.bin"

    def load(self, path):
        return TensorDict.from_consolidated(path)

    def reference_fixture(self, tmp_path):
        path = tmp_path / "basic.bin"
        shutil.copyfile(CONSOLIDATED / "basic.bin", path)
        expected = consolidated_cases.CASES["basic"]()
        return path, list(expected.batch_size), _manifest_entries(expected)

    def _parts(self, path) -> tuple:
        """``(data, metadata)``: the two parts of the file before its 8-byte footer."""
        raw = path.read_bytes()
        (length,) = struct.unpack("<q", raw[-8:])
        return raw[: len(raw) - 8 - length], raw[len(raw) - 8 - length : -8]

    def truncate(self, path):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return path

    def garble_metadata(self, path):
        data, metadata = self._parts(path)
        path.write_bytes(data + b"{" * len(metadata) + struct.pack("<q", len(metadata)))
        return path

    def remove_metadata(self, path):
        data, _ = self._parts(path)
        path.write_bytes(data)
        return path

    def test_refresh_picks_up_an_entry_written_since_the_load(self, tmp_path):
        """A consolidated file is read into views of one copy-on-write mapping, not memory-mapped
        entries: memmap_refresh_() refuses the loaded tree, saying what to do."""
        reader = self.load(self.write(_batched_tree(), tmp_path))
        with pytest.raises(NotMemmapError, match=r"memmap_refresh_\(\) needs a memory-mapped"):
            reader.memmap_refresh_()
        _check_same_tree(reader, _batched_tree())
