"""``@tensorclass``: makes an annotated class a dataclass whose data lives in a tensordict.

:func:`tensorclass` (and, through it, every subclass of
:class:`~tensordict.tensorclass.TensorClass`) turns the class into a dataclass without
its generated methods, checks the field names and the flags, copies the methods
every tensorclass gets (:mod:`tensordict._tensorclass.methods`) and the operators
onto it unless the class defines them, puts a field descriptor in place of each
field and writes its ``__init__`` (:mod:`tensordict._tensorclass.fields`), and
registers the class under ``str(cls)``: the ``_type`` that its folders, archives
and safetensors files name, so that loading finds it without importing anything.

The names without a leading underscore are this module's protocol with the other
modules of the package.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

from tensordict._ops.classes import CLASSES
from tensordict._td import TensorDict
from tensordict._tensorclass import flags, memmap
from tensordict._tensorclass.fields import Field, make_init
from tensordict._tensorclass.forwarding import OPERATORS, make_operator
from tensordict._tensorclass.methods import _TensorClassMethods
from tensordict.errors import ReservedFieldError

REGISTRY: dict = {}
"""``str(cls)`` -> the class, for every tensorclass decorated in this process."""


def is_tensorclass(obj: Any) -> bool:
    """Returns True if ``obj`` (an instance or a class) is a ``@tensorclass``.

    Args:
        obj: the object or class to test.

    Returns:
        True for a tensorclass or one of its instances, False for anything else.

    Examples:
        >>> @tensorclass
        ... class Point:
        ...     xy: torch.Tensor
        >>> is_tensorclass(Point), is_tensorclass(Point(xy=torch.zeros(2)))
        (True, True)
        >>> is_tensorclass(TensorDict())
        False
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "_is_tensorclass", False) is True and hasattr(cls, "_tc_fields")


def _reserved_names() -> frozenset:
    public = {n for n in dir(TensorDict) if not n.startswith("_")}
    public |= {n for n in vars(_TensorClassMethods) if not n.startswith("_")}
    # ``data`` is a common field name, and the well-known API lets a field take it.
    return frozenset(public - _FIELD_NAMES_ALLOWED)


_FIELD_NAMES_ALLOWED = frozenset({"data"})
_RESERVED = _reserved_names()
_MANDATORY = frozenset(
    {"__init__", "__setattr__", "__getattr__", "_is_tensorclass", "_is_tensor_collection"}
)
_CLASS_METADATA = frozenset(
    {"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__", "__firstlineno__",
     "__static_attributes__", "__annotations__"}
)  # fmt: skip


def _user_defined(cls, name: str) -> bool:
    """True when a class of ``cls``'s MRO (not ``object``) defines ``name`` itself, not copied by us."""
    ours = vars(_TensorClassMethods).get(name)
    for klass in cls.__mro__[:-1]:
        if name in vars(klass):
            value = vars(klass)[name]
            return value is not ours and getattr(value, "_tc_generated", False) is not True
    return False


def tensorclass(
    cls: type | None = None,
    /,
    *,
    autocast: bool = False,
    frozen: bool = False,
    nocast: bool = False,
    shadow: bool = False,
    tensor_only: bool = False,
    skip_post_init_on_rebuild: bool = False,
    cast_filter: Callable[[tuple, Any], bool] | None = None,
    kw_only: bool = False,
) -> type | Callable[[type], type]:
    """Turns an annotated class into a tensorclass: a dataclass whose data lives in a tensordict.

    Each annotated attribute is a field (``ClassVar`` and non-annotated class
    attributes stay plain class attributes). An instance is built with its fields
    (positionally or by name) and the keyword-only ``batch_size``, ``device`` and
    ``names``; a field without a default is required, one with a default (or a
    ``default_factory``) may be left out, and a field set to ``None`` holds no
    entry. Tensors must start with the batch size. Non-tensor values (strings,
    dicts, any object) are stored as :class:`NonTensorData` and read back as the
    value. Every :class:`TensorDict` method is available on an instance, and
    returns an instance of the class where it would return a tensordict.
    Subclassing :class:`TensorClass` does the same, with the flags as class
    keywords; a decorated class does not inherit from :class:`TensorCollection`.

    The class is registered under ``str(cls)`` so that ``TensorDict.load_memmap``
    recognises its folders; ``Cls.load_memmap`` loads a folder as ``Cls`` directly.

    Args:
        cls (type): the class to decorate (omit it to pass options:
            ``@tensorclass(frozen=True)``).

    Keyword Args:
        autocast (bool, optional): cast each value to the annotation of its field
            when that is a class (``int``, ``str``, ``torch.Tensor``, a tensordict or
            tensorclass type, ...). Defaults to False.
        frozen (bool, optional): no attribute can be assigned after ``__init__``
            (``dataclasses.FrozenInstanceError``) and the tensordict is locked.
            Defaults to False.
        nocast (bool, optional): keep Python numbers and numpy arrays as they are
            (non-tensor values) instead of converting them to tensors. Defaults to False.
        shadow (bool, optional): allow fields named like a tensordict method or
            attribute, ``batch_size``, ``device`` and ``names`` included (the field
            hides it). Defaults to False.
        tensor_only (bool, optional): every field must be annotated with a tensor
            type, a tensor collection type or an optional of these. Defaults to False.
        skip_post_init_on_rebuild (bool, optional): accepted for compatibility:
            ``__post_init__`` never runs when an instance is made from another one
            (indexing, ``clone``, ...). Defaults to False.
        cast_filter (callable, optional): the default ``cast_filter`` of ``to``, ``type``
            and the dtype casts (``float()``, ``half()``, ...) called on an instance:
            ``cast_filter(key, leaf)`` picks the leaves a dtype cast applies to (``key`` a
            tuple). A ``cast_filter`` given to the call wins, ``cast_filter=None`` there
            casts every leaf. Subclasses inherit it. Defaults to None: every leaf is cast.
        kw_only (bool, optional): every field is keyword-only. Defaults to False.

    Returns:
        The class itself, modified in place.

    Raises:
        ReservedFieldError: if a field is named like a tensordict attribute and
            ``shadow`` is False (an ``AttributeError``).
        ClassFlagError: if two of ``autocast``, ``nocast`` and ``tensor_only`` are
            set, or a ``tensor_only`` field has another annotation (a ``TypeError``).

    Examples:
        >>> @tensorclass
        ... class Frame:
        ...     pixels: torch.Tensor
        ...     label: torch.Tensor
        ...     source: str = "camera"
        >>> frame = Frame(pixels=torch.zeros(4, 2, 2), label=torch.arange(4), batch_size=[4])
        >>> frame[1:3].label
        tensor([1, 2])
        >>> torch.stack([frame, frame]).batch_size
        torch.Size([2, 4])
        >>> frame.source
        'camera'
        >>> @tensorclass(autocast=True)
        ... class Step:
        ...     count: int
        >>> Step(count=torch.tensor(3)).count
        3
    """
    options = {
        "autocast": autocast,
        "frozen": frozen,
        "nocast": nocast,
        "shadow": shadow,
        "tensor_only": tensor_only,
        "skip_post_init_on_rebuild": skip_post_init_on_rebuild,
        "cast_filter": cast_filter,
        "kw_only": kw_only,
    }
    if cls is None:
        return functools.partial(decorate, **options)
    return decorate(cls, **options)


