"""The tree engine: writing, loading and refreshing memory-mapped trees (format v1, see ``format``).

The engine knows no tensordict class. A class takes part through the hooks
below, which every memory-mappable class defines (``TensorDictBase`` declares
them; a tensorclass defines them too), and through a loader registered in
:data:`LOADERS` under the ``"_class"`` or ``"_type"`` string its folders carry.
Entries of a *dense level* (one folder, one ``meta.json`` record per entry, the
layout of a TensorDict) are handled here, by the functions that take
``items`` (``(key, value)`` pairs): a class whose levels are dense calls them
from its hooks.

Hooks (``obj`` is a tensordict, a lazy stack or a tensorclass instance):

* ``obj._memmap_plan(folder, plan, robust_key, existsok, like)``: adds what
  writing ``obj`` into ``folder`` (``None``: shared memory) needs to ``plan``,
  refusing bad keys before anything is written;
* ``obj._memmap_rebuild(folder, replacement, inplace, robust_key)``: ``obj`` with
  each tensor replaced by ``replacement[id(tensor)]``, and its :class:`Level` set;
* ``obj._memmap_write_meta(folder, robust_key)``: writes the ``meta.json`` files
  of ``obj``'s levels into ``folder``, children first (``folder`` is the staging
  folder while a new tree is built, not the levels' own);
* ``obj._memmap_refresh(options)``: re-reads ``obj``'s folder in place;
* ``obj._memmap_refresh_from(meta, stat, options)``: the same from a parsed
  ``meta.json``; returns False, changing nothing, when the folder now holds
  another class (the caller then loads it afresh).

Every memory-mapped level carries a :class:`Level` as ``obj._mm``: its folder (or
``None`` for anonymous shared memory), the parsed ``meta.json`` as last read or
written, its serialised members (so that adding an entry re-serialises one
record, not the whole file), and the ``stat`` of that ``meta.json`` (so that a
refresh skips every level whose file did not change).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import stat as _stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch

from tensordict._collection import TensorCollection, is_non_tensor
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict._typing import DeviceType
from tensordict.errors import (
    EntryExistsError,
    ExistingFileError,
    InvalidArgumentError,
    MappedElsewhereError,
    MappingLimitError,
    MemmapFormatError,
    MemmapNotFoundError,
    NotAFolderError,
    PickleRefusedError,
    ReadOnlyMemmapError,
    SymlinkError,
)
from tensordict.memmap import _fs, _ondemand
from tensordict.memmap import format as fmt
from tensordict.memmap._ondemand import LazyEntries
from tensordict.memmap.tensor import MemoryMappedTensor, _open_file

_Tensor = torch.Tensor

# "_class" or "_type" string -> loader(folder, meta, stat, options) returning the loaded
# object; filled in by the modules that define the classes (TensorDict, lazy stacks, and
# each tensorclass as it is decorated).
LOADERS: dict = {}


class Level:
    """Memory-mapping state of one tensordict level (``obj._mm``).

    ``meta`` is the level's ``meta.json`` as last read or written, ``stat`` that file's
    ``os.stat`` (a writer re-reads the file only when its stat changed since),
    ``inodes`` the inode of each tensor's file as mapped (and, for a non-tensor entry,
    the ``(inode, mtime, size)`` of its folder's ``meta.json``), and ``view`` the
    records this tensordict itself loaded or wrote: ``None`` while they are exactly
    ``meta``'s entries, set aside when a re-read brings in other writers' records.
    """

    __slots__ = (
        "path",
        "meta",
        "text",
        "stat",
        "robust_key",
        "taken",
        "inodes",
        "view",
        "clean",
        "mode",
    )

    def __init__(
        self,
        path: str | None,
        meta: dict | None = None,
        stat: os.stat_result | None = None,
        robust_key: bool | None = None,
        inodes: dict | None = None,
        loaded: Mapping | None = None,
        mode: str | None = None,
    ) -> None:
        self.path = path
        self.mode = mode  # "r": loaded read-only, its folder is never changed through it
        self.meta = {} if meta is None else meta
        self.text: str | None = None
        self.taken: dict | None = None  # file name -> key, built on the first added entry
        self.inodes: dict = {} if inodes is None else inodes  # key -> inode mapped at load
        self.stat = stat
        self.robust_key = robust_key
        self.view: dict | None = None
        self.clean = False  # dead writers' temporary files removed (once per level)
        if type(loaded) is LazyEntries:
            loaded.level = self  # it notes entries it drops, and homes non-tensor values
        if loaded is not None and meta:
            # Entries dropped at load (a missing file) were never this tensordict's to delete.
            fields = sum(
                1 for field in fmt.FIELD_NAMES if field in meta and fmt.is_field(field, meta[field])
            )
            if len(meta) - fields != len(loaded):
                self.view = {k: v for k, v in meta.items() if k in loaded}

    def __getstate__(self):
        return {
            "path": self.path,
            "meta": self.meta,
            "robust_key": self.robust_key,
            "mode": self.mode,
        }

    def __setstate__(self, state) -> None:
        self.__init__(
            state["path"], state["meta"], None, state["robust_key"], mode=state.get("mode")
        )

    def body(self) -> str:
        """The members of meta.json, serialised and joined (cached until a key is replaced)."""
        if self.text is None:
            self.text = ", ".join(fmt.dumps_record(k, v) for k, v in self.meta.items())
        return self.text

    def write(self, meta: dict, where: str | None = None) -> None:
        """Replaces this level's ``meta.json`` with ``meta`` (atomically) and remembers it.

        ``where`` is the folder to write it in when the level is being staged there
        (see :func:`write_tree`); it defaults to the level's own folder.
        """
        self.meta = meta
        self.text = None
        self.view = None
        self.stat = _fs.write_meta(self.path if where is None else where, [self.body()])

    def ours(self) -> dict:
        """The records this tensordict loaded or wrote (not other writers' it re-read since)."""
        if self.view is None:
            return dict(fmt.entries(self.meta))
        return self.view

    def check_writable(self, what: str) -> None:
        """Refuses a change of the folder of a level loaded with ``mode="r"``.

        Raises:
            ReadOnlyMemmapError: naming ``what`` and the folder.
        """
        if self.mode == "r":
            msg = (
                f"{what} cannot change {self.path!r}: it was loaded with mode='r' (read-only); "
                "load it without mode='r' to write to it"
            )
            raise ReadOnlyMemmapError(msg)

    @contextlib.contextmanager
    def _locked(self):
        """The folder's lock; the first time, dead writers' temporary files are removed."""
        self.check_writable("this tensordict")
        with _fs.locked(self.path):
            if not self.clean:
                _fs.remove_stale_temporaries(self.path)
                self.clean = True
            yield

    def add(self, key: str, record: dict, renames: Iterable[tuple[str, str]] = ()) -> None:
        """Records a new entry under the folder lock, first moving its files into place.

        ``renames`` are ``(temporary, final)`` paths: the entry's files, written under
        temporary names so that no file another writer recorded is ever replaced.
        They are renamed only after ``meta.json`` (re-read if another writer changed it)
        was checked not to record ``key`` already.

        Raises:
            EntryExistsError: if another writer recorded ``key`` meanwhile; its files
                are left alone (the temporary files are the caller's to remove).
        """
        ours = key in (self.meta if self.view is None else self.view)  # ours: replaced on purpose
        with self._locked():
            self._check_not_taken(key, ours)
            for temporary, final in renames:
                os.replace(temporary, final)
            if renames:
                with contextlib.suppress(OSError):
                    self.inodes[key] = os.stat(renames[0][1]).st_ino
            self._apply({key: record})

    def add_level(self, key: str, record: dict, create: Callable[[], object]) -> dict | None:
        """Records the new sub-level ``key``, made by ``create()``, unless another writer recorded ``key``.

        Under the folder lock, after re-reading ``meta.json``: when ``key`` is not
        recorded, ``create()`` writes the sub-level's folder and ``meta.json`` and the
        level is recorded, both before another writer can look; otherwise nothing is
        written and the record another writer made is returned, for the caller to adopt
        the level it names or to refuse it.

        Returns:
            None when the level was created and recorded here, else the record found.
        """
        with self._locked():
            self._reread()
            found = self.meta.get(key)
            if found is not None and not fmt.is_field(key, found):
                return found
            create()
            self._apply({key: record})
        return None

    def claim(self, key: str) -> None:
        """Refuses, before anything is written, a key another writer recorded meanwhile.

        Raises:
            EntryExistsError: naming the key and the folder.
        """
        ours = key in (self.meta if self.view is None else self.view)
        with self._locked():
            self._check_not_taken(key, ours)

    def _check_not_taken(self, key: str, ours: bool) -> None:
        self._reread()
        if key in self.meta and not ours:
            msg = (
                f"cannot add {key!r} in {self.path!r}: another writer added it meanwhile "
                "(refresh with memmap_refresh_() to see it); its files were left alone"
            )
            raise EntryExistsError(msg)

    def update(self, changes: dict) -> None:
        """Applies ``{key: record or None}`` to this level's meta.json under the folder lock.

        When another writer changed the file since we last read or wrote it, it is read
        again first, so that no writer loses another's records. A new key is appended
        to the cached serialised text, so adding an entry does not re-serialise the others.
        """
        with self._locked():
            self._reread()
            self._apply(changes)

    def forget(self, keys: Iterable[str]) -> list:
        """Removes the records (and tensor files) of ``keys``, entries this tensordict deleted.

        Under the folder lock, after re-reading ``meta.json``: a record is removed only
        when it is still the one this tensordict loaded or wrote, and a tensor's file
        only when it is still the file it mapped, so that an entry another writer
        recorded under the key meanwhile stays; a non-tensor value's folder likewise
        goes only while it holds the value this tensordict loaded or wrote. Folders of
        sub-tensordicts are left on disk (another writer may be adding to them); their
        records go.

        Returns:
            The keys whose records were removed.
        """
        with self._locked():
            self._reread()
            mine = self.ours()
            gone = [k for k in keys if k in self.meta and self.meta[k] == mine.get(k)]
            files = []
            folders = []
            for key in gone:
                record = self.meta[key]
                if type(record) is dict and record.get("type") in _NONTENSOR_RECORDS:
                    path = fmt.entry_path(self.path, key, "", self.robust_key)
                    with contextlib.suppress(OSError, ValueError):
                        mark = nontensor_mark(fmt.read_meta_bytes(path)[1])
                        if mark == self.inodes.get(key):
                            folders.append(path)  # a value: nobody adds inside it
                elif type(record) is dict and "type" not in record and key in self.inodes:
                    path = fmt.entry_path(self.path, key, fmt.MEMMAP_SUFFIX, self.robust_key)
                    if _inode(path) == self.inodes[key]:
                        files.append(path)
                        if record.get("is_nested"):
                            files.append(
                                fmt.entry_path(self.path, key, fmt.SHAPE_SUFFIX, self.robust_key)
                            )
            if gone:
                self._apply(dict.fromkeys(gone))
            for path in files:  # after meta.json no longer records them
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            for path in folders:
                shutil.rmtree(path, ignore_errors=True)
            for key in gone:
                self.inodes.pop(key, None)
        return gone

    def _reread(self) -> None:
        """Re-reads ``meta.json`` when another writer changed it (the lock is held).

        Writers append a new entry's member to the serialised text they last wrote, so
        when the file starts with this level's own text, only the members after it are
        parsed: a writer adding entries beside others does not parse the whole file.
        """
        try:
            current = os.stat(fmt.meta_path(self.path))
        except FileNotFoundError:
            current = None
        if _fs.same_file(current, self.stat):
            return
        if current is None:
            self.text = None
            return
        raw, stat = fmt.read_meta_bytes(self.path)
        if self.view is None:
            self.view = self.ours()
        added = self._appended(raw)
        if added is None:
            self.meta = fmt.parse_meta(fmt.meta_path(self.path), raw)
            self.text = None
        else:
            self.meta.update(added)
            self.text = raw[1:-1].decode()
        self.stat = stat

    def _appended(self, raw: bytes) -> dict | None:
        """The members ``raw`` holds after this level's own text, or None if it does not start with it."""
        if not self.text:
            return None
        head = b"{" + self.text.encode()
        if not raw.startswith(head) or not raw.endswith(b"}"):
            return None
        rest = raw[len(head) : -1]
        if not rest:
            return {}
        if not rest.startswith(b", "):
            return None
        try:
            added = json.loads(b"{" + rest[2:] + b"}")
        except (ValueError, RecursionError):
            return None
        return added if type(added) is dict else None

    def _apply(self, changes: dict) -> None:
        """Writes ``changes`` into ``meta.json`` (the lock is held, the meta up to date)."""
        view = self.view
        for key, record in changes.items():
            if record is None or key in self.meta:
                self.text = None
            if record is None:
                self.meta.pop(key, None)
                if view is not None:
                    view.pop(key, None)
                continue
            self.meta[key] = record
            if view is not None:
                view[key] = record
            if self.text is not None:
                member = fmt.dumps_record(key, record)
                self.text = f"{self.text}, {member}" if self.text else member
        self.stat = _fs.write_meta(self.path, [self.body()])


_NONTENSOR_RECORDS = ("NonTensorData", "MetaData", "NonTensorStack")


def _inode(path: str):
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


class Options:
    """What a load or refresh was asked for: key encoding, unpickling, device, mapping mode; and how deep it is.

    ``mode`` is ``None`` (each file shared when this process may write it, else
    copy-on-write), ``"r"`` (every file copy-on-write, and the levels refuse to change
    their folders) or ``"r+"`` (every file shared; a read-only file raises). ``lazy``:
    TensorDict levels are opened with :class:`~tensordict.memmap._ondemand.LazyEntries`.
    """

    __slots__ = ("robust_key", "allow_pickle", "device", "depth", "mode", "lazy")

    def __init__(
        self,
        robust_key: bool | None = None,
        allow_pickle: bool = False,
        device: DeviceType | None = None,
        mode: str | None = None,
        lazy: bool = False,
    ) -> None:
        if allow_pickle is not None and type(allow_pickle) is not bool:
            msg = f"allow_pickle must be a bool or None, got {allow_pickle!r} ({type(allow_pickle).__name__})"
            raise TypeError(msg)
        self.robust_key = robust_key
        self.allow_pickle = bool(allow_pickle)
        self.device = device
        self.mode = mode
        self.lazy = lazy
        self.depth = 0  # folders being loaded, root included


def _is_mapped_collection(value) -> bool:
    """True for a sub-tensordict (not a tensor, not a non-tensor entry) that is memory-mapped."""
    return (
        value is not None
        and not isinstance(value, _Tensor)
        and not is_non_tensor(value)
        and value._mm is not None
    )


# ====================================================================== writing
class Plan:
    """What writing one tree will do, checked in full before anything touches the disk."""

    def __init__(self, copy_existing: bool = True) -> None:
        self.copy_existing = copy_existing  # False: a leaf with a file elsewhere is refused
        self.folders: list = []  # (folder, obj), children first
        self.tensors: list = []  # (path, tensor, shape_path)
        self.nontensors: list = []  # (folder, value)
        self.depth = 0  # dense levels being planned


def _too_deep(folder) -> MemmapFormatError:
    msg = (
        f"{folder!r} is nested more than {fmt.MAX_DEPTH} levels deep; the format refuses deeper "
        "trees (flatten some keys with flatten_keys())"
    )
    return MemmapFormatError(msg)


def entry_kind(value: object) -> str:
    """``"tensor"``, ``"nested"`` or ``"folder"``: the names an entry occupies (see format)."""
    if isinstance(value, _Tensor):
        return "nested" if value.is_nested else "tensor"
    return "folder"


def plan_entries(
    obj: TensorCollection,
    items: Iterable[tuple[str, object]],
    folder: str | None,
    plan: Plan,
    robust_key: bool | None,
    existsok: bool,
    like: bool,
    names: Sequence[str | None] | None = None,
) -> None:
    """Plans the entries of one dense level ``obj`` (its ``items``) into ``folder``.

    ``names`` are the level's names of batch dimensions (written as its ``"_names"``
    field), so that an entry of that name is refused.
    """
    items = list(items)
    if plan.depth >= fmt.MAX_DEPTH:
        raise _too_deep(folder)
    plan.depth += 1
    if folder is not None:
        fmt.check_level_keys(
            folder,
            {k: entry_kind(v) for k, v in items},
            robust_key,
            named=names is not None and any(n is not None for n in names),
        )
    for key, value in items:
        if isinstance(value, _Tensor):
            if value.device.type == "meta":
                msg = (
                    f"cannot memory-map the entry {key!r}: it is on the meta device and has no data"
                )
                raise ValueError(msg)
            if folder is None:
                plan.tensors.append((None, value, None))
                continue
            path = os.path.join(folder, fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key))
            shape_path = None
            if value.is_nested:
                shape_path = os.path.join(folder, fmt.file_name(key, fmt.SHAPE_SUFFIX, robust_key))
            if not (like or plan.copy_existing):
                _check_not_elsewhere(key, value, path)
            if not existsok and not is_file_of(value, path) and os.path.lexists(path):
                msg = f"cannot memory-map the entry {key!r}: {path!r} already exists and existsok=False"
                raise ExistingFileError(msg)
            plan.tensors.append((path, value, shape_path))
        elif is_non_tensor(value):
            if folder is not None:
                plan.nontensors.append(
                    (os.path.join(folder, fmt.file_name(key, "", robust_key)), value)
                )
        else:
            sub = sub_folder(folder, key, robust_key)
            value._memmap_plan(sub, plan, robust_key, existsok, like)
    plan.depth -= 1
    plan.folders.append((folder, obj))


