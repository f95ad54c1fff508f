"""TensorCollection, the TensorClass subclassing form and the class flags of a tensorclass.

Differential: every test but the marked ones also passes with the reference
(run from inside ``tests/`` so that ``tensordict`` is the reference).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import warnings
from collections import UserDict
from typing import Any, Union

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tensordict import NonTensorData, TensorDict, is_tensor_collection, tensorclass
from tensordict.base import TensorCollection
from tensordict.tensorclass import TensorClass, from_dataclass, is_tensorclass

from conftest import ours_only


@tensorclass
class Decorated:
    x: torch.Tensor


class Sub(TensorClass):
    x: torch.Tensor
    label: str = "a"


class Pair(TensorClass):
    a: torch.Tensor
    b: torch.Tensor = None


class Casting(TensorClass, autocast=True):
    i: int = None
    f: float = None
    b: bool = None
    s: str = None
    t: torch.Tensor = None
    p: pathlib.Path = None
    anything: Any = None
    opt: int | None = None
    td: TensorDict = None
    child: Sub = None


class Plain(TensorClass):
    i: int = None
    f: float = None
    opt: float | None = None
    mixed: Union[int, str] = None
    anything: Any = None


class Keeping(TensorClass["nocast"]):
    i: int = None
    anything: Any = None


class Frozen(TensorClass["frozen"]):
    x: torch.Tensor = None


# ====================================================================== TensorCollection
def test_tensor_collection_is_the_base_of_tensordicts_and_tensorclass_subclasses():
    """TensorDict and TensorClass subclasses are TensorCollections; tensors are not."""
    assert isinstance(TensorDict(), TensorCollection)
    assert isinstance(Sub(x=torch.zeros(2)), TensorCollection)
    assert issubclass(Sub, TensorCollection) and issubclass(TensorClass, TensorCollection)
    assert not isinstance(torch.zeros(2), TensorCollection)


def test_decorated_classes_do_not_inherit_tensor_collection():
    """A @tensorclass class is no TensorCollection, but is_tensor_collection recognises it."""
    obj = Decorated(x=torch.zeros(2))
    assert not isinstance(obj, TensorCollection)
    assert not isinstance(obj, TensorClass)
    assert is_tensor_collection(obj) and is_tensorclass(obj)


def test_tensor_collection_and_tensor_class_cannot_be_instantiated():
    """TensorCollection() and TensorClass() raise NotImplementedError."""
    with pytest.raises(NotImplementedError, match="abstract base class and cannot be instantiated"):
        TensorCollection()
    with pytest.raises(NotImplementedError, match="abstract base class and cannot be instantiated"):
        TensorClass()


# ====================================================================== TensorClass
def test_tensor_class_subclass_behaves_like_a_tensorclass():
    """A subclass has fields, a batch size, indexing, stacking and non-tensor fields."""
    obj = Sub(x=torch.arange(4), batch_size=[4])
    assert is_tensorclass(Sub) and dataclasses.is_dataclass(Sub)
    assert torch.equal(obj[1:3].x, torch.tensor([1, 2]))
    assert obj[0].label == "a"
    stacked = torch.stack([obj, obj])
    assert type(stacked) is Sub and stacked.batch_size == torch.Size([2, 4])
    assert Sub(torch.zeros(1), "b").label == "b"


def test_tensor_class_is_a_tensorclass_but_not_a_dataclass():
    """TensorClass itself counts as a tensorclass but only its subclasses become dataclasses."""
    assert is_tensorclass(TensorClass) and is_tensor_collection(TensorClass)
    assert not dataclasses.is_dataclass(TensorClass)


def test_bracket_flags_make_a_named_subclass():
    """TensorClass["nocast", "frozen"] is a subclass of TensorClass carrying both flags."""
    base = TensorClass["nocast", "frozen"]
    assert base.__name__ == "TensorClass_nocast_frozen" and issubclass(base, TensorClass)

    class Both(base):
        n: int = None

    obj = Both(n=3)
    assert obj.n == 3 and type(obj._tensordict.get("n")) is not torch.Tensor
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'n'"):
        obj.n = 4


def test_unknown_bracket_flag_raises_type_error():
    """TensorClass["bogus"] raises a TypeError naming the item."""
    with pytest.raises(TypeError, match="bogus"):
        TensorClass["bogus"]


def test_unknown_class_keyword_raises_type_error():
    """class X(TensorClass, bogus=True) raises a TypeError about the keyword."""
    with pytest.raises(TypeError, match="keyword"):

        class Bad(TensorClass, bogus=True):
            x: torch.Tensor


@pytest.mark.parametrize(
    "flags", [("autocast", "nocast"), ("autocast", "tensor_only"), ("nocast", "tensor_only")]
)
def test_exclusive_flags_raise_type_error(flags):
    """Two of autocast, nocast and tensor_only together raise a TypeError, in each form."""
    with pytest.raises(TypeError, match="exclusive"):
        TensorClass[flags]
    with pytest.raises(TypeError, match="exclusive"):

        class Bad(TensorClass, **dict.fromkeys(flags, True)):
            x: torch.Tensor

    with pytest.raises(TypeError, match="exclusive"):
        tensorclass(**dict.fromkeys(flags, True))(type("Bad", (), {"__annotations__": {}}))


def test_flags_are_inherited_and_extended():
    """A subclass keeps its base's flags and may add more with a class keyword."""

    class Base(TensorClass["nocast"]):
        x: Any = None

    class Derived(Base, shadow=True):
        sum: Any = None

    obj = Derived(x=1, sum=2)
    assert obj.x == 1 and obj.sum == 2
    assert not isinstance(obj._tensordict.get("x"), torch.Tensor)