def _hide_inherited_members(cls) -> None:
    """Keeps dataclass from taking an inherited tensorclass member as a field's default.

    With ``shadow``, a field of a subclass may be named like a member that the
    parent tensorclass got from us (``batch_size``, ...); dataclass would read that
    member as the field's default.
    """
    ours = {id(v) for v in vars(_TensorClassMethods).values()}
    for name in cls.__dict__.get("__annotations__", {}):
        if name not in cls.__dict__ and id(inspect.getattr_static(cls, name, None)) in ours:
            setattr(cls, name, dataclasses.MISSING)


def decorate(
    cls: type,
    *,
    autocast: bool,
    frozen: bool,
    nocast: bool,
    shadow: bool,
    tensor_only: bool,
    skip_post_init_on_rebuild: bool,
    kw_only: bool,
    cast_filter: Callable[[tuple, Any], bool] | None = None,
) -> type:
    """Makes ``cls`` a tensorclass in place and returns it: :func:`tensorclass` with every option given."""
    if not isinstance(cls, type):
        msg = f"@tensorclass decorates a class, got {type(cls).__name__}"
        raise TypeError(msg)
    casts = {"autocast": autocast, "nocast": nocast, "tensor_only": tensor_only}
    flags.check_flags(cls.__name__, casts)
    if shadow:
        _hide_inherited_members(cls)
    # A __setattr__ of the class body (or of a base) is kept: it sees every field assignment,
    # those of __init__ included, and reaches ours through object.__setattr__ and the fields.
    own_setattr = _user_defined(cls, "__setattr__")
    cls = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, kw_only=kw_only, frozen=frozen
    )
    fields = dataclasses.fields(cls)
    for field in fields:
        if field.name == "_tensordict":
            msg = f"the field name {field.name!r} of {cls.__name__} is used by every tensorclass"
            raise ReservedFieldError(msg)
        if field.name in _RESERVED and not shadow:
            msg = (
                f"the field {field.name!r} of {cls.__name__} is named like a tensordict "
                "attribute; rename it, or pass shadow=True (@tensorclass(shadow=True) or "
                "TensorClass['shadow']) to let the field hide it"
            )
            raise ReservedFieldError(msg)
    installed = set()
    for name, value in vars(_TensorClassMethods).items():
        if name in _CLASS_METADATA:
            continue
        if name == "__setattr__" and own_setattr:
            continue
        if name in _MANDATORY or not _user_defined(cls, name):
            setattr(cls, name, value)
            installed.add(name)
    # the names the class body did not define: annotations never resolve to them
    cls._tc_installed = frozenset(installed)
    for name in OPERATORS:
        method = getattr(TensorDict, name, None)
        if method is None or method is getattr(object, name, None):
            continue
        if not _user_defined(cls, name):
            op = make_operator(name)
            op._tc_generated = True
            setattr(cls, name, op)
    for field in dataclasses.fields(cls):
        setattr(cls, field.name, Field(field.name, field.default))
    cls.__init__ = make_init(cls, fields)
    cls._tc_fields = tuple(f.name for f in dataclasses.fields(cls))
    cls._tc_field_set = frozenset(cls._tc_fields)
    cls._tc_own_setattr = own_setattr
    cls._tc_autocast = autocast
    cls._tc_frozen = frozen
    cls._tc_nocast = nocast
    cls._tc_shadow = shadow
    cls._tc_tensor_only = tensor_only
    cls._tc_skip_post_init_on_rebuild = skip_post_init_on_rebuild
    if cast_filter is not None:
        # a function kept as a plain value of the class, never bound to an instance
        cls._tc_cast_filter = staticmethod(cast_filter)
    elif not hasattr(cls, "_tc_cast_filter"):
        cls._tc_cast_filter = None  # a subclass keeps its parent's
    if tensor_only:
        flags.check_tensor_only(cls)
    key = str(cls)
    REGISTRY[key] = cls
    CLASSES[key] = cls
    memmap.register(cls, key)
    return cls
