"""The class-level builders of tensorclasses: ``C.from_schema``, ``C.stack``, ``C.from_dataclass``, ...

Each builds what the TensorDict class method of the same name builds, as the class.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import sys

import numpy as np
import pytest
import torch

import tensordict
from tensordict import TensorDict, tensorclass


@tensorclass
class Point:
    x: torch.Tensor
    tag: str = "a"


@tensorclass
class Linear:
    weight: torch.Tensor
    bias: torch.Tensor


@dataclasses.dataclass
class Plain:
    x: torch.Tensor
    tag: str


def make_point(n: int = 3) -> Point:
    return Point(x=torch.arange(float(n)), tag="p", batch_size=[n])


def test_from_schema_gives_the_class():
    """C.from_schema builds zeros of the schema as an instance of C."""
    p = Point.from_schema({"x": ([2], torch.float32)}, batch_size=[3])
    assert type(p) is Point
    assert p.batch_size == (3,) and p.x.shape == (3, 2) and p.x.dtype == torch.float32
    assert not p.x.any()


def test_from_schema_refuses_a_key_that_is_not_a_field():
    """A schema key that is no field of the class raises ValueError naming it."""
    with pytest.raises(ValueError, match="'z'"):
        Point.from_schema({"z": ([2], torch.float32)})


@pytest.mark.parametrize("name", ["stack", "lazy_stack", "maybe_dense_stack"])
def test_stacking_class_methods(name):
    """C.stack / lazy_stack / maybe_dense_stack of instances give an instance of C."""
    p = make_point()
    out = getattr(Point, name)([p, p])
    assert type(out) is Point
    assert out.batch_size == (2, 3)
    assert torch.equal(out.x, torch.stack([p.x, p.x]))


def test_cat_class_method():
    """C.cat of instances concatenates them along a batch dim."""
    p = make_point()
    out = Point.cat([p, p])
    assert type(out) is Point and out.batch_size == (6,)
    assert torch.equal(out.x, torch.cat([p.x, p.x]))


def test_stack_of_tensordicts_as_the_class():
    """C.stack of plain tensordicts gives C, the missing fields None."""
    out = Point.stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(2))])
    assert type(out) is Point and out.batch_size == (2,)
    assert out.tag is None


def test_stack_into_out():
    """C.stack with out= writes the stacked values into out."""
    p = make_point()
    out = Point(x=torch.zeros(2, 3), batch_size=[2, 3])
    Point.stack([p, p], 0, out=out)
    assert torch.equal(out.x, torch.stack([p.x, p.x]))


def test_lazy_stack_of_instances_keeps_members():
    """tensordict.lazy_stack of instances of one class is that class over a lazy stack."""
    p = make_point()
    out = tensordict.lazy_stack([p, p])
    assert type(out) is Point
    assert out.batch_size == (2, 3)
    out.x[0] += 1  # a lazy stack reads its members' own tensors
    assert torch.equal(p.x, torch.arange(3.0))


def test_from_dataclass_class_method():
    """C.from_dataclass(instance) gives C with the dataclass's values."""
    out = Point.from_dataclass(Plain(x=torch.ones(2), tag="q"))
    assert type(out) is Point
    assert torch.equal(out.x, torch.ones(2)) and out.tag == "q"


def test_from_dataclass_as_tensorclass_returns_the_new_class():
    """as_tensorclass=True returns an instance of a new tensorclass, not of C."""
    out = Point.from_dataclass(Plain(x=torch.ones(2), tag="q"), as_tensorclass=True)
    assert type(out).__name__ == "Plain_tc"


def test_from_dataclass_refuses_a_type():
    """A dataclass type has no values: TypeError."""
    with pytest.raises(TypeError, match="Plain"):
        Point.from_dataclass(Plain)


def test_module_from_dataclass_in_tensorclass_module():
    """tensordict.tensorclass.from_dataclass is tensordict.from_dataclass."""
    module = sys.modules["tensordict.tensorclass"]
    assert module.from_dataclass is tensordict.from_dataclass
    out = module.from_dataclass(Plain(x=torch.ones(2), tag="q"))
    assert type(out).__name__ == "Plain_tc" and out.tag == "q"


def test_from_any_and_from_namedtuple():
    """C.from_any of a dict and C.from_namedtuple give C."""
    assert torch.equal(Point.from_any({"x": torch.ones(2)}).x, torch.ones(2))
    named = collections.namedtuple("Named", ["x"])(torch.ones(2))
    out = Point.from_namedtuple(named)
    assert type(out) is Point and torch.equal(out.x, torch.ones(2))


def test_from_struct_array():
    """C.from_struct_array reads the array's fields."""
    array = np.zeros(3, dtype=[("x", "f4")])
    out = Point.from_struct_array(array)
    assert type(out) is Point and out.batch_size == (3,)


def test_from_module_and_from_modules():
    """C.from_module reads the parameters; from_modules stacks them."""
    out = Linear.from_module(torch.nn.Linear(3, 2))
    assert type(out) is Linear and out.weight.shape == (2, 3)
    out = Linear.from_modules(torch.nn.Linear(3, 2), torch.nn.Linear(3, 2))
    assert type(out) is Linear and out.batch_size == (2,)


def test_from_module_refuses_parameters_that_are_not_fields():
    """A module whose parameters are not fields raises ValueError naming one."""
    with pytest.raises(ValueError, match="weight|bias"):
        Point.from_module(torch.nn.Linear(3, 2))


def test_from_tuple_refuses_items():
    """A tuple's items are keyed "0", "1", ...: no field takes them."""
    with pytest.raises(ValueError, match="0"):
        Point.from_tuple((torch.zeros(2),))


def test_fromkeys():
    """C.fromkeys puts the value under every key."""
    out = Point.fromkeys(["x"], 0)
    assert type(out) is Point and out.x == 0


def test_from_dict_instance_from_the_class_and_an_instance():
    """from_dict_instance builds an instance of the instance's class; left-out fields take their defaults."""
    p = make_point()
    out = Point.from_dict_instance(p, {"x": torch.ones(3)}, batch_size=[3])
    assert type(out) is Point
    assert torch.equal(out.x, torch.ones(3))
    assert out.tag == "a"
    out = p.from_dict_instance({"x": torch.ones(3), "tag": "b"}, auto_batch_size=True)
    assert out.batch_size == (3,) and out.tag == "b"


@pytest.mark.parametrize(
    "name",
    ["from_schema", "from_any", "from_namedtuple", "from_struct_array", "fromkeys", "stack", "cat"],
)
def test_class_builders_have_the_tensordict_signature(name):
    """Each builder takes the arguments of the TensorDict class method."""
    ours = inspect.signature(getattr(Point, name))
    theirs = inspect.signature(getattr(TensorDict, name))
    assert list(ours.parameters) == list(theirs.parameters)
