"""The tensor-collection flag and its predicates (tensordict._collection)."""

import torch

from tensordict import NonTensorData, TensorDict, is_non_tensor, is_tensor_collection


def test_is_tensor_collection_takes_datatype_by_name():
    """is_tensor_collection(datatype=...) checks a class or an object's class."""
    assert is_tensor_collection(datatype=TensorDict)
    assert is_tensor_collection(datatype=TensorDict())
    assert not is_tensor_collection(datatype=torch.zeros(2))


def test_is_non_tensor_takes_data_by_name():
    """is_non_tensor(data=...) is True for a non-tensor entry only."""
    assert is_non_tensor(data=NonTensorData("a"))
    assert not is_non_tensor(data=torch.zeros(2))
