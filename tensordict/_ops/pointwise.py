"""Values: conversions, arithmetic and comparison operators, elementwise math, reductions.

The elementwise math methods are generated from one table (``_UNARY`` and
``_BINARY``); each gets an in-place ``_`` form.
"""

from __future__ import annotations

import operator

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict.errors import DimensionError, KeyMismatchError

_UNARY = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
    "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
    "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "logical_not",
    "bitwise_not", "relu", "square", "exp2", "sgn",
)  # fmt: skip

_BINARY = (
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "clamp_min",
    "clamp_max",
    "lerp",
    "atan2",
    "fmod",
    "remainder",
)

_NEEDS_FLOAT = frozenset({"exp", "log", "sqrt", "sigmoid"})


def _leaf_keys(td) -> set:
    return set(td.keys(True, True))


def _check_same_keys(td, other, what: str) -> None:
    mine, theirs = _leaf_keys(td), _leaf_keys(other)
    if mine != theirs:
        only_mine = sorted(map(str, mine - theirs))
        only_theirs = sorted(map(str, theirs - mine))
        msg = (
            f"cannot {what} tensordicts with different keys: only in the first {only_mine}, "
            f"only in the second {only_theirs}"
        )
        raise KeyMismatchError(msg)


def _unwrap(other):
    """A tensorclass operand acts through its tensordict."""
    return other._tensordict if getattr(type(other), "_is_tensorclass", False) else other


def _make_unary(name: str):
    def method(self):
        return self._fast_apply(
            getattr(torch, name) if hasattr(torch, name) else getattr(torch.Tensor, name)
        )

    def method_(self):
        fn = getattr(torch.Tensor, name + "_")
        for leaf in self.values(True, True):
            if isinstance(leaf, torch.Tensor):
                fn(leaf)
        return self

    method.__name__ = name
    method.__doc__ = f"Returns a tensordict with ``torch.{name}`` applied to every leaf."
    method_.__name__ = name + "_"
    method_.__doc__ = (
        f"Applies ``Tensor.{name}_`` to every leaf in place and returns the tensordict."
    )
    return method, method_


def _make_binary(name: str):
    def method(self, other, *args, **kwargs):
        fn = getattr(torch, name)
        other = _unwrap(other)
        if is_tensor_collection(other):
            _check_same_keys(self, other, name)
            return self._fast_apply(lambda x, y: fn(x, y, *args, **kwargs), other)
        return self._fast_apply(lambda x: fn(x, other, *args, **kwargs))

    def method_(self, other, *args, **kwargs):
        fn = getattr(torch.Tensor, name + "_")
        other = _unwrap(other)
        if is_tensor_collection(other):
            _check_same_keys(self, other, name)
            for key in self.keys(True, True):
                leaf = self.get(key)
                if isinstance(leaf, torch.Tensor):
                    fn(leaf, other.get(key), *args, **kwargs)
        else:
            for leaf in self.values(True, True):
                if isinstance(leaf, torch.Tensor):
                    fn(leaf, other, *args, **kwargs)
        return self

    method.__name__ = name
    method.__doc__ = f"Returns ``torch.{name}(leaf, other)`` for every leaf; ``other`` is a scalar, tensor or tensordict."
    method_.__name__ = name + "_"
    method_.__doc__ = f"Applies ``Tensor.{name}_`` with ``other`` to every leaf in place and returns the tensordict."
    return method, method_


def _operator(op, swap: bool = False, name: str = ""):
    def method(self, other):
        other = _unwrap(other)
        if is_tensor_collection(other):
            if not hasattr(other, "_fast_apply"):
                return NotImplemented
            _check_same_keys(self, other, name or op.__name__)
            if swap:
                return self._fast_apply(lambda x, y: op(y, x), other)
            return self._fast_apply(op, other)
        if not isinstance(other, (torch.Tensor, int, float, bool, complex)):
            return NotImplemented
        if isinstance(other, torch.Tensor) and 0 < other.ndim <= self.batch_dims:
            # A tensor over (leading) batch dims broadcasts from the left, over each leaf's features.
            def aligned(x, fn=op):
                y = other.reshape(other.shape + (1,) * (x.ndim - other.ndim))
                return fn(y, x) if swap else fn(x, y)

            return self._fast_apply(aligned)
        if swap:
            return self._fast_apply(lambda x: op(other, x))
        return self._fast_apply(lambda x: op(x, other))

    return method


def _inplace_operator(op):
    def method(self, other):
        other = _unwrap(other)
        if is_tensor_collection(other):
            _check_same_keys(self, other, op.__name__)
            for key in self.keys(True, True):
                leaf = self.get(key)
                if isinstance(leaf, torch.Tensor):
                    op(leaf, other.get(key))
        else:
            for leaf in self.values(True, True):
                if isinstance(leaf, torch.Tensor):
                    op(leaf, other)
        return self

    return method


