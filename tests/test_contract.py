"""One contract, every tensordict class: the same assertions over each kind and an indexed view of it.

Each kind holds the same content (batch size [4]): ``obs`` [4, 3], ``reward`` [4, 1]
and a nested ``("next", "obs")`` [4, 3]. Indexed views are made from a batch of 8
with ``[2:6]``, so they must behave exactly like the originals.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from tensordict import TensorDict, lazy_stack

ROWS = 8
OBS = torch.arange(ROWS * 3, dtype=torch.float32).reshape(ROWS, 3)
REWARD = torch.arange(ROWS, dtype=torch.float32).reshape(ROWS, 1) * 10
NEXT = OBS + 100
LEAVES = {"obs", "reward", ("next", "obs")}
_counter = itertools.count()


def _dense(rows: slice):
    return TensorDict(
        {
            "obs": OBS[rows].clone(),
            "reward": REWARD[rows].clone(),
            "next": {"obs": NEXT[rows].clone()},
        },
        [rows.stop - rows.start],
    )


def _lazy(rows: slice):
    return lazy_stack(
        [
            TensorDict(
                {
                    "obs": OBS[i].clone(),
                    "reward": REWARD[i].clone(),
                    "next": {"obs": NEXT[i].clone()},
                },
                [],
            )
            for i in range(rows.start, rows.stop)
        ]
    )


def _memmapped(rows: slice, tmp_path):
    folder = tmp_path / f"mm{next(_counter)}"
    _dense(rows).memmap(folder)
    return TensorDict.load_memmap(folder)


KINDS = {
    "TensorDict": lambda tmp: _dense(slice(2, 6)),
    "TensorDict[2:6]": lambda tmp: _dense(slice(0, ROWS))[2:6],
    "lazy": lambda tmp: _lazy(slice(2, 6)),
    "lazy[2:6]": lambda tmp: _lazy(slice(0, ROWS))[2:6],
    "memmap": lambda tmp: _memmapped(slice(2, 6), tmp),
    "memmap[2:6]": lambda tmp: _memmapped(slice(0, ROWS), tmp)[2:6],
}


@pytest.fixture(params=sorted(KINDS))
def td(request, tmp_path):
    return KINDS[request.param](tmp_path)


def _keys(td) -> set:
    return set(td.keys(include_nested=True, leaves_only=True))


def test_keys(td):
    """The nested leaf keys are the same for every kind."""
    assert _keys(td) == LEAVES
    assert "next" in td.keys() and ("next", "obs") in td.keys(include_nested=True)


def test_get_reads_the_content(td):
    """get() and [] return the rows 2 to 5 of each leaf."""
    assert td.batch_size == torch.Size([4])
    assert torch.equal(td["obs"], OBS[2:6])
    assert torch.equal(td.get(("next", "obs")), NEXT[2:6])
    assert torch.equal(td["reward"], REWARD[2:6])
    assert td.get("missing") is None


def test_indexing(td):
    """An int drops the batch dim; a slice, a mask and an index tensor select rows."""
    assert torch.equal(td[1]["obs"], OBS[3])
    assert td[1:3].batch_size == torch.Size([2])
    assert torch.equal(td[1:3]["next", "obs"], NEXT[3:5])
    mask = torch.tensor([True, False, True, False])
    assert torch.equal(td[mask]["reward"], REWARD[[2, 4]])
    assert torch.equal(td[torch.tensor([3, 0])]["obs"], OBS[[5, 2]])


def test_set_in_place_writes_the_storage(td):
    """set_() and index assignment write into the existing tensors."""
    td.set_("reward", torch.full((4, 1), -1.0))
    assert (td["reward"] == -1).all()
    td[0] = TensorDict(
        {"obs": torch.zeros(3), "reward": torch.zeros(1), "next": {"obs": torch.zeros(3)}}, []
    )
    assert (td[0]["obs"] == 0).all() and torch.equal(td[1]["obs"], OBS[3])


def test_set_a_new_key(td):
    """set() adds a key; its leading dims must match the batch size."""
    td.set("extra", torch.ones(4, 2))
    assert torch.equal(td["extra"], torch.ones(4, 2))
    with pytest.raises(RuntimeError, match="extra2"):
        td.set("extra2", torch.ones(5, 2))


def test_stacking(td):
    """torch.stack of two copies has batch size [2, 4] and the same values."""
    out = torch.stack([td, td], 0)
    assert out.batch_size == torch.Size([2, 4])
    assert torch.equal(out["obs"][1], OBS[2:6])


def test_reshaping(td):
    """unsqueeze and reshape change the batch dims only."""
    assert td.unsqueeze(0).batch_size == torch.Size([1, 4])
    assert torch.equal(td.reshape(2, 2)["obs"], OBS[2:6].reshape(2, 2, 3))


def test_apply(td):
    """apply maps every leaf, nested ones included."""
    out = td.apply(lambda x: x + 1)
    assert torch.equal(out["next", "obs"], NEXT[2:6] + 1)
    assert _keys(out) == LEAVES


def test_to_dtype(td):
    """to(dtype) casts every leaf."""
    out = td.to(torch.float64)
    assert out["obs"].dtype == torch.float64 and out["next", "obs"].dtype == torch.float64


def test_memmap_round_trip(td, tmp_path):
    """memmap(prefix) then load_memmap gives the same content, memory-mapped."""
    folder = tmp_path / "out"
    mapped = td.memmap(folder)
    assert mapped.is_memmap() and mapped.is_locked
    loaded = TensorDict.load_memmap(folder)
    assert loaded.is_memmap()
    assert torch.equal(loaded["obs"], OBS[2:6])
    assert torch.equal(loaded["next", "obs"], NEXT[2:6])


def test_memmap_like_is_zeros_of_the_same_layout(td, tmp_path):
    """memmap_like keeps keys, shapes and dtypes, and reads zeros."""
    like = td.memmap_like(tmp_path / "like")
    assert _keys(like) == LEAVES
    assert like["obs"].shape == torch.Size([4, 3]) and (like["obs"] == 0).all()


def test_make_memmap_from_storage_on_the_memory_mapped_version(td, tmp_path):
    """SEED.txt: the entry reads from the storage, is returned, and is written though the tensordict is locked."""
    mapped = td.memmap()
    storage = torch.UntypedStorage(4 * 2 * 4)
    out = mapped.make_memmap_from_storage("x", storage, (4, 2))
    out.fill_(3.0)
    assert mapped.is_locked
    assert torch.equal(mapped["x"], torch.full((4, 2), 3.0))


def test_make_memmap_from_tensor_persists(td, tmp_path):
    """make_memmap_from_tensor copies into the folder: load_memmap sees the entry."""
    folder = tmp_path / "grow"
    mapped = td.memmap(folder)
    mapped.make_memmap_from_tensor("y", torch.arange(4.0))
    assert torch.equal(TensorDict.load_memmap(folder)["y"], torch.arange(4.0))
