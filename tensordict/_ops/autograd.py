"""Autograd through tensordicts: gradient flags, gradients, ``backward`` and ``torch.autograd.grad``.

Every method walks the leaves with ``_fast_apply``, so that a lazy stack reaches
its members' own tensors (the ones in the autograd graph), never stacked copies.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._ops._contract import Contract
from tensordict._ops.apply import tensor_leaves
from tensordict._torch_function import implements
from tensordict._typing import T
from tensordict.errors import KeyMismatchError, NotDifferentiableError

_MISSING = object()


def _paired(td, other, what: str, *, differentiable: bool = False) -> list:
    """``(key, leaf, other_leaf)`` of every tensor leaf of ``td`` and the leaf of ``other`` at its key.

    With ``differentiable``, only the leaves that require gradients are paired (the
    others need no entry in ``other``).
    """
    found: list = []

    def record(key, value, theirs):
        if isinstance(value, torch.Tensor) and (value.requires_grad or not differentiable):
            if theirs is _MISSING:
                msg = f"missing gradient entry for key {key!r} in {what}"
                raise KeyMismatchError(msg)
            found.append((key, value, theirs))

    td._fast_apply(record, other, named=True, nested_keys=True, default=_MISSING)
    return found


def _check_differentiable(leaves: list) -> None:
    for key, value in leaves:
        if not (value.is_floating_point() or value.is_complex()):
            msg = (
                f"the leaf at key {key!r} has dtype {value.dtype}: only tensors of floating "
                "point dtype can require gradients; exclude it or convert it first"
            )
            raise NotDifferentiableError(msg)


class AutogradMixin(Contract):
    """Gradient flags, gradients and backward passes of every tensordict class.

    Calls: ``_del_str``, ``_fast_apply``, ``_items_level``, ``_keys_level``, ``_propagate_lock``.
    """

    __slots__ = ()

    @property
    def requires_grad(self) -> bool:
        """True when any leaf tensor requires a gradient.

        Examples:
            >>> TensorDict({"a": torch.zeros(2, requires_grad=True)}, [2]).requires_grad
            True
        """
        return any(value.requires_grad for _, value in tensor_leaves(self))

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Sets ``requires_grad`` on every leaf tensor, nested ones included, and returns the tensordict.

        Setting the flag needs floating-point (or complex) leaves; every leaf is checked
        before any flag changes, so a refused call changes nothing.

        Args:
            requires_grad (bool, optional): the flag to set. Defaults to True.

        Returns:
            The tensordict itself.

        Raises:
            NotDifferentiableError: (a ``RuntimeError``) when setting the flag and a leaf has
                an integer or boolean dtype, naming its key.
            RuntimeError: from torch, when clearing the flag of a tensor that autograd computed.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2]).requires_grad_()
            >>> td["a"].requires_grad, td["b", "c"].requires_grad
            (True, True)
        """
        leaves = tensor_leaves(self)
        if requires_grad:
            _check_differentiable(leaves)
        for _, value in leaves:
            value.requires_grad_(requires_grad)
        return self

    @property
    def grad(self: T) -> T | None:
        """A tensordict of the leaves' gradients, or None when no leaf has one.

        Leaves without a gradient (and sub-tensordicts left empty) are not in it; the
        result has this tensordict's batch size, is locked if this tensordict is, and a
        lazy stack gives a lazy stack.

        Returns:
            A tensordict, or None.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2)}, [2]).requires_grad_()
            >>> td.grad is None
            True
            >>> (td["a"] * 3).sum().backward()
            >>> td.grad["a"]
            tensor([3., 3.])
        """
        if not any(value.grad is not None for _, value in tensor_leaves(self)):
            return None
        grads = _prune(self._fast_apply(lambda x: x.grad if isinstance(x, torch.Tensor) else None))
        if self.is_locked:
            grads._propagate_lock(True)
        return grads

    def zero_grad(self: T, set_to_none: bool = True) -> T:
        """Clears the gradient of every leaf tensor, and returns the tensordict.

        Args:
            set_to_none (bool, optional): drop the gradients (``grad`` becomes None); False
                fills them with zeros instead. Defaults to True.

        Returns:
            The tensordict itself.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2)}, [2]).requires_grad_()
            >>> td["a"].sum().backward()
            >>> td.zero_grad().grad is None
            True
        """
        for _, value in tensor_leaves(self):
            if set_to_none:
                value.grad = None
            elif value.grad is not None:
                value.grad.zero_()
        return self

    def backward(
        self,
        gradient: TensorCollection | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: TensorCollection | Sequence[torch.Tensor] | None = None,
    ) -> None:
        """Runs one backward pass from every leaf tensor, accumulating into the inputs' ``grad``.

        Only the leaves that require gradients take part; the others (constants, integer
        leaves, non-tensor entries) are skipped. Without ``gradient`` each of those leaves
        must be a scalar (as ``Tensor.backward`` needs); with it, ``gradient`` gives the
        gradient of each at the same key.

        Args:
            gradient (TensorDictBase, optional): the gradients of the leaves. Defaults to None.
            retain_graph (bool, optional): keep the graph for another pass. Defaults to
                ``create_graph``.
            create_graph (bool, optional): build the graph of the backward pass too.
                Defaults to False.
            inputs (TensorDictBase or sequence of torch.Tensor, optional): accumulate only
                into these tensors. Defaults to None, every leaf of the graph.

        Raises:
            RuntimeError: if no leaf requires gradients, or if ``gradient`` is None and a
                leaf that requires them is not a scalar (naming its key).
            KeyMismatchError: (a ``KeyError``) if ``gradient`` lacks the key of a leaf that
                requires gradients.
            TypeError: if ``gradient`` is not a tensordict.

        Examples:
            >>> x = torch.ones(3, requires_grad=True)
            >>> TensorDict({"a": (x * 2).sum(), "b": (x**2).sum()}, []).backward()
            >>> x.grad
            tensor([4., 4., 4.])
        """
        if gradient is None:
            pairs = [
                (key, value, None) for key, value in tensor_leaves(self) if value.requires_grad
            ]
            for key, value, _ in pairs:
                if value.numel() != 1:
                    msg = (
                        f"grad can be implicitly created only for scalar outputs: the leaf at "
                        f"key {key!r} has shape {tuple(value.shape)}; pass a gradient tensordict "
                        "with a tensor at each key of this one to backward()"
                    )
                    raise RuntimeError(msg)
        elif not is_tensor_collection(gradient):
            msg = (
                f"backward(gradient=...) takes a tensordict with a gradient at each key, got "
                f"{type(gradient).__name__}"
            )
            raise TypeError(msg)
        else:
            pairs = _paired(
                self, gradient, "the gradient tensordict passed to backward()", differentiable=True
            )
        if not pairs:
            msg = (
                "backward() needs at least one leaf tensor that requires gradients, and this "
                f"tensordict has none (its keys: {sorted(map(str, self.keys(True, True)))})"
            )
            raise RuntimeError(msg)
        if inputs is not None and hasattr(inputs, "batch_size"):
            inputs = [value for _, value in tensor_leaves(inputs)]
        torch.autograd.backward(
            [value for _, value, _ in pairs],
            None if gradient is None else [theirs for _, _, theirs in pairs],
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )


