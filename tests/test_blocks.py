"""With-blocks over a method's result: what the block does is written back into the source.

Differential: every test also runs under the reference (from inside tests/), except those
marked ``ours_only`` with a comment saying how the reference differs.
"""

from __future__ import annotations

import gc
import pickle

import pytest
import torch
from torch import nn

from tensordict import TensorDict, lazy_stack, set_lazy_legacy, tensorclass

from conftest import ours_only


def make_td():
    return TensorDict(
        {"a": torch.arange(24.0).reshape(2, 3, 4), "b": {"c": torch.zeros(2, 3, 1)}},
        batch_size=[2, 3],
    )


# Each method, and how to build a new entry of the result's batch size from the source's.
SHAPE_METHODS = {
    "permute": lambda td: td.permute(1, 0),
    "transpose": lambda td: td.transpose(0, 1),
    "swapaxes": lambda td: td.swapaxes(1, 0),
    "movedim": lambda td: td.movedim(0, 1),
    "unsqueeze": lambda td: td.unsqueeze(1),
    "unsqueeze_negative": lambda td: td.unsqueeze(-1),
    "view": lambda td: td.view(-1),
    "view_size": lambda td: td.view(size=(3, 2)),
    "flatten": lambda td: td.flatten(0, 1),
    "unflatten": lambda td: td.unflatten(1, (3, 1)),
    "atleast_3d": lambda td: td.atleast_3d(),
    "flip": lambda td: td.flip(0),
    "fliplr": lambda td: td.fliplr(),
    "roll": lambda td: td.roll(1, 1),
    "rot90": lambda td: td.rot90(),
}


@pytest.mark.parametrize("method", sorted(SHAPE_METHODS))
def test_a_new_entry_of_a_shape_block_lands_in_the_source_layout(method):
    """The entry a block adds to the result reaches the source, arranged back by the inverse."""
    td = make_td()
    with SHAPE_METHODS[method](td) as result:
        expected_shape = result.batch_size
        result["new"] = torch.arange(result.batch_size.numel()).reshape(expected_shape)
        result["a"] = result["a"] + 100
        arranged = result.clone()
    assert td["new"].shape == td.batch_size
    again = SHAPE_METHODS[method](td)
    assert (again["new"] == arranged["new"]).all()
    assert (again["a"] == arranged["a"]).all()
    assert td["a"].min() >= 100


def test_squeeze_block_writes_back_without_the_dim():
    """``with td.squeeze(1)``: a new entry gets the squeezed dim back in the source."""
    td = TensorDict(a=torch.zeros(2, 1, 3), batch_size=[2, 1])
    with td.squeeze(1) as squeezed:
        squeezed["b"] = torch.ones(2)
    assert td["b"].shape == torch.Size([2, 1])


def test_an_in_place_change_in_a_block_reaches_the_source():
    """``apply_`` on the permuted result changes the source's leaves."""
    td = make_td()
    with td.permute(1, 0) as tdp:
        tdp.apply_(lambda x: x * 0 + 1)
    assert (td == 1).all()


@pytest.mark.parametrize(
    "method",
    [
        lambda td: td.reshape(-1),
        lambda td: td.select("a"),
        lambda td: td.exclude("a"),
        lambda td: td.clone(),
    ],
    ids=["reshape", "select", "exclude", "clone"],
)
def test_other_results_are_blocks_that_write_nothing_back(method):
    """The result of reshape, select, exclude or clone is a context manager that adds nothing."""
    td = make_td()
    with method(td) as result:
        result["new"] = torch.zeros(result.batch_size)
    assert "new" not in td.keys()


def test_a_block_that_raises_writes_nothing_back():
    """After an exception in the block the source does not get the new entry; the error goes on."""
    td = make_td()
    with pytest.raises(ValueError):
        with td.permute(1, 0) as tdp:
            tdp["new"] = torch.zeros(3, 2)
            raise ValueError("stop")
    assert "new" not in td.keys()


def test_lock_block_is_undone_after_an_exception():
    """``with td.lock_():`` unlocks again when the block raises."""
    td = make_td()
    with pytest.raises(ValueError):
        with td.lock_():
            raise ValueError("stop")
    assert not td.is_locked


def test_nested_blocks_write_back_level_by_level():
    """A block inside a block over the result writes back into the result, then the source."""
    td = make_td()
    with td.flatten_keys(",") as flat:
        with flat.unflatten_keys(",") as nested:
            assert (nested == td).all()
            nested["new", "data"] = torch.zeros(2, 3)
        assert (flat["new,data"] == 0).all()
    assert (td["new", "data"] == 0).all()


def test_flatten_keys_block_writes_back_under_the_nested_keys():
    """A rebinding of ``"b.c"`` in the block replaces ``("b", "c")`` in the source."""
    td = make_td()
    with td.flatten_keys() as flat:
        flat["b.c"] = torch.ones(2, 3, 1)
    assert set(td.keys(True, True)) == {"a", ("b", "c")}
    assert (td["b", "c"] == 1).all()


@ours_only  # the reference adds each leaf once more under a flat key ("b.c")
def test_unflatten_keys_block_over_nested_keys_adds_no_flat_copies():
    """Unflattening a tensordict that is nested already writes each leaf back to its own key."""
    td = make_td()
    with td.unflatten_keys() as nested:
        nested["b", "c"] = torch.ones(2, 3, 1)
    assert set(td.keys(True, True)) == {"a", ("b", "c")}
    assert (td["b", "c"] == 1).all()


