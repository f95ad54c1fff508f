"""The memory-mapping methods that every tensordict class shares (and every tensorclass reuses).

The tree work (writing, loading, refreshing) is the storage layer's
(:mod:`tensordict.memmap._io`); this module holds the public methods, their
argument checks and the adding of single entries (``make_memmap``,
``make_memmap_from_tensor``, ``make_memmap_from_storage``). It works on any
class through the primitives and hooks that ``TensorDictBase`` declares.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any

import torch

from tensordict._collection import TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._keys import NestedKey, _key_parts
from tensordict._nontensor import NonTensorDataBase, share_values
from tensordict._ops._contract import Contract
from tensordict._typing import DeviceType, ShapeType, T
from tensordict.errors import (
    EntryExistsError,
    ExistingFileError,
    InvalidArgumentError,
    NotMemmapError,
    warn,
)
from tensordict.memmap import _archive, _fs, _io
from tensordict.memmap import format as fmt
from tensordict.memmap._ondemand import LazyEntries
from tensordict.memmap.tensor import MemoryMappedTensor, _storage_filename, mapped_path

STORAGE_WARNING = (
    "make_memmap_from_storage() got a storage without a file for the entry {key!r} of a "
    "tensordict stored in {path!r}: its data is not written to the directory, so "
    "load_memmap() and memmap_refresh_() will drop the entry. Starting with TensorDict 0.17, "
    "this will raise a RuntimeError. Use make_memmap_from_tensor() to copy the data into the "
    "directory."
)

# The methods a tensorclass takes as they are (its hooks do the class-specific part).
SHARED_WITH_TENSORCLASS = (
    "memmap",
    "memmap_",
    "memmap_like",
    "save",
    "dumps",
    "load_memmap",
    "load",
    "load_memmap_",
    "memmap_refresh_",
    "saved_path",
    "_require_memmap",
)


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def _write(
    obj,
    prefix,
    like: bool,
    inplace: bool,
    num_threads,
    existsok,
    robust_key,
    return_early,
    copy_existing: bool = True,
):
    """The shared body of memmap, memmap_ and memmap_like for every class."""
    out = _io.write_tree(
        obj,
        prefix,
        like=like,
        inplace=inplace,
        num_threads=num_threads,
        existsok=existsok,
        robust_key=robust_key,
        copy_existing=copy_existing,
    )
    return _done(out) if return_early else out


def _archive_wanted(prefix, archive, compression) -> bool:
    """True when a write goes to an archive: ``archive=True``, or a path ending in ``.tdz``."""
    if archive is None:
        archive = _archive.is_archive_path(prefix)
    if archive and prefix is None:
        msg = "writing an archive needs a path (prefix=...); None maps into shared memory"
        raise ValueError(msg)
    if not archive and compression is not None:
        msg = (
            f"compression={compression!r} applies to archives only: pass archive=True or a "
            "path ending in '.tdz'"
        )
        raise ValueError(msg)
    return bool(archive)


def _write_archive(
    obj, prefix, like: bool, num_threads, existsok, robust_key, return_early, compression
):
    """The body of memmap and memmap_like for an archive: write it, then load it back."""
    if return_early:
        msg = "return_early=True is not supported when writing an archive"
        raise NotImplementedError(msg)
    _archive.write_archive(
        obj,
        prefix,
        like=like,
        robust_key=robust_key,
        num_threads=num_threads,
        compression=compression,
        existsok=existsok,
    )
    # This process wrote the archive from its own values: unpickling them back is safe.
    options = _io.Options(robust_key, True, None)
    return _archive.load_archive(prefix, options, writable=like)


def check_storage(
    key: NestedKey,
    storage: torch.UntypedStorage,
    shape: ShapeType | torch.Tensor,
    dtype: torch.dtype | None,
) -> tuple:
    """Checks the arguments of ``make_memmap_from_storage`` (every class calls this).

    Returns:
        ``(storage, shape, dtype, nbytes, nested, filename)``: the untyped storage, the
        shape (``torch.Size``, or a 2-D tensor of shapes for a nested tensor), the
        dtype, the bytes they need, whether the entry is nested, and the storage's
        file (``None`` without one).

    Raises:
        TypeError: if the storage is not a storage or ``dtype`` not a ``torch.dtype``.
        ValueError: if the storage is not in physical memory or its size does not
            match ``shape`` and ``dtype``.
    """
    if isinstance(storage, torch.TypedStorage):
        storage = storage._untyped_storage
    if not isinstance(storage, torch.UntypedStorage):
        msg = f"make_memmap_from_storage() needs a torch.UntypedStorage for {key!r}, got {type(storage).__name__}"
        raise TypeError(msg)
    if storage.device.type != "cpu":
        msg = (
            f"the storage for {key!r} is on the {storage.device.type!r} device: it must be in "
            "physical memory (a CPU storage, from a file or shared memory)"
        )
        raise ValueError(msg)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    if not isinstance(dtype, torch.dtype):
        msg = f"dtype must be a torch.dtype, got {dtype!r}"
        raise TypeError(msg)
    nested = isinstance(shape, torch.Tensor)
    if nested:
        needed = sum(fmt.nbytes(row, dtype) for row in shape.tolist())
    else:
        shape = torch.Size(shape)
        needed = fmt.nbytes(shape, dtype)
    if storage.nbytes() != needed:
        msg = (
            f"the storage for {key!r} has {storage.nbytes()} bytes but shape "
            f"{shape.tolist() if nested else list(shape)} and dtype {dtype} need {needed}"
        )
        raise ValueError(msg)
    return storage, shape, dtype, needed, nested, _storage_filename(storage)


def _load_options(robust_key, allow_pickle, mode, num_threads) -> _io.Options:
    """The options of a load, its arguments checked.

    Raises:
        ValueError: if ``mode`` is not ``None``, ``"r"`` or ``"r+"``, or ``num_threads``
            is negative.
        TypeError: if ``num_threads`` is not an int.
    """
    if mode not in (None, "r", "r+"):
        msg = f"mode must be None, 'r' or 'r+', got {mode!r}"
        raise InvalidArgumentError(msg)
    if type(num_threads) is not int:
        msg = f"num_threads must be an int, got {type(num_threads).__name__}"
        raise TypeError(msg)
    if num_threads < 0:
        msg = f"num_threads must be 0 or more, got {num_threads}"
        raise InvalidArgumentError(msg)
    return _io.Options(robust_key, allow_pickle, None, mode)


def _read_items(td) -> list:
    """The ``(key, value)`` pairs of a level; of a lazily opened one, those read so far.

    An entry a lazy level has not read is, as recorded, one of its folder's files.
    """
    data = getattr(td, "_tensordict", None)
    if type(data) is LazyEntries:
        return data.loaded_items()
    return list(td._items_level())


def warn_storage_without_file(key: NestedKey, path: str) -> None:
    """The ``FutureWarning`` of a file-less storage added to a tensordict with a directory."""
    warn(STORAGE_WARNING.format(key=key, path=path), FutureWarning)


class MemmapMixin(Contract):
    """Memory-mapping methods shared by every tensordict class.

    Calls: ``_cells``, ``_del_str``, ``_get_str``, ``_items_level``, ``_keys_level``, ``_memmap_load_into``,
        ``_memmap_record``, ``_memmap_record_type``, ``_memmap_refresh``, ``_mm``,
        ``_new_like``, ``_store_entry``, ``_tensordict``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ state
    def is_memmap(self) -> bool:
        """Returns True when the tensordict is memory-mapped: mapped by this library and every leaf a ``MemoryMappedTensor``.

        A tensordict returned by :meth:`memmap`, :meth:`memmap_`, :meth:`memmap_like` or
        :meth:`load_memmap` is memory-mapped, and so is a view of one whose leaves all
        still map the files (advanced indexing copies, so its result is not).
        Non-tensor entries do not count against it.

        Returns:
            True or False.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.is_memmap(), td.memmap().is_memmap()
            (False, True)
        """
        if self._mm is None:
            return False
        for _, value in _read_items(self):
            if isinstance(value, torch.Tensor):
                if not isinstance(value, MemoryMappedTensor):
                    return False
            elif not value.is_memmap():
                return False
        return True

    @property
    def saved_path(self) -> str | None:
        """The folder of a memory-mapped tensordict, or ``None``.

        ``None`` when the tensordict is not memory-mapped, lives in anonymous shared
        memory (``memmap()`` without a prefix) or is a view of a memory-mapped one. A
        tensorclass's data folder is its ``_tensordict/`` sub-folder.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2]).memmap("saved")
            >>> os.path.basename(td.saved_path), TensorDict({}, []).saved_path
            ('saved', None)
        """
        level = self._mm
        return None if level is None else level.path

    def _require_memmap(self, what: str):
        """The tensordict's :class:`~tensordict.memmap._io.Level`, or ``NotMemmapError``."""
        level = self._mm
        if level is None:
            msg = (
                f"{what} needs a memory-mapped tensordict; call memmap_() (or memmap(), or "
                "load_memmap()) first"
            )
            raise NotMemmapError(msg)
        return level

    # ------------------------------------------------------------------ whole trees
    def memmap(
        self: T,
        prefix: str | os.PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        return_early: bool = False,
        share_non_tensor: bool = False,
        existsok: bool = True,
        robust_key: bool | None = None,
        archive: bool | None = None,
        compression: str | int | None = None,
        atomic: bool = False,
    ) -> T | Future:
        """Returns a memory-mapped copy of the tensordict, written to ``prefix`` (or shared memory).

        Every leaf becomes a ``MemoryMappedTensor``: in ``prefix`` with the on-disk
        format v1 (one folder per level, a ``meta.json`` each, one ``.memmap`` file
        per tensor), or, without ``prefix``, in anonymous shared memory. The result
        is locked. Everything is checked before anything is written; the tree is
        built under temporary names and replaces an older one in ``prefix`` in one
        step (where the folder cannot be swapped, a mount point, the working
        directory or a folder holding unrelated files, entry by entry, each whole):
        killed at any moment, the folder loads, and a failed call leaves it as it was.
        A relative ``prefix`` is resolved against the working directory.

        Args:
            prefix (str or path, optional): the folder. Defaults to ``None`` (shared memory).
            copy_existing (bool, optional): accepted for compatibility; the result is a
                copy, so leaves mapped in other files are always copied into ``prefix``.

        Keyword Args:
            num_threads (int, optional): write files with this many threads. Defaults to 0.
            return_early (bool, optional): return a ``Future`` of the result.
            share_non_tensor (bool, optional): put the values of the non-tensor entries in
                shared memory too, as :meth:`share_memory_` does, so that a write in one
                process reaches the others. Defaults to False.
            existsok (bool, optional): if False, an existing file at an entry's path
                raises ``FileExistsError``. Defaults to True.
            robust_key (bool, optional): percent-encode keys in file names (``None``
                is True). Defaults to ``None``.
            archive (bool, optional): write one ``.tdz`` archive file at ``prefix``
                instead of a folder (see :func:`~tensordict.pack_memmap`). Defaults to
                ``None``: an archive when ``prefix`` ends with ``".tdz"``.
            compression (str or int, optional): for an archive, how tensor payloads
                are compressed (``"deflate"``, ``"bzip2"``, ``"lzma"``); compressed
                leaves load as copies. Defaults to ``None`` (stored, mapped).
            atomic (bool, optional): accepted for compatibility. Every write is atomic
                here, whatever its value: the tree is built under temporary names and
                put in place in one step (entry by entry, each whole, where the folder
                cannot be swapped), so that a failure or a crash leaves ``prefix`` as
                it was or holding the new tree; ``atomic=False`` is as safe. An archive
                is written to a temporary file and renamed. Defaults to ``False``.

        Returns:
            The memory-mapped tensordict (or a ``Future`` of it with ``return_early``).
            For an archive, the archive loaded back (see :meth:`load_memmap`): its
            leaves are views of the archive's mapping, and it is not locked.

        Raises:
            ValueError: if a key cannot be stored (a level field name such as
                ``"shape"``, two entries whose file names collide, an invalid name with
                ``robust_key=False``), or ``compression`` is given without an archive.
            FileExistsError: with ``existsok=False``, if an entry's file (or the
                archive) exists.

        Examples:
            >>> td = TensorDict({"obs": torch.randn(4, 3)}, [4]).memmap("buffer")
            >>> td.is_memmap(), td.is_locked
            (True, True)
        """
        if _archive_wanted(prefix, archive, compression):
            return _write_archive(
                self, prefix, False, num_threads, existsok, robust_key, return_early, compression
            )
        out = _write(self, prefix, False, False, num_threads, existsok, robust_key, False)
        if share_non_tensor:
            _share_values(out)
        return _done(out) if return_early else out

    def memmap_(
        self: T,
        prefix: str | os.PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        return_early: bool = False,
        share_non_tensor: bool = False,
        existsok: bool = True,
        robust_key: bool | None = None,
        atomic: bool = False,
    ) -> T | Future:
        """Memory-maps the tensordict in place and locks it.

        Every leaf is replaced by a ``MemoryMappedTensor`` in ``prefix`` (or anonymous
        shared memory), as :meth:`memmap` writes them; the tensordict object itself is
        kept. On a tensordict that is already memory-mapped in its folder (for example
        one returned by :meth:`load_memmap`) ``prefix`` defaults to that folder and
        only what this tensordict changed is written there: new entries are added,
        non-tensor values it changed are rewritten atomically, and the records of
        entries it deleted are removed (with their files). Entries other writers added
        or rewrote meanwhile stay as they are.

        Args:
            prefix (str or path, optional): the folder. Defaults to the tensordict's own
                folder, or shared memory when it has none.
            copy_existing (bool, optional): copy leaves that are already memory-mapped
                in other files into ``prefix``; if False, such a leaf raises
                ``MappedElsewhereError``. Defaults to False.

        Keyword Args:
            num_threads (int, optional): write files with this many threads. Defaults to 0.
            return_early (bool, optional): return a ``Future`` of the result.
            share_non_tensor (bool, optional): put the values of the non-tensor entries in
                shared memory too, as :meth:`share_memory_` does, so that a write in one
                process reaches the others. Defaults to False.
            existsok (bool, optional): if False, an existing file at an entry's path
                raises ``FileExistsError``. Defaults to True.
            robust_key (bool, optional): percent-encode keys in file names (``None`` is
                True). Defaults to ``None``.
            atomic (bool, optional): accepted for compatibility; every write is atomic
                (see :meth:`memmap`), whatever its value. Defaults to ``False``.

        Returns:
            The tensordict itself (or a ``Future`` of it with ``return_early``).

        Raises:
            ValueError: if a key cannot be stored (see :meth:`memmap`).
            FileExistsError: with ``existsok=False``, if an entry's file exists.
            RuntimeError: in its own folder, if another writer added a key this
                tensordict adds, or rewrote a value it changed, since it was loaded, or
                if it was loaded with ``mode="r"`` and has something to write there.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.memmap_("inplace") is td, td.is_memmap(), td.is_locked
            (True, True, True)
        """
        folder = self._memmap_folder()
        if prefix is None:
            prefix = folder
        if folder is not None and os.path.abspath(os.fspath(prefix)) == folder:
            # Already memory-mapped there: only what is not mapped yet is written, entry by
            # entry, so that nothing another writer recorded meanwhile can be lost.
            level = self._require_memmap("memmap_()")
            self._memmap_missing(level.robust_key if robust_key is None else robust_key)
            self.lock_()
        else:
            _write(
                self,
                prefix,
                False,
                True,
                num_threads,
                existsok,
                robust_key,
                False,
                copy_existing or prefix is None,
            )
        if share_non_tensor:
            _share_values(self)
        return _done(self) if return_early else self

    def memmap_like(
        self: T,
        prefix: str | os.PathLike | None = None,
        copy_existing: bool = False,
        *,
        existsok: bool = True,
        num_threads: int = 0,
        return_early: bool = False,
        share_non_tensor: bool = False,
        robust_key: bool | None = None,
        archive: bool | None = None,
    ) -> T | Future:
        """Returns a memory-mapped tensordict with the same layout, filled with zeros.

        No data is copied: each file is created fresh (an earlier file at the same
        path is replaced, never reused), so the result reads zeros. The usual way to
        make a replay buffer: ``memmap_like`` of an expanded one-row template.

        Args:
            prefix (str or path, optional): the folder. Defaults to ``None`` (shared memory).
            copy_existing (bool, optional): accepted for compatibility.

        Keyword Args:
            existsok (bool, optional): if False, an existing file at an entry's path
                raises ``FileExistsError``. Defaults to True.
            num_threads (int, optional): create files with this many threads.
            return_early (bool, optional): return a ``Future`` of the result.
            share_non_tensor (bool, optional): accepted for compatibility.
            robust_key (bool, optional): percent-encode keys in file names (``None`` is True).
            archive (bool, optional): create a zero-filled ``.tdz`` archive at ``prefix``
                and load it writable: writes into the result reach the archive (call
                :func:`~tensordict.refresh_archive_checksums` before handing it to a zip
                tool). Defaults to ``None``: an archive when ``prefix`` ends with ``".tdz"``.

        Returns:
            The new, locked, zero-filled tensordict (or a ``Future`` of it); for an
            archive, the unlocked tensordict loaded from it.

        Raises:
            ValueError: if a key cannot be stored (see :meth:`memmap`).
            FileExistsError: with ``existsok=False``, if an entry's file exists.

        Examples:
            >>> template = TensorDict({"obs": torch.zeros(3)}, []).expand(1_000_000)
            >>> buffer = template.memmap_like("replay")
            >>> buffer.batch_size
            torch.Size([1000000])
        """
        if _archive_wanted(prefix, archive, None):
            return _write_archive(
                self, prefix, True, num_threads, existsok, robust_key, return_early, None
            )
        return _write(self, prefix, True, False, num_threads, existsok, robust_key, return_early)

    @classmethod
    def load_memmap(
        cls,
        prefix: str | os.PathLike,
        device: torch.device | None = None,
        non_blocking: bool = False,
        *,
        out: TensorCollection | None = None,
        robust_key: bool | None = None,
        subpath: NestedKey | None = None,
        mode: str | None = None,
        num_threads: int = 0,
        allow_pickle: bool = False,
        lazy: bool = False,
    ) -> TensorCollection:
        """Opens a memory-mapped folder (or ``.tdz`` archive) without copying and returns its tensordict.

        The result is memory-mapped (:meth:`is_memmap` is True, :attr:`saved_path` is
        the folder, :meth:`memmap_refresh_` and the ``make_memmap*`` methods work at
        once) and unlocked, so that code adding keys after loading keeps working.
        Entries whose file is missing are dropped. Every other problem raises an error
        naming the path: an unreadable ``meta.json``, a file of the wrong size (never
        extended or truncated), an unknown dtype or class, a name that would leave the
        folder, a symbolic link. Nothing is imported, and nothing is unpickled unless
        ``allow_pickle=True``. Loading never writes.

        A file at ``prefix`` is read as an archive (see :func:`~tensordict.pack_memmap`):
        it is mapped once and each leaf is a plain tensor viewing that mapping (a copy
        for compressed, unaligned or nested leaves); the result is not memory-mapped in
        a folder (:meth:`is_memmap` is False), as with the well-known implementation.

        Args:
            prefix (str or path): the folder, or an archive file.
            device (torch.device, optional): move the result there (a copy, unless it is
                the CPU).
            non_blocking (bool, optional): passed on to the move.

        Keyword Args:
            out (TensorDictBase, optional): copy the loaded entries into this tensordict.
            robust_key (bool, optional): the key encoding used when the folder was
                written (``None`` is True).
            subpath (NestedKey or str, optional): load only the nested tensordict at
                this key, given as a nested key (``("module", "0")``) or as its parts
                joined by ``"/"`` (``"module/0"``); only that level and those below it
                are read. A tensorclass level is passed through to its fields, as
                ``obj.get(key)`` does. Defaults to ``None`` (the whole tree).
            mode (str, optional): how the files are mapped. ``"r"``: copy-on-write, read
                only as far as the folder goes: writes into the leaves stay in this
                process and the files never change, and every change of the folder
                through the result (``make_memmap*``, ``memmap_()`` of new entries)
                raises :class:`~tensordict.errors.ReadOnlyMemmapError`. ``"r+"``:
                shared, writes into the leaves reach the files, and a file this
                process may not write raises ``PermissionError`` (for an archive:
                mapped writable, see ``memmap_like``). Defaults to ``None``: each file
                shared when this process may write it, copy-on-write otherwise (an
                archive: copy-on-write).
            num_threads (int, optional): accepted for compatibility, and without
                effect here: a folder's files are mapped, not read, and an archive's
                compressed leaves are inflated one after the other, each in bounded
                chunks. Defaults to ``0``.
            allow_pickle (bool, optional): unpickle non-tensor values that JSON could not
                hold. Only for folders you trust. Defaults to False.
            lazy (bool, optional): our extension, not in the well-known API: open the
                folder lazily. Only the top ``meta.json`` is read now (its level's
                batch size, device and names checked); each entry is read and mapped
                on its first access, and a nested TensorDict level is opened lazily
                on its first access. Every check of the eager load still runs, on
                the first access of the entry it concerns, and raises the same error
                there; an entry whose file is missing is dropped then (``keys()``
                lists it until it is accessed). Reading, writing, indexing,
                ``apply``, iteration, ``memmap_()`` and ``memmap_refresh_()`` give the
                results of an eager load. The mapped tensors of lazy levels are held
                by one process-wide queue of the most recently used ones, of
                ``min(16384, vm.max_map_count // 4)`` tensors (``vm.max_map_count``,
                65,530 by default, is the number of memory mappings Linux allows a
                process, and each file is one: a quarter leaves room for the
                interpreter, torch, eager loads and your own tensors); a tensor that
                leaves the queue and that nothing references is unmapped, and mapped
                again on its next access, so that every entry of a folder of 100,000
                can be visited. A tensor you hold stays valid. With ``mode="r"``, a
                write into such a released copy-on-write tensor is forgotten with it.
                Levels of other classes (tensorclass, lazy stack) and archives are
                read whole. Defaults to False.

        Returns:
            The tensordict (of the class the folder records).

        Raises:
            FileNotFoundError: if the folder or its ``meta.json`` is missing.
            ValueError: if the folder breaks the format (see above), ``mode`` is not
                ``None``, ``"r"`` or ``"r+"``, or ``subpath`` names no sub-tensordict.
            PermissionError: with ``mode="r+"``, if a file is read-only.

        Examples:
            >>> td = TensorDict({"a": torch.arange(3), "sub": {"b": torch.ones(3)}}, [3]).memmap("ckpt")
            >>> TensorDict.load_memmap("ckpt")["a"]
            MemoryMappedTensor([0, 1, 2])
            >>> TensorDict.load_memmap("ckpt", subpath="sub")["b"]
            MemoryMappedTensor([1., 1., 1.])
            >>> frozen = TensorDict.load_memmap("ckpt", mode="r")
            >>> frozen["a"][0] = 7  # stays in this process: the file is not changed
            >>> TensorDict.load_memmap("ckpt")["a"][0]
            MemoryMappedTensor(0)
            >>> lazy = TensorDict.load_memmap("ckpt", lazy=True)  # reads ckpt/meta.json only
            >>> list(lazy.keys()), lazy["sub", "b"]
            (['a', 'sub'], MemoryMappedTensor([1., 1., 1.]))
        """
        options = _load_options(robust_key, allow_pickle, mode, num_threads)
        options.lazy = bool(lazy)
        parts = () if subpath is None else fmt.subpath_parts(subpath)
        if _archive.is_archive_file(prefix):
            loaded = _archive.load_archive(prefix, options, writable=mode == "r+", subpath=parts)
        else:
            loaded = _io.load_tree(prefix, options, parts, cls._memmap_load_as)
        if device is not None and torch.device(device).type != "cpu":
            loaded = loaded.to(device, non_blocking=non_blocking)
        if out is not None:
            out.update_(loaded)
            return out
        return loaded

    def _memmap_missing(self, robust_key) -> None:
        """Brings the tensordict's own folder up to date with what this tensordict changed.

        Each missing tensor is added as :meth:`make_memmap_from_tensor` adds one, and a
        new non-tensor value or sub-tensordict is written and then recorded: a key
        another writer recorded meanwhile is an error. A non-tensor value of this
        tensordict's that changed is rewritten (atomically), and the records of the
        entries it deleted are removed (see :meth:`~tensordict.memmap._io.Level.forget`).
        Entries other writers recorded stay as they are.
        """
        inner = self._tensordict_of()
        level = inner._mm
        folder = level.path
        items = _read_items(inner)  # the entries a lazy level did not read are its files
        present = set(inner._keys_level())
        mine = level.ours()
        deleted = [key for key in mine if key not in present]
        for key, value in items:
            if isinstance(value, torch.Tensor):
                own = os.path.join(folder, fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key))
                mapped = getattr(value, "_filename", None)
                if mapped is not None and mapped != own:  # maybe a legacy unencoded name
                    own = fmt.entry_path(folder, key, fmt.MEMMAP_SUFFIX, robust_key)
                if mapped == own and (value.is_nested or _io.is_file_of(value, own)):
                    continue  # this entry's own file, whole
                inner._del_str(key)
                try:
                    inner.make_memmap_from_tensor(key, value, robust_key=robust_key)
                except BaseException:
                    inner._store_entry(key, value)
                    raise
            elif is_non_tensor(value):
                if key not in level.meta:
                    level.claim(key)  # before writing: never over another writer's value
                    path = os.path.join(folder, fmt.file_name(key, "", robust_key))
                    _io.write_nontensor(path, value)
                    level.add(key, {"type": value._memmap_record})
                    level.inodes[key] = _io.nontensor_mark(os.stat(fmt.meta_path(path)))
                elif key in mine:
                    _io.rewrite_nontensor(level, key, value, robust_key)
            elif value._mm is not None and value._memmap_folder() is not None:
                value._memmap_missing(robust_key)
            else:
                if key in level.meta:
                    msg = f"cannot memory-map the new sub-tensordict {key!r}: {folder!r} records an entry of that key"
                    raise EntryExistsError(msg)
                level.claim(key)  # before writing: never over another writer's entry
                value.memmap_(os.path.join(folder, fmt.file_name(key, "", robust_key)))
                level.add(key, {"type": value._memmap_record_type()})
        if deleted:  # last: an entry renamed in memory is written under its new key first
            level.forget(deleted)
            level.taken = None  # rebuilt from the entries on the next add

    @classmethod
    def _memmap_load_as(cls, folder: str, meta: dict, stat, options):
        """Loads a parsed folder for ``cls.load_memmap``: here, as the class the folder records."""
        return _io.load_folder(folder, meta, stat, options)

    def _memmap_folder(self) -> str | None:
        """The folder this tensordict was memory-mapped to or loaded from, or ``None``."""
        level = self._mm
        return None if level is None else level.path

    @classmethod
    def load(
        cls,
        prefix: str | os.PathLike,
        device: DeviceType | None = None,
        non_blocking: bool = False,
        *,
        out: TensorCollection | None = None,
        **kwargs: Any,
    ) -> TensorCollection:
        """Opens a memory-mapped folder: the same as :meth:`load_memmap`, with its arguments.

        Args:
            prefix (str or path): the folder, or an archive file.
            device (torch.device, optional): move the result there (a copy, unless it is
                the CPU).
            non_blocking (bool, optional): passed on to the move.

        Keyword Args:
            out (TensorDictBase, optional): copy the loaded entries into this tensordict.
            **kwargs: the other keyword arguments of :meth:`load_memmap` (``robust_key``,
                ``subpath``, ``mode``, ``num_threads``, ``allow_pickle``).

        Returns:
            The loaded tensordict.

        Raises:
            FileNotFoundError: if the folder or its ``meta.json`` is missing.
            ValueError: if the folder breaks the format.

        Examples:
            >>> _ = TensorDict({"a": torch.arange(2)}, [2]).save("ckpt")
            >>> TensorDict.load("ckpt")["a"].tolist()
            [0, 1]
        """
        return cls.load_memmap(prefix, device, non_blocking, out=out, **kwargs)

    def save(
        self: T,
        prefix: str | os.PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        **kwargs: Any,
    ) -> T | Future:
        """Writes the tensordict to the folder ``prefix``: the same as :meth:`memmap`, with its arguments.

        ``dumps`` is another name for it. As with :meth:`memmap`, every write is atomic
        (``atomic`` is accepted, whatever its value).

        Args:
            prefix (str or path, optional): the folder, or an archive file (a path ending
                with ``".tdz"``). Defaults to ``None`` (shared memory).
            copy_existing (bool, optional): accepted for compatibility; files are always
                written fresh.

        Keyword Args:
            num_threads (int, optional): write files with this many threads. Defaults to 0.
            **kwargs: the other keyword arguments of :meth:`memmap` (``return_early``,
                ``share_non_tensor``, ``existsok``, ``robust_key``, ``archive``,
                ``compression``, ``atomic``).

        Returns:
            The memory-mapped, locked copy.

        Raises:
            ValueError: if a key cannot be stored (see :meth:`memmap`).

        Examples:
            >>> TensorDict({"a": torch.arange(2)}, [2]).save("ckpt").is_memmap()
            True
        """
        return self.memmap(prefix, copy_existing, num_threads=num_threads, **kwargs)

    dumps = save

    def memmap_refresh_(self: T, *, allow_pickle: bool = False) -> T:
        """Re-reads the folder in place, so that entries added by others appear, and returns the tensordict.

        Only levels whose ``meta.json`` changed are parsed and re-mapped; the
        tensordict and its sub-tensordicts keep their identity. Entries that
        ``meta.json`` does not record (a storage without a file) are dropped.
        Nothing is written. New files are mapped as the tensordict was loaded
        (``mode`` of :meth:`load_memmap`).

        Keyword Args:
            allow_pickle (bool, optional): unpickle non-tensor values that JSON could
                not hold, written since. Defaults to False.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the tensordict is not memory-mapped.
            FileNotFoundError: if the folder's ``meta.json`` is gone.
            ValueError: if the folder now breaks the format.

        Examples:
            >>> writer = TensorDict({}, [2]).memmap("shared")
            >>> reader = TensorDict.load_memmap("shared")
            >>> _ = writer.make_memmap("x", (2, 3))
            >>> reader.memmap_refresh_() is reader, "x" in reader.keys()
            (True, True)
        """
        level = self._require_memmap("memmap_refresh_()")
        if level.path is not None:
            self._memmap_refresh(_io.Options(level.robust_key, allow_pickle, None, level.mode))
        return self

    def load_memmap_(
        self: T,
        prefix: str | os.PathLike | None = None,
        robust_key: bool | None = None,
        *,
        allow_pickle: bool = False,
        mode: str | None = None,
    ) -> T:
        """Loads the folder ``prefix`` into this tensordict in place and returns it.

        The tensordict takes the folder's entries and state (it becomes memory-mapped
        there); its identity is kept. Without ``prefix`` its own folder is re-read (see
        :meth:`memmap_refresh_`). A ``.tdz`` archive is read as :meth:`load_memmap`
        reads it (its leaves view the archive's mapping; not memory-mapped in a folder).

        Args:
            prefix (str or path, optional): the folder. Defaults to the tensordict's own.
            robust_key (bool, optional): the key encoding of the folder (``None`` is True).

        Keyword Args:
            allow_pickle (bool, optional): unpickle non-tensor values JSON could not hold.
            mode (str, optional): how the files are mapped: ``None``, ``"r"`` or
                ``"r+"``, as for :meth:`load_memmap`. Defaults to ``None``.

        Returns:
            The tensordict itself.

        Raises:
            TypeError: if the folder holds another class than this tensordict's.
            FileNotFoundError: if the folder or its ``meta.json`` is missing.
            ValueError: if the folder breaks the format, or ``mode`` is unknown.

        Examples:
            >>> _ = TensorDict({"a": torch.arange(2)}, [2]).memmap("ckpt")
            >>> td = TensorDict({}, [])
            >>> td.load_memmap_("ckpt") is td, td["a"].tolist()
            (True, [0, 1])
        """
        options = _load_options(robust_key, allow_pickle, mode, 0)
        if prefix is None:
            return self.memmap_refresh_(allow_pickle=allow_pickle)
        if _archive.is_archive_file(prefix):
            loaded = _archive.load_archive(prefix, options, writable=mode == "r+")
        else:
            loaded = _io.load_tree(prefix, options, (), type(self)._memmap_load_as)
        if type(loaded) is not type(self):
            msg = f"cannot load the {type(loaded).__name__} folder {os.fspath(prefix)!r} into a {type(self).__name__}"
            raise TypeError(msg)
        self._memmap_load_into(loaded)
        return self

    def load_(self: T, prefix: str | os.PathLike, *args: Any, **kwargs: Any) -> T:
        """Deprecated: calls :meth:`load_memmap_` with the same arguments.

        Args:
            prefix (str or Path): the folder to read.
            *args: passed to :meth:`load_memmap_`.
            **kwargs: passed to :meth:`load_memmap_`.

        Returns:
            What :meth:`load_memmap_` returns (the tensordict).

        Examples:
            >>> import tempfile, warnings
            >>> with tempfile.TemporaryDirectory() as d:
            ...     _ = TensorDict(a=torch.ones(2), batch_size=[2]).memmap(d)
            ...     with warnings.catch_warnings():
            ...         warnings.simplefilter("ignore")
            ...         TensorDict(a=torch.zeros(2), batch_size=[2]).load_(d)["a"].tolist()
            [1.0, 1.0]
        """
        warn(
            "TensorDictBase.load_() is deprecated and will be removed in TensorDict 0.17. Use "
            "load_memmap_() instead.",
            DeprecationWarning,
        )
        return self.load_memmap_(prefix, *args, **kwargs)

    # ------------------------------------------------------------------ single entries
    def _plan_new_entry(self, key, what: str, robust_key):
        """Checks that ``key`` can be added and returns ``(parts, parent, folder, depth)``.

        ``parent`` is the deepest existing tensordict on the path, ``folder`` the
        folder of the last node (``None`` without a directory) and ``depth`` the
        first part of the key that does not exist yet. ``robust_key`` is resolved by
        the caller. Nothing is changed.
        """
        level = self._require_memmap(what)
        level.check_writable(what)
        parts = _key_parts(key)
        node = self
        folder = level.path
        if folder is not None:
            fmt.encode_key(parts[-1], robust_key)  # refuses a name that is not a file name
        for depth, part in enumerate(parts[:-1]):
            inner = node._tensordict_of()
            sub = inner._get_str(part, None)
            if sub is None:
                if folder is not None:
                    self._check_new_folders(parts, inner, depth, folder, robust_key)
                    for rest in parts[depth:-1]:
                        folder = os.path.join(folder, fmt.file_name(rest, "", robust_key))
                return parts, node, folder, depth
            if not isinstance(sub, MemmapMixin):
                msg = (
                    f"cannot add {parts!r}: the entry {parts[: depth + 1]!r} is a "
                    f"{type(sub).__name__}, not a tensordict"
                )
                raise RuntimeError(msg)
            node = sub
            sub_level = sub._tensordict_of()._mm
            if folder is not None:
                folder = (
                    sub_level.path
                    if sub_level is not None and sub_level.path
                    else os.path.join(folder, fmt.file_name(part, "", robust_key))
                )
        inner = node._tensordict_of()
        if inner._get_str(parts[-1], None) is not None:
            full = parts[0] if len(parts) == 1 else parts
            msg = f"cannot add {full!r}: the key already exists in the memory-mapped tensordict"
            raise EntryExistsError(msg)
        return parts, node, folder, len(parts) - 1

    def _tensordict_of(self):
        """The tensordict that holds this object's entries (itself; a tensorclass's is its data)."""
        return self

    def _check_new_folders(self, parts: tuple, inner, depth: int, folder: str, robust_key) -> None:
        """Refuses sub-tensordicts of a tuple key whose names the format cannot store."""
        taken = _taken_names(inner) if inner._mm is not None else {}
        for i, part in enumerate(parts[depth:-1]):
            fmt.check_level_keys(folder, {part: "folder"}, robust_key)
            name = fmt.file_name(part, "", robust_key)
            if i == 0 and name in taken:
                msg = (
                    f"cannot create the sub-tensordict {parts[: depth + 1]!r} in {folder!r}: its folder "
                    f"name {name!r} is already used by the entry {taken[name]!r}"
                )
                raise fmt.MemmapFormatError(msg)
            folder = os.path.join(folder, name)

    def _attach(
        self, parts: tuple, node, depth: int, tensor, record, robust_key, renames=()
    ) -> None:
        """Creates the missing sub-tensordicts from ``depth`` on and stores ``tensor`` at ``parts``.

        With a ``record`` the entry is recorded in ``meta.json`` (its files first moved
        from their temporary ``renames``); another writer's entry of that key is an error.
        """
        for part in parts[depth:-1]:
            inner = node._tensordict_of()
            adopted = inner._get_str(part, None)  # a level an adopted one brought along
            if adopted is not None:
                if not isinstance(adopted, MemmapMixin):
                    raise _taken_by_another(parts, part, inner._mm.path, "a tensor")
                node = adopted
                continue
            node = self._new_level(parts, inner, part, robust_key)
        inner = node._tensordict_of()
        if depth < len(parts) - 1:  # the last level may be another writer's: check it again
            if inner._get_str(parts[-1], None) is not None:
                raise _taken_by_another(parts, parts[-1], inner._mm.path, "an entry")
            if not tensor.is_nested:
                self._check_feature_shape(parts, node, len(parts) - 1, tensor.shape)
        level = inner._mm
        if level.path is not None and record is not None:
            level.add(parts[-1], record, renames)
        elif level.path is not None and parts[-1] in level.meta:
            # An entry that is not recorded over a stale record of an earlier entry of that
            # key: the record is removed, so that it cannot come back.
            level.update({parts[-1]: None})
        if level.taken is not None:
            kind = "nested" if tensor.is_nested else "tensor"
            for name in fmt.entry_names(parts[-1], kind, robust_key):
                level.taken[name] = parts[-1]
        inner._store_entry(parts[-1], tensor)

    def _new_level(self, parts: tuple, inner, part: str, robust_key):
        """The new sub-tensordict ``part`` of ``inner``, created on disk too, and stored.

        When another writer created a sub-tensordict of that key meanwhile (two
        processes adding ``("grp", "a")`` and ``("grp", "b")`` at once), it is the same
        level: it is read again under its lock and adopted, so that the new entry goes
        in beside the other writer's.

        Raises:
            EntryExistsError: if another writer recorded a tensor, or another kind of
                entry, under that key meanwhile.
        """
        parent_level = inner._mm
        sub = inner._new_like({}, inner.batch_size)
        sub_folder = None
        if parent_level.path is not None:
            sub_folder = os.path.join(parent_level.path, fmt.file_name(part, "", robust_key))
        sub._mm = _io.Level(sub_folder, robust_key=robust_key)
        if sub_folder is not None:
            record = {"type": sub._memmap_record_type()}

            def create() -> None:
                os.makedirs(sub_folder, exist_ok=True)
                sub._mm.update(fmt.level_meta(sub.batch_size, sub.device, names=sub.names))

            found = parent_level.add_level(part, record, create)
            if found is not None:
                sub = _adopt_level(parts, inner, part, sub_folder, found, record, robust_key)
        if parent_level.taken is not None:
            parent_level.taken[fmt.file_name(part, "", robust_key)] = part
        inner._store_entry(part, sub)
        return sub

    def _check_feature_shape(self, parts, node, depth, shape) -> None:
        batch_size = node._tensordict_of().batch_size
        if isinstance(shape, torch.Tensor):
            return
        if tuple(shape[: len(batch_size)]) != tuple(batch_size):
            full = parts[0] if len(parts) == 1 else parts
            msg = (
                f"cannot add {full!r}: its shape {list(shape)} does not start with the batch size "
                f"{list(batch_size)}"
            )
            raise RuntimeError(msg)

    def make_memmap(
        self,
        key: NestedKey,
        shape: ShapeType | torch.Tensor,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = None,
    ) -> MemoryMappedTensor:
        """Adds a zero-filled memory-mapped tensor at ``key`` and returns it.

        The tensordict must be memory-mapped. The entry is written even though the
        tensordict is locked; with a directory, its file is created there and
        recorded in ``meta.json``, so other tensordicts sharing the files see it after
        :meth:`memmap_refresh_`.

        Args:
            key (NestedKey): the new key; a tuple creates missing sub-tensordicts.
            shape (torch.Size or torch.Tensor): the shape (or a 2-D tensor of shapes
                for a nested tensor).

        Keyword Args:
            dtype (torch.dtype, optional): defaults to ``torch.get_default_dtype()``.
            robust_key (bool, optional): accepted for compatibility; the tensordict's
                own key encoding is used.

        Returns:
            The new ``MemoryMappedTensor``.

        Raises:
            RuntimeError: if the tensordict is not memory-mapped or the key exists.

        Examples:
            >>> td = TensorDict({}, [3]).memmap("grow")
            >>> td.make_memmap("x", (3, 4)).shape
            torch.Size([3, 4])
        """
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if not isinstance(dtype, torch.dtype):
            msg = f"dtype must be a torch.dtype, got {dtype!r}"
            raise TypeError(msg)
        shape = shape if isinstance(shape, torch.Tensor) else torch.Size(shape)
        return self._make_entry(key, "make_memmap()", robust_key, shape, dtype, None)

    def make_memmap_from_tensor(
        self,
        key: NestedKey,
        tensor: torch.Tensor,
        *,
        copy_data: bool = True,
        existsok: bool = True,
        robust_key: bool | None = None,
    ) -> MemoryMappedTensor:
        """Adds a memory-mapped copy of ``tensor`` at ``key`` and returns it.

        The tensordict must be memory-mapped; the entry is written even though it is
        locked. With a directory the data is copied into the entry's file there.

        Args:
            key (NestedKey): the new key.
            tensor (torch.Tensor): the data; its leading dims must equal the batch size.

        Keyword Args:
            copy_data (bool, optional): if False, only the shape and dtype are used and
                the new tensor reads zeros. Defaults to True.
            existsok (bool, optional): if False, a file already at the entry's path (one
                that no entry records, say a leftover) raises instead of being replaced.
                Defaults to True.
            robust_key (bool, optional): accepted for compatibility; the tensordict's
                own key encoding is used.

        Returns:
            The new ``MemoryMappedTensor``.

        Raises:
            RuntimeError: if the tensordict is not memory-mapped or the key exists.
            FileExistsError: with ``existsok=False``, if a file is at the entry's path.

        Examples:
            >>> td = TensorDict({}, [2]).memmap("grow2")
            >>> td.make_memmap_from_tensor("y", torch.ones(2, 5))[0, 0]
            MemoryMappedTensor(1.)
        """
        if not isinstance(tensor, torch.Tensor):
            msg = f"make_memmap_from_tensor() needs a tensor, got {type(tensor).__name__}"
            raise TypeError(msg)
        source = tensor.detach()
        if not copy_data:
            source = torch.zeros_like(source) if not source.is_nested else source.clone().zero_()
        shape = source._nested_tensor_size() if source.is_nested else source.shape
        return self._make_entry(
            key, "make_memmap_from_tensor()", robust_key, shape, source.dtype, source, existsok
        )

    def _make_entry(self, key, what: str, robust_key, shape, dtype, source, existsok=True):
        """Adds a new entry of ``shape`` and ``dtype``: zeros, or a copy of ``source``."""
        level = self._require_memmap(what)
        robust_key = level.robust_key if robust_key is None else robust_key
        parts, node, folder, depth = self._plan_new_entry(key, what, robust_key)
        nested = isinstance(shape, torch.Tensor)
        if not nested:
            self._check_feature_shape(parts, node, depth, shape)
        if folder is None:
            tensor = _new_entry_tensor(None, None, shape, dtype, source)
            self._attach(parts, node, depth, tensor, None, robust_key)
            return tensor
        return self._add_file_entry(
            parts,
            node,
            depth,
            folder,
            lambda path, shape_path: _new_entry_tensor(path, shape_path, shape, dtype, source),
            robust_key,
            "nested" if nested else "tensor",
            existsok,
        )

    def _add_file_entry(
        self, parts, node, depth, folder, create, robust_key, kind: str, existsok: bool = True
    ):
        """Creates the new entry's file(s) with ``create(path, shape_path)``, records and stores it."""
        self._check_new_names(parts, node, depth, folder, kind, robust_key)
        path = os.path.join(folder, fmt.file_name(parts[-1], fmt.MEMMAP_SUFFIX, robust_key))
        if not existsok and os.path.lexists(path):
            full = parts[0] if len(parts) == 1 else parts
            msg = f"cannot add {full!r}: {path!r} already exists and existsok=False"
            raise ExistingFileError(msg)
        shape_path = None
        if kind == "nested":
            shape_path = os.path.join(
                folder, fmt.file_name(parts[-1], fmt.SHAPE_SUFFIX, robust_key)
            )
        os.makedirs(folder, exist_ok=True)
        # Fresh files under temporary names: moved into place only once meta.json (under
        # the lock) shows no other writer recorded the key, so no recorded file is replaced.
        renames = [(_fs.temporary_name(path), path)]
        if shape_path is not None:
            renames.append((_fs.temporary_name(shape_path), shape_path))
        try:
            tensor = create(renames[0][0], None if shape_path is None else renames[1][0])
            self._attach(parts, node, depth, tensor, fmt.tensor_record(tensor), robust_key, renames)
        except BaseException:
            for temporary, _ in renames:
                if os.path.lexists(temporary):
                    os.unlink(temporary)
            raise
        tensor._filename = path
        return tensor

    def _check_new_names(self, parts, node, depth, folder, kind: str, robust_key) -> None:
        """Refuses a new entry whose key or file names collide with the level's others.

        The level's taken names are built once and then kept up to date by ``_attach``,
        so adding an entry costs the same at 10 keys and at 10,000.
        """
        key = parts[-1]
        fmt.check_level_keys(folder, {key: kind}, robust_key)
        if depth < len(parts) - 1:
            return
        taken = _taken_names(node._tensordict_of())
        for name in fmt.entry_names(key, kind, robust_key):
            other = taken.get(name)
            if other is not None and other != key:  # the same key's is a stale name of ours
                msg = (
                    f"cannot add {key!r} in {folder!r}: its file name {name!r} is already used by the "
                    f"entry {other!r}; rename one of them"
                )
                raise fmt.MemmapFormatError(msg)

    def make_memmap_from_storage(
        self,
        key: NestedKey,
        storage: torch.UntypedStorage,
        shape: ShapeType | torch.Tensor,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = True,
    ) -> MemoryMappedTensor:
        """Adds a memory-mapped tensor at ``key`` that reads its data from ``storage``, and returns it.

        The tensordict must be memory-mapped (see :meth:`memmap`). The entry is
        written even though a memory-mapped tensordict is locked. Other tensordicts
        that share its files, for example in other processes, see it only after
        :meth:`memmap_refresh_`.

        If the storage has a file, it must be the file of the new entry in the
        directory of the tensordict (``<folder of the last node>/<encoded key>.memmap``),
        or the call raises a ``RuntimeError``; the entry is then recorded in
        ``meta.json``. A storage without a file is used as it is: its data is not
        written to the directory and the entry is not recorded. If the tensordict has
        a directory and the storage is not empty, :meth:`load_memmap` and
        :meth:`memmap_refresh_` drop the entry, and the call emits a
        ``FutureWarning``: starting with TensorDict 0.17 this will raise a
        ``RuntimeError``. Use :meth:`make_memmap_from_tensor` to copy the data into
        the directory.

        Args:
            key (NestedKey): the key of the new entry. A tuple key creates the missing
                nested tensordicts (on disk too).
            storage (torch.UntypedStorage): the storage of the new tensor, in physical
                memory (a ``TypedStorage`` is unwrapped).
            shape (torch.Size or torch.Tensor): the shape of the new tensor, or a 2-D
                tensor of shapes for a nested tensor.

        Keyword Args:
            dtype (torch.dtype, optional): the dtype. Defaults to ``None``, which uses
                ``torch.get_default_dtype()``.
            robust_key (bool, optional): percent-encode the key in file names. ``None``
                is the same as True. Defaults to True.

        Returns:
            The new ``MemoryMappedTensor``; ``td.get(key)`` shares its storage.

        Raises:
            RuntimeError: if the tensordict is not memory-mapped, if the key exists, or
                if the file of the storage is not the file of the new entry.
            TypeError: if the storage is not a storage, or the key not a string or a
                tuple of strings.
            ValueError: if the storage is not in physical memory (``meta`` device, an
                accelerator) or its size does not match ``shape`` and ``dtype``.

        Examples:
            >>> td = TensorDict({}, []).memmap("shared")
            >>> storage = MemoryMappedTensor.zeros(3, 4, filename="shared/x.memmap").untyped_storage()
            >>> td.make_memmap_from_storage("x", storage, (3, 4)).shape
            torch.Size([3, 4])
        """
        storage, shape, dtype, needed, nested, filename = check_storage(key, storage, shape, dtype)
        robust_key = True if robust_key is None else robust_key
        parts, node, folder, depth = self._plan_new_entry(
            key, "make_memmap_from_storage()", robust_key
        )
        if not nested:
            self._check_feature_shape(parts, node, depth, shape)
        full = parts[0] if len(parts) == 1 else parts
        if filename is None:
            if folder is not None and needed > 0:
                warn_storage_without_file(full, self._mm.path)
            tensor = MemoryMappedTensor.from_storage(storage, shape=shape, dtype=dtype)
            record = None
            if folder is not None and needed == 0 and not nested:
                # Nothing to lose: an entry without elements is recorded (the format keeps
                # no file for it) and loads back.
                self._check_new_names(parts, node, depth, folder, "tensor", robust_key)
                record = fmt.tensor_record(tensor)
            self._attach(parts, node, depth, tensor, record, robust_key)
            return tensor
        if folder is None:
            msg = (
                f"the storage for {full!r} has the file {filename!r}, but the tensordict has no "
                "directory, so no file can be the file of the new entry"
            )
            raise RuntimeError(msg)
        self._check_new_names(
            parts, node, depth, folder, "nested" if nested else "tensor", robust_key
        )
        expected = os.path.join(folder, fmt.file_name(parts[-1], fmt.MEMMAP_SUFFIX, robust_key))
        if os.path.realpath(filename) != os.path.realpath(expected):
            # torch keeps the name the file was mapped under; the kernel knows where it is now
            # (a folder written through a staging folder was renamed into place since)
            current = mapped_path(storage.data_ptr()) if storage.nbytes() else None
            if current != os.path.realpath(expected):
                msg = (
                    f"the storage for {full!r} has the file {current or filename!r}, which is not "
                    f"the file of the new entry {expected!r}; create the storage from that "
                    "file, or use make_memmap_from_tensor()"
                )
                raise RuntimeError(msg)
            filename = expected
        tensor = MemoryMappedTensor.from_storage(
            storage, shape=shape, dtype=dtype, filename=filename
        )
        renames = []
        if nested:
            shape_path = os.path.join(
                folder, fmt.file_name(parts[-1], fmt.SHAPE_SUFFIX, robust_key)
            )
            renames.append((_fs.temporary_name(shape_path), shape_path))
        try:
            for temporary, _ in renames:
                MemoryMappedTensor.from_tensor(shape.to(torch.int64), filename=temporary)
            record = fmt.tensor_record(tensor)
            self._attach(parts, node, depth, tensor, record, robust_key, renames)
        except BaseException:
            for temporary, _ in renames:
                if os.path.lexists(temporary):
                    os.unlink(temporary)
            raise
        return tensor

    # ------------------------------------------------------------------ shared memory
    def share_memory_(self: T) -> T:
        """Moves every tensor to shared memory (so that child processes share it) and locks the tensordict.

        Tensors already in shared memory or in a file stay where they are.

        Returns:
            The tensordict itself, locked.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2]).share_memory_()
            >>> td.is_shared(), td.is_locked
            (True, True)
        """
        for value in self._stored_tensors():
            value.share_memory_()
        _share_values(self)
        return self.lock_()

    def is_shared(self) -> bool:
        """Returns True when the tensordict has tensors and every one is in shared memory or a file.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.is_shared(), td.memmap().is_shared()
            (False, True)
        """
        leaves = list(self._stored_tensors())
        return bool(leaves) and all(v.is_shared() or getattr(v, "_filename", None) for v in leaves)

    def _stored_tensors(self):
        """The tensors this tensordict holds (a lazy stack's: its members', never stacked copies)."""
        for _, value in self._items_level():
            if isinstance(value, torch.Tensor):
                yield value
            elif getattr(type(value), "_is_non_tensor", False):
                continue
            elif getattr(type(value), "_is_tensorclass", False):
                yield from value._tensordict._stored_tensors()
            elif hasattr(value, "_stored_tensors"):
                yield from value._stored_tensors()