def _check_not_elsewhere(key, value, path: str) -> None:
    """Refuses to copy a leaf that has its own file to ``path`` unless ``copy_existing`` asks to."""
    filename = getattr(value, "_filename", None)
    if filename is None or is_file_of(value, path):
        return
    msg = (
        f"cannot memory-map the entry {key!r} to {path!r}: it already has the file "
        f"{filename!r}; pass copy_existing=True to copy it there"
    )
    raise MappedElsewhereError(msg)


def sub_folder(folder: str | None, key: str, robust_key: bool | None) -> str | None:
    """The folder of the sub-tensordict ``key`` of a level in ``folder`` (``None`` stays ``None``)."""
    return None if folder is None else os.path.join(folder, fmt.file_name(key, "", robust_key))


def rebuild_entries(
    items: Iterable[tuple[str, object]],
    folder: str | None,
    replacement: dict,
    inplace: bool,
    robust_key: bool | None,
) -> dict:
    """The entries of a dense level after writing: tensors replaced, sub-levels rebuilt."""
    data = {}
    for key, value in items:
        if isinstance(value, _Tensor):
            data[key] = replacement[id(value)].pop(0)  # one per occurrence, in plan order
        elif is_non_tensor(value):
            data[key] = value
        else:
            data[key] = value._memmap_rebuild(
                sub_folder(folder, key, robust_key), replacement, inplace, robust_key
            )
    return data


