"""Tensordicts over ``torch.distributed``: real processes over gloo on this machine.

Each test spawns one job of 2 or 4 ranks (spawn start-up is the cost, so one job
checks many calls). The ranks meet in a file store under ``tmp_path``, every call
has a 30 s process-group timeout and the parent kills the job after a bounded
wait, so a failure never hangs the suite. Each rank writes ``ok`` or its traceback
to ``rank<i>.txt``; the parent asserts on every rank's file.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import signal
import time
import traceback
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tensordict import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    TensorDict,
    lazy_stack,
    tensorclass,
)
from tensordict.cli import _demo_shared
from tensordict.errors import (
    PeerFailedError,
    ProcessGroupNotInitializedError,
    StructureMismatchError,
    TransferTimeoutError,
)

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available"),
]


@tensorclass
class Frame:
    """A tensorclass defined at module level, so that other ranks import it."""

    obs: torch.Tensor
    reward: torch.Tensor


def _sample(scale: float = 1.0) -> TensorDict:
    """A tree with nested keys, several dtypes, a non-contiguous-free layout."""
    return TensorDict(
        {
            "obs": torch.arange(12.0).reshape(4, 3) * scale,
            "done": torch.tensor([True, False, True, False]),
            "nested": {
                "count": torch.arange(4) * int(scale),
                "half": torch.ones(4, 2, dtype=torch.float16) * scale,
            },
        },
        batch_size=[4],
    )


def _assert_same(actual, expected) -> None:
    assert set(actual.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert actual[key].dtype == expected[key].dtype, key
        # torch.equal, not torch.testing: its first call imports for seconds
        assert torch.equal(actual[key], expected[key]), key


def _entry(rank: int, world: int, store: str, backend: str, job: str, out: str) -> None:
    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            backend,
            init_method=store,
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=30),
        )
        globals()[job](rank, world, Path(out))
        dist.barrier()
        Path(out, f"rank{rank}.txt").write_text("ok")
    except BaseException:
        Path(out, f"rank{rank}.txt").write_text(traceback.format_exc())
    finally:
        # Pending sends of the mismatch job must not keep the process alive.
        os._exit(0)


def _spawn(job: str, world: int, tmp_path: Path, backend: str, wait: float) -> dict[int, str]:
    """Runs ``job(rank, world, tmp_path)`` in ``world`` spawned ranks; returns each rank's report."""
    ctx = multiprocessing.get_context("spawn")
    store = f"file://{tmp_path / 'store'}"
    procs = [
        ctx.Process(target=_entry, args=(r, world, store, backend, job, str(tmp_path)))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + wait
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    reports = {}
    for r in range(world):
        path = tmp_path / f"rank{r}.txt"
        reports[r] = path.read_text() if path.exists() else "no report (killed or crashed)"
    return reports


def _run(job: str, world: int, tmp_path: Path, backend: str = "gloo", wait: float = 90.0) -> None:
    """Runs ``job(rank, world, tmp_path)`` in ``world`` spawned ranks; fails with every rank's traceback."""
    reports = _spawn(job, world, tmp_path, backend, wait)
    failed = {r: text for r, text in reports.items() if text != "ok"}
    assert not failed, "\n".join(f"--- rank {r}:\n{text}" for r, text in failed.items())


# ====================================================================== the jobs (run in the ranks)
def job_tensordict_two_ranks(rank: int, world: int, tmp: Path) -> None:
    peer = 1 - rank
    # send / recv, per leaf
    if rank == 0:
        _sample(2.0).send(dst=1)
    else:
        td = _sample(0.0)
        last = td.recv(src=0)
        assert last == 3  # four leaves, tags 0..3
        _assert_same(td, _sample(2.0))
    # one packed message
    if rank == 0:
        _sample(3.0).send(dst=1, consolidated=True)
    else:
        td = _sample(0.0)
        assert td.recv(src=0, consolidated=True) is None
        _assert_same(td, _sample(3.0))
    # isend / irecv, both directions, pseudo-random tags, early return
    mine, theirs = _sample(float(rank + 1)), _sample(0.0)
    works = mine.isend(dst=peer, init_tag=50, pseudo_rand=True, return_early=True)
    got = theirs.irecv(src=peer, init_tag=50, pseudo_rand=True, return_premature=True)
    for work in works + got:
        work.wait()
    _assert_same(theirs, _sample(float(peer + 1)))
    # isend waits by default; irecv into a non-contiguous destination
    if rank == 0:
        assert _sample(5.0).isend(dst=1, consolidated=True) is None
        TensorDict(x=torch.arange(6.0).reshape(2, 3)).isend(dst=1)
    else:
        td = _sample(0.0)
        td.irecv(src=0, consolidated=True)
        _assert_same(td, _sample(5.0))
        base = torch.zeros(3, 2)
        dest = TensorDict(x=base.t())
        dest.irecv(src=0)
        assert torch.equal(base.t(), torch.arange(6.0).reshape(2, 3))
    # broadcast into an empty tensordict
    td = _sample(7.0) if rank == 0 else TensorDict()
    out = td.broadcast(src=0)
    _assert_same(out, _sample(7.0))
    assert out.batch_size == torch.Size([4])
    # all_reduce: sync, async, bucketed
    td = _sample(float(rank + 1))
    td.all_reduce()
    _assert_same(td, _sample(3.0))
    td = _sample(float(rank + 1))
    for work in td.all_reduce(op=dist.ReduceOp.MAX, async_op=True):
        work.wait()
    _assert_same(td, _sample(2.0))
    td = _sample(float(rank + 1))
    td.all_reduce(bucket_bytes=64)
    _assert_same(td, _sample(3.0))
    # reduce
    td = _sample(float(rank + 1))
    td.reduce(dst=0)
    if rank == 0:
        _assert_same(td, _sample(3.0))
    td = _sample(float(rank + 1))
    works = td.reduce(0, async_op=True, return_premature=True, bucket_bytes=1 << 20)
    for work in works:
        work.wait()
    if rank == 0:
        _assert_same(td, _sample(3.0))
    # all_gather: structures may differ
    local = TensorDict(a=torch.full((rank + 1,), float(rank)), batch_size=[rank + 1])
    tds = local.all_gather()
    assert [t.batch_size for t in tds] == [torch.Size([1]), torch.Size([2])]
    assert [t["a"].tolist() for t in tds] == [[0.0], [1.0, 1.0]]
    # gather_and_stack
    if rank == 0:
        out = TensorDict(a=torch.zeros(1, 3), batch_size=[1])
        assert out.gather_and_stack(dst=0) is out
        assert out["a"].tolist() == [[1.0, 1.0, 1.0]]
    else:
        assert TensorDict(a=torch.ones(3), batch_size=[3]).gather_and_stack(dst=0) is None
    # scatter
    parts = [TensorDict(a=torch.full((2,), float(i))) for i in range(world)] if rank == 0 else None
    mine = TensorDict().scatter(src=0, tensordicts=parts)
    assert mine["a"].tolist() == [float(rank)] * 2
    # init_remote / from_remote_init, then zero-copy packed transfers into the result
    if rank == 0:
        td = _sample(1.0)
        td.init_remote(dst=1)
        td.send(dst=1, consolidated=True)
        _sample(4.0).send(dst=1, consolidated=True)
    else:
        td = TensorDict.from_remote_init(src=0)
        _assert_same(td, _sample(1.0))
        assert td.batch_size == torch.Size([4])
        ptr = td["obs"].data_ptr()
        td.recv(src=0, consolidated=True)
        td.recv(src=0, consolidated=True)
        _assert_same(td, _sample(4.0))
        assert td["obs"].data_ptr() == ptr
    # with use_broadcast
    if rank == 0:
        _sample(6.0).init_remote(use_broadcast=True)
    else:
        _assert_same(TensorDict.from_remote_init(src=0, use_broadcast=True), _sample(6.0))
    # group_dst / group_src: ranks in a group, straight through its backend
    group = dist.new_group([0, 1])
    if rank == 0:
        _sample(2.5).send(group=group, group_dst=1, init_tag=7)
    else:
        td = _sample(0.0)
        td.recv(group=group, group_src=0, init_tag=7)
        _assert_same(td, _sample(2.5))


def job_four_ranks(rank: int, world: int, tmp: Path) -> None:
    td = _sample(float(rank))
    td.all_reduce()
    _assert_same(td, _sample(6.0))
    td = _sample(float(rank))
    td.reduce(dst=2)
    if rank == 2:
        _assert_same(td, _sample(6.0))
    out = (_sample(9.0) if rank == 3 else TensorDict()).broadcast(src=3)
    _assert_same(out, _sample(9.0))
    tds = TensorDict(r=torch.tensor(rank)).all_gather()
    assert [t["r"].item() for t in tds] == [0, 1, 2, 3]
    if rank == 1:
        out = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        out.gather_and_stack(dst=1)
        assert out["a"][:, 0].tolist() == [0.0, 2.0, 3.0]
    else:
        TensorDict(a=torch.full((2,), float(rank)), batch_size=[2]).gather_and_stack(dst=1)
    parts = [_sample(float(i)) for i in range(world)] if rank == 0 else None
    _assert_same(TensorDict().scatter(0, parts), _sample(float(rank)))
    # a ring: every rank sends to the next and receives from the previous
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    works = _sample(float(rank)).isend(dst=nxt, return_early=True)
    got = _sample(-1.0)
    got.recv(src=prev)
    for work in works:
        work.wait()
    _assert_same(got, _sample(float(prev)))


def job_other_classes(rank: int, world: int, tmp: Path) -> None:
    # lazy stacks: the members' leaves, member by member
    def stack(scale):
        return lazy_stack([_sample(scale)[0], _sample(scale)[1]], 0)

    if rank == 0:
        stack(2.0).send(dst=1)
    else:
        td = stack(0.0)
        td.recv(src=0)
        _assert_same(td, stack(2.0))
    td = stack(float(rank + 1))
    td.all_reduce()
    _assert_same(td, stack(3.0))
    td = stack(float(rank + 1))
    td.reduce(dst=1)
    if rank == 1:
        _assert_same(td, stack(3.0))
    # a lazy stack and a dense tensordict of the same keys and shapes meet in reduce
    td = stack(1.0) if rank else stack(2.0).contiguous()
    td.reduce(dst=1, async_op=True)
    if rank == 1:
        assert isinstance(td, LazyStackedTensorDict)
        _assert_same(td, stack(3.0))
    out = (stack(5.0) if rank == 0 else TensorDict()).broadcast(0)
    assert isinstance(out, LazyStackedTensorDict)
    _assert_same(out, stack(5.0))
    # tensorclass: send / recv, broadcast into a TensorDict, from_remote_init
    frame = Frame(obs=torch.full((2, 3), float(rank)), reward=torch.zeros(2, 1), batch_size=[2])
    if rank == 0:
        frame.send(dst=1)
    else:
        frame.recv(src=0)
        assert torch.equal(frame.obs, torch.zeros(2, 3))
    out = (frame if rank == 0 else TensorDict()).broadcast(src=0)
    assert isinstance(out, Frame) and torch.equal(out.obs, torch.zeros(2, 3))
    if rank == 0:
        frame.init_remote(dst=1)
        frame.init_remote(dst=1)
    else:
        got = Frame.from_remote_init(src=0)
        assert isinstance(got, Frame) and got.batch_size == torch.Size([2])
        got = TensorDict.from_remote_init(src=0)
        assert isinstance(got, Frame)
    # a memory-mapped destination gets the data in its files
    folder = tmp / "dest"
    if rank == 0:
        _sample(8.0).send(dst=1)
        _sample(9.0).send(dst=1, consolidated=True)
    else:
        dest = _sample(0.0).memmap(folder)
        assert dest.is_locked
        dest.recv(src=0)
        assert isinstance(dest["obs"], MemoryMappedTensor)
        _assert_same(TensorDict.load_memmap(folder), _sample(8.0))
        dest.recv(src=0, consolidated=True)
        _assert_same(TensorDict.load_memmap(folder), _sample(9.0))


def job_mismatch(rank: int, world: int, tmp: Path) -> None:
    cases = [
        (
            "keys",
            TensorDict(a=torch.zeros(3), b=torch.zeros(3)),
            TensorDict(a=torch.zeros(3), c=torch.zeros(3)),
            "'b'",
        ),
        (
            "shape",
            TensorDict(a=torch.zeros(3), b=torch.zeros(3)),
            TensorDict(a=torch.zeros(3), b=torch.zeros(4)),
            "shape",
        ),
        (
            "dtype",
            TensorDict(a=torch.zeros(3), b=torch.zeros(3)),
            TensorDict(a=torch.zeros(3), b=torch.zeros(3, dtype=torch.int64)),
            "dtype",
        ),
        (
            "count",
            TensorDict(a=torch.zeros(3)),
            TensorDict(a=torch.zeros(3), b=torch.zeros(3)),
            "'b'",
        ),
    ]
    pending = []  # a dropped Work cancels its transfer: keep them, never wait (no one receives)
    for i, (name, sent, here, expected) in enumerate(cases):
        if rank == 0:
            pending += sent.isend(dst=1, init_tag=1000 * (i + 1), return_early=True)
        else:
            with pytest.raises(StructureMismatchError, match=expected) as info:
                here.recv(src=0, init_tag=1000 * (i + 1))
            assert "first differing key" in str(info.value), (name, str(info.value))
        dist.barrier()
    if rank == 0:
        pending += TensorDict(a=torch.zeros(3)).isend(
            dst=1, init_tag=9000, return_early=True, consolidated=True
        )
    else:
        with pytest.raises(StructureMismatchError, match="consolidated"):
            TensorDict(a=torch.zeros(3)).recv(src=0, init_tag=9000)
    dist.barrier()
    # a standalone group on its own store, never registered: straight through its backend
    store = dist.FileStore(str(tmp / "raw_store"), 2)
    raw = dist.ProcessGroupGloo(store, rank, 2, datetime.timedelta(seconds=30))
    if rank == 0:
        _sample(1.5).send(group=raw, group_dst=1, consolidated=True)
    else:
        td = _sample(0.0)
        td.recv(group=raw, group_src=0, consolidated=True)
        _assert_same(td, _sample(1.5))


def _big(value: float) -> TensorDict:
    """Six leaves of 16 MB: a transfer long enough to be cut in the middle."""
    return TensorDict({f"k{i}": torch.full((4_000_000,), value) for i in range(6)})


def job_sender_killed(rank: int, world: int, tmp: Path) -> None:
    """Rank 0 starts sending to ranks 1 (one packed message) and 2 (per leaf), then dies."""
    td = _big(float(rank == 0))
    dist.barrier()  # every receive is posted at once: the bytes flow as soon as they are sent
    if rank == 0:
        td.isend(dst=1, return_early=True, consolidated=True)
        td.isend(dst=2, return_early=True)
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    dest = td
    start = time.monotonic()
    with pytest.raises(PeerFailedError, match="rank 0") as info:
        if rank == 1:
            dest.recv(src=0, consolidated=True)
        else:
            for work in dest.irecv(src=0, return_premature=True):
                work.wait()
    elapsed = time.monotonic() - start
    assert isinstance(info.value, RuntimeError)
    assert elapsed < 10, f"raised after {elapsed:.1f} s"
    if rank == 2:
        # every other pending receive of the call fails too, at once
        start = time.monotonic()
        with pytest.raises(PeerFailedError, match="rank 0"):
            dest.recv(src=0, init_tag=100)
        assert time.monotonic() - start < 10
    # no barrier: rank 0 is gone
    Path(tmp, f"rank{rank}.txt").write_text("ok")
    os._exit(0)


def job_wait_timeout(rank: int, world: int, tmp: Path) -> None:
    """96 MB are not in after 1 ms: wait(timeout) raises; gloo has then closed the connection."""
    td = _big(float(rank == 0))
    if rank == 0:
        works = td.isend(dst=1, return_early=True, consolidated=True)
    else:
        works = td.irecv(src=0, return_premature=True, consolidated=True)
        with pytest.raises(TransferTimeoutError, match="rank 0"):
            works[0].wait(timeout=0.001)
        with pytest.raises(PeerFailedError, match="rank 0"):
            works[0].wait()
    Path(tmp, f"rank{rank}.txt").write_text("ok")
    os._exit(0)  # no barrier: the connection between the two ranks is closed


def job_nccl(rank: int, world: int, tmp: Path) -> None:  # pragma: no cover - needs GPUs
    """The leaves live on each rank's GPU; headers and buffers go there too."""
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    td = _sample(float(rank + 1)).to(device)
    td.all_reduce()
    _assert_same(td, _sample(3.0).to(device))
    if rank == 0:
        _sample(2.0).to(device).send(dst=1)
        _sample(4.0).to(device).send(dst=1, consolidated=True)
    elif rank == 1:
        td = _sample(0.0).to(device)
        td.recv(src=0)
        _assert_same(td, _sample(2.0).to(device))
        td.recv(src=0, consolidated=True)
        _assert_same(td, _sample(4.0).to(device))
    out = (_sample(5.0).to(device) if rank == 0 else TensorDict()).broadcast(0, device=device)
    _assert_same(out, _sample(5.0).to(device))


# ====================================================================== the tests (run in pytest)
def test_calls_before_init_process_group_raise_a_clear_error():
    """Without a process group each method raises a RuntimeError saying to call init_process_group."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    calls = {
        "send": lambda: td.send(dst=1),
        "recv": lambda: td.recv(src=0),
        "isend": lambda: td.isend(dst=1),
        "irecv": lambda: td.irecv(src=0),
        "broadcast": lambda: td.broadcast(0),
        "all_reduce": td.all_reduce,
        "reduce": lambda: td.reduce(0),
        "all_gather": td.all_gather,
        "gather_and_stack": lambda: td.gather_and_stack(0),
        "scatter": lambda: td.scatter(0),
        "init_remote": lambda: td.init_remote(dst=1),
        "from_remote_init": lambda: TensorDict.from_remote_init(0),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=f"{name}\\(\\).*init_process_group"):
            call()
    with pytest.raises(ProcessGroupNotInitializedError):
        Frame(obs=torch.zeros(1), reward=torch.zeros(1), batch_size=[1]).send(dst=1)


def test_peer_arguments_are_checked_first():
    """dst and group_dst are exclusive, and one of them is required (ValueError, as torch does)."""
    td = TensorDict(a=torch.zeros(3))
    with pytest.raises(ValueError, match="Exactly one"):
        td.send()
    with pytest.raises(ValueError, match="requires `group`"):
        td.recv(group_src=0)


def test_ucx_pipes_are_not_supported():
    """asend and arecv raise NotImplementedError pointing at send/recv."""
    with pytest.raises(NotImplementedError, match="send"):
        TensorDict().asend(None)
    with pytest.raises(NotImplementedError, match="recv"):
        TensorDict().arecv(None)


def test_two_ranks_every_call_on_a_tensordict(tmp_path):
    """send/recv, isend/irecv, broadcast, all_reduce, reduce, all_gather, gather_and_stack, scatter, init_remote."""
    _run("job_tensordict_two_ranks", 2, tmp_path)


def test_four_ranks(tmp_path):
    """The collectives and a send ring between 4 ranks."""
    _run("job_four_ranks", 4, tmp_path)


def test_lazy_stack_tensorclass_and_memmap_destination(tmp_path):
    """Lazy stacks and tensorclasses travel as their classes; a memory-mapped receiver writes its files."""
    _run("job_other_classes", 2, tmp_path)


def test_structure_mismatch_raises_on_the_receiver(tmp_path):
    """Other keys, shapes, dtypes, leaf counts or modes raise naming the first difference, not hang."""
    _run("job_mismatch", 2, tmp_path)


def test_a_receiver_whose_sender_dies_raises_within_seconds(tmp_path):
    """recv and irecv raise PeerFailedError naming the sender's rank within seconds of its death
    (the process group's timeout is 30 s; a cut packed message used to wait for ever)."""
    reports = _spawn("job_sender_killed", 3, tmp_path, "gloo", wait=40.0)
    assert reports[1] == "ok", reports[1]
    assert reports[2] == "ok", reports[2]


def test_wait_with_a_timeout(tmp_path):
    """A Work of irecv takes wait(timeout): TransferTimeoutError naming the rank, then PeerFailedError."""
    reports = _spawn("job_wait_timeout", 2, tmp_path, "gloo", wait=40.0)
    assert reports[1] == "ok", reports[1]


def test_a_folder_shared_by_ranks(tmp_path, capsys):
    """``tensordict demo --shared``: rank 0 grows a memory-mapped folder (make_memmap and
    make_memmap_from_storage) and broadcasts refresh messages; the reader refreshes and checks
    every entry (the demo raises if one reads other values)."""
    assert _demo_shared.run(ranks=2, steps=3, rows=300, folder=str(tmp_path)) == 0
    assert "1 reader refreshed and checked every entry" in capsys.readouterr().out
    td = TensorDict.load_memmap(tmp_path / _demo_shared.FOLDER)
    assert sorted(td.keys()) == ["chunk0", "chunk1", "chunk2", "step"]
    assert td["chunk1"].shape == torch.Size([100, _demo_shared.FEATURES])


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="nccl needs 2 GPUs"
)
def test_nccl_two_ranks(tmp_path):  # pragma: no cover - no GPU here
    """all_reduce, send/recv (per leaf and packed) and broadcast of GPU leaves over nccl."""
    _run("job_nccl", 2, tmp_path, backend="nccl")


# ====================================================================== in-process: the wire formats
def test_a_tree_rebuilds_from_its_packed_form():
    """Classes, batch sizes, names, non-tensor entries and every leaf survive _serialize/_deserialize."""
    from tensordict._ops import _packed as packed

    inner = TensorDict(x=torch.arange(6).reshape(2, 3), label="two", batch_size=[2], names=["n"])
    frame = Frame(obs=torch.ones(2, 3), reward=torch.zeros(2, 1), batch_size=[2])
    td = TensorDict(
        inner=inner,
        frame=frame,
        stack=lazy_stack([_sample(1.0)[0], _sample(2.0)[0]], 0),
        flag=torch.tensor([True, False]),
        batch_size=[2],
    )
    meta, buffer, own = packed.serialize(td)
    assert not own and buffer.dtype == torch.uint8
    out = packed.deserialize(meta, buffer)
    assert isinstance(out["frame"], Frame)
    assert isinstance(out["stack"], LazyStackedTensorDict)
    assert out["inner"].names == ["n"] and out["inner", "label"] == "two"
    for key in td.keys(True, True):
        assert torch.equal(out[key], td[key]), key
    # the rebuilt leaves are views of the buffer: packing it again copies nothing
    assert packed.serialize(out)[2]


def test_a_mismatch_names_the_first_differing_key():
    """The receiver's message names the key and says what differs."""
    from tensordict._ops import distributed as wire

    def desc(td):
        return wire._description(wire._leaves(td))

    here = desc(TensorDict(a=torch.zeros(3), b={"c": torch.zeros(2)}))
    sent = desc(TensorDict(a=torch.zeros(3), b={"c": torch.zeros(2, dtype=torch.int32)}))
    assert "('b', 'c'): dtype int32 sent, float32 here" in wire._first_difference(here, sent)
    sent = desc(TensorDict(a=torch.zeros(4), b={"c": torch.zeros(2)}))
    assert "('a',): shape [4] sent, [3] here" in wire._first_difference(here, sent)
    assert "unknown" in wire._first_difference(here, None)


def test_the_description_names_its_classes_and_imports_none():
    """Classes travel by their registered names: a name that is not registered raises, unimported."""
    import pickle

    from tensordict import MetaData, NonTensorStack
    from tensordict._ops import _packed as packed
    from tensordict.errors import ConsolidatedFormatError

    frame = Frame(obs=torch.ones(2, 3), reward=torch.zeros(2, 1), batch_size=[2])
    td = TensorDict(
        frame=frame,
        meta=MetaData("m", batch_size=[2]),
        words=NonTensorStack("a", "b"),
        batch_size=[2],
    )
    meta, buffer, _ = packed.serialize(td)
    assert meta["tree"]["frame"]["cls"] == str(Frame)
    out = packed.deserialize(pickle.loads(pickle.dumps(meta)), buffer)
    assert isinstance(out["frame"], Frame)
    assert type(out.get("meta")) is MetaData and out["words"] == ["a", "b"]
    meta["tree"]["frame"]["cls"] = "<class 'collections.OrderedDict'>"
    with pytest.raises(ConsolidatedFormatError, match="collections.OrderedDict"):
        packed.deserialize(meta, buffer)
