"""Lazy opening: the entries of a dense level, read and mapped on first access.

``TensorDict.load_memmap(prefix, lazy=True)`` (our extension) gives each TensorDict level
a :class:`LazyEntries` as its dict of entries. Opening a level reads its ``meta.json``
and checks the level's own fields (batch size, device, names), as the eager loader
does; an entry is read on its first access, through the very reader the eager loader
uses (``read``, :func:`~tensordict.memmap._io._read_entries` given a ``meta`` of that one
entry), so it meets the same checks and raises the same errors, only later. A nested
level is itself opened lazily on its first access.

Bounded mappings: Linux allows a process ``vm.max_map_count`` memory mappings (65,530
by default), and each tensor file is one. A folder of 100,000 entries cannot be mapped
whole, so the tensors that lazy levels map are held strongly only by one process-wide
queue of the :data:`MAX_MAPPED` most recently used ones; a level keeps a weak
reference to each. A tensor that falls out of the queue and that nothing else
references is released with its mapping, and mapped again on its next access; a
tensor the user holds stays valid (and is the one handed out again while it lives).
Sub-levels, non-tensor values and entries set by the user are held strongly, as in
an eager level: they hold no mapping of their own.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict
from collections.abc import Callable, ItemsView, Iterator, MutableMapping, ValuesView
from typing import Any

import torch

from tensordict.memmap import format as fmt
from tensordict.memmap.tensor import MemoryMappedTensor

_Tensor = torch.Tensor


def _max_map_count() -> int:
    """The kernel's limit of mappings per process (65,530 when it cannot be read)."""
    try:
        with open("/proc/sys/vm/max_map_count") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return 65530


