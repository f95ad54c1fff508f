"""UnbatchedTensor: a tensor entry without batch dimensions, left as it is by batch operations.

It sits at the bottom of the package (it imports only torch), so the core
paths of the classes test for it directly: ``is_unbatched(value)`` is the one
check each path makes (construction and ``set``, indexing, index assignment,
the shape operations, stacking and concatenation, memory mapping).

What each batch operation does with an unbatched entry:

- construction, ``set``, ``batch_size = ...``: the entry's shape is not
  checked against the batch size;
- indexing (``td[idx]``), ``reshape``, ``view``, ``unsqueeze``, ``squeeze``,
  ``expand``, ``permute``, ``transpose``, ``flatten``, ``unflatten``,
  ``split``, ``unbind``, ``chunk``, ``torch.stack``, ``torch.cat``: the result
  holds a new ``UnbatchedTensor`` object that shares the payload (same data,
  same shape), its :attr:`UnbatchedTensor.batch_size` being the result's;
  stacking and concatenating take the payload of the first member;
- index assignment ``td[idx] = other``: the payload of ``other``'s entry is
  copied whole; an ``other`` without the key leaves it unchanged;
- ``clone``, ``to``, arithmetic, ``apply``: the entry goes through the function
  as any tensor, and stays an ``UnbatchedTensor`` (torch keeps the subclass);
- ``memmap``: refused with ``NotImplementedError`` naming the key, before
  anything is written.

- ``auto_batch_size_``: unbatched entries are skipped; the batch size comes
  from the other entries.

- ``lazy_stack``: reading the entry gives the payload of the first member,
  its batch size being the stack's (:func:`stack_unbatched`).

Stacking members whose payloads differ (not the same storage) keeps the first
one and warns (``UserWarning``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch

from tensordict._typing import ShapeType

__all__ = ["UnbatchedTensor", "is_unbatched", "stack_unbatched"]

_EMPTY = torch.Size(())


class UnbatchedTensor(torch.Tensor):
    """A tensor entry that has no batch dimensions and that batch operations leave unchanged.

    Use it for an entry that belongs to the whole batch: a lookup table, a
    mask shared by every element, parameters. A plain tensor entry must start
    with the batch size; an ``UnbatchedTensor`` may have any shape. Indexing
    and the shape operations of the tensordict (``td[0]``, ``reshape``,
    ``unsqueeze``, ``expand``, ``torch.stack``...) give it back with its data
    and shape unchanged; other operations (arithmetic, ``clone``, ``to``)
    apply to it as to any tensor and return an ``UnbatchedTensor``. It is a
    :class:`torch.Tensor`, so ``td["a"]`` is used as one. Memory mapping an
    entry of this kind is not supported yet. Python conversions (``str``,
    ``format``, ``round``...) give what the plain tensor gives.

    Args:
        data (torch.Tensor or array-like): the payload; anything but a tensor
            goes through :func:`torch.as_tensor`. A tensor is not copied.
        batch_size (torch.Size or sequence of int, optional): the batch size
            of the tensordict holding it; a tensordict sets it when the entry
            is stored. It does not change the payload's shape. Defaults to
            ``None``, which is ``torch.Size([])``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=UnbatchedTensor(torch.zeros(3, 4)), b=torch.zeros(2, 3), batch_size=[2])
        >>> td[0]["a"].shape, td[0]["a"].batch_size
        (torch.Size([3, 4]), torch.Size([]))
        >>> td.reshape(1, 2)["a"].data_ptr() == td["a"].data_ptr()
        True
        >>> isinstance(td["a"], torch.Tensor)
        True
    """

    _is_unbatched = True

    @staticmethod
    def __new__(cls, data, batch_size=None):
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data)
        elif type(data) is not torch.Tensor:
            data = data.as_subclass(torch.Tensor)
        out = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        out._td_batch_size = _EMPTY if batch_size is None else torch.Size(batch_size)
        return out

    def __init__(self, data: Any, batch_size: ShapeType | None = None) -> None:
        pass  # everything is done in __new__; torch.Tensor.__init__ takes no data

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the tensordict that holds this entry (not a part of its shape).

        A tensor made by an operation on an ``UnbatchedTensor`` outside a
        tensordict has ``torch.Size([])``.

        Returns:
            A ``torch.Size``.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> td = TensorDict(a=UnbatchedTensor(torch.zeros(3)), batch_size=[2, 5])
            >>> td["a"].batch_size, td["a"].shape
            (torch.Size([2, 5]), torch.Size([3]))
        """
        return getattr(self, "_td_batch_size", _EMPTY)

    def rebatched(self, batch_size: torch.Size) -> UnbatchedTensor:
        """Returns a new ``UnbatchedTensor`` sharing this payload, with another batch size.

        The hook the tensordict paths call for an unbatched entry: a result
        holds a new object, so that setting its batch size leaves the
        source's alone.

        Args:
            batch_size (torch.Size): the batch size of the new holder.

        Returns:
            A new ``UnbatchedTensor`` over the same data.

        Examples:
            >>> import torch
            >>> u = UnbatchedTensor(torch.zeros(3))
            >>> v = u.rebatched(torch.Size([4]))
            >>> v.batch_size, v.data_ptr() == u.data_ptr(), u.batch_size
            (torch.Size([4]), True, torch.Size([]))
        """
        out = torch.Tensor.as_subclass(self, UnbatchedTensor)
        out._td_batch_size = batch_size
        return out

    def __repr__(self, *, tensor_contents=None) -> str:
        return f"UnbatchedTensor({torch.Tensor.as_subclass(self, torch.Tensor)!r})"

    def __str__(self) -> str:
        return str(torch.Tensor.as_subclass(self, torch.Tensor))

    def __format__(self, format_spec: str) -> str:
        # as a plain tensor formats: a 0-dim one as its Python number
        return torch.Tensor.as_subclass(self, torch.Tensor).__format__(format_spec)

    # The Python conversions give what the plain tensor gives (a value, or its TypeError).
    def __round__(self, ndigits: int | None = None):
        plain = torch.Tensor.as_subclass(self, torch.Tensor)
        return round(plain) if ndigits is None else round(plain, ndigits)

    def __trunc__(self):
        return math.trunc(torch.Tensor.as_subclass(self, torch.Tensor))

    def __reduce_ex__(self, protocol):
        return (UnbatchedTensor, (torch.Tensor.as_subclass(self, torch.Tensor), self.batch_size))


