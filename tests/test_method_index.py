"""``docs/methods.md``, the index of where each method lives, matches the package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "method_index.py"


def _script():
    spec = importlib.util.spec_from_file_location("method_index", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_method_index_is_up_to_date():
    """The checked-in page is what ``scripts/method_index.py`` writes now (``make generate``)."""
    page = (ROOT / "docs" / "methods.md").read_text()
    assert page == _script().render(), "docs/methods.md is out of date: run `make generate`"


def test_the_index_names_every_public_method_of_the_base():
    """Each public method of TensorDictBase has a row naming an existing file of the package."""
    from tensordict import TensorDictBase

    page = (ROOT / "docs" / "methods.md").read_text()
    for name in ("make_memmap_from_storage", "cos_", "float32", "keys", "reshape", "consolidate"):
        assert name in dir(TensorDictBase)
        row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
        path = row.split("|")[2].strip(" `")
        assert (ROOT / path).is_file(), row
