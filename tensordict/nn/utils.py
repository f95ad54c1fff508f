"""Helpers of the tensordict modules: positive mappings and the process-wide modes they read.

The mappings (:func:`mappings`, :func:`inv_softplus`, :class:`biased_softplus`,
:func:`expln`) turn the output of a network into a positive scale. The modes
(:func:`skip_existing`, :func:`composite_lp_aggregate`, and whether
:class:`~tensordict.nn.dispatch` takes keyword calls) are read by every module
call. Each mode has a process-wide value, which a ``with`` block changes for
every thread while it lasts, and an optional value of the calling thread
(``thread_local=True``), which wins over the process-wide one in that thread.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import warnings
from collections.abc import Callable
from textwrap import indent
from typing import Any

import torch
from torch import nn

from tensordict._keys import unravel_key_list
from tensordict._options import TRUE_WORDS
from tensordict.errors import InvalidArgumentError
from tensordict.nn.errors import UnknownMappingError

__all__ = [
    "add_custom_mapping",
    "biased_softplus",
    "composite_lp_aggregate",
    "expln",
    "inv_softplus",
    "mappings",
    "set_composite_lp_aggregate",
    "set_skip_existing",
    "skip_existing",
]

_UNSET = object()
# frames in these folders are ours or torch's (nn.Module.__call__): a warning points past them
_INTERNAL = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
)


def _user_warn(message: str, category: type[Warning]) -> None:
    """Warns with the location of the first caller outside tensordict and torch (a module call)."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _fields_repr(obj: object, fields: list[str]) -> str:
    """``Name(`` then one ``field=value`` a line, indented by four spaces: the repr of the modules."""
    return f"{type(obj).__name__}(\n{indent(f',{chr(10)}'.join(fields), 4 * ' ')})"


def _env_true(name: str, default: bool | None) -> bool | None:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in TRUE_WORDS


class _Mode:
    """A value with a process-wide setting and an optional per-thread one.

    A thread that set its own value (``set_thread``) keeps every later change in
    that thread, so that blocks it opens never leak into other threads.
    """

    def __init__(self, default: Any) -> None:
        self._value = default
        self._local = threading.local()
        self._any_thread_value = False  # reads skip the thread slot until one is set

    def get(self) -> Any:
        if self._any_thread_value:
            value = getattr(self._local, "value", _UNSET)
            if value is not _UNSET:
                return value
        return self._value

    def set(self, value: Any) -> None:
        if self._any_thread_value and getattr(self._local, "value", _UNSET) is not _UNSET:
            self._local.value = value
        else:
            self._value = value

    def get_thread(self) -> Any:
        return getattr(self._local, "value", _UNSET)

    def set_thread(self, value: Any) -> None:
        self._any_thread_value = True
        self._local.value = value

    def saved(self, thread_local: bool) -> Any:
        """What a block that sets the value restores on exit: the thread's own value, or :meth:`get`."""
        return self.get_thread() if thread_local else self.get()

    def put(self, value: Any, thread_local: bool) -> None:
        """Sets the value for the calling thread (``thread_local``) or for the process."""
        if thread_local:
            self.set_thread(value)
        else:
            self.set(value)


class _BlockSetter:
    """Base of the ``set_*`` classes: a context manager over one :class:`_Mode` that also decorates functions.

    A block puts the setter's value (the attribute named by ``_value_attr``) in
    the class's ``_switch``, for the calling thread only with ``thread_local``,
    and puts back on exit what was there. Each call of a decorated function
    enters a fresh copy (:meth:`clone`), so that one decorator serves recursive
    and concurrent calls.
    """

    _switch: _Mode
    _value_attr = "mode"

    def __init__(self, value: Any, *, thread_local: bool = False) -> None:
        setattr(self, self._value_attr, value)
        self.thread_local = thread_local
        self._previous: list = []

    def clone(self) -> _BlockSetter:
        """Returns a new setter of the same class with the same value and ``thread_local``, for one more block.

        Examples:
            >>> from tensordict.nn import set_composite_lp_aggregate, set_interaction_type
            >>> set_composite_lp_aggregate(False).clone().mode
            False
            >>> set_interaction_type("mode").clone().type
            <InteractionType.MODE: 'mode'>
        """
        return type(self)(getattr(self, self._value_attr), thread_local=self.thread_local)

    def __enter__(self) -> None:
        self._previous.append(self._switch.saved(self.thread_local))
        self._switch.put(getattr(self, self._value_attr), self.thread_local)

    def __exit__(self, *exc_info: object) -> None:
        self._switch.put(self._previous.pop(), self.thread_local)

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper


