"""Math over every leaf (tensordict._ops.math): reductions and scans; differential: runs under both."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, UnbatchedTensor, lazy_stack, tensorclass

from conftest import ours_only


@tensorclass
class _Point:
    x: torch.Tensor
    label: str


def _td(names=None):
    return TensorDict(
        a=torch.arange(24.0).reshape(4, 3, 2),
        b={"c": torch.arange(12).reshape(4, 3)},
        batch_size=[4, 3],
        names=names,
    )


# ---------------------------------------------------------------------- max / min
@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_along_a_dim_give_torchs_named_pair(name, keepdim):
    """max/min along an int batch dim return torch.return_types.max/min of two tensordicts,
    values and indices, as torch.max/min of each leaf give them."""
    td = _td()
    out = getattr(td, name)(dim=1, keepdim=keepdim)
    assert isinstance(out, getattr(torch.return_types, name))
    values, indices = out
    expected = getattr(torch, name)(td["a"], 1, keepdim=keepdim)
    assert torch.equal(values["a"], expected.values)
    assert torch.equal(indices["a"], expected.indices)
    assert (
        values.batch_size
        == indices.batch_size
        == (torch.Size([4, 1]) if keepdim else torch.Size([4]))
    )


def test_max_without_indices_is_amax():
    """return_indices=False gives only the values, a tensordict equal to amax."""
    td = _td()
    out = td.max(dim=0, return_indices=False)
    assert torch.equal(out["a"], td.amax(dim=0)["a"])


def test_a_reduction_keeps_the_names_of_the_remaining_dims():
    """The result of a reduction along a batch dim keeps the names of the batch dims left."""
    td = _td(names=["x", "y"]).float()
    assert td.sum(0).names == ["y"]
    assert td.mean(1, keepdim=True).names == ["x", "y"]
    assert td.max(0).values.names == ["y"]
    assert td.logsumexp(1).names == ["x"]


def test_scans_and_pairs_walk_into_tensorclasses():
    """cummax, cummin and max reach the tensors of a nested tensorclass, leaving its non-tensor
    fields out of the pair."""
    td = TensorDict(
        a=torch.arange(12.0).reshape(4, 3),
        p=_Point(x=torch.arange(12.0).reshape(4, 3), label="p", batch_size=[4, 3]),
        batch_size=[4, 3],
    )
    for name in ("cummax", "cummin"):
        out = getattr(td, name)(0)
        assert isinstance(out, getattr(torch.return_types, name))
        assert torch.equal(out.values["p", "x"], getattr(torch, name)(td["p", "x"], 0).values)
    assert torch.equal(td.max(1).values["p", "x"], td["p", "x"].amax(1))


def test_an_unbatched_entry_is_kept_by_reductions_along_batch_dims():
    """An UnbatchedTensor has no batch dims: reductions and scans along the batch dims keep it
    as it is."""
    td = TensorDict(
        a=torch.ones(4, 3, 2), u=UnbatchedTensor(torch.arange(6.0).reshape(2, 3)), batch_size=[4, 3]
    )
    for out in (
        td.sum(-1),
        td.amin(0),
        td.max(-1, return_indices=False),
        td.cummax(-1, return_indices=False),
    ):
        assert out.get("u").shape == torch.Size([2, 3])
        assert torch.equal(out.get("u"), td.get("u"))


@ours_only  # the reference keeps the unbatched entry among the indices and drops it from the values
def test_an_unbatched_entry_has_no_indices():
    """Along a batch dim, max keeps an unbatched entry among the values, not the indices."""
    td = TensorDict(a=torch.ones(4, 3), u=UnbatchedTensor(torch.zeros(5)), batch_size=[4, 3])
    values, indices = td.max(-1)
    assert "u" in values.keys() and "u" not in indices.keys()


# ---------------------------------------------------------------------- logsumexp
def test_logsumexp_without_dim_reduces_every_batch_dim():
    """logsumexp() reduces all the batch dims; each leaf keeps its feature dims."""
    td = _td().float()
    out = td.logsumexp()
    assert out.batch_size == torch.Size([])
    assert torch.allclose(out["a"], torch.logsumexp(td["a"], dim=(0, 1)))


@pytest.mark.parametrize("dim", [1, (1,), (0, -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_writes_into_out(dim, keepdim):
    """logsumexp(out=td) writes each leaf into the tensor out already holds at its key and
    returns out."""
    td = _td().float()
    out = td.logsumexp(dim=dim, keepdim=keepdim).zero_()
    leaves = {key: out.get(key) for key in out.keys(True, True)}
    result = td.logsumexp(dim=dim, out=out, keepdim=keepdim)
    assert result is out
    for key, leaf in leaves.items():
        assert result.get(key) is leaf
        dims = tuple(d % 2 for d in ((dim,) if isinstance(dim, int) else dim))
        assert torch.allclose(leaf, torch.logsumexp(td.get(key), dims, keepdim=keepdim))


def test_logsumexp_adds_what_out_lacks():
    """A tensordict out without the entries receives new ones."""
    td = _td().float()
    out = td.logsumexp(1).empty()
    result = td.logsumexp(1, out=out)
    assert result is out
    assert torch.allclose(out["b", "c"], torch.logsumexp(td["b", "c"], 1))


@ours_only  # the reference takes out= in logsumexp only
def test_sum_writes_into_out_too():
    """out= works for the other reductions along batch dims."""
    td = _td().float()
    out = td.sum(0).zero_()
    leaf = out["a"]
    assert td.sum(0, out=out) is out
    assert out["a"] is leaf and torch.equal(leaf, td["a"].sum(0))


@ours_only  # the reference's max has no out argument
def test_max_with_indices_refuses_out():
    """max(dim) returns a pair, which out= cannot receive: ValueError."""
    td = _td()
    with pytest.raises(ValueError):
        td.max(0, out=td.amax(0))


# ---------------------------------------------------------------------- operands
def _grid():
    return TensorDict(
        a=torch.randn(3, 4), b=torch.zeros(3, 4, 5), c=torch.ones(3, 4, 5, 6), batch_size=(3, 4)
    )


@pytest.mark.parametrize("shape", [(4,), (3, 4), (1, 4), (3, 1), (2, 3, 4)])
def test_a_tensor_operand_is_batch_shaped(shape):
    """A tensor operand with dims is aligned with the batch dims from the right and spread over
    each leaf's feature dims; the result takes the broadcast batch size."""
    td = _grid()
    t = torch.arange(1.0, torch.Size(shape).numel() + 1).reshape(shape)
    expected = torch.broadcast_shapes(shape, td.batch_size)
    for out in (td * t, t * td, td.add(t), td - t, td.maximum(t), td.clamp(-t, t), td.lerp(t, t)):
        assert out.batch_size == expected
        for key in ("a", "b", "c"):
            assert out[key].shape == expected + td[key].shape[2:]
        assert torch.equal((td * t)["c"], td["c"] * t.reshape(shape + (1, 1)))