# ====================================================================== autocast
def test_autocast_casts_to_python_scalar_annotations():
    """autocast turns tensors into int, float, bool and values into str, as annotated."""
    obj = Casting(i=torch.ones(()), f=torch.tensor(2), b=torch.tensor(0), s=3)
    assert obj.i == 1 and type(obj.i) is int
    assert obj.f == 2.0 and type(obj.f) is float
    assert obj.b is False
    assert obj.s == "3"
    assert Casting(i=1.7).i == 1


def test_autocast_casts_to_tensor_and_other_classes():
    """A torch.Tensor field gets a tensor, a Path field a Path; a tensor keeps its dtype."""
    assert torch.equal(Casting(t=[1, 2]).t, torch.tensor([1, 2]))
    assert Casting(t=torch.zeros(1, dtype=torch.int32)).t.dtype == torch.int32
    assert Casting(t=np.ones(2)).t.dtype == torch.float64
    assert Casting(p="dir/file").p == pathlib.Path("dir/file")


def test_autocast_builds_collections_from_dicts_and_tensordicts():
    """A dict becomes the annotated tensordict or tensorclass; a fitting tensordict is wrapped."""
    td = Casting(td={"a": {"b": torch.zeros(2)}}).td
    assert isinstance(td, TensorDict) and td["a", "b"].shape == torch.Size([2])
    sub = Casting(child={"x": torch.zeros(2)}).child
    assert type(sub) is Sub and sub.x.shape == torch.Size([2])
    assert type(Casting(child=TensorDict(x=torch.zeros(1))).child) is Sub
    extra = Casting(child=TensorDict(x=torch.zeros(1), y=torch.zeros(1))).child
    assert type(extra) is TensorDict


def test_autocast_leaves_non_class_annotations_alone():
    """Any and Optional[...] fields keep numbers as tensors and other values as they are."""
    assert torch.equal(Casting(anything=1).anything, torch.tensor(1))
    assert Casting(anything="x").anything == "x"
    assert torch.equal(Casting(opt=3).opt, torch.tensor(3))
    assert Casting(opt="abc").opt == "abc"
    assert Casting(anything=[1, 2]).anything == [1, 2]


def test_autocast_applies_to_attribute_assignment_and_set():
    """Assigning a field or calling set() casts the value too."""
    obj = Casting(i=1)
    obj.i = torch.tensor(5)
    assert obj.i == 5 and type(obj.i) is int
    obj.set("i", 6.9)
    assert obj.i == 6


