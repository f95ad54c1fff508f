"""Nested tensors as leaves, and leaves whose shapes differ across a lazy stack's members.

A jagged (``torch.jagged``) nested tensor cannot be sliced or indexed by a tensor
along its first dim, which is the batch dim of a tensordict. Those indices are
answered here by picking the components and building a new jagged tensor of them.

The members of a lazy stack may hold leaves of different shapes under one key;
``get(key, as_list=True)``, ``as_padded_tensor=True`` and ``as_nested_tensor=True``
combine them here (:func:`combine_leaves`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from tensordict._typing import IndexType
from tensordict.errors import ConflictingArgumentsError, PaddingError


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


class ReadAs(NamedTuple):
    """How :meth:`get` combines the leaves of a lazy stack's members whose shapes may differ.

    ``kind`` is ``"list"`` (the leaves as they are), ``"padded"`` (padded to the
    largest size of each dim and stacked) or ``"nested"`` (one nested tensor).
    """

    kind: str
    layout: torch.layout | None = None
    padding_side: str = "right"
    padding_value: float = 0.0


def read_as(
    as_list: bool,
    as_padded_tensor: bool,
    as_nested_tensor: bool,
    layout: torch.layout | None,
    padding_side: str,
    padding_value: float,
) -> ReadAs | None:
    """The :class:`ReadAs` of :meth:`get`'s keyword arguments, or None when none asks for one.

    Raises:
        ConflictingArgumentsError: if more than one of the three flags is set (a ``TypeError``).
        PaddingError: if ``padding_side`` is neither ``"left"`` nor ``"right"`` (a ``RuntimeError``).
    """
    flags = [as_list, as_padded_tensor, as_nested_tensor]
    if not any(flags):
        return None
    if sum(bool(f) for f in flags) > 1:
        msg = "get() takes at most one of as_list, as_padded_tensor and as_nested_tensor"
        raise ConflictingArgumentsError(msg)
    if padding_side not in ("left", "right"):
        msg = f"padding_side must be 'left' or 'right', got {padding_side!r}"
        raise PaddingError(msg)
    kind = "list" if as_list else "padded" if as_padded_tensor else "nested"
    return ReadAs(kind, layout, padding_side, padding_value)


def combine_leaves(key: str, values: list, how: ReadAs) -> Any:
    """The members' leaves at ``key`` (tensors, or what inner stacks gave) combined as ``how`` says.

    Raises:
        ValueError: for a nested tensor of leaves that are nested tensors themselves
            (what the inner stacks of a stack of lazy stacks give).
        RuntimeError: for padding of leaves whose numbers of dims differ.
    """
    if how.kind == "list":
        return values
    if how.kind == "nested":
        if any(isinstance(v, torch.Tensor) and v.is_nested for v in values):
            msg = (
                f"cannot read {key!r} as one nested tensor: the inner stacks of a stack of lazy "
                "stacks give nested tensors, and a nested tensor has one nested level; "
                "use as_padded_tensor=True or as_list=True"
            )
            raise ValueError(msg)
        return torch.nested.nested_tensor(values, layout=how.layout or torch.jagged)
    ndims = {v.ndim for v in values}
    if len(ndims) > 1:
        msg = f"cannot pad the entries {key!r}: their numbers of dims differ ({sorted(ndims)})"
        raise PaddingError(msg)
    size = [max(sizes) for sizes in zip(*(v.shape for v in values))]
    padded = []
    for v in values:
        pads = []
        for have, want in zip(reversed(v.shape), reversed(size)):
            pads += [0, want - have] if how.padding_side == "right" else [want - have, 0]
        padded.append(F.pad(v, pads, value=how.padding_value) if any(pads) else v)
    return torch.stack(padded, 0)
