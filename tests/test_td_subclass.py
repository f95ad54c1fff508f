"""A user's subclass of TensorDict: what operations return keeps the subclass.

Differential: this file runs under the reference's interpreter too
(``cd tests && REF/python -m pytest test_td_subclass.py``).
"""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict


class Sub(TensorDict):
    """A subclass with a method of its own, as users write them."""

    def total(self):
        return sum(v.sum() for v in self.values(True, True))


class SubSub(Sub):
    pass


OPERATIONS = {
    "add": lambda t: t + t,
    "div": lambda t: t / 2,
    "rdiv": lambda t: 2 / t,
    "to dtype": lambda t: t.to(torch.float64),
    "to device": lambda t: t.to("cpu"),
    "zeros_like": torch.zeros_like,
    "copy": lambda t: t.copy(),
    "clone": lambda t: t.clone(),
    "shallow clone": lambda t: t.clone(False),
    "empty": lambda t: t.empty(),
    "select": lambda t: t.select("a"),
    "exclude": lambda t: t.exclude("a"),
    "split_keys": lambda t: t.split_keys({"a"})[0],
    "flatten_keys": lambda t: t.flatten_keys(),
    "apply": lambda t: t.apply(lambda x: x + 1),
    "stack": lambda t: torch.stack([t, t]),
    "cat": lambda t: torch.cat([t, t]),
    "index": lambda t: t[0],
    "unbind": lambda t: t.unbind(0)[0],
    "split": lambda t: t.split(1)[0],
    "unsqueeze": lambda t: t.unsqueeze(0),
    "reshape": lambda t: t.reshape(-1),
    "gather": lambda t: t.gather(0, torch.zeros(1, dtype=torch.long)),
}


@pytest.mark.parametrize("cls", [Sub, SubSub])
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_operations_return_the_users_subclass(cls, name):
    """Every operation that makes a new tensordict from one of a user's subclass returns that subclass."""
    td = cls({"a": torch.ones(3), "n": {"b": torch.ones(3)}}, [3])
    out = OPERATIONS[name](td)
    assert type(out) is cls
    assert float(out.total()) == float(sum(v.sum() for v in out.values(True, True)))


def test_nested_levels_of_a_subclass_stay_tensordicts():
    """The sub-tensordicts of a subclass instance (built from dicts) are plain TensorDicts, as given."""
    td = Sub({"a": torch.ones(3), "n": {"b": torch.ones(3)}}, [3])
    assert type(td["n"]) is TensorDict and type((td + 1)["n"]) is TensorDict
