"""LazyStackedTensorDict: tensordicts stacked without copying, members that may differ.

A lazy stack keeps its members and the dimension they are stacked along. Its
keys are the keys every member has; reading a leaf stacks the members' leaves
(a nested tensor when their shapes differ and one is asked for); indexing along
the stack dimension returns members, other indices index each member; writing
splits the value across members. ``contiguous()`` makes a dense TensorDict.
"""

from __future__ import annotations

import os

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._nontensor import NonTensorData
from tensordict._ops.indexing import normalize_index
from tensordict._ops.memmap import check_storage, warn_storage_without_file
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase, _as_value, _check_batch
from tensordict.errors import DimensionError, LockedError
from tensordict.memmap import _io
from tensordict.memmap import format as fmt
from tensordict.memmap.tensor import MemoryMappedTensor


def _stack_leaves(key, values: list, dim: int, as_nested: bool):
    if as_nested:
        if dim != 0:
            msg = f"a nested tensor can only stack {key!r} along dimension 0, not {dim}"
            raise RuntimeError(msg)
        return torch.nested.nested_tensor(values)
    shapes = {tuple(v.shape) for v in values}
    if len(shapes) > 1:
        msg = (
            f"cannot stack the entry {key!r} of a lazy stack: its members' shapes differ "
            f"({sorted(shapes)}); use get({key!r}, as_nested_tensor=True) or index one member"
        )
        raise RuntimeError(msg)
    return torch.stack(values, dim)


