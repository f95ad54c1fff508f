"""tensordict.nn.common: TensorDictModuleBase, TensorDictModule, the wrappers and as_tensordict_module."""

from __future__ import annotations

import pickle
import warnings

import pytest
import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import (
    TensorDictModule,
    TensorDictModuleBase,
    TensorDictModuleWrapper,
    WrapModule,
    as_tensordict_module,
)


def _double(x):
    return x * 2


def test_linear_module_reads_and_writes_keys():
    """The wrapped module reads in_keys and writes out_keys into the input, returned."""
    module = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
    td = TensorDict(x=torch.ones(2, 3), batch_size=[2])
    out = module(td)
    assert out is td
    assert td["y"].shape == (2, 4)


def test_keys_may_be_single_and_nested():
    """A single key becomes a list; nested tuples are unravelled."""
    module = TensorDictModule(
        lambda x: (x - 1, x + 1), in_keys=("in", ("x",)), out_keys=[("out", "lo"), ("out", "hi")]
    )
    assert module.in_keys == [("in", "x")]
    td = module(TensorDict({("in", "x"): torch.zeros(())}))
    assert (td["out", "lo"].item(), td["out", "hi"].item()) == (-1.0, 1.0)
    single = TensorDictModule(_double, in_keys="a", out_keys="b")
    assert (single.in_keys, single.out_keys) == (["a"], ["b"])


def test_keyword_call_returns_tensors():
    """Tensors by position or keyword give back the output tensors (see dispatch)."""
    module = TensorDictModule(nn.Linear(3, 4), in_keys=["obs"], out_keys=["action"])
    assert module(torch.ones(5, 3)).shape == (5, 4)
    assert module(obs=torch.ones(5, 3)).shape == (5, 4)


def test_dict_in_keys_map_arguments_to_keys():
    """A dict in_keys passes keyword arguments; one key may feed several arguments."""
    module = TensorDictModule(
        lambda x, *, y, z: x + y + z, in_keys={"x": "1", "y": "2", "z": "2"}, out_keys=["t"]
    )
    td = module(TensorDict({"1": torch.ones(()), "2": torch.full((), 2.0)}))
    assert td["t"] == 5


def test_dict_in_keys_reversed_with_out_to_in_map_false():
    """out_to_in_map=False reads the dict as {tensordict key: argument}."""
    module = TensorDictModule(
        lambda x, *, y: x - y, in_keys={"1": "x", "2": "y"}, out_keys=["z"], out_to_in_map=False
    )
    assert module(TensorDict({"1": torch.ones(()), "2": torch.full((), 3.0)}))["z"] == -2


def test_out_to_in_map_without_a_dict_warns():
    """out_to_in_map with list in_keys is ignored, with a warning."""
    with pytest.warns(UserWarning, match="out_to_in_map"):
        TensorDictModule(_double, in_keys=["x"], out_keys=["y"], out_to_in_map=True)


@pytest.mark.parametrize(
    "in_keys,out_keys", [(3, ["y"]), (["x"], {"y"}), ([3], ["y"]), (["x"], [["y"]])]
)
def test_bad_keys_raise_value_error(in_keys, out_keys):
    """Keys that are not keys raise ValueError."""
    with pytest.raises(ValueError):
        TensorDictModule(_double, in_keys=in_keys, out_keys=out_keys)


def test_uncallable_module_raises():
    """A class or a non-callable object is refused."""
    with pytest.raises(ValueError):
        TensorDictModule(nn.Linear, in_keys=["x"], out_keys=["y"])
    with pytest.raises(ValueError):
        TensorDictModule(3, in_keys=["x"], out_keys=["y"])


def test_inplace_modes():
    """inplace=True writes into the input, False into a new TensorDict, 'empty' into input.empty()."""
    td = TensorDict(x=torch.ones(2), batch_size=[2])
    out = TensorDictModule(_double, in_keys=["x"], out_keys=["y"], inplace=False)(td)
    assert out is not td and list(out.keys()) == ["y"] and out.batch_size == ()
    out = TensorDictModule(_double, in_keys=["x"], out_keys=["y"], inplace="empty")(td)
    assert list(out.keys()) == ["y"] and out.batch_size == (2,)
    assert "y" not in td.keys()
    with pytest.raises(ValueError):
        TensorDictModule(_double, in_keys=["x"], out_keys=["y"], inplace="nowhere")


def test_tensordict_out_receives_the_outputs():
    """forward(tensordict_out=...) writes there and returns it."""
    module = TensorDictModule(_double, in_keys=["x"], out_keys=["y"])
    target = TensorDict()
    assert module(TensorDict(x=torch.ones(1)), tensordict_out=target) is target
    assert list(target.keys()) == ["y"]


def test_ignored_output_key():
    """An output at '_' is not written."""
    module = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["_", "y"])
    td = module(TensorDict(x=torch.zeros(())))
    assert sorted(td.keys()) == ["x", "y"]


def test_dict_output_is_read_by_key():
    """A dict (or tensordict) output holding every out key is read by key, whatever its order."""
    module = TensorDictModule(
        lambda x: {"b": x + 2, "a": x + 1}, in_keys=["x"], out_keys=["a", "b"]
    )
    td = module(TensorDict(x=torch.zeros(())))
    assert (td["a"].item(), td["b"].item()) == (1.0, 2.0)


