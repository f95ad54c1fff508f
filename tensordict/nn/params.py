"""``TensorDictParams``: a tensordict whose leaves are the parameters and buffers of an ``nn.Module``.

A plain tensordict stored on a module is invisible to ``module.parameters()``,
``module.state_dict()``, ``module.to()`` and optimizers. :class:`TensorDictParams`
wraps a tensordict (without copying it), turns its leaves into
:class:`~torch.nn.Parameter` and buffers, and registers them on itself, so that a
module holding it sees them. Reads go to the wrapped tensordict; writes go
through it and register the new leaves. Results of operations that make a new
tensordict (indexing, ``select``, ``apply``, arithmetic) are plain tensordicts;
``clone``, ``copy`` and ``to`` keep the wrapper.

The module also teaches :meth:`~tensordict.TensorDictBase.from_module` and
:meth:`~tensordict.TensorDictBase.from_modules` their ``as_module=True`` form,
through the converter registry of the core.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

import torch
from torch import nn
from torch.nn import Buffer

from tensordict._collection import NO_DEFAULT, is_non_tensor, is_tensor_collection
from tensordict._keys import NestedKey
from tensordict._ops.convert import CONVERTERS
from tensordict._td import TensorDict
from tensordict._typing import DeviceType, IndexType, ShapeType
from tensordict.base import TensorDictBase
from tensordict.errors import EntryTypeError, InvalidArgumentError, LockedError

__all__ = ["TensorDictParams"]

_FLOATS = (torch.float16, torch.float32, torch.float64)


def _as_module_leaf(value, no_convert: bool):
    """``value`` as a parameter or buffer (anything else, or one already, is returned as it is)."""
    if not isinstance(value, torch.Tensor) or isinstance(value, (nn.Parameter, Buffer)):
        return value
    if no_convert:
        # a tensor in a graph (param.expand(n)) keeps its history: it is registered as it is
        return value if value.requires_grad else Buffer(value)
    if value.dtype in _FLOATS:
        return nn.Parameter(value)
    return Buffer(value)


def _convert_tree(td: TensorDictBase, no_convert: bool) -> None:
    """Turns every tensor leaf of ``td`` into a parameter or a buffer, in place (even when locked)."""
    if td._is_lazy:
        msg = "a TensorDictParams cannot hold a lazy stack; stack it densely (torch.stack) first"
        raise EntryTypeError(msg)
    for key, value in list(td._items_level()):
        if is_non_tensor(value):
            continue
        if is_tensor_collection(value):
            _convert_tree(
                value._tensordict if getattr(type(value), "_is_tensorclass", False) else value,
                no_convert,
            )
            continue
        converted = _as_module_leaf(value, no_convert)
        if converted is not value:
            td._store_entry(key, converted)


def _wrap_like(new, old):
    """A leaf converted by ``to()`` / ``cpu()``: a parameter again if it was one (and still floats)."""
    if new is old:
        return new
    if isinstance(old, nn.Parameter) and (new.is_floating_point() or new.is_complex()):
        return nn.Parameter(new, requires_grad=old.requires_grad)
    return _as_module_leaf(new, no_convert=True)


class TensorDictParams(TensorDictBase, nn.Module):
    """A tensordict whose leaves are registered as the parameters and buffers of an ``nn.Module``.

    Put it on a module to have its entries seen by ``parameters()``,
    ``state_dict()``, ``module.to()`` and optimizers (``named_parameters``
    joins nested keys with ``"."``). It behaves as the tensordict it wraps:
    index it, read and set entries, call
    :meth:`~tensordict.TensorDictBase.to_module`. Setting an entry turns
    float16/32/64 tensors into :class:`~torch.nn.Parameter` and other tensors
    into buffers (``no_convert=True``: every tensor becomes a buffer). The
    wrapped tensordict is used as it is, not copied.

    Args:
        parameters (TensorDictBase or dict, optional): the tensordict to wrap (a
            dict becomes a ``TensorDict``). Defaults to the keyword arguments.

    Keyword Args:
        no_convert (bool, optional): register tensors that are not parameters
            as buffers instead of making float ones parameters. Defaults to ``False``.
        lock (bool, optional): lock the wrapped tensordict (writes through the
            wrapper still work). Defaults to ``False``.
        **kwargs: the entries, when ``parameters`` is not given.

    Raises:
        TypeError: if both ``parameters`` and keyword entries are given.

    Examples:
        >>> from tensordict.nn import TensorDictParams
        >>> module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 4))
        >>> params = TensorDictParams(TensorDict.from_module(module))
        >>> holder = torch.nn.Module()
        >>> holder.params = params
        >>> [name for name, _ in holder.named_parameters()]
        ['params.0.weight', 'params.0.bias', 'params.1.weight', 'params.1.bias']
        >>> holder.params["other"] = torch.randn(3)
        >>> isinstance(holder.params["other"], torch.nn.Parameter)
        True
        >>> holder.params["count"] = torch.zeros((), dtype=torch.long)
        >>> [name for name, _ in holder.named_buffers()]
        ['params.count']
    """

    def __init__(
        self,
        parameters: TensorDictBase | dict | None = None,
        *,
        no_convert: bool | str = False,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        nn.Module.__init__(self)
        if parameters is None:
            parameters = kwargs
        elif kwargs:
            msg = f"TensorDictParams takes a tensordict or keyword entries, not both (got the keywords {list(kwargs)})"
            raise TypeError(msg)
        if isinstance(parameters, dict):
            parameters = TensorDict(parameters)
        elif isinstance(parameters, TensorDictParams):
            no_convert = "skip"
            parameters = parameters._param_td.copy()
        elif not isinstance(parameters, TensorDictBase):
            msg = f"TensorDictParams wraps a tensordict or a dict, got {type(parameters).__name__}"
            raise EntryTypeError(msg)
        if parameters._is_lazy:
            msg = (
                "a TensorDictParams cannot wrap a lazy stack; stack it densely (torch.stack) first"
            )
            raise EntryTypeError(msg)
        self.no_convert = no_convert
        if no_convert != "skip":
            _convert_tree(parameters, bool(no_convert))
        self._param_td = parameters
        self._lock_content = lock
        if lock:
            parameters.lock_()
        self._is_locked = False
        self._get_post_hook = []
        self._reset_params()

    # ------------------------------------------------------------------ registration
    def _reset_params(self) -> None:
        """Registers the leaves of the wrapped tensordict: parameters, and the other tensors as buffers."""
        self._parameters.clear()
        self._buffers.clear()
        for key, value in self._param_td.items(True, True):
            if not isinstance(value, torch.Tensor):
                continue
            name = key if isinstance(key, str) else ".".join(key)
            if isinstance(value, nn.Parameter):
                self._parameters[name] = value
            else:
                self._buffers[name] = value

    def _convert_and_register(self) -> None:
        if self.no_convert != "skip":
            _convert_tree(self._param_td, bool(self.no_convert))
        else:
            _convert_tree(self._param_td, True)
        self._reset_params()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[TensorDictBase]:
        """The wrapped tensordict, unlocked for the block (its own lock comes back), then registered."""
        if self._is_locked:
            msg = "the TensorDictParams is locked: call unlock_() first, or write in place with set_()"
            raise LockedError(msg)
        content = self._param_td
        relock = content.is_locked
        if relock:
            content.unlock_()
        try:
            yield content
        finally:
            if relock:
                content.lock_()
            self._convert_and_register()

    def register_get_post_hook(self, hook: Callable) -> None:
        """Registers ``hook(params, value)``, called on every leaf read; a non-``None`` result replaces the value.

        Args:
            hook (Callable): the hook.

        Raises:
            ValueError: if ``hook`` is not callable.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(2)))
            >>> params.register_get_post_hook(lambda p, value: value.data)
            >>> params["a"].requires_grad
            False
        """
        if not callable(hook):
            msg = f"a get hook must be callable, got {type(hook).__name__}"
            raise InvalidArgumentError(msg)
        self._get_post_hook.append(hook)

    def _hooked(self, value):
        if not self._get_post_hook or is_tensor_collection(value):
            return value
        for hook in self._get_post_hook:
            replaced = hook(self, value)
            if replaced is not None:
                value = replaced
        return value

    # ------------------------------------------------------------------ reads (through the hooks)
    def get(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """The entry at ``key``, through the get hooks (see :meth:`register_get_post_hook`).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.zeros(1))).get("a")
            Parameter containing:
            tensor([0.], requires_grad=True)
        """
        return self._hooked(self._param_td.get(key, *args, **kwargs))

    def __getitem__(self, index):
        return self._hooked(self._param_td[index])

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterator[tuple[NestedKey, Any]]:
        """``(key, value)`` pairs of the wrapped tensordict, leaves through the get hooks.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> [key for key, _ in TensorDictParams(TensorDict(a={"b": torch.zeros(1)})).items(True, True)]
            [('a', 'b')]
        """
        for key, value in self._param_td.items(include_nested, leaves_only, is_leaf, sort=sort):
            yield key, self._hooked(value)

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterator[Any]:
        """The values of the wrapped tensordict, leaves through the get hooks.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> [v.shape for v in TensorDictParams(TensorDict(a=torch.zeros(1))).values()]
            [torch.Size([1])]
        """
        for value in self._param_td.values(include_nested, leaves_only, is_leaf, sort=sort):
            yield self._hooked(value)

    # ------------------------------------------------------------------ primitives
    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the wrapped tensordict (settable).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.zeros(2, 3), batch_size=[2])).batch_size
            torch.Size([2])
        """
        return self._param_td.batch_size

    @batch_size.setter
    def batch_size(self, value: ShapeType) -> None:
        self._param_td.batch_size = value

    @property
    def device(self) -> torch.device | None:
        """The device of the wrapped tensordict.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.zeros(2), device="cpu")).device
            device(type='cpu')
        """
        return self._param_td.device

    @property
    def names(self) -> list | None:
        """The dimension names of the wrapped tensordict (settable).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.zeros(2), batch_size=[2], names=["n"])).names
            ['n']
        """
        return self._param_td.names

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        self._param_td.names = value

    def _get_str(self, key: str, default):
        return self._param_td._get_str(key, default)

    def _set_str(
        self, key: str, value, *, inplace: bool, validated: bool, non_blocking: bool = False
    ) -> None:
        if value is self:
            msg = f"a TensorDictParams cannot hold itself (at {key!r})"
            raise InvalidArgumentError(msg)
        current = self._param_td._get_str(key, None)
        if inplace and isinstance(current, torch.Tensor):
            self._param_td.data._set_str(key, value, inplace=True, validated=validated)
            return
        with self._writing() as content:
            content._set_str(key, value, inplace=inplace, validated=validated)

    def _del_str(self, key: str) -> None:
        with self._writing() as content:
            content._del_str(key)

    def _keys_level(self):
        return self._param_td._keys_level()

    def _items_level(self):
        return self._param_td._items_level()

    def _new_like(self, source: dict, batch_size: torch.Size, names=NO_DEFAULT, device=NO_DEFAULT):
        return self._param_td._new_like(source, batch_size, names=names, device=device)

    @property
    def is_locked(self) -> bool:
        """Whether the wrapper refuses new keys; the wrapped tensordict has its own lock.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(1)), lock=True)
            >>> params.is_locked, params._param_td.is_locked
            (False, True)
        """
        return self._is_locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self._propagate_lock(bool(value))

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        if locked and not self._param_td.is_locked:
            self._param_td.lock_()
        elif not locked and not self._lock_content and self._param_td.is_locked:
            self._param_td.unlock_()

    def _store_entry(self, key: str, value) -> None:
        self._param_td._store_entry(key, value)
        self._convert_and_register()

    def _index(self, index):
        return self._param_td._index(index)

    def _set_at(self, index, value) -> None:
        # rows are written into the parameters' memory, outside autograd
        self._param_td.data._set_at(index, value)

    def _batch_op(self, op, batch_size: torch.Size, names=None):
        return self._param_td._batch_op(op, batch_size, names)

    def _batch_op_multi(self, op, batch_sizes: list, names=None) -> tuple:
        return self._param_td._batch_op_multi(op, batch_sizes, names)

    def _shallow_copy(self) -> TensorDictParams:
        out = TensorDictParams(self._param_td._shallow_copy(), no_convert="skip")
        out.no_convert = self.no_convert
        return out

    # memory mapping: a TensorDictParams is written as the tensordict it wraps
    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        self._param_td._memmap_plan(folder, plan, robust_key, existsok, like)

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        if inplace:
            msg = (
                "a TensorDictParams cannot be memory-mapped in place; use memmap() or memmap_like()"
            )
            raise RuntimeError(msg)
        return self._param_td._memmap_rebuild(folder, replacement, False, robust_key)

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        self._param_td._memmap_write_meta(folder, robust_key)

    def _memmap_refresh(self, options) -> None:
        self._param_td._memmap_refresh(options)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        return self._param_td._memmap_refresh_from(meta, stat, options)

    def _memmap_load_into(self, loaded) -> None:
        msg = "a TensorDictParams cannot load a memory-mapped folder in place; load a TensorDict and wrap it"
        raise RuntimeError(msg)

    @classmethod
    def _memmap_record_type(cls) -> str:
        return TensorDict._memmap_record_type()

    # ------------------------------------------------------------------ writes
    def set(
        self,
        key: NestedKey,
        item: Any,
        inplace: bool = False,
        *,
        non_blocking: bool = False,
        **kwargs: Any,
    ) -> TensorDictParams:
        """Stores ``item`` at ``key`` and registers it (a float tensor becomes a parameter).

        Args:
            key (NestedKey): the key.
            item: the value.
            inplace (bool, optional): copy into the existing entry (outside autograd).
                Defaults to ``False``.

        Returns:
            The TensorDictParams itself.

        Raises:
            RuntimeError: if the wrapper is locked and the key would be added or rebound.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict())
            >>> isinstance(params.set(("a", "b"), torch.zeros(2))["a", "b"], torch.nn.Parameter)
            True
        """
        if item is self:
            msg = f"a TensorDictParams cannot hold itself (at {key!r})"
            raise InvalidArgumentError(msg)
        if inplace and isinstance(self._param_td.get(key, None), torch.Tensor):
            self._param_td.data.set(key, item, inplace=True)
            return self
        with self._writing() as content:
            content.set(key, item, inplace=inplace)
        return self

    def set_(self, key: NestedKey, item: Any) -> TensorDictParams:
        """Copies ``item`` into the existing entry at ``key``, outside autograd (also when locked).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(2)))
            >>> params.set_("a", 1.0)["a"].data
            tensor([1., 1.])
        """
        self._param_td.data.set_(key, item)
        return self

    def update(
        self,
        input_dict_or_td: Mapping | TensorDictBase,
        clone: bool = False,
        inplace: bool = False,
        *,
        keys_to_update: Sequence[NestedKey] | None = None,
        **kwargs: Any,
    ) -> TensorDictParams:
        """Writes the entries of a mapping or tensordict, registering the new leaves.

        With ``inplace=True`` existing entries are copied into, outside autograd.

        Returns:
            The TensorDictParams itself.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a={"b": torch.zeros(1)}))
            >>> _ = params.update({"a": {"c": torch.ones(1)}})
            >>> [name for name, _ in params.named_parameters()]
            ['a.b', 'a.c']
        """
        if input_dict_or_td is self:
            return self
        if inplace:
            target = self._param_td.data
            target.update(
                input_dict_or_td, clone=clone, inplace=True, keys_to_update=keys_to_update
            )
            # keys the source added to the detached view are added to the parameters too
            if set(target.keys(True, True)) != set(self._param_td.keys(True, True)):
                with self._writing() as content:
                    content.update(target.exclude(*self._param_td.keys(True, True)))
            return self
        with self._writing() as content:
            content.update(input_dict_or_td, clone=clone, keys_to_update=keys_to_update)
        return self

    def update_(
        self,
        input_dict_or_td: Mapping | TensorDictBase,
        clone: bool = False,
        *,
        keys_to_update: Sequence[NestedKey] | None = None,
        **kwargs: Any,
    ) -> TensorDictParams:
        """Copies the entries of a mapping or tensordict into the existing ones, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(1)))
            >>> params.update_({"a": torch.ones(1)})["a"].data
            tensor([1.])
        """
        self._param_td.data.update_(input_dict_or_td, clone=clone, keys_to_update=keys_to_update)
        return self

    def set_at_(self, key: NestedKey, value: Any, index: IndexType) -> TensorDictParams:
        """Writes ``value`` into the rows ``index`` of the entry at ``key``, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(3), batch_size=[3]))
            >>> params.set_at_("a", 1.0, 0)["a"].data
            tensor([1., 0., 0.])
        """
        self._param_td.data.set_at_(key, value, index)
        return self

    def update_at_(
        self, input_dict_or_td: Mapping | TensorDictBase, index: IndexType, clone: bool = False
    ) -> TensorDictParams:
        """Writes the entries of a mapping into the rows ``index``, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(3), batch_size=[3]))
            >>> params.update_at_({"a": 2.0}, 1)["a"].data
            tensor([0., 2., 0.])
        """
        self._param_td.data.update_at_(input_dict_or_td, index, clone=clone)
        return self

    def zero_(self) -> TensorDictParams:
        """Fills every leaf with zeros, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.ones(2))).zero_()["a"].data
            tensor([0., 0.])
        """
        self._param_td.data.zero_()
        return self

    def fill_(self, key: NestedKey, value: float | torch.Tensor) -> TensorDictParams:
        """Fills the entry at ``key`` with ``value``, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.ones(2))).fill_("a", 3.0)["a"].data
            tensor([3., 3.])
        """
        self._param_td.data.fill_(key, value)
        return self

    def apply_(self, fn: Callable, *others: TensorDictBase, **kwargs: Any) -> TensorDictParams:
        """Applies ``fn`` to every leaf in place, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict(a=torch.ones(2))).apply_(lambda x: x.mul_(2))["a"].data
            tensor([2., 2.])
        """
        self._param_td.data.apply_(fn, *others, **kwargs)
        return self

    def apply(
        self, fn: Callable, *others: TensorDictBase, inplace: bool = False, **kwargs: Any
    ) -> TensorDictBase | None:
        """Applies ``fn`` to every leaf: a new ``TensorDict``, or (``inplace``) written into the leaves, outside autograd.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(2)))
            >>> type(params.apply(lambda x: x * 2)).__name__
            'TensorDict'
        """
        if not inplace:
            return self._param_td.apply(fn, *others, **kwargs)
        self._param_td.data.apply(fn, *others, inplace=True, **kwargs)
        return self

    def named_apply(
        self, fn: Callable, *others: TensorDictBase, inplace: bool = False, **kwargs: Any
    ) -> TensorDictBase | None:
        """Applies ``fn(key, leaf, ...)`` to every leaf: a new ``TensorDict``, or written into the leaves.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(2)))
            >>> params.named_apply(lambda key, x: x * 0)["a"]
            tensor([0., 0.], grad_fn=<MulBackward0>)
        """
        if not inplace:
            return self._param_td.named_apply(fn, *others, **kwargs)
        self._param_td.data.named_apply(fn, *others, inplace=True, **kwargs)
        return self

    def pop(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """Removes the entry at ``key`` and returns it (``default`` if missing).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(2)))
            >>> _ = params.pop("a")
            >>> list(params.parameters())
            []
        """
        with self._writing() as content:
            return content.pop(key, default)

    def del_(self, key: NestedKey) -> TensorDictParams:
        """Removes the entry at ``key``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> list(TensorDictParams(TensorDict(a=torch.ones(2))).del_("a").keys())
            []
        """
        with self._writing() as content:
            content.del_(key)
        return self

    def rename_key_(
        self, old_key: NestedKey, new_key: NestedKey, safe: bool = False
    ) -> TensorDictParams:
        """Moves the entry at ``old_key`` to ``new_key``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(2))).rename_key_("a", "b")
            >>> [name for name, _ in params.named_parameters()]
            ['b']
        """
        with self._writing() as content:
            content.rename_key_(old_key, new_key, safe=safe)
        return self

    def create_nested(self, key: NestedKey) -> TensorDictParams:
        """Adds an empty sub-tensordict at ``key``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> list(TensorDictParams(TensorDict()).create_nested("a").keys())
            ['a']
        """
        with self._writing() as content:
            content.create_nested(key)
        return self

    def exclude(self, *keys: NestedKey, inplace: bool = False) -> TensorDictBase:
        """A ``TensorDict`` without ``keys`` (or, ``inplace``, those keys removed here).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(1), b=torch.ones(1)))
            >>> list(params.exclude("a").keys())
            ['b']
        """
        if not inplace:
            return self._param_td.exclude(*keys)
        with self._writing() as content:
            content.exclude(*keys, inplace=True)
        return self

    def select(
        self, *keys: NestedKey, inplace: bool = False, strict: bool = True
    ) -> TensorDictBase:
        """A ``TensorDict`` of ``keys`` (or, ``inplace``, the others removed here).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.ones(1), b=torch.ones(1)))
            >>> list(params.select("a").keys())
            ['a']
        """
        if not inplace:
            return self._param_td.select(*keys, strict=strict)
        with self._writing() as content:
            content.select(*keys, inplace=True, strict=strict)
        return self

    def flatten_keys(self, separator: str = ".", inplace: bool = False) -> TensorDictBase:
        """The entries with ``separator``-joined keys: a ``TensorDict``, or in place.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> list(TensorDictParams(TensorDict(a={"b": torch.ones(1)})).flatten_keys().keys())
            ['a.b']
        """
        if not inplace:
            return self._param_td.flatten_keys(separator)
        with self._writing() as content:
            content.flatten_keys(separator, inplace=True)
        return self

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> TensorDictBase:
        """The entries with keys split at ``separator``: a ``TensorDict``, or in place.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict({"a.b": torch.ones(1)})).unflatten_keys()["a", "b"]
            Parameter containing:
            tensor([1.], requires_grad=True)
        """
        if not inplace:
            return self._param_td.unflatten_keys(separator)
        with self._writing() as content:
            content.unflatten_keys(separator, inplace=True)
        return self

    def map(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: map a detached tensordict (``params.data``) instead.

        Raises:
            RuntimeError: always.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict()).map(print)
            Traceback (most recent call last):
            ...
            RuntimeError: map() does not run on a TensorDictParams: call it on params.data (or to_tensordict())
        """
        msg = (
            "map() does not run on a TensorDictParams: call it on params.data (or to_tensordict())"
        )
        raise RuntimeError(msg)

    # ------------------------------------------------------------------ copies and conversions
    def clone(self, recurse: bool = True, **kwargs: Any) -> TensorDictParams:
        """A new TensorDictParams with copies of the leaves, detached from any graph; tied leaves stay tied.

        Args:
            recurse (bool, optional): copy the leaves; ``False`` shares them. Defaults to ``True``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> p = torch.nn.Parameter(torch.zeros(1))
            >>> params = TensorDictParams(TensorDict(a=p, b=p))
            >>> copy = params.clone()
            >>> copy["a"] is copy["b"], copy["a"] is p
            (True, False)
        """
        if not recurse:
            return self._shallow_copy()
        memo: dict = {}

        def copy_leaf(tensor):
            found = memo.get(id(tensor))
            if found is not None:
                return found
            if isinstance(tensor, nn.Parameter):
                copied = nn.Parameter(tensor.data.clone(), requires_grad=tensor.requires_grad)
            else:
                copied = Buffer(tensor.data.clone())
            memo[id(tensor)] = copied
            return copied

        out = TensorDictParams(self._param_td.apply(copy_leaf), no_convert="skip")
        out.no_convert = self.no_convert
        return out

    def copy(self) -> TensorDictParams:
        """A new TensorDictParams sharing the same leaves.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(1)))
            >>> params.copy()["a"] is params["a"]
            True
        """
        return self._shallow_copy()

    def _converted(self, converted: TensorDictBase) -> TensorDictParams:
        if converted is self._param_td:
            return self
        leaves = dict(self._param_td.items(True, True))
        out = converted.named_apply(
            lambda key, new: _wrap_like(new, leaves.get(key, new)), nested_keys=True
        )
        wrapped = TensorDictParams(out, no_convert="skip")
        wrapped.no_convert = self.no_convert
        return wrapped

    def to(self, *args: Any, **kwargs: Any) -> TensorDictParams:
        """A TensorDictParams on another device or dtype (parameters stay parameters); ``self`` if nothing changes.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(1), device="cpu"))
            >>> isinstance(params.to(torch.float64)["a"], torch.nn.Parameter)
            True
            >>> params.to("cpu") is params
            True
        """
        return self._converted(self._param_td.to(*args, **kwargs))

    def cpu(self, **kwargs: Any) -> TensorDictParams:
        """The TensorDictParams on the CPU (``self`` if already there).

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a=torch.zeros(1), device="cpu"))
            >>> params.cpu() is params
            True
        """
        return self._converted(self._param_td.cpu(**kwargs))

    def cuda(self, device: DeviceType | None = None, **kwargs: Any) -> TensorDictParams:
        """The TensorDictParams on a CUDA device.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> callable(TensorDictParams(TensorDict()).cuda)
            True
        """
        return self._converted(self._param_td.cuda(device=device, **kwargs))

    def _apply(self, fn, recurse: bool = True):
        # nn.Module.to()/half()/... of a module holding this one: parameters get their new data
        # in place; buffers would be replaced by new tensors, so their data is swapped back in.
        buffers = dict(self._buffers)
        nn.Module._apply(self, fn, recurse=recurse)
        for name, old in buffers.items():
            new = self._buffers[name]
            if new is not old:
                old.data = new.data
                self._buffers[name] = old
        devices = {
            leaf.device
            for leaf in self._param_td.values(True, True)
            if isinstance(leaf, torch.Tensor)
        }
        if self._param_td.device is not None and devices and devices != {self._param_td.device}:
            self._param_td.auto_device_()
        return self

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A ``TensorDict`` with copies of the leaves (clones, which stay in the graph).

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility; ``None`` entries of
                tensorclasses are kept either way. Defaults to ``None``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> type(TensorDictParams(TensorDict(a=torch.zeros(1))).to_tensordict()["a"]).__name__
            'Tensor'
        """
        return self._param_td.to_tensordict()

    # ------------------------------------------------------------------ state dicts
    def state_dict(
        self,
        destination: dict | None = None,
        prefix: str = "",
        keep_vars: bool = False,
        flatten: bool = True,
    ) -> dict:
        """The leaves keyed by ``"."``-joined keys (after ``prefix``), as ``nn.Module.state_dict`` gives them.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> list(TensorDictParams(TensorDict(a={"b": torch.zeros(1)})).state_dict())
            ['a.b']
        """
        return self._param_td.state_dict(
            destination=destination, prefix=prefix, keep_vars=keep_vars, flatten=flatten
        )

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        assign: bool = False,
        from_flatten: bool | None = None,
    ) -> TensorDictParams:
        """Copies the tensors of a state dict into the leaves, outside autograd; returns ``self``.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> params = TensorDictParams(TensorDict(a={"b": torch.zeros(1)}))
            >>> params.load_state_dict({"a.b": torch.ones(1)})["a", "b"].data
            tensor([1.])
        """
        tensors = {
            key: value for key, value in state_dict.items() if isinstance(value, torch.Tensor)
        }
        self._param_td.data.load_state_dict(tensors, strict=strict)
        return self

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        # called by nn.Module.load_state_dict of a module holding this one
        data = self._param_td.data
        for key in self._param_td.keys(True, True):
            if not isinstance(self._param_td.get(key), torch.Tensor):
                continue
            name = prefix + (key if isinstance(key, str) else ".".join(key))
            if name not in state_dict:
                missing_keys.append(name)
                continue
            value = state_dict[name]
            current = data.get(key)
            if value.shape != current.shape:
                error_msgs.append(
                    f"size mismatch for {name}: copying a param with shape {tuple(value.shape)}, the current one has {tuple(current.shape)}"
                )
                continue
            with torch.no_grad():
                current.copy_(value)

    # ------------------------------------------------------------------ memory mapping
    def memmap_(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Not supported: a TensorDictParams is not memory-mapped in place (use :meth:`memmap`).

        Raises:
            RuntimeError: always.

        Examples:
            >>> from tensordict.nn import TensorDictParams
            >>> TensorDictParams(TensorDict()).memmap_()
            Traceback (most recent call last):
            ...
            RuntimeError: a TensorDictParams cannot be memory-mapped in place; use memmap() or memmap_like()
        """
        msg = "a TensorDictParams cannot be memory-mapped in place; use memmap() or memmap_like()"
        raise RuntimeError(msg)

    # ------------------------------------------------------------------ module side
    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            content = self.__dict__.get("_param_td")
            if content is not None:
                try:
                    return getattr(content, name)
                except AttributeError:
                    pass
        return nn.Module.__getattr__(self, name)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        # the with-blocks open over it (tensordict._blocks) do not travel
        state.pop("_write_back", None)
        state.pop("_blocks", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"TensorDictParams(params={self._param_td})"

    def __hash__(self) -> int:
        return id(self)


def _as_params(td: TensorDictBase, lock: bool = False) -> TensorDictParams:
    """What ``from_module(..., as_module=True)`` returns: every tensor a parameter or buffer as it is."""
    return TensorDictParams(td, no_convert=True, lock=lock)


# from_module(as_module=True) / from_modules(as_module=True) return a TensorDictParams
CONVERTERS["as_module"] = _as_params
