"""consolidate, is_consolidated, from_consolidated, and the pickling of consolidated tensordicts.

Differential: every test also runs under the reference (from inside tests/), except those
marked ``ours_only`` with a comment saying how the reference differs.
"""

from __future__ import annotations

import importlib.util
import io
import json
import pickle
import warnings
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    tensorclass,
)

from conftest import CASES

UNDER_REFERENCE = "site-packages" in tensordict.__file__
ours_only = pytest.mark.skipif(UNDER_REFERENCE, reason="behaviour beyond the reference's")

FILES = Path(__file__).resolve().parent / "fixtures" / "reference-0.15.3-consolidated"
_spec = importlib.util.spec_from_file_location("consolidated_cases", FILES / "generate.py")
generated = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generated)


@tensorclass
class Point:
    xy: torch.Tensor
    tag: str = "p"


# ---------------------------------------------------------------------- helpers
def leaves(obj, prefix=()) -> dict:
    """Key -> tensor, or -> the value list of a non-tensor entry, over the whole tree."""
    out = {}
    if getattr(type(obj), "_is_tensorclass", False):
        obj = obj._tensordict
    if isinstance(obj, LazyStackedTensorDict) and not isinstance(obj, NonTensorStack):
        for i, member in enumerate(obj.tensordicts):
            out.update(leaves(member, (*prefix, str(i))))
        return out
    for key, value in obj.items():
        key = (*prefix, key)
        if isinstance(value, torch.Tensor):
            out[key] = value
        elif isinstance(value, NonTensorStack):
            out[key] = value.tolist()
        elif isinstance(value, NonTensorData):
            out[key] = value.data
        else:
            out.update(leaves(value, key))
    return out


def assert_same_tree(got, expected) -> None:
    got_leaves, expected_leaves = leaves(got), leaves(expected)
    assert sorted(got_leaves) == sorted(expected_leaves)  # a rebuilt level lists its leaves first
    for key, value in expected_leaves.items():
        other = got_leaves[key]
        if isinstance(value, torch.Tensor) and value.is_nested:
            assert other.is_nested
            assert all(torch.equal(a, b) for a, b in zip(other.unbind(), value.unbind()))
        elif isinstance(value, torch.Tensor):
            assert other.dtype == value.dtype and other.shape == value.shape, key
            assert torch.equal(other, value), key
        else:
            assert other == value, key
    assert got.batch_size == expected.batch_size


def storages(obj) -> set:
    """The data pointers of the storages of every tensor leaf (of a nested tensor's parts)."""
    out = set()
    for value in leaves(obj).values():
        if isinstance(value, torch.Tensor):
            value = value.values() if value.is_nested else value
            out.add(value.untyped_storage().data_ptr())
    return out


def sample() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(6.0).reshape(3, 2),
            "i": torch.arange(3, dtype=torch.int8),
            "s": NonTensorData("hello", batch_size=[3]),
            "n": {"b": torch.ones(3, 1, dtype=torch.float64), "m": {"c": torch.zeros(3)}},
        },
        batch_size=[3],
    )


def build_tree(kind: str):
    if kind == "tensordict":
        return sample()
    if kind == "lazy":
        return lazy_stack(
            [TensorDict(a=torch.zeros(2), b={"c": torch.arange(3)}) for _ in range(2)]
        )
    if kind == "tensorclass":
        return Point(xy=torch.arange(4.0).reshape(2, 2), tag="q", batch_size=[2])
    if kind == "nested":
        return TensorDict({"x": {"y": {"z": torch.ones(2, 3)}}, "w": torch.zeros(2)}, [2])
    if kind == "non_tensor_stack":
        return NonTensorStack("a", "b", "c")
    if kind == "lazy_dim1":
        return lazy_stack(
            [TensorDict(a=torch.full((3, 2), float(i)), batch_size=[3]) for i in range(2)], 1
        )
    if kind == "non_tensor":
        return TensorDict(
            x=torch.zeros(2),
            s=NonTensorData("v", batch_size=[2]),
            ns=NonTensorStack("a", "b"),
            batch_size=[2],
        )
    raise AssertionError(kind)


KINDS = (
    "tensordict",
    "lazy",
    "lazy_dim1",
    "tensorclass",
    "nested",
    "non_tensor",
    "non_tensor_stack",
)


# ---------------------------------------------------------------------- the reference's files
@pytest.mark.parametrize("case", list(generated.CASES))
def test_reference_file_loads(case):
    """Each file the reference wrote loads, consolidated, with the tree it was written from."""
    loaded = TensorDict.from_consolidated(FILES / f"{case}.bin")
    expected = generated.CASES[case]()
    assert type(loaded) is type(expected)
    assert_same_tree(loaded, expected)
    assert loaded.is_consolidated()
    assert len(storages(loaded)) <= 1


