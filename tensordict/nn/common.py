"""Modules that read ``in_keys`` from a tensordict and write ``out_keys`` to it.

:class:`TensorDictModuleBase` is the base of every tensordict module: it holds the
keys and lets a call keep only some outputs (:meth:`~TensorDictModuleBase.select_out_keys`).
:class:`TensorDictModule` wraps a callable on tensors, :class:`TensorDictModuleWrapper`
wraps another tensordict module, :class:`WrapModule` a function on tensordicts,
and :class:`as_tensordict_module` turns a function into a module.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable, MutableSequence, Sequence
from typing import Any

import torch
from torch import nn

from tensordict._collection import NO_DEFAULT, is_non_tensor, is_tensor_collection
from tensordict._keys import NestedKey, unravel_key_list
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import InvalidArgumentError
from tensordict.functional import make_tensordict
from tensordict.nn.dispatch import _module_forward, dispatch
from tensordict.nn.errors import ModuleCallError, ModuleInputError, OutKeyNotFoundError
from tensordict.nn.utils import _fields_repr, _user_warn

try:  # cloudpickle sends lambdas; a plain function or module pickles without it
    import cloudpickle
except ImportError:  # pragma: no cover - torchrl brings it
    cloudpickle = None

__all__ = [
    "TensorDictModule",
    "TensorDictModuleBase",
    "TensorDictModuleWrapper",
    "WrapModule",
    "as_tensordict_module",
    "dispatch",
    "make_tensordict",
]


class _OutKeysSelect:
    """A forward hook that drops the outputs not chosen by ``select_out_keys``."""

    def __init__(self, module: TensorDictModuleBase, selected: list) -> None:
        self.selected = selected
        self.source = list(module.out_keys)
        self.module = module

    def __call__(self, module, args, kwargs, output):
        if not is_tensor_collection(output):
            return output  # a keyword call: dispatch already returned the selected tensors
        in_keys = module.in_keys
        out_keys = module.out_keys
        dropped = [key for key in self.source if key not in out_keys and key not in in_keys]
        output.exclude(*dropped, inplace=True)
        for key in dropped:  # a sub-tensordict left empty by the drop goes too
            if isinstance(key, str):
                continue
            for depth in range(len(key) - 1, 0, -1):
                parent = key[:depth] if depth > 1 else key[0]
                if parent in out_keys or parent in in_keys:
                    break
                value = output.get(parent, None)
                if not is_tensor_collection(value) or not value.is_empty():
                    break
                del output[parent]
        return output

    def remove(self) -> None:
        if self.module.out_keys == self.selected:
            self.module._out_keys_apparent = self.source


class TensorDictModuleBase(nn.Module):
    """The base of the tensordict modules: ``tensordict_out = module(tensordict_in)``.

    Subclass it to write a module whose ``forward`` takes and returns a
    tensordict. Give it ``in_keys`` (what it reads) and ``out_keys`` (what it
    writes) as class attributes or in ``__init__``:
    :class:`~tensordict.nn.TensorDictSequential` reads them to chain modules.
    Keys are unravelled (``("a", ("b",))`` becomes ``("a", "b")``).

    Examples:
        >>> from tensordict.nn import TensorDictModuleBase
        >>> class Mod(TensorDictModuleBase):
        ...     in_keys = ["a"]
        ...     out_keys = ["b", "c"]
        ...     def forward(self, tensordict):
        ...         b = tensordict["a"] + 1
        ...         return tensordict.update({"b": b, "c": b + 1})
        >>> mod = Mod()
        >>> mod(TensorDict(a=0))["c"]
        tensor(2)
        >>> _ = mod.select_out_keys("c")
        >>> sorted(mod(TensorDict(a=0)).keys())
        ['a', 'c']
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # Plain class attributes become the stored keys behind the properties.
        for name in ("in_keys", "out_keys"):
            value = cls.__dict__.get(name)
            if value is None or isinstance(value, property):
                continue
            keys = unravel_key_list(list(value))
            delattr(cls, name)
            if name == "in_keys":
                cls._in_keys = keys
            else:
                cls._out_keys = cls._out_keys_apparent = keys

    @staticmethod
    def is_tdmodule_compatible(module: object) -> bool:
        """Whether ``module`` has both ``in_keys`` and ``out_keys`` (a sequence wraps the others).

        Args:
            module: any object.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictModuleBase
            >>> TensorDictModuleBase.is_tdmodule_compatible(torch.nn.Linear(1, 1))
            False
            >>> TensorDictModuleBase.is_tdmodule_compatible(
            ...     TensorDictModule(torch.nn.Linear(1, 1), in_keys=["x"], out_keys=["y"]))
            True
        """
        return hasattr(module, "in_keys") and hasattr(module, "out_keys")

    @property
    def in_keys(self) -> list:
        """The keys the module reads from its input.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> TensorDictModule(lambda x: x, in_keys=[("a", ("b",))], out_keys=["c"]).in_keys
            [('a', 'b')]
        """
        return self._in_keys

    @in_keys.setter
    def in_keys(self, value: Sequence[NestedKey]) -> None:
        self._in_keys = unravel_key_list(list(value))

    @property
    def out_keys(self) -> list:
        """The keys the module writes (after :meth:`select_out_keys`, only the selected ones).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> TensorDictModule(lambda x: x, in_keys=["a"], out_keys="b").out_keys
            ['b']
        """
        return self._out_keys_apparent

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey]) -> None:
        self._out_keys = self._out_keys_apparent = unravel_key_list(list(value))

    @property
    def out_keys_source(self) -> list:
        """Every key the module writes, whatever :meth:`select_out_keys` chose.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> mod = TensorDictModule(lambda x: (x, x), in_keys=["a"], out_keys=["b", "c"])
            >>> mod.select_out_keys("c").out_keys_source
            ['b', 'c']
        """
        return self._out_keys

    def select_out_keys(self, *out_keys: NestedKey) -> TensorDictModuleBase:
        """Keeps only some outputs of the module, in place; :meth:`reset_out_keys` undoes it.

        The module still computes every output, then removes the others from the
        result (entries of the input stay). Called with tensors, it returns only
        the selected ones.

        Args:
            *out_keys (NestedKey): the keys to keep, each one of ``out_keys``.

        Returns:
            The module itself.

        Raises:
            ValueError: (also a ``RuntimeError``) if a key is not one of ``out_keys``.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> mod = TensorDictModule(lambda x, y: (x + 2, y + 2), in_keys=["a", "b"], out_keys=["c", "d"])
            >>> _ = mod.select_out_keys("d")
            >>> sorted(mod(TensorDict(a=torch.zeros(()), b=torch.ones(()))).keys())
            ['a', 'b', 'd']
            >>> mod(torch.zeros(()), torch.ones(()))
            tensor(3.)
        """
        selected = _selected_keys(out_keys, OutKeyNotFoundError)
        missing = [key for key in selected if key not in self.out_keys]
        if missing:
            hint = ""
            if (
                len(selected) == 1
                and isinstance(selected[0], tuple)
                and selected[0][0] in self.out_keys
            ):
                hint = " (pass the keys unpacked, not as one list)"
            msg = f"cannot select the keys {missing}: the module writes {self.out_keys}{hint}"
            raise OutKeyNotFoundError(msg)
        hook = _OutKeysSelect(self, selected)
        self._out_keys_apparent = selected
        if self.out_keys != selected:
            self._out_keys_apparent = hook.source
            msg = (
                f"{type(self).__name__} computes its out_keys itself and cannot select some of them"
            )
            raise RuntimeError(msg)
        self.register_forward_hook(hook, with_kwargs=True)
        return self

    def reset_out_keys(self) -> TensorDictModuleBase:
        """Undoes :meth:`select_out_keys`: every output is written again.

        Returns:
            The module itself.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> mod = TensorDictModule(lambda x: (x, x), in_keys=["a"], out_keys=["b", "c"])
            >>> mod.select_out_keys("c").reset_out_keys().out_keys
            ['b', 'c']
        """
        for handle_id, hook in reversed(list(self._forward_hooks.items())):
            if isinstance(hook, _OutKeysSelect):
                hook.remove()
                del self._forward_hooks[handle_id]
                self._forward_hooks_with_kwargs.pop(handle_id, None)
        return self

    def reset_parameters_recursive(
        self, parameters: TensorDictBase | None = None
    ) -> TensorDictBase | None:
        """Calls ``reset_parameters()`` on every sub-module that has it.

        Without ``parameters`` the module's own parameters are reset in place
        (with a warning if nothing could be reset). With ``parameters`` (shaped
        as :meth:`~tensordict.TensorDictBase.from_module` gives them, empty batch
        size) the module is left alone: detached copies sharing their memory are
        reset in place, through :meth:`~tensordict.TensorDictBase.to_module`.

        Args:
            parameters (TensorDictBase, optional): the parameters to reset.
                Defaults to ``None``: the module's.

        Returns:
            ``None``, or the reset tensordict (requiring gradients) for ``parameters``.

        Raises:
            RuntimeError: if ``parameters`` has batch dimensions.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> net = torch.nn.Linear(2, 3)
            >>> module = TensorDictModule(net, in_keys=["x"], out_keys=["y"])
            >>> params = TensorDict.from_module(module).data.clone()
            >>> before = params.clone()
            >>> reset = module.reset_parameters_recursive(params)
            >>> bool((reset["module", "weight"] == before["module", "weight"]).all())
            False
            >>> torch.equal(params["module", "weight"], reset["module", "weight"])
            True
        """
        if parameters is None:
            if not _reset_children(self):
                _user_warn(
                    "reset_parameters_recursive found no sub-module with reset_parameters()",
                    UserWarning,
                )
            return None
        if parameters.ndim:
            msg = f"reset_parameters_recursive takes parameters of empty batch size, got {tuple(parameters.batch_size)}"
            raise RuntimeError(msg)
        fresh = parameters.apply(lambda x: x.detach().requires_grad_(), inplace=False)
        previous = fresh.to_module(self, preserve_module_state=False)
        try:
            _reset_children(self)
        finally:
            previous.to_module(self, preserve_module_state=False)
        return fresh

    @property
    def __name__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        entries = [f"{name}={module}" for name, module in self.named_children()]
        wrapped = self.__dict__.get("module")
        if wrapped is not None:  # a plain callable is an attribute, not a child
            entries.insert(0, f"module={wrapped}")
        entries.append(f"in_keys={self.in_keys}")
        entries.append(f"out_keys={self.out_keys}")
        return _fields_repr(self, entries)


