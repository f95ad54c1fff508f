"""Shape of a tensordict: indexing, batch size, reshaping, stacking and friends."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tensordict
from tensordict import TensorDict

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def make_td(shape=(2, 3)):
    """A tensordict with a float leaf of one extra dim and a nested int leaf."""
    n = torch.Size(shape).numel()
    return TensorDict(
        {
            "a": torch.arange(n * 4, dtype=torch.float32).reshape(*shape, 4),
            "b": {"c": torch.arange(n).reshape(shape)},
        },
        batch_size=shape,
    )


def assert_leaves(td, fn, source=None):
    """Every leaf of ``td`` equals ``fn`` applied to the same leaf of ``source``."""
    source = make_td() if source is None else source
    assert set(td.keys(True, True)) == set(source.keys(True, True))
    for key in source.keys(True, True):
        assert torch.equal(td[key], fn(source[key])), key


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


# --- indexing --------------------------------------------------------------------


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


# --- index assignment ------------------------------------------------------------


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


# --- batch size, shape, names ----------------------------------------------------


def test_shape_attributes():
    """shape, batch_dims, ndim, dim(), numel() describe the batch dims."""
    td = make_td()
    assert td.shape == td.batch_size == torch.Size([2, 3])
    assert td.batch_dims == td.ndim == td.dim() == 2
    assert td.numel() == 6
    assert TensorDict({}, []).numel() == 1


def test_batch_size_setter_shrinks():
    """Setting a shorter batch size keeps the sub-tensordicts' longer batch sizes valid."""
    td = make_td()
    td.batch_size = [2]
    assert td.batch_size == torch.Size([2])
    assert td["b"].batch_size == torch.Size([2, 3])
    td.batch_size = []
    assert td.batch_size == torch.Size([])


def test_batch_size_setter_refuses_bad_size():
    """A batch size that a leaf does not have is refused and nothing changes."""
    td = make_td()
    with pytest.raises(RuntimeError):
        td.batch_size = [3]
    assert td.batch_size == torch.Size([2, 3])
    with pytest.raises(RuntimeError):
        td.batch_size = [2, 3, 4]
    assert td.batch_size == torch.Size([2, 3])


def test_names_setter():
    """names can be set, reset to None, and are passed to sub-tensordicts."""
    td = make_td()
    td.names = ["x", "y"]
    assert td.names == ["x", "y"]
    assert td["b"].names == ["x", "y"]
    assert td[0].names == ["y"]
    td.names = None
    assert td.names == [None, None]
    with pytest.raises(ValueError):
        td.names = ["x"]


def test_names_follow_shape_ops():
    """Permuting, transposing and unsqueezing move the dim names too."""
    td = TensorDict({"a": torch.zeros(3, 4)}, [3, 4], names=["x", "y"])
    assert td.permute(1, 0).names == ["y", "x"]
    assert td.transpose(0, 1).names == ["y", "x"]
    assert td.unsqueeze(0).names == [None, "x", "y"]
    assert td[None].names == [None, "x", "y"]


# --- reshape and friends ---------------------------------------------------------


@pytest.mark.parametrize("shape", [(6,), (-1,), (3, 2), ((3, 2),), (1, 6)])
def test_reshape(shape):
    """reshape reshapes the batch dims of every leaf."""
    out = make_td().reshape(*shape)
    size = torch.empty(2, 3).reshape(*shape).shape
    assert out.batch_size == size
    assert out["b"].batch_size == size
    assert_leaves(out, lambda x: x.reshape(*size, *x.shape[2:]))


