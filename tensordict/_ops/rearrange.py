"""Copies of the batch elements in a new arrangement: repeated, rolled, flipped, rotated, gathered or masked.

Like :mod:`tensordict._ops.batch_dims`, each method acts on the batch dimensions
only and hands one per-entry function to the class primitive ``_batch_op`` (or
goes through :meth:`_fast_apply` when the batch size does not change). The leaves
of the result are new tensors; on a lazy stack the result is dense. The results of
``roll``, ``flip`` and ``rot90`` (``fliplr``, ``flipud``) write back into their
source at the end of a with-block, by the inverse arrangement (see
:mod:`tensordict._blocks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tensordict import _dim_names as dimnames
from tensordict._blocks import update_back, written_back
from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._nontensor import _dummy
from tensordict._ops._contract import Contract
from tensordict._ops.batch_dims import as_ints, entrywise, norm_dim, shape_args
from tensordict._ops.convert import CONVERTERS
from tensordict._typing import T
from tensordict.errors import (
    IndexShapeError,
    InvalidArgumentError,
    KeyMismatchError,
    ShapeArgumentError,
)


def _trailing(mask: torch.Tensor, value) -> torch.Tensor:
    """``mask`` with singleton dims appended to broadcast over ``value``'s feature dims."""
    ndim = value.ndim if isinstance(value, torch.Tensor) else len(value.batch_size)
    extra = ndim - mask.ndim
    return mask.reshape(mask.shape + (1,) * extra) if extra > 0 else mask