def records_of(items: Iterable[tuple[str, object]], folder: str, robust_key: bool | None) -> dict:
    """The ``meta.json`` records of a dense level's entries; sub-levels write theirs first."""
    meta = {}
    for key, value in items:
        if isinstance(value, _Tensor):
            meta[key] = fmt.tensor_record(value)
        elif is_non_tensor(value):
            meta[key] = {"type": value._memmap_record}
        else:
            meta[key] = {"type": value._memmap_record_type()}
            value._memmap_write_meta(sub_folder(folder, key, robust_key), robust_key)
    return meta


def is_file_of(value: torch.Tensor, path: str) -> bool:
    """True when ``value`` maps all of the file at ``path`` (not a view of part of it)."""
    filename = getattr(value, "_filename", None)
    if filename is None or value.is_nested:
        return False
    try:
        same = filename == path or os.path.samefile(filename, path)
        size = os.path.getsize(path)
    except OSError:
        return False
    return (
        same
        and value.storage_offset() == 0
        and value.is_contiguous()
        and size == value.numel() * value.element_size()
    )


def _recorded_names(folder: str, meta) -> set:
    """The names in ``folder`` that the level whose ``meta.json`` is ``meta`` owns (both encodings).

    ``meta`` None (no readable ``meta.json``) owns nothing. Only these names are ever
    removed when a newer tree replaces the level, so unrelated files stay.
    """
    if meta is None:
        return set()
    try:
        kind = fmt.level_kind(folder, meta)
    except ValueError:
        return set()
    if kind == fmt.KIND_LAZY:
        return {n for n in os.listdir(folder) if n.isdigit()}
    if kind == fmt.KIND_TENSORCLASS:
        return {fmt.TENSORCLASS_DATA}
    if kind != fmt.KIND_TD:  # a non-tensor value's folder
        return {fmt.PICKLE_FILE, fmt.STACK_PICKLE_FILE}
    names = set()
    for key, record in fmt.entries(meta):
        kind_of = "folder" if type(record) is dict and "type" in record else "nested"
        for robust_key in (None, False):
            try:
                names.update(fmt.entry_names(key, kind_of, robust_key))
            except ValueError:
                pass
    return names


