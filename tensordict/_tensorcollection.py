"""The reference's import path of ``TensorCollection`` (kept for torchrl).

torchrl imports ``from tensordict._tensorcollection import TensorCollection``; the class is
defined in ``tensordict/_collection.py`` and is public as ``tensordict.TensorCollection``.
"""

from tensordict._collection import TensorCollection

__all__ = ["TensorCollection"]
