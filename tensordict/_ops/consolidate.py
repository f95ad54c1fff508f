"""Consolidation: every leaf of a tensordict as a view into one flat byte storage.

:meth:`~ConsolidateMixin.consolidate` copies the leaves of a tree, one after the
other, into a single ``torch.uint8`` tensor (the *storage*) and returns a tree of
the same structure whose leaves are views of it. It also describes the tree in a
nested dict (the *metadata*), from which the tree can be rebuilt on any copy of
the storage: this is how a consolidated tensordict pickles (one buffer plus the
metadata) and how :meth:`~ConsolidateMixin.from_consolidated` reads a file.

Consolidated file, as the well-known TensorDict 0.15.3 writes it (both read and
write it, byte for byte the same)::

    +--------------------+---------------------------+------------------+
    | data: D bytes      | metadata: M bytes, JSON   | M: 8 bytes       |
    +--------------------+---------------------------+------------------+

- The data part holds the leaves in the order of the walk below, each padded with
  zero bytes to a multiple of 8 bytes (so every leaf starts 8-byte aligned), raw,
  C-contiguous, native byte order (little-endian on every supported machine).
- The metadata part is ``json.dumps(metadata)`` with the default separators
  (``", "`` and ``": "``), UTF-8; a writer MAY pad it on the right with spaces
  (the reference does when it rewrites the metadata of a file in place). The last
  8 bytes are M as a little-endian int64. A reader MUST find the metadata from
  the end of the file and MUST NOT assume ``D`` from anything but ``M``.

The metadata of one level is a JSON object with, in this order:

- ``"cls"``: ``"TensorDict"``, ``"LazyStackedTensorDict"`` or ``"NonTensorStack"``
  for the built-in classes, ``str(cls)`` for a tensorclass (for example
  ``"<class 'fixture_classes.Frame'>"``; the class must be defined before reading);
- ``"non_tensors"``: key -> ``[value, batch_size, device]`` for each non-tensor
  entry (``NonTensorData`` or ``MetaData``, read back as ``NonTensorData``); the
  value must be JSON;
- ``"leaves"``: key -> ``[dtype, shape, start, stop, pad]`` for each tensor: its
  dtype as ``str(dtype)`` (``"torch.float32"``), its shape, the byte range
  ``[start, stop)`` of the data part it occupies (``stop - start`` is its byte size
  plus ``pad``), and the number of padding bytes at its end. A jagged nested
  tensor ``x`` is stored as the leaves ``"<NJT_VALUES>x"`` (its values, whose
  ragged dimension is written ``-1``), ``"<NJT_LENGTHS>x"`` (only when it has
  lengths) and ``"<NJT_OFFSETS>x"``, in that order; the offsets record has a sixth
  item, the ragged dimension;
- ``"cls_metadata"``: for a dense level (a TensorDict or a tensorclass)
  ``{"device", "names", "batch_size", "is_locked"}``, with ``names`` a list of one
  name or ``null`` per batch dimension; for a stack ``{"stack_dim",
  "stack_dim_name", "is_locked"}``;
- then one member per sub-tensordict, its key mapped to the metadata of that level
  (for a stack: its members under ``"0"``, ``"1"``, ...).

The walk visits the entries of a level in their order; a sub-tensordict's leaves
come where the sub-tensordict is, depth first, so that byte offsets grow along the
walk. A tensorclass is visited through its tensordict. A consolidated tensordict
holds its state in ``_consolidated``: the storage, the metadata (with the
tensorclass classes themselves in place of their names), the objects of the tree as
consolidated, from which :meth:`~ConsolidateMixin.is_consolidated` tells whether
the tree still matches the storage, and the file it was written to.

A consolidated tensordict pickles as ``_rebuild_consolidated(metadata, storage)``: one
tensor, which :mod:`torch.multiprocessing` sends as one shared-memory handle. One
whose leaves map its file pickles as ``_rebuild_consolidated_file(path, metadata,
data_size)`` instead, as memory-mapped tensordicts pickle file names: the copy maps the
same file (torch cannot send a file-backed storage to another process).
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from tensordict._collection import TensorCollection
from tensordict._futures import TensorDictFuture
from tensordict._helpers import contiguous_strides
from tensordict._ops import tree
from tensordict._typing import T
from tensordict._unbatched import is_unbatched
from tensordict.errors import (
    ConsolidateArgumentError,
    ConsolidatedFormatError,
    ConsolidatedNotFoundError,
    ConsolidateEntryError,
    DeviceUnavailableError,
    warn,
)
from tensordict.memmap import format as fmt

try:
    # torch's table of the ragged-size symbols of jagged tensors (j1, j2, ...), keyed by
    # their offsets (or lengths) tensor; internal to torch, so a copy made without it gets
    # new symbols, as every copy of a jagged tensor does
    from torch.nested._internal.nested_tensor import _tensor_symint_registry as _RAGGED_SIZES
except ImportError:  # pragma: no cover - a torch without it
    _RAGGED_SIZES = None

FOOTER_SIZE = 8
"""Bytes of the little-endian int64 at the end of a file: the size of the metadata."""

ALIGNMENT = 8
"""Every leaf occupies a multiple of this many bytes of the data part."""

NJT_VALUES = "<NJT_VALUES>"
NJT_LENGTHS = "<NJT_LENGTHS>"
NJT_OFFSETS = "<NJT_OFFSETS>"

_Tensor = torch.Tensor


# ---------------------------------------------------------------------- describing a tree
class _Plan:
    """What consolidating a tree takes: its metadata, the tensors to copy and their sizes."""

    __slots__ = ("tensors", "kinds", "sizes", "starts", "slots", "offset")

    def __init__(self) -> None:
        self.tensors: list = []  # the tensors to copy, in the walk's order
        self.kinds: list = []  # (dtype, shape, device) of each
        self.sizes: list = []  # (bytes, padding) of each
        self.starts: list = []  # the offset of each in the storage
        self.slots: list = []  # per leaf of the result: a tensor's index, or a jagged tensor's parts
        self.offset = 0

    def leaf(self, tensor: _Tensor, leaves: dict, key: str, extra=(), recorded=None) -> int:
        """Adds one tensor to the plan and its record to ``leaves`` (``recorded``: its shape there)."""
        nbytes = tensor.nbytes
        pad = -nbytes % ALIGNMENT
        start = self.offset
        stop = self.offset = start + nbytes + pad
        dtype, shape = tensor.dtype, tensor.shape
        name = _DTYPE_NAMES.get(dtype) or str(dtype)
        leaves[key] = (
            name,
            list(shape if recorded is None else recorded),
            start,
            stop,
            pad,
            *extra,
        )
        tensors = self.tensors
        tensors.append(tensor)
        self.kinds.append((dtype, shape, tensor.device))
        self.sizes.append((nbytes, pad))
        self.starts.append(start)
        return len(tensors) - 1

    def entry(self, value, leaves: dict, key: str, prefix: tuple) -> None:
        """The walk's ``leaf``: plans one tensor (a jagged one as its parts), or refuses the entry."""
        if type(value) is _Tensor and not value.is_nested:
            self.slots.append(self.leaf(value, leaves, key))
        elif not isinstance(value, _Tensor):
            msg = f"cannot consolidate {_path(prefix, key)!r}: a {type(value).__name__} is not a tensor or a tensordict"
            raise ConsolidateEntryError(msg)
        elif value.is_nested:
            self.nested(value, leaves, key, prefix)
        elif is_unbatched(value):
            msg = f"cannot consolidate {_path(prefix, key)!r}: UnbatchedTensor entries cannot be consolidated"
            raise ConsolidateEntryError(msg)
        else:
            self.slots.append(self.leaf(value, leaves, key))

    def nested(self, value: _Tensor, leaves: dict, key: str, prefix: tuple) -> None:
        if value.layout is not torch.jagged:
            msg = (
                f"cannot consolidate the nested tensor {_path(prefix, key)!r}: only jagged "
                "nested tensors can be consolidated; build it with layout=torch.jagged"
            )
            raise ConsolidateEntryError(msg)
        values = value._values
        shape = [s if isinstance(s, int) else -1 for s in values.shape]
        parts = [self.leaf(values, leaves, NJT_VALUES + key, recorded=shape), None, None]
        lengths = value._lengths
        if lengths is not None:
            parts[1] = self.leaf(lengths, leaves, NJT_LENGTHS + key)
        offsets = value._offsets
        ragged = value._ragged_idx
        parts[2] = self.leaf(offsets, leaves, NJT_OFFSETS + key, (ragged,))
        self.slots.append((*parts, ragged))

    def views(self, storage: _Tensor, num_threads: int) -> tuple:
        """The views of ``storage`` for the plan's tensors, the copy jobs, and the result's leaves.

        Consecutive tensors of one dtype and shape, without padding, form a *run*: one view
        of the run's block is unbound into theirs (one call instead of one per tensor) and
        one ``torch.stack`` fills the block. The other tensors are copied by one
        ``torch._foreach_copy_``. With threads, runs and the others are cut into about one
        job per thread. The leaves are the views in the walk's order, a jagged tensor's
        parts joined.
        """
        views = _Views(storage)
        tensors, starts, sizes = self.tensors, self.starts, self.sizes
        count = len(tensors)
        max_run = -(-count // num_threads) if num_threads > 1 else count
        made: list = []
        jobs: list = []  # (target, sources): a block to stack into, or a list of views
        singles: list = []
        i = 0
        kinds, device = self.kinds, storage.device
        while i < count:
            kind = kinds[i]
            dtype, shape = kind[0], kind[1]
            j = i + 1
            if not sizes[i][1] and kind[2] == device and views.aligned(dtype, starts[i]):
                while j < count and j - i < max_run and kinds[j] == kind and not sizes[j][1]:
                    j += 1
            if j - i > 1:
                block = views.view(dtype, (j - i, *shape), starts[i])
                made.extend(block.unbind(0))
                jobs.append((block, tensors[i:j]))
            else:
                made.append(views.view(dtype, shape, starts[i]))
                singles.append(i)
            i = j
        step = -(-len(singles) // num_threads) if num_threads > 1 else len(singles)
        for k in range(0, len(singles), max(step, 1)):
            part = singles[k : k + step]
            jobs.append(([made[n] for n in part], [tensors[n] for n in part]))
        if len(self.slots) == count:
            return jobs, made  # no jagged tensor: the leaves are the views, in order
        out = []
        for slot in self.slots:
            if type(slot) is int:
                out.append(made[slot])
            else:
                values, lengths, offsets, ragged = slot
                # a jagged tensor's ragged size comes from its lengths, or its offsets
                source = offsets if lengths is None else lengths
                _share_ragged_size(made[source], tensors[source])
                out.append(
                    torch.nested.nested_tensor_from_jagged(
                        made[values],
                        offsets=made[offsets],
                        lengths=None if lengths is None else made[lengths],
                        jagged_dim=ragged,
                    )
                )
        return jobs, out


_DTYPE_NAMES = {dtype: name for name, dtype in fmt.DTYPES.items()}


def _share_ragged_size(copy: _Tensor, original: _Tensor) -> None:
    """Gives the jagged tensor built on ``copy`` (offsets or lengths) the ragged size of ``original``'s.

    The consolidated copy of a jagged tensor then has the same shape as the tensor it copies
    (``torch.Size([4, j1])``, not ``[4, j2]``), so that the two work together in pointwise
    operations and compare equal, as two jagged tensors sharing their offsets do.
    """
    if _RAGGED_SIZES is None:
        return
    size = _RAGGED_SIZES.get(original)
    if size is not None:
        _RAGGED_SIZES[copy] = size


def _path(prefix: tuple, key: str):
    return (*prefix, key) if prefix else key


def _flat_objects(obj, out: list) -> list:
    """Every value of the tree in the walk's order (non-tensor entries followed by their value)."""
    for _, value in obj._tree_items():
        out.append(value)
        if isinstance(value, _Tensor):
            continue
        record = value._tree_value()
        if record is not None:
            out.append(record[0])
        else:
            _flat_objects(value, out)
    return out


# ---------------------------------------------------------------------- copying
def _zero_padding(plan: _Plan, storage: _Tensor) -> None:
    """Zeroes the last 8-byte word of each padded leaf, so that its padding bytes are zeros.

    The leaf's own bytes are copied over the rest of that word afterwards.
    """
    words = [
        (start + nbytes + pad) // ALIGNMENT - 1
        for start, (nbytes, pad) in zip(plan.starts, plan.sizes)
        if pad
    ]
    if words:
        index = torch.tensor(words, dtype=torch.int64, device=storage.device)
        storage.view(torch.int64).index_fill_(0, index, 0)


@torch.no_grad()  # the storage is a copy of the values: it takes no part in the graph
def _run_job(target, sources: list, non_blocking: bool) -> None:
    if isinstance(target, _Tensor):
        torch.stack(sources, out=target)
        return
    foreach = getattr(torch, "_foreach_copy_", None)
    if foreach is not None and all(t.device == s.device for t, s in zip(target, sources)):
        foreach(target, sources, non_blocking=non_blocking)
        return
    for view, source in zip(target, sources):
        view.copy_(source, non_blocking=non_blocking)


def _copy(jobs: list, num_threads: int, return_early: bool, non_blocking: bool):
    """Runs the copy jobs; returns the futures of the threads with ``return_early``."""
    if not jobs:
        return None
    if num_threads <= 1 or len(jobs) < 2 and not return_early:
        for target, sources in jobs:
            _run_job(target, sources, non_blocking)
        return None
    executor = ThreadPoolExecutor(num_threads)
    futures = [executor.submit(_run_job, target, sources, non_blocking) for target, sources in jobs]
    executor.shutdown(wait=not return_early)
    if return_early:
        return futures
    for future in futures:
        future.result()
    return None


# ---------------------------------------------------------------------- views and rebuilding


class _Views:
    """Makes the views of one storage: one typed view per dtype, then one ``as_strided`` per leaf."""

    __slots__ = ("storage", "typed")

    def __init__(self, storage: _Tensor) -> None:
        self.storage = storage
        self.typed: dict = {}

    def aligned(self, dtype: torch.dtype, start: int) -> bool:
        """Whether a tensor of ``dtype`` at byte ``start`` is an element of the typed view."""
        size = dtype.itemsize
        return not (start % size or self.storage.numel() % size)

    def view(self, dtype: torch.dtype, shape, start: int) -> _Tensor:
        shape = tuple(shape)
        if not self.aligned(dtype, start):
            # a 16-byte dtype at an offset that is a multiple of 8 only: view its own bytes
            nbytes = dtype.itemsize
            for s in shape:
                nbytes *= s
            return self.storage[start : start + nbytes].view(dtype).view(shape)
        typed = self.typed.get(dtype)
        if typed is None:
            typed = self.typed[dtype] = self.storage.view(dtype)
        return typed.as_strided(shape, contiguous_strides(shape), start // dtype.itemsize)


def _leaf_values(leaves: dict, views: _Views, where) -> dict:
    """Key -> tensor of one level's ``"leaves"``, the jagged parts joined into nested tensors."""
    out: dict = {}
    parts: dict = {}
    data_size = views.storage.numel()
    for key, record in leaves.items():
        dtype, shape, start, extra = _parse_leaf(record, data_size, where, key)
        tensor = views.view(dtype, shape, start)
        if key.startswith((NJT_VALUES, NJT_LENGTHS)):
            parts[key] = tensor
        elif key.startswith(NJT_OFFSETS):
            name = key[len(NJT_OFFSETS) :]
            values = parts.pop(NJT_VALUES + name, None)
            if values is None:
                msg = f"{where}: the nested tensor {name!r} has offsets but no values"
                raise ConsolidatedFormatError(msg)
            kwargs = {"offsets": tensor, "lengths": parts.pop(NJT_LENGTHS + name, None)}
            if extra:
                kwargs["jagged_dim"] = extra[0]
            try:
                out[name] = torch.nested.nested_tensor_from_jagged(values, **kwargs)
            except (RuntimeError, ValueError, IndexError) as err:
                msg = f"{where}: the nested tensor {name!r} cannot be rebuilt: {err}"
                raise ConsolidatedFormatError(msg) from err
        else:
            out[key] = tensor
    if parts:
        msg = f"{where}: the nested tensor part {next(iter(parts))!r} has no offsets"
        raise ConsolidatedFormatError(msg)
    return out


def _parse_leaf(record, data_size: int, where, key: str) -> tuple:
    """Checks one ``"leaves"`` record; returns its dtype, shape, start and extra items.

    A ragged size (``-1``, in the values of a jagged tensor) is read from the byte size.
    """
    label = f"{where}: the leaf {key!r}"
    if not isinstance(record, (list, tuple)) or len(record) not in (5, 6):
        msg = f"{label} has the record {record!r}; expected [dtype, shape, start, stop, pad]"
        raise ConsolidatedFormatError(msg)
    dtype = fmt.DTYPES.get(record[0]) if isinstance(record[0], str) else None
    if dtype is None:
        msg = f"{label}: unknown dtype {record[0]!r}; expected one of {sorted(fmt.DTYPES)}"
        raise ConsolidatedFormatError(msg)
    shape, start, stop, pad = record[1:5]
    ragged = key.startswith(NJT_VALUES)
    if not isinstance(shape, (list, tuple)) or not all(
        type(s) is int and (s >= 0 or ragged and s == -1) for s in shape
    ):
        msg = f"{label}: shape is not valid: {shape!r} (expected a list of non-negative ints)"
        raise ConsolidatedFormatError(msg)
    if not all(type(v) is int for v in (start, stop, pad)) or not (
        0 <= start <= stop <= data_size and 0 <= pad < ALIGNMENT and start - pad <= stop
    ):
        msg = f"{label}: the byte range {[start, stop]!r} (pad {pad!r}) is not within the {data_size} bytes of data"
        raise ConsolidatedFormatError(msg)
    nbytes = stop - start - pad
    known = dtype.itemsize
    for s in shape:
        known *= s if s != -1 else 1
    if list(shape).count(-1) > 1 or (-1 in shape and (not known or nbytes % known)):
        msg = f"{label}: shape {list(shape)!r} does not fit its {nbytes} bytes"
        raise ConsolidatedFormatError(msg)
    if -1 in shape:
        shape = [nbytes // known if s == -1 else s for s in shape]
    elif known != nbytes:
        msg = (
            f"{label}: a {list(shape)} {record[0]} tensor takes {known} bytes, "
            f"but the record gives it {nbytes}"
        )
        raise ConsolidatedFormatError(msg)
    return dtype, shape, start, tuple(record[5:])


def _rebuild(meta: dict, views: _Views):
    """The tree that ``meta`` describes, its leaves views of ``views.storage``, consolidated."""
    storage = views.storage

    def consolidated(obj, level: dict) -> None:
        inner = obj._tree_inner()
        objects = tuple(_flat_objects(inner, []))
        state = {"storage": storage, "metadata": level, "objects": objects, "locked": False}
        inner._consolidated = state

    return tree.rebuild(
        meta, lambda leaves, where: _leaf_values(leaves, views, where), on_level=consolidated
    )


def _rebuild_named(meta: dict, views: _Views, where: str):
    """:func:`_rebuild`, its errors prefixed with ``where`` (the file)."""
    try:
        return _rebuild(meta, views)
    except ConsolidatedFormatError as err:
        msg = f"{where} is not a valid consolidated file: {err}"
        raise ConsolidatedFormatError(msg) from err


def _file_size(path: str) -> int:
    """The size of ``path``; a missing file raises :class:`ConsolidatedNotFoundError` naming it."""
    try:
        return os.path.getsize(path)
    except FileNotFoundError as err:
        what = "no such consolidated file (write one with consolidate(filename=...))"
        raise ConsolidatedNotFoundError(errno.ENOENT, what, path) from err


def _rebuild_consolidated(metadata: dict, storage: _Tensor):
    """Unpickles a consolidated tensordict: its tree over ``storage``."""
    return _rebuild(metadata, _Views(storage))


def _rebuild_consolidated_file(path: str, metadata: dict, data_size: int):
    """Unpickles a consolidated tensordict whose leaves map ``path``: maps its data again."""
    size = _file_size(path)
    if size < data_size:
        msg = f"cannot unpickle the consolidated tensordict of {path!r}: the file holds {size} bytes, fewer than its {data_size} bytes of data"
        raise ConsolidatedFormatError(msg)
    file = torch.from_file(path, shared=True, size=size, dtype=torch.uint8)
    out = _rebuild_named(metadata, _Views(file[:data_size]), repr(path))
    out._tree_inner()._consolidated.update(filename=Path(path), file_id=_file_id(path), mapped=True)
    return out


# torch.load(weights_only=True) rebuilds only allowlisted globals: this one builds
# tensordicts from the metadata and the storage, and imports or executes nothing.
torch.serialization.add_safe_globals([_rebuild_consolidated])


def _assemble(obj, leaves, inplace: bool, device):
    """``obj``'s tree with each tensor replaced by the next of ``leaves`` (new levels unless ``inplace``).

    A file is on the CPU: with one, ``device`` is the CPU, which the new dense levels say,
    as the reference's do.
    """
    if isinstance(obj, _Tensor):
        return next(leaves)
    if obj._tree_value() is not None:
        # The result's lock must not lock the source's entries: a new entry, the value shared.
        return obj if inplace else obj.clone(False)
    items = obj._tree_items()
    entries = {key: _assemble(value, leaves, inplace, device) for key, value in items}
    if not inplace:
        return obj._tree_like(entries, device)
    for key, value in items:
        new = entries[key]
        if new is not value:
            obj._tree_inner()._store_entry(key, new)
    return obj


# ---------------------------------------------------------------------- files
def _metadata_json(metadata: dict) -> bytes:
    try:
        return json.dumps(tree.named_classes(metadata)).encode("utf-8")
    except (TypeError, ValueError) as err:
        msg = (
            f"cannot write the consolidated metadata as JSON: {err}. Every non-tensor value "
            "must be JSON (a string, a number, a list, a dict, ...) to be written to a file"
        )
        raise ConsolidatedFormatError(msg) from err


def _file_id(path: str):
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size


def _replace_if_larger(path: str, size: int) -> None:
    """Puts a new empty file at ``path`` if the file there is larger than ``size`` bytes.

    ``torch.from_file`` never shrinks a file, and the footer must end it; a new file
    also leaves the old one whole for the tensordicts that still map it.
    """
    try:
        if os.path.getsize(path) <= size:
            return
    except OSError:
        return
    target = os.path.realpath(path)
    fd, tmp = tempfile.mkstemp(prefix=".tdtmp-", dir=os.path.dirname(target))
    os.close(fd)
    os.replace(tmp, target)


def _write_footer(total: _Tensor, payload: bytes) -> None:
    footer = torch.tensor([len(payload)], dtype=torch.int64).view(torch.uint8)
    total[-FOOTER_SIZE:] = footer
    if payload:
        total[-FOOTER_SIZE - len(payload) : -FOOTER_SIZE] = torch.frombuffer(
            bytearray(payload), dtype=torch.uint8
        )


def _read_file(source):
    """``(metadata, data, where)``: the metadata and the data part of a consolidated file,
    or of its bytes as a tensor, and how errors name it."""
    if isinstance(source, torch.UntypedStorage):
        source = torch.empty(0, dtype=torch.uint8).set_(source)
    if isinstance(source, _Tensor):
        if source.dtype != torch.uint8 or source.ndim != 1:
            msg = f"from_consolidated() needs a file name or a 1-D uint8 tensor, got a {source.dtype} tensor of shape {list(source.shape)}"
            raise TypeError(msg)
        where, file = "the storage", source
    else:
        where = repr(os.fspath(source))
        path = os.fspath(source)
        size = _file_size(path)
        if os.path.isdir(path):
            msg = f"{where} is a folder, not a consolidated file"
            raise ConsolidatedFormatError(msg)
        file = torch.from_file(str(path), shared=False, size=size, dtype=torch.uint8)
    size = file.numel()
    if size < FOOTER_SIZE:
        msg = f"{where} is not a consolidated file: it holds {size} bytes, fewer than its {FOOTER_SIZE}-byte footer"
        raise ConsolidatedFormatError(msg)
    length = int.from_bytes(file[-FOOTER_SIZE:].numpy().tobytes(), "little", signed=True)
    if not 0 <= length <= size - FOOTER_SIZE:
        msg = f"{where} is not a consolidated file: its footer gives {length} bytes of metadata, but it holds {size}"
        raise ConsolidatedFormatError(msg)
    data_size = size - FOOTER_SIZE - length
    raw = file[data_size : size - FOOTER_SIZE].numpy().tobytes()
    try:
        metadata = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        msg = f"{where} is not a consolidated file: its metadata is not JSON ({err})"
        raise ConsolidatedFormatError(msg) from err
    if data_size % ALIGNMENT:
        msg = f"{where} is not a consolidated file: its {data_size} bytes of data are not a multiple of {ALIGNMENT}"
        raise ConsolidatedFormatError(msg)
    return metadata, file[:data_size], where


# ---------------------------------------------------------------------- checks
def _storage_device(self, device, filename):
    if device is not None:
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as err:
            msg = f"consolidate() got device={device!r}, which names no device: {err}"
            raise ConsolidateArgumentError(msg) from err
    if filename is not None:
        if device is not None and device.type != "cpu":
            msg = f"device and filename are mutually exclusive arguments: a file is on the CPU, got device={str(device)!r}"
            raise ConsolidateArgumentError(msg)
        return torch.device("cpu")
    if device is None:
        device = self.device if self.device is not None else torch.device("cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        msg = f"consolidate(device={str(device)!r}) needs a CUDA device, and none is available; leave device=None to keep the storage on the CPU"
        raise DeviceUnavailableError(msg)
    return device


def _check_flags(pin_memory, return_early, num_threads, use_buffer, non_blocking) -> None:
    if pin_memory and not torch.cuda.is_available():
        msg = "consolidate(pin_memory=True) needs a CUDA device for pinned memory, and none is available; leave pin_memory=False"
        raise DeviceUnavailableError(msg)
    if return_early and num_threads > 1:
        if use_buffer:
            msg = "consolidate(return_early=True) cannot be used with use_buffer=True: the buffer is written to the file once the copies are done"
            raise ConsolidateArgumentError(msg)
        if non_blocking:
            msg = "consolidate(return_early=True) cannot be used with non_blocking=True: the storage cannot be synchronized once the copies are done"
            raise ConsolidateArgumentError(msg)


class ConsolidateMixin(tree.TreeMixin):
    """``consolidate``, ``is_consolidated``, ``from_consolidated`` and the pickling of the result.

    Calls: ``_reset_device``, ``_store_entry``, ``_tree_info``, ``_tree_inner``, ``_tree_items``,
        ``_tree_like``, ``_tree_value``.
    """

    __slots__ = ("_consolidated",)

    def consolidate(
        self: T,
        filename: Path | str | None = None,
        *,
        num_threads: int = 0,
        device: torch.device | None = None,
        non_blocking: bool = False,
        inplace: bool = False,
        return_early: bool = False,
        use_buffer: bool = False,
        share_memory: bool = False,
        pin_memory: bool = False,
        metadata: bool = False,
    ) -> T | TensorDictFuture:
        """Copies every leaf into one contiguous storage, and returns a tensordict of views of it.

        The leaves of the result are views into one flat ``torch.uint8`` storage, in
        the order of the tree (nested tensordicts, lazy stacks and tensorclasses
        included); non-tensor entries are kept as they are (sharing their value).
        The result is locked: its leaves can be written in place, but no entry can
        be added, removed or replaced. It pickles as that one storage plus a
        description of the tree, which is faster than pickling each leaf; through
        :mod:`torch.multiprocessing`, the other process maps the same storage. With
        ``filename`` (and ``use_buffer=False``) it pickles as the file's name instead,
        as memory-mapped tensordicts do: the unpickled copy maps the same file.

        If the tensordict is already consolidated, it is returned as it is:
        ``device`` and ``share_memory`` are then ignored with a ``FutureWarning``, and
        a ``filename`` other than its own file writes nothing (a ``UserWarning``);
        ``td.contiguous().consolidate(...)`` makes a new consolidated copy.

        Args:
            filename (str or Path, optional): a file to hold the storage. The leaves
                are then views into a memory map of the file, and the description of
                the tree is written after them, so that :meth:`from_consolidated`
                reads it back (the layout is the well-known TensorDict's, so either
                reads the other's files). An existing larger file is replaced.
                Defaults to ``None``: the storage is in memory.

        Keyword Args:
            num_threads (int, optional): the number of threads that copy the
                leaves. Defaults to ``0``: the calling thread copies them.
            device (torch.device, optional): the device of the storage; only the
                CPU with ``filename``. Defaults to ``None``: the tensordict's device,
                or the CPU.
            non_blocking (bool, optional): copies between devices may be
                asynchronous. Defaults to ``False``.
            inplace (bool, optional): replace the leaves of this tensordict by the
                views, and return it. Defaults to ``False``.
            return_early (bool, optional): with ``num_threads > 1``, return a
                ``tensordict.utils.TensorDictFuture`` of the result (a
                :class:`concurrent.futures.Future`) at once, while the threads copy.
                Defaults to ``False``.
            use_buffer (bool, optional): with ``filename``, copy into a buffer in
                shared memory, written to the file at the end (the leaves then view
                the buffer, not the file). Defaults to ``False``.
            share_memory (bool, optional): put the storage in shared memory.
                Defaults to ``False``.
            pin_memory (bool, optional): put the storage in pinned memory (needs
                CUDA). Defaults to ``False``.
            metadata (bool, optional): accepted for compatibility: the description
                of the tree is always kept. Defaults to ``False``.

        Returns:
            The consolidated tensordict (``self`` with ``inplace=True``), or a
            ``TensorDictFuture`` of it with ``return_early=True`` and ``num_threads > 1``.

        Raises:
            ConsolidateArgumentError: if ``filename`` is given with a device other
                than the CPU (a ``RuntimeError``), or ``return_early`` with
                ``use_buffer`` or ``non_blocking`` (a ``NotImplementedError``).
            DeviceUnavailableError: if ``pin_memory=True`` or a CUDA ``device`` is
                asked for without CUDA (a ``RuntimeError`` and ``AssertionError``).
            ConsolidateEntryError: if an entry cannot be consolidated (a strided
                nested tensor, an unbatched tensor; a ``NotImplementedError``).
            ConsolidatedFormatError: if ``filename`` is given and a non-tensor value
                is not JSON (a ``RuntimeError``).

        Examples:
            >>> import pickle
            >>> td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.ones(3, 2)}}, batch_size=[3])
            >>> out = td.consolidate()
            >>> out.is_consolidated(), out.is_locked
            (True, True)
            >>> len({leaf.untyped_storage().data_ptr() for leaf in out.values(True, True)})
            1
            >>> bool((pickle.loads(pickle.dumps(out)) == td).all())
            True
        """
        num_threads = num_threads or 0
        if self.is_consolidated():
            return self._consolidated_again(filename, device, share_memory)
        _check_flags(pin_memory, return_early, num_threads, use_buffer, non_blocking)
        storage_device = _storage_device(self, device, filename)
        plan = _Plan()
        meta = tree.describe(self, plan.entry)
        data_size = plan.offset
        total = None
        if filename is None:
            storage = torch.empty(data_size, dtype=torch.uint8, device=storage_device)
            if share_memory and storage_device.type == "cpu":
                storage.share_memory_()
        else:
            path = os.fspath(filename)
            payload = _metadata_json(meta)
            size = data_size + len(payload) + FOOTER_SIZE
            if use_buffer:
                total = torch.empty(size, dtype=torch.uint8).share_memory_()
            else:
                _replace_if_larger(path, size)
                total = torch.from_file(str(path), shared=True, size=size, dtype=torch.uint8)
            _write_footer(total, payload)
            storage = total[:data_size]
        jobs, new_leaves = plan.views(storage, num_threads)
        _zero_padding(plan, storage)
        futures = _copy(jobs, num_threads, return_early, non_blocking)
        on_file = torch.device("cpu") if filename is not None else None
        result = _assemble(self, iter(new_leaves), inplace, on_file)
        inner = result._tree_inner()
        inner._consolidated = {
            "storage": storage,
            "metadata": meta,
            "objects": tuple(_flat_objects(inner, [])),
        }
        result.lock_()
        # Unlocking ends the state, as in the reference; a class that never locks (a
        # NonTensorStack) keeps it.
        inner._consolidated["locked"] = inner.is_locked
        if filename is not None:
            if use_buffer:
                with open(path, "wb") as f:
                    f.write(total.numpy().tobytes())
            inner._consolidated["filename"] = Path(path).resolve()
            inner._consolidated["file_id"] = _file_id(path)
            inner._consolidated["mapped"] = not use_buffer
        if futures is not None:
            return TensorDictFuture(futures, result)
        return result

    def _consolidated_to(self, device: torch.device, non_blocking: bool):
        """Hook of ``to(device)``: a consolidated tensordict moved as one storage, still consolidated.

        Returns None when this tensordict is not consolidated (``to`` then moves each leaf).
        """
        if not self.is_consolidated():
            return None
        state = self._tree_inner()._consolidated
        meta = state["metadata"]
        _refresh_metadata(self, meta)
        out = _rebuild(meta, _Views(state["storage"].to(device, non_blocking=non_blocking)))
        out._reset_device(device)
        return out

    def _consolidated_again(self, filename, device, share_memory):
        state = self._consolidated
        storage = state["storage"]
        if filename is not None:
            own = state.get("filename")
            path = os.fspath(filename)
            if (
                own is not None
                and own == Path(path).resolve()
                and state.get("file_id") == _file_id(path)
            ):
                _refresh_metadata(self, state["metadata"])
                _rewrite_metadata(path, state["metadata"], storage.numel())
                state["file_id"] = _file_id(path)
            else:
                why = (
                    "it has no file of its own"
                    if own is None
                    else "only the file it was consolidated into is rewritten"
                )
                warn(
                    f"consolidate(filename={path!r}) writes nothing: the tensordict is already "
                    f"consolidated, and {why}. Call td.contiguous().consolidate(filename=...) to "
                    "write a new file.",
                    UserWarning,
                )
        ignored = []
        if device is not None:
            try:
                wanted = torch.device(device)
            except (RuntimeError, TypeError):
                wanted = storage.device
            if wanted.type != storage.device.type:
                ignored.append(f"device={str(wanted)!r}")
        if (
            share_memory
            and filename is None
            and storage.device.type == "cpu"
            and not storage.is_shared()
        ):
            ignored.append("share_memory=True")
        if ignored:
            warn(
                f"consolidate() ignores {' and '.join(ignored)} on a tensordict that is already "
                "consolidated, and returns it as is. Starting with TensorDict 0.17, the default "
                "will change to honouring it; call td.contiguous().consolidate(...) to get a new "
                "consolidated tensordict now.",
                FutureWarning,
            )
        return self

    def is_consolidated(self) -> bool:
        """Whether the leaves of the tensordict are views into one storage made by :meth:`consolidate`.

        It is ``True`` for the result of :meth:`consolidate`, of
        :meth:`from_consolidated` and for an unpickled copy of either, while the tree
        still matches the storage: in-place writes into the leaves keep it, while
        replacing, adding or removing an entry (in an unlocked copy), writing into a
        non-tensor entry, or unlocking the result of :meth:`consolidate` ends it.

        Returns:
            True while the tensordict is consolidated.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3))
            >>> td.is_consolidated(), td.consolidate().is_consolidated()
            (False, True)
        """
        state = getattr(self, "_consolidated", None)
        if state is None:
            return False
        if state["locked"] and not self.is_locked:
            # The reference forgets the consolidated state when the result is unlocked.
            del self._consolidated
            return False
        objects = state["objects"]
        current = _flat_objects(self, [])
        return len(current) == len(objects) and all(a is b for a, b in zip(current, objects))

    @classmethod
    def from_consolidated(
        cls, filename: str | Path | torch.Tensor | torch.UntypedStorage
    ) -> TensorCollection:
        """Reads a tensordict from a file written by :meth:`consolidate` with ``filename``.

        The result is consolidated: its leaves are views into a copy-on-write memory
        map of the file (writes into them do not reach the file). It is of the class
        the file records (a TensorDict, a lazy stack, a tensorclass, which must be
        defined), with the batch sizes and names it had when the file was written,
        and locked if it was locked then. Files written by the well-known TensorDict
        library load too.

        Args:
            filename (str or Path): the file; a 1-D ``torch.uint8`` tensor or an
                ``UntypedStorage`` holding the bytes of such a file is read the same.

        Returns:
            The tensordict the file holds.

        Raises:
            ConsolidatedNotFoundError: (a ``FileNotFoundError``) if the file does not
                exist, naming it.
            ConsolidatedFormatError: if the file is not a consolidated file: too short,
                a footer or metadata that cannot be read, a record that does not fit
                the data, an unknown class (a ``RuntimeError`` and ``ValueError``).

        Examples:
            >>> import os, tempfile
            >>> td = TensorDict(a=torch.zeros(3), b={"c": torch.ones(3)}, batch_size=[3])
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     path = os.path.join(folder, "td.bin")
            ...     _ = td.consolidate(filename=path)
            ...     loaded = TensorDict.from_consolidated(path)
            ...     print(loaded["b", "c"], loaded.is_consolidated())
            tensor([1., 1., 1.]) True
        """
        metadata, storage, where = _read_file(filename)
        return _rebuild_named(metadata, _Views(storage), where)

    def __reduce_ex__(self, protocol):
        # A consolidated tensordict pickles as its storage plus the metadata: one buffer
        # (one shared-memory handle through torch.multiprocessing) instead of one per leaf.
        state = getattr(self, "_consolidated", None)
        if state is None or not self.is_consolidated():
            if getattr(self, "_consolidated", None) is not None:
                del self._consolidated  # a stale state (and its storage) is never pickled
            return super().__reduce_ex__(protocol)
        meta = state["metadata"]
        _refresh_metadata(self, meta)
        path = state.get("filename")
        if state.get("mapped") and _file_id(path) == state["file_id"]:
            # Its leaves map the file: the file name travels, never the data (torch cannot
            # send a handle of a file-backed storage through torch.multiprocessing).
            return (_rebuild_consolidated_file, (str(path), meta, state["storage"].numel()))
        return (_rebuild_consolidated, (meta, state["storage"]))


def _refresh_metadata(obj, meta: dict) -> None:
    """Writes the current batch sizes and names of ``obj``'s tree into its ``meta``, in place."""
    info = meta["cls_metadata"]
    current = obj._tree_info()
    for field in ("batch_size", "names", "stack_dim_name"):
        if field in current:
            info[field] = current[field]
    items = obj._tree_items()
    # a stack's members by position, its description's keys strings
    children = dict(items) if "stack_dim" not in current else {str(k): v for k, v in items}
    for key, (data, _, device) in list(meta["non_tensors"].items()):
        meta["non_tensors"][key] = (data, list(children[key].batch_size), device)
    for key, sub in meta.items():
        if key not in tree.LEVEL_FIELDS and key in children:
            _refresh_metadata(children[key], sub)


def _rewrite_metadata(path: str, meta: dict, data_size: int) -> None:
    """Rewrites the metadata after the data of a consolidated file, padded with spaces to its size."""
    payload = _metadata_json(meta)
    room = os.path.getsize(path) - data_size - FOOTER_SIZE
    if len(payload) > room:
        msg = f"cannot rewrite the metadata of {path!r}: it needs {len(payload)} bytes and the file has room for {room}"
        raise ConsolidatedFormatError(msg)
    payload = payload.ljust(room)
    with open(path, "r+b") as f:
        f.seek(data_size)
        f.write(payload)
        f.write(len(payload).to_bytes(FOOTER_SIZE, "little", signed=True))
