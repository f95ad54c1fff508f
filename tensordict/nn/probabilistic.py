"""Probabilistic modules: build a distribution from entries of a tensordict and write a value from it.

:class:`ProbabilisticTensorDictModule` (written in
:mod:`tensordict.nn.probabilistic_module`) reads distribution parameters and writes a
value (a sample, the mode, the mean... see :class:`InteractionType`) and,
optionally, its log-probability. :class:`ProbabilisticTensorDictSequential` chains
modules that compute the parameters with probabilistic modules, and can return
the distribution itself.

Log-probability keys depend on :func:`~tensordict.nn.composite_lp_aggregate` at
construction: ``False`` (the default) writes ``"<sample key>_log_prob"`` per
sampled key (the suffix goes on the last part of a nested key); ``True`` writes
one ``"sample_log_prob"`` entry (the sum over the sampled keys).
"""

from __future__ import annotations

import collections
from collections.abc import MutableSequence
from typing import Any

import torch
from torch import distributions as D

from tensordict._collection import is_tensor_collection
from tensordict._keys import NestedKey
from tensordict.base import TensorDictBase
from tensordict.errors import EntryTypeError, InvalidArgumentError
from tensordict.nn.common import TensorDictModuleBase
from tensordict.nn.dispatch import _module_forward
from tensordict.nn.distributions.composite import CompositeDistribution
from tensordict.nn.errors import ModuleCallError
from tensordict.nn.interaction import (
    InteractionType,
    _use_generator,
    interaction_type,
    set_interaction_type,
)
from tensordict.nn.probabilistic_module import (
    ProbabilisticTensorDictModule,
    _rename_entries,
)
from tensordict.nn.sequence import TensorDictSequential
from tensordict.nn.utils import _user_warn

__all__ = [
    "InteractionType",
    "ProbabilisticTensorDictModule",
    "ProbabilisticTensorDictSequential",
    "_use_generator",
    "interaction_type",
    "set_interaction_type",
]


