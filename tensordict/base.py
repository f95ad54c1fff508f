"""The abstract tensordict: a nested mapping of tensors that share batch dimensions.

:class:`TensorDictBase` is the abstract class every tensordict class derives from.
A concrete class implements a small set of primitives on one level of the tree
(``_get_str``, ``_set_str``, ``_del_str``, ``_keys_level``, ``_items_level``,
``_new_like``, ``_store_entry``, ``_index``, ``_set_at``, ``_batch_op``,
``_batch_op_multi``, the lock) and the memmap hooks of :mod:`tensordict.memmap._io`;
every abstract one is declared below. The public API is written once on top of
them, by topic, in the mixins of :mod:`tensordict._ops` (keys, entries, batch dims,
math, devices, ...); a class specialises it through hooks (``_shallow_copy`` here,
the others declared by :class:`tensordict._ops._contract.Contract`, whose module says
what a mixin may call). The few generic methods that belong to no topic (locking,
truth value, hashing, copies, ``bytes``) are here. ``docs/methods.md`` maps each public
method to the file that defines it.
"""

from __future__ import annotations

import abc
import types
from collections.abc import MutableMapping

import torch

from tensordict import _blocks
from tensordict._collection import NO_DEFAULT, TensorCollection, is_tensor_collection
from tensordict._helpers import KEY_SEPARATOR, expand_as_right
from tensordict._keys import NestedKey, unravel_key, unravel_key_list
from tensordict._ops.apply import ApplyMixin, tensor_leaves
from tensordict._ops.autograd import AutogradMixin
from tensordict._ops.batch_dims import BatchDimsMixin
from tensordict._ops.consolidate import ConsolidateMixin
from tensordict._ops.convert import ConvertMixin
from tensordict._ops.device import DeviceMixin
from tensordict._ops.distributed import DistributedMixin
from tensordict._ops.entries import EntriesMixin
from tensordict._ops.keys import KeysMixin
from tensordict._ops.math import MathMixin
from tensordict._ops.memmap import MemmapMixin
from tensordict._ops.pack import PackMixin
from tensordict._ops.parallel import ParallelMixin
from tensordict._ops.printing import PrintingMixin
from tensordict._ops.rearrange import RearrangeMixin
from tensordict._ops.split_stack import SplitStackMixin
from tensordict._options import (
    capture_non_tensor_stack,
    get_defaults_to_none,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
)
from tensordict._torch_function import dispatch
from tensordict._torchrl_names import (  # noqa: F401  (kept for torchrl, see below)
    DEFAULT_IS_LEAF as _default_is_leaf,
)
from tensordict._torchrl_names import (  # noqa: F401
    IS_LEAF_NONTENSOR as _is_leaf_nontensor,
)
from tensordict._torchrl_names import (  # noqa: F401
    NESTED_TENSORS_AS_LISTS as _NESTED_TENSORS_AS_LISTS,
)
from tensordict.errors import LockedError
from tensordict.memmap.tensor import MemoryMappedTensor


