"""Converters into tensordicts: tuples, named tuples, structured arrays, dataclasses, pytrees, modules.

The public functions here are the package's module functions
(``tensordict.from_any``, ``tensordict.from_dataclass``, ...). Importing this
module also registers the implementations of the matching ``TensorDictBase``
class methods (and of ``to_module``) in
:data:`tensordict._ops.convert.CONVERTERS`, since those methods are defined
below the classes they build.

Every converter takes the same batch-size keywords: ``batch_size`` (the batch
size of the result), ``auto_batch_size`` (infer it, as
:meth:`TensorDict.auto_batch_size_` does; exclusive with ``batch_size``),
``batch_dims`` (with ``auto_batch_size``, keep at most this many dimensions;
ignored with a ``FutureWarning`` without it) and ``device``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from tensordict import _entries_build  # noqa: F401  (registers from_list, from_schema, ...)
from tensordict._blocks import written_back
from tensordict._collection import is_tensor_collection
from tensordict._helpers import check_batch_args
from tensordict._lazy import lazy_stack as _lazy_stack
from tensordict._nontensor import NonTensorData, stack_from_list
from tensordict._ops.convert import CONVERTERS, NON_STRING_KEY, PYTREE_TYPE
from tensordict._td import TensorDict
from tensordict._tensorclass.from_dataclass import from_dataclass
from tensordict.errors import (
    ConversionInputError,
    InvalidArgumentError,
    KeyMismatchError,
    MissingKeyError,
    ShapeMismatchError,
    TooFewInputsError,
    UnsupportedConversionError,
)

__all__ = [
    "from_any",
    "from_dataclass",
    "from_module",
    "from_modules",
    "from_namedtuple",
    "from_pytree",
    "from_struct_array",
    "from_tuple",
]


def _build(name: str, source: dict, batch_size, auto_batch_size, batch_dims, device, strict=True):
    infer = check_batch_args(name, batch_size, auto_batch_size, batch_dims, strict=strict)
    td = TensorDict(source, batch_size=batch_size, device=device)
    if infer:
        td.auto_batch_size_(batch_dims)
    return td


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


# ====================================================================== tuples and named tuples
def _tuple_source(obj) -> dict:
    return {str(i): _container_value(v) for i, v in enumerate(obj)}


def _namedtuple_source(obj) -> dict:
    return {k: _container_value(v) for k, v in obj._asdict().items()}


def _container_value(value):
    """A tuple or named tuple element, with nested tuples made dicts for the constructor."""
    if _is_namedtuple(value):
        return _namedtuple_source(value)
    if isinstance(value, tuple):
        return _tuple_source(value)
    return value


def _from_tuple(
    obj,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: torch.device | None = None,
    batch_size: torch.Size | None = None,
):
    """The implementation of :meth:`TensorDictBase.from_tuple` (documented there)."""
    try:
        source = _tuple_source(obj)
    except TypeError as err:
        msg = f"from_tuple expects a tuple or a sequence, got {type(obj).__name__}"
        raise ConversionInputError(msg) from err
    return _build("from_tuple", source, batch_size, auto_batch_size, batch_dims, device)


def _from_namedtuple(
    named_tuple,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: torch.device | None = None,
    batch_size: torch.Size | None = None,
):
    """The implementation of :meth:`TensorDictBase.from_namedtuple` (documented there)."""
    if _is_namedtuple(named_tuple):
        source = _namedtuple_source(named_tuple)
    elif isinstance(named_tuple, Mapping):
        source = {k: _container_value(v) for k, v in named_tuple.items()}
    else:
        msg = (
            f"from_namedtuple expects a named tuple (or a mapping), got "
            f"{type(named_tuple).__name__}; use from_tuple for a plain tuple"
        )
        raise ConversionInputError(msg)
    return _build("from_namedtuple", source, batch_size, auto_batch_size, batch_dims, device)


# ====================================================================== structured arrays
def _struct_source(array: np.ndarray, batch_size) -> dict:
    source = {}
    for name in array.dtype.names:
        field = array[name]
        if field.dtype.names is not None:
            source[name] = _struct_source(field, batch_size)
        elif field.dtype.kind in "OSUV":
            source[name] = NonTensorData(field, batch_size=batch_size)
        else:
            try:
                source[name] = torch.from_numpy(field)
            except (TypeError, ValueError):  # strides that torch cannot view: copy
                source[name] = torch.from_numpy(np.ascontiguousarray(field))
    return source


def _from_struct_array(
    struct_array,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: torch.device | None = None,
    batch_size: torch.Size | None = None,
):
    """The implementation of :meth:`TensorDictBase.from_struct_array` (documented there)."""
    if not isinstance(struct_array, np.ndarray) or struct_array.dtype.names is None:
        what = (
            f"an array of dtype {struct_array.dtype}"
            if isinstance(struct_array, np.ndarray)
            else type(struct_array).__name__
        )
        msg = f"from_struct_array expects a numpy array with a structured dtype, got {what}"
        raise ConversionInputError(msg)
    check_batch_args("from_struct_array", batch_size, auto_batch_size, batch_dims)
    shape = torch.Size(struct_array.shape) if batch_size is None else batch_size
    td = TensorDict(_struct_source(struct_array, shape), batch_size=shape, device=device)
    if auto_batch_size:
        td.auto_batch_size_(batch_dims)
    return td


# ====================================================================== dataclasses
def _is_dataclass_instance(obj) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _dataclass_source(obj) -> dict:
    source = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        source[field.name] = _dataclass_source(value) if _is_dataclass_instance(value) else value
    return source


def _td_from_dataclass(
    dataclass,
    *,
    dest_cls=None,
    auto_batch_size=False,
    batch_dims=None,
    as_tensorclass=False,
    device=None,
    batch_size=None,
):
    if as_tensorclass:
        return from_dataclass(
            dataclass,
            dest_cls=dest_cls,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            batch_size=batch_size,
            device=device,
        )
    if isinstance(dataclass, type) and dataclasses.is_dataclass(dataclass):
        msg = (
            f"from_dataclass() got the dataclass type {dataclass.__name__}, whose field "
            "values are unknown; pass an instance, or as_tensorclass=True to convert the type"
        )
        raise ConversionInputError(msg)
    if not _is_dataclass_instance(dataclass):
        msg = f"from_dataclass expects a dataclass instance, got {type(dataclass).__name__}"
        raise ConversionInputError(msg)
    source = _dataclass_source(dataclass)
    return _build(
        "from_dataclass", source, batch_size, auto_batch_size, batch_dims, device, strict=False
    )


# ====================================================================== pytrees
def _pytree_source(tree):
    """The nested dict (or leaf) that stores ``tree``, each container level tagged with its type."""
    if isinstance(tree, torch.Tensor) or is_tensor_collection(tree):
        return tree
    if isinstance(tree, (bool, int, float, complex)):
        return torch.tensor(tree)
    if isinstance(tree, np.ndarray):
        return torch.as_tensor(tree)
    if _is_namedtuple(tree):
        items = tree._asdict().items()
    elif isinstance(tree, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(tree))
    elif isinstance(tree, dict):
        items = tree.items()
    else:
        msg = (
            f"from_pytree cannot store a leaf of type {type(tree).__name__}: leaves must "
            "be tensors, numbers, arrays or tensor collections"
        )
        raise UnsupportedConversionError(msg)
    source = {}
    for key, value in items:
        if isinstance(key, str):
            source[key] = _pytree_source(value)
        else:
            source[f"{NON_STRING_KEY}{uuid.uuid1()}"] = {
                "value": _pytree_source(value),
                "key": NonTensorData(key),
            }
    source[PYTREE_TYPE] = NonTensorData(type(tree))
    return source


def _from_pytree(
    pytree,
    *,
    batch_size: torch.Size | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
):
    """The implementation of :meth:`TensorDictBase.from_pytree` (documented there)."""
    infer = check_batch_args("from_pytree", batch_size, auto_batch_size, batch_dims, strict=False)
    source = _pytree_source(pytree)
    if not isinstance(source, dict):
        return source
    td = TensorDict(source, batch_size=batch_size)
    if infer:
        td.auto_batch_size_(batch_dims)
    return td


# ====================================================================== any of the above
def _any_value(value):
    """The constructor's source for ``value``: every container it holds made a nested dict."""
    if is_tensor_collection(value):
        return value
    if _is_h5_group(value):  # a Mapping too, read lazily by a PersistentTensorDict
        return CONVERTERS["from_h5_group"](value)
    if isinstance(value, Mapping):
        return {k: _any_value(v) for k, v in value.items()}
    if _is_namedtuple(value):
        return {k: _any_value(v) for k, v in value._asdict().items()}
    if isinstance(value, tuple):
        return {str(i): _any_value(v) for i, v in enumerate(value)}
    if _is_dataclass_instance(value):
        return {f.name: _any_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        return _from_struct_array(value)
    return value


def _is_h5_group(value) -> bool:
    """An open h5py file or group (told without importing h5py, an optional extra)."""
    return type(value).__module__.startswith("h5py") and hasattr(value, "create_group")


def _any_list(values: list):
    """A list as one tensor when torch takes it (numbers of a regular shape), else a stack of values."""
    try:
        return torch.tensor(values)
    except (TypeError, ValueError, RuntimeError):
        return stack_from_list(values)


def _from_any(
    obj,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: torch.device | None = None,
    batch_size: torch.Size | None = None,
):
    """The implementation of :meth:`TensorDictBase.from_any` (documented there)."""
    if is_tensor_collection(obj):
        return obj
    if isinstance(obj, list):
        return _any_list(obj)
    if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
        return _from_struct_array(
            obj,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            device=device,
            batch_size=batch_size,
        )
    if _is_h5_group(obj):
        return CONVERTERS["from_h5_group"](obj)
    if isinstance(obj, (Mapping, tuple)) or _is_dataclass_instance(obj):
        source = _any_value(obj)
        return _build(
            "from_any", source, batch_size, auto_batch_size, batch_dims, device, strict=False
        )
    return obj


# ====================================================================== modules
def _check_module(module, name: str) -> None:
    if not isinstance(module, nn.Module):
        msg = f"{name} expects a torch.nn.Module, got {type(module).__name__}"
        raise ConversionInputError(msg)


def _as_module(td, lock: bool, name: str):
    """``td`` as a ``tensordict.nn.TensorDictParams``: tensordict.nn registers the maker under
    ``CONVERTERS["as_module"]`` (``import tensordict`` imports it), a layer above this one."""
    make = CONVERTERS.get("as_module")
    if make is None:
        msg = f"{name}(as_module=True) needs tensordict.nn (import tensordict loads it); call it without as_module"
        raise UnsupportedConversionError(msg)
    return make(td, lock=lock)


def _module_source(module: nn.Module, filter_empty: bool) -> dict:
    source = {}
    for name, param in module._parameters.items():
        if param is not None:
            source[name] = param
    for name, buffer in module._buffers.items():
        if buffer is not None:
            source[name] = buffer
    for name, child in module._modules.items():
        if child is None:
            continue
        sub = _module_source(child, filter_empty)
        if sub or not filter_empty:
            source[name] = sub
    return source


def _state_dict_source(module: nn.Module) -> dict:
    source = {}
    for name, value in module.state_dict().items():
        *path, leaf = name.split(".")
        level = source
        for part in path:
            level = level.setdefault(part, {})
        level[leaf] = value
    return source


def from_module(
    module: nn.Module,
    as_module: bool = False,
    lock: bool = True,
    use_state_dict: bool = False,
    filter_empty: bool = True,
) -> TensorDict:
    """Collects the parameters and buffers of a module in a :class:`TensorDict`, nested by sub-module.

    The same as :meth:`TensorDict.from_module <tensordict.TensorDictBase.from_module>`,
    except that the result is locked by default.

    Args:
        module (torch.nn.Module): the module.
        as_module (bool, optional): return a :class:`~tensordict.nn.TensorDictParams`
            (every tensor a parameter or a buffer of it). Defaults to ``False``.
        lock (bool, optional): lock the result. Defaults to ``True``.
        use_state_dict (bool, optional): read ``module.state_dict()`` instead.
            Defaults to ``False``.
        filter_empty (bool, optional): leave out sub-modules without any parameter
            or buffer. Defaults to ``True``.

    Returns:
        A new :class:`TensorDict` (or ``TensorDictParams``) with an empty batch size.

    Raises:
        ConversionInputError: (a ``TypeError`` and an ``AttributeError``) if
            ``module`` is not an ``nn.Module``.

    Examples:
        >>> params = from_module(torch.nn.Linear(2, 3))
        >>> params["weight"].shape, params.is_locked
        (torch.Size([3, 2]), True)
    """
    _check_module(module, "from_module")
    source = _state_dict_source(module) if use_state_dict else _module_source(module, filter_empty)
    td = TensorDict(source, batch_size=[])
    if lock:
        td.lock_()
    return _as_module(td, lock, "from_module") if as_module else td


def _td_from_module(module, as_module=False, lock=False, use_state_dict=False, filter_empty=True):
    return from_module(
        module,
        as_module=as_module,
        lock=lock,
        use_state_dict=use_state_dict,
        filter_empty=filter_empty,
    )


def _stack_leaves(tds: list, prefix: tuple, expand_identical: bool) -> dict:
    first = tds[0]
    keys = list(first.keys())
    for i, td in enumerate(tds[1:], 1):
        if set(td.keys()) != set(keys):
            where = f" under {prefix!r}" if prefix else ""
            msg = (
                f"from_modules: module {i} holds the names {sorted(td.keys())}{where}, "
                f"module 0 holds {sorted(keys)}"
            )
            raise KeyMismatchError(msg)
    out = {}
    for key in keys:
        values = [td.get(key) for td in tds]
        if is_tensor_collection(values[0]):
            out[key] = _stack_leaves(values, (*prefix, key), expand_identical)
            continue
        path = (*prefix, key)
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) > 1:
            msg = (
                f"from_modules: the tensors at {path!r} have different shapes "
                f"{sorted(shapes)}; pass lazy_stack=True to keep them apart"
            )
            raise ShapeMismatchError(msg)
        head = values[0]
        if expand_identical and all(v is head for v in values):
            out[key] = head.expand(len(values), *head.shape)
            continue
        with torch.no_grad():
            stacked = torch.stack([v.detach() for v in values])
        if isinstance(head, nn.Parameter):
            stacked = nn.Parameter(stacked, requires_grad=head.requires_grad)
        out[key] = stacked
    return out


