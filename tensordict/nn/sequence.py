"""A chain of tensordict modules run one after the other on one tensordict."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from torch import nn

from tensordict._keys import NestedKey, unravel_key_list
from tensordict._lazy import LazyStackedTensorDict
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import InvalidArgumentError
from tensordict.nn.common import (
    TensorDictModule,
    TensorDictModuleBase,
    WrapModule,
    _selected_keys,
)
from tensordict.nn.dispatch import _module_forward
from tensordict.nn.errors import ModuleCallError

__all__ = ["TensorDictSequential"]


def _keys_of(modules) -> tuple[list, list]:
    """The keys a chain reads from outside (in order) and every key it writes (each once, last place)."""
    in_keys: list = []
    out_keys: list = []
    for module in modules:
        for key in module.in_keys:
            if key not in out_keys and key not in in_keys:
                in_keys.append(key)
        out_keys.extend(module.out_keys)
    out_keys = [key for i, key in enumerate(out_keys) if key not in out_keys[i + 1 :]]
    return in_keys, out_keys


class TensorDictSequential(TensorDictModule):
    """Runs tensordict modules one after the other on the same tensordict.

    Each module sees what the earlier ones wrote. ``in_keys`` are the keys a
    module reads that no earlier module writes; ``out_keys`` every key written,
    each once. Modules come as arguments, one list, or one dict of names to
    modules; a callable without keys is wrapped in a
    :class:`~tensordict.nn.WrapModule`. ``seq[i]`` / ``seq["name"]`` give a module,
    a slice a new sequence; assigning or deleting an item edits the chain and
    recomputes the keys.

    Args:
        *modules (TensorDictModuleBase or Callable): the modules, in order.

    Keyword Args:
        partial_tolerant (bool, optional): a module whose inputs are missing is
            skipped instead of failing (on a lazy stack, it runs on the members
            that have them). Defaults to ``False``.
        selected_out_keys (list of NestedKey, optional): keep only these outputs
            (see :meth:`select_out_keys`). Defaults to ``None``: all.
        inplace (bool or str, optional): ``True`` writes the outputs into the
            input, ``False`` into a new ``TensorDict``, ``"empty"`` into
            ``input.empty()``; ``None`` returns what the last module returns.
            With ``False``/``"empty"`` the modules run on a shallow copy, so the
            input is left alone. Defaults to ``None``.

    Examples:
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential
        >>> seq = TensorDictSequential(
        ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["x+1"]),
        ...     TensorDictModule(lambda y: y * 2, in_keys=["x+1"], out_keys=["out"]),
        ... )
        >>> seq.in_keys, seq.out_keys
        (['x'], ['x+1', 'out'])
        >>> seq(TensorDict(x=torch.zeros(3)))
        TensorDict(batch_size=[], fields={out: f32[3], x+1: f32[3], x: f32[3]})
        >>> seq(x=torch.ones(3))
        (tensor([2., 2., 2.]), tensor([4., 4., 4.]))
    """

    _select_before_return = False

    def __init__(
        self,
        *modules: Callable,
        partial_tolerant: bool = False,
        selected_out_keys: list | None = None,
        inplace: bool | str | None = None,
    ) -> None:
        if len(modules) == 1 and isinstance(modules[0], dict):
            names = list(modules[0])
            converted = self._convert_modules(list(modules[0].values()))
            container = nn.ModuleDict(collections.OrderedDict(zip(names, converted)))
        else:
            if len(modules) == 1 and isinstance(modules[0], collections.abc.MutableSequence):
                modules = tuple(modules[0])
            converted = self._convert_modules(list(modules))
            container = nn.ModuleList(converted)
        in_keys, out_keys = self._compute_in_and_out_keys(converted)
        super().__init__(module=container, in_keys=in_keys, out_keys=out_keys)
        self._complete_out_keys = list(out_keys)
        self.inplace = inplace
        self.partial_tolerant = partial_tolerant
        if selected_out_keys:
            self._select(unravel_key_list(list(selected_out_keys)))

    # ------------------------------------------------------------------ keys
    @property
    def out_keys(self) -> list:
        """Every key the modules write, each once (or the keys chosen by :meth:`select_out_keys`).

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictSequential
            >>> TensorDictSequential(
            ...     TensorDictModule(lambda x: x, in_keys=["a"], out_keys=["b"]),
            ...     TensorDictModule(lambda x: x, in_keys=["b"], out_keys=["a"]),
            ... ).out_keys
            ['b', 'a']
        """
        return self._out_keys_apparent

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey]) -> None:
        TensorDictModuleBase.out_keys.fset(self, value)
        self._complete_out_keys = list(self._out_keys)

    @staticmethod
    def _convert_modules(modules) -> list:
        return [
            module if TensorDictModuleBase.is_tdmodule_compatible(module) else WrapModule(module)
            for module in modules
        ]

    def _compute_in_and_out_keys(self, modules) -> tuple[list, list]:
        return _keys_of(modules)

    def _select(self, selected: list) -> None:
        missing = [key for key in selected if key not in self.out_keys]
        if missing:
            msg = f"cannot select the keys {missing}: the sequence writes {self.out_keys}"
            raise InvalidArgumentError(msg)
        self._select_before_return = True
        self._out_keys_apparent = selected

    def select_out_keys(self, *selected_out_keys: NestedKey) -> TensorDictSequential:
        """Keeps only some outputs of the sequence, in place; :meth:`reset_out_keys` undoes it.

        The modules still compute everything; the call returns the input with
        only the selected outputs added.

        Args:
            *selected_out_keys (NestedKey): the keys to keep, each one of ``out_keys``.

        Returns:
            The sequence itself.

        Raises:
            ValueError: if a key is not one of ``out_keys``.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictSequential
            >>> seq = TensorDictSequential(
            ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"]),
            ...     TensorDictModule(lambda y: y + 1, in_keys=["y"], out_keys=["z"]),
            ... )
            >>> sorted(seq.select_out_keys("z")(TensorDict(x=torch.zeros(()))).keys())
            ['x', 'z']
        """
        self._select(_selected_keys(selected_out_keys, InvalidArgumentError))
        return self

    def reset_out_keys(self) -> TensorDictSequential:
        """Undoes :meth:`select_out_keys`.

        Returns:
            The sequence itself.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictSequential
            >>> seq = TensorDictSequential(
            ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"]),
            ...     TensorDictModule(lambda y: y + 1, in_keys=["y"], out_keys=["z"]),
            ... )
            >>> seq.select_out_keys("z").reset_out_keys().out_keys
            ['y', 'z']
        """
        self.out_keys = list(self._complete_out_keys)
        self._select_before_return = False
        return self

    def select_subsequence(
        self,
        in_keys: Iterable[NestedKey] | None = None,
        out_keys: Iterable[NestedKey] | None = None,
    ) -> TensorDictSequential:
        """Returns a new sequence of the modules that can run from ``in_keys`` and that ``out_keys`` need.

        First, going forward, a module stays if each of its inputs is in
        ``in_keys`` or written by a module kept before it. Then, going backward, a
        module stays if it writes one of ``out_keys`` or an input of a module kept
        after it. Nested plain sequences are filtered the same way. The modules
        are shared, not copied; names and options are kept.

        Args:
            in_keys (list of NestedKey, optional): the available keys. Defaults to
                the sequence's ``in_keys``.
            out_keys (list of NestedKey, optional): the wanted keys. Defaults to
                the sequence's ``out_keys``.

        Returns:
            A new sequence of the same class.

        Raises:
            ValueError: if no module is left.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictSequential
            >>> seq = TensorDictSequential(
            ...     TensorDictModule(lambda a: a, in_keys=["a"], out_keys=["b"]),
            ...     TensorDictModule(lambda b: b, in_keys=["b"], out_keys=["c"]),
            ...     TensorDictModule(lambda x: x, in_keys=["x"], out_keys=["d"]),
            ... )
            >>> sub = seq.select_subsequence(out_keys=["c"])
            >>> sub.in_keys, sub.out_keys
            (['a'], ['b', 'c'])
            >>> seq.select_subsequence(in_keys=["x"]).out_keys
            ['d']
        """
        available = unravel_key_list(list(self.in_keys if in_keys is None else in_keys))
        wanted = unravel_key_list(list(self.out_keys if out_keys is None else out_keys))
        modules = list(self._module_iter())
        keep = set(range(len(modules)))
        for i, module in enumerate(modules):
            if type(module) is TensorDictSequential:  # subclasses have their own rules
                try:
                    module = modules[i] = module.select_subsequence(in_keys=available)
                except ValueError:
                    keep.discard(i)
                    continue
            if all(key in available for key in module.in_keys):
                available.extend(module.out_keys)
            else:
                keep.discard(i)
        for i in reversed(range(len(modules))):
            if i not in keep:
                continue
            module = modules[i]
            if not any(key in wanted for key in module.out_keys):
                keep.discard(i)
                continue
            if type(module) is TensorDictSequential:
                module = modules[i] = module.select_subsequence(out_keys=wanted)
            wanted.extend(module.in_keys)
        kept = sorted(keep)
        if not kept:
            msg = "no module is left after the selection: check that in_keys and out_keys fit the sequence"
            raise InvalidArgumentError(msg)
        if isinstance(self.module, nn.ModuleDict):
            names = list(self.module)
            sub = type(self)(collections.OrderedDict((names[i], modules[i]) for i in kept))
        else:
            sub = type(self)(*[modules[i] for i in kept])
        return self._keep_options(sub)

    def _keep_options(self, sequence: TensorDictSequential) -> TensorDictSequential:
        sequence.partial_tolerant = self.partial_tolerant
        sequence.inplace = self.inplace
        return sequence

    # ------------------------------------------------------------------ running
    def _module_iter(self):
        if isinstance(self.module, nn.ModuleDict):
            yield from self.module.values()
        else:
            yield from self.module

    def _get_module_num_or_key(self, mod: nn.Module) -> int | str:
        items = (
            self.module.items()
            if isinstance(self.module, nn.ModuleDict)
            else enumerate(self.module)
        )
        for name, module in items:
            if module is mod:
                return name
        msg = f"{type(mod).__name__} is not a module of this sequence"
        raise ModuleCallError(msg)

    def _run_module(self, module: TensorDictModuleBase, tensordict: TensorDictBase, **kwargs: Any):
        present = tensordict.keys(include_nested=True)
        if not self.partial_tolerant or all(key in present for key in module.in_keys):
            return module(tensordict, **kwargs)
        if isinstance(tensordict, LazyStackedTensorDict):
            for member in tensordict.tensordicts:
                member_keys = member.keys(include_nested=True)
                if not all(key in member_keys for key in module.in_keys):
                    continue
                out = module(member, **kwargs)
                if isinstance(out, TensorDictBase) and out is not member:
                    written = out.keys(include_nested=True)
                    keys = [key for key in module.out_keys if key in written]
                    if keys:
                        member.update(out, keys_to_update=keys)
        return tensordict

    def _output_target(self, tensordict: TensorDictBase, tensordict_out):
        """The tensordict to write the outputs into at the end, or None to return the last result."""
        if tensordict_out is not None:
            return tensordict_out
        if self.inplace is True:
            return tensordict
        if self.inplace is False:
            return TensorDict()
        if self.inplace == "empty":
            return tensordict.empty()
        return None

    def _needs_copy(self, tensordict_out) -> bool:
        return (
            tensordict_out is not None
            or self._select_before_return
            or self.inplace is False
            or self.inplace == "empty"
        )

    def _finish(self, tensordict: TensorDictBase, result: TensorDictBase, target):
        if target is not None:
            target.update(result, keys_to_update=self.out_keys)
            return target
        if self._select_before_return:
            # the input's own entries may have been rewritten by the modules: keep those too
            keys = list(set(self.out_keys).union(tensordict.keys(True, True)))
            return tensordict.update(result, keys_to_update=keys)
        return result

    @_module_forward
    def forward(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Runs the modules in order on ``tensordict`` and returns the result (see ``inplace``).

        Args:
            tensordict (TensorDictBase): the input.
            tensordict_out (TensorDictBase, optional): write the ``out_keys`` there
                and return it, whatever ``inplace`` says.

        Raises:
            RuntimeError: if other keyword arguments are given; a failing module
                adds a note naming its index or name.

        Examples:
            >>> from tensordict.nn import TensorDictModule, TensorDictSequential
            >>> seq = TensorDictSequential(TensorDictModule(lambda x: -x, in_keys=["x"], out_keys=["y"]))
            >>> seq.forward(TensorDict(x=torch.ones(1)), tensordict_out=TensorDict())
            TensorDict(batch_size=[], fields={y: f32[1]})
        """
        if kwargs:
            msg = f"TensorDictSequential takes no keyword argument but tensordict_out and its in_keys {self.in_keys}, got {list(kwargs)}"
            raise ModuleCallError(msg)
        target = self._output_target(tensordict, tensordict_out)
        running = tensordict.copy() if self._needs_copy(tensordict_out) else tensordict
        for module in self._module_iter():
            try:
                running = self._run_module(module, running)
            except Exception as err:
                err.add_note(
                    f"Failed while executing module '{self._get_module_num_or_key(module)}'."
                )
                raise
        return self._finish(tensordict, running, target)

    # ------------------------------------------------------------------ container
    def __len__(self) -> int:
        return len(self.module)

    def __getitem__(self, index: int | slice | str):
        if isinstance(index, (int, str)):
            return self.module[index]
        return self._keep_options(type(self)(*self.module[index]))

    def __setitem__(self, index: int | slice | str, module) -> None:
        if callable(module):
            (module,) = self._convert_modules([module])
        self._edit_modules(lambda container: container.__setitem__(index, module))

    def __delitem__(self, index: int | slice | str) -> None:
        self._edit_modules(lambda container: container.__delitem__(index))

    def _edit_modules(self, edit: Callable) -> None:
        # the edit is tried on a copy first, so that a rejected one changes nothing
        if isinstance(self.module, nn.ModuleDict):
            trial = nn.ModuleDict(collections.OrderedDict(self.module.items()))
            edit(trial)
            modules = list(trial.values())
        else:
            trial = nn.ModuleList(list(self.module))
            edit(trial)
            modules = list(trial)
        self._check_modules(modules)
        edit(self.module)
        self._refresh_keys()

    def _check_modules(self, modules: list) -> None:
        if self._select_before_return:
            _, out_keys = self._compute_in_and_out_keys(modules)
            lost = [key for key in self._out_keys_apparent if key not in out_keys]
            if lost:
                msg = f"the edit would remove the selected out_keys {lost}; call reset_out_keys() first"
                raise InvalidArgumentError(msg)

    def _refresh_keys(self) -> None:
        in_keys, out_keys = self._compute_in_and_out_keys(list(self._module_iter()))
        selected = self._out_keys_apparent if self._select_before_return else None
        self.in_keys = in_keys
        self.out_keys = out_keys
        if selected is not None:
            self._out_keys_apparent = selected
