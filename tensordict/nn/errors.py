"""Exceptions raised by the tensordict modules.

Each subclasses :class:`tensordict.errors.TensorDictError` and the builtin that the
well-known ``tensordict.nn`` raises for the same case, so that code catching the
builtin keeps working.
"""

from __future__ import annotations

from tensordict.errors import TensorDictError

__all__ = [
    "DispatchArgumentError",
    "LogProbKeyError",
    "ModuleCallError",
    "ModuleInputError",
    "NotATensorDictError",
    "OutKeyNotFoundError",
    "SampleMethodError",
    "UnknownMappingError",
]


class UnknownMappingError(TensorDictError, NotImplementedError):
    """:func:`~tensordict.nn.mappings` got a name that no mapping has."""


class OutKeyNotFoundError(TensorDictError, ValueError, RuntimeError):
    """``select_out_keys`` got a key that the module does not write."""


class DispatchArgumentError(TensorDictError, RuntimeError):
    """A keyword call of a module (``module(x=...)``) got an input twice, or no way to find its keys."""


class ModuleInputError(TensorDictError, KeyError):
    """A module could not run because some of its ``in_keys`` are missing from the input."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ModuleCallError(TensorDictError, RuntimeError):
    """A module returned a different number of outputs than it has ``out_keys``, or was called wrongly."""


class LogProbKeyError(TensorDictError, RuntimeError):
    """The log-probability keys of a probabilistic module do not fit the ``composite_lp_aggregate`` mode."""


class SampleMethodError(TensorDictError, NotImplementedError):
    """A distribution lacks what the interaction type asks for (its mode, median, mean...)."""


class NotATensorDictError(TensorDictError, TypeError, RuntimeError):
    """A method that reads tensordicts (a composite distribution's scores) got another type."""
