"""Soak run: writer and reader processes on one memory-mapped folder, for a while.

Writers each load the folder and keep adding entries (``make_memmap``, with an
occasional ``memmap_()`` of a key set in memory, and an occasional attempt at a key
another writer may add at the same time); readers keep calling
``memmap_refresh_()`` and check every entry they see against the value its writer
put there. At the end the folder is loaded once more and every entry a writer
reported is looked for. It prints entries written, refreshes done, entries
verified and entries lost (lost must be 0).

    python benchmarks/soak.py --writers 4 --readers 4 --seconds 120
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tensordict import TensorDict  # noqa: E402 - after the checkout is on the path
from tensordict.errors import EntryExistsError  # noqa: E402


def _value(writer: int, n: int) -> float:
    return float(writer * 1_000_000 + n)


def _writer(folder: str, writer: int, stop_at: float, results) -> None:
    td = TensorDict.load_memmap(folder)
    written, races = [], 0
    n = 0
    while time.time() < stop_at:
        key = f"w{writer}_{n}"
        if n % 10 == 5:
            td.unlock_()
            td[key] = torch.full((4,), _value(writer, n))
            td.memmap_()  # only the new key is written
        else:
            td.make_memmap(key, (4,)).fill_(_value(writer, n))
        written.append(key)
        if n % 25 == 0:  # every writer tries the same key: one wins, the others are told
            try:
                td.make_memmap(f"race{n}", (4,)).fill_(_value(writer, n))
            except EntryExistsError:
                races += 1
        n += 1
    results.put(("writer", writer, written, races))


def _reader(folder: str, stop_at: float, results) -> None:
    td = TensorDict.load_memmap(folder)
    refreshes, verified, wrong = 0, set(), []
    while time.time() < stop_at:
        td.memmap_refresh_()
        refreshes += 1
        for key in list(td.keys()):
            if not key.startswith("w") or key in verified:
                continue
            writer, n = (int(part) for part in key[1:].split("_"))
            value = td.get(key)
            # A new entry may still read zeros, or partly zeros: its writer fills it
            # (fill_, not atomic) after adding it. Any other element is wrong.
            expected = value == _value(writer, n)
            if bool(expected.all()):
                verified.add(key)
            elif not bool((expected | (value == 0)).all()):
                wrong.append(key)
    results.put(("reader", refreshes, len(verified), wrong))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--dir", help="parent of the folder (default: /dev/shm or the temp folder)")
    args = parser.parse_args(argv)
    parent = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    root = tempfile.mkdtemp(prefix="tensordict-soak-", dir=parent)
    folder = os.path.join(root, "folder")
    try:
        TensorDict({}, [4]).memmap(folder)
        ctx = mp.get_context("spawn")
        results = ctx.Queue()
        stop_at = time.time() + args.seconds + 5  # process start-up included
        procs = [
            ctx.Process(target=_writer, args=(folder, w, stop_at, results))
            for w in range(args.writers)
        ]
        procs += [
            ctx.Process(target=_reader, args=(folder, stop_at, results))
            for _ in range(args.readers)
        ]
        for p in procs:
            p.start()
        reports = [results.get(timeout=args.seconds + 300) for _ in procs]
        for p in procs:
            p.join(60)
        written = [k for r in reports if r[0] == "writer" for k in r[2]]
        races = sum(r[3] for r in reports if r[0] == "writer")
        refreshes = sum(r[1] for r in reports if r[0] == "reader")
        verified = sum(r[2] for r in reports if r[0] == "reader")
        wrong = [k for r in reports if r[0] == "reader" for k in r[3]]
        final = TensorDict.load_memmap(folder)
        lost = [k for k in written if k not in final.keys()]
        bad = [
            k
            for k in written
            if k in final.keys()
            and not bool((final.get(k) == _value(*map(int, k[1:].split("_")))).all())
        ]
        race_keys = [k for k in final.keys() if k.startswith("race")]
        print(f"soak: {args.writers} writers, {args.readers} readers, {args.seconds:.0f} s")
        print(f"  entries written   {len(written):,}")
        print(
            f"  key races         {len(race_keys)} keys, {races} refused as taken (one writer won each)"
        )
        print(f"  refreshes done    {refreshes:,}")
        print(f"  entries verified  {verified:,} (by the readers, each reader counting its own)")
        print(f"  wrong values      {len(wrong) + len(bad)}")
        print(f"  entries lost      {len(lost)}")
        return 0 if not lost and not wrong and not bad else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
