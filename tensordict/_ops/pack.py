"""``pack``: every leaf of a tensordict as columns of one tensor, and :class:`PackLayout` to undo it.

Each leaf is flattened after the batch dims and the leaves are concatenated, in sorted
key order, along one packed dim; the layout records each leaf's key, feature shape and
first column, plus the nested levels (their batch shapes and tensorclasses), so that
:meth:`PackLayout.unpack` rebuilds the tree over views of a packed tensor, even one
indexed or batched differently since.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from tensordict._collection import TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._keys import _key_parts
from tensordict._ops._contract import Contract
from tensordict._ops.classes import CLASSES
from tensordict._typing import T
from tensordict.errors import KeyMismatchError


@dataclasses.dataclass(frozen=True)
class PackLayout:
    """Where each leaf of a packed tensordict lives in the packed tensor, to rebuild it.

    Made by :meth:`~tensordict.TensorDictBase.pack`. It is frozen, hashable and compares
    by value. Tensorclasses come back as their class; other tensordict classes come
    back as :class:`~tensordict.TensorDict`.

    Args:
        keys (tuple of NestedKey): the leaf keys, in column order.
        shapes (tuple of torch.Size): each leaf's shape after the batch dims.
        dim (int, optional): the packed dim, counted from the end. Defaults to -1.
        nested (tuple, optional): one ``(key, batch_shape, cls)`` per nested level:
            its batch shape past the root's batch dims, and its tensorclass or ``None``.
        device (torch.device, optional): the tensordict's device.
        cls (type, optional): the tensordict's tensorclass, or ``None``.

    Attributes:
        offsets (tuple of int): the first column of each leaf.
        numel (int): the number of columns.

    Examples:
        >>> td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3), batch_size=[5])
        >>> flat, layout = td.pack()
        >>> layout.keys, layout.offsets, layout.numel
        (('p', 'v'), (0, 1), 4)
        >>> layout.unpack(flat[:2])["v"].shape
        torch.Size([2, 3])
    """

    keys: tuple
    shapes: tuple
    dim: int = -1
    nested: tuple = ()
    device: torch.device | None = None
    cls: type | None = None
    offsets: tuple = dataclasses.field(init=False, compare=False)
    numel: int = dataclasses.field(init=False, compare=False)

    def __post_init__(self) -> None:
        shapes = tuple(torch.Size(s) for s in self.shapes)
        if len(shapes) != len(self.keys):
            msg = f"PackLayout: {len(self.keys)} keys but {len(shapes)} shapes"
            raise ValueError(msg)
        nested = tuple((key, torch.Size(shape), cls) for key, shape, cls in self.nested)
        widths = [math.prod(s) for s in shapes]
        offsets = tuple(sum(widths[:i]) for i in range(len(widths)))
        for name, value in (
            ("keys", tuple(self.keys)),
            ("shapes", shapes),
            ("nested", nested),
            ("offsets", offsets),
            ("numel", sum(widths)),
        ):
            object.__setattr__(self, name, value)

    def unpack(self, flat: torch.Tensor) -> TensorCollection:
        """Rebuilds the tensordict over ``flat``, a tensor packed with this layout.

        The leaves are views of ``flat`` where its strides allow (always for a
        contiguous ``flat`` packed along the last dim). The batch size is the shape
        of ``flat`` without the packed dim, so ``flat`` may have been indexed since.

        Args:
            flat (torch.Tensor): the packed tensor.

        Returns:
            A :class:`TensorDict`, or an instance of the layout's tensorclass.

        Raises:
            ValueError: if ``flat`` has too few dims, or not ``numel`` entries along
                the packed dim.

        Examples:
            >>> td = TensorDict(a=torch.arange(6.0).reshape(3, 2), batch_size=[3])
            >>> flat, layout = td.pack()
            >>> layout.unpack(flat.flip(0))["a"][0]
            tensor([4., 5.])
        """
        if flat.ndim < -self.dim:
            msg = f"a tensor packed along dim {self.dim} has at least {-self.dim} dims, got shape {list(flat.shape)}"
            raise ValueError(msg)
        if flat.shape[self.dim] != self.numel:
            msg = (
                f"expected {self.numel} entries along dim {self.dim} of the packed tensor, got "
                f"{flat.shape[self.dim]} (shape {list(flat.shape)})"
            )
            raise ValueError(msg)
        columns = flat.movedim(self.dim, -1)
        batch = columns.shape[:-1]
        tree: dict = {}
        levels = {(): (tree, torch.Size(batch), self.cls)}
        for key, shape, cls in self.nested:
            parts = _key_parts(key)
            parent = levels[parts[:-1]][0]
            parent[parts[-1]] = child = {}
            levels[parts] = (child, torch.Size(batch) + shape, cls)
        for key, shape, start in zip(self.keys, self.shapes, self.offsets):
            parts = _key_parts(key)
            piece = columns[..., start : start + math.prod(shape)]
            levels[parts[:-1]][0][parts[-1]] = piece.reshape(tuple(batch) + tuple(shape))
        return _build(tree, (), levels, self.device)


def _build(source: dict, path: tuple, levels: dict, device):
    """The level at ``path``: its children built first, then wrapped as its class."""
    entries = {}
    for name, value in source.items():
        child = path + (name,)
        entries[name] = _build(value, child, levels, device) if child in levels else value
    _, batch, cls = levels[path]
    return (cls or CLASSES["TensorDict"])._tree_build(
        entries, {"batch_size": batch, "device": device}
    )


def _norm_pack_dim(dim: int, batch_dims: int) -> int:
    """``dim`` (as ``torch.stack`` takes it) counted from the end of the packed tensor."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        msg = f"pack() takes an int dim, got {dim!r}"
        raise TypeError(msg)
    if not -(batch_dims + 1) <= dim <= batch_dims:
        msg = f"pack(): dim {dim} is out of range [{-(batch_dims + 1)}, {batch_dims}] for {batch_dims} batch dims"
        raise IndexError(msg)
    return dim - (batch_dims + 1) if dim >= 0 else dim


