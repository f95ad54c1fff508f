"""Memory-mapped storage: tensors in files or shared memory, and the on-disk format.

The import path of the well-known API: ``from tensordict.memmap import MemoryMappedTensor``.
The well-known package also offers ``tensordict.memmap(data, prefix)`` as a function; this
module is callable so that both spellings work: calling it calls :func:`memmap`.
"""

from __future__ import annotations

import os
import sys
import types
from concurrent.futures import Future

from tensordict._typing import T
from tensordict.memmap._fs import claim_writer, release_writer
from tensordict.memmap.tensor import MemoryMappedTensor

__all__ = ["MemoryMappedTensor", "claim_writer", "memmap", "release_writer"]


def memmap(
    data: T,
    prefix: str | os.PathLike | None = None,
    copy_existing: bool = False,
    *,
    num_threads: int = 0,
    return_early: bool = False,
    share_non_tensor: bool = False,
    existsok: bool = True,
    robust_key: bool | None = None,
    archive: bool | None = None,
    compression: str | int | None = None,
    atomic: bool = False,
) -> T | Future:
    """Writes a tensordict (or tensorclass) to memory-mapped storage and returns the mapped copy.

    The same as ``data.memmap(prefix, ...)``; see :meth:`~tensordict.TensorDictBase.memmap`.

    Args:
        data (TensorDictBase): the tensordict or tensorclass instance to write.
        prefix (str or path, optional): the folder; None maps each tensor in anonymous
            shared memory.
        copy_existing (bool, optional): copy a tensor already mapped elsewhere instead of
            raising. Defaults to False.

    Keyword Args:
        num_threads (int, optional): threads writing the files. Defaults to 0.
        return_early (bool, optional): return before the writes finish. Defaults to False.
        share_non_tensor (bool, optional): share non-tensor values between processes.
        existsok (bool, optional): overwrite files already in the folder. Defaults to True.
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
        >>> import tensordict, torch
        >>> out = tensordict.memmap(tensordict.TensorDict(a=torch.zeros(2)))
        >>> out.is_memmap()
        True
    """
    if not callable(getattr(data, "memmap", None)):
        msg = f"memmap writes a tensordict or a tensorclass instance, got a {type(data).__name__}"
        raise TypeError(msg)
    return data.memmap(
        prefix,
        copy_existing,
        num_threads=num_threads,
        return_early=return_early,
        share_non_tensor=share_non_tensor,
        existsok=existsok,
        robust_key=robust_key,
        archive=archive,
        compression=compression,
        atomic=atomic,
    )


class _CallableModule(types.ModuleType):
    """This module, callable: ``tensordict.memmap(td, prefix)`` is :func:`memmap`."""

    def __call__(self, *args, **kwargs):
        return memmap(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
