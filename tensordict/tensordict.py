"""The well-known ``tensordict.tensordict`` import path (``from tensordict.tensordict import TensorDict``).

A public face over the modules that implement these names; nothing is defined here. The
former helpers that the reference still serves here with a DeprecationWarning come through the
module's ``__getattr__``.
"""

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._deprecated import TENSORDICT, deprecated_getattr
from tensordict._helpers import assert_allclose_td, expand_as_right, expand_right
from tensordict._keys import NestedKey
from tensordict._lazy import LazyStackedTensorDict
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.functional import (
    dense_stack_tds,
    make_tensordict,
    merge_tensordicts,
    pad,
    pad_sequence,
)
from tensordict.memmap.tensor import MemoryMappedTensor
from tensordict.tensorclass import is_tensorclass

__all__ = [
    "NO_DEFAULT",
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "NestedKey",
    "TensorDict",
    "TensorDictBase",
    "assert_allclose_td",
    "dense_stack_tds",
    "expand_as_right",
    "expand_right",
    "is_tensor_collection",
    "is_tensorclass",
    "make_tensordict",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
]

__getattr__ = deprecated_getattr(__name__, TENSORDICT)
