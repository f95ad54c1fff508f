"""TensorDict: the dense tensordict, one dict of entries per level."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from types import EllipsisType
from typing import Any

import torch

from tensordict import _dim_names as dimnames
from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._helpers import as_batch_size, as_device, shape_of
from tensordict._indexing import (
    batch_size_from_dummy,
    batch_size_from_leaf,
    has_first_class_dim,
    normalize_index,
)
from tensordict._keys import NestedKey
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops.apply import check_result
from tensordict._ops.classes import CLASSES
from tensordict._ops.entries import (
    _as_value,
    _check_batch,
    _source_items,
    array_as_tensor,
    plain_tree,
)
from tensordict._td_rows import (
    _check_fits,
    _check_rows,
    _check_rows_in_range,
    _extra_shape,
    _index_copies,
    _index_in_range,
    _index_leaf,
    _indexed_batch,
    _write_dense_rows,
    _zeros_for,
)
from tensordict._torch_function import dispatch
from tensordict._typing import DeviceType, ShapeType, T
from tensordict._unbatched import UnbatchedTensor as _Unbatched
from tensordict._unbatched import is_unbatched
from tensordict.base import TensorDictBase
from tensordict.errors import (
    BatchSizeError,
    DimNameConflictError,
    EntryShapeError,
    FirstClassDimError,
    InvalidArgumentError,
    LockedError,
    UnbatchedMemmapError,
)
from tensordict.memmap import _archive, _io
from tensordict.memmap import format as fmt
from tensordict.memmap._ondemand import LazyEntries as _LazyEntries
from tensordict.memmap.tensor import MemoryMappedTensor as _MMT

_Tensor = torch.Tensor
_no_subclass_dispatch = torch._C.DisableTorchFunctionSubclass
_Size = torch.Size
_LONG = torch.long
_EMPTY = torch.Size(())


_CPU = torch.device("cpu")
_ROW_WRITES = threading.RLock()


def _fill(td, source: dict, batch_size: torch.Size, device) -> dict:
    """Validates the entries of a plain dict for a new tensordict (the hot path of construction)."""
    data = {}
    n = len(batch_size)
    b0 = batch_size[0] if n else 0
    for key, value in source.items():
        if type(key) is not str:
            td._tensordict = data
            td.set(key, value)
            continue
        if type(value) is _Tensor:
            try:
                shape = value.shape
            except RuntimeError:  # a nested tensor has no dense shape
                td._tensordict = data
                data[key] = td._validate(key, value)
                continue
            if n == 1:
                if not shape or shape[0] != b0:
                    _check_batch(key, value, batch_size)
            elif n and shape[:n] != batch_size:
                _check_batch(key, value, batch_size)
            if device is not None and value.device != device:
                value = value.to(device)
            data[key] = value
        elif type(value) is dict:
            sub = TensorDict._new_unsafe(None, batch_size, device, None)
            sub._tensordict = _fill(sub, value, batch_size, device)
            data[key] = sub
        else:
            td._tensordict = data
            data[key] = td._validate(key, value)
    return data


def check_sub_names(td: TensorDict, names: list) -> None:
    """Refuses ``names`` for the batch dims of ``td`` when a sub-tensordict's own further dims
    already use one of them: names along a path of sub-tensordicts must stay unique."""
    n = len(td.batch_size)
    for key, value in td._items_level():
        if type(value) is not TensorDict:
            continue
        own = value.names[n:] if value._names is not None else []
        combined = [*names, *own]
        seen = [x for x in combined if x is not None]
        if len(seen) != len(set(seen)):
            msg = (
                f"batch dimension names must be unique along a path of sub-tensordicts: the names "
                f"{names} and the own dims {own} of the sub-tensordict {key!r} repeat a name"
            )
            raise ValueError(msg)
        check_sub_names(value, [*names, *(own or [None] * (len(value.batch_size) - n))])


class TensorDict(TensorDictBase):
    """A dictionary of tensors whose entries share leading batch dimensions.

    Each value is stored as a tensor whose shape starts with ``batch_size``, a
    sub-tensordict, or a :class:`NonTensorData` entry. A nested dict becomes a
    :class:`TensorDict` with the same batch size and device; a number becomes a
    tensor filled with it over the whole batch; a numpy array, or a list of
    tensors (stacked), becomes a tensor; a string, a list of numbers or any other
    object becomes a :class:`NonTensorData` entry. Tensors are stored as given
    (not copied) unless they must move to ``device``.

    Args:
        source (dict, Mapping or TensorDictBase, optional): the entries; keys are
            strings, or tuples of strings for nested entries. Defaults to ``None``,
            which means no entries besides the keyword ones.
        batch_size (torch.Size, int or sequence of int, optional): the shared
            leading dimensions. Defaults to ``None``, which is ``torch.Size([])``.
        device (torch.device, str or int, optional): if given, every tensor is
            moved there and :attr:`device` reports it. Defaults to ``None``: tensors
            stay where they are and :attr:`device` is ``None``.
        names (list of str, optional): the names of the batch dimensions (see
            :attr:`names`). Defaults to ``None``: no names.
        non_blocking (bool, optional): accepted for compatibility and ignored.
        lock (bool, optional): lock the tensordict once it is built (see
            :meth:`lock_`). Defaults to False.

    Keyword Args:
        **kwargs: the entries, as ``key=value``, when ``source`` is not given.

    Raises:
        RuntimeError: if a value's leading dimensions do not match ``batch_size``
            (naming the key and both shapes), or if ``device`` is a string that
            names no device type.
        TypeError: if a key is not a string or a tuple of strings, if ``batch_size``
            is not a sequence of ints, or if ``source`` is not a mapping or a
            tensordict (that error is also a ``ValueError``).
        ValueError: if ``batch_size`` holds a size below -1 (``-1`` marks a ragged dim,
            as a nested tensor's shape reads), if a tuple key is
            empty, if ``names`` does not hold one distinct name (or ``None``)
            per batch dimension, or if both ``source`` and keyword entries are given.

    Examples:
        >>> td = TensorDict({"obs": torch.zeros(4, 3), "next": {"obs": torch.ones(4, 3)}}, batch_size=[4])
        >>> td["next", "obs"].shape, td[1:3].batch_size
        (torch.Size([4, 3]), torch.Size([2]))
        >>> TensorDict(reward=torch.zeros(2), batch_size=[2], lock=True).is_locked
        True
    """

    __slots__ = (
        "_tensordict",
        "_batch_size",
        "_device",
        "_names",
        "_locked",
        "_lock_holders",
        "_mm",
        "__weakref__",
    )

    _result_cls: type  # the class of what operations return: a user's subclass keeps itself

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parent = cls.__mro__[1]
        if "_result_cls" not in cls.__dict__ and getattr(parent, "_result_cls", None) is parent:
            cls._result_cls = cls

    def __init__(
        self,
        source: Mapping | TensorCollection | None = None,
        batch_size: ShapeType | int | None = None,
        device: DeviceType | None = None,
        names: Sequence[str | None] | None = None,
        non_blocking: bool | None = None,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        if type(batch_size) is not _Size:
            if (
                type(batch_size) is list
                and len(batch_size) == 1
                and type(batch_size[0]) is int
                and batch_size[0] >= 0
            ):
                batch_size = _Size(batch_size)  # the common [n], without the general checks
            else:
                batch_size = as_batch_size(batch_size)
        if device is not None:
            device = as_device(device)
        self._batch_size = batch_size
        self._device = device
        self._names = None
        self._locked = False
        self._lock_holders = ()
        self._mm = None
        if source is None:
            source = kwargs
        elif kwargs:
            msg = (
                f"TensorDict() takes its entries either as source or as keyword arguments, not "
                f"both: got source and the keywords {sorted(kwargs)}; merge them into one dict"
            )
            raise InvalidArgumentError(msg)
        if type(source) is dict:
            self._tensordict = _fill(self, source, batch_size, device)
        else:
            self._tensordict = {}
            if source:
                for key, value in _source_items(source):
                    self.set(key, value)
        if names is not None:
            self.names = names
        if lock:
            self.lock_()

    @classmethod
    def _new_unsafe(cls, source: dict, batch_size: torch.Size, device=None, names=None):
        """Builds without checking anything: the caller guarantees every entry fits."""
        self = object.__new__(cls)
        self._tensordict = source
        self._batch_size = batch_size
        self._device = device
        self._names = names
        self._locked = False
        self._lock_holders = ()
        self._mm = None
        return self

    def _validate(self, key: str, value):
        batch_size = self._batch_size
        device = self._device
        if isinstance(value, _Tensor):
            _check_batch(key, value, batch_size)
            if device is not None and value.device != device:
                value = value.to(device)
            if is_unbatched(value) and value.batch_size != batch_size:
                return value.rebatched(batch_size)
            return value
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            return TensorDict(value, batch_size, device)
        value = _as_value(key, value, device)
        if isinstance(value, NonTensorDataBase):
            if value.batch_size != batch_size and not value.batch_size:
                value = value._with(batch_size)
            _check_batch(key, value, batch_size)
            if device is not None and value.device != device:
                value = value.to(device)
            if self._locked:
                value.lock_()
            return value
        if isinstance(value, _Tensor):
            if value.ndim == 0 and batch_size:
                value = value.expand(batch_size).clone()
            _check_batch(key, value, batch_size)
            return value
        shape = value.batch_size
        if len(shape) < len(batch_size) and batch_size[: len(shape)] == shape:
            value = _adopt_batch(key, value, batch_size)
        _check_batch(key, value, batch_size)
        if device is not None and value.device != device:
            value = value.to(device)
        if type(value) is TensorDict and (value._names is not None or self._names is not None):
            _share_names(self, key, value)
        if self._locked and not value.is_locked:
            if isinstance(value, TensorDict):
                _hold(value, self)
            else:
                value.lock_()
        return value

    # ------------------------------------------------------------------ primitives
    @property
    def batch_size(self) -> torch.Size:
        """The shared leading dimensions of every entry.

        Assigning a new size checks every entry before anything changes. A
        sub-tensordict with fewer batch dimensions than the new size takes it
        when all its leaves allow it; one that already has the new size as its
        leading dimensions keeps its own. The dimensions that remain keep their
        :attr:`names`, new ones are unnamed. A locked tensordict may change its
        batch size too (its keys stay as they are).

        Returns:
            The batch size, a ``torch.Size``.

        Raises:
            RuntimeError: on assignment, if an entry's leading dimensions do not match
                the new size (naming the first such key).
            TypeError: on assignment, if the new size is not a sequence of ints.
            ValueError: on assignment, if the new size holds a size below -1 (``-1``
                marks a ragged dim).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 4), "sub": {"b": torch.zeros(3, 4, 5)}}, [3])
            >>> td.batch_size = [3, 4]
            >>> td.batch_size, td["sub"].batch_size
            (torch.Size([3, 4]), torch.Size([3, 4]))
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: ShapeType) -> None:
        new = as_batch_size(value)
        if new == self._batch_size:
            return
        n = len(new)
        grow = []
        for key, entry in self._tensordict.items():
            if not isinstance(entry, _Tensor) and len(entry.batch_size) < n:
                # A sub-tensordict follows a longer batch size when its own entries allow it.
                _check_batch(key, _LeadingShape(entry), new)
                grow.append(entry)
            else:
                _check_batch(key, entry, new)
        for entry in grow:
            entry.batch_size = new
        self._batch_size = new
        if self._names is not None:  # the dims that remain keep their names
            kept = list(self._names[:n]) + [None] * (n - len(self._names))
            self._names = kept if any(name is not None for name in kept) else None

    @property
    def device(self) -> torch.device | None:
        """The device of every tensor, or ``None`` when the tensordict was built without one.

        With ``None``, tensors stay wherever they were and may be on different
        devices. Use :meth:`to` for a tensordict on another device.

        Returns:
            A ``torch.device``, or ``None``.

        Raises:
            RuntimeError: on assignment: the device of a tensordict cannot be set.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2], device="cpu").device
            device(type='cpu')
            >>> TensorDict({"a": torch.zeros(2)}, [2]).device is None
            True
        """
        return self._device

    @device.setter
    def device(self, value: Any) -> None:
        msg = "the device of a tensordict cannot be set; use td.to(device) instead"
        raise RuntimeError(msg)

    @property
    def names(self) -> list[str | None]:
        """The names of the batch dimensions: a list with ``None`` for each unnamed one.

        The list always has one item per batch dimension. Assigning a list (one
        name or ``None`` per batch dimension) or ``None`` (no names) also names the
        leading dimensions of every sub-:class:`TensorDict`, which keeps the names
        of its own further dimensions. Names can be assigned while the tensordict
        is locked.

        Returns:
            A new list holding a str or ``None`` per batch dimension.

        Raises:
            ValueError: on assignment, if the list does not hold one item per batch
                dimension or repeats a name.
            TypeError: on assignment, if the value is not iterable.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3), "sub": {"b": torch.zeros(2)}}, [2])
            >>> td.names = ["time"]
            >>> td.names, td["sub"].names
            (['time'], ['time'])
        """
        names = self._names
        if names is None:
            return [None] * len(self._batch_size)
        return list(names)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        names = None if value is None else dimnames.check_names(value, self._batch_size)
        if names is not None:
            check_sub_names(self, names)
        self._names = names
        self._propagate_names()

    def _propagate_names(self) -> None:
        names = self._names
        n = len(self._batch_size)
        for value in self._tensordict.values():
            if isinstance(value, NonTensorDataBase):
                extra = len(value.batch_size) - n
                value._names = None if names is None else list(names) + [None] * extra
                continue
            if getattr(type(value), "_is_tensorclass", False):
                value = value._tensordict  # a tensorclass's dims are its tensordict's
            if type(value) is TensorDict:
                own = (
                    value._names[n:]
                    if value._names is not None
                    else [None] * (len(value._batch_size) - n)
                )
                value._names = (
                    None if names is None and not any(own) else (names or [None] * n) + list(own)
                )
                value._propagate_names()

    def refine_names(self: T, *names: str | EllipsisType | None) -> T:
        """Sets the names of the batch dimensions in place, and returns the tensordict.

        As ``Tensor.refine_names``: an unnamed dimension takes the name given
        (``None`` leaves it unnamed), a dimension already named must be given that
        name (see :meth:`rename` to change it). One ``...`` stands for the
        dimensions the other names leave, which keep their names.

        Args:
            *names (str or None): one name (or ``None``) per batch dimension, with
                at most one ``...``.

        Returns:
            The tensordict itself.

        Raises:
            ValueError: if the names (with ``...`` expanded) are not one per batch
                dimension, or repeat a name.
            DimNameConflictError: if a dimension already named gets another name or
                ``None`` (also a ``RuntimeError``).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> td.refine_names(..., "feature").names
            [None, 'feature']
        """
        names = dimnames.refine(self.names, names)
        self.names = names
        return self

    def rename(self, *names: str | None, **rename_map: str) -> TensorDict:
        """Returns a shallow copy whose batch dimensions carry new names; the original keeps its own.

        Either give the new names by position, one per batch dimension (a first
        name of ``None`` removes every name), or map current names to new ones by
        keyword (a current name that is not mapped is kept; a mapped name that the
        tensordict does not have is ignored). When both are given the mapping is
        used and the positional names are ignored; with neither, the copy has no
        names. The copy shares the entries, sub-tensordicts included.

        Args:
            *names (str or None): the new names, one per batch dimension.

        Keyword Args:
            **rename_map (str): ``current=new`` pairs.

        Returns:
            A new :class:`TensorDict` with the new names.

        Raises:
            ValueError: if the new names are not one per batch dimension, or repeat
                a name.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["x", "y"])
            >>> td.rename(x="batch").names, td.rename("u", "v").names, td.names
            (['batch', 'y'], ['u', 'v'], ['x', 'y'])
        """
        out = _tree_copy(self)  # the copy's sub-tensordicts take the new names, not the source's
        if rename_map:
            current = self.names or [None] * self.batch_dims
            out.names = [rename_map.get(n, n) for n in current]
        else:
            out.names = list(names) if names and names[0] is not None else None
        return out

    def _get_str(self, key: str, default):
        value = self._tensordict.get(key, default)
        if value is NO_DEFAULT:
            raise self._missing((key,), 0, self)
        return value

    def _set_str(
        self, key: str, value, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        data = self._tensordict
        if inplace and isinstance(data.get(key), _Tensor) and not is_tensor_collection(value):
            # Writing into an existing tensor: numbers and broadcastable tensors are fine.
            current = data[key]
            if current is not value:
                try:
                    current.copy_(value if isinstance(value, _Tensor) else torch.as_tensor(value))
                except RuntimeError as err:
                    msg = (
                        f"cannot write into the entry {key!r} of shape {list(current.shape)}: {err}"
                    )
                    raise EntryShapeError(msg) from err
            return
        if not validated:
            value = self._validate(key, value)
        if inplace:
            current = data.get(key)
            if current is not None:
                if isinstance(current, _Tensor):
                    if current is not value:
                        current.copy_(value)
                elif hasattr(current, "update_") and not is_non_tensor(current):
                    current.update_(value)
                else:
                    data[key] = value
                    if self._mm is not None and is_non_tensor(value):
                        self._persist_entry(key, value)
                return
        if self._locked:
            action = "rebind" if key in data else "add the key"
            self._check_unlocked(key, action)
        data[key] = value

    def _del_str(self, key: str) -> None:
        if self._locked:
            self._check_unlocked(key, "delete")
        del self._tensordict[key]

    def _store_entry(self, key: str, value) -> None:
        if self._locked and isinstance(value, TensorDict):
            _hold(value, self)
        self._tensordict[key] = value

    def _keys_level(self):
        return self._tensordict.keys()

    def _items_level(self):
        return self._tensordict.items()

    def _value_items(self):
        if type(self).get is not TensorDict.get or type(self)._get_str is not TensorDict._get_str:
            return None  # a subclass that reads its entries another way
        data = self._tensordict
        return list(data.items()) if type(data) is dict else data.iter_items()

    def _walk_items(self):
        data = self._tensordict
        return data.items() if type(data) is dict else data.walk_items()

    def _new_like(self, source: dict, batch_size, names=NO_DEFAULT, device=NO_DEFAULT):
        if names is NO_DEFAULT:
            names = self._names if batch_size == self._batch_size else None
        return self._result_cls._new_unsafe(
            source, batch_size, self._device if device is NO_DEFAULT else device, names
        )

    @property
    def is_locked(self) -> bool:
        """True when the tensordict refuses new keys, deletions and the rebinding of an entry.

        Assigning True locks it and its sub-tensordicts, like :meth:`lock_`;
        assigning False unlocks them like :meth:`unlock_`, but without its check
        for a locked parent.

        Returns:
            True when locked.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.is_locked = True
            >>> td.is_locked
            True
        """
        return self._locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        # Each sub-tensordict knows the locked tensordicts that hold it (weakly: one that is
        # collected holds nothing). It cannot be unlocked alone while one of them is alive and
        # locked, and unlocking the last one unlocks it.
        if locked == self._locked:
            return
        self._locked = locked
        for value in _read_values(self._tensordict):
            if isinstance(value, TensorDict):
                if locked:
                    _hold(value, self)
                else:
                    _release(value, self)
            elif type(value) is not _Tensor and hasattr(value, "_propagate_lock"):
                value._propagate_lock(locked)

    def _held_by_a_locked_parent(self) -> bool:
        """True while a locked tensordict that is still alive holds this one."""
        return any(_live_locked(ref) for ref in self._lock_holders)

    def _check_unlock(self) -> None:
        """Refuses an ``unlock_()`` that would unlock a sub-tensordict another locked one holds.

        Unlocking a tensordict unlocks every sub-tensordict it holds, so each of them must be
        held by no locked tensordict outside this one (two roots sharing a child).
        """
        if not self._locked:
            return
        if self._held_by_a_locked_parent():
            msg = "cannot unlock a sub-tensordict while its parent is locked; unlock the parent instead"
            raise LockedError(msg)
        inside = {id(self)}
        subs = []
        pending = [self]
        while pending:
            for value in _read_values(pending.pop()._tensordict):
                if isinstance(value, TensorDict) and value._locked and id(value) not in inside:
                    inside.add(id(value))
                    subs.append(value)
                    pending.append(value)
        for sub in subs:
            for ref in sub._lock_holders:
                holder = ref()
                if holder is not None and holder._locked and id(holder) not in inside:
                    msg = (
                        "cannot unlock a tensordict whose sub-tensordict another locked "
                        "tensordict holds too; unlock that one first, or hold both under one "
                        "tensordict and unlock it"
                    )
                    raise LockedError(msg)

    def unlock_(self: T) -> T:
        """Unlocks the tensordict and its sub-tensordicts, and returns it.

        A locked tensordict holds its sub-tensordicts locked, as long as it is alive: a
        sub-tensordict cannot be unlocked alone while it is, and one that two locked
        tensordicts hold (two roots sharing a child) keeps both of them locked. Hold such
        roots under one tensordict to unlock them together.

        Used as a context manager, ``with td.unlock_():`` locks the tensordict again when
        the block ends.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if a live locked tensordict holds this one, or holds one of its
                sub-tensordicts (LockedError); nothing is unlocked then.

        Examples:
            >>> td = TensorDict({"sub": {"a": torch.zeros(2)}}, [2]).lock_()
            >>> td.unlock_().is_locked, td["sub"].is_locked
            (False, False)
        """
        return super().unlock_()

    # ------------------------------------------------------------------ fast paths
    def _fast_apply(
        self,
        fn,
        *others,
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace=False,
        checked=False,
        prefix=(),
        **kwargs,
    ):
        if others or kwargs or inplace or batch_size is not None:
            return super()._fast_apply(
                fn,
                *others,
                batch_size=batch_size,
                names=names,
                device=device,
                inplace=inplace,
                checked=checked,
                prefix=prefix,
                **kwargs,
            )
        out = {}
        bs = self._batch_size
        n = len(bs)
        for key, value in self._tensordict.items():
            if isinstance(value, _Tensor):
                res = fn(value)
                if type(res) is _Unbatched:
                    res = res.rebatched(self._batch_size)
                elif (
                    checked
                    and res is not None
                    and (type(res) is not _Tensor or res.shape[:n] != bs)
                ):
                    check_result(prefix + (key,) if prefix else key, res, bs)
            elif isinstance(value, NonTensorDataBase):
                res = value._fast_apply(fn, device=device)
            else:
                res = value._fast_apply(fn, device=device, checked=checked, prefix=prefix + (key,))
            if res is not None:
                out[key] = res
        return self._result_cls._new_unsafe(
            out,
            bs,
            self._device if device is NO_DEFAULT else device,
            self._names if names is NO_DEFAULT else names,
        )

    def _index(self, index):
        batch_size = self._batch_size
        rows = False
        if type(index) is _Tensor and batch_size and index.ndim == 1 and index.dtype is _LONG:
            # The replay-buffer hot path: one long tensor of rows.
            leaf_index = index
            new_size = index.shape if len(batch_size) == 1 else index.shape + batch_size[1:]
            rows = True
        elif (
            type(index) is _Tensor
            and index.ndim == 1
            and batch_size
            and not index.is_floating_point()
        ):
            # One tensor of rows of another integer dtype, or a mask.
            if index.dtype is torch.bool:
                leaf_index, new_size = normalize_index(index, batch_size)
            else:
                leaf_index, new_size = index, torch.Size((index.shape[0],)) + batch_size[1:]
        else:
            leaf_index, new_size = normalize_index(index, batch_size)
            if self._mm is not None and has_first_class_dim(leaf_index):
                msg = (
                    f"cannot index a memory-mapped tensordict with the first-class dims of {index!r}: "
                    "its leaves are memory-mapped tensors; index a copy (td.clone()) instead"
                )
                raise FirstClassDimError(msg)
        if new_size is not None and type(leaf_index) is _Tensor and leaf_index.ndim:
            # Rows picked by a tensor: every leaf is copied, so a memory-mapped leaf is
            # indexed as the plain tensor it is (no view to keep), in one dispatch-free loop.
            out = _index_copies(self._tensordict, leaf_index, rows, TensorDict)
            if out is not None:
                names = None
                if self._names is not None:
                    names = dimnames.index(self._names, leaf_index, len(new_size))
                return self._result_cls._new_unsafe(out, new_size, self._device, names)
            out = {
                key: _index_leaf(value, leaf_index)
                if type(value) is not _Unbatched
                else value.rebatched(new_size)
                for key, value in self._tensordict.items()
            }
        elif new_size is not None:
            out = {
                key: _index_leaf(value, leaf_index)
                if type(value) is not _Unbatched
                else value.rebatched(new_size)
                for key, value in self._tensordict.items()
            }
        else:
            out = {}
            first = None
            unbatched = []
            for key, value in self._tensordict.items():
                if type(value) is _Unbatched:
                    unbatched.append(key)
                    continue
                res = out[key] = _index_leaf(value, leaf_index)
                if first is None and isinstance(res, _Tensor):
                    first = (value, res)
            if first is not None:
                new_size = batch_size_from_leaf(first[0], first[1], len(batch_size))
            else:
                new_size = batch_size_from_dummy(batch_size, leaf_index)
            for key in unbatched:
                out[key] = self._tensordict[key].rebatched(new_size)
        names = None
        if self._names is not None:
            names = dimnames.index(self._names, leaf_index, len(new_size))
        result = self._result_cls._new_unsafe(out, new_size, self._device, names)
        if self._mm is not None:
            _mark_view(result, self._locked)
        return result

    def _set_at(self, index, value) -> None:
        # One index write at a time in the process: two threads writing the same rows
        # leaf by leaf would otherwise leave rows whose leaves come from different writes.
        with _ROW_WRITES:
            self._write_rows(index, value)

    def _write_rows(self, index, value) -> None:
        batch_size = self._batch_size
        if type(index) is _Tensor and index.dtype is _LONG and index.ndim == 1:
            leaf_index, rows = index, None  # what normalize_index makes of it, without its checks
        else:
            leaf_index, rows = normalize_index(index, batch_size)
        whole = False
        advanced = False  # a tensor in the index: torch's index_put, which does not cast
        if rows is None:  # rows picked by tensors: torch writes those before a bad one
            advanced = isinstance(leaf_index, _Tensor) or (
                type(leaf_index) is tuple and any(isinstance(i, _Tensor) for i in leaf_index)
            )
            if (
                type(leaf_index) is _Tensor
                and leaf_index.dtype is _LONG
                and leaf_index.ndim == 1
                and batch_size
            ):
                # The replay-buffer hot path: one long tensor of rows.
                whole = _check_rows_in_range(leaf_index, batch_size[0])
                rows = (
                    leaf_index.shape if len(batch_size) == 1 else leaf_index.shape + batch_size[1:]
                )
            else:
                rows = _index_in_range(batch_size, leaf_index, index)
        data = self._tensordict
        given = (
            value._batch_size if type(value) is TensorDict else getattr(value, "batch_size", None)
        )
        if given is not None and given != rows:
            rows = _indexed_batch(batch_size, leaf_index, rows)
            if given != rows:
                _check_rows(index, given, rows)
        if type(value) is TensorDict and value._tensordict.keys() == data.keys():
            # The replay-buffer hot path: the same keys, written leaf by leaf, after every
            # shape was checked so that a refused value writes nothing.
            items = value._tensordict.items()
            bd, vbd = len(batch_size), len(value._batch_size)
            if _write_dense_rows(
                data, items, leaf_index, bd, value._batch_size, advanced, whole, TensorDict
            ):
                return
            with _no_subclass_dispatch():  # shapes of memory-mapped leaves, read cheaply
                for key, sub in items:
                    current = data[key]
                    if type(sub) is _Tensor and isinstance(current, _Tensor):
                        if type(current) is not _Unbatched:
                            _check_fits(key, sub, current, vbd, bd, advanced)
                    elif type(sub) is _Tensor and not is_non_tensor(current):
                        _check_fits(key, sub, current, vbd, bd, False)  # a level, no dtype
            for key, sub in items:
                current = data[key]
                if is_unbatched(current):
                    current.copy_(sub)  # the whole batch shares it: written whole
                elif type(sub) is _Tensor and isinstance(current, _Tensor):
                    current[leaf_index] = sub
                elif is_non_tensor(current):
                    self._write_entry_at(key, current, leaf_index, sub)
                else:
                    current[leaf_index] = sub.data if isinstance(sub, NonTensorDataBase) else sub
            return
        if is_tensor_collection(value) or isinstance(value, Mapping):
            items = [
                (key, array_as_tensor(sub))
                for key, sub in _source_items(
                    value._tensordict if getattr(type(value), "_is_tensorclass", False) else value
                )
                if sub is not None  # None (a tensorclass field left unset) writes nothing
            ]
            missing = [k for k, _ in items if k not in data]
            if missing and self._locked:
                msg = f"cannot add the keys {missing} through index assignment: the tensordict is locked"
                raise LockedError(msg)
            indexed = len(rows)
            bd = len(self._batch_size)
            vbd = len(value.batch_size) if hasattr(value, "batch_size") else indexed
            for key, sub in items:
                current = data.get(key)
                if (
                    isinstance(current, _Tensor)
                    and isinstance(sub, _Tensor)
                    and not is_unbatched(current)
                ):
                    _check_fits(key, sub, current, vbd, bd, advanced)
            for key, sub in items:
                current = data.get(key)
                if current is None:
                    current = _zeros_for(sub, self._batch_size, indexed)
                    data[key] = current
                if is_non_tensor(current):
                    self._write_entry_at(key, current, leaf_index, sub)
                elif is_unbatched(current):
                    current.copy_(sub)  # the whole batch shares it: written whole
                elif isinstance(current, _Tensor):
                    current[leaf_index] = (
                        sub if not isinstance(sub, NonTensorDataBase) else sub.data
                    )
                else:
                    current[leaf_index] = sub
            return
        for current in data.values():
            if is_non_tensor(current) or is_unbatched(current):
                continue
            current[leaf_index] = value

    def _write_entry_at(self, key: str, current, index, value) -> None:
        # A write at an index of a non-tensor entry: it may become another entry (a
        # NonTensorData taking another value becomes a NonTensorStack).
        written = current._written_at(index, value)
        if written is not current:
            self._tensordict[key] = written
            if self._mm is not None:
                self._persist_entry(key, written)

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        bd = len(self._batch_size)
        out = {}
        for key, value in self._tensordict.items():
            if is_unbatched(value):
                out[key] = value.rebatched(batch_size)
                continue
            extra = _extra_shape(value, bd)
            res = out[key] = op(value, extra)
            if names is not None and type(res) is TensorDict:
                _name_leading(res, names, value, bd)
        result = self._result_cls._new_unsafe(out, batch_size, self._device, names)
        if self._mm is not None:
            _mark_view(result, self._locked)
        elif self._locked:
            # the batch dims of a locked tensordict rearranged are locked as it is
            result._propagate_lock(True)
        return result

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        bd = len(self._batch_size)
        parts = [{} for _ in batch_sizes]
        for key, value in self._tensordict.items():
            if is_unbatched(value):
                for part, size in zip(parts, batch_sizes):
                    part[key] = value.rebatched(size)
                continue
            extra = _extra_shape(value, bd)
            for i, piece in enumerate(op(value, extra)):
                parts[i][key] = piece
                if names is not None and type(piece) is TensorDict:
                    _name_leading(piece, names, value, bd)
        results = tuple(
            self._result_cls._new_unsafe(
                part, size, self._device, None if names is None else list(names)
            )
            for part, size in zip(parts, batch_sizes)
        )
        for result in results:
            if self._mm is not None:
                _mark_view(result, self._locked)
            elif self._locked:
                result._propagate_lock(True)
        return results

    def _become(self, other, method: str) -> None:
        """Takes the batch size, names and entries of ``other``; sub-tensordicts keep their identity."""
        locked = [self] if self.is_locked else []
        locked += [v for v in self.values(True) if type(v) is TensorDict and v.is_locked]
        if locked:
            msg = f"cannot {method} in place: the tensordict is locked; call unlock_() first or use inplace=False"
            raise LockedError(msg)
        self._take(other)

    def _take(self, other) -> None:
        data = self._tensordict
        for key, value in other._tensordict.items():
            current = data.get(key)
            if type(current) is TensorDict and type(value) is TensorDict:
                current._take(value)
            else:
                data[key] = value
        self._batch_size = other._batch_size
        self._names = other._names

    def _shallow_copy(self):
        return self._result_cls._new_unsafe(
            dict(self._tensordict), self._batch_size, self._device, self._names
        )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dict(
        cls: type[T],
        input_dict: Mapping | TensorCollection,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        batch_dims: int | None = None,
        names: Sequence[str | None] | None = None,
        *,
        auto_batch_size: bool | None = None,
        **kwargs: Any,
    ) -> T:
        """Builds a tensordict from a (nested) dict, with a given or an inferred batch size.

        Without ``batch_size``, and with ``auto_batch_size`` or ``batch_dims``, the
        batch size is inferred as :meth:`auto_batch_size_` does and ``names`` are
        applied to the inferred dimensions. Otherwise the tensordict is built as
        the constructor builds it.

        Args:
            input_dict (dict, Mapping or TensorDictBase): the entries, converted as
                the constructor converts them.
            batch_size (torch.Size or sequence of int, optional): the batch size.
                Defaults to ``None``: ``torch.Size([])``, unless it is inferred.
            device (torch.device, str or int, optional): the device of every tensor.
                Defaults to ``None``.
            batch_dims (int, optional): infer the batch size, keeping at most this
                many dimensions. Defaults to ``None``.
            names (list of str, optional): the names of the batch dimensions.
                Defaults to ``None``.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size: the longest
                leading shape that every entry shares. Defaults to ``None`` (no).
            **kwargs: accepted for compatibility and ignored.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            RuntimeError: if a value's leading dimensions do not match ``batch_size``.
            TypeError: if a key is not a string or a tuple of strings, ``batch_size``
                is not a sequence of ints, or ``input_dict`` is not a mapping.
            ValueError: if ``batch_size`` holds a negative size, ``names`` does not
                hold one distinct name per batch dimension (of the given or the
                inferred batch size), or both ``batch_size`` and ``batch_dims`` are given.

        Examples:
            >>> d = {"a": torch.zeros(3, 4), "b": torch.zeros(3)}
            >>> TensorDict.from_dict(d).batch_size, TensorDict.from_dict(d, auto_batch_size=True).batch_size
            (torch.Size([]), torch.Size([3]))
        """
        if batch_size is not None and batch_dims is not None:
            msg = (
                f"from_dict() takes batch_size or batch_dims, not both: got batch_size="
                f"{list(batch_size)} and batch_dims={batch_dims}"
            )
            raise InvalidArgumentError(msg)
        infer = batch_size is None and (auto_batch_size or batch_dims is not None)
        td = cls(
            input_dict,
            batch_size=batch_size,
            device=device,
            names=None if infer else names,
        )
        if infer:
            td.auto_batch_size_(batch_dims)
            if names is not None:
                td.names = names
        return td

    @classmethod
    def fromkeys(
        cls: type[T],
        keys: Iterable[NestedKey],
        value: Any = 0,
        *,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
    ) -> T:
        """Builds a tensordict with every key of ``keys`` set to ``value``.

        A tensor value is cloned for each key. Any other value is stored for
        each key as :meth:`set` stores it: a number becomes a new tensor each
        time, while a tensordict is the same object under every key.

        Args:
            keys (iterable of NestedKey): the keys; a tuple key creates the missing
                sub-tensordicts.
            value (optional): the value of every key. Defaults to 0.

        Keyword Args:
            batch_size (torch.Size or sequence of int, optional): the batch size.
                Defaults to ``None``, which is ``torch.Size([])``.
            device (torch.device, str or int, optional): the device. Defaults to
                ``None``.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            RuntimeError: if the value's leading dimensions do not match
                ``batch_size``.
            TypeError: if a key is not a string or a tuple of strings, or
                ``batch_size`` is not a sequence of ints.
            ValueError: if a tuple key is empty or ``batch_size`` holds a negative size.

        Examples:
            >>> td = TensorDict.fromkeys(["a", ("b", "c")], 0.0, batch_size=[2])
            >>> td["b", "c"], list(td.keys(include_nested=True, leaves_only=True))
            (tensor([0., 0.]), ['a', ('b', 'c')])
        """
        td = cls({}, batch_size=batch_size, device=device)
        for key in keys:
            td.set(key, value.clone() if isinstance(value, _Tensor) else value)
        return td

    def auto_batch_size_(
        self: T, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> T:
        """Sets the batch size to the longest leading shape every entry shares, and returns the tensordict.

        Each sub-:class:`TensorDict` first gets its own inferred batch size (with
        the same limit), then counts with it. Tensors, sub-:class:`TensorDict` entries and
        the non-tensor entries that have batch dims are looked at; a
        :class:`NonTensorData` whose batch size does not start with the new one
        takes it. The new size replaces the old one without checking the lock, and
        clears :attr:`names`. Without any tensor, the batch size becomes empty.

        Args:
            batch_dims (int, optional): keep at most this many leading dimensions, here
                and in every sub-tensordict. Defaults to ``None``: no limit.
            keep_compliant_size (bool, optional): with ``batch_dims``, a sub-tensordict
                that has ``batch_dims`` batch dimensions or more already keeps its batch
                size. Defaults to False.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if a leaf is a nested tensor, which has no dense shape.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 4, 5), "b": torch.zeros(3, 4)})
            >>> td.auto_batch_size_().batch_size, td.auto_batch_size_(batch_dims=1).batch_size
            (torch.Size([3, 4]), torch.Size([3]))
        """
        shapes = []
        for value in self._tensordict.values():
            if isinstance(value, TensorDict):
                compliant = batch_dims is not None and value.batch_dims >= batch_dims
                if not (keep_compliant_size and compliant):
                    value.auto_batch_size_(batch_dims, keep_compliant_size)
                shapes.append(value.batch_size)
            elif is_non_tensor(value):
                if value.batch_size:  # one value for the whole batch sets no size
                    shapes.append(value.batch_size)
            elif isinstance(value, _Tensor) and not is_unbatched(value):
                shape = shape_of(value) if value.is_nested else value.shape
                if -1 in shape:  # a strided nested tensor: its ragged dims cannot be batch dims
                    shape = shape[: list(shape).index(-1)]
                shapes.append(shape)
        common = []
        if shapes:
            for dims in zip(*shapes):
                if all(d == dims[0] for d in dims):
                    common.append(dims[0])
                else:
                    break
        if batch_dims is not None:
            common = common[:batch_dims]
        new = torch.Size(common)
        for key, value in self._tensordict.items():
            if isinstance(value, NonTensorDataBase):
                if value.batch_size[: len(new)] != new:
                    value.batch_size = new
            elif is_unbatched(value):
                self._tensordict[key] = value.rebatched(new)
        self._batch_size = new
        self._names = None
        return self

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Returns a copy as a plain TensorDict: in memory, unlocked, not memory-mapped.

        The same as :meth:`clone`: every tensor is copied, and the batch size,
        device and names are kept.

        Keyword Args:
            retain_none (bool, optional): write the ``None`` fields of the tensorclasses
                inside as ``None`` entries. Defaults to ``None`` (no: they are left out).

        Returns:
            A new :class:`TensorDict` with copies of every tensor.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2]).memmap()
            >>> copy = td.to_tensordict()
            >>> copy.is_memmap(), copy.is_locked
            (False, False)
        """
        return plain_tree(self.clone(), retain_none)

    # ------------------------------------------------------------------ memmap hooks
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        for key, value in self._tensordict.items():
            if is_unbatched(value):
                msg = (
                    f"UnbatchedTensor entries cannot be memory-mapped yet, but {key!r} is one; "
                    f"exclude it first, e.g. with td.exclude({key!r})"
                )
                raise UnbatchedMemmapError(msg)
        _io.plan_entries(
            self, self._tensordict.items(), folder, plan, robust_key, existsok, like, self._names
        )

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        data = _io.rebuild_entries(
            self._tensordict.items(), folder, replacement, inplace, robust_key
        )
        # Memory-mapped tensors live in host memory: the result's device is the CPU.
        if inplace:
            self._tensordict.update(data)
            self._device = _CPU
            out = self
        else:
            out = self._result_cls._new_unsafe(data, self._batch_size, _CPU, self._names)
            for key, value in data.items():  # the copy's stacks are its own: they write its folder
                if getattr(type(value), "_is_non_tensor", False) and hasattr(value, "_home"):
                    data[key] = value.clone()
        out._mm = _io.Level(folder, robust_key=robust_key)
        out._home_entries()
        return out

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        meta = _io.records_of(self._tensordict.items(), folder, robust_key)
        meta.update(fmt.level_meta(self._batch_size, self._device, names=self._names))
        self._mm.write(meta, folder)

    def _memmap_refresh(self, options) -> None:
        changed = _io.refresh_entries(self._mm, self._tensordict, options)
        if changed is not None:  # new entries and a new level: the stacks' homes too
            self._batch_size, self._names, self._mm = changed
            self._home_entries()

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        if self._mm is None or fmt.level_kind(self._mm.path, meta) != fmt.KIND_TD:
            return False
        changed = _io.refresh_entries(self._mm, self._tensordict, options, (meta, stat))
        if changed is not None:
            self._batch_size, self._names, self._mm = changed
            self._home_entries()
        return True

    def _memmap_load_into(self, loaded) -> None:
        self._tensordict = loaded._tensordict
        self._batch_size = loaded._batch_size
        self._mm = loaded._mm

    def _home_entries(self) -> None:
        # The stacks of values of a memory-mapped level write their values to their entry of
        # its folder (see NonTensorStack._persist); entries that hold one value are
        # rewritten by this level when a write replaces them (_persist_entry).
        level = self._mm
        if level is None or level.path is None:
            return
        data = self._tensordict
        for key, value in data.items() if type(data) is dict else data.loaded_items():
            if getattr(type(value), "_is_non_tensor", False) and hasattr(value, "_home"):
                value._home = (level, key)

    def _lazy_loaded(self, value) -> None:
        # A sub-tensordict of a lazily opened level, read after this one was locked.
        if self._locked and isinstance(value, TensorDict):
            _hold(value, self)
        elif self._locked and type(value) is not _Tensor and hasattr(value, "_propagate_lock"):
            value._propagate_lock(True)

    def _persist_entry(self, key: str, value) -> None:
        # A non-tensor entry of a memory-mapped level replaced by a write in place (set_,
        # update_, an index assignment): its folder is rewritten with the new value.
        level = self._mm
        if level is None or level.path is None or key not in level.meta:
            return
        _io.rewrite_nontensor(level, key, value, level.robust_key)
        if hasattr(value, "_home"):
            value._home = (level, key)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, types, args, kwargs or {})

    # pickling: an in-memory tensordict pickles its entries; memory-mapped ones are
    # handled by MemoryMappedTensor's own reducer (file names, never the data).
    def __getstate__(self):
        return {
            "source": self._tensordict,
            "batch_size": self._batch_size,
            "device": self._device,
            "names": self._names,
            "locked": self._locked,
            "mm": self._mm,
        }

    def __setstate__(self, state) -> None:
        self._tensordict = state["source"]
        self._batch_size = state["batch_size"]
        self._device = state["device"]
        self._names = state["names"]
        self._locked = state["locked"]
        self._lock_holders = ()
        self._mm = state["mm"]

    def _reset_device(self, device) -> None:
        """Records ``device`` here and in every sub-tensordict, moving nothing (``auto_device_``)."""
        self._device = device
        for value in self._tensordict.values():
            if isinstance(value, TensorDictBase):
                value._reset_device(device)


def _adopt_batch(key: str, value, batch_size: torch.Size):
    """A shallow copy of the sub-tensordict ``value`` with the parent's longer batch size.

    As the well-known API does, ``TensorDict(next=TensorDict(done=t), batch_size=[3])``
    stores ``next`` with batch size ``[3]`` when its leaves allow it; the value given is
    left as it was. A lazy stack keeps its own batch size (and is refused by the caller).
    """
    if getattr(type(value), "_is_lazy", False):
        return value
    adopted = value.copy()
    if adopted.is_locked:
        adopted.unlock_()
    try:
        adopted.batch_size = batch_size
    except (RuntimeError, ValueError) as err:
        msg = (
            f"batch dimension mismatch for key {key!r}: the tensordict has batch_size="
            f"{list(batch_size)}, and the sub-tensordict of batch size {list(value.batch_size)} "
            f"cannot take it ({err})"
        )
        raise BatchSizeError(msg) from err
    return adopted


def _tree_copy(td: TensorDict) -> TensorDict:
    """A copy of ``td`` and of its sub-tensordicts (tensorclasses' too), sharing the leaves."""
    data = {}
    for key, value in td._tensordict.items():
        if type(value) is TensorDict:
            value = _tree_copy(value)
        elif (
            getattr(type(value), "_is_tensorclass", False) and type(value._tensordict) is TensorDict
        ):
            value = type(value)._from_tensordict(_tree_copy(value._tensordict))
        data[key] = value
    return TensorDict._new_unsafe(data, td._batch_size, td._device, td._names)


def _share_names(parent: TensorDict, key: str, sub: TensorDict) -> None:
    """Gives a sub-tensordict being stored and its parent the same names for the shared dims.

    Each shared dim named on one side only takes that name on the other; a dim named
    differently on both sides is refused.
    """
    n = len(parent._batch_size)
    mine = parent.names
    theirs = sub.names
    merged = []
    for i, (a, b) in enumerate(zip(mine, theirs[:n])):
        if a is not None and b is not None and a != b:
            msg = (
                f"the sub-tensordict {key!r} names its dim {i} {b!r}, but the tensordict names "
                f"it {a!r}: they share their leading dims, so the names must agree "
                f"(tensordict {mine}, sub-tensordict {theirs})"
            )
            raise DimNameConflictError(msg)
        merged.append(a if a is not None else b)
    if merged != mine:
        parent.names = merged
    if merged != theirs[:n]:
        sub._names = dimnames.clean([*merged, *theirs[n:]])
        sub._propagate_names()


def _name_leading(sub: TensorDict, names: list, before, bd: int) -> None:
    """Names the leading dims of ``sub`` (a shape op's result) ``names``, keeping its own further names.

    ``before`` is the sub-tensordict the op was applied to, whose dims past the
    parent's ``bd`` batch dims are the sub-tensordict's own.
    """
    own = before.names[bd:] if type(before) is TensorDict else []
    if len(names) + len(own) == len(sub._batch_size):
        sub._names = dimnames.clean([*names, *own])
        sub._propagate_names()


def _mark_view(view: TensorDict, locked: bool) -> None:
    """Flags a view of a memory-mapped tensordict: memory-mapped, with its source's lock.

    A view is memory-mapped when every leaf still is (advanced indexing copies), and
    then keeps the lock; sub-tensordicts, indexed first, agree with their parent.
    """
    subs = []
    for value in view._tensordict.values():
        kind = type(value)
        if kind is _MMT or is_non_tensor(value):
            continue
        if kind is not TensorDict or value._mm is None:
            break
        subs.append(value)
    else:
        view._mm = _io.Level(None)
        view._locked = locked
        if locked:
            for sub in subs:
                _hold(sub, view)
        return
    for value in view._tensordict.values():
        if type(value) is TensorDict and value._locked:
            value._propagate_lock(False)
            value._mm = None


def _read_values(data):
    """The values of a level's entries; of a lazily opened level, only those read so far."""
    return data.values() if type(data) is dict else data.loaded_values()


def _live_locked(ref) -> bool:
    holder = ref()
    return holder is not None and holder._locked


def _hold(child: TensorDict, parent: TensorDict) -> None:
    """Locks ``child``, held by the locked ``parent`` (recorded weakly, once)."""
    holders = child._lock_holders
    if not any(ref() is parent for ref in holders):
        child._lock_holders = (*(ref for ref in holders if ref() is not None), weakref.ref(parent))
    child._propagate_lock(True)


def _release(child: TensorDict, parent: TensorDict) -> None:
    """``parent`` is unlocked: ``child`` is too, unless another live locked tensordict holds it."""
    child._lock_holders = tuple(
        ref for ref in child._lock_holders if (holder := ref()) is not None and holder is not parent
    )
    if not any(_live_locked(ref) for ref in child._lock_holders):
        child._propagate_lock(False)


class _LeadingShape:
    """The shape a sub-tensordict's leaves share, standing in for its batch size in checks."""

    def __init__(self, td) -> None:
        shapes = [v.shape for v in td.values(True, True) if isinstance(v, _Tensor)]
        common = []
        for dims in zip(*shapes):
            if any(d != dims[0] for d in dims):
                break
            common.append(dims[0])
        self.batch_size = torch.Size(common) if shapes else td.batch_size


def _build(data: dict, batch_size, device, names) -> TensorDict:
    """A TensorDict over entries already checked against ``batch_size`` (an archive's level)."""
    return TensorDict._new_unsafe(data, batch_size, device, names)


def _load(folder: str, meta: dict, stat, options) -> TensorDict:
    """The loader of TensorDict folders, registered with the storage layer."""
    batch_size, device, names, data, inodes = _io.load_entries(folder, meta, options)
    td = TensorDict._new_unsafe(data, batch_size, device, names)
    if type(data) is _LazyEntries:
        data.owner = weakref.ref(td)
    td._mm = _io.Level(folder, meta, stat, options.robust_key, inodes, data)
    td._home_entries()
    return td


_io.LOADERS[fmt.TD_CLASS] = _load
CLASSES["TensorDict"] = TensorDict
_io.LOADERS[fmt.TD_TYPE] = _load
_archive.BUILDERS[fmt.KIND_TD] = _build


TensorDict._result_cls = TensorDict
