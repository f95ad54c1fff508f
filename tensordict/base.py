"""The abstract tensordict: a nested mapping of tensors that share batch dimensions.

:class:`TensorDictBase` declares and documents the whole public API. Every
concrete class implements a small set of primitives on one level of the tree
(``_get_str``, ``_set_str``, ``_del_str``, ``_keys_level``, ``_items_level``,
``_new_like``, ``_store_entry``, ``_index``, ``_set_at``, ``_batch_op``,
``_batch_op_multi``, ``_shallow_copy``, the lock) and the memmap hooks of
:mod:`tensordict.memmap._io`; every abstract one is declared below, and every
generic method here is written once on top of them.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import torch

from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    default_is_leaf,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._helpers import KEY_SEPARATOR, expand_as_right
from tensordict._keys import NestedKey, _key_parts, unravel_key, unravel_key_list
from tensordict._nontensor import NonTensorData, NonTensorDataBase, entry_from_list
from tensordict._ops.apply import ApplyMixin, tensor_leaves
from tensordict._ops.autograd import AutogradMixin
from tensordict._ops.consolidate import ConsolidateMixin
from tensordict._ops.convert import ConvertMixin, shape_of
from tensordict._ops.distributed import DistributedMixin
from tensordict._ops.entries import EntriesMixin
from tensordict._ops.exchange import ExchangeMixin
from tensordict._ops.memmap import MemmapMixin
from tensordict._ops.pack import PackMixin
from tensordict._ops.parallel import ParallelMixin
from tensordict._ops.pointwise import PointwiseMixin
from tensordict._ops.shape import ShapeMixin
from tensordict._ops.shape_more import ShapeMoreMixin
from tensordict._ops.torch_function import dispatch
from tensordict._ops.values import ValuesMixin
from tensordict._options import (
    GET_DEFAULT,
    capture_non_tensor_stack,
    get_defaults_to_none,
    list_to_stack,
    resolve_get_default,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
)
from tensordict._unbatched import is_unbatched
from tensordict.errors import (
    BatchSizeError,
    InvalidSourceError,
    LockedError,
    MissingKeyError,
    PathThroughLeafError,
)
from tensordict.memmap.tensor import MemoryMappedTensor


def _is_leaf_nontensor(cls: type) -> bool:
    return is_leaf_nontensor(cls) or default_is_leaf(cls)


class _KeysView:
    """A live view of a tensordict's keys, optionally nested."""

    __slots__ = ("_td", "_include_nested", "_leaves_only", "_is_leaf", "_sort")

    def __init__(self, td, include_nested, leaves_only, is_leaf, sort=False) -> None:
        self._td = td
        self._include_nested = include_nested
        self._leaves_only = leaves_only
        self._is_leaf = is_leaf
        self._sort = sort

    def __iter__(self) -> Iterator:
        if not self._include_nested and not self._leaves_only:
            keys = self._td._keys_level()
            return iter(sorted(keys) if self._sort else list(keys))
        keys = self._walk(self._td, ())
        if self._sort:
            return iter(sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k))
        return iter(list(keys))

    def _walk(self, td, prefix: tuple) -> Iterator:
        is_leaf = self._is_leaf or default_is_leaf
        walk = getattr(td, "_walk_items", None)  # a lazy stack: no stacked leaves to read
        for key, value in walk() if walk is not None else td._items_level():
            full = prefix + (key,) if prefix else key
            leaf = is_leaf(type(value))
            if self._include_nested and not getattr(value, "_is_non_tensor", False):
                inner = (
                    value._tensordict if getattr(type(value), "_is_tensorclass", False) else value
                )
                if isinstance(inner, TensorDictBase):
                    yield from self._walk(inner, full if isinstance(full, tuple) else (full,))
            if not self._leaves_only or leaf:
                yield full

    def __len__(self) -> int:
        if not self._include_nested and not self._leaves_only:
            return len(self._td._keys_level())
        return sum(1 for _ in self._walk(self._td, ()))

    def __contains__(self, key) -> bool:
        if isinstance(key, str):
            if not self._leaves_only:
                return key in self._td._keys_level()
            parts = (key,)
        else:
            try:
                parts = _key_parts(key)
            except (TypeError, ValueError):
                return False
            if len(parts) > 1 and not self._include_nested:
                return False
        td = self._td
        for part in parts[:-1]:
            td = td._get_str(part, None)
            if td is None or not hasattr(td, "_keys_level"):
                return False
        value = td._get_str(parts[-1], None)
        if value is None:
            return False
        if self._leaves_only:
            return (self._is_leaf or default_is_leaf)(type(value))
        return True

    def __eq__(self, other) -> bool:
        return set(self) == set(other)

    def __repr__(self) -> str:
        return f"_KeysView({list(self)})"


