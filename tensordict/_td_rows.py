"""The leaf-level work of a :class:`~tensordict.TensorDict`'s index reads and writes.

``td[index]`` and ``td[index] = value`` check batch sizes and feature shapes here, copy
dense rows in one loop, and write dense rows straight to the tensors' memory (the
replay-buffer hot path); ``_td.py`` holds the class and calls these.
"""

from __future__ import annotations

import torch

from tensordict._helpers import shape_of
from tensordict._indexing import batch_size_from_dummy
from tensordict._nested_tensors import nested_index
from tensordict._nontensor import NonTensorDataBase
from tensordict.errors import BatchSizeError, DimensionError, EntryDtypeError
from tensordict.memmap.tensor import MemoryMappedTensor as _MMT
from tensordict.memmap.tensor import rows_alias, rows_fit

_Tensor = torch.Tensor
_index_copy = torch.Tensor.index_copy_
_index_select = torch.index_select


# (size, count) -> (a 1-D view of ``size`` zero bytes, an output of ``count`` bytes); see
# _check_rows_in_range. Used under _td._ROW_WRITES, one index write at a time.
_ROWS_PROBES: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}


def _rows_probe(size: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The probe of :func:`_check_rows_in_range` for ``count`` rows of a batch dim of ``size``."""
    if len(_ROWS_PROBES) >= 64:
        _ROWS_PROBES.clear()
    probe = (torch.zeros((), dtype=torch.uint8).expand(size), torch.empty(count, dtype=torch.uint8))
    _ROWS_PROBES[size, count] = probe
    return probe


def _check_rows_in_range(index: torch.Tensor, size: int) -> bool:
    """Refuses a tensor of rows that holds one out of ``-size .. size-1`` before anything is written.

    torch writes the rows before a bad one and then raises: checked here, a refused
    write leaves every leaf as it was. The common case (rows on the CPU, none negative)
    costs one ``index_select`` of a broadcast zero byte into a kept output: torch checks
    every row before it reads any. Only when it refuses are the rows' extremes read, to
    tell a negative row (allowed) from one out of range.

    Returns:
        True when the rows are on the CPU and none is negative (the rows can then be
        copied whole, see :func:`_write_dense_rows`).

    Raises:
        DimensionError: (an ``IndexError``) naming the first row out of range and the size.
    """
    count = index.shape[0]
    if not count:
        return True
    probe = _ROWS_PROBES.get((size, count)) or _rows_probe(size, count)
    try:
        _index_select(probe[0], 0, index, out=probe[1])
    except (IndexError, RuntimeError):  # a negative row, one out of range, or not on the CPU
        pass
    else:
        return True
    low, high = torch.aminmax(index)
    if low.item() < -size or high.item() >= size:
        bad = index[(index < -size) | (index >= size)][0].item()
        msg = (
            f"cannot write rows at index {bad}: it is out of range for the batch dim of size "
            f"{size}; nothing was written"
        )
        raise DimensionError(msg)
    return False


def _index_in_range(batch_size: torch.Size, leaf_index, index) -> torch.Size:
    """The batch size of ``td[leaf_index]``, read off a zero-memory stand-in of the batch,
    which also refuses a row out of range before anything is written (torch writes the
    rows before a bad one, then raises).

    Raises:
        DimensionError: (an ``IndexError``) with torch's message, naming ``index``.
    """
    try:
        return batch_size_from_dummy(batch_size, leaf_index)
    except IndexError as exc:
        msg = f"cannot write at index {index!r}: {exc}; nothing was written"
        raise DimensionError(msg) from exc


def _write_dense_rows(
    data, items, index, bd: int, given: torch.Size, advanced: bool, whole: bool = False, nested=None
) -> bool:
    """``data[key][index] = sub`` for every ``(key, sub)`` of ``items`` when every entry on
    both sides is a dense tensor (plain, or memory-mapped on this side), or a nested
    tensordict of class ``nested`` made of such entries; False, writing nothing, otherwise.
    ``given`` is the batch size of the value, ``bd`` the number of batch dims of ``data``.
    Every feature shape and dtype is checked before the first write, so that a refused
    value writes nothing. The writes go straight to the tensors' memory, as
    ``MemoryMappedTensor.__setitem__`` does.

    A memory-mapped entry keeps the whole shape a value of batch size ``given`` has when
    it fits (see ``rows_fit``): the check of a fitting value is one comparison.

    ``advanced`` says that ``index`` holds a tensor: torch's index writes then do not cast,
    so a value of another dtype is refused. ``whole`` says that ``index`` is a 1-D long tensor of rows, all in range and none
    negative: a fitting value of the entry's dtype, on the CPU, is then copied row by row
    with ``index_copy_`` (the same result as ``target[index] = sub``, at a lower cost per
    entry).
    """
    copies = []
    targets = []
    if not _dense_pairs(data, items, bd, given, whole, advanced, nested, copies, targets, ()):
        return False
    for target, sub in copies:
        _index_copy(target, 0, index, sub)
    for target, sub in targets:
        target[index] = sub
    return True


def _dense_pairs(data, items, bd, given, whole, advanced, nested, copies, targets, path) -> bool:
    """Checks every ``(key, sub)`` of ``items`` against ``data`` for :func:`_write_dense_rows`,
    adding ``(target, sub)`` to ``copies`` (whole rows) or ``targets``; False at the first
    pair that is not dense. A nested level of class ``nested`` with the same keys and batch
    sizes on both sides is checked the same way (``path`` is its key, for the errors)."""
    for key, sub in items:
        current = data[key]
        if type(sub) is not _Tensor:
            if (
                nested is None
                or type(sub) is not nested
                or type(current) is not nested
                or sub._batch_size != given
                or len(current._batch_size) != bd
                or sub._tensordict.keys() != current._tensordict.keys()
            ):
                return False
            level = (*path, key)
            if not _dense_pairs(
                current._tensordict,
                sub._tensordict.items(),
                bd,
                given,
                whole,
                advanced,
                nested,
                copies,
                targets,
                level,
            ):
                return False
            continue
        kind = type(current)
        fits = False
        if kind is _MMT:
            fit = current._rows_fit
            if fit is None or fit[1] != bd or fit[0] != given:
                fit = rows_fit(current, given, bd)
            current = fit[2]
            fits = sub.shape == fit[3]
        elif kind is not _Tensor:
            return False
        if not fits:
            if current.is_nested or sub.is_nested:
                if sub.shape[len(given) :] != current.shape[bd:]:
                    return False
            else:
                _check_fits((*path, key) if path else key, sub, current, len(given), bd, False)
        if advanced and sub.dtype is not current.dtype:
            _refuse_dtype((*path, key) if path else key, sub, current)
        (copies if fits and whole and sub.is_cpu else targets).append((current, sub))
    return True


def _check_fits(
    key, sub: torch.Tensor, entry: torch.Tensor, vbd: int, bd: int, advanced: bool
) -> None:
    """Refuses ``sub`` (``vbd`` batch dims) for rows of the entry at ``key`` (``bd`` batch dims)
    before anything is written: a feature shape that cannot be written there, or, for an
    index holding a tensor (``advanced``, where torch does not cast), another dtype."""
    if sub.shape[vbd:] != entry.shape[bd:]:
        _check_feature_shape(key, sub.shape, vbd, entry.shape[bd:])
    if advanced and sub.dtype is not entry.dtype:
        _refuse_dtype(key, sub, entry)


def _refuse_dtype(key, value: torch.Tensor, entry: torch.Tensor) -> None:
    """Raises :class:`EntryDtypeError` for a value of another dtype than the entry at ``key``,
    written by a tensor index (torch does not cast there)."""
    msg = (
        f"cannot write rows of {value.dtype} into the entry {key!r} of {entry.dtype}: a write "
        "by a tensor index does not cast; nothing was written (cast the value first)"
    )
    raise EntryDtypeError(msg)


def _index_copies(data, index, rows: bool = False, nested=None):
    """``{key: value[index]}`` when every entry is a dense tensor (plain or memory-mapped),
    else None. ``index`` is a plain tensor of rows: each result is a plain copy, as
    ``MemoryMappedTensor.__getitem__`` returns it for such an index; a memory-mapped entry
    is read through its plain alias, without the subclass's dispatch. None too when torch
    cannot index an entry so (a nested tensor): the generic path indexes it then.

    ``rows`` says that ``index`` is a 1-D long tensor: the rows of a contiguous entry are
    then read with ``index_select``, the same copy as ``value[index]`` at a lower cost. It
    refuses a negative row, which ``value[index]`` takes: the whole read is then made again
    that way (which raises torch's own error for a row out of range). A nested level of
    class ``nested`` is read through its own ``_index``, as ``value[index]`` would.
    """
    out = {}
    try:
        for key, value in data.items():
            kind = type(value)
            if kind is _MMT:
                alias = value._plain
                if alias is None:
                    alias = rows_alias(value)
                out[key] = _index_select(alias, 0, index) if rows else alias[index]
            elif kind is _Tensor:
                if rows and value.is_contiguous():
                    out[key] = _index_select(value, 0, index)
                else:
                    out[key] = value[index]
            elif kind is nested:
                out[key] = value._index(index)
            else:
                return None
    except IndexError:
        if rows:  # a negative row: read as torch indexes
            return _index_copies(data, index, False, nested)
        raise
    except (RuntimeError, NotImplementedError):
        return None
    return out or None  # no entry: the generic path marks the empty view


def _index_leaf(value, index):
    """``value[index]``; a jagged nested tensor, which torch cannot index along its first dim
    but by an int, is rebuilt from the components the index picks."""
    try:
        return value[index]
    except (RuntimeError, NotImplementedError):
        if not (isinstance(value, _Tensor) and value.is_nested and value.layout is torch.jagged):
            raise
        return nested_index(value, index)


def _extra_shape(value, bd: int) -> torch.Size:
    """The dims of an entry beyond the ``bd`` batch dims (a nested tensor's ragged ones read -1)."""
    if isinstance(value, _Tensor):
        return (shape_of(value) if value.is_nested else value.shape)[bd:]
    return value.batch_size[bd:]


def _check_feature_shape(key, shape: torch.Size, batch_dims: int, expected: torch.Size) -> None:
    """Refuses a value that ``tensor[index] = value`` could not write into an entry's rows.

    ``shape`` is the value's whole shape, of which ``batch_dims`` are batch dims;
    ``expected`` is the entry's feature shape. As with tensors, the value broadcasts, and
    may have extra leading dims of size 1.
    """
    given = shape[batch_dims:]
    full = shape
    while len(full) > batch_dims + len(expected) and full[0] == 1:
        full = full[1:]
    try:
        target = shape[:batch_dims] + expected
        ok = len(full) <= len(target) and torch.broadcast_shapes(full, target) == target
    except RuntimeError:
        ok = False
    if not ok:
        msg = (
            f"cannot assign to the entry {key!r}: the value's feature shape {list(given)} does not "
            f"fit the entry's {list(expected)}; nothing was written"
        )
        raise BatchSizeError(msg)


def _indexed_batch(batch_size: torch.Size, leaf_index, rows) -> torch.Size:
    """The batch size of ``td[leaf_index]``, without indexing any leaf."""
    if rows is not None:
        return rows
    if (
        isinstance(leaf_index, _Tensor)
        and leaf_index.dtype is torch.long
        and leaf_index.ndim == 1
        and batch_size
    ):
        return leaf_index.shape + batch_size[1:]
    return batch_size_from_dummy(batch_size, leaf_index)


def _check_rows(index, given: torch.Size, rows: torch.Size) -> None:
    """Refuses a tensordict whose batch size cannot be written into ``rows`` (it may broadcast)."""
    try:
        ok = torch.broadcast_shapes(given, rows) == rows
    except RuntimeError:
        ok = False
    if not ok:
        msg = (
            f"cannot assign a tensordict of batch size {list(given)} to td[{index!r}], whose batch "
            f"size is {list(rows)}; nothing was written"
        )
        raise BatchSizeError(msg)


def _zeros_for(value, batch_size: torch.Size, indexed_dims: int):
    """A zero entry over the whole batch for a key first given for part of the batch."""
    if isinstance(value, _Tensor):
        shape = batch_size + value.shape[indexed_dims:]
        return torch.zeros(shape, dtype=value.dtype, device=value.device)
    if isinstance(value, NonTensorDataBase):
        return value._with(batch_size)
    return value.new_zeros(batch_size + value.batch_size[indexed_dims:])
