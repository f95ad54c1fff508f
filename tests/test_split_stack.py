"""Splitting and stacking (tensordict._ops.split_stack): split, unbind, tensor_split, stack, cat, densify."""

import pytest
import torch
from batch_kinds import KINDS, Frame, assert_leaves, make, make_td, shapes_and_dims
from hypothesis import given, settings
from hypothesis import strategies as st

import tensordict
from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


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


@pytest.mark.parametrize("kind", KINDS)
def test_tensor_split_parts(kind, tmp_path):
    """tensor_split gives the parts torch.tensor_split gives for each leaf."""
    obj = make(kind, tmp_path)
    for ios, dim in [(2, 1), ([1], 0), ((1, 2), -1), (torch.tensor([2]), 1), (torch.tensor(2), 0)]:
        parts = obj.tensor_split(ios, dim)
        for i, part in enumerate(parts):
            assert_leaves(part, obj, lambda x, e, i=i, s=ios, d=dim % 2: x.tensor_split(s, d)[i])
        assert len(parts) == len(torch.zeros(2, 3).tensor_split(ios, dim))


def test_tensor_split_sizes():
    """An int gives parts as equal as possible, the first ones longer; a list gives cut indices."""
    td = make_td((5,))
    assert [p.batch_size[0] for p in td.tensor_split(3)] == [2, 2, 1]
    assert [p.batch_size[0] for p in td.tensor_split([1, 4])] == [1, 3, 1]
    assert [p.batch_size[0] for p in td.tensor_split(7)] == [1, 1, 1, 1, 1, 0, 0]


def test_tensor_split_parts_are_views():
    """The parts of tensor_split share memory with the tensordict."""
    td = make_td()
    td.tensor_split(2, 1)[1]["a"].zero_()
    assert (td["a"][:, 2] == 0).all()
    assert (td["a"][:, 0] != 0).any()


def test_to_lazystack_members():
    """to_lazystack stacks the slices lazily; a lazy stack along that dim is returned as it is."""
    td = make_td()
    lazy = td.to_lazystack(0)
    assert isinstance(lazy, LazyStackedTensorDict)
    assert lazy.stack_dim == 0 and len(lazy.tensordicts) == 2
    assert lazy.to_lazystack(0) is lazy
    assert lazy.to_lazystack(-2) is lazy
    other = lazy.to_lazystack(1)
    assert other.stack_dim == 1 and len(other.tensordicts) == 3
    assert all(isinstance(m, LazyStackedTensorDict) for m in other.tensordicts)
    assert torch.equal(other["a"], td["a"])


@pytest.mark.parametrize("kind", KINDS)
def test_to_lazystack_keeps_the_leaves(kind, tmp_path):
    """to_lazystack gives the same leaves and batch size, on every kind."""
    obj = make(kind, tmp_path)
    result = obj.to_lazystack(1)
    assert_leaves(result, obj, lambda x, e: x)
    assert result.batch_size == obj.batch_size


@pytest.mark.parametrize("kind", ["td", "lazy", "memmap"])
def test_tensor_split_parts_are_of_the_kind(kind, tmp_path):
    """The parts of tensor_split select rows, so a lazy stack gives lazy parts."""
    obj = make(kind, tmp_path)
    assert isinstance(obj.tensor_split(2, 1)[0], LazyStackedTensorDict) == (kind == "lazy")


def test_tensorclass_results_are_instances():
    """On a tensorclass the parts and the lazy stack are instances of the class."""
    obj = make("tensorclass")
    assert all(type(part) is Frame for part in obj.tensor_split(2, 1))
    assert type(obj.to_lazystack(0)) is Frame


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.tensor_split(2)[1], ["x", "y", "z"]),
        (lambda t: t.to_lazystack(1), ["x", None, "z"]),
    ],
)
def test_names(call, names):
    """The parts keep the dim names; the stack dim of to_lazystack loses its name."""
    td = make_td((2, 3, 4), names=["x", "y", "z"])
    assert call(td).names == names


