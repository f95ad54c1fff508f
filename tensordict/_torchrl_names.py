"""Private names kept for torchrl: the reference's helpers that torchrl imports.

torchrl (the largest client of tensordict) imports a few private names from
``tensordict.base`` and ``tensordict.utils``. They are not part of our API; they are
defined here, each small and with the reference's meaning, and re-exported at the
import paths torchrl uses (``tensordict.base._NESTED_TENSORS_AS_LISTS``,
``tensordict.utils._zip_strict``, ...). New code uses the public names
(``default_is_leaf``, ``is_leaf_nontensor``, ``unravel_key_to_tuple``, ...).

This module sits in the bottom layer: it imports only errors, keys, the collection flag
and index normalisation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch

from tensordict._collection import default_is_leaf, is_leaf_nontensor
from tensordict._indexing import batch_size_from_dummy, normalize_index
from tensordict._keys import unravel_key

__all__ = [
    "NESTED_TENSORS_AS_LISTS",
    "getitem_batch_size",
    "is_non_tensor_class",
    "is_tensorclass_class",
    "maybe_correct_neg_dim",
    "unravel_key_to_tuple_or_empty",
    "zip_strict",
]


class _NestedTensorsAsLists:
    """The ``is_leaf`` marker that asks to walk the members of lazy stacks (kept for torchrl).

    Called on a class it answers as :func:`default_is_leaf`; it is falsy, so code that
    tests ``if is_leaf:`` takes the default path. torchrl compares ``is_leaf`` with it by
    identity, so there is one instance.
    """

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __call__(self, cls: type) -> bool:
        return default_is_leaf(cls)

    def __repr__(self) -> str:
        return "_NESTED_TENSORS_AS_LISTS"

    def __reduce__(self):
        return (_NestedTensorsAsLists, ())


NESTED_TENSORS_AS_LISTS = _NestedTensorsAsLists()
"""``tensordict.base._NESTED_TENSORS_AS_LISTS`` (kept for torchrl)."""

# kept for torchrl: the reference's private spellings of the public is_leaf functions
DEFAULT_IS_LEAF = default_is_leaf
IS_LEAF_NONTENSOR = is_leaf_nontensor


def zip_strict(*iterables: Iterable) -> Iterator[tuple]:
    """``zip(..., strict=True)``: raises ValueError when the lengths differ (kept for torchrl).

    Examples:
        >>> list(zip_strict([1, 2], "ab"))
        [(1, 'a'), (2, 'b')]
    """
    return zip(*iterables, strict=True)


def unravel_key_to_tuple_or_empty(key: Any) -> tuple:
    """A nested key as a flat tuple of strings, ``()`` for anything else (kept for torchrl).

    Examples:
        >>> unravel_key_to_tuple_or_empty(("a", ("b", "c"))), unravel_key_to_tuple_or_empty(0)
        (('a', 'b', 'c'), ())
    """
    if not isinstance(key, (str, tuple)):
        return ()
    try:
        flat = unravel_key(key)
    except (TypeError, ValueError):
        return ()
    return (flat,) if isinstance(flat, str) else flat


def getitem_batch_size(batch_size: torch.Size, index: Any) -> torch.Size:
    """The shape that indexing a tensor of shape ``batch_size`` with ``index`` gives (kept for torchrl).

    Examples:
        >>> getitem_batch_size(torch.Size([3, 4]), (slice(None), None, 0))
        torch.Size([3, 1])
    """
    batch_size = torch.Size(batch_size)
    index, new_size = normalize_index(index, batch_size)
    return new_size if new_size is not None else batch_size_from_dummy(batch_size, index)


def maybe_correct_neg_dim(dim: int, shape: torch.Size | None, ndim: int | None = None) -> int:
    """A dim counted from the end made positive; IndexError when out of range (kept for torchrl).

    Examples:
        >>> maybe_correct_neg_dim(-1, torch.Size([2, 3]))
        1
    """
    if ndim is None:
        ndim = len(shape)
    positive = dim + ndim if dim < 0 else dim
    if not 0 <= positive < ndim:
        where = f"shape {shape}" if shape is not None else f"{ndim} batch dims"
        msg = f"dim {dim} is out of range for a tensordict with {where}"
        raise IndexError(msg)
    return positive


def is_non_tensor_class(cls: type) -> bool:
    """Whether the class ``cls`` is a non-tensor entry class (kept for torchrl).

    Examples:
        >>> is_non_tensor_class(torch.Tensor)
        False
    """
    return getattr(cls, "_is_non_tensor", False) is True


def is_tensorclass_class(cls: type) -> bool:
    """Whether the class ``cls`` is a tensorclass (kept for torchrl).

    Examples:
        >>> is_tensorclass_class(torch.Tensor)
        False
    """
    return getattr(cls, "_is_tensorclass", False) is True
