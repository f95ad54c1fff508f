"""How probabilistic modules turn a distribution into a value: the interaction type.

:class:`InteractionType` names the rule (a random sample, the mode, the mean...),
:class:`set_interaction_type` sets it for a block, and :func:`draw` applies it.
The ``DETERMINISTIC`` rule takes a distribution's ``deterministic_sample`` when it
has one, else the mean or mode that :data:`DETERMINISTIC_RULES` names for its class.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator

import torch
from torch import distributions as D

from tensordict.base import TensorDictBase
from tensordict.errors import InvalidArgumentError
from tensordict.nn.errors import SampleMethodError
from tensordict.nn.utils import _BlockSetter, _Mode, _user_warn

__all__ = ["InteractionType", "interaction_type", "register_deterministic", "set_interaction_type"]


class InteractionType(str, enum.Enum):
    """The rule a probabilistic module uses to get a value from its distribution.

    ``RANDOM`` draws a sample (reparameterized when possible); ``MODE``,
    ``MEDIAN`` and ``MEAN`` take that statistic; ``DETERMINISTIC`` takes the
    distribution's ``deterministic_sample``, or the statistic its class is
    registered with. Members compare equal to their lower-case names.

    Examples:
        >>> from tensordict.nn import InteractionType
        >>> InteractionType.MODE == "mode", str(InteractionType.MEAN)
        (True, 'mean')
        >>> InteractionType("Random") is InteractionType.RANDOM
        True
    """

    MODE = "mode"
    MEDIAN = "median"
    MEAN = "mean"
    RANDOM = "random"
    DETERMINISTIC = "deterministic"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def from_str(cls, type_str: str) -> InteractionType:
        """The member named ``type_str``, in any case.

        Examples:
            >>> from tensordict.nn import InteractionType
            >>> InteractionType.from_str("MEDIAN")
            <InteractionType.MEDIAN: 'median'>
        """
        return cls(type_str.lower())

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            for member in cls:
                if member.value == value.lower():
                    return member
        return None


_interaction_type = _Mode(None)


def interaction_type() -> InteractionType | None:
    """The interaction type set by :class:`set_interaction_type`, or ``None`` outside one.

    Examples:
        >>> from tensordict.nn import interaction_type, set_interaction_type
        >>> interaction_type() is None
        True
        >>> with set_interaction_type("mode"):
        ...     interaction_type()
        <InteractionType.MODE: 'mode'>
    """
    return _interaction_type.get()


class set_interaction_type(_BlockSetter):
    """Sets the interaction type of every probabilistic module in a block or a decorated function.

    Args:
        type (InteractionType, str or None, optional): the rule; ``None`` lets each
            module use its ``default_interaction_type``. Defaults to
            ``InteractionType.DETERMINISTIC``.

    Keyword Args:
        thread_local (bool, optional): set it for the calling thread only.
            Defaults to ``False`` (the whole process).

    Raises:
        ValueError: if ``type`` is not an interaction type or its name.

    Examples:
        >>> from tensordict.nn import ProbabilisticTensorDictModule, set_interaction_type
        >>> module = ProbabilisticTensorDictModule(
        ...     in_keys=["loc", "scale"], out_keys=["x"], distribution_class=torch.distributions.Normal)
        >>> td = TensorDict(loc=torch.zeros(3), scale=torch.ones(3))
        >>> with set_interaction_type("mean"):
        ...     module(td)["x"]
        tensor([0., 0., 0.])
    """

    _switch = _interaction_type
    _value_attr = "type"

    def __init__(
        self,
        type: InteractionType | str | None = InteractionType.DETERMINISTIC,
        *,
        thread_local: bool = False,
    ) -> None:
        if type is not None and not isinstance(type, InteractionType):
            if not isinstance(type, str):
                msg = f"{type!r} is not an interaction type: pass an InteractionType or one of {[m.value for m in InteractionType]}"
                raise InvalidArgumentError(msg)
            type = InteractionType(type.lower())
        super().__init__(type, thread_local=thread_local)


# ---------------------------------------------------------------------- deterministic values
def _torch_rules() -> dict:
    rules = {}
    for name in dir(D):
        cls = getattr(D, name)
        if isinstance(cls, type) and issubclass(cls, D.Distribution):
            rules[cls] = (
                InteractionType.MODE
                if getattr(cls, "has_enumerate_support", False)
                else InteractionType.MEAN
            )
    rules[D.LogisticNormal] = InteractionType.DETERMINISTIC
    return rules


DETERMINISTIC_RULES: dict = _torch_rules()
"""Distribution class -> the statistic ``DETERMINISTIC`` takes for it (when it has no
``deterministic_sample``). ``DETERMINISTIC`` entries use :data:`_DETERMINISTIC_VALUES`."""


def _logistic_normal_value(dist) -> torch.Tensor:
    value = dist.loc
    for transform in dist.transforms:
        value = transform(value)
    return value


def _relaxed_one_hot_value(dist) -> torch.Tensor:
    probs = dist.base_dist.probs
    return torch.nn.functional.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(probs)


def _relaxed_bernoulli_value(dist) -> torch.Tensor:
    return (dist.probs >= 0.5).to(dist.probs)


# torch classes without a deterministic_sample, whose deterministic value we know
_DETERMINISTIC_VALUES: dict[type, Callable] = {
    D.LogisticNormal: _logistic_normal_value,
    D.RelaxedOneHotCategorical: _relaxed_one_hot_value,
    D.RelaxedBernoulli: _relaxed_bernoulli_value,
}


def register_deterministic(cls: type, rule: InteractionType) -> None:
    """Tells ``DETERMINISTIC`` which statistic to take for instances of ``cls``.

    Args:
        cls (type): a distribution class without ``deterministic_sample``.
        rule (InteractionType): ``MEAN``, ``MODE``, ``MEDIAN`` or ``RANDOM``.

    Examples:
        >>> from tensordict.nn import InteractionType
        >>> from tensordict.nn.interaction import register_deterministic, draw
        >>> class Coin(torch.distributions.Bernoulli):
        ...     pass
        >>> register_deterministic(Coin, InteractionType.MODE)
        >>> draw(Coin(probs=torch.tensor(0.9)), InteractionType.DETERMINISTIC)
        tensor(1.)
    """
    DETERMINISTIC_RULES[cls] = InteractionType(rule)


def _class_of(dist) -> tuple[type, object]:
    if isinstance(dist, D.Independent):
        return type(dist.base_dist), dist.base_dist
    return type(dist), dist


def _fallback_rule(dist, who: str) -> InteractionType:
    try:
        real = isinstance(dist.support, D.constraints._Real)
    except NotImplementedError:
        real = True
    rule = InteractionType.MEAN if real else InteractionType.MODE
    _user_warn(
        f"{type(dist).__name__} has no deterministic_sample and no registered rule; {who} "
        f"takes its {rule.value} instead (register one with tensordict.nn.interaction.register_deterministic)",
        UserWarning,
    )
    return rule


def deterministic_rule(
    dist: D.Distribution, who: str = "the module"
) -> tuple[torch.Tensor | TensorDictBase | None, InteractionType | None]:
    """The value of ``dist`` under ``DETERMINISTIC`` if it has one of its own, else the rule to apply.

    Returns:
        ``(value, None)`` when the distribution gives its deterministic value,
        ``(None, rule)`` otherwise.

    Examples:
        >>> from tensordict.nn.interaction import deterministic_rule
        >>> deterministic_rule(torch.distributions.Normal(torch.zeros(1), 1.0))
        (None, <InteractionType.MEAN: 'mean'>)
    """
    if hasattr(dist, "deterministic_sample"):
        return dist.deterministic_sample, None
    cls, inner = _class_of(dist)
    if cls in _DETERMINISTIC_VALUES:
        return _DETERMINISTIC_VALUES[cls](inner), None
    rule = DETERMINISTIC_RULES.get(cls)
    if rule is InteractionType.DETERMINISTIC and hasattr(inner, "deterministic_sample"):
        return inner.deterministic_sample, None
    if rule is None or rule is InteractionType.DETERMINISTIC:
        rule = _fallback_rule(dist, who)
    return None, rule


def deterministic_value(dist: D.Distribution, who: str = "the module") -> torch.Tensor:
    """The value of ``dist`` under ``DETERMINISTIC``, without Monte-Carlo estimates.

    Raises:
        NotImplementedError: if the statistic it falls back on is not implemented.

    Examples:
        >>> from tensordict.nn.interaction import deterministic_value
        >>> deterministic_value(torch.distributions.Categorical(logits=torch.tensor([0.0, 3.0])))
        tensor(1)
    """
    value, rule = deterministic_rule(dist, who)
    if rule is None:
        return value
    if rule is InteractionType.RANDOM:
        return dist.rsample() if dist.has_rsample else dist.sample()
    try:
        return getattr(dist, rule.value)
    except (AttributeError, NotImplementedError) as err:
        msg = f"{type(dist).__name__} has no deterministic_sample and its {rule.value} is not implemented; use another interaction type"
        raise SampleMethodError(msg) from err


def draw(
    dist: D.Distribution,
    rule: InteractionType,
    *,
    sample_shape: torch.Size | None = None,
    n_empirical_estimate: int = 1000,
    generator: torch.Generator | None = None,
    who: str = "the module",
) -> torch.Tensor | TensorDictBase:
    """The value of ``dist`` under ``rule`` (a sample of ``sample_shape`` for ``RANDOM``).

    A missing mean is estimated from ``n_empirical_estimate`` samples.

    Raises:
        TypeError: if ``dist`` is not a distribution.
        NotImplementedError: if the distribution lacks the statistic.

    Examples:
        >>> from tensordict.nn import InteractionType
        >>> from tensordict.nn.interaction import draw
        >>> dist = torch.distributions.Normal(torch.zeros(2), 1.0)
        >>> draw(dist, InteractionType.MEAN)
        tensor([0., 0.])
        >>> draw(dist, InteractionType.RANDOM, sample_shape=torch.Size([3])).shape
        torch.Size([3, 2])
    """
    if not isinstance(dist, D.Distribution):
        msg = f"expected a torch Distribution, got {type(dist).__name__}"
        raise TypeError(msg)
    rule = InteractionType(rule)
    if (
        isinstance(dist, D.LKJCholesky)
        and rule is not InteractionType.RANDOM
        and rule is not InteractionType.MEDIAN
    ):
        msg = f"{rule.value} is not implemented for LKJCholesky"
        raise RuntimeError(msg)
    if rule is InteractionType.DETERMINISTIC:
        value, rule = deterministic_rule(dist, who)
        if rule is None:
            return value
    if rule is InteractionType.MODE or rule is InteractionType.MEDIAN:
        try:
            return getattr(dist, rule.value)
        except AttributeError as err:
            msg = f"{type(dist).__name__}.{rule.value} is not implemented"
            raise SampleMethodError(msg) from err
    if rule is InteractionType.MEAN:
        try:
            return dist.mean
        except (AttributeError, NotImplementedError):
            with _use_generator(generator):
                draws = (
                    dist.rsample((n_empirical_estimate,))
                    if dist.has_rsample
                    else dist.sample((n_empirical_estimate,))
                )
            return draws.mean(0)
    shape = torch.Size(sample_shape if sample_shape is not None else ())
    with _use_generator(generator):
        return dist.rsample(shape) if dist.has_rsample else dist.sample(shape)


@contextlib.contextmanager
def _use_generator(generator: torch.Generator | None) -> Iterator[None]:
    """Kept for torchrl: makes the global random state follow ``generator`` inside the block.

    The global state is restored on the way out, and ``generator`` moves on by
    what the block drew. ``None`` does nothing.

    Examples:
        >>> from tensordict.nn.probabilistic import _use_generator
        >>> gen = torch.Generator().manual_seed(0)
        >>> with _use_generator(gen):
        ...     a = torch.rand(2)
        >>> torch.equal(a, torch.rand(2, generator=torch.Generator().manual_seed(0)))
        True
    """
    if generator is None:
        yield
        return
    device = generator.device
    if device.type == "cuda":
        with torch.random.fork_rng(devices=[device.index]):
            torch.cuda.set_rng_state(generator.get_state(), device)
            try:
                yield
            finally:
                generator.set_state(torch.cuda.get_rng_state(device))
    else:
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(generator.get_state())
            try:
                yield
            finally:
                generator.set_state(torch.get_rng_state())
