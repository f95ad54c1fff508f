"""The private names kept for torchrl (tensordict/_torchrl_names.py), at the paths torchrl imports."""

from __future__ import annotations

import pickle

import pytest
import torch

from tensordict import NonTensorData, TensorClass, TensorCollection, TensorDict, lazy_stack
from tensordict import base as td_base
from tensordict import utils as td_utils


def test_nested_tensors_as_lists_is_a_falsy_default_is_leaf():
    """_NESTED_TENSORS_AS_LISTS answers like the default is_leaf, is falsy, and stays one object."""
    marker = td_base._NESTED_TENSORS_AS_LISTS
    assert not marker
    assert marker(torch.Tensor) and not marker(TensorDict) and not marker(NonTensorData)
    assert pickle.loads(pickle.dumps(marker)) is marker
    stack = lazy_stack([TensorDict(a=torch.zeros(3), b={"c": torch.zeros(1)}) for _ in range(2)])
    keys = set(stack.keys(True, True, is_leaf=marker))
    assert keys == {"a", ("b", "c")}


def test_is_leaf_functions_of_base():
    """_default_is_leaf skips non-tensors; _is_leaf_nontensor lists them beside the tensors."""
    td = TensorDict(a=torch.zeros(()), name="x", sub={"b": torch.zeros(())})
    assert set(td.keys(True, True, is_leaf=td_base._default_is_leaf)) == {"a", ("sub", "b")}
    found = set(td.keys(True, True, is_leaf=td_base._is_leaf_nontensor))
    assert found == {"a", "name", ("sub", "b")}


def test_accepted_classes():
    """_ACCEPTED_CLASSES are the tensor and tensordict classes (torchrl's ListStorage check)."""
    assert isinstance(torch.zeros(1), td_base._ACCEPTED_CLASSES)
    assert isinstance(TensorDict(), td_base._ACCEPTED_CLASSES)
    assert not isinstance([1], td_base._ACCEPTED_CLASSES)


def test_zip_strict_refuses_different_lengths():
    """_zip_strict zips iterables of one length and raises ValueError otherwise."""
    assert list(td_utils._zip_strict([1, 2], [3, 4])) == [(1, 3), (2, 4)]
    with pytest.raises(ValueError):
        list(td_utils._zip_strict([1], [3, 4]))


def test_unravel_key_to_tuple():
    """_unravel_key_to_tuple flattens a nested key and gives () for what is not a key."""
    assert td_utils._unravel_key_to_tuple(("a", ("b", "c"))) == ("a", "b", "c")
    assert td_utils._unravel_key_to_tuple("a") == ("a",)
    assert td_utils._unravel_key_to_tuple(1) == ()
    assert td_utils._unravel_key_to_tuple((0, slice(3, 4))) == ()


@pytest.mark.parametrize(
    "index",
    [1, slice(1, 3), (slice(None), None, 0), torch.tensor([[0, 1]]), ..., [0, 2], (0, [1, 2])],
)
def test_getitem_batch_size_matches_indexing(index):
    """_getitem_batch_size gives the batch size that indexing a tensordict gives."""
    td = TensorDict(a=torch.zeros(3, 4, 2), batch_size=[3, 4])
    assert td_utils._getitem_batch_size(td.batch_size, index) == td[index].batch_size


def test_maybe_correct_neg_dim():
    """_maybe_correct_neg_dim makes a negative dim positive and refuses one out of range."""
    assert td_utils._maybe_correct_neg_dim(-1, torch.Size([2, 3])) == 1
    assert td_utils._maybe_correct_neg_dim(0, None, ndim=2) == 0
    with pytest.raises(IndexError, match="out of range"):
        td_utils._maybe_correct_neg_dim(2, torch.Size([2, 3]))


def test_class_predicates():
    """_is_non_tensor and _is_tensorclass take a class, as torchrl passes them."""

    class Point(TensorClass):
        x: torch.Tensor

    assert td_utils._is_non_tensor(NonTensorData) and not td_utils._is_non_tensor(torch.Tensor)
    assert td_utils._is_tensorclass(Point) and not td_utils._is_tensorclass(TensorDict)


def test_tensorcollection_import_path():
    """tensordict._tensorcollection.TensorCollection is the public TensorCollection."""
    from tensordict._tensorcollection import TensorCollection as FromPath

    assert FromPath is TensorCollection and isinstance(TensorDict(), FromPath)


