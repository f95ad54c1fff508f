"""Names the reference still serves from its faces for old code, each with a DeprecationWarning.

The reference (0.15.3) keeps a set of former public helpers of ``tensordict.utils`` and
``tensordict.tensordict`` reachable through a module ``__getattr__`` (PEP 562) that warns on
every read, and announces their removal in 0.17. Code written for it imports some of them
(``from tensordict.utils import convert_ellipsis_to_idx``), so our faces serve the same names
with the same warning class, through :func:`deprecated_getattr`.
"""

from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyvers
import torch

from tensordict._keys import unravel_key

REMOVAL = "0.17"

NESTED_TENSOR_ERR = (
    "The PyTorch version isn't compatible with nested tensors. "
    "Please upgrade to a more recent version."
)

NUMPY_TO_TORCH_DTYPE_DICT = {
    np.dtype(name): getattr(torch, name)
    for name in (
        "bool",
        "complex128",
        "complex64",
        "float16",
        "float32",
        "float64",
        "int16",
        "int32",
        "int64",
        "int8",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
    )
}
TORCH_TO_NUMPY_DTYPE_DICT = {value: key for key, value in NUMPY_TO_TORCH_DTYPE_DICT.items()}

_TRUE = frozenset(("y", "yes", "t", "true", "on", "1"))
_FALSE = frozenset(("n", "no", "f", "false", "off", "0"))


def convert_ellipsis_to_idx(idx: Any, batch_size: Sequence[int]) -> Any:
    """Replaces the ellipsis of an index by as many full slices as it stands for.

    Every other element of the index keeps its place: an integer, a slice or a list takes
    one dim, a boolean mask as many dims as it has, and ``None`` none.

    Args:
        idx: an index (a single element or a tuple of them).
        batch_size (sequence of int): the shape the index applies to.

    Returns:
        The index without ellipsis: a tuple when ``idx`` held one, else ``idx`` itself.

    Raises:
        RuntimeError: if the index holds more than one ellipsis.

    Examples:
        >>> convert_ellipsis_to_idx((0, ..., 0), [3, 4, 5])
        (0, slice(None, None, None), 0)
    """
    parts = idx if isinstance(idx, tuple) else (idx,)
    count = sum(1 for part in parts if part is Ellipsis)
    if count == 0:
        return idx
    if count > 1:
        msg = f"an index can hold one ellipsis at most, got {count} in {idx!r}"
        raise RuntimeError(msg)
    taken = 0
    for part in parts:
        if part is None or part is Ellipsis:
            continue
        if isinstance(part, torch.Tensor) and part.dtype == torch.bool:
            taken += part.ndim
        else:
            taken += 1
    where = next(i for i, part in enumerate(parts) if part is Ellipsis)
    fill = (slice(None),) * max(len(batch_size) - taken, 0)
    return parts[:where] + fill + parts[where + 1 :]


def is_nested_key(key: Any) -> bool:
    """True for a string, or a non-empty list or tuple of strings (one level, no nesting)."""
    if isinstance(key, str):
        return True
    if key and isinstance(key, (list, tuple)):
        return all(isinstance(part, str) for part in key)
    return False


def is_seq_of_nested_key(seq: Any) -> bool:
    """True for a sequence whose every element passes :func:`is_nested_key` (empty included)."""
    if not isinstance(seq, Sequence):
        return False
    return all(is_nested_key(key) for key in seq)


def is_namedtuple(obj: Any) -> bool:
    """True for an instance of a namedtuple class."""
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def is_namedtuple_class(cls: Any) -> bool:
    """True for a class with the namedtuple members ``_fields``, ``_replace`` and ``_asdict``."""
    return all(hasattr(cls, name) for name in ("_fields", "_replace", "_asdict"))


def strtobool(value: str) -> bool:
    """Reads a truth value as distutils did: ``yes``/``no``, ``on``/``off``, ``1``/``0``, ...

    Raises:
        ValueError: for any other string.
    """
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    msg = f"invalid truth value {value!r}"
    raise ValueError(msg)


def unravel_keys(*keys: Any) -> Any:
    """Unravels one key, or a tuple of keys when given several."""
    if len(keys) == 1:
        return unravel_key(keys[0])
    return tuple(unravel_key(key) for key in keys)


