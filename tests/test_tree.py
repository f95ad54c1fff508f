"""The walk of a tensordict tree (``tensordict._ops.tree``): describe a tree, rebuild it."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    tensorclass,
)
from tensordict._ops import tree
from tensordict.errors import ConsolidatedFormatError


@tensorclass
class Pair:
    """A tensorclass at module level, so that the registry knows it by name."""

    left: torch.Tensor
    right: torch.Tensor


def _describe(td, **kwargs):
    """The description of ``td`` with each leaf recorded as its index in the returned list."""
    found = []

    def leaf(value, leaves, key, path):
        leaves[key] = len(found)
        found.append(value)

    return tree.describe(td, leaf, **kwargs), found


def _round_trip(td, through_json: bool = False, **kwargs):
    """``td`` described and rebuilt over its own leaves (its description through JSON if asked)."""
    meta, found = _describe(td, sort=kwargs.get("sort", False))
    if through_json:
        meta = json.loads(json.dumps(tree.named_classes(meta)))
    return tree.rebuild(
        meta, lambda leaves, where: {key: found[i] for key, i in leaves.items()}, **kwargs
    )


def _assert_same(actual, expected) -> None:
    assert type(actual) is type(expected)
    assert actual.batch_size == expected.batch_size
    assert set(actual.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        a, e = actual.get(key), expected.get(key)
        if isinstance(e, torch.Tensor):
            assert torch.equal(a, e), key
        else:
            assert a == e, key


def test_a_tensordict_round_trips_with_its_own_leaves():
    """Rebuilding gives a tree of the same keys, batch size and names, over the same tensors."""
    td = TensorDict(a=torch.zeros(3), b={"c": torch.ones(3, 2)}, batch_size=[3], names=["time"])
    out = _round_trip(td)
    _assert_same(out, td)
    assert out.names == ["time"] and out["b"].names == ["time"]
    assert out["a"] is td["a"] and out["b", "c"] is td["b", "c"]


def test_the_description_is_the_consolidated_layout():
    """Each level has cls, non_tensors, leaves and cls_metadata, then one item per sub-level."""
    td = TensorDict(a=torch.zeros(2), sub={"x": torch.ones(2, 3)}, note="hi", batch_size=[2])
    meta, _ = _describe(td)
    assert list(meta) == [*tree.LEVEL_FIELDS, "sub"]
    assert meta["cls"] == "TensorDict"
    assert meta["non_tensors"] == {"note": ("hi", [2], None)}
    assert meta["leaves"] == {"a": 0}
    assert meta["cls_metadata"] == {
        "device": None,
        "names": [None],
        "batch_size": [2],
        "is_locked": False,
    }
    assert meta["sub"]["leaves"] == {"x": 1}


def test_a_lazy_stack_is_described_by_its_members():
    """A lazy stack's members come under "0", "1", ..., with its stack dim and its name."""
    stack = LazyStackedTensorDict(
        TensorDict(x=torch.zeros(2, 3), batch_size=[2]),
        TensorDict(x=torch.ones(2, 5), batch_size=[2]),
        stack_dim=1,
        stack_dim_name="env",
    )
    meta, found = _describe(TensorDict(s=stack, batch_size=[2, 2]))
    level = meta["s"]
    assert level["cls"] == "LazyStackedTensorDict"
    assert level["cls_metadata"] == {"stack_dim": 1, "stack_dim_name": "env", "is_locked": False}
    assert [key for key in level if key not in tree.LEVEL_FIELDS] == ["0", "1"]
    out = _round_trip(TensorDict(s=stack, batch_size=[2, 2]), through_json=True)
    rebuilt = out["s"]
    assert isinstance(rebuilt, LazyStackedTensorDict)
    assert rebuilt.stack_dim == 1 and rebuilt.names[1] == "env"
    assert rebuilt.tensordicts[1]["x"] is found[1]


def test_a_tensorclass_comes_back_as_its_class():
    """A tensorclass entry is described through its tensordict and rebuilt as its class."""
    pair = Pair(left=torch.zeros(2, 1), right=torch.ones(2), batch_size=[2])
    td = TensorDict(p=pair, batch_size=[2])
    meta, _ = _describe(td)
    assert meta["p"]["cls"] is Pair
    assert tree.named_classes(meta)["p"]["cls"] == str(Pair)
    out = _round_trip(td, through_json=True)
    assert isinstance(out["p"], Pair)
    assert torch.equal(out["p"].right, pair.right)


