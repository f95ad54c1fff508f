"""``@tensorclass``: dataclass-like classes whose instances carry a tensordict.

A decorated class keeps its annotated fields in a :class:`TensorDict` (the
instance's ``_tensordict``): tensors, sub-tensordicts and other tensorclass
instances as they are, every other value (a string, a number with ``nocast``, a
dict, any object) as a :class:`NonTensorData` entry that reads back as the
Python value. A field set to ``None`` holds no entry. Every tensordict method
works on an instance and returns an instance of the class where it would return
a tensordict (indexing, ``torch.stack``, reshaping, ``to``, ``apply``,
``clone``, comparisons, ``memmap``, ...).

On disk a tensorclass is a folder holding ``meta.json`` with only ``"_type"``
(``str(cls)``, e.g. ``"<class 'mymodule.Frame'>"``) and its tensordict in the
sub-folder ``_tensordict/``. Decorating a class registers it under that string,
so that loading finds it without importing anything; a folder naming a class
that was never decorated in this process fails with an error naming the class.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import os
import types
import typing
import warnings
from collections.abc import Mapping

import torch

from tensordict import _tensorclass_builders as _builders
from tensordict import _tensorclass_options as _options
from tensordict._collection import NO_DEFAULT, TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._helpers import check_batch_args, expand_as_right
from tensordict._keys import NestedKey, _key_parts
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict._nontensor_stack import LinkedList, NonTensorStack
from tensordict._ops.classes import CLASSES
from tensordict._ops.distributed import TENSORCLASS_METHODS
from tensordict._ops.memmap import SHARED_WITH_TENSORCLASS, MemmapMixin
from tensordict._ops.printing import collection_repr
from tensordict._ops.torch_function import dispatch as _dispatch
from tensordict._options import GET_DEFAULT, capture_non_tensor_stack, list_to_stack
from tensordict._stack import cat as _td_cat
from tensordict._stack import stack as _td_stack
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import (
    ClassFlagError,
    ConversionInputError,
    MemmapFormatError,
    MemmapNotFoundError,
    ReservedFieldError,
    UnknownFieldError,
)
from tensordict.memmap import _archive, _io
from tensordict.memmap import format as fmt

# str(cls) -> the decorated class, for every tensorclass decorated in this process.
_REGISTRY: dict = {}


def is_tensorclass(obj) -> bool:
    """Returns True if ``obj`` (an instance or a class) is a ``@tensorclass``.

    Examples:
        >>> @tensorclass
        ... class Point:
        ...     xy: torch.Tensor
        >>> is_tensorclass(Point), is_tensorclass(Point(xy=torch.zeros(2)))
        (True, True)
        >>> is_tensorclass(TensorDict())
        False
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "_is_tensorclass", False) is True and hasattr(cls, "_tc_fields")


def _is_tc(value) -> bool:
    return hasattr(type(value), "_tc_fields")


def _unwrap(value):
    return value._tensordict if _is_tc(value) else value


def _is_key(index) -> bool:
    if type(index) is str:
        return True
    return type(index) is tuple and bool(index) and all(type(i) is str for i in index)


