"""``map`` and ``map_iter``: a function over chunks of a tensordict, in worker processes.

The functions the workers run are defined at the top of this module, so that they
pickle by reference. Every call passes a ``generator`` (the reference warns without one).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, tensorclass
from tensordict._ops import parallel

pytestmark = pytest.mark.timeout(120)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def add_one(chunk):
    return chunk.empty().set("y", chunk["x"] + 1)


def returns_none(chunk):
    return None


def doubled_tensor(chunk):
    return chunk["x"] * 2


def leaf_origin(chunk):
    """Where the worker's chunk lives: the leaf's class and file, the lock, the batch size."""
    leaf = chunk["x"]
    return TensorDict(
        size=torch.tensor([chunk.batch_size[0]]),
        locked=torch.tensor([chunk.is_locked]),
        from_file=torch.tensor([getattr(leaf, "filename", None) is not None]),
        pid=torch.tensor([os.getpid()]),
        batch_size=[1],
    )


def draw(chunk):
    return torch.rand(1)


def threads(chunk):
    return torch.tensor([torch.get_num_threads()])


def pid_of(chunk):
    return torch.tensor([os.getpid()])


def sum_rows(chunk):
    return chunk.empty().set("s", chunk["x"].sum(-1))


@tensorclass
class Row:
    x: torch.Tensor


def make_td(n: int = 10) -> TensorDict:
    return TensorDict(x=torch.arange(float(n)), batch_size=[n])


# ---------------------------------------------------------------------- results
def test_map_concatenates_the_results_of_every_chunk():
    """map cuts along dim 0 into one chunk per worker and concatenates fn's results."""
    out = make_td().map(add_one, num_workers=2, generator=_gen())
    assert out.batch_size == (10,)
    assert torch.equal(out["y"], torch.arange(10.0) + 1)


@pytest.mark.parametrize(
    ("chunksize", "num_chunks"), [(3, None), (None, 4), (20, None), (None, 20)]
)
def test_map_with_chunksize_or_num_chunks(chunksize, num_chunks):
    """The result is the same however the tensordict is cut."""
    out = make_td().map(
        add_one, num_workers=2, chunksize=chunksize, num_chunks=num_chunks, generator=_gen()
    )
    assert torch.equal(out["y"], torch.arange(10.0) + 1)


def test_map_along_another_dim():
    """dim=1 cuts along the second batch dim, and the results are joined along it."""
    td = TensorDict(x=torch.arange(24.0).reshape(2, 12, 1), batch_size=[2, 12])
    out = td.map(sum_rows, dim=1, num_workers=2, chunksize=5, generator=_gen())
    assert out.batch_size == (2, 12)
    assert torch.equal(out["s"], td["x"].sum(-1))
    out = td.map(sum_rows, dim=-1, num_workers=2, generator=_gen())
    assert torch.equal(out["s"], td["x"].sum(-1))


def test_map_chunksize_zero_stacks_elements():
    """chunksize=0 sends the elements one by one and stacks the results."""
    td = TensorDict(x=torch.arange(6.0).reshape(3, 2), batch_size=[3, 2])
    out = td.map(add_one, dim=1, num_workers=2, chunksize=0, generator=_gen())
    assert out.batch_size == (3, 2)
    assert torch.equal(out["y"], td["x"] + 1)


def test_map_returns_none_when_fn_returns_none():
    """fn returning None for every chunk gives None."""
    assert make_td().map(returns_none, num_workers=2, generator=_gen()) is None


def test_map_concatenates_tensors():
    """A tensor result per chunk gives one concatenated tensor."""
    out = make_td().map(doubled_tensor, num_workers=2, chunksize=3, generator=_gen())
    assert torch.equal(out, torch.arange(10.0) * 2)


# differs from the reference: its chunksize=0 path stacks tensordicts only and fails on tensors
def test_map_chunksize_zero_stacks_tensors():
    """chunksize=0 with tensor results stacks them."""
    out = make_td(4).map(doubled_tensor, num_workers=2, chunksize=0, generator=_gen())
    assert torch.equal(out, torch.arange(4.0) * 2)


