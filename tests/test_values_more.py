"""More values of a tensordict: predicates, casts, pointers, devices and leafwise math.

Every behaviour is checked on a TensorDict, a lazy stack, a tensorclass instance and a
memory-mapped tensordict holding the same leaves.
"""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack, tensorclass

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)

KINDS = ("td", "lazy", "tc", "memmap")


@tensorclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


def build(kind, a, b, tmp_path=None):
    """The same leaves ``a`` (features after the batch dim) and ``b`` held by one kind."""
    td = TensorDict(a=a, b=b, batch_size=a.shape[:1])
    if kind == "lazy":
        return lazy_stack(list(td.unbind(0)))
    if kind == "tc":
        return Pair(a=a, b=b, batch_size=a.shape[:1])
    if kind == "memmap":
        return td.memmap_(tmp_path / "mm")
    return td


def sample(kind, tmp_path):
    a = torch.tensor([[1.0, float("nan"), 3.0], [float("inf"), -2.0, float("-inf")]])
    return build(kind, a, torch.tensor([0.5, -1.5]), tmp_path)


def leaf(obj, key):
    return obj.get(key)


# ------------------------------------------------------------------------------ dtype
@pytest.mark.parametrize("kind", KINDS)
def test_dtype_is_the_shared_leaf_dtype(kind, tmp_path):
    """dtype is the dtype every tensor leaf shares."""
    assert sample(kind, tmp_path).dtype == torch.float32


def test_dtype_is_none_when_leaves_differ_or_are_missing():
    """dtype is None with leaves of several dtypes or without leaves."""
    mixed = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2, dtype=torch.int64)}, batch_size=[2])
    assert mixed.dtype is None
    assert TensorDict(batch_size=[2]).dtype is None


def test_dtype_ignores_non_tensor_entries():
    """A non-tensor entry does not count for dtype."""
    assert TensorDict(a=torch.zeros(2), s="text", batch_size=[2]).dtype == torch.float32


# ------------------------------------------------------------------------------ predicates
@pytest.mark.parametrize("name", ["isnan", "isfinite", "isposinf", "isneginf", "isreal"])
@pytest.mark.parametrize("kind", KINDS)
def test_predicates_apply_the_torch_predicate_to_each_leaf(kind, name, tmp_path):
    """Each predicate gives the boolean tensor torch gives for every leaf."""
    obj = sample(kind, tmp_path)
    out = getattr(obj, name)()
    assert type(out) is (Pair if kind == "tc" else type(out))
    for key in ("a", "b"):
        expected = getattr(torch, name)(leaf(obj, key))
        assert torch.equal(leaf(out, key), expected)
        assert leaf(out, key).dtype == torch.bool


def test_predicates_keep_non_tensor_entries():
    """A non-tensor entry is kept by isnan."""
    out = TensorDict(a=torch.zeros(2), s="text", batch_size=[2]).isnan()
    assert out["s"] == "text"


floats = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=30, deadline=None)
@given(st.lists(floats, min_size=1, max_size=6))
def test_predicates_match_torch_on_any_floats(values):
    """isnan, isfinite, isposinf and isneginf of a leaf are torch's, for any float values."""
    x = torch.tensor(values)
    td = TensorDict(x=x, nested={"y": -x}, batch_size=[len(values)])
    for name in ("isnan", "isfinite", "isposinf", "isneginf"):
        out = getattr(td, name)()
        assert torch.equal(out["x"], getattr(torch, name)(x))
        assert torch.equal(out["nested", "y"], getattr(torch, name)(-x))


# ------------------------------------------------------------------------------ casts
CASTS = {
    "half": torch.float16,
    "float": torch.float32,
    "double": torch.float64,
    "bfloat16": torch.bfloat16,
    "int": torch.int32,
    "bool": torch.bool,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "uint64": torch.uint64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}


@pytest.mark.parametrize("name", sorted(CASTS))
@pytest.mark.parametrize("kind", KINDS)
def test_casts_give_every_leaf_the_dtype(kind, name, tmp_path):
    """Each cast method gives every tensor leaf its dtype, values as Tensor.to gives them."""
    obj = build(kind, torch.arange(6.0).reshape(2, 3), torch.tensor([1.0, 2.0]), tmp_path)
    out = getattr(obj, name)()
    assert out.dtype == CASTS[name]
    for key in ("a", "b"):
        assert torch.equal(leaf(out, key), leaf(obj, key).to(CASTS[name]))
    assert leaf(obj, "a").dtype == torch.float32


