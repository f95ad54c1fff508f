"""The well-known ``tensordict.persistent`` import path of :class:`PersistentTensorDict` (HDF5)."""

from tensordict._persistent import PersistentTensorDict

__all__ = ["PersistentTensorDict"]
