"""Nested keys: a string, or a tuple of strings (nested tuples flatten)."""

from __future__ import annotations

from typing import Union

from tensordict.errors import KeyTypeError

NestedKey = Union[str, tuple]


def _flatten_tuple(key: tuple, out: list) -> None:
    for part in key:
        if type(part) is str:
            out.append(part)
        elif isinstance(part, tuple):
            _flatten_tuple(part, out)
        elif isinstance(part, str):
            out.append(str(part))
        else:
            msg = (
                f"key parts must be strings, got {part!r} of type {type(part).__name__} in {key!r}"
            )
            raise KeyTypeError(msg)


def canonical_key(key: NestedKey) -> NestedKey:
    """Returns the canonical form of a nested key, refusing anything that is not a key.

    A string stays a string; a tuple is flattened (nested tuples are spliced in) and a
    one-element tuple becomes its string. The library checks every key it is given with
    this; the public :func:`unravel_key` answers ``()`` for a tuple that is not a key.

    Raises:
        KeyTypeError: if the key or one of its parts is not a string (a ``TypeError`` and a
            ``RuntimeError``).
        ValueError: if the key is an empty tuple.
    """
    if type(key) is str:
        return key
    parts = _key_parts(key)
    return parts[0] if len(parts) == 1 else parts


def _lenient_parts(key: tuple, out: list) -> bool:
    """Appends the string parts of ``key`` to ``out``; False at the first part that is not one."""
    for part in key:
        if isinstance(part, str):
            out.append(str(part))
        elif isinstance(part, tuple) and part:
            if not _lenient_parts(part, out):
                return False
        else:
            return False
    return True


def unravel_key(key: NestedKey) -> NestedKey:
    """Returns the canonical form of a nested key, or ``()`` for a tuple that is not one.

    A string stays a string; a tuple is flattened (nested tuples are spliced in) and a
    one-element tuple becomes its string, so that equal keys compare equal. A tuple with a
    part that is neither a string nor a non-empty tuple of them (an index such as
    ``(0, slice(3, 4))``, say) unravels to ``()``: code can ask whether a tuple is a key
    with ``unravel_key(t)``, as it does with the well-known implementation.

    Args:
        key (NestedKey): a string or a (possibly nested) tuple of strings.

    Returns:
        A string, a flat tuple of at least two strings, or ``()``.

    Raises:
        KeyTypeError: if ``key`` is neither a string nor a tuple (a ``TypeError`` and a
            ``RuntimeError``).

    Examples:
        >>> unravel_key(("a", ("b", ("c",))))
        ('a', 'b', 'c')
        >>> unravel_key(("a",))
        'a'
        >>> unravel_key((0, slice(3, 4)))
        ()
    """
    if type(key) is str:
        return key
    if isinstance(key, str):
        return str(key)
    if not isinstance(key, tuple):
        msg = f"a key must be a string or a tuple of strings, got {key!r} of type {type(key).__name__}"
        raise KeyTypeError(msg)
    out: list = []
    if not _lenient_parts(key, out) or not out:
        return ()
    return out[0] if len(out) == 1 else tuple(out)


def _key_parts(key: NestedKey) -> tuple:
    """Returns the key as a non-empty flat tuple of strings."""
    if type(key) is str:
        return (key,)
    if isinstance(key, tuple):
        if all(type(p) is str for p in key):
            parts = key
        else:
            out: list = []
            _flatten_tuple(key, out)
            parts = tuple(out)
        if not parts:
            msg = f"a nested key must have at least one part, got the empty tuple {key!r}"
            raise ValueError(msg)
        return parts
    if isinstance(key, str):
        return (str(key),)
    msg = f"keys must be a string or a tuple of strings, got {key!r} of type {type(key).__name__}"
    raise KeyTypeError(msg)


def _is_key(key) -> bool:
    """True if ``key`` is a valid nested key."""
    try:
        _key_parts(key)
    except (TypeError, ValueError):
        return False
    return True


def unravel_key_list(keys: list[NestedKey] | tuple[NestedKey, ...]) -> list[NestedKey]:
    """Returns each key of ``keys`` in its canonical form (see :func:`unravel_key`).

    Args:
        keys (list or tuple of NestedKey): the keys.

    Returns:
        A list of strings and flat tuples of strings.

    Raises:
        KeyTypeError: if ``keys`` is not a list or a tuple, or one of them is not a key.

    Examples:
        >>> unravel_key_list(["a", ("b",), ("c", ("d",))])
        ['a', 'b', ('c', 'd')]
    """
    if not isinstance(keys, (list, tuple)):
        msg = f"unravel_key_list expects a list or a tuple of keys, got {type(keys).__name__}"
        raise KeyTypeError(msg)
    return [canonical_key(k) for k in keys]
