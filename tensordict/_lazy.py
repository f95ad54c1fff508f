"""LazyStackedTensorDict: tensordicts stacked without copying, members that may differ.

A lazy stack keeps its members and the dimension they are stacked along. Its
keys are the keys every member has; reading a leaf stacks the members' leaves
(a nested tensor when their shapes differ and one is asked for); indexing along
the stack dimension returns members, other indices index each member; writing
splits the value across members. ``contiguous()`` makes a dense TensorDict.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._keys import NestedKey
from tensordict._lazy_index import LazyIndexMixin
from tensordict._lazy_members import LazyMembersMixin, ragged_batch_size
from tensordict._lazy_shape import LazyShapeMixin
from tensordict._lazy_values import LazyValuesMixin
from tensordict._nested_tensors import combine_leaves
from tensordict._nontensor import NonTensorData, NonTensorDataBase, stack_entries
from tensordict._ops.classes import CLASSES
from tensordict._ops.entries import _as_value, _check_batch, plain_tree
from tensordict._ops.keys import inner_tensordict
from tensordict._ops.memmap import check_storage, warn_storage_without_file
from tensordict._ops.split_stack import STACKERS
from tensordict._options import list_to_stack
from tensordict._printing import RaggedLeaf, collection_repr
from tensordict._td import TensorDict, _adopt_batch
from tensordict._typing import DeviceType, ShapeType
from tensordict._unbatched import is_unbatched, stack_unbatched
from tensordict.base import TensorDictBase
from tensordict.errors import (
    BatchSizeArgumentError,
    BatchSizeError,
    DensifyError,
    DimensionError,
    LockedError,
    TooFewInputsError,
)
from tensordict.memmap import _archive, _io
from tensordict.memmap import format as fmt
from tensordict.memmap.tensor import MemoryMappedTensor


def _stack_leaves(key, values: list, dim: int):
    shapes = {tuple(v.shape) for v in values}
    if len(shapes) > 1:
        msg = (
            f"cannot stack the entry {key!r} of a lazy stack: its members' shapes differ "
            f"({sorted(shapes)}); read them with get({key!r}, as_list=True), as_padded_tensor=True "
            "or as_nested_tensor=True, or index one member"
        )
        raise RuntimeError(msg)
    return torch.stack(values, dim)


def _split_list(value: list, size: torch.Size, dim: int) -> list | None:
    """The parts of a nested list (of shape ``size``) along ``dim``, or None if its lengths differ."""
    if type(value) is not list or not size or len(value) != size[0]:
        return None
    if dim == 0:
        return list(value)
    columns = [_split_list(v, size[1:], dim - 1) for v in value]
    if any(c is None for c in columns):
        return None
    return [[c[k] for c in columns] for k in range(size[dim])]


def _stacks_alike(tds: list) -> bool:
    """True for lazy stacks along one dim with as many members each, and one batch size."""
    first = tds[0]
    return all(
        getattr(type(t), "_is_lazy", False)
        and not is_non_tensor(t)
        and t.stack_dim == first.stack_dim
        and len(t.tensordicts) == len(first.tensordicts)
        and t.batch_size == first.batch_size
        for t in tds
    ) and bool(first.tensordicts)


def _dense_where_possible(cls, tds: list, d: int):
    """A dense stack of tensordicts with the same keys whose sub-tensordicts may stack lazily.

    None when the tensordicts are not plain TensorDicts of one batch size and one set of
    keys, or a leaf's shapes differ, or a key holds tensors in some and not in others.
    """
    first = tds[0]
    if any(type(t) is not TensorDict or t.batch_size != first.batch_size for t in tds):
        return None
    keys = first._keys_level()
    if any(set(t._keys_level()) != set(keys) for t in tds):
        return None
    out = {}
    for key in keys:
        values = [t._get_str(key, None) for t in tds]
        if is_unbatched(values[0]):
            size = first.batch_size
            out[key] = stack_unbatched(values, size[:d] + torch.Size((len(tds),)) + size[d:])
        elif all(isinstance(v, torch.Tensor) for v in values):
            if any(v.shape != values[0].shape for v in values):
                return None
            out[key] = torch.stack(values, d)
        elif all(is_non_tensor(v) for v in values):
            out[key] = stack_entries(values, d)
        elif all(_is_subtree_class(type(v)) for v in values):
            out[key] = cls.maybe_dense_stack(values, d)
        else:
            return None
    size = first.batch_size
    return TensorDict(out, size[:d] + torch.Size((len(tds),)) + size[d:], device=first.device)


def _is_subtree_class(klass: type) -> bool:
    """True for the class of a nested tensordict or tensorclass, False for leaves and non-tensor data."""
    return getattr(klass, "_is_tensor_collection", False) and not getattr(
        klass, "_is_non_tensor", False
    )


class LazyStackedTensorDict(
    LazyMembersMixin, LazyIndexMixin, LazyShapeMixin, LazyValuesMixin, TensorDictBase
):
    """Tensordicts stacked along a new batch dimension without copying; members may differ.

    The stack keeps its members (in :attr:`tensordicts`) and reads and writes
    through them. Its keys are the keys every member has; reading one stacks the
    members' values (see :meth:`get`). Indexing along the stack dimension picks
    members, other indices index each member, and writes are split across the
    members. :meth:`contiguous` gives a dense :class:`TensorDict`.

    Args:
        *tensordicts (TensorDictBase): the members, or one list or tuple of them.
            They must share their batch size; they are kept, not copied.

    Keyword Args:
        stack_dim (int, optional): the position of the new dimension in the
            stack's batch size, from ``-n - 1`` to ``n`` for members with ``n``
            batch dimensions (a negative one counts from the end). Defaults to 0.
        stack_dim_name (str, optional): the name of the new dimension (see
            :attr:`names`). Defaults to ``None``.
        batch_size (sequence of int, optional): without members, the batch size
            the members would have (the stack's has a 0 at ``stack_dim``); with
            members, the stack's batch size, checked. Defaults to ``None``.
        device (torch.device, optional): without members, the stack's device;
            with members, their common device is the stack's. Defaults to ``None``.
        **kwargs: accepted for compatibility and ignored.

    Raises:
        RuntimeError: if the members' batch sizes differ (naming both), or
            ``batch_size`` is not the stack's.
        TypeError: if a member after the first is not a tensordict.
        IndexError: if ``stack_dim`` is out of range.

    Examples:
        >>> a = TensorDict({"obs": torch.zeros(3), "x": torch.zeros(2)}, [])
        >>> b = TensorDict({"obs": torch.ones(3)}, [])
        >>> stack = LazyStackedTensorDict(a, b)
        >>> stack["obs"].shape, list(stack.keys())
        (torch.Size([2, 3]), ['obs'])
        >>> LazyStackedTensorDict(stack_dim=1, batch_size=[3]).batch_size
        torch.Size([3, 0])
    """

    __slots__ = {
        "tensordicts": """The list of members, in stack order; the stack works through them.

        It is the stack's own list: changing it (appending, removing or replacing
        a member) does not update the batch size, so change members through the
        stack instead.

        Examples:
            >>> a, b = TensorDict({}, []), TensorDict({}, [])
            >>> lazy_stack([a, b]).tensordicts[1] is b
            True
        """,
        "_stack_dim": None,
        "_stack_dim_name": None,
        "_batch_size": None,
        "_mm": None,
        "_device": None,
        "__weakref__": None,
    }
    _is_lazy = True

    def __init__(
        self,
        *tensordicts: TensorCollection | Sequence[TensorCollection],
        stack_dim: int = 0,
        stack_dim_name: str | None = None,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        strict_shape: bool = False,
        **kwargs: Any,
    ) -> None:
        if len(tensordicts) == 1 and isinstance(tensordicts[0], (list, tuple)):
            tensordicts = tuple(tensordicts[0])
        members = list(tensordicts)
        for i, member in enumerate(members):
            if not is_tensor_collection(member):
                msg = (
                    f"member {i} of a lazy stack must be a tensordict, got {type(member).__name__}"
                )
                raise TypeError(msg)
        if members:
            # a NonTensorStack (a subclass) keeps one batch size for all its values
            size = ragged_batch_size(members, strict_shape or is_non_tensor(self))
        else:
            size = torch.Size(() if batch_size is None else batch_size)
        ndim = len(size)
        if not -ndim - 1 <= stack_dim <= ndim:
            msg = f"stack_dim {stack_dim} is out of range for members with {ndim} batch dimensions"
            raise DimensionError(msg)
        stack_dim = stack_dim + ndim + 1 if stack_dim < 0 else stack_dim
        self.tensordicts = members
        self._stack_dim = stack_dim
        self._stack_dim_name = stack_dim_name
        self._batch_size = size[:stack_dim] + torch.Size((len(members),)) + size[stack_dim:]
        self._mm = None
        self._device = None if members or device is None else torch.device(device)
        if members and batch_size is not None and torch.Size(batch_size) != self._batch_size:
            msg = (
                f"batch_size {list(batch_size)} does not match the batch size "
                f"{list(self._batch_size)} of the stacked members"
            )
            raise BatchSizeError(msg)

    @classmethod
    def _stack_members(cls, tds, dim: int = 0, out=None, strict_shape: bool = False):
        stack = cls(*tds, stack_dim=dim, strict_shape=strict_shape)
        if out is not None:
            out.update_(stack)
            return out
        return stack

    @classmethod
    def maybe_dense_stack(
        cls,
        tds: Sequence[TensorCollection],
        dim: int = 0,
        *,
        out: TensorDictBase | None = None,
    ) -> TensorDictBase:
        """Stacks densely what can be stacked densely, lazily the rest.

        Lazy stacks along one dim, with as many members each, are stacked member by
        member: when every such stack is dense, the result is a lazy stack of them (its
        stack dim moved past ``dim``). Other tensordicts are stacked with
        ``torch.stack`` (lazy ones made dense first); when that fails, tensordicts with
        the same keys give a dense :class:`TensorDict` whose sub-tensordicts are stacked
        the same way (a sub-tensordict whose members differ becomes a lazy stack).
        Otherwise the result is a lazy stack of the tensordicts as given.

        Args:
            tds (sequence of TensorDictBase): the members, with one batch size.
            dim (int, optional): the new batch dimension. Defaults to 0.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict of the stacked batch size that the
                stack is written into in place, and returned. Defaults to None.

        Returns:
            A :class:`TensorDict`, or a :class:`LazyStackedTensorDict`, or ``out``.

        Raises:
            RuntimeError: if ``tds`` is empty or the batch sizes differ.
            IndexError: if ``dim`` is out of range.
            TypeError: if a member is not a tensordict.

        Examples:
            >>> a, b = TensorDict({"x": torch.zeros(2)}, [2]), TensorDict({"x": torch.ones(2)}, [2])
            >>> type(LazyStackedTensorDict.maybe_dense_stack([a, b])).__name__
            'TensorDict'
            >>> type(LazyStackedTensorDict.maybe_dense_stack([a, TensorDict({}, [2])])).__name__
            'LazyStackedTensorDict'
            >>> c = TensorDict({"x": torch.zeros(2), "sub": {"y": torch.zeros(2)}}, [2])
            >>> d = TensorDict({"x": torch.zeros(2), "sub": {"z": torch.zeros(2)}}, [2])
            >>> out = LazyStackedTensorDict.maybe_dense_stack([c, d])
            >>> type(out).__name__, type(out.get("sub")).__name__
            ('TensorDict', 'LazyStackedTensorDict')
        """
        if out is not None:
            return torch.stack(list(tds), dim, out=out)
        tds = list(tds)
        if not tds:
            msg = "maybe_dense_stack needs at least one tensordict"
            raise TooFewInputsError(msg)
        ndim = tds[0].batch_dims
        if not -ndim - 1 <= dim <= ndim:
            msg = f"stack dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim + 1 if dim < 0 else dim
        if _stacks_alike(tds):
            sd = tds[0].stack_dim
            columns = zip(*(t.tensordicts for t in tds))
            members = [cls.maybe_dense_stack(list(col), d if d <= sd else d - 1) for col in columns]
            if not any(getattr(type(m), "_is_lazy", False) for m in members):
                return cls(*members, stack_dim=sd + 1 if d <= sd else sd)
            return cls(*tds, stack_dim=d)
        try:
            return torch.stack(
                [t.contiguous() if getattr(type(t), "_is_lazy", False) else t for t in tds], d
            )
        except (RuntimeError, KeyError):
            pass
        dense = _dense_where_possible(cls, tds, d)
        # lazy_stack keeps instances of one tensorclass an instance of that class
        return lazy_stack(tds, d) if dense is None else dense

    # ------------------------------------------------------------------ properties
    @property
    def stack_dim(self) -> int:
        """The batch dimension along which the members are stacked, never negative.

        Returns:
            An int from 0 to ``batch_dims - 1``.

        Raises:
            AttributeError: on assignment: the property is read-only.

        Examples:
            >>> lazy_stack([TensorDict({}, [3]), TensorDict({}, [3])], dim=-1).stack_dim
            1
        """
        return self._stack_dim

    @property
    def _has_exclusive_keys(self) -> bool:
        # Kept for torchrl, whose collectors and batched environments read it: True when
        # the members' nested keys differ (some member has a key another lacks).
        members = self.tensordicts
        if len(members) < 2:
            return False
        first = set(members[0].keys(True, True))
        return any(set(member.keys(True, True)) != first for member in members[1:])

    @property
    def batch_size(self) -> torch.Size:
        """The members' batch size with the number of members inserted at :attr:`stack_dim`.

        Assigning a new size keeps the number of members at the stack dimension
        and gives every member the new size without it, one member after the
        other (each member checks its own entries).

        Returns:
            The batch size, a ``torch.Size``.

        Raises:
            RuntimeError: on assignment, if the new size does not hold the number of
                members at the stack dimension, or if a member refuses its new size
                (it is locked, or an entry does not fit).
            TypeError: on assignment, if the new size is not an iterable of ints.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3, 4)}, [3]) for _ in range(2)])
            >>> stack.batch_size = [2, 3, 4]
            >>> stack.batch_size, stack.tensordicts[0].batch_size
            (torch.Size([2, 3, 4]), torch.Size([3, 4]))
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: ShapeType) -> None:
        new = torch.Size(value)
        if new == self._batch_size:
            return
        d = self._stack_dim
        if len(new) <= d or new[d] != len(self.tensordicts):
            msg = f"the batch size of a lazy stack must keep {len(self.tensordicts)} at the stack dimension {d}, got {list(new)}"
            raise RuntimeError(msg)
        member_size = new[:d] + new[d + 1 :]
        for member in self.tensordicts:
            member.batch_size = member_size
        self._batch_size = new

    def _check_to_batch_size(self) -> None:
        # a lazy stack's batch size follows its members: to() cannot set it
        msg = (
            f"Cannot pass batch-size to to() of a {type(self).__name__}: its batch size is its "
            "members' with the stack dim; call to() without batch_size, then reshape or densify"
        )
        raise BatchSizeArgumentError(msg)

    @property
    def device(self) -> torch.device | None:
        """The members' common device, or ``None`` when they differ (or have none).

        Returns:
            A ``torch.device``, or ``None``.

        Raises:
            AttributeError: on assignment: the property is read-only.

        Examples:
            >>> lazy_stack([TensorDict({}, [], device="cpu"), TensorDict({}, [], device="cpu")]).device
            device(type='cpu')
            >>> lazy_stack([TensorDict({}, [], device="cpu"), TensorDict({}, [])]).device is None
            True
        """
        if not self.tensordicts:
            # NonTensorStack's own empty stacks do not set the slot
            return getattr(self, "_device", None)
        devices = {m.device for m in self.tensordicts}
        return devices.pop() if len(devices) == 1 else None

    @property
    def names(self) -> list:
        """The names of the batch dimensions: the first member's, with the stack dim's inserted.

        The stack dimension is named ``stack_dim_name`` (``None`` by default); the other
        dimensions have the names of the members' dimensions, read from the first member.
        Assigning a list (one name or ``None`` per batch dim) names the stack dim and
        every member's dims; assigning ``None`` removes every name.

        Returns:
            A new list with a str or ``None`` per batch dimension.

        Raises:
            ValueError: on assignment, if there is not one name per batch dim, or a
                name repeats.

        Examples:
            >>> a, b = TensorDict({}, [3], names=["t"]), TensorDict({}, [3], names=["t"])
            >>> LazyStackedTensorDict(a, b, stack_dim_name="env").names, LazyStackedTensorDict(a, b).names
            (['env', 't'], [None, 't'])
            >>> stack = LazyStackedTensorDict(a, b)
            >>> stack.names = ["env", "time"]
            >>> stack.names, b.names
            (['env', 'time'], ['time'])
        """
        if self.tensordicts:
            names = list(self.tensordicts[0].names)
        else:
            names = [None] * (len(self._batch_size) - 1)
        names.insert(self._stack_dim, self._stack_dim_name)
        return names

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        self._set_names([None] * len(self._batch_size) if value is None else list(value))

    @property
    def is_locked(self) -> bool:
        """True when every member is locked (and there is one).

        Assigning True or False locks or unlocks every member (each with its
        sub-tensordicts).

        Returns:
            True when every member is locked.

        Examples:
            >>> stack = lazy_stack([TensorDict({}, []), TensorDict({}, [])])
            >>> stack.is_locked = True
            >>> stack.is_locked, stack.tensordicts[1].is_locked
            (True, True)
        """
        return bool(self.tensordicts) and all(m.is_locked for m in self.tensordicts)

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        for member in self.tensordicts:
            member._propagate_lock(locked)

    def unlock_(self) -> LazyStackedTensorDict:
        """Unlocks every member (each with its sub-tensordicts) and returns the stack.

        Returns:
            The stack itself.

        Raises:
            RuntimeError: if a member is a sub-tensordict of a locked tensordict, as the
                members of ``stack.get("sub")`` of a locked stack are (LockedError):
                unlock the stack they come from instead.

        Examples:
            >>> rows = [TensorDict({"sub": {"a": torch.zeros(())}}, []) for _ in range(2)]
            >>> stack = lazy_stack(rows).lock_()
            >>> stack.get("sub").unlock_()
            Traceback (most recent call last):
                ...
            tensordict.errors.LockedError: cannot unlock a stack of sub-tensordicts while ...
            >>> stack.unlock_().get("sub").is_locked
            False
        """
        return super().unlock_()

    def _check_unlock(self) -> None:
        if self._held_by_a_locked_parent():
            msg = (
                "cannot unlock a stack of sub-tensordicts while their parents are locked; "
                "unlock the tensordict they come from instead"
            )
            raise LockedError(msg)

    def _held_by_a_locked_parent(self) -> bool:
        return any(
            hasattr(m, "_held_by_a_locked_parent") and m._held_by_a_locked_parent()
            for m in self.tensordicts
        )

    # ------------------------------------------------------------------ primitives
    def _keys_level(self):
        if not self.tensordicts:
            return []
        first = self.tensordicts[0]
        others = [set(m._keys_level()) for m in self.tensordicts[1:]]
        return [k for k in first._keys_level() if all(k in o for o in others)]

    def _items_level(self):
        return [(key, self._get_str(key, NO_DEFAULT)) for key in self._keys_level()]

    def _tree_items(self, sort: bool = False) -> list:
        # the walk describes the members by position, whatever their keys
        return list(enumerate(self.tensordicts))

    def _tree_info(self) -> dict:
        return {
            "stack_dim": self.stack_dim,
            "stack_dim_name": self._stack_dim_name,
            "is_locked": self.is_locked,
        }

    def _tree_write_back(self, key: str, value):
        # a leaf read from a stack is a stacked copy: written back into the members
        def write_back():
            with torch.no_grad():
                self.set_(key, value)

        return write_back

    def _walk_items(self):
        """What a walk of the keys needs: the first member's leaf (its type), sub-stacks whole.

        Walking keys never stacks leaves, so members whose leaves differ in shape list
        their keys too.
        """
        first = self.tensordicts[0] if self.tensordicts else None
        while getattr(type(first), "_is_lazy", False) and first.tensordicts:
            first = first.tensordicts[0]  # down to a member whose leaves are its own
        items = []
        for key in self._keys_level():
            value = inner_tensordict(first)._get_str(key, None)
            if isinstance(value, torch.Tensor) or is_non_tensor(value):
                items.append((key, value))
            else:
                items.append((key, self._get_str(key, NO_DEFAULT)))
        return items

    def _get_str(self, key: str, default):
        values = [m._get_str(key, None) for m in self.tensordicts]
        if any(v is None for v in values):
            if default is NO_DEFAULT:
                raise self._missing((key,), 0, self)
            return default
        first = values[0]
        if is_unbatched(first):
            return stack_unbatched(values, self.batch_size)
        if isinstance(first, torch.Tensor):
            return _stack_leaves(key, values, self._stack_dim)
        if is_non_tensor(first):
            return stack_entries(values, self._stack_dim)
        if getattr(type(first), "_is_tensorclass", False):
            # the members' instances, as one instance of their class over a lazy stack
            inner = LazyStackedTensorDict(
                *[v._tensordict for v in values],
                stack_dim=self._stack_dim,
                stack_dim_name=self._stack_dim_name,
            )
            return type(first)._from_tensordict(inner)
        return LazyStackedTensorDict(
            *values, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
        )

    def _read_str(self, key: str, how):
        """Hook of :meth:`get` with ``as_list``, ``as_padded_tensor`` or ``as_nested_tensor``.

        The members' leaves (or what inner stacks give for them) are combined along a new
        first dim, whatever the stack dim, by :func:`~tensordict._nested_tensors.combine_leaves`;
        sub-tensordicts and non-tensor entries are stacked as :meth:`get` stacks them.
        """
        if is_non_tensor(self):  # a NonTensorStack (a subclass) has no keys to read
            return super()._read_str(key, how)
        values = [m._read_str(key, how) for m in self.tensordicts]
        if not values or any(v is None for v in values):
            return None
        first = values[0]
        if isinstance(first, list) or (
            isinstance(first, torch.Tensor) and not is_tensor_collection(first)
        ):
            return combine_leaves(key, values, how)
        return self._get_str(key, None)

    def _entry_class(self, key) -> type:
        """Hook of :meth:`entry_class`: the class every member stores at ``key``, when they agree.

        Members that store sub-tensordicts, or classes that differ, leave it to the stacked entry.
        """
        if self.tensordicts:
            classes = {m.entry_class(key) for m in self.tensordicts}
            if len(classes) == 1 and not _is_subtree_class(next(iter(classes))):
                return classes.pop()
        return super()._entry_class(key)

    def _item_shape(self, key) -> torch.Size:
        """Hook of :meth:`get_item_shape`: the members' shapes with the stack dim, ``-1`` where they differ.

        Nothing is stacked; members whose entries differ in their number of dims give ``[-1]``.
        """
        if not self.tensordicts:
            return super()._item_shape(key)
        shapes = [m.get_item_shape(key) for m in self.tensordicts]
        first = shapes[0]
        if any(len(s) != len(first) for s in shapes):
            return torch.Size([-1])
        dims = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(first)]
        dims.insert(self.stack_dim, len(shapes))
        return torch.Size(dims)

    def _rename_keys(self, mapping, strict: bool):
        """Hook of :meth:`rename_keys`: each member's keys renamed, the members stacked again."""
        members = [m.rename_keys(mapping, strict=strict) for m in self.tensordicts]
        return self._restack(members, self._stack_dim)

    def _set_str(
        self, key: str, value: Any, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        if not validated and type(value) is list and list_to_stack():
            parts = _split_list(value, self._batch_size, self._stack_dim)
            if parts is not None:
                # one item per member: members may take values of different shapes
                for member, part in zip(self.tensordicts, parts):
                    member._set_str(key, part, inplace=inplace, validated=False)
                return
        if not validated:
            if isinstance(value, Mapping) and not is_tensor_collection(value):
                value = TensorDict(value, self._batch_size)
            value = _as_value(key, value, None)
            if isinstance(value, NonTensorDataBase) and not value.batch_size:
                value = value._with(self._batch_size)  # one value for every element
            elif is_tensor_collection(value) and not is_non_tensor(value):
                shape, size = value.batch_size, self._batch_size
                if len(shape) < len(size) and size[: len(shape)] == shape:
                    value = _adopt_batch(key, value, size)  # as a dense tensordict takes it
            _check_batch(key, value, self._batch_size)
        if isinstance(value, NonTensorDataBase):
            parts = [
                value._with(
                    value.batch_size[: self._stack_dim] + value.batch_size[self._stack_dim + 1 :]
                )
            ] * len(self.tensordicts)
        else:
            parts = value.unbind(self._stack_dim)
        for member, part in zip(self.tensordicts, parts):
            member._set_str(key, part, inplace=inplace, validated=False)

    def _del_str(self, key: str) -> None:
        if self.is_locked:
            msg = f"cannot delete {key!r}: the lazy stack is locked; call unlock_() first"
            raise LockedError(msg)
        for member in self.tensordicts:
            member._del_str(key)

    def _takes_new_levels(self) -> bool:
        """Hook of :meth:`create_nested`: a lazy stack on the path of a new key is replaced."""
        return False

    def _new_like(self, source: dict, batch_size, names=NO_DEFAULT, device=NO_DEFAULT):
        return TensorDict._new_unsafe(
            source, batch_size, self.device if device is NO_DEFAULT else device, None
        )

    @classmethod
    def _tree_build(cls, entries: dict, info: dict):
        members = [entries[str(i)] for i in range(len(entries))]
        return cls(*members, stack_dim=info["stack_dim"], stack_dim_name=info.get("stack_dim_name"))

    def _tree_like(self, entries: dict, device=None):
        members = [entries[i] for i in range(len(entries))]
        if not members:
            return self._shallow_copy()
        return type(self)(*members, stack_dim=self.stack_dim, stack_dim_name=self._stack_dim_name)

    def _member_batch_size(self) -> torch.Size:
        """The batch size of every member: the stack's without the stack dim."""
        d = self._stack_dim
        return self._batch_size[:d] + self._batch_size[d + 1 :]

    def _shallow_copy(self):
        if not self.tensordicts:
            return self._empty_stack(self._member_batch_size(), self._stack_dim)
        return LazyStackedTensorDict(
            *[m._shallow_copy() for m in self.tensordicts],
            stack_dim=self._stack_dim,
            stack_dim_name=self._stack_dim_name,
        )

    def _fast_apply(
        self,
        fn,
        *others,
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace=False,
        **kwargs,
    ):
        if batch_size is not None and batch_size != self._batch_size:
            return self.contiguous()._fast_apply(
                fn,
                *others,
                batch_size=batch_size,
                names=names,
                device=device,
                inplace=inplace,
                **kwargs,
            )
        if not self.tensordicts:
            return self if inplace else self._shallow_copy()
        split_others = [o.unbind(self._stack_dim) for o in others]
        results = [
            member._fast_apply(
                fn, *[o[i] for o in split_others], device=device, inplace=inplace, **kwargs
            )
            for i, member in enumerate(self.tensordicts)
        ]
        if inplace:
            return self
        return LazyStackedTensorDict(
            *results, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
        )

    # ------------------------------------------------------------------ building stacks
    def _restack(self, members, stack_dim: int) -> LazyStackedTensorDict:
        return LazyStackedTensorDict(
            *members, stack_dim=stack_dim, stack_dim_name=self._stack_dim_name
        )

    def _emptied(self, factory, size: torch.Size, kwargs: dict) -> LazyStackedTensorDict:
        """Hook of ``empty_lazy=True``: a stack along this dim of ``size[dim]`` members.

        ``new_empty`` gives empty members (no keys), to be filled one by one; the other
        factories (``new_zeros``, ``new_ones``, ``new_full``) give members shaped like the
        first member, filled by the factory. A stack whose dim is not a dim of ``size``
        gives a dense level, as without ``empty_lazy``.
        """
        dim = self._stack_dim
        if dim >= len(size):
            return self._filled(factory, size, kwargs)
        member = size[:dim] + size[dim + 1 :]
        if factory is torch.Tensor.new_empty or not self.tensordicts:
            device = kwargs.get("device", self.device)
            members = [TensorDict({}, member, device=device) for _ in range(size[dim])]
        else:
            first = self.tensordicts[0]
            members = [
                first._new_factory(factory, (member,), dict(kwargs, empty_lazy=True))
                for _ in range(size[dim])
            ]
        if not members:
            return self._empty_stack(member, dim)
        return LazyStackedTensorDict(*members, stack_dim=dim)

    def _empty_stack(self, batch_size: torch.Size, stack_dim: int) -> LazyStackedTensorDict:
        """A stack without members whose members would have batch size ``batch_size``."""
        return LazyStackedTensorDict(stack_dim=stack_dim, batch_size=batch_size, device=self.device)

    def _stack_of(self, members, stack_dim: int) -> LazyStackedTensorDict:
        """A new lazy stack of ``members`` along ``stack_dim``, without a stack dim name."""
        return LazyStackedTensorDict(*members, stack_dim=stack_dim)

    def _densify(self, layout: torch.layout):
        """Hook of :meth:`densify`: the members stacked, leaves of differing shapes as nested tensors.

        Raises:
            DensifyError: if the stack dim is not 0 (a ``NotImplementedError``).
        """
        if self.stack_dim != 0:
            msg = f"densify needs a lazy stack along dim 0, this one is stacked along dim {self.stack_dim}; call to_lazystack(0) first"
            raise DensifyError(msg)
        members = self.tensordicts
        out = {}
        for key in self.keys():
            values = [member.get(key) for member in members]
            if all(isinstance(v, torch.Tensor) for v in values):
                if all(v.shape == values[0].shape for v in values):
                    out[key] = torch.stack(values, 0)
                else:
                    out[key] = torch.nested.nested_tensor(values, layout=layout)
            elif all(is_tensor_collection(v) and not isinstance(v, NonTensorData) for v in values):
                out[key] = lazy_stack(values, 0).densify(layout)
            else:
                out[key] = self.get(key)
        return self._new_like(out, self.batch_size)

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> TensorDict:
        """Returns a dense TensorDict with every key the members share stacked.

        ``to_tensordict`` is the same method. Every tensor is a new one, sub-stacks
        are made dense too, and a key that only some members have is left out.
        The new tensordict has the stack's batch size, device and :attr:`names`,
        and is neither locked nor memory-mapped.

        Keyword Args:
            canonical (bool, optional): every stacked tensor has row-major strides
                already. Defaults to False.
            inplace (bool, optional): not supported: a stack stays a stack. Defaults to
                False.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            RuntimeError: if the members' tensors of one key differ in shape (naming
                the key).
            NotImplementedError: with ``inplace=True``.

        Examples:
            >>> a = TensorDict({"x": torch.zeros(2), "only_a": torch.zeros(2)}, [2])
            >>> dense = lazy_stack([a, TensorDict({"x": torch.ones(2)}, [2])]).contiguous()
            >>> type(dense).__name__, dense["x"].tolist(), list(dense.keys())
            ('TensorDict', [[0.0, 0.0], [1.0, 1.0]], ['x'])
        """
        if inplace:
            msg = "contiguous(inplace=True) is not supported on a lazy stack: use contiguous()"
            raise NotImplementedError(msg)
        source = {}
        for key in self._keys_level():
            value = self._get_str(key, NO_DEFAULT)
            if getattr(type(value), "_is_lazy", False):
                value = value.contiguous()
            source[key] = value
        return TensorDict._new_unsafe(source, self._batch_size, self.device, self.names)

    def is_contiguous(self) -> bool:
        """Returns False: a lazy stack's leaves are stacked on each read, never stored as one.

        Returns:
            False, whatever the members' leaves are.

        Examples:
            >>> lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))]).is_contiguous()
            False
        """
        return False

    def _as_dense(self) -> TensorDict:
        # The ops along a batch dim (softmax, cummax, quantile, ...) need the stacked leaves.
        return self.contiguous()

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Returns a dense :class:`TensorDict` copy (see :meth:`contiguous`), plain at every depth.

        Keyword Args:
            retain_none (bool, optional): write the ``None`` fields of the tensorclasses inside
                as ``None`` entries. Defaults to ``None`` (no).

        Returns:
            A new :class:`TensorDict`.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))])
            >>> type(stack.to_tensordict()).__name__, stack.to_tensordict().batch_size
            ('TensorDict', torch.Size([2]))
        """
        return plain_tree(self.contiguous(), retain_none)

    def to_dict(self, **kwargs: Any) -> dict:
        """Returns a nested dict of the stacked entries, as ``contiguous().to_dict()``.

        Keyword Args:
            **kwargs: passed to :meth:`TensorDictBase.to_dict` (``retain_none``,
                ``convert_tensors``).

        Returns:
            A new dict of new tensors (or lists with ``convert_tensors``) and nested dicts.

        Raises:
            RuntimeError: if the members' tensors of one key differ in shape.
            TypeError: if an unknown keyword is given.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.tensor(0)}, []), TensorDict({"x": torch.tensor(1)}, [])])
            >>> stack.to_dict(convert_tensors=True)
            {'x': [0, 1]}
        """
        return self.contiguous().to_dict(**kwargs)

    def _repr_names_class(self) -> bool:
        """Hook of the compact ``repr``: inside another, a lazy stack names its class (``LazyStackedTensorDict[3]{...}``)."""
        return True

    def _stored_tensors(self):
        for member in self.tensordicts:
            yield from member._stored_tensors()

    def _write_matching_leaves(self, fn, other) -> None:
        # ``get`` gives stacked copies: apply_ reaches each member's own tensors.
        self.apply_(fn, other)

    def data_ptr(self, *, storage: bool = False) -> TensorDictBase:
        """Returns the data pointers of each member, in a sub-tensordict keyed by its index.

        A lazy stack's leaves have no single data pointer, so each member gives its own
        :meth:`TensorDictBase.data_ptr`, under the key ``"0"``, ``"1"``, ...

        Keyword Args:
            storage (bool, optional): give the pointers of the leaves' untyped storages
                rather than of their first elements. Defaults to False.

        Returns:
            A tensordict with ``batch_size=[]`` on the CPU, built by the first member.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))])
            >>> int(stack.data_ptr()["1", "a"]) == stack.tensordicts[1]["a"].data_ptr()
            True
        """
        source = {str(i): m.data_ptr(storage=storage) for i, m in enumerate(self.tensordicts)}
        return self.tensordicts[0]._new_like(
            source, torch.Size(()), names=None, device=torch.device("cpu")
        )

    def _repr_items(self):
        items = []
        for key in self._keys_level():
            values = [m._get_str(key, None) for m in self.tensordicts]
            if isinstance(values[0], torch.Tensor) and any(
                v.shape != values[0].shape for v in values
            ):
                # Members' tensors that cannot stack: show the shape, -1 where they differ.
                items.append((key, RaggedLeaf(values, self._stack_dim)))
            else:
                items.append((key, self._get_str(key, NO_DEFAULT)))
        return items

    def _repr_detail_extra(self) -> dict:
        common = set(self._keys_level())
        exclusive = [
            (str(i), [(k, v) for k, v in m._items_level() if k not in common])
            for i, m in enumerate(self.tensordicts)
        ]
        return {
            "exclusive": [(i, items) for i, items in exclusive if items],
            "tail": [f"stack_dim={self._stack_dim}"],
        }

    def __repr__(self) -> str:
        return collection_repr(self, tail=f"stack_dim={self._stack_dim}")

    # ------------------------------------------------------------------ memory mapping
    def _store_entry(self, key: str, value) -> None:
        msg = f"cannot store {key!r} in a lazy stack as one entry: each member holds its own"
        raise RuntimeError(msg)

    def _member_folder(self, folder: str | None, i: int) -> str | None:
        return None if folder is None else os.path.join(folder, str(i))

    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        for i, member in enumerate(self.tensordicts):
            member._memmap_plan(self._member_folder(folder, i), plan, robust_key, existsok, like)
        plan.folders.append((folder, self))

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        members = [
            m._memmap_rebuild(self._member_folder(folder, i), replacement, inplace, robust_key)
            for i, m in enumerate(self.tensordicts)
        ]
        if inplace:
            self.tensordicts = members
            out = self
        else:
            out = LazyStackedTensorDict(
                *members, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
            )
        out._mm = _io.Level(folder, robust_key=robust_key)
        return out

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        for i, member in enumerate(self.tensordicts):
            member._memmap_write_meta(os.path.join(folder, str(i)), robust_key)
        self._mm.write(
            {
                "_type": fmt.LAZY_TYPE,
                "_format_version": fmt.FORMAT_VERSION,
                "_class": fmt.LAZY_CLASS,
                "stack_dim": self._stack_dim,
                "stack_dim_name": self._stack_dim_name,
            },
            folder,
        )

    def _memmap_refresh(self, options) -> None:
        folder = self._mm.path
        if folder is not None:
            self._memmap_refresh_from(*fmt.read_meta(folder), options)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        folder = self._mm.path if self._mm is not None else None
        if folder is None or fmt.level_kind(folder, meta) != fmt.KIND_LAZY:
            return False
        fmt.parse_lazy_level(folder, meta)
        paths = fmt.lazy_members(folder)
        members = self.tensordicts
        for i, path in enumerate(paths):
            if i < len(members) and members[i]._mm is not None:
                members[i] = _io.load_child(path, options, members[i])
            else:
                members.append(_io.load_child(path, options))
        del members[len(paths) :]
        self._members_changed()
        self._mm.meta, self._mm.stat = meta, stat
        return True

    def _memmap_missing(self, robust_key) -> None:
        for i, member in enumerate(self.tensordicts):
            if member._mm is None:
                member.memmap_(os.path.join(self._mm.path, str(i)))
            elif not member.is_memmap():
                member._memmap_missing(robust_key)

    def _memmap_load_into(self, loaded) -> None:
        self.tensordicts = loaded.tensordicts
        self._stack_dim = loaded._stack_dim
        self._stack_dim_name = loaded._stack_dim_name
        self._batch_size = loaded._batch_size
        self._mm = loaded._mm

    def is_memmap(self) -> bool:
        """True when the stack was memory-mapped and every member is.

        An index of a memory-mapped stack that picks memory-mapped members counts
        as memory-mapped too.

        Returns:
            True when memory-mapped.

        Examples:
            >>> stack = lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 2)
            >>> stack.is_memmap(), stack.memmap().is_memmap()
            (False, True)
        """
        return self._mm is not None and all(m.is_memmap() for m in self.tensordicts)

    def make_memmap(
        self,
        key: NestedKey,
        shape: ShapeType,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = None,
    ) -> torch.Tensor:
        """Adds a zero-filled memory-mapped entry at ``key``: each member gets its slice in its own file.

        What differs from :meth:`TensorDictBase.make_memmap`: ``shape`` is the
        stacked shape; every member gets a zero-filled entry of that shape
        without the :attr:`stack_dim` item, in its own folder when the stack has
        one. The members are changed one after the other. The returned tensor is
        the members' entries stacked, a copy: write through the stack or the
        members to change the files.

        Args:
            key (NestedKey): the new key; a tuple creates missing sub-tensordicts.
            shape (torch.Size or sequence of int): the stacked shape; without the
                stack dimension it must start with the members' batch size.

        Keyword Args:
            dtype (torch.dtype, optional): the dtype. Defaults to ``None``, which uses
                ``torch.get_default_dtype()``.
            robust_key (bool, optional): passed to each member; ``None`` uses each
                member's own key encoding. Defaults to ``None``.

        Returns:
            A new tensor of the stacked zeros (not memory-mapped).

        Raises:
            RuntimeError: if the stack is not memory-mapped, if a member already has
                the key, or if the shape without the stack dimension does not start
                with the members' batch size.
            TypeError: if ``shape`` is not a sequence of ints, ``dtype`` not a
                ``torch.dtype``, or the key not a string or a tuple of strings.
            ValueError: if the key cannot be stored in a member's folder (not a file
                name with ``robust_key=False``, or a file name another entry uses).

        Examples:
            >>> stack = lazy_stack([TensorDict({}, [2]), TensorDict({}, [2])]).memmap("stack")
            >>> stack.make_memmap("x", (2, 2, 3)).shape
            torch.Size([2, 2, 3])
        """
        shape = torch.Size(shape)
        self._require_memmap("make_memmap()")
        member_shape = shape[: self._stack_dim] + shape[self._stack_dim + 1 :]
        parts = [
            m.make_memmap(key, member_shape, dtype=dtype, robust_key=robust_key)
            for m in self.tensordicts
        ]
        return torch.stack(parts, self._stack_dim)

    def make_memmap_from_tensor(
        self,
        key: NestedKey,
        tensor: torch.Tensor,
        *,
        copy_data: bool = True,
        robust_key: bool | None = None,
    ) -> torch.Tensor:
        """Adds a memory-mapped copy of ``tensor`` at ``key``: each member gets its slice in its own file.

        What differs from :meth:`TensorDictBase.make_memmap_from_tensor`: the
        tensor is checked against the stack's batch size and unbound along
        :attr:`stack_dim`; every member gets a memory-mapped copy of its slice, in
        its own folder when the stack has one. The members are changed one after
        the other. The returned tensor is the members' entries stacked, a copy.

        Args:
            key (NestedKey): the new key; a tuple creates missing sub-tensordicts.
            tensor (torch.Tensor): the data; its leading dimensions must equal the
                stack's batch size.

        Keyword Args:
            copy_data (bool, optional): if False, only the shape and dtype are used
                and the entries read zeros. Defaults to True.
            robust_key (bool, optional): passed to each member; ``None`` uses each
                member's own key encoding. Defaults to ``None``.

        Returns:
            A new tensor of the stacked entries (not memory-mapped).

        Raises:
            RuntimeError: if the stack is not memory-mapped, if the tensor's leading
                dimensions do not match the batch size, or if a member already has
                the key.
            TypeError: if the key is not a string or a tuple of strings.
            ValueError: if the key cannot be stored in a member's folder (not a file
                name with ``robust_key=False``, or a file name another entry uses).

        Examples:
            >>> stack = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap("stack_t")
            >>> stack.make_memmap_from_tensor("x", torch.arange(2)).tolist()
            [0, 1]
        """
        self._require_memmap("make_memmap_from_tensor()")
        _check_batch(key, tensor, self._batch_size)
        slices = tensor.unbind(self._stack_dim)
        parts = [
            m.make_memmap_from_tensor(key, s, copy_data=copy_data, robust_key=robust_key)
            for m, s in zip(self.tensordicts, slices)
        ]
        return torch.stack(parts, self._stack_dim)

    def make_memmap_from_storage(
        self,
        key: NestedKey,
        storage: torch.UntypedStorage | torch.TypedStorage,
        shape: ShapeType,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = True,
    ) -> MemoryMappedTensor:
        """Adds an entry at ``key`` over ``storage``: each member gets a view of its slice of it.

        What differs from :meth:`TensorDictBase.make_memmap_from_storage`: the
        storage must have no file, since a stack keeps one folder per member and
        no single file can be the file of the new entry. Each member's entry is
        its slice along :attr:`stack_dim` of the new tensor, so writes through
        either reach the storage. No entry is recorded on disk; when the stack
        has a folder and the storage is not empty, a ``FutureWarning`` says that
        loading drops the entry. Every member is checked before any is changed.

        Args:
            key (NestedKey): the new key; a tuple creates missing sub-tensordicts.
            storage (torch.UntypedStorage): the storage of the new tensor, in physical
                memory and without a file (a ``TypedStorage`` is unwrapped).
            shape (torch.Size or sequence of int): the stacked shape; it must start
                with the stack's batch size.

        Keyword Args:
            dtype (torch.dtype, optional): the dtype. Defaults to ``None``, which uses
                ``torch.get_default_dtype()``.
            robust_key (bool, optional): percent-encode the key in file names;
                ``None`` is the same as True. Defaults to True.

        Returns:
            The new ``MemoryMappedTensor`` over the whole storage.

        Raises:
            RuntimeError: if the stack is not memory-mapped, the shape does not start
                with the batch size, a member already has the key, or the storage
                has a file.
            TypeError: if the storage is not a storage, ``dtype`` is not a
                ``torch.dtype``, ``shape`` is a tensor of nested shapes, or the key is
                not a string or a tuple of strings.
            ValueError: if the storage is not in physical memory or its size does not
                match ``shape`` and ``dtype``, or if the key cannot be stored in a
                member's folder.

        Examples:
            >>> stack = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap()
            >>> storage = torch.UntypedStorage(2 * 4)
            >>> stack.make_memmap_from_storage("x", storage, (2,)).shape
            torch.Size([2])
        """
        storage, shape, dtype, needed, nested, filename = check_storage(key, storage, shape, dtype)
        level = self._require_memmap("make_memmap_from_storage()")
        if filename is not None:
            msg = (
                f"cannot add {key!r} to a lazy stack from a storage with a file: each member keeps its "
                "own files, so no single file is the file of the new entry; use a storage without a "
                "file, or make_memmap_from_tensor()"
            )
            raise RuntimeError(msg)
        if nested:
            msg = f"cannot add the nested tensor {key!r} to a lazy stack from one storage"
            raise TypeError(msg)
        _check_batch(key, _Shape(shape), self._batch_size)
        robust_key = True if robust_key is None else robust_key
        plans = [
            m._plan_new_entry(key, "make_memmap_from_storage()", robust_key)
            for m in self.tensordicts
        ]  # every member checked before any is changed
        tensor = MemoryMappedTensor.from_storage(storage, shape=shape, dtype=dtype)
        if level.path is not None and needed > 0:
            warn_storage_without_file(key, level.path)
        for i, (member, (parts, node, _folder, depth)) in enumerate(zip(self.tensordicts, plans)):
            member._attach(parts, node, depth, tensor.select(self._stack_dim, i), None, robust_key)
        return tensor

    def _reset_device(self, device) -> None:
        """Records ``device`` in every member, moving nothing (``auto_device_``)."""
        for member in self.tensordicts:
            if isinstance(member, TensorDictBase):
                member._reset_device(device)


class _Shape:
    """Stands in for a value of a given shape in batch-size checks."""

    def __init__(self, shape: torch.Size) -> None:
        self.batch_size = shape


def _load_lazy(folder: str, meta: dict, stat, options) -> LazyStackedTensorDict:
    """The loader of lazy stack folders, registered with the storage layer."""
    stack_dim, stack_dim_name = fmt.parse_lazy_level(folder, meta)
    members = [_io.load_child(path, options) for path in fmt.lazy_members(folder)]
    out = _build_lazy(folder, members, stack_dim, stack_dim_name)
    out._mm = _io.Level(folder, meta, stat, options.robust_key)
    return out


def _build_lazy(folder: str, members: list, stack_dim: int, stack_dim_name):
    """The lazy stack of loaded ``members`` (of the stack stored in ``folder``), checked."""
    sizes = {tuple(m.batch_size) for m in members}
    if len(sizes) > 1:
        msg = f"the lazy stack in {folder!r} has members of different batch sizes: {sorted(sizes)}"
        raise fmt.MemmapFormatError(msg)
    ndim = len(members[0].batch_size)
    if not -ndim - 1 <= stack_dim <= ndim:
        msg = f"{fmt.meta_path(folder)!r}: stack_dim {stack_dim} is out of range for members with {ndim} batch dimensions"
        raise fmt.MemmapFormatError(msg)
    return LazyStackedTensorDict(*members, stack_dim=stack_dim, stack_dim_name=stack_dim_name)


_io.LOADERS[fmt.LAZY_CLASS] = _load_lazy
CLASSES["LazyStackedTensorDict"] = LazyStackedTensorDict
_io.LOADERS[fmt.LAZY_TYPE] = _load_lazy
_archive.BUILDERS[fmt.KIND_LAZY] = _build_lazy


def lazy_stack(
    input: Iterable[TensorCollection],
    dim: int = 0,
    *,
    out: TensorDictBase | None = None,
    strict_shape: bool = False,
    **kwargs: Any,
) -> LazyStackedTensorDict:
    """Stacks tensordicts lazily along ``dim``: no copy, and the members may differ.

    The members are kept as they are; see :class:`LazyStackedTensorDict`. Their
    batch sizes may differ too, if not their number of dims: the stack's batch
    size reads ``-1`` at the dims where they differ (a ragged stack, indexed
    through its members).

    Args:
        input (iterable of TensorDictBase): the members.
        dim (int, optional): the position of the new batch dimension; a negative one
            counts from the end. Defaults to 0.

    Keyword Args:
        out (TensorDictBase, optional): if given, the stacked values are written
            into it in place (it must already have every key, with the stacked
            shapes) and it is returned. Defaults to ``None``.
        strict_shape (bool, optional): refuse members whose batch sizes differ.
            Defaults to False.
        **kwargs: accepted for compatibility and ignored.

    Returns:
        A new :class:`LazyStackedTensorDict`, or ``out``.

    Raises:
        RuntimeError: if the members' numbers of batch dims differ (or, with
            ``strict_shape``, their batch sizes), or a value does not fit its
            entry of ``out``.
        TooFewInputsError: if ``input`` is empty (a ``RuntimeError``).
        TypeError: if a member is not a tensordict.
        IndexError: if ``dim`` is out of range.
        KeyError: if ``out`` lacks a key of the stack.

    Examples:
        >>> episodes = [TensorDict({"r": torch.zeros(n)}, []) for n in (3, 5)]
        >>> stack = lazy_stack(episodes)
        >>> stack.batch_size, stack.get("r", as_nested_tensor=True).is_nested
        (torch.Size([2]), True)
        >>> lazy_stack([TensorDict({}, [3]), TensorDict({}, [5])]).batch_size
        torch.Size([2, -1])
    """
    tds = list(input)
    if not tds:
        msg = "lazy_stack needs at least one tensordict; LazyStackedTensorDict(batch_size=...) builds an empty stack"
        raise TooFewInputsError(msg)
    cls = type(tds[0])
    if getattr(cls, "_is_tensorclass", False) and out is None:
        # instances of one tensorclass: their tensordicts stacked lazily, as the class
        if any(type(td) is not cls for td in tds):
            msg = f"cannot lazy-stack a {cls.__name__} with instances of other classes"
            raise TypeError(msg)
        inner = LazyStackedTensorDict._stack_members(
            [td._tensordict for td in tds], dim, strict_shape=strict_shape
        )
        return cls._from_tensordict(inner)
    return LazyStackedTensorDict._stack_members(tds, dim, out=out, strict_shape=strict_shape)


STACKERS["lazy_stack"] = lazy_stack
STACKERS["maybe_dense_stack"] = LazyStackedTensorDict.maybe_dense_stack
