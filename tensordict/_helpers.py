"""Small public helpers of the well-known ``tensordict.utils``: right-expansion, dtype predicates, assert_close.

They need nothing of the tensordict classes but the class flags, so they sit at the
bottom, beside the keys, and every layer may use them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._keys import NestedKey, unravel_key
from tensordict._typing import ShapeType
from tensordict.errors import ConflictingArgumentsError, warn

__all__ = [
    "KEY_SEPARATOR",
    "assert_allclose_td",
    "assert_close",
    "expand_as_right",
    "expand_right",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
    "unravel_key_to_tuple",
]

KEY_SEPARATOR = "."
"""The separator of ``flatten_keys`` and ``unflatten_keys`` when none is given."""


def unravel_key_to_tuple(key: NestedKey) -> tuple[str, ...]:
    """Returns a nested key as a flat tuple of strings; a string gives a 1-tuple.

    Anything that is not a key gives ``()``, as with the well-known implementation, so
    that code can test a value with it.

    Args:
        key (NestedKey): a string or a (nested) tuple of strings.

    Returns:
        tuple of str: the parts of the key, or ``()`` when ``key`` is not a key.

    Examples:
        >>> unravel_key_to_tuple("a"), unravel_key_to_tuple(("a", ("b", "c")))
        (('a',), ('a', 'b', 'c'))
        >>> unravel_key_to_tuple(("a", 0)), unravel_key_to_tuple(0)
        ((), ())
    """
    if not isinstance(key, (str, tuple)):
        return ()
    flat = unravel_key(key)
    return (flat,) if isinstance(flat, str) else flat


def expand_right(tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Expands ``tensor`` to ``shape`` by adding dimensions on the right, not the left.

    The leading dimensions of ``tensor`` must equal those of ``shape`` or be 1; the
    result is a view, as with :meth:`torch.Tensor.expand`.

    Args:
        tensor (torch.Tensor): the tensor to expand.
        shape (sequence of int): the shape of the result.

    Returns:
        torch.Tensor: a view of ``tensor`` of shape ``shape``.

    Raises:
        RuntimeError: if ``shape`` has fewer dimensions than ``tensor``, or a leading
            dimension differs and is not 1.

    Examples:
        >>> expand_right(torch.arange(3), (3, 2))
        tensor([[0, 0],
                [1, 1],
                [2, 2]])
    """
    shape = torch.Size(shape)
    extra = len(shape) - tensor.ndim
    if extra < 0:
        msg = (
            f"cannot expand a tensor of shape {list(tensor.shape)} on the right to {list(shape)}: "
            "the target has fewer dimensions"
        )
        raise RuntimeError(msg)
    # one tuple argument: a 0-dim tensor and a 0-dim shape make reshape(()), not reshape()
    return tensor.reshape((*tensor.shape, *([1] * extra))).expand(shape)


def expand_as_right(
    tensor: torch.Tensor | TensorCollection, dest: torch.Tensor | TensorCollection
) -> torch.Tensor | TensorCollection:
    """Expands ``tensor`` on the right to the shape of ``dest`` (a tensordict: its batch size).

    Args:
        tensor (torch.Tensor or TensorDictBase): what to expand; a tensordict expands
            each entry.
        dest (torch.Tensor or TensorDictBase): the tensor whose shape the result takes.

    Returns:
        A view of ``tensor`` with the shape of ``dest``.

    Raises:
        RuntimeError: if ``dest`` has fewer dimensions than ``tensor``, or a leading
            dimension differs and is not 1.

    Examples:
        >>> expand_as_right(torch.ones(2), torch.zeros(2, 3)).shape
        torch.Size([2, 3])
    """
    shape = dest.batch_size if is_tensor_collection(dest) else dest.shape
    if is_tensor_collection(tensor):
        extra = len(shape) - tensor.batch_dims
        if extra < 0:
            msg = (
                f"cannot expand a tensordict of batch size {list(tensor.batch_size)} on the right "
                f"to {list(shape)}: the target has fewer dimensions"
            )
            raise RuntimeError(msg)
        return tensor.apply(
            lambda x: x.reshape(
                (*tensor.batch_size, *([1] * extra), *x.shape[tensor.batch_dims :])
            ).expand((*shape, *x.shape[tensor.batch_dims :])),
            batch_size=shape,
        )
    return expand_right(tensor, shape)