def _read_or_none(folder: str):
    try:
        return fmt.read_meta(folder)[0]
    except (OSError, ValueError):
        return None


def _unstable(old, new) -> set:
    """The entries of the old level that cannot stay recorded while its files are replaced one by one.

    A tensor whose record changes (or a nested one: two files) would be read with the
    old record from the new file; a sub-level would be checked against the old batch
    size; a lazy stack has no one file that says how many members it has, so its
    members cannot all change in one step. They are left out of ``meta.json`` for
    that moment, so that every recorded entry loads at every moment.
    """
    if old is None or new is None or "shape" not in old or "shape" not in new:
        return set()
    same_batch = old.get("shape") == new.get("shape")
    drop = set()
    for key, record in fmt.entries(old):
        if key not in new or type(record) is not dict:
            continue
        if "type" in record:
            if not same_batch or new[key] != record or record["type"] == fmt.KIND_LAZY:
                drop.add(key)
        elif new[key] != record or record.get("is_nested"):
            drop.add(key)
    return drop


def _merge_into(stage: str, dest: str) -> None:
    """Moves the staged level ``stage`` into the existing folder ``dest``, one rename at a time.

    The way to replace a tree where folders cannot be exchanged (or must not be: a
    mount point, the working directory, a folder holding unrelated files). Holding
    ``dest``'s lock: sub-levels are merged first, then each staged file replaces its
    namesake with an atomic rename, then the staged ``meta.json`` replaces the old one,
    and only then are the names that the old ``meta.json`` recorded and the new tree
    lacks removed. Entries that cannot stay recorded meanwhile (see :func:`_unstable`)
    are first left out of the old ``meta.json``. Killed at any moment, each level
    loads (its old entries, its new ones, or a mix of the two, never a recorded entry
    whose file is missing or of another size).
    """
    if not os.path.lexists(dest):
        os.rename(stage, dest)  # a level the old tree lacks: in place in one step
        return
    with _fs.locked(dest):
        _fs.remove_stale_temporaries(dest)
        old = _read_or_none(dest)
        new = _read_or_none(stage)
        drop = _unstable(old, new)
        if drop:
            _fs.write_meta_dict(dest, {k: v for k, v in old.items() if k not in drop})
        names = [n for n in os.listdir(stage) if not fmt.is_own_file(n)]
        for name in names:
            source, target = os.path.join(stage, name), os.path.join(dest, name)
            if os.path.isdir(source) and not os.path.islink(source):
                if os.path.isdir(target) and not os.path.islink(target):
                    _merge_into(source, target)
                else:
                    os.rename(source, target)
        for name in names:
            source = os.path.join(stage, name)
            if os.path.lexists(source) and not os.path.isdir(source):
                os.replace(source, os.path.join(dest, name))
        if os.path.lexists(fmt.meta_path(stage)):
            os.replace(fmt.meta_path(stage), fmt.meta_path(dest))
        for name in _recorded_names(dest, old) - set(names):
            path = os.path.join(dest, name)
            if os.path.islink(path) or os.path.isfile(path):
                os.unlink(path)
            elif os.path.isdir(path):
                gone = _fs.temporary_name(path)  # out of the way in one step, then removed
                os.rename(path, gone)
                shutil.rmtree(gone)
    shutil.rmtree(stage, ignore_errors=True)


def _write_tensor(path: str | None, tensor: torch.Tensor, shape_path: str | None, like: bool):
    if path is None:
        if like:
            return (
                MemoryMappedTensor.zeros_like(tensor)
                if not tensor.is_nested
                else MemoryMappedTensor.from_tensor(tensor.clone().zero_())
            )
        if isinstance(tensor, MemoryMappedTensor) and tensor._filename is None:
            return tensor
        return MemoryMappedTensor.from_tensor(tensor.detach())
    if not like and is_file_of(tensor, path):
        return tensor
    if not tensor.is_nested and tensor.numel() == 0:
        if os.path.lexists(path):
            os.unlink(path)
        return MemoryMappedTensor.empty(tensor.shape, dtype=tensor.dtype)  # no file: no data
    if os.path.lexists(path):
        os.unlink(path)  # fresh storage: never hand back an earlier tensordict's bytes
    if shape_path is not None:
        if os.path.lexists(shape_path):
            os.unlink(shape_path)
        sizes = tensor._nested_tensor_size()
        MemoryMappedTensor.from_tensor(sizes.to(torch.int64), filename=shape_path)
    if like:
        if tensor.is_nested:
            return MemoryMappedTensor.from_tensor(
                tensor.detach().clone().zero_(), filename=path, copy_existing=True
            )
        return MemoryMappedTensor.zeros(tensor.shape, dtype=tensor.dtype, filename=path)
    return MemoryMappedTensor.from_tensor(tensor.detach(), filename=path, copy_existing=True)


def nontensor_mark(stat: os.stat_result) -> tuple:
    """What tells that a non-tensor entry's ``meta.json`` was rewritten since it was read."""
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def rewrite_nontensor(
    level: Level, key: str, value: TensorCollection, robust_key: bool | None
) -> bool:
    """Rewrites the non-tensor entry ``key`` of ``level`` with ``value`` when it differs on disk.

    Each file of its folder is replaced atomically (a pickle first, ``meta.json``
    last), so that the folder always holds the old value or the new one, and only
    while its ``meta.json`` is still the one this tensordict loaded or last rewrote.

    Returns:
        True when something was written.

    Raises:
        EntryExistsError: if another writer rewrote the value since it was loaded.
    """
    path = fmt.entry_path(level.path, key, "", robust_key)
    staged = _fs.temporary_name(os.path.join(level.path, fmt.META_FILE))
    write_nontensor(staged, value)
    try:
        with level._locked():
            try:
                meta, stat = fmt.read_meta(path)
            except MemmapNotFoundError:
                meta, stat = None, None
            known = level.inodes.get(key)  # None: written by this tensordict, not loaded
            if stat is not None and known is not None and nontensor_mark(stat) != known:
                msg = (
                    f"cannot rewrite the non-tensor entry {key!r} in {level.path!r}: another "
                    "writer rewrote it since it was loaded (refresh with memmap_refresh_())"
                )
                raise EntryExistsError(msg)
            new, _ = fmt.read_meta(staged)
            if meta == new and not (set(os.listdir(staged)) - {fmt.META_FILE}):
                return False
            record = {"type": value._memmap_record}
            if meta is None:
                os.rename(staged, path)
            else:
                _merge_into(staged, path)
            level.inodes[key] = nontensor_mark(os.stat(fmt.meta_path(path)))
            if level.meta.get(key) != record:
                level._reread()
                level._apply({key: record})
            return True
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def rewrite_nontensor_folder(path: str, value: TensorCollection) -> None:
    """Rewrites the folder of a non-tensor value memory-mapped on its own (the root of ``memmap()``).

    The new files are staged inside the folder and moved in one atomic rename each,
    ``meta.json`` last, so that the folder always holds the old value or the new one.
    """
    staged = _fs.temporary_name(os.path.join(path, fmt.META_FILE))
    try:
        write_nontensor(staged, value)
        _merge_into(staged, path)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def write_nontensor(folder: str, value: TensorCollection) -> None:
    """Writes the folder of a non-tensor entry: a single value, or a stack's ``_memmap_payload()``."""
    os.makedirs(folder, exist_ok=True)
    if isinstance(value, NonTensorDataBase):
        data = value.data
        pickled = not fmt.json_compatible(data)
        pickle_path = os.path.join(folder, fmt.PICKLE_FILE)
        content = {"data": data}  # the reference's layout: {"data": value}
        meta = fmt.nontensor_meta(data, pickled, value._memmap_type)
    else:
        meta, data = value._memmap_payload()
        pickled = not fmt.json_compatible(data)
        pickle_path = os.path.join(folder, fmt.STACK_PICKLE_FILE)
        content = data  # the reference's layout: the nested list of values
        meta["data"] = fmt.STACK_PICKLE_FILE if pickled else data
    if pickled:
        with open(pickle_path, "wb") as handle:
            pickle.dump(content, handle)
    elif os.path.lexists(pickle_path):
        os.unlink(pickle_path)
    _fs.write_meta_dict(folder, meta)


