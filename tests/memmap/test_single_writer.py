"""One writer per memory-mapped tree, checked: ``claim_writer`` / ``release_writer``.

Another writer is simulated by a claim file with another token (what a process on
another node leaves), and by real processes: a spawned one, and eight forked ones
racing to claim.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time

import pytest
import torch

from tensordict import TensorDict
from tensordict.cli._report import scan_folder
from tensordict.errors import ForeignWriterError, MemmapNotFoundError
from tensordict.memmap import claim_writer, release_writer
from tensordict.memmap import format as fmt

pytestmark = pytest.mark.timeout(60)


def _foreign_claim(folder) -> None:
    """The claim file another writer (another host) would have written."""
    record = {"host": "node7", "pid": 4242, "token": "not-ours"}
    (folder / fmt.WRITER_FILE).write_text(json.dumps(record))


def _tree(path):
    return TensorDict(a=torch.zeros(3), sub={"b": torch.ones(3)}, batch_size=[3]).memmap(path)


def test_the_writer_keeps_writing_after_its_claim(tmp_path):
    """The claiming process adds entries at every level; a second claim of its own is a no-op."""
    root = _tree(tmp_path / "t")
    claim_writer(tmp_path / "t")
    claim_writer(tmp_path / "t")
    root.make_memmap("c", (3,))
    root.make_memmap(("sub", "d"), (3,))
    again = TensorDict.load_memmap(tmp_path / "t")
    assert set(again.keys(True, True)) == {"a", "c", ("sub", "b"), ("sub", "d")}
    release_writer(tmp_path / "t")
    assert not (tmp_path / "t" / fmt.WRITER_FILE).exists()


def test_another_writer_is_refused_at_every_level(tmp_path):
    """Under another's claim, changes to the root and to a nested level raise, naming the writer."""
    root = _tree(tmp_path / "t")
    _foreign_claim(tmp_path / "t")
    with pytest.raises(ForeignWriterError, match=r"one writer, node7 \(pid 4242\)"):
        root.make_memmap("c", (3,))
    with pytest.raises(RuntimeError, match="this process is not it"):
        root.make_memmap(("sub", "d"), (3,))
    assert set(TensorDict.load_memmap(tmp_path / "t").keys(True, True)) == {"a", ("sub", "b")}


def test_claims_conflict_unless_forced(tmp_path):
    """A second writer cannot claim a claimed tree, nor release it; force takes the claim over."""
    _tree(tmp_path / "t")
    _foreign_claim(tmp_path / "t")
    with pytest.raises(ForeignWriterError, match="node7.*force=True"):
        claim_writer(tmp_path / "t")
    with pytest.raises(ForeignWriterError, match="not this process"):
        release_writer(tmp_path / "t")
    claim_writer(tmp_path / "t", force=True)
    TensorDict.load_memmap(tmp_path / "t").make_memmap("c", (3,))


def test_a_claim_needs_a_tree(tmp_path):
    """Claiming a folder without meta.json raises MemmapNotFoundError."""
    with pytest.raises(MemmapNotFoundError, match="holds no meta.json"):
        claim_writer(tmp_path)


def test_readers_and_verify_accept_the_claim_file(tmp_path):
    """The claim file is one of the format's own files: loading and scanning ignore it."""
    _tree(tmp_path / "t")
    claim_writer(tmp_path / "t")
    assert scan_folder(str(tmp_path / "t")).sound
    assert TensorDict.load_memmap(tmp_path / "t")["sub", "b"].tolist() == [1.0] * 3
    release_writer(tmp_path / "t")


def _write_from_another_process(path: str, out) -> None:
    try:
        TensorDict.load_memmap(path).make_memmap("intruder", (3,))
        out.put("written")
    except ForeignWriterError as err:
        out.put(f"refused: {err}")


def test_a_spawned_process_is_another_writer(tmp_path):
    """A process that did not claim (spawned, not forked from the writer) is refused."""
    _tree(tmp_path / "t")
    claim_writer(tmp_path / "t")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_write_from_another_process, args=(str(tmp_path / "t"), out))
    proc.start()
    try:
        assert out.get(timeout=50).startswith("refused: cannot change")
    finally:
        proc.join(10)
        release_writer(tmp_path / "t")


def _race_to_claim(path: str, barrier, out) -> None:
    """Claims ``path`` once the others are ready; a file created here stays empty for 50 ms.

    The pause after each creating ``open`` is what a slow or loaded file system does
    between creating a file and writing it: a claim must not be visible before it is whole.
    """
    os_open = os.open

    def slow_open(name, flags, *args, **kwargs):
        fd = os_open(name, flags, *args, **kwargs)
        if flags & os.O_CREAT:
            time.sleep(0.05)
        return fd

    os.open = slow_open
    try:
        barrier.wait(timeout=30)
        claim_writer(path)
        out.put(("won", os.getpid()))
    except ForeignWriterError as err:
        out.put(("refused", str(err)))
    except BaseException as err:  # reported, so that the parent fails with it
        out.put(("error", repr(err)))


@pytest.mark.parametrize("run", range(5))
def test_of_eight_processes_racing_to_claim_exactly_one_wins(tmp_path, run):
    """Eight processes claim one tree at the same moment: one wins, seven are refused, in every run."""
    _tree(tmp_path / "t")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(8)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_race_to_claim, args=(str(tmp_path / "t"), barrier, out))
        for _ in range(8)
    ]
    for proc in procs:
        proc.start()
    try:
        results = [out.get(timeout=50) for _ in procs]
    finally:
        for proc in procs:
            proc.join(10)
    assert [r for r in results if r[0] == "error"] == []
    winners = [pid for kind, pid in results if kind == "won"]
    assert len(winners) == 1, results
    record = json.loads((tmp_path / "t" / fmt.WRITER_FILE).read_text())
    assert record["pid"] == winners[0]  # the claim on disk is the winner's, whole
    assert not [p for p in (tmp_path / "t").iterdir() if p.name.startswith(fmt.TMP_PREFIX)]


@pytest.mark.parametrize("content", [b"", b"{not json", b"[]", b'{"host": "x"}'])
def test_a_damaged_claim_is_nobodys_until_forced(tmp_path, content):
    """An empty or garbage claim file never counts as this process's: claiming, writing and releasing
    raise naming the file; force=True replaces it, and the claimer then writes."""
    root = _tree(tmp_path / "t")
    claim = tmp_path / "t" / fmt.WRITER_FILE
    claim.write_bytes(content)
    where = re.escape(repr(str(claim)))
    with pytest.raises(ForeignWriterError, match=f"claim {where} is damaged.*force=True"):
        claim_writer(tmp_path / "t")
    with pytest.raises(ForeignWriterError, match=f"claim {where} is damaged"):
        root.make_memmap("c", (3,))
    with pytest.raises(ForeignWriterError, match=f"claim {where} is damaged"):
        release_writer(tmp_path / "t")
    assert claim.read_bytes() == content
    claim_writer(tmp_path / "t", force=True)
    assert json.loads(claim.read_text())["pid"] == os.getpid()
    root.make_memmap("c", (3,))
    assert "c" in TensorDict.load_memmap(tmp_path / "t").keys()
    release_writer(tmp_path / "t")
    assert not claim.exists()
