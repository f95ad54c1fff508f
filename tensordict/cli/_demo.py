"""``tensordict demo``: a memory-mapped replay buffer shared by worker processes.

What it shows, on made-up data:

1. ``memmap_like`` of a template turns a description of one transition
   (observation, action, reward, done, and the ``next`` group) into a buffer of
   ``rows`` rows on disk, without writing any data.
2. ``workers`` spawned processes each open the folder with
   ``TensorDict.load_memmap`` (no copy), write their slice of rows by index
   assignment, and attach one new entry each (``worker{i}_stats``) with
   ``make_memmap_from_storage``: the storage is a file the worker creates at the
   entry's own path. The parent sees those entries after ``memmap_refresh_()``.
3. Random batches are sampled by indexing with long tensors (throughput in rows/s).
4. The folder is loaded again from scratch and every row is compared with what
   the workers wrote.

The data of a row depends only on the seed and the chunk it lies in, so the
parent can check the buffer without keeping a copy of it. The worker function is
at module level, because spawned processes import it by name.
"""

from __future__ import annotations

import multiprocessing.queues
import multiprocessing.sharedctypes
import os
import queue
import tempfile
import time
import traceback

import torch
import torch.multiprocessing as mp
from tqdm import tqdm

from tensordict import TensorDict
from tensordict.cli._report import counts, human_bytes, render_info, scan_folder
from tensordict.memmap import format as fmt

CHUNK = 4096  # rows generated and written at once
BATCH = 256  # rows per sampled batch
SAMPLE_ROWS = 1_000_000  # rows sampled in total (at least)
STATS = 2  # columns of a worker's stats entry: (row written by this worker, running return)


class DemoError(Exception):
    """The demo failed (a worker died, or the data read back differs); one line, exit status 1."""


