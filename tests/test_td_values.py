"""Values of a tensordict: apply, casts, copies, arithmetic, comparisons, reductions, interop."""

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree

from tensordict import TensorDict, lazy_stack

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def make_td():
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "b": {"c": torch.arange(2)}},
        batch_size=[2],
    )


def make_float_td():
    return TensorDict(
        {"a": torch.rand(2, 3) + 0.5, "b": {"c": torch.rand(2) + 0.5}},
        batch_size=[2],
    )


# --- apply / apply_ / named_apply ------------------------------------------------


def test_apply_maps_every_leaf():
    """apply returns a new tensordict with fn applied to every leaf."""
    td = make_td()
    out = td.apply(lambda x: x + 1)
    assert out is not td
    assert out["b", "c"].tolist() == [1, 2]
    assert out["a"][0].tolist() == [1.0, 2.0, 3.0]
    assert out["b"].batch_size == torch.Size([2])
    assert td["b", "c"].tolist() == [0, 1]


def test_apply_batch_size():
    """apply(batch_size=...) sets the batch size of the result."""
    td = make_td()
    out = td.apply(lambda x: x[0], batch_size=[])
    assert out.batch_size == torch.Size([])
    assert out["a"].tolist() == [0.0, 1.0, 2.0]


def test_apply_none_drops_entry():
    """A leaf for which fn returns None is left out of the result."""
    out = make_td().apply(lambda x: None if x.dtype == torch.int64 else x)
    assert list(out.keys(True, True)) == ["a"]


def test_apply_with_other_tensordict():
    """apply(fn, other) calls fn with the matching leaves of both."""
    td = make_td()
    assert td.apply(lambda x, y: x + y, td)["b", "c"].tolist() == [0, 2]


def test_apply_other_missing_key():
    """A key missing from other is a KeyError naming it, unless a default is given."""
    td = make_td()
    with pytest.raises(KeyError, match="a"):
        td.apply(lambda x, y: x + y, td.exclude("a"))
    out = td.apply(lambda x, y: x + y, td.exclude("a"), default=100)
    assert out["a"][0].tolist() == [100.0, 101.0, 102.0]


def test_apply__in_place():
    """apply_ writes fn's result into the existing tensors and returns self."""
    td = make_td()
    a = td["a"]
    assert td.apply_(lambda x: x * 2) is td
    assert td["a"] is a
    assert a[0].tolist() == [0.0, 2.0, 4.0]
    assert td["b", "c"].tolist() == [0, 2]


def test_named_apply_nested_keys():
    """named_apply passes the full nested key with nested_keys=True, else the last part."""
    seen_nested, seen_flat = [], []
    td = make_td()
    td.named_apply(lambda k, x: seen_nested.append(k) or x, nested_keys=True)
    td.named_apply(lambda k, x: seen_flat.append(k) or x, nested_keys=False)
    assert sorted(map(str, seen_nested)) == sorted(map(str, ["a", ("b", "c")]))
    assert sorted(seen_flat) == ["a", "c"]


def test_named_apply_uses_key():
    """named_apply's result depends on the key, and None drops the entry."""
    td = make_td()
    out = td.named_apply(lambda k, x: x * 0 if k == "c" else x)
    assert out["b", "c"].tolist() == [0, 0]
    assert torch.equal(out["a"], td["a"])
    out = td.named_apply(lambda k, x: None if k == ("b", "c") else x, nested_keys=True)
    assert set(out.keys(True, True)) == {"a"}


# --- to / casts / copies ---------------------------------------------------------


def test_to_dtype():
    """to(dtype) casts every leaf."""
    out = make_td().to(torch.float64)
    assert out["a"].dtype == torch.float64
    assert out["b", "c"].dtype == torch.float64


@pytest.mark.parametrize(
    "method, dtype",
    [
        ("double", torch.float64),
        ("float", torch.float32),
        ("int", torch.int32),
        ("bool", torch.bool),
    ],
)
def test_cast_methods(method, dtype):
    """double()/float()/int()/bool() cast every leaf."""
    out = getattr(make_td(), method)()
    assert out["a"].dtype == dtype
    assert out["b", "c"].dtype == dtype


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_to_device(device):
    """to(device) and cpu() give a tensordict on that device."""
    td = make_td()
    out = td.to(device)
    assert out.device == torch.device("cpu")
    assert out["b"].device == torch.device("cpu")
    assert out["a"].device == torch.device("cpu")
    assert td.cpu().device == torch.device("cpu")


