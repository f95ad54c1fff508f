"""Building tensordicts: the constructor, batch size checks, factories and repr."""

import pytest
import torch

from tensordict import TensorDict

from conftest import ours_only

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


def make_td():
    return TensorDict(
        {
            "a": torch.arange(12.0).reshape(3, 4),
            "b": {"c": torch.arange(15).reshape(3, 5)},
        },
        batch_size=[3],
    )


# --- constructor -----------------------------------------------------------------


def test_nested_dict_becomes_nested_tensordict():
    """A nested dict source becomes a sub-tensordict with the parent's batch size."""
    td = make_td()
    assert isinstance(td["b"], TensorDict)
    assert td["b"].batch_size == torch.Size([3])
    assert td["b", "c"].shape == (3, 5)


def test_values_are_stored_without_copy():
    """Tensors given to the constructor are stored as they are, not copied."""
    a = torch.zeros(3, 4)
    c = torch.zeros(3)
    td = TensorDict({"a": a, "b": {"c": c}}, batch_size=[3])
    assert td["a"] is a
    assert td["b", "c"] is c


@pytest.mark.parametrize("batch_size", [[3], (3,), 3, torch.Size([3])])
def test_batch_size_forms(batch_size):
    """batch_size accepts a list, a tuple, an int and a torch.Size."""
    td = TensorDict({"a": torch.zeros(3, 2)}, batch_size=batch_size)
    assert td.batch_size == torch.Size([3])
    assert isinstance(td.batch_size, torch.Size)


def test_batch_size_defaults_to_empty():
    """Without batch_size, the batch size is empty."""
    td = TensorDict({"a": torch.zeros(3, 4)})
    assert td.batch_size == torch.Size([])


def test_kwargs_become_entries():
    """Keyword arguments other than the parameters become entries."""
    td = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(2, 3)}, batch_size=2)
    assert set(td.keys()) == {"a", "b"}
    assert td["b"].batch_size == torch.Size([2])
    assert td["b", "c"].shape == (2, 3)


def test_source_and_keyword_entries_together_raise_value_error():
    """TensorDict(source, key=value) raises ValueError: the entries come from one of the two."""
    with pytest.raises(ValueError, match="not both"):
        TensorDict({"b": torch.zeros(2)}, a=torch.zeros(2), batch_size=[2])
    with pytest.raises(ValueError, match="not both"):
        TensorDict(a=1, source={"b": 2})


def test_tuple_keys_in_source_create_nested_entries():
    """A tuple key in the source creates the nested sub-tensordicts."""
    td = TensorDict({("a", "b"): torch.zeros(2)}, batch_size=[2])
    assert isinstance(td["a"], TensorDict)
    assert td["a"].batch_size == torch.Size([2])
    assert td["a", "b"].shape == (2,)


def test_python_scalars_become_tensors():
    """Python numbers and bools in a batchless source become 0-dim tensors."""
    td = TensorDict({"i": 1, "f": 1.5, "b": True}, batch_size=[])
    assert td["i"].dtype == torch.int64
    assert td["f"].dtype == torch.float32
    assert td["b"].dtype == torch.bool
    assert td["i"].item() == 1
    assert td["f"].item() == 1.5


def test_batch_size_mismatch_raises_naming_the_key():
    """A leaf whose leading dims do not match batch_size is refused, naming the key."""
    with pytest.raises(RuntimeError, match="bad"):
        TensorDict({"good": torch.zeros(4, 3), "bad": torch.zeros(3, 4)}, batch_size=[4])


def test_batch_size_longer_than_leaf_raises():
    """A leaf with fewer dims than the batch size is refused."""
    with pytest.raises(RuntimeError, match="short"):
        TensorDict({"short": torch.zeros(3)}, batch_size=[3, 4])


def test_batch_size_checked_on_nested_leaves():
    """Leaves of nested dicts are checked against the batch size too."""
    with pytest.raises(RuntimeError, match="deep"):
        TensorDict({"a": torch.zeros(3, 4), "b": {"deep": torch.zeros(2, 4)}}, batch_size=[3])


