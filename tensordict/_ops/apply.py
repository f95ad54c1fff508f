"""``apply`` and ``named_apply``: a function over every leaf, written once for every class.

Classes specialise ``_fast_apply`` (one level at a time) for their own layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._helpers import shape_of
from tensordict._keys import NestedKey
from tensordict._nontensor import NonTensorData
from tensordict._ops._contract import Contract
from tensordict._typing import DeviceType, ShapeType, T
from tensordict._unbatched import is_unbatched
from tensordict.errors import BatchSizeError, LockedError


def check_result(key: NestedKey, result: Any, batch_size: torch.Size) -> None:
    """Raises when ``result`` (what ``fn`` returned for ``key``) does not start with ``batch_size``.

    Shared with the classes' fast paths, so that every ``apply`` refuses the same results.
    """
    if is_unbatched(result):
        return  # it has no batch dims: the tensordict gives it its batch size
    if isinstance(result, torch.Tensor):
        shape = result.shape if not result.is_nested else shape_of(result)
    elif is_tensor_collection(result):
        shape = result.batch_size
    else:
        return  # a non-tensor result is stored as it is
    n = len(batch_size)
    if len(shape) >= n and all(a == b for a, b in zip(shape[:n], batch_size)):
        return
    msg = (
        f"batch dimension mismatch for key {key!r} in apply: fn returned shape {list(shape)}, "
        f"whose leading dimensions are not the batch size {list(batch_size)}; pass "
        "batch_size= to apply to give the result another batch size"
    )
    raise BatchSizeError(msg)


def tensor_leaves(td: TensorCollection) -> list:
    """``(key, tensor)`` of every tensor leaf of ``td``, nested keys as tuples, in walk order.

    The walk is ``apply``'s, so a lazy stack gives its members' own tensors, never
    stacked copies; every ``apply`` over the same tree visits the leaves in this order.
    """
    found: list = []

    def record(key, value):
        if isinstance(value, torch.Tensor):
            found.append((key, value))

    td._fast_apply(record, named=True, nested_keys=True)
    return found


def _threaded(apply_once, fn, num_threads: int):
    """Runs ``apply_once`` with ``fn`` called on a pool of ``num_threads`` threads.

    A first walk submits one call of ``fn`` per leaf (in the walk's order) and builds
    nothing; the second walk, over the same tree in the same order, takes each result
    as it comes, so the result is exactly what a walk without threads gives.
    """
    futures = []
    with ThreadPoolExecutor(max_workers=num_threads) as pool:

        def submit(*args):
            futures.append(pool.submit(fn, *args))

        try:
            apply_once(submit, inplace=False, check=False)
            results = iter(futures)
            return apply_once(lambda *args: next(results).result())
        finally:
            for future in futures:
                future.cancel()


def _check_out(out, batch_size) -> None:
    """Raises when the tensordict ``out`` cannot receive the results of an apply."""
    if out.is_locked:
        msg = "apply cannot write into out=, which is locked; unlock it first (out.unlock_())"
        raise LockedError(msg)
    if batch_size is not None and batch_size != out.batch_size:
        msg = (
            f"apply was given batch_size={list(batch_size)} and an out= of batch size "
            f"{list(out.batch_size)}; they must be equal"
        )
        raise BatchSizeError(msg)


def _without_emptied(result, source, every: bool):
    """``result`` of an apply without the sub-tensordicts it left empty, or None when it is empty.

    ``every`` drops every empty one; otherwise only those whose ``source`` held entries
    (an empty sub-tensordict that was empty before is kept). Only key names are read, so
    that a lazy stack's leaves are never stacked.
    """
    keys = _tuple_keys(result)
    leaves = _tuple_keys(result, leaves_only=True)
    had = _tuple_keys(source) if not every else set()
    kept = set(keys)
    for key in sorted(keys - leaves, key=len, reverse=True):  # the deepest first
        if any(k[: len(key)] == key and k != key for k in kept):
            continue  # something is left under it
        if every or any(k[: len(key)] == key and k != key for k in had):
            del result[key]
            kept.discard(key)
    if kept:
        return result
    if every or had:
        return None
    return result


def _tuple_keys(td, leaves_only: bool = False) -> set:
    """Every key of ``td`` (sub-tensordicts and non-tensor entries included) as a tuple."""
    return {
        key if isinstance(key, tuple) else (key,)
        for key in td.keys(True, leaves_only, is_leaf=is_leaf_nontensor)
    }


def _write(writes: list) -> None:
    """Performs the writes an in-place apply collected, once every result was checked."""
    for td, key, value, res in writes:
        if isinstance(value, torch.Tensor) and isinstance(res, torch.Tensor):
            value.copy_(res)
        else:
            td._set_str(key, res, inplace=False, validated=True)


def _inner(value):
    """The tensordict of a tensorclass instance, or the value itself."""
    return value._tensordict if getattr(type(value), "_is_tensorclass", False) else value


class ApplyMixin(Contract):
    """The apply family of every tensordict class (see ``TensorDictBase``).

    Calls: ``_get_str``, ``_items_level``, ``_new_like``, ``_set_str``, ``_tensordict``.
    """

    __slots__ = ()

    def apply(
        self: T,
        fn: Callable,
        *others: TensorCollection,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = NO_DEFAULT,
        names: Sequence[str | None] | None = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        filter_empty: bool | None = None,
        call_on_nested: bool = False,
        num_threads: int | None = None,
        out: TensorCollection | None = None,
        **constructor_kwargs: Any,
    ) -> T | None:
        """Applies ``fn`` to every leaf tensor and returns a tensordict of the results.

        Sub-tensordicts are walked and rebuilt; non-tensor entries are kept as they are.
        Every result must start with the batch size of its level (``batch_size`` when it is
        given, with a sub-tensordict's own extra dims beneath it); the results are all checked
        before anything is built or written, so a refused call changes nothing.

        Args:
            fn (callable): called as ``fn(leaf, *other_leaves)``; a None result drops the entry.
            *others (TensorDictBase): tensordicts whose leaves at the same keys are passed too.

        Keyword Args:
            batch_size (sequence of int, optional): the batch size of the result when ``fn``
                changes the batch dims. Defaults to None: this one.
            device (torch.device, optional): the device the result reports (nothing is moved).
            names (list of str, optional): the batch dimension names of the result.
            inplace (bool, optional): write the results into this tensordict. Defaults to False.
            default: passed to ``fn`` for a key missing from one of ``others``.
            filter_empty (bool, optional): what becomes of sub-tensordicts left empty: True
                drops every empty one (and returns None for an empty result), None (the
                default) drops those that held entries before, and returns None when
                nothing is left of a non-empty tensordict; False keeps them all.
            call_on_nested (bool, optional): call ``fn`` on sub-tensordicts. Defaults to False.
            num_threads (int, optional): call ``fn`` on a pool of that many threads; the
                result is the same as without. Defaults to None: no threads.
            out (TensorDictBase, optional): a tensordict that receives the results, and is
                returned: each result replaces the entry at its key (dtype and all), sub-tensordicts
                are written into, the other entries of ``out`` are kept. Defaults to None.
            is_leaf (callable, optional): given the class of an entry, whether it is a leaf;
                when it says so of non-tensor entries, ``fn`` is called on them too.
            **constructor_kwargs: accepted for compatibility; ignored.

        Returns:
            The new tensordict (this one with ``inplace``, ``out`` when given), or None when
            nothing is left (see ``filter_empty``).

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.
            BatchSizeError: (a ``RuntimeError``) if a result does not start with the batch size
                of its level, or ``batch_size`` differs from the batch size of ``out``.
            LockedError: (a ``RuntimeError``) if ``out`` is locked.

        Examples:
            >>> TensorDict({"a": {"b": torch.ones(2)}}, [2]).apply(lambda x: x * 3)["a", "b"]
            tensor([3., 3.])
            >>> TensorDict({"a": torch.ones(4, 2)}, [4]).apply(lambda x: x[:2], batch_size=[2])
            TensorDict(batch_size=[2], fields={a: f32[2]})
        """
        options = dict(
            batch_size=None if batch_size is None else torch.Size(batch_size),
            names=names,
            device=device,
            default=default,
            call_on_nested=call_on_nested,
        )
        is_leaf = constructor_kwargs.get("is_leaf")
        if is_leaf is not None and is_leaf(NonTensorData):
            options["leaf_non_tensor"] = True  # only then: the classes' fast paths take no option
        return self._apply_checked(
            fn,
            others,
            options,
            inplace=inplace,
            num_threads=num_threads,
            filter_empty=filter_empty,
            out=out,
        )

    def _apply_checked(self, fn, others, options: dict, inplace, num_threads, filter_empty, out):
        """The public apply calls: results checked, in-place writes deferred, threads optional."""
        if out is not None:
            _check_out(out, options["batch_size"])
        writes = [] if inplace else None
        dropped = []  # a None result: only then can a sub-tensordict have been emptied
        if filter_empty is not False and not inplace and out is None:
            user_fn = fn

            def fn(*args):
                res = user_fn(*args)
                if res is None:
                    dropped.append(True)
                return res

        def apply_once(f, inplace=inplace, check=True):
            return self._fast_apply(
                f, *others, inplace=inplace, checked=check, writes=writes, **options
            )

        if num_threads:
            result = _threaded(apply_once, fn, int(num_threads))
        else:
            result = apply_once(fn)
        if inplace:
            _write(writes)
            return self
        if out is not None:
            out.update(result)
            return out
        if filter_empty is True or (filter_empty is None and dropped):
            return _without_emptied(result, self, filter_empty is True)
        return result

    def apply_(self: T, fn: Callable, *others: TensorCollection, **kwargs: Any) -> T:
        """Applies ``fn`` to every leaf and writes the results into this tensordict; returns it.

        Every result is checked against the batch size before the first one is written, so a
        refused call leaves the tensordict unchanged.

        Args:
            fn (callable): called as ``fn(leaf, *other_leaves)``; a None result changes nothing.
            *others (TensorDictBase): tensordicts whose leaves are passed to ``fn`` too.

        Keyword Args:
            **kwargs: passed on to :meth:`apply` (``default``, ``call_on_nested``,
                ``num_threads``, ...).

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.
            BatchSizeError: (a ``RuntimeError``) if a result does not start with the batch size.

        Examples:
            >>> TensorDict({"a": torch.ones(2)}, [2]).apply_(lambda x: x + 1)["a"]
            tensor([2., 2.])
        """
        return self.apply(fn, *others, inplace=True, **kwargs)

    def named_apply(
        self: T,
        fn: Callable,
        *others: TensorCollection,
        nested_keys: bool = False,
        batch_size: ShapeType | None = None,
        names: Sequence[str | None] | None = NO_DEFAULT,
        device: DeviceType | None = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        call_on_nested: bool = False,
        num_threads: int | None = None,
        out: TensorCollection | None = None,
        **kwargs: Any,
    ) -> T:
        """Applies ``fn`` to each leaf and its key, and returns a tensordict of the results.

        The results are checked against the batch size as in :meth:`apply`.

        Args:
            fn (callable): called as ``fn(key, leaf, *other_leaves)``; None drops the entry.
            *others (TensorDictBase): tensordicts whose leaves are passed to ``fn`` too.

        Keyword Args:
            nested_keys (bool, optional): pass the full key (a tuple when nested), not the key
                at the leaf's level. Defaults to False.
            batch_size (sequence of int, optional): the batch size of the result when ``fn``
                changes the batch dims. Defaults to None: this one.
            names (list of str, optional): the batch dimension names of the result.
            device (torch.device, optional): the device the result reports (nothing is moved).
            inplace (bool, optional): write the results into this tensordict. Defaults to False.
            default: passed to ``fn`` for a key missing from one of ``others``.
            call_on_nested (bool, optional): call ``fn`` on sub-tensordicts. Defaults to False.
            num_threads (int, optional): call ``fn`` on a pool of that many threads, as in
                :meth:`apply`. Defaults to None: no threads.
            out (TensorDictBase, optional): a tensordict that receives the results, and is
                returned, as in :meth:`apply`. Defaults to None.
            **kwargs: accepted for compatibility; ignored.

        Returns:
            The new tensordict (never None, unlike :meth:`apply`), or this one with ``inplace``.

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.
            BatchSizeError: (a ``RuntimeError``) if a result does not start with the batch size
                of its level.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.named_apply(lambda k, x: x if k == ("b", "c") else None, nested_keys=True)
            TensorDict(batch_size=[2], fields={b: {c: f32[]}})
        """
        return self._apply_checked(
            fn,
            others,
            dict(
                named=True,
                nested_keys=nested_keys,
                batch_size=None if batch_size is None else torch.Size(batch_size),
                names=names,
                device=device,
                default=default,
                call_on_nested=call_on_nested,
            ),
            inplace=inplace,
            num_threads=num_threads,
            filter_empty=False,
            out=out,
        )

    def _fast_apply(
        self,
        fn,
        *others,
        named: bool = False,
        nested_keys: bool = False,
        prefix: tuple = (),
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        call_on_nested: bool = False,
        checked: bool = False,
        writes: list | None = None,
        filter_empty: bool | None = None,
        leaf_non_tensor: bool = False,
    ):
        """The engine of :meth:`apply` and :meth:`named_apply`, one level at a time (classes specialise it).

        ``checked`` checks each result against the level's new batch size; ``writes``
        (with ``inplace``) collects the writes instead of doing them; ``leaf_non_tensor``
        calls ``fn`` on the non-tensor entries too. With ``filter_empty=True`` a level whose
        result holds nothing gives None (and is left out of its parent); torchrl calls this
        hook with it.
        """
        out: dict = {}
        new_bs = self.batch_size if batch_size is None or inplace else torch.Size(batch_size)
        for key, value in list(self._items_level()):
            other_values = []
            for other in others:
                ov = other._get_str(key, None) if other is not None else None
                if ov is None:
                    if default is NO_DEFAULT:
                        msg = f"key {prefix + (key,) if prefix else key!r} is missing in one of the other tensordicts passed to apply"
                        raise KeyError(msg)
                    ov = default
                other_values.append(ov)
            full = prefix + (key,)
            as_leaf = leaf_non_tensor if is_non_tensor(value) else call_on_nested
            if is_tensor_collection(value) and not as_leaf:
                # with a new batch size, sub-tensordicts get exactly that batch size (their
                # own further dims are dropped), as in the well-known API
                if is_non_tensor(value):  # the entry's own hook: no function maps a value
                    size = batch_size
                    if size is not None:  # its own further dims stay, as a tensor's features do
                        size = size + value.batch_size[len(self.batch_size) :]
                    res = value._fast_apply(fn, *other_values, batch_size=size, device=device)
                else:
                    # a tensorclass among the others is walked through its tensordict
                    res = value._fast_apply(
                        fn,
                        *[_inner(v) for v in other_values],
                        named=named,
                        nested_keys=nested_keys,
                        prefix=full,
                        batch_size=batch_size,
                        names=NO_DEFAULT,
                        device=device,
                        inplace=inplace,
                        default=default,
                        checked=checked,
                        writes=writes,
                        filter_empty=filter_empty,
                        call_on_nested=call_on_nested,
                        leaf_non_tensor=leaf_non_tensor,
                    )
            else:
                if named:
                    name = (full if len(full) > 1 else key) if nested_keys else key
                    res = fn(name, value, *other_values)
                else:
                    res = fn(value, *other_values)
                if checked and res is not None:
                    check_result(full if prefix else key, res, new_bs)
            if inplace:
                if res is not None and res is not value:
                    if writes is not None:
                        writes.append((self, key, value, res))
                    elif isinstance(value, torch.Tensor) and isinstance(res, torch.Tensor):
                        value.copy_(res)
                    else:
                        self._set_str(key, res, inplace=False, validated=True)
                continue
            if res is not None:
                out[key] = res
        if inplace:
            return self
        if filter_empty and not out:
            return None
        if names is NO_DEFAULT:
            names = self.names if batch_size is None else None
        return self._new_like(
            out, new_bs, names=names, device=self.device if device is NO_DEFAULT else device
        )
