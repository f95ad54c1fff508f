"""The batch dims themselves: reshaping, reordering, squeezing, expanding and narrowing them.

Every method acts on the batch dimensions and leaves feature dimensions alone. It
computes the new batch size once (on a zero-memory tensor of the batch shape when
torch's rule is subtle), then hands one per-entry function ``op(value, extra)`` to
the class primitive ``_batch_op``; ``extra`` is the entry's shape beyond the batch
dimensions. Sub-tensordicts receive the same public call with their full shape, so
nesting needs no special case. The leaves are views whenever torch can make them.
Methods that only reorder dims go through :meth:`permute`, so a lazy stack keeps
its members lazy there, as in the well-known API.

The argument helpers below (``shape_args``, ``shape_arg``, ``norm_dim``, ``as_ints``,
``entrywise``) are shared with :mod:`tensordict._ops.rearrange`,
:mod:`tensordict._ops.split_stack`, the lazy stack and ``map``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict import _dim_names as dimnames
from tensordict._blocks import undone, update_back, written_back
from tensordict._collection import TensorCollection
from tensordict._nontensor import NonTensorDataBase, _dummy
from tensordict._ops._contract import Contract
from tensordict._options import lazy_legacy
from tensordict._typing import T
from tensordict.errors import (
    AxisRangeError,
    ConflictingArgumentsError,
    DimensionError,
    InvalidArgumentError,
    PermutationError,
    ShapeArgumentError,
)


def shape_args(args: tuple) -> tuple:
    """A shape given as ints or as one sequence (``reshape(2, 3)``, ``reshape((2, 3))``), as a tuple of ints."""
    if len(args) == 1 and isinstance(args[0], (Sequence, torch.Size, torch.Tensor)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


def norm_dim(dim: int, ndim: int, what: str = "dim") -> int:
    """``dim`` as a non-negative batch dim; ``DimensionError`` (an IndexError) when out of range."""
    dim = int(dim)
    if not -ndim <= dim < ndim:
        expected = f" (expected a dim in [{-ndim}, {ndim - 1}])" if ndim else ""
        msg = (
            f"{what} {dim} is out of range for a tensordict with {ndim} batch dimensions{expected}"
        )
        raise DimensionError(msg)
    return dim + ndim if dim < 0 else dim


def same_batch_size(items: Sequence, prefix: str, noun: str, error: type[Exception]) -> torch.Size:
    """The batch size all ``items`` share; raises ``error`` naming the first that differs from the first.

    The message reads ``"{prefix}: {noun} 0 has [...] and {noun} i has [...]"``.
    """
    size = items[0].batch_size
    for i, item in enumerate(items):
        if item.batch_size != size:
            msg = f"{prefix}: {noun} 0 has {list(size)} and {noun} {i} has {list(item.batch_size)}"
            raise error(msg)
    return size


def cat_dim(tds: Sequence[TensorCollection], dim: int, size: torch.Size) -> int:
    """The dim of a concatenation as a non-negative batch dim, once the batch sizes agree outside it.

    ``size`` is the batch size the others are held to. Raises ``DimensionError`` (an
    IndexError) when ``dim`` is out of range for it, and ``RuntimeError`` naming the
    first tensordict whose batch size differs from ``size`` outside ``dim``.
    """
    ndim = len(size)
    if not -ndim <= dim < ndim:
        msg = f"cat dimension {dim} is out of range for {ndim} batch dimensions"
        raise DimensionError(msg)
    d = dim + ndim if dim < 0 else dim
    for i, td in enumerate(tds):
        other = td.batch_size
        if len(other) != ndim or other[:d] != size[:d] or other[d + 1 :] != size[d + 1 :]:
            msg = (
                f"cannot concatenate tensordicts whose batch sizes differ outside dimension {d}: "
                f"tensordict 0 has {list(tds[0].batch_size)} and tensordict {i} has {list(other)}"
            )
            raise RuntimeError(msg)
    return d


def as_ints(value: int | Sequence[int]) -> tuple:
    """One int or a sequence of ints, as a tuple of ints."""
    if isinstance(value, (Sequence, torch.Size)):
        return tuple(int(v) for v in value)
    return (int(value),)


def _axes_in_range(method: str, dims: tuple, ndim: int) -> None:
    """Raises AxisRangeError, naming ``method``, for the first of ``dims`` out of range for ``ndim`` batch dims."""
    for dim in dims:
        if not -ndim <= dim < ndim:
            msg = (
                f"{method}: dim {dim} is out of range for a tensordict with {ndim} batch dimensions"
            )
            raise AxisRangeError(msg)


def entrywise(tensor_fn: Callable, td_fn: Callable) -> Callable[[Any, torch.Size], Any]:
    """A ``_batch_op`` function: ``tensor_fn(x, extra)`` on tensors, ``td_fn(x, extra)`` on sub-tensordicts.

    A non-tensor entry takes the batch size ``tensor_fn`` gives a tensor of its batch shape.
    """

    def op(x, extra):
        if isinstance(x, torch.Tensor):
            return tensor_fn(x, extra)
        if isinstance(x, NonTensorDataBase):
            return x._reshaped(lambda d: tensor_fn(d, torch.Size()))
        return td_fn(x, extra)

    return op


def permutation(dims: tuple, ndim: int) -> list:
    """``dims`` of ``permute`` as a list of non-negative batch dims, each once.

    Raises:
        AxisRangeError: for a dim out of range (a ValueError and an IndexError).
        PermutationError: unless each batch dim is there once (a ValueError and a RuntimeError).
    """
    raw = shape_args(dims)
    for d in raw:
        if not -ndim <= d < ndim:
            msg = f"permute: dim {d} is out of range for a tensordict with {ndim} batch dimensions"
            raise AxisRangeError(msg)
    order = [d + ndim if d < 0 else d for d in raw]
    if sorted(order) != list(range(ndim)):
        msg = f"permute needs each of the {ndim} batch dimensions once, got {list(raw)}"
        raise PermutationError(msg)
    return order


def reshaped_back(result: T, source: TensorCollection) -> T:
    """``result``, a reshape of the batch dims of ``source``, made to write back into ``source``.

    A with-block over it (``with td.unsqueeze(0) as tdu:``) reshapes what it holds back to
    the batch size of ``source`` when it ends, and updates ``source`` with it (see
    :mod:`tensordict._blocks`).
    """
    return written_back(
        result,
        source,
        update_back(_reshape_to_source),
        undone_by=("view", tuple(source.batch_size)),
    )


def permuted_back(result: Any, source: Any, order: Sequence[int]) -> Any:
    """``result``, ``source`` with its batch dims in the order ``order``, made to write back.

    A with-block over it permutes what it holds back into ``source`` when it ends; in the
    legacy lazy mode, :func:`legacy_source` gives ``source`` for the permutation back.
    """
    inverse = tuple(order.index(d) for d in range(len(order)))
    return written_back(
        result,
        source,
        update_back(lambda r, _: r.permute(*inverse)),
        undone_by=("permute", inverse),
    )


def legacy_source(td: Any, call: tuple) -> Any:
    """In the legacy lazy mode, the tensordict that ``call`` on ``td`` gives back, or None.

    A result of a shape method in that mode is a view of its source in the well-known API,
    and the call that undoes the method returns the source itself (``td.permute(1, 0)
    .permute(1, 0) is td``); ``call`` is ``("permute", order)`` or ``("view", size)``.
    """
    return undone(td, call) if lazy_legacy() else None


_LEGACY_VIEW: list = []


def register_legacy_view(maker: Callable) -> None:
    """Registers ``maker(td, kind, arg)``, the lazy view the legacy lazy mode gives (see ``_shape_call``).

    :mod:`tensordict._legacy_view` registers its view class here: the mixins sit below the classes.
    """
    _LEGACY_VIEW[:] = [maker]


def _reshape_to_source(result, source):
    return result.reshape(source.batch_size)


def shape_arg(shape: tuple, size: Sequence[int] | None, method: str) -> tuple:
    """The new batch size of ``reshape``/``view``, given as ``*shape`` or as ``size=``."""
    if size is None:
        return shape_args(shape)
    if shape:
        msg = f"{method}() takes the new batch size as *shape or as size=, not both"
        raise ConflictingArgumentsError(msg)
    return shape_args((size,))


class BatchDimsMixin(Contract):
    """Reshape, view, flatten, permute, move, swap, squeeze, unsqueeze, expand, broadcast and narrow.

    Calls: ``_batch_op``, ``_reshaped``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ sizes
    @property
    def shape(self) -> torch.Size:
        """The batch size (an alias of :attr:`batch_size`).

        Examples:
            >>> TensorDict({"a": torch.zeros(2, 3)}, [2]).shape
            torch.Size([2])
        """
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions.

        Examples:
            >>> TensorDict({}, [2, 3]).batch_dims
            2
        """
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """The number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).ndim
            2
        """
        return len(self.batch_size)

    def ndimension(self) -> int:
        """Returns the number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).ndimension()
            2
        """
        return len(self.batch_size)

    def dim(self) -> int:
        """Returns the number of batch dimensions (an alias of :attr:`batch_dims`).

        Examples:
            >>> TensorDict({}, [2, 3]).dim()
            2
        """
        return len(self.batch_size)

    def size(self, dim: int | None = None) -> torch.Size | int:
        """Returns the batch size, or its size along one batch dimension.

        Args:
            dim (int, optional): a batch dimension (negative counts from the end). Defaults to None.

        Returns:
            The torch.Size batch size, or an int when ``dim`` is given.

        Raises:
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> TensorDict({}, [2, 3]).size(), TensorDict({}, [2, 3]).size(-1)
            (torch.Size([2, 3]), 3)
        """
        return self.batch_size if dim is None else self.batch_size[dim]

    def numel(self) -> int:
        """Returns the number of elements of the batch.

        Returns:
            The product of the batch size, as an int (1 without batch dimensions).

        Examples:
            >>> TensorDict({}, [2, 3]).numel()
            6
        """
        return self.batch_size.numel()

    def __len__(self) -> int:
        """The size of the first batch dimension (0 without batch dimensions)."""
        batch_size = self.batch_size
        return batch_size[0] if batch_size else 0

    # ------------------------------------------------------------------ legacy lazy views
    def _shape_call(self, kind: str, arg: tuple):
        """The result of a shape call that the class gives itself, or None to compute it densely.

        ``permute``, ``squeeze``, ``unsqueeze`` and ``view`` (and the methods over them) ask
        it once their arguments are checked and the call changes something: ``kind`` is the
        method, ``arg`` the new order, the dims removed, the dims inserted or the new batch
        size. In the legacy lazy mode the answer is a lazy view of this tensordict (see
        :mod:`tensordict._legacy_view`); a view answers for itself.
        """
        if _LEGACY_VIEW and lazy_legacy():
            return _LEGACY_VIEW[0](self, kind, arg)
        return None

    # ------------------------------------------------------------------ in place
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

    # ------------------------------------------------------------------ reshaping
    def reshape(
        self: T,
        *shape: int | Sequence[int],
        size: Sequence[int] | None = None,
        inplace: bool = False,
    ) -> T:
        """Returns a tensordict whose batch dims are reshaped to ``shape``, feature dims untouched.

        Each leaf goes through ``reshape(shape + feature_shape)``: a view when torch can make
        one, a copy otherwise. Sub-tensordicts are reshaped the same way and non-tensor entries
        take the new batch size. One entry of ``shape`` may be -1, inferred from the others.
        When the new batch size is the current one, this tensordict itself is returned;
        otherwise the result has no dim names.

        Unlike the other shape methods, its result does not write back at the end of a
        with-block, as in the well-known API: use :meth:`view` for that.

        Args:
            *shape (int or sequence of int): the new batch size, as ints or as one sequence.

        Keyword Args:
            size (sequence of int, optional): the new batch size, instead of ``*shape``.
                Defaults to None.
            inplace (bool, optional): reshape this tensordict itself (its sub-tensordicts too,
                which keep their identity) and return it. Defaults to False.

        Returns:
            This tensordict, or a new one.

        Raises:
            RuntimeError: if ``shape`` does not hold as many elements as the batch size, or has
                more than one -1; with ``inplace``, if the tensordict is locked.
            NotImplementedError: with ``inplace``, on a lazy stack.
            TypeError: if an entry of ``shape`` is not a number or a string, or if both
                ``shape`` and ``size`` are given (ConflictingArgumentsError).
            ValueError: if an entry of ``shape`` is a string that is not an integer.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.reshape(-1)["a"].shape, td.reshape(size=(3, 2)).batch_size
            (torch.Size([6, 4]), torch.Size([3, 2]))
        """
        new = _dummy(self.batch_size).reshape(shape_arg(shape, size, "reshape")).shape
        if new == self.batch_size:
            return self
        return self._maybe_inplace(self._reshape_batch(new), inplace, "reshape")

    def view(
        self: T,
        *shape: int | Sequence[int],
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> T:
        """Returns a tensordict whose leaves are views with the batch dims reshaped to ``shape``.

        Like :meth:`reshape`, but each leaf goes through ``Tensor.view``, so the result always
        shares memory with this tensordict. When the new batch size is the current one, this
        tensordict itself is returned; otherwise the result has no dim names.

        ``view(dtype)`` views every leaf as another dtype instead, as ``Tensor.view(dtype)``
        does: the last dim of a leaf changes size when the dtypes differ in size, so the
        batch size must leave the leaves a feature dim then (``batch_size=``).

        Used as a context manager, ``with td.view(-1) as flat:``, the entries the block adds
        or rebinds are written back into this tensordict when the block ends. In the legacy
        lazy mode (:class:`~tensordict.set_lazy_legacy`), viewing the result of a shape
        method back to the batch size it came from returns the tensordict it came from.

        Args:
            *shape (int or sequence of int): the new batch size, as ints or as one sequence;
                or one ``torch.dtype``.

        Keyword Args:
            size (sequence of int, optional): the new batch size, instead of ``*shape``.
                Defaults to None.
            batch_size (sequence of int, optional): with a dtype, the batch size of the
                result. Defaults to None: the current one. Not used with a shape.

        Returns:
            This tensordict, or a new one.

        Raises:
            RuntimeError: if ``shape`` does not fit the batch size, or the memory layout of a
                leaf does not allow the view (:meth:`reshape` copies then); with a dtype, if
                a viewed leaf does not fit the batch size.
            TypeError: if an entry of ``shape`` is not a number or a string, or if both
                ``shape`` and ``size`` are given (ConflictingArgumentsError).
            ValueError: if an entry of ``shape`` is a string that is not an integer.

        Examples:
            >>> td = TensorDict({"a": torch.arange(6).reshape(2, 3)}, [2, 3])
            >>> td.view(3, 2)["a"]
            tensor([[0, 1],
                    [2, 3],
                    [4, 5]])
            >>> with td.view(-1) as flat:
            ...     flat["b"] = torch.ones(6)
            >>> td["b"].shape
            torch.Size([2, 3])
            >>> td.view(torch.uint8, batch_size=[2])["a"].shape
            torch.Size([2, 24])
        """
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            dtype = shape[0]
            return self.apply(lambda x: x.view(dtype), batch_size=batch_size)
        new = _dummy(self.batch_size).reshape(shape_arg(shape, size, "view")).shape
        if new == self.batch_size:
            return self
        lazy = self._shape_call("view", tuple(new))
        if lazy is not None:
            return lazy
        return reshaped_back(self._batch_op(lambda x, extra: x.view(new + extra), new), self)

    def flatten(self: T, start_dim: int = 0, end_dim: int = -1, *, inplace: bool = False) -> T:
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
            result = self._maybe_inplace(self.unsqueeze(0), inplace, "flatten")
            return reshaped_back(result, self)
        s, e = norm_dim(start_dim, ndim), norm_dim(end_dim, ndim)
        if s > e:
            msg = f"flatten: end_dim={end_dim} comes before start_dim={start_dim}; the end dimension must not precede the start"
            raise ValueError(msg)
        size = self.batch_size
        merged = 1
        for d in range(s, e + 1):
            merged *= size[d]
        new = size[:s] + torch.Size((merged,)) + size[e + 1 :]
        names = dimnames.flatten(self.names, s, e)
        result = self._maybe_inplace(self._reshape_batch(new, names), inplace, "flatten")
        return reshaped_back(result, self)

    def unflatten(
        self: T, dim: int, unflattened_size: Sequence[int], *, inplace: bool = False
    ) -> T:
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
        d = norm_dim(dim, ndim)
        size = self.batch_size
        inner = _dummy(torch.Size((size[d],))).reshape(shape_args((unflattened_size,))).shape
        names = dimnames.unflatten(self.names, d, len(inner))
        result = self._reshape_batch(size[:d] + inner + size[d + 1 :], names)
        return reshaped_back(self._maybe_inplace(result, inplace, "unflatten"), self)

    # ------------------------------------------------------------------ reordering
    def permute(self: T, *dims: int | Sequence[int]) -> T:
        """Returns a tensordict with the batch dims put in the order ``dims``.

        Each leaf is permuted on its batch dims while its feature dims stay last, in their
        order; the leaves are views. The dim names follow their dims.

        Used as a context manager, ``with td.permute(1, 0) as tdp:``, the entries the block
        adds or rebinds are permuted back into this tensordict when the block ends (as for
        :meth:`transpose`, :meth:`movedim` and :meth:`swapaxes`, which permute). In the
        legacy lazy mode (:class:`~tensordict.set_lazy_legacy`) the permutation that undoes
        this one returns this tensordict itself.

        Args:
            *dims (int or sequence of int): each batch dim once, in the new order; negative
                values count from the last batch dim.

        Returns:
            A new tensordict, or this one when ``dims`` keeps every dim in place.

        Raises:
            ValueError: if ``dims`` does not name each batch dim exactly once: a dim out of
                range (AxisRangeError, also an IndexError), or one repeated or missing
                (PermutationError, also a RuntimeError).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3])
            >>> td.permute(1, 0)["a"].shape
            torch.Size([3, 2, 4])
            >>> with td.permute(1, 0) as tdp:
            ...     tdp["b"] = torch.ones(3, 2)
            >>> td["b"].shape
            torch.Size([2, 3])
        """
        ndim = self.batch_dims
        order = permutation(dims, ndim)
        if order == list(range(ndim)):
            return self
        lazy = self._shape_call("permute", tuple(order))
        if lazy is not None:
            return lazy
        new = torch.Size(self.batch_size[d] for d in order)
        names = self.names
        new_names = None if names is None else dimnames.clean(names[d] for d in order)
        result = self._batch_op(
            lambda x, extra: x.permute(*order, *range(ndim, ndim + len(extra))), new, new_names
        )
        return permuted_back(result, self, order)

    def transpose(self: T, dim0: int, dim1: int) -> T:
        """Returns a tensordict with the batch dims ``dim0`` and ``dim1`` swapped.

        This is :meth:`permute` with those two dims exchanged: the leaves are views, the dim
        names follow their dims, and a with-block over the result writes back at its end.
        When the two dims are the same, this tensordict itself is returned.

        Args:
            dim0 (int): a batch dim; negative values count from the last batch dim.
            dim1 (int): the other batch dim.

        Returns:
            A new tensordict, or this one.

        Raises:
            ValueError: if a dim is out of range for the batch dims (AxisRangeError, also an
                IndexError).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3], names=["x", "y"])
            >>> swapped = td.transpose(0, -1)
            >>> swapped.names, swapped["a"].shape
            (['y', 'x'], torch.Size([3, 2, 4]))
        """
        ndim = self.batch_dims
        _axes_in_range("transpose", (dim0, dim1), ndim)
        d0, d1 = norm_dim(dim0, ndim), norm_dim(dim1, ndim)
        if d0 == d1:
            return self
        order = list(range(ndim))
        order[d0], order[d1] = order[d1], order[d0]
        return self.permute(*order)

    def movedim(self: T, source: int | Sequence[int], destination: int | Sequence[int]) -> T:
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
        src, dst = as_ints(source), as_ints(destination)
        if len(src) != len(dst):
            msg = f"movedim: source and destination must have as many dims, got {len(src)} and {len(dst)}"
            raise InvalidArgumentError(msg)
        ndim = self.batch_dims
        src = tuple(norm_dim(d, ndim) for d in src)
        dst = tuple(norm_dim(d, ndim) for d in dst)
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

    def moveaxis(self: T, source: int | Sequence[int], destination: int | Sequence[int]) -> T:
        """Returns a tensordict with the batch dims ``source`` moved to ``destination``: :meth:`movedim`.

        The same method as :meth:`movedim`, under numpy's name: it returns what
        :meth:`movedim` returns and raises what it raises.

        Args:
            source (int or tuple of int): the batch dims to move.
            destination (int or tuple of int): where they go, one position per dim.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
            >>> td.moveaxis(1, 0).batch_size
            torch.Size([3, 2])
        """
        return self.movedim(source, destination)

    def swapaxes(self: T, axis0: int, axis1: int) -> T:
        """Returns a tensordict with the batch dims ``axis0`` and ``axis1`` exchanged.

        This is :meth:`transpose`: the leaves are views, the dim names follow their dims and
        a lazy stack stays lazy.

        Args:
            axis0 (int): a batch dim; negative values count from the last batch dim.
            axis1 (int): the other batch dim.

        Returns:
            A new tensordict, or this one when the two dims are the same.

        Raises:
            AxisRangeError: if a dim is out of range for the batch dims (a ``ValueError``).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3], names=["x", "y"])
            >>> td.swapaxes(0, 1)["a"].shape, td.swapaxes(0, 1).names
            (torch.Size([3, 2, 4]), ['y', 'x'])
        """
        _axes_in_range("swapaxes", (axis0, axis1), self.batch_dims)
        return self.transpose(axis0, axis1)

    def swapdims(self: T, axis0: int, axis1: int) -> T:
        """Returns a tensordict with the batch dims ``axis0`` and ``axis1`` exchanged: :meth:`swapaxes`.

        The same method as :meth:`swapaxes`, under torch's other name: it returns what
        :meth:`swapaxes` returns (this tensordict when the two dims are the same) and raises
        what it raises.

        Args:
            axis0 (int): a batch dim; negative values count from the last batch dim.
            axis1 (int): the other batch dim.

        Examples:
            >>> TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).swapdims(0, -1).batch_size
            torch.Size([3, 2])
        """
        return self.swapaxes(axis0, axis1)

    # ------------------------------------------------------------------ adding and removing dims of size 1
    def squeeze(self: T, dim: int | None = None) -> T:
        """Returns a tensordict without the batch dims of size 1, or without ``dim`` if its size is 1.

        Without ``dim`` every batch dim of size 1 goes; with ``dim`` only that one, and only
        if its size is 1. Feature dims are never squeezed. The leaves are reshaped and the
        names of the remaining dims kept. When no dim goes, this tensordict itself is returned.
        A with-block over the result writes what it adds or rebinds back at its end, as for
        :meth:`unsqueeze`.

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
            d = norm_dim(dim, len(size))
            if size[d] != 1:
                return self
            keep = [i for i in range(len(size)) if i != d]
        if len(keep) == len(size):
            return self
        lazy = self._shape_call("squeeze", tuple(i for i in range(len(size)) if i not in keep))
        if lazy is not None:
            return lazy
        names = self.names
        result = self._batch_op(
            lambda x, extra: x.reshape(torch.Size(size[i] for i in keep) + extra),
            torch.Size(size[i] for i in keep),
            None if names is None else dimnames.clean(names[i] for i in keep),
        )
        return reshaped_back(result, self)

    def unsqueeze(self: T, dim: int) -> T:
        """Returns a tensordict with a batch dim of size 1 inserted at ``dim``.

        ``dim`` may range from ``-batch_dims - 1`` to ``batch_dims``; a negative value counts
        from the end of the batch dims, so -1 appends a dim after the last batch dim and before
        the feature dims. Each leaf gets the new dim at that position (a view). The new dim
        has no name; the others keep theirs.

        Used as a context manager, ``with td.unsqueeze(0) as tdu:``, the entries the block
        adds or rebinds are written back into this tensordict, without the new dim, when the
        block ends. So are those of :meth:`squeeze`, :meth:`view`, :meth:`flatten`,
        :meth:`unflatten` and the ``atleast_*d`` methods.

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
            >>> with td.unsqueeze(0) as tdu:
            ...     tdu["b"] = torch.ones(1, 3)
            >>> td["b"].shape
            torch.Size([3])
        """
        ndim = self.batch_dims
        if not -ndim - 1 <= dim <= ndim:
            msg = f"unsqueeze dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim + 1 if dim < 0 else dim
        lazy = self._shape_call("unsqueeze", (d,))
        if lazy is not None:
            return lazy
        size = list(self.batch_size)
        size.insert(d, 1)
        new = torch.Size(size)
        result = self._batch_op(
            lambda x, extra: x.unsqueeze(d), new, dimnames.insert(self.names, d)
        )
        return reshaped_back(result, self)

    def _atleast(self, n: int):
        out = self
        while out.batch_dims < n:
            out = out.unsqueeze(0)
        return reshaped_back(out, self)

    def atleast_1d(self: T) -> T:
        """Returns the tensordict with at least 1 batch dim: a dim of size 1 is put first if needed.

        Returns:
            This tensordict when it has a batch dim, or a new one (see :meth:`unsqueeze`).

        Examples:
            >>> TensorDict({"a": torch.zeros(3)}, []).atleast_1d().batch_size
            torch.Size([1])
        """
        return self._atleast(1)

    def atleast_2d(self: T) -> T:
        """Returns the tensordict with at least 2 batch dims: dims of size 1 are put first if needed.

        Returns:
            This tensordict when it has 2 batch dims or more, or a new one (see
            :meth:`unsqueeze`).

        Examples:
            >>> TensorDict({"a": torch.zeros(3)}, [3]).atleast_2d().batch_size
            torch.Size([1, 3])
        """
        return self._atleast(2)

    def atleast_3d(self: T) -> T:
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

    # ------------------------------------------------------------------ expanding and narrowing
    def expand(self: T, *shape: int | Sequence[int]) -> T:
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
        target = list(shape_args(shape))
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

    def expand_as(self: T, other: TensorCollection | torch.Tensor) -> T:
        """Returns this tensordict expanded to the shapes of ``other``'s entries, or to a tensor's shape.

        With a tensordict, each leaf is expanded to the shape of ``other``'s leaf at the same
        key (``leaf.expand_as(other_leaf)``, so the feature dims of size 1 grow too), and the
        batch size becomes ``other``'s; keys only in ``other`` are ignored. With a tensor, this
        is ``self.expand(other.shape)``: the whole shape counts as batch dims; see :meth:`expand`.

        Args:
            other (TensorDictBase or torch.Tensor): the object whose size to match.

        Returns:
            A new tensordict.

        Raises:
            AttributeError: if ``other`` has neither ``batch_size`` nor ``shape``.
            KeyError: if a key of this tensordict is missing from ``other``.
            RuntimeError: if a leaf (or the batch size) cannot be expanded to that size.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(3)}, [3])
            >>> td.expand_as(torch.zeros(2, 3)).batch_size
            torch.Size([2, 3])
            >>> ones = TensorDict({"a": torch.ones(3, 1, 4)}, [3])
            >>> ones.expand_as(TensorDict({"a": torch.zeros(2, 3, 5, 4)}, [2, 3]))["a"].shape
            torch.Size([2, 3, 5, 4])
        """
        if isinstance(other, TensorCollection):
            return self.apply(lambda x, y: x.expand_as(y), other, batch_size=other.batch_size)
        return self.expand(other.batch_size if hasattr(other, "batch_size") else other.shape)

    def broadcast_to(self: T, shape: Sequence[int]) -> T:
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
            new = _dummy(self.batch_size).broadcast_to(as_ints(shape)).shape
        except RuntimeError as err:
            msg = f"cannot broadcast the batch size {list(self.batch_size)} to {list(shape)}: {err}"
            raise ShapeArgumentError(msg) from err
        op = entrywise(
            lambda x, extra: x.expand(new + extra), lambda x, extra: x.expand(new + extra)
        )
        return self._batch_op(op, new)

    def narrow(self: T, dim: int, start: int, length: int) -> T:
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
        d = norm_dim(dim, self.batch_dims)
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
        op = entrywise(
            lambda x, extra: x.narrow(d, start, length), lambda x, extra: x.narrow(d, start, length)
        )
        return self._batch_op(op, new, dimnames.clean(self.names))

    # ------------------------------------------------------------------ dim names
    def rename_(self: T, *names: str | None, **rename_map: str | None) -> T:
        """Renames the batch dimensions in place and returns the tensordict.

        Pass either the new names, one per batch dimension (a single ``None`` clears them), or
        ``old="new"`` keywords. Nested tensordicts get the names of the dims they share.

        Args:
            *names (str or None): the new names.
            **rename_map (str or None): new names by current name.

        Returns:
            The tensordict itself.

        Raises:
            ValueError: if both or neither are given (except with no batch dim), if a mapped name
                is not a name of the tensordict, or the names are not one per batch dimension.

        Examples:
            >>> td = TensorDict(batch_size=[1, 2], names=["a", "b"])
            >>> td.rename_(b="g").names
            ['a', 'g']
            >>> td.rename_(None).names
            [None, None]
        """
        if names and rename_map:
            msg = "rename_() takes new names or a map of old names to new ones, not both"
            raise ValueError(msg)
        current = list(self.names or [None] * self.batch_dims)
        if rename_map:
            unknown = [k for k in rename_map if k not in current]
            if unknown:
                msg = f"rename_() got names {unknown!r} that the tensordict does not have: {current!r}"
                raise ValueError(msg)
            new = [rename_map.get(n, n) for n in current]
        elif names == (None,):
            new = None
        elif names:
            if len(names) != self.batch_dims:
                msg = f"rename_() needs {self.batch_dims} names, one per batch dimension, got {list(names)!r}"
                raise ValueError(msg)
            new = list(names)
        elif self.batch_dims == 0:
            return self
        else:
            msg = "rename_() needs new names or a map of old names to new ones"
            raise ValueError(msg)
        self.names = new
        return self
