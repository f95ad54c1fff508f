"""Key and entry methods of every tensordict, written once over the primitives.

Splitting a tensordict by keys (``split_keys``, ``separates``), shallow copies
(``copy``, ``replace``), emptying (``clear``, ``popitem``, ``filter_empty_``),
reading one entry cheaply (``get_at``, ``get_item_shape``, ``entry_class``,
``is_non_tensor``), writing rows (``copy_at_``) and the dimension names
(``rename_``). The constructors that build concrete classes (``from_list``,
``from_dict_instance``, ``from_schema``) only look up their implementation in
:data:`tensordict._ops.convert.CONVERTERS`, which :mod:`tensordict._from` fills.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from tensordict._collection import (
    NO_DEFAULT,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._keys import NestedKey, _key_parts, unravel_key
from tensordict._nontensor import NonTensorData
from tensordict._ops.convert import CONVERTERS
from tensordict.errors import (
    CopyAtError,
    LockedError,
    MissingKeyError,
    RenameDestinationError,
    ReplaceArgumentError,
    UnsupportedConversionError,
    warn,
)


def _as_tuple(key) -> tuple:
    flat = unravel_key(key)
    return (flat,) if isinstance(flat, str) else flat


def _renamed(key: tuple, pairs: list) -> tuple:
    """``key`` after the first of the ``(source, destination)`` renames that covers it."""
    for src, dst in pairs:
        if key[: len(src)] == src:
            return dst + key[len(src) :]
    return key


def _is_subtree(value) -> bool:
    """True for a nested tensordict (or tensorclass), False for a leaf or non-tensor data."""
    return is_tensor_collection(value) and not getattr(type(value), "_is_non_tensor", False)


def _inner(value):
    """The tensordict of a tensorclass instance, or the value itself."""
    return value._tensordict if getattr(type(value), "_is_tensorclass", False) else value


def _lookup(name: str) -> Callable:
    try:
        return CONVERTERS[name]
    except KeyError:
        msg = f"{name} is not available: import tensordict, which registers it"
        raise UnsupportedConversionError(msg) from None


def _fits_batch(value, batch_size: torch.Size) -> bool:
    """False for a number or tensor whose leading dims are not ``batch_size`` (no broadcasting)."""
    if isinstance(value, (bool, int, float, complex)):
        return not batch_size
    if isinstance(value, torch.Tensor):
        return value.shape[: len(batch_size)] == batch_size
    return True


def _index_has_tensor(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, torch.Tensor) or i is None or i is Ellipsis for i in items)


def plain_tree(td, retain_none: bool | None):
    """Turns, in place, the tensorclasses, typed tensordicts and lazy stacks inside ``td`` into
    plain tensordicts (their ``to_tensordict``), and returns ``td``.

    ``to_tensordict`` of every class calls it on its fresh copy, so that the result holds plain
    tensordicts only, at every depth (with ``retain_none``, a tensorclass field set to ``None``
    becomes a ``None`` entry).
    """
    for key, value in list(td._items_level()):
        if not _is_subtree(value):
            continue
        if type(value) is not type(td):
            value = value.to_tensordict(retain_none=retain_none)
            td._set_str(key, value, inplace=False, validated=True)
        else:
            plain_tree(value, retain_none)
    return td


class EntriesMixin:
    """Entry-level methods of :class:`~tensordict.TensorDictBase` (see the module docstring)."""

    __slots__ = ()

    # ------------------------------------------------------------------ copies
    def copy(self):
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
            if _is_subtree(value):
                out._set_str(key, value.copy(), inplace=False, validated=True)
        return out

    def replace(self, *args, **kwargs):
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

    # ------------------------------------------------------------------ removing entries
    def _check_can_remove(self, key, action: str) -> None:
        if self.is_locked:
            msg = f"cannot {action} {key!r}: the tensordict is locked; call unlock_() first"
            raise LockedError(msg)

    def clear(self):
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

    def filter_empty_(self):
        """Removes, in place, the nested tensordicts that hold no leaf, and returns the tensordict.

        A nested tensordict that holds only empty tensordicts is removed too.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if the tensordict is locked and has an empty nested tensordict
                (LockedError).

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b={}, c={"d": {}}, batch_size=[3])
            >>> list(td.filter_empty_().keys())
            ['a']
        """
        for key, value in list(self._items_level()):
            if not _is_subtree(value):
                continue
            if value.is_empty():
                self._check_can_remove(key, "remove the empty tensordict")
                self._del_str(key)
            else:
                _inner(value).filter_empty_()
        return self

    # ------------------------------------------------------------------ splitting by keys
    def _split_take(self, work, key_set, strict: bool, default, taken: list):
        """One output of ``split_keys``: moves the entries of ``key_set`` out of ``work``."""
        out = work._new_like({}, work.batch_size)
        if callable(key_set) and not isinstance(key_set, Mapping):
            chosen = []
            for key in work.keys(include_nested=True, leaves_only=True):
                value = work.get(key)
                if getattr(type(value), "_is_non_tensor", False) or not isinstance(
                    value, torch.Tensor
                ):
                    continue
                parts = _key_parts(key)
                with torch.no_grad():
                    if key_set(parts, value):
                        chosen.append((parts, parts))
        else:
            pairs = key_set.items() if isinstance(key_set, Mapping) else ((k, k) for k in key_set)
            chosen = []
            for old, new in pairs:
                parts = _key_parts(old)
                if work.get(parts, None) is None:
                    if strict:
                        raise work._missing(parts, 0, work)
                    if default is not NO_DEFAULT and default is not None:
                        out.set(new, default)
                    continue
                chosen.append((parts, _key_parts(new)))
        for parts, new in chosen:
            if work.get(parts, None) is None:
                continue  # a duplicate key of the same set
            out.set(new, work.get(parts))
            work.exclude(parts, inplace=True)
            taken.append(parts)
        return out

    def split_keys(
        self,
        *key_sets,
        inplace: bool = False,
        default=NO_DEFAULT,
        strict: bool = True,
        reproduce_struct: bool = False,
    ) -> tuple:
        """Splits the tensordict into one tensordict per set of keys, plus one with the rest.

        Each set takes its entries from what the earlier sets left; the values are not copied.
        Empty nested tensordicts are removed from the last tensordict unless ``reproduce_struct``.

        Args:
            *key_sets (list of NestedKey, dict or Callable): a list selects its keys; a dict
                selects its keys and renames each to its value; a callable ``fn(key, value)``
                (``key`` a tuple of str) selects the tensor leaves for which it returns True.

        Keyword Args:
            inplace (bool, optional): remove the selected entries from this tensordict, which is
                returned last. Defaults to False.
            default (optional): with ``strict=False``, the value stored for a missing key (a
                ``None`` default, or none, skips the key).
            strict (bool, optional): a missing key of a list or dict raises. Defaults to True.
            reproduce_struct (bool, optional): every output gets the tree of nested tensordicts
                of the tensordict, even the empty ones. Defaults to False.

        Returns:
            A tuple of ``len(key_sets) + 1`` tensordicts.

        Raises:
            KeyError: if ``strict`` and a key is missing from what the earlier sets left; the
                tensordict is then unchanged.
            RuntimeError: if ``inplace`` and the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict(a=0, b=0, c=0, d=0)
            >>> parts = td.split_keys(["a"], ["b", "c"])
            >>> [sorted(p.keys()) for p in parts]
            [['a'], ['b', 'c'], ['d']]
            >>> td = TensorDict(s=torch.zeros(4), v=torch.zeros(4, 3), batch_size=[4])
            >>> vectors, rest = td.split_keys(lambda key, value: value.ndim == 2)
            >>> list(vectors.keys()), list(rest.keys())
            (['v'], ['s'])
        """
        work = self.copy()
        taken: list = []
        outs = [self._split_take(work, key_set, strict, default, taken) for key_set in key_sets]
        if inplace:
            if taken and self.is_locked:
                msg = (
                    f"cannot split {unravel_key(taken[0])!r} out in place: the tensordict is locked"
                )
                raise LockedError(msg)
            self.exclude(*taken, inplace=True)
            work = self
        if reproduce_struct:
            nested = [k for k, v in self.items(include_nested=True) if _is_subtree(v)]
            for out in outs:
                for key in nested:
                    if out.get(key, None) is None:
                        out.create_nested(key)
        else:
            work.filter_empty_()
        return (*outs, work)

    def separates(
        self, *keys: NestedKey, default=NO_DEFAULT, strict: bool = True, filter_empty: bool = True
    ):
        """Removes the entries of ``keys`` in place and returns them in a new tensordict.

        The values are not copied; the result keeps the nested tensordicts on the path of each
        removed entry, with the batch size of the tensordict.

        Args:
            *keys (NestedKey): the keys to remove.

        Keyword Args:
            default (optional): if given, a missing key does not raise and the result holds
                ``default`` under it (``None`` with a ``FutureWarning`` if it does not fit the
                batch size).
            strict (bool, optional): a missing key without a default raises; if False the
                result holds ``None`` under it. Defaults to True.
            filter_empty (bool, optional): also remove the nested tensordicts that the removal
                leaves empty. Defaults to True.

        Returns:
            A new tensordict with the removed entries.

        Raises:
            KeyError: if ``strict``, no ``default`` is given and a key is missing; the tensordict
                is then unchanged.
            RuntimeError: if the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b=torch.zeros(3), n={"c": torch.zeros(3)}, batch_size=[3])
            >>> out = td.separates("a", ("n", "c"))
            >>> sorted(out.keys(include_nested=True, leaves_only=True), key=str), list(td.keys())
            ([('n', 'c'), 'a'], ['b'])
        """
        out = self._new_like({}, self.batch_size)
        present = []
        for key in keys:
            parts = _key_parts(key)
            if self.get(parts, None) is not None:
                present.append(parts)
            elif default is NO_DEFAULT and strict:
                raise self._missing(parts, 0, self)
            else:
                fill = None if default is NO_DEFAULT else default
                if _fits_batch(fill, self.batch_size):
                    out.set(parts, fill)
                else:
                    warn(
                        f"separates() stored None under the missing key {unravel_key(parts)!r}: "
                        "its default does not fit the batch size. Starting with TensorDict 0.17, "
                        "this will raise the error of split_keys()",
                        FutureWarning,
                    )
                    out.set(parts, None)
        if present and self.is_locked:
            msg = f"cannot separate {unravel_key(present[0])!r}: the tensordict is locked"
            raise LockedError(msg)
        for parts in present:
            out.set(parts, self.get(parts))
        self.exclude(*present, inplace=True)
        if filter_empty:
            for parts in present:
                for depth in range(len(parts) - 1, 0, -1):
                    sub = self.get(parts[:depth], None)
                    if sub is not None and _is_subtree(sub) and sub.is_empty():
                        self.del_(parts[:depth])
        return out

    # ------------------------------------------------------------------ nested entries
    def create_nested(self, key: NestedKey):
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
            msg = f"cannot create the nested tensordict {unravel_key(key)!r}: the tensordict is locked"
            raise LockedError(msg)
        level = _inner(self)
        for part in parts[:-1]:
            nxt = level._get_str(part, None)
            keep = (
                _is_subtree(nxt)
                and not getattr(type(nxt), "_is_tensorclass", False)
                and not getattr(type(nxt), "_is_lazy", False)
                and not nxt.is_locked
            )
            if not keep:
                nxt = level._new_like({}, level.batch_size)
                level._set_str(part, nxt, inplace=False, validated=False)
            level = nxt
        level._set_str(
            parts[-1], level._new_like({}, level.batch_size), inplace=False, validated=False
        )
        return self

    @property
    def depth(self) -> int:
        """The number of levels of nested tensordicts below this one (empty ones do not count).

        Examples:
            >>> TensorDict({"a": 0}).depth, TensorDict({"a": {"b": {"c": 0}}}).depth
            (0, 2)
        """
        best = 0
        for _, value in self._items_level():
            if _is_subtree(value) and not value.is_empty():
                best = max(best, 1 + _inner(value).depth)
        return best

    # ------------------------------------------------------------------ reading one entry
    def get_at(self, key: NestedKey, *args, **kwargs):
        """Returns the entry at ``key`` indexed along the batch dims: ``td.get(key)[index]``.

        Args:
            key (NestedKey): the key to read.
            index (int, slice, torch.Tensor or tuple): the index, positional or by keyword.
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
            msg = f"get_at({unravel_key(key)!r}) needs an index: get_at(key, index)"
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
        if getattr(type(self), "_is_lazy", False):
            members = self.tensordicts
            if members:
                classes = {m.entry_class(key) for m in members}
                if len(classes) == 1 and not _is_subtree_class(next(iter(classes))):
                    return classes.pop()
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
        if getattr(type(self), "_is_lazy", False) and self.tensordicts:
            shapes = [m.get_item_shape(key) for m in self.tensordicts]
            first = shapes[0]
            if any(len(s) != len(first) for s in shapes):
                return torch.Size([-1])
            dims = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(first)]
            dims.insert(self.stack_dim, len(shapes))
            return torch.Size(dims)
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
        value = self.get(key, NO_DEFAULT)
        return bool(getattr(type(value), "_is_non_tensor", False))

    def rename_keys(self, mapping: Mapping, *, strict: bool = True):
        """Returns a tensordict with several keys renamed at once; this one is left as it is.

        The result has a new tree of nested tensordicts sharing every leaf (tensors and
        non-tensor entries) with this one, its batch size, device and names, unlocked. All
        sources are read before any destination is written, so swaps and chains work;
        renaming a nested tensordict moves all it holds. A nested tensordict the renaming
        leaves empty is dropped; one that was empty already is kept. A lazy stack renames
        the keys of each member.

        Args:
            mapping (Mapping[NestedKey, NestedKey]): source key to destination key.

        Keyword Args:
            strict (bool, optional): raise for a source that is missing; with False it is
                skipped. Defaults to True.

        Returns:
            A new tensordict.

        Raises:
            KeyError: if a source is missing and ``strict`` is True (MissingKeyError).
            ValueError: if a destination is an entry that is not renamed away
                (RenameDestinationError).

        Examples:
            >>> td = TensorDict(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])
            >>> td.rename_keys({"a": "b", "b": "a"})["a"]
            tensor([1., 1.])
        """
        if getattr(type(self), "_is_lazy", False):
            members = [m.rename_keys(mapping, strict=strict) for m in self.tensordicts]
            return self._restack(members, self._stack_dim)
        pairs = [(_as_tuple(src), _as_tuple(dst)) for src, dst in mapping.items()]
        present = {_as_tuple(k) for k in self.keys(True, False, is_leaf=is_leaf_nontensor)}
        missing = [src for src, _ in pairs if src not in present]
        if missing and strict:
            msg = f"rename_keys: the keys {missing} are missing; existing keys: {sorted(present)}"
            raise MissingKeyError(msg)
        pairs = [(src, dst) for src, dst in pairs if src in present]
        sources = {src for src, _ in pairs}
        for _, dst in pairs:
            if dst in present and not any(dst[: len(s)] == s for s in sources):
                msg = f"rename_keys: the destination {dst!r} is already present and is not renamed away"
                raise RenameDestinationError(msg)
        leaves = {_as_tuple(k): v for k, v in self.items(True, True, is_leaf=is_leaf_nontensor)}
        # empty nested tensordicts move with their parents, as leaves do
        empties = {
            _as_tuple(k): v
            for k, v in self.items(True, False, is_leaf=is_leaf_nontensor)
            if _is_subtree(v) and not list(v.keys())
        }
        moved = {_renamed(key, pairs): value for key, value in leaves.items()}
        moved_empties = {_renamed(key, pairs): value for key, value in empties.items()}
        kept = list(moved) + list(moved_empties)
        out = self.empty(recurse=True)
        # the levels that held only what moved away go; the ones empty before stay
        for src in sources:
            for depth in range(len(src), 0, -1):
                prefix = src[:depth]
                holds = any(k[:depth] == prefix for k in kept)
                was_empty = not any(k[:depth] == prefix for k in leaves)
                if not holds and not was_empty and prefix in out.keys(True):
                    out._walk_to_parent(prefix, create=False)._del_str(prefix[-1])
        for key, value in moved_empties.items():
            if key not in out.keys(True):
                out.set(key, value.empty())
        for key, value in moved.items():
            out.set(key, value)
        return out

    def set_non_tensor(self, key: NestedKey, value):
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

    def non_tensor_items(self, include_nested: bool = False) -> tuple:
        """Returns the ``(key, entry)`` pairs of the non-tensor entries, as a tuple.

        The entries are :class:`~tensordict.NonTensorData`, :class:`~tensordict.MetaData`
        or :class:`~tensordict.NonTensorStack` objects, not their values.

        Args:
            include_nested (bool, optional): also those of nested tensordicts, under
                nested keys. Defaults to False.

        Returns:
            tuple of (key, entry) pairs, in the order of :meth:`items`.

        Examples:
            >>> td = TensorDict(a=torch.zeros(2), s="x", sub={"t": "y"}, batch_size=[2])
            >>> [key for key, _ in td.non_tensor_items(include_nested=True)]
            ['s', ('sub', 't')]
        """
        return tuple(
            (key, value)
            for key, value in self.items(include_nested, True, is_leaf=is_leaf_nontensor)
            if is_non_tensor(value)
        )

    def filter_non_tensor_data(self):
        """Returns a tensordict without the non-tensor entries, nested ones included.

        The other entries are not copied: the result shares them.

        Returns:
            A new tensordict of the same class, batch size and device.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b="text", n={"c": "x", "d": torch.zeros(3)}, batch_size=[3])
            >>> list(td.filter_non_tensor_data().keys(include_nested=True, leaves_only=True))
            ['a', ('n', 'd')]
        """
        keys = [key for key, _ in self.non_tensor_items(include_nested=True)]
        return self.exclude(*keys) if keys else self.exclude()

    def pad(self, pad_size, value: float = 0.0, inplace: bool = False, safe: bool = True):
        """Returns the tensordict padded along its batch dims with ``value``: :func:`tensordict.pad`.

        Args:
            pad_size (sequence of int): ``(dim0_before, dim0_after, dim1_before, ...)``, for the
                leading batch dims; negative values crop.
            value (float, optional): the fill value. Defaults to 0.0.
            inplace (bool, optional): pad this tensordict in place. Defaults to False.
            safe (bool, optional): accepted for compatibility.

        Returns:
            The padded tensordict.

        Raises:
            RuntimeError: if ``pad_size`` does not fit the batch dims.

        Examples:
            >>> TensorDict(a=torch.ones(2), batch_size=[2]).pad([1, 1])["a"]
            tensor([0., 1., 1., 0.])
        """
        return CONVERTERS["pad"](self, pad_size, value=value, inplace=inplace, safe=safe)

    # ------------------------------------------------------------------ writing rows
    def copy_at_(self, tensordict, idx, non_blocking: bool = False, *, fast: bool = True):
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

        if not is_tensor_collection(source) or getattr(type(source), "_is_lazy", False):
            raise refuse(f"the source is a {type(source).__name__}, not a tensordict")
        if getattr(type(self), "_is_lazy", False):
            raise refuse("the destination is a lazy stack")
        if _index_has_tensor(idx):
            raise refuse(f"the index {idx!r} holds a tensor, None or Ellipsis")
        plan, skipped = [], []
        source = _inner(source)
        for key in list(source.keys(include_nested=True)):
            value = source.get(key)
            if _is_subtree(value):
                continue
            if not isinstance(value, torch.Tensor) or getattr(type(value), "_is_non_tensor", False):
                skipped.append(key)
                continue
            dest = self.get(key, None)
            if not isinstance(dest, torch.Tensor) or getattr(type(dest), "_is_non_tensor", False):
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

    # ------------------------------------------------------------------ names
    def rename_(self, *names, **rename_map):
        """Renames the batch dimensions in place and returns the tensordict.

        Pass either the new names, one per batch dimension (a single ``None`` clears them), or
        ``old="new"`` keywords. Nested tensordicts get the names of the dims they share.

        Args:
            *names (str or None): the new names.
            **rename_map (str or None): new names by current name.

        Returns:
            The tensordict itself.

        Raises:
            ValueError: if both or neither are given (except with no batch dim), if a mapped name
                is not a name of the tensordict, or the names are not one per batch dimension.

        Examples:
            >>> td = TensorDict(batch_size=[1, 2], names=["a", "b"])
            >>> td.rename_(b="g").names
            ['a', 'g']
            >>> td.rename_(None).names
            [None, None]
        """
        if names and rename_map:
            msg = "rename_() takes new names or a map of old names to new ones, not both"
            raise ValueError(msg)
        current = list(self.names or [None] * self.batch_dims)
        if rename_map:
            unknown = [k for k in rename_map if k not in current]
            if unknown:
                msg = f"rename_() got names {unknown!r} that the tensordict does not have: {current!r}"
                raise ValueError(msg)
            new = [rename_map.get(n, n) for n in current]
        elif names == (None,):
            new = None
        elif names:
            if len(names) != self.batch_dims:
                msg = f"rename_() needs {self.batch_dims} names, one per batch dimension, got {list(names)!r}"
                raise ValueError(msg)
            new = list(names)
        elif self.batch_dims == 0:
            return self
        else:
            msg = "rename_() needs new names or a map of old names to new ones"
            raise ValueError(msg)
        self.names = new
        return self

    # ------------------------------------------------------------------ loading and building
    def load_(self, prefix, *args, **kwargs):
        """Deprecated: calls :meth:`load_memmap_` with the same arguments.

        Args:
            prefix (str or Path): the folder to read.
            *args, **kwargs: passed to :meth:`load_memmap_`.

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

    def from_dict_instance(
        self,
        input_dict,
        *,
        auto_batch_size: bool | None = None,
        batch_size=None,
        device=None,
        batch_dims=None,
        names=None,
    ):
        """Builds a tensordict from a dict, giving nested dicts the classes of this one's entries.

        Like :meth:`from_dict`, except that a nested dict under a key that is a tensorclass (or a
        nested tensordict holding one) here becomes that class. The values of this tensordict are
        not used.

        Args:
            input_dict (dict): the entries; nested dicts become nested entries.

        Keyword Args:
            auto_batch_size, batch_size, device, batch_dims, names: as for :meth:`from_dict`.

        Returns:
            A new tensordict.

        Raises:
            ValueError: if both ``batch_size`` and ``batch_dims`` are given.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> td = TensorDict(a=torch.zeros(()), b=Point(x=torch.zeros(())))
            >>> out = td.from_dict_instance({"a": torch.ones(()), "b": {"x": torch.ones(())}})
            >>> type(out["b"]).__name__
            'Point'
        """
        return _lookup("from_dict_instance")(
            self, input_dict, auto_batch_size, batch_size, device, batch_dims, names
        )

    @classmethod
    def from_list(
        cls,
        input,
        *,
        auto_batch_size: bool | None = None,
        batch_size=None,
        device=None,
        batch_dims: int | None = None,
        names=None,
        lazy: bool | None = None,
    ):
        """Builds a tensordict by stacking a list of dicts or tensor collections on a new first dim.

        Each dict goes through :meth:`from_dict` with ``batch_size[1:]``; tensordicts and
        tensorclasses are stacked as they are.

        Args:
            input (list): the dicts or tensor collections.

        Keyword Args:
            auto_batch_size (bool, optional): infer each element's batch size.
            batch_size (list of int, optional): the result's batch size, the list length first.
            device (torch.device, optional): the device of the result.
            batch_dims (int, optional): with auto batch size, the most dims of the result.
            names (list of str, optional): the dimension names of the result.
            lazy (bool, optional): True: a lazy stack; False: a dense one; None: dense when the
                elements have the same shapes, else lazy.

        Returns:
            A tensordict with ``len(input)`` as first batch dim.

        Raises:
            ValueError: if ``batch_size[0]`` is not the length of the list, or both
                ``batch_size`` and ``batch_dims`` are given.

        Examples:
            >>> td = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}], batch_size=[2, 3])
            >>> td.batch_size
            torch.Size([2, 3])
        """
        return _lookup("from_list")(
            cls, input, auto_batch_size, batch_size, device, batch_dims, names, lazy
        )

    @classmethod
    def from_schema(
        cls, schema: dict, *, batch_size=None, storage: str | None = None, device=None, **kwargs
    ):
        """Allocates a zero-filled tensordict from ``{key: (element_shape, dtype)}``.

        Each entry gets the shape ``[*batch_size, *element_shape]``.

        Args:
            schema (dict): maps each key to a pair ``(element_shape, dtype)``.

        Keyword Args:
            batch_size (list of int, optional): the batch size. Defaults to ``[]``.
            storage (str, optional): ``None`` (regular tensors), ``"memmap"`` (memory-mapped, in
                ``prefix=`` or a temporary folder; the other keywords go to :meth:`memmap_`) or
                ``"shared"`` (shared memory).
            device (torch.device, optional): the device (ignored by ``"memmap"``).

        Returns:
            A new tensordict of zeros.

        Raises:
            ValueError: if ``storage`` is not one of the values above, or a schema entry is not
                a pair (UnknownStorageError).

        Examples:
            >>> td = TensorDict.from_schema({"obs": ([4, 4], torch.uint8), "r": ([], torch.float32)}, batch_size=[10])
            >>> td["obs"].shape, td["r"].dtype
            (torch.Size([10, 4, 4]), torch.float32)
        """
        return _lookup("from_schema")(cls, schema, batch_size, storage, device, kwargs)


def _is_subtree_class(klass: type) -> bool:
    return getattr(klass, "_is_tensor_collection", False) and not getattr(
        klass, "_is_non_tensor", False
    )
