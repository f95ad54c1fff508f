"""PersistentTensorDict: a tensordict stored in an HDF5 file (tensordict/_persistent.py)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest
import torch

from tensordict import NonTensorData, PersistentTensorDict, TensorDict
from tensordict.errors import BatchSizeError, LockedError

h5py = pytest.importorskip("h5py", reason="PersistentTensorDict needs the extra tensordict[h5]")


def _content() -> TensorDict:
    return TensorDict(
        obs=torch.arange(12.0).view(4, 3),
        nested=TensorDict(
            step=torch.arange(8).view(4, 2), grid=torch.zeros(4, 2, 5), batch_size=[4, 2]
        ),
        name="cart",
        batch_size=[4],
    )


@pytest.fixture
def h5(tmp_path):
    out = PersistentTensorDict.from_dict(_content(), tmp_path / "data.h5")
    yield out
    out.close()


def test_from_dict_writes_groups_and_datasets(tmp_path):
    """from_dict writes one dataset per tensor and one group per sub-tensordict into the file."""
    PersistentTensorDict.from_dict(_content(), tmp_path / "f.h5").close()
    with h5py.File(tmp_path / "f.h5", "r") as file:
        assert sorted(file.keys()) == ["name", "nested", "obs"]
        assert file["obs"].shape == (4, 3) and file["nested/grid"].shape == (4, 2, 5)
        assert isinstance(file["nested"], h5py.Group)


def test_reading_entries(h5):
    """get reads tensors, nested groups (with their own batch size) and strings."""
    assert h5.batch_size == (4,) and h5.mode == "r+"
    assert torch.equal(h5["obs"], torch.arange(12.0).view(4, 3))
    assert type(h5["nested"]) is PersistentTensorDict and h5["nested"].batch_size == (4, 2)
    assert torch.equal(h5["nested", "step"], torch.arange(8).view(4, 2))
    assert h5.get_non_tensor("name") == "cart" and h5.get("name").batch_size == (4,)
    assert h5.get("missing") is None


def test_from_h5_reads_a_file_written_by_h5py(tmp_path):
    """from_h5 opens any HDF5 file; auto_batch_size takes the leading shape all entries share."""
    with h5py.File(tmp_path / "raw.h5", "w") as file:
        file.create_dataset("a", data=torch.ones(5, 2).numpy())
        file.create_group("g").create_dataset("b", data=torch.zeros(5, 2, 3).numpy())
    td = TensorDict.from_h5(tmp_path / "raw.h5", auto_batch_size=True)
    assert type(td) is PersistentTensorDict and td.batch_size == (5, 2)
    assert td.mode == "r" and torch.equal(td["a"], torch.ones(5, 2))
    assert PersistentTensorDict.from_h5(tmp_path / "raw.h5", batch_size=[5])["g"].batch_size == (5,)
    with pytest.raises(BatchSizeError, match="'a'"):
        PersistentTensorDict.from_h5(tmp_path / "raw.h5", batch_size=[4])


def test_indexing_gives_a_view_of_the_file(h5, tmp_path):
    """An index reads only its rows; writing through it reaches the file."""
    view = h5[1:3]
    assert type(view) is PersistentTensorDict and view.batch_size == (2,)
    assert torch.equal(view["obs"], torch.arange(3.0, 9.0).view(2, 3))
    assert view["nested"].batch_size == (2, 2)
    view["obs"] = torch.zeros(2, 3)
    picked = h5[torch.tensor([3, 0])]
    picked.set_("obs", torch.full((2, 3), 7.0))
    h5[torch.tensor([True, False, False, False])]["nested"]["step"] = torch.tensor([[-1, -2]])
    h5.file.flush()
    obs = torch.as_tensor(h5.file["obs"][()])
    step = torch.as_tensor(h5.file["nested/step"][()])
    assert torch.equal(obs[1:3], torch.zeros(2, 3))
    assert (obs[[0, 3]] == 7).all() and step[:, 0].tolist() == [-1, 2, 4, 6]


def test_row_assignment_and_new_keys(h5):
    """td[rows] = tensordict writes rows; set adds datasets and groups; a view adds zero-filled ones."""
    h5[0] = TensorDict(
        obs=torch.ones(3), nested=TensorDict(step=torch.tensor([9, 9]), batch_size=[2])
    )
    assert torch.equal(h5["obs"][0], torch.ones(3)) and h5["nested", "step"][0].tolist() == [9, 9]
    h5.set(("extra", "x"), torch.ones(4, 2))
    assert torch.equal(h5["extra", "x"], torch.ones(4, 2))
    h5[2:].set("late", torch.ones(2))
    assert h5["late"].tolist() == [0.0, 0.0, 1.0, 1.0]
    h5.set("meta", NonTensorData({"k": [1, 2]}, batch_size=[4]))
    assert h5.get_non_tensor("meta") == {"k": [1, 2]}
    with pytest.raises(BatchSizeError):
        h5.set("bad", torch.ones(3))


def test_delete_rename_and_copies_leave_the_file_alone(h5):
    """exclude/select give in-memory copies; del_ and rename_key_ change the file."""
    assert "obs" not in h5.exclude("obs").keys() and "obs" in h5.keys()
    assert type(h5.select("obs")) is TensorDict
    h5.rename_key_("obs", "observation")
    del h5["name"]
    assert sorted(h5.keys()) == ["nested", "observation"]


def test_lock(h5):
    """A locked PersistentTensorDict refuses new keys and deletions, its sub-groups too."""
    sub = h5["nested"]
    h5.lock_()
    assert sub.is_locked and h5["nested"].is_locked
    with pytest.raises(LockedError, match="'new'"):
        h5.set("new", torch.zeros(4))
    with pytest.raises(LockedError, match="nested"):
        sub.unlock_()
    h5.set_("obs", torch.zeros(4, 3))
    h5.unlock_()
    assert not sub.is_locked
    h5.set("new", torch.zeros(4))


def test_to_tensordict_and_memmap(h5, tmp_path):
    """to_tensordict reads into memory; memmap writes a memory-mapped TensorDict folder."""
    copy = h5.to_tensordict()
    assert type(copy) is TensorDict and copy["nested"].batch_size == (4, 2)
    assert (copy == _content()).all()
    mapped = h5.memmap(tmp_path / "mm")
    assert type(mapped) is TensorDict and mapped.is_memmap()
    loaded = TensorDict.load_memmap(tmp_path / "mm")
    assert torch.equal(loaded["obs"], h5["obs"]) and loaded.get_non_tensor("name") == "cart"


def test_memmap_in_place_and_from_storage_are_refused(h5, tmp_path):
    """memmap_ and make_memmap_from_storage raise RuntimeError: the file is not memory-mapped."""
    with pytest.raises(RuntimeError, match="in place"):
        h5.memmap_(tmp_path / "mm")
    with pytest.raises(RuntimeError, match="memory-mapped"):
        h5.make_memmap_from_storage("z", torch.UntypedStorage(16), (4,))


def test_pickle_carries_the_file_name_not_the_data(h5, tmp_path):
    """A pickle names the file and the rows; unpickled, it reads them from the file."""
    payload = pickle.dumps(h5[1:3])
    assert len(payload) < 2000 and b"data.h5" in payload
    script = textwrap.dedent(
        """
        import pickle, sys
        view = pickle.loads(sys.stdin.buffer.read())
        print(view["obs"].sum().item(), view.batch_size)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().split()[0] == str(h5["obs"][1:3].sum().item())


