"""Memory-mapped archives (.tdz): writing, loading, packing, damaged archives.

Differential: this file also runs under the reference's interpreter
(``cd tests && REF/python -m pytest memmap/test_archive.py``); the tests that must
differ say why and are skipped there (``ours_only``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import zipfile

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    is_memmap_archive,
    lazy_stack,
    pack_memmap,
    refresh_archive_checksums,
    tensorclass,
    unpack_memmap,
)

from ._kill import kill_at
from conftest import ARCHIVES, CASES, DAMAGES, ROOT, ours_only


@tensorclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


def _leaf_bytes(tensor: torch.Tensor) -> bytes:
    if tensor.is_nested:
        return b"".join(_leaf_bytes(c) for c in tensor.unbind(0))
    tensor = tensor.detach().contiguous()
    return tensor.view(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


def _leaves(td) -> dict:
    """Every leaf of ``td`` (a tensordict, lazy stack or tensorclass): key -> bytes or value."""
    out = {}
    if isinstance(td, LazyStackedTensorDict):
        for i, member in enumerate(td.tensordicts):
            out.update({(str(i), *k): v for k, v in _leaves(member).items()})
        return out
    for key in td.keys(True, True):
        value = td.get(key)
        key = (key,) if isinstance(key, str) else key
        if isinstance(value, torch.Tensor):
            shape = (
                [list(c.shape) for c in value.unbind(0)] if value.is_nested else list(value.shape)
            )
            out[key] = (str(value.dtype), shape, _leaf_bytes(value))
        else:
            out[key] = ("value", getattr(value, "data", value))
    return out


def _same(a, b) -> None:
    assert type(a).__name__ == type(b).__name__
    assert a.batch_size == b.batch_size
    assert _leaves(a) == _leaves(b)


def _load_case(fixture_copy, fixture_classes, case: str):
    return TensorDict.load_memmap(fixture_copy(case))


def _payload_offsets(path) -> dict:
    """Entry name -> offset of its payload's first byte, read from the local headers."""
    out = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as handle:
        for info in zf.infolist():
            handle.seek(info.header_offset)
            header = handle.read(30)
            name_len, extra_len = struct.unpack_from("<2H", header, 26)
            out[info.filename] = info.header_offset + 30 + name_len + extra_len
    return out


def _storage_span(tensor):
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("case", CASES)
def test_every_fixture_case_round_trips_through_tdz(tmp_path, fixture_copy, fixture_classes, case):
    """Each reference case saved as .tdz loads back with the same class, batch size and bytes."""
    td = _load_case(fixture_copy, fixture_classes, case)
    out = td.save(tmp_path / f"{case}.tdz", copy_existing=True)  # the reference needs it
    loaded = TensorDict.load_memmap(tmp_path / f"{case}.tdz")
    _same(loaded, td)
    _same(out, td)
    assert is_memmap_archive(tmp_path / f"{case}.tdz")


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_case_round_trips_through_pack_and_unpack(
    tmp_path, fixture_copy, fixture_classes, case
):
    """pack_memmap of a folder loads as the folder does; unpack_memmap gives a folder that loads the same."""
    folder = fixture_copy(case)
    td = TensorDict.load_memmap(folder)
    archive = pack_memmap(folder, tmp_path / "packed.tdz")
    assert archive == tmp_path / "packed.tdz"
    _same(tensordict.load_memmap(archive), td)
    unpacked = unpack_memmap(archive, tmp_path / "unpacked")
    assert unpacked == tmp_path / "unpacked"
    _same(TensorDict.load_memmap(unpacked), td)


@pytest.mark.parametrize("case", CASES)
def test_unzip_of_an_archive_is_a_folder_load_memmap_reads(
    tmp_path, fixture_copy, fixture_classes, case
):
    """zipfile's extractall of an archive gives a folder that loads like the original."""
    td = _load_case(fixture_copy, fixture_classes, case)
    td.save(tmp_path / "td.tdz", copy_existing=True)
    with zipfile.ZipFile(tmp_path / "td.tdz") as zf:
        assert zf.testzip() is None
        zf.extractall(tmp_path / "out")
    _same(TensorDict.load_memmap(tmp_path / "out"), td)


