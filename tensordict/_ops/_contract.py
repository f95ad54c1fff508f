"""The contract of the mixins of ``TensorDictBase``: what a mixin may call that it does not define.

The public API is written once, by topic, in the mixins of :mod:`tensordict._ops`. A
mixin calls its own members, public methods, and only the private members this module
names. There are three kinds of them.

**Primitives** (:data:`PRIMITIVES`), declared abstract in :mod:`tensordict.base` and
defined by every concrete class on one level of the tree: ``_get_str``, ``_set_str``,
``_del_str``, ``_keys_level``, ``_items_level``, ``_new_like``, ``_store_entry``,
``_index``, ``_set_at``, ``_batch_op``, ``_batch_op_multi``, ``_shallow_copy``,
``_propagate_lock``, and the memory-mapping hooks of :mod:`tensordict.memmap._io`
(``_mm``, ``_memmap_*``).

**Shared members and hooks**, declared by :class:`Contract`, the common base of every
mixin (so the method resolution order puts it after all of them, and a declaration
never hides a definition). Each is defined once, by the mixin or class its docstring
names; a hook has the behaviour of a dense tensordict there, and the classes that differ
override it (the lazy stack in ``_lazy.py``, the tensorclass in
``_tensorclass/methods.py``, the non-tensor classes in ``_nontensor*.py``), next to their
related methods. A branch on the class inside a mixin (``if self._is_lazy``) is such a
hook waiting to be written.

**Entry protocols** (:data:`ENTRY_PROTOCOL`): what a mixin calls on the other
collections it meets rather than on itself: a non-tensor entry's ``_with``/``_reshaped``
(its value on another batch size) and ``_read_value`` (what ``td[key]`` gives), a
tensorclass instance's ``_tensordict`` (the tensordict it holds).

Each mixin says in its docstring, on a line ``Calls: ...``, the names of this contract it
uses; ``tests/test_contract_declared.py`` reads every mixin module and checks that it
uses no other private member of a tensordict, and that each name it declares is one of
this contract's.
"""

from __future__ import annotations

PRIMITIVES = (
    "_get_str",
    "_set_str",
    "_del_str",
    "_keys_level",
    "_items_level",
    "_new_like",
    "_store_entry",
    "_index",
    "_set_at",
    "_batch_op",
    "_batch_op_multi",
    "_shallow_copy",
    "_propagate_lock",
    "_mm",
    "_memmap_plan",
    "_memmap_rebuild",
    "_memmap_write_meta",
    "_memmap_refresh",
    "_memmap_refresh_from",
    "_memmap_load_into",
    "_memmap_record_type",
)
"""The primitives :class:`~tensordict.TensorDictBase` declares and every concrete class defines."""

ENTRY_PROTOCOL = (
    "_with",
    "_reshaped",
    "_read_value",
    "_written_at",
    "_memmap_record",
    "_tensordict",
    "_wrap",
    "_from_tensordict",
    "_cells",
)
"""Members of the other collections that the mixins call on them: a non-tensor entry's
``_with``, ``_reshaped``, ``_read_value``, ``_written_at`` (the entry after another value
is written at an index: a stack) and ``_memmap_record``; a stack of values' ``_cells``
(the entry of each batch element, which writes reach in place); a tensorclass
instance's ``_tensordict`` (the tensordict it holds), ``_wrap`` (a result as its class)
and ``_from_tensordict`` (the class over a tensordict), used by the tensorclass forms of
the methods that the mixin modules define for it."""


