"""The one-buffer form of a tree, as :mod:`tensordict._ops.distributed` sends it.

A tree travels as a description and one ``uint8`` buffer. The description comes from
the walk of :mod:`tensordict._ops.tree` (classes by their stable names, batch sizes,
keys; non-tensor entries whole), and names for each leaf its byte offset, shape and
dtype. In the buffer every leaf starts at a multiple of :data:`ALIGN` bytes, and the
gaps are zeros, so that the receiver views each leaf in place and the bytes on the
wire never carry stray memory. A buffer whose leaves are already such views (a tree
that :func:`deserialize` built) is sent as it is, without a copy.

The names are a protocol between this module and ``distributed.py``:

* :func:`layout`: the offset of each leaf and the buffer's size.
* :func:`pack` / :func:`unpack_into`: leaves to one buffer and back, in place.
* :func:`packed_view`: the buffer the leaves already live in, if any.
* :func:`serialize` / :func:`deserialize`: a whole tree to ``(meta, buffer)`` and back.
* :func:`device_of`: where the buffer of some leaves goes.

Packing is isolated here so that the one-buffer form of ``consolidate()`` can replace
it later.
"""

from __future__ import annotations

import torch

from tensordict._collection import TensorCollection
from tensordict._ops import tree
from tensordict._typing import DeviceType

ALIGN = 16
"""Every leaf of a packed buffer starts at a multiple of this many bytes, so that it can be viewed in place."""


# ====================================================================== packing
def layout(leaves: list) -> tuple[list, int]:
    """The byte offset of each leaf in a packed buffer, and the buffer's size."""
    offsets, end = [], 0
    for _, t in leaves:
        end = -(-end // ALIGN) * ALIGN
        offsets.append(end)
        end += t.numel() * t.element_size()
    return offsets, end


def device_of(leaves: list) -> torch.device:
    """The device of the first leaf (the CPU when there is none): where a packed buffer goes."""
    return leaves[0][1].device if leaves else torch.device("cpu")


def packed_view(leaves: list, offsets: list, size: int) -> torch.Tensor | None:
    """The buffer the leaves already live in, when they are the views :func:`deserialize` makes; else None."""
    if not leaves or size == 0:
        return None
    first = leaves[0][1]
    if not first.is_contiguous():
        return None
    storage = first.untyped_storage()
    base = first.data_ptr() - offsets[0]
    begin = base - storage.data_ptr()
    if begin < 0 or begin + size > storage.nbytes():
        return None
    for (_, t), off in zip(leaves, offsets):
        if t.numel() == 0:
            continue
        if not t.is_contiguous() or t.untyped_storage().data_ptr() != storage.data_ptr():
            return None
        if t.data_ptr() != base + off:
            return None
    view = torch.empty(0, dtype=torch.uint8, device=first.device)
    return view.set_(storage, begin, (size,))


def _slot(buffer: torch.Tensor, offset: int, t) -> torch.Tensor:
    """The bytes of ``buffer`` at ``offset`` viewed with the dtype and shape of ``t``."""
    nbytes = t.numel() * t.element_size()
    return buffer[offset : offset + nbytes].view(t.dtype).view(t.shape)


def pack(leaves: list, device: DeviceType | None = None) -> torch.Tensor:
    """Every leaf's bytes in one ``uint8`` buffer (the leaves' own, without a copy, when already packed)."""
    offsets, size = layout(leaves)
    view = packed_view(leaves, offsets, size)
    if view is not None and (device is None or view.device == torch.device(device)):
        return view
    buffer = torch.empty(size, dtype=torch.uint8, device=device or device_of(leaves))
    end = 0
    with torch.no_grad():
        for (_, t), off in zip(leaves, offsets):
            buffer[end:off].zero_()  # the alignment gap: no stray memory on the wire
            if t.numel():
                _slot(buffer, off, t).copy_(t)
            end = off + t.numel() * t.element_size()
    return buffer


def unpack_into(buffer: torch.Tensor, leaves: list) -> None:
    """Writes a packed buffer into the leaves, in place (a memory-mapped leaf writes its file)."""
    offsets, _ = layout(leaves)
    with torch.no_grad():
        for (_, t), off in zip(leaves, offsets):
            if t.numel() and t.data_ptr() != _slot(buffer, off, t).data_ptr():
                t.copy_(_slot(buffer, off, t))


# ====================================================================== describing and rebuilding trees
def serialize(
    td: TensorCollection, tensorclass: str | None = None, device: DeviceType | None = None
) -> tuple[dict, torch.Tensor, bool]:
    """``(meta, buffer, own)``: the description of ``td`` with the buffer's layout, its packed
    leaves, and whether that buffer is the one the leaves already live in (no copy made).

    ``tensorclass``: the stable name of the tensorclass that ``td`` is the tensordict of.
    """
    leaves = []

    def leaf(value, records: dict, key: str, path: tuple) -> None:
        if not isinstance(value, torch.Tensor) or value.is_nested or value.layout != torch.strided:
            what = f"a {value.layout} tensor" if isinstance(value, torch.Tensor) else "it"
            msg = f"cannot send the leaf {key!r}: {what} has no packed form"
            raise NotImplementedError(msg)
        records[key] = len(leaves)
        leaves.append(((*path, key), value.detach()))

    # non-tensor entries travel whole (pickled), as they are
    described = tree.describe(td, leaf, sort=True, non_tensor=lambda value: value)
    if tensorclass is not None:
        described["cls"] = tensorclass
    offsets, size = layout(leaves)
    own = packed_view(leaves, offsets, size)
    buffer = (
        own if own is not None and (device is None or own.device == torch.device(device)) else None
    )
    if buffer is None:
        buffer = pack(leaves, device)
    specs = [
        (off, list(t.shape), str(t.dtype).removeprefix("torch."))
        for (_, t), off in zip(leaves, offsets)
    ]
    # classes by their stable names; a class of no registered name arrives as a TensorDict
    meta = {
        "tree": tree.named_classes(described, unknown="TensorDict"),
        "leaves": specs,
        "nbytes": size,
        "device": str(buffer.device),
    }
    return meta, buffer, buffer is own


def deserialize(meta: dict, buffer: torch.Tensor) -> TensorCollection:
    """The tree that :func:`serialize` described, its leaves views of ``buffer`` (no copy)."""
    leaves = [
        buffer[off : off + _nbytes(shape, dtype)].view(getattr(torch, dtype)).view(shape)
        for off, shape, dtype in meta["leaves"]
    ]
    return tree.rebuild(
        meta["tree"],
        lambda records, where: {key: leaves[index] for key, index in records.items()},
        non_tensor=lambda value: value,
        lock=False,
        sort=True,
        device=buffer.device if buffer.device.type != "cpu" else None,
    )


def _nbytes(shape: list, dtype: str) -> int:
    numel = 1
    for size in shape:
        numel *= size
    return numel * getattr(torch, dtype).itemsize
