"""Functions over tensordicts: padding, stacking, merging, grouping and collating.

Each function is a thin layer over the classes (:class:`TensorDict`,
:class:`LazyStackedTensorDict`, tensorclasses) and over :func:`stack`. They sit
at the level of :mod:`tensordict._stack`: nothing below imports this module.

Non-tensor entries (:class:`NonTensorData`, :class:`MetaData`,
:class:`NonTensorStack`) are read as one value per batch element. Where the
elements of a result need values of their own (padding with ``None``, stacking
entries that hold different values), the result is a :class:`NonTensorStack`;
an entry that no function changes is kept as it is.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import default_collate

from tensordict._collection import (
    TensorCollection,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._keys import NestedKey, canonical_key
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import NonTensorData, NonTensorDataBase
from tensordict._nontensor_stack import _from_flat
from tensordict._ops.convert import CONVERTERS
from tensordict._stack import stack
from tensordict._td import TensorDict
from tensordict._tensorclass.decorator import is_tensorclass
from tensordict._typing import DeviceType, ShapeType
from tensordict._unbatched import is_unbatched
from tensordict.base import TensorDictBase
from tensordict.errors import (
    DimensionError,
    EntryTypeError,
    InvalidArgumentError,
    InvalidSourceError,
    KeyMismatchError,
    LockedError,
    MaskError,
    MissingKeyError,
    NotTensorCollectionError,
    PaddingError,
    TooFewInputsError,
)

__all__ = [
    "collate",
    "dense_stack_tds",
    "group_by",
    "make_tensordict",
    "maybe_dense_stack",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
    "unpad_sequence",
]


# ---------------------------------------------------------------------- helpers
def _leaf_keys(td) -> list:
    """The keys of the tensors and non-tensor entries of ``td``, nested ones included."""
    return list(td.keys(include_nested=True, leaves_only=True, is_leaf=is_leaf_nontensor))


def _check_same_kind(entries: list, key, what: str, error: type[Exception]) -> None:
    """Raises ``error`` for an entry that is a non-tensor entry in some inputs and not in others."""
    kinds = [is_non_tensor(e) for e in entries]
    if any(kinds) and not all(kinds):
        i = kinds.index(not kinds[0])
        msg = (
            f"{what} cannot combine the entry {key!r}: input 0 holds a {type(entries[0]).__name__} "
            f"and input {i} a {type(entries[i]).__name__}; make it a non-tensor entry in every "
            "input or in none"
        )
        raise error(msg)


def _as_tuple(key) -> tuple:
    key = canonical_key(key)
    return key if isinstance(key, tuple) else (key,)


def _check_collection(value, what: str, i: int | None = None):
    if not is_tensor_collection(value) or is_non_tensor(value):
        where = what if i is None else f"{what} {i}"
        msg = f"{where} must be a tensordict or a tensorclass instance, got {type(value).__name__}"
        raise NotTensorCollectionError(msg)


def _collections_of(items, func: str, role: str) -> list:
    """``items`` as a list of tensordicts for ``func``: at least one, each a collection."""
    tds = list(items)
    if not tds:
        msg = f"{func} needs at least one tensordict, got an empty sequence"
        raise TooFewInputsError(msg)
    for i, td in enumerate(tds):
        _check_collection(td, f"{func}() {role}", i)
    return tds


def _inner(td):
    """The tensordict that holds a tensorclass instance's data, or ``td`` itself."""
    return td._tensordict if is_tensorclass(td) else td


# ---------------------------------------------------------------------- pad
def _check_pad_size(td, pad_size) -> list:
    """``pad_size`` as one ``(before, after)`` pair per batch dimension."""
    pads = list(pad_size)
    for p in pads:
        if isinstance(p, bool) or not isinstance(p, int):
            msg = f"pad_size must hold ints, got {p!r} in {pad_size!r}"
            raise TypeError(msg)
    if len(pads) % 2:
        msg = f"pad_size must hold an even number of values (before, after per dimension), got {len(pads)}"
        raise PaddingError(msg)
    ndim = td.batch_dims
    if len(pads) > 2 * ndim:
        msg = (
            f"pad_size holds {len(pads)} values, more than 2 * the {ndim} batch dimensions "
            f"of the tensordict allow"
        )
        raise PaddingError(msg)
    pairs = [(pads[i], pads[i + 1]) for i in range(0, len(pads), 2)]
    pairs += [(0, 0)] * (ndim - len(pairs))
    for d, ((before, after), size) in enumerate(zip(pairs, td.batch_size)):
        if size + before + after < 0:
            msg = (
                f"pad ({before}, {after}) on batch dimension {d} of size {size} "
                f"would give a negative size"
            )
            raise PaddingError(msg)
    return pairs


def _pad_tensor(tensor: torch.Tensor, pairs: list, value) -> torch.Tensor:
    if not any(b or a for b, a in pairs):
        return tensor
    flat = [0, 0] * (tensor.ndim - len(pairs))
    for before, after in reversed(pairs):
        flat += [before, after]
    return F.pad(tensor, flat, value=value)


def _pad_non_tensor(entry, pairs: list):
    """A non-tensor entry padded with ``None`` (or cropped): a stack, or ``entry`` when ``pairs`` are all zero.

    The positions of the elements are padded as a tensor (with ``-1``), so the
    values land exactly where the padded tensors put theirs.
    """
    pairs = pairs[: entry.batch_dims]
    if not any(b or a for b, a in pairs):
        return entry
    flat = entry._flat()
    positions = torch.arange(len(flat)).reshape(entry.batch_size)
    positions = _pad_tensor(positions, pairs, -1)
    values = [None if p < 0 else flat[p] for p in positions.reshape(-1).tolist()]
    return _from_flat(values, positions.shape, entry.device)


def _padded_size(size: torch.Size, pairs: list) -> torch.Size:
    return torch.Size(s + b + a for s, (b, a) in zip(size, pairs))


def _pad_copy(td, pairs: list, value):
    """A padded copy of ``td`` (any tensor collection), leaving ``td`` as it is."""
    if is_tensorclass(td):
        return type(td)._from_tensordict(_pad_copy(td._tensordict, pairs, value))
    if getattr(type(td), "_is_lazy", False):
        return maybe_dense_stack(_pad_lazy_members(td, pairs, value), td.stack_dim)
    new_size = _padded_size(td.batch_size, pairs)
    source = {}
    for key, entry in td.items():
        if is_unbatched(entry):  # one payload for the whole batch: nothing to pad
            source[key] = entry.rebatched(new_size)
        else:
            source[key] = _pad_entry(entry, pairs, value)
    names = td.names if td.names is not None and any(n is not None for n in td.names) else None
    return TensorDict(source, batch_size=new_size, device=td.device, names=names)


