"""NonTensorStack: non-tensor entries stacked along a batch dimension, one value per element.

A :class:`NonTensorStack` is a lazy stack whose members are non-tensor entries
(:class:`NonTensorData`, :class:`MetaData`, or stacks again). Stacking
non-tensor entries, assigning a list of strings to a key, or indexing a stack
gives one. ``td[key]`` reads it as a :class:`LinkedList`, a list whose item
assignments write back into the stack.

Every batch element of a stack has one value; the operations on the batch
dimensions (indexing, reshaping, splitting, ...) are computed on a tensor of
element positions and the values are gathered at the positions that result,
so that they follow exactly the semantics of the same operation on a tensor.

This module sits above the lazy stack; it registers its builders in
:data:`tensordict._nontensor.STACK_BUILDERS` (so that the lower layers build
stacks without importing it) and its loader in :data:`tensordict.memmap._io.LOADERS`.
"""

from __future__ import annotations

import itertools
import operator
import weakref
from typing import Any

import torch

from tensordict import _nontensor
from tensordict._collection import NO_DEFAULT, is_non_tensor
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import (
    HoldsNoStorage,
    NonTensorData,
    NonTensorDataBase,
    nest_values,
    same_value,
)
from tensordict._ops.batch_dims import BatchDimsMixin, same_batch_size
from tensordict._ops.classes import CLASSES
from tensordict._ops.convert import CONVERTERS
from tensordict._typing import DeviceType, ShapeType
from tensordict.errors import BatchSizeError, MemmapFormatError
from tensordict.memmap import _archive, _io
from tensordict.memmap import format as fmt

__all__ = ["LinkedList", "NonTensorStack"]


def _from_flat(flat: list, shape: torch.Size, device=None):
    """A canonical entry of batch size ``shape`` holding ``flat`` (row-major): a stack, or one NonTensorData."""
    return _from_cells([NonTensorData(v, (), device) for v in flat], shape)


def _from_cells(cells: list, shape: torch.Size):
    """A canonical stack of batch size ``shape`` over ``cells``, 0-dim entries (row-major), not copied.

    Without batch dims, the one cell itself.
    """
    if not shape:
        return cells[0]
    if len(shape) == 1:
        members = list(cells)
    else:
        step = shape[1:].numel()
        members = [
            _from_cells(cells[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])
        ]
    return NonTensorStack._of(members, 0, shape)


def _positions(shape: torch.Size) -> torch.Tensor:
    return torch.arange(shape.numel()).reshape(shape)


def _gather(flat: list, positions: torch.Tensor, device=None):
    return _from_flat([flat[i] for i in positions.reshape(-1).tolist()], positions.shape, device)


def _interleave(per_member: list, stack_dim: int, inner: torch.Size) -> list:
    """The row-major items of a stack along ``stack_dim`` of members of batch size ``inner``.

    ``per_member`` holds each member's items in row-major order.
    """
    outer = inner[:stack_dim].numel()
    block = inner[stack_dim:].numel()
    out = []
    for o in range(outer):
        for items in per_member:
            out.extend(items[o * block : (o + 1) * block])
    return out


