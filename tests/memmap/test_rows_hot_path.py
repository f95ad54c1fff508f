"""Rows written into and read from a memory-mapped tensordict by a tensor of indices (replay buffers)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensordict import MemoryMappedTensor, TensorDict
from tensordict.errors import BatchSizeError, EntryDtypeError


def _buffer(path):
    template = TensorDict(
        {"obs": torch.zeros(10, 3), "done": torch.zeros(10, 1, dtype=torch.bool)}, [10]
    )
    return template.memmap_like(path)


def _batch(n=2):
    return TensorDict({"obs": torch.randn(n, 3), "done": torch.ones(n, 1, dtype=torch.bool)}, [n])


def test_rows_written_by_index_reach_the_files(tmp_path):
    """td[rows] = batch writes every leaf's rows into its file (seen by a fresh load)."""
    buffer = _buffer(tmp_path / "b")
    batch = _batch()
    rows = torch.tensor([7, 2])
    buffer[rows] = batch
    buffer[rows] = batch  # again, through what the first write set up
    fresh = TensorDict.load_memmap(tmp_path / "b")
    assert torch.equal(fresh["obs"][rows], batch["obs"]) and fresh["done"][rows].all()
    assert not fresh["done"][0].any()


def test_a_refused_batch_writes_nothing(tmp_path):
    """A batch whose second leaf has the wrong feature shape raises and leaves every leaf as it was."""
    buffer = _buffer(tmp_path / "b")
    buffer[torch.tensor([0])] = _batch(1)
    bad = TensorDict({"obs": torch.ones(2, 3), "done": torch.ones(2, 4, dtype=torch.bool)}, [2])
    before = buffer.clone()
    with pytest.raises(BatchSizeError, match="'done'"):
        buffer[torch.tensor([1, 2])] = bad
    assert (buffer == before).all()


def test_a_leaf_reshaped_in_place_is_checked_with_its_new_shape(tmp_path):
    """After an in-place change of a memory-mapped leaf's geometry, writes check the new shape."""
    leaf = MemoryMappedTensor.zeros(4, 2, filename=tmp_path / "x.memmap")
    td = TensorDict({"x": leaf}, [4])
    td[torch.tensor([0])] = TensorDict({"x": torch.ones(1, 2)}, [1])
    leaf.unsqueeze_(1)  # now (4, 1, 2): rows of shape (2,) no longer fit
    with pytest.raises(BatchSizeError, match="feature shape"):
        td[torch.tensor([1])] = TensorDict({"x": torch.full((1, 3), 5.0)}, [1])
    assert leaf[1].eq(0).all() and leaf[0].eq(1).all()


def test_rows_read_by_index_are_plain_copies(tmp_path):
    """td[rows] of a memory-mapped tensordict holds plain tensors, and is not memory-mapped."""
    buffer = _buffer(tmp_path / "b")
    buffer[torch.tensor([3])] = _batch(1)
    rows = buffer[torch.tensor([3, 4])]
    assert type(rows["obs"]) is torch.Tensor and not rows.is_memmap()
    assert rows["done"].tolist() == [[True], [False]]
    rows["obs"].zero_()
    assert buffer["obs"][3].abs().sum() > 0


def test_a_batch_of_another_size_or_a_broadcast_value_is_checked_after_a_fitting_one(tmp_path):
    """After a fitting write, a batch of another size is written, one whose values broadcast
    is written broadcast, and a misfit one is refused with nothing written."""
    buffer = _buffer(tmp_path / "b")
    buffer[torch.tensor([0, 1])] = _batch(2)
    three = _batch(3)
    buffer[torch.tensor([2, 3, 4])] = three
    assert torch.equal(buffer["obs"][2:5], three["obs"])
    wide = TensorDict({"obs": torch.full((2, 1), 7.0), "done": torch.ones(2, 1, dtype=bool)}, [2])
    buffer[torch.tensor([5, 6])] = wide
    assert buffer["obs"][5:7].eq(7.0).all()
    before = buffer.clone()
    bad = TensorDict({"obs": torch.ones(2, 4), "done": torch.ones(2, 1, dtype=bool)}, [2])
    with pytest.raises(BatchSizeError, match="'obs'"):
        buffer[torch.tensor([8, 9])] = bad
    assert (buffer == before).all()


def test_one_leaf_in_tensordicts_of_different_batch_dims_is_checked_for_each(tmp_path):
    """A memory-mapped leaf shared by tensordicts of 1 and 2 batch dims takes the rows each
    one's batch size says, and refuses a misfit in either."""
    leaf = MemoryMappedTensor.zeros(4, 2, filename=tmp_path / "x.memmap")
    one, two = TensorDict({"x": leaf}, [4]), TensorDict({"x": leaf}, [4, 2])
    one[torch.tensor([0])] = TensorDict({"x": torch.ones(1, 2)}, [1])
    two[torch.tensor([1])] = TensorDict({"x": torch.full((1, 2), 2.0)}, [1, 2])
    assert leaf.tolist() == [[1, 1], [2, 2], [0, 0], [0, 0]]
    with pytest.raises(BatchSizeError, match="feature shape"):
        two[torch.tensor([2])] = TensorDict({"x": torch.ones(1, 2, 3)}, [1, 2])
    with pytest.raises(BatchSizeError, match="feature shape"):
        one[torch.tensor([2])] = TensorDict({"x": torch.ones(1, 3)}, [1])
    assert leaf[2:].eq(0).all()