def test_locked_source_is_written_in_place():
    """A locked source takes the block's values into its own tensors."""
    td = make_td().lock_()
    c = td["b", "c"]
    with td.flatten_keys() as flat:
        flat["b.c"] = torch.ones(2, 3, 1)
    assert td["b", "c"] is c
    assert (c == 1).all()


def test_to_block_restores_the_dtype_of_each_entry():
    """``with td.to(torch.float64)``: old entries get their dtype back, new ones keep float64."""
    td = TensorDict(x=torch.zeros(3), i=torch.zeros(3, dtype=torch.int64), batch_size=[3])
    with td.to(torch.float64) as td64:
        td64["x"] = td64["x"] + 1
        td64["y"] = td64["x"] + 1
    assert td["x"].dtype == torch.float32 and (td["x"] == 1).all()
    assert td["i"].dtype == torch.int64
    assert td["y"].dtype == torch.float64


def test_to_module_block_puts_the_module_back():
    """Inside the block the module runs on the tensordict's values; after it, on its own."""
    module = nn.Linear(2, 3)
    weight = module.weight
    zeros = TensorDict.from_module(module).apply(torch.zeros_like)
    with zeros.to_module(module):
        assert (module(torch.ones(2)) == 0).all()
    assert module.weight is weight
    with pytest.raises(ValueError):
        with zeros.to_module(module):
            raise ValueError("stop")
    assert module.weight is weight


def test_to_module_block_lets_gradients_reach_the_tensordict():
    """A functional call through ``with params.to_module(module)`` gives the params gradients."""
    module = nn.Linear(3, 4, device="meta")
    params = TensorDict.from_modules(*[nn.Linear(3, 4) for _ in range(2)])

    def call(p, x):
        with p.to_module(module, preserve_module_state=False):
            return module(x)

    torch.vmap(call, (0, None))(params, torch.zeros(3)).sum().backward()
    assert all(p.grad is not None for p in params.values(True, True))


def test_a_tensorclass_block_writes_back():
    """``with tc.view(-1) as flat:`` assigns the field of the instance."""

    @tensorclass
    class Pair:
        x: torch.Tensor

    pair = Pair(x=torch.zeros(2, 3), batch_size=[2, 3])
    with pair.view(-1) as flat:
        flat.x = torch.ones(6)
    assert (pair.x == 1).all()


def test_blocks_over_one_result_nest():
    """A result used by two nested blocks writes back once per block."""
    td = make_td()
    tdp = td.permute(1, 0)
    with tdp:
        with tdp:
            tdp["new"] = torch.zeros(3, 2)
        del td["new"]
    assert td["new"].shape == torch.Size([2, 3])


@ours_only  # the reference fails on the dead weak reference
def test_a_block_whose_source_is_gone_ends_quietly():
    """When the source was collected, the end of the block has nothing to write into."""
    tdp = make_td().permute(1, 0)
    gc.collect()
    with tdp:
        tdp["new"] = torch.zeros(3, 2)
    assert "new" in tdp.keys()


@set_lazy_legacy(True)
def test_the_permutation_that_undoes_gives_the_source_in_legacy_mode():
    """In the legacy lazy mode permuting back returns the tensordict itself; another order does not."""
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3, 4])
    assert td.permute(2, 0, 1).permute(1, 2, 0) is td
    assert td.permute(2, 0, 1).permute(0, 2, 1) is not td


@set_lazy_legacy(True)
def test_the_view_back_gives_the_source_in_legacy_mode():
    """In the legacy lazy mode viewing a result back to its source's batch size returns the source."""
    td = TensorDict(a=torch.zeros(3, 4), batch_size=[3, 4])
    assert td.view(-1).view(-1, 4) is td
    assert td.view(-1).view(3, 4) is td
    assert td.view(-1).view(4, 3) is not td


def test_the_permutation_that_undoes_is_new_otherwise():
    """Outside the legacy mode, permuting back gives a new tensordict."""
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    assert td.permute(1, 0).permute(1, 0) is not td


def test_a_pickled_result_has_no_record():
    """A result pickles (its record of the source stays behind); its copy is a plain tensordict."""
    stack = lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2]) for _ in range(2)])
    copy = pickle.loads(pickle.dumps(stack.lock_()))
    with copy:
        pass
    assert copy.batch_size == stack.batch_size


@pytest.mark.parametrize(
    "method",
    [
        lambda s: s.permute(1, 0),
        lambda s: s.transpose(0, 1),
        lambda s: s.unsqueeze(1),
        lambda s: s.flatten(),
        lambda s: s.view(-1),
    ],
    ids=["permute", "transpose", "unsqueeze", "flatten", "view"],
)
def test_a_lazy_stack_block_writes_back_into_the_members(method):
    """The shape methods of a lazy stack write a new entry back into its members too."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(3, 4)}, [3]) for _ in range(2)])
    with method(stack) as result:
        result["new"] = torch.ones(result.batch_size)
    assert stack["new"].shape == torch.Size([2, 3])
    assert all(member["new"].shape == torch.Size([3]) for member in stack.tensordicts)


@set_lazy_legacy(True)
def test_the_permutation_that_undoes_gives_the_stack_in_legacy_mode():
    """In the legacy lazy mode a lazy stack permuted back is the stack itself."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(3, 4)}, [3]) for _ in range(2)])
    assert stack.permute(1, 0).permute(1, 0) is stack