class TensorDictBase(
    ShapeMixin,
    ShapeMoreMixin,
    PointwiseMixin,
    ApplyMixin,
    AutogradMixin,
    ConvertMixin,
    ExchangeMixin,
    MemmapMixin,
    ParallelMixin,
    PackMixin,
    ConsolidateMixin,
    DistributedMixin,
    EntriesMixin,
    ValuesMixin,
    abc.ABC,
    TensorCollection,
):
    """The abstract base of every tensordict class.

    A tensordict maps string keys to tensors or to other tensordicts. Every entry
    shares the leading *batch* dimensions (``batch_size``), so that the whole
    tree can be indexed, reshaped, stacked, moved and saved like one tensor.
    """

    # The states to restore when ``with td.lock_():`` / ``with td.unlock_():`` blocks end, and
    # what ends a ``with td.to_module(module):`` block (set on the tensordict to_module returns).
    __slots__ = ("_lock_blocks", "_exit_action")
    _is_tensor_collection = True
    _is_tensorclass = False
    _is_lazy = False

    # ------------------------------------------------------------------ primitives
    @property
    @abc.abstractmethod
    def batch_size(self) -> torch.Size:
        """The batch size: the leading dimensions every entry shares; setting it checks each entry.

        Raises:
            RuntimeError: on setting, if an entry does not fit the new size (BatchSizeError), or if
                the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
            >>> td.batch_size = [2, 3]
            >>> td.batch_size
            torch.Size([2, 3])
        """

    @property
    @abc.abstractmethod
    def device(self) -> torch.device | None:
        """The device of every tensor (a tensordict built with one moves tensors there), or None.

        Raises:
            RuntimeError: on setting a TensorDict's device; use ``td.to(device)`` instead.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2], device="cpu").device
            device(type='cpu')
        """

    @property
    @abc.abstractmethod
    def names(self) -> list | None:
        """The names of the batch dimensions: a list with a name or None per dimension, or None.

        A TensorDict always returns a list; a lazy stack returns None unless its stack dim is named.

        Raises:
            ValueError: on setting, if the list length is not ``batch_dims``, or a name repeats.

        Examples:
            >>> TensorDict({}, [2, 3], names=["x", None]).names
            ['x', None]
        """

    @abc.abstractmethod
    def _get_str(self, key: str, default):
        """The value at one key of this level, or ``default`` (``NO_DEFAULT`` raises)."""

    @abc.abstractmethod
    def _set_str(self, key: str, value, *, inplace: bool, validated: bool) -> None:
        """Stores a value at one key of this level."""

    @abc.abstractmethod
    def _del_str(self, key: str) -> None:
        """Removes one key of this level."""

    @abc.abstractmethod
    def _keys_level(self):
        """The keys of this level (a set-like view)."""

    @abc.abstractmethod
    def _items_level(self):
        """``(key, value)`` pairs of this level."""

    @abc.abstractmethod
    def _new_like(self, source: dict, batch_size: torch.Size, names=NO_DEFAULT, device=NO_DEFAULT):
        """A new unlocked tensordict holding ``source`` (validated) with the given batch size."""

    @property
    @abc.abstractmethod
    def is_locked(self) -> bool:
        """True when the tensordict refuses new keys, deletions and rebinding; setting it (un)locks.

        Examples:
            >>> td = TensorDict({"a": {}}, [])
            >>> td.is_locked = True
            >>> td["a"].is_locked
            True
        """

    @abc.abstractmethod
    def _propagate_lock(self, locked: bool) -> None:
        """Sets the lock flag of this level and of every sub-tensordict."""

    @abc.abstractmethod
    def _store_entry(self, key: str, value) -> None:
        """Stores ``value`` at one key of this level even when locked (for ``make_memmap*``).

        A sub-tensordict stored in a locked tensordict is locked with it.
        """

    @abc.abstractmethod
    def _index(self, index):
        """The tensordict indexed on its batch dimensions by a normalisable ``index``."""

    @abc.abstractmethod
    def _set_at(self, index, value) -> None:
        """Writes ``value`` (a tensordict, a mapping, a tensor or a number) into the rows ``index``."""

    @abc.abstractmethod
    def _batch_op(self, op, batch_size: torch.Size, names=None):
        """A new tensordict of batch size ``batch_size`` whose entries are ``op(value, feature_shape)``."""

    @abc.abstractmethod
    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        """Like :meth:`_batch_op` for an ``op`` that returns one piece per batch size (split, unbind)."""

    # ------------------------------------------------------------------ memmap hooks
    # The storage layer works through these (see tensordict.memmap._io for the protocol).
    _mm = None  # the tensordict's memmap state (a tensordict.memmap._io.Level), or None

    @abc.abstractmethod
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        """Adds what writing this tensordict into ``folder`` needs to ``plan``; checks keys first."""

    @abc.abstractmethod
    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        """This tensordict with every tensor replaced by ``replacement[id(tensor)]``, its state set."""

    @abc.abstractmethod
    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        """Writes the ``meta.json`` files of this tensordict's levels into ``folder``, children first."""

    @abc.abstractmethod
    def _memmap_refresh(self, options) -> None:
        """Re-reads this tensordict's folder in place (never writes)."""

    @abc.abstractmethod
    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        """Re-reads in place from a parsed ``meta.json``; False (nothing changed) if it holds another class."""

    @abc.abstractmethod
    def _memmap_load_into(self, loaded) -> None:
        """Takes the entries and state of ``loaded`` (a tensordict of this class) in place."""

    @classmethod
    def _memmap_record_type(cls) -> str:
        """The ``"type"`` of this class's record in its parent's ``meta.json``."""
        return cls.__name__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, types, args, kwargs or {})

    # ------------------------------------------------------------------ shape basics
    @property
    def shape(self) -> torch.Size:
        """The batch size (an alias of :attr:`batch_size`).

        Examples:
            >>> TensorDict({"a": torch.zeros(2, 3)}, [2]).shape
            torch.Size([2])
        """
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions.

        Examples:
            >>> TensorDict({}, [2, 3]).batch_dims
            2
        """
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """The number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).ndim
            2
        """
        return len(self.batch_size)

    def ndimension(self) -> int:
        """Returns the number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).ndimension()
            2
        """
        return len(self.batch_size)

    def dim(self) -> int:
        """Returns the number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).dim()
            2
        """
        return len(self.batch_size)

    def size(self, dim: int | None = None):
        """Returns the batch size, or its size along one batch dimension.

        Args:
            dim (int, optional): a batch dimension (negative counts from the end). Defaults to None.

        Returns:
            The torch.Size batch size, or an int when ``dim`` is given.

        Raises:
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> TensorDict({}, [2, 3]).size(), TensorDict({}, [2, 3]).size(-1)
            (torch.Size([2, 3]), 3)
        """
        return self.batch_size if dim is None else self.batch_size[dim]

    def numel(self) -> int:
        """Returns the number of elements of the batch.

        Returns:
            The product of the batch size, as an int (1 without batch dimensions).

        Examples:
            >>> TensorDict({}, [2, 3]).numel()
            6
        """
        return self.batch_size.numel()

    def __len__(self) -> int:
        """The size of the first batch dimension (0 without batch dimensions)."""
        batch_size = self.batch_size
        return batch_size[0] if batch_size else 0

    # ------------------------------------------------------------------ keys
    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> _KeysView:
        """Returns a live view of the keys; nested keys are tuples, listed before their parent.

        Args:
            include_nested (bool, optional): list sub-tensordicts' keys too. Defaults to False.
            leaves_only (bool, optional): list only the keys of leaves. Defaults to False.
            is_leaf (callable, optional): takes a value's class, True for a leaf (it only filters
                what ``leaves_only`` keeps). Defaults to None: tensor collections are not leaves,
                neither sub-tensordicts nor non-tensor entries.

        Keyword Args:
            sort (bool, optional): sort the keys, a nested key by its parts. Defaults to False.

        Returns:
            A view that iterates, counts and answers ``in`` (tuples only with ``include_nested``).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> list(td.keys(include_nested=True)), list(td.keys(True, leaves_only=True))
            (['a', ('b', 'c'), 'b'], ['a', ('b', 'c')])
        """
        return _KeysView(self, include_nested, leaves_only, is_leaf, sort)

    @property
    def sorted_keys(self) -> list:
        """The keys of this level as a sorted list (nested keys are not included).

        Examples:
            >>> TensorDict({"b": torch.zeros(2), "a": {"c": torch.zeros(2)}}, [2]).sorted_keys
            ['a', 'b']
        """
        return sorted(self._keys_level())

    def values(
        self, include_nested: bool = False, leaves_only: bool = False, is_leaf=None, *, sort=False
    ) -> Iterator:
        """Iterates over the values, in the order of :meth:`keys` called with the same arguments.

        Args:
            include_nested, leaves_only, is_leaf: as in :meth:`keys`.

        Keyword Args:
            sort (bool, optional): follow the sorted keys. Defaults to False.

        Returns:
            A generator of tensors, sub-tensordicts and NonTensorData entries.

        Examples:
            >>> list(TensorDict({"b": torch.ones(1), "a": torch.zeros(1)}, [1]).values(sort=True))
            [tensor([0.]), tensor([1.])]
        """
        for key in self.keys(include_nested, leaves_only, is_leaf, sort=sort):
            yield self.get(key, NO_DEFAULT)

    def items(
        self, include_nested: bool = False, leaves_only: bool = False, is_leaf=None, *, sort=False
    ) -> Iterator:
        """Iterates over ``(key, value)`` pairs, ordered as :meth:`keys` with the same arguments.

        Args:
            include_nested, leaves_only, is_leaf: as in :meth:`keys`.

        Keyword Args:
            sort (bool, optional): follow the sorted keys. Defaults to False.

        Returns:
            A generator of pairs; a nested key is a tuple.

        Examples:
            >>> [k for k, _ in TensorDict({"b": {"c": torch.zeros(1)}}, [1]).items(True, True)]
            [('b', 'c')]
        """
        if not include_nested and not leaves_only and not sort:
            yield from list(self._items_level())
            return
        for key in self.keys(include_nested, leaves_only, is_leaf, sort=sort):
            yield key, self.get(key, NO_DEFAULT)

    def __iter__(self) -> Iterator:
        """Iterates over the first batch dimension (like a tensor): ``td[0]``, ``td[1]``, ...

        Raises:
            TypeError: if the tensordict has no batch dimension.
        """
        if not self.batch_size:
            msg = "iteration over a tensordict without batch dimensions; iterate over td.keys() instead"
            raise TypeError(msg)
        return iter(self.unbind(0))

    def __contains__(self, key) -> bool:
        if isinstance(key, (str, tuple)):
            return key in self.keys(include_nested=isinstance(key, tuple))
        msg = (
            "'key in tensordict' checks keys: use 'key in td.keys()' for a key, or compare "
            f"values explicitly; got {type(key).__name__}"
        )
        raise NotImplementedError(msg)

    def is_empty(self) -> bool:
        """Returns True when the tensordict holds no leaf.

        Returns:
            True if no leaf is found: sub-tensordicts without leaves and non-tensor entries (not
            leaves by default, see :meth:`keys`) count as empty.

        Examples:
            >>> TensorDict({"a": {}}, []).is_empty(), TensorDict({"a": 0}, []).is_empty()
            (True, False)
        """
        for _ in self.keys(True, True):
            return False
        return True

    # ------------------------------------------------------------------ get / set
    def _missing(self, parts: tuple, depth: int, level) -> MissingKeyError:
        full = parts[0] if len(parts) == 1 else parts
        where = (
            ""
            if depth == 0
            else f" (no {parts[depth]!r} in the sub-tensordict at {parts[:depth]!r})"
        )
        existing = sorted(level._keys_level()) if hasattr(level, "_keys_level") else []
        msg = f"key {full!r} not found in {type(self).__name__}{where}; existing keys at that level: {existing}"
        return MissingKeyError(msg)

    def get(self, key: NestedKey, default=GET_DEFAULT):
        """Returns the entry at ``key``, or ``default`` when the key is missing, like ``dict.get``.

        Unlike ``td[key]``, a missing key is no error and a non-tensor entry comes as NonTensorData.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: returned when the key is missing. Defaults to None (a KeyError after
                ``set_get_defaults_to_none(False)``); ``NO_DEFAULT`` raises.

        Returns:
            A tensor, a sub-tensordict, a NonTensorData entry, or ``default``.

        Raises:
            KeyError: if the key is missing and ``default`` is ``NO_DEFAULT`` (MissingKeyError,
                naming the keys where the search stopped), or if its path goes through an entry that
                is not a tensordict and ``default`` is None or ``NO_DEFAULT`` (PathThroughLeafError,
                also a ValueError).
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> TensorDict({"a": {"b": torch.zeros(3)}}, [3]).get(("a", "b"))
            tensor([0., 0., 0.])
        """
        if type(key) is str:
            value = self._get_str(key, None)
            if value is not None:
                return value
            default = resolve_get_default(default, NO_DEFAULT)
            if default is not NO_DEFAULT:
                return default
            raise self._missing((key,), 0, self)
        parts = _key_parts(key)
        default = resolve_get_default(default, NO_DEFAULT)
        level = self
        last = len(parts) - 1
        for depth, part in enumerate(parts):
            if getattr(type(level), "_is_tensorclass", False):
                level = level._tensordict
            elif not hasattr(level, "_get_str") or is_non_tensor(level):
                if default is not NO_DEFAULT and default is not None:
                    return default
                msg = f"cannot get {parts!r}: the entry {parts[:depth]!r} is a {type(level).__name__}, not a tensordict"
                raise PathThroughLeafError(msg)
            value = level._get_str(part, None)
            if value is None:
                if default is not NO_DEFAULT:
                    return default
                raise self._missing(parts, depth, level)
            if depth == last:
                return value
            level = value
        return level  # pragma: no cover - loop always returns

    def __getitem__(self, index):
        """Returns an entry (string or tuple-of-strings key) or a tensordict indexed on the batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.arange(6).reshape(3, 2)}, [3])
            >>> td["a"].shape
            torch.Size([3, 2])
            >>> td[1:]["a"].shape
            torch.Size([2, 2])
        """
        if type(index) is str:
            value = self._get_str(index, None)
            if value is None:
                raise self._missing((index,), 0, self)
            return _read_value(value) if is_non_tensor(value) else value
        if type(index) is tuple and index and _all_str(index):
            value = self.get(index, NO_DEFAULT)
            return _read_value(value) if is_non_tensor(value) else value
        return self._index(index)

    def __getitems__(self, indices) -> TensorDictBase:
        """Returns the rows at ``indices`` as one tensordict: how a DataLoader fetches a batch.

        :class:`torch.utils.data.DataLoader` calls it with the list of a batch's indices, so
        that ``DataLoader(td, batch_size=64, collate_fn=lambda x: x)`` yields tensordicts of
        64 rows instead of lists of 64 one-row tensordicts.

        Args:
            indices (sequence of int or tensor): the rows along the first batch dim.

        Returns:
            TensorDictBase: the rows, as ``td[torch.as_tensor(indices)]`` gives them.

        Raises:
            IndexError: if an index is out of range.

        Examples:
            >>> td = TensorDict(x=torch.arange(5), batch_size=[5])
            >>> td.__getitems__([0, 3])["x"]
            tensor([0, 3])
        """
        if not isinstance(indices, torch.Tensor):
            indices = torch.as_tensor(list(indices), dtype=torch.long)
        return self[indices]

    def get_non_tensor(self, key: NestedKey, default=None):
        """Returns the Python value of the non-tensor entry at ``key`` (other entries as they are).

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: returned when the key is missing. Defaults to None; ``NO_DEFAULT`` raises.

        Returns:
            The value a NonTensorData entry holds, a tensor or sub-tensordict, or ``default``.

        Raises:
            KeyError: if the key is missing with ``NO_DEFAULT``, or its path goes through a leaf.
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> TensorDict({"name": "cartpole"}, [2]).get_non_tensor("name")
            'cartpole'
        """
        value = self.get(key, default)
        return _read_value(value) if is_non_tensor(value) else value

    def _walk_to_parent(self, parts: tuple, create: bool):
        """The tensordict that holds the last part of ``parts``, created when asked."""
        level = self
        for depth, part in enumerate(parts[:-1]):
            if getattr(type(level), "_is_tensorclass", False):
                level = level._tensordict
            nxt = level._get_str(part, None)
            if nxt is None:
                if not create:
                    raise self._missing(parts, depth, level)
                if level.is_locked:
                    msg = (
                        f"cannot create the sub-tensordict {parts[: depth + 1]!r}: the tensordict is "
                        "locked; call unlock_() first"
                    )
                    raise LockedError(msg)
                level._set_str(
                    part, level._new_like({}, level.batch_size), inplace=False, validated=True
                )
                # read back what was stored: a lazy stack stores one new level per member
                nxt = level._get_str(part, None)
            elif not is_tensor_collection(nxt) or is_non_tensor(nxt):
                msg = (
                    f"cannot reach {parts!r}: the entry {parts[: depth + 1]!r} is a "
                    f"{type(nxt).__name__}, not a tensordict"
                )
                raise PathThroughLeafError(msg)
            level = nxt
        if getattr(type(level), "_is_tensorclass", False):
            level = level._tensordict
        return level

    def set(
        self, key: NestedKey, item, inplace: bool = False, *, non_blocking: bool = False, **kwargs
    ):
        """Stores ``item`` at ``key`` and returns the tensordict.

        A tuple key creates the missing sub-tensordicts on its path once the value is accepted.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            item: a tensor whose leading dims equal the batch size, a tensordict, a dict (stored
                as a sub-tensordict), a number or array (a tensor), or other value (NonTensorData).
            inplace (bool, optional): write into the existing entry (copy into a tensor, update a
                sub-tensordict) instead of rebinding; a missing key is added. Defaults to False.

        Keyword Args:
            non_blocking, **kwargs: accepted for compatibility; ignored.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the value's leading dims do not match the batch size or an in-place
                copy does not fit (BatchSizeError); if the tensordict is locked and the key would be
                added or rebound (LockedError).
            KeyError: if the key's path goes through an entry that is not a tensordict.
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> TensorDict({}, [2]).set(("a", "b"), torch.zeros(2, 3))["a", "b"].shape
            torch.Size([2, 3])
        """
        if type(key) is str:
            self._set_str(key, item, inplace=inplace, validated=False)
            return self
        parts = _key_parts(key)
        try:
            parent = self._walk_to_parent(parts, create=False)
        except MissingKeyError:
            # Check the value before creating sub-tensordicts, so a refused value leaves none.
            deepest = self._deepest(parts)
            deepest._new_like({}, deepest.batch_size).set(parts[-1], item)
            parent = self._walk_to_parent(parts, create=True)
        parent._set_str(parts[-1], item, inplace=inplace, validated=False)
        return self

    def _deepest(self, parts: tuple):
        """The deepest existing tensordict on the path of ``parts``."""
        level = self
        for part in parts[:-1]:
            inner = level._tensordict if getattr(type(level), "_is_tensorclass", False) else level
            nxt = inner._get_str(part, None)
            if nxt is None or not hasattr(nxt, "_get_str"):
                return inner
            level = nxt
        return level._tensordict if getattr(type(level), "_is_tensorclass", False) else level

    def set_(self, key: NestedKey, item) -> TensorDictBase:
        """Copies ``item`` into the entry at ``key`` (even when locked) and returns the tensordict.

        Args:
            key (NestedKey): the key of an existing entry.
            item: the value to copy; anything that broadcasts to the entry, such as a number.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if the key is missing, or its path goes through a non-tensordict entry.
            RuntimeError: if ``item`` does not broadcast to the entry's shape (BatchSizeError).
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).lock_().set_("a", 1.0)["a"]
            tensor([1., 1.])
        """
        parts = _key_parts(key)
        parent = self._walk_to_parent(parts, create=False)
        if parent._get_str(parts[-1], None) is None:
            raise self._missing(parts, len(parts) - 1, parent)
        parent._set_str(parts[-1], item, inplace=True, validated=False)
        return self

    def __setitem__(self, index, value) -> None:
        if type(index) is str or (type(index) is tuple and index and _all_str(index)):
            self.set(index, value)
            return
        self._set_at(index, value)

    def setdefault(self, key: NestedKey, default):
        """Returns the entry at ``key``, storing ``default`` there first if the key is missing.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: the value to store, of any kind :meth:`set` accepts.

        Returns:
            The existing or the new entry (a NonTensorData entry itself, not its value).

        Raises:
            RuntimeError: if ``default`` does not fit the batch size, or the tensordict is locked.
            KeyError: if the key's path goes through an entry that is not a tensordict.
            TypeError: if the key is not a string or a tuple of strings.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.setdefault("a", torch.ones(2)), td.setdefault("b", torch.ones(2))
            (tensor([0., 0.]), tensor([1., 1.]))
        """
        value = self.get(key, None)
        if value is None:
            self.set(key, default)
            value = self.get(key, NO_DEFAULT)
        return value

    def update(
        self,
        input_dict_or_td,
        clone: bool = False,
        inplace: bool = False,
        *,
        keys_to_update=None,
        non_blocking: bool = False,
        **kwargs,
    ) -> TensorDictBase:
        """Writes every entry of a mapping or tensordict into this one and returns it.

        A nested mapping updates a sub-tensordict key by key. ``td.update(td)`` is a no-op.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the entries; keys may be tuples.
            clone (bool, optional): store clones of the tensors and tensordicts. Defaults to False.
            inplace (bool, optional): write into existing entries, as ``set(inplace=True)``.
                Defaults to False.

        Keyword Args:
            keys_to_update (sequence of NestedKey, optional): write only these keys and what lies
                under them. Defaults to None: every key.
            non_blocking, **kwargs: accepted for compatibility; ignored.

        Returns:
            The tensordict itself.

        Raises:
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict (InvalidSourceError,
                also a ValueError), or a key is not a string or a tuple of strings.
            RuntimeError: if a value does not fit the batch size, or the tensordict is locked and a
                key would be added or rebound.
            KeyError: if a key's path goes through an entry that is not a tensordict.

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(2)}}, [2])
            >>> td.update({"a": {"c": torch.ones(2)}})["a"].sorted_keys
            ['b', 'c']
        """
        if input_dict_or_td is self:
            return self
        wanted = None
        if keys_to_update is not None:
            wanted = {_key_parts(k) for k in keys_to_update}
        self._update(input_dict_or_td, (), clone, inplace, wanted)
        return self

    def _update(self, source, prefix: tuple, clone: bool, inplace: bool, wanted) -> None:
        for key, value in _source_items(source):
            parts = prefix + _key_parts(key)
            if wanted is not None and not any(parts[: len(w)] == w for w in wanted):
                if not any(w[: len(parts)] == parts for w in wanted):
                    continue
            target_parent = self._walk_to_parent(parts, create=True) if len(parts) > 1 else self
            current = target_parent._get_str(parts[-1], None)
            if isinstance(value, (Mapping, TensorDictBase)) and not is_non_tensor(value):
                if current is not None and isinstance(current, TensorDictBase):
                    self._update(value, parts, clone, inplace, wanted)
                    continue
            if clone and isinstance(value, (torch.Tensor, TensorDictBase)):
                value = value.clone()
            target_parent._set_str(
                parts[-1], value, inplace=inplace and current is not None, validated=False
            )

    def set_at_(self, key: NestedKey, value, index) -> TensorDictBase:
        """Writes ``value`` into the rows ``index`` of the entry at ``key``, even when locked.

        Args:
            key (NestedKey): the key of an existing tensor or sub-tensordict.
            value: a tensor, number or (for a sub-tensordict) mapping that broadcasts to the rows.
            index: an index of the leading dims: an int, slice, tensor, or a tuple of them.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if the key is missing, or its path goes through a non-tensordict entry.
            IndexError: if ``index`` is out of range.
            RuntimeError: if ``value`` does not broadcast to the indexed rows.

        Examples:
            >>> TensorDict({"a": torch.zeros(3)}, [3]).set_at_("a", 1.0, 1)["a"]
            tensor([0., 1., 0.])
        """
        self.get(key, NO_DEFAULT)[index] = value
        return self

    def update_at_(self, input_dict_or_td, index, clone: bool = False) -> TensorDictBase:
        """Writes each entry of a mapping or tensordict into the rows ``index`` of the same entry.

        Nested mappings go into the matching sub-tensordicts, in place, so this works when locked.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the values, keyed as in this tensordict.
            index: an index of the batch dims: an int, slice, tensor, or a tuple of them.
            clone (bool, optional): call ``clone()`` on each value first. Defaults to False.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if a key of ``input_dict_or_td`` is not in this tensordict.
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict.
            IndexError: if ``index`` is out of range.
            RuntimeError: if a value does not broadcast to the indexed rows.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3)}}, [3])
            >>> td.update_at_({"a": 1.0, "b": {"c": 2.0}}, 1)["b", "c"]
            tensor([0., 2., 0.])
        """
        for key, value in _source_items(input_dict_or_td):
            if isinstance(value, (Mapping, TensorDictBase)) and not is_non_tensor(value):
                self.get(key, NO_DEFAULT).update_at_(value, index, clone)
            else:
                self.set_at_(key, value.clone() if clone else value, index)
        return self

    def update_(self, input_dict_or_td, clone: bool = False, *, keys_to_update=None, **kwargs):
        """Copies every entry of a mapping or tensordict into the existing entries, in place.

        Nested mappings update the matching sub-tensordicts. Nothing is rebound: it works if locked.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the values, keyed as in this tensordict.
            clone (bool, optional): call ``clone()`` on each value first. Defaults to False.

        Keyword Args:
            keys_to_update (sequence of NestedKey, optional): copy only the values at these keys
                of ``input_dict_or_td``; nested mappings are entered whatever their key. Defaults
                to None, which copies every value.
            **kwargs: accepted for compatibility; ignored.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if a key of ``input_dict_or_td`` is not in this tensordict.
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict.
            RuntimeError: if a value does not broadcast to its entry (BatchSizeError).

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).lock_().update_({"a": torch.ones(2)})["a"]
            tensor([1., 1.])
        """
        for key, value in _source_items(input_dict_or_td):
            parts = _key_parts(key)
            if keys_to_update is not None and unravel_key(parts) not in {
                unravel_key(k) for k in keys_to_update
            }:
                if not isinstance(value, (Mapping, TensorDictBase)):
                    continue
            if isinstance(value, (Mapping, TensorDictBase)) and not is_non_tensor(value):
                sub = self.get(parts, NO_DEFAULT)
                sub.update_(value, clone=clone)
                continue
            self.set_(parts, value.clone() if clone else value)
        return self

    def pop(self, key: NestedKey, default=NO_DEFAULT):
        """Removes the entry at ``key`` and returns it (or ``default`` if the key is missing).

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: returned when the key is missing. Defaults to ``NO_DEFAULT``, which raises.

        Returns:
            The removed entry (a NonTensorData entry itself), or ``default``.

        Raises:
            KeyError: if the key is missing and no default is given, or (even with one) if its path
                goes through an entry that is not a tensordict.
            RuntimeError: if the tensordict is locked and the key exists (LockedError).
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2])
            >>> td.pop("a"), td.pop("x", None), td.sorted_keys
            (tensor([0., 0.]), None, ['b'])
        """
        value = self.get(key, None)
        if value is None:
            if default is not NO_DEFAULT:
                return default
            raise self._missing(_key_parts(key), 0, self)
        self.del_(key)
        return value

    def del_(self, key: NestedKey) -> TensorDictBase:
        """Removes the entry at ``key`` and returns the tensordict.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if the key is missing, or its path goes through a non-tensordict entry.
            RuntimeError: if the tensordict is locked (LockedError).
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key is the empty tuple.

        Examples:
            >>> TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2]).del_(("b", "c"))
            TensorDict(batch_size=[2], fields={a: f32[], b: {}})
        """
        parts = _key_parts(key)
        parent = self._walk_to_parent(parts, create=False)
        if parent._get_str(parts[-1], None) is None:
            raise self._missing(parts, len(parts) - 1, parent)
        parent._del_str(parts[-1])
        return self

    def __delitem__(self, key: NestedKey) -> None:
        self.del_(key)

    def rename_key_(
        self, old_key: NestedKey, new_key: NestedKey, safe: bool = False
    ) -> TensorDictBase:
        """Moves the entry at ``old_key`` to ``new_key`` (deletes it, then :meth:`set` stores it).

        Args:
            old_key (NestedKey): the key of an existing entry.
            new_key (NestedKey): the new key; a tuple creates missing sub-tensordicts.
            safe (bool, optional): refuse to overwrite an existing ``new_key``. Defaults to False.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if ``old_key`` is missing, if ``safe`` and ``new_key`` exists, or if a key's
                path goes through an entry that is not a tensordict.
            RuntimeError: if the tensordict is locked (LockedError).
            TypeError: if a key is not a string or a tuple of strings.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).rename_key_("a", ("b", "c"))
            TensorDict(batch_size=[2], fields={b: {c: f32[]}})
        """
        value = self.get(old_key, NO_DEFAULT)
        if safe and self.get(new_key, None) is not None:
            msg = f"key {unravel_key(new_key)!r} already exists; pass safe=False to overwrite it"
            raise KeyError(msg)
        if self.is_locked:
            msg = f"cannot rename {unravel_key(old_key)!r}: the tensordict is locked; call unlock_() first"
            raise LockedError(msg)
        self.del_(old_key)
        self.set(new_key, value)
        return self

    def select(
        self, *keys: NestedKey, inplace: bool = False, strict: bool = True
    ) -> TensorDictBase:
        """Returns a tensordict with only the given keys, sharing their entries.

        Args:
            *keys (NestedKey): the keys to keep; a string keeps a whole sub-tensordict.

        Keyword Args:
            inplace (bool, optional): remove the other keys from this tensordict. Defaults to False.
            strict (bool, optional): raise for a missing key, else skip it. Defaults to True.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            KeyError: if ``strict`` and a key is missing.
            RuntimeError: if ``inplace`` and the tensordict is locked (LockedError).
            TypeError: if a key is not a string or a tuple of strings.

        Examples:
            >>> TensorDict({"a": 0, "b": {"c": 0, "d": 0}}, []).select("a", ("b", "c"))
            TensorDict(batch_size=[], fields={a: i64[], b: {c: i64[]}})
        """
        tree: dict = {}
        for key in keys:
            node = tree
            parts = _key_parts(key)
            for part in parts[:-1]:
                node = node.setdefault(part, {})
                if node is True:
                    break
            else:
                node[parts[-1]] = True
        out = self._select_tree(tree, strict, ())
        if inplace:
            for key in list(self._keys_level()):
                if key not in out._keys_level():
                    self._del_str(key)
                else:
                    self._set_str(key, out._get_str(key, None), inplace=False, validated=True)
            return self
        return out

    def _select_tree(self, tree: dict, strict: bool, prefix: tuple):
        source = {}
        for key, sub in tree.items():
            value = self._get_str(key, None)
            if value is None:
                if strict:
                    raise self._missing(prefix + (key,), len(prefix), self)
                continue
            if sub is not True and isinstance(value, TensorDictBase):
                value = value._select_tree(sub, strict, prefix + (key,))
            source[key] = value
        return self._new_like(source, self.batch_size)

    def exclude(self, *keys: NestedKey, inplace: bool = False) -> TensorDictBase:
        """Returns a tensordict without the given keys (missing ones ignored), sharing the others.

        Args:
            *keys (NestedKey): the keys to leave out.

        Keyword Args:
            inplace (bool, optional): delete the keys from this tensordict. Defaults to False.

        Returns:
            A new tensordict (sub-tensordicts on an excluded key's path are copied), or this one.

        Raises:
            RuntimeError: if ``inplace``, the tensordict is locked and a key exists (LockedError).
            TypeError: if a key is not a string or a tuple of strings.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.exclude(("b", "c"))["b"].sorted_keys, td["b"].sorted_keys
            ([], ['c'])
        """
        out = self if inplace else self._shallow_copy()
        for key in keys:
            parts = _key_parts(key)
            try:
                parent = (
                    out._walk_to_parent_copying(parts)
                    if not inplace
                    else out._walk_to_parent(parts, False)
                )
            except KeyError:
                continue
            if parent._get_str(parts[-1], None) is not None:
                parent._del_str(parts[-1])
        return out

    def _shallow_copy(self):
        """A new tensordict sharing every entry of this one (classes override it to keep theirs)."""
        return self._new_like(dict(self._items_level()), self.batch_size)

    def _walk_to_parent_copying(self, parts: tuple):
        """Like ``_walk_to_parent`` but replaces each sub-tensordict on the path by a shallow copy."""
        level = self
        for part in parts[:-1]:
            sub = level._get_str(part, None)
            if not isinstance(sub, TensorDictBase):
                raise KeyError(part)
            copy = sub._shallow_copy()
            level._set_str(part, copy, inplace=False, validated=True)
            level = copy
        return level

    def flatten_keys(self, separator: str = ".", inplace: bool = False) -> TensorDictBase:
        """Returns a tensordict whose nested keys are joined by ``separator`` into flat keys.

        Args:
            separator (str, optional): joins the parts of a key. Defaults to ``"."``.
            inplace (bool, optional): replace the entries of this tensordict. Defaults to False.

        Returns:
            A tensordict of the leaves and non-tensor entries (empty sub-tensordicts are dropped).

        Raises:
            KeyError: if two entries get the same flat key.
            RuntimeError: if ``inplace`` and the tensordict is locked (LockedError).

        Examples:
            >>> TensorDict({"a": {"b": torch.zeros(2)}, "c": torch.zeros(2)}, [2]).flatten_keys("/")
            TensorDict(batch_size=[2], fields={a/b: f32[], c: f32[]})
        """
        source = {}
        for key in self.keys(True, True, is_leaf=_is_leaf_nontensor):
            name = key if isinstance(key, str) else separator.join(key)
            if name in source:
                msg = (
                    f"flattening keys with separator {separator!r} makes two entries named {name!r}"
                )
                raise KeyError(msg)
            source[name] = self.get(key, NO_DEFAULT)
        out = self._new_like(source, self.batch_size)
        if inplace:
            for key in list(self._keys_level()):
                self._del_str(key)
            for key, value in source.items():
                self._set_str(key, value, inplace=False, validated=True)
            return self
        return out

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> TensorDictBase:
        """Returns a tensordict whose keys are split at ``separator`` into nested keys (all levels).

        Args:
            separator (str, optional): the string to split at. Defaults to ``"."``.
            inplace (bool, optional): replace the entries of this tensordict. Defaults to False.

        Returns:
            A tensordict where keys sharing a first part share one sub-tensordict.

        Raises:
            KeyError: if two entries get the same key, or one falls under a non-tensordict entry.
            RuntimeError: if ``inplace`` and the tensordict is locked (LockedError).

        Examples:
            >>> TensorDict({"a.b": torch.zeros(2), "a.c": torch.zeros(2)}, [2]).unflatten_keys()
            TensorDict(batch_size=[2], fields={a: {b: f32[], c: f32[]}})
        """
        out = self._new_like({}, self.batch_size)
        for key, value in self._items_level():
            parts = tuple(key.split(separator)) if separator in key else (key,)
            if isinstance(value, TensorDictBase):
                value = value.unflatten_keys(separator)
            if out.get(parts, None) is not None:
                msg = f"unflattening {key!r} with separator {separator!r} collides with another entry at {parts!r}"
                raise KeyError(msg)
            out.set(parts, value)
        if inplace:
            for key in list(self._keys_level()):
                self._del_str(key)
            for key, value in out._items_level():
                self._set_str(key, value, inplace=False, validated=True)
            return self
        return out

    # ------------------------------------------------------------------ locking
    def lock_(self) -> TensorDictBase:
        """Locks the tensordict and its sub-tensordicts against new keys, deletions and rebinding.

        In-place writes (``set_``, ``update_``, index assignment) still work.

        Used as a context manager, ``with td.lock_():`` puts the previous state back when
        the block ends.

        Returns:
            The tensordict itself.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).lock_().set_("a", 1.0).is_locked
            True
            >>> td = TensorDict()
            >>> with td.lock_():
            ...     print(td.is_locked)
            True
            >>> td.is_locked
            False
        """
        self._note_lock_state()
        self._propagate_lock(True)
        return self

    def _note_lock_state(self) -> None:
        # The state before a lock_()/unlock_() call, for a with-block that may follow. A call
        # that no block entered is replaced by the next, so the list holds one entry per
        # open block and at most one more.
        blocks = getattr(self, "_lock_blocks", None)
        if blocks is None:
            blocks = self._lock_blocks = []
        entry = [self.is_locked, False]
        if blocks and not blocks[-1][1]:
            blocks[-1] = entry
        else:
            blocks.append(entry)

    def __enter__(self) -> TensorDictBase:
        if getattr(self, "_exit_action", None) is not None:
            return self  # what to_module() returned: the block ends by putting it back
        blocks = getattr(self, "_lock_blocks", None)
        if not blocks or blocks[-1][1]:
            msg = "a tensordict is a context manager only as 'with td.lock_():', 'with td.unlock_():' or 'with td.to_module(module):'"
            raise RuntimeError(msg)
        blocks[-1][1] = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        action = getattr(self, "_exit_action", None)
        if action is not None:
            self._exit_action = None
            action()
            return
        was_locked, _ = self._lock_blocks.pop()
        if was_locked != self.is_locked:
            if not was_locked and getattr(self, "_lock_parents", 0):
                msg = "cannot unlock a sub-tensordict while its parent is locked; unlock the parent instead"
                raise LockedError(msg)
            self._propagate_lock(was_locked)

    def unlock_(self) -> TensorDictBase:
        """Unlocks the tensordict and its sub-tensordicts.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: for a TensorDict whose parent tensordict is locked (LockedError).

        Examples:
            >>> TensorDict({}, []).lock_().unlock_().is_locked
            False
        """
        self._note_lock_state()
        self._propagate_lock(False)
        return self

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _check_unlocked(self, key: str, action: str) -> None:
        if self.is_locked:
            msg = (
                f"cannot {action} {key!r}: the tensordict is locked. Call unlock_() first, or use "
                "set_() / index assignment to write into an existing entry in place"
            )
            raise LockedError(msg)

    # ------------------------------------------------------------------ misc
    def __bool__(self) -> bool:
        msg = (
            "the truth value of a tensordict is ambiguous: use td.all(), td.any() or td.is_empty()"
        )
        raise RuntimeError(msg)

    def __hash__(self) -> int:
        return id(self)

    def __copy__(self):
        return self._shallow_copy()

    def __deepcopy__(self, memo):
        return self.clone()

    def is_floating_point(self) -> bool:
        """Returns True when every leaf tensor has a floating-point dtype.

        Returns:
            True or False (True without leaves).

        Examples:
            >>> TensorDict({"a": torch.zeros(2), "b": torch.arange(2)}, [2]).is_floating_point()
            False
        """
        return all(v.is_floating_point() for v in self.values(True, True))

    def bytes(self, *, count_duplicates: bool = True) -> int:
        """Returns the number of bytes of the leaf tensors' elements, nested ones included.

        Each leaf counts ``numel() * element_size()``, whatever memory it shares (an
        expanded leaf counts every element). A jagged nested tensor counts its values
        and its offsets; a strided nested tensor the elements of its components.
        Non-tensor entries count nothing.

        Keyword Args:
            count_duplicates (bool, optional): count a tensor stored under several keys
                once per key. False counts each tensor object once. Defaults to True.

        Returns:
            The number of bytes, an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3, dtype=torch.int8)}}, [3])
            >>> td["d"] = td["a"]
            >>> td.bytes(), td.bytes(count_duplicates=False)
            (51, 27)
        """
        total = 0
        seen: set = set()
        for _, value in tensor_leaves(self):
            if not count_duplicates:
                if id(value) in seen:
                    continue
                seen.add(id(value))
            total += _leaf_bytes(value)
        return total

    @property
    def is_cuda(self) -> bool:
        """True when the tensordict's device is a CUDA device (False without a device).

        Examples:
            >>> TensorDict({}, [], device="cpu").is_cuda
            False
        """
        return self.device is not None and self.device.type == "cuda"


def _leaf_bytes(value: torch.Tensor) -> int:
    if value.is_nested:
        if value.layout is torch.jagged:
            parts = [value.values(), value.offsets()]
        else:
            parts = value.unbind(0)
        return sum(p.numel() * p.element_size() for p in parts)
    return value.numel() * value.element_size()


def _all_str(key: tuple) -> bool:
    for part in key:
        if type(part) is str:
            continue
        if isinstance(part, tuple) and _all_str(part):
            continue
        return False
    return True


def _source_items(source) -> Iterator:
    if isinstance(source, TensorDictBase):
        return iter(list(source._items_level()))
    if getattr(type(source), "_is_tensorclass", False):
        return iter(list(source._tensordict._items_level()))
    if isinstance(source, Mapping):
        return iter(source.items())
    msg = f"expected a dict or a tensordict, got {type(source).__name__}"
    raise InvalidSourceError(msg)


def _as_value(key, value, device):
    """Converts a user value into what a tensordict stores (tensor, collection or NonTensorData)."""
    if (
        isinstance(value, (torch.Tensor, TensorDictBase))
        or is_non_tensor(value)
        or getattr(type(value), "_is_tensorclass", False)
    ):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return NonTensorData(value)  # strings or objects: no tensor holds them
        return torch.as_tensor(value, device=device)
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return torch.as_tensor(value, device=device)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, torch.Tensor) for v in value)
    ):
        return torch.stack(list(value))
    if type(value) is list or (type(value) is tuple and not list_to_stack()):
        if value and all(
            is_tensor_collection(v) and not is_non_tensor(v) for v in value
        ):  # tensordicts or tensorclasses: stacked, as tensors are
            return torch.stack(list(value))
        return entry_from_list(list(value), list_to_stack())
    if type(value) is tuple:
        return entry_from_list(list(value), False)
    return NonTensorData(value)


def _read_value(value):
    """What ``td[key]`` gives for a non-tensor entry: its value, or a stack's linked list."""
    if isinstance(value, NonTensorDataBase):
        return value.data
    return value._read_value()


def _check_batch(key, value, batch_size: torch.Size) -> None:
    if is_unbatched(value):
        return  # it has no batch dimensions to check
    n = len(batch_size)
    shape = shape_of(value)
    if shape[:n] != batch_size:
        msg = (
            f"batch dimension mismatch for key {key!r}: the tensordict has batch_size="
            f"{list(batch_size)} but the value has shape {list(shape)}; the leading dimensions "
            "of a value must equal the batch size"
        )
        raise BatchSizeError(msg)


__all__ = [
    "KEY_SEPARATOR",
    "NO_DEFAULT",
    "MemoryMappedTensor",
    "NestedKey",
    "TensorCollection",
    "TensorDictBase",
    "capture_non_tensor_stack",
    "expand_as_right",
    "get_defaults_to_none",
    "is_tensor_collection",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "unravel_key",
    "unravel_key_list",
]
