"""apply, apply_ and named_apply: results checked against the batch size, and threads."""

from __future__ import annotations

import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensordict import NonTensorData, TensorDict, lazy_stack, tensorclass

MISMATCH = "batch dimension mismatch.*'a'"


def make_td():
    return TensorDict({"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3)}}, [3])


@pytest.mark.parametrize(
    "fn",
    [lambda x: x[:2], lambda x: x[0], lambda x: x.reshape(-1)[:1], lambda x: torch.zeros(())],
    ids=["slice", "int", "flat", "scalar"],
)
def test_apply_refuses_results_without_the_batch_size(fn):
    """apply raises RuntimeError naming the key when a result does not start with the batch size."""
    with pytest.raises(RuntimeError, match=MISMATCH):
        make_td().apply(fn)


def test_apply_checks_results_against_the_given_batch_size():
    """With batch_size=, the results must start with that batch size instead."""
    td = make_td()
    assert td.apply(lambda x: x[:2], batch_size=[2]).batch_size == torch.Size([2])
    with pytest.raises(RuntimeError, match=MISMATCH):
        td.apply(lambda x: x[:2], batch_size=[3])
    with pytest.raises(RuntimeError, match=MISMATCH):
        td.apply(lambda x: x, batch_size=[2])
    out = td.apply(lambda x: x[:, None], batch_size=[3, 1])
    assert out.batch_size == torch.Size([3, 1])
    assert out["b", "c"].shape == torch.Size([3, 1])


def test_apply_names_the_nested_key_of_a_refused_result():
    """A refused nested result is reported with its leaf key."""
    td = make_td()
    with pytest.raises(RuntimeError, match="batch dimension mismatch.*'c'"):
        td.apply(lambda x: x if x.ndim == 2 else x[:1])


def test_apply_checks_a_sub_tensordict_against_its_own_batch_size():
    """A sub-tensordict with more batch dims checks its leaves against all of them."""
    td = TensorDict({"a": torch.zeros(3, 2), "n": {"b": torch.zeros(3, 4)}}, [3])
    td["n"].batch_size = [3, 4]
    with pytest.raises(RuntimeError, match="batch dimension mismatch.*'b'"):
        td.apply(lambda x: x[:, :1])


def test_apply_with_a_batch_size_gives_sub_tensordicts_that_batch_size():
    """With batch_size=, every sub-tensordict of the result gets exactly that batch size."""
    td = TensorDict({"a": torch.zeros(3, 2), "n": {"b": torch.zeros(3, 4)}}, [3])
    td["n"].batch_size = [3, 4]
    out = td.apply(lambda x: x[:1], batch_size=[1])
    assert out["n"].batch_size == torch.Size([1])
    assert out["n", "b"].shape == torch.Size([1, 4])


def test_named_apply_checks_its_results_too():
    """named_apply refuses a result without the batch size like apply."""
    with pytest.raises(RuntimeError, match=MISMATCH):
        make_td().named_apply(lambda key, x: x[:2])


def test_apply_inplace_refuses_results_without_the_batch_size():
    """apply_ raises for a result without the batch size and leaves the values unchanged."""
    td = make_td()
    with pytest.raises(RuntimeError, match=MISMATCH):
        td.apply_(lambda x: x[:2])
    assert torch.equal(td["a"], torch.zeros(3, 2))


# differs from the reference: it writes the leaves before the refused one
def test_apply_inplace_refusal_writes_no_leaf():
    """A refused apply_ has written no leaf at all, not even those before the refused one."""
    td = TensorDict({"a": torch.zeros(3, 2), "b": torch.zeros(3)}, [3])
    with pytest.raises(RuntimeError, match="batch dimension mismatch.*'b'"):
        td.apply_(lambda x: x + 1 if x.ndim == 2 else x[:1])
    assert torch.equal(td["a"], torch.zeros(3, 2))


def test_apply_on_a_lazy_stack_checks_each_member():
    """A lazy stack refuses a result that does not start with its members' batch size."""
    stack = lazy_stack([TensorDict({"a": torch.zeros(3)}, [3]) for _ in range(2)])
    with pytest.raises(RuntimeError, match=MISMATCH):
        stack.apply(lambda x: x[:1])


def test_apply_call_on_nested_checks_the_returned_tensordicts():
    """With call_on_nested, a returned sub-tensordict without the batch size is refused."""
    td = make_td()
    assert (td.apply(lambda x: x, call_on_nested=True) == td).all()
    with pytest.raises(RuntimeError, match=MISMATCH):
        td.apply(lambda x: x[:2], call_on_nested=True)


def test_apply_with_threads_gives_the_same_result():
    """apply(num_threads=N) gives the same tensordict as apply without threads."""
    td = TensorDict({f"k{i}": torch.arange(6.0).reshape(3, 2) + i for i in range(8)}, [3])
    td["sub"] = {"x": torch.ones(3)}
    expected = td.apply(lambda x: x * 2 + 1)
    out = td.apply(lambda x: x * 2 + 1, num_threads=4)
    assert list(out.keys(True, True)) == list(expected.keys(True, True))
    assert (out == expected).all()


# differs from the reference: it ignores num_threads (with a FutureWarning) and calls fn in one thread
def test_apply_with_threads_runs_fn_on_other_threads():
    """apply(num_threads=N) calls fn on worker threads, not on the caller's."""
    td = TensorDict({f"k{i}": torch.zeros(3) for i in range(6)}, [3])
    seen = set()

    def fn(x):
        seen.add(threading.get_ident())
        return x + 1

    td.apply(fn, num_threads=3)
    assert threading.get_ident() not in seen


def test_apply_with_threads_still_checks_the_batch_size():
    """With num_threads, a result without the batch size is refused all the same."""
    with pytest.raises(RuntimeError, match=MISMATCH):
        make_td().apply(lambda x: x[:2], num_threads=2)


def test_apply_inplace_with_threads_writes_every_leaf():
    """apply_(num_threads=N) writes each leaf's result into the tensordict itself."""
    td = make_td()
    assert td.apply_(lambda x: x + 5, num_threads=2) is td
    assert torch.equal(td["a"], torch.full((3, 2), 5.0))
    assert torch.equal(td["b", "c"], torch.full((3,), 5.0))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), keep=st.integers(0, 5), threads=st.sampled_from([None, 2]))
