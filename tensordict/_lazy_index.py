"""Indexing a :class:`~tensordict.LazyStackedTensorDict`: each index routed to the members it reaches.

An index of a lazy stack is cut at the stack dim. The item on the stack dim picks
members (an int one member, a slice several); the other items index each picked
member, and the results are stacked lazily again, along the dim where torch's
rules put the stack dim (:func:`~tensordict._indexing.result_layout`). Tensor
indices that reach the stack dim pick one member per element of their broadcast
shape: each element indexes its member with ints, and the elements are stacked
along the dims the tensor indices give. Members are never densified, so members
whose entries differ in shape index as well as equal ones. Writing goes the same
way, with the value split across the members it reaches.
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._indexing import (
    batch_size_from_dummy,
    index_items,
    is_first_class_dim,
    normalize_index,
    result_layout,
)
from tensordict._keys import NestedKey
from tensordict._nontensor import NonTensorDataBase
from tensordict._td import TensorDict
from tensordict._typing import IndexType, T
from tensordict.errors import FirstClassDimError
from tensordict.memmap import _io


def _is_full(item) -> bool:
    return type(item) is slice and item == slice(None)


def _rest(items: list, pos: int) -> tuple:
    """The index of each member: ``items`` without the stack dim's, trailing full slices dropped."""
    rest = items[:pos] + items[pos + 1 :]
    while rest and _is_full(rest[-1]):
        rest.pop()
    return tuple(rest)


def _unbind_leading(value, k: int) -> list:
    """The parts of ``value`` along its first ``k`` dims, in C order."""
    parts = list(value.unbind(0))
    for _ in range(k - 1):
        parts = [p for part in parts for p in part.unbind(0)]
    return parts


def _value_parts(value, rows: torch.Size, full: list, target: list, k: int, n: int) -> list:
    """``value`` (written to rows of batch size ``rows``, laid out as ``full``) cut in ``n`` parts.

    The value is broadcast to the rows, its batch dims put in the order ``target``,
    and split along the first ``k`` of them. Numbers and non-tensor entries go whole
    to every part; a tensor's leading dims are read as batch dims.
    """
    if isinstance(value, dict):
        value = TensorDict(value, rows)
    if isinstance(value, NonTensorDataBase) or not (
        isinstance(value, torch.Tensor) or is_tensor_collection(value)
    ):
        return [value] * n
    order = [full.index(label) for label in target]
    if isinstance(value, torch.Tensor):
        if value.ndim == 0:
            return [value] * n
        nb = len(rows)
        if value.ndim < nb:
            value = value.reshape((1,) * (nb - value.ndim) + tuple(value.shape))
        value = value.expand(*rows, *value.shape[nb:])
        if order != sorted(order):
            value = value.permute(*order, *range(nb, value.ndim))
    else:
        if value.batch_size != rows:
            value = value.expand(rows)
        if order != sorted(order):
            value = value.permute(*order)
    return _unbind_leading(value, k)


