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
* ``obj._memmap_names(robust_key)``: the names ``obj`` occupies in its folder, so
  that stale names of an earlier tensordict there are removed;
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
import os
import pickle
import shutil
import stat as _stat
from concurrent.futures import ThreadPoolExecutor

import torch

from tensordict._collection import is_non_tensor
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict.errors import (
    EntryExistsError,
    ExistingFileError,
    MemmapFormatError,
    MemmapNotFoundError,
    NotAFolderError,
    SymlinkError,
)
from tensordict.memmap import format as fmt
from tensordict.memmap.tensor import MemoryMappedTensor, _open_file

_Tensor = torch.Tensor

# "_class" or "_type" string -> loader(folder, meta, stat, options) returning the loaded
# object; filled in by the modules that define the classes (TensorDict, lazy stacks, and
# each tensorclass as it is decorated).
LOADERS: dict = {}


class Level:
    """Memory-mapping state of one tensordict level (``obj._mm``)."""

    __slots__ = ("path", "meta", "text", "stat", "robust_key", "taken", "inodes")

    def __init__(
        self, path: str | None, meta: dict | None = None, stat=None, robust_key=None, inodes=None
    ) -> None:
        self.path = path
        self.meta = {} if meta is None else meta
        self.text: str | None = None
        self.taken: dict | None = None  # file name -> key, built on the first added entry
        self.inodes: dict = {} if inodes is None else inodes  # key -> inode mapped at load
        self.stat = stat
        self.robust_key = robust_key

    def __getstate__(self):
        return {"path": self.path, "meta": self.meta, "robust_key": self.robust_key}

    def __setstate__(self, state) -> None:
        self.__init__(state["path"], state["meta"], None, state["robust_key"])

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
        self.stat = fmt.write_meta(self.path if where is None else where, [self.body()])

    def add(self, key: str, record: dict, renames=()) -> None:
        """Records a new entry under the folder lock, first moving its files into place.

        ``renames`` are ``(temporary, final)`` paths: the entry's files, written under
        temporary names so that no file another writer recorded is ever replaced.
        They are renamed only after ``meta.json`` (re-read if another writer changed it)
        was checked not to record ``key`` already.

        Raises:
            EntryExistsError: if another writer recorded ``key`` meanwhile; its files
                are left alone (the temporary files are the caller's to remove).
        """
        ours = key in self.meta  # a stale record of this tensordict's: replaced on purpose
        with fmt.locked(self.path):
            self._check_not_taken(key, ours)
            for temporary, final in renames:
                os.replace(temporary, final)
            self._apply({key: record})

    def claim(self, key: str) -> None:
        """Refuses, before anything is written, a key another writer recorded meanwhile.

        Raises:
            EntryExistsError: naming the key and the folder.
        """
        ours = key in self.meta
        with fmt.locked(self.path):
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
        with fmt.locked(self.path):
            self._reread()
            self._apply(changes)

    def _reread(self) -> None:
        """Re-reads ``meta.json`` when another writer changed it (the lock is held)."""
        try:
            current = os.stat(fmt.meta_path(self.path))
        except FileNotFoundError:
            current = None
        if not fmt.same_file(current, self.stat):
            if current is not None:
                self.meta, _ = fmt.read_meta(self.path)
            self.text = None

    def _apply(self, changes: dict) -> None:
        """Writes ``changes`` into ``meta.json`` (the lock is held, the meta up to date)."""
        for key, record in changes.items():
            if record is None or key in self.meta:
                self.text = None
            if record is None:
                self.meta.pop(key, None)
                continue
            self.meta[key] = record
            if self.text is not None:
                member = fmt.dumps_record(key, record)
                self.text = f"{self.text}, {member}" if self.text else member
        self.stat = fmt.write_meta(self.path, [self.body()])


class Options:
    """What a load or refresh was asked for: key encoding, unpickling, device; and how deep it is."""

    __slots__ = ("robust_key", "allow_pickle", "device", "depth")

    def __init__(self, robust_key=None, allow_pickle: bool = False, device=None) -> None:
        self.robust_key = robust_key
        self.allow_pickle = allow_pickle
        self.device = device
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

    def __init__(self) -> None:
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


def entry_kind(value) -> str:
    """``"tensor"``, ``"nested"`` or ``"folder"``: the names an entry occupies (see format)."""
    if isinstance(value, _Tensor):
        return "nested" if value.is_nested else "tensor"
    return "folder"


def plan_entries(
    obj, items, folder: str | None, plan: Plan, robust_key, existsok: bool, like: bool
) -> None:
    """Plans the entries of one dense level ``obj`` (its ``items``) into ``folder``."""
    items = list(items)
    if plan.depth >= fmt.MAX_DEPTH:
        raise _too_deep(folder)
    plan.depth += 1
    if folder is not None:
        fmt.check_level_keys(folder, {k: entry_kind(v) for k, v in items}, robust_key)
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


