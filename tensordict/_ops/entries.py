"""Reading, writing and removing entries: get, set, update, pop and del, in place and by rows.

Each method walks a nested key down the tree of tensordicts and reads, stores or
removes at the last level with the primitives ``_get_str``, ``_set_str`` and
``_del_str``. Key views and key algebra (``keys``, ``select``, ``rename_keys``,
...) are :mod:`tensordict._ops.keys`.

The classes share the value helpers below: their ``_set_str`` and constructors
turn a user value into a stored one with ``_as_value`` and check it with
``_check_batch``; ``_source_items`` reads a mapping or a tensordict;
``plain_tree`` serves every ``to_tensordict``. ``UpdateOptions`` carries what one
:meth:`update` asks down the ``_update`` hook, which a lazy stack overrides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_non_tensor,
    is_plain_mapping,
    is_tensor_collection,
)
from tensordict._helpers import shape_of
from tensordict._keys import NestedKey, _key_parts, canonical_key
from tensordict._nested_tensors import read_as
from tensordict._nontensor import NonTensorData, NonTensorDataBase, entry_from_list
from tensordict._ops._contract import Contract
from tensordict._ops.keys import inner_tensordict, is_subtree, is_tensordict
from tensordict._options import GET_DEFAULT, list_to_stack, resolve_get_default
from tensordict._typing import DeviceType, IndexType, T
from tensordict._unbatched import is_unbatched
from tensordict.errors import (
    BatchSizeError,
    CopyAtError,
    InvalidSourceError,
    LockedError,
    MissingKeyError,
    PathThroughLeafError,
    ReplaceArgumentError,
    warn,
)


class UpdateOptions(NamedTuple):
    """What one :meth:`update` call asks of every level it writes, handed down unchanged."""

    clone: bool
    inplace: bool
    wanted: set | None  # keys_to_update as key tuples; None: every key
    adopt: bool  # update_batch_size: a sub-tensordict takes the source's batch size
    is_leaf: Callable[[type], bool] | None


def _keys_below(wanted, parts: tuple):
    """The keys of ``wanted`` under ``parts``, relative to it: None for all, () for none."""
    if wanted is None or any(parts[: len(w)] == w for w in wanted):
        return None
    return tuple(w[len(parts) :] for w in wanted if w[: len(parts)] == parts)


def _check_batch_update(td, source, update_batch_size: bool, inplace: bool, keys) -> None:
    """Refuses an update from a tensordict of another batch size that cannot be taken as asked."""
    mine, theirs = td.batch_size, source.batch_size
    if not update_batch_size:
        n = min(len(mine), len(theirs))
        if mine[:n] != theirs[:n]:
            msg = (
                f"cannot update a tensordict of batch size {list(mine)} from one of batch size "
                f"{list(theirs)}; pass update_batch_size=True to take the source's batch size"
            )
            raise BatchSizeError(msg)
        return
    if inplace or keys is not None:
        what = "inplace=True" if inplace else "keys_to_update"
        msg = f"update(update_batch_size=True) replaces every entry: it cannot take {what}"
        raise BatchSizeError(msg)
    if td.is_locked:
        msg = "update(update_batch_size=True) cannot change the batch size of a locked tensordict; unlock it first"
        raise LockedError(msg)


def _all_str(key: tuple) -> bool:
    for part in key:
        if type(part) is str:
            continue
        if isinstance(part, tuple) and _all_str(part):
            continue
        return False
    return True


def _read_value(value):
    """What ``td[key]`` gives for a non-tensor entry: its value, or a stack's linked list."""
    if isinstance(value, NonTensorDataBase):
        return value.data
    return value._read_value()


def _source_items(source) -> Iterator:
    """The ``(key, value)`` pairs of a mapping, a tensordict or a tensorclass instance."""
    inner = inner_tensordict(source)
    if is_tensordict(inner):
        return iter(list(inner._items_level()))
    if isinstance(source, Mapping):
        return iter(source.items())
    msg = f"expected a dict or a tensordict, got {type(source).__name__}"
    raise InvalidSourceError(msg)


def _as_value(key, value, device):
    """Converts a user value into what a tensordict stores (tensor, collection or NonTensorData)."""
    if isinstance(value, torch.Tensor) or is_tensor_collection(value):
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