def test_to_none_is_the_tensordict_itself():
    """to(None) changes nothing, as Tensor.to's parser reads it."""
    td = make_td()
    assert td.to(None) is td


def test_to_other_takes_its_device_and_single_dtype():
    """to(other=td) moves to other's device, and casts when other's leaves share one dtype."""
    td = make_td()
    one_dtype = TensorDict({"x": torch.zeros(2, dtype=torch.float16)}, [], device="cpu")
    out = td.to(other=one_dtype)
    assert out.device == torch.device("cpu")
    assert {v.dtype for v in out.values(True, True)} == {torch.float16}
    two_dtypes = TensorDict(x=torch.zeros(2), y=torch.zeros(2, dtype=torch.int8), device="cpu")
    out = td.to(other=two_dtypes)
    assert out["a"].dtype == torch.float32 and out["b", "c"].dtype == torch.int64
    with pytest.raises(ValueError):
        td.to("meta", other=one_dtype)


def test_to_inplace_replaces_the_leaves_of_the_tensordict():
    """to(..., inplace=True) returns the tensordict itself with cast leaves and its new device."""
    td = make_td()
    sub = td["b"]
    assert td.to(torch.float64, inplace=True) is td
    assert td["a"].dtype == torch.float64 and td["b", "c"].dtype == torch.float64
    assert td["b"] is sub
    assert td.to("cpu", inplace=True) is td
    assert td.device == torch.device("cpu") and td["b"].device == torch.device("cpu")


def test_to_inplace_on_a_locked_tensordict_raises():
    """A locked tensordict refuses to(..., inplace=True): its leaves cannot be rebound."""
    td = make_td().lock_()
    with pytest.raises(RuntimeError):
        td.to(torch.float64, inplace=True)
    assert td["a"].dtype == torch.float32


def test_to_batch_size_alone_sets_it_in_place():
    """to(batch_size=...) without a device or dtype sets the batch size and returns self."""
    td = make_td()
    assert td.to(batch_size=[]) is td
    assert td.batch_size == torch.Size([])


def test_to_with_num_threads_moves_as_without():
    """num_threads only concerns pinning: to(device, num_threads=2) moves as to(device) does."""
    out = make_td().to("cpu", num_threads=2)
    assert out.device == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_to_non_blocking_pin_needs_cuda():
    """non_blocking_pin=True pins in page-locked memory, which needs a CUDA device."""
    with pytest.raises(RuntimeError):
        make_td().to("cpu", non_blocking_pin=True)


def test_to_cast_filter_casts_only_the_chosen_leaves():
    """cast_filter(key, leaf) picks the leaves that take the dtype; keys are tuples."""
    seen = []

    def floats_only(key, leaf):
        seen.append(key)
        return leaf.is_floating_point()

    out = make_td().to(torch.float16, cast_filter=floats_only)
    assert out["a"].dtype == torch.float16 and out["b", "c"].dtype == torch.int64
    assert sorted(seen) == [("a",), ("b", "c")]


def test_contiguous_inplace_replaces_the_leaves_that_are_not():
    """contiguous(inplace=True) returns the tensordict itself, its leaves now contiguous copies."""
    big = torch.arange(20.0).view(4, 5)
    td = TensorDict({"a": big[:, ::2], "b": {"c": torch.zeros(4)}}, [4])
    sub, c = td["b"], td["b", "c"]
    assert td.contiguous(inplace=True) is td
    assert td["a"].is_contiguous() and torch.equal(td["a"], big[:, ::2])
    assert td["b"] is sub and td["b", "c"] is c