class LinkedList(list):
    """The values of a :class:`NonTensorStack` as a list; assigning an item writes it into the stack.

    ``td[key]`` gives one for a stack entry: it equals a plain list with the same
    items, and a stack with more than one batch dimension gives nested
    :class:`LinkedList` rows. ``values[i] = v`` (or a slice) writes into the stack
    first and changes the list only if that succeeded. Changing the length of
    the list (``append``, ``extend``, ``insert``, ``pop``, ``remove``, ``clear``,
    ``del``) changes the list alone and unlinks it: later assignments no longer
    write back. ``LinkedList(iterable)`` is a list linked to nothing.

    Args:
        iterable (iterable, optional): the items. Defaults to none.

    Examples:
        >>> td = TensorDict(batch_size=[3])
        >>> td["names"] = ["a", "b", "c"]
        >>> values = td["names"]
        >>> values == ["a", "b", "c"], isinstance(values, list)
        (True, True)
        >>> values[0] = "z"
        >>> td.get("names").tolist()
        ['z', 'b', 'c']
    """

    def __init__(self, *args: Any, stack: NonTensorStack | None = None, prefix: tuple = ()) -> None:
        super().__init__(*args)
        self._stack = None if stack is None else weakref.ref(stack)
        self._prefix = prefix

    def __repr__(self) -> str:
        return f"LinkedList({list.__repr__(self)})"

    __str__ = __repr__

    def __setitem__(self, index, value) -> None:
        stack = None if self._stack is None else self._stack()
        if stack is not None:
            stack[(*self._prefix, index) if self._prefix else index] = value
        list.__setitem__(self, index, value)

    def tolist(self) -> list:
        """Returns a plain nested list copy of the items, linked to nothing.

        Returns:
            A new ``list``; nested :class:`LinkedList` rows become plain lists.

        Examples:
            >>> LinkedList([LinkedList(["a"]), LinkedList(["b"])]).tolist()
            [['a'], ['b']]
        """
        return [v.tolist() if isinstance(v, LinkedList) else v for v in self]

    def _unlinked(name):  # noqa: N805 - a factory used in the class body only
        method = getattr(list, name)

        def unlinking(self, *args, **kwargs):
            self._stack = None
            return method(self, *args, **kwargs)

        unlinking.__name__ = name
        unlinking.__doc__ = f"As ``list.{name}``; the list is unlinked from its stack first."
        return unlinking

    append = _unlinked("append")
    extend = _unlinked("extend")
    insert = _unlinked("insert")
    pop = _unlinked("pop")
    remove = _unlinked("remove")
    clear = _unlinked("clear")
    __delitem__ = _unlinked("__delitem__")
    __iadd__ = _unlinked("__iadd__")
    del _unlinked