def test_cast_filter_gets_the_tuple_key_and_the_leaf():
    """cast_filter(key, leaf) is called with tuple keys and only its True leaves are cast."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2, dtype=torch.int64)}, batch_size=[2])
    seen = []

    def keep_ints(key, value):
        seen.append(key)
        return not value.is_floating_point()

    out = td.float64(cast_filter=keep_ints)
    assert sorted(seen) == [("a",), ("b", "c")]
    assert out["a"].dtype == torch.float32
    assert out["b", "c"].dtype == torch.float64
    assert td.double(cast_filter=keep_ints)["b", "c"].dtype == torch.float64
    assert td.half(cast_filter=keep_ints)["a"].dtype == torch.float32


def test_type_takes_a_dtype_or_a_tensor_type_name():
    """type() casts to a dtype or to a tensor type named by a string."""
    td = TensorDict(a=torch.tensor([1, 2]), batch_size=[2])
    assert td.type(torch.float64)["a"].dtype == torch.float64
    assert td.type("torch.DoubleTensor")["a"].dtype == torch.float64


def test_type_needs_a_dst_type():
    """type() without a target raises TypeError."""
    with pytest.raises(TypeError, match="dst_type"):
        TensorDict(a=torch.zeros(2), batch_size=[2]).type()


def test_casts_keep_non_tensor_entries():
    """A non-tensor entry is kept by a cast."""
    out = TensorDict(a=torch.zeros(2), s="text", batch_size=[2]).int8()
    assert out["s"] == "text" and out["a"].dtype == torch.int8


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(-100, 100), min_size=1, max_size=5),
    st.sampled_from(sorted(CASTS)),
)
def test_casts_match_tensor_to_on_any_integers(values, name):
    """A cast of each leaf is Tensor.to of that leaf, for any integer values."""
    x = torch.tensor(values, dtype=torch.int64)
    td = TensorDict(x=x, nested={"y": x * 2}, batch_size=[len(values)])
    out = getattr(td, name)()
    assert torch.equal(out["x"], x.to(CASTS[name]))
    assert torch.equal(out["nested", "y"], (x * 2).to(CASTS[name]))


# ------------------------------------------------------------------------------ data and tensors
@pytest.mark.parametrize("kind", ["td", "lazy", "tc"])
def test_data_detaches_and_shares_memory(kind, tmp_path):
    """data gives the leaves' .data: no gradient, same memory."""
    w = torch.ones(2, 3, requires_grad=True)
    obj = build(kind, w * 2, torch.zeros(2), tmp_path)
    data = obj.data
    assert type(data) is (Pair if kind == "tc" else type(data))
    assert not leaf(data, "a").requires_grad
    assert leaf(obj, "a").requires_grad
    assert torch.equal(leaf(data, "a"), torch.full((2, 3), 2.0))


def test_data_shares_the_leaf_memory():
    """data of a TensorDict holds tensors over the same memory."""
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    td.data["a"][0] = 5.0
    assert td["a"][0] == 5.0


def test_as_tensor_keeps_memmap_leaves_and_warns(tmp_path):
    """as_tensor of a memory-mapped tensordict keeps its leaves, with a FutureWarning."""
    td = TensorDict(a=torch.arange(3.0), batch_size=[3]).memmap_(tmp_path / "mm")
    with pytest.warns(FutureWarning, match="0.17"):
        out = td.as_tensor()
    assert out["a"] is td["a"]
    assert out.is_locked


def test_as_tensor_keeps_the_leaves():
    """as_tensor of plain tensors holds the same tensors, locked like the source."""
    td = TensorDict(a=torch.zeros(2), batch_size=[2]).lock_()
    out = td.as_tensor()
    assert out["a"] is td["a"]
    assert out.is_locked


def test_as_tensor_keeps_non_tensor_entries():
    """A non-tensor entry is kept by as_tensor."""
    out = TensorDict(a=torch.zeros(2), s="text", batch_size=[2]).as_tensor()
    assert out["s"] == "text"