def test_a_tensor_operand_that_does_not_fit_the_batch_raises():
    """A tensor whose shape does not broadcast with the batch size raises RuntimeError."""
    with pytest.raises(RuntimeError):
        _grid() * torch.ones(3)


def test_an_in_place_operation_spreads_a_batch_shaped_tensor():
    """add_ with a batch-shaped tensor writes each leaf in place, the operand spread over its
    feature dims."""
    td = _grid().zero_()
    leaf = td["c"]
    td.add_(torch.arange(4.0))
    assert td["c"] is leaf
    assert torch.equal(leaf[1, 2], torch.full((5, 6), 2.0))


def test_tensordict_operands_broadcast_their_batch_sizes():
    """Two tensordicts whose batch sizes broadcast give a result of the broadcast batch size."""
    td = _grid()
    other = td.new_ones((2, 3, 4))
    out = td * other
    assert out.batch_size == torch.Size([2, 3, 4])
    assert torch.equal(out["b"], td["b"].expand(2, 3, 4, 5))
    assert td.clamp(-other, other).batch_size == torch.Size([2, 3, 4])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max"])
def test_default_fills_the_leaves_one_side_lacks(name):
    """default= a value stands in for a leaf only one side has; "intersection" keeps the shared
    keys; without it, different keys raise KeyError."""
    td0 = TensorDict(a=2.0, b=2.0, c=2.0)
    td1 = TensorDict(b=3.0, c=3.0, d=3.0)
    fn = getattr(torch, name)
    with pytest.raises(KeyError):
        getattr(td0, name)(td1)
    out = getattr(td0, name)(td1, default=torch.tensor(5.0))
    assert out["a"] == fn(torch.tensor(2.0), torch.tensor(5.0))
    assert out["d"] == fn(torch.tensor(5.0), torch.tensor(3.0))
    assert out["b"] == fn(torch.tensor(2.0), torch.tensor(3.0))
    shared = getattr(td0, name)(td1, default="intersection")
    assert set(shared.keys()) == {"b", "c"}