# differs from the reference: it raises ValueError from chunk(0) when there is nothing to cut
def test_map_on_an_empty_dim():
    """Nothing to cut: fn is never called and the result is None."""
    td = TensorDict(x=torch.zeros(0), batch_size=[0])
    assert td.map(add_one, num_workers=2, generator=_gen()) is None


# ---------------------------------------------------------------------- memory-mapped
def test_map_on_memmap_sends_file_backed_locked_chunks(tmp_path):
    """The workers get memory-mapped, locked chunks that read the tensordict's files."""
    td = make_td(8).memmap_(tmp_path / "td")
    out = td.map(leaf_origin, num_workers=2, chunksize=3, generator=_gen())
    assert out["size"].tolist() == [3, 3, 2]
    assert out["locked"].all()
    assert out["from_file"].all()
    assert not (out["pid"] == os.getpid()).any()


def test_map_on_memmap_computes_the_same(tmp_path):
    """map over a memory-mapped tensordict gives what fn over the whole gives."""
    td = make_td(50).memmap_(tmp_path / "td")
    out = td.map(add_one, num_workers=2, chunksize=7, generator=_gen())
    assert torch.equal(out["y"], torch.arange(50.0) + 1)


def test_map_into_a_memmap_out_is_written_by_the_workers(tmp_path):
    """A memory-mapped out is filled by the workers themselves and returned."""
    out = TensorDict(y=torch.zeros(10), batch_size=[10]).memmap_(tmp_path / "out")
    result = make_td().map(add_one, out=out, num_workers=2, chunksize=4, generator=_gen())
    assert result is out
    assert torch.equal(out["y"], torch.arange(10.0) + 1)


def test_map_into_a_shared_memory_out():
    """An out in shared memory is filled by the workers too."""
    out = TensorDict(y=torch.zeros(10), batch_size=[10]).share_memory_()
    result = make_td().map(add_one, out=out, num_workers=2, num_chunks=3, generator=_gen())
    assert result is out
    assert torch.equal(out["y"], torch.arange(10.0) + 1)


def test_map_into_an_in_memory_out_is_filled_here():
    """An ordinary out is filled in this process from the results, with chunksize=0 too."""
    out = TensorDict(y=torch.zeros(10), batch_size=[10])
    assert make_td().map(add_one, out=out, num_workers=2, chunksize=4, generator=_gen()) is out
    assert torch.equal(out["y"], torch.arange(10.0) + 1)
    out = TensorDict(y=torch.zeros(4), batch_size=[4])
    make_td(4).map(add_one, out=out, num_workers=2, chunksize=0, generator=_gen())
    assert torch.equal(out["y"], torch.arange(4.0) + 1)


# ---------------------------------------------------------------------- classes
def test_map_on_a_lazy_stack():
    """A lazy stack is cut along the stack dim and its results joined."""
    stack = LazyStackedTensorDict(*make_td(4).unbind(0))
    out = stack.map(add_one, num_workers=2, generator=_gen())
    assert out.batch_size == (4,)
    assert torch.equal(out["y"], torch.arange(4.0) + 1)


def doubled(chunk):
    return chunk.apply(lambda x: x * 2)


def test_map_on_a_tensorclass_gives_the_class():
    """A tensorclass maps its tensordict and wraps a tensordict result in its class."""
    rows = Row(x=torch.arange(4.0), batch_size=[4])
    out = rows.map(doubled, num_workers=2, generator=_gen())
    assert type(out) is Row
    assert torch.equal(out.x, torch.arange(4.0) * 2)
    assert torch.equal(rows.map(doubled_tensor, num_workers=2, generator=_gen()), out.x)


# ---------------------------------------------------------------------- workers
def test_map_seeds_worker_i_with_base_plus_i():
    """Each worker seeds torch with the base seed drawn from generator plus its id."""
    n = 6
    results = make_td(n).map(draw, num_workers=2, chunksize=1, generator=_gen(0))
    base = int(torch.empty((), dtype=torch.int64).random_(generator=_gen(0)))
    possible = set()
    for worker in range(2):
        torch.manual_seed(base + worker)
        possible.update(round(v, 6) for v in torch.rand(n).tolist())
    assert {round(v, 6) for v in results.tolist()} <= possible