class PackMixin(Contract):
    """``pack``.

    Calls: ``_tree_build``, ``_tree_inner``.
    """

    __slots__ = ()

    def pack(
        self, dim: int = -1, *, layout: PackLayout | None = None
    ) -> tuple[torch.Tensor, PackLayout]:
        """Packs every leaf into one tensor of features, and returns it with its layout.

        Each leaf is flattened after the batch dims and the leaves are concatenated in
        the order of ``keys(True, True, sort=True)``, so the columns depend on the keys
        only. The result has shape ``(*batch_size, F)`` for ``dim=-1`` (``F`` the sum of
        the leaves' feature counts) and is contiguous for any ``dim``.
        :meth:`PackLayout.unpack` undoes it. A lazy stack packs as its dense equivalent.

        Args:
            dim (int, optional): where the packed dim goes in the result, in
                ``[-(batch_dims + 1), batch_dims]`` as for ``torch.stack``. Defaults to -1.

        Keyword Args:
            layout (PackLayout, optional): pack into this layout's column order; a
                missing, extra or reshaped leaf raises. Defaults to a new layout.

        Returns:
            A tuple ``(packed tensor, PackLayout)``.

        Raises:
            TypeError: if an entry is not a tensor, or the leaves' dtypes or devices differ.
            KeyMismatchError: (a ``KeyError``) if the leaf keys differ from ``layout``'s.
            ValueError: if a leaf's shape or ``dim`` differs from ``layout``'s.
            IndexError: if ``dim`` is out of range.

        Examples:
            >>> td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3), n={"s": torch.ones(5, 3, 3)}, batch_size=[5])
            >>> flat, layout = td.pack()
            >>> flat.shape, layout.keys
            (torch.Size([5, 13]), (('n', 's'), 'p', 'v'))
            >>> (td.pack(layout=layout)[0] == flat).all()
            tensor(True)
        """
        bd = self.batch_dims
        packed_dim = _norm_pack_dim(dim, bd)
        batch = self.batch_size
        leaves, nested = [], []
        for key, value in self.items(True, False, sort=True):
            if is_tensor_collection(value) and not is_non_tensor(value):
                # a tensorclass wraps a tensordict, and comes back as its class
                cls = type(value) if value._tree_inner() is not value else None
                nested.append((key, value.batch_size[bd:], cls))
            elif not isinstance(value, torch.Tensor):
                msg = f"cannot pack the non-tensor entry {key!r}: drop the non-tensor entries with filter_non_tensor_data() first"
                raise TypeError(msg)
            else:
                leaves.append((key, value))
        if layout is not None:
            leaves = _in_layout_order(leaves, layout, packed_dim, bd)
        dtype = device = None
        for key, value in leaves:
            if dtype is None:
                dtype, device = value.dtype, value.device
            elif value.dtype != dtype:
                msg = f"cannot pack leaves of different dtypes: {dtype} and {value.dtype} at {key!r}; cast the tensordict first, e.g. with float()"
                raise TypeError(msg)
            elif value.device != device:
                msg = f"cannot pack leaves on different devices: {device} and {value.device} at {key!r}"
                raise TypeError(msg)
        columns = [value.reshape(*batch, math.prod(value.shape[bd:])) for _, value in leaves]
        if columns:
            flat = torch.cat(columns, -1)
        else:
            flat = torch.empty(*batch, 0)
        if packed_dim != -1:
            flat = flat.movedim(-1, packed_dim).contiguous()
        elif not flat.is_contiguous():
            flat = flat.contiguous()
        if layout is None:
            layout = PackLayout(
                keys=tuple(key for key, _ in leaves),
                shapes=tuple(value.shape[bd:] for _, value in leaves),
                dim=packed_dim,
                nested=tuple(nested),
                device=self.device,
            )
        return flat, layout

    def clear_refs_for_compile_(self: T) -> T:
        """Returns the tensordict: it keeps no record of its last operation to clear.

        The well-known API keeps weak references for the ``with`` form of methods such
        as :meth:`lock_`, which ``torch.compile`` cannot return; this implementation
        keeps none, so there is nothing to do.

        Returns:
            The tensordict itself.

        Examples:
            >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
            >>> td.clear_refs_for_compile_() is td
            True
        """
        return self


def _in_layout_order(leaves: list, layout: PackLayout, packed_dim: int, bd: int) -> list:
    """The leaves in ``layout``'s column order, after checking that they fit it."""
    if packed_dim != layout.dim:
        msg = f"cannot pack along dim {packed_dim} with a layout packed along dim {layout.dim}"
        raise ValueError(msg)
    found = dict(leaves)
    missing = [k for k in layout.keys if k not in found]
    extra = [k for k in found if k not in set(layout.keys)]
    if missing or extra:
        msg = f"the leaves do not match the layout: missing {missing}, not in the layout {extra}"
        raise KeyMismatchError(msg)
    ordered = []
    for key, shape in zip(layout.keys, layout.shapes):
        value = found[key]
        if value.shape[bd:] != shape:
            msg = f"the leaf {key!r} has shape {list(value.shape)}, whose features do not match the layout's {list(shape)}"
            raise ValueError(msg)
        ordered.append((key, value))
    return ordered
