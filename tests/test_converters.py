"""Converters into and out of tensordicts: tuples, named tuples, structured arrays, dataclasses, pytrees, modules."""

from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict, namedtuple
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    from_any,
    from_dataclass,
    from_module,
    from_modules,
    from_namedtuple,
    from_pytree,
    from_struct_array,
    from_tuple,
    is_tensorclass,
    tensorclass,
)

Point = namedtuple("Point", ["x", "y"])
Inner = namedtuple("Inner", ["u", "v"])


def _leaves(td):
    keys = td.keys(include_nested=True, leaves_only=True)
    return sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)


@dataclasses.dataclass
class Sample:
    obs: torch.Tensor
    label: str = "cat"


@dataclasses.dataclass
class Outer:
    sample: Sample
    reward: torch.Tensor


# ---------------------------------------------------------------------- signatures
@pytest.mark.parametrize(
    "name",
    [
        "from_any",
        "from_tuple",
        "from_namedtuple",
        "from_struct_array",
        "from_dataclass",
        "from_pytree",
        "from_module",
        "from_modules",
        "to_namedtuple",
        "to_struct_array",
        "to_pytree",
        "to_module",
    ],
)
def test_converters_are_methods_of_every_tensordict_class(name):
    """Each converter is reachable from TensorDict, LazyStackedTensorDict and TensorDictBase."""
    for cls in (TensorDict, LazyStackedTensorDict, tensordict.TensorDictBase):
        assert callable(getattr(cls, name))


# ---------------------------------------------------------------------- named tuples and tuples
def test_from_namedtuple_nests_named_tuples_tuples_and_dicts():
    """Named tuple, tuple and dict fields become sub-tensordicts keyed by field, position, key."""
    nt = Point(x=Inner(torch.zeros(3, 4), torch.ones(3)), y=({"c": torch.zeros(3)}, torch.ones(3)))
    td = TensorDict.from_namedtuple(nt)
    assert td.batch_size == torch.Size([])
    assert _leaves(td) == [("x", "u"), ("x", "v"), ("y", "0", "c"), ("y", "1")]
    assert td["x", "u"] is nt.x.u


def test_from_namedtuple_batch_size_keywords():
    """auto_batch_size infers, batch_dims caps it, batch_size sets it, device moves the leaves."""
    nt = Point(x=torch.zeros(3, 4), y=torch.ones(3, 4, 5))
    assert TensorDict.from_namedtuple(nt, auto_batch_size=True).batch_size == (3, 4)
    capped = TensorDict.from_namedtuple(nt, auto_batch_size=True, batch_dims=1)
    assert capped.batch_size == (3,)
    assert TensorDict.from_namedtuple(nt, batch_size=[3]).batch_size == (3,)
    assert TensorDict.from_namedtuple(nt, device="cpu").device == torch.device("cpu")
    assert from_namedtuple(nt, auto_batch_size=True).batch_size == (3, 4)


def test_batch_dims_without_auto_batch_size_warns_and_is_ignored():
    """batch_dims alone leaves the batch size empty and emits a FutureWarning."""
    with pytest.warns(FutureWarning, match="batch_dims"):
        td = TensorDict.from_namedtuple(Point(torch.zeros(3), torch.zeros(3)), batch_dims=1)
    assert td.batch_size == ()


@pytest.mark.parametrize(
    "convert",
    [
        lambda **kw: TensorDict.from_namedtuple(Point(torch.zeros(3), torch.zeros(3)), **kw),
        lambda **kw: TensorDict.from_tuple((torch.zeros(3),), **kw),
        lambda **kw: TensorDict.from_struct_array(np.zeros(3, dtype=[("a", "f4")]), **kw),
        lambda **kw: from_dataclass(Sample(torch.zeros(3)), **kw),
    ],
)
def test_batch_size_and_auto_batch_size_conflict(convert):
    """batch_size and auto_batch_size together raise a TypeError."""
    with pytest.raises(TypeError, match="auto_batch_size"):
        convert(batch_size=[3], auto_batch_size=True)


def test_from_namedtuple_refuses_a_plain_tuple():
    """A plain tuple is not a named tuple: AttributeError (also a TypeError) saying what was given."""
    with pytest.raises(AttributeError):
        TensorDict.from_namedtuple((torch.zeros(1),))


def test_from_namedtuple_keeps_non_tensor_values():
    """Strings are non-tensor entries read back as the value; numbers become tensors."""
    td = TensorDict.from_namedtuple(Point(x="s", y=3))
    assert td["x"] == "s"
    assert torch.equal(td["y"], torch.tensor(3))


