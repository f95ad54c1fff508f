"""How a tensorclass answers with its tensordict's methods, and wraps what they return.

An instance holds its data in a tensordict (``_tensordict``); every tensordict method
it does not define itself is forwarded there. Three ways lead to the tensordict:

- the instance forwarders: :func:`forward` wraps a bound tensordict method so that
  tensorclass arguments are unwrapped (:func:`unwrap`), keys that a method adds are
  checked against the fields, and a tensordict result comes back as the class (the
  instance's ``_wrap``); :func:`make_operator` does the same for ``==``, ``+``, ...;
- the class-level forwarders: every public tensordict method and property is also a
  class attribute (``C.apply``, ``C.dtype``), calling the instance's tensordict;
- the class-level builders (``C.from_schema``, ``C.stack``, ...) build what the
  TensorDict class method of the same name builds and wrap it as the class
  (:func:`as_class`).

:func:`install` puts the class-level ones on the holder class whose members every
decorated class gets (:mod:`tensordict._tensorclass.methods`). The names without a
leading underscore are this module's protocol with the other modules of
:mod:`tensordict._tensorclass`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tensordict._collection import TensorCollection
from tensordict._ops._generated.casts import CastOps
from tensordict._td import TensorDict
from tensordict._tensorclass.fields import check_key
from tensordict.base import TensorDictBase


def is_tc(value: Any) -> bool:
    """True if ``value`` is a tensorclass instance (or class): it has fields."""
    return hasattr(type(value), "_tc_fields")


def unwrap(value: Any) -> Any:
    """``value`` as a tensordict method takes it: a tensorclass instance as its tensordict."""
    return value._tensordict if is_tc(value) else value


# ====================================================================== instance forwarders
# Properties whose tensordict value a tensorclass returns as an instance of its class.
WRAPPED_PROPERTIES = frozenset({"data", "grad"})
# Methods whose result is an entry (maybe a sub-tensordict), never a new instance.
_RAW_RESULT = frozenset({"pop", "setdefault", "get_non_tensor", "data_ptr"})

# Methods that cast the leaves' dtypes: the class's cast_filter (``@tensorclass(cast_filter=)``)
# is their default.
_CASTS = frozenset({"to", "type"} | {n for n in vars(CastOps) if not n.startswith("_")})

# Methods that add keys: key argument position (and keyword name), checked against the fields.
# The make_memmap* methods take any key, as in the well-known API: the entry is kept
# in the instance's tensordict, written to its folder and loaded back with it.
_KEY_ADDERS = {
    "setdefault": (0, "key"),
    "rename_key_": (1, "new_key"),
}

OPERATORS = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__",
    "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
    "__floordiv__", "__mod__", "__pow__", "__rpow__", "__ipow__", "__matmul__",
    "__and__", "__or__", "__xor__", "__neg__", "__abs__", "__invert__",
    "__rand__", "__ror__", "__rxor__", "__iand__", "__ior__", "__ixor__",
    "__rfloordiv__", "__ifloordiv__", "__rmod__", "__imod__", "__rmatmul__",
)  # fmt: skip
"""The operators every tensorclass gets from its tensordict, unless its class defines them."""


def forward(self: Any, name: str, method: Callable) -> Callable:
    """The tensordict's bound ``method`` (called ``name``) as a method of the instance ``self``."""
    cls = type(self)
    adder = _KEY_ADDERS.get(name)
    cast_filter = cls._tc_cast_filter if name in _CASTS else None

    def call(*args, **kwargs):
        if adder is not None:
            pos, kw = adder
            key = args[pos] if len(args) > pos else kwargs.get(kw)
            if key is not None:
                check_key(cls, key, f"cannot add the key {key!r} with {name}():")
        args = tuple(unwrap(a) for a in args)
        if kwargs:
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        if cast_filter is not None and "cast_filter" not in kwargs:
            kwargs["cast_filter"] = cast_filter
        result = method(*args, **kwargs)
        if name in _RAW_RESULT or kwargs.get("as_tensordict"):
            return result
        return self._wrap(result)

    call.__name__ = name
    call.__doc__ = method.__doc__
    return call


def make_operator(name: str) -> Callable:
    """The operator ``name`` (``"__add__"``, ...) of a tensorclass: the tensordict's, wrapped."""

    def op(self, *args):
        result = getattr(self._tensordict, name)(*(unwrap(a) for a in args))
        if result is NotImplemented:
            return NotImplemented
        return self._wrap(result)

    op.__name__ = name
    op.__doc__ = f"``{name}`` of the tensordict, as an instance of the class."
    return op


