"""tensordict.functional: pad, pad_sequence, unpad_sequence, stacking, merging, grouping, collating.

Differential: every test also passes under the reference (run from inside tests/).
"""

from __future__ import annotations

import collections
import functools

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from torch.utils.data import DataLoader

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    tensorclass,
)
from tensordict.functional import (
    collate,
    dense_stack_tds,
    group_by,
    make_tensordict,
    merge_tensordicts,
    pad,
    pad_sequence,
    unpad_sequence,
)

# The reference exports it from the package only; ours lives in tensordict.functional.
maybe_dense_stack = (
    getattr(tensordict, "maybe_dense_stack", None) or tensordict.functional.maybe_dense_stack
)


@tensorclass
class Sample:
    x: torch.Tensor


def _grid():
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "n": {"b": torch.ones(2, 3, 2)}}, batch_size=[2, 3]
    )


# ---------------------------------------------------------------------- pad
def test_pad_grows_each_batch_dimension_before_and_after():
    """pad_size pairs run from the first batch dimension; every leaf and sub-tensordict grows."""
    padded = pad(_grid(), [1, 0, 0, 2], value=-1.0)
    assert padded.batch_size == torch.Size([3, 5])
    assert padded["n"].batch_size == torch.Size([3, 5])
    assert padded["n", "b"].shape == torch.Size([3, 5, 2])
    assert torch.equal(padded["a"][0], torch.full((5,), -1.0))
    assert torch.equal(padded["a"][1:, :3], _grid()["a"])
    assert torch.equal(padded["a"][1:, 3:], torch.full((2, 2), -1.0))


def test_pad_with_negative_sizes_crops():
    """A negative pad removes that many elements at that side."""
    padded = pad(_grid(), [0, 0, -1, 1])
    assert padded.batch_size == torch.Size([2, 3])
    assert torch.equal(padded["a"], torch.tensor([[1.0, 2.0, 0.0], [4.0, 5.0, 0.0]]))
    assert pad(_grid(), [-2, 0]).batch_size == torch.Size([0, 3])


def test_pad_casts_the_value_to_each_dtype():
    """The padding value takes the dtype of each tensor (ints truncate, bools become True/False)."""
    td = TensorDict(
        i=torch.zeros(2, dtype=torch.long), b=torch.zeros(2, dtype=torch.bool), batch_size=[2]
    )
    padded = pad(td, [0, 1], value=2.5)
    assert padded["i"].tolist() == [0, 0, 2]
    assert padded["i"].dtype == torch.long
    assert padded["b"].tolist() == [False, False, True]