def test_batch_size_checked_on_nested_tensordict():
    """A sub-tensordict whose batch size does not start with the parent's is refused."""
    sub = TensorDict({"c": torch.zeros(2, 4)}, batch_size=[2])
    with pytest.raises(RuntimeError):
        TensorDict({"a": torch.zeros(3, 4), "b": sub}, batch_size=[3])


def test_nested_tensordict_keeps_longer_batch_size():
    """A sub-tensordict keeps its own batch size when it extends the parent's."""
    sub = TensorDict({"c": torch.zeros(3, 4, 5)}, batch_size=[3, 4])
    td = TensorDict({"b": sub}, batch_size=[3])
    assert td["b"].batch_size == torch.Size([3, 4])


def test_batch_size_minus_one_marks_a_ragged_dim():
    """-1 in a batch size stands for a ragged dim, matched by a nested tensor's ragged size."""
    rows = torch.nested.nested_tensor([torch.zeros(3, 4, 5), torch.zeros(3, 6, 5)])
    td = TensorDict({"rows": rows}, batch_size=[2, 3, -1])
    assert td.batch_size == torch.Size([2, 3, -1])
    with pytest.raises(RuntimeError, match="'dense'"):
        td["dense"] = torch.zeros(2, 3, 4)
    empty = TensorDict({}, batch_size=[3])
    empty.batch_size = [3, -1]
    assert empty.batch_size == torch.Size([3, -1])


@ours_only  # the reference takes any negative size
@pytest.mark.parametrize("batch_size", [[-2], [3, -5]])
def test_batch_size_below_minus_one_raises(batch_size):
    """A size below -1 in a batch size is a ValueError quoting the batch size."""
    with pytest.raises(ValueError, match="below -1"):
        TensorDict({}, batch_size=batch_size)
    with pytest.raises(ValueError, match="below -1"):
        TensorDict({}, batch_size=[3]).batch_size = batch_size


def test_non_mapping_source_raises():
    """A source that is not a mapping is refused."""
    with pytest.raises(ValueError):
        TensorDict([torch.zeros(2), torch.zeros(2)], batch_size=[])


def test_failed_construction_leaves_source_unchanged():
    """A refused construction does not modify the source dict."""
    source = {"a": torch.zeros(3), "b": {"c": torch.zeros(2)}}
    with pytest.raises(RuntimeError):
        TensorDict(source, batch_size=[3])
    assert set(source) == {"a", "b"}
    assert set(source["b"]) == {"c"}


def test_lock_argument():
    """lock=True returns a locked tensordict."""
    td = TensorDict({"a": torch.zeros(2)}, batch_size=[2], lock=True)
    assert td.is_locked


# --- device ----------------------------------------------------------------------


def test_device_defaults_to_none():
    """Without device, the tensordict has no device."""
    assert make_td().device is None


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_device_argument(device):
    """device is stored as a torch.device and applies to sub-tensordicts."""
    td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3)}}, [3], device=device)
    assert td.device == torch.device("cpu")
    assert td["b"].device == torch.device("cpu")
    assert td["a"].device == torch.device("cpu")


def test_device_kept_after_set():
    """Setting a new entry keeps the device of the tensordict."""
    td = TensorDict({"a": torch.zeros(3)}, [3], device="cpu")
    td.set("x", torch.zeros(3))
    assert td.device == torch.device("cpu")
    assert td["x"].device == torch.device("cpu")


# --- names -----------------------------------------------------------------------


def test_names_default_to_none():
    """Without names, each batch dim has the name None."""
    td = TensorDict({"a": torch.zeros(3, 4)}, batch_size=[3, 4])
    assert td.names == [None, None]


