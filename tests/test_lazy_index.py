"""Indexing a lazy stack (tensordict._lazy_index): every index reaches the members, which stay apart."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_indexing import index_cases, leaf_index, valid_case

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def dense_and_lazy(shape, stack_dim: int):
    """A dense tensordict of batch size ``shape`` and the same data as a lazy stack along ``stack_dim``."""
    n = torch.Size(shape).numel()
    dense = TensorDict(
        {
            "a": torch.arange(n * 2, dtype=torch.float32).reshape(*shape, 2),
            "b": {"c": torch.arange(n).reshape(shape)},
        },
        batch_size=shape,
    )
    return dense, lazy_stack(list(dense.unbind(stack_dim)), stack_dim)


def ragged(stack_dim: int = 1):
    """Three members of batch size [4] whose "a" has 1, 2 and 3 features."""
    members = [
        TensorDict({"a": torch.full((4, i + 1), float(i)), "b": torch.full((4,), float(i))}, [4])
        for i in range(3)
    ]
    return lazy_stack(members, stack_dim)


@settings(max_examples=60, deadline=None)
@given(index_cases(), st.data())
def test_property_lazy_index_reads_the_dense_rows(case, data):
    """Any index reads, from a lazy stack along any dim, the rows it reads from the dense data."""
    shape, index = case
    expected_size = valid_case(shape, index)
    if expected_size is None:
        return
    dense, lazy = dense_and_lazy(shape, data.draw(st.integers(0, len(shape) - 1)))
    out = lazy[index]
    assert out.batch_size == expected_size
    idx = leaf_index(index, len(shape))
    assert torch.equal(out["a"], dense["a"][idx])
    assert torch.equal(out["b", "c"], dense["b", "c"][index])


@settings(max_examples=60, deadline=None)
@given(index_cases(), st.data(), st.booleans())
def test_property_lazy_index_assignment_writes_the_dense_rows(case, data, from_tensordict):
    """Any index assignment writes into a lazy stack's members what it writes into the dense data."""
    shape, index = case
    if valid_case(shape, index) is None:
        return
    dense, lazy = dense_and_lazy(shape, data.draw(st.integers(0, len(shape) - 1)))
    value = dense[index].apply(lambda x: -x - 1) if from_tensordict else -7
    lazy[index] = value
    dense[index] = value
    assert torch.equal(lazy["a"], dense["a"])
    assert torch.equal(lazy["b", "c"], dense["b", "c"])


@pytest.mark.parametrize(
    "index",
    [
        (slice(None), torch.tensor([True, False, True])),
        (torch.tensor([0, 3]), torch.tensor([2, 0])),
        (torch.tensor([True, False, True, True]), slice(1, None)),
        (torch.tensor([[True, False, True]] * 4),),
        (slice(None), [2, 0]),
    ],
)
def test_index_keeps_members_of_different_shapes_apart(index):
    """Masks and tensor indices of a stack with ragged members give a lazy stack of their rows."""
    stack = ragged()
    out = stack[index]
    assert isinstance(out, LazyStackedTensorDict)
    expected = torch.zeros(4, 3)[index].shape
    assert out.batch_size == expected
    assert torch.equal(out["b"], stack["b"][index])
    features = torch.arange(1, 4).expand(4, 3)[index]
    assert [row["a"].shape[-1] for row in rows(out)] == features.reshape(-1).tolist()


def rows(td) -> list:
    """Every row (batch size []) of ``td``, in C order."""
    if not td.batch_dims:
        return [td]
    return [row for part in td.unbind(0) for row in rows(part)]


def test_index_assignment_into_members_of_different_shapes():
    """A mask across the stack dim writes each selected row into its own member."""
    stack = ragged()
    mask = torch.tensor([[True, False, True], [False, False, True], [False] * 3, [True] * 3])
    stack[mask] = TensorDict({"b": torch.full((mask.sum(),), -1.0)}, [int(mask.sum())])
    expected = torch.arange(3.0).expand(4, 3).clone()
    expected[mask] = -1
    assert torch.equal(stack["b"], expected)
    assert stack.tensordicts[2]["a"].shape == (4, 3)


