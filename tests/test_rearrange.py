"""Copies of the batch elements in a new arrangement (tensordict._ops.rearrange): repeat, roll, flip, rot90, gather, masks."""

import pytest
import torch
from batch_kinds import KINDS, Frame, assert_leaves, make, make_td, shapes_and_dims
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


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


# --- every kind: (call on the tensordict, the same transform on a leaf given its feature dims)
CASES = {
    "roll": (lambda t: t.roll(1), lambda x, e: x.flatten(0, 1).roll(1, 0).reshape(x.shape)),
    "roll2": (lambda t: t.roll((1, 2), (0, -1)), lambda x, e: x.roll((1, 2), (0, 1))),
    "flip": (lambda t: t.flip(0), lambda x, e: x.flip(0)),
    "flip2": (lambda t: t.flip([0, -1]), lambda x, e: x.flip((0, 1))),
    "fliplr": (lambda t: t.fliplr(), lambda x, e: x.flip(1)),
    "flipud": (lambda t: t.flipud(), lambda x, e: x.flip(0)),
    "tile": (lambda t: t.tile((2, 1)), lambda x, e: x.tile((2, 1) + (1,) * e)),
    "tile_int": (lambda t: t.tile(2), lambda x, e: x.tile((1, 2) + (1,) * e)),
    "tile_more": (lambda t: t.tile((2, 1, 1)), lambda x, e: x.tile((2, 1, 1) + (1,) * e)),
    "rot90": (lambda t: t.rot90(), lambda x, e: x.rot90(1, (0, 1))),
    "rot90_k": (lambda t: t.rot90(-3, (1, 0)), lambda x, e: x.rot90(-3, (1, 0))),
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
def test_results_are_dense(kind, tmp_path):
    """The copying methods give a dense TensorDict, a lazy stack included."""
    obj = make(kind, tmp_path)
    for result in [obj.roll(1), obj.flip(0), obj.tile(2), obj.rot90()]:
        assert type(result) is TensorDict


def test_tensorclass_results_are_instances():
    """On a tensorclass every method returns instances of the class."""
    obj = make("tensorclass")
    for result in [obj.roll(1), obj.flip(0), obj.tile(2), obj.rot90()]:
        assert type(result) is Frame


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.rot90(), ["y", "x", "z"]),
        (lambda t: t.rot90(2), ["x", "y", "z"]),
        (lambda t: t.rot90(1, (1, -1)), ["x", "z", "y"]),
        (lambda t: t.roll(1, -1), ["x", "y", "z"]),
        (lambda t: t.flip((0, 2)), ["x", "y", "z"]),
        (lambda t: t.tile(2), [None, None, None]),
    ],
)
def test_names(call, names):
    """Dim names follow their dims through rotations; tile drops them."""
    td = make_td((2, 3, 4), names=["x", "y", "z"])
    assert call(td).names == names


def test_non_tensor_entries_take_the_new_batch_size():
    """A non-tensor entry keeps its value and takes the batch size of the result."""
    td = TensorDict({"a": torch.zeros(3, 2), "s": "hi"}, [3, 2])
    assert td.rot90().get("s").batch_size == torch.Size([2, 3])
    assert td.tile(2).get("s").batch_size == torch.Size([3, 4])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda t: t.roll(1, 9), IndexError, "dim 9"),
        (lambda t: t.roll((1, 2), 0), RuntimeError, "shifts and dim"),
        (lambda t: t.flip(9), IndexError, "out of range"),
        (lambda t: t.rot90(1, (0, 0)), RuntimeError, "different"),
        (lambda t: t.rot90(1, (0, 9)), IndexError, "out of range"),
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


# --- properties ------------------------------------------------------------------


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


# ---------------------------------------------------------------------- where, masks
def test_where_pads_the_leaves_one_side_lacks():
    """where(pad=) stands the pad value in for a leaf that only one side has; the result has the
    leaves of both."""
    td = make_td()
    empty = td.empty()
    out = td.where(MASK, empty, pad=-1)
    assert out["b", "c"].tolist() == [[0, -1, 2], [-1, -1, 5]]
    out = empty.where(MASK, td, pad=-1)
    assert out["b", "c"].tolist() == [[-1, 1, -1], [3, 4, -1]]
    with pytest.raises(KeyError):
        td.where(MASK, empty)
    with pytest.raises(KeyError):
        empty.where(MASK, td)