def _pad_entry(entry, pairs: list, value):
    if isinstance(entry, torch.Tensor):
        return _pad_tensor(entry, pairs, value)
    if is_non_tensor(entry):
        return _pad_non_tensor(entry, pairs)
    extra = [(0, 0)] * (entry.batch_dims - len(pairs))
    return _pad_copy(entry, pairs + extra, value)


def _pad_lazy_members(td, pairs: list, value) -> list:
    """The members of a lazy stack, padded on their own dimensions, with filler members added."""
    d = td.stack_dim
    member_pairs = pairs[:d] + pairs[d + 1 :]
    members = [_pad_copy(m, member_pairs, value) for m in td.tensordicts]
    return _grow_members(members, pairs[d], value)


def _grow_members(members: list, pair: tuple, value) -> list:
    before, after = pair
    n = len(members)
    kept = members[max(0, -before) : n - max(0, -after)]
    template = members[0]
    head = [_filled_like(template, value) for _ in range(max(0, before))]
    tail = [_filled_like(template, value) for _ in range(max(0, after))]
    return head + kept + tail


def _filled_like(td, value):
    """A tensordict with the structure of ``td``, every tensor full of ``value``, non-tensors ``None``."""
    if is_tensorclass(td):
        return type(td)._from_tensordict(_filled_like(td._tensordict, value))
    source = {}
    for key, entry in td.items():
        if isinstance(entry, torch.Tensor):
            source[key] = torch.full_like(entry, value)
        elif is_non_tensor(entry):
            source[key] = NonTensorData(None, entry.batch_size, entry.device)
        else:
            source[key] = _filled_like(entry, value)
    return TensorDict(source, batch_size=td.batch_size, device=td.device)


def _check_unlocked_tree(td) -> None:
    if td.is_locked:
        msg = "cannot pad a locked tensordict in place; call unlock_() first or pass inplace=False"
        raise LockedError(msg)


def _pad_entry_alone(entry, pairs: list, inplace: bool):
    """pad() of a non-tensor entry itself: a stack padded with ``None`` (in place: the same stack)."""
    padded = _pad_non_tensor(entry, pairs)
    if not inplace or padded is entry:
        return padded
    if not hasattr(entry, "_replace"):
        msg = (
            "pad(..., inplace=True) of a NonTensorData cannot preserve the identity of the "
            "entry: padded, it holds None beside its value, which only a NonTensorStack can; "
            "pad it with inplace=False"
        )
        raise PaddingError(msg)
    entry._replace(padded)
    return entry


def _pad_inplace(td, padded) -> None:
    """Moves the entries and batch size of ``padded`` into ``td``, keeping sub-tensordicts."""
    if is_tensorclass(td):
        _pad_inplace(td._tensordict, padded._tensordict if is_tensorclass(padded) else padded)
        return
    names = td.names
    leaves = {}
    for key, entry in list(td.items()):
        new = padded.get(key)
        if isinstance(entry, TensorDict) and isinstance(new, TensorDictBase):
            _pad_inplace(entry, new)
        elif hasattr(entry, "_replace") and is_non_tensor(new) and new is not entry:
            entry._replace(new)  # a stack keeps its identity, as a sub-tensordict does
            leaves[key] = entry
            del td[key]
        else:
            leaves[key] = new
            del td[key]
    td.batch_size = padded.batch_size
    if names is not None and any(n is not None for n in names):
        td.names = names
    for key, new in leaves.items():
        td.set(key, new)


def pad(
    tensordict: TensorCollection,
    pad_size: Sequence[int],
    value: float = 0.0,
    inplace: bool = False,
    safe: bool = True,
) -> TensorCollection:
    """Pads (or crops) every entry of a tensordict along its batch dimensions with a constant.

    Args:
        tensordict (TensorDictBase, tensorclass instance or non-tensor entry): the
            tensordict to pad; a NonTensorStack (or NonTensorData) gives a stack
            holding ``None`` in the new elements.
        pad_size (sequence of int): ``(before_0, after_0, before_1, after_1, ...)``:
            how many elements to add before and after each batch dimension, from
            the first one on (``torch.nn.functional.pad`` starts from the last).
            Dimensions it leaves out are not padded; a negative number removes
            that many elements.
        value (float, optional): the value of the new elements; it is cast to
            each tensor's dtype. A padded non-tensor entry becomes a
            :class:`NonTensorStack` holding ``None`` there. Defaults to ``0.0``.
        inplace (bool, optional): pad ``tensordict`` itself and return it: its
            sub-tensordicts and stacks of values keep their identity and each other
            leaf is replaced by its padded copy. A lazy stack pads its members in place and gains filler
            members (full of ``value``) along its stack dimension. Defaults to
            ``False``.
        safe (bool, optional): accepted for compatibility: ``pad_size`` is
            always checked before anything changes. Defaults to ``True``.

    Returns:
        The padded tensordict: a new :class:`TensorDict` (a new instance for a
        tensorclass, a dense stack when a lazy stack's members allow it), or
        ``tensordict`` itself with ``inplace=True``.

    Raises:
        PaddingError: (a ``RuntimeError``) if ``pad_size`` holds an odd number of
            values, more than two per batch dimension, or a crop larger than the
            dimension; with ``inplace=True``, for a NonTensorData, which cannot hold
            ``None`` beside its value.
        TypeError: if ``pad_size`` holds something other than ints.
        NotTensorCollectionError: (a ``TypeError``) if ``tensordict`` is not a
            tensordict.
        LockedError: if ``inplace=True`` and the tensordict is locked.

    Examples:
        >>> td = TensorDict({"a": torch.ones(3, 4, 1)}, batch_size=[3, 4])
        >>> padded = pad(td, [0, 1, 2, 0], value=-1.0)
        >>> padded.batch_size, padded["a"][:, 0, 0]
        (torch.Size([4, 6]), tensor([-1., -1., -1., -1.]))
        >>> pad(td, [-1, 0])["a"].shape
        torch.Size([2, 4, 1])
    """
    if is_non_tensor(tensordict):
        return _pad_entry_alone(tensordict, _check_pad_size(tensordict, pad_size), inplace)
    _check_collection(tensordict, "pad() input")
    pairs = _check_pad_size(tensordict, pad_size)
    del safe  # every check runs before any entry changes
    if value is None:
        value = 0.0
    if not inplace:
        return _pad_copy(tensordict, pairs, value)
    _check_unlocked_tree(tensordict)
    if getattr(type(tensordict), "_is_lazy", False):
        d = tensordict.stack_dim
        member_pairs = pairs[:d] + pairs[d + 1 :]
        padded = [_pad_copy(m, member_pairs, value) for m in tensordict.tensordicts]
        for member, new in zip(tensordict.tensordicts, padded):
            _pad_inplace(member, new)
        members = _grow_members(list(tensordict.tensordicts), pairs[d], value)
        tensordict.tensordicts[:] = members
        new_size = list(tensordict.tensordicts[0].batch_size)
        new_size.insert(d, len(members))
        tensordict.batch_size = new_size
        return tensordict
    _pad_inplace(tensordict, _pad_copy(tensordict, pairs, value))
    return tensordict