# ====================================================================== fields
class _Field:
    """The descriptor of one field: reads and writes the instance's tensordict entry."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default) -> None:
        self.name = name
        self.default = default

    def __get__(self, obj, owner=None):
        if obj is None:
            # Like a dataclass: the class attribute is the default, when there is one.
            if self.default is dataclasses.MISSING:
                msg = f"type object {owner.__name__!r} has no attribute {self.name!r}"
                raise AttributeError(msg)
            return self.default
        value = obj._tensordict._get_str(self.name, None)
        if isinstance(value, NonTensorDataBase):
            return value.data
        if getattr(type(value), "_is_non_tensor", False):
            return value._read_value()  # a stack of values reads as its linked list
        return value

    def __set__(self, obj, value) -> None:
        obj._set_field(self.name, value)


def _batch_dims(batch_size) -> int:
    if batch_size is None:
        return 0
    if isinstance(batch_size, int):
        return 1
    return len(batch_size)


def _unknown_field(cls, name: str, what: str) -> UnknownFieldError:
    msg = (
        f"{what} {name!r}: {cls.__name__} has no such field; its fields are "
        f"{list(cls._tc_fields)}. Declare it in the class body with an annotation "
        f"(e.g. '{name}: torch.Tensor = None')"
    )
    return UnknownFieldError(msg)


def _check_key(cls, key, what: str) -> None:
    first = key if type(key) is str else _key_parts(key)[0]
    if first not in cls._tc_field_set:
        raise _unknown_field(cls, first, what)


# ====================================================================== method forwarding
# Methods whose result is an entry (maybe a sub-tensordict), never a new instance.
# Properties whose tensordict value a tensorclass returns as an instance of its class.
_WRAPPED_PROPERTIES = frozenset({"data"})
_RAW_RESULT = frozenset({"pop", "setdefault", "get_non_tensor", "data_ptr"})

# Methods that add keys: key argument position (and keyword name), checked against the fields.
# The make_memmap* methods take any key, as in the well-known API: the entry is kept
# in the instance's tensordict, written to its folder and loaded back with it.
_KEY_ADDERS = {
    "setdefault": (0, "key"),
    "rename_key_": (1, "new_key"),
}

_OPERATORS = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
    "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
    "__floordiv__", "__mod__", "__pow__", "__rpow__", "__ipow__", "__matmul__",
    "__and__", "__or__", "__xor__", "__neg__", "__abs__", "__invert__",
)  # fmt: skip


def _forward(self, name: str, method):
    cls = type(self)
    adder = _KEY_ADDERS.get(name)

    def call(*args, **kwargs):
        if adder is not None:
            pos, kw = adder
            key = args[pos] if len(args) > pos else kwargs.get(kw)
            if key is not None:
                _check_key(cls, key, f"cannot add the key {key!r} with {name}():")
        args = tuple(_unwrap(a) for a in args)
        if kwargs:
            kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        result = method(*args, **kwargs)
        return result if name in _RAW_RESULT else self._wrap(result)

    call.__name__ = name
    call.__doc__ = method.__doc__
    return call


def _make_operator(name: str):
    def op(self, *args):
        result = getattr(self._tensordict, name)(*(_unwrap(a) for a in args))
        if result is NotImplemented:
            return NotImplemented
        return self._wrap(result)

    op.__name__ = name
    op.__doc__ = f"``{name}`` of the tensordict, as an instance of the class."
    return op


# ====================================================================== the methods every tensorclass gets
class _TensorClassMethods:
    """Holds the methods copied onto each decorated class (a class the user defines wins)."""

    _is_tensor_collection = True
    _is_tensorclass = True
    _is_lazy = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def _from_tensordict(cls, td):
        """Wraps ``td`` without copying or checking anything."""
        obj = object.__new__(cls)
        obj.__dict__["_tensordict"] = td
        return obj

    def _wrap(self, result):
        """The result of a tensordict method, as this class where it is a tensordict."""
        if result is self._tensordict:
            return self
        if isinstance(result, TensorDictBase):
            cls = type(self)
            keys = result._tensordict.keys() if type(result) is TensorDict else result._keys_level()
            if not cls._tc_field_set.issuperset(keys):
                # A key that is no field and that this instance did not hold already (the
                # make_memmap* methods may add such entries): e.g. map(fn) whose fn added it.
                own = self._tensordict._keys_level()
                extra = sorted(k for k in keys if k not in cls._tc_field_set and k not in own)
                if extra:
                    raise _unknown_field(cls, extra[0], "cannot hold the result's entry")
            return cls._from_tensordict(result)
        if type(result) in (tuple, list) and result and isinstance(result[0], TensorDictBase):
            return type(result)(self._wrap(r) for r in result)
        if isinstance(result, tuple) and hasattr(type(result), "n_fields"):  # torch.return_types
            return type(result)(tuple(self._wrap(r) for r in result))
        return result

    @classmethod
    def from_tensordict(cls, tensordict, non_tensordict: dict | None = None, safe: bool = True):
        """Returns an instance holding ``tensordict`` (shared, not copied).

        Args:
            tensordict (TensorDictBase): the entries; each top-level key must be a field.
            non_tensordict (dict, optional): more field values, set after wrapping.
            safe (bool, optional): accepted for compatibility.

        Raises:
            UnknownFieldError: if a key is not a field (a ``ValueError`` and ``TypeError``).

        Examples:
            >>> @tensorclass
            ... class Frame:
            ...     pixels: torch.Tensor
            >>> frame = Frame.from_tensordict(TensorDict(pixels=torch.zeros(2, 3), batch_size=[2]))
            >>> frame.pixels.shape
            torch.Size([2, 3])
        """
        if not isinstance(tensordict, TensorDictBase):
            msg = f"{cls.__name__}.from_tensordict() needs a tensordict, got {type(tensordict).__name__}"
            raise TypeError(msg)
        for key in tensordict.keys():
            if key not in cls._tc_field_set:
                raise _unknown_field(cls, key, "cannot wrap the tensordict entry")
        obj = cls._from_tensordict(tensordict)
        for name, value in (non_tensordict or {}).items():
            if name not in cls._tc_field_set:
                raise _unknown_field(cls, name, "cannot set")
            obj._set_field(name, value)
        return obj

    @classmethod
    def from_dict(
        cls,
        input_dict,
        *,
        auto_batch_size: bool | None = None,
        batch_size=None,
        device=None,
        batch_dims: int | None = None,
        names=None,
    ):
        """Builds an instance from a (nested) dict of field values.

        Fields missing from ``input_dict`` are ``None`` (their declared defaults are
        not used, as in the well-known API). Nested dicts become sub-tensordicts.

        Args:
            input_dict (dict): field name to value.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size from the leaves when
                ``batch_size`` is not given. Defaults to ``None`` (no: ``[]``).
            batch_size (sequence of int, optional): the batch size.
            device (torch.device, optional): the device.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this many dims.
            names (list of str, optional): the batch dimension names.

        Raises:
            UnknownFieldError: if a key is not a field.

        Examples:
            >>> @tensorclass
            ... class Frame:
            ...     pixels: torch.Tensor
            ...     label: torch.Tensor
            >>> Frame.from_dict({"pixels": torch.zeros(3, 2), "label": torch.zeros(3)}, batch_size=[3]).batch_size
            torch.Size([3])
        """
        if not isinstance(input_dict, Mapping):
            msg = f"{cls.__name__}.from_dict() needs a dict, got {type(input_dict).__name__}"
            raise TypeError(msg)
        for key in input_dict:
            if key not in cls._tc_field_set:
                raise _unknown_field(cls, key, "cannot set")
        source = {}
        dims = _batch_dims(batch_size)
        for key, value in input_dict.items():
            value = (
                value
                if isinstance(value, Mapping)
                else _options.stored_value(cls, key, value, dims)
            )
            if value is not None:
                source[key] = value
        td = TensorDict(source, batch_size=batch_size, device=device)
        if batch_size is None and (auto_batch_size or batch_dims is not None):
            td.auto_batch_size_(batch_dims)
        if names is not None:
            td.names = names
        return cls._from_tensordict(td)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Returns a copy of the data as a plain tensordict, plain at every depth.

        Keyword Args:
            retain_none (bool, optional): write the fields set to ``None`` as ``None`` entries.
                Defaults to ``None`` (no: they are left out).

        Returns:
            A new :class:`TensorDict`.

        Examples:
            >>> @tensorclass
            ... class Frame:
            ...     pixels: torch.Tensor
            ...     label: torch.Tensor = None
            >>> frame = Frame(pixels=torch.zeros(2), batch_size=[2])
            >>> list(frame.to_tensordict().keys()), list(frame.to_tensordict(retain_none=True).keys())
            (['pixels'], ['pixels', 'label'])
        """
        out = self._tensordict.to_tensordict(retain_none=retain_none)
        if retain_none:
            for name in type(self)._tc_fields:
                if out._get_str(name, None) is None and name not in out._keys_level():
                    out._set_str(name, None, inplace=False, validated=False)
        return out

    def pack(self, dim: int = -1, *, layout=None):
        """Packs every leaf into one tensor of features; the layout rebuilds this class.

        As :meth:`TensorDict.pack <tensordict.TensorDictBase.pack>`, with the layout's
        ``cls`` set to this class, so that :meth:`PackLayout.unpack` gives an instance.

        Args:
            dim (int, optional): where the packed dim goes. Defaults to -1.

        Keyword Args:
            layout (PackLayout, optional): pack into this layout's column order.

        Returns:
            A tuple ``(packed tensor, PackLayout)``.

        Raises:
            TypeError: if an entry is not a tensor, or the dtypes or devices differ.
            ValueError: if the leaves do not match ``layout``.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> flat, layout = Point(x=torch.ones(3, 2), batch_size=[3]).pack()
            >>> type(layout.unpack(flat)).__name__, flat.shape
            ('Point', torch.Size([3, 2]))
        """
        flat, built = self._tensordict.pack(dim, layout=layout)
        if layout is None:
            built = dataclasses.replace(built, cls=type(self))
        return flat, built

    def from_dict_instance(
        self, input_dict, *, auto_batch_size=None, batch_size=None, device=None, batch_dims=None
    ):
        """Builds an instance of this instance's class from a dict, its nested levels typed as here.

        Like :meth:`from_dict`, but each nested dict under a key that holds a tensorclass
        or tensordict in this instance becomes an instance of that class.

        Args:
            input_dict (dict): field name to value; nested dicts for nested fields.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size from the leaves.
            batch_size (sequence of int, optional): the batch size.
            device (torch.device, optional): the device.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this many dims.

        Returns:
            A new instance of this instance's class.

        Raises:
            UnknownFieldError: (a ``ValueError``) if a key is not a field.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> p = Point(x=torch.zeros(3), batch_size=[3])
            >>> p.from_dict_instance({"x": torch.ones(3)}, batch_size=[3]).x
            tensor([1., 1., 1.])
        """
        built = self._tensordict.from_dict_instance(
            input_dict,
            auto_batch_size=auto_batch_size,
            batch_size=batch_size,
            device=device,
            batch_dims=batch_dims,
        )
        obj = _builders.as_class(type(self), built, "from_dict_instance")
        for field in dataclasses.fields(type(self)):
            if field.name in input_dict:
                continue  # a field left out takes its declared default
            if field.default_factory is not dataclasses.MISSING:
                obj._set_field(field.name, field.default_factory())
            elif field.default is not dataclasses.MISSING and field.default is not None:
                obj._set_field(field.name, field.default)
        return obj

    @classmethod
    def fields(cls) -> tuple:
        """The class's fields, as ``dataclasses.fields`` gives them.

        Returns:
            A tuple of :class:`dataclasses.Field`, in declaration order.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            ...     tag: str = "a"
            >>> [f.name for f in Point.fields()]
            ['x', 'tag']
        """
        return dataclasses.fields(cls)

    def extend(self, tensordict) -> None:
        """Adds members to the lazy stack this instance holds (deprecated).

        Use :func:`tensordict.lazy_stack` or :func:`torch.cat` to build a new instance
        instead; this method warns and remains for code written for the well-known API.

        Args:
            tensordict (sequence of instances or tensordicts, or one of them): the new
                members (a single one is split along its first batch dim).

        Raises:
            TypeError: if the instance does not hold a lazy stack.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> p = Point(x=torch.zeros(2), batch_size=[2])
            >>> stack = lazy_stack([p, p])
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore", DeprecationWarning)
            ...     stack.extend([p])
            >>> stack.batch_size
            torch.Size([3, 2])
        """
        warnings.warn(
            "extend() on a tensorclass is deprecated: build a new instance with "
            "tensordict.lazy_stack or torch.cat",
            DeprecationWarning,
            stacklevel=2,
        )
        inner = self._tensordict
        if not getattr(type(inner), "_is_lazy", False):
            msg = (
                f"extend() needs a {type(self).__name__} over a lazy stack, this one holds a "
                f"{type(inner).__name__}; use tensordict.lazy_stack or torch.cat"
            )
            raise TypeError(msg)
        if is_tensor_collection(tensordict):
            inner.extend(_unwrap(tensordict))
        else:
            inner.extend([_unwrap(m) for m in tensordict])

    @classmethod
    def from_list(cls, input, **kwargs):
        """Stacks a list of dicts of field values (or instances) into one instance, on a new dim 0.

        Args:
            input (list): dicts of field values, or instances of the class.
            **kwargs: as for :meth:`TensorDict.from_list` (``batch_size``, ``lazy``, ...).

        Returns:
            An instance whose first batch dim is the length of the list.

        Raises:
            UnknownFieldError: if a key is not a field.

        Examples:
            >>> @tensorclass
            ... class Frame:
            ...     pixels: torch.Tensor
            >>> Frame.from_list([{"pixels": torch.zeros(3)}, {"pixels": torch.ones(3)}]).batch_size
            torch.Size([2])
        """
        items = [_unwrap(item) for item in input] if isinstance(input, (list, tuple)) else input
        return cls.from_tensordict(TensorDict.from_list(items, **kwargs))

    # ------------------------------------------------------------------ attributes
    def _set_field(self, name: str, value) -> None:
        td = self._tensordict
        value = _options.stored_value(type(self), name, value, td.batch_dims)
        if value is None:
            if td._get_str(name, None) is not None:
                td._del_str(name)
            return
        td._set_str(name, value, inplace=False, validated=False)

    def __setattr__(self, name: str, value) -> None:
        cls = type(self)
        if cls._tc_frozen:
            # As a frozen dataclass: no attribute at all can be assigned after __init__.
            msg = f"cannot assign to field {name!r}: {cls.__name__} is frozen"
            raise dataclasses.FrozenInstanceError(msg)
        if name in cls._tc_field_set:
            self._set_field(name, value)
        elif name.startswith("_") or hasattr(cls, name):
            object.__setattr__(self, name, value)
        else:
            raise _unknown_field(cls, name, "cannot set the attribute")

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: forward public tensordict attributes.
        if name.startswith("_"):
            msg = f"{type(self).__name__!r} object has no attribute {name!r}"
            raise AttributeError(msg)
        td = self.__dict__.get("_tensordict")
        try:
            attr = getattr(td, name)
        except AttributeError:
            msg = (
                f"{type(self).__name__!r} object has no attribute or field {name!r}; its fields are "
                f"{list(type(self)._tc_fields)}"
            )
            raise AttributeError(msg) from None
        if callable(attr):
            return _forward(self, name, attr)
        return self._wrap(attr) if name in _WRAPPED_PROPERTIES else attr

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | {n for n in dir(TensorDict) if n[0] != "_"})

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the instance's tensordict (settable)."""
        return self._tensordict.batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        self._tensordict.batch_size = value

    @property
    def shape(self) -> torch.Size:
        """The batch size."""
        return self._tensordict.batch_size

    @property
    def device(self):
        """The device of the instance's tensordict, or ``None``."""
        return self._tensordict.device

    @property
    def names(self):
        """The names of the batch dimensions (settable)."""
        return self._tensordict.names

    @names.setter
    def names(self, value) -> None:
        self._tensordict.names = value

    @property
    def is_locked(self) -> bool:
        """True when the instance's tensordict is locked."""
        return self._tensordict.is_locked

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions."""
        return self._tensordict.batch_dims

    ndim = batch_dims

    def get(self, key, default=GET_DEFAULT):
        """Returns the value at ``key`` (a field, or a nested key), ``default`` when missing.

        A non-tensor field reads back as its Python value.
        """
        value = self._tensordict.get(key, default)
        return value.data if isinstance(value, NonTensorDataBase) else value

    def set(self, key, value, inplace: bool = False, **kwargs):
        """Sets a field (or a nested key under a field) and returns the instance.

        Raises:
            UnknownFieldError: if ``key`` (its first part) is not a field.
            RuntimeError: if a tensor's leading dims do not match the batch size.
        """
        cls = type(self)
        _check_key(cls, key, "cannot set")
        if type(key) is str and not inplace:
            self._set_field(key, value)  # a frozen instance's tensordict is locked: LockedError
        else:
            name = key if type(key) is str else None
            value = _unwrap(value)
            if name is not None:
                value = _options.stored_value(cls, name, value, self._tensordict.batch_dims)
            self._tensordict.set(key, value, inplace=inplace, **kwargs)
        return self

    def update(self, input_dict_or_td, clone: bool = False, inplace: bool = False, **kwargs):
        """Writes the entries of a dict, tensordict or instance into this one and returns it.

        Raises:
            UnknownFieldError: if a top-level key is not a field.
        """
        source = _unwrap(input_dict_or_td)
        for key in source.keys():
            _check_key(type(self), key, "cannot update")
        self._tensordict.update(source, clone=clone, inplace=inplace, **kwargs)
        return self

    # ------------------------------------------------------------------ container protocol
    def __getitem__(self, index):
        if _is_key(index):
            msg = (
                f"{type(self).__name__} is indexed along its batch dimensions; read the field "
                f"{index!r} as an attribute or with get({index!r})"
            )
            raise ValueError(msg)
        return type(self)._from_tensordict(self._tensordict[index])

    def __setitem__(self, index, value) -> None:
        if _is_key(index):
            msg = (
                f"{type(self).__name__} is indexed along its batch dimensions; set the field "
                f"{index!r} as an attribute or with set({index!r}, value)"
            )
            raise ValueError(msg)
        self._tensordict[index] = _unwrap(value)

    def __len__(self) -> int:
        return len(self._tensordict)

    def __iter__(self):
        wrap = type(self)._from_tensordict
        return map(wrap, iter(self._tensordict))

    def __contains__(self, key) -> bool:
        return key in self._tensordict

    def __bool__(self) -> bool:
        msg = (
            f"the truth value of a {type(self).__name__} is ambiguous: use tc.all(), tc.any() or "
            "tc.is_empty()"
        )
        raise RuntimeError(msg)

    __hash__ = object.__hash__

    def __copy__(self):
        return type(self)._from_tensordict(copy.copy(self._tensordict))

    def __deepcopy__(self, memo):
        return type(self)._from_tensordict(self._tensordict.clone())

    def __repr__(self) -> str:
        return collection_repr(self)

    def _repr_items(self) -> list:
        # Every declared field, None when unset, then the keys that are not fields.
        td = self._tensordict
        fields = type(self)._tc_fields
        items = [(name, td._get_str(name, None)) for name in fields]
        return items + [(k, v) for k, v in td._items_level() if k not in fields]

    def _repr_detail_extra(self) -> dict:
        return {}

    # ------------------------------------------------------------------ torch functions
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, types, args, kwargs or {})

    @classmethod
    def _members(cls, items, what: str) -> list:
        items = list(items)
        for i, item in enumerate(items):
            if type(item) is not type(items[0]):
                msg = (
                    f"cannot {what} a {type(items[0]).__name__} with a {type(item).__name__} "
                    f"(item {i}); every item must be an instance of the same class"
                )
                raise TypeError(msg)
        return [item._tensordict for item in items]

    @classmethod
    def _stack_members(cls, items, dim: int = 0, *, out=None):
        """``torch.stack`` of instances: their tensordicts stacked, as the class."""
        tds = cls._members(items, "stack")
        result = _td_stack(tds, dim, out=None if out is None else _unwrap(out))
        return out if out is not None else type(items[0])._from_tensordict(result)

    @classmethod
    def _cat_members(cls, items, dim: int = 0, *, out=None):
        """``torch.cat`` of instances: their tensordicts concatenated, as the class."""
        tds = cls._members(items, "concatenate")
        result = _td_cat(tds, dim, out=None if out is None else _unwrap(out))
        return out if out is not None else type(items[0])._from_tensordict(result)

    # ------------------------------------------------------------------ tensordict internals
    def _fast_apply(self, fn, *others, **kwargs):
        td = self._tensordict
        result = td._fast_apply(fn, *(_unwrap(o) for o in others), **kwargs)
        if result is None or result is td:
            return self
        return type(self)._from_tensordict(result)

    def _leafwise_operand(self):
        # As the operand of a tensordict's leafwise operation (``td + tc``), its tensordict.
        return self._tensordict

    def _dict_entry(self, convert_tensors: bool) -> dict:
        # What ``to_dict`` of the tensordict holding this instance gives for it.
        return self.to_dict(convert_tensors=convert_tensors)

    def _numpy_entry(self) -> dict:
        # What ``numpy()`` of the tensordict holding this instance gives for it.
        return self.detach().cpu().numpy()

    def _propagate_lock(self, locked: bool) -> None:
        self._tensordict._propagate_lock(locked)

    @classmethod
    def from_consolidated(cls, filename):
        """Reads an instance from a file written by ``consolidate(filename=...)``.

        The file's tensordict (its class must be defined) is returned as an instance
        of this class, consolidated; see :meth:`TensorDict.from_consolidated
        <tensordict.TensorDictBase.from_consolidated>`.

        Args:
            filename (str or Path): the file.

        Returns:
            An instance of the class, sharing the file's copy-on-write memory map.

        Raises:
            FileNotFoundError: if the file does not exist.
            ConsolidatedFormatError: if it is not a consolidated file (a ``RuntimeError``).

        Examples:
            >>> import os, tempfile
            >>> @tensorclass
            ... class Point:
            ...     xy: torch.Tensor
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     path = os.path.join(folder, "p.bin")
            ...     _ = Point(xy=torch.ones(2, 2), batch_size=[2]).consolidate(filename=path)
            ...     print(Point.from_consolidated(path).xy)
            tensor([[1., 1.],
                    [1., 1.]])
        """
        loaded = TensorDict.from_consolidated(filename)
        return loaded if isinstance(loaded, cls) else cls._from_tensordict(loaded)

    # ------------------------------------------------------------------ memory mapping
    # The public memmap methods are the base's (copied below the class); these are
    # the hooks they and the storage layer call.
    @property
    def _mm(self):
        return self._tensordict._mm

    def _tensordict_of(self):
        return self._tensordict

    def _memmap_folder(self) -> str | None:
        """The folder this instance was memory-mapped to or loaded from, or ``None``."""
        level = self._mm
        if level is None or level.path is None:
            return None
        head, tail = os.path.split(level.path)
        return head if tail == fmt.TENSORCLASS_DATA else None

    @classmethod
    def _memmap_record_type(cls) -> str:
        return cls.__name__

    @classmethod
    def _memmap_load_as(cls, folder: str, meta: dict, stat, options):
        """Loads a tensorclass folder (whatever class it names) or a TensorDict folder as ``cls``."""
        if fmt.level_kind(folder, meta) == fmt.KIND_TENSORCLASS:
            return _load_as(cls, folder, meta, stat, options)
        loaded = _io.load_folder(folder, meta, stat, options)
        if _is_tc(loaded):
            loaded = loaded._tensordict
        if not isinstance(loaded, TensorDictBase):
            msg = f"cannot load {folder!r} as {cls.__name__}: it holds a {type(loaded).__name__}, not a tensordict"
            raise MemmapFormatError(msg)
        return cls.from_tensordict(loaded)

    def _memmap_load_into(self, loaded) -> None:
        self.__dict__["_tensordict"] = loaded._tensordict

    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        inner = None if folder is None else os.path.join(folder, fmt.TENSORCLASS_DATA)
        self._tensordict._memmap_plan(inner, plan, robust_key, existsok, like)
        plan.folders.append((folder, self))

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        inner = None if folder is None else os.path.join(folder, fmt.TENSORCLASS_DATA)
        td = self._tensordict._memmap_rebuild(inner, replacement, inplace, robust_key)
        if inplace:
            self.__dict__["_tensordict"] = td
            return self
        return type(self)._from_tensordict(td)

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        inner = os.path.join(folder, fmt.TENSORCLASS_DATA)
        self._tensordict._memmap_write_meta(inner, robust_key)
        fmt.write_meta_dict(folder, {"_type": str(type(self))})

    def _memmap_refresh(self, options) -> None:
        self._tensordict._memmap_refresh(options)

    def _memmap_missing(self, robust_key) -> None:
        self._tensordict._memmap_missing(robust_key)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        if meta.get("_type") != str(type(self)) or self._memmap_folder() is None:
            return False
        self._tensordict._memmap_refresh(options)
        return True


for _name in SHARED_WITH_TENSORCLASS:
    setattr(_TensorClassMethods, _name, vars(MemmapMixin)[_name])
for _name, _method in TENSORCLASS_METHODS.items():  # these carry the class to the other ranks
    setattr(_TensorClassMethods, _name, _method)
del _name, _method


# ====================================================================== class-level builders and forwarders
_builders.install(_TensorClassMethods, _forward, _unwrap, _WRAPPED_PROPERTIES)


# ====================================================================== loading
def _load_as(cls, folder: str, meta: dict, stat, options):
    """Loads the tensorclass folder ``folder`` as an instance of ``cls``."""
    inner_folder = fmt.child_path(folder, fmt.TENSORCLASS_DATA)
    try:
        inner = _io.load_child(inner_folder, options)
    except FileNotFoundError as err:
        msg = (
            f"cannot load {folder!r} as {cls.__name__}: a tensorclass folder holds its data in "
            f"{fmt.TENSORCLASS_DATA}/, which is missing or has no meta.json"
        )
        raise MemmapNotFoundError(msg) from err
    return _wrap_loaded(cls, inner_folder, inner)


def _wrap_loaded(cls, inner_folder: str, inner):
    """The instance of ``cls`` over the tensordict loaded from ``inner_folder``, checked."""
    if not isinstance(inner, TensorDictBase):
        msg = f"{inner_folder!r} must hold a tensordict, got a {type(inner).__name__}"
        raise MemmapFormatError(msg)
    return cls._from_tensordict(inner)


# ====================================================================== the decorator
def _reserved_names() -> frozenset:
    public = {n for n in dir(TensorDict) if not n.startswith("_")}
    public |= {n for n in vars(_TensorClassMethods) if not n.startswith("_")}
    # ``data`` is a common field name, and the well-known API lets a field take it.
    return frozenset(public - _FIELD_NAMES_ALLOWED)


_FIELD_NAMES_ALLOWED = frozenset({"data"})
_RESERVED = _reserved_names()
_MANDATORY = frozenset(
    {"__init__", "__setattr__", "__getattr__", "_is_tensorclass", "_is_tensor_collection"}
)
_CLASS_METADATA = frozenset(
    {"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__", "__firstlineno__",
     "__static_attributes__", "__annotations__"}
)  # fmt: skip


def _user_defined(cls, name: str) -> bool:
    """True when a class of ``cls``'s MRO (not ``object``) defines ``name`` itself, not copied by us."""
    ours = vars(_TensorClassMethods).get(name)
    for klass in cls.__mro__[:-1]:
        if name in vars(klass):
            value = vars(klass)[name]
            return value is not ours and getattr(value, "_tc_generated", False) is not True
    return False


