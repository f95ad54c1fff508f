"""The ``repr`` of every tensordict class: a mixin over the layouts of :mod:`tensordict._printing`.

The layouts ask the printed object through the hooks below; the lazy stack and the tensorclass
override the ones where they differ.
"""

from __future__ import annotations

from tensordict._ops._contract import Contract
from tensordict._printing import collection_repr, compact_fields


class PrintingMixin(Contract):
    """``__repr__`` and the hooks the compact and detailed layouts call.

    Calls: ``_items_level``.
    """

    __slots__ = ()

    def _repr_items(self):
        """The ``(key, value)`` pairs that the ``repr`` shows."""
        return self._items_level()

    def _repr_detail_extra(self) -> dict:
        """Extra blocks and trailing parts of the detailed ``repr`` (a lazy stack has some)."""
        return {}

    def _repr_level(self):
        """The tensordict whose batch size and device the ``repr`` shows: this one."""
        return self

    def _repr_names_class(self) -> bool:
        """False: in the compact ``repr``, a nested tensordict shows as braces, without its class."""
        return False

    def _fields_repr(self) -> str:
        return compact_fields(self)

    def __repr__(self) -> str:
        return collection_repr(self)
