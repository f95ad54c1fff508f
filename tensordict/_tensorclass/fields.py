"""The fields of a tensorclass: the descriptor of each field and the generated ``__init__``.

A field's value lives in the instance's tensordict under the field's name. Its
descriptor (:class:`Field`) reads the entry back (a non-tensor entry as its Python
value) and sends every assignment through the instance's ``_set_field``; the
``__init__`` that :func:`make_init` writes for a class takes the fields
(positionally or by name) and the keyword-only ``batch_size``, ``device`` and
``names``, and builds the tensordict in one go.

The names without a leading underscore are this module's protocol with the other
modules of :mod:`tensordict._tensorclass`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from tensordict._keys import NestedKey, _key_parts
from tensordict._nontensor import NonTensorDataBase
from tensordict._td import TensorDict
from tensordict._tensorclass import flags
from tensordict._typing import ShapeType
from tensordict.errors import UnknownFieldError


class Field:
    """The descriptor of one field: reads and writes the instance's tensordict entry."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: Any) -> None:
        self.name = name
        self.default = default

    def __get__(self, obj, owner=None):
        if obj is None:
            # Like a dataclass: the class attribute is the default, when there is one. A
            # field without one has no class attribute: dataclasses reads defaults with
            # getattr, so a subclass re-declaring the field would take the descriptor as
            # its default (see docs/differences.rst).
            if self.default is dataclasses.MISSING:
                msg = f"type object {owner.__name__!r} has no attribute {self.name!r}"
                raise AttributeError(msg)
            return self.default
        value = obj._tensordict._get_str(self.name, None)
        if isinstance(value, NonTensorDataBase):
            return value if flags.keeps_non_tensor(type(obj), self.name) else value.data
        if getattr(type(value), "_is_non_tensor", False):
            return value._read_value()  # a stack of values reads as its linked list
        return value

    def __set__(self, obj, value) -> None:
        obj._set_field(self.name, value)


def count_batch_dims(batch_size: ShapeType | int | None) -> int:
    """The number of batch dimensions that ``batch_size`` (as given to a builder) sets."""
    if batch_size is None:
        return 0
    if isinstance(batch_size, int):
        return 1
    return len(batch_size)


def unknown_field(cls: type, name: str, what: str) -> UnknownFieldError:
    """The error for ``name``, which is no field of ``cls``; ``what`` says what was tried."""
    msg = (
        f"{what} {name!r}: {cls.__name__} has no such field; its fields are "
        f"{list(cls._tc_fields)}. Declare it in the class body with an annotation "
        f"(e.g. '{name}: torch.Tensor = None')"
    )
    return UnknownFieldError(msg)


def check_key(cls: type, key: NestedKey, what: str) -> None:
    """Raises :func:`unknown_field` unless ``key`` (its first part) is a field of ``cls``."""
    first = key if type(key) is str else _key_parts(key)[0]
    if first not in cls._tc_field_set:
        raise unknown_field(cls, first, what)


_INIT_OPTIONS = ("batch_size", "device", "names")


def make_init(cls: type, fields: list) -> Callable:
    """The ``__init__`` of the tensorclass ``cls`` whose dataclass fields are ``fields``."""
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
                raise unknown_field(cls, key, f"{cls.__name__}.__init__() got the keyword argument")
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
        dims = count_batch_dims(batch_size)
        for field in fields:
            if field.name in values:
                value = values[field.name]
            elif field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            elif field.default is not dataclasses.MISSING:
                value = field.default
            else:
                value = None
            value = flags.stored_value(cls, field.name, value, dims)
            if value is not None:
                source[field.name] = value
        td = TensorDict(source, batch_size=batch_size, device=device, names=names)
        self.__dict__["_tensordict"] = td
        if cls._tc_own_setattr:
            for name, value in values.items():  # the class's own __setattr__ sees each field
                setattr(self, name, value)
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