def test_autocast_keeps_python_values_with_a_batch_size():
    """A cast Python value fits any batch size."""
    assert Casting(i=1, batch_size=[3]).i == 1


def test_autocast_failure_raises_and_keeps_the_instance():
    """A value that cannot be cast raises (ValueError / TypeError) and changes nothing."""
    with pytest.raises(ValueError, match="invalid literal"):
        Casting(i="x")
    with pytest.raises(TypeError, match="(?i)cast the value"):
        Casting(t="abc")
    obj = Casting(i=2)
    with pytest.raises(ValueError, match="one element"):
        obj.i = torch.ones(3)
    assert obj.i == 2


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_autocast_int_round_trips_through_a_tensor(n):
    """Any int given as a 0-d tensor reads back as that int."""
    value = Casting(i=torch.tensor(n)).i
    assert value == n and type(value) is int


# ====================================================================== the default cast and nocast
def test_default_cast_makes_tensors_and_warns_for_scalar_annotations():
    """An int given to an int field becomes a 0-d tensor with a FutureWarning naming the field."""
    with pytest.warns(FutureWarning, match="field 'i' of Plain"):
        obj = Plain(i=1)
    assert torch.equal(obj.i, torch.tensor(1))
    with pytest.warns(FutureWarning, match="field 'f' of Plain"):
        Plain(f=1)
    with pytest.warns(FutureWarning, match="field 'opt' of Plain"):
        Plain(opt=2.0)


def test_default_cast_does_not_warn_for_other_annotations():
    """Any and unions with a non-number type cast numbers to tensors without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(Plain(anything=3.0).anything, torch.tensor(3.0))
        assert torch.equal(Plain(mixed=1).mixed, torch.tensor(1))
        assert torch.equal(
            Plain(anything=np.zeros(2)).anything, torch.zeros(2, dtype=torch.float64)
        )


def test_default_cast_keeps_scalars_of_scalar_fields_with_a_batch_size():
    """With a non-empty batch size an int field keeps the Python value, without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = Plain(i=1, batch_size=[3])
    assert obj.i == 1 and obj[0].i == 1


def test_default_cast_stores_other_values_as_non_tensors():
    """Strings, complex numbers and tuples are stored as they are."""
    assert Plain(anything="s").anything == "s"
    assert Plain(anything=1 + 2j).anything == 1 + 2j
    assert Plain(anything=(1, 2)).anything == (1, 2)


def test_nocast_keeps_numbers_and_arrays():
    """nocast keeps ints, floats, complex numbers and numpy arrays as Python objects."""
    obj = Keeping(i=1, anything=2.5)
    assert obj.i == 1 and type(obj.i) is int and obj.anything == 2.5
    array = Keeping(anything=np.zeros(2)).anything
    assert isinstance(array, np.ndarray)
    assert Keeping(anything=1 + 2j).anything == 1 + 2j
    assert torch.equal(Keeping(anything=torch.zeros(2)).anything, torch.zeros(2))


@given(st.floats(allow_nan=False))
def test_nocast_float_round_trips(value):
    """Any float read back from a nocast field is the same float."""
    assert Keeping(anything=value).anything == value


# ====================================================================== frozen
def test_frozen_refuses_every_attribute_assignment():
    """A frozen instance raises FrozenInstanceError for fields, options and new attributes."""
    obj = Frozen(x=torch.zeros(2))
    for name, value in [
        ("x", torch.ones(2)),
        ("x", None),
        ("foo", 1),
        ("_foo", 1),
        ("batch_size", []),
    ]:
        with pytest.raises(
            dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"
        ):
            setattr(obj, name, value)
    assert torch.equal(obj.x, torch.zeros(2))


def test_frozen_instance_is_locked_and_set_raises_runtime_error():
    """A frozen instance's tensordict is locked: set() raises RuntimeError; clones are unlocked."""
    obj = Frozen(x=torch.zeros(2))
    assert obj.is_locked
    with pytest.raises(RuntimeError, match="(?i)locked"):
        obj.set("x", torch.ones(2))
    assert not obj.clone().is_locked