def test_a_stack_of_tensorclasses_comes_back_as_the_class_over_a_stack():
    """lazy_stack of tensorclass instances (the class over a lazy stack) keeps both."""
    stacked = lazy_stack(
        [
            Pair(left=torch.zeros(1), right=torch.zeros(2)),
            Pair(left=torch.ones(1), right=torch.ones(3)),
        ]
    )
    out = _round_trip(TensorDict(p=stacked, batch_size=[2]), through_json=True)
    assert isinstance(out["p"], Pair)
    assert isinstance(out["p"]._tensordict, LazyStackedTensorDict)
    assert torch.equal(out["p"]._tensordict.tensordicts[1]["right"], torch.ones(3))


def test_non_tensor_data_and_stacks_round_trip():
    """A non-tensor entry is a record; a non-tensor stack is a stack of such records."""
    td = TensorDict(label="x", stack=NonTensorStack("a", "b"), batch_size=[2])
    meta, found = _describe(td)
    assert found == []
    assert meta["stack"]["cls"] == "NonTensorStack"
    assert meta["stack"]["non_tensors"] == {"0": ("a", [], None), "1": ("b", [], None)}
    out = _round_trip(td, through_json=True)
    assert isinstance(out.get("stack"), NonTensorStack)
    assert out["stack"] == ["a", "b"] and out["label"] == "x"


def test_a_non_tensor_callback_keeps_the_entries_whole():
    """With ``non_tensor`` on both sides, a MetaData entry comes back as the very object."""
    meta_entry = MetaData("kept", batch_size=[2])
    td = TensorDict(m=meta_entry, batch_size=[2])
    meta, _ = _describe(td, non_tensor=lambda value: value)
    assert meta["non_tensors"]["m"] is meta_entry
    out = tree.rebuild(meta, lambda leaves, where: {}, non_tensor=lambda record: record)
    assert out.get("m") is meta_entry


def test_sort_orders_keys_but_not_stack_members():
    """With ``sort``, dense levels are visited by key and stack members keep their order."""
    members = [TensorDict(b=torch.zeros(1), a=torch.zeros(1)) for _ in range(11)]
    td = TensorDict(z=torch.zeros(11), s=lazy_stack(members), batch_size=[11])
    paths = [path for path, _ in tree.tensors(td, sort=True)]
    assert paths[:3] == [("s", 0, "a"), ("s", 0, "b"), ("s", 1, "a")]
    assert paths[-3:] == [("s", 10, "a"), ("s", 10, "b"), ("z",)]
    out = _round_trip(td, sort=True)
    assert list(out.keys()) == ["s", "z"]


def test_tensors_follow_the_order_of_describe():
    """The leaves ``tensors`` lists are those ``describe`` records, in the same order."""
    td = TensorDict(
        b={"y": torch.ones(2), "x": torch.zeros(2)},
        a=torch.arange(2.0),
        s=lazy_stack([TensorDict(q=torch.ones(2)), TensorDict(q=torch.zeros(2))]),
        batch_size=[2],
    )
    for sort in (False, True):
        _, found = _describe(td, sort=sort)
        listed = [t for _, t in tree.tensors(td, sort=sort)]
        assert len(listed) == len(found) and all(a is b for a, b in zip(listed, found))


def test_rebuild_options():
    """``lock`` locks the levels recorded locked; ``device`` replaces the recorded devices."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2)}, batch_size=[2], device="cpu")
    td.lock_()
    assert _round_trip(td).is_locked
    assert not _round_trip(td, lock=False).is_locked
    moved = _round_trip(td, device=torch.device("meta"))
    assert moved.device == torch.device("meta") and moved["b"].device == torch.device("meta")


def test_on_level_sees_each_level_after_its_sub_levels():
    """``on_level`` is called once per level, the deepest first, with that level's description."""
    td = TensorDict(a={"b": {"c": torch.zeros(1)}}, batch_size=[1])
    meta, found = _describe(td)
    seen = []
    tree.rebuild(
        meta,
        lambda leaves, where: {key: found[i] for key, i in leaves.items()},
        on_level=lambda obj, level: seen.append((sorted(obj.keys()), level is meta)),
    )
    assert seen == [(["c"], False), (["b"], False), (["a"], True)]


