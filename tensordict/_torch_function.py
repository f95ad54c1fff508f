"""``torch.*`` functions called on tensordicts: one table, one dispatcher.

``torch.stack(tds)``, ``torch.cat(tds)``, ``torch.unbind(td)`` and friends reach
``__torch_function__`` of every tensordict class, which looks the function up in
``_TABLE``. Functions that only forward to a method of the tensordict are
registered here; ``stack`` and ``cat``, which build concrete classes, are
registered by :mod:`tensordict._stack`, a layer above the classes.
"""

from __future__ import annotations

import torch

_TABLE: dict = {}


def implements(*funcs):
    """Registers the decorated function as the tensordict version of each torch function."""

    def register(fn):
        for func in funcs:
            _TABLE[func] = fn
        return fn

    return register


def dispatch(func, types, args, kwargs):
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
    return td[mask]


@implements(torch.where)
def _where(condition, input, other, *, out=None):  # noqa: A002 - torch's argument name
    if hasattr(input, "where"):
        return input.where(condition, other, out=out)
    return (~condition if False else other).where(~condition, input, out=out)


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
        return getattr(td, name)(*args, **kwargs)

    return impl


_METHODS = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "exp", "expm1", "floor", "frac",
    "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign",
    "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "add", "sub", "mul", "div", "pow", "maximum",
    "minimum", "clamp", "sum", "mean", "prod", "std", "var", "amax", "amin", "all", "any",
    "masked_fill", "repeat_interleave", "lerp",
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
