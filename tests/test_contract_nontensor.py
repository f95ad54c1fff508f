"""The contract of ``tests/test_contract.py`` run over NonTensorStack, a stack of plain values.

A :class:`NonTensorStack` has a batch size and indexes, stacks, reshapes, clones,
pickles and memory-maps like every tensordict, but it holds one value per batch
element and no keys: no tensor leaves, no sub-tensordicts, nothing to ``get``. So
``NonTensorStackContract`` overrides every case of ``ContractTests`` that reads the
shared content (``obs``, ``done``, ``("next", "obs")``, ``name``) with the same check
made on the stack's values, and each case the kind cannot honour with a test of what
it does instead; their docstrings say why. The exception classes are those the
reference raises for the same call, unless a docstring says otherwise.

Every object holds the values ``VALUES`` (batch size [4]); the ``...Indexed`` kinds are
``x[1:3]`` of their kind.
"""

from __future__ import annotations

import pickle

import pytest
import torch
from test_contract import ContractTests

from tensordict import NonTensorData, NonTensorStack, TensorDict

VALUES = ["a", "b", "c", "d"]


def build_stack() -> NonTensorStack:
    return NonTensorStack.from_list(list(VALUES))


class NonTensorStackContract(ContractTests):
    """The contract, read through a stack's values instead of its (absent) keys."""

    build = staticmethod(build_stack)
    # A stack holds no tensors, so nothing keeps it from being memory-mapped: is_memmap()
    # is always True (the reference says False until memmap()). It has a lock of its own,
    # as in the reference: memmap() and consolidate() lock what they return.
    memmapped = True

    @property
    def values(self) -> list:
        return VALUES[self.rows]

    # ------------------------------------------------------------------ keys and values
    def test_batch_size(self, x):
        """batch_size, shape, batch_dims, len and numel describe the one batch dim."""
        assert x.batch_size == torch.Size([self.n]) and x.shape == torch.Size([self.n])
        assert x.batch_dims == 1 and len(x) == self.n and x.numel() == self.n

    def test_keys(self, x):
        """A stack of values has no keys, nested or not."""
        assert list(x.keys()) == [] and list(x.keys(include_nested=True, leaves_only=True)) == []
        assert "a" not in x.keys()

    def test_get_reads_the_content(self, x):
        """The values read back with tolist(); get() of any key finds nothing (None)."""
        assert x.tolist() == self.values
        assert x.get("missing") is None

    def test_non_tensor_entry(self, x):
        """Each element is a NonTensorData holding its value."""
        assert [row.data for row in x.unbind(0)] == self.values
        assert isinstance(x[0], NonTensorData)

    def test_to_dict(self, x):
        """to_dict() of a stack, which has no keys, is the list of its values."""
        assert x.to_dict() == self.values

    def test_to_dict_round_trip(self, x):
        """NonTensorStack.from_list(x.to_dict()) rebuilds the same values and batch size."""
        out = NonTensorStack.from_list(x.to_dict())
        assert out.batch_size == x.batch_size and out.tolist() == self.values

    def test_to_tensordict(self, x):
        """to_tensordict() of a stack is an unlocked NonTensorStack copy (a TensorDict needs keys).

        The copy is independent here; the reference's shares the members, so a write into
        it reaches x.
        """
        out = x.to_tensordict()
        assert type(out) is NonTensorStack and not out.is_locked
        assert out.tolist() == self.values
        out[0] = "z"
        assert x.tolist() == self.values

    # ------------------------------------------------------------------ indexing
    def test_int_index(self, x):
        """An int gives the element's NonTensorData; a negative int counts from the end."""
        assert isinstance(x[0], NonTensorData) and x[0].batch_size == torch.Size([])
        assert x[0].data == self.values[0] and x[-1].data == self.values[-1]

    def test_slice_index(self, x):
        """A slice keeps the batch dim and selects those values."""
        part = x[1:]
        assert type(part) is NonTensorStack and part.batch_size == torch.Size([self.n - 1])
        assert part.tolist() == self.values[1:]

    def test_mask_index(self, x):
        """A bool mask over the batch dim selects the True elements."""
        mask = torch.zeros(self.n, dtype=torch.bool)
        mask[-1] = True
        assert x[mask].tolist() == self.values[-1:]

    def test_tensor_index(self, x):
        """A long tensor picks elements in its order, repeats allowed."""
        out = x[torch.tensor([self.n - 1, 0, 0])]
        assert out.batch_size == torch.Size([3])
        assert out.tolist() == [self.values[-1], self.values[0], self.values[0]]

    def test_unbind(self, x):
        """unbind(0) gives one NonTensorData per element."""
        parts = x.unbind(0)
        assert [type(p) for p in parts] == [NonTensorData] * self.n
        assert [p.data for p in parts] == self.values

    def test_unbind_stack_round_trip(self, x):
        """torch.stack(x.unbind(0)) and torch.stack(list(x)) give the stack of values back."""
        for out in (torch.stack(x.unbind(0), 0), torch.stack(list(x), 0)):
            assert type(out) is NonTensorStack and out.batch_size == x.batch_size
            assert out.tolist() == self.values

    def test_split_cat_round_trip(self, x):
        """torch.cat(x.split(1, 0)) gives the values back; each part is one element."""
        parts = x.split(1, 0)
        assert [part.tolist() for part in parts] == [[v] for v in self.values]
        out = torch.cat(parts, 0)
        assert type(out) is NonTensorStack and out.tolist() == self.values

    # ------------------------------------------------------------------ stack, cat, shape
    def test_stack(self, x):
        """torch.stack of two copies is a NonTensorStack with a leading dim."""
        out = torch.stack([x, x.clone()], 0)
        assert type(out) is NonTensorStack and out.batch_size == torch.Size([2, self.n])
        assert out.tolist() == [self.values, self.values]

    def test_cat(self, x):
        """torch.cat of two copies doubles the batch dim."""
        out = torch.cat([x, x.clone()], 0)
        assert out.batch_size == torch.Size([2 * self.n]) and out.tolist() == self.values * 2

    def test_unsqueeze_squeeze(self, x):
        """unsqueeze adds a batch dim of size 1 around each value; squeeze removes it."""
        out = x.unsqueeze(-1)
        assert out.batch_size == torch.Size([self.n, 1])
        assert out.tolist() == [[v] for v in self.values]
        assert out.squeeze(-1).tolist() == self.values
        assert x.unsqueeze(0).batch_size == torch.Size([1, self.n])

    def test_reshape(self, x):
        """reshape regroups the values as a tensor of their positions would be."""
        assert x.reshape(1, self.n).tolist() == [self.values]
        assert x.reshape(-1).batch_size == torch.Size([self.n])

    # ------------------------------------------------------------------ values
    def test_apply(self, x):
        """apply maps tensors; a stack holds none, so it gives a copy of the values."""
        out = x.apply(lambda t: t * 2)
        assert type(out) is NonTensorStack and out is not x
        assert out.tolist() == self.values

    def test_arithmetic(self, x):
        """Operators act on tensor leaves; a stack has none, so x * 2 + 1 holds the same values."""
        out = x * 2 + 1
        assert type(out) is NonTensorStack and out.tolist() == self.values

    def test_to_dtype(self, x):
        """to(dtype) casts tensors; the values of a stack stay as they are."""
        out = x.to(torch.float64)
        assert out.tolist() == self.values and out.batch_size == x.batch_size

    def test_clone(self, x):
        """clone() is an unlocked NonTensorStack with the same values."""
        out = x.clone()
        assert type(out) is NonTensorStack and not out.is_locked
        assert out.tolist() == self.values

    def test_clone_is_independent(self, x):
        """After clone(), writing an element on either side leaves the other alone."""
        out = x.clone()
        out[0] = "z"
        assert x.tolist() == self.values
        x[-1] = "y"
        assert out.tolist() == ["z", *self.values[1:]]

    def test_equality(self, x):
        """== compares the values element-wise."""
        other = x.clone()
        other[0] = "z"
        assert (x == x.clone()).all()
        assert (x == other).tolist() == [False] + [True] * (self.n - 1)

    def test_equality_is_a_tensor_collection(self, x):
        """== and != of stacks give a bool tensor of the batch shape, not a tensor collection.

        With no keys there is nothing to hold per key, as in the reference.
        """
        same, differ = x == x.clone(), x != x.clone()
        assert type(same) is torch.Tensor and same.shape == x.batch_size
        assert same.dtype == torch.bool and same.all() and not differ.any()

    def test_select_and_exclude(self, x):
        """exclude() keeps the values; select() of a key raises KeyError: a stack has none."""
        assert x.exclude().tolist() == self.values
        with pytest.raises(KeyError, match="missing"):
            x.select("missing")

    def test_select_and_exclude_nested_keys(self, x):
        """A nested key is not in a stack: select raises KeyError, exclude changes nothing."""
        with pytest.raises(KeyError):
            x.select(("next", "obs"))
        assert x.exclude(("next", "obs")).tolist() == self.values

    # ------------------------------------------------------------------ writes
    def test_set_in_place(self, x):
        """A stack is written by index, not by key: set_() of a key raises KeyError."""
        x[1:] = NonTensorStack.from_list(["y"] * (self.n - 1))
        assert x.tolist() == [self.values[0]] + ["y"] * (self.n - 1)
        with pytest.raises(KeyError, match="obs"):
            x.set_("obs", torch.zeros(self.n))

    def test_row_assignment(self, x):
        """x[0] = x[1] copies the value of element 1 into element 0 and leaves the others.

        The write changes the object only: the source of an indexed stack and the folder
        of a memory-mapped one keep the old value (the reference writes both through).
        """
        x[0] = x[1]
        assert x.tolist() == [self.values[1], *self.values[1:]]

    def test_update_in_place(self, x):
        """update_() of a key raises KeyError naming it: a stack has no keys.

        The reference raises NotImplementedError for a dict.
        """
        with pytest.raises(KeyError, match="obs"):
            x.update_({"obs": torch.zeros(self.n)})
        assert x.tolist() == self.values

    def test_set_a_new_key(self, x):
        """set() of a new key raises KeyError: a stack holds values, not keys."""
        with pytest.raises(KeyError, match="extra"):
            x.set("extra", torch.ones(self.n, 2))
        assert list(x.keys()) == []

    def test_set_a_nested_new_key(self, x):
        """set() of a nested key raises KeyError, or LockedError when locked (the reference ignores it)."""
        with pytest.raises((KeyError, RuntimeError)):
            x.set(("next", "extra"), torch.ones(self.n))
        assert list(x.keys()) == [] and x.tolist() == self.values

    def test_lock_and_unlock(self, x):
        """lock_() and unlock_() return the stack and set is_locked; a locked stack stays writable."""
        assert x.lock_() is x and x.is_locked
        x[0] = "z"
        assert x.is_locked
        assert x.unlock_() is x and not x.is_locked
        assert x.tolist() == ["z", *self.values[1:]]

    def test_lock_reaches_sub_tensordicts(self, x):
        """Held by a locked TensorDict, the stack cannot be rebound; its values can be written."""
        td = TensorDict({"v": x}, x.batch_size).lock_()
        with pytest.raises(RuntimeError, match="lock"):
            td.set("v", x.clone())
        td.get("v")[0] = "z"
        assert td.get("v").tolist() == ["z", *self.values[1:]]
        td.unlock_().set("v", x.clone())

    def test_names_follow_the_batch(self, x):
        """A stack of values names its batch dim as a lazy stack does: [None], then refine_names."""
        assert x.names == [None]
        assert x.refine_names("time") is x and x.names == ["time"]

    # ------------------------------------------------------------------ memory mapping
    def test_is_locked(self, x):
        """A stack is locked as its kind says (see test_lock_and_unlock)."""
        assert x.is_locked == self.locked

    def test_views_that_keep_the_data_pointer(self, x):
        """x[0] and x[:1] are unlocked and memory-mapped like every stack."""
        for view in (x[0], x[:1]):
            assert not view.is_locked
        assert x[:1].is_memmap()

    def test_memmap_round_trip(self, x, tmp_path):
        """memmap(dir) (locked) and load_memmap(dir) (unlocked) give NonTensorStacks of the same values."""
        mapped = x.memmap(tmp_path / "out")
        assert type(mapped) is NonTensorStack and mapped.is_memmap() and mapped.is_locked
        loaded = TensorDict.load_memmap(tmp_path / "out")
        assert type(loaded) is NonTensorStack and loaded.batch_size == x.batch_size
        assert not loaded.is_locked
        assert mapped.tolist() == loaded.tolist() == x.tolist() == self.values

    def test_memmap_like(self, x, tmp_path):
        """memmap_like of a stack keeps its values: it has no tensors to zero."""
        like = x.memmap_like(tmp_path / "like")
        assert type(like) is NonTensorStack and like.tolist() == self.values
        assert TensorDict.load_memmap(tmp_path / "like").tolist() == self.values

    def test_make_memmap_from_storage(self, x):
        """make_memmap_from_storage needs keys: a memory-mapped stack raises RuntimeError."""
        mapped = x.memmap()
        with pytest.raises(RuntimeError, match="memory-mapped"):
            mapped.make_memmap_from_storage("extra", torch.UntypedStorage(self.n * 4), (self.n,))

    def test_make_memmap_from_tensor_persists(self, x, tmp_path):
        """make_memmap_from_tensor on a memmap(dir) copy raises RuntimeError; the folder is unchanged."""
        mapped = x.memmap(tmp_path / "grow")
        with pytest.raises(RuntimeError, match="memory-mapped"):
            mapped.make_memmap_from_tensor("extra", torch.arange(float(self.n)))
        assert TensorDict.load_memmap(tmp_path / "grow").tolist() == self.values

    def test_make_memmap_on_the_object(self, x):
        """make_memmap_from_tensor on the stack raises RuntimeError and adds nothing."""
        with pytest.raises(RuntimeError, match="memory-mapped"):
            x.make_memmap_from_tensor("extra", torch.arange(float(self.n)))
        assert list(x.keys()) == []

    def test_pickle_round_trip(self, x):
        """pickle gives back a NonTensorStack of the same batch size and values."""
        out = pickle.loads(pickle.dumps(x))
        assert type(out) is NonTensorStack and out.batch_size == x.batch_size
        assert out.tolist() == self.values


