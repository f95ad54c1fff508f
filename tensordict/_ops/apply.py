"""``apply`` and ``named_apply``: a function over every leaf, written once for every class.

Classes specialise ``_fast_apply`` (one level at a time) for their own layouts.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tensordict._collection import NO_DEFAULT, is_non_tensor, is_tensor_collection


class ApplyMixin:
    """The apply family of every tensordict class (see ``TensorDictBase``)."""

    __slots__ = ()

    def apply(
        self,
        fn: Callable,
        *others,
        batch_size=None,
        device=NO_DEFAULT,
        names=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        filter_empty: bool | None = None,
        call_on_nested: bool = False,
        **constructor_kwargs,
    ):
        """Applies ``fn`` to every leaf tensor and returns a tensordict of the results.

        Sub-tensordicts are walked and rebuilt; non-tensor entries are kept as they are.

        Args:
            fn (callable): called as ``fn(leaf, *other_leaves)``; a None result drops the entry.
            *others (TensorDictBase): tensordicts whose leaves at the same keys are passed too.

        Keyword Args:
            batch_size (sequence of int, optional): the batch size of the result when ``fn``
                changes the batch dims (not checked). Defaults to None: this one.
            device (torch.device, optional): the device the result reports (nothing is moved).
            names (list of str, optional): the batch dimension names of the result.
            inplace (bool, optional): write the results into this tensordict. Defaults to False.
            default: passed to ``fn`` for a key missing from one of ``others``.
            filter_empty (bool, optional): False returns an empty tensordict instead of None.
            call_on_nested (bool, optional): call ``fn`` on sub-tensordicts. Defaults to False.
            **constructor_kwargs: accepted for compatibility; ignored.

        Returns:
            The new tensordict (this one with ``inplace``), or None when no entry is left at the top
            level of a non-empty tensordict and ``filter_empty`` is not False.

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.

        Examples:
            >>> TensorDict({"a": {"b": torch.ones(2)}}, [2]).apply(lambda x: x * 3)["a", "b"]
            tensor([3., 3.])
        """
        out = self._fast_apply(
            fn,
            *others,
            batch_size=None if batch_size is None else torch.Size(batch_size),
            names=names,
            device=device,
            inplace=inplace,
            default=default,
            call_on_nested=call_on_nested,
        )
        if (
            not inplace
            and filter_empty is not False
            and not out._keys_level()
            and self._keys_level()
        ):
            return None  # fn returned None for every leaf
        return out

    def apply_(self, fn: Callable, *others, **kwargs):
        """Applies ``fn`` to every leaf and writes the results into this tensordict; returns it.

        Args:
            fn (callable): called as ``fn(leaf, *other_leaves)``; a None result changes nothing.
            *others (TensorDictBase): tensordicts whose leaves are passed to ``fn`` too.

        Keyword Args:
            **kwargs: passed on to :meth:`apply` (``default``, ``call_on_nested``, ...).

        Returns:
            The tensordict itself.

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.

        Examples:
            >>> TensorDict({"a": torch.ones(2)}, [2]).apply_(lambda x: x + 1)["a"]
            tensor([2., 2.])
        """
        return self.apply(fn, *others, inplace=True, **kwargs)

    def named_apply(
        self,
        fn: Callable,
        *others,
        nested_keys: bool = False,
        batch_size=None,
        names=NO_DEFAULT,
        device=NO_DEFAULT,
        inplace: bool = False,
        default=NO_DEFAULT,
        call_on_nested: bool = False,
        **kwargs,
    ):
        """Applies ``fn`` to each leaf and its key, and returns a tensordict of the results.

        Args:
            fn (callable): called as ``fn(key, leaf, *other_leaves)``; None drops the entry.
            *others (TensorDictBase): tensordicts whose leaves are passed to ``fn`` too.

        Keyword Args:
            nested_keys (bool, optional): pass the full key (a tuple when nested), not the key
                at the leaf's level. Defaults to False.
            batch_size, names, device, inplace, default, call_on_nested: as in :meth:`apply`.
            **kwargs: accepted for compatibility; ignored.

        Returns:
            The new tensordict (never None, unlike :meth:`apply`), or this one with ``inplace``.

        Raises:
            KeyError: if a key is missing from one of ``others`` and no ``default`` is given.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.named_apply(lambda k, x: x if k == ("b", "c") else None, nested_keys=True)
            TensorDict(batch_size=[2], fields={b: {c: f32[]}})
        """
        return self._fast_apply(
            fn,
            *others,
            named=True,
            nested_keys=nested_keys,
            batch_size=None if batch_size is None else torch.Size(batch_size),
            names=names,
            device=device,
            inplace=inplace,
            default=default,
            call_on_nested=call_on_nested,
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
    ):
        """The engine of :meth:`apply` and :meth:`named_apply`, one level at a time (classes specialise it)."""
        out: dict = {}
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
            if is_tensor_collection(value) and not (call_on_nested and not is_non_tensor(value)):
                if is_non_tensor(value) and not hasattr(value, "_with"):
                    res = value.clone()  # a stack of values: a copy, never shared
                elif is_non_tensor(value):
                    res = (
                        value
                        if batch_size is None
                        else value._with(batch_size + value.batch_size[self.batch_dims :])
                    )
                else:
                    sub_bs = (
                        None
                        if batch_size is None
                        else batch_size + value.batch_size[self.batch_dims :]
                    )
                    res = value._fast_apply(
                        fn,
                        *other_values,
                        named=named,
                        nested_keys=nested_keys,
                        prefix=full,
                        batch_size=sub_bs,
                        names=NO_DEFAULT,
                        device=device,
                        inplace=inplace,
                        default=default,
                        checked=checked,
                    )
            elif named:
                name = (full if len(full) > 1 else key) if nested_keys else key
                res = fn(name, value, *other_values)
            else:
                res = fn(value, *other_values)
            if inplace:
                if res is not None and res is not value:
                    if isinstance(value, torch.Tensor) and isinstance(res, torch.Tensor):
                        value.copy_(res)
                    else:
                        self._set_str(key, res, inplace=False, validated=True)
                continue
            if res is not None:
                out[key] = res
        if inplace:
            return self
        new_bs = self.batch_size if batch_size is None else batch_size
        if names is NO_DEFAULT:
            names = self.names if batch_size is None else None
        return self._new_like(
            out, new_bs, names=names, device=self.device if device is NO_DEFAULT else device
        )