def test_tensor_split_gives_non_tensor_entries_the_part_size():
    """A non-tensor entry takes the batch size of each part."""
    td = TensorDict({"a": torch.zeros(3, 2), "s": "hi"}, [3, 2])
    assert td.tensor_split(2)[0].get("s").batch_size == torch.Size([2, 2])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda t: t.tensor_split(2, 9), IndexError, "dim 9"),
        (lambda t: t.tensor_split(2.0), ValueError, "indices_or_sections must be an int"),
        (lambda t: t.tensor_split(0), ValueError, "number of sections must be greater than 0"),
        (lambda t: t.to_lazystack(9), IndexError, "dim 9"),
    ],
)
def test_errors(call, exc, match):
    """Bad arguments raise the builtin the well-known API raises and leave the tensordict unchanged."""
    td = make_td((2, 3, 4))
    before = td.clone()
    with pytest.raises(exc, match=match):
        call(td)
    assert (td == before).all()


def test_iter_goes_over_first_batch_dim():
    """Iterating yields the tensordict indexed along its first batch dim."""
    td = make_td((3,))
    rows = list(td)
    assert len(rows) == 3
    for i, row in enumerate(rows):
        assert row.batch_size == torch.Size([])
        assert torch.equal(row["b", "c"], td["b", "c"][i])


def test_iter_without_batch_dims_raises():
    """Iterating over a tensordict without batch dims is a TypeError."""
    with pytest.raises(TypeError):
        iter(TensorDict({"a": torch.zeros(2)}, []))


# --- stacking tensordicts ----------------------------------------------------------


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


def test_stack_and_cat_keep_dimension_names():
    """torch.stack inserts an unnamed dim; torch.cat keeps the names."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["x", "y"])
    assert torch.stack([td, td], 1).names == ["x", None, "y"]
    assert torch.cat([td, td], 0).names == ["x", "y"]


def test_stack_of_differently_named_tensordicts_has_no_names():
    """Stacking tensordicts whose dim names differ gives no names."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["x", "y"])
    other = td.clone()
    other.names = ["x", "z"]
    assert torch.stack([td, other], 0).names == [None, None, None]


def test_stack_class_methods():
    """TensorDict.lazy_stack, maybe_dense_stack, stack and cat build what their names say."""
    td = make_td()
    other = TensorDict({"x": torch.zeros(2, 3)}, [2, 3])
    lazy = TensorDict.lazy_stack([td, td], 1)
    assert isinstance(lazy, LazyStackedTensorDict)
    assert lazy.stack_dim == 1 and lazy.batch_size == torch.Size([2, 2, 3])
    assert isinstance(LazyStackedTensorDict.lazy_stack([td, td]), LazyStackedTensorDict)
    assert type(TensorDict.maybe_dense_stack([td, td])) is TensorDict
    assert isinstance(TensorDict.maybe_dense_stack([td, other]), LazyStackedTensorDict)
    assert type(td.stack([td, td], 2)) is TensorDict
    assert torch.equal(TensorDict.stack([td, td], 2)["a"], torch.stack([td["a"]] * 2, 2))
    assert torch.equal(TensorDict.cat([td, td], 1)["b", "c"], torch.cat([td["b", "c"]] * 2, 1))


# --- stacking entries ---------------------------------------------------------------


