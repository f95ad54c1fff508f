"""Values: predicates, dtype casts, data pointers, device bookkeeping and more leafwise math.

Three families are generated from tables, each with docstrings built by its factory:
the predicates (``_PREDICATES``: ``isnan`` and friends), the casts (``_CASTS``:
``float32``, ``uint8``, ... with a ``cast_filter``) and the pairwise operations
(``_PAIRWISE``: ``mod``, ``rsub``, ``logical_and``, ``bitwise_and``). The other
methods (``addcmul``, ``softmax``, ``cummax``, ``quantile``, ``data_ptr``,
``pin_memory``, ...) are written out, each over ``_fast_apply`` and the leaves.

Two hooks of the concrete classes are used: ``_reset_device(device)`` records a
device on a tensordict and its sub-tensordicts without moving any tensor, and
``_is_lazy`` tells a lazy stack, whose leaves have no single data pointer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._nontensor import NonTensorData
from tensordict.errors import (
    AcceleratorUnavailableError,
    DimensionError,
    DimTypeError,
    KeyMismatchError,
    warn,
)
from tensordict.memmap.tensor import MemoryMappedTensor

# ------------------------------------------------------------------------------ predicates
# name: (what it tests, example input, example output)
_PREDICATES = {
    "isnan": ("is NaN", '[1.0, float("nan")]', "tensor([False,  True])"),
    "isfinite": ("is finite (neither infinite nor NaN)", '[1.0, float("inf")]', "tensor([ True, False])"),
    "isposinf": ("is positive infinity", '[float("inf"), float("-inf")]', "tensor([ True, False])"),
    "isneginf": ("is negative infinity", '[float("inf"), float("-inf")]', "tensor([False,  True])"),
    "isreal": ("is real (a zero imaginary part; always for real dtypes)", "[1.0, 2.0]", "tensor([True, True])"),
}  # fmt: skip

# ------------------------------------------------------------------------------ casts
_CASTS = {
    "half": torch.float16,
    "float": torch.float32,
    "double": torch.float64,
    "bfloat16": torch.bfloat16,
    "int": torch.int32,
    "bool": torch.bool,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "uint64": torch.uint64,
    "complex32": torch.complex32,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}

# The quantized dtypes: torch has no plain cast to them (a quantized tensor needs a
# scale and a zero point), so these methods explain what to call instead.
_QUANTIZED = {
    "qint8": torch.qint8,
    "qint32": torch.qint32,
    "quint8": torch.quint8,
    "quint4x2": torch.quint4x2,
}

# ------------------------------------------------------------------------------ pairwise operations
# name: (the torch function, what it computes, takes ``default``, extra keyword or None,
#        example input, example argument, example output)
_PAIRWISE = {
    "mod": ("remainder", "the remainder of the division by ``other``, with its sign (Python's ``%``)", False, None, "[5.0, -1.0]", "3.0", "tensor([2., 2.])"),
    "rsub": ("rsub", "``other - alpha * leaf``", True, "alpha", "[1.0, 4.0]", "10.0", "tensor([9., 6.])"),
    "logical_and": ("logical_and", "the logical and, as booleans", True, None, "[0.0, 2.0]", "torch.tensor(True)", "tensor([False,  True])"),
    "bitwise_and": ("bitwise_and", "the bitwise and of integer or boolean leaves", True, None, "[5, 6]", "3", "tensor([1, 2])"),
}  # fmt: skip


def _tensor_leaves(td) -> list:
    return [v for v in td.values(True, True) if isinstance(v, torch.Tensor)]


def _unwrap(other):
    """A tensorclass operand acts through its tensordict."""
    return other._tensordict if getattr(type(other), "_is_tensorclass", False) else other


def _batch_dim(td, dim, what: str) -> int:
    """``dim`` as a non-negative batch dim of ``td``, or DimensionError (an IndexError)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        msg = f"{what}() takes an int batch dim, got {dim!r} ({type(dim).__name__})"
        raise DimTypeError(msg)
    ndim = td.batch_dims
    if not -ndim <= dim < ndim:
        msg = f"{what}(): dim {dim} is out of range for a tensordict with {ndim} batch dims {list(td.batch_size)}"
        raise DimensionError(msg)
    return dim + ndim if dim < 0 else dim


