"""The small tools of ``tensordict.utils``: isin, remove_duplicates, timeit, print_directory_tree."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.utils import isin, print_directory_tree, remove_duplicates, timeit


def test_isin_compares_slices_along_dim():
    """An element is in the reference when its slice of the entry equals one of the reference's."""
    td = TensorDict(x=torch.tensor([[1, 2], [3, 4], [1, 2], [5, 6]]), batch_size=[4])
    reference = TensorDict(x=torch.tensor([[1, 2], [5, 6]]), batch_size=[2])
    assert isin(td, reference, key="x").tolist() == [True, False, True, True]


def test_isin_along_dim_one():
    """dim=1 compares the columns."""
    td = TensorDict(x=torch.tensor([[1, 2, 3], [4, 5, 6]]), batch_size=[2, 3])
    reference = TensorDict(x=torch.tensor([[3], [6]]), batch_size=[2, 1])
    assert isin(td, reference, key="x", dim=1).tolist() == [False, False, True]


def test_isin_refuses_a_missing_key_and_other_batch_dims():
    """A missing key raises KeyError; tensordicts with other numbers of batch dims ValueError."""
    td = TensorDict(x=torch.zeros(3), batch_size=[3])
    with pytest.raises(KeyError):
        isin(td, td, key="y")
    with pytest.raises(ValueError):
        isin(td, TensorDict(x=torch.zeros(3, 1), batch_size=[3, 1]), key="x")


def test_remove_duplicates_keeps_the_first_of_each_value():
    """The first element of each value is kept, sorted by value; indices map back."""
    td = TensorDict(x=torch.tensor([7, 1, 7, 3]), y=torch.arange(4), batch_size=[4])
    out, indices = remove_duplicates(td, key="x", return_indices=True)
    assert out["x"].tolist() == [1, 3, 7]
    assert out["y"].tolist() == [1, 3, 0]
    assert indices.tolist() == [2, 0, 2, 1]
    assert remove_duplicates(td, "x")["y"].tolist() == [1, 3, 0]


def test_remove_duplicates_of_rows():
    """Rows of a 2-d entry are compared whole."""
    td = TensorDict(x=torch.tensor([[1, 2], [1, 2], [0, 1]]), batch_size=[3])
    assert remove_duplicates(td, "x")["x"].tolist() == [[0, 1], [1, 2]]


def test_remove_duplicates_refuses_a_bad_dim():
    """A dim that is not a batch dim raises ValueError."""
    with pytest.raises(ValueError):
        remove_duplicates(TensorDict(x=torch.zeros(3), batch_size=[3]), "x", dim=2)


def test_timeit_as_decorator_and_block():
    """timeit wraps a function and a with block; print and erase work."""
    timeit.erase()

    @timeit("fn")
    def fn():
        return 1

    assert fn() == 1
    with timeit("block"):
        assert fn() == 1
    timeit.print()
    timeit.erase()


# differs from the reference: it has no todict() to read the figures back
def test_timeit_records_each_name():
    """todict gives the mean time of each recorded name."""
    timeit.erase()
    with timeit("block"):
        pass
    assert list(timeit.todict()) == ["block"]
    assert timeit.print().startswith("block took")
    timeit.erase()
    assert timeit.todict() == {}


def test_print_directory_tree_lists_a_memmap_folder(tmp_path):
    """The tree names the folder's files, one level deeper each."""
    TensorDict(a=torch.zeros(3), sub={"b": torch.ones(3)}, batch_size=[3]).memmap(tmp_path / "td")
    tree = print_directory_tree(str(tmp_path / "td"), display_metadata=False)
    names = sorted(line.strip() for line in tree.splitlines()[1:])
    assert "a.memmap" in names and "meta.json" in names and "b.memmap" in names
