"""The ``tensordict`` command, each subcommand run as a real subprocess (``python -m tensordict``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.cli._scan import FolderScan

from conftest import CASES, DAMAGES, MANIFEST


def run_cli(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs ``python -m tensordict ARGS`` and returns the finished process (text output)."""
    command = [sys.executable, "-m", "tensordict", *map(str, args)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def info_json(path, depth="all") -> dict:
    """The JSON of ``tensordict info PATH --depth DEPTH`` (the whole tree by default here)."""
    proc = run_cli("info", path, "--json", "--depth", depth)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def leaves(node: dict, prefix: tuple = ()):
    """Yields (key tuple, node) for every tensor of a tree; a tensorclass's data level is transparent."""
    for child in node.get("entries", ()):
        if child["kind"] in ("tensor", "nested"):
            yield (*prefix, child["key"]), child
        elif node["kind"] == "tensorclass":
            yield from leaves(child, prefix)
        else:
            yield from leaves(child, (*prefix, child["key"]))


def manifest_leaves(case: dict) -> dict:
    """The manifest's tensors of one case, keyed like :func:`leaves` (lazy members first)."""
    if "members" in case:
        return {
            (str(i), *key): record
            for i, member in enumerate(case["members"])
            for key, record in manifest_leaves(member).items()
        }
    return {tuple(json.loads(key)): record for key, record in case["entries"].items()}


def disk_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder`` (the lock files hold no data and are skipped)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != "meta%lock")


# ---------------------------------------------------------------------- help and arguments
@pytest.mark.parametrize("command", [[], ["info"], ["verify"], ["demo"]])
def test_help_shows_examples(command):
    """Each --help exits 0 and shows examples."""
    proc = run_cli(*command, "--help")
    assert proc.returncode == 0
    assert "usage: tensordict" in proc.stdout
    assert "examples:" in proc.stdout
    assert f"tensordict {command[0] if command else 'info'} " in proc.stdout.split("examples:")[1]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["bogus"],
        ["info"],
        ["verify", "a", "b"],
        ["demo", "--rows", "many"],
        ["demo", "--workers", "0"],
        ["info", ".", "--depth", "0"],
        ["info", ".", "--depth", "deep"],
    ],
    ids=[
        "no-command",
        "unknown-command",
        "info-no-path",
        "verify-two-paths",
        "rows-not-int",
        "no-workers",
        "depth-zero",
        "depth-not-int",
    ],
)
def test_bad_arguments_are_usage_errors(args):
    """Bad arguments get argparse's usage error: exit 2, 'usage:' on stderr, no traceback."""
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr


@pytest.mark.parametrize("command", ["info", "verify"])
def test_missing_path_is_a_one_line_error(tmp_path, command):
    """A PATH that does not exist: one line on stderr, exit 1."""
    proc = run_cli(command, tmp_path / "nowhere")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "nowhere" in proc.stderr


@pytest.mark.parametrize("command", ["info", "demo"])
def test_path_to_a_file_is_a_one_line_error(tmp_path, command):
    """A path that is a file, not a folder: one line on stderr, exit 1."""
    path = tmp_path / "a-file"
    path.write_text("")
    proc = run_cli(*(["info", path] if command == "info" else ["demo", "--dir", path]))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "a-file" in proc.stderr


# ---------------------------------------------------------------------- reference fixtures
# What info prints for some fixtures, beyond keys and batch sizes: (line start, text in line).
TEXT = {
    "lazy_stacked": [
        ("", "LazyStackedTensorDict"),
        ("├── 0/", "TensorDict"),
        ("└── 2/", "batch_size=[]"),
    ],
    "tensorclass": [
        ("", "tensorclass fixture_classes.Frame"),
        ("└── _tensordict/", "batch_size=[4]"),
    ],
    "non_tensor": [("├── name", "NonTensorData  'hello'"), ("└── cfg", "'world'")],
    "nested_tensor": [("├── nt", "[2, *, 3] nested, 2 components")],
    "basic": [("└── empty", "(no file: no elements)"), ("│       └── y", "[3, 2, 2]")],
    "robust_keys": [("├── 'a/b'", "-> a%2Fb.memmap"), ("└── 'sub/dir'/", "TensorDict")],
    "from_storage": [
        ("└── dropped", "! MISSING"),
        ("missing (listed in meta.json", "dropped.memmap"),
    ],
}