@pytest.mark.parametrize("case", list(generated.CASES))
def test_written_file_is_the_reference_bytes(case, tmp_path):
    """The file written for a case's tree holds exactly the bytes the reference wrote."""
    path = tmp_path / f"{case}.bin"
    generated.CASES[case]().consolidate(filename=path)
    assert path.read_bytes() == (FILES / f"{case}.bin").read_bytes()


def test_file_layout_is_data_then_json_then_its_size(tmp_path):
    """The file is the padded leaves, the JSON metadata, and its size as a little-endian int64."""
    path = tmp_path / "td.bin"
    TensorDict(a=torch.tensor([1, 2, 3], dtype=torch.int8), batch_size=[3]).consolidate(
        filename=path
    )
    raw = path.read_bytes()
    size = int.from_bytes(raw[-8:], "little")
    assert raw[:8] == bytes([1, 2, 3, 0, 0, 0, 0, 0])
    assert len(raw) == 8 + size + 8
    assert raw[8:-8] == (
        b'{"cls": "TensorDict", "non_tensors": {}, "leaves": {"a": ["torch.int8", [3], 0, 8, 5]}, '
        b'"cls_metadata": {"device": null, "names": [null], "batch_size": [3], "is_locked": false}}'
    )


def test_module_function_reads_the_file(tmp_path):
    """tensordict.from_consolidated is TensorDict.from_consolidated."""
    path = tmp_path / "td.bin"
    sample().consolidate(filename=path)
    assert_same_tree(tensordict.from_consolidated(path), sample())


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("case", CASES)
def test_memmap_fixtures_round_trip(case, fixture_copy, fixture_classes, tmp_path):
    """Each memory-mapped reference case consolidates, in memory and to a file, to the same tree."""
    loaded = tensordict.load_memmap(fixture_copy(case))
    if case == "nested_tensor":
        # a memory-mapped nested tensor loads strided; only jagged ones are consolidated
        with pytest.raises(NotImplementedError, match="layout=torch.jagged"):
            loaded.consolidate()
        return
    in_memory = loaded.consolidate()
    assert_same_tree(in_memory, loaded)
    assert in_memory.is_consolidated() and not in_memory.is_memmap()
    assert len(storages(in_memory)) <= 1
    path = tmp_path / f"{case}.bin"
    loaded.consolidate(filename=path)
    back = type(loaded).from_consolidated(path)
    assert_same_tree(back, loaded)
    assert type(back) is type(loaded)


@pytest.mark.parametrize("kind", KINDS)
def test_every_class_consolidates_into_one_storage(kind):
    """Each kind of tree comes back of its class, equal, locked, its leaves in one storage."""
    tree = build_tree(kind)
    out = tree.consolidate()
    assert type(out) is type(tree)
    assert_same_tree(out, tree)
    assert out.is_consolidated()
    assert out.is_locked or kind == "non_tensor_stack"  # a NonTensorStack never locks
    assert len(storages(out)) == (0 if kind == "non_tensor_stack" else 1)
    assert storages(out).isdisjoint(storages(tree))


@pytest.mark.parametrize("kind", KINDS)
def test_every_class_round_trips_through_a_file(kind, tmp_path):
    """Each kind of tree written to a file reads back equal (a tensorclass through its class)."""
    tree = build_tree(kind)
    path = tmp_path / "tree.bin"
    out = tree.consolidate(filename=path)
    assert out.is_consolidated()
    back = type(tree).from_consolidated(path)
    assert type(back) is type(tree)
    assert_same_tree(back, tree)


@pytest.mark.parametrize("kind", KINDS)
def test_every_class_pickles_back_consolidated(kind):
    """An unpickled consolidated tree is equal, consolidated, unlocked, in one storage."""
    out = build_tree(kind).consolidate()
    back = pickle.loads(pickle.dumps(out))
    assert_same_tree(back, out)
    assert back.is_consolidated()
    # the lock of a NonTensorStack differs between implementations (ours never locks)
    assert kind == "non_tensor_stack" or not back.is_locked
    assert len(storages(back)) == (0 if kind == "non_tensor_stack" else 1)


def test_a_tensorclass_entry_comes_back_as_its_class(tmp_path):
    """A tensorclass inside a tensordict is rebuilt as that class from a file and a pickle."""
    td = TensorDict(p=Point(xy=torch.zeros(2, 2), batch_size=[2]), batch_size=[2])
    path = tmp_path / "td.bin"
    out = td.consolidate(filename=path)
    assert type(TensorDict.from_consolidated(path)["p"]) is Point
    assert type(pickle.loads(pickle.dumps(out))["p"]) is Point