def test_every_class_round_trips(tmp_path):
    """A TensorDict, a lazy stack (members with different keys) and a tensorclass come back as themselves."""
    td = TensorDict(
        {"a": torch.arange(6.0).reshape(3, 2), "sub": {"b": torch.ones(3, dtype=torch.int8)}},
        batch_size=[3],
    )
    td["text"] = "hello"
    stack = lazy_stack([TensorDict(x=torch.ones(2)), TensorDict(x=torch.zeros(2), y=torch.ones(1))])
    pair = Pair(left=torch.arange(4), right=torch.ones(4, 2), batch_size=[4])
    for name, value in {"td": td, "stack": stack, "pair": pair}.items():
        path = tmp_path / f"{name}.tdz"
        value.save(path)
        loaded = TensorDict.load_memmap(path)
        assert type(loaded) is type(value), name
        _same(loaded, value)
    assert isinstance(Pair.load_memmap(tmp_path / "pair.tdz"), Pair)


def test_module_functions_write_and_read_archives(tmp_path):
    """tensordict.save / memmap / load / load_memmap take a .tdz path too."""
    td = TensorDict(a=torch.arange(3))
    tensordict.save(td, tmp_path / "a.tdz")
    tensordict.memmap(td, tmp_path / "b.tdz")
    for name in ("a.tdz", "b.tdz"):
        assert zipfile.is_zipfile(tmp_path / name)
        assert tensordict.load(tmp_path / name)["a"].tolist() == [0, 1, 2]
        assert tensordict.load_memmap(str(tmp_path / name))["a"].tolist() == [0, 1, 2]


def test_archive_true_writes_an_archive_at_any_name_and_false_a_folder(tmp_path):
    """archive=True makes an archive of a path without the suffix; archive=False a folder of one with it."""
    td = TensorDict(a=torch.zeros(2))
    td.save(tmp_path / "plain", archive=True)
    td.save(tmp_path / "folder.tdz", archive=False)
    assert zipfile.is_zipfile(tmp_path / "plain")
    assert (tmp_path / "folder.tdz" / "meta.json").is_file()
    assert tensordict.load(tmp_path / "plain")["a"].tolist() == [0.0, 0.0]


def test_saving_an_archive_returns_it_loaded_unlocked_and_not_memory_mapped(tmp_path):
    """save/memmap to .tdz return the archive loaded back: plain tensors, unlocked, as the reference does."""
    out = TensorDict(a=torch.ones(2)).memmap(tmp_path / "td.tdz")
    assert isinstance(out, TensorDict)
    assert not out.is_locked
    assert not out.is_memmap()
    assert type(out["a"]) is torch.Tensor


def test_memmap_in_place_to_a_tdz_path_writes_a_folder(tmp_path):
    """memmap_ has no archive mode: a .tdz path is a folder name there, as in the reference."""
    td = TensorDict(a=torch.ones(2))
    td.memmap_(tmp_path / "x.tdz")
    assert (tmp_path / "x.tdz" / "meta.json").is_file()
    assert td.is_memmap()


def test_the_same_tree_gives_the_same_entries_in_order(tmp_path):
    """Entries mirror the folder: meta.json first at each level, then files, then sub-folders, sorted."""
    td = TensorDict({"b": torch.zeros(2), "a": torch.zeros(2), "sub": {"z": torch.ones(2)}}, [2])
    td.save(tmp_path / "td.tdz")
    with zipfile.ZipFile(tmp_path / "td.tdz") as zf:
        names = zf.namelist()
    assert names == ["meta.json", "a.memmap", "b.memmap", "sub/meta.json", "sub/z.memmap"]


@ours_only  # differs from the reference: its entries carry the time of writing
def test_the_same_tree_gives_the_same_bytes(tmp_path):
    """Two archives of one tree are byte for byte the same (entries carry no time)."""
    td = TensorDict({"a": torch.arange(5), "s": "text", "sub": {"b": torch.ones(5, 2)}}, [5])
    td.save(tmp_path / "one.tdz")
    td.save(tmp_path / "two.tdz")
    assert (tmp_path / "one.tdz").read_bytes() == (tmp_path / "two.tdz").read_bytes()


def test_compressed_archives_load(tmp_path):
    """compression="deflate" compresses the payloads; they load as copies with the same values."""
    td = TensorDict(a=torch.zeros(1000), b=torch.arange(10))
    td.save(tmp_path / "td.tdz", compression="deflate")
    with zipfile.ZipFile(tmp_path / "td.tdz") as zf:
        methods = {i.filename: i.compress_type for i in zf.infolist()}
    assert methods == {"meta.json": 0, "a.memmap": 8, "b.memmap": 8}
    _same(TensorDict.load_memmap(tmp_path / "td.tdz"), td)