def write_tree(
    obj: TensorCollection,
    prefix: str | os.PathLike | None,
    *,
    like: bool,
    inplace: bool,
    num_threads: int,
    existsok: bool,
    robust_key: bool | None,
    copy_existing: bool = True,
) -> TensorCollection:
    """Memory-maps ``obj`` into ``prefix`` (or anonymous shared memory) and returns the result.

    Everything is checked first. A tree with a folder is then written whole into a
    staging folder (tensors in ``num_threads`` threads, then each level's
    ``meta.json``, children first) and put in place: beside ``prefix``, it is renamed
    to ``prefix`` or exchanged with the older tree there in one step, and the older
    tree is then removed; killed at any moment, ``prefix`` holds the old tree or the
    new one. Where folders cannot be exchanged (see :func:`_staging_folder`) the
    staging folder is inside ``prefix`` and merged in level by level
    (:func:`_merge_into`): killed at any moment, every level loads with each entry
    whole, old or new. Either way a failure leaves the old tree untouched and removes
    the staging folder. ``inplace`` swaps the leaves of ``obj`` itself; otherwise a
    new tree is returned. The result is locked. Without ``copy_existing``, a leaf
    memory-mapped in another file is refused (``MappedElsewhereError``).
    """
    folder = None if prefix is None else os.path.abspath(os.fspath(prefix))
    plan = Plan(copy_existing)
    obj._memmap_plan(folder, plan, robust_key, existsok, like)
    lean = _beyond_mappings(plan, folder, inplace)
    stage, exchange = (None, False) if folder is None else _staging_folder(folder)
    where = (lambda path: path) if stage is None else (lambda path: stage + path[len(folder) :])
    try:
        out = _write_files(obj, plan, folder, where, like, inplace, num_threads, robust_key, lean)
        if folder is not None:
            out._memmap_write_meta(where(folder), robust_key)
            if exchange:
                _put_in_place(stage, folder)
            else:
                _merge_into(stage, folder)
    except BaseException as err:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
            if isinstance(err, OSError) and err.errno is not None:
                raise _at_destination(err, folder, stage) from err
        raise
    if lean:  # every file written and released: the result opens them as they are used
        out = load_tree(folder, Options(robust_key, lazy=True), (), load_folder)
    out.lock_()
    return out


MAPPINGS_MARGIN = 1024  # mappings left free when a tree is written whole (libraries, the heap)


def _mappings_in_use() -> int:
    try:
        with open("/proc/self/maps", "rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def _beyond_mappings(plan: Plan, folder, inplace: bool) -> bool:
    """True when mapping every tensor of ``plan`` at once would pass ``vm.max_map_count``.

    Such a tree is written file by file, each file released once written, and the
    result is opened lazily (see ``LazyEntries``), so that it holds a bounded number
    of mappings. Where no lazy result can stand in (shared memory without a folder, a
    tree mapped in place), it raises before anything is written.

    Raises:
        MappingLimitError: without a folder, or in place, naming the limit.
    """
    count = len(plan.tensors)
    if count <= _ondemand.MAX_MAPPED:
        return False  # far below the limit: /proc is not read
    free = _ondemand.MAX_MAP_COUNT - _mappings_in_use() - MAPPINGS_MARGIN
    if count <= free:
        return False
    if folder is not None and not inplace:
        return True
    how = "in anonymous shared memory" if folder is None else "in place (memmap_)"
    msg = (
        f"cannot memory-map {count} tensors {how}: each is one mapping, and this process "
        f"may hold {_ondemand.MAX_MAP_COUNT} (vm.max_map_count), about {max(free, 0)} more "
        "now; write them with memmap(prefix), whose result opens its files lazily as they "
        "are used, or raise the limit (sysctl vm.max_map_count)"
    )
    raise MappingLimitError(msg)


def _at_destination(err: OSError, folder: str, stage: str) -> Exception:
    """``err`` of a file in the staging folder, told of the path the user asked for (the file's
    place in ``folder``), the staged path after it; the same error when it names no staged file.
    A symbolic link in the way (never written through) gives a ``SymlinkError``."""
    staged = next(
        (
            p
            for p in (err.filename, err.filename2)
            if isinstance(p, str) and (p == stage or p.startswith(stage + os.sep))
        ),
        None,
    )
    if staged is None:
        return err
    final = folder + staged[len(stage) :]
    if os.path.islink(final):
        msg = (
            f"cannot write {final!r} of the memory-mapped folder {folder!r}: it is a symbolic "
            "link, and tensordict never writes a TensorDict through symlinks (the folder was "
            "left as it was)"
        )
        return SymlinkError(msg)
    msg = (
        f"cannot write {final!r} of the memory-mapped folder {folder!r}: "
        f"{os.strerror(err.errno)} (it was staged as {staged!r}; the folder was left as it was)"
    )
    return OSError(err.errno, msg)


def _staging_folder(folder: str) -> tuple:
    """``(stage, exchange)``: a new empty folder to build the tree in, and how it goes in place.

    Beside ``folder`` when the two can be exchanged in one step (``exchange`` True;
    also when ``folder`` does not exist yet: it is then renamed into place). Inside
    ``folder`` (``exchange`` False: merged in, see :func:`_merge_into`) when the older
    tree there holds a name its ``meta.json`` files do not record (not ours to move),
    when ``folder`` is a mount point or holds the working directory (exchanging would
    leave the process in a removed folder), or when the file system cannot exchange
    folders.

    Raises:
        SymlinkError: if ``folder`` is a symbolic link.
    """
    if os.path.islink(folder):
        msg = f"refusing to memory-map into {folder!r}: it is a symbolic link"
        raise SymlinkError(msg)
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    if os.path.isdir(folder):
        if _fs.stale_temporaries(folder) or _fs.stale_temporaries(parent):
            with _fs.locked(folder):
                _fs.remove_stale_temporaries(folder)
                _fs.remove_stale_temporaries(parent)  # dead writers' staging folders lie beside
        if (
            not _only_recorded_names(folder)
            or os.path.ismount(folder)
            or holds_cwd(folder)
            or not _fs.can_exchange(parent)
        ):
            stage = _fs.temporary_name(os.path.join(folder, fmt.META_FILE))
            os.mkdir(stage)
            return stage, False
    stage = _fs.temporary_name(folder + ".")
    os.mkdir(stage)
    if os.path.isdir(folder):  # the new tree's folder keeps the old one's mode and group
        info = os.stat(folder)
        with contextlib.suppress(OSError):
            os.chown(stage, -1, info.st_gid)
        os.chmod(stage, _stat.S_IMODE(info.st_mode))
    return stage, _fs.can_exchange(parent)


def holds_cwd(folder: str) -> bool:
    """True when the working directory is ``folder`` or inside it."""
    try:
        cwd = os.getcwd()
    except OSError:
        return False
    try:
        return os.path.commonpath([os.path.realpath(folder), os.path.realpath(cwd)]) == (
            os.path.realpath(folder)
        )
    except ValueError:
        return False


def _only_recorded_names(folder: str) -> bool:
    """True when every name in ``folder`` is one its tensordict ``meta.json`` records (or ours)."""
    try:
        meta, _ = fmt.read_meta(folder)
        kind = fmt.level_kind(folder, meta)
    except (OSError, ValueError):
        return all(fmt.is_own_file(name) for name in os.listdir(folder))
    if kind == fmt.KIND_LAZY:
        names = {n for n in os.listdir(folder) if n.isdigit()}
    elif kind == fmt.KIND_TENSORCLASS:
        names = {fmt.TENSORCLASS_DATA}
    elif kind == fmt.KIND_TD:
        names = set()
        for key, record in fmt.entries(meta):
            kind_of = "folder" if type(record) is dict and "type" in record else "nested"
            try:
                names.update(fmt.entry_names(key, kind_of, None))
                names.update(fmt.entry_names(key, kind_of, False))
            except ValueError:
                pass
    else:  # a non-tensor value's folder
        names = {fmt.PICKLE_FILE, fmt.STACK_PICKLE_FILE}
    for name in os.listdir(folder):
        if fmt.is_own_file(name):
            continue
        if name not in names:
            return False
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path) and not _only_recorded_names(path):
            return False  # the old tree's sub-folders are removed with it: nothing unrelated there
    return True