def _prune(td):
    """``td`` without the sub-tensordicts that hold no entry (at any depth)."""
    for key, value in list(td._items_level()):
        if isinstance(value, AutogradMixin):
            _prune(value)
            if not value._keys_level():
                td._del_str(key)
    return td


@implements(torch.autograd.grad)
def _autograd_grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused=None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
):
    """``torch.autograd.grad`` of tensordicts: the gradients, as a tensordict shaped like ``inputs``."""
    if isinstance(inputs, tuple) and len(inputs) == 1:
        inputs = inputs[0]
    if not hasattr(inputs, "_fast_apply"):
        msg = (
            "torch.autograd.grad for TensorDict only supports TensorDictBase as input (got tensors)"
        )
        raise ValueError(msg)
    if isinstance(outputs, tuple) and len(outputs) == 1:
        outputs = outputs[0]
    if hasattr(outputs, "_fast_apply"):
        if grad_outputs is None:
            out_tensors = [value for _, value in tensor_leaves(outputs)]
        else:
            pairs = _paired(outputs, grad_outputs, "the grad_outputs tensordict")
            out_tensors = [value for _, value, _ in pairs]
            grad_outputs = [theirs for _, _, theirs in pairs]
    else:
        out_tensors = outputs
    in_tensors = [value for _, value in tensor_leaves(inputs)]
    grads = torch.autograd.grad(
        out_tensors,
        in_tensors,
        grad_outputs=grad_outputs,
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=allow_unused,
        is_grads_batched=is_grads_batched,
        materialize_grads=materialize_grads,
    )
    results = iter(grads)
    return inputs._fast_apply(
        lambda _, x: next(results) if isinstance(x, torch.Tensor) else None, named=True
    )