def _from_modules(
    *modules,
    as_module: bool = False,
    lock: bool = True,
    use_state_dict: bool = False,
    lazy_stack: bool = False,
    expand_identical: bool = False,
):
    """The implementation of :meth:`TensorDictBase.from_modules` (documented there)."""
    if not modules:
        msg = "from_modules needs at least one module, got none"
        raise TooFewInputsError(msg)
    for module in modules:
        _check_module(module, "from_modules")
    tds = [
        from_module(m, lock=False, use_state_dict=use_state_dict, filter_empty=True)
        for m in modules
    ]
    if lazy_stack:
        out = _lazy_stack(tds)
    else:
        out = TensorDict(_stack_leaves(tds, (), expand_identical), batch_size=[len(tds)])
    if lock:
        out.lock_()
    return _as_module(out, lock, "from_modules") if as_module else out


# ====================================================================== into a module
def _plan_module_writes(td, module: nn.Module, prefix: tuple, plan: list) -> None:
    """Checks every key of ``td`` against ``module`` and lists ``(module, name, value, path)``."""
    for key, value in td.items():
        path = (*prefix, key)
        if is_tensor_collection(value) and not isinstance(value, NonTensorData):
            child = module._modules.get(key)
            if child is None:
                msg = f"to_module: the module has no sub-module {key!r} (key {path!r})"
                raise MissingKeyError(msg)
            _plan_module_writes(value, child, path, plan)
            continue
        known = key in module._parameters or key in module._buffers or hasattr(module, key)
        if not known:
            msg = (
                f"to_module: {type(module).__name__} has no parameter, buffer or attribute "
                f"{key!r} (key {path!r})"
            )
            raise MissingKeyError(msg)
        plan.append((module, key, value, path))


