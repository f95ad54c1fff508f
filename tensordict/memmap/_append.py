"""Appending rows to a saved tree in one step (``tensordict.append_memmap``).

Every leaf of a saved tree grows along the first batch dimension, and so do the
batch sizes of its levels: no one file can say that all of them did. So the grown
tree is built whole beside the folder, under the format's temporary name, and
exchanged with it in one step (Linux ``renameat2``), as ``memmap(prefix)`` puts a
new tree in place:

* each tensor file of the new tree is the old file's bytes (copied in the kernel)
  followed by the new rows; every other file is hard-linked (a non-tensor value's
  folder, the writer's claim, files the format does not record), so nothing else
  is copied;
* each level's ``meta.json`` is written with the grown shapes, children first;
* the two folders are exchanged under the root's lock, and the old tree is removed.

Killed at any moment, the folder holds the old rows or the new ones, whole (a dead
writer's staging folder is removed by the next writer beside it). A reader loading
during the append sees the old tree or the new one: the loader notices that the
folder was exchanged while it read and reads it again (see
:func:`tensordict.memmap._io.load_tree`). The price is that an append writes the
old rows again (an in-kernel copy), so its cost grows with the saved size.

The rows are read through the hooks the storage layer already uses (``_tensordict_of``,
``_items_level``, ``_memmap_record_type``, the class flags): this module imports no
tensordict class.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import shutil
import stat as _stat
from typing import Any

import torch

from tensordict._collection import is_non_tensor
from tensordict.errors import AppendError, MemmapFormatError, MemmapNotFoundError
from tensordict.memmap import _fs, _io
from tensordict.memmap import format as fmt


class _Level:
    """What one level of the grown tree needs: its new ``meta.json`` and its grown tensor files."""

    __slots__ = ("meta", "tensors")

    def __init__(self, meta: dict) -> None:
        self.meta = meta
        self.tensors: dict = {}  # file name -> the new rows' tensor (contiguous, on the CPU)


def append_rows(prefix: str | os.PathLike, rows: Any, *, allow_pickle: bool | None = None) -> None:
    """Appends ``rows`` to the tree saved in the folder ``prefix``, in one step (see the module docstring).

    Args:
        prefix (str or path): the folder.
        rows: the tensordict or tensorclass instance whose rows are appended.

    Keyword Args:
        allow_pickle (bool, optional): unpickle the saved non-tensor values that are
            pickled, to compare them with those of ``rows``. ``None`` is False.

    Raises:
        AppendError: if ``rows`` cannot be appended (naming the key and why), the tree
            holds a level that cannot grow, or the folder cannot be exchanged.
        MemmapNotFoundError: if ``prefix`` holds no saved tree.
    """
    folder = os.path.abspath(os.fspath(prefix))
    if os.path.isfile(folder):
        msg = (
            f"cannot append to {folder!r}: it is a file (an archive cannot grow); unpack it with "
            "unpack_memmap(), append to the folder, and pack it again"
        )
        raise AppendError(msg)
    if os.path.islink(folder):
        msg = f"refusing to append to {folder!r}: it is a symbolic link"
        raise AppendError(msg)
    meta, _ = fmt.read_meta(folder)
    parent = os.path.dirname(folder)
    if os.path.ismount(folder) or _io.holds_cwd(folder) or not _fs.can_exchange(parent):
        msg = (
            f"cannot append to {folder!r} in one step: it is a mount point, holds the working "
            "directory, or its file system cannot exchange two folders (renameat2); write the "
            "whole tree again with memmap() instead"
        )
        raise AppendError(msg)
    with _fs.locked(folder):  # one appender at a time; a claimed tree refuses other writers
        meta, _ = fmt.read_meta(folder)
        count = _row_count(folder, meta, rows)
        levels: dict = {}
        _plan_level(folder, "", meta, rows, count, levels, bool(allow_pickle))
        if count == 0:
            return
        _fs.remove_stale_temporaries(parent)
        stage = _fs.temporary_name(folder + ".")
        os.mkdir(stage)
        try:
            info = os.stat(folder)  # the grown tree's folder keeps the old one's mode and group
            with contextlib.suppress(OSError):
                os.chown(stage, -1, info.st_gid)
            os.chmod(stage, _stat.S_IMODE(info.st_mode))
            _build(folder, stage, "", levels)
            _fs.exchange(stage, folder)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
    shutil.rmtree(stage, ignore_errors=True)  # the old tree, now at the staging name


# ---------------------------------------------------------------------- checking
def _fail(where: str, what: str) -> AppendError:
    return AppendError(f"cannot append to {where!r}: {what}")


def _row_count(folder: str, meta: dict, rows) -> int:
    """The number of rows of ``rows``, checked against the saved root's batch size."""
    kind = fmt.level_kind(folder, meta)
    if kind == fmt.KIND_TENSORCLASS:
        meta, _ = fmt.read_meta(os.path.join(folder, fmt.TENSORCLASS_DATA))
    elif kind != fmt.KIND_TD:
        raise _fail(folder, f"it holds a {kind}, which cannot grow")
    shape = meta.get("shape")
    if not isinstance(shape, list) or not shape:
        raise _fail(folder, "its batch size has no dimension to append along")
    size = getattr(rows, "batch_size", None)
    if size is None or not len(size):
        msg = f"the rows must have a batch dimension, got a {type(rows).__name__}"
        raise _fail(folder, msg)
    return size[0]


