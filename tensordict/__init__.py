"""tensordict: a nested dict of tensors that shares batch dimensions and behaves like one tensor.

The package face: every public name of the well-known API within our scope, re-exported
from the module that implements it.
"""

from tensordict import (
    _pytree,  # noqa: F401 - registers tensordicts with torch.utils._pytree
    base,
    functional,
    memmap,
    persistent,  # noqa: F401 - the tensordict.persistent import path
    tensordict,
    utils,
)
from tensordict._api import (
    append_memmap,
    from_consolidated,
    from_dict,
    fromkeys,
    load,
    load_memmap,
    save,
)
from tensordict._attrs import TensorAttrs
from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    default_is_leaf,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._from import (
    from_any,
    from_dataclass,
    from_module,
    from_modules,
    from_namedtuple,
    from_pytree,
    from_struct_array,
    from_tuple,
)
from tensordict._helpers import (
    KEY_SEPARATOR,
    assert_allclose_td,
    assert_close,
    is_bool,
    is_floating,
    is_inexact,
    is_integer,
    unravel_key_to_tuple,
)
from tensordict._keys import NestedKey, unravel_key, unravel_key_list
from tensordict._lazy import LazyStackedTensorDict, lazy_stack
from tensordict._legacy_view import _ShapeView  # noqa: F401 - registers the legacy lazy views
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict._nontensor_stack import NonTensorStack
from tensordict._ops.pack import PackLayout
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
from tensordict._parse import parse_tensor_dict_string
from tensordict._persistent import PersistentTensorDict
from tensordict._safetensors import from_safetensors, to_safetensors
from tensordict._stack import cat, stack
from tensordict._td import TensorDict
from tensordict._typed import TypedTensorDict
from tensordict._unbatched import UnbatchedTensor
from tensordict._version import __version__
from tensordict.base import TensorDictBase
from tensordict.functional import (
    collate,
    dense_stack_tds,
    group_by,
    make_tensordict,
    maybe_dense_stack,
    merge_tensordicts,
    pad,
    pad_sequence,
    unpad_sequence,
)
from tensordict.memmap._archive import (
    is_memmap_archive,
    pack_memmap,
    refresh_archive_checksums,
    unpack_memmap,
)
from tensordict.memmap.tensor import MemoryMappedTensor
from tensordict.nn import (
    TensorClassModuleBase,
    TensorClassModuleWrapper,
    TensorDictParams,
    as_tensordict_module,
)
from tensordict.tensorclass import TensorClass, is_tensorclass, tensorclass

__all__ = [
    "KEY_SEPARATOR",
    "NO_DEFAULT",
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "MetaData",
    "PackLayout",
    "PersistentTensorDict",
    "NestedKey",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "TensorAttrs",
    "TensorClass",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "TensorDictParams",
    "TensorClassModuleBase",
    "TensorClassModuleWrapper",
    "as_tensordict_module",
    "TypedTensorDict",
    "UnbatchedTensor",
    "__version__",
    "append_memmap",
    "assert_allclose_td",
    "assert_close",
    "base",
    "capture_non_tensor_stack",
    "cat",
    "collate",
    "default_is_leaf",
    "dense_stack_tds",
    "from_any",
    "from_consolidated",
    "from_dataclass",
    "from_dict",
    "from_module",
    "from_modules",
    "from_namedtuple",
    "from_pytree",
    "from_struct_array",
    "from_tuple",
    "fromkeys",
    "functional",
    "get_defaults_to_none",
    "get_printoptions",
    "group_by",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
    "is_leaf_nontensor",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "lazy_legacy",
    "lazy_stack",
    "list_to_stack",
    "load",
    "load_memmap",
    "make_tensordict",
    "maybe_dense_stack",
    "memmap",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
    "save",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "stack",
    "tensorclass",
    "tensordict",
    "unpad_sequence",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
    "utils",
    "parse_tensor_dict_string",
    "is_memmap_archive",
    "pack_memmap",
    "refresh_archive_checksums",
    "unpack_memmap",
    "from_safetensors",
    "to_safetensors",
]
