"""tensordict.nn.sequence: TensorDictSequential, its keys, sub-sequences and container behaviour."""

from __future__ import annotations

import collections

import pytest
import torch
from torch import nn

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.nn import TensorDictModule as Mod
from tensordict.nn import TensorDictSequential as Seq


def _chain():
    return Seq(
        Mod(lambda a: a + 1, in_keys=["a"], out_keys=["b"]),
        Mod(lambda b: b * 2, in_keys=["b"], out_keys=["c"]),
        Mod(lambda x: -x, in_keys=["x"], out_keys=["d"]),
    )


def test_keys_are_the_external_inputs_and_every_output():
    """in_keys: read and not written earlier, in order; out_keys: every written key once."""
    seq = _chain()
    assert seq.in_keys == ["a", "x"]
    assert seq.out_keys == ["b", "c", "d"]
    rewrite = Seq(
        Mod(lambda a: a, in_keys=["a"], out_keys=["b"]),
        Mod(lambda b: b, in_keys=["b"], out_keys=["a"]),
    )
    assert (rewrite.in_keys, rewrite.out_keys) == (["a"], ["b", "a"])


def test_runs_modules_in_order_on_one_tensordict():
    """Each module sees what the earlier ones wrote; the input is returned."""
    td = TensorDict(a=torch.ones(()), x=torch.ones(()))
    out = _chain()(td)
    assert out is td
    assert (td["b"].item(), td["c"].item(), td["d"].item()) == (2.0, 4.0, -1.0)


def test_keyword_call_returns_every_output():
    """Called with tensors, the sequence returns the out_keys tensors."""
    b, c, d = _chain()(a=torch.ones(()), x=torch.ones(()))
    assert (b.item(), c.item(), d.item()) == (2.0, 4.0, -1.0)


def test_modules_from_a_list_or_a_dict():
    """One list, or one dict of names, builds the same chain; names index the modules."""
    mods = [
        Mod(lambda a: a + 1, in_keys=["a"], out_keys=["b"]),
        Mod(lambda b: b, in_keys=["b"], out_keys=["c"]),
    ]
    assert Seq(mods).out_keys == ["b", "c"]
    named = Seq(collections.OrderedDict(first=mods[0], second=mods[1]))
    assert named["second"] is mods[1]
    assert named(TensorDict(a=torch.zeros(())))["c"] == 1
    assert Seq({"first": mods[0]})["first"] is mods[0]


def test_plain_callables_are_wrapped():
    """A callable without keys becomes a WrapModule working on the whole tensordict."""
    seq = Seq(Mod(lambda x: x * 2, in_keys=["x"], out_keys=["y"]), lambda td: td.reshape(-1))
    out = seq(TensorDict(x=torch.ones(2, 3), batch_size=[2, 3]))
    assert out.batch_size == (6,)


def test_select_out_keys_keeps_inputs_and_selected_outputs():
    """Selected outputs and the input's own entries are kept; reset brings every output back."""
    seq = _chain().select_out_keys("c")
    assert seq.out_keys == ["c"]
    out = seq(TensorDict(a=torch.ones(()), x=torch.ones(())))
    assert sorted(out.keys()) == ["a", "c", "x"]
    assert seq(a=torch.ones(()), x=torch.ones(())) == 4
    seq.reset_out_keys()
    assert seq.out_keys == ["b", "c", "d"]
    with pytest.raises(ValueError):
        seq.select_out_keys("nope")


def test_selected_out_keys_argument():
    """selected_out_keys= in the constructor is select_out_keys."""
    seq = Seq(
        Mod(lambda a: a + 1, in_keys=["a"], out_keys=["b"]),
        Mod(lambda b: b, in_keys=["b"], out_keys=["c"]),
        selected_out_keys=["c"],
    )
    assert sorted(seq(TensorDict(a=torch.ones(()))).keys()) == ["a", "c"]


def test_select_subsequence_by_outputs_and_inputs():
    """Filtering by out_keys keeps what they need; by in_keys, what can run."""
    seq = _chain()
    sub = seq.select_subsequence(out_keys=["c"])
    assert (sub.in_keys, sub.out_keys) == (["a"], ["b", "c"])
    assert sub[0] is seq[0]
    assert seq.select_subsequence(in_keys=["x"]).out_keys == ["d"]
    assert seq.select_subsequence(in_keys=["b"]).out_keys == ["c"]
    with pytest.raises(ValueError):
        seq.select_subsequence(in_keys=["nothing"])