def test_pad_leaves_the_input_unchanged_and_keeps_names():
    """pad returns a new tensordict; the input keeps its shapes; dimension names are kept."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["x", "y"])
    padded = pad(td, [1, 1])
    assert padded is not td
    assert td.batch_size == torch.Size([2, 3])
    assert padded.names == ["x", "y"]


def test_pad_in_place_keeps_identity_of_the_tensordict_and_its_sub_tensordicts():
    """inplace=True returns the input itself, grown, with the same sub-tensordict objects."""
    td = _grid()
    sub = td["n"]
    result = pad(td, [0, 1], inplace=True)
    assert result is td
    assert td.batch_size == torch.Size([3, 3])
    assert td["n"] is sub
    assert sub.batch_size == torch.Size([3, 3])
    assert torch.equal(td["a"][2], torch.zeros(3))


def test_pad_of_a_lazy_stack_pads_members_and_adds_filler_members():
    """A lazy stack pads each member on its own dims and grows along the stack dim."""
    stack = lazy_stack([TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(2)])
    padded = pad(stack, [1, 0, 0, 2], value=5.0)
    assert padded.batch_size == torch.Size([3, 5])
    assert torch.equal(padded["a"][0], torch.full((5,), 5.0))
    assert torch.equal(padded["a"][1], torch.tensor([0.0, 0.0, 0.0, 5.0, 5.0]))
    in_place = pad(stack, [1, 0, 0, 2], inplace=True)
    assert in_place is stack
    assert isinstance(stack, LazyStackedTensorDict)
    assert stack.batch_size == torch.Size([3, 5])
    assert len(stack.tensordicts) == 3


def test_pad_keeps_the_tensorclass():
    """A tensorclass instance gives an instance of the same class."""
    padded = pad(Sample(x=torch.zeros(2, 3), batch_size=[2]), [0, 2])
    assert type(padded) is Sample
    assert padded.x.shape == torch.Size([4, 3])


def test_pad_fills_non_tensor_rows_with_none():
    """A padded non-tensor entry is a NonTensorStack: its value in the old rows, None in the new ones."""
    td = TensorDict({"a": torch.zeros(2), "s": "hello"}, [2])
    padded = pad(td, [1, 1])
    assert isinstance(padded.get("s"), NonTensorStack)
    assert padded.get("s").tolist() == [None, "hello", "hello", None]


def test_pad_in_place_keeps_the_identity_of_a_stack_entry():
    """pad(td, inplace=True) pads a NonTensorStack entry in place: the same stack, None added."""
    td = TensorDict({"x": torch.arange(3).float(), "instr": NonTensorStack("a", "b", "c")}, [3])
    instr = td.get("instr")
    assert pad(td, [0, 2], inplace=True) is td
    assert td.get("instr") is instr and instr.tolist() == ["a", "b", "c", None, None]
    assert td["x"].tolist() == [0.0, 1.0, 2.0, 0.0, 0.0]


def test_pad_of_a_stack_itself():
    """pad(stack) gives a padded stack; inplace=True pads the stack itself."""
    stack = NonTensorStack("a", "b")
    padded = pad(stack, [1, 1])
    assert isinstance(padded, NonTensorStack) and padded.tolist() == [None, "a", "b", None]
    assert pad(stack, [0, 1], inplace=True) is stack and stack.tolist() == ["a", "b", None]


def test_pad_in_place_of_a_single_value_raises():
    """pad(NonTensorData, inplace=True) raises RuntimeError: only a stack can hold the None rows."""
    with pytest.raises(RuntimeError):
        pad(NonTensorData("a", batch_size=[2]), [0, 1], inplace=True)


@pytest.mark.parametrize(
    "pad_size, match",
    [([1], "even"), ([1, 1, 1, 1, 1, 1], "2 \\*"), ([-3, 0], "negative")],
)
def test_pad_rejects_a_bad_pad_size_with_runtime_error(pad_size, match):
    """An odd length, too many values, or a crop past zero raise RuntimeError."""
    td = _grid()
    with pytest.raises(RuntimeError, match=match):
        pad(td, pad_size)
    assert td.batch_size == torch.Size([2, 3])


def test_pad_in_place_of_a_locked_tensordict_raises_and_changes_nothing():
    """A locked tensordict cannot be padded in place; it is left as it was."""
    td = TensorDict(a=torch.zeros(2), batch_size=[2]).lock_()
    with pytest.raises(RuntimeError, match="[Ll]ocked"):
        pad(td, [1, 1], inplace=True)
    assert td.batch_size == torch.Size([2])


# ---------------------------------------------------------------------- pad_sequence
def _samples():
    return [
        TensorDict(
            {
                "a": torch.arange(n),
                "b": torch.ones(n, 2),
                "c": torch.ones(4),
                "n": {"d": torch.ones(n)},
            }
        )
        for n in (2, 3)
    ]


def test_pad_sequence_pads_each_entry_to_its_longest_and_stacks():
    """Keys of varying lengths are padded separately; entries of one length are untouched."""
    batch = pad_sequence(_samples())
    assert batch.batch_size == torch.Size([2])
    assert batch["a"].tolist() == [[0, 1, 0], [0, 1, 2]]
    assert batch["b"].shape == torch.Size([2, 3, 2])
    assert batch["c"].shape == torch.Size([2, 4])
    assert batch["n", "d"].tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]


def test_pad_sequence_masks_mark_the_data_positions():
    """return_mask=True adds "masks": one boolean tensor per entry, True where data is."""
    batch = pad_sequence(_samples(), return_mask=True)
    assert batch["masks", "a"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["masks", "c"].all()
    assert batch["masks", "n", "d"].tolist() == [[True, True, False], [True, True, True]]


@pytest.mark.parametrize("key", ["m", ("x", "m")])
def test_pad_sequence_stores_masks_under_the_key_given(key):
    """return_mask may be a string or a tuple key."""
    batch = pad_sequence(_samples(), return_mask=key)
    assert "masks" not in batch.keys()
    assert batch.get(key if isinstance(key, tuple) else (key,))["a"].dtype == torch.bool


def test_pad_sequence_left_side_pads_before_the_data():
    """padding_side="left" puts the padding first; the masks follow it."""
    batch = pad_sequence(_samples(), padding_side="left", padding_value=-1, return_mask=True)
    assert batch["a"].tolist() == [[-1, 0, 1], [0, 1, 2]]
    assert batch["masks", "a"].tolist() == [[False, True, True], [True, True, True]]


def test_pad_sequence_takes_a_padding_value_per_key():
    """A mapping gives each named entry its value; the others are padded with 0."""
    batch = pad_sequence(_samples(), padding_value={"a": 9, ("n", "d"): 7})
    assert batch["a"].tolist() == [[0, 1, 9], [0, 1, 2]]
    assert batch["n", "d"].tolist() == [[1.0, 1.0, 7.0], [1.0, 1.0, 1.0]]
    assert batch["b"][0, 2].tolist() == [0.0, 0.0]


def test_pad_sequence_with_a_batch_pad_dim_pads_the_batch_size():
    """When pad_dim is a batch dimension, the batch size is padded and masks have it."""
    samples = [TensorDict({"a": torch.arange(n), "b": torch.ones(n, 2)}, [n]) for n in (2, 3)]
    batch = pad_sequence(samples, return_mask=True)
    assert batch.batch_size == torch.Size([2, 3])
    assert batch["masks"].batch_size == torch.Size([2, 3])
    assert batch["masks", "b"].shape == torch.Size([2, 3])
    assert batch["b"].shape == torch.Size([2, 3, 2])


def test_pad_sequence_pad_dim_negative_counts_from_each_entrys_last_dim():
    """pad_dim=-1 pads the last dimension of every entry; masks end with the padded length."""
    samples = [TensorDict(a=torch.zeros(2, n), b=torch.zeros(n)) for n in (1, 3)]
    batch = pad_sequence(samples, pad_dim=-1, return_mask=True)
    assert batch["a"].shape == torch.Size([2, 2, 3])
    assert batch["b"].shape == torch.Size([2, 3])
    assert batch["masks", "a"].shape == torch.Size([2, 3])


def test_pad_sequence_feature_pad_dim():
    """A pad_dim past the batch dims pads that feature dimension."""
    samples = [TensorDict(a=torch.zeros(2, n)) for n in (3, 4)]
    batch = pad_sequence(samples, pad_dim=1)
    assert batch["a"].shape == torch.Size([2, 2, 4])


def test_pad_sequence_writes_into_out():
    """out receives the result in place and is returned."""
    out = TensorDict(
        {
            "a": torch.zeros(2, 3, dtype=torch.long),
            "b": torch.zeros(2, 3, 2),
            "c": torch.zeros(2, 4),
            "n": {"d": torch.zeros(2, 3)},
        },
        [2],
    )
    result = pad_sequence(_samples(), out=out)
    assert result is out
    assert out["a"].tolist() == [[0, 1, 0], [0, 1, 2]]


def test_pad_sequence_keeps_the_tensorclass():
    """Tensorclass samples give an instance of their class."""
    batch = pad_sequence([Sample(x=torch.ones(2)), Sample(x=torch.ones(3))])
    assert type(batch) is Sample
    assert batch.x.tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]


def test_pad_sequence_stacks_non_tensor_entries_without_masks():
    """Non-tensor entries are stacked; they get no mask."""
    samples = [TensorDict({"a": torch.arange(n), "s": "same"}) for n in (2, 3)]
    batch = pad_sequence(samples, return_mask=True)
    assert list(batch["masks"].keys()) == ["a"]
    assert batch[0]["s"] == "same"


def test_pad_sequence_batch_pad_of_non_tensor_entries_holds_none():
    """When the batch is padded, a non-tensor entry holds None in the padded rows."""
    samples = [TensorDict({"a": torch.arange(n), "s": f"s{n}"}, [n]) for n in (2, 3)]
    batch = pad_sequence(samples)
    assert isinstance(batch.get("s"), NonTensorStack)
    assert batch.get("s").tolist() == [["s2", "s2", None], ["s3", "s3", "s3"]]


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: pad_sequence([]), RuntimeError, "empty"),
        (lambda: pad_sequence(_samples(), padding_side="middle"), ValueError, "padding_side"),
        (lambda: pad_sequence(_samples(), padding_value={"zz": 1}), KeyError, "zz"),
        (lambda: pad_sequence(_samples(), pad_dim=1), IndexError, None),
        (lambda: pad_sequence([TensorDict(a=torch.tensor(1.0))] * 2), RuntimeError, "scalar"),
        (
            lambda: pad_sequence(
                [TensorDict(a=torch.zeros(2, 3)), TensorDict(a=torch.zeros(2, 4))]
            ),
            RuntimeError,
            None,  # the wording differs from the reference's
        ),
        (
            lambda: pad_sequence([Sample(x=torch.ones(2))], return_mask=True),
            RuntimeError,
            "return_mask",
        ),
    ],
    ids=["empty", "side", "padding-key", "pad-dim", "scalar", "shapes", "tensorclass-mask"],
)
def test_pad_sequence_bad_input_raises(call, error, match):
    """Each bad input raises the builtin the reference raises."""
    with pytest.raises(error, match=match):
        call()


# differs from the reference: it pads samples whose keys differ (using the first's); we refuse
def test_pad_sequence_refuses_samples_with_different_keys():
    """Samples with different keys raise a KeyError naming the keys."""
    with pytest.raises(KeyError, match="'b'"):
        pad_sequence([TensorDict(a=torch.zeros(2)), TensorDict(b=torch.zeros(2))])


# ---------------------------------------------------------------------- unpad_sequence
@pytest.mark.parametrize("side", ["left", "right"])
def test_unpad_sequence_gives_back_the_samples(side):
    """Masks from pad_sequence turn the batch back into the samples, without a "masks" entry."""
    samples = _samples()
    back = unpad_sequence(pad_sequence(samples, return_mask=True, padding_side=side))
    assert isinstance(back, LazyStackedTensorDict)
    assert len(back.tensordicts) == 2
    for original, sample in zip(samples, back.tensordicts):
        assert "masks" not in sample.keys()
        assert set(sample.keys(True, True)) == set(original.keys(True, True))
        for key in original.keys(True, True):
            assert torch.equal(sample[key], original[key])


def test_unpad_sequence_with_a_tensor_mask():
    """A boolean tensor mask of shape [len, max_len] is used for every entry."""
    samples = [TensorDict(a=torch.arange(n), b=torch.ones(n, 2)) for n in (2, 3)]
    padded = pad_sequence(samples)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    back = unpad_sequence(padded, mask)
    assert [s["a"].tolist() for s in back.tensordicts] == [[0, 1], [0, 1, 2]]
    assert back.tensordicts[0]["b"].shape == torch.Size([2, 2])


@given(
    lengths=st.lists(st.integers(0, 5), min_size=1, max_size=5),
    side=st.sampled_from(["left", "right"]),
    width=st.integers(1, 3),
)
def test_unpad_sequence_inverts_pad_sequence(lengths, side, width):
    """For any lengths and side, unpad_sequence(pad_sequence(s, return_mask=True)) gives s back."""
    samples = [
        TensorDict(
            a=torch.arange(n), b=torch.arange(n * width).reshape(n, width).float(), c=torch.ones(2)
        )
        for n in lengths
    ]
    back = unpad_sequence(pad_sequence(samples, return_mask=True, padding_side=side))
    for original, sample in zip(samples, back.tensordicts):
        for key in ("a", "b", "c"):
            assert torch.equal(sample[key], original[key])


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda p: unpad_sequence(p.exclude("masks")), ValueError),
        (lambda p: unpad_sequence(TensorDict(a=torch.zeros(3))), ValueError),
        (
            lambda p: unpad_sequence(p.exclude("masks"), torch.ones(2, 7, dtype=torch.bool)),
            ValueError,
        ),
        (
            lambda p: unpad_sequence(
                p.exclude("masks"), torch.tensor([[True, False, True], [True, True, True]])
            ),
            ValueError,
        ),
        (lambda p: unpad_sequence(p.exclude("masks"), p["masks"].exclude("a")), KeyError),
    ],
    ids=["no-mask", "no-batch-dim", "mask-shape", "not-contiguous", "mask-key"],
)
def test_unpad_sequence_bad_input_raises(call, error):
    """A missing, misshapen, gappy or incomplete mask, or no batch dim, raise."""
    samples = [TensorDict(a=torch.arange(n)) for n in (2, 3)]
    padded = pad_sequence(samples, return_mask=True)
    with pytest.raises(error):
        call(padded)


# ---------------------------------------------------------------------- group_by
def test_group_by_splits_rows_by_value_in_original_order():
    """Groups follow the sorted unique values; each keeps its rows in order."""
    td = TensorDict(uid=torch.tensor([2, 0, 2, 1, 0]), r=torch.arange(5.0), batch_size=[5])
    values, groups = group_by(td, "uid")
    assert values.tolist() == [0, 1, 2]
    assert [g["r"].tolist() for g in groups] == [[1.0, 4.0], [3.0], [0.0, 2.0]]
    assert all(type(g) is TensorDict for g in groups)


def test_group_by_compares_multi_value_rows_whole_and_takes_nested_keys():
    """A row of several values is one value; a nested key is accepted."""
    td = TensorDict(
        n={"u": torch.tensor([[1, 2], [0, 0], [1, 2]])}, x=torch.arange(3), batch_size=[3]
    )
    values, groups = group_by(td, ("n", "u"))
    assert values.tolist() == [[0, 0], [1, 2]]
    assert [g["x"].tolist() for g in groups] == [[1], [0, 2]]


def test_group_by_a_non_tensor_entry_gives_a_list_of_values():
    """A non-tensor entry of one value gives one group holding every row."""
    td = TensorDict(s="x", a=torch.arange(3), batch_size=[3])
    values, groups = group_by(td, "s")
    assert values == ["x"]
    assert len(groups) == 1
    assert groups[0]["a"].tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    "td, key, error",
    [
        (TensorDict(a=torch.zeros(())), "a", ValueError),
        (TensorDict(a=torch.zeros(3), batch_size=[3]), "zz", KeyError),
        (
            TensorDict(n=TensorDict(a=torch.zeros(3), batch_size=[3]), batch_size=[3]),
            "n",
            TypeError,
        ),
    ],
    ids=["no-batch-dim", "missing", "sub-tensordict"],
)
def test_group_by_bad_input_raises(td, key, error):
    """No batch dimension, a missing key or a sub-tensordict key raise."""
    with pytest.raises(error):
        group_by(td, key)


# ---------------------------------------------------------------------- merge, make
def test_merge_takes_every_key_and_the_first_value():
    """Every leaf of every input is there; a shared leaf takes the first value, uncopied."""
    td0 = TensorDict({"a": {"b0": 0}, "common": 0})
    td1 = TensorDict({"a": {"b1": 1}, "f": 1, "common": 1})
    merged = merge_tensordicts(td0, td1)
    assert set(merged.keys(True, True)) == {("a", "b0"), ("a", "b1"), "common", "f"}
    assert merged["common"] is td0["common"]


def test_merge_callbacks_combine_leaves_every_input_holds():
    """callback_exist combines shared leaves; a dict gives one per key; partial leaves take the first."""
    tds = [TensorDict(a=1, c=5), TensorDict(a=2, c=6), TensorDict(b=3, a=4, c=7)]
    merged = merge_tensordicts(*tds, callback_exist=lambda *v: torch.stack(v))
    assert merged["a"].tolist() == [1, 2, 4]
    per_key = merge_tensordicts(*tds, callback_exist={"c": lambda *v: sum(v)})
    assert per_key["c"].item() == 18
    assert per_key["a"].item() == 1
    partial = merge_tensordicts(tds[0], TensorDict(b=3))
    assert partial["a"].item() == 1


def test_merge_keeps_the_first_batch_size_and_needs_two_inputs():
    """The result has the first batch size; fewer than two inputs raise RuntimeError."""
    merged = merge_tensordicts(
        TensorDict(a=torch.zeros(2), batch_size=[2]),
        TensorDict(b=torch.zeros(2, 3), batch_size=[2, 3]),
    )
    assert merged.batch_size == torch.Size([2])
    with pytest.raises(RuntimeError, match="2"):
        merge_tensordicts(TensorDict(a=0))


def test_make_tensordict_builds_from_dict_and_keywords():
    """The dict's entries win over keyword ones; nested dicts become tensordicts."""
    td = make_tensordict(
        {"a": torch.zeros(3)}, a=torch.ones(2), b=torch.zeros(3, 4), auto_batch_size=True
    )
    assert td["a"].tolist() == [0.0, 0.0, 0.0]
    assert td.batch_size == torch.Size([3])
    nested = make_tensordict(
        {"a": torch.zeros(3), "b": {"c": torch.zeros(3, 4)}}, auto_batch_size=True
    )
    assert nested["b"].batch_size == torch.Size([3, 4])
    assert make_tensordict(a=torch.zeros(3, 4), batch_size=[3]).batch_size == torch.Size([3])
    assert make_tensordict().batch_size == torch.Size([])


