"""Values: conversions, arithmetic and comparison operators, elementwise math, reductions.

The elementwise math methods are generated from one table (``_UNARY`` and
``_BINARY``); each gets an in-place ``_`` form. The reductions are generated too. The
docstrings of the generated methods are built by their factories from ``_UNARY_DOCS``,
``_BINARY_DOCS`` and ``_REDUCTION_DOCS``, each with an example that runs as a doctest.
"""

from __future__ import annotations

import operator
import textwrap

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._ops.exchange import CONVERTERS
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

# ---------------------------------------------------------- docstrings of the generated methods
# name: (what it computes, example input, example output, the kind of dtype it refuses: _UNARY_RAISES)
_UNARY_DOCS = {
    "abs": ("the absolute value", "[-1.0, 2.0]", "tensor([1., 2.])", "bool"),
    "acos": ("the inverse cosine", "[1.0]", "tensor([0.])", "float"),
    "asin": ("the inverse sine", "[0.0]", "tensor([0.])", "float"),
    "atan": ("the inverse tangent", "[0.0]", "tensor([0.])", "float"),
    "ceil": ("rounding up to an integral value", "[0.5, -1.5]", "tensor([ 1., -1.])", "bool"),
    "cos": ("the cosine", "[0.0]", "tensor([1.])", "float"),
    "cosh": ("the hyperbolic cosine", "[0.0]", "tensor([1.])", "float"),
    "erf": ("the error function", "[0.0]", "tensor([0.])", "float"),
    "erfc": ("the complementary error function", "[0.0]", "tensor([1.])", "float"),
    "exp": ("the exponential", "[0.0]", "tensor([1.])", "float"),
    "expm1": ("``exp(x) - 1``", "[0.0]", "tensor([0.])", "float"),
    "floor": ("rounding down to an integral value", "[0.5, -1.5]", "tensor([ 0., -2.])", "bool"),
    "frac": ("the fractional part", "[1.5, -2.25]", "tensor([ 0.5000, -0.2500])", "real"),
    "lgamma": ("the log of the absolute gamma function", "[1.0, 2.0]", "tensor([0., 0.])", "float"),
    "log": ("the natural logarithm", "[1.0]", "tensor([0.])", "float"),
    "log10": ("the base-10 logarithm", "[1.0, 100.0]", "tensor([0., 2.])", "float"),
    "log1p": ("``log(1 + x)``", "[0.0]", "tensor([0.])", "float"),
    "log2": ("the base-2 logarithm", "[1.0, 8.0]", "tensor([0., 3.])", "float"),
    "neg": ("the negation", "[1.0, -2.0]", "tensor([-1.,  2.])", "bool"),
    "reciprocal": ("``1 / x``", "[2.0, 4.0]", "tensor([0.5000, 0.2500])", "float"),
    "round": ("rounding to the nearest integer, halves to even", "[0.4, 2.5]", "tensor([0., 2.])", "bool"),
    "rsqrt": ("``1 / sqrt(x)``", "[4.0, 16.0]", "tensor([0.5000, 0.2500])", "float"),
    "sigmoid": ("the logistic function", "[0.0]", "tensor([0.5000])", "float"),
    "sign": ("the sign: -1, 0 or 1", "[-2.0, 0.0, 3.0]", "tensor([-1.,  0.,  1.])", "any"),
    "sin": ("the sine", "[0.0]", "tensor([0.])", "float"),
    "sinh": ("the hyperbolic sine", "[0.0]", "tensor([0.])", "float"),
    "sqrt": ("the square root", "[4.0, 9.0]", "tensor([2., 3.])", "float"),
    "tan": ("the tangent", "[0.0]", "tensor([0.])", "float"),
    "tanh": ("the hyperbolic tangent", "[0.0]", "tensor([0.])", "float"),
    "trunc": ("rounding towards zero", "[1.7, -1.7]", "tensor([ 1., -1.])", "bool"),
    "logical_not": ("the logical negation", "[True, False]", "tensor([False,  True])", "logical"),
    "bitwise_not": ("the bitwise negation", "[0, 5]", "tensor([-1, -6])", "int"),
    "relu": ("``max(x, 0)``", "[-1.0, 2.0]", "tensor([0., 2.])", "bool"),
    "square": ("``x * x``", "[2.0, -3.0]", "tensor([4., 9.])", "square"),
    "exp2": ("``2 ** x``", "[3.0]", "tensor([8.])", "float"),
    "sgn": ("the sign, extended to complex numbers as ``x / abs(x)``", "[-2.0, 3.0]", "tensor([-1.,  1.])", "any"),
}  # fmt: skip