def test_rows_of_a_tensordict_holding_a_nested_tensor_are_read_by_index(tmp_path):
    """td[rows] of a tensordict with a jagged nested leaf picks the rows of every leaf."""
    nested = torch.nested.nested_tensor(
        [torch.ones(2), torch.zeros(3), torch.full((1,), 5.0)], layout=torch.jagged
    )
    td = TensorDict({"n": nested, "x": torch.arange(3)}, [3])
    rows = td[torch.tensor([2, 0])]
    assert rows["x"].tolist() == [2, 0]
    assert [t.tolist() for t in rows["n"].unbind()] == [[5.0], [1.0, 1.0]]


@pytest.mark.parametrize("mapped", [True, False])
def test_rows_out_of_range_raise_and_write_nothing(tmp_path, mapped):
    """td[rows] = batch with a row out of range raises IndexError naming it, and no leaf changes."""
    buf = _buffer(tmp_path / "buf") if mapped else _buffer(tmp_path / "buf").clone()
    before = buf.clone()
    for bad in (torch.tensor([1, 0, 100]), torch.tensor([-101, 1, 2])):
        with pytest.raises(
            IndexError, match=f"index {bad[bad.abs() > 99][0].item()}.*nothing was written"
        ):
            buf[bad] = _batch(3)
        assert (buf == before).all()
    buf[torch.tensor([-1, 0])] = _batch(2)
    assert not (buf == before).all()


def _plain_rows_model(n, rows, batch):
    """The rows of two plain tensors written and read with torch's own indexing."""
    obs, done = torch.zeros(n, 3), torch.zeros(n, 1, dtype=torch.bool)
    obs[rows], done[rows] = batch["obs"], batch["done"]
    return obs, done


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(st.integers(-10, 9), min_size=0, max_size=10, unique_by=lambda r: r % 10),
    mapped=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_rows_written_and_read_as_torch_indexes_plain_tensors(
    tmp_path_factory, picks, mapped, dtype
):
    """For any distinct rows, negative ones included, td[rows] = batch and td[rows] give what
    torch's indexing gives on plain tensors; a batch of another float dtype is refused whole."""
    buf = _buffer(tmp_path_factory.mktemp("b") / "buf")
    if not mapped:
        buf = buf.clone()
    rows = torch.tensor(picks, dtype=torch.long)
    batch = TensorDict(
        {
            "obs": torch.randn(len(picks), 3, dtype=dtype),
            "done": torch.rand(len(picks), 1) > 0.5,
        },
        [len(picks)],
    )
    if dtype is not torch.float32:  # torch's index writes do not cast: refused whole
        before = buf.clone()
        with pytest.raises(EntryDtypeError, match="'obs'"):
            buf[rows] = batch
        assert (buf == before).all()
        batch["obs"] = batch["obs"].float()
    buf[rows] = batch
    obs, done = _plain_rows_model(10, rows, batch)
    assert torch.equal(buf["obs"], obs) and torch.equal(buf["done"], done)
    read = buf[rows]
    assert torch.equal(read["obs"], obs[rows]) and torch.equal(read["done"], done[rows])
    assert read.batch_size == torch.Size([len(picks)])


@pytest.mark.parametrize("row", [10, -11])
def test_a_row_out_of_range_in_a_read_raises_torch_index_error(tmp_path, row):
    """td[rows] with a row out of range raises torch's IndexError naming it."""
    buf = _buffer(tmp_path / "buf")
    with pytest.raises(IndexError, match=f"index {row} is out of bounds"):
        buf[torch.tensor([0, row])]


def test_rows_read_from_a_non_contiguous_leaf_are_its_rows(tmp_path):
    """td[rows] of a tensordict whose leaf is a transposed view gives that view's rows."""
    base = torch.arange(12.0).reshape(3, 4)
    td = TensorDict({"t": base.t(), "x": torch.arange(4)}, [4])
    rows = torch.tensor([3, 0, -1])
    got = td[rows]
    assert torch.equal(got["t"], base.t()[rows]) and got["x"].tolist() == [3, 0, 3]


def test_gradients_flow_through_rows_read_by_index():
    """td[rows] of a leaf that requires grad is part of the graph: its rows get the gradient."""
    leaf = torch.zeros(5, 2, requires_grad=True)
    td = TensorDict({"w": leaf}, [5])
    td[torch.tensor([1, 3, 3])]["w"].sum().backward()
    assert leaf.grad[:, 0].tolist() == [0.0, 1.0, 0.0, 2.0, 0.0]