class LazyIndexMixin:
    """Reading and writing the rows of a lazy stack through its members.

    It needs the stack's ``_restack`` and ``_empty_stack`` (declared below), and
    ``_stack_nested`` of :class:`~tensordict._lazy_shape.LazyShapeMixin`.
    """

    __slots__ = ()

    def _restack(self, members, stack_dim: int):
        raise NotImplementedError

    def _empty_stack(self, batch_size: torch.Size, stack_dim: int):
        raise NotImplementedError

    # ------------------------------------------------------------------ routing
    def _index_size(self) -> torch.Size:
        """The batch size an index is checked against: a ragged dim counts its largest size.

        The members check the index again against their own sizes.
        """
        size = self._batch_size
        if -1 not in size:
            return size
        d = self._stack_dim
        out = list(size)
        for j, n in enumerate(size):
            if n == -1:
                k = j if j < d else j - 1
                out[j] = max(
                    (m._index_size() if getattr(type(m), "_is_lazy", False) else m.batch_size)[k]
                    for m in self.tensordicts
                )
        return torch.Size(out)

    def _route(self, index):
        """``(items, pos)``: the index cut into :func:`index_items`, and the item on the stack dim.

        Returns None for a scalar boolean index, which adds a dim instead.

        Raises:
            FirstClassDimError: if a first-class dim reaches the stack dim (a ``ValueError``).
        """
        leaf_index, _ = normalize_index(index, self._index_size())
        items = index_items(leaf_index, len(self._batch_size))
        if items is None:
            return None
        covered = [i for i, item in enumerate(items) if item is not None]
        pos = covered[self._stack_dim]
        if is_first_class_dim(items[pos]):
            msg = (
                f"cannot index the stack dim {self._stack_dim} of a lazy stack with the first-class "
                f"dim {items[pos]!r}: its members would have to be one tensor; call contiguous() first"
            )
            raise FirstClassDimError(msg)
        return items, pos

    def _index(self, index):
        route = self._route(index)
        if route is None:
            return self._index_scalar_bool(index)
        items, pos = route
        stack_item = items[pos]
        members = self.tensordicts
        if type(stack_item) is int:
            rest = _rest(items, pos)
            member = members[stack_item]
            return member[rest] if rest else member
        full = result_layout(items)
        if type(stack_item) is slice:
            rest = _rest(items, pos)
            parts = [m[rest] if rest else m for m in members[stack_item]]
            inner = [("dim", self._stack_dim)] + result_layout(items, skip=pos)
            out = self._arrange(parts, 1, inner, full, index)
        else:
            parts, shape, inner = self._advanced_parts(
                items, pos, lambda member, rest: member[rest] if rest else member
            )
            out = self._arrange(parts, len(shape), inner, full, index, shape)
        if self._mm is not None and all(p._mm is not None for p in parts):
            out._mm = _io.Level(None)  # a view of memory-mapped members is memory-mapped
        return out

    def _advanced_parts(self, items: list, pos: int, fn) -> tuple:
        """``fn(member, rest)`` for each element of the broadcast tensor indices, in C order.

        Returns the results, the broadcast shape, and the layout of the results stacked
        along that shape (its dims first, then the dims each member keeps).
        """
        tensors = [i for i, item in enumerate(items) if isinstance(item, torch.Tensor)]
        shape = torch.broadcast_shapes(*(items[i].shape for i in tensors))
        flat = {i: items[i].broadcast_to(shape).reshape(-1).tolist() for i in tensors}
        members = self.tensordicts
        parts = []
        for e in range(shape.numel()):
            sub = [flat[i][e] if i in flat else item for i, item in enumerate(items)]
            parts.append(fn(members[sub[pos]], _rest(sub, pos)))
        as_ints = [0 if i in flat else item for i, item in enumerate(items)]
        inner = [("adv", j) for j in range(len(shape))] + result_layout(as_ints, skip=pos)
        return parts, shape, inner

    def _arrange(self, parts: list, k: int, inner: list, full: list, index, shape=None):
        """``parts`` stacked along their first ``k`` dims (of sizes ``shape``), dims in the order ``full``.

        ``inner`` is the layout of the parts once stacked: the ``k`` stack dims first.
        """
        if not parts:
            return self._no_rows(index)
        if k == 1:
            stacked = inner[1:]
            at = full.index(inner[0])
            if full[:at] + full[at + 1 :] == stacked:
                return self._restack(parts, at)
            out = self._restack(parts, 0)
        else:
            out = self._stack_nested(parts, list(shape))
        if inner != full:
            out = out.permute(*[inner.index(label) for label in full])
        return out

    def _index_scalar_bool(self, index):
        """``stack[True]`` adds a leading dim of size 1, ``stack[False]`` one of size 0."""
        flag = _scalar_bool(index)
        if flag is None:
            return self.contiguous()[index]
        if flag:
            return self.unsqueeze(0)
        return self._no_rows(index)

    def _no_rows(self, index):
        """What an index that selects nothing gives: a dense tensordict without rows.

        Its entries are those of the first member, with that member's feature shapes;
        a stack without members gives one without entries.
        """
        if not self.tensordicts:
            return TensorDict({}, batch_size_from_dummy(self._index_size(), index), self.device)
        first = self.tensordicts[0].select(*self._keys_level())
        if getattr(type(first), "_is_lazy", False):
            first = first.contiguous()
        template = first.unsqueeze(self._stack_dim).expand(self._batch_size)
        return template[index]

    # ------------------------------------------------------------------ writing
    def _fast_copy_at_refusal(self) -> str | None:
        """Hook of :meth:`copy_at_`: a lazy stack's leaves are stacked copies, never written through."""
        return "a lazy stack"

    def set_at_(self: T, key: NestedKey, value: Any, index: IndexType) -> T:
        """Writes ``value`` into the rows ``index`` of the entry at ``key``, in each member.

        A lazy stack's ``get`` stacks copies, so the rows are written member by member, as
        index assignment does. See :meth:`TensorDictBase.set_at_`.

        Args:
            key (NestedKey): the entry; it must exist.
            value: a tensor (or number) that broadcasts to those rows.
            index: an index of the batch dims.

        Returns:
            The stack itself.

        Raises:
            KeyError: if the key is missing.
            RuntimeError: if the value does not broadcast to the rows.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(2)}, [2]) for _ in range(2)])
            >>> stack.set_at_("x", 1.0, (1, 0)).tensordicts[1]["x"]
            tensor([1., 0.])
        """
        current = self.tensordicts[0].get(key, NO_DEFAULT)
        rows = batch_size_from_dummy(self._batch_size, index)
        if isinstance(current, torch.Tensor):
            feature = current.shape[len(self._batch_size) - 1 :]
            value = torch.as_tensor(value, dtype=current.dtype).expand(rows + feature)
        self._set_at(index, TensorDict({key: value}, batch_size=rows))
        return self

    def _set_at(self, index, value) -> None:
        route = self._route(index)
        if route is None:
            self._set_at_scalar_bool(index, value)
            return
        items, pos = route
        stack_item = items[pos]
        members = self.tensordicts
        if type(stack_item) is int:
            rest = _rest(items, pos)
            members[stack_item][rest or Ellipsis] = value
            return
        rows = batch_size_from_dummy(self._index_size(), index)
        full = result_layout(items)
        if type(stack_item) is slice:
            targets = members[stack_item]
            inner = [("dim", self._stack_dim)] + result_layout(items, skip=pos)
            parts = _value_parts(value, rows, full, inner, 1, len(targets))
            rest = _rest(items, pos) or Ellipsis
            for member, part in zip(targets, parts):
                member[rest] = part
            return
        writes = []
        _, shape, inner = self._advanced_parts(
            items, pos, lambda member, rest: writes.append((member, rest or Ellipsis))
        )
        parts = _value_parts(value, rows, full, inner, len(shape), len(writes))
        for (member, rest), part in zip(writes, parts):
            member[rest] = part

    def _set_at_scalar_bool(self, index, value) -> None:
        flag = _scalar_bool(index)
        if flag is None:
            msg = f"index assignment with {index!r} is not supported on a lazy stack; densify it with contiguous() first"
            raise RuntimeError(msg)
        if not flag:
            return  # no row is selected
        if getattr(value, "ndim", 0) > len(self._batch_size) or getattr(
            value, "batch_dims", 0
        ) > len(self._batch_size):
            value = value[0]
        self._set_at(Ellipsis, value)


def _scalar_bool(index):
    """True or False for an index that is one scalar boolean (bare or alone in a tuple), else None."""
    if type(index) is tuple and len(index) == 1:
        index = index[0]
    if type(index) is bool:
        return index
    if isinstance(index, torch.Tensor) and index.dtype is torch.bool and index.ndim == 0:
        return bool(index)
    return None
