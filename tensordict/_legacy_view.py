"""Lazy views of the legacy lazy mode: a shape method's result that reads and writes its source.

With :class:`~tensordict.set_lazy_legacy` on, ``permute``, ``transpose``, ``movedim``,
``squeeze``, ``unsqueeze`` and ``view`` of a tensordict return a :class:`_ShapeView`
instead of a new tensordict, as the well-known API's legacy mode does. The view holds
its source and the call that made it (a :class:`_Call`), and nothing else:

- a read computes the call on the entry it reads, so the view always shows what the
  source holds now (a sub-tensordict read in the legacy mode is a view too);
- a write goes through to the source: ``set`` and ``update`` store the value put back
  into the source's layout, ``set_`` and index writes write into the source's tensors;
  deleting and renaming act on the source, and locking locks the source;
- what changes its structure in place (``select``/``exclude``/``flatten_keys`` with
  ``inplace=True``, ``to(..., inplace=True)``, setting ``batch_size`` or ``names``,
  ``to(batch_size=...)``) raises :class:`~tensordict.errors.LazyViewError`;
- a shape method of the view in the legacy mode returns the source when it undoes the
  call (``td.permute(1, 0).permute(1, 0) is td``, ``td.unsqueeze(0).squeeze(0) is td``)
  and a view of the view otherwise; outside the legacy mode it raises
  :class:`~tensordict.errors.LazyViewError` (call ``to_tensordict()`` first);
- every other method (arithmetic, ``apply``, ``clone``, ``reshape``, indexing, ...) works
  on the dense form, a :class:`~tensordict.TensorDict` whose leaves are views of the
  source's leaves: out-of-place results are dense tensordicts, in-place ones reach the
  source through the memory they share.

The view is made by the hook ``_shape_call`` of :class:`~tensordict._ops.batch_dims.BatchDimsMixin`,
through the maker this module registers there (the mixins sit below the classes).
"""

from __future__ import annotations

import torch

from tensordict._collection import NO_DEFAULT, is_non_tensor
from tensordict._ops.batch_dims import register_legacy_view
from tensordict._options import lazy_legacy, set_lazy_legacy
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import LazyViewCastError, LazyViewError, NotMemmapError


class _Call:
    """A shape method called on ``ndim`` batch dims, applied to any tensordict with at least as many.

    ``kind`` and ``arg``: ``("permute", order)``, ``("squeeze", dims removed)``,
    ``("unsqueeze", dims inserted, ascending)`` or ``("view", new batch size)``. The
    batch dims past the first ``ndim`` (those of a sub-tensordict) are left as they are.
    """

    __slots__ = ("kind", "arg", "ndim")

    def __init__(self, kind: str, arg: tuple, ndim: int) -> None:
        self.kind = kind
        self.arg = tuple(arg)
        self.ndim = ndim

    def dense(self, td):
        """The call on the dense tensordict ``td``, computed densely (the leaves are views)."""
        with set_lazy_legacy(False):
            if self.kind == "permute":
                return td.permute(*self.arg, *range(self.ndim, td.batch_dims))
            if self.kind == "squeeze":
                for d in sorted(self.arg, reverse=True):
                    td = td.squeeze(d)
                return td
            if self.kind == "unsqueeze":
                for d in self.arg:
                    td = td.unsqueeze(d)
                return td
            return td.view(*self.arg, *td.batch_size[self.ndim :])

    def inverse(self, source_size: torch.Size) -> _Call:
        """The call that gives a result of this one the layout of a source of ``source_size`` back."""
        if self.kind == "permute":
            order = tuple(self.arg.index(d) for d in range(len(self.arg)))
            return _Call("permute", order, len(order))
        ndim = self.ndim + {"squeeze": -len(self.arg), "unsqueeze": len(self.arg)}.get(self.kind, 0)
        if self.kind == "squeeze":
            return _Call("unsqueeze", sorted(self.arg), ndim)
        if self.kind == "unsqueeze":
            return _Call("squeeze", self.arg, ndim)
        return _Call("view", tuple(source_size[: self.ndim]), len(self.arg))

    def __repr__(self) -> str:
        return f"{self.kind}{self.arg}"


_INVERSE_KIND = {
    "permute": "permute",
    "squeeze": "unsqueeze",
    "unsqueeze": "squeeze",
    "view": "view",
}