def test_make_tensordict_rejects_a_batch_size_that_does_not_fit():
    """A batch size the entries do not have raises RuntimeError."""
    with pytest.raises(RuntimeError):
        make_tensordict(a=torch.zeros(3, 4), batch_size=[4])


# ---------------------------------------------------------------------- stacking
def test_maybe_dense_stack_is_dense_when_it_can_be_and_lazy_otherwise():
    """Same keys and shapes stack densely; different shapes or keys stack lazily."""
    a, b = TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))
    assert type(maybe_dense_stack([a, b])) is TensorDict
    assert isinstance(maybe_dense_stack([a, TensorDict(a=torch.ones(4))]), LazyStackedTensorDict)
    assert isinstance(maybe_dense_stack([a, TensorDict(b=torch.ones(3))]), LazyStackedTensorDict)
    two = [TensorDict(a=torch.zeros(2, 3), batch_size=[2])] * 2
    assert maybe_dense_stack(two, dim=1).batch_size == torch.Size([2, 2])


def test_maybe_dense_stack_writes_into_out_and_refuses_an_empty_list():
    """out receives the stack; an empty list raises RuntimeError."""
    out = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    result = maybe_dense_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))], out=out)
    assert result is out
    assert out["a"][1].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError):
        maybe_dense_stack([])


