"""The class-level methods every tensorclass gets besides its own: builders and forwarders.

The builders (``C.from_schema``, ``C.stack``, ...) build what the TensorDict class
method of the same name builds and wrap it as the class. The forwarders make every
public tensordict method and property a class attribute too (``C.apply``, ``C.dtype``),
calling the instance's tensordict. :func:`install` puts them on the holder class that
:mod:`tensordict.tensorclass` copies onto each decorated class.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from tensordict._td import TensorDict
from tensordict.base import TensorDictBase

# Where the holder class lives, so that the generated functions pickle by reference.
_HOLDER_MODULE = "tensordict.tensorclass"

# Each builds a TensorDict with the TensorDict class method of the same name, then
# wraps it as the class. (name, what the result holds, doctest lines after the class)
_CLASS_BUILDERS = (
    (
        "from_schema",
        "zero-filled entries of the schema's shapes and dtypes",
        ">>> Point.from_schema({'x': ([2], torch.float32)}, batch_size=[3]).x.shape\n"
        "torch.Size([3, 2])",
    ),
    (
        "from_any",
        "the converted object (dict, dataclass, named tuple, pytree, ...)",
        ">>> Point.from_any({'x': torch.ones(2)}).x\ntensor([1., 1.])",
    ),
    (
        "from_namedtuple",
        "the named tuple's fields",
        ">>> from collections import namedtuple\n"
        ">>> Point.from_namedtuple(namedtuple('P', 'x')(torch.ones(2))).x\ntensor([1., 1.])",
    ),
    (
        "from_tuple",
        'the tuple\'s items under the keys "0", "1", ... (fields of no class: only an empty '
        "tuple wraps)",
        ">>> Point.from_tuple(()).x is None\nTrue",
    ),
    (
        "from_pytree",
        "the pytree's leaves and its ``_pytree_type`` records (a field of no class, so "
        "it raises: it exists for the well-known API's sake)",
        ">>> Point.from_pytree({'x': torch.zeros(2)})\nTraceback (most recent call last):\n"
        "...\ntensordict.errors.UnknownFieldError: cannot wrap the tensordict entry "
        "'_pytree_type'...",
    ),
    (
        "from_struct_array",
        "the structured array's fields",
        ">>> import numpy as np\n"
        ">>> Point.from_struct_array(np.zeros(3, dtype=[('x', 'f4')])).x\n"
        "tensor([0., 0., 0.])",
    ),
    (
        "from_module",
        "the module's parameters and buffers",
        ">>> @tensorclass\n... class Linear:\n...     weight: torch.Tensor\n...     bias: torch.Tensor\n"
        ">>> Linear.from_module(torch.nn.Linear(3, 2)).weight.shape\ntorch.Size([2, 3])",
    ),
    (
        "from_modules",
        "the modules' parameters and buffers, stacked",
        ">>> @tensorclass\n... class Linear:\n...     weight: torch.Tensor\n...     bias: torch.Tensor\n"
        ">>> Linear.from_modules(torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)).batch_size\n"
        "torch.Size([2])",
    ),
    (
        "from_dataclass",
        "the dataclass instance's fields (with ``as_tensorclass=True``, the instance of the "
        "new tensorclass, returned as it is)",
        ">>> from dataclasses import dataclass\n>>> @dataclass\n... class P:\n...     x: torch.Tensor\n"
        ">>> Point.from_dataclass(P(torch.ones(2))).x\ntensor([1., 1.])",
    ),
    (
        "fromkeys",
        "one value under every key",
        ">>> Point.fromkeys(['x'], 0).x\ntensor(0)",
    ),
    (
        "stack",
        "the stacked instances or tensordicts",
        ">>> p = Point(x=torch.zeros(3), batch_size=[3])\n"
        ">>> Point.stack([p, p]).batch_size\ntorch.Size([2, 3])",
    ),
    (
        "cat",
        "the concatenated instances or tensordicts",
        ">>> p = Point(x=torch.zeros(3), batch_size=[3])\n"
        ">>> Point.cat([p, p]).batch_size\ntorch.Size([6])",
    ),
    (
        "lazy_stack",
        "the instances or tensordicts stacked lazily",
        ">>> p = Point(x=torch.zeros(3), batch_size=[3])\n"
        ">>> Point.lazy_stack([p, p]).batch_size\ntorch.Size([2, 3])",
    ),
    (
        "maybe_dense_stack",
        "the instances or tensordicts stacked densely when they allow it, lazily otherwise",
        ">>> p = Point(x=torch.zeros(3), batch_size=[3])\n"
        ">>> Point.maybe_dense_stack([p, p]).batch_size\ntorch.Size([2, 3])",
    ),
)


def as_class(cls, result, name: str):
    """``result`` (what ``TensorDict.<name>`` built) as an instance of ``cls``."""
    if getattr(type(result), "_is_tensorclass", False):
        return result
    if not isinstance(result, TensorDictBase):
        msg = f"{cls.__name__}.{name}() built a {type(result).__name__}, not a tensordict"
        raise TypeError(msg)
    return cls.from_tensordict(result)


def _class_builder(name: str, what: str, example: str) -> classmethod:
    built_by = inspect.getattr_static(TensorDict, name).__func__

    def builder(cls, *args, **kwargs):
        return as_class(cls, built_by(TensorDict, *args, **kwargs), name)

    builder.__name__ = name
    builder.__qualname__ = f"_TensorClassMethods.{name}"
    builder.__module__ = _HOLDER_MODULE
    builder.__signature__ = inspect.signature(built_by)
    lines = "\n".join("    " + line for line in example.splitlines())
    builder.__doc__ = (
        f"Builds an instance of the class holding {what}.\n\n"
        f"Takes the arguments of :meth:`TensorDict.{name}`, builds that tensordict, and wraps "
        "it as this class:\nevery top-level key must be a field, and the fields it lacks are "
        f"``None``.\n\nReturns:\n    An instance of this class.\n\nRaises:\n"
        "    UnknownFieldError: (a ``ValueError``) if a key of the result is not a field.\n"
        f"    Whatever :meth:`TensorDict.{name}` raises for its arguments.\n\n"
        "Examples:\n    >>> @tensorclass\n    ... class Point:\n    ...     x: torch.Tensor\n"
        f"{lines}\n"
    )
    return classmethod(builder)


# Every public tensordict method and property that the class does not define itself is
# also a class attribute (``C.apply``, ``C.dtype``, as the well-known API has them); each
# calls the instance's tensordict and wraps the result, as ``__getattr__`` does for the rest.
def _forwarded_method(name: str, doc: str | None, forward: Callable):
    def method(self, *args, **kwargs):
        return forward(self, name, getattr(self._tensordict, name))(*args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"_TensorClassMethods.{name}"
    method.__module__ = _HOLDER_MODULE  # pickles by reference, as a written method would
    method.__doc__ = doc
    return method


def _forwarded_property(name: str, prop: property, unwrap: Callable, wrapped: bool) -> property:

    def get(self):
        value = getattr(self._tensordict, name)
        return self._wrap(value) if wrapped else value

    def put(self, value) -> None:
        setattr(self._tensordict, name, unwrap(value))

    return property(get, put if prop.fset is not None else None, doc=prop.__doc__)


def install(target: type, forward: Callable, unwrap: Callable, wrapped: frozenset) -> None:
    """Puts the class-level builders and the forwarders on ``target``, the methods every tensorclass gets.

    Args:
        target (type): the class whose attributes are copied onto each tensorclass.
        forward (Callable): ``forward(instance, name, bound_method)`` gives the callable
            that unwraps the arguments, calls the tensordict's method and wraps the result.
        unwrap (Callable): a tensorclass argument as its tensordict.
        wrapped (frozenset): the properties whose tensordict value is wrapped as the class.
    """
    for name, what, example in _CLASS_BUILDERS:
        setattr(target, name, _class_builder(name, what, example))
    for name in dir(TensorDict):
        if name.startswith("_") or name in vars(target):
            continue
        attr = inspect.getattr_static(TensorDict, name)
        if isinstance(attr, property):
            setattr(target, name, _forwarded_property(name, attr, unwrap, name in wrapped))
        elif inspect.isfunction(attr):
            setattr(target, name, _forwarded_method(name, attr.__doc__, forward))
