"""Type annotations: every public function says its types, and every annotation resolves at run time.

The package ships ``py.typed``, so type checkers and ``typing.get_type_hints`` read these
annotations; a name that an annotation uses but its module does not import would only fail
there, long after the import, which is what these tests catch.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import pkgutil
import typing

import pytest
import torch

import tensordict
from tensordict import TensorDict
from tensordict._typing import T
from tensordict.utils import DeviceType, IndexType

# Every module is covered; a module may be listed here only while it is being annotated
# on another branch. The lists only shrink.
NOT_YET_COVERED_PACKAGES: tuple[str, ...] = ()
NOT_YET_COVERED: frozenset[str] = frozenset()

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(tensordict.__path__, prefix="tensordict.")
    if info.name != "tensordict.__main__"
)
COVERED = [
    name
    for name in MODULES
    if name not in NOT_YET_COVERED and not name.startswith(NOT_YET_COVERED_PACKAGES)
]


def _own_functions(owner, qualname: str, module: str):
    """``(qualname, function, is_static)`` for each function defined in the body of ``owner``.

    Properties give their getter, setter and deleter; class and static methods their function;
    nested classes are walked too. Functions attached from elsewhere are left out: they belong
    to the module that defines them.
    """
    prefix = f"{qualname}." if qualname else ""
    for name, value in vars(owner).items():
        if isinstance(value, type):
            if value.__module__ == module and value.__qualname__ == prefix + name:
                yield from _own_functions(value, value.__qualname__, module)
            continue
        if isinstance(value, property):
            parts = [value.fget, value.fset, value.fdel]
        elif isinstance(value, (classmethod, staticmethod)):
            parts = [value.__func__]
        else:
            parts = [value]
        for part in parts:
            func = inspect.unwrap(part) if part is not None else None
            if not inspect.isfunction(func) or func.__module__ != module:
                continue
            if func.__qualname__ == prefix + name:
                yield prefix + name, func, isinstance(value, staticmethod)


def _is_public(qualname: str) -> bool:
    """Public names and ``__init__``, in public classes only; other dunders are the language's."""
    *classes, name = qualname.split(".")
    if any(c.startswith("_") for c in classes):
        return False
    return name == "__init__" or not name.startswith("_")


def _missing_annotations(func, in_class: bool) -> list[str]:
    """The parameters of ``func`` without an annotation, and ``return`` if it has none."""
    params = list(inspect.signature(func, follow_wrapped=False).parameters.values())
    if in_class and params and params[0].name in ("self", "cls"):
        params = params[1:]
    missing = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if func.__name__ != "__init__" and "return" not in func.__annotations__:
        missing.append("return")
    return missing


def test_the_count_walks_the_package():
    """The module walk finds the modules (a broken walk would count nothing and pass)."""
    assert "tensordict._td" in COVERED and "tensordict._ops._generated.elementwise" in COVERED
    assert NOT_YET_COVERED <= set(MODULES), sorted(NOT_YET_COVERED - set(MODULES))


def test_every_public_function_of_the_covered_modules_is_annotated():
    """Each public function and method annotates every parameter and its return type."""
    checked = 0
    lacking = []
    for name in COVERED:
        module = importlib.import_module(name)
        for qualname, func, static in _own_functions(module, "", name):
            if not _is_public(qualname):
                continue
            checked += 1
            missing = _missing_annotations(func, "." in qualname and not static)
            if missing:
                lacking.append(f"{name}.{qualname}: {missing}")
    assert checked > 400
    assert lacking == []


def _public_callables():
    """``(name, function)`` for the public functions and methods reachable from ``tensordict``."""
    for name in tensordict.__all__:
        obj = getattr(tensordict, name)
        if inspect.isclass(obj):
            for attr in dir(obj):
                if attr.startswith("_"):
                    continue
                value = inspect.getattr_static(obj, attr, None)
                if isinstance(value, property):
                    parts = [value.fget, value.fset]
                elif isinstance(value, (classmethod, staticmethod)):
                    parts = [value.__func__]
                else:
                    parts = [value]
                for part in parts:
                    func = inspect.unwrap(part) if part is not None else None
                    if inspect.isfunction(func) and func.__module__.startswith("tensordict"):
                        yield f"{name}.{attr}", func
        elif inspect.isfunction(inspect.unwrap(obj)):
            yield name, obj


def test_every_public_annotation_resolves():
    """typing.get_type_hints evaluates the annotations of every public function and method."""
    failures = []
    count = 0
    for name, func in _public_callables():
        count += 1
        try:
            typing.get_type_hints(func)
        except Exception as err:  # each failure is listed, whatever its kind
            failures.append(f"{name}: {type(err).__name__}: {err}")
    assert count > 500
    assert failures == []


def test_methods_that_return_their_own_class_say_so():
    """``clone``, ``to`` and the generated math return ``T``, the class of ``self``."""
    for method in (TensorDict.clone, TensorDict.to, TensorDict.abs, TensorDict.sum):
        hints = typing.get_type_hints(method)
        assert hints["self"] is T
        assert hints["return"] is T or T in typing.get_args(hints["return"])


def test_the_aliases_of_tensordict_utils_are_the_annotations_own():
    """``tensordict.utils.DeviceType`` and ``IndexType`` are what the methods are annotated with."""
    assert typing.get_type_hints(TensorDict.cuda)["device"] == DeviceType | None
    assert typing.get_type_hints(TensorDict.set_at_)["index"] == IndexType
    assert torch.device in typing.get_args(DeviceType)


@pytest.mark.parametrize("name", ["tensordict._ops._generated.elementwise", "tensordict._td"])
def test_annotations_are_strings_until_asked_for(name):
    """Modules postpone their annotations (``from __future__ import annotations``): nothing runs at import."""
    module = importlib.import_module(name)
    assert module.annotations is __future__.annotations
    functions = [func for _, func, _ in _own_functions(module, "", name)]
    assert functions
    assert all(isinstance(ann, str) for func in functions for ann in func.__annotations__.values())
