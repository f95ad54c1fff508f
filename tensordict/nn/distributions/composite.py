"""A distribution made of named distributions, which samples and scores tensordicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import distributions as D

from tensordict._keys import NestedKey, unravel_key
from tensordict._td import TensorDict
from tensordict._typing import ShapeType
from tensordict.base import TensorDictBase
from tensordict.errors import MissingKeyError
from tensordict.nn.errors import NotATensorDictError
from tensordict.nn.interaction import deterministic_value
from tensordict.nn.utils import _user_warn, composite_lp_aggregate

__all__ = ["CompositeDistribution"]


def _add_suffix(key: NestedKey, suffix: str) -> NestedKey:
    """``"a"`` -> ``"a_log_prob"``, ``("a", "b")`` -> ``("a", "b_log_prob")``."""
    key = unravel_key(key)
    if isinstance(key, str):
        return key + suffix
    return (*key[:-1], key[-1] + suffix)


def _resolve_name_map(name_map: dict | None, names) -> dict:
    """Each distribution name -> the key its sample is written at."""
    names = [unravel_key(name) for name in names]
    renames = {unravel_key(k): unravel_key(v) for k, v in (name_map or {}).items()}
    return {name: renames.get(name, name) for name in names}


def _sum_beyond(value: torch.Tensor, ndim: int) -> torch.Tensor:
    """Sums the dimensions after the first ``ndim`` (the event dimensions of a component)."""
    if value.ndim > ndim:
        return value.flatten(ndim, -1).sum(-1)
    return value


class CompositeDistribution(D.Distribution, Mapping):
    """A distribution made of several named distributions; its samples are tensordicts.

    Each name of ``distribution_map`` (a key, possibly nested) reads its
    parameters from the sub-tensordict of ``params`` at that name, and builds its
    distribution class with them. Samples, modes and means are tensordicts with
    one entry per name; log-probabilities and entropies are summed into one
    tensor when :func:`~tensordict.nn.composite_lp_aggregate` is ``True``, else
    kept per name (``"<name>_log_prob"``, ``"<name>_entropy"``). It is a mapping of
    names to the component distributions.

    Args:
        params (TensorDictBase): the parameters, one sub-tensordict per name; its
            batch size is the distribution's batch shape.
        distribution_map (dict): name -> distribution class.

    Keyword Args:
        name_map (dict, optional): name -> the key its samples are written at.
        extra_kwargs (dict, optional): name -> extra keyword arguments of its class.
        log_prob_key (NestedKey, optional): the key of the summed log-probability.
            Defaults to ``"sample_log_prob"``.
        entropy_key (NestedKey, optional): the key of the summed entropy.
            Defaults to ``"entropy"``.

    Raises:
        KeyError: if ``params`` has no parameters for a name.

    Examples:
        >>> from tensordict.nn import CompositeDistribution
        >>> params = TensorDict({
        ...     "cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
        ...     ("nested", "disc"): {"logits": torch.zeros(3, 10)},
        ... }, [3])
        >>> dist = CompositeDistribution(params, distribution_map={
        ...     "cont": torch.distributions.Normal, ("nested", "disc"): torch.distributions.Categorical})
        >>> sample = dist.sample((4,))
        >>> sample
        TensorDict(batch_size=[4,3], fields={cont: f32[4], nested: {disc: i64[]}})
        >>> dist.log_prob(sample)
        TensorDict(batch_size=[4,3], fields={
            cont_log_prob: f32[4],
            nested: {disc_log_prob: f32[]}})
    """

    def __init__(
        self,
        params: TensorDictBase,
        distribution_map: dict,
        *,
        name_map: dict | None = None,
        extra_kwargs: dict | None = None,
        log_prob_key: NestedKey | None = None,
        entropy_key: NestedKey | None = None,
    ) -> None:
        self._batch_shape = params.shape
        self._event_shape = torch.Size(())
        extra_kwargs = extra_kwargs or {}
        write_names = _resolve_name_map(name_map, distribution_map)
        dists = {}
        for raw_name, dist_class in distribution_map.items():
            name = unravel_key(raw_name)
            dist_params = params.get(name, None)
            if dist_params is None:
                msg = f"no parameters at {name!r} for its distribution; params holds {list(params.keys(True, True))}"
                raise MissingKeyError(msg)
            kwargs = extra_kwargs.get(name, extra_kwargs.get(raw_name, {}))
            dists[write_names[name]] = dist_class(**dist_params, **kwargs)
        self.dists = dists
        self.log_prob_key = log_prob_key
        self.entropy_key = entropy_key

    @classmethod
    def from_distributions(
        cls,
        params: TensorDictBase,
        distributions: dict,
        *,
        name_map: dict | None = None,
        log_prob_key: NestedKey | None = None,
        entropy_key: NestedKey | None = None,
    ) -> CompositeDistribution:
        """Builds a composite distribution from distribution instances.

        Args:
            params (TensorDictBase): gives the batch shape.
            distributions (dict): name -> distribution.

        Keyword Args:
            name_map (dict, optional): name -> the key its samples are written at.
            log_prob_key (NestedKey, optional): the key of the summed log-probability.
            entropy_key (NestedKey, optional): the key of the summed entropy.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(batch_size=[2]), {"x": torch.distributions.Normal(torch.zeros(2), 1.0)})
            >>> dist.sample().batch_size
            torch.Size([2])
        """
        self = cls.__new__(cls)
        self._batch_shape = params.shape
        self._event_shape = torch.Size(())
        write_names = _resolve_name_map(name_map, distributions)
        self.dists = {write_names[unravel_key(n)]: d for n, d in distributions.items()}
        self.log_prob_key = log_prob_key
        self.entropy_key = entropy_key
        return self

    # ------------------------------------------------------------------ mapping
    def __iter__(self):
        yield from self.dists

    def __getitem__(self, name: NestedKey) -> D.Distribution:
        return self.dists[name]

    def __len__(self) -> int:
        return len(self.dists)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dists})"

    @property
    def log_prob_key(self) -> NestedKey:
        """The key of the summed log-probability (``"sample_log_prob"`` unless set).

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> CompositeDistribution(TensorDict(), {}).log_prob_key
            'sample_log_prob'
        """
        return "sample_log_prob" if self._log_prob_key is None else self._log_prob_key

    @log_prob_key.setter
    def log_prob_key(self, value: NestedKey | None) -> None:
        self._log_prob_key = value

    @property
    def entropy_key(self) -> NestedKey:
        """The key of the summed entropy (``"entropy"`` unless set).

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> CompositeDistribution(TensorDict(), {}).entropy_key
            'entropy'
        """
        return "entropy" if self._entropy_key is None else self._entropy_key

    @entropy_key.setter
    def entropy_key(self, value: NestedKey | None) -> None:
        self._entropy_key = value

    # ------------------------------------------------------------------ values
    def _values(self, values: dict, shape=()) -> TensorDict:
        return TensorDict(values, torch.Size(shape) + self.batch_shape)

    def _of_each(self, read: Callable, shape=()) -> TensorDict:
        """``read(component)`` for every component, in a tensordict of batch size ``shape + batch_shape``."""
        return self._values({name: read(dist) for name, dist in self.dists.items()}, shape)

    def sample(self, shape: ShapeType | None = None) -> TensorDictBase:
        """Draws a sample of every component, in a tensordict of batch size ``shape + batch_shape``.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution(TensorDict(x={"probs": torch.full((2,), 0.5)}, batch_size=[2]),
            ...     {"x": torch.distributions.Bernoulli})
            >>> dist.sample((3,)).batch_size
            torch.Size([3, 2])
        """
        shape = torch.Size(shape if shape is not None else ())
        return self._of_each(lambda dist: dist.sample(shape), shape)

    def rsample(self, shape: ShapeType | None = None) -> TensorDictBase:
        """Draws a reparameterized sample of every component.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> loc = torch.zeros(2, requires_grad=True)
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(batch_size=[2]), {"x": torch.distributions.Normal(loc, 1.0)})
            >>> dist.rsample()["x"].requires_grad
            True
        """
        shape = torch.Size(shape if shape is not None else ())
        return self._of_each(lambda dist: dist.rsample(shape), shape)

    @property
    def mode(self) -> TensorDictBase:
        """The mode of every component, in a tensordict.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Categorical(logits=torch.tensor([0.0, 2.0]))})
            >>> dist.mode["x"]
            tensor(1)
        """
        return self._of_each(lambda dist: dist.mode)

    @property
    def mean(self) -> TensorDictBase:
        """The mean of every component, in a tensordict.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(3.0), 1.0)})
            >>> dist.mean["x"]
            tensor(3.)
        """
        return self._of_each(lambda dist: dist.mean)

    @property
    def deterministic_sample(self) -> TensorDictBase:
        """A deterministic value of every component (its ``deterministic_sample``, else its mean or mode).

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(3.0), 1.0)})
            >>> dist.deterministic_sample["x"]
            tensor(3.)
        """
        return self._of_each(lambda dist: deterministic_value(dist, type(self).__name__))

    # ------------------------------------------------------------------ scores
    def _aggregate(self, per_name: dict, ndim: int):
        total = 0.0
        for value in per_name.values():
            total = total + _sum_beyond(value, ndim)
        return total

    def sample_and_log_prob(
        self, shape: ShapeType | None = None
    ) -> tuple[TensorDictBase, TensorDictBase | torch.Tensor]:
        """Draws a sample and returns it with the log-probability of that same draw.

        Returns:
            ``(sample, log_prob)``: the log-probability is a tensordict of
            ``"<name>_log_prob"`` entries, or their sum when
            :func:`~tensordict.nn.composite_lp_aggregate` is ``True``.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> sample, lp = dist.sample_and_log_prob()
            >>> torch.allclose(lp["x_log_prob"], dist["x"].log_prob(sample["x"]))
            True
        """
        return self._sample_and_log_prob(shape, reparameterize=False)

    def rsample_and_log_prob(
        self, shape: ShapeType | None = None
    ) -> tuple[TensorDictBase, TensorDictBase | torch.Tensor]:
        """Like :meth:`sample_and_log_prob`, with a reparameterized sample.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> sample, lp = dist.rsample_and_log_prob((2,))
            >>> lp["x_log_prob"].shape
            torch.Size([2])
        """
        return self._sample_and_log_prob(shape, reparameterize=True)

    def _sample_and_log_prob(self, shape, *, reparameterize: bool):
        shape = torch.Size(shape if shape is not None else ())
        joint = "rsample_and_log_prob" if reparameterize else "sample_and_log_prob"
        samples, log_probs = {}, {}
        for name, dist in self.dists.items():
            if callable(getattr(type(dist), joint, None)):
                samples[name], log_probs[name] = getattr(dist, joint)(shape)
            else:
                samples[name] = dist.rsample(shape) if reparameterize else dist.sample(shape)
                log_probs[name] = dist.log_prob(samples[name])
        sample = self._values(samples, shape)
        if not composite_lp_aggregate():
            named = {_add_suffix(name, "_log_prob"): lp for name, lp in log_probs.items()}
            return sample, sample.empty(recurse=True).update(named).filter_empty_()
        return sample, self._aggregate(log_probs, sample.ndim)

    def log_prob(self, sample: TensorDictBase) -> TensorDictBase | torch.Tensor:
        """The log-probability of ``sample``: per name, or summed (see :func:`~tensordict.nn.composite_lp_aggregate`).

        Args:
            sample (TensorDictBase): a value of every component at its name.

        Returns:
            A tensordict of ``"<name>_log_prob"`` entries, or one tensor of the
            sample's batch shape (event dimensions summed).

        Examples:
            >>> from tensordict.nn import CompositeDistribution, set_composite_lp_aggregate
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(batch_size=[2]), {"x": torch.distributions.Normal(torch.zeros(2, 3), 1.0)})
            >>> with set_composite_lp_aggregate(True):
            ...     dist.log_prob(dist.sample()).shape
            torch.Size([2])
        """
        if not composite_lp_aggregate():
            return self.log_prob_composite(sample)
        return self._aggregate(
            {name: dist.log_prob(sample.get(name)) for name, dist in self.dists.items()},
            sample.ndim,
        )

    def log_prob_composite(
        self, sample: TensorDictBase, *, include_sum: bool | None = None
    ) -> TensorDictBase:
        """The log-probability of every component, in a tensordict.

        When :func:`~tensordict.nn.composite_lp_aggregate` is ``True`` the entries
        are written into ``sample`` (and the sum at :attr:`log_prob_key`);
        otherwise a new tensordict shaped like ``sample`` holds them.

        Args:
            sample (TensorDictBase): the values.

        Keyword Args:
            include_sum (bool, optional): also write the sum at
                :attr:`log_prob_key`. Defaults to the aggregate mode.

        Raises:
            RuntimeError: (also a ``TypeError``) if ``sample`` is not a tensordict.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> dist.log_prob_composite(TensorDict(x=torch.tensor(0.0)), include_sum=True)
            TensorDict(batch_size=[], fields={sample_log_prob: f32[], x_log_prob: f32[]})
        """
        aggregate = composite_lp_aggregate()
        include_sum = aggregate if include_sum is None else include_sum
        if not isinstance(sample, TensorDictBase):
            msg = f"log_prob_composite takes a tensordict sample, got {type(sample).__name__}"
            raise NotATensorDictError(msg)
        per_name = {}
        for name, dist in self.dists.items():
            per_name[_add_suffix(name, "_log_prob")] = dist.log_prob(sample.get(name))
        out = dict(per_name)
        if include_sum:
            out[self.log_prob_key] = self._aggregate(per_name, sample.ndim)
        if aggregate:
            return sample.update(out)
        return sample.empty(recurse=True).update(out).filter_empty_()

    def _entropies(self, samples_mc: int) -> dict:
        out = {}
        for name, dist in self.dists.items():
            try:
                out[name] = dist.entropy()
            except NotImplementedError:  # Monte-Carlo estimate
                draws = dist.rsample((samples_mc,))
                out[name] = -dist.log_prob(draws).mean(0)
        return out

    def entropy(
        self,
        samples_mc: int = 1,
        *,
        aggregate_probabilities: bool | None = None,
        include_sum: bool | None = None,
    ) -> TensorDictBase | torch.Tensor:
        """The entropy of every component, or their sum (see :func:`~tensordict.nn.composite_lp_aggregate`).

        A component without a closed form is estimated from ``samples_mc`` samples.

        Args:
            samples_mc (int, optional): samples of the Monte-Carlo estimates. Defaults to ``1``.

        Keyword Args:
            aggregate_probabilities (bool, optional): ignored, with a warning
                (use :class:`~tensordict.nn.set_composite_lp_aggregate`).
            include_sum (bool, optional): with per-name entropies, also the sum.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> dist.entropy()
            TensorDict(batch_size=[], fields={x_entropy: f32[]})
        """
        if aggregate_probabilities is not None:
            _user_warn(
                "CompositeDistribution.entropy(aggregate_probabilities=...) has no effect; use set_composite_lp_aggregate",
                DeprecationWarning,
            )
        aggregate = composite_lp_aggregate()
        if not aggregate:
            return self.entropy_composite(samples_mc, include_sum=include_sum)
        return self._aggregate(self._entropies(samples_mc), len(self.batch_shape))

    def entropy_composite(
        self, samples_mc: int = 1, *, include_sum: bool | None = None
    ) -> TensorDictBase:
        """The entropy of every component at ``"<name>_entropy"``, in a new tensordict.

        Args:
            samples_mc (int, optional): samples of the Monte-Carlo estimates. Defaults to ``1``.

        Keyword Args:
            include_sum (bool, optional): also the sum at :attr:`entropy_key`.
                Defaults to the aggregate mode.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> sorted(dist.entropy_composite(include_sum=True).keys())
            ['entropy', 'x_entropy']
        """
        include_sum = composite_lp_aggregate() if include_sum is None else include_sum
        entropies = self._entropies(samples_mc)
        out = {_add_suffix(name, "_entropy"): value for name, value in entropies.items()}
        if include_sum:
            out[self.entropy_key] = self._aggregate(entropies, len(self.batch_shape))
        return TensorDict(out, self.batch_shape)

    def cdf(self, sample: TensorDictBase) -> TensorDictBase:
        """Writes the CDF of every component at ``"<name>_cdf"`` into ``sample``.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> dist.cdf(TensorDict(x=torch.tensor(0.0)))["x_cdf"]
            tensor(0.5000)
        """
        sample.update({_add_suffix(n, "_cdf"): d.cdf(sample.get(n)) for n, d in self.dists.items()})
        return sample

    def icdf(self, sample: TensorDictBase) -> TensorDictBase:
        """Writes the inverse CDF of every component at ``"<name>_icdf"`` into ``sample``.

        The probabilities are read at ``"<name>_cdf"``, else computed from the value at ``name``.

        Raises:
            KeyError: if neither is there.

        Examples:
            >>> from tensordict.nn import CompositeDistribution
            >>> dist = CompositeDistribution.from_distributions(
            ...     TensorDict(), {"x": torch.distributions.Normal(torch.tensor(0.0), 1.0)})
            >>> dist.icdf(TensorDict(x_cdf=torch.tensor(0.5)))["x_icdf"]
            tensor(0.)
        """
        for name, dist in self.dists.items():
            prob = sample.get(_add_suffix(name, "_cdf"), None)
            if prob is None:
                value = sample.get(name, None)
                if value is None:
                    msg = f"icdf needs {name!r} or {_add_suffix(name, '_cdf')!r} in the sample"
                    raise MissingKeyError(msg)
                prob = dist.cdf(value)
            sample.set(_add_suffix(name, "_icdf"), dist.icdf(prob))
        return sample
