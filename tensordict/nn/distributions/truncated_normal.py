"""Normal distributions restricted to an interval ``[a, b]``, with reparameterized samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Number

import torch
from torch.distributions import Distribution, constraints
from torch.distributions.utils import broadcast_all

from tensordict.errors import InvalidArgumentError
from tensordict.nn.interaction import InteractionType, register_deterministic

__all__ = ["TruncatedNormal", "TruncatedStandardNormal"]

_SQRT_2 = math.sqrt(2.0)
_LOG_INV_SQRT_2PI = -0.5 * math.log(2 * math.pi)
_ENTROPY_CONST = 0.5 * math.log(2 * math.pi * math.e)


class TruncatedStandardNormal(Distribution):
    """The standard normal distribution restricted to ``[a, b]``.

    Probabilities below ``eps`` are clamped so that samples and log-probabilities
    stay finite even for intervals far in a tail.

    Args:
        a (Number or torch.Tensor): the lower bound.
        b (Number or torch.Tensor): the upper bound, above ``a``.
        validate_args (bool, optional): check the values given to ``log_prob``.

    Raises:
        ValueError: if the bounds have different dtypes or ``a >= b`` somewhere.

    Examples:
        >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
        >>> dist = TruncatedStandardNormal(torch.tensor(0.0), torch.tensor(10.0))
        >>> round(dist.mean.item(), 4)
        0.7979
    """

    arg_constraints = {"a": constraints.real, "b": constraints.real}
    has_rsample = True
    eps = 1e-6

    def __init__(
        self, a: Number | torch.Tensor, b: Number | torch.Tensor, validate_args: bool | None = None
    ) -> None:
        self.a, self.b = broadcast_all(a, b)
        batch_shape = (
            torch.Size() if isinstance(a, Number) and isinstance(b, Number) else self.a.shape
        )
        super().__init__(batch_shape, validate_args=validate_args)
        if self.a.dtype != self.b.dtype:
            msg = f"the bounds of a truncated normal must share a dtype, got {self.a.dtype} and {self.b.dtype}"
            raise InvalidArgumentError(msg)
        if bool((self.a >= self.b).any()):
            msg = "a truncated normal needs a < b everywhere"
            raise InvalidArgumentError(msg)
        pdf_a, pdf_b = self._pdf(self.a), self._pdf(self.b)
        self._cdf_a = self._std_cdf(self.a)
        self._cdf_b = self._std_cdf(self.b)
        self._Z = (self._cdf_b - self._cdf_a).clamp(self.eps, 1 - self.eps)
        self._log_Z = self._Z.log()
        # a or b may be infinite: 0 * inf is nan, and the product of the density there is 0
        term_a = torch.nan_to_num(pdf_a * self.a, nan=0.0)
        term_b = torch.nan_to_num(pdf_b * self.b, nan=0.0)
        shift = (pdf_b - pdf_a) / self._Z
        self._mean = -shift
        self._variance = 1 - (term_b - term_a) / self._Z - shift**2
        self._entropy = _ENTROPY_CONST + self._log_Z - 0.5 * (term_b - term_a) / self._Z

    @staticmethod
    def _pdf(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(-0.5 * x**2 + _LOG_INV_SQRT_2PI)

    def _std_cdf(self, x: torch.Tensor) -> torch.Tensor:
        return (0.5 * (1 + torch.erf(x / _SQRT_2))).clamp(self.eps, 1 - self.eps)

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        """The interval ``[a, b]``.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).support.check(torch.tensor(2.0))
            tensor(False)
        """
        return constraints.interval(self.a, self.b)

    @property
    def mean(self) -> torch.Tensor:
        """The mean of the truncated distribution.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).mean.abs() < 1e-6
            tensor(True)
        """
        return self._mean

    @property
    def variance(self) -> torch.Tensor:
        """The variance of the truncated distribution.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).variance < 1
            tensor(True)
        """
        return self._variance

    @property
    def auc(self) -> torch.Tensor:
        """The mass of the standard normal between ``a`` and ``b``.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> round(TruncatedStandardNormal(torch.tensor(0.0), torch.tensor(50.0)).auc.item(), 3)
            0.5
        """
        return self._Z

    def entropy(self) -> torch.Tensor:
        """The differential entropy.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> bool(TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).entropy() < 1.42)
            True
        """
        return self._entropy

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """The cumulative distribution function at ``value``.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).cdf(torch.tensor(0.0))
            tensor(0.5000)
        """
        if self._validate_args:
            self._validate_sample(value)
        return ((self._std_cdf(value) - self._cdf_a) / self._Z).clamp(0, 1)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        """The value whose cumulative probability is ``value``.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> TruncatedStandardNormal(torch.tensor(-1.0), torch.tensor(1.0)).icdf(torch.tensor(0.5)).abs() < 1e-5
            tensor(True)
        """
        y = (self._cdf_a + value * self._Z).clamp(self.eps, 1 - self.eps)
        return _SQRT_2 * torch.erfinv(2 * y - 1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The log-density at ``value``.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> round(TruncatedStandardNormal(torch.tensor(0.0), torch.tensor(50.0)).log_prob(torch.tensor(0.0)).item(), 4)
            -0.2258
        """
        if self._validate_args:
            self._validate_sample(value)
        return _LOG_INV_SQRT_2PI - self._log_Z - 0.5 * value**2

    def rsample(self, sample_shape: torch.Size | Sequence[int] | None = None) -> torch.Tensor:
        """Draws reparameterized samples by inverting the CDF of uniform draws.

        Examples:
            >>> from tensordict.nn.distributions.truncated_normal import TruncatedStandardNormal
            >>> x = TruncatedStandardNormal(torch.zeros(3), torch.ones(3)).rsample((100,))
            >>> x.shape, bool(((x >= 0) & (x <= 1)).all())
            (torch.Size([100, 3]), True)
        """
        shape = self._extended_shape(torch.Size(sample_shape if sample_shape is not None else ()))
        uniform = torch.empty(shape, device=self.a.device, dtype=self.a.dtype)
        uniform.uniform_(self.eps, 1 - self.eps)
        return self.icdf(uniform)