def test_dense_stack_tds_keeps_nested_lazy_stacks_lazy_along_their_own_dim():
    """Outer members stack densely around nested lazy stacks, which move one dim in."""
    inner = lazy_stack(
        [TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(4), b=torch.zeros(2))]
    )
    container = TensorDict(lazy=inner)
    stacked = lazy_stack([container, container.clone()])
    dense = dense_stack_tds(stacked)
    assert type(dense) is TensorDict
    assert dense["lazy"].batch_size == torch.Size([2, 2])
    assert dense["lazy"].stack_dim == 1
    assert dense["lazy"][:, 1]["b"].shape == torch.Size([2, 2])
    from_list = dense_stack_tds([container, container.clone()], dim=0)
    assert from_list["lazy"].stack_dim == 1


def test_dense_stack_tds_returns_a_dense_tensordict_and_needs_dim_for_a_list():
    """A TensorDict comes back as it is; a list without dim raises ValueError."""
    td = TensorDict(a=torch.zeros(3))
    assert dense_stack_tds(td) is td
    with pytest.raises(ValueError, match="None|dim"):
        dense_stack_tds([td, td])
    mismatched = dense_stack_tds([td, TensorDict(b=torch.zeros(3))], dim=0)
    assert isinstance(mismatched, LazyStackedTensorDict)