def test_frozen_is_inherited():
    """A subclass of a frozen TensorClass is frozen."""

    class Child(Frozen):
        y: torch.Tensor = None

    obj = Child(x=torch.zeros(1), y=torch.ones(1))
    assert obj.is_locked
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'y'"):
        obj.y = torch.zeros(1)


def test_frozen_and_non_frozen_classes_cannot_inherit_from_each_other():
    """Mixing frozen and non-frozen classes in one hierarchy raises TypeError, as dataclasses do."""
    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):

        class FrozenChild(Sub, frozen=True):
            y: torch.Tensor = None

    @tensorclass(frozen=True)
    class FrozenParent:
        x: torch.Tensor = None

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @tensorclass
        class Thawed(FrozenParent):
            y: torch.Tensor = None


# ====================================================================== shadow
@pytest.mark.parametrize("name", ["sum", "keys", "batch_size", "apply"])
def test_field_named_like_a_member_needs_shadow(name):
    """A field named like a tensordict member raises AttributeError unless shadow is set."""
    with pytest.raises(AttributeError, match="shadow=True"):
        tensorclass(type("Bad", (), {"__annotations__": {name: torch.Tensor}}))


def test_shadow_fields_hide_the_members():
    """With shadow, the fields sum, names and device are read and written like other fields."""

    @tensorclass(shadow=True)
    class Shadowing:
        sum: torch.Tensor
        names: str = "a"
        device: str = "b"

    obj = Shadowing(sum=torch.ones(3))
    assert torch.equal(obj.sum, torch.ones(3))
    assert (obj.names, obj.device) == ("a", "b")
    obj.names = "c"
    assert obj.names == "c"

    class Bracket(TensorClass["shadow"]):
        sum: torch.Tensor

    assert torch.equal(Bracket(sum=torch.ones(3), batch_size=[3]).sum, torch.ones(3))


def test_shadow_batch_size_field_takes_the_keyword():
    """With shadow, a field named batch_size takes the batch_size keyword; the batch size is empty."""

    @tensorclass(shadow=True)
    class Shadowing:
        batch_size: torch.Tensor

    obj = Shadowing(batch_size=torch.zeros(3))
    assert torch.equal(obj.batch_size, torch.zeros(3))
    assert obj._tensordict.batch_size == torch.Size([])


# ====================================================================== tensor_only
def test_tensor_only_casts_numbers_and_checks_annotations():
    """tensor_only casts numbers to tensors and refuses non-tensor annotations at definition."""

    class Tensors(TensorClass["tensor_only"]):
        x: torch.Tensor
        y: TensorDict | None = None

    assert torch.equal(Tensors(x=1).x, torch.tensor(1))
    with pytest.raises(TypeError, match="tensor_only"):

        class Bad(TensorClass["tensor_only"]):
            x: int


def test_tensor_only_accepts_legacy_tensor_types_and_generic_collections():
    """tensor_only takes torch.IntTensor-style and TensorDict[...] annotations, refuses Any and str."""

    class Legacy(TensorClass["tensor_only"]):
        a: torch.IntTensor
        b: torch.LongTensor | None = None
        c: TensorDict[str, torch.Tensor] | None = None

    obj = Legacy(a=1, c=UserDict({"t": torch.ones(())}))
    assert torch.equal(obj.a, torch.tensor(1)) and obj.b is None
    assert isinstance(obj.c, TensorDict)
    for bad in ("Any", "torch.Tensor | str"):
        with pytest.raises(TypeError, match="tensor_only"):
            exec(f"class Bad(TensorClass['tensor_only']):\n    a: {bad}\n", globals())