def test_contiguous_canonical_copies_odd_strides():
    """canonical=True also copies a leaf torch calls contiguous whose strides are not row-major."""
    odd = torch.empty_strided((1, 4, 5), (5, 5, 1)).copy_(torch.arange(20.0).view(1, 4, 5))
    td = TensorDict({"odd": odd, "n": {"odd": odd.clone()}})
    assert td.contiguous()["odd"] is odd
    out = td.contiguous(canonical=True)
    assert out["odd"].stride() == (20, 5, 1) and out["n", "odd"].stride() == (20, 5, 1)
    assert torch.equal(out["odd"], odd)


def test_contiguous_inplace_on_a_lazy_stack_raises():
    """A lazy stack cannot become its dense form in place."""
    stack = lazy_stack([TensorDict(x=torch.zeros(4), batch_size=[4]) for _ in range(2)])
    with pytest.raises(NotImplementedError):
        stack.contiguous(inplace=True)


def test_tolist_keeps_the_elements_as_tensordicts_without_convert_nodes():
    """tolist(convert_nodes=False) gives td[i] per element; convert_tensors then raises."""
    td = make_td()
    rows = td.tolist(convert_nodes=False)
    assert [type(r) for r in rows] == [TensorDict, TensorDict]
    assert (rows[1] == td[1]).all()
    with pytest.raises(TypeError):
        td.tolist(convert_nodes=False, convert_tensors=True)


def test_tolist_first_lists_the_sub_tensordicts():
    """to_dict/tolist(tolist_first=True) give a sub-tensordict with batch dims as a list of dicts."""
    td = TensorDict(
        a=torch.arange(2),
        b=TensorDict(c=torch.arange(4).view(2, 2), batch_size=[2, 2]),
        batch_size=[2],
    )
    assert td.to_dict(tolist_first=True, convert_tensors=True) == {
        "a": [0, 1],
        "b": [[{"c": 0}, {"c": 1}], [{"c": 2}, {"c": 3}]],
    }
    assert td.tolist(tolist_first=True, convert_tensors=True)[0] == {
        "a": 0,
        "b": [{"c": 0}, {"c": 1}],
    }


def test_tolist_as_linked_list_writes_an_assigned_row_back():
    """tolist(as_linked_list=True): assigning an item of the list writes the tensordict's row."""
    td = make_td()
    rows = td.tolist(as_linked_list=True)
    assert isinstance(rows, list) and len(rows) == 2
    rows[1] = {"a": torch.full((3,), 7.0), "b": {"c": torch.tensor(5)}}
    assert td["a"][1].tolist() == [7.0, 7.0, 7.0] and td["b", "c"].tolist() == [0, 5]


def test_clone():
    """clone copies every tensor; the copy is equal and independent."""
    td = make_td()
    out = td.clone()
    assert (out == td).all()
    out["a"][0, 0] = 100
    assert td["a"][0, 0] == 0
    assert out["b"] is not td["b"]


def test_clone_not_recursive():
    """clone(recurse=False) shares the tensors."""
    td = make_td()
    assert td.clone(recurse=False)["a"] is td["a"]


def test_clone_not_recursive_copies_every_level_of_the_structure():
    """clone(recurse=False) gives new sub-tensordicts: rebinding a nested key leaves the source alone."""
    td = make_td().lock_()
    copy = td.clone(recurse=False)
    assert copy["b"] is not td["b"] and copy["b", "c"] is td["b", "c"]
    assert not copy.is_locked and not copy["b"].is_locked
    copy["b", "c"] = torch.zeros_like(td["b", "c"])
    copy["b", "new"] = torch.ones(td.batch_size)
    assert "new" not in td["b"].keys() and not (td["b", "c"] == 0).all()
    stack = lazy_stack([make_td(), make_td()])
    copy = stack.clone(recurse=False)
    assert copy.tensordicts[0] is not stack.tensordicts[0]
    assert copy.tensordicts[0]["a"] is stack.tensordicts[0]["a"]


def test_contiguous():
    """contiguous makes every leaf contiguous and keeps the values."""
    td = make_td().unsqueeze(0).expand(3, 2)
    assert not td["a"].is_contiguous()
    out = td.contiguous()
    assert out["a"].is_contiguous()
    assert out["b", "c"].is_contiguous()
    assert (out == td).all()


