"""Nested tensors as leaves: what torch cannot do on them but a tensordict needs.

A jagged (``torch.jagged``) nested tensor cannot be sliced or indexed by a tensor
along its first dim, which is the batch dim of a tensordict. Those indices are
answered here by picking the components and building a new jagged tensor of them.
"""

from __future__ import annotations

import torch

from tensordict._typing import IndexType


def _whole(item) -> bool:
    return type(item) is slice and item == slice(None)


def nested_index(value: torch.Tensor, index: IndexType) -> torch.Tensor:
    """``value[index]`` for a jagged nested tensor indexed along its first dim.

    Args:
        value (torch.Tensor): a nested tensor of the ``torch.jagged`` layout.
        index: a normalised tensordict index: a slice, a one-dim long or bool tensor, or
            a tuple of one of these followed by whole slices.

    Returns:
        A new jagged nested tensor of the picked components (a copy).

    Raises:
        NotImplementedError: for any other index (on a later dim, a tensor of several
            dims, ``None``), which torch does not support on jagged tensors either.
    """
    items = index if isinstance(index, tuple) else (index,)
    first, rest = items[0], items[1:]
    parts = value.unbind(0)
    if type(first) is slice and all(_whole(r) for r in rest):
        picked = list(parts[first])
    elif isinstance(first, torch.Tensor) and first.ndim == 1 and all(_whole(r) for r in rest):
        positions = first.nonzero().squeeze(-1) if first.dtype is torch.bool else first
        picked = [parts[int(i)] for i in positions]
    else:
        msg = (
            f"cannot index a jagged nested tensor with {index!r}: only an int, a slice or a "
            "one-dim tensor along its first dim is supported"
        )
        raise NotImplementedError(msg)
    return torch.nested.as_nested_tensor(picked, layout=torch.jagged)
