"""Writes ``tensordict/_ops/_generated.py``: the methods made from tables, spelled out one by one.

Elementwise math (``cos``, ``cos_``, ``add``, ``add_``, ...), predicates (``isnan``, ...),
pairwise operations (``mod``, ``rsub``, ...), reductions (``sum``, ``max``, ...) and casts
(``float32``, ``qint8``, ...) differ only by a name, a torch function and the example of
their docstring. This script holds those tables and the docstring templates, and writes
each method as a short ``def`` with its full docstring, so that grep, IDEs and ``help()``
find every one. The hand-written mixins that subclass the generated ones
(``MathMixin`` in ``tensordict/_ops/math.py``, ``DeviceMixin`` in ``device.py``) define
the primitives the generated methods call.

The output is checked in. After changing a table or a template, run ``make generate``
(``python scripts/generate_ops.py``); ``python scripts/generate_ops.py --check`` exits
with status 1 when the checked-in file differs, which ``tests/test_generated_ops.py``
runs in ``make test``. The script imports neither torch nor tensordict: the tables say
everything, and the tests check them against torch.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "tensordict" / "_ops" / "_generated"

# ====================================================================== tables
# ------------------------------------------------------------ elementwise math (ElementwiseOps)
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

# The binary names whose in-place form ``torch.Tensor`` lacks: ``maximum_`` and ``minimum_``
# always raise AttributeError, and their docstrings say so.
_NO_INPLACE = frozenset({"maximum", "minimum"})

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

# ------------------------------------------------------------ reductions (ReductionOps)
_REDUCTIONS = (
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
)

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
_INDICES = "With an int ``dim`` and ``return_indices`` (the default), the result is a ``torch.return_types.{}`` pair of tensordicts, ``.values`` and ``.indices`` (the positions along ``dim``; an unbatched entry is kept among the values and has no indices); with a tuple of dims or ``return_indices=False``, only the values, computed like :meth:`{}`."
# name: what sets the method apart, after the paragraph common to every reduction
_REDUCTION_NOTES = {
    "mean": _NAN_MEAN,
    "nanmean": _NAN_MEAN,
    "prod": f"{_PER_DIM}.",
    "std": _SAMPLE,
    "var": _SAMPLE,
    "max": _INDICES.format("max", "amax"),
    "min": _INDICES.format("min", "amin"),
    "median": f"Of an even count of values it takes the lower middle one, and it returns no indices. {_PER_DIM}, which gives a median of medians, not the median of all the elements.",
}  # fmt: skip


# ------------------------------------------------------------ predicates (ElementwiseOps)
# name: (what it tests, example input, example output)
_PREDICATES = {
    "isnan": ("is NaN", '[1.0, float("nan")]', "tensor([False,  True])"),
    "isfinite": ("is finite (neither infinite nor NaN)", '[1.0, float("inf")]', "tensor([ True, False])"),
    "isposinf": ("is positive infinity", '[float("inf"), float("-inf")]', "tensor([ True, False])"),
    "isneginf": ("is negative infinity", '[float("inf"), float("-inf")]', "tensor([False,  True])"),
    "isreal": ("is real (a zero imaginary part; always for real dtypes)", "[1.0, 2.0]", "tensor([True, True])"),
}  # fmt: skip

# ------------------------------------------------------------ casts (CastOps)
# name: the torch dtype it casts to
_CASTS = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "bfloat16": "bfloat16",
    "int": "int32",
    "bool": "bool",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "complex32": "complex32",
    "complex64": "complex64",
    "complex128": "complex128",
}

# The quantized dtypes: torch has no plain cast to them (a quantized tensor needs a
# scale and a zero point), so these methods explain what to call instead.
_QUANTIZED = ("qint8", "qint32", "quint8", "quint4x2")

# ------------------------------------------------------------ pairwise operations (ElementwiseOps)
# name: (the torch function, what it computes, takes ``default``, extra keyword or None,
#        example input, example argument, example output)
_PAIRWISE = {
    "mod": ("remainder", "the remainder of the division by ``other``, with its sign (Python's ``%``)", False, None, "[5.0, -1.0]", "3.0", "tensor([2., 2.])"),
    "rsub": ("rsub", "``other - alpha * leaf``", True, "alpha", "[1.0, 4.0]", "10.0", "tensor([9., 6.])"),
    "logical_and": ("logical_and", "the logical and, as booleans", True, None, "[0.0, 2.0]", "torch.tensor(True)", "tensor([False,  True])"),
    "bitwise_and": ("bitwise_and", "the bitwise and of integer or boolean leaves", True, None, "[5, 6]", "3", "tensor([1, 2])"),
}  # fmt: skip


# ====================================================================== docstrings
def _fill(text: str, indent: str = "", hang: str = "") -> str:
    """One paragraph or section entry of a docstring, wrapped at 88 columns."""
    return textwrap.fill(text, width=88, initial_indent=indent, subsequent_indent=indent + hang)


def _section(title: str, *entries) -> str:
    """A docstring section from ``(name, text)`` entries; an entry without text is left out."""
    lines = [_fill(f"{name}: {text}", "    ", "    ") for name, text in entries if text]
    return f"{title}:\n" + "\n".join(lines) + "\n\n" if lines else ""


def _unary_docs(name: str) -> tuple[str, str]:
    """The docstrings of ``name`` and ``name_``."""
    what, data, out, kind = _UNARY_DOCS[name]
    dtype_note, refused, refused_ = _UNARY_RAISES[kind]
    setup = f'    >>> td = TensorDict({{"a": torch.tensor({data})}}, [{data.count(",") + 1}])\n'
    doc = (
        f"Returns a tensordict with ``torch.{name}`` ({what}) applied to every leaf.\n\n"
        + _fill(
            f"Each tensor leaf, nested ones included, is replaced by ``torch.{name}(leaf)`` in "
            "the result; non-tensor entries are kept as they are, and this tensordict is left "
            f"unchanged.{dtype_note}"
        )
        + "\n\nReturns:\n    A new tensordict with the same keys, batch size, names and device,\n"
        "    locked if this one is.\n\n"
        + _section("Raises", ("RuntimeError", refused and refused + "."))
        + f'Examples:\n{setup}    >>> td.{name}()["a"]\n    {out}\n'
    )
    doc_ = (
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
    return doc, doc_


def _binary_docs(name: str) -> tuple[str, str]:
    """The docstrings of ``name`` and ``name_``."""
    what, other_type, extra, data, call, out = _BINARY_DOCS[name]
    hint = dict([extra]) if extra else {}
    needs_tensor = other_type == _TENSOR_ONLY

    def arguments(inplace: bool) -> str:
        return _section(
            "Args",
            (
                f"other ({other_type})",
                "the second operand. "
                + ("" if needs_tensor else "A number or a 0-dim tensor meets every leaf as it is; ")
                + "a tensor with dims is batch-shaped: aligned with the batch dims from the right, "
                "as torch broadcasts shapes, and spread over each leaf's feature dims"
                + (
                    " (it must fit the batch size)"
                    if inplace
                    else " (the result takes the broadcast batch size)"
                )
                + "; a tensordict or tensorclass gives each leaf its own leaf at the same key.",
            ),
            (
                "*args",
                f"passed on to ``torch.{name}`` after ``other``"
                + ("" if inplace else ", each met as ``other`` is")
                + f": {hint.get('args', 'it takes none')}.",
            ),
            (
                "**kwargs",
                f"passed on to ``torch.{name}``: {hint.get('kwargs', 'it takes none')}; and "
                "``default``, for a tensordict ``other`` whose leaf keys differ: None (the default) "
                'raises, ``"intersection"`` keeps the keys they share, and any other value stands in '
                "for the leaves that one side lacks."
                if not inplace
                else f"passed on to ``torch.{name}``: {hint.get('kwargs', 'it takes none')}.",
            ),
        )

    mismatch = (
        "KeyMismatchError",
        "if ``other`` is a tensordict whose leaf keys differ from these (and no ``default``).",
    )
    type_error = (
        "TypeError",
        needs_tensor
        and f"if ``other`` is a number (``torch.{name}`` needs a tensor)"
        + (" or the weight is missing." if name == "lerp" else "."),
    )
    setup = f'    >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])\n'
    doc = (
        f"Returns a tensordict of ``torch.{name}(leaf, other)``, {what}, for every leaf.\n\n"
        "Non-tensor entries are kept as they are, and this tensordict is left unchanged.\n\n"
        + arguments(inplace=False)
        + "Returns:\n    A new tensordict with the same keys, names and device, and the batch size\n"
        "    broadcast with that of a tensor ``other``; locked if this one is.\n\n"
        + _section(
            "Raises",
            mismatch,
            type_error,
            (
                "RuntimeError",
                "if a leaf and its operand do not broadcast, or torch refuses their dtypes; "
                "BatchSizeError if a tensor ``other`` does not broadcast with the batch size.",
            ),
        )
        + f'Examples:\n{setup}    >>> td.{name}({call})["a"]\n    {out}\n'
    )
    if name not in _NO_INPLACE:
        doc_ = (
            f"Applies ``Tensor.{name}_(other)``, {what}, to every leaf in place and returns the "
            "tensordict.\n\n"
            + _fill(
                f"Each tensor leaf, nested ones included, is overwritten with ``torch.{name}(leaf, "
                "other)`` in its own dtype and shape; non-tensor entries are skipped. No entry is "
                "rebound, so a locked tensordict accepts it too."
            )
            + "\n\n"
            + arguments(inplace=True)
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
        doc_ = (
            f"Would write {what} with ``other`` into every leaf in place, but always raises "
            "AttributeError.\n\n"
            + _fill(
                f"``torch.Tensor`` has no ``{name}_`` method, and this method looks it up before "
                f"anything else, so every call fails and changes nothing. ``td.copy_(td.{name}("
                "other))`` writes the same result in place."
            )
            + "\n\n"
            + arguments(inplace=True)
            + "Returns:\n    Nothing, since every call raises; once fixed, this tensordict.\n\n"
            + _section(
                "Raises", ("AttributeError", f"always: ``torch.Tensor`` has no ``{name}_``.")
            )
            + f"Examples:\n{setup}    >>> td.{name}_({call})\n    Traceback (most recent call last):"
            f"\n        ...\n    AttributeError: type object 'Tensor' has no attribute '{name}_'\n"
            f'    >>> td.copy_(td.{name}({call}))["a"]\n    {out}\n'
        )
    return doc, doc_


def _reduction_doc(name: str) -> str:
    what, data, call1, out1, call2, out2 = _REDUCTION_DOCS[name]
    indices = name in ("max", "min")
    summed = name in ("sum", "nansum")
    if name == "logsumexp":
        whole = "Without ``dim`` (or with ``dim=...``), each leaf is reduced over all the batch dims and keeps its feature dims."
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
    return (
        f"Returns ``torch.{name}`` of every leaf over the batch dims ``dim``: {what}.\n\n"
        + _fill(
            "With ``dim``, each tensor leaf is reduced over those batch dims and the result keeps "
            "the other batch dims (and the reduced ones with size 1 if ``keepdim``). "
            f"{whole} Non-tensor entries are kept, and so are unbatched entries (they have no "
            "batch dims to reduce); the result keeps the names of the batch dims that remain."
        )
        + "\n\n"
        + (_fill(_REDUCTION_NOTES[name]) + "\n\n" if name in _REDUCTION_NOTES else "")
        + _section(
            "Args",
            (
                "dim (int, tuple of int, Ellipsis or str, optional)",
                "the batch dims to reduce; negative values count from the last batch dim. "
                + (
                    "Defaults to None, which (like ``...``) reduces every batch dim. "
                    if name == "logsumexp"
                    else "Defaults to None, which (like ``...``) reduces each leaf over all its "
                    "dims. "
                )
                + '``"feature"`` reduces each leaf over its feature dims instead (those after '
                "the batch dims of its own level), keeping the batch size"
                + (", and returns the values only." if indices else "."),
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
                "reduce all the tensor leaves together into one tensor: "
                + ("" if name == "logsumexp" else "without ``dim``, all their elements; ")
                + "with batch dims, the leaves joined along the first of them (they must have "
                'as many dims); with ``"feature"``, all the features of each batch element. '
                "Defaults to None (off).",
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
                )
                + " ``out=`` (a tensordict) receives the result, and is returned: a leaf it"
                " already holds is written in place, a missing one is added"
                + (" (not for the pair of values and indices)." if indices else "."),
            ),
        )
        + "Returns:\n"
        + (
            f"    A ``torch.return_types.{name}`` pair of tensordicts for an int ``dim`` with\n"
            "    ``return_indices``; otherwise a tensordict, or a tensor with ``reduce=True``.\n\n"
            if indices
            else "    A tensordict, or a tensor with ``reduce=True``.\n\n"
        )
        + _section(
            "Raises",
            (
                "DimensionError",
                "if an entry of ``dim`` is out of range for the batch dims (any ``dim`` when "
                "there are no batch dims).",
            ),
            (
                "InvalidArgumentError",
                indices and "if ``out`` is given for the pair of values and indices.",
            ),
            (
                "RuntimeError",
                (floats_only + " " if floats_only else "")
                + "With ``reduce=True`` and batch dims, if the leaves do not join"
                + (", or if there is no tensor leaf." if summed else "."),
            ),
            ("ValueError", not summed and name != "logsumexp" and empty),
        )
        + f"Examples:\n{setup}    >>> td.{name}{call1}\n    {out1}\n"
        + f"    >>> td.{name}{call2}\n    {out2}\n"
    )


def _predicate_doc(name: str) -> str:
    what, data, out = _PREDICATES[name]
    return f"""Returns a tensordict of boolean leaves telling where each element {what}.

        Each tensor leaf, nested ones included, is replaced by ``torch.{name}(leaf)``;
        non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Returns:
            A new tensordict with the same keys, batch size, names and device, with boolean
            leaves; locked if this one is.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])
            >>> td.{name}()["a"]
            {out}
        """


def _cast_doc(name: str, dtype: str) -> str:
    return f"""Returns the tensordict with its tensor leaves cast to ``{dtype}``.

        Non-tensor entries are kept. Leaves that already have this dtype are shared with
        this tensordict rather than copied; this tensordict is left unchanged.

        Keyword Args:
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)`` with the
                leaf's full key as a tuple; a leaf is cast only where it returns True, the
                others are kept. Defaults to None: every leaf is cast.

        Returns:
            A new tensordict with the same keys, batch size, names and device.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([1, 2])}}, [2])
            >>> td.{name}()["a"].dtype
            {dtype}
            >>> td.{name}(cast_filter=lambda key, leaf: key == ("b",))["a"].dtype
            torch.float32
        """


def _quantized_doc(name: str, dtype: str) -> str:
    return f"""Refuses to cast the tensor leaves to ``{dtype}``, saying what to call instead.

        A quantized tensor needs a scale and a zero point, which a cast cannot give, so
        torch (and so the well-known API) fails here; this method exists so that code
        calling it gets that explanation. Quantize with ``torch.quantize_per_tensor``
        through :meth:`apply`. A tensordict without leaves to cast is returned as a copy.

        Keyword Args:
            cast_filter (callable, optional): called as ``cast_filter(key, leaf)``; only the
                leaves where it returns True would be cast. Defaults to None: every leaf.

        Returns:
            A copy of the tensordict, when no leaf is to be cast.

        Raises:
            RuntimeError: naming the first leaf to cast.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor([1.0, 2.0])}}, [2])
            >>> td.{name}()
            Traceback (most recent call last):
            ...
            RuntimeError: {name}(): cannot cast the leaf 'a' to {dtype}: ...
            >>> q = td.apply(lambda x: torch.quantize_per_tensor(x, 0.1, 0, {dtype}))
            >>> q["a"].dtype
            {dtype}
        """


def _pairwise_doc(name: str) -> str:
    fn_name, what, takes_default, extra, data, arg, out = _PAIRWISE[name]
    default_doc = (
        """
            default (str or number, optional): with a tensordict ``other`` whose leaf keys
                differ: None (the default) raises, ``"intersection"`` keeps the keys they
                share, and any other value stands in for the leaves that one side lacks."""
        if takes_default
        else ""
    )
    alpha_doc = (
        """
            alpha (number, optional): the multiplier of the leaf. Defaults to None (1)."""
        if extra
        else ""
    )
    keywords = f"\n        Keyword Args:{alpha_doc}{default_doc}\n" if takes_default else ""
    return f"""Returns a tensordict of ``torch.{fn_name}(leaf, other)``: {what}.

        Non-tensor entries are kept as they are, and this tensordict is left unchanged.

        Args:
            other (number, torch.Tensor or TensorDictBase): the second operand, combined with
                every leaf by torch's broadcasting rules; a tensordict or tensorclass gives
                each leaf its own leaf at the same key.
{keywords}
        Returns:
            A new tensordict with the same keys (or the shared ones), batch size and device.

        Raises:
            KeyMismatchError: if ``other`` is a tensordict with other leaf keys and no
                ``default`` (a ``KeyError``).
            TypeError: if torch refuses the operand (``logical_and`` takes no number).
            RuntimeError: if a leaf and its operand do not broadcast, or torch refuses their
                dtypes.

        Examples:
            >>> td = TensorDict({{"a": torch.tensor({data})}}, [2])
            >>> td.{name}({arg})["a"]
            {out}
        """


# ====================================================================== code
_WARNING = """\
# This file was generated by scripts/generate_ops.py from its tables. Do not edit manually:
# change the script and run `make generate` (tests/test_generated_ops.py checks they agree).
"""

_PACKAGE = '''\
"""The methods made from tables (``scripts/generate_ops.py``), spelled out, and what they need.

