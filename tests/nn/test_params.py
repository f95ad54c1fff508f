"""tensordict.nn.params: TensorDictParams, a tensordict whose leaves are a module's parameters and buffers."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from torch import nn

import tensordict
from tensordict import TensorDict
from tensordict.nn import TensorDictParams

from conftest import ours_only


def _content():
    return TensorDict(
        {"a": torch.zeros(3), "b": {"c": torch.ones(3, 2)}, "i": torch.arange(3)}, [3]
    )


def _held(params):
    holder = nn.Module()
    holder.params = params
    return holder


def test_wraps_without_copying_and_converts_leaves():
    """The tensordict is wrapped as it is; float leaves become parameters, others buffers."""
    td = _content()
    params = TensorDictParams(td)
    assert params._param_td is td
    assert isinstance(td["a"], nn.Parameter) and isinstance(td["b", "c"], nn.Parameter)
    assert isinstance(td["i"], nn.Buffer) and not isinstance(td["i"], nn.Parameter)
    assert [n for n, _ in params.named_parameters()] == ["a", "b.c"]
    assert [n for n, _ in params.named_buffers()] == ["i"]


def test_no_convert_registers_buffers():
    """no_convert=True keeps parameters as they are and makes other tensors buffers."""
    params = TensorDictParams(
        TensorDict(p=nn.Parameter(torch.zeros(1)), f=torch.zeros(1)), no_convert=True
    )
    assert isinstance(params["p"], nn.Parameter)
    assert isinstance(params["f"], nn.Buffer) and not isinstance(params["f"], nn.Parameter)


def test_keyword_and_dict_constructors():
    """Entries as keywords or a dict; both forms at once are refused."""
    params = TensorDictParams(a=0, b=1.0)
    assert isinstance(params["a"], nn.Buffer) and isinstance(params["b"], nn.Parameter)
    assert isinstance(TensorDictParams({"b": 1.0})["b"], nn.Parameter)
    with pytest.raises(TypeError):
        TensorDictParams(TensorDict(), a=1.0)


def test_holder_module_sees_parameters_buffers_and_state_dict():
    """A module holding it lists its leaves, with nested keys joined by '.'."""
    holder = _held(TensorDictParams(_content()))
    assert [n for n, _ in holder.named_parameters()] == ["params.a", "params.b.c"]
    assert [n for n, _ in holder.named_buffers()] == ["params.i"]
    assert list(holder.state_dict()) == ["params.a", "params.b.c", "params.i"]


def test_optimizer_updates_the_wrapped_tensordict():
    """An optimizer over parameters() changes the values seen through the wrapper and the tensordict."""
    td = _content()
    params = TensorDictParams(td)
    optim = torch.optim.SGD(params.parameters(), lr=1.0)
    (params["a"].sum() + params["b", "c"].sum()).backward()
    optim.step()
    torch.testing.assert_close(td["a"].data, torch.full((3,), -1.0))
    torch.testing.assert_close(params["b", "c"].data, torch.zeros(3, 2))


def test_holder_load_state_dict_writes_in_place():
    """load_state_dict of the holder copies into the same parameter objects; missing keys are reported."""
    params = TensorDictParams(_content())
    holder = _held(params)
    ids = {id(v) for v in params.values(True, True)}
    holder.load_state_dict({k: v * 0 + 5 for k, v in holder.state_dict().items()})
    torch.testing.assert_close(params["b", "c"].data, torch.full((3, 2), 5.0))
    assert ids == {id(v) for v in params.values(True, True)}
    result = holder.load_state_dict({}, strict=False)
    assert sorted(result.missing_keys) == ["params.a", "params.b.c", "params.i"]
    with pytest.raises(RuntimeError, match="Missing key"):
        holder.load_state_dict({})


def test_own_state_dict_round_trip():
    """state_dict() / load_state_dict() on the wrapper use '.'-joined keys."""
    params = TensorDictParams(_content())
    state = {k: v + 1 for k, v in params.state_dict().items()}
    params.load_state_dict(state)
    torch.testing.assert_close(params["a"].data, torch.ones(3))


@pytest.mark.parametrize("cast,dtype", [("double", torch.float64), ("half", torch.float16)])
def test_holder_dtype_casts_reach_the_tensordict(cast, dtype):
    """holder.double() / half() change the leaves of the wrapped tensordict in place."""
    td = _content()
    params = TensorDictParams(td)
    getattr(_held(params), cast)()
    assert td["a"].dtype == dtype and isinstance(params["a"], nn.Parameter)
    assert td["i"].dtype == torch.int64
    assert [n for n, _ in params.named_parameters()] == ["a", "b.c"]


# The reference leaves a nested entry added by update() an unregistered plain tensor.
@ours_only
def test_set_converts_and_registers_new_entries():
    """New entries, nested or not, by set, item assignment or update, are registered."""
    params = TensorDictParams(_content())
    params["x"] = torch.zeros(3)
    params.set(("b", "d"), torch.zeros(3))
    params.update({"b": {"e": torch.zeros(3)}, "n": torch.zeros(3, dtype=torch.long)})
    assert isinstance(params["x"], nn.Parameter) and isinstance(params["b", "e"], nn.Parameter)
    assert {"x", "b.d", "b.e"} <= {n for n, _ in params.named_parameters()}
    assert "n" in dict(params.named_buffers())
    del params["x"]
    params.pop(("b", "d"))
    assert "x" not in dict(params.named_parameters()) and "b.d" not in dict(
        params.named_parameters()
    )


# The reference refuses row assignment into parameters (an in-place write on a leaf).
@ours_only
def test_in_place_writes_go_to_the_parameter_memory():
    """set_, update_, row assignment, zero_ and copy_ write into the parameters outside autograd."""
    params = TensorDictParams(_content())
    a = params["a"]
    params.set_("a", torch.full((3,), 2.0))
    params.update_({"b": {"c": torch.full((3, 2), 3.0)}})
    params[0] = TensorDict({"a": 5.0, "b": {"c": torch.zeros(2)}, "i": 7}, [])
    assert params["a"] is a
    assert params["a"].data.tolist() == [5.0, 2.0, 2.0] and params["i"].tolist() == [7, 1, 2]
    params.copy_(params.data.apply(lambda t: t * 0))
    assert params["b", "c"].data.abs().sum() == 0
    params.apply(lambda t: t.add_(1) if t.is_floating_point() else t, inplace=True)
    assert params["a"] is a and params["a"].data.tolist() == [1.0, 1.0, 1.0]


def test_lock_refuses_new_keys_but_not_in_place_writes():
    """A locked wrapper refuses new keys; set_ still writes."""
    params = TensorDictParams(_content()).lock_()
    assert params.is_locked
    with pytest.raises(RuntimeError):
        params["z"] = torch.zeros(3)
    params.set_("a", torch.ones(3))
    assert params.unlock_().is_locked is False
    params["z"] = torch.zeros(3)


def test_lock_true_locks_the_content_only():
    """lock=True locks the wrapped tensordict; the wrapper stays writable."""
    params = TensorDictParams(TensorDict(a=torch.zeros(2)), lock=True)
    assert not params.is_locked and params._param_td.is_locked
    params["b"] = torch.zeros(2)
    assert params._param_td.is_locked and "b" in params.keys()


def test_reads_give_tensordicts_and_parameters():
    """Entries are the parameters; indexing and apply give plain TensorDicts."""
    params = TensorDictParams(_content())
    assert isinstance(params["b", "c"], nn.Parameter)
    assert type(params["b"]) is TensorDict
    assert type(params[0]) is TensorDict
    assert type(params.apply(lambda t: t + 1)) is TensorDict
    assert type(params.select("a")) is TensorDict and type(params.data) is TensorDict


def test_clone_keeps_ties_and_copy_shares_leaves():
    """clone() makes new detached leaves (tied ones stay tied); copy() shares them."""
    shared = nn.Parameter(torch.zeros(2))
    params = TensorDictParams(TensorDict(a=shared, n={"a": shared}), no_convert=True)
    clone = params.clone()
    assert (
        type(clone) is TensorDictParams
        and clone["a"] is clone["n", "a"]
        and clone["a"] is not shared
    )
    assert clone["a"].requires_grad
    assert params.copy()["a"] is shared


def test_to_dtype_keeps_parameters():
    """to(dtype) gives a TensorDictParams whose float leaves are parameters."""
    params = TensorDictParams(_content())
    out = params.to(torch.float64)
    assert (
        type(out) is TensorDictParams
        and isinstance(out["a"], nn.Parameter)
        and out["a"].dtype == torch.float64
    )


def test_get_post_hook():
    """Hooks registered with register_get_post_hook run on every leaf read."""
    params = TensorDictParams(TensorDict(a={"b": torch.zeros(())}, c=torch.zeros(())))
    params.register_get_post_hook(lambda p, value: value.data)
    assert not params["c"].requires_grad and not params.get(("a", "b")).requires_grad
    assert all(not v.requires_grad for v in params.values(True, True))
    with pytest.raises(ValueError):
        params.register_get_post_hook(3)


def test_pickle_and_deepcopy():
    """Pickling and deepcopy give a TensorDictParams with registered, independent leaves."""
    params = TensorDictParams(_content())
    loaded = pickle.loads(pickle.dumps(params))
    assert type(loaded) is TensorDictParams and [n for n, _ in loaded.named_parameters()] == [
        "a",
        "b.c",
    ]
    holder = copy.deepcopy(_held(params))
    assert holder.params["a"] is not params["a"]
    torch.testing.assert_close(holder.params["a"].data, params["a"].data)


def test_memmap_gives_a_tensordict_and_memmap_in_place_raises(tmp_path):
    """memmap() writes a TensorDict; memmap_() and map() refuse."""
    params = TensorDictParams(_content())
    out = params.memmap(tmp_path / "p")
    assert type(out) is TensorDict and out.is_memmap()
    assert torch.equal(TensorDict.load_memmap(tmp_path / "p")["b", "c"], torch.ones(3, 2))
    with pytest.raises(RuntimeError):
        params.memmap_()
    with pytest.raises(RuntimeError):
        params.map(lambda td: td)


def test_from_module_as_module():
    """from_module/from_modules(as_module=True), methods and functions, give a TensorDictParams."""
    module = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    params = TensorDict.from_module(module, as_module=True)
    assert type(params) is TensorDictParams
    assert params["0", "weight"] is module[0].weight
    assert isinstance(params["1", "running_mean"], nn.Buffer)
    function_form = tensordict.from_module(module, as_module=True)
    assert type(function_form) is TensorDictParams and function_form._param_td.is_locked
    assert (
        type(tensordict.from_modules(nn.Linear(1, 1), nn.Linear(1, 1), as_module=True))
        is TensorDictParams
    )
    stacked = TensorDict.from_modules(nn.Linear(2, 3), nn.Linear(2, 3), as_module=True)
    assert type(stacked) is TensorDictParams and stacked.batch_size == (2,)
    assert [n for n, _ in stacked.named_parameters()] == ["weight", "bias"]


def test_to_module_with_a_tensordict_params():
    """A TensorDictParams loads into a module like a TensorDict."""
    module = nn.Linear(2, 3)
    zeros = TensorDictParams(TensorDict.from_module(module).data.clone().zero_())
    old = zeros.to_module(module)
    assert module.weight.abs().sum() == 0 and module.weight is zeros["weight"]
    old.to_module(module)
    assert module.weight is old["weight"]


def test_repr():
    """The repr shows the wrapped tensordict."""
    assert repr(TensorDictParams(TensorDict(a=torch.zeros(2)))).startswith(
        "TensorDictParams(params=TensorDict("
    )
