"""PersistentTensorDict: a tensordict whose entries live in an HDF5 file (through h5py).

Each level of the tensordict is an HDF5 group; each tensor is a dataset whose leading
dimensions are the batch dimensions; a non-tensor entry is a scalar dataset holding its
value as text, marked by the attribute ``tensordict_non_tensor`` (``"str"`` for a string,
``"json"`` for any other JSON value); a string also carries ``__tensordict_str__``, the mark
of the well-known implementation, and any dataset of a string dtype reads as a string. A group whose batch size is longer than its parent's
records it in its ``tensordict_batch_size`` attribute.

Nothing is read until asked: ``get`` reads one dataset, indexing gives a view that reads
only its rows (with h5py's own slicing when the index is an int or a slice, otherwise
the rows are picked in memory after the read), and writes go to the file.

h5py is an optional dependency (``pip install tensordict[h5]``): without it, the package
imports and building a PersistentTensorDict raises an ImportError that names the extra.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tensordict._collection import NO_DEFAULT, is_non_tensor, is_tensor_collection
from tensordict._indexing import batch_size_from_dummy, normalize_index
from tensordict._nontensor import NonTensorData
from tensordict._ops.convert import CONVERTERS
from tensordict._td import TensorDict
from tensordict._typing import DeviceType, ShapeType
from tensordict.base import TensorDictBase
from tensordict.errors import BatchSizeError, InvalidArgumentError, LockedError

try:
    import h5py
except ImportError:  # the optional extra is not installed
    h5py = None

__all__ = ["PersistentTensorDict"]

NON_TENSOR_ATTR = "tensordict_non_tensor"
# the attribute the well-known implementation marks its string datasets with: a file
# written by either implementation reads the same in the other
STR_ATTR = "__tensordict_str__"
BATCH_SIZE_ATTR = "tensordict_batch_size"


def _require_h5py() -> None:
    if h5py is None:
        msg = (
            "PersistentTensorDict needs h5py, which is not installed: "
            "install the optional extra with `pip install tensordict[h5]` (or `pip install h5py`)"
        )
        raise ImportError(msg)


def _is_h5_friendly(index) -> bool:
    """Whether h5py can read ``index`` itself: ints and forward slices only."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if type(item) is int:
            continue
        if type(item) is slice and (item.step is None or item.step > 0):
            continue
        return False
    return True


def _is_non_tensor_dataset(item) -> bool:
    """A dataset that holds a non-tensor value: marked, or of a string dtype."""
    if not isinstance(item, h5py.Dataset):
        return False
    attrs = item.attrs
    if NON_TENSOR_ATTR in attrs or STR_ATTR in attrs:
        return True
    return h5py.check_string_dtype(item.dtype) is not None or item.dtype.kind in "OSU"


def _is_scalar(item) -> bool:
    return isinstance(item, h5py.Dataset) and item.shape == ()


def _mark(dataset, kind: str) -> None:
    dataset.attrs[NON_TENSOR_ATTR] = kind
    if kind == "str":
        dataset.attrs[STR_ATTR] = True


def _read_non_tensor(dataset, batch_size: torch.Size) -> NonTensorData:
    raw = dataset[()]
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    value = json.loads(text) if dataset.attrs.get(NON_TENSOR_ATTR) == "json" else text
    return NonTensorData(value, batch_size=batch_size)


def _encode_non_tensor(key: str, value) -> tuple[str, str]:
    data = value.data if is_non_tensor(value) else value
    if isinstance(data, bytes):
        data = data.decode()
    if isinstance(data, str):
        return data, "str"
    try:
        return json.dumps(data), "json"
    except TypeError as err:
        msg = (
            f"cannot write the non-tensor entry {key!r} ({type(data).__name__}) into an HDF5 "
            "file: only strings and JSON values are stored"
        )
        raise InvalidArgumentError(msg) from err


