"""More shape methods: tensor_split, roll, movedim, swapaxes, flip, narrow, tile, broadcast_to, rot90, atleast_nd, to_lazystack."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, tensorclass

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


@tensorclass
class Frame:
    """A tensorclass with a tensor field and a tensordict field."""

    a: torch.Tensor
    b: TensorDict


def make_td(shape=(2, 3), names=None):
    """A tensordict with a float leaf of one feature dim and a nested int leaf."""
    n = torch.Size(shape).numel()
    return TensorDict(
        {
            "a": torch.arange(n * 4, dtype=torch.float32).reshape(*shape, 4),
            "b": {"c": torch.arange(n).reshape(shape)},
        },
        batch_size=shape,
        names=names,
    )


def make(kind, tmp_path=None):
    """The same data, of batch size [2, 3], as each kind of tensordict."""
    td = make_td()
    if kind == "td":
        return td
    if kind == "lazy":
        return lazy_stack(list(td.unbind(1)), 1)
    if kind == "tensorclass":
        return Frame(a=td["a"], b=td["b"], batch_size=[2, 3])
    if kind == "memmap":
        return td.memmap(tmp_path)
    raise AssertionError(kind)


KINDS = ["td", "lazy", "tensorclass", "memmap"]


def leaves(obj) -> dict:
    """The leaves of a tensordict or tensorclass instance, by nested key."""
    td = obj._tensordict if isinstance(obj, Frame) else obj
    return {key: td.get(key) for key in td.keys(True, True)}


def assert_leaves(result, source, fn):
    """Every leaf of ``result`` equals ``fn(leaf, feature_dims)`` on the same leaf of ``source``."""
    expected = leaves(source)
    got = leaves(result)
    assert set(got) == set(expected)
    for key, value in expected.items():
        extra = value.ndim - source.batch_dims
        assert torch.equal(got[key], fn(value, extra)), key


# (call on the tensordict, the same transform on a leaf given its number of feature dims)
CASES = {
    "roll": (lambda t: t.roll(1), lambda x, e: x.flatten(0, 1).roll(1, 0).reshape(x.shape)),
    "roll2": (lambda t: t.roll((1, 2), (0, -1)), lambda x, e: x.roll((1, 2), (0, 1))),
    "movedim": (lambda t: t.movedim(0, 1), lambda x, e: x.movedim(0, 1)),
    "moveaxis": (lambda t: t.moveaxis(-1, 0), lambda x, e: x.movedim(1, 0)),
    "swapaxes": (lambda t: t.swapaxes(0, 1), lambda x, e: x.swapaxes(0, 1)),
    "swapdims": (lambda t: t.swapdims(1, 0), lambda x, e: x.swapaxes(0, 1)),
    "flip": (lambda t: t.flip(0), lambda x, e: x.flip(0)),
    "flip2": (lambda t: t.flip([0, -1]), lambda x, e: x.flip((0, 1))),
    "fliplr": (lambda t: t.fliplr(), lambda x, e: x.flip(1)),
    "flipud": (lambda t: t.flipud(), lambda x, e: x.flip(0)),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda x, e: x.narrow(1, 1, 2)),
    "narrow_neg": (lambda t: t.narrow(-1, -2, 1), lambda x, e: x.narrow(1, 1, 1)),
    "tile": (lambda t: t.tile((2, 1)), lambda x, e: x.tile((2, 1) + (1,) * e)),
    "tile_int": (lambda t: t.tile(2), lambda x, e: x.tile((1, 2) + (1,) * e)),
    "tile_more": (lambda t: t.tile((2, 1, 1)), lambda x, e: x.tile((2, 1, 1) + (1,) * e)),
    "broadcast_to": (
        lambda t: t.broadcast_to((5, 2, 3)),
        lambda x, e: x.expand(torch.Size((5,)) + x.shape),
    ),
    "rot90": (lambda t: t.rot90(), lambda x, e: x.rot90(1, (0, 1))),
    "rot90_k": (lambda t: t.rot90(-3, (1, 0)), lambda x, e: x.rot90(-3, (1, 0))),
    "atleast_1d": (lambda t: t.atleast_1d(), lambda x, e: x),
    "atleast_3d": (lambda t: t.atleast_3d(), lambda x, e: x.unsqueeze(0)),
    "to_lazystack": (lambda t: t.to_lazystack(1), lambda x, e: x),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_leaves_transformed(kind, case, tmp_path):
    """Each method transforms every leaf along the batch dims only, on every kind."""
    obj = make(kind, tmp_path)
    call, fn = CASES[case]
    result = call(obj)
    assert_leaves(result, obj, fn)
    assert result.batch_size == fn(torch.zeros(2, 3), 0).shape


@pytest.mark.parametrize("kind", KINDS)
def test_tensor_split_parts(kind, tmp_path):
    """tensor_split gives the parts torch.tensor_split gives for each leaf."""
    obj = make(kind, tmp_path)
    for ios, dim in [(2, 1), ([1], 0), ((1, 2), -1), (torch.tensor([2]), 1), (torch.tensor(2), 0)]:
        parts = obj.tensor_split(ios, dim)
        for i, part in enumerate(parts):
            assert_leaves(part, obj, lambda x, e, i=i, s=ios, d=dim % 2: x.tensor_split(s, d)[i])
        assert len(parts) == len(torch.zeros(2, 3).tensor_split(ios, dim))


@pytest.mark.parametrize("kind", ["td", "lazy", "memmap"])
def test_results_are_tensordicts_of_the_kind(kind, tmp_path):
    """Reordering and row-selecting methods keep a lazy stack lazy; the others make it dense."""
    obj = make(kind, tmp_path)
    lazy = kind == "lazy"
    for result in [obj.movedim(0, 1), obj.swapaxes(0, 1), obj.tensor_split(2, 1)[0]]:
        assert isinstance(result, LazyStackedTensorDict) == lazy
    for result in [obj.roll(1), obj.flip(0), obj.narrow(0, 0, 1), obj.tile(2), obj.rot90()]:
        assert type(result) is TensorDict
    assert isinstance(obj.atleast_3d(), LazyStackedTensorDict) == lazy


def test_tensorclass_results_are_instances():
    """On a tensorclass every method returns instances of the class."""
    obj = make("tensorclass")
    for result in [obj.roll(1), obj.movedim(0, 1), obj.flip(0), obj.tile(2), obj.rot90()]:
        assert type(result) is Frame
    assert all(type(part) is Frame for part in obj.tensor_split(2, 1))
    assert type(obj.to_lazystack(0)) is Frame


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.movedim(0, -1), ["y", "z", "x"]),
        (lambda t: t.movedim((0, 1), (1, 0)), ["y", "x", "z"]),
        (lambda t: t.swapaxes(0, -1), ["z", "y", "x"]),
        (lambda t: t.rot90(), ["y", "x", "z"]),
        (lambda t: t.rot90(2), ["x", "y", "z"]),
        (lambda t: t.rot90(1, (1, -1)), ["x", "z", "y"]),
        (lambda t: t.roll(1, -1), ["x", "y", "z"]),
        (lambda t: t.flip((0, 2)), ["x", "y", "z"]),
        (lambda t: t.narrow(1, 0, 2), ["x", "y", "z"]),
        (lambda t: t.tensor_split(2)[1], ["x", "y", "z"]),
        (lambda t: t.tile(2), [None, None, None]),
        (lambda t: t.broadcast_to((1, 2, 3, 4)), [None, None, None, None]),
        (lambda t: t.broadcast_to((2, 3, 4)), [None, None, None]),
        (lambda t: t.to_lazystack(1), ["x", None, "z"]),
        (lambda t: t.atleast_3d(), ["x", "y", "z"]),
    ],
)
def test_names(call, names):
    """Dim names follow their dims through moves and rotations; tile and broadcast_to drop them."""
    td = make_td((2, 3, 4), names=["x", "y", "z"])
    assert call(td).names == names


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


def test_atleast_identity_and_growth():
    """atleast_nd returns the tensordict itself when it has enough dims, else prepends dims of size 1."""
    td = make_td((3, 2))
    assert td.atleast_1d() is td
    assert td.atleast_2d() is td
    assert td.atleast_3d().batch_size == torch.Size([1, 3, 2])
    zero = TensorDict({"a": torch.zeros(5)}, [])
    assert zero.atleast_1d().batch_size == torch.Size([1])
    assert zero.atleast_2d().batch_size == torch.Size([1, 1])
    assert make_td((3,)).atleast_2d()["a"].shape == torch.Size([1, 3, 4])


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


def test_roll_without_dims_flattens_the_batch():
    """roll without dims rolls the batch dims as one flattened dim, feature dims apart."""
    td = TensorDict({"a": torch.arange(12).reshape(3, 2, 2)}, [3, 2])
    assert td.roll(1)["a"][:, :, 0].tolist() == [[10, 0], [2, 4], [6, 8]]


def test_roll_without_batch_dims():
    """roll on a tensordict without batch dims returns an equal copy."""
    td = TensorDict({"a": torch.arange(3)}, [])
    out = td.roll(1)
    assert out is not td and torch.equal(out["a"], td["a"])


def test_roll_inplace():
    """roll(inplace=True) rolls the tensordict itself and returns it."""
    td = make_td()
    expected = td["a"].roll(-1, 1)
    assert td.roll(-1, 1, inplace=True) is td
    assert torch.equal(td["a"], expected)


def test_non_tensor_entries_take_the_new_batch_size():
    """A non-tensor entry keeps its value and takes the batch size of the result."""
    td = TensorDict({"a": torch.zeros(3, 2), "s": "hi"}, [3, 2])
    assert td.rot90().get("s").batch_size == torch.Size([2, 3])
    assert td.tile(2).get("s").batch_size == torch.Size([3, 4])
    assert td.narrow(0, 0, 1)["s"] == "hi"
    assert td.tensor_split(2)[0].get("s").batch_size == torch.Size([2, 2])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda t: t.tensor_split(2, 9), IndexError, "dim 9"),
        (lambda t: t.tensor_split(2.0), ValueError, "indices_or_sections must be an int"),
        (lambda t: t.tensor_split(0), ValueError, "number of sections must be greater than 0"),
        (lambda t: t.roll(1, 9), IndexError, "dim 9"),
        (lambda t: t.roll((1, 2), 0), RuntimeError, "shifts and dim"),
        (lambda t: t.movedim(0, 9), IndexError, "out of range"),
        (lambda t: t.movedim((0, 0), (1, 0)), RuntimeError, "repeated"),
        (lambda t: t.movedim((0, 1), (1,)), ValueError, "source and destination must have"),
        (lambda t: t.swapaxes(0, 9), ValueError, "range"),
        (lambda t: t.flip(9), IndexError, "out of range"),
        (lambda t: t.narrow(9, 0, 1), IndexError, "out of range"),
        (lambda t: t.narrow(0, 1, 5), RuntimeError, r"start \(1\) \+ length \(5\) exceeds"),
        (lambda t: t.broadcast_to((5, 7)), RuntimeError, "sizes provided|expanded size"),
        (lambda t: t.rot90(1, (0, 0)), RuntimeError, "different"),
        (lambda t: t.rot90(1, (0, 9)), IndexError, "out of range"),
        (lambda t: t.to_lazystack(9), IndexError, "dim 9"),
        (lambda t: t[0, 0].fliplr(), RuntimeError, "fliplr"),
        (lambda t: t[0, 0, 0].flipud(), RuntimeError, "flipud"),
        (lambda t: t[0, 0].rot90(), RuntimeError, "rot90"),
    ],
)
def test_errors(call, exc, match):
    """Bad arguments raise the builtin the well-known API raises and leave the tensordict unchanged."""
    td = make_td((2, 3, 4))
    before = td.clone()
    with pytest.raises(exc, match=match):
        call(td)
    assert (td == before).all()


# --- properties ---------------------------------------------------------------


@st.composite
def shapes_and_dims(draw):
    """A batch shape of 1 to 3 dims and a dim of it."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, dim


