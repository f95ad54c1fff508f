"""Non-tensor values (a string, a number, any object) stored in a tensordict.

A :class:`NonTensorData` carries one Python value and the batch size of the
level that holds it. It behaves like a tensor collection on the batch
dimensions: indexing, reshaping or stacking changes its batch size and keeps the
value.
"""

from __future__ import annotations

from typing import Any

import torch


def _dummy(batch_size: torch.Size) -> torch.Tensor:
    # A zero-memory tensor of the batch shape: shape functions run on it to tell
    # the batch size they produce.
    return torch.zeros((), dtype=torch.uint8).expand(batch_size)


class NonTensorData:
    """A non-tensor value held in a tensordict, with the batch size of its level.

    Args:
        data: the value (a string, a number, a JSON-like object, or any object).
        batch_size (torch.Size or list of int, optional): the batch size. Defaults to ``[]``.
        device (torch.device, optional): the device of the level. Defaults to ``None``.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"name": "cartpole"}, batch_size=[2])
        >>> td["name"]
        'cartpole'
        >>> td.get("name")
        NonTensorData(data=cartpole, batch_size=torch.Size([2]), device=None)
    """

    __slots__ = ("data", "_batch_size", "_device", "_metadata")
    _is_tensor_collection = True
    _is_non_tensor = True
    _is_tensorclass = False
    _is_lazy = False

    def __init__(self, data: Any, batch_size=None, device=None, *, metadata=None) -> None:
        if isinstance(data, NonTensorData):
            data = data.data
        self.data = data
        self._batch_size = torch.Size(() if batch_size is None else batch_size)
        self._device = None if device is None else torch.device(device)
        self._metadata = metadata

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the level that holds the value."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        self._batch_size = torch.Size(value)

    shape = batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions."""
        return len(self._batch_size)

    ndim = batch_dims

    @property
    def device(self):
        """The device of the level that holds the value, or ``None``."""
        return self._device

    def tolist(self):
        """Returns the value."""
        return self.data

    def _with(self, batch_size) -> NonTensorData:
        return NonTensorData(self.data, batch_size, self._device, metadata=self._metadata)

    def _reshaped(self, fn) -> NonTensorData:
        return self._with(fn(_dummy(self._batch_size)).shape)

    def __getitem__(self, index) -> NonTensorData:
        return self._reshaped(lambda d: d[index])

    def __setitem__(self, index, value) -> None:
        if isinstance(value, NonTensorData):
            value = value.data
        if value != self.data:
            msg = (
                f"cannot assign {value!r} to part of the non-tensor entry holding {self.data!r}: "
                "a non-tensor entry holds one value for its whole batch; set the key instead"
            )
            raise RuntimeError(msg)

    def __len__(self) -> int:
        return self._batch_size[0] if self._batch_size else 0

    def __eq__(self, other):
        if isinstance(other, NonTensorData):
            other = other.data
        return self.data == other

    def __hash__(self):
        return id(self)

    def __repr__(self) -> str:
        return (
            f"NonTensorData(data={self.data}, batch_size={self._batch_size}, device={self._device})"
        )

    def _shape_method(name):  # noqa: N805 - a factory used in the class body only
        def method(self, *args, **kwargs):
            return self._reshaped(lambda d: getattr(d, name)(*args, **kwargs))

        method.__name__ = name
        method.__doc__ = (
            f"Returns the entry with its batch size changed as ``Tensor.{name}`` would."
        )
        return method

    reshape = _shape_method("reshape")
    view = _shape_method("view")
    permute = _shape_method("permute")
    transpose = _shape_method("transpose")
    squeeze = _shape_method("squeeze")
    unsqueeze = _shape_method("unsqueeze")
    flatten = _shape_method("flatten")
    unflatten = _shape_method("unflatten")
    expand = _shape_method("expand")
    repeat = _shape_method("repeat")
    del _shape_method

    def _split_like(self, fn) -> tuple:
        return tuple(self._with(part.shape) for part in fn(_dummy(self._batch_size)))

    def split(self, split_size, dim: int = 0) -> tuple:
        """Splits the batch size as ``Tensor.split`` would."""
        return self._split_like(lambda d: d.split(split_size, dim))

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """Chunks the batch size as ``Tensor.chunk`` would."""
        return self._split_like(lambda d: d.chunk(chunks, dim))

    def unbind(self, dim: int = 0) -> tuple:
        """Unbinds the batch size as ``Tensor.unbind`` would."""
        return self._split_like(lambda d: d.unbind(dim))

    def _fast_apply(self, fn, *others, batch_size=None, **kwargs) -> NonTensorData:
        if batch_size is None:
            return self
        return self._with(batch_size)

    def clone(self, recurse: bool = True) -> NonTensorData:
        """Returns a copy (the value itself is shared)."""
        return self._with(self._batch_size)

    def to(self, *args, **kwargs) -> NonTensorData:
        """Returns the entry on another device; dtypes do not apply to it."""
        device = kwargs.get("device")
        for arg in args:
            if isinstance(arg, (str, torch.device)):
                device = arg
        out = self._with(self._batch_size)
        if device is not None:
            out._device = torch.device(device)
        return out

    def cpu(self) -> NonTensorData:
        """Returns the entry on the CPU."""
        return self.to("cpu")

    def lock_(self) -> NonTensorData:
        """Non-tensor entries are immutable; kept for API symmetry."""
        return self

    unlock_ = lock_

    @property
    def is_locked(self) -> bool:
        """Always False: the entry holds no mutable tensor."""
        return False

    def is_memmap(self) -> bool:
        """True: a non-tensor entry needs no tensor storage, so it never blocks memory-mapping."""
        return True

    def is_shared(self) -> bool:
        """True: a non-tensor entry is pickled with its tensordict."""
        return True

    @classmethod
    def _stack(cls, items: list, dim: int) -> NonTensorData:
        first = items[0]
        for other in items[1:]:
            if other.data != first.data:
                msg = (
                    f"cannot stack non-tensor entries holding different values ({first.data!r} and "
                    f"{other.data!r}); use lazy_stack to keep each member's value"
                )
                raise ValueError(msg)
        shape = torch.stack([_dummy(i._batch_size) for i in items], dim).shape
        return first._with(shape)
