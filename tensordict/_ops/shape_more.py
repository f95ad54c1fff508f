"""More shape methods: splitting by index, rolling, moving, flipping, narrowing, tiling.

Like :mod:`tensordict._ops.shape`, each method acts on the batch dimensions only:
it computes the new batch size on a zero-memory tensor of the batch shape, then
hands one per-entry function to the class primitive ``_batch_op``. Methods that
only reorder dims go through :meth:`permute` and methods that select rows go
through indexing, so lazy stacks keep their members lazy there, as in the
well-known API; the others give a dense tensordict.

Building a lazy stack needs the concrete class, which lives above this layer:
:mod:`tensordict._lazy` puts its ``lazy_stack`` in :data:`STACKERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from tensordict import _dim_names as dimnames
from tensordict._collection import is_tensor_collection
from tensordict._keys import unravel_key
from tensordict._nontensor import NonTensorData, _dummy
from tensordict.errors import (
    AxisRangeError,
    DensifyError,
    DimensionError,
    InvalidArgumentError,
    PaddingError,
    ShapeArgumentError,
)

STACKERS: dict[str, Callable] = {}
"""``"lazy_stack"`` and ``"maybe_dense_stack"``: the stacking functions, put here by :mod:`tensordict._lazy`."""


def _dim(dim: int, ndim: int, what: str = "dim") -> int:
    """``dim`` as a non-negative batch dim; ``DimensionError`` (an IndexError) when out of range."""
    dim = int(dim)
    if not -ndim <= dim < ndim:
        msg = f"{what} {dim} is out of range for a tensordict with {ndim} batch dimensions (expected a dim in [{-ndim}, {ndim - 1}])"
        raise DimensionError(msg)
    return dim + ndim if dim < 0 else dim


def _as_tuple(value) -> tuple:
    if isinstance(value, (Sequence, torch.Size)):
        return tuple(int(v) for v in value)
    return (int(value),)


def _sorted_keys(keys) -> list:
    """Nested keys in sorted order, a string key sorting as a tuple of one part."""
    return sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)


def _entrywise(tensor_fn, td_fn):
    """A ``_batch_op`` function: ``tensor_fn(x, extra)`` on tensors, ``td_fn(x, extra)`` on sub-tensordicts.

    A non-tensor entry takes the batch size ``tensor_fn`` gives a tensor of its batch shape.
    """

    def op(x, extra):
        if isinstance(x, torch.Tensor):
            return tensor_fn(x, extra)
        if isinstance(x, NonTensorData):
            return x._reshaped(lambda d: tensor_fn(d, torch.Size()))
        return td_fn(x, extra)

    return op


class ShapeMoreMixin:
    """Split by index, roll, move, swap, flip, narrow, tile, broadcast, rotate, promote, restack."""

    __slots__ = ()

    def tensor_split(self, indices_or_sections, dim: int = 0) -> tuple:
        """Splits the tensordict along batch dim ``dim`` like ``torch.tensor_split``.

        An int ``n`` gives ``n`` parts as equal as possible (the first ones one element longer
        when the size does not divide); a list, tuple or 1-d tensor of ints gives the indices
        at which to cut. The parts select rows of this tensordict, so they are views, keep its
        dim names, and on a lazy stack are lazy stacks.

        Args:
            indices_or_sections (int, list of int, tuple of int or torch.Tensor): the number of
                parts, or the cut indices.
            dim (int, optional): the batch dim; negative values count from the last batch dim.
                Defaults to 0.

        Returns:
            A tuple of tensordicts.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.
            InvalidArgumentError: if ``indices_or_sections`` is neither an int, a sequence of
                ints nor an integer tensor of at most one dim, or asks for 0 parts.

        Examples:
            >>> td = TensorDict({"a": torch.arange(5)}, [5])
            >>> [part["a"].tolist() for part in td.tensor_split(2)]
            [[0, 1, 2], [3, 4]]
            >>> [part["a"].tolist() for part in td.tensor_split([1, 4])]
            [[0], [1, 2, 3], [4]]
        """
        d = _dim(dim, self.batch_dims)
        ios = indices_or_sections
        if isinstance(ios, torch.Tensor):
            ok = ios.ndim <= 1 and not ios.is_floating_point() and not ios.is_complex()
            ios = ios.tolist() if ok else ios
        elif isinstance(ios, (list, tuple)):
            ok = all(isinstance(i, int) and not isinstance(i, bool) for i in ios)
        else:
            ok = isinstance(ios, int) and not isinstance(ios, bool)
        if not ok:
            msg = f"tensor_split: indices_or_sections must be an int, a list of ints or a 1-d integer tensor, got {indices_or_sections!r}"
            raise InvalidArgumentError(msg)
        if isinstance(ios, int) and ios <= 0:
            msg = f"tensor_split: the number of sections must be greater than 0, got {ios}"
            raise InvalidArgumentError(msg)
        size = self.batch_size[d]
        lengths = [len(p) for p in torch.empty(size, device="meta").tensor_split(ios)]
        parts, start = [], 0
        for length in lengths:
            parts.append(self[(slice(None),) * d + (slice(start, start + length),)])
            start += length
        return tuple(parts)

    def roll(self, shifts, dims=None, *, inplace: bool = False):
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
        shift_t = _as_tuple(shifts)
        if dims is None:
            if len(shift_t) != 1:
                msg = f"roll: without dims, shifts must be one int (the batch dims are rolled as one), got shifts={shifts!r}"
                raise ShapeArgumentError(msg)
            numel = self.batch_size.numel()

            def flat_roll(x, extra):
                return x.reshape(torch.Size((numel,)) + extra).roll(shift_t, 0).reshape(x.shape)

            op = _entrywise(flat_roll, flat_roll)
            result = self._batch_op(op, self.batch_size, dimnames.clean(self.names))
            return self._maybe_inplace(result, inplace, "roll")
        dims_t = _as_tuple(dims)
        if len(shift_t) != len(dims_t):
            msg = f"roll: shifts and dims must have as many entries, got shifts={shifts!r} and dims={dims!r}"
            raise ShapeArgumentError(msg)
        dims_t = tuple(_dim(d, self.batch_dims) for d in dims_t)
        op = _entrywise(
            lambda x, extra: x.roll(shift_t, dims_t),
            lambda x, extra: x.roll(shift_t, dims_t),
        )
        result = self._batch_op(op, self.batch_size, dimnames.clean(self.names))
        return self._maybe_inplace(result, inplace, "roll")

    def movedim(self, source, destination):
        """Returns a tensordict with the batch dims ``source`` moved to the positions ``destination``.

        Like ``torch.movedim`` on the batch dims: the other dims keep their order. This is a
        :meth:`permute`, so the leaves are views, the dim names follow their dims, and a lazy
        stack stays lazy.

        Args:
            source (int or tuple of int): the batch dims to move.
            destination (int or tuple of int): where they go, one position per dim.

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.
            InvalidArgumentError: if ``source`` and ``destination`` have different lengths.
            ShapeArgumentError: if a dim is repeated in ``source`` or in ``destination``.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3, 4], names=["x", "y", "z"])
            >>> moved = td.movedim(0, -1)
            >>> moved.batch_size, moved.names
            (torch.Size([3, 4, 2]), ['y', 'z', 'x'])
        """
        src, dst = _as_tuple(source), _as_tuple(destination)
        if len(src) != len(dst):
            msg = f"movedim: source and destination must have as many dims, got {len(src)} and {len(dst)}"
            raise InvalidArgumentError(msg)
        ndim = self.batch_dims
        src = tuple(_dim(d, ndim) for d in src)
        dst = tuple(_dim(d, ndim) for d in dst)
        for what, dims in (("source", src), ("destination", dst)):
            if len(set(dims)) != len(dims):
                msg = f"movedim: a dim is repeated in {what} {list(dims)}"
                raise ShapeArgumentError(msg)
        order = [None] * ndim
        for s, t in zip(src, dst):
            order[t] = s
        rest = iter(d for d in range(ndim) if d not in src)
        order = [next(rest) if o is None else o for o in order]
        return self.permute(*order)

    def moveaxis(self, source, destination):
        """Returns a tensordict with the batch dims ``source`` moved to ``destination``: :meth:`movedim`.

        Args:
            source (int or tuple of int): the batch dims to move.
            destination (int or tuple of int): where they go, one position per dim.

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if a dim is out of range for the batch dims.
            InvalidArgumentError: if ``source`` and ``destination`` have different lengths.
            ShapeArgumentError: if a dim is repeated.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> td.moveaxis(1, 0).batch_size
            torch.Size([3, 2])
        """
        return self.movedim(source, destination)

    def swapaxes(self, axis0: int, axis1: int):
        """Returns a tensordict with the batch dims ``axis0`` and ``axis1`` exchanged.

        This is :meth:`transpose`: the leaves are views, the dim names follow their dims and
        a lazy stack stays lazy.

        Args:
            axis0 (int): a batch dim; negative values count from the last batch dim.
            axis1 (int): the other batch dim.

        Returns:
            A new tensordict.

        Raises:
            AxisRangeError: if a dim is out of range for the batch dims (a ``ValueError``).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3], names=["x", "y"])
            >>> td.swapaxes(0, 1)["a"].shape, td.swapaxes(0, 1).names
            (torch.Size([3, 2, 4]), ['y', 'x'])
        """
        ndim = self.batch_dims
        for axis in (axis0, axis1):
            if not -ndim <= axis < ndim:
                msg = f"swapaxes: dim {axis} is out of range for a tensordict with {ndim} batch dimensions"
                raise AxisRangeError(msg)
        return self.transpose(axis0, axis1)

    def swapdims(self, axis0: int, axis1: int):
        """Returns a tensordict with the batch dims ``axis0`` and ``axis1`` exchanged: :meth:`swapaxes`.

        Args:
            axis0 (int): a batch dim; negative values count from the last batch dim.
            axis1 (int): the other batch dim.

        Returns:
            A new tensordict.

        Raises:
            AxisRangeError: if a dim is out of range for the batch dims (a ``ValueError``).

        Examples:
            >>> TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).swapdims(0, -1).batch_size
            torch.Size([3, 2])
        """
        return self.swapaxes(axis0, axis1)

    def flip(self, dims):
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
        dims_t = tuple(_dim(d, ndim) for d in _as_tuple(dims))
        op = _entrywise(lambda x, extra: x.flip(dims_t), lambda x, extra: x.flip(dims_t))
        return self._batch_op(op, self.batch_size, dimnames.clean(self.names))

    def fliplr(self):
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

    def flipud(self):
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

    def narrow(self, dim: int, start: int, length: int):
        """Returns the ``length`` elements of batch dim ``dim`` from ``start`` on, like ``torch.narrow``.

        The leaves are views and the dims keep their names; on a lazy stack the result is
        dense. A negative ``start`` counts from the end of the dim.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim.
            start (int): the first element kept.
            length (int): how many elements are kept.

        Returns:
            A new tensordict.

        Raises:
            DimensionError: if ``dim`` or ``start`` is out of range.
            ShapeArgumentError: if ``length`` is negative or the range ends past the dim.

        Examples:
            >>> td = TensorDict({"a": torch.arange(5)}, [5])
            >>> td.narrow(0, 1, 3)["a"].tolist()
            [1, 2, 3]
        """
        d = _dim(dim, self.batch_dims)
        size = self.batch_size[d]
        if not -size <= start <= size:
            msg = f"narrow: start {start} is out of range for dim {dim} of size {size}"
            raise DimensionError(msg)
        start = start + size if start < 0 else start
        if length < 0 or start + length > size:
            msg = (
                f"narrow: start ({start}) + length ({length}) exceeds the size {size} of dim {dim}"
            )
            raise ShapeArgumentError(msg)
        new = _dummy(self.batch_size).narrow(d, start, length).shape
        op = _entrywise(
            lambda x, extra: x.narrow(d, start, length), lambda x, extra: x.narrow(d, start, length)
        )
        return self._batch_op(op, new, dimnames.clean(self.names))

    def tile(self, dims):
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
        reps = _as_tuple(dims)
        reps = (1,) * (self.batch_dims - len(reps)) + reps
        new = _dummy(self.batch_size).tile(reps).shape
        op = _entrywise(
            lambda x, extra: x.tile(reps + (1,) * len(extra)),
            lambda x, extra: x.tile(reps + (1,) * len(extra)),
        )
        return self._batch_op(op, new)

    def broadcast_to(self, shape):
        """Returns a tensordict whose batch dims are broadcast to ``shape``, like ``torch.broadcast_to``.

        The leaves are expanded views (see :meth:`expand`), the result has no dim names, and on
        a lazy stack it is dense.

        Args:
            shape (sequence of int): the new batch size; -1 keeps the size of a dim.

        Returns:
            A new tensordict.

        Raises:
            ShapeArgumentError: if the batch size does not broadcast to ``shape``.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(1, 3)}, [1])
            >>> td.broadcast_to((2, 4))["a"].shape
            torch.Size([2, 4, 3])
        """
        try:
            new = _dummy(self.batch_size).broadcast_to(_as_tuple(shape)).shape
        except RuntimeError as err:
            msg = f"cannot broadcast the batch size {list(self.batch_size)} to {list(shape)}: {err}"
            raise ShapeArgumentError(msg) from err
        op = _entrywise(
            lambda x, extra: x.expand(new + extra), lambda x, extra: x.expand(new + extra)
        )
        return self._batch_op(op, new)

    def rot90(self, k: int = 1, dims=(0, 1)):
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
        plane = _as_tuple(dims)
        if len(plane) != 2:
            msg = f"rot90 needs two dims, got dims={dims!r}"
            raise ShapeArgumentError(msg)
        d0, d1 = (_dim(d, ndim) for d in plane)
        if d0 == d1:
            msg = f"rot90 needs two different dims, got dims={dims!r}"
            raise ShapeArgumentError(msg)
        k = int(k)
        new = _dummy(self.batch_size).rot90(k, (d0, d1)).shape
        names = self.names
        if names is not None and k % 2:
            names = list(names)
            names[d0], names[d1] = names[d1], names[d0]
        op = _entrywise(
            lambda x, extra: x.rot90(k, (d0, d1)), lambda x, extra: x.rot90(k, (d0, d1))
        )
        return self._batch_op(op, new, dimnames.clean(names))

    def _atleast(self, n: int):
        out = self
        while out.batch_dims < n:
            out = out.unsqueeze(0)
        return out

    def atleast_1d(self):
        """Returns the tensordict with at least 1 batch dim: a dim of size 1 is put first if needed.

        Returns:
            This tensordict when it has a batch dim, or a new one (see :meth:`unsqueeze`).

        Examples:
            >>> TensorDict({"a": torch.zeros(3)}, []).atleast_1d().batch_size
            torch.Size([1])
        """
        return self._atleast(1)

    def atleast_2d(self):
        """Returns the tensordict with at least 2 batch dims: dims of size 1 are put first if needed.

        Returns:
            This tensordict when it has 2 batch dims or more, or a new one (see
            :meth:`unsqueeze`).

        Examples:
            >>> TensorDict({"a": torch.zeros(3)}, [3]).atleast_2d().batch_size
            torch.Size([1, 3])
        """
        return self._atleast(2)

    def atleast_3d(self):
        """Returns the tensordict with at least 3 batch dims: dims of size 1 are put first if needed.

        Unlike ``torch.atleast_3d``, which appends a dim to a 2-d tensor, the new dims always
        come first, as in the well-known API.

        Returns:
            This tensordict when it has 3 batch dims or more, or a new one (see
            :meth:`unsqueeze`).

        Examples:
            >>> TensorDict({"a": torch.zeros(3, 2)}, [3, 2]).atleast_3d().batch_size
            torch.Size([1, 3, 2])
        """
        return self._atleast(3)

    def to_lazystack(self, dim: int = 0):
        """Returns the tensordict as a lazy stack of its slices along batch dim ``dim``.

        The members are the tensordicts of :meth:`unbind` along ``dim``, views of this one;
        the stack dim loses its name. A lazy stack along ``dim`` already is returned as it is;
        one along another dim is restacked along ``dim``, its members lazy stacks themselves.

        Args:
            dim (int, optional): the batch dim to stack along; negative values count from the
                last batch dim. Defaults to 0.

        Returns:
            A :class:`LazyStackedTensorDict`.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2)}, [3, 2])
            >>> lazy = td.to_lazystack(1)
            >>> type(lazy).__name__, lazy.stack_dim, len(lazy.tensordicts)
            ('LazyStackedTensorDict', 1, 2)
        """
        d = _dim(dim, self.batch_dims)
        if self._is_lazy and self.stack_dim == d:
            return self
        return STACKERS["lazy_stack"](list(self.unbind(d)), d)

    # ------------------------------------------------------------------ stacking
    @classmethod
    def lazy_stack(cls, input, dim: int = 0, *, out=None, **kwargs):
        """Stacks tensordicts lazily along a new batch dim ``dim``: the function :func:`lazy_stack`.

        Args:
            input (sequence of TensorDictBase): the members, with one batch size.
            dim (int, optional): the new batch dim. Defaults to 0.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict to write the stack into. Defaults to
                None.
            **kwargs: passed on to :func:`lazy_stack`.

        Returns:
            A :class:`LazyStackedTensorDict`, or ``out``.

        Raises:
            RuntimeError: if ``input`` is empty or the batch sizes differ.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> stack = TensorDict.lazy_stack([td, td], 1)
            >>> type(stack).__name__, stack.batch_size
            ('LazyStackedTensorDict', torch.Size([3, 2]))
        """
        return STACKERS["lazy_stack"](input, dim, out=out, **kwargs)

    @classmethod
    def maybe_dense_stack(cls, input, dim: int = 0, *, out=None, **kwargs):
        """Stacks tensordicts densely when their keys and shapes allow it, lazily otherwise.

        Args:
            input (sequence of TensorDictBase): the members, with one batch size.
            dim (int, optional): the new batch dim. Defaults to 0.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict to copy the stack into (with
                ``update_``), which is returned. Defaults to None.
            **kwargs: accepted for compatibility and ignored.

        Returns:
            A :class:`TensorDict` or a :class:`LazyStackedTensorDict`, or ``out``.

        Raises:
            RuntimeError: if ``input`` is empty or the batch sizes differ.

        Examples:
            >>> a, b = TensorDict({"x": torch.zeros(2)}, [2]), TensorDict({"y": torch.ones(2)}, [2])
            >>> type(TensorDict.maybe_dense_stack([a, a])).__name__
            'TensorDict'
            >>> type(TensorDict.maybe_dense_stack([a, b])).__name__
            'LazyStackedTensorDict'
        """
        result = STACKERS["maybe_dense_stack"](input, dim)
        if out is not None:
            out.update_(result)
            return out
        return result

    @classmethod
    def stack(cls, input, dim: int = 0, *, out=None):
        """Stacks tensordicts along a new batch dim ``dim``: ``torch.stack`` of tensordicts.

        Args:
            input (sequence of TensorDictBase): the tensordicts, with the same keys and
                batch size.
            dim (int, optional): the new batch dim. Defaults to 0.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict to write the stack into. Defaults to
                None.

        Returns:
            A new tensordict, or ``out``.

        Raises:
            RuntimeError: if the batch sizes, the keys or the shapes of a leaf differ.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> TensorDict.stack([td, td]).batch_size
            torch.Size([2, 3])
        """
        return torch.stack(list(input), dim, out=out)

    @classmethod
    def cat(cls, input, dim: int = 0, *, out=None):
        """Concatenates tensordicts along the batch dim ``dim``: ``torch.cat`` of tensordicts.

        Args:
            input (sequence of TensorDictBase): the tensordicts, with the same keys and
                the same batch size but along ``dim``.
            dim (int, optional): the batch dim to concatenate along. Defaults to 0.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict to write the result into. Defaults
                to None.

        Returns:
            A new tensordict, or ``out``.

        Raises:
            RuntimeError: if the keys or the shapes differ.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> TensorDict.cat([td, td]).batch_size
            torch.Size([6])
        """
        return torch.cat(list(input), dim, out=out)

    def _tensor_leaves_in_order(self, sorted) -> list:
        if sorted is None or sorted is False:
            keys = list(self.keys(True, True))
        elif sorted is True:
            keys = _sorted_keys(self.keys(True, True))
        else:
            keys = list(sorted)
        values = [self[key] for key in keys]
        return [v for v in values if isinstance(v, torch.Tensor)]

    def stack_from_tensordict(self, dim: int = 0, *, sorted=None, out=None) -> torch.Tensor:
        """Returns the tensor leaves stacked into one tensor with ``torch.stack``.

        The leaves (nested ones included, non-tensor entries skipped) are taken in key order,
        in sorted order, or in the order of a list of keys, and must have one shape.

        Args:
            dim (int, optional): the dim of the result along which the leaves lie. Defaults
                to 0.

        Keyword Args:
            sorted (bool or list of NestedKey, optional): True sorts the keys; a list gives
                the keys and their order. Defaults to None, the key order.
            out (torch.Tensor, optional): a tensor to write the result into. Defaults to None.

        Returns:
            A tensor, or ``out``.

        Raises:
            RuntimeError: if the leaves have different shapes, or there are none.
            KeyError: if a listed key is missing.

        Examples:
            >>> td = TensorDict({"b": torch.ones(2), "a": torch.zeros(2)}, [2])
            >>> td.stack_from_tensordict().tolist(), td.stack_from_tensordict(sorted=True).tolist()
            ([[1.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]])
        """
        leaves = self._tensor_leaves_in_order(sorted)
        return torch.stack(leaves, dim) if out is None else torch.stack(leaves, dim, out=out)

    def cat_from_tensordict(self, dim: int = 0, *, sorted=None, out=None) -> torch.Tensor:
        """Returns the tensor leaves concatenated into one tensor with ``torch.cat``.

        The leaves are taken as in :meth:`stack_from_tensordict` and must have the same shape
        but along ``dim``.

        Args:
            dim (int, optional): the dim to concatenate along. Defaults to 0.

        Keyword Args:
            sorted (bool or list of NestedKey, optional): True sorts the keys; a list gives
                the keys and their order. Defaults to None, the key order.
            out (torch.Tensor, optional): a tensor to write the result into. Defaults to None.

        Returns:
            A tensor, or ``out``.

        Raises:
            RuntimeError: if the shapes do not fit, or there are no tensor leaves.
            KeyError: if a listed key is missing.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 1), "b": torch.ones(2, 1)}, [2])
            >>> td.cat_from_tensordict(1).tolist()
            [[0.0, 1.0], [0.0, 1.0]]
        """
        leaves = self._tensor_leaves_in_order(sorted)
        return torch.cat(leaves, dim) if out is None else torch.cat(leaves, dim, out=out)

    def _combine_entries(self, fn, keys, out_key, keep_entries: bool):
        result = fn([self[key] for key in keys])
        self.set(out_key, result)
        if not keep_entries:
            for key in keys:
                if unravel_key(key) != unravel_key(out_key):
                    self.del_(key)
        return self

    def stack_tensors(self, *keys, out_key, dim: int = 0, keep_entries: bool = False):
        """Stacks the entries ``keys`` into one new entry ``out_key``, in place, and returns the tensordict.

        The entries go through ``torch.stack(values, dim)``; ``dim`` counts the dims of the
        entries, batch dims included, so it is usually past the batch dims. The entries are
        removed afterwards unless ``keep_entries``.

        Args:
            *keys (NestedKey): the entries to stack, of one shape.

        Keyword Args:
            out_key (NestedKey): the key of the result.
            dim (int, optional): the dim of the result along which the entries lie. Defaults
                to 0.
            keep_entries (bool, optional): keep the stacked entries. Defaults to False.

        Returns:
            This tensordict.

        Raises:
            KeyError: if a key is missing.
            RuntimeError: if the shapes differ, the result does not start with the batch size,
                or the tensordict is locked; the tensordict is left unchanged.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2), "b": torch.ones(3, 2)}, [3])
            >>> td.stack_tensors("a", "b", out_key="c", dim=1)["c"].shape, list(td.keys())
            (torch.Size([3, 2, 2]), ['c'])
        """
        return self._combine_entries(lambda v: torch.stack(v, dim), keys, out_key, keep_entries)

    def cat_tensors(self, *keys, out_key, dim: int = 0, keep_entries: bool = False):
        """Concatenates the entries ``keys`` into one new entry ``out_key``, in place, and returns the tensordict.

        The entries go through ``torch.cat(values, dim)``; ``dim`` counts the dims of the
        entries, batch dims included. The entries are removed afterwards unless
        ``keep_entries``.

        Args:
            *keys (NestedKey): the entries to concatenate.

        Keyword Args:
            out_key (NestedKey): the key of the result.
            dim (int, optional): the dim to concatenate along. Defaults to 0.
            keep_entries (bool, optional): keep the concatenated entries. Defaults to False.

        Returns:
            This tensordict.

        Raises:
            KeyError: if a key is missing.
            RuntimeError: if the shapes do not fit, the result does not start with the batch
                size, or the tensordict is locked; the tensordict is left unchanged.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3, 2), "b": torch.ones(3, 1)}, [3])
            >>> td.cat_tensors("a", "b", out_key="c", dim=-1, keep_entries=True)["c"].shape
            torch.Size([3, 3])
        """
        return self._combine_entries(lambda v: torch.cat(v, dim), keys, out_key, keep_entries)

    # ------------------------------------------------------------------ ragged entries
    def densify(self, layout: torch.layout = torch.strided):
        """Returns the tensordict with its lazy stacks made dense, ragged leaves as nested tensors.

        A lazy stack (along dim 0) becomes a :class:`TensorDict`: leaves of one shape are
        stacked, leaves whose shapes differ become one nested tensor of the given layout, and
        sub-stacks are densified the same way. A tensordict with no lazy stack inside is
        returned as it is.

        Args:
            layout (torch.layout, optional): the layout of the nested tensors,
                ``torch.strided`` or ``torch.jagged``. Defaults to ``torch.strided``.

        Returns:
            This tensordict, or a new :class:`TensorDict`.

        Raises:
            DensifyError: if a lazy stack inside is stacked along another dim than 0 (a
                ``NotImplementedError``).

        Examples:
            >>> a = TensorDict({"x": torch.zeros(2, 3)}, [2])
            >>> b = TensorDict({"x": torch.ones(2, 5)}, [2])
            >>> dense = lazy_stack([a, b]).densify()
            >>> type(dense).__name__, dense.batch_size, dense["x"].is_nested
            ('TensorDict', torch.Size([2, 2]), True)
        """
        if self._is_lazy:
            return self._densify_members(layout)
        out, changed = {}, False
        for key, value in self._items_level():
            if is_tensor_collection(value) and not isinstance(value, NonTensorData):
                dense = value.densify(layout)
                changed = changed or dense is not value
                value = dense
            out[key] = value
        if not changed:
            return self
        return self._new_like(out, self.batch_size, self.names)

    def _densify_members(self, layout):
        if self.stack_dim != 0:
            msg = f"densify needs a lazy stack along dim 0, this one is stacked along dim {self.stack_dim}; call to_lazystack(0) first"
            raise DensifyError(msg)
        members = self.tensordicts
        out = {}
        for key in self.keys():
            values = [member.get(key) for member in members]
            if all(isinstance(v, torch.Tensor) for v in values):
                if all(v.shape == values[0].shape for v in values):
                    out[key] = torch.stack(values, 0)
                else:
                    out[key] = torch.nested.nested_tensor(values, layout=layout)
            elif all(is_tensor_collection(v) and not isinstance(v, NonTensorData) for v in values):
                out[key] = STACKERS["lazy_stack"](values, 0).densify(layout)
            else:
                out[key] = self.get(key)
        return self._new_like(out, self.batch_size)

    def to_padded_tensor(self, padding=0.0, mask_key=None):
        """Returns a tensordict whose nested-tensor leaves are padded into regular tensors.

        Each nested leaf goes through ``torch.nested.to_padded_tensor(leaf, padding)``: every
        component is padded at its end to the largest size along each dim. The other leaves
        are kept; a lazy stack pads its members and stays lazy. Always a new tensordict.

        Args:
            padding (float, optional): the value written in the padding. Defaults to 0.0.
            mask_key (NestedKey, optional): accepted for compatibility: a mask is only
                written when the ragged dim is a batch dim, which batch sizes here never have.
                Defaults to None.

        Returns:
            A new tensordict.

        Raises:
            PaddingError: if ``mask_key`` is given (a ``RuntimeError``).

        Examples:
            >>> a = TensorDict({"x": torch.zeros(2, 3)}, [2])
            >>> b = TensorDict({"x": torch.ones(2, 5)}, [2])
            >>> lazy_stack([a, b]).densify().to_padded_tensor(padding=-1.0)["x"][0, 0]
            tensor([ 0.,  0.,  0., -1., -1.])
        """
        if mask_key is not None:
            msg = f"to_padded_tensor: mask_key={mask_key!r} needs the ragged dim to be a batch dim, and batch sizes here are never ragged; pad without mask_key"
            raise PaddingError(msg)

        def pad(x):
            return torch.nested.to_padded_tensor(x, padding) if x.is_nested else x

        return self._fast_apply(pad)