def test_detach():
    """detach returns leaves that do not require grad."""
    td = make_td().apply(lambda x: x.float().requires_grad_())
    out = td.detach()
    assert not out["a"].requires_grad
    assert not out["b", "c"].requires_grad
    assert td["a"].requires_grad


def test_zero_():
    """zero_ zeroes every leaf in place."""
    td = make_td()
    a = td["a"]
    assert td.zero_() is td
    assert td["a"] is a
    assert a.sum() == 0
    assert td["b", "c"].sum() == 0


def test_fill_():
    """fill_(key, value) fills one entry, or every leaf of a sub-tensordict."""
    td = make_td()
    assert td.fill_("a", 5.0) is td
    assert (td["a"] == 5).all()
    td.fill_("b", 9)
    assert td["b", "c"].tolist() == [9, 9]
    td.fill_(("b", "c"), 7)
    assert td["b", "c"].tolist() == [7, 7]


def test_fill_missing_key_raises():
    """fill_ of a missing key is a KeyError naming it."""
    with pytest.raises(KeyError, match="nope"):
        make_td().fill_("nope", 1)


def test_copy_():
    """copy_ copies the values of another tensordict in place."""
    td = make_td()
    a = td["a"]
    assert td.copy_(torch.zeros_like(td)) is td
    assert td["a"] is a
    assert a.sum() == 0
    assert td["b", "c"].sum() == 0


# --- arithmetic ------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, c",
    [
        (lambda t: t + 1, [1, 2]),
        (lambda t: 1 + t, [1, 2]),
        (lambda t: t - 1, [-1, 0]),
        (lambda t: 1 - t, [1, 0]),
        (lambda t: t * 2, [0, 2]),
        (lambda t: 2 * t, [0, 2]),
        (lambda t: t / 2, [0.0, 0.5]),
        (lambda t: 2 / (t + 1), [2.0, 1.0]),
        (lambda t: (t + 2) ** 2, [4, 9]),
        (lambda t: -t, [0, -1]),
    ],
)
def test_arithmetic_with_scalar(fn, c):
    """Operators with a Python scalar apply to every leaf."""
    td = make_td()
    out = fn(td)
    assert isinstance(out, TensorDict)
    assert out["b", "c"].tolist() == c
    assert torch.equal(out["a"], fn(td["a"]))


@pytest.mark.parametrize(
    "op", [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y]
)
def test_arithmetic_with_tensordict(op):
    """Operators between tensordicts combine matching leaves."""
    td, other = make_float_td(), make_float_td()
    out = op(td, other)
    for key in ("a", ("b", "c")):
        assert torch.equal(out[key], op(td[key], other[key]))


def test_arithmetic_with_tensor_broadcasts_over_batch():
    """A tensor of the batch shape broadcasts from the left over each leaf."""
    td = make_td()
    out = td + torch.tensor([10.0, 20.0])
    assert out["b", "c"].tolist() == [10.0, 21.0]
    assert out["a"].tolist() == [[10.0, 11.0, 12.0], [23.0, 24.0, 25.0]]


def test_arithmetic_methods():
    """add/sub/mul/div/pow methods match the operators; add takes alpha."""
    td = make_td()
    assert td.add(1)["b", "c"].tolist() == [1, 2]
    assert td.sub(1)["b", "c"].tolist() == [-1, 0]
    assert td.mul(3)["b", "c"].tolist() == [0, 3]
    assert td.div(2)["b", "c"].tolist() == [0.0, 0.5]
    assert td.pow(2)["b", "c"].tolist() == [0, 1]
    assert td.add(td, alpha=2)["b", "c"].tolist() == [0, 3]


def test_arithmetic_mismatched_keys_raises():
    """Arithmetic between tensordicts with different keys is a KeyError naming the key."""
    td = make_td()
    with pytest.raises(KeyError, match="a"):
        td + td.exclude("a")
    with pytest.raises(KeyError, match="a"):
        td.exclude("a") + td


def test_inplace_operators_keep_tensors():
    """+=, -=, *=, /=, **= update the existing tensors."""
    td = make_float_td()
    a = td["a"]
    expected = a.clone()
    td += 1
    td -= 0.5
    td *= 2
    td /= 4
    td **= 2
    expected = (((expected + 1 - 0.5) * 2) / 4) ** 2
    assert td["a"] is a
    assert torch.allclose(a, expected)


