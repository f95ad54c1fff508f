"""Tensordicts and ``torch.func``: ``torch.vmap`` over tensordicts, and pytree helpers.

``torch.vmap`` flattens its inputs and outputs with ``torch.utils._pytree``. A
tensordict flattened that way would come back with its old batch size around
tensors that lost (or gained) the mapped dimension. This module teaches
``torch._functorch.vmap`` to keep tensordicts whole: an input tensordict mapped
along ``in_dim`` enters the function as a tensordict of batched tensors whose
batch size lacks that dimension, and an output tensordict leaves with the mapped
dimension inserted at ``out_dim`` in its batch size and in every leaf. torch has
no public hook for this, so the three functions of ``torch._functorch.vmap`` that
flatten inputs and outputs are replaced at import (by versions that treat
tensordicts as leaves and behave as torch's for everything else), as the
well-known implementation does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch._functorch.vmap as _torch_vmap
from torch._C._functorch import _add_batch_dim, is_batchedtensor
from torch.utils._pytree import (
    SUPPORTED_NODES,
    _broadcast_to_and_flatten,
    tree_flatten,
    tree_unflatten,
)

from tensordict._collection import is_non_tensor, is_tensor_collection
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import NonTensorData

__all__: list[str] = []


class _exclude_td_from_pytree:
    """Kept for torchrl: inside the block, ``torch.utils._pytree`` treats tensordicts as leaves.

    The tensordict classes registered with pytree are unregistered on entry and
    registered again on exit (also through :meth:`set` / :meth:`unset`), so that
    ``tree_map`` hands a whole tensordict to its function.

    Examples:
        >>> from torch.utils._pytree import tree_leaves
        >>> from tensordict.nn.functional_modules import _exclude_td_from_pytree
        >>> td = TensorDict(a=torch.zeros(1), b=torch.ones(1))
        >>> len(tree_leaves(td))
        2
        >>> with _exclude_td_from_pytree():
        ...     tree_leaves(td)[0] is td
        True
        >>> len(tree_leaves(td))
        2
    """

    def __init__(self) -> None:
        self.tdnodes: dict = {}

    def __enter__(self) -> None:
        for node_type in list(SUPPORTED_NODES):
            if isinstance(node_type, type) and is_tensor_collection(node_type):
                self.tdnodes[node_type] = SUPPORTED_NODES.pop(node_type)

    def __exit__(self, *exc_info: object) -> None:
        for node_type, node in self.tdnodes.items():
            SUPPORTED_NODES[node_type] = node
        self.tdnodes = {}

    def set(self) -> None:
        """Treats tensordicts as leaves until :meth:`unset`.

        Examples:
            >>> from tensordict.nn.functional_modules import _exclude_td_from_pytree
            >>> excluded = _exclude_td_from_pytree()
            >>> excluded.set()
            >>> excluded.unset()
        """
        self.__enter__()

    def unset(self) -> None:
        """Registers the tensordict classes with pytree again.

        Examples:
            >>> from tensordict.nn.functional_modules import _exclude_td_from_pytree
            >>> excluded = _exclude_td_from_pytree()
            >>> excluded.set()
            >>> excluded.unset()
        """
        self.__exit__(None, None, None)


# ---------------------------------------------------------------------- vmap over tensordicts
def _is_td_leaf(value) -> bool:
    return is_tensor_collection(value) and not isinstance(value, type)


def _names_without(td, dim: int):
    names = td.names
    if names is None or all(n is None for n in names):
        return None
    return [n for i, n in enumerate(names) if i != dim]


def _names_with(td, dim: int):
    names = td.names
    if names is None or all(n is None for n in names):
        return None
    return [*names[:dim], None, *names[dim:]]


def _finish(out, source):
    if source.is_locked:
        out.lock_()
    return out


def _map_level(td, on_tensor: Callable, on_child: Callable, batch_size, names):
    """A new tensordict of the class of ``td`` with ``on_tensor`` on its tensors and ``on_child``
    on its sub-tensordicts."""
    source = {}
    for key, value in td._items_level():
        if type(value) is NonTensorData:
            source[key] = NonTensorData(data=value.data, batch_size=batch_size, device=value.device)
        elif is_non_tensor(value):
            source[key] = value
        elif is_tensor_collection(value):
            source[key] = on_child(value)
        elif isinstance(value, torch.Tensor):
            source[key] = on_tensor(value)
        else:
            source[key] = value
    return td._new_like(source, torch.Size(batch_size), names=names, device=td.device)


def _add_td_batch_dim(td, in_dim: int, level: int):
    """``td`` as the function under vmap sees it: dim ``in_dim`` of its batch is the mapped one."""
    if getattr(type(td), "_is_tensorclass", False):
        return type(td).from_tensordict(_add_td_batch_dim(td._tensordict, in_dim, level))
    if getattr(td, "_is_lazy", False):
        if in_dim == td.stack_dim:
            # each mapped row is a member: the members must share shapes to be batched together
            return _finish(_add_td_batch_dim(td.contiguous(), in_dim, level), td)
        member_dim = in_dim if in_dim < td.stack_dim else in_dim - 1
        stack_dim = td.stack_dim - 1 if in_dim < td.stack_dim else td.stack_dim
        members = [_add_td_batch_dim(m, member_dim, level) for m in td.tensordicts]
        return _finish(type(td)(*members, stack_dim=stack_dim), td)
    batch_size = [b for i, b in enumerate(td.batch_size) if i != in_dim]
    out = _map_level(
        td,
        lambda x: _add_batch_dim(x, in_dim, level),
        lambda child: _add_td_batch_dim(child, in_dim, level),
        batch_size,
        _names_without(td, in_dim),
    )
    return _finish(out, td)


def _remove_td_batch_dim(name: str, td, level: int, batch_size: int, out_dim: int | None):
    """A tensordict returned under vmap, with the mapped dimension put back at ``out_dim``."""
    if out_dim is None:
        if any(is_batchedtensor(v) for v in td.values(True, True) if isinstance(v, torch.Tensor)):
            msg = f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            raise ValueError(msg)
        return td
    if getattr(type(td), "_is_tensorclass", False):
        return type(td).from_tensordict(
            _remove_td_batch_dim(name, td._tensordict, level, batch_size, out_dim)
        )
    if getattr(td, "_is_lazy", False):
        if out_dim > td.stack_dim:
            stack_dim, member_dim = td.stack_dim, out_dim - 1
        else:
            stack_dim, member_dim = td.stack_dim + 1, out_dim
        members = [
            _remove_td_batch_dim(name, m, level, batch_size, member_dim) for m in td.tensordicts
        ]
        return _finish(type(td)(*members, stack_dim=stack_dim), td)
    shape = list(td.batch_size)
    shape.insert(out_dim, batch_size)
    out = _map_level(
        td,
        lambda x: _torch_vmap._maybe_remove_batch_dim(name, x, level, batch_size, out_dim),
        lambda child: _remove_td_batch_dim(name, child, level, batch_size, out_dim),
        shape,
        _names_with(td, out_dim),
    )
    return _finish(out, td)


def _widen_batch(td, in_dim: int):
    """A shallow copy of ``td`` whose batch size takes in the leading dims its tensors share,
    when that reaches ``in_dim`` (vmap over a dim the leaves have but the batch size lacks)."""
    shapes = [v.shape for v in td.values(True, True) if isinstance(v, torch.Tensor)]
    if not shapes:
        return td
    common = 0
    for dims in zip(*shapes):
        if any(d != dims[0] for d in dims):
            break
        common += 1
    needed = in_dim + 1 if in_dim >= 0 else -in_dim
    if common < needed:
        return td
    widened = td.copy()
    try:
        widened.batch_size = shapes[0][:needed]
    except RuntimeError:
        return td
    return widened


def _process_batched_inputs(in_dims, args: tuple, func) -> tuple:
    name = _torch_vmap._get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        msg = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        raise ValueError(msg)
    if not args:
        msg = f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over a function with no inputs. The latter is unsupported."
        raise ValueError(msg)
    flat_args, args_spec = tree_flatten(args, is_leaf=_is_td_leaf)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        msg = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has structure {args_spec}."
        raise ValueError(msg)
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if in_dim is not None and not isinstance(in_dim, int):
            msg = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but in_dim must be either an integer dimension or None."
            raise ValueError(msg)
        if in_dim is None:
            continue
        if not isinstance(arg, torch.Tensor) and not _is_td_leaf(arg):
            msg = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
            raise ValueError(msg)
        if _is_td_leaf(arg) and not -arg.dim() <= in_dim < arg.dim():
            arg = flat_args[i] = _widen_batch(arg, in_dim)
        ndim = arg.dim()
        if not -ndim <= in_dim < ndim:
            msg = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, but that input has {ndim} (batch) dimensions so expected in_dim to satisfy -{ndim} <= in_dim < {ndim}."
            raise ValueError(msg)
        flat_in_dims[i] = in_dim % ndim
    batch_size = _torch_vmap._validate_and_get_batch_size(flat_in_dims, flat_args)
    return batch_size, flat_in_dims, flat_args, args_spec


# vmap levels whose inputs include a lazy stack mapped along its stack dim: each call sees one
# member, so the tensordicts coming out are lazy stacks of the results again
_MEMBERWISE_LEVELS: set = set()


def _create_batched_inputs(flat_in_dims: list, flat_args: list, vmap_level: int, args_spec) -> Any:
    batched = []
    for in_dim, arg in zip(flat_in_dims, flat_args):
        if getattr(arg, "_is_lazy", False) and in_dim is not None and in_dim == arg.stack_dim:
            _MEMBERWISE_LEVELS.add(vmap_level)
        if _is_td_leaf(arg):
            # a copy either way: what the function writes stays inside the call
            batched.append(
                arg.copy() if in_dim is None else _add_td_batch_dim(arg, in_dim, vmap_level)
            )
        elif in_dim is None:
            batched.append(arg)
        else:
            batched.append(_add_batch_dim(arg, in_dim, vmap_level))
    return tree_unflatten(batched, args_spec)


def _unwrap_batched(batched_outputs, out_dims, vmap_level: int, batch_size: int, func) -> Any:
    name = _torch_vmap._get_name(func)
    flat_outputs, output_spec = tree_flatten(batched_outputs, is_leaf=_is_td_leaf)
    if isinstance(batched_outputs, torch.Tensor) or _is_td_leaf(batched_outputs):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            flat_out_dims = None
    else:
        flat_out_dims = _broadcast_to_and_flatten(out_dims, output_spec)
    if flat_out_dims is None:
        msg = f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has structure {output_spec}."
        raise ValueError(msg)
    memberwise = vmap_level in _MEMBERWISE_LEVELS
    _MEMBERWISE_LEVELS.discard(vmap_level)
    unbatched = []
    for output, out_dim in zip(flat_outputs, flat_out_dims):
        if _is_td_leaf(output):
            out = _remove_td_batch_dim(name, output, vmap_level, batch_size, out_dim)
            if memberwise and out_dim is not None and not getattr(out, "_is_lazy", False):
                out = _finish(LazyStackedTensorDict(*out.unbind(out_dim), stack_dim=out_dim), out)
            unbatched.append(out)
        else:
            unbatched.append(
                _torch_vmap._maybe_remove_batch_dim(name, output, vmap_level, batch_size, out_dim)
            )
    return tree_unflatten(unbatched, output_spec)


_torch_vmap._process_batched_inputs = _process_batched_inputs
_torch_vmap._create_batched_inputs = _create_batched_inputs
_torch_vmap._unwrap_batched = _unwrap_batched
