"""Keyword calls of functions that take a tensordict: ``module(obs=x)`` instead of ``module(td)``.

:class:`dispatch` decorates a function (or method) whose first argument is named
``tensordict``. Called with a tensordict, the function runs as it is. Called with
tensors, the wrapper puts them in a new tensordict at the input keys, calls the
function, and hands back the tensors at the output keys.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict._collection import is_tensor_collection
from tensordict._keys import NestedKey, _key_parts
from tensordict._td import TensorDict
from tensordict.nn.errors import DispatchArgumentError
from tensordict.nn.utils import _dispatch_td_nn_modules, _set_skip_existing_None

__all__ = ["dispatch"]


def _keyword(key: NestedKey, separator: str) -> str:
    return separator.join(_key_parts(key))


def _first_argument(func: Callable) -> tuple[bool, str | None]:
    """Whether ``func`` is an unbound method (``self`` first), and the name of its data argument."""
    names = list(inspect.signature(func).parameters)
    is_method = bool(names) and names[0] == "self" and not inspect.ismethod(func)
    rest = names[1:] if is_method else names
    return is_method, (rest[0] if rest else None)


class dispatch:
    """Lets a function that takes a tensordict be called with tensors, by key.

    Decorate a function or a method whose first argument (after ``self``) is
    named ``tensordict``. Called with a tensordict (first, or as the keyword
    ``tensordict``), it runs unchanged. Called with tensors, positionally in the
    order of the input keys or as keywords named after them (a nested key's
    parts joined with ``separator``), the tensors go into a new tensordict, the
    function runs on it, and the call returns the entries at the output keys:
    one tensor for one key, else a tuple. An output key ``"_"`` is left out.
    Other keyword arguments reach the function.

    The modules of ``tensordict.nn`` decorate their ``forward`` with it. Setting
    ``DISPATCH_TDNN_MODULES=0`` before importing tensordict turns keyword calls
    off (the decorator then returns the function itself).

    Args:
        separator (str, optional): joins the parts of a nested key into a keyword.
            Defaults to ``"_"``.
        source (str or list of NestedKey, optional): the input keys, or the name
            of the attribute of ``self`` holding them. Defaults to ``"in_keys"``.
        dest (str or list of NestedKey, optional): the output keys, or the name of
            the attribute holding them. Defaults to ``"out_keys"``.
        auto_batch_size (bool, optional): give the tensordict built from tensors
            the longest leading shape they share; else an empty batch size.
            Defaults to ``True``.

    Raises:
        RuntimeError: when decorating, if the first argument is not named
            ``tensordict``; when calling, if an input is given both by position
            and by keyword (:class:`~tensordict.nn.errors.DispatchArgumentError`).

    Examples:
        >>> from tensordict.nn import dispatch
        >>> class AddOne(torch.nn.Module):
        ...     in_keys = [("a", "c"), "d"]
        ...     out_keys = ["b"]
        ...
        ...     @dispatch(separator="__")
        ...     def forward(self, tensordict):
        ...         tensordict["b"] = tensordict["a", "c"] + tensordict["d"]
        ...         return tensordict
        >>> module = AddOne()
        >>> module(a__c=torch.zeros(2), d=torch.ones(2))
        tensor([1., 1.])
        >>> module(torch.zeros(2), torch.ones(2))
        tensor([1., 1.])
        >>> module(TensorDict({("a", "c"): torch.zeros(()), "d": torch.ones(())}))["b"]
        tensor(1.)

        A plain function names its keys in the decorator:

        >>> @dispatch(source=["x"], dest=["y"])
        ... def double(tensordict):
        ...     return tensordict.set("y", tensordict["x"] * 2)
        >>> double(x=torch.ones(2))
        tensor([2., 2.])
    """

    DEFAULT_SEPARATOR = "_"
    DEFAULT_SOURCE = "in_keys"
    DEFAULT_DEST = "out_keys"

    def __new__(
        cls,
        separator: str | Callable = DEFAULT_SEPARATOR,
        source: str | Sequence[NestedKey] = DEFAULT_SOURCE,
        dest: str | Sequence[NestedKey] = DEFAULT_DEST,
        auto_batch_size: bool = True,
    ) -> dispatch | Callable:
        if callable(separator):  # used bare, as @dispatch
            self = super().__new__(cls)
            self.__init__(cls.DEFAULT_SEPARATOR, source, dest, auto_batch_size)
            return self(separator)
        return super().__new__(cls)

    def __init__(
        self,
        separator: str = DEFAULT_SEPARATOR,
        source: str | Sequence[NestedKey] = DEFAULT_SOURCE,
        dest: str | Sequence[NestedKey] = DEFAULT_DEST,
        auto_batch_size: bool = True,
    ) -> None:
        self.separator = separator
        self.source = source
        self.dest = dest
        self.auto_batch_size = auto_batch_size

    def __call__(self, func: Callable) -> Callable:
        is_method, first = _first_argument(func)
        if first != "tensordict":
            msg = f"dispatch decorates a function whose first argument (after self) is named 'tensordict'; {getattr(func, '__qualname__', func)!r} takes {first!r}"
            raise RuntimeError(msg)
        if not _dispatch_td_nn_modules():
            return func
        bound_self = func.__self__ if inspect.ismethod(func) else None

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if is_method:
                owner, args = args[0], args[1:]
            else:
                owner = bound_self
            if args and is_tensor_collection(args[0]):
                return self._call(func, is_method, owner, args, kwargs)
            if not _dispatch_td_nn_modules():
                return self._call(func, is_method, owner, args, kwargs)
            source = self._keys(self.source, owner, "source")
            data = kwargs.get("tensordict")
            if (
                not args
                and is_tensor_collection(data)
                and all(_keyword(key, self.separator) != "tensordict" for key in source)
            ):
                kwargs = dict(kwargs)
                return self._call(func, is_method, owner, (kwargs.pop("tensordict"),), kwargs)
            tensordict, args, kwargs = self._gather(source, args, kwargs)
            out = self._call(func, is_method, owner, (tensordict, *args), kwargs)
            dest = self._keys(self.dest, owner, "dest")
            values = tuple(out.get(key) for key in dest if key != "_")
            return values[0] if len(values) == 1 else values

        return wrapper

    @staticmethod
    def _call(func, is_method, owner, args, kwargs):
        if is_method:
            return func(owner, *args, **kwargs)
        return func(*args, **kwargs)

    @staticmethod
    def _keys(keys, owner, what: str) -> list:
        if isinstance(keys, str):
            if owner is None:
                msg = f"dispatch on a plain function needs its {what} keys as a list, not the attribute name {keys!r}"
                raise DispatchArgumentError(msg)
            return list(getattr(owner, keys))
        return list(keys)

    def _gather(self, source: list, args: tuple, kwargs: dict):
        kwargs = dict(kwargs)
        values = {}
        for key in source:
            name = _keyword(key, self.separator)
            if args:
                if name in kwargs:
                    msg = (
                        f"the input {key!r} was given both by position and as the keyword {name!r}"
                    )
                    raise DispatchArgumentError(msg)
                values[key], args = args[0], args[1:]
            elif name in kwargs:
                values[key] = kwargs.pop(name)
        tensordict = TensorDict({}, batch_size=torch.Size([]))
        for key, value in values.items():
            tensordict.set(key, value)
        if self.auto_batch_size:
            tensordict.auto_batch_size_()
        return tensordict, args, kwargs


def _module_forward(func: Callable) -> Callable:
    """Wraps the ``forward`` of a module of ``tensordict.nn``: keyword calls, then the enclosing skip-existing mode."""
    return dispatch(auto_batch_size=False)(_set_skip_existing_None()(func))