def test_a_stack_of_tensorclass_instances_is_described_as_a_stack():
    """lazy_stack of tensorclass instances is described as a stack level of that class."""
    stacked = lazy_stack([Point(xy=torch.zeros(2)), Point(xy=torch.ones(3))])
    out = TensorDict(p=stacked, batch_size=[2]).consolidate()
    level = out._consolidated["metadata"]["p"]
    assert level["cls"] is Point
    assert level["cls_metadata"] == {"stack_dim": 0, "stack_dim_name": None, "is_locked": False}
    assert sorted(
        k for k in level if k not in ("cls", "non_tensors", "leaves", "cls_metadata")
    ) == [
        "0",
        "1",
    ]


# differs from the reference: it describes the tree the same, but cannot rebuild it (its
# tensorclass rebuild passes stack_dim on to a TensorDict)
@ours_only
def test_a_stack_of_tensorclass_instances_comes_back_as_the_class(tmp_path):
    """The class over a lazy stack comes back as such from a pickle and from a file."""
    stacked = lazy_stack([Point(xy=torch.zeros(2)), Point(xy=torch.ones(3))])
    out = TensorDict(p=stacked, batch_size=[2]).consolidate(filename=tmp_path / "td.bin")
    for back in (
        pickle.loads(pickle.dumps(out)),
        TensorDict.from_consolidated(tmp_path / "td.bin"),
    ):
        assert type(back["p"]) is Point
        assert isinstance(back["p"]._tensordict, LazyStackedTensorDict)
        assert torch.equal(back["p"][1].xy, torch.ones(3))
        assert back.is_consolidated()


def test_a_jagged_nested_tensor_is_consolidated(tmp_path):
    """A jagged leaf is stored as its values and offsets, and comes back with its components."""
    nt = torch.nested.nested_tensor([torch.arange(3.0), torch.arange(5.0)], layout=torch.jagged)
    td = TensorDict(nt=nt, batch_size=[2])
    td.consolidate(filename=tmp_path / "td.bin")
    for out in (td.consolidate(), TensorDict.from_consolidated(tmp_path / "td.bin")):
        got = out["nt"]
        assert got.is_nested
        assert [c.tolist() for c in got.unbind()] == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0, 4.0]]


def _jagged_sample() -> TensorDict:
    """A tensordict holding one jagged leaf with offsets only and one with lengths too."""
    offsets = torch.tensor([0, 2, 5, 8, 10])
    return TensorDict(
        a=torch.zeros(4, 3),
        njt=torch.nested.nested_tensor_from_jagged(torch.arange(10), offsets=offsets.clone()),
        njt_lengths=torch.nested.nested_tensor_from_jagged(
            torch.arange(10), offsets=offsets.clone(), lengths=torch.tensor([2, 3, 3, 2])
        ),
        batch_size=[4],
    )


@pytest.mark.parametrize("num_threads", [0, 4])
def test_jagged_leaves_keep_values_offsets_and_lengths(tmp_path, num_threads):
    """Consolidated (in memory or to a file), pickled, read back or moved, each jagged leaf is a
    jagged nested tensor with the values, offsets, lengths and ragged dim of the original."""
    td = _jagged_sample()
    path = tmp_path / "td.bin"
    in_file = td.consolidate(filename=path, num_threads=num_threads)
    in_memory = td.consolidate(num_threads=num_threads)
    outs = (
        in_memory,
        in_file,
        TensorDict.from_consolidated(path),
        pickle.loads(pickle.dumps(in_memory)),
    )
    assert all(out.is_consolidated() for out in outs)
    for out in (*outs, in_memory.to("cpu")):
        for key in ("njt", "njt_lengths"):
            got, want = out[key], td[key]
            assert got.is_nested and got.layout is torch.jagged
            assert torch.equal(got.values(), want.values())
            assert torch.equal(got.offsets(), want.offsets())
            assert got._ragged_idx == want._ragged_idx
        assert out["njt"].lengths() is None
        assert torch.equal(out["njt_lengths"].lengths(), td["njt_lengths"].lengths())


def test_a_consolidated_jagged_leaf_with_lengths_keeps_its_ragged_size():
    """The consolidated copy of a jagged leaf with lengths has the very shape of the original
    (the same ragged-size symbol), so the two work together pointwise."""
    td = _jagged_sample()
    out = td.consolidate()
    assert out["njt_lengths"].shape == td["njt_lengths"].shape
    assert (out["njt_lengths"] == td["njt_lengths"]).values().all()


@ours_only  # the reference gives a jagged leaf with offsets only a new ragged size (j2 for j1)
def test_a_consolidated_jagged_leaf_keeps_its_ragged_size():
    """With offsets only too, the consolidated copy of a jagged leaf has the original's shape,
    so that a tensordict compares equal to its consolidated copy."""
    td = _jagged_sample()
    out = td.consolidate()
    assert out["njt"].shape == td["njt"].shape
    assert (out == td).all()