def test_the_result_of_arithmetic_is_locked_like_its_first_operand():
    """td + other, td.add(other), -td, td.exp() and td.isnan() are locked when td is;
    comparisons and clamp are not."""
    td = TensorDict(a=torch.ones(3), batch_size=[3]).lock_()
    assert (td + 1).is_locked and td.add(td).is_locked and (-td).is_locked
    assert td.exp().is_locked and td.isnan().is_locked
    assert not (td == td).is_locked and not td.clamp(0, 1).is_locked
    assert not (TensorDict(a=torch.ones(3), batch_size=[3]) + td).is_locked


def test_reflected_logical_operators_give_tensordicts():
    """False | td, tensor ^ td and True & td give tensordicts."""
    td = TensorDict(a=True)
    for out in (False | td, torch.zeros((), dtype=torch.bool) ^ td, True & td):
        assert isinstance(out, TensorDict) and out["a"].dtype == torch.bool


# ---------------------------------------------------------------------- clamp
def test_clamp_takes_tensordict_bounds():
    """clamp with tensordict bounds gives each leaf its own bounds."""
    td = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3])
    lo = TensorDict(a=torch.full((2, 3), 1.0), batch_size=[2, 3])
    assert td.clamp(lo, lo + 2)["a"].tolist() == [[1.0, 1.0, 2.0], [3.0, 3.0, 3.0]]


@ours_only  # the reference has no clamp_
def test_clamp_in_place_takes_tensordict_bounds():
    """clamp_ with tensordict bounds clamps each leaf in place to its own bounds."""
    td = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3])
    lo = TensorDict(a=torch.full((2, 3), 1.0), batch_size=[2, 3])
    td.clamp_(lo, lo + 1)
    assert td["a"].tolist() == [[1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]


def test_clamp_writes_into_out():
    """clamp(out=td) writes into the leaves out holds and returns out."""
    td = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3])
    out = td.clone().zero_()
    leaf = out["a"]
    assert td.clamp(1, 4, out=out) is out
    assert out["a"] is leaf and leaf.tolist() == [[1.0, 1.0, 2.0], [3.0, 4.0, 4.0]]


def test_in_place_arithmetic_reaches_a_nested_lazy_stack():
    """td += other writes into the members of a lazy stack nested in td, keys only one member
    has included."""

    def make():
        return TensorDict(
            s=lazy_stack(
                [TensorDict(a=torch.tensor(-2)), TensorDict(a=torch.tensor(-1), b=torch.tensor(-2))]
            )
        )

    td = make()
    td += make()
    members = td["s"].tensordicts
    assert members[0]["a"] == -4 and members[1]["b"] == -4


# ---------------------------------------------------------------------- feature reductions
def _levels():
    return TensorDict(
        a=torch.arange(60.0).reshape(3, 4, 5),
        b=TensorDict(c=torch.ones(3, 4, 5, 6), d=torch.ones(3, 4, 5, 2), batch_size=(3, 4, 5)),
        batch_size=(3, 4),
    )


