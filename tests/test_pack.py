"""``pack``: every leaf as columns of one tensor, and ``PackLayout.unpack`` to rebuild the tree."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, PackLayout, TensorDict, tensorclass


@tensorclass
class Cell:
    x: torch.Tensor


def make_td() -> TensorDict:
    return TensorDict(
        p=torch.arange(5.0),
        v=torch.arange(15.0).reshape(5, 3),
        nested={"stress": torch.ones(5, 3, 3)},
        c=Cell(x=torch.ones(5, 2, 4), batch_size=[5, 2]),
        batch_size=[5],
    )


def test_pack_concatenates_leaves_in_sorted_key_order():
    """The columns follow keys(True, True, sort=True); the layout records keys, shapes and offsets."""
    flat, layout = make_td().pack()
    assert flat.shape == (5, 21)
    assert layout.keys == (("c", "x"), ("nested", "stress"), "p", "v")
    assert layout.shapes == (
        torch.Size([2, 4]),
        torch.Size([3, 3]),
        torch.Size([]),
        torch.Size([3]),
    )
    assert layout.offsets == (0, 8, 17, 18) and layout.numel == 21
    assert layout.nested == (("c", torch.Size([2]), Cell), ("nested", torch.Size([]), None))
    assert torch.equal(flat[:, 17], torch.arange(5.0))


def test_unpack_rebuilds_the_tree_over_views():
    """unpack gives the same entries, tensorclass levels as their class, leaves viewing flat."""
    td = make_td()
    flat, layout = td.pack()
    out = layout.unpack(flat)
    assert (out == td).all()
    assert type(out["c"]) is Cell
    out["p"][0] = 100.0
    assert flat[0, 17] == 100.0


def test_unpack_of_an_indexed_packed_tensor():
    """The packed tensor may be indexed: the batch size follows it."""
    td = make_td()
    flat, layout = td.pack()
    out = layout.unpack(flat.index_select(0, torch.tensor([0, 2])))
    assert out.batch_size == (2,)
    assert torch.equal(out["v"], td["v"][[0, 2]])


def test_pack_along_another_dim_is_contiguous():
    """dim=0 puts the packed dim first; the result is contiguous; the layout counts from the end."""
    td = make_td()
    flat, layout = td.pack(0)
    assert flat.shape == (21, 5) and flat.is_contiguous()
    assert layout.dim == -2
    assert layout == td.pack(-2)[1]
    assert (layout.unpack(flat) == td).all()


def test_pack_into_a_given_layout():
    """pack(layout=...) follows the layout's order and gives the same tensor."""
    td = make_td()
    flat, layout = td.pack()
    again, same = td.pack(layout=layout)
    assert torch.equal(again, flat) and same == layout


def test_layout_is_hashable_and_compares_by_value():
    """Two packs of equal structure give equal, hashable layouts."""
    a, b = make_td().pack()[1], make_td().pack()[1]
    assert a == b and hash(a) == hash(b)
    assert PackLayout(keys=("a",), shapes=([2],)).shapes == (torch.Size([2]),)


def test_pack_of_a_tensorclass_and_a_lazy_stack():
    """A tensorclass's layout rebuilds the class; a lazy stack packs like its dense form."""
    cell = Cell(x=torch.ones(3, 2), batch_size=[3])
    flat, layout = cell.pack()
    assert layout.cls is Cell and type(layout.unpack(flat)) is Cell
    stack = LazyStackedTensorDict(*make_td().unbind(0))
    assert torch.equal(stack.pack()[0], make_td().pack()[0])


def test_pack_of_an_empty_tensordict():
    """No leaves: a (*batch, 0) tensor and an empty layout."""
    flat, layout = TensorDict(batch_size=[3]).pack()
    assert flat.shape == (3, 0) and layout.keys == () and layout.numel == 0


def test_pack_refuses_mixed_dtypes_naming_the_key():
    """Leaves of different dtypes raise TypeError naming the key."""
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    with pytest.raises(TypeError, match="'b'"):
        td.pack()


def test_pack_refuses_non_tensor_entries():
    """A non-tensor entry raises TypeError naming it."""
    with pytest.raises(TypeError, match="'b'"):
        TensorDict(a=torch.zeros(2), b="x", batch_size=[2]).pack()


def test_pack_refuses_a_layout_of_another_dim_or_keys():
    """A layout packed along another dim, or with other leaves, raises ValueError."""
    td = make_td()
    with pytest.raises(ValueError, match="dim"):
        td.pack(layout=td.pack(0)[1])
    with pytest.raises(KeyError, match="'a'"):
        TensorDict(a=torch.zeros(5), batch_size=[5]).pack(layout=td.pack()[1])


def test_unpack_refuses_a_wrong_width():
    """A tensor without numel columns along the packed dim raises ValueError."""
    _, layout = make_td().pack()
    with pytest.raises(ValueError, match="21"):
        layout.unpack(torch.zeros(5, 3))


def test_pack_refuses_a_dim_out_of_range():
    """dim outside [-(batch_dims + 1), batch_dims] raises IndexError."""
    with pytest.raises(IndexError):
        make_td().pack(3)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(0, 3), min_size=0, max_size=2),
    features=st.lists(st.lists(st.integers(1, 3), max_size=2), min_size=1, max_size=4),
    data=st.data(),
)
def test_pack_then_unpack_is_the_identity(batch, features, data):
    """For any batch size, leaf shapes and packed dim, unpack(pack(td)) equals td."""
    td = TensorDict(
        {f"k{i}": torch.randn(tuple(batch) + tuple(shape)) for i, shape in enumerate(features)},
        batch_size=batch,
    )
    dim = data.draw(st.integers(-(len(batch) + 1), len(batch)))
    flat, layout = td.pack(dim)
    assert flat.is_contiguous()
    out = layout.unpack(flat)
    assert out.batch_size == td.batch_size
    for key in td.keys():
        assert torch.equal(out[key], td[key])