def _share_values(td) -> None:
    """Moves the values of the non-tensor entries under ``td`` that JSON holds to shared memory.

    A write into such an entry (``td[idx] = ...``) then reaches every process that holds
    the tensordict (see :mod:`tensordict._shared_value`).
    """
    entries = []
    _non_tensor_entries(td, entries)
    if entries:
        share_values(entries)


def _non_tensor_entries(td, out: list) -> None:
    for _, value in td._items_level():
        if isinstance(value, NonTensorDataBase):
            out.append(value)
        elif getattr(type(value), "_is_non_tensor", False):
            out.extend(value._cells())
        elif getattr(type(value), "_is_tensorclass", False):
            _non_tensor_entries(value._tensordict, out)
        elif getattr(type(value), "_is_lazy", False):
            for member in value.tensordicts:
                _non_tensor_entries(member, out)
        elif is_tensor_collection(value):
            _non_tensor_entries(value, out)


def _taken_by_another(parts: tuple, part: str, folder, what: str) -> EntryExistsError:
    msg = (
        f"cannot add {parts!r}: another writer added {part!r} in {folder!r} meanwhile as "
        f"{what}, not a sub-tensordict to add to (refresh with memmap_refresh_() to see it)"
    )
    return EntryExistsError(msg)


def _adopt_level(parts, inner, part: str, folder: str, found, record: dict, robust_key):
    """The sub-tensordict another writer recorded as ``found`` at ``part``, read again under its lock.

    Raises:
        EntryExistsError: if ``found`` is not a level of the class the caller would
            have created (a tensor, a non-tensor value, another class).
    """
    if type(found) is not dict or found.get("type") != record["type"]:
        kind = found.get("type") if type(found) is dict else None
        raise _taken_by_another(parts, part, inner._mm.path, "a tensor" if kind is None else kind)
    with _fs.locked(folder):
        sub = _io.load_child(folder, _io.Options(robust_key, False, None))
    if type(sub) is not type(inner._new_like({}, inner.batch_size)):
        raise _taken_by_another(parts, part, inner._mm.path, type(sub).__name__)
    fmt.check_batch_prefix(inner._mm.path, part, sub.batch_size, inner.batch_size)
    return sub