def _last_dtype(args: tuple) -> torch.dtype | None:
    if not args:
        msg = "the dtype predicates take the value to test as their last argument; none given"
        raise TypeError(msg)
    value = args[-1]
    if isinstance(value, torch.dtype):
        return value
    return getattr(value, "dtype", None)


def is_bool(*args: Any) -> bool:
    """True if the last argument is a boolean tensor (or dtype); usable as ``fn(v)`` or ``fn(k, v)``.

    Args:
        *args: the value to test comes last; a key may come before it.

    Returns:
        bool: whether the dtype is ``torch.bool``.

    Examples:
        >>> is_bool(torch.zeros(3, dtype=torch.bool)), is_bool("mask", torch.zeros(3))
        (True, False)
    """
    return _last_dtype(args) is torch.bool


def is_floating(*args: Any) -> bool:
    """True if the last argument is a floating-point tensor (or dtype).

    Args:
        *args: the value to test comes last; a key may come before it.

    Returns:
        bool: whether the dtype is floating.

    Examples:
        >>> is_floating(torch.zeros(3)), is_floating("x", torch.zeros(3, dtype=torch.int64))
        (True, False)
    """
    dtype = _last_dtype(args)
    return dtype is not None and dtype.is_floating_point


def is_integer(*args: Any) -> bool:
    """True if the last argument is an integer tensor (or dtype), booleans excluded.

    Args:
        *args: the value to test comes last; a key may come before it.

    Returns:
        bool: whether the dtype is an integer one.

    Examples:
        >>> is_integer(torch.zeros(3, dtype=torch.int8)), is_integer(torch.zeros(3, dtype=torch.bool))
        (True, False)
    """
    dtype = _last_dtype(args)
    return (
        dtype is not None
        and dtype is not torch.bool
        and not dtype.is_floating_point
        and not dtype.is_complex
    )


def is_inexact(*args: Any) -> bool:
    """True if the last argument is a floating-point or complex tensor (or dtype).

    Args:
        *args: the value to test comes last; a key may come before it.

    Returns:
        bool: whether the dtype is floating or complex.

    Examples:
        >>> is_inexact(torch.zeros(3, dtype=torch.complex64)), is_inexact(torch.zeros(3, dtype=torch.int64))
        (True, False)
    """
    dtype = _last_dtype(args)
    return dtype is not None and (dtype.is_floating_point or dtype.is_complex)


def _leaf_items(td, prefix: tuple) -> dict:
    out = {}
    for key, value in td.items():
        full = (*prefix, key)
        if getattr(type(value), "_is_non_tensor", False):
            continue
        if is_tensor_collection(value):
            out[full] = value
        elif isinstance(value, torch.Tensor):
            out[full] = value
    return out


def _rmse(left: torch.Tensor, right: torch.Tensor) -> str:
    if left.shape != right.shape or left.is_nested or right.is_nested:
        return ""
    error = (left.double() - right.double()).pow(2).mean().sqrt().item()
    return f" (root mean squared error {error:.4g})"


def _both_jagged(left: torch.Tensor, right: torch.Tensor) -> bool:
    return all(t.is_nested and t.layout is torch.jagged for t in (left, right))


def _assert_jagged_close(left: torch.Tensor, right: torch.Tensor, **tolerances) -> None:
    """Compares two jagged nested tensors by their values, offsets and lengths.

    Their shapes are not compared: the ragged size of a jagged tensor is a symbol tied to
    its offsets tensor (``j1``, ``j2``, ...), so two equal tensors built apart (a copy, a
    tensor read back from a file) have different ones.
    """
    if left.dim() != right.dim() or left._ragged_idx != right._ragged_idx:
        msg = (
            f"the jagged layouts differ: ragged dim {left._ragged_idx} of a {left.dim()}-dim "
            f"tensor, ragged dim {right._ragged_idx} of a {right.dim()}-dim tensor"
        )
        raise AssertionError(msg)
    for what, mine, theirs in (
        ("offsets", left.offsets(), right.offsets()),
        ("lengths", left.lengths(), right.lengths()),
    ):
        if (mine is None) != (theirs is None) or (
            mine is not None and not torch.equal(mine.cpu(), theirs.cpu())
        ):
            msg = f"the {what} differ: {mine} != {theirs}"
            raise AssertionError(msg)
    torch.testing.assert_close(left.values(), right.values(), **tolerances)