class RearrangeMixin(Contract):
    """Repeat, tile, roll, flip, rotate, gather, select and fill by mask along the batch dims.

    Calls: ``_as_dense``, ``_batch_op``, ``_fast_apply``, ``_leafwise_operand``,
        ``_maybe_inplace``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ repeating
    def repeat(self: T, *repeats: int | Sequence[int], inplace: bool = False) -> T:
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
        reps = shape_args(repeats)
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

    def repeat_interleave(
        self: T,
        repeats: int | torch.Tensor,
        dim: int | None = None,
        *,
        output_size: int | None = None,
        inplace: bool = False,
    ) -> T:
        """Returns a tensordict in which each element along batch dim ``dim`` is repeated ``repeats`` times in a row.

        Like ``Tensor.repeat_interleave`` on that dim: an int repeats every element the same
        number of times, a 1-d tensor gives one count per element. Without ``dim``, the batch
        dims are flattened into one first, as torch flattens a tensor. The leaves are copies;
        the dims keep their names (the flattened dim has none).

        Args:
            repeats (int or torch.Tensor): the count, or one count per element along ``dim``.
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to None: the flattened batch dims.

        Keyword Args:
            output_size (int, optional): the size of the repeated dim, which torch then need
                not compute (passed on to ``Tensor.repeat_interleave``). Defaults to None.
            inplace (bool, optional): change this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            RuntimeError: if a count is negative, or a tensor of counts does not have one count
                per element along ``dim``; with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1, 2])}, [2])
            >>> td.repeat_interleave(2)["a"], td.repeat_interleave(torch.tensor([0, 3]))["a"]
            (tensor([1, 1, 2, 2]), tensor([2, 2, 2]))
            >>> TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3]).repeat_interleave(2).batch_size
            torch.Size([12])
        """
        if dim is None:
            flat = self.reshape(-1) if self.batch_dims != 1 else self
            result = flat.repeat_interleave(repeats, 0, output_size=output_size)
            return self._maybe_inplace(result, inplace, "repeat_interleave")
        d = norm_dim(dim, self.batch_dims)
        new = _dummy(self.batch_size).repeat_interleave(repeats, d, output_size=output_size).shape
        op = entrywise(
            lambda x, extra: x.repeat_interleave(repeats, d, output_size=output_size),
            lambda x, extra: x.repeat_interleave(repeats, d, output_size=output_size),
        )
        result = self._batch_op(op, new, dimnames.clean(self.names))
        return self._maybe_inplace(result, inplace, "repeat_interleave")

    def tile(self: T, dims: int | Sequence[int]) -> T:
        """Returns a tensordict whose batch dims are repeated ``dims`` times, like ``torch.tile``.

        With fewer counts than batch dims, the leading dims are repeated once; with more, new
        leading batch dims are added. The feature dims are left as they are. The leaves are
        copies and the result has no dim names; on a lazy stack it is dense.

        Args:
            dims (int or tuple of int): the number of repetitions of each batch dim.

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a count is negative.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1, 2]])}, [1, 2])
            >>> td.tile(2)["a"].tolist(), td.tile((2, 1, 1)).batch_size
            ([[1, 2, 1, 2]], torch.Size([2, 1, 2]))
        """
        reps = as_ints(dims)
        reps = (1,) * (self.batch_dims - len(reps)) + reps
        new = _dummy(self.batch_size).tile(reps).shape
        op = entrywise(
            lambda x, extra: x.tile(reps + (1,) * len(extra)),
            lambda x, extra: x.tile(reps + (1,) * len(extra)),
        )
        return self._batch_op(op, new)

    # ------------------------------------------------------------------ reordering the elements
    def roll(
        self: T,
        shifts: int | Sequence[int],
        dims: int | Sequence[int] | None = None,
        *,
        inplace: bool = False,
    ) -> T:
        """Returns a tensordict whose batch dims ``dims`` are rolled by ``shifts``, like ``torch.roll``.

        Along each dim, the element at ``i`` moves to ``(i + shift) % size``. Without ``dims``
        the batch dims are rolled as one flattened dim, as ``torch.roll`` does, then restored. The leaves are copies and the dims keep their names;
        on a lazy stack the result is dense.

        Args:
            shifts (int or tuple of int): the shift of each dim.
            dims (int or tuple of int, optional): the batch dims to roll, one per shift.
                Defaults to None, all of them flattened.

        Keyword Args:
            inplace (bool, optional): roll this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.
            ShapeArgumentError: if ``shifts`` and ``dims`` do not have as many entries (one
                shift without ``dims``).
            RuntimeError: with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[0, 1], [2, 3], [4, 5]])}, [3, 2])
            >>> td.roll(1)["a"].tolist(), td.roll((1, 1), (0, 1))["a"].tolist()
            ([[5, 0], [1, 2], [3, 4]], [[5, 4], [1, 0], [3, 2]])
        """
        shift_t = as_ints(shifts)
        if dims is None:
            if len(shift_t) != 1:
                msg = f"roll: without dims, shifts must be one int (the batch dims are rolled as one), got shifts={shifts!r}"
                raise ShapeArgumentError(msg)
            numel = self.batch_size.numel()

            def flat_roll(x, extra):
                return x.reshape(torch.Size((numel,)) + extra).roll(shift_t, 0).reshape(x.shape)

            op = entrywise(flat_roll, flat_roll)
            result = self._batch_op(op, self.batch_size, dimnames.clean(self.names))
            back = tuple(-s for s in shift_t)
            return written_back(
                self._maybe_inplace(result, inplace, "roll"),
                self,
                update_back(lambda r, _: r.roll(back)),
            )
        dims_t = as_ints(dims)
        if len(shift_t) != len(dims_t):
            msg = f"roll: shifts and dims must have as many entries, got shifts={shifts!r} and dims={dims!r}"
            raise ShapeArgumentError(msg)
        dims_t = tuple(norm_dim(d, self.batch_dims) for d in dims_t)
        op = entrywise(
            lambda x, extra: x.roll(shift_t, dims_t),
            lambda x, extra: x.roll(shift_t, dims_t),
        )
        result = self._batch_op(op, self.batch_size, dimnames.clean(self.names))
        back = tuple(-s for s in shift_t)
        return written_back(
            self._maybe_inplace(result, inplace, "roll"),
            self,
            update_back(lambda r, _: r.roll(back, dims_t)),
        )

    def flip(self: T, dims: int | Sequence[int]) -> T:
        """Returns a tensordict with the order of the elements reversed along the batch dims ``dims``.

        Like ``torch.flip`` on the batch dims; the leaves are copies and the dims keep their
        names. On a lazy stack the result is dense.

        Args:
            dims (int or sequence of int): the batch dims to reverse (none for an empty one).

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[0, 1], [2, 3]])}, [2, 2])
            >>> td.flip(0)["a"].tolist(), td.flip((0, 1))["a"].tolist()
            ([[2, 3], [0, 1]], [[3, 2], [1, 0]])
        """
        ndim = self.batch_dims
        dims_t = tuple(norm_dim(d, ndim) for d in as_ints(dims))
        op = entrywise(lambda x, extra: x.flip(dims_t), lambda x, extra: x.flip(dims_t))
        result = self._batch_op(op, self.batch_size, dimnames.clean(self.names))
        return written_back(result, self, update_back(lambda r, _: r.flip(dims_t)))

    def fliplr(self: T) -> T:
        """Returns a tensordict reversed along batch dim 1, like ``torch.fliplr``.

        Returns:
            A new tensordict (see :meth:`flip`).

        Raises:
            ShapeArgumentError: if the tensordict has fewer than 2 batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[0, 1], [2, 3]])}, [2, 2])
            >>> td.fliplr()["a"].tolist()
            [[1, 0], [3, 2]]
        """
        if self.batch_dims < 2:
            msg = f"fliplr needs at least 2 batch dimensions, the tensordict has {self.batch_dims}"
            raise ShapeArgumentError(msg)
        return self.flip(1)

    def flipud(self: T) -> T:
        """Returns a tensordict reversed along batch dim 0, like ``torch.flipud``.

        Returns:
            A new tensordict (see :meth:`flip`).

        Raises:
            ShapeArgumentError: if the tensordict has no batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[0, 1], [2, 3]])}, [2, 2])
            >>> td.flipud()["a"].tolist()
            [[2, 3], [0, 1]]
        """
        if self.batch_dims < 1:
            msg = "flipud needs at least 1 batch dimension, the tensordict has none"
            raise ShapeArgumentError(msg)
        return self.flip(0)

    def rot90(self: T, k: int = 1, dims: Sequence[int] = (0, 1)) -> T:
        """Returns a tensordict rotated by ``k`` quarter turns in the plane of two batch dims.

        Like ``torch.rot90`` on the batch dims: from the first dim towards the second for a
        positive ``k``. An odd ``k`` exchanges the sizes and the names of the two dims. The
        leaves are copies; on a lazy stack the result is dense.

        Args:
            k (int, optional): the number of quarter turns. Defaults to 1.
            dims (tuple of two int, optional): the batch dims of the plane. Defaults to (0, 1).

        Returns:
            A new tensordict.

        Raises:
            ShapeArgumentError: if the tensordict has fewer than 2 batch dims, ``dims`` does not
                hold two dims, or they are the same dim.
            DimensionError: if a dim is out of range for the batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[0, 1], [2, 3]])}, [2, 2])
            >>> td.rot90()["a"].tolist()
            [[1, 3], [0, 2]]
        """
        ndim = self.batch_dims
        if ndim < 2:
            msg = f"rot90 needs at least 2 batch dimensions, the tensordict has {ndim}"
            raise ShapeArgumentError(msg)
        plane = as_ints(dims)
        if len(plane) != 2:
            msg = f"rot90 needs two dims, got dims={dims!r}"
            raise ShapeArgumentError(msg)
        d0, d1 = (norm_dim(d, ndim) for d in plane)
        if d0 == d1:
            msg = f"rot90 needs two different dims, got dims={dims!r}"
            raise ShapeArgumentError(msg)
        k = int(k)
        new = _dummy(self.batch_size).rot90(k, (d0, d1)).shape
        names = self.names
        if names is not None and k % 2:
            names = list(names)
            names[d0], names[d1] = names[d1], names[d0]
        op = entrywise(lambda x, extra: x.rot90(k, (d0, d1)), lambda x, extra: x.rot90(k, (d0, d1)))
        result = self._batch_op(op, new, dimnames.clean(names))
        return written_back(result, self, update_back(lambda r, _: r.rot90(-k, (d0, d1))))

    # ------------------------------------------------------------------ picking and masking
    def gather(
        self: T,
        dim: int,
        index: torch.Tensor,
        out: TensorCollection | None = None,
        *,
        inplace: bool = False,
    ) -> T:
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
            IndexShapeError: if ``index`` does not have as many dims as the batch (a
                ``NotImplementedError``, which is a ``RuntimeError``).
            RuntimeError: if ``index`` is larger than the batch on a dim other than ``dim``,
                or holds a position out of range.
            KeyError: if ``out`` lacks an entry of the result.
            InvalidArgumentError: if both ``out`` and ``inplace`` are given (a ``ValueError``).

        Examples:
            >>> td = TensorDict({"a": torch.arange(6).reshape(2, 3)}, [2, 3])
            >>> td.gather(1, torch.tensor([[0], [2]]))["a"]
            tensor([[0],
                    [5]])
        """
        if out is not None and inplace:
            msg = "gather(): out= and inplace=True are mutually exclusive: the result goes to one place"
            raise InvalidArgumentError(msg)
        ndim = self.batch_dims
        d = norm_dim(dim, ndim)
        if index.ndim != ndim:
            msg = (
                f"gather needs an index with as many dims as the batch (index.ndim == {ndim}), "
                f"got shape {list(index.shape)}"
            )
            raise IndexShapeError(msg)
        new = index.shape

        def spread(extra):
            # the index covers the batch dims: it is expanded over what lies under them
            return index.reshape(index.shape + (1,) * len(extra)).expand(index.shape + extra)

        op = entrywise(
            lambda x, extra: torch.gather(x, d, spread(extra)),
            lambda x, extra: x.gather(d, spread(extra)),
        )

        result = self._batch_op(op, new, dimnames.clean(self.names))
        if out is not None:
            out.update_(result)
            return out
        return self._maybe_inplace(result, inplace, "gather")

    def masked_select(self: T, mask: torch.Tensor, *, inplace: bool = False) -> T:
        """Returns the rows where ``mask`` is True, gathered into one batch dim: ``self[mask]``.

        The mask covers the leading batch dims; their True positions become one batch dim, in
        order, followed by the remaining batch dims. The leaves are copies, and the dim names
        are those of ``self[mask]``. An integer tensor would index positions instead, as ``self[mask]``
        does.

        Args:
            mask (torch.Tensor): a boolean tensor whose shape is the leading batch dims.

        Keyword Args:
            inplace (bool, optional): change this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            A new tensordict, or this one with ``inplace``.

        Raises:
            IndexError: if the shape of ``mask`` does not match the batch dims it covers.
            NotImplementedError: with ``inplace``, on a lazy stack.
            RuntimeError: with ``inplace``, if the tensordict is locked.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1, 2], [3, 4], [5, 6]])}, [3, 2])
            >>> td.masked_select(torch.tensor([True, False, True]))["a"]
            tensor([[1, 2],
                    [5, 6]])
            >>> td.masked_select(torch.tensor([False, True, False]), inplace=True) is td
            True
            >>> td.batch_size
            torch.Size([1, 2])
        """
        return self._maybe_inplace(self[mask], inplace, "masked_select")

    def masked_fill(self: T, mask: torch.Tensor, value: float | torch.Tensor) -> T:
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
        src = self._as_dense()  # the mask covers the stacked leaves of a lazy stack
        return src._fast_apply(lambda x: x.masked_fill(_trailing(mask, x), value))

    def masked_fill_(self: T, mask: torch.Tensor, value: float | torch.Tensor) -> T:
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
        dense = self._as_dense()
        if dense is not self:
            # a lazy stack's leaves are its members': the result is written back into them
            return self.update_(dense.masked_fill(mask, value))
        for x in self.values(True, True):
            if isinstance(x, torch.Tensor):
                x.masked_fill_(_trailing(mask, x), value)
        return self

    def where(
        self: T,
        condition: torch.Tensor,
        other: TensorCollection | torch.Tensor | float,
        *,
        out: TensorCollection | None = None,
        pad: Any = None,
        update_batch_size: bool = False,
    ) -> T:
        """Returns a tensordict with the elements of this one where ``condition`` is True, and of ``other`` elsewhere.

        Each leaf goes through ``torch.where(condition, leaf, other_leaf)``. The condition gets
        dims of size 1 appended to reach the dims of the leaf, so one element covers all the
        features under it, and torch broadcasting does the rest. A tensordict ``other`` gives
        the leaf at the same key. Non-tensor entries, the batch size and the dim names are kept
        from this tensordict; a lazy stack gives a dense result.

        Args:
            condition (torch.Tensor): a boolean tensor over the batch dims (or their leading
                ones).
            other (TensorDictBase, torch.Tensor or number): the values where ``condition`` is
                False.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict that receives the result (with
                :meth:`update`: its entries are replaced) and is returned. Defaults to None.
            pad (number or bool, optional): the value that stands in for a leaf that only one
                of this tensordict and a tensordict ``other`` has; the result has the leaves of
                both. Defaults to None: such a leaf raises KeyError.
            update_batch_size (bool, optional): passed on to ``out.update``. Defaults to False.

        Returns:
            A new tensordict, or ``out``.

        Raises:
            KeyMismatchError: if ``other`` is a tensordict with other leaves than this one and no
                ``pad`` is given (a ``KeyError``).
            RuntimeError: if ``condition`` is not boolean, or does not broadcast against a leaf
                and its operand.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1, 2, 3])}, [3])
            >>> td.where(torch.tensor([True, False, True]), 0)["a"]
            tensor([1, 0, 3])
            >>> other = TensorDict({"b": torch.tensor([7, 8, 9])}, [3])
            >>> sorted(td.where(torch.tensor([True, False, True]), other, pad=-1).items())
            [('a', tensor([ 1, -1,  3])), ('b', tensor([-1,  8, -1]))]
        """
        src = self._as_dense()  # the condition covers the stacked leaves of a lazy stack

        def pick(x, y):
            if y is None:  # a leaf that only this tensordict has
                y = pad
            return torch.where(_trailing(condition, x), x, y)

        if not is_tensor_collection(other):
            result = src._fast_apply(lambda x: pick(x, other))
        elif pad is None:
            other = other._leafwise_operand()._as_dense()  # leaves over the whole batch
            mine, theirs = set(src.keys(True, True)), set(other.keys(True, True))
            if mine != theirs:
                msg = (
                    f"where: the leaves {sorted(map(str, mine - theirs))} are missing from other "
                    f"and {sorted(map(str, theirs - mine))} from this tensordict; pass pad= for a "
                    "value that stands in for them"
                )
                raise KeyMismatchError(msg)
            result = src._fast_apply(pick, other)
        else:
            other = other._leafwise_operand()._as_dense()  # leaves over the whole batch
            result = src._fast_apply(pick, other, default=None)
            mine = set(src.keys(True, True))
            only_theirs = [k for k in other.keys(True, True) if k not in mine]
            if only_theirs:
                result.update(
                    other.select(*only_theirs)._fast_apply(
                        lambda y: torch.where(_trailing(condition, y), pad, y)
                    )
                )
        if self.is_locked:
            result.lock_()
        if out is not None:
            out.update(result, update_batch_size=update_batch_size)
            return out
        return result

    # ------------------------------------------------------------------ padding
    def pad(
        self: T,
        pad_size: Sequence[int],
        value: float = 0.0,
        inplace: bool = False,
        safe: bool = True,
    ) -> T:
        """Returns the tensordict padded along its batch dims with ``value``: :func:`tensordict.pad`.

        Args:
            pad_size (sequence of int): ``(dim0_before, dim0_after, dim1_before, ...)``, for the
                leading batch dims; negative values crop.
            value (float, optional): the fill value. Defaults to 0.0.
            inplace (bool, optional): pad this tensordict in place. Defaults to False.
            safe (bool, optional): accepted for compatibility.

        Returns:
            The padded tensordict.

        Raises:
            RuntimeError: if ``pad_size`` does not fit the batch dims.

        Examples:
            >>> TensorDict(a=torch.ones(2), batch_size=[2]).pad([1, 1])["a"]
            tensor([0., 1., 1., 0.])
        """
        return CONVERTERS["pad"](self, pad_size, value=value, inplace=inplace, safe=safe)
