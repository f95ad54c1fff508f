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
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import torch

from tensordict._collection import NO_DEFAULT, is_leaf_class, is_tensor_collection
from tensordict._keys import NestedKey, _key_parts, unravel_key
from tensordict._nontensor import NonTensorData
from tensordict._ops.memmap import MemmapMixin
from tensordict._ops.pointwise import PointwiseMixin
from tensordict._ops.shape import ShapeMixin
from tensordict._ops.torch_function import dispatch
from tensordict.errors import (
    BatchSizeError,
    InvalidSourceError,
    LockedError,
    MissingKeyError,
    PathThroughLeafError,
)


def _is_leaf_nontensor(cls: type) -> bool:
    return issubclass(cls, NonTensorData) or is_leaf_class(cls)


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
        is_leaf = self._is_leaf or is_leaf_class
        for key, value in td._items_level():
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
            return (self._is_leaf or is_leaf_class)(type(value))
        return True

    def __eq__(self, other) -> bool:
        return set(self) == set(other)

    def __repr__(self) -> str:
        return f"_KeysView({list(self)})"


class TensorDictBase(ShapeMixin, PointwiseMixin, MemmapMixin, abc.ABC):
    """The abstract base of every tensordict class.

    A tensordict maps string keys to tensors or to other tensordicts. Every entry
    shares the leading *batch* dimensions (``batch_size``), so that the whole
    tree can be indexed, reshaped, stacked, moved and saved like one tensor.
    """

    __slots__ = ()
    _is_tensor_collection = True
    _is_tensorclass = False
    _is_lazy = False

    # ------------------------------------------------------------------ primitives
    @property
    @abc.abstractmethod
    def batch_size(self) -> torch.Size:
        """The shared leading dimensions of every entry (settable)."""

    @property
    @abc.abstractmethod
    def device(self) -> torch.device | None:
        """The device of every tensor in the tensordict, or ``None`` when they may differ."""

    @property
    @abc.abstractmethod
    def names(self) -> list | None:
        """The names of the batch dimensions, or ``None``."""

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
        """True when the tensordict refuses new keys, deletions and rebinding."""

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
    def _batch_op_multi(self, op, batch_sizes: list) -> tuple:
        """Like :meth:`_batch_op` for an ``op`` that returns one piece per batch size (split, unbind)."""

    # ------------------------------------------------------------------ memmap hooks
    # The storage layer works through these (see tensordict.memmap._io for the protocol).
    _mm = None  # the tensordict's memmap state (a tensordict.memmap._io.Level), or None

    @abc.abstractmethod
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        """Adds what writing this tensordict into ``folder`` needs to ``plan``; checks keys first."""

    @abc.abstractmethod
    def _memmap_names(self, robust_key) -> set:
        """The names this tensordict occupies in its folder."""

    @abc.abstractmethod
    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        """This tensordict with every tensor replaced by ``replacement[id(tensor)]``, its state set."""

    @abc.abstractmethod
    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        """Writes the ``meta.json`` files of this tensordict's levels, children first."""

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
        """The batch size (same as :attr:`batch_size`)."""
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    def ndimension(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    def dim(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    def size(self, dim: int | None = None):
        """The batch size, or its size along ``dim``."""
        return self.batch_size if dim is None else self.batch_size[dim]

    def numel(self) -> int:
        """The number of elements in the batch (the product of the batch size)."""
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
        """Returns a live view of the keys.

        Args:
            include_nested (bool, optional): if True, the keys of sub-tensordicts are
                listed too, as tuples. Defaults to False.
            leaves_only (bool, optional): if True, only keys of leaves (not of
                sub-tensordicts) are listed. Defaults to False.
            is_leaf (callable, optional): tells from a value's class whether it is a leaf.

        Keyword Args:
            sort (bool, optional): list the keys in sorted order. Defaults to False.

        Returns:
            A view that iterates, counts, and answers ``in`` (nested tuples included).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> list(td.keys(include_nested=True, leaves_only=True))
            ['a', ('b', 'c')]
        """
        return _KeysView(self, include_nested, leaves_only, is_leaf, sort)

    @property
    def sorted_keys(self) -> list:
        """The keys of this level, sorted."""
        return sorted(self._keys_level())

    def values(
        self, include_nested: bool = False, leaves_only: bool = False, is_leaf=None, *, sort=False
    ) -> Iterator:
        """Iterates over the values, in the order of :meth:`keys` with the same arguments."""
        for key in self.keys(include_nested, leaves_only, is_leaf, sort=sort):
            yield self.get(key, NO_DEFAULT)

    def items(
        self, include_nested: bool = False, leaves_only: bool = False, is_leaf=None, *, sort=False
    ) -> Iterator:
        """Iterates over ``(key, value)`` pairs, in the order of :meth:`keys` with the same arguments."""
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
        """True when the tensordict holds no leaf (sub-tensordicts without leaves count as empty)."""
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

    def get(self, key: NestedKey, default=None):
        """Returns the value stored at ``key``, or ``default`` (None) when it is missing, like ``dict.get``.

        ``td[key]`` raises ``KeyError`` for a missing key instead.

        Args:
            key (NestedKey): a string or a tuple of strings for a nested entry.
            default: returned when the key is missing. Defaults to ``None``; pass
                ``NO_DEFAULT`` to raise ``KeyError`` instead.

        Returns:
            A tensor, a sub-tensordict, or a :class:`NonTensorData` entry.

        Raises:
            KeyError: if the key is missing and ``default`` is ``NO_DEFAULT``; the message
                names the full key and the keys of the level where the search stopped.
            ValueError: if the nested key goes through an entry that is not a tensordict
                (and no default is given).
            TypeError: if the key is not a string or a tuple of strings.

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(3)}}, [3])
            >>> td.get(("a", "b")).shape
            torch.Size([3])
            >>> td.get("missing", None) is None
            True
        """
        if type(key) is str:
            value = self._get_str(key, None)
            if value is not None:
                return value
            if default is not NO_DEFAULT:
                return default
            raise self._missing((key,), 0, self)
        parts = _key_parts(key)
        level = self
        last = len(parts) - 1
        for depth, part in enumerate(parts):
            if getattr(type(level), "_is_tensorclass", False):
                level = level._tensordict
            elif not hasattr(level, "_get_str") or isinstance(level, NonTensorData):
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
            return value.data if type(value) is NonTensorData else value
        if type(index) is tuple and index and _all_str(index):
            value = self.get(index, NO_DEFAULT)
            return value.data if type(value) is NonTensorData else value
        return self._index(index)

    def get_non_tensor(self, key: NestedKey, default=None):
        """Returns the Python value of a non-tensor entry (the entry itself if it is a tensor)."""
        value = self.get(key, default)
        return value.data if isinstance(value, NonTensorData) else value

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
                nxt = level._new_like({}, level.batch_size)
                level._set_str(part, nxt, inplace=False, validated=True)
            elif not is_tensor_collection(nxt) or isinstance(nxt, NonTensorData):
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

        Args:
            key (NestedKey): a string, or a tuple of strings; missing sub-tensordicts
                of a tuple key are created.
            item: a tensor (its leading dims must equal the batch size), a tensordict,
                a dict (becomes a sub-tensordict), a number or array (becomes a tensor),
                or any other value (becomes a :class:`NonTensorData` entry).
            inplace (bool, optional): if True and the key exists, copy into the
                existing tensor instead of rebinding it. Defaults to False.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the value's leading dims do not match the batch size
                (naming the key and both shapes), or if the tensordict is locked and
                the call would add or rebind a key.
            TypeError: if the key is not a string or a tuple of strings.

        Examples:
            >>> td = TensorDict({}, [2])
            >>> td.set(("a", "b"), torch.zeros(2, 3))["a", "b"].shape
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
        """Copies ``item`` into the existing entry at ``key`` (works on a locked tensordict).

        Raises:
            KeyError: if the key does not exist.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2]).lock_()
            >>> td.set_("a", torch.ones(2))["a"]
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
        """Returns the value at ``key``, storing ``default`` there first if the key is missing."""
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
        """Writes every entry of a dict or tensordict into this one, merging sub-tensordicts.

        Args:
            input_dict_or_td: a mapping or a tensordict.
            clone (bool, optional): clone tensors before storing them. Defaults to False.
            inplace (bool, optional): copy into existing tensors. Defaults to False.

        Keyword Args:
            keys_to_update (sequence of NestedKey, optional): only these keys are written.

        Returns:
            The tensordict itself.

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
            if isinstance(value, (Mapping, TensorDictBase)) and not isinstance(
                value, NonTensorData
            ):
                if current is not None and isinstance(current, TensorDictBase):
                    self._update(value, parts, clone, inplace, wanted)
                    continue
            if clone and isinstance(value, (torch.Tensor, TensorDictBase)):
                value = value.clone()
            target_parent._set_str(
                parts[-1], value, inplace=inplace and current is not None, validated=False
            )

    def set_at_(self, key: NestedKey, value, index) -> TensorDictBase:
        """Writes ``value`` into the rows ``index`` of the existing entry at ``key``; returns the tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3]).set_at_("a", 1.0, 1)
            >>> td["a"]
            tensor([0., 1., 0.])
        """
        self.get(key, NO_DEFAULT)[index] = value
        return self

    def update_at_(self, input_dict_or_td, index, clone: bool = False) -> TensorDictBase:
        """Writes each entry of ``input_dict_or_td`` into the rows ``index`` of the existing entries.

        Raises:
            KeyError: if an entry does not exist in this tensordict.
        """
        for key, value in _source_items(input_dict_or_td):
            if isinstance(value, (Mapping, TensorDictBase)) and not isinstance(
                value, NonTensorData
            ):
                self.get(key, NO_DEFAULT).update_at_(value, index, clone)
            else:
                self.set_at_(key, value.clone() if clone else value, index)
        return self

    def update_(self, input_dict_or_td, clone: bool = False, *, keys_to_update=None, **kwargs):
        """Copies every entry of a dict or tensordict into the existing entries (in place).

        Raises:
            KeyError: if an entry does not exist in this tensordict.
        """
        for key, value in _source_items(input_dict_or_td):
            parts = _key_parts(key)
            if keys_to_update is not None and unravel_key(parts) not in {
                unravel_key(k) for k in keys_to_update
            }:
                if not isinstance(value, (Mapping, TensorDictBase)):
                    continue
            if isinstance(value, (Mapping, TensorDictBase)) and not isinstance(
                value, NonTensorData
            ):
                sub = self.get(parts, NO_DEFAULT)
                sub.update_(value, clone=clone)
                continue
            self.set_(parts, value.clone() if clone else value)
        return self

    def pop(self, key: NestedKey, default=NO_DEFAULT):
        """Removes the entry at ``key`` and returns it (or ``default`` if given and missing).

        Raises:
            KeyError: if the key is missing and no default is given.
            RuntimeError: if the tensordict is locked.
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

        Raises:
            KeyError: if the key is missing.
            RuntimeError: if the tensordict is locked.
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
        """Moves the entry at ``old_key`` to ``new_key`` and returns the tensordict.

        Args:
            old_key (NestedKey): the existing key.
            new_key (NestedKey): the new key.
            safe (bool, optional): if True, refuse to overwrite an existing ``new_key``.

        Raises:
            KeyError: if ``old_key`` is missing, or ``safe`` and ``new_key`` exists.
            RuntimeError: if the tensordict is locked.
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
        """Returns a tensordict with only the given keys (sharing their tensors).

        Args:
            *keys (NestedKey): the keys to keep.

        Keyword Args:
            inplace (bool, optional): remove the other keys from this tensordict instead.
            strict (bool, optional): if True, a missing key raises ``KeyError``.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2), "d": torch.zeros(2)}}, [2])
            >>> td.select("a", ("b", "c")).keys(True, True) == ["a", ("b", "c")]
            True
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
        """Returns a tensordict without the given keys (sharing the other tensors).

        Missing keys are ignored.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2)}, [2])
            >>> td.exclude("a").sorted_keys
            ['b']
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

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(2)}}, [2])
            >>> td.flatten_keys().sorted_keys
            ['a.b']
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
        """Returns a tensordict whose keys containing ``separator`` are split into nested keys.

        Examples:
            >>> td = TensorDict({"a.b": torch.zeros(2)}, [2])
            >>> td.unflatten_keys().get(("a", "b")).shape
            torch.Size([2])
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

    # ------------------------------------------------------------------ apply
    def apply(
        self,
        fn: Callable,
        *others: TensorDictBase,
        batch_size=None,
        device=NO_DEFAULT,
        names=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        filter_empty: bool | None = None,
        call_on_nested: bool = False,
        **constructor_kwargs,
    ) -> TensorDictBase | None:
        """Applies ``fn`` to every leaf tensor and returns a new tensordict of the results.

        Args:
            fn (callable): called as ``fn(leaf, *other_leaves)``; returning ``None``
                drops the entry.
            *others (TensorDictBase): tensordicts whose leaves at the same keys are
                passed to ``fn`` too.

        Keyword Args:
            batch_size (sequence of int, optional): the batch size of the result, when
                ``fn`` changes the batch dimensions.
            names (list of str, optional): the batch dimension names of the result.
            device (torch.device, optional): the device of the result.
            inplace (bool, optional): store the results in this tensordict. Defaults to False.
            default: the value passed for a key missing in one of ``others``; without
                it a missing key raises ``KeyError``.
            call_on_nested (bool, optional): call ``fn`` on sub-tensordicts instead of
                recursing into them.

        Returns:
            The new tensordict (or this one when ``inplace``).

        Examples:
            >>> td = TensorDict({"a": torch.ones(2), "b": {"c": torch.ones(2)}}, [2])
            >>> (td.apply(lambda x: x * 3)["b", "c"] == 3).all()
            tensor(True)
        """
        out = self._fast_apply(
            fn,
            *others,
            batch_size=None if batch_size is None else torch.Size(batch_size),
            names=names,
            device=device,
            inplace=inplace,
            default=default,
            call_on_nested=call_on_nested,
        )
        if (
            not inplace
            and filter_empty is not False
            and not out._keys_level()
            and self._keys_level()
        ):
            return None  # fn returned None for every leaf
        return out

    def apply_(self, fn: Callable, *others, **kwargs) -> TensorDictBase:
        """Applies ``fn`` to every leaf and stores the results in this tensordict (returns it)."""
        return self.apply(fn, *others, inplace=True, **kwargs)

    def named_apply(
        self,
        fn: Callable,
        *others,
        nested_keys: bool = False,
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        call_on_nested: bool = False,
        **kwargs,
    ) -> TensorDictBase | None:
        """Like :meth:`apply`, with ``fn`` called as ``fn(key, leaf, *other_leaves)``.

        Keyword Args:
            nested_keys (bool, optional): pass the full nested key (a tuple) instead of
                the key at the leaf's level. Defaults to False.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> seen = []
            >>> _ = td.named_apply(lambda k, x: seen.append(k), nested_keys=True)
            >>> seen
            ['a', ('b', 'c')]
        """
        return self._fast_apply(
            fn,
            *others,
            named=True,
            nested_keys=nested_keys,
            batch_size=None if batch_size is None else torch.Size(batch_size),
            names=names,
            device=device,
            inplace=inplace,
            default=default,
            call_on_nested=call_on_nested,
        )

    def _fast_apply(
        self,
        fn,
        *others,
        named: bool = False,
        nested_keys: bool = False,
        prefix: tuple = (),
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        call_on_nested: bool = False,
        checked: bool = False,
    ):
        """The engine of :meth:`apply` and :meth:`named_apply`, one level at a time (classes specialise it)."""
        out: dict = {}
        for key, value in list(self._items_level()):
            other_values = []
            for other in others:
                ov = other._get_str(key, None) if other is not None else None
                if ov is None:
                    if default is NO_DEFAULT:
                        msg = f"key {prefix + (key,) if prefix else key!r} is missing in one of the other tensordicts passed to apply"
                        raise KeyError(msg)
                    ov = default
                other_values.append(ov)
            full = prefix + (key,)
            if is_tensor_collection(value) and not (
                call_on_nested and not isinstance(value, NonTensorData)
            ):
                if isinstance(value, NonTensorData):
                    res = (
                        value
                        if batch_size is None
                        else value._with(batch_size + value.batch_size[self.batch_dims :])
                    )
                else:
                    sub_bs = (
                        None
                        if batch_size is None
                        else batch_size + value.batch_size[self.batch_dims :]
                    )
                    res = value._fast_apply(
                        fn,
                        *other_values,
                        named=named,
                        nested_keys=nested_keys,
                        prefix=full,
                        batch_size=sub_bs,
                        names=NO_DEFAULT,
                        device=device,
                        inplace=inplace,
                        default=default,
                        checked=checked,
                    )
            elif named:
                name = (full if len(full) > 1 else key) if nested_keys else key
                res = fn(name, value, *other_values)
            else:
                res = fn(value, *other_values)
            if inplace:
                if res is not None and res is not value:
                    if isinstance(value, torch.Tensor) and isinstance(res, torch.Tensor):
                        value.copy_(res)
                    else:
                        self._set_str(key, res, inplace=False, validated=True)
                continue
            if res is not None:
                out[key] = res
        if inplace:
            return self
        new_bs = self.batch_size if batch_size is None else batch_size
        if names is NO_DEFAULT:
            names = self.names if batch_size is None else None
        return self._new_like(
            out, new_bs, names=names, device=self.device if device is NO_DEFAULT else device
        )

    # ------------------------------------------------------------------ locking
    def lock_(self) -> TensorDictBase:
        """Locks the tensordict and its sub-tensordicts, and returns it.

        A locked tensordict refuses new keys, deletions and rebinding of an entry;
        in-place writes (``set_``, index assignment, ``update_``) still work.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2]).lock_()
            >>> td.is_locked
            True
        """
        self._propagate_lock(True)
        return self

    def unlock_(self) -> TensorDictBase:
        """Unlocks the tensordict and its sub-tensordicts, and returns it."""
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

    # ------------------------------------------------------------------ conversions
    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> dict:
        """Returns a nested ``dict`` of the entries (tensors are shared, not copied).

        Keyword Args:
            convert_tensors (bool, optional): return Python lists instead of tensors.
        """
        out = {}
        for key, value in self._items_level():
            if isinstance(value, TensorDictBase):
                out[key] = value.to_dict(convert_tensors=convert_tensors)
            elif getattr(type(value), "_is_tensorclass", False):
                out[key] = value.to_dict(convert_tensors=convert_tensors)
            elif isinstance(value, NonTensorData):
                out[key] = value.data
            else:
                out[key] = value.tolist() if convert_tensors else value
        return out

    def numpy(self) -> dict:
        """Returns a nested ``dict`` of numpy arrays (sharing memory on the CPU)."""
        out = {}
        for key, value in self._items_level():
            if isinstance(value, TensorDictBase):
                out[key] = value.numpy()
            elif isinstance(value, NonTensorData):
                out[key] = value.data
            else:
                out[key] = value.detach().cpu().numpy()
        return out

    def tolist(self, *, convert_tensors: bool = False) -> list | dict:
        """Returns nested lists (one level per batch dim) of dicts of the entries.

        Keyword Args:
            convert_tensors (bool, optional): turn tensors into Python values too.
        """
        if not self.batch_size:
            return self.to_dict(convert_tensors=convert_tensors)
        return [self[i].tolist(convert_tensors=convert_tensors) for i in range(self.batch_size[0])]

    def state_dict(
        self, destination=None, prefix: str = "", keep_vars: bool = False, flatten: bool = True
    ) -> dict:
        """Returns an ordered dict of the leaf tensors with ``"."``-joined keys, like ``nn.Module.state_dict``.

        Examples:
            >>> list(TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2]).state_dict())
            ['a', 'b.c']
        """
        out = OrderedDict() if destination is None else destination
        for key in self.keys(True, True):
            value = self.get(key, NO_DEFAULT)
            if isinstance(value, torch.Tensor):
                name = key if isinstance(key, str) else ".".join(key)
                out[prefix + name] = value if keep_vars else value.detach()
        return out

    def load_state_dict(
        self, state_dict: dict, strict: bool = True, assign: bool = False, from_flatten: bool = True
    ):
        """Copies the tensors of a :meth:`state_dict` into this tensordict, and returns it.

        Keys joined by ``"."`` address nested entries. Existing tensors are written in
        place (``assign=True`` rebinds them instead); missing ones are added.

        Raises:
            RuntimeError: with ``strict``, if a leaf of this tensordict is not in the state dict.
        """
        wanted = {}
        for key, value in state_dict.items():
            if key.startswith("__"):
                continue
            parts = tuple(key.split(".")) if from_flatten else (key,)
            wanted[parts[0] if len(parts) == 1 else parts] = value
        if strict:
            mine = {k if isinstance(k, tuple) else (k,) for k in self.keys(True, True)}
            theirs = {k if isinstance(k, tuple) else (k,) for k in wanted}
            missing = sorted(mine - theirs)
            if missing:
                msg = f"the state dict lacks the entries {missing} of the tensordict"
                raise RuntimeError(msg)
        for key, value in wanted.items():
            current = self.get(key, None)
            if isinstance(current, torch.Tensor) and not assign:
                current.copy_(value)
            else:
                self.set(key, value)
        return self

    # ------------------------------------------------------------------ printing
    def _fields_repr(self) -> str:
        parts = []
        for key, value in self._items_level():
            if isinstance(value, NonTensorData):
                parts.append(f"{key}: {type(value.data).__name__}")
            elif isinstance(value, TensorDictBase) or getattr(
                type(value), "_is_tensorclass", False
            ):
                inner = (
                    value._fields_repr()
                    if isinstance(value, TensorDictBase)
                    else value._tensordict._fields_repr()
                )
                extra = list(value.batch_size[self.batch_dims :])
                dims = f"{extra} " if extra else ""
                parts.append(f"{key}: {dims}{inner}")
            else:
                feature = ",".join(str(s) for s in _shape_of(value)[self.batch_dims :])
                parts.append(f"{key}: {_dtype_short(value.dtype)}[{feature}]")
        return "{" + ", ".join(parts) + "}"

    def __repr__(self) -> str:
        extra = ""
        if self.device is not None:
            extra += f", device={self.device}"
        if self.names is not None and any(n is not None for n in self.names):
            extra += f", names={self.names}"
        size = ",".join(str(s) for s in self.batch_size)
        return f"{type(self).__name__}(batch_size=[{size}]{extra}, fields={self._fields_repr()})"

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
        """True when every leaf tensor has a floating-point dtype."""
        return all(v.is_floating_point() for v in self.values(True, True))

    @property
    def requires_grad(self) -> bool:
        """True when any leaf requires a gradient."""
        return any(v.requires_grad for v in self.values(True, True) if isinstance(v, torch.Tensor))

    def requires_grad_(self, requires_grad: bool = True) -> TensorDictBase:
        """Sets ``requires_grad`` on every floating-point leaf and returns the tensordict."""
        for value in self.values(True, True):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                value.requires_grad_(requires_grad)
        return self

    @property
    def is_cuda(self) -> bool:
        """True when the tensordict's device is a CUDA device."""
        return self.device is not None and self.device.type == "cuda"