# ---------------------------------------------------------------------- collate
def test_collate_stacks_tensordicts_inside_tuples_dicts_and_namedtuples():
    """Each container keeps its kind; tensordicts stack, numbers become tensors."""
    a, b = TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))
    td, label = collate([(a, 1), (b, 2)])
    assert td.batch_size == torch.Size([2])
    assert label.tolist() == [1, 2]
    out = collate([{"x": a, "y": torch.zeros(2)}, {"x": b, "y": torch.ones(2)}])
    assert out["y"].shape == torch.Size([2, 2])
    pair = collections.namedtuple("Pair", "td label")
    assert type(collate([pair(a, 1), pair(b, 2)])).__name__ == "Pair"
    assert collate(a) is a
    assert collate([]) == []


def test_collate_in_a_dataloader_stacks_lazily_when_lengths_vary():
    """Samples of different lengths give a lazy stack from a DataLoader."""
    clouds = [TensorDict(points=torch.randn(n, 3)) for n in (5, 2, 7, 3)]
    batch = next(iter(DataLoader(clouds, batch_size=4, collate_fn=collate)))
    assert isinstance(batch, LazyStackedTensorDict)
    assert batch.batch_size == torch.Size([4])


def test_collate_pads_and_nests_named_keys():
    """pad_keys are padded with masks under mask_key; nested_keys become nested tensors."""
    samples = [
        TensorDict(
            ids=torch.ones(n, dtype=torch.long),
            points=torch.randn(n + 1, 3),
            score=torch.tensor(float(n)),
        )
        for n in (2, 3)
    ]
    collate_fn = functools.partial(
        collate, pad_keys={"ids": 7}, nested_keys=["points"], mask_key="mask"
    )
    batch = collate_fn(samples)
    assert batch["ids"].tolist() == [[1, 1, 7], [1, 1, 1]]
    assert batch["mask", "ids"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["points"].is_nested
    assert batch["score"].tolist() == [2.0, 3.0]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"mask_key": "m"}, ValueError),
        ({"pad_keys": {"ids": 0}, "mask_key": "score"}, ValueError),
        ({"pad_keys": {"ids": 0}, "nested_keys": ["ids"]}, ValueError),
        ({"pad_keys": {"zz": 0}}, KeyError),
        ({"nested_keys": ["zz"]}, KeyError),
    ],
    ids=["mask-without-pad", "mask-is-entry", "both", "missing-pad", "missing-nested"],
)
def test_collate_bad_options_raise(kwargs, error):
    """Clashing or missing option keys raise."""
    samples = [TensorDict(ids=torch.ones(n), score=torch.tensor(1.0)) for n in (2, 3)]
    with pytest.raises(error):
        collate(samples, **kwargs)


