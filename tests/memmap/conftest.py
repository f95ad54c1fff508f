"""Fixtures shared by the memmap tests (the constants and fixture copies are in ``tests/conftest.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import _children

REPOSITORY = Path(__file__).resolve().parents[2]
REF_PYTHON_VARIABLE = "TENSORDICT_REF_PYTHON"
REF_PYTHON_BESIDE = REPOSITORY / ".venv-ref" / "bin" / "python"


@pytest.fixture
def children():
    """The module of functions that spawned child processes run (``tests/memmap/_children.py``).

    Spawned children import it by its module name, so each function's code runs in
    the child as written there.
    """
    return _children


@pytest.fixture
def reference_python() -> str:
    """The path of the reference's interpreter, for differential checks in a subprocess.

    ``$TENSORDICT_REF_PYTHON`` when it names an executable file, else
    ``.venv-ref/bin/python`` at the repository root; the test is skipped, naming
    both, when neither is there.
    """
    configured = os.environ.get(REF_PYTHON_VARIABLE)
    candidates = ([Path(configured)] if configured else []) + [REF_PYTHON_BESIDE]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = repr(configured) if configured else "not set"
    pytest.skip(
        f"no reference interpreter: ${REF_PYTHON_VARIABLE} is {found} and "
        f"{REF_PYTHON_BESIDE} does not exist"
    )