@pytest.mark.parametrize("mapping", [dict, UserDict])
def test_tensor_only_collection_field_makes_a_tensordict_of_a_mapping(mapping):
    """A tensor_only field annotated TensorDict turns a (nested) mapping into a sub-tensordict."""

    class Holder(TensorClass["tensor_only"]):
        data: TensorDict

    kept = TensorDict(t=torch.zeros(2), batch_size=[2]).lock_()
    obj = Holder(data=mapping({"t": torch.ones(2), "inner": mapping({"k": kept})}), batch_size=[2])
    assert isinstance(obj.data, TensorDict) and obj.data.batch_size == torch.Size([2])
    assert isinstance(obj.data["inner"], TensorDict)
    assert obj.data["inner", "k"] is kept
    obj.data = mapping({"t": torch.zeros(2)})
    assert isinstance(obj.data, TensorDict) and (obj.data["t"] == 0).all()
    obj.set("data", mapping({"t": torch.full((2,), 3.0)}))
    assert (obj.data["t"] == 3).all()


def test_tensor_only_non_tensor_field_holds_the_mapping_as_non_tensor_data():
    """A tensor_only field annotated NonTensorData keeps a mapping whole, read back as NonTensorData."""

    class Holder(TensorClass["tensor_only"]):
        meta: NonTensorData

    value = UserDict({"key": "value"})
    obj = Holder(meta=value)
    assert isinstance(obj.meta, NonTensorData) and obj.meta.data is value


def test_tensor_only_from_dataclass_keeps_the_tensordicts_given():
    """from_dataclass(..., tensor_only=True) keeps tensordict values (and those in dicts) as they are."""

    @dataclasses.dataclass
    class Data:
        data: TensorDict
        nested: TensorDict

    kept = TensorDict(t=torch.ones(())).lock_()
    obj = from_dataclass(Data(kept, UserDict({"k": kept})), tensor_only=True)
    assert obj.data is kept and obj.data.is_locked
    assert obj.nested["k"] is kept


def test_autocast_resolves_postponed_and_quoted_names_of_the_class():
    """Each annotation resolves on its own: the class's own name (quoted or not) casts dicts to it."""

    @tensorclass(autocast=True)
    class Node:
        value: torch.Tensor
        td: TensorDict
        child: Node = None
        quoted: "Node" = None  # noqa: UP037 - quoted twice over under postponed annotations

    obj = Node(
        value=torch.zeros(()),
        td={"a": 0.0},
        child={"value": torch.ones(()), "td": {}},
        quoted={"value": torch.ones(()), "td": {}},
    )
    assert isinstance(obj.td, TensorDict)
    assert isinstance(obj.child, Node) and isinstance(obj.quoted, Node)


# The reference resolves the annotations all together: one it cannot resolve and it casts
# nothing (with a warning). Ours loses only that field's cast.
@ours_only
def test_autocast_an_unresolvable_annotation_leaves_the_others_cast():
    """A field whose annotation names nothing known is kept as given; the other fields are cast."""

    @tensorclass(autocast=True)
    class Partly:
        td: TensorDict
        unknown: NameNotDefinedAnywhere = None  # noqa: F821

    obj = Partly(td={"a": 0.0}, unknown={"a": 1})
    assert isinstance(obj.td, TensorDict)
    assert obj.unknown == {"a": 1}


def test_a_setattr_of_the_class_sees_every_field_assignment():
    """A __setattr__ defined by the class runs for each field, in __init__ too, and super() stores."""
    seen = []

    class Shifted(TensorClass):
        a: torch.Tensor
        b: torch.Tensor

        def __setattr__(self, key, value):
            seen.append(key)
            super().__setattr__(key, value + 1)

    obj = Shifted(a=torch.zeros(2), b=torch.zeros(2), batch_size=[2])
    assert sorted(seen) == ["a", "b"] and (obj.a == 1).all() and (obj.b == 1).all()
    obj.a = torch.full((2,), 5.0)
    assert seen[-1] == "a" and (obj.a == 6).all()