def assert_close(
    actual: TensorCollection,
    expected: TensorCollection,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    intersection: bool = False,
    msg: str = "",
    prefix: NestedKey = (),
) -> bool:
    """Asserts that two tensordicts hold the same keys and close values; returns True.

    Each pair of tensors goes through :func:`torch.testing.assert_close` (dtype, shape and
    device must match; two jagged nested tensors match when their values are close and their
    offsets and lengths equal, whatever the symbol of their ragged size); nested levels are
    compared entry by entry, a lazy stack member by member (its members' leaves may differ
    in shape); non-tensor entries are not compared.

    Args:
        actual (TensorDictBase): the tensordict to check (a tensorclass is accepted).
        expected (TensorDictBase): the expected values.
        rtol (float, optional): relative tolerance; None uses torch's default for the dtype.
        atol (float, optional): absolute tolerance; None uses torch's default for the dtype.
        equal_nan (bool, optional): whether two NaNs are equal. Defaults to True.
        intersection (bool, optional): compare only the keys both hold. Defaults to False.
        msg (str, optional): appended to the error message.
        prefix (NestedKey, optional): prepended to the keys in error messages.

    Returns:
        bool: True when the check passes.

    Raises:
        TypeError: if ``actual`` or ``expected`` is not a tensordict or a tensorclass.
        KeyError: if the keys differ and ``intersection`` is False.
        AssertionError: if two values are not close; the message names the key.

    Examples:
        >>> a = TensorDict(x=torch.zeros(3))
        >>> assert_close(a, a.clone())
        True
        >>> assert_close(a, TensorDict(x=torch.ones(3)))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        AssertionError: entry ('x',) is not close ...
    """
    for name, value in (("actual", actual), ("expected", expected)):
        if not is_tensor_collection(value):
            text = f"assert_close compares tensordicts; {name} is a {type(value).__name__}"
            raise TypeError(text)
    prefix = unravel_key_to_tuple(prefix) if prefix != () else ()
    stack = next((v for v in (actual, expected) if getattr(type(v), "_is_lazy", False)), None)
    if (
        stack is not None
        and not getattr(type(stack), "_is_non_tensor", False)
        and actual.batch_size == expected.batch_size
    ):
        # member by member: the members of a lazy stack may hold leaves of different shapes
        keys = set(actual.keys())
        if keys != set(expected.keys()) and not intersection:
            text = (
                f"the keys differ: only in actual {sorted(keys - set(expected.keys()))}, only in "
                f"expected {sorted(set(expected.keys()) - keys)}"
            )
            raise KeyError(text)
        keys &= set(expected.keys())
        for left, right in zip(actual.unbind(stack.stack_dim), expected.unbind(stack.stack_dim)):
            assert_close(
                left.select(*keys),
                right.select(*keys),
                rtol,
                atol,
                equal_nan,
                intersection,
                msg,
                prefix,
            )
        return True
    mine, theirs = _leaf_items(actual, prefix), _leaf_items(expected, prefix)
    if set(mine) != set(theirs) and not intersection:
        text = (
            f"the keys differ: only in actual {sorted(set(mine) - set(theirs))}, only in "
            f"expected {sorted(set(theirs) - set(mine))}"
        )
        raise KeyError(text)
    for key in mine.keys() & theirs.keys():
        left, right = mine[key], theirs[key]
        if is_tensor_collection(left) or is_tensor_collection(right):
            if not (is_tensor_collection(left) and is_tensor_collection(right)):
                text = f"entry {key!r} is a tensordict on one side only {msg}".rstrip()
                raise AssertionError(text)
            assert_close(left, right, rtol, atol, equal_nan, intersection, msg, key)
            continue
        try:
            if _both_jagged(left, right):
                _assert_jagged_close(left, right, rtol=rtol, atol=atol, equal_nan=equal_nan)
            else:
                torch.testing.assert_close(left, right, rtol=rtol, atol=atol, equal_nan=equal_nan)
        except AssertionError as err:
            text = f"entry {key!r} is not close{_rmse(left, right)}: {err} {msg}"
            raise AssertionError(text.rstrip()) from None
    return True