def _current(module: nn.Module, name: str):
    if name in module._parameters:
        return module._parameters[name]
    if name in module._buffers:
        return module._buffers[name]
    return getattr(module, name)


def _write_leaf(module, name, value, inplace, non_blocking, preserve_module_state) -> None:
    if isinstance(value, NonTensorData):
        value = value.data
    if inplace:
        old = _current(module, name)
        if isinstance(old, torch.Tensor) and isinstance(value, torch.Tensor):
            with torch.no_grad():
                old.copy_(value, non_blocking=non_blocking)
            return
    if name in module._parameters:
        old = module._parameters[name]
        if isinstance(value, nn.Parameter) or not isinstance(value, torch.Tensor):
            module._parameters[name] = value
        elif preserve_module_state:
            keep_graph = value.requires_grad and not value.is_leaf
            module._parameters[name] = (
                value
                if keep_graph or old is None
                else nn.Parameter(value, requires_grad=old.requires_grad)
            )
        else:
            del module._parameters[name]
            module.__dict__[name] = value
    elif name in module._buffers:
        if preserve_module_state and isinstance(value, nn.Parameter):
            # a buffer stays a buffer (a parameter there would reach optimizers)
            value = nn.Buffer(value, persistent=name not in module._non_persistent_buffers_set)
        module._buffers[name] = value
    elif isinstance(value, nn.Parameter) and name in module.__dict__:
        # a plain tensor put here by preserve_module_state=False gives its place back
        del module.__dict__[name]
        module._parameters[name] = value
    else:
        setattr(module, name, value)


