"""The methods made from tables: the checked-in modules, their primitives and their tables."""

from __future__ import annotations

import importlib.util
import inspect
import pickle
import sys
from pathlib import Path

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, TensorDictBase
from tensordict._ops import _generated
from tensordict._ops._contract import Contract
from tensordict._ops._generated.casts import CastOps
from tensordict._ops._generated.elementwise import ElementwiseOps
from tensordict._ops._generated.inplace import InplaceOps
from tensordict._ops._generated.reductions import ReductionOps
from tensordict._ops.apply import ApplyMixin
from tensordict._ops.memmap import MemmapMixin

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_ops.py"
GENERATED = (Contract, ElementwiseOps, InplaceOps, ReductionOps, CastOps)


@pytest.fixture(scope="module")
def script():
    """The generator script, imported from the repository (it is not part of the package)."""
    spec = importlib.util.spec_from_file_location("generate_ops", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_checked_in_modules_are_what_the_script_writes(script):
    """tensordict/_ops/_generated/ holds exactly the script's output: run `make generate` if not."""
    assert script.stale() == []


def test_the_check_names_a_module_that_differs(script, tmp_path):
    """The check reports an edited module, a missing one and one the tables no longer make."""
    for name, text in script.render().items():
        (tmp_path / name).write_text(text)
    assert script.stale(tmp_path) == []
    (tmp_path / "casts.py").write_text("# edited by hand\n")
    (tmp_path / "inplace.py").unlink()
    (tmp_path / "old.py").write_text("")
    assert script.stale(tmp_path) == ["casts.py", "inplace.py", "old.py"]


def _stubs() -> dict:
    """name -> the declared stubs of that name in the generated classes."""
    found: dict = {}
    for cls in GENERATED:
        for name in _generated.PRIMITIVES:
            if name in vars(cls):
                found.setdefault(name, []).append(vars(cls)[name])
    return found


def test_every_declared_primitive_is_listed():
    """PRIMITIVES lists every stub of the generated classes (each of which only raises), and
    the ones they share with other mixins, which the contract declares."""
    stubs = _stubs()
    assert set(stubs) == set(_generated.PRIMITIVES)
    declared = {
        name
        for cls in GENERATED[1:]
        for name, value in vars(cls).items()
        if inspect.isfunction(value) and "raise NotImplementedError" in inspect.getsource(value)
    }
    shared = set(_generated.PRIMITIVES) - declared
    assert declared <= set(_generated.PRIMITIVES)
    assert shared == {"_fast_apply", "_stored_tensors"} and shared <= set(vars(Contract))


@pytest.mark.parametrize(
    "cls",
    [TensorDictBase, TensorDict, LazyStackedTensorDict, NonTensorStack, tensordict.TypedTensorDict],
    ids=lambda c: c.__name__,
)
def test_no_declared_primitive_hides_its_definition(cls):
    """Each class resolves every primitive to a real definition, never to a stub that raises."""
    stubs = _stubs()
    for name in _generated.PRIMITIVES:
        resolved = inspect.getattr_static(cls, name)
        assert all(resolved is not stub for stub in stubs[name]), f"{cls.__name__}.{name}"


def test_the_declarations_come_after_the_mixins_that_define_them():
    """In TensorDictBase's MRO, the common base of the stubs follows ApplyMixin and MemmapMixin."""
    mro = TensorDictBase.__mro__
    where = mro.index(Contract)
    assert mro.index(ApplyMixin) < where and mro.index(MemmapMixin) < where
    for cls in GENERATED[1:]:
        assert mro.index(cls) < where


def test_no_method_is_made_by_assigning_into_locals():
    """No class body of the package makes methods with ``locals()[name] = ...``: grep finds each."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tensordict").rglob("*.py")
        if "locals()[" in path.read_text()
    ]
    assert offenders == []


def test_the_tables_name_what_torch_has(script):
    """Each table names a torch function or dtype that exists, and the in-place gaps are real."""
    for name in (*script._UNARY, *script._BINARY, *script._PREDICATES):
        assert callable(getattr(torch, name)), name
    for name in script._UNARY:
        assert hasattr(torch.Tensor, f"{name}_"), name
    missing = {name for name in script._BINARY if not hasattr(torch.Tensor, f"{name}_")}
    assert missing == set(script._NO_INPLACE)
    for fn_name, *_ in script._PAIRWISE.values():
        assert callable(getattr(torch, fn_name)), fn_name
    for dtype in (*script._CASTS.values(), *script._QUANTIZED):
        assert isinstance(getattr(torch, dtype), torch.dtype), dtype


@pytest.mark.parametrize("name", ["exp", "exp_", "add", "sum", "float32", "isnan", "rsub"])
def test_generated_methods_pickle_by_reference(name):
    """A generated method pickles by name, so that ``td.map(TensorDict.exp)`` reaches workers."""
    method = getattr(TensorDict, name)
    assert pickle.loads(pickle.dumps(method)) is method