def test_names_argument():
    """names, possibly partial, are stored and passed to sub-tensordicts."""
    td = TensorDict(
        {"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, 4)}}, [3, 4], names=["x", None]
    )
    assert td.names == ["x", None]
    assert td["b"].names == ["x", None]


def test_names_wrong_length_raises():
    """names of a different length than the batch dims are refused."""
    with pytest.raises(ValueError):
        TensorDict({"a": torch.zeros(3)}, batch_size=[3], names=["x", "y"])


def test_names_must_be_unique():
    """Two batch dims cannot have the same name."""
    with pytest.raises(ValueError, match="x"):
        TensorDict({"a": torch.zeros(3, 3)}, batch_size=[3, 3], names=["x", "x"])


# --- from_dict / to_dict ---------------------------------------------------------


def test_from_dict_with_batch_size():
    """from_dict with batch_size gives that batch size to every level."""
    td = TensorDict.from_dict(
        {"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, 4, 5)}}, batch_size=[3]
    )
    assert td.batch_size == torch.Size([3])
    assert td["b"].batch_size == torch.Size([3])
    assert td["b", "c"].shape == (3, 4, 5)


def test_from_dict_auto_batch_size():
    """from_dict(auto_batch_size=True) uses the leading dims shared by all leaves."""
    td = TensorDict.from_dict(
        {"a": torch.zeros(3, 4), "b": torch.zeros(3, 4, 2)}, auto_batch_size=True
    )
    assert td.batch_size == torch.Size([3, 4])


def test_from_dict_batch_dims():
    """from_dict(batch_dims=n) uses the first n shared leading dims."""
    td = TensorDict.from_dict({"a": torch.zeros(3, 4), "b": torch.zeros(3, 4, 2)}, batch_dims=1)
    assert td.batch_size == torch.Size([3])


def test_from_dict_device_and_names():
    """from_dict passes device and names through."""
    td = TensorDict.from_dict({"a": torch.zeros(3, 4)}, batch_size=[3], device="cpu", names=["x"])
    assert td.device == torch.device("cpu")
    assert td.names == ["x"]


def test_from_dict_bad_batch_size_raises():
    """from_dict refuses a batch size that the leaves do not have."""
    with pytest.raises(RuntimeError):
        TensorDict.from_dict({"a": torch.zeros(3, 4)}, batch_size=[5])


def test_to_dict_gives_nested_plain_dicts():
    """to_dict returns nested plain dicts holding the same tensors."""
    td = make_td()
    d = td.to_dict()
    assert type(d) is dict
    assert type(d["b"]) is dict
    assert set(d) == {"a", "b"}
    assert d["a"] is td["a"]
    assert d["b"]["c"] is td["b", "c"]


def test_from_dict_to_dict_round_trip():
    """to_dict then from_dict gives back an equal tensordict."""
    td = make_td()
    back = TensorDict.from_dict(td.to_dict(), batch_size=[3])
    assert set(back.keys(True, True)) == set(td.keys(True, True))
    assert (back == td).all()


# --- empty / fromkeys ------------------------------------------------------------


def test_empty_tensordict():
    """TensorDict() has no keys, an empty batch size and is_empty()."""
    td = TensorDict()
    assert list(td.keys()) == []
    assert td.batch_size == torch.Size([])
    assert td.is_empty()


def test_empty_method_keeps_batch_size_drops_keys():
    """empty() returns a tensordict with the same batch size and no entries."""
    td = make_td()
    out = td.empty()
    assert out.batch_size == td.batch_size
    assert list(out.keys()) == []
    assert set(td.keys()) == {"a", "b"}


def test_empty_recurse_keeps_structure():
    """empty(recurse=True) keeps the sub-tensordicts, without leaves."""
    out = make_td().empty(recurse=True)
    assert list(out.keys()) == ["b"]
    assert out["b"].batch_size == torch.Size([3])
    assert list(out["b"].keys()) == []


def test_fromkeys_default_value():
    """fromkeys(keys) fills every key with the value 0."""
    td = TensorDict.fromkeys(["a", "b"])
    assert set(td.keys()) == {"a", "b"}
    assert td["a"].item() == 0


def test_fromkeys_nested_keys_and_value():
    """fromkeys accepts nested keys and a value."""
    td = TensorDict.fromkeys(["a", ("b", "c")], 1.5)
    assert set(td.keys(True, True)) == {"a", ("b", "c")}
    assert td["b", "c"].item() == 1.5
    assert td.batch_size == torch.Size([])


# --- factories -------------------------------------------------------------------


@pytest.mark.parametrize(
    "factory, fill",
    [
        (lambda td: td.new_zeros(2, 5), 0),
        (lambda td: td.new_ones(2, 5), 1),
        (lambda td: td.new_full((2, 5), 3), 3),
    ],
)
def test_new_factories_replace_batch_size(factory, fill):
    """new_zeros/new_ones/new_full take the batch size and keep the feature dims and dtypes."""
    td = make_td()
    out = factory(td)
    assert out.batch_size == torch.Size([2, 5])
    assert out["b"].batch_size == torch.Size([2, 5])
    assert out["a"].shape == (2, 5, 4)
    assert out["b", "c"].shape == (2, 5, 5)
    assert out["a"].dtype == torch.float32
    assert out["b", "c"].dtype == torch.int64
    assert (out["a"] == fill).all()
    assert (out["b", "c"] == fill).all()


def test_new_empty_shapes():
    """new_empty gives entries of the new batch size and the old feature dims."""
    out = make_td().new_empty(2)
    assert out.batch_size == torch.Size([2])
    assert out["a"].shape == (2, 4)
    assert out["b", "c"].shape == (2, 5)


def test_new_empty_with_empty_lazy_keeps_lazy_stacks_with_empty_members():
    """new_empty(empty_lazy=True) keeps each lazy stack's dim, with size[dim] members and no keys."""
    from tensordict import LazyStackedTensorDict, lazy_stack

    members = [TensorDict({"x": torch.ones(1)}, [1]) for _ in range(10)]
    td = TensorDict({"dense": torch.randn(1, 10), "sparse": lazy_stack(members, dim=1)}, [1, 10])
    for size in [(10, 1), (1, 100, 1)]:
        out = td.new_empty(size, empty_lazy=True)
        sparse = out["sparse"]
        assert isinstance(sparse, LazyStackedTensorDict) and sparse.stack_dim == 1
        assert sparse.batch_size == size and len(sparse.tensordicts) == size[1]
        assert sparse.is_empty() and out["dense"].shape == size
    assert not isinstance(td.new_empty((10, 1))["sparse"], LazyStackedTensorDict)
    top = lazy_stack(members).new_empty(4, 2, empty_lazy=True)
    assert isinstance(top, LazyStackedTensorDict) and top.batch_size == (4, 2)
    assert len(top.tensordicts) == 4 and top.is_empty()


def test_new_empty_with_empty_lazy_densifies_a_stack_whose_dim_the_size_lacks():
    """empty_lazy=True with a size too short for a lazy stack's dim gives a dense level."""
    from tensordict import lazy_stack

    stack = lazy_stack([TensorDict({"x": torch.ones(3)}, [3])] * 2, dim=1)
    out = stack.new_empty(4, empty_lazy=True)
    assert type(out) is TensorDict and out.batch_size == (4,) and out["x"].shape == (4,)


def test_new_zeros_with_empty_lazy_keeps_lazy_stacks_of_filled_members():
    """new_zeros(empty_lazy=True) keeps a lazy stack whose members are shaped like the first,
    and a masked write fills the chosen rows; a stack of values stays a stack of values."""
    from tensordict import LazyStackedTensorDict, NonTensorStack

    strings = NonTensorStack("a", "b", "c").unsqueeze(-1)
    td = TensorDict(a=TensorDict(b=strings, batch_size=(3,)), batch_size=(3,)).to_lazystack()
    out = td.new_zeros((4,), empty_lazy=True)
    assert isinstance(out, LazyStackedTensorDict) and len(out.tensordicts) == 4
    assert all(("a", "b") in m.keys(True) for m in out.tensordicts)
    out[torch.tensor([True, True, False, True])] = td
    assert out.get(("a", "b")).tolist() == [["a"], ["b"], ["a"], ["c"]]
    values = TensorDict(a=NonTensorStack("a", "b").unsqueeze(-1), batch_size=(2,))
    assert isinstance(values.new_empty((4,), empty_lazy=True).get("a"), NonTensorStack)


def test_new_zeros_dtype():
    """new_zeros(dtype=...) casts every entry."""
    out = make_td().new_zeros(4, dtype=torch.float64)
    assert out["a"].dtype == torch.float64
    assert out["b", "c"].dtype == torch.float64


def test_new_factories_leave_source_unchanged():
    """The factories do not modify the tensordict they are called on."""
    td = make_td()
    td.new_zeros(2)
    assert torch.equal(td["a"], torch.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize(
    "fn, fill",
    [
        (torch.zeros_like, 0),
        (torch.ones_like, 1),
        (lambda td: torch.full_like(td, 4.0), 4),
    ],
)
def test_torch_like_factories(fn, fill):
    """torch.zeros_like/ones_like/full_like keep keys, batch size, shapes and dtypes."""
    td = make_td()
    out = fn(td)
    assert isinstance(out, TensorDict)
    assert out.batch_size == td.batch_size
    assert set(out.keys(True, True)) == set(td.keys(True, True))
    for key in td.keys(True, True):
        assert out[key].shape == td[key].shape
        assert out[key].dtype == td[key].dtype
        assert (out[key] == fill).all()
    assert out["a"].data_ptr() != td["a"].data_ptr()


@pytest.mark.parametrize("factory", [torch.empty_like, torch.zeros_like, torch.rand_like])
@pytest.mark.parametrize("device", [None, "cpu", "meta"])
def test_like_factories_take_the_device_given(factory, device):
    """torch.*_like(td, device=...) puts the new tensordict (every level) on that device."""
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
    out = factory(td, device=device)
    expected = None if device is None else torch.device(device)
    assert out.device == expected and out["b"].device == expected
    if device is not None:
        assert out["a"].device == expected and out["b", "c"].device == expected


def test_empty_like_shapes():
    """torch.empty_like keeps keys, shapes and dtypes."""
    td = make_td()
    out = torch.empty_like(td)
    assert out.batch_size == td.batch_size
    assert out["b", "c"].shape == (3, 5)
    assert out["b", "c"].dtype == torch.int64


# --- auto_batch_size_ ------------------------------------------------------------


def test_auto_batch_size_uses_shared_leading_dims():
    """auto_batch_size_ sets the largest leading shape shared by all leaves, in place."""
    td = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"c": torch.zeros(3, 4)}}, batch_size=[])
    out = td.auto_batch_size_()
    assert out is td
    assert td.batch_size == torch.Size([3, 4])
    assert td["b"].batch_size == torch.Size([3, 4])


