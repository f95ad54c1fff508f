"""tensordict.nn.functional_modules: torch.vmap over tensordicts, and tensordicts as pytree leaves."""

from __future__ import annotations

import pytest
import torch
from torch.utils._pytree import tree_leaves

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from tensordict.nn.functional_modules import _exclude_td_from_pytree


def test_vmap_over_a_module_maps_the_batch_dimension():
    """vmap of a module gives the same values as the plain call, in a new tensordict."""
    module = TensorDictModule(
        lambda x, *, y: x + y, in_keys={"1": "x", "2": "y"}, out_keys=["z"], out_to_in_map=False
    )
    td = TensorDict({"1": torch.ones(10), "2": torch.full((10,), 2.0)}, batch_size=[10])
    out = torch.vmap(module)(td)
    assert out is not td and "z" not in td.keys()
    assert out.batch_size == (10,) and (out["z"] == 3).all()


def test_inside_vmap_the_mapped_dimension_is_gone():
    """The function sees a tensordict whose batch size lacks the mapped dimension."""
    sizes = []

    def record(td):
        sizes.append((td.batch_size, td["a"].shape, td["n", "b"].shape))
        return td

    td = TensorDict(
        {"a": torch.zeros(4, 3), "n": TensorDict(b=torch.zeros(4, 3, 2), batch_size=[4, 3])},
        batch_size=[4],
    )
    out = torch.vmap(record)(td)
    assert sizes == [(torch.Size([]), torch.Size([3]), torch.Size([3, 2]))]
    assert out["n"].batch_size == (4, 3)


@pytest.mark.parametrize("in_dim,out_dim", [(0, 0), (1, 0), (1, 1), (-1, 0)])
def test_in_and_out_dims(in_dim, out_dim):
    """in_dims picks the mapped batch dimension; out_dims places it in the output."""
    data = torch.arange(6.0).reshape(2, 3)
    td = TensorDict(a=data, batch_size=[2, 3])
    out = torch.vmap(lambda t: t.apply(lambda x: x * 2), in_dims=(in_dim,), out_dims=out_dim)(td)
    expected = data * 2 if in_dim == 0 else (data * 2).T
    if out_dim == 1:
        expected = expected.T
    assert torch.equal(out["a"], expected) and out.batch_size == expected.shape


def test_stacked_parameters_mapped_with_functional_call():
    """vmap over a tensordict of stacked parameters runs one copy of the module per row."""
    linear = torch.nn.Linear(3, 2)
    params = TensorDict.from_modules(torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)).data

    def call(x, p):
        assert p.batch_size == ()
        return torch.func.functional_call(linear, dict(p.items()), (x,))

    x = torch.randn(5, 3)
    out = torch.vmap(call, (None, 0))(x, params)
    assert out.shape == (2, 5, 2)
    torch.testing.assert_close(out[1], x @ params["weight"][1].T + params["bias"][1])