def test_new_tensor_from_values_copies_them_into_each_leaf_dtype():
    """new_tensor(list) gives every leaf those values in its dtype, the batch size their shape."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2, dtype=torch.int64)}, batch_size=[2])
    out = td.new_tensor([1.5, 2.0, 3.0])
    assert out.batch_size == torch.Size([3])
    assert out["a"].tolist() == [1.5, 2.0, 3.0]
    assert out["b", "c"].tolist() == [1, 2, 3]
    assert out.device == torch.device("cpu")


def test_new_tensor_dtype_overrides_each_leaf_dtype():
    """new_tensor(dtype=...) gives every leaf that dtype."""
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    out = td.new_tensor(torch.ones(3), dtype=torch.float64)
    assert out["a"].dtype == out["b"].dtype == torch.float64


def test_new_tensor_from_a_tensordict_takes_each_key():
    """new_tensor(td) takes each leaf from its key, in this tensordict's dtypes."""
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    data = TensorDict(a=torch.ones(3), b=torch.full((3,), 2.5), extra=torch.ones(3), batch_size=[3])
    out = td.new_tensor(data)
    assert out.batch_size == torch.Size([3])
    assert set(out.keys()) == {"a", "b"}
    assert out["b"].tolist() == [2, 2, 2]


def test_new_tensor_from_a_tensordict_missing_a_key_raises_key_error():
    """new_tensor(td) raises KeyError when td lacks one of the keys."""
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2), batch_size=[2])
    with pytest.raises(KeyError, match="b"):
        td.new_tensor(TensorDict(a=torch.ones(3)))


# ------------------------------------------------------------------------------ memory
def test_data_ptr_gives_each_leaf_pointer():
    """data_ptr holds the data pointer of every leaf, as 0-dim int64 tensors."""
    td = TensorDict(a=torch.zeros(4), b={"c": torch.zeros(4)}, s="text", batch_size=[4])
    out = td.data_ptr()
    assert out.batch_size == torch.Size([])
    assert out.device == torch.device("cpu")
    assert int(out["a"]) == td["a"].data_ptr()
    assert int(out["b", "c"]) == td["b", "c"].data_ptr()
    assert set(out.keys()) == {"a", "b"}


def test_data_ptr_storage_points_at_the_storage_start():
    """data_ptr(storage=True) of a view at an offset is the storage's pointer."""
    td = TensorDict(a=torch.zeros(4), batch_size=[4])
    view = td[1:]
    assert int(view.data_ptr()["a"]) != int(td.data_ptr()["a"])
    assert int(view.data_ptr(storage=True)["a"]) == int(td.data_ptr()["a"])


def test_data_ptr_of_a_lazy_stack_has_one_entry_per_member():
    """data_ptr of a lazy stack gives each member's pointers under "0", "1", ..."""
    members = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))]
    out = lazy_stack(members).data_ptr()
    assert int(out["0", "a"]) == members[0]["a"].data_ptr()
    assert int(out["1", "a"]) == members[1]["a"].data_ptr()


@pytest.mark.parametrize("kind", KINDS)
def test_param_count_counts_every_element(kind, tmp_path):
    """param_count is the number of elements of all the tensor leaves."""
    assert sample(kind, tmp_path).param_count() == 8


def test_param_count_without_duplicates_counts_a_shared_tensor_once():
    """param_count(count_duplicates=False) counts a tensor held twice once."""
    w = torch.zeros(2, 3)
    td = TensorDict(a=w, b=w, batch_size=[2])
    assert td.param_count() == 12
    assert td.param_count(count_duplicates=False) == 6


def test_is_contiguous_is_false_with_a_transposed_leaf():
    """is_contiguous is False when a leaf is not contiguous, True without leaves."""
    assert TensorDict(a=torch.zeros(2, 3), batch_size=[2]).is_contiguous()
    assert not TensorDict(a=torch.zeros(3, 2).t(), batch_size=[2]).is_contiguous()
    assert TensorDict(batch_size=[]).is_contiguous()


def test_is_contiguous_of_a_lazy_stack_is_false():
    """A lazy stack is never contiguous."""
    assert not lazy_stack(
        [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2))]
    ).is_contiguous()


def test_is_cpu_and_is_meta_follow_the_device():
    """is_cpu and is_meta read the tensordict's device, False without one."""
    assert TensorDict(a=torch.zeros(2), batch_size=[2], device="cpu").is_cpu
    assert not TensorDict(a=torch.zeros(2), batch_size=[2]).is_cpu
    assert TensorDict(a=torch.zeros(2), batch_size=[2], device="meta").is_meta
    assert not TensorDict(a=torch.zeros(2), batch_size=[2], device="cpu").is_meta