# ====================================================================== the kinds
class _Archive:
    def test_writes_stay_in_memory(self, x):
        """A write into a stack loaded from an archive changes it, never the archive file."""
        x[0] = "z"
        assert x.tolist() == ["z", *self.values[1:]]
        assert self.load(self.file).tolist() == VALUES


class TestNonTensorStack(NonTensorStackContract):
    pass


class TestNonTensorStackIndexed(NonTensorStackContract):
    indexed = True


class TestNonTensorStackMemmap(NonTensorStackContract):
    form, locked, views_locked = "memmap", True, False


class TestNonTensorStackMemmapIndexed(NonTensorStackContract):
    form, indexed = "memmap", True


class TestNonTensorStackLoaded(NonTensorStackContract):
    form = "loaded"


class TestNonTensorStackLoadedIndexed(NonTensorStackContract):
    form, indexed = "loaded", True


class TestNonTensorStackArchive(_Archive, NonTensorStackContract):
    form = "archive"


class TestNonTensorStackArchiveIndexed(_Archive, NonTensorStackContract):
    form, indexed = "archive", True


class TestNonTensorStackConsolidated(NonTensorStackContract):
    """x.consolidate() of a stack: a consolidated stack of the same values (locked)."""

    form, consolidated, locked, views_locked = "consolidated", True, True, False


class TestNonTensorStackConsolidatedIndexed(NonTensorStackContract):
    form, indexed = "consolidated", True


class TestNonTensorStackConsolidatedFile(NonTensorStackContract):
    """x.consolidate(filename=path) of a stack: from_consolidated(path) reads it back."""

    form, consolidated, locked, views_locked = "consolidated-file", True, True, False

    def test_from_consolidated_reads_the_file(self, x):
        """NonTensorStack.from_consolidated(path) reads the values back."""
        out = NonTensorStack.from_consolidated(self.file)
        assert type(out) is NonTensorStack and out.tolist() == VALUES


class TestNonTensorStackConsolidatedFileIndexed(NonTensorStackContract):
    form, indexed = "consolidated-file", True