One module per mixin: :mod:`.elementwise` (new tensordicts of elementwise math, predicates
and pairwise operations), :mod:`.inplace` (the same math written into the leaves),
:mod:`.reductions` and :mod:`.casts`. Each mixin opens by declaring the primitives its
methods call, raising NotImplementedError; the hand-written mixin that subclasses it
(``MathMixin`` or ``DeviceMixin``) defines them, so the method resolution order always
puts the definition first. The two that other mixins define, ``_fast_apply`` and
``_stored_tensors``, are declared by :class:`~tensordict._ops._contract.Contract`, the
common base of every mixin, which the method resolution order puts after all of them.
"""

from __future__ import annotations

PRIMITIVES = (
    "_fast_apply",
    "_stored_tensors",
    "_pointwise",
    "_leafwise",
    "_pairwise",
    "_write_each_leaf",
    "_reduce",
    "type",
    "_refuse_quantized",
)
"""The names the generated mixins call: every tensordict class must define each of them."""
'''

_ELEMENTWISE = '''\
"""Elementwise math, predicates and pairwise operations, each into a new tensordict."""

from __future__ import annotations

from typing import Any

import torch

from tensordict._collection import TensorCollection
from tensordict._ops._contract import Contract
from tensordict._typing import T


class ElementwiseOps(Contract):
    """The out-of-place methods made from tables; ``MathMixin`` defines the primitives."""

    __slots__ = ()

    def _pointwise(self, fn):
        """``fn(leaf)`` for every leaf, into a new tensordict (locked if this one is)."""
        raise NotImplementedError

    def _leafwise(self, fn, other, args: tuple, kwargs: dict, name: str):
        """``fn(leaf, operand, *args, **kwargs)`` for every leaf, into a new tensordict."""
        raise NotImplementedError

    def _pairwise(self, fn, other, name: str, default=None):
        """``fn(leaf, operand)`` for every leaf; ``default`` says what to do with unshared keys."""
        raise NotImplementedError
'''

_INPLACE = '''\
"""Elementwise math written into the leaves in place."""

from __future__ import annotations

from typing import Any

import torch

from tensordict._collection import TensorCollection
from tensordict._ops._contract import Contract
from tensordict._typing import T


class InplaceOps(Contract):
    """The in-place methods made from tables; ``MathMixin`` defines the primitive.

    Calls: ``_stored_tensors``.
    """

    __slots__ = ()

    def _write_each_leaf(self, fn, other, name: str):
        """Calls the in-place ``fn(leaf, operand)`` on every stored tensor; returns ``self``."""
        raise NotImplementedError
'''

_REDUCTIONS_MODULE = '''\
"""Reductions of every leaf over batch dims."""

from __future__ import annotations

from types import EllipsisType
from typing import Any

import torch

from tensordict._ops._contract import Contract
from tensordict._typing import T


class ReductionOps(Contract):
    """The reductions made from a table; ``MathMixin`` defines the primitive."""

    __slots__ = ()

    def _reduce(self, name: str, dim, keepdim: bool, reduce, return_indices: bool, kwargs: dict):
        """``torch.<name>`` of every leaf over the batch dims ``dim`` (see ``sum``)."""
        raise NotImplementedError
'''

_CASTS_MODULE = '''\
"""Casts of every tensor leaf to one dtype."""

from __future__ import annotations

from collections.abc import Callable

import torch

from tensordict._ops._contract import Contract
from tensordict._typing import T


class CastOps(Contract):
    """The casts made from a table; ``DeviceMixin`` defines the primitives."""

    __slots__ = ()

    def type(self: T, dst_type: torch.dtype | str, *, cast_filter: Callable | None = None) -> T:
        """The tensordict with its tensor leaves cast by ``Tensor.type(dst_type)``."""
        raise NotImplementedError

    def _refuse_quantized(self, name: str, dtype, cast_filter: Callable | None):
        """Raises naming the first leaf that ``cast_filter`` selects (a copy when none is)."""
        raise NotImplementedError
'''

_INDENT = "        "


def _docstring(text: str) -> str:
    """``text`` as the docstring of a method, which ``inspect.getdoc`` gives back unchanged."""
    lines = inspect.cleandoc(text).splitlines()
    for line in lines:
        if '"""' in line or "\\" in line or line != line.rstrip():
            msg = f"a docstring line cannot be written as it is: {line!r}"
            raise ValueError(msg)
    body = [lines[0]] + [_INDENT + line if line else "" for line in lines[1:]]
    return f'{_INDENT}"""' + "\n".join(body) + f'\n{_INDENT}"""\n'