# ------------------------------------------------------------------------------ devices
@pytest.mark.parametrize("kind", ["td", "lazy", "tc"])
def test_auto_device_records_the_shared_device(kind, tmp_path):
    """auto_device_ sets the leaves' common device, returns the same object."""
    obj = sample(kind, tmp_path)
    assert obj.device is None
    assert obj.auto_device_() is obj
    assert obj.device == torch.device("cpu")


def test_auto_device_sets_the_nested_devices_too():
    """auto_device_ gives sub-tensordicts the device as well, on a locked tensordict too."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.ones(2)}, batch_size=[2]).lock_()
    td.auto_device_()
    assert td["b"].device == torch.device("cpu")


def test_auto_device_without_leaves_gives_none():
    """auto_device_ of a tensordict without leaves leaves it without a device."""
    assert TensorDict(batch_size=[]).auto_device_().device is None


def test_auto_device_with_leaves_on_several_devices_gives_none():
    """auto_device_ gives None when the leaves are on several devices."""
    td = TensorDict(a=torch.zeros(2, device="meta"), b=torch.zeros(2), batch_size=[2])
    assert td.auto_device_().device is None


@pytest.mark.parametrize("kind", ["td", "lazy", "tc", "memmap"])
def test_clear_device_forgets_the_device(kind, tmp_path):
    """clear_device_ sets the device to None, nested ones too; the leaves stay."""
    obj = sample(kind, tmp_path).auto_device_()
    assert obj.clear_device_() is obj
    assert obj.device is None
    assert leaf(obj, "a").device == torch.device("cpu")


def test_clear_device_clears_nested_devices():
    """clear_device_ clears the devices of sub-tensordicts, on a locked tensordict too."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.ones(2)}, batch_size=[2], device="cpu")
    td.lock_().clear_device_()
    assert td["b"].device is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
@pytest.mark.parametrize("inplace", [False, True])
def test_pin_memory_without_cuda_raises_runtime_error(inplace):
    """pin_memory and pin_memory_ raise RuntimeError without CUDA and change nothing."""
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    before = td["a"]
    with pytest.raises(RuntimeError, match="CUDA|accelerator"):
        td.pin_memory_() if inplace else td.pin_memory()
    assert td["a"] is before


def test_pin_memory_without_leaves_returns_a_tensordict():
    """pin_memory of a tensordict without leaves needs no accelerator."""
    assert TensorDict(batch_size=[]).pin_memory().batch_size == torch.Size([])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_record_stream_without_cuda_raises_runtime_error():
    """record_stream raises RuntimeError without CUDA."""
    with pytest.raises(RuntimeError):
        TensorDict(a=torch.zeros(2), batch_size=[2]).record_stream(None)


# ------------------------------------------------------------------------------ math
def operands(kind, tmp_path):
    obj = build(kind, torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([4.0, 6.0]), tmp_path)
    other = TensorDict(a=torch.full((2, 2), 2.0), b=torch.tensor([1.0, 2.0]), batch_size=[2])
    return obj, other


@pytest.mark.parametrize("kind", KINDS)
def test_addcmul_and_addcdiv_combine_each_leaf(kind, tmp_path):
    """addcmul and addcdiv give leaf + value * o1 * o2 and leaf + value * o1 / o2."""
    obj, other = operands(kind, tmp_path)
    mul = obj.addcmul(other, other, value=2)
    div = obj.addcdiv(other, other, value=3)
    for key in ("a", "b"):
        x, y = leaf(obj, key), other[key]
        assert torch.equal(leaf(mul, key), x + 2 * y * y)
        assert torch.equal(leaf(div, key), x + 3.0)


@pytest.mark.parametrize("kind", KINDS)
def test_addcmul_and_addcdiv_in_place_write_the_leaves(kind, tmp_path):
    """addcmul_ and addcdiv_ write into the leaves and return the same object."""
    obj, other = operands(kind, tmp_path)
    before = leaf(obj, "a").clone()
    assert obj.addcmul_(other, other, value=2) is obj
    assert torch.equal(leaf(obj, "a"), before + 8.0)
    assert obj.addcdiv_(other, other) is obj
    assert torch.equal(leaf(obj, "a"), before + 9.0)


def test_addcmul_in_place_on_a_memmap_writes_the_files(tmp_path):
    """addcmul_ on a memory-mapped tensordict is seen by a fresh load of its folder."""
    td = TensorDict(a=torch.ones(2), batch_size=[2]).memmap_(tmp_path / "mm")
    td.addcmul_(TensorDict(a=torch.full((2,), 2.0), batch_size=[2]), td.clone())
    assert TensorDict.load_memmap(tmp_path / "mm")["a"].tolist() == [3.0, 3.0]


