"""Indexing a tensordict on its batch dims (tensordict._indexing): reading and writing rows."""

import multiprocessing

import numpy as np
import pytest
import torch
from batch_kinds import KINDS, leaves, make, make_td
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def leaf_index(index, batch_dims):
    """The same index for a leaf with trailing feature dims: `...` spans batch dims only."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        return parts
    used = sum(p is not None and p is not Ellipsis for p in parts)
    out = []
    for p in parts:
        out.extend([slice(None)] * (batch_dims - used) if p is Ellipsis else [p])
    return tuple(out)


@pytest.mark.parametrize(
    "index, batch_size",
    [
        (0, [3]),
        (-1, [3]),
        ((0, 1), []),
        (slice(None, 1), [1, 3]),
        ((slice(None), slice(1, None, 2)), [2, 1]),
        ((Ellipsis, 0), [2]),
        ((0, Ellipsis), [3]),
        (None, [1, 2, 3]),
        ((slice(None), None), [2, 1, 3]),
        ((Ellipsis, None), [2, 3, 1]),
        (torch.tensor([True, False]), [1, 3]),
        (torch.tensor([[True, False, True], [False, False, True]]), [3]),
        (torch.tensor([1, 0, 1]), [3, 3]),
        ([1, 0], [2, 3]),
        ((slice(None), [0, 2]), [2, 2]),
        ((torch.tensor([0, 1]), torch.tensor([0, 2])), [2]),
        ((None, 1, Ellipsis, torch.tensor([2, 2])), [1, 2]),
    ],
)
def test_index(index, batch_size):
    """Indexing indexes every leaf along the batch dims and sets the batch size."""
    td = make_td()
    out = td[index]
    assert out.batch_size == torch.Size(batch_size)
    assert out["b"].batch_size == torch.Size(batch_size)
    assert torch.equal(out["b", "c"], td["b", "c"][index])
    assert torch.equal(out["a"], td["a"][leaf_index(index, 2)])


def test_index_ellipsis_only_covers_batch_dims():
    """`...` stands for batch dims only, never for the feature dims of a leaf."""
    td = make_td()
    assert td[..., 0]["a"].shape == (2, 4)
    assert torch.equal(td[..., 0]["a"], td["a"][:, 0])
    assert td[..., None]["a"].shape == (2, 3, 1, 4)


def test_index_basic_returns_views():
    """Indexing with ints and slices shares memory with the original."""
    td = make_td()
    td[0]["a"][0, 0] = -1.0
    assert td["a"][0, 0, 0] == -1.0
    td[:, 1:]["b", "c"].zero_()
    assert td["b", "c"][:, 1:].sum() == 0


@pytest.mark.parametrize("index", [(0, 0, 0), (slice(None), slice(None), 0)])
def test_index_past_batch_dims_raises(index):
    """An index with more entries than batch dims is an IndexError."""
    with pytest.raises(IndexError):
        make_td()[index]


@pytest.mark.parametrize("index", [2, (slice(None), 5), torch.tensor([True])])
def test_index_out_of_range_raises(index):
    """Out-of-range ints and masks of the wrong size are IndexErrors."""
    with pytest.raises(IndexError):
        make_td()[index]


def test_setitem_tensordict():
    """td[i] = other writes other's entries into each leaf at i."""
    td = make_td()
    a = td["a"]
    td[0] = TensorDict({"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, dtype=torch.int64)}}, [3])
    assert td["a"] is a
    assert td["a"][0].sum() == 0
    assert td["a"][1].sum() > 0
    assert td["b", "c"].tolist() == [[0, 0, 0], [3, 4, 5]]


def test_setitem_dict():
    """td[index] = a nested dict writes each of its entries."""
    td = make_td()
    td[:, 1] = {"a": torch.zeros(2, 4), "b": {"c": torch.full((2,), -1)}}
    assert td["a"][:, 1].sum() == 0
    assert td["b", "c"].tolist() == [[0, -1, 2], [3, -1, 5]]


@pytest.mark.parametrize(
    "index",
    [torch.tensor([True, False]), (Ellipsis, 0), torch.tensor([1, 1]), [0], (None, 0)],
)
def test_setitem_scalar(index):
    """td[index] = scalar fills every leaf at index."""
    td = make_td()
    a, c = td["a"].clone(), td["b", "c"].clone()
    td[index] = 5
    a[leaf_index(index, 2)] = 5
    c[index] = 5
    assert torch.equal(td["a"], a)
    assert torch.equal(td["b", "c"], c)


# --- properties ------------------------------------------------------------------


@st.composite
def index_cases(draw):
    """A batch shape and an index over it mixing every supported kind."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    max_advanced = draw(st.integers(0, 2))
    parts, dim, advanced, seen_ellipsis = [], 0, 0, False
    for _ in range(draw(st.integers(1, len(shape) + 1))):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis", "mask", "long"]))
        if kind == "none":
            parts.append(None)
            continue
        if kind == "ellipsis":
            if not seen_ellipsis:
                parts.append(Ellipsis)
                seen_ellipsis = True
            continue
        if seen_ellipsis or dim >= len(shape):
            continue
        size = shape[dim]
        dim += 1
        if kind == "int":
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-size, size))
            step = st.one_of(st.none(), st.integers(1, 3))
            parts.append(slice(draw(bound), draw(bound), draw(step)))
        elif advanced >= max_advanced:
            parts.append(slice(None))
        elif kind == "mask":
            advanced += 1
            parts.append(torch.tensor(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
        else:
            advanced += 1
            values = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4))
            parts.append(torch.tensor(values, dtype=torch.long))
    index = tuple(parts)
    if len(index) == 1 and draw(st.booleans()):
        index = index[0]
    return shape, index


def valid_case(shape, index):
    """The batch size torch gives for ``index``, or None if torch refuses it."""
    try:
        return torch.empty(shape)[leaf_index(index, len(shape))].shape
    except (IndexError, RuntimeError):
        return None


@settings(max_examples=50, deadline=None)
@given(index_cases())
def test_property_index_matches_leaves(case):
    """Indexing a tensordict equals indexing each leaf the same way."""
    shape, index = case
    td = make_td(shape)
    expected = valid_case(shape, index)
    if expected is None:
        return
    out = td[index]
    assert out.batch_size == expected
    assert out["b"].batch_size == expected
    idx = leaf_index(index, len(shape))
    assert torch.equal(out["a"], td["a"][idx])
    assert torch.equal(out["b", "c"], td["b", "c"][idx])


@settings(max_examples=50, deadline=None)
@given(index_cases(), st.booleans())
def test_property_setitem_matches_leaves(case, from_tensordict):
    """Assigning at an index equals assigning each leaf at that index."""
    shape, index = case
    if valid_case(shape, index) is None:
        return
    td = make_td(shape)
    a, c = td["a"].clone(), td["b", "c"].clone()
    value = td[index].apply(lambda x: torch.full_like(x, 7)) if from_tensordict else 7
    td[index] = value
    idx = leaf_index(index, len(shape))
    a[idx] = 7
    c[idx] = 7
    assert torch.equal(td["a"], a)
    assert torch.equal(td["b", "c"], c)


# --- numpy indices -----------------------------------------------------------------


def _to_numpy(index):
    """The same index with every tensor item as a numpy array."""
    if isinstance(index, torch.Tensor):
        return index.numpy()
    if isinstance(index, tuple):
        return tuple(_to_numpy(item) for item in index)
    return index


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "index",
    [
        np.array([1, 0]),
        np.array([True, False]),
        (slice(None), np.array([2, 0, 2])),
        (np.array([0, 1]), np.array([1, 2])),
        np.array([[0, 1], [1, 1]]),
        (slice(None), np.array([[True, False, True], [False, True, True]])[0]),
        np.array(1),
        [np.int64(1), np.int64(0)],
        (np.int64(1), np.int32(2)),
    ],
)
def test_numpy_index_reads_as_tensor_index(kind, index, tmp_path):
    """numpy arrays and numpy ints index as the tensors and ints they convert to, on every kind."""
    obj = make(kind, tmp_path)
    as_tensor = tuple(
        torch.as_tensor(np.asarray(i)) if isinstance(i, (np.ndarray, np.generic)) else i
        for i in (index if isinstance(index, tuple) else (index,))
    )
    if isinstance(index, list):
        as_tensor = torch.tensor([int(i) for i in index])
    got, expected = obj[index], obj[as_tensor]
    assert got.batch_size == expected.batch_size
    for key, value in leaves(expected).items():
        assert torch.equal(leaves(got)[key], value), key


@pytest.mark.parametrize("kind", ["td", "lazy", "memmap"])
def test_numpy_index_assignment_writes_the_rows(kind, tmp_path):
    """td[np.arange(...)] = other writes other's rows where a tensor index would."""
    obj = make(kind, tmp_path)
    if kind == "memmap":
        obj.unlock_()
    rows = obj[np.array([1, 0])].apply(lambda x: torch.full_like(x, 7))
    obj[(slice(None), np.arange(1, 3))] = obj[:, 1:3].apply(lambda x: torch.full_like(x, -1))
    obj[np.array([1, 0])] = rows
    assert (obj["a"] == 7).all() and (obj["b", "c"] == 7).all()


@ours_only  # the reference truncates the floats to ints and indexes with them
def test_numpy_float_array_index_raises():
    """A numpy array of floats is refused with an IndexError, as a float tensor is."""
    with pytest.raises(IndexError, match="float64"):
        make_td()[np.array([0.0, 1.0])]


def test_numpy_bool_scalar_index_raises():
    """A numpy bool scalar is refused with an IndexError (a Python bool is the index for that)."""
    with pytest.raises(IndexError):
        make_td()[np.True_]


def _write_rows(td, start: int) -> None:
    td[np.arange(start, start + 2)] = TensorDict({"x": torch.full((2, 3), float(start))}, [2])


def test_numpy_index_assignment_in_forked_workers():
    """Forked workers write their rows of a shared tensordict through numpy indices (a replay buffer's writers)."""
    td = TensorDict({"x": torch.zeros(4, 3)}, [4]).share_memory_()
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_write_rows, args=(td, start)) for start in (0, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert td["x"][:, 0].tolist() == [0.0, 0.0, 2.0, 2.0]


@settings(max_examples=50, deadline=None)
@given(index_cases())
def test_property_numpy_index_matches_tensor_index(case):
    """Any index with its tensors given as numpy arrays reads the same rows."""
    shape, index = case
    if valid_case(shape, index) is None:
        return
    td = make_td(shape)
    out, expected = td[_to_numpy(index)], td[index]
    assert out.batch_size == expected.batch_size
    assert torch.equal(out["a"], expected["a"])


# --- first-class dims --------------------------------------------------------------


def test_first_class_dims_bind_batch_dims():
    """A functorch first-class dim binds the batch dim it indexes: the batch size and names lose it."""
    ftdim = pytest.importorskip("functorch.dim")
    td = make_td((2, 3), names=["x", "y"])
    d0 = ftdim.dims(1)
    out = td[d0]
    assert out.batch_size == (3,)
    assert out.names == ["y"]
    assert out["a"].shape == (3, 4)
    d0, d1 = ftdim.dims(2)
    assert td[d0, d1].batch_size == ()
    d1 = ftdim.dims(1)
    assert td[:, d1].batch_size == (2,)


def test_first_class_dims_on_memory_mapped_tensordict_raise(tmp_path):
    """A memory-mapped tensordict refuses first-class dims with a ValueError."""
    ftdim = pytest.importorskip("functorch.dim")
    td = make_td().memmap(tmp_path)
    with pytest.raises(ValueError):
        td[ftdim.dims(1)]


@pytest.mark.parametrize("index", [{1, 2}, 1.5, (slice(None), {0})])
def test_index_items_of_other_types_raise_index_and_type_errors(index):
    """A set or a float index item is refused: an IndexError as torch says, a TypeError on a stack dim."""
    with pytest.raises(IndexError):
        make_td()[index]
    with pytest.raises(TypeError):
        make("lazy")[(slice(None), {0})]  # the stack dim of this lazy stack is 1
