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

from tensordict._nontensor import NonTensorData
from tensordict._ops.indexing import normalize_index
from tensordict._td import TensorDict
from tensordict.base import (
    NO_DEFAULT,
    TensorDictBase,
    _as_value,
    _check_batch,
    _is_collection_value,
)
from tensordict.errors import LockedError
from tensordict.memmap import _io
from tensordict.memmap import format as fmt


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
            if not _is_collection_value(member):
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
            raise IndexError(msg)
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
        return LazyStackedTensorDict(*picked, stack_dim=new_dim)

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
            elif _is_collection_value(part) or isinstance(part, dict):
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
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        for i, member in enumerate(self.tensordicts):
            _io._plan_level(
                member,
                None if folder is None else os.path.join(folder, str(i)),
                plan,
                robust_key,
                existsok,
                like,
            )
        plan.folders.append((folder, self))

    def _memmap_names(self) -> set:
        return {str(i) for i in range(len(self.tensordicts))}

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        members = [
            _io._rebuild(
                m,
                None if folder is None else os.path.join(folder, str(i)),
                replacement,
                inplace,
                robust_key,
            )
            for i, m in enumerate(self.tensordicts)
        ]
        out = (
            self
            if inplace
            else LazyStackedTensorDict(
                *members, stack_dim=self._stack_dim, stack_dim_name=self._stack_dim_name
            )
        )
        if inplace:
            self.tensordicts = members
        out._mm = _io._Level(folder, robust_key=robust_key)
        return out

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        for i, member in enumerate(self.tensordicts):
            _io._write_levels(member, os.path.join(folder, str(i)), robust_key)
        meta = {
            "_type": fmt.LAZY_TYPE,
            "_format_version": fmt.FORMAT_VERSION,
            "_class": fmt.LAZY_CLASS,
            "stack_dim": self._stack_dim,
            "stack_dim_name": self._stack_dim_name,
        }
        self._mm.meta = meta
        self._mm.stat = fmt.write_meta_dict(folder, meta)

    def _memmap_refresh(self) -> None:
        folder = self._mm.path
        if folder is None:
            return
        meta, stat = fmt.read_meta(folder)
        count = len(_member_folders(folder))
        members = self.tensordicts
        options = _io._Options(self._mm.robust_key, False, None)
        for i in range(count):
            path = os.path.join(folder, str(i))
            if i < len(members) and getattr(members[i], "_mm", None) is not None:
                members[i].memmap_refresh_()
            else:
                sub_meta, sub_stat = fmt.read_meta(path)
                members.append(_io.load_folder(path, sub_meta, sub_stat, options))
        del members[count:]
        size = members[0].batch_size
        self._batch_size = size[: self._stack_dim] + torch.Size((count,)) + size[self._stack_dim :]
        self._mm.meta, self._mm.stat = meta, stat

    def is_memmap(self) -> bool:
        """True when the stack was memory-mapped and every member is."""
        return self._mm is not None and all(m.is_memmap() for m in self.tensordicts)

    def make_memmap(self, key, shape, *, dtype=None, robust_key=None):
        """Adds a zero-filled memory-mapped entry: each member gets its slice, in its own file."""
        shape = torch.Size(shape)
        self._require_memmap("make_memmap()")
        member_shape = shape[: self._stack_dim] + shape[self._stack_dim + 1 :]
        parts = [
            m.make_memmap(key, member_shape, dtype=dtype, robust_key=robust_key)
            for m in self.tensordicts
        ]
        return torch.stack(parts, self._stack_dim)

    def make_memmap_from_tensor(self, key, tensor, *, copy_data: bool = True, robust_key=None):
        """Adds a memory-mapped copy of ``tensor``: each member gets its slice, in its own file."""
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
        """
        from tensordict.memmap._methods import _storage_file
        from tensordict.memmap.tensor import MemoryMappedTensor

        if isinstance(storage, torch.TypedStorage):
            storage = storage._untyped_storage
        if not isinstance(storage, torch.UntypedStorage):
            msg = f"make_memmap_from_storage() needs a torch.UntypedStorage for {key!r}, got {type(storage).__name__}"
            raise TypeError(msg)
        self._require_memmap("make_memmap_from_storage()")
        if _storage_file(storage) is not None:
            msg = (
                f"cannot add {key!r} to a lazy stack from a storage with a file: each member keeps its "
                "own files, so no single file is the file of the new entry; use a storage without a "
                "file, or make_memmap_from_tensor()"
            )
            raise RuntimeError(msg)
        if storage.device.type != "cpu":
            msg = f"the storage for {key!r} is on the {storage.device.type!r} device: it must be in physical memory"
            raise ValueError(msg)
        dtype = torch.get_default_dtype() if dtype is None else dtype
        shape = torch.Size(shape)
        _check_batch(key, _Shape(shape), self._batch_size)
        needed = fmt.nbytes(shape, dtype)
        if storage.nbytes() != needed:
            msg = f"the storage for {key!r} has {storage.nbytes()} bytes but shape {list(shape)} and dtype {dtype} need {needed}"
            raise ValueError(msg)
        for member in self.tensordicts:
            if member.get(key, None) is not None:
                msg = f"cannot add {key!r}: the key already exists in a member of the lazy stack"
                raise RuntimeError(msg)
        tensor = MemoryMappedTensor.from_storage(storage, shape=shape, dtype=dtype)
        if self._mm.path is not None and needed > 0:
            import warnings

            from tensordict.memmap._methods import _STORAGE_WARNING

            warnings.warn(
                _STORAGE_WARNING.format(key=key, path=self._mm.path), FutureWarning, stacklevel=2
            )
        for i, member in enumerate(self.tensordicts):
            view = tensor.select(self._stack_dim, i)
            parts, node, _folder, depth = member._plan_new_entry(
                key, "make_memmap_from_storage()", robust_key
            )
            member._attach(parts, node, depth, view, None, robust_key)
        return tensor


class _Shape:
    """Stands in for a value of a given shape in batch-size checks."""

    def __init__(self, shape: torch.Size) -> None:
        self.batch_size = shape


def _member_folders(folder: str) -> list:
    """The member folders ``0/ .. N-1/`` of a lazy stack folder; a gap is an error."""
    numbers = sorted(
        int(n) for n in os.listdir(folder) if n.isdigit() and os.path.isdir(os.path.join(folder, n))
    )
    if numbers != list(range(len(numbers))):
        missing = sorted(set(range(max(numbers) + 1)) - set(numbers)) if numbers else []
        msg = (
            f"the lazy stack in {folder!r} has member folders {numbers}: members {missing} are missing "
            "(members must be numbered 0 to N-1 without gaps)"
        )
        raise fmt.MemmapFormatError(msg)
    for n in numbers:
        if os.path.islink(os.path.join(folder, str(n))):
            msg = f"refusing to follow the symbolic link {os.path.join(folder, str(n))!r}"
            raise fmt.MemmapFormatError(msg)
    return [os.path.join(folder, str(n)) for n in numbers]


def _load_lazy(folder: str, meta: dict, stat, options) -> LazyStackedTensorDict:
    members = []
    for path in _member_folders(folder):
        sub_meta, sub_stat = fmt.read_meta(path)
        members.append(_io.load_folder(path, sub_meta, sub_stat, options))
    if not members:
        msg = f"the lazy stack in {folder!r} has no member folder (0/, 1/, ...)"
        raise fmt.MemmapFormatError(msg)
    stack_dim = meta.get("stack_dim", 0)
    if type(stack_dim) is not int:
        msg = f"{fmt.meta_path(folder)!r}: stack_dim must be an int, got {stack_dim!r}"
        raise fmt.MemmapFormatError(msg)
    out = LazyStackedTensorDict(
        *members, stack_dim=stack_dim, stack_dim_name=meta.get("stack_dim_name")
    )
    out._mm = _io._Level(folder, meta, stat, options.robust_key)
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
