"""Autograd through tensordicts: requires_grad, grad, zero_grad, backward, torch.autograd.grad."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import TensorDict, lazy_stack


def make_td():
    return TensorDict({"a": torch.ones(3), "n": {"b": torch.ones(3, 2)}}, [3])


def test_requires_grad_sets_the_flag_on_every_leaf():
    """requires_grad_() returns the tensordict with every leaf, nested ones too, requiring grad."""
    td = make_td()
    assert not td.requires_grad
    assert td.requires_grad_() is td
    assert td.requires_grad
    assert td["a"].requires_grad
    assert td["n", "b"].requires_grad
    td.requires_grad_(False)
    assert not td["a"].requires_grad
    assert not td.requires_grad


def test_requires_grad_refuses_an_integer_leaf():
    """requires_grad_() on a tensordict with an integer leaf raises RuntimeError."""
    td = TensorDict({"i": torch.arange(3)}, [3])
    with pytest.raises(RuntimeError, match="floating point"):
        td.requires_grad_()
    assert not td["i"].requires_grad


# differs from the reference: it sets the flags of the leaves before the integer one
def test_requires_grad_refusal_changes_no_flag():
    """A refused requires_grad_() leaves every floating-point leaf's flag as it was."""
    td = TensorDict({"a": torch.ones(3), "i": torch.arange(3)}, [3])
    with pytest.raises(RuntimeError, match="'i'"):
        td.requires_grad_()
    assert not td["a"].requires_grad


def test_grad_is_none_before_backward_and_a_tensordict_after():
    """grad is None until backward, then a tensordict of the leaves' gradients."""
    td = make_td().requires_grad_()
    assert td.grad is None
    ((td["a"] * 2).sum() + td["n", "b"].sum()).backward()
    grad = td.grad
    assert grad.batch_size == td.batch_size
    assert set(grad.keys(True, True)) == {"a", ("n", "b")}
    assert torch.equal(grad["a"], torch.full((3,), 2.0))
    assert torch.equal(grad["n", "b"], torch.ones(3, 2))


def test_grad_leaves_out_leaves_without_a_gradient():
    """A leaf that got no gradient is not a key of grad."""
    td = TensorDict(
        {"a": torch.ones(2, requires_grad=True), "b": torch.ones(2, requires_grad=True)}, [2]
    )
    td["a"].sum().backward()
    assert list(td.grad.keys()) == ["a"]


def test_zero_grad_drops_or_zeroes_the_gradients():
    """zero_grad() sets grads to None; zero_grad(set_to_none=False) fills them with zeros."""
    td = make_td().requires_grad_()
    td["a"].sum().backward()
    assert td.zero_grad(set_to_none=False) is td
    assert torch.equal(td["a"].grad, torch.zeros(3))
    assert td.zero_grad() is td
    assert td["a"].grad is None
    assert td.grad is None


def test_backward_of_scalar_leaves_accumulates_every_leaf():
    """backward() on scalar leaves sums their gradients into the inputs."""
    x = torch.ones(3, requires_grad=True)
    assert TensorDict({"a": (x * 3).sum(), "b": (x**2).sum()}, []).backward() is None
    assert torch.equal(x.grad, torch.full((3,), 5.0))


def test_backward_of_non_scalar_leaves_needs_a_gradient():
    """backward() without gradient on a non-scalar leaf raises RuntimeError naming the key."""
    x = torch.ones(3, requires_grad=True)
    out = TensorDict({"a": x * 3}, [3])
    with pytest.raises(RuntimeError, match="scalar outputs.*'a'"):
        out.backward()
    out.backward(TensorDict({"a": torch.ones(3)}, [3]))
    assert torch.equal(x.grad, torch.full((3,), 3.0))


def test_backward_with_a_gradient_lacking_a_key_raises_key_error():
    """A gradient tensordict without one of the keys gets a KeyError naming it."""
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(KeyError, match="'a'"):
        TensorDict({"a": x * 3}, [3]).backward(TensorDict({"b": torch.ones(3)}, [3]))