def prod(sequence: Sequence[int]) -> int:
    """The product of a sequence of numbers (:func:`math.prod`)."""
    return math.prod(sequence)


def infer_size_impl(shape: Sequence[int], numel: int) -> list[int]:
    """Resolves the one ``-1`` of ``shape`` for ``numel`` elements, as ``Tensor.view`` does.

    Raises:
        RuntimeError: for two ``-1``, a negative size, or a shape that cannot hold ``numel``.
    """
    known = 1
    infer = None
    for dim, size in enumerate(shape):
        if size == -1:
            if infer is not None:
                msg = f"only one dimension can be inferred in {list(shape)}"
                raise RuntimeError(msg)
            infer = dim
        elif size >= 0:
            known *= size
        else:
            msg = f"invalid shape dimensions in {list(shape)}: sizes must be non-negative or -1"
            raise RuntimeError(msg)
    fits = numel == known if infer is None else known > 0 and numel % known == 0
    if not fits:
        msg = f"invalid shape {list(shape)} for a batch of {numel} elements"
        raise RuntimeError(msg)
    out = list(shape)
    if infer is not None:
        out[infer] = numel // known
    return out


def int_generator(seed: int) -> int:
    """The next integer in ``[0, 10000)`` of a deterministic chain seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    return int.from_bytes(rng.bytes(8), "big") % 10_000


class KeyDependentDefaultDict(collections.defaultdict):
    """A dict whose missing entries are made from their key by ``fun(key)``, then kept.

    Examples:
        >>> names = KeyDependentDefaultDict(lambda key: "foo_" + key)
        >>> names["bar"]
        'foo_bar'
    """

    def __init__(self, fun: Callable[[Any], Any]) -> None:
        super().__init__()
        self.fun = fun

    def __missing__(self, key: Any) -> Any:
        value = self.fun(key)
        self[key] = value
        return value


# Each deprecated name: (value, what to use instead or None). The two faces serve the subsets
# the reference serves.
UTILS = {
    "KeyDependentDefaultDict": (KeyDependentDefaultDict, None),
    "NESTED_TENSOR_ERR": (NESTED_TENSOR_ERR, None),
    "NUMPY_TO_TORCH_DTYPE_DICT": (NUMPY_TO_TORCH_DTYPE_DICT, None),
    "TORCH_TO_NUMPY_DTYPE_DICT": (TORCH_TO_NUMPY_DTYPE_DICT, None),
    "convert_ellipsis_to_idx": (convert_ellipsis_to_idx, None),
    "implement_for": (pyvers.implement_for, "pyvers.implement_for"),
    "infer_size_impl": (infer_size_impl, None),
    "int_generator": (int_generator, None),
    "is_namedtuple": (is_namedtuple, None),
    "is_namedtuple_class": (is_namedtuple_class, None),
    "is_nested_key": (is_nested_key, "isinstance(key, tensordict.NestedKey)"),
    "is_seq_of_nested_key": (
        is_seq_of_nested_key,
        "isinstance(key, tensordict.NestedKey) on each key",
    ),
    "prod": (prod, "math.prod"),
    "strtobool": (strtobool, None),
    "unravel_keys": (unravel_keys, "unravel_key or unravel_key_list"),
}
TENSORDICT = {
    name: UTILS[name]
    for name in (
        "convert_ellipsis_to_idx",
        "implement_for",
        "infer_size_impl",
        "int_generator",
        "is_nested_key",
        "is_seq_of_nested_key",
    )
}


def deprecated_getattr(module: str, names: Mapping[str, tuple[Any, str | None]]) -> Callable:
    """Returns a module ``__getattr__`` that serves ``names`` with a DeprecationWarning.

    Args:
        module (str): the module's ``__name__``, for the messages.
        names (mapping): each deprecated name to ``(value, replacement)``; ``replacement``
            says what to use instead, or is None.

    Returns:
        A function to assign to the module's ``__getattr__``; any other name raises
        :class:`AttributeError`.
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            msg = f"module {module!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value, replacement = names[name]
        instead = f"; use {replacement} instead" if replacement else ""
        warnings.warn(
            f"{module}.{name} is deprecated and will be removed in TensorDict {REMOVAL}{instead}.",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__
