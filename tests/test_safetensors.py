"""Safetensors files: to_safetensors / from_safetensors, byte for byte as the reference writes them.

Differential: it also runs under the reference's interpreter (``cd tests && REF/python
-m pytest test_safetensors.py``, with safetensors importable); the tests that must
differ say why and are skipped there (``ours_only``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorStack,
    TensorDict,
    UnbatchedTensor,
    from_safetensors,
    is_tensorclass,
    lazy_stack,
    to_safetensors,
)

from conftest import CASES, FIXTURES, ROOT, ours_only

pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

FILES = FIXTURES / "reference-0.15.3-safetensors"


@pytest.fixture
def st_cases(fixture_classes):
    """The tensordicts the reference's files were written from (tests/fixtures/.../cases.py)."""
    sys.path.insert(0, str(FILES))
    try:
        import cases

        yield cases
    finally:
        sys.path.remove(str(FILES))


def _leaves(td) -> dict:
    out = {}
    inner = td._tensordict if is_tensorclass(td) else td
    for key in inner.keys(True, True):
        value = inner.get(key)
        key = (key,) if isinstance(key, str) else key
        if isinstance(value, torch.Tensor):
            plain = value.as_subclass(torch.Tensor)
            out[key] = (str(value.dtype), list(plain.shape), plain.contiguous().view(-1).tolist())
        else:
            out[key] = ("value", value.data)
    return out


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert a.batch_size == b.batch_size
    assert list(a.names) == list(b.names)
    if isinstance(a, LazyStackedTensorDict):
        assert a.stack_dim == b.stack_dim
    assert _leaves(a) == _leaves(b)


def _metadata(path) -> dict:
    with safe_open(str(path), framework="pt") as file:
        return json.loads(file.metadata()["tensordict"])


# ---------------------------------------------------------------------- the reference's files
CASE_NAMES = ("nested", "lazy", "frame", "unbatched")


@pytest.mark.parametrize("case", CASE_NAMES)
def test_our_files_are_the_references_byte_for_byte(tmp_path, st_cases, case):
    """to_safetensors of each case writes exactly the file the reference wrote."""
    to_safetensors(st_cases.cases()[case], tmp_path / "ours.safetensors")
    assert (tmp_path / "ours.safetensors").read_bytes() == (
        FILES / f"{case}.safetensors"
    ).read_bytes()


@pytest.mark.parametrize("case", CASE_NAMES)
def test_the_references_files_load_as_what_was_saved(st_cases, case):
    """from_safetensors of the reference's file rebuilds the class, batch size, names and leaves."""
    loaded = from_safetensors(FILES / f"{case}.safetensors")
    _same(loaded, st_cases.cases()[case])


def test_an_unbatched_tensor_comes_back_unbatched(st_cases):
    """An UnbatchedTensor is flagged in the metadata and loads as one."""
    loaded = from_safetensors(FILES / "unbatched.safetensors")
    assert isinstance(loaded.get("table"), UnbatchedTensor)
    assert _metadata(FILES / "unbatched.safetensors")["root"]["keys"]["table"] == {
        "tensor": "table",
        "unbatched": True,
    }


def test_a_file_without_tensordict_metadata_loads_as_nested_keys():
    """A plain safetensors file (model weights) loads with names split on '.' and no batch size."""
    loaded = from_safetensors(FILES / "plain.safetensors")
    assert loaded.batch_size == torch.Size([])
    assert set(loaded.keys(True, True)) == {("0", "weight"), ("0", "bias"), ("1", "weight")}
    assert torch.equal(
        loaded["0", "weight"], load_file(str(FILES / "plain.safetensors"))["0.weight"]
    )


def test_the_metadata_describes_the_tree(tmp_path):
    """Tensors are named by their keys joined with '.'; the tree is in the 'tensordict' metadata."""
    td = TensorDict({"a": torch.zeros(2), "sub": {"b": torch.ones(2, 3)}}, [2])
    to_safetensors(td, tmp_path / "td.safetensors")
    assert set(load_file(str(tmp_path / "td.safetensors"))) == {"a", "sub.b"}
    assert _metadata(tmp_path / "td.safetensors") == {
        "version": 1,
        "root": {
            "batch_size": [2],
            "names": None,
            "keys": {
                "a": {"tensor": "a"},
                "sub": {
                    "td": {"batch_size": [2], "names": None, "keys": {"b": {"tensor": "sub.b"}}}
                },
            },
        },
    }


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("case", [c for c in CASES if c not in ("nested_tensor", "lazy_stacked")])
def test_fixture_cases_round_trip(tmp_path, fixture_copy, fixture_classes, case):
    """Each reference folder case that safetensors can hold comes back the same."""
    td = TensorDict.load_memmap(fixture_copy(case))
    to_safetensors(td, tmp_path / "td.safetensors")
    loaded = from_safetensors(tmp_path / "td.safetensors")
    assert type(loaded).__name__ == type(td).__name__
    assert loaded.batch_size == td.batch_size
    assert _leaves(loaded) == _leaves(td)


