"""A tensorclass inside a tensordict: keys through it, comparisons with its plain form, writes.

Differential: this file runs under the reference's interpreter too
(``cd tests && REF/python -m pytest test_tensorclass_in_tree.py``).
"""

from __future__ import annotations

import torch

from tensordict import TensorDict, tensorclass


@tensorclass
class Node:
    X: torch.Tensor
    y: Node
    z: str


def make_td():
    """A tensordict holding a tensorclass whose inner instance leaves two fields unset (None)."""
    inner = Node(X=torch.randn(4, 3), y=None, z=None, batch_size=[4, 3])
    node = Node(X=torch.randn(4, 3), y=inner, z="z", batch_size=[4, 3])
    return TensorDict({"a": torch.randn(4, 3, 5), "tc": node}, [4, 3])


def test_a_tensorclass_equals_its_plain_form_with_unset_fields_kept_as_none():
    """td == td.to_tensordict(retain_none=True): unset fields and None entries pair as equal."""
    td = make_td()
    plain = td.to_tensordict(retain_none=True)
    assert plain["tc", "y", "y"] is None
    assert (td == plain).all()
    assert (plain == td).all()
    assert (td != plain.clone().zero_()).any()


def test_exclude_through_a_tensorclass_unsets_its_field():
    """exclude of a key inside a tensorclass gives the field None there, and the source keeps it."""
    td = make_td()
    out = td.exclude(("tc", "z"))
    assert isinstance(out["tc"], Node) and out["tc"].z is None
    assert td["tc"].z == "z"
    td.exclude(("tc", "z"), inplace=True)
    assert td["tc"].z is None


def test_select_through_a_tensorclass_keeps_only_the_selected_fields():
    """select of a key inside a tensorclass gives the class with the other fields None."""
    td = make_td()
    out = td.select("a", ("tc", "X"))
    assert isinstance(out["tc"], Node)
    assert out["tc"].z is None and out["tc"].y is None
    assert torch.equal(out["tc"].X, td["tc"].X)
    assert td["tc"].z == "z" and isinstance(td["tc"].y, Node)


def test_filter_non_tensor_data_reaches_tensorclass_fields():
    """filter_non_tensor_data drops a tensorclass's non-tensor fields, so comparisons see tensors only."""
    td = make_td()
    empty = torch.empty_like(td)
    td.apply_(lambda x: x + 1.0)
    filtered = td.filter_non_tensor_data()
    assert filtered["tc"].z is None and td["tc"].z == "z"
    comp = filtered != empty.filter_non_tensor_data()
    assert sorted(map(str, comp.keys(True, True))) == ["('tc', 'X')", "('tc', 'y', 'X')", "a"]


def test_writing_a_dict_with_none_at_rows_leaves_unset_fields_and_values_alone():
    """td[rows] = a dict whose None values stand for unset fields: the tensors are written, the rest kept."""
    td = make_td()
    rows = td[:, :2].to_tensordict(retain_none=True).zero_().to_dict()
    assert rows["tc"]["y"]["y"] is None and rows["tc"]["y"]["z"] is None
    td[:, :2] = rows
    assert (td["a"][:, :2] == 0).all() and (td["tc", "y", "X"][:, :2] == 0).all()
    assert not (td["a"][:, 2:] == 0).all()
    assert td["tc"].z == "z" and td["tc"].y.y is None and td["tc"].y.z is None


def test_renaming_the_dims_reaches_a_nested_tensorclass():
    """Setting names on the tensordict renames the leading dims of a tensorclass inside, at every depth."""
    td = make_td()
    td.names = ["0", "1"]
    assert td["tc"].names == ["0", "1"] and td["tc"].y.names == ["0", "1"]
    td.lock_()
    td.names = ["p", "q"]
    assert td["tc"].names == ["p", "q"] and td["tc"].y.names == ["p", "q"]
