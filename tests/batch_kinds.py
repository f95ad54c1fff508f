"""The same data as each kind of tensordict, and the leaf checks the batch-dim tests share."""

import torch
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack, tensorclass


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


@st.composite
def shapes_and_dims(draw):
    """A batch shape of 1 to 3 dims and a dim of it."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, dim
