"""The memory-mapping methods of every tensordict class (filled in by the memmap layer)."""

from __future__ import annotations


class MemmapMixin:
    """Memory-mapping methods shared by every tensordict class."""

    __slots__ = ()
