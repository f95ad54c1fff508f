"""``TensorClass``: the base class whose subclasses are tensorclasses, and its metaclass.

``class Foo(TensorClass)`` is ``@tensorclass class Foo`` (the two share
:func:`~tensordict._tensorclass.decorator.decorate`), with the flags as class keywords
(``class Foo(TensorClass, autocast=True)``) or by name in brackets
(``TensorClass["nocast", "frozen"]``), and ``Foo`` also inherits from
:class:`TensorCollection`.

Both classes say that they live in :mod:`tensordict.tensorclass`, their public home:
``str(cls)`` is what a folder's ``"_type"`` records, and a class made by
``TensorClass[...]`` takes its module from the class it is made from.
"""

from __future__ import annotations

import typing

from tensordict._collection import TensorCollection
from tensordict._tensorclass.decorator import decorate
from tensordict._tensorclass.flags import FLAGS, is_flag_item, parse_flag_items
from tensordict.errors import ClassFlagError

_PUBLIC_MODULE = "tensordict.tensorclass"


class _TensorClassMeta(type):
    """Makes every subclass of :class:`TensorClass` a tensorclass, with its flags as class keywords.

    A flag left out (``None``) is inherited from the base class. ``Cls[flags]`` is
    a new subclass of ``Cls`` with those flags set.
    """

    __module__ = _PUBLIC_MODULE

    def __new__(
        mcs,
        name,
        bases,
        namespace,
        *,
        autocast=None,
        frozen=None,
        nocast=None,
        shadow=None,
        tensor_only=None,
        skip_post_init_on_rebuild=None,
        kw_only: bool = False,
        cast_filter=None,
        **kwargs,
    ):
        if kwargs and all("__init_subclass__" not in vars(b) for b in _mro_of(bases)):
            msg = (
                f"class {name}: unknown class keyword(s) {sorted(kwargs)}; a TensorClass "
                f"takes the flags {list(FLAGS)} and kw_only"
            )
            raise ClassFlagError(msg)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if namespace.get("_tc_root", False):
            return cls
        given = {
            "autocast": autocast,
            "frozen": frozen,
            "nocast": nocast,
            "shadow": shadow,
            "tensor_only": tensor_only,
            "skip_post_init_on_rebuild": skip_post_init_on_rebuild,
        }
        flags = {
            flag: bool(getattr(cls, f"_tc_{flag}", False) if value is None else value)
            for flag, value in given.items()
        }
        return decorate(cls, kw_only=kw_only, cast_filter=cast_filter, **flags)

    def __init__(cls, name, bases, namespace, **kwargs) -> None:
        super().__init__(name, bases, namespace)

    def __getitem__(cls, item):
        if not is_flag_item(item) and issubclass(cls, typing.Generic):
            return typing.Generic.__dict__["__class_getitem__"].__get__(None, cls)(item)
        flags = parse_flag_items(cls.__name__, item)
        name = f"{cls.__name__}_{'_'.join(flags)}"
        namespace = {"__module__": cls.__module__, "__qualname__": name}
        return _TensorClassMeta(name, (cls,), namespace, **dict.fromkeys(flags, True))


def _mro_of(bases) -> list:
    seen = []
    for base in bases:
        seen.extend(k for k in base.__mro__ if k is not object and k not in seen)
    return seen


class TensorClass(TensorCollection, metaclass=_TensorClassMeta):
    """The base class of tensorclasses: subclass it and annotate the fields, as with a dataclass.

    A subclass is what :func:`tensorclass` makes of a class (the two share one
    implementation), and it also inherits from :class:`TensorCollection`. The flags
    of :func:`tensorclass` are given as class keywords
    (``class Foo(TensorClass, autocast=True)``) or by name in brackets
    (``class Foo(TensorClass["nocast", "frozen"])``); a subclass inherits the
    flags of its base and may add more. ``TensorClass`` itself cannot be
    instantiated.

    Raises:
        ClassFlagError: for an unknown flag or class keyword, or two exclusive
            flags (a ``TypeError``).
        AbstractClassError: when ``TensorClass`` itself is instantiated.

    Examples:
        >>> class Pose(TensorClass):
        ...     position: torch.Tensor
        ...     name: str = "base"
        >>> pose = Pose(position=torch.zeros(4, 3), batch_size=[4])
        >>> pose[1:].batch_size, pose.name
        (torch.Size([3]), 'base')
        >>> isinstance(pose, TensorCollection)
        True
        >>> class Counter(TensorClass["nocast"]):
        ...     steps: int
        >>> Counter(steps=3).steps
        3
    """

    __module__ = _PUBLIC_MODULE
    _tc_root = True
    _is_tensorclass = True
    _is_tensor_collection = True
    _tc_fields = ()
    _tc_autocast = False
    _tc_frozen = False
    _tc_nocast = False
    _tc_shadow = False
    _tc_tensor_only = False
    _tc_own_setattr = False
    _tc_skip_post_init_on_rebuild = False
    _tc_cast_filter = None
