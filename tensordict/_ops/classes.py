"""The concrete tensordict classes by name, for the operations that build them.

The mixins of :mod:`tensordict._ops` sit below the classes they build (consolidation,
``pack``, receiving over ``torch.distributed``), so each class's module puts itself
here when it is imported, under a stable name: ``"TensorDict"``,
``"LazyStackedTensorDict"``, ``"NonTensorStack"``, and ``str(cls)`` of every
tensorclass (``"<class 'module.Name'>"``). The walk of a tree
(:mod:`tensordict._ops.tree`) names classes so and finds them here: a name read from
a file or received from another process is looked up, never imported.
"""

from __future__ import annotations

CLASSES: dict[str, type] = {}
"""Name -> class, filled by the modules that define the classes."""
