"""``parse_tensor_dict_string``: a zero-filled tensordict rebuilt from its repr."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack, parse_tensor_dict_string, set_printoptions

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.int64,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def make_td() -> TensorDict:
    return TensorDict(
        obs=torch.ones(3, 4),
        next=TensorDict(done=torch.ones(3, 1, 2, dtype=torch.bool), batch_size=[3, 1]),
        i=torch.zeros(3, 2, dtype=torch.int64),
        flat={"r": torch.ones(3, dtype=torch.float64)},
        batch_size=[3],
        device="cpu",
    )


def same_structure(a, b) -> None:
    assert a.batch_size == b.batch_size
    assert sorted(a.keys(True, True), key=str) == sorted(b.keys(True, True), key=str)
    for key in a.keys(True, True):
        assert a[key].shape == b[key].shape and a[key].dtype == b[key].dtype, key
    for key in a.keys(True):
        if isinstance(a[key], TensorDict):
            assert a[key].batch_size == b[key].batch_size, key


@pytest.mark.parametrize("compact", [True, False])
def test_parse_rebuilds_keys_shapes_dtypes_batch_sizes(compact):
    """The compact and the detailed repr both give back the structure, filled with zeros."""
    td = make_td()
    with set_printoptions(compact=compact):
        text = repr(td)
    out = parse_tensor_dict_string(text)
    assert type(out) is TensorDict
    same_structure(td, out)
    assert out.device == torch.device("cpu")
    assert not out["obs"].any()


def test_parse_an_empty_tensordict():
    """An empty tensordict parses to an empty tensordict."""
    out = parse_tensor_dict_string(repr(TensorDict(batch_size=[2, 3])))
    assert out.batch_size == (2, 3) and out.is_empty()


def test_parse_a_lazy_stack_gives_a_tensordict():
    """A lazy stack whose members agree parses to a dense TensorDict."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2))])
    out = parse_tensor_dict_string(repr(stack))
    assert type(out) is TensorDict and out["a"].shape == (2, 2)


def test_parse_refuses_a_non_tensor_field():
    """A non-tensor entry cannot be rebuilt: ValueError naming it."""
    with pytest.raises(ValueError, match="s: str"):
        parse_tensor_dict_string(repr(TensorDict(a=torch.zeros(2), s="x", batch_size=[2])))


def test_parse_refuses_exclusive_keys():
    """A lazy stack with exclusive keys has no single structure: ValueError."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(b=torch.zeros(2))])
    with pytest.raises(ValueError):
        parse_tensor_dict_string(repr(stack))


def test_parse_refuses_text_that_is_not_a_tensordict():
    """Garbage raises ValueError."""
    with pytest.raises(ValueError):
        parse_tensor_dict_string("hello world")


@settings(max_examples=30, deadline=None)
@given(
    batch=st.lists(st.integers(0, 3), max_size=2),
    leaves=st.lists(
        st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(1, 3), max_size=2)),
        min_size=1,
        max_size=4,
    ),
    compact=st.booleans(),
)
def test_parse_of_repr_keeps_the_structure(batch, leaves, compact):
    """For any leaves, parse(repr(td)) has td's keys, shapes, dtypes and batch size."""
    td = TensorDict(
        {
            f"k{i}": torch.zeros(tuple(batch) + tuple(shape), dtype=d)
            for i, (d, shape) in enumerate(leaves)
        },
        batch_size=batch,
    )
    td["sub"] = TensorDict({"x": torch.zeros(tuple(batch) + (2,))}, batch_size=batch)
    with set_printoptions(compact=compact):
        text = repr(td)
    same_structure(td, parse_tensor_dict_string(text))
