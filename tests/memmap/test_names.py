"""Names of batch dimensions on disk: the ``"_names"`` field of a level's ``meta.json``.

The reference writes it when a dimension is named; ``tests/fixtures/reference-0.15.3-names``
holds what it wrote (see ``generate.py`` there), and the reference's interpreter loads
what we write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from tensordict import TensorDict, load_memmap
from tensordict.errors import MemmapFormatError

from conftest import FIXTURES, ours_only

NAMES = FIXTURES / "reference-0.15.3-names"
MANIFEST = json.loads((NAMES / "MANIFEST.json").read_text())


def _cases() -> dict:
    """The tensordicts the fixture's ``generate.py`` wrote, built with the package under test."""
    sys.path.insert(0, str(NAMES))
    try:
        import generate

        return generate.cases()
    finally:
        sys.path.remove(str(NAMES))
        sys.modules.pop("generate", None)


def _sub_names(td) -> dict:
    return {
        json.dumps([key] if isinstance(key, str) else list(key)): td.get(key).names
        for key in td.keys(True)
        if isinstance(td.get(key), TensorDict)
    }


def _keys(td) -> list:
    return sorted(json.dumps([k] if isinstance(k, str) else list(k)) for k in td.keys(True, True))


@pytest.mark.parametrize("case", sorted(MANIFEST))
def test_reference_folders_load_with_their_names(fixture_copy, case):
    """Each reference-written folder loads with its names, its sub-tensordicts' names and its keys."""
    td = load_memmap(fixture_copy(case, NAMES))
    info = MANIFEST[case]
    assert type(td).__name__ == info["class"]
    assert list(td.batch_size) == info["batch_size"]
    assert td.names == info["names"]
    assert _sub_names(td) == info["sub_names"]
    assert _keys(td) == info["keys"]


def test_a_reference_archive_loads_with_its_names(tmp_path):
    """The reference's save("x.tdz") of a named tensordict loads with the names of every level."""
    archive = tmp_path / "named.tdz"
    archive.write_bytes((NAMES / "named.tdz").read_bytes())
    td = load_memmap(archive)
    assert td.names == MANIFEST["named"]["names"]
    assert _sub_names(td) == MANIFEST["named"]["sub_names"]


@ours_only  # the reference wrote these files: the test checks that we write the same bytes
@pytest.mark.parametrize("case", sorted(MANIFEST))
def test_we_write_the_meta_json_the_reference_wrote(tmp_path, case):
    """memmap of each fixture's tensordict writes every meta.json byte for byte as the reference did."""
    _cases()[case].memmap(tmp_path / case)
    reference = NAMES / case
    for root, _, files in os.walk(reference):
        if "meta.json" in files:
            ours = tmp_path / case / os.path.relpath(root, reference) / "meta.json"
            assert ours.read_bytes() == (reference / root / "meta.json").read_bytes(), root


def test_names_survive_memmap_load_and_archives(tmp_path):
    """Names of every level round-trip through a folder and a .tdz archive; none are written when unnamed."""
    td = TensorDict(
        {"a": torch.zeros(2, 3), "sub": {"b": torch.zeros(2, 3, 4)}}, [2, 3], names=["env", None]
    )
    td["sub"].batch_size = [2, 3, 4]
    td["sub"].names = ["env", None, "joint"]
    for path in (tmp_path / "folder", tmp_path / "td.tdz"):
        td.memmap(path)
        loaded = load_memmap(path)
        assert loaded.names == ["env", None]
        assert loaded["sub"].names == ["env", None, "joint"]
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "plain")
    assert "_names" not in json.loads((tmp_path / "plain" / "meta.json").read_text())


def test_a_sub_tensordict_made_by_a_tuple_key_records_the_names(tmp_path):
    """make_memmap(("sub", "x")) on a named tensordict writes the new level's names too."""
    td = TensorDict({}, [2], names=["env"]).memmap(tmp_path / "td")
    td.make_memmap(("sub", "x"), (2, 3))
    assert load_memmap(tmp_path / "td")["sub"].names == ["env"]


def test_refresh_takes_the_names_of_a_rewritten_level(tmp_path):
    """memmap_refresh_ after another writer replaced the tree: the names are the folder's."""
    reader = TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "td")
    TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2], names=["env"]).memmap(
        tmp_path / "td"
    )
    assert reader.memmap_refresh_().names == ["env"]


@ours_only  # the reference writes the entry and silently leaves the names out
def test_an_entry_named_like_the_names_field_is_refused_at_a_named_level(tmp_path):
    """An entry "_names" beside named dims cannot be stored: refused before anything is written."""
    td = TensorDict({"_names": torch.zeros(2)}, [2], names=["env"])
    with pytest.raises(MemmapFormatError, match=r"'_names'.*rename the entry"):
        td.memmap(tmp_path / "td")
    assert not (tmp_path / "td").exists()
    td.names = None
    assert load_memmap(td.memmap(tmp_path / "td").saved_path)["_names"].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("names", "match"),
    [
        ("env", "expected a list of dimension names"),
        ([1, None], "expected a list of dimension names"),
        (["env"], "must name each of the 2 batch dimensions"),
        (["env", "env"], "repeat a name"),
    ],
)
def test_a_bad_names_field_raises_naming_the_file(tmp_path, names, match):
    """A "_names" that is not one distinct name or null per batch dim: MemmapFormatError naming meta.json."""
    TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).memmap(tmp_path / "td")
    path = tmp_path / "td" / "meta.json"
    meta = json.loads(path.read_text())
    meta["_names"] = names
    path.write_text(json.dumps(meta))
    with pytest.raises(MemmapFormatError, match=match) as info:
        load_memmap(tmp_path / "td")
    assert "meta.json" in str(info.value)


@ours_only  # the reference checks itself: this test runs its interpreter on our folders
def test_the_reference_loads_our_names(tmp_path, reference_python):
    """Our folders and archives of named tensordicts (and a named lazy stack) load with their names in the reference."""
    for case, td in _cases().items():
        td.memmap(tmp_path / case)
        td.memmap(tmp_path / f"{case}.tdz")
    script = f"""
import json
from tensordict import TensorDict
out = {{}}
for case in {sorted(MANIFEST)!r}:
    for path in (case, case + ".tdz"):
        td = TensorDict.load_memmap({str(tmp_path)!r} + "/" + path)
        subs = {{
            json.dumps([k] if isinstance(k, str) else list(k)): td.get(k).names
            for k in td.keys(True)
            if isinstance(td.get(k), TensorDict)
        }}
        out[path] = [td.names, subs]
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [reference_python, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the repository, whose tensordict would shadow the reference's
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    for case, info in MANIFEST.items():
        for path in (case, f"{case}.tdz"):
            assert seen[path] == [info["names"], info["sub_names"]], path


@pytest.mark.parametrize("error", [RuntimeError, ValueError])
def test_writing_a_path_like_key_with_robust_key_false_is_refused(tmp_path, error):
    """memmap(robust_key=False) of a key such as "a/b/c" raises (RuntimeError and ValueError), writing nothing."""
    td = TensorDict({"a/b/c": torch.randn(3, 4)})
    with pytest.raises(error):
        td.memmap(tmp_path / "td", robust_key=False)
    assert not (tmp_path / "td").exists() or not any((tmp_path / "td").iterdir())