def test_buffers_of_many_sizes_and_batches_each_check_their_own_range(tmp_path):
    """Rows are checked against each buffer's own size, over many buffer and batch sizes."""
    for size in range(1, 70):
        td = TensorDict({"x": torch.zeros(size)}, [size])
        count = 1 + size % 5
        td[torch.arange(count) % size] = TensorDict({"x": torch.ones(count)}, [count])
        assert td["x"][: min(count, size)].eq(1).all()
        with pytest.raises(IndexError, match=f"index {size}"):
            td[torch.full((count,), size)] = TensorDict({"x": torch.ones(count)}, [count])


@pytest.mark.parametrize("mapped", [True, False])
@pytest.mark.parametrize("rows", [torch.tensor([1, 2]), torch.tensor([True, True] + [False] * 8)])
def test_a_batch_with_a_leaf_of_another_dtype_writes_nothing(tmp_path, mapped, rows):
    """td[rows] = batch whose last leaf has another dtype than its entry raises EntryDtypeError
    (a RuntimeError, as torch's) naming the key and both dtypes, and no leaf changes."""
    buf = _buffer(tmp_path / "buf") if mapped else _buffer(tmp_path / "buf").clone()
    before = buf.clone()
    bad = TensorDict({"obs": torch.ones(2, 3), "done": torch.ones(2, 1)}, [2])
    with pytest.raises(RuntimeError, match="torch.float32 into the entry 'done' of torch.bool"):
        buf[rows] = bad
    assert (buf == before).all()


def _nested_buffer(path, rows=10):
    step = {"obs": torch.zeros(rows, 3), "done": torch.zeros(rows, 1, dtype=torch.bool)}
    template = TensorDict({**step, "next": TensorDict(dict(step), [rows])}, [rows])
    return template.memmap_like(path)


def _nested_batch(n=2):
    step = {"obs": torch.randn(n, 3), "done": torch.ones(n, 1, dtype=torch.bool)}
    return TensorDict({**step, "next": TensorDict(dict(step), [n])}, [n])


def test_nested_rows_written_by_index_reach_the_files_and_read_back(tmp_path):
    """td[rows] = batch with a nested level writes its leaves into their files, and
    td[rows] reads them back as plain copies in a nested tensordict of the rows' size."""
    buffer = _nested_buffer(tmp_path / "b")
    batch = _nested_batch()
    rows = torch.tensor([7, 2])
    buffer[rows] = batch
    fresh = TensorDict.load_memmap(tmp_path / "b")
    assert torch.equal(fresh["next", "obs"][rows], batch["next", "obs"])
    read = buffer[rows]
    assert read["next"].batch_size == torch.Size([2]) and not read.is_memmap()
    assert type(read["next", "obs"]) is torch.Tensor
    assert (read == batch).all()
    assert not fresh["next", "done"][0].any()


@pytest.mark.parametrize("bad_key", ["obs", "done"])
def test_a_nested_leaf_that_does_not_fit_writes_nothing(tmp_path, bad_key):
    """A nested leaf of the wrong feature shape or dtype is refused, naming its whole key,
    before any leaf (top level ones included) is written."""
    buffer = _nested_buffer(tmp_path / "b")
    before = buffer.clone()
    batch = _nested_batch()
    if bad_key == "obs":
        batch["next"]["obs"] = torch.ones(2, 4)
        error, match = BatchSizeError, r"\('next', 'obs'\)"
    else:
        batch["next"]["done"] = torch.ones(2, 1)
        error, match = EntryDtypeError, r"\('next', 'done'\)"
    with pytest.raises(error, match=match):
        buffer[torch.tensor([1, 2])] = batch
    assert (buffer == before).all()


def test_nested_levels_of_other_shapes_or_keys_are_written_too(tmp_path):
    """A nested level with more batch dims, or with a key the buffer lacks, is still
    written (the general path): the rows hold the batch's values."""
    wide = TensorDict(
        {"a": torch.zeros(6), "sub": TensorDict({"b": torch.zeros(6, 2)}, [6, 2])}, [6]
    )
    rows = torch.tensor([4, 0])
    batch = TensorDict(
        {"a": torch.ones(2), "sub": TensorDict({"b": torch.ones(2, 2)}, [2, 2])}, [2]
    )
    wide[rows] = batch
    assert wide["sub", "b"][rows].eq(1).all() and wide["sub", "b"][1].eq(0).all()
    other = TensorDict({"a": torch.zeros(6), "sub": TensorDict({"b": torch.zeros(6)}, [6])}, [6])
    extra = TensorDict(
        {"a": torch.ones(2), "sub": TensorDict({"b": torch.ones(2), "c": torch.ones(2)}, [2])}, [2]
    )
    other[rows] = extra
    assert other["sub", "c"][rows].eq(1).all() and other["sub", "c"][1].eq(0).all()