def test_a_lazy_stack_round_trips_with_its_stack_dim(tmp_path):
    """A lazy stack of members with the same keys comes back as a lazy stack along the same dim."""
    stack = lazy_stack(
        [
            TensorDict(a=torch.arange(3.0), batch_size=[3]),
            TensorDict(a=torch.zeros(3), batch_size=[3]),
        ],
        1,
    )
    to_safetensors(stack, tmp_path / "s.safetensors")
    loaded = from_safetensors(tmp_path / "s.safetensors")
    assert isinstance(loaded, LazyStackedTensorDict)
    assert loaded.stack_dim == 1
    assert torch.equal(loaded["a"], stack["a"])


def test_shared_memory_is_saved_as_copies(tmp_path):
    """Two keys viewing one storage (safetensors refuses that) are saved as separate tensors."""
    base = torch.arange(6.0)
    td = TensorDict(a=base, b=base[2:], c=base.view(2, 3))
    to_safetensors(td, tmp_path / "td.safetensors")
    loaded = from_safetensors(tmp_path / "td.safetensors")
    assert loaded["b"].tolist() == [2.0, 3.0, 4.0, 5.0]
    assert loaded["c"].shape == (2, 3)


def test_device_places_the_tensors(tmp_path):
    """device= loads the tensors there and sets the result's device."""
    to_safetensors(TensorDict(a=torch.zeros(2)), tmp_path / "td.safetensors")
    loaded = from_safetensors(tmp_path / "td.safetensors", device="cpu")
    assert loaded.device == torch.device("cpu")


# ---------------------------------------------------------------------- refusals
def test_a_nested_tensor_is_refused(tmp_path):
    """Only dense tensors: a nested tensor is a TypeError."""
    nt = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(TypeError, match="dense"):
        to_safetensors(TensorDict(nt=nt, batch_size=[2]), tmp_path / "x.safetensors")


def test_a_non_json_value_is_refused(tmp_path):
    """A non-tensor value JSON cannot hold: TypeError naming its type."""
    td = TensorDict(batch_size=[])
    td.set_non_tensor("s", {1, 2})
    with pytest.raises(TypeError, match="set"):
        to_safetensors(td, tmp_path / "x.safetensors")


def test_a_non_tensor_stack_is_refused(tmp_path):
    """A stack of non-tensor values: TypeError."""
    td = TensorDict(s=NonTensorStack("a", "b"), batch_size=[2])
    with pytest.raises(TypeError, match="non-tensor stack"):
        to_safetensors(td, tmp_path / "x.safetensors")


def test_members_with_different_keys_are_refused(tmp_path):
    """A lazy stack whose members have different keys: TypeError."""
    stack = lazy_stack(
        [TensorDict(a=torch.zeros(1)), TensorDict(a=torch.zeros(1), b=torch.ones(1))]
    )
    with pytest.raises(TypeError, match="different keys"):
        to_safetensors(stack, tmp_path / "x.safetensors")


def test_keys_that_join_to_one_name_are_refused(tmp_path):
    """ "a.b" and ("a", "b") would share the name 'a.b': ValueError."""
    td = TensorDict({"a.b": torch.zeros(1), "a": {"b": torch.ones(1)}})
    with pytest.raises(ValueError, match="a.b"):
        to_safetensors(td, tmp_path / "x.safetensors")


@ours_only  # differs from the reference: its message does not name the extra
def test_without_safetensors_the_error_names_the_extra(tmp_path):
    """With safetensors not importable: ImportError naming the extra to install."""
    script = (
        "import sys; sys.modules['safetensors'] = None\n"
        "import importlib.util as u; u.find_spec = lambda name, *a: None\n"
        "import torch, tensordict\n"
        "try:\n"
        "    tensordict.to_safetensors(tensordict.TensorDict(a=torch.zeros(1)), 'x')\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert "tensordict[safetensors]" in proc.stdout, proc.stderr


def test_safetensors_is_importable_here():
    """The test extra installs safetensors (a guard against silently skipping this file)."""
    assert importlib.util.find_spec("safetensors") is not None


@ours_only  # differs from the reference: safetensors raises its own SafetensorError there
def test_a_damaged_header_is_refused_naming_the_file(tmp_path):
    """A file whose header is not JSON, or whose record points past the end: ValueError naming it."""
    (tmp_path / "bad.safetensors").write_bytes((10).to_bytes(8, "little") + b"not json!!")
    with pytest.raises(ValueError, match="bad.safetensors"):
        from_safetensors(tmp_path / "bad.safetensors")
    header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    (tmp_path / "short.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header + b"\0" * 8
    )
    with pytest.raises(ValueError, match=r"short.safetensors.*'a'"):
        from_safetensors(tmp_path / "short.safetensors")


@ours_only  # differs from the reference: it makes one storage per tensor
def test_cpu_tensors_are_views_of_one_mapping_of_the_file(tmp_path):
    """On the CPU every tensor views one mapping of the whole file: nothing is copied."""
    to_safetensors(
        TensorDict(a=torch.zeros(8), b=torch.ones(3, dtype=torch.int16)), tmp_path / "t.st"
    )
    loaded = from_safetensors(tmp_path / "t.st")
    storages = {loaded[k].untyped_storage().data_ptr() for k in ("a", "b")}
    assert len(storages) == 1
    assert loaded["a"].untyped_storage().nbytes() == (tmp_path / "t.st").stat().st_size
    assert loaded["b"].tolist() == [1, 1, 1]


def _raw_file(path, records: dict, data: bytes, metadata: dict | None = None) -> None:
    """Writes a safetensors file by hand: 8-byte header length, JSON header, data."""
    header = dict(records)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)


