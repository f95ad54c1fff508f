"""Index writes with a row out of range: refused before any leaf is written, whatever the index and value."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.errors import DimensionError

_CASES = {
    "2-D rows": ([4], torch.tensor([[0, 1], [2, 9]]), [2, 2], "index 9"),
    "one tensor per dim": ([4, 3], (torch.tensor([0, 1]), torch.tensor([1, 5])), [2], "index 5"),
    "int32 rows": ([4], torch.tensor([0, 1, 7], dtype=torch.int32), [3], "index 7"),
    "list of rows": ([4], [0, 1, 7], [3], "index 7"),
    "negative list": ([4], [0, -5], [2], "index -5"),
    "rows and a slice": ([4, 3], (slice(None), torch.tensor([0, 3])), [4, 2], "index 3"),
}


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

    def fixed(i):
        if isinstance(i, torch.Tensor):
            return i.clamp(-1, 2)
        return [min(max(r, -1), 2) for r in i] if isinstance(i, list) else i

    index = tuple(fixed(i) for i in index) if isinstance(index, tuple) else fixed(index)
    td = TensorDict({"a": torch.zeros(*batch, 2)}, batch)
    td[index] = TensorDict({"a": torch.ones(*value_batch, 2)}, value_batch)
    expected = torch.zeros(*batch, 2)
    expected[index] = 1.0
    assert torch.equal(td["a"], expected)