_REFUSED = "for which torch does not implement it"
# kind: (a sentence on the result dtype, the out-of-place Raises condition, the in-place one)
_UNARY_RAISES = {
    "float": (
        " Integer and boolean leaves give floating-point results.",
        None,
        "if a leaf is an integer or boolean tensor, which cannot hold the floating-point result",
    ),
    "bool": ("", f"if a leaf is a boolean tensor, {_REFUSED}", f"if a leaf is a boolean tensor, {_REFUSED}"),
    "real": ("", f"if a leaf is an integer or boolean tensor, {_REFUSED}", f"if a leaf is an integer or boolean tensor, {_REFUSED}"),
    "int": ("", f"if a leaf is a floating-point tensor, {_REFUSED}", f"if a leaf is a floating-point tensor, {_REFUSED}"),
    "square": (" Boolean leaves give int64 results.", None, "if a leaf is a boolean tensor, which cannot hold the integer result"),
    "logical": (" The results are boolean tensors.", None, None),
    "any": ("", None, None),
}  # fmt: skip

_NUMBER_OR_TENSOR = "number, torch.Tensor or TensorDictBase"
_TENSOR_ONLY = "torch.Tensor or TensorDictBase"
# name: (what it computes, the type of other, None or ("args" or "kwargs", the extra arguments it takes),
#        example input, example arguments, example output)
_BINARY_DOCS = {
    "add": ("the sum", _NUMBER_OR_TENSOR, ("kwargs", "``alpha``, a multiplier of ``other`` (default 1)"), "[1.0, 4.0]", "2.0", "tensor([3., 6.])"),
    "sub": ("the difference", _NUMBER_OR_TENSOR, ("kwargs", "``alpha``, a multiplier of ``other`` (default 1)"), "[1.0, 4.0]", "1.0", "tensor([0., 3.])"),
    "mul": ("the product", _NUMBER_OR_TENSOR, None, "[1.0, 4.0]", "3.0", "tensor([ 3., 12.])"),
    "div": ("the quotient", _NUMBER_OR_TENSOR, ("kwargs", "``rounding_mode``: None (true division), ``'trunc'`` or ``'floor'``"), "[1.0, 4.0]", "2.0", "tensor([0.5000, 2.0000])"),
    "pow": ("the power", _NUMBER_OR_TENSOR, None, "[1.0, 4.0]", "2", "tensor([ 1., 16.])"),
    "maximum": ("the elementwise maximum", _TENSOR_ONLY, None, "[1.0, 4.0]", "torch.tensor(2.0)", "tensor([2., 4.])"),
    "minimum": ("the elementwise minimum", _TENSOR_ONLY, None, "[1.0, 4.0]", "torch.tensor(2.0)", "tensor([1., 2.])"),
    "clamp_min": ("the leaf clamped from below", _NUMBER_OR_TENSOR, None, "[1.0, 4.0]", "2.0", "tensor([2., 4.])"),
    "clamp_max": ("the leaf clamped from above", _NUMBER_OR_TENSOR, None, "[1.0, 4.0]", "2.0", "tensor([1., 2.])"),
    "lerp": ("the linear interpolation", _TENSOR_ONLY, ("args", "the ``weight`` (required), a number or tensor; the result is ``leaf + weight * (other - leaf)``"), "[1.0, 4.0]", "torch.tensor([3.0, 0.0]), 0.5", "tensor([2., 2.])"),
    "atan2": ("the angle in radians", _TENSOR_ONLY, None, "[0.0, 1.0]", "torch.tensor(1.0)", "tensor([0.0000, 0.7854])"),
    "fmod": ("the remainder with the sign of the leaf", _NUMBER_OR_TENSOR, None, "[-3.0, 5.0]", "2.0", "tensor([-1.,  1.])"),
    "remainder": ("the remainder with the sign of ``other``", _NUMBER_OR_TENSOR, None, "[-3.0, 5.0]", "2.0", "tensor([1., 1.])"),
}  # fmt: skip

