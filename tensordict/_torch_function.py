"""``torch.*`` functions called on tensordicts: one table, one dispatcher.

``torch.stack(tds)``, ``torch.cat(tds)``, ``torch.unbind(td)`` and friends reach
``__torch_function__`` of every tensordict class, which looks the function up in
``_TABLE``. Functions that only forward to a method of the tensordict are
registered here; ``stack`` and ``cat``, which build concrete classes, are
registered by :mod:`tensordict._stack`, a layer above the classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from tensordict._collection import is_tensor_collection
from tensordict.errors import InvalidArgumentError, NotTensorCollectionError

_TABLE: dict = {}


def implements(*funcs: Callable) -> Callable[[Callable], Callable]:
    """Registers the decorated function as the tensordict version of each torch function."""

    def register(fn):
        for func in funcs:
            _TABLE[func] = fn
        return fn

    return register


def dispatch(func: Callable, types: Iterable[type], args: tuple, kwargs: dict) -> Any:
    """Calls the tensordict version of ``func``, or returns ``NotImplemented`` when there is none."""
    impl = _TABLE.get(func)
    if impl is None:
        return NotImplemented
    return impl(*args, **kwargs)


@implements(torch.unbind)
def _unbind(td, dim: int = 0):
    return td.unbind(dim)


@implements(torch.split)
def _split(td, split_size_or_sections, dim: int = 0):
    return td.split(split_size_or_sections, dim)


@implements(torch.chunk)
def _chunk(td, chunks: int, dim: int = 0):
    return td.chunk(chunks, dim)


@implements(torch.reshape)
def _reshape(td, shape):
    return td.reshape(shape)


@implements(torch.permute)
def _permute(td, dims):
    return td.permute(*dims)


@implements(torch.transpose)
def _transpose(td, dim0, dim1):
    return td.transpose(dim0, dim1)


@implements(torch.squeeze)
def _squeeze(td, dim=None):
    return td.squeeze(dim)


@implements(torch.unsqueeze)
def _unsqueeze(td, dim):
    return td.unsqueeze(dim)


@implements(torch.flatten)
def _flatten(td, start_dim=0, end_dim=-1):
    return td.flatten(start_dim, end_dim)


@implements(torch.unflatten)
def _unflatten(td, dim, sizes):
    return td.unflatten(dim, sizes)


@implements(torch.clone)
def _clone(td, *, memory_format=None):
    return td.clone()


@implements(torch.gather)
def _gather(td, dim, index, *, out=None):
    return td.gather(dim, index, out=out)


@implements(torch.masked_select)
def _masked_select(td, mask):
    return td.masked_select(mask)


@implements(torch.where)
def _where(condition, input, other, *, out=None):  # noqa: A002 - torch's argument name
    if not is_tensor_collection(input):
        # torch.where(condition, value, td): the tensordict's values where condition is False
        return other.where(condition.logical_not(), input, out=out)
    return input.where(condition, other, out=out)


@implements(torch.broadcast_to)
def _broadcast_to(td, size):
    return td.broadcast_to(size)


@implements(torch.swapdims)
def _swapdims(td, dim0, dim1):
    return td.swapdims(dim0, dim1)


def _atleast_nd(name: str):
    # torch calls these with the tensors unpacked: one tensordict gives one result, several
    # give a tuple, as for tensors.
    def impl(*tds):
        results = tuple(getattr(td, name)() for td in tds)
        return results[0] if len(results) == 1 else results

    return impl


for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    _TABLE[getattr(torch, _name)] = _atleast_nd(_name)


def _reduction_of(size_average, reduce, reduction: str) -> str:
    """The reduction a loss applies: ``reduction``, unless torch's legacy arguments say otherwise."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _loss(func):
    def impl(input, target, size_average=None, reduce=None, reduction="mean", **kwargs):  # noqa: A002
        if not is_tensor_collection(input):
            msg = (
                f"{func.__name__}() takes a tensordict as its input when its target is one, "
                f"got {type(input).__name__}"
            )
            raise NotTensorCollectionError(msg)
        mode = _reduction_of(size_average, reduce, reduction)
        if mode not in ("none", "mean", "sum"):
            msg = f"{func.__name__}(): reduction must be 'none', 'mean' or 'sum', got {reduction!r}"
            raise InvalidArgumentError(msg)

        def one(x, y):
            return func(x, y, reduction=mode, **kwargs)

        batch_size = None if mode == "none" else torch.Size(())
        if is_tensor_collection(target):
            return input.apply(one, target, batch_size=batch_size)
        return input.apply(lambda x: one(x, target), batch_size=batch_size)

    return impl


for _func in (
    torch.nn.functional.l1_loss,
    torch.nn.functional.mse_loss,
    torch.nn.functional.smooth_l1_loss,
    torch.nn.functional.huber_loss,
):
    _TABLE[_func] = _loss(_func)


def _like(factory):
    # A device given to the factory is the device of the new tensordict too.
    def impl(td, *args, **kwargs):
        device = kwargs.get("device")
        if device is None:
            return td._fast_apply(lambda x: factory(x, *args, **kwargs))
        return td._fast_apply(lambda x: factory(x, *args, **kwargs), device=torch.device(device))

    return impl


def _method(name: str):
    def impl(td, *args, **kwargs):
        if not is_tensor_collection(td):
            # torch.add(tensor, td): a tensor has no method that takes a tensordict
            msg = f"torch.{name}() takes the tensordict as its first argument, got {type(td).__name__}"
            raise NotTensorCollectionError(msg)
        return getattr(td, name)(*args, **kwargs)

    return impl


# The torch functions whose tensordict method takes the same arguments after the tensordict.
_METHODS = (
    # elementwise, and their in-place forms
    "abs", "abs_", "acos", "acos_", "asin", "asin_", "atan", "atan_", "ceil", "ceil_", "cos",
    "cos_", "cosh", "cosh_", "erf", "erf_", "erfc", "erfc_", "exp", "exp_", "expm1", "expm1_",
    "floor", "floor_", "frac", "frac_", "lgamma", "log", "log_", "log10", "log10_", "log1p",
    "log1p_", "log2", "log2_", "neg", "neg_", "reciprocal", "reciprocal_", "round", "round_",
    "rsqrt", "sigmoid", "sigmoid_", "sign", "sin", "sin_", "sinh", "sinh_", "sqrt", "sqrt_",
    "tan", "tan_", "tanh", "tanh_", "trunc", "trunc_", "isfinite", "isnan", "isneginf",
    "isposinf", "isreal",
    # with operands
    "add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "clamp", "clamp_min",
    "clamp_min_", "clamp_max", "clamp_max_", "lerp", "addcdiv", "addcmul", "bitwise_and",
    "logical_and", "masked_fill",
    # reductions
    "sum", "mean", "prod", "std", "var", "amax", "amin", "all", "any",
    # new arrangements of the batch elements
    "repeat_interleave", "flip", "fliplr", "flipud", "roll", "rot90", "narrow", "tile",
    "movedim", "moveaxis", "swapaxes", "tensor_split",
)  # fmt: skip
for _name in _METHODS:
    _TABLE.setdefault(getattr(torch, _name), _method(_name))
del _name

for _func in (
    torch.zeros_like,
    torch.ones_like,
    torch.empty_like,
    torch.rand_like,
    torch.randn_like,
    torch.full_like,
):
    _TABLE[_func] = _like(_func)
del _func