class Contract:
    """Declares the members that one mixin (or class) defines and the others call.

    Every stub raises NotImplementedError: it only says the name, the arguments and who
    defines it. The definitions always come first in the method resolution order.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ values of every leaf
    def _fast_apply(self, fn, *others, **kwargs):
        """``fn`` over every tensor leaf into a new tensordict, or in place with ``inplace=True``.

        Defined by ``ApplyMixin``; ``TensorDict``, the lazy stack, the non-tensor classes,
        ``TypedTensorDict`` and the tensorclass override it.
        """
        raise NotImplementedError

    def _stored_tensors(self):
        """The tensors this tensordict stores (a lazy stack's are its members' own).

        Defined by ``MemmapMixin``; the lazy stack overrides it.
        """
        raise NotImplementedError

    def _reset_device(self, device) -> None:
        """Records ``device`` as the tensordict's device, at every level. Defined by each class."""
        raise NotImplementedError

    def _consolidated_to(self, device, non_blocking: bool):
        """A consolidated tensordict moved to ``device`` as one storage, or None when it is
        not consolidated. Defined by ``ConsolidateMixin``."""
        raise NotImplementedError

    def _emptied(self, factory, size, kwargs: dict):
        """What ``new_empty(empty_lazy=True)`` (and ``new_zeros``, ...) makes of this level at
        batch size ``size``.

        Defined by ``DeviceMixin``; the lazy stack gives a stack of empty members, a stack of
        non-tensor values a stack of values.
        """
        raise NotImplementedError

    def _leafwise_operand(self):
        """What this object is as the operand of a leafwise operation (``td + other``).

        Defined by ``MathMixin`` (itself); the tensorclass gives its tensordict, a
        non-tensor entry itself.
        """
        raise NotImplementedError

    def _write_matching_leaves(self, fn, other) -> None:
        """Writes ``fn(leaf, other's leaf)`` into every stored leaf. Defined by ``MathMixin``;
        the lazy stack writes its members'."""
        raise NotImplementedError

    def _as_dense(self):
        """This tensordict with one tensor per leaf. Defined by ``MathMixin``; the lazy stack
        gives ``contiguous()``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ entries and keys
    def _walk_to_parent(self, parts: tuple, create: bool):
        """The level holding the last part of a nested key. Defined by ``EntriesMixin``."""
        raise NotImplementedError

    def _missing(self, parts: tuple, depth: int, level):
        """The MissingKeyError for a key not found at ``depth``. Defined by ``EntriesMixin``."""
        raise NotImplementedError

    def _check_can_remove(self, key, action: str) -> None:
        """Raises LockedError when ``key`` cannot be removed now. Defined by ``EntriesMixin``."""
        raise NotImplementedError

    def _walk_items(self):
        """The ``(key, value)`` pairs the key walk descends into. Defined by ``KeysMixin``;
        the lazy stack gives its members' keys without stacking."""
        raise NotImplementedError

    def _value_items(self):
        """The ``(key, value)`` pairs ``values()`` and ``items()`` read at this level, or None
        (each value is then got by its key). Defined by ``KeysMixin``; a dense tensordict
        gives its entries."""
        raise NotImplementedError

    def _maybe_inplace(self, result, inplace: bool, method: str):
        """``result``, or this tensordict become ``result`` with ``inplace=True``.

        Defined by ``BatchDimsMixin``.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ conversions and repr
    def _dict_entry(self, convert_tensors: bool):
        """What ``to_dict`` of a tensordict holding this object gives for it.

        Defined by ``ConvertMixin``; the non-tensor classes and the tensorclass override it.
        """
        raise NotImplementedError

    def _numpy_entry(self):
        """What ``numpy()`` of a tensordict holding this object gives for it (as ``_dict_entry``)."""
        raise NotImplementedError

    def _repr_items(self):
        """The ``(key, value)`` pairs the ``repr`` shows. Defined by ``PrintingMixin``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the walk of a tree
    def _tree_items(self, sort: bool = False) -> list:
        """The entries of this level for the walk of :mod:`tensordict._ops.tree`.

        ``TreeMixin`` defines the tree hooks (``_tree_items``, ``_tree_info``,
        ``_tree_value``, ``_tree_build``, ``_tree_like``, ``_tree_inner``,
        ``_tree_write_back``); the lazy stack, the tensorclass and the non-tensor data
        override the ones where they differ.
        """
        raise NotImplementedError

    @classmethod
    def _tree_build(cls, entries: dict, info: dict):
        """A new level of this class from its rebuilt entries. Defined by ``TreeMixin``."""
        raise NotImplementedError

    def _tree_info(self) -> dict:
        """The fields of this level itself (batch size, names, stack dim, lock). Defined by
        ``TreeMixin``."""
        raise NotImplementedError

    def _tree_value(self):
        """None for a level; a non-tensor entry's record. Defined by ``TreeMixin``."""
        raise NotImplementedError

    def _tree_like(self, entries: dict, device=None):
        """A new level like this one holding ``entries``. Defined by ``TreeMixin``."""
        raise NotImplementedError

    def _tree_inner(self):
        """The tensordict that holds this level's entries. Defined by ``TreeMixin``."""
        raise NotImplementedError

    def _tree_write_back(self, key: str, value):
        """None, or a function writing a stacked copy read at ``key`` back into the members.

        Defined by ``TreeMixin``; the lazy stack overrides it.
        """
        raise NotImplementedError


def declared(cls: type) -> set:
    """The names of this contract that the mixin ``cls`` declares it calls.

    They are listed in its docstring after ``Calls:``, separated by commas, up to the
    next blank line.
    """
    names: set = set()
    reading = False
    for line in (cls.__doc__ or "").splitlines():
        line = line.strip()
        if line.startswith("Calls:"):
            reading, line = True, line[len("Calls:") :]
        elif not line:
            reading = False
        if reading:
            names.update(part.strip(" `,.") for part in line.split(","))
    names.discard("")
    return names


def contract_names() -> set:
    """Every name a mixin may call without defining it."""
    stubs = {name for name in vars(Contract) if name.startswith("_") and not name.startswith("__")}
    return set(PRIMITIVES) | set(ENTRY_PROTOCOL) | stubs