def test_collate_pad_keys_need_samples_without_batch_dims():
    """pad_keys on batched samples raise ValueError."""
    samples = [TensorDict(ids=torch.ones(2, n), batch_size=[2]) for n in (2, 3)]
    with pytest.raises(ValueError, match="pad_sequence"):
        collate(samples, pad_keys={"ids": 0})


# ---------------------------------------------------------------------- non-tensor entries
def _labelled():
    """Three rows with a tensor and a NonTensorStack of strings, ``label``."""
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    td["label"] = ["x", "y", "x"]
    return td


def _grid_labels():
    td = TensorDict(a=torch.zeros(2, 2), batch_size=[2, 2])
    td["label"] = [["a", "b"], ["c", "d"]]
    return td


@pytest.mark.parametrize(
    "pad_size, expected",
    [
        ([0, 2], ["x", "y", "x", None, None]),
        ([1, 0], [None, "x", "y", "x"]),
        ([-1, 0], ["y", "x"]),
        ([1, -2], [None, "x"]),
    ],
)
def test_pad_of_a_non_tensor_stack_pads_its_values_with_none(pad_size, expected):
    """A stack entry is padded (or cropped) where the tensors are, with None in the new rows."""
    padded = pad(_labelled(), pad_size)
    assert isinstance(padded.get("label"), NonTensorStack)
    assert padded["label"] == expected
    assert padded.batch_size == torch.Size([len(expected)])


def test_pad_of_a_non_tensor_stack_pads_every_batch_dimension():
    """Padding two batch dimensions of a 2-D stack puts None in each new row and column."""
    padded = pad(_grid_labels(), [0, 1, 1, 0])
    assert padded.get("label").tolist() == [[None, "a", "b"], [None, "c", "d"], [None, None, None]]
    assert pad(_grid_labels(), [0, 0, 0, 1]).get("label").tolist() == [
        ["a", "b", None],
        ["c", "d", None],
    ]


def test_pad_without_padding_keeps_non_tensor_entries_as_they_are():
    """A zero pad leaves a stack its values and a NonTensorData or a MetaData its type."""
    assert pad(_labelled(), [0, 0]).get("label").tolist() == ["x", "y", "x"]
    same = TensorDict(a=torch.zeros(3), s="c", batch_size=[3])
    assert type(pad(same, [0, 0]).get("s")) is NonTensorData
    meta = TensorDict(a=torch.zeros(3), m=MetaData("m", batch_size=[3]), batch_size=[3])
    assert type(pad(meta, [0, 0]).get("m")) is MetaData
    assert pad(meta, [0, 1]).get("m").tolist() == ["m", "m", "m", None]


def test_pad_in_place_and_nested_pad_non_tensor_stacks():
    """In place, and inside a sub-tensordict, a stack entry is padded like the tensors."""
    td = _labelled()
    assert pad(td, [1, 1], inplace=True) is td
    assert td["label"] == [None, "x", "y", "x", None]
    outer = pad(TensorDict(n=_labelled(), batch_size=[3]), [0, 1])
    assert outer.get(("n", "label")).tolist() == ["x", "y", "x", None]


def test_pad_of_a_lazy_stack_gives_filler_members_none_values():
    """The filler members of a padded lazy stack hold None in their non-tensor entries."""
    members = [TensorDict(a=torch.zeros(2), s=v, batch_size=[2]) for v in ("p", "q")]
    padded = pad(lazy_stack(members), [1, 0, 0, 1])
    assert padded.get("s").tolist() == [[None, None, None], ["p", "p", None], ["q", "q", None]]


@pytest.mark.parametrize("side, second", [("right", ["x", "y", None]), ("left", [None, "x", "y"])])
def test_pad_sequence_pads_non_tensor_stacks_along_the_batch(side, second):
    """Samples whose batch is padded give a 2-D stack holding None at the padded positions."""
    td = _labelled()
    batch = pad_sequence([td, td[:2]], padding_side=side, return_mask=True)
    assert isinstance(batch.get("label"), NonTensorStack)
    assert batch.get("label").tolist() == [["x", "y", "x"], second]
    assert list(batch["masks"].keys()) == ["a"]


