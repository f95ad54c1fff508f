"""The file-system machinery ``tensordict.memmap._fs`` alone: the atomic meta.json write and the lock.

The spec is the docstring of ``tensordict.memmap.format`` ("Writing and reading");
writers' temporaries and the single-writer claim are checked through the public
API in test_replace.py and test_single_writer.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tensordict.memmap import _fs
from tensordict.memmap import format as fmt

from conftest import REFERENCE

CHILD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(3)
"""


def _child_can_lock(path) -> bool:
    """True when another process can take an exclusive non-blocking flock on ``path``."""
    result = subprocess.run([sys.executable, "-c", CHILD_LOCK, str(path)], timeout=30)
    assert result.returncode in (0, 3), result
    return result.returncode == 0


def _tmp_files(folder) -> list:
    return [name for name in os.listdir(folder) if name.startswith(fmt.TMP_PREFIX)]


# ---------------------------------------------------------------------- write_meta
def test_write_meta_dict_exact_bytes(tmp_path):
    """The bytes on disk are exactly the JSON text (no newline); write_meta joins members."""
    _fs.write_meta_dict(str(tmp_path), {"a": 1, "b": {"c": [1, 2]}})
    assert (tmp_path / "meta.json").read_bytes() == b'{"a": 1, "b": {"c": [1, 2]}}'
    _fs.write_meta(str(tmp_path), [fmt.dumps_record("a", 1), fmt.dumps_record("b", {"c": [1, 2]})])
    assert (tmp_path / "meta.json").read_text() == '{"a": 1, "b": {"c": [1, 2]}}'
    _fs.write_meta(str(tmp_path), [])
    assert (tmp_path / "meta.json").read_text() == "{}"


def test_write_meta_keys_are_not_encoded(tmp_path):
    """Keys inside meta.json are the keys themselves, never percent-encoded."""
    meta = {"a/b c%": 1, "": 2, "..": 3, "é": 4}
    _fs.write_meta_dict(str(tmp_path), meta)
    text = (tmp_path / "meta.json").read_text()
    assert '"a/b c%": 1' in text and '"": 2' in text and '"..": 3' in text
    assert "%2F" not in text and "%20" not in text
    assert json.loads(text) == meta == fmt.read_meta(str(tmp_path))[0]


def test_write_meta_dict_reproduces_reference_bytes(tmp_path):
    """Rewriting the reference's meta.json files gives the same bytes the reference wrote."""
    for case in ("basic", "nested_tensor", "lazy_stacked", "robust_keys", "non_tensor/name"):
        source = (REFERENCE / case / "meta.json").read_bytes()
        target = tmp_path / case.replace("/", "_")
        target.mkdir()
        _fs.write_meta_dict(str(target), json.loads(source))
        assert (target / "meta.json").read_bytes() == source, case


def test_write_meta_replaces_and_returns_stat_of_new_file(tmp_path):
    """A write replaces meta.json, leaves no temporary file behind, and returns the new file's stat
    (same inode and size as os.stat, and as read_meta's)."""
    _fs.write_meta_dict(str(tmp_path), {"old": 1})
    old = os.stat(tmp_path / "meta.json")
    stat = _fs.write_meta_dict(str(tmp_path), {"new": [1, 2, 3]})
    assert (tmp_path / "meta.json").read_text() == '{"new": [1, 2, 3]}'
    assert os.listdir(tmp_path) == ["meta.json"]
    disk = os.stat(tmp_path / "meta.json")
    assert isinstance(stat, os.stat_result)
    assert (stat.st_ino, stat.st_dev, stat.st_size) == (disk.st_ino, disk.st_dev, disk.st_size)
    assert _fs.same_file(stat, disk) and _fs.same_file(stat, fmt.read_meta(str(tmp_path))[1])
    assert not _fs.same_file(old, disk)


def _fail_second_write(folder, monkeypatch, name):
    """Writes {"old": 1}, then a second write with ``os.<name>`` raising; returns after the error."""
    _fs.write_meta_dict(str(folder), {"old": 1})

    def boom(*args, **kwargs):
        raise OSError(f"simulated failure of os.{name}")

    monkeypatch.setattr(os, name, boom)
    with pytest.raises(OSError, match="simulated"):
        _fs.write_meta_dict(str(folder), {"new": 2})
    monkeypatch.undo()


