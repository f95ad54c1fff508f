"""The names that annotations share: devices, batch sizes, indices and "the same class".

Every layer may import them: they need only torch and :class:`TensorCollection`. The
aliases are plain ``Union`` objects, so they also work at run time
(``typing.get_type_hints`` resolves every annotation of the package); every module
writes its annotations under ``from __future__ import annotations``, so none of them is
evaluated at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import TypeVar, Union

import torch

from tensordict._collection import TensorCollection

__all__ = ["DeviceType", "IndexType", "ShapeType", "T"]

DeviceType = Union[torch.device, str, int]
"""A device as torch takes it: ``torch.device("cuda:0")``, ``"cpu"`` or a CUDA ordinal."""

ShapeType = Union[torch.Size, Sequence[int]]
"""A batch size or a shape: a ``torch.Size``, or a list or tuple of ints."""

IndexType = Union[None, int, slice, EllipsisType, torch.Tensor, list, tuple]
"""An index of the batch dims, as a tensor takes it: an int, a slice, ``None``, ``...``,
a boolean or integer tensor, a list, or a tuple of these."""

T = TypeVar("T", bound=TensorCollection)
"""The class of ``self``: the return type of a method that gives back a tensordict (or a
tensorclass instance) of the same class, annotated ``def method(self: T, ...) -> T``."""