def test_assert_close_compares_jagged_leaves_by_their_parts(tmp_path):
    """assert_allclose_td compares jagged leaves by values, offsets and lengths, not by the
    symbol of their ragged size: a tensordict matches its copy read back from a file."""
    td = _jagged_sample()
    path = tmp_path / "td.bin"
    td.consolidate(filename=path)
    loaded = TensorDict.from_consolidated(path)
    assert loaded["njt"].shape != td["njt"].shape  # a new ragged-size symbol
    assert tensordict.utils.assert_allclose_td(loaded, td)
    assert tensordict.utils.assert_allclose_td(td.consolidate(), td)
    changed = loaded.clone()
    changed["njt"].values().add_(1)
    with pytest.raises(AssertionError):
        tensordict.utils.assert_allclose_td(changed, td)


@ours_only  # the reference compares the values only (offsets and lengths go into its message)
def test_assert_close_tells_jagged_leaves_apart_by_offsets_or_lengths():
    """Two jagged leaves with the same values but other offsets, or other lengths, differ."""
    values = torch.arange(10)
    base = torch.nested.nested_tensor_from_jagged(values, offsets=torch.tensor([0, 2, 5, 8, 10]))
    other_offsets = torch.nested.nested_tensor_from_jagged(
        values, offsets=torch.tensor([0, 3, 5, 8, 10])
    )
    other_lengths = torch.nested.nested_tensor_from_jagged(
        values, offsets=torch.tensor([0, 2, 5, 8, 10]), lengths=torch.tensor([1, 3, 3, 2])
    )
    td = TensorDict(x=base, batch_size=[4])
    for other in (other_offsets, other_lengths):
        with pytest.raises(AssertionError, match="differ"):
            tensordict.utils.assert_allclose_td(TensorDict(x=other, batch_size=[4]), td)


def test_batch_sizes_names_and_device_are_kept(tmp_path):
    """Batch sizes (deeper in sub-tensordicts), names and the device come back as they were."""
    sub = TensorDict(b=torch.zeros(2, 3, 4), batch_size=[2, 3, 4], names=["x", "y", "z"])
    td = TensorDict(a=torch.zeros(2, 3), s=sub, batch_size=[2, 3], names=["x", "y"], device="cpu")
    path = tmp_path / "td.bin"
    td.consolidate(filename=path)
    for out in (td.consolidate(), TensorDict.from_consolidated(path)):
        assert out.batch_size == torch.Size([2, 3]) and out.names == ["x", "y"]
        assert out["s"].batch_size == torch.Size([2, 3, 4]) and out["s"].names == ["x", "y", "z"]
        assert out.device == torch.device("cpu")


def test_a_locked_tensordict_loads_locked(tmp_path):
    """The file records the lock of each level: a locked source loads locked."""
    path = tmp_path / "td.bin"
    sample().lock_().consolidate(filename=path)
    assert TensorDict.from_consolidated(path).is_locked
    sample().consolidate(filename=path)
    assert not TensorDict.from_consolidated(path).is_locked


def test_file_result_views_the_file(tmp_path):
    """With a filename the leaves map the file: an in-place write reaches it."""
    path = tmp_path / "td.bin"
    out = TensorDict(a=torch.zeros(4), batch_size=[4]).consolidate(filename=path)
    out["a"].fill_(2.0)
    assert torch.equal(TensorDict.from_consolidated(path)["a"], torch.full((4,), 2.0))


def test_loaded_file_is_copy_on_write(tmp_path):
    """Writes into a tensordict read from a file do not reach the file."""
    path = tmp_path / "td.bin"
    TensorDict(a=torch.zeros(4), batch_size=[4]).consolidate(filename=path)
    before = path.read_bytes()
    TensorDict.from_consolidated(path)["a"].fill_(5.0)
    assert path.read_bytes() == before


def test_a_larger_existing_file_is_replaced(tmp_path):
    """Writing over a larger file leaves a file that ends with the new footer."""
    path = tmp_path / "td.bin"
    TensorDict(a=torch.zeros(1000)).consolidate(filename=path)
    TensorDict(a=torch.ones(2)).consolidate(filename=path)
    assert torch.equal(TensorDict.from_consolidated(path)["a"], torch.ones(2))


# ---------------------------------------------------------------------- state and options
def test_in_place_writes_keep_it_consolidated():
    """Writing into a leaf in place keeps the state; adding an entry is refused (it is locked)."""
    out = sample().consolidate()
    out["a"].add_(1)
    assert out.is_consolidated()
    with pytest.raises(RuntimeError):
        out["new"] = torch.zeros(3)


def test_unlocking_ends_the_state():
    """Unlocking the result of consolidate() makes it no longer consolidated."""
    out = sample().consolidate()
    out.unlock_()
    assert not out.is_consolidated()