@pytest.mark.parametrize("name", ["replace", "fstat"])
def test_write_meta_failed_write_keeps_old_meta(tmp_path, monkeypatch, name):
    """When the write fails midway (before or at the rename), the old meta.json is unchanged;
    a failure before the rename also removes the temporary file."""
    _fail_second_write(tmp_path, monkeypatch, name)
    assert (tmp_path / "meta.json").read_text() == '{"old": 1}'
    assert fmt.read_meta(str(tmp_path))[0] == {"old": 1}
    if name == "fstat":
        assert _tmp_files(tmp_path) == []


def test_write_meta_failed_replace_leaves_no_temporary(tmp_path, monkeypatch):
    """When the rename fails, the temporary file is removed too."""
    _fail_second_write(tmp_path, monkeypatch, "replace")
    assert _tmp_files(tmp_path) == []


def test_write_meta_replaces_a_symlink_not_its_target(tmp_path):
    """A meta.json symlink is replaced by a regular file; the file it pointed to is untouched."""
    target = tmp_path / "outside.json"
    target.write_text('{"keep": 1}')
    (tmp_path / "level").mkdir()
    (tmp_path / "level" / "meta.json").symlink_to(target)
    _fs.write_meta_dict(str(tmp_path / "level"), {"new": 2})
    assert not (tmp_path / "level" / "meta.json").is_symlink()
    assert (tmp_path / "level" / "meta.json").read_text() == '{"new": 2}'
    assert target.read_text() == '{"keep": 1}'


# ---------------------------------------------------------------------- locked
def test_locked_is_exclusive_across_processes(tmp_path):
    """locked() creates meta%lock (only); while held another process cannot take it, after it can."""
    with _fs.locked(str(tmp_path)):
        assert (tmp_path / fmt.LOCK_FILE).is_file()
        assert not _child_can_lock(tmp_path / fmt.LOCK_FILE)
    assert _child_can_lock(tmp_path / fmt.LOCK_FILE)
    assert os.listdir(tmp_path) == [fmt.LOCK_FILE]


def test_locked_released_on_exception(tmp_path):
    """An exception inside the block releases the lock and propagates."""
    with pytest.raises(RuntimeError, match="inside"):
        with _fs.locked(str(tmp_path)):
            raise RuntimeError("inside")
    assert _child_can_lock(tmp_path / fmt.LOCK_FILE)


def test_locked_refuses_symlinked_lock_file(tmp_path):
    """A lock file that is a symbolic link is not followed (its target is not created)."""
    (tmp_path / "level").mkdir()
    (tmp_path / "level" / fmt.LOCK_FILE).symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        with _fs.locked(str(tmp_path / "level")):
            pass
    assert not (tmp_path / "target").exists()


# ---------------------------------------------------------------------- temporaries, exchange
def test_temporary_name_is_beside_the_path_and_names_this_writer(tmp_path):
    """A temporary name lies in the folder of the path, carries this host's tag and pid, and is
    one of the format's own names (never an entry's); two calls give two names."""
    first = _fs.temporary_name(str(tmp_path / ("k" * 300 + ".memmap")))
    second = _fs.temporary_name(str(tmp_path / "x"))
    assert os.path.dirname(first) == str(tmp_path) and first != second
    name = os.path.basename(first)
    assert name.startswith(f"{fmt.DATA_TMP_PREFIX}{_fs.HOST_TAG}.{os.getpid()}.")
    assert fmt.is_own_file(name) and len(name) < 64
    assert _fs.stale_temporaries(str(tmp_path)) == []  # not created, and this writer lives


def test_exchange_swaps_two_folders_or_says_it_cannot(tmp_path):
    """Where the file system can exchange, the two folders trade places with their content (and a
    missing one raises FileNotFoundError naming it); where it cannot, exchange raises OSError and
    both folders stay as they were."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "from_a").write_text("a")
    (tmp_path / "b").mkdir()
    if _fs.can_exchange(str(tmp_path)):
        _fs.exchange(str(tmp_path / "a"), str(tmp_path / "b"))
        assert os.listdir(tmp_path / "b") == ["from_a"] and os.listdir(tmp_path / "a") == []
        with pytest.raises(FileNotFoundError, match="nowhere"):
            _fs.exchange(str(tmp_path / "a"), str(tmp_path / "nowhere"))
    else:
        with pytest.raises(OSError):
            _fs.exchange(str(tmp_path / "a"), str(tmp_path / "b"))
        assert os.listdir(tmp_path / "a") == ["from_a"]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]  # the probe left nothing behind
