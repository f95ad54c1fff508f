"""The well-known ``tensordict.utils`` import path: keys, right-expansion, dtype predicates, options, small tools.

A public face over the modules that implement these names; nothing is defined here. The
former helpers that the reference still serves with a DeprecationWarning
(``convert_ellipsis_to_idx``, ``implement_for``, ...) come through the module's ``__getattr__``.
"""

from torch.nn import Buffer

from tensordict._collection import is_non_tensor, is_tensor_collection
from tensordict._deprecated import UTILS, deprecated_getattr
from tensordict._futures import TensorDictFuture
from tensordict._helpers import (
    KEY_SEPARATOR,
    assert_allclose_td,
    assert_close,
    expand_as_right,
    expand_right,
    is_bool,
    is_floating,
    is_inexact,
    is_integer,
    unravel_key_to_tuple,
)
from tensordict._keys import NestedKey, unravel_key, unravel_key_list
from tensordict._nontensor_stack import LinkedList
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
from tensordict._tools import (
    isin,
    logger,
    print_directory_tree,
    remove_duplicates,
    timeit,
)
from tensordict._torchrl_names import (  # noqa: F401  (kept for torchrl)
    getitem_batch_size as _getitem_batch_size,
)
from tensordict._torchrl_names import (  # noqa: F401
    is_non_tensor_class as _is_non_tensor,
)
from tensordict._torchrl_names import (  # noqa: F401
    is_tensorclass_class as _is_tensorclass,
)
from tensordict._torchrl_names import (  # noqa: F401
    maybe_correct_neg_dim as _maybe_correct_neg_dim,
)
from tensordict._torchrl_names import (  # noqa: F401
    unravel_key_to_tuple_or_empty as _unravel_key_to_tuple,
)
from tensordict._torchrl_names import zip_strict as _zip_strict  # noqa: F401
from tensordict._typing import DeviceType, IndexType
from tensordict.tensorclass import is_tensorclass

__all__ = [
    "KEY_SEPARATOR",
    "Buffer",
    "DeviceType",
    "IndexType",
    "LinkedList",
    "NestedKey",
    "TensorDictFuture",
    "assert_allclose_td",
    "assert_close",
    "capture_non_tensor_stack",
    "expand_as_right",
    "expand_right",
    "get_defaults_to_none",
    "get_printoptions",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "isin",
    "lazy_legacy",
    "list_to_stack",
    "logger",
    "parse_tensor_dict_string",
    "print_directory_tree",
    "remove_duplicates",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "timeit",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
]

__getattr__ = deprecated_getattr(__name__, UTILS)