# ---------------------------------------------------------------------- the data
def template(rows: int) -> TensorDict:
    """One transition per row, as broadcast zeros: ``memmap_like`` reads only shapes and dtypes.

    Args:
        rows (int): the number of rows (the batch size).

    Returns:
        A TensorDict of batch size ``[rows]`` whose tensors take no memory.
    """

    def zeros(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.zeros((), dtype=dtype).expand(rows, *shape)

    step = {"observation": zeros(8), "reward": zeros(1), "done": zeros(1, dtype=torch.bool)}
    return TensorDict({**step, "action": zeros(2), "next": TensorDict(step, [rows])}, [rows])


def make_rows(start: int, stop: int, seed: int) -> TensorDict:
    """The made-up transitions of rows ``start:stop``, where ``start`` begins a chunk.

    The rows of one chunk come from one generator seeded by ``seed`` and the chunk's
    number, so any process can make them again.

    Args:
        start (int): the first row, a multiple of :data:`CHUNK`.
        stop (int): one past the last row, at most ``start + CHUNK``.
        seed (int): the seed of the whole buffer.

    Returns:
        A TensorDict of batch size ``[stop - start]``.
    """
    n = stop - start
    generator = torch.Generator().manual_seed(seed * 1_000_003 + start // CHUNK)
    observations = torch.randn(n + 1, 8, generator=generator)
    actions = torch.rand(n, 2, generator=generator) * 2 - 1
    rewards = -observations.square().mean(-1, keepdim=True)
    done = torch.rand(n + 1, 1, generator=generator) < 0.01
    step = {"observation": observations[:-1], "reward": rewards[:-1], "done": done[:-1]}
    following = {"observation": observations[1:], "reward": rewards[1:], "done": done[1:]}
    return TensorDict({**step, "action": actions, "next": following}, [n])


def slices(rows: int, workers: int) -> list:
    """Splits ``rows`` into ``workers`` slices ``(start, stop)`` that begin on chunk boundaries."""
    chunks = -(-rows // CHUNK)
    bounds = [min(rows, (chunks * i // workers) * CHUNK) for i in range(workers + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def stats_key(worker: int) -> str:
    """The key of the entry that worker ``worker`` attaches."""
    return f"worker{worker}_stats"


# ---------------------------------------------------------------------- the workers
def fill_worker(
    job: dict,
    progress: multiprocessing.sharedctypes.Synchronized,
    results: multiprocessing.queues.Queue,
) -> None:
    """Worker process: fills rows ``job["start"]:job["stop"]`` and attaches its stats entry.

    Reports ``("ok", worker, timings)`` or ``("error", worker, traceback)`` on ``results``.

    Args:
        job (dict): ``folder``, ``worker``, ``start``, ``stop``, ``rows``, ``seed``.
        progress (multiprocessing.Value): a shared row counter, for the parent's progress bar.
        results (multiprocessing.Queue): where the outcome goes.
    """
    try:
        results.put(("ok", job["worker"], _fill(job, progress)))
    except BaseException:
        results.put(("error", job["worker"], traceback.format_exc()))
        raise SystemExit(1) from None


def _fill(job: dict, progress) -> dict:
    buffer = TensorDict.load_memmap(job["folder"])
    start, stop = job["start"], job["stop"]
    writing = 0.0  # seconds spent in index assignment, not in making up the data
    for first in range(start, stop, CHUNK):
        last = min(first + CHUNK, stop)
        rows = make_rows(first, last, job["seed"])
        began = time.perf_counter()
        buffer[first:last] = rows
        writing += time.perf_counter() - began
        with progress.get_lock():
            progress.value += last - first
    began = time.perf_counter()
    _attach_stats(buffer, job)
    return {"rows": stop - start, "writing": writing, "attaching": time.perf_counter() - began}


def _attach_stats(buffer: TensorDict, job: dict) -> None:
    """Creates the file of ``worker{i}_stats`` at its entry's path and attaches its storage.

    Column 0 marks the rows this worker wrote; column 1 is the running return (sum of
    ``("next", "reward")``) over its slice.
    """
    key = stats_key(job["worker"])
    path = os.path.join(job["folder"], fmt.file_name(key, fmt.MEMMAP_SUFFIX))
    shape = (job["rows"], STATS)
    storage = torch.UntypedStorage.from_file(
        path, shared=True, nbytes=fmt.nbytes(shape, torch.float32)
    )
    stats = torch.empty(0, dtype=torch.float32).set_(storage, 0, shape)
    start, stop = job["start"], job["stop"]
    stats[start:stop, 0] = 1
    stats[start:stop, 1] = buffer["next", "reward"][start:stop, 0].cumsum(0)
    buffer.make_memmap_from_storage(key, storage, shape, dtype=torch.float32)


# ---------------------------------------------------------------------- the parent
def run(*, rows: int = 100_000, workers: int = 2, folder: str | None = None, seed: int = 0) -> int:
    """Runs the demo and prints its summary; returns the exit status (0).

    Args:
        rows (int): rows in the buffer.
        workers (int): worker processes that fill it.
        folder (str, optional): where to put the buffer (its ``buffer/`` sub-folder);
            by default a temporary folder, removed at the end.
        seed (int): the seed of the made-up data.

    Raises:
        DemoError: if a worker fails or the data read back is not what was written.
    """
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
        return _run(os.path.join(os.path.abspath(folder), "buffer"), rows, workers, seed, kept=True)
    with tempfile.TemporaryDirectory(prefix="tensordict-demo-") as tmp:
        return _run(os.path.join(tmp, "buffer"), rows, workers, seed, kept=False)


def _run(path: str, rows: int, workers: int, seed: int, kept: bool) -> int:
    report = {}
    began = time.perf_counter()
    buffer = template(rows).memmap_like(path)
    report["create"] = time.perf_counter() - began
    outcomes, report["fill_wall"] = _fill_in_workers(path, rows, workers, seed)
    buffer.memmap_refresh_()
    _check_stats(buffer, rows, workers, seed)
    report["sample_rate"], report["sampled"] = _sample(buffer, rows, seed)
    began = time.perf_counter()
    again = TensorDict.load_memmap(path)
    report["reload"] = time.perf_counter() - began
    _check_rows(again, rows, seed)
    _check_stats(again, rows, workers, seed)
    scan = scan_folder(path)
    if not scan.sound:
        msg = f"the buffer folder is not sound: {scan.problems[0][0]}: {scan.problems[0][1]}"
        raise DemoError(msg)
    summary = scan.summary()
    row_bytes = _row_bytes(template(1))
    writing = max(o["writing"] for o in outcomes)  # the workers write side by side
    attaching = max(o["attaching"] for o in outcomes)
    lines = [
        "",
        "tensordict demo: a memory-mapped replay buffer shared by worker processes",
        f"  folder        {path}{'' if kept else '  (temporary, removed on exit)'}",
        f"  rows          {rows:,} transitions of {human_bytes(row_bytes)}",
        f"  entries       {counts(summary)}; {workers} of them added by the workers",
        f"  on disk       {human_bytes(summary['bytes'])} ({summary['bytes']:,} bytes)",
        f"  create        {report['create'] * 1e3:.1f} ms (memmap_like of a template)",
        f"  write         {_rate(rows, writing)}, {human_bytes(rows * row_bytes / max(writing, 1e-9))}/s, "
        f"{workers} processes by index assignment ({report['fill_wall']:.1f} s with process start-up)",
        f"  attach        {attaching * 1e3:.1f} ms per worker (make_memmap_from_storage, then "
        "memmap_refresh_() in the parent)",
        f"  sample        {report['sample_rate']:,.0f} rows/s ({report['sampled']:,} rows in batches of {BATCH})",
        f"  reload        {report['reload'] * 1e3:.1f} ms (TensorDict.load_memmap, no copy)",
        "  checked       every row equals what the workers wrote; verify: sound",
        "",
        render_info(scan),
    ]
    print("\n".join(lines))
    return 0


def _row_bytes(td: TensorDict) -> int:
    """The bytes of one row of ``td``."""
    return sum(v[0].numel() * v.element_size() for v in td.values(True, True))


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / max(seconds, 1e-9):,.0f} rows/s"


def _fill_in_workers(path: str, rows: int, workers: int, seed: int) -> tuple:
    """Starts the workers, shows their progress, and returns their timings and the wall time."""
    context = mp.get_context("spawn")
    progress = context.Value("q", 0)
    results = context.Queue()
    jobs = [
        {"folder": path, "worker": i, "start": a, "stop": b, "rows": rows, "seed": seed}
        for i, (a, b) in enumerate(slices(rows, workers))
    ]
    began = time.perf_counter()
    processes = [context.Process(target=fill_worker, args=(job, progress, results)) for job in jobs]
    for process in processes:
        process.start()
    try:
        outcomes = _wait(processes, progress, results, rows)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
    return outcomes, time.perf_counter() - began


def _wait(processes: list, progress, results, rows: int) -> list:
    """Collects one outcome per worker while the progress bar follows the shared counter."""
    outcomes: dict = {}
    with tqdm(total=rows, desc="fill", unit="rows", unit_scale=True, disable=None) as bar:
        while len(outcomes) < len(processes):
            try:
                status, worker, detail = results.get(timeout=0.1)
            except queue.Empty:
                dead = [p for p in processes if p.exitcode not in (None, 0)]
                if dead and results.empty():
                    msg = f"a worker process died (exit code {dead[0].exitcode}) without a report"
                    raise DemoError(msg) from None
            else:
                if status == "error":
                    last = detail.strip().splitlines()[-1]
                    msg = f"worker {worker} failed: {last}"
                    raise DemoError(msg)
                outcomes[worker] = detail
            bar.update(progress.value - bar.n)
    return [outcomes[i] for i in sorted(outcomes)]


def _sample(buffer: TensorDict, rows: int, seed: int) -> tuple:
    """Samples random batches of :data:`BATCH` rows; returns (rows per second, rows sampled)."""
    batches = max(1, SAMPLE_ROWS // BATCH)
    generator = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, rows, (batches, BATCH), generator=generator)
    total = torch.zeros(())
    began = time.perf_counter()
    for index in tqdm(indices, desc="sample", unit="batch", disable=None):
        batch = buffer[index]
        total += batch["next", "reward"].sum()  # touch the rows, as a learner would
    elapsed = time.perf_counter() - began
    return batches * BATCH / max(elapsed, 1e-9), batches * BATCH


def _check_rows(buffer: TensorDict, rows: int, seed: int) -> None:
    """Compares every row of ``buffer`` with the made-up data; raises DemoError on a difference."""
    for first in tqdm(range(0, rows, CHUNK), desc="check", unit="chunk", disable=None):
        last = min(first + CHUNK, rows)
        expected = make_rows(first, last, seed)
        for key, value in expected.items(include_nested=True, leaves_only=True):
            if not torch.equal(buffer[key][first:last], value):
                msg = f"rows {first}:{last} of {key!r} differ from what the workers wrote"
                raise DemoError(msg)


def _check_stats(buffer: TensorDict, rows: int, workers: int, seed: int) -> None:
    """Checks the workers' entries: each row written by exactly one worker, returns right."""
    owners = torch.zeros(rows)
    reward = buffer["next", "reward"][:, 0]
    for i, (start, stop) in enumerate(slices(rows, workers)):
        key = stats_key(i)
        if key not in buffer.keys():
            msg = f"the entry {key!r} of worker {i} is not in the buffer after memmap_refresh_()"
            raise DemoError(msg)
        stats = buffer[key]
        owners += stats[:, 0]
        if not torch.allclose(stats[start:stop, 1], reward[start:stop].cumsum(0)):
            msg = f"{key!r}: the running return does not match the rewards of rows {start}:{stop}"
            raise DemoError(msg)
    if not torch.equal(owners, torch.ones(rows)):
        msg = "the workers' entries do not cover every row exactly once"
        raise DemoError(msg)
