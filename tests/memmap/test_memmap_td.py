"""The memmap family on TensorDict: memmap, memmap_, memmap_like, load_memmap, refresh, pickling, format."""

from __future__ import annotations

import itertools
import json
import os
import pickle
import warnings
from concurrent.futures import Future

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensordict import MemoryMappedTensor, TensorDict, TensorDictBase

DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
]


def _sample(shape, dtype, seed: int = 0) -> torch.Tensor:
    """A deterministic tensor of ``shape`` and ``dtype`` with varied values."""
    gen = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    low = 0 if dtype is torch.uint8 else -100
    return torch.randint(low, 100, shape, generator=gen).to(dtype)


def _source() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(12.0).reshape(3, 4),
            "b": torch.arange(3),
            "sub": {"c": torch.ones(3, 2, dtype=torch.bool), "deep": {"d": torch.zeros(3)}},
        },
        [3],
    )


def _leaves(td) -> dict:
    return {k: td.get(k) for k in td.keys(True, True)}


def _assert_same(got, expected) -> None:
    """Same batch size, same leaf keys, and each leaf with the same dtype, shape and values."""
    assert got.batch_size == expected.batch_size
    left, right = _leaves(got), _leaves(expected)
    assert set(left) == set(right)
    for key, value in right.items():
        assert left[key].dtype == value.dtype, key
        assert left[key].shape == value.shape, key
        assert torch.equal(left[key], value), key


# ------------------------------------------------------------------ memmap / memmap_
def test_memmap_with_a_prefix_returns_a_locked_memory_mapped_copy(tmp_path):
    """memmap(prefix): locked, memory-mapped, equal values, saved_path set; the original is untouched."""
    td = _source()
    out = td.memmap(tmp_path / "td")
    assert out is not td
    assert out.is_memmap() and out.is_locked
    assert out.saved_path == str(tmp_path / "td")
    assert out["sub"].saved_path == str(tmp_path / "td" / "sub")
    assert all(isinstance(v, MemoryMappedTensor) for v in _leaves(out).values())
    _assert_same(out, _source())
    assert not td.is_locked and not td.is_memmap()
    assert not any(isinstance(v, MemoryMappedTensor) for v in _leaves(td).values())
    out["a"][0, 0] = 100.0
    assert td["a"][0, 0] == 0.0


def test_memmap_without_prefix_uses_shared_memory_and_has_no_saved_path(tmp_path):
    """memmap(): memory-mapped in anonymous shared memory, saved_path None, locked, values equal."""
    td = _source()
    out = td.memmap()
    assert out.is_memmap() and out.is_locked
    assert out.saved_path is None and out["sub"].saved_path is None
    assert all(isinstance(v, MemoryMappedTensor) for v in _leaves(out).values())
    assert all(v.is_shared() for v in _leaves(out).values())
    _assert_same(out, _source())
    assert not td.is_memmap()


def test_memmap_in_place_keeps_the_identity_of_the_tensordict_and_sub_tensordicts(tmp_path):
    """memmap_() returns the tensordict itself; its sub-tensordicts are the same objects, now memory-mapped."""
    td = _source()
    sub, deep = td["sub"], td["sub", "deep"]
    out = td.memmap_(tmp_path / "td")
    assert out is td and td["sub"] is sub and td["sub", "deep"] is deep
    assert td.is_memmap() and td.is_locked and sub.is_memmap()
    assert deep.saved_path == str(tmp_path / "td" / "sub" / "deep")
    _assert_same(td, _source())


def test_memmap_in_place_to_another_folder_refuses_leaves_mapped_elsewhere(tmp_path):
    """memmap_(other) of a tensordict mapped in a folder raises RuntimeError; the folders are kept."""
    td = _source().memmap_(tmp_path / "first")
    with pytest.raises(RuntimeError, match="copy_existing=True"):
        td.memmap_(tmp_path / "second")
    assert not (tmp_path / "second" / "a.memmap").exists()
    assert str(td.saved_path) == str(tmp_path / "first")
    _assert_same(TensorDict.load_memmap(tmp_path / "first"), _source())


def test_memmap_in_place_with_copy_existing_copies_into_the_new_folder(tmp_path):
    """memmap_(other, copy_existing=True) writes every leaf to the new folder, the old one kept."""
    td = _source().memmap_(tmp_path / "first")
    out = td.memmap_(tmp_path / "second", copy_existing=True)
    assert out is td and td.is_memmap()
    assert td["a"].filename == str(tmp_path / "second" / "a.memmap")
    _assert_same(TensorDict.load_memmap(tmp_path / "second"), _source())
    _assert_same(TensorDict.load_memmap(tmp_path / "first"), _source())