# ---------------------------------------------------------------------- mappings
def inv_softplus(bias: float | torch.Tensor) -> float | torch.Tensor:
    """Returns the input that the softplus function maps to ``bias``: ``log(exp(bias) - 1)``.

    ``exp(bias) - 1`` is clamped to ``1e-6`` or more, so that the result stays
    finite for ``bias <= 0``.

    Args:
        bias (float or torch.Tensor): a value of the softplus function.

    Returns:
        A float for a number, else a tensor.

    Examples:
        >>> from tensordict.nn import inv_softplus
        >>> torch.nn.functional.softplus(inv_softplus(torch.tensor([1.0, 3.0])))
        tensor([1., 3.])
        >>> round(inv_softplus(2.0), 4)
        1.8546
    """
    if isinstance(bias, torch.Tensor):
        return bias.expm1().clamp_min(1e-6).log()
    out = torch.tensor(bias).expm1().clamp_min(1e-6).log()
    return out.item() if out.numel() == 1 else out


class biased_softplus(nn.Module):
    """A softplus shifted to give ``bias`` at zero, and bounded below by ``min_val``.

    It computes ``softplus(x + inv_softplus(bias - min_val)) + min_val``.
    :func:`mappings` returns one for the names ``"biased_softplus_{bias}"`` and
    ``"biased_softplus_{bias}_{min_val}"``.

    Args:
        bias (float): the value at zero.
        min_val (float, optional): the lower bound. Defaults to ``0.01``.

    Examples:
        >>> from tensordict.nn import biased_softplus
        >>> biased_softplus(1.0)(torch.zeros(2))
        tensor([1., 1.])
        >>> bool(biased_softplus(2.0, min_val=0.5)(torch.full((1,), -100.0)) >= 0.5)
        True
    """

    def __init__(self, bias: float, min_val: float = 0.01) -> None:
        super().__init__()
        self.bias = inv_softplus(bias - min_val)
        self.min_val = min_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns the shifted softplus of ``x``.

        Args:
            x (torch.Tensor): the input.

        Returns:
            A new tensor of the shape of ``x``.

        Examples:
            >>> from tensordict.nn import biased_softplus
            >>> biased_softplus(1.0).forward(torch.zeros(1))
            tensor([1.])
        """
        return torch.nn.functional.softplus(x + self.bias) + self.min_val


def expln(x: torch.Tensor) -> torch.Tensor:
    """Maps reals to positive reals: ``exp(x)`` where ``x <= 0``, ``log1p(x) + 1`` elsewhere.

    The function is smooth and grows like a logarithm, which keeps large network
    outputs from giving huge scales (Rückstieß et al., "State-Dependent
    Exploration for Policy Gradient Methods", 2008). :func:`mappings` returns it
    for ``"expln"``.

    Args:
        x (torch.Tensor): the input.

    Returns:
        A new tensor of the shape of ``x``.

    Examples:
        >>> from tensordict.nn.utils import expln
        >>> expln(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([0.3679, 1.0000, 1.6931])
    """
    negative = x <= 0
    # each branch sees only the values it is meant for, so neither overflows
    low = torch.where(negative, x, torch.zeros_like(x)).exp()
    high = torch.where(negative, torch.zeros_like(x), x).log1p() + 1
    return torch.where(negative, low, high)


def _identity(x):
    return x


_MAPPINGS: dict[str, Callable] = {
    "softplus": torch.nn.functional.softplus,
    "exp": torch.exp,
    "relu": torch.relu,
    "biased_softplus": biased_softplus(1.0),
    "none": _identity,
    "expln": expln,
}


def mappings(key: str) -> Callable:
    """Returns the elementwise function named ``key``, most of them mapping to positive values.

    Modules such as :class:`~tensordict.nn.NormalParamExtractor` use it to turn a
    network output into a scale.

    Args:
        key (str): ``"softplus"``, ``"exp"``, ``"relu"``, ``"expln"``,
            ``"biased_softplus"`` (bias 1.0), ``"none"`` (the identity), a name
            added with :func:`add_custom_mapping`, or
            ``"biased_softplus_{bias}"`` / ``"biased_softplus_{bias}_{min_val}"``.

    Returns:
        A callable taking and returning a tensor.

    Raises:
        NotImplementedError: if ``key`` names no mapping.
        ValueError: if a ``"biased_softplus_..."`` name has more parts than bias
            and minimum.

    Examples:
        >>> from tensordict.nn import mappings
        >>> mappings("exp")(torch.zeros(2))
        tensor([1., 1.])
        >>> mappings("biased_softplus_2.0_0.1")(torch.zeros(2))
        tensor([2., 2.])
    """
    if key in _MAPPINGS:
        return _MAPPINGS[key]
    if key.startswith("biased_softplus"):
        parts = key.split("_")
        if len(parts) == 3:
            return biased_softplus(float(parts[2]))
        if len(parts) == 4:
            return biased_softplus(float(parts[2]), min_val=float(parts[3]))
        msg = f"the mapping {key!r} must read 'biased_softplus_<bias>' or 'biased_softplus_<bias>_<min_val>'"
        raise InvalidArgumentError(msg)
    msg = f"no mapping is named {key!r}; known names: {sorted(_MAPPINGS)} (add one with add_custom_mapping)"
    raise UnknownMappingError(msg)


def add_custom_mapping(name: str, mapping: Callable) -> None:
    """Registers ``mapping`` under ``name`` for :func:`mappings` (replacing a mapping of that name).

    Args:
        name (str): the name.
        mapping (Callable): a function from a tensor to a tensor of the same shape.

    Examples:
        >>> from tensordict.nn import add_custom_mapping, mappings
        >>> add_custom_mapping("halve", lambda x: x / 2)
        >>> mappings("halve")(torch.ones(2))
        tensor([0.5000, 0.5000])
    """
    _MAPPINGS[name] = mapping


# ---------------------------------------------------------------------- skip_existing
_skip_existing = _Mode(False)


def skip_existing() -> bool | list:
    """Returns the mode set by :class:`set_skip_existing`: ``False`` (the default), ``True`` or a list of keys.

    Examples:
        >>> from tensordict.nn import set_skip_existing, skip_existing
        >>> skip_existing()
        False
        >>> with set_skip_existing(["a"]):
        ...     skip_existing()
        ['a']
    """
    return _skip_existing.get()


def _should_skip(mode, module, tensordict, in_key_attr: str, out_key_attr: str) -> bool:
    # A module whose outputs all exist does not run, unless it also reads one of them.
    if not mode:
        return False
    in_keys = getattr(module, in_key_attr)
    out_keys = getattr(module, out_key_attr)
    if mode is not True and not all(key in mode for key in out_keys):
        return False
    present = tensordict.keys(include_nested=True)
    if not all(key in present for key in out_keys):
        return False
    return not any(key in out_keys for key in in_keys)


def _check_tensordict_first(func: Callable, what: str) -> None:
    names = [n for n in inspect.signature(func).parameters if n != "self"]
    if not names or names[0] != "tensordict":
        msg = f"{what} decorates a method whose first argument (after self) is named 'tensordict'; {func.__qualname__} takes {names[:1]}"
        raise RuntimeError(msg)


class set_skip_existing(_BlockSetter):
    """Makes modules skip their call when all their ``out_keys`` are already in the input.

    As a context manager it sets :func:`skip_existing` for the block; the
    modules of ``tensordict.nn`` read it at each call. A module that reads one of
    its own outputs always runs. As a decorator of a method
    ``forward(self, tensordict, ...)``, it does the same check with ``mode``
    before the method runs.

    Args:
        mode (bool, list of NestedKey or None, optional): ``True`` skips any
            module whose outputs exist, ``False`` none, a list of keys only the
            modules whose outputs are all in the list. ``None`` (decorators only)
            follows the enclosing block. Defaults to ``True``.
        in_key_attr (str, optional): for a decorator, the attribute holding the
            module's input keys. Defaults to ``"in_keys"``.
        out_key_attr (str, optional): the attribute holding its output keys.
            Defaults to ``"out_keys"``.

    Keyword Args:
        thread_local (bool, optional): set the mode for the calling thread only.
            Defaults to ``False`` (the whole process).

    Raises:
        RuntimeError: if a ``None`` mode is entered as a context manager.

    Examples:
        >>> from tensordict.nn import TensorDictModule, set_skip_existing
        >>> module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
        >>> td = TensorDict(x=torch.zeros(()), y=torch.zeros(()))
        >>> with set_skip_existing():
        ...     module(td)["y"]  # "y" exists: the module does not run
        tensor(0.)
        >>> module(td)["y"]
        tensor(1.)
    """

    _switch = _skip_existing

    def __init__(
        self,
        mode: bool | list | None = True,
        in_key_attr: str = "in_keys",
        out_key_attr: str = "out_keys",
        *,
        thread_local: bool = False,
    ) -> None:
        super().__init__(
            unravel_key_list(mode) if isinstance(mode, list) else mode, thread_local=thread_local
        )
        self.in_key_attr = in_key_attr
        self.out_key_attr = out_key_attr
        self._decorating = False

    def clone(self) -> set_skip_existing:
        """Returns a new setter with the same mode, for one more block.

        Examples:
            >>> from tensordict.nn import set_skip_existing
            >>> set_skip_existing(["a"]).clone().mode
            ['a']
        """
        out = type(self)(
            self.mode, self.in_key_attr, self.out_key_attr, thread_local=self.thread_local
        )
        out._decorating = self._decorating
        return out

    def __call__(self, func: Callable) -> Callable:
        _check_tensordict_first(func, type(self).__name__)
        self._decorating = True
        setter = self

        @functools.wraps(func)
        def wrapper(_self, tensordict, *args, **kwargs):
            with setter.clone():
                if _should_skip(
                    skip_existing(), _self, tensordict, setter.in_key_attr, setter.out_key_attr
                ):
                    return tensordict
                return func(_self, tensordict, *args, **kwargs)

        return wrapper

    def __enter__(self) -> None:
        if self.mode is not None:
            super().__enter__()
            return
        # a None mode follows the enclosing block: nothing to put, but __exit__ still pops
        self._previous.append(self._switch.saved(self.thread_local))
        if not self._decorating:
            msg = "set_skip_existing(None) only decorates methods; as a block it needs True, False or a list of keys"
            raise RuntimeError(msg)


class _set_skip_existing_None:
    """Kept for torchrl: decorates ``forward(self, tensordict, ...)`` to honour the enclosing skip mode.

    The decorated method returns its input untouched when the current
    :func:`skip_existing` mode says so (see :class:`set_skip_existing`); it never
    changes the mode itself. It takes no argument, so that one instance can be
    shared by every class.

    Examples:
        >>> from tensordict.nn import TensorDictModuleBase, set_skip_existing
        >>> from tensordict.nn.utils import _set_skip_existing_None
        >>> class Writer(TensorDictModuleBase):
        ...     in_keys = []
        ...     out_keys = ["out"]
        ...     @_set_skip_existing_None()
        ...     def forward(self, tensordict):
        ...         return tensordict.set("out", torch.ones(()))
        >>> with set_skip_existing(True):
        ...     Writer()(TensorDict(out=torch.zeros(())))["out"]
        tensor(0.)
    """

    in_key_attr = "in_keys"
    out_key_attr = "out_keys"

    def clone(self) -> _set_skip_existing_None:
        return type(self)()

    def __call__(self, func: Callable) -> Callable:
        _check_tensordict_first(func, "_set_skip_existing_None")

        @functools.wraps(func)
        def wrapper(_self, tensordict, *args, **kwargs):
            mode = _skip_existing.get()
            if mode and _should_skip(mode, _self, tensordict, "in_keys", "out_keys"):
                return tensordict
            return func(_self, tensordict, *args, **kwargs)

        return wrapper


# ---------------------------------------------------------------------- dispatch switch
_dispatch_tdnn_modules = _Mode(_env_true("DISPATCH_TDNN_MODULES", True))


def _dispatch_td_nn_modules() -> bool:
    """Whether :class:`~tensordict.nn.dispatch` takes keyword calls (``DISPATCH_TDNN_MODULES``)."""
    return bool(_dispatch_tdnn_modules.get())


class _set_dispatch_td_nn_modules(_BlockSetter):
    """Kept for torchrl: turns keyword calls of tensordict modules (:class:`~tensordict.nn.dispatch`) on or off.

    With ``False``, a module only takes a tensordict; torchrl turns it off
    around code it compiles.

    Args:
        mode (bool): whether keyword calls are accepted.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tensordict.nn.utils import _set_dispatch_td_nn_modules
        >>> module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
        >>> with _set_dispatch_td_nn_modules(False):
        ...     module(TensorDict(x=torch.zeros(())))["y"]
        tensor(1.)
    """

    _switch = _dispatch_tdnn_modules

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)

    def clone(self) -> _set_dispatch_td_nn_modules:
        return type(self)(self.mode)


# ---------------------------------------------------------------------- composite_lp_aggregate
_composite_lp_aggregate = _Mode(_env_true("COMPOSITE_LP_AGGREGATE", None))


def composite_lp_aggregate(nowarn: bool = False) -> bool:
    """Whether composite distributions sum their log-probabilities (and entropies) into one tensor.

    ``False`` unless :class:`set_composite_lp_aggregate` or the
    ``COMPOSITE_LP_AGGREGATE`` environment variable says otherwise. It also
    decides where probabilistic modules write log-probabilities: one
    ``"sample_log_prob"`` entry when ``True``, a ``"<sample>_log_prob"`` entry per
    sample when ``False``.

    Args:
        nowarn (bool, optional): accepted and ignored. Defaults to ``False``.

    Examples:
        >>> from tensordict.nn import composite_lp_aggregate, set_composite_lp_aggregate
        >>> composite_lp_aggregate()
        False
        >>> with set_composite_lp_aggregate(True):
        ...     composite_lp_aggregate()
        True
    """
    return bool(_composite_lp_aggregate.get())


class set_composite_lp_aggregate(_BlockSetter):
    """Sets :func:`composite_lp_aggregate` for a block, a decorated function, or for good with :meth:`set`.

    Args:
        mode (bool, optional): the value inside the block. Defaults to ``True``.

    Keyword Args:
        thread_local (bool, optional): set it for the calling thread only.
            Defaults to ``False`` (the whole process).

    Examples:
        >>> from tensordict.nn import CompositeDistribution, set_composite_lp_aggregate
        >>> params = TensorDict(
        ...     a={"loc": torch.zeros(3), "scale": torch.ones(3)},
        ...     b={"logits": torch.zeros(3, 2)},
        ...     batch_size=[3],
        ... )
        >>> dist = CompositeDistribution(
        ...     params,
        ...     distribution_map={"a": torch.distributions.Normal, "b": torch.distributions.Categorical},
        ... )
        >>> sample = TensorDict(a=torch.zeros(3), b=torch.zeros(3, dtype=torch.long), batch_size=[3])
        >>> sorted(dist.log_prob(sample).keys())
        ['a_log_prob', 'b_log_prob']
        >>> with set_composite_lp_aggregate(True):
        ...     dist.log_prob(sample).shape
        torch.Size([3])
    """

    _switch = _composite_lp_aggregate

    def __init__(self, mode: bool = True, *, thread_local: bool = False) -> None:
        super().__init__(mode, thread_local=thread_local)

    def set(self) -> None:
        """Sets the mode until :meth:`unset` (not tied to a block).

        Examples:
            >>> from tensordict.nn import composite_lp_aggregate, set_composite_lp_aggregate
            >>> setter = set_composite_lp_aggregate(True)
            >>> setter.set()
            >>> composite_lp_aggregate()
            True
            >>> setter.unset()
            >>> composite_lp_aggregate()
            False
        """
        self.__enter__()

    def unset(self) -> None:
        """Restores the mode that :meth:`set` replaced.

        Examples:
            >>> from tensordict.nn import set_composite_lp_aggregate
            >>> setter = set_composite_lp_aggregate(True)
            >>> setter.set()
            >>> setter.unset()
        """
        self.__exit__(None, None, None)