def test_apply_accepts_exactly_the_results_with_the_batch_size(n, keep, threads):
    """Slicing every leaf to `keep` rows is accepted only when it keeps the n rows (or batch_size says so)."""
    td = TensorDict({"a": torch.zeros(n, 2)}, [n])
    if min(keep, n) == n:
        assert td.apply(lambda x: x[:keep], num_threads=threads).batch_size == td.batch_size
    else:
        with pytest.raises(RuntimeError, match=MISMATCH):
            td.apply(lambda x: x[:keep], num_threads=threads)
    out = td.apply(lambda x: x[:keep], batch_size=[min(keep, n)], num_threads=threads)
    assert out["a"].shape == torch.Size([min(keep, n), 2])


# ---------------------------------------------------------------------- out=
def test_apply_out_replaces_the_entries_of_out():
    """apply(out=) sets each result into out, replacing the entry (its dtype too), writes into
    out's sub-tensordicts, keeps out's other entries, and returns out."""
    td = TensorDict(a=torch.arange(6).reshape(2, 3), b={"c": torch.zeros(2, 3)}, batch_size=[2, 3])
    out = TensorDict(
        a=torch.zeros(2, 3, dtype=torch.int8), z=torch.ones(2, 3), b={}, batch_size=[2, 3]
    )
    sub = out["b"]
    result = td.apply(lambda x: x.float() + 1, out=out)
    assert result is out
    assert out["a"].dtype == torch.float32 and out["a"].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert out["b"] is sub and torch.equal(sub["c"], torch.ones(2, 3))
    assert torch.equal(out["z"], torch.ones(2, 3))


def test_apply_out_into_itself_casts_the_leaves():
    """td.apply(fn, out=td) rebinds the leaves of td to the results (the reference's idiom for an
    in-place cast)."""
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    td.apply(lambda x: x.double(), out=td)
    assert td["a"].dtype == torch.float64


def test_named_apply_takes_out():
    """named_apply(out=) fills out the same way."""
    out = TensorDict(batch_size=[3])
    assert make_td().named_apply(lambda key, x: x + 1, out=out) is out
    assert torch.equal(out["b", "c"], torch.ones(3))


def test_apply_out_refuses_a_locked_or_mismatched_out():
    """A locked out raises RuntimeError; a batch_size other than out's raises RuntimeError."""
    with pytest.raises(RuntimeError):
        make_td().apply(lambda x: x, out=make_td().lock_())
    with pytest.raises(RuntimeError):
        make_td().apply(lambda x: x[0], batch_size=[], out=make_td())


def _with_empty_and_text():
    return TensorDict(
        {"a": torch.zeros(2), "n": {"b": torch.ones(2), "t": "x"}, "e": {}, "s": "txt"}, [2]
    )


def _tensors_and_text(cls) -> bool:
    return issubclass(cls, (torch.Tensor, NonTensorData))


@pytest.mark.parametrize(
    "filter_empty, keys",
    [
        (None, {"e", "s"}),  # the emptied sub-tensordict dropped, the empty one kept
        (True, {"s"}),  # every empty sub-tensordict dropped
        (False, {"e", "n", "s"}),  # every sub-tensordict kept
    ],
)
def test_apply_filter_empty_says_which_empty_sub_tensordicts_are_dropped(filter_empty, keys):
    """filter_empty=None drops sub-tensordicts fn emptied, True every empty one, False none."""
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}, "e": {}, "s": "txt"}, [2])
    out = td.apply(lambda x: None, filter_empty=filter_empty)
    assert set(out.keys(True)) == keys


@pytest.mark.parametrize("filter_empty", [None, True, False])
def test_apply_with_is_leaf_calls_fn_on_non_tensor_entries(filter_empty):
    """With is_leaf saying non-tensor entries are leaves, fn sees them; dropping all gives None or {}."""
    td = _with_empty_and_text()
    seen = []
    td.apply(lambda x: seen.append(type(x)) or x, is_leaf=_tensors_and_text)
    assert sum(issubclass(t, NonTensorData) for t in seen) == 2
    out = td.apply(lambda x: None, is_leaf=_tensors_and_text, filter_empty=filter_empty)
    if filter_empty:
        assert out is None
    elif filter_empty is None:
        assert set(out.keys(True)) == {"e"}
    else:
        assert set(out.keys(True)) == {"e", "n"}


def test_a_tensorclass_among_the_others_is_walked_through_its_tensordict():
    """Comparing a sub-tensordict with a tensorclass at the same key compares their entries."""

    @tensorclass
    class Box:
        bar: torch.Tensor

    plain = TensorDict(c=TensorDict(bar=torch.zeros(2, 3), batch_size=[2]), batch_size=[2])
    typed = TensorDict(c=Box(bar=torch.zeros(2, 3), batch_size=[2]), batch_size=[2])
    assert (plain == typed).all()
    summed = plain.apply(lambda x, y: x + y + 1, typed)
    assert (summed["c", "bar"] == 1).all()
