"""TypedTensorDict: a TensorDict whose fields are declared as class annotations.

A subclass lists its fields as annotations, as a ``typing.TypedDict`` does::

    class State(TypedTensorDict):
        obs: Tensor
        reward: Tensor = torch.zeros(())   # a default: read when the key is unset
        info: NotRequired[Tensor]          # optional, no default

The class statement (through :class:`_TypedTensorDictMeta`) collects the fields
of the class and of its bases, records which are required, and installs one
property per field so that ``state.obs`` reads and writes the entry ``"obs"``.

Instances are :class:`~tensordict.TensorDict` objects: every operation works
on them. The operations that return a new tensordict of the same entries
(indexing, shape operations, ``clone``, ``to``, ``apply``, ``select``,
stacking, memory mapping...) return an instance of the same class. They reach
it through a few primitives of ``TensorDict`` (``_index``, ``_batch_op``,
``_fast_apply``, ...) that are overridden here to re-type their result, and
through the ``_combine_members`` hook that :mod:`tensordict._stack` calls.

On disk an instance is a plain ``TensorDict`` folder (``meta.json`` records
``"_type": "<class 'tensordict._td.TensorDict'>"``), as the well-known
implementation writes it, so folders load in either and come back as
``TensorDict``; wrap the result with :meth:`TypedTensorDict.from_tensordict`
to get the typed class back.
"""

from __future__ import annotations

import typing
import warnings
from abc import ABCMeta
from collections.abc import Mapping, Sequence
from typing import Any

from tensordict._collection import TensorCollection
from tensordict._td import TensorDict
from tensordict._typing import DeviceType, ShapeType, T
from tensordict.errors import (
    MissingFieldError,
    ReservedFieldError,
    UnknownFieldError,
    UnsetFieldError,
)

__all__ = ["TypedTensorDict"]

_OPTIONS = ("shadow", "frozen", "autocast", "nocast", "tensor_only")
_DEPRECATED = ("autocast", "nocast", "tensor_only")
# The slots of a TensorDict: copying them turns a TensorDict into a typed instance.
_STATE = ("_tensordict", "_batch_size", "_device", "_names", "_locked", "_lock_holders", "_mm")
_MISSING = object()


def _annotation_kind(annotation) -> str:
    """``"classvar"``, ``"optional"`` (``NotRequired``) or ``"field"`` for one annotation."""
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip().rsplit(".", 1)[-1]
        if head == "ClassVar":
            return "classvar"
        return "optional" if head == "NotRequired" else "field"
    origin = typing.get_origin(annotation)
    if annotation is typing.ClassVar or origin is typing.ClassVar:
        return "classvar"
    if origin is typing.NotRequired:
        return "optional"
    return "field"


def _field_property(name: str) -> property:
    """The property of one field: reads the entry (or its default), writes it with ``set``."""

    def read(self):
        value = self._tensordict.get(name, _MISSING)
        if value is not _MISSING:
            return value
        defaults = type(self).__field_defaults__
        if name in defaults:
            return defaults[name]
        msg = f"{type(self).__name__!r} has field {name!r} declared but not set"
        raise UnsetFieldError(msg)

    def write(self, value) -> None:
        self.set(name, value)

    return property(read, write, doc=f"The field {name!r} (the entry of that key).")