def _write_files(obj, plan: Plan, folder, where, like, inplace, num_threads, robust_key, lean):
    """Writes the plan's files at ``where(path)`` and returns the rebuilt tree (final paths).

    With a folder, ``where`` maps into the staging folder, which the caller removes
    whole if this fails. ``lean``: each written file is released at once, and the
    rebuilt tree holds the source tensors (it only serves to write the ``meta.json``
    files: the caller loads the result).
    """
    if folder is not None:
        for level_folder, _ in plan.folders:
            os.makedirs(where(level_folder), exist_ok=True)
    jobs = plan.tensors

    def write(job):
        path, tensor, shape_path = job
        if path is not None and not like and is_file_of(tensor, path):
            _link_into(path, where(path), shape_path, where)  # the same file: no copy
            return tensor
        out = _write_tensor(
            None if path is None else where(path),
            tensor,
            None if shape_path is None else where(shape_path),
            like,
        )
        if lean:
            return tensor  # its record is the same; the mapping goes with ``out``
        if out is not tensor and path is not None and out._filename is not None:
            out._filename = path  # where the file lies once the tree is in place
        return out

    if num_threads and num_threads > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(num_threads) as pool:
            written = list(pool.map(write, jobs))
    else:
        written = [write(job) for job in jobs]
    replacement: dict = {}  # id(tensor) -> its written copies, in plan order (a tensor may repeat)
    for (_, tensor, _), new in zip(jobs, written):
        replacement.setdefault(id(tensor), []).append(new)
    for nt_folder, value in plan.nontensors:
        write_nontensor(where(nt_folder), value)
    return obj._memmap_rebuild(folder, replacement, inplace, robust_key)


def _link_into(path: str, target: str, shape_path, where) -> None:
    os.link(path, target)
    if shape_path is not None:
        os.link(shape_path, where(shape_path))


def _put_in_place(stage: str, folder: str) -> None:
    """Moves the staged tree to ``folder`` in one step; an older tree there is then removed.

    Holds the older tree's lock, so that a writer adding an entry to it either finishes
    first or then finds the new tree. Killed before the removal, the older tree stays
    at the staging name until a later writer finds its owner dead
    (:func:`_fs.remove_stale_temporaries`).
    """
    if not os.path.isdir(folder):
        try:
            os.rename(stage, folder)
            return
        except OSError:
            if not os.path.isdir(folder):
                raise
    with _fs.locked(folder):
        _fs.exchange(stage, folder)
    shutil.rmtree(stage, ignore_errors=True)  # the older tree, now at the staging name


# ====================================================================== loading
def open_folder(prefix: str | os.PathLike) -> tuple:
    """``(folder, meta, stat)`` of the folder a user names: absolute, never a symbolic link.

    Raises:
        FileNotFoundError: if the folder or its ``meta.json`` is missing.
        ValueError: if the folder is a symbolic link or its ``meta.json`` is unreadable.
    """
    folder = os.path.abspath(os.fspath(prefix))
    if os.path.islink(folder):
        msg = f"refusing to load {folder!r}: it is a symbolic link"
        raise SymlinkError(msg)
    try:
        meta, stat = fmt.read_meta(folder)
    except NotADirectoryError as err:
        what = "a file" if os.path.isfile(folder) else "under a file"
        msg = f"cannot load {folder!r}: it is {what}, not a memory-mapped tensordict folder"
        raise NotAFolderError(msg) from err
    return folder, meta, stat


def open_subpath(
    folder: str, meta: dict, stat: os.stat_result, subpath: tuple, robust_key: bool | None
) -> tuple:
    """``(folder, meta, stat)`` of the nested tensordict at the keys ``subpath`` below ``folder``.

    A tensorclass level is passed through to its data (``_tensordict/``), as
    ``obj.get(key)`` reaches its entries; a lazy stack is passed through to the member
    at the position the key gives (``"0"``, ``"1"``, ...).

    Raises:
        ValueError: if a key names no sub-tensordict or no member of a lazy stack, or
            a level on the way is a non-tensor value, naming the subpath and the folder.
    """
    for key in subpath:
        kind = fmt.level_kind(folder, meta)
        if kind == fmt.KIND_TENSORCLASS:
            folder = fmt.child_path(folder, fmt.TENSORCLASS_DATA)
            meta, stat = fmt.read_meta(folder)
            kind = fmt.level_kind(folder, meta)
        if kind == fmt.KIND_LAZY:
            folder = fmt.child_path(
                folder, fmt.member_step(folder, os.listdir(folder), key, subpath)
            )
        elif kind == fmt.KIND_TD:
            fmt.check_subpath_step(folder, meta, key, subpath)
            folder = fmt.entry_path(folder, key, "", robust_key)
        else:
            msg = f"subpath {subpath!r}: {folder!r} holds a {kind}, whose entries no key reaches"
            raise InvalidArgumentError(msg)
        meta, stat = fmt.read_meta(folder)
    return folder, meta, stat