def _signature(name: str, params: list[str], returns: str) -> str:
    """``name(params) -> returns`` laid out as ruff formats a method: one line when it fits."""
    flat = f"{name}({', '.join(params)}) -> {returns}"
    if len(f"    def {flat}:") <= 100:
        return flat
    inner = f"{_INDENT}{', '.join(params)}"
    if len(inner) <= 100:
        return f"{name}(\n{inner}\n    ) -> {returns}"
    return f"{name}(\n" + "".join(f"{_INDENT}{p},\n" for p in params) + f"    ) -> {returns}"


def _method(signature: str, doc: str, *body: str) -> str:
    return f"\n    def {signature}:\n" + _docstring(doc) + "".join(_INDENT + b + "\n" for b in body)


def _comment(text: str) -> str:
    return f"\n    # {'-' * (90 - len(text))} {text}"


# The annotations of the operands: a binary method's ``other`` as its docstring says.
_OPERAND = "TensorCollection | torch.Tensor | float"
_OPERAND_TYPES = {_NUMBER_OR_TENSOR: _OPERAND, _TENSOR_ONLY: "TensorCollection | torch.Tensor"}
_DEFAULT = "default: str | float | None = None"
_CAST_PARAMS = ["self: T", "*", "cast_filter: Callable | None = None"]