def _reduction(name: str):
    def method(
        self,
        dim=None,
        keepdim: bool = False,
        *,
        reduce: bool | None = None,
        return_indices: bool = True,
        **kwargs,
    ):
        fn = getattr(torch, name)
        if name in ("max", "min") and isinstance(dim, int) and return_indices:
            return _values_indices(self, name, dim, keepdim)
        if dim is None or dim is ...:
            if reduce:
                return _reduce_all(self, name, **kwargs)
            return self._fast_apply(
                lambda x: fn(x, **kwargs), batch_size=torch.Size(()), names=None
            )
        ndim = self.batch_dims
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        norm = []
        for d in dims:
            if not -ndim <= d < ndim:
                msg = f"reduction dimension {d} is out of range for {ndim} batch dimensions"
                raise DimensionError(msg)
            norm.append(d + ndim if d < 0 else d)
        norm_t = tuple(sorted(set(norm)))
        if keepdim:
            new = torch.Size(1 if i in norm_t else s for i, s in enumerate(self.batch_size))
        else:
            new = torch.Size(s for i, s in enumerate(self.batch_size) if i not in norm_t)

        def op(x):
            if name in _ONE_DIM_ONLY:
                reducer = getattr(torch, {"max": "amax", "min": "amin"}.get(name, name))
                out = x
                for d in reversed(norm_t):
                    out = reducer(out, d, keepdim=keepdim, **kwargs)
                    if isinstance(out, tuple):
                        out = out[0]
                return out
            return fn(x, dim=norm_t, keepdim=keepdim, **kwargs)

        return self._fast_apply(op, batch_size=new, names=None)

    method.__name__ = name
    method.__doc__ = (
        f"Returns ``torch.{name}`` of every leaf.\n\n"
        "        Args:\n"
        "            dim (int or tuple of int, optional): batch dims to reduce. Without it each leaf is\n"
        "                reduced over all its dimensions and the result has ``batch_size=[]``.\n"
        "            keepdim (bool, optional): keep the reduced dims with size 1.\n\n"
        "        Keyword Args:\n"
        "            reduce (bool, optional): with ``dim=None``, reduce all leaves to one tensor.\n"
    )
    return method


_ONE_DIM_ONLY = frozenset({"max", "min", "prod", "median"})


class ValuesIndices(tuple):
    """The ``(values, indices)`` pair returned by ``max(dim)`` and ``min(dim)``."""

    __slots__ = ()

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    @property
    def values(self):
        """The tensordict of extreme values."""
        return self[0]

    @property
    def indices(self):
        """The tensordict of their indices along the reduced dimension."""
        return self[1]


def _values_indices(td, name: str, dim: int, keepdim: bool) -> ValuesIndices:
    ndim = td.batch_dims
    if not -ndim <= dim < ndim:
        msg = f"reduction dimension {dim} is out of range for {ndim} batch dimensions"
        raise DimensionError(msg)
    d = dim + ndim if dim < 0 else dim
    size = td.batch_size
    new = size[:d] + (torch.Size((1,)) if keepdim else torch.Size(())) + size[d + 1 :]
    fn = getattr(torch, name)
    values = td._fast_apply(lambda x: fn(x, d, keepdim=keepdim)[0], batch_size=new, names=None)
    indices = td._fast_apply(lambda x: fn(x, d, keepdim=keepdim)[1], batch_size=new, names=None)
    return ValuesIndices(values, indices)


def _reduce_all(td, name: str, **kwargs) -> torch.Tensor:
    leaves = [v for v in td.values(True, True) if isinstance(v, torch.Tensor)]
    if name in ("sum", "nansum"):
        return torch.stack([getattr(torch, name)(v, **kwargs) for v in leaves]).sum()
    if name in ("mean", "nanmean"):
        flat = torch.cat(
            [v.reshape(-1).float() if not v.is_floating_point() else v.reshape(-1) for v in leaves]
        )
        return getattr(torch, name)(flat, **kwargs)
    flat = torch.cat([v.reshape(-1) for v in leaves])
    return getattr(torch, name)(flat, **kwargs)


