"""Nested tensors (jagged and strided) as leaves: bytes, indexing, apply, copies, memmap."""

from __future__ import annotations

import json
import pickle

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict

from conftest import ours_only

COMPONENTS = [
    torch.arange(6.0).reshape(2, 3),
    torch.arange(3.0).reshape(1, 3),
    torch.ones(4, 3),
]


def nested(layout):
    return torch.nested.nested_tensor([c.clone() for c in COMPONENTS], layout=layout)


def make_td(layout):
    return TensorDict({"nt": nested(layout), "x": torch.arange(3.0)}, [3])


def same_components(value, expected):
    got = list(value.unbind(0))
    return len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected))


LAYOUTS = pytest.mark.parametrize(
    "layout", [torch.jagged, torch.strided], ids=["jagged", "strided"]
)


@LAYOUTS
def test_a_nested_leaf_fits_a_batch_of_its_first_dim(layout):
    """A nested tensor of n components is a leaf of a tensordict with batch size [n]."""
    td = make_td(layout)
    assert td["nt"].is_nested
    assert td["nt"].layout is layout
    assert TensorDict({"nt": nested(layout)}, []).batch_size == torch.Size([])


def test_auto_batch_size_stops_at_a_strided_ragged_dim():
    """auto_batch_size_ keeps only the dims before a strided nested tensor's ragged dim."""
    td = TensorDict({"nt": nested(torch.strided)}).auto_batch_size_()
    assert td.batch_size == torch.Size([3])


def test_repr_shows_the_ragged_dims():
    """The repr prints a jagged dim as j<N> and a strided ragged dim as -1."""
    assert "nt: f32[j" in repr(make_td(torch.jagged))
    assert "nt: f32[-1, 3]" in repr(make_td(torch.strided)).replace(",3", ", 3")


def test_bytes_counts_a_jagged_leaf_values_and_offsets():
    """bytes() counts a jagged leaf's values and offsets, and the dense leaves' elements."""
    td = make_td(torch.jagged)
    # 21 float values, 4 int64 offsets, 3 floats of "x"
    assert td.bytes() == 21 * 4 + 4 * 8 + 3 * 4
    td["again"] = td["nt"]
    assert td.bytes() == 2 * (21 * 4 + 4 * 8) + 3 * 4
    assert td.bytes(count_duplicates=False) == 21 * 4 + 4 * 8 + 3 * 4


def test_bytes_counts_lengths_and_shared_parts_of_jagged_leaves_once():
    """A jagged leaf counts its lengths too; count_duplicates=False counts shared values and offsets once."""
    dense = torch.zeros(3)
    offsets, lengths = torch.tensor([0, 1, 3]), torch.tensor([1, 2])
    own = torch.nested.nested_tensor_from_jagged(torch.ones(3), offsets, lengths=lengths)
    shared = torch.nested.nested_tensor_from_jagged(dense, offsets, lengths=lengths)
    td = TensorDict(dense=dense, own=own, shared=shared)
    one_jagged = 3 * 4 + 3 * 8 + 2 * 8
    assert td.bytes() == 3 * 4 + 2 * one_jagged
    assert td.bytes(count_duplicates=False) == 3 * 4 + one_jagged


def test_bytes_counts_the_grad():
    """A leaf with a grad counts the grad's elements too; a view of a leaf counts on its own."""
    weight = torch.ones(3, requires_grad=True)
    (weight * 2).sum().backward()
    plain = torch.zeros(4)
    td = TensorDict(weight=weight, plain=plain, half=plain[:2])
    assert td.bytes() == 2 * 3 * 4 + 4 * 4 + 2 * 4
    assert td.bytes(count_duplicates=False) == td.bytes()


@ours_only  # the reference raises RuntimeError for a strided nested leaf
def test_bytes_counts_a_strided_nested_leaf_components():
    """bytes() counts the elements of a strided nested leaf's components."""
    assert make_td(torch.strided).bytes() == 21 * 4 + 3 * 4


def test_bytes_of_dense_leaves():
    """bytes() is numel * element_size summed over the leaves; count_duplicates=False counts a tensor once."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3, dtype=torch.int8)}}, [3])
    td["d"] = td["a"]
    assert td.bytes() == 51
    assert td.bytes(count_duplicates=False) == 27
    assert TensorDict({"a": torch.zeros(3)[None].expand(4, 3)}, [4]).bytes() == 48


@LAYOUTS
def test_an_int_index_gives_one_component(layout):
    """td[i] gives component i of a nested leaf as a dense tensor."""
    td = make_td(layout)
    assert torch.equal(td[0]["nt"], COMPONENTS[0])
    assert torch.equal(td[2]["nt"], COMPONENTS[2])
    assert td[1]["x"] == 1.0


@pytest.mark.parametrize(
    "index, picked",
    [
        (slice(1, None), [1, 2]),
        (slice(None, None, 2), [0, 2]),
        (torch.tensor([0, 2]), [0, 2]),
        (torch.tensor([2, 0, 0]), [2, 0, 0]),
        (torch.tensor([True, False, True]), [0, 2]),
        ([1, 2], [1, 2]),
    ],
    ids=["slice", "step", "long", "repeats", "mask", "list"],
)
def test_jagged_leaf_indexed_along_the_batch(index, picked):
    """Slices, long tensors and masks pick the jagged leaf's components in order."""
    out = make_td(torch.jagged)[index]
    assert out.batch_size == torch.Size([len(picked)])
    assert out["nt"].is_nested
    assert same_components(out["nt"], [COMPONENTS[i] for i in picked])
    assert torch.equal(out["x"], torch.tensor([float(i) for i in picked]))