def test_an_unknown_class_is_never_imported():
    """A class name not in the registry raises, naming it, even when its module could be imported."""
    meta = {
        "cls": "<class 'collections.OrderedDict'>",
        "non_tensors": {},
        "leaves": {},
        "cls_metadata": {},
    }
    with pytest.raises(ConsolidatedFormatError, match="collections.OrderedDict"):
        tree.rebuild(meta, lambda leaves, where: {})


def test_a_malformed_level_is_refused():
    """A level without its fields, or a non-tensor record of the wrong shape, names the level."""
    with pytest.raises(ConsolidatedFormatError, match="top level.*fields"):
        tree.rebuild({"cls": "TensorDict"}, lambda leaves, where: {})
    meta, _ = _describe(TensorDict(sub={"x": torch.zeros(1)}))
    meta["sub"]["non_tensors"]["bad"] = "value"
    with pytest.raises(ConsolidatedFormatError, match=r"\('sub',\).*'bad'"):
        tree.rebuild(meta, lambda leaves, where: {})


def test_named_classes_can_name_unregistered_classes_otherwise():
    """``unknown`` names a class the registry does not know by its stable name."""

    class Local(TensorDict):
        """A TensorDict subclass that no registry holds."""

    meta = {"cls": Local, "non_tensors": {}, "leaves": {}, "cls_metadata": {}}
    assert tree.named_classes(meta)["cls"] == str(Local)
    assert tree.named_classes(meta, unknown="TensorDict")["cls"] == "TensorDict"
    assert tree.named_classes({**meta, "cls": Pair}, unknown="TensorDict")["cls"] == str(Pair)


def test_a_lazy_stack_writes_a_stacked_leaf_back():
    """A lazy stack's write-back hook copies a stacked leaf into its members; a dense level has none."""
    stack = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(2))])
    value = stack.get("x")
    value += 1
    stack._tree_write_back("x", value)()
    assert torch.equal(stack.tensordicts[1]["x"], torch.ones(2))
    assert TensorDict(x=torch.zeros(2))._tree_write_back("x", value) is None


# ---------------------------------------------------------------------- random trees
_keys = st.text(alphabet="abcxyz", min_size=1, max_size=3)
_leaves = st.tuples(
    st.sampled_from([torch.float32, torch.int64, torch.bool]),
    st.lists(st.integers(0, 3), max_size=2),
)


def _trees(depth: int):
    if depth == 0:
        return st.dictionaries(_keys, _leaves, max_size=3)
    return st.dictionaries(
        _keys, st.one_of(_leaves, st.just("text"), _trees(depth - 1)), max_size=3
    )


def _build(spec: dict, batch: list):
    entries = {}
    for key, value in spec.items():
        if isinstance(value, dict):
            entries[key] = _build(value, batch)
        elif isinstance(value, str):
            entries[key] = NonTensorData(value, batch_size=batch)
        else:
            dtype, shape = value
            entries[key] = torch.ones((*batch, *shape)).to(dtype)
    return TensorDict(entries, batch_size=batch)


@settings(max_examples=40, deadline=None)
@given(spec=_trees(2), batch=st.lists(st.integers(1, 3), max_size=2), stacked=st.booleans())
def test_random_trees_round_trip_through_json(spec, batch, stacked):
    """Any tree of tensors, non-tensors and sub-levels (lazily stacked or not) round-trips."""
    td = _build(spec, batch)
    if stacked:
        td = lazy_stack([td, _build(spec, batch)], 0)
    out = _round_trip(td, through_json=True)
    assert type(out) is type(td)
    assert out.batch_size == td.batch_size
    for key in td.keys(True, True):
        value = td.get(key)
        if isinstance(value, torch.Tensor):
            assert torch.equal(out.get(key), value), key
        else:
            assert out[key] == td[key], key