class NonTensorStack(HoldsNoStorage, LazyStackedTensorDict):
    """Non-tensor entries stacked along a batch dimension: one Python value per batch element.

    Stacking :class:`NonTensorData` (or stacks) with ``torch.stack``, stacking
    tensordicts whose non-tensor entries differ, or assigning a list of strings
    (``td["names"] = ["a", "b"]``) gives one; so does ``NonTensorStack("a", "b")``
    or :meth:`from_list`. Equal values stack into a stack too, unless
    ``capture_non_tensor_stack()`` is True. :meth:`tolist` gives the values;
    ``td[key]`` gives them as a :class:`LinkedList`; :attr:`data` gives the one
    value when every element holds the same. It has no keys. Indexing, reshaping
    and the other batch operations follow the same operation on a tensor; an
    index of a single element gives a :class:`NonTensorData`. As with a tensor,
    ints and slices and the shape methods that keep each element once give views
    (a write through one reaches the stack, and the other way round), and index
    tensors give copies. A write into the stack also reaches the
    :class:`NonTensorData` members it was built from. A memory-mapped stack (from
    ``memmap``, ``memmap_`` or ``load_memmap``, on its own or as an entry of a
    tensordict) writes its values to its folder after each write, as a
    memory-mapped tensor writes its file.

    Args:
        *values: the members: non-tensor entries of one batch size, or plain
            values (each becomes a :class:`NonTensorData` without batch
            dimensions). No value gives an empty stack of batch size ``[0]``.

    Keyword Args:
        stack_dim (int, optional): the position of the new dimension. Defaults to 0.
        stack_dim_name (str, optional): accepted for compatibility. Defaults to ``None``.
        batch_size: accepted for compatibility and ignored (it follows from the members).
        **kwargs: accepted for compatibility and ignored.

    Raises:
        RuntimeError: if the members' batch sizes differ.
        IndexError: if ``stack_dim`` is out of range.

    Examples:
        >>> NonTensorStack("a", "b").tolist()
        ['a', 'b']
        >>> td = torch.stack([TensorDict(name="a"), TensorDict(name="b")])
        >>> type(td.get("name")).__name__, td["name"], td[0]["name"]
        ('NonTensorStack', LinkedList(['a', 'b']), 'a')
        >>> grid = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
        >>> grid.batch_size, grid[:, 1].tolist(), grid[1, 0].data
        (torch.Size([2, 2]), ['b', 'd'], 'c')
    """

    # _home: where the stack's values are written on disk, None for nowhere (see _persist)
    __slots__ = ("_locked", "_home")
    _is_non_tensor = True
    _memmap_record = "NonTensorStack"

    def __init__(
        self,
        *values: Any,
        stack_dim: int = 0,
        stack_dim_name: str | None = None,
        batch_size: ShapeType | None = None,
        **kwargs: Any,
    ) -> None:
        if len(values) == 1 and type(values[0]) in (list, tuple):
            values = tuple(values[0])
        members = [v if is_non_tensor(v) else NonTensorData(v) for v in values]
        if not members:
            self._init_empty(torch.Size((0,)))
            return
        super().__init__(*members, stack_dim=stack_dim, stack_dim_name=stack_dim_name)
        self._locked = False
        self._home = None

    def _init_empty(self, shape: torch.Size) -> None:
        self.tensordicts = []
        self._stack_dim = 0
        self._stack_dim_name = None
        self._batch_size = torch.Size(shape)
        self._mm = None
        self._locked = False
        self._home = None

    @classmethod
    def _of(cls, members: list, stack_dim: int, shape=None) -> NonTensorStack:
        """A stack of existing entries, or an empty one of batch size ``shape``."""
        out = cls.__new__(cls)
        if not members:
            out._init_empty(shape)
            return out
        LazyStackedTensorDict.__init__(out, *members, stack_dim=stack_dim)
        out._locked = False
        out._home = None
        return out

    @classmethod
    def _stack_members(cls, tds, dim: int = 0, out=None):
        stacked = _nontensor.stack_entries(list(tds), dim)
        if out is not None:
            out._replace(stacked)
            return out
        return stacked

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_list(cls, values: list, *, device: DeviceType | None = None) -> NonTensorStack:
        """Builds a stack from a (nested) list: each level of lists is a batch dimension.

        Nested lists of one length become more batch dimensions; an item that is
        not a list, or lists whose lengths differ, are values of the elements.

        Args:
            values (list): the values, possibly nested.

        Keyword Args:
            device (torch.device or str, optional): the device of the stack. Defaults to ``None``.

        Returns:
            A new :class:`NonTensorStack`.

        Raises:
            TypeError: if ``values`` is not a list or a tuple.

        Examples:
            >>> NonTensorStack.from_list([["a", "b"], ["c", "d"]]).batch_size
            torch.Size([2, 2])
            >>> NonTensorStack.from_list([["a", "b"], ["c"]]).tolist()
            [['a', 'b'], ['c']]
        """
        if not isinstance(values, (list, tuple)):
            msg = f"from_list takes a list of values, got {type(values).__name__}"
            raise TypeError(msg)
        shape = _list_shape(values)
        flat = _flatten(values, len(shape))
        return _from_flat(flat, torch.Size(shape), None if device is None else torch.device(device))

    @classmethod
    def from_nontensordata(cls, value: NonTensorDataBase) -> NonTensorStack:
        """Builds a stack of the batch size of ``value`` whose every element holds its value.

        Args:
            value (NonTensorDataBase): an entry with at least one batch dimension.

        Returns:
            A new :class:`NonTensorStack`; the value is shared, not copied.

        Raises:
            TypeError: if ``value`` is not a NonTensorData or a MetaData.
            ValueError: if ``value`` has no batch dimension.

        Examples:
            >>> NonTensorStack.from_nontensordata(NonTensorData("a", [2])).tolist()
            ['a', 'a']
        """
        if not isinstance(value, NonTensorDataBase):
            msg = f"from_nontensordata takes a NonTensorData, got {type(value).__name__}"
            raise TypeError(msg)
        if not value.batch_size:
            msg = "from_nontensordata needs an entry with at least one batch dimension"
            raise ValueError(msg)
        return _from_flat(value._flat(), value.batch_size, value.device)

    @classmethod
    def maybe_to_stack(cls, value: Any) -> Any:
        """Returns ``value`` as a stack when it is a non-tensor entry with batch dimensions.

        Args:
            value: anything.

        Returns:
            A :class:`NonTensorStack` for a NonTensorData with batch dimensions;
            ``value`` itself otherwise.

        Examples:
            >>> type(NonTensorStack.maybe_to_stack(NonTensorData("a", [2]))).__name__
            'NonTensorStack'
            >>> NonTensorStack.maybe_to_stack(3)
            3
        """
        if isinstance(value, NonTensorDataBase) and value.batch_size:
            return cls.from_nontensordata(value)
        return value

    # ------------------------------------------------------------------ values
    def _flat(self) -> list:
        """The values of every batch element, in row-major order."""
        if not self.tensordicts:
            return []
        per_member = [m._flat() for m in self.tensordicts]
        return _interleave(per_member, self._stack_dim, self.tensordicts[0].batch_size)

    # Each element of a stack is held by a cell: a 0-dim entry, one of the members (or of
    # the members of a member stack). A write into the stack sets the value of cells in
    # place, and the views of a stack (an index or a shape method that keeps each element
    # once) are stacks over the same cells: a write through a view reaches the stack it
    # comes from, and the other way round, as with the views of a tensor. As in the
    # reference, a member passed to the stack (by torch.stack, lazy_stack, ...) is a cell
    # too. A member that holds one value for several elements (a NonTensorData with batch
    # dims) is replaced by cells of its value on the first write or view.
    def _cells(self) -> list:
        """The cell of every batch element, in row-major order (see above)."""
        cells = self._member_cells()
        if cells is None:
            self._replace(_from_flat(self._flat(), self._batch_size, self.device))
            cells = self._member_cells()
        return cells

    def _member_cells(self) -> list | None:
        if not self.tensordicts:
            return []
        per_member = []
        for member in self.tensordicts:
            if isinstance(member, NonTensorDataBase):
                if member.batch_size:
                    return None
                per_member.append([member])
            else:
                per_member.append(member._cells())
        return _interleave(per_member, self._stack_dim, self.tensordicts[0].batch_size)

    def _view(self, positions: torch.Tensor):
        """The elements at ``positions``: a view over their cells, or a copy if one repeats."""
        flat = positions.reshape(-1).tolist()
        if len(set(flat)) != len(flat):
            return _gather(self._flat(), positions, self.device)
        cells = self._cells()
        return _from_cells([cells[i] for i in flat], positions.shape)

    def tolist(self, *args: Any, **kwargs: Any) -> list:
        """Returns the values as nested plain lists, one level per batch dimension.

        Args:
            *args, **kwargs: accepted for compatibility and ignored.

        Returns:
            A new list (the values themselves are not copied).

        Examples:
            >>> torch.stack([NonTensorStack("a", "b"), NonTensorStack("c", "d")], 1).tolist()
            [['a', 'c'], ['b', 'd']]
        """
        return nest_values(self._flat(), self._batch_size)

    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> list:
        """Returns the values as nested plain lists, as :meth:`tolist` does: a stack has no keys.

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility; ignored.
            convert_tensors (bool, optional): accepted for compatibility; ignored.

        Returns:
            A new list (the values themselves are not copied).

        Examples:
            >>> NonTensorStack("a", "b").to_dict()
            ['a', 'b']
        """
        return self.tolist()

    def _dict_entry(self, convert_tensors: bool) -> list:
        # What ``to_dict`` of the tensordict holding this stack gives for it: the values.
        return self.tolist()

    def _numpy_entry(self) -> list:
        # What ``numpy()`` of the tensordict holding this stack gives for it: the values.
        return self.tolist()

    def _read_value(self) -> LinkedList:
        """What ``td[key]`` gives: the values as a (nested) LinkedList that writes back here."""
        return self._linked(nest_values(self._flat(), self._batch_size), ())

    def _linked(self, values: list, prefix: tuple) -> LinkedList:
        if len(self._batch_size) - len(prefix) > 1:
            values = [self._linked(row, (*prefix, i)) for i, row in enumerate(values)]
        return LinkedList(values, stack=self, prefix=prefix)

    @property
    def data(self) -> Any:
        """The value every element holds, when they all hold the same one (compared with ``==``).

        Returns:
            The value of the first element.

        Raises:
            AttributeError: if the elements hold different values, or the stack is empty.

        Examples:
            >>> NonTensorStack("a", "a").data
            'a'
        """
        flat = self._flat()
        if not flat or any(not same_value(v, flat[0]) for v in flat[1:]):
            msg = (
                "the elements of this NonTensorStack hold different values, so it has no single "
                "data; use tolist() to read them"
            )
            raise AttributeError(msg)
        return flat[0]

    def _replace(self, other) -> None:
        """Makes this stack hold the members of ``other`` (an entry of the same batch size)."""
        if isinstance(other, NonTensorDataBase):
            other = NonTensorStack.from_nontensordata(other)
        self.tensordicts = list(other.tensordicts)
        self._stack_dim = other._stack_dim
        self._batch_size = other._batch_size

    # ------------------------------------------------------------------ keys
    def _keys_level(self):
        return []

    def _items_level(self):
        return []

    def _get_str(self, key: str, default, as_nested_tensor: bool = False):
        if default is NO_DEFAULT:
            raise self._missing((key,), 0, self)
        return default

    def _set_str(
        self, key: str, value, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        msg = (
            f"cannot set the key {key!r} in a NonTensorStack: it holds values, not keys; assign "
            "to an index instead (stack[0] = value)"
        )
        raise KeyError(msg)

    def _del_str(self, key: str) -> None:
        raise self._missing((key,), 0, self)

    # ------------------------------------------------------------------ indexing and shapes
    def _index(self, index):
        positions = _positions(self._batch_size)[index]
        parts = index if type(index) is tuple else (index,)
        if all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts):
            return self._view(positions)
        # an index tensor, list or mask copies, as advanced indexing of a tensor does
        return _gather(self._flat(), positions, self.device)

    def _set_at(self, index, value) -> None:
        positions = _positions(self._batch_size)[index]
        targets = positions.reshape(-1).tolist()
        if is_non_tensor(value):
            if value.batch_size != positions.shape:
                try:
                    value = value.expand(positions.shape)
                except RuntimeError as err:
                    msg = (
                        f"cannot assign a non-tensor entry of batch size {list(value.batch_size)} "
                        f"to {list(positions.shape)} elements of a NonTensorStack"
                    )
                    raise BatchSizeError(msg) from err
            new = value._flat()
        elif isinstance(value, (list, tuple)) and positions.ndim and len(value) == len(positions):
            new = _flatten(list(value), positions.ndim)
            if len(new) != len(targets):
                msg = (
                    f"cannot assign a list of shape {_list_shape(list(value))} to "
                    f"{list(positions.shape)} elements of a NonTensorStack"
                )
                raise BatchSizeError(msg)
        else:
            new = [value] * len(targets)
        cells = self._cells()
        for position, item in zip(targets, new):
            # in place, so that views see it; a write through the stack also reaches a
            # cell that a locked tensordict holds, as it reaches a locked tensor
            object.__setattr__(cells[position], "data", item)
        self._persist()

    def _persist(self) -> None:
        """Writes the values to the stack's folder, if it is memory-mapped (its ``_home``).

        A stack written by ``memmap``/``memmap_`` or loaded with ``load_memmap`` (on its
        own, or as an entry of a tensordict) keeps where its values live: ``(level, key)``
        for an entry of the memory-mapped level ``level``, ``(None, folder)`` for a stack
        mapped on its own. Each write into it rewrites that folder (atomically), as a
        write into a memory-mapped tensor reaches its file.
        """
        home = self._home
        if home is None:
            return
        level, where = home
        if level is None:
            _io.rewrite_nontensor_folder(where, self)
        else:
            _io.rewrite_nontensor(level, where, self, level.robust_key)

    def _written_at(self, index, value) -> NonTensorStack:
        # The hook of a tensordict's index assignment (see NonTensorDataBase._written_at):
        # a stack takes the values in place.
        self._set_at(index, value)
        return self

    # A lazy stack's shape methods restack its members; a stack of values gathers its
    # values instead, through ``_batch_op``, as every tensordict's shape methods do.
    unsqueeze = BatchDimsMixin.unsqueeze
    squeeze = BatchDimsMixin.squeeze
    permute = BatchDimsMixin.permute
    reshape = BatchDimsMixin.reshape
    view = BatchDimsMixin.view
    flatten = BatchDimsMixin.flatten
    expand = BatchDimsMixin.expand

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self._view(op(_positions(self._batch_size), torch.Size()))

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        pieces = op(_positions(self._batch_size), torch.Size())
        return tuple(self._view(p) for p in pieces)

    def unbind(self, dim: int = 0) -> tuple:
        """Removes batch dimension ``dim``: one entry per index along it.

        Along :attr:`stack_dim` the members themselves are returned.

        Args:
            dim (int, optional): the batch dimension. Defaults to 0.

        Returns:
            A tuple of :class:`NonTensorData` (for a one-dimensional stack) or stacks.

        Raises:
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> [entry.data for entry in NonTensorStack("a", "b").unbind(0)]
            ['a', 'b']
        """
        ndim = len(self._batch_size)
        d = dim + ndim if dim < 0 else dim
        if d == self._stack_dim and self.tensordicts:
            return tuple(self.tensordicts)
        return tuple(self._view(p) for p in _positions(self._batch_size).unbind(dim))

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> NonTensorStack:
        """Returns the stack itself: a stack of values is its own dense form.

        Keyword Args:
            canonical (bool, optional): accepted for compatibility; a stack of values
                has one form. Defaults to False.
            inplace (bool, optional): accepted for compatibility. Defaults to False.

        Returns:
            This :class:`NonTensorStack`.

        Examples:
            >>> stack = NonTensorStack("a", "b")
            >>> stack.contiguous() is stack
            True
        """
        return self

    def to_tensordict(self, *, retain_none: bool | None = None) -> NonTensorStack:
        """Returns an independent copy: a stack of values has no keys a TensorDict could hold.

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility. Defaults to ``None``.

        Returns:
            A new, unlocked :class:`NonTensorStack` of the same values (see :meth:`clone`).

        Examples:
            >>> stack = NonTensorStack("a", "b")
            >>> copy = stack.to_tensordict()
            >>> copy[0] = "z"
            >>> stack.tolist(), copy.tolist()
            (['a', 'b'], ['z', 'b'])
        """
        return self.clone()

    def _shallow_copy(self) -> NonTensorStack:
        return NonTensorStack._of(list(self.tensordicts), self._stack_dim, self._batch_size)

    # ------------------------------------------------------------------ values and devices
    def _fast_apply(self, fn, *others, batch_size=None, device=NO_DEFAULT, **kwargs):
        # Functions map tensors; a stack of values comes back as a copy, on the new device.
        # A comparison of tensordicts compares the values (see _nontensor.combine_values).
        # A new batch size (new_zeros, new_empty, ...) gives a stack of that size holding the
        # first value, as the reference's does.
        if others:
            combined = _nontensor.combine_values(fn, [self, *others])
            if combined is not None:
                return combined
        if batch_size is not None and torch.Size(batch_size) != self._batch_size:
            flat = self._flat()
            size = torch.Size(batch_size)
            out = _from_flat([flat[0] if flat else None] * size.numel(), size, self.device)
        else:
            out = self.clone()
        return out if device is NO_DEFAULT or device is None else out.to(device)

    def where(
        self,
        condition: torch.Tensor,
        other: Any,
        *,
        out: NonTensorStack | None = None,
        pad: Any = None,
    ) -> NonTensorStack:
        """Returns the values of this stack where ``condition`` is True, and of ``other`` elsewhere.

        Args:
            condition (torch.Tensor): a boolean tensor that broadcasts to the batch size.
            other: a non-tensor entry that broadcasts to the batch size, or one value for
                every element.

        Keyword Args:
            out (NonTensorStack, optional): a stack of the batch size to write the values
                into, which is returned. Defaults to None.
            pad (optional): accepted for compatibility; ignored.

        Returns:
            A new :class:`NonTensorStack` (or one NonTensorData without batch dims), or ``out``.

        Raises:
            RuntimeError: if ``condition`` or ``other`` does not broadcast to the batch size.

        Examples:
            >>> stack = NonTensorStack("a", "b")
            >>> stack.where(torch.tensor([True, False]), NonTensorStack("x", "y")).tolist()
            ['a', 'y']
        """
        shape = self._batch_size
        mask = condition.expand(shape).reshape(-1).tolist()
        if is_non_tensor(other):
            theirs = (other if other.batch_size == shape else other.expand(shape))._flat()
        else:
            theirs = [other] * shape.numel()
        picked = [a if c else b for c, a, b in zip(mask, self._flat(), theirs)]
        result = _from_flat(picked, shape, self.device)
        if out is None:
            return result
        out[...] = result
        return out

    def _emptied(self, factory, size: torch.Size, kwargs: dict) -> NonTensorStack:
        # A stack of values has no members to leave empty: it keeps values, as without
        # empty_lazy.
        return self._filled(factory, size, kwargs)

    def clone(self, recurse: bool = True) -> NonTensorStack:
        """Returns a new stack of clones of the members (the values are shared, MetaData copied).

        Args:
            recurse (bool, optional): if False, the new stack keeps the members
                themselves. Defaults to True.

        Returns:
            A new :class:`NonTensorStack`.

        Examples:
            >>> stack = NonTensorStack("a", "b")
            >>> copy = stack.clone()
            >>> copy.tolist(), copy.tensordicts[0] is stack.tensordicts[0]
            (['a', 'b'], False)
        """
        if not recurse:
            return self._shallow_copy()
        members = [m.clone() for m in self.tensordicts]
        return NonTensorStack._of(members, self._stack_dim, self._batch_size)

    def to(self, *args: Any, **kwargs: Any) -> NonTensorStack:
        """Returns a new stack whose members have the device given; dtypes and the like are ignored.

        Args:
            *args, **kwargs: as :meth:`NonTensorData.to`.

        Returns:
            A new :class:`NonTensorStack`.

        Examples:
            >>> NonTensorStack("a", "b").to("cpu").device
            device(type='cpu')
        """
        members = [m.to(*args, **kwargs) for m in self.tensordicts]
        return NonTensorStack._of(members, self._stack_dim, self._batch_size)

    def cpu(self) -> NonTensorStack:
        """Returns a new stack whose device is the CPU.

        Returns:
            A new :class:`NonTensorStack`.

        Examples:
            >>> NonTensorStack("a").cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def __eq__(self, other):
        if not is_non_tensor(other):
            return False
        return _nontensor.combine_values(operator.eq, [self, other])

    def __ne__(self, other):
        if not is_non_tensor(other):
            return True
        return _nontensor.combine_values(operator.ne, [self, other])

    __hash__ = None

    def __repr__(self) -> str:
        body = repr(self.tolist())
        return (
            f"NonTensorStack(\n    {body},\n    batch_size={self._batch_size},\n"
            f"    device={self.device})"
        )

    @property
    def is_locked(self) -> bool:
        """True when the stack is locked: ``lock_``, or the lock of the tensordict that holds it.

        A stack locks, and unlocks, with the tensordict that holds it; ``memmap``
        and ``consolidate`` lock the stack they return, as they lock a tensordict.
        The lock is the stack's own: its members, values, are not locked, and
        writing values into a locked stack (``stack[0] = value``) still works.

        Returns:
            True when locked.

        Examples:
            >>> td = TensorDict({"names": NonTensorStack("a", "b")}, [2]).lock_()
            >>> td.get("names").is_locked, td.unlock_().get("names").is_locked
            (True, False)
        """
        return self._locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._locked = bool(value)

    def _propagate_lock(self, locked: bool) -> None:
        self._locked = locked

    def _held_by_a_locked_parent(self) -> bool:
        return False  # the stack's lock is its own: nothing else holds it locked

    # ------------------------------------------------------------------ memory mapping
    # A stack written on its own (the root of memmap(), memmap_like() or save()) is one
    # folder of values, written by the storage layer as it writes a stack entry.
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        if folder is not None:
            plan.nontensors.append((folder, self))

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        out = self if inplace else self.clone()
        if folder is not None:
            out._home = (None, folder)
        return out

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        pass  # the plan's write of the values wrote the folder's meta.json

    def _memmap_payload(self):
        """``(meta, data)`` of the stack's folder: ``data`` is what JSON holds (or is pickled)."""
        device = self.device
        meta = {
            "_type": fmt.NONTENSOR_STACK_TYPE,
            "_format_version": fmt.FORMAT_VERSION,
            "_class": fmt.NONTENSOR_STACK_CLASS,
            "stack_dim": self._stack_dim,
            "device": None if device is None else str(device),
        }
        return meta, self.tolist()