def _f32(begin: int, end: int, count: int) -> dict:
    return {"dtype": "F32", "shape": [count], "data_offsets": [begin, end]}


@ours_only  # differs from the reference: it keeps one of the two names, or fails unnamed
@pytest.mark.parametrize("order", [("a", "a.b"), ("a.b", "a")])
def test_names_that_cannot_both_be_keys_are_refused_naming_both(tmp_path, order):
    """A file without our metadata holding "a" and "a.b" is refused, naming the file and both."""
    records = {order[0]: _f32(0, 4, 1), order[1]: _f32(4, 8, 1)}
    _raw_file(tmp_path / "clash.safetensors", records, b"\0" * 8)
    with pytest.raises(ValueError, match=r"clash.safetensors.*'a' and 'a.b'"):
        from_safetensors(tmp_path / "clash.safetensors")


def test_names_that_share_a_prefix_string_still_load(tmp_path):
    """ "a" and "ab.c" are no clash: only a whole dotted part makes a level."""
    _raw_file(tmp_path / "ok.safetensors", {"a": _f32(0, 4, 1), "ab.c": _f32(4, 8, 1)}, b"\0" * 8)
    loaded = from_safetensors(tmp_path / "ok.safetensors")
    assert set(loaded.keys(True, True)) == {"a", ("ab", "c")}


@ours_only  # differs from the reference: it loads two views of the same bytes
def test_entries_over_the_same_bytes_are_refused(tmp_path):
    """Two records whose byte ranges overlap are refused: they would alias each other."""
    records = {"a": _f32(0, 8, 2), "b": _f32(4, 12, 2)}
    _raw_file(tmp_path / "overlap.safetensors", records, b"\0" * 12)
    with pytest.raises(ValueError, match=r"overlap.safetensors.*'a' and 'b' overlap"):
        from_safetensors(tmp_path / "overlap.safetensors")
    records = {"a": _f32(0, 8, 2), "b": _f32(0, 8, 2)}
    _raw_file(tmp_path / "same.safetensors", records, b"\0" * 8)
    with pytest.raises(ValueError, match="overlap"):
        from_safetensors(tmp_path / "same.safetensors")


@ours_only  # differs from the reference: safetensors raises its own SafetensorError there
@pytest.mark.parametrize(
    ("records", "size", "match"),
    [
        ({"a": _f32(4, 8, 1)}, 8, "4 bytes before 'a'"),
        ({"a": _f32(0, 4, 1)}, 8, "cover 4 bytes of a 8-byte data section"),
        ({"a": _f32(0, 4, 1), "b": _f32(8, 12, 1)}, 12, "before 'b'"),
    ],
)
def test_holes_and_tails_in_the_data_are_refused(tmp_path, records, size, match):
    """The entries must tile the data section: a hole or a tail means a damaged header."""
    _raw_file(tmp_path / "holes.safetensors", records, b"\0" * size)
    with pytest.raises(ValueError, match=match):
        from_safetensors(tmp_path / "holes.safetensors")


@ours_only  # differs from the reference: it reads the claimed header before failing
def test_a_huge_header_length_is_refused_before_reading_it(tmp_path):
    """A header length past the format's 100 MB bound fails without allocating it.

    The file is sparse: 1 GiB of holes behind a header length of 1 GiB. A child process loads
    it and reports its peak resident memory, which must stay far below the claimed size.
    """
    path = tmp_path / "huge.safetensors"
    with open(path, "wb") as handle:
        handle.write((1 << 30).to_bytes(8, "little"))
        handle.truncate(8 + (1 << 30) + 16)
    script = (
        "import resource, sys\n"
        "from tensordict import from_safetensors\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    from_safetensors(sys.argv[1])\n"
        "except ValueError as err:\n"
        "    print('refused:', err)\n"
        "print('grew_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert "refused:" in proc.stdout and "huge.safetensors" in proc.stdout, proc.stderr
    assert "100000000" in proc.stdout
    grew = int(proc.stdout.split("grew_kib")[1])
    assert grew < 64 * 1024, f"loading grew the resident memory by {grew} KiB"
