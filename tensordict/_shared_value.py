"""SharedValue: a non-tensor value kept in shared memory, so that processes see each other's writes.

``share_memory_()`` (and ``memmap_(share_non_tensor=True)``) put the value of each
non-tensor entry that JSON holds exactly (``None``, bools, ints, floats, strings,
and lists and str-keyed dicts of these) in a :class:`SharedValue`: a tensor of
bytes in shared memory, pickled as a handle to that memory (as any shared
tensor is), never as a copy, when a process starts another one. The entry reads
its value from it, and a write into the entry (``td[idx] = ...``, ``update_at_``)
writes into it, so every process that holds the entry sees the new value. Other
values stay in the entry as they were, seen only by the process that holds them.

The values shared by one call live in one buffer (one block of shared memory),
each as ``[length: int64][JSON bytes]`` with room for a value twice as long as the
first one (at least :data:`MIN_CAPACITY` bytes); a longer value is refused.
A write is not atomic: processes that write one entry at the same time must take
turns.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from tensordict.errors import SharedValueError

__all__ = ["MIN_CAPACITY", "SharedValue", "holds_json"]

MIN_CAPACITY = 128
"""The least number of bytes a shared value has room for."""

_HEADER = 8  # the length of the JSON text, an int64


def holds_json(value: Any) -> bool:
    """True when JSON gives ``value`` back as it is: its type and every item's.

    Examples:
        >>> holds_json({"a": [1, 2.5, None, "x"]}), holds_json((1, 2)), holds_json({1: "a"})
        (True, False, False)
    """
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return True
    if kind is list:
        return all(holds_json(item) for item in value)
    if kind is dict:
        return all(type(k) is str and holds_json(v) for k, v in value.items())
    return False


def _encode(value: Any) -> bytes:
    if not holds_json(value):
        msg = (
            f"a shared non-tensor entry holds JSON values only (None, bool, int, float, str, "
            f"and lists and str-keyed dicts of these), got a {type(value).__name__}"
        )
        raise SharedValueError(msg)
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


class SharedValue:
    """A JSON value in a buffer of shared memory, read and written by every process that holds it.

    :meth:`share` makes them, several values to one buffer (one block of shared
    memory, pickled once however many values it holds).

    Args:
        arena (torch.Tensor): the uint8 buffer in shared memory.
        offset (int): where this value's room starts in it.
        capacity (int): the room for the JSON text, in bytes.

    Examples:
        >>> (cell,) = SharedValue.share(["spam"])
        >>> cell.set({"eggs": 2})
        >>> cell.get()
        {'eggs': 2}
    """

    __slots__ = ("_arena", "_bytes", "_capacity", "_offset")

    def __init__(self, arena: torch.Tensor, offset: int, capacity: int) -> None:
        self._arena = arena
        self._bytes = arena.numpy()  # the same memory, read and written without torch's overhead
        self._offset = offset
        self._capacity = capacity

    @classmethod
    def share(cls, values: list) -> list:
        """Puts ``values`` in one new buffer of shared memory and returns their cells, in order.

        Raises:
            SharedValueError: if JSON cannot hold one of them exactly (a ``TypeError``).
        """
        payloads = [_encode(value) for value in values]
        capacities = [max(MIN_CAPACITY, 2 * len(payload)) for payload in payloads]
        total = sum(_HEADER + capacity for capacity in capacities)
        arena = torch.zeros(max(total, 1), dtype=torch.uint8).share_memory_()
        cells = []
        offset = 0
        for payload, capacity in zip(payloads, capacities):
            cell = cls(arena, offset, capacity)
            cell._write(payload)
            cells.append(cell)
            offset += _HEADER + capacity
        return cells

    def __reduce__(self):
        # the buffer is one object for all its cells: a pickle holds it once
        return (SharedValue, (self._arena, self._offset, self._capacity))

    def _write(self, payload: bytes) -> None:
        if len(payload) > self._capacity:
            msg = (
                f"the new value takes {len(payload)} bytes as JSON, more than the "
                f"{self._capacity} bytes its shared non-tensor entry has room for (twice its "
                "first value, at least 128); share the tensordict again after setting it out "
                "of place"
            )
            raise SharedValueError(msg)
        start = self._offset + _HEADER
        view = self._bytes
        view[start : start + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
        view[self._offset : start] = np.frombuffer(
            len(payload).to_bytes(_HEADER, "little"), np.uint8
        )

    def get(self) -> Any:
        """Returns the value last written, by any process (a new object at each call)."""
        start = self._offset + _HEADER
        view = self._bytes
        size = int.from_bytes(view[self._offset : start].tobytes(), "little")
        return json.loads(view[start : start + size].tobytes())

    def set(self, value: Any) -> None:
        """Writes ``value`` in place: every process holding this cell reads it next.

        Raises:
            SharedValueError: if JSON cannot hold ``value`` exactly, or it does not fit.
        """
        self._write(_encode(value))

    def __repr__(self) -> str:
        return f"SharedValue({self.get()!r})"