def test_memmap_in_place_without_prefix_or_from_shared_memory_needs_no_copy_existing(tmp_path):
    """memmap_() again is a no-op, and a tensordict in shared memory moves to a folder freely."""
    td = _source().memmap_(tmp_path / "first")
    leaf = td["a"]
    assert td.memmap_() is td and td["a"] is leaf
    shared = _source().memmap_()
    shared.memmap_(tmp_path / "second")
    assert shared["a"].filename == str(tmp_path / "second" / "a.memmap")


def test_memmap_with_threads_gives_the_same_result(tmp_path):
    """memmap(num_threads=4) writes the same folder content as num_threads=0."""
    td = TensorDict({f"k{i}": _sample((3, 5), DTYPES[i % 10], i) for i in range(12)}, [3])
    td["sub"] = {"x": torch.arange(3)}
    one = td.memmap(tmp_path / "one")
    four = td.memmap(tmp_path / "four", num_threads=4)
    _assert_same(four, one)
    _assert_same(TensorDict.load_memmap(tmp_path / "four"), td)
    for name in ("meta.json", "k3.memmap", "sub/meta.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "four" / name).read_bytes()


@pytest.mark.parametrize("method", ["memmap", "memmap_", "memmap_like"])
def test_return_early_gives_a_future_whose_result_is_the_tensordict(tmp_path, method):
    """return_early=True returns a future-like object; .result() is the memory-mapped tensordict."""
    td = _source()
    future = getattr(td, method)(tmp_path / "td", num_threads=2, return_early=True)
    assert isinstance(future, Future) or hasattr(future, "result")
    out = future.result()
    assert isinstance(out, TensorDict) and out.is_memmap()
    if method == "memmap_":
        assert out is td


def test_existsok_false_on_an_existing_file_raises_file_exists_error(tmp_path):
    """A second memmap(existsok=False) into the same folder raises FileExistsError naming the file."""
    _source().memmap(tmp_path / "td")
    with pytest.raises(FileExistsError, match=r"\.memmap"):
        _source().memmap(tmp_path / "td", existsok=False)
    _assert_same(TensorDict.load_memmap(tmp_path / "td"), _source())


def test_memmap_like_gives_zeros_with_the_same_layout(tmp_path):
    """memmap_like: same keys, batch size, shapes and dtypes, all zeros, locked and memory-mapped."""
    td = _source()
    like = td.memmap_like(tmp_path / "td")
    assert like.is_memmap() and like.is_locked
    expected = td.apply(torch.zeros_like)
    _assert_same(like, expected)
    _assert_same(TensorDict.load_memmap(tmp_path / "td"), expected)
    shm = td.memmap_like()
    _assert_same(shm, expected)
    assert shm.saved_path is None


def test_memmap_like_of_an_expanded_template_writes_rows(tmp_path):
    """The replay-buffer pattern: memmap_like an expanded template, then write rows by index."""
    template = TensorDict({"obs": torch.zeros(3), "r": torch.zeros((), dtype=torch.int64)}, [])
    buffer = template.expand(1000).memmap_like(tmp_path / "buf")
    assert buffer.batch_size == (1000,) and buffer["obs"].shape == (1000, 3)
    buffer[10] = TensorDict({"obs": torch.ones(3), "r": torch.tensor(5)}, [])
    loaded = TensorDict.load_memmap(tmp_path / "buf")
    assert (loaded["obs"][10] == 1).all() and loaded["r"][10] == 5
    assert (loaded["obs"][11] == 0).all()


# ------------------------------------------------------------------ load_memmap
@pytest.mark.parametrize(
    "loader",
    [
        "TensorDict.load_memmap",
        "TensorDictBase.load_memmap",
        "TensorDict.load",
        "instance.load_memmap",
    ],
)
def test_load_memmap_round_trips_nested_tensordicts(tmp_path, loader):
    """The class method (on TensorDict and TensorDictBase), the load alias and the instance form all load the folder."""
    _source().memmap(tmp_path / "td")
    fn = {
        "TensorDict.load_memmap": TensorDict.load_memmap,
        "TensorDictBase.load_memmap": TensorDictBase.load_memmap,
        "TensorDict.load": TensorDict.load,
        "instance.load_memmap": TensorDict({}, []).load_memmap,
    }[loader]
    out = fn(tmp_path / "td")
    assert type(out) is TensorDict and type(out["sub"]) is TensorDict
    _assert_same(out, _source())
    assert out.is_memmap() and not out.is_locked


def test_save_is_an_alias_of_memmap(tmp_path):
    """save(prefix) writes the same folder as memmap(prefix) and returns a memory-mapped tensordict."""
    out = _source().save(tmp_path / "saved")
    assert out.is_memmap() and out.saved_path == str(tmp_path / "saved")
    _source().memmap(tmp_path / "mm")
    assert (tmp_path / "saved" / "meta.json").read_bytes() == (
        tmp_path / "mm" / "meta.json"
    ).read_bytes()
    _assert_same(TensorDict.load(tmp_path / "saved"), _source())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_round_trips(tmp_path, dtype):
    """Each dtype keeps its values, shape and dtype through memmap and load_memmap (0-d and zero-size too)."""
    td = TensorDict(
        {
            "x": _sample((4, 3, 2), dtype, 1),
            "scalar_rows": _sample((4,), dtype, 2),
            "empty": _sample((4, 0, 5), dtype),
            "sub": {"y": _sample((4, 1), dtype, 3)},
        },
        [4],
    )
    td.memmap(tmp_path / "td")
    _assert_same(TensorDict.load_memmap(tmp_path / "td"), td)


def test_zero_dim_and_zero_size_tensordicts_round_trip(tmp_path):
    """Batch size [] with 0-d leaves, and batch size [0], both load back equal."""
    scalar = TensorDict(
        {"a": torch.tensor(3.5), "b": torch.tensor(True), "s": {"c": torch.tensor(7)}}, []
    )
    scalar.memmap(tmp_path / "scalar")
    _assert_same(TensorDict.load_memmap(tmp_path / "scalar"), scalar)
    empty = TensorDict({"a": torch.zeros(0, 3), "s": {"c": torch.zeros(0, dtype=torch.int8)}}, [0])
    empty.memmap(tmp_path / "empty")
    _assert_same(TensorDict.load_memmap(tmp_path / "empty"), empty)
    nothing = TensorDict({}, [2, 3])
    nothing.memmap(tmp_path / "nothing")
    loaded = TensorDict.load_memmap(tmp_path / "nothing")
    assert loaded.batch_size == (2, 3) and list(loaded.keys()) == []


def test_load_memmap_opens_without_copying(tmp_path):
    """Two loads of the same folder share bytes: a write through one is read by the other."""
    _source().memmap(tmp_path / "td")
    one = TensorDict.load_memmap(tmp_path / "td")
    two = TensorDict.load_memmap(tmp_path / "td")
    one["sub", "deep", "d"][1] = 9.0
    assert two["sub", "deep", "d"][1] == 9.0


def test_load_memmap_in_place_fills_the_tensordict(tmp_path):
    """load_memmap_(prefix) loads the folder into the tensordict itself and returns it."""
    _source().memmap(tmp_path / "td")
    td = TensorDict({}, [3])
    out = td.load_memmap_(tmp_path / "td")
    assert out is td and td.is_memmap()
    assert td.saved_path == str(tmp_path / "td")
    _assert_same(td, _source())


def test_is_memmap_is_false_after_setting_a_plain_tensor_into_a_loaded_tensordict(tmp_path):
    """A loaded (unlocked) tensordict stops being memory-mapped when a plain tensor is set into it."""
    _source().memmap(tmp_path / "td")
    td = TensorDict.load_memmap(tmp_path / "td")
    assert td.is_memmap()
    td["z"] = torch.zeros(3)
    assert not td.is_memmap()
    other = TensorDict.load_memmap(tmp_path / "td")
    other["sub", "c"] = torch.zeros(3, 2, dtype=torch.bool)
    assert not other.is_memmap() and not other["sub"].is_memmap()


def test_load_is_deprecated(tmp_path):
    """load_ warns and loads like load_memmap_."""
    TensorDict(a=torch.ones(2), batch_size=[2]).memmap(tmp_path / "td")
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        td.load_(tmp_path / "td")
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    assert td["a"].tolist() == [1.0, 1.0]


# ------------------------------------------------------------------ memmap_refresh_
def test_memmap_refresh_sees_entries_added_by_another_tensordict(tmp_path):
    """Entries added with make_memmap and make_memmap_from_tensor (top level and nested) appear after refresh."""
    writer = _source().memmap(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td")
    writer.make_memmap("x", (3, 2)).fill_(2.0)
    writer.make_memmap_from_tensor(("sub", "y"), torch.arange(3))
    writer.make_memmap_from_tensor(("new", "z"), torch.ones(3, 4))
    assert "x" not in reader.keys()
    assert reader.memmap_refresh_() is reader
    assert (reader["x"] == 2).all()
    assert torch.equal(reader["sub", "y"], torch.arange(3))
    assert torch.equal(reader["new", "z"], torch.ones(3, 4))
    writer["x"][0] = 5.0
    assert (reader["x"][0] == 5).all()


def test_memmap_refresh_keeps_the_identity_of_the_tensordict_and_its_sub_tensordicts(tmp_path):
    """After a refresh that changes every level, the same td and sub-td objects are returned and used."""
    writer = _source().memmap(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td")
    sub, deep = reader["sub"], reader["sub", "deep"]
    writer.make_memmap("x", (3,))
    writer.make_memmap(("sub", "y"), (3,))
    writer.make_memmap(("sub", "deep", "z"), (3,))
    assert reader.memmap_refresh_() is reader
    assert reader["sub"] is sub and reader["sub", "deep"] is deep
    assert "z" in deep.keys() and "y" in sub.keys()


def test_memmap_refresh_drops_entries_removed_from_the_folder(tmp_path):
    """A folder rewritten without "b" and "sub": the reader loses them on refresh and keeps "a"."""
    _source().memmap(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td")
    TensorDict({"a": torch.full((3, 4), 8.0)}, [3]).memmap(tmp_path / "td")
    reader.memmap_refresh_()
    assert set(reader.keys()) == {"a"}


def test_memmap_refresh_reads_entries_rewritten_in_the_folder(tmp_path):
    """A folder rewritten with new data for the same keys: after refresh the reader reads the new bytes."""
    _source().memmap(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td")
    TensorDict({"a": torch.full((3, 4), 8.0), "b": torch.arange(3) + 1}, [3]).memmap(
        tmp_path / "td"
    )
    reader.memmap_refresh_()
    assert (reader["a"] == 8).all()
    assert torch.equal(reader["b"], torch.arange(3) + 1)


def test_memmap_refresh_with_nothing_changed_keeps_every_tensor(tmp_path):
    """A refresh with no change keeps the same tensor objects (nothing is re-mapped)."""
    _source().memmap(tmp_path / "td")
    reader = TensorDict.load_memmap(tmp_path / "td")
    before = _leaves(reader)
    reader.memmap_refresh_()
    after = _leaves(reader)
    assert all(after[k] is v for k, v in before.items())


def test_memmap_refresh_on_a_plain_tensordict_raises(tmp_path):
    """memmap_refresh_ needs a memory-mapped tensordict: RuntimeError saying memory-mapped."""
    with pytest.raises(RuntimeError, match="memory-mapped"):
        _source().memmap_refresh_()


# ------------------------------------------------------------------ shared memory, pickling
def test_share_memory_puts_every_tensor_in_shared_memory_and_locks(tmp_path):
    """share_memory_() returns the td, locked, is_shared() True; a plain td is not shared."""
    td = _source()
    assert not td.is_shared()
    out = td.share_memory_()
    assert out is td and td.is_locked and td.is_shared()
    assert all(v.is_shared() for v in _leaves(td).values())
    assert not td.is_memmap()


def test_pickling_a_memory_mapped_tensordict_refers_to_the_same_files(tmp_path):
    """pickle.loads(pickle.dumps(td)) is memory-mapped over the same files; writes on one are seen by the other."""
    td = TensorDict({"big": torch.zeros(256, 1024), "sub": {"c": torch.zeros(256, 2)}}, [256])
    td = td.memmap(tmp_path / "td")
    data = pickle.dumps(td)
    assert len(data) < 20_000 < 256 * 1024 * 4
    copy = pickle.loads(data)
    assert type(copy) is TensorDict and copy.is_memmap()
    assert copy.saved_path == td.saved_path and copy["sub"].saved_path == td["sub"].saved_path
    copy["big"][3, 4] = 1.5
    assert td["big"][3, 4] == 1.5
    td["sub", "c"][0, 0] = 2.5
    assert copy["sub", "c"][0, 0] == 2.5
    copy.make_memmap("x", (256,))
    assert "x" in TensorDict.load_memmap(tmp_path / "td").keys()


# ------------------------------------------------------------------ exact format
def test_the_meta_json_we_write_for_a_small_tensordict_is_exact(tmp_path):
    """meta.json bytes of each level equal the reference's layout: entries first, then the level fields."""
    td = TensorDict({"a": torch.zeros(3, 2), "sub": {"b": torch.zeros(3, dtype=torch.int64)}}, [3])
    td.memmap(tmp_path / "td")
    top = {
        "a": {"device": "cpu", "shape": [3, 2], "dtype": "torch.float32", "is_nested": False},
        "sub": {"type": "TensorDict"},
        "shape": [3],
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }
    sub = {
        "b": {"device": "cpu", "shape": [3], "dtype": "torch.int64", "is_nested": False},
        "shape": [3],
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }
    assert (tmp_path / "td" / "meta.json").read_text() == json.dumps(top)
    assert (tmp_path / "td" / "sub" / "meta.json").read_text() == json.dumps(sub)
    assert sorted(os.listdir(tmp_path / "td")) == ["a.memmap", "meta.json", "sub"]
    assert (tmp_path / "td" / "a.memmap").read_bytes() == bytes(24)


def test_make_memmap_appends_its_record_to_meta_json(tmp_path):
    """make_memmap adds exactly its record; the other members keep their values."""
    td = TensorDict({"a": torch.zeros(3)}, [3]).memmap(tmp_path / "td")
    before = json.loads((tmp_path / "td" / "meta.json").read_text())
    td.make_memmap("x", (3, 5), dtype=torch.int16)
    after = json.loads((tmp_path / "td" / "meta.json").read_text())
    assert after.pop("x") == {
        "device": "cpu",
        "shape": [3, 5],
        "dtype": "torch.int16",
        "is_nested": False,
    }
    assert after == before
    assert (tmp_path / "td" / "x.memmap").stat().st_size == 30


# ------------------------------------------------------------------ property
_KEYS = st.text(alphabet="ab é/%.:_", min_size=0, max_size=6).filter(
    lambda k: k not in ("shape", "device", "_type", "_format_version", "_class")
)
_LEAF = st.tuples(
    st.sampled_from(DTYPES), st.lists(st.integers(0, 3), max_size=2), st.integers(0, 2**16)
)
_TREE = st.recursive(
    st.dictionaries(_KEYS, _LEAF, max_size=3),
    lambda children: st.dictionaries(_KEYS, st.one_of(_LEAF, children), max_size=3),
    max_leaves=8,
)
_COUNTER = itertools.count()


def _build(spec: dict, batch) -> dict:
    out = {}
    for key, value in spec.items():
        if isinstance(value, dict):
            out[key] = _build(value, batch)
        else:
            dtype, dims, seed = value
            out[key] = _sample((*batch, *dims), dtype, seed)
    return out


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=_TREE, batch=st.lists(st.integers(0, 3), max_size=2))
def test_random_nested_tensordicts_round_trip_through_memmap(tmp_path, spec, batch):
    """Any nested dict of dtypes and shapes (keys with /, %, ., space, é, empty) loads back equal."""
    td = TensorDict(_build(spec, batch), batch)
    folder = tmp_path / f"case{next(_COUNTER)}"
    td.memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    _assert_same(loaded, td)
    assert set(loaded.keys(True)) == set(td.keys(True))
    assert all(p.resolve().is_relative_to(folder) for p in folder.rglob("*"))


def test_refresh_follows_a_new_batch_size(tmp_path):
    """After the folder is rewritten with another batch size, a refreshed reader is consistent."""
    TensorDict({"a": torch.zeros(2, 3)}, [2]).memmap(tmp_path / "f")
    reader = TensorDict.load_memmap(tmp_path / "f")
    TensorDict({"a": torch.ones(4, 3)}, [4]).memmap(tmp_path / "f")
    reader.memmap_refresh_()
    assert reader.batch_size == torch.Size([4]) and torch.equal(reader["a"], torch.ones(4, 3))


def test_a_refused_row_assignment_writes_nothing_and_names_the_key(tmp_path):
    """Index assignment checks every leaf before writing: a bad one leaves the others untouched."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.zeros(3, 2)}, [3]).memmap(tmp_path / "f")
    with pytest.raises(RuntimeError, match="'b'"):
        td[0] = TensorDict({"a": torch.ones(2), "b": torch.ones(5)}, [])
    assert (td["a"] == 0).all()


def test_views_of_a_memory_mapped_tensordict_stay_mapped_and_locked(tmp_path):
    """buf[3] shares the files and the lock: writes through it are refused rather than lost."""
    buf = TensorDict({"obs": torch.zeros(10, 3)}, [10]).memmap(tmp_path / "f")
    row = buf[3]
    assert row.is_memmap() and row.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        row["obs"] = torch.ones(3)
