"""tensordict: a nested dict of tensors that shares batch dimensions and behaves like one tensor."""

from tensordict import _pytree  # noqa: F401 - registers tensordicts with torch.utils._pytree
from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._keys import NestedKey, unravel_key, unravel_key_list
from tensordict._lazy import LazyStackedTensorDict, lazy_stack
from tensordict._nontensor import NonTensorData
from tensordict._options import (
    capture_non_tensor_stack,
    get_defaults_to_none,
    get_printoptions,
    lazy_legacy,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
    set_lazy_legacy,
    set_list_to_stack,
    set_printoptions,
)
from tensordict._stack import cat, stack
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.memmap.tensor import MemoryMappedTensor
from tensordict.tensorclass import is_tensorclass, tensorclass

__all__ = [
    "NO_DEFAULT",
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "NestedKey",
    "NonTensorData",
    "TensorDict",
    "TensorDictBase",
    "capture_non_tensor_stack",
    "cat",
    "get_defaults_to_none",
    "get_printoptions",
    "is_tensor_collection",
    "is_tensorclass",
    "lazy_legacy",
    "lazy_stack",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "stack",
    "tensorclass",
    "unravel_key",
    "unravel_key_list",
]
