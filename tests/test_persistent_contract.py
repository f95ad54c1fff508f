"""The contract suite of tests/test_contract.py, run over PersistentTensorDict (HDF5).

The object is ``PersistentTensorDict.from_dict`` of the contract's TensorDict, written into
a file under ``tmp_path``; the ``...Indexed`` kind is its ``x[1:3]``, a view that reads
its rows from the file. Where a PersistentTensorDict differs by design, its subclass
says what it does instead: the results of operations are in-memory TensorDicts.
"""

from __future__ import annotations

import pytest
import torch
from test_contract import DONE, LEAVES, NEXT, OBS, ContractTests, build_tensordict, leaf_keys

pytest.importorskip("h5py", reason="PersistentTensorDict needs the optional extra tensordict[h5]")

from tensordict import PersistentTensorDict, TensorDict  # noqa: E402


class _Persistent:
    def make(self, tmp_path):
        self.folder = None
        self.file = tmp_path / "contract.h5"
        obj = PersistentTensorDict.from_dict(build_tensordict(), self.file)
        self.source = obj
        return obj[1:3] if self.indexed else obj

    def test_apply(self, x):
        """apply maps every tensor leaf into a new in-memory TensorDict; the file is unchanged."""
        out = x.apply(lambda t: t * 2 if t.is_floating_point() else ~t)
        assert type(out) is TensorDict
        assert leaf_keys(out) == LEAVES and out.batch_size == x.batch_size
        assert torch.equal(out.get("obs"), OBS[self.rows] * 2)
        assert torch.equal(out.get("done"), ~DONE[self.rows])
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows] * 2)
        self.assert_content(x)

    def test_clone(self, x):
        """clone() reads the content into an unlocked, independent in-memory TensorDict."""
        out = x.clone()
        assert type(out) is TensorDict and not out.is_locked
        self.assert_content(out)
        out.get("obs").fill_(-1)
        out.set("obs", torch.zeros(self.n, 3))
        self.assert_content(x)

    def test_names_follow_the_batch(self, x):
        """An HDF5 file records no dim names: every batch dim reads None; a copy takes names."""
        assert x.names == [None] and x.get("next").names == [None]
        assert x.to_tensordict().refine_names("time").names == ["time"]

    def test_memmap_like(self, x, tmp_path):
        """memmap_like gives a memory-mapped TensorDict with zeros (the file is not mapped)."""
        like = x.memmap_like(tmp_path / "like")
        assert type(like) is TensorDict and like.batch_size == x.batch_size
        assert leaf_keys(like) == LEAVES and like.is_memmap() and like.is_locked
        assert like.get_non_tensor("name") == self.name_value
        assert like.get("obs").shape == torch.Size([self.n, 3]) and (like.get("obs") == 0).all()
        assert like.get("done").dtype == torch.bool and not like.get("done").any()
        self.assert_content(x)


class TestPersistentTensorDict(_Persistent, ContractTests):
    pass


class TestPersistentTensorDictIndexed(_Persistent, ContractTests):
    indexed = True
