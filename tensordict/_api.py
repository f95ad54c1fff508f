"""The package's module functions that forward to the classes: load, save, from_dict, fromkeys.

``memmap`` lives with the storage (:mod:`tensordict.memmap`); the converters and stacking
functions live with their classes. These are the ones that need :class:`TensorDict`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from tensordict._collection import TensorCollection
from tensordict._keys import NestedKey
from tensordict._td import TensorDict
from tensordict._typing import ShapeType
from tensordict.memmap import _append, memmap

__all__ = [
    "append_memmap",
    "from_consolidated",
    "from_dict",
    "fromkeys",
    "load",
    "load_memmap",
    "save",
]


def save(
    data: TensorCollection,
    prefix: str | os.PathLike | None = None,
    copy_existing: bool = False,
    *,
    num_threads: int = 0,
    return_early: bool = False,
    share_non_tensor: bool = False,
    robust_key: bool | None = None,
    archive: bool | None = None,
    compression: str | int | None = None,
    atomic: bool = False,
) -> TensorCollection:
    """Saves a tensordict to a folder, as :func:`tensordict.memmap` does; returns the mapped copy.

    Args:
        data (TensorDictBase): the tensordict or tensorclass instance to save.
        prefix (str or path, optional): the folder.
        copy_existing (bool, optional): copy tensors already mapped elsewhere. Defaults to False.

    Keyword Args:
        num_threads (int, optional): threads writing the files. Defaults to 0.
        return_early (bool, optional): return before the writes finish. Defaults to False.
        share_non_tensor (bool, optional): share non-tensor values between processes.
        robust_key (bool, optional): percent-encode keys in file names (None: True).
        archive (bool, optional): write one ``.tdz`` archive file (None: when the path
            ends with ``".tdz"``).
        compression (str or int, optional): how an archive's tensor payloads are
            compressed. Defaults to None (stored, so that they load as views).
        atomic (bool, optional): accepted for compatibility: every write is atomic (a
            crash leaves the old tree or the new one), whatever its value.

    Returns:
        The memory-mapped copy, locked (for an archive, the archive loaded back).

    Raises:
        TypeError: if ``data`` is not a tensordict or a tensorclass instance.

    Examples:
        >>> import tempfile, tensordict, torch
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = tensordict.save(tensordict.TensorDict(a=torch.zeros(2)), folder)
        ...     print(tensordict.load(folder)["a"])
        MemoryMappedTensor([0., 0.])
    """
    return memmap(
        data,
        prefix,
        copy_existing,
        num_threads=num_threads,
        return_early=return_early,
        share_non_tensor=share_non_tensor,
        robust_key=robust_key,
        archive=archive,
        compression=compression,
        atomic=atomic,
    )


def load_memmap(
    prefix: str | os.PathLike,
    device: torch.device | str | None = None,
    non_blocking: bool = False,
    *,
    out: TensorCollection | None = None,
    robust_key: bool | None = None,
    subpath: NestedKey | None = None,
    mode: str | None = None,
    num_threads: int = 0,
    allow_pickle: bool = False,
) -> TensorCollection:
    """Loads a memory-mapped folder (or ``.tdz`` archive) written by this library or the well-known one.

    The same as :meth:`TensorDict.load_memmap <tensordict.TensorDictBase.load_memmap>`: the
    result is of the class the folder records (a TensorDict, a lazy stack, a tensorclass).

    Args:
        prefix (str or path): the folder.
        device (torch.device, optional): move the result there (copying it).
        non_blocking (bool, optional): non-blocking copies with ``device``.

    Keyword Args:
        out (TensorDictBase, optional): load into this tensordict instead.
        robust_key (bool, optional): how keys were encoded in file names (None: either).
        subpath (NestedKey or str, optional): load only the nested tensordict at this
            key (a nested key, or its parts joined by ``"/"``). Defaults to the root.
        mode (str, optional): ``"r"`` maps every file copy-on-write and the result
            refuses to change its folder; ``"r+"`` maps every file shared; ``None``
            (default) shares the files this process may write.
        num_threads (int, optional): accepted for compatibility, without effect (files
            are mapped, compressed leaves inflated one after the other). Defaults to 0.
        allow_pickle (bool, optional): unpickle values stored as pickles. Defaults to False.

    Returns:
        The loaded tensordict, unlocked, its tensors mapped from the files.

    Raises:
        FileNotFoundError: if the folder or its ``meta.json`` is missing.
        NotADirectoryError: if ``prefix`` is a file.
        ValueError: if the folder is not a valid memory-mapped tensordict, ``mode`` is
            unknown or ``subpath`` names no sub-tensordict.

    Examples:
        >>> import tempfile, tensordict, torch
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = tensordict.TensorDict(a=torch.ones(2)).memmap(folder)
        ...     print(tensordict.load_memmap(folder)["a"])
        MemoryMappedTensor([1., 1.])
    """
    return TensorDict.load_memmap(
        prefix,
        device,
        non_blocking,
        out=out,
        robust_key=robust_key,
        subpath=subpath,
        mode=mode,
        num_threads=num_threads,
        allow_pickle=allow_pickle,
    )


load = load_memmap


def append_memmap(
    prefix: str | os.PathLike, rows: TensorCollection, *, allow_pickle: bool | None = None
) -> None:
    """Appends rows to a tensordict saved in a folder, along its first batch dimension, in one step.

    Every leaf grows by the rows given, and so does the first batch dimension of every
    level. The grown tree is built beside the folder (each leaf's file is its old
    bytes, copied in the kernel, then the new rows'; every other file is hard-linked)
    and exchanged with the folder in one step. So an append killed at any moment
    leaves the old rows or the new ones, never part of them; a
    :func:`~tensordict.load_memmap` during an append gets the old tree or the new
    one, never levels of both (it reads the folder again when the folder was
    exchanged while it read); and tensordicts that mapped the files before keep their
    old rows (:meth:`~tensordict.TensorDictBase.memmap_refresh_` sees the new ones).
    The price: an append writes the saved rows again, so its cost grows with the
    saved size. Appends to one folder take turns (its lock); another writer adding
    entries to a nested level meanwhile can lose them, so use one writer at a time
    (:func:`~tensordict.memmap.claim_writer` makes it checked).

    ``rows`` must have the keys, the classes, the dtypes and the trailing shapes of
    the saved tensordict, and its batch size may differ from the saved one in its
    first dimension only. A non-tensor entry stays as saved, and its value in
    ``rows`` must be equal to it: one value, or a
    :class:`~tensordict.NonTensorStack` of equal values. A saved
    :class:`~tensordict.NonTensorStack`, a lazy stack, a nested tensor and an archive
    cannot grow, and raise. Everything is checked before the first file is written.

    Args:
        prefix (str or path): the folder that :func:`~tensordict.save` or
            :func:`~tensordict.memmap` wrote.
        rows (TensorDictBase or tensorclass): the rows to append.

    Keyword Args:
        allow_pickle (bool, optional): unpickle the saved non-tensor values that are
            pickled, to compare them with those of ``rows``; only for folders you
            trust. Defaults to ``None`` (no).

    Raises:
        AppendError: if ``rows`` cannot be appended (naming the entry and why), the
            tree cannot grow, ``prefix`` is an archive, or its folder cannot be
            exchanged in one step (a mount point, the working directory, a file system
            without ``renameat2``). A ``ValueError``.
        FileNotFoundError: if ``prefix`` holds no saved tensordict.

    Examples:
        >>> import tempfile, tensordict, torch
        >>> td = tensordict.TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = tensordict.save(td, folder)
        ...     rows = tensordict.TensorDict(a=torch.ones(2, 2), batch_size=[2])
        ...     tensordict.append_memmap(folder, rows)
        ...     print(tensordict.load_memmap(folder)["a"].sum(-1).tolist())
        [0.0, 0.0, 0.0, 2.0, 2.0]
    """
    _append.append_rows(prefix, rows, allow_pickle=allow_pickle)


def from_dict(
    d: Mapping,
    *,
    auto_batch_size: bool | None = None,
    batch_dims: int | None = None,
    device: torch.device | str | None = None,
    batch_size: ShapeType | None = None,
    names: Sequence[str | None] | None = None,
) -> TensorDict:
    """Builds a TensorDict from a nested dict, as :meth:`TensorDict.from_dict` does.

    Args:
        d (dict): the nested dict of tensors, numbers and other values.

    Keyword Args:
        auto_batch_size (bool, optional): find the largest batch size the entries share
            when ``batch_size`` is not given.
        batch_dims (int, optional): with ``auto_batch_size``, the number of batch dims.
        device (torch.device, optional): the device of the result.
        batch_size (torch.Size, optional): the batch size.
        names (list of str, optional): the names of the batch dims.

    Returns:
        TensorDict: the new tensordict.

    Raises:
        TypeError: if ``d`` is not a mapping.

    Examples:
        >>> import tensordict, torch
        >>> tensordict.from_dict({"a": torch.zeros(3, 2)}, auto_batch_size=True).batch_size
        torch.Size([3, 2])
    """
    return TensorDict.from_dict(
        d,
        batch_size=batch_size,
        device=device,
        batch_dims=batch_dims,
        names=names,
        auto_batch_size=auto_batch_size,
    )


def fromkeys(keys: Iterable[NestedKey], value: Any = 0) -> TensorDict:
    """Builds a TensorDict with one entry per key, each holding ``value``.

    Args:
        keys (list of NestedKey): the keys.
        value (optional): the value of every entry. Defaults to 0.

    Returns:
        TensorDict: the new tensordict, of empty batch size.

    Examples:
        >>> import tensordict
        >>> tensordict.fromkeys(["a", ("b", "c")], 1)["b", "c"]
        tensor(1)
    """
    return TensorDict.fromkeys(keys, value)


def from_consolidated(
    filename: str | os.PathLike | torch.Tensor | torch.UntypedStorage,
) -> TensorCollection:
    """Reads a tensordict from a file written by ``consolidate(filename=...)``.

    The same as :meth:`TensorDict.from_consolidated
    <tensordict.TensorDictBase.from_consolidated>`.

    Args:
        filename (str or Path): the file.

    Returns:
        The tensordict the file holds, consolidated over a copy-on-write map of it.

    Raises:
        FileNotFoundError: if the file does not exist.
        ConsolidatedFormatError: if it is not a consolidated file (a ``RuntimeError``).

    Examples:
        >>> import os, tempfile, tensordict, torch
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "td.bin")
        ...     _ = tensordict.TensorDict(a=torch.arange(3)).consolidate(filename=path)
        ...     print(tensordict.from_consolidated(path)["a"])
        tensor([0, 1, 2])
    """
    return TensorDict.from_consolidated(filename)
