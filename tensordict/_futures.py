"""``TensorDictFuture``: a tensordict that background threads are still writing.

``consolidate(return_early=True)`` returns one while its copy threads run. It is a
:class:`concurrent.futures.Future` (``done``, ``add_done_callback``, ``result(timeout)``
all work) that completes with the tensordict once every one of its futures has.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future

from tensordict._collection import TensorCollection


class TensorDictFuture(Future):
    """A tensordict still being written by background work: :meth:`result` waits and returns it.

    It completes when every future in ``futures`` has: with ``resulting_td``, or with
    the first error one of them raised.

    Args:
        futures (sequence of concurrent.futures.Future): the work to wait for.
        resulting_td (TensorDictBase): what :meth:`result` returns once it is done.

    Examples:
        >>> from concurrent.futures import Future
        >>> done = Future()
        >>> done.set_result(None)
        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> future = TensorDictFuture([done], td)
        >>> future.done(), future.result() is td
        (True, True)
    """

    def __init__(self, futures: Sequence[Future], resulting_td: TensorCollection) -> None:
        super().__init__()
        self.futures = list(futures)
        self.resulting_td = resulting_td
        self._pending = len(self.futures)
        self._settled = False
        self._lock = threading.Lock()
        if not self.futures:
            self.set_result(resulting_td)
        for future in self.futures:
            future.add_done_callback(self._one_done)

    def _one_done(self, finished: Future) -> None:
        error = finished.exception()
        with self._lock:
            if self._settled:
                return
            if error is None:
                self._pending -= 1
                if self._pending:
                    return
            self._settled = True
        if error is not None:
            self.set_exception(error)
        else:
            self.set_result(self.resulting_td)

    def result(self, timeout: float | None = None) -> TensorCollection:
        """Waits for every future (raising the first error) and returns the tensordict.

        Args:
            timeout (float, optional): seconds to wait at most. Defaults to None, no limit.

        Returns:
            The tensordict the work wrote.

        Raises:
            TimeoutError: if the work is not done within ``timeout``.
            Exception: the first error one of the futures raised.

        Examples:
            >>> TensorDictFuture([], TensorDict()).result().is_empty()
            True
        """
        return super().result(timeout)