def test_other_names_torchrl_imports():
    """Buffer, is_seq_of_nested_key, from_dataclass and tensordict._pytree are importable."""
    from tensordict import _pytree  # noqa: F401
    from tensordict.tensorclass import from_dataclass  # noqa: F401

    assert td_utils.Buffer is torch.nn.Buffer
    with pytest.warns(DeprecationWarning):
        assert td_utils.is_seq_of_nested_key(["a", ("b", "c")])


# ---------------------------------------------------------------------- private hooks torchrl calls
def _tree() -> TensorDict:
    return TensorDict(
        a=torch.zeros(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]), e={}, batch_size=[2]
    )


def test_fast_apply_filter_empty():
    """_fast_apply(filter_empty=True) drops the levels left empty; all empty gives None."""
    td = _tree()
    assert td._fast_apply(lambda x: None, filter_empty=True) is None
    kept = td._fast_apply(lambda x: None, filter_empty=False)
    assert set(kept.keys(True)) == {"b", "e"}
    assert set(td._fast_apply(lambda x: x, filter_empty=True).keys(True)) == {"a", "b", ("b", "c")}
    assert "e" in td._fast_apply(lambda x: x, filter_empty=False).keys()


def test_fast_apply_with_others_and_default():
    """torchrl's select-and-clone: others with a None default, empty levels filtered out."""
    td = _tree()
    other = td.exclude("a")
    out = td._fast_apply(
        lambda x, y: x + 1 if y is not None else None, other, default=None, filter_empty=True
    )
    assert set(out.keys(True, True)) == {("b", "c")} and (out["b", "c"] == 1).all()


def test_apply_nest_calls_on_nested_with_a_new_batch_size():
    """_apply_nest(call_on_nested=True) hands sub-tensordicts to fn (torchrl's expand of params)."""
    td = _tree()

    def expand(x):
        if isinstance(x, torch.Tensor):
            return x.expand(3, *x.shape).clone()
        return x._apply_nest(expand, batch_size=[3, *x.shape], call_on_nested=True)

    out = td._apply_nest(expand, batch_size=[3, 2], filter_empty=False, call_on_nested=True)
    assert out.batch_size == (3, 2) and out["b"].batch_size == (3, 2)
    assert out["b", "c"].shape == (3, 2) and "e" in out.keys()


def test_has_names():
    """_has_names is True when a batch dim is named."""
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    assert not td._has_names()
    assert td.refine_names("x", None)._has_names()


def test_stack_onto_writes_a_stack_into_a_view():
    """_stack_onto_ writes the stack of its members into the rows of a slice, in place."""
    storage = TensorDict(a=torch.zeros(4, 2), batch_size=[4])
    rows = [TensorDict(a=torch.ones(2)), TensorDict(a=torch.full((2,), 2.0))]
    assert storage[1:3]._stack_onto_(rows, 0) is not None
    assert storage["a"][:, 0].tolist() == [0.0, 1.0, 2.0, 0.0]


def test_set_str_takes_non_blocking():
    """_set_str accepts the non_blocking keyword that torchrl passes."""
    td = TensorDict(batch_size=[2])
    td._set_str(
        "_reset", torch.ones(2, dtype=torch.bool), validated=True, inplace=False, non_blocking=False
    )
    assert td["_reset"].all()
    lazy = lazy_stack([TensorDict(a=torch.zeros(())), TensorDict(a=torch.zeros(()))])
    lazy._set_str("b", torch.ones(2), validated=False, inplace=False, non_blocking=False)
    assert lazy["b"].tolist() == [1.0, 1.0]


def test_has_exclusive_keys_tells_whether_the_members_keys_differ():
    """A lazy stack's _has_exclusive_keys (read by torchrl's collectors) is True when members' nested keys differ."""
    same = lazy_stack([TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2)}) for _ in range(3)])
    assert same._has_exclusive_keys is False
    differ = lazy_stack(
        [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2), b=torch.ones(1))]
    )
    assert differ._has_exclusive_keys is True
    nested = lazy_stack([TensorDict(s={"x": 1}), TensorDict(s={"y": 1})])
    assert nested._has_exclusive_keys is True