def _binary_params(name: str) -> list[str]:
    other = _OPERAND_TYPES[_BINARY_DOCS[name][1]]
    return ["self: T", f"other: {other}", "*args: Any", "**kwargs: Any"]


def _elementwise() -> str:
    out = [_comment("unary")]
    for name in _UNARY:
        doc = _unary_docs(name)[0]
        out.append(
            _method(
                _signature(name, ["self: T"], "T"), doc, f"return self._pointwise(torch.{name})"
            )
        )
    out.append(_comment("binary"))
    for name in _BINARY:
        out.append(
            _method(
                _signature(name, _binary_params(name), "T"),
                _binary_docs(name)[0],
                f'return self._leafwise(torch.{name}, other, args, kwargs, "{name}")',
            )
        )
    out.append(_comment("predicates"))
    for name in _PREDICATES:
        out.append(
            _method(
                _signature(name, ["self: T"], "T"),
                _predicate_doc(name),
                f"return self._pointwise(torch.{name})",
            )
        )
    out.append(_comment("pairwise operations"))
    for name, (fn_name, _what, takes_default, extra, *_example) in _PAIRWISE.items():
        doc = _pairwise_doc(name)
        if extra == "alpha":
            out.append(
                _method(
                    _signature(
                        name,
                        [
                            "self: T",
                            f"other: {_OPERAND}",
                            "*",
                            "alpha: float | None = None",
                            _DEFAULT,
                        ],
                        "T",
                    ),
                    doc,
                    'kwargs = {} if alpha is None else {"alpha": alpha}',
                    f"return self._pairwise(lambda x, y: torch.{fn_name}(x, y, **kwargs), other, "
                    f'"{name}", default)',
                )
            )
        elif takes_default:
            out.append(
                _method(
                    _signature(name, ["self: T", f"other: {_OPERAND}", "*", _DEFAULT], "T"),
                    doc,
                    f'return self._pairwise(torch.{fn_name}, other, "{name}", default)',
                )
            )
        else:
            out.append(
                _method(
                    _signature(name, ["self: T", f"other: {_OPERAND}"], "T"),
                    doc,
                    f'return self._pairwise(torch.{fn_name}, other, "{name}")',
                )
            )
    return _ELEMENTWISE + "".join(out)