class LazyStackedTensorDict(TensorDictBase):
    """Tensordicts stacked along ``stack_dim`` without copying; members may differ.

    Args:
        *tensordicts (TensorDictBase): the members; they must share their batch size.

    Keyword Args:
        stack_dim (int, optional): the new batch dimension. Defaults to 0.
        stack_dim_name (str, optional): a name for that dimension.

    Raises:
        RuntimeError: if the members' batch sizes differ (naming both).

    Examples:
        >>> a = TensorDict({"obs": torch.zeros(3), "x": torch.zeros(2)}, [])
        >>> b = TensorDict({"obs": torch.ones(3)}, [])
        >>> stack = LazyStackedTensorDict(a, b)
        >>> stack["obs"].shape, list(stack.keys())
        (torch.Size([2, 3]), ['obs'])
    """

    __slots__ = (
        "tensordicts",
        "_stack_dim",
        "_stack_dim_name",
        "_batch_size",
        "_mm",
        "__weakref__",
    )
    _is_lazy = True

    def __init__(
        self, *tensordicts, stack_dim: int = 0, stack_dim_name: str | None = None, **kwargs
    ) -> None:
        if len(tensordicts) == 1 and isinstance(tensordicts[0], (list, tuple)):
            tensordicts = tuple(tensordicts[0])
        members = list(tensordicts)
        if not members:
            msg = "a lazy stack needs at least one member tensordict"
            raise RuntimeError(msg)
        size = members[0].batch_size
        for i, member in enumerate(members):
            if not is_tensor_collection(member):
                msg = (
                    f"member {i} of a lazy stack must be a tensordict, got {type(member).__name__}"
                )
                raise TypeError(msg)
            if member.batch_size != size:
                msg = (
                    f"cannot stack tensordicts with different batch sizes: member 0 has {list(size)} "
                    f"and member {i} has {list(member.batch_size)}"
                )
                raise RuntimeError(msg)
        ndim = len(size)
        if not -ndim - 1 <= stack_dim <= ndim:
            msg = f"stack_dim {stack_dim} is out of range for members with {ndim} batch dimensions"
            raise DimensionError(msg)
        stack_dim = stack_dim + ndim + 1 if stack_dim < 0 else stack_dim
        self.tensordicts = members
        self._stack_dim = stack_dim
        self._stack_dim_name = stack_dim_name
        self._batch_size = size[:stack_dim] + torch.Size((len(members),)) + size[stack_dim:]
        self._mm = None

    @classmethod
    def _stack_members(cls, tds, dim: int = 0, out=None):
        if out is not None:
            out.update_(cls(*tds, stack_dim=dim))
            return out
        return cls(*tds, stack_dim=dim)

    @classmethod
    def maybe_dense_stack(cls, tds, dim: int = 0):
        """Stacks densely when the members allow it (same keys and shapes), lazily otherwise."""
        try:
            return torch.stack(
                [t.contiguous() if getattr(type(t), "_is_lazy", False) else t for t in tds], dim
            )
        except (RuntimeError, KeyError):
            return cls(*tds, stack_dim=dim)

    # ------------------------------------------------------------------ properties
    @property
    def stack_dim(self) -> int:
        """The batch dimension along which the members are stacked."""
        return self._stack_dim

    @property
    def batch_size(self) -> torch.Size:
        """The members' batch size with the stack dimension inserted."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        new = torch.Size(value)
        if new == self._batch_size:
            return
        d = self._stack_dim
        if len(new) <= d or new[d] != len(self.tensordicts):
            msg = f"the batch size of a lazy stack must keep {len(self.tensordicts)} at the stack dimension {d}, got {list(new)}"
            raise RuntimeError(msg)
        member_size = new[:d] + new[d + 1 :]
        for member in self.tensordicts:
            member.batch_size = member_size
        self._batch_size = new

    @property
    def device(self):
        """The members' common device, or ``None`` when they differ."""
        devices = {m.device for m in self.tensordicts}
        return devices.pop() if len(devices) == 1 else None

    @property
    def names(self):
        """Batch dimension names: only the stack dimension's name is kept, or ``None``."""
        if self._stack_dim_name is None:
            return None
        names = [None] * len(self._batch_size)
        names[self._stack_dim] = self._stack_dim_name
        return names

    @property
    def is_locked(self) -> bool:
        """True when every member is locked."""
        return all(m.is_locked for m in self.tensordicts)

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        for member in self.tensordicts:
            member._propagate_lock(locked)

    # ------------------------------------------------------------------ primitives
    def _keys_level(self):
        first = self.tensordicts[0]
        others = [set(m._keys_level()) for m in self.tensordicts[1:]]
        return [k for k in first._keys_level() if all(k in o for o in others)]

    def _items_level(self):
        return [(key, self._get_str(key, NO_DEFAULT)) for key in self._keys_level()]

    def _get_str(self, key: str, default, as_nested_tensor: bool = False):
        values = [m._get_str(key, None) for m in self.tensordicts]
        if any(v is None for v in values):
            if default is NO_DEFAULT:
                raise self._missing((key,), 0, self)
            return default
        first = values[0]
        if isinstance(first, torch.Tensor):
            return _stack_leaves(key, values, self._stack_dim, as_nested_tensor)
        if isinstance(first, NonTensorData):
            if all(v.data == first.data for v in values):
                return NonTensorData._stack(values, self._stack_dim)
            return NonTensorData([v.data for v in values], self._batch_size)
        return LazyStackedTensorDict(*values, stack_dim=self._stack_dim)

    def get(self, key, default=None, *, as_nested_tensor: bool = False):
        """Returns the entry at ``key`` with the members' values stacked.

        Keyword Args:
            as_nested_tensor (bool, optional): stack leaves of different shapes into a
                nested tensor instead of raising. Defaults to False.

        Raises:
            KeyError: if a member lacks the key (and no default is given).
            RuntimeError: if the members' leaves differ in shape and
                ``as_nested_tensor`` is False (naming the key and the shapes).
        """
        if as_nested_tensor and isinstance(key, str):
            return self._get_str(key, default, as_nested_tensor=True)
        return super().get(key, default)

    def _set_str(self, key: str, value, *, inplace: bool, validated: bool) -> None:
        if not validated:
            value = _as_value(key, value, None)
            if isinstance(value, dict):
                value = TensorDict(value, self._batch_size)
            _check_batch(key, value, self._batch_size)
        if isinstance(value, NonTensorData):
            parts = [
                value._with(
                    value.batch_size[: self._stack_dim] + value.batch_size[self._stack_dim + 1 :]
                )
            ] * len(self.tensordicts)
        else:
            parts = value.unbind(self._stack_dim)
        for member, part in zip(self.tensordicts, parts):
            member._set_str(key, part, inplace=inplace, validated=False)

    def _del_str(self, key: str) -> None:
        if self.is_locked:
            msg = f"cannot delete {key!r}: the lazy stack is locked; call unlock_() first"
            raise LockedError(msg)
        for member in self.tensordicts:
            member._del_str(key)

    def _new_like(self, source: dict, batch_size, names=NO_DEFAULT, device=NO_DEFAULT):
        return TensorDict._new_unsafe(
            source, batch_size, self.device if device is NO_DEFAULT else device, None
        )

    def _shallow_copy(self):
        return LazyStackedTensorDict(
            *[m._shallow_copy() for m in self.tensordicts], stack_dim=self._stack_dim
        )

    def _fast_apply(
        self,
        fn,
        *others,
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace=False,
        **kwargs,
    ):
        if batch_size is not None and batch_size != self._batch_size:
            return self.contiguous()._fast_apply(
                fn,
                *others,
                batch_size=batch_size,
                names=names,
                device=device,
                inplace=inplace,
                **kwargs,
            )
        split_others = [o.unbind(self._stack_dim) for o in others]
        results = [
            member._fast_apply(
                fn, *[o[i] for o in split_others], device=device, inplace=inplace, **kwargs
            )
            for i, member in enumerate(self.tensordicts)
        ]
        if inplace:
            return self
        return LazyStackedTensorDict(
            *results, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
        )

    # ------------------------------------------------------------------ indexing
    def _split_index(self, index):
        """``(stack_item, member_index, new_stack_dim)``, or None when only a dense view can answer."""
        leaf_index, _ = normalize_index(index, self._batch_size)
        items = list(leaf_index) if isinstance(leaf_index, tuple) else [leaf_index]
        dim = 0
        out_dims = 0
        stack_at = None
        for i, item in enumerate(items):
            if item is None:
                out_dims += 1
                continue
            if isinstance(item, torch.Tensor) and (item.dtype is torch.bool and item.ndim != 1):
                return None
            if dim == self._stack_dim:
                stack_at = i
                break
            if isinstance(item, torch.Tensor):
                return None
            out_dims += 0 if type(item) is int else 1
            dim += 1
        if stack_at is None:
            return slice(None), tuple(items), out_dims + (self._stack_dim - dim)
        stack_item = items[stack_at]
        rest = items[:stack_at] + items[stack_at + 1 :]
        if any(isinstance(r, torch.Tensor) for r in rest) and type(stack_item) not in (int, slice):
            return None
        return stack_item, tuple(rest), out_dims

    def _index(self, index):
        split = self._split_index(index)
        if split is None:
            return self.contiguous()[index]
        stack_item, rest, new_dim = split
        members = self.tensordicts
        if type(stack_item) is int:
            member = members[stack_item]
            return member[rest] if rest else member
        if isinstance(stack_item, slice):
            chosen = members[stack_item]
        else:
            positions = (
                stack_item.nonzero().squeeze(-1)
                if stack_item.dtype is torch.bool
                else stack_item.reshape(-1)
            )
            chosen = [members[int(i)] for i in positions]
            if stack_item.dtype is not torch.bool and stack_item.ndim != 1:
                return self.contiguous()[index]
        if not chosen:
            return self.contiguous()[index]
        picked = [m[rest] if rest else m for m in chosen]
        out = LazyStackedTensorDict(*picked, stack_dim=new_dim)
        if self._mm is not None and all(m._mm is not None for m in picked):
            out._mm = _io.Level(None)  # a view of memory-mapped members is memory-mapped
        return out

    def _set_at(self, index, value) -> None:
        split = self._split_index(index)
        if split is None:
            msg = f"index assignment with {index!r} is not supported on a lazy stack; densify it with contiguous() first"
            raise RuntimeError(msg)
        stack_item, rest, new_dim = split
        members = self.tensordicts
        if type(stack_item) is int:
            targets = [members[stack_item]]
            values = [value]
        else:
            if isinstance(stack_item, slice):
                targets = members[stack_item]
            else:
                positions = (
                    stack_item.nonzero().squeeze(-1)
                    if stack_item.dtype is torch.bool
                    else stack_item.reshape(-1)
                )
                targets = [members[int(i)] for i in positions]
            if isinstance(value, (torch.Tensor, TensorDictBase)) and not isinstance(
                value, NonTensorData
            ):
                values = value.unbind(new_dim) if value.ndim > new_dim else [value] * len(targets)
            else:
                values = [value] * len(targets)
        for member, part in zip(targets, values):
            if rest:
                member[rest] = part
            elif is_tensor_collection(part) or isinstance(part, dict):
                member.update_(part)
            else:
                member.apply_(lambda x, p=part: x.fill_(p))

    # ------------------------------------------------------------------ shapes
    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self.contiguous()._batch_op(op, batch_size, names)

    def _batch_op_multi(self, op, batch_sizes: list) -> tuple:
        return self.contiguous()._batch_op_multi(op, batch_sizes)

    def unbind(self, dim: int = 0) -> tuple:
        """Returns the members when ``dim`` is the stack dimension; otherwise unbinds each member."""
        ndim = len(self._batch_size)
        d = dim + ndim if dim < 0 else dim
        if d == self._stack_dim:
            return tuple(self.tensordicts)
        inner = d if d < self._stack_dim else d - 1
        new_stack = self._stack_dim if d > self._stack_dim else self._stack_dim - 1
        parts = [m.unbind(inner) for m in self.tensordicts]
        return tuple(LazyStackedTensorDict(*group, stack_dim=new_stack) for group in zip(*parts))

    def contiguous(self) -> TensorDict:
        """Returns a dense TensorDict with every shared entry stacked.

        Raises:
            RuntimeError: if an entry's shapes differ between members (naming the key).
        """
        source = {}
        for key in self._keys_level():
            value = self._get_str(key, NO_DEFAULT)
            if getattr(type(value), "_is_lazy", False):
                value = value.contiguous()
            source[key] = value
        return TensorDict._new_unsafe(source, self._batch_size, self.device, self.names)

    to_tensordict = contiguous

    def to_dict(self, **kwargs) -> dict:
        """Returns a nested dict of the stacked entries."""
        return self.contiguous().to_dict(**kwargs)

    def __repr__(self) -> str:
        size = ",".join(str(s) for s in self._batch_size)
        return (
            f"LazyStackedTensorDict(batch_size=[{size}], stack_dim={self._stack_dim}, "
            f"fields={self._fields_repr()}, members={len(self.tensordicts)})"
        )

    def _fields_repr(self) -> str:
        try:
            return self.contiguous()._fields_repr()
        except RuntimeError:
            return "{" + ", ".join(self._keys_level()) + "}"

    # ------------------------------------------------------------------ memory mapping
    def _store_entry(self, key: str, value) -> None:
        msg = f"cannot store {key!r} in a lazy stack as one entry: each member holds its own"
        raise RuntimeError(msg)

    def _member_folder(self, folder: str | None, i: int) -> str | None:
        return None if folder is None else os.path.join(folder, str(i))

    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        for i, member in enumerate(self.tensordicts):
            member._memmap_plan(self._member_folder(folder, i), plan, robust_key, existsok, like)
        plan.folders.append((folder, self))

    def _memmap_names(self, robust_key) -> set:
        return {str(i) for i in range(len(self.tensordicts))}

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        members = [
            m._memmap_rebuild(self._member_folder(folder, i), replacement, inplace, robust_key)
            for i, m in enumerate(self.tensordicts)
        ]
        if inplace:
            self.tensordicts = members
            out = self
        else:
            out = LazyStackedTensorDict(
                *members, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
            )
        out._mm = _io.Level(folder, robust_key=robust_key)
        return out

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        for i, member in enumerate(self.tensordicts):
            member._memmap_write_meta(os.path.join(folder, str(i)), robust_key)
        self._mm.write(
            {
                "_type": fmt.LAZY_TYPE,
                "_format_version": fmt.FORMAT_VERSION,
                "_class": fmt.LAZY_CLASS,
                "stack_dim": self._stack_dim,
                "stack_dim_name": self._stack_dim_name,
            }
        )

    def _memmap_refresh(self, options) -> None:
        folder = self._mm.path
        if folder is not None:
            self._memmap_refresh_from(*fmt.read_meta(folder), options)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        folder = self._mm.path if self._mm is not None else None
        if folder is None or fmt.level_kind(folder, meta) != fmt.KIND_LAZY:
            return False
        fmt.parse_lazy_level(folder, meta)
        paths = fmt.lazy_members(folder)
        members = self.tensordicts
        for i, path in enumerate(paths):
            if i < len(members) and members[i]._mm is not None:
                members[i] = _io.load_child(path, options, members[i])
            else:
                members.append(_io.load_child(path, options))
        del members[len(paths) :]
        size = members[0].batch_size
        d = self._stack_dim
        self._batch_size = size[:d] + torch.Size((len(paths),)) + size[d:]
        self._mm.meta, self._mm.stat = meta, stat
        return True

    def _memmap_load_into(self, loaded) -> None:
        self.tensordicts = loaded.tensordicts
        self._stack_dim = loaded._stack_dim
        self._stack_dim_name = loaded._stack_dim_name
        self._batch_size = loaded._batch_size
        self._mm = loaded._mm

    def is_memmap(self) -> bool:
        """True when the stack was memory-mapped and every member is.

        Examples:
            >>> stack = lazy_stack([TensorDict({"a": torch.zeros(2)}, [2])] * 2)
            >>> stack.is_memmap(), stack.memmap().is_memmap()
            (False, True)
        """
        return self._mm is not None and all(m.is_memmap() for m in self.tensordicts)

    def make_memmap(self, key, shape, *, dtype=None, robust_key=None):
        """Adds a zero-filled memory-mapped entry: each member gets its slice, in its own file.

        See :meth:`TensorDictBase.make_memmap` for the arguments and errors.

        Examples:
            >>> stack = lazy_stack([TensorDict({}, [2]), TensorDict({}, [2])]).memmap("stack")
            >>> stack.make_memmap("x", (2, 2, 3)).shape
            torch.Size([2, 2, 3])
        """
        shape = torch.Size(shape)
        self._require_memmap("make_memmap()")
        member_shape = shape[: self._stack_dim] + shape[self._stack_dim + 1 :]
        parts = [
            m.make_memmap(key, member_shape, dtype=dtype, robust_key=robust_key)
            for m in self.tensordicts
        ]
        return torch.stack(parts, self._stack_dim)

    def make_memmap_from_tensor(self, key, tensor, *, copy_data: bool = True, robust_key=None):
        """Adds a memory-mapped copy of ``tensor``: each member gets its slice, in its own file.

        See :meth:`TensorDictBase.make_memmap_from_tensor` for the arguments and errors.

        Examples:
            >>> stack = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap("stack")
            >>> stack.make_memmap_from_tensor("x", torch.arange(2)).tolist()
            [0, 1]
        """
        self._require_memmap("make_memmap_from_tensor()")
        _check_batch(key, tensor, self._batch_size)
        slices = tensor.unbind(self._stack_dim)
        parts = [
            m.make_memmap_from_tensor(key, s, copy_data=copy_data, robust_key=robust_key)
            for m, s in zip(self.tensordicts, slices)
        ]
        return torch.stack(parts, self._stack_dim)

    def make_memmap_from_storage(self, key, storage, shape, *, dtype=None, robust_key=True):
        """Adds an entry over ``storage``: each member gets its slice as a view of the one storage.

        A storage with a file raises ``RuntimeError``: the stacked layout keeps one
        file per member, so no single file is the file of the new entry. See
        :meth:`TensorDictBase.make_memmap_from_storage` for the rest.

        Returns:
            The new ``MemoryMappedTensor`` over the whole storage.

        Raises:
            RuntimeError: if the stack is not memory-mapped, the key exists in a member,
                or the storage has a file.
            TypeError: if the storage is not a storage or ``dtype`` not a ``torch.dtype``.
            ValueError: if the storage is not in physical memory or its size does not
                match ``shape`` and ``dtype``.

        Examples:
            >>> stack = lazy_stack([TensorDict({}, []), TensorDict({}, [])]).memmap()
            >>> storage = torch.UntypedStorage(2 * 4)
            >>> stack.make_memmap_from_storage("x", storage, (2,)).shape
            torch.Size([2])
        """
        storage, shape, dtype, needed, nested, filename = check_storage(key, storage, shape, dtype)
        level = self._require_memmap("make_memmap_from_storage()")
        if filename is not None:
            msg = (
                f"cannot add {key!r} to a lazy stack from a storage with a file: each member keeps its "
                "own files, so no single file is the file of the new entry; use a storage without a "
                "file, or make_memmap_from_tensor()"
            )
            raise RuntimeError(msg)
        if nested:
            msg = f"cannot add the nested tensor {key!r} to a lazy stack from one storage"
            raise TypeError(msg)
        _check_batch(key, _Shape(shape), self._batch_size)
        robust_key = True if robust_key is None else robust_key
        plans = [
            m._plan_new_entry(key, "make_memmap_from_storage()", robust_key)
            for m in self.tensordicts
        ]  # every member checked before any is changed
        tensor = MemoryMappedTensor.from_storage(storage, shape=shape, dtype=dtype)
        if level.path is not None and needed > 0:
            warn_storage_without_file(key, level.path)
        for i, (member, (parts, node, _folder, depth)) in enumerate(zip(self.tensordicts, plans)):
            member._attach(parts, node, depth, tensor.select(self._stack_dim, i), None, robust_key)
        return tensor