def test_backward_skips_leaves_that_do_not_require_grad():
    """Constant, integer and non-tensor leaves take no part in backward(), with or without gradient."""
    x = torch.ones(3, requires_grad=True)
    out = TensorDict(a=(x * 2).sum(), b=torch.ones(4), i=torch.arange(3), s="text")
    out.backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))
    x.grad = None
    TensorDict(a=x * 2, b=torch.ones(4)).backward(TensorDict(a=torch.ones(3)))
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_backward_without_any_differentiable_leaf_raises():
    """backward() of a tensordict where no leaf requires gradients raises RuntimeError naming its keys."""
    with pytest.raises(RuntimeError, match="requires gradients.*'a', 'b'"):
        TensorDict(a=torch.randn(3), b=torch.ones(2)).backward()


def test_autograd_grad_returns_a_tensordict_shaped_like_the_inputs():
    """torch.autograd.grad(out_td, in_td, grad_td) gives a tensordict of the inputs' gradients."""
    inputs = TensorDict({"a": torch.ones(3, requires_grad=True)}, [3])
    out = inputs.apply(lambda x: x * 3)
    grads = torch.autograd.grad(out, inputs, torch.ones_like(out))
    assert isinstance(grads, TensorDict)
    assert grads.batch_size == inputs.batch_size
    assert torch.equal(grads["a"], torch.full((3,), 3.0))
    assert inputs["a"].grad is None


def test_autograd_grad_of_scalar_outputs_needs_no_grad_outputs():
    """Scalar output leaves need no grad_outputs."""
    inputs = TensorDict({"a": torch.ones(3, requires_grad=True)}, [3])
    out = inputs.apply(lambda x: (x * 3).sum(), batch_size=[])
    assert torch.equal(torch.autograd.grad(out, inputs)["a"], torch.full((3,), 3.0))


def test_autograd_grad_refuses_tensor_inputs_for_tensordict_outputs():
    """torch.autograd.grad(out_td, tensor) raises ValueError: the inputs must be a tensordict."""
    inputs = TensorDict({"a": torch.ones(3, requires_grad=True)}, [3])
    out = inputs.apply(lambda x: (x * 3).sum(), batch_size=[])
    with pytest.raises(ValueError, match="TensorDictBase as input"):
        torch.autograd.grad(out, inputs["a"])


def test_detach_gives_leaves_outside_the_graph():
    """detach() returns leaves that require no grad; detach_() detaches in place."""
    td = make_td().requires_grad_()
    assert not td.detach()["a"].requires_grad
    assert td["a"].requires_grad
    out = td * 2
    assert out.detach_() is out
    assert out["a"].grad_fn is None
    assert not out["a"].requires_grad


def test_lazy_stack_reaches_the_members_leaves():
    """requires_grad_, grad and zero_grad of a lazy stack act on its members' own tensors."""
    stack = lazy_stack([TensorDict({"a": torch.ones(2)}, [2]) for _ in range(2)])
    assert stack.requires_grad_() is stack
    assert all(m["a"].requires_grad for m in stack.tensordicts)
    assert stack.grad is None
    (stack["a"] * 2).sum().backward()
    assert torch.equal(stack.grad["a"], torch.full((2, 2), 2.0))
    assert stack.zero_grad() is stack
    assert stack.tensordicts[0]["a"].grad is None


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(-4, 4, allow_nan=False), n=st.integers(1, 4))
def test_autograd_grad_matches_the_tensor_gradient(scale, n):
    """The gradient through a tensordict equals the one computed on the tensor alone."""
    x = torch.linspace(-1, 1, n, requires_grad=True)
    td = TensorDict({"x": x}, [n])
    out = td.apply(lambda v: (scale * v**2).sum(), batch_size=[])
    (expected,) = torch.autograd.grad((scale * x**2).sum(), x)
    assert torch.allclose(torch.autograd.grad(out, td)["x"], expected)


def test_backward_with_a_tensor_as_gradient_raises_type_error():
    """backward(gradient=tensor) raises TypeError: the gradient is a tensordict keyed like the outputs."""
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="takes a tensordict"):
        TensorDict({"a": x * 2}, [3]).backward(torch.ones(3))
