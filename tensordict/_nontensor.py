"""Non-tensor values (a string, a number, any object) stored in a tensordict.

A :class:`NonTensorData` carries one Python value and the batch size of the
level that holds it; a :class:`MetaData` carries one value meant for the whole
batch. Both derive from :class:`NonTensorDataBase` and behave like tensor
collections on the batch dimensions: indexing or reshaping changes the batch
size and keeps the value.

Stacking entries that hold different values gives a ``NonTensorStack``, a
class of an upper layer (it is a lazy stack). This module builds one through
:data:`STACK_BUILDERS`, which that layer fills when it is imported: the
protocol is ``STACK_BUILDERS["stack"](items, dim)`` (a stack of the entries
``items`` along ``dim``) and ``STACK_BUILDERS["from_list"](values)`` (a stack of
nested lists of values). :class:`HoldsNoStorage` answers the storage questions
(``is_memmap``, ``is_shared``) for both the entries and that stack.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from tensordict._collection import NO_DEFAULT, TensorCollection
from tensordict._indexing import check_split_size
from tensordict._options import capture_non_tensor_stack
from tensordict._shared_value import SharedValue, holds_json
from tensordict._typing import DeviceType, ShapeType
from tensordict.errors import EntryTypeError, LockedError, UnknownFieldError, ValueAtIndexError

STACK_BUILDERS: dict = {}
"""How this layer builds a NonTensorStack: filled by the module that defines it (see above)."""


def build_stack(items: list, dim: int) -> TensorCollection:
    """A ``NonTensorStack`` of the non-tensor entries ``items`` along ``dim``, through the registry."""
    return STACK_BUILDERS["stack"](items, dim)


def stack_from_list(values: list) -> TensorCollection:
    """A ``NonTensorStack`` of the nested list ``values``, through the registry."""
    return STACK_BUILDERS["from_list"](values)


def stack_entries(items: list, dim: int) -> NonTensorDataBase | TensorCollection:
    """Stacks non-tensor entries along ``dim`` as their classes decide (see ``_stack``)."""
    if all(isinstance(i, NonTensorDataBase) for i in items):
        return type(items[0])._stack(items, dim)
    return build_stack(items, dim)


def cat_entries(items: list, dim: int) -> NonTensorDataBase | TensorCollection:
    """Concatenates non-tensor entries along ``dim``: one entry when all hold one value, else a stack."""
    return STACK_BUILDERS["cat"](items, dim)


def same_value(a: Any, b: Any) -> bool:
    """True when two values held by entries are the same: ``==`` when it gives a truth value, else ``is``."""
    try:
        return bool(a == b)
    except (TypeError, ValueError, RuntimeError):
        return a is b


def nest_values(flat: list, shape: ShapeType) -> list:
    """Cuts the row-major list ``flat`` into nested lists of ``shape`` (one level per dimension)."""
    if len(shape) <= 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [nest_values(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


# The operators that compare or combine the values of non-tensor entries element by element
# (``==``, ``!=``, ``&``, ``|``, ``^`` of the tensordicts that hold them): the result is a
# tensor of the batch shape.
_VALUE_OPERATORS = {
    operator.eq: same_value,
    operator.ne: lambda a, b: not same_value(a, b),
    operator.and_: operator.and_,
    operator.or_: operator.or_,
    operator.xor: operator.xor,
}


def combine_values(op: Callable, operands: list) -> torch.Tensor | None:
    """``op`` over the values of non-tensor entries, element by element, as a tensor.

    ``operands`` are a non-tensor entry and another one, or a tensor of its batch
    size (or of no dimension), whose numbers are values. The entries broadcast
    against each other as tensors of their batch sizes do. Returns ``None`` when
    ``op`` is not one of the value operators, an operand is neither, or the values
    do not take the operator (``"a" | "b"``).
    """
    pair = _VALUE_OPERATORS.get(op)
    if pair is None or len(operands) != 2:
        return None
    entries = [o for o in operands if getattr(type(o), "_is_non_tensor", False)]
    if not entries:
        return None
    shape = torch.broadcast_shapes(*(e.batch_size for e in entries))
    flats = []
    for operand in operands:
        if getattr(type(operand), "_is_non_tensor", False):
            same = operand.batch_size == shape
            flats.append((operand if same else operand.expand(shape))._flat())
        elif isinstance(operand, torch.Tensor) and operand.shape in (shape, torch.Size()):
            flats.append(operand.expand(shape).reshape(-1).tolist())
        else:
            return None
    try:
        out = [pair(a, b) for a, b in zip(*flats)]
    except (TypeError, ValueError, RuntimeError):
        return None
    if not out:
        return torch.zeros(shape, dtype=torch.bool)
    return torch.tensor(out).reshape(shape)


_NO_VALUE = object()


def _single_value(value):
    """The one value ``value`` stands for: itself, an entry's value, or ``_NO_VALUE`` for a
    stack whose elements differ."""
    if isinstance(value, NonTensorDataBase):
        return value.data
    if getattr(type(value), "_is_non_tensor", False):
        flat = value._flat()
        if flat and all(same_value(v, flat[0]) for v in flat[1:]):
            return flat[0]
        return _NO_VALUE
    return value


def _all_numbers(value) -> bool:
    """True for (nested) lists of bools, ints and floats only: ``torch.tensor`` takes them."""
    for item in value:
        if type(item) is list:
            if not _all_numbers(item):
                return False
        elif type(item) not in (bool, int, float):
            return False
    return True


def entry_from_list(
    value: list, list_to_stack: bool
) -> torch.Tensor | NonTensorDataBase | TensorCollection:
    """What a list assigned to a key becomes: a tensor, a NonTensorStack, or one NonTensorData.

    With ``list_to_stack`` on, (nested) lists of numbers become a tensor and other
    lists a stack of their items (one batch dimension per level of equal-length
    lists). Off, the list goes through ``numpy.asarray``: a numeric array becomes a
    tensor and any other array is held by one NonTensorData.
    """
    if not list_to_stack:
        array = np.asarray(value)
        if array.dtype.kind in "biufc":
            return torch.as_tensor(array)
        return NonTensorData(array)
    if _all_numbers(value):
        try:
            return torch.tensor(value)
        except (ValueError, TypeError, RuntimeError):
            pass  # ragged lists of numbers: one tensor per item
        if all(type(v) is list for v in value):
            return build_stack([NonTensorData(entry_from_list(v, True)) for v in value], 0)
    return stack_from_list(value)


def share_values(entries: list) -> None:
    """Moves the values of ``entries`` (non-tensor entries) that JSON holds to shared memory.

    The hook of ``share_memory_``: the values go to one new buffer (see
    :mod:`tensordict._shared_value`); other values, and values shared already, stay.
    """
    todo = {}
    for entry in entries:
        value = entry._data
        if type(value) is not SharedValue and holds_json(value):
            todo[id(entry)] = entry
    cells = SharedValue.share([entry._data for entry in todo.values()])
    for entry, cell in zip(todo.values(), cells):
        object.__setattr__(entry, "_data", cell)


def _dummy(batch_size: torch.Size) -> torch.Tensor:
    # A zero-memory tensor of the batch shape: shape functions run on it to tell
    # the batch size they produce.
    return torch.zeros((), dtype=torch.uint8).expand(batch_size)


_FIELDS = frozenset(("data", "_batch_size", "_device", "_metadata", "_locked", "_names"))
"""The attributes an entry may be given: its slots (``batch_size`` is a property over one)."""


class _NoKeys:
    """The keys of a non-tensor entry: none, with the interface of a tensordict's key view."""

    __slots__ = ()

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __contains__(self, key) -> bool:
        return False

    def __eq__(self, other) -> bool:
        try:
            return not set(other)
        except TypeError:
            return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return "_KeysView([])"


