"""The class flags of a tensorclass, and what a field stores for each value it is given.

A tensorclass is defined with flags (``@tensorclass(autocast=True)``,
``class Foo(TensorClass, nocast=True)`` or ``class Foo(TensorClass["nocast"])``):

- no flag: tensors and tensor collections are stored as they are; Python numbers
  and numpy arrays become tensors; a list goes to the tensordict, which decides;
  every other value (a string, a complex number, a tuple, a dict, any object) is
  a :class:`NonTensorData` entry read back as the value. A Python number given to
  a field annotated ``int``, ``float`` or ``bool`` (or an optional or union of
  these) becomes a 0-d tensor with a ``FutureWarning`` when the batch size is
  empty, and is kept as a Python value otherwise (a 0-d tensor would not fit);
- ``nocast``: Python numbers and numpy arrays are kept as they are;
- ``autocast``: the value is converted to the field's annotation when it is a
  class (``int(value)``, ``str(value)``, ``torch.as_tensor(value)``, a dict to a
  tensordict or tensorclass ``from_dict``, a tensordict to the annotated
  tensorclass when its keys are fields); other annotations (``Any``,
  ``Optional[...]``, ...) keep numbers as tensors and other values as they are;
- ``tensor_only``: every annotation must be a tensor type, a tensor collection or
  an optional or union of these (checked when the class is defined);
- ``frozen``: no attribute can be assigned after ``__init__``, which locks the
  tensordict; a frozen class and a non-frozen one cannot inherit from each other;
- ``shadow``: a field may be named like a tensordict method or attribute (the
  field hides it);
- ``skip_post_init_on_rebuild``: ``__post_init__`` does not run when a new
  instance is made from an existing one (indexing, ``clone``, ...), which is
  what every tensorclass of this package does anyway.

``autocast``, ``nocast`` and ``tensor_only`` are exclusive.

The names without a leading underscore are this module's protocol with the other
modules of :mod:`tensordict._tensorclass`; a class carries its flags as the class
attributes ``_tc_<flag>``.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from tensordict._collection import is_plain_mapping, is_tensor_collection
from tensordict._nontensor import NonTensorData, NonTensorDataBase
from tensordict.base import TensorDictBase
from tensordict.errors import ClassFlagError, FieldCastError, warn

FLAGS = ("autocast", "nocast", "frozen", "tensor_only", "shadow", "skip_post_init_on_rebuild")
"""The flags a tensorclass accepts, as ``TensorClass[...]`` items and class keywords."""

_EXCLUSIVE = ("autocast", "nocast", "tensor_only")
_SCALARS = {int: (int,), float: (int, float), bool: (bool,)}


def check_flags(name: str, flags: dict) -> None:
    """Raises ``ClassFlagError`` if more than one of the exclusive flags is set for class ``name``."""
    chosen = [flag for flag in _EXCLUSIVE if flags.get(flag)]
    if len(chosen) > 1:
        msg = (
            f"{name}: the flags {chosen[0]} and {chosen[1]} are exclusive (autocast, nocast "
            "and tensor_only each say how values are cast); pick one"
        )
        raise ClassFlagError(msg)


def parse_flag_items(owner: str, item: str | tuple) -> tuple:
    """The flags named by ``TensorClass[item]``; ``ClassFlagError`` for anything else."""
    items = item if isinstance(item, tuple) else (item,)
    for flag in items:
        if not isinstance(flag, str) or flag not in FLAGS:
            msg = (
                f"{owner}[...] takes flag names, one or more of {list(FLAGS)}; got {flag!r}"
                f" in {items!r}"
            )
            raise ClassFlagError(msg)
    return items


def is_flag_item(item: Any) -> bool:
    """True if ``item`` (of ``Cls[item]``) is one flag name or a tuple of flag names."""
    items = item if isinstance(item, tuple) else (item,)
    return all(isinstance(flag, str) and flag in FLAGS for flag in items)


# ====================================================================== annotations
def field_hints(cls: type) -> dict:
    """Field name to its annotation, resolved once (on first use) and cached on ``cls``.

    Each annotation is resolved on its own, in the namespace of the class that
    declares it, with the class's own name bound to the class (a field annotated with
    the name of a class local to a function, say). One that cannot be resolved counts
    as ``typing.Any``; the others keep their meaning.
    """
    hints = cls.__dict__.get("_tc_hints")
    if hints is None:
        # The class body's names, not those the decorator installed: ``x: int`` means
        # the builtin, not the ``int()`` cast every tensorclass has.
        installed = getattr(cls, "_tc_installed", frozenset())
        local = {}
        for klass in reversed(cls.__mro__):
            local.update((k, v) for k, v in vars(klass).items() if k not in installed)
        local.setdefault(cls.__name__, cls)
        declared = {}
        for klass in reversed(cls.__mro__):
            module = sys.modules.get(getattr(klass, "__module__", None))
            namespace = vars(module) if module is not None else {}
            for name, hint in vars(klass).get("__annotations__", {}).items():
                declared[name] = (hint, namespace)
        hints = {}
        for field in dataclasses.fields(cls):
            hint, namespace = declared.get(field.name, (field.type, {}))
            hints[field.name] = _resolve(hint, namespace, local)
        type.__setattr__(cls, "_tc_hints", hints)
    return hints


def _resolve(hint, namespace: dict, local: dict):
    """The annotation ``hint`` (a string when postponed) evaluated, or ``typing.Any``."""
    # A quoted annotation in a module with postponed annotations is a string twice over.
    for _ in range(2):
        if not isinstance(hint, str):
            return hint
        try:
            # what typing.get_type_hints does with one postponed annotation
            hint = eval(hint, dict(namespace), local)  # noqa: S307
        except Exception:  # noqa: BLE001 - any failure to resolve means "unknown"
            return typing.Any
    return typing.Any if isinstance(hint, str) else hint


def _union_args(hint) -> tuple | None:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return None


def _scalar_types(cls, name: str) -> tuple:
    """The Python number types whose values the default cast warns about for field ``name``."""
    hint = field_hints(cls).get(name, typing.Any)
    args = _union_args(hint)
    members = args if args is not None else (hint,)
    found = ()
    for member in members:
        if member not in _SCALARS:
            return ()
        found += _SCALARS[member]
    return found


_TENSOR_TYPE = type(torch.IntTensor)  # the metaclass of the legacy torch.IntTensor, ...


def _is_tensorish(hint) -> bool:
    if hint is typing.Any:
        return False
    args = _union_args(hint)
    if args is not None:
        return bool(args) and all(_is_tensorish(a) for a in args)
    if isinstance(hint, _TENSOR_TYPE):
        return True  # torch.IntTensor, torch.LongTensor, ...: tensors of one dtype
    origin = typing.get_origin(hint)  # TensorDict[str, torch.Tensor] is a TensorDict
    hint = hint if origin is None else origin
    return isinstance(hint, type) and (issubclass(hint, torch.Tensor) or is_tensor_collection(hint))


def _annotated_classes(hint) -> tuple:
    """The classes an annotation names: its members for a union, its origin for a generic."""
    args = _union_args(hint)
    members = args if args is not None else (hint,)
    found = ()
    for member in members:
        member = typing.get_origin(member) or member
        if isinstance(member, type):
            found += (member,)
    return found


def check_tensor_only(cls: type) -> None:
    """Raises ``ClassFlagError`` if a field of a ``tensor_only`` class is not annotated with a tensor type."""
    for name, hint in field_hints(cls).items():
        if not _is_tensorish(hint):
            msg = (
                f"{cls.__name__} is tensor_only, but its field {name!r} is annotated {hint!r}: "
                "annotate it torch.Tensor, a tensordict or tensorclass type, or an optional "
                "of these, or drop the tensor_only flag"
            )
            raise ClassFlagError(msg)


# ====================================================================== casting
def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, np.ndarray, np.bool_, np.integer, np.floating))


def stored_value(cls: type, name: str, value: Any, batch_dims: int) -> Any:
    """What the field ``name`` of ``cls`` stores for ``value`` (``None``: no entry).

    Args:
        cls (type): the tensorclass.
        name (str): the field.
        value: the value given to the field.
        batch_dims (int): the number of batch dimensions of the instance.

    Raises:
        FieldCastError: with ``autocast``, if the value cannot be cast to the annotation.
    """
    if value is None:
        return None
    if cls._tc_autocast:
        return _autocast(cls, name, value)
    if isinstance(value, (torch.Tensor, NonTensorDataBase)) or is_tensor_collection(value):
        return value
    if isinstance(value, Mapping):
        if cls._tc_tensor_only:
            return _tensor_only_mapping(cls, name, value)
        return NonTensorData(value)  # a dict is a value of the field, not a sub-tensordict
    if _is_number(value):
        if cls._tc_nocast:
            return NonTensorData(value)
        if cls._tc_tensor_only:
            return value
        scalars = _scalar_types(cls, name)
        if scalars and isinstance(value, scalars):
            if batch_dims:
                return NonTensorData(value)  # a 0-d tensor would not fit the batch size
            msg = (
                f"the {type(value).__name__} given to the field {name!r} of {cls.__name__} "
                "becomes a 0-d tensor; from version 0.17 of the well-known API, fields "
                "annotated int, float or bool keep the Python value. Annotate the field "
                "torch.Tensor to keep the tensor, or pass the nocast flag to keep the value now"
            )
            warn(msg, FutureWarning)
        return value  # the tensordict turns it into a tensor
    if isinstance(value, list):
        return value  # the tensordict decides what a list becomes
    return NonTensorData(value)


def cast_fields(obj: Any, names: Iterable[str]) -> None:
    """Casts the fields ``names`` of ``obj`` to their annotations, as the constructor of an ``autocast`` class does.

    For an instance made from a tensordict built from a dict (``from_dict_instance``), whose
    numbers became tensors on the way; a class without ``autocast`` keeps them as they are.

    Args:
        obj: the tensorclass instance.
        names (iterable of str): the fields to cast.

    Raises:
        FieldCastError: if a value cannot be cast to its annotation.
    """
    if not type(obj)._tc_autocast:
        return
    for name in names:
        obj._set_field(name, getattr(obj, name))


def _tensor_only_mapping(cls, name: str, value: Mapping):
    """What a ``tensor_only`` field stores for a dict: a sub-tensordict if it is annotated so."""
    classes = _annotated_classes(field_hints(cls).get(name, typing.Any))
    if any(issubclass(c, NonTensorDataBase) for c in classes):
        return NonTensorData(value)
    if any(is_tensor_collection(c) for c in classes):
        # The tensordict makes each level of the dict a sub-tensordict of its batch size,
        # and keeps the tensordicts found in it.
        return dict(value)
    return NonTensorData(value)


def keeps_non_tensor(cls: type, name: str) -> bool:
    """True when reading the field ``name`` of ``cls`` gives its :class:`NonTensorData`, not the value.

    A ``tensor_only`` field annotated ``NonTensorData`` holds the entry itself.
    """
    if not cls._tc_tensor_only:
        return False
    classes = _annotated_classes(field_hints(cls).get(name, typing.Any))
    return any(issubclass(c, NonTensorDataBase) for c in classes)


def _autocast(cls, name: str, value):
    hint = field_hints(cls).get(name, typing.Any)
    target = hint if isinstance(hint, type) else typing.Any
    if target is typing.Any:
        if isinstance(value, torch.Tensor) or is_tensor_collection(value) or _is_number(value):
            return value
        return NonTensorData(value)
    if is_tensor_collection(target):
        return _cast_to_collection(cls, name, value, target)
    try:
        if issubclass(target, torch.Tensor):
            if isinstance(value, target) or is_tensor_collection(value):
                return value
            cast = torch.as_tensor(value)
            return cast if target is torch.Tensor else target(cast)
        if isinstance(value, target) and not isinstance(value, NonTensorDataBase):
            cast = value
        elif target is np.ndarray:
            cast = np.asarray(value)
        else:
            cast = target(value)
    except (TypeError, ValueError) as err:
        msg = (
            f"cannot cast the value given to the field {name!r} of {cls.__name__} to its "
            f"annotation {target.__name__}: {err}"
        )
        raise FieldCastError(msg) from err
    return NonTensorData(cast)


def _cast_to_collection(cls, name: str, value, target):
    if isinstance(value, target):
        return value
    if is_plain_mapping(value):
        return target.from_dict(dict(value), auto_batch_size=False)
    fields = getattr(target, "_tc_field_set", None)
    if isinstance(value, TensorDictBase) and fields is not None:
        # A tensordict with keys that the tensorclass does not declare stays a tensordict.
        if all(key in fields for key in value.keys()):
            return target.from_tensordict(value)
        return value
    if is_tensor_collection(value):
        return value
    msg = (
        f"cannot cast the {type(value).__name__} given to the field {name!r} of "
        f"{cls.__name__} to its annotation {target.__name__}: give a dict or a tensordict"
    )
    raise FieldCastError(msg)