def _plan_level(folder: str, rel: str, meta: dict, rows, count: int, levels: dict, pickles):
    """Checks ``rows`` against the saved level in ``folder`` and records its grown ``meta.json``."""
    kind = fmt.level_kind(folder, meta)
    if kind == fmt.KIND_TENSORCLASS:
        if str(type(rows)) != meta.get("_type"):
            raise _fail(folder, f"it holds a {meta.get('_type')}, the rows are a {type(rows)}")
        inner = os.path.join(folder, fmt.TENSORCLASS_DATA)
        inner_meta, _ = fmt.read_meta(inner)
        _plan_level(
            inner,
            _rel(rel, fmt.TENSORCLASS_DATA),
            inner_meta,
            rows._tensordict_of(),
            count,
            levels,
            pickles,
        )
        return
    if kind != fmt.KIND_TD:
        raise _fail(folder, f"it holds a {kind}, which cannot grow")
    if rows._memmap_record_type() != fmt.KIND_TD or getattr(type(rows), "_is_lazy", False):
        raise _fail(folder, f"it holds a TensorDict, the rows are a {type(rows).__name__}")
    batch_size, _ = fmt.parse_td_level(folder, meta)
    if not batch_size:
        raise _fail(folder, "its batch size has no dimension to append along")
    size = rows.batch_size
    if len(size) != len(batch_size) or size[0] != count or size[1:] != batch_size[1:]:
        msg = (
            f"the rows' batch size {list(size)} must be the saved one {list(batch_size)} but "
            f"for its first dimension ({count} rows)"
        )
        raise _fail(folder, msg)
    new = dict(meta)
    new["shape"] = [batch_size[0] + count, *batch_size[1:]]
    level = levels[rel] = _Level(new)
    items = dict(rows._tensordict_of()._items_level())
    recorded = dict(fmt.entries(meta))
    if set(items) != set(recorded):
        missing = sorted(set(recorded) - set(items))
        extra = sorted(set(items) - set(recorded))
        raise _fail(folder, f"the rows lack the entries {missing} and add {extra}")
    for key, record in recorded.items():
        sub = fmt.parse_record(folder, key, record)
        value = items[key]
        if sub is None:
            _plan_tensor(folder, key, record, value, count, level)
        elif sub in ("NonTensorData", "MetaData"):
            _check_value(folder, key, value, pickles)
        elif sub == fmt.KIND_NONTENSOR_STACK:
            raise _fail(folder, f"the entry {key!r} is a NonTensorStack, which cannot grow")
        else:
            _plan_sub(folder, rel, key, sub, value, count, levels, pickles)


def _plan_tensor(folder: str, key: str, record: dict, value, count: int, level: _Level) -> None:
    dtype, shape, nested = fmt.parse_tensor_record(folder, key, record)
    if nested:
        raise _fail(folder, f"the entry {key!r} is a nested tensor, which cannot grow")
    if not isinstance(value, torch.Tensor) or value.is_nested:
        raise _fail(folder, f"the entry {key!r} is a tensor, the rows' is a {type(value).__name__}")
    if value.dtype != dtype or value.shape[1:] != shape[1:]:
        msg = (
            f"the entry {key!r} is {list(shape)} of {dtype}, the rows' is "
            f"{list(value.shape)} of {value.dtype} (all but the first dimension must agree)"
        )
        raise _fail(folder, msg)
    path = fmt.entry_path(folder, key, fmt.MEMMAP_SUFFIX, None)
    if os.path.lexists(path) and os.lstat(path).st_size != fmt.nbytes(shape, dtype):
        msg = f"the file {path!r} of {key!r} does not hold the {fmt.nbytes(shape, dtype)} bytes its record needs"
        raise MemmapFormatError(msg)
    level.meta[key] = {**record, "shape": [shape[0] + count, *shape[1:]]}
    level.tensors[os.path.basename(path)] = value.detach().to("cpu").contiguous()