def test_where_writes_into_out():
    """where(out=) replaces the entries of out, adds the missing ones, and returns out; so does
    torch.where(..., out=)."""
    td = make_td()
    out = td.empty()
    assert td.where(MASK, td.empty(), pad=0, out=out) is out
    assert out["b", "c"].tolist() == [[0, 0, 2], [0, 0, 5]]
    out = td.clone()
    assert torch.where(MASK, td, torch.ones_like(td), out=out) is out
    assert out["b", "c"].tolist() == [[0, 1, 2], [1, 1, 5]]


def test_where_and_masked_fill_on_a_lazy_stack_cover_its_stacked_leaves():
    """On a lazy stack the condition covers the batch dims of the stacked leaves; masked_fill_
    writes into the members."""
    td = make_td()
    stack = lazy_stack(list(td.unbind(1)), 1)
    assert torch.equal(stack.where(MASK, -1)["a"], td.where(MASK, -1)["a"])
    assert torch.equal(stack.masked_fill(MASK, -1)["a"], td.masked_fill(MASK, -1)["a"])
    stack.masked_fill_(MASK, -1)
    assert torch.equal(stack["a"], td.masked_fill(MASK, -1)["a"])
    assert stack.tensordicts[2]["b", "c"].tolist() == [-1, -1]


def test_masked_select_in_place():
    """masked_select(inplace=True) turns the tensordict into the selection and returns it."""
    td = make_td()
    expected = td[MASK]
    assert td.masked_select(MASK, inplace=True) is td
    assert td.batch_size == torch.Size([3])
    assert torch.equal(td["a"], expected["a"])


def test_repeat_interleave_without_dim_flattens_the_batch():
    """repeat_interleave without dim flattens the batch dims first, as torch does."""
    td = make_td()
    out = td.repeat_interleave(2)
    assert out.batch_size == torch.empty(td.batch_size).repeat_interleave(2).shape
    assert out["b", "c"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert out["a"].shape == torch.Size([12, 4])


def test_repeat_interleave_takes_output_size():
    """output_size is passed on to torch: the size of the repeated dim."""
    td = make_td()
    out = td.repeat_interleave(torch.tensor([1, 2, 0]), dim=1, output_size=3)
    assert out["b", "c"].tolist() == [[0, 1, 1], [3, 4, 4]]


def test_gather_refuses_out_and_inplace_together():
    """gather with both out= and inplace=True raises ValueError: the result goes to one place."""
    td = make_td()
    with pytest.raises(ValueError):
        td.gather(0, torch.zeros(2, 3, dtype=torch.long), out=td.clone(), inplace=True)


def test_gather_spreads_the_index_over_a_sub_tensordicts_extra_batch_dims():
    """A sub-tensordict with more batch dims than its parent gathers with the index expanded
    over its extra dims, as the leaves' features are."""
    td = TensorDict(
        a=torch.arange(12).reshape(3, 4),
        s={"x": torch.arange(60).reshape(3, 4, 5)},
        batch_size=[3, 4],
    )
    td["s"].batch_size = [3, 4, 5]
    index = torch.tensor([[0, 2], [1, 3], [2, 0]])
    out = td.gather(1, index)
    assert out["s"].batch_size == torch.Size([3, 2, 5])
    assert torch.equal(out["s", "x"], td["s", "x"].gather(1, index.unsqueeze(-1).expand(3, 2, 5)))


@pytest.mark.parametrize("inplace", [True, False])
def test_gather_in_place_needs_an_index_with_the_batch_dims(inplace):
    """gather(inplace=True) with an index of fewer dims than the batch raises NotImplementedError."""
    td = TensorDict({"a": torch.zeros(3, 4)}, batch_size=[3, 4])
    if inplace:
        with pytest.raises(NotImplementedError, match="index.ndim"):
            td.gather(dim=0, index=torch.tensor([0, 1]), inplace=True)
    else:
        out = td.gather(dim=0, index=torch.tensor([[0, 1, 2, 0]]))
        assert out.batch_size == torch.Size([1, 4])


def test_where_with_pad_against_a_lazy_stack_uses_its_stacked_leaves():
    """An empty tensordict's where(mask, lazy_stack, pad=) takes the stack's leaves over the whole batch."""
    from tensordict import lazy_stack

    members = [TensorDict({"a": torch.randn(4, 1, 5), "b": {"c": torch.randn(4, 1, 2)}}, [4, 1])]
    stack = lazy_stack(members * 2, 1)
    mask = torch.tensor([[[True], [False]]] * 4)
    for result in (
        stack.empty().where(~mask, stack, pad=1),
        stack.where(mask, stack.empty(), pad=1),
    ):
        assert result.batch_size == stack.batch_size
        for value in result.values(True, True):
            assert (value[~mask] == 1).all()
    kept = stack.empty().where(~mask, stack, pad=1)
    assert torch.equal(kept["a"][mask], stack["a"][mask])