class HoldsNoStorage:
    """The storage questions of a non-tensor entry or a stack of them: there is no tensor storage."""

    __slots__ = ()

    def is_memmap(self) -> bool:
        """Always True: with no tensor storage, a non-tensor entry (or a stack of them) never keeps its tensordict from being memory-mapped.

        Returns:
            True.

        Examples:
            >>> NonTensorData("a").is_memmap(), NonTensorStack("a").is_memmap()
            (True, True)
        """
        return True

    def is_shared(self) -> bool:
        """Always True: a non-tensor entry (or a stack of them) holds no tensor storage to share; it is pickled with its tensordict.

        Returns:
            True.

        Examples:
            >>> NonTensorData("a").is_shared(), NonTensorStack("a").is_shared()
            (True, True)
        """
        return True


class NonTensorDataBase(HoldsNoStorage):
    """The common base of :class:`NonTensorData` and :class:`MetaData`: one Python value with a batch size.

    It holds the value and the batch size and device of the level that holds
    it; what the subclasses change is what stacking several entries gives (see
    each). ``isinstance(value, NonTensorDataBase)`` tells either kind of
    single-value entry; :func:`is_non_tensor` also accepts a ``NonTensorStack``.

    Args:
        data (Any): the value; an entry given here is unwrapped.
        batch_size (torch.Size or sequence of int, optional): the batch size.
            Defaults to ``torch.Size([])``.
        device (torch.device, str or int, optional): the device. Defaults to ``None``.

    Keyword Args:
        metadata (Any, optional): extra information kept with the value. Defaults to ``None``.
        names (list of str, optional): the names of the batch dims (see :attr:`names`).
            Defaults to ``None``.

    Examples:
        >>> isinstance(NonTensorData("a"), NonTensorDataBase), isinstance(MetaData("a"), NonTensorDataBase)
        (True, True)
    """

    __slots__ = {
        "_data": None,  # the value, or the SharedValue that holds it (see ``data``)
        "_batch_size": None,
        "_device": None,
        "_metadata": None,
        "_locked": None,
        "_names": None,
        # An entry has no attributes beyond its fields (see ``__setattr__``); the empty
        # ``__dict__`` is there for code that reads ``vars(entry)``, as the reference allows.
        "__dict__": None,
    }
    _is_tensor_collection = True
    _is_non_tensor = True
    _is_tensorclass = False
    _is_lazy = False
    _memmap_record = "NonTensorData"
    _memmap_type = "<class 'tensordict.tensorclass.NonTensorData'>"
    _spreads = True  # expand and unsqueeze give a NonTensorStack (see _spread)

    def __init__(
        self,
        data: Any,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        *,
        metadata: Any = None,
        names: Sequence[str | None] | None = None,
    ) -> None:
        if isinstance(data, NonTensorDataBase):
            data = data.data
        self._locked = False
        self._names = None
        self.data = data
        self._batch_size = torch.Size(() if batch_size is None else batch_size)
        self._device = None if device is None else torch.device(device)
        self._metadata = metadata
        if names is not None:
            self.names = names

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # torch.stack and torch.cat of entries; any other function does not apply to a value.
        kwargs = kwargs or {}
        if func in (torch.stack, torch.cat) and args:
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            items = list(args[0])
            return stack_entries(items, dim) if func is torch.stack else cat_entries(items, dim)
        return NotImplemented

    def __setattr__(self, name: str, value) -> None:
        if name not in _FIELDS and not isinstance(getattr(type(self), name, None), property):
            msg = (
                f"cannot set the attribute {name!r} of a {type(self).__name__}: it has no such "
                "field (its fields are 'data' and 'batch_size'); keep extra information in "
                "metadata= or in another entry"
            )
            raise UnknownFieldError(msg)
        if name == "data" and self._locked:
            msg = (
                f"cannot reassign the value of a locked {type(self).__name__} (it belongs to a "
                "locked tensordict); write through the tensordict instead (td.set_(key, value)) "
                "or unlock it first"
            )
            raise LockedError(msg)
        object.__setattr__(self, name, value)

    @property
    def data(self) -> Any:
        """The value held, shared by every entry derived from this one.

        It may be reassigned, unless the entry is locked (see ``lock_``); the new
        value is not checked. After ``share_memory_()`` the value of an entry that
        JSON holds lives in shared memory: reading it gives what any process wrote
        last, and assigning it writes there (see :mod:`tensordict._shared_value`).

        Examples:
            >>> entry = NonTensorData({"level": 3}, [2])
            >>> entry.data["level"], entry[0].data is entry.data
            (3, True)
        """
        value = self._data
        return value.get() if type(value) is SharedValue else value

    @data.setter
    def data(self, value: Any) -> None:
        cell = getattr(self, "_data", None)
        if type(cell) is SharedValue and type(value) is not SharedValue:
            cell.set(value)  # in place: every process holding the entry sees it
        else:
            object.__setattr__(self, "_data", value)

    def __getstate__(self) -> dict:
        state = {name: getattr(self, name) for name in _FIELDS if name != "data"}
        state["data"] = self._data  # a SharedValue pickles as its shared memory
        return state

    def __setstate__(self, state: dict) -> None:
        # The fields are restored as they were, a locked entry's value included.
        for name, value in state.items():
            object.__setattr__(self, "_data" if name == "data" else name, value)

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the level that holds the value (``shape`` is the same property).

        Assigning it replaces the batch size in place; the value is not looked at,
        and nothing else is checked.

        Returns:
            The batch size, a ``torch.Size``.

        Raises:
            TypeError: on assignment, if the new size is not an iterable of ints.

        Examples:
            >>> entry = NonTensorData("a", [2])
            >>> entry.batch_size = [2, 3]
            >>> entry.batch_size, entry.shape
            (torch.Size([2, 3]), torch.Size([2, 3]))
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: ShapeType) -> None:
        self._batch_size = torch.Size(value)

    shape = batch_size

    @property
    def names(self) -> list:
        """The names of the batch dims: those of the tensordict that holds the entry.

        A tensordict gives its entries its names when they are set (``td.names = ...``,
        ``refine_names``, ...); an entry derived from this one (indexed, reshaped, ...)
        has none. Assigning a list (one name or ``None`` per batch dim) or ``None``
        names the entry itself.

        Returns:
            A new list with a str or ``None`` per batch dim.

        Raises:
            ValueError: on assignment, if the list does not hold one item per batch dim.

        Examples:
            >>> td = TensorDict({"s": "a"}, [2])
            >>> td.names = ["time"]
            >>> td.get("s").names, NonTensorData("a", [2]).names
            (['time'], [None])
        """
        names = self._names
        return [None] * len(self._batch_size) if names is None else list(names)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is not None:
            value = list(value)
            if len(value) != len(self._batch_size):
                msg = (
                    f"names needs one name (or None) per batch dim, {len(self._batch_size)}, "
                    f"got {value!r}"
                )
                raise ValueError(msg)
        self._names = value

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions (``ndim`` is the same property).

        Returns:
            ``len(batch_size)``.

        Raises:
            AttributeError: on assignment: the property is read-only.

        Examples:
            >>> entry = NonTensorData("a", [2, 3])
            >>> entry.batch_dims, entry.ndim
            (2, 2)
        """
        return len(self._batch_size)

    ndim = batch_dims

    @property
    def device(self) -> torch.device | None:
        """The device of the level that holds the value, or ``None`` for none.

        The value itself is not on any device; :meth:`to` and :meth:`cpu` return
        an entry with another device.

        Returns:
            A ``torch.device``, or ``None``.

        Raises:
            AttributeError: on assignment: the property is read-only.

        Examples:
            >>> NonTensorData("a", device="cpu").device
            device(type='cpu')
            >>> NonTensorData("a").device is None
            True
        """
        return self._device

    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable | None = None,
        *,
        sort: bool = False,
    ) -> _NoKeys:
        """Returns the keys of the entry: none, whatever the arguments (the value is not a key).

        A non-tensor entry is a leaf of the tensordict that holds it; code that walks a
        tree through ``keys()`` finds nothing below it.

        Args:
            include_nested, leaves_only, is_leaf: as in ``TensorDict.keys``; ignored.

        Keyword Args:
            sort (bool, optional): as in ``TensorDict.keys``; ignored.

        Returns:
            An empty view: it iterates over nothing, has length 0 and contains no key.

        Examples:
            >>> entry = NonTensorData("a", [2])
            >>> list(entry.keys()), len(entry.keys(True, True)), "data" in entry.keys()
            ([], 0, False)
        """
        return _NoKeys()

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable | None = None,
        *,
        sort: bool = False,
    ) -> Iterator:
        """Returns an iterator over the values of the entry's keys: none (see :meth:`keys`).

        Args:
            include_nested, leaves_only, is_leaf: as in ``TensorDict.values``; ignored.

        Keyword Args:
            sort (bool, optional): ignored.

        Returns:
            An empty iterator.

        Examples:
            >>> list(NonTensorData("a").values())
            []
        """
        return iter(())

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable | None = None,
        *,
        sort: bool = False,
    ) -> Iterator:
        """Returns an iterator over the ``(key, value)`` pairs of the entry: none (see :meth:`keys`).

        Args:
            include_nested, leaves_only, is_leaf: as in ``TensorDict.items``; ignored.

        Keyword Args:
            sort (bool, optional): ignored.

        Returns:
            An empty iterator.

        Examples:
            >>> list(NonTensorData("a").items(True, True))
            []
        """
        return iter(())

    def tolist(self) -> Any:
        """Returns the value once per batch element, in nested lists of the batch size.

        Without batch dimensions, the value itself.

        Returns:
            ``data`` (not copied) in one nested list per batch dimension, as
            ``Tensor.tolist`` nests numbers.

        Examples:
            >>> NonTensorData("a", batch_size=[2, 3]).tolist()
            [['a', 'a', 'a'], ['a', 'a', 'a']]
            >>> NonTensorData([1, 2]).tolist()
            [1, 2]
        """
        if not self._batch_size:
            return self.data
        return nest_values(self._flat(), self._batch_size)

    def _flat(self) -> list:
        """The value of every batch element, in row-major order (the same object each time)."""
        return [self.data] * self._batch_size.numel()

    def _dict_entry(self, convert_tensors: bool):
        # What ``to_dict`` of the tensordict holding this entry gives for it: the value.
        return self.data

    def _numpy_entry(self):
        # What ``numpy()`` of the tensordict holding this entry gives for it: the value.
        return self.data

    def _leafwise_operand(self):
        # As the operand of a tensordict's leafwise operation, this entry is itself.
        return self

    def _with(self, batch_size) -> NonTensorDataBase:
        out = type(self)(self.data, batch_size, self._device, metadata=self._metadata)
        if type(self._data) is SharedValue:
            object.__setattr__(out, "_data", self._data)  # a view shares the shared value
        return out

    def _reshaped(self, fn) -> NonTensorData:
        return self._with(fn(_dummy(self._batch_size)).shape)

    def _spread(self, fn):
        # expand and unsqueeze: a NonTensorData spread over more batch dims becomes a
        # NonTensorStack of its value, one element per batch element, as in the reference
        # (MetaData, one value for the whole batch, stays one entry).
        shape = fn(_dummy(self._batch_size)).shape
        if len(shape) == len(self._batch_size) or not self._spreads:
            return self._with(shape)
        return STACK_BUILDERS["from_entry"](self._with(shape))

    def __getitem__(self, index) -> NonTensorData:
        return self._reshaped(lambda d: d[index])

    def __setitem__(self, index, value) -> None:
        """Writes ``value`` at ``index``: the entry must still hold one value for its whole batch.

        The same value anywhere, or one new value for every element (an index that
        selects the whole batch, such as ``...`` or ``True``), is written in place,
        also when the entry is locked, as a write into a locked tensor is. Another
        value for part of the batch cannot be held by one entry: its tensordict can
        take it (``td[index] = ...`` makes the entry a ``NonTensorStack``).

        Args:
            index: an index of the batch dims.
            value: a value, or a non-tensor entry whose elements all hold one value.

        Raises:
            ValueError: if ``value`` differs from the value held and ``index`` does not
                cover every element (ValueAtIndexError, also a RuntimeError).

        Examples:
            >>> entry = NonTensorData("a", batch_size=[2])
            >>> entry[...] = "b"
            >>> entry.data
            'b'
        """
        new = _single_value(value)
        if new is not _NO_VALUE and same_value(new, self.data):
            return
        selected = _dummy(self._batch_size)[index].numel()
        if new is not _NO_VALUE and selected == self._batch_size.numel():
            object.__setattr__(self, "data", new)  # every element: the one value changes
            return
        msg = (
            f"cannot assign {value!r} to part of the non-tensor entry holding {self.data!r}: "
            "it holds one value for its whole batch; write through its tensordict "
            "(td[index] = ...), which makes it a NonTensorStack, or index "
            "NonTensorStack.maybe_to_stack(entry) instead"
        )
        raise ValueAtIndexError(msg)

    def __call__(self, *args, **kwargs):
        """Calls the value held (a function stored in a tensordict) with the arguments given.

        Returns:
            What ``data(*args, **kwargs)`` returns.

        Raises:
            TypeError: if the value is not callable.

        Examples:
            >>> td = TensorDict(f=lambda x: x + 1)
            >>> td.get("f")(1)
            2
        """
        return self.data(*args, **kwargs)

    def _written_at(self, index, value):
        # The hook of a tensordict's index assignment (td[index] = ..., set_at_, update_at_,
        # copy_at_): the entry that holds ``value`` at ``index`` and this entry's values
        # elsewhere. The same value keeps this entry; another one cannot be held at an index
        # by one value for the whole batch, so it gives a NonTensorStack of this entry's
        # values, written at ``index`` (with this entry's device and lock).
        if not getattr(type(value), "_is_non_tensor", False) or isinstance(
            value, NonTensorDataBase
        ):
            new = value.data if isinstance(value, NonTensorDataBase) else value
            if same_value(new, self.data):
                return self
            if not self._batch_size:
                out = self._with(self._batch_size)
                object.__setattr__(out, "data", new)
                out._locked = self._locked
                return out
        stack = STACK_BUILDERS["from_entry"](self)
        stack[index] = value
        if self._locked:
            stack.lock_()
        return stack

    def __len__(self) -> int:
        return self._batch_size[0] if self._batch_size else 0

    def __eq__(self, other):
        """Compares values: with another non-tensor entry, element by element (a bool tensor).

        Entries compare as tensors of their batch sizes would, broadcast against each
        other: the result is a ``torch.bool`` tensor of the broadcast batch size; so
        does a tensor of the batch size, whose numbers are compared with the value.
        Any other object is compared with the value held, giving one ``bool``.

        Examples:
            >>> NonTensorData("a", [2]) == NonTensorStack("a", "b")
            tensor([ True, False])
            >>> NonTensorData("a", [2]) == "a"
            True
        """
        if getattr(type(other), "_is_non_tensor", False) or isinstance(other, torch.Tensor):
            out = combine_values(operator.eq, [self, other])
            if out is not None:
                return out
        return same_value(self.data, other)

    def __ne__(self, other):
        if getattr(type(other), "_is_non_tensor", False) or isinstance(other, torch.Tensor):
            out = combine_values(operator.ne, [self, other])
            if out is not None:
                return out
        return not same_value(self.data, other)

    def __hash__(self):
        return id(self)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(data={self.data}, batch_size={self._batch_size}, "
            f"device={self._device})"
        )

    def _shape_method(name, doc, spread=False):  # noqa: N805 - a factory used in the class body only
        def method(self, *args, **kwargs):
            shaped = self._spread if spread else self._reshaped
            return shaped(lambda d: getattr(d, name)(*args, **kwargs))

        method.__name__ = name
        method.__doc__ = doc
        return method

    reshape = _shape_method(
        "reshape",
        """Returns an entry with the same value and a new batch size of the same number of elements.

        The new size is computed as ``Tensor.reshape`` computes the shape of a
        tensor of this batch size; the entry itself is unchanged.

        Args:
            *shape (int or sequence of int): the new batch size; one ``-1`` is inferred.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            RuntimeError: if the new size does not hold as many elements as the batch size.
            TypeError: if the sizes are not ints.

        Examples:
            >>> NonTensorData("a", [2, 3]).reshape(-1).batch_size
            torch.Size([6])
        """,
    )
    view = _shape_method(
        "view",
        """Returns an entry with the same value and a new batch size of the same number of elements.

        The same as :meth:`reshape`: the value holds no data whose layout could
        forbid a view.

        Args:
            *shape (int or sequence of int): the new batch size; one ``-1`` is inferred.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            RuntimeError: if the new size does not hold as many elements as the batch size.
            TypeError: if the sizes are not ints.

        Examples:
            >>> NonTensorData("a", [6]).view(2, 3).batch_size
            torch.Size([2, 3])
        """,
    )
    permute = _shape_method(
        "permute",
        """Returns an entry with the same value and the batch dimensions reordered.

        Args:
            *dims (int or sequence of int): the new order, one index per batch dimension.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            RuntimeError: if ``dims`` does not hold one index per batch dimension.
            IndexError: if an index is out of range.

        Examples:
            >>> NonTensorData("a", [2, 3, 4]).permute(2, 0, 1).batch_size
            torch.Size([4, 2, 3])
        """,
    )
    transpose = _shape_method(
        "transpose",
        """Returns an entry with the same value and two batch dimensions swapped.

        Args:
            dim0 (int): the first dimension.
            dim1 (int): the second dimension.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            IndexError: if a dimension is out of range.
            TypeError: if a dimension is missing or not an int.

        Examples:
            >>> NonTensorData("a", [2, 3]).transpose(0, 1).batch_size
            torch.Size([3, 2])
        """,
    )
    squeeze = _shape_method(
        "squeeze",
        """Returns an entry with the same value and batch dimensions of size 1 removed.

        Args:
            dim (int or tuple of int, optional): only these dimensions are removed,
                and only if their size is 1. Defaults to every dimension of size 1.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            IndexError: if a dimension is out of range.

        Examples:
            >>> entry = NonTensorData("a", [1, 3, 1])
            >>> entry.squeeze().batch_size, entry.squeeze(0).batch_size
            (torch.Size([3]), torch.Size([3, 1]))
        """,
    )
    unsqueeze = _shape_method(
        "unsqueeze",
        """Returns the value spread over the batch size with a dimension of size 1 inserted at ``dim``.

        A :class:`NonTensorData` gives a ``NonTensorStack`` holding the value once per
        element of the new batch size, as the well-known API does; a :class:`MetaData`
        gives a :class:`MetaData` of the new batch size.

        Args:
            dim (int): the position of the new dimension; a negative one counts from
                the end of the new batch size.

        Returns:
            A new ``NonTensorStack`` (or :class:`MetaData`) sharing the value.

        Raises:
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> out = NonTensorData("a", [2]).unsqueeze(-1)
            >>> type(out).__name__, out.batch_size, out.tolist()
            ('NonTensorStack', torch.Size([2, 1]), [['a'], ['a']])
            >>> type(MetaData("a", [2]).unsqueeze(0)).__name__
            'MetaData'
        """,
        spread=True,
    )

    def flatten(self, start_dim: int | None = 0, end_dim: int | None = -1) -> NonTensorDataBase:
        """Returns an entry with the same value and batch dimensions ``start_dim`` to ``end_dim`` merged.

        Args:
            start_dim (int, optional): the first dimension merged; ``None`` is 0.
                Defaults to 0.
            end_dim (int, optional): the last dimension merged; ``None`` is -1.
                Defaults to -1.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata
            (without batch dimensions, one of batch size ``[1]``).

        Raises:
            IndexError: if a dimension is out of range.
            RuntimeError: if ``start_dim`` comes after ``end_dim``.

        Examples:
            >>> NonTensorData("a", [2, 3, 4]).flatten(1).batch_size
            torch.Size([2, 12])
            >>> NonTensorData("a").flatten(None, None).tolist()
            ['a']
        """
        start = 0 if start_dim is None else start_dim
        end = -1 if end_dim is None else end_dim
        return self._reshaped(lambda d: d.flatten(start, end))

    unflatten = _shape_method(
        "unflatten",
        """Returns an entry with the same value and batch dimension ``dim`` split into ``sizes``.

        Args:
            dim (int): the dimension to split.
            sizes (sequence of int): the sizes it is split into; their product must
                be its size (one ``-1`` is inferred).

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            IndexError: if ``dim`` is out of range.
            RuntimeError: if the product of ``sizes`` is not the size of ``dim``.

        Examples:
            >>> NonTensorData("a", [6]).unflatten(0, (2, 3)).batch_size
            torch.Size([2, 3])
        """,
    )
    expand = _shape_method(
        "expand",
        """Returns the value spread over its batch size broadcast to ``shape``.

        New leading batch dims give, for a :class:`NonTensorData`, a ``NonTensorStack``
        holding the value once per element, as the well-known API does (a
        :class:`MetaData` gives a :class:`MetaData`); as many batch dims as before
        give a new entry like this one.

        Args:
            *shape (int or sequence of int): the new batch size; dimensions of size 1
                may grow, new leading dimensions may be added, and ``-1`` keeps a size.

        Returns:
            A new ``NonTensorStack``, or an entry of this class, sharing the value.

        Raises:
            RuntimeError: if a dimension larger than 1 would change, or ``shape`` has
                fewer dimensions than the batch size.

        Examples:
            >>> out = NonTensorData("a", [3]).expand(2, 3)
            >>> type(out).__name__, out.batch_size
            ('NonTensorStack', torch.Size([2, 3]))
            >>> type(NonTensorData("a", [1, 3]).expand(2, 3)).__name__
            'NonTensorData'
        """,
        spread=True,
    )
    repeat = _shape_method(
        "repeat",
        """Returns an entry with the same value and each batch dimension multiplied by a count.

        Args:
            *repeats (int or sequence of int): one count per batch dimension; extra
                leading counts add leading dimensions.

        Returns:
            A new :class:`NonTensorData` sharing the value, device and metadata.

        Raises:
            RuntimeError: if there are fewer counts than batch dimensions.

        Examples:
            >>> NonTensorData("a", [2, 3]).repeat(2, 1).batch_size
            torch.Size([4, 3])
        """,
    )
    del _shape_method

    def _split_like(self, fn) -> tuple:
        return tuple(self._with(part.shape) for part in fn(_dummy(self._batch_size)))

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple:
        """Splits the batch size along ``dim`` as ``Tensor.split`` would; the pieces share the value.

        Args:
            split_size (int or list of int): the size of each piece (the last may be
                smaller), or the list of the pieces' sizes.
            dim (int, optional): the batch dimension to split. Defaults to 0.

        Returns:
            A tuple of new :class:`NonTensorData` entries, one per piece.

        Raises:
            SplitSizeError: if an int ``split_size`` is not positive (a ``ValueError``).
            RuntimeError: if a list of sizes does not add up to the size of ``dim``.
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> [part.batch_size for part in NonTensorData("a", [5]).split(2)]
            [torch.Size([2]), torch.Size([2]), torch.Size([1])]
        """
        check_split_size(split_size)
        return self._split_like(lambda d: d.split(split_size, dim))

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """Splits the batch size along ``dim`` into ``chunks`` pieces as ``Tensor.chunk`` would.

        Args:
            chunks (int): the number of pieces asked for; fewer come back when the
                size of ``dim`` does not allow that many.
            dim (int, optional): the batch dimension to split. Defaults to 0.

        Returns:
            A tuple of new :class:`NonTensorData` entries that share the value.

        Raises:
            RuntimeError: if ``chunks`` is not positive.
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> [part.batch_size for part in NonTensorData("a", [2, 5]).chunk(2, dim=1)]
            [torch.Size([2, 3]), torch.Size([2, 2])]
        """
        return self._split_like(lambda d: d.chunk(chunks, dim))

    def unbind(self, dim: int = 0) -> tuple:
        """Removes batch dimension ``dim`` as ``Tensor.unbind`` would: one entry per index along it.

        Args:
            dim (int, optional): the batch dimension to remove. Defaults to 0.

        Returns:
            A tuple of new :class:`NonTensorData` entries that share the value.

        Raises:
            IndexError: if ``dim`` is out of range (an entry without batch
                dimensions cannot be unbound).

        Examples:
            >>> parts = NonTensorData("a", [3, 2]).unbind(0)
            >>> len(parts), parts[0].batch_size, parts[0].data
            (3, torch.Size([2]), 'a')
        """
        return self._split_like(lambda d: d.unbind(dim))

    def _fast_apply(self, fn, *others, batch_size=None, device=NO_DEFAULT, **kwargs):
        # What a tensordict's apply (and what is built on it: to, clone, ...) gives for this
        # entry: functions map tensors, so the entry itself, or a new one with the new batch
        # size or device. A comparison of tensordicts compares the values (combine_values).
        if others:
            combined = combine_values(fn, [self, *others])
            if combined is not None:
                return combined
        if device is NO_DEFAULT or device is None or device == self._device:
            return self if batch_size is None else self._with(batch_size)
        out = self._with(self._batch_size if batch_size is None else batch_size)
        out._device = torch.device(device)
        return out

    def _tree_value(self) -> tuple:
        # what the walk of a tree (tensordict._ops.tree) records for a non-tensor entry
        device = self.device
        return (self.data, list(self.batch_size), str(device) if device is not None else None)

    def clone(self, recurse: bool = True) -> NonTensorData:
        """Returns a new entry with the same batch size, device and metadata, sharing the value.

        A value that ``share_memory_()`` put in shared memory is read out: writes into
        the copy do not reach the source.

        Args:
            recurse (bool, optional): accepted for compatibility with tensordicts;
                the value is shared either way. Defaults to True.

        Returns:
            A new :class:`NonTensorData`.

        Examples:
            >>> entry = NonTensorData([1, 2], [2])
            >>> copy = entry.clone()
            >>> copy is entry, copy.data is entry.data
            (False, True)
        """
        # a value in shared memory is read out: the copy does not write into the source's
        return type(self)(self.data, self._batch_size, self._device, metadata=self._metadata)

    def to(self, *args: Any, **kwargs: Any) -> NonTensorData:
        """Returns a new entry with another device, or the same one; dtypes and the like are ignored.

        The device is the ``device`` keyword or a positional string or
        ``torch.device`` (the last positional one wins over the keyword). Any
        other argument, such as a dtype, an int device index or a tensor, is
        ignored, as there is no tensor to convert.

        Args:
            *args: a device (a string or a ``torch.device``) and anything else
                ``Tensor.to`` accepts.

        Keyword Args:
            device (torch.device or str, optional): the new device.
            **kwargs: ignored.

        Returns:
            A new :class:`NonTensorData` sharing the value, with the new device if
            one was found.

        Raises:
            RuntimeError: if a device string names no device type.

        Examples:
            >>> entry = NonTensorData("a", [2])
            >>> entry.to("cpu").device, entry.to(torch.float64).device is None
            (device(type='cpu'), True)
        """
        device = kwargs.get("device")
        for arg in args:
            if isinstance(arg, (str, torch.device)):
                device = arg
        out = self._with(self._batch_size)
        if device is not None:
            out._device = torch.device(device)
        return out

    def cpu(self) -> NonTensorData:
        """Returns a new entry sharing the value, with the CPU as its device.

        Returns:
            A new :class:`NonTensorData` whose ``device`` is ``cpu``.

        Examples:
            >>> NonTensorData("a", [2]).cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def lock_(self) -> NonTensorData:
        """Locks the entry, and returns it: its value can no longer be reassigned.

        A tensordict locks the non-tensor entries it holds with itself (``lock_``,
        ``memmap``, ...) and unlocks them with itself. A locked entry refuses
        ``entry.data = value``; writing through its tensordict (``td.set_``,
        ``td.update_``, index assignment) still works, as it does for a tensor.

        Returns:
            The entry itself.

        Examples:
            >>> td = TensorDict({"name": "cartpole"}, [2]).lock_()
            >>> td.get("name").is_locked, td.unlock_().get("name").is_locked
            (True, False)
        """
        self._locked = True
        return self

    def unlock_(self) -> NonTensorData:
        """Unlocks the entry, and returns it (see :meth:`lock_`).

        Returns:
            The entry itself.

        Examples:
            >>> NonTensorData("a").lock_().unlock_().is_locked
            False
        """
        self._locked = False
        return self

    def _propagate_lock(self, locked: bool) -> None:
        # The hook a tensordict's lock_ and unlock_ call on each of its entries.
        self._locked = locked

    @property
    def is_locked(self) -> bool:
        """True when the entry is locked (see :meth:`lock_`); a new entry is not.

        Entries derived from this one (by indexing, reshaping, :meth:`clone`, ...)
        are not locked.

        Returns:
            True when locked.

        Raises:
            AttributeError: on assignment: the property is read-only.

        Examples:
            >>> entry = NonTensorData("a")
            >>> entry.is_locked, entry.lock_().is_locked, entry[None].is_locked
            (False, True, False)
        """
        return self._locked

    @classmethod
    def _stack(cls, items: list, dim: int):
        if capture_non_tensor_stack() and all(type(i) is NonTensorData for i in items):
            first = items[0]
            if all(other.data == first.data for other in items[1:]):
                return first._with(_stacked_shape(items, dim))
        return build_stack(items, dim)