class _TypedTensorDictMeta(ABCMeta):
    """Collects the annotated fields of a TypedTensorDict class and installs their properties.

    Class keywords ``shadow`` and ``frozen`` (and the deprecated no-op ones
    ``autocast``, ``nocast``, ``tensor_only``) set the options of the class;
    subclasses inherit them. ``TypedTensorDict["frozen"]`` is a shorthand.
    """

    def __new__(mcs, name, bases, namespace, **kwargs):
        options = {opt: kwargs.pop(opt) for opt in _OPTIONS if opt in kwargs}
        for opt in _DEPRECATED:
            if options.get(opt) is not None:
                warnings.warn(
                    f"the TypedTensorDict option {opt!r} has no effect and is deprecated; "
                    "it is accepted for compatibility only",
                    DeprecationWarning,
                    stacklevel=2,
                )
        own = namespace.get("__annotations__", {})
        expected: dict = {}
        required: set = set()
        defaults: dict = {}
        for base in reversed(bases):
            if isinstance(base, _TypedTensorDictMeta):
                expected.update(dict.fromkeys(base.__expected_keys__))
                required |= base.__required_keys__
                defaults.update(base.__field_defaults__)
        shadow = options.get("shadow")
        if shadow is None:
            shadow = any(getattr(b, "_shadow", False) for b in bases)
        for field, annotation in own.items():
            kind = _annotation_kind(annotation)
            if kind == "classvar":
                continue
            if not shadow and hasattr(TensorDict, field):
                msg = (
                    f"field {field!r} of {name} has the name of a TensorDict attribute; rename it, "
                    f"or derive from TypedTensorDict['shadow'] to let the field hide that attribute"
                )
                raise ReservedFieldError(msg)
            expected[field] = None
            defaults.pop(field, None)
            if field in namespace:
                defaults[field] = namespace[field]
                required.discard(field)
            elif kind == "optional":
                required.discard(field)
            else:
                required.add(field)
            namespace[field] = _field_property(field)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        for opt in _OPTIONS:
            if options.get(opt) is not None:
                setattr(cls, f"_{opt}", bool(options[opt]))
        cls.__expected_keys__ = frozenset(expected)
        cls.__required_keys__ = frozenset(required)
        cls.__optional_keys__ = frozenset(expected) - cls.__required_keys__
        cls.__field_defaults__ = defaults
        cls._field_order = tuple(expected)
        return cls

    def __getitem__(cls, options):
        """Returns a subclass of ``cls`` with the named options on: ``TypedTensorDict["frozen"]``."""
        names = (options,) if isinstance(options, str) else tuple(options)
        for opt in names:
            if opt not in _OPTIONS:
                msg = (
                    f"unknown TypedTensorDict option {opt!r}; valid options: {', '.join(_OPTIONS)}"
                )
                raise ValueError(msg)
        return _TypedTensorDictMeta(
            f"{cls.__name__}_{'_'.join(names)}",
            (cls,),
            {"__module__": cls.__module__},
            **dict.fromkeys(names, True),
        )