# ---------------------------------------------------------------------- pad_sequence
def _pad_along(tensor: torch.Tensor, dim: int, length: int, value, side: str) -> torch.Tensor:
    missing = length - tensor.shape[dim]
    if not missing:
        return tensor
    flat = [0, 0] * (tensor.ndim - dim - 1)
    flat += [0, missing] if side == "right" else [missing, 0]
    return F.pad(tensor, flat, value=value)


def _padding_values(padding_value, keys: list):
    """``padding_value`` as a function of the key; a mapping may only name existing entries."""
    if not isinstance(padding_value, collections.abc.Mapping):
        return lambda key: padding_value
    values = {_as_tuple(k): v for k, v in padding_value.items()}
    known = {_as_tuple(k) for k in keys}
    unknown = [k for k in values if k not in known]
    if unknown:
        msg = (
            f"padding_value names {sorted(unknown)}, which are no entries of the tensordicts "
            f"(their entries are {sorted(known)})"
        )
        raise MissingKeyError(msg)
    return lambda key: values.get(_as_tuple(key), 0)


def _mask_key(return_mask):
    if return_mask is True:
        return ("masks",)
    if isinstance(return_mask, (str, tuple)):
        return _as_tuple(return_mask)
    msg = f"return_mask must be a bool, a string or a tuple of strings, got {return_mask!r}"
    raise TypeError(msg)


def pad_sequence(
    list_of_tensordicts: Sequence[TensorCollection],
    pad_dim: int = 0,
    padding_value: float | Mapping[NestedKey, float] = 0.0,
    out: TensorCollection | None = None,
    return_mask: bool | NestedKey = False,
    padding_side: str = "right",
) -> TensorCollection:
    """Pads tensordicts to a common length along one dimension and stacks them along a new first one.

    Every tensor entry is padded along ``pad_dim`` to the longest length that
    entry has among the inputs, then the inputs are stacked. When ``pad_dim`` is
    a batch dimension of the samples, their batch size is padded too.

    Args:
        list_of_tensordicts (sequence of TensorDictBase or tensorclass instances):
            the samples, with the same keys and the same number of batch dimensions.
        pad_dim (int, optional): the dimension of each entry to pad, counted from
            its first dimension (batch dimensions included); a negative one counts
            from each entry's last dimension. Defaults to ``0``.
        padding_value (float or Mapping[NestedKey, float], optional): the value of
            the new elements, or one per entry (entries it does not name get ``0``).
            Non-tensor entries are stacked (a :class:`NonTensorStack` unless they are
            equal :class:`MetaData`) and hold ``None`` in padded batch rows.
            Defaults to ``0.0``.
        out (TensorDictBase, optional): a tensordict that receives the result in
            place (it must have every key, with the result's shapes) and is
            returned. Defaults to ``None``.
        return_mask (bool or NestedKey, optional): add, under ``"masks"`` (or the key
            given), a tensordict holding for each tensor entry a boolean mask that is
            True at the positions holding data: of the output's batch size when
            ``pad_dim`` is a batch dimension, else of the output's batch size
            followed by the padded length. Defaults to ``False``.
        padding_side (str, optional): ``"right"`` adds the padding after the data,
            ``"left"`` before it. Defaults to ``"right"``.

    Returns:
        A :class:`TensorDict` (an instance of the inputs' tensorclass for tensorclass
        inputs) of batch size ``[len(list_of_tensordicts), *batch_size]``, or ``out``.

    Raises:
        TooFewInputsError: (a ``RuntimeError``) if there are no tensordicts.
        PaddingError: (a ``RuntimeError``) if an entry is a scalar, shapes differ
            outside ``pad_dim``, the samples' batch sizes differ outside it, an entry
            is a non-tensor entry in some samples only, or ``return_mask`` is set for
            tensorclass inputs.
        KeyMismatchError: (a ``KeyError``) if the samples' keys differ.
        MissingKeyError: (a ``KeyError``) if ``padding_value`` names no entry.
        InvalidArgumentError: (a ``ValueError``) if ``padding_side`` is neither side,
            or a negative ``pad_dim`` lands on batch dimensions of some entries and
            on feature dimensions of others, and an entry is longer than the batch.
        DimensionError: (an ``IndexError``) if ``pad_dim`` is out of range for an entry.
        NotTensorCollectionError: (a ``TypeError``) if a sample is not a tensordict.

    Examples:
        >>> samples = [TensorDict(ids=torch.ones(n, dtype=torch.long)) for n in (2, 3)]
        >>> batch = pad_sequence(samples, padding_value={"ids": 7}, return_mask=True)
        >>> batch["ids"]
        tensor([[1, 1, 7],
                [1, 1, 1]])
        >>> batch["masks", "ids"]
        tensor([[ True,  True, False],
                [ True,  True,  True]])
    """
    tds = _collections_of(list_of_tensordicts, "pad_sequence", "sample")
    if padding_side not in ("left", "right"):
        msg = f"padding_side must be 'left' or 'right', got {padding_side!r}"
        raise InvalidArgumentError(msg)
    tensorclass_type = type(tds[0]) if is_tensorclass(tds[0]) else None
    if tensorclass_type is not None and return_mask is not False:
        msg = (
            "pad_sequence cannot add masks to tensorclass samples (they have no field for them); "
            "pass return_mask=False, or convert the samples with to_tensordict() first"
        )
        raise PaddingError(msg)
    mask_key = _mask_key(return_mask) if return_mask is not False else None
    datas = [_inner(td) for td in tds]
    first = datas[0]
    keys = _leaf_keys(first)
    key_set = set(keys)
    for i, td in enumerate(datas[1:], 1):
        other = set(_leaf_keys(td))
        if other != key_set:
            only_first = sorted(map(str, key_set - other))
            only_other = sorted(map(str, other - key_set))
            msg = (
                f"pad_sequence needs samples with the same keys: sample 0 alone has {only_first}, "
                f"sample {i} alone has {only_other}"
            )
            raise KeyMismatchError(msg)
    for key in keys:
        _check_same_kind([td.get(key) for td in datas], key, "pad_sequence", PaddingError)
    value_of = _padding_values(padding_value, keys)
    ndim = first.batch_dims
    for i, td in enumerate(datas):
        if td.batch_dims != ndim:
            msg = (
                f"pad_sequence needs samples with the same number of batch dimensions: "
                f"sample 0 has {ndim} and sample {i} has {td.batch_dims}"
            )
            raise PaddingError(msg)

    plan = _plan_padding(datas, keys, pad_dim)
    batch_dims = {pos for pos, _ in plan.values() if pos < ndim}
    feature = any(pos >= ndim for pos, _ in plan.values())
    pad_batch = len(batch_dims) == 1 and not feature
    if (len(batch_dims) > 1 or (batch_dims and feature)) and out is None:
        for key, (pos, length) in plan.items():
            if pos < ndim and length > first.batch_size[pos]:
                msg = (
                    f"pad_dim={pad_dim} lands on batch dimensions of some entries and on other "
                    f"dimensions of others, so the batch size cannot be padded, but the entry "
                    f"{key!r} is longer than the batch of the first sample along dimension {pos}"
                )
                raise InvalidArgumentError(msg)
    batch_pos = next(iter(batch_dims)) if pad_batch else None
    if batch_pos is None and not plan and ndim and pad_dim < ndim and -ndim <= pad_dim:
        batch_pos = pad_dim % ndim  # only non-tensor entries: pad them to the longest batch
    sample_size = list(first.batch_size)
    if batch_pos is not None:
        sample_size[batch_pos] = max(td.batch_size[batch_pos] for td in datas)
    for i, td in enumerate(datas):
        for d in range(ndim):
            if d != batch_pos and td.batch_size[d] != first.batch_size[d]:
                msg = (
                    f"pad_sequence cannot stack samples whose batch sizes differ outside the "
                    f"padded dimension: sample 0 has {list(first.batch_size)} and sample {i} "
                    f"has {list(td.batch_size)}"
                )
                raise PaddingError(msg)
    out_size = torch.Size([len(datas), *sample_size])
    result = TensorDict({}, batch_size=out_size, device=first.device)
    for key in keys:
        entries = [td.get(key) for td in datas]
        if is_non_tensor(entries[0]):
            result.set(key, _stack_non_tensor(entries, batch_pos, sample_size, padding_side))
            continue
        pos, length = plan[key]
        padded = []
        for j, entry in enumerate(entries):
            try:
                padded.append(_pad_along(entry, pos, length, value_of(key), padding_side))
            except RuntimeError as err:
                msg = f"pad_sequence cannot pad the entry {key!r} of sample {j}: {err}"
                raise PaddingError(msg) from err
        shapes = {tuple(p.shape) for p in padded}
        if len(shapes) > 1:
            msg = (
                f"pad_sequence cannot stack the entry {key!r}: its shapes differ outside "
                f"dimension {pos} ({sorted(tuple(e.shape) for e in entries)})"
            )
            raise PaddingError(msg)
        result.set(key, torch.stack(padded))
        if mask_key is not None:
            result.set(mask_key + _as_tuple(key), _mask(entries, datas, pos, length, padding_side))
    if tensorclass_type is not None:
        result = tensorclass_type._from_tensordict(result)
    if out is not None:
        out.update_(result)
        return out
    return result