def _check_value(folder: str, key: str, value, pickles: bool) -> None:
    """Refuses rows whose non-tensor value ``key`` differs from the saved one."""
    if not is_non_tensor(value):
        raise _fail(folder, f"the entry {key!r} is a non-tensor value, the rows' is not")
    path = fmt.entry_path(folder, key, "", None)
    try:
        meta, _ = fmt.read_meta(path)
    except MemmapNotFoundError:
        return  # a missing folder: the entry is dropped on load, and stays so
    how, saved = fmt.parse_nontensor(path, meta)
    if how == "pickle":
        if not pickles:
            msg = (
                f"the saved value of {key!r} is pickled, and comparing it with the rows' needs "
                "allow_pickle=True (only for folders you trust)"
            )
            raise _fail(folder, msg)
        with open(saved, "rb") as handle:
            saved = pickle.load(handle)["data"]  # noqa: S301 - the caller allowed it
    if value._memmap_record == fmt.KIND_NONTENSOR_STACK:  # nested lists, one per batch dim
        values = value.tolist()
        for _ in range(len(value.batch_size) - 1):
            values = [v for row in values for v in row]
    else:  # one value for every row
        values = [value.data]
    if any(v != saved for v in values):
        msg = f"the non-tensor entry {key!r} holds {saved!r}; the rows must hold that value"
        raise _fail(folder, msg)


def _plan_sub(folder, rel, key, sub, value, count, levels, pickles) -> None:
    if is_non_tensor(value) or isinstance(value, torch.Tensor):
        raise _fail(folder, f"the entry {key!r} is a {sub}, the rows' is a {type(value).__name__}")
    if value._memmap_record_type() != sub:
        msg = f"the entry {key!r} is a {sub}, the rows' is a {value._memmap_record_type()}"
        raise _fail(folder, msg)
    path = fmt.entry_path(folder, key, "", None)
    try:
        meta, _ = fmt.read_meta(path)
    except MemmapNotFoundError:
        return  # a missing folder: the entry is dropped on load, and stays so
    _plan_level(path, _rel(rel, os.path.basename(path)), meta, value, count, levels, pickles)


def _rel(rel: str, name: str) -> str:
    return os.path.join(rel, name) if rel else name


# ---------------------------------------------------------------------- building
def _build(old: str, new: str, rel: str, levels: dict) -> None:
    """Fills the staging folder ``new`` with the grown copy of the folder ``old`` (children first)."""
    level = levels.get(rel)
    for name in sorted(os.listdir(old)):
        source, target = os.path.join(old, name), os.path.join(new, name)
        if name == fmt.LOCK_FILE or name.startswith((fmt.TMP_PREFIX, fmt.DATA_TMP_PREFIX)):
            continue
        if level is not None and name == fmt.META_FILE:
            continue  # written last, grown
        if level is not None and name in level.tensors:
            _grow(source, target, level.tensors[name])
            continue
        info = os.lstat(source)
        if _stat.S_ISDIR(info.st_mode):
            os.mkdir(target)
            os.chmod(target, _stat.S_IMODE(info.st_mode))
            _build(source, target, _rel(rel, name), levels)
        elif _stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(source), target)
        elif _stat.S_ISREG(info.st_mode):
            _link(source, target)
        else:
            msg = f"{source!r} is neither a file nor a folder; it cannot be carried into the grown tree"
            raise _fail(old, msg)
    if level is not None:
        for name, rows in level.tensors.items():  # leaves whose old file was empty: none kept
            target = os.path.join(new, name)
            if not os.path.lexists(target) and rows.numel():
                _grow(None, target, rows)
        _fs.write_meta_dict(new, level.meta)


def _link(source: str, target: str) -> None:
    """Hard-links ``source`` to ``target`` (a copy where the file system has no hard links)."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        shutil.copy2(source, target, follow_symlinks=False)


def _grow(source: str | None, target: str, rows: torch.Tensor) -> None:
    """Writes ``target``: the bytes of ``source`` (none when ``None``), then those of ``rows``."""
    mode = 0o644 if source is None else _stat.S_IMODE(os.stat(source).st_mode)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        if source is not None:
            with open(source, "rb") as handle:
                _copy(handle.fileno(), fd, os.fstat(handle.fileno()).st_size)
        if rows.numel():
            view = memoryview(rows.view(-1).view(torch.uint8).numpy())
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _copy(src: int, dst: int, size: int) -> None:
    """Copies ``size`` bytes from ``src`` to ``dst`` in the kernel (``copy_file_range``, else ``sendfile``)."""
    left = size
    with contextlib.suppress(OSError, AttributeError):
        while left:
            done = os.copy_file_range(src, dst, left)
            if done == 0:
                break
            left -= done
    while left:  # a file system without copy_file_range
        done = os.sendfile(dst, src, size - left, left)
        if done == 0:
            msg = f"the file being grown ended {left} bytes early"
            raise OSError(errno.EIO, msg)
        left -= done