def test_close(tmp_path):
    """After close() the file is released and nothing can be read."""
    h5 = PersistentTensorDict.from_dict(_content(), tmp_path / "c.h5")
    h5.close()
    assert not h5.file and "closed" in repr(h5)
    with pytest.raises(KeyError):
        h5["obs"]


def test_to_h5_passes_dataset_options(tmp_path):
    """to_h5 forwards create_dataset options (compression) to every dataset, nested ones too."""
    h5 = _content().to_h5(tmp_path / "z.h5", compression="gzip")
    h5.set("later", torch.zeros(4))
    h5.close()
    with h5py.File(tmp_path / "z.h5", "r") as file:
        assert {file[k].compression for k in ("obs", "nested/step", "later")} == {"gzip"}


def test_constructor_arguments(tmp_path):
    """One of filename= and group= is needed; group= wraps an open group."""
    with pytest.raises(ValueError, match="filename"):
        PersistentTensorDict(batch_size=[])
    with h5py.File(tmp_path / "g.h5", "w") as file:
        file.create_group("g").create_dataset("a", data=torch.ones(2).numpy())
        td = PersistentTensorDict(group=file["g"], batch_size=[2])
        assert torch.equal(td["a"], torch.ones(2))


def test_without_h5py_the_package_imports_and_the_class_names_the_extra(tmp_path):
    """With h5py missing, import tensordict works and the class raises ImportError naming the extra."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["h5py"] = None
        import tensordict
        try:
            tensordict.PersistentTensorDict(filename={str(tmp_path / "x.h5")!r})
        except ImportError as err:
            print(err)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "tensordict[h5]" in result.stdout


def test_import_paths():
    """The class is importable from tensordict and from tensordict.persistent."""
    from tensordict.persistent import PersistentTensorDict as FromModule

    assert FromModule is PersistentTensorDict


def test_strings_and_scalars_of_other_writers(tmp_path):
    """A string dataset (marked __tensordict_str__ or of a string dtype) reads as a string; a
    scalar dataset in a batched file reads as one value for every row; ours carry the mark."""
    with h5py.File(tmp_path / "other.h5", "w") as file:
        file.create_dataset("a", data=torch.zeros(4, 3).numpy())
        file.create_dataset("s", data="cart").attrs["__tensordict_str__"] = True
        file.create_dataset("plain", data="pole")
        file.create_dataset("i", data=1)
    td = PersistentTensorDict.from_h5(tmp_path / "other.h5", batch_size=[4], mode="r+")
    assert td.get_non_tensor("s") == "cart" and td.get_non_tensor("plain") == "pole"
    assert td.get_non_tensor("i") == 1 and td.get("i").batch_size == (4,)
    td.set("t", "text")
    assert td.file["t"].attrs["__tensordict_str__"]
    td.close()


def test_from_any_reads_an_open_h5py_file_as_a_persistent_tensordict(tmp_path):
    """from_any of an h5py file, alone or inside a dict, gives a PersistentTensorDict of its datasets."""
    with h5py.File(tmp_path / "x.h5", "w") as file:
        file["a"] = [1, 2, 3]
        file.create_group("g")["b"] = [1.0]
        alone = TensorDict.from_any(file)
        assert type(alone).__name__ == "PersistentTensorDict"
        nested = TensorDict.from_any({"h5py": file})
        assert set(nested.keys(True, True)) == {("h5py", "a"), ("h5py", "g", "b")}
        assert nested["h5py", "a"].tolist() == [1, 2, 3]