class TypedTensorDict(TensorDict, metaclass=_TypedTensorDictMeta):
    """A :class:`~tensordict.TensorDict` whose fields are declared as class annotations.

    A subclass declares its fields as annotations and gets attribute access to
    them (``state.obs``, as well as ``state["obs"]``), a constructor that takes
    them by keyword and checks that every required field is given and no
    unknown one is, inheritance (a subclass adds fields to those of its
    bases), and defaults. A field with a value in the class body has that
    default: reading it while the key is unset returns the default, which is
    not stored. A ``NotRequired[...]`` field may be left out. ``ClassVar``
    annotations are not fields. Values are stored as a ``TensorDict`` stores
    them; their annotated types are not checked.

    Every tensordict operation works on an instance, and those that return a
    tensordict of the same entries (indexing, ``reshape``, ``clone``, ``to``,
    ``apply``, ``select``, ``torch.stack``, ``memmap``...) return an instance of
    the same class. A memory-mapped folder is written as a plain
    ``TensorDict`` one, and loads as a ``TensorDict``.

    Class options, set as ``class State(TypedTensorDict, frozen=True)`` or
    ``class State(TypedTensorDict["frozen"])`` and inherited:
    ``shadow`` lets a field have the name of a TensorDict attribute (which it
    then hides; otherwise the class statement raises ``AttributeError``);
    ``frozen`` makes the constructor lock the instance. ``autocast``,
    ``nocast`` and ``tensor_only`` are accepted, do nothing and warn.

    Args:
        source (dict or TensorDictBase, optional): entries given as a mapping,
            taken as :meth:`from_dict` takes them: keys that are not fields are
            kept, and a missing field warns (``FutureWarning``) instead of
            raising. Defaults to ``None``.

    Keyword Args:
        batch_size (torch.Size or sequence of int, optional): the batch size.
            Defaults to ``None``, an empty batch size.
        device (torch.device, str or int, optional): the device of every leaf.
            Defaults to ``None``.
        names (list of str, optional): the names of the batch dimensions.
            Defaults to ``None``.
        non_blocking (bool, optional): accepted for compatibility and ignored.
        lock (bool, optional): lock the instance once built. Defaults to
            ``False`` (``True`` for a ``frozen`` class).
        **fields: the value of each field.

    Raises:
        TypeError: if a required field is missing (``MissingFieldError``) or a
            name is not a field (``UnknownFieldError``).
        RuntimeError: if a value's leading dimensions do not match
            ``batch_size``.

    Examples:
        >>> import torch
        >>> from torch import Tensor
        >>> class State(TypedTensorDict):
        ...     eta: Tensor
        ...     X: Tensor
        >>> state = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
        >>> state.eta.shape, state["X"].shape
        (torch.Size([5, 3]), torch.Size([5, 4]))
        >>> type(state[0]).__name__, state[0].batch_size
        ('State', torch.Size([]))
        >>> State(eta=torch.zeros(3))
        Traceback (most recent call last):
            ...
        tensordict.errors.MissingFieldError: State() missing required field(s): X
    """

    _is_typed = True
    _shadow = False
    _frozen = False
    _autocast = False
    _nocast = False
    _tensor_only = False

    def __new__(cls, *args, **kwargs):
        if cls is TypedTensorDict:
            msg = "TypedTensorDict is a base class: derive a class that declares its fields"
            raise TypeError(msg)
        return super().__new__(cls)

    def __init__(
        self,
        source: Mapping | TensorCollection | None = None,
        *,
        batch_size: ShapeType | int | None = None,
        device: DeviceType | None = None,
        names: Sequence[str | None] | None = None,
        non_blocking: bool | None = None,
        lock: bool = False,
        **fields: Any,
    ) -> None:
        cls = type(self)
        if source is not None:
            # A mapping source is taken as from_dict takes it: undeclared keys are kept and
            # a missing field warns; the keyword fields are added to it.
            fields = {**dict(source.items()), **fields}
            missing = cls._missing_fields(fields)
            if missing:
                warnings.warn(
                    f"{cls.__name__}(dict) returns an instance that misses the required "
                    f"field(s) {', '.join(missing)}; pass them, or use from_dict(..., check=False)",
                    FutureWarning,
                    stacklevel=2,
                )
        else:
            unknown = [key for key in fields if key not in cls.__expected_keys__]
            if unknown:
                msg = f"{cls.__name__}() got unexpected field(s): {', '.join(sorted(map(str, unknown)))}"
                raise UnknownFieldError(msg)
            missing = cls._missing_fields(fields)
            if missing:
                msg = f"{cls.__name__}() missing required field(s): {', '.join(missing)}"
                raise MissingFieldError(msg)
        super().__init__(
            fields,
            batch_size,
            device,
            names,
            non_blocking=non_blocking,
            lock=lock or cls._frozen,
        )

    # ------------------------------------------------------------------ building
    @classmethod
    def _retype(cls, td):
        """``td`` (a plain TensorDict) as an instance of ``cls`` sharing its entry dict and state."""
        if type(td) is not TensorDict:
            return td
        out = object.__new__(cls)
        for slot in _STATE:
            object.__setattr__(out, slot, getattr(td, slot))
        record = getattr(td, "_write_back", None)
        if record is not None:  # a with-block over the result still writes back
            out._write_back = record
        return out

    @classmethod
    def _combine_members(cls, combine, tds, dim: int):
        """Stacks or concatenates ``tds`` with ``combine`` and gives the result the class ``cls``.

        The hook :mod:`tensordict._stack` calls when the first member is typed:
        typed members go in as plain views of their entries.
        """
        plain = [
            TensorDict._new_unsafe(td._tensordict, td._batch_size, td._device, td._names)
            if isinstance(td, TypedTensorDict)
            else td
            for td in tds
        ]
        return cls._retype(combine(plain, dim))

    @classmethod
    def _missing_fields(cls, keys) -> list:
        return sorted(cls.__required_keys__.difference(keys))

    @classmethod
    def from_tensordict(cls: type[T], td: TensorCollection, *, check: bool = True) -> T:
        """Wraps a TensorDict in an instance of the class, without copying it.

        The instance shares the entry dict of ``td``: an entry written, added
        or removed through one is seen through the other.

        Args:
            td (TensorDict): the tensordict to wrap.

        Keyword Args:
            check (bool, optional): check that ``td`` holds every required
                field. Defaults to ``True``; with ``False``, reading a missing
                field raises ``AttributeError``.

        Returns:
            A new instance of the class backed by the entries of ``td``.

        Raises:
            TypeError: if ``td`` is not a dense ``TensorDict``, or if ``check``
                is on and a required field is missing (``MissingFieldError``).

        Examples:
            >>> import torch
            >>> from torch import Tensor
            >>> class State(TypedTensorDict):
            ...     x: Tensor
            >>> td = TensorDict(x=torch.zeros(3), batch_size=[3])
            >>> state = State.from_tensordict(td)
            >>> state.x += 1
            >>> td["x"]
            tensor([1., 1., 1.])
        """
        if not isinstance(td, TensorDict):
            msg = (
                f"{cls.__name__}.from_tensordict() wraps a TensorDict, got a {type(td).__name__}; "
                "call its to_tensordict() first"
            )
            raise TypeError(msg)
        if check:
            missing = cls._missing_fields(td._tensordict)
            if missing:
                msg = f"{cls.__name__}.from_tensordict() missing required field(s): {', '.join(missing)}"
                raise MissingFieldError(msg)
        out = object.__new__(cls)
        for slot in _STATE:
            object.__setattr__(out, slot, getattr(td, slot))
        out._lock_holders = ()
        return out

    @classmethod
    def from_dict(
        cls: type[T],
        input_dict: Mapping | TensorCollection,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        batch_dims: int | None = None,
        names: Sequence[str | None] | None = None,
        *,
        auto_batch_size: bool | None = None,
        check: bool = True,
        **kwargs: Any,
    ) -> T:
        """Builds an instance of the class from a dict of its fields.

        Keys the class does not declare are kept. The batch size is given, or
        inferred as :meth:`~tensordict.TensorDict.from_dict` infers it.

        Args:
            input_dict (dict): the values of the fields; nested dicts become
                ``TensorDict`` entries.
            batch_size (torch.Size or sequence of int, optional): the batch size.
                Defaults to ``None``.
            device (torch.device, str or int, optional): the device. Defaults to
                ``None``.
            batch_dims (int, optional): infer the batch size, keeping at most
                this many dimensions. Defaults to ``None``.
            names (list of str, optional): the names of the batch dimensions.
                Defaults to ``None``.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size. Defaults to
                ``None`` (no, unless ``batch_dims`` is given).
            check (bool, optional): warn with a ``FutureWarning`` when a
                required field is missing. Defaults to ``True``.
            **kwargs: accepted for compatibility and ignored.

        Returns:
            A new instance of the class.

        Examples:
            >>> import torch
            >>> from torch import Tensor
            >>> class State(TypedTensorDict):
            ...     x: Tensor
            ...     y: Tensor
            >>> state = State.from_dict({"x": torch.zeros(3, 4), "y": torch.zeros(3)}, auto_batch_size=True)
            >>> state.batch_size
            torch.Size([3])
        """
        td = TensorDict.from_dict(
            input_dict, batch_size, device, batch_dims, names, auto_batch_size=auto_batch_size
        )
        if check:
            missing = cls._missing_fields(td._tensordict)
            if missing:
                warnings.warn(
                    f"{cls.__name__}.from_dict() returns an instance that misses the required "
                    f"field(s) {', '.join(missing)}; pass them, or check=False to silence this",
                    FutureWarning,
                    stacklevel=2,
                )
        return cls._retype(td)

    # --------------------------------------------- results keep the class (TensorDict hooks)
    _result_cls = TensorDict  # built as a TensorDict, then retyped by _new_result

    def _new_result(self, td):
        return type(self)._retype(td)

    def _index(self, index):
        return self._new_result(super()._index(index))

    def _batch_op(self, op, batch_size, names=None):
        return self._new_result(super()._batch_op(op, batch_size, names))

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        return tuple(self._new_result(td) for td in super()._batch_op_multi(op, batch_sizes, names))

    def _shallow_copy(self):
        return self._new_result(super()._shallow_copy())

    def _fast_apply(self, fn, *others, **kwargs):
        return self._new_result(super()._fast_apply(fn, *others, **kwargs))

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        return self._new_result(super()._memmap_rebuild(folder, replacement, inplace, robust_key))

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Returns a copy as a plain :class:`~tensordict.TensorDict` (in memory, unlocked).

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility and ignored.

        Returns:
            A new ``TensorDict`` with copies of every tensor.

        Examples:
            >>> import torch
            >>> from torch import Tensor
            >>> class State(TypedTensorDict):
            ...     x: Tensor
            >>> type(State(x=torch.zeros(2)).to_tensordict()).__name__
            'TensorDict'
        """
        copy = self.clone()
        return TensorDict._new_unsafe(copy._tensordict, copy._batch_size, copy._device, copy._names)


def _typed_results(*names: str) -> None:
    """Wraps public methods that build their result with ``_new_like`` so that it keeps the class.

    ``_new_like`` also builds the sub-tensordicts that a nested key creates,
    which stay plain ``TensorDict``; so the methods are wrapped, not it.
    """
    for name in names:
        method = getattr(TensorDict, name)

        def typed(self, *args, __method=method, **kwargs):
            result = __method(self, *args, **kwargs)
            if type(result) is TensorDict and result is not self:
                return type(self)._retype(result)
            return result

        typed.__name__ = name
        typed.__qualname__ = f"TypedTensorDict.{name}"
        typed.__doc__ = method.__doc__
        typed.__wrapped__ = method
        setattr(TypedTensorDict, name, typed)


def _plain(result):
    if isinstance(result, TypedTensorDict):
        return TensorDict._new_unsafe(
            result._tensordict, result._batch_size, result._device, result._names
        )
    if isinstance(result, tuple) and hasattr(result, "_make"):
        return result._make(_plain(item) for item in result)
    return result


def _plain_results(*names: str) -> None:
    """Wraps comparisons and reductions: their result is a plain TensorDict, not the typed class.

    A tensordict of booleans or of reduced values is not an instance of the
    fields' class, as the well-known implementation also decides.
    """
    for name in names:
        method = getattr(TensorDict, name)

        def plain(self, *args, __method=method, **kwargs):
            return _plain(__method(self, *args, **kwargs))

        plain.__name__ = name
        plain.__qualname__ = f"TypedTensorDict.{name}"
        plain.__doc__ = method.__doc__
        plain.__wrapped__ = method
        setattr(TypedTensorDict, name, plain)


# fmt: off
_plain_results(
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "all", "any",
    "sum", "mean", "nansum", "nanmean", "prod", "std", "var", "max", "min", "amax", "amin",
    "logsumexp", "median",
)
# fmt: on
_typed_results(
    "select", "exclude", "flatten_keys", "unflatten_keys", "empty", "apply", "named_apply"
)