def test_vmap_of_a_sequence_with_tensors():
    """Tensors and tensordicts mix in one vmapped call."""
    seq = TensorDictSequential(TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"]))
    out = torch.vmap(lambda td, shift: seq(td).set("z", td["y"] + shift))(
        TensorDict(x=torch.zeros(3), batch_size=[3]), torch.arange(3.0)
    )
    assert out["z"].tolist() == [1.0, 2.0, 3.0]


def test_in_dim_beyond_the_batch_size():
    """A dim the leaves share widens the batch size; one they do not share raises ValueError."""
    td = TensorDict(a=torch.arange(6.0).reshape(3, 2), batch_size=[3])
    out = torch.vmap(lambda t: t.apply(lambda x: x + 1), in_dims=(1,))(td)
    assert out.batch_size == (2, 3)
    with pytest.raises(ValueError):
        torch.vmap(lambda t: t, in_dims=(1,))(
            TensorDict(a=torch.zeros(3, 2), b=torch.zeros(3, 4), batch_size=[3])
        )


def test_plain_tensor_vmap_is_unchanged():
    """vmap without tensordicts behaves as torch's."""
    torch.testing.assert_close(torch.vmap(torch.sum)(torch.ones(3, 4)), torch.full((3,), 4.0))


def test_exclude_td_from_pytree_makes_tensordicts_leaves():
    """Inside the block tree_leaves gives the tensordict itself; outside its tensors."""
    td = TensorDict(a=torch.zeros(1), b=torch.ones(1))
    assert len(tree_leaves(td)) == 2
    with _exclude_td_from_pytree():
        assert tree_leaves(td) == [td]
    assert len(tree_leaves(td)) == 2
    excluded = _exclude_td_from_pytree()
    excluded.set()
    try:
        assert tree_leaves([td])[0] is td
    finally:
        excluded.unset()
    assert len(tree_leaves([td])) == 2


def test_a_locked_input_stays_locked_inside():
    """Writing a new key into a locked tensordict under vmap raises, as outside."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).lock_()
    with pytest.raises(RuntimeError):
        torch.vmap(lambda t: t.set("b", t["a"] + 1))(td)


def test_names_follow_the_mapped_dimension():
    """Names of the other dims are kept inside; the mapped dim comes back unnamed."""
    seen = []

    def record(t):
        seen.append(t.names)
        return t

    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3], names=["n", "m"])
    out = torch.vmap(record)(td)
    assert seen == [["m"]] and out.names == [None, "m"]


def test_lazy_stack_mapped_along_another_dim_stays_lazy():
    """A lazy stack mapped along a dim other than its stack dim comes back a lazy stack."""
    stack = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.ones(4), batch_size=[4]), TensorDict(a=torch.zeros(4), batch_size=[4])],
        0,
    )
    out = torch.vmap(lambda t: t.set("b", t["a"] * 2), in_dims=(1,), out_dims=1)(stack)
    assert isinstance(out, LazyStackedTensorDict) and out.batch_size == (2, 4)
    assert out["b"].tolist() == [[2.0] * 4, [0.0] * 4]


@pytest.mark.parametrize("out_dim", [0, 1])
def test_lazy_stack_mapped_along_its_stack_dim_gives_a_lazy_stack(out_dim):
    """Mapping over the members of a lazy stack gives a lazy stack of the results."""
    x = LazyStackedTensorDict.lazy_stack([TensorDict(a=torch.ones(1), batch_size=[1])] * 2, 0)
    y = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.full((1,), 2.0), batch_size=[1])] * 2, 0
    )
    out = torch.vmap(lambda u, v: u.set("b", u["a"] + v["a"]), (0, 0), (out_dim,))(x, y)
    assert isinstance(out, LazyStackedTensorDict) and out.shape[out_dim] == 2
    assert (out["b"] == 3).all()


# ---------------------------------------------------------------------- torch.func over tensordicts
def _two_leaves(batch: tuple) -> TensorDict:
    return TensorDict(a=torch.randn(*batch, 3), b=torch.randn(*batch, 2), batch_size=batch)


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_jacrev_of_a_tensordict_function_keeps_the_batch_size(batch):
    """jacrev over a tensordict gives a tensordict of tensordicts, one jacobian per pair of leaves."""
    td = _two_leaves(batch)

    def f(td):
        return TensorDict(x=td["a"] ** 2, y=td["b"] * 3, batch_size=td.batch_size)

    jac = torch.func.jacrev(f)(td)
    assert jac.batch_size == td.batch_size
    assert jac["x", "a"].shape == (*td["a"].shape, *td["a"].shape)
    assert jac["x", "b"].shape == (*td["a"].shape, *td["b"].shape)
    flat = td["a"].flatten()
    assert torch.allclose(jac["x", "a"].reshape(flat.numel(), flat.numel()), torch.diag(2 * flat))
    assert not jac["x", "b"].any()


@pytest.mark.parametrize("batch", [(), (4,)])
def test_jacfwd_matches_jacrev(batch):
    """jacfwd and jacrev give the same jacobians over a tensordict."""
    td = _two_leaves(batch)

    def f(td):
        return TensorDict(x=td["a"].sin(), y=td["b"].exp(), batch_size=td.batch_size)

    fwd, rev = torch.func.jacfwd(f)(td), torch.func.jacrev(f)(td)
    assert fwd.batch_size == rev.batch_size == td.batch_size
    for key in fwd.keys(True, True):
        assert torch.allclose(fwd[key], rev[key])


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_hessian_of_a_scalar_function_of_a_tensordict(batch):
    """hessian over a tensordict gives the second derivatives per pair of leaves."""
    td = _two_leaves(batch)

    def f(td):
        return (td["a"] ** 3).sum() + (td["b"] ** 2).sum()

    hess = torch.func.hessian(f)(td)
    assert hess.batch_size == td.batch_size
    n = td["a"].numel()
    assert torch.allclose(hess["a", "a"].reshape(n, n), torch.diag(6 * td["a"].flatten()))
    assert torch.allclose(
        hess["b", "b"].reshape(td["b"].numel(), -1), 2 * torch.eye(td["b"].numel())
    )
    assert not hess["a", "b"].any()


def test_jacrev_of_a_tensor_function_returning_a_tensordict():
    """A tensordict output of a tensor input keeps its batch size; each leaf gets the input's dims."""
    out = torch.func.jacrev(lambda x: TensorDict(y=x.sin(), batch_size=[]))(torch.zeros(3))
    assert out.batch_size == torch.Size([])
    assert torch.allclose(out["y"], torch.eye(3))