def test_empty_selections_have_no_rows():
    """A slice or mask that picks no member gives a tensordict without rows, with the keys."""
    stack = lazy_stack([TensorDict({"a": torch.ones(2)}, [2]) for _ in range(3)])
    for empty in (stack[0:0], stack[torch.zeros(3, dtype=torch.bool)]):
        assert empty.batch_size == (0, 2)
        assert empty["a"].shape == (0, 2)
    across = lazy_stack([TensorDict({"a": torch.ones(3)}, [3]) for _ in range(2)], 1)
    assert across[:, torch.zeros(2, dtype=torch.bool)].batch_size == (3, 0)


def test_scalar_boolean_index():
    """True adds a leading dim of size 1, False one of size 0; writing with False writes nothing."""
    stack = lazy_stack([TensorDict({"a": torch.full((), float(i))}, []) for i in range(2)])
    assert stack[True].batch_size == (1, 2)
    assert stack[torch.tensor(False)].batch_size == (0, 2)
    assert stack[True]["a"].tolist() == [[0.0, 1.0]]
    stack[torch.tensor(False)] = TensorDict({"a": torch.full((1, 2), 5.0)}, [1, 2])
    assert stack["a"].tolist() == [0.0, 1.0]
    stack[True] = TensorDict({"a": torch.full((1, 2), 5.0)}, [1, 2])
    assert stack["a"].tolist() == [5.0, 5.0]


def test_assignment_adds_keys_to_the_members_it_reaches():
    """Index assignment of a tensordict with a new key adds it to the members it reaches."""
    stack = LazyStackedTensorDict(
        TensorDict({"a": torch.ones(())}), TensorDict({"a": torch.zeros(())})
    )
    stack[torch.tensor([True, False])] = TensorDict({"b": 0.0})
    assert "b" in stack.tensordicts[0].keys() and "b" not in stack.tensordicts[1].keys()
    stack[torch.tensor([False, True])] = TensorDict({"b": 1.0})
    assert stack["b"].tolist() == [0.0, 1.0]


def test_empty_stack_from_batch_size():
    """A stack built without members has a 0 at the stack dim, the given device, and grows by append."""
    stack = LazyStackedTensorDict(stack_dim=1, batch_size=[1, 2], device="cpu")
    assert stack.batch_size == (1, 0, 2)
    assert stack.device == torch.device("cpu")
    assert list(stack.keys()) == []
    assert stack.clone().batch_size == (1, 0, 2)
    stack.append(TensorDict({"a": torch.zeros(1, 2)}, [1, 2]))
    assert stack.batch_size == (1, 1, 2)
    assert list(stack.keys()) == ["a"]
    assert LazyStackedTensorDict(stack_dim=0).batch_size == (0,)


def test_batch_size_keyword_with_members_is_checked():
    """With members, batch_size is the stack's own batch size and must match."""
    members = [TensorDict({}, [3]), TensorDict({}, [3])]
    assert LazyStackedTensorDict(*members, batch_size=[2, 3]).batch_size == (2, 3)
    with pytest.raises(RuntimeError):
        LazyStackedTensorDict(*members, batch_size=[4])


def test_names_setter_names_the_stack_dim_and_the_members():
    """Assigning names names the stack dim and each member's dims; None removes them."""
    members = [TensorDict({"a": torch.zeros(3)}, [3]) for _ in range(2)]
    stack = lazy_stack(members, 1)
    stack.names = ["time", "env"]
    assert stack.names == ["time", "env"]
    assert members[0].names == ["time"]
    assert stack[:, 0].names == ["time"]
    stack.names = None
    assert stack.names == [None, None]


@ours_only  # the reference fails with an IndexError from inside its setter
def test_names_setter_refuses_a_wrong_number_of_names():
    """Assigning fewer names than batch dims is a ValueError naming them."""
    stack = lazy_stack([TensorDict({}, [3]) for _ in range(2)], 1)
    with pytest.raises(ValueError, match=r"\['a'\]"):
        stack.names = ["a"]


def test_first_class_dims_on_a_lazy_stack():
    """A first-class dim binds a dim that is not the stack dim; on the stack dim it is a ValueError."""
    ftdim = pytest.importorskip("functorch.dim")
    stack = lazy_stack([TensorDict({"a": torch.zeros(3, 4)}, [3, 4]) for _ in range(2)], 1)
    d0 = ftdim.dims(1)
    out = stack[d0]
    assert out.batch_size == (2, 4)
    d1 = ftdim.dims(1)
    with pytest.raises(ValueError):
        stack[:, d1]