def test_inplace_with_tensordict():
    """td += other adds the matching leaves in place."""
    td = make_td()
    a = td["a"]
    td += make_td()
    assert td["a"] is a
    assert a[0].tolist() == [0.0, 2.0, 4.0]
    assert td["b", "c"].tolist() == [0, 2]


def test_inplace_methods_return_self():
    """add_/sub_/mul_/div_/pow_ work in place and return self."""
    td = make_float_td()
    a = td["a"]
    expected = (((a.clone() + 1) - 1) * 3 / 3) ** 2
    assert td.add_(1) is td
    assert td.sub_(1) is td
    assert td.mul_(3) is td
    assert td.div_(3) is td
    assert td.pow_(2) is td
    assert td["a"] is a
    assert torch.allclose(a, expected)


# --- comparisons -----------------------------------------------------------------


@pytest.mark.parametrize(
    "op, a0, c",
    [
        ("__eq__", [False, True, True], [True, False]),
        ("__ne__", [True, False, False], [False, True]),
        ("__lt__", [True, False, False], [False, False]),
        ("__le__", [True, True, True], [True, False]),
        ("__gt__", [False, False, False], [False, True]),
        ("__ge__", [False, True, True], [True, True]),
    ],
)
def test_comparison_with_tensordict(op, a0, c):
    """Comparison operators return a tensordict of booleans, leaf by leaf."""
    td = make_td()
    other = make_td()
    other["a"][0, 0] = 100
    other["b", "c"][1] = -5
    out = getattr(td, op)(other)
    assert isinstance(out, TensorDict)
    assert out.batch_size == td.batch_size
    assert out["a"].dtype == torch.bool
    assert out["a"][0].tolist() == a0
    assert out["b", "c"].tolist() == c


def test_comparison_with_scalar_and_tensor():
    """Comparisons with a scalar or a batch-shaped tensor apply to every leaf."""
    td = make_td()
    assert (td == 1)["b", "c"].tolist() == [False, True]
    assert (td > 0)["b", "c"].tolist() == [False, True]
    assert (1 < td)["b", "c"].tolist() == [False, False]
    assert (td == torch.tensor([0, 5]))["b", "c"].tolist() == [True, False]


@pytest.mark.parametrize(
    "op", [lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x < y, lambda x, y: x >= y]
)
def test_comparison_mismatched_keys_raises(op):
    """Comparing tensordicts with different keys is a KeyError naming the key."""
    td = make_td()
    with pytest.raises(KeyError, match="a"):
        op(td, td.exclude("a"))
    with pytest.raises(KeyError, match="z"):
        op(td, td.clone().set("z", torch.zeros(2)))


def test_eq_none_is_false():
    """Comparing to None is False, not an error."""
    assert (make_td() == None) is False  # noqa: E711


def test_bool_of_tensordict_raises():
    """bool(td) is refused: reduce a comparison with all() or any()."""
    td = make_td()
    with pytest.raises(RuntimeError):
        bool(td == td)


def test_all_any():
    """all() and any() reduce every leaf to one Python bool."""
    td = make_td()
    other = make_td()
    other["a"][0, 0] = 100
    assert (td == td).all() is True
    assert (td == other).all() is False
    assert (td == other).any() is True
    assert (td != td).any() is False
    assert make_td().all() is False
    assert make_td().any() is True


def test_all_any_dim():
    """all(dim) and any(dim) reduce along a batch dim into a tensordict."""
    td = make_td()
    other = make_td()
    other["a"][0, 0] = 100
    out = (td == other).all(0)
    assert isinstance(out, TensorDict)
    assert out.batch_size == torch.Size([])
    assert out["a"].tolist() == [False, True, True]
    assert (td == other).any(-1)["b", "c"].tolist() is True


# --- reductions ------------------------------------------------------------------


