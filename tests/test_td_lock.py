"""Locking: a locked tensordict refuses structural changes but accepts in-place writes."""

import gc

import pytest
import torch

from tensordict import TensorDict

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)

KEYS = {"a", "b", ("b", "c")}


def make_td():
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "b": {"c": torch.arange(2)}},
        batch_size=[2],
    )


def locked_td():
    return make_td().lock_()


def snapshot(td):
    """The keys and a copy of every leaf, to check that nothing changed."""
    return set(td.keys(True)), {k: v.clone() for k, v in td.items(True, True)}


def assert_unchanged(td, snap, tensors=None):
    keys, values = snap
    assert set(td.keys(True)) == keys
    for key, value in values.items():
        assert torch.equal(td[key], value), key
    for key, tensor in (tensors or {}).items():
        assert td[key] is tensor, key


def test_not_locked_by_default():
    """A new tensordict is not locked."""
    assert make_td().is_locked is False


def test_lock_and_unlock():
    """lock_ and unlock_ return self and set is_locked, on sub-tensordicts too."""
    td = make_td()
    assert td.lock_() is td
    assert td.is_locked is True
    assert td["b"].is_locked is True
    assert td.unlock_() is td
    assert td.is_locked is False
    assert td["b"].is_locked is False


def test_subtensordict_follows_parent():
    """A sub-tensordict held before locking is locked and unlocked with the parent."""
    td = make_td()
    sub = td["b"]
    td.lock_()
    assert sub.is_locked
    td.unlock_()
    assert not sub.is_locked


def test_cannot_unlock_child_of_locked_parent():
    """A sub-tensordict cannot be unlocked while its parent is locked."""
    td = locked_td()
    sub = td["b"]
    with pytest.raises(RuntimeError, match="lock"):
        sub.unlock_()
    assert td.is_locked
    assert sub.is_locked


def test_subtensordict_added_before_lock_refuses_keys():
    """Adding a key to a sub-tensordict of a locked tensordict is refused."""
    td = locked_td()
    with pytest.raises(RuntimeError, match="lock"):
        td["b"].set("x", torch.zeros(2))
    assert "x" not in td["b"]


@pytest.mark.parametrize(
    "action",
    [
        lambda td: td.set("x", torch.zeros(2)),
        lambda td: td.set(("b", "x"), torch.zeros(2)),
        lambda td: td.set(("n", "x"), torch.zeros(2)),
        lambda td: td.__setitem__("x", torch.zeros(2)),
        lambda td: td.update({"x": torch.zeros(2)}),
        lambda td: td.update({"b": {"c": torch.ones(2, dtype=torch.int64), "z": torch.ones(2)}}),
        lambda td: td.update({"zz": torch.ones(2), "a": torch.ones(2, 3)}),
        lambda td: td.setdefault("x", torch.zeros(2)),
    ],
    ids=[
        "set",
        "set-nested",
        "set-new-nested",
        "setitem",
        "update",
        "update-nested",
        "update-mixed",
        "setdefault",
    ],
)
def test_locked_refuses_new_keys(action):
    """A locked tensordict refuses new keys, and the failed call changes nothing."""
    td = locked_td()
    snap = snapshot(td)
    with pytest.raises(RuntimeError, match="lock"):
        action(td)
    assert_unchanged(td, snap)


@pytest.mark.parametrize(
    "action",
    [
        lambda td: td.del_("a"),
        lambda td: td.del_(("b", "c")),
        lambda td: td.pop("a"),
        lambda td: td.__delitem__("a"),
        lambda td: td.rename_key_("a", "z"),
        lambda td: td.exclude("a", inplace=True),
        lambda td: td.select("a", inplace=True),
        lambda td: td.flatten_keys(inplace=True),
    ],
    ids=[
        "del_",
        "del_-nested",
        "pop",
        "delitem",
        "rename_key_",
        "exclude-inplace",
        "select-inplace",
        "flatten_keys-inplace",
    ],
)
def test_locked_refuses_deletions(action):
    """A locked tensordict refuses to remove or move entries, and keeps them all."""
    td = locked_td()
    a = td["a"]
    snap = snapshot(td)
    with pytest.raises(RuntimeError, match="lock"):
        action(td)
    assert_unchanged(td, snap, {"a": a})


