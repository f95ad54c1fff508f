"""Speed benchmarks for tensordict: every workload beside its floor.

Each row times a workload and its *floor* (the same work done with plain PyTorch and
dicts) in the same process, on the same data, and reports the ratio workload / floor.
File work happens in a temporary folder on /dev/shm. Only the public API is used, so
the script runs unchanged under any implementation of the tensordict API:

    python benchmarks/bench.py                        # full table (about 30 s)
    python benchmarks/bench.py --quick                # smoke run, small sizes
    python benchmarks/bench.py --only index,stack     # selected rows
    python benchmarks/bench.py --python .venv-ref/bin/python   # side by side
    python benchmarks/bench.py --json figures.json    # save all figures ("-": stdout)

See benchmarks/README.md for what each row measures.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import math
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import torch

try:
    import tensordict
except ImportError:  # not installed in this venv: use the checkout this script lives in
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import tensordict

from tensordict import MemoryMappedTensor, TensorDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale as _scale  # noqa: E402 - beside this script

# --------------------------------------------------------------------------- settings


@dataclass
class Settings:
    quick: bool = False
    # seconds one repeat of a micro benchmark should last (number of loops is calibrated)
    micro_time: float = 0.05
    micro_repeat: int = 9
    io_repeat: int = 7
    big_repeat: int = 5
    memmap_bytes: int = 1 << 30
    memmap_tensors: int = 128
    from_tensor_bytes: int = 256 << 20
    load_groups: int = 10
    load_leaves: int = 100
    storage_calls: int = 1000
    open_files: int = 1000
    rb_rows: int = 100_000
    rb_batch: int = 256
    rb_rounds: int = 100
    lazy_levels: int = 1000  # the lazy rows' folder: this many levels of lazy_leaves entries
    lazy_leaves: int = 100
    lazy_flat: int = 100_000
    lazy_all_levels: int = 100  # lazy_read_all: levels of lazy_leaves, read whole
    map_bytes: int = 64 << 20
    map_workers: int = 2
    dist_bytes: int = 256 << 20
    dist_leaves: int = 64
    reduce_bytes: int = 64 << 20
    # torch intra-op threads: small rows run on one thread (on a small machine shared with
    # other work, a parallel region for a 256-row index_put_ can stall for milliseconds);
    # bulk copies (BULK_ROWS) run with torch's default, as users run them.
    threads_small: int = 1
    threads_bulk: int = field(default_factory=torch.get_num_threads)

    @classmethod
    def make(cls, quick: bool, threads: int | None = None) -> Settings:
        if threads:
            cfg = cls(threads_small=threads, threads_bulk=threads)
        else:
            cfg = cls()
        if not quick:
            return cfg
        return replace(
            cfg,
            quick=True,
            micro_time=0.01,
            micro_repeat=3,
            io_repeat=3,
            big_repeat=2,
            lazy_levels=100,
            lazy_flat=10_000,
            lazy_all_levels=20,
            memmap_bytes=64 << 20,
            from_tensor_bytes=32 << 20,
            map_bytes=8 << 20,
            dist_bytes=32 << 20,
            reduce_bytes=8 << 20,
        )


@dataclass
class Result:
    name: str
    title: str
    target: str
    work: float | None = None  # seconds per workload
    floor: float | None = None  # seconds per floor
    ratio: float | None = None
    ok: bool | None = None  # None: informational row or no figure
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    threads: int | None = None
    work_samples: list[float] = field(default_factory=list)  # seconds, one per repeat
    floor_samples: list[float] = field(default_factory=list)

    def record(self, samples: tuple[list[float], list[float]], floor_scale: float = 1) -> None:
        """Keep the samples of both sides; the figures are their medians."""
        self.work_samples = list(samples[0])
        self.floor_samples = [floor_scale * x for x in samples[1]]
        self.work = statistics.median(self.work_samples)
        self.floor = statistics.median(self.floor_samples)


# --------------------------------------------------------------------------- timing


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _micro(work: str, floor: str, env: dict, cfg: Settings) -> tuple[list[float], list[float]]:
    """Seconds per execution, one figure per repeat, of two statements, timed in alternation.

    The statements run through ``timeit`` (gc disabled while timing, no call overhead);
    the loop count is calibrated so that one repeat of each lasts ``cfg.micro_time``.
    """
    timers = [timeit.Timer(work, globals=env), timeit.Timer(floor, globals=env)]
    numbers = []
    for timer in timers:
        timer.timeit(3)  # warm-up
        number = 1
        while True:
            elapsed = timer.timeit(number)
            if elapsed >= cfg.micro_time / 4 or number >= 1 << 24:
                break
            number *= 2
        numbers.append(max(1, int(number * cfg.micro_time / max(elapsed, 1e-9))))
    samples: list[list[float]] = [[], []]
    for _ in range(cfg.micro_repeat):
        for i, timer in enumerate(timers):
            samples[i].append(timer.timeit(numbers[i]) / numbers[i])
    return samples[0], samples[1]


def _once(fn: Callable[[], object], setup: Callable[[], None] | None = None) -> float:
    """Seconds taken by one call of ``fn`` (its result is released after the clock stops)."""
    if setup is not None:
        setup()
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    del result
    return elapsed


def _alternate(
    work: Callable[[], object],
    floor: Callable[[], object],
    repeat: int,
    *,
    warmup: int = 1,
    work_setup: Callable[[], None] | None = None,
    floor_setup: Callable[[], None] | None = None,
    work_teardown: Callable[[], None] | None = None,
    floor_teardown: Callable[[], None] | None = None,
) -> tuple[list[float], list[float]]:
    """Seconds of single calls of ``work`` and ``floor``, timed in alternation."""
    samples: list[list[float]] = [[], []]
    for i in range(warmup + repeat):
        for j, (fn, setup, teardown) in enumerate(
            ((work, work_setup, work_teardown), (floor, floor_setup, floor_teardown))
        ):
            elapsed = _once(fn, setup)
            if teardown is not None:
                teardown()
            if i >= warmup:
                samples[j].append(elapsed)
    return samples[0], samples[1]


# --------------------------------------------------------------------------- helpers

_DTYPES = {
    str(d): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}


def _open_leaf(path: str, dtype: torch.dtype, shape) -> torch.Tensor:
    """A plain tensor on the file ``path`` (the floor's way to map a file)."""
    numel = math.prod(shape)
    return torch.from_file(path, shared=True, size=numel, dtype=dtype).view(tuple(shape))


def _floor_load(path: str) -> dict:
    """Load a memmap folder by hand: parse every meta.json, map every file."""
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    out = {}
    for key, record in meta.items():
        if not isinstance(record, dict):
            continue  # the level's own fields: shape, device, _type, ...
        if record.get("type") == "TensorDict":
            out[key] = _floor_load(os.path.join(path, key))
        else:
            out[key] = _open_leaf(
                os.path.join(path, key + ".memmap"), _DTYPES[record["dtype"]], record["shape"]
            )
    return out


def _write_bytes(path: str, tensor: torch.Tensor) -> None:
    with open(path, "wb") as f:
        f.write(tensor.numpy())


def _fill(numel: int, value: float, dtype=torch.float32) -> torch.Tensor:
    # filled (not torch.empty), so that every page is really there
    return torch.full((numel,), value, dtype=dtype)


class Scratch:
    """Fresh folders under one temporary base folder on /dev/shm."""

    def __init__(self) -> None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.root = tempfile.mkdtemp(prefix="tdbench-", dir=base)
        self.count = 0

    def path(self, stem: str) -> str:
        self.count += 1
        return os.path.join(self.root, f"{stem}{self.count}")

    def folder(self, stem: str) -> str:
        path = self.path(stem)
        os.mkdir(path)
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# --------------------------------------------------------------------------- rows


def _ten_keys(batch: int, feature=(8,)) -> dict:
    return {f"key{i}": torch.randn(batch, *feature) for i in range(10)}


def row_build(res: Result, cfg: Settings, scratch: Scratch) -> None:
    env = {"TensorDict": TensorDict, "t": torch.randn(64, 3), "u": torch.randn(64, 4)}
    res.record(
        _micro(
            'TensorDict({"a": t, "b": {"c": u}}, batch_size=[64])',
            '{"a": t, "b": {"c": u}}',
            env,
            cfg,
        )
    )


def row_index(res: Result, cfg: Settings, scratch: Scratch) -> None:
    d = _ten_keys(1000)
    td = TensorDict(d, batch_size=[1000])
    idx = torch.randint(0, 1000, (16,))
    env = {"td": td, "d": d, "idx": idx}
    res.record(_micro("td[idx]", "{k: v[idx] for k, v in d.items()}", env, cfg))


def row_stack(res: Result, cfg: Settings, scratch: Scratch) -> None:
    dicts = [_ten_keys(8, (4,)) for _ in range(32)]
    tds = [TensorDict(d, batch_size=[8]) for d in dicts]
    env = {"torch": torch, "tds": tds, "ds": dicts, "keys": list(dicts[0])}
    res.record(
        _micro("torch.stack(tds)", "{k: torch.stack([d[k] for d in ds]) for k in keys}", env, cfg)
    )


def row_get(res: Result, cfg: Settings, scratch: Scratch) -> None:
    d = _ten_keys(1000)
    env = {"td": TensorDict(d, batch_size=[1000]), "d": d}
    res.record(_micro('td["key3"]', 'd["key3"]', env, cfg))


def row_set(res: Result, cfg: Settings, scratch: Scratch) -> None:
    d = _ten_keys(1000)
    env = {"td": TensorDict(dict(d), batch_size=[1000]), "d": d, "v": torch.randn(1000, 8)}
    res.record(_micro('td["key3"] = v', 'd["key3"] = v', env, cfg))


def row_apply(res: Result, cfg: Settings, scratch: Scratch) -> None:
    d = _ten_keys(1000)
    env = {"td": TensorDict(d, batch_size=[1000]), "d": d}
    res.record(_micro("td.apply(lambda x: x + 1)", "{k: v + 1 for k, v in d.items()}", env, cfg))


def row_memmap(res: Result, cfg: Settings, scratch: Scratch) -> None:
    numel = cfg.memmap_bytes // cfg.memmap_tensors // 4
    src = {f"t{i}": _fill(numel, float(i)) for i in range(cfg.memmap_tensors)}
    td = TensorDict(src, batch_size=[])
    out = {}

    def work_setup():
        out["dir"] = scratch.path("memmap")  # memmap(prefix) creates it

    def floor_setup():
        out["dir"] = scratch.folder("write")

    def work():
        return td.memmap(out["dir"])

    def floor():
        folder = out["dir"]
        for key, tensor in src.items():
            _write_bytes(os.path.join(folder, key + ".memmap"), tensor)

    def teardown():
        gc.collect()
        shutil.rmtree(out["dir"])

    res.record(
        _alternate(
            work,
            floor,
            cfg.big_repeat,
            work_setup=work_setup,
            floor_setup=floor_setup,
            work_teardown=teardown,
            floor_teardown=teardown,
        )
    )
    res.notes.append(f"{cfg.memmap_bytes >> 20} MiB in {cfg.memmap_tensors} tensors")


def _load_folder(cfg: Settings, scratch: Scratch) -> str:
    folder = scratch.path("load")
    src = {
        f"group{g}": {f"leaf{i}": torch.randn(4) for i in range(cfg.load_leaves)}
        for g in range(cfg.load_groups)
    }
    TensorDict(src, batch_size=[]).memmap(folder)
    gc.collect()
    return folder


def row_load_memmap(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _load_folder(cfg, scratch)
    res.record(
        _alternate(
            lambda: TensorDict.load_memmap(folder),
            lambda: _floor_load(folder),
            cfg.io_repeat,
            warmup=2,
        )
    )
    res.notes.append(f"{cfg.load_groups * cfg.load_leaves} leaves")


def row_load_archive(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _load_folder(cfg, scratch)
    archive = scratch.path("load") + ".tdz"
    TensorDict.load_memmap(folder).save(archive)
    gc.collect()
    res.record(
        _alternate(
            lambda: TensorDict.load_memmap(archive),
            lambda: _floor_load(folder),
            cfg.io_repeat,
            warmup=2,
        )
    )
    res.notes.append(f"{cfg.load_groups * cfg.load_leaves} leaves; floor: the folder's")


def row_from_safetensors(res: Result, cfg: Settings, scratch: Scratch) -> None:
    from safetensors.torch import load_file

    from tensordict import from_safetensors, to_safetensors

    numel = cfg.memmap_bytes // cfg.memmap_tensors // 4
    td = TensorDict({f"t{i}": _fill(numel, float(i)) for i in range(cfg.memmap_tensors)})
    path = scratch.path("st") + ".safetensors"
    to_safetensors(td, path)
    del td
    gc.collect()
    res.record(
        _alternate(
            lambda: from_safetensors(path),
            lambda: load_file(path),
            cfg.big_repeat,
            work_teardown=gc.collect,
            floor_teardown=gc.collect,
        )
    )
    res.notes.append(f"{cfg.memmap_bytes >> 20} MiB in {cfg.memmap_tensors} tensors")


def row_refresh(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _load_folder(cfg, scratch)
    loaded = TensorDict.load_memmap(folder)
    try:
        loaded.memmap_refresh_()
    except RuntimeError:
        # The reference 0.15.3 refuses to refresh a freshly loaded tensordict ("not
        # memory mapped or has no path associated"): it needs memmap_() first
        # (untimed here). Our implementation refreshes a loaded tensordict directly.
        loaded.memmap_()
        loaded.memmap_refresh_()
        res.notes.append("needed memmap_() after load_memmap() before refresh")
    res.record(
        _alternate(loaded.memmap_refresh_, lambda: _floor_load(folder), cfg.io_repeat, warmup=2)
    )


def _episodes(levels: int, leaves: int) -> TensorDict:
    """``levels`` nested levels (episodes) of ``leaves`` small entries each."""
    return TensorDict(
        {
            f"ep{i}": TensorDict({f"x{j}": torch.full((4,), float(j)) for j in range(leaves)})
            for i in range(levels)
        }
    )


def _lazy_folder(cfg: Settings, scratch: Scratch) -> str:
    """The folder of ``lazy_levels`` x ``lazy_leaves`` entries (100,000 in full runs), built once.

    Past ``vm.max_map_count`` (65,530 mappings), ``memmap`` writes it file by file (ours),
    or fails (the reference): the rows that need it are then ``n/a``.
    """
    folder = getattr(scratch, "lazy_folder", None)
    if folder is None:
        folder = scratch.path("lazy")
        _log(f"writing {cfg.lazy_levels * cfg.lazy_leaves} entries ...")
        written = _episodes(cfg.lazy_levels, cfg.lazy_leaves).memmap(folder)
        del written
        gc.collect()
        scratch.lazy_folder = folder
    return folder


_lazy_open = _scale.lazy_open  # n/a where load_memmap has no lazy option (the reference)


def _json_load(path: str) -> dict:
    with open(os.path.join(path, "meta.json")) as f:
        return json.load(f)


def row_lazy_open(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _lazy_folder(cfg, scratch)
    res.record(
        _alternate(lambda: _lazy_open(folder), lambda: _json_load(folder), cfg.io_repeat, warmup=2)
    )
    res.notes.append(
        f"{cfg.lazy_levels * cfg.lazy_leaves} entries in {cfg.lazy_levels} levels; "
        "floor: json.load of the top meta.json"
    )


def row_lazy_first_read(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _lazy_folder(cfg, scratch)
    level, leaf = f"ep{cfg.lazy_levels // 2}", f"x{cfg.lazy_leaves // 2}"
    opened: list = []

    def floor():
        record = _json_load(os.path.join(folder, level))[leaf]
        return _open_leaf(
            os.path.join(folder, level, leaf + ".memmap"), torch.float32, record["shape"]
        )

    res.record(
        _alternate(
            lambda: opened[0][level][leaf],
            floor,
            cfg.io_repeat,
            warmup=2,
            work_setup=lambda: opened.clear() or opened.append(_lazy_open(folder)),
        )
    )
    res.notes.append(
        "one entry of a freshly opened lazy tree; floor: its level's json.load + one map"
    )


def row_lazy_read_all(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = scratch.path("lazyall")
    _episodes(cfg.lazy_all_levels, cfg.lazy_leaves).memmap(folder)
    gc.collect()

    def every(td) -> int:
        return sum(1 for _ in td.values(True, True))

    res.record(
        _alternate(
            lambda: every(_lazy_open(folder)),
            lambda: every(TensorDict.load_memmap(folder)),
            cfg.io_repeat,
            warmup=1,
        )
    )
    res.notes.append(
        f"{cfg.lazy_all_levels * cfg.lazy_leaves} entries: lazy open + every leaf read; "
        "floor: the eager load_memmap + every leaf"
    )


def _info_main():
    """The ``tensordict`` command's ``main``, or TypeError where there is no such command."""
    try:
        from tensordict.cli import main
    except ImportError as exc:
        msg = "this implementation has no tensordict command"
        raise TypeError(msg) from exc
    return main


def row_info(res: Result, cfg: Settings, scratch: Scratch) -> None:
    main = _info_main()
    folder = _lazy_folder(cfg, scratch)

    def work():
        with contextlib.redirect_stdout(io.StringIO()) as out:
            status = main(["info", folder])
        if status != 0:
            raise RuntimeError(f"tensordict info exited {status}: {out.getvalue()[-200:]}")
        return out

    res.record(_alternate(work, lambda: _json_load(folder), cfg.io_repeat, warmup=2))
    res.notes.append(
        f"tensordict info (the top level, in process) of {cfg.lazy_levels * cfg.lazy_leaves} "
        f"entries in {cfg.lazy_levels} levels; floor: json.load of the top meta.json"
    )


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maps() -> int:
    with open("/proc/self/maps", "rb") as f:
        return sum(1 for _ in f)


def row_lazy_memory(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = _lazy_folder(cfg, scratch)
    gc.collect()
    base = _rss()
    td = _lazy_open(folder)
    opened = _rss() - base
    touched = 0
    for i in range(0, cfg.lazy_levels, max(1, cfg.lazy_levels // 10)):
        for value in td[f"ep{i}"].values():
            touched += int(value[0] >= 0)
    after_some = _rss() - base
    for value in td.values(True, True):
        touched += int(value[0] >= 0)
    after_all = _rss() - base
    total = cfg.lazy_levels * cfg.lazy_leaves
    res.notes.append(
        f"resident memory: +{opened / 2**20:.1f} MiB after open, "
        f"+{after_some / 2**20:.1f} MiB after {10 * cfg.lazy_leaves} of {total} entries, "
        f"+{after_all / 2**20:.1f} MiB after all; {_maps()} mappings in the process"
    )


def row_lazy_flat(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = scratch.path("flat")
    # Entries of no element (the format keeps no file for them): the folder builds in
    # seconds, and a lazy open reads no entry's file either way.
    src = TensorDict({f"x{j}": torch.zeros(0) for j in range(cfg.lazy_flat)})
    written = src.memmap(folder)
    del written, src  # only the folder is needed
    gc.collect()
    res.record(
        _alternate(lambda: _lazy_open(folder), lambda: _json_load(folder), cfg.io_repeat, warmup=2)
    )
    res.notes.append(f"one level of {cfg.lazy_flat} entries; floor: json.load of its meta.json")


def _linear_calls(res: Result, cfg: Settings, setup, calls) -> None:
    """Times ``cfg.storage_calls`` calls against ten times a tenth of them (linear: 1x).

    ``setup(n)`` makes the state for ``n`` calls in ``state``; ``calls(state)`` makes them.
    """
    many = cfg.storage_calls
    few = many // 10
    state: dict = {}

    def prepare(n):
        return lambda: setup(state, n)

    def teardown():
        state.clear()
        gc.collect()

    samples = _alternate(
        lambda: calls(state),
        lambda: calls(state),
        cfg.big_repeat,
        work_setup=prepare(many),
        floor_setup=prepare(few),
        work_teardown=teardown,
        floor_teardown=teardown,
    )
    res.record(samples, floor_scale=10)
    few_time = statistics.median(samples[1])
    res.notes.append(f"{many} calls: {_fmt(res.work)}, {few} calls: {_fmt(few_time)}")


def row_make_from_storage(res: Result, cfg: Settings, scratch: Scratch) -> None:
    def setup(state, n):
        state["td"] = TensorDict({}, batch_size=[]).memmap(scratch.path("storage"))
        state["storages"] = [torch.UntypedStorage(16) for _ in range(n)]

    def calls(state):
        td = state["td"]
        for i, storage in enumerate(state["storages"]):
            td.make_memmap_from_storage(f"s{i}", storage, (4,), dtype=torch.float32)

    # A storage without a file, in a tensordict with a directory: the call emits a
    # FutureWarning (the entry is not written to the directory); silence it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _linear_calls(res, cfg, setup, calls)


def row_make_from_storage_files(res: Result, cfg: Settings, scratch: Scratch) -> None:
    """Two tensordicts of one folder (two writers) take turns adding file-backed entries."""

    def setup(state, n):
        folder = scratch.path("storage_files")
        first = TensorDict({}, batch_size=[]).memmap(folder)
        second = TensorDict.load_memmap(folder)
        if not second.is_locked:
            second.memmap_()  # the reference needs it before make_memmap_from_storage
        state["views"] = (first, second)
        state["storages"] = [
            MemoryMappedTensor.zeros(
                4, dtype=torch.float32, filename=os.path.join(folder, f"s{i}.memmap")
            ).untyped_storage()
            for i in range(n)
        ]

    def calls(state):
        views = state["views"]
        for i, storage in enumerate(state["storages"]):
            views[i % 2].make_memmap_from_storage(f"s{i}", storage, (4,), dtype=torch.float32)

    _linear_calls(res, cfg, setup, calls)


def _replay_buffer(cfg: Settings, scratch: Scratch):
    n = cfg.rb_rows
    template = TensorDict(
        {
            "obs": torch.zeros(n, 16),
            "action": torch.zeros(n, 4),
            "reward": torch.zeros(n, 1),
            "done": torch.zeros(n, 1, dtype=torch.bool),
        },
        batch_size=[n],
    )
    folder = scratch.path("buffer")
    buffer = template.memmap_like(folder)
    del template
    # The floor works on plain tensors mapped on the same files (on-disk format v1:
    # <folder>/<key>.memmap); if the files are not there, on plain views of the leaves.
    leaves = {}
    for key in ("obs", "action", "reward", "done"):
        leaf = buffer.get(key)
        path = os.path.join(folder, key + ".memmap")
        if os.path.exists(path):
            leaves[key] = _open_leaf(path, leaf.dtype, leaf.shape)
        else:
            leaves[key] = leaf.as_subclass(torch.Tensor)
    b = cfg.rb_batch
    batch = {
        "obs": torch.randn(b, 16),
        "action": torch.randn(b, 4),
        "reward": torch.randn(b, 1),
        "done": torch.rand(b, 1) > 0.5,
    }
    # distinct rows, so that both writes leave the same content
    idx = torch.randperm(n)[:b]
    return buffer, leaves, batch, idx


def row_rb_write(res: Result, cfg: Settings, scratch: Scratch) -> None:
    buffer, leaves, batch, idx = _replay_buffer(cfg, scratch)
    env = {
        "buffer": buffer,
        "leaves": leaves,
        "batch_td": TensorDict(batch, batch_size=[cfg.rb_batch]),
        "batch": batch,
        "idx": idx,
    }
    res.record(
        _micro("buffer[idx] = batch_td", "for k in leaves: leaves[k][idx] = batch[k]", env, cfg)
    )
    if not torch.equal(leaves["obs"][idx], batch["obs"]):
        res.notes.append("WARNING: floor and workload do not see the same memory")


def row_rb_read(res: Result, cfg: Settings, scratch: Scratch) -> None:
    buffer, leaves, batch, idx = _replay_buffer(cfg, scratch)
    for k in leaves:
        leaves[k][idx] = batch[k]
    env = {"buffer": buffer, "leaves": leaves, "idx": idx}
    res.record(_micro("buffer[idx]", "{k: v[idx] for k, v in leaves.items()}", env, cfg))


class RowSkipped(Exception):
    """Raised by a row that cannot run here (a missing optional package); the message says why."""


def _torchrl_data():
    """``torchrl.data``, or RowSkipped when torchrl is not installed."""
    start_method = multiprocessing.get_start_method(allow_none=True)
    try:
        import torchrl.data
    except ImportError as exc:
        msg = f"torchrl is not installed ({exc}); `make test` installs it"
        raise RowSkipped(msg) from exc
    finally:
        # importing torchrl sets the start method to "spawn"; the map rows use the default
        multiprocessing.set_start_method(start_method, force=True)
    return torchrl.data


def row_torchrl_rb(res: Result, cfg: Settings, scratch: Scratch) -> None:
    data = _torchrl_data()
    b, rounds = cfg.rb_batch, cfg.rb_rounds
    capacity = b * rounds
    batches = [
        TensorDict(
            {
                "obs": torch.randn(b, 16),
                "action": torch.randn(b, 4),
                "next": {"obs": torch.randn(b, 16), "reward": torch.randn(b, 1)},
                "done": torch.rand(b, 1) > 0.5,
            },
            batch_size=[b],
        )
        for _ in range(rounds)
    ]
    plain = [{k: v for k, v in batch.items(True, True)} for batch in batches]
    state: dict = {}

    def work_setup():
        folder = scratch.path("torchrl")
        storage = data.LazyMemmapStorage(capacity, scratch_dir=folder)
        state["rb"] = data.TensorDictReplayBuffer(storage=storage, batch_size=b)

    def work():
        rb = state.pop("rb")
        for batch in batches:
            rb.extend(batch)
            rb.sample()
        return rb

    def floor():
        # the same rows into plain tensors on files made on the first batch, read at
        # random rows after each write
        folder = scratch.folder("torchrl-floor")
        leaves = {}
        for i, batch in enumerate(plain):
            if not leaves:
                for j, (key, value) in enumerate(batch.items()):
                    shape = (capacity, *value.shape[1:])
                    numel = math.prod(shape)
                    path = os.path.join(folder, f"{j}.memmap")
                    leaves[key] = torch.from_file(
                        path, shared=True, size=numel, dtype=value.dtype
                    ).view(shape)
            for key, value in batch.items():
                leaves[key][i * b : (i + 1) * b] = value
            idx = torch.randint(0, (i + 1) * b, (b,))
            {key: leaf[idx] for key, leaf in leaves.items()}
        return leaves

    res.record(_alternate(work, floor, cfg.io_repeat, warmup=1, work_setup=work_setup))
    res.notes.append(
        f"{rounds} x (extend {b} rows + sample {b}); compare with --python .venv-ref/bin/python "
        "(with torchrl installed there): target <= 1.0x the reference's workload"
    )


def row_from_tensor(res: Result, cfg: Settings, scratch: Scratch) -> None:
    src = _fill(cfg.from_tensor_bytes // 4, 1.5)
    state = {}

    def setup():
        state["path"] = scratch.path("from_tensor") + ".memmap"

    def teardown():
        gc.collect()
        os.unlink(state["path"])

    res.record(
        _alternate(
            lambda: MemoryMappedTensor.from_tensor(src, filename=state["path"]),
            lambda: _write_bytes(state["path"], src),
            cfg.io_repeat,
            work_setup=setup,
            floor_setup=setup,
            work_teardown=teardown,
            floor_teardown=teardown,
        )
    )
    res.notes.append(f"{cfg.from_tensor_bytes >> 20} MiB")


def row_from_filename(res: Result, cfg: Settings, scratch: Scratch) -> None:
    folder = scratch.folder("files")
    shape = torch.Size([4, 4])
    paths = []
    for i in range(cfg.open_files):
        path = os.path.join(folder, f"f{i}.memmap")
        _write_bytes(path, _fill(16, float(i)))
        paths.append(path)
    dtype = torch.float32
    res.record(
        _alternate(
            lambda: [MemoryMappedTensor.from_filename(p, dtype=dtype, shape=shape) for p in paths],
            lambda: [_open_leaf(p, dtype, shape) for p in paths],
            cfg.io_repeat,
            warmup=2,
        )
    )
    res.notes.append(f"{cfg.open_files} files")


# map's work: a few passes of elementwise math per element, the same for both sides
_MAP_PASSES = 16
_MAP_CHUNKS = 8


def _map_math(x: torch.Tensor) -> torch.Tensor:
    for _ in range(_MAP_PASSES):
        x = torch.tanh(x) * 1.01
    return x.sum(-1)


def _map_fn(chunk):
    return chunk.empty().set("y", _map_math(chunk["x"]))


def _map_floor_fn(x: torch.Tensor) -> torch.Tensor:
    torch.set_num_threads(1)
    return _map_math(x)


def _map_data(cfg: Settings, scratch: Scratch):
    """The memory-mapped tensordict that map reads, and the same values in shared memory."""
    rows = cfg.map_bytes // (4 * 256)
    x = torch.randn(rows, 256)
    td = TensorDict(x=x, batch_size=[rows]).memmap(scratch.path("map"))
    return td, x.share_memory_()


def _start_map_pool(workers: int):
    """What a ``map`` call without a pool pays before any work: a fork pool of ``workers``."""
    pool = torch.multiprocessing.get_context("fork").Pool(workers)
    pool.map(abs, range(workers))  # every worker has started
    return pool


def row_map(res: Result, cfg: Settings, scratch: Scratch) -> None:
    td, x = _map_data(cfg, scratch)
    gen = torch.Generator()
    n = cfg.map_workers

    def work():
        return td.map(_map_fn, num_workers=n, num_chunks=_MAP_CHUNKS, generator=gen)

    def floor():
        return torch.cat([_map_math(chunk) for chunk in td["x"].chunk(_MAP_CHUNKS)])

    res.record(_alternate(work, floor, cfg.big_repeat))
    res.notes.append(
        f"{cfg.map_bytes >> 20} MiB memory-mapped, {_MAP_CHUNKS} chunks, {n} workers vs one "
        f"process: {res.floor / res.work:.2f}x the throughput"
    )
    start = [_once(lambda: _start_map_pool(n).terminate()) for _ in range(3)]
    res.notes.append(f"start-up (fork pool of {n}) {statistics.median(start) * 1e3:.0f} ms")
    del x


def row_map_pool(res: Result, cfg: Settings, scratch: Scratch) -> None:
    td, x = _map_data(cfg, scratch)
    gen = torch.Generator()
    n = cfg.map_workers

    def work():
        return td.map(_map_fn, num_workers=n, num_chunks=_MAP_CHUNKS, generator=gen)

    def floor():
        pool = torch.multiprocessing.get_context("fork").Pool(n)
        try:
            return torch.cat(pool.map(_map_floor_fn, x.chunk(_MAP_CHUNKS), 1))
        finally:
            pool.close()
            pool.join()

    res.record(_alternate(work, floor, cfg.big_repeat))
    res.notes.append(f"floor: multiprocessing.Pool({n}).map over shared-memory tensors")


def _thousand_leaves() -> dict:
    """10 groups of 100 small leaves (batch 4, features 8, float32): 1,000 leaves."""
    return {f"g{g}": {f"k{i}": torch.randn(4, 8) for i in range(100)} for g in range(10)}


def row_consolidate(res: Result, cfg: Settings, scratch: Scratch) -> None:
    src = _thousand_leaves()
    td = TensorDict(src, batch_size=[4])
    leaves = [v for group in src.values() for v in group.values()]
    env = {"td": td, "leaves": leaves, "torch": torch}
    res.record(
        _micro(
            "td.consolidate()",
            "torch.cat([v.reshape(-1).view(torch.uint8) for v in leaves])",
            env,
            cfg,
        )
    )
    res.notes.append("1000 leaves")


def row_pickle_consolidated(res: Result, cfg: Settings, scratch: Scratch) -> None:
    td = TensorDict(_thousand_leaves(), batch_size=[4])
    env = {"pickle": __import__("pickle"), "td": td, "consolidated": td.consolidate()}
    res.record(_micro("pickle.dumps(consolidated)", "pickle.dumps(td)", env, cfg))
    res.notes.append("floor: pickling the plain tensordict")


# --------------------------------------------------------------------------- torch.distributed
# The rows below run rank 0 in this process and spawn rank 1 (gloo, loopback, a file
# store). Rank 1 runs the mirror of what rank 0 times: for each round of _alternate
# (warm-up included), the workload's side, then the floor's side.


def _dist_td(nbytes: int, leaves: int) -> TensorDict:
    """``leaves`` float32 leaves of ``nbytes`` in all; keys sort as they are numbered."""
    numel = nbytes // (4 * leaves)
    return TensorDict({f"k{i:03d}": torch.full((numel,), float(i)) for i in range(leaves)})


def _dist_peer(job: str, store: str, nbytes: int, leaves: int, rounds: int) -> None:
    """Rank 1 of a distributed row."""
    import datetime

    import torch.distributed as dist

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=300)
    dist.init_process_group("gloo", init_method=store, rank=1, world_size=2, timeout=timeout)
    td = _dist_td(nbytes, leaves)
    tensors = [td[key] for key in sorted(td.keys())]
    if job == "send":
        for _ in range(rounds):
            td.send(dst=0)
            for tensor in tensors:
                dist.send(tensor, dst=0)
    elif job == "send_consolidated":
        packed = td.broadcast(src=1)  # the one-buffer form, on both ranks
        flat = torch.zeros(nbytes, dtype=torch.uint8)
        for _ in range(rounds):
            packed.send(dst=0, consolidated=True)
            dist.send(flat, dst=0)
    elif job == "all_reduce":
        for _ in range(rounds):
            td.all_reduce()
            for tensor in tensors:
                dist.all_reduce(tensor)
    dist.barrier()
    dist.destroy_process_group()


class _Peer:
    """``with _Peer(...) as dist:``: a two-rank gloo group whose rank 1 runs ``_dist_peer(job)``."""

    def __init__(self, job: str, nbytes: int, leaves: int, rounds: int, scratch: Scratch) -> None:
        import multiprocessing

        self.store = f"file://{scratch.path('store')}"
        ctx = multiprocessing.get_context("spawn")
        args = (job, self.store, nbytes, leaves, rounds)
        self.proc = ctx.Process(target=_dist_peer, args=args, daemon=True)

    def __enter__(self):
        import datetime

        import torch.distributed as dist

        self.proc.start()
        timeout = datetime.timedelta(seconds=300)
        dist.init_process_group(
            "gloo", init_method=self.store, rank=0, world_size=2, timeout=timeout
        )
        return dist

    def __exit__(self, *exc) -> None:
        import torch.distributed as dist

        if exc[0] is None:
            dist.barrier()
        dist.destroy_process_group()
        self.proc.join(60)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def row_send(res: Result, cfg: Settings, scratch: Scratch) -> None:
    rounds = 1 + cfg.big_repeat
    with _Peer("send", cfg.dist_bytes, cfg.dist_leaves, rounds, scratch) as dist:
        td = _dist_td(cfg.dist_bytes, cfg.dist_leaves)
        tensors = [td[key] for key in sorted(td.keys())]
        res.record(
            _alternate(
                lambda: td.recv(src=1),
                lambda: [dist.recv(tensor, src=1) for tensor in tensors],
                cfg.big_repeat,
            )
        )
    res.notes.append(
        f"{cfg.dist_bytes >> 20} MiB in {cfg.dist_leaves} leaves, gloo on loopback, timed on the "
        f"receiver: {cfg.dist_bytes / res.work / 2**30:.2f} GiB/s"
    )


def row_send_consolidated(res: Result, cfg: Settings, scratch: Scratch) -> None:
    rounds = 1 + cfg.big_repeat
    with _Peer("send_consolidated", cfg.dist_bytes, cfg.dist_leaves, rounds, scratch) as dist:
        packed = TensorDict().broadcast(src=1)
        flat = torch.empty(cfg.dist_bytes, dtype=torch.uint8)
        res.record(
            _alternate(
                lambda: packed.recv(src=1, consolidated=True),
                lambda: dist.recv(flat, src=1),
                cfg.big_repeat,
            )
        )
    res.notes.append("both sides in the one-buffer form (from broadcast), one message")


def row_all_reduce(res: Result, cfg: Settings, scratch: Scratch) -> None:
    rounds = 1 + cfg.big_repeat
    with _Peer("all_reduce", cfg.reduce_bytes, cfg.dist_leaves, rounds, scratch) as dist:
        td = _dist_td(cfg.reduce_bytes, cfg.dist_leaves)
        tensors = [td[key] for key in sorted(td.keys())]
        res.record(
            _alternate(
                td.all_reduce,
                lambda: [dist.all_reduce(tensor) for tensor in tensors],
                cfg.big_repeat,
            )
        )
    res.notes.append(f"{cfg.reduce_bytes >> 20} MiB in {cfg.dist_leaves} leaves, 2 ranks")


# rows of big copies, timed with torch's default number of threads (see Settings)
BULK_ROWS = {"memmap", "from_tensor", "from_safetensors"}

# name, function, title, target: ("abs", seconds) | ("ratio", x) | None (informational)
ROWS = [
    ("build", row_build, 'TensorDict({"a": t, "b": {"c": u}}, batch_size=[64])', ("abs", 2e-6)),
    ("index", row_index, "td[idx]: 10 keys, batch 1000, 16 random rows", ("ratio", 1.15)),
    ("stack", row_stack, "torch.stack of 32 ten-key tensordicts", ("ratio", 1.3)),
    ("get", row_get, 'td["key3"] (10 keys, batch 1000)', None),
    ("set", row_set, 'td["key3"] = v (10 keys, batch 1000)', None),
    ("apply", row_apply, "td.apply(lambda x: x + 1) (10 keys, batch 1000)", None),
    ("memmap", row_memmap, "td.memmap(DIR) of 1 GiB in 128 tensors", ("ratio", 1.1)),
    ("load_memmap", row_load_memmap, "TensorDict.load_memmap(DIR), 10 x 100 keys", ("ratio", 1.3)),
    (
        "load_archive",
        row_load_archive,
        "TensorDict.load_memmap(.tdz), 10 x 100 keys",
        ("ratio", 1.3),
    ),
    ("refresh", row_refresh, "memmap_refresh_() of that folder, unchanged", ("ratio", 0.25)),
    (
        "make_from_storage",
        row_make_from_storage,
        "1000 make_memmap_from_storage calls (vs 10x 100)",
        ("ratio", 1.2),
    ),
    (
        "make_from_storage_files",
        row_make_from_storage_files,
        "1000 make_memmap_from_storage calls with files, two writers in turn (vs 10x 100)",
        ("ratio", 1.2),
    ),
    ("rb_write", row_rb_write, "replay buffer: td[idx] = batch, 256 of 100k rows", ("ratio", 1.2)),
    ("rb_read", row_rb_read, "replay buffer: td[idx], 256 of 100k rows", ("ratio", 1.2)),
    (
        "torchrl_rb",
        row_torchrl_rb,
        "LazyMemmapStorage extend + sample of 100 batches of 256 rows",
        None,
    ),
    ("lazy_open", row_lazy_open, "load_memmap(lazy=True), 1000 levels x 100", ("abs", 10e-3)),
    ("lazy_first_read", row_lazy_first_read, "first read of one lazy entry", ("abs", 1e-3)),
    (
        "lazy_read_all",
        row_lazy_read_all,
        "every entry of a lazy 100 x 100 (vs the eager load)",
        ("ratio", 1.1),
    ),
    ("lazy_memory", row_lazy_memory, "resident memory of a lazy 1000 x 100 tree", None),
    ("lazy_flat", row_lazy_flat, "load_memmap(lazy=True), one level of 100,000", ("ratio", 1.2)),
    ("info", row_info, "tensordict info of 1000 levels x 100 (the top level)", ("abs", 50e-3)),
    ("from_tensor", row_from_tensor, "MemoryMappedTensor.from_tensor, 256 MiB", ("ratio", 1.1)),
    ("from_filename", row_from_filename, "1000 MemoryMappedTensor.from_filename", ("ratio", 1.2)),
    ("map", row_map, "td.map(fn) of 64 MiB memmap, 2 workers (vs 1 process)", ("ratio", 1 / 1.6)),
    ("map_pool", row_map_pool, "td.map(fn), 2 workers (vs multiprocessing.Pool)", ("ratio", 1.2)),
    ("consolidate", row_consolidate, "td.consolidate() of 1000 small leaves", ("ratio", 1.5)),
    (
        "pickle_consolidated",
        row_pickle_consolidated,
        "pickle.dumps of a consolidated 1000-leaf tensordict",
        ("ratio", 0.2),
    ),
    (
        "from_safetensors",
        row_from_safetensors,
        "from_safetensors of 1 GiB in 128 tensors",
        ("ratio", 1.1),
    ),
    ("send", row_send, "td.send/recv, 256 MiB in 64 leaves (vs dist.send each)", ("ratio", 1.2)),
    (
        "send_consolidated",
        row_send_consolidated,
        "send/recv(consolidated=True), 256 MiB (vs one dist.send)",
        ("ratio", 1.1),
    ),
    (
        "all_reduce",
        row_all_reduce,
        "td.all_reduce(), 64 leaves (vs dist.all_reduce each)",
        ("ratio", 1.2),
    ),
]


def _target_text(target) -> str:
    if target is None:
        return "info"
    kind, value = target
    return f"<= {_fmt(value)}" if kind == "abs" else f"<= {value:g}x"


def _short_error(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(msg) > 70:
        msg = msg[:67] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def run_rows(names: list[str], cfg: Settings) -> list[Result]:
    results = []
    scratch = Scratch()
    # Move everything alive now (torch, tensordict, ...) out of the collector's reach,
    # so that the gc.collect() before each timed call costs microseconds, not 0.3 s.
    gc.collect()
    gc.freeze()
    try:
        for name, fn, title, target in ROWS:
            if name not in names:
                continue
            res = Result(name=name, title=title, target=_target_text(target))
            res.threads = cfg.threads_bulk if name in BULK_ROWS else cfg.threads_small
            torch.set_num_threads(res.threads)
            _log(f"{name} ...")
            start = time.perf_counter()
            try:
                fn(res, cfg, scratch)
            except RowSkipped as exc:
                res.error = f"skipped: {exc}"
                res.work = res.floor = None
            except Exception as exc:  # a missing or failing API must not stop the table
                res.error = _short_error(exc)
                res.work = res.floor = None
            finally:
                gc.collect()
            if res.work is not None and res.floor:
                res.ratio = res.work / res.floor
                if target is not None:
                    kind, value = target
                    res.ok = (res.work if kind == "abs" else res.ratio) <= value
            _log(f"{name} done in {time.perf_counter() - start:.1f} s")
            results.append(res)
    finally:
        scratch.close()
    return results


# --------------------------------------------------------------------------- output


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _environment() -> dict:
    try:
        from importlib.metadata import version

        td_version = version("tensordict")
    except Exception:
        td_version = "?"
    return {
        "python": sys.executable,
        "tensordict_file": tensordict.__file__,
        "tensordict_version": td_version,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def _threads_text(env: dict) -> str:
    small, bulk = env.get("threads_small"), env.get("threads_bulk")
    if small == bulk:
        return f"{small} thread(s)"
    return f"{small} thread(s), {bulk} for {', '.join(sorted(BULK_ROWS))}"


def _table(results: list[Result], env: dict, other: dict | None) -> str:
    headers = ["row", "workload", "floor", "ratio", "target", ""]
    other_rows = {}
    if other is not None:
        headers += ["other ratio", "other workload"]
        other_rows = {r["name"]: r for r in other["results"]}
    lines = []
    body = []
    tails = []  # error messages, after the aligned columns
    for res in results:
        tail = []
        if res.error is not None:
            cells = [res.name, "n/a", "-", "-", res.target, ""]
            tail.append(f"n/a ({res.error})")
        else:
            mark = {True: "ok", False: "MISS", None: ""}[res.ok]
            cells = [
                res.name,
                _fmt(res.work),
                _fmt(res.floor),
                "-" if res.ratio is None else f"{res.ratio:.2f}x",
                res.target,
                mark,
            ]
        if other is not None:
            o = other_rows.get(res.name)
            if o is None:
                cells += ["-", "-"]
            elif o["error"] is not None:
                cells += ["n/a", "-"]
                tail.append(f"other: n/a ({o['error']})")
            else:
                ratio = o["ratio"]
                cells += ["-" if ratio is None else f"{ratio:.2f}x", _fmt(o["work"])]
        body.append(cells)
        tails.append("  ".join(tail))
    widths = [max(len(h), *(len(cells[i]) for cells in body)) for i, h in enumerate(headers)]
    lines.append(f"this:  {env['python']}  tensordict {env['tensordict_version']}")
    lines.append(f"       {env['tensordict_file']}  (torch {env['torch']}, {_threads_text(env)})")
    if other is not None:
        oenv = other["environment"]
        lines.append(f"other: {oenv['python']}  tensordict {oenv['tensordict_version']}")
        lines.append(
            f"       {oenv['tensordict_file']}  (torch {oenv['torch']}, {_threads_text(oenv)})"
        )
    lines.append("")
    lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for cells, tail in zip(body, tails):
        row = "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        lines.append(f"{row}  {tail}".rstrip())
    notes = []
    for res in results:
        for note in res.notes:
            notes.append(f"  {res.name}: {note}")
        if res.name == "build" and other is not None and res.work is not None:
            o = other_rows.get("build")
            if o is not None and o["work"]:
                speedup = o["work"] / res.work
                notes.append(
                    f"  build: other / this = {speedup:.2f} (ours should be >= 2x as fast "
                    "as the reference)"
                )
    if other is not None:
        own = {(r.name, note) for r in results for note in r.notes}
        for o in other["results"]:
            for note in o["notes"]:
                if (o["name"], note) not in own:  # sizes etc. are the same on both sides
                    notes.append(f"  {o['name']} (other): {note}")
    if notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(notes)
    misses = [r.name for r in results if r.ok is False]
    failed = [r.name for r in results if r.error is not None]
    lines.append("")
    lines.append(f"missed targets: {', '.join(misses) or 'none'}")
    if failed:
        lines.append(f"n/a: {', '.join(failed)}")
    return "\n".join(lines)


def _run_other(python: str, args) -> dict:
    fd, path = tempfile.mkstemp(prefix="tdbench-", suffix=".json")
    os.close(fd)
    try:
        cmd = [python, os.path.abspath(__file__), "--json", path, "--no-table"]
        if args.scale:
            cmd.append("--scale")
        if args.quick:
            cmd.append("--quick")
        if args.only:
            cmd += ["--only", args.only]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        _log(f"running under {python} ...")
        # Without this run's PYTHONPATH, which would make the other interpreter import
        # this checkout instead of its own tensordict.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", help="also run under this interpreter, side by side")
    parser.add_argument("--json", metavar="FILE", help="save all figures as JSON ('-': stdout)")
    parser.add_argument("--only", metavar="NAME[,NAME]", help="run only these rows")
    parser.add_argument("--quick", action="store_true", help="fast smoke run, small sizes")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads for every row (default: 1, but torch's default for "
        "the bulk copies memmap and from_tensor)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="scaling curves instead of the table: load_memmap (eager, lazy), memmap and "
        "memmap_refresh_ at 1k, 10k and 100k entries (see scale.py)",
    )
    parser.add_argument(
        "--plot",
        metavar="PNG",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale.png"),
        help="where --scale draws its plot (needs matplotlib, the 'bench' extra)",
    )
    parser.add_argument("--no-table", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    args = parser.parse_args(argv)

    if args.list:
        for name, _, title, target in ROWS:
            print(f"{name:18} {_target_text(target):10} {title}")
        return 0
    names = [name for name, *_ in ROWS]
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            parser.error(f"unknown row(s) {', '.join(unknown)}; rows: {', '.join(names)}")
        names = wanted

    if args.scale:
        return _main_scale(args)
    cfg = Settings.make(args.quick, args.threads)
    env = _environment()
    env["threads_small"], env["threads_bulk"] = cfg.threads_small, cfg.threads_bulk
    start = time.perf_counter()
    results = run_rows(names, cfg)
    env["seconds"] = round(time.perf_counter() - start, 2)
    env["quick"] = cfg.quick
    other = _run_other(args.python, args) if args.python else None

    figures = {"environment": env, "results": [asdict(r) for r in results]}
    out = _save_figures(figures, other, args)
    if out is not None:
        print(_table(results, env, other), file=out)
    return 0


def _save_figures(figures: dict, other: dict | None, args) -> object | None:
    """Adds ``--python``'s figures, writes ``--json`` (``-``: stdout); returns where the table
    goes (stderr when the JSON is on stdout), or None with ``--no-table``."""
    if other is not None:
        figures["other"] = other
    if args.json == "-":
        json.dump(figures, sys.stdout, indent=2)
        print()
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    if args.no_table:
        return None
    return sys.stderr if args.json == "-" else sys.stdout


def _main_scale(args) -> int:
    """``--scale``: the scaling table (and plot), ours and ``--python``'s side by side."""
    torch.set_num_threads(args.threads or 1)
    env = _environment()
    ours = _scale.run(args.quick, _log)
    other = _run_other(args.python, args) if args.python else None
    figures = {"environment": env, "scale": ours}
    out = _save_figures(figures, other, args)
    if out is not None:
        print(f"this:  {env['python']}  tensordict {env['tensordict_version']}", file=out)
        if other is not None:
            oenv = other["environment"]
            print(f"other: {oenv['python']}  tensordict {oenv['tensordict_version']}", file=out)
        print(file=out)
        print(_scale.table(ours, None if other is None else other["scale"]), file=out)
        if _scale.plot(ours, None if other is None else other["scale"], args.plot):
            print(f"\nplot: {args.plot}", file=out)
        else:
            print("\nplot: not drawn (pip install matplotlib, the 'bench' extra)", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