@pytest.mark.parametrize("case", CASES)
def test_info_text_on_fixtures(fixture_copy, case):
    """info prints the tree of every reference fixture: classes, batch sizes, keys, marks."""
    folder = fixture_copy(case)
    proc = run_cli("info", folder, "--depth", "all")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{folder}  ")
    assert f"batch_size={MANIFEST[case]['batch_size']}".replace(" ", "") in lines[0].replace(
        " ", ""
    )
    for key in manifest_leaves(MANIFEST[case]):
        assert any(f"── {key[-1]} " in line or repr(key[-1]) in line for line in lines), key
    for start, text in TEXT.get(case, []):
        line = lines[0] if not start else next(line for line in lines if line.startswith(start))
        assert text in line, (start, text, proc.stdout)
    assert "on disk" in proc.stdout


@pytest.mark.parametrize("case", CASES)
def test_info_json_matches_the_manifest(fixture_copy, case):
    """info --json gives each tensor's dtype and shape as the manifest has them, and the bytes on disk."""
    folder = fixture_copy(case)
    report = info_json(folder)
    tree, expected = report["tree"], MANIFEST[case]
    assert tree["batch_size"] == expected["batch_size"]
    found = {key: node for key, node in leaves(tree) if not node["missing"]}
    assert set(found) == set(manifest_leaves(expected))
    for key, record in manifest_leaves(expected).items():
        node = found[key]
        assert node["dtype"] == record["dtype"]
        assert (node["kind"] == "nested") == record["nested"]
        if record["nested"]:
            assert node["components"] == len(record["shape"])
            assert node["shape"] == [len(record["shape"]), len(record["shape"][0])]
            assert node["shape_file"] == f"{key[-1]}.shape.memmap"
        else:
            assert node["shape"] == record["shape"]
            assert (
                node["missing"] is False
            )  # a tensor without elements has no file, and is not missing
    assert report["summary"]["bytes"] == tree["bytes"] == disk_bytes(folder)
    dropped = ["dropped.memmap"] if case == "from_storage" else []
    assert report["summary"]["missing"] == dropped
    assert report["summary"]["problems"] == []
    assert [p["path"] for p in report["summary"]["warnings"]] == [str(folder / d) for d in dropped]


@pytest.mark.parametrize("case", CASES)
def test_verify_fixtures(fixture_copy, case):
    """Every fixture verifies sound (exit 0); from_storage's 'dropped' entry has no file (by
    design, see the fixtures' README: load_memmap drops it), a warning; verify writes nothing."""
    folder = fixture_copy(case)
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}
    proc = run_cli("verify", folder)
    assert proc.returncode == 0, proc.stdout
    if case == "from_storage":
        assert proc.stdout.startswith(f"{folder / 'dropped.memmap'}: warning: entry 'dropped' ")
        assert proc.stdout.splitlines()[-1].startswith(f"OK: {folder} is sound, with 1 warning ")
    else:
        assert proc.stdout.startswith(f"OK: {folder} is sound (")
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")} == before


@pytest.mark.parametrize(
    ("case", "remove", "shown"),
    [
        ("from_storage", None, "dropped.memmap"),
        ("basic", "nested/x.memmap", "nested/x.memmap"),
        ("basic", "nested/deeper", "nested/deeper"),
        ("nested_tensor", "nt.memmap", "nt.memmap"),
    ],
    ids=["from-storage", "tensor-file", "entry-folder", "nested-file"],
)
def test_an_entry_without_its_file_is_a_warning(fixture_copy, case, remove, shown):
    """An entry listed in meta.json whose file or folder is missing (load_memmap drops it) is a
    warning: exit 0; with --strict, exit 1. It is named with its path either way."""
    folder = fixture_copy(case)
    if remove is not None:
        target = folder / remove
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    for strict in (False, True):
        proc = run_cli("verify", folder, *(["--strict"] if strict else []))
        lines = proc.stdout.splitlines()
        assert lines[0].startswith(f"{folder / shown}: warning: "), proc.stdout
        assert "load_memmap drops it" in lines[0]
        assert len(lines) == 2, proc.stdout
        if strict:
            assert proc.returncode == 1
            assert lines[-1].startswith(f"FAILED (--strict): {folder} has 1 warning")
        else:
            assert proc.returncode == 0
            assert lines[-1].startswith(f"OK: {folder} is sound, with 1 warning")


def test_strict_keeps_problems_failing_and_sound_folders_passing(fixture_copy):
    """--strict changes nothing on a folder without warnings: 0 when sound, 1 on a problem."""
    folder = fixture_copy("basic")
    assert run_cli("verify", folder, "--strict").returncode == 0
    DAMAGES["truncated"][1](folder)
    proc = run_cli("verify", folder, "--strict")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1].startswith(f"FAILED: {folder} has 1 problem")