def test_map_worker_threads():
    """worker_threads sets torch's thread count in every worker."""
    out = make_td(4).map(threads, num_workers=2, chunksize=1, worker_threads=2, generator=_gen())
    assert out.tolist() == [2, 2, 2, 2]


# differs from the reference: its replacement workers wait for a worker id that never comes
# (and results sent by retiring workers can be lost with their file descriptors)
def test_map_max_tasks_per_child_replaces_workers():
    """max_tasks_per_child=1 gives each chunk a new process, and every chunk is done."""
    out = make_td(6).map(
        pid_of, num_workers=2, chunksize=1, max_tasks_per_child=1, generator=_gen()
    )
    assert len(set(out.tolist())) == 6


def test_map_on_a_given_pool_leaves_it_open():
    """A pool passed in runs the chunks and is still usable afterwards."""
    with multiprocessing.get_context("fork").Pool(2) as pool:
        out = make_td().map(add_one, pool=pool, chunksize=3)
        assert torch.equal(out["y"], torch.arange(10.0) + 1)
        assert pool.apply(abs, (-3,)) == 3


def test_map_with_spawn_start_method():
    """Workers started with spawn import the function and the library themselves."""
    out = make_td(4).map(add_one, num_workers=1, mp_start_method="spawn", generator=_gen())
    assert torch.equal(out["y"], torch.arange(4.0) + 1)


def test_map_with_index_with_generator_and_pbar():
    """index_with_generator and pbar give the same result."""
    out = make_td().map(
        add_one, num_workers=2, chunksize=3, index_with_generator=True, pbar=True, generator=_gen()
    )
    assert torch.equal(out["y"], torch.arange(10.0) + 1)


@pytest.mark.parametrize("method", ["map", "map_iter"])
def test_pbar_without_tqdm_raises_before_any_work(monkeypatch, method):
    """pbar=True where tqdm cannot be imported raises ImportError naming the method and tqdm."""
    monkeypatch.setattr(parallel, "tqdm", None)
    td = make_td(4)
    with pytest.raises(ImportError, match=f"{method}: pbar=True.*tqdm is not installed"):
        result = getattr(td, method)(add_one, num_workers=1, pbar=True, generator=_gen())
        list(result)  # map_iter starts on the first item


def test_map_without_generator_warns():
    """Without a generator, map warns that every call seeds the workers alike."""
    with pytest.warns(FutureWarning, match="generator"):
        make_td(2).map(returns_none, num_workers=1)


# ---------------------------------------------------------------------- map_iter
def test_map_iter_yields_results_in_chunk_order():
    """map_iter yields one result per chunk, in the order of the chunks."""
    parts = list(make_td().map_iter(add_one, num_workers=2, chunksize=4, generator=_gen()))
    assert [p["y"].tolist() for p in parts] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]


def test_map_iter_without_index_with_generator():
    """index_with_generator=False cuts every chunk first and yields the same."""
    parts = list(
        make_td().map_iter(
            add_one, num_workers=2, num_chunks=2, index_with_generator=False, generator=_gen()
        )
    )
    assert [p["y"].tolist() for p in parts] == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]


def test_map_iter_shuffle_covers_every_element_once():
    """shuffle=True draws the chunks from a permutation: every element comes exactly once."""
    parts = list(
        make_td(20).map_iter(add_one, num_workers=2, chunksize=3, shuffle=True, generator=_gen())
    )
    values = sorted(v for part in parts for v in part["y"].tolist())
    assert values == [float(v) for v in range(1, 21)]


def test_map_iter_stopped_early_closes_its_pool():
    """Closing the iterator early ends its pool; a new call works."""
    iterator = make_td().map_iter(add_one, num_workers=2, chunksize=1, generator=_gen())
    first = next(iterator)
    iterator.close()
    assert first["y"].tolist() == [1.0]
    assert len(list(make_td(4).map_iter(add_one, num_workers=1, generator=_gen()))) == 1


# ---------------------------------------------------------------------- bad input
def test_map_refuses_a_function_that_does_not_pickle():
    """A lambda cannot reach the workers: pickle's error, raised before any worker starts."""
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        make_td().map(lambda chunk: chunk, num_workers=2, generator=_gen())


