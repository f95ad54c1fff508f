"""``@tensorclass``: dataclass-like classes whose instances carry a tensordict.

A decorated class keeps its annotated fields in a :class:`TensorDict` (the
instance's ``_tensordict``): tensors, sub-tensordicts and other tensorclass
instances as they are, every other value (a string, a number with ``nocast``, a
dict, any object) as a :class:`NonTensorData` entry that reads back as the
Python value. A field set to ``None`` holds no entry. Every tensordict method
works on an instance and returns an instance of the class where it would return
a tensordict (indexing, ``torch.stack``, reshaping, ``to``, ``apply``,
``clone``, comparisons, ``memmap``, ...).

On disk a tensorclass is a folder holding ``meta.json`` with only ``"_type"``
(``str(cls)``, e.g. ``"<class 'mymodule.Frame'>"``) and its tensordict in the
sub-folder ``_tensordict/``. Decorating a class registers it under that string,
so that loading finds it without importing anything; a folder naming a class
that was never decorated in this process fails with an error naming the class.

This module is the public face of ``tensordict.tensorclass``; the implementation
lives in :mod:`tensordict._tensorclass`, one module per job:

- ``flags``: the class flags, and what a field stores for each value it is given;
- ``fields``: the field descriptor and the generated ``__init__``;
- ``forwarding``: tensordict methods as tensorclass methods, and the class-level
  builders (``C.from_schema``, ``C.stack``, ...);
- ``memmap``: the hooks that memory-map, load and refresh a tensorclass;
- ``methods``: the methods every tensorclass gets;
- ``decorator``: :func:`tensorclass` itself, and the registry of classes;
- ``base_class``: :class:`TensorClass` and its metaclass;
- ``from_dataclass``: :func:`from_dataclass`.

Besides ``__all__`` it keeps importable the other names it held before it became
a face (the errors a tensorclass raises and a few internal ones).
"""

from tensordict._attrs import TensorAttrs
from tensordict._collection import NO_DEFAULT, TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._helpers import check_batch_args as check_batch_args
from tensordict._helpers import expand_as_right
from tensordict._keys import NestedKey
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict._nontensor_stack import LinkedList, NonTensorStack
from tensordict._ops.classes import CLASSES as CLASSES
from tensordict._ops.distributed import TENSORCLASS_METHODS as TENSORCLASS_METHODS
from tensordict._ops.memmap import SHARED_WITH_TENSORCLASS as SHARED_WITH_TENSORCLASS
from tensordict._ops.memmap import MemmapMixin as MemmapMixin
from tensordict._options import GET_DEFAULT as GET_DEFAULT
from tensordict._options import capture_non_tensor_stack, list_to_stack
from tensordict._printing import collection_repr as collection_repr
from tensordict._td import TensorDict
from tensordict._tensorclass.base_class import TensorClass
from tensordict._tensorclass.base_class import _TensorClassMeta as _TensorClassMeta
from tensordict._tensorclass.decorator import is_tensorclass, tensorclass
from tensordict._tensorclass.from_dataclass import from_dataclass
from tensordict.base import TensorDictBase
from tensordict.errors import ClassFlagError as ClassFlagError
from tensordict.errors import ConversionInputError as ConversionInputError
from tensordict.errors import MemmapFormatError as MemmapFormatError
from tensordict.errors import MemmapNotFoundError as MemmapNotFoundError
from tensordict.errors import ReservedFieldError, UnknownFieldError
from tensordict.memmap import format as fmt  # noqa: F401

__all__ = [
    "LazyStackedTensorDict",
    "LinkedList",
    "MetaData",
    "NO_DEFAULT",
    "NestedKey",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "ReservedFieldError",
    "TensorAttrs",
    "TensorClass",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "UnknownFieldError",
    "capture_non_tensor_stack",
    "expand_as_right",
    "from_dataclass",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "list_to_stack",
    "tensorclass",
]