# ====================================================================== tensordict behaviour
def test_update_takes_entries_as_keyword_arguments():
    """update() and update_() take entries as keywords, which win; with nothing they change nothing."""
    obj = Pair(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
    assert obj.update() is obj and obj.update_() is obj
    obj.update(a=torch.ones(3))
    obj.update_(b=torch.full((3,), 2.0))
    assert (obj.a == 1).all() and (obj.b == 2).all()
    other = Pair(a=torch.full((3,), 5.0), b=torch.full((3,), 7.0), batch_size=[3])
    obj.update(other, b=torch.full((3,), 9.0))
    assert (obj.a == 5).all() and (obj.b == 9).all()
    with pytest.raises((AttributeError, ValueError)):
        obj.update(c=torch.ones(3))


def test_device_cannot_be_assigned():
    """Assigning tc.device raises RuntimeError: to() is the way to move an instance."""
    obj = Pair(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3], device="cpu")
    with pytest.raises(RuntimeError, match="device"):
        obj.device = torch.device("cpu")


def test_get_of_a_public_attribute_name_gives_the_attribute():
    """get() of a name that is no field but an attribute (batch_size, device) gives the attribute."""
    obj = Pair(a=torch.zeros(3), b=None, batch_size=[3])
    assert obj.get("batch_size") == torch.Size([3])
    assert obj.get("device") is None
    assert obj.get("b") is None and obj.get("missing", "else") == "else"


def test_get_of_a_malformed_key_raises_key_error():
    """get() of a key that is no string or tuple of strings raises KeyError."""
    obj = Pair(a=torch.zeros(3), b=TensorDict(batch_size=[3]), batch_size=[3])
    with pytest.raises(KeyError):
        obj.get(("b", str))


def test_grad_is_an_instance_of_the_class():
    """tc.grad is an instance of the class holding the gradients of its leaves."""
    obj = Pair(a=torch.ones(3, requires_grad=True), b=torch.ones(3), batch_size=[3])
    (obj * 2).sum().a.backward()
    assert isinstance(obj.grad, Pair)
    assert torch.equal(obj.grad.a, torch.full((3,), 2.0)) and obj.grad.b is None


def test_bitwise_operators_with_the_instance_on_the_right():
    """True ^ tc, True & tc and True | tc are computed leafwise, as with the instance on the left."""
    obj = Pair(a=torch.tensor([True, False]), b=torch.tensor([False, False]), batch_size=[2])
    assert torch.equal((True ^ obj).a, torch.tensor([False, True]))
    assert torch.equal((True & obj).a, torch.tensor([True, False]))
    assert torch.equal((False | obj).b, torch.tensor([False, False]))


# ====================================================================== state dicts
@tensorclass
class Chain:
    x: torch.Tensor
    tag: str
    child: Chain = None


def _chain() -> Chain:
    return Chain(x=torch.randn(3), tag="t", child=Chain(x=torch.randn(3), tag="u"))


@ours_only  # the reference returns the field's descriptor (docs/differences.rst)
def test_a_field_without_default_is_no_class_attribute_so_subclasses_can_redeclare_it():
    """A field without a default raises AttributeError on the class, as a dataclass field does,
    and a subclass re-declaring it still requires it."""

    @tensorclass
    class Bare:
        x: torch.Tensor
        y: int = 3

    with pytest.raises(AttributeError, match="'x'"):
        Bare.x  # noqa: B018
    assert Bare.y == 3

    @tensorclass
    class Again(Bare):
        x: torch.Tensor

    with pytest.raises(TypeError, match="'x'"):
        Again(batch_size=[])


def test_state_dict_flat_and_nested_round_trip():
    """state_dict() keys nested leaves "a.b"; flatten=False nests them; both load back."""
    source = _chain()
    flat, nested = source.state_dict(), source.state_dict(flatten=False)
    assert set(flat) == {"x", "child.x"}
    assert set(nested) == {"x", "child"} and isinstance(nested["child"], dict)
    for state in (flat, nested):
        target = source.clone()
        target.x, target.child.x = torch.zeros(3), torch.zeros(3)
        target.load_state_dict(state)
        assert torch.equal(target.x, source.x) and torch.equal(target.child.x, source.child.x)