assert_allclose_td = assert_close


# ---------------------------------------------------------------------- batch-size keywords
def check_batch_args(
    name: str,
    batch_size: ShapeType | None,
    auto_batch_size: bool,
    batch_dims: int | None,
    *,
    strict: bool = True,
) -> bool:
    """Checks the batch-size keywords; returns whether the batch size is to be inferred.

    With ``strict``, ``batch_size`` and ``auto_batch_size`` together are refused;
    otherwise ``batch_size`` wins (as the well-known API does for these converters).
    """
    if not strict and batch_size is not None:
        return False
    if auto_batch_size and batch_size is not None:
        msg = (
            f"{name}: batch_size={list(batch_size)} and auto_batch_size=True exclude each "
            "other; pass one of them"
        )
        raise ConflictingArgumentsError(msg)
    if batch_dims is not None and not auto_batch_size:
        msg = (
            f"{name} ignores batch_dims={batch_dims} without auto_batch_size=True; a later "
            "version will infer the batch size when batch_dims is given, as from_dict does. "
            "Pass auto_batch_size=True to get that now, or drop batch_dims."
        )
        warn(msg, FutureWarning)
    return bool(auto_batch_size)


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape: tuple) -> tuple:
    """The strides, in elements, of a C-contiguous tensor of ``shape`` (empty dims count as 1).

    Examples:
        >>> contiguous_strides((2, 3, 4))
        (12, 4, 1)
    """
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def shape_of(value: torch.Tensor | TensorCollection) -> torch.Size:
    """The shape of a tensor (a nested tensor's ragged dims read -1) or a collection's batch size."""
    if not isinstance(value, torch.Tensor):
        return value.batch_size
    if value.is_nested:
        if value.layout is torch.jagged:
            return value.shape  # its ragged dim is a symbolic size, printed j1, j2, ...
        sizes = value._nested_tensor_size()
        inner = (
            [int(col[0]) if bool((col == col[0]).all()) else -1 for col in sizes.unbind(1)]
            if sizes.numel()
            else []
        )
        return torch.Size([value.size(0), *inner])
    return value.shape


_Size = torch.Size
_EMPTY = torch.Size(())


def as_batch_size(batch_size: Any) -> torch.Size:
    """A tensordict's ``batch_size`` argument as a ``torch.Size`` (None: no dims; -1 marks a ragged dim).

    Raises:
        TypeError: if it is not a sequence of ints.
        ValueError: if a size is below -1.
    """
    if batch_size is None:
        return _EMPTY
    if type(batch_size) is _Size:
        return batch_size
    if type(batch_size) is list or type(batch_size) is tuple:
        try:
            size = _Size(batch_size)
        except TypeError:
            size = None
        if size is not None and (not size or min(size) >= -1):
            return size
    if isinstance(batch_size, int):
        return _Size((batch_size,))
    if isinstance(batch_size, torch.Tensor):
        return _Size(batch_size.tolist() if batch_size.ndim else [int(batch_size)])
    try:
        size = _Size(int(s) for s in batch_size)
    except (TypeError, ValueError) as err:
        msg = f"batch_size must be a sequence of ints, got {batch_size!r}"
        raise TypeError(msg) from err
    if any(s < -1 for s in size):
        # -1 is the one negative size: it marks a ragged dim, as a nested tensor's shape reads.
        msg = f"batch_size must not hold sizes below -1 (-1 marks a ragged dim), got {list(size)}"
        raise ValueError(msg)
    return size


def as_device(device: Any) -> torch.device | None:
    """A tensordict's ``device`` argument as a ``torch.device`` (None stays None)."""
    if device is None or type(device) is torch.device:
        return device
    return torch.device(device)
