"""Scaling curves of bench.py (``--scale``): how opening, writing and refreshing grow with entries.

For 1,000, 10,000 and 100,000 entries (levels of 100 small entries each, as a dataset
of episodes), in one temporary folder on /dev/shm:

* ``memmap``: ``td.memmap(DIR)`` of the in-memory tree;
* ``load_memmap``: the eager ``TensorDict.load_memmap(DIR)``;
* ``lazy_open``: ``TensorDict.load_memmap(DIR, lazy=True)`` (our extension);
* ``lazy_read_all``: that, then every leaf read once;
* ``refresh``: ``memmap_refresh_()`` of the loaded tree, nothing changed (eager, or the
  lazy tree where the eager load fails).

Each figure is the median of a few single calls (one at 100,000 entries for
``memmap``, which writes 100,000 files); a failing call is ``n/a`` with its error
(at 100,000 entries, every mapping at once passes ``vm.max_map_count``). The table
gives the time and the time per entry. The plot (PNG) needs matplotlib, the optional
``bench`` extra.
"""

from __future__ import annotations

import gc
import inspect
import os
import shutil
import statistics
import tempfile
import time

import torch

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the optional "bench" extra
    plt = None

from tensordict import TensorDict

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
PER_LEVEL = 100
OPERATIONS = ("memmap", "load_memmap", "lazy_open", "lazy_read_all", "refresh")


def _tree(entries: int) -> TensorDict:
    levels = max(1, entries // PER_LEVEL)
    return TensorDict(
        {
            f"ep{i}": TensorDict({f"x{j}": torch.full((4,), float(j)) for j in range(PER_LEVEL)})
            for i in range(levels)
        }
    )


def _timed(fn, repeat: int) -> tuple:
    """``(median seconds, last result, error)`` of ``repeat`` calls of ``fn``."""
    samples, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:  # a failing size is a figure too
            return None, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result, None


def _read_all(td) -> int:
    return sum(1 for _ in td.values(True, True))


# The reference's load_memmap takes unknown keywords without a word: ask its signature.
HAS_LAZY = "lazy" in inspect.signature(TensorDict.load_memmap).parameters


def lazy_open(folder: str):
    """``TensorDict.load_memmap(folder, lazy=True)``, or TypeError where there is no such option."""
    if not HAS_LAZY:
        msg = "load_memmap has no lazy option in this implementation"
        raise TypeError(msg)
    return TensorDict.load_memmap(folder, lazy=True)


def _measure(src: TensorDict, folder: str, repeat: int) -> dict:
    """``{operation: (seconds or None, error or None)}`` for one tree written to ``folder``."""
    figures: dict = {}
    seconds, written, error = _timed(lambda: src.memmap(folder), repeat)
    figures["memmap"] = (seconds, error)
    del written
    seconds, loaded, error = _timed(lambda: TensorDict.load_memmap(folder), 3)
    figures["load_memmap"] = (seconds, error)
    if loaded is None:
        _, loaded, _ = _timed(lambda: lazy_open(folder), 1)
    figures["lazy_open"] = _timed(lambda: lazy_open(folder), 5)[::2]
    figures["lazy_read_all"] = _timed(lambda: _read_all(lazy_open(folder)), 3)[::2]
    if loaded is not None:
        figures["refresh"] = _timed(loaded.memmap_refresh_, 5)[::2]
    else:
        figures["refresh"] = (None, "nothing loaded")
    return figures


def run(quick: bool, log) -> dict:
    """Times every operation at every size; returns ``{size: {operation: figure}}``.

    A figure is ``{"seconds": s, "per_entry_us": us}`` or ``{"error": text}``.
    """
    root = tempfile.mkdtemp(
        prefix="tdscale-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    )
    out: dict = {}
    try:
        for size in QUICK_SIZES if quick else SIZES:
            log(f"scale: {size} entries ...")
            src = _tree(size)
            folder = os.path.join(root, f"t{size}")
            figures = _measure(src, folder, 1 if size >= 100_000 else 3)
            del src
            out[size] = {
                op: (
                    {"seconds": s, "per_entry_us": s / size * 1e6}
                    if s is not None
                    else {"error": err}
                )
                for op, (s, err) in figures.items()
            }
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def _cell(figure: dict | None) -> str:
    if figure is None:
        return "-"
    if "error" in figure:
        return "n/a"
    return f"{figure['seconds'] * 1e3:.1f} ms ({figure['per_entry_us']:.1f} us/entry)"


def table(ours: dict, other: dict | None) -> str:
    """The figures as aligned text, the other interpreter's beside ours."""
    sizes = sorted({int(s) for s in ours} | {int(s) for s in (other or {})})
    headers = ["operation", *(f"{s} (ours)" for s in sizes)]
    if other is not None:
        headers += [f"{s} (other)" for s in sizes]
    rows, errors = [], []
    for op in OPERATIONS:
        cells = [op]
        for side, figures in (("ours", ours), ("other", other)):
            if figures is None:
                continue
            for size in sizes:
                figure = figures.get(size, figures.get(str(size), {})).get(op)
                cells.append(_cell(figure))
                if figure is not None and "error" in figure:
                    errors.append(f"{op} at {size} ({side}): {figure['error']}")
        rows.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if errors:
        lines += ["", "n/a:", *(f"  {e}" for e in errors)]
    return "\n".join(lines)


def plot(ours: dict, other: dict | None, path: str) -> bool:
    """Writes the per-entry cost of each operation against the entries (log x) to ``path``.

    Returns:
        False (writing nothing) when matplotlib is not installed.
    """
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, figures, style in (("ours", ours, "-o"), ("reference", other, "--s")):
        if figures is None:
            continue
        for op in OPERATIONS:
            points = [
                (int(size), figure[op]["per_entry_us"])
                for size, figure in figures.items()
                if op in figure and "per_entry_us" in figure[op]
            ]
            if points:
                xs, ys = zip(*sorted(points))
                ax.plot(xs, ys, style, label=f"{op} ({name})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("entries (levels of 100)")
    ax.set_ylabel("time per entry (us)")
    ax.set_title("tensordict: cost per entry against the number of entries")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