class _ShapeView(TensorDictBase):
    """A lazy view of ``source`` through a shape method (see the module).

    Make one with a shape method of a tensordict in the legacy lazy mode, never directly.
    """

    __slots__ = ("_src", "_call", "_batch_size", "_names", "_snap", "__weakref__")

    def __init__(self, source: TensorDictBase, call: _Call) -> None:
        self._src = source
        self._call = call
        self._snap = None
        # The batch size and names are those the call gives an empty tensordict like the source.
        shell = call.dense(TensorDict({}, source.batch_size, names=_names_of(source)))
        self._batch_size = shell.batch_size
        self._names = shell._names

    # ------------------------------------------------------------------ shape
    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the view: the call's result on the source's batch size.

        Raises:
            RuntimeError: on setting (LazyViewError): the view follows its source.
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        msg = (
            f"cannot set the batch size of a lazy {self._call.kind} view to {list(value)}: it "
            "follows its source; call to_tensordict() for a tensordict of its own"
        )
        raise LazyViewError(msg)

    @property
    def device(self) -> torch.device | None:
        """The device of the source."""
        return self._src.device

    @property
    def names(self) -> list | None:
        """The names of the batch dims: the source's, moved by the call.

        Raises:
            RuntimeError: on setting (LazyViewError).
        """
        names = self._names
        return [None] * len(self._batch_size) if names is None else list(names)

    @names.setter
    def names(self, value) -> None:
        msg = (
            f"cannot set the names of a lazy {self._call.kind} view: they follow its source; "
            "call to_tensordict() for a tensordict of its own"
        )
        raise LazyViewError(msg)

    def refine_names(self, *names) -> _ShapeView:
        """Refuses: the names of a view follow its source (name the source instead).

        Args:
            *names (str or None): the names the caller wanted.

        Raises:
            RuntimeError: always (LazyViewError).

        Examples:
            >>> import warnings
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     with set_lazy_legacy(True):
            ...         view = td.permute(1, 0)
            >>> try:
            ...     view.refine_names("y", "x")
            ... except RuntimeError:
            ...     print("name the source")
            name the source
        """
        msg = (
            f"cannot refine the names of a lazy {self._call.kind} view to {list(names)}: they "
            "follow its source; name the source, or call to_tensordict() first"
        )
        raise LazyViewError(msg)

    def _shape_call(self, kind: str, arg: tuple):
        if not lazy_legacy():
            hint = "reshape() or " if kind == "view" else ""
            msg = (
                f"cannot call {kind} on a lazy {self._call.kind} view outside the legacy lazy "
                f"mode: use {hint}to_tensordict() first"
            )
            raise LazyViewError(msg)
        call = _Call(kind, arg, len(self._batch_size))
        if _INVERSE_KIND[kind] == self._call.kind and _undoes(self, call):
            return self._src
        return _ShapeView(self, call)

    # ------------------------------------------------------------------ the dense form
    def _dense(self) -> TensorDict:
        """The view as a tensordict whose leaves are views of the source's leaves."""
        source = self._src
        if isinstance(source, _ShapeView):
            source = source._dense()
        return self._call.dense(source)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Returns a new tensordict holding a copy of what the view shows.

        Keyword Args:
            retain_none (bool, optional): keep entries set to None, as
                :meth:`TensorDict.to_tensordict` does. Defaults to None.

        Returns:
            A new :class:`~tensordict.TensorDict`, unlocked, that shares no memory with the source.

        Examples:
            >>> import warnings
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     with set_lazy_legacy(True):
            ...         view = td.permute(1, 0)
            >>> dense = view.to_tensordict()
            >>> type(dense).__name__, dense.batch_size
            ('TensorDict', torch.Size([3, 2]))
        """
        return self._dense().to_tensordict(retain_none=retain_none)

    def _one(self, key: str, value):
        """The entry ``value`` of the source at ``key``, as the view shows it."""
        if isinstance(value, TensorDictBase) and not is_non_tensor(value) and lazy_legacy():
            return _ShapeView(value, self._call)
        holder = self._src._new_like({key: value}, self._src.batch_size)
        return self._call.dense(holder)._get_str(key, NO_DEFAULT)

    def _back(self, key: str, value):
        """``value`` at ``key`` in the view's layout, put into the source's layout."""
        holder = TensorDict({key: value}, self._batch_size, names=self.names, device=self.device)
        return self._call.inverse(self._src.batch_size).dense(holder)._get_str(key, NO_DEFAULT)

    # ------------------------------------------------------------------ entries
    def _get_str(self, key: str, default):
        value = self._src._get_str(key, None)
        if value is None:
            if default is NO_DEFAULT:
                raise self._missing((key,), 0, self)
            return default
        return self._one(key, value)

    def _set_str(self, key: str, value, *, inplace: bool, validated: bool) -> None:
        # _back checks the value against the view's batch size (a new TensorDict holds it).
        self._src._set_str(key, self._back(key, value), inplace=inplace, validated=True)

    def _del_str(self, key: str) -> None:
        self._src._del_str(key)

    def _store_entry(self, key: str, value) -> None:
        self._src._store_entry(key, self._back(key, value))

    def _walk_to_parent(self, parts: tuple, create: bool):
        # The parent level of a nested key is the source's, seen through the same call (a
        # call applies to the leading batch dims of any level), so that what a nested write
        # creates lands in the source whatever the mode.
        if len(parts) == 1:
            return self
        return _ShapeView(self._src._walk_to_parent(parts, create), self._call)

    def _keys_level(self):
        return self._src._keys_level()

    def _items_level(self):
        return [(key, self._get_str(key, NO_DEFAULT)) for key in list(self._src._keys_level())]

    def _new_like(self, source: dict, batch_size, names=NO_DEFAULT, device=NO_DEFAULT):
        if names is NO_DEFAULT:
            names = self._names if batch_size == self._batch_size else None
        return TensorDict(
            source,
            batch_size,
            device=self.device if device is NO_DEFAULT else device,
            names=names,
        )

    def _check_restructure(self, method: str) -> None:
        msg = (
            f"cannot call {method}(inplace=True) on a lazy {self._call.kind} view: its keys are "
            "those of its source; use inplace=False, or change the source"
        )
        raise LazyViewError(msg)

    def _check_to_batch_size(self) -> None:
        msg = (
            f"Cannot pass batch-size to to() of a lazy {self._call.kind} view: its batch size "
            "follows its source; call to_tensordict() first, or to() without batch_size"
        )
        raise LazyViewCastError(msg)

    def _cast_in_place(self, fn, named: bool, device, batch_size):
        msg = (
            f"to(..., inplace=True) cannot replace the leaves of a lazy {self._call.kind} view: "
            "cast its source in place, or use inplace=False"
        )
        raise LazyViewCastError(msg)

    # ------------------------------------------------------------------ lock
    @property
    def is_locked(self) -> bool:
        """True when the source is locked; setting it (un)locks the source."""
        return self._src.is_locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        self._src._propagate_lock(locked)

    def _check_unlock(self) -> None:
        # unlocking the view unlocks its source: the source's own refusals apply (a
        # sub-tensordict of a locked tensordict stays locked)
        self._src._check_unlock()

    def _reset_device(self, device) -> None:
        self._src._reset_device(device)

    # ------------------------------------------------------------------ batch dims
    def _index(self, index):
        return self._dense()._index(index)

    def _set_at(self, index, value) -> None:
        dense = self._dense()
        before = set(dense.keys(True, True))
        dense._set_at(index, value)
        # The entries the write created exist in the dense form only (its leaves are views
        # of the source's, new ones are its own): store them in the source, in its layout.
        for key in dense.keys(True, True):
            if key not in before:
                self.set(key, dense.get(key))

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self._dense()._batch_op(op, batch_size, names)

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        return self._dense()._batch_op_multi(op, batch_sizes, names)

    # ------------------------------------------------------------------ memmap: the dense form
    # Memory-mapping a view writes its dense form (the view's layout) and, in place
    # (memmap_), rebinds the source's leaves to the mapped tensors put back in its layout.
    # The dense form is taken once, when the write is planned, and kept: a view mapped in
    # place answers for its folder through it.
    @property
    def _mm(self):
        snap = self._snap
        return None if snap is None else snap._mm

    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        self._snap = self._dense()
        self._snap._memmap_plan(folder, plan, robust_key, existsok, like)

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        snap = self._snap
        rebuilt = snap._memmap_rebuild(folder, replacement, inplace, robust_key)
        if not inplace:
            self._snap = None
            return rebuilt
        for key, value in rebuilt._items_level():
            self._src._store_entry(key, self._back(key, value))
        return self

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        self._snap._memmap_write_meta(folder, robust_key)

    def _memmap_refresh(self, options) -> None:
        self._memmapped()._memmap_refresh(options)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        return self._memmapped()._memmap_refresh_from(meta, stat, options)

    def _memmap_load_into(self, loaded) -> None:
        self._memmapped()._memmap_load_into(loaded)
        for key, value in self._snap._items_level():
            self._src._store_entry(key, self._back(key, value))

    def _memmapped(self) -> TensorDict:
        if self._snap is None:
            msg = "this lazy view is not memory-mapped: call memmap_() first"
            raise NotMemmapError(msg)
        return self._snap

    @classmethod
    def _memmap_record_type(cls) -> str:
        return TensorDict._memmap_record_type()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(source={self._src!r}, call={self._call!r})"


def _names_of(td):
    names = td.names
    return None if names is None or all(n is None for n in names) else names


def _undoes(view: _ShapeView, call: _Call) -> bool:
    """Whether ``call`` on ``view`` gives its source's layout back."""
    if call.kind == "permute":
        return all(view._call.arg[d] == i for i, d in enumerate(call.arg))
    target = TensorDict({}, view.batch_size)
    return call.dense(target).batch_size == view._src.batch_size


def _make(td: TensorDictBase, kind: str, arg: tuple) -> _ShapeView:
    return _ShapeView(td, _Call(kind, arg, td.batch_dims))


register_legacy_view(_make)
