"""``tensordict demo --shared``: one memory-mapped folder, one writer, readers told over torch.distributed.

The pattern for a folder on a file system that several nodes mount (here: processes
of this machine, ranks of a gloo process group on the loopback interface):

1. Rank 0, the only writer, creates the folder (``memmap``), claims it
   (``claim_writer``: another process changing it then raises) and tells the
   others with a ``broadcast``; they open it with ``TensorDict.load_memmap`` (no copy).
2. At each step, rank 0 grows the folder by one entry: with ``make_memmap`` (a new
   zero-filled file that it then fills) or with ``make_memmap_from_storage`` (a
   file it wrote at the entry's own path, attached). Then it broadcasts a small
   "refresh" message: the step, the new key and the sum of its values.
3. Each reader calls ``memmap_refresh_()`` on receiving the message, reads the new
   entry and compares its sum with the message's.

The message goes after the entry is complete, so a reader never sees a half-written
file: on a shared file system, ordering comes from the message, not from a lock
(advisory locks are not honoured by every network file system). The worker
function is at module level, because spawned processes import it by name.
"""

from __future__ import annotations

import datetime
import os
import queue
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tensordict import TensorDict
from tensordict.errors import ForeignWriterError
from tensordict.memmap import claim_writer

FEATURES = 8  # float32 columns of each entry
FOLDER = "shared"  # the memory-mapped folder the ranks share, under the demo's base folder


class SharedDemoError(Exception):
    """A rank failed, or a reader read something other than what rank 0 wrote."""


def _values(step: int, rows: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed * 1000 + step)
    return torch.randn(rows, FEATURES, generator=gen)


def _grow(root: TensorDict, folder: str, key: str, values: torch.Tensor, step: int) -> None:
    """Adds ``key`` to the writer's folder: a new file filled in place, or an attached one."""
    if step % 2 == 0:
        root.make_memmap(key, values.shape, dtype=values.dtype).copy_(values)
        return
    path = os.path.join(folder, f"{key}.memmap")
    with open(path, "xb") as f:  # exclusive create: the entry's own file, new
        f.write(values.numpy().tobytes())
        os.fsync(f.fileno())  # on the server before the message that announces it
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=values.nbytes)
    root.make_memmap_from_storage(key, storage, values.shape, dtype=values.dtype)


def _rank(
    rank: int, ranks: int, store: str, folder: str, steps: int, rows: int, seed: int, out
) -> None:
    """One rank: rank 0 writes and announces, the others refresh and check."""
    torch.set_num_threads(1)
    try:
        timeout = datetime.timedelta(seconds=60)
        dist.init_process_group(
            "gloo", init_method=store, rank=rank, world_size=ranks, timeout=timeout
        )
        root = None
        if rank == 0:
            root = TensorDict(step=torch.zeros((), dtype=torch.int64)).memmap(folder)
            claim_writer(folder)  # any other process changing the tree now raises
        (TensorDict(created=torch.ones(())) if rank == 0 else TensorDict()).broadcast(src=0)
        view = TensorDict.load_memmap(folder) if rank else None
        if rank:
            try:
                view.make_memmap(f"rank{rank}", (1,))
            except ForeignWriterError:
                pass  # the claim holds
            else:
                msg = f"rank {rank} could add an entry to a folder that rank 0 claimed"
                raise SharedDemoError(msg)
        refresh = 0.0
        for step in range(steps):
            key = f"chunk{step}"
            message = TensorDict()
            if rank == 0:
                values = _values(step, rows, seed)
                _grow(root, folder, key, values, step)
                message = TensorDict(step=torch.tensor(step), key=key, total=values.sum())
            message = message.broadcast(src=0)
            if rank:
                began = time.perf_counter()
                view.memmap_refresh_()
                refresh += time.perf_counter() - began
                got = view[message["key"]]
                if not torch.allclose(got.sum(), message["total"]):
                    msg = f"rank {rank} read {message['key']!r} with sum {got.sum().item()}, expected {message['total'].item()}"
                    raise SharedDemoError(msg)
        dist.barrier()
        out.put((rank, None, refresh))
    except BaseException:
        out.put((rank, traceback.format_exc(), 0.0))
    # Flush the report, then exit at once: tearing the group down takes seconds, for nothing.
    out.close()
    out.join_thread()
    os._exit(0)


def run(
    *, ranks: int = 3, steps: int = 4, rows: int = 100_000, folder: str | None = None, seed: int = 0
) -> int:
    """Runs the shared-folder demo and prints its summary; returns the exit status (0).

    Args:
        ranks (int): processes (ranks of a gloo group); rank 0 writes, the others read.
        steps (int): entries rank 0 adds, one refresh message each.
        rows (int): rows over all the entries (each has ``rows // steps`` rows).
        folder (str, optional): where to put the folder (its ``shared/`` sub-folder);
            by default a temporary folder, removed at the end.
        seed (int): the seed of the made-up data.

    Raises:
        SharedDemoError: if a rank fails or reads other values than rank 0 wrote.
    """
    if ranks < 2:
        msg = f"the shared-folder demo needs at least 2 ranks (one writer, readers), got {ranks}"
        raise SharedDemoError(msg)
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
        return _run(os.path.abspath(folder), ranks, steps, rows, seed)
    with tempfile.TemporaryDirectory(prefix="tensordict-shared-") as tmp:
        return _run(tmp, ranks, steps, rows, seed)


def _run(base: str, ranks: int, steps: int, rows: int, seed: int) -> int:
    folder = os.path.join(base, FOLDER)
    store = f"file://{os.path.join(base, 'store')}"
    if os.path.exists(store[len("file://") :]):
        os.remove(store[len("file://") :])
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    per_step = max(1, rows // steps)
    args = (ranks, store, folder, steps, per_step, seed, out)
    procs = [ctx.Process(target=_rank, args=(r, *args)) for r in range(ranks)]
    began = time.perf_counter()
    for p in procs:
        p.start()
    reports = {}
    try:
        for _ in range(ranks):
            rank, error, refresh = out.get(timeout=120)
            reports[rank] = (error, refresh)
            if error is not None:
                break
    except queue.Empty:
        pass
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    failed = [(r, e) for r, (e, _) in sorted(reports.items()) if e is not None]
    if failed or len(reports) < ranks:
        rank, error = failed[0] if failed else (None, "no report (timed out)")
        last = error.strip().splitlines()[-1]
        msg = f"rank {rank} failed: {last}" if rank is not None else f"a rank failed: {last}"
        raise SharedDemoError(msg)
    wall = time.perf_counter() - began
    readers = [refresh for r, (_, refresh) in reports.items() if r]
    entry_bytes = per_step * FEATURES * 4
    print(f"shared folder {folder}")
    print(
        f"  rank 0 wrote {steps} entries of {per_step} x {FEATURES} float32 ({entry_bytes / 2**20:.1f} MiB each),"
    )
    print(
        "  alternating make_memmap and make_memmap_from_storage, one broadcast message after each"
    )
    who = f"{len(readers)} reader{'s' if len(readers) > 1 else ''}"
    per_refresh = 1e3 * max(readers) / steps
    print(f"  {who} refreshed and checked every entry: {per_refresh:.1f} ms per refresh")
    print(
        "  rank 0 claimed the folder (claim_writer): each reader's attempt to add an entry raised"
    )
    print(f"  {ranks} ranks over gloo in {wall:.1f} s (start-up included)")
    return 0