class TensorDictBase(
    BatchDimsMixin,
    RearrangeMixin,
    SplitStackMixin,
    ApplyMixin,
    AutogradMixin,
    ConvertMixin,
    PrintingMixin,
    MemmapMixin,
    ParallelMixin,
    PackMixin,
    ConsolidateMixin,
    DistributedMixin,
    KeysMixin,
    EntriesMixin,
    # These two come after ApplyMixin and MemmapMixin: the primitives their generated
    # methods call are declared in a common base that the MRO puts after both of them.
    MathMixin,
    DeviceMixin,
    abc.ABC,
    TensorCollection,
):
    """The abstract base of every tensordict class.

    A tensordict maps string keys to tensors or to other tensordicts. Every entry
    shares the leading *batch* dimensions (``batch_size``), so that the whole
    tree can be indexed, reshaped, stacked, moved and saved like one tensor.
    """

    # What a with-block over this tensordict writes back, and the blocks open over it
    # (see tensordict._blocks).
    __slots__ = ("_write_back", "_blocks")
    _is_tensor_collection = True
    _is_tensorclass = False
    _is_lazy = False
    _is_non_tensor = False  # declared, so that is_non_tensor() finds it without a failed lookup
    # ``TensorDict[str, torch.Tensor]`` is an annotation, as for any mapping type.
    __class_getitem__ = classmethod(types.GenericAlias)

    # ------------------------------------------------------------------ primitives
    @property
    @abc.abstractmethod
    def batch_size(self) -> torch.Size:
        """The batch size, the leading dimensions every entry shares; setting it checks each entry.

        Raises:
            RuntimeError: on setting, if an entry does not fit the new size (BatchSizeError), or if
                the tensordict is locked (LockedError).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
            >>> td.batch_size = [2, 3]
            >>> td.batch_size
            torch.Size([2, 3])
        """

    @property
    @abc.abstractmethod
    def device(self) -> torch.device | None:
        """The device of every tensor (a tensordict built with one moves tensors there), or None.

        Raises:
            RuntimeError: on setting a TensorDict's device; use ``td.to(device)`` instead.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2], device="cpu").device
            device(type='cpu')
        """

    @property
    @abc.abstractmethod
    def names(self) -> list | None:
        """The names of the batch dimensions, a list with a name or None per dimension, or None.

        A TensorDict always returns a list; a lazy stack returns None unless its stack dim is named.

        Raises:
            ValueError: on setting, if the list length is not ``batch_dims``, or a name repeats.

        Examples:
            >>> TensorDict({}, [2, 3], names=["x", None]).names
            ['x', None]
        """

    @abc.abstractmethod
    def _get_str(self, key: str, default):
        """The value at one key of this level, or ``default`` (``NO_DEFAULT`` raises)."""

    @abc.abstractmethod
    def _set_str(
        self, key: str, value, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        """Stores a value at one key of this level.

        ``non_blocking`` is accepted because torchrl passes it (kept for torchrl); every
        write here is synchronous.
        """

    @abc.abstractmethod
    def _del_str(self, key: str) -> None:
        """Removes one key of this level."""

    @abc.abstractmethod
    def _keys_level(self):
        """The keys of this level (a set-like view)."""

    @abc.abstractmethod
    def _items_level(self):
        """``(key, value)`` pairs of this level."""

    @abc.abstractmethod
    def _new_like(self, source: dict, batch_size: torch.Size, names=NO_DEFAULT, device=NO_DEFAULT):
        """A new unlocked tensordict holding ``source`` (validated) with the given batch size."""

    @property
    @abc.abstractmethod
    def is_locked(self) -> bool:
        """True when the tensordict refuses new keys, deletions and rebinding; setting it (un)locks.

        Examples:
            >>> td = TensorDict({"a": {}}, [])
            >>> td.is_locked = True
            >>> td["a"].is_locked
            True
        """

    @abc.abstractmethod
    def _propagate_lock(self, locked: bool) -> None:
        """Sets the lock flag of this level and of every sub-tensordict."""

    @abc.abstractmethod
    def _store_entry(self, key: str, value) -> None:
        """Stores ``value`` at one key of this level even when locked (for ``make_memmap*``).

        A sub-tensordict stored in a locked tensordict is locked with it.
        """

    @abc.abstractmethod
    def _index(self, index):
        """The tensordict indexed on its batch dimensions by a normalisable ``index``."""

    @abc.abstractmethod
    def _set_at(self, index, value) -> None:
        """Writes ``value`` (a tensordict, a mapping, a tensor or a number) into the rows ``index``."""

    @abc.abstractmethod
    def _batch_op(self, op, batch_size: torch.Size, names=None):
        """A new tensordict of batch size ``batch_size`` whose entries are ``op(value, feature_shape)``."""

    @abc.abstractmethod
    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        """Like :meth:`_batch_op` for an ``op`` that returns one piece per batch size (split, unbind)."""

    # ------------------------------------------------------------------ memmap hooks
    # The storage layer works through these (see tensordict.memmap._io for the protocol).
    _mm = None  # the tensordict's memmap state (a tensordict.memmap._io.Level), or None

    @abc.abstractmethod
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        """Adds what writing this tensordict into ``folder`` needs to ``plan``; checks keys first."""

    @abc.abstractmethod
    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        """This tensordict with every tensor replaced by ``replacement[id(tensor)]``, its state set."""

    @abc.abstractmethod
    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        """Writes the ``meta.json`` files of this tensordict's levels into ``folder``, children first."""

    @abc.abstractmethod
    def _memmap_refresh(self, options) -> None:
        """Re-reads this tensordict's folder in place (never writes)."""

    @abc.abstractmethod
    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        """Re-reads in place from a parsed ``meta.json``; False (nothing changed) if it holds another class."""

    @abc.abstractmethod
    def _memmap_load_into(self, loaded) -> None:
        """Takes the entries and state of ``loaded`` (a tensordict of this class) in place."""

    @classmethod
    def _memmap_record_type(cls) -> str:
        """The ``"type"`` of this class's record in its parent's ``meta.json``."""
        return cls.__name__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, types, args, kwargs or {})

    # ------------------------------------------------------------------ hooks
    def _shallow_copy(self):
        """A new tensordict sharing every entry of this one (classes override it to keep theirs)."""
        return self._new_like(dict(self._items_level()), self.batch_size)

    # ------------------------------------------------------------------ with-blocks
    def __enter__(self) -> TensorDictBase:
        """Starts a with-block over this tensordict, the result of a method that writes back.

        ``with td.permute(1, 0) as tdp:`` (or ``unsqueeze``, ``view``, ``flatten_keys``,
        ``to``, ``to_module``, ``lock_``, ...) gives the block the method's result; when the
        block ends, the result writes what it holds back into ``td``, each method by its
        inverse. The tensordicts that no such method returned (``select``, ``clone``, ...)
        do nothing at the end of a block. Blocks over one tensordict nest.

        Returns:
            The tensordict itself.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> with td.transpose(0, 1) as tdt:
            ...     tdt["b"] = torch.ones(3, 2)
            >>> td["b"].shape
            torch.Size([2, 3])
        """
        _blocks.enter(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        """Ends the innermost with-block over this tensordict: writes the result back.

        After an exception in the block nothing is written back, except that ``lock_``,
        ``unlock_`` and ``to_module``, which change their tensordict or module on the call,
        put it back; the exception goes on.
        """
        _blocks.leave(self, failed=exc_type is not None)

    # ------------------------------------------------------------------ locking
    def lock_(self) -> TensorDictBase:
        """Locks the tensordict and its sub-tensordicts against new keys, deletions and rebinding.

        In-place writes (``set_``, ``update_``, index assignment) still work.

        Used as a context manager, ``with td.lock_():`` puts the previous state back when
        the block ends.

        Returns:
            The tensordict itself.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).lock_().set_("a", 1.0).is_locked
            True
            >>> td = TensorDict()
            >>> with td.lock_():
            ...     print(td.is_locked)
            True
            >>> td.is_locked
            False
        """
        was_locked = self.is_locked
        self._propagate_lock(True)
        return _blocks.written_back(self, self, _lock_restorer(was_locked), undo_on_error=True)

    def unlock_(self) -> TensorDictBase:
        """Unlocks the tensordict and its sub-tensordicts.

        Returns:
            The tensordict itself.

        Used as a context manager, ``with td.unlock_():`` locks it again when the block ends.

        Raises:
            RuntimeError: for a TensorDict that a live locked tensordict holds, or whose
                sub-tensordict another locked tensordict holds too (LockedError).

        Examples:
            >>> TensorDict({}, []).lock_().unlock_().is_locked
            False
        """
        was_locked = self.is_locked
        self._check_unlock()
        self._propagate_lock(False)
        return _blocks.written_back(self, self, _lock_restorer(was_locked), undo_on_error=True)

    def _check_unlock(self) -> None:
        """Hook of :meth:`unlock_`: raises when unlocking would unlock what a live locked tensordict holds.

        Called before anything is unlocked. The default refuses nothing; a TensorDict
        refuses while a locked parent holds it, a lazy stack while one holds a member, and
        a lazy view asks its source.
        """

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _check_unlocked(self, key: str, action: str) -> None:
        if self.is_locked:
            msg = (
                f"cannot {action} {key!r}: the tensordict is locked. Call unlock_() first, or use "
                "set_() / index assignment to write into an existing entry in place"
            )
            raise LockedError(msg)

    # ------------------------------------------------------------------ kept for torchrl
    # torchrl calls these private methods of the well-known implementation; each is a thin
    # layer over our own API.
    def _has_names(self) -> bool:
        """Whether a batch dim has a name (kept for torchrl)."""
        names = self.names
        return names is not None and any(name is not None for name in names)

    def _apply_nest(self, fn, *others, **kwargs):
        """The engine of ``apply`` under the well-known private name (kept for torchrl).

        torchrl passes ``batch_size``, ``filter_empty`` and ``call_on_nested``.
        """
        return self._fast_apply(fn, *others, **kwargs)

    def _stack_onto_(self, list_item: list, dim: int) -> TensorDictBase:
        """Writes ``torch.stack(list_item, dim)`` into this tensordict in place (kept for torchrl).

        torchrl's storages write a lazy stack of rows into a slice of their storage with it.
        """
        self.update_(torch.stack(list(list_item), dim))
        return self

    # ------------------------------------------------------------------ misc
    def __bool__(self) -> bool:
        msg = (
            "the truth value of a tensordict is ambiguous: use td.all(), td.any() or td.is_empty()"
        )
        raise RuntimeError(msg)

    def __hash__(self) -> int:
        return id(self)

    def __copy__(self):
        return self._shallow_copy()

    def __deepcopy__(self, memo):
        return self.clone()

    def is_floating_point(self) -> bool:
        """Returns True when every leaf tensor has a floating-point dtype.

        Returns:
            True or False (True without leaves).

        Examples:
            >>> TensorDict({"a": torch.zeros(2), "b": torch.arange(2)}, [2]).is_floating_point()
            False
        """
        return all(v.is_floating_point() for v in self.values(True, True))

    def bytes(self, *, count_duplicates: bool = True) -> int:
        """Returns the number of bytes of the leaf tensors' elements, nested ones included.

        Each leaf counts ``numel() * element_size()``, whatever memory it shares (an
        expanded leaf counts every element), plus its ``grad`` when it has one. A jagged
        nested tensor counts its values, its offsets and its lengths (when it has them); a
        strided nested tensor the elements of its components. Non-tensor entries count
        nothing.

        Keyword Args:
            count_duplicates (bool, optional): count a tensor stored under several keys
                once per key. False counts each tensor once, the parts of jagged leaves
                included: two leaves built on the same offsets count them once. A tensor
                is the same as another when it views the same memory with the same shape,
                strides and dtype. Defaults to True.

        Returns:
            The number of bytes, an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3, dtype=torch.int8)}}, [3])
            >>> td["d"] = td["a"]
            >>> td.bytes(), td.bytes(count_duplicates=False)
            (51, 27)
        """
        total = 0
        seen: set = set()
        for _, value in tensor_leaves(self):
            for part in _leaf_parts(value):
                if not count_duplicates:
                    key = _same_tensor_key(part)
                    if key in seen:
                        continue
                    seen.add(key)
                total += part.numel() * part.element_size()
        return total

    @property
    def is_cuda(self) -> bool:
        """True when the tensordict's device is a CUDA device (False without a device).

        Examples:
            >>> TensorDict({}, [], device="cpu").is_cuda
            False
        """
        return self.device is not None and self.device.type == "cuda"


# A tensordict is a MutableMapping, as in the well-known API (``isinstance(td, Mapping)``,
# ``module.load_state_dict(td)``, ``dict(**td)``). Registered rather than inherited: every
# method of the mapping protocol is the tensordict's own, and none comes from the ABC's
# mixins. Code that reads a mapping as nested entries asks ``is_plain_mapping`` first.
MutableMapping.register(TensorDictBase)


def _lock_restorer(was_locked: bool):
    """The end of a ``with td.lock_():`` or ``with td.unlock_():`` block: the state before it."""

    def finish(td, source) -> None:
        if source.is_locked != was_locked:
            if was_locked:
                source.lock_()
            else:
                source.unlock_()

    return finish


def _leaf_parts(value: torch.Tensor) -> list:
    """The tensors whose elements a leaf's :meth:`~TensorDictBase.bytes` counts."""
    if value.is_nested and value.layout is torch.jagged:
        parts = [value.values(), value.offsets()]
        if value.lengths() is not None:
            parts.append(value.lengths())
    elif value.is_nested:
        parts = list(value.unbind(0))
    else:
        parts = [value]
    # only a leaf of the autograd graph keeps a grad (reading it elsewhere warns)
    if value.is_leaf and value.requires_grad and value.grad is not None:
        parts.append(value.grad)
    return parts


def _same_tensor_key(part: torch.Tensor) -> tuple:
    """What makes two tensors the same for ``bytes(count_duplicates=False)``: one view of one memory."""
    if part.layout is not torch.strided:
        return (id(part),)
    return (
        part.untyped_storage().data_ptr(),
        part.storage_offset(),
        part.shape,
        part.stride(),
        part.dtype,
    )


# Kept for torchrl: the classes a torchrl ListStorage accepts as one stored item.
# torchrl also imports _NESTED_TENSORS_AS_LISTS, _default_is_leaf and _is_leaf_nontensor
# from this module (tensordict/_torchrl_names.py).
_ACCEPTED_CLASSES = (torch.Tensor, TensorDictBase)

__all__ = [
    "KEY_SEPARATOR",
    "NO_DEFAULT",
    "MemoryMappedTensor",
    "NestedKey",
    "TensorCollection",
    "TensorDictBase",
    "capture_non_tensor_stack",
    "expand_as_right",
    "get_defaults_to_none",
    "is_tensor_collection",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "unravel_key",
    "unravel_key_list",
]