# ---------------------------------------------------------------------- our own folders
def test_our_folders(tmp_path):
    """Folders written by this library: info describes them and verify finds them sound."""
    data = {
        "obs": torch.randn(4, 3),
        "a b/c": torch.arange(4),
        "k" * 300: torch.zeros(4),
        "sub": {"x": torch.zeros(4, 2, dtype=torch.bool), "note": "hello"},
        "e": torch.zeros(4, 0),
    }
    TensorDict(data, [4]).memmap(tmp_path / "td")
    members = [TensorDict({"a": torch.zeros(2, i + 1)}, [2]) for i in range(3)]
    TensorDict({"s": lazy_stack(members, 1)}, [2]).memmap(tmp_path / "lazy")
    for name in ("td", "lazy"):
        proc = run_cli("verify", tmp_path / name)
        assert proc.returncode == 0, proc.stdout
    report = info_json(tmp_path / "td")
    keys = {key for key, _ in leaves(report["tree"])}
    assert keys == {("obs",), ("a b/c",), ("k" * 300,), ("sub", "x"), ("e",)}
    assert report["tree"]["bytes"] == disk_bytes(tmp_path / "td")
    stack = info_json(tmp_path / "lazy")["tree"]["entries"][0]
    assert (stack["kind"], stack["batch_size"], len(stack["entries"])) == (
        "LazyStackedTensorDict",
        [2, 3],
        3,
    )


# ---------------------------------------------------------------------- info's depth
def _three_levels(path: Path) -> None:
    """A folder of three levels: a tensor, a note, a stack and episodes holding a sub-level."""
    members = [TensorDict({"a": torch.zeros(2)}, [2]) for _ in range(2)]
    episodes = {
        f"ep{i}": {"x": torch.full((2,), float(i)), "y": {"z": torch.ones(2)}} for i in range(3)
    }
    data = {"obs": torch.zeros(2, 3), "note": "hi", "stack": lazy_stack(members), **episodes}
    TensorDict(data, [2]).memmap(path)


def test_info_opens_only_the_top_level_unless_asked(tmp_path):
    """info lists the top level's entries and does not open its sub-levels (a damaged deeper
    meta.json goes unread), --depth all reads the whole tree, and verify checks it all."""
    _three_levels(tmp_path / "td")
    (tmp_path / "td" / "ep1" / "y" / "meta.json").write_text("{not json")
    proc = run_cli("info", tmp_path / "td")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("├── obs ") and "[2, 3]" in line for line in lines)
    assert any(line.startswith("├── note ") and "'hi'" in line for line in lines)
    for key in ("stack/", "ep0/", "ep1/", "ep2/"):
        line = next(line for line in lines if f"── {key} " in line)
        assert "(not opened)" in line and "!" not in line
    assert not any("── x" in line or "── y" in line for line in lines)
    assert "4 levels below depth 1 not opened" in lines[-1]
    full = run_cli("info", tmp_path / "td", "--depth", "all")
    assert "not opened" not in full.stdout and "1 problem:" in full.stdout
    assert run_cli("verify", tmp_path / "td").returncode == 1


def test_info_depth_shows_its_levels_as_the_whole_tree_does(tmp_path):
    """--depth 2: the levels shown are the nodes of the full scan; those below are marked
    unopened, listed in the summary, and counted in no total."""
    _three_levels(tmp_path / "td")
    shutil.rmtree(tmp_path / "td" / "ep2" / "y")
    full, shallow = info_json(tmp_path / "td"), info_json(tmp_path / "td", depth=2)
    assert (full["depth"], shallow["depth"]) == (None, 2)
    for node, whole in zip(shallow["tree"]["entries"], full["tree"]["entries"]):
        if node["key"] == "stack":
            assert [m["opened"] for m in node["entries"]] == [False, False]
            assert node["batch_size"] is None  # the members were not read
            continue
        children = node.pop("entries", [])
        whole_children = whole.pop("entries", [])
        if node["kind"] == "TensorDict":
            node.pop("bytes"), whole.pop("bytes")
        assert node == whole
        for child, whole_child in zip(children, whole_children):
            if child.get("opened") is False:
                assert child["kind"] == "TensorDict" and "entries" not in child
            else:
                assert child == whole_child
    summary = shallow["summary"]
    assert summary["unopened"] == ["stack/0", "stack/1", "ep0/y", "ep1/y"]
    assert summary["missing"] == full["summary"]["missing"] == ["ep2/y"]
    assert (summary["tensors"], full["summary"]["tensors"]) == (4, 8)
    assert full["summary"]["unopened"] == []