def _leaf_keys(td) -> set:
    return set(td.keys(True, True))


def _paired(td, other, what: str, default):
    """``(td, other)`` restricted or completed according to ``default`` (None: same keys)."""
    mine, theirs = _leaf_keys(td), _leaf_keys(other)
    if default is None:
        if mine != theirs:
            only_mine = sorted(map(str, mine - theirs))
            only_theirs = sorted(map(str, theirs - mine))
            msg = (
                f"cannot {what} tensordicts with different keys: only in the first {only_mine}, "
                f"only in the second {only_theirs}; pass default='intersection' or a fill value"
            )
            raise KeyMismatchError(msg)
        return td, other, NO_DEFAULT
    if isinstance(default, str) and default == "intersection":
        common = [k for k in td.keys(True, True) if k in theirs]
        return td.select(*common), other.select(*common), NO_DEFAULT
    return td, other, default


def _binary(td, fn, other, what: str, default=None):
    other = _unwrap(other)
    if is_tensor_collection(other):
        td, other, fill = _paired(td, other, what, default)
        return td._fast_apply(fn, other, default=fill)
    return td._fast_apply(lambda x: fn(x, other))


def _make_predicate(name: str):
    def method(self):
        return self._fast_apply(getattr(torch, name))

    what, data, out = _PREDICATES[name]
    method.__name__ = name
    method.__doc__ = f"""Returns a tensordict of boolean leaves telling where each element {what}.

        Each tensor leaf, nested ones included, is replaced by ``torch.{name}(leaf)``;
        non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Returns:
            A new tensordict with the same keys, batch size, names and device, with boolean
            leaves.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])
            >>> td.{name}()["a"]
            {out}
        """
    return method


def _make_cast(name: str, dtype: torch.dtype):
    def method(self, *, cast_filter: Callable | None = None):
        return self.type(dtype, cast_filter=cast_filter)

    method.__name__ = name
    method.__doc__ = f"""Returns the tensordict with its tensor leaves cast to ``{dtype}``.

        Non-tensor entries are kept. Leaves that already have this dtype are shared with
        this tensordict rather than copied; this tensordict is left unchanged.

        Keyword Args:
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)`` with the
                leaf's full key as a tuple; a leaf is cast only where it returns True, the
                others are kept. Defaults to None: every leaf is cast.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([1, 2])}}, [2])
            >>> td.{name}()["a"].dtype
            {dtype}
            >>> td.{name}(cast_filter=lambda key, leaf: key == ("b",))["a"].dtype
            torch.float32
        """
    return method


def _make_quantized(name: str, dtype: torch.dtype):
    def method(self, *, cast_filter: Callable | None = None):
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

    method.__name__ = name
    method.__doc__ = f"""Refuses to cast the tensor leaves to ``{dtype}``, saying what to call instead.

        A quantized tensor needs a scale and a zero point, which a cast cannot give, so
        torch (and so the well-known API) fails here; this method exists so that code
        calling it gets that explanation. Quantize with ``torch.quantize_per_tensor``
        through :meth:`apply`. A tensordict without leaves to cast is returned as a copy.

        Keyword Args:
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)``; only the
                leaves where it returns True would be cast. Defaults to None: every leaf.

        Returns:
            A copy of the tensordict, when no leaf is to be cast.

        Raises:
            RuntimeError: naming the first leaf to cast.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor([1.0, 2.0])}}, [2])
            >>> td.{name}()
            Traceback (most recent call last):
            ...
            RuntimeError: {name}(): cannot cast the leaf 'a' to {dtype}: ...
            >>> q = td.apply(lambda x: torch.quantize_per_tensor(x, 0.1, 0, {dtype}))
            >>> q["a"].dtype
            {dtype}
        """
    return method