def test_stack_from_tensordict_orders():
    """stack_from_tensordict stacks the tensor leaves in key order, sorted order or a given order."""
    td = TensorDict(
        {
            "b": torch.ones(3, 2),
            "a": torch.zeros(3, 2),
            "n": {"c": torch.full((3, 2), 2.0)},
            "s": "x",
        },
        [3],
    )
    assert td.stack_from_tensordict()[:, 0, 0].tolist() == [1.0, 0.0, 2.0]
    assert td.stack_from_tensordict(sorted=True)[:, 0, 0].tolist() == [0.0, 1.0, 2.0]
    order = [("n", "c"), "a", "b"]
    assert td.stack_from_tensordict(sorted=order)[:, 0, 0].tolist() == [2.0, 0.0, 1.0]
    assert td.stack_from_tensordict(-1).shape == torch.Size([3, 2, 3])
    assert td.cat_from_tensordict(1)[0].tolist() == [1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    out = torch.empty(3, 3, 2)
    assert td.stack_from_tensordict(out=out) is out
    assert torch.equal(out, td.stack_from_tensordict())


@pytest.mark.parametrize("kind", ["td", "lazy"])
def test_stack_and_cat_tensors(kind):
    """stack_tensors and cat_tensors write one new entry and drop the others unless kept."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.ones(3, 2)}, [3])
    a, b = td["a"].clone(), td["b"].clone()
    obj = td if kind == "td" else lazy_stack(list(td.unbind(0)))
    assert obj.stack_tensors("a", "b", out_key="c", dim=-1, keep_entries=True) is obj
    assert set(obj.keys()) == {"a", "b", "c"}
    assert torch.equal(obj["c"], torch.stack([a, b], -1))
    obj.cat_tensors("a", "b", out_key="d", dim=1)
    assert set(obj.keys(True, True)) == {"c", "d"}
    assert torch.equal(obj["d"], torch.cat([a, b], 1))


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda t: t.stack_tensors("a", "zz", out_key="c", dim=1), KeyError),
        (lambda t: t.stack_tensors("a", "b", out_key="c", dim=1), RuntimeError),
        (lambda t: t.cat_tensors("a", "b", out_key="c", dim=0), RuntimeError),
        (lambda t: t.stack_from_tensordict(), RuntimeError),
        (lambda t: t.lock_().cat_tensors("a", "b", out_key="c", dim=1), RuntimeError),
    ],
)
def test_stack_tensors_errors(call, exc):
    """A failing stack_tensors or cat_tensors raises and leaves the entries as they were."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.ones(3, 3)}, [3])
    with pytest.raises(exc):
        call(td)
    assert set(td.keys()) == {"a", "b"}


def test_stack_from_empty_tensordict():
    """stack_from_tensordict on a tensordict without tensor leaves raises RuntimeError."""
    with pytest.raises(RuntimeError, match="non-empty"):
        TensorDict({}, [3]).stack_from_tensordict()


# --- ragged entries --------------------------------------------------------------


def ragged_stack(dim=0):
    """A lazy stack whose "x" leaves differ in their last dim, with a dense leaf and a nested one."""
    a = TensorDict({"x": torch.zeros(2, 3), "y": torch.ones(2), "n": {"z": torch.zeros(2, 1)}}, [2])
    b = TensorDict({"x": torch.ones(2, 5), "y": torch.ones(2), "n": {"z": torch.ones(2, 1)}}, [2])
    return lazy_stack([a, b], dim)


def test_densify_lazy_stack():
    """densify stacks equal leaves densely and ragged ones into a nested tensor of the layout."""
    dense = ragged_stack().densify()
    assert type(dense) is TensorDict and dense.batch_size == torch.Size([2, 2])
    assert dense["x"].is_nested and dense["x"].layout == torch.strided
    assert not dense["y"].is_nested and dense["y"].shape == torch.Size([2, 2])
    assert type(dense["n"]) is TensorDict
    assert torch.equal(dense["n", "z"], torch.stack([torch.zeros(2, 1), torch.ones(2, 1)]))
    assert ragged_stack().densify(layout=torch.jagged)["x"].layout == torch.jagged
    assert dense.densify() is dense


def test_densify_tensordict():
    """densify returns a tensordict without lazy stacks itself, and densifies lazy sub-stacks."""
    td = make_td()
    assert td.densify() is td
    outer = TensorDict({"s": ragged_stack(), "t": torch.zeros(2)}, [2])
    dense = outer.densify()
    assert dense is not outer and type(dense["s"]) is TensorDict
    assert dense["s", "x"].is_nested


def test_densify_other_stack_dim():
    """densify of a lazy stack along a dim other than 0 raises NotImplementedError."""
    stack = ragged_stack(1)
    with pytest.raises(NotImplementedError, match="1"):
        stack.densify()


def test_to_padded_tensor():
    """to_padded_tensor pads each nested leaf with the padding value and keeps the others."""
    dense = ragged_stack().densify()
    padded = dense.to_padded_tensor(padding=-1.0)
    assert padded is not dense
    assert padded["x"].shape == torch.Size([2, 2, 5])
    assert padded["x"][0, 0].tolist() == [0.0, 0.0, 0.0, -1.0, -1.0]
    assert torch.equal(padded["y"], dense["y"])
    lazy = make("lazy")
    assert isinstance(lazy.to_padded_tensor(), LazyStackedTensorDict)


def test_to_padded_tensor_mask_key():
    """A mask_key raises RuntimeError when the ragged dim is not a batch dim."""
    with pytest.raises(RuntimeError, match="mask_key"):
        ragged_stack().densify().to_padded_tensor(mask_key="mask")


def ragged_batch(*pieces):
    """A tensordict of batch size [len(pieces), 3, -1] whose leaf is the nested tensor of pieces."""
    return TensorDict({"rows": torch.nested.nested_tensor(list(pieces))}, [len(pieces), 3, -1])


def test_to_padded_tensor_ragged_batch_dim():
    """A ragged batch dim (-1) is padded to its largest size, and the batch size follows."""
    td = ragged_batch(torch.ones(3, 4, 5), torch.ones(3, 6, 5))
    padded = td.to_padded_tensor(padding=-1.0)
    assert padded.batch_size == torch.Size([2, 3, 6])
    assert padded["rows"].shape == torch.Size([2, 3, 6, 5])
    assert padded["rows"][0, 0, :, 0].tolist() == [1.0] * 4 + [-1.0] * 2


def test_to_padded_tensor_writes_the_mask():
    """mask_key names a boolean entry, True on the data and False on the padding."""
    td = ragged_batch(torch.ones(3, 4, 5), torch.full((3, 6, 5), 2.0))
    padded = td.to_padded_tensor(padding=0.0, mask_key="mask")
    mask = padded["mask"]
    assert mask.dtype == torch.bool and mask.shape == torch.Size([2, 3, 6])
    assert mask.sum(-1).tolist() == [[4] * 3, [6] * 3]
    assert (padded["rows"][mask] != 0).all()


@ours_only  # the reference raises IndexError on the first, and on the second pads each leaf apart
def test_to_padded_tensor_ragged_batch_needs_agreeing_nested_leaves():
    """A ragged batch dim with no nested leaf, or nested leaves that disagree, is a PaddingError."""
    with pytest.raises(tensordict.errors.PaddingError, match="no entry is a nested tensor"):
        TensorDict({}, [3, -1]).to_padded_tensor()
    td = ragged_batch(torch.ones(3, 4, 5), torch.ones(3, 6, 5))
    td["other"] = torch.nested.nested_tensor([torch.ones(3, 2, 5), torch.ones(3, 7, 5)])
    with pytest.raises(tensordict.errors.PaddingError, match="'other'"):
        td.to_padded_tensor(mask_key="mask")


# --- properties ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(shapes_and_dims(), st.integers(1, 5))
def test_tensor_split_property(shape_dim, sections):
    """tensor_split equals torch.tensor_split of each leaf, part by part."""
    shape, dim = shape_dim
    td = make_td(shape)
    d = dim % len(shape)
    parts = td.tensor_split(sections, dim)
    assert len(parts) == sections
    for i, part in enumerate(parts):
        assert_leaves(part, td, lambda x, e, i=i: x.tensor_split(sections, d)[i])


def test_stack_and_cat_take_input_by_name():
    """tensordict.stack(input=...) and tensordict.cat(input=...) name their sequence as torch does."""
    parts = [TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(2)]
    assert tensordict.stack(input=parts, dim=1).batch_size == torch.Size([3, 2])
    assert tensordict.cat(input=parts).batch_size == torch.Size([6])


@pytest.mark.parametrize("size", [0, -1])
@pytest.mark.parametrize(
    "make_one",
    [
        lambda: TensorDict({}, [3, 2]),
        lambda: lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2])] * 3),
        lambda: tensordict.NonTensorData("a", batch_size=[3, 2]),
    ],
    ids=["dense", "lazy", "non_tensor"],
)
def test_split_refuses_a_size_that_is_not_positive(make_one, size):
    """An int split_size of 0 or less raises ValueError, whatever the tensordict class."""
    with pytest.raises(ValueError, match="split_size"):
        make_one().split(size, 0)
