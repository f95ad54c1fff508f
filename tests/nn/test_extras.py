"""CudaGraphModule without CUDA, EnsembleModule and the tensorclass modules."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from tensordict import TensorClass, TensorDict
from tensordict.nn import CudaGraphModule, EnsembleModule, TensorClassModuleBase, TensorDictModule


def _graphed(module, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CudaGraphModule(module, **kwargs)


def test_cudagraph_module_warns_and_runs_eagerly():
    """Without CUDA it warns at construction; calls run the module and return its result."""
    module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    with pytest.warns(UserWarning):
        graphed = CudaGraphModule(module)
    assert graphed.in_keys == ["x"] and graphed.out_keys == ["y"]
    for _ in range(4):
        out = graphed(TensorDict(x=torch.zeros(2)))
    assert out["y"].tolist() == [1.0, 1.0]
    assert graphed(x=torch.ones(2)).tolist() == [2.0, 2.0]


def test_cudagraph_module_on_a_function_and_its_checks():
    """A function of tensors runs too; inputs requiring gradients and a bad warmup are refused."""
    graphed = _graphed(lambda a, b: a * b)
    assert graphed(torch.full((2,), 2.0), b=torch.full((2,), 3.0)).tolist() == [6.0, 6.0]
    with pytest.raises(RuntimeError):
        graphed(torch.ones(2, requires_grad=True), b=torch.ones(2))
    with pytest.raises(ValueError):
        _graphed(lambda a: a, warmup=0)


def test_cudagraph_module_state_dict():
    """state_dict and load_state_dict go to the wrapped module; a function has an empty one."""
    graphed = _graphed(nn.Linear(1, 1))
    graphed.load_state_dict({"weight": torch.full((1, 1), 2.0), "bias": torch.zeros(1)})
    assert graphed.state_dict()["weight"].item() == 2.0
    assert _graphed(lambda a: a).state_dict() == {}
    assert "CudaGraphModule(" in repr(graphed)


def test_ensemble_runs_one_copy_per_row_of_parameters():
    """Outputs are stacked per copy; each copy uses its own reset parameters."""
    module = TensorDictModule(nn.Linear(2, 3), in_keys=["x"], out_keys=["y"])
    ensemble = EnsembleModule(module, num_copies=4)
    td = TensorDict(x=torch.randn(5, 2), batch_size=[5])
    out = ensemble(td)
    assert out.batch_size == (4, 5) and out["y"].shape == (4, 5, 3)
    assert not torch.allclose(out["y"][0], out["y"][1])
    weight, bias = (
        ensemble.params_td["module", "weight"][2],
        ensemble.params_td["module", "bias"][2],
    )
    torch.testing.assert_close(out["y"][2], td["x"] @ weight.T + bias)
    assert {"params_td.module.weight", "params_td.module.bias"} <= {
        n for n, _ in ensemble.named_parameters()
    }


def test_ensemble_without_expanding_the_input_and_reset_checks():
    """expand_input=False gives copy i the row i; reset_parameters_recursive needs parameters."""
    ensemble = EnsembleModule(
        TensorDictModule(nn.Linear(2, 1), in_keys=["x"], out_keys=["y"]),
        num_copies=3,
        expand_input=False,
    )
    out = ensemble(TensorDict(x=torch.randn(3, 5, 2), batch_size=[3, 5]))
    assert out.batch_size == (3, 5)
    with pytest.raises(ValueError):
        ensemble.reset_parameters_recursive()


class Pair(TensorClass):
    a: torch.Tensor
    b: torch.Tensor


class Sums(TensorClass):
    added: torch.Tensor
    diff: torch.Tensor


class Nested(TensorClass):
    inp: Pair
    res: Sums


class AddDiff(TensorClassModuleBase[Pair, Sums]):
    def forward(self, x):
        return Sums(added=x.a + x.b, diff=x.a - x.b, batch_size=x.batch_size)


class Both(TensorClassModuleBase[Pair, Nested]):
    def __init__(self):
        super().__init__()
        self.inner = AddDiff()

    def forward(self, x):
        return Nested(inp=x, res=self.inner(x), batch_size=x.batch_size)


def test_tensorclass_module_types_and_forward():
    """The subscript gives input_type/output_type; calls go through nn.Module.__call__."""
    assert (AddDiff.input_type, AddDiff.output_type) == (Pair, Sums)
    out = Both()(Pair(a=torch.tensor(10), b=torch.tensor(5), batch_size=[]))
    assert isinstance(out, Nested) and out.res.added == 15 and out.res.diff == 5


def test_tensorclass_module_as_tensordict_module():
    """as_td_module() reads and writes the fields' keys, nested ones as tuples."""
    td_module = Both().as_td_module()
    assert set(td_module.in_keys) == {"a", "b"}
    assert set(td_module.out_keys) == {
        ("inp", "a"),
        ("inp", "b"),
        ("res", "added"),
        ("res", "diff"),
    }
    out = td_module(TensorDict(a=torch.tensor(10), b=torch.tensor(5), extra=torch.tensor(0)))
    assert out["res", "added"] == 15


def test_tensorclass_module_conversion_needs_tensorclasses():
    """A module between tensors cannot become a tensordict module."""

    class OnTensors(TensorClassModuleBase[torch.Tensor, torch.Tensor]):
        def forward(self, x):
            return x + 1

    with pytest.raises(ValueError, match="TensorClass"):
        OnTensors().as_td_module()
