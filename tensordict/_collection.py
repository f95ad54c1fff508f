"""What every layer may ask of a value: is it a tensor collection? and the missing-default marker.

A *tensor collection* is a tensordict, a tensorclass instance or a non-tensor
entry. Each such class says so with the class flag ``_is_tensor_collection``, so
that the bottom layers (storage, the operation mixins) recognise collections
without importing the classes that define them.

:class:`TensorCollection` is the abstract base class of the tensordicts and of
the subclasses of ``TensorClass``, for ``isinstance`` checks and type hints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from tensordict.errors import AbstractClassError


class _NoDefault:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __bool__(self) -> bool:
        return False


NO_DEFAULT = _NoDefault()
"""Passed as ``default`` to say "raise instead of returning a default"."""


class TensorCollection:
    """The abstract base class of every tensordict and of every ``TensorClass`` subclass.

    Use it in ``isinstance`` checks and type hints meaning "a tensordict or a
    tensorclass". It cannot be instantiated. A class decorated with
    ``@tensorclass`` does not inherit from it (only subclasses of ``TensorClass``
    do); :func:`is_tensor_collection` recognises both.

    Raises:
        AbstractClassError: when instantiated (a ``NotImplementedError``).

    Examples:
        >>> isinstance(TensorDict(), TensorCollection)
        True
        >>> isinstance(torch.zeros(2), TensorCollection)
        False
        >>> TensorCollection()
        Traceback (most recent call last):
            ...
        tensordict.errors.AbstractClassError: TensorCollection is an abstract base class ...
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        msg = (
            f"TensorCollection is an abstract base class and cannot be instantiated "
            f"(called through {type(self).__name__}); build a TensorDict or a TensorClass "
            "subclass instead"
        )
        raise AbstractClassError(msg)


def is_tensor_collection(datatype: Any) -> bool:
    """Returns True if ``datatype`` (a class or an instance) is a tensordict, a tensorclass or a non-tensor entry.

    Args:
        datatype: a class, or an object whose class is checked.

    Returns:
        True for tensor collections, False for everything else (tensors included).

    Examples:
        >>> is_tensor_collection(TensorDict({}, []))
        True
        >>> is_tensor_collection(torch.zeros(2))
        False
    """
    if isinstance(datatype, torch.Tensor):  # the common case, and a failed getattr is slow
        return False
    cls = datatype if isinstance(datatype, type) else type(datatype)
    return getattr(cls, "_is_tensor_collection", False) is True


def is_plain_mapping(value: Any) -> bool:
    """True for a mapping that is not a tensor collection (a ``dict`` of entries, say).

    A tensordict is a ``MutableMapping`` too; the code that reads a mapping as a
    source of nested entries asks this, so that tensordicts keep their own path.
    """
    return isinstance(value, Mapping) and not is_tensor_collection(value)


def default_is_leaf(cls: type) -> bool:
    """Returns True if ``cls`` is a leaf type: anything but a tensordict, a tensorclass or a non-tensor entry.

    The default ``is_leaf`` of :meth:`~tensordict.TensorDictBase.keys` and the methods
    that walk nested entries: with ``leaves_only=True`` they skip non-tensor entries.

    Args:
        cls (type): the type of an entry.

    Returns:
        bool: whether entries of that type are leaves.

    Examples:
        >>> default_is_leaf(torch.Tensor), default_is_leaf(TensorDict)
        (True, False)
    """
    return getattr(cls, "_is_tensor_collection", False) is not True


def is_non_tensor(data: Any) -> bool:
    """Returns True if ``data`` is a non-tensor entry: a NonTensorData, a MetaData or a NonTensorStack.

    Each of these classes sets the class flag ``_is_non_tensor``; the flag is read
    from the object's type, so a class passed here is not itself non-tensor data.

    Args:
        data: any object, typically a value read with ``td.get(key)``.

    Returns:
        True for non-tensor entries, False for everything else (tensors,
        tensordicts, classes, plain Python values).

    Examples:
        >>> td = TensorDict({"x": torch.zeros(2), "name": "a"}, [2])
        >>> is_non_tensor(td.get("name")), is_non_tensor(td.get("x")), is_non_tensor("a")
        (True, False, False)
    """
    if isinstance(data, torch.Tensor):  # the common case, and a failed getattr is slow
        return False
    return getattr(type(data), "_is_non_tensor", False) is True


def is_leaf_nontensor(cls: type) -> bool:
    """Returns True if the class ``cls`` is a tensor class or a non-tensor entry class.

    Pass it as ``is_leaf`` to ``keys()``, ``items()`` and the other methods that walk
    nested entries, so that non-tensor entries are listed beside the tensors
    instead of being skipped. Tensordicts and tensorclasses are not leaves; nor is
    a class that is neither a tensor nor a tensor collection (``int``).

    Args:
        cls (type): the class of an entry, such as ``type(td.get(key))``.

    Returns:
        True for ``torch.Tensor`` and its subclasses and for the non-tensor classes.

    Raises:
        TypeError: if ``cls`` is not a class.

    Examples:
        >>> is_leaf_nontensor(torch.Tensor), is_leaf_nontensor(NonTensorData), is_leaf_nontensor(TensorDict)
        (True, True, False)
        >>> td = TensorDict({"a": {}, "b": "text", "c": torch.zeros(())}, [])
        >>> sorted(td.keys(leaves_only=True, is_leaf=is_leaf_nontensor))
        ['b', 'c']
    """
    if issubclass(cls, torch.Tensor):
        return True
    return getattr(cls, "_is_non_tensor", False) is True