def _list_shape(values: list) -> list:
    """The batch shape of nested lists: their common lengths, as deep as they agree."""
    shape = [len(values)]
    if values and all(type(v) is list for v in values):
        subs = [_list_shape(v) for v in values]
        first = subs[0]
        common = []
        for i, size in enumerate(first):
            if all(len(s) > i and s[i] == size for s in subs):
                common.append(size)
            else:
                break
        shape.extend(common)
    return shape


def _flatten(values: list, depth: int) -> list:
    if depth <= 1:
        return list(values)
    return list(itertools.chain.from_iterable(_flatten(v, depth - 1) for v in values))


def _stack_entries(items: list, dim: int) -> NonTensorStack:
    same_batch_size(
        items, "cannot stack non-tensor entries of different batch sizes", "entry", BatchSizeError
    )
    return NonTensorStack._of(list(items), dim)


def _cat_entries(items: list, dim: int):
    """Concatenates non-tensor entries along ``dim``: one entry when they all hold one equal value."""
    if all(isinstance(i, NonTensorDataBase) for i in items) and all(
        same_value(i.data, items[0].data) for i in items
    ):
        shape = torch.cat([_positions(i.batch_size) for i in items], dim).shape
        return items[0]._with(shape)
    flat, offset, positions = [], 0, []
    for item in items:
        positions.append(_positions(item.batch_size) + offset)
        flat.extend(item._flat())
        offset += item.batch_size.numel()
    return _gather(flat, torch.cat(positions, dim), items[0].device)