def test_wrong_number_of_outputs_raises():
    """Fewer or more outputs than out keys raise RuntimeError."""
    module = TensorDictModule(lambda x: (x, x), in_keys=["x"], out_keys=["y"])
    with pytest.raises(RuntimeError):
        module(TensorDict(x=torch.zeros(())))


def test_method_and_method_kwargs():
    """method= calls another method of the module, with method_kwargs."""

    class Net(nn.Module):
        def shift(self, x, *, by):
            return x + by

    module = TensorDictModule(
        Net(), in_keys=["a"], out_keys=["b"], method="shift", method_kwargs={"by": 2}
    )
    assert module(TensorDict(a=torch.zeros(())))["b"] == 2


def test_missing_input_gives_key_error():
    """A missing input raises KeyError, strict or not (with None passed and failing)."""
    with pytest.raises(KeyError):
        TensorDictModule(nn.Linear(1, 1), in_keys=["x"], out_keys=["y"])(TensorDict())
    with pytest.raises(KeyError):
        TensorDictModule(_double, in_keys=["x"], out_keys=["y"], strict=True)(TensorDict())


def test_non_strict_passes_none_for_missing_inputs():
    """Without strict, a missing input reaches the callable as None."""
    module = TensorDictModule(
        lambda x, y: x if y is None else y, in_keys=["x", "y"], out_keys=["z"]
    )
    assert module(TensorDict(x=torch.ones(())))["z"] == 1


def test_non_tensor_inputs_are_unwrapped():
    """A non-tensor entry reaches the callable as its value."""
    module = TensorDictModule(lambda s: torch.tensor(len(s)), in_keys=["s"], out_keys=["n"])
    assert module(TensorDict(s="hello"))["n"] == 5


def test_attributes_are_read_from_the_wrapped_module():
    """weight, bias and other public attributes come from the wrapped module."""
    linear = nn.Linear(2, 3)
    module = TensorDictModule(linear, in_keys=["x"], out_keys=["y"])
    assert module.weight is linear.weight
    assert module.in_features == 2
    with pytest.raises(AttributeError):
        _ = module._not_there


def test_parameters_are_the_wrapped_module_parameters():
    """The wrapper registers the module: parameters() and state_dict() see it."""
    module = TensorDictModule(nn.Linear(2, 3), in_keys=["x"], out_keys=["y"])
    assert len(list(module.parameters())) == 2
    assert sorted(module.state_dict()) == ["module.bias", "module.weight"]


def test_repr_lists_module_and_keys():
    """The repr names the module, in_keys and out_keys."""
    text = repr(TensorDictModule(nn.Linear(2, 3), in_keys=["x"], out_keys=["y"]))
    assert text.startswith("TensorDictModule(")
    assert "Linear(in_features=2" in text and "in_keys=['x']" in text and "out_keys=['y']" in text
    assert "module=<function _double" in repr(
        TensorDictModule(_double, in_keys=["x"], out_keys=["y"])
    )


def test_pickle_round_trip_with_a_lambda():
    """A module wrapping a lambda pickles (through cloudpickle) and runs after loading."""
    pytest.importorskip(
        "cloudpickle", reason="lambdas pickle through cloudpickle, a torchrl dependency"
    )
    module = TensorDictModule(lambda x: x + 3, in_keys=["x"], out_keys=["y"])
    loaded = pickle.loads(pickle.dumps(module))
    assert loaded(TensorDict(x=torch.zeros(())))["y"] == 3