def _reset_children(module: nn.Module) -> bool:
    done = False
    for child in module.children():
        done |= _reset_children(child)
        if hasattr(child, "reset_parameters"):
            child.reset_parameters()
            done = True
    return done


def _read_input(tensordict: TensorDictBase, key, default, get_kwargs: dict):
    value = tensordict.get(key, default, **get_kwargs)
    if is_non_tensor(value):
        data = getattr(value, "data", NO_DEFAULT)
        return value.tolist() if data is NO_DEFAULT else data
    return value


def _module_attribute(module: nn.Module, name: str):
    """The parameter, buffer or sub-module ``name`` of ``module``, or ``NO_DEFAULT``."""
    for slot in ("_parameters", "_buffers", "_modules"):
        found = module.__dict__.get(slot)
        if found and name in found:
            return found[name]
    return NO_DEFAULT


class TensorDictModule(TensorDictModuleBase):
    """Wraps a callable on tensors so that it reads ``in_keys`` from a tensordict and writes ``out_keys``.

    Called with a tensordict, it reads the entries at ``in_keys``, calls
    ``module`` and writes what it returns at ``out_keys`` (into the input by
    default). Called with tensors (see :class:`~tensordict.nn.dispatch`), it
    returns the output tensors. An attribute the wrapper lacks (``weight`` of a
    wrapped ``Linear``) is read from ``module``.

    Args:
        module (Callable): the callable, usually an ``nn.Module``. It may return a
            tensor, a tuple, or a dict / tensordict holding every out key.
        in_keys (NestedKey, list of NestedKey or dict): the entries to read,
            passed positionally in order; a dict passes them as keyword
            arguments: ``{"x": "obs"}`` calls ``module(x=td["obs"])``.
        out_keys (NestedKey or list of NestedKey): where the outputs go, in
            order; an output at ``"_"`` is dropped.

    Keyword Args:
        out_to_in_map (bool, optional): for a dict ``in_keys``, ``True`` reads it
            as ``{argument: key}``, ``False`` as ``{key: argument}``. Defaults to
            ``True`` (a warning if given with another ``in_keys``).
        inplace (bool or str, optional): ``True`` writes into the input and
            returns it; ``False`` into a new empty ``TensorDict``; ``"empty"``
            into ``input.empty()``. Defaults to ``True``.
        method (str, optional): call this method of ``module`` instead of
            ``module`` itself. Defaults to ``None``.
        method_kwargs (dict, optional): keyword arguments of every call.
        strict (bool, optional): a missing input raises ``KeyError``; else
            ``None`` is passed for it. Defaults to ``False``.
        get_kwargs (dict, optional): keyword arguments of the reads
            (:meth:`~tensordict.TensorDictBase.get`).

    Raises:
        ValueError: if the keys are not keys, ``inplace`` is not one of the
            values above, or ``module`` is not callable.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> module = TensorDictModule(torch.nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
        >>> data = module(TensorDict(x=torch.ones(2, 3), batch_size=[2]))
        >>> data
        TensorDict(batch_size=[2], fields={x: f32[3], y: f32[4]})
        >>> module(torch.ones(2, 3)).shape
        torch.Size([2, 4])
        >>> both = TensorDictModule(
        ...     lambda x, *, y: x + y, in_keys={"x": "a", "y": ("b", "c")}, out_keys=["z"])
        >>> both(TensorDict({"a": torch.ones(()), ("b", "c"): torch.ones(())}))["z"]
        tensor(2.)
    """

    def __init__(
        self,
        module: Callable,
        in_keys: NestedKey | list | dict,
        out_keys: NestedKey | list,
        *,
        out_to_in_map: bool | None = None,
        inplace: bool | str = True,
        method: str | None = None,
        method_kwargs: dict | None = None,
        strict: bool = False,
        get_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        if out_to_in_map is not None and not isinstance(in_keys, dict):
            _user_warn(
                "out_to_in_map is only read when in_keys is a dict; it is ignored", UserWarning
            )
        kwargs = None
        if isinstance(in_keys, dict):
            forward = True if out_to_in_map is None else out_to_in_map
            pairs = list(in_keys.items()) if forward else [(v, k) for k, v in in_keys.items()]
            kwargs = [arg for arg, _ in pairs]
            in_keys = [key for _, key in pairs]
        in_keys = _as_key_list(in_keys, "in_keys")
        out_keys = _as_key_list(out_keys, "out_keys")
        if type(module) is type or (method is None and not callable(module)):
            msg = f"TensorDictModule wraps a callable (an nn.Module, a function...), got {module!r}; pass method= to call one of its methods"
            raise InvalidArgumentError(msg)
        if inplace not in (None, True, False, "empty"):
            msg = f"inplace must be True, False, None or 'empty', got {inplace!r}"
            raise InvalidArgumentError(msg)
        self.out_keys = out_keys
        self.in_keys = in_keys
        if "_" in self.in_keys:
            _user_warn('the key "_" drops an output; it should not be an input key', UserWarning)
        self._kwargs = kwargs
        self.strict = strict
        self.module = module
        self.inplace = inplace
        self.method = method
        self.method_kwargs = method_kwargs if method_kwargs is not None else {}
        self._get_kwargs = get_kwargs if get_kwargs is not None else {}

    def _write_to_tensordict(
        self,
        tensordict: TensorDictBase,
        tensors: Sequence,
        tensordict_out: TensorDictBase | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> TensorDictBase:
        if out_keys is None:
            out_keys = self.out_keys_source
        if tensordict_out is None:
            if self.inplace is True:
                tensordict_out = tensordict
            elif self.inplace == "empty":
                tensordict_out = tensordict.empty()
            else:
                tensordict_out = TensorDict()
        if len(tensors) != len(out_keys):
            msg = f"the module returned {len(tensors)} outputs for the {len(out_keys)} out_keys {list(out_keys)}"
            raise ModuleCallError(msg)
        for key, value in zip(out_keys, tensors):
            if key == "_":
                continue
            if type(value) is not torch.Tensor and not is_tensor_collection(value):
                value = TensorDict.from_any(value)
            tensordict_out.set(key, value)
        return tensordict_out

    def _call_module(self, tensors: Sequence, **kwargs: Any):
        kwargs.update(self.method_kwargs)
        if self.method is None:
            return self.module(*tensors, **kwargs)
        return getattr(self.module, self.method)(*tensors, **kwargs)

    @_module_forward
    def forward(
        self,
        tensordict: TensorDictBase,
        *args: Any,
        tensordict_out: TensorDictBase | None = None,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Reads ``in_keys``, calls the wrapped callable and writes its outputs at ``out_keys``.

        Args:
            tensordict (TensorDictBase): the input.

        Keyword Args:
            tensordict_out (TensorDictBase, optional): write the outputs there
                (and return it), whatever ``inplace`` says.
            **kwargs: passed on to the callable.

        Returns:
            The tensordict holding the outputs (see ``inplace``).

        Raises:
            KeyError: if an input is missing and ``strict``, or if the callable
                failed on a missing (``None``) input.

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> module = TensorDictModule(lambda x: x * 2, in_keys=["x"], out_keys=["y"])
            >>> out = module.forward(TensorDict(x=torch.ones(2)), tensordict_out=TensorDict())
            >>> out
            TensorDict(batch_size=[], fields={y: f32[2]})
        """
        if args:
            msg = f"{type(self).__name__}.forward takes the tensordict and keywords only, got {len(args)} more positional arguments"
            raise ModuleCallError(msg)
        default = NO_DEFAULT if self.strict else None
        if self._kwargs is not None:
            for name, key in zip(self._kwargs, self.in_keys):
                kwargs[name] = _read_input(tensordict, key, default, self._get_kwargs)
            inputs = ()
        else:
            inputs = tuple(
                _read_input(tensordict, key, default, self._get_kwargs) for key in self.in_keys
            )
        try:
            outputs = self._call_module(inputs, **kwargs)
        except Exception as err:
            missing = [key for key, value in zip(self.in_keys, inputs) if value is None]
            if self._kwargs is not None:
                missing = [
                    key for name, key in zip(self._kwargs, self.in_keys) if kwargs.get(name) is None
                ]
            if missing and "None" in str(err):
                msg = f"the module could not run: the input keys {missing} are missing from the tensordict"
                raise ModuleInputError(msg) from err
            raise
        if outputs is None:
            outputs = ()
        if (
            type(outputs) is not torch.Tensor
            and type(outputs) is not tuple
            and isinstance(outputs, (dict, TensorDictBase))
            and all(key in outputs for key in self.out_keys_source)
        ):
            if isinstance(outputs, dict):
                outputs = dict(zip(unravel_key_list(list(outputs)), outputs.values()))
            outputs = tuple(outputs.get(key) for key in self.out_keys_source)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        return self._write_to_tensordict(tensordict, outputs, tensordict_out)

    @property
    def device(self) -> torch.device:
        """Deprecated: the device of the first parameter, or the CPU without parameters.

        Examples:
            >>> import warnings
            >>> from tensordict.nn import TensorDictModule
            >>> module = TensorDictModule(torch.nn.Linear(1, 1), in_keys=["x"], out_keys=["y"])
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     module.device
            device(type='cpu')
        """
        _user_warn(
            "TensorDictModule.device is deprecated: a module may hold tensors on several devices; "
            "read the device of the parameters you need",
            DeprecationWarning,
        )
        for parameter in self.parameters():
            return parameter.device
        return torch.device("cpu")

    def __getattr__(self, name: str) -> Any:
        found = _module_attribute(self, name)
        if found is not NO_DEFAULT:
            return found
        if not name.startswith("_"):
            wrapped = _module_attribute(self, "module")
            if wrapped is NO_DEFAULT:
                wrapped = self.__dict__.get("module", NO_DEFAULT)
            if wrapped is not NO_DEFAULT:
                return getattr(wrapped, name)
        msg = f"{type(self).__name__} has no attribute {name!r}"
        raise AttributeError(msg)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        module = state.get("module")
        if module is not None and not isinstance(module, nn.Module) and cloudpickle is not None:
            state["module"] = _Pickled(cloudpickle.dumps(module))
        return state

    def __setstate__(self, state: dict) -> None:
        module = state.get("module")
        if isinstance(module, _Pickled):
            state["module"] = pickle.loads(module.payload)
        self.__dict__.update(state)


class _Pickled:
    """A callable sent by cloudpickle (a lambda or a local function), as bytes."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def __reduce__(self):
        return (_Pickled, (self.payload,))


def _selected_keys(keys: tuple, error: type[Exception]) -> list:
    """The keys given (unpacked) to ``select_out_keys``, unravelled; ``error`` if one is not a key."""
    try:
        return unravel_key_list(list(keys))
    except (TypeError, ValueError) as err:
        msg = f"select_out_keys takes keys (strings or tuples of strings), unpacked: got {list(keys)!r}"
        raise error(msg) from err


def _as_key_list(keys, what: str) -> list:
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    elif not isinstance(keys, MutableSequence):
        msg = f"{what} must be a key, a list of keys{' or a dict' if what == 'in_keys' else ''}, got {type(keys).__name__}"
        raise InvalidArgumentError(msg)
    try:
        return unravel_key_list(list(keys))
    except (TypeError, ValueError) as err:
        msg = f"{what} must hold strings or tuples of strings, got {list(keys)!r}"
        raise InvalidArgumentError(msg) from err


class TensorDictModuleWrapper(TensorDictModuleBase):
    """Wraps a tensordict module and behaves like it, except where a subclass overrides.

    Keys, parameters and attributes come from ``td_module``; subclass it to
    change :meth:`forward`.

    Args:
        td_module (TensorDictModuleBase): the module to wrap.

    Examples:
        >>> from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
        >>> class TimesTen(TensorDictModuleWrapper):
        ...     def forward(self, tensordict):
        ...         tensordict = self.td_module(tensordict)
        ...         return tensordict.set("y", tensordict["y"] * 10)
        >>> wrapped = TimesTen(TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"]))
        >>> wrapped.in_keys, wrapped.out_keys
        (['x'], ['y'])
        >>> wrapped(TensorDict(x=torch.zeros(2)))["y"]
        tensor([10., 10.])
    """

    def __init__(self, td_module: TensorDictModuleBase) -> None:
        super().__init__()
        self.td_module = td_module

    @property
    def in_keys(self) -> list:
        """The keys ``td_module`` reads (unless set on the wrapper).

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
            >>> TensorDictModuleWrapper(TensorDictModule(lambda x: x, in_keys=["a"], out_keys=["b"])).in_keys
            ['a']
        """
        return self.__dict__.get("_in_keys", self.td_module.in_keys)

    @in_keys.setter
    def in_keys(self, value: Sequence[NestedKey]) -> None:
        self.__dict__["_in_keys"] = unravel_key_list(list(value))

    @property
    def out_keys(self) -> list:
        """The keys the wrapper writes: those of ``td_module`` unless selected on the wrapper.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
            >>> TensorDictModuleWrapper(TensorDictModule(lambda x: x, in_keys=["a"], out_keys=["b"])).out_keys
            ['b']
        """
        return self.__dict__.get("_out_keys_apparent", self.td_module.out_keys)

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey]) -> None:
        self.td_module.out_keys = value
        self.__dict__.pop("_out_keys_apparent", None)

    @property
    def out_keys_source(self) -> list:
        """Every key ``td_module`` writes.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
            >>> TensorDictModuleWrapper(TensorDictModule(lambda x: x, in_keys=["a"], out_keys=["b"])).out_keys_source
            ['b']
        """
        return self.td_module.out_keys_source

    def __getattr__(self, name: str) -> Any:
        found = _module_attribute(self, name)
        if found is not NO_DEFAULT:
            return found
        if not name.startswith("__"):
            return getattr(self._modules["td_module"], name)
        msg = f"{type(self).__name__} has no attribute {name!r}"
        raise AttributeError(msg)

    def forward(self, *args: Any, **kwargs: Any) -> TensorDictBase:
        """Calls ``td_module`` with the same arguments.

        Returns:
            What ``td_module`` returns.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictModuleWrapper
            >>> inner = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
            >>> TensorDictModuleWrapper(inner).forward(x=torch.zeros(1))
            tensor([1.])
        """
        return self.td_module(*args, **kwargs)


class WrapModule(TensorDictModuleBase):
    """Wraps a function from tensordict to tensordict as a module (for a sequence).

    Args:
        func (Callable): takes a tensordict, returns a tensordict.

    Keyword Args:
        inplace (bool, optional): update the input with the result and return the
            input; else return the result. Defaults to ``False``.
        in_keys (list of NestedKey, optional): what ``func`` reads (declared,
            not checked). Defaults to ``[]``.
        out_keys (list of NestedKey, optional): what ``func`` writes. Defaults to ``[]``.

    Examples:
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential, WrapModule
        >>> seq = TensorDictSequential(
        ...     TensorDictModule(lambda x: x * 2, in_keys=["x"], out_keys=["y"]),
        ...     WrapModule(lambda td: td.reshape(-1)),
        ... )
        >>> seq(TensorDict(x=torch.ones(3, 4), batch_size=[3, 4])).batch_size
        torch.Size([12])
    """

    in_keys = []
    out_keys = []

    def __init__(
        self,
        func: Callable,
        *,
        inplace: bool = False,
        in_keys: list | None = None,
        out_keys: list | None = None,
    ) -> None:
        super().__init__()
        self.func = func
        self.inplace = inplace
        if in_keys is not None:
            self.in_keys = in_keys
        if out_keys is not None:
            self.out_keys = out_keys

    def forward(self, data: TensorDictBase) -> TensorDictBase:
        """Returns ``func(data)``, or ``data`` updated with it when ``inplace``.

        Args:
            data (TensorDictBase): the input.

        Examples:
            >>> from tensordict.nn import WrapModule
            >>> WrapModule(lambda td: td.set("b", td["a"] + 1), inplace=True).forward(TensorDict(a=1))["b"]
            tensor(2)
        """
        result = self.func(data)
        if self.inplace and result is not data:
            return data.update(result)
        return result


class as_tensordict_module:
    """Turns a function (or method) into a :class:`TensorDictModule` reading ``in_keys``, writing ``out_keys``.

    The module is built at the first call. On a method, one module serves every
    instance, and the instance reaches the method as ``self``.

    Keyword Args:
        in_keys (NestedKey or list of NestedKey): the inputs, in argument order.
        out_keys (NestedKey or list of NestedKey): where the outputs go.

    Examples:
        >>> from tensordict.nn import as_tensordict_module
        >>> @as_tensordict_module(in_keys="c", out_keys="d")
        ... def add_one(c):
        ...     return c + 1
        >>> add_one(TensorDict(c=0))["d"]
        tensor(1)
        >>> add_one(c=torch.zeros(2))
        tensor([1., 1.])
    """

    def __init__(self, *, in_keys: NestedKey | list, out_keys: NestedKey | list) -> None:
        self.in_keys = [in_keys] if isinstance(in_keys, (str, tuple)) else in_keys
        self.out_keys = [out_keys] if isinstance(out_keys, (str, tuple)) else out_keys

    def __call__(self, func: Callable) -> Callable:
        holder: list = []
        is_method = inspect.ismethod(func) or (
            inspect.isfunction(func) and "self" in inspect.signature(func).parameters
        )

        def module():
            if not holder:
                target = func
                if is_method:

                    def target(*args, _as_tensordict_module_self, **kwargs):
                        return func(_as_tensordict_module_self, *args, **kwargs)

                holder.append(
                    TensorDictModule(target, in_keys=self.in_keys, out_keys=self.out_keys)
                )
            return holder[0]

        if is_method:

            def wrapped(_self, *args, **kwargs):
                return module()(*args, _as_tensordict_module_self=_self, **kwargs)

        else:

            def wrapped(*args, **kwargs):
                return module()(*args, **kwargs)

        wrapped.__name__ = getattr(func, "__name__", "wrapped")
        wrapped.__qualname__ = getattr(func, "__qualname__", wrapped.__name__)
        wrapped.__doc__ = func.__doc__
        wrapped.__wrapped__ = func
        return wrapped