def test_select_subsequence_filters_nested_sequences_and_keeps_names():
    """Nested plain sequences are filtered too; a named sequence keeps the names."""
    inner = Seq(
        Mod(lambda a: a, in_keys=["a"], out_keys=["b"]),
        Mod(lambda x: x, in_keys=["x"], out_keys=["y"]),
    )
    outer = Seq(
        collections.OrderedDict(inner=inner, last=Mod(lambda b: b, in_keys=["b"], out_keys=["c"]))
    )
    sub = outer.select_subsequence(in_keys=["a"])
    assert list(sub.module.keys()) == ["inner", "last"]
    assert len(sub["inner"]) == 1


def test_inplace_modes_leave_the_input_alone():
    """inplace=False/'empty' return only the outputs and do not write into the input."""
    td = TensorDict(a=torch.ones(3), x=torch.ones(3), batch_size=[3])
    out = Seq(*_chain().module, inplace=False)(td)
    assert sorted(out.keys()) == ["b", "c", "d"] and out.batch_size == ()
    assert sorted(td.keys()) == ["a", "x"]
    out = Seq(*_chain().module, inplace="empty")(td)
    assert out.batch_size == (3,) and sorted(out.keys()) == ["b", "c", "d"]


def test_tensordict_out_gets_the_outputs():
    """tensordict_out receives the out_keys."""
    target = TensorDict()
    out = _chain()(TensorDict(a=torch.ones(()), x=torch.ones(())), tensordict_out=target)
    assert out is target and sorted(target.keys()) == ["b", "c", "d"]


def test_extra_keywords_are_refused():
    """Keywords other than tensordict_out (with a tensordict input) raise."""
    with pytest.raises(RuntimeError):
        _chain()(TensorDict(a=torch.ones(()), x=torch.ones(())), foo=1)


def test_failing_module_is_named_in_a_note():
    """An error inside a module carries a note with its index."""
    seq = Seq(
        Mod(lambda a: a, in_keys=["a"], out_keys=["b"]),
        Mod(lambda b: b.undefined, in_keys=["b"], out_keys=["c"]),
    )
    with pytest.raises(AttributeError) as info:
        seq(TensorDict(a=torch.ones(())))
    assert any("'1'" in note for note in getattr(info.value, "__notes__", []))


def test_partial_tolerant_skips_modules_without_inputs():
    """A module whose inputs are missing is skipped; on a lazy stack it runs on the members that can."""
    seq = Seq(
        Mod(lambda a: a + 1, in_keys=["a"], out_keys=["b"]),
        Mod(lambda z: z, in_keys=["z"], out_keys=["w"]),
        partial_tolerant=True,
    )
    out = seq(TensorDict(a=torch.zeros(())))
    assert sorted(out.keys()) == ["a", "b"]
    stack = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.zeros(()), z=torch.ones(())), TensorDict(a=torch.ones(()))], 0
    )
    out = seq(stack)
    assert out.tensordicts[0]["w"] == 1 and "w" not in out.tensordicts[1].keys()


def test_container_indexing_and_editing_recompute_keys():
    """seq[i], slices, assignment and deletion work and update the keys."""
    seq = _chain()
    assert len(seq) == 3
    head = seq[:2]
    assert isinstance(head, Seq) and head.out_keys == ["b", "c"]
    seq[2] = Mod(lambda c: c, in_keys=["c"], out_keys=["e"])
    assert seq.out_keys == ["b", "c", "e"] and seq.in_keys == ["a"]
    del seq[1]
    assert seq.out_keys == ["b", "e"] and seq.in_keys == ["a", "c"]


def test_edit_removing_a_selected_key_is_refused_and_changes_nothing():
    """An edit that would drop a selected output raises and leaves the sequence as it was."""
    seq = _chain().select_out_keys("d")
    with pytest.raises(ValueError):
        del seq[2]
    assert len(seq) == 3


def test_parameters_of_every_module_are_registered():
    """parameters() sees the modules' parameters."""
    seq = Seq(
        Mod(nn.Linear(2, 3), in_keys=["x"], out_keys=["h"]),
        Mod(nn.Linear(3, 1), in_keys=["h"], out_keys=["y"]),
    )
    assert len(list(seq.parameters())) == 4
    assert seq(TensorDict(x=torch.ones(4, 2), batch_size=[4]))["y"].shape == (4, 1)
