"""TypedTensorDict: fields declared as annotations, checked construction, the class kept by operations."""

from __future__ import annotations

import json
import pickle
import warnings
from typing import ClassVar, NotRequired

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import Tensor

from tensordict import TensorDict, lazy_stack
from tensordict.typedtensordict import TypedTensorDict


class State(TypedTensorDict):
    eta: Tensor
    X: Tensor


class WithDefaults(TypedTensorDict):
    a: Tensor
    b: Tensor = torch.zeros(())
    c: Tensor | None = None
    d: NotRequired[Tensor]


class Child(WithDefaults):
    e: Tensor


class Frozen(TypedTensorDict, frozen=True):
    a: Tensor


class Counter(TypedTensorDict):
    x: Tensor
    scale: ClassVar[int] = 3

    def doubled(self):
        return self.x * 2


def _state(n: int = 5) -> State:
    return State(eta=torch.arange(n * 3.0).reshape(n, 3), X=torch.zeros(n, 4), batch_size=[n])


# ---------------------------------------------------------------------- construction
def test_fields_are_read_as_attributes_and_items():
    """A field given by keyword is the entry of that key, read as an attribute too."""
    eta = torch.zeros(5, 3)
    state = State(eta=eta, X=torch.zeros(5, 4), batch_size=[5])
    assert state.eta is eta
    assert state["eta"] is eta
    assert state.X.shape == torch.Size([5, 4])
    assert list(state.keys()) == ["eta", "X"]
    assert state.batch_size == torch.Size([5])


def test_a_mapping_source_is_taken_as_from_dict_takes_it():
    """A positional mapping keeps undeclared keys and warns, not raises, on a missing field."""
    state = State({"eta": torch.zeros(3), "X": torch.ones(3), "Y": torch.ones(3)}, batch_size=[3])
    assert sorted(state.keys()) == ["X", "Y", "eta"]
    with pytest.warns(FutureWarning, match="X"):
        State({"eta": torch.zeros(3)}, batch_size=[3])


def test_missing_required_fields_raise_type_error_naming_them():
    """Leaving out required fields raises TypeError listing them, sorted."""
    with pytest.raises(TypeError, match=r"State\(\) missing required field\(s\): X, eta"):
        State()
    with pytest.raises(TypeError, match=r"missing required field\(s\): X$"):
        State(eta=torch.zeros(3))


def test_unknown_fields_raise_type_error_naming_them():
    """A keyword that is not a field raises TypeError naming it."""
    with pytest.raises(TypeError, match=r"State\(\) got unexpected field\(s\): Y"):
        State(eta=torch.zeros(3), X=torch.zeros(3), Y=torch.zeros(3))


def test_more_than_one_positional_argument_is_refused():
    """Fields are keyword-only: a second positional argument raises TypeError."""
    with pytest.raises(TypeError, match="positional argument"):
        State(torch.zeros(3), torch.zeros(3))


def test_a_value_that_does_not_fit_the_batch_size_raises_runtime_error():
    """A field whose leading dimensions differ from batch_size raises RuntimeError naming it."""
    with pytest.raises(RuntimeError, match="'X'"):
        State(eta=torch.zeros(3), X=torch.zeros(4), batch_size=[3])


def test_the_base_class_itself_cannot_be_instantiated():
    """TypedTensorDict is only a base: instantiating it raises TypeError."""
    with pytest.raises(TypeError):
        TypedTensorDict()


def test_keyword_options_of_the_constructor():
    """batch_size, device, names and lock are constructor keywords, not fields."""
    state = State(
        eta=torch.zeros(2), X=torch.zeros(2), batch_size=[2], device="cpu", names=["n"], lock=True
    )
    assert state.device == torch.device("cpu")
    assert state.names == ["n"]
    assert state.is_locked
    assert sorted(state.keys()) == ["X", "eta"]


# ---------------------------------------------------------------------- fields and defaults
def test_class_records_required_optional_and_defaults():
    """The class lists its fields, which are required, and the defaults."""
    assert WithDefaults.__required_keys__ == frozenset({"a"})
    assert WithDefaults.__optional_keys__ == frozenset({"b", "c", "d"})
    assert WithDefaults.__expected_keys__ == frozenset({"a", "b", "c", "d"})
    assert set(WithDefaults.__field_defaults__) == {"b", "c"}


