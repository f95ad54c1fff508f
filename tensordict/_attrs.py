"""``TensorAttrs``: the device, dtype and shape of one tensor, and ``td.attrs()`` built from them.

``td.attrs()`` gives a tensordict holding one :class:`TensorAttrs` per tensor leaf; passed to
``other.to(attrs)`` it moves and casts each leaf of ``other`` to the device and dtype
recorded for the same key, for trees whose leaves do not share one device or dtype.
The base class reaches these through the converter registry, as it reaches ``from_*``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tensordict._ops.convert import CONVERTERS
from tensordict._td import TensorDict
from tensordict._tensorclass.base_class import TensorClass
from tensordict.errors import InvalidArgumentError

__all__ = ["TensorAttrs"]

_FIELDS = ("device", "dtype", "shape")


class TensorAttrs(TensorClass["nocast"]):
    """A tensorclass holding the device, dtype and shape of one tensor.

    :meth:`~tensordict.TensorDictBase.attrs` returns a tensordict with one per tensor
    leaf; :meth:`~tensordict.TensorDictBase.to` given such a tensordict moves and casts
    each leaf to the device and dtype of its key. The fields start with ``tgt_`` so that
    they do not hide the instance's own ``device`` and ``shape``.

    Args:
        tgt_device (torch.device, optional): the tensor's device. Defaults to None.
        tgt_dtype (torch.dtype, optional): its dtype. Defaults to None.
        tgt_shape (torch.Size, optional): its shape. Defaults to None.

    Examples:
        >>> td = TensorDict(a=torch.zeros(3), b=torch.zeros(3, dtype=torch.int32), batch_size=[3])
        >>> attrs = td.attrs()
        >>> attrs["a"].tgt_device, attrs["b"].tgt_dtype
        (device(type='cpu'), torch.int32)
    """

    _is_tensor_attrs = True

    tgt_device: Any = None
    tgt_dtype: Any = None
    tgt_shape: Any = None


def _attrs(td, fields: Sequence[str] = _FIELDS, num_threads: int | None = None) -> TensorDict:
    fields = tuple(fields)
    unknown = [f for f in fields if f not in _FIELDS]
    if unknown:
        msg = f"attrs() records {list(_FIELDS)}; unknown fields {unknown}"
        raise InvalidArgumentError(msg)
    out = TensorDict()
    for key, value in td.items(True, True):
        if not isinstance(value, torch.Tensor):
            continue
        out[key] = TensorAttrs(
            tgt_device=value.device if "device" in fields else None,
            tgt_dtype=value.dtype if "dtype" in fields else None,
            tgt_shape=value.shape if "shape" in fields else None,
            batch_size=[],
        )
    return out


def _to_attrs(td, attrs, non_blocking: bool = False):
    def cast(key, value):
        target = attrs.get(key, None)
        if not getattr(type(target), "_is_tensor_attrs", False):
            return value
        return value.to(device=target.tgt_device, dtype=target.tgt_dtype, non_blocking=non_blocking)

    return td.named_apply(cast, nested_keys=True)


CONVERTERS.update(attrs=_attrs, to_attrs=_to_attrs)
