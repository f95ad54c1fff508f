"""Registers tensordicts (and the ``LinkedList`` values of stacks) with ``torch.utils._pytree``, so that ``tree_map`` walks their leaves."""

from __future__ import annotations

from torch.utils import _pytree

from tensordict._nontensor_stack import LinkedList
from tensordict._td import TensorDict


def _flatten(td: TensorDict):
    keys = list(td._tensordict.keys())
    return [td._tensordict[k] for k in keys], (keys, td.batch_size, td.device, td.names)


def _unflatten(values, context) -> TensorDict:
    keys, batch_size, device, names = context
    return TensorDict._new_unsafe(dict(zip(keys, values)), batch_size, device, names)


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