def test_load_state_dict_refuses_a_key_that_is_no_field():
    """A key that is no field of the tensorclass holding it raises KeyError, at any depth."""
    target = _chain()
    flat = target.state_dict()
    flat["a"] = torch.zeros(3)
    with pytest.raises(KeyError):
        target.load_state_dict(flat)
    nested = target.state_dict(flatten=False)
    nested["child"]["a"] = torch.zeros(3)
    with pytest.raises((KeyError, RuntimeError)):
        target.load_state_dict(nested)


def test_state_dict_records_the_non_tensor_fields_of_each_level():
    """The state dict's _metadata gives each tensorclass level's class name and non-tensor fields."""
    source = _chain()
    for state, inner in ((source.state_dict(), None), (source.state_dict(flatten=False), "child")):
        levels = state._metadata
        assert levels[""]["_type"] == "Chain"
        assert levels[""]["_non_tensor"] == {"tag": "t"}
        child = levels["child"] if inner is None else state[inner]._metadata[""]
        assert child["_non_tensor"] == {"tag": "u", "child": None}


@pytest.mark.parametrize("flatten", [True, False])
def test_load_state_dict_sets_the_non_tensor_fields_back(flatten):
    """Loading a state dict sets the recorded non-tensor fields, at every level."""
    source = _chain()
    target = source.clone()
    target.tag, target.child.tag = "other", "other"
    target.load_state_dict(source.state_dict(flatten=flatten))
    assert (target.tag, target.child.tag) == ("t", "u")


def test_load_state_dict_refuses_a_recorded_field_that_is_no_field():
    """A non-tensor field recorded in _metadata that the class lacks raises KeyError."""
    target = _chain()
    state = target.state_dict()
    state._metadata[""]["_non_tensor"]["nope"] = 1
    with pytest.raises(KeyError):
        target.load_state_dict(state)


# differs from the reference: it sets the fields it read before the unknown one
@ours_only
def test_load_state_dict_checks_every_key_before_setting_anything():
    """A state dict with a key that is no field changes nothing: no tensor, no field."""
    target = _chain()
    before = target.x.clone()
    state = _chain().state_dict()
    state._metadata[""]["_non_tensor"]["tag"] = "changed"
    state._metadata[""]["_non_tensor"]["nope"] = 1
    with pytest.raises(KeyError):
        target.load_state_dict(state)
    assert target.tag == "t"
    assert torch.equal(target.x, before)


def test_load_state_dict_reads_the_older_form():
    """The older form (tensors under "_tensordict", other fields under "_non_tensordict") loads."""
    target = Pair(a=torch.zeros(3), b=torch.zeros(3))
    older = {
        "_tensordict": {
            "a": torch.ones(3),
            "b": torch.full((3,), 2.0),
            "__batch_size": torch.Size([]),
        },
        "_non_tensordict": {},
    }
    target.load_state_dict(older)
    assert (target.a == 1).all() and (target.b == 2).all()