def test_pad_sequence_stacks_non_tensor_entries_of_different_kinds():
    """A NonTensorData sample and a stack sample stack into one stack of their values."""
    plain = TensorDict(a=torch.arange(2), label="c", batch_size=[2])
    batch = pad_sequence([_labelled(), plain])
    assert batch.get("label").tolist() == [["x", "y", "x"], ["c", "c", None]]


def test_pad_sequence_of_samples_without_batch_dims_stacks_one_value_each():
    """Samples with an empty batch size give a 1-D stack; equal MetaData stay one MetaData."""
    samples = [TensorDict(a=torch.zeros(n), label=v) for n, v in ((2, "p"), (1, "q"))]
    assert pad_sequence(samples).get("label").tolist() == ["p", "q"]
    same = [TensorDict(a=torch.zeros(n), label="p") for n in (2, 1)]
    assert pad_sequence(same).get("label").tolist() == ["p", "p"]
    metas = [TensorDict(a=torch.zeros(n), m=MetaData("m")) for n in (2, 1)]
    meta = pad_sequence(metas).get("m")
    assert type(meta) is MetaData
    assert meta.data == "m"
    assert meta.batch_size == torch.Size([2])


def test_pad_sequence_on_a_feature_dim_stacks_non_tensor_stacks_unpadded():
    """With a feature pad_dim the batch is not padded: the stacks are stacked as they are."""
    first = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    first["label"] = ["x", "y", "z"]
    second = TensorDict(a=torch.zeros(3, 1), batch_size=[3])
    second["label"] = ["u", "v", "w"]
    for pad_dim in (1, -1):
        batch = pad_sequence([first, second], pad_dim=pad_dim)
        assert batch.get("label").tolist() == [["x", "y", "z"], ["u", "v", "w"]]


def test_pad_sequence_refuses_an_entry_that_is_non_tensor_in_some_samples_only():
    """An entry that is a string in one sample and a tensor in another raises, naming it."""
    text = TensorDict(a=torch.zeros(2), label="p", batch_size=[2])
    tensor = TensorDict(a=torch.zeros(1), label=torch.zeros(1), batch_size=[1])
    for samples in ([text, tensor], [tensor, text]):
        with pytest.raises(RuntimeError, match="label"):
            pad_sequence(samples)


def test_unpad_sequence_gives_each_sample_its_non_tensor_row():
    """Each unpadded sample reads its own value of a stacked non-tensor entry."""
    samples = [TensorDict(a=torch.zeros(n), label=v) for n, v in ((2, "p"), (1, "q"))]
    back = unpad_sequence(pad_sequence(samples, return_mask=True))
    assert [sample["label"] for sample in back.tensordicts] == ["p", "q"]


def test_unpad_sequence_on_a_feature_dim_keeps_each_samples_non_tensor_stack():
    """With a feature pad_dim, each sample keeps the stack it was padded with."""
    first = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    first["label"] = ["x", "y", "z"]
    second = TensorDict(a=torch.zeros(3, 1), batch_size=[3])
    second["label"] = ["u", "v", "w"]
    back = unpad_sequence(pad_sequence([first, second], pad_dim=1, return_mask=True), pad_dim=1)
    assert [s.get("label").tolist() for s in back.tensordicts] == [["x", "y", "z"], ["u", "v", "w"]]
    assert [s["a"].shape[1] for s in back.tensordicts] == [2, 1]


def test_group_by_a_non_tensor_stack_groups_rows_by_value():
    """Rows of a stack are grouped by their sorted distinct values, in their original order."""
    values, groups = group_by(_labelled(), "label")
    assert values == ["x", "y"]
    assert [g["a"].tolist() for g in groups] == [[0, 2], [1]]
    assert [g.get("label").tolist() for g in groups] == [["x", "x"], ["y"]]
    numbers = TensorDict(a=torch.arange(3), batch_size=[3])
    numbers["n"] = NonTensorStack(3, 1, 3)
    values, groups = group_by(numbers, "n")
    assert values == [1, 3]
    assert [g["a"].tolist() for g in groups] == [[1], [0, 2]]


def test_group_by_reads_list_rows_as_tuples():
    """A row holding several values (a 2-D stack, or list values) is compared as a tuple."""
    values, groups = group_by(_grid_labels(), "label")
    assert values == [("a", "b"), ("c", "d")]
    assert [g.get("label").tolist() for g in groups] == [[["a", "b"]], [["c", "d"]]]
    lists = TensorDict(a=torch.arange(3), batch_size=[3])
    lists["l"] = NonTensorStack([1, 2], [3], [1, 2])
    values, groups = group_by(lists, "l")
    assert values == [(1, 2), (3,)]
    assert [g["a"].tolist() for g in groups] == [[0, 2], [1]]