def test_auto_batch_size_stops_at_first_difference():
    """auto_batch_size_ stops at the first leading dim that the leaves disagree on."""
    td = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"d": torch.zeros(3, 2)}}, batch_size=[])
    td.auto_batch_size_()
    assert td.batch_size == torch.Size([3])


def test_auto_batch_size_batch_dims():
    """auto_batch_size_(batch_dims=n) keeps at most n dims."""
    td = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"c": torch.zeros(3, 4)}}, batch_size=[])
    td.auto_batch_size_(batch_dims=1)
    assert td.batch_size == torch.Size([3])


def test_auto_batch_size_no_common_dim():
    """Leaves without a common leading dim give an empty batch size."""
    td = TensorDict({"a": torch.zeros(3, 4), "b": torch.zeros(5)}, batch_size=[])
    td.auto_batch_size_()
    assert td.batch_size == torch.Size([])


def test_auto_batch_size_on_empty():
    """An empty tensordict keeps an empty batch size."""
    assert TensorDict().auto_batch_size_().batch_size == torch.Size([])


# --- repr ------------------------------------------------------------------------


def test_repr_shows_batch_size_keys_and_dtypes():
    """repr shows the class, batch size, each key and a short dtype."""
    td = TensorDict(
        {"alpha": torch.zeros(3, 4), "beta": {"gamma": torch.zeros(3, dtype=torch.int64)}}, [3]
    )
    text = repr(td)
    assert text.startswith("TensorDict(")
    assert "batch_size=[3]" in text
    for word in ("alpha", "beta", "gamma", "f32", "i64"):
        assert word in text


