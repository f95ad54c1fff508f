"""Every docstring example of the package runs and prints what it shows.

Each module's examples run with the module's own names and the public API already
imported (``torch`` and every name of ``tensordict.__all__``), in a fresh temporary working folder, so
examples write memory-mapped folders under relative paths such as ``"buffer"``.
"""

from __future__ import annotations

import doctest
import importlib
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