def _load_stack(folder: str, meta: dict, stat, options) -> NonTensorStack:
    """The loader of NonTensorStack folders, registered with the storage layer."""
    data, pickled = fmt.parse_nontensor_stack(folder, meta)
    if pickled is not None:
        data = _io.unpickle(pickled, options, "pickled values")
        if type(data) is not list:
            msg = f"{pickled!r} must hold a pickled list of values, got {type(data).__name__}"
            raise MemmapFormatError(msg)
    device = meta.get("device")
    if options.device is not None:
        device = options.device
    out = NonTensorStack.from_list(data, device=device)
    out._home = (None, folder)  # the level that holds an entry gives it its own home instead
    return out


_nontensor.STACK_BUILDERS["stack"] = _stack_entries
_nontensor.STACK_BUILDERS["cat"] = _cat_entries
_nontensor.STACK_BUILDERS["from_list"] = NonTensorStack.from_list
_nontensor.STACK_BUILDERS["from_entry"] = NonTensorStack.from_nontensordata
_io.LOADERS[fmt.NONTENSOR_STACK_CLASS] = _load_stack
CLASSES["NonTensorStack"] = NonTensorStack
CONVERTERS["linked_list"] = LinkedList  # tolist(as_linked_list=True)
_io.LOADERS[fmt.NONTENSOR_STACK_TYPE] = _load_stack
_archive.BUILDERS[fmt.KIND_NONTENSOR_STACK] = NonTensorStack.from_list