def test_repr_is_compact():
    """A small tensordict prints on one line and without tensor values."""
    td = TensorDict({"a": torch.full((3, 4), 123456.0)}, [3])
    text = repr(td)
    assert "\n" not in text
    assert "123456" not in text


def test_repr_shows_device_when_set():
    """repr names the device when the tensordict has one."""
    td = TensorDict({"x": torch.zeros(2, dtype=torch.float64)}, [2], device="cpu")
    assert "cpu" in repr(td)
    assert "f64" in repr(td)


def test_repr_of_empty():
    """An empty tensordict has a short repr with its batch size."""
    text = repr(TensorDict({}, [2]))
    assert "batch_size=[2]" in text
    assert "\n" not in text


def test_str_matches_repr():
    """str() is the same compact form as repr()."""
    td = make_td()
    assert str(td) == repr(td)


def test_from_dict_infers_the_batch_size_only_when_asked():
    """from_dict gives [] by default, the inferred batch size with auto_batch_size or batch_dims."""
    d = {"a": torch.zeros(3, 4)}
    assert TensorDict.from_dict(d).batch_size == torch.Size([])
    assert TensorDict.from_dict(d, auto_batch_size=True).batch_size == torch.Size([3, 4])
    assert TensorDict.from_dict(d, batch_dims=1).batch_size == torch.Size([3])


