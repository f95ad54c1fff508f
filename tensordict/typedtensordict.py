"""The public import path of :class:`TypedTensorDict`: ``from tensordict.typedtensordict import TypedTensorDict``."""

from tensordict._typed import TypedTensorDict

__all__ = ["TypedTensorDict"]
