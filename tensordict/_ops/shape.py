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

from tensordict import _dim_names as dimnames
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

    def _reshape_batch(self, new_batch_size: torch.Size, names=None):
        return self._batch_op(
            lambda x, extra: x.reshape(new_batch_size + extra), new_batch_size, names
        )

    def _maybe_inplace(self, result, inplace: bool, method: str):
        """``result``, or this tensordict turned into it when ``inplace`` (see ``_become``)."""
        if not inplace:
            return result
        self._become(result, method)
        return self

    def _become(self, other, method: str) -> None:
        """Takes the batch size, names and entries of ``other`` (the out-of-place result).

        Classes that can change their own shape specialise it; the others refuse.
        """
        msg = f"{method}(inplace=True) is not supported on {type(self).__name__}; use inplace=False"
        raise NotImplementedError(msg)

    def reshape(self, *shape, inplace: bool = False):
        """Returns a tensordict whose batch dims are reshaped to ``shape``, feature dims untouched.

        Each leaf goes through ``reshape(shape + feature_shape)``: a view when torch can make
        one, a copy otherwise. Sub-tensordicts are reshaped the same way and non-tensor entries
        take the new batch size. One entry of ``shape`` may be -1, inferred from the others.
        When the new batch size is the current one, this tensordict itself is returned;
        otherwise the result has no dim names.

        Args:
            *shape (int or sequence of int): the new batch size, as ints or as one sequence.

        Keyword Args:
            inplace (bool, optional): reshape this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            This tensordict, or a new one.

        Raises:
            RuntimeError: if ``shape`` does not hold as many elements as the batch size, or has
                more than one -1; with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.
            TypeError: if an entry of ``shape`` is not a number or a string.
            ValueError: if an entry of ``shape`` is a string that is not an integer.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.reshape(-1)["a"].shape
            torch.Size([6, 4])
        """
        new = _dummy(self.batch_size).reshape(_shape_args(shape)).shape
        if new == self.batch_size:
            return self
        return self._maybe_inplace(self._reshape_batch(new), inplace, "reshape")

    def view(self, *shape):
        """Returns a tensordict whose leaves are views with the batch dims reshaped to ``shape``.

        Like :meth:`reshape`, but each leaf goes through ``Tensor.view``, so the result always
        shares memory with this tensordict. When the new batch size is the current one, this
        tensordict itself is returned; otherwise the result has no dim names. Viewing as a
        dtype (``view(torch.int32)``) is not supported.

        Args:
            *shape (int or sequence of int): the new batch size, as ints or as one sequence.

        Returns:
            This tensordict, or a new one.

        Raises:
            RuntimeError: if ``shape`` does not fit the batch size, or the memory layout of a
                leaf does not allow the view (:meth:`reshape` copies then).
            TypeError: if an entry of ``shape`` is not a number or a string.
            ValueError: if an entry of ``shape`` is a string that is not an integer.

        Examples:
            >>> td = TensorDict({"a": torch.arange(6).reshape(2, 3)}, [2, 3])
            >>> td.view(3, 2)["a"]
            tensor([[0, 1],
                    [2, 3],
                    [4, 5]])
        """
        new = _dummy(self.batch_size).reshape(_shape_args(shape)).shape
        if new == self.batch_size:
            return self
        return self._batch_op(lambda x, extra: x.view(new + extra), new)

    def permute(self, *dims):
        """Returns a tensordict with the batch dims put in the order ``dims``.

        Each leaf is permuted on its batch dims while its feature dims stay last, in their
        order; the leaves are views. The dim names follow their dims.

        Args:
            *dims (int or sequence of int): each batch dim once, in the new order; negative
                values count from the last batch dim.

        Returns:
            A new tensordict.

        Raises:
            ValueError: if ``dims`` does not name each batch dim exactly once (a dim out of
                range included).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.permute(1, 0)["a"].shape
            torch.Size([3, 2, 4])
        """
        ndim = self.batch_dims
        order = [d + ndim if -ndim <= d < 0 else d for d in _shape_args(dims)]
        if sorted(order) != list(range(ndim)):
            msg = f"permute needs each of the {ndim} batch dimensions once, got {list(_shape_args(dims))}"
            raise ValueError(msg)
        new = torch.Size(self.batch_size[d] for d in order)
        names = self.names
        new_names = None if names is None else dimnames.clean(names[d] for d in order)
        return self._batch_op(
            lambda x, extra: x.permute(*order, *range(ndim, ndim + len(extra))), new, new_names
        )

    def transpose(self, dim0: int, dim1: int):
        """Returns a tensordict with the batch dims ``dim0`` and ``dim1`` swapped.

        This is :meth:`permute` with those two dims exchanged: the leaves are views, and the
        dim names follow their dims. The result is new even when the two dims are the same.

        Args:
            dim0 (int): a batch dim; negative values count from the last batch dim.
            dim1 (int): the other batch dim.

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3], names=["x", "y"])
            >>> swapped = td.transpose(0, -1)
            >>> swapped.names, swapped["a"].shape
            (['y', 'x'], torch.Size([3, 2, 4]))
        """
        ndim = self.batch_dims
        d0, d1 = _norm_dim(dim0, ndim), _norm_dim(dim1, ndim)
        order = list(range(ndim))
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    def squeeze(self, dim: int | None = None):
        """Returns a tensordict without the batch dims of size 1, or without ``dim`` if its size is 1.

        Without ``dim`` every batch dim of size 1 goes; with ``dim`` only that one, and only
        if its size is 1. Feature dims are never squeezed. The leaves are reshaped and the
        names of the remaining dims kept. When no dim goes, this tensordict itself is returned.

        Args:
            dim (int, optional): the batch dim to remove; negative values count from the last
                batch dim. Defaults to None, every dim of size 1.

        Returns:
            This tensordict, or a new one.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (any ``dim`` when
                there are no batch dims).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(1, 3, 1, 2)}, [1, 3, 1])
            >>> td.squeeze().batch_size, td.squeeze(0).batch_size
            (torch.Size([3]), torch.Size([3, 1]))
        """
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
            None if names is None else dimnames.clean(names[i] for i in keep),
        )

    def unsqueeze(self, dim: int):
        """Returns a tensordict with a batch dim of size 1 inserted at ``dim``.

        ``dim`` may range from ``-batch_dims - 1`` to ``batch_dims``; a negative value counts
        from the end of the batch dims, so -1 appends a dim after the last batch dim and before
        the feature dims. Each leaf gets the new dim at that position (a view). The new dim
        has no name; the others keep theirs.

        Args:
            dim (int): the position of the new dim among the batch dims.

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if ``dim`` is out of that range.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2)}, [3])
            >>> td.unsqueeze(-1).batch_size, td.unsqueeze(-1)["a"].shape
            (torch.Size([3, 1]), torch.Size([3, 1, 2]))
        """
        ndim = self.batch_dims
        if not -ndim - 1 <= dim <= ndim:
            msg = f"unsqueeze dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim + 1 if dim < 0 else dim
        size = list(self.batch_size)
        size.insert(d, 1)
        new = torch.Size(size)
        return self._batch_op(lambda x, extra: x.unsqueeze(d), new, dimnames.insert(self.names, d))

    def flatten(self, start_dim: int = 0, end_dim: int = -1, *, inplace: bool = False):
        """Returns a tensordict with the batch dims ``start_dim`` to ``end_dim`` merged into one.

        The merged dim has the product of their sizes and no name; the other dims keep
        theirs. The leaves are reshaped (views when possible). With ``start_dim`` equal to
        ``end_dim`` nothing is merged but that dim loses its name, as in the well-known API.
        A tensordict without batch dims gets one batch dim of size 1.

        Args:
            start_dim (int, optional): the first batch dim to merge. Defaults to 0.
            end_dim (int, optional): the last batch dim to merge. Defaults to -1.

        Keyword Args:
            inplace (bool, optional): flatten this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.
            ValueError: if ``end_dim`` comes before ``start_dim``.
            RuntimeError: with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4, 5)}, [2, 3, 4], names=["x", "y", "z"])
            >>> td.flatten(1).batch_size, td.flatten(0, 1)["a"].shape
            (torch.Size([2, 12]), torch.Size([6, 4, 5]))
            >>> td.flatten(0, 1).names
            [None, 'z']
        """
        ndim = self.batch_dims
        if ndim == 0:
            return self._maybe_inplace(self.unsqueeze(0), inplace, "flatten")
        s, e = _norm_dim(start_dim, ndim), _norm_dim(end_dim, ndim)
        if s > e:
            msg = f"flatten: end_dim={end_dim} comes before start_dim={start_dim}; the end dimension must not precede the start"
            raise ValueError(msg)
        size = self.batch_size
        merged = 1
        for d in range(s, e + 1):
            merged *= size[d]
        new = size[:s] + torch.Size((merged,)) + size[e + 1 :]
        names = dimnames.flatten(self.names, s, e)
        return self._maybe_inplace(self._reshape_batch(new, names), inplace, "flatten")

    def unflatten(self, dim: int, unflattened_size, *, inplace: bool = False):
        """Returns a tensordict with the batch dim ``dim`` split into the dims ``unflattened_size``.

        The sizes must multiply to the size of ``dim``; one of them may be -1, inferred from
        the others. The leaves are reshaped (views when possible). The last of the new dims
        keeps the name of ``dim`` and the others have none, as in the well-known API.

        Args:
            dim (int): the batch dim to split; negative values count from the last batch dim.
            unflattened_size (sequence of int): the sizes that replace it.

        Keyword Args:
            inplace (bool, optional): unflatten this tensordict itself (its sub-tensordicts
                too, which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if the sizes do not multiply to the size of ``dim``; with
                ``inplace``, if the tensordict is locked.
            TypeError: if an entry of ``unflattened_size`` is not a number or a string.
            ValueError: if an entry of ``unflattened_size`` is a string that is not an integer.
            NotImplementedError: with ``inplace``, on a lazy stack.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(6, 2)}, [6], names=["t"])
            >>> out = td.unflatten(0, (2, -1))
            >>> out["a"].shape, out.names
            (torch.Size([2, 3, 2]), [None, 't'])
        """
        ndim = self.batch_dims
        d = _norm_dim(dim, ndim)
        size = self.batch_size
        inner = _dummy(torch.Size((size[d],))).reshape(_shape_args((unflattened_size,))).shape
        names = dimnames.unflatten(self.names, d, len(inner))
        result = self._reshape_batch(size[:d] + inner + size[d + 1 :], names)
        return self._maybe_inplace(result, inplace, "unflatten")

    def expand(self, *shape):
        """Returns a tensordict whose batch dims are expanded (broadcast) to ``shape``.

        As with ``Tensor.expand``, ``shape`` may add leading dims and grow the dims of size 1,
        while -1 keeps the size of an existing dim. The leaves are expanded views: no memory is
        copied, and the elements along a grown dim share memory, so write into them with care.
        The dims already there keep their names; the new leading ones have none.

        Args:
            *shape (int or sequence of int): the new batch size, as ints or as one sequence.

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if ``shape`` has fewer dims than the batch size, asks a dim whose
                size is not 1 for another size, or has -1 on a new leading dim (raised by torch
                from the first tensor leaf).
            TypeError: if an entry of ``shape`` is not a number or a string.
            ValueError: if an entry of ``shape`` is a string that is not an integer.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2)}, [3])
            >>> td.expand(4, 3)["a"].shape
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
        return self._batch_op(
            lambda x, extra: x.expand(new + extra), new, dimnames.insert(self.names, 0, lead)
        )

    def expand_as(self, other):
        """Returns this tensordict expanded to the batch size of ``other``, or to its shape for a tensor.

        This is ``self.expand(other.batch_size)``, or ``self.expand(other.shape)`` when
        ``other`` has no batch size, so the whole shape of a tensor counts; see :meth:`expand`.

        Args:
            other (TensorDictBase or torch.Tensor): the object whose size to match.

        Returns:
            A new tensordict.

        Raises:
            AttributeError: if ``other`` has neither ``batch_size`` nor ``shape``.
            RuntimeError: if the batch size cannot be expanded to that size.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> td.expand_as(torch.zeros(2, 3)).batch_size
            torch.Size([2, 3])
        """
        return self.expand(other.batch_size if hasattr(other, "batch_size") else other.shape)

    def repeat(self, *repeats, inplace: bool = False):
        """Returns a tensordict whose batch dims are tiled ``repeats`` times, like ``Tensor.repeat``.

        Batch dim ``i`` becomes ``repeats[i]`` times longer, the whole dim repeated end to end;
        the feature dims are left as they are. The leaves are copies; the dims keep their names.

        Args:
            *repeats (int or sequence of int): one count per batch dim, as ints or as one
                sequence.

        Keyword Args:
            inplace (bool, optional): change this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            ValueError: if the number of counts differs from the number of batch dims.
            RuntimeError: if a count is negative; with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1, 2]])}, [1, 2])
            >>> td.repeat(2, 2)["a"]
            tensor([[1, 2, 1, 2],
                    [1, 2, 1, 2]])
        """
        reps = _shape_args(repeats)
        if len(reps) != self.batch_dims:
            msg = (
                f"repeat needs one count per batch dimension ({self.batch_dims}), got {list(reps)}"
            )
            raise ValueError(msg)
        new = _dummy(self.batch_size).repeat(*reps).shape
        result = self._batch_op(
            lambda x, extra: x.repeat(*reps, *(1,) * len(extra)), new, dimnames.clean(self.names)
        )
        return self._maybe_inplace(result, inplace, "repeat")

    def repeat_interleave(self, repeats, dim: int = 0, *, inplace: bool = False):
        """Returns a tensordict in which each element along batch dim ``dim`` is repeated ``repeats`` times in a row.

        Like ``Tensor.repeat_interleave`` on that dim: an int repeats every element the same
        number of times, a 1-d tensor gives one count per element. The leaves are copies; the
        dims keep their names.

        Args:
            repeats (int or torch.Tensor): the count, or one count per element along ``dim``.
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to 0.

        Keyword Args:
            inplace (bool, optional): change this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if a count is negative, or a tensor of counts does not have one count
                per element along ``dim``; with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.
            AttributeError: if the tensordict holds a non-tensor entry (:class:`NonTensorData`
                has no ``repeat_interleave``).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1, 2])}, [2])
            >>> td.repeat_interleave(2)["a"], td.repeat_interleave(torch.tensor([0, 3]))["a"]
            (tensor([1, 1, 2, 2]), tensor([2, 2, 2]))
        """
        d = _norm_dim(dim, self.batch_dims)
        new = _dummy(self.batch_size).repeat_interleave(repeats, d).shape
        result = self._batch_op(
            lambda x, extra: x.repeat_interleave(repeats, d), new, dimnames.clean(self.names)
        )
        return self._maybe_inplace(result, inplace, "repeat_interleave")

    def _split_op(self, fn, names) -> tuple:
        sizes = [part.shape for part in fn(_dummy(self.batch_size))]
        return self._batch_op_multi(lambda x, extra: fn(x), sizes, names)

    def split(self, split_size, dim: int = 0) -> tuple:
        """Splits the tensordict along batch dim ``dim`` into parts of ``split_size`` elements, or of the listed sizes.

        Like ``Tensor.split``: an int gives parts of that many elements, the last one shorter
        if needed; a list gives one part per size, and the sizes must add up to the size of
        ``dim``. The parts are views of this tensordict and keep its dim names.

        Args:
            split_size (int or list of int): the size of each part, or the list of sizes.
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to 0.

        Returns:
            A tuple of tensordicts.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if the listed sizes do not add up to the size of ``dim``, or an int
                ``split_size`` is negative (or 0 for a dim that is not empty).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(5)}, [5])
            >>> [t.batch_size[0] for t in td.split(2)], [t.batch_size[0] for t in td.split([1, 4])]
            ([2, 2, 1], [1, 4])
        """
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.split(split_size, d), dimnames.clean(self.names))

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """Splits the tensordict along batch dim ``dim`` into ``chunks`` parts, like ``Tensor.chunk``.

        Each part has ``ceil(size / chunks)`` elements and the last one may have fewer, so
        there may be fewer than ``chunks`` parts. The parts are views of this tensordict and
        keep its dim names.

        Args:
            chunks (int): the number of parts wanted.
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to 0.

        Returns:
            A tuple of tensordicts.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if ``chunks`` is smaller than 1.

        Examples:
            >>> parts = TensorDict({"a": torch.arange(5)}, [5]).chunk(2)
            >>> [part["a"].tolist() for part in parts]
            [[0, 1, 2], [3, 4]]
        """
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.chunk(chunks, d), dimnames.clean(self.names))

    def unbind(self, dim: int = 0) -> tuple:
        """Returns the tensordicts along batch dim ``dim``, each without that dim.

        There is one tensordict per index along ``dim``, a view of this one; the other dims
        keep their names.

        Args:
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to 0.

        Returns:
            A tuple of tensordicts.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.

        Examples:
            >>> tds = TensorDict({"a": torch.tensor([[1, 2], [3, 4]])}, [2, 2]).unbind(1)
            >>> [td["a"].tolist() for td in tds]
            [[1, 3], [2, 4]]
        """
        d = _norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.unbind(d), dimnames.drop(self.names, d))

    def gather(self, dim: int, index: torch.Tensor, out=None, *, inplace: bool = False):
        """Gathers the elements at ``index`` along batch dim ``dim``, like ``torch.gather`` on the batch dims.

        The result has the batch size ``index.shape``; along ``dim`` its element ``i`` is the
        element ``index[i]`` of this tensordict, and along the other dims the positions are
        kept. The index is expanded over the feature dims of each leaf, so every feature is
        gathered. The dims keep their names. With ``out``, it is copied into ``out`` (with
        :meth:`update_`), which is returned.

        Args:
            dim (int): the batch dim to gather along; negative values count from the last
                batch dim.
            index (torch.Tensor): an integer tensor with as many dims as the batch.
            out (TensorDictBase, optional): a tensordict to write the result into. Defaults to
                None.

        Keyword Args:
            inplace (bool, optional): change this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or ``out``, or this one with ``inplace``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if ``index`` does not have as many dims as the batch, is larger than
                the batch on a dim other than ``dim``, or holds a position out of range.
            KeyError: if ``out`` lacks an entry of the result.
            AttributeError: if the tensordict holds a non-tensor entry (:class:`NonTensorData`
                has no ``gather``).

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

        result = self._batch_op(op, new, dimnames.clean(self.names))
        if out is not None:
            out.update_(result)
            return out
        return self._maybe_inplace(result, inplace, "gather")

    def masked_fill(self, mask: torch.Tensor, value):
        """Returns a copy of the tensordict with ``value`` written where ``mask`` is True.

        The mask covers the leading batch dims: it gets dims of size 1 appended to reach the
        dims of each leaf, so one element of the mask covers all the features under it, and
        torch broadcasting does the rest. Non-tensor entries are kept, the dim names too, and
        this tensordict is left unchanged.

        Args:
            mask (torch.Tensor): a boolean tensor over the batch dims (or their leading ones).
            value (number or torch.Tensor): the value to write; a tensor must have no dims.

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if ``mask`` is not boolean or does not broadcast against a leaf, or
                ``value`` is a tensor with dims.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
            >>> td.masked_fill(torch.tensor([True, False]), 1.0)["a"]
            tensor([[1., 1., 1.],
                    [0., 0., 0.]])
        """
        return self._fast_apply(lambda x: x.masked_fill(_trailing(mask, x), value))

    def masked_fill_(self, mask: torch.Tensor, value):
        """Writes ``value`` where ``mask`` is True into every tensor leaf, in place, and returns the tensordict.

        The mask covers the leading batch dims as in :meth:`masked_fill`. Each leaf, nested
        ones included, goes through ``Tensor.masked_fill_``; non-tensor entries are skipped.
        No entry is rebound, so a locked tensordict accepts it too.

        Args:
            mask (torch.Tensor): a boolean tensor over the batch dims (or their leading ones).
            value (number or torch.Tensor): the value to write; a tensor must have no dims.

        Returns:
            This tensordict.

        Raises:
            RuntimeError: if ``mask`` is not boolean or does not broadcast to a leaf's shape,
                or ``value`` is a tensor with dims; the leaves before it are already written.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> td.masked_fill_(torch.tensor([False, True, True]), 2.0) is td
            True
            >>> td["a"]
            tensor([0., 2., 2.])
        """
        for x in self.values(True, True):
            if isinstance(x, torch.Tensor):
                x.masked_fill_(_trailing(mask, x), value)
        return self

    def masked_select(self, mask: torch.Tensor):
        """Returns the rows where ``mask`` is True, gathered into one batch dim: ``self[mask]``.

        The mask covers the leading batch dims; their True positions become one batch dim, in
        order, followed by the remaining batch dims. The leaves are copies, and the dim names
        are those of ``self[mask]``. An integer tensor would index positions instead, as ``self[mask]``
        does.

        Args:
            mask (torch.Tensor): a boolean tensor whose shape is the leading batch dims.

        Returns:
            A new tensordict.

        Raises:
            IndexError: if the shape of ``mask`` does not match the batch dims it covers.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1, 2], [3, 4], [5, 6]])}, [3, 2])
            >>> td.masked_select(torch.tensor([True, False, True]))["a"]
            tensor([[1, 2],
                    [5, 6]])
        """
        return self[mask]

    def where(self, condition: torch.Tensor, other, *, out=None, pad=None):
        """Returns a tensordict with the elements of this one where ``condition`` is True, and of ``other`` elsewhere.

        Each leaf goes through ``torch.where(condition, leaf, other_leaf)``. The condition gets
        dims of size 1 appended to reach the dims of the leaf, so one element covers all the
        features under it, and torch broadcasting does the rest. A tensordict ``other`` gives
        the leaf at the same key: a key it lacks raises, an extra key is ignored. Non-tensor
        entries, the batch size and the dim names are kept from this tensordict.

        Args:
            condition (torch.Tensor): a boolean tensor over the batch dims (or their leading
                ones).
            other (TensorDictBase, torch.Tensor or number): the values where ``condition`` is
                False.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict to copy the result into (with
                :meth:`update_`), which is returned. Defaults to None.
            pad (optional): accepted and ignored: missing keys are not padded.

        Returns:
            A new tensordict, or ``out``.

        Raises:
            KeyError: if ``other`` is a tensordict without one of this tensordict's keys, or
                ``out`` lacks an entry of the result.
            RuntimeError: if ``condition`` is not boolean, or does not broadcast against a leaf
                and its operand.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1, 2, 3])}, [3])
            >>> td.where(torch.tensor([True, False, True]), 0)["a"]
            tensor([1, 0, 3])
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
