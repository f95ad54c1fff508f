"""``torch.stack`` and ``torch.cat`` of tensordicts: dense, lazy and tensorclass members.

These build concrete classes (a dense :class:`TensorDict`, or a
:class:`LazyStackedTensorDict` when a member is lazy), so they live above the
classes and register themselves in the dispatch table of
:mod:`tensordict._torch_function`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tensordict import _nontensor_stack  # noqa: F401 - registers NonTensorStack's builders
from tensordict._collection import TensorCollection, is_non_tensor
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import cat_entries, stack_entries
from tensordict._ops.batch_dims import cat_dim, same_batch_size
from tensordict._options import lazy_legacy
from tensordict._td import TensorDict
from tensordict._torch_function import implements
from tensordict._unbatched import is_unbatched, stack_unbatched
from tensordict.errors import DimensionError, KeyMismatchError


def _norm_stack_dim(dim: int, ndim: int) -> int:
    if not -ndim - 1 <= dim <= ndim:
        msg = f"stack dimension {dim} is out of range for {ndim} batch dimensions"
        raise DimensionError(msg)
    return dim + ndim + 1 if dim < 0 else dim


def _check_keys(tds, what: str) -> None:
    keys = tds[0]._keys_level()
    for i, td in enumerate(tds[1:], 1):
        other = td._keys_level()
        if other != keys:
            only_first = sorted(set(keys) - set(other))
            only_other = sorted(set(other) - set(keys))
            msg = (
                f"cannot {what} tensordicts with different keys: tensordict 0 alone has {only_first}, "
                f"tensordict {i} alone has {only_other}; use lazy_stack to keep members that differ"
            )
            raise KeyMismatchError(msg)


def _collections(items, what: str) -> list:
    items = list(items)
    if not items:
        msg = f"cannot {what} an empty sequence of tensordicts"
        raise RuntimeError(msg)
    return items


@implements(torch.stack)
def stack(  # noqa: A002 - the well-known API's name
    input: Sequence[TensorCollection], dim: int = 0, *, out: TensorCollection | None = None
) -> TensorCollection:
    """Stacks tensordicts along a new batch dimension ``dim``.

    Every tensordict must have the same keys and batch size; leaves with the same
    key are stacked with ``torch.stack``.

    Args:
        input (sequence of TensorDictBase): the tensordicts (or tensorclass instances).
        dim (int, optional): the position of the new batch dim. Defaults to 0.

    Keyword Args:
        out (TensorDictBase, optional): written into in place and returned. Defaults to None.

    Returns:
        The stacked tensordict (a lazy stack under ``set_lazy_legacy(True)``).

    Raises:
        RuntimeError: if the batch sizes or the keys differ (naming them), or a leaf's
            shapes differ (naming the key).

    Examples:
        >>> tds = [TensorDict({"a": torch.zeros(3)}, [3]) for _ in range(4)]
        >>> torch.stack(tds, 0).batch_size
        torch.Size([4, 3])
    """
    tds = _collections(input, "stack")
    first = tds[0]
    if lazy_legacy() and out is None and not getattr(type(first), "_is_tensorclass", False):
        return LazyStackedTensorDict._stack_members(tds, dim, strict_shape=True)
    if out is None and getattr(type(first), "_is_typed", False):
        return type(first)._combine_members(stack, tds, dim)
    if out is not None and type(out) is not TensorDict:
        out.update_(stack(tds, dim))  # a lazy stack or tensorclass: write through its own path
        return out
    if out is None and type(first) is TensorDict:
        done = _stack_fast(tds, dim)
        if done is not None:
            return done
    if getattr(type(first), "_is_tensorclass", False):
        return type(first)._stack_members(tds, dim, out=out)
    if is_non_tensor(first):
        stacked = stack_entries(tds, dim)
        if out is not None:
            out._replace(stacked)
            return out
        return stacked
    if any(getattr(type(t), "_is_lazy", False) for t in tds):
        return LazyStackedTensorDict._stack_members(tds, dim, out=out, strict_shape=True)
    batch_size = same_batch_size(
        tds, "cannot stack tensordicts with different batch sizes", "tensordict", RuntimeError
    )
    d = _norm_stack_dim(dim, len(batch_size))
    return _stack_dense(tds, d, out, ())


def _stack_fast(tds, dim: int):
    """Stacks plain TensorDicts whose leaves are all tensors; None when another path must decide."""
    first = tds[0]
    batch_size = first._batch_size
    data = first._tensordict
    n = len(data)
    dicts = []
    for td in tds:
        if type(td) is not TensorDict or td._batch_size != batch_size or len(td._tensordict) != n:
            return None
        dicts.append(td._tensordict)
    d = _norm_stack_dim(dim, len(batch_size))
    result = {}
    try:
        for key, value in data.items():
            if type(value) is not torch.Tensor:
                return None
            result[key] = torch.stack([x[key] for x in dicts], d)
    except (KeyError, RuntimeError):
        return None
    new_size = batch_size[:d] + torch.Size((len(tds),)) + batch_size[d:]
    return _result_cls(first)._new_unsafe(result, new_size, first._device, _stacked_names(tds, d))


def _stacked_names(tds, dim: int):
    """The dimension names after stacking at ``dim``: the members' names with an unnamed dim.

    Members whose names differ give no names.
    """
    names = getattr(tds[0], "_names", None)
    if names is None or any(getattr(td, "_names", None) != names for td in tds):
        return None
    return [*names[:dim], None, *names[dim:]]


def _result_cls(first) -> type:
    """The class of a stack or a concatenation: the first tensordict's results' (a user's
    subclass of TensorDict keeps itself), TensorDict for the other classes."""
    return getattr(type(first), "_result_cls", TensorDict)


def _combine_level(tds, out, new_size, names, tensors, entries, nested):
    """One level of a stack or a concatenation, key by key in the first tensordict's order.

    ``tensors(key, values, target)``, ``entries(values)`` and ``nested(key, value, values,
    target)`` combine a tensor leaf, a non-tensor entry and a sub-tensordict; an
    unbatched entry takes ``new_size``. With ``out``, the results are written into its
    entries (``target``) and ``out`` is returned.
    """
    first = tds[0]
    result = {}
    for key, value in first._items_level():
        values = [td._get_str(key, None) for td in tds]
        target = None if out is None else out._get_str(key, None)
        if is_unbatched(value):
            result[key] = stack_unbatched(values, new_size)
        elif isinstance(value, torch.Tensor):
            result[key] = tensors(key, values, target)
        elif is_non_tensor(value):
            result[key] = entries(values)
        else:
            result[key] = nested(key, value, values, target)
    if out is not None:
        return out
    return _result_cls(first)._new_unsafe(result, new_size, first.device, names)


def _stack_dense(tds, d: int, out, prefix: tuple):
    _check_keys(tds, "stack")
    batch_size = tds[0].batch_size
    new_size = batch_size[:d] + torch.Size((len(tds),)) + batch_size[d:]

    def tensors(key, values, target):
        try:
            if target is not None:
                torch.stack(values, d, out=target)
                return target
            return torch.stack(values, d)
        except RuntimeError as err:
            shapes = sorted({tuple(v.shape) for v in values})
            msg = f"cannot stack the entry {prefix + (key,)!r}: its shapes differ across tensordicts ({shapes})"
            raise RuntimeError(msg) from err

    def nested(key, value, values, target):
        if (
            hasattr(value, "_items_level")
            and not getattr(type(value), "_is_lazy", False)
            and all(type(v) is type(value) for v in values)
        ):
            for v in values:
                if v.batch_size != value.batch_size:
                    msg = f"cannot stack the sub-tensordict {prefix + (key,)!r}: batch sizes differ"
                    raise RuntimeError(msg)
            return _stack_dense(values, d, target, prefix + (key,))
        return stack(values, d, out=target)

    names = None if out is not None else _stacked_names(tds, d)
    return _combine_level(
        tds, out, new_size, names, tensors, lambda values: stack_entries(values, d), nested
    )


@implements(torch.cat, torch.concat, torch.concatenate)
def cat(  # noqa: A002 - the well-known API's name
    input: Sequence[TensorCollection], dim: int = 0, *, out: TensorCollection | None = None
) -> TensorCollection:
    """Concatenates tensordicts along an existing batch dimension ``dim``.

    Args:
        input (sequence of TensorDictBase): the tensordicts (or tensorclass instances).
        dim (int, optional): the batch dim to concatenate along. Defaults to 0.

    Keyword Args:
        out (TensorDictBase, optional): written into in place and returned. Defaults to None.

    Returns:
        The concatenated tensordict.

    Raises:
        DimensionError: if ``dim`` is not a batch dimension (an ``IndexError``).
        RuntimeError: if the keys differ, or the batch sizes differ outside ``dim``.

    Examples:
        >>> a = TensorDict({"x": torch.zeros(2, 3)}, [2])
        >>> torch.cat([a, a]).batch_size
        torch.Size([4])
    """
    tds = _collections(input, "concatenate")
    first = tds[0]
    if out is None and getattr(type(first), "_is_typed", False):
        return type(first)._combine_members(cat, tds, dim)
    if getattr(type(first), "_is_tensorclass", False):
        return type(first)._cat_members(tds, dim, out=out)
    if is_non_tensor(first):
        return cat_entries(tds, dim)
    if any(getattr(type(t), "_is_lazy", False) and not is_non_tensor(t) for t in tds):
        return LazyStackedTensorDict._cat_members(tds, dim, out)
    size = first.batch_size
    d = cat_dim(tds, dim, size)
    _check_keys(tds, "concatenate")
    new_size = size[:d] + torch.Size((sum(td.batch_size[d] for td in tds),)) + size[d + 1 :]
    return _combine_level(
        tds,
        out,
        new_size,
        getattr(first, "_names", None),
        lambda key, values, target: (
            torch.cat(values, d, out=target) if target is not None else torch.cat(values, d)
        ),
        lambda values: cat_entries(values, d),
        lambda key, value, values, target: cat(values, d, out=target),
    )
