"""Key views and key algebra: keys, values and items; select, exclude, split, rename, flatten and unflatten keys.

Every method walks or rearranges the tree of keys over the primitives
``_keys_level``, ``_items_level``, ``_get_str``, ``_set_str``, ``_del_str`` and
``_new_like``. Reading, writing and removing one entry is
:mod:`tensordict._ops.entries`.

The predicates below (``is_tensordict``, ``is_subtree``, ``inner_tensordict``) say
what kind of entry a value is; :mod:`tensordict._ops.entries` shares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch

from tensordict._blocks import update_back, written_back
from tensordict._collection import (
    NO_DEFAULT,
    default_is_leaf,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._keys import NestedKey, _key_parts, canonical_key
from tensordict._ops._contract import Contract
from tensordict._typing import T
from tensordict.errors import LockedError, MissingKeyError, RenameDestinationError, warn


def is_tensordict(value: Any) -> bool:
    """True for an instance of a tensordict class (a ``TensorDictBase``), False for a tensorclass instance.

    Every tensordict class, and nothing else, inherits :class:`KeysMixin` through
    ``TensorDictBase``, which lives a layer above this module.
    """
    return isinstance(value, KeysMixin)


def is_subtree(value: Any) -> bool:
    """True for a nested tensordict (or tensorclass), False for a leaf or non-tensor data."""
    return is_tensor_collection(value) and not is_non_tensor(value)


def inner_tensordict(value: Any) -> Any:
    """The tensordict of a tensorclass instance, or the value itself.

    The one place that reads the tensorclass flag: a tensorclass instance is not a
    tensordict, it holds one.
    """
    return value._tensordict if getattr(type(value), "_is_tensorclass", False) else value


def _is_leaf_nontensor(cls: type) -> bool:
    return is_leaf_nontensor(cls) or default_is_leaf(cls)


def _as_tuple(key) -> tuple:
    flat = canonical_key(key)
    return (flat,) if isinstance(flat, str) else flat


def _renamed(key: tuple, pairs: list) -> tuple:
    """``key`` after the first of the ``(source, destination)`` renames that covers it."""
    for src, dst in pairs:
        if key[: len(src)] == src:
            return dst + key[len(src) :]
    return key


def _split_key(key: str, separator: str) -> tuple:
    return tuple(key.split(separator)) if separator in key else (key,)


def _leaf_keys(td) -> Iterator[tuple]:
    """Every leaf key of ``td`` (non-tensor entries included) as a tuple."""
    for key in td.keys(True, True, is_leaf=_is_leaf_nontensor):
        yield (key,) if isinstance(key, str) else key


def _flat_leaves(td, is_leaf: Callable, prefix: tuple) -> Iterator[tuple]:
    """``(key parts, value)`` of every entry whose class ``is_leaf`` accepts, depth first.

    A sub-tensordict it does not accept is walked into; any other entry is left out.
    """
    for key, value in td.items():
        if is_leaf(type(value)):
            yield (*prefix, key), value
        elif is_tensor_collection(value):
            yield from _flat_leaves(value, is_leaf, (*prefix, key))


def _replace_entries(td, method: str, items: Iterable) -> None:
    """Replaces every entry of ``td`` with ``items`` (``(key, value)`` pairs): ``method(inplace=True)``."""
    td._check_restructure(method)
    for key in list(td._keys_level()):
        td._del_str(key)
    for key, value in items:
        td._set_str(key, value, inplace=False, validated=True)


def _flat_to_source(separator: str) -> Callable:
    """The inverse of ``flatten_keys``: each flat key goes back to the key it was made from.

    A key the with-block added is split at ``separator``, as ``unflatten_keys`` would.
    """

    def to_source(result, source) -> dict:
        origin = {separator.join(parts): parts for parts in _leaf_keys(source)}
        return {
            origin.get(name) or _split_key(name, separator): value for name, value in result.items()
        }

    return to_source


def _nested_to_source(separator: str) -> Callable:
    """The inverse of ``unflatten_keys``: each leaf goes back to the key it was made from.

    A key the with-block added is joined with ``separator`` into a flat key, as
    ``flatten_keys`` would.
    """

    def to_source(result, source) -> dict:
        origin = {
            tuple(part for key in parts for part in _split_key(key, separator)): parts
            for parts in _leaf_keys(source)
        }
        return {
            origin.get(path) or (separator.join(path),): value
            for path, value in (
                (_as_tuple(key), value)
                for key, value in result.items(True, True, is_leaf=_is_leaf_nontensor)
            )
        }

    return to_source


def _fits_batch(value, batch_size: torch.Size) -> bool:
    """False for a number or tensor whose leading dims are not ``batch_size`` (no broadcasting)."""
    if isinstance(value, (bool, int, float, complex)):
        return not batch_size
    if isinstance(value, torch.Tensor):
        return value.shape[: len(batch_size)] == batch_size
    return True


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
        for key, value in td._walk_items():
            full = prefix + (key,) if prefix else key
            leaf = is_leaf(type(value))
            # The walk is hot: the entry flags are read inline, not through is_subtree and
            # inner_tensordict, which cost a call each.
            if self._include_nested and not getattr(value, "_is_non_tensor", False):
                inner = (
                    value._tensordict if getattr(type(value), "_is_tensorclass", False) else value
                )
                if is_tensordict(inner):
                    yield from self._walk(inner, full if isinstance(full, tuple) else (full,))
            if not self._leaves_only or leaf:
                yield full

    def pairs(self) -> Iterator:
        """``(key, value)`` for every key of the view, in its order, each value as ``get`` gives it.

        Levels whose ``_value_items`` hook gives their values are read as they are walked
        (a lazily opened level reads its entries a chunk at a time, not one by one);
        below any other level, and when the keys are sorted, each value is got by its key.
        """
        td = self._td
        items = None if self._sort else td._value_items()
        if items is None:
            for key in self:
                yield key, td.get(key, NO_DEFAULT)
            return
        yield from self._walk_pairs(td, (), items)

    def _walk_pairs(self, td, prefix: tuple, items) -> Iterator:
        if items is None:
            # A level that cannot give its values (a lazy stack stacks them on get): its
            # keys as the walk gives them, each value got by its key.
            top = self._td
            for key in list(self._walk(td, prefix)):
                yield key, top.get(key, NO_DEFAULT)
            return
        is_leaf = self._is_leaf or default_is_leaf
        for key, value in items:
            full = prefix + (key,) if prefix else key
            if self._include_nested and not getattr(value, "_is_non_tensor", False):
                inner = (
                    value._tensordict if getattr(type(value), "_is_tensorclass", False) else value
                )
                if is_tensordict(inner):
                    nested = full if isinstance(full, tuple) else (full,)
                    yield from self._walk_pairs(inner, nested, inner._value_items())
            if not self._leaves_only or is_leaf(type(value)):
                yield full, value

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


class KeysMixin(Contract):
    """Key views and key algebra of :class:`~tensordict.TensorDictBase` (see the module docstring).

    Calls: ``_check_can_remove``, ``_del_str``, ``_get_str``, ``_items_level``, ``_keys_level``,
        ``_from_tensordict``, ``_missing``, ``_new_like``, ``_set_str``, ``_shallow_copy``,
        ``_tensordict``, ``_walk_to_parent``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ key views
    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> _KeysView:
        """Returns a live view of the keys; nested keys are tuples, listed before their parent.

        A lazy stack lists the keys that every member has; its ``valid_keys`` is this same
        method, under the name the well-known API keeps as a deprecated alias.

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
            >>> list(lazy_stack([TensorDict(a=1, b=2), TensorDict(a=1)]).valid_keys())
            ['a']
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
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterator:
        """Iterates over the values, in the order of :meth:`keys` called with the same arguments.

        Args:
            include_nested (bool, optional): include the entries of sub-tensordicts.
                Defaults to False.
            leaves_only (bool, optional): only the leaves. Defaults to False.
            is_leaf (callable, optional): takes a value's class, True for a leaf, as in
                :meth:`keys`. Defaults to None.

        Keyword Args:
            sort (bool, optional): follow the sorted keys. Defaults to False.

        Returns:
            A generator of tensors, sub-tensordicts and NonTensorData entries.

        Examples:
            >>> list(TensorDict({"b": torch.ones(1), "a": torch.zeros(1)}, [1]).values(sort=True))
            [tensor([0.]), tensor([1.])]
        """
        for _, value in self.keys(include_nested, leaves_only, is_leaf, sort=sort).pairs():
            yield value

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterator:
        """Iterates over ``(key, value)`` pairs, ordered as :meth:`keys` with the same arguments.

        Args:
            include_nested (bool, optional): include the entries of sub-tensordicts.
                Defaults to False.
            leaves_only (bool, optional): only the leaves. Defaults to False.
            is_leaf (callable, optional): takes a value's class, True for a leaf, as in
                :meth:`keys`. Defaults to None.

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
        yield from self.keys(include_nested, leaves_only, is_leaf, sort=sort).pairs()

    def __contains__(self, key) -> bool:
        if isinstance(key, (str, tuple)):
            return key in self.keys(include_nested=isinstance(key, tuple))
        msg = (
            "'key in tensordict' checks keys: use 'key in td.keys()' for a key, or compare "
            f"values explicitly; got {type(key).__name__}"
        )
        raise NotImplementedError(msg)

    def _value_items(self):
        """Hook of :meth:`values` and :meth:`items`: this level's ``(key, value)`` pairs, each
        value as ``_get_str`` gives it (and ``get`` from above), or None.

        None here: each value is got by its key. A dense tensordict gives its entries, a
        lazily opened one reading them a chunk at a time.
        """
        return None

    def _walk_items(self):
        """Hook of the key views: the ``(key, value)`` pairs of this level that a walk of the keys reads.

        Here the items of the level; a lazy stack gives its first member's leaves instead of
        stacking them (a walk only needs their types).
        """
        return self._items_level()

    def is_empty(self) -> bool:
        """Returns True when the tensordict holds no leaf: no tensor and no non-tensor value.

        Returns:
            True if no tensor nor non-tensor entry is found at any depth: sub-tensordicts
            without any count as empty.

        Examples:
            >>> TensorDict({"a": {}}, []).is_empty(), TensorDict({"a": 0}, []).is_empty()
            (True, False)
            >>> TensorDict({"a": {"b": {}, "c": "a string"}}, []).is_empty()
            False
        """
        for _, value in self._items_level():
            if not is_subtree(value) or not value.is_empty():
                return False
        return True

    @property
    def depth(self) -> int:
        """The number of levels of nested tensordicts below this one (empty ones do not count).

        Examples:
            >>> TensorDict({"a": 0}).depth, TensorDict({"a": {"b": {"c": 0}}}).depth
            (0, 2)
        """
        best = 0
        for _, value in self._items_level():
            if is_subtree(value) and not value.is_empty():
                best = max(best, 1 + inner_tensordict(value).depth)
        return best

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

    # ------------------------------------------------------------------ selecting and excluding
    def _check_restructure(self, method: str) -> None:
        """Hook: raises when ``method(inplace=True)`` may not change this tensordict's keys (a lazy view)."""

    def select(
        self: T,
        *keys: NestedKey,
        inplace: bool = False,
        strict: bool = True,
        as_tensordict: bool = False,
    ) -> T:
        """Returns a tensordict with only the given keys, sharing their entries.

        Args:
            *keys (NestedKey): the keys to keep; a string keeps a whole sub-tensordict.

        Keyword Args:
            inplace (bool, optional): remove the other keys from this tensordict. Defaults to False.
            strict (bool, optional): raise for a missing key, else skip it. Defaults to True.
            as_tensordict (bool, optional): a tensorclass instance returns the selection as a
                :class:`TensorDict` rather than as an instance of its class (whose other
                fields would be None); no effect on a tensordict. Defaults to False.

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
        if inplace:
            self._check_restructure("select")
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
            if sub is not True and is_subtree(value):
                inner = inner_tensordict(value)
                selected = inner._select_tree(sub, strict, prefix + (key,))
                value = selected if inner is value else type(value)._from_tensordict(selected)
            source[key] = value
        return self._new_like(source, self.batch_size)

    def exclude(self: T, *keys: NestedKey, inplace: bool = False) -> T:
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
        if inplace:
            self._check_restructure("exclude")
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

    def _walk_to_parent_copying(self, parts: tuple):
        """Like ``_walk_to_parent`` but replaces each sub-tensordict on the path by a shallow copy.

        A tensorclass on the path is copied too, around a shallow copy of its tensordict.
        """
        level = self
        for part in parts[:-1]:
            sub = level._get_str(part, None)
            if not is_subtree(sub):
                raise KeyError(part)
            inner = inner_tensordict(sub)
            copy = inner._shallow_copy()
            level._set_str(
                part,
                copy if inner is sub else type(sub)._from_tensordict(copy),
                inplace=False,
                validated=True,
            )
            level = copy
        return level

    def filter_non_tensor_data(self: T) -> T:
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

    def filter_empty_(self: T) -> T:
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
            if not is_subtree(value):
                continue
            if value.is_empty():
                self._check_can_remove(key, "remove the empty tensordict")
                self._del_str(key)
            else:
                inner_tensordict(value).filter_empty_()
        return self

    # ------------------------------------------------------------------ splitting by keys
    def _split_take(self, work, key_set, strict: bool, default, taken: list):
        """One output of ``split_keys``: moves the entries of ``key_set`` out of ``work``."""
        out = work._new_like({}, work.batch_size)
        if callable(key_set) and not isinstance(key_set, Mapping):
            chosen = []
            for key in work.keys(include_nested=True, leaves_only=True):
                value = work.get(key)
                if is_non_tensor(value) or not isinstance(value, torch.Tensor):
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
        *key_sets: Sequence[NestedKey] | Mapping | Callable,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
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
                msg = f"cannot split {canonical_key(taken[0])!r} out in place: the tensordict is locked"
                raise LockedError(msg)
            for key in taken:  # entry by entry: a lazy view refuses exclude(inplace=True)
                if self.get(key, None) is not None:
                    self.del_(key)
            work = self
        if reproduce_struct:
            nested = [k for k, v in self.items(include_nested=True) if is_subtree(v)]
            for out in outs:
                for key in nested:
                    if out.get(key, None) is None:
                        out.create_nested(key)
        else:
            work.filter_empty_()
        return (*outs, work)

    def separates(
        self: T,
        *keys: NestedKey,
        default: Any = NO_DEFAULT,
        strict: bool = True,
        filter_empty: bool = True,
    ) -> T:
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
                        f"separates() stored None under the missing key {canonical_key(parts)!r}: "
                        "its default does not fit the batch size. Starting with TensorDict 0.17, "
                        "this will raise the error of split_keys()",
                        FutureWarning,
                    )
                    out.set(parts, None)
        if present and self.is_locked:
            msg = f"cannot separate {canonical_key(present[0])!r}: the tensordict is locked"
            raise LockedError(msg)
        for parts in present:
            out.set(parts, self.get(parts))
        self.exclude(*present, inplace=True)
        if filter_empty:
            for parts in present:
                for depth in range(len(parts) - 1, 0, -1):
                    sub = self.get(parts[:depth], None)
                    if sub is not None and is_subtree(sub) and sub.is_empty():
                        self.del_(parts[:depth])
        return out

    # ------------------------------------------------------------------ renaming keys
    def flatten_keys(
        self: T,
        separator: str = ".",
        inplace: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> T:
        """Returns a tensordict whose nested keys are joined by ``separator`` into flat keys.

        Used as a context manager, ``with td.flatten_keys() as flat:``, the entries the block
        adds or rebinds are written back into this tensordict under their nested keys when
        the block ends (a new flat key is split at ``separator``).

        Args:
            separator (str, optional): joins the parts of a key. Defaults to ``"."``.
            inplace (bool, optional): replace the entries of this tensordict. Defaults to False.
            is_leaf (callable, optional): called with the class of each entry: the entries
                it accepts are the leaves, kept whole under their flat keys (a sub-tensordict
                too); a sub-tensordict it refuses is flattened, and any other entry it
                refuses is left out. Defaults to None: tensors and non-tensor entries are
                the leaves (:func:`~tensordict.is_leaf_nontensor`).

        Returns:
            A tensordict of the leaves and non-tensor entries (empty sub-tensordicts are dropped).

        Raises:
            KeyError: if two entries get the same flat key.
            RuntimeError: if ``inplace`` and the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(2)}, "c": torch.zeros(2)}, [2])
            >>> td.flatten_keys("/")
            TensorDict(batch_size=[2], fields={a/b: f32[], c: f32[]})
            >>> with td.flatten_keys("/") as flat:
            ...     flat["a/d"] = torch.ones(2)
            >>> td["a", "d"]
            tensor([1., 1.])
        """
        source = {}
        for parts, value in _flat_leaves(self, is_leaf or _is_leaf_nontensor, ()):
            name = separator.join(parts)
            if name in source:
                msg = (
                    f"flattening keys with separator {separator!r} makes two entries named {name!r}"
                )
                raise KeyError(msg)
            source[name] = value
        out = self._new_like(source, self.batch_size)
        if inplace:
            _replace_entries(self, "flatten_keys", source.items())
            return self
        return written_back(out, self, update_back(_flat_to_source(separator)))

    def unflatten_keys(self: T, separator: str = ".", inplace: bool = False) -> T:
        """Returns a tensordict whose keys are split at ``separator`` into nested keys (all levels).

        Used as a context manager, ``with td.unflatten_keys() as nested:``, the entries the
        block adds or rebinds are written back into this tensordict under the keys they were
        made from when the block ends (a new nested key is joined with ``separator``).

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
            parts = _split_key(key, separator)
            if is_tensordict(value):
                value = value.unflatten_keys(separator)
            if out.get(parts, None) is not None:
                msg = f"unflattening {key!r} with separator {separator!r} collides with another entry at {parts!r}"
                raise KeyError(msg)
            out.set(parts, value)
        if inplace:
            _replace_entries(self, "unflatten_keys", out._items_level())
            return self
        return written_back(out, self, update_back(_nested_to_source(separator)))

    def rename_keys(self: T, mapping: Mapping, *, strict: bool = True) -> T:
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
        return self._rename_keys(mapping, strict)

    def _rename_keys(self, mapping: Mapping, strict: bool):
        """Hook of :meth:`rename_keys`: the renamed tensordict, built here from the leaves.

        A lazy stack renames the keys of each member and stacks the results again.
        """
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
            if is_subtree(v) and not list(v.keys())
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
