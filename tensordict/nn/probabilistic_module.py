"""``ProbabilisticTensorDictModule``: builds a distribution from entries and writes a value drawn from it.

Log-probability keys depend on :func:`~tensordict.nn.composite_lp_aggregate` at
construction: ``False`` (the default) writes ``"<sample key>_log_prob"`` per
sampled key (the suffix goes on the last part of a nested key); ``True`` writes
one ``"sample_log_prob"`` entry (the sum over the sampled keys).
:mod:`tensordict.nn.probabilistic` is the public home of this class.
"""

from __future__ import annotations

import contextlib

import torch
from torch import distributions as D

from tensordict._collection import is_non_tensor, is_tensor_collection
from tensordict._keys import NestedKey, _key_parts, unravel_key
from tensordict._nontensor import NonTensorData
from tensordict.base import TensorDictBase
from tensordict.errors import EntryTypeError, InvalidArgumentError
from tensordict.nn.common import TensorDictModuleBase
from tensordict.nn.dispatch import _module_forward
from tensordict.nn.distributions import _distributions_maps
from tensordict.nn.distributions.composite import (
    CompositeDistribution,
    _add_suffix,
    _resolve_name_map,
    _sum_beyond,
)
from tensordict.nn.distributions.continuous import Delta
from tensordict.nn.errors import LogProbKeyError
from tensordict.nn.interaction import (
    InteractionType,
    _use_generator,
    draw,
    interaction_type,
)
from tensordict.nn.utils import (
    _fields_repr,
    _user_warn,
    composite_lp_aggregate,
    set_composite_lp_aggregate,
)

__all__ = ["ProbabilisticTensorDictModule"]


def _is_inside(inner: NestedKey, outer: NestedKey) -> bool:
    inner, outer = _key_parts(inner), _key_parts(outer)
    return len(inner) > len(outer) and inner[: len(outer)] == outer


def _feature_sum(log_probs: TensorDictBase) -> torch.Tensor:
    """The sum of every leaf over its dimensions after the batch dimensions, then over leaves."""
    total = 0.0
    for value in log_probs.values(True, True):
        total = total + _sum_beyond(value, log_probs.batch_dims)
    return total


def _rename_entries(tensordict: TensorDictBase, renames: list) -> None:
    values = [tensordict.pop(old) for old, _ in renames]
    for (_, new), value in zip(renames, values):
        tensordict.set(new, value)


def _joint_sampler(dist):
    """The distribution's method that samples and scores one draw, if it has one."""
    if not isinstance(dist, D.Distribution):
        return None
    name = "rsample_and_log_prob" if dist.has_rsample else "sample_and_log_prob"
    return getattr(dist, name) if callable(getattr(type(dist), name, None)) else None


