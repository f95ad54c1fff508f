"""The constructors of :mod:`tensordict._ops.convert` that build concrete classes.

``from_list``, ``from_dict_instance`` and ``from_schema`` are methods of every
tensordict, declared in the ``_ops`` layer, which may not import
:class:`~tensordict.TensorDict` or the lazy stack. Their bodies live here and
are put in :data:`tensordict._ops.convert.CONVERTERS` when this module is
imported (:mod:`tensordict._from` imports it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence

import torch

from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._lazy import lazy_stack
from tensordict._ops.convert import CONVERTERS
from tensordict._td import TensorDict
from tensordict._tensorclass import flags
from tensordict._typing import DeviceType, ShapeType
from tensordict.errors import UnknownStorageError

STORAGES = (None, "memmap", "shared")
"""The ``storage`` values ``from_schema`` supports."""


def _check_exclusive(name: str, batch_size, batch_dims) -> None:
    if batch_size is not None and batch_dims is not None:
        msg = f"{name}: batch_size and batch_dims exclude each other; pass one of them"
        raise ValueError(msg)


def _from_dict(input_dict, auto_batch_size, batch_size, device, batch_dims, names):
    _check_exclusive("from_dict", batch_size, batch_dims)
    return TensorDict.from_dict(
        input_dict,
        batch_size=batch_size,
        device=device,
        batch_dims=batch_dims,
        names=names,
        auto_batch_size=auto_batch_size,
    )


def _retype(built, template) -> None:
    """Gives the nested tensordicts of ``built`` the tensorclass of ``template``'s entry there."""
    for key, sub in list(built._items_level()):
        model = template._get_str(key, None)
        if not isinstance(sub, TensorDict) or not is_tensor_collection(model):
            continue
        if getattr(type(model), "_is_non_tensor", False):
            continue
        if getattr(type(model), "_is_tensorclass", False):
            _retype(sub, model._tensordict)
            obj = type(model).from_tensordict(sub)
            flags.cast_fields(obj, sub.keys())
            built._set_str(key, obj, inplace=False, validated=True)
        elif not getattr(type(model), "_is_lazy", False):
            _retype(sub, model)


def from_dict_instance(
    self: TensorCollection,
    input_dict: Mapping,
    auto_batch_size: bool | None,
    batch_size: ShapeType | None,
    device: DeviceType | None,
    batch_dims: int | None,
    names: Sequence[str | None] | None,
) -> TensorCollection:
    """``td.from_dict_instance(...)``: ``from_dict`` then the classes of ``self``'s entries."""
    if not isinstance(input_dict, Mapping):
        msg = f"from_dict_instance() needs a dict, got {type(input_dict).__name__}"
        raise TypeError(msg)
    out = _from_dict(input_dict, auto_batch_size, batch_size, device, batch_dims, names)
    _retype(out, self)
    return out


def _same_structure(tds: list) -> bool:
    first = tds[0]
    shapes = {k: v.shape for k, v in first.items(True, True) if isinstance(v, torch.Tensor)}
    for td in tds[1:]:
        if td.batch_size != first.batch_size or set(td.keys(True, True)) != set(
            first.keys(True, True)
        ):
            return False
        for key, value in td.items(True, True):
            if isinstance(value, torch.Tensor) and shapes.get(key) != value.shape:
                return False
    return True


def from_list(
    cls: type,
    items: list,
    auto_batch_size: bool | None,
    batch_size: ShapeType | None,
    device: DeviceType | None,
    batch_dims: int | None,
    names: Sequence[str | None] | None,
    lazy: bool | None,
) -> TensorCollection:
    """``TensorDict.from_list(...)``: each element as a tensordict, then stacked on dim 0."""
    if not isinstance(items, (list, tuple)):
        msg = f"from_list() needs a list of dicts or tensordicts, got {type(items).__name__}"
        raise TypeError(msg)
    _check_exclusive("from_list", batch_size, batch_dims)
    if batch_size is not None:
        batch_size = torch.Size(batch_size)
        if not batch_size or batch_size[0] != len(items):
            msg = (
                f"from_list(): batch_size={list(batch_size)} must start with the length of the "
                f"list, {len(items)}"
            )
            raise ValueError(msg)
    inner_size = batch_size[1:] if batch_size is not None else None
    inner_dims = batch_dims - 1 if batch_dims is not None else None
    tds = []
    for i, item in enumerate(items):
        if is_tensor_collection(item):
            tds.append(item)
        elif isinstance(item, Mapping):
            tds.append(_from_dict(item, auto_batch_size, inner_size, device, inner_dims, None))
        else:
            msg = f"from_list(): element {i} is a {type(item).__name__}, not a dict or a tensordict"
            raise TypeError(msg)
    if not tds:
        msg = "from_list() needs a non-empty list"
        raise RuntimeError(msg)
    if lazy is None:
        lazy = not _same_structure(tds)
    out = lazy_stack(tds, 0) if lazy else torch.stack(tds, 0)
    if names is not None:
        out.names = names
    return out


def _schema_entry(key, spec):
    try:
        shape, dtype = spec
    except (TypeError, ValueError) as err:
        msg = (
            f"from_schema(): the entry {key!r} must be a pair (element_shape, dtype), got {spec!r}"
        )
        raise UnknownStorageError(msg) from err
    return list(shape), dtype


def from_schema(
    cls: type,
    schema: dict,
    batch_size: ShapeType | None,
    storage: str | None,
    device: DeviceType | None,
    kwargs: dict,
) -> TensorCollection:
    """``TensorDict.from_schema(...)``: zeros of each ``(element_shape, dtype)``, then stored."""
    if storage not in STORAGES:
        msg = f"from_schema(): unknown storage {storage!r}; expected one of {list(STORAGES)}"
        raise UnknownStorageError(msg)
    batch_size = torch.Size(batch_size or [])
    entries = [(key, *_schema_entry(key, spec)) for key, spec in schema.items()]
    target = None if storage == "memmap" else device
    out = TensorDict({}, batch_size=batch_size, device=target)
    for key, shape, dtype in entries:
        out.set(key, torch.zeros([*batch_size, *shape], dtype=dtype, device=target))
    if storage == "memmap":
        prefix = kwargs.pop("prefix", None) or tempfile.mkdtemp(prefix="tensordict-schema-")
        return out.memmap_(prefix, **kwargs)
    if storage == "shared":
        return out.share_memory_()
    return out


CONVERTERS.update(
    from_dict_instance=from_dict_instance, from_list=from_list, from_schema=from_schema
)
