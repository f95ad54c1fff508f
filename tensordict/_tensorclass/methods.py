"""The methods every tensorclass gets: construction, attributes, the container protocol, torch.

:class:`_TensorClassMethods` holds them; the decorator
(:mod:`tensordict._tensorclass.decorator`) copies its members onto each decorated
class, except those the class defines itself. Besides the methods written here it
holds the memory-mapping hooks and methods (:mod:`tensordict._tensorclass.memmap`),
the methods that carry the class over ``torch.distributed``
(:data:`tensordict._ops.distributed.TENSORCLASS_METHODS`), and the class-level
builders and forwarders (:mod:`tensordict._tensorclass.forwarding`), put on it
below the class. Its name keeps the leading underscore although the decorator
imports it: it is the qualified name of every method it holds
(``Frame.apply.__qualname__ == "_TensorClassMethods.apply"``).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections import OrderedDict
from collections.abc import Mapping

import torch

from tensordict._collection import is_tensor_collection
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops.distributed import TENSORCLASS_METHODS
from tensordict._options import GET_DEFAULT
from tensordict._printing import collection_repr
from tensordict._stack import cat as _td_cat
from tensordict._stack import stack as _td_stack
from tensordict._td import TensorDict
from tensordict._tensorclass import flags
from tensordict._tensorclass.fields import check_key, count_batch_dims, unknown_field
from tensordict._tensorclass.forwarding import (
    WRAPPED_PROPERTIES,
    as_class,
    forward,
    install,
    is_tc,
    unwrap,
)
from tensordict._tensorclass.memmap import MemmapHooks
from tensordict._torch_function import dispatch as _dispatch
from tensordict.base import TensorDictBase
from tensordict.errors import UnexpectedStateKeyError

_NO_ATTRIBUTE = object()


def _flatten_state(state: Mapping, prefix: str, out: dict) -> None:
    """Puts the entries of a nested state dict into ``out``, keyed by ``"."``-joined keys."""
    for key, value in state.items():
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            _flatten_state(value, f"{prefix}{key}.", out)
        else:
            out[prefix + key] = value


# The keys under which a tensorclass level of a state dict's ``_metadata`` records its class
# name and its non-tensor fields, as the well-known API writes them.
_STATE_TYPE = "_type"
_STATE_NON_TENSOR = "_non_tensor"


def _non_tensor_fields(tc) -> dict:
    """The fields of ``tc`` that hold no tensor nor collection: their values (None when unset)."""
    td = tc._tensordict
    out = {}
    for name in type(tc)._tc_fields:
        value = td._get_str(name, None)
        if value is None:
            out[name] = None
        elif isinstance(value, NonTensorDataBase):
            out[name] = value.data
        elif getattr(type(value), "_is_non_tensor", False):
            out[name] = value.tolist()
    return out


def _record_fields(value, metadata: dict, level: str) -> None:
    """Adds the class name and non-tensor fields of each tensorclass under ``value`` to ``metadata``."""
    if is_tc(value):
        entry = metadata.setdefault(level, {})
        entry[_STATE_TYPE] = type(value).__qualname__
        entry[_STATE_NON_TENSOR] = _non_tensor_fields(value)
        value = value._tensordict
    for key, item in value.items():
        if is_tensor_collection(item) and not getattr(type(item), "_is_non_tensor", False):
            _record_fields(item, metadata, f"{level}.{key}" if level else key)


def _recorded_fields(state_dict: Mapping, level: tuple, out: dict) -> None:
    """Collects the non-tensor fields recorded in ``state_dict`` (and its nested dicts) by level."""
    for name, entry in (getattr(state_dict, "_metadata", None) or {}).items():
        if isinstance(entry, Mapping) and isinstance(entry.get(_STATE_NON_TENSOR), Mapping):
            out[level + (tuple(name.split(".")) if name else ())] = entry[_STATE_NON_TENSOR]
    for key, value in state_dict.items():
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            _recorded_fields(value, (*level, *key.split(".")), out)


def _is_key(index) -> bool:
    if type(index) is str:
        return True
    return type(index) is tuple and bool(index) and all(type(i) is str for i in index)


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

    # ------------------------------------------------------------------ the walk of a tree (_ops/tree.py)
    # An instance is described through its tensordict, under its own class.
    def _tree_items(self, sort: bool = False) -> list:
        return self._tensordict._tree_items(sort)

    def _tree_info(self) -> dict:
        return self._tensordict._tree_info()

    def _tree_value(self):
        return None

    @classmethod
    def _tree_build(cls, entries: dict, info: dict):
        inner = LazyStackedTensorDict if "stack_dim" in info else TensorDict
        return cls._from_tensordict(inner._tree_build(entries, info))

    def _tree_like(self, entries: dict, device=None):
        return type(self)._from_tensordict(self._tensordict._tree_like(entries, device))

    def _tree_inner(self):
        return self._tensordict

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
                    raise unknown_field(cls, extra[0], "cannot hold the result's entry")
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
                raise unknown_field(cls, key, "cannot wrap the tensordict entry")
        obj = cls._from_tensordict(tensordict)
        for name, value in (non_tensordict or {}).items():
            if name not in cls._tc_field_set:
                raise unknown_field(cls, name, "cannot set")
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
                raise unknown_field(cls, key, "cannot set")
        source = {}
        dims = count_batch_dims(batch_size)
        for key, value in input_dict.items():
            value = (
                value if isinstance(value, Mapping) else flags.stored_value(cls, key, value, dims)
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
        or tensordict in this instance becomes an instance of that class. Fields are cast as
        the constructor casts them (with ``autocast``, to their annotations).

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
        obj = as_class(type(self), built, "from_dict_instance")
        flags.cast_fields(obj, built.keys())
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
            inner.extend(unwrap(tensordict))
        else:
            inner.extend([unwrap(m) for m in tensordict])

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
        items = [unwrap(item) for item in input] if isinstance(input, (list, tuple)) else input
        return cls.from_tensordict(TensorDict.from_list(items, **kwargs))

    # ------------------------------------------------------------------ attributes
    def _set_field(self, name: str, value) -> None:
        td = self._tensordict
        value = flags.stored_value(type(self), name, value, td.batch_dims)
        if value is None:
            if td._get_str(name, None) is not None:
                td._del_str(name)
            return
        td._set_str(name, value, inplace=False, validated=False)

    def __enter__(self):
        """Starts a with-block over the instance's tensordict (see ``TensorDictBase.__enter__``).

        ``with tc.view(-1) as flat:`` writes what the block gives ``flat`` back into ``tc``
        when it ends, as for a tensordict.
        """
        self._tensordict.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self._tensordict.__exit__(exc_type, exc_value, traceback)

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
            raise unknown_field(cls, name, "cannot set the attribute")

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
            return forward(self, name, attr)
        return self._wrap(attr) if name in WRAPPED_PROPERTIES else attr

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
        """The device of the instance's tensordict, or ``None`` (read-only: use ``to(device)``)."""
        return self._tensordict.device

    @device.setter
    def device(self, value) -> None:
        self._tensordict.device = value  # refused there, with the way out

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

    def get(self, key, default=GET_DEFAULT, **kwargs):
        """Returns the value at ``key`` (a field, or a nested key), ``default`` when missing.

        A non-tensor field reads back as its Python value; ``kwargs`` (``as_list``,
        ``as_padded_tensor``, ...) go to :meth:`TensorDictBase.get`. A name that is no
        field and no entry but a public attribute of the instance (``batch_size``,
        ``device``, ...) gives that attribute, as in the well-known API.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> p = Point(x=torch.zeros(2), batch_size=[2])
            >>> p.get("x"), p.get("y", "missing"), p.get("batch_size")
            (tensor([0., 0.]), 'missing', torch.Size([2]))
        """
        if (
            type(key) is str
            and key not in type(self)._tc_field_set
            and not key.startswith("_")
            and key not in self._tensordict.keys()
        ):
            attr = getattr(self, key, _NO_ATTRIBUTE)
            if attr is not _NO_ATTRIBUTE:
                return attr
        value = self._tensordict.get(key, default, **kwargs)
        return value.data if isinstance(value, NonTensorDataBase) else value

    def set(self, key, value, inplace: bool = False, **kwargs):
        """Sets a field (or a nested key under a field) and returns the instance.

        Raises:
            UnknownFieldError: if ``key`` (its first part) is not a field.
            RuntimeError: if a tensor's leading dims do not match the batch size.
        """
        cls = type(self)
        check_key(cls, key, "cannot set")
        if type(key) is str and not inplace:
            self._set_field(key, value)  # a frozen instance's tensordict is locked: LockedError
        else:
            name = key if type(key) is str else None
            value = unwrap(value)
            if name is not None:
                value = flags.stored_value(cls, name, value, self._tensordict.batch_dims)
            self._tensordict.set(key, value, inplace=inplace, **kwargs)
        return self

    def update(
        self,
        input_dict_or_td=None,
        clone: bool = False,
        inplace: bool = False,
        *,
        keys_to_update=None,
        non_blocking: bool = False,
        update_batch_size: bool = False,
        is_leaf=None,
        ignore_lock: bool = False,
        **kwargs,
    ):
        """Writes the entries of a dict, tensordict or instance (and of ``kwargs``) into this one.

        As :meth:`TensorDict.update <tensordict.TensorDictBase.update>`: the keyword
        arguments other than the options are entries too, and win over those of
        ``input_dict_or_td``; with neither, nothing changes.

        Returns:
            The instance itself.

        Raises:
            UnknownFieldError: if a top-level key is not a field.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            ...     y: torch.Tensor
            >>> p = Point(x=torch.zeros(2), y=torch.zeros(2), batch_size=[2])
            >>> p.update({"x": torch.ones(2)}, y=torch.full((2,), 3.0)).y
            tensor([3., 3.])
        """
        source = {} if input_dict_or_td is None else unwrap(input_dict_or_td)
        for key in [*source.keys(), *kwargs]:
            check_key(type(self), key, "cannot update")
        self._tensordict.update(
            source,
            clone=clone,
            inplace=inplace,
            keys_to_update=keys_to_update,
            non_blocking=non_blocking,
            update_batch_size=update_batch_size,
            is_leaf=is_leaf,
            ignore_lock=ignore_lock,
            **{key: unwrap(value) for key, value in kwargs.items()},
        )
        return self

    # ------------------------------------------------------------------ state dicts
    def state_dict(
        self,
        destination: dict | None = None,
        prefix: str = "",
        keep_vars: bool = False,
        flatten: bool = True,
    ) -> dict:
        """Returns the leaf tensors of the instance, like ``nn.Module.state_dict``.

        Args:
            destination (dict, optional): the dict to fill. Defaults to a new OrderedDict.
            prefix (str, optional): prepended to every top-level key. Defaults to ``""``.
            keep_vars (bool, optional): keep tensors as they are, not detached. Defaults to False.
            flatten (bool, optional): key the nested leaves by ``"."``-joined keys; with
                False, a nested tensorclass or tensordict gives a nested dict under its
                field. Defaults to True.

        Returns:
            The filled dict. The non-tensor fields of each tensorclass level and its
            class name are kept in the dict's ``_metadata`` attribute (as
            ``nn.Module.state_dict`` has one), under the level's ``"."``-joined key,
            in the ``"_non_tensor"`` and ``"_type"`` entries; :meth:`load_state_dict`
            sets them back.

        Examples:
            >>> @tensorclass
            ... class Pair:
            ...     x: torch.Tensor
            ...     inner: TensorDict = None
            >>> pair = Pair(x=torch.zeros(2), inner=TensorDict(y=torch.ones(2)))
            >>> list(pair.state_dict()), list(pair.state_dict(flatten=False))
            (['x', 'inner.y'], ['x', 'inner'])
        """
        level = prefix[:-1] if prefix.endswith(".") else prefix
        if flatten:
            out = self._tensordict.state_dict(
                destination=destination, prefix=prefix, keep_vars=keep_vars, flatten=True
            )
            metadata = getattr(out, "_metadata", None)
            if metadata is not None:
                _record_fields(self, metadata, level)
            return out
        out = OrderedDict() if destination is None else destination
        for key, value in self._tensordict.items():
            if isinstance(value, torch.Tensor):
                out[prefix + key] = value if keep_vars else value.detach()
            elif is_tensor_collection(value) and not getattr(type(value), "_is_non_tensor", False):
                out[prefix + key] = value.state_dict(keep_vars=keep_vars, flatten=False)
        if isinstance(out, OrderedDict):
            if getattr(out, "_metadata", None) is None:
                out._metadata = OrderedDict()
            out._metadata[level] = {
                "batch_size": self._tensordict.batch_size,
                "device": self._tensordict.device,
                _STATE_TYPE: type(self).__qualname__,
                _STATE_NON_TENSOR: _non_tensor_fields(self),
            }
        return out

    def load_state_dict(
        self, state_dict: dict, strict: bool = True, assign: bool = False, from_flatten=None
    ):
        """Copies the tensors of a :meth:`state_dict` (flat or nested) into the instance, and returns it.

        The non-tensor fields that the state dict's ``_metadata`` records (see
        :meth:`state_dict`) are set too.

        A nested dict stands for the entries under its key. The form written by
        earlier versions of the well-known API (the tensors under ``"_tensordict"``,
        the other fields under ``"_non_tensordict"``) is read too.

        Args:
            state_dict (dict): the tensors, keyed by ``"."``-joined keys or nested.
            strict (bool, optional): require every leaf of the instance in
                ``state_dict``. Defaults to True.
            assign (bool, optional): rebind existing tensors instead of copying.
                Defaults to False.
            from_flatten (bool, optional): accepted for compatibility: both forms are read.

        Returns:
            The instance itself.

        Raises:
            UnexpectedStateKeyError: (a ``KeyError``) if a key is no field of the
                tensorclass that would hold it.
            RuntimeError: if ``strict`` and a leaf is missing, or a tensor does not fit.

        Examples:
            >>> @tensorclass
            ... class Pair:
            ...     x: torch.Tensor
            ...     inner: TensorDict = None
            >>> pair = Pair(x=torch.zeros(2), inner=TensorDict(y=torch.zeros(2)))
            >>> pair.load_state_dict({"x": torch.ones(2), "inner": {"y": torch.ones(2)}}).inner["y"]
            tensor([1., 1.])
        """
        fields = {}
        legacy = state_dict.get("_tensordict")
        if isinstance(legacy, Mapping):
            fields = dict(state_dict.get("_non_tensordict") or {})
            state_dict = legacy
        recorded = {}
        _recorded_fields(state_dict, (), recorded)
        flat = OrderedDict()
        _flatten_state(state_dict, "", flat)
        for key in flat:
            if not key.startswith("__"):
                self._check_state_key(tuple(key.split(".")))
        for level, values in recorded.items():
            for name in values:
                self._check_state_key((*level, name))
        for name in fields:
            self._check_state_key((name,))
        self._tensordict.load_state_dict(flat, strict=strict, assign=assign, from_flatten=True)
        for name, value in fields.items():
            self._set_field(name, value)
        for level, values in sorted(recorded.items(), key=lambda item: len(item[0])):
            holder = self.get(level, None) if level else self
            if is_tc(holder):
                for name, value in values.items():
                    holder._set_field(name, value)
        return self

    def _check_state_key(self, parts: tuple) -> None:
        holder = self
        for i, part in enumerate(parts):
            if is_tc(holder) and part not in type(holder)._tc_field_set:
                msg = (
                    f"the state dict holds the key {'.'.join(parts)!r}, but {part!r} is no field "
                    f"of {type(holder).__name__} (its fields are {list(type(holder)._tc_fields)})"
                )
                raise UnexpectedStateKeyError(msg)
            if i + 1 < len(parts):
                holder = holder.get(part, None)
                if not is_tensor_collection(holder):
                    return

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
        if is_tc(value) and type(value) is not type(self):
            # An instance of another tensorclass fits if each of its fields is one of ours.
            fields = type(self)._tc_field_set
            extra = [name for name in type(value)._tc_fields if name not in fields]
            if extra:
                raise unknown_field(
                    type(self), extra[0], f"cannot take a {type(value).__name__} with the field"
                )
        self._tensordict[index] = unwrap(value)

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
        # The detailed layout shows the fields as ``name=value`` arguments.
        return {"fields_as_arguments": True}

    def _repr_level(self):
        """Hook of the ``repr``: the batch size and device shown are those of the instance's tensordict."""
        return self._tensordict

    def _repr_names_class(self) -> bool:
        """Hook of the compact ``repr``: a nested instance shows its class name (``Point[3]{...}``)."""
        return True

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
        result = _td_stack(tds, dim, out=None if out is None else unwrap(out))
        return out if out is not None else type(items[0])._from_tensordict(result)

    @classmethod
    def _cat_members(cls, items, dim: int = 0, *, out=None):
        """``torch.cat`` of instances: their tensordicts concatenated, as the class."""
        tds = cls._members(items, "concatenate")
        result = _td_cat(tds, dim, out=None if out is None else unwrap(out))
        return out if out is not None else type(items[0])._from_tensordict(result)

    # ------------------------------------------------------------------ tensordict internals
    def _fast_apply(self, fn, *others, **kwargs):
        td = self._tensordict
        result = td._fast_apply(fn, *(unwrap(o) for o in others), **kwargs)
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


# The memory-mapping hooks and the public memmap methods.
for _name, _member in vars(MemmapHooks).items():
    if not _name.startswith("__"):
        setattr(_TensorClassMethods, _name, _member)
for _name, _member in TENSORCLASS_METHODS.items():  # these carry the class to the other ranks
    setattr(_TensorClassMethods, _name, _member)
del _name, _member

# The class-level builders and forwarders.
install(_TensorClassMethods)