_SUM_DATA = "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"
_MAX_DATA = "[[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]"
_STD_DATA = "[[1.0, 3.0, 5.0], [2.0, 2.0, 2.0]]"
# name: (what it computes, example input, two (call, output) example pairs)
_REDUCTION_DOCS = {
    "sum": ("the sum", _SUM_DATA, '(1)["a"]', "tensor([ 3., 12.])", "(reduce=True)", "tensor(15.)"),
    "mean": ("the mean", _SUM_DATA, '(1)["a"]', "tensor([1., 4.])", "(reduce=True)", "tensor(2.5000)"),
    "nansum": ("the sum with NaN counted as zero", '[[1.0, float("nan")], [2.0, 3.0]]', '(1)["a"]', "tensor([1., 5.])", "(reduce=True)", "tensor(6.)"),
    "nanmean": ("the mean of the values that are not NaN", '[[1.0, float("nan")], [2.0, 4.0]]', '(1)["a"]', "tensor([1., 3.])", "(reduce=True)", "tensor(2.3333)"),
    "prod": ("the product", "[[1.0, 2.0], [3.0, 4.0]]", '(1)["a"]', "tensor([ 2., 12.])", "(reduce=True)", "tensor(24.)"),
    "std": ("the standard deviation", _STD_DATA, '(1)["a"]', "tensor([2., 0.])", "(reduce=True)", "tensor(1.3784)"),
    "var": ("the variance", _STD_DATA, '(1)["a"]', "tensor([4., 0.])", "(reduce=True)", "tensor(1.9000)"),
    "max": ("the maximum", _MAX_DATA, '(1).values["a"]', "tensor([5., 6.])", '(1).indices["a"]', "tensor([1, 2])"),
    "min": ("the minimum", _MAX_DATA, '(1).values["a"]', "tensor([1., 3.])", '(1).indices["a"]', "tensor([0, 1])"),
    "amax": ("the maximum", _MAX_DATA, '(1)["a"]', "tensor([5., 6.])", "(reduce=True)", "tensor(6.)"),
    "amin": ("the minimum", _MAX_DATA, '(1)["a"]', "tensor([1., 3.])", "(reduce=True)", "tensor(1.)"),
    "logsumexp": ("the log-sum-exp", "[[0.0, 0.0], [1.0, 1.0]]", '(1)["a"]', "tensor([0.6931, 1.6931])", "(1, keepdim=True).batch_size", "torch.Size([2, 1])"),
    "median": ("the median", _MAX_DATA, '(1)["a"]', "tensor([2., 4.])", "(reduce=True)", "tensor(3.)"),
}  # fmt: skip

_PER_DIM = "Several batch dims are reduced one after the other"
_NAN_MEAN = "With ``reduce=True`` the mean runs over the elements of all the leaves together, integer and boolean ones cast to float32 first."
_SAMPLE = "By default it is the sample estimate (``correction=1``); pass ``correction=0`` for the population one."
_INDICES = "With an int ``dim`` and ``return_indices`` (the default), the result is a :class:`ValuesIndices` pair of tensordicts, ``.values`` and ``.indices`` (the positions along ``dim``); with a tuple of dims or ``return_indices=False``, only the values, computed like :meth:`{}`."
# name: what sets the method apart, after the paragraph common to every reduction
_REDUCTION_NOTES = {
    "mean": _NAN_MEAN,
    "nanmean": _NAN_MEAN,
    "prod": f"{_PER_DIM}.",
    "std": _SAMPLE,
    "var": _SAMPLE,
    "max": _INDICES.format("amax"),
    "min": _INDICES.format("amin"),
    "logsumexp": "``torch.logsumexp`` needs dims, so a call without ``dim`` raises TypeError, with or without ``reduce``.",
    "median": f"Of an even count of values it takes the lower middle one, and it returns no indices. {_PER_DIM}, which gives a median of medians, not the median of all the elements.",
}  # fmt: skip


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


def _fill(text: str, indent: str = "", hang: str = "") -> str:
    """One paragraph or section entry of a generated docstring, wrapped at 88 columns."""
    return textwrap.fill(text, width=88, initial_indent=indent, subsequent_indent=indent + hang)


def _section(title: str, *entries) -> str:
    """A section of a generated docstring from ``(name, text)`` entries; a None text is left out."""
    lines = [_fill(f"{name}: {text}", "    ", "    ") for name, text in entries if text]
    return f"{title}:\n" + "\n".join(lines) + "\n\n" if lines else ""