def _stacked_shape(items: list, dim: int) -> torch.Size:
    return torch.stack([_dummy(i._batch_size) for i in items], dim).shape


class NonTensorData(NonTensorDataBase):
    """A non-tensor value held in a tensordict, with the batch size of its level.

    A tensordict stores every value that does not become a tensor (a string, a
    list of numbers, any object) in one of these. It holds one Python value for
    the whole batch: indexing, reshaping, splitting or stacking it computes the
    new batch size and keeps the value, which is shared, never copied. Reading
    ``td[key]`` gives the value itself; ``td.get(key)`` gives this wrapper.

    Args:
        data (Any): the value. A :class:`NonTensorData` given here is unwrapped:
            its value is taken.
        batch_size (torch.Size or sequence of int, optional): the batch size of
            the level that holds the value. It is converted with ``torch.Size``
            and not checked further. Defaults to ``None``, which is ``torch.Size([])``.
        device (torch.device, str or int, optional): the device of that level.
            Defaults to ``None``.

    Keyword Args:
        metadata (Any, optional): extra information kept with the value; every
            entry derived from this one (by reshaping, indexing, :meth:`to`, ...)
            keeps it. Defaults to ``None``.

    Raises:
        TypeError: if ``batch_size`` is not an iterable of ints.
        RuntimeError: if ``device`` is a string that names no device type.

    Examples:
        >>> NonTensorData("cartpole", batch_size=[2])
        NonTensorData(data=cartpole, batch_size=torch.Size([2]), device=None)
        >>> td = TensorDict({"name": "cartpole"}, batch_size=[2])
        >>> td["name"], td.get("name").batch_size
        ('cartpole', torch.Size([2]))
    """

    __slots__ = ()