class PersistentTensorDict(TensorDictBase):
    """A tensordict stored in an HDF5 file, read lazily and written in place.

    Build one over an existing file with :meth:`from_h5`, or write a tensordict (or a
    dict) into a new file with :meth:`from_dict`. Reading an entry reads its dataset;
    indexing gives a view of the rows that reads only them; writes (``set``,
    ``set_``, ``td[rows] = ...``) go to the file. The results of operations that make
    new tensordicts (``clone``, ``apply``, arithmetic, ``to_tensordict``) are in-memory
    :class:`TensorDict` objects. Strings are read back as ``str`` (the well-known
    implementation 0.15 reads them as ``bytes`` and announces ``str`` for 0.17; a
    ``str`` also memory-maps as JSON, where ``bytes`` would need a pickle).

    h5py is an optional dependency: install ``tensordict[h5]``.

    Keyword Args:
        batch_size (torch.Size or list of int, optional): the batch size; by default the
            longest leading shape that every dataset of the top level shares is not
            guessed: ``[]``.
        filename (str or Path, optional): the HDF5 file to open (one of ``filename`` and
            ``group`` is needed).
        group (h5py.Group, optional): an open group (or file) to wrap.
        mode (str, optional): h5py's file mode, ``"r"`` (default), ``"r+"``, ``"w"``, ``"a"``.
        device (torch.device, optional): where the tensors read are moved.
        **kwargs: passed to ``h5py.Group.create_dataset`` for every new dataset
            (``compression="gzip"``, ...).

    Raises:
        ImportError: if h5py is not installed.
        InvalidArgumentError: if neither or both of ``filename`` and ``group`` are given.

    Examples:
        >>> td = TensorDict({"obs": torch.arange(6.0).view(3, 2), "meta": {"id": torch.arange(3)}}, [3])
        >>> h5 = PersistentTensorDict.from_dict(td, "data.h5")
        >>> h5["obs"][1]
        tensor([2., 3.])
        >>> h5[1:]["meta", "id"]
        tensor([1, 2])
        >>> h5.close()
    """

    __slots__ = (
        "_group",
        "_file",
        "filename",
        "mode",
        "_batch_size",
        "_root_batch",
        "_chain",
        "_device",
        "_locks",
        "_dataset_kwargs",
        "_snapshot",
        "__weakref__",
    )

    def __init__(
        self,
        *,
        batch_size: ShapeType | None = None,
        filename: str | os.PathLike | None = None,
        group: Any = None,
        mode: str = "r",
        device: DeviceType | None = None,
        **kwargs: Any,
    ) -> None:
        _require_h5py()
        if (filename is None) == (group is None):
            msg = "PersistentTensorDict needs exactly one of filename= and group="
            raise InvalidArgumentError(msg)
        if filename is not None:
            filename = str(filename)
            group = h5py.File(filename, mode)
        self._group = group
        self._file = group.file
        self.filename = group.file.filename
        self.mode = mode if filename is not None else group.file.mode
        self._batch_size = torch.Size(batch_size if batch_size is not None else ())
        self._root_batch = self._batch_size
        self._chain = ()
        self._device = torch.device(device) if device is not None else None
        self._locks = {}
        self._dataset_kwargs = dict(kwargs)
        self._snapshot = None
        if batch_size is not None:
            self._check_batch_size(self._batch_size)

    @classmethod
    def _view(cls, parent: PersistentTensorDict, group, batch_size, root_batch, chain):
        out = object.__new__(cls)
        out._group = group
        out._file = parent._file
        out.filename = parent.filename
        out.mode = parent.mode
        out._batch_size = torch.Size(batch_size)
        out._root_batch = torch.Size(root_batch)
        out._chain = chain
        out._device = parent._device
        out._locks = parent._locks
        out._dataset_kwargs = parent._dataset_kwargs
        out._snapshot = None
        return out

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_h5(
        cls,
        filename: str | os.PathLike,
        *,
        mode: str = "r",
        batch_size: ShapeType | None = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
    ) -> PersistentTensorDict:
        """Opens an HDF5 file as a PersistentTensorDict.

        Args:
            filename (str or Path): the file.

        Keyword Args:
            mode (str, optional): h5py's file mode. Defaults to ``"r"``.
            batch_size (torch.Size, optional): the batch size. Defaults to the one the file
                records at its root, else ``[]``.
            auto_batch_size (bool, optional): use the longest leading shape that every
                entry shares. Defaults to False.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this many dims.

        Returns:
            A PersistentTensorDict over the file's root group.

        Raises:
            ImportError: if h5py is not installed.

        Examples:
            >>> TensorDict({"a": torch.zeros(4, 2)}, [4]).to_h5("f.h5").close()
            >>> PersistentTensorDict.from_h5("f.h5", auto_batch_size=True).batch_size
            torch.Size([4, 2])
        """
        out = cls(filename=filename, mode=mode)
        if batch_size is None:
            recorded = out._group.attrs.get(BATCH_SIZE_ATTR)
            batch_size = torch.Size([int(s) for s in recorded]) if recorded is not None else None
        if auto_batch_size:
            batch_size = _common_leading_shape(out._group, batch_dims)
        if batch_size is not None:
            out.batch_size = batch_size
        return out

    @classmethod
    def from_dict(
        cls,
        input_dict: Mapping | TensorDictBase,
        filename: str | os.PathLike,
        *,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        **kwargs: Any,
    ) -> PersistentTensorDict:
        """Writes a tensordict (or a nested dict of tensors) into a new HDF5 file.

        The file is created (an existing one is replaced) and kept open for reading and
        writing (mode ``"r+"``).

        Args:
            input_dict (TensorDictBase or dict): the content.
            filename (str or Path): the new file.

        Keyword Args:
            batch_size (torch.Size, optional): the batch size; defaults to the tensordict's,
                or ``[]`` for a dict.
            device (torch.device, optional): where the tensors read are moved.
            auto_batch_size (bool, optional): for a dict, use the longest leading shape every
                entry shares. Defaults to False.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this many dims.
            **kwargs: passed to ``create_dataset`` (``compression="gzip"``, ...).

        Returns:
            A PersistentTensorDict over the new file.

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.ones(2, 3)}, "g.h5", batch_size=[2])
            >>> h5.batch_size, h5.mode
            (torch.Size([2]), 'r+')
        """
        _require_h5py()
        if not is_tensor_collection(input_dict):
            input_dict = TensorDict.from_dict(
                input_dict,
                batch_size=batch_size,
                auto_batch_size=auto_batch_size,
                batch_dims=batch_dims,
            )
        elif batch_size is None:
            batch_size = input_dict.batch_size
        if batch_size is None:
            batch_size = input_dict.batch_size
        with h5py.File(str(filename), "w") as file:
            file.attrs[BATCH_SIZE_ATTR] = list(batch_size)
            _write_group(file, input_dict, torch.Size(batch_size), kwargs)
        return cls(filename=filename, mode="r+", batch_size=batch_size, device=device, **kwargs)

    # ------------------------------------------------------------------ file
    @property
    def file(self) -> Any:
        """The open ``h5py.File`` (``None`` after a pickle round trip until reopened).

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.zeros(1)}, "h.h5")
            >>> h5.file.filename.endswith("h.h5")
            True
        """
        return self._file

    def close(self) -> None:
        """Closes the HDF5 file; the tensordict cannot be read afterwards.

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.zeros(1)}, "c.h5")
            >>> h5.close()
            >>> bool(h5.file)
            False
        """
        self._file.close()

    def __getstate__(self) -> dict:
        return {
            "filename": self.filename,
            "mode": self.mode,
            "group": self._group.name,
            "batch_size": self._batch_size,
            "root_batch": self._root_batch,
            "chain": self._chain,
            "device": self._device,
            "locks": dict(self._locks),
            "kwargs": self._dataset_kwargs,
        }

    def __setstate__(self, state: dict) -> None:
        _require_h5py()
        file = _open_for_reading(state["filename"])
        self._file = file
        self._group = file[state["group"]]
        self.filename = state["filename"]
        self.mode = "r"
        self._batch_size = state["batch_size"]
        self._root_batch = state["root_batch"]
        self._chain = state["chain"]
        self._device = state["device"]
        self._locks = state["locks"]
        self._dataset_kwargs = state["kwargs"]
        self._snapshot = None

    def __repr__(self) -> str:
        if not self._file:
            return f"PersistentTensorDict(<closed file {self.filename!r}>)"
        return super().__repr__()

    # ------------------------------------------------------------------ primitives
    @property
    def batch_size(self) -> torch.Size:
        """The batch size: the leading dims of every dataset; setting it checks each one.

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.zeros(2, 3)}, "b.h5")
            >>> h5.batch_size = [2, 3]
            >>> h5.batch_size
            torch.Size([2, 3])
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: ShapeType) -> None:
        value = torch.Size(value)
        if self._chain:
            msg = "cannot change the batch size of a view of a PersistentTensorDict"
            raise BatchSizeError(msg)
        self._check_batch_size(value)
        self._batch_size = self._root_batch = value

    def _check_batch_size(self, batch_size: torch.Size) -> None:
        n = len(batch_size)
        for key, item in self._group.items():
            if _is_non_tensor_dataset(item) or _is_scalar(item):
                continue  # one value for every row
            shape = _item_shape(item, n)
            if shape is not None and tuple(shape[:n]) != tuple(batch_size):
                msg = (
                    f"the entry {key!r} of shape {list(shape)} does not fit the batch size "
                    f"{list(batch_size)} of the PersistentTensorDict"
                )
                raise BatchSizeError(msg)

    @property
    def device(self) -> torch.device | None:
        """The device the tensors read are moved to, or None (they stay on the CPU).

        Examples:
            >>> PersistentTensorDict.from_dict({"a": torch.zeros(1)}, "d.h5").device is None
            True
        """
        return self._device

    @property
    def names(self) -> list:
        """The names of the batch dims: always None (an HDF5 file records none).

        Examples:
            >>> PersistentTensorDict.from_dict({"a": torch.zeros(2)}, "n.h5", batch_size=[2]).names
            [None]
        """
        return [None] * len(self._batch_size)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is not None and any(n is not None for n in value):
            msg = "a PersistentTensorDict has no dim names; use to_tensordict() first"
            raise InvalidArgumentError(msg)

    def _child_batch(self, item) -> tuple[torch.Size, torch.Size]:
        """The batch size of a sub-group seen from this view, and its root batch size."""
        recorded = item.attrs.get(BATCH_SIZE_ATTR)
        if recorded is None:
            return self._batch_size, self._root_batch
        recorded = torch.Size(int(s) for s in recorded)
        extra = recorded[len(self._root_batch) :]
        return self._batch_size + extra, self._root_batch + extra

    def _get_str(self, key: str, default):
        item = self._group.get(key) if self._file else None
        if item is None:
            if default is NO_DEFAULT:
                raise self._missing((key,), 0, self)
            return default
        if isinstance(item, h5py.Group):
            batch, root = self._child_batch(item)
            return PersistentTensorDict._view(self, item, batch, root, self._chain)
        if _is_non_tensor_dataset(item):
            return _read_non_tensor(item, self._batch_size)
        if self._batch_size and _is_scalar(item):
            # a scalar (written by the well-known implementation for a non-tensor number)
            return NonTensorData(item[()].item(), batch_size=self._batch_size)
        return self._read(item)

    def _read(self, dataset) -> torch.Tensor:
        chain = self._chain
        if chain and _is_h5_friendly(chain[0]):
            array = dataset[chain[0]]
            chain = chain[1:]
        else:
            array = dataset[()]
        tensor = torch.as_tensor(np.asarray(array))
        for index in chain:
            tensor = tensor[index]
        if self._device is not None:
            tensor = tensor.to(self._device)
        return tensor

    def _set_str(
        self, key: str, value, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        if not validated:
            value = TensorDict._new_unsafe({}, self._batch_size)._validate(key, value)
        current = self._group.get(key)
        if current is not None and inplace:
            self._write_into(key, current, value)
            return
        if self.is_locked:
            self._check_unlocked(key, "rebind" if current is not None else "add the key")
        if current is not None and self._chain:
            self._write_into(key, current, value)  # a view writes its rows of the entry
            return
        if current is not None:
            del self._group[key]
        self._create(key, value)

    def _create(self, key: str, value) -> None:
        """Adds a new entry; through a view, the rows outside the view read zeros."""
        if is_non_tensor(value):
            text, kind = _encode_non_tensor(key, value)
            dataset = self._group.create_dataset(key, data=text)
            _mark(dataset, kind)
        elif isinstance(value, torch.Tensor):
            if self._chain:
                feature = value.shape[len(self._batch_size) :]
                zeros = torch.zeros(self._root_batch + feature, dtype=value.dtype)
                dataset = self._group.create_dataset(
                    key, data=zeros.numpy(), **self._dataset_kwargs
                )
                self._write_rows(dataset, value)
            else:
                self._group.create_dataset(
                    key, data=value.detach().cpu().numpy(), **self._dataset_kwargs
                )
        elif self._chain:
            sub = self._group.create_group(key)
            extra = value.batch_size[len(self._batch_size) :]
            if extra:
                sub.attrs[BATCH_SIZE_ATTR] = list(self._root_batch + extra)
            view = self._get_str(key, NO_DEFAULT)
            for name, item in value.items():
                view._create(name, item)
        else:
            sub = self._group.create_group(key)
            if value.batch_size != self._batch_size:
                sub.attrs[BATCH_SIZE_ATTR] = list(value.batch_size)
            _write_group(sub, value, value.batch_size, self._dataset_kwargs)

    def _write_into(self, key: str, current, value) -> None:
        """Writes ``value`` over the rows of this view in the existing entry ``key``."""
        if isinstance(current, h5py.Group):
            sub = self._get_str(key, NO_DEFAULT)
            sub._set_at(Ellipsis, value)
            return
        if _is_non_tensor_dataset(current) or is_non_tensor(value):
            if self._chain:
                return  # a non-tensor entry holds one value for every row
            del self._group[key]
            self._create(key, value)
            return
        if not isinstance(value, torch.Tensor):
            value = torch.as_tensor(value)
        self._write_rows(current, value)

    def _write_rows(self, dataset, value: torch.Tensor) -> None:
        shape = self._batch_size + torch.Size(dataset.shape[len(self._root_batch) :])
        value = value.detach().cpu().to(_torch_dtype(dataset)).expand(shape)
        chain = self._chain
        if not chain:
            dataset[...] = value.numpy()
        elif len(chain) == 1 and _is_h5_friendly(chain[0]):
            dataset[chain[0]] = value.numpy()
        else:
            full = torch.as_tensor(np.asarray(dataset[()]))
            rows = _positions(self._root_batch, chain)
            flat = full.reshape(-1, *full.shape[len(self._root_batch) :])
            flat[rows.reshape(-1)] = value.reshape(-1, *flat.shape[1:])
            dataset[...] = full.numpy()

    def _del_str(self, key: str) -> None:
        if self.is_locked:
            self._check_unlocked(key, "delete")
        if self._chain:
            msg = f"cannot delete {key!r} through a view of a PersistentTensorDict"
            raise BatchSizeError(msg)
        del self._group[key]

    def _store_entry(self, key: str, value) -> None:
        if key in self._group:
            del self._group[key]
        self._create(key, value)

    def _keys_level(self):
        # a set-like view, as a TensorDict's dict_keys (compared with == by stack and cat)
        return self._group.keys() if self._file else {}.keys()

    def _items_level(self):
        return [(key, self._get_str(key, NO_DEFAULT)) for key in self._keys_level()]

    def _new_like(self, source: dict, batch_size, names=NO_DEFAULT, device=NO_DEFAULT):
        device = self._device if device is NO_DEFAULT else device
        return TensorDict._new_unsafe(source, torch.Size(batch_size), device, None)

    @property
    def is_locked(self) -> bool:
        """True when the tensordict refuses new keys and deletions (in-place writes still work).

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.zeros(1)}, "l.h5")
            >>> h5.lock_().is_locked
            True
        """
        return any(self._locks.get(name, False) for name in _group_and_parents(self._group.name))

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        # Sub-tensordicts are made on each read: the lock of each group is kept in one dict
        # that every object over the file shares, so that a group is locked while one of
        # its parents is.
        name = self._group.name
        if locked:
            self._locks[name] = True
            return
        parents = _group_and_parents(name)[1:]
        if any(self._locks.get(parent, False) for parent in parents):
            msg = (
                f"cannot unlock the group {name!r}: a parent group of the PersistentTensorDict is "
                "locked; unlock the parent instead"
            )
            raise LockedError(msg)
        prefix = name.rstrip("/") + "/"
        for held in [g for g in self._locks if g == name or g.startswith(prefix)]:
            del self._locks[held]

    def _index(self, index):
        leaf_index, new_size = normalize_index(index, self._batch_size)
        if new_size is None:
            new_size = batch_size_from_dummy(self._batch_size, leaf_index)
        return PersistentTensorDict._view(
            self, self._group, new_size, self._root_batch, (*self._chain, leaf_index)
        )

    def _set_at(self, index, value) -> None:
        view = self._index(index)
        if is_tensor_collection(value) and not is_non_tensor(value):
            for key, item in value.items():
                current = view._group.get(key)
                if current is None:
                    msg = f"cannot write rows of {key!r}: the PersistentTensorDict has no such key"
                    raise BatchSizeError(msg)
                view._write_into(key, current, item)
            return
        if isinstance(value, dict):
            value = TensorDict(value, view.batch_size)
            view._set_at(Ellipsis, value)
            return
        for key in view._keys_level():
            item = view._group[key]
            if isinstance(item, h5py.Group):
                view._get_str(key, NO_DEFAULT)._set_at(Ellipsis, value)
            elif not _is_non_tensor_dataset(item):
                view._write_into(key, item, value)

    def _in_memory(self) -> TensorDict:
        out = TensorDict._new_unsafe({}, self._batch_size, self._device, None)
        for key, value in self._items_level():
            if isinstance(value, PersistentTensorDict):
                value = value._in_memory()
            out._tensordict[key] = value
        return out

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self._in_memory()._batch_op(op, batch_size, names)

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        return self._in_memory()._batch_op_multi(op, batch_sizes, names)

    def _shallow_copy(self):
        # what copies become (select, exclude, copy, ...) lives in memory: a key removed
        # from a copy must not be removed from the file
        return self._in_memory()

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Reads every entry into a new in-memory TensorDict.

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility; there are no ``None``
                entries in a file.

        Returns:
            A TensorDict of the same batch size.

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.ones(2)}, "t.h5", batch_size=[2])
            >>> type(h5.to_tensordict()).__name__, h5.to_tensordict()["a"]
            ('TensorDict', tensor([1., 1.]))
        """
        return self._in_memory()

    # ------------------------------------------------------------------ memmap hooks
    # memmap() writes what the file holds, read into memory; memmap_() cannot turn a file
    # into memory-mapped tensors in place (as the well-known implementation refuses too).
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        self._snapshot = self._in_memory()
        self._snapshot._memmap_plan(folder, plan, robust_key, existsok, like)

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        if inplace:
            msg = (
                "a PersistentTensorDict cannot be memory-mapped in place: its entries live in "
                "an HDF5 file; use td.memmap(prefix), which returns a memory-mapped TensorDict"
            )
            raise RuntimeError(msg)
        return self._snapshot._memmap_rebuild(folder, replacement, False, robust_key)

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        snapshot, self._snapshot = self._snapshot, None
        snapshot._memmap_write_meta(folder, robust_key)

    def _memmap_refresh(self, options) -> None:
        msg = "a PersistentTensorDict is not memory-mapped: there is no folder to refresh"
        raise RuntimeError(msg)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        return False

    def _memmap_load_into(self, loaded) -> None:
        msg = "a PersistentTensorDict cannot load a memory-mapped folder in place; use TensorDict.load_memmap"
        raise RuntimeError(msg)

    @classmethod
    def _memmap_record_type(cls) -> str:
        return TensorDict._memmap_record_type()

    def memmap_(self, *args: Any, **kwargs: Any) -> PersistentTensorDict:
        """Refused: the entries live in an HDF5 file; :meth:`memmap` writes a memory-mapped copy.

        Raises:
            RuntimeError: always.

        Examples:
            >>> h5 = PersistentTensorDict.from_dict({"a": torch.zeros(1)}, "m.h5")
            >>> h5.memmap_("mm")
            Traceback (most recent call last):
                ...
            RuntimeError: a PersistentTensorDict cannot be memory-mapped in place: ...
        """
        return self._memmap_rebuild(None, {}, True, None)