_INIT_OPTIONS = ("batch_size", "device", "names")


def _make_init(cls, fields: list):
    init_fields = [f for f in fields if f.init]
    positional = [f.name for f in init_fields if not f.kw_only]
    required = [f.name for f in init_fields if _is_required(f)]
    field_set = frozenset(f.name for f in init_fields)
    n_pos = len(positional)
    # With shadow=True a field may be named batch_size, device or names: it takes the keyword.
    options = tuple(n for n in _INIT_OPTIONS if n not in field_set)

    def __init__(self, *args, **kwargs):  # noqa: N807
        if len(args) > n_pos:
            msg = (
                f"{cls.__name__}.__init__() takes {n_pos + 1} positional arguments but "
                f"{len(args) + 1} were given (batch_size, device and names are keyword-only)"
            )
            raise TypeError(msg)
        batch_size, device, names = (
            kwargs.pop(n, None) if n in options else None for n in _INIT_OPTIONS
        )
        values = dict(zip(positional, args))
        for key, value in kwargs.items():
            if key not in field_set:
                raise _unknown_field(
                    cls, key, f"{cls.__name__}.__init__() got the keyword argument"
                )
            if key in values:
                msg = f"{cls.__name__}.__init__() got multiple values for argument {key!r}"
                raise TypeError(msg)
            values[key] = value
        missing = [name for name in required if name not in values]
        if missing:
            listed = ", ".join(repr(m) for m in missing)
            msg = f"{cls.__name__}.__init__() missing {len(missing)} required argument(s): {listed}"
            raise TypeError(msg)
        source = {}
        dims = _batch_dims(batch_size)
        for field in fields:
            if field.name in values:
                value = values[field.name]
            elif field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            elif field.default is not dataclasses.MISSING:
                value = field.default
            else:
                value = None
            value = _options.stored_value(cls, field.name, value, dims)
            if value is not None:
                source[field.name] = value
        td = TensorDict(source, batch_size=batch_size, device=device, names=names)
        self.__dict__["_tensordict"] = td
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()
        if type(self)._tc_frozen:
            td.lock_()

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for field in init_fields:
        kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if field.name in positional
            else inspect.Parameter.KEYWORD_ONLY
        )
        default = inspect.Parameter.empty if _is_required(field) else _default_of(field)
        params.append(inspect.Parameter(field.name, kind, default=default))
    for extra in options:
        params.append(inspect.Parameter(extra, inspect.Parameter.KEYWORD_ONLY, default=None))
    params.sort(key=lambda p: p.kind)  # keyword-only after positional, order kept otherwise
    __init__.__signature__ = inspect.Signature(params)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = f"Builds a {cls.__name__} from its fields; see the class docstring."
    __init__._tc_generated = True
    return __init__


