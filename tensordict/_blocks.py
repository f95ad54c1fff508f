"""With-blocks over the result of a method: the result writes itself back into its source.

``with td.permute(1, 0) as tdp:`` gives the block ``td`` in another layout (other batch
dims, other keys, another device, or a module holding its values). What the block changes
in place reaches ``td`` through the memory they share; the entries it adds or rebinds reach
``td`` when the block ends. For that the result remembers its source (weakly, so that a
result never keeps a large source alive) and its *inverse*: the function that writes the
result back into the source.

The protocol (its names have no leading underscore: ``base.py`` and the mixins use them):

- :func:`written_back` is how a method offers the block: it returns its result with the
  record made. Nothing is recorded when the result is the source itself, as when a shape
  method has nothing to change, since the block then changes the source directly; except
  for a record that undoes a change of the source itself (``lock_``, ``to_module``).
- :func:`enter` and :func:`leave` are ``TensorDictBase.__enter__`` and ``__exit__``: the
  block takes the record its object holds when it starts, so that a later call of a method
  on the same object inside the block does not change what this block writes back, and
  blocks over one object nest.
- :func:`update_back` makes the usual inverse: the result put back into the layout of the
  source (``to_source(result, source)``, a tensordict or a mapping of nested keys), which
  then updates the source, rebinding its entries and adding the new ones; a locked source
  is written into in place (and refuses new keys).

A tensordict without a record is a context manager that does nothing at the end of the
block (the result of ``select``, ``exclude``, ``reshape`` or ``clone``, as in the
well-known API).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any


class _Record:
    """What a result remembers of the call that made it (see :func:`written_back`)."""

    __slots__ = ("source", "finish", "undo_on_error", "undone_by")

    def __init__(
        self, source, finish: Callable, undo_on_error: bool, undone_by, keep_source: bool
    ) -> None:
        self.source = (lambda: source) if keep_source else weakref.ref(source)
        self.finish = finish
        self.undo_on_error = undo_on_error
        self.undone_by = undone_by

    def __reduce__(self):
        # A record points at an object of this process: a pickled copy of the result has none.
        return (_no_record, ())


def _no_record() -> None:
    return None


def written_back(
    result: Any,
    source: Any,
    finish: Callable,
    *,
    undo_on_error: bool = False,
    undone_by: Any = None,
    keep_source: bool = False,
) -> Any:
    """Returns ``result``, recording that a with-block over it ends with ``finish(result, source)``.

    Args:
        result: what the method returns (a tensordict).
        source: the tensordict the method was called on.
        finish: writes ``result`` back into ``source``; it must not hold ``source`` itself.

    Keyword Args:
        undo_on_error (bool, optional): ``finish`` also runs when the block raises: the
            method changed ``source`` itself and ``finish`` puts it back. Defaults to False.
        undone_by (hashable, optional): names the call on ``result`` that gives ``source``'s
            layout back (``("permute", (1, 0))``), for :func:`undone`. Defaults to None.
        keep_source (bool, optional): hold ``source`` strongly, for a block that must end
            even when nothing else holds it (``with td.detach().to_module(m):`` puts the
            module's tensors back). Defaults to False: weakly.

    Returns:
        ``result``.
    """
    if result is source and not undo_on_error:
        return result
    result._write_back = _Record(source, finish, undo_on_error, undone_by, keep_source)
    return result


def undone(td: Any, call: Any) -> Any:
    """The source of ``td`` if ``call`` (as named by ``undone_by``) undoes what made ``td``, else None.

    The legacy lazy mode returns the source itself for such a call, as the well-known API's
    lazy views do (``td.permute(1, 0).permute(1, 0) is td``).
    """
    record = getattr(td, "_write_back", None)
    if record is None or record.undone_by != call:
        return None
    return record.source()


def enter(td: Any) -> None:
    """Starts a block over ``td``: it takes the record ``td`` holds now (or none)."""
    record = getattr(td, "_write_back", None)
    blocks = getattr(td, "_blocks", None)
    if blocks is None:
        td._blocks = [record]
    else:
        blocks.append(record)


def leave(td: Any, failed: bool) -> None:
    """Ends the innermost block over ``td``: writes back unless the block raised (see the module)."""
    record = td._blocks.pop()
    if record is None or failed and not record.undo_on_error:
        return
    source = record.source()
    if source is not None:
        record.finish(td, source)


def update_back(to_source: Callable) -> Callable:
    """The inverse that updates the source with ``to_source(result, source)``, the result in its layout."""

    def finish(result, source) -> None:
        back = to_source(result, source)
        if source.is_locked:
            source.update_(back)
        else:
            source.update(back)

    return finish
