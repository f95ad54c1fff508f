"""UnbatchedTensor: an entry without batch dimensions that batch operations leave unchanged."""

from __future__ import annotations

import pickle

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tensordict import TensorDict
from tensordict._unbatched import UnbatchedTensor


def _td() -> TensorDict:
    return TensorDict(
        a=UnbatchedTensor(torch.arange(12.0).reshape(3, 4)), b=torch.zeros(2, 5), batch_size=[2]
    )


def test_it_is_a_tensor_with_its_own_shape():
    """An UnbatchedTensor is a torch.Tensor whose shape is its payload's."""
    u = UnbatchedTensor(torch.zeros(3, 4))
    assert isinstance(u, torch.Tensor)
    assert u.shape == torch.Size([3, 4])
    assert u.batch_size == torch.Size([])
    assert UnbatchedTensor(torch.zeros(3), batch_size=[5]).batch_size == torch.Size([5])


def test_data_that_is_not_a_tensor_is_converted():
    """A list becomes a tensor payload."""
    u = UnbatchedTensor([1, 2, 3])
    assert u.tolist() == [1, 2, 3]
    assert repr(u) == "UnbatchedTensor(tensor([1, 2, 3]))"


def test_a_tensordict_accepts_any_shape_and_sets_the_batch_size():
    """A stored unbatched entry is not checked against the batch size and gets it."""
    td = TensorDict(a=UnbatchedTensor(torch.zeros(7)), batch_size=[2])
    assert td["a"].shape == torch.Size([7])
    assert td["a"].batch_size == torch.Size([2])
    assert type(td["a"]) is UnbatchedTensor


def test_repr_shows_the_whole_payload_shape():
    """The tensordict's repr gives the unbatched entry's whole shape."""
    assert repr(_td()) == "TensorDict(batch_size=[2], fields={a: f32[3,4], b: f32[5]})"


OPERATIONS = {
    "td[0]": lambda td: td[0],
    "td[1:]": lambda td: td[1:],
    "mask": lambda td: td[torch.tensor([True, False])],
    "long index": lambda td: td[torch.tensor([0, 0, 1])],
    "reshape": lambda td: td.reshape(1, 2),
    "unsqueeze": lambda td: td.unsqueeze(0),
    "expand": lambda td: td.expand(3, 2),
    "squeeze": lambda td: td.unsqueeze(0).squeeze(0),
    "stack": lambda td: torch.stack([td, td]),
    "cat": lambda td: torch.cat([td, td]),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_batch_operations_leave_the_payload_unchanged(name):
    """Indexing, shape operations, stack and cat keep the entry's data and shape."""
    td = _td()
    result = OPERATIONS[name](td)
    assert type(result["a"]) is UnbatchedTensor
    assert result["a"].shape == torch.Size([3, 4])
    assert result["a"].data_ptr() == td["a"].data_ptr()
    assert result["a"].batch_size == result.batch_size


def test_two_batch_dims_operations():
    """permute, transpose and flatten of the batch dims leave the entry as it is."""
    td = TensorDict(a=UnbatchedTensor(torch.zeros(3, 4)), batch_size=[2, 3])
    assert td.permute(1, 0)["a"].shape == torch.Size([3, 4])
    assert td.transpose(1, 0)["a"].shape == torch.Size([3, 4])
    assert td.flatten(0, 1)["a"].shape == torch.Size([3, 4])


def test_split_and_unbind_give_the_payload_to_each_part():
    """Each part of split and unbind holds the whole payload."""
    td = _td()
    assert [p["a"].shape for p in td.unbind(0)] == [torch.Size([3, 4])] * 2
    assert [p["a"].shape for p in td.split(1)] == [torch.Size([3, 4])] * 2


def test_other_operations_apply_to_it_as_a_tensor():
    """clone, to, arithmetic and apply go through the entry and keep the class."""
    td = _td()
    for result in (td.clone(), td.to(torch.float64), td + 1, td.apply(lambda x: x * 2)):
        assert type(result["a"]) is UnbatchedTensor
        assert result["a"].shape == torch.Size([3, 4])
    assert (td + 1)["a"][0, 0].item() == 1.0
    assert td.clone()["a"].data_ptr() != td["a"].data_ptr()


def test_operations_on_the_tensor_keep_the_class():
    """Torch functions and indexing of the tensor itself return an UnbatchedTensor."""
    u = UnbatchedTensor(torch.zeros(3, 4))
    assert type(u + 1) is UnbatchedTensor
    assert u[0].shape == torch.Size([4])
    assert type(torch.zeros_like(u)) is UnbatchedTensor


def test_index_assignment_writes_the_payload_whole():
    """td[idx] = other copies other's unbatched payload whole, whatever the index."""
    td = _td()
    td[0] = TensorDict(a=UnbatchedTensor(torch.ones(3, 4)), b=torch.ones(5))
    assert td["a"].sum().item() == 12.0
    assert td["b"][0].sum().item() == 5.0
    assert td["b"][1].sum().item() == 0.0


def test_index_assignment_without_the_key_leaves_it():
    """An assigned value without the unbatched key leaves its entry unchanged."""
    td = _td()
    td[0] = TensorDict(b=torch.ones(5))
    assert torch.equal(td["a"], torch.arange(12.0).reshape(3, 4))


# differs from the reference: it writes the number into the payload's own row 1 (its index
# meant for the batch), against its documented rule that a value without the key leaves it
def test_assigning_a_number_at_an_index_leaves_it():
    """td[idx] = number writes the batched entries only; the unbatched payload is unchanged."""
    td = _td()
    td[1] = 3.0
    assert torch.equal(td["a"], torch.arange(12.0).reshape(3, 4))
    assert td["b"][1].tolist() == [3.0] * 5


def test_auto_batch_size_ignores_it():
    """auto_batch_size_ takes the batch size from the other entries."""
    td = TensorDict(a=UnbatchedTensor(torch.zeros(7)), b=torch.zeros(2, 3))
    assert td.auto_batch_size_().batch_size == torch.Size([2, 3])


def test_setting_a_new_batch_size_ignores_it():
    """Assigning batch_size checks only the other entries."""
    td = _td()
    td.batch_size = []
    assert td.batch_size == torch.Size([])
    assert td["a"].shape == torch.Size([3, 4])


def test_memmap_is_refused_naming_the_key(tmp_path):
    """memmap of a tensordict holding one raises NotImplementedError and writes nothing."""
    with pytest.raises(NotImplementedError, match="'a'"):
        _td().memmap(tmp_path / "out")
    assert not (tmp_path / "out" / "meta.json").exists()


def test_pickle_round_trip():
    """A pickled UnbatchedTensor comes back with its class and data."""
    back = pickle.loads(pickle.dumps(UnbatchedTensor(torch.arange(3))))
    assert type(back) is UnbatchedTensor
    assert back.tolist() == [0, 1, 2]


@given(n=st.integers(1, 5), size=st.integers(0, 4), i=st.integers(0, 4))
def test_any_row_holds_the_same_payload(n, size, i):
    """For any batch and payload size, every row of the tensordict holds the whole payload."""
    payload = torch.arange(float(size))
    td = TensorDict(u=UnbatchedTensor(payload), x=torch.zeros(n), batch_size=[n])
    row = td[i % n]
    assert torch.equal(row["u"], payload)
    assert row["u"].batch_size == torch.Size([])
