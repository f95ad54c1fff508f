"""Global options: what repr shows, how lists and non-tensor stacks are stored, legacy modes.

Each option has a process-wide value and may be overridden for a block of code. The
``set_*`` classes do both: ``set_lazy_legacy(True).set()`` changes the process-wide value,
``with set_lazy_legacy(True): ...`` and ``@set_lazy_legacy(True)`` change it for the block or
the call only, and put the previous value back on the way out, even when the block raises.

A block's value lives in a :mod:`contextvars` variable, so two threads that each open a
block never see, nor undo, each other's value; a thread (or asyncio task) started inside
a block sees the process-wide value unless it runs in a copy of the block's context. The
process-wide value is guarded by a lock, and written to an environment variable where the
reference reads one at import, so that child processes start with it.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import threading
from collections.abc import Callable
from typing import Any

from tensordict.errors import warn

__all__ = [
    "capture_non_tensor_stack",
    "get_defaults_to_none",
    "get_printoptions",
    "lazy_legacy",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
]

_UNSET = object()
# The environment values read as true, and as false (lower case, spaces stripped); the
# modes of tensordict.nn read the same true values.
TRUE_WORDS = ("1", "true", "t", "yes", "y", "on")
_FALSE = ("0", "false", "f", "no", "n", "off")


def _env_flag(name: str) -> bool | None:
    # The value a child process inherits; a value that is not a truth value is ignored,
    # with a warning, rather than failing the import of the library.
    raw = os.environ.get(name)
    if raw is None:
        return None
    if raw.strip().lower() in TRUE_WORDS:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    warn(
        f"the environment variable {name}={raw!r} is not a truth value; it is ignored", UserWarning
    )
    return None


class _Option:
    """One option: a process-wide value, and a per-context value for blocks."""

    def __init__(self, name: str, default: Any, env: str | None = None) -> None:
        self.name = name
        self.default = default
        self.env = env
        self._lock = threading.Lock()
        self._global = _env_flag(env) if env else None
        self._block = contextvars.ContextVar(f"tensordict.{name}", default=_UNSET)

    def get(self, allow_none: bool = False) -> Any:
        value = self._block.get()
        if value is not _UNSET:
            return value
        value = self._global
        if value is None and not allow_none:
            return self.default
        return value

    def set_global(self, value: Any) -> None:
        with self._lock:
            self._global = value
            if self.env:
                os.environ[self.env] = "1" if value else "0"

    def saved(self) -> tuple:
        """What :meth:`set_global` changes, to give to :meth:`restore`."""
        return self._global, os.environ.get(self.env) if self.env else None

    def restore(self, saved: tuple) -> None:
        with self._lock:
            self._global, env_value = saved
            if self.env:
                if env_value is None:
                    os.environ.pop(self.env, None)
                else:
                    os.environ[self.env] = env_value

    def enter(self, value: Any) -> contextvars.Token:
        return self._block.set(value)

    def exit(self, token: contextvars.Token) -> None:
        self._block.reset(token)


def _check_mode(option: str, mode: Any) -> bool:
    if not isinstance(mode, bool):
        msg = f"{option} takes True or False, got {mode!r}"
        raise TypeError(msg)
    return mode


class _Setter:
    """Sets one option: for good with ``.set()``, for a block with ``with``, for a call as a decorator."""

    _option: _Option

    def __init__(self, value: Any) -> None:
        self._value = value
        # A stack, so that one instance may be entered again inside its own block.
        self._tokens: list[contextvars.Token] = []
        # What each set() replaced: __exit__ outside a block undoes the last one.
        self._replaced: list[tuple] = []

    def set(self) -> None:
        """Sets the option for the rest of the process (and the child processes it starts).

        Calling ``__exit__`` on the same object outside a ``with`` block undoes it.
        """
        self._replaced.append(self._option.saved())
        self._option.set_global(self._value)

    def _block_value(self) -> Any:
        return self._value

    def __enter__(self) -> _Setter:
        self._tokens.append(self._option.enter(self._block_value()))
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._tokens:
            self._option.exit(self._tokens.pop())
        elif self._replaced:
            self._option.restore(self._replaced.pop())  # undoes set()

    def __call__(self, func: Callable) -> Callable:
        option = self._option
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def generator(*args, **kwargs):
                # Each resumption runs under the option, never the caller's code between them.
                gen = func(*args, **kwargs)
                sent = None
                while True:
                    token = option.enter(self._block_value())
                    try:
                        item = gen.send(sent)
                    except StopIteration as stop:
                        return stop.value
                    finally:
                        option.exit(token)
                    sent = yield item

            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            token = option.enter(self._block_value())
            try:
                return func(*args, **kwargs)
            finally:
                option.exit(token)

        return wrapper

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._value!r})"


_LAZY_LEGACY = _Option("lazy_legacy", False, env="LAZY_LEGACY_OP")
_CAPTURE_NON_TENSOR_STACK = _Option(
    "capture_non_tensor_stack", False, env="CAPTURE_NONTENSOR_STACK"
)
_LIST_TO_STACK = _Option("list_to_stack", True, env="LIST_TO_STACK")
_GET_DEFAULTS_TO_NONE = _Option("get_defaults_to_none", True, env="TD_GET_DEFAULTS_TO_NONE")


class set_lazy_legacy(_Setter):
    """Turns the legacy lazy mode on or off.

    In the legacy lazy mode, the shape methods of a lazy stack (``unsqueeze``,
    ``squeeze``, ``permute``, ``transpose``, ``view``) return lazy views instead of new
    tensordicts, and :func:`torch.stack` of tensordicts stacks lazily. The mode is
    deprecated in the well-known API; turning it on warns.

    Args:
        mode (bool): ``True`` turns the mode on.

    Raises:
        TypeError: if ``mode`` is not a bool.

    Examples:
        >>> import warnings
        >>> from tensordict import lazy_legacy, set_lazy_legacy
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with set_lazy_legacy(True):
        ...         print(lazy_legacy())
        True
        >>> lazy_legacy()
        False
    """

    _option = _LAZY_LEGACY

    def __init__(self, mode: bool) -> None:
        super().__init__(_check_mode("set_lazy_legacy", mode))
        if mode:
            warn(
                "the legacy lazy mode is deprecated: shape methods will return new tensordicts "
                "and torch.stack will stack densely; use lazy_stack to build a lazy stack",
                DeprecationWarning,
            )


def lazy_legacy(allow_none: bool = False) -> bool | None:
    """Returns whether the legacy lazy mode is on (see :class:`set_lazy_legacy`).

    Args:
        allow_none (bool, optional): if ``True``, returns ``None`` while the option was
            never set, instead of its default ``False``.

    Returns:
        bool or None: the mode.

    Examples:
        >>> from tensordict import lazy_legacy
        >>> lazy_legacy()
        False
    """
    return _LAZY_LEGACY.get(allow_none)


class set_capture_non_tensor_stack(_Setter):
    """Chooses what stacking non-tensor entries that hold equal values gives.

    With ``True``, :func:`torch.stack` of tensordicts whose non-tensor entry holds the
    same value in every member gives one :class:`~tensordict.NonTensorData` with the
    stacked batch size; with ``False`` (the default), it gives a
    :class:`~tensordict.NonTensorStack`, as entries holding different values always do.

    Args:
        mode (bool): whether equal values are captured into one.

    Raises:
        TypeError: if ``mode`` is not a bool.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict, set_capture_non_tensor_stack
        >>> with set_capture_non_tensor_stack(True):
        ...     s = torch.stack([TensorDict(name="a"), TensorDict(name="a")])
        >>> type(s.get("name")).__name__
        'NonTensorData'
    """

    _option = _CAPTURE_NON_TENSOR_STACK

    def __init__(self, mode: bool) -> None:
        super().__init__(_check_mode("set_capture_non_tensor_stack", mode))


def capture_non_tensor_stack(allow_none: bool = False) -> bool | None:
    """Returns whether stacking equal non-tensor values gives one value.

    See :class:`set_capture_non_tensor_stack`.

    Args:
        allow_none (bool, optional): if ``True``, returns ``None`` while the option was
            never set, instead of its default ``False``.

    Returns:
        bool or None: the mode.

    Examples:
        >>> from tensordict import capture_non_tensor_stack
        >>> capture_non_tensor_stack()
        False
    """
    return _CAPTURE_NON_TENSOR_STACK.get(allow_none)


class set_list_to_stack(_Setter):
    """Chooses what assigning a list of non-numbers to a key stores.

    With ``True`` (the default), ``td["names"] = ["a", "b"]`` stores a
    :class:`~tensordict.NonTensorStack` with one value per row; with ``False``, it stores
    the list as one :class:`~tensordict.NonTensorData` value. A list of numbers becomes a
    tensor either way. ``False`` is deprecated in the well-known API; it warns.

    Args:
        mode (bool): whether a list becomes a stack.

    Raises:
        TypeError: if ``mode`` is not a bool.

    Examples:
        >>> import warnings
        >>> from tensordict import list_to_stack, set_list_to_stack
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with set_list_to_stack(False):
        ...         print(list_to_stack())
        False
    """

    _option = _LIST_TO_STACK

    def __init__(self, mode: bool) -> None:
        super().__init__(_check_mode("set_list_to_stack", mode))
        if not mode:
            warn(
                "set_list_to_stack(False) is deprecated; use td.set_non_tensor(key, value) "
                "to store a list as one value",
                DeprecationWarning,
            )


def list_to_stack(allow_none: bool = False) -> bool | None:
    """Returns whether assigning a list of non-numbers stores a NonTensorStack.

    See :class:`set_list_to_stack`.

    Args:
        allow_none (bool, optional): if ``True``, returns ``None`` while the option was
            never set, instead of its default ``True``.

    Returns:
        bool or None: the mode.

    Examples:
        >>> from tensordict import list_to_stack
        >>> list_to_stack()
        True
    """
    return _LIST_TO_STACK.get(allow_none)


def set_get_defaults_to_none(set_to_none: bool = True) -> None:
    """Sets, for the process, whether ``get`` of a missing key returns ``None`` or raises.

    The default, ``True``, makes :meth:`~tensordict.TensorDictBase.get` return ``None``
    for a missing key when no default is passed; ``False`` makes it raise ``KeyError``.
    Deprecated in the well-known API (``td[key]`` raises for a missing key); it warns.

    Args:
        set_to_none (bool, optional): the new setting. Defaults to ``True``.

    Raises:
        TypeError: if ``set_to_none`` is not a bool.

    Examples:
        >>> import warnings
        >>> from tensordict import TensorDict, set_get_defaults_to_none
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     set_get_defaults_to_none(False)
        ...     try:
        ...         TensorDict().get("x")
        ...     except KeyError:
        ...         print("raised")
        ...     set_get_defaults_to_none(True)
        raised
    """
    _check_mode("set_get_defaults_to_none", set_to_none)
    warn(
        "set_get_defaults_to_none() is deprecated; use td[key] to raise KeyError for a missing key",
        DeprecationWarning,
    )
    _GET_DEFAULTS_TO_NONE.set_global(set_to_none)


class _GetDefault:
    """The default of ``get``'s ``default``: None, or a KeyError while the option says so."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