def _taken_names(td) -> dict:
    """The file names used by the entries of one memory-mapped level (cached on its state)."""
    level = td._mm
    if level.taken is None:
        taken = {}
        for key, value in td._items_level():
            for name in fmt.entry_names(key, _io.entry_kind(value), level.robust_key):
                taken[name] = key
        level.taken = taken
    return level.taken


def _new_entry_tensor(path, shape_path, shape, dtype, source):
    """A new entry: zeros of ``shape``/``dtype`` or a copy of ``source``; in ``path`` or shared memory.

    A nested entry (``shape`` a 2-D tensor) also writes its ``.shape.memmap`` to ``shape_path``.
    """
    if isinstance(shape, torch.Tensor):
        if source is None:
            source = torch.nested.nested_tensor(
                [torch.zeros(row, dtype=dtype) for row in shape.tolist()]
            )
        if path is None:
            return MemoryMappedTensor.from_tensor(source)
        MemoryMappedTensor.from_tensor(shape.to(torch.int64), filename=shape_path)
        return MemoryMappedTensor.from_tensor(source, filename=path, copy_existing=True)
    if source is None:
        return MemoryMappedTensor.zeros(shape, dtype=dtype, filename=path)
    if path is None:
        return MemoryMappedTensor.from_tensor(source)
    return MemoryMappedTensor.from_tensor(source, filename=path, copy_existing=True)