def _make_pairwise(name: str):
    fn_name, what, takes_default, extra, data, arg, out = _PAIRWISE[name]
    fn = getattr(torch, fn_name)

    if extra == "alpha":

        def method(self, other, *, alpha: float | None = None, default=None):
            kwargs = {} if alpha is None else {"alpha": alpha}
            return _binary(self, lambda x, y: fn(x, y, **kwargs), other, name, default)

    elif takes_default:

        def method(self, other, *, default=None):
            return _binary(self, fn, other, name, default)

    else:

        def method(self, other):
            return _binary(self, fn, other, name)

    default_doc = (
        """
            default (str or number, optional): with a tensordict ``other`` whose leaf keys
                differ: None (the default) raises, ``"intersection"`` keeps the keys they
                share, and any other value stands in for the leaves ``other`` lacks."""
        if takes_default
        else ""
    )
    alpha_doc = (
        """
            alpha (number, optional): the multiplier of the leaf. Defaults to None (1)."""
        if extra
        else ""
    )
    keywords = f"\n        Keyword Args:{alpha_doc}{default_doc}\n" if takes_default else ""
    method.__name__ = name
    method.__doc__ = f"""Returns a tensordict of ``torch.{fn_name}(leaf, other)``: {what}.

        Non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Args:
            other (number, torch.Tensor or TensorDictBase): the second operand, combined with
                every leaf by torch's broadcasting rules; a tensordict or tensorclass gives
                each leaf its own leaf at the same key.
{keywords}
        Returns:
            A new tensordict with the same keys (or the shared ones), batch size and device.

        Raises:
            KeyMismatchError: if ``other`` is a tensordict with other leaf keys and no
                ``default`` (a ``KeyError``).
            TypeError: if torch refuses the operand (``logical_and`` takes no number).
            RuntimeError: if a leaf and its operand do not broadcast, or torch refuses their
                dtypes.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])
            >>> td.{name}({arg})["a"]
            {out}
        """
    return method


def _cumulative(td, name: str, dim: int, reduce: bool | None, return_indices: bool):
    d = _batch_dim(td, dim, name)
    fn = getattr(torch, name)
    result_type = getattr(torch.return_types, name)
    if reduce:
        return fn(torch.cat(_tensor_leaves(td), d), d)
    values = td._fast_apply(lambda x: fn(x, d).values)
    if not return_indices:
        return values
    indices = td._fast_apply(lambda x: fn(x, d).indices)
    return result_type((values, indices))


def _rebind_leaves(td, fn) -> None:
    """Replaces every tensor leaf of ``td`` by ``fn(leaf)``, level by level."""
    for key, value in list(td._items_level()):
        if isinstance(value, torch.Tensor):
            td._set_str(key, fn(value), inplace=False, validated=True)
        elif is_tensor_collection(value) and not isinstance(value, NonTensorData):
            _rebind_leaves(value, fn)


def _require_accelerator(what: str) -> None:
    if not torch.cuda.is_available():
        msg = (
            f"{what} needs a CUDA device, and none is available; on a machine without one, "
            "leave the tensors in ordinary memory"
        )
        raise AcceleratorUnavailableError(msg)