def test_compression_without_an_archive_is_refused(tmp_path):
    """compression applies to archives only."""
    with pytest.raises(ValueError, match="compression"):
        TensorDict(a=torch.zeros(2)).memmap(tmp_path / "folder", compression="deflate")


def test_existsok_false_refuses_an_existing_archive(tmp_path):
    """existsok=False and a file at the path: RuntimeError (as the reference), the file kept."""
    td = TensorDict(a=torch.zeros(2))
    td.memmap(tmp_path / "td.tdz")
    before = (tmp_path / "td.tdz").read_bytes()
    with pytest.raises(RuntimeError):
        td.memmap(tmp_path / "td.tdz", existsok=False)
    assert (tmp_path / "td.tdz").read_bytes() == before


def test_an_archive_over_an_older_one_replaces_it(tmp_path):
    """Writing over an archive replaces it whole: none of the older entries remain."""
    TensorDict(a=torch.zeros(2), old=torch.ones(2)).save(tmp_path / "td.tdz")
    TensorDict(a=torch.ones(2)).save(tmp_path / "td.tdz")
    loaded = TensorDict.load_memmap(tmp_path / "td.tdz")
    assert set(loaded.keys()) == {"a"}
    assert [p.name for p in tmp_path.iterdir()] == ["td.tdz"]


# ---------------------------------------------------------------------- zero copy
def test_stored_leaves_are_views_of_one_mapping_of_the_archive(tmp_path):
    """Every leaf of a stored archive lies in one storage the size of the archive: no copy."""
    td = TensorDict(
        {
            "a": torch.arange(10.0),
            "b": torch.ones(3, dtype=torch.int8),
            "sub": {"c": torch.zeros(2, 2)},
        },
        batch_size=[],
    )
    td.save(tmp_path / "td.tdz")
    loaded = TensorDict.load_memmap(tmp_path / "td.tdz")
    size = os.path.getsize(tmp_path / "td.tdz")
    spans = {_storage_span(loaded.get(k)) for k in loaded.keys(True, True)}
    assert len(spans) == 1
    assert spans.pop()[1] == size
    offsets = _payload_offsets(tmp_path / "td.tdz")
    for key, name in (("a", "a.memmap"), ("b", "b.memmap"), (("sub", "c"), "sub/c.memmap")):
        leaf = loaded.get(key)
        assert leaf.storage_offset() * leaf.element_size() == offsets[name]


def test_tensor_payloads_are_aligned_to_64_bytes(tmp_path):
    """Each .memmap entry's payload starts at a multiple of 64, whatever the name lengths."""
    td = TensorDict({"x" * n: torch.zeros(n + 1, dtype=torch.float64) for n in range(1, 9)})
    td.save(tmp_path / "td.tdz")
    offsets = _payload_offsets(tmp_path / "td.tdz")
    assert all(v % 64 == 0 for k, v in offsets.items() if k.endswith(".memmap"))


def test_an_unaligned_archive_from_another_zip_writer_loads_by_copying(tmp_path):
    """An archive zipped without alignment (zip -0 style) still loads, with the same values."""
    td = TensorDict(a=torch.arange(5.0), b=torch.arange(3, dtype=torch.int64))
    td.memmap(tmp_path / "folder")
    with zipfile.ZipFile(tmp_path / "plain.tdz", "w") as zf:
        for name in ("meta.json", "a.memmap", "b.memmap"):
            zf.writestr(name, (tmp_path / "folder" / name).read_bytes())
    _same(TensorDict.load_memmap(tmp_path / "plain.tdz"), td)


def test_memmap_like_archive_is_writable_and_refresh_fixes_the_checksums(tmp_path):
    """memmap_like(.tdz) writes reach the archive; refresh_archive_checksums makes zip tools accept it."""
    path = tmp_path / "buffer.tdz"
    buffer = TensorDict(a=torch.zeros(4), b=torch.zeros(4, 2)).memmap_like(path)
    buffer["a"][:] = 7
    assert zipfile.ZipFile(path).testzip() == "a.memmap"
    assert TensorDict.load_memmap(path)["a"].tolist() == [7.0] * 4
    assert refresh_archive_checksums(path) == path
    assert zipfile.ZipFile(path).testzip() is None
    assert TensorDict.load_memmap(path)["a"].tolist() == [7.0] * 4