def test_map_refuses_a_dim_out_of_range():
    """A dim past the batch dims raises IndexError naming the dim."""
    with pytest.raises(IndexError, match="3"):
        make_td().map(add_one, dim=3, num_workers=2, generator=_gen())


def test_map_refuses_zero_workers():
    """num_workers=0 raises ValueError."""
    with pytest.raises(ValueError, match="at least 1|positive"):
        make_td().map(add_one, num_workers=0, generator=_gen())


# differs from the reference: it makes the pool (here: fails on the start method) first
def test_map_checks_its_arguments_before_starting_workers():
    """A bad chunking is refused before the pool is made (an unknown start method never comes up)."""
    with pytest.raises(ValueError, match="chunksize"):
        make_td().map(add_one, chunksize=-1, mp_start_method="bogus", generator=_gen())


def test_map_refuses_chunksize_with_num_chunks():
    """chunksize and num_chunks together raise ValueError."""
    with pytest.raises(ValueError, match="chunksize"):
        make_td().map(add_one, chunksize=2, num_chunks=2, num_workers=2, generator=_gen())


def test_map_iter_refuses_shuffle_without_index_with_generator():
    """shuffle needs index_with_generator: RuntimeError when iteration starts."""
    with pytest.raises(RuntimeError, match="index_with_generator|use_generator"):
        list(
            make_td().map_iter(
                add_one, shuffle=True, index_with_generator=False, num_workers=2, generator=_gen()
            )
        )


def test_map_on_a_tensorclass_refuses_a_result_with_other_fields():
    """A result with a key the class has no field for cannot be the class: ValueError naming it."""
    rows = Row(x=torch.arange(4.0), batch_size=[4])
    with pytest.raises(ValueError, match="'y'"):
        rows.map(add_one, num_workers=2, generator=_gen())


def killed_on_second_chunk(chunk):
    """Kills its own worker with SIGKILL on the chunk that starts at row 5 (the OOM killer's way)."""
    if int(chunk["x"][0]) == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk.empty().set("y", chunk["x"] + 1)


def _worker_pids_alive(pids) -> list:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


@pytest.mark.parametrize("method", ["map", "map_iter"])
def test_a_killed_worker_stops_the_call_naming_its_signal(method):
    """A worker killed mid-chunk raises WorkerDiedError (a RuntimeError) naming SIGKILL within
    seconds, instead of waiting forever for the lost chunk, and leaves no worker behind."""
    from tensordict.errors import WorkerDiedError

    td = TensorDict(x=torch.arange(10.0), batch_size=[10])
    before = {p.pid for p in multiprocessing.active_children()}
    start = time.monotonic()
    with pytest.raises(WorkerDiedError, match="SIGKILL") as info:
        if method == "map":
            td.map(killed_on_second_chunk, num_workers=2, chunksize=5, generator=_gen())
        else:
            list(td.map_iter(killed_on_second_chunk, num_workers=2, chunksize=5, generator=_gen()))
    assert isinstance(info.value, RuntimeError)
    assert time.monotonic() - start < 30
    left = [p for p in multiprocessing.active_children() if p.pid not in before]
    assert not _worker_pids_alive([p.pid for p in left])


def test_a_killed_worker_of_a_given_pool_stops_the_call_and_leaves_the_pool_open():
    """With the caller's pool, the call raises too; the pool stays open and still works."""
    from tensordict.errors import WorkerDiedError

    td = TensorDict(x=torch.arange(10.0), batch_size=[10])
    with multiprocessing.get_context("fork").Pool(2) as pool:
        with pytest.raises(WorkerDiedError, match="SIGKILL"):
            td.map(killed_on_second_chunk, pool=pool, chunksize=5)
        again = td.map(add_one, pool=pool, chunksize=5)
    assert again["y"].tolist() == [float(i + 1) for i in range(10)]


def test_workers_retired_by_max_tasks_are_not_taken_for_dead():
    """Workers replaced after max_tasks_per_child exit normally: the call completes."""
    td = TensorDict(x=torch.arange(12.0), batch_size=[12])
    out = td.map(add_one, num_workers=2, chunksize=1, max_tasks_per_child=1, generator=_gen())
    assert out["y"].tolist() == [float(i + 1) for i in range(12)]