def array_as_tensor(value: Any, device: DeviceType | None = None) -> Any:
    """A numeric numpy array as a tensor (``tensor[index] = value`` takes no array); else ``value``."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return torch.as_tensor(value, device=device)
    return value


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


def _index_has_tensor(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, torch.Tensor) or i is None or i is Ellipsis for i in items)


def _refusal_of(value) -> str | None:
    """Why ``value`` cannot be the source of the tensor-only ``copy_at_``, or None.

    A tensorclass instance and non-tensor data have no such hook and never refuse.
    """
    hook = getattr(value, "_fast_copy_at_refusal", None)
    return None if hook is None else hook()


def plain_tree(td: T, retain_none: bool | None) -> T:
    """Turns, in place, the tensorclasses, typed tensordicts and lazy stacks inside ``td`` into
    plain tensordicts (their ``to_tensordict``), and returns ``td``.

    ``to_tensordict`` of every class calls it on its fresh copy, so that the result holds plain
    tensordicts only, at every depth (with ``retain_none``, a tensorclass field set to ``None``
    becomes a ``None`` entry).
    """
    for key, value in list(td._items_level()):
        if not is_subtree(value):
            continue
        if type(value) is not type(td):
            value = value.to_tensordict(retain_none=retain_none)
            td._set_str(key, value, inplace=False, validated=True)
        else:
            plain_tree(value, retain_none)
    return td


class EntriesMixin(Contract):
    """Entry methods of :class:`~tensordict.TensorDictBase` (see the module docstring).

    Calls: ``_del_str``, ``_get_str``, ``_index``, ``_items_level``, ``_keys_level``,
        ``_new_like``, ``_read_value``, ``_set_at``, ``_set_str``, ``_shallow_copy``,
        ``_written_at``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ reading
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

    def get(
        self,
        key: NestedKey,
        default: Any = GET_DEFAULT,
        *,
        as_list: bool = False,
        as_padded_tensor: bool = False,
        as_nested_tensor: bool = False,
        layout: torch.layout | None = None,
        padding_side: str = "right",
        padding_value: float = 0.0,
    ) -> Any:
        """Returns the entry at ``key``, or ``default`` when the key is missing, like ``dict.get``.

        Unlike ``td[key]``, a missing key is no error and a non-tensor entry comes as NonTensorData.
        A lazy stack stacks its members' leaves, which raises when their shapes differ; the
        keyword arguments read such leaves another way. A dense tensordict's leaves are read
        as they are whatever they say.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: returned when the key is missing. Defaults to None (a KeyError after
                ``set_get_defaults_to_none(False)``); ``NO_DEFAULT`` raises.

        Keyword Args:
            as_list (bool, optional): a lazy stack gives its members' leaves as a list (a list
                of lists for a stack of lazy stacks). Defaults to False.
            as_padded_tensor (bool, optional): a lazy stack pads its members' leaves to the
                largest size of each dim (across every level of a stack of stacks) and stacks
                them along a new first dim. Defaults to False.
            as_nested_tensor (bool, optional): a lazy stack gives its members' leaves as one
                nested tensor. Defaults to False.
            layout (torch.layout, optional): the layout of that nested tensor. Defaults to
                ``None``: ``torch.jagged``.
            padding_side (str, optional): ``"right"`` or ``"left"``: where the padding goes.
                Defaults to ``"right"``.
            padding_value (number, optional): the value of the padding. Defaults to 0.0.

        Returns:
            A tensor, a sub-tensordict, a NonTensorData entry, or ``default``; a list, a padded
            tensor or a nested tensor when a keyword argument asks for one and a lazy stack
            answers.

        Raises:
            KeyError: if the key is missing and ``default`` is ``NO_DEFAULT`` (MissingKeyError,
                naming the keys where the search stopped), or if its path goes through an entry that
                is not a tensordict and ``default`` is None or ``NO_DEFAULT`` (PathThroughLeafError,
                also a ValueError).
            TypeError: if the key is not a string or a tuple of strings, or more than one of
                ``as_list``, ``as_padded_tensor`` and ``as_nested_tensor`` is set.
            ValueError: if the key is the empty tuple, or a stack of lazy stacks is read as one
                nested tensor.
            RuntimeError: if ``padding_side`` is neither ``"left"`` nor ``"right"``.

        Examples:
            >>> TensorDict({"a": {"b": torch.zeros(3)}}, [3]).get(("a", "b"))
            tensor([0., 0., 0.])
            >>> stack = lazy_stack([TensorDict(r=torch.ones(2)), TensorDict(r=torch.ones(3))])
            >>> [r.shape for r in stack.get("r", as_list=True)], stack.get("r", as_padded_tensor=True)
            ([torch.Size([2]), torch.Size([3])], tensor([[1., 1., 0.],
                    [1., 1., 1.]]))
        """
        how = (
            read_as(
                as_list, as_padded_tensor, as_nested_tensor, layout, padding_side, padding_value
            )
            if as_list or as_padded_tensor or as_nested_tensor
            else None
        )
        if type(key) is str:
            value = self._get_str(key, None) if how is None else self._read_str(key, how)
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
            level = inner_tensordict(level)
            if not hasattr(level, "_get_str") or is_non_tensor(level):
                if default is not NO_DEFAULT and default is not None:
                    return default
                msg = f"cannot get {parts!r}: the entry {parts[:depth]!r} is a {type(level).__name__}, not a tensordict"
                raise PathThroughLeafError(msg)
            if depth == last and how is not None:
                value = level._read_str(part, how)
            else:
                value = level._get_str(part, None)
            if value is None:
                if default is not NO_DEFAULT:
                    return default
                raise self._missing(parts, depth, level)
            if depth == last:
                return value
            level = value
        return level  # pragma: no cover - loop always returns

    def _read_str(self, key: str, how):
        """Hook of :meth:`get` with ``as_list``, ``as_padded_tensor`` or ``as_nested_tensor``.

        ``how`` is a :class:`tensordict._nested_tensors.ReadAs`; the entry at ``key`` is
        returned, or None when it is missing. A dense tensordict reads it as it is; a lazy
        stack combines its members' leaves as ``how`` says.
        """
        return self._get_str(key, None)

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

    def __getitems__(self, indices):
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

    def get_non_tensor(self, key: NestedKey, default: Any = None) -> Any:
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

    def get_at(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """Returns the entry at ``key`` indexed along the batch dims: ``td.get(key)[index]``.

        Args:
            key (NestedKey): the key to read.
            *args: the index (int, slice, torch.Tensor or tuple), then optionally the
                default.

        Keyword Args:
            index (int, slice, torch.Tensor or tuple): the index, when it is not given by
                position (``idx`` is another name for it).
            default (optional): returned when the key is missing. Defaults to None.

        Returns:
            The indexed entry, or ``default``.

        Raises:
            TypeError: if no index is given.
            IndexError: if the index is out of range.

        Examples:
            >>> td = TensorDict({"x": torch.arange(3)}, batch_size=[3])
            >>> td.get_at("x", 1), td.get_at("x", torch.tensor([True, False, True]))
            (tensor(1), tensor([0, 2]))
            >>> print(td.get_at("y", 1))
            None
        """
        args = list(args)
        if args:
            index = args.pop(0)
        elif "index" in kwargs or "idx" in kwargs:
            index = kwargs.pop("index", kwargs.pop("idx", None))
        else:
            msg = f"get_at({canonical_key(key)!r}) needs an index: get_at(key, index)"
            raise TypeError(msg)
        default = args.pop(0) if args else kwargs.pop("default", None)
        value = self.get(key, None)
        if value is None:
            return default
        return value[index]

    def entry_class(self, key: NestedKey) -> type:
        """Returns the class of the entry at ``key``: ``type(td.get(key))`` (``NoneType`` if missing).

        Args:
            key (NestedKey): the key of the entry.

        Returns:
            The class of the stored entry.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b=TensorDict(c=torch.zeros(3)))
            >>> td.entry_class("a")
            <class 'torch.Tensor'>
            >>> td.entry_class("b").__name__
            'TensorDict'
        """
        return self._entry_class(key)

    def _entry_class(self, key: NestedKey) -> type:
        """Hook of :meth:`entry_class`: the class of the entry at ``key``, read here from the entry.

        A lazy stack asks its members first, so that it need not stack the entry.
        """
        return type(self.get(key, None))

    def get_item_shape(self, key: NestedKey) -> torch.Size:
        """Returns the shape of the entry at ``key`` (the batch size for a nested tensordict).

        On a lazy stack, a dimension whose size differs between the members is ``-1``, and the
        entry is not stacked to find out.

        Args:
            key (NestedKey): the key of the entry.

        Returns:
            A ``torch.Size``.

        Raises:
            KeyError: if there is no entry at ``key``.

        Examples:
            >>> td = TensorDict(x=torch.zeros(3, 2), n={"y": torch.zeros(3)}, batch_size=[3])
            >>> td.get_item_shape("x"), td.get_item_shape("n")
            (torch.Size([3, 2]), torch.Size([3]))
        """
        return self._item_shape(key)

    def _item_shape(self, key: NestedKey) -> torch.Size:
        """Hook of :meth:`get_item_shape`: the shape of the entry at ``key``, read here from the entry.

        A lazy stack combines its members' shapes instead, so that it need not stack the entry.
        """
        value = self.get(key, NO_DEFAULT)
        if isinstance(value, torch.Tensor):
            return value.shape
        return torch.Size(value.batch_size)

    def is_non_tensor(self, key: NestedKey) -> bool:
        """Returns True if the stored entry at ``key`` is non-tensor data (``NonTensorData``).

        Args:
            key (NestedKey): the key to check.

        Returns:
            Whether the entry is non-tensor data.

        Raises:
            KeyError: if the key is missing.

        Examples:
            >>> td = TensorDict({"obs": torch.zeros(4), "label": "cat"}, [])
            >>> td.is_non_tensor("label"), td.is_non_tensor("obs")
            (True, False)
        """
        return is_non_tensor(self.get(key, NO_DEFAULT))

    # ------------------------------------------------------------------ writing
    def _walk_to_parent(self, parts: tuple, create: bool):
        """The tensordict that holds the last part of ``parts``, created when asked."""
        level = self
        for depth, part in enumerate(parts[:-1]):
            level = inner_tensordict(level)
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
        return inner_tensordict(level)

    def set(
        self: T,
        key: NestedKey,
        item: Any,
        inplace: bool = False,
        *,
        non_blocking: bool = False,
        **kwargs: Any,
    ) -> T:
        """Stores ``item`` at ``key`` and returns the tensordict.

        A tuple key creates the missing sub-tensordicts on its path once the value is accepted.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            item: a tensor whose leading dims equal the batch size, a tensordict, a dict (stored
                as a sub-tensordict), a number or array (a tensor), or other value (NonTensorData).
            inplace (bool, optional): write into the existing entry (copy into a tensor, update a
                sub-tensordict) instead of rebinding; a missing key is added. Defaults to False.

        Keyword Args:
            non_blocking (bool, optional): accepted for compatibility; ignored.
            **kwargs: accepted for compatibility; ignored.

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
            inner = inner_tensordict(level)
            nxt = inner._get_str(part, None)
            if nxt is None or not hasattr(nxt, "_get_str"):
                return inner
            level = nxt
        return inner_tensordict(level)

    def set_(self: T, key: NestedKey, item: Any, *, non_blocking: bool = False) -> T:
        """Copies ``item`` into the entry at ``key`` (even when locked) and returns the tensordict.

        Args:
            key (NestedKey): the key of an existing entry.
            item: the value to copy; anything that broadcasts to the entry, such as a number.

        Keyword Args:
            non_blocking (bool, optional): lets a copy between devices run asynchronously;
                the copy is made as ``Tensor.copy_`` makes it, which waits for it. Defaults
                to False.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if the key is missing, or its path goes through a non-tensordict entry.
            ValueError: if ``item`` does not broadcast to the entry's shape (EntryShapeError,
                also a RuntimeError).
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

    def setdefault(self, key: NestedKey, default: Any, inplace: bool = False) -> Any:
        """Returns the entry at ``key``, storing ``default`` there first if the key is missing.

        Args:
            key (NestedKey): a string, or a tuple of strings for a nested entry.
            default: the value to store, of any kind :meth:`set` accepts.
            inplace (bool, optional): passed to :meth:`set` when ``default`` is stored.
                Defaults to False.

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
            self.set(key, default, inplace=inplace)
            value = self.get(key, NO_DEFAULT)
        return value

    def set_non_tensor(self: T, key: NestedKey, value: Any) -> T:
        """Stores ``value`` as one non-tensor entry at ``key`` and returns the tensordict.

        The value is wrapped in a :class:`~tensordict.NonTensorData` of the batch size and
        device of the level that holds it, whatever it is: unlike :meth:`set`, a number, a
        list or a tensor is kept as the Python object. Missing levels of a nested key are
        created.

        Args:
            key (NestedKey): the key of the entry.
            value: the value to store.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the tensordict is locked and the key is new (LockedError).
            KeyError: if the key's path goes through an entry that is not a tensordict.

        Examples:
            >>> td = TensorDict(batch_size=[2]).set_non_tensor(("meta", "ids"), [1, 2])
            >>> td["meta", "ids"], type(td.get(("meta", "ids"))).__name__
            ([1, 2], 'NonTensorData')
        """
        parts = _key_parts(key)
        level = self
        if len(parts) > 1:
            level = self.get(parts[:-1], None)
            if level is None:
                self.create_nested(parts[:-1])
                level = self.get(parts[:-1], NO_DEFAULT)
        level.set(parts[-1], NonTensorData(value, level.batch_size, level.device))
        return self

    def create_nested(self: T, key: NestedKey) -> T:
        """Adds an empty nested tensordict at ``key`` and returns the tensordict.

        The new tensordict has the batch size, device and names of its parent. An existing
        entry at ``key`` is replaced; on a tuple key, unlocked tensordicts already on the path
        are kept with their entries, any other entry on the path is replaced.

        Args:
            key (NestedKey): the key of the new tensordict.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the tensordict is locked (LockedError).

        Examples:
            >>> data = TensorDict({}, [3, 4])
            >>> _ = data.create_nested(("some", "nested"))
            >>> data["some", "nested"].batch_size
            torch.Size([3, 4])
        """
        parts = _key_parts(key)
        if self.is_locked:
            msg = f"cannot create the nested tensordict {canonical_key(key)!r}: the tensordict is locked"
            raise LockedError(msg)
        level = inner_tensordict(self)
        for part in parts[:-1]:
            nxt = level._get_str(part, None)
            keep = is_subtree(nxt) and is_tensordict(nxt) and nxt._takes_new_levels()
            if not keep:
                level._set_str(
                    part, level._new_like({}, level.batch_size), inplace=False, validated=False
                )
                # read back what was stored: a lazy stack stores one new level per member
                nxt = level._get_str(part, None)
            level = nxt
        level._set_str(
            parts[-1], level._new_like({}, level.batch_size), inplace=False, validated=False
        )
        return self

    def _takes_new_levels(self) -> bool:
        """Hook of :meth:`create_nested`: True when new levels may be created inside this tensordict.

        :meth:`create_nested` keeps such a tensordict on the path of its key (with its entries)
        and replaces any other. Here: an unlocked tensordict. A lazy stack says False.
        """
        return not self.is_locked

    # ------------------------------------------------------------------ updating
    def update(
        self: T,
        input_dict_or_td: Mapping | TensorCollection | None = None,
        clone: bool = False,
        inplace: bool = False,
        *,
        keys_to_update: Sequence[NestedKey] | None = None,
        non_blocking: bool = False,
        update_batch_size: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        ignore_lock: bool = False,
        **kwargs: Any,
    ) -> T:
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
            update_batch_size (bool, optional): when ``input_dict_or_td`` is a tensordict of
                another batch size, take its batch size (and entries) instead of refusing it;
                every key of this tensordict must then be one of its keys. Defaults to False.
            non_blocking (bool, optional): accepted for compatibility; ignored.
            is_leaf (callable, optional): takes the class of a value of the source; True
                writes that value whole instead of key by key. Defaults to None: every
                mapping and tensordict is written key by key.
            ignore_lock (bool, optional): accepted for compatibility; ignored.
            **kwargs: more entries, written after those of ``input_dict_or_td``.

        Returns:
            The tensordict itself.

        Raises:
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict (InvalidSourceError,
                also a ValueError), or a key is not a string or a tuple of strings.
            RuntimeError: if a value does not fit the batch size, or the tensordict is locked and a
                key would be added or rebound, or ``update_batch_size`` would leave an entry of
                the old batch size (BatchSizeError).
            KeyError: if a key's path goes through an entry that is not a tensordict.

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(2)}}, [2])
            >>> td.update({"a": {"c": torch.ones(2)}})["a"].sorted_keys
            ['b', 'c']
            >>> td.update(d=torch.ones(2)).sorted_keys
            ['a', 'd']
        """
        if kwargs:
            if input_dict_or_td is not None:
                self.update(input_dict_or_td, clone, inplace, keys_to_update=keys_to_update)
            input_dict_or_td = kwargs
        if input_dict_or_td is None or input_dict_or_td is self:
            return self
        source = inner_tensordict(input_dict_or_td)
        if is_tensordict(source) and source.batch_size != self.batch_size:
            _check_batch_update(self, source, update_batch_size, inplace, keys_to_update)
            if update_batch_size:
                self._adopt_batch_size(source)
        wanted = None
        if keys_to_update is not None:
            wanted = {_key_parts(k) for k in keys_to_update}
        options = UpdateOptions(clone, inplace, wanted, update_batch_size, is_leaf)
        self._update(input_dict_or_td, (), options)
        return self

    def _adopt_batch_size(self, source) -> None:
        """Hook of ``update(update_batch_size=True)``: takes ``source``'s batch size, keeping the sub-tensordicts.

        A sub-tensordict that the source has too takes the batch size of the source's
        (and keeps its identity); every other entry is dropped, to be written again
        from the source.

        Raises:
            BatchSizeError: if a key of this tensordict is not a key of ``source``.
        """
        missing = sorted(set(self.keys()) - set(source.keys()))
        if missing:
            msg = (
                f"cannot update to the batch size {list(source.batch_size)}: the entries {missing} "
                f"of batch size {list(self.batch_size)} are not in the source"
            )
            raise BatchSizeError(msg)
        for key in list(self.keys()):
            mine, theirs = self._get_str(key, None), source._get_str(key, None)
            if is_subtree(mine) and is_subtree(theirs):
                inner, other = inner_tensordict(mine), inner_tensordict(theirs)
                if inner.batch_size != other.batch_size:
                    inner._adopt_batch_size(other)
            else:
                self._del_str(key)
        self.batch_size = source.batch_size

    def _update(self, source, prefix: tuple, options: UpdateOptions) -> None:
        """Writes the entries of ``source`` into this tensordict, the level ``prefix`` of the one updated.

        A sub-tensordict (or tensorclass instance) of the source is written into the one
        already there, which keeps its identity; with ``options.adopt``
        (``update_batch_size``) it takes the source's batch size first.
        ``options.is_leaf`` says which classes are written whole instead.
        """
        clone, inplace, wanted, adopt, is_leaf = options
        for key, value in _source_items(source):
            rel = _key_parts(key)
            parts = prefix + rel
            if wanted is not None and not any(parts[: len(w)] == w for w in wanted):
                if not any(w[: len(parts)] == parts for w in wanted):
                    continue
            target_parent = self._walk_to_parent(rel, create=True) if len(rel) > 1 else self
            current = target_parent._get_str(rel[-1], None)
            nested = is_plain_mapping(value) or is_subtree(value)
            if nested and (is_leaf is None or not is_leaf(type(value))):
                if current is not None and is_subtree(current):
                    target = inner_tensordict(current)
                    if not is_plain_mapping(value):
                        value = inner_tensordict(value)
                        new = value._update_target(target)
                        if new is not target:
                            target_parent._set_str(rel[-1], new, inplace=False, validated=False)
                            target = new
                        if adopt and value.batch_size != target.batch_size:
                            target._adopt_batch_size(value)
                    target._update(value, parts, options)
                    continue
            if clone and (isinstance(value, torch.Tensor) or is_tensordict(value)):
                value = value.clone()
            target_parent._set_str(
                rel[-1], value, inplace=inplace and current is not None, validated=False
            )

    def _update_target(self, current: TensorCollection) -> TensorCollection:
        """Hook of :meth:`update`: the form of ``current`` (a tensordict) that takes this one's entries.

        A tensordict is written into ``current`` as it is; a lazy stack turns a dense
        ``current`` into a lazy stack of its slices first, so that members of different
        shapes can be written.
        """
        return current

    def update_(
        self: T,
        input_dict_or_td: Mapping | TensorCollection | None = None,
        clone: bool = False,
        *,
        keys_to_update: Sequence[NestedKey] | None = None,
        non_blocking: bool = False,
        **kwargs: Any,
    ) -> T:
        """Copies every entry of a mapping or tensordict into the existing entries, in place.

        Nested mappings update the matching sub-tensordicts. Nothing is rebound: it works if locked.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the values, keyed as in this tensordict.
            clone (bool, optional): call ``clone()`` on each value first. Defaults to False.

        Keyword Args:
            keys_to_update (sequence of NestedKey, optional): copy only the values at these keys
                of ``input_dict_or_td`` (a key of a sub-tensordict copies all of it). Defaults to
                None, which copies every value.
            non_blocking (bool, optional): accepted for compatibility; ignored.
            **kwargs: more values, copied after those of ``input_dict_or_td``.

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
        if kwargs:
            if input_dict_or_td is not None:
                self.update_(input_dict_or_td, clone, keys_to_update=keys_to_update)
            input_dict_or_td = kwargs
        if input_dict_or_td is None:
            return self
        wanted = None if keys_to_update is None else [_key_parts(k) for k in keys_to_update]
        for key, value in _source_items(input_dict_or_td):
            parts = _key_parts(key)
            below = _keys_below(wanted, parts)
            if below == ():
                continue  # no key asked for lies at or under this one
            if is_plain_mapping(value) or is_tensordict(value) and not is_non_tensor(value):
                # the level there takes them (a lazy stack, member by member)
                self.get(parts, NO_DEFAULT).update_(value, clone=clone, keys_to_update=below)
                continue
            if below is None:
                self.set_(parts, value.clone() if clone else value)
        return self

    def set_at_(
        self: T, key: NestedKey, value: Any, index: IndexType, *, non_blocking: bool = False
    ) -> T:
        """Writes ``value`` into the rows ``index`` of the entry at ``key``, even when locked.

        Args:
            key (NestedKey): the key of an existing tensor or sub-tensordict.
            value: a tensor, number or (for a sub-tensordict) mapping that broadcasts to the rows.
            index: an index of the leading dims: an int, slice, tensor, or a tuple of them.

        Keyword Args:
            non_blocking (bool, optional): lets a copy between devices run asynchronously;
                the write is made as ``tensor[index] = value`` makes it, which waits for it.
                Defaults to False.

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
        current = self.get(key, NO_DEFAULT)
        if is_non_tensor(current):
            # a value other than the entry's own may turn it into a NonTensorStack
            written = current._written_at(index, value)
            if written is not current:
                self.set_(key, written)
            return self
        current[index] = array_as_tensor(value, current.device)
        return self

    def update_at_(
        self: T,
        input_dict_or_td: Mapping | TensorCollection,
        idx: IndexType,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[NestedKey] | None = None,
    ) -> T:
        """Writes each entry of a mapping or tensordict into the rows ``idx`` of the same entry.

        Nested mappings go into the matching sub-tensordicts, in place, so this works when locked.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the values, keyed as in this tensordict.
            idx: an index of the batch dims: an int, slice, tensor, or a tuple of them; the
                empty tuple writes whole entries, as :meth:`update_`.
            clone (bool, optional): call ``clone()`` on each value first. Defaults to False.

        Keyword Args:
            non_blocking (bool, optional): lets copies between devices run asynchronously; they
                are made as ``tensor[idx] = value`` makes them, which waits. Defaults to False.
            keys_to_update (sequence of NestedKey, optional): write only the values at these
                keys of ``input_dict_or_td`` (a sub-tensordict's key: all it holds). Defaults
                to None: every value.

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if a key of ``input_dict_or_td`` is not in this tensordict.
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict.
            IndexError: if ``idx`` is out of range.
            RuntimeError: if a value does not broadcast to the indexed rows.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3)}}, [3])
            >>> td.update_at_({"a": 1.0, "b": {"c": 2.0}}, 1)["b", "c"]
            tensor([0., 2., 0.])
            >>> td.update_at_({"a": 5.0, "b": {"c": 5.0}}, 0, keys_to_update=["a"])["b", "c"]
            tensor([0., 2., 0.])
        """
        wanted = None
        if keys_to_update is not None:
            wanted = {_key_parts(k) for k in keys_to_update}
            if not wanted:
                return self
        if isinstance(idx, tuple) and not idx:
            return self.update_(input_dict_or_td, clone, keys_to_update=keys_to_update)
        self._update_at(input_dict_or_td, idx, clone, wanted, ())
        return self

    def _update_at(
        self, source: Mapping | TensorCollection, idx: IndexType, clone: bool, wanted, prefix: tuple
    ) -> None:
        for key, value in _source_items(source):
            parts = prefix + _key_parts(key)
            if wanted is not None and not any(parts[: len(w)] == w for w in wanted):
                if not any(w[: len(parts)] == parts for w in wanted):
                    continue
            if is_plain_mapping(value) or is_tensordict(value) and not is_non_tensor(value):
                self._update_at(value, idx, clone, wanted, parts)
            else:
                self.set_at_(parts, value.clone() if clone else value, idx)

    def copy_at_(
        self: T,
        tensordict: TensorCollection,
        idx: IndexType,
        non_blocking: bool = False,
        *,
        fast: bool = True,
    ) -> T:
        """Copies the tensors of ``tensordict`` into the existing entries at ``idx``; returns self.

        A faster :meth:`update_at_` for when every key of ``tensordict`` is a tensor entry of
        this tensordict, with the shape of ``td[idx]``. With ``fast=True`` everything is checked
        before anything is written, and a non-tensor entry of the source is skipped with a
        ``FutureWarning`` (a source with only non-tensor entries raises).

        Args:
            tensordict (TensorDictBase): the entries to copy.
            idx (int, slice or tuple of them): the index along the batch dims (a tensor index,
                ``None`` or ``...`` need ``fast=False``).
            non_blocking (bool, optional): asynchronous copies between devices. Defaults to False.

        Keyword Args:
            fast (bool, optional): only the tensor-only copy; if False, calls :meth:`update_at_`.
                Defaults to True.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: with ``fast=True``, if the source, destination or index does not allow
                the tensor-only copy (CopyAtError); the tensordict is then unchanged.
            TypeError: if ``fast`` is None.

        Examples:
            >>> td = TensorDict(x=torch.zeros(3, 2), batch_size=[3])
            >>> _ = td.copy_at_(TensorDict(x=torch.ones(2), batch_size=[]), 1)
            >>> td["x"][:, 0]
            tensor([0., 1., 0.])
        """
        if fast is None:
            msg = "copy_at_(..., fast=None) is not supported: pass fast=True or fast=False"
            raise TypeError(msg)
        if not fast:
            return self.update_at_(tensordict, idx)
        plan = self._copy_at_plan(tensordict, idx)
        for dest, value in plan:
            dest.copy_(value, non_blocking=non_blocking)
        return self

    def _copy_at_plan(self, source, idx) -> list:
        """The ``(destination view, value)`` pairs of ``copy_at_``, every one checked first."""

        def refuse(why: str):
            msg = (
                f"copy_at_(..., fast=True) cannot use the tensor-only copy: {why}. Use fast=False "
                "or update_at_() for the general update"
            )
            return CopyAtError(msg)

        if not is_tensor_collection(source) or _refusal_of(source) is not None:
            raise refuse(f"the source is a {type(source).__name__}, not a tensordict")
        why = self._fast_copy_at_refusal()
        if why is not None:
            raise refuse(f"the destination is {why}")
        if _index_has_tensor(idx):
            raise refuse(f"the index {idx!r} holds a tensor, None or Ellipsis")
        plan, skipped = [], []
        source = inner_tensordict(source)
        for key in list(source.keys(include_nested=True)):
            value = source.get(key)
            if is_subtree(value):
                continue
            if not isinstance(value, torch.Tensor):
                skipped.append(key)
                continue
            dest = self.get(key, None)
            if not isinstance(dest, torch.Tensor):
                raise refuse(f"the key {key!r} is not a tensor entry of the tensordict")
            try:
                view = dest[idx]
            except IndexError as err:
                raise refuse(f"the index {idx!r} does not fit the entry {key!r}") from err
            if view.shape != value.shape:
                raise refuse(
                    f"the entry {key!r} has shape {tuple(value.shape)}, the destination "
                    f"{tuple(view.shape)}"
                )
            plan.append((view, value))
        if skipped and not plan:
            raise refuse("the source holds only non-tensor entries")
        if skipped:
            warn(
                f"copy_at_(..., fast=True) skipped the non-tensor entries {skipped!r} of the "
                "source. Starting with TensorDict 0.17, this will raise a RuntimeError; use "
                "fast=False or update_at_() to write them",
                FutureWarning,
            )
        return plan

    def _fast_copy_at_refusal(self) -> str | None:
        """Hook of :meth:`copy_at_`: why this tensordict cannot take part in the tensor-only copy, or None.

        The reason ends the refusal's message (``"the destination is a lazy stack"``). A lazy
        stack refuses: its leaves are stacked copies of its members'.
        """
        return None

    # ------------------------------------------------------------------ removing
    def _check_can_remove(self, key, action: str) -> None:
        if self.is_locked:
            msg = f"cannot {action} {key!r}: the tensordict is locked; call unlock_() first"
            raise LockedError(msg)

    def pop(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
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

    def popitem(self) -> tuple:
        """Removes the last top-level entry (the last of :meth:`keys`) and returns ``(key, value)``.

        A nested tensordict is removed and returned whole.

        Returns:
            A ``(key, value)`` pair.

        Raises:
            KeyError: if the tensordict is empty (MissingKeyError).
            RuntimeError: if the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b=torch.ones(3), batch_size=[3])
            >>> td.popitem()
            ('b', tensor([1., 1., 1.]))
            >>> list(td.keys())
            ['a']
        """
        keys = list(self._keys_level())
        if not keys:
            msg = "popitem(): the tensordict is empty"
            raise MissingKeyError(msg)
        key = keys[-1]
        self._check_can_remove(key, "pop")
        value = self._get_str(key, None)
        self._del_str(key)
        return key, value

    def del_(self: T, key: NestedKey) -> T:
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

    def clear(self: T) -> T:
        """Removes every entry and returns the tensordict.

        Returns:
            The tensordict itself, now empty (its batch size is kept).

        Raises:
            RuntimeError: if the tensordict is locked (LockedError), even when it is empty.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b={"c": torch.zeros(3)}, batch_size=[3])
            >>> td.clear()
            TensorDict(batch_size=[3], fields={})
        """
        self._check_can_remove("every entry", "remove")
        for key in list(self._keys_level()):
            self._del_str(key)
        return self

    def rename_key_(self: T, old_key: NestedKey, new_key: NestedKey, safe: bool = False) -> T:
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
        if self.is_locked:
            msg = f"cannot rename {canonical_key(old_key)!r}: the tensordict is locked; call unlock_() first"
            raise LockedError(msg)
        value = self.get(old_key, NO_DEFAULT)
        if safe and self.get(new_key, None) is not None:
            msg = f"key {canonical_key(new_key)!r} already exists; pass safe=False to overwrite it"
            raise KeyError(msg)
        self.del_(old_key)
        self.set(new_key, value)
        return self

    # ------------------------------------------------------------------ copies
    def copy(self: T) -> T:
        """Returns a shallow copy: a new tree of tensordicts that holds the same leaves.

        Every nested tensordict is a new object, so adding or removing keys in the copy does not
        change the original, but an in-place change to a leaf tensor shows in both. The copy is
        unlocked.

        Returns:
            A new tensordict of the same class.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b={"c": torch.zeros(3)}, batch_size=[3])
            >>> c = td.copy()
            >>> c["a"] is td["a"], c["b"] is td["b"], c[("b", "c")] is td[("b", "c")]
            (True, False, True)
        """
        out = self._shallow_copy()
        for key, value in list(out._items_level()):
            if is_subtree(value):
                out._set_str(key, value.copy(), inplace=False, validated=True)
        return out

    def replace(self: T, *args: Mapping | TensorCollection, **kwargs: Any) -> T:
        """Returns a shallow copy (see :meth:`copy`) with some entries replaced.

        The new entries are written into the copy with :meth:`update`, so nested tensordicts are
        merged; the tensordict itself does not change. With nothing to write, returns ``self``.

        Args:
            *args (dict or TensorDictBase): at most one, the entries to write.
            **kwargs: top-level entries to write; they win over those of the positional argument.

        Returns:
            The updated copy, or ``self`` when there is nothing to write.

        Raises:
            RuntimeError: if more than one positional argument is given, or it is neither a dict
                nor a tensordict (ReplaceArgumentError); if a value does not fit the batch size.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
            >>> new = td.replace(a=torch.ones(3))
            >>> new["a"], td["a"], new["b"] is td["b"]
            (tensor([1., 1., 1.]), tensor([0., 0., 0.]), True)
        """
        if len(args) > 1:
            msg = f"replace() takes at most one dict or tensordict of entries, got {len(args)}"
            raise ReplaceArgumentError(msg)
        source = args[0] if args else None
        if (
            source is not None
            and not isinstance(source, Mapping)
            and not is_tensor_collection(source)
        ):
            msg = f"replace() needs a dict or a tensordict of entries, got {type(source).__name__}"
            raise ReplaceArgumentError(msg)
        if kwargs:
            if source is None:
                source = kwargs
            elif isinstance(source, Mapping):
                source = {**source, **kwargs}
            else:
                source = source.copy().update(kwargs)
        if source is None or not len(source):
            return self
        return self.copy().update(source)