def _is_required(field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _default_of(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory


def tensorclass(
    cls=None,
    /,
    *,
    autocast: bool = False,
    frozen: bool = False,
    nocast: bool = False,
    shadow: bool = False,
    tensor_only: bool = False,
    skip_post_init_on_rebuild: bool = False,
    kw_only: bool = False,
):
    """Turns an annotated class into a tensorclass: a dataclass whose data lives in a tensordict.

    Each annotated attribute is a field (``ClassVar`` and non-annotated class
    attributes stay plain class attributes). An instance is built with its fields
    (positionally or by name) and the keyword-only ``batch_size``, ``device`` and
    ``names``; a field without a default is required, one with a default (or a
    ``default_factory``) may be left out, and a field set to ``None`` holds no
    entry. Tensors must start with the batch size. Non-tensor values (strings,
    dicts, any object) are stored as :class:`NonTensorData` and read back as the
    value. Every :class:`TensorDict` method is available on an instance, and
    returns an instance of the class where it would return a tensordict.
    Subclassing :class:`TensorClass` does the same, with the flags as class
    keywords; a decorated class does not inherit from :class:`TensorCollection`.

    The class is registered under ``str(cls)`` so that ``TensorDict.load_memmap``
    recognises its folders; ``Cls.load_memmap`` loads a folder as ``Cls`` directly.

    Args:
        cls (type): the class to decorate (omit it to pass options:
            ``@tensorclass(frozen=True)``).

    Keyword Args:
        autocast (bool, optional): cast each value to the annotation of its field
            when that is a class (``int``, ``str``, ``torch.Tensor``, a tensordict or
            tensorclass type, ...). Defaults to False.
        frozen (bool, optional): no attribute can be assigned after ``__init__``
            (``dataclasses.FrozenInstanceError``) and the tensordict is locked.
            Defaults to False.
        nocast (bool, optional): keep Python numbers and numpy arrays as they are
            (non-tensor values) instead of converting them to tensors. Defaults to False.
        shadow (bool, optional): allow fields named like a tensordict method or
            attribute, ``batch_size``, ``device`` and ``names`` included (the field
            hides it). Defaults to False.
        tensor_only (bool, optional): every field must be annotated with a tensor
            type, a tensor collection type or an optional of these. Defaults to False.
        skip_post_init_on_rebuild (bool, optional): accepted for compatibility:
            ``__post_init__`` never runs when an instance is made from another one
            (indexing, ``clone``, ...). Defaults to False.
        kw_only (bool, optional): every field is keyword-only. Defaults to False.

    Returns:
        The class itself, modified in place.

    Raises:
        ReservedFieldError: if a field is named like a tensordict attribute and
            ``shadow`` is False (an ``AttributeError``).
        ClassFlagError: if two of ``autocast``, ``nocast`` and ``tensor_only`` are
            set, or a ``tensor_only`` field has another annotation (a ``TypeError``).

    Examples:
        >>> @tensorclass
        ... class Frame:
        ...     pixels: torch.Tensor
        ...     label: torch.Tensor
        ...     source: str = "camera"
        >>> frame = Frame(pixels=torch.zeros(4, 2, 2), label=torch.arange(4), batch_size=[4])
        >>> frame[1:3].label
        tensor([1, 2])
        >>> torch.stack([frame, frame]).batch_size
        torch.Size([2, 4])
        >>> frame.source
        'camera'
        >>> @tensorclass(autocast=True)
        ... class Step:
        ...     count: int
        >>> Step(count=torch.tensor(3)).count
        3
    """
    options = {
        "autocast": autocast,
        "frozen": frozen,
        "nocast": nocast,
        "shadow": shadow,
        "tensor_only": tensor_only,
        "skip_post_init_on_rebuild": skip_post_init_on_rebuild,
        "kw_only": kw_only,
    }
    if cls is None:
        return functools.partial(_decorate, **options)
    return _decorate(cls, **options)


def _hide_inherited_members(cls) -> None:
    """Keeps dataclass from taking an inherited tensorclass member as a field's default.

    With ``shadow``, a field of a subclass may be named like a member that the
    parent tensorclass got from us (``batch_size``, ...); dataclass would read that
    member as the field's default.
    """
    ours = {id(v) for v in vars(_TensorClassMethods).values()}
    for name in cls.__dict__.get("__annotations__", {}):
        if name not in cls.__dict__ and id(inspect.getattr_static(cls, name, None)) in ours:
            setattr(cls, name, dataclasses.MISSING)


def _decorate(
    cls,
    *,
    autocast: bool,
    frozen: bool,
    nocast: bool,
    shadow: bool,
    tensor_only: bool,
    skip_post_init_on_rebuild: bool,
    kw_only: bool,
):
    if not isinstance(cls, type):
        msg = f"@tensorclass decorates a class, got {type(cls).__name__}"
        raise TypeError(msg)
    flags = {"autocast": autocast, "nocast": nocast, "tensor_only": tensor_only}
    _options.check_flags(cls.__name__, flags)
    if shadow:
        _hide_inherited_members(cls)
    cls = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, kw_only=kw_only, frozen=frozen
    )
    fields = dataclasses.fields(cls)
    for field in fields:
        if field.name == "_tensordict":
            msg = f"the field name {field.name!r} of {cls.__name__} is used by every tensorclass"
            raise ReservedFieldError(msg)
        if field.name in _RESERVED and not shadow:
            msg = (
                f"the field {field.name!r} of {cls.__name__} is named like a tensordict "
                "attribute; rename it, or pass shadow=True (@tensorclass(shadow=True) or "
                "TensorClass['shadow']) to let the field hide it"
            )
            raise ReservedFieldError(msg)
    installed = set()
    for name, value in vars(_TensorClassMethods).items():
        if name in _CLASS_METADATA:
            continue
        if name in _MANDATORY or not _user_defined(cls, name):
            setattr(cls, name, value)
            installed.add(name)
    # the names the class body did not define: annotations never resolve to them
    cls._tc_installed = frozenset(installed)
    for name in _OPERATORS:
        method = getattr(TensorDict, name, None)
        if method is None or method is getattr(object, name, None):
            continue
        if not _user_defined(cls, name):
            op = _make_operator(name)
            op._tc_generated = True
            setattr(cls, name, op)
    for field in dataclasses.fields(cls):
        setattr(cls, field.name, _Field(field.name, field.default))
    cls.__init__ = _make_init(cls, fields)
    cls._tc_fields = tuple(f.name for f in dataclasses.fields(cls))
    cls._tc_field_set = frozenset(cls._tc_fields)
    cls._tc_autocast = autocast
    cls._tc_frozen = frozen
    cls._tc_nocast = nocast
    cls._tc_shadow = shadow
    cls._tc_tensor_only = tensor_only
    cls._tc_skip_post_init_on_rebuild = skip_post_init_on_rebuild
    if tensor_only:
        _options.check_tensor_only(cls)
    key = str(cls)
    _REGISTRY[key] = cls
    _io.LOADERS[key] = functools.partial(_load_as, cls)
    CLASSES[key] = cls
    _archive.BUILDERS[key] = functools.partial(_wrap_loaded, cls)
    return cls


# ====================================================================== the subclassing form
class _TensorClassMeta(type):
    """Makes every subclass of :class:`TensorClass` a tensorclass, with its flags as class keywords.

    A flag left out (``None``) is inherited from the base class. ``Cls[flags]`` is
    a new subclass of ``Cls`` with those flags set.
    """

    def __new__(
        mcs,
        name,
        bases,
        namespace,
        *,
        autocast=None,
        frozen=None,
        nocast=None,
        shadow=None,
        tensor_only=None,
        skip_post_init_on_rebuild=None,
        kw_only: bool = False,
        **kwargs,
    ):
        if kwargs and all("__init_subclass__" not in vars(b) for b in _mro_of(bases)):
            msg = (
                f"class {name}: unknown class keyword(s) {sorted(kwargs)}; a TensorClass "
                f"takes the flags {list(_options.FLAGS)} and kw_only"
            )
            raise ClassFlagError(msg)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if namespace.get("_tc_root", False):
            return cls
        given = {
            "autocast": autocast,
            "frozen": frozen,
            "nocast": nocast,
            "shadow": shadow,
            "tensor_only": tensor_only,
            "skip_post_init_on_rebuild": skip_post_init_on_rebuild,
        }
        flags = {
            flag: bool(getattr(cls, f"_tc_{flag}", False) if value is None else value)
            for flag, value in given.items()
        }
        return _decorate(cls, kw_only=kw_only, **flags)

    def __init__(cls, name, bases, namespace, **kwargs) -> None:
        super().__init__(name, bases, namespace)

    def __getitem__(cls, item):
        if not _options.is_flag_item(item) and issubclass(cls, typing.Generic):
            return typing.Generic.__dict__["__class_getitem__"].__get__(None, cls)(item)
        flags = _options.parse_flag_items(cls.__name__, item)
        name = f"{cls.__name__}_{'_'.join(flags)}"
        namespace = {"__module__": cls.__module__, "__qualname__": name}
        return _TensorClassMeta(name, (cls,), namespace, **dict.fromkeys(flags, True))


def _mro_of(bases) -> list:
    seen = []
    for base in bases:
        seen.extend(k for k in base.__mro__ if k is not object and k not in seen)
    return seen


class TensorClass(TensorCollection, metaclass=_TensorClassMeta):
    """The base class of tensorclasses: subclass it and annotate the fields, as with a dataclass.

    A subclass is what :func:`tensorclass` makes of a class (the two share one
    implementation), and it also inherits from :class:`TensorCollection`. The flags
    of :func:`tensorclass` are given as class keywords
    (``class Foo(TensorClass, autocast=True)``) or by name in brackets
    (``class Foo(TensorClass["nocast", "frozen"])``); a subclass inherits the
    flags of its base and may add more. ``TensorClass`` itself cannot be
    instantiated.

    Raises:
        ClassFlagError: for an unknown flag or class keyword, or two exclusive
            flags (a ``TypeError``).
        AbstractClassError: when ``TensorClass`` itself is instantiated.

    Examples:
        >>> class Pose(TensorClass):
        ...     position: torch.Tensor
        ...     name: str = "base"
        >>> pose = Pose(position=torch.zeros(4, 3), batch_size=[4])
        >>> pose[1:].batch_size, pose.name
        (torch.Size([3]), 'base')
        >>> isinstance(pose, TensorCollection)
        True
        >>> class Counter(TensorClass["nocast"]):
        ...     steps: int
        >>> Counter(steps=3).steps
        3
    """

    _tc_root = True
    _is_tensorclass = True
    _is_tensor_collection = True
    _tc_fields = ()
    _tc_autocast = False
    _tc_frozen = False
    _tc_nocast = False
    _tc_shadow = False
    _tc_tensor_only = False
    _tc_skip_post_init_on_rebuild = False


# ====================================================================== dataclasses
def _tensorclass_type(dc: type, flags: dict) -> type:
    """A new tensorclass ``<name>_tc`` with the fields (annotations and defaults) of dataclass ``dc``."""
    try:
        hints = typing.get_type_hints(dc)
    except Exception:  # noqa: BLE001 - unresolvable string annotations are kept as written
        hints = {}
    namespace = {"__annotations__": {}}
    for field in dataclasses.fields(dc):
        namespace["__annotations__"][field.name] = hints.get(field.name, field.type)
        if field.default is not dataclasses.MISSING:
            namespace[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            namespace[field.name] = dataclasses.field(default_factory=field.default_factory)
    new = types.new_class(f"{dc.__name__}_tc", (), {}, lambda ns: ns.update(namespace))
    return tensorclass(new, **flags)


def from_dataclass(
    obj,
    *,
    dest_cls: type | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    batch_size: torch.Size | None = None,
    frozen: bool = False,
    autocast: bool = False,
    nocast: bool = False,
    inplace: bool = False,
    shadow: bool = False,
    tensor_only: bool = False,
    device: torch.device | None = None,
):
    """Converts a dataclass instance to a tensorclass instance, or a dataclass type to a tensorclass type.

    For a type, the result is a new tensorclass named ``<name>_tc`` with the same
    fields and defaults (or the type itself made a tensorclass, with
    ``inplace=True``); a tensorclass type is returned as it is. For an instance,
    the result is an instance of a new ``<name>_tc`` tensorclass (or of
    ``dest_cls``) holding copies of the field values, as
    :func:`dataclasses.asdict` makes them (a nested dataclass becomes a dict).
    :meth:`TensorDict.from_dataclass <tensordict.TensorDictBase.from_dataclass>`
    gives a :class:`TensorDict` instead.

    Args:
        obj: the dataclass instance or type.

    Keyword Args:
        dest_cls (type, optional): for an instance, the tensorclass to build (the
            class flags below are then unused). Defaults to ``None``: a new class.
        auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
        batch_dims (int, optional): with ``auto_batch_size``, keep at most this many
            dimensions.
        batch_size (torch.Size, optional): the batch size of the instance.
        frozen (bool, optional): the ``frozen`` class flag. Defaults to ``False``.
        autocast (bool, optional): the ``autocast`` class flag. Defaults to ``False``.
        nocast (bool, optional): the ``nocast`` class flag. Defaults to ``False``.
        inplace (bool, optional): for a type, make ``obj`` itself a tensorclass.
            Defaults to ``False``.
        shadow (bool, optional): the ``shadow`` class flag. Defaults to ``False``.
        tensor_only (bool, optional): the ``tensor_only`` class flag. Defaults to ``False``.
        device (torch.device, optional): for an instance, the device of the result.

    Returns:
        A tensorclass type if ``obj`` is a type, a tensorclass instance otherwise.

    Raises:
        ConversionInputError: (a ``TypeError``) if ``obj`` is not a dataclass instance
            or type, or ``dest_cls`` is not a tensorclass.
        ConflictingArgumentsError: (a ``TypeError``) if ``batch_size`` and
            ``auto_batch_size`` are both given.
        ClassFlagError: (a ``TypeError``) if more than one of ``autocast``,
            ``nocast`` and ``tensor_only`` is set.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Frame:
        ...     pixels: torch.Tensor
        ...     tag: str
        >>> frame = from_dataclass(Frame(torch.zeros(4, 2), "start"), auto_batch_size=True)
        >>> type(frame).__name__, frame.batch_size, frame.tag
        ('Frame_tc', torch.Size([4, 2]), 'start')
    """
    flags = {
        "frozen": frozen,
        "autocast": autocast,
        "nocast": nocast,
        "shadow": shadow,
        "tensor_only": tensor_only,
    }
    if isinstance(obj, type):
        if is_tensorclass(obj):
            return obj
        if not dataclasses.is_dataclass(obj):
            msg = (
                f"from_dataclass expects a dataclass instance or type, got the type {obj.__name__}"
            )
            raise ConversionInputError(msg)
        return tensorclass(obj, **flags) if inplace else _tensorclass_type(obj, flags)
    if not dataclasses.is_dataclass(obj):
        msg = f"from_dataclass expects a dataclass instance or type, got {type(obj).__name__}"
        raise ConversionInputError(msg)
    if dest_cls is not None and not (isinstance(dest_cls, type) and is_tensorclass(dest_cls)):
        msg = f"from_dataclass: dest_cls must be a tensorclass, got {dest_cls!r}"
        raise ConversionInputError(msg)
    check_batch_args("from_dataclass", batch_size, auto_batch_size, batch_dims)
    cls = dest_cls if dest_cls is not None else _tensorclass_type(type(obj), flags)
    # copies of the values, nested dataclasses as dicts, as the well-known API gives them
    values = dataclasses.asdict(obj)
    instance = cls(**values, batch_size=batch_size, device=device)
    if auto_batch_size:
        instance.auto_batch_size_(batch_dims)
    return instance


__all__ = [
    "LazyStackedTensorDict",
    "LinkedList",
    "MetaData",
    "NO_DEFAULT",
    "NestedKey",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "ReservedFieldError",
    "TensorClass",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "UnknownFieldError",
    "capture_non_tensor_stack",
    "expand_as_right",
    "from_dataclass",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "list_to_stack",
    "tensorclass",
]