def test_a_sub_tensordict_with_a_shorter_batch_size_takes_the_parents():
    """A nested tensordict whose batch size is a prefix of the parent's is stored with the parent's."""
    inner = TensorDict(done=torch.ones(3, 1, dtype=torch.bool))
    td = TensorDict(obs=torch.ones(3, 4), next=inner, batch_size=[3])
    assert td["next"].batch_size == (3,)
    assert inner.batch_size == ()  # the tensordict given is left as it was
    td["other"] = TensorDict(a=torch.ones(3, 2, 5), batch_size=[3])
    deeper = TensorDict(n=TensorDict(a=torch.ones(3, 4, 2), batch_size=[3]), batch_size=[3, 4])
    assert deeper["n"].batch_size == (3, 4)


def test_a_sub_tensordict_that_cannot_take_the_batch_size_is_refused():
    """Leaves that do not start with the parent's batch size: RuntimeError naming the key."""
    with pytest.raises(RuntimeError, match="batch"):
        TensorDict(n=TensorDict(a=torch.ones(2)), batch_size=[3])


def test_auto_batch_size_limits_the_sub_tensordicts_too():
    """batch_dims caps every level; keep_compliant_size spares a sub-tensordict with enough dims."""
    sub = TensorDict(c=torch.zeros(3, 4, 6, 7), batch_size=[3, 4])
    td = TensorDict(a=torch.zeros(3, 4, 5), b=sub, batch_size=[])
    td.clone().auto_batch_size_()
    limited = td.clone().auto_batch_size_(1)
    assert limited.batch_size == torch.Size([3]) and limited["b"].batch_size == torch.Size([3])
    kept = td.clone().auto_batch_size_(1, keep_compliant_size=True)
    assert kept.batch_size == torch.Size([3]) and kept["b"].batch_size == torch.Size([3, 4])
    free = td.clone().auto_batch_size_(keep_compliant_size=True)
    assert free["b"].batch_size == torch.Size([3, 4, 6, 7])


def test_from_dict_with_both_batch_size_and_batch_dims_raises_value_error():
    """from_dict(batch_size=..., batch_dims=...) raises ValueError: one of the two says the batch size."""
    data = {"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, 4, 5)}}
    with pytest.raises(ValueError, match="both"):
        TensorDict.from_dict(data, batch_size=[3, 4], batch_dims=1)
    assert TensorDict.from_dict(data, batch_dims=1).batch_size == torch.Size([3])