class TruncatedNormal(TruncatedStandardNormal):
    """A normal distribution of mean ``loc`` and deviation ``scale``, restricted to ``[a, b]``.

    Args:
        loc (Number or torch.Tensor): the mean before truncation.
        scale (Number or torch.Tensor): the deviation before truncation (clamped
            to ``eps`` or more).
        a (Number or torch.Tensor): the lower bound.
        b (Number or torch.Tensor): the upper bound.
        validate_args (bool, optional): check the values given to ``log_prob``.

    Examples:
        >>> from tensordict.nn import TruncatedNormal
        >>> dist = TruncatedNormal(torch.zeros(2), torch.ones(2), -1.0, 1.0)
        >>> x = dist.sample((50,))
        >>> bool((x.abs() <= 1).all())
        True
    """

    has_rsample = True

    def __init__(
        self,
        loc: Number | torch.Tensor,
        scale: Number | torch.Tensor,
        a: Number | torch.Tensor,
        b: Number | torch.Tensor,
        validate_args: bool | None = None,
    ) -> None:
        self.loc, scale, a, b = broadcast_all(loc, scale, a, b)
        self.scale = scale.clamp_min(self.eps)
        self._low, self._high = a, b
        super().__init__(
            (a - self.loc) / self.scale, (b - self.loc) / self.scale, validate_args=validate_args
        )
        self._log_scale = self.scale.log()
        self._mean = self._mean * self.scale + self.loc
        self._variance = self._variance * self.scale**2
        self._entropy = self._entropy + self._log_scale

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        """The interval ``[a, b]``, in the units of ``loc``.

        Examples:
            >>> from tensordict.nn import TruncatedNormal
            >>> TruncatedNormal(5.0, 1.0, 4.0, 6.0).support.check(torch.tensor(5.5))
            tensor(True)
        """
        return constraints.interval(self._low, self._high)

    def _standardize(self, value: torch.Tensor) -> torch.Tensor:
        standard = (value - self.loc) / self.scale
        if self._validate_args:
            self._validate_sample(
                torch.as_tensor(value, dtype=standard.dtype, device=standard.device)
            )
        return standard

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        """The cumulative distribution function at ``value``.

        Examples:
            >>> from tensordict.nn import TruncatedNormal
            >>> TruncatedNormal(1.0, 1.0, 0.0, 2.0).cdf(torch.tensor(1.0))
            tensor(0.5000)
        """
        standard = (value - self.loc) / self.scale
        return ((self._std_cdf(standard) - self._cdf_a) / self._Z).clamp(0, 1)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        """The value whose cumulative probability is ``value``, kept inside ``[a, b]``.

        Examples:
            >>> from tensordict.nn import TruncatedNormal
            >>> round(TruncatedNormal(1.0, 1.0, 0.0, 2.0).icdf(torch.tensor(1.0)).item(), 4)
            2.0
        """
        sample = super().icdf(value) * self.scale + self.loc
        clipped = torch.maximum(sample.detach(), self._low.detach().expand_as(sample))
        clipped = torch.minimum(clipped, self._high.detach().expand_as(sample))
        return sample + (clipped - sample).detach()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The log-density at ``value``.

        Examples:
            >>> from tensordict.nn import TruncatedNormal
            >>> TruncatedNormal(0.0, 2.0, -100.0, 100.0).log_prob(torch.tensor(0.0))
            tensor(-1.6121)
        """
        standard = self._standardize(value)
        return _LOG_INV_SQRT_2PI - self._log_Z - 0.5 * standard**2 - self._log_scale


register_deterministic(TruncatedStandardNormal, InteractionType.MEAN)
register_deterministic(TruncatedNormal, InteractionType.MEAN)