def _plan_padding(datas: list, keys: list, pad_dim: int) -> dict:
    """For each tensor key: the dimension to pad and the length to pad it to."""
    plan = {}
    for key in keys:
        pos = None
        length = 0
        for td in datas:
            entry = td.get(key)
            if is_non_tensor(entry):
                break
            if entry.ndim == 0:
                msg = f"pad_sequence cannot pad the scalar entry {key!r}: it has no dimension"
                raise PaddingError(msg)
            p = pad_dim if pad_dim >= 0 else entry.ndim + pad_dim
            if not 0 <= p < entry.ndim:
                msg = f"pad_dim={pad_dim} is out of range for the entry {key!r} of shape {tuple(entry.shape)}"
                raise DimensionError(msg)
            if pos is not None and p != pos:
                msg = f"pad_dim={pad_dim} lands on different dimensions of the entry {key!r} across samples"
                raise PaddingError(msg)
            pos = p
            length = max(length, entry.shape[p])
        else:
            plan[key] = (pos, length)
    return plan


def _mask(entries: list, datas: list, pos: int, length: int, side: str) -> torch.Tensor:
    masks = []
    for entry, td in zip(entries, datas):
        if pos < td.batch_dims:
            ones = torch.ones(td.batch_size, dtype=torch.bool, device=entry.device)
            masks.append(_pad_along(ones, pos, length, False, side))
        else:
            ones = torch.ones(
                (*td.batch_size, entry.shape[pos]), dtype=torch.bool, device=entry.device
            )
            masks.append(_pad_along(ones, td.batch_dims, length, False, side))
    return torch.stack(masks)


def _stack_non_tensor(entries: list, batch_pos, sample_size: list, side: str):
    """The samples' non-tensor entries, each padded with ``None`` along ``batch_pos``, stacked."""
    padded = []
    for e in entries:
        if batch_pos is not None:
            missing = sample_size[batch_pos] - e.batch_size[batch_pos]
            pairs = [(0, 0)] * batch_pos + [(0, missing) if side == "right" else (missing, 0)]
            e = _pad_non_tensor(e, pairs)
        padded.append(e)
    return stack(padded, 0)


# ---------------------------------------------------------------------- unpad_sequence
def _run(row: torch.Tensor, key) -> tuple:
    """The start and length of the one run of True in a 1-D boolean ``row``."""
    where = row.nonzero().flatten().tolist()
    if not where:
        return 0, 0
    start, stop = where[0], where[-1] + 1
    if stop - start != len(where):
        msg = (
            f"the mask of the entry {key!r} marks positions that are not one contiguous run in a "
            f"row; unpad_sequence keeps one run per row, as pad_sequence's masks mark"
        )
        raise MaskError(msg)
    return start, stop - start