class ProbabilisticTensorDictSequential(TensorDictSequential):
    """A sequence ending with probabilistic modules, which can also return its distribution.

    The modules before the last one compute the distribution parameters
    (:meth:`get_dist_params`); the last one builds the distribution and writes
    its value. With several probabilistic modules (or a last module that is not
    probabilistic), ``return_composite`` makes :meth:`get_dist` return a
    :class:`~tensordict.nn.CompositeDistribution` of all of them.

    Args:
        *modules (TensorDictModuleBase): the modules, the last one probabilistic
            unless ``return_composite``; also one list or one dict of names.

    Keyword Args:
        partial_tolerant (bool, optional): see :class:`~tensordict.nn.TensorDictSequential`.
        return_composite (bool, optional): :meth:`get_dist` returns a composite
            distribution of every probabilistic module. Defaults to ``None``:
            ``True`` when several modules are probabilistic or the last is not.
        selected_out_keys (list of NestedKey, optional): keep only these outputs.
        inplace (bool or str, optional): see :class:`~tensordict.nn.TensorDictSequential`.

    Raises:
        ValueError: if no module is given.
        TypeError: if ``return_composite=False`` and the last module is not probabilistic.

    Examples:
        >>> from tensordict.nn import (
        ...     NormalParamExtractor, ProbabilisticTensorDictModule,
        ...     ProbabilisticTensorDictSequential, TensorDictModule)
        >>> policy = ProbabilisticTensorDictSequential(
        ...     TensorDictModule(torch.nn.Linear(3, 4), in_keys=["obs"], out_keys=["params"]),
        ...     TensorDictModule(NormalParamExtractor(), in_keys=["params"], out_keys=["loc", "scale"]),
        ...     ProbabilisticTensorDictModule(
        ...         in_keys=["loc", "scale"], out_keys=["action"],
        ...         distribution_class=torch.distributions.Normal, return_log_prob=True),
        ... )
        >>> td = policy(TensorDict(obs=torch.randn(5, 3), batch_size=[5]))
        >>> sorted(td.keys())
        ['action', 'action_log_prob', 'loc', 'obs', 'params', 'scale']
        >>> policy.get_dist(td).batch_shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        *modules: TensorDictModuleBase,
        partial_tolerant: bool = False,
        return_composite: bool | None = None,
        selected_out_keys: list | None = None,
        inplace: bool | None = None,
    ) -> None:
        if not modules:
            msg = "ProbabilisticTensorDictSequential needs modules: zero or more TensorDictModules, then a ProbabilisticTensorDictModule"
            raise InvalidArgumentError(msg)
        self._ordered_dict = False
        if len(modules) == 1 and isinstance(modules[0], dict):
            named = collections.OrderedDict(modules[0])
            self._ordered_dict = True
            module_list = self._convert_modules(list(named.values()))
            modules = (named,)
        elif len(modules) == 1 and isinstance(modules[0], MutableSequence):
            modules = tuple(modules[0])
            module_list = self._convert_modules(list(modules))
        else:
            module_list = self._convert_modules(list(modules))
        last_is_prob = isinstance(module_list[-1], _PROB)
        if return_composite is False and not last_is_prob:
            msg = (
                "the last module of a ProbabilisticTensorDictSequential must be probabilistic "
                "(a ProbabilisticTensorDictModule or ProbabilisticTensorDictSequential) unless return_composite=True"
            )
            raise EntryTypeError(msg)
        if return_composite is None:
            prob_count = sum(isinstance(m, ProbabilisticTensorDictModule) for m in module_list)
            return_composite = not last_is_prob or prob_count > 1
        # subclasses in between may not take selected_out_keys: pass it only when given
        options = {"partial_tolerant": partial_tolerant, "inplace": inplace}
        if selected_out_keys is not None:
            options["selected_out_keys"] = selected_out_keys
        super().__init__(*modules, **options)
        self.return_composite = return_composite
        self._set_det_part(module_list)

    def _set_det_part(self, module_list: list) -> None:
        # the deterministic part shares the modules but is not a child (no duplicated parameters)
        if not any(isinstance(m, _PROB) for m in module_list):
            self._requires_sample = False
            self.__dict__["_det_part"] = None
            self.return_composite = True
            return
        _, upstream_out = self._compute_in_and_out_keys(module_list[:-1])
        sampled = getattr(module_list[-1], "dist_sample_keys", [None])
        self._requires_sample = any(key not in upstream_out for key in sampled)
        if isinstance(self.module, torch.nn.ModuleDict):
            det = TensorDictSequential(collections.OrderedDict(list(self.module.items())[:-1]))
        else:
            det = TensorDictSequential(*module_list[:-1])
        self.__dict__["_det_part"] = det

    def _check_modules(self, modules: list) -> None:
        super()._check_modules(modules)
        if not modules:
            msg = "a ProbabilisticTensorDictSequential cannot lose all its modules"
            raise InvalidArgumentError(msg)
        if not self.return_composite and not isinstance(modules[-1], _PROB):
            msg = "the last module must stay probabilistic unless return_composite=True"
            raise EntryTypeError(msg)

    def _keys_last_first(self, name: str) -> list:
        """The keys list ``name`` of every module that has one, joined from the last module to the first."""
        keys = []
        for module in reversed(list(self._module_iter())):
            keys.extend(getattr(module, name, []))
        return keys

    def _refresh_keys(self) -> None:
        super()._refresh_keys()
        self._set_det_part(list(self._module_iter()))

    def __getitem__(self, index: int | slice | str):
        if isinstance(index, (int, str)):
            return self.module[index]
        modules = list(self.module[index])
        if self.return_composite and any(isinstance(m, _PROB) for m in modules):
            return self._keep_options(type(self)(*modules, return_composite=True))
        if modules and isinstance(modules[-1], _PROB):
            return self._keep_options(type(self)(*modules))
        return self._keep_options(TensorDictSequential(*modules))

    @property
    def det_part(self) -> TensorDictSequential:
        """Deprecated: the modules computing the distribution parameters (use :meth:`get_dist_params`).

        Examples:
            >>> import warnings
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
            >>> seq = ProbabilisticTensorDictSequential(
            ...     TensorDictModule(lambda x: x, in_keys=["x"], out_keys=["param"]),
            ...     ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["y"]))
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     len(seq.det_part)
            1
        """
        _user_warn(
            "ProbabilisticTensorDictSequential.det_part is deprecated; use get_dist_params()",
            DeprecationWarning,
        )
        return self._det_part

    @property
    def _last_module(self):
        return list(self._module_iter())[-1]

    def get_dist_params(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Runs every module but the last, under the sequence's interaction type, and returns the result.

        Args:
            tensordict (TensorDictBase): the input.
            tensordict_out (TensorDictBase, optional): where to write the outputs.

        Raises:
            ValueError: if no module has a default interaction type and none is set.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
            >>> seq = ProbabilisticTensorDictSequential(
            ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["param"]),
            ...     ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["y"]))
            >>> sorted(seq.get_dist_params(TensorDict(x=torch.zeros(1))).keys())
            ['param', 'x']
        """
        rule = interaction_type()
        if rule is None:
            for module in reversed(list(self._module_iter())):
                if hasattr(module, "default_interaction_type"):
                    rule = module.default_interaction_type
                    break
            else:
                msg = "no module of the sequence has a default interaction type"
                raise InvalidArgumentError(msg)
        det = self._det_part
        with set_interaction_type(rule):
            if not kwargs:
                return det(tensordict, tensordict_out)
            running = tensordict if tensordict_out is None else tensordict.copy()
            for module in det._module_iter():
                extra = {} if isinstance(module, ProbabilisticTensorDictModule) else kwargs
                running = det._run_module(module, running, **extra)
            if tensordict_out is None:
                return running
            return tensordict_out.update(running, keys_to_update=det.out_keys)

    @property
    def log_prob_keys(self) -> list:
        """The log-probability keys of every probabilistic module, the last module's first.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(
            ...     ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"]),
            ...     ProbabilisticTensorDictModule(in_keys=["q"], out_keys=["b"])).log_prob_keys
            ['b_log_prob', 'a_log_prob']
        """
        return self._keys_last_first("log_prob_keys")

    @property
    def log_prob_key(self) -> NestedKey:
        """The log-probability key, when the sequence has exactly one.

        Raises:
            AttributeError: if it has none or several.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"])).log_prob_key
            'a_log_prob'
        """
        try:
            keys = self.log_prob_keys
        except RuntimeError as err:
            raise AttributeError("log_prob_key") from err
        if len(keys) == 1:
            return keys[0]
        msg = f"log_prob_key needs exactly one log-probability key, the sequence has {keys}; read log_prob_keys"
        raise AttributeError(msg)

    @property
    def dist_params_keys(self) -> list:
        """The parameter keys of every probabilistic module, the last module's first.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"])).dist_params_keys
            ['param']
        """
        return self._keys_last_first("dist_params_keys")

    @property
    def dist_sample_keys(self) -> list:
        """The sampled keys of every probabilistic module, the last module's first.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"])).dist_sample_keys
            ['a']
        """
        return self._keys_last_first("dist_sample_keys")

    def _log_prob_renames(self) -> tuple[list, bool]:
        renames, aggregated = [], False
        for module in self._module_iter():
            if isinstance(module, ProbabilisticTensorDictSequential):
                sub, sub_aggregated = module._log_prob_renames()
            elif isinstance(module, ProbabilisticTensorDictModule):
                sub, sub_aggregated = (
                    module._custom_log_prob_keys,
                    module._composite_lp_aggreate_at_init,
                )
            else:
                continue
            renames.extend(sub)
            aggregated = aggregated or sub_aggregated
        return renames, aggregated

    @property
    def num_samples(self) -> tuple:
        """The leading sample dimensions the probabilistic modules add, outermost first.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(
            ...     ProbabilisticTensorDictModule(in_keys=["p"], out_keys=["a"], num_samples=3)).num_samples
            torch.Size([3])
        """
        total = ()
        for module in self._module_iter():
            if isinstance(module, _PROB):
                total = (module.num_samples or ()) + total
        return total

    @property
    def default_interaction_type(self) -> InteractionType | None:
        """The ``default_interaction_type`` of the last module that has one.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(
            ...     in_keys=["p"], out_keys=["a"], default_interaction_type="random")).default_interaction_type
            <InteractionType.RANDOM: 'random'>
        """
        for module in reversed(list(self._module_iter())):
            rule = getattr(module, "default_interaction_type", None)
            if rule is not None:
                return rule
        return interaction_type()

    def get_dist(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        **kwargs: Any,
    ) -> D.Distribution:
        """The distribution of the sequence for ``tensordict``.

        Without ``return_composite``, the parameters are computed and the last
        module builds its distribution. With it, every probabilistic module but
        the last draws its value (under the current interaction type), and a
        :class:`~tensordict.nn.CompositeDistribution` of all of them is returned.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
            >>> seq = ProbabilisticTensorDictSequential(
            ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["param"]),
            ...     ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["y"]))
            >>> seq.get_dist(TensorDict(x=torch.zeros(1))).mode
            tensor([1.])
        """
        if not self.return_composite:
            params = self.get_dist_params(tensordict, tensordict_out, **kwargs)
            return self.build_dist_from_params(params)
        running = tensordict.copy()
        dists = {}
        modules = list(self._module_iter())
        for i, module in enumerate(modules):
            if not isinstance(module, _PROB):
                running = module(running)
                continue
            dist = module.get_dist(running)
            if i < len(modules) - 1:
                running = self._draw_into(module, dist, running)
            if isinstance(dist, CompositeDistribution):
                dists.update(dict(dist))
            else:
                dists[module.dist_sample_keys[0]] = dist
        if not dists:
            msg = f"no probabilistic module in {type(self).__name__}"
            raise ModuleCallError(msg)
        return CompositeDistribution.from_distributions(running, dists)

    @staticmethod
    def _draw_into(module, dist, running: TensorDictBase) -> TensorDictBase:
        if isinstance(module, ProbabilisticTensorDictModule):
            generator, write_back = module._resolve_generator(running)
        else:
            generator, write_back = None, None
        sample = module._dist_sample(dist, interaction_type=interaction_type(), generator=generator)
        if write_back is not None:
            write_back(generator)
        if module.num_samples not in ((), None):
            running = running.expand(module.num_samples + running.shape)
        if isinstance(module, ProbabilisticTensorDictModule):
            sample = [sample] if isinstance(sample, torch.Tensor) else sample
            if isinstance(sample, TensorDictBase):
                running.update(sample)
            else:
                running.update(dict(zip(module.dist_sample_keys, sample)))
        elif isinstance(sample, torch.Tensor):
            running.set(module.dist_sample_keys[0], sample)
        else:
            running.update(sample)
        return running

    def build_dist_from_params(self, tensordict: TensorDictBase) -> D.Distribution:
        """The distribution of the last probabilistic module, from parameters already computed.

        Raises:
            RuntimeError: if the sequence has no probabilistic module.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> seq = ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"]))
            >>> seq.build_dist_from_params(TensorDict(param=torch.ones(1))).mode
            tensor([1.])
        """
        for module in reversed(list(self.modules())):
            if isinstance(module, ProbabilisticTensorDictModule):
                return module.get_dist(tensordict)
        msg = "the sequence has no ProbabilisticTensorDictModule"
        raise ModuleCallError(msg)

    def log_prob(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        *,
        dist: D.Distribution | None = None,
        **kwargs: Any,
    ) -> torch.Tensor | TensorDictBase:
        """The log-probability of the sampled values in ``tensordict``.

        With ``return_composite`` it scores every probabilistic module's values
        (a tensordict of per-key log-probabilities, or their sum when
        aggregating); otherwise the last module scores its own.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> seq = ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(
            ...     in_keys=["loc", "scale"], out_keys=["a"], distribution_class=torch.distributions.Normal))
            >>> td = seq(TensorDict(loc=torch.zeros(1), scale=torch.ones(1)))
            >>> seq.log_prob(td)
            tensor([-0.9189])
        """
        source = tensordict.copy() if tensordict_out is not None else tensordict
        if dist is None:
            reroute = bool(kwargs) and not self.return_composite
            if reroute:
                leaf = self._last_module
                while (
                    isinstance(leaf, ProbabilisticTensorDictSequential)
                    and type(leaf).log_prob is ProbabilisticTensorDictSequential.log_prob
                ):
                    leaf = leaf._last_module
                reroute = type(leaf).log_prob is ProbabilisticTensorDictModule.log_prob
            if reroute:
                dist = self.get_dist(source, **kwargs)
                kwargs = {}
            else:
                dist = self.get_dist(source)
        if self.return_composite and isinstance(dist, CompositeDistribution):
            log_prob = dist.log_prob(tensordict, **kwargs)
            if is_tensor_collection(log_prob):
                renames, aggregated = self._log_prob_renames()
                if renames and not aggregated:
                    present = set(log_prob.keys(True, True))
                    _rename_entries(log_prob, [pair for pair in renames if pair[0] in present])
            return log_prob
        out = self._last_module.log_prob(source, dist=dist, **kwargs)
        if not is_tensor_collection(out):
            return out
        if tensordict_out is None:
            return out
        if out is source:
            changed = source.apply(
                lambda x, y: x if x is not y else None, tensordict, filter_empty=True
            )
            tensordict_out.update(changed)
        else:
            tensordict_out.update(out)
        return tensordict_out

    @_module_forward
    def forward(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        _requires_sample: bool | None = None,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Runs the modules in order and returns the tensordict with their outputs.

        Args:
            tensordict (TensorDictBase): the input.
            tensordict_out (TensorDictBase, optional): write the ``out_keys`` there.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential
            >>> seq = ProbabilisticTensorDictSequential(ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"]))
            >>> seq.forward(TensorDict(param=torch.ones(1)))["a"]
            tensor([1.])
        """
        requires = (
            self._requires_sample
            if _requires_sample is None
            else (_requires_sample and self._requires_sample)
        )
        running = tensordict.copy() if self._needs_copy(tensordict_out) else tensordict
        if self.return_composite:
            modules = list(self._module_iter())
            for i, module in enumerate(modules):
                try:
                    if isinstance(module, _PROB):
                        extra = (
                            kwargs if isinstance(module, ProbabilisticTensorDictSequential) else {}
                        )
                        sample = requires if i == len(modules) - 1 else True
                        running = module(running, _requires_sample=sample, **extra)
                    else:
                        running = module(running, **kwargs)
                except Exception as err:
                    msg = f"Failed while executing module '{self._get_module_num_or_key(module)}'."
                    raise ModuleCallError(msg) from err
        else:
            running = self.get_dist_params(running, **kwargs)
            last = self._last_module
            if isinstance(last, ProbabilisticTensorDictSequential):
                running = last(running, _requires_sample=requires, **kwargs)
            elif isinstance(last, ProbabilisticTensorDictModule):
                running = last(running, _requires_sample=requires)
            else:
                running = last(running, **kwargs)
        target = self._output_target(tensordict, tensordict_out)
        return self._finish(tensordict, running, target)


# the probabilistic classes, for isinstance checks in the methods above
_PROB = (ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential)
