"""Math over every leaf: operators, elementwise math (in place too), reductions and scans."""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch

from tensordict._collection import NO_DEFAULT, is_leaf_nontensor, is_tensor_collection
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops._generated.elementwise import ElementwiseOps
from tensordict._ops._generated.inplace import InplaceOps
from tensordict._ops._generated.reductions import ReductionOps
from tensordict.errors import DimensionError, DimTypeError, KeyMismatchError


# ---------------------------------------------------------------------- shared with device.py
def leaf_keys(td) -> set:
    """The keys of every leaf of ``td``, nested ones as tuples."""
    return set(td.keys(True, True))


def leaf_tensors(td) -> list:
    """The tensor leaves of ``td`` as ``values(True, True)`` gives them (a lazy stack's stacked)."""
    return [v for v in td.values(True, True) if isinstance(v, torch.Tensor)]


def tensors_only(td):
    """``td`` without its non-tensor entries (itself when it has none)."""
    dropped = _non_tensor_keys(td)
    return td.exclude(*dropped) if dropped else td


def _non_tensor_keys(td, prefix: tuple = ()) -> list:
    keys = []
    for key, value in td._items_level():
        if isinstance(value, NonTensorDataBase):
            keys.append(prefix + (key,))
        elif is_tensor_collection(value):
            keys.extend(_non_tensor_keys(value, prefix + (key,)))
    return keys


# ---------------------------------------------------------------------- operands
def _check_same_keys(td, other, what: str) -> None:
    # non-tensor entries count: a leafwise operation pairs them too (comparisons compare them)
    mine = set(td.keys(True, True, is_leaf=is_leaf_nontensor))
    theirs = set(other.keys(True, True, is_leaf=is_leaf_nontensor))
    if mine != theirs:
        only_mine = sorted(map(str, mine - theirs))
        only_theirs = sorted(map(str, theirs - mine))
        msg = (
            f"cannot {what} tensordicts with different keys: only in the first {only_mine}, "
            f"only in the second {only_theirs}"
        )
        raise KeyMismatchError(msg)


def _paired(td, other, what: str, default):
    """``(td, other)`` restricted or completed according to ``default`` (None: same keys)."""
    mine, theirs = leaf_keys(td), leaf_keys(other)
    if default is None:
        if mine != theirs:
            only_mine = sorted(map(str, mine - theirs))
            only_theirs = sorted(map(str, theirs - mine))
            msg = (
                f"cannot {what} tensordicts with different keys: only in the first {only_mine}, "
                f"only in the second {only_theirs}; pass default='intersection' or a fill value"
            )
            raise KeyMismatchError(msg)
        return td, other, NO_DEFAULT
    if isinstance(default, str) and default == "intersection":
        common = [k for k in td.keys(True, True) if k in theirs]
        return td.select(*common), other.select(*common), NO_DEFAULT
    return td, other, default


def _operands(td, others, what: str) -> list:
    """The operands, tensorclasses unwrapped, tensordicts checked to have ``td``'s leaf keys."""
    out = []
    for other in others:
        if is_tensor_collection(other):
            other = other._leafwise_operand()
            _paired(td, other, what, None)
        out.append(other)
    return out


def _ternary(td, fn, other1, other2, value, what: str):
    a, b = _operands(td, (other1, other2), what)
    collections = [o for o in (a, b) if is_tensor_collection(o)]

    def compute(x, *leaves):
        it = iter(leaves)
        y = next(it) if is_tensor_collection(a) else _as_tensor_operand(a, x)
        z = next(it) if is_tensor_collection(b) else _as_tensor_operand(b, x)
        return fn(x, y, z, value=value)

    return td._fast_apply(compute, *collections)


def _ternary_(td, fn, other1, other2, value, what: str):
    a, b = _operands(td, (other1, other2), what)
    collections = [o for o in (a, b) if is_tensor_collection(o)]

    def write(x, *leaves):
        it = iter(leaves)
        y = next(it) if is_tensor_collection(a) else _as_tensor_operand(a, x)
        z = next(it) if is_tensor_collection(b) else _as_tensor_operand(b, x)
        return fn(x, y, z, value=value)  # the leaf itself: nothing is rebound

    td._fast_apply(write, *collections, inplace=True)
    return td


