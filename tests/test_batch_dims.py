"""The batch dims themselves (tensordict._ops.batch_dims): size, names, reshaping, reordering, expanding, narrowing."""

import pytest
import torch
from batch_kinds import KINDS, Frame, assert_leaves, make, make_td, shapes_and_dims
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, TensorDict, set_lazy_legacy

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def assert_each_leaf(td, fn, source=None):
    """Every leaf of ``td`` equals ``fn`` applied to the same leaf of ``source``."""
    source = make_td() if source is None else source
    assert set(td.keys(True, True)) == set(source.keys(True, True))
    for key in source.keys(True, True):
        assert torch.equal(td[key], fn(source[key])), key


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


@pytest.mark.parametrize("shape", [(6,), (-1,), (3, 2), ((3, 2),), (1, 6)])
def test_reshape(shape):
    """reshape reshapes the batch dims of every leaf."""
    out = make_td().reshape(*shape)
    size = torch.empty(2, 3).reshape(*shape).shape
    assert out.batch_size == size
    assert out["b"].batch_size == size
    assert_each_leaf(out, lambda x: x.reshape(*size, *x.shape[2:]))


def test_reshape_bad_size_raises():
    """A reshape that does not keep the number of elements is a RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().reshape(4)


def test_reshape_and_view_take_the_size_keyword():
    """reshape(size=...) and view(size=...) give the batch size as a keyword."""
    td = make_td()
    assert td.reshape(size=(3, 2)).batch_size == torch.Size([3, 2])
    assert td.reshape(size=td.shape) is td
    assert td.view(size=[6])["a"].data_ptr() == td["a"].data_ptr()
    assert td.view(size=[6]).batch_size == torch.Size([6])


def test_view_as_a_dtype_views_every_leaf():
    """view(dtype) views each leaf as the dtype; batch_size= sets the batch size of the result."""
    td = TensorDict(
        a=torch.zeros(2, 3), b={"c": torch.zeros(2, 1, dtype=torch.int64)}, batch_size=[2]
    )
    out = td.view(torch.uint8)
    assert out.batch_size == torch.Size([2])
    assert out["a"].shape == torch.Size([2, 12]) and out["b", "c"].shape == torch.Size([2, 8])
    assert out["a"].data_ptr() == td["a"].data_ptr()
    assert td.view(torch.uint8, batch_size=[]).batch_size == torch.Size([])


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
    assert_each_leaf(out, lambda x: x.transpose(0, 1))


def test_transpose():
    """transpose swaps two batch dims of every leaf."""
    out = make_td().transpose(-1, -2)
    assert out.batch_size == torch.Size([3, 2])
    assert_each_leaf(out, lambda x: x.transpose(0, 1))


def test_transpose_of_a_dim_with_itself_is_the_tensordict():
    """transpose(d, d) changes nothing and returns the tensordict itself."""
    td = make_td()
    assert td.transpose(1, -1) is td


@pytest.mark.parametrize(
    "dim, size", [(0, [1, 2, 3]), (1, [2, 1, 3]), (2, [2, 3, 1]), (-1, [2, 3, 1])]
)
def test_unsqueeze(dim, size):
    """unsqueeze adds a batch dim; negative dims count from the last batch dim."""
    out = make_td().unsqueeze(dim)
    assert out.batch_size == torch.Size(size)
    pos = dim if dim >= 0 else dim + 3
    assert_each_leaf(out, lambda x: x.unsqueeze(pos))


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
    assert_each_leaf(flat, lambda x: x.flatten(0, 1))
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
    assert_each_leaf(out, lambda x: x.expand(4, *x.shape))
    assert td.expand((4, 2, 3)).batch_size == torch.Size([4, 2, 3])
    assert td[:, :1].expand(2, 5)["b", "c"].tolist() == [[0] * 5, [3] * 5]


@pytest.mark.parametrize("size", [(2, 4), (3,)])
def test_expand_bad_size_raises(size):
    """expand to an incompatible or shorter size is a RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().expand(*size)