def test_reshape_bad_size_raises():
    """A reshape that does not keep the number of elements is a RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().reshape(4)


def test_view_shares_memory():
    """view changes the batch size and shares memory."""
    td = make_td()
    out = td.view(-1, 2)
    assert out.batch_size == torch.Size([3, 2])
    assert out["a"].data_ptr() == td["a"].data_ptr()
    out["b", "c"][0, 0] = 100
    assert td["b", "c"][0, 0] == 100


@pytest.mark.parametrize("dims", [(1, 0), ([1, 0],), (-1, -2)])
def test_permute(dims):
    """permute permutes the batch dims of every leaf, leaving feature dims last."""
    out = make_td().permute(*dims)
    assert out.batch_size == torch.Size([3, 2])
    assert_leaves(out, lambda x: x.transpose(0, 1))


def test_transpose():
    """transpose swaps two batch dims of every leaf."""
    out = make_td().transpose(-1, -2)
    assert out.batch_size == torch.Size([3, 2])
    assert_leaves(out, lambda x: x.transpose(0, 1))


@pytest.mark.parametrize(
    "dim, size", [(0, [1, 2, 3]), (1, [2, 1, 3]), (2, [2, 3, 1]), (-1, [2, 3, 1])]
)
def test_unsqueeze(dim, size):
    """unsqueeze adds a batch dim; negative dims count from the last batch dim."""
    out = make_td().unsqueeze(dim)
    assert out.batch_size == torch.Size(size)
    pos = dim if dim >= 0 else dim + 3
    assert_leaves(out, lambda x: x.unsqueeze(pos))


def test_unsqueeze_out_of_range_raises():
    """unsqueeze past the batch dims is an error."""
    with pytest.raises((RuntimeError, IndexError)):
        make_td().unsqueeze(3)


def test_squeeze():
    """squeeze drops singleton batch dims only, never feature dims."""
    td = make_td()
    assert td.unsqueeze(1).squeeze(1).batch_size == torch.Size([2, 3])
    assert td.unsqueeze(1).squeeze().batch_size == torch.Size([2, 3])
    assert td.squeeze(0).batch_size == torch.Size([2, 3])
    out = td[:1].squeeze()
    assert out.batch_size == torch.Size([3])
    assert out["a"].shape == (3, 4)
    single = TensorDict({"a": torch.zeros(1, 1)}, [1])
    assert single.squeeze()["a"].shape == (1,)


def test_flatten_unflatten():
    """flatten merges batch dims, unflatten splits one back."""
    td = make_td()
    flat = td.flatten(0, 1)
    assert flat.batch_size == torch.Size([6])
    assert_leaves(flat, lambda x: x.flatten(0, 1))
    assert td.flatten().batch_size == torch.Size([6])
    back = flat.unflatten(0, (2, 3))
    assert back.batch_size == torch.Size([2, 3])
    assert (back == td).all()
    assert td.unflatten(1, (3, 1))["a"].shape == (2, 3, 1, 4)


def test_flatten_past_batch_dims_raises():
    """flatten over feature dims is an IndexError."""
    with pytest.raises(IndexError):
        make_td().flatten(0, 2)


def test_expand():
    """expand prepends batch dims and broadcasts singleton ones."""
    td = make_td()
    out = td.expand(4, 2, 3)
    assert out.batch_size == torch.Size([4, 2, 3])
    assert out["b"].batch_size == torch.Size([4, 2, 3])
    assert_leaves(out, lambda x: x.expand(4, *x.shape))
    assert td.expand((4, 2, 3)).batch_size == torch.Size([4, 2, 3])
    assert td[:, :1].expand(2, 5)["b", "c"].tolist() == [[0] * 5, [3] * 5]


@pytest.mark.parametrize("size", [(2, 4), (3,)])
def test_expand_bad_size_raises(size):
    """expand to an incompatible or shorter size is a RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().expand(*size)


@pytest.mark.parametrize(
    "split, dim, sizes",
    [(1, 0, [[1, 3], [1, 3]]), (2, 1, [[2, 2], [2, 1]]), ([1, 2], 1, [[2, 1], [2, 2]])],
)
def test_split(split, dim, sizes):
    """split cuts every leaf along a batch dim."""
    td = make_td()
    parts = td.split(split, dim)
    assert [list(p.batch_size) for p in parts] == sizes
    assert torch.equal(torch.cat([p["a"] for p in parts], dim), td["a"])