# ====================================================================== class-level builders
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


def as_class(cls: type, result: TensorCollection, name: str) -> Any:
    """``result`` (what ``TensorDict.<name>`` built) as an instance of ``cls``."""
    if getattr(type(result), "_is_tensorclass", False):
        return result
    if not isinstance(result, TensorDictBase):
        msg = f"{cls.__name__}.{name}() built a {type(result).__name__}, not a tensordict"
        raise TypeError(msg)
    return cls.from_tensordict(result)


def _argument_sections(doc: str | None) -> str:
    """The ``Args:`` and ``Keyword Args:`` sections of a docstring, as they are written there."""
    kept, keeping = [], False
    for line in inspect.cleandoc(doc or "").splitlines():
        if line and not line[0].isspace():
            keeping = line.rstrip() in ("Args:", "Keyword Args:")
        if keeping:
            kept.append(line)
    return "\n".join(kept).strip() + "\n\n" if kept else ""


def _class_builder(holder: type, name: str, what: str, example: str) -> classmethod:
    built_by = inspect.getattr_static(TensorDict, name).__func__

    def builder(cls, *args, **kwargs):
        return as_class(cls, built_by(TensorDict, *args, **kwargs), name)

    builder.__name__ = name
    builder.__qualname__ = f"{holder.__qualname__}.{name}"
    builder.__module__ = holder.__module__
    builder.__signature__ = inspect.signature(built_by)
    lines = "\n".join("    " + line for line in example.splitlines())
    builder.__doc__ = (
        f"Builds an instance of the class holding {what}.\n\n"
        f"Takes the arguments of :meth:`TensorDict.{name}`, builds that tensordict, and wraps "
        "it as this class:\nevery top-level key must be a field, and the fields it lacks are "
        f"``None``. Arguments it refuses raise as in :meth:`TensorDict.{name}`.\n\n"
        f"{_argument_sections(built_by.__doc__)}"
        "Returns:\n    An instance of this class.\n\nRaises:\n"
        "    UnknownFieldError: (a ``ValueError``) if a key of the result is not a field.\n\n"
        "Examples:\n    >>> @tensorclass\n    ... class Point:\n    ...     x: torch.Tensor\n"
        f"{lines}\n"
    )
    return classmethod(builder)


# ====================================================================== class-level forwarders
# Every public tensordict method and property that the class does not define itself is
# also a class attribute (``C.apply``, ``C.dtype``, as the well-known API has them); each
# calls the instance's tensordict and wraps the result, as ``__getattr__`` does for the rest.
def _forwarded_method(holder: type, name: str, doc: str | None, signature: inspect.Signature):
    def method(self, *args, **kwargs):
        return forward(self, name, getattr(self._tensordict, name))(*args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"{holder.__qualname__}.{name}"
    method.__module__ = holder.__module__  # pickles by reference, as a written method would
    method.__doc__ = doc
    # The arguments its docstring describes are those of the tensordict method it calls (the
    # result may be wrapped in the class, so no return type).
    method.__signature__ = signature
    return method


def _forwarded_property(name: str, prop: property, wrapped: bool) -> property:

    def get(self):
        value = getattr(self._tensordict, name)
        return self._wrap(value) if wrapped else value

    def put(self, value) -> None:
        setattr(self._tensordict, name, unwrap(value))

    return property(get, put if prop.fset is not None else None, doc=prop.__doc__)


def install(holder: type) -> None:
    """Puts the class-level builders and forwarders on ``holder``, whose members every tensorclass gets.

    A forwarder goes only where ``holder`` defines nothing of that name. The generated
    functions name ``holder`` as their class and module, so that they pickle by
    reference as a written method would.

    Args:
        holder (type): the class whose attributes are copied onto each tensorclass.
    """
    for name, what, example in _CLASS_BUILDERS:
        setattr(holder, name, _class_builder(holder, name, what, example))
    for name in dir(TensorDict):
        if name.startswith("_") or name in vars(holder):
            continue
        attr = inspect.getattr_static(TensorDict, name)
        if isinstance(attr, property):
            setattr(holder, name, _forwarded_property(name, attr, name in WRAPPED_PROPERTIES))
        elif inspect.isfunction(attr):
            signature = inspect.signature(attr).replace(return_annotation=inspect.Signature.empty)
            forwarder = _forwarded_method(holder, name, attr.__doc__, signature)
            setattr(holder, name, forwarder)
