"""Modules that take and return tensorclasses, and their tensordict-module wrapper."""

from __future__ import annotations

import abc
import dataclasses
import typing
from typing import Any, Generic, TypeVar

from torch import nn

from tensordict._td import TensorDict
from tensordict.errors import InvalidArgumentError
from tensordict.nn.common import TensorDictModuleBase
from tensordict.nn.dispatch import dispatch
from tensordict.nn.utils import _user_warn
from tensordict.tensorclass import TensorClass

__all__ = ["TensorClassModuleBase", "TensorClassModuleWrapper"]

InputClass = TypeVar("InputClass")
OutputClass = TypeVar("OutputClass")


def _is_tensorclass_type(value) -> bool:
    return isinstance(value, type) and issubclass(value, TensorClass)


def _tensorclass_keys(cls: type) -> list:
    """Every leaf key of a tensorclass type, a nested tensorclass field giving tuple keys."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # annotations naming what the class's module cannot see
        hints = {}
    keys = []
    for field in dataclasses.fields(cls):
        kind = hints.get(field.name, field.type)
        if _is_tensorclass_type(kind):
            keys.extend((field.name, *sub) for sub in _tensorclass_keys(kind))
        else:
            keys.append((field.name,))
    return keys


class TensorClassModuleBase(Generic[InputClass, OutputClass], abc.ABC, nn.Module):
    """The base of modules from one tensorclass (or tensor) type to another.

    Subclass ``TensorClassModuleBase[InputType, OutputType]`` and write
    :meth:`forward`; the subscript sets ``input_type`` and ``output_type``.
    :meth:`as_td_module` gives a tensordict module doing the same on tensordicts.

    Raises:
        ValueError: at subclassing, if the base is not subscripted with the types.

    Examples:
        >>> from tensordict import TensorClass
        >>> from tensordict.nn import TensorClassModuleBase
        >>> class Pair(TensorClass):
        ...     a: torch.Tensor
        ...     b: torch.Tensor
        >>> class Swap(TensorClassModuleBase[Pair, Pair]):
        ...     def forward(self, x):
        ...         return Pair(a=x.b, b=x.a, batch_size=x.batch_size)
        >>> Swap()(Pair(a=1, b=2, batch_size=[])).a
        tensor(2)
        >>> Swap().as_td_module()(TensorDict(a=1, b=2))["a"]
        tensor(2)
    """

    input_type: type
    output_type: type

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is TensorClassModuleBase:
                args = typing.get_args(base)
                if not args:
                    msg = (
                        f"{cls.__name__} must subclass TensorClassModuleBase[InputType, OutputType]"
                    )
                    raise InvalidArgumentError(msg)
                cls.input_type, cls.output_type = args

    @abc.abstractmethod
    def forward(self, x: InputClass) -> OutputClass:
        """Computes the output; subclasses write it.

        Args:
            x: an instance of the module's input tensorclass.

        Returns:
            An instance of the module's output tensorclass.

        Examples:
            >>> from tensordict.nn import TensorClassModuleBase
            >>> TensorClassModuleBase.forward.__isabstractmethod__
            True
        """

    def __call__(self, x):
        return super().__call__(x)

    def as_td_module(self) -> TensorClassModuleWrapper:
        """A tensordict module doing the same: its keys are the fields of the two types.

        Raises:
            ValueError: unless both types are tensorclasses.

        Examples:
            >>> from tensordict import TensorClass
            >>> from tensordict.nn import TensorClassModuleBase
            >>> class Pair(TensorClass):
            ...     a: torch.Tensor
            ...     b: torch.Tensor
            >>> class Same(TensorClassModuleBase[Pair, Pair]):
            ...     def forward(self, x):
            ...         return x
            >>> Same().as_td_module().in_keys
            ['a', 'b']
        """
        input_type = getattr(self, "input_type", None)
        output_type = getattr(self, "output_type", None)
        if not (_is_tensorclass_type(input_type) and _is_tensorclass_type(output_type)):
            msg = (
                "Only TensorClassModuleBase implementations with both input and output type as "
                f"TensorClass can be converted to TensorDictModule; {type(self).__name__} has "
                f"{input_type!r} -> {output_type!r}"
            )
            raise InvalidArgumentError(msg)
        return TensorClassModuleWrapper(self)


class TensorClassModuleWrapper(TensorDictModuleBase):
    """A :class:`TensorClassModuleBase` as a tensordict module: tensordict in, tensordict out.

    Args:
        module (TensorClassModuleBase): a module between two tensorclass types.

    Examples:
        >>> from tensordict import TensorClass
        >>> from tensordict.nn import TensorClassModuleBase
        >>> from tensordict.nn.tensorclass_module import TensorClassModuleWrapper
        >>> class Pair(TensorClass):
        ...     a: torch.Tensor
        ...     b: torch.Tensor
        >>> class Add(TensorClassModuleBase[Pair, Pair]):
        ...     def forward(self, x):
        ...         return Pair(a=x.a + x.b, b=x.b, batch_size=x.batch_size)
        >>> TensorClassModuleWrapper(Add()).out_keys
        ['a', 'b']
    """

    def __init__(self, module: TensorClassModuleBase) -> None:
        super().__init__()
        self.training = module.training
        self.tc_module = module
        self.in_keys = _tensorclass_keys(module.input_type)
        self.out_keys = _tensorclass_keys(module.output_type)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDict, *args: Any, **kwargs: Any) -> TensorDict:
        """Builds the input tensorclass from ``tensordict``, calls the module, returns its output as a tensordict.

        Args:
            tensordict (TensorDict): the input; its keys that are not fields of the input
                tensorclass are left out.
            *args: accepted for compatibility and ignored, with a ``FutureWarning``.
            **kwargs: accepted for compatibility and ignored, with a ``FutureWarning``.

        Returns:
            The module's output as a tensordict.

        Examples:
            >>> from tensordict import TensorClass
            >>> from tensordict.nn import TensorClassModuleBase
            >>> class One(TensorClass):
            ...     a: torch.Tensor
            >>> class Double(TensorClassModuleBase[One, One]):
            ...     def forward(self, x):
            ...         return One(a=x.a * 2, batch_size=x.batch_size)
            >>> Double().as_td_module().forward(TensorDict(a=1, extra=0))["a"]
            tensor(2)
        """
        if args or kwargs:
            ignored = (["positional arguments"] if args else []) + [repr(name) for name in kwargs]
            _user_warn(f"TensorClassModuleWrapper ignores {', '.join(ignored)}", FutureWarning)
        input_type = self.tc_module.input_type
        fields = {field.name for field in dataclasses.fields(input_type)}
        extra = [key for key in tensordict.keys() if key not in fields]
        if extra:
            tensordict = tensordict.exclude(*extra)
        return self.tc_module(input_type.from_tensordict(tensordict)).to_tensordict()