def test_changing_an_unpickled_copy_ends_the_state():
    """Deleting or adding an entry of an unpickled (unlocked) copy ends its state."""
    back = pickle.loads(pickle.dumps(sample().consolidate()))
    del back["a"]
    assert not back.is_consolidated()
    back = pickle.loads(pickle.dumps(sample().consolidate()))
    back["x"] = torch.zeros(3)
    assert not back.is_consolidated()


def test_a_plain_tensordict_is_not_consolidated():
    """Only consolidate(), from_consolidated() and their pickles make consolidated tensordicts."""
    assert not sample().is_consolidated()
    assert not sample().consolidate()["n"].is_consolidated()


def test_inplace_replaces_the_leaves_of_self():
    """inplace=True returns self, its leaves now views into one storage, locked."""
    td = sample()
    sub = td["n"]
    out = td.consolidate(inplace=True)
    assert out is td and td["n"] is sub
    assert td.is_consolidated() and td.is_locked
    assert len(storages(td)) == 1
    assert_same_tree(td, sample())


def test_threads_give_the_same_result():
    """num_threads copies by chunks into the same layout."""
    td = TensorDict({f"k{i}": torch.full((3, i + 1), float(i)) for i in range(10)}, [3])
    out = td.consolidate(num_threads=4)
    assert_same_tree(out, td)
    assert len(storages(out)) == 1


@pytest.mark.parametrize("num_threads", [0, 2, 3])
def test_threads_write_the_same_file(tmp_path, num_threads):
    """However many threads copy, the file holds the same bytes (runs of leaves are cut up)."""
    path = tmp_path / "runs.bin"
    generated.runs().consolidate(filename=path, num_threads=num_threads)
    assert path.read_bytes() == (FILES / "runs.bin").read_bytes()


def test_torch_save_and_load_with_weights_only(tmp_path):
    """A consolidated tensordict saved with torch.save loads with torch.load(weights_only=True)."""
    path = tmp_path / "td.pt"
    torch.save(sample().consolidate(), path)
    back = torch.load(path, weights_only=True)
    assert back.is_consolidated()
    assert_same_tree(back, sample())


def test_return_early_gives_a_future():
    """return_early=True with threads returns a TensorDictFuture of the consolidated tensordict."""
    from tensordict.utils import TensorDictFuture

    td = TensorDict({f"k{i}": torch.full((3,), float(i)) for i in range(10)}, [3])
    td["s"] = "text"
    future = td.consolidate(num_threads=2, return_early=True)
    assert isinstance(future, TensorDictFuture)
    out = future.result()
    assert_same_tree(out, td)
    assert out.is_consolidated() and out["s"] == "text"


@ours_only
def test_return_early_future_is_a_concurrent_future():
    """The TensorDictFuture is a concurrent.futures.Future: done(), callbacks and a timeout."""
    from concurrent.futures import Future, wait

    td = TensorDict({f"k{i}": torch.full((3,), float(i)) for i in range(10)}, [3])
    future = td.consolidate(num_threads=2, return_early=True)
    assert isinstance(future, Future)
    seen = []
    future.add_done_callback(seen.append)
    wait([future], timeout=10)
    assert future.done() and seen == [future]
    assert future.result(timeout=1).is_consolidated()


def test_share_memory_puts_the_storage_in_shared_memory():
    """share_memory=True gives leaves in shared memory."""
    out = sample().consolidate(share_memory=True)
    assert out["a"].is_shared()


def test_use_buffer_writes_the_same_file(tmp_path):
    """use_buffer=True writes the file at the end, with the same bytes."""
    direct, buffered = tmp_path / "a.bin", tmp_path / "b.bin"
    sample().consolidate(filename=direct)
    sample().consolidate(filename=buffered, use_buffer=True)
    assert buffered.read_bytes() == direct.read_bytes()


def test_metadata_flag_changes_nothing_visible():
    """metadata=True gives the same consolidated tensordict."""
    out = sample().consolidate(metadata=True)
    assert out.is_consolidated()
    assert_same_tree(out, sample())


def test_consolidating_again_returns_self():
    """An already consolidated tensordict is returned as it is."""
    out = sample().consolidate()
    assert out.consolidate() is out


def test_consolidating_again_with_options_warns(tmp_path):
    """A new filename writes nothing (UserWarning); another device is ignored (FutureWarning)."""
    out = sample().consolidate()
    with pytest.warns(UserWarning, match="writes nothing"):
        assert out.consolidate(filename=tmp_path / "other.bin") is out
    assert not (tmp_path / "other.bin").exists()
    with pytest.warns(FutureWarning, match="ignores device='meta'"):
        assert out.consolidate(device="meta") is out