def _to_module(
    td,
    module,
    *,
    inplace=None,
    return_swap=True,
    swap_dest=None,
    use_state_dict=False,
    non_blocking=False,
    preserve_module_state=True,
    memo=None,
):
    if memo is not None:
        msg = "to_module no longer accepts memo; call it without memo"
        raise InvalidArgumentError(msg)
    if not isinstance(module, nn.Module):
        msg = f"to_module expects a torch.nn.Module, got {type(module).__name__}"
        raise ConversionInputError(msg)
    if inplace and use_state_dict:
        msg = "to_module: inplace=True and use_state_dict=True exclude each other"
        raise InvalidArgumentError(msg)
    plan: list = []
    _plan_module_writes(td, module, (), plan)
    swap = None
    if return_swap:
        swap = TensorDict({}) if swap_dest is None else swap_dest
        for mod, name, _value, path in plan:
            old = _current(mod, name)
            if inplace and isinstance(old, torch.Tensor):
                old = old.detach().clone()
            swap.set(path, old)
    if use_state_dict:
        flat = {".".join(path): _unwrap_leaf(value) for _mod, _name, value, path in plan}
        module.load_state_dict(flat, strict=False)
    else:
        for mod, name, value, _path in plan:
            _write_leaf(mod, name, value, inplace, non_blocking, preserve_module_state)
    if swap is None:
        return None
    placed = {path: _current(mod, name) for mod, name, _value, path in plan}
    options = {
        "inplace": inplace,
        "use_state_dict": use_state_dict,
        "non_blocking": non_blocking,
        "preserve_module_state": preserve_module_state,
    }
    return written_back(
        swap, td, _module_restorer(module, placed, options), undo_on_error=True, keep_source=True
    )