RELOADS = 8  # reads of a folder exchanged meanwhile (a new tree, an append) before giving up


def load_tree(
    prefix: str | os.PathLike,
    options: Options,
    subpath: tuple,
    load: Callable[[str, dict, os.stat_result, Options], TensorCollection],
) -> TensorCollection:
    """Loads the tree the user names with ``load(folder, meta, stat, options)``, whole and unmixed.

    A writer that replaces the tree (``memmap(prefix)``, ``append_memmap``) exchanges
    the folder with a new one in one step; a load that read some levels before that
    step and some after would mix the two trees. So the folder's identity (its inode)
    is noted before the root ``meta.json`` is read and checked after the last level
    was: when it changed, the tree is read again (an error met meanwhile is then the
    exchange's, not the folder's), at most :data:`RELOADS` times.

    Raises:
        FileNotFoundError, ValueError: as :func:`open_folder`, :func:`open_subpath` and
            the loaders raise them, for a folder that did not change while it was read.
    """
    path = os.path.abspath(os.fspath(prefix))
    for attempt in range(RELOADS):
        before = _identity(path)
        try:
            folder, meta, stat = open_folder(path)
            if subpath:
                folder, meta, stat = open_subpath(folder, meta, stat, subpath, options.robust_key)
            loaded = load(folder, meta, stat, options)
        except Exception:
            if attempt + 1 == RELOADS or _identity(path) == before:
                raise
            continue
        if _identity(path) == before:
            return loaded
    return loaded  # exchanged at every read: the last tree read, itself whole


def _identity(path: str):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def load_folder(
    folder: str, meta: dict, stat: os.stat_result | None, options: Options
) -> TensorCollection:
    """Loads one folder whose ``meta.json`` is already parsed, with the loader of its class."""
    if options.depth >= fmt.MAX_DEPTH:
        raise _too_deep(folder)
    options.depth += 1
    try:
        loaded = _load_kind(folder, meta, stat, options)
    finally:
        options.depth -= 1
    if options.mode is not None:
        level = getattr(loaded, "_mm", None)
        if isinstance(level, Level):
            level.mode = options.mode
    return loaded


def _load_kind(folder: str, meta: dict, stat, options: Options):
    kind = fmt.level_kind(folder, meta)
    if options.lazy and kind != fmt.KIND_TD:
        # Lazy opening is for TensorDict levels: any other class is read whole, as eager.
        options.lazy = False
        try:
            return _load_kind(folder, meta, stat, options)
        finally:
            options.lazy = True
    if kind == fmt.KIND_NONTENSOR:
        return _load_nontensor(folder, meta, options)
    cls, type_str = meta.get("_class"), meta.get("_type")
    loader = LOADERS.get(cls) if cls is not None else LOADERS.get(type_str)
    if loader is None:
        if kind == fmt.KIND_TENSORCLASS:
            msg = (
                f"cannot load {folder!r}: its class {fmt.tensorclass_name(type_str)!r} is not "
                "registered. Import the module that defines it first (loading never imports "
                "code), or call YourClass.load_memmap(path)"
            )
        else:
            msg = f"cannot load {folder!r}: no loader for _type={type_str!r}, _class={cls!r}"
        raise MemmapFormatError(msg)
    return loader(folder, meta, stat, options)


def load_child(
    path: str, options: Options, previous: TensorCollection | None = None
) -> TensorCollection:
    """Loads the level in ``path`` (a member or data folder the format requires)."""
    meta, stat = fmt.read_meta(path)
    if previous is not None and previous._memmap_refresh_from(meta, stat, options):
        return previous
    return load_folder(path, meta, stat, options)


def load_entries(folder: str, meta: dict, options: Options) -> tuple:
    """Reads a dense level: ``(batch_size, device, names, data, inodes)``.

    ``names`` are the names of the batch dimensions (``None`` when none is named).
    Entries whose file is missing are left out (the format's rule); every other
    problem raises naming the path. Non-tensor entries get the level's batch size.
    """
    batch_size, device = fmt.parse_td_level(folder, meta)
    names = fmt.parse_names(folder, meta, batch_size)
    if options.device is not None:
        device = options.device
    if options.lazy:
        inodes = {}
        data = LazyEntries(folder, meta, options, batch_size, inodes, _read_entries)
        return batch_size, device, names, data, inodes
    data, inodes = _read_entries(folder, meta, options, batch_size, None)
    return batch_size, device, names, data, inodes


def _read_entries(folder, meta, options, batch_size, previous, old=None):
    """The entries of a parsed dense ``meta.json``, re-using ``previous`` values that did not change."""
    data: dict = {}
    inodes: dict = {}
    prefix = folder + os.sep
    robust_key, mode = options.robust_key, options.mode
    shared = mode != "r"
    lstat, from_file, S_ISREG, mmt = os.lstat, torch.from_file, _stat.S_ISREG, MemoryMappedTensor
    parse, file_name, suffix = fmt.parse_tensor_record, fmt.file_name, fmt.MEMMAP_SUFFIX
    n = len(batch_size)
    b0 = batch_size[0] if n else 0
    fields, is_field = fmt.FIELD_NAMES, fmt.is_field
    for key, record in meta.items():
        if key in fields and is_field(key, record):
            continue
        if (type(record) is not dict or "type" in record) and fmt.parse_record(
            folder, key, record
        ) is not None:
            before = None if previous is None else previous.get(key)
            value = _load_sub(folder, key, record, options, before, batch_size, inodes)
            if value is not None:
                data[key] = value
            continue
        if old is not None:
            before = previous.get(key)
            if (
                isinstance(before, _Tensor)
                and old.meta.get(key) == record
                and _still_same_file(before, old.inodes.get(key))
            ):
                data[key] = before
                inodes[key] = old.inodes[key]
                continue
        dtype, shape, nested = parse(folder, key, record)
        if not nested and (
            (not shape or shape[0] != b0) if n == 1 else (n and shape[:n] != batch_size)
        ):
            fmt.check_batch_prefix(folder, key, shape, batch_size)
        if nested or robust_key is False:
            value = _load_tensor(folder, key, dtype, shape, nested, robust_key, mode)
            if value is not None:
                data[key] = value
            continue
        # The common case, a plain tensor under its encoded name, inline: one lstat and
        # one map per entry (this loop runs once per entry on load).
        try:
            path = prefix + file_name(key, suffix, robust_key)
            info = lstat(path)
        except (FileNotFoundError, ValueError):
            # A legacy unencoded name, or a key that is no file name (entry_path says which).
            value = _load_tensor(folder, key, dtype, shape, nested, robust_key, mode)
            if value is not None:
                data[key] = value
            continue
        numel = shape.numel()
        if info.st_size != numel * dtype.itemsize or not S_ISREG(info.st_mode) or numel == 0:
            data[key] = _open_file(path, dtype, shape, mode)  # it raises the precise error
            continue
        try:
            flat = from_file(path, shared, numel, dtype=dtype)
        except RuntimeError:  # a read-only file: _open_file maps it copy-on-write (or raises)
            data[key] = _open_file(path, dtype, shape, mode)
            continue
        if len(shape) != 1:  # view(*shape): faster than view(shape) for a torch.Size
            flat = flat.view(*shape) if shape else flat.view(shape)
        tensor = flat.as_subclass(mmt)
        tensor._filename = path
        if not shared:
            tensor._cow = True
        data[key] = tensor
        inodes[key] = info.st_ino
    return data, inodes


