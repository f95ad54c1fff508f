"""Where the batch dimension names go when a method changes the batch dimensions.

Every function takes the names before (a list with a str or ``None`` per dim)
and returns the names after, or ``None`` when no dim is named any more, which is
how the classes store "unnamed". The rules are the well-known TensorDict API's:
a dim that survives keeps its name, a new or merged dim has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from tensordict._indexing import is_first_class_dim
from tensordict._typing import IndexType
from tensordict.errors import DimNameConflictError


def clean(names: Iterable[str | None] | None) -> list | None:
    """``names`` (any iterable) as a new list, or None when it is None or names no dim."""
    if names is None:
        return None
    names = list(names)
    return names if any(n is not None for n in names) else None


def refine(current: list, names: Sequence) -> list:
    """The names ``refine_names(*names)`` gives dims named ``current``, as ``Tensor.refine_names``.

    An unnamed dim takes the name given (``None`` leaves it unnamed); a named dim
    must be given its own name; one ``...`` keeps the names of the dims it stands
    for. A list of the wrong length is returned as it is, for the caller's count
    check.

    Raises:
        DimNameConflictError: if a dim already named gets another name or ``None``
            (a ``RuntimeError`` and a ``ValueError``).
    """
    names = list(names)
    if Ellipsis in names:
        i = names.index(Ellipsis)
        fill = len(current) - len(names) + 1
        names[i : i + 1] = list(current[i : i + fill]) if fill >= 0 else []
    if len(names) != len(current):
        return names
    out = []
    for dim, (old, new) in enumerate(zip(current, names)):
        if old is not None and new != old:
            msg = (
                f"refine_names: cannot coerce the names {list(current)} with {names}: dim {dim} "
                f"is named {old!r} already (rename() changes names, ... keeps them)"
            )
            raise DimNameConflictError(msg)
        out.append(new)
    return out


def drop(names: Sequence[str | None] | None, dim: int) -> list | None:
    """The names without ``dim`` (unbind, a squeezed dim)."""
    if names is None:
        return None
    return clean(n for i, n in enumerate(names) if i != dim)


def insert(names: Sequence[str | None] | None, dim: int, count: int = 1) -> list | None:
    """The names with ``count`` unnamed dims inserted at ``dim`` (unsqueeze, expand, stack)."""
    if names is None:
        return None
    out = list(names)
    out[dim:dim] = [None] * count
    return clean(out)


def flatten(names: Sequence[str | None] | None, start: int, end: int) -> list | None:
    """The names after merging ``start`` to ``end`` (inclusive): the merged dim has no name."""
    if names is None:
        return None
    return clean([*names[:start], None, *names[end + 1 :]])


def unflatten(names: Sequence[str | None] | None, dim: int, count: int) -> list | None:
    """The names after splitting ``dim`` into ``count`` dims.

    The well-known API keeps the old name on the last of the new dims and leaves the
    others unnamed.
    """
    if names is None:
        return None
    if count == 0:
        return drop(names, dim)
    return clean([*names[:dim], *[None] * (count - 1), *names[dim:]])


_BLOCK = object()  # stands for the tensor indices among the labels of ``index``


def index(names: Sequence[str | None] | None, leaf_index: IndexType, new_ndim: int) -> list | None:
    """The names after indexing with ``leaf_index`` (a normalised index), for ``new_ndim`` dims.

    Slices keep the name of their dim; ints (and first-class dims) remove theirs. The
    tensor indices give one block of dims, named by :func:`_block_names`. As torch
    places the block, it stands where the tensor indices stand when they are adjacent
    (ints, removed first, do not separate them) and first otherwise.
    """
    if names is None:
        return None
    items = leaf_index if isinstance(leaf_index, tuple) else (leaf_index,)
    labels: list = []  # one per result dim outside the block, and a marker per tensor index
    tensors: list = []  # (position among the labels, item, first dim it indexes)
    dim = 0
    for item in items:
        if item is None or type(item) is bool:
            labels.append(None)
        elif type(item) is int or is_first_class_dim(item):
            dim += 1
        elif isinstance(item, torch.Tensor):
            if item.dtype is torch.bool and item.ndim == 0:
                labels.append(None)
                continue
            if item.dtype is not torch.bool and item.ndim == 0:
                dim += 1  # read as an int
                continue
            tensors.append((len(labels), item, dim))
            labels.append(_BLOCK)
            dim += item.ndim if item.dtype is torch.bool else 1
        else:
            labels.append(names[dim])
            dim += 1
    rest = list(names[dim:])
    if not tensors:
        out = labels + rest
    else:
        block = _block_names(names, tensors)
        positions = [t[0] for t in tensors]
        plain = [n for n in labels if n is not _BLOCK]
        if positions == list(range(positions[0], positions[-1] + 1)):
            first = positions[0]
            out = labels[:first] + block + labels[positions[-1] + 1 :] + rest
        else:
            out = block + plain + rest
    if len(out) != new_ndim:
        return None
    return clean(out)


def _block_names(names, tensors: list) -> list:
    """The names of the dims the tensor indices give.

    One one-dim index keeps its dim's name; one long index of several dims gives it
    to its only dim of size other than 1, when it has exactly one (as the well-known
    API does); anything else is unnamed.
    """
    if len(tensors) == 1:
        _, item, dim = tensors[0]
        if item.ndim == 1:
            return [names[dim]]
        if item.dtype is torch.bool:
            return [None]
        wide = [i for i, size in enumerate(item.shape) if size != 1]
        out = [None] * item.ndim
        if len(wide) == 1:
            out[wide[0]] = names[dim]
        return out
    ndim = max(1 if t.dtype is torch.bool else t.ndim for _, t, _ in tensors)
    return [None] * ndim


def check_names(names: Any, batch_size: torch.Size) -> list | None:
    """``names`` checked against ``batch_size``: one per dim, unique; None when none is set.

    Raises:
        ValueError: if there is not one name per dim, or a name repeats.
    """
    if names is None:
        return None
    names = list(names)
    if len(names) != len(batch_size):
        msg = f"names {names} must have one entry per batch dimension ({len(batch_size)})"
        raise ValueError(msg)
    seen = [n for n in names if n is not None]
    if len(seen) != len(set(seen)):
        msg = f"batch dimension names must be unique, got {names}"
        raise ValueError(msg)
    return names if seen else None
