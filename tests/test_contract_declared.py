"""The mixins of TensorDictBase keep their declared contract (``tensordict/_ops/_contract.py``).

A mixin calls its own members, public methods, and only the private members the contract
names; it says which ones in its docstring (``Calls: ...``). These tests read the source of
every mixin module, so that a new hidden dependency between mixins fails here, named.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import tensordict._ops as ops_package
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    TensorDictBase,
    TypedTensorDict,
)
from tensordict._ops._contract import (
    ENTRY_PROTOCOL,
    PRIMITIVES,
    Contract,
    contract_names,
    declared,
)
from tensordict._tensorclass.methods import _TensorClassMethods

OPS = Path(ops_package.__file__).parent
NOT_MIXIN_MODULES = {"tensordict._ops._contract", "tensordict._ops.classes"}
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages([str(OPS)], prefix="tensordict._ops.")
    if info.name not in NOT_MIXIN_MODULES and not info.ispkg
)
CLASSES = (TensorDictBase, TensorDict, LazyStackedTensorDict, NonTensorData, NonTensorStack)


def _private_members() -> set:
    """Every single-underscore member that a tensordict class, an entry class or the
    contract defines: what a mixin could reach into."""
    names = set(contract_names())
    for cls in (*CLASSES, TypedTensorDict, _TensorClassMethods):
        for klass in cls.__mro__:
            names.update(n for n in vars(klass) if n.startswith("_") and not n.startswith("__"))
    return names


PRIVATE = _private_members()


def _mixins(module) -> list:
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and issubclass(obj, Contract)
        and obj is not Contract
    ]


def _own_and_used(path: Path) -> tuple[set, set]:
    """The private names the module's classes define, and those the module reads on any object."""
    tree = ast.parse(path.read_text())
    own: set = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own.add(item.name)
                elif isinstance(item, ast.Assign):
                    own.update(t.id for t in item.targets if isinstance(t, ast.Name))
                    for target in item.targets:
                        if isinstance(target, ast.Name) and target.id == "__slots__":
                            own.update(ast.literal_eval(item.value))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    own.add(item.target.id)
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE
    }
    return own, used - own


def test_the_mixin_modules_are_found():
    """The walk over ``tensordict/_ops`` finds the mixin modules (a broken walk checks nothing)."""
    assert {"tensordict._ops.entries", "tensordict._ops.keys", "tensordict._ops.math"} <= set(
        MODULES
    )


@pytest.mark.parametrize("name", MODULES)
def test_a_mixin_module_calls_only_what_it_declares(name):
    """Each private member a mixin module reads that its own classes do not define is named
    on the ``Calls:`` line of one of its mixins, and each declared name is used and is one of
    the contract's."""
    module = importlib.import_module(name)
    own, used = _own_and_used(Path(module.__file__))
    mixins = _mixins(module)
    said = set().union(*(declared(cls) for cls in mixins)) if mixins else set()
    assert used <= said, f"{name} uses {sorted(used - said)} without declaring them (Calls:)"
    assert said <= used, f"{name} declares {sorted(said - used)} but does not use them"
    assert said <= contract_names(), f"{name} declares {sorted(said - contract_names())}"


@pytest.mark.parametrize("name", MODULES)
def test_every_mixin_stands_on_the_contract(name):
    """Every mixin class of ``tensordict/_ops`` derives from Contract, so that a declaration
    can never hide a definition."""
    module = importlib.import_module(name)
    for obj in vars(module).values():
        if inspect.isclass(obj) and obj.__module__ == name and obj.__name__.endswith("Mixin"):
            assert issubclass(obj, Contract), f"{obj.__qualname__} does not derive from Contract"


def test_the_contract_comes_after_every_mixin():
    """In the method resolution order of TensorDictBase, Contract follows every mixin: a stub
    never shadows a definition."""
    mro = TensorDictBase.__mro__
    mixins = [c for c in mro if issubclass(c, Contract) and c is not Contract]
    assert mixins and all(mro.index(c) < mro.index(Contract) for c in mixins)


@pytest.mark.parametrize(
    "cls",
    [TensorDict, LazyStackedTensorDict, NonTensorStack, TypedTensorDict],
    ids=lambda c: c.__name__,
)
def test_every_class_defines_what_the_contract_declares(cls):
    """No contract stub is what a concrete class gets: each declared member is defined."""
    stubs = [n for n in vars(Contract) if n.startswith("_") and not n.startswith("__")]
    missing = [
        n for n in stubs if inspect.getattr_static(cls, n) is inspect.getattr_static(Contract, n)
    ]
    assert not missing, f"{cls.__name__} leaves {missing} to the contract's stubs"


def test_the_primitives_are_declared_by_the_base():
    """Each primitive is declared (or defined) by TensorDictBase itself."""
    assert [n for n in PRIMITIVES if not hasattr(TensorDictBase, n)] == []


def test_the_entry_protocol_is_defined_by_the_entry_classes():
    """Each entry member the mixins call is defined by a non-tensor class or a tensorclass."""
    hosts = (NonTensorData, NonTensorStack, _TensorClassMethods, TensorDict)
    orphans = [n for n in ENTRY_PROTOCOL if not any(hasattr(h, n) for h in hosts)]
    assert orphans == []
