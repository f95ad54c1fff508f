"""UnbatchedTensor: an entry without batch dimensions that batch operations leave unchanged."""

from __future__ import annotations

import math
import pickle
import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack
from tensordict._unbatched import UnbatchedTensor

from conftest import ours_only


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
@ours_only
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


PLAIN_TENSORS = [
    torch.tensor(3),
    torch.tensor([3]),
    torch.tensor(True),
    torch.tensor(1.25),
    torch.tensor(1 + 2j),
    torch.tensor([1, 2]),
    torch.empty(0),
]
CONVERSIONS = {
    "str": str,
    "format": format,
    "format .2f": lambda x: format(x, ".2f"),
    "f-string": lambda x: f"{x:>8}",
    "round": round,
    "round 1": lambda x: round(x, 1),
    "trunc": math.trunc,
}


def _outcome(fun, value):
    try:
        return fun(value)
    except (TypeError, ValueError, RuntimeError) as err:
        return type(err), str(err).replace("UnbatchedTensor", "Tensor")


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
@pytest.mark.parametrize("data", PLAIN_TENSORS, ids=str)
def test_python_conversions_give_what_the_plain_tensor_gives(name, data):
    """str, format (a 0-dim one as its number), round and trunc give the plain tensor's result or error."""
    fun = CONVERSIONS[name]
    result = _outcome(fun, UnbatchedTensor(data))
    assert result == _outcome(fun, data)
    assert not isinstance(result, UnbatchedTensor)


def test_stacking_payloads_of_different_storages_warns_and_keeps_the_first():
    """torch.stack of members whose unbatched payloads differ keeps the first one, with a UserWarning."""
    first = TensorDict(a=torch.ones(3), u=UnbatchedTensor(torch.zeros(5)), batch_size=[3])
    second = TensorDict(a=torch.ones(3), u=UnbatchedTensor(torch.ones(5)), batch_size=[3])
    with pytest.warns(UserWarning, match="UnbatchedTensor"):
        out = torch.stack([first, second])
    assert out["u"].data_ptr() == first["u"].data_ptr()
    assert out["u"].batch_size == torch.Size([2, 3])


def test_stacking_one_payload_is_silent():
    """Members that share the payload stack without a warning."""
    payload = UnbatchedTensor(torch.zeros(5))
    members = [TensorDict(u=payload, batch_size=[3]) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = torch.stack(members)
    assert out["u"].data_ptr() == payload.data_ptr()


def test_a_lazy_stack_reads_the_first_payload_with_its_own_batch_size():
    """Reading an unbatched key of a lazy stack gives the payload, batch size the stack's."""
    payload = torch.tensor(1)
    members = [
        TensorDict(x=torch.zeros(2), u=UnbatchedTensor(payload), batch_size=[2]) for _ in range(3)
    ]
    stacked = lazy_stack(members, 0)
    assert stacked["u"].shape == torch.Size([])
    assert stacked["u"].batch_size == torch.Size([3, 2])
    assert stacked["u"].data_ptr() == payload.data_ptr()
    assert stacked[1]["u"].batch_size == torch.Size([2])


def test_moving_keys_keeps_the_entry_object():
    """copy, select, exclude, unflatten_keys and flatten_keys keep the very entry object."""
    td = TensorDict(
        a=UnbatchedTensor(torch.zeros(4)),
        b=torch.zeros(3),
        c_d=UnbatchedTensor(torch.zeros(4)),
        batch_size=[3],
    )
    assert td.copy()["a"] is td["a"]
    assert td.select("a")["a"] is td["a"]
    assert td.exclude("b")["a"] is td["a"]
    nested = td.unflatten_keys(separator="_")
    assert nested["c", "d"] is td["c_d"]
    assert nested.flatten_keys()["c.d"] is td["c_d"]


def test_stacking_a_copy_of_the_same_payload_is_silent():
    """A member whose payload is a copy of the same values (contiguous(), clone()) stacks without a warning."""
    td = TensorDict(a=torch.ones(3), u=UnbatchedTensor(torch.arange(5.0)), batch_size=[3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = torch.stack([td, td.clone()])
    assert out["u"].batch_size == torch.Size([2, 3])


def test_pad_keeps_an_unbatched_payload_as_it_is():
    """pad() pads the batched leaves and keeps an unbatched entry's payload, with the new batch size."""
    from tensordict.functional import pad

    td = TensorDict(a=torch.ones(3, 4), u=UnbatchedTensor(torch.arange(5.0)), batch_size=[3, 4])
    out = pad(td, [0, 1, 0, 2])
    assert out.batch_size == (4, 6) and out["a"].shape == (4, 6)
    assert out.get("u").data_ptr() == td.get("u").data_ptr()
    assert torch.equal(out.get("u"), torch.arange(5.0))