def _as_tensor_operand(value, leaf):
    """A number operand as a 0-dim tensor of the leaf's dtype and device (torch needs tensors)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(value, dtype=leaf.dtype, device=leaf.device)


# ---------------------------------------------------------------------- operators
def _operator(op, swap: bool = False, name: str = ""):
    def method(self, other):
        if is_tensor_collection(other):
            other = other._leafwise_operand()
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
        return self._write_each_leaf(op, other, op.__name__)

    return method


# ---------------------------------------------------------------------- reductions
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


def _batch_dim(td, dim, what: str) -> int:
    """``dim`` as a non-negative batch dim of ``td``, or DimensionError (an IndexError)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        msg = f"{what}() takes an int batch dim, got {dim!r} ({type(dim).__name__})"
        raise DimTypeError(msg)
    ndim = td.batch_dims
    if not -ndim <= dim < ndim:
        msg = f"{what}(): dim {dim} is out of range for a tensordict with {ndim} batch dims {list(td.batch_size)}"
        raise DimensionError(msg)
    return dim + ndim if dim < 0 else dim


def _cumulative(td, name: str, dim: int, reduce: bool | None, return_indices: bool):
    d = _batch_dim(td, dim, name)
    fn = getattr(torch, name)
    result_type = getattr(torch.return_types, name)
    if reduce:
        return fn(torch.cat(leaf_tensors(td), d), d)
    values = td._fast_apply(lambda x: fn(x, d).values)
    if not return_indices:
        return values
    indices = td._fast_apply(lambda x: fn(x, d).indices)
    return result_type((values, indices))


def _renamed(td, key_transform):
    """``td`` with each leaf renamed by ``key_transform`` at its own level."""
    source = {}
    for key, value in td._items_level():
        if is_tensor_collection(value) and not isinstance(value, NonTensorDataBase):
            source[key] = _renamed(value, key_transform)
        else:
            source[key_transform(key)] = value
    return td._new_like(source, td.batch_size, names=None, device=td.device)