GET_DEFAULT = _GetDefault()


def resolve_get_default(default: Any, no_default: Any) -> Any:
    """The default ``get`` uses: ``default`` itself, unless it was not passed."""
    if default is not GET_DEFAULT:
        return default
    return None if _GET_DEFAULTS_TO_NONE.get() else no_default


def get_defaults_to_none(set_to_none: bool = True) -> bool:
    """Returns whether ``get`` of a missing key returns ``None`` (see :func:`set_get_defaults_to_none`).

    Args:
        set_to_none (bool, optional): ignored; kept for the well-known signature.

    Returns:
        bool: the setting.

    Examples:
        >>> import warnings
        >>> from tensordict import get_defaults_to_none
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     print(get_defaults_to_none())
        True
    """
    warn(
        "get_defaults_to_none() is deprecated; use td[key] to raise KeyError for a missing key",
        DeprecationWarning,
    )
    return _GET_DEFAULTS_TO_NONE.get()


# --- print options -------------------------------------------------------------------

_PRINT_DEFAULTS = {
    "show_batch_size": True,
    "show_device": True,
    "show_is_shared": True,
    "show_shape": True,
    "show_field_device": True,
    "show_dtype": True,
    "show_field_is_shared": True,
    "show_grad": False,
    "show_is_contiguous": False,
    "show_is_view": False,
    "show_storage_size": False,
    "plain": False,
    "sort_keys": "alphabetical",
    "compact": True,
    "html": True,
}
_SORT_KEYS = ("alphabetical", "insertion")
# Options that only the detailed layout uses: passing one without ``compact`` asks for it.
_DETAILED_ONLY = frozenset(
    {
        "show_is_shared",
        "show_shape",
        "show_field_device",
        "show_field_is_shared",
        "show_grad",
        "show_is_contiguous",
        "show_is_view",
        "show_storage_size",
        "plain",
    }
)
_QUIET = (
    "show_device",
    "show_is_shared",
    "show_field_device",
    "show_dtype",
    "show_field_is_shared",
)

