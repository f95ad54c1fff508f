"""Every docstring example of the package runs and prints what it shows.

Each module's examples run with the module's own names and the public API already
imported (``torch`` and every name of ``tensordict.__all__``), in a fresh temporary working folder, so
examples write memory-mapped folders under relative paths such as ``"buffer"``.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil

import pytest
import torch

import tensordict

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(tensordict.__path__, prefix="tensordict.")
    if info.name != "tensordict.__main__"
)


def test_the_package_has_modules_to_check():
    """The module list is not empty (a broken walk would silently check nothing)."""
    assert len(MODULES) >= 10
    assert "tensordict.memmap.tensor" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    """Runs every example of one module; fails listing each example that printed something else."""
    module = importlib.import_module(name)
    monkeypatch.chdir(tmp_path)
    namespace = dict(vars(module))
    namespace.update({"torch": torch, "os": os})
    namespace.update({n: getattr(tensordict, n) for n in tensordict.__all__})
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    for test in finder.find(module, name, globs=namespace):
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)


PUBLIC_CLASSES = (tensordict.TensorDictBase, tensordict.MemoryMappedTensor)


@pytest.mark.parametrize("cls", PUBLIC_CLASSES, ids=lambda c: c.__name__)
def test_every_public_method_is_documented_with_an_example(cls):
    """Each public method of TensorDictBase and MemoryMappedTensor says what it does and shows it."""
    names = [n for n in dir(cls) if not n.startswith("_")]
    if cls is tensordict.MemoryMappedTensor:
        names = [n for n in names if n in vars(cls)]  # torch.Tensor's own methods are torch's
    assert len(names) >= 10
    missing = []
    for name in names:
        doc = inspect.getdoc(getattr(cls, name)) or ""
        if not doc.strip() or "Examples:" not in doc:
            missing.append(name)
    assert not missing, f"{cls.__name__} methods without a summary and an example: {missing}"
