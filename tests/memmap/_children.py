"""Functions run in spawned child processes by the memmap tests (importable by the child)."""

from __future__ import annotations

import traceback


def _report_errors(results, body) -> None:
    """Runs ``body()``; an exception goes to ``results`` as ("error", traceback) instead of dying silently."""
    try:
        body()
    except BaseException:
        results.put(("error", traceback.format_exc()))
        raise


def add_entries(folder: str, prefix: str, count: int, barrier, results, memmap_=False) -> None:
    """Loads ``folder``, waits for the other writers, then adds ``count`` entries with make_memmap.

    Entry ``f"{prefix}{i}"`` is filled with ``i`` so that the parent can check the data too.
    With ``memmap_`` the loaded tensordict is memmap_()-ed first, and again after each entry.
    """

    def body() -> None:
        from tensordict import TensorDict

        td = TensorDict.load_memmap(folder)
        if memmap_:
            td.memmap_()
        barrier.wait(timeout=120)
        for i in range(count):
            td.make_memmap(f"{prefix}{i}", (3,)).fill_(i)
            if memmap_:
                td.memmap_()
        results.put(("done", prefix))

    _report_errors(results, body)


def watch_folder(folder: str, commands, results) -> None:
    """Loads ``folder`` and answers the parent's commands about what it sees.

    Commands (from ``commands``): ``("keys",)`` reports the sorted nested leaf keys;
    ``("refresh",)`` calls memmap_refresh_() and reports the keys, whether the
    tensordict kept its identity, and the sub-tensordict identity; ``("values", keys)``
    reports each key's values as a list; ``("stop",)`` ends.
    """

    def body() -> None:
        from tensordict import TensorDict

        td = TensorDict.load_memmap(folder)
        ident = id(td)
        results.put(("loaded", sorted(map(str, td.keys(True, True)))))
        while True:
            command = commands.get()
            if command[0] == "stop":
                return
            if command[0] == "keys":
                results.put(("keys", sorted(map(str, td.keys(True, True)))))
            elif command[0] == "refresh":
                sub_before = td.get("sub", None)
                out = td.memmap_refresh_()
                same_sub = sub_before is None or td.get("sub") is sub_before
                results.put(
                    (
                        "refreshed",
                        sorted(map(str, td.keys(True, True))),
                        out is td and id(td) == ident,
                        same_sub,
                        td.is_memmap(),
                    )
                )
            elif command[0] == "values":
                results.put(("values", {str(k): td.get(k).tolist() for k in command[1]}))

    _report_errors(results, body)


def write_received(queue, results) -> None:
    """Receives memory-mapped tensordicts from ``queue`` and writes into each one.

    For each received tensordict: reports whether it is memory-mapped and its
    saved_path, writes 42 into ``a[0]`` and 7 into ``("sub", "b")[1]``, then reports
    "written". Stops on ``None``.
    """

    def body() -> None:
        while True:
            td = queue.get()
            if td is None:
                return
            state = (td.is_memmap(), td.saved_path)
            td["a"][0] = 42
            td["sub", "b"][1] = 7
            results.put(("written", state))

    _report_errors(results, body)


def rewrite_times(folder: str, value: float, times: int, barrier, results) -> None:
    """Waits for the other process, then memmap(folder) ``times`` times with every entry ``value``."""

    def body() -> None:
        import torch

        from tensordict import TensorDict

        barrier.wait(timeout=120)
        for _ in range(times):
            TensorDict({f"k{i}": torch.full((8,), value) for i in range(30)}, [8]).memmap(folder)
        results.put(("done", value))

    _report_errors(results, body)


def create_in_new_levels(folder: str, me: int, rounds: int, barrier, results) -> None:
    """Loads ``folder``; each round, at the same moment as the other writer, adds ``("g<round>", "w<me>")``.

    Even rounds use make_memmap_from_storage (with a storage on the entry's file), odd
    rounds make_memmap, so that both create the new sub-tensordict ``g<round>`` at once.
    """

    def body() -> None:
        import os

        from tensordict import MemoryMappedTensor, TensorDict

        td = TensorDict.load_memmap(folder)
        for round_ in range(rounds):
            barrier.wait(timeout=120)
            key = (f"g{round_}", f"w{me}")
            if round_ % 2:
                td.make_memmap(key, (3,)).fill_(me)
                continue
            path = os.path.join(folder, key[0], f"{key[1]}.memmap")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            storage = MemoryMappedTensor.full((3,), me, filename=path).untyped_storage()
            td.make_memmap_from_storage(key, storage, (3,))
        results.put(("done", me))

    _report_errors(results, body)


def write_non_tensor_rows(td) -> None:
    """Writes the value 3 at the odd rows of the non-tensor entry "val" of ``td`` (a NonTensorStack)."""
    from tensordict import NonTensorData, TensorDict

    td[1::2] = TensorDict({"val": NonTensorData(data=3, batch_size=[5])}, [5])