def test_consolidating_again_into_its_own_file_writes_no_warning(tmp_path):
    """Naming its own file again rewrites its metadata quietly, and the file still loads."""
    path = tmp_path / "td.bin"
    out = TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2]).consolidate(filename=path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert out.consolidate(filename=path) is out
    assert TensorDict.from_consolidated(path).batch_size == torch.Size([3, 2])


def test_pickle_of_a_consolidated_tensordict_holds_one_tensor():
    """Pickling sends the storage as one tensor, not one per leaf."""
    td = TensorDict({f"k{i}": torch.zeros(3) for i in range(20)}, [3])

    def count(obj) -> int:
        seen = []

        class Counter(pickle.Pickler):
            def reducer_override(self, value):
                if isinstance(value, torch.Tensor):
                    seen.append(value)
                return NotImplemented

        Counter(io.BytesIO()).dump(obj)
        return len(seen)

    assert count(td) == 20
    assert count(td.consolidate()) == 1


def test_pickle_carries_the_current_batch_size():
    """A batch size set on an unpickled (unlocked) copy reaches the next unpickled copy."""
    back = pickle.loads(
        pickle.dumps(TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2]).consolidate())
    )
    back.batch_size = [3]
    again = pickle.loads(pickle.dumps(back))
    assert again.batch_size == torch.Size([3]) and again.is_consolidated()


def _child(queue, done):
    while (td := queue.get()) is not None:
        done.put(
            (
                td.is_consolidated(),
                len({v.untyped_storage().data_ptr() for v in td.values(True, True)}),
            )
        )
        td["a"].fill_(7.0)
        done.put("written")


@pytest.mark.timeout(120)
def test_a_spawned_child_shares_the_storage(tmp_path):
    """Through a torch.multiprocessing queue the child maps the same storage: its writes show here.

    One child receives each tensordict in turn (spawning takes seconds).
    """
    sent = [TensorDict(a=torch.zeros(4), n={"b": torch.ones(4)}, batch_size=[4]).consolidate()]
    if not UNDER_REFERENCE:
        # differs from the reference: torch cannot send a handle of its file-backed storage
        # (OSError "Bad file descriptor" in the queue's feeder thread); ours sends the file name
        path = tmp_path / "td.bin"
        sent.append(TensorDict(a=torch.zeros(4), batch_size=[4]).consolidate(filename=path))
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_child, args=(queue, done))
    child.start()
    try:
        for out in sent:
            queue.put(out)
            assert done.get(timeout=90) == (True, 1)
            assert done.get(timeout=30) == "written"
            assert torch.equal(out["a"], torch.full((4,), 7.0))
        assert torch.equal(sent[0]["n", "b"], torch.ones(4))
        if len(sent) > 1:
            assert torch.equal(TensorDict.from_consolidated(path)["a"], torch.full((4,), 7.0))
    finally:
        queue.put(None)
        child.join(timeout=30)
        if child.is_alive():
            child.kill()


# differs from the reference: it pickles the data of a tensordict consolidated into a file;
# ours pickles the file name, as for memory-mapped tensordicts (SPEC: never the data)
@ours_only
def test_a_file_backed_pickle_holds_the_file_name(tmp_path):
    """The pickle of a file-backed consolidated tensordict is small and maps the same file."""
    path = tmp_path / "td.bin"
    out = TensorDict(a=torch.zeros(100_000), batch_size=[100_000]).consolidate(filename=path)
    data = pickle.dumps(out)
    assert len(data) < 10_000
    back = pickle.loads(data)
    back["a"][:3] = 1.0
    assert back.is_consolidated()
    assert out["a"][:3].tolist() == [1.0, 1.0, 1.0]
    buffered = TensorDict(a=torch.zeros(10)).consolidate(
        filename=tmp_path / "b.bin", use_buffer=True
    )
    assert not pickle.loads(pickle.dumps(buffered))["a"].untyped_storage().filename


# ---------------------------------------------------------------------- bad input
def test_a_strided_nested_tensor_is_refused():
    """Only jagged nested tensors are consolidated; a strided one raises NotImplementedError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nt = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(NotImplementedError, match="layout=torch.jagged"):
        TensorDict(nt=nt, batch_size=[2]).consolidate()


def test_a_file_with_a_device_is_refused(tmp_path):
    """A file is on the CPU: filename with another device raises RuntimeError."""
    with pytest.raises(RuntimeError, match="mutually exclusive"):
        sample().consolidate(filename=tmp_path / "td.bin", device="meta")


def test_return_early_with_a_buffer_is_refused(tmp_path):
    """return_early cannot go with use_buffer (NotImplementedError)."""
    with pytest.raises(NotImplementedError, match="use_buffer=True"):
        sample().consolidate(
            filename=tmp_path / "td.bin", num_threads=2, return_early=True, use_buffer=True
        )


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_pinned_memory_without_cuda_is_refused():
    """pin_memory=True without an accelerator raises RuntimeError."""
    with pytest.raises(RuntimeError, match="pin_memory=True"):
        sample().consolidate(pin_memory=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_cuda_device_without_cuda_is_refused():
    """device='cuda' without CUDA raises AssertionError, as torch does."""
    with pytest.raises(AssertionError):
        sample().consolidate(device="cuda")


def test_a_value_json_cannot_hold_is_refused_for_a_file(tmp_path):
    """Non-tensor values go into the file's JSON: another object raises RuntimeError."""
    td = TensorDict(o=NonTensorData(object()))
    with pytest.raises(RuntimeError, match="(?i)json"):
        td.consolidate(filename=tmp_path / "td.bin")
    assert td.consolidate().is_consolidated()  # in memory the value is kept as it is