class MetaData(NonTensorDataBase):
    """One Python value for the whole batch, such as a configuration or a dataset name.

    It behaves as :class:`NonTensorData` except for stacking: items that all hold
    the same object (compared with ``is``, not ``==``) stack into one
    :class:`MetaData` with the stacked batch size; other items give a
    ``NonTensorStack``. Indexing, reshaping and ``unsqueeze`` keep a
    :class:`MetaData`. :meth:`clone` copies the value (a deep copy), so a clone
    and its source no longer hold the same object.

    ``MetaData[cls]`` is a subclass whose values must be instances of ``cls``.

    Args:
        data (Any): the value; an entry given here is unwrapped.
        batch_size (torch.Size or sequence of int, optional): the batch size,
            usually that of the tensordict that holds it. Defaults to ``torch.Size([])``.
        device (torch.device, str or int, optional): the device; the value is not
            moved. Defaults to ``None``.

    Keyword Args:
        metadata (Any, optional): extra information kept with the value. Defaults to ``None``.
        names (list of str, optional): the names of the batch dims (see :attr:`names`).
            Defaults to ``None``.

    Raises:
        TypeError: for ``MetaData[cls]``, if the value is not an instance of ``cls``.

    Examples:
        >>> config = {"lr": 0.1}
        >>> td = TensorDict({"a": torch.zeros(3), "config": MetaData(config, [3])}, [3])
        >>> td["config"] is config
        True
        >>> stacked = torch.stack([td, td])
        >>> type(stacked.get("config")).__name__, stacked["config"] is config
        ('MetaData', True)
        >>> type(torch.stack([MetaData({"a": 1}), MetaData({"a": 1})])).__name__
        'NonTensorStack'
        >>> MetaData[str]("cartpole").data
        'cartpole'
    """

    __slots__ = ()
    _spreads = False  # one value for the whole batch, whatever its size
    _memmap_record = "MetaData"
    _memmap_type = "<class 'tensordict.tensorclass.MetaData'>"
    _typed: dict = {}
    _expected: type | None = None

    def __init__(
        self,
        data: Any,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        *,
        metadata: Any = None,
        names: Sequence[str | None] | None = None,
    ) -> None:
        expected = type(self)._expected
        value = data.data if isinstance(data, NonTensorDataBase) else data
        if expected is not None and not isinstance(value, expected):
            msg = (
                f"{type(self).__name__} expects a value of type {expected.__name__}, got "
                f"{type(value).__name__} ({value!r}); pass a {expected.__name__} or use MetaData"
            )
            raise EntryTypeError(msg)
        super().__init__(data, batch_size, device, metadata=metadata, names=names)

    def __class_getitem__(cls, expected: type) -> type:
        if not isinstance(expected, type):
            msg = f"MetaData[...] takes a class, got {expected!r}"
            raise EntryTypeError(msg)
        typed = MetaData._typed.get(expected)
        if typed is None:
            typed = type(
                f"MetaData[{expected.__name__}]",
                (MetaData,),
                {"__slots__": (), "_expected": expected, "__module__": cls.__module__},
            )
            MetaData._typed[expected] = typed
        return typed

    def __reduce__(self):
        # MetaData[cls] is made on demand, so pickle cannot find it by name: the entry is
        # rebuilt from the expected class, which pickle finds.
        return (_new_metadata, (type(self)._expected,), self.__getstate__())

    @classmethod
    def _stack(cls, items: list, dim: int):
        first = items[0]
        if all(isinstance(i, MetaData) and i.data is first.data for i in items):
            return first._with(_stacked_shape(items, dim))
        return build_stack(items, dim)

    def clone(self, recurse: bool = True) -> MetaData:
        """Returns a new entry with the same batch size and device, holding a deep copy of the value.

        Args:
            recurse (bool, optional): accepted for compatibility; the value is
                copied either way. Defaults to True.

        Returns:
            A new :class:`MetaData`.

        Examples:
            >>> entry = MetaData({"lr": 0.1}, [2])
            >>> copy = entry.clone()
            >>> copy.data == entry.data, copy.data is entry.data
            (True, False)
        """
        return type(self)(
            copy.deepcopy(self.data), self._batch_size, self._device, metadata=self._metadata
        )


def _new_metadata(expected: type | None) -> MetaData:
    """An empty MetaData (or ``MetaData[expected]``) that unpickling fills (see ``__reduce__``)."""
    cls = MetaData if expected is None else MetaData[expected]
    return cls.__new__(cls)
