"""Math over every leaf: operators, elementwise math (in place too), reductions and scans."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

import torch

from tensordict._collection import (
    NO_DEFAULT,
    TensorCollection,
    is_leaf_nontensor,
    is_non_tensor,
    is_tensor_collection,
)
from tensordict._keys import NestedKey, _key_parts
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops._generated.elementwise import ElementwiseOps
from tensordict._ops._generated.inplace import InplaceOps
from tensordict._ops._generated.reductions import ReductionOps
from tensordict._ops.keys import inner_tensordict
from tensordict._typing import T
from tensordict._unbatched import is_unbatched
from tensordict.errors import (
    BatchSizeError,
    ConflictingArgumentsError,
    DimensionError,
    DimTypeError,
    InvalidArgumentError,
    KeyMismatchError,
)

# ---------------------------------------------------------------------- shared with device.py


def _reducible(value: Any) -> bool:
    """True for a tensor leaf or a sub-tensordict: what ``all()`` and ``any()`` look into."""
    return isinstance(value, torch.Tensor) or (
        is_tensor_collection(value) and not is_non_tensor(value)
    )


def leaf_keys(td: TensorCollection) -> set:
    """The keys of every leaf of ``td``, nested ones as tuples."""
    return set(td.keys(True, True))


def leaf_tensors(td: TensorCollection) -> list:
    """The tensor leaves of ``td`` as ``values(True, True)`` gives them (a lazy stack's stacked)."""
    return [v for v in td.values(True, True) if isinstance(v, torch.Tensor)]


def tensors_only(td: T) -> T:
    """``td`` without its non-tensor entries (itself when it has none)."""
    dropped = _non_tensor_keys(td)
    return td.exclude(*dropped) if dropped else td


def _non_tensor_keys(td, prefix: tuple = ()) -> list:
    keys = []
    for key, value in td._items_level():
        if isinstance(value, NonTensorDataBase):
            keys.append(prefix + (key,))
        elif is_tensor_collection(value):
            # a tensorclass is walked through its tensordict
            keys.extend(_non_tensor_keys(value._leafwise_operand(), prefix + (key,)))
    return keys


# ---------------------------------------------------------------------- operands
# An operation of a tensordict with operands (``td + other``, ``td.lerp(end, weight)``,
# ``td.clamp(lo, hi)``) meets each operand in one of three ways:
# - a tensordict (or tensorclass) gives each leaf its own leaf at the same key;
# - a tensor with dims is *batch-shaped*: it is aligned with the batch dims from the right, as
#   torch broadcasts shapes, and spreads over each leaf's feature dims; the result takes the
#   broadcast batch size (``td[3, 4] * torch.ones(2, 1, 4)`` has batch size [2, 3, 4]);
# - a number or a 0-dim tensor meets every leaf as it is.
_COLLECTION, _BATCH_SHAPED, _AS_IS = 0, 1, 2


def _kind(operand) -> int:
    if is_tensor_collection(operand):
        return _COLLECTION
    if isinstance(operand, torch.Tensor) and operand.ndim:
        return _BATCH_SHAPED
    return _AS_IS


def _aligned(tensor: torch.Tensor, leaf: torch.Tensor, batch_dims: int) -> torch.Tensor:
    """The batch-shaped ``tensor`` with a dim of size 1 for each feature dim of ``leaf``."""
    return tensor.reshape(tensor.shape + (1,) * (leaf.ndim - batch_dims))


def _paired_keys(td) -> set:
    """The keys a leafwise operation pairs: of the tensor leaves and of the non-tensor entries
    (comparisons compare them too), nested ones as tuples."""
    return set(td.keys(True, True, is_leaf=is_leaf_nontensor))


def _key_mismatch(td, other, what: str, hint: str = "") -> None:
    mine, theirs = _paired_keys(td), _paired_keys(other)
    if mine != theirs:
        only_mine = sorted(map(str, mine - theirs))
        only_theirs = sorted(map(str, theirs - mine))
        msg = (
            f"cannot {what} tensordicts with different keys: only in the first {only_mine}, "
            f"only in the second {only_theirs}{hint}"
        )
        raise KeyMismatchError(msg)


def _without_unset(td, other, what: str, hint: str) -> tuple:
    """``(td, other)`` without the entries holding None that the other side lacks.

    A tensorclass field left None is no entry, and ``to_tensordict(retain_none=True)``
    makes it a non-tensor entry holding None: the two pair as equal structures.

    Raises:
        KeyMismatchError: if any other key is on one side only.
    """
    mine, theirs = _paired_keys(td), _paired_keys(other)
    if mine == theirs:
        return td, other
    unset_mine = [key for key in mine - theirs if td[key] is None]
    unset_theirs = [key for key in theirs - mine if other[key] is None]
    if len(unset_mine) + len(mine & theirs) != len(mine) or len(unset_theirs) + len(
        mine & theirs
    ) != len(theirs):
        _key_mismatch(td, other, what, hint)
    return (
        td.exclude(*unset_mine) if unset_mine else td,
        other.exclude(*unset_theirs) if unset_theirs else other,
    )


def _batch_size_of(td, operands: list, what: str):
    """The batch size of the result (None when it is ``td``'s) and its dim names."""
    shapes = [o.batch_size if k == _COLLECTION else o.shape for o, k in operands if k != _AS_IS]
    if all(shape == td.batch_size for shape in shapes):
        return None, NO_DEFAULT
    try:
        new = torch.broadcast_shapes(td.batch_size, *shapes)
    except RuntimeError as err:
        msg = (
            f"cannot {what} a tensordict of batch size {list(td.batch_size)} with operands of "
            f"shapes {[list(s) for s in shapes]}: a tensor operand is aligned with the batch "
            "dims from the right, and the shapes do not broadcast"
        )
        raise BatchSizeError(msg) from err
    if new == td.batch_size:
        return None, NO_DEFAULT
    names = td.names
    if all(n is None for n in names) or len(new) < len(names):
        return new, None
    return new, [None] * (len(new) - len(names)) + list(names)


def _leafwise_apply(td, fn, operands, what: str, *, default=None, lock: bool = True):
    """``fn(leaf, *operands)`` for every tensor leaf of ``td``, into a new tensordict.

    Each operand meets the leaf as the comment above says. With one tensordict operand,
    ``default`` says what to do with the leaves that only one side has: None raises
    KeyMismatchError, ``"intersection"`` keeps the shared ones only, and any other value
    stands in for the missing side. The result is locked when ``td`` is and ``lock``.
    """
    ops = [(o._leafwise_operand() if is_tensor_collection(o) else o) for o in operands]
    tds = [o for o in ops if is_tensor_collection(o)]
    src, fill, extra = td, NO_DEFAULT, None
    if len(tds) == 1 and default is not None and len(ops) == 1:
        other = tds[0]
        if isinstance(default, str) and default == "intersection":
            theirs = _paired_keys(other)
            common = [k for k in td.keys(True, True, is_leaf=is_leaf_nontensor) if k in theirs]
            src, other = td.select(*common), other.select(*common)
        else:
            fill = default
            only_theirs = _paired_keys(other) - _paired_keys(td)
            extra = other.select(*only_theirs) if only_theirs else None
        ops = tds = [other]
    elif len(tds) == 1:
        hint = "; pass default='intersection' or a fill value" if len(ops) == 1 else ""
        src, other = _without_unset(td, tds[0], what, hint)
        ops = [other if o is tds[0] else o for o in ops]
        tds = [other]
    else:
        for other in tds:
            _key_mismatch(td, other, what)
    kinds = [_kind(o) for o in ops]
    new, names = _batch_size_of(td, list(zip(ops, kinds)), what)
    if _BATCH_SHAPED in kinds:
        src = src._as_dense()  # the operand meets the stacked leaves of a lazy stack
    nb = td.batch_dims

    def leaf(x, *leaves):
        it = iter(leaves)
        args = []
        for o, k in zip(ops, kinds):
            if k == _COLLECTION:
                y = next(it)
                args.append(fill if y is None else y)
            else:
                args.append(_aligned(o, x, nb) if k == _BATCH_SHAPED else o)
        return fn(x, *args)

    if fill is NO_DEFAULT and all(k == _COLLECTION for k in kinds):
        # fn itself, unwrapped: a non-tensor entry recognises the comparison operators
        # (combine_values) and compares its values with the other's
        result = src._fast_apply(fn, *tds, batch_size=new, names=names)
    else:
        missing = NO_DEFAULT if fill is NO_DEFAULT else None
        result = src._fast_apply(leaf, *tds, default=missing, batch_size=new, names=names)
    if extra is not None:
        # the leaves only the operand has meet the fill value on this side
        result.update(
            extra._fast_apply(
                lambda y: fn(torch.as_tensor(fill, device=y.device), y), batch_size=new, names=names
            )
        )
    if lock and td.is_locked:
        result.lock_()
    return result


def _spread(td, operand):
    """A batch-shaped tensor ``operand`` as a tensordict of ``td``'s leaves, each expanded to
    its leaf's shape, so that in-place writes split it as they split a tensordict operand."""
    nb = td.batch_dims
    return td._as_dense()._fast_apply(lambda x: _aligned(operand, x, nb).expand_as(x))


def _ternary(td, fn, other1, other2, value, what: str):
    def compute(x, y, z):
        return fn(x, _as_tensor_operand(y, x), _as_tensor_operand(z, x), value=value)

    return _leafwise_apply(td, compute, (other1, other2), what)


def _inplace_apply(td, fn, operands, what: str):
    """Calls ``fn(leaf, *operands)``, which writes into the leaf, for every tensor leaf of ``td``.

    The operands meet the leaves as in :func:`_leafwise_apply`; a batch-shaped tensor must not
    grow the batch size. A lazy stack's leaves are its members' own tensors. Returns ``td``.
    """
    ops = []
    for o in operands:
        if is_tensor_collection(o):
            o = o._leafwise_operand()
            _key_mismatch(td, o, what)
        ops.append(_spread(td, o) if _kind(o) == _BATCH_SHAPED else o)
    tds = [o for o in ops if is_tensor_collection(o)]

    def write(x, *leaves):
        it = iter(leaves)
        fn(x, *(next(it) if is_tensor_collection(o) else o for o in ops))
        return x  # the leaf itself: nothing is rebound

    td._fast_apply(write, *tds, inplace=True)
    return td


def _ternary_(td, fn, other1, other2, value, what: str):
    def write(x, y, z):
        fn(x, _as_tensor_operand(y, x), _as_tensor_operand(z, x), value=value)

    return _inplace_apply(td, write, (other1, other2), what)


def _as_tensor_operand(value, leaf):
    """A number operand as a 0-dim tensor of the leaf's dtype and device (torch needs tensors)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(value, dtype=leaf.dtype, device=leaf.device)


def _into(out, result):
    """``result`` written into the tensordict ``out``, which is returned (the ``out=`` argument).

    A tensor leaf that ``out`` already holds with the result's shape is written in place (it
    keeps its identity, as with torch's ``out=``); the other entries are set.
    """
    for key in result.keys(True, True):
        value = result.get(key)
        current = out.get(key, None)
        if (
            isinstance(value, torch.Tensor)
            and isinstance(current, torch.Tensor)
            and current.shape == value.shape
        ):
            out.set_(key, value)
        else:
            out.set(key, value)
    return out


# ---------------------------------------------------------------------- operators
_OPERANDS = (torch.Tensor, int, float, bool, complex)


def _operator(op, swap: bool = False, name: str = "", lock: bool = True):
    fn = (lambda x, y: op(y, x)) if swap else op
    what = name or op.__name__.strip("_")

    def method(self, other):
        if is_tensor_collection(other):
            if not hasattr(other._leafwise_operand(), "_fast_apply"):
                return NotImplemented
        elif isinstance(other, Mapping) and what == "compare":
            return _compare_with_mapping(self, fn, other)
        elif not isinstance(other, _OPERANDS):
            return NotImplemented
        return _leafwise_apply(self, fn, (other,), what, lock=lock)

    return method


def _flat_mapping(mapping: Mapping, prefix: tuple = ()) -> dict:
    """The leaves of a nested mapping by key as ``keys(True, True)`` names them (tuples when nested)."""
    flat = {}
    for key, value in mapping.items():
        parts = prefix + (key,)
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            flat.update(_flat_mapping(value, parts))
        elif value is not None:  # a field set to None (to_dict of a tensorclass) is no leaf
            flat[parts if len(parts) > 1 else key] = value
    return flat


def _compare_with_mapping(td, fn, mapping: Mapping):
    """``fn(leaf, value)`` for each leaf of ``td`` and the value at its key in a nested mapping.

    The mapping stands for a tensordict of the same keys (``td == td.to_dict()``); each
    value meets its leaf as it is, with torch's broadcasting.
    """
    flat = _flat_mapping(mapping)
    mine = _paired_keys(td)
    if mine != set(flat):
        only_mine = sorted(map(str, mine - set(flat)))
        only_theirs = sorted(map(str, set(flat) - mine))
        msg = (
            f"cannot compare a tensordict with a mapping of different keys: only in the "
            f"tensordict {only_mine}, only in the mapping {only_theirs}"
        )
        raise KeyMismatchError(msg)

    def leaf(key, x):
        value = flat[key]
        if isinstance(x, torch.Tensor) and not isinstance(value, torch.Tensor):
            value = torch.as_tensor(value, device=x.device)
        return fn(x, value)

    # a lazy stack's leaves meet the values stacked, as its values() give them
    return td._as_dense().named_apply(leaf, nested_keys=True)


def _inplace_operator(op):
    def method(self, other):
        return self._write_each_leaf(op, other, op.__name__)

    return method


# ---------------------------------------------------------------------- reductions
_ONE_DIM_ONLY = frozenset({"max", "min", "prod", "median"})
# The reductions that, without ``dim``, reduce the batch dims only (each leaf keeps its features).
_BATCH_DIMS_BY_DEFAULT = frozenset({"logsumexp"})


def _kept_names(td, dims: tuple, keepdim: bool):
    """The dim names of a reduction's result: those of the batch dims it keeps (None: no names)."""
    names = td.names
    if all(n is None for n in names):
        return None
    if keepdim:
        return list(names)
    return [n for i, n in enumerate(names) if i not in dims]


def _values_indices(td, name: str, dim: int, keepdim: bool):
    ndim = td.batch_dims
    if not -ndim <= dim < ndim:
        msg = f"reduction dimension {dim} is out of range for {ndim} batch dimensions"
        raise DimensionError(msg)
    d = dim + ndim if dim < 0 else dim
    size = td.batch_size
    new = size[:d] + (torch.Size((1,)) if keepdim else torch.Size(())) + size[d + 1 :]
    names = _kept_names(td, (d,), keepdim)
    fn = getattr(torch, name)

    def values(x):
        # an unbatched entry has no batch dim to reduce: it is kept, and has no indices
        return x if is_unbatched(x) else fn(x, d, keepdim=keepdim)[0]

    def indices(x):
        return None if is_unbatched(x) else fn(x, d, keepdim=keepdim)[1]

    pair = (
        td._fast_apply(values, batch_size=new, names=names),
        td._fast_apply(indices, batch_size=new, names=names),
    )
    return getattr(torch.return_types, name)(pair)


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


def _reduce_over(name: str, x: torch.Tensor, dims: tuple, keepdim: bool, kwargs: dict):
    """``torch.<name>`` of ``x`` over ``dims``; those that take one dim reduce one after the other."""
    if name not in _ONE_DIM_ONLY:
        return getattr(torch, name)(x, dim=dims, keepdim=keepdim, **kwargs)
    reducer = getattr(torch, {"max": "amax", "min": "amin"}.get(name, name))
    for d in reversed(dims):
        x = reducer(x, d, keepdim=keepdim, **kwargs)
        if isinstance(x, tuple):
            x = x[0]  # median's values
    return x


def _joinable(name: str, leaves: list) -> list:
    """The tensor leaves to join into one tensor (integer ones cast to float for a mean)."""
    leaves = [v for v in leaves if not is_unbatched(v)]
    if name in ("mean", "nanmean"):
        return [v if v.is_floating_point() else v.float() for v in leaves]
    return leaves


def _feature_wise(td, leaf_fn, sub_fn, batch_size=None, names=NO_DEFAULT):
    """``leaf_fn`` of each leaf of ``td``'s level with its feature dims flattened into one last
    dim, and ``sub_fn`` of each sub-tensordict or tensorclass (so that it reduces the feature
    dims of its own level); non-tensor and unbatched entries are kept."""
    src = td._as_dense()
    nb = src.batch_dims

    def one(x):
        if is_tensor_collection(x):
            return sub_fn(x)
        if is_unbatched(x):
            return x
        return leaf_fn(x.reshape(x.shape[:nb] + (-1,)))

    return src._fast_apply(one, call_on_nested=True, batch_size=batch_size, names=names)


def _feature_reduction(td, name: str, dim: str, keepdim: bool, reduce, kwargs: dict):
    """``torch.<name>`` over the feature dims of each leaf (``dim="feature"``)."""
    if dim != "feature":
        msg = f"{name}(): dim must be an int, a tuple of ints, ... or 'feature', got {dim!r}"
        raise InvalidArgumentError(msg)
    if keepdim:
        msg = f"{name}(dim='feature') keeps the batch dims and reduces the others: keepdim=True does not apply"
        raise ConflictingArgumentsError(msg)
    if reduce:
        batch = td.batch_size
        leaves = _joinable(name, leaf_tensors(td._as_dense()))
        return _reduce_over(
            name, torch.cat([v.reshape(batch + (-1,)) for v in leaves], -1), (-1,), False, kwargs
        )
    return _feature_wise(
        td,
        lambda x: _reduce_over(name, x, (-1,), False, kwargs),
        lambda sub: getattr(sub, name)(dim="feature", **kwargs),
    )


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
    values = td._fast_apply(lambda x: x if is_unbatched(x) else fn(x, d).values)
    if not return_indices:
        return values
    indices = td._fast_apply(lambda x: None if is_unbatched(x) else fn(x, d).indices)
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

    Calls: ``_fast_apply``, ``_items_level``, ``_new_like``, ``_stored_tensors``.
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
    __rand__ = _operator(operator.and_, swap=True)
    __or__ = _operator(operator.or_)
    __ror__ = _operator(operator.or_, swap=True)
    __xor__ = _operator(operator.xor)
    __rxor__ = _operator(operator.xor, swap=True)
    __iadd__ = _inplace_operator(operator.iadd)
    __isub__ = _inplace_operator(operator.isub)
    __imul__ = _inplace_operator(operator.imul)
    __itruediv__ = _inplace_operator(operator.itruediv)
    __ipow__ = _inplace_operator(operator.ipow)
    __eq__ = _operator(operator.eq, name="compare", lock=False)
    __ne__ = _operator(operator.ne, name="compare", lock=False)
    __lt__ = _operator(operator.lt, name="compare", lock=False)
    __le__ = _operator(operator.le, name="compare", lock=False)
    __gt__ = _operator(operator.gt, name="compare", lock=False)
    __ge__ = _operator(operator.ge, name="compare", lock=False)

    def __neg__(self):
        return self._pointwise(operator.neg)

    def __abs__(self):
        return self._pointwise(operator.abs)

    def __invert__(self):
        return self._pointwise(operator.invert)

    # ------------------------------------------------------------------ primitives of the generated methods
    def _pointwise(self, fn):
        result = self._fast_apply(fn)
        if self.is_locked:
            result.lock_()  # as for the arithmetic: the result is locked like this tensordict
        return result

    def _leafwise(self, fn, other, args: tuple, kwargs: dict, name: str):
        default = kwargs.pop("default", None)
        return _leafwise_apply(
            self, lambda x, *ops: fn(x, *ops, **kwargs), (other, *args), name, default=default
        )

    def _pairwise(self, fn, other, name: str, default=None):
        return _leafwise_apply(self, fn, (other,), name, default=default)

    def _write_each_leaf(self, fn, other, name: str):
        # The leaves are the stored tensors (a lazy stack's are its members', never the
        # stacked copies that ``get`` returns); a tensordict operand gives each leaf its own,
        # and so does a batch-shaped tensor, spread over the leaves first.
        kind = _kind(other)
        if kind == _AS_IS:
            for leaf in self._stored_tensors():
                fn(leaf, other)
            return self
        if kind == _BATCH_SHAPED:
            other = _spread(self, other)
        else:
            other = other._leafwise_operand()
            _key_mismatch(self, other, name)
        self._write_matching_leaves(fn, other)
        return self

    def _reduce(self, name: str, dim, keepdim: bool, reduce, return_indices: bool, kwargs: dict):
        fn = getattr(torch, name)
        out = kwargs.pop("out", None)
        if name in _BATCH_DIMS_BY_DEFAULT and (dim is None or dim is ...):
            dim = tuple(range(self.batch_dims))
        if name in ("max", "min") and isinstance(dim, int) and return_indices and not reduce:
            if out is not None:
                msg = (
                    f"{name}(dim={dim}) returns a pair of values and indices, which out= cannot "
                    "receive; pass return_indices=False to write the values into out"
                )
                raise InvalidArgumentError(msg)
            return _values_indices(self, name, dim, keepdim)
        if dim is None or dim is ...:
            if reduce:
                return _reduce_all(self, name, **kwargs)
            whole = self._fast_apply(
                lambda x: fn(x, **kwargs), batch_size=torch.Size(()), names=None
            )
            return whole if out is None else _into(out, whole)
        if isinstance(dim, str):
            result = _feature_reduction(self, name, dim, keepdim, reduce, kwargs)
            return result if out is None or reduce else _into(out, result)
        ndim = self.batch_dims
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        norm = []
        for d in dims:
            if not -ndim <= d < ndim:
                msg = f"reduction dimension {d} is out of range for {ndim} batch dimensions"
                raise DimensionError(msg)
            norm.append(d + ndim if d < 0 else d)
        norm_t = tuple(sorted(set(norm)))
        if reduce:
            # the leaves joined along the first reduced dim, then reduced as one tensor
            leaves = _joinable(name, leaf_tensors(self._as_dense()))
            return _reduce_over(name, torch.cat(leaves, norm_t[0]), norm_t, keepdim, kwargs)
        if keepdim:
            new = torch.Size(1 if i in norm_t else s for i, s in enumerate(self.batch_size))
        else:
            new = torch.Size(s for i, s in enumerate(self.batch_size) if i not in norm_t)
        names = _kept_names(self, norm_t, keepdim)

        def op(x):
            if is_unbatched(x):
                return x  # no batch dims to reduce: kept as it is
            return _reduce_over(name, x, norm_t, keepdim, kwargs)

        result = self._fast_apply(op, batch_size=new, names=names)
        return result if out is None else _into(out, result)

    # ------------------------------------------------------------------ hooks of the classes
    def _leafwise_operand(self):
        """What this tensordict is as the operand of a leafwise operation: itself.

        A tensorclass gives its tensordict; ``NonTensorDataBase`` has this hook too.
        """
        return self

    def _write_matching_leaves(self, fn, other) -> None:
        """Calls the in-place ``fn(leaf, other_leaf)`` on each tensor leaf with ``other``'s at its key.

        The walk is ``_fast_apply``'s, so a lazy stack nested anywhere gives its members' own
        tensors (``get`` would give stacked copies) and ``other`` is split along with it.
        """
        for key, value in self._items_level():
            if isinstance(value, torch.Tensor):
                fn(value, other.get(key))
            elif is_tensor_collection(value) and not is_non_tensor(value):
                # a sub-tensordict writes its own leaves (a lazy stack, its members')
                inner_tensordict(value)._write_matching_leaves(fn, inner_tensordict(other.get(key)))

    def _as_dense(self):
        """This tensordict with its leaves stacked, for the ops along a batch dim: itself.

        The lazy stack returns ``self.contiguous()``.
        """
        return self

    # ------------------------------------------------------------------ elementwise
    def clamp(
        self: T,
        min: float | torch.Tensor | TensorCollection | None = None,  # noqa: A002 - torch's names
        max: float | torch.Tensor | TensorCollection | None = None,  # noqa: A002
        *,
        out: TensorCollection | None = None,
    ) -> T:
        """Returns a tensordict with every tensor leaf clamped to ``[min, max]``.

        Each leaf goes through ``torch.clamp(leaf, min, max)``; a bound left at None is not
        applied. A tensordict bound gives each leaf its own bound at the same key; a tensor
        bound with dims is batch-shaped, as for the arithmetic operators: aligned with the batch
        dims from the right and spread over each leaf's feature dims. Non-tensor entries are
        kept as they are, and this tensordict is left unchanged.

        Args:
            min (number, torch.Tensor or TensorDictBase, optional): the lower bound. Defaults
                to None.
            max (number, torch.Tensor or TensorDictBase, optional): the upper bound, likewise.
                Defaults to None.

        Keyword Args:
            out (TensorDictBase, optional): a tensordict that receives the result and is
                returned: a leaf it already holds is written in place, a missing one is added.
                Defaults to None.

        Returns:
            A new tensordict with the same keys, names and device (the batch size broadcast
            with that of a tensor bound), or ``out``.

        Raises:
            RuntimeError: if both bounds are None, or a tensor bound does not broadcast with the
                batch size (BatchSizeError).
            KeyMismatchError: if a tensordict bound has other leaf keys (a ``KeyError``).

        Examples:
            >>> td = TensorDict({"a": torch.tensor([-2.0, 0.5, 3.0])}, [3])
            >>> td.clamp(0.0, 1.0)["a"]
            tensor([0.0000, 0.5000, 1.0000])
            >>> td.clamp(max=torch.tensor([0.0, 0.0, 1.0]))["a"]
            tensor([-2.,  0.,  1.])
        """
        result = _leafwise_apply(self, torch.clamp, (min, max), "clamp", lock=False)
        return result if out is None else _into(out, result)

    def clamp_(
        self: T,
        min: float | torch.Tensor | TensorCollection | None = None,  # noqa: A002
        max: float | torch.Tensor | TensorCollection | None = None,  # noqa: A002
    ) -> T:
        """Clamps every tensor leaf to ``[min, max]`` in place and returns the tensordict.

        Each leaf goes through ``Tensor.clamp_(min, max)``, nested ones included; non-tensor
        entries are skipped. The bounds are taken as in :meth:`clamp`. No entry is rebound,
        so a locked tensordict accepts it too.

        Args:
            min (number, torch.Tensor or TensorDictBase, optional): the lower bound. Defaults
                to None.
            max (number, torch.Tensor or TensorDictBase, optional): the upper bound. Defaults
                to None.

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
        return _inplace_apply(self, torch.Tensor.clamp_, (min, max), "clamp_")

    def zero_(self: T) -> T:
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
        for leaf in self._stored_tensors():  # a lazy stack's own, never stacked copies
            leaf.zero_()
        return self

    def fill_(self: T, key: NestedKey, value: float | torch.Tensor) -> T:
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
        parts = _key_parts(key)
        if (
            len(parts) > 1
        ):  # the level that holds the entry fills it (a lazy stack, member by member)
            self.get(parts[:-1], NO_DEFAULT).fill_(parts[-1], value)
            return self
        target = self.get(key, NO_DEFAULT)
        if is_tensor_collection(target):
            for leaf in target._stored_tensors():
                leaf.fill_(value)
        else:
            target.fill_(value)
        return self

    def addcmul(
        self: T,
        other1: TensorCollection | torch.Tensor | float,
        other2: TensorCollection | torch.Tensor | float,
        *,
        value: float | None = 1,
    ) -> T:
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

    def addcmul_(
        self: T,
        other1: TensorCollection | torch.Tensor | float,
        other2: TensorCollection | torch.Tensor | float,
        *,
        value: float | None = 1,
    ) -> T:
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

    def addcdiv(
        self: T,
        other1: TensorCollection | torch.Tensor | float,
        other2: TensorCollection | torch.Tensor | float,
        value: float | None = 1,
    ) -> T:
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

    def addcdiv_(
        self: T,
        other1: TensorCollection | torch.Tensor | float,
        other2: TensorCollection | torch.Tensor | float,
        *,
        value: float | None = 1,
    ) -> T:
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
    def norm(self: T, *args: Any, **kwargs: Any) -> T:
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

    def all(self: T, dim: int | None = None) -> bool | T:
        """Returns True if every element of every tensor leaf is nonzero; with ``dim``, reduces that batch dim.

        Without ``dim`` the answer is a Python bool, True when there is no tensor leaf. With
        ``dim`` each leaf goes through ``Tensor.all(dim)``, and the result is a tensordict of
        boolean tensors without that batch dim, keeping the names of the others.

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
        return self._bool_reduce(all, dim)

    def any(self: T, dim: int | None = None) -> bool | T:
        """Returns True if any element of any tensor leaf is nonzero; with ``dim``, reduces that batch dim.

        Without ``dim`` the answer is a Python bool, False when there is no tensor leaf. With
        ``dim`` each leaf goes through ``Tensor.any(dim)``, and the result is a tensordict of
        boolean tensors without that batch dim, keeping the names of the others.

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
        return self._bool_reduce(any, dim)

    def _bool_reduce(self, reduce: Callable, dim: int | None):
        """``all()`` or ``any()`` (the builtin ``reduce``): of every element, or over batch dim ``dim``."""
        name = reduce.__name__
        if dim is None:
            # each sub-tensordict answers for itself: a lazy stack never stacks its leaves
            return reduce(bool(getattr(v, name)()) for v in self.values() if _reducible(v))
        ndim = self.batch_dims
        if not -ndim <= dim < ndim:
            msg = f"dimension {dim} is out of range for {ndim} batch dimensions"
            raise DimensionError(msg)
        d = dim + ndim if dim < 0 else dim
        new = self.batch_size[:d] + self.batch_size[d + 1 :]
        names = _kept_names(self, (d,), False)
        return self._fast_apply(lambda x: getattr(x, name)(d), batch_size=new, names=names)

    def softmax(self: T, dim: int, dtype: torch.dtype | None = None) -> T:
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

    def cummax(
        self: T, dim: int, *, reduce: bool | None = None, return_indices: bool = True
    ) -> T | tuple:
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

    def cummin(
        self: T, dim: int, *, reduce: bool | None = None, return_indices: bool = True
    ) -> T | tuple:
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
        self: T,
        q: float | torch.Tensor,
        dim: int | str = NO_DEFAULT,
        keepdim: bool = NO_DEFAULT,
        *,
        interpolation: str = "linear",
        reduce: bool | None = None,
        key_transform: Callable | None = None,
    ) -> T | torch.Tensor:
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
            if reduce:
                leaves = _joinable("quantile", leaf_tensors(src))
                flat = torch.cat([leaf.reshape(batch + (-1,)) for leaf in leaves], -1)
                return torch.quantile(flat, q, dim=-1, **kwargs)
            extra = torch.as_tensor(q).shape
            out = _feature_wise(
                src,
                lambda x: torch.quantile(x, q, dim=-1, **kwargs),
                lambda sub: sub.quantile(q, dim="feature", interpolation=interpolation),
                batch_size=extra + batch if extra else None,
                names=None if extra else NO_DEFAULT,
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
                names=None if extra else _kept_names(src, (d,), keepdim),
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