def _inplace() -> str:
    out = [_comment("unary")]
    for name in _UNARY:
        out.append(
            _method(
                _signature(f"{name}_", ["self: T"], "T"),
                _unary_docs(name)[1],
                f"fn = torch.Tensor.{name}_",
                "for leaf in self._stored_tensors():",
                "    fn(leaf)",
                "return self",
            )
        )
    out.append(_comment("binary"))
    for name in _BINARY:
        out.append(
            _method(
                _signature(f"{name}_", _binary_params(name), "T"),
                _binary_docs(name)[1],
                f"fn = torch.Tensor.{name}_  # looked up first: a missing method fails before anything",
                f'return self._write_each_leaf(lambda x, y: fn(x, y, *args, **kwargs), other, "{name}")',
            )
        )
    return _INPLACE + "".join(out)


_REDUCTION_PARAMS = [
    "self: T",
    "dim: int | tuple[int, ...] | EllipsisType | None = None",
    "keepdim: bool = False",
    "*",
    "reduce: bool | None = None",
    "return_indices: bool = True",
    "**kwargs: Any",
]


def _reductions() -> str:
    out = [
        _method(
            _signature(
                name,
                _REDUCTION_PARAMS,
                # max and min give a ValuesIndices, the tuple subclass of _ops/math.py (above)
                "T | torch.Tensor | tuple[T, T]" if name in ("max", "min") else "T | torch.Tensor",
            ),
            _reduction_doc(name),
            f'return self._reduce("{name}", dim, keepdim, reduce, return_indices, kwargs)',
        )
        for name in _REDUCTIONS
    ]
    return _REDUCTIONS_MODULE + "".join(out)


