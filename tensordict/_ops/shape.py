"""Shape methods: every one acts on the batch dimensions and leaves feature dimensions alone.

Each method computes the new batch size once, then hands one per-entry function
``op(value, extra)`` to the class primitive ``_batch_op`` (or ``_batch_op_multi``
for methods that return several tensordicts); ``extra`` is the entry's shape
beyond the batch dimensions. Sub-tensordicts receive the same public call with
their full shape, so nesting needs no special case.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tensordict._collection import is_tensor_collection
from tensordict._nontensor import _dummy
from tensordict.errors import DimensionError


def _shape_args(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (Sequence, torch.Size, torch.Tensor)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def _norm_dim(dim: int, ndim: int, what: str = "dimension") -> int:
    if not -ndim <= dim < max(ndim, 1) or (ndim == 0):
        msg = f"{what} {dim} is out of range for a tensordict with {ndim} batch dimensions"
        raise DimensionError(msg)
    return dim + ndim if dim < 0 else dim


def _trailing(mask: torch.Tensor, value) -> torch.Tensor:
    """``mask`` with singleton dims appended to broadcast over ``value``'s feature dims."""
    ndim = value.ndim if isinstance(value, torch.Tensor) else len(value.batch_size)
    extra = ndim - mask.ndim
    return mask.reshape(mask.shape + (1,) * extra) if extra > 0 else mask