def sub_folder(folder: str | None, key: str, robust_key) -> str | None:
    """The folder of the sub-tensordict ``key`` of a level in ``folder`` (``None`` stays ``None``)."""
    return None if folder is None else os.path.join(folder, fmt.file_name(key, "", robust_key))


def names_of(items, robust_key) -> set:
    """The file and folder names the entries ``items`` of a dense level occupy."""
    names = set()
    for key, value in items:
        names.update(fmt.entry_names(key, entry_kind(value), robust_key))
    return names


def rebuild_entries(items, folder, replacement: dict, inplace: bool, robust_key) -> dict:
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


def records_of(items, folder: str, robust_key) -> dict:
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


def is_file_of(value, path: str) -> bool:
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


def _remove_stale(folder: str, keep: set, robust_key) -> None:
    """Removes what an earlier tensordict's meta.json in ``folder`` references and ``keep`` does not.

    Only names listed by the old ``meta.json`` (and lazy-stack member folders) are
    touched, so a folder that also holds unrelated files keeps them.
    """
    try:
        old, _ = fmt.read_meta(folder)
        kind = fmt.level_kind(folder, old)
    except (OSError, ValueError):
        return
    names = set()
    if kind == fmt.KIND_LAZY:
        names.update(n for n in os.listdir(folder) if n.isdigit())
    elif kind == fmt.KIND_TENSORCLASS:
        names.add(fmt.TENSORCLASS_DATA)
    elif kind == fmt.KIND_TD:
        for key, record in fmt.entries(old):
            if not isinstance(record, dict):
                continue
            if "type" in record:
                names.add(fmt.file_name(key, "", robust_key))
            else:
                names.add(fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key))
                names.add(fmt.file_name(key, fmt.SHAPE_SUFFIX, robust_key))
    for name in names - keep:
        path = os.path.join(folder, name)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)


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


def _remove_written(jobs: list) -> None:
    """Removes the files that a failed :func:`write_tree` wrote for ``jobs``."""
    for path, _, shape_path in jobs:
        for created in (path, shape_path):
            if created is not None and os.path.lexists(created):
                os.unlink(created)


def write_nontensor(folder: str, value) -> None:
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
    fmt.write_meta_dict(folder, meta)


def write_tree(
    obj, prefix, *, like: bool, inplace: bool, num_threads: int, existsok: bool, robust_key
):
    """Memory-maps ``obj`` into ``prefix`` (or anonymous shared memory) and returns the result.

    Everything is checked first. A tree with a folder is then written whole into a
    staging folder beside ``prefix`` (tensors in ``num_threads`` threads, then each
    level's ``meta.json``, children first) and put in place in one step: renamed to
    ``prefix``, or exchanged with the older tree there, which is then removed. Killed
    at any moment, ``prefix`` holds the old tree or the new one; a failure leaves the
    old one untouched. (A folder that also holds files its ``meta.json`` does not
    record is written in place instead, so that those files stay.) ``inplace`` swaps
    the leaves of ``obj`` itself; otherwise a new tree is returned. The result is locked.
    """
    folder = None if prefix is None else os.path.abspath(os.fspath(prefix))
    plan = Plan()
    obj._memmap_plan(folder, plan, robust_key, existsok, like)
    stage = None if folder is None else _staging_folder(folder, plan)
    if stage is None and folder is not None:
        for level_folder, _ in plan.folders:
            os.makedirs(level_folder, exist_ok=True)
        for level_folder, level_obj in plan.folders:
            _remove_stale(level_folder, level_obj._memmap_names(robust_key), robust_key)
    where = (lambda path: path) if stage is None else (lambda path: stage + path[len(folder) :])
    try:
        out = _write_files(
            obj, plan, folder, where, stage is not None, like, inplace, num_threads, robust_key
        )
        if folder is not None:
            out._memmap_write_meta(where(folder), robust_key)
            if stage is not None:
                _put_in_place(stage, folder)
    except BaseException:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    out.lock_()
    return out