def make_reduce_td():
    return TensorDict(
        {"a": torch.arange(24.0).reshape(2, 3, 4), "b": {"c": torch.arange(6.0).reshape(2, 3)}},
        batch_size=[2, 3],
    )


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var", "nansum"])
def test_reduction_without_dim_reduces_each_leaf(name):
    """Without dim, a reduction reduces each leaf entirely into a tensordict of scalars."""
    td = make_reduce_td()
    out = getattr(td, name)()
    assert isinstance(out, TensorDict)
    assert out.batch_size == torch.Size([])
    for key in ("a", ("b", "c")):
        assert torch.allclose(out[key], getattr(td[key], name)())


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_reduction_over_batch_dim(name, dim):
    """A reduction over a batch dim reduces that dim of each leaf."""
    td = make_reduce_td()
    out = getattr(td, name)(dim)
    leaf_dim = dim % 2
    assert out.batch_size == torch.Size([2, 3][:leaf_dim] + [2, 3][leaf_dim + 1 :])
    for key in ("a", ("b", "c")):
        assert torch.allclose(out[key], getattr(td[key], name)(leaf_dim))


def test_sum_tuple_dim_and_keepdim():
    """sum takes a tuple of batch dims and keepdim."""
    td = make_reduce_td()
    assert td.sum(dim=(0, 1))["a"].tolist() == [60.0, 66.0, 72.0, 78.0]
    assert td.sum(dim=0, keepdim=True).batch_size == torch.Size([1, 3])


def test_reduce_true_gives_one_tensor():
    """sum(reduce=True) adds every element of every leaf into one tensor."""
    td = make_reduce_td()
    assert td.sum(reduce=True).item() == 276.0 + 15.0


def test_max_min_with_dim_return_values_and_indices():
    """max(dim)/min(dim) return values and indices tensordicts, like torch."""
    td = make_reduce_td()
    values, indices = td.max(dim=1)
    assert values["b", "c"].tolist() == [2.0, 5.0]
    assert indices["b", "c"].tolist() == [2, 2]
    assert indices.batch_size == torch.Size([2])
    assert td.max(dim=1, return_indices=False)["b", "c"].tolist() == [2.0, 5.0]
    assert td.min(dim=0).values["b", "c"].tolist() == [0.0, 1.0, 2.0]


def test_reduction_past_batch_dims_raises():
    """Reducing over a dim that is not a batch dim is an IndexError."""
    with pytest.raises(IndexError):
        make_reduce_td().sum(dim=2)


# --- elementwise math ------------------------------------------------------------

UNARY = [
    "abs", "exp", "log", "sqrt", "sin", "cos", "tan", "neg", "sigmoid", "tanh",
    "reciprocal", "floor", "ceil", "round", "trunc", "frac", "expm1", "log1p",
    "log2", "log10", "sign", "erf", "erfc", "lgamma", "asin", "acos", "atan",
    "sinh", "cosh",
]  # fmt: skip