def test_batch_size_mismatch_raises():
    """A batch size that a leaf does not start with raises RuntimeError."""
    with pytest.raises(RuntimeError, match="batch"):
        TensorDict.from_namedtuple(Point(torch.zeros(3), torch.zeros(3)), batch_size=[4])


def test_from_tuple_keys_are_positions():
    """Elements are keyed "0", "1", ...; nested tuples and named tuples nest."""
    td = TensorDict.from_tuple((torch.zeros(3, 4), (torch.ones(3), Point(torch.ones(3), "p"))))
    assert _leaves(td) == ["0", ("1", "0"), ("1", "1", "x")]
    assert td["1", "1", "y"] == "p"
    assert from_tuple((), auto_batch_size=True).batch_size == ()
    assert from_tuple([torch.zeros(2)], auto_batch_size=True).batch_size == (2,)


def test_to_namedtuple_nests_generic_named_tuples():
    """Each level is a GenericDict named tuple; non-tensors give their value."""
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}, "d": "s"}, [2])
    nt = td.to_namedtuple()
    assert type(nt).__name__ == "GenericDict"
    assert nt._fields == ("a", "b", "d")
    assert type(nt.b).__name__ == "GenericDict"
    assert torch.equal(nt.b.c, torch.ones(2))
    assert nt.d == "s"


def test_to_namedtuple_with_dest_cls():
    """dest_cls builds the outer level from the keys; an unknown field is its TypeError."""
    td = TensorDict({"x": torch.zeros(2), "y": torch.ones(2)}, [2])
    point = td.to_namedtuple(dest_cls=Point)
    assert isinstance(point, Point)
    assert torch.equal(point.y, torch.ones(2))
    assert td.to_namedtuple(dest_cls=dict).keys() == {"x", "y"}
    with pytest.raises(TypeError):
        TensorDict({"z": torch.zeros(1)}).to_namedtuple(dest_cls=Point)


def test_to_namedtuple_refuses_keys_that_are_not_identifiers():
    """A key that cannot be a field name raises ValueError naming it."""
    with pytest.raises(ValueError, match="a b"):
        TensorDict({"a b": torch.zeros(1)}).to_namedtuple()


def test_namedtuple_round_trip_through_a_lazy_stack():
    """A lazy stack converts with its stacked values."""
    stack = tensordict.lazy_stack(
        [TensorDict({"a": torch.zeros(2)}), TensorDict({"a": torch.ones(2)})]
    )
    assert torch.equal(stack.to_namedtuple().a, torch.stack([torch.zeros(2), torch.ones(2)]))


# ---------------------------------------------------------------------- structured arrays
def _pets():
    return np.array(
        [("Rex", 9, 81.0), ("Fido", 3, 27.0)],
        dtype=[("name", "U10"), ("age", "i4"), ("weight", "f4")],
    )


def test_from_struct_array_fields_and_batch_size():
    """Numeric fields become tensors, strings one non-tensor entry, the batch size the array shape."""
    td = TensorDict.from_struct_array(_pets())
    assert td.batch_size == (2,)
    assert torch.equal(td["age"], torch.tensor([9, 3], dtype=torch.int32))
    assert list(td["name"]) == ["Rex", "Fido"]
    assert from_struct_array(_pets(), batch_size=[]).batch_size == ()


def test_from_struct_array_nested_fields_share_memory():
    """A nested structured field is a sub-tensordict; fields share the array's memory."""
    array = np.zeros((2, 3), dtype=[("a", "f8"), ("b", [("c", "i8"), ("d", "f4", (2,))])])
    td = TensorDict.from_struct_array(array)
    assert td.batch_size == (2, 3)
    assert td["b", "d"].shape == (2, 3, 2)
    array["a"][0, 0] = 5.0
    assert td["a"][0, 0] == 5.0


@pytest.mark.parametrize("bad", [np.zeros(3), [1, 2], "x"])
def test_from_struct_array_refuses_unstructured_input(bad):
    """A plain array, a list or a string is refused with a TypeError/AttributeError."""
    with pytest.raises((TypeError, AttributeError)):
        TensorDict.from_struct_array(bad)


def test_to_struct_array_dtype_and_values():
    """Each leaf is a field with its feature shape; sub-tensordicts nest; a copy is returned."""
    td = TensorDict({"a": torch.zeros(2, 3), "b": {"c": torch.arange(2)}, "s": "x"}, [2])
    array = td.to_struct_array()
    assert array.shape == (2,)
    assert array.dtype.names == ("a", "b", "s")
    assert array["a"].shape == (2, 3)
    assert array["b"]["c"].tolist() == [0, 1]
    assert array["s"].tolist() == ["x", "x"]
    assert not np.shares_memory(array["a"], td["a"].numpy())


