"""The member-list side of :class:`~tensordict.LazyStackedTensorDict`: growing the stack, naming it.

A lazy stack is a list of tensordicts read as one; these methods change that list
(``append``, ``insert``, ``extend``), build stacks from dicts (``from_dict``), and
name the stack's dims (``refine_names``, ``rename``), each through the members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import EllipsisType
from typing import Any

import torch

from tensordict import _dim_names as dimnames
from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_plain_mapping,
    is_tensor_collection,
)
from tensordict._keys import NestedKey
from tensordict._ops.keys import KeysMixin
from tensordict._td import TensorDict, check_sub_names
from tensordict._typing import DeviceType, ShapeType, T
from tensordict.errors import LockedError, MemberBatchSizeError


class LazyMembersMixin:
    """List methods and dim names of a lazy stack."""

    __slots__ = ()

    # ------------------------------------------------------------------ the member list
    def _check_new_member(self, tensordict, method: str) -> None:
        if self.is_locked:
            msg = f"cannot {method} to the lazy stack: it is locked; call unlock_() first"
            raise LockedError(msg)
        if self._mm is not None:
            msg = f"cannot {method} to a memory-mapped lazy stack: its folder records its members"
            raise LockedError(msg)
        if not is_tensor_collection(tensordict):
            msg = f"{method}() takes a tensordict, got {type(tensordict).__name__}"
            raise TypeError(msg)
        size = self._member_batch_size()
        if tensordict.batch_size != size:
            msg = (
                f"cannot {method} a tensordict of batch size {list(tensordict.batch_size)} to a "
                f"lazy stack whose members have batch size {list(size)}"
            )
            raise MemberBatchSizeError(msg)

    def _members_changed(self) -> None:
        members = self.tensordicts
        size = ragged_batch_size(members) if members else self._member_batch_size()
        d = self._stack_dim
        self._batch_size = size[:d] + torch.Size((len(self.tensordicts),)) + size[d:]

    def append(self, tensordict: TensorCollection) -> None:
        """Adds a member at the end of the stack, like ``list.append``.

        The stack dimension grows by one; the member is kept as it is (not copied).

        Args:
            tensordict (TensorDictBase): the new member, with the members' batch size.

        Raises:
            LockedError: if the stack is locked or memory-mapped.
            MemberBatchSizeError: (a ``ValueError`` and ``RuntimeError``) if the batch size differs.
            TypeError: if ``tensordict`` is not a tensordict.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2])])
            >>> stack.append(TensorDict(a=torch.ones(2), batch_size=[2]))
            >>> stack.batch_size
            torch.Size([2, 2])
        """
        self._add_member(len(self.tensordicts), tensordict, "append")

    def insert(self, index: int, tensordict: TensorCollection) -> None:
        """Adds a member before position ``index`` of the stack, like ``list.insert``.

        Args:
            index (int): the position along the stack dimension (negative counts from the end).
            tensordict (TensorDictBase): the new member, with the members' batch size.

        Raises:
            LockedError: if the stack is locked or memory-mapped.
            MemberBatchSizeError: (a ``ValueError`` and ``RuntimeError``) if the batch size differs.
            TypeError: if ``tensordict`` is not a tensordict or ``index`` not an int.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2])])
            >>> stack.insert(0, TensorDict(a=torch.ones(2), batch_size=[2]))
            >>> stack["a"][:, 0]
            tensor([1., 0.])
        """
        if isinstance(index, bool) or not isinstance(index, int):
            msg = f"insert() takes an int position, got {index!r}"
            raise TypeError(msg)
        self._add_member(index, tensordict, "insert")

    def _add_member(self, index: int, tensordict, method: str) -> None:
        self._check_new_member(tensordict, method)
        self.tensordicts.insert(index, tensordict)
        self._members_changed()

    def extend(self, tensordict: TensorCollection | Iterable[TensorCollection]) -> None:
        """Adds several members at the end of the stack, like ``list.extend``.

        Args:
            tensordict (sequence of TensorDictBase or TensorDictBase): the new members; a
                tensordict is split along its first batch dim, each part a member.

        Raises:
            LockedError: if the stack is locked or memory-mapped.
            MemberBatchSizeError: (a ``ValueError`` and ``RuntimeError``) if a batch size differs; no member is
                added then.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2])])
            >>> stack.extend([TensorDict(a=torch.ones(2), batch_size=[2])] * 2)
            >>> stack.batch_size
            torch.Size([3, 2])
        """
        members = (
            list(tensordict.unbind(0)) if is_tensor_collection(tensordict) else list(tensordict)
        )
        for member in members:
            self._check_new_member(member, "extend")
        self.tensordicts.extend(members)
        self._members_changed()

    def get_nestedtensor(
        self, key: NestedKey, default: Any = NO_DEFAULT, *, layout: torch.layout | None = None
    ) -> torch.Tensor | Any:
        """Returns the entry ``key`` of every member as one nested tensor, ragged dims allowed.

        Args:
            key (NestedKey): the entry.
            default (optional): returned when no member has ``key``.

        Keyword Args:
            layout (torch.layout, optional): ``torch.strided`` or ``torch.jagged``.
                Defaults to torch's default for nested tensors (strided).

        Returns:
            A nested tensor with one component per member.

        Raises:
            KeyError: if ``key`` is missing and no default is given.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))])
            >>> [t.shape for t in stack.get_nestedtensor("a").unbind()]
            [torch.Size([2]), torch.Size([3])]
        """
        if self._stack_dim != 0:
            msg = f"get_nestedtensor needs a stack along dim 0, this one is along dim {self._stack_dim}"
            raise RuntimeError(msg)
        values = []
        for member in self.tensordicts:
            value = member.get(key, NO_DEFAULT if default is NO_DEFAULT else None)
            if value is None:
                return default
            values.append(value)
        return torch.nested.nested_tensor(values, layout=layout)

    # The keys of a lazy stack are those every member has: valid_keys, the name the well-known
    # API keeps as a deprecated alias, is keys itself (its docstring says so).
    valid_keys = KeysMixin.keys

    @property
    def hook_in(self) -> Callable | None:
        """Called on the values written through the stack before they reach the members.

        ``None``: this implementation writes values as they come.

        Examples:
            >>> lazy_stack([TensorDict(), TensorDict()]).hook_in is None
            True
        """
        return None

    @property
    def hook_out(self) -> Callable | None:
        """Called on the values read through the stack before they are returned.

        ``None``: this implementation returns the values as the members give them.

        Examples:
            >>> lazy_stack([TensorDict(), TensorDict()]).hook_out is None
            True
        """
        return None

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dict(
        cls: type[T],
        input_dict: Sequence[Mapping] | Mapping[str, Mapping],
        *,
        auto_batch_size: bool = False,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        batch_dims: int | None = None,
        stack_dim_name: str | None = None,
        stack_dim: int = 0,
        names: Sequence[str | None] | None = None,
    ) -> T:
        """Builds a lazy stack with one member per dict.

        Args:
            input_dict (list of dict, or dict of dicts keyed ``"0"``, ``"1"``, ...): each
                member's entries.

        Keyword Args:
            auto_batch_size (bool, optional): infer each member's batch size. Defaults
                to ``False``.
            batch_size (sequence of int, optional): the stack's batch size, stack dim
                included; the members get it without the stack dim.
            device (torch.device, optional): the members' device.
            batch_dims (int, optional): with ``auto_batch_size``, the stack's batch dims
                to keep (the members keep one fewer).
            stack_dim_name (str, optional): the name of the stack dim.
            stack_dim (int, optional): the stack dim. Defaults to 0.
            names (list of str, optional): the members' dim names.

        Returns:
            A new :class:`LazyStackedTensorDict`.

        Raises:
            KeyError: if a dict of dicts lacks one of the keys ``"0"`` ... ``str(n - 1)``.
            TypeError: if ``input_dict`` is neither.

        Examples:
            >>> stack = LazyStackedTensorDict.from_dict([{"a": torch.zeros(3)}, {"a": torch.zeros(4)}])
            >>> stack.batch_size, stack.get("a", as_nested_tensor=True).is_nested
            (torch.Size([2]), True)
        """
        if is_plain_mapping(input_dict):
            n = len(input_dict)
            missing = [str(i) for i in range(n) if str(i) not in input_dict]
            if missing:
                msg = f"from_dict: a dict of members needs the keys '0' ... '{n - 1}'; missing {missing}"
                raise KeyError(msg)
            dicts = [input_dict[str(i)] for i in range(n)]
        elif isinstance(input_dict, Sequence) and not isinstance(input_dict, str):
            dicts = list(input_dict)
        else:
            msg = f"from_dict takes a list of dicts or a dict of dicts, got {type(input_dict).__name__}"
            raise TypeError(msg)
        member_size = None
        if batch_size is not None:
            member_size = list(batch_size)
            del member_size[stack_dim]
        members = [
            TensorDict.from_dict(
                d,
                batch_size=member_size,
                auto_batch_size=auto_batch_size,
                device=device,
                batch_dims=None if batch_dims is None else batch_dims - 1,
                names=names,
            )
            for d in dicts
        ]
        if auto_batch_size and members:
            _common_batch_size(members)
        return cls(*members, stack_dim=stack_dim, stack_dim_name=stack_dim_name)

    @classmethod
    def fromkeys(cls, keys: Iterable[NestedKey], value: Any = 0) -> TensorDict:
        """A :class:`TensorDict` with ``value`` under every key, like ``dict.fromkeys``.

        Args:
            keys (iterable of NestedKey): the keys.
            value (optional): the value of every key. Defaults to 0.

        Returns:
            A new :class:`TensorDict` (a stack of one dict would have nothing to stack).

        Examples:
            >>> LazyStackedTensorDict.fromkeys(["a", "b"], 1)["b"]
            tensor(1)
        """
        return TensorDict.fromkeys(keys, value)

    def auto_batch_size_(
        self: T, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> T:
        """Grows the batch size to the leading dims that every entry of every member shares.

        Each member's batch size grows to what its own entries share, then every member
        is cut back to what they all share, so the stack keeps one member batch size.

        Args:
            batch_dims (int, optional): keep at most this many batch dims, the stack dim
                included. Defaults to ``None``: as many as the entries share.
            keep_compliant_size (bool, optional): passed to each member's own
                ``auto_batch_size_`` (for its sub-tensordicts). Defaults to False.

        Returns:
            The lazy stack itself.

        Examples:
            >>> stack = lazy_stack([TensorDict(a=torch.zeros(2, 3)), TensorDict(a=torch.zeros(2, 4))])
            >>> stack.auto_batch_size_().batch_size
            torch.Size([2, 2])
        """
        for member in self.tensordicts:
            member.auto_batch_size_(
                None if batch_dims is None else max(batch_dims - 1, 0), keep_compliant_size
            )
        _common_batch_size(self.tensordicts)
        self._members_changed()
        return self

    # ------------------------------------------------------------------ dim names
    def refine_names(self: T, *names: str | EllipsisType | None) -> T:
        """Names the batch dims in place: the stack dim's name and the members' dims.

        As ``Tensor.refine_names``: an unnamed dim takes the name given (``None``
        leaves it unnamed), a dim already named must be given that name. One ``...``
        stands for the dims the other names leave, which keep their names.

        Args:
            *names (str or None): one per batch dim.

        Returns:
            The lazy stack itself.

        Raises:
            ValueError: if there is not one name per batch dim, or a name repeats.
            DimNameConflictError: if a dim already named gets another name (also a
                ``RuntimeError``).

        Examples:
            >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3])])
            >>> stack.refine_names("env", "time").names
            ['env', 'time']
        """
        names = dimnames.refine(self.names, names)
        self._set_names(names)
        return self

    def rename(self: T, *names: str | None, **rename_map: str) -> T:
        """A new lazy stack over the same members' entries, its batch dims carrying new names.

        Args:
            *names (str or None): the new names, one per batch dim (a first ``None``
                removes every name).

        Keyword Args:
            **rename_map (str): ``current=new`` pairs; unmapped names are kept.

        Returns:
            A new :class:`LazyStackedTensorDict`; this one keeps its names.

        Raises:
            ValueError: if there is not one name per batch dim, or a name repeats.

        Examples:
            >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3])])
            >>> stack.rename("env", "time").names, stack.names
            (['env', 'time'], [None, None])
        """
        current = self.names
        if rename_map:
            new = [rename_map.get(n, n) for n in current]
        else:
            new = list(names) if names and names[0] is not None else [None] * self.batch_dims
        out = type(self)(
            *[member._shallow_copy() for member in self.tensordicts],
            stack_dim=self._stack_dim,
            stack_dim_name=self._stack_dim_name,
        )
        out._set_names(new)
        return out

    def _set_names(self, names: list) -> None:
        names = dimnames.check_names(names, self.batch_size) or [None] * self.batch_dims
        member_names = names[: self._stack_dim] + names[self._stack_dim + 1 :]
        for member in self.tensordicts:
            if type(member) is TensorDict:
                # the stack's names, stack dim included, must stay unique in the sub-tensordicts
                check_sub_names(member, names)
        for member in self.tensordicts:
            member.names = member_names if any(n is not None for n in member_names) else None
        self._stack_dim_name = names[self._stack_dim]


def ragged_batch_size(members: list, strict: bool = False) -> torch.Size:
    """The members' batch size, ``-1`` at the dims where they differ (a ragged stack).

    Raises:
        MemberBatchSizeError: if the members' numbers of batch dims differ, or, with
            ``strict``, if their batch sizes differ at all (a ``RuntimeError``).
    """
    size = members[0].batch_size
    for i, member in enumerate(members):
        other = member.batch_size
        if other != size and (strict or len(other) != len(size)):
            msg = (
                f"cannot stack tensordicts with different batch sizes: member 0 has {list(size)} "
                f"and member {i} has {list(other)}"
                + ("" if strict else "; lazy stacks take members of one number of batch dims")
            )
            raise MemberBatchSizeError(msg)
    if all(m.batch_size == size for m in members):
        return size
    return torch.Size(
        [d if all(m.batch_size[j] == d for m in members) else -1 for j, d in enumerate(size)]
    )


def _common_batch_size(members: list) -> None:
    """Cuts every member's batch size back to the leading dims they all share."""
    common = list(members[0].batch_size)
    for member in members[1:]:
        size = member.batch_size
        n = 0
        while n < min(len(common), len(size)) and common[n] == size[n]:
            n += 1
        common = common[:n]
    for member in members:
        if list(member.batch_size) != common:
            member.batch_size = common