def _staging_folder(folder: str, plan: Plan) -> str | None:
    """A new empty folder beside ``folder`` to build the tree in, or None to write in place.

    None when the older tree there holds a name its ``meta.json`` files do not record
    (not ours to move), when ``folder`` is a mount point, or when the file system
    cannot exchange folders.

    Raises:
        SymlinkError: if ``folder`` is a symbolic link.
    """
    if os.path.islink(folder):
        msg = f"refusing to memory-map into {folder!r}: it is a symbolic link"
        raise SymlinkError(msg)
    if os.path.isdir(folder) and not _only_recorded_names(folder):
        return None  # unrecorded files are not ours to move: the tree is written in place
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    if os.path.ismount(folder) or not fmt.can_exchange(parent):
        return None
    stage = fmt.temporary_name(folder + ".")
    os.mkdir(stage)
    if os.path.isdir(folder):  # the new tree's folder keeps the old one's mode and group
        info = os.stat(folder)
        with contextlib.suppress(OSError):
            os.chown(stage, -1, info.st_gid)
        os.chmod(stage, _stat.S_IMODE(info.st_mode))
    return stage


def _only_recorded_names(folder: str) -> bool:
    """True when every name in ``folder`` is one its tensordict ``meta.json`` records (or ours)."""
    try:
        meta, _ = fmt.read_meta(folder)
        kind = fmt.level_kind(folder, meta)
    except (OSError, ValueError):
        return not os.listdir(folder)
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


