"""Continuous distributions and the modules that turn a network output into their parameters."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number

import torch
from torch import distributions as D
from torch import nn

from tensordict.nn.utils import mappings

__all__ = ["AddStateIndependentNormalScale", "Delta", "NormalParamExtractor"]


class NormalParamExtractor(nn.Module):
    """Splits a tensor in two along its last dimension: a location, and a positive scale.

    The scale goes through ``scale_mapping`` (see :func:`~tensordict.nn.mappings`)
    and is clamped to ``scale_lb`` or more. Extra inputs are passed through.

    Args:
        scale_mapping (str, optional): the mapping to positive values.
            Defaults to ``"biased_softplus_1.0"``.
        scale_lb (Number, optional): the smallest scale. Defaults to ``1e-4``.

    Examples:
        >>> from tensordict.nn import NormalParamExtractor
        >>> loc, scale = NormalParamExtractor()(torch.zeros(3, 4))
        >>> loc.shape, scale
        (torch.Size([3, 2]), tensor([[1., 1.],
                [1., 1.],
                [1., 1.]]))
    """

    def __init__(self, scale_mapping: str = "biased_softplus_1.0", scale_lb: Number = 1e-4) -> None:
        super().__init__()
        self.scale_mapping = mappings(scale_mapping)
        self.scale_lb = scale_lb

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Returns the location, the scale, then the other inputs unchanged.

        Args:
            *tensors (torch.Tensor): the tensor to split (its last dimension of
                even size), then anything to pass through.

        Examples:
            >>> from tensordict.nn import NormalParamExtractor
            >>> loc, scale, extra = NormalParamExtractor("exp").forward(torch.zeros(2), torch.ones(1))
            >>> loc, scale, extra
            (tensor([0.]), tensor([1.]), tensor([1.]))
        """
        tensor, *others = tensors
        loc, scale = tensor.chunk(2, -1)
        return (loc, self.scale_mapping(scale).clamp_min(self.scale_lb), *others)