class MathMixin(ElementwiseOps, InplaceOps, ReductionOps):
    """Arithmetic, comparisons, elementwise math and reductions over every leaf.

    The methods made from tables (``cos``, ``add_``, ``sum``, ...) are spelled out in
    :mod:`tensordict._ops._generated`; this class defines the primitives they call.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ operators
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

    # ------------------------------------------------------------------ primitives of the generated methods
    def _leafwise(self, fn, other, args: tuple, kwargs: dict, name: str):
        if is_tensor_collection(other):
            other = other._leafwise_operand()
            _check_same_keys(self, other, name)
            return self._fast_apply(lambda x, y: fn(x, y, *args, **kwargs), other)
        return self._fast_apply(lambda x: fn(x, other, *args, **kwargs))

    def _pairwise(self, fn, other, name: str, default=None):
        if is_tensor_collection(other):
            td, other, fill = _paired(self, other._leafwise_operand(), name, default)
            return td._fast_apply(fn, other, default=fill)
        return self._fast_apply(lambda x: fn(x, other))

    def _write_each_leaf(self, fn, other, name: str):
        # The leaves are the stored tensors (a lazy stack's are its members', never the
        # stacked copies that ``get`` returns); a tensordict operand gives each leaf its own.
        if not is_tensor_collection(other):
            for leaf in self._stored_tensors():
                fn(leaf, other)
            return self
        other = other._leafwise_operand()
        _check_same_keys(self, other, name)
        self._write_matching_leaves(fn, other)
        return self

    def _reduce(self, name: str, dim, keepdim: bool, reduce, return_indices: bool, kwargs: dict):
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

    # ------------------------------------------------------------------ hooks of the classes
    def _leafwise_operand(self):
        """What this tensordict is as the operand of a leafwise operation: itself.

        A tensorclass gives its tensordict; ``NonTensorDataBase`` has this hook too.
        """
        return self

    def _write_matching_leaves(self, fn, other) -> None:
        """Calls the in-place ``fn(leaf, other_leaf)`` on each tensor leaf with ``other``'s at its key.

        The lazy stack writes its members' tensors instead (``get`` gives stacked copies).
        """
        for key in self.keys(True, True):
            leaf = self.get(key)
            if isinstance(leaf, torch.Tensor):
                fn(leaf, other.get(key))

    def _as_dense(self):
        """This tensordict with its leaves stacked, for the ops along a batch dim: itself.

        The lazy stack returns ``self.contiguous()``.
        """
        return self

    # ------------------------------------------------------------------ elementwise
    def clamp(self, min=None, max=None):  # noqa: A002 - torch's argument names
        """Returns a tensordict with every tensor leaf clamped to ``[min, max]``.

        Each leaf goes through ``Tensor.clamp(min, max)``; a bound left at None is not applied.
        Non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Args:
            min (number or torch.Tensor, optional): the lower bound. A tensor broadcasts against
                each leaf by torch's rules (aligned on the trailing dims). Defaults to None.
            max (number or torch.Tensor, optional): the upper bound, likewise. Defaults to None.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            RuntimeError: if both bounds are None, or a tensor bound does not broadcast against
                a leaf.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([-2.0, 0.5, 3.0])}, [3])
            >>> td.clamp(0.0, 1.0)["a"]
            tensor([0.0000, 0.5000, 1.0000])
        """
        return self._fast_apply(lambda x: x.clamp(min, max))

    def clamp_(self, min=None, max=None):  # noqa: A002
        """Clamps every tensor leaf to ``[min, max]`` in place and returns the tensordict.

        Each leaf goes through ``Tensor.clamp_(min, max)``, nested ones included; non-tensor
        entries are skipped. No entry is rebound, so a locked tensordict accepts it too.

        Args:
            min (number or torch.Tensor, optional): the lower bound. Defaults to None.
            max (number or torch.Tensor, optional): the upper bound. Defaults to None.

        Returns:
            This tensordict.

        Raises:
            RuntimeError: if both bounds are None, or a tensor bound does not broadcast to a
                leaf's shape; the leaves before it are already clamped.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([-2.0, 3.0])}, [2])
            >>> td.clamp_(max=1.0) is td
            True
            >>> td["a"]
            tensor([-2.,  1.])
        """
        return self.apply_(lambda x: x.clamp_(min, max))

    def zero_(self):
        """Fills every tensor leaf with zeros in place and returns the tensordict.

        Each leaf, nested ones included, goes through ``Tensor.zero_``; non-tensor entries are
        skipped. No entry is rebound, so a locked tensordict accepts it too.

        Returns:
            This tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2), "b": {"c": torch.ones(2)}}, [2])
            >>> td.zero_()["b", "c"]
            tensor([0., 0.])
        """
        for leaf in self.values(True, True):
            if isinstance(leaf, torch.Tensor):
                leaf.zero_()
        return self

    def fill_(self, key, value):
        """Fills the entry at ``key`` with ``value`` in place and returns the tensordict.

        A tensor entry is filled whole; for a sub-tensordict, each of its tensor leaves is. The
        tensors are written in place, so a locked tensordict accepts it too.

        Args:
            key (NestedKey): the key of the entry.
            value (number or torch.Tensor): the value; a tensor must have no dims.

        Returns:
            This tensordict.

        Raises:
            KeyError: if ``key`` is missing.
            ValueError: if ``key`` goes through an entry that is not a tensordict.
            TypeError: if ``key`` is not a string or a tuple of strings.
            RuntimeError: if ``value`` is a tensor with dims.
            AttributeError: if the entry is a non-tensor entry (:class:`NonTensorData`).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.fill_("b", 3.0)["b", "c"]
            tensor([3., 3.])
        """
        target = self.get(key, NO_DEFAULT)
        if is_tensor_collection(target):
            for leaf in target.values(True, True):
                if isinstance(leaf, torch.Tensor):
                    leaf.fill_(value)
        else:
            target.fill_(value)
        return self

    def addcmul(self, other1, other2, *, value: float | None = 1):
        """Returns ``leaf + value * other1 * other2`` for every leaf (``torch.addcmul``).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the first factor; a tensordict
                gives each leaf its own leaf at the same key.
            other2 (TensorDictBase, torch.Tensor or number): the second factor, likewise.

        Keyword Args:
            value (number, optional): the multiplier of the product. Defaults to 1.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> other = TensorDict({"a": torch.tensor([2.0, 4.0])}, [2])
            >>> td.addcmul(other, other, value=2)["a"]
            tensor([ 9., 34.])
        """
        return _ternary(self, torch.addcmul, other1, other2, value, "addcmul")

    def addcmul_(self, other1, other2, *, value: float | None = 1):
        """Writes ``leaf + value * other1 * other2`` into every leaf in place; returns the tensordict.

        Each leaf keeps its dtype and memory (a memory-mapped leaf is written in its file).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the first factor.
            other2 (TensorDictBase, torch.Tensor or number): the second factor.

        Keyword Args:
            value (number, optional): the multiplier of the product. Defaults to 1.

        Returns:
            This tensordict.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``);
                nothing is written then.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> td.addcmul_(torch.tensor(2.0), torch.tensor(3.0))["a"]
            tensor([7., 8.])
        """
        return _ternary_(self, torch.Tensor.addcmul_, other1, other2, value, "addcmul_")

    def addcdiv(self, other1, other2, value: float | None = 1):
        """Returns ``leaf + value * other1 / other2`` for every leaf (``torch.addcdiv``).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the numerator; a tensordict
                gives each leaf its own leaf at the same key.
            other2 (TensorDictBase, torch.Tensor or number): the denominator, likewise.
            value (number, optional): the multiplier of the quotient. Defaults to 1.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``).
            RuntimeError: if a leaf is an integer tensor (torch refuses integer division here).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> other = TensorDict({"a": torch.tensor([2.0, 4.0])}, [2])
            >>> td.addcdiv(other, other, value=2)["a"]
            tensor([3., 4.])
        """
        return _ternary(self, torch.addcdiv, other1, other2, value, "addcdiv")

    def addcdiv_(self, other1, other2, *, value: float | None = 1):
        """Writes ``leaf + value * other1 / other2`` into every leaf in place; returns the tensordict.

        Each leaf keeps its dtype and memory (a memory-mapped leaf is written in its file).

        Args:
            other1 (TensorDictBase, torch.Tensor or number): the numerator.
            other2 (TensorDictBase, torch.Tensor or number): the denominator.

        Keyword Args:
            value (number, optional): the multiplier of the quotient. Defaults to 1.

        Returns:
            This tensordict.

        Raises:
            KeyMismatchError: if a tensordict operand has other leaf keys (a ``KeyError``);
                nothing is written then.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 2.0])}, [2])
            >>> td.addcdiv_(torch.tensor(3.0), torch.tensor(2.0))["a"]
            tensor([2.5000, 3.5000])
        """
        return _ternary_(self, torch.Tensor.addcdiv_, other1, other2, value, "addcdiv_")

    # ------------------------------------------------------------------ reductions
    def norm(self, *args, **kwargs):
        """Returns the vector norm of every tensor leaf, as a tensordict with ``batch_size=[]``.

        Each leaf goes through ``torch.linalg.vector_norm``, integer and boolean ones cast to
        float32 first; by default that is the 2-norm of all the leaf's elements, feature dims
        included. The result always has ``batch_size=[]`` and no dim names, whatever ``dim``
        is given; non-tensor entries are kept.

        Args:
            *args: passed on to ``torch.linalg.vector_norm`` after the leaf: ``ord``, ``dim``,
                ``keepdim``.
            **kwargs: passed on likewise (``ord``, ``dim``, ``keepdim``, ``dtype``).

        Returns:
            A new tensordict of norms.

        Raises:
            IndexError: if ``dim`` names a dimension that a leaf does not have.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([3.0, 4.0]), "b": torch.tensor([1, -1])}, [2])
            >>> td.norm()["a"], td.norm(1)["b"]
            (tensor(5.), tensor(2.))
        """
        return self._fast_apply(
            lambda x: torch.linalg.vector_norm(
                x.float() if not x.is_floating_point() else x, *args, **kwargs
            ),
            batch_size=torch.Size(()),
            names=None,
        )

    def all(self, dim: int | None = None):
        """Returns True if every element of every tensor leaf is nonzero; with ``dim``, reduces that batch dim.

        Without ``dim`` the answer is a Python bool, True when there is no tensor leaf. With
        ``dim`` each leaf goes through ``Tensor.all(dim)``, and the result is a tensordict of
        boolean tensors without that batch dim and without dim names.

        Args:
            dim (int, optional): the batch dim to reduce; negative values count from the last
                batch dim. Defaults to None, which reduces everything.

        Returns:
            A bool, or a new tensordict when ``dim`` is given.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (any ``dim`` when
                there are no batch dims).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[True, False], [True, True]])}, [2, 2])
            >>> td.all()
            False
            >>> td.all(1)["a"]
            tensor([False,  True])
        """
        if dim is None:
            return all(
                bool(v.all()) for v in self.values(True, True) if isinstance(v, torch.Tensor)
            )
        return self._bool_reduce("all", dim)

    def any(self, dim: int | None = None):
        """Returns True if any element of any tensor leaf is nonzero; with ``dim``, reduces that batch dim.

        Without ``dim`` the answer is a Python bool, False when there is no tensor leaf. With
        ``dim`` each leaf goes through ``Tensor.any(dim)``, and the result is a tensordict of
        boolean tensors without that batch dim and without dim names.

        Args:
            dim (int, optional): the batch dim to reduce; negative values count from the last
                batch dim. Defaults to None, which reduces everything.

        Returns:
            A bool, or a new tensordict when ``dim`` is given.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (any ``dim`` when
                there are no batch dims).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[False, False], [True, False]])}, [2, 2])
            >>> td.any()
            True
            >>> td.any(1)["a"]
            tensor([False,  True])
        """
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

    def softmax(self, dim: int, dtype: torch.dtype | None = None):
        """Returns the softmax of every leaf along the batch dim ``dim``.

        Non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim (not
                from a leaf's last dim).
            dtype (torch.dtype, optional): the dtype each leaf is cast to first, and of the
                result. Defaults to None (each leaf's own).

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            NotImplementedError: if a leaf is an integer tensor and no floating ``dtype`` is
                given (torch has no integer softmax).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([0.0, 0.0]), "b": torch.zeros(2, 3)}, [2])
            >>> td.softmax(-1)["a"], td.softmax(-1)["b"][0]
            (tensor([0.5000, 0.5000]), tensor([0.5000, 0.5000, 0.5000]))
        """
        d = _batch_dim(self, dim, "softmax")
        return self._as_dense()._fast_apply(lambda x: torch.softmax(x, d, dtype=dtype))

    def cummax(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True):
        """Returns the running maximum of every leaf along the batch dim ``dim``, with indices.

        Non-tensor entries are left out of the result.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim.

        Keyword Args:
            reduce (bool, optional): concatenate all the tensor leaves along ``dim`` first
                and return ``torch.cummax`` of that one tensor (values and indices; the
                leaves must have the same number of dims). Defaults to None (off).
            return_indices (bool, optional): return the ``(values, indices)`` pair; with
                False, only the tensordict of values. Defaults to True.

        Returns:
            A ``torch.return_types.cummax`` pair of tensordicts (``.values``, ``.indices``),
            the values tensordict alone, or with ``reduce`` a pair of tensors.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            RuntimeError: with ``reduce``, if the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.0, 3.0, 2.0])}, [3])
            >>> out = td.cummax(0)
            >>> out.values["a"], out.indices["a"]
            (tensor([1., 3., 3.]), tensor([0, 1, 1]))
        """
        return _cumulative(tensors_only(self._as_dense()), "cummax", dim, reduce, return_indices)

    def cummin(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True):
        """Returns the running minimum of every leaf along the batch dim ``dim``, with indices.

        It works as :meth:`cummax` does, with minima.

        Args:
            dim (int): the batch dim; negative values count from the last batch dim.

        Keyword Args:
            reduce (bool, optional): concatenate all the tensor leaves along ``dim`` first
                and return ``torch.cummin`` of that one tensor. Defaults to None (off).
            return_indices (bool, optional): return the ``(values, indices)`` pair; with
                False, only the tensordict of values. Defaults to True.

        Returns:
            A ``torch.return_types.cummin`` pair of tensordicts (``.values``, ``.indices``),
            the values tensordict alone, or with ``reduce`` a pair of tensors.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            DimTypeError: if ``dim`` is not an int (a ``TypeError`` and ``ValueError``).
            RuntimeError: with ``reduce``, if the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([2.0, 1.0, 3.0])}, [3])
            >>> out = td.cummin(0)
            >>> out.values["a"], out.indices["a"]
            (tensor([2., 1., 1.]), tensor([0, 1, 1]))
        """
        return _cumulative(tensors_only(self._as_dense()), "cummin", dim, reduce, return_indices)

    def quantile(
        self,
        q,
        dim=NO_DEFAULT,
        keepdim: bool = NO_DEFAULT,
        *,
        interpolation: str = "linear",
        reduce: bool | None = None,
        key_transform: Callable | None = None,
    ):
        """Returns the ``q``-quantiles of every leaf (``torch.quantile``).

        Without ``dim`` each leaf is reduced over all its elements into a tensordict with
        ``batch_size=[]``; with an int batch ``dim``, over that dim, the result keeping the
        other batch dims; with ``dim="feature"``, over each leaf's feature dims, the result
        keeping the batch size. A tensor ``q`` of several quantiles adds a leading dim to
        the result. Non-tensor entries are kept.

        Args:
            q (float or torch.Tensor): the quantile(s), in ``[0, 1]``.
            dim (int or "feature", optional): what to reduce; negative ints count from the
                last batch dim. Defaults to every element.
            keepdim (bool, optional): keep the reduced batch dim with size 1. Defaults to
                False.

        Keyword Args:
            interpolation (str, optional): as ``torch.quantile``: ``"linear"``, ``"lower"``,
                ``"higher"``, ``"midpoint"`` or ``"nearest"``. Defaults to ``"linear"``.
            reduce (bool, optional): compute the quantiles of all the tensor leaves together
                and return one tensor: flattened and concatenated without ``dim``,
                concatenated along ``dim`` with one (the leaves must have the same number of
                dims), or along the flattened feature dims with ``"feature"``. Defaults to
                None (off).
            key_transform (callable, optional): renames each result leaf: called with its
                key at its level, returns the new one. Defaults to None.

        Returns:
            A tensordict, or a tensor with ``reduce``.

        Raises:
            DimensionError: if ``dim`` is out of range for the batch dims (an ``IndexError``).
            RuntimeError: if a leaf is not a floating-point tensor, ``q`` is out of
                ``[0, 1]``, or with ``reduce`` the leaves do not concatenate.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([[1.0, 3.0, 2.0], [0.0, 5.0, 1.0]])}, [2, 3])
            >>> td.quantile(0.5, dim=1)["a"]
            tensor([2., 1.])
            >>> td.quantile(0.5, reduce=True)
            tensor(1.5000)
        """
        keepdim = False if keepdim is NO_DEFAULT else keepdim
        kwargs = {"interpolation": interpolation}
        src = self._as_dense()
        batch = self.batch_size
        if dim is NO_DEFAULT or dim is None:
            if reduce:
                flat = torch.cat([leaf.reshape(-1) for leaf in leaf_tensors(src)])
                return torch.quantile(flat, q, **kwargs)
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(x.reshape(-1), q, **kwargs), batch_size=extra, names=None
            )
        elif isinstance(dim, str) and dim == "feature":

            def features(x):
                return x.reshape(batch + (-1,))

            if reduce:
                flat = torch.cat([features(leaf) for leaf in leaf_tensors(src)], -1)
                return torch.quantile(flat, q, dim=-1, **kwargs)
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(features(x), q, dim=-1, **kwargs),
                batch_size=extra + batch,
                names=None,
            )
        else:
            d = _batch_dim(src, dim, "quantile")
            if reduce:
                joined = torch.cat(leaf_tensors(src), d)
                return torch.quantile(joined, q, dim=d, keepdim=keepdim, **kwargs)
            kept = batch[:d] + ((1,) if keepdim else ()) + batch[d + 1 :]
            extra = torch.as_tensor(q).shape
            out = src._fast_apply(
                lambda x: torch.quantile(x, q, dim=d, keepdim=keepdim, **kwargs),
                batch_size=extra + torch.Size(kept),
                names=None,
            )
        if key_transform is not None:
            out = _renamed(out, key_transform)
        return out


# The operators carry their class's qualified name, so that they pickle by reference like
# written methods.
for _name, _method in vars(MathMixin).items():
    if callable(_method) and "<locals>" in getattr(_method, "__qualname__", ""):
        _method.__qualname__ = f"MathMixin.{_name}"
del _name, _method
