"""One exception class per recurring condition, the same wherever it happens, each a builtin too."""

from __future__ import annotations

import os

import pytest
import torch

from tensordict import LazyStackedTensorDict, MemoryMappedTensor, TensorDict, errors, lazy_stack


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(2, 3)}, [2])


def test_every_error_class_is_exported_and_is_a_tensordict_error():
    """errors.__all__ lists every exception class of the module, each under TensorDictError."""
    classes = {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)
    }
    assert classes <= set(errors.__all__)
    for name in classes:
        assert issubclass(getattr(errors, name), errors.TensorDictError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: torch.stack([_td(), _td()], 3),
        lambda: torch.cat([_td(), _td()], 2),
        lambda: _td().unsqueeze(4),
        lambda: _td().sum(dim=3),
        lambda: _td()[5],
        lambda: TensorDict({}, [])[0],
        lambda: LazyStackedTensorDict(_td(), _td(), stack_dim=5),
    ],
    ids=["stack", "cat", "unsqueeze", "sum", "index", "index-without-batch", "lazy-stack-dim"],
)
def test_a_dimension_out_of_range_is_a_dimension_error_and_an_index_error(call):
    """Every out-of-range batch dimension or index raises DimensionError, an IndexError."""
    with pytest.raises(errors.DimensionError, match="range|no batch dimension") as info:
        call()
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("op", [torch.stack, torch.cat], ids=["stack", "cat"])
def test_different_keys_are_a_key_mismatch_for_stack_and_cat(op):
    """stack and cat of tensordicts with different keys raise the same KeyMismatchError."""
    other = TensorDict({"b": torch.zeros(2, 3)}, [2])
    with pytest.raises(errors.KeyMismatchError, match=r"\['a'\].*\['b'\]") as info:
        op([_td(), other], 0)
    assert isinstance(info.value, KeyError) and isinstance(info.value, RuntimeError)


def test_an_existing_file_is_an_existing_file_error_for_tensors_and_tensordicts(tmp_path):
    """existsok=False over an existing file: ExistingFileError (FileExistsError and RuntimeError)."""
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.zeros(3), filename=path)
    with pytest.raises(errors.ExistingFileError, match="already exists"):
        MemoryMappedTensor.from_tensor(torch.zeros(3), filename=path, existsok=False)
    TensorDict({"x": torch.zeros(3)}, [3]).memmap(tmp_path / "d")
    with pytest.raises(errors.ExistingFileError, match="already exists") as info:
        TensorDict({"x": torch.zeros(3)}, [3]).memmap(tmp_path / "d", existsok=False)
    assert isinstance(info.value, FileExistsError) and isinstance(info.value, RuntimeError)


def test_a_symbolic_link_is_a_symlink_error_when_reading_and_writing(tmp_path):
    """A link in a folder (read) and a link as a tensor's file (written): SymlinkError both times."""
    TensorDict({"x": torch.zeros(3)}, [3]).memmap(tmp_path / "d")
    os.rename(tmp_path / "d" / "x.memmap", tmp_path / "outside")
    os.symlink(tmp_path / "outside", tmp_path / "d" / "x.memmap")
    with pytest.raises(errors.SymlinkError, match="symbolic link") as read:
        TensorDict.load_memmap(tmp_path / "d")
    with pytest.raises(errors.SymlinkError, match="symbolic link") as written:
        MemoryMappedTensor.from_tensor(torch.zeros(3), filename=tmp_path / "d" / "x.memmap")
    assert isinstance(read.value, ValueError) and isinstance(written.value, RuntimeError)


def test_a_locked_tensordict_raises_locked_error_in_every_class(tmp_path):
    """Adding a key to a locked TensorDict, lazy stack or memory-mapped tensordict: LockedError."""
    stack = lazy_stack([_td(), _td()]).lock_()
    for locked in (_td().lock_(), stack, _td().memmap(tmp_path / "m")):
        with pytest.raises(errors.LockedError, match="locked"):
            locked.set("new", torch.zeros(locked.batch_size))