def test_addcmul_with_other_keys_raises_key_error_and_changes_nothing():
    """addcmul and addcmul_ with a tensordict of other keys raise KeyError, writing nothing."""
    td = TensorDict(a=torch.ones(2), b=torch.ones(2), batch_size=[2])
    other = TensorDict(a=torch.ones(2), batch_size=[2])
    with pytest.raises(KeyError, match="b"):
        td.addcmul(other, other)
    with pytest.raises(KeyError, match="b"):
        td.addcmul_(td.clone(), other)
    assert td["a"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kind", KINDS)
def test_mod_and_rsub_follow_torch(kind, tmp_path):
    """mod is torch.remainder of each leaf, rsub is other - alpha * leaf."""
    obj, other = operands(kind, tmp_path)
    for key in ("a", "b"):
        x, y = leaf(obj, key), other[key]
        assert torch.equal(leaf(obj.mod(3), key), torch.remainder(x, 3))
        assert torch.equal(leaf(obj.mod(other), key), torch.remainder(x, y))
        assert torch.equal(leaf(obj.rsub(other), key), y - x)
        assert torch.equal(leaf(obj.rsub(other, alpha=2), key), y - 2 * x)
        assert torch.equal(leaf(obj.rsub(10.0), key), 10.0 - x)


def test_logical_and_and_bitwise_and_follow_torch():
    """logical_and and bitwise_and give torch's results for each leaf."""
    td = TensorDict(a=torch.tensor([5, 6]), b={"c": torch.tensor([0, 7])}, batch_size=[2])
    assert td.logical_and(td)["b", "c"].tolist() == [False, True]
    assert td.logical_and(torch.tensor(True))["a"].tolist() == [True, True]
    assert td.bitwise_and(torch.tensor(3))["a"].tolist() == [1, 2]
    assert td.bitwise_and(td)["b", "c"].tolist() == [0, 7]


def test_logical_and_refuses_a_number():
    """logical_and with a number raises TypeError, as torch.logical_and does."""
    with pytest.raises(TypeError, match="Tensor"):
        TensorDict(a=torch.ones(2), batch_size=[2]).logical_and(0)


def test_binary_with_other_keys_raises_key_error():
    """mod, rsub, logical_and and bitwise_and with other keys raise KeyError."""
    td = TensorDict(
        a=torch.ones(2, dtype=torch.int64), b=torch.ones(2, dtype=torch.int64), batch_size=[2]
    )
    other = TensorDict(a=torch.ones(2, dtype=torch.int64), batch_size=[2])
    for name in ("mod", "rsub", "logical_and", "bitwise_and"):
        with pytest.raises(KeyError, match="b"):
            getattr(td, name)(other)


def test_default_intersection_keeps_the_shared_keys():
    """default="intersection" keeps only the keys both tensordicts hold."""
    td = TensorDict(a=torch.ones(2), b=torch.ones(2), batch_size=[2])
    other = TensorDict(a=torch.ones(2), d=torch.ones(2), batch_size=[2])
    out = td.logical_and(other, default="intersection")
    assert list(out.keys()) == ["a"]
    assert list(td.rsub(other, default="intersection").keys()) == ["a"]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=5),
    st.integers(1, 9),
)
def test_mod_and_bitwise_and_match_torch_on_any_integers(values, divisor):
    """mod and bitwise_and of each leaf are torch's, for any integers."""
    x = torch.tensor(values)
    td = TensorDict(x=x, nested={"y": x + 1}, batch_size=[len(values)])
    assert torch.equal(td.mod(divisor)["x"], torch.remainder(x, divisor))
    assert torch.equal(td.mod(divisor)["nested", "y"], torch.remainder(x + 1, divisor))
    mask = torch.tensor(divisor)
    assert torch.equal(td.bitwise_and(mask)["nested", "y"], torch.bitwise_and(x + 1, mask))


@pytest.mark.parametrize("kind", KINDS)
def test_softmax_runs_along_a_batch_dim(kind, tmp_path):
    """softmax(dim) normalises each leaf along the batch dim, -1 meaning the last batch dim."""
    obj, _ = operands(kind, tmp_path)
    for dim in (0, -1):
        out = obj.softmax(dim)
        for key in ("a", "b"):
            assert torch.allclose(leaf(out, key), torch.softmax(leaf(obj, key), 0))