class ShapeMixin:
    """Reshaping, permuting, splitting and gathering along the batch dimensions."""

    __slots__ = ()

    def _reshape_batch(self, new_batch_size: torch.Size):
        return self._batch_op(lambda x, extra: x.reshape(new_batch_size + extra), new_batch_size)

    def reshape(self, *shape):
        """Returns a tensordict whose batch dims are reshaped to ``shape`` (-1 is inferred).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.reshape(-1)["a"].shape
            torch.Size([6, 4])
        """
        new = _dummy(self.batch_size).reshape(_shape_args(shape)).shape
        if new == self.batch_size:
            return self
        return self._reshape_batch(new)

    def view(self, *shape):
        """Returns a tensordict whose leaves are views with the batch dims reshaped to ``shape``.

        Raises:
            RuntimeError: if a leaf cannot be viewed with the new shape.
        """
        new = _dummy(self.batch_size).reshape(_shape_args(shape)).shape
        if new == self.batch_size:
            return self
        return self._batch_op(lambda x, extra: x.view(new + extra), new)

    def permute(self, *dims):
        """Returns a tensordict with the batch dims permuted.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.permute(1, 0)["a"].shape
            torch.Size([3, 2, 4])
        """
        ndim = self.batch_dims
        order = [_norm_dim(d, ndim) for d in _shape_args(dims)]
        if sorted(order) != list(range(ndim)):
            msg = f"permute needs each of the {ndim} batch dimensions once, got {list(_shape_args(dims))}"
            raise ValueError(msg)
        new = torch.Size(self.batch_size[d] for d in order)
        names = self.names
        new_names = None if names is None else [names[d] for d in order]
        return self._batch_op(
            lambda x, extra: x.permute(*order, *range(ndim, ndim + len(extra))), new, new_names
        )

    def transpose(self, dim0: int, dim1: int):
        """Returns a tensordict with two batch dims swapped."""
        ndim = self.batch_dims
        d0, d1 = _norm_dim(dim0, ndim), _norm_dim(dim1, ndim)
        order = list(range(ndim))
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    def squeeze(self, dim: int | None = None):
        """Returns a tensordict without the batch dims of size 1 (or without ``dim`` if it has size 1)."""
        size = self.batch_size
        if dim is None:
            keep = [i for i, s in enumerate(size) if s != 1]
        else:
            d = _norm_dim(dim, len(size))
            if size[d] != 1:
                return self
            keep = [i for i in range(len(size)) if i != d]
        if len(keep) == len(size):
            return self
        names = self.names
        return self._batch_op(
            lambda x, extra: x.reshape(torch.Size(size[i] for i in keep) + extra),
            torch.Size(size[i] for i in keep),
            None if names is None else [names[i] for i in keep],
        )

    def unsqueeze(self, dim: int):
        """Returns a tensordict with a batch dim of size 1 inserted at ``dim``.

        Examples:
            >>> TensorDict({"a": torch.zeros(3, 2)}, [3]).unsqueeze(-1).batch_size
            torch.Size([3, 1])
        """
        ndim = self.batch_dims
        if not -ndim - 1 <= dim <= ndim:
            msg = f"unsqueeze dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim + 1 if dim < 0 else dim
        size = list(self.batch_size)
        size.insert(d, 1)
        new = torch.Size(size)
        names = self.names
        new_names = None
        if names is not None:
            new_names = list(names)
            new_names.insert(d, None)
        return self._batch_op(lambda x, extra: x.unsqueeze(d), new, new_names)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        """Returns a tensordict with batch dims ``start_dim`` to ``end_dim`` merged into one."""
        ndim = self.batch_dims
        if ndim == 0:
            return self.unsqueeze(0)
        s, e = _norm_dim(start_dim, ndim), _norm_dim(end_dim, ndim)
        if s >= e:
            return self
        size = self.batch_size
        merged = 1
        for d in range(s, e + 1):
            merged *= size[d]
        return self._reshape_batch(size[:s] + torch.Size((merged,)) + size[e + 1 :])

    def unflatten(self, dim: int, unflattened_size):
        """Returns a tensordict with batch dim ``dim`` split into ``unflattened_size``."""
        ndim = self.batch_dims
        d = _norm_dim(dim, ndim)
        size = self.batch_size
        inner = _dummy(torch.Size((size[d],))).reshape(_shape_args((unflattened_size,))).shape
        return self._reshape_batch(size[:d] + inner + size[d + 1 :])

    def expand(self, *shape):
        """Returns a tensordict whose batch dims are expanded (broadcast) to ``shape``.

        Examples:
            >>> TensorDict({"a": torch.zeros(3, 2)}, [3]).expand(4, 3)["a"].shape
            torch.Size([4, 3, 2])
        """
        target = list(_shape_args(shape))
        size = self.batch_size
        lead = len(target) - len(size)
        if lead < 0:
            msg = f"cannot expand batch_size={list(size)} to the shorter shape {target}"
            raise RuntimeError(msg)
        for i, s in enumerate(size):
            if target[lead + i] == -1:
                target[lead + i] = s
            elif s != 1 and target[lead + i] != s:
                msg = (
                    f"cannot expand batch_size={list(size)} to {target}: dimension {i} has size {s}"
                )
                raise RuntimeError(msg)
        new = torch.Size(target)
        return self._batch_op(lambda x, extra: x.expand(new + extra), new)

    def expand_as(self, other):
        """Returns this tensordict expanded to the batch size of ``other``."""
        return self.expand(other.batch_size if hasattr(other, "batch_size") else other.shape)

    def repeat(self, *repeats):
        """Returns a tensordict whose batch dims are tiled ``repeats`` times (like ``Tensor.repeat``)."""
        reps = _shape_args(repeats)
        if len(reps) != self.batch_dims:
            msg = (
                f"repeat needs one count per batch dimension ({self.batch_dims}), got {list(reps)}"
            )
            raise ValueError(msg)
        new = _dummy(self.batch_size).repeat(*reps).shape
        return self._batch_op(lambda x, extra: x.repeat(*reps, *(1,) * len(extra)), new)

    def repeat_interleave(self, repeats, dim: int = 0):
        """Repeats each element along batch dim ``dim`` ``repeats`` times."""
        d = _norm_dim(dim, self.batch_dims)
        new = _dummy(self.batch_size).repeat_interleave(repeats, d).shape
        return self._batch_op(lambda x, extra: x.repeat_interleave(repeats, d), new)

    def _split_op(self, fn) -> tuple:
        sizes = [part.shape for part in fn(_dummy(self.batch_size))]
        return self._batch_op_multi(lambda x, extra: fn(x), sizes)

    def split(self, split_size, dim: int = 0) -> tuple:
        """Splits the batch dim ``dim`` into parts of ``split_size`` (an int or a list of sizes).

        Examples:
            >>> [t.batch_size[0] for t in TensorDict({"a": torch.zeros(5)}, [5]).split(2)]
            [2, 2, 1]
        """
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.split(split_size, d))

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """Splits the batch dim ``dim`` into ``chunks`` parts (like ``Tensor.chunk``)."""
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.chunk(chunks, d))

    def unbind(self, dim: int = 0) -> tuple:
        """Returns the tensordicts along the batch dim ``dim``, without that dimension."""
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.unbind(d))

    def gather(self, dim: int, index: torch.Tensor, out=None):
        """Gathers values along batch dim ``dim`` at ``index`` (like ``torch.gather`` on the batch dims).

        Args:
            dim (int): the batch dimension.
            index (torch.Tensor): a long tensor with as many dims as the batch.

        Examples:
            >>> td = TensorDict({"a": torch.arange(6).reshape(2, 3)}, [2, 3])
            >>> td.gather(1, torch.tensor([[0], [2]]))["a"]
            tensor([[0],
                    [5]])
        """
        ndim = self.batch_dims
        d = _norm_dim(dim, ndim)
        if index.ndim != ndim:
            msg = f"gather needs an index with {ndim} dims (the batch dims), got shape {list(index.shape)}"
            raise RuntimeError(msg)
        new = index.shape

        def op(x, extra):
            if isinstance(x, torch.Tensor):
                idx = index.reshape(index.shape + (1,) * len(extra)).expand(index.shape + extra)
                return torch.gather(x, d, idx)
            return x.gather(d, index)

        result = self._batch_op(op, new)
        if out is not None:
            out.update_(result)
            return out
        return result

    def masked_fill(self, mask: torch.Tensor, value):
        """Returns a copy with ``value`` written where ``mask`` (over the batch dims) is True."""
        return self._fast_apply(lambda x: x.masked_fill(_trailing(mask, x), value))

    def masked_fill_(self, mask: torch.Tensor, value):
        """Writes ``value`` where ``mask`` (over the batch dims) is True, in place; returns the tensordict."""
        for x in self.values(True, True):
            if isinstance(x, torch.Tensor):
                x.masked_fill_(_trailing(mask, x), value)
        return self

    def masked_select(self, mask: torch.Tensor):
        """Returns the rows where ``mask`` (over the batch dims) is True, flattened into one batch dim."""
        return self[mask]

    def where(self, condition: torch.Tensor, other, *, out=None, pad=None):
        """Returns entries from this tensordict where ``condition`` is True, else from ``other``.

        Args:
            condition (torch.Tensor): a bool tensor over the batch dims.
            other: a tensordict with the same keys, a tensor or a scalar.
        """

        def pick(x, *rest):
            y = rest[0] if rest else other
            return torch.where(_trailing(condition, x), x, y)

        if is_tensor_collection(other):
            result = self._fast_apply(pick, other)
        else:
            result = self._fast_apply(pick)
        if out is not None:
            out.update_(result)
            return out
        return result
