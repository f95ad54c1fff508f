"""Registers tensordicts (and the ``LinkedList`` values of stacks) with ``torch.utils._pytree``, so that ``tree_map`` walks their leaves."""

from __future__ import annotations

import torch
from torch.utils import _pytree

from tensordict._collection import is_tensor_collection
from tensordict._nontensor_stack import LinkedList
from tensordict._td import TensorDict


def _flatten(td: TensorDict):
    keys = list(td._tensordict.keys())
    return [td._tensordict[k] for k in keys], (keys, td.batch_size, td.device, td.names)


def _unflatten(values, context) -> TensorDict:
    keys, batch_size, device, names = context
    shapes = [
        tuple(v.shape) for v in values if isinstance(v, torch.Tensor) or is_tensor_collection(v)
    ]
    if any(s[: len(batch_size)] != tuple(batch_size) for s in shapes):
        batch_size, names = _batch_of_new_leaves(shapes, batch_size), None
    return TensorDict._new_unsafe(dict(zip(keys, values)), batch_size, device, names)


def _batch_of_new_leaves(shapes: list, batch_size: torch.Size) -> torch.Size:
    """The batch size of a tensordict rebuilt over leaves that do not start with its old one.

    ``torch.func``'s ``jacrev``, ``jacfwd`` and ``hessian`` rebuild the structure of their
    inputs and outputs over new leaves: basis vectors with one more leading dim, or jacobians
    whose dims follow the output's. The new batch size is the leading dims all leaves share,
    no more than the old number of batch dims, plus one when every leaf carries the old
    batch size after one extra leading dim (the basis dim). A leaf without a feature dim
    can make the basis dim look like a batch dim: give such leaves one.
    """
    ndim = len(batch_size)
    extra = all(s[1 : ndim + 1] == tuple(batch_size) for s in shapes)
    longest = min(min(len(s) for s in shapes), ndim + extra)
    common = 0
    while common < longest and all(s[common] == shapes[0][common] for s in shapes):
        common += 1
    return torch.Size(shapes[0][:common])


def _flatten_with_keys(td: TensorDict):
    values, context = _flatten(td)
    return [(_pytree.MappingKey(k), v) for k, v in zip(context[0], values)], context


_pytree.register_pytree_node(
    TensorDict,
    _flatten,
    _unflatten,
    flatten_with_keys_fn=_flatten_with_keys,
    serialized_type_name="tensordict.TensorDict",
)


# The values of a NonTensorStack read with td[key]: a list, walked item by item (tree_map
# gives back a plain list, no longer linked to the stack).
_pytree.register_pytree_node(
    LinkedList,
    lambda values: (list(values), None),
    lambda values, context: list(values),
    flatten_with_keys_fn=lambda values: (
        [(_pytree.SequenceKey(i), v) for i, v in enumerate(values)],
        None,
    ),
    serialized_type_name="tensordict.LinkedList",
)
