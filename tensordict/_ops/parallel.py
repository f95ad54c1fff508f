"""``map`` and ``map_iter``: a function over chunks of a tensordict, in a pool of worker processes.

The tensordict is cut along one batch dim into chunks (views, never copies); each
chunk is pickled to a worker, ``fn`` runs there, and what it returns is pickled back.
What travels is cheap: a memory-mapped leaf pickles as its file name and layout
(:class:`~tensordict.memmap.MemoryMappedTensor`'s reducer), an in-memory one as a
shared-memory handle (``torch.multiprocessing``'s reducers). A destination ``out`` that
is memory-mapped or in shared memory is written by the workers themselves; any other
``out`` is filled in this process as the results arrive.

Workers are seeded as the reference seeds them: one base seed drawn from
``generator``, worker ``i`` seeding torch with ``base + i`` and NumPy with the state
``torch.utils.data`` derives from the same pair, so that the workers draw different
numbers. Workers that replace retired ones (``max_tasks_per_child``) take the next ids.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import pickle
import signal
import warnings
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import multiprocessing as mp
from torch.utils.data._utils.worker import _generate_state

from tensordict._collection import TensorCollection
from tensordict._ops._contract import Contract
from tensordict._ops.batch_dims import norm_dim
from tensordict._ops.split_stack import STACKERS
from tensordict._options import set_capture_non_tensor_stack
from tensordict.errors import WorkerDiedError

try:  # the progress bar of map(pbar=True), an optional dependency
    import tqdm
except ImportError:  # pragma: no cover - tqdm ships with most environments
    tqdm = None

# How long the caller waits for the next result before it looks for dead workers: a chunk
# lost with its worker is noticed within this delay (plus the pool's own 0.1 s upkeep).
_POLL_SECONDS = 0.25


def _worker_init(base_seed: int, counter, num_threads: int, retired: bool) -> None:
    """Seeds a new worker from ``base_seed`` and the next free worker id; sets its threads.

    ``retired``: the worker exits after some tasks, possibly before this process has
    taken the file descriptors of the tensors it sent back; its tensors then travel
    as named shared-memory files, which outlive it.
    """
    if retired:
        torch.multiprocessing.set_sharing_strategy("file_system")
    with counter.get_lock():
        worker_id = counter.value
        counter.value += 1
    torch.manual_seed(base_seed + worker_id)
    np.random.seed(_generate_state(base_seed, worker_id))
    torch.set_num_threads(num_threads)


class _WriteInto:
    """``fn`` for a worker that writes its result into its slice of a shared ``out``.

    A class (not a closure) so that it pickles whenever ``fn`` does.
    """

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, job) -> None:
        chunk, destination = job
        result = self.fn(chunk)
        if result is not None:
            destination.update_(result)


def _check_picklable(fn: Callable, method: str) -> None:
    """Raises a clear error now, instead of a worker's traceback later, when ``fn`` does not pickle."""
    try:
        pickle.dumps(fn)
    except Exception as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        msg = (
            f"{method}: fn {name!r} cannot be pickled to the worker processes ({exc}); define it "
            "at the top level of a module or script (not a lambda or a local function)"
        )
        # pickle's own error type (PicklingError, or AttributeError for a local object)
        raise (
            type(exc)
            if isinstance(exc, (pickle.PicklingError, AttributeError, TypeError))
            else pickle.PicklingError
        )(msg) from exc


