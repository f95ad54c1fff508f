"""Exceptions raised by tensordict.

Each exception subclasses the builtin that the well-known TensorDict API raises
for the same case, so that code catching the builtin keeps working.
"""

from __future__ import annotations


class TensorDictError(Exception):
    """Base class of every exception defined by tensordict."""


class LockedError(TensorDictError, RuntimeError):
    """A locked tensordict was asked to add, remove or rebind an entry."""


class BatchSizeError(TensorDictError, RuntimeError):
    """A value's leading dimensions do not match the batch size."""


class KeyMismatchError(TensorDictError, KeyError):
    """Two tensordicts that must have the same keys do not."""

    def __str__(self) -> str:  # KeyError quotes its message; ours is a sentence.
        return str(self.args[0]) if self.args else ""


class MissingKeyError(TensorDictError, KeyError):
    """A key is not in the tensordict."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidSourceError(TensorDictError, TypeError, ValueError):
    """A tensordict was built from something that is not a mapping."""


class PathThroughLeafError(TensorDictError, KeyError, ValueError):
    """A nested key goes through an entry that is not a tensordict."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MemmapFormatError(TensorDictError, ValueError):
    """A memory-mapped folder does not follow the on-disk format."""


class MemmapNotFoundError(TensorDictError, FileNotFoundError):
    """A memory-mapped folder or one of its files is missing."""


class NotMemmapError(TensorDictError, RuntimeError):
    """A memory-mapping method was called on a tensordict that is not memory-mapped."""


class UnknownFieldError(TensorDictError, AttributeError, TypeError, ValueError):
    """A name that is not a field of the tensorclass was given as one.

    It subclasses ``TypeError`` (what a dataclass raises for an unexpected keyword
    argument), ``AttributeError`` (what the well-known API raises when setting it)
    and ``ValueError`` (what it raises from ``update``).
    """


class ReservedFieldError(TensorDictError, AttributeError):
    """A field is named like a tensordict method or attribute, and ``shadow`` is off."""