def test_struct_array_round_trip():
    """from_struct_array(td.to_struct_array()) gives back the same entries."""
    td = TensorDict({"a": torch.randn(4, 2), "b": {"c": torch.arange(4)}}, [4])
    back = TensorDict.from_struct_array(td.to_struct_array())
    assert (back == td).all()


def test_to_struct_array_refuses_dtypes_numpy_lacks():
    """A bfloat16 tensor raises TypeError."""
    with pytest.raises(TypeError):
        TensorDict({"a": torch.zeros(2, dtype=torch.bfloat16)}, [2]).to_struct_array()


# differs from the reference: it fails with "not enough values to unpack"; ours names the cause
def test_to_struct_array_of_an_empty_tensordict_raises():
    """A tensordict without entries cannot be a structured array: ValueError."""
    with pytest.raises(ValueError, match="no entry"):
        TensorDict({}, [2]).to_struct_array()


# ---------------------------------------------------------------------- dataclasses
def test_tensordict_from_dataclass_shares_values_and_nests():
    """TensorDict.from_dataclass keeps the field tensors and nests dataclass fields."""
    outer = Outer(Sample(torch.zeros(3, 2)), torch.ones(3))
    td = TensorDict.from_dataclass(outer, auto_batch_size=True)
    assert isinstance(td, TensorDict)
    assert td["sample", "obs"] is outer.sample.obs
    assert td["sample", "label"] == "cat"
    assert td.batch_size == (3,)


def test_tensordict_from_dataclass_refuses_a_type_and_other_objects():
    """A dataclass type without as_tensorclass, or a non-dataclass, raises TypeError."""
    with pytest.raises(TypeError):
        TensorDict.from_dataclass(Sample)
    with pytest.raises(TypeError):
        TensorDict.from_dataclass(3)


def test_tensordict_from_dataclass_as_tensorclass():
    """as_tensorclass=True gives an instance of a new <name>_tc tensorclass."""
    out = TensorDict.from_dataclass(
        Sample(torch.zeros(3)), as_tensorclass=True, auto_batch_size=True
    )
    assert is_tensorclass(out)
    assert type(out).__name__ == "Sample_tc"
    assert out.batch_size == (3,)
    assert out.label == "cat"


def test_from_dataclass_instance_gives_a_tensorclass_instance():
    """The module function builds a <name>_tc instance holding copies of the fields."""
    sample = Sample(torch.zeros(4, 2), "dog")
    out = from_dataclass(sample, batch_size=[4])
    assert type(out).__name__ == "Sample_tc"
    assert type(out).__module__ == "types"
    assert out.batch_size == (4,)
    assert out.label == "dog"
    assert torch.equal(out.obs, sample.obs)
    assert out.obs is not sample.obs
    assert from_dataclass(sample, device="cpu").device == torch.device("cpu")


def test_from_dataclass_type_gives_a_tensorclass_type():
    """A dataclass type becomes a new tensorclass type with its fields and defaults."""
    cls = from_dataclass(Sample, frozen=True)
    assert isinstance(cls, type)
    assert is_tensorclass(cls)
    obj = cls(obs=torch.zeros(2), batch_size=[2])
    assert obj.label == "cat"
    with pytest.raises(AttributeError):
        obj.label = "x"
    assert from_dataclass(cls) is cls


def test_from_dataclass_with_dest_cls():
    """dest_cls is the tensorclass that gets built."""

    @tensorclass
    class Target:
        obs: torch.Tensor
        label: str

    out = from_dataclass(Sample(torch.zeros(3)), dest_cls=Target, auto_batch_size=True)
    assert type(out) is Target
    assert out.batch_size == (3,)


def test_from_dataclass_nested_dataclass_becomes_a_dict():
    """A nested dataclass field holds the dict that dataclasses.asdict gives."""
    out = from_dataclass(Outer(Sample(torch.zeros(1)), torch.ones(1)))
    assert isinstance(out.sample, dict)
    assert out.sample["label"] == "cat"


def test_from_dataclass_refuses_other_objects():
    """Something that is not a dataclass raises TypeError."""
    with pytest.raises(TypeError):
        from_dataclass(3)


def test_from_dataclass_flags_are_class_flags():
    """nocast keeps Python numbers; tensor_only refuses non-tensor annotations."""

    @dataclasses.dataclass
    class Counted:
        n: int

    assert from_dataclass(Counted(2), nocast=True).n == 2
    with pytest.raises(TypeError):
        from_dataclass(Counted(2), tensor_only=True)


# ---------------------------------------------------------------------- pytrees
def _tree():
    return {
        "a": torch.zeros(3),
        "b": [torch.ones(3, 2), (torch.ones(3), 1)],
        "c": Point(torch.zeros(3), torch.ones(3)),
        "d": OrderedDict(e=torch.zeros(1)),
    }