_PRINT = _Option("printoptions", None)
_PRINT.set_global(dict(_PRINT_DEFAULTS))


def _print_changes(verbose: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    _check_mode("set_printoptions(verbose=...)", verbose)
    unknown = sorted(set(kwargs) - set(_PRINT_DEFAULTS))
    if unknown:
        msg = f"unknown print options {unknown}; the options are {sorted(_PRINT_DEFAULTS)}"
        raise TypeError(msg)
    for name, value in kwargs.items():
        if name == "sort_keys":
            if value not in _SORT_KEYS:
                msg = f"print option 'sort_keys' takes one of {list(_SORT_KEYS)}, got {value!r}"
                raise ValueError(msg)
        else:
            _check_mode(f"print option {name!r}", value)
    changes = {} if verbose else dict.fromkeys(_QUIET, False)
    if "compact" not in kwargs and _DETAILED_ONLY & set(kwargs):
        changes["compact"] = False
    changes.update(kwargs)
    return changes


class set_printoptions(_Setter):
    """Sets what the repr of a tensordict shows.

    The options not passed keep their current value. By default a tensordict prints in
    a compact layout, one ``key: dtype[feature shape]`` per entry; ``compact=False``
    prints the detailed layout, one ``Tensor(shape=..., device=..., dtype=...,
    is_shared=...)`` line per entry, whose parts the ``show_*`` options choose.

    Args:
        verbose (bool, optional): ``False`` hides the device, dtype and ``is_shared``
            parts, unless a keyword sets them. Defaults to ``True``.
        **kwargs: the options: ``show_batch_size``, ``show_device``, ``show_is_shared``,
            ``show_shape``, ``show_field_device``, ``show_dtype``,
            ``show_field_is_shared``, ``show_grad``, ``show_is_contiguous``,
            ``show_is_view``, ``show_storage_size``, ``plain``, ``compact``, ``html``
            (each a bool) and ``sort_keys`` (``"alphabetical"`` or ``"insertion"``).
            An option only the detailed layout uses also sets ``compact=False`` when
            ``compact`` is not passed.

    Raises:
        TypeError: if an option is unknown or a flag is not a bool.
        ValueError: if ``sort_keys`` is not one of its values.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict, set_printoptions
        >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
        >>> print(td)
        TensorDict(batch_size=[3], fields={a: f32[]})
        >>> with set_printoptions(compact=False, verbose=False):
        ...     print(td)
        TensorDict(
            fields={
                a: Tensor(shape=torch.Size([3]))},
            batch_size=torch.Size([3]))
    """

    _option = _PRINT

    def __init__(self, *, verbose: bool = True, **kwargs: Any) -> None:
        super().__init__(_print_changes(verbose, kwargs))

    def set(self) -> None:
        """Sets the options for the rest of the process."""
        self._replaced.append(self._option.saved())
        self._option.set_global({**dict(self._option._global), **self._value})

    def _block_value(self) -> dict[str, Any]:
        return {**get_printoptions(), **self._value}


def get_printoptions() -> dict[str, Any]:
    """Returns the current print options, as a new dict (see :class:`set_printoptions`).

    Returns:
        dict: option name to value.

    Examples:
        >>> from tensordict import get_printoptions
        >>> get_printoptions()["compact"]
        True
    """
    return dict(_PRINT.get())
