"""``from_dataclass``: a dataclass type made a tensorclass type, a dataclass instance a tensorclass instance."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

import torch

from tensordict._collection import is_tensor_collection
from tensordict._helpers import check_batch_args
from tensordict._tensorclass.decorator import is_tensorclass, tensorclass
from tensordict.errors import ConversionInputError


def _tensorclass_type(dc: type, flags: dict) -> type:
    """A new tensorclass ``<name>_tc`` with the fields (annotations and defaults) of dataclass ``dc``."""
    try:
        hints = typing.get_type_hints(dc)
    except Exception:  # noqa: BLE001 - unresolvable string annotations are kept as written
        hints = {}
    namespace = {"__annotations__": {}}
    for field in dataclasses.fields(dc):
        namespace["__annotations__"][field.name] = hints.get(field.name, field.type)
        if field.default is not dataclasses.MISSING:
            namespace[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            namespace[field.name] = dataclasses.field(default_factory=field.default_factory)
    new = types.new_class(f"{dc.__name__}_tc", (), {}, lambda ns: ns.update(namespace))
    return tensorclass(new, **flags)


def from_dataclass(
    obj: Any,
    *,
    dest_cls: type | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    batch_size: torch.Size | None = None,
    frozen: bool = False,
    autocast: bool = False,
    nocast: bool = False,
    inplace: bool = False,
    shadow: bool = False,
    tensor_only: bool = False,
    device: torch.device | None = None,
) -> Any:
    """Converts a dataclass instance to a tensorclass instance, or a dataclass type to a tensorclass type.

    For a type, the result is a new tensorclass named ``<name>_tc`` with the same
    fields and defaults (or the type itself made a tensorclass, with
    ``inplace=True``); a tensorclass type is returned as it is. For an instance,
    the result is an instance of a new ``<name>_tc`` tensorclass (or of
    ``dest_cls``) holding copies of the field values, as
    :func:`dataclasses.asdict` makes them (a nested dataclass becomes a dict).
    :meth:`TensorDict.from_dataclass <tensordict.TensorDictBase.from_dataclass>`
    gives a :class:`TensorDict` instead.

    Args:
        obj: the dataclass instance or type.

    Keyword Args:
        dest_cls (type, optional): for an instance, the tensorclass to build (the
            class flags below are then unused). Defaults to ``None``: a new class.
        auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
        batch_dims (int, optional): with ``auto_batch_size``, keep at most this many
            dimensions.
        batch_size (torch.Size, optional): the batch size of the instance.
        frozen (bool, optional): the ``frozen`` class flag. Defaults to ``False``.
        autocast (bool, optional): the ``autocast`` class flag. Defaults to ``False``.
        nocast (bool, optional): the ``nocast`` class flag. Defaults to ``False``.
        inplace (bool, optional): for a type, make ``obj`` itself a tensorclass.
            Defaults to ``False``.
        shadow (bool, optional): the ``shadow`` class flag. Defaults to ``False``.
        tensor_only (bool, optional): the ``tensor_only`` class flag. Defaults to ``False``.
        device (torch.device, optional): for an instance, the device of the result.

    Returns:
        A tensorclass type if ``obj`` is a type, a tensorclass instance otherwise.

    Raises:
        ConversionInputError: (a ``TypeError``) if ``obj`` is not a dataclass instance
            or type, or ``dest_cls`` is not a tensorclass.
        ConflictingArgumentsError: (a ``TypeError``) if ``batch_size`` and
            ``auto_batch_size`` are both given.
        ClassFlagError: (a ``TypeError``) if more than one of ``autocast``,
            ``nocast`` and ``tensor_only`` is set.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Frame:
        ...     pixels: torch.Tensor
        ...     tag: str
        >>> frame = from_dataclass(Frame(torch.zeros(4, 2), "start"), auto_batch_size=True)
        >>> type(frame).__name__, frame.batch_size, frame.tag
        ('Frame_tc', torch.Size([4, 2]), 'start')
    """
    flags = {
        "frozen": frozen,
        "autocast": autocast,
        "nocast": nocast,
        "shadow": shadow,
        "tensor_only": tensor_only,
    }
    if isinstance(obj, type):
        if is_tensorclass(obj):
            return obj
        if not dataclasses.is_dataclass(obj):
            msg = (
                f"from_dataclass expects a dataclass instance or type, got the type {obj.__name__}"
            )
            raise ConversionInputError(msg)
        return tensorclass(obj, **flags) if inplace else _tensorclass_type(obj, flags)
    if not dataclasses.is_dataclass(obj):
        msg = f"from_dataclass expects a dataclass instance or type, got {type(obj).__name__}"
        raise ConversionInputError(msg)
    if dest_cls is not None and not (isinstance(dest_cls, type) and is_tensorclass(dest_cls)):
        msg = f"from_dataclass: dest_cls must be a tensorclass, got {dest_cls!r}"
        raise ConversionInputError(msg)
    check_batch_args("from_dataclass", batch_size, auto_batch_size, batch_dims)
    cls = dest_cls if dest_cls is not None else _tensorclass_type(type(obj), flags)
    # copies of the values, nested dataclasses as dicts, as the well-known API gives them;
    # a tensor_only class keeps the tensordicts (and the dicts of them) it is given.
    values = dataclasses.asdict(obj)
    if cls._tc_tensor_only:
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name)
            if is_tensor_collection(value) or isinstance(value, Mapping):
                values[field.name] = value
    instance = cls(**values, batch_size=batch_size, device=device)
    if auto_batch_size:
        instance.auto_batch_size_(batch_dims)
    return instance