def test_softmax_dtype_casts_first():
    """softmax(dim, dtype) gives leaves of that dtype."""
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert td.softmax(0, dtype=torch.float64)["a"].dtype == torch.float64


def test_softmax_out_of_range_dim_raises_index_error():
    """softmax with a dim outside the batch dims raises IndexError."""
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    with pytest.raises(IndexError, match="out of range|Incompatible dim"):
        td.softmax(1)


def test_softmax_with_a_str_dim_raises_value_error():
    """softmax with a non-int dim raises ValueError."""
    with pytest.raises(ValueError, match="int"):
        TensorDict(a=torch.zeros(2), batch_size=[2]).softmax("a")


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("kind", KINDS)
def test_cummax_and_cummin_give_values_and_indices(kind, name, tmp_path):
    """cummax/cummin(dim) give torch's running values and indices for each leaf."""
    obj = build(kind, torch.tensor([[1.0, 3.0], [0.0, 5.0]]), torch.tensor([2.0, 1.0]), tmp_path)
    out = getattr(obj, name)(0)
    for key in ("a", "b"):
        expected = getattr(torch, name)(leaf(obj, key), 0)
        assert torch.equal(leaf(out.values, key), expected.values)
        assert torch.equal(leaf(out.indices, key), expected.indices)
    values = getattr(obj, name)(0, return_indices=False)
    assert torch.equal(leaf(values, "a"), out.values.get("a"))


def test_cummax_reduce_runs_over_the_concatenated_leaves():
    """cummax(dim, reduce=True) is torch.cummax of the leaves concatenated along dim."""
    td = TensorDict(a=torch.tensor([[1.0, 3.0]]), b=torch.tensor([[2.0, 4.0]]), batch_size=[1, 2])
    out = td.cummax(1, reduce=True)
    assert out.values.tolist() == [[1.0, 3.0, 3.0, 4.0]]
    assert out.indices.tolist() == [[0, 1, 1, 3]]


def test_cummax_out_of_range_dim_raises_index_error():
    """cummax with a dim outside the batch dims raises IndexError."""
    with pytest.raises(IndexError, match="out of range|Incompatible dim"):
        TensorDict(a=torch.zeros(2, 3), batch_size=[2]).cummax(1)


def test_cummax_with_a_float_dim_raises_type_error():
    """cummax with a float dim raises TypeError."""
    with pytest.raises(TypeError, match="int"):
        TensorDict(a=torch.zeros(2), batch_size=[2]).cummax(0.5)


QUANTILE_DATA = torch.tensor([[1.0, 3.0, 2.0], [0.0, 5.0, 1.0]])


@pytest.mark.parametrize("kind", KINDS)
def test_quantile_over_a_batch_dim(kind, tmp_path):
    """quantile(q, dim) is torch.quantile of each leaf along that batch dim."""
    obj = build(kind, QUANTILE_DATA, torch.tensor([1.0, 2.0]), tmp_path)
    out = obj.quantile(0.5, dim=0)
    assert out.batch_size == torch.Size([])
    assert torch.equal(leaf(out, "a"), torch.quantile(QUANTILE_DATA, 0.5, dim=0))
    assert obj.quantile(0.5, dim=0, keepdim=True).batch_size == torch.Size([1])


def test_quantile_without_dim_reduces_each_leaf_whole():
    """quantile(q) reduces each leaf over all its elements, batch size []."""
    td = TensorDict(a=QUANTILE_DATA, batch_size=[2, 3])
    out = td.quantile(0.5)
    assert out.batch_size == torch.Size([])
    assert out["a"] == torch.quantile(QUANTILE_DATA, 0.5)
    assert td.quantile(0.5, dim=1)["a"].tolist() == [2.0, 1.0]


def test_quantile_reduce_gives_one_tensor():
    """quantile(q, reduce=True) is the quantile of all the leaves' elements together."""
    td = TensorDict(a=QUANTILE_DATA, b=torch.full((2, 3), 9.0), batch_size=[2, 3])
    expected = torch.quantile(torch.cat([QUANTILE_DATA.reshape(-1), torch.full((6,), 9.0)]), 0.5)
    assert torch.equal(td.quantile(0.5, reduce=True), expected)
    assert td.quantile(0.5, dim=1, reduce=True).tolist() == [6.0, 7.0]


