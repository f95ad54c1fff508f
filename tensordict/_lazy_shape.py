"""The shape side of :class:`~tensordict.LazyStackedTensorDict`: reshaping, expanding, splitting, joining.

A lazy stack changes its batch dims by changing each member's and stacking the
results again, so members whose entries differ in shape stay apart: unsqueeze,
squeeze, permute, reshapes that flatten or only add dims of size 1, unbind,
split, the expand of members that cannot be made dense, and ``torch.cat`` of
lazy stacks (:meth:`LazyShapeMixin._cat_members`). The other batch operations
go through a dense copy (``_batch_op``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tensordict._nontensor import _dummy
from tensordict._ops.batch_dims import (
    cat_dim,
    legacy_source,
    permutation,
    permuted_back,
    reshaped_back,
    shape_arg,
    shape_args,
)
from tensordict._options import lazy_legacy
from tensordict.base import TensorDictBase
from tensordict.errors import DimensionError, MemberBatchSizeError


class LazyShapeMixin:
    """Batch-dim changes of a lazy stack, made on its members."""

    __slots__ = ()

    def _restack(self, members, stack_dim: int):
        raise NotImplementedError

    def _stack_of(self, members, stack_dim: int):
        raise NotImplementedError

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self.contiguous()._batch_op(op, batch_size, names)

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        return self.contiguous()._batch_op_multi(op, batch_sizes, names)

    def unsqueeze(self, dim: int) -> TensorDictBase:
        """Returns a lazy stack with a batch dim of size 1 inserted at ``dim``.

        Each member is unsqueezed (a view) and the members are stacked lazily again, so
        members of different shapes stay apart; the stack dim moves if the new dim comes
        before it. See :meth:`TensorDictBase.unsqueeze`.

        Args:
            dim (int): the position of the new dim among the batch dims.

        Returns:
            LazyStackedTensorDict: the new stack.

        Raises:
            DimensionError: if ``dim`` is out of range.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> out = stack.unsqueeze(0)
            >>> out.batch_size, out.stack_dim
            (torch.Size([1, 2, 3]), 1)
        """
        ndim = len(self._batch_size)
        if not -ndim - 1 <= dim <= ndim:
            msg = f"unsqueeze dimension {dim} is out of range for a tensordict with {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim + 1 if dim < 0 else dim
        if d <= self._stack_dim:
            result = self._restack([m.unsqueeze(d) for m in self.tensordicts], self._stack_dim + 1)
        else:
            result = self._restack([m.unsqueeze(d - 1) for m in self.tensordicts], self._stack_dim)
        return reshaped_back(result, self)

    def squeeze(self, dim: int | None = None) -> TensorDictBase:
        """Returns the stack without its batch dims of size 1, or without ``dim`` if its size is 1.

        Each member is squeezed and the members are stacked lazily again; squeezing the
        stack dim of a one-member stack gives that member. See :meth:`TensorDictBase.squeeze`.

        Args:
            dim (int, optional): the batch dim to remove. Defaults to None, every dim of size 1.

        Returns:
            This stack, a new one, or its only member.

        Raises:
            DimensionError: if ``dim`` is out of range.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(1, 3)}, [1, 3])] * 2)
            >>> stack.squeeze().batch_size, stack.squeeze().stack_dim
            (torch.Size([2, 3]), 0)
        """
        ndim = len(self._batch_size)
        if dim is None:
            out = self
            for d in reversed(range(ndim)):
                if self._batch_size[d] == 1:
                    out = out.squeeze(d)
            return reshaped_back(out, self)
        if not -ndim <= dim < max(ndim, 1) or ndim == 0:
            msg = f"squeeze dimension {dim} is out of range for a tensordict with {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim if dim < 0 else dim
        if self._batch_size[d] != 1:
            return self
        if d == self._stack_dim:
            return self.tensordicts[0]
        if d < self._stack_dim:
            result = self._restack([m.squeeze(d) for m in self.tensordicts], self._stack_dim - 1)
        else:
            result = self._restack([m.squeeze(d - 1) for m in self.tensordicts], self._stack_dim)
        return reshaped_back(result, self)

    def permute(self, *dims: int | Sequence[int]) -> TensorDictBase:
        """Returns a lazy stack with the batch dims in the order ``dims``.

        Each member is permuted on its own dims and the members are stacked lazily again
        along the dim where the stack dim lands. See :meth:`TensorDictBase.permute`.

        Args:
            *dims (int or sequence of int): each batch dim once, in the new order.

        Returns:
            LazyStackedTensorDict: the new stack, or this one when ``dims`` keeps every dim
            in place.

        Raises:
            ValueError: if ``dims`` does not name each batch dim exactly once: a dim out of
                range (AxisRangeError, also an IndexError), or one repeated or missing
                (PermutationError, also a RuntimeError).

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> out = stack.permute(1, 0)
            >>> out.batch_size, out.stack_dim
            (torch.Size([3, 2]), 1)
        """
        ndim = len(self._batch_size)
        order = permutation(dims, ndim)
        if order == list(range(ndim)):
            return self
        source = legacy_source(self, ("permute", tuple(order)))
        if source is not None:
            return source
        stack = self._stack_dim
        inner = [d - (d > stack) for d in order if d != stack]
        result = self._restack([m.permute(*inner) for m in self.tensordicts], order.index(stack))
        return permuted_back(result, self, order)

    def _rows(self) -> list:
        # Every row of the stack (batch size []), in C order, each a member's own view.
        rows = []
        for part in self.unbind(0):
            if part.batch_dims:
                rows.extend(
                    part._rows() if getattr(type(part), "_is_lazy", False) else _td_rows(part)
                )
            else:
                rows.append(part)
        return rows

    def _lazy_reshape(self, shape, method: str):
        """The lazy stack that reshapes this one to ``shape`` (``method`` reshapes or views the members).

        When the new shape keeps the stack dim whole (the dims before it and after it
        keep their numbers of elements), each member is reshaped and the members are
        stacked again; otherwise the rows (batch size ``[]``) are stacked lazily into
        the new shape, one level of lazy stacks per dim.
        """
        new = _dummy(self._batch_size).reshape(shape_args(shape)).shape
        if new == self._batch_size:
            return self
        d = self._stack_dim
        before = self._batch_size[:d].numel()
        after = self._batch_size[d + 1 :].numel()
        count = self._batch_size[d]
        elements = 1
        for k, size in enumerate(new):
            if elements == before and size == count and new[k + 1 :].numel() == after:
                inner = (*new[:k], *new[k + 1 :])
                return self._restack([getattr(m, method)(*inner) for m in self.tensordicts], k)
            elements *= size
        rows = self._rows()
        return self._stack_nested(rows, list(new)) if new else rows[0]

    def _stack_nested(self, parts: list, shape: list):
        """``parts`` (in C order) stacked lazily into the dims ``shape``, one level per dim."""
        if len(shape) == 1:
            return self._stack_of(parts, 0)
        step = len(parts) // shape[0]
        return self._stack_of(
            [
                self._stack_nested(parts[i * step : (i + 1) * step], shape[1:])
                for i in range(shape[0])
            ],
            0,
        )

    def reshape(
        self,
        *shape: int | Sequence[int],
        size: Sequence[int] | None = None,
        inplace: bool = False,
    ) -> TensorDictBase:
        """Returns the stack with its batch dims reshaped to ``shape`` (see :meth:`TensorDictBase.reshape`).

        The result is a lazy stack, so members of different shapes stay apart: of the
        reshaped members when the stack dim stays whole (adding or removing dims of size
        1, reshaping the other dims), else of the rows, stacked into the new shape.

        Args:
            *shape (int or sequence of int): the new batch size; one -1 is inferred.

        Keyword Args:
            size (sequence of int, optional): the new batch size, instead of ``*shape``.
                Defaults to None.
            inplace (bool, optional): not supported by lazy stacks. Defaults to False.

        Returns:
            A LazyStackedTensorDict.

        Raises:
            RuntimeError: if ``shape`` does not have the batch size's number of elements.
            NotImplementedError: with ``inplace=True``.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> flat = stack.reshape(-1)
            >>> type(flat).__name__, flat.batch_size, len(flat.tensordicts)
            ('LazyStackedTensorDict', torch.Size([6]), 6)
        """
        shape = shape_arg(shape, size, "reshape")
        if inplace:
            return super().reshape(shape, inplace=True)
        return self._lazy_reshape(shape, "reshape")

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> TensorDictBase:
        """Returns the stack with its batch dims viewed as ``shape``; lazy as :meth:`reshape` is.

        ``view(dtype)`` views every leaf as another dtype (see :meth:`TensorDictBase.view`).

        Args:
            *shape (int or sequence of int): the new batch size; one -1 is inferred; or a
                ``torch.dtype``.

        Keyword Args:
            size (sequence of int, optional): the new batch size, instead of ``*shape``.
                Defaults to None.
            batch_size (sequence of int, optional): with a dtype, the batch size of the
                result. Defaults to None: the current one.

        Returns:
            A LazyStackedTensorDict.

        Raises:
            RuntimeError: if ``shape`` does not have the batch size's number of elements.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> stack.view(1, 2, 3).batch_size
            torch.Size([1, 2, 3])
            >>> rows = lazy_stack([TensorDict(x=i) for i in range(6)]).view(2, 3)
            >>> rows[1, 0]["x"]
            tensor(3)
        """
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            return super().view(shape[0], batch_size=batch_size)
        shape = shape_arg(shape, size, "view")
        new = _dummy(self._batch_size).reshape(shape).shape
        lazy = None if new == self._batch_size else self._shape_call("view", tuple(new))
        if lazy is not None:
            return lazy
        return reshaped_back(self._lazy_reshape(shape, "view"), self)

    def flatten(
        self, start_dim: int = 0, end_dim: int = -1, *, inplace: bool = False
    ) -> TensorDictBase:
        """Merges the batch dims ``start_dim`` to ``end_dim``; merging them all stacks the rows lazily.

        Args:
            start_dim (int, optional): the first dim to merge. Defaults to 0.
            end_dim (int, optional): the last dim to merge. Defaults to -1.

        Keyword Args:
            inplace (bool, optional): not supported by lazy stacks. Defaults to False.

        Returns:
            A LazyStackedTensorDict when every dim is merged, else as
            :meth:`TensorDictBase.flatten`.

        Raises:
            DimensionError: if a dim is out of range.
            NotImplementedError: with ``inplace=True``.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> type(stack.flatten()).__name__
            'LazyStackedTensorDict'
        """
        ndim = len(self._batch_size)
        first = start_dim + ndim if start_dim < 0 else start_dim
        last = end_dim + ndim if end_dim < 0 else end_dim
        if not inplace and ndim > 1 and first == 0 and last == ndim - 1:
            return reshaped_back(self._stack_of(self._rows(), 0), self)
        return super().flatten(start_dim, end_dim, inplace=inplace)

    def expand(self, *shape: int | Sequence[int]) -> TensorDictBase:
        """Returns the stack with its batch dims expanded to ``shape`` (see :meth:`TensorDictBase.expand`).

        Members that can be made dense give a dense TensorDict. Members whose keys or
        entries' shapes differ, and every stack in the legacy lazy mode
        (:func:`~tensordict.set_lazy_legacy`), are expanded one by one and stay a lazy
        stack; a stack dim of size 1 expands to copies of its one member.

        Args:
            *shape (int or sequence of int): the new batch size.

        Returns:
            A TensorDict, or a LazyStackedTensorDict.

        Raises:
            RuntimeError: if ``shape`` does not expand the batch size.

        Examples:
            >>> stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)
            >>> type(stack.expand(4, 2, 3)).__name__
            'TensorDict'
            >>> ragged = lazy_stack([TensorDict({"x": torch.zeros(3)}), TensorDict({"x": torch.zeros(2)})])
            >>> out = ragged.expand(4, 2)
            >>> type(out).__name__, out.batch_size, out.tensordicts[1]["x"].shape
            ('LazyStackedTensorDict', torch.Size([4, 2]), torch.Size([4, 2]))
        """
        if not lazy_legacy():
            dense = self._dense_copy()
            if dense is not None:
                return dense.expand(*shape)
        sizes = (
            list(shape[0])
            if len(shape) == 1 and isinstance(shape[0], (list, tuple, torch.Size))
            else list(shape)
        )
        ndim = len(self._batch_size)
        if len(sizes) < ndim:
            msg = f"cannot expand batch size {list(self._batch_size)} to {sizes}: fewer dimensions"
            raise RuntimeError(msg)
        lead = len(sizes) - ndim
        stack = self._stack_dim + lead
        members = self.tensordicts
        if sizes[stack] not in (-1, len(members)):
            if len(members) != 1:
                msg = f"cannot expand the stack dim of size {len(members)} to {sizes[stack]}"
                raise RuntimeError(msg)
            members = members * sizes[stack]
        inner = sizes[:stack] + sizes[stack + 1 :]
        return self._restack([m.expand(*inner) for m in members], stack)

    def _dense_copy(self):
        """``contiguous()`` when it loses nothing: the members have the same keys and shapes; else None."""
        members = self.tensordicts
        if not members:
            return None
        keys = set(members[0].keys(True, True))
        if any(set(m.keys(True, True)) != keys for m in members[1:]):
            return None
        try:
            return self.contiguous()
        except RuntimeError:
            return None  # leaves of different shapes

    def _split_op(self, fn, names, dim: int) -> tuple:
        """Hook of :meth:`split` and :meth:`chunk`: each part is a slice of the stack, a lazy stack."""
        lengths = [part.shape[dim] for part in fn(_dummy(self._batch_size))]
        parts, start = [], 0
        for length in lengths:
            parts.append(self[(slice(None),) * dim + (slice(start, start + length),)])
            start += length
        return tuple(parts)

    @classmethod
    def _cat_members(cls, tds: list, dim: int, out=None):
        """``torch.cat`` of tensordicts of which one at least is a lazy stack: a lazy stack.

        Every tensordict is read as a lazy stack along the stack dim of the first lazy
        one (a dense one is cut into its slices). Along that dim the member lists are
        joined; along another dim the members at the same position are concatenated.
        With ``out``, the result is written into it and ``out`` is returned.
        """
        first = next(t for t in tds if getattr(type(t), "_is_lazy", False))
        size = first.batch_size
        d = cat_dim(tds, dim, size)
        sd = first.stack_dim
        stacks = [
            td
            if getattr(type(td), "_is_lazy", False) and td.stack_dim == sd
            else td.to_lazystack(sd)
            for td in tds
            if td.batch_size[sd]
        ]
        total = sum(td.batch_size[d] for td in tds)
        if d == sd:
            members = [m for stack in stacks for m in stack.tensordicts]
        elif stacks:
            inner = d if d < sd else d - 1
            members = [
                torch.cat([stack.tensordicts[i] for stack in stacks], inner)
                for i in range(size[sd])
            ]
        else:
            members = []
        if members:
            result = cls(*members, stack_dim=sd)
        else:
            member_size = list(size[:sd] + size[sd + 1 :])
            if d != sd:
                member_size[d if d < sd else d - 1] = total
            result = cls(stack_dim=sd, batch_size=member_size, device=first.device)
        if out is None:
            return result
        out.update_(result)
        return out

    def unbind(self, dim: int = 0) -> tuple:
        """Removes batch dimension ``dim``, returning one tensordict per index along it.

        Along :attr:`stack_dim` the members themselves are returned, not copies.
        Along another dimension each member is unbound and the pieces of one index
        are stacked lazily again.

        Args:
            dim (int, optional): the batch dimension; a negative one counts from the
                end. Defaults to 0.

        Returns:
            A tuple of the members, or of new :class:`LazyStackedTensorDict`.

        Raises:
            IndexError: if ``dim`` is past the last batch dimension.

        Examples:
            >>> a, b = TensorDict({"x": torch.zeros(3)}, [3]), TensorDict({"x": torch.ones(3)}, [3])
            >>> stack = lazy_stack([a, b])
            >>> stack.unbind(0)[1] is b, len(stack.unbind(1)), stack.unbind(1)[0]["x"].tolist()
            (True, 3, [0.0, 1.0])
        """
        ndim = len(self._batch_size)
        d = dim + ndim if dim < 0 else dim
        if d == self._stack_dim:
            return tuple(self.tensordicts)
        if self._batch_size[d] == -1:
            msg = f"cannot unbind dim {dim} of a lazy stack of batch size {list(self._batch_size)}: its members' sizes differ there"
            raise MemberBatchSizeError(msg)
        inner = d if d < self._stack_dim else d - 1
        new_stack = self._stack_dim if d > self._stack_dim else self._stack_dim - 1
        parts = [m.unbind(inner) for m in self.tensordicts]
        return tuple(self._stack_of(group, new_stack) for group in zip(*parts))

    def _is_lazy_stack_along(self, dim: int) -> bool:
        """Hook of :meth:`to_lazystack`: a lazy stack along ``dim`` is returned as it is."""
        return self._stack_dim == dim


def _td_rows(td) -> list:
    """Every row (batch size []) of a tensordict, in C order."""
    rows = []
    for part in td.unbind(0):
        rows.extend(_td_rows(part) if part.batch_dims else [part])
    return rows