def _casts() -> str:
    out = [
        _method(
            _signature(name, _CAST_PARAMS, "T"),
            _cast_doc(name, f"torch.{dtype}"),
            f"return self.type(torch.{dtype}, cast_filter=cast_filter)",
        )
        for name, dtype in _CASTS.items()
    ]
    out.append(_comment("quantized dtypes: refused, saying what to call"))
    out.extend(
        _method(
            _signature(name, _CAST_PARAMS, "T"),
            _quantized_doc(name, f"torch.{name}"),
            f'return self._refuse_quantized("{name}", torch.{name}, cast_filter)',
        )
        for name in _QUANTIZED
    )
    return _CASTS_MODULE + "".join(out)


def render() -> dict[str, str]:
    """The generated modules: file name -> text."""
    modules = {
        "__init__.py": _PACKAGE,
        "elementwise.py": _elementwise(),
        "inplace.py": _inplace(),
        "reductions.py": _reductions(),
        "casts.py": _casts(),
    }
    return {name: _WARNING + text for name, text in modules.items()}


def stale(folder: Path = TARGET) -> list[str]:
    """The files of ``folder`` that differ from the script's output, or that it does not write."""
    wanted = render()
    found = {path.name for path in folder.glob("*.py")} if folder.is_dir() else set()
    names = sorted(found | set(wanted))
    return [
        name
        for name in names
        if name not in wanted or name not in found or (folder / name).read_text() != wanted[name]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit with status 1 if a file is not up to date"
    )
    args = parser.parse_args(argv)
    if args.check:
        differing = stale()
        if differing:
            print(f"out of date in {TARGET}: {differing}; run `make generate`", file=sys.stderr)
            return 1
        return 0
    TARGET.mkdir(exist_ok=True)
    for path in TARGET.glob("*.py"):
        path.unlink()  # a module the tables no longer make must not linger
    for name, text in render().items():
        (TARGET / name).write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