def test_split_bad_sizes_raises():
    """split sizes that do not sum to the dim are a RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().split([1, 1], dim=1)


def test_chunk():
    """chunk splits into the given number of parts."""
    td = make_td()
    assert [list(p.batch_size) for p in td.chunk(2, 1)] == [[2, 2], [2, 1]]
    assert [list(p.batch_size) for p in td.chunk(3, dim=1)] == [[2, 1]] * 3


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind(dim):
    """unbind returns the slices along a batch dim; torch.unbind does the same."""
    td = make_td()
    parts = td.unbind(dim)
    assert len(parts) == td.batch_size[dim]
    for i, part in enumerate(parts):
        assert torch.equal(part["b", "c"], td["b", "c"].select(dim, i))
    assert len(torch.unbind(td, dim)) == len(parts)


def test_unbind_past_batch_dims_raises():
    """unbind of a feature dim is an IndexError."""
    with pytest.raises(IndexError):
        make_td().unbind(2)


def test_repeat():
    """repeat tiles the batch dims of every leaf."""
    td = make_td()
    out = td.repeat(2, 2)
    assert out.batch_size == torch.Size([4, 6])
    assert torch.equal(out["b", "c"], td["b", "c"].repeat(2, 2))
    assert torch.equal(out["a"], td["a"].repeat(2, 2, 1))


def test_repeat_wrong_count_raises():
    """repeat needs one count per batch dim."""
    with pytest.raises(ValueError):
        make_td().repeat(2)


def test_gather():
    """gather picks entries along a batch dim with an index of the batch shape."""
    td = make_td()
    index = torch.tensor([[0, 0, 2], [1, 2, 0]])
    out = td.gather(1, index)
    assert out.batch_size == torch.Size([2, 3])
    assert out["b", "c"].tolist() == [[0, 0, 2], [4, 5, 3]]
    assert torch.equal(out["a"], td["a"].gather(1, index.unsqueeze(-1).expand(2, 3, 4)))
    assert torch.gather(td, 1, index)["b", "c"].tolist() == [[0, 0, 2], [4, 5, 3]]
    assert td.gather(1, torch.tensor([[0], [1]])).batch_size == torch.Size([2, 1])


MASK = torch.tensor([[True, False, True], [False, False, True]])


def test_masked_fill():
    """masked_fill fills every leaf where the batch mask is True, out of place."""
    td = make_td()
    out = td.masked_fill(MASK, -1)
    assert out["b", "c"].tolist() == [[-1, 1, -1], [3, 4, -1]]
    assert out["a"][0, 0].tolist() == [-1.0] * 4
    assert out["a"][0, 1].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert td["b", "c"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_masked_fill_():
    """masked_fill_ fills in place and returns the tensordict."""
    td = make_td()
    a = td["a"]
    assert td.masked_fill_(MASK, 0) is td
    assert td["a"] is a
    assert td["b", "c"].tolist() == [[0, 1, 0], [3, 4, 0]]
    assert a[1, 2].sum() == 0


def test_where():
    """where takes each leaf from self where the condition holds, else from other."""
    td = make_td()
    other = torch.zeros_like(td)
    assert td.where(MASK, other)["b", "c"].tolist() == [[0, 0, 2], [0, 0, 5]]
    assert torch.where(MASK, td, other)["b", "c"].tolist() == [[0, 0, 2], [0, 0, 5]]
    assert td.where(MASK, -1)["b", "c"].tolist() == [[0, -1, 2], [-1, -1, 5]]
    out = td.where(MASK, other)
    assert torch.equal(out["a"], torch.where(MASK.unsqueeze(-1), td["a"], 0.0))


# --- stack / cat -----------------------------------------------------------------


@pytest.mark.parametrize("dim, size", [(0, [2, 2, 3]), (1, [2, 2, 3]), (-1, [2, 3, 2])])
def test_torch_stack(dim, size):
    """torch.stack of tensordicts stacks every leaf along a new batch dim."""
    tds = [make_td(), make_td().apply(lambda x: x + 1)]
    out = torch.stack(tds, dim)
    assert isinstance(out, TensorDict)
    assert out.batch_size == torch.Size(size)
    assert out["b"].batch_size == torch.Size(size)
    pos = dim if dim >= 0 else dim + 3
    for key in ("a", ("b", "c")):
        assert torch.equal(out[key], torch.stack([t[key] for t in tds], pos))


@pytest.mark.parametrize("dim, size", [(0, [4, 3]), (1, [2, 6])])
def test_torch_cat(dim, size):
    """torch.cat of tensordicts concatenates every leaf along a batch dim."""
    tds = [make_td(), make_td().apply(lambda x: x + 1)]
    out = torch.cat(tds, dim)
    assert out.batch_size == torch.Size(size)
    for key in ("a", ("b", "c")):
        assert torch.equal(out[key], torch.cat([t[key] for t in tds], dim))


def test_module_stack_and_cat():
    """tensordict.stack and tensordict.cat match torch.stack and torch.cat."""
    tds = [make_td(), make_td()]
    assert tensordict.stack(tds, 0).batch_size == torch.Size([2, 2, 3])
    assert tensordict.cat(tds, 0).batch_size == torch.Size([4, 3])


def test_cat_unequal_sizes_along_dim():
    """cat accepts different sizes along the cat dim."""
    assert torch.cat([make_td(), make_td()[:, :1]], 1).batch_size == torch.Size([2, 4])


@pytest.mark.parametrize(
    "other", [lambda: make_td().exclude("a"), lambda: make_td().exclude(("b", "c"))]
)
def test_stack_different_keys_raises(other):
    """Stacking tensordicts with different keys is a RuntimeError."""
    with pytest.raises(RuntimeError):
        torch.stack([make_td(), other()], 0)


def test_cat_different_keys_raises():
    """Concatenating tensordicts with different keys is a KeyError naming the key."""
    with pytest.raises(KeyError, match="a"):
        torch.cat([make_td(), make_td().exclude("a")], 0)


def test_stack_different_batch_sizes_raises():
    """Stacking tensordicts of different batch sizes is a RuntimeError."""
    with pytest.raises(RuntimeError):
        torch.stack([make_td(), make_td()[:1]], 0)


def test_cat_mismatched_other_dims_raises():
    """cat with different sizes off the cat dim is a RuntimeError."""
    with pytest.raises(RuntimeError):
        torch.cat([make_td(), make_td()[:, :1]], 0)


def test_cat_past_batch_dims_raises():
    """cat along a feature dim is an error."""
    with pytest.raises((RuntimeError, IndexError)):
        torch.cat([make_td(), make_td()], 2)


def test_stack_empty_list_raises():
    """Stacking no tensordict is a RuntimeError."""
    with pytest.raises(RuntimeError):
        tensordict.stack([], 0)


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


@st.composite
def reshape_cases(draw):
    """A batch shape, a permutation of its dims and another shape of the same numel."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    perm = draw(st.permutations(range(len(shape))))
    sizes = [s for s in shape]
    new_shape = []
    while sizes:
        k = draw(st.integers(1, len(sizes)))
        new_shape.append(int(torch.tensor(sizes[:k]).prod()))
        sizes = sizes[k:]
    if draw(st.booleans()):
        new_shape[draw(st.integers(0, len(new_shape) - 1))] = -1
    return shape, list(perm), new_shape


@settings(max_examples=50, deadline=None)
@given(reshape_cases())
def test_property_reshape_permute_match_leaves(case):
    """reshape and permute of a tensordict equal the same op on each leaf's batch dims."""
    shape, perm, new_shape = case
    td = make_td(shape)
    n = len(shape)
    reshaped = td.reshape(*new_shape)
    size = torch.empty(shape).reshape(new_shape).shape
    assert reshaped.batch_size == size
    assert torch.equal(reshaped["a"], td["a"].reshape(*size, 4))
    assert torch.equal(reshaped["b", "c"], td["b", "c"].reshape(size))
    permuted = td.permute(*perm)
    assert permuted.batch_size == torch.Size([shape[p] for p in perm])
    assert torch.equal(permuted["a"], td["a"].permute(*perm, n))
    assert torch.equal(permuted["b", "c"], td["b", "c"].permute(*perm))


def test_stack_and_cat_keep_dimension_names():
    """torch.stack inserts an unnamed dim; torch.cat keeps the names."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["x", "y"])
    assert torch.stack([td, td], 1).names == ["x", None, "y"]
    assert torch.cat([td, td], 0).names == ["x", "y"]
