"""Splitting a tensordict along a batch dim, and stacking or concatenating tensordicts and entries.

The parts of a split are views of the tensordict, made by the class primitive
``_batch_op_multi`` or by indexing (so a lazy stack gives lazy parts). Stacking
tensordicts is ``torch.stack``/``torch.cat`` (implemented in
:mod:`tensordict._stack`) or a lazy stack; a lazy stack of members with ragged
entries becomes dense through nested tensors (:meth:`densify`).

Building a lazy stack needs the concrete class, which lives above this layer:
:mod:`tensordict._lazy` puts its ``lazy_stack`` in :data:`STACKERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from tensordict import _dim_names as dimnames
from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._indexing import check_split_size
from tensordict._keys import NestedKey, canonical_key
from tensordict._nontensor import NonTensorDataBase, _dummy
from tensordict._ops._contract import Contract
from tensordict._ops.batch_dims import norm_dim
from tensordict._typing import T
from tensordict.errors import InvalidArgumentError, PaddingError

STACKERS: dict[str, Callable] = {}
"""``"lazy_stack"`` and ``"maybe_dense_stack"``: the stacking functions, put here by :mod:`tensordict._lazy`."""


def _sorted_keys(keys) -> list:
    """Nested keys in sorted order, a string key sorting as a tuple of one part."""
    return sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)


def _pad_nested(padding: float, batch: torch.Size | None = None) -> Callable:
    """What pads one leaf: a nested tensor becomes a regular one, its batch dims ``batch`` if given."""

    def pad(x):
        if not x.is_nested:
            return x
        if batch is None:
            return torch.nested.to_padded_tensor(x, padding)
        parts = x.unbind()
        rest = [
            max(sizes) for sizes in zip(*(p.shape[len(batch) - 1 :] for p in parts), strict=True)
        ]
        return torch.nested.to_padded_tensor(x, padding, [*batch, *rest])

    return pad


class SplitStackMixin(Contract):
    """Split, chunk, unbind, tensor_split; stack and cat tensordicts and entries; densify ragged stacks.

    Calls: ``_batch_op_multi``, ``_fast_apply``, ``_items_level``, ``_new_like``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ splitting
    def _split_op(self, fn, names, dim: int) -> tuple:
        """The parts ``fn`` (a split of batch dim ``dim`` of a tensor) makes of this tensordict.

        A hook: a lazy stack cuts itself by indexing, so that its parts stay lazy stacks.
        """
        sizes = [part.shape for part in fn(_dummy(self.batch_size))]
        return self._batch_op_multi(lambda x, extra: fn(x), sizes, names)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple:
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
            SplitSizeError: if an int ``split_size`` is not positive (a ``ValueError``
                and a ``RuntimeError``).
            RuntimeError: if the listed sizes do not add up to the size of ``dim``.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(5)}, [5])
            >>> [t.batch_size[0] for t in td.split(2)], [t.batch_size[0] for t in td.split([1, 4])]
            ([2, 2, 1], [1, 4])
        """
        d = norm_dim(dim, self.batch_dims)
        check_split_size(split_size)
        return self._split_op(lambda x: x.split(split_size, d), dimnames.clean(self.names), d)

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
        d = norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.chunk(chunks, d), dimnames.clean(self.names), d)

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
        d = norm_dim(dim, self.batch_dims)
        return self._split_op(lambda x: x.unbind(d), dimnames.drop(self.names, d), d)

    def __iter__(self) -> Iterator:
        """Iterates over the first batch dimension (like a tensor): ``td[0]``, ``td[1]``, ...

        Raises:
            TypeError: if the tensordict has no batch dimension.
        """
        if not self.batch_size:
            msg = "iteration over a tensordict without batch dimensions; iterate over td.keys() instead"
            raise TypeError(msg)
        return iter(self.unbind(0))

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | torch.Tensor, dim: int = 0
    ) -> tuple:
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
        d = norm_dim(dim, self.batch_dims)
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

    # ------------------------------------------------------------------ stacking tensordicts
    def to_lazystack(self, dim: int = 0) -> TensorCollection:
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
        d = norm_dim(dim, self.batch_dims)
        if self._is_lazy_stack_along(d):
            return self
        return STACKERS["lazy_stack"](list(self.unbind(d)), d)

    def _is_lazy_stack_along(self, dim: int) -> bool:
        """Hook: True when this tensordict already is a lazy stack along batch dim ``dim``.

        :meth:`to_lazystack` returns such a tensordict as it is. Only a lazy stack (along
        its own stack dim) says True.
        """
        return False

    @classmethod
    def lazy_stack(
        cls,
        input: Sequence[TensorCollection],
        dim: int = 0,
        *,
        out: TensorCollection | None = None,
        **kwargs: Any,
    ) -> TensorCollection:
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
    def maybe_dense_stack(
        cls,
        input: Sequence[TensorCollection],
        dim: int = 0,
        *,
        out: TensorCollection | None = None,
        **kwargs: Any,
    ) -> TensorCollection:
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
    def stack(
        cls,
        input: Sequence[TensorCollection],
        dim: int = 0,
        *,
        out: TensorCollection | None = None,
    ) -> TensorCollection:
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
    def cat(
        cls,
        input: Sequence[TensorCollection],
        dim: int = 0,
        *,
        out: TensorCollection | None = None,
    ) -> TensorCollection:
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

    # ------------------------------------------------------------------ stacking entries
    def _joined_leaves(self, join: Callable, dim: int, sorted, out) -> torch.Tensor:
        """``join`` (``torch.stack`` or ``torch.cat``) of the tensor leaves in the order ``sorted`` gives."""
        if sorted is None or sorted is False:
            keys = list(self.keys(True, True))
        elif sorted is True:
            keys = _sorted_keys(self.keys(True, True))
        else:
            keys = list(sorted)
        values = [self[key] for key in keys]
        leaves = [v for v in values if isinstance(v, torch.Tensor)]
        return join(leaves, dim) if out is None else join(leaves, dim, out=out)

    def stack_from_tensordict(
        self,
        dim: int = 0,
        *,
        sorted: bool | list[NestedKey] | None = None,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
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
        return self._joined_leaves(torch.stack, dim, sorted, out)

    def cat_from_tensordict(
        self,
        dim: int = 0,
        *,
        sorted: bool | list[NestedKey] | None = None,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
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
        return self._joined_leaves(torch.cat, dim, sorted, out)

    def _combine_entries(self, fn, keys, out_key, keep_entries: bool):
        result = fn([self[key] for key in keys])
        self.set(out_key, result)
        if not keep_entries:
            for key in keys:
                if canonical_key(key) != canonical_key(out_key):
                    self.del_(key)
        return self

    def stack_tensors(
        self: T, *keys: NestedKey, out_key: NestedKey, dim: int = 0, keep_entries: bool = False
    ) -> T:
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

    def cat_tensors(
        self: T, *keys: NestedKey, out_key: NestedKey, dim: int = 0, keep_entries: bool = False
    ) -> T:
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
    def densify(self, layout: torch.layout = torch.strided) -> TensorCollection:
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
        return self._densify(layout)

    def _densify(self, layout: torch.layout):
        """Hook: :meth:`densify` for this class; here, each sub-tensordict densified in turn.

        A lazy stack overrides it to stack its members (ragged leaves as nested tensors).
        """
        out, changed = {}, False
        for key, value in self._items_level():
            if is_tensor_collection(value) and not isinstance(value, NonTensorDataBase):
                dense = value.densify(layout)
                changed = changed or dense is not value
                value = dense
            out[key] = value
        if not changed:
            return self
        return self._new_like(out, self.batch_size, self.names)

    def to_padded_tensor(
        self, padding: float = 0.0, mask_key: NestedKey | None = None
    ) -> TensorCollection:
        """Returns a tensordict whose nested-tensor leaves are padded into regular tensors.

        Each nested leaf goes through ``torch.nested.to_padded_tensor(leaf, padding)``: every
        component is padded at its end to the largest size along each dim. The other leaves
        are kept; a lazy stack pads its members and stays lazy. Always a new tensordict.

        A batch size may hold ``-1`` for a ragged dim (one whose size differs between the
        components of the nested leaves). The padded tensordict then has that dim at its
        largest size, and ``mask_key`` can name a boolean entry, of the new batch size, that
        is ``True`` where the data is and ``False`` in the padding.

        Args:
            padding (float, optional): the value written in the padding. Defaults to 0.0.
            mask_key (NestedKey, optional): where to write the mask of the real data; only
                when the batch size holds a ragged dim (``-1``). Defaults to None.

        Returns:
            A new tensordict.

        Raises:
            PaddingError: if ``mask_key`` is given and no batch dim is ragged, if a batch dim
                is ragged and no leaf is a nested tensor, or if nested leaves disagree on the
                batch sizes of their components (a ``RuntimeError``).

        Examples:
            >>> a = TensorDict({"x": torch.zeros(2, 3)}, [2])
            >>> b = TensorDict({"x": torch.ones(2, 5)}, [2])
            >>> lazy_stack([a, b]).densify().to_padded_tensor(padding=-1.0)["x"][0, 0]
            tensor([ 0.,  0.,  0., -1., -1.])
            >>> rows = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)])
            >>> padded = TensorDict({"rows": rows}, [2, -1]).to_padded_tensor(mask_key="mask")
            >>> padded.batch_size, padded["mask"].sum(-1)
            (torch.Size([2, 4]), tensor([2, 4]))
        """
        if -1 not in self.batch_size:
            if mask_key is not None:
                msg = f"to_padded_tensor: mask_key={mask_key!r} needs a ragged batch dim (-1 in the batch size), and {list(self.batch_size)} has none; pad without mask_key"
                raise PaddingError(msg)
            return self._fast_apply(_pad_nested(padding))
        ndim = self.batch_dims
        shapes = {}
        for key, leaf in self.items(True, True):
            if isinstance(leaf, torch.Tensor) and leaf.is_nested:
                shapes[key] = [part.shape[: ndim - 1] for part in leaf.unbind()]
        if not shapes:
            msg = f"to_padded_tensor: the batch size {list(self.batch_size)} has a ragged dim but no entry is a nested tensor to read its sizes from"
            raise PaddingError(msg)
        (first, parts), *others = shapes.items()
        for key, other in others:
            if other != parts:
                msg = f"to_padded_tensor: the nested entries {first!r} and {key!r} disagree on the sizes of the ragged batch dims"
                raise PaddingError(msg)
        batch = torch.Size([len(parts), *(max(sizes) for sizes in zip(*parts, strict=True))])
        out = self._fast_apply(_pad_nested(padding, batch), batch_size=batch)
        if mask_key is not None:
            marks = torch.nested.nested_tensor([torch.ones(shape) for shape in parts])
            out.set(mask_key, torch.nested.to_padded_tensor(marks, 0.0, list(batch)).bool())
        return out