class ValuesMixin:
    """Predicates, casts, data pointers, device bookkeeping and more math over every leaf."""

    __slots__ = ()

    for _name in _PREDICATES:
        locals()[_name] = _make_predicate(_name)
    for _name, _dtype in _CASTS.items():
        locals()[_name] = _make_cast(_name, _dtype)
    for _name, _dtype in _QUANTIZED.items():
        locals()[_name] = _make_quantized(_name, _dtype)
    for _name in _PAIRWISE:
        locals()[_name] = _make_pairwise(_name)
    del _name, _dtype

    # -------------------------------------------------------------------------- dtypes
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
        dtypes = {leaf.dtype for leaf in _tensor_leaves(self)}
        return dtypes.pop() if len(dtypes) == 1 else None

    def type(self, dst_type, *, cast_filter: Callable | None = None):
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
            A new tensordict with the same keys, batch size, names and device.

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
            return self._fast_apply(lambda x: x.type(dst_type))

        def cast(key, leaf):
            key = key if isinstance(key, tuple) else (key,)
            return leaf.type(dst_type) if cast_filter(key, leaf) else leaf

        return self._fast_apply(cast, named=True, nested_keys=True)

    def as_tensor(self):
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
        if any(isinstance(leaf, MemoryMappedTensor) for leaf in _tensor_leaves(self)):
            msg = (
                "as_tensor() keeps the MemoryMappedTensor leaves of the tensordict as they are; "
                "from TensorDict 0.17 it will return them as plain torch.Tensor over the same "
                "memory (as_subclass(torch.Tensor)). Call that yourself to get them now."
            )
            warn(msg, FutureWarning)
        out = self._fast_apply(lambda x: x.as_tensor() if hasattr(x, "as_tensor") else x)
        return out.lock_() if self.is_locked else out

    @property
    def data(self):
        """A tensordict of the leaves' ``.data``: the same memory, detached from autograd.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> w = torch.ones(2, requires_grad=True)
            >>> td = TensorDict({"a": w * 2}, [2])
            >>> td["a"].requires_grad, td.data["a"].requires_grad
            (True, False)
        """
        return self._fast_apply(lambda x: x.data)

    def new_tensor(
        self,
        data,
        *,
        dtype: torch.dtype | None = None,
        device=NO_DEFAULT,
        requires_grad: bool = False,
        pin_memory: bool | None = None,
    ):
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
        data = _unwrap(data)

        def make(leaf, value):
            kwargs = {"dtype": leaf.dtype if dtype is None else dtype}
            kwargs["device"] = leaf.device if device is NO_DEFAULT else device
            if pin_memory:
                kwargs["pin_memory"] = True
            return leaf.new_tensor(value, requires_grad=requires_grad, **kwargs)

        if is_tensor_collection(data):
            missing = sorted(map(str, _leaf_keys(self) - _leaf_keys(data)))
            if missing:
                msg = f"new_tensor() got a tensordict without the keys {missing} of this one"
                raise KeyMismatchError(msg)
            source = data.select(*self.keys(True, True))
            return self._fast_apply(
                make, source, batch_size=data.batch_size, names=None, device=data.device
            )
        shape = torch.as_tensor(data).shape
        target = torch.device("cpu") if device is NO_DEFAULT else device
        return self._fast_apply(
            lambda leaf: make(leaf, data), batch_size=shape, names=None, device=target
        )

    # -------------------------------------------------------------------------- memory
    def data_ptr(self, *, storage: bool = False):
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
        if self._is_lazy:
            source = {str(i): m.data_ptr(storage=storage) for i, m in enumerate(self.tensordicts)}
            return self.tensordicts[0]._new_like(
                source, torch.Size(()), names=None, device=torch.device("cpu")
            )

        def pointer(leaf):
            value = leaf.untyped_storage().data_ptr() if storage else leaf.data_ptr()
            return torch.tensor(value, dtype=torch.int64)

        out = self._fast_apply(
            pointer, batch_size=torch.Size(()), names=None, device=torch.device("cpu")
        )
        return _tensors_only(out)

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
        leaves = _tensor_leaves(self)
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
        if self._is_lazy:
            return False
        return all(leaf.is_contiguous() for leaf in _tensor_leaves(self))

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

    def auto_device_(self):
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
        devices = {leaf.device for leaf in _tensor_leaves(self)}
        self._reset_device(devices.pop() if len(devices) == 1 else None)
        return self

    def clear_device_(self):
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

    def pin_memory(self, num_threads: int | None = None, inplace: bool = False):
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
        if _tensor_leaves(self):
            _require_accelerator("pin_memory()")
        return self._fast_apply(lambda x: x.pin_memory())

    def pin_memory_(self, num_threads: int = 0):
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
        if _tensor_leaves(self):
            _require_accelerator("pin_memory_()")
        _rebind_leaves(self, lambda x: x.pin_memory())
        return self

    def record_stream(self, stream):
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
        for leaf in _tensor_leaves(self):
            leaf.record_stream(stream)
        return self

    # -------------------------------------------------------------------------- math
    def addcmul(self, other1, other2, *, value: float | None = 1):
        """Returns ``leaf + value * other1 * other2`` for every leaf (``torch.addcmul``).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the first factor; a tensordict
                gives each leaf its own leaf at the same key.
            other2 (TensorDictBase, torch.Tensor or number): the second factor, likewise.

        Keyword Args:
            value (number, optional): the multiplier of the product. Defaults to 1.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> other = TensorDict({"a": torch.tensor([2.0, 4.0])}, [2])
            >>> td.addcmul(other, other, value=2)["a"]
            tensor([ 9., 34.])
        """
        return _ternary(self, torch.addcmul, other1, other2, value, "addcmul")

    def addcmul_(self, other1, other2, *, value: float | None = 1):
        """Writes ``leaf + value * other1 * other2`` into every leaf in place; returns the tensordict.

        Each leaf keeps its dtype and memory (a memory-mapped leaf is written in its file).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the first factor.
            other2 (TensorDictBase, torch.Tensor or number): the second factor.

        Keyword Args:
            value (number, optional): the multiplier of the product. Defaults to 1.

        Returns:
            This tensordict.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``);
                nothing is written then.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> td.addcmul_(torch.tensor(2.0), torch.tensor(3.0))["a"]
            tensor([7., 8.])
        """
        return _ternary_(self, torch.Tensor.addcmul_, other1, other2, value, "addcmul_")

    def addcdiv(self, other1, other2, value: float | None = 1):
        """Returns ``leaf + value * other1 / other2`` for every leaf (``torch.addcdiv``).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the numerator; a tensordict
                gives each leaf its own leaf at the same key.
            other2 (TensorDictBase, torch.Tensor or number): the denominator, likewise.
            value (number, optional): the multiplier of the quotient. Defaults to 1.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``).
            RuntimeError: if a leaf is an integer tensor (torch refuses integer division here).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> other = TensorDict({"a": torch.tensor([2.0, 4.0])}, [2])
            >>> td.addcdiv(other, other, value=2)["a"]
            tensor([3., 4.])
        """
        return _ternary(self, torch.addcdiv, other1, other2, value, "addcdiv")

    def addcdiv_(self, other1, other2, *, value: float | None = 1):
        """Writes ``leaf + value * other1 / other2`` into every leaf in place; returns the tensordict.

        Each leaf keeps its dtype and memory (a memory-mapped leaf is written in its file).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the numerator.
            other2 (TensorDictBase, torch.Tensor or number): the denominator.

        Keyword Args:
            value (number, optional): the multiplier of the quotient. Defaults to 1.

        Returns:
            This tensordict.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``);
                nothing is written then.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> td.addcdiv_(torch.tensor(3.0), torch.tensor(2.0))["a"]
            tensor([2.5000, 3.5000])
        """
        return _ternary_(self, torch.Tensor.addcdiv_, other1, other2, value, "addcdiv_")

    def softmax(self, dim: int, dtype: torch.dtype | None = None):
        """Returns the softmax of every leaf along the batch dim ``dim``.

        Non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim (not
                from a leaf's last dim).
            dtype (torch.dtype, optional): the dtype each leaf is cast to first, and of the
                result. Defaults to None (each leaf's own).

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            NotImplementedError: if a leaf is an integer tensor and no floating ``dtype`` is
                given (torch has no integer softmax).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([0.0, 0.0]), "b": torch.zeros(2, 3)}, [2])
            >>> td.softmax(-1)["a"], td.softmax(-1)["b"][0]
            (tensor([0.5000, 0.5000]), tensor([0.5000, 0.5000, 0.5000]))
        """
        d = _batch_dim(self, dim, "softmax")
        return _dense(self)._fast_apply(lambda x: torch.softmax(x, d, dtype=dtype))

    def cummax(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True):
        """Returns the running maximum of every leaf along the batch dim ``dim``, with indices.

        Non-tensor entries are left out of the result.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim.

        Keyword Args:
            reduce (bool, optional): concatenate all the tensor leaves along ``dim`` first
                and return ``torch.cummax`` of that one tensor (values and indices; the
                leaves must have the same number of dims). Defaults to None (off).
            return_indices (bool, optional): return the ``(values, indices)`` pair; with
                False, only the tensordict of values. Defaults to True.

        Returns:
            A ``torch.return_types.cummax`` pair of tensordicts (``.values``, ``.indices``),
            the values tensordict alone, or with ``reduce`` a pair of tensors.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            RuntimeError: with ``reduce``, if the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 3.0, 2.0])}, [3])
            >>> out = td.cummax(0)
            >>> out.values["a"], out.indices["a"]
            (tensor([1., 3., 3.]), tensor([0, 1, 1]))
        """
        return _cumulative(_tensors_only(_dense(self)), "cummax", dim, reduce, return_indices)

    def cummin(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True):
        """Returns the running minimum of every leaf along the batch dim ``dim``, with indices.

        It works as :meth:`cummax` does, with minima.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim.

        Keyword Args:
            reduce (bool, optional): concatenate all the tensor leaves along ``dim`` first
                and return ``torch.cummin`` of that one tensor. Defaults to None (off).
            return_indices (bool, optional): return the ``(values, indices)`` pair; with
                False, only the tensordict of values. Defaults to True.

        Returns:
            A ``torch.return_types.cummin`` pair of tensordicts (``.values``, ``.indices``),
            the values tensordict alone, or with ``reduce`` a pair of tensors.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            RuntimeError: with ``reduce``, if the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([2.0, 1.0, 3.0])}, [3])
            >>> out = td.cummin(0)
            >>> out.values["a"], out.indices["a"]
            (tensor([2., 1., 1.]), tensor([0, 1, 1]))
        """
        return _cumulative(_tensors_only(_dense(self)), "cummin", dim, reduce, return_indices)

    def quantile(
        self,
        q,
        dim=NO_DEFAULT,
        keepdim: bool = NO_DEFAULT,
        *,
        interpolation: str = "linear",
        reduce: bool | None = None,
        key_transform: Callable | None = None,
    ):
        """Returns the ``q``-quantiles of every leaf (``torch.quantile``).

        Without ``dim`` each leaf is reduced over all its elements into a tensordict with
        ``batch_size=[]``; with an int batch ``dim``, over that dim, the result keeping the
        other batch dims; with ``dim="feature"``, over each leaf's feature dims, the result
        keeping the batch size. A tensor ``q`` of several quantiles adds a leading dim to
        the result. Non-tensor entries are kept.

        Args:
            q (float or torch.Tensor): the quantile(s), in ``[0, 1]``.
            dim (int or "feature", optional): what to reduce; negative ints count from the
                last batch dim. Defaults to every element.
            keepdim (bool, optional): keep the reduced batch dim with size 1. Defaults to
                False.

        Keyword Args:
            interpolation (str, optional): as ``torch.quantile``: ``"linear"``, ``"lower"``,
                ``"higher"``, ``"midpoint"`` or ``"nearest"``. Defaults to ``"linear"``.
            reduce (bool, optional): compute the quantiles of all the tensor leaves together
                and return one tensor: flattened and concatenated without ``dim``,
                concatenated along ``dim`` with one (the leaves must have the same number of
                dims), or along the flattened feature dims with ``"feature"``. Defaults to
                None (off).
            key_transform (callable, optional): renames each result leaf: called with its
                key at its level, returns the new one. Defaults to None.

        Returns:
            A tensordict, or a tensor with ``reduce``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            RuntimeError: if a leaf is not a floating-point tensor, ``q`` is out of
                ``[0, 1]``, or with ``reduce`` the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1.0, 3.0, 2.0], [0.0, 5.0, 1.0]])}, [2, 3])
            >>> td.quantile(0.5, dim=1)["a"]
            tensor([2., 1.])
            >>> td.quantile(0.5, reduce=True)
            tensor(1.5000)
        """
        keepdim = False if keepdim is NO_DEFAULT else keepdim
        kwargs = {"interpolation": interpolation}
        src = _dense(self)
        batch = self.batch_size
        if dim is NO_DEFAULT or dim is None:
            if reduce:
                flat = torch.cat([leaf.reshape(-1) for leaf in _tensor_leaves(src)])
                return torch.quantile(flat, q, **kwargs)
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(x.reshape(-1), q, **kwargs), batch_size=extra, names=None
            )
        elif isinstance(dim, str) and dim == "feature":

            def features(x):
                return x.reshape(batch + (-1,))

            if reduce:
                flat = torch.cat([features(leaf) for leaf in _tensor_leaves(src)], -1)
                return torch.quantile(flat, q, dim=-1, **kwargs)
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(features(x), q, dim=-1, **kwargs),
                batch_size=extra + batch,
                names=None,
            )
        else:
            d = _batch_dim(src, dim, "quantile")
            if reduce:
                joined = torch.cat(_tensor_leaves(src), d)
                return torch.quantile(joined, q, dim=d, keepdim=keepdim, **kwargs)
            kept = batch[:d] + ((1,) if keepdim else ()) + batch[d + 1 :]
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(x, q, dim=d, keepdim=keepdim, **kwargs),
                batch_size=extra + torch.Size(kept),
                names=None,
            )
        if key_transform is not None:
            out = _renamed(out, key_transform)
        return out