_DTYPE_SHORT = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "bool",
    torch.complex64: "c64",
    torch.complex128: "c128",
}


def _dtype_short(dtype: torch.dtype) -> str:
    return _DTYPE_SHORT.get(dtype, str(dtype).replace("torch.", ""))


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
    if isinstance(value, (torch.Tensor, TensorDictBase, NonTensorData)) or getattr(
        type(value), "_is_tensorclass", False
    ):
        return value
    if isinstance(value, np.ndarray):
        return torch.as_tensor(value, device=device)
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return torch.as_tensor(value, device=device)
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, torch.Tensor) for v in value)
    ):
        return torch.stack(list(value))
    return NonTensorData(value)


def _shape_of(value) -> torch.Size:
    """The shape of a tensor (a nested tensor's ragged dims read -1) or a collection's batch size."""
    if not isinstance(value, torch.Tensor):
        return value.batch_size
    if value.is_nested:
        sizes = value._nested_tensor_size()
        inner = (
            [int(col[0]) if bool((col == col[0]).all()) else -1 for col in sizes.unbind(1)]
            if sizes.numel()
            else []
        )
        return torch.Size([value.size(0), *inner])
    return value.shape


def _check_batch(key, value, batch_size: torch.Size) -> None:
    n = len(batch_size)
    shape = _shape_of(value)
    if shape[:n] != batch_size:
        msg = (
            f"batch dimension mismatch for key {key!r}: the tensordict has batch_size="
            f"{list(batch_size)} but the value has shape {list(shape)}; the leading dimensions "
            "of a value must equal the batch size"
        )
        raise BatchSizeError(msg)


__all__ = [
    "NO_DEFAULT",
    "TensorDictBase",
    "is_tensor_collection",
]