def _group_and_parents(name: str) -> list[str]:
    """``"/a/b"`` -> ``["/a/b", "/a", "/"]``: an HDF5 group's name and its parents'."""
    names = [name]
    while name != "/":
        name = name.rsplit("/", 1)[0] or "/"
        names.append(name)
    return names


def _open_for_reading(filename: str):
    try:
        return h5py.File(filename, "r")
    except OSError:
        # another process holds the file open for writing: read it without HDF5's lock
        return h5py.File(filename, "r", locking=False)


def _torch_dtype(dataset) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=dataset.dtype)).dtype


def _positions(root_batch: torch.Size, chain: tuple) -> torch.Tensor:
    """The flat row numbers (in the root batch) that a chain of indices picks."""
    rows = torch.arange(max(1, int(np.prod(root_batch))) if root_batch else 1)
    rows = rows[: int(np.prod(root_batch))].reshape(root_batch)
    for index in chain:
        rows = rows[index]
    return rows


def _item_shape(item, batch_dims: int):
    if isinstance(item, h5py.Dataset):
        return item.shape
    recorded = item.attrs.get(BATCH_SIZE_ATTR)
    if recorded is not None:
        return tuple(int(s) for s in recorded)
    return None


def _common_leading_shape(group, batch_dims: int | None) -> torch.Size:
    shapes = []
    for item in group.values():
        if _is_non_tensor_dataset(item):
            continue
        shape = _item_shape(item, 0)
        if shape is None and isinstance(item, h5py.Group):
            shape = tuple(_common_leading_shape(item, None))
        if shape is not None:
            shapes.append(tuple(shape))
    if not shapes:
        return torch.Size(())
    common = []
    for dims in zip(*shapes):
        if len(set(dims)) != 1:
            break
        common.append(dims[0])
    if batch_dims is not None:
        common = common[:batch_dims]
    return torch.Size(common)


def _write_group(group, td, batch_size: torch.Size, kwargs: dict) -> None:
    """Writes the entries of ``td`` into the open HDF5 ``group``."""
    for key, value in td.items():
        if is_non_tensor(value):
            text, kind = _encode_non_tensor(key, value)
            dataset = group.create_dataset(key, data=text)
            _mark(dataset, kind)
        elif isinstance(value, torch.Tensor):
            group.create_dataset(key, data=value.detach().cpu().numpy(), **kwargs)
        else:
            sub = group.create_group(key)
            if value.batch_size != batch_size:
                sub.attrs[BATCH_SIZE_ATTR] = list(value.batch_size)
            _write_group(sub, value, value.batch_size, kwargs)


def _to_h5(td: TensorDictBase, filename: str | os.PathLike, **kwargs: Any) -> PersistentTensorDict:
    return PersistentTensorDict.from_dict(td, Path(filename), **kwargs)


# TensorDictBase.from_h5 / to_h5 (tensordict/_ops/convert.py) call these through its registry
CONVERTERS["from_h5"] = PersistentTensorDict.from_h5
CONVERTERS["from_h5_group"] = lambda group: PersistentTensorDict(group=group)
CONVERTERS["to_h5"] = _to_h5