MAX_MAP_COUNT = _max_map_count()
# A quarter of the kernel's limit, at most 16,384: the interpreter and torch's libraries
# use about a thousand mappings, and the rest stays for eager loads, the user's own
# tensors and several trees opened lazily at once (they share this one bound).
MAX_MAPPED = min(16384, MAX_MAP_COUNT // 4)
CHUNK = 256  # entries read at once when a lazy level is iterated (below MAX_MAPPED)

_STAND_IN: list = []  # one MemoryMappedTensor without elements (so without a mapping)
_RECENT: OrderedDict = OrderedDict()  # id(tensor) -> tensor: the strong holders, oldest first


def _keep(tensor: torch.Tensor) -> None:
    """Holds ``tensor`` among the most recently used; the oldest beyond the bound is let go."""
    recent = _RECENT
    key = id(tensor)
    if key in recent:
        recent.move_to_end(key)
        return
    recent[key] = tensor
    while len(recent) > MAX_MAPPED:
        recent.popitem(last=False)


def held_mappings() -> int:
    """How many tensors of lazily opened levels are held by the bounded queue now."""
    return len(_RECENT)


def entry_keys(meta: dict) -> dict:
    """The entry keys of a parsed dense ``meta.json``, in file order (as a dict of ``None``)."""
    keys = dict.fromkeys(meta)
    for field in fmt.FIELD_NAMES:
        if field in keys and fmt.is_field(field, meta[field]):
            del keys[field]
    return keys


def record_inodes(entries: dict, inodes: dict) -> None:
    """Adds to ``inodes`` the inode of each memory-mapped entry's file it lacks (by key).

    A file gone meanwhile is left out: the next refresh finds it changed.
    """
    for key, value in entries.items():
        filename = getattr(value, "_filename", None)
        if key not in inodes and filename is not None:
            try:
                inodes[key] = os.stat(filename).st_ino
            except OSError:
                pass


class _Items(ItemsView):
    __slots__ = ()

    def __iter__(self) -> Iterator:
        return self._mapping.iter_items()


class _Values(ValuesView):
    __slots__ = ()

    def __iter__(self) -> Iterator:
        for _, value in self._mapping.iter_items():
            yield value


class LazyEntries(MutableMapping):
    """The entries of one lazily opened dense level (the ``_tensordict`` of its TensorDict).

    Args:
        folder (str): the level's folder.
        meta (dict): its parsed ``meta.json``.
        options: the load's options (``_io.Options``); ``depth`` is noted now and
            restored for each later read, so the depth limit holds as when eager.
        batch_size (torch.Size): the level's batch size, already checked.
        inodes (dict): key -> inode of each mapped file, filled as entries are read
            (the level's ``Level.inodes``).
        read: the eager reader, ``read(folder, meta, options, batch_size, previous, old)``
            returning ``(data, inodes)``.
    """

    __slots__ = (
        "folder",
        "meta",
        "options",
        "depth",
        "batch_size",
        "inodes",
        "read",
        "level",
        "owner",
        "_keys",
        "_strong",
        "_weak",
        "__weakref__",
    )

    def __init__(
        self,
        folder: str,
        meta: dict,
        options: Any,
        batch_size: torch.Size,
        inodes: dict,
        read: Callable,
    ) -> None:
        self.folder = folder
        self.meta = meta
        self.options = options
        self.depth = options.depth
        self.batch_size = batch_size
        self.inodes = inodes
        self.read = read
        self.level = None  # the Level of the tensordict (set by Level itself)
        self.owner = None  # weakref to the TensorDict (its lock reaches what loads later)
        self._keys = entry_keys(meta)
        self._strong: dict = {}  # sub-levels, non-tensor values, entries set since
        self._weak: dict = {}  # key -> weakref of a mapped tensor

    def __del__(self) -> None:
        # A level that is collected lets go of its tensors in the queue at once, so that a
        # dropped tree holds no mapping there (a tensor held elsewhere stays valid).
        recent = _RECENT
        try:
            for ref in self._weak.values():
                tensor = ref()
                if tensor is not None:
                    recent.pop(id(tensor), None)
        except (AttributeError, TypeError):  # half-built, or at interpreter exit
            pass

    # ------------------------------------------------------------------ reading
    def _read(self, keys: Any) -> dict:
        """Reads ``keys`` (not yet loaded) with the eager reader; drops those whose file is missing."""
        meta = self.meta
        options = self.options
        depth, options.depth = options.depth, self.depth
        lazy, options.lazy = options.lazy, True
        try:
            data, inodes = self.read(
                self.folder, {k: meta[k] for k in keys}, options, self.batch_size, None
            )
        finally:
            options.depth, options.lazy = depth, lazy
        self.inodes.update(inodes)
        dropped = False
        weak, recent, ref = self._weak, _RECENT, weakref.ref
        for key in keys:
            value = data.get(key)
            if value is None:
                del self._keys[key]
                dropped = True
            elif isinstance(value, _Tensor):
                # _adopt and _keep of a tensor, inline: this loop runs once per entry read
                weak[key] = ref(value)
                if id(value) in recent:
                    recent.move_to_end(id(value))
                else:
                    recent[id(value)] = value
            else:
                self._adopt(key, value)
        while len(recent) > MAX_MAPPED:  # once per read: ``data`` holds them all until now
            recent.popitem(last=False)
        if dropped and self.level is not None:
            level = self.level
            level.view = {k: v for k, v in meta.items() if k in self._keys}
        return data

    def _adopt(self, key: str, value: Any) -> None:
        if isinstance(value, _Tensor):
            self._weak[key] = weakref.ref(value)
            _keep(value)
            return
        self._strong[key] = value
        if getattr(type(value), "_is_non_tensor", False) and hasattr(value, "_home"):
            value._home = (self.level, key)
        owner = None if self.owner is None else self.owner()
        if owner is not None:
            owner._lazy_loaded(value)

    def _loaded(self, key: str) -> Any:
        value = self._strong.get(key)
        if value is not None:
            return value
        ref = self._weak.get(key)
        if ref is not None:
            value = ref()
            if value is not None:
                _keep(value)
        return value

    def __getitem__(self, key: str) -> Any:
        value = self._loaded(key)
        if value is not None:
            return value
        if key not in self._keys:
            raise KeyError(key)
        data = self._read((key,))
        if key not in data:
            raise KeyError(key)
        return data[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def iter_items(self) -> Iterator:
        """Yields ``(key, value)`` of every entry, reading the unread ones :data:`CHUNK` at a time."""
        keys = list(self._keys)
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            held = {}
            missing = []
            for key in chunk:
                value = self._loaded(key)
                if value is None:
                    if key in self._keys and key in self.meta:
                        missing.append(key)
                else:
                    held[key] = value
            if missing:
                held.update(self._read(missing))
            for key in chunk:
                if key in held and key in self._keys:
                    yield key, held[key]

    def walk_items(self) -> Iterator:
        """``(key, value)`` pairs for a walk of the keys, which only needs each value's type.

        An unread tensor entry whose file is there is given as a stand-in of its class
        (``MemoryMappedTensor``, no mapping), so that listing the keys of a huge tree
        maps nothing; the other unread entries (sub-levels, non-tensor values, a
        tensor without its file, which is then dropped) are read.
        """
        if not _STAND_IN:
            _STAND_IN.append(MemoryMappedTensor.empty(0))
        stand_in = _STAND_IN[0]
        meta, robust_key = self.meta, self.options.robust_key
        prefix = self.folder + os.sep
        for key in list(self._keys):
            value = self._loaded(key)
            if value is None:
                record = meta.get(key)
                if type(record) is dict and "type" not in record and key in self._keys:
                    try:
                        name = fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key)
                    except ValueError:
                        name = None
                    if name is not None and os.path.lexists(prefix + name):
                        yield key, stand_in
                        continue
                value = self.get(key)
                if value is None:
                    continue
            yield key, value

    def loaded_items(self) -> list:
        """``(key, value)`` of the entries read (or set) so far, nothing read now."""
        out = []
        for key in self._keys:
            value = self._strong.get(key)
            if value is None:
                ref = self._weak.get(key)
                value = None if ref is None else ref()
            if value is not None:
                out.append((key, value))
        return out

    def loaded_values(self) -> list:
        """The values of :meth:`loaded_items`."""
        return [value for _, value in self.loaded_items()]

    # ------------------------------------------------------------------ mapping
    def __setitem__(self, key: str, value: Any) -> None:
        self._weak.pop(key, None)
        self._strong[key] = value
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        self._strong.pop(key, None)
        self._weak.pop(key, None)

    def __iter__(self) -> Iterator:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> _Items:
        return _Items(self)

    def values(self) -> _Values:
        return _Values(self)

    def clear(self) -> None:
        self._keys.clear()
        self._strong.clear()
        self._weak.clear()

    def copy(self) -> dict:
        return dict(self.iter_items())

    def __reduce__(self) -> tuple:
        return (dict, (list(self.iter_items()),))

    def __repr__(self) -> str:
        return f"LazyEntries({self.folder!r}, {len(self._keys)} entries, {len(self.loaded_items())} read)"

    # ------------------------------------------------------------------ refreshing
    def reopen(self, meta: dict, batch_size: torch.Size, old_level: Any) -> dict:
        """Takes the new ``meta.json`` of the level; returns the inodes of the entries kept.

        Entries already read are checked as an eager refresh checks them (a tensor
        whose record and file did not change is kept, a sub-level is refreshed);
        the others stay unread. Entries set in memory that ``meta`` does not record
        are dropped, as a refresh drops them.
        """
        loaded = dict(self.loaded_items())
        self.meta = meta
        self.batch_size = batch_size
        self._keys = entry_keys(meta)
        self._strong = {}
        self._weak = {}
        self.inodes = {}
        again = {k: meta[k] for k in loaded if k in self._keys}
        options = self.options
        depth, options.depth = options.depth, self.depth
        lazy, options.lazy = options.lazy, True
        try:
            data, inodes = self.read(self.folder, again, options, batch_size, loaded, old_level)
        finally:
            options.depth, options.lazy = depth, lazy
        for key in again:
            if key not in data:
                del self._keys[key]
        for key, value in data.items():
            self._adopt(key, value)
        record_inodes(data, inodes)
        self.inodes = inodes
        return inodes