def test_a_missing_file_raises_file_not_found(tmp_path):
    """from_consolidated of a missing file raises FileNotFoundError."""
    with pytest.raises(FileNotFoundError):
        TensorDict.from_consolidated(tmp_path / "nothing.bin")


def test_a_folder_is_refused(tmp_path):
    """from_consolidated of a folder raises RuntimeError."""
    with pytest.raises(RuntimeError):
        TensorDict.from_consolidated(tmp_path)


def test_a_short_file_is_refused(tmp_path):
    """A file shorter than its footer raises RuntimeError."""
    path = tmp_path / "short.bin"
    path.write_bytes(b"abc")
    with pytest.raises(RuntimeError):
        TensorDict.from_consolidated(path)


def test_a_file_without_json_metadata_is_refused(tmp_path):
    """A file whose metadata is not JSON raises ValueError."""
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"x" * 40 + (20).to_bytes(8, "little"))
    with pytest.raises(ValueError):
        TensorDict.from_consolidated(path)


# differs from the reference: it raises a bare RuntimeError from a tensor view ("must be
# divisible by 8") for a short file and a JSONDecodeError for bad metadata; ours names the file
@ours_only
def test_bad_files_are_named_in_the_error(tmp_path):
    """Each unreadable file raises ConsolidatedFormatError naming the file and the problem."""
    from tensordict.errors import ConsolidatedFormatError

    short = tmp_path / "short.bin"
    short.write_bytes(b"abc")
    with pytest.raises(ConsolidatedFormatError, match=r"short\.bin.*3 bytes"):
        TensorDict.from_consolidated(short)
    footer = tmp_path / "footer.bin"
    footer.write_bytes(b"{}" + (999).to_bytes(8, "little"))
    with pytest.raises(ConsolidatedFormatError, match="footer gives 999 bytes"):
        TensorDict.from_consolidated(footer)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"x" * 40 + (20).to_bytes(8, "little"))
    with pytest.raises(ConsolidatedFormatError, match="not JSON"):
        TensorDict.from_consolidated(garbage)


# differs from the reference: it reads records without checking them (a leaf past the end
# of the data reads a shorter tensor or fails in torch); ours checks each before viewing it
@ours_only
@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (["torch.float32", [4], 0, 64, 0], "not within"),
        (["torch.float32", [3], 0, 8, 0], "takes 12 bytes"),
        (["torch.float31", [2], 0, 8, 0], "unknown dtype"),
        (["torch.float32", [-2], 0, 8, 0], "shape is not valid"),
        ("tensor", "expected \\[dtype"),
    ],
)
def test_bad_leaf_records_are_refused(tmp_path, record, problem):
    """A leaf record that does not fit the data raises naming the leaf and what is wrong."""
    from tensordict.errors import ConsolidatedFormatError

    meta = {
        "cls": "TensorDict",
        "non_tensors": {},
        "leaves": {"a": record},
        "cls_metadata": {"device": None, "names": [], "batch_size": [], "is_locked": False},
    }
    payload = json.dumps(meta).encode()
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(8) + payload + len(payload).to_bytes(8, "little"))
    with pytest.raises(ConsolidatedFormatError, match=rf"bad\.bin.*'a'.*{problem}"):
        TensorDict.from_consolidated(path)


# differs from the reference: it raises RuntimeError too, but names the class as the module
# path without "<class ...>"; the wording differs
@ours_only
def test_an_unknown_class_is_named(tmp_path):
    """A file naming a class that is not defined raises, naming the class."""
    from tensordict.errors import ConsolidatedFormatError

    meta = {"cls": "<class 'nowhere.Thing'>", "non_tensors": {}, "leaves": {}, "cls_metadata": {}}
    payload = json.dumps(meta).encode()
    path = tmp_path / "bad.bin"
    path.write_bytes(payload + len(payload).to_bytes(8, "little"))
    with pytest.raises(ConsolidatedFormatError, match=r"bad\.bin.*nowhere\.Thing"):
        TensorDict.from_consolidated(path)


def _bad_file(tmp_path, meta, data: bytes = b"") -> Path:
    """A file of ``data``, then ``meta`` as JSON, then its length: the consolidated layout."""
    payload = json.dumps(meta).encode()
    path = tmp_path / "bad.bin"
    path.write_bytes(data + payload + len(payload).to_bytes(8, "little"))
    return path