def _module_restorer(module, placed: dict, options: dict):
    """The end of a ``with td.to_module(module):`` block: the module gets its values back.

    The module gets back what it held before the call (the swap), also after an exception.
    A tensor the block put in the module in place of one of ``td``'s (a lazy module's
    materialised parameter, say) is written into ``td``.
    """

    def finish(swap, td) -> None:
        current = _to_module(swap, module, **options)
        replaced = [
            (path, value)
            for path, value in current.items(True, True)
            if value is not placed[path if isinstance(path, tuple) else (path,)]
        ]
        if not replaced:
            return
        locked = td.is_locked
        if locked:
            td.unlock_()
        for path, value in replaced:
            td.set(path, value)
        if locked:
            td.lock_()

    return finish


def _unwrap_leaf(value):
    return value.data if isinstance(value, NonTensorData) else value


CONVERTERS.update(
    {
        "from_any": _from_any,
        "from_tuple": _from_tuple,
        "from_namedtuple": _from_namedtuple,
        "from_struct_array": _from_struct_array,
        "from_dataclass": _td_from_dataclass,
        "from_pytree": _from_pytree,
        "from_module": _td_from_module,
        "from_modules": _from_modules,
        "to_module": _to_module,
    }
)

# The module functions of the well-known API are the TensorDict class methods, which reach
# the implementations above through the registry: one body and one docstring each.
from_any = TensorDict.from_any
from_tuple = TensorDict.from_tuple
from_namedtuple = TensorDict.from_namedtuple
from_struct_array = TensorDict.from_struct_array
from_pytree = TensorDict.from_pytree
from_modules = TensorDict.from_modules