def unpad_sequence(
    padded: TensorCollection,
    mask: TensorCollection | torch.Tensor | None = None,
    *,
    pad_dim: int = 0,
) -> LazyStackedTensorDict:
    """Splits a padded batch back into its variable-length samples: the inverse of :func:`pad_sequence`.

    Each row of ``padded`` keeps, in every tensor entry, the positions its mask
    marks along ``pad_dim`` (one contiguous run per row, on either side).

    Args:
        padded (TensorDictBase): the padded batch, samples along the first dimension.
        mask (TensorDictBase or torch.Tensor, optional): a tensordict of one mask
            per entry, laid out as :func:`pad_sequence` lays them out, or one
            boolean tensor of shape ``[len(padded), max_len]`` used for every entry
            (each entry reads its first positions). Defaults to ``None``: the
            ``"masks"`` entry of ``padded``, which the samples then lack.

    Keyword Args:
        pad_dim (int, optional): the ``pad_dim`` given to :func:`pad_sequence`.
            Defaults to ``0``.

    Returns:
        A :class:`LazyStackedTensorDict` of the samples along its first dimension;
        their entries are views of ``padded``. Non-tensor entries keep their row,
        cut to the sample's batch size.

    Raises:
        InvalidArgumentError: (a ``ValueError``) if ``padded`` has no batch dimension.
        MaskError: (a ``ValueError``) if there is no mask, a tensor mask has another
            shape or is not boolean, or a row's marked positions are not one run.
        MissingKeyError: (a ``KeyError``) if a mask tensordict lacks an entry's mask.
        RuntimeError: if the samples' batch sizes differ (a lazy stack holds members
            of one batch size).

    Examples:
        >>> samples = [TensorDict(a=torch.arange(n)) for n in (2, 3)]
        >>> batch = pad_sequence(samples, return_mask=True, padding_side="left")
        >>> [sample["a"] for sample in unpad_sequence(batch).tensordicts]
        [tensor([0, 1]), tensor([0, 1, 2])]
    """
    _check_collection(padded, "unpad_sequence() input")
    padded = _inner(padded)
    if padded.batch_dims == 0:
        msg = "unpad_sequence needs the samples along the first batch dimension of padded, which has none"
        raise InvalidArgumentError(msg)
    if mask is None:
        if "masks" not in padded.keys():
            msg = "unpad_sequence needs a mask: pass mask=..., or pad with pad_sequence(..., return_mask=True)"
            raise MaskError(msg)
        mask = padded.get("masks")
        padded = padded.exclude("masks")
    keys = _leaf_keys(padded)
    n = padded.batch_size[0]
    sample_dims = padded.batch_dims - 1
    positions = {}
    for key in keys:
        entry = padded.get(key)
        if is_non_tensor(entry):
            continue
        pos = pad_dim if pad_dim >= 0 else entry.ndim - 1 + pad_dim
        if not 0 <= pos < entry.ndim - 1:
            msg = f"pad_dim={pad_dim} is out of range for the entry {key!r} of shape {tuple(entry.shape)}"
            raise DimensionError(msg)
        positions[key] = pos
    if isinstance(mask, torch.Tensor):
        lengths = [padded.get(k).shape[p + 1] for k, p in positions.items()]
        want = [n, max(lengths, default=0)]
        if list(mask.shape) != want or mask.dtype != torch.bool:
            msg = (
                f"a tensor mask must be a boolean tensor of shape [len(padded), max_len] = {want}, "
                f"got {mask.dtype} of shape {list(mask.shape)}"
            )
            raise MaskError(msg)
    runs = {}
    for key, pos in positions.items():
        length = padded.get(key).shape[pos + 1]
        if isinstance(mask, torch.Tensor):
            rows = mask[:, :length]
        else:
            rows = mask.get(key, None)
            if rows is None:
                msg = f"the mask has no entry for the key {key!r} of padded"
                raise MissingKeyError(msg)
            axis = pos + 1 if rows.ndim == padded.batch_dims else rows.ndim - 1
            rows = rows.movedim(axis, -1)
            rows = (rows.flatten(1, -2) if rows.ndim > 2 else rows.unsqueeze(1)).any(1)
        runs[key] = [_run(rows[i], key) for i in range(n)]
    samples = []
    for i in range(n):
        size = list(padded.batch_size[1:])
        # The run of each batch dimension a tensor entry pads: non-tensor entries keep it.
        window = [slice(None)] * sample_dims
        for key, pos in positions.items():
            if pos < sample_dims:
                start, length = runs[key][i]
                size[pos] = length
                window[pos] = slice(start, start + length)
        sample = TensorDict({}, batch_size=size, device=padded.device)
        for key in keys:
            entry = padded.get(key)
            if is_non_tensor(entry):
                sample.set(key, entry[i][tuple(window)] if window else entry[i])
                continue
            start, length = runs[key][i]
            sample.set(key, entry[i].narrow(positions[key], start, length))
        samples.append(sample)
    return LazyStackedTensorDict(*samples, stack_dim=0)


# ---------------------------------------------------------------------- group_by
def _rows(entry, n: int) -> list:
    """The values of a non-tensor entry's ``n`` rows along its first dimension (nested lists below it)."""
    if isinstance(entry, NonTensorDataBase):
        return [entry.data] * n
    return entry.tolist()


