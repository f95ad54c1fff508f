"""Shared test helpers: where the reference fixtures live, and copies of them."""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
REFERENCE = FIXTURES / "reference-0.15.3"


def _make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def fixture_copy(tmp_path):
    """Returns a function that copies one reference fixture case into tmp_path (shared/ is read-only)."""
    if not REFERENCE.is_dir():
        pytest.fail(
            f"the reference fixtures are missing: {REFERENCE} (shared/ must sit beside the project)"
        )

    def copy(case: str) -> Path:
        target = tmp_path / case
        shutil.copytree(REFERENCE / case, target)
        _make_writable(target)
        return target

    return copy


@pytest.fixture
def fixture_classes():
    """Imports the fixtures' class module (fixture_classes.Frame) from shared/fixtures."""
    sys.path.insert(0, str(FIXTURES))
    try:
        import fixture_classes

        yield fixture_classes
    finally:
        sys.path.remove(str(FIXTURES))