class PointwiseMixin:
    """Arithmetic, comparisons, math, reductions and conversions over every leaf."""

    __slots__ = ()

    # operators
    __add__ = _operator(operator.add)
    __radd__ = _operator(operator.add, swap=True)
    __sub__ = _operator(operator.sub)
    __rsub__ = _operator(operator.sub, swap=True)
    __mul__ = _operator(operator.mul)
    __rmul__ = _operator(operator.mul, swap=True)
    __truediv__ = _operator(operator.truediv)
    __rtruediv__ = _operator(operator.truediv, swap=True)
    __floordiv__ = _operator(operator.floordiv)
    __mod__ = _operator(operator.mod)
    __pow__ = _operator(operator.pow)
    __rpow__ = _operator(operator.pow, swap=True)
    __matmul__ = _operator(operator.matmul)
    __and__ = _operator(operator.and_)
    __or__ = _operator(operator.or_)
    __xor__ = _operator(operator.xor)
    __iadd__ = _inplace_operator(operator.iadd)
    __isub__ = _inplace_operator(operator.isub)
    __imul__ = _inplace_operator(operator.imul)
    __itruediv__ = _inplace_operator(operator.itruediv)
    __ipow__ = _inplace_operator(operator.ipow)
    __eq__ = _operator(operator.eq, name="compare")
    __ne__ = _operator(operator.ne, name="compare")
    __lt__ = _operator(operator.lt, name="compare")
    __le__ = _operator(operator.le, name="compare")
    __gt__ = _operator(operator.gt, name="compare")
    __ge__ = _operator(operator.ge, name="compare")

    def __neg__(self):
        return self._fast_apply(operator.neg)

    def __abs__(self):
        return self._fast_apply(operator.abs)

    def __invert__(self):
        return self._fast_apply(operator.invert)

    for _name in _UNARY:
        locals()[_name], locals()[_name + "_"] = _make_unary(_name)
    for _name in _BINARY:
        locals()[_name], locals()[_name + "_"] = _make_binary(_name)
    for _name in (
        "sum",
        "mean",
        "nansum",
        "nanmean",
        "prod",
        "std",
        "var",
        "max",
        "min",
        "amax",
        "amin",
        "logsumexp",
        "median",
    ):
        locals()[_name] = _reduction(_name)
    del _name

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's argument names
        """Returns every leaf clamped to ``[min, max]``."""
        return self._fast_apply(lambda x: x.clamp(min, max))

    def clamp_(self, min=None, max=None):  # noqa: A002
        """Clamps every leaf to ``[min, max]`` in place and returns the tensordict."""
        return self.apply_(lambda x: x.clamp_(min, max))

    def norm(self, *args, **kwargs):
        """Returns the norm of every leaf (a tensordict with ``batch_size=[]``)."""
        return self._fast_apply(
            lambda x: torch.linalg.vector_norm(
                x.float() if not x.is_floating_point() else x, *args, **kwargs
            ),
            batch_size=torch.Size(()),
            names=None,
        )

    # boolean reductions
    def all(self, dim: int | None = None):
        """True when every element of every leaf is True; with ``dim``, a tensordict reduced on that batch dim."""
        if dim is None:
            return all(
                bool(v.all()) for v in self.values(True, True) if isinstance(v, torch.Tensor)
            )
        return self._bool_reduce("all", dim)

    def any(self, dim: int | None = None):
        """True when any element of any leaf is True; with ``dim``, a tensordict reduced on that batch dim."""
        if dim is None:
            return any(
                bool(v.any()) for v in self.values(True, True) if isinstance(v, torch.Tensor)
            )
        return self._bool_reduce("any", dim)

    def _bool_reduce(self, name: str, dim: int):
        ndim = self.batch_dims
        if not -ndim <= dim < ndim:
            msg = f"dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim if dim < 0 else dim
        new = self.batch_size[:d] + self.batch_size[d + 1 :]
        return self._fast_apply(lambda x: getattr(x, name)(d), batch_size=new, names=None)

    # conversions
    def to(self, *args, **kwargs):
        """Returns the tensordict moved to a device and/or cast to a dtype.

        Accepts ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` and
        the keyword forms ``device=``, ``dtype=``, ``non_blocking=``. Returns this
        tensordict when nothing changes.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).to(torch.float64)["a"].dtype
            torch.float64
        """
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        non_blocking = kwargs.pop("non_blocking", False)
        if kwargs:
            msg = f"to() got unexpected keyword arguments {sorted(kwargs)}"
            raise TypeError(msg)
        for arg in args:
            if isinstance(arg, torch.dtype):
                dtype = arg
            elif isinstance(arg, (str, torch.device, int)):
                device = torch.device(arg)
            elif isinstance(arg, torch.Tensor):
                device, dtype = arg.device, arg.dtype
            elif is_tensor_collection(arg):
                device = arg.device
            else:
                msg = f"to() cannot interpret the argument {arg!r}"
                raise TypeError(msg)
        if device is not None:
            device = torch.device(device)
        if device is None and dtype is None:
            return self
        if dtype is None:
            if device == self.device:
                return self
            return self._fast_apply(
                lambda x: x.to(device, non_blocking=non_blocking), device=device
            )
        if device is None:
            return self._fast_apply(lambda x: x.to(dtype))
        return self._fast_apply(
            lambda x: x.to(device, dtype, non_blocking=non_blocking), device=device
        )

    def cpu(self):
        """Returns the tensordict on the CPU."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Returns the tensordict on a CUDA device."""
        return self.to(torch.device("cuda" if device is None else device))

    def float(self):
        """Returns every leaf cast to float32."""
        return self.to(torch.float32)

    def double(self):
        """Returns every leaf cast to float64."""
        return self.to(torch.float64)

    def half(self):
        """Returns every leaf cast to float16."""
        return self.to(torch.float16)

    def bfloat16(self):
        """Returns every leaf cast to bfloat16."""
        return self.to(torch.bfloat16)

    def int(self):
        """Returns every leaf cast to int32."""
        return self.to(torch.int32)

    def long(self):
        """Returns every leaf cast to int64."""
        return self.to(torch.int64)

    def bool(self):
        """Returns every leaf cast to bool."""
        return self.to(torch.bool)

    def clone(self, recurse: bool = True, **kwargs):
        """Returns a copy; with ``recurse=False`` the copy shares the tensors.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.clone()["a"].data_ptr() != td["a"].data_ptr()
            True
        """
        if not recurse:
            return self._shallow_copy()
        return self._fast_apply(torch.Tensor.clone)

    def contiguous(self):
        """Returns a tensordict whose leaves are contiguous."""
        return self._fast_apply(torch.Tensor.contiguous)

    def detach(self):
        """Returns a tensordict whose leaves are detached from the autograd graph."""
        return self._fast_apply(torch.Tensor.detach)

    def detach_(self):
        """Detaches every leaf in place and returns the tensordict."""
        for leaf in self.values(True, True):
            if isinstance(leaf, torch.Tensor):
                leaf.detach_()
        return self

    def zero_(self):
        """Fills every leaf with zeros in place and returns the tensordict."""
        for leaf in self.values(True, True):
            if isinstance(leaf, torch.Tensor):
                leaf.zero_()
        return self

    def fill_(self, key, value):
        """Fills the entry at ``key`` (a tensor or every leaf of a sub-tensordict) with ``value``."""
        target = self.get(key, NO_DEFAULT)
        if is_tensor_collection(target):
            for leaf in target.values(True, True):
                if isinstance(leaf, torch.Tensor):
                    leaf.fill_(value)
        else:
            target.fill_(value)
        return self

    def copy_(self, tensordict, non_blocking: bool = False):
        """Copies the entries of ``tensordict`` into this one in place and returns it."""
        return self.update_(tensordict)

    def empty(self, recurse: bool = False, *, batch_size=None, device=None, names=None):
        """Returns a tensordict with the same batch size and no leaves (sub-tensordicts kept when ``recurse``)."""
        if recurse:
            out = self._new_like({}, self.batch_size)
            for key, value in self._items_level():
                if hasattr(value, "_items_level"):
                    out._set_str(key, value.empty(recurse=True), inplace=False, validated=True)
            return out
        return self._new_like({}, self.batch_size if batch_size is None else torch.Size(batch_size))

    def _new_factory(self, factory, size, kwargs):
        new = torch.Size(
            size[0] if len(size) == 1 and isinstance(size[0], (list, tuple, torch.Size)) else size
        )
        bd = self.batch_dims
        return self._fast_apply(
            lambda x: factory(x, new + x.shape[bd:], **kwargs), batch_size=new, names=None
        )

    def new_zeros(self, *size, **kwargs):
        """Returns a tensordict of zeros with batch size ``size`` and the same keys, dtypes and feature shapes."""
        return self._new_factory(torch.Tensor.new_zeros, size, kwargs)

    def new_ones(self, *size, **kwargs):
        """Returns a tensordict of ones with batch size ``size`` and the same keys, dtypes and feature shapes."""
        return self._new_factory(torch.Tensor.new_ones, size, kwargs)

    def new_empty(self, *size, **kwargs):
        """Returns an uninitialised tensordict with batch size ``size`` and the same keys and dtypes."""
        return self._new_factory(torch.Tensor.new_empty, size, kwargs)

    def new_full(self, size, fill_value, **kwargs):
        """Returns a tensordict filled with ``fill_value`` with batch size ``size`` and the same keys."""
        return self._new_factory(
            lambda x, s, **kw: x.new_full(s, fill_value, **kw), (size,), kwargs
        )