def group_by(
    tensordict: TensorCollection, key: NestedKey
) -> tuple[torch.Tensor | list, tuple[TensorCollection, ...]]:
    """Splits a tensordict into groups of rows (along the first batch dimension) that share an entry's value.

    Args:
        tensordict (TensorDictBase or tensorclass instance): the rows, along its
            first batch dimension.
        key (NestedKey): the entry to group by: a tensor (rows with more values
            are compared whole, as ``torch.unique(dim=0)`` does) or a non-tensor
            entry whose values can be hashed and sorted.

    Returns:
        ``(values, groups)``: the sorted distinct values (a tensor, or a list for a
        non-tensor entry, where a row holding a list of values is read as a tuple)
        and a tuple holding, for each, the tensordict of its rows in their original
        order (views of one gathered copy).

    Raises:
        InvalidArgumentError: (a ``ValueError``) if the tensordict has no batch dimension.
        MissingKeyError: (a ``KeyError``) if there is no entry ``key``.
        EntryTypeError: (a ``TypeError``) if the entry is a tensordict, or its values
            cannot be hashed or sorted.

    Examples:
        >>> td = TensorDict(uid=torch.tensor([2, 0, 2]), r=torch.arange(3.0), batch_size=[3])
        >>> values, groups = group_by(td, "uid")
        >>> values, [g["r"] for g in groups]
        (tensor([0, 2]), [tensor([1.]), tensor([0., 2.])])
    """
    _check_collection(tensordict, "group_by() input")
    if tensordict.batch_dims == 0:
        msg = "group_by groups the rows along the first batch dimension of the tensordict, which has none"
        raise InvalidArgumentError(msg)
    inner = _inner(tensordict)
    if key not in inner.keys(include_nested=True):
        msg = f"group_by: the tensordict has no entry {key!r}"
        raise MissingKeyError(msg)
    entry = inner.get(key)
    n = tensordict.batch_size[0]
    if isinstance(entry, torch.Tensor):
        values, inverse = torch.unique(entry, dim=0, return_inverse=True)
        counts = torch.bincount(inverse, minlength=len(values)).tolist()
    elif is_non_tensor(entry):
        rows = [tuple(v) if isinstance(v, list) else v for v in _rows(entry, n)]
        try:
            values = sorted(set(rows))
        except TypeError as err:
            msg = (
                f"group_by cannot group by {key!r}: its values cannot be hashed and sorted ({err})"
            )
            raise EntryTypeError(msg) from err
        index = {v: i for i, v in enumerate(values)}
        inverse = torch.tensor([index[v] for v in rows], dtype=torch.long)
        counts = torch.bincount(inverse, minlength=len(values)).tolist()
    else:
        msg = f"group_by needs a tensor or non-tensor entry, but {key!r} holds a {type(entry).__name__}"
        raise EntryTypeError(msg)
    if n == 0:
        return values, ()
    order = torch.sort(inverse.reshape(n), stable=True).indices
    gathered = tensordict[order]
    return values, tuple(gathered.split(counts, 0))


# ---------------------------------------------------------------------- merge, make
def _occupied(result, key: tuple) -> bool:
    """Whether ``key`` or a prefix of it is already set in ``result`` (the first value wins)."""
    node = result
    for part in key:
        if not is_tensor_collection(node) or is_non_tensor(node):
            return True
        if part not in node.keys():
            return False
        node = node.get(part)
    return True


def merge_tensordicts(
    *tensordicts: TensorCollection,
    callback_exist: Callable | Mapping[NestedKey, Callable] | None = None,
) -> TensorDict:
    """Merges the entries of several tensordicts into a new one, without copying the values.

    The result has the batch size and device of the first tensordict and every
    leaf of every input. A leaf held by several inputs takes the value of the
    first that holds it, unless ``callback_exist`` combines the values; an entry
    that clashes with an earlier one (a leaf where an earlier input has a
    sub-tensordict, or the other way round) is skipped.

    Args:
        *tensordicts (TensorDictBase): at least two tensordicts.

    Keyword Args:
        callback_exist (Callable or dict of NestedKey to Callable, optional): called
            as ``callback_exist(*values)`` for a tensor leaf that every input holds;
            its result is stored. A dict gives one per key (the keys it lacks take
            the first value). Defaults to ``None``: the first value everywhere.

    Returns:
        A new :class:`TensorDict`.

    Raises:
        TooFewInputsError: (a ``RuntimeError``) if fewer than two tensordicts are given.
        NotTensorCollectionError: (a ``TypeError``) if an input is not a tensordict.
        BatchSizeError: (a ``RuntimeError``) if a leaf does not fit the first batch size.

    Examples:
        >>> a = TensorDict({"x": {"y": 0}, "common": 0})
        >>> b = TensorDict({"f": 1, "common": 1})
        >>> merged = merge_tensordicts(a, b, callback_exist=lambda *v: torch.stack(v))
        >>> sorted(merged.keys(True, True), key=str), merged["common"]
        ([('x', 'y'), 'common', 'f'], tensor([0, 1]))
    """
    if len(tensordicts) < 2:
        msg = f"merge_tensordicts needs at least 2 tensordicts, got {len(tensordicts)}"
        raise TooFewInputsError(msg)
    for i, td in enumerate(tensordicts):
        _check_collection(td, "merge_tensordicts() input", i)
    inners = [_inner(td) for td in tensordicts]
    first = inners[0]
    if isinstance(callback_exist, collections.abc.Mapping):
        callbacks = {_as_tuple(k): f for k, f in callback_exist.items()}
        callback_of = callbacks.get
    else:
        callback_of = lambda key: callback_exist  # noqa: E731 - one callback for every key
    result = TensorDict({}, batch_size=first.batch_size, device=first.device)
    for td in inners:
        for key in _leaf_keys(td):
            parts = _as_tuple(key)
            if _occupied(result, parts):
                continue
            value = td.get(key)
            callback = callback_of(parts)
            if callback is not None and isinstance(value, torch.Tensor):
                values = [other.get(key, None) for other in inners]
                if all(isinstance(v, torch.Tensor) for v in values):
                    value = callback(*values)
            result.set(key, value)
    return result


def make_tensordict(
    input_dict: Mapping | TensorCollection | None = None,
    batch_size: ShapeType | None = None,
    device: DeviceType | None = None,
    auto_batch_size: bool | None = None,
    **kwargs: Any,
) -> TensorDict:
    """Builds a tensordict from a dict and keyword arguments, as :meth:`TensorDict.from_dict` does.

    Nested dicts become nested tensordicts.

    Args:
        input_dict (dict or TensorDictBase, optional): entries; they replace the
            keyword arguments of the same key. Defaults to ``None``.
        batch_size (torch.Size or sequence of int, optional): the batch size.
            Defaults to ``None``: ``[]``, unless ``auto_batch_size`` infers it.
        device (torch.device, str or int, optional): the device of every tensor.
            Defaults to ``None``.
        auto_batch_size (bool, optional): without ``batch_size``, infer the longest
            leading shape the entries share (each nested tensordict infers its own).
            Defaults to ``None`` (no).
        **kwargs: entries, by key.

    Returns:
        A new :class:`TensorDict`.

    Raises:
        InvalidSourceError: (a ``TypeError``) if ``input_dict`` is not a mapping.
        BatchSizeError: (a ``RuntimeError``) if an entry does not fit ``batch_size``.

    Examples:
        >>> td = make_tensordict({"a": torch.zeros(3), "b": {"c": torch.zeros(3, 4)}}, auto_batch_size=True)
        >>> td.batch_size, td["b"].batch_size
        (torch.Size([3]), torch.Size([3, 4]))
    """
    source = dict(kwargs)
    if input_dict is not None:
        if is_tensor_collection(input_dict) and not is_non_tensor(input_dict):
            source.update(_inner(input_dict).items())
        elif isinstance(input_dict, collections.abc.Mapping):
            source.update(input_dict)
        else:
            msg = f"make_tensordict needs a mapping as input_dict, got {type(input_dict).__name__}"
            raise InvalidSourceError(msg)
    return TensorDict.from_dict(
        source, batch_size=batch_size, device=device, auto_batch_size=auto_batch_size
    )