def test_writes_into_a_loaded_archive_do_not_reach_the_file(tmp_path):
    """A loaded archive maps copy-on-write: writing into a leaf leaves the archive as it was."""
    TensorDict(a=torch.zeros(3)).save(tmp_path / "td.tdz")
    before = (tmp_path / "td.tdz").read_bytes()
    TensorDict.load_memmap(tmp_path / "td.tdz")["a"].fill_(1)
    assert (tmp_path / "td.tdz").read_bytes() == before


# ---------------------------------------------------------------------- the reference's archives
PACKED = sorted(p.stem for p in (ARCHIVES / "packed").glob("*.tdz"))
SAVED = json.loads((ARCHIVES / "saved" / "MANIFEST.json").read_text())


def test_the_reference_archives_are_there():
    """The committed archives cover every folder case and the saved ones."""
    assert set(PACKED) == set(CASES)
    assert set(SAVED) == {"nested", "lazy", "frame", "deflate"}


@pytest.mark.parametrize("case", PACKED)
def test_archives_packed_by_the_reference_load_like_its_folders(
    tmp_path, fixture_copy, fixture_classes, case
):
    """The reference's pack_memmap of each folder loads as that folder does."""
    shutil.copy(ARCHIVES / "packed" / f"{case}.tdz", tmp_path / "a.tdz")
    _same(TensorDict.load_memmap(tmp_path / "a.tdz"), TensorDict.load_memmap(fixture_copy(case)))


def _check_manifest(entries: dict, td) -> None:
    leaves = _leaves(td)
    assert {tuple(json.loads(k)) for k in entries} == set(leaves)
    for raw, info in entries.items():
        leaf = leaves[tuple(json.loads(raw))]
        if "non_tensor" in info:
            assert repr(leaf[1]) == info["non_tensor"], raw
            continue
        assert leaf[0] == info["dtype"] and leaf[1] == info["shape"], raw
        assert hashlib.sha256(leaf[2]).hexdigest() == info["sha256"], raw


@pytest.mark.parametrize("case", sorted(SAVED))
def test_archives_saved_by_the_reference_load_and_match_their_manifest(
    tmp_path, fixture_classes, case
):
    """Archives the reference wrote with save("x.tdz") load with the class, batch size and bytes it recorded."""
    shutil.copy(ARCHIVES / "saved" / f"{case}.tdz", tmp_path / "a.tdz")
    td = TensorDict.load_memmap(tmp_path / "a.tdz")
    info = SAVED[case]
    assert type(td).__name__ == info["class"]
    assert list(td.batch_size) == info["batch_size"]
    if info["class"] == "LazyStackedTensorDict":
        assert td.stack_dim == info["stack_dim"]
        for member, entries in zip(td.tensordicts, info["members"], strict=True):
            _check_manifest(entries, member)
    else:
        _check_manifest(info["entries"], td._tensordict if info["class"] == "Frame" else td)