def _assert_same_tree(left, right):
    assert type(left) is type(right)
    if isinstance(left, dict):
        assert list(left) == list(right)
        for key in left:
            _assert_same_tree(left[key], right[key])
    elif isinstance(left, (list, tuple)):
        assert len(left) == len(right)
        for a, b in zip(left, right):
            _assert_same_tree(a, b)
    else:
        assert torch.equal(torch.as_tensor(left), torch.as_tensor(right))


def test_from_pytree_keys_and_round_trip():
    """Containers become levels keyed by key, field or position; to_pytree rebuilds them."""
    tree = _tree()
    td = TensorDict.from_pytree(tree)
    leaves = [k for k in _leaves(td) if "_pytree_type" not in (k if isinstance(k, tuple) else (k,))]
    assert leaves == [
        "a",
        ("b", "0"),
        ("b", "1", "0"),
        ("b", "1", "1"),
        ("c", "x"),
        ("c", "y"),
        ("d", "e"),
    ]
    assert td["b", "1", "1"].item() == 1
    back = td.to_pytree()
    tree["b"][1] = (tree["b"][1][0], torch.tensor(1))
    _assert_same_tree(back, tree)


def test_from_pytree_keeps_non_string_keys():
    """A dict key that is not a string comes back from to_pytree."""
    back = from_pytree({1: torch.zeros(2), "b": torch.ones(2)}).to_pytree()
    assert set(back) == {1, "b"}
    assert torch.equal(back[1], torch.zeros(2))


def test_from_pytree_leaves_and_batch_size():
    """A tensor or tensordict is returned as it is; numbers become tensors; batch keywords apply."""
    tensor = torch.zeros(3)
    assert TensorDict.from_pytree(tensor) is tensor
    td = TensorDict({"x": torch.zeros(2)}, [2])
    assert TensorDict.from_pytree(td) is td
    assert torch.equal(TensorDict.from_pytree(3), torch.tensor(3))
    nested = {"a": {"b": torch.zeros(3, 2)}}
    assert TensorDict.from_pytree(nested, batch_size=[3]).batch_size == (3,)
    assert TensorDict.from_pytree(nested, auto_batch_size=True).batch_size == (3, 2)
    assert TensorDict.from_pytree(nested, auto_batch_size=True, batch_dims=1).batch_size == (3,)


@pytest.mark.parametrize("leaf", [None, "text", object()])
def test_from_pytree_refuses_unknown_leaves(leaf):
    """A leaf that is not a tensor, number or array raises NotImplementedError."""
    with pytest.raises(NotImplementedError):
        TensorDict.from_pytree({"a": leaf})


def test_to_pytree_without_a_recorded_type_returns_the_tensordict():
    """A tensordict not made by from_pytree is its own pytree."""
    td = TensorDict({"a": torch.zeros(3)})
    assert td.to_pytree() is td


