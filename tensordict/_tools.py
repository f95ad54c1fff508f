"""Small tools of ``tensordict.utils``: membership and duplicates by one entry, timers, a tree printer.

``isin`` and ``remove_duplicates`` compare the slices of one entry along a batch
dim; ``timeit`` accumulates named timings; ``print_directory_tree`` logs a folder
(a memory-mapped tensordict, say).
"""

from __future__ import annotations

import logging
import os
import time

import torch

from tensordict._collection import TensorCollection
from tensordict._keys import NestedKey

logger = logging.getLogger("tensordict")
"""The tensordict logger: ``timeit.print`` and ``print_directory_tree`` log through it."""


def _entry(td, key: NestedKey, what: str) -> torch.Tensor:
    value = td.get(key, None)
    if not isinstance(value, torch.Tensor):
        found = "missing" if value is None else f"a {type(value).__name__}"
        msg = f"{what}: the key {key!r} must hold a tensor, it is {found}"
        raise KeyError(msg)
    return value


def _batch_dim(td, dim: int, what: str) -> int:
    n = td.batch_dims
    if isinstance(dim, bool) or not isinstance(dim, int) or not -n <= dim < n:
        msg = f"{what}: dim {dim!r} is not a batch dim of a tensordict with batch size {list(td.batch_size)}"
        raise ValueError(msg)
    return dim + n if dim < 0 else dim


def _rows(value: torch.Tensor, dim: int) -> torch.Tensor:
    """``value`` as one flattened row per element along ``dim``."""
    return value.movedim(dim, 0).reshape(value.shape[dim], -1)


def isin(
    input: TensorCollection,  # noqa: A002
    reference: TensorCollection,
    key: NestedKey,
    dim: int = 0,
) -> torch.Tensor:
    """Tells which elements of ``input`` along ``dim`` are also in ``reference``.

    The entry ``key`` is cut into slices along ``dim``; an element of ``input`` is in
    ``reference`` when its slice equals one of the slices of ``reference[key]``.

    Args:
        input (TensorDictBase): the tensordict to test.
        reference (TensorDictBase): the tensordict to look in, with as many batch dims.
        key (NestedKey): the entry compared; a tensor in both.
        dim (int, optional): the batch dim along which elements are taken. Defaults to 0.

    Returns:
        A boolean tensor of length ``input.batch_size[dim]``.

    Raises:
        KeyError: if ``key`` is missing or not a tensor in either tensordict.
        ValueError: if the batch dims differ in number, ``dim`` is not a batch dim, or
            the two entries' shapes differ other than along ``dim``.

    Examples:
        >>> from tensordict.utils import isin
        >>> td = TensorDict(x=torch.tensor([[1, 2], [3, 4], [1, 2], [5, 6]]), batch_size=[4])
        >>> reference = TensorDict(x=torch.tensor([[1, 2], [5, 6]]), batch_size=[2])
        >>> isin(td, reference, key="x")
        tensor([ True, False,  True,  True])
    """
    if input.batch_dims != reference.batch_dims:
        msg = (
            f"isin: the tensordicts have {input.batch_dims} and {reference.batch_dims} batch "
            "dims; they must have as many"
        )
        raise ValueError(msg)
    d = _batch_dim(input, dim, "isin")
    mine, theirs = _entry(input, key, "isin"), _entry(reference, key, "isin")
    if mine.shape[:d] + mine.shape[d + 1 :] != theirs.shape[:d] + theirs.shape[d + 1 :]:
        msg = f"isin: the entries {key!r} have shapes {list(mine.shape)} and {list(theirs.shape)}, which differ other than along dim {d}"
        raise ValueError(msg)
    a, b = _rows(mine, d), _rows(theirs, d)
    if a.shape[0] == 0 or b.shape[0] == 0:
        return torch.zeros(a.shape[0], dtype=torch.bool, device=mine.device)
    both = torch.cat([a, b])
    _, ids = torch.unique(both, dim=0, return_inverse=True)
    return torch.isin(ids[: a.shape[0]], ids[a.shape[0] :])


