"""A full file system fails at the call with ENOSPC naming the file, never with a SIGBUS later."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid

import pytest
import torch

from tensordict import MemoryMappedTensor, TensorDict

MIB = 1 << 20


@pytest.fixture
def small_fs(tmp_path):
    """A 2 MiB tmpfs mounted for the test (needs root; skipped with the reason otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / f"fs-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _names(folder) -> list:
    return sorted(p.name for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "make",
    [
        lambda path: MemoryMappedTensor.empty(4 * MIB, dtype=torch.uint8, filename=path),
        lambda path: MemoryMappedTensor.zeros(4 * MIB, dtype=torch.uint8, filename=path),
        lambda path: MemoryMappedTensor.ones(4 * MIB, dtype=torch.uint8, filename=path),
        lambda path: MemoryMappedTensor.full((4 * MIB,), 7, dtype=torch.uint8, filename=path),
        lambda path: MemoryMappedTensor.from_tensor(
            torch.zeros(4 * MIB, dtype=torch.uint8), filename=path
        ),
    ],
    ids=["empty", "zeros", "ones", "full", "from_tensor"],
)
def test_a_tensor_that_does_not_fit_raises_enospc_naming_its_file(small_fs, make):
    """Each MemoryMappedTensor factory raises ENOSPC at the call, naming the file, and keeps nothing."""
    path = small_fs / "big.memmap"
    with pytest.raises(OSError, match="big.memmap") as info:
        make(path)
    assert info.value.errno == errno.ENOSPC
    assert _names(small_fs) == []


def test_memmap_like_that_does_not_fit_fails_at_the_call_and_keeps_nothing(small_fs):
    """memmap_like of a buffer larger than the disk: ENOSPC now, no file and no meta.json kept."""
    template = TensorDict({"obs": torch.zeros(16), "act": torch.zeros(4)}, []).expand(40_000)
    with pytest.raises(OSError, match=r"cannot write .*buffer/obs\.memmap.*No space left") as info:
        template.memmap_like(small_fs / "buffer")
    assert info.value.errno == errno.ENOSPC
    assert [n for n in _names(small_fs) if n.endswith(".memmap") or n == "meta.json"] == []


def test_memmap_that_does_not_fit_removes_the_files_it_wrote(small_fs):
    """memmap() whose last tensor does not fit: ENOSPC naming a file; its earlier files are removed."""
    data = {
        "a": torch.zeros(MIB // 2, dtype=torch.uint8),
        "b": torch.zeros(4 * MIB, dtype=torch.uint8),
    }
    with pytest.raises(OSError) as info:
        TensorDict(data, []).memmap(small_fs / "td")
    assert info.value.errno == errno.ENOSPC
    assert [n for n in _names(small_fs) if n.endswith(".memmap") or n == "meta.json"] == []


@pytest.mark.parametrize("method", ["make_memmap", "make_memmap_from_tensor"])
def test_adding_an_entry_that_does_not_fit_records_nothing(small_fs, method):
    """make_memmap* of an entry larger than the disk: ENOSPC at the call; meta.json unchanged."""
    td = TensorDict({"a": torch.zeros(2)}, []).memmap(small_fs / "td")
    before = (small_fs / "td" / "meta.json").read_text()
    with pytest.raises(OSError) as info:
        if method == "make_memmap":
            td.make_memmap("big", (4 * MIB,), dtype=torch.uint8)
        else:
            td.make_memmap_from_tensor("big", torch.zeros(4 * MIB, dtype=torch.uint8))
    assert info.value.errno == errno.ENOSPC
    assert (small_fs / "td" / "meta.json").read_text() == before
    assert "big" not in json.loads(before) and "big" not in td.keys()
    assert [n for n in _names(small_fs / "td") if n != "meta%lock"] == ["a.memmap", "meta.json"]


def test_memmap_over_an_older_tree_that_does_not_fit_leaves_the_old_tree(small_fs):
    """memmap(prefix) of a tree too big for the disk: ENOSPC, and the older tree there still loads."""
    TensorDict({"a": torch.arange(4.0), "sub": {"b": torch.ones(4)}}, [4]).memmap(small_fs / "td")
    with pytest.raises(OSError) as info:
        TensorDict({"a": torch.zeros(4, MIB)}, [4]).memmap(small_fs / "td")
    assert info.value.errno == errno.ENOSPC
    old = TensorDict.load_memmap(small_fs / "td")
    assert old["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and old["sub", "b"].tolist() == [1.0] * 4
    assert [p.name for p in small_fs.iterdir()] == ["td"]


def test_a_mount_point_as_the_folder_is_written_in_place(small_fs):
    """memmap() into a mount point (a volume) writes there: a mount point cannot be exchanged."""
    TensorDict({"a": torch.arange(3.0)}, [3]).memmap(small_fs)
    TensorDict({"a": torch.ones(3)}, [3]).memmap(small_fs)
    assert TensorDict.load_memmap(small_fs)["a"].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("unrelated", [False, True], ids=["exchanged", "merged"])
def test_a_full_disk_names_the_folder_asked_for_before_the_staging_file(small_fs, unrelated):
    """memmap(prefix) on a full disk: ENOSPC naming the entry's path in the folder the user gave,
    the staging path only after it (staged beside the folder, or inside it when merged)."""
    dest = small_fs / "td"
    TensorDict({"a": torch.zeros(4)}, [4]).memmap(dest)
    if unrelated:
        (dest / "notes.txt").write_text("mine")  # merged in place: staged inside the folder
    with pytest.raises(OSError) as info:
        TensorDict({"a": torch.zeros(4), "big": torch.zeros(4, MIB)}, [4]).memmap(dest)
    assert info.value.errno == errno.ENOSPC
    text = str(info.value)
    assert text.startswith(f"[Errno {errno.ENOSPC}] cannot write {str(dest / 'big.memmap')!r}")
    assert f"memory-mapped folder {str(dest)!r}" in text
    assert text.index("big.memmap") < text.index("%tmp.")  # the staging file, after it
    assert TensorDict.load_memmap(dest)["a"].tolist() == [0.0] * 4


def test_a_full_disk_during_save_of_an_archive_names_the_archive(small_fs):
    """save("x.tdz") on a full disk: ENOSPC naming the archive first; nothing is left beside it."""
    with pytest.raises(OSError) as info:
        TensorDict({"big": torch.zeros(4, MIB)}, [4]).save(small_fs / "x.tdz")
    assert info.value.errno == errno.ENOSPC
    assert str(info.value).startswith(f"[Errno {errno.ENOSPC}] cannot write the archive ")
    assert repr(str(small_fs / "x.tdz")) in str(info.value).split("(")[0]
    assert list(small_fs.iterdir()) == []