@pytest.mark.parametrize(
    "action",
    [
        lambda td: td.set("a", torch.zeros(2, 3)),
        lambda td: td.__setitem__("a", torch.zeros(2, 3)),
        lambda td: td.set(("b", "c"), torch.zeros(2, dtype=torch.int64)),
        lambda td: td.update({"a": torch.ones(2, 3)}),
    ],
    ids=["set", "setitem", "set-nested", "update"],
)
def test_locked_refuses_rebinding(action):
    """Replacing an existing entry out of place is refused and keeps the old tensor."""
    td = locked_td()
    a = td["a"]
    snap = snapshot(td)
    with pytest.raises(RuntimeError, match="lock"):
        action(td)
    assert_unchanged(td, snap, {"a": a})


def test_pop_missing_with_default_allowed():
    """pop of a missing key with a default removes nothing and is allowed."""
    td = locked_td()
    assert td.pop("nope", None) is None
    assert set(td.keys(True)) == KEYS


def test_locked_allows_set_():
    """set_ and update_ write in place on a locked tensordict."""
    td = locked_td()
    a = td["a"]
    td.set_("a", torch.full((2, 3), 2.0))
    assert td["a"] is a
    assert (a == 2).all()
    td.update_({"a": torch.full((2, 3), 4.0), "b": {"c": torch.tensor([7, 8])}})
    assert (a == 4).all()
    assert td["b", "c"].tolist() == [7, 8]


def test_locked_allows_inplace_set():
    """set(..., inplace=True) of an existing key writes in place on a locked tensordict."""
    td = locked_td()
    a = td["a"]
    td.set("a", torch.zeros(2, 3), inplace=True)
    assert td["a"] is a
    assert a.sum() == 0


def test_locked_allows_inplace_ops():
    """zero_, fill_, apply_, += and in-place math work on a locked tensordict."""
    td = locked_td()
    a = td["a"]
    td.zero_()
    assert a.sum() == 0
    td.fill_("a", 1.0)
    assert a.sum() == 6
    td.apply_(lambda x: x + 1)
    assert a.sum() == 12
    td += 1
    assert a.sum() == 18
    td.mul_(2)
    assert td["a"] is a
    assert a.sum() == 36
    assert td.is_locked


def test_locked_allows_index_assignment():
    """Index assignment writes in place on a locked tensordict."""
    td = locked_td()
    a = td["a"]
    td[0] = TensorDict({"a": torch.zeros(3), "b": {"c": torch.tensor(9)}}, [])
    assert td["a"] is a
    assert a[0].sum() == 0
    assert td["b", "c"].tolist() == [9, 1]
    td[1] = 0
    assert a.sum() == 0


def test_locked_out_of_place_results_work():
    """Out-of-place operations on a locked tensordict return usable tensordicts."""
    td = locked_td()
    out = td.exclude("a")
    assert list(out.keys()) == ["b"]
    assert not out.is_locked
    out.set("x", torch.zeros(2))
    assert "x" in out
    assert "x" not in td
    assert not td.clone().is_locked
    assert not td.select("a").is_locked


def test_unlock_allows_changes_again():
    """After unlock_, new keys and deletions work again."""
    td = locked_td()
    td.unlock_()
    td.set("x", torch.zeros(2))
    td.set(("b", "y"), torch.zeros(2))
    del td["a"]
    assert set(td.keys(True)) == {"b", ("b", "c"), ("b", "y"), "x"}


def test_relock_covers_new_subtensordict():
    """A sub-tensordict added while unlocked is locked by the next lock_."""
    td = locked_td()
    td.unlock_()
    td.set(("n", "x"), torch.zeros(2))
    td.lock_()
    assert td["n"].is_locked
    with pytest.raises(RuntimeError, match="lock"):
        td["n"].set("y", torch.zeros(2))