@pytest.mark.parametrize("name", ["sum", "nansum", "mean", "nanmean", "std", "var", "prod"])
def test_a_feature_reduction_reduces_each_leaf_over_the_features_of_its_level(name):
    """dim="feature" reduces each leaf over the dims after the batch dims of its own level; the
    batch sizes (a nested one included) are kept."""
    td = _levels()
    out = getattr(td, name)(dim="feature")
    assert out.batch_size == td.batch_size and out["b"].batch_size == td["b"].batch_size
    assert torch.allclose(out["a"], getattr(torch, name)(td["a"], -1))
    assert torch.allclose(out["b", "c"], getattr(torch, name)(td["b", "c"], -1), equal_nan=True)
    assert out["b", "d"].shape == td["b"].batch_size


def test_a_feature_reduction_of_all_leaves_gives_one_tensor():
    """dim="feature" with reduce=True reduces all the features of each batch element together."""
    td = _levels()
    out = td.sum(dim="feature", reduce=True)
    assert out.shape == td.batch_size
    assert out[0, 0] == td["a"][0, 0].sum() + 30 + 10
    assert td.quantile(0.5, dim="feature", reduce=True).shape == td.batch_size


def test_reduce_with_a_dim_joins_the_leaves_along_it():
    """reduce=True with a batch dim joins the leaves along it, then reduces the one tensor."""
    td = TensorDict(a=torch.ones(3, 4, 5), b={"c": torch.ones(3, 4, 5)}, batch_size=(3, 4))
    out = td.sum(dim=1, reduce=True)
    assert out.shape == torch.Size([3, 5]) and (out == 8).all()
    assert td.mean(dim=1, reduce=True).shape == torch.Size([3, 5])


def test_all_and_any_along_a_dim_keep_the_other_names():
    """all(dim) and any(dim) keep the names of the batch dims they do not reduce."""
    td = TensorDict(a=torch.ones(3, 4, 1, 6), batch_size=[3, 4, 1, 6], names=["a", "b", "c", "d"])
    assert td.all(2).names == ["a", "b", "d"]
    assert td.any(-2).names == ["a", "b", "d"]


# ---------------------------------------------------------------------- comparisons with a dict
@pytest.mark.parametrize("op", ["__eq__", "__ne__", "__lt__", "__ge__"])
def test_comparing_with_a_nested_dict_compares_each_leaf_with_the_value_at_its_key(op):
    """td == td.to_dict() (and !=, <, >=) gives a tensordict of each leaf against its value."""
    td = _td()
    other = {"a": torch.ones(2), "b": {"c": 5}}
    out = getattr(td, op)(other)
    assert isinstance(out, TensorDict) and out.batch_size == td.batch_size
    assert torch.equal(out["a"], getattr(td["a"], op)(torch.ones(2)))
    assert torch.equal(out["b", "c"], getattr(td["b", "c"], op)(5))
    assert (td == td.to_dict()).all() and not (td != td.to_dict()).any()


def test_comparing_a_lazy_stack_with_its_dict_compares_the_stacked_leaves():
    """A lazy stack meets the dict's values with its leaves stacked, as to_dict gives them."""
    td = lazy_stack([_td()[:, 0], _td()[:, 1]], dim=1)
    assert (td == td.to_dict()).all()


def test_comparing_with_a_dict_of_other_keys_raises_key_error():
    """A dict whose keys are not the tensordict's raises KeyError."""
    with pytest.raises(KeyError):
        _ = _td() == {"a": torch.zeros(2)}


@ours_only  # the reference drops empty sub-tensordicts in two-operand arithmetic only
def test_every_leafwise_operation_keeps_empty_sub_tensordicts():
    """td + 1, td * td, -td and td == 0 all keep the empty sub-tensordicts of td."""
    td = TensorDict({"a": torch.zeros(3), "e": {}, "n": {"f": {}}}, [3])
    expected = sorted(map(str, td.keys(True)))
    for result in (td + 1, td * td, -td, td.abs(), td == 0, td.apply(lambda x: x + 1)):
        assert sorted(map(str, result.keys(True))) == expected