class AddStateIndependentNormalScale(nn.Module):
    """Returns its input as a location, with a learned scale that does not depend on the input.

    Args:
        scale_shape (torch.Size, int or tuple, optional): the shape of the scale,
            which must be the trailing shape of the location. Defaults to ``()``.

    Keyword Args:
        scale_mapping (str, optional): the mapping to positive values. Defaults to ``"exp"``.
        scale_lb (Number, optional): the smallest scale. Defaults to ``1e-4``.
        device (torch.device, optional): the device of the scale.
        make_param (bool, optional): the scale is a parameter (else a buffer).
            Defaults to ``True``.
        init_value (float, optional): the initial value before the mapping.
            Defaults to ``0.0``.

    Examples:
        >>> from tensordict.nn import AddStateIndependentNormalScale
        >>> module = AddStateIndependentNormalScale(3)
        >>> loc, scale = module(torch.zeros(2, 3))
        >>> scale
        tensor([[1., 1., 1.],
                [1., 1., 1.]], grad_fn=<ClampMinBackward0>)
    """

    def __init__(
        self,
        scale_shape: torch.Size | int | tuple | None = None,
        *,
        scale_mapping: str = "exp",
        scale_lb: Number = 1e-4,
        device: torch.device | None = None,
        make_param: bool = True,
        init_value: float = 0.0,
    ) -> None:
        super().__init__()
        if scale_shape is None:
            scale_shape = ()
        if isinstance(scale_shape, int):
            scale_shape = (scale_shape,)
        self.scale_shape = torch.Size(scale_shape)
        self.scale_lb = scale_lb
        self.scale_mapping = scale_mapping
        value = torch.full(
            self.scale_shape, init_value, dtype=torch.get_default_dtype(), device=device
        )
        if make_param:
            self.state_independent_scale = nn.Parameter(value)
        else:
            self.register_buffer("state_independent_scale", value)

    def forward(self, loc: torch.Tensor, *others: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Returns ``loc``, the scale expanded to its shape, and ``others``.

        Args:
            loc (torch.Tensor): the location; its trailing shape must be ``scale_shape``.
            *others (torch.Tensor): passed through.

        Raises:
            RuntimeError: if the trailing shape of ``loc`` is not ``scale_shape``.

        Examples:
            >>> from tensordict.nn import AddStateIndependentNormalScale
            >>> _, scale = AddStateIndependentNormalScale(2, make_param=False).forward(torch.zeros(2))
            >>> scale
            tensor([1., 1.])
        """
        trailing = loc.shape[max(loc.ndim - len(self.scale_shape), 0) :]
        if trailing != self.scale_shape:
            msg = f"the last dimensions of loc {tuple(trailing)} must be the scale's shape {tuple(self.scale_shape)}"
            raise RuntimeError(msg)
        scale = self.state_independent_scale.expand_as(loc)
        scale = mappings(self.scale_mapping)(scale).clamp_min(self.scale_lb)
        return (loc, scale, *others)


class Delta(D.Distribution):
    """A distribution with all its mass on one value, ``param``.

    Sampling returns ``param`` (expanded to the sample shape). The log-probability
    is ``+inf`` where a value equals ``param`` (within ``atol + rtol * |param|``
    over the whole event) and ``-inf`` elsewhere. Without shapes, the last
    dimension of ``param`` is the event, the others the batch.

    Args:
        param (torch.Tensor): the value.
        atol (float, optional): the absolute tolerance of equality. Defaults to ``1e-6``.
        rtol (float, optional): the relative tolerance. Defaults to ``1e-6``.
        batch_shape (torch.Size, optional): the batch shape.
        event_shape (torch.Size, optional): the event shape.

    Examples:
        >>> from tensordict.nn.distributions import Delta
        >>> dist = Delta(torch.ones(2, 3))
        >>> dist.batch_shape, dist.event_shape
        (torch.Size([2]), torch.Size([3]))
        >>> dist.sample((4,)).shape
        torch.Size([4, 2, 3])
        >>> dist.log_prob(torch.ones(2, 3))
        tensor([inf, inf])
    """

    arg_constraints: dict = {}

    def __init__(
        self,
        param: torch.Tensor,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        batch_shape: torch.Size | Sequence[int] | None = None,
        event_shape: torch.Size | Sequence[int] | None = None,
    ) -> None:
        batch_shape = torch.Size(batch_shape if batch_shape is not None else ())
        event_shape = torch.Size(event_shape if event_shape is not None else ())
        self.update(param)
        self.atol = atol
        self.rtol = rtol
        if not batch_shape and not event_shape:
            batch_shape, event_shape = param.shape[:-1], param.shape[-1:]
        super().__init__(batch_shape=batch_shape, event_shape=event_shape)

    def update(self, param: torch.Tensor) -> None:
        """Replaces ``param`` (the shapes stay).

        Args:
            param (torch.Tensor): the new value.

        Examples:
            >>> from tensordict.nn.distributions import Delta
            >>> dist = Delta(torch.zeros(1))
            >>> dist.update(torch.ones(1))
            >>> dist.mode
            tensor([1.])
        """
        self.param = param

    def _matches(self, value: torch.Tensor) -> torch.Tensor:
        param = self.param.expand_as(value)
        close = (value - param).abs() < self.atol + self.rtol * param.abs()
        for _ in self.event_shape:
            close = close.all(-1)
        return close

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``+inf`` where ``value`` is ``param``, ``-inf`` elsewhere, over the batch shape.

        Args:
            value (torch.Tensor): the values.

        Examples:
            >>> from tensordict.nn.distributions import Delta
            >>> Delta(torch.zeros(2, 1)).log_prob(torch.tensor([[0.0], [1.0]]))
            tensor([inf, -inf])
        """
        close = self._matches(value)
        inf = torch.full(close.shape, float("inf"), dtype=value.dtype, device=value.device)
        return torch.where(close, inf, -inf)

    @torch.no_grad()
    def sample(self, sample_shape: torch.Size | Sequence[int] | None = None) -> torch.Tensor:
        """Returns ``param`` expanded to ``sample_shape + param.shape``, without gradient.

        Examples:
            >>> from tensordict.nn.distributions import Delta
            >>> Delta(torch.ones(2)).sample((3,)).shape
            torch.Size([3, 2])
        """
        return self.rsample(sample_shape)

    def rsample(self, sample_shape: torch.Size | Sequence[int] | None = None) -> torch.Tensor:
        """Returns ``param`` expanded to ``sample_shape + param.shape``, keeping its gradient.

        Examples:
            >>> from tensordict.nn.distributions import Delta
            >>> Delta(torch.ones(2, requires_grad=True)).rsample().requires_grad
            True
        """
        shape = torch.Size(sample_shape if sample_shape is not None else ())
        return self.param.expand(shape + self.param.shape)

    @property
    def mode(self) -> torch.Tensor:
        """``param``: the mode of a Delta is the point itself.

        :attr:`mean` and :attr:`deterministic_sample` (what a deterministic
        probabilistic module writes) are the same property: ``param`` too.

        Examples:
            >>> from tensordict.nn.distributions import Delta
            >>> dist = Delta(torch.ones(1))
            >>> dist.mode, dist.mean, dist.deterministic_sample
            (tensor([1.]), tensor([1.]), tensor([1.]))
        """
        return self.param

    mean = mode
    deterministic_sample = mode