def test_quantile_with_several_q_adds_a_leading_dim():
    """A tensor of quantiles adds a leading batch dim."""
    td = TensorDict(a=QUANTILE_DATA, batch_size=[2, 3])
    q = torch.tensor([0.25, 0.75])
    out = td.quantile(q, dim=1)
    assert out.batch_size == torch.Size([2, 2])
    assert torch.equal(out["a"], torch.quantile(QUANTILE_DATA, q, dim=1))


def test_quantile_feature_reduces_the_feature_dims():
    """quantile(q, dim="feature") reduces each leaf's feature dims, keeping the batch size."""
    a = torch.arange(24.0).reshape(2, 3, 4)
    td = TensorDict(a=a, b=torch.zeros(2, 3), batch_size=[2, 3])
    out = td.quantile(0.5, dim="feature")
    assert out.batch_size == torch.Size([2, 3])
    assert torch.equal(out["a"], torch.quantile(a, 0.5, dim=-1))


def _nested_feature_td():
    return TensorDict(
        a=torch.arange(24.0).reshape(2, 3, 4),
        b=TensorDict(
            c=torch.arange(60.0).reshape(2, 3, 5, 2), d=torch.ones(2, 3, 5), batch_size=[2, 3, 5]
        ),
        batch_size=[2, 3],
        names=["x", "y"],
    )


@pytest.mark.parametrize("name", ["sum", "nansum", "mean", "nanmean", "std", "var", "prod"])
def test_reductions_over_the_feature_dims(name):
    """dim="feature" reduces the dims past each level's own batch dims; batch sizes are kept."""
    td = _nested_feature_td()
    out = getattr(td, name)(dim="feature")
    fn = getattr(torch, name)
    assert out.batch_size == td.batch_size and out["b"].batch_size == td["b"].batch_size
    assert torch.allclose(out["a"], fn(td["a"], dim=-1), equal_nan=True)
    assert torch.allclose(out["b", "c"], fn(td["b", "c"], dim=-1), equal_nan=True)
    assert out["b", "d"].shape == td["b"].batch_size


def test_quantile_feature_keeps_each_level_batch_size():
    """quantile(q, dim="feature") on a nested tensordict: a sub-tensordict keeps its batch size."""
    td = _nested_feature_td()
    out = td.quantile(0.5, dim="feature")
    assert out["b"].batch_size == td["b"].batch_size
    assert torch.equal(out["b", "c"], torch.quantile(td["b", "c"], 0.5, dim=-1))


def test_feature_reduction_with_reduce_gives_one_tensor_of_the_batch_size():
    """dim="feature", reduce=True reduces every leaf's features together into one tensor."""
    td = TensorDict(a=torch.ones(3, 4), b=torch.zeros(3, 4, 2), batch_size=[3])
    assert torch.allclose(td.mean(dim="feature", reduce=True), torch.full((3,), 4 / 12))


@pytest.mark.parametrize("name", ["sum", "mean", "std", "prod", "amax"])
def test_reduce_with_a_batch_dim_joins_the_leaves_along_it(name):
    """reduce=True with an int dim concatenates the leaves along it, then reduces one tensor."""
    a, c = torch.rand(3, 4, 5), torch.rand(3, 4, 5)
    td = TensorDict(a=a, b=TensorDict(c=c, batch_size=[3, 4, 5]), batch_size=[3, 4])
    expected = getattr(torch, name)(torch.cat([a, c], 1), dim=1)
    assert torch.allclose(getattr(td, name)(dim=1, reduce=True), expected)


def test_feature_reduction_refuses_keepdim():
    """dim="feature" keeps the batch dims: keepdim=True is a TypeError."""
    with pytest.raises(TypeError):
        _nested_feature_td().sum(dim="feature", keepdim=True)


def test_quantile_key_transform_renames_the_leaves():
    """key_transform renames each result leaf."""
    td = TensorDict(a=QUANTILE_DATA, batch_size=[2, 3])
    assert list(td.quantile(0.5, key_transform=lambda k: f"{k}_median").keys()) == ["a_median"]


def test_quantile_of_integers_raises_runtime_error():
    """quantile of an integer leaf raises RuntimeError, as torch.quantile does."""
    with pytest.raises(RuntimeError, match="float"):
        TensorDict(a=torch.arange(3), batch_size=[3]).quantile(0.5)


def test_quantile_out_of_range_dim_raises_index_error():
    """quantile with a dim outside the batch dims raises IndexError."""
    with pytest.raises(IndexError, match="out of range|Incompatible dim"):
        TensorDict(a=QUANTILE_DATA, batch_size=[2, 3]).quantile(0.5, dim=2)