def test_setitem_takes_an_instance_of_a_class_with_the_same_fields_only():
    """tc[idx] = other works for another class with the same fields, and raises ValueError otherwise."""

    class Twin(TensorClass):
        a: torch.Tensor
        b: torch.Tensor

    class Other(TensorClass):
        a: torch.Tensor
        c: torch.Tensor

    target = Pair(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
    target[:2] = Twin(a=torch.ones(3), b=torch.ones(3), batch_size=[3])[:2]
    assert target.a.tolist() == [1.0, 1.0, 0.0]
    wrong = Other(a=torch.ones(3), c=torch.ones(3), batch_size=[3])
    with pytest.raises(ValueError):
        target[:2] = wrong[:2]
    with pytest.raises(ValueError):
        wrong[:2] = target[:2]


# ====================================================================== keys that are no field
def test_set_get_and_indexing_with_keys_that_are_no_field():
    """set() and attributes refuse undeclared keys; get() returns the default; str indexing raises."""
    obj = Decorated(x=torch.zeros(3), batch_size=[3])
    with pytest.raises(AttributeError, match="'z'.*no such field"):
        obj.set("z", torch.ones(3))
    with pytest.raises(AttributeError, match="'z'.*no such field"):
        obj.z = torch.ones(3)
    assert obj.get("z") is None and obj.get("z", 5) == 5
    with pytest.raises(ValueError, match="batch dimensions"):
        obj["z"]
    with pytest.raises(ValueError, match="batch dimensions"):
        obj["z"] = torch.ones(3)
    assert list(obj.keys()) == ["x"]


def test_make_memmap_methods_accept_keys_that_are_no_field(tmp_path):
    """make_memmap, make_memmap_from_tensor and make_memmap_from_storage add undeclared entries."""
    obj = Decorated(x=torch.zeros(3), batch_size=[3])
    obj.memmap_(tmp_path)
    assert obj.make_memmap("z", [3, 2]).shape == torch.Size([3, 2])
    assert torch.equal(obj.make_memmap_from_tensor("w", torch.ones(3)), torch.ones(3))
    assert obj.make_memmap(("n", "a"), [3]).shape == torch.Size([3])
    storage = torch.UntypedStorage(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # a storage without a file
        stored = obj.make_memmap_from_storage("s", storage, shape=[3], dtype=torch.float32)
    assert stored.untyped_storage().data_ptr() == storage.data_ptr()
    assert list(obj.keys()) == ["x", "z", "w", "n", "s"]
    meta = json.loads((tmp_path / "_tensordict" / "meta.json").read_text())
    assert {"x", "z", "w", "n"} <= set(meta)
    assert json.loads((tmp_path / "meta.json").read_text()) == {"_type": str(Decorated)}
    inner = TensorDict.load_memmap(tmp_path / "_tensordict")
    assert {"x", "z", "w", "n"} <= set(inner.keys())


# differs from the reference: it accepts the undeclared entry, but then get() answers None, and
# indexing, clone(), `in` and load_memmap() raise ValueError; ours carries the entry along.
def test_undeclared_entries_are_read_carried_and_loaded_back(tmp_path):
    """An undeclared entry reads with get(), survives indexing and clone(), and loads back."""
    obj = Decorated(x=torch.zeros(3), batch_size=[3])
    obj.memmap_(tmp_path)
    obj.make_memmap_from_tensor("w", torch.ones(3))
    assert torch.equal(obj.get("w"), torch.ones(3)) and "w" in obj
    assert torch.equal(obj[1:].get("w"), torch.ones(2))
    assert torch.equal(obj.clone().get("w"), torch.ones(3))
    loaded = Decorated.load_memmap(tmp_path)
    assert type(loaded) is Decorated
    assert torch.equal(loaded.get("w"), torch.ones(3))
    assert type(TensorDict.load_memmap(tmp_path)) is Decorated


def _floats(key, leaf) -> bool:
    return leaf.is_floating_point()


def test_cast_filter_is_the_default_of_the_casts_of_an_instance():
    """@tensorclass(cast_filter=...) picks the leaves that to(dtype), type() and half() cast."""

    @tensorclass(cast_filter=_floats)
    class Sample:
        x: torch.Tensor
        i: torch.Tensor

    sample = Sample(x=torch.zeros(2), i=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    for cast in (
        lambda s: s.to(torch.float16),
        lambda s: s.half(),
        lambda s: s.type(torch.float16),
    ):
        out = cast(sample)
        assert out.x.dtype == torch.float16 and out.i.dtype == torch.int64
    assert sample.to(torch.float16, cast_filter=None).i.dtype == torch.float16


def test_cast_filter_is_inherited_and_a_class_keyword():
    """A subclass keeps its parent's cast_filter; TensorClass takes it as a class keyword."""

    @tensorclass(cast_filter=_floats)
    class Parent:
        x: torch.Tensor
        i: torch.Tensor

    class Child(Parent):
        pass

    class Keyword(TensorClass, cast_filter=_floats):
        x: torch.Tensor
        i: torch.Tensor

    class KeywordChild(Keyword):
        pass

    for cls in (Child, Keyword, KeywordChild):
        out = cls(x=torch.zeros(2), i=torch.zeros(2, dtype=torch.int64), batch_size=[2]).double()
        assert out.x.dtype == torch.float64 and out.i.dtype == torch.int64