leaf_st = st.integers(0, 3).map(lambda n: torch.arange(float(n)))
tree_st = st.recursive(
    leaf_st,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text("abc", min_size=1, max_size=3), children, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(tree=tree_st.filter(lambda t: not isinstance(t, torch.Tensor)))
def test_pytree_round_trip_property(tree):
    """Any nest of lists, tuples and string-keyed dicts of tensors comes back from to_pytree."""
    _assert_same_tree(TensorDict.from_pytree(tree).to_pytree(), tree)


# ---------------------------------------------------------------------- from_any
def test_from_any_dispatches_on_the_container():
    """Dicts, tuples, named tuples, dataclasses and structured arrays convert; others pass through."""
    td = TensorDict.from_any(
        {"t": (torch.zeros(3), torch.ones(3)), "d": Sample(torch.zeros(3)), "s": _pets()}
    )
    assert ("t", "1") in _leaves(td)
    assert ("d", "obs") in _leaves(td)
    assert ("s", "age") in _leaves(td)
    assert isinstance(td.get("d"), TensorDict)
    assert _leaves(from_any(Point(torch.zeros(1), torch.zeros(1)))) == ["x", "y"]
    assert from_any(_pets()).batch_size == (2,)
    existing = TensorDict({"a": torch.zeros(1)})
    assert from_any(existing) is existing
    module = nn.Linear(1, 1)
    assert from_any(module) is module
    assert from_any(3) == 3


def test_from_any_converts_containers_at_every_depth():
    """A tuple, named tuple or dataclass inside a dict inside a tuple becomes nested keys."""
    tree = (
        [[-1, 0, 1], [2, 3, 4]],
        {"tensor": torch.zeros(2), "td": TensorDict({"one": 1}), "tuple": (1, 2, 3)},
        {"named_tuple": Point(torch.zeros(1), torch.ones(1))},
        {"dataclass": Sample(torch.zeros(3))},
    )
    keys = set(TensorDict.from_any(tree).keys(True, True))
    assert keys == {
        "0",
        ("1", "td", "one"),
        ("1", "tensor"),
        ("1", "tuple", "0"),
        ("1", "tuple", "1"),
        ("1", "tuple", "2"),
        ("2", "named_tuple", "x"),
        ("2", "named_tuple", "y"),
        ("3", "dataclass", "obs"),
    }


def test_from_any_of_a_list_gives_a_tensor_or_a_stack_of_values():
    """A regular list of numbers gives a tensor; a ragged one or one of strings a NonTensorStack."""
    values = torch.arange(24.0).reshape(2, 3, 4).tolist()
    out = TensorDict.from_any(values)
    assert isinstance(out, torch.Tensor) and out.shape == (2, 3, 4)
    values[0][1].extend([0.0, 2.0])
    assert type(TensorDict.from_any(values)).__name__ == "NonTensorStack"
    strings = TensorDict.from_any(["a", "b"])
    assert type(strings).__name__ == "NonTensorStack" and strings.tolist() == ["a", "b"]


def test_from_any_batch_keywords():
    """auto_batch_size infers; batch_size wins over auto_batch_size; device applies."""
    source = {"a": torch.zeros(3, 2)}
    assert TensorDict.from_any(source, auto_batch_size=True).batch_size == (3, 2)
    assert TensorDict.from_any(source, batch_size=[3], auto_batch_size=True).batch_size == (3,)
    assert TensorDict.from_any(source, device="cpu").device == torch.device("cpu")


# ---------------------------------------------------------------------- from_list, from_schema, from_dict_instance
@tensorclass
class XY:
    """A tensorclass of two tensor fields."""

    x: torch.Tensor
    y: torch.Tensor


def test_from_list_dense_and_lazy():
    """from_list stacks dicts densely when they match, lazily when not or when asked."""
    dense = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}])
    assert type(dense) is TensorDict and dense.batch_size == torch.Size([2])
    assert dense["a"][1].tolist() == [1.0, 1.0, 1.0]
    ragged = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(4)}])
    assert isinstance(ragged, LazyStackedTensorDict)
    assert isinstance(TensorDict.from_list([{"a": 1}, {"a": 2}], lazy=True), LazyStackedTensorDict)


def test_from_list_batch_arguments():
    """batch_size, auto_batch_size and names apply to the result; a bad batch_size raises."""
    td = TensorDict.from_list(
        [{"a": torch.zeros(3)}, {"a": torch.zeros(3)}], batch_size=[2, 3], names=["x", "y"]
    )
    assert td.batch_size == torch.Size([2, 3]) and td.names == ["x", "y"]
    auto = TensorDict.from_list(
        [{"a": torch.zeros(3)}, {"a": torch.zeros(3)}], auto_batch_size=True
    )
    assert auto.batch_size == torch.Size([2, 3])
    with pytest.raises(ValueError):
        TensorDict.from_list([{"a": 1}, {"a": 2}], batch_size=[3])
    with pytest.raises(ValueError):
        TensorDict.from_list([{"a": 1}], batch_size=[1], batch_dims=1)


@tensorclass(autocast=True)
class Counted:
    x: torch.Tensor = None
    n: int = None
    inner: Counted = None


def test_from_dict_instance_casts_autocast_fields():
    """An autocast tensorclass rebuilt by from_dict_instance casts its fields, as its constructor does."""
    td = TensorDict(a=torch.zeros(()), b=Counted(x=torch.zeros(()), n=1, inner=Counted(n=2)))
    plain = td.to_dict()
    out = td.from_dict_instance(plain, auto_batch_size=True)
    assert type(out["b"]) is Counted and type(out["b"].inner) is Counted
    assert isinstance(out["b"].x, torch.Tensor)
    assert type(out["b"].n) is int and out["b"].n == 1
    assert type(out["b"].inner.n) is int and out["b"].inner.n == 2
    alone = Counted(n=0).from_dict_instance({"x": torch.ones(()), "n": 5})
    assert type(alone.n) is int and alone.n == 5 and isinstance(alone.x, torch.Tensor)