class ProbabilisticTensorDictModule(TensorDictModuleBase):
    """Builds a distribution from entries of a tensordict and writes a value drawn from it.

    The entries at ``in_keys`` are the keyword arguments of
    ``distribution_class`` (the last part of each key; a dict maps argument names
    to keys). The value depends on :func:`~tensordict.nn.interaction_type`, or
    ``default_interaction_type`` outside a
    :class:`~tensordict.nn.set_interaction_type` block. With
    ``return_log_prob=True`` the log-probability is written too (see the module
    documentation for its keys).

    Args:
        in_keys (NestedKey, list of NestedKey or dict): the parameter entries.
        out_keys (NestedKey or list of NestedKey, optional): where the values go.
            Defaults to the names of a composite distribution, else ``"_"`` (with
            a warning at the first call).

    Keyword Args:
        default_interaction_type (InteractionType or str, optional): the rule
            outside a block. Defaults to ``DETERMINISTIC``.
        distribution_class (type or Callable, optional): builds the distribution
            from the parameters. Defaults to :class:`~tensordict.nn.distributions.Delta`.
        distribution_kwargs (dict, optional): more keyword arguments of the class.
        return_log_prob (bool, optional): write the log-probability. Defaults to ``False``.
        log_prob_keys (list of NestedKey, optional): custom log-probability keys,
            one per sampled key (not with an aggregate mode).
        log_prob_key (NestedKey, optional): the custom key of the single (or
            summed) log-probability.
        cache_dist (bool, optional): deprecated, no effect.
        n_empirical_estimate (int, optional): samples averaged for a missing mean.
            Defaults to ``1000``.
        num_samples (int or torch.Size, optional): leading sample dimensions added
            to the output. Defaults to ``None``.
        generator (torch.Generator, int or NestedKey, optional): the random
            generator: a generator, a seed, or the key of an input entry holding
            either (a seed read there is replaced by a new one after sampling).

    Raises:
        ValueError: if a dict ``in_keys`` has non-string keys, or a custom
            log-probability key would overwrite a sample.
        RuntimeError: if log-probability keys do not fit the aggregate mode.

    Examples:
        >>> from tensordict.nn import InteractionType, ProbabilisticTensorDictModule
        >>> module = ProbabilisticTensorDictModule(
        ...     in_keys=["loc", "scale"], out_keys=["action"],
        ...     distribution_class=torch.distributions.Normal,
        ...     default_interaction_type=InteractionType.RANDOM, return_log_prob=True)
        >>> _ = torch.manual_seed(0)
        >>> td = module(TensorDict(loc=torch.zeros(3), scale=torch.ones(3)))
        >>> td["action"]
        tensor([ 1.5410, -0.2934, -2.1788])
        >>> td["action_log_prob"]
        tensor([-2.1063, -0.9620, -3.2925])
    """

    _warn_default_out_key = False

    def __init__(
        self,
        in_keys: NestedKey | list | dict,
        out_keys: NestedKey | list | None = None,
        *,
        default_interaction_type: InteractionType | str = InteractionType.DETERMINISTIC,
        distribution_class: type = Delta,
        distribution_kwargs: dict | None = None,
        return_log_prob: bool = False,
        log_prob_keys: list | None = None,
        log_prob_key: NestedKey | None = None,
        cache_dist: bool = False,
        n_empirical_estimate: int = 1000,
        num_samples: int | torch.Size | None = None,
        generator: torch.Generator | int | NestedKey | None = None,
    ) -> None:
        super().__init__()
        distribution_kwargs = distribution_kwargs if distribution_kwargs is not None else {}
        if isinstance(distribution_class, str):
            distribution_class = _distributions_maps.get(distribution_class.lower())
        if isinstance(in_keys, (str, tuple)):
            in_keys = [in_keys]
        if isinstance(out_keys, (str, tuple)):
            out_keys = [out_keys]
        elif out_keys is None:
            out_keys = self._default_out_keys(distribution_class, distribution_kwargs)
        if isinstance(in_keys, dict):
            dist_keys, in_keys = zip(*in_keys.items()) if in_keys else ((), ())
            if any(type(k) is not str for k in dist_keys):
                msg = f"a dict in_keys maps distribution argument names (strings) to keys; got the names {list(dist_keys)}"
                raise InvalidArgumentError(msg)
        else:
            dist_keys = in_keys
        self._out_keys = [unravel_key(k) for k in out_keys]
        self.in_keys = list(in_keys)
        self.dist_keys = list(dist_keys)
        aggregate = composite_lp_aggregate()
        self._composite_lp_aggreate_at_init = aggregate
        self._set_log_prob_keys(log_prob_keys, log_prob_key, aggregate)
        self.default_interaction_type = InteractionType(default_interaction_type)
        self.distribution_class = distribution_class
        self.distribution_kwargs = distribution_kwargs
        self.return_log_prob = return_log_prob
        if return_log_prob:
            self._check_log_prob_keys()
        self.n_empirical_estimate = n_empirical_estimate
        if cache_dist:
            _user_warn(
                "ProbabilisticTensorDictModule(cache_dist=True) has no effect and is deprecated",
                DeprecationWarning,
            )
        self.cache_dist = cache_dist if hasattr(distribution_class, "update") else False
        self._dist = None
        if isinstance(num_samples, int):
            num_samples = torch.Size((num_samples,))
        self.num_samples = num_samples
        self._generator, self._generator_key = self._parse_generator(generator)

    def _default_out_keys(self, distribution_class, distribution_kwargs) -> list:
        if distribution_class is not CompositeDistribution:
            self._warn_default_out_key = True
            return ["_"]
        distribution_map = distribution_kwargs.get("distribution_map")
        if distribution_map is None:
            msg = "a CompositeDistribution module needs 'distribution_map' in distribution_kwargs"
            raise KeyError(msg)
        name_map = distribution_kwargs.get("name_map")
        if name_map is None:
            return list(distribution_map)
        mapped = {unravel_key(name) for name in name_map}
        if any(unravel_key(name) not in mapped for name in distribution_map):
            _user_warn(
                "the name_map leaves out components of distribution_map and no out_keys were given: "
                "those components are written but are not out_keys; pass out_keys to list them",
                FutureWarning,
            )
        return list(name_map.values())

    def _set_log_prob_keys(self, log_prob_keys, log_prob_key, aggregate: bool) -> None:
        single = len(self._out_keys) == 1
        if log_prob_keys is None:
            if single and log_prob_key is not None:
                log_prob_keys = [log_prob_key]
            elif aggregate:
                log_prob_keys = ["sample_log_prob"] if single else None
            else:
                log_prob_keys = [_add_suffix(key, "_log_prob") for key in self._out_keys]
        elif aggregate:
            msg = "composite_lp_aggregate() is True: pass log_prob_key, not log_prob_keys"
            raise LogProbKeyError(msg)
        if log_prob_key is None:
            if aggregate:
                log_prob_key = "sample_log_prob"
            elif single:
                log_prob_key = _add_suffix(self._out_keys[0], "_log_prob")
        elif not single and not aggregate:
            msg = "composite_lp_aggregate() is False and the module samples several keys: pass log_prob_keys, not log_prob_key"
            raise LogProbKeyError(msg)
        self._log_prob_key = log_prob_key
        self._log_prob_keys = log_prob_keys
        self._custom_log_prob_keys = []
        if log_prob_keys is not None and len(log_prob_keys) == len(self._out_keys):
            for out_key, lp_key in zip(self._out_keys, log_prob_keys):
                expected = _add_suffix(out_key, "_log_prob")
                if unravel_key(lp_key) != expected:
                    self._custom_log_prob_keys.append((expected, unravel_key(lp_key)))

    def _check_log_prob_keys(self) -> None:
        cls = self.distribution_class
        if not isinstance(cls, type):
            return
        if issubclass(cls, CompositeDistribution):
            distribution_map = self.distribution_kwargs.get("distribution_map")
            if distribution_map is None:
                return
            sample_keys = list(
                _resolve_name_map(
                    self.distribution_kwargs.get("name_map"), distribution_map
                ).values()
            )
        else:
            sample_keys = list(self._out_keys)
        defaults = {_add_suffix(key, "_log_prob") for key in [*self._out_keys, *sample_keys]}
        defaults.add("sample_log_prob")
        lp_keys = self._log_prob_keys if self._log_prob_keys is not None else [self._log_prob_key]
        clashes = [
            (lp_key, key)
            for lp_key in (unravel_key(k) for k in lp_keys if isinstance(k, (str, tuple)))
            if lp_key not in defaults
            for key in sample_keys
            if lp_key == key or _is_inside(lp_key, key) or _is_inside(key, lp_key)
        ]
        if clashes:
            pairs = ", ".join(f"{lp!r} for the sample key {key!r}" for lp, key in clashes)
            msg = f"a log-probability key would overwrite a sample (it is, lies inside or holds one): {pairs}"
            raise InvalidArgumentError(msg)

    @staticmethod
    def _parse_generator(generator):
        if generator is None:
            return None, None
        if isinstance(generator, torch.Generator):
            return generator, None
        if isinstance(generator, int) and not isinstance(generator, bool):
            return torch.Generator().manual_seed(generator), None
        if isinstance(generator, (str, tuple)):
            return None, unravel_key(generator)
        msg = f"generator must be a torch.Generator, an int seed, a key or None, got {type(generator).__name__}"
        raise EntryTypeError(msg)

    def __repr__(self) -> str:
        fields = [
            f"in_keys={self.in_keys}",
            f"out_keys={self.out_keys}",
            f"distribution_class={self.distribution_class}",
            f"distribution_kwargs={self.distribution_kwargs}",
            f"default_interaction_type={self.default_interaction_type}",
            f"num_samples={self.num_samples}",
        ]
        return _fields_repr(self, fields)

    # ------------------------------------------------------------------ keys
    def _check_mode(self, what: str) -> bool:
        aggregate = composite_lp_aggregate()
        if aggregate != self._composite_lp_aggreate_at_init:
            msg = (
                f"composite_lp_aggregate() is {aggregate} but was {self._composite_lp_aggreate_at_init} "
                f"when the module was built, which changes {what}; set it before building the module"
            )
            raise LogProbKeyError(msg)
        return aggregate

    @property
    def out_keys(self) -> list:
        """The sampled keys, then the log-probability keys when ``return_log_prob``.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["x"], return_log_prob=True).out_keys
            ['x', 'x_log_prob']
        """
        out_keys = list(self._out_keys)
        if self.return_log_prob:
            if not composite_lp_aggregate():
                lp_keys = self.log_prob_keys
                if out_keys[-len(lp_keys) :] != lp_keys:
                    out_keys.extend(lp_keys)
            elif self.log_prob_key not in out_keys:
                out_keys.append(self.log_prob_key)
        return out_keys

    @property
    def log_prob_key(self) -> NestedKey:
        """The key of the log-probability, when there is one.

        Raises:
            RuntimeError: if the aggregate mode changed since construction, or it
                is ``False`` and there are several sampled keys.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> ProbabilisticTensorDictModule(in_keys=["param"], out_keys=[("agent", "x")]).log_prob_key
            ('agent', 'x_log_prob')
        """
        if self._check_mode("log_prob_key"):
            return self._log_prob_key
        if len(self._log_prob_keys) == 1:
            return self._log_prob_keys[0]
        msg = (
            f"the module writes several log-probabilities {self._log_prob_keys}: read log_prob_keys"
        )
        raise LogProbKeyError(msg)

    @property
    def log_prob_keys(self) -> list:
        """The keys of the log-probabilities: one per sampled key, or ``[log_prob_key]`` when aggregating.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["x"]).log_prob_keys
            ['x_log_prob']
        """
        if self._check_mode("log_prob_keys"):
            return [self._log_prob_key]
        return self._log_prob_keys

    @property
    def dist_params_keys(self) -> list:
        """The keys of the distribution parameters: the ``in_keys``.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> ProbabilisticTensorDictModule(in_keys={"param": "p"}, out_keys=["x"]).dist_params_keys
            ['p']
        """
        return list(self.in_keys)

    @property
    def dist_sample_keys(self) -> list:
        """The keys of the sampled values: ``out_keys`` without the log-probability keys.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["x"], return_log_prob=True).dist_sample_keys
            ['x']
        """
        return list(self._out_keys)

    # ------------------------------------------------------------------ distribution
    def get_dist(self, tensordict: TensorDictBase) -> D.Distribution:
        """Builds the distribution from the parameters in ``tensordict``.

        Args:
            tensordict (TensorDictBase): holds the parameters at ``in_keys``.

        Raises:
            TypeError: if the parameter names do not fit the distribution.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> module = ProbabilisticTensorDictModule(
            ...     in_keys=["loc", "scale"], out_keys=["x"], distribution_class=torch.distributions.Normal)
            >>> module.get_dist(TensorDict(loc=torch.zeros(2), scale=torch.ones(2))).mean
            tensor([0., 0.])
        """
        kwargs = {}
        for dist_key, key in zip(self.dist_keys, self.in_keys):
            kwargs[_key_parts(dist_key)[-1]] = tensordict.get(key, None)
        try:
            return self.distribution_class(**kwargs, **self.distribution_kwargs)
        except TypeError as err:
            if "unexpected keyword argument" in str(err) or "missing" in str(err):
                msg = (
                    f"the parameters {list(kwargs)} (from in_keys {self.in_keys}) do not fit "
                    f"{getattr(self.distribution_class, '__name__', self.distribution_class)}: {err}"
                )
                raise TypeError(msg) from err
            raise

    build_dist_from_params = get_dist

    def log_prob(
        self, tensordict: TensorDictBase, *, dist: D.Distribution | None = None
    ) -> torch.Tensor | TensorDictBase:
        """The log-probability of the values in ``tensordict``.

        Args:
            tensordict (TensorDictBase): holds the parameters and the sampled values.

        Keyword Args:
            dist (Distribution, optional): the distribution, if already built.

        Returns:
            A tensor, or for a composite distribution without aggregation a
            tensordict of per-key log-probabilities.

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> module = ProbabilisticTensorDictModule(
            ...     in_keys=["loc", "scale"], out_keys=["x"], distribution_class=torch.distributions.Normal)
            >>> td = module(TensorDict(loc=torch.zeros(1), scale=torch.ones(1)))
            >>> module.log_prob(td)
            tensor([-0.9189])
        """
        if dist is None:
            dist = self.get_dist(tensordict)
        if not isinstance(dist, CompositeDistribution):
            return dist.log_prob(tensordict.get(self.out_keys[0]))
        if self._check_mode("log_prob"):
            with set_composite_lp_aggregate(False):
                per_key = dist.log_prob(tensordict)
                tensordict.update(per_key)
            return _feature_sum(per_key)
        per_key = dist.log_prob(tensordict)
        self._update_td_lp(per_key)
        return per_key

    def _update_td_lp(self, log_probs: TensorDictBase) -> None:
        renames = [
            (_add_suffix(out_key, "_log_prob"), unravel_key(lp_key))
            for out_key, lp_key in zip(self.dist_sample_keys, self.log_prob_keys)
            if unravel_key(lp_key) != _add_suffix(out_key, "_log_prob")
        ]
        if renames:
            _rename_entries(log_probs, renames)

    def _resolve_generator(self, tensordict: TensorDictBase):
        """The generator of this call, and a function writing the next seed back (or None)."""
        if self._generator is not None or self._generator_key is None:
            return self._generator, None
        value = tensordict.get(self._generator_key, None)
        if value is None:
            return None, None
        value = value.data if is_non_tensor(value) else value
        if isinstance(value, torch.Generator):
            return value, None
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                msg = f"the generator key {self._generator_key!r} holds {value.numel()} values, not one seed"
                raise InvalidArgumentError(msg)
            seed, device, as_tensor = int(value.item()), value.device, True
        elif isinstance(value, int) and not isinstance(value, bool):
            seed, device, as_tensor = value, self._parameter_device(tensordict), False
        else:
            msg = f"the generator key {self._generator_key!r} holds a {type(value).__name__}, not a generator or a seed"
            raise EntryTypeError(msg)
        local = torch.Generator(device=device).manual_seed(seed)
        key = self._generator_key

        def write_back(gen: torch.Generator) -> None:
            next_seed = torch.randint(0, 2**62, (), generator=gen, dtype=torch.int64, device=device)
            tensordict.set(key, next_seed if as_tensor else NonTensorData(int(next_seed.item())))

        return local, write_back

    def _parameter_device(self, tensordict: TensorDictBase) -> torch.device:
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if isinstance(value, torch.Tensor):
                return value.device
        return torch.device("cpu")

    def _dist_sample(
        self, dist, interaction_type: InteractionType | None = None, *, generator=None
    ):
        rule = interaction_type if interaction_type is not None else self.default_interaction_type
        value = draw(
            dist,
            rule,
            sample_shape=self.num_samples or torch.Size(()),
            n_empirical_estimate=self.n_empirical_estimate,
            generator=generator,
            who=type(self).__name__,
        )
        if self.num_samples and InteractionType(rule) is not InteractionType.RANDOM:
            if isinstance(value, tuple):
                return tuple(v.expand(self.num_samples + v.shape) for v in value)
            return value.expand(self.num_samples + value.shape)
        return value

    # ------------------------------------------------------------------ call
    @_module_forward
    def forward(
        self,
        tensordict: TensorDictBase,
        tensordict_out: TensorDictBase | None = None,
        _requires_sample: bool = True,
    ) -> TensorDictBase:
        """Builds the distribution and writes its value (and log-probability) at ``out_keys``.

        Args:
            tensordict (TensorDictBase): holds the parameters.
            tensordict_out (TensorDictBase, optional): where to write. Defaults to
                ``tensordict``.

        Returns:
            The tensordict written into (expanded by ``num_samples`` if set).

        Examples:
            >>> from tensordict.nn import ProbabilisticTensorDictModule
            >>> module = ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["x"])
            >>> module.forward(TensorDict(param=torch.ones(2)))["x"]
            tensor([1., 1.])
        """
        if tensordict_out is None:
            tensordict_out = tensordict
        dist = self.get_dist(tensordict)
        if not _requires_sample:
            if self.return_log_prob:
                self._write_log_prob_only(tensordict, tensordict_out, dist)
            return tensordict_out
        generator, write_back = self._resolve_generator(tensordict)
        rule = interaction_type() or self.default_interaction_type
        joint = (
            _joint_sampler(dist)
            if self.return_log_prob and rule is InteractionType.RANDOM
            else None
        )
        log_prob = None
        if joint is not None:
            quiet = (
                set_composite_lp_aggregate(False)
                if isinstance(dist, CompositeDistribution)
                else contextlib.nullcontext()
            )
            with _use_generator(generator), quiet:
                values, log_prob = joint(self.num_samples or torch.Size(()))
        else:
            values = self._dist_sample(
                dist, interaction_type=interaction_type(), generator=generator
            )
        if write_back is not None:
            write_back(generator)
        if self.num_samples is not None:
            tensordict_out = tensordict_out.expand(self.num_samples + tensordict_out.shape)
        if isinstance(values, TensorDictBase):
            if self.return_log_prob:
                self._add_composite_log_prob(dist, values, log_prob)
            tensordict_out.update(values)
            return tensordict_out
        if isinstance(values, torch.Tensor):
            values = (values,)
        if self._warn_default_out_key:
            self._warn_default_out_key = False
            _user_warn(
                'ProbabilisticTensorDictModule got no out_keys and writes its sample at "_"; pass out_keys to choose where it goes',
                FutureWarning,
            )
        tensordict_out.update(dict(zip(self.dist_sample_keys, values)))
        if self.return_log_prob:
            if log_prob is None:
                log_prob = dist.log_prob(*values)
            tensordict_out.set(self.log_prob_key, log_prob)
        return tensordict_out

    def _add_composite_log_prob(self, dist, values: TensorDictBase, log_prob) -> None:
        aggregate = composite_lp_aggregate()
        if aggregate != self._composite_lp_aggreate_at_init:
            self._check_mode("the log-probability keys")
        if aggregate:
            if log_prob is None:
                with set_composite_lp_aggregate(False):
                    log_prob = dist.log_prob(values)
            if log_prob is not values:
                values.update(log_prob)
            values.set(self.log_prob_key, _feature_sum(log_prob))
            return
        if log_prob is None:
            log_prob = dist.log_prob(values)
        self._update_td_lp(log_prob)
        values.update(log_prob)

    def _write_log_prob_only(self, tensordict, tensordict_out, dist) -> None:
        lp_keys = self.log_prob_keys
        values = [tensordict.get(key) for key in self.out_keys if key not in lp_keys]
        if isinstance(dist, CompositeDistribution) and not (
            len(values) == 1 and is_tensor_collection(values[0])
        ):
            log_prob = self.log_prob(tensordict, dist=dist)
            if is_tensor_collection(log_prob):
                tensordict_out.update(log_prob)
                return
        else:
            log_prob = dist.log_prob(*values)
        tensordict_out.set(self.log_prob_key, log_prob)