def test_group_by_a_metadata_entry_gives_one_group():
    """A MetaData entry holds one value, so every row lands in one group."""
    td = TensorDict(a=torch.arange(3), m=MetaData("m", batch_size=[3]), batch_size=[3])
    values, groups = group_by(td, "m")
    assert values == ["m"]
    assert groups[0]["a"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("values", [({"k": 1}, {"k": 2}, {"k": 1}), ("a", 1, "a")])
def test_group_by_refuses_stack_values_it_cannot_hash_or_sort(values):
    """Unhashable or unorderable values raise a TypeError naming the entry."""
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    td["s"] = NonTensorStack(*values)
    with pytest.raises(TypeError, match="'s'"):
        group_by(td, "s")


@pytest.mark.parametrize("dim, expected", [(0, [["x", "y", "x"], ["c", "c", "c"]]), (1, None)])
def test_dense_stack_tds_stacks_non_tensor_entries_into_a_stack(dim, expected):
    """Non-tensor entries of the inputs are stacked along the new dimension, densely around."""
    plain = TensorDict(a=torch.arange(3), label="c", batch_size=[3])
    result = dense_stack_tds([_labelled(), plain], dim)
    assert type(result) is TensorDict
    assert isinstance(result.get("label"), NonTensorStack)
    if expected is None:
        expected = [["x", "c"], ["y", "c"], ["x", "c"]]
    assert result.get("label").tolist() == expected


def test_dense_stack_tds_of_a_lazy_stack_and_of_2d_stacks():
    """A lazy stack's members and 2-D stacks are stacked into stacks of the right shape."""
    result = dense_stack_tds(lazy_stack([_labelled(), _labelled()]))
    assert result.get("label").tolist() == [["x", "y", "x"], ["x", "y", "x"]]
    grid = dense_stack_tds([_grid_labels(), _grid_labels()], 1)
    assert grid.get("label").batch_size == torch.Size([2, 2, 2])
    assert grid.get("label").tolist() == [[["a", "b"], ["a", "b"]], [["c", "d"], ["c", "d"]]]


def test_dense_stack_tds_keeps_equal_metadata_and_stacks_strings():
    """Equal MetaData stack into one MetaData; NonTensorData always stack into a stack."""
    meta = TensorDict(a=torch.zeros(3), m=MetaData("m", batch_size=[3]), batch_size=[3])
    stacked = dense_stack_tds([meta, meta], 0).get("m")
    assert type(stacked) is MetaData
    assert stacked.batch_size == torch.Size([2, 3])
    same = dense_stack_tds([TensorDict(s="a"), TensorDict(s="a")], 0).get("s")
    assert isinstance(same, NonTensorStack)
    assert same.tolist() == ["a", "a"]


# differs from the reference: it fails with an AttributeError; we name the entry
def test_dense_stack_tds_refuses_an_entry_that_is_non_tensor_in_some_inputs_only():
    """An entry that is a string in one input and a tensor in another raises, naming it."""
    text = TensorDict(label="p", batch_size=[1])
    tensor = TensorDict(label=torch.zeros(1), batch_size=[1])
    with pytest.raises(TypeError, match="label"):
        dense_stack_tds([text, tensor], 0)


def test_maybe_dense_stack_and_collate_stack_non_tensor_entries():
    """Stacking and collating samples with strings give a stack of their values."""
    stacked = maybe_dense_stack([_labelled(), _labelled()])
    assert stacked.get("label").tolist() == [["x", "y", "x"], ["x", "y", "x"]]
    samples = [TensorDict(a=torch.zeros(n), label=v) for n, v in ((2, "p"), (1, "q"))]
    batch = collate(samples, pad_keys={"a": -1.0})
    assert batch.get("label").tolist() == ["p", "q"]
    assert batch["a"].tolist() == [[0.0, 0.0], [0.0, -1.0]]
    same = collate([TensorDict(a=torch.zeros(2), label="p")] * 2)
    assert same.get("label").tolist() == ["p", "p"]


def test_merge_and_make_tensordict_keep_non_tensor_stacks():
    """Merging and building tensordicts carry stack entries over as they are."""
    merged = merge_tensordicts(_labelled(), TensorDict(b=torch.zeros(3), batch_size=[3]))
    assert merged.get("label").tolist() == ["x", "y", "x"]
    later = merge_tensordicts(TensorDict(b=torch.zeros(3), batch_size=[3]), _labelled())
    assert later.get("label").tolist() == ["x", "y", "x"]
    combined = merge_tensordicts(_labelled(), _labelled(), callback_exist=lambda *v: v[0])
    assert combined.get("label").tolist() == ["x", "y", "x"]
    assert make_tensordict(_labelled()).get("label").tolist() == ["x", "y", "x"]
    built = make_tensordict(label=NonTensorStack("a", "b"), batch_size=[2])
    assert built["label"] == ["a", "b"]


@given(
    values=st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=5),
    before=st.integers(-2, 3),
    after=st.integers(-2, 3),
)
def test_pad_of_a_non_tensor_stack_matches_padding_a_list(values, before, after):
    """Padding a stack gives the list padded with None (or cut) at each end."""
    assume(len(values) + min(before, 0) + min(after, 0) >= 1)  # crops leave a row
    td = TensorDict(a=torch.zeros(len(values)), batch_size=[len(values)])
    td["s"] = NonTensorStack(*values)
    expected = [None] * max(before, 0) + values[max(-before, 0) :]
    expected = expected[: len(expected) + after] if after < 0 else expected + [None] * after
    padded = pad(td, [before, after])
    assert padded.batch_size == torch.Size([len(expected)])
    assert padded.get("s").tolist() == expected