@pytest.mark.parametrize("name", UNARY)
def test_unary_math(name):
    """Each elementwise math method applies the torch function to every leaf."""
    td = make_float_td()
    out = getattr(td, name)()
    for key in ("a", ("b", "c")):
        expected = getattr(torch, name)(td[key])
        assert torch.allclose(out[key], expected, equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
def test_unary_math_inplace(name):
    """Each `_` form works in place, keeps the tensors and returns self."""
    td = make_float_td()
    expected = getattr(td, name)()
    a = td["a"]
    assert getattr(td, name + "_")() is td
    assert td["a"] is a
    assert torch.allclose(a, expected["a"], equal_nan=True)


@pytest.mark.parametrize("fn", [torch.exp, torch.abs, torch.sigmoid, torch.neg])
def test_torch_functions_on_tensordict(fn):
    """torch.exp(td) and friends return a tensordict."""
    td = make_float_td()
    out = fn(td)
    assert isinstance(out, TensorDict)
    assert torch.allclose(out["b", "c"], fn(td["b", "c"]))


def test_clamp_and_binary_math():
    """clamp/clamp_min/clamp_max/maximum/minimum/lerp apply to every leaf."""
    td = make_float_td()
    c = td["b", "c"]
    assert torch.equal(td.clamp_min(0.7)["b", "c"], c.clamp_min(0.7))
    assert torch.equal(td.clamp_max(0.7)["b", "c"], c.clamp_max(0.7))
    assert torch.equal(td.clamp(0.6, 0.7)["b", "c"], c.clamp(0.6, 0.7))
    assert torch.equal(td.maximum(td * 2)["b", "c"], c * 2)
    assert torch.equal(td.minimum(td * 2)["b", "c"], c)
    assert torch.allclose(td.lerp(td * 2, 0.5)["b", "c"], c * 1.5)


# --- interop ---------------------------------------------------------------------


def test_state_dict_is_flat():
    """state_dict is an OrderedDict of leaves with '.'-joined keys."""
    td = make_td()
    sd = td.state_dict()
    assert list(sd.keys()) == ["a", "b.c"]
    assert torch.equal(sd["b.c"], td["b", "c"])


def test_load_state_dict_in_place():
    """load_state_dict copies the values into the existing tensors."""
    sd = make_td().state_dict()
    td = make_td().zero_()
    a = td["a"]
    assert td.load_state_dict(sd) is td
    assert td["a"] is a
    assert (td == make_td()).all()


def test_numpy():
    """numpy() gives nested dicts of arrays sharing memory."""
    td = make_td()
    arrays = td.numpy()
    assert type(arrays) is dict
    assert isinstance(arrays["b"]["c"], np.ndarray)
    assert arrays["a"].dtype == np.float32
    arrays["a"][0, 0] = 42
    assert td["a"][0, 0] == 42


def test_tolist():
    """tolist() gives one dict per batch element; convert_tensors gives Python values."""
    td = make_td()
    rows = td.tolist(convert_tensors=True)
    assert rows == [{"a": [0.0, 1.0, 2.0], "b": {"c": 0}}, {"a": [3.0, 4.0, 5.0], "b": {"c": 1}}]
    plain = td.tolist()
    assert len(plain) == 2
    assert torch.equal(plain[1]["a"], td["a"][1])


def test_pytree_tree_map():
    """torch.utils._pytree.tree_map walks the leaves and rebuilds a tensordict."""
    td = make_td()
    out = pytree.tree_map(lambda x: x * 10, td)
    assert isinstance(out, TensorDict)
    assert out.batch_size == td.batch_size
    assert out["b"].batch_size == torch.Size([2])
    assert out["b", "c"].tolist() == [0, 10]


def test_pytree_flatten_unflatten():
    """tree_flatten gives the leaves; tree_unflatten rebuilds the same structure."""
    td = make_td()
    leaves, spec = pytree.tree_flatten(td)
    assert len(leaves) == 2
    assert any(x is td["a"] for x in leaves)
    out = pytree.tree_unflatten([x + 1 for x in leaves], spec)
    assert set(out.keys(True, True)) == {"a", ("b", "c")}
    assert out["b", "c"].tolist() == [1, 2]


def test_pytree_unflatten_over_leaves_of_another_shape():
    """tree_unflatten over leaves that lack the old batch size reads the batch size off them.

    One extra leading dim (a basis, as torch.func builds) joins the batch; otherwise the batch
    is the leading dims the leaves share, at most as many as before; the names are dropped.
    """
    td = TensorDict(a=torch.zeros(2, 3), b=torch.zeros(2, 4), batch_size=[2], names=["n"])
    leaves, spec = pytree.tree_flatten(td)
    basis = pytree.tree_unflatten([torch.zeros(5, *x.shape) for x in leaves], spec)
    assert basis.batch_size == (5, 2) and basis.names == [None, None]
    other = pytree.tree_unflatten([torch.zeros(3, 7), torch.zeros(3, 1)], spec)
    assert other.batch_size == (3,)
    same = pytree.tree_unflatten([x + 1 for x in leaves], spec)
    assert same.batch_size == (2,) and same.names == ["n"]


def test_pytree_inside_containers():
    """tree_map reaches tensordicts inside dicts and lists."""
    out = pytree.tree_map(lambda x: x + 1, {"k": [make_td()]})
    assert out["k"][0]["b", "c"].tolist() == [1, 2]


def test_apply_returning_none_everywhere_returns_none():
    """apply(fn) where fn returns None for every leaf returns None, as the reference."""
    assert TensorDict({"a": torch.zeros(2)}, [2]).apply(lambda x: None) is None