class _Shape:
    """Stands in for a value of a given shape in batch-size checks."""

    def __init__(self, shape: torch.Size) -> None:
        self.batch_size = shape


def _load_lazy(folder: str, meta: dict, stat, options) -> LazyStackedTensorDict:
    """The loader of lazy stack folders, registered with the storage layer."""
    stack_dim, stack_dim_name = fmt.parse_lazy_level(folder, meta)
    members = [_io.load_child(path, options) for path in fmt.lazy_members(folder)]
    sizes = {tuple(m.batch_size) for m in members}
    if len(sizes) > 1:
        msg = f"the lazy stack in {folder!r} has members of different batch sizes: {sorted(sizes)}"
        raise fmt.MemmapFormatError(msg)
    ndim = len(members[0].batch_size)
    if not -ndim - 1 <= stack_dim <= ndim:
        msg = f"{fmt.meta_path(folder)!r}: stack_dim {stack_dim} is out of range for members with {ndim} batch dimensions"
        raise fmt.MemmapFormatError(msg)
    out = LazyStackedTensorDict(*members, stack_dim=stack_dim, stack_dim_name=stack_dim_name)
    out._mm = _io.Level(folder, meta, stat, options.robust_key)
    return out


_io.LOADERS[fmt.LAZY_CLASS] = _load_lazy
_io.LOADERS[fmt.LAZY_TYPE] = _load_lazy


def lazy_stack(tds, dim: int = 0, *, out=None) -> LazyStackedTensorDict:
    """Stacks tensordicts lazily along ``dim``: no copy, and the members may differ.

    Args:
        tds (sequence of TensorDictBase): the members; they must share their batch size.
        dim (int, optional): the new batch dimension. Defaults to 0.

    Returns:
        A :class:`LazyStackedTensorDict`.

    Examples:
        >>> episodes = [TensorDict({"r": torch.zeros(n)}, []) for n in (3, 5)]
        >>> lazy_stack(episodes).get("r", as_nested_tensor=True).is_nested
        True
    """
    return LazyStackedTensorDict._stack_members(list(tds), dim, out=out)