@settings(max_examples=40, deadline=None)
@given(shapes_and_dims(), st.integers(-5, 5))
def test_roll_flip_property(shape_dim, shift):
    """roll and flip equal torch.roll and torch.flip applied to each leaf on the same batch dim."""
    shape, dim = shape_dim
    td = make_td(shape)
    d = dim % len(shape)
    assert_leaves(td.roll(shift, dim), td, lambda x, e: x.roll(shift, d))
    assert_leaves(td.flip(dim), td, lambda x, e: x.flip(d))


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


@settings(max_examples=40, deadline=None)
@given(shapes_and_dims(), st.data())
def test_movedim_narrow_property(shape_dim, data):
    """movedim and narrow equal torch.movedim and torch.narrow of each leaf on the batch dims."""
    shape, dim = shape_dim
    td = make_td(shape)
    n = len(shape)
    d = dim % n
    dest = data.draw(st.integers(0, n - 1))
    assert_leaves(td.movedim(dim, dest), td, lambda x, e: x.movedim(d, dest))
    start = data.draw(st.integers(0, shape[d]))
    length = data.draw(st.integers(0, shape[d] - start))
    assert_leaves(td.narrow(dim, start, length), td, lambda x, e: x.narrow(d, start, length))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=2, max_size=3),
    st.integers(-4, 4),
    st.lists(st.integers(0, 2), min_size=1, max_size=4),
)
def test_rot90_tile_property(shape, k, reps):
    """rot90 and tile equal torch.rot90 and torch.tile of each leaf on the batch dims."""
    td = make_td(tuple(shape))
    assert_leaves(td.rot90(k), td, lambda x, e: x.rot90(k, (0, 1)))
    full = (1,) * (len(shape) - len(reps)) + tuple(reps)
    assert_leaves(td.tile(tuple(reps)), td, lambda x, e: x.tile(full + (1,) * e))


# --- stacking ------------------------------------------------------------------


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