_LEVEL = {"cls": "TensorDict", "non_tensors": {}, "leaves": {}, "cls_metadata": {}}


# differs from the reference: it raises KeyError, TypeError or a bare RuntimeError from
# deep inside the rebuild; ours says what is wrong, where, in which file
@ours_only
@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ([1, 2], "top level.*must be an object"),
        ({**_LEVEL, "leaves": 5}, "the top level.*must be objects"),
        ({**_LEVEL, "sub": 3}, r"\('sub',\).*must be an object"),
        ({**_LEVEL, "cls_metadata": {"batch_size": "x"}}, "batch_size"),
        ({**_LEVEL, "non_tensors": {"x": 3}}, "non-tensor entry 'x'"),
        (
            {**_LEVEL, "sub": {**_LEVEL, "leaves": {"a": ["torch.float32", [4], 0, 64, 0]}}},
            r"\('sub',\): the leaf 'a'.*not within",
        ),
    ],
    ids=[
        "not-an-object",
        "leaves-not-an-object",
        "level-not-an-object",
        "batch-size",
        "non-tensor",
        "nested-leaf",
    ],
)
def test_bad_metadata_names_the_file(tmp_path, meta, problem):
    """Metadata that does not describe a tree raises ConsolidatedFormatError naming the file,
    the level and the problem; the file is left as it was."""
    from tensordict.errors import ConsolidatedFormatError

    path = _bad_file(tmp_path, meta, bytes(8))
    before = path.read_bytes()
    with pytest.raises(ConsolidatedFormatError, match=rf"^'.*bad\.bin'.*{problem}"):
        TensorDict.from_consolidated(path)
    assert path.read_bytes() == before


# differs from the reference: a cut footer reads as a huge length and fails in torch
@ours_only
@pytest.mark.parametrize("cut", [1, 10, 100, "half"])
def test_a_truncated_file_names_the_file(tmp_path, cut):
    """A consolidated file cut short raises ConsolidatedFormatError naming the file."""
    from tensordict.errors import ConsolidatedFormatError

    path = tmp_path / "td.bin"
    sample().consolidate(filename=path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2 if cut == "half" else len(raw) - cut])
    with pytest.raises(ConsolidatedFormatError, match=r"^'.*td\.bin'"):
        TensorDict.from_consolidated(path)


# differs from the reference: a bare FileNotFoundError
@ours_only
def test_a_missing_file_raises_our_error_naming_it(tmp_path):
    """from_consolidated of a missing file raises ConsolidatedNotFoundError (a FileNotFoundError) naming the path."""
    from tensordict.errors import ConsolidatedNotFoundError, TensorDictError

    path = tmp_path / "nothing.bin"
    with pytest.raises(ConsolidatedNotFoundError, match=r"nothing\.bin") as info:
        TensorDict.from_consolidated(path)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, TensorDictError)
    assert info.value.filename == str(path)
    assert not path.exists()


# differs from the reference: it reads only files; ours also reads the bytes of one in memory
@ours_only
def test_the_bytes_of_a_file_in_a_tensor_load(tmp_path):
    """from_consolidated takes a uint8 tensor (or an UntypedStorage) holding a file's bytes."""
    path = tmp_path / "td.bin"
    sample().consolidate(filename=path)
    raw = torch.frombuffer(bytearray(path.read_bytes()), dtype=torch.uint8)
    assert_same_tree(TensorDict.from_consolidated(raw), sample())
    assert_same_tree(TensorDict.from_consolidated(raw.untyped_storage()), sample())
    with pytest.raises(TypeError, match="1-D uint8"):
        TensorDict.from_consolidated(torch.zeros(3))


def test_consolidated_leaves_are_detached_copies():
    """consolidate() of leaves that require grad gives leaves outside the graph; the source's graph is intact."""
    base = torch.arange(24, dtype=torch.float32, requires_grad=True)
    transposed = base.reshape(2, 3, 4).transpose(0, 1)
    out = TensorDict({"value": transposed, "w": base}, []).consolidate(num_threads=2)
    assert torch.equal(out["value"], transposed)
    assert not out["value"].requires_grad and not out["w"].requires_grad
    transposed.sum().backward()
    assert torch.equal(base.grad, torch.ones_like(base))


def test_to_a_device_keeps_a_consolidated_tensordict_consolidated():
    """to(device) of a consolidated tensordict gives a consolidated one on that device, values equal."""
    source = TensorDict({"a": torch.arange(3.0), "n": {"b": torch.ones(3)}, "s": "x"}, [3])
    out = source.consolidate().to("cpu")
    assert out.is_consolidated() and out.device == torch.device("cpu")
    assert (out == source).all() and out["s"] == "x"
    cast = source.consolidate().to(torch.float64)
    assert cast["a"].dtype == torch.float64