@ours_only  # the reference checks itself: this test runs its interpreter on our archives
def test_the_reference_loads_our_archives(
    tmp_path, fixture_copy, fixture_classes, reference_python
):
    """Our archives of every case load in the reference with the same leaves."""
    expected = {}
    for case in CASES:
        td = TensorDict.load_memmap(fixture_copy(case))
        td.save(tmp_path / f"{case}.tdz")
        expected[case] = {
            json.dumps(list(k)): hashlib.sha256(v[2]).hexdigest() if v[0] != "value" else repr(v[1])
            for k, v in _leaves(td).items()
        }
    script = f"""
import hashlib, json, sys
sys.path.insert(0, {str(ROOT / "tests" / "fixtures")!r})
import fixture_classes, torch
from tensordict import LazyStackedTensorDict, TensorDict

def leaf_bytes(t):
    if t.is_nested:
        return b"".join(leaf_bytes(c) for c in t.unbind(0))
    t = t.detach().contiguous()
    return t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""

def leaves(td):
    out = {{}}
    if isinstance(td, LazyStackedTensorDict):
        for i, m in enumerate(td.tensordicts):
            out.update({{json.dumps([str(i), *json.loads(k)]): v for k, v in leaves(m).items()}})
        return out
    for key in td.keys(True, True):
        value = td.get(key)
        key = [key] if isinstance(key, str) else list(key)
        if isinstance(value, torch.Tensor):
            out[json.dumps(key)] = hashlib.sha256(leaf_bytes(value)).hexdigest()
        else:
            out[json.dumps(key)] = repr(value.data)
    return out

out = {{}}
for case in {list(CASES)!r}:
    out[case] = leaves(TensorDict.load_memmap({str(tmp_path)!r} + "/" + case + ".tdz"))
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [reference_python, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the repository, whose tensordict would shadow the reference's
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == expected


# ---------------------------------------------------------------------- is_memmap_archive
def test_is_memmap_archive_says_no_to_anything_else(tmp_path):
    """A folder, a missing path, a text file, and a zip without a root meta.json are not archives."""
    TensorDict(a=torch.zeros(2)).save(tmp_path / "folder")
    (tmp_path / "text").write_text("hello")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("sub/meta.json", "{}")
    TensorDict(a=torch.zeros(2)).save(tmp_path / "td.tdz")
    assert [
        is_memmap_archive(tmp_path / n)
        for n in ("folder", "nowhere", "text", "other.zip", "td.tdz")
    ] == [False, False, False, False, True]


def test_unpack_memmap_refuses_a_file_that_is_not_an_archive(tmp_path):
    """unpack_memmap of a zip without meta.json: ValueError."""
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("x", "y")
    with pytest.raises(ValueError):
        unpack_memmap(tmp_path / "other.zip", tmp_path / "out")


def test_pack_memmap_refuses_a_target_inside_the_folder(tmp_path):
    """The archive may not lie inside the folder it packs."""
    TensorDict(a=torch.zeros(2)).save(tmp_path / "folder")
    with pytest.raises(ValueError):
        pack_memmap(tmp_path / "folder", tmp_path / "folder" / "in.tdz")


# ---------------------------------------------------------------------- damaged archives
def _archive_of(tmp_path, entries: dict, name: str = "bad.tdz"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        for entry, data in entries.items():
            zf.writestr(entry, data)
    return path


def _good_entries() -> dict:
    meta = {
        "a": {"device": "cpu", "shape": [3], "dtype": "torch.float32", "is_nested": False},
        "shape": [3],
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }
    return {"meta.json": json.dumps(meta), "a.memmap": torch.arange(3.0).numpy().tobytes()}


def test_a_hand_made_archive_loads():
    """The damaged archives below start from this one, which loads (a check of the helper)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        td = TensorDict.load_memmap(_archive_of(Path(tmp), _good_entries()))
        assert td["a"].tolist() == [0.0, 1.0, 2.0]


def test_a_file_that_is_not_a_zip_is_refused_naming_it(tmp_path):
    """A .tdz that is no zip: ValueError naming the file."""
    (tmp_path / "bad.tdz").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="bad.tdz"):
        TensorDict.load_memmap(tmp_path / "bad.tdz")