def _slices(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _check_call(
    td, method: str, fn, dim: int, chunksize, num_chunks, lazy: bool, shuffle: bool
) -> int:
    """Checks the arguments of a ``map`` call before any worker starts; returns ``dim``, normalised."""
    _check_picklable(fn, method)
    if shuffle and not lazy:
        msg = "shuffle=True needs index_with_generator=True: the chunks are drawn as they are sent"
        raise RuntimeError(msg)
    if chunksize is not None and num_chunks is not None:
        msg = f"pass chunksize or num_chunks, not both (got chunksize={chunksize}, num_chunks={num_chunks})"
        raise ValueError(msg)
    if num_chunks is not None and num_chunks < 1:
        msg = f"num_chunks must be at least 1, got {num_chunks}"
        raise ValueError(msg)
    if chunksize is not None and chunksize < 0:
        msg = f"chunksize must be 0 (one element at a time) or more, got {chunksize}"
        raise ValueError(msg)
    return norm_dim(dim, td.batch_dims)


def _chunks(td, dim: int, chunksize, num_chunks, num_workers: int, lazy: bool, shuffle: bool):
    """The chunks of ``td`` along ``dim`` (the arguments checked by :func:`_check_call`).

    ``lazy``: a generator that indexes each chunk when it is asked for (what
    ``index_with_generator`` asks), else a tuple made at once with ``split``/``chunk``/
    ``unbind``. ``chunksize=0`` gives the elements one by one, without ``dim``.
    """
    n = td.batch_size[dim]
    if chunksize is None and num_chunks is None:
        num_chunks = num_workers
    if num_chunks is not None:
        num_chunks = min(n, num_chunks)
        if not lazy:
            return td.chunk(num_chunks, dim=dim) if n else ()
        size = -(n // -num_chunks) if n else 1
        indices: Iterator = _slices(n, size)
    elif chunksize == 0:
        if not lazy:
            return td.unbind(dim)
        indices = iter(range(n))
    else:
        if not lazy:
            return td.split(min(n, chunksize), dim=dim) if n else ()
        indices = _slices(n, chunksize)
    if shuffle:
        order = torch.randperm(n)
        indices = (order[index] for index in indices)
    lead = (slice(None),) * dim
    return (td[lead + (index,)] for index in indices)


class _Pool:
    """The pool of one call: the caller's (left open), or a new one (closed at the end)."""

    def __init__(self, method: str, pool, num_workers, generator, max_tasks, threads, start):
        self.owned = pool is None
        if pool is not None:
            self.pool = pool
            self.size = pool._processes
            return
        if num_workers is None:
            num_workers = mp.cpu_count()
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            msg = f"{method}: num_workers must be a positive int, got {num_workers!r}"
            raise ValueError(msg)
        if generator is None:
            warnings.warn(
                f"{method}() without a generator seeds its workers from a new torch.Generator, "
                "so every call seeds them alike (as the reference 0.15 does). Pass "
                "generator=torch.default_generator to draw the seed from the global RNG, or "
                "generator=torch.Generator() to keep today's seeds and silence this warning.",
                FutureWarning,
                stacklevel=3,
            )
            generator = torch.Generator()
        seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator))
        ctx = mp.get_context(start)
        self.pool = ctx.Pool(
            processes=num_workers,
            initializer=_worker_init,
            initargs=(seed, ctx.Value("q", 0), _worker_threads(threads), max_tasks is not None),
            maxtasksperchild=max_tasks,
        )
        self.size = num_workers

    def close(self, failed: bool) -> None:
        if not self.owned:
            return
        if not failed:
            self.pool.close()
            self.pool.join()
            return
        workers = list(getattr(self.pool, "_pool", ()))  # multiprocessing.Pool's own list
        try:
            self.pool.terminate()
        except AssertionError:
            # After a worker was killed, CPython may refuse to terminate the pool ("Cannot have
            # cache with result_hander not alive"): its result thread has ended with results
            # pending. The workers are stopped here instead, so that none is left behind.
            for process in workers + list(getattr(self.pool, "_pool", ())):
                if process.exitcode is None:
                    process.kill()
                process.join(timeout=5)
            return
        self.pool.join()


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _watched(results, pool, method: str) -> Iterator:
    """Yields the pool's results, raising WorkerDiedError once a worker has died.

    A ``multiprocessing.Pool`` replaces a worker that dies (SIGKILL, the OOM killer, a
    crash in C code), but the chunk it was running is lost and its result never comes:
    the caller would wait forever. So the caller waits a short time for each result, and
    between waits looks at every worker process it has seen for an abnormal exit. Workers
    retired by ``max_tasks_per_child`` exit with code 0 and do not count.
    """
    workers = getattr(pool, "_pool", None)  # multiprocessing.Pool's own list of processes
    if workers is None:  # another kind of pool: nothing to watch
        yield from results
        return
    seen = {process.pid: process for process in list(workers)}
    while True:
        try:
            item = results.next(timeout=_POLL_SECONDS)
        except StopIteration:
            return
        except multiprocessing.TimeoutError:
            for process in list(pool._pool):
                seen.setdefault(process.pid, process)
            for process in seen.values():
                code = process.exitcode
                if code is not None and code != 0:
                    msg = (
                        f"{method}: worker process {process.pid} {_exit_reason(code)} while "
                        "running a chunk; its result is lost, so the call stops (the pool's "
                        "workers are stopped when the call made the pool)"
                    )
                    raise WorkerDiedError(msg) from None
            continue
        yield item