def remove_duplicates(
    input: TensorCollection,  # noqa: A002
    key: NestedKey,
    dim: int = 0,
    *,
    return_indices: bool = False,
) -> TensorCollection | tuple[TensorCollection, torch.Tensor]:
    """Keeps one element per distinct value of ``key`` along ``dim``: the first of each.

    The entry ``key`` is cut into slices along ``dim``; of each group of equal slices
    the first element is kept, with the same indices in every other entry. The
    result is sorted by the value of ``key`` (``torch.unique``'s order), not in the
    original order, and its entries are new tensors.

    Args:
        input (TensorDictBase): the tensordict to deduplicate.
        key (NestedKey): the entry that defines duplicates; a tensor.
        dim (int, optional): the batch dim along which duplicates are looked for.
            Defaults to 0.

    Keyword Args:
        return_indices (bool, optional): also return, for each element of ``input``
            along ``dim``, the index of its value in the result. Defaults to ``False``.

    Returns:
        The deduplicated tensordict, or ``(tensordict, indices)``.

    Raises:
        KeyError: if ``key`` is missing or not a tensor.
        ValueError: if ``dim`` is not a batch dim.

    Examples:
        >>> from tensordict.utils import remove_duplicates
        >>> td = TensorDict(x=torch.tensor([7, 1, 7, 3]), y=torch.arange(4), batch_size=[4])
        >>> out, indices = remove_duplicates(td, key="x", return_indices=True)
        >>> out["x"], out["y"], indices
        (tensor([1, 3, 7]), tensor([1, 3, 0]), tensor([2, 0, 2, 1]))
    """
    d = _batch_dim(input, dim, "remove_duplicates")
    rows = _rows(_entry(input, key, "remove_duplicates"), d)
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    n = inverse.numel()
    count = int(inverse.max()) + 1 if n else 0
    positions = torch.arange(n, device=inverse.device)
    first = torch.full((count,), n, dtype=torch.long, device=inverse.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    out = input[(slice(None),) * d + (first,)]
    return (out, inverse) if return_indices else out


def print_directory_tree(
    path: str | os.PathLike, indent: str = "", display_metadata: bool = True
) -> str:
    """Logs the files and folders under ``path`` (at ``INFO``, with :data:`logger`) and returns them.

    Each level adds four spaces to ``indent``; entries come in :func:`os.listdir`
    order. Symbolic links are listed, never followed.

    Args:
        path (str or os.PathLike): the folder (or file) to show.
        indent (str, optional): put before every line. Defaults to ``""``.
        display_metadata (bool, optional): start with a line giving the total size of
            the files under ``path``. Defaults to ``True``.

    Returns:
        The lines logged, joined by newlines.

    Raises:
        FileNotFoundError: if ``path`` does not exist.

    Examples:
        >>> import tempfile
        >>> from tensordict.utils import print_directory_tree
        >>> with tempfile.TemporaryDirectory() as path:
        ...     _ = TensorDict(a=torch.zeros(3), batch_size=[3]).memmap(path)
        ...     tree = print_directory_tree(path, display_metadata=False)
        >>> sorted(line.strip() for line in tree.splitlines()[1:])
        ['a.memmap', 'meta.json']
    """
    path = os.fspath(path)
    if not os.path.lexists(path):
        msg = f"print_directory_tree: {path!r} does not exist"
        raise FileNotFoundError(msg)
    lines = []
    if display_metadata:
        lines.append(f"{indent}total size: {_size_text(_total_size(path))}")
    _tree_lines(path, indent, lines)
    for line in lines:
        logger.info(line)
    return "\n".join(lines)


def _tree_lines(path: str, indent: str, lines: list) -> None:
    name = os.path.basename(os.path.normpath(path)) or path
    if os.path.isdir(path) and not os.path.islink(path):
        lines.append(f"{indent}{name}/")
        for child in os.listdir(path):
            _tree_lines(os.path.join(path, child), indent + "    ", lines)
    else:
        lines.append(f"{indent}{name}")


def _total_size(path: str) -> int:
    if os.path.islink(path) or not os.path.isdir(path):
        return os.lstat(path).st_size
    return sum(_total_size(os.path.join(path, child)) for child in os.listdir(path))


def _size_text(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{size} B"


class timeit:  # noqa: N801 - the well-known API's name
    """Accumulates the time spent under a name, as a decorator or a ``with`` block.

    Each name keeps its call count and total time; :meth:`print` logs them (with
    :data:`logger`, at ``INFO``) and returns them, :meth:`erase` forgets them all.

    Args:
        name (str): the name under which the time is added.

    Examples:
        >>> from tensordict.utils import timeit
        >>> @timeit("step")
        ... def step():
        ...     return 1
        >>> _ = step()
        >>> with timeit("block"):
        ...     _ = step()
        >>> sorted(timeit.todict())
        ['block', 'step']
        >>> timeit.erase()
    """

    _totals: dict = {}

    def __init__(self, name: str) -> None:
        self.name = name
        self._start: list[float] = []

    def __call__(self, fn):
        def timed(*args, **kwargs):
            with timeit(self.name):
                return fn(*args, **kwargs)

        timed.__name__ = getattr(fn, "__name__", "timed")
        timed.__doc__ = fn.__doc__
        timed.__wrapped__ = fn
        return timed

    def __enter__(self):
        self._start.append(time.perf_counter())
        return self

    def __exit__(self, *exc) -> None:
        elapsed = time.perf_counter() - self._start.pop()
        count, total = timeit._totals.get(self.name, (0, 0.0))
        timeit._totals[self.name] = (count + 1, total + elapsed)

    @classmethod
    def todict(cls, percall: bool = True) -> dict:
        """Name to mean seconds per call (or total seconds with ``percall=False``).

        Examples:
            >>> with timeit("x"):
            ...     pass
            >>> list(timeit.todict())
            ['x']
            >>> timeit.erase()
        """
        return {n: (t / c if percall else t) for n, (c, t) in cls._totals.items()}

    @classmethod
    def print(cls, prefix: str | None = None) -> str:  # noqa: A003
        """Logs each name's mean time per call and call count; returns the lines.

        Args:
            prefix (str, optional): put before each line.

        Examples:
            >>> with timeit("x"):
            ...     pass
            >>> timeit.print().startswith("x took")
            True
            >>> timeit.erase()
        """
        lines = []
        for name, (count, total) in cls._totals.items():
            line = f"{name} took {total / count * 1000:.4f} msec (total = {total:.4f} sec, {count} calls)"
            lines.append(f"{prefix} {line}" if prefix else line)
        for line in lines:
            logger.info(line)
        return "\n".join(lines)

    @classmethod
    def erase(cls) -> None:
        """Forgets every recorded time.

        Examples:
            >>> timeit.erase()
            >>> timeit.todict()
            {}
        """
        cls._totals.clear()