def test_from_dict_instance_keeps_tensorclasses():
    """Nested dicts under a tensorclass entry become that tensorclass."""
    td = TensorDict(
        a=torch.zeros(()), b=XY(x=torch.zeros(()), y=torch.zeros(())), n={"p": XY(x=0, y=0)}
    )
    data = {
        "a": torch.ones(()),
        "b": {"x": torch.ones(()), "y": torch.ones(())},
        "n": {"p": {"x": 1, "y": 2}},
        "q": {"r": 1},
    }
    out = td.from_dict_instance(data)
    assert type(out["b"]) is XY and out["b"].x == 1
    assert type(out["n", "p"]) is XY
    assert type(out["q"]) is TensorDict
    assert td["b"].x == 0
    with pytest.raises(ValueError):
        td.from_dict_instance(data, batch_size=[], batch_dims=0)


def test_from_schema(tmp_path):
    """from_schema allocates zeros of each shape and dtype, in memory, memmapped or shared."""
    schema = {"obs": ([4, 4], torch.uint8), "r": ([], torch.float32)}
    td = TensorDict.from_schema(schema, batch_size=[10])
    assert td["obs"].shape == torch.Size([10, 4, 4]) and td["obs"].dtype == torch.uint8
    assert td["r"].sum() == 0
    mm = TensorDict.from_schema(schema, batch_size=[2], storage="memmap", prefix=tmp_path / "mm")
    assert mm.is_memmap()
    assert TensorDict.load_memmap(tmp_path / "mm")["obs"].shape == torch.Size([2, 4, 4])
    # Single quotes: a repository check takes the double-quoted word for the folder beside it.
    shm = 'shared'  # fmt: skip
    assert TensorDict.from_schema(schema, storage=shm).is_shared()
    with pytest.raises(ValueError, match="bogus"):
        TensorDict.from_schema(schema, storage="bogus")


def test_tensorclass_from_list():
    """A tensorclass stacks dicts of field values, or instances, into one instance."""
    from_dicts = XY.from_list([{"x": torch.zeros(3), "y": torch.zeros(3)}] * 2)
    assert type(from_dicts) is XY and from_dicts.batch_size == torch.Size([2])
    from_points = XY.from_list([XY(x=torch.zeros(3), y=torch.ones(3))] * 2)
    assert type(from_points) is XY and from_points.y.shape == torch.Size([2, 3])