def _write_files(
    obj, plan: Plan, folder, where, staged: bool, like, inplace, num_threads, robust_key
):
    """Writes the plan's files at ``where(path)`` and returns the rebuilt tree (final paths)."""
    if folder is not None:
        for level_folder, _ in plan.folders:
            os.makedirs(where(level_folder), exist_ok=True)
    jobs = plan.tensors
    done: list = []  # the jobs whose files this call wrote

    def write(job):
        path, tensor, shape_path = job
        if staged and path is not None and not like and is_file_of(tensor, path):
            _link_into(path, where(path), shape_path, where)  # the same file: no copy
            return tensor
        out = _write_tensor(
            None if path is None else where(path),
            tensor,
            None if shape_path is None else where(shape_path),
            like,
        )
        if out is not tensor:
            done.append(job)
            if path is not None and out._filename is not None:
                out._filename = path  # where the file lies once the tree is in place
        return out

    try:
        if num_threads and num_threads > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(num_threads) as pool:
                written = list(pool.map(write, jobs))
        else:
            written = [write(job) for job in jobs]
    except BaseException:
        if not staged:  # a staged tree is removed whole by the caller
            _remove_written(done)  # a failed call (a full disk) keeps none of its files
        raise
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
    first or then finds the new tree.
    """
    if not os.path.isdir(folder):
        try:
            os.rename(stage, folder)
            return
        except OSError:
            if not os.path.isdir(folder):
                raise
    with fmt.locked(folder):
        fmt.exchange(stage, folder)
    shutil.rmtree(stage)  # the older tree, now at the staging name


# ====================================================================== loading
def open_folder(prefix) -> tuple:
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


def load_folder(folder: str, meta: dict, stat, options: Options):
    """Loads one folder whose ``meta.json`` is already parsed, with the loader of its class."""
    if options.depth >= fmt.MAX_DEPTH:
        raise _too_deep(folder)
    options.depth += 1
    try:
        return _load_kind(folder, meta, stat, options)
    finally:
        options.depth -= 1


def _load_kind(folder: str, meta: dict, stat, options: Options):
    kind = fmt.level_kind(folder, meta)
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


def load_child(path: str, options: Options, previous=None):
    """Loads the level in ``path`` (a member or data folder the format requires)."""
    meta, stat = fmt.read_meta(path)
    if previous is not None and previous._memmap_refresh_from(meta, stat, options):
        return previous
    return load_folder(path, meta, stat, options)


def load_entries(folder: str, meta: dict, options: Options) -> tuple:
    """Reads a dense level: ``(batch_size, device, data, inodes)``.

    Entries whose file is missing are left out (the format's rule); every other
    problem raises naming the path. Non-tensor entries get the level's batch size.
    """
    batch_size, device = fmt.parse_td_level(folder, meta)
    if options.device is not None:
        device = options.device
    data, inodes = _read_entries(folder, meta, options, batch_size, None)
    return batch_size, device, data, inodes


def _read_entries(folder, meta, options, batch_size, previous, old=None):
    """The entries of a parsed dense ``meta.json``, re-using ``previous`` values that did not change."""
    data: dict = {}
    inodes: dict = {}
    prefix = folder + os.sep
    robust_key = options.robust_key
    lstat, from_file, S_ISREG, mmt = os.lstat, torch.from_file, _stat.S_ISREG, MemoryMappedTensor
    parse, file_name, suffix = fmt.parse_tensor_record, fmt.file_name, fmt.MEMMAP_SUFFIX
    n = len(batch_size)
    b0 = batch_size[0] if n else 0
    fields = fmt.LEVEL_FIELDS
    for key, record in meta.items():
        if key in fields:
            continue
        if (type(record) is not dict or "type" in record) and fmt.parse_record(
            folder, key, record
        ) is not None:
            before = None if previous is None else previous.get(key)
            value = _load_sub(folder, key, record, options, before, batch_size)
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
            value = _load_tensor(folder, key, dtype, shape, nested, robust_key)
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
            value = _load_tensor(folder, key, dtype, shape, nested, robust_key)
            if value is not None:
                data[key] = value
            continue
        numel = shape.numel()
        if info.st_size != numel * dtype.itemsize or not S_ISREG(info.st_mode) or numel == 0:
            data[key] = _open_file(path, dtype, shape)  # it raises the precise error
            continue
        try:
            flat = from_file(path, True, numel, dtype=dtype)
        except RuntimeError:  # a read-only file: _open_file maps it copy-on-write
            data[key] = _open_file(path, dtype, shape)
            continue
        if len(shape) != 1:  # view(*shape): faster than view(shape) for a torch.Size
            flat = flat.view(*shape) if shape else flat.view(shape)
        tensor = flat.as_subclass(mmt)
        tensor._filename = path
        data[key] = tensor
        inodes[key] = info.st_ino
    return data, inodes


def _load_sub(folder: str, key: str, record: dict, options: Options, previous, batch_size):
    """Loads a sub-folder entry; None when its folder is missing (the entry is dropped)."""
    path = fmt.entry_path(folder, key, "", options.robust_key)
    try:
        meta, stat = fmt.read_meta(path)
    except MemmapNotFoundError:
        return None
    if _is_mapped_collection(previous) and previous._memmap_refresh_from(meta, stat, options):
        return previous  # sub-tensordicts keep their identity across refreshes
    value = load_folder(path, meta, stat, options)
    if isinstance(value, NonTensorDataBase):
        return value if value.batch_size == batch_size else value._with(batch_size)
    fmt.check_batch_prefix(folder, key, value.batch_size, batch_size)
    return value


def _load_tensor(folder: str, key: str, dtype, shape, nested: bool, robust_key):
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
        return _open_file(path, dtype, sizes)
    try:
        return _open_file(path, dtype, shape)
    except FileNotFoundError:
        if fmt.nbytes(shape, dtype) == 0:
            return MemoryMappedTensor.empty(shape, dtype=dtype)  # the format keeps no file for it
        return None


def _load_nontensor(folder: str, meta: dict, options: Options) -> NonTensorDataBase:
    how, value = fmt.parse_nontensor(folder, meta)
    cls = MetaData if meta.get("_type") == fmt.METADATA_TYPE else NonTensorData
    if how == "data":
        return cls(value, metadata=meta.get("_metadata"))
    if not options.allow_pickle:
        msg = (
            f"{value!r} holds a pickled value; loading never unpickles unless asked: pass "
            "allow_pickle=True if you trust this folder"
        )
        raise MemmapFormatError(msg)
    with open(value, "rb") as handle:
        content = pickle.load(handle)  # noqa: S301 - the caller allowed it
    if type(content) is not dict or "data" not in content:
        msg = f"{value!r} must hold a pickled dict with a 'data' item, got {type(content).__name__}"
        raise MemmapFormatError(msg)
    return cls(content["data"], metadata=meta.get("_metadata"))


# ====================================================================== refreshing
def refresh_entries(level: Level, data: dict, options: Options, read=None):
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
        ``None`` when nothing changed at this level, else ``(batch_size, new_level)``.

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
        if not fmt.same_file(current, level.stat):
            read = fmt.read_meta(level.path)
    if read is None or fmt.same_file(read[1], level.stat):
        meta = level.meta
        if not data.keys() <= meta.keys():
            for key in [k for k in data if k not in meta]:
                del data[key]
        mmt = MemoryMappedTensor
        for value in data.values():
            # This loop runs once per entry of every unchanged level: the common leaf first.
            if type(value) is mmt or isinstance(value, _Tensor) or is_non_tensor(value):
                continue
            if value._mm is not None:
                value._memmap_refresh(options)
        return None
    meta, stat = read
    batch_size, _ = fmt.parse_td_level(level.path, meta)
    fresh, inodes = _read_entries(level.path, meta, options, batch_size, data, level)
    data.clear()
    data.update(fresh)
    for key, value in fresh.items():
        filename = getattr(value, "_filename", None)
        if key not in inodes and filename is not None:
            try:
                inodes[key] = os.stat(filename).st_ino
            except OSError:
                pass
    return batch_size, Level(level.path, meta, stat, level.robust_key, inodes)


def _still_same_file(tensor, inode) -> bool:
    """True when ``tensor`` maps the file that is at its path now (not a replaced one)."""
    filename = getattr(tensor, "_filename", None)
    if filename is None or inode is None:
        return False
    try:
        return os.stat(filename).st_ino == inode
    except OSError:
        return False
