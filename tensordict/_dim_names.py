"""Where the batch dimension names go when a method changes the batch dimensions.

Every function takes the names before (a list with a str or ``None`` per dim)
and returns the names after, or ``None`` when no dim is named any more, which is
how the classes store "unnamed". The rules are the well-known TensorDict API's:
a dim that survives keeps its name, a new or merged dim has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from tensordict._indexing import is_first_class_dim
from tensordict._typing import IndexType


def clean(names: Iterable[str | None] | None) -> list | None:
    """``names`` (any iterable) as a new list, or None when it is None or names no dim."""
    if names is None:
        return None
    names = list(names)
    return names if any(n is not None for n in names) else None


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


def index(names: Sequence[str | None] | None, leaf_index: IndexType, new_ndim: int) -> list | None:
    """The names after indexing with ``leaf_index`` (a normalised index), for ``new_ndim`` dims.

    Slices keep the name of their dim and ints remove theirs. One tensor index keeps
    the name of the dim it indexes when it is one-dim (a long tensor or a mask); a
    long tensor of ``k`` dims gives ``k`` unnamed dims, except on the first dim,
    where the last of them keeps the name; a mask over several dims gives one
    unnamed dim. Several tensor indices (ints counting among
    them, as in torch) give unnamed dims, placed where they stand when they are
    adjacent and first otherwise.
    """
    if names is None:
        return None
    items = leaf_index if isinstance(leaf_index, tuple) else (leaf_index,)
    tensors = [i for i, item in enumerate(items) if isinstance(item, torch.Tensor)]
    advanced = [i for i, item in enumerate(items) if i in tensors or type(item) is int]
    adjacent = not tensors or advanced == list(range(advanced[0], advanced[-1] + 1))
    out: list = []
    dim = 0
    if len(tensors) <= 1 and adjacent:
        for item in items:
            if item is None:
                out.append(None)
            elif type(item) is int or is_first_class_dim(item):
                dim += 1
            elif type(item) is slice:
                out.append(names[dim])
                dim += 1
            elif item.dtype is torch.bool:
                out.append(names[dim] if item.ndim == 1 else None)
                dim += item.ndim
            elif item.ndim == 1:
                out.append(names[dim])
                dim += 1
            else:
                # several dims from one long index: the well-known API keeps the name
                # (on the last of them) only for an index on the first dim
                keep = [names[dim]] if dim == 0 and item.ndim else []
                out.extend([None] * (item.ndim - len(keep)) + keep)
                dim += 1
        out.extend(names[dim:])
    else:
        kept: list = []  # (position among the items, name) of the dims that survive as they are
        for i, item in enumerate(items):
            if item is None:
                kept.append((i, None))
            elif is_first_class_dim(item):
                dim += 1
            elif i in advanced:
                dim += (
                    item.ndim if isinstance(item, torch.Tensor) and item.dtype is torch.bool else 1
                )
            else:
                kept.append((i, names[dim]))
                dim += 1
        kept.extend((len(items), n) for n in names[dim:])
        unnamed = [None] * (new_ndim - len(kept))
        if adjacent:
            out = [n for i, n in kept if i < advanced[0]] + unnamed
            out += [n for i, n in kept if i > advanced[0]]
        else:
            out = unnamed + [n for _, n in kept]
    if len(out) != new_ndim:
        return None
    return clean(out)