# ------------------------------------------------------------------------------ tensorclass
def test_tensorclass_results_are_instances_of_the_class():
    """Methods returning tensordicts give tensorclass instances; data_ptr gives a TensorDict."""
    obj = Pair(a=torch.zeros(2, 3), b=torch.zeros(2), batch_size=[2])
    assert isinstance(obj.float64(), Pair)
    assert isinstance(obj.cummax(0).values, Pair)
    assert isinstance(obj.data_ptr(), TensorDict)
    assert obj.param_count() == 8


def test_a_tensorclass_field_may_be_named_data():
    """A tensorclass may have a field named data, which wins over the property."""

    @tensorclass
    class Holder:
        data: torch.Tensor

    holder = Holder(data=torch.ones(2), batch_size=[2])
    assert torch.equal(holder.data, torch.ones(2))


def test_a_tensorclass_field_may_not_be_named_like_a_cast():
    """A field named like a cast method (float32) is refused without shadow."""
    with pytest.raises(AttributeError, match="float32"):

        @tensorclass
        class Bad:
            float32: torch.Tensor


def test_lazy_stack_results_keep_the_values():
    """A lazy stack's cast and predicate results read as the stacked leaves'."""
    stack = lazy_stack(
        [TensorDict(a=torch.tensor([1.0])), TensorDict(a=torch.tensor([float("nan")]))]
    )
    assert isinstance(stack, LazyStackedTensorDict)
    assert stack.isnan()["a"].tolist() == [[False], [True]]
    assert stack.int64()["a"].dtype == torch.int64


def test_complex32_cast():
    """complex32() casts every tensor leaf to torch.complex32."""
    td = TensorDict({"a": torch.ones(2), "b": torch.arange(2)}, [2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: ComplexHalf is experimental
        out = td.complex32()
    assert out["a"].dtype == torch.complex32 and out["b"].dtype == torch.complex32


@pytest.mark.parametrize("name", ["qint8", "qint32", "quint8", "quint4x2"])
def test_quantized_casts_raise(name):
    """A plain cast to a quantized dtype cannot work: RuntimeError about quantized tensors."""
    td = TensorDict({"a": torch.ones(2)}, [2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(RuntimeError, match="quantized"):
            getattr(td, name)()


# ------------------------------------------------------------------------------ operand kinds
def test_a_tensorclass_operand_gives_each_leaf_its_own():
    """A tensorclass operand acts through its tensordict: each leaf meets the field of its key."""
    td = TensorDict(a=torch.tensor([1.0, 2.0]), b=torch.tensor([4.0, 6.0]), batch_size=[2])
    pair = Pair(a=torch.tensor([10.0, 20.0]), b=torch.tensor([1.0, 2.0]), batch_size=[2])
    assert (td + pair)["a"].tolist() == [11.0, 22.0]
    assert td.sub(pair)["b"].tolist() == [3.0, 4.0]
    assert td.mod(pair)["b"].tolist() == [0.0, 0.0]
    assert td.addcmul(pair, pair)["b"].tolist() == [5.0, 10.0]
    assert td.new_tensor(pair)["a"].tolist() == [10.0, 20.0]
    td.mul_(pair)
    assert td["a"].tolist() == [10.0, 40.0]


def test_in_place_with_a_tensordict_operand_writes_a_lazy_stack_s_members():
    """stack.add_(td) writes into each member's own tensors, which the members then show."""
    members = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2))]
    stack = lazy_stack(members)
    stack.add_(TensorDict(a=torch.tensor([[1.0, 1.0], [2.0, 2.0]]), batch_size=[2]))
    assert members[0]["a"].tolist() == [1.0, 1.0] and members[1]["a"].tolist() == [2.0, 2.0]


def test_ops_along_a_batch_dim_of_a_lazy_stack_match_the_dense_ones():
    """softmax, cummax and quantile of a lazy stack give what its contiguous copy gives."""
    members = [TensorDict(a=torch.tensor([1.0, 3.0])), TensorDict(a=torch.tensor([2.0, 0.0]))]
    stack, dense = lazy_stack(members), lazy_stack(members).contiguous()
    assert torch.equal(stack.softmax(0)["a"], dense.softmax(0)["a"])
    assert torch.equal(stack.cummax(0).values["a"], dense.cummax(0).values["a"])
    assert torch.equal(stack.quantile(0.5, dim=0)["a"], dense.quantile(0.5, dim=0)["a"])