def is_unbatched(value: Any) -> bool:
    """True for an :class:`UnbatchedTensor` entry: the one check of every batch path.

    Args:
        value: any entry of a tensordict.

    Returns:
        Whether batch operations must leave ``value`` as it is.

    Examples:
        >>> import torch
        >>> is_unbatched(UnbatchedTensor(torch.zeros(2))), is_unbatched(torch.zeros(2))
        (True, False)
    """
    return type(value) is UnbatchedTensor


def stack_unbatched(values: list, batch_size: torch.Size) -> UnbatchedTensor:
    """The entry of a stack of tensordicts whose members hold ``UnbatchedTensor`` entries.

    The stack holds the first member's payload, its batch size being the stack's.
    Members whose payloads differ from the first's are dropped, with a warning (a copy
    of the same values, from ``contiguous()`` or ``clone()``, is not).

    Args:
        values (list of UnbatchedTensor): the members' entries, in order.
        batch_size (torch.Size): the batch size of the stack.

    Returns:
        A new ``UnbatchedTensor`` over the first member's payload.

    Examples:
        >>> import torch
        >>> u = UnbatchedTensor(torch.zeros(3))
        >>> out = stack_unbatched([u, u], torch.Size([2]))
        >>> out.batch_size, out.data_ptr() == u.data_ptr()
        (torch.Size([2]), True)
    """
    first = values[0]
    ptr = first.data_ptr()
    if any(
        v.data_ptr() != ptr and (v.shape != first.shape or not torch.equal(v, first))
        for v in values[1:]
    ):
        warnings.warn(
            "stacking UnbatchedTensor entries that hold different data: only the first "
            "member's payload is kept (an UnbatchedTensor is the same for the whole "
            "batch; use a plain tensor for data that differ per element)",
            UserWarning,
            stacklevel=3,
        )
    return first.rebatched(batch_size)