def test_pickle_round_trip_with_a_module():
    """A module wrapping an nn.Module pickles and keeps its weights."""
    module = TensorDictModule(nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
    loaded = pickle.loads(pickle.dumps(module))
    torch.testing.assert_close(loaded.weight, module.weight)


def test_device_is_deprecated():
    """.device warns DeprecationWarning and gives the parameters' device."""
    module = TensorDictModule(nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
    with pytest.warns(DeprecationWarning):
        assert module.device == torch.device("cpu")


class _Both(TensorDictModuleBase):
    in_keys = ["a", ("b", ("c",))]
    out_keys = ["d", "e"]

    def forward(self, tensordict):
        a = tensordict["a"]
        return tensordict.update({"d": a + 1, "e": a + 2})


def test_base_subclass_class_attributes_become_key_properties():
    """Class-level keys are unravelled and settable per instance."""
    module = _Both()
    assert module.in_keys == ["a", ("b", "c")]
    assert module.out_keys == ["d", "e"]
    other = _Both()
    other.in_keys = ["z"]
    assert module.in_keys == ["a", ("b", "c")]


def test_select_out_keys_and_reset():
    """select_out_keys keeps the chosen outputs (inputs stay); reset_out_keys brings the others back."""
    module = _Both()
    assert module.select_out_keys("e") is module
    assert module.out_keys == ["e"] and module.out_keys_source == ["d", "e"]
    td = module(TensorDict(a=torch.zeros(())))
    assert sorted(td.keys()) == ["a", "e"]
    module.reset_out_keys()
    assert sorted(module(TensorDict(a=torch.zeros(()))).keys()) == ["a", "d", "e"]


def test_select_out_keys_with_keyword_calls():
    """A keyword call returns only the selected outputs."""
    module = TensorDictModule(lambda x: (x + 1, x + 2), in_keys=["x"], out_keys=["a", "b"])
    module.select_out_keys("b")
    assert module(x=torch.zeros(())) == 2


def test_select_out_keys_removes_emptied_sub_tensordicts():
    """Dropping the only nested output drops its sub-tensordict too."""
    module = TensorDictModule(lambda x: (x, x), in_keys=["x"], out_keys=[("n", "a"), "b"])
    module.select_out_keys("b")
    assert sorted(module(TensorDict(x=torch.zeros(()))).keys()) == ["b", "x"]


@pytest.mark.parametrize("keys", [("z",), (["d"],)])
def test_select_out_keys_refuses_unknown_keys(keys):
    """Unknown keys, or keys passed as one list, raise a RuntimeError."""
    with pytest.raises(RuntimeError):
        _Both().select_out_keys(*keys)


def test_select_out_keys_unknown_key_is_also_a_value_error():
    """A key the module does not write raises ValueError too."""
    with pytest.raises(ValueError, match="z"):
        _Both().select_out_keys("z")


def test_reset_parameters_recursive_in_place():
    """Without parameters, every sub-module with reset_parameters() is reset."""
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    module = TensorDictModule(net, in_keys=["x"], out_keys=["y"])
    before = net[0].weight.detach().clone()
    assert module.reset_parameters_recursive() is None
    assert not torch.equal(before, net[0].weight)


def test_reset_parameters_recursive_warns_when_nothing_resets():
    """A module without resettable sub-modules warns."""
    module = TensorDictModule(_double, in_keys=["x"], out_keys=["y"])
    with pytest.warns(UserWarning, match="reset_parameters"):
        module.reset_parameters_recursive()


def test_reset_parameters_recursive_on_given_parameters():
    """With parameters, they are reset in place and the module keeps its own."""
    net = nn.Linear(2, 3)
    module = TensorDictModule(net, in_keys=["x"], out_keys=["y"])
    own = net.weight.detach().clone()
    params = TensorDict.from_module(module).data.clone()
    before = params.clone()
    out = module.reset_parameters_recursive(params)
    assert not torch.equal(params["module", "weight"], before["module", "weight"])
    torch.testing.assert_close(out["module", "weight"], params["module", "weight"])
    assert out["module", "weight"].requires_grad
    torch.testing.assert_close(net.weight.detach(), own)
    with pytest.raises(RuntimeError):
        module.reset_parameters_recursive(params.expand(2))


def test_wrapper_forwards_keys_attributes_and_calls():
    """TensorDictModuleWrapper behaves as the module it wraps unless overridden."""
    inner = TensorDictModule(nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])

    class TimesTen(TensorDictModuleWrapper):
        def forward(self, tensordict):
            tensordict = self.td_module(tensordict)
            return tensordict.set("y", tensordict["y"] * 10)

    wrapped = TimesTen(inner)
    assert (wrapped.in_keys, wrapped.out_keys) == (["x"], ["y"])
    assert wrapped.weight is inner.weight
    assert wrapped.module is inner.module
    td = TensorDict(x=torch.ones(2))
    torch.testing.assert_close(wrapped(td)["y"], inner(td.clone())["y"] * 10)
    plain = TensorDictModuleWrapper(inner)
    assert plain(x=torch.ones(2)).shape == (2,)


def test_wrap_module_calls_a_tensordict_function():
    """WrapModule returns func(td), or the input updated with it when inplace."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    out = WrapModule(lambda t: t.reshape(3, 1))(td)
    assert out.batch_size == (3, 1)
    updated = WrapModule(lambda t: TensorDict(b=t["a"] + 1, batch_size=[3]), inplace=True)(td)
    assert updated is td and "b" in td.keys()
    declared = WrapModule(lambda t: t, in_keys=["a"], out_keys=["b"])
    assert (declared.in_keys, declared.out_keys) == (["a"], ["b"])


def test_as_tensordict_module_on_functions_and_methods():
    """The decorated function or method takes tensordicts (and tensors by key)."""

    @as_tensordict_module(in_keys="c", out_keys=["d"])
    def add_one(c):
        return c + 1

    assert add_one(TensorDict(c=0))["d"] == 1
    torch.testing.assert_close(add_one(c=torch.zeros(2)), torch.ones(2))

    class Holder:
        def __init__(self, step):
            self.step = step

        @as_tensordict_module(in_keys=["c"], out_keys="d")
        def add(self, c):
            return c + self.step

    assert Holder(2).add(TensorDict(c=0))["d"] == 2
    assert Holder(5).add(TensorDict(c=0))["d"] == 5


def test_underscore_input_key_warns():
    """'_' marks dropped outputs; as an input key it warns."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TensorDictModule(_double, in_keys=["_"], out_keys=["y"])
    assert any("_" in str(w.message) for w in caught)
