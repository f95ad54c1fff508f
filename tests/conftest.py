"""Shared test helpers: the reference fixtures kept in this repository, and copies of them."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests with fixed examples, so that a run is repeatable; locally
# hypothesis keeps exploring new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

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
ARCHIVES = FIXTURES / "reference-0.15.3-archive"


def _testing_ours() -> bool:
    """True when ``tensordict`` is this repository's package, not the reference run beside it."""
    import tensordict

    return Path(tensordict.__file__).resolve().is_relative_to(ROOT)


# Marks a test whose behaviour differs from the reference (its comment says how), so that
# the differential test files also pass when run under the reference's interpreter.
ours_only = pytest.mark.skipif(not _testing_ours(), reason="differs from the reference")
TD_CASES = tuple(name for name in CASES if MANIFEST[name]["class"] == "TensorDict")


def load_script(name: str):
    """The module ``scripts/<name>.py`` of the repository, imported from its file (scripts/ is
    no package; its own folder is on the path while it runs)."""
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def _make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def fixture_copy(tmp_path):
    """Returns a function that copies one reference fixture case into tmp_path.

    Loading may map files for writing, so tests never load the checked-in copy itself.
    """

    def copy(case: str, where: Path = REFERENCE) -> Path:
        source = where / case
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


# ---------------------------------------------------------------------- damaged folders
# Each damage spoils a copy of one reference case; the loader and ``tensordict verify``
# must agree on every one (tests/memmap/test_reader.py), and verify names each problem.
def _truncate(folder: Path) -> None:
    os.truncate(folder / "float32.memmap", 10)


def _remove(folder: Path) -> None:
    (folder / "nested" / "x.memmap").unlink()


def _bad_json(folder: Path) -> None:
    (folder / "nested" / "deeper" / "meta.json").write_text("{not json")


def _symlink_file(folder: Path) -> None:
    target = folder.parent / "int8.outside"
    (folder / "int8.memmap").rename(target)
    (folder / "int8.memmap").symlink_to(target)


def _symlink_folder(folder: Path) -> None:
    target = folder.parent / "nested.outside"
    (folder / "nested").rename(target)
    (folder / "nested").symlink_to(target)


def _bad_records(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    meta["int16"]["dtype"] = "torch.int17"
    meta["int32"]["shape"] = [3, -4]
    (folder / "meta.json").write_text(json.dumps(meta))


def _extra_member(folder: Path) -> None:
    (folder / "3").mkdir()


def _member_gap(folder: Path) -> None:
    shutil.rmtree(folder / "1")


def _nested_shape_file(folder: Path) -> None:
    os.truncate(folder / "nt.shape.memmap", 24)


def _set_meta(folder: Path, change) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    change(meta)
    (folder / "meta.json").write_text(json.dumps(meta))


def _bad_batch_size(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(shape=[4]))


def _bad_device(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(device="nowhere:7"))


def _bad_version(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(_format_version=2))


def _bad_class(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(_class={}))


def _unknown_class(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(_class="tensordict:Nope", _type="Nope"))


def _record_not_an_object(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(int8="tensor"))


def _huge_shape(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta["int8"].update(shape=[3, 2**63]))


def _sub_batch_size(folder: Path) -> None:
    meta_path = folder / "nested" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [2, 2]
    meta["x"]["shape"] = [2, 2]
    meta_path.write_text(json.dumps(meta))
    os.truncate(folder / "nested" / "x.memmap", 16)


def _symlink_meta(folder: Path) -> None:
    target = folder.parent / "meta.outside"
    (folder / "nested" / "meta.json").rename(target)
    (folder / "nested" / "meta.json").symlink_to(target)


def _bad_stack_dim(folder: Path) -> None:
    _set_meta(folder, lambda meta: meta.update(stack_dim="0"))


def _no_shape_file(folder: Path) -> None:
    (folder / "nt.shape.memmap").unlink()


def _missing_tensorclass_data(folder: Path) -> None:
    shutil.rmtree(folder / "_tensordict")


DAMAGES = {
    "truncated": ("basic", _truncate),
    "missing-file": ("basic", _remove),
    "bad-json": ("basic", _bad_json),
    "symlink-file": ("basic", _symlink_file),
    "symlink-folder": ("basic", _symlink_folder),
    "bad-records": ("basic", _bad_records),
    "extra-member": ("lazy_stacked", _extra_member),
    "member-gap": ("lazy_stacked", _member_gap),
    "nested-shape-file": ("nested_tensor", _nested_shape_file),
    "no-shape-file": ("nested_tensor", _no_shape_file),
    "bad-batch-size": ("basic", _bad_batch_size),
    "bad-device": ("basic", _bad_device),
    "bad-version": ("basic", _bad_version),
    "bad-class": ("basic", _bad_class),
    "unknown-class": ("basic", _unknown_class),
    "record-not-an-object": ("basic", _record_not_an_object),
    "huge-shape": ("basic", _huge_shape),
    "sub-batch-size": ("basic", _sub_batch_size),
    "symlink-meta": ("basic", _symlink_meta),
    "bad-stack-dim": ("lazy_stacked", _bad_stack_dim),
    "missing-tensorclass-data": ("tensorclass", _missing_tensorclass_data),
}
