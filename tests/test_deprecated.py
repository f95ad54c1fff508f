"""The former helpers that ``tensordict.utils`` and ``tensordict.tensordict`` still serve, with a warning."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

UTILS_NAMES = (
    "KeyDependentDefaultDict",
    "NESTED_TENSOR_ERR",
    "NUMPY_TO_TORCH_DTYPE_DICT",
    "TORCH_TO_NUMPY_DTYPE_DICT",
    "convert_ellipsis_to_idx",
    "implement_for",
    "infer_size_impl",
    "int_generator",
    "is_namedtuple",
    "is_namedtuple_class",
    "is_nested_key",
    "is_seq_of_nested_key",
    "prod",
    "strtobool",
    "unravel_keys",
)
TENSORDICT_NAMES = (
    "convert_ellipsis_to_idx",
    "implement_for",
    "infer_size_impl",
    "int_generator",
    "is_nested_key",
    "is_seq_of_nested_key",
)


def _get(module: str, name: str):
    with pytest.warns(DeprecationWarning, match=name):
        return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(
    ("module", "name"),
    [("tensordict.utils", n) for n in UTILS_NAMES]
    + [("tensordict.tensordict", n) for n in TENSORDICT_NAMES],
)
def test_each_deprecated_name_warns_and_says_when_it_goes(module, name):
    """Reading a deprecated name warns with DeprecationWarning naming it and the removal release."""
    with pytest.warns(DeprecationWarning) as record:
        value = getattr(importlib.import_module(module), name)
    assert value is not None
    message = str(record[0].message)
    assert f"{module}.{name}" in message and "0.17" in message


def test_from_import_of_a_deprecated_name_works():
    """``from tensordict.utils import convert_ellipsis_to_idx`` imports it (with the warning)."""
    with pytest.warns(DeprecationWarning):
        from tensordict.utils import convert_ellipsis_to_idx
    assert convert_ellipsis_to_idx(..., [2]) == (slice(None),)


def test_an_unknown_name_is_still_an_attribute_error():
    """A name that never existed raises AttributeError naming the module and the name."""
    import tensordict.utils

    with pytest.raises(AttributeError, match="tensordict.utils.*no_such_helper"):
        tensordict.utils.no_such_helper  # noqa: B018


def test_buffer_is_torch_buffer_without_warning(recwarn):
    """``tensordict.utils.Buffer`` is torch's ``nn.Buffer``, public, with no warning."""
    from tensordict.utils import Buffer

    assert Buffer is torch.nn.Buffer
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (..., (slice(None),) * 4),
        ((0, ..., 0), (0, slice(None), slice(None), 0)),
        ((None, ..., 1), (None, slice(None), slice(None), slice(None), 1)),
        ((..., None), (slice(None),) * 4 + (None,)),
        ((0, 1), (0, 1)),
        (3, 3),
    ],
)
def test_convert_ellipsis_fills_the_missing_dims(index, expected):
    """The ellipsis becomes one full slice per dim that the rest of the index leaves open."""
    convert = _get("tensordict.utils", "convert_ellipsis_to_idx")
    assert convert(index, [2, 3, 4, 5]) == expected


def test_convert_ellipsis_counts_a_mask_as_its_dims():
    """A boolean mask takes as many dims as it has, so fewer slices fill the rest."""
    convert = _get("tensordict.utils", "convert_ellipsis_to_idx")
    mask = torch.ones(2, 3, dtype=torch.bool)
    out = convert((mask, ...), [2, 3, 4, 5])
    assert out[0] is mask and out[1:] == (slice(None), slice(None))


def test_convert_ellipsis_refuses_two_ellipses():
    """Two ellipses in one index raise RuntimeError quoting the index."""
    convert = _get("tensordict.utils", "convert_ellipsis_to_idx")
    with pytest.raises(RuntimeError, match="one ellipsis"):
        convert((..., 0, ...), [2, 3, 4])


@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    data=st.data(),
)
def test_convert_ellipsis_indexes_like_the_ellipsis(shape, data):
    """Indexing a tensor with the converted index gives what the ellipsis index gives."""
    convert = _get("tensordict.utils", "convert_ellipsis_to_idx")
    tensor = torch.arange(math.prod(shape)).reshape(shape)
    before = data.draw(st.integers(0, len(shape)))
    after = data.draw(st.integers(0, len(shape) - before))

    def part(size):
        return data.draw(st.one_of(st.integers(-size, size - 1), st.just(slice(None))))

    head = tuple(part(size) for size in shape[:before])
    tail = tuple(part(size) for size in shape[len(shape) - after :])
    index = head + (...,) + tail
    converted = convert(index, shape)
    assert Ellipsis not in converted
    assert torch.equal(tensor[index], tensor[converted])


def test_small_helpers_answer_as_before():
    """The small helpers keep their meanings: keys, namedtuples, truth values, sizes."""
    import collections

    utils = importlib.import_module("tensordict.utils")
    with pytest.warns(DeprecationWarning):
        assert utils.is_nested_key(("a", "b")) and not utils.is_nested_key(())
        assert utils.is_seq_of_nested_key([]) and not utils.is_seq_of_nested_key(3)
        pair = collections.namedtuple("Pair", "x y")
        assert utils.is_namedtuple(pair(1, 2)) and utils.is_namedtuple_class(pair)
        assert utils.strtobool("On") is True and utils.strtobool("0") is False
        assert utils.unravel_keys("a", ("b", ("c",))) == ("a", ("b", "c"))
        assert utils.prod([2, 3, 4]) == 24
        assert utils.infer_size_impl([2, -1], 8) == [2, 4]
        assert utils.int_generator(10) == utils.int_generator(10)
        assert utils.NUMPY_TO_TORCH_DTYPE_DICT[np.dtype("float32")] is torch.float32
        assert utils.TORCH_TO_NUMPY_DTYPE_DICT[torch.int64] == np.dtype("int64")
        made = utils.KeyDependentDefaultDict(lambda key: key * 2)
    assert made["ab"] == "abab" and "ab" in made


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda u: u.strtobool("maybe"), "invalid truth value 'maybe'"),
        (lambda u: u.infer_size_impl([-1, -1], 4), "only one dimension"),
        (lambda u: u.infer_size_impl([3, -1], 4), r"invalid shape \[3, -1\]"),
        (lambda u: u.infer_size_impl([-2], 4), "non-negative"),
    ],
)
def test_small_helpers_refuse_bad_input_by_name(call, match):
    """Bad input raises the builtin the reference raises, quoting the value."""
    utils = importlib.import_module("tensordict.utils")
    error = ValueError if "truth" in match else RuntimeError
    with pytest.warns(DeprecationWarning), pytest.raises(error, match=match):
        call(utils)