@settings(max_examples=30, deadline=None)
@given(positions=st.lists(st.integers(0, 2), min_size=1, max_size=6))
def test_jagged_indexing_by_any_positions(positions):
    """Indexing by any list of positions gives those components, in that order."""
    out = make_td(torch.jagged)[torch.tensor(positions)]
    assert same_components(out["nt"], [COMPONENTS[i] for i in positions])


COPIES = {
    "apply": (lambda td: td.apply(lambda x: x * 2), 2),
    "clone": (lambda td: td.clone(), 1),
    "to-device": (lambda td: td.to("cpu"), 1),
    "detach": (lambda td: td.detach(), 1),
    "contiguous": (lambda td: td.contiguous(), 1),
    "pickle": (lambda td: pickle.loads(pickle.dumps(td)), 1),
    "exclude": (lambda td: td.exclude("x"), 1),
}


@LAYOUTS
@pytest.mark.parametrize("name", list(COPIES), ids=list(COPIES))
def test_copying_methods_keep_a_nested_leaf_nested(layout, name):
    """apply, clone, to, detach, contiguous, pickling and exclude keep the nested leaf and its values."""
    method, scale = COPIES[name]
    out = method(make_td(layout))
    assert out["nt"].is_nested
    assert out["nt"].layout is layout
    assert same_components(out["nt"], [c * scale for c in COMPONENTS])


@LAYOUTS
def test_to_dtype_converts_a_nested_leaf(layout):
    """to(torch.float64) converts a nested leaf's values."""
    out = make_td(layout).to(torch.float64)
    assert out["nt"].dtype == torch.float64
    assert same_components(out["nt"], [c.double() for c in COMPONENTS])


@LAYOUTS
def test_clone_copies_a_nested_leaf(layout):
    """Zeroing a clone leaves the original nested leaf as it was."""
    td = make_td(layout)
    td.clone().zero_()
    assert same_components(td["nt"], COMPONENTS)


@LAYOUTS
def test_unbind_gives_the_components(layout):
    """unbind(0) gives one tensordict per component, each leaf dense."""
    parts = make_td(layout).unbind(0)
    assert len(parts) == 3
    for part, expected in zip(parts, COMPONENTS):
        assert torch.equal(part["nt"], expected)


@LAYOUTS
def test_zero_fills_a_nested_leaf(layout):
    """zero_() zeroes a nested leaf in place."""
    td = make_td(layout)
    td.zero_()
    assert same_components(td["nt"], [torch.zeros_like(c) for c in COMPONENTS])


def test_comparing_jagged_leaves_gives_a_jagged_mask():
    """td == td.clone() on a jagged leaf is a jagged boolean leaf, all True."""
    td = make_td(torch.jagged)
    eq = td == td.clone()
    assert eq["nt"].is_nested
    assert all(c.all() for c in eq["nt"].unbind(0))


@LAYOUTS
def test_to_dict_keeps_the_nested_tensor(layout):
    """to_dict() gives the nested tensor itself."""
    value = make_td(layout).to_dict()["nt"]
    assert value.is_nested
    assert same_components(value, COMPONENTS)


def test_strided_nested_leaf_memmap_round_trip(tmp_path):
    """memmap writes <key>.memmap and <key>.shape.memmap for a strided nested leaf, and loads it back."""
    td = make_td(torch.strided)
    td.memmap(tmp_path / "td")
    folder = tmp_path / "td"
    names = sorted(p.name for p in folder.iterdir())
    assert [n for n in names if n.startswith("nt.")] == ["nt.memmap", "nt.shape.memmap"]
    record = json.loads((folder / "meta.json").read_text())["nt"]
    assert record == {"device": "cpu", "shape": [3, 2], "dtype": "torch.float32", "is_nested": True}
    assert (folder / "nt.memmap").stat().st_size == 21 * 4
    assert (folder / "nt.shape.memmap").stat().st_size == 3 * 2 * 8
    loaded = TensorDict.load_memmap(folder)
    assert loaded["nt"].is_nested
    assert same_components(loaded["nt"], COMPONENTS)
    assert torch.equal(loaded["x"], td["x"])


def test_reference_nested_fixture_loads(fixture_copy):
    """The nested tensor the reference wrote loads with its components' shapes."""
    loaded = TensorDict.load_memmap(fixture_copy("nested_tensor"))
    assert loaded["nt"].is_nested
    assert [tuple(c.shape) for c in loaded["nt"].unbind(0)] == [(2, 3), (4, 3)]
    assert loaded["dense"].shape == torch.Size([2, 5])


def test_jagged_leaf_cannot_be_memory_mapped(tmp_path):
    """memmap refuses a jagged leaf with NotImplementedError and writes no meta.json."""
    with pytest.raises(NotImplementedError, match="jagged"):
        make_td(torch.jagged).memmap_()
    with pytest.raises(NotImplementedError):
        make_td(torch.jagged).memmap(tmp_path / "td")
    assert not (tmp_path / "td" / "meta.json").exists()