def test_expand_as_a_tensordict_takes_each_leaf_shape():
    """expand_as of a tensordict expands each leaf to the other's leaf, feature dims of size 1 too."""
    ones = TensorDict({"a": torch.ones(3, 1, 4), "b": {"c": torch.ones(3, 2, 1, 4)}}, [3])
    other = TensorDict(
        {
            "a": torch.zeros(2, 3, 5, 4),
            "b": {"c": torch.zeros(2, 3, 2, 6, 4)},
            "z": torch.zeros(2, 3),
        },
        [2, 3],
    )
    out = ones.expand_as(other)
    assert out.batch_size == torch.Size([2, 3]) and out["b"].batch_size == torch.Size([2, 3])
    assert set(out.keys(True, True)) == {"a", ("b", "c")}
    for key in ("a", ("b", "c")):
        assert torch.equal(out[key], ones[key].expand_as(other[key]))


def test_expand_as_a_tensordict_raises_on_a_missing_key_or_a_bad_shape():
    """A key missing from the other tensordict is a KeyError; a leaf that cannot grow, a RuntimeError."""
    ones = TensorDict({"a": torch.ones(3, 1, 4), "d": torch.ones(3)}, [3])
    with pytest.raises(KeyError, match="d"):
        ones.expand_as(TensorDict({"a": torch.zeros(2, 3, 5, 4)}, [2, 3]))
    with pytest.raises(RuntimeError):
        ones.exclude("d").expand_as(TensorDict({"a": torch.zeros(2, 3, 5, 5)}, [2, 3]))


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


# --- every kind: (call on the tensordict, the same transform on a leaf given its feature dims)
CASES = {
    "movedim": (lambda t: t.movedim(0, 1), lambda x, e: x.movedim(0, 1)),
    "moveaxis": (lambda t: t.moveaxis(-1, 0), lambda x, e: x.movedim(1, 0)),
    "swapaxes": (lambda t: t.swapaxes(0, 1), lambda x, e: x.swapaxes(0, 1)),
    "swapdims": (lambda t: t.swapdims(1, 0), lambda x, e: x.swapaxes(0, 1)),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda x, e: x.narrow(1, 1, 2)),
    "narrow_neg": (lambda t: t.narrow(-1, -2, 1), lambda x, e: x.narrow(1, 1, 1)),
    "broadcast_to": (
        lambda t: t.broadcast_to((5, 2, 3)),
        lambda x, e: x.expand(torch.Size((5,)) + x.shape),
    ),
    "atleast_1d": (lambda t: t.atleast_1d(), lambda x, e: x),
    "atleast_3d": (lambda t: t.atleast_3d(), lambda x, e: x.unsqueeze(0)),
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


@pytest.mark.parametrize("kind", ["td", "lazy", "memmap"])
def test_results_are_tensordicts_of_the_kind(kind, tmp_path):
    """Reordering methods keep a lazy stack lazy; narrow makes it dense."""
    obj = make(kind, tmp_path)
    lazy = kind == "lazy"
    for result in [obj.movedim(0, 1), obj.swapaxes(0, 1)]:
        assert isinstance(result, LazyStackedTensorDict) == lazy
    assert type(obj.narrow(0, 0, 1)) is TensorDict
    assert isinstance(obj.atleast_3d(), LazyStackedTensorDict) == lazy


def test_tensorclass_results_are_instances():
    """On a tensorclass the methods return instances of the class."""
    obj = make("tensorclass")
    assert type(obj.movedim(0, 1)) is Frame


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.movedim(0, -1), ["y", "z", "x"]),
        (lambda t: t.movedim((0, 1), (1, 0)), ["y", "x", "z"]),
        (lambda t: t.swapaxes(0, -1), ["z", "y", "x"]),
        (lambda t: t.narrow(1, 0, 2), ["x", "y", "z"]),
        (lambda t: t.broadcast_to((1, 2, 3, 4)), [None, None, None, None]),
        (lambda t: t.broadcast_to((2, 3, 4)), [None, None, None]),
        (lambda t: t.atleast_3d(), ["x", "y", "z"]),
    ],
)
def test_names(call, names):
    """Dim names follow their dims through moves; broadcast_to drops them."""
    td = make_td((2, 3, 4), names=["x", "y", "z"])
    assert call(td).names == names