def test_a_sub_tensordict_of_a_locked_one_cannot_be_unlocked_alone():
    """unlock_() of a sub-tensordict raises while its parent is locked, and leaves it locked."""
    td = locked_td()
    sub = td["b"]
    with pytest.raises(RuntimeError):
        sub.unlock_()
    assert sub.is_locked


def test_a_sub_tensordict_whose_parent_is_gone_can_be_unlocked():
    """Once the locked parent is collected, nothing holds the sub-tensordict locked."""
    td = locked_td()
    sub = td["b"]
    del td
    gc.collect()
    sub.unlock_()
    assert not sub.is_locked
    sub.set("new", torch.zeros(2))


def test_two_locked_roots_sharing_a_child_cannot_be_unlocked():
    """Unlocking either root would unlock a child the other holds: both refuse and stay locked."""
    td = TensorDict({("a", "b", "c"): 1.0}, []).lock_()
    shared = td["a"]
    other = TensorDict({"a": shared}, []).lock_()
    for root in (other, td):
        with pytest.raises(RuntimeError):
            root.unlock_()
        assert root.is_locked and shared.is_locked


def test_two_roots_held_by_one_root_unlock_with_it():
    """Grouped under a common tensordict, two roots sharing a child unlock and lock with it."""
    td = TensorDict({("a", "b", "c"): 1.0}, []).lock_()
    shared = td["a"]
    other = TensorDict({"a": shared}, []).lock_()
    top = TensorDict({"td": td, "other": other}, []).lock_()
    top.unlock_()
    assert not td.is_locked and not other.is_locked and not shared.is_locked
    top.lock_()
    assert td.is_locked and other.is_locked and shared.is_locked


@pytest.mark.parametrize(
    "method",
    [
        lambda td: td.permute(1, 0),
        lambda td: td.unsqueeze(0),
        lambda td: td.reshape(-1),
        lambda td: td.view(-1),
        lambda td: td.flatten(),
        lambda td: td.expand(4, 2, 3),
        lambda td: td.roll(1, 0),
        lambda td: td.split(1)[0],
        lambda td: td.to(torch.float64),
        lambda td: td.double(),
        lambda td: td.detach(),
    ],
    ids=[
        "permute", "unsqueeze", "reshape", "view", "flatten", "expand", "roll", "split", "to",
        "double", "detach",
    ],
)  # fmt: skip
def test_a_rearranged_or_cast_locked_tensordict_is_locked(method):
    """Shape methods and casts of a locked tensordict give a locked result, nested levels too."""
    td = TensorDict({"a": torch.zeros(2, 3, 4), "b": {"c": torch.zeros(2, 3)}}, [2, 3]).lock_()
    out = method(td)
    assert out.is_locked and out["b"].is_locked


@pytest.mark.parametrize(
    "method",
    [lambda td: td.clone(), lambda td: td.select("a"), lambda td: td.apply(lambda x: x)],
    ids=["clone", "select", "apply"],
)
def test_copies_of_a_locked_tensordict_are_unlocked(method):
    """clone, select and apply give an unlocked tensordict."""
    td = TensorDict({"a": torch.zeros(2, 3, 4), "b": {"c": torch.zeros(2, 3)}}, [2, 3]).lock_()
    assert not method(td).is_locked


def test_the_grad_and_data_of_a_locked_tensordict_are_locked():
    """td.grad and td.data are locked when the tensordict is, unlocked otherwise."""
    td = TensorDict({"a": torch.randn(3, 4, requires_grad=True)}, [3, 4])
    (td["a"] * 2).sum().backward()
    assert not td.grad.is_locked and not td.data.is_locked
    td.lock_()
    assert td.grad.is_locked and td.data.is_locked


def test_rename_key_of_a_locked_tensordict_raises_the_lock_error_first():
    """rename_key_(safe=True) onto an existing key of a locked tensordict: the lock is the error."""
    td = TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2]).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.rename_key_("a", "b", safe=True)
    assert sorted(td.keys()) == ["a", "b"]
