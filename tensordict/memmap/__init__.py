"""Memory-mapped storage: tensors in files or shared memory, and the on-disk format.

The import path of the well-known API: ``from tensordict.memmap import MemoryMappedTensor``.
"""

from tensordict.memmap.tensor import MemoryMappedTensor

__all__ = ["MemoryMappedTensor"]
