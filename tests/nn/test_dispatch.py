"""tensordict.nn.dispatch: calling functions on tensordicts with tensors, by key."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import dispatch


class _AddOne(nn.Module):
    in_keys = [("a", "c"), "d"]
    out_keys = ["b"]

    @dispatch(separator="__")
    def forward(self, tensordict):
        return tensordict.set("b", tensordict["a", "c"] + tensordict["d"])


def test_keyword_call_joins_nested_keys_with_the_separator():
    """module(a__c=..., d=...) fills ("a", "c") and "d", and returns the output tensor."""
    out = _AddOne()(a__c=torch.zeros(2), d=torch.ones(2))
    torch.testing.assert_close(out, torch.ones(2))


def test_positional_call_follows_the_key_order():
    """Tensors given by position go to the input keys in order."""
    torch.testing.assert_close(_AddOne()(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))


def test_tensordict_call_is_passed_through():
    """A tensordict (first, or as tensordict=) runs the function unchanged and returns its result."""
    td = TensorDict({("a", "c"): torch.zeros(()), "d": torch.ones(())})
    assert _AddOne()(td) is td
    assert _AddOne()(tensordict=td) is td
    assert td["b"] == 1


def test_input_given_twice_raises():
    """One input by position and by keyword is refused."""
    with pytest.raises(RuntimeError):
        _AddOne()(torch.zeros(2), a__c=torch.ones(2))


def test_several_outputs_come_back_as_a_tuple_without_the_ignored_key():
    """Several out keys give a tuple in their order; the key "_" is left out."""

    class Split(nn.Module):
        in_keys = ["x"]
        out_keys = ["low", "_", "high"]

        @dispatch
        def forward(self, tensordict):
            x = tensordict["x"]
            return tensordict.update({"low": x - 1, "_": x, "high": x + 1})

    low, high = Split()(x=torch.zeros(()))
    assert (low.item(), high.item()) == (-1.0, 1.0)


def test_plain_function_with_keys_in_the_decorator():
    """A function names its keys in the decorator; an attribute name needs a method."""

    @dispatch(source=["x"], dest=["y"])
    def double(tensordict):
        return tensordict.set("y", tensordict["x"] * 2)

    torch.testing.assert_close(double(x=torch.ones(2)), torch.full((2,), 2.0))

    @dispatch
    def no_keys(tensordict):
        return tensordict

    with pytest.raises(RuntimeError):
        no_keys(x=torch.ones(2))


def test_first_argument_must_be_named_tensordict():
    """Decorating a function whose data argument has another name raises."""
    with pytest.raises(RuntimeError, match="tensordict"):

        @dispatch(source=["x"], dest=["y"])
        def bad(data):
            return data


def test_auto_batch_size():
    """With auto_batch_size (the default) the built tensordict takes the shared leading shape."""
    sizes = []

    @dispatch(source=["x", "y"], dest=["x"])
    def record(tensordict):
        sizes.append(tensordict.batch_size)
        return tensordict

    @dispatch(source=["x", "y"], dest=["x"], auto_batch_size=False)
    def record_flat(tensordict):
        sizes.append(tensordict.batch_size)
        return tensordict

    record(x=torch.zeros(3, 4), y=torch.zeros(3, 5))
    record_flat(x=torch.zeros(3, 4), y=torch.zeros(3, 5))
    assert sizes == [torch.Size([3]), torch.Size([])]


def test_other_keywords_reach_the_function():
    """Keywords that name no input key are passed on."""

    class Scale(nn.Module):
        in_keys = ["x"]
        out_keys = ["y"]

        @dispatch
        def forward(self, tensordict, factor=1.0):
            return tensordict.set("y", tensordict["x"] * factor)

    torch.testing.assert_close(Scale()(x=torch.ones(1), factor=3.0), torch.full((1,), 3.0))