def test_narrow_keeps_non_tensor_entries():
    """A non-tensor entry keeps its value through narrow."""
    td = TensorDict({"a": torch.zeros(3, 2), "s": "hi"}, [3, 2])
    assert td.narrow(0, 0, 1)["s"] == "hi"


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda t: t.movedim(0, 9), IndexError, "out of range"),
        (lambda t: t.movedim((0, 0), (1, 0)), RuntimeError, "repeated"),
        (lambda t: t.movedim((0, 1), (1,)), ValueError, "source and destination must have"),
        (lambda t: t.swapaxes(0, 9), ValueError, "range"),
        (lambda t: t.transpose(-5, -6), ValueError, "range"),
        (lambda t: t.reshape(6, size=(6,)), TypeError, "size"),
        (lambda t: t.narrow(9, 0, 1), IndexError, "out of range"),
        (lambda t: t.narrow(0, 1, 5), RuntimeError, r"start \(1\) \+ length \(5\) exceeds"),
        (lambda t: t.broadcast_to((5, 7)), RuntimeError, "sizes provided|expanded size"),
    ],
)
def test_errors(call, exc, match):
    """Bad arguments raise the builtin the well-known API raises and leave the tensordict unchanged."""
    td = make_td((2, 3, 4))
    before = td.clone()
    with pytest.raises(exc, match=match):
        call(td)
    assert (td == before).all()


def test_len_is_first_batch_dim():
    """len() is the size of the first batch dim, and 0 without batch dims."""
    assert len(make_td((3, 2))) == 3
    assert len(TensorDict({"a": torch.zeros(5, 2)}, [5, 2])) == 5
    assert len(TensorDict({"a": torch.zeros(5)}, [])) == 0


def test_rename_in_place():
    """rename_ renames the batch dims in place, nested tensordicts included."""
    td = TensorDict(
        a=torch.zeros(2, 3), b={"c": torch.zeros(2, 3, 4)}, batch_size=[2, 3], names=["x", "y"]
    )
    assert td.rename_("p", "q") is td
    assert td.names == ["p", "q"] and td["b"].names == ["p", "q"]
    assert td.rename_(p="z").names == ["z", "q"]
    assert td.rename_(None).names == [None, None]


def test_rename_errors():
    """Bad rename_ arguments raise ValueError and leave the names as they were."""
    td = TensorDict(batch_size=[2, 3], names=["x", "y"])
    for args, kwargs in [((), {"k": "z"}), (("p",), {"x": "z"}), ((), {}), (("p",), {})]:
        with pytest.raises(ValueError):
            td.rename_(*args, **kwargs)
    assert td.names == ["x", "y"]
    assert TensorDict().rename_().batch_size == torch.Size([])


# --- properties ------------------------------------------------------------------


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


def test_permute_in_place_order_is_the_tensordict():
    """permute (and movedim) keeping every dim in place returns the tensordict itself."""
    td = make_td()
    assert td.permute(0, 1) is td
    assert td.movedim(1, 1) is td


@pytest.mark.parametrize("dims", [(1, 1), (2, 0), (2, 1, 0)])
def test_permute_errors_are_value_errors(dims):
    """permute dims that do not name each batch dim once raise ValueError."""
    with pytest.raises(ValueError):
        make_td().permute(*dims)


@pytest.mark.parametrize(
    "dims, exc", [((1, 1), RuntimeError), ((2, 1, 0), RuntimeError), ((2, 0), IndexError)]
)
def test_permute_errors_in_legacy_mode(dims, exc):
    """In the legacy lazy mode a repeated or missing dim is a RuntimeError, one out of range an IndexError."""
    with set_lazy_legacy(True), pytest.raises(exc):
        make_td().permute(*dims)
