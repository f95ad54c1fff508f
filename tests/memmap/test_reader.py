"""load_memmap and ``tensordict verify`` read format v1 with one reader, so they agree on every folder."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.cli import main

from conftest import CASES, DAMAGES


def _verify(folder, capsys, *flags) -> tuple:
    """``(exit status, problem and warning lines)`` of ``tensordict verify folder``, run in this process."""
    status = main(["verify", str(folder), *flags])
    out = capsys.readouterr().out.splitlines()
    return status, out[:-1]


def _load(folder, fixture_classes):
    """The loaded tensordict, or the exception load_memmap raised."""
    try:
        return TensorDict.load_memmap(folder)
    except (OSError, ValueError, RuntimeError) as err:
        return err


@pytest.mark.parametrize("case", CASES)
def test_verify_and_load_agree_on_every_reference_folder(
    fixture_copy, fixture_classes, case, capsys
):
    """Every reference folder loads and verify finds it sound; the entry loading drops is a
    warning (exit 0, or 1 with --strict)."""
    folder = fixture_copy(case)
    loaded = _load(folder, fixture_classes)
    assert not isinstance(loaded, Exception), loaded
    status, problems = _verify(folder, capsys)
    if case == "from_storage":
        assert status == 0 and len(problems) == 1
        assert "warning: " in problems[0] and "load_memmap drops it" in problems[0]
        assert "dropped" not in loaded.keys()
        assert _verify(folder, capsys, "--strict")[0] == 1
    else:
        assert status == 0, problems


@pytest.mark.parametrize("damage", DAMAGES)
def test_verify_fails_exactly_where_load_memmap_raises(
    fixture_copy, fixture_classes, damage, capsys
):
    """A damaged folder: load_memmap raises iff verify reports a problem (a dropped entry is a
    warning, which --strict counts too)."""
    case, spoil = DAMAGES[damage]
    folder = fixture_copy(case)
    spoil(folder)
    loaded = _load(folder, fixture_classes)
    status, problems = _verify(folder, capsys, "--strict")
    assert status == 1, f"verify --strict found {damage!r} sound"
    refusals = [p for p in problems if ": warning: " not in p]
    if isinstance(loaded, Exception):
        assert refusals, f"load_memmap raised {loaded!r} but verify reports only {problems}"
    else:
        assert not refusals, f"load_memmap loaded {damage!r} but verify reports {refusals}"


def test_a_folder_written_with_robust_key_false_verifies_and_loads(tmp_path, capsys):
    """Keys that need encoding, written unencoded (robust_key=False): verify is sound, load finds them."""
    source = {"a b": torch.zeros(2), "c:d": torch.ones(2), "sub dir": {"x y": torch.ones(2, 3)}}
    TensorDict(source, [2]).memmap(tmp_path / "f", robust_key=False)
    assert (tmp_path / "f" / "a b.memmap").exists()
    assert _verify(tmp_path / "f", capsys) == (0, [])
    loaded = TensorDict.load_memmap(tmp_path / "f")
    assert set(loaded.keys(True, True)) == {"a b", "c:d", ("sub dir", "x y")}
    assert torch.equal(loaded["sub dir", "x y"], torch.ones(2, 3))


def test_our_own_folders_verify_sound(tmp_path, capsys):
    """What this library writes (keys that need encoding, lazy stacks, long names) verifies sound."""
    data = {"obs": torch.randn(4, 3), "a/b": torch.arange(4), "k" * 300: torch.zeros(4)}
    TensorDict({**data, "sub": {"note": "hi", "x": torch.zeros(4, 2)}}, [4]).memmap(tmp_path / "td")
    members = [TensorDict({"a": torch.zeros(2, i + 1)}, [2]) for i in range(3)]
    TensorDict({"s": lazy_stack(members, 1)}, [2]).memmap(tmp_path / "lazy")
    for name in ("td", "lazy"):
        assert _verify(tmp_path / name, capsys) == (0, [])
        assert not isinstance(_load(tmp_path / name, None), Exception)


def test_legacy_unencoded_file_names_still_load(tmp_path):
    """A folder whose files use the raw key (written with robust_key=False) loads every entry."""
    TensorDict({"a b": torch.zeros(2), "c": torch.ones(2)}, [2]).memmap(
        tmp_path / "f", robust_key=False
    )
    assert (tmp_path / "f" / "a b.memmap").exists()
    assert sorted(TensorDict.load_memmap(tmp_path / "f").keys()) == ["a b", "c"]


def test_the_legacy_name_of_one_key_is_never_another_keys_file(tmp_path):
    """Key "%" (no file: no elements) beside key "" (file "%.memmap"): "%" is not read from "%.memmap"."""
    td = TensorDict(
        {"": torch.ones((), dtype=torch.bool), "%": torch.zeros(0, dtype=torch.bool)}, []
    )
    td.memmap(tmp_path / "f")
    loaded = TensorDict.load_memmap(tmp_path / "f")
    assert loaded[""].item() is True and loaded["%"].shape == torch.Size([0])
