"""Discrete distributions whose values are one-hot tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import distributions as D

__all__ = ["OneHotCategorical", "rand_one_hot"]


def _drop_singleton(params: torch.Tensor | None) -> torch.Tensor | None:
    # a trailing dimension of size 1 is a single category axis that torch does not want
    if params is not None and params.shape[-1] == 1:
        return params[..., 0]
    return params


def rand_one_hot(values: torch.Tensor, do_softmax: bool = True) -> torch.Tensor:
    """Draws one one-hot sample along the last dimension, weighted by ``values``.

    Args:
        values (torch.Tensor): logits (or probabilities with ``do_softmax=False``).
        do_softmax (bool, optional): apply a softmax first. Defaults to ``True``.

    Returns:
        A ``torch.long`` tensor of the shape of ``values``, with one 1 per row.

    Examples:
        >>> from tensordict.nn import rand_one_hot
        >>> rand_one_hot(torch.tensor([[0.0, 100.0, 0.0]]))
        tensor([[0, 1, 0]])
    """
    if do_softmax:
        values = values.softmax(-1)
    above = values.cumsum(-1) > torch.rand_like(values[..., :1])
    return (above.cumsum(-1) == 1).to(torch.long)


class OneHotCategorical(D.Categorical):
    """A categorical distribution whose values are one-hot ``torch.long`` tensors.

    Args:
        logits (torch.Tensor, optional): unnormalised log-probabilities.
        probs (torch.Tensor, optional): probabilities.
        **kwargs: passed to :class:`torch.distributions.Categorical`.

    Examples:
        >>> from tensordict.nn import OneHotCategorical
        >>> dist = OneHotCategorical(logits=torch.tensor([0.0, 5.0, 0.0]))
        >>> dist.mode
        tensor([0, 1, 0])
        >>> dist.sample((2,)).shape
        torch.Size([2, 3])
    """

    num_params: int = 1

    def __init__(
        self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None, **kwargs: Any
    ) -> None:
        super().__init__(probs=_drop_singleton(probs), logits=_drop_singleton(logits), **kwargs)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The log-probability of the category that the one-hot ``value`` marks.

        Examples:
            >>> from tensordict.nn import OneHotCategorical
            >>> OneHotCategorical(probs=torch.tensor([0.25, 0.75])).log_prob(torch.tensor([0, 1])).exp()
            tensor(0.7500)
        """
        return super().log_prob(value.argmax(dim=-1))

    @property
    def mode(self) -> torch.Tensor:
        """The one-hot most likely category (the first among ties).

        Examples:
            >>> from tensordict.nn import OneHotCategorical
            >>> OneHotCategorical(logits=torch.zeros(3)).mode
            tensor([1, 0, 0])
        """
        index = self.logits.max(-1).indices
        return torch.nn.functional.one_hot(index, self.logits.shape[-1])

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The mode: what a deterministic probabilistic module writes.

        Examples:
            >>> from tensordict.nn import OneHotCategorical
            >>> OneHotCategorical(logits=torch.tensor([0.0, 1.0])).deterministic_sample
            tensor([0, 1])
        """
        return self.mode

    def sample(self, sample_shape: torch.Size | Sequence[int] | None = None) -> torch.Tensor:
        """Draws one-hot samples of shape ``sample_shape + batch_shape + (categories,)``.

        Examples:
            >>> from tensordict.nn import OneHotCategorical
            >>> OneHotCategorical(logits=torch.zeros(2, 4)).sample().sum(-1)
            tensor([1, 1])
        """
        index = super().sample(torch.Size(sample_shape if sample_shape is not None else ()))
        return torch.nn.functional.one_hot(index, self.logits.shape[-1]).to(torch.long)

    def rsample(self, sample_shape: torch.Size | Sequence[int] | None = None) -> torch.Tensor:
        """Draws straight-through one-hot samples: one-hot values carrying a relaxed sample's gradient.

        Examples:
            >>> from tensordict.nn import OneHotCategorical
            >>> logits = torch.zeros(3, requires_grad=True)
            >>> sample = OneHotCategorical(logits=logits).rsample()
            >>> sample.sum().item(), sample.requires_grad
            (1.0, True)
        """
        relaxed = D.RelaxedOneHotCategorical(1.0, logits=self.logits)
        out = relaxed.rsample(torch.Size(sample_shape if sample_shape is not None else ()))
        hard = (out == out.max(-1, keepdim=True).values).to(out.dtype)
        return out + (hard - out).detach()