def test_a_linked_or_missing_sub_level_is_flagged_without_opening_it(fixture_copy):
    """At depth 1 a sub-level that is a symbolic link is a problem and a missing one a
    warning, as in a full scan; a sound one is listed unopened."""
    linked, missing = fixture_copy("basic"), fixture_copy("lazy_stacked")
    DAMAGES["symlink-folder"][1](linked)
    scan = FolderScan(linked, depth=1)
    assert [p for p, m in scan.problems if "symbolic link" in m] == [str(linked / "nested")]
    _three_levels(missing / "td")
    shutil.rmtree(missing / "td" / "ep0")
    scan = FolderScan(missing / "td", depth=1)
    assert scan.sound and [p for p, _ in scan.warnings] == [str(missing / "td" / "ep0")]
    assert scan.summary()["unopened"] == ["stack", "ep1", "ep2"]


# ---------------------------------------------------------------------- damaged folders
# What verify must print for some of the damages of conftest.DAMAGES.
EXPECTED = {
    "truncated": ["float32.memmap", "10 bytes", "48"],
    "bad-json": ["nested/deeper/meta.json", "not valid JSON"],
    "symlink-file": ["int8.memmap", "symbolic link"],
    "symlink-folder": ["nested", "symbolic link"],
    "bad-records": ["'int16'", "torch.int17", "'int32'", "[3, -4]"],
    "extra-member": ["lazy_stacked/3", "not a valid TensorDict folder"],
    "member-gap": ["gaps", "members [1] are missing"],
    "nested-shape-file": ["nt.shape.memmap", "24 bytes"],
}


@pytest.mark.parametrize("damage", EXPECTED)
def test_verify_names_each_problem(fixture_copy, damage):
    """verify prints each problem with its path, then FAILED, and exits 1."""
    case, spoil = DAMAGES[damage]
    expected = EXPECTED[damage]
    folder = fixture_copy(case)
    spoil(folder)
    proc = run_cli("verify", folder)
    assert proc.returncode == 1
    problems = proc.stdout.splitlines()[:-1]
    assert problems and all(line.startswith(str(folder)) for line in problems)
    for text in expected:
        assert text in proc.stdout, (text, proc.stdout)
    assert proc.stdout.splitlines()[-1].startswith(f"FAILED: {folder} has {len(problems)} problem")


def test_info_prints_what_it_can_on_a_damaged_folder(fixture_copy):
    """info on a folder with many problems: exit 0, sound entries listed, problems marked."""
    folder = fixture_copy("basic")
    for damage in ("truncated", "missing-file", "bad-json", "symlink-file", "bad-records"):
        DAMAGES[damage][1](folder)
    proc = run_cli("info", folder, "--depth", "all")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    for key in ("float64", "bfloat16", "uint8", "scalarish"):
        line = next(line for line in lines if f"── {key} " in line)
        assert "!" not in line
    for key in ("float32", "int8", "int16", "int32", "x", "deeper/"):
        line = next(
            line for line in lines if f"── {key} " in line or line.rstrip().endswith(f"── {key}")
        )
        assert "!" in line, line
    assert "5 problems:" in proc.stdout
    report = info_json(folder)
    assert len(report["summary"]["problems"]) == 5
    assert report["summary"]["missing"] == ["nested/x.memmap"]
    assert [w["path"] for w in report["summary"]["warnings"]] == [str(folder / "nested/x.memmap")]


@pytest.mark.parametrize("command", ["info", "verify"])
def test_unreadable_root_meta_is_a_one_line_error(fixture_copy, command):
    """A root meta.json that is not JSON: one line on stderr, exit 1, for info and verify."""
    folder = fixture_copy("basic")
    (folder / "meta.json").write_text("[1,")
    proc = run_cli(command, folder)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "not valid JSON" in proc.stderr


# ---------------------------------------------------------------------- demo
def test_demo(tmp_path):
    """demo fills, samples, reloads and checks a buffer, prints its summary; the folder verifies."""
    proc = run_cli("demo", "--rows", 2000, "--workers", 2, "--dir", tmp_path / "demo", timeout=180)
    assert proc.returncode == 0, proc.stderr
    for label in ("rows", "entries", "on disk", "write", "attach", "sample", "reload", "checked"):
        assert any(line.startswith(f"  {label} ") for line in proc.stdout.splitlines()), label
    assert "2,000 transitions" in proc.stdout
    assert "rows/s" in proc.stdout
    assert "worker0_stats" in proc.stdout and "worker1_stats" in proc.stdout
    buffer = tmp_path / "demo" / "buffer"
    assert run_cli("verify", buffer).returncode == 0
    loaded = TensorDict.load_memmap(buffer)
    assert loaded.batch_size == torch.Size([2000])
    owners = loaded["worker0_stats"][:, 0] + loaded["worker1_stats"][:, 0]
    assert torch.equal(owners, torch.ones(2000))