def _make_unary(name: str):
    def method(self):
        return self._fast_apply(
            getattr(torch, name) if hasattr(torch, name) else getattr(torch.Tensor, name)
        )

    def method_(self):
        fn = getattr(torch.Tensor, name + "_")
        for leaf in self._stored_tensors():
            fn(leaf)
        return self

    what, data, out, kind = _UNARY_DOCS[name]
    dtype_note, refused, refused_ = _UNARY_RAISES[kind]
    setup = f'    >>> td = TensorDict({{"a": torch.tensor({data})}}, [{data.count(",") + 1}])\n'
    method.__name__ = name
    method.__doc__ = (
        f"Returns a tensordict with ``torch.{name}`` ({what}) applied to every leaf.\n\n"
        + _fill(
            f"Each tensor leaf, nested ones included, is replaced by ``torch.{name}(leaf)`` in "
            "the result; non-tensor entries are kept as they are, and this tensordict is left "
            f"unchanged.{dtype_note}"
        )
        + "\n\nReturns:\n    A new tensordict with the same keys, batch size, names and device.\n\n"
        + _section("Raises", ("RuntimeError", refused and refused + "."))
        + f'Examples:\n{setup}    >>> td.{name}()["a"]\n    {out}\n'
    )
    method_.__name__ = name + "_"
    method_.__doc__ = (
        f"Applies ``Tensor.{name}_`` ({what}) to every leaf in place and returns the tensordict.\n\n"
        + _fill(
            "Each tensor leaf, nested ones included, is overwritten with its result in its own "
            "dtype; non-tensor entries are skipped. No entry is rebound, so a locked tensordict "
            "accepts it too."
        )
        + "\n\nReturns:\n    This tensordict.\n\n"
        + _section(
            "Raises",
            ("RuntimeError", refused_ and refused_ + "; the leaves before it are already written."),
        )
        + f'Examples:\n{setup}    >>> td.{name}_() is td\n    True\n    >>> td["a"]\n    {out}\n'
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
        return _write_each_leaf(self, lambda x, y: fn(x, y, *args, **kwargs), other, name)

    what, other_type, extra, data, call, out = _BINARY_DOCS[name]
    hint = dict([extra]) if extra else {}
    needs_tensor = other_type == _TENSOR_ONLY
    args = _section(
        "Args",
        (
            f"other ({other_type})",
            f"the second operand. {'A tensor' if needs_tensor else 'A number or tensor'} is "
            "combined with every leaf and broadcasts by torch's rules, aligned on the trailing "
            "dims (the ``+``-style operators align a tensor on the leading batch dims instead); "
            "a tensordict or tensorclass gives each leaf its own leaf at the same key.",
        ),
        (
            "*args",
            f"passed on to ``torch.{name}`` after ``other``: {hint.get('args', 'it takes none')}.",
        ),
        ("**kwargs", f"passed on to ``torch.{name}``: {hint.get('kwargs', 'it takes none')}."),
    )
    mismatch = (
        "KeyMismatchError",
        "if ``other`` is a tensordict whose leaf keys differ from these.",
    )
    type_error = (
        "TypeError",
        needs_tensor
        and f"if ``other`` is a number (``torch.{name}`` needs a tensor)"
        + (" or the weight is missing." if name == "lerp" else "."),
    )
    setup = f'    >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])\n'
    method.__name__ = name
    method.__doc__ = (
        f"Returns a tensordict of ``torch.{name}(leaf, other)``, {what}, for every leaf.\n\n"
        "Non-tensor entries are kept as they are, and this tensordict is left unchanged.\n\n"
        + args
        + "Returns:\n    A new tensordict with the same keys, batch size, names and device.\n\n"
        + _section(
            "Raises",
            mismatch,
            type_error,
            (
                "RuntimeError",
                "if a leaf and its operand do not broadcast, or torch refuses their dtypes.",
            ),
        )
        + f'Examples:\n{setup}    >>> td.{name}({call})["a"]\n    {out}\n'
    )
    method_.__name__ = name + "_"
    if hasattr(torch.Tensor, name + "_"):
        method_.__doc__ = (
            f"Applies ``Tensor.{name}_(other)``, {what}, to every leaf in place and returns the "
            "tensordict.\n\n"
            + _fill(
                f"Each tensor leaf, nested ones included, is overwritten with ``torch.{name}(leaf, "
                "other)`` in its own dtype and shape; non-tensor entries are skipped. No entry is "
                "rebound, so a locked tensordict accepts it too."
            )
            + "\n\n"
            + args
            + "Returns:\n    This tensordict.\n\n"
            + _section(
                "Raises",
                mismatch,
                type_error,
                (
                    "RuntimeError",
                    "if an operand does not broadcast to its leaf's shape, or the result cannot be "
                    "cast to the leaf's dtype (a floating-point result into an integer leaf, for "
                    "instance); the leaves before it are already written.",
                ),
            )
            + f'Examples:\n{setup}    >>> td.{name}_({call}) is td\n    True\n    >>> td["a"]\n    {out}\n'
        )
    else:  # torch has no such in-place method: the docstring tells the current failure
        method_.__doc__ = (
            f"Would write {what} with ``other`` into every leaf in place, but always raises "
            "AttributeError.\n\n"
            + _fill(
                f"``torch.Tensor`` has no ``{name}_`` method, and this method looks it up before "
                f"anything else, so every call fails and changes nothing. ``td.copy_(td.{name}("
                "other))`` writes the same result in place."
            )
            + "\n\n"
            + args
            + "Returns:\n    Nothing, since every call raises; once fixed, this tensordict.\n\n"
            + _section(
                "Raises", ("AttributeError", f"always: ``torch.Tensor`` has no ``{name}_``.")
            )
            + f"Examples:\n{setup}    >>> td.{name}_({call})\n    Traceback (most recent call last):"
            f"\n        ...\n    AttributeError: type object 'Tensor' has no attribute '{name}_'\n"
            f'    >>> td.copy_(td.{name}({call}))["a"]\n    {out}\n'
        )
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
        return _write_each_leaf(self, op, other, op.__name__)

    return method


def _write_each_leaf(td, fn, other, name: str):
    """Calls the in-place ``fn(leaf, operand)`` on each tensor ``td`` holds; returns ``td``.

    The leaves are the stored tensors (a lazy stack's are its members', never the stacked
    copies that ``get`` returns); a tensordict operand gives each leaf its own entry.
    """
    other = _unwrap(other)
    if not is_tensor_collection(other):
        for leaf in td._stored_tensors():
            fn(leaf, other)
        return td
    _check_same_keys(td, other, name)
    if getattr(type(td), "_is_lazy", False):
        td.apply_(fn, other)
        return td
    for key in td.keys(True, True):
        leaf = td.get(key)
        if isinstance(leaf, torch.Tensor):
            fn(leaf, other.get(key))
    return td


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

    what, data, call1, out1, call2, out2 = _REDUCTION_DOCS[name]
    indices = name in ("max", "min")
    summed = name in ("sum", "nansum")
    if name == "logsumexp":
        whole = "Without ``dim`` it raises, see below."
    else:
        whole = (
            "Without ``dim`` (or with ``dim=...``), each leaf is reduced over all its dims, "
            "feature dims included, into a tensordict with ``batch_size=[]``; with "
            "``reduce=True`` as well, all the leaves are reduced together into one tensor ("
            + ("the sum of the per-leaf results)." if summed else "their elements concatenated).")
        )
    floats_only = name in ("mean", "nanmean", "std", "var") and (
        "if a leaf is an integer or boolean tensor"
        + (" (``reduce=True`` casts them instead)." if "mean" in name else ".")
    )
    empty = "with ``reduce=True``, if there is no tensor leaf."
    setup = f'    >>> td = TensorDict({{"a": torch.tensor({data})}}, [2, {data.split("]")[0].count(",") + 1}])\n'
    method.__name__ = name
    method.__doc__ = (
        f"Returns ``torch.{name}`` of every leaf over the batch dims ``dim``: {what}.\n\n"
        + _fill(
            "With ``dim``, each tensor leaf is reduced over those batch dims and the result keeps "
            "the other batch dims (and the reduced ones with size 1 if ``keepdim``). "
            f"{whole} Non-tensor entries are kept; the result has no dim names."
        )
        + "\n\n"
        + (_fill(_REDUCTION_NOTES[name]) + "\n\n" if name in _REDUCTION_NOTES else "")
        + _section(
            "Args",
            (
                "dim (int, tuple of int or Ellipsis, optional)",
                "the batch dims to reduce; negative values count from the last batch dim. "
                + (
                    "Required: the default None raises."
                    if name == "logsumexp"
                    else "Defaults to None, which (like ``...``) reduces each leaf over all its dims."
                ),
            ),
            (
                "keepdim (bool, optional)",
                "keep the reduced batch dims, with size 1. Defaults to False.",
            ),
        )
        + _section(
            "Keyword Args",
            (
                "reduce (bool, optional)",
                "without ``dim``, reduce all the leaves together into one tensor; ignored with "
                "``dim``. Defaults to None (off)."
                if name != "logsumexp"
                else "ignored: with ``dim`` it has no effect, and without it the call raises.",
            ),
            (
                "return_indices (bool, optional)",
                "with an int ``dim``, return the indices too. Defaults to True."
                if indices
                else "ignored: only ``max`` and ``min`` return indices. Defaults to True.",
            ),
            (
                "**kwargs",
                f"passed on to ``torch.{name}`` for every leaf"
                + (
                    " (not with an int ``dim``)."
                    if indices
                    else ", ``dtype`` for instance."
                    if name in ("sum", "nansum", "mean", "nanmean", "prod")
                    else "."
                ),
            ),
        )
        + "Returns:\n"
        + (
            "    A :class:`ValuesIndices` pair of tensordicts for an int ``dim`` with\n"
            "    ``return_indices``; otherwise a tensordict, or a 0-dim tensor with ``reduce=True``.\n\n"
            if indices
            else "    A tensordict.\n\n"
            if name == "logsumexp"
            else "    A tensordict, or a 0-dim tensor with ``reduce=True``.\n\n"
        )
        + _section(
            "Raises",
            (
                "DimensionError",
                "if an entry of ``dim`` is out of range for the batch dims (any ``dim`` when "
                "there are no batch dims).",
            ),
            ("TypeError", name == "logsumexp" and "if ``dim`` is None or ``...``."),
            ("RuntimeError", floats_only or summed and empty),
            ("ValueError", not summed and name != "logsumexp" and empty),
        )
        + f"Examples:\n{setup}    >>> td.{name}{call1}\n    {out1}\n"
        + f"    >>> td.{name}{call2}\n    {out2}\n"
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


def _holds_attrs(td) -> bool:
    # A tensordict made by attrs(): its leaves are TensorAttrs.
    return any(getattr(type(v), "_is_tensor_attrs", False) for v in td.values(True, False))


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

    # boolean reductions
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

    # conversions
    def to(self, *args, **kwargs):
        """Returns the tensordict moved to a device and/or cast to a dtype.

        The positional arguments may be a device (a ``torch.device``, a string or an index),
        a ``torch.dtype``, a tensor (its device and dtype) or a tensordict (its device only), in
        any combination; each overrides what an earlier one, or a keyword, gave. The dtype cast
        applies to every tensor leaf, integer and boolean ones included; non-tensor entries are
        kept. With neither a device nor a dtype, or with only a device equal to
        :attr:`device`, this tensordict itself is returned. Otherwise the result is new, and
        its :attr:`device` is the target device when one was given.

        Args:
            *args: the devices, dtypes, tensors or tensordicts described above.

        Keyword Args:
            device (torch.device, str or int, optional): the target device.
            dtype (torch.dtype, optional): the target dtype.
            non_blocking (bool, optional): passed on to ``Tensor.to`` when a device is given.
                Defaults to False.

        Returns:
            This tensordict, or a new one.

        Raises:
            TypeError: if another keyword is given, or a positional argument is none of the
                above.
            RuntimeError: if a string names no device, or the device cannot be used (an index
                without an accelerator, for instance).
            AssertionError: from torch, when moving to CUDA with a build that has no CUDA.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2], device="cpu")
            >>> td.to(torch.float64)["a"].dtype
            torch.float64
            >>> td.to("cpu") is td
            True
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
            elif is_tensor_collection(arg) and _holds_attrs(arg):
                return CONVERTERS["to_attrs"](self, arg, non_blocking)
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
        """Returns the tensordict on the CPU.

        This is ``self.to("cpu")``: the tensordict itself when its :attr:`device` is already the
        CPU, otherwise a new tensordict whose leaves are moved there and whose device is set to
        the CPU, also when it was None (unset).

        Returns:
            This tensordict, or a new one.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.device is None, td.cpu().device
            (True, device(type='cpu'))
        """
        return self.to("cpu")

    def cuda(self, device=None):
        """Returns the tensordict on a CUDA device.

        This is ``self.to(torch.device(device))``, with ``"cuda"`` (the current CUDA device) when
        ``device`` is None: a new tensordict whose leaves are moved there, unless the
        tensordict is already on that device.

        Args:
            device (int, str or torch.device, optional): the CUDA device. Defaults to None.

        Returns:
            This tensordict, or a new one.

        Raises:
            AssertionError: from torch, if it was built without CUDA.
            RuntimeError: if no CUDA device is available, or ``device`` names no valid device.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.cuda().device.type if torch.cuda.is_available() else "cuda"
            'cuda'
        """
        return self.to(torch.device("cuda" if device is None else device))

    def long(self):
        """Returns the tensordict with every tensor leaf cast to ``torch.int64``.

        Integer, boolean and floating-point leaves are all cast; non-tensor entries are kept.
        It is ``self.to(torch.int64)``: always a new tensordict, whose leaves that already
        have this dtype are shared rather than copied.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> td = TensorDict({"a": torch.tensor([1.5, -2.5])}, [2])
            >>> td.long()["a"]
            tensor([ 1, -2])
        """
        return self.to(torch.int64)

    def clone(self, recurse: bool = True, **kwargs):
        """Returns a copy of the tensordict; with ``recurse=False`` the copy shares the tensors.

        With ``recurse=True`` every tensor leaf, nested ones included, is cloned into new
        memory. With ``recurse=False`` only the top level is copied: the copy holds the same
        tensors and the same sub-tensordict objects, so adding or removing a key at its top
        level leaves this tensordict alone, but in-place writes and changes made inside a
        sub-tensordict show in both. The copy is unlocked and keeps the batch size, names and
        device (the shared sub-tensordicts of ``recurse=False`` keep their own lock).

        Args:
            recurse (bool, optional): clone the tensors too. Defaults to True.
            **kwargs: accepted and ignored.

        Returns:
            The new tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2)}, [2])
            >>> td.clone()["a"].data_ptr() != td["a"].data_ptr()
            True
            >>> td.clone(recurse=False)["a"] is td["a"]
            True
        """
        if not recurse:
            return self._shallow_copy()
        return self._fast_apply(torch.Tensor.clone)

    def contiguous(self):
        """Returns a tensordict whose tensor leaves are contiguous in memory.

        Each leaf goes through ``Tensor.contiguous``: the leaves that are already contiguous
        are shared, the others copied. The result is always a new tensordict, with the same
        keys, batch size, names and device; non-tensor entries are kept.

        Returns:
            A new tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3]).permute(1, 0)
            >>> td["a"].is_contiguous(), td.contiguous()["a"].is_contiguous()
            (False, True)
        """
        return self._fast_apply(torch.Tensor.contiguous)

    def detach(self):
        """Returns a tensordict whose tensor leaves are detached from the autograd graph.

        Each leaf goes through ``Tensor.detach``: the new leaves share memory with the old ones
        but no longer require gradients. Non-tensor entries are kept.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, requires_grad=True)}, [2])
            >>> td.detach()["a"].requires_grad
            False
        """
        return self._fast_apply(torch.Tensor.detach)

    def detach_(self):
        """Detaches every tensor leaf from the autograd graph in place and returns the tensordict.

        Each leaf, nested ones included, goes through ``Tensor.detach_``; non-tensor entries
        are skipped, and a locked tensordict accepts it too.

        Returns:
            This tensordict.

        Raises:
            RuntimeError: if a leaf is a view (of an indexed tensordict, for instance) that
                autograd tracks, which torch cannot detach in place; the leaves before it are
                already detached.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, requires_grad=True) * 2}, [2])
            >>> td.detach_()["a"].requires_grad
            False
        """
        for leaf in self.values(True, True):
            if isinstance(leaf, torch.Tensor):
                leaf.detach_()
        return self

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

    def copy_(self, tensordict, non_blocking: bool = False):
        """Copies the entries of ``tensordict`` into the matching entries of this one, in place, and returns it.

        This is :meth:`update_`: each entry of the source, nested ones included, is written
        into the existing entry at the same key, which keeps its own tensor, dtype and device.
        Entries that the source lacks are left unchanged. No entry is rebound, so a locked
        tensordict accepts it too.

        Args:
            tensordict (TensorDictBase or dict): the source.
            non_blocking (bool, optional): accepted and ignored. Defaults to False.

        Returns:
            This tensordict.

        Raises:
            KeyError: if an entry of the source does not exist here; the entries before it are
                already copied.
            BatchSizeError: if a source tensor does not broadcast to the shape of its entry.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2)}, [2])
            >>> td.copy_({"a": torch.ones(2)})["a"]
            tensor([1., 1.])
        """
        return self.update_(tensordict)

    def empty(self, recurse: bool = False, *, batch_size=None, device=None, names=None):
        """Returns a tensordict without leaves, of the same batch size (keeping sub-tensordicts, emptied, with ``recurse``).

        With ``recurse=False`` the result has no entries at all, and the batch size
        ``batch_size`` (this one by default). With ``recurse=True`` it keeps the structure:
        each sub-tensordict becomes an empty one of its own batch size, non-tensor entries
        are dropped, and the result has this batch size (``batch_size`` is ignored). The result
        is unlocked, has this device, and keeps the dim names when its batch size is this one;
        the ``device`` and ``names`` keywords are accepted but have no effect.

        Args:
            recurse (bool, optional): keep the sub-tensordicts, emptied. Defaults to False.

        Keyword Args:
            batch_size (sequence of int, optional): the batch size of the result, with
                ``recurse=False``. Defaults to None, this batch size.
            device (optional): ignored.
            names (optional): ignored.

        Returns:
            A new tensordict.

        Raises:
            TypeError: if ``batch_size`` is not a sequence of ints.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
            >>> td.empty().sorted_keys, td.empty(recurse=True).sorted_keys
            ([], ['b'])
            >>> td.empty(batch_size=[]).batch_size
            torch.Size([])
        """
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
        """Returns a tensordict of zeros with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_zeros(size + feature_shape)``, so it keeps its dtype
        and device unless ``kwargs`` say otherwise; sub-tensordicts get the new batch size
        followed by their own extra batch dims, and non-tensor entries keep their value with
        the new batch size. The result has no dim names and keeps this :attr:`device`, even
        when ``device=`` moves the leaves.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.
            **kwargs: passed on to ``Tensor.new_zeros`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.ones(2, 3)}, [2])
            >>> zeros = td.new_zeros(4)
            >>> zeros["a"].shape, zeros["a"].sum().item()
            (torch.Size([4, 3]), 0.0)
        """
        return self._new_factory(torch.Tensor.new_zeros, size, kwargs)

    def new_ones(self, *size, **kwargs):
        """Returns a tensordict of ones with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_ones(size + feature_shape)``, so it keeps its dtype
        and device unless ``kwargs`` say otherwise; sub-tensordicts get the new batch size
        followed by their own extra batch dims, and non-tensor entries keep their value with
        the new batch size. The result has no dim names and keeps this :attr:`device`, even
        when ``device=`` moves the leaves.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.
            **kwargs: passed on to ``Tensor.new_ones`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3, dtype=torch.int64)}, [2])
            >>> td.new_ones([1, 2])["a"]
            tensor([[[1, 1, 1],
                     [1, 1, 1]]])
        """
        return self._new_factory(torch.Tensor.new_ones, size, kwargs)

    def new_empty(self, *size, **kwargs):
        """Returns a tensordict of uninitialised tensors with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_empty(size + feature_shape)``, whose values are
        whatever the memory held; it keeps its dtype and device unless ``kwargs`` say
        otherwise. Sub-tensordicts get the new batch size followed by their own extra batch
        dims, and non-tensor entries keep their value with the new batch size. The result has
        no dim names and keeps this :attr:`device`, even when ``device=`` moves the leaves.

        Args:
            *size (int or sequence of int): the new batch size, as ints or as one sequence.
            **kwargs: passed on to ``Tensor.new_empty`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3)}, [2])
            >>> td.new_empty(5)["a"].shape
            torch.Size([5, 3])
        """
        return self._new_factory(torch.Tensor.new_empty, size, kwargs)

    def new_full(self, size, fill_value, **kwargs):
        """Returns a tensordict filled with ``fill_value``, with batch size ``size`` and the keys, dtypes and feature shapes of this one.

        Each tensor leaf becomes ``leaf.new_full(size + feature_shape, fill_value)``, so it
        keeps its dtype and device unless ``kwargs`` say otherwise; sub-tensordicts get the
        new batch size followed by their own extra batch dims, and non-tensor entries keep
        their value with the new batch size. The result has no dim names and keeps this
        :attr:`device`, even when ``device=`` moves the leaves.

        Args:
            size (int or sequence of int): the new batch size.
            fill_value (number): the value of every element, cast to each leaf's dtype.
            **kwargs: passed on to ``Tensor.new_full`` for every leaf: ``dtype``, ``device``,
                ``requires_grad``...

        Returns:
            A new tensordict.

        Raises:
            RuntimeError: if a size is negative.
            TypeError: if a size is not an int.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, dtype=torch.int64)}, [2])
            >>> td.new_full([3], 7)["a"]
            tensor([7, 7, 7])
        """
        return self._new_factory(
            lambda x, s, **kw: x.new_full(s, fill_value, **kw), (size,), kwargs
        )


# The generated methods carry their class's qualified name, so that they pickle by
# reference like written ones (``td.map(TensorDict.exp)`` sends ``exp`` to the workers).
for _name, _method in vars(PointwiseMixin).items():
    if callable(_method) and "<locals>" in getattr(_method, "__qualname__", ""):
        _method.__qualname__ = f"PointwiseMixin.{_name}"
del _name, _method
