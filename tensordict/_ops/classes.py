"""The concrete tensordict classes by name, for the operations that build them.

The mixins of :mod:`tensordict._ops` sit below the classes they build (consolidation,
``pack``, receiving over ``torch.distributed``), so each class's module puts itself
here when it is imported: ``"TensorDict"``, ``"LazyStackedTensorDict"``,
``"NonTensorStack"``, and ``str(cls)`` of every tensorclass.
"""

from __future__ import annotations

CLASSES: dict[str, type] = {}
"""Name -> class, filled by the modules that define the classes."""
