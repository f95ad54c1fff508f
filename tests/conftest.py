"""Shared test helpers: the reference fixtures kept in this repository, and copies of them."""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFERENCE = FIXTURES / "reference-0.15.3"

# The cases the reference wrote; a case missing on disk fails its tests, it never vanishes.
CASES = (
    "basic",
    "empty",
    "from_storage",
    "lazy_stacked",
    "nested_tensor",
    "non_tensor",
    "robust_keys",
    "tensorclass",
)
MANIFEST = json.loads((REFERENCE / "MANIFEST.json").read_text())
TD_CASES = tuple(name for name in CASES if MANIFEST[name]["class"] == "TensorDict")


def _make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def fixture_copy(tmp_path):
    """Returns a function that copies one reference fixture case into tmp_path.

    Loading may map files for writing, so tests never load the checked-in copy itself.
    """

    def copy(case: str) -> Path:
        source = REFERENCE / case
        if not source.is_dir():
            pytest.fail(f"the reference fixture {case!r} is missing: {source}")
        target = tmp_path / case
        shutil.copytree(source, target)
        _make_writable(target)
        return target

    return copy


@pytest.fixture
def fixture_classes():
    """Imports the fixtures' class module (``fixture_classes.Frame``) from tests/fixtures."""
    sys.path.insert(0, str(FIXTURES))
    try:
        import fixture_classes

        yield fixture_classes
    finally:
        sys.path.remove(str(FIXTURES))