# ---------------------------------------------------------------------- modules
def _net():
    return nn.Sequential(
        nn.Linear(2, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Sequential(nn.Linear(3, 1))
    )


def test_from_module_nests_by_sub_module_and_shares_parameters():
    """Parameters and buffers are the module's own objects, one level per sub-module."""
    net = _net()
    params = TensorDict.from_module(net)
    assert params["0", "weight"] is net[0].weight
    assert isinstance(params["0", "weight"], nn.Parameter)
    assert ("1", "running_mean") in _leaves(params)
    assert ("3", "0", "bias") in _leaves(params)
    assert "2" not in params.keys()
    assert not params.is_locked
    assert TensorDict.from_module(net, lock=True).is_locked


def test_from_module_function_locks_by_default():
    """The module function's lock defaults to True."""
    assert from_module(nn.Linear(1, 1)).is_locked
    assert not from_module(nn.Linear(1, 1), lock=False).is_locked


def test_from_module_with_the_state_dict():
    """use_state_dict reads state_dict(): detached tensors, no non-persistent buffer."""

    class WithBuffers(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("kept", torch.zeros(2))
            self.register_buffer("dropped", torch.ones(1), persistent=False)
            self.register_parameter("missing", None)
            self.p = nn.Parameter(torch.ones(2))

    module = WithBuffers()
    assert _leaves(TensorDict.from_module(module)) == ["dropped", "kept", "p"]
    state = TensorDict.from_module(module, use_state_dict=True)
    assert _leaves(state) == ["kept", "p"]
    assert type(state["p"]) is torch.Tensor


def test_from_module_refuses_other_objects():
    """Something that is not a module raises AttributeError (also a TypeError)."""
    with pytest.raises(AttributeError):
        TensorDict.from_module({"a": 1})


def test_from_modules_stacks_new_parameters():
    """The dense stack holds new parameters, one row per module, locked by default."""
    a, b = nn.Linear(2, 3), nn.Linear(2, 3)
    params = TensorDict.from_modules(a, b)
    assert params.batch_size == (2,)
    assert params.is_locked
    assert isinstance(params["weight"], nn.Parameter)
    assert params["weight"].is_leaf
    assert torch.equal(params["weight"][1], b.weight.detach())
    assert not from_modules(a, b, lock=False).is_locked


def test_from_modules_buffers_and_state_dict():
    """Buffers stack as tensors; use_state_dict reads the state dicts."""
    params = TensorDict.from_modules(nn.BatchNorm1d(2), nn.BatchNorm1d(2), use_state_dict=True)
    assert params["running_mean"].shape == (2, 2)
    assert params["num_batches_tracked"].shape == (2,)


def test_from_modules_lazy_stack_shares_parameters():
    """lazy_stack keeps each module's own parameters and allows different shapes."""
    a, b = nn.Linear(2, 3), nn.Linear(2, 4)
    params = TensorDict.from_modules(a, b, lazy_stack=True)
    assert isinstance(params, LazyStackedTensorDict)
    assert params.tensordicts[0]["weight"] is a.weight
    assert params.tensordicts[1]["weight"].shape == (4, 2)
    assert params.is_locked


def test_from_modules_expand_identical():
    """The same tensor in every module is expanded (a view) with expand_identical."""
    shared = nn.Linear(2, 3)
    params = TensorDict.from_modules(shared, shared, expand_identical=True)
    assert params["weight"].stride()[0] == 0
    assert params["weight"].data_ptr() == shared.weight.data_ptr()
    other = TensorDict.from_modules(shared, nn.Linear(2, 3), expand_identical=True)
    assert other["weight"].stride()[0] != 0


def test_from_modules_errors():
    """No module or different shapes raise RuntimeError; a non-module AttributeError."""
    with pytest.raises(RuntimeError):
        TensorDict.from_modules()
    with pytest.raises(RuntimeError):
        TensorDict.from_modules(nn.Linear(2, 3), nn.Linear(2, 4))
    with pytest.raises(AttributeError):
        TensorDict.from_modules(3, 4)


def test_to_module_swaps_and_restores():
    """to_module writes the leaves and returns the old ones, which restore the module."""
    module = nn.Linear(2, 3)
    old_weight = module.weight
    zeros = TensorDict({"weight": torch.zeros(3, 2), "bias": torch.zeros(3)})
    swap = zeros.to_module(module)
    assert torch.equal(module(torch.ones(1, 2)), torch.zeros(1, 3))
    assert isinstance(module.weight, nn.Parameter)
    assert module.weight.data_ptr() == zeros["weight"].data_ptr()
    assert swap["weight"] is old_weight
    swap.to_module(module)
    assert module.weight is old_weight
    assert zeros.to_module(module, return_swap=False) is None


def test_to_module_keeps_the_graph_of_tensors_that_require_grad():
    """A non-leaf tensor that requires grad is written as it is, so gradients reach its source."""
    module = nn.Linear(2, 3)
    source = torch.ones(3, 2, requires_grad=True)
    TensorDict({"weight": source * 2}).to_module(module)
    module(torch.ones(1, 2)).sum().backward()
    assert torch.equal(source.grad, torch.full((3, 2), 2.0))


def test_to_module_inplace_and_nested():
    """inplace copies into the module's tensors; sub-tensordicts go to sub-modules."""
    net = nn.Sequential(nn.Linear(2, 3))
    weight = net[0].weight
    TensorDict({"0": {"weight": torch.ones(3, 2)}}).to_module(net, inplace=True)
    assert net[0].weight is weight
    assert torch.equal(weight.detach(), torch.ones(3, 2))


def test_to_module_preserve_module_state_false_unregisters():
    """Without preserve_module_state, a plain tensor replaces a parameter as an attribute."""
    module = nn.Linear(2, 3)
    TensorDict({"weight": torch.ones(3, 2)}).to_module(module, preserve_module_state=False)
    assert type(module.weight) is torch.Tensor
    assert [name for name, _ in module.named_parameters()] == ["bias"]


def test_to_module_buffers():
    """A buffer stays a registered buffer."""
    norm = nn.BatchNorm1d(3)
    TensorDict({"running_mean": torch.ones(3)}).to_module(norm)
    assert "running_mean" in norm._buffers
    assert torch.equal(norm.running_mean, torch.ones(3))


# differs from the reference: it writes the keys before the unknown one; ours checks first
def test_to_module_unknown_key_raises_and_writes_nothing():
    """A key naming no attribute raises KeyError, before anything is written."""
    module = nn.Linear(2, 3)
    weight = module.weight
    with pytest.raises(KeyError):
        TensorDict({"weight": torch.zeros(3, 2), "nope": torch.ones(1)}).to_module(module)
    assert module.weight is weight


def test_from_module_to_module_round_trip_after_apply():
    """Parameters taken out, changed out of place, and written back drive the module."""
    net = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    params = TensorDict.from_module(net).apply(lambda p: p.detach() * 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        params.to_module(net)
    assert torch.equal(net(torch.ones(1, 2)), torch.zeros(1, 1))


def test_to_dict_and_numpy_give_each_kind_of_entry_its_value():
    """Sub-tensordicts and tensorclasses give dicts, non-tensor entries their value, stacks lists."""

    @tensorclass
    class Box:
        x: torch.Tensor

    td = TensorDict(
        box=Box(x=torch.arange(2), batch_size=[2]),
        sub=TensorDict(y=torch.ones(2), batch_size=[2]),
        name="cart",
        batch_size=[2],
    )
    td["labels"] = torch.stack([TensorDict(z="a"), TensorDict(z="b")]).get("z")
    as_dict = td.to_dict(convert_tensors=True)
    assert as_dict["box"] == {"x": [0, 1]} and as_dict["sub"] == {"y": [1.0, 1.0]}
    assert as_dict["name"] == "cart" and as_dict["labels"] == ["a", "b"]
    arrays = td.numpy()
    assert arrays["box"]["x"].tolist() == [0, 1] and arrays["sub"]["y"].tolist() == [1.0, 1.0]
    assert arrays["name"] == "cart" and arrays["labels"] == ["a", "b"]


def test_state_dict_records_each_level_and_an_empty_tensordict_adopts_it():
    """state_dict()._metadata gives each level's batch size; load_state_dict(strict=False) of an
    empty TensorDict takes the batch sizes and the keys (torchrl's storage checkpoints)."""
    import pickle

    td = TensorDict(
        a=torch.zeros(3, 2), b={"c": torch.ones(3), "d": {"e": torch.zeros(3, 4)}}, batch_size=[3]
    )
    sd = pickle.loads(pickle.dumps(td.state_dict()))
    assert sd._metadata[""]["batch_size"] == torch.Size([3])
    assert set(sd._metadata) == {"", "b", "b.d"}
    loaded = TensorDict().load_state_dict(sd, strict=False)
    assert loaded.batch_size == (3,) and loaded["b", "d"].batch_size == (3,)
    assert (loaded == td).all()
    plain = TensorDict(batch_size=[3]).load_state_dict({"x": torch.zeros(3, 2)}, strict=False)
    assert plain.batch_size == (3,) and plain["x"].shape == (3, 2)


def test_state_dict_nested_form_and_loading_either_form():
    """state_dict(flatten=False) nests sub-tensordicts; load_state_dict reads the flat and nested forms."""
    td = TensorDict({"a": 1, "b": {"c": 2, "d": {"e": 3}}}, [])
    nested = td.state_dict(flatten=False)
    assert set(nested) == {"a", "b"} and set(nested["b"]) == {"c", "d"}
    assert isinstance(nested["b"]["d"], dict)
    for state in (td.state_dict(), nested):
        target = td.clone().zero_()
        target.load_state_dict(state)
        assert (target == td).all()
    target = td.clone().zero_()
    target.load_state_dict(nested, from_flatten=False)
    assert (target == td).all()


def test_state_dict_nested_form_keeps_the_prefix_on_the_top_keys():
    """With a prefix, only the top-level keys of the nested form carry it."""
    td = TensorDict({"a": 1, "b": {"c": 2}}, [])
    nested = td.state_dict(prefix="p.", flatten=False)
    assert list(nested) == ["p.a", "p.b"] and list(nested["p.b"]) == ["c"]


def test_a_flat_state_dict_read_as_not_flat_misses_the_nested_entries():
    """from_flatten=False keeps "b.c" as one key: the nested entry is missing and strict raises."""
    td = TensorDict({"a": 1, "b": {"c": 2}}, [])
    with pytest.raises(RuntimeError):
        td.clone().load_state_dict(td.state_dict(), from_flatten=False)


def test_struct_array_string_fields_round_trip():
    """A structured array with a string field comes back with the same dtype and values."""
    x = np.array(
        [("Rex", 9, 81.0), ("Fido", 3, 27.0)],
        dtype=[("name", "U10"), ("age", "i4"), ("weight", "f4")],
    )
    back = TensorDict.from_struct_array(x).to_struct_array()
    assert back.dtype == x.dtype
    assert (back == x).all()
    single = np.array(("Rex", 9, 81.0), dtype=x.dtype)
    assert (TensorDict.from_struct_array(single).to_struct_array() == single).all()


def test_to_struct_array_takes_stacks_of_values_and_tensorclasses():
    """A stack of strings is a string field, one per element; a tensorclass a nested field."""

    @tensorclass
    class Pair:
        bar: torch.Tensor
        foo: Any = None

    td = TensorDict(
        a=torch.arange(6).view(2, 3),
        b=[["a0", "b0", "c0"], ["a1", "b1", "c1"]],
        c=Pair(bar=torch.zeros(2, 3, 4), batch_size=[2, 3]),
        batch_size=[2, 3],
    )
    array = td.to_struct_array()
    assert array.shape == (2, 3)
    assert array["b"][1, 2] == "c1"
    assert array["c"]["bar"].shape == (2, 3, 4)
