"""Index normalisation for the batch dimensions.

A tensordict is indexed on its batch dimensions only; each leaf has extra
feature dimensions on the right. An index that torch would apply to a leaf must
therefore be rewritten so that it never reaches a feature dimension: an
``Ellipsis`` is expanded to the batch dimensions it stands for, and an index that
consumes more dimensions than the batch has is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from tensordict._typing import IndexType
from tensordict.errors import DimensionError, IndexTypeError, SplitSizeError

_SIMPLE = (int, slice)


def check_split_size(split_size: int | Sequence[int]) -> None:
    """Refuses an int ``split_size`` that is not positive, as every ``split`` of a batch does.

    Raises:
        SplitSizeError: naming the size (a ``ValueError`` and a ``RuntimeError``).
    """
    if type(split_size) is int and split_size <= 0:
        msg = f"split(): split_size must be positive, got {split_size}"
        raise SplitSizeError(msg)


def _dims_consumed(item) -> int:
    """How many batch dimensions one index item consumes."""
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, torch.Tensor):
        if item.dtype is torch.bool:
            return max(item.ndim, 1) if item.ndim else 0
        return 1
    if type(item) is bool:
        return 0
    return 1


def normalize_index(idx: IndexType, batch_size: torch.Size) -> tuple[IndexType, torch.Size | None]:
    """Returns ``(leaf_index, new_batch_size_or_None)`` for indexing the batch dims.

    The new batch size is computed here only when it is cheap and certain
    (ints, slices, ``None``); otherwise ``None`` is returned and the caller reads
    it off an indexed leaf.

    Raises:
        IndexError: if the index reaches past the batch dimensions.
    """
    batch_dims = len(batch_size)
    if type(idx) is not tuple:
        if type(idx) is int:
            if batch_dims == 0:
                msg = f"cannot index a tensordict with batch_size={list(batch_size)} by {idx!r}: it has no batch dimension"
                raise DimensionError(msg)
            size = batch_size[0]
            if not -size <= idx < size:
                msg = f"index {idx} is out of range for batch dimension 0 of size {size}"
                raise DimensionError(msg)
            return idx, batch_size[1:]
        if type(idx) is slice:
            if batch_dims == 0:
                msg = f"cannot slice a tensordict with batch_size={list(batch_size)}: it has no batch dimension"
                raise DimensionError(msg)
            return idx, torch.Size((len(range(*idx.indices(batch_size[0]))),)) + batch_size[1:]
        if idx is Ellipsis:
            return (), batch_size
        if idx is None:
            return None, torch.Size((1,)) + batch_size
        if isinstance(idx, list):
            idx = _list_to_tensor(idx)
        elif isinstance(idx, np.ndarray):
            idx = _array_to_tensor(idx)
        if isinstance(idx, torch.Tensor):
            _check_tensor_index(idx, batch_size, 0)
            return idx, None
        if isinstance(idx, range):
            return torch.tensor(list(idx), dtype=torch.long), None
        if type(idx) is bool:
            return idx, None
        idx = (idx,)
    return _normalize_tuple(idx, batch_size)


def _list_to_tensor(item: list) -> torch.Tensor:
    tensor = torch.as_tensor(item)
    if tensor.dtype is not torch.bool:
        tensor = tensor.long()
    return tensor


def _array_to_tensor(item: np.ndarray) -> torch.Tensor:
    # numpy arrays index as the tensors they convert to (torchrl's samplers hand them out)
    if item.dtype == np.bool_:
        return torch.as_tensor(item)
    if not np.issubdtype(item.dtype, np.integer):
        msg = f"numpy arrays used as indices must hold integers or booleans, got dtype {item.dtype}"
        raise IndexError(msg)
    return torch.as_tensor(item).long()


def _check_tensor_index(item: torch.Tensor, batch_size: torch.Size, dim: int) -> None:
    if item.dtype is torch.bool:
        end = dim + item.ndim
        if end > len(batch_size):
            msg = f"boolean mask of shape {list(item.shape)} reaches past the batch dimensions {list(batch_size)}"
            raise IndexError(msg)
        if item.shape != batch_size[dim:end]:
            msg = f"boolean mask of shape {list(item.shape)} does not match the batch dimensions {list(batch_size[dim:end])} it indexes"
            raise IndexError(msg)
    elif item.is_floating_point() or item.is_complex():
        msg = f"tensors used as indices must be long, int or bool tensors, got dtype {item.dtype}"
        raise IndexError(msg)


def is_first_class_dim(item: object) -> bool:
    """True for a first-class dimension of ``functorch.dim``: it binds a batch dim and removes it.

    The class is recognised by name, so that ``functorch.dim`` is imported only by
    the code that makes such dims.
    """
    klass = type(item)
    return klass.__name__ == "Dim" and klass.__module__.startswith("functorch")


def has_first_class_dim(leaf_index: IndexType) -> bool:
    """True when a normalised index holds a first-class dim."""
    items = leaf_index if type(leaf_index) is tuple else (leaf_index,)
    return any(is_first_class_dim(item) for item in items)


def _numpy_scalar(item: np.generic) -> int:
    if isinstance(item, np.integer):
        return int(item)
    if isinstance(item, np.bool_):
        msg = f"a numpy bool scalar is not a valid index, got {item!r}; use a Python bool or a boolean tensor"
        raise IndexError(msg)
    msg = f"unsupported index item {item!r} of type {type(item).__name__}"
    raise IndexTypeError(msg)


def _normalize_tuple(idx: tuple, batch_size: torch.Size):
    batch_dims = len(batch_size)
    items = []
    consumed = 0
    ellipsis_at = -1
    simple = True
    for item in idx:
        if isinstance(item, list):
            item = _list_to_tensor(item)
        elif isinstance(item, range):
            item = torch.tensor(list(item), dtype=torch.long)
        elif isinstance(item, np.ndarray):
            item = _array_to_tensor(item)
        elif isinstance(item, np.generic):
            item = _numpy_scalar(item)
        if item is Ellipsis:
            if ellipsis_at >= 0:
                msg = "an index can only have a single ellipsis ('...')"
                raise IndexError(msg)
            ellipsis_at = len(items)
        elif not (item is None or type(item) in _SIMPLE):
            if isinstance(item, torch.Tensor):
                simple = False
            elif type(item) is bool:
                simple = False
            elif isinstance(item, int):
                item = int(item)
            elif not is_first_class_dim(item):
                msg = f"unsupported index item {item!r} of type {type(item).__name__}"
                raise IndexTypeError(msg)
        consumed += _dims_consumed(item)
        items.append(item)
    if consumed > batch_dims:
        msg = (
            f"too many indices for a tensordict with batch_size={list(batch_size)}: "
            f"the index {idx!r} uses {consumed} dimensions but there are {batch_dims} batch dimensions"
        )
        raise IndexError(msg)
    if ellipsis_at >= 0:
        items[ellipsis_at : ellipsis_at + 1] = [slice(None)] * (batch_dims - consumed)
    # Check masks and integer bounds against the dimension each item lands on.
    dim = 0
    for item in items:
        if isinstance(item, torch.Tensor):
            _check_tensor_index(item, batch_size, dim)
        elif type(item) is int:
            size = batch_size[dim]
            if not -size <= item < size:
                msg = f"index {item} is out of range for batch dimension {dim} of size {size}"
                raise DimensionError(msg)
        dim += _dims_consumed(item)
    leaf_index = tuple(items)
    if not simple:
        return leaf_index, None
    new = []
    dim = 0
    for item in items:
        if item is None:
            new.append(1)
        elif type(item) is int or is_first_class_dim(item):
            dim += 1
        else:
            new.append(len(range(*item.indices(batch_size[dim]))))
            dim += 1
    new.extend(batch_size[dim:])
    return leaf_index, torch.Size(new)


def batch_size_from_leaf(
    leaf_before: torch.Tensor, leaf_after: torch.Tensor, batch_dims: int
) -> torch.Size:
    """The batch size after indexing, read off one indexed leaf."""
    feature_dims = leaf_before.ndim - batch_dims
    return leaf_after.shape[: leaf_after.ndim - feature_dims]


def batch_size_from_dummy(batch_size: torch.Size, index: IndexType) -> torch.Size:
    """The batch size after indexing, computed on a zero-memory stand-in."""
    return torch.zeros((), dtype=torch.uint8).expand(batch_size)[index].shape


def index_items(leaf_index: IndexType, batch_dims: int) -> list | None:
    """The items of a normalised index, each covering one batch dim or adding one (``None``).

    For indexes that are routed to parts of a tensordict (the members of a lazy
    stack): a mask becomes the long indices of its True elements, one per dim it
    covers, and a 0-dim long tensor an int (torch reads both that way); full
    slices are appended for the batch dims the index leaves out. Returns None for
    a scalar boolean index, which adds a dim instead of indexing one.
    """
    items = list(leaf_index) if type(leaf_index) is tuple else [leaf_index]
    out = []
    for item in items:
        if isinstance(item, torch.Tensor):
            if item.dtype is torch.bool:
                if item.ndim == 0:
                    return None
                out.extend(item.nonzero().unbind(1))
            elif item.ndim == 0:
                out.append(int(item))
            else:
                out.append(item)
        elif type(item) is bool:
            return None
        else:
            out.append(item)
    used = sum(item is not None for item in out)
    out.extend([slice(None)] * (batch_dims - used))
    return out


def result_layout(items: list, skip: int | None = None) -> list:
    """Where each dim of ``tensor[items]`` comes from, by torch's rules.

    ``items`` are :func:`index_items`. Each result dim is labelled ``("dim", d)``
    for batch dim ``d`` kept by a slice, ``("new", k)`` for the ``k``-th ``None``,
    or ``("adv", j)`` for dim ``j`` of the broadcast shape of the tensor indices.
    Ints and first-class dims remove their dim before the tensor indices are
    placed (as torch does), and the tensor indices' dims go where the first of
    them stands when they are adjacent, first otherwise. With ``skip``, the item
    at that position is left out, as if the dim it covers were not indexed at
    all: the layout of the parts that the dim splits the tensordict into.
    """
    labels: list = []
    tensors: list = []
    advanced: list = []
    dim = 0
    nones = 0
    for i, item in enumerate(items):
        if item is None:
            if i != skip:
                labels.append(("new", nones))
            nones += 1
            continue
        if i != skip and not (type(item) is int or is_first_class_dim(item)):
            if isinstance(item, torch.Tensor):
                advanced.append(len(labels))
                tensors.append(item)
                labels.append(None)
            else:
                labels.append(("dim", dim))
        dim += 1
    if not tensors:
        return labels
    block = [("adv", j) for j in range(len(torch.broadcast_shapes(*(t.shape for t in tensors))))]
    first, last = advanced[0], advanced[-1]
    if last - first + 1 == len(advanced):
        return labels[:first] + block + labels[last + 1 :]
    return block + [label for label in labels if label is not None]
