"""Devices, dtypes and copies of every leaf: moves, casts, clones, new tensordicts, memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict._blocks import update_back, written_back
from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_leaf_nontensor,
    is_tensor_collection,
)
from tensordict._helpers import contiguous_strides
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops._generated.casts import CastOps
from tensordict._ops.convert import CONVERTERS
from tensordict._ops.math import leaf_keys, leaf_tensors, tensors_only
from tensordict._typing import DeviceType, ShapeType, T
from tensordict.errors import (
    AcceleratorUnavailableError,
    ConflictingArgumentsError,
    InvalidArgumentError,
    KeyMismatchError,
    LockedError,
    UnsupportedConversionError,
    warn,
)
from tensordict.memmap.tensor import MemoryMappedTensor


def _check_attrs_call(args: tuple, pin: bool) -> None:
    # A tensordict of TensorAttrs says every leaf's target: nothing else may be asked for.
    if len(args) > 1:
        msg = (
            "to() with a tensordict of TensorAttrs does not accept additional positional "
            f"arguments (got {len(args)}): the TensorAttrs give each leaf's device and dtype"
        )
        raise ConflictingArgumentsError(msg)
    if pin:
        msg = "to() with a tensordict of TensorAttrs does not support non_blocking_pin=True"
        raise UnsupportedConversionError(msg)


def _holds_attrs(td) -> bool:
    # A tensordict made by attrs(): its leaves are TensorAttrs.
    return any(getattr(type(v), "_is_tensor_attrs", False) for v in td.values(True, False))


def _rebind_leaves(td, fn, prefix: tuple = ()) -> None:
    """Replaces every tensor leaf of ``td`` by ``fn(key, leaf)``, level by level.

    ``key`` is the leaf's full key: a string at the top level, a tuple below. A leaf that
    ``fn`` returns as it is stays bound.
    """
    for key, value in list(td._items_level()):
        if isinstance(value, torch.Tensor):
            full = prefix + (key,) if prefix else key
            new = fn(full, value)
            if new is not value:
                td._set_str(key, new, inplace=False, validated=True)
        elif is_tensor_collection(value) and not isinstance(value, NonTensorDataBase):
            _rebind_leaves(value, fn, prefix + (key,))


def _size_of(size: tuple) -> torch.Size:
    """The batch size given to ``new_zeros`` and its siblings, as ints or as one sequence."""
    return torch.Size(
        size[0] if len(size) == 1 and isinstance(size[0], (list, tuple, torch.Size)) else size
    )


def _same(leaf: torch.Tensor) -> torch.Tensor:
    """``leaf`` itself: what ``clone(recurse=False)`` does to each tensor."""
    return leaf


def _canonical(leaf: torch.Tensor) -> torch.Tensor:
    """``leaf`` if its strides are the row-major strides of its shape, else such a copy."""
    if leaf.stride() == contiguous_strides(leaf.shape):
        return leaf
    return leaf.clone(memory_format=torch.contiguous_format)


def _leaf_mover(device, dtype, non_blocking: bool, pin: bool) -> Callable:
    """What ``to`` does to one tensor leaf: pin it if asked, then move and cast it."""
    if device is None:
        return lambda x: x.to(dtype)
    if pin:
        return lambda x: x.pin_memory().to(device, dtype, non_blocking=True)
    return lambda x: x.to(device, dtype, non_blocking=non_blocking)


def _cast_back(restore_dtype: bool) -> Callable:
    """The inverse of ``to`` for a with-block: each leaf on the device (and dtype) of the one it replaces.

    A new leaf keeps its dtype; the source's device, if it has one, takes it on update.
    """

    def to_source(result, source):
        def back(key, leaf):
            old = source.get(key, None)
            if not isinstance(old, torch.Tensor):
                return leaf
            return leaf.to(old.device, old.dtype if restore_dtype else None)

        return result._fast_apply(back, named=True, nested_keys=True, device=source.device)

    return to_source


def _require_accelerator(what: str) -> None:
    if not torch.cuda.is_available():
        msg = (
            f"{what} needs a CUDA device, and none is available; on a machine without one, "
            "leave the tensors in ordinary memory"
        )
        raise AcceleratorUnavailableError(msg)


class DeviceMixin(CastOps):
    """Devices, dtypes and copies of every leaf (see ``TensorDictBase``).

    The casts to each dtype (``float32``, ``half``, ...) are spelled out in
    :mod:`tensordict._ops._generated.casts`; they call :meth:`type`. Two hooks of the
    classes are used: ``_reset_device(device)`` records a device on a tensordict and its
    sub-tensordicts without moving any tensor, and the lazy stack overrides
    :meth:`data_ptr` and :meth:`is_contiguous`.

    Calls: ``_consolidated_to``, ``_fast_apply``, ``_items_level``, ``_leafwise_operand``,
        ``_new_like``, ``_propagate_lock``, ``_reset_device``, ``_set_str``, ``_stored_tensors``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ devices
    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """Returns the tensordict moved to a device and/or cast to a dtype.

        The positional arguments may be a device (a ``torch.device``, a string or an index),
        a ``torch.dtype``, a tensor (its device and dtype), a tensordict (its device only),
        ``None`` (nothing) or a bool (``non_blocking``), in any combination; each overrides
        what an earlier one, or a keyword, gave. The dtype cast applies to every tensor leaf,
        integer and boolean ones included, unless ``cast_filter`` says otherwise; non-tensor
        entries are kept. With neither a device nor a dtype, or with only a device equal to
        :attr:`device`, this tensordict itself is returned. Otherwise the result is new
        (unless ``inplace``), its :attr:`device` is the target device when one was given, and
        it is locked if this tensordict is.

        Used as a context manager, ``with td.to(torch.float64) as td64:``, the entries of the
        result are written back into this tensordict when the block ends, each on the device
        (and with the dtype, if the call cast them) of the entry it replaces; a new entry is
        moved to :attr:`device` but keeps its dtype.

        Args:
            *args: the devices, dtypes, tensors or tensordicts described above.

        Keyword Args:
            device (torch.device, str or int, optional): the target device.
            dtype (torch.dtype, optional): the target dtype.
            other (TensorDictBase, optional): a tensordict whose device is the target device,
                and whose dtype too when all its tensor leaves share one. Defaults to None.
            non_blocking (bool, optional): passed on to ``Tensor.to`` when a device is given.
                Defaults to False.
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)`` with the
                leaf's full key as a tuple; only the leaves where it returns True are cast to
                the dtype (every leaf still moves to the device). Defaults to None: all.
            batch_size (sequence of int, optional): the batch size of the result. Without a
                device or dtype to change, it is set on this tensordict itself, which is
                returned. Defaults to None: kept.
            inplace (bool, optional): replace the leaves of this tensordict by the moved or
                cast ones, record the device, and return it. Defaults to False.
            non_blocking_pin (bool, optional): pin each leaf in page-locked memory before
                sending it, which needs a CUDA device. Defaults to False.
            num_threads (int, optional): with ``non_blocking_pin``, the number of threads the
                well-known API pins with; here the calling thread pins every leaf. Defaults
                to None.

        Returns:
            This tensordict, or a new one.

        Raises:
            TypeError: if another keyword is given, or a positional argument is none of the
                above, or a tensordict of ``TensorAttrs`` comes with other positional arguments.
            NotImplementedError: if a tensordict of ``TensorAttrs`` comes with
                ``non_blocking_pin=True`` (UnsupportedConversionError).
            ValueError: if ``other`` and ``device`` name different devices
                (InvalidArgumentError).
            RuntimeError: if a string names no device, or the device cannot be used (an index
                without an accelerator, for instance); with ``non_blocking_pin`` and no CUDA
                device (AcceleratorUnavailableError); with ``inplace``, if the tensordict is
                locked (LockedError).
            AssertionError: from torch, when moving to CUDA with a build that has no CUDA.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2], device="cpu")
            >>> td.to(torch.float64)["a"].dtype
            torch.float64
            >>> td.to("cpu") is td, td.to(None) is td
            (True, True)
            >>> with td.to(torch.float64) as td64:
            ...     td64["b"] = td64["a"] + 1
            >>> td["a"].dtype, td["b"].dtype
            (torch.float32, torch.float64)
            >>> td.to(torch.int64, inplace=True) is td, td["a"].dtype
            (True, torch.int64)
        """
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        non_blocking = kwargs.pop("non_blocking", False)
        other = kwargs.pop("other", None)
        cast_filter = kwargs.pop("cast_filter", None)
        batch_size = kwargs.pop("batch_size", None)
        inplace = kwargs.pop("inplace", False)
        pin = kwargs.pop("non_blocking_pin", False)
        kwargs.pop("num_threads", None)
        if kwargs:
            msg = f"to() got unexpected keyword arguments {sorted(kwargs)}"
            raise TypeError(msg)
        if batch_size is not None:
            self._check_to_batch_size()
        for arg in args:
            if arg is None:
                continue
            if isinstance(arg, bool):
                non_blocking = arg
            elif isinstance(arg, torch.dtype):
                dtype = arg
            elif isinstance(arg, (str, torch.device, int)):
                device = torch.device(arg)
            elif isinstance(arg, torch.Tensor):
                device, dtype = arg.device, arg.dtype
            elif is_tensor_collection(arg) and _holds_attrs(arg):
                _check_attrs_call(args, pin)
                return CONVERTERS["to_attrs"](self, arg, non_blocking)
            elif is_tensor_collection(arg):
                device = arg.device
            else:
                msg = f"to() cannot interpret the argument {arg!r}"
                raise TypeError(msg)
        if device is not None:
            device = torch.device(device)
        if other is not None:
            if device is not None and device != other.device:
                msg = f"to(): other= is on {other.device} and device= is {device}; give one of them"
                raise InvalidArgumentError(msg)
            device = other.device
            dtypes = {leaf.dtype for leaf in leaf_tensors(other)}
            dtype = dtypes.pop() if len(dtypes) == 1 else None
        if dtype is None and (device is None or device == self.device):
            if batch_size is not None:
                self.batch_size = batch_size
            return self
        if pin:
            _require_accelerator("to(non_blocking_pin=True)")
        if dtype is None and cast_filter is None and batch_size is None and not inplace:
            moved = self._consolidated_to(device, non_blocking)
            if moved is not None:
                return moved
        move = _leaf_mover(device, dtype, non_blocking, pin)
        if cast_filter is None:
            fn, named = move, False
        else:
            keep_dtype = _leaf_mover(device, None, non_blocking, pin)

            def fn(key, leaf):
                key = key if isinstance(key, tuple) else (key,)
                return move(leaf) if cast_filter(key, leaf) else keep_dtype(leaf)

            named = True
        if inplace:
            return self._cast_in_place(fn, named, device, batch_size)
        target = self.device if device is None else device
        if named:
            result = self._fast_apply(fn, named=True, nested_keys=True, device=target)
        else:
            result = self._fast_apply(fn, device=target)
        if batch_size is not None:
            result.batch_size = batch_size
        return written_back(
            self._locked_like_me(result), self, update_back(_cast_back(dtype is not None))
        )

    def _check_to_batch_size(self) -> None:
        """Hook of :meth:`to`: raises when this class takes no ``batch_size=`` there (a lazy stack)."""

    def _locked_like_me(self, result):
        """``result``, a copy of this tensordict's leaves moved or cast, locked if this one is."""
        if self.is_locked:
            result._propagate_lock(True)
        return result

    def _cast_in_place(self, fn, named: bool, device, batch_size):
        """``to(..., inplace=True)``: each tensor leaf is replaced by ``fn(leaf)`` (``fn(key, leaf)``)."""
        if self.is_locked:
            msg = "to(inplace=True) replaces the leaves: the tensordict is locked; call unlock_() first"
            raise LockedError(msg)
        _rebind_leaves(self, fn if named else lambda key, leaf: fn(leaf))
        if device is not None:
            self._reset_device(device)
        if batch_size is not None:
            self.batch_size = batch_size
        return self

    def cpu(self: T) -> T:
        """Returns the tensordict on the CPU.

        This is ``self.to("cpu")``: the tensordict itself when its :attr:`device` is already the
        CPU, otherwise a new tensordict whose leaves are moved there and whose device is set to
        the CPU, also when it was None (unset).

        Returns:
            This tensordict, or a new one.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.device is None, td.cpu().device
            (True, device(type='cpu'))
        """
        return self.to("cpu")

    def cuda(self: T, device: DeviceType | None = None) -> T:
        """Returns the tensordict on a CUDA device.

        This is ``self.to(torch.device(device))``, with ``"cuda"`` (the current CUDA device) when
        ``device`` is None: a new tensordict whose leaves are moved there, unless the
        tensordict is already on that device.

        Args:
            device (int, str or torch.device, optional): the CUDA device. Defaults to None.

        Returns:
            This tensordict, or a new one.

        Raises:
            AssertionError: from torch, if it was built without CUDA.
            RuntimeError: if no CUDA device is available, or ``device`` names no valid device.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.cuda().device.type if torch.cuda.is_available() else "cuda"
            'cuda'
        """
        return self.to(torch.device("cuda" if device is None else device))

    # ------------------------------------------------------------------ dtypes
    def long(self: T) -> T:
        """Returns the tensordict with every tensor leaf cast to ``torch.int64``.

        Integer, boolean and floating-point leaves are all cast; non-tensor entries are kept.
        It is ``self.to(torch.int64)``: always a new tensordict, whose leaves that already
        have this dtype are shared rather than copied.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.5, -2.5])}, [2])
            >>> td.long()["a"]
            tensor([ 1, -2])
        """
        return self.to(torch.int64)

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype shared by every tensor leaf, or None when they differ or there are none.

        Non-tensor entries are ignored.

        Returns:
            A ``torch.dtype``, or ``None``.

        Examples:
            >>> TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2]).dtype
            torch.float32
            >>> TensorDict({"a": torch.zeros(2), "b": torch.ones(2, dtype=torch.int64)}, [2]).dtype is None
            True
        """
        dtypes = {leaf.dtype for leaf in leaf_tensors(self)}
        return dtypes.pop() if len(dtypes) == 1 else None

    def type(self: T, dst_type: torch.dtype | str, *, cast_filter: Callable | None = None) -> T:
        """Returns the tensordict with its tensor leaves cast by ``Tensor.type(dst_type)``.

        Non-tensor entries are kept, and this tensordict is left unchanged.

        Args:
            dst_type (torch.dtype or str): the dtype, or a tensor type name such as
                ``"torch.DoubleTensor"``.

        Keyword Args:
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)`` with the
                leaf's full key as a tuple; a leaf is cast only where it returns True.
                Defaults to None: every leaf is cast.

        Returns:
            A new tensordict with the same keys, batch size, names and device; locked
            if this one is.

        Raises:
            ValueError: if ``dst_type`` is a string that names no tensor type.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1, 2])}, [2])
            >>> td.type(torch.float64)["a"]
            tensor([1., 2.], dtype=torch.float64)
            >>> td.type("torch.FloatTensor")["a"].dtype
            torch.float32
        """
        if cast_filter is None:
            return self._locked_like_me(self._fast_apply(lambda x: x.type(dst_type)))

        def cast(key, leaf):
            key = key if isinstance(key, tuple) else (key,)
            return leaf.type(dst_type) if cast_filter(key, leaf) else leaf

        return self._locked_like_me(self._fast_apply(cast, named=True, nested_keys=True))

    def _refuse_quantized(self, name: str, dtype, cast_filter: Callable | None):
        def refuse(key, leaf):
            key = key if isinstance(key, tuple) else (key,)
            if cast_filter is not None and not cast_filter(key, leaf):
                return leaf
            msg = (
                f"{name}(): cannot cast the leaf {key if len(key) > 1 else key[0]!r} to {dtype}: "
                "a quantized tensor needs a scale and a zero point, and torch has no plain cast "
                f"to it; use td.apply(lambda x: torch.quantize_per_tensor(x, scale, zero_point, "
                f"{dtype}))"
            )
            raise RuntimeError(msg)

        return self._fast_apply(refuse, named=True, nested_keys=True)

    def as_tensor(self: T) -> T:
        """Returns a tensordict whose leaves went through their own ``as_tensor()``, if any.

        Leaves without such a method are kept as they are: ``torch.Tensor`` and
        :class:`MemoryMappedTensor` included, so today the result holds the same leaves.
        With memory-mapped leaves it warns that this will change: from TensorDict 0.17 they
        will come back as plain tensors over the same memory (``as_subclass(torch.Tensor)``).
        A locked tensordict gives a locked result.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Warns:
            FutureWarning: if a leaf is a :class:`MemoryMappedTensor`.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.as_tensor()["a"] is td["a"]
            True
        """
        if any(isinstance(leaf, MemoryMappedTensor) for leaf in leaf_tensors(self)):
            msg = (
                "as_tensor() keeps the MemoryMappedTensor leaves of the tensordict as they are; "
                "from TensorDict 0.17 it will return them as plain torch.Tensor over the same "
                "memory (as_subclass(torch.Tensor)). Call that yourself to get them now."
            )
            warn(msg, FutureWarning)
        out = self._fast_apply(lambda x: x.as_tensor() if hasattr(x, "as_tensor") else x)
        return out.lock_() if self.is_locked else out

    @property
    def data(self: T) -> T:
        """A tensordict of the leaves' ``.data``: the same memory, detached from autograd.

        Returns:
            A new tensordict with the same keys, batch size, names and device; locked
            if this one is.

        Examples:
            >>> w = torch.ones(2, requires_grad=True)
            >>> td = TensorDict({"a": w * 2}, [2])
            >>> td["a"].requires_grad, td.data["a"].requires_grad
            (True, False)
        """
        return self._locked_like_me(self._fast_apply(lambda x: x.data))

    # ------------------------------------------------------------------ copies
    def clone(self: T, recurse: bool = True, **kwargs: Any) -> T:
        """Returns a copy of the tensordict; with ``recurse=False`` the copy shares the tensors.

        With ``recurse=True`` every tensor leaf, nested ones included, is cloned into new
        memory. With ``recurse=False`` the structure is copied, level by level, and the
        tensors are shared: adding, removing or rebinding a key at any level of the copy
        leaves this tensordict alone, but in-place writes into a tensor show in both. The
        copy is unlocked and keeps the batch size, names and device.

        Args:
            recurse (bool, optional): clone the tensors too; with False, copy only the
                structure. Defaults to True.
            **kwargs: accepted and ignored.

        Returns:
            The new tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.clone()["a"].data_ptr() != td["a"].data_ptr()
            True
            >>> td.clone(recurse=False)["a"] is td["a"]
            True
        """
        if not recurse:
            return self._fast_apply(_same)
        return self._fast_apply(torch.Tensor.clone)

    def contiguous(self: T, *, canonical: bool = False, inplace: bool = False) -> T:
        """Returns a tensordict whose tensor leaves are contiguous in memory.

        Each leaf goes through ``Tensor.contiguous``: the leaves that are already contiguous
        are shared, the others copied. The result is a new tensordict, with the same keys,
        batch size, names and device; non-tensor entries are kept.

        Keyword Args:
            canonical (bool, optional): also copy a leaf whose strides are not the row-major
                strides of its shape although torch calls it contiguous (as dims of size 1
                allow). Defaults to False.
            inplace (bool, optional): replace the leaves that are not contiguous in this
                tensordict itself (its sub-tensordicts keep their identity) and return it.
                Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            RuntimeError: with ``inplace``, if a leaf to replace is in a locked tensordict
                (LockedError).
            NotImplementedError: with ``inplace``, on a lazy stack (its dense form is a new
                tensordict).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).permute(1, 0)
            >>> td["a"].is_contiguous(), td.contiguous()["a"].is_contiguous()
            (False, True)
            >>> td.contiguous(inplace=True) is td, td["a"].is_contiguous()
            (True, True)
            >>> odd = torch.empty_strided((1, 3), (1, 1))
            >>> TensorDict(a=odd).contiguous(canonical=True)["a"].stride()
            (3, 1)
        """
        fn = _canonical if canonical else torch.Tensor.contiguous
        if not inplace:
            return self._fast_apply(fn)
        _rebind_leaves(self, lambda key, leaf: fn(leaf))
        return self

    def detach(self: T) -> T:
        """Returns a tensordict whose tensor leaves are detached from the autograd graph.

        Each leaf goes through ``Tensor.detach``: the new leaves share memory with the old ones
        but no longer require gradients. Non-tensor entries are kept.

        Returns:
            A new tensordict with the same keys, batch size, names and device; locked
            if this one is.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, requires_grad=True)}, [2])
            >>> td.detach()["a"].requires_grad
            False
        """
        return self._locked_like_me(self._fast_apply(torch.Tensor.detach))

    def detach_(self: T) -> T:
        """Detaches every tensor leaf from the autograd graph in place and returns the tensordict.

        Each leaf, nested ones included, goes through ``Tensor.detach_``; non-tensor entries
        are skipped, and a locked tensordict accepts it too.

        Returns:
            This tensordict.

        Raises:
            RuntimeError: if a leaf is a view (of an indexed tensordict, for instance) that
                autograd tracks, which torch cannot detach in place; the leaves before it are
                already detached.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, requires_grad=True) * 2}, [2])
            >>> td.detach_()["a"].requires_grad
            False
        """
        for leaf in self._stored_tensors():  # a lazy stack's own, never stacked copies
            leaf.detach_()
        return self

    def copy_(self: T, tensordict: TensorCollection | dict, non_blocking: bool = False) -> T:
        """Copies the entries of ``tensordict`` into the matching entries of this one, in place, and returns it.

        This is :meth:`update_`: each entry of the source, nested ones included, is written
        into the existing entry at the same key, which keeps its own tensor, dtype and device.
        Entries that the source lacks are left unchanged. No entry is rebound, so a locked
        tensordict accepts it too.

        Args:
            tensordict (TensorDictBase or dict): the source.
            non_blocking (bool, optional): accepted and ignored. Defaults to False.

        Returns:
            This tensordict.

        Raises:
            KeyError: if an entry of the source does not exist here; the entries before it are
                already copied.
            BatchSizeError: if a source tensor does not broadcast to the shape of its entry.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2)}, [2])
            >>> td.copy_({"a": torch.ones(2)})["a"]
            tensor([1., 1.])
        """
        return self.update_(tensordict)

    def empty(
        self: T,
        recurse: bool = False,
        *,
        batch_size: ShapeType | None = None,
        device: Any = None,
        names: Any = None,
    ) -> T:
        """Returns a tensordict without leaves, of the same batch size (keeping sub-tensordicts, emptied, with ``recurse``).

        With ``recurse=False`` the result has no entries at all, and the batch size
        ``batch_size`` (this one by default). With ``recurse=True`` it keeps the structure:
        each sub-tensordict becomes an empty one of its own batch size, non-tensor entries
        are dropped, and the result has this batch size (``batch_size`` is ignored). The result
        is unlocked, has this device, and keeps the dim names when its batch size is this one;
        the ``device`` and ``names`` keywords are accepted but have no effect.

        Args:
            recurse (bool, optional): keep the sub-tensordicts, emptied. Defaults to False.

        Keyword Args:
            batch_size (sequence of int, optional): the batch size of the result, with
                ``recurse=False``. Defaults to None, this batch size.
            device (optional): ignored.
            names (optional): ignored.

        Returns:
            A new tensordict.

        Raises:
            TypeError: if ``batch_size`` is not a sequence of ints.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.empty().sorted_keys, td.empty(recurse=True).sorted_keys
            ([], ['b'])
            >>> td.empty(batch_size=[]).batch_size
            torch.Size([])
        """
        if recurse:
            out = self._new_like({}, self.batch_size)
            for key, value in self._items_level():
                if hasattr(value, "_items_level"):
                    out._set_str(key, value.empty(recurse=True), inplace=False, validated=True)
            return out
        return self._new_like({}, self.batch_size if batch_size is None else torch.Size(batch_size))

    def _new_factory(self, factory, size, kwargs):
        """``factory(leaf, size + features, **kwargs)`` for every leaf; with ``empty_lazy=True``
        among ``kwargs``, lazy stacks are kept with empty members (see :meth:`new_empty`)."""
        new = _size_of(size)
        if kwargs.pop("empty_lazy", False):
            return self._emptied(factory, new, kwargs)
        return self._filled(factory, new, kwargs)

    def _filled(self, factory, new: torch.Size, kwargs: dict):
        bd = self.batch_dims
        return self._fast_apply(
            lambda x: factory(x, new + x.shape[bd:], **kwargs), batch_size=new, names=None
        )

    def new_zeros(self: T, *size: int | Sequence[int], **kwargs: Any) -> T:
        """Returns a tensordict of zeros with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_zeros(size + feature_shape)``, so it keeps its dtype
        and device unless ``kwargs`` say otherwise; sub-tensordicts get the new batch size
        followed by their own extra batch dims, and non-tensor entries keep their value with
        the new batch size. The result has no dim names and keeps this :attr:`device`, even
        when ``device=`` moves the leaves.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.
            **kwargs: passed on to ``Tensor.new_zeros`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...; ``empty_lazy=True`` keeps lazy stacks, with empty
                members (see :meth:`new_empty`).

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, 3)}, [2])
            >>> zeros = td.new_zeros(4)
            >>> zeros["a"].shape, zeros["a"].sum().item()
            (torch.Size([4, 3]), 0.0)
        """
        return self._new_factory(torch.Tensor.new_zeros, size, kwargs)

    def new_ones(self: T, *size: int | Sequence[int], **kwargs: Any) -> T:
        """Returns a tensordict of ones with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_ones(size + feature_shape)``, so it keeps its dtype
        and device unless ``kwargs`` say otherwise; sub-tensordicts get the new batch size
        followed by their own extra batch dims, and non-tensor entries keep their value with
        the new batch size. The result has no dim names and keeps this :attr:`device`, even
        when ``device=`` moves the leaves.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.
            **kwargs: passed on to ``Tensor.new_ones`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...; ``empty_lazy=True`` keeps lazy stacks, with empty
                members (see :meth:`new_empty`).

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, dtype=torch.int64)}, [2])
            >>> td.new_ones([1, 2])["a"]
            tensor([[[1, 1, 1],
                     [1, 1, 1]]])
        """
        return self._new_factory(torch.Tensor.new_ones, size, kwargs)

    def new_empty(
        self: T, *size: int | Sequence[int], empty_lazy: bool = False, **kwargs: Any
    ) -> T:
        """Returns a tensordict of uninitialised tensors with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_empty(size + feature_shape)``, whose values are
        whatever the memory held; it keeps its dtype and device unless ``kwargs`` say
        otherwise. Sub-tensordicts get the new batch size followed by their own extra batch
        dims, and non-tensor entries keep their value with the new batch size. The result has
        no dim names and keeps this :attr:`device`, even when ``device=`` moves the leaves.

        With ``empty_lazy=True``, each lazy stack (this one, or one at any depth) becomes a
        lazy stack along the same dim whose members are empty tensordicts (no keys), ready
        to be filled member by member; without it, or when the new batch size has no such
        dim, a lazy stack gives a dense result.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.

        Keyword Args:
            empty_lazy (bool, optional): keep lazy stacks, with empty members. Defaults to
                False.
            **kwargs: passed on to ``Tensor.new_empty`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
            >>> td.new_empty(5)["a"].shape
            torch.Size([5, 3])
            >>> stack = lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 3, dim=1)
            >>> out = stack.new_empty(4, 5, empty_lazy=True)
            >>> type(out).__name__, out.batch_size, len(out.tensordicts), out.is_empty()
            ('LazyStackedTensorDict', torch.Size([4, 5]), 5, True)
        """
        return self._new_factory(torch.Tensor.new_empty, size, dict(kwargs, empty_lazy=empty_lazy))

    def _emptied(self, factory, size: torch.Size, kwargs: dict):
        """Hook of ``empty_lazy=True`` (``new_empty``, ``new_zeros``, ...): this level at batch size ``size``.

        A dense level is ``factory`` of its leaves, each sub-tensordict emptied the same
        way; the lazy stack overrides it with a stack of empty members.
        """
        out = self._filled(factory, size, kwargs)
        bd = self.batch_dims
        for key, value in self._items_level():
            if hasattr(value, "_items_level"):
                emptied = value._emptied(factory, size + value.batch_size[bd:], kwargs)
                out._set_str(key, emptied, inplace=False, validated=True)
        return out

    def new_full(self: T, size: int | Sequence[int], fill_value: float, **kwargs: Any) -> T:
        """Returns a tensordict filled with ``fill_value``, with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_full(size + feature_shape, fill_value)``, so it
        keeps its dtype and device unless ``kwargs`` say otherwise; sub-tensordicts get the
        new batch size followed by their own extra batch dims, and non-tensor entries keep
        their value with the new batch size. The result has no dim names and keeps this
        :attr:`device`, even when ``device=`` moves the leaves.

        Args:
            size (int or sequence of int): the new batch size.
            fill_value (number): the value of every element, cast to each leaf's dtype.
            **kwargs: passed on to ``Tensor.new_full`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, dtype=torch.int64)}, [2])
            >>> td.new_full([3], 7)["a"]
            tensor([7, 7, 7])
        """
        return self._new_factory(
            lambda x, s, **kw: x.new_full(s, fill_value, **kw), (size,), kwargs
        )

    def new_tensor(
        self: T,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: DeviceType | None = NO_DEFAULT,
        requires_grad: bool = False,
        pin_memory: bool | None = None,
    ) -> T:
        """Returns a tensordict with this one's keys whose leaves are copies of ``data``.

        Each leaf becomes ``leaf.new_tensor(data)``: ``data`` copied with the leaf's dtype
        (or ``dtype``) and device (or ``device``). A tensor, array, sequence or number gives
        every leaf the same values, and the result's batch size is ``data``'s shape; a
        tensordict gives each leaf its value at the same key (extra keys are ignored) and
        the result its batch size.

        Args:
            data (torch.Tensor, TensorDictBase, np.ndarray, sequence or number): the values.

        Keyword Args:
            dtype (torch.dtype, optional): the dtype of every leaf. Defaults to None (each
                leaf's own).
            device (torch.device, optional): the device of every leaf. Defaults to each
                leaf's own.
            requires_grad (bool, optional): make the leaves require gradients. Defaults to
                False.
            pin_memory (bool, optional): accepted and passed on when True. Defaults to None.

        Returns:
            A new tensordict.

        Raises:
            KeyError: if ``data`` is a tensordict without one of this tensordict's keys.
            RuntimeError: with ``requires_grad``, if a leaf's dtype cannot require
                gradients.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2, dtype=torch.int64)}, [2])
            >>> out = td.new_tensor([1.5, 2.0, 3.0])
            >>> out.batch_size, out["a"], out["b"]
            (torch.Size([3]), tensor([1.5000, 2.0000, 3.0000]), tensor([1, 2, 3]))
        """
        if is_tensor_collection(data):
            data = data._leafwise_operand()

        def make(leaf, value):
            kwargs = {"dtype": leaf.dtype if dtype is None else dtype}
            kwargs["device"] = leaf.device if device is NO_DEFAULT else device
            if pin_memory:
                kwargs["pin_memory"] = True
            return leaf.new_tensor(value, requires_grad=requires_grad, **kwargs)

        if is_tensor_collection(data):
            missing = sorted(map(str, leaf_keys(self) - leaf_keys(data)))
            if missing:
                msg = f"new_tensor() got a tensordict without the keys {missing} of this one"
                raise KeyMismatchError(msg)
            source = data.select(*self.keys(True, True, is_leaf=is_leaf_nontensor))
            return self._fast_apply(
                make, source, batch_size=data.batch_size, names=None, device=data.device
            )
        shape = torch.as_tensor(data).shape
        target = torch.device("cpu") if device is NO_DEFAULT else device
        return self._fast_apply(
            lambda leaf: make(leaf, data), batch_size=shape, names=None, device=target
        )

    # ------------------------------------------------------------------ memory
    def data_ptr(self: T, *, storage: bool = False) -> T:
        """Returns a tensordict of the leaves' data pointers, as 0-dim int64 tensors.

        A lazy stack gives one sub-tensordict per member, keyed ``"0"``, ``"1"``, ...,
        since its leaves have no single data pointer. Non-tensor entries are left out.

        Keyword Args:
            storage (bool, optional): give the pointer of each leaf's untyped storage instead
                of the leaf's first element (they differ for a view at an offset). Defaults
                to False.

        Returns:
            A tensordict with ``batch_size=[]`` on the CPU.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(4)}, [4])
            >>> int(td.data_ptr()["a"]) == td["a"].data_ptr()
            True
            >>> view = td[1:]
            >>> int(view.data_ptr(storage=True)["a"]) == int(td.data_ptr()["a"])
            True
        """

        def pointer(leaf):
            value = leaf.untyped_storage().data_ptr() if storage else leaf.data_ptr()
            return torch.tensor(value, dtype=torch.int64)

        out = self._fast_apply(
            pointer, batch_size=torch.Size(()), names=None, device=torch.device("cpu")
        )
        return tensors_only(out)

    def param_count(self, *, count_duplicates: bool = True) -> int:
        """Returns the number of elements of all the tensor leaves together.

        Keyword Args:
            count_duplicates (bool, optional): count a tensor held under several keys once
                for each key. With False, a tensor object met again is counted once (views
                of one another are still counted apart). Defaults to True.

        Returns:
            An int.

        Examples:
            >>> w = torch.zeros(2, 3)
            >>> td = TensorDict({"w": w, "again": w, "b": torch.zeros(2)}, [2])
            >>> td.param_count(), td.param_count(count_duplicates=False)
            (14, 8)
        """
        leaves = leaf_tensors(self)
        if not count_duplicates:
            leaves = list({id(leaf): leaf for leaf in leaves}.values())
        return sum(leaf.numel() for leaf in leaves)

    def is_contiguous(self) -> bool:
        """Returns True when every tensor leaf is contiguous in memory.

        A lazy stack is never contiguous: its leaves are stacked on each read. A tensordict
        without leaves is.

        Returns:
            A bool.

        Examples:
            >>> TensorDict({"a": torch.zeros(2, 3)}, [2]).is_contiguous()
            True
            >>> TensorDict({"a": torch.zeros(3, 2).t()}, [2]).is_contiguous()
            False
        """
        return all(leaf.is_contiguous() for leaf in leaf_tensors(self))

    @property
    def is_cpu(self) -> bool:
        """True when the tensordict's device is the CPU (False without a device).

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2], device="cpu").is_cpu
            True
            >>> TensorDict({"a": torch.zeros(2)}, [2]).is_cpu
            False
        """
        device = self.device
        return device is not None and device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        """True when the tensordict's device is the ``meta`` device (False without a device).

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2], device="meta").is_meta
            True
            >>> TensorDict({"a": torch.zeros(2)}, [2]).is_meta
            False
        """
        device = self.device
        return device is not None and device.type == "meta"

    def auto_device_(self: T) -> T:
        """Records the device of the tensor leaves as the tensordict's device, when they share one.

        Nothing is moved. When every tensor leaf (nested ones included) is on one device,
        the tensordict and its sub-tensordicts take it as their device; otherwise (or
        without leaves) their device becomes None. A locked tensordict accepts it too.

        Returns:
            This tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2])
            >>> td.device is None
            True
            >>> td.auto_device_().device, td["b"].device
            (device(type='cpu'), device(type='cpu'))
        """
        devices = {leaf.device for leaf in leaf_tensors(self)}
        self._reset_device(devices.pop() if len(devices) == 1 else None)
        return self

    def clear_device_(self: T) -> T:
        """Forgets the device of the tensordict and its sub-tensordicts; nothing is moved.

        Afterwards new entries may be on any device. A locked tensordict accepts it too.

        Returns:
            This tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2], device="cpu")
            >>> td.clear_device_().device is None, td["b"].device is None
            (True, True)
        """
        self._reset_device(None)
        return self

    def pin_memory(self: T, num_threads: int | None = None, inplace: bool = False) -> T:
        """Returns the tensordict with every tensor leaf copied into pinned (page-locked) memory.

        Pinned memory speeds up copies to a CUDA device. A tensordict without tensor leaves
        is returned as a copy even without CUDA.

        Args:
            num_threads (int, optional): accepted for compatibility; the leaves are pinned
                one after the other. Defaults to None.
            inplace (bool, optional): pin in place, as :meth:`pin_memory_`. Defaults to
                False.

        Returns:
            A new tensordict (this one with ``inplace``).

        Raises:
            AcceleratorUnavailableError: if there is a tensor leaf and no CUDA device (a
                ``RuntimeError``).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> pinned = td.pin_memory() if torch.cuda.is_available() else td
            >>> pinned.batch_size
            torch.Size([2])
        """
        if inplace:
            return self.pin_memory_()
        if leaf_tensors(self):
            _require_accelerator("pin_memory()")
        return self._fast_apply(lambda x: x.pin_memory())

    def pin_memory_(self: T, num_threads: int = 0) -> T:
        """Replaces every tensor leaf by a copy in pinned (page-locked) memory; returns the tensordict.

        The entries are rebound to the pinned copies, so views of the former leaves no
        longer share memory with the tensordict.

        Args:
            num_threads (int, optional): accepted for compatibility. Defaults to 0.

        Returns:
            This tensordict.

        Raises:
            AcceleratorUnavailableError: if there is a tensor leaf and no CUDA device (a
                ``RuntimeError``); nothing is changed then.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> (td.pin_memory_() if torch.cuda.is_available() else td) is td
            True
        """
        if leaf_tensors(self):
            _require_accelerator("pin_memory_()")
        _rebind_leaves(self, lambda key, x: x.pin_memory())
        return self

    def record_stream(self: T, stream: torch.cuda.Stream) -> T:
        """Marks every tensor leaf as used by the CUDA stream ``stream`` (``Tensor.record_stream``).

        Args:
            stream (torch.cuda.Stream): the stream.

        Returns:
            This tensordict.

        Raises:
            AcceleratorUnavailableError: if there is no CUDA device (a ``RuntimeError``).
            RuntimeError: if ``stream`` is not a CUDA stream or a leaf is not on a CUDA
                device (raised by torch).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> stream = torch.cuda.current_stream() if torch.cuda.is_available() else None
            >>> (td.cuda().record_stream(stream) if stream is not None else td).batch_size
            torch.Size([2])
        """
        _require_accelerator("record_stream()")
        for leaf in leaf_tensors(self):
            leaf.record_stream(stream)
        return self