def _dense(td):
    """``td``, or a lazy stack made dense: ops along a batch dim need the stacked leaves."""
    return td.contiguous() if td._is_lazy else td


def _non_tensor_keys(td, prefix: tuple = ()) -> list:
    keys = []
    for key, value in td._items_level():
        if isinstance(value, NonTensorData):
            keys.append(prefix + (key,))
        elif is_tensor_collection(value):
            keys.extend(_non_tensor_keys(value, prefix + (key,)))
    return keys


def _tensors_only(td):
    dropped = _non_tensor_keys(td)
    return td.exclude(*dropped) if dropped else td


def _renamed(td, key_transform):
    """``td`` with each leaf renamed by ``key_transform`` at its own level."""
    source = {}
    for key, value in td._items_level():
        if is_tensor_collection(value) and not isinstance(value, NonTensorData):
            source[key] = _renamed(value, key_transform)
        else:
            source[key_transform(key)] = value
    return td._new_like(source, td.batch_size, names=None, device=td.device)


def _operands(td, others, what: str) -> list:
    """The operands, tensorclasses unwrapped, tensordicts checked to have ``td``'s leaf keys."""
    out = []
    for other in others:
        other = _unwrap(other)
        if is_tensor_collection(other):
            _paired(td, other, what, None)
        out.append(other)
    return out


def _ternary(td, fn, other1, other2, value, what: str):
    a, b = _operands(td, (other1, other2), what)
    collections = [o for o in (a, b) if is_tensor_collection(o)]

    def compute(x, *leaves):
        it = iter(leaves)
        y = next(it) if is_tensor_collection(a) else _as_operand(a, x)
        z = next(it) if is_tensor_collection(b) else _as_operand(b, x)
        return fn(x, y, z, value=value)

    return td._fast_apply(compute, *collections)


def _ternary_(td, fn, other1, other2, value, what: str):
    a, b = _operands(td, (other1, other2), what)
    collections = [o for o in (a, b) if is_tensor_collection(o)]

    def write(x, *leaves):
        it = iter(leaves)
        y = next(it) if is_tensor_collection(a) else _as_operand(a, x)
        z = next(it) if is_tensor_collection(b) else _as_operand(b, x)
        return fn(x, y, z, value=value)  # the leaf itself: nothing is rebound

    td._fast_apply(write, *collections, inplace=True)
    return td


def _as_operand(value, leaf):
    """A number operand as a 0-dim tensor of the leaf's dtype and device (torch needs tensors)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(value, dtype=leaf.dtype, device=leaf.device)