def _worker_threads(threads) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        msg = f"worker_threads must be a positive int, got {threads!r}"
        raise ValueError(msg)
    return threads


class ParallelMixin(Contract):
    """``map`` and ``map_iter``."""

    __slots__ = ()

    def map(
        self,
        fn: Callable,
        dim: int = 0,
        num_workers: int | None = None,
        *,
        out: TensorCollection | None = None,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: multiprocessing.pool.Pool | None = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = False,
        pbar: bool = False,
        mp_start_method: str | None = None,
    ) -> TensorCollection | torch.Tensor | None:
        """Calls ``fn`` on chunks of the tensordict in worker processes and joins the results.

        The tensordict is cut along batch dim ``dim`` into chunks (views, not copies),
        each chunk goes to a worker of a process pool, and the results are joined along
        ``dim``: concatenated, or stacked when ``chunksize=0``. The chunks of a
        memory-mapped tensordict travel as file names, so the workers read the data from
        the files and a tensordict larger than memory can be processed. For the results
        one by one, see :meth:`map_iter`.

        Args:
            fn (Callable): called on each chunk (a tensordict over a slice of ``dim``);
                returns a tensordict, a tensor or ``None``. It must pickle: a function
                defined at the top level of a module, not a lambda.
            dim (int, optional): the batch dim to cut. Defaults to 0.
            num_workers (int, optional): the number of worker processes; ignored with
                ``pool``. Defaults to the number of CPUs.

        Keyword Args:
            out (TensorDictBase, optional): where to write the results, with the batch size
                of the result. A memory-mapped or shared-memory ``out`` is written by the
                workers; any other is filled here as the results come. Defaults to ``None``.
            chunksize (int, optional): the size of each chunk along ``dim``; ``0`` sends the
                elements one by one, without ``dim``. Exclusive with ``num_chunks``.
            num_chunks (int, optional): the number of chunks. When neither is given, one
                chunk per worker.
            pool (multiprocessing.Pool, optional): a pool to run the chunks on (left open);
                ``num_workers``, ``generator``, ``max_tasks_per_child``, ``worker_threads``
                and ``mp_start_method`` then do nothing. Defaults to a pool made for the call.
            generator (torch.Generator, optional): draws the workers' base seed; worker
                ``i`` seeds torch with ``base + i`` and NumPy from both. Defaults to a new
                ``torch.Generator`` (the same seeds on every call), with a ``FutureWarning``
                as the reference gives.
            max_tasks_per_child (int, optional): chunks a worker handles before it is
                replaced. Defaults to ``None`` (workers live for the whole call).
            worker_threads (int, optional): torch threads per worker. Defaults to 1.
            index_with_generator (bool, optional): index each chunk when it is sent instead
                of cutting them all first. Defaults to ``False``.
            pbar (bool, optional): show a ``tqdm`` progress bar. Defaults to ``False``.
            mp_start_method (str, optional): ``"fork"``, ``"spawn"`` or ``"forkserver"``.
                Defaults to ``torch.multiprocessing``'s default.

        Returns:
            The joined results (a tensordict or a tensor), ``out`` when it is given, or
            ``None`` when ``fn`` returns ``None`` for every chunk.

        Raises:
            pickle.PicklingError, AttributeError or TypeError: pickle's error when ``fn`` does
                not pickle (a lambda, a local function), with a message saying what to do.
            DimensionError: if ``dim`` is out of range.
            ValueError: if both ``chunksize`` and ``num_chunks`` are given, or a count is
                not positive.

        Examples:
            >>> td = TensorDict(x=torch.zeros(4), batch_size=[4])
            >>> td.map(TensorDict.exp, num_workers=2, generator=torch.Generator())["x"]
            tensor([1., 1., 1., 1.])

            With a function of your own, run as a script (the workers import it):

            .. code-block:: python

                def add_one(chunk):
                    return chunk.empty().set("y", chunk["x"] + 1)

                if __name__ == "__main__":
                    data = TensorDict(x=torch.zeros(1_000), batch_size=[1_000]).memmap_()
                    result = data.map(add_one, num_workers=2, generator=torch.Generator())
                    assert (result["y"] == 1).all()
        """
        d = _check_call(self, "map", fn, dim, chunksize, num_chunks, index_with_generator, False)
        workers = _Pool(
            "map",
            pool,
            num_workers,
            generator,
            max_tasks_per_child,
            worker_threads,
            mp_start_method,
        )
        failed = True
        try:
            result = self._map_in(
                workers, fn, d, out, chunksize, num_chunks, index_with_generator, pbar
            )
            failed = False
            return result
        finally:
            workers.close(failed)

    def map_iter(
        self,
        fn: Callable,
        dim: int = 0,
        num_workers: int | None = None,
        *,
        shuffle: bool = False,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: multiprocessing.pool.Pool | None = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = True,
        pbar: bool = False,
        mp_start_method: str | None = None,
    ) -> Iterator:
        """Calls ``fn`` on chunks of the tensordict in worker processes and yields each result.

        The iterator form of :meth:`map`: each chunk's result is yielded as soon as it is
        ready, in the order of the chunks (in the order they finish with ``shuffle=True``).
        It can serve as a data loader over a tensordict. The pool is made when iteration
        starts and closed when it ends (or the iterator is closed).

        Args:
            fn (Callable): called on each chunk; it must pickle.
            dim (int, optional): the batch dim to cut. Defaults to 0.
            num_workers (int, optional): the number of worker processes. Defaults to the
                number of CPUs.

        Keyword Args:
            shuffle (bool, optional): chunks drawn from a random permutation along ``dim``;
                needs ``index_with_generator=True``. Defaults to ``False``.
            chunksize (int, optional): the size of each chunk along ``dim``; ``0`` sends the
                elements one by one, without ``dim``. Exclusive with ``num_chunks``.
            num_chunks (int, optional): the number of chunks. When neither is given, one
                chunk per worker.
            pool (multiprocessing.Pool, optional): a pool to run the chunks on (left open).
                Defaults to a pool made for the call.
            generator (torch.Generator, optional): draws the workers' base seed, as in
                :meth:`map`. Defaults to a new ``torch.Generator``.
            max_tasks_per_child (int, optional): chunks a worker handles before it is
                replaced. Defaults to ``None`` (workers live for the whole call).
            worker_threads (int, optional): torch threads per worker. Defaults to 1.
            pbar (bool, optional): show a ``tqdm`` progress bar. Defaults to ``False``.
            mp_start_method (str, optional): ``"fork"``, ``"spawn"`` or ``"forkserver"``.
                Defaults to ``torch.multiprocessing``'s default.
            index_with_generator (bool, optional): index each chunk when it is sent.
                Defaults to ``True`` (unlike :meth:`map`).

        Yields:
            What ``fn`` returns for each chunk.

        Raises:
            RuntimeError: if ``shuffle=True`` without ``index_with_generator``.
            pickle.PicklingError, DimensionError, ValueError: as :meth:`map` (when
                iteration starts).

        Examples:
            >>> td = TensorDict(x=torch.zeros(4), batch_size=[4])
            >>> gen = torch.Generator()
            >>> [part["x"].tolist() for part in td.map_iter(TensorDict.exp, chunksize=3, generator=gen)]
            [[1.0, 1.0, 1.0], [1.0]]

            With a function of your own, run as a script (the workers import it):

            .. code-block:: python

                def add_one(chunk):
                    return chunk.empty().set("y", chunk["x"] + 1)

                if __name__ == "__main__":
                    data = TensorDict(x=torch.zeros(10), batch_size=[10])
                    for part in data.map_iter(add_one, num_workers=2, chunksize=5,
                                              generator=torch.Generator()):
                        assert part["y"].shape == (5,)
        """
        d = _check_call(
            self, "map_iter", fn, dim, chunksize, num_chunks, index_with_generator, shuffle
        )
        workers = _Pool(
            "map_iter",
            pool,
            num_workers,
            generator,
            max_tasks_per_child,
            worker_threads,
            mp_start_method,
        )
        failed = True
        try:
            results = self._map_results(
                workers.pool, workers.size, fn, d, None, chunksize, num_chunks,
                index_with_generator, shuffle, pbar, "map_iter",
            )  # fmt: skip
            yield from results
            failed = False
        finally:
            workers.close(failed)

    # ------------------------------------------------------------------ the work
    def _map_results(
        self, pool, size, fn, d, out, chunksize, num_chunks, lazy, shuffle, pbar, method
    ):
        """The pool's iterator of results (``None`` for the chunks a worker wrote into ``out``).

        ``d`` is the batch dim, checked and normalised by :func:`_check_call`.
        """
        if pbar and tqdm is None:
            msg = f"{method}: pbar=True shows a tqdm progress bar, and tqdm is not installed (pip install tqdm)"
            raise ImportError(msg)
        chunks = _chunks(self, d, chunksize, num_chunks, size, lazy, shuffle)
        total = None if lazy else len(chunks)
        if out is not None and (out.is_shared() or out.is_memmap()):
            destinations = _chunks(out, d, chunksize, num_chunks, size, lazy, shuffle)
            if shuffle or (total is not None and len(destinations) != total):
                msg = f"{method}: out has batch size {list(out.batch_size)}, whose chunks do not match the tensordict's"
                raise ValueError(msg)
            fn, chunks = _WriteInto(fn), zip(chunks, destinations)
        imap = pool.imap_unordered if shuffle else pool.imap
        results = _watched(imap(fn, chunks, 1), pool, method)
        if pbar:
            results = tqdm.tqdm(results, total=total)
        return results

    def _map_in(self, workers, fn, d, out, chunksize, num_chunks, lazy, pbar):
        results = self._map_results(
            workers.pool,
            workers.size,
            fn,
            d,
            out,
            chunksize,
            num_chunks,
            lazy,
            False,
            pbar,
            "map",
        )
        lead = (slice(None),) * d
        gathered = []
        start = 0
        for result in results:
            if result is None:
                continue
            if out is None:
                gathered.append(result)
                continue
            if chunksize == 0:
                out[lead + (start,)].update_(result)
                start += 1
            else:
                stop = start + result.shape[d]
                out[lead + (slice(start, stop),)].update_(result)
                start = stop
        if out is not None or not gathered:
            return out
        if chunksize == 0:
            if isinstance(gathered[0], torch.Tensor):
                return torch.stack(gathered, d)
            with set_capture_non_tensor_stack(False):
                return STACKERS["maybe_dense_stack"](gathered, d)
        return torch.cat(gathered, d)
