"""The contract suite of tests/test_contract.py, run over TensorDictParams.

Two tests differ where a TensorDictParams differs by design: ``apply`` gives a plain
TensorDict (a new object is not a module), and its leaves are parameters, which
in-place tensor methods refuse outside ``torch.no_grad()``. (An index of a
TensorDictParams is a TensorDict too, so there is no indexed kind.)
"""

from __future__ import annotations

import torch
from test_contract import DONE, LEAVES, NEXT, OBS, ContractTests, build_tensordict, leaf_keys

from tensordict import TensorDict
from tensordict.nn import TensorDictParams


class TestTensorDictParamsContract(ContractTests):
    @staticmethod
    def build():
        return TensorDictParams(build_tensordict())

    def test_apply(self, x):
        """apply maps every tensor leaf into a new TensorDict; the wrapper is unchanged."""
        out = x.apply(lambda t: t * 2 if t.is_floating_point() else ~t)
        assert type(out) is TensorDict
        assert leaf_keys(out) == LEAVES and out.batch_size == x.batch_size
        assert torch.equal(out.get("obs"), OBS * 2)
        assert torch.equal(out.get("done"), ~DONE)
        assert torch.equal(out.get(("next", "obs")), NEXT * 2)
        self.assert_content(x)

    def test_clone(self, x):
        """clone() is an unlocked TensorDictParams with new leaves of the same content."""
        out = x.clone()
        assert type(out) is type(x) and not out.is_locked
        self.assert_content(out)
        with torch.no_grad():
            out.get("obs").fill_(-1)
        out.set("obs", torch.zeros(4, 3))
        self.assert_content(x)

    def test_memmap_like(self, x, tmp_path):
        """memmap_like gives a memory-mapped TensorDict (as the reference does): a module's
        parameters cannot live in files; keys, shapes, dtypes and non-tensors are kept."""
        like = x.memmap_like(tmp_path / "like")
        assert type(like) is TensorDict and like.batch_size == x.batch_size
        assert leaf_keys(like) == LEAVES and like.is_memmap() and like.is_locked
        assert like.get_non_tensor("name") == self.name_value
        assert like.get(("next", "obs")).shape == torch.Size([self.n, 3])
