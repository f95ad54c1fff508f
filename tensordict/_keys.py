"""Nested keys: a string, or a tuple of strings (nested tuples flatten)."""

from __future__ import annotations

from typing import Union

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
            raise TypeError(msg)


def unravel_key(key: NestedKey) -> NestedKey:
    """Returns the canonical form of a nested key.

    A string stays a string; a tuple is flattened (nested tuples are spliced in)
    and a one-element tuple becomes its string.

    Args:
        key (NestedKey): a string or a (possibly nested) tuple of strings.

    Returns:
        A string, or a flat tuple of at least two strings.

    Raises:
        TypeError: if the key or one of its parts is not a string.
        ValueError: if the key is an empty tuple.

    Examples:
        >>> unravel_key(("a", ("b", ("c",))))
        ('a', 'b', 'c')
        >>> unravel_key(("a",))
        'a'
    """
    if type(key) is str:
        return key
    parts = _key_parts(key)
    return parts[0] if len(parts) == 1 else parts


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
    raise TypeError(msg)


def _is_key(key) -> bool:
    """True if ``key`` is a valid nested key."""
    try:
        _key_parts(key)
    except (TypeError, ValueError):
        return False
    return True


def unravel_key_list(keys) -> list:
    """Returns each key of ``keys`` unravelled (see :func:`unravel_key`)."""
    return [unravel_key(k) for k in keys]