# ---------------------------------------------------------------------- stacking
def maybe_dense_stack(
    input: Sequence[TensorCollection],  # noqa: A002 - the reference's name
    dim: int = 0,
    *,
    out: TensorCollection | None = None,
    **kwargs: Any,
) -> TensorCollection:
    """Stacks tensordicts densely when they have the same keys and shapes, lazily otherwise.

    Args:
        input (sequence of TensorDictBase or tensorclass instances): the tensordicts,
            with one batch size.
        dim (int, optional): the new batch dimension. Defaults to ``0``.

    Keyword Args:
        out (TensorDictBase, optional): a tensordict that receives the stacked values
            in place and is returned. Defaults to ``None``.
        **kwargs: accepted for compatibility (``strict``) and ignored.

    Returns:
        What :func:`stack` returns (a :class:`TensorDict`, or the inputs'
        tensorclass) when the inputs stack densely, else a :class:`LazyStackedTensorDict`.

    Raises:
        TooFewInputsError: (a ``RuntimeError``) if ``input`` is empty.
        NotTensorCollectionError: (a ``TypeError``) if an input is not a tensordict.
        DimensionError: (an ``IndexError``) if ``dim`` is out of range.
        RuntimeError: if the batch sizes differ.

    Examples:
        >>> same = [TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))]
        >>> type(maybe_dense_stack(same)).__name__
        'TensorDict'
        >>> type(maybe_dense_stack([same[0], TensorDict(a=torch.ones(4))])).__name__
        'LazyStackedTensorDict'
    """
    del kwargs
    tds = _collections_of(input, "maybe_dense_stack", "input")
    members = [t.contiguous() if getattr(type(t), "_is_lazy", False) else t for t in tds]
    try:
        stacked = stack(members, dim)
    except (RuntimeError, KeyError, ValueError) as err:
        if isinstance(err, IndexError):
            raise
        stacked = LazyStackedTensorDict(*tds, stack_dim=dim)
    if out is not None:
        out.update_(stacked)
        return out
    return stacked


def dense_stack_tds(
    td_list: Sequence[TensorCollection] | LazyStackedTensorDict, dim: int | None = None
) -> TensorCollection:
    """Stacks tensordicts (or a lazy stack's members) densely wherever their shapes allow.

    Unlike :func:`maybe_dense_stack`, sub-entries that are lazy stacks of the same
    length in every input stay lazy along their own dimension while the inputs
    are stacked densely around them.

    Args:
        td_list (sequence of TensorDictBase, or LazyStackedTensorDict): the
            tensordicts to stack. A dense tensordict is returned as it is.
        dim (int, optional): the new dimension; required for a sequence, ignored
            for a lazy stack (its ``stack_dim`` is used). Defaults to ``None``.

    Returns:
        A :class:`TensorDict` (or the inputs' tensorclass) where the inputs stack
        densely at the top level, else a :class:`LazyStackedTensorDict`.

    Raises:
        InvalidArgumentError: (a ``ValueError``) if ``td_list`` is a sequence and
            ``dim`` is ``None``.
        TooFewInputsError: (a ``RuntimeError``) if the sequence is empty.
        NotTensorCollectionError: (a ``TypeError``) if an input is not a tensordict.
        EntryTypeError: (a ``TypeError``) if an entry is a non-tensor entry in some
            inputs only.

    Examples:
        >>> inner = lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(4))])
        >>> stacked = lazy_stack([TensorDict(lazy=inner), TensorDict(lazy=inner.clone())])
        >>> dense = dense_stack_tds(stacked)
        >>> type(dense).__name__, dense["lazy"].batch_size, dense["lazy"].stack_dim
        ('TensorDict', torch.Size([2, 2]), 1)
    """
    if is_tensor_collection(td_list) and not is_non_tensor(td_list):
        if not getattr(type(td_list), "_is_lazy", False):
            return td_list
        return _dense_stack(list(td_list.tensordicts), td_list.stack_dim)
    if dim is None:
        msg = "dense_stack_tds needs dim when td_list is a sequence of tensordicts"
        raise InvalidArgumentError(msg)
    tds = _collections_of(td_list, "dense_stack_tds", "input")
    return _dense_stack(tds, dim)


def _dense_stack(tds: list, dim: int):
    first = tds[0]
    if all(getattr(type(t), "_is_lazy", False) for t in tds):
        s = first.stack_dim
        n = len(first.tensordicts)
        if all(t.stack_dim == s and len(t.tensordicts) == n for t in tds):
            ndim = first.batch_dims
            d = dim + ndim + 1 if dim < 0 else dim
            inner_dim = d if d <= s else d - 1
            inner = [_dense_stack([t.tensordicts[i] for t in tds], inner_dim) for i in range(n)]
            return LazyStackedTensorDict(*inner, stack_dim=s + 1 if d <= s else s)
        return maybe_dense_stack(tds, dim)
    if not all(type(t) is TensorDict for t in tds):
        return maybe_dense_stack(tds, dim)
    keys = list(first.keys())
    if any(set(t.keys()) != set(keys) for t in tds) or any(
        t.batch_size != first.batch_size for t in tds
    ):
        return maybe_dense_stack(tds, dim)
    ndim = first.batch_dims
    if not -ndim - 1 <= dim <= ndim:
        return stack(tds, dim)  # raises the out-of-range error
    d = dim + ndim + 1 if dim < 0 else dim
    source = {}
    for key in keys:
        values = [t.get(key) for t in tds]
        _check_same_kind(values, key, "dense_stack_tds", EntryTypeError)
        head = values[0]
        if isinstance(head, torch.Tensor):
            if any(not isinstance(v, torch.Tensor) or v.shape != head.shape for v in values):
                return maybe_dense_stack(tds, dim)
            source[key] = torch.stack(values, d)
        elif is_non_tensor(head):
            source[key] = stack(values, d)
        elif all(is_tensor_collection(v) and not is_non_tensor(v) for v in values):
            source[key] = _dense_stack(values, d)
        else:
            return maybe_dense_stack(tds, dim)
    size = first.batch_size[:d] + torch.Size([len(tds)]) + first.batch_size[d:]
    return TensorDict(source, batch_size=size, device=first.device)