def test_a_default_is_read_but_not_stored():
    """An unset field with a default reads as the default and is not an entry."""
    d = WithDefaults(a=torch.zeros(2), batch_size=[2])
    assert list(d.keys()) == ["a"]
    assert d.b is WithDefaults.__field_defaults__["b"]
    assert d.c is None
    assert "b" not in d
    with pytest.raises(KeyError):
        d["b"]


def test_a_given_value_replaces_the_default():
    """Passing a field that has a default stores it."""
    d = WithDefaults(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])
    assert list(d.keys()) == ["a", "b"]
    assert d.b.tolist() == [1.0, 1.0]


def test_an_unset_field_without_default_raises_attribute_error():
    """Reading a NotRequired field that is not set raises AttributeError naming it."""
    d = WithDefaults(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(AttributeError, match="has field 'd' declared but not set"):
        _ = d.d
    assert not hasattr(d, "d")


def test_an_undeclared_attribute_raises_attribute_error():
    """An attribute that is neither a field nor a TensorDict one raises AttributeError."""
    with pytest.raises(AttributeError, match="foo"):
        _ = _state().foo


def test_inheritance_adds_fields():
    """A subclass has the fields of its base and its own."""
    assert Child.__required_keys__ == frozenset({"a", "e"})
    assert Child.__expected_keys__ == frozenset({"a", "b", "c", "d", "e"})
    with pytest.raises(TypeError, match=r"Child\(\) missing required field\(s\): e"):
        Child(a=torch.zeros(2), batch_size=[2])
    child = Child(a=torch.zeros(2), e=torch.ones(2), batch_size=[2])
    assert child.b is WithDefaults.__field_defaults__["b"]
    assert child.e.tolist() == [1.0, 1.0]


def test_classvars_and_methods_are_not_fields():
    """ClassVar annotations stay class attributes; methods work on instances."""
    assert Counter.__expected_keys__ == frozenset({"x"})
    counter = Counter(x=torch.ones(2))
    assert counter.scale == 3
    assert counter.doubled().tolist() == [2.0, 2.0]


def test_string_annotations_are_fields():
    """Annotations written as strings declare fields too."""
    ns = {"__annotations__": {"x": "Tensor", "y": "torch.Tensor"}}
    cls = type(TypedTensorDict)("Strings", (TypedTensorDict,), ns)
    assert cls.__expected_keys__ == frozenset({"x", "y"})


def test_writing_a_field_attribute_sets_the_entry():
    """Assigning a field attribute stores the value under that key."""
    state = _state()
    state.eta = torch.ones(5, 3)
    assert state["eta"].sum().item() == 15.0
    d = WithDefaults(a=torch.zeros(2), batch_size=[2])
    d.b = torch.ones(2)
    assert list(d.keys()) == ["a", "b"]


def test_a_field_attribute_has_no_deleter():
    """del on a field attribute raises AttributeError; the entry stays."""
    state = _state()
    with pytest.raises(AttributeError, match="deleter"):
        del state.eta
    assert "eta" in state


def test_keys_that_are_not_fields_can_be_added():
    """set and update add keys the class does not declare, as a TensorDict does."""
    state = _state()
    state["extra"] = torch.ones(5)
    state.update({"more": torch.zeros(5)})
    assert list(state.keys()) == ["eta", "X", "extra", "more"]


def test_unpacking_gives_the_entries():
    """``**state`` unpacks the entries by key."""
    assert sorted(dict(**_state())) == ["X", "eta"]


# ---------------------------------------------------------------------- options
def test_frozen_locks_the_instance():
    """A frozen class locks its instances; a field write then raises RuntimeError."""
    frozen = Frozen(a=torch.zeros(3), batch_size=[3])
    assert frozen.is_locked
    with pytest.raises(RuntimeError):
        frozen.a = torch.ones(3)
    assert frozen.a.tolist() == [0.0, 0.0, 0.0]


def test_options_by_subscript_are_inherited():
    """TypedTensorDict["frozen"] gives a base whose subclasses are frozen."""

    class Sub(TypedTensorDict["frozen"]):
        a: Tensor

    class SubSub(Sub):
        b: Tensor

    assert Sub(a=torch.zeros(1)).is_locked
    assert SubSub(a=torch.zeros(1), b=torch.zeros(1)).is_locked


def test_a_field_named_like_a_tensordict_attribute_needs_shadow():
    """A field named "sum" is refused with AttributeError, unless the class has shadow."""
    with pytest.raises(AttributeError, match="'sum'"):
        type(TypedTensorDict)("Bad", (TypedTensorDict,), {"__annotations__": {"sum": Tensor}})

    class Shadowing(TypedTensorDict["shadow"]):
        sum: Tensor

    assert Shadowing(sum=torch.ones(3)).sum.tolist() == [1.0, 1.0, 1.0]


def test_an_unknown_option_raises_value_error():
    """A subscript that is not an option raises ValueError naming it."""
    with pytest.raises(ValueError, match="'bogus'"):
        TypedTensorDict["bogus"]


def test_deprecated_options_warn_and_do_nothing():
    """autocast is accepted with a DeprecationWarning."""
    with pytest.warns(DeprecationWarning, match="autocast"):

        class Auto(TypedTensorDict, autocast=True):
            a: Tensor

    assert Auto(a=torch.zeros(2)).a.dtype == torch.float32


def test_an_unknown_class_keyword_raises_type_error():
    """A class keyword that is no option raises TypeError."""
    with pytest.raises(TypeError):
        type(TypedTensorDict)("Q", (TypedTensorDict,), {}, wibble=True)


# ---------------------------------------------------------------------- operations keep the class
OPERATIONS = {
    "index int": lambda s: s[0],
    "index slice": lambda s: s[1:3],
    "index mask": lambda s: s[torch.tensor([True, False, True, False, True])],
    "clone": lambda s: s.clone(),
    "to": lambda s: s.to("cpu"),
    "apply": lambda s: s.apply(lambda x: x + 1),
    "add": lambda s: s + 1,
    "reshape": lambda s: s.reshape(1, 5),
    "unsqueeze": lambda s: s.unsqueeze(0),
    "expand": lambda s: s.expand(2, 5),
    "select": lambda s: s.select("eta"),
    "exclude": lambda s: s.exclude("eta"),
    "empty": lambda s: s.empty(),
    "detach": lambda s: s.detach(),
    "contiguous": lambda s: s.contiguous(),
    "flatten_keys": lambda s: s.flatten_keys(),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_operations_return_the_same_class(name):
    """Indexing, shape ops, clone, to, apply, select... return an instance of the class."""
    result = OPERATIONS[name](_state())
    assert type(result) is State


def test_split_and_unbind_return_the_class():
    """Each part of split and unbind is an instance of the class."""
    state = _state()
    assert [type(p) for p in state.split(2)] == [State, State, State]
    assert {type(p) for p in state.unbind(0)} == {State}


def test_comparisons_and_reductions_return_a_tensordict():
    """A comparison or a reduction over a dim gives a plain TensorDict."""
    state = _state()
    assert type(state == state) is TensorDict
    assert type(state > 0) is TensorDict
    assert type(state.sum(dim=0)) is TensorDict
    assert (state == state).all()


def test_stack_and_cat_keep_the_class_of_the_first():
    """torch.stack and torch.cat of typed members give the class; values are stacked."""
    state = _state()
    stacked = torch.stack([state, state], 0)
    assert type(stacked) is State
    assert stacked.batch_size == torch.Size([2, 5])
    assert torch.equal(stacked.eta[1], state.eta)
    assert type(torch.cat([state, state], 0)) is State
    assert type(torch.stack([state.to_tensordict(), state])) is TensorDict


def test_lazy_stack_keeps_typed_members():
    """A lazy stack of typed members gives them back when indexed."""
    stack = lazy_stack([_state(), _state()], 0)
    assert type(stack[0]) is State


def test_nested_typed_tensordicts_keep_their_class():
    """A typed field holding a typed tensordict keeps it, also after indexing."""

    class Outer(TypedTensorDict):
        inner: State
        y: Tensor

    inner = _state()
    outer = Outer(inner=inner, y=torch.zeros(5), batch_size=[5])
    assert outer.inner is inner
    assert type(outer[0].inner) is State


def test_a_nested_key_creates_a_plain_tensordict():
    """The sub-tensordict that a nested key creates is a TensorDict."""
    state = _state()
    state["a", "b"] = torch.zeros(5)
    assert type(state["a"]) is TensorDict


def test_to_tensordict_gives_a_plain_copy():
    """to_tensordict returns a TensorDict that does not share the tensors."""
    state = _state()
    plain = state.to_tensordict()
    assert type(plain) is TensorDict
    plain["eta"] += 1
    assert state.eta[0, 0].item() == 0.0


@given(n=st.integers(1, 6), i=st.integers(-6, 5))
def test_indexing_keeps_class_and_values(n, i):
    """For any valid int index, the result is of the class and holds the rows of each field."""
    if not -n <= i < n:
        return
    state = _state(n)
    row = state[i]
    assert type(row) is State
    assert torch.equal(row.eta, state.eta[i])
    assert row.batch_size == torch.Size([])


def test_repr_names_the_class():
    """The repr starts with the class name and the batch size."""
    assert repr(_state()).startswith("State(batch_size=[5], fields={")


def test_pickle_keeps_the_class():
    """A pickled instance comes back as the class, with its entries."""
    back = pickle.loads(pickle.dumps(_state()))
    assert type(back) is State
    assert torch.equal(back.eta, _state().eta)


# ---------------------------------------------------------------------- from_tensordict / from_dict
def test_from_tensordict_shares_the_entries():
    """from_tensordict wraps without copying: a write through one is seen by the other."""
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
    state = State.from_tensordict(td)
    assert type(state) is State
    assert state.eta is td["eta"]
    state.eta += 1
    assert td["eta"].sum().item() == 15.0


def test_from_tensordict_checks_required_fields():
    """A tensordict missing a required field raises TypeError, unless check=False."""
    with pytest.raises(
        TypeError, match=r"State.from_tensordict\(\) missing required field\(s\): X"
    ):
        State.from_tensordict(TensorDict(eta=torch.zeros(3)))
    state = State.from_tensordict(TensorDict(), check=False)
    with pytest.raises(AttributeError, match="declared but not set"):
        _ = state.eta


def test_from_dict_builds_the_class_and_warns_on_missing_fields():
    """from_dict infers the batch size; a missing field gives a FutureWarning."""
    state = State.from_dict({"eta": torch.zeros(3, 2), "X": torch.zeros(3)}, auto_batch_size=True)
    assert type(state) is State
    assert state.batch_size == torch.Size([3])
    with pytest.warns(FutureWarning, match="X"):
        State.from_dict({"eta": torch.zeros(3)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        State.from_dict({"eta": torch.zeros(3)}, check=False)


# ---------------------------------------------------------------------- memory mapping
def test_memmap_writes_a_plain_tensordict_folder(tmp_path):
    """memmap returns a locked instance; meta.json is exactly a TensorDict level's."""
    state = _state()
    mapped = state.memmap(tmp_path)
    assert type(mapped) is State
    assert mapped.is_locked and mapped.is_memmap()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X.memmap", "eta.memmap", "meta.json"]
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta == {
        "eta": {"device": "cpu", "shape": [5, 3], "dtype": "torch.float32", "is_nested": False},
        "X": {"device": "cpu", "shape": [5, 4], "dtype": "torch.float32", "is_nested": False},
        "shape": [5],
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }


def test_a_memmap_folder_loads_as_tensordict_and_rewraps(tmp_path):
    """The folder loads as a TensorDict with the data; from_tensordict gives the class back."""
    _state().memmap(tmp_path)
    loaded = TensorDict.load_memmap(tmp_path)
    assert type(loaded) is TensorDict
    state = State.from_tensordict(loaded)
    assert torch.equal(state.eta, _state().eta)


def test_memmap_in_place_keeps_the_object():
    """memmap_ maps the instance itself, which stays of the class."""
    state = _state()
    assert state.memmap_() is state
    assert type(state) is State and state.is_memmap()


# differs from the reference: instances are TensorDict objects (the reference wraps one instead)
def test_instances_are_tensordicts():
    """An instance is a TensorDict, so code that checks for one accepts it."""
    assert isinstance(_state(), TensorDict)


# differs from the reference: only a dense TensorDict is wrapped (the reference wraps any backend)
def test_from_tensordict_refuses_a_lazy_stack():
    """from_tensordict of a lazy stack raises TypeError saying to densify it first."""
    with pytest.raises(TypeError, match="to_tensordict"):
        State.from_tensordict(lazy_stack([_state(), _state()]))


def test_with_blocks_over_a_typed_result_write_back():
    """with td.flatten_keys(",") / unflatten_keys(",") over a typed tensordict writes new keys back."""
    td = State(eta=torch.zeros(3, 2), X=torch.zeros(3), batch_size=[3])
    with td.flatten_keys(",") as flat:
        assert type(flat) is State
        with flat.unflatten_keys(",") as nested:
            nested["new", "data"] = torch.ones(3)
        assert (flat["new,data"] == 1).all()
    assert (td["new", "data"] == 1).all()
