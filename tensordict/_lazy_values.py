"""The values of a :class:`~tensordict.LazyStackedTensorDict`, read and written through its members.

A lazy stack's ``get`` stacks copies of its members' leaves, and members may hold
leaves of different shapes, so what reads or writes values goes member by member
here: ``update``/``update_`` (a source cut along the stack dim), ``select`` and
``copy``, ``all``/``any``, membership, and the masked writes (``masked_fill``,
``where``, ``fill_``), whose batch-shaped arguments are cut along the stack dim too.

A :class:`~tensordict.NonTensorStack` (a subclass whose members are values, not
tensordicts) keeps the generic behaviour of each method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from tensordict._collection import is_non_tensor, is_tensor_collection
from tensordict._keys import NestedKey
from tensordict._ops.entries import UpdateOptions
from tensordict._ops.keys import inner_tensordict
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import BatchSizeError


class LazyValuesMixin:
    """Updates, selections, reductions to a bool and masked writes of a lazy stack, member by member."""

    __slots__ = ()

    def _restack(self, members, stack_dim: int):
        raise NotImplementedError

    # ------------------------------------------------------------------ updates
    def _takes_members_of(self, source) -> bool:
        """True when ``source`` is a tensordict whose batch size starts with the stack's.

        Such a source is written member by member, cut along the stack dim.
        """
        return (
            bool(self.tensordicts)
            and not is_non_tensor(self)  # a NonTensorStack (a subclass) is updated as a whole
            and is_tensor_collection(source)
            and not is_non_tensor(source)
            and source.batch_size[: len(self._batch_size)] == self._batch_size
        )

    def _update(self, source, prefix: tuple, options: UpdateOptions) -> None:
        """Hook of :meth:`update`: a tensordict of the stack's batch size is written member by member.

        It is cut along the stack dim (a lazy stack along the same dim gives its members
        as they are), so members whose entries differ in shape are never stacked.
        """
        if not self._takes_members_of(source):
            super()._update(source, prefix, options)
            return
        for member, part in zip(self.tensordicts, source.unbind(self._stack_dim)):
            inner = inner_tensordict(member)
            if options.adopt and part.batch_size != inner.batch_size:
                inner._adopt_batch_size(part)
            inner._update(part, prefix, options)

    def _update_target(self, current):
        """Hook of :meth:`update`: a dense ``current`` that has the stack dim becomes a lazy stack.

        Its slices along the stack dim become the members, so that this stack's members
        (which may differ in shape) are written into them one by one.
        """
        size = current.batch_size
        if (
            getattr(type(current), "_is_lazy", False)
            or len(size) <= self._stack_dim
            or self._batch_size[: len(size)] != size
        ):
            return current
        return current.to_lazystack(self._stack_dim)

    def _adopt_batch_size(self, source) -> None:
        """Hook of ``update(update_batch_size=True)``: new empty members of ``source``'s slices' batch size."""
        missing = sorted(set(self.keys()) - set(source.keys()))
        if missing or source.batch_dims != self.batch_dims:
            msg = (
                f"cannot update the lazy stack to the batch size {list(source.batch_size)}: "
                f"the entries {missing} are not in the source"
                if missing
                else f"cannot update a lazy stack of batch size {list(self.batch_size)} to the "
                f"batch size {list(source.batch_size)}: the number of dims differs"
            )
            raise BatchSizeError(msg)
        self.tensordicts = [
            TensorDict({}, part.batch_size, device=part.device)
            for part in source.unbind(self._stack_dim)
        ]
        self._members_changed()

    def update_(
        self,
        input_dict_or_td: Mapping | TensorDictBase | None = None,
        clone: bool = False,
        *,
        keys_to_update: Sequence[NestedKey] | None = None,
        non_blocking: bool = False,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Copies the entries of a mapping or tensordict into the existing entries, in place.

        A tensordict of the stack's batch size is cut along the stack dim and each part is
        copied into its member, so members whose entries differ in shape are updated too.
        See :meth:`TensorDictBase.update_` for the rest.

        Args:
            input_dict_or_td (Mapping or TensorDictBase): the values, keyed as in this stack.
            clone (bool, optional): call ``clone()`` on each value first. Defaults to False.

        Keyword Args:
            keys_to_update (sequence of NestedKey, optional): copy only the values at these keys.
                Defaults to None, which copies every value.
            non_blocking (bool, optional): accepted for compatibility; ignored.
            **kwargs: more values, copied after those of ``input_dict_or_td``.

        Returns:
            The stack itself.

        Raises:
            KeyError: if a key of ``input_dict_or_td`` is not in the stack (or a member).
            TypeError: if ``input_dict_or_td`` is not a mapping or a tensordict.
            RuntimeError: if a value does not broadcast to its entry.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.zeros(3))])
            >>> _ = stack.update_(stack.apply(lambda x: x + 1))
            >>> [r.tolist() for r in stack.get("r", as_list=True)]
            [[1.0, 1.0], [1.0, 1.0, 1.0]]
        """
        if kwargs or not self._takes_members_of(input_dict_or_td):
            return super().update_(input_dict_or_td, clone, keys_to_update=keys_to_update, **kwargs)
        for member, part in zip(self.tensordicts, input_dict_or_td.unbind(self._stack_dim)):
            member.update_(part, clone, keys_to_update=keys_to_update)
        return self

    def copy(self) -> TensorDictBase:
        """Returns a shallow copy: each member copied (see :meth:`TensorDictBase.copy`), stacked again.

        Returns:
            A new lazy stack holding the same leaves.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.zeros(3))])
            >>> copy = stack.copy()
            >>> copy.tensordicts[1] is stack.tensordicts[1], copy.tensordicts[1]["r"] is stack.tensordicts[1]["r"]
            (False, True)
        """
        if not self.tensordicts or is_non_tensor(self):  # NonTensorStack: its own shallow copy
            return super().copy()
        return self._restack([m.copy() for m in self.tensordicts], self._stack_dim)

    def __contains__(self, item) -> bool:
        """``key in stack`` checks the keys; ``tensordict in stack`` checks the members, by identity.

        Examples:
            >>> a = TensorDict(x=torch.zeros(()))
            >>> stack = lazy_stack([a, a.clone()])
            >>> "x" in stack, a in stack, a.clone() in stack
            (True, True, False)
        """
        if is_tensor_collection(item) and not is_non_tensor(self):
            return any(item is member for member in self.tensordicts)
        return super().__contains__(item)

    def all(self, dim: int | None = None) -> bool | TensorDictBase:
        """Returns True if every element of every member's tensor leaves is nonzero.

        Without ``dim`` each member answers for itself, so members whose leaves differ in
        shape are never stacked. With ``dim``, see :meth:`TensorDictBase.all`.

        Args:
            dim (int, optional): the batch dim to reduce. Defaults to None, every element.

        Returns:
            A bool, or a new tensordict when ``dim`` is given.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.ones(2)), TensorDict(r=torch.ones(3))])
            >>> (stack == stack).all(), (stack == 0).any()
            (True, False)
        """
        if dim is None and not is_non_tensor(self):  # NonTensorStack: as any tensordict
            return all(bool(m.all()) for m in self.tensordicts)
        return super().all(dim)

    def any(self, dim: int | None = None) -> bool | TensorDictBase:
        """Returns True if any element of any member's tensor leaves is nonzero.

        Without ``dim`` each member answers for itself, so members whose leaves differ in
        shape are never stacked. With ``dim``, see :meth:`TensorDictBase.any`.

        Args:
            dim (int, optional): the batch dim to reduce. Defaults to None, every element.

        Returns:
            A bool, or a new tensordict when ``dim`` is given.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.ones(3))])
            >>> stack.any(), (stack == 2).any()
            (True, False)
        """
        if dim is None and not is_non_tensor(self):  # NonTensorStack: as any tensordict
            return any(bool(m.any()) for m in self.tensordicts)
        return super().any(dim)

    def _select_tree(self, tree: dict, strict: bool, prefix: tuple):
        """Hook of :meth:`select`: each member selects the keys, and the members are stacked again.

        The members' entries are kept (shared, as :meth:`select` shares them), never stacked copies.
        """
        if not self.tensordicts or is_non_tensor(self):  # NonTensorStack: as any tensordict
            return super()._select_tree(tree, strict, prefix)
        members = [inner_tensordict(m)._select_tree(tree, strict, prefix) for m in self.tensordicts]
        return self._restack(members, self._stack_dim)

    # ------------------------------------------------------------------ masked writes
    def _batch_parts(self, value) -> list:
        """``value`` cut along the stack dim when it has that batch dim, else once per member.

        A tensor or tensordict that reaches the stack dim (a mask over the batch dims,
        or a tensordict of the stack's batch size) gives each member its slice; a
        number, or one with fewer dims, goes whole to every member.
        """
        d, n = self._stack_dim, len(self.tensordicts)
        if isinstance(value, torch.Tensor) and not is_tensor_collection(value):
            if value.ndim > d and value.shape[d] == n:
                return list(value.unbind(d))
        elif is_tensor_collection(value) and not is_non_tensor(value):
            if value.batch_dims > d and value.batch_size[d] == n:
                return list(value.unbind(d))
        return [value] * n

    def _by_members(self) -> bool:
        # a NonTensorStack (a subclass) and a stack without members take the generic path
        return bool(self.tensordicts) and not is_non_tensor(self)

    def masked_fill(self, mask: torch.Tensor, value: float | torch.Tensor) -> TensorDictBase:
        """Returns a lazy stack whose members have ``value`` where ``mask`` (their slice of it) is True.

        The mask is cut along the stack dim, so members whose leaves differ in shape are
        filled too. See :meth:`TensorDictBase.masked_fill`.

        Args:
            mask (torch.Tensor): a boolean tensor over the batch dims (or their leading ones).
            value (number or torch.Tensor): the value to write; a tensor must have no dims.

        Returns:
            A new lazy stack.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.zeros(3))])
            >>> out = stack.masked_fill(torch.tensor([False, True]), 1.0)
            >>> [r.tolist() for r in out.get("r", as_list=True)]
            [[0.0, 0.0], [1.0, 1.0, 1.0]]
        """
        if not self._by_members():
            return super().masked_fill(mask, value)
        parts = self._batch_parts(mask)
        return self._restack(
            [m.masked_fill(p, value) for m, p in zip(self.tensordicts, parts)], self._stack_dim
        )

    def masked_fill_(self, mask: torch.Tensor, value: float | torch.Tensor) -> TensorDictBase:
        """Writes ``value`` in place where ``mask`` is True, each member through its slice of the mask.

        See :meth:`TensorDictBase.masked_fill_`.

        Args:
            mask (torch.Tensor): a boolean tensor over the batch dims (or their leading ones).
            value (number or torch.Tensor): the value to write; a tensor must have no dims.

        Returns:
            The stack itself.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.zeros(3))])
            >>> _ = stack.masked_fill_(torch.tensor([True, False]), 1.0)
            >>> [r.tolist() for r in stack.get("r", as_list=True)]
            [[1.0, 1.0], [0.0, 0.0, 0.0]]
        """
        if not self._by_members():
            return super().masked_fill_(mask, value)
        for member, part in zip(self.tensordicts, self._batch_parts(mask)):
            member.masked_fill_(part, value)
        return self

    def where(
        self,
        condition: torch.Tensor,
        other: TensorDictBase | torch.Tensor | float,
        *,
        out: TensorDictBase | None = None,
        pad: float | None = None,
    ) -> TensorDictBase:
        """Returns this stack's elements where ``condition`` is True and ``other``'s elsewhere, member by member.

        ``condition`` and a batch-shaped ``other`` are cut along the stack dim. See
        :meth:`TensorDictBase.where`.

        Args:
            condition (torch.Tensor): a boolean tensor over the batch dims (or their leading ones).
            other (TensorDictBase, torch.Tensor or number): the elements where it is False.

        Keyword Args:
            out (TensorDictBase, optional): written in place and returned. Defaults to None.
            pad (number, optional): the value of the keys one side lacks, as
                :meth:`TensorDictBase.where` does. Defaults to None.

        Returns:
            A new lazy stack, or ``out``.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.ones(2)), TensorDict(r=torch.ones(3))])
            >>> out = stack.where(torch.tensor([True, False]), 0)
            >>> [r.tolist() for r in out.get("r", as_list=True)]
            [[1.0, 1.0], [0.0, 0.0, 0.0]]
        """
        if pad is not None or not self._by_members():
            return super().where(condition, other, out=out, pad=pad)
        conditions, others = self._batch_parts(condition), self._batch_parts(other)
        result = self._restack(
            [m.where(c, o) for m, c, o in zip(self.tensordicts, conditions, others)],
            self._stack_dim,
        )
        if out is not None:
            out.update_(result)
            return out
        return result

    def fill_(self, key: NestedKey, value: float | torch.Tensor) -> TensorDictBase:
        """Fills the entry at ``key`` of every member with ``value``, in place.

        See :meth:`TensorDictBase.fill_`.

        Args:
            key (NestedKey): the key of the entry.
            value (number or torch.Tensor): the value; a tensor must have no dims.

        Returns:
            The stack itself.

        Examples:
            >>> stack = lazy_stack([TensorDict(r=torch.zeros(2)), TensorDict(r=torch.zeros(3))])
            >>> [r.tolist() for r in stack.fill_("r", 2.0).get("r", as_list=True)]
            [[2.0, 2.0], [2.0, 2.0, 2.0]]
        """
        if not self._by_members():
            return super().fill_(key, value)
        for member in self.tensordicts:
            member.fill_(key, value)
        return self