# ---------------------------------------------------------------------- collate
def collate(
    batch: Any,
    *,
    pad_keys: Mapping[NestedKey, float] | None = None,
    nested_keys: Sequence[NestedKey] | None = None,
    mask_key: NestedKey | None = None,
) -> Any:
    """Collates a list of samples into a batch: a ``collate_fn`` for ``torch.utils.data.DataLoader``.

    The samples are collated by the type of the first one: tensordicts and
    tensorclasses by :func:`maybe_dense_stack`, tensors by ``torch.stack``,
    mappings into a ``dict`` and tuples into a tuple (a namedtuple keeps its type)
    of their collated items, anything else by ``default_collate``.

    Args:
        batch (list): the samples. Anything but a non-empty list is returned as it is
            (for example a tensordict a batch sampler read in one indexing).

    Keyword Args:
        pad_keys (Mapping[NestedKey, float], optional): entries of the tensordicts to
            pad along their first dimension (to the longest sample, with the value
            given) and stack, as :func:`pad_sequence` does. The samples must have an
            empty batch size. Defaults to ``None``.
        nested_keys (sequence of NestedKey, optional): entries to stack into nested
            tensors; every other entry must then stack densely. Defaults to ``None``.
        mask_key (NestedKey, optional): where to store the masks of the ``pad_keys``
            entries (True at the data positions). Needs ``pad_keys``; must not be an
            entry of the samples. Defaults to ``None``: no masks.

    Returns:
        The collated batch.

    Raises:
        InvalidArgumentError: (a ``ValueError``) if ``mask_key`` comes without
            ``pad_keys`` or names an entry, a key is in both ``pad_keys`` and
            ``nested_keys``, ``pad_keys`` is given for samples with batch
            dimensions, or ``nested_keys`` is given and the other entries do not
            stack densely.
        MissingKeyError: (a ``KeyError``) if a sample lacks a key of ``pad_keys`` or
            ``nested_keys``.

    Examples:
        >>> samples = [(TensorDict(x=torch.zeros(3)), i) for i in range(4)]
        >>> td, label = collate(samples)
        >>> td.batch_size, label
        (torch.Size([4]), tensor([0, 1, 2, 3]))
        >>> batch = collate([TensorDict(ids=torch.ones(n)) for n in (1, 2)], pad_keys={"ids": -1.0})
        >>> batch["ids"]
        tensor([[ 1., -1.],
                [ 1.,  1.]])
    """
    pads = {_as_tuple(k): v for k, v in (pad_keys or {}).items()}
    nested = [_as_tuple(k) for k in (nested_keys or ())]
    if mask_key is not None and not pads:
        msg = f"collate got mask_key={mask_key!r} but no pad_keys whose masks it would hold"
        raise InvalidArgumentError(msg)
    both = sorted(set(pads) & set(nested))
    if both:
        msg = f"collate got the keys {both} in both pad_keys and nested_keys; give each in one"
        raise InvalidArgumentError(msg)
    return _collate(batch, pads, nested, None if mask_key is None else _as_tuple(mask_key))


def _collate(batch, pads: dict, nested: list, mask_key):
    if type(batch) is not list or not batch:
        return batch
    elem = batch[0]
    if is_tensor_collection(elem) and not is_non_tensor(elem):
        if not pads and not nested:
            return maybe_dense_stack(batch)
        return _collate_collections(batch, pads, nested, mask_key)
    if isinstance(elem, torch.Tensor):
        return torch.stack(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {k: _collate([s[k] for s in batch], pads, nested, mask_key) for k in elem}
    if isinstance(elem, tuple):
        items = [_collate(list(column), pads, nested, mask_key) for column in zip(*batch)]
        return type(elem)(*items) if hasattr(elem, "_fields") else tuple(items)
    return default_collate(batch)


def _collate_collections(batch: list, pads: dict, nested: list, mask_key):
    tc_type = type(batch[0]) if is_tensorclass(batch[0]) else None
    samples = [_inner(s) for s in batch]
    for sample in samples:
        keys = set(sample.keys(include_nested=True))
        for key in [*pads, *nested]:
            if (key if len(key) > 1 else key[0]) not in keys:
                msg = f"collate got the key {key!r}, which a sample lacks"
                raise MissingKeyError(msg)
        if mask_key is not None and (mask_key if len(mask_key) > 1 else mask_key[0]) in keys:
            msg = f"collate got mask_key={mask_key!r}, which is an entry of a sample"
            raise InvalidArgumentError(msg)
        if pads and sample.batch_dims:
            msg = (
                f"collate(pad_keys=...) pads the first dimension of each entry, which is a batch "
                f"dimension of these samples (batch_size={sample.batch_size}); give the samples an "
                "empty batch size, or call pad_sequence"
            )
            raise InvalidArgumentError(msg)
    named = [*pads, *nested]
    rest = [s.exclude(*named) for s in samples]
    result = maybe_dense_stack(rest)
    if nested and getattr(type(result), "_is_lazy", False):
        msg = (
            f"collate got nested_keys={[k for k in nested]}, but the other entries of the samples "
            "differ in shape, so they stack lazily; name every entry that varies in length in "
            "pad_keys or nested_keys"
        )
        raise InvalidArgumentError(msg)
    if pads:
        chosen = [s.select(*pads) for s in samples]
        padded = pad_sequence(
            chosen, padding_value=pads, return_mask=False if mask_key is None else mask_key
        )
        result.update(padded)
    for key in nested:
        # A strided nested tensor: the layout a TensorDict leaf holds here.
        result.set(key, torch.nested.nested_tensor([s.get(key) for s in samples]))
    if tc_type is not None:
        return tc_type._from_tensordict(result)
    return result


CONVERTERS["pad"] = pad  # TensorDictBase.pad