def test_a_truncated_archive_is_refused(tmp_path):
    """An archive cut short (its central directory gone): ValueError naming it."""
    TensorDict(a=torch.zeros(100)).save(tmp_path / "td.tdz")
    data = (tmp_path / "td.tdz").read_bytes()
    (tmp_path / "td.tdz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="td.tdz"):
        TensorDict.load_memmap(tmp_path / "td.tdz")


@pytest.mark.parametrize("cut", [1, 2, 10, 20, 21])
def test_an_archive_cut_inside_its_end_record_is_refused_naming_it(tmp_path, cut):
    """An archive missing the last bytes of its 22-byte end record (its signature still there):
    a ValueError naming it (ours: ArchiveFormatError), not an error of the struct module."""
    TensorDict(a=torch.zeros(4), s="text").save(tmp_path / "td.tdz")
    data = (tmp_path / "td.tdz").read_bytes()
    (tmp_path / "td.tdz").write_bytes(data[:-cut])
    with pytest.raises(ValueError, match=r"td\.tdz"):
        TensorDict.load_memmap(tmp_path / "td.tdz")


def test_a_missing_archive_is_file_not_found(tmp_path):
    """Loading a path where nothing is: FileNotFoundError."""
    with pytest.raises(FileNotFoundError):
        TensorDict.load_memmap(tmp_path / "nowhere.tdz")


@ours_only  # differs from the reference: it reads past the central directory into the payload
def test_a_payload_cut_short_is_refused_naming_the_entry(tmp_path):
    """A central directory that promises more bytes than the file holds: the entry is named."""
    TensorDict(a=torch.zeros(100)).save(tmp_path / "td.tdz")
    with zipfile.ZipFile(tmp_path / "td.tdz") as zf:
        info = zf.getinfo("a.memmap")
        start = zf.start_dir
    data = bytearray((tmp_path / "td.tdz").read_bytes())
    at = start
    while data[at : at + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<3H", data, at + 28)
        if bytes(data[at + 46 : at + 46 + n]) == b"a.memmap":
            struct.pack_into("<II", data, at + 20, 1 << 30, 1 << 30)
            if m:  # the zip64 block
                struct.pack_into("<QQ", data, at + 46 + n + 4, 1 << 30, 1 << 30)
        at += 46 + n + m + k
    (tmp_path / "td.tdz").write_bytes(bytes(data))
    assert info.file_size == 400
    with pytest.raises(ValueError, match=r"a\.memmap.*truncated"):
        TensorDict.load_memmap(tmp_path / "td.tdz")


@ours_only  # differs from the reference: it takes such names as they are
@pytest.mark.parametrize("name", ["../x.memmap", "/abs/meta.json", "sub/../../y", "a\\b", "./c"])
def test_a_name_that_leaves_the_root_is_refused_naming_archive_and_entry(tmp_path, name):
    """Entry names that would leave the archive's root: ValueError naming the archive and the entry."""
    entries = _good_entries()
    entries[name] = b"x"
    path = _archive_of(tmp_path, entries)
    with pytest.raises(ValueError, match="bad.tdz.*leaves the archive"):
        TensorDict.load_memmap(path)
    with pytest.raises(ValueError, match="leaves the archive"):
        unpack_memmap(path, tmp_path / "out")
    assert not (tmp_path / "x.memmap").exists()


@ours_only  # differs from the reference: a wrong size gives a RuntimeError of torch there
def test_a_size_that_disagrees_with_the_record_is_refused_naming_both(tmp_path):
    """A payload of 8 bytes for a record that needs 12: ValueError naming the entry and both sizes."""
    entries = _good_entries()
    entries["a.memmap"] = b"\x00" * 8
    with pytest.raises(ValueError, match=r"'a\.memmap'.*8 bytes.*needs 12"):
        TensorDict.load_memmap(_archive_of(tmp_path, entries))


@ours_only  # differs from the reference: it raises zipfile.BadZipFile, not a ValueError
def test_a_bad_crc_of_meta_json_is_refused_naming_the_entry(tmp_path):
    """A meta.json whose bytes do not match its CRC-32: ValueError naming it."""
    TensorDict(a=torch.zeros(2)).save(tmp_path / "td.tdz")
    data = bytearray((tmp_path / "td.tdz").read_bytes())
    at = data.index(b'"torch.float32"')
    data[at + 1 : at + 6] = b"TORCH"
    (tmp_path / "td.tdz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"'meta\.json'.*CRC"):
        TensorDict.load_memmap(tmp_path / "td.tdz")


@ours_only  # differs from the reference: it raises zipfile.BadZipFile, not a ValueError
def test_a_bad_crc_of_a_payload_is_found_by_unpack(tmp_path):
    """Loading does not check payload CRCs (they are mapped), unpack_memmap does and names the entry."""
    TensorDict(a=torch.zeros(4)).save(tmp_path / "td.tdz")
    offset = _payload_offsets(tmp_path / "td.tdz")["a.memmap"]
    with open(tmp_path / "td.tdz", "r+b") as handle:
        handle.seek(offset)
        handle.write(b"\x01")
    assert TensorDict.load_memmap(tmp_path / "td.tdz")["a"][0] != 0
    with pytest.raises(ValueError, match=r"'a\.memmap'.*CRC"):
        unpack_memmap(tmp_path / "td.tdz", tmp_path / "out")


@ours_only  # differs from the reference: the later entry wins there
def test_a_name_given_twice_is_refused(tmp_path):
    """Two entries of one name: ValueError naming it."""
    path = tmp_path / "dup.tdz"
    entries = _good_entries()
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.writestr("a.memmap", entries["a.memmap"])
    with pytest.raises(ValueError, match=r"'a\.memmap'.*twice"):
        TensorDict.load_memmap(path)


@ours_only  # differs from the reference: many of these damages load silently there
@pytest.mark.parametrize("damage", sorted(d for d in DAMAGES if not d.startswith("symlink")))
def test_archives_follow_the_strict_reader_of_folders(
    tmp_path, fixture_copy, fixture_classes, damage
):
    """Each damaged reference folder, packed, fails (or loads) as the folder does, with the same kind of error."""
    case, spoil = DAMAGES[damage]
    folder = fixture_copy(case)
    spoil(folder)
    outcome = []
    for path in (folder, pack_memmap(folder, tmp_path / "damaged.tdz")):
        try:
            TensorDict.load_memmap(path)
            outcome.append(None)
        except (ValueError, OSError) as err:
            outcome.append(FileNotFoundError if isinstance(err, FileNotFoundError) else ValueError)
            if path != folder:
                assert "damaged.tdz" in str(err)
    assert outcome[0] == outcome[1]


# ---------------------------------------------------------------------- writing is atomic
@ours_only  # reaches into our writer to make it fail half-way
def test_a_failed_write_leaves_the_old_archive_and_no_temporary_files(tmp_path, monkeypatch):
    """A crash while the archive is written: the old archive is intact, nothing else is left."""
    from tensordict.memmap import _archive

    TensorDict(a=torch.zeros(2)).save(tmp_path / "td.tdz")
    before = (tmp_path / "td.tdz").read_bytes()
    calls = []

    def failing(zf, name, path, method, level):
        calls.append(name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(zf, name, path, method, level)

    original = _archive._write_entry
    monkeypatch.setattr(_archive, "_write_entry", failing)
    with pytest.raises(OSError, match="No space"):
        TensorDict(a=torch.ones(2), b=torch.ones(2)).save(tmp_path / "td.tdz")
    assert (tmp_path / "td.tdz").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["td.tdz"]


@ours_only  # differs from the reference: its message does not say how
def test_writing_an_archive_over_a_folder_is_refused(tmp_path):
    """A folder at the archive's path: ValueError, the folder kept."""
    (tmp_path / "td.tdz").mkdir()
    with pytest.raises(ValueError, match="folder is there"):
        TensorDict(a=torch.zeros(2)).save(tmp_path / "td.tdz")
    assert (tmp_path / "td.tdz").is_dir()


# ---------------------------------------------------------------------- command line
def _cli(capsys, *args):
    """Runs the command line in this process; returns (exit status, stdout)."""
    from tensordict.cli import main

    capsys.readouterr()
    status = main([str(a) for a in args])
    return status, capsys.readouterr().out


@ours_only  # the reference has no command line
def test_info_and_verify_read_an_archive(tmp_path, capsys):
    """tensordict info shows an archive's tree; verify says it is sound."""
    TensorDict({"obs": torch.zeros(4, 3), "sub": {"r": torch.ones(4)}}, [4]).save(
        tmp_path / "td.tdz"
    )
    status, out = _cli(capsys, "info", tmp_path / "td.tdz")
    assert status == 0
    assert "obs" in out and "float32" in out and "sub/" in out
    status, out = _cli(capsys, "verify", tmp_path / "td.tdz")
    assert status == 0
    assert out.startswith("OK:")


@ours_only  # the reference has no command line
def test_verify_names_a_damaged_archive_entry(tmp_path, capsys):
    """A payload whose CRC does not match: verify names the entry and exits 1."""
    TensorDict({"a": torch.zeros(4), "b": torch.zeros(2)}, []).save(tmp_path / "td.tdz")
    offset = _payload_offsets(tmp_path / "td.tdz")["a.memmap"]
    with open(tmp_path / "td.tdz", "r+b") as handle:
        handle.seek(offset)
        handle.write(b"\x01")
    status, out = _cli(capsys, "verify", tmp_path / "td.tdz")
    assert status == 1
    assert "td.tdz/a.memmap: its CRC-32 does not match" in out


@ours_only  # differs from the reference: it reads the link's target path as the entry's bytes
def test_an_entry_recorded_as_a_symbolic_link_is_refused(tmp_path):
    """A zip entry whose Unix mode is a symbolic link: ValueError naming it."""
    path = tmp_path / "link.tdz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in _good_entries().items():
            info = zipfile.ZipInfo(name)
            if name == "a.memmap":
                info.create_system = 3
                info.external_attr = 0o120777 << 16
            zf.writestr(info, data)
    with pytest.raises(ValueError, match=r"'a\.memmap'.*symbolic link"):
        TensorDict.load_memmap(path)


_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int16, torch.uint8, torch.bool]
_KEYS = st.text(alphabet="ab c/.%", min_size=1, max_size=4).filter(
    lambda k: k not in ("shape", "device", "_type", "_class", "_format_version", "meta.json")
)


@st.composite
def _trees(draw):
    batch = draw(st.integers(0, 3))
    data = {}
    for key in draw(st.lists(_KEYS, max_size=4, unique=True)):
        if draw(st.booleans()):
            data[key] = {f"{key}x": torch.arange(batch * 2).reshape(batch, 2)}
        else:
            dtype = draw(st.sampled_from(_DTYPES))
            shape = (batch, *draw(st.lists(st.integers(0, 3), max_size=2)))
            data[key] = (torch.arange(math.prod(shape)) % 7).to(dtype).reshape(shape)
    return TensorDict(data, batch_size=[batch])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(td=_trees())
def test_random_trees_round_trip(tmp_path, td):
    """Any tree of tensors of the common dtypes (keys to encode included) comes back the same."""
    path = tmp_path / "td.tdz"
    td.save(path)
    _same(TensorDict.load_memmap(path), td)


def test_load_memmap_in_place_reads_an_archive(tmp_path):
    """load_memmap_ of an archive fills the tensordict itself with its entries."""
    TensorDict(a=torch.arange(3)).save(tmp_path / "td.tdz")
    td = TensorDict()
    assert td.load_memmap_(tmp_path / "td.tdz") is td
    assert td["a"].tolist() == [0, 1, 2]


# ---------------------------------------------------------------------- killed writers
def test_a_save_killed_at_every_step_leaves_nothing_the_next_save_keeps(tmp_path):
    """kill -9 before each change save("x.tdz") makes: the archive there is the old or the new
    one, and the next save removes every staging folder and temporary file the dead one left."""
    target = tmp_path / "x.tdz"
    TensorDict({"a": torch.zeros(4)}, [4]).save(target)
    left_behind = 0
    for step in range(1, 200):
        td = TensorDict({"a": torch.full((4,), float(step)), "sub": {"b": torch.ones(4)}}, [4])
        killed = kill_at(step, lambda td=td: td.save(target))
        assert TensorDict.load_memmap(target)["a"].tolist()[0] in (0.0, float(step))
        leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != "x.tdz")
        left_behind += bool(leftovers)
        TensorDict({"a": torch.zeros(4)}, [4]).save(target)  # the next writer cleans up
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.tdz"], leftovers
        if not killed:
            break
    assert step > 5 and left_behind >= 3  # there were steps to kill at, and leftovers to remove


@ours_only  # the reference raises a plain RuntimeError; ours is ArchiveNotWritableError, one
def test_mode_r_plus_refuses_an_archive_whose_entries_writes_cannot_reach(tmp_path):
    """mode="r+" refuses compressed, unaligned and nested-tensor entries, naming the archive and the entry."""
    from tensordict.errors import ArchiveNotWritableError

    td = TensorDict({"a": torch.arange(10.0), "n": {"b": torch.ones(10)}}, [10])
    td.save(tmp_path / "c.tdz", compression="deflate")
    td.memmap(tmp_path / "plain")
    with zipfile.ZipFile(tmp_path / "foreign.zip", "w") as archive:  # no alignment padding
        for path in sorted((tmp_path / "plain").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(tmp_path / "plain").as_posix())
    nested = torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(4, 3)])
    TensorDict({"nt": nested}, []).save(tmp_path / "nt.tdz")
    cases = {"c.tdz": "is compressed", "foreign.zip": "is not aligned", "nt.tdz": "nested tensor"}
    for name, why in cases.items():
        before = (tmp_path / name).read_bytes()
        with pytest.raises(RuntimeError, match=f"{name}.*mode='r\\+'.*{why}") as info:
            tensordict.load_memmap(tmp_path / name, mode="r+")
        assert isinstance(info.value, ArchiveNotWritableError)
        assert (tmp_path / name).read_bytes() == before
        assert tensordict.load_memmap(tmp_path / name, mode="r") is not None