def _load_sub(folder: str, key: str, record: dict, options: Options, previous, batch_size, inodes):
    """Loads a sub-folder entry; None when its folder is missing (the entry is dropped).

    A non-tensor value's ``meta.json`` is noted in ``inodes`` (see :func:`nontensor_mark`).
    """
    path = fmt.entry_path(folder, key, "", options.robust_key)
    try:
        meta, stat = fmt.read_meta(path)
    except MemmapNotFoundError:
        return None
    if _is_mapped_collection(previous) and previous._memmap_refresh_from(meta, stat, options):
        return previous  # sub-tensordicts keep their identity across refreshes
    value = load_folder(path, meta, stat, options)
    if isinstance(value, NonTensorDataBase):
        inodes[key] = nontensor_mark(stat)
        return value if value.batch_size == batch_size else value._with(batch_size)
    fmt.check_batch_prefix(folder, key, value.batch_size, batch_size)
    return value


def _load_tensor(folder: str, key: str, dtype, shape, nested: bool, robust_key, mode=None):
    """Maps one tensor entry found through :func:`format.entry_path`; None when its file is missing."""
    path = fmt.entry_path(folder, key, fmt.MEMMAP_SUFFIX, robust_key)
    if nested:
        if not os.path.lexists(path):
            return None
        shape_path = fmt.entry_path(folder, key, fmt.SHAPE_SUFFIX, robust_key)
        try:
            sizes = _open_file(shape_path, torch.int64, shape).clone()
        except FileNotFoundError as err:
            msg = f"{fmt.meta_path(folder)!r}, entry {key!r}: the nested tensor's shape file {shape_path!r} is missing"
            raise MemmapFormatError(msg) from err
        return _open_file(path, dtype, sizes, mode)
    try:
        return _open_file(path, dtype, shape, mode)
    except FileNotFoundError:
        if fmt.nbytes(shape, dtype) == 0:
            return MemoryMappedTensor.empty(shape, dtype=dtype)  # the format keeps no file for it
        return None


def unpickle_allowed(path: str, options: Options, holds: str) -> object:
    """The content of the pickle file ``path`` (holding ``holds``), if the load allows unpickling.

    Raises:
        PickleRefusedError: unless ``options.allow_pickle``; it names the file.
    """
    if not options.allow_pickle:
        msg = (
            f"{path!r} holds {holds}; loading never unpickles unless asked: pass "
            "allow_pickle=True if you trust this folder"
        )
        raise PickleRefusedError(msg)
    with open(path, "rb") as handle:
        return pickle.load(handle)  # noqa: S301 - the caller allowed it


def _load_nontensor(folder: str, meta: dict, options: Options) -> NonTensorDataBase:
    how, value = fmt.parse_nontensor(folder, meta)
    cls = MetaData if meta.get("_type") == fmt.METADATA_TYPE else NonTensorData
    if how == "data":
        return cls(value, metadata=meta.get("_metadata"))
    content = unpickle_allowed(value, options, "a pickled value")
    if type(content) is not dict or "data" not in content:
        msg = f"{value!r} must hold a pickled dict with a 'data' item, got {type(content).__name__}"
        raise MemmapFormatError(msg)
    return cls(content["data"], metadata=meta.get("_metadata"))


# ====================================================================== refreshing
def refresh_entries(
    level: Level, data: dict, options: Options, read: tuple | None = None
) -> tuple | None:
    """Re-reads a dense level in place (never writes); ``data`` is its dict of entries.

    A level whose ``meta.json`` did not change is not parsed again (its
    sub-levels are still refreshed); entries that ``meta.json`` does not record (a
    storage without a file) are dropped.

    Args:
        level (Level): the level's state.
        data (dict): its entries, changed in place.
        options (Options): how to load what changed.
        read (tuple, optional): ``(meta, stat)`` already read; otherwise the folder's
            ``meta.json`` is checked and read when it changed.

    Returns:
        ``None`` when nothing changed at this level, else ``(batch_size, names,
        new_level)`` (``names``: of the batch dimensions, ``None`` when none is named).

    Raises:
        FileNotFoundError: if the folder's ``meta.json`` is gone.
    """
    if read is None:
        path = fmt.meta_path(level.path)
        try:
            current = os.stat(path)
        except FileNotFoundError as err:
            msg = f"cannot refresh: {path!r} is gone"
            raise MemmapNotFoundError(msg) from err
        if not _fs.same_file(current, level.stat):
            read = fmt.read_meta(level.path)
    lazy = type(data) is LazyEntries
    if read is None or _fs.same_file(read[1], level.stat):
        meta = level.meta
        if not data.keys() <= meta.keys():
            for key in [k for k in data if k not in meta]:
                del data[key]
        mmt = MemoryMappedTensor
        for value in data.loaded_values() if lazy else data.values():
            # This loop runs once per entry of every unchanged level: the common leaf first.
            if type(value) is mmt or isinstance(value, _Tensor) or is_non_tensor(value):
                continue
            if value._mm is not None:
                value._memmap_refresh(options)
        return None
    meta, stat = read
    batch_size, _ = fmt.parse_td_level(level.path, meta)
    names = fmt.parse_names(level.path, meta, batch_size)
    if lazy:  # what was read is checked again; the rest stays unread
        inodes = data.reopen(meta, batch_size, level)
        return (
            batch_size,
            names,
            Level(level.path, meta, stat, level.robust_key, inodes, data, level.mode),
        )
    fresh, inodes = _read_entries(level.path, meta, options, batch_size, data, level)
    data.clear()
    data.update(fresh)
    _ondemand.record_inodes(fresh, inodes)
    return (
        batch_size,
        names,
        Level(level.path, meta, stat, level.robust_key, inodes, fresh, level.mode),
    )


def _still_same_file(tensor, inode) -> bool:
    """True when ``tensor`` maps the file that is at its path now (not a replaced one)."""
    filename = getattr(tensor, "_filename", None)
    if filename is None or inode is None:
        return False
    try:
        return os.stat(filename).st_ino == inode
    except OSError:
        return False
