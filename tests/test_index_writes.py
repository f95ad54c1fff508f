"""Index writes with a row out of range: refused before any leaf is written, whatever the index and value."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.errors import DimensionError, EntryDtypeError

_CASES = {
    "2-D rows": ([4], torch.tensor([[0, 1], [2, 9]]), [2, 2], "index 9"),
    "one tensor per dim": ([4, 3], (torch.tensor([0, 1]), torch.tensor([1, 5])), [2], "index 5"),
    "int32 rows": ([4], torch.tensor([0, 1, 7], dtype=torch.int32), [3], "index 7"),
    "list of rows": ([4], [0, 1, 7], [3], "index 7"),
    "negative list": ([4], [0, -5], [2], "index -5"),
    "rows and a slice": ([4, 3], (slice(None), torch.tensor([0, 3])), [4, 2], "index 3"),
}


def _in_range(item):
    """An index part of the cases above with its rows put back in range (-1 .. 2)."""
    if isinstance(item, torch.Tensor):
        return item.clamp(-1, 2)
    return [min(max(r, -1), 2) for r in item] if isinstance(item, list) else item


def _values(batch):
    return {
        "tensordict": TensorDict({"a": torch.ones(*batch, 2), "b": torch.ones(*batch, 2)}, batch),
        "dict": {"a": torch.ones(*batch, 2), "b": torch.ones(*batch, 2)},
        "number": 1.0,
    }


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("kind", ["tensordict", "dict", "number"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_row_out_of_range_writes_no_leaf(tmp_path, case, kind, mapped):
    """td[index] = value with a row out of range raises DimensionError (an IndexError)
    naming the row, and every leaf keeps its values (torch alone writes the leaves, or
    the rows, before the bad one)."""
    batch, index, value_batch, row = _CASES[case]
    td = TensorDict({"a": torch.zeros(*batch, 2), "b": torch.zeros(*batch, 2)}, batch)
    if mapped:
        td = td.memmap(tmp_path / "td")
    with pytest.raises(DimensionError, match=f"{row}.*nothing was written"):
        td[index] = _values(value_batch)[kind]
    assert td["a"].eq(0).all() and td["b"].eq(0).all()


@pytest.mark.parametrize("case", sorted(_CASES))
def test_the_same_indexes_in_range_write_their_rows(case):
    """The indexes of the cases above, their bad row put back in range, write exactly the
    rows torch's indexing picks on a plain tensor."""
    batch, index, value_batch, _ = _CASES[case]

    index = tuple(_in_range(i) for i in index) if isinstance(index, tuple) else _in_range(index)
    td = TensorDict({"a": torch.zeros(*batch, 2)}, batch)
    td[index] = TensorDict({"a": torch.ones(*value_batch, 2)}, value_batch)
    expected = torch.zeros(*batch, 2)
    expected[index] = 1.0
    assert torch.equal(td["a"], expected)


@pytest.mark.parametrize("mapped", [False, True])
@pytest.mark.parametrize("kind", ["tensordict", "dict"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_leaf_of_another_dtype_writes_no_leaf(tmp_path, case, kind, mapped):
    """td[index] = value with a tensor or list in the index, whose second leaf has another
    dtype than its entry, raises EntryDtypeError (a RuntimeError, as torch's index writes,
    which do not cast) naming the key, and no leaf changes."""
    batch, index, value_batch, _ = _CASES[case]
    index = tuple(_in_range(i) for i in index) if isinstance(index, tuple) else _in_range(index)
    td = TensorDict({"a": torch.zeros(*batch, 2), "b": torch.zeros(*batch, 2)}, batch)
    if mapped:
        td = td.memmap(tmp_path / "td")
    value = _values(value_batch)[kind]
    value["b"] = value["b"].double()
    with pytest.raises(EntryDtypeError, match="torch.float64 into the entry 'b' of torch.float32"):
        td[index] = value
    assert td["a"].eq(0).all() and td["b"].eq(0).all()


def test_basic_indexes_cast_as_torch_does():
    """An index without a tensor (an int, a slice, a bool) writes a value of another dtype
    cast to the entry's, as torch's basic indexing does."""
    td = TensorDict({"a": torch.zeros(4, 2)}, [4])
    td[1:3] = TensorDict({"a": torch.ones(2, 2, dtype=torch.float64)}, [2])
    td[0] = {"a": torch.full((2,), 2, dtype=torch.int64)}
    td[True] = TensorDict({"a": td["a"].unsqueeze(0).double() + 1}, [1, 4])
    assert td["a"][:, 0].tolist() == [3.0, 2.0, 2.0, 1.0] and td["a"].dtype is torch.float32
