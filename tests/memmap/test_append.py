"""``tensordict.append_memmap``: rows appended along the first batch dimension, in one step."""

from __future__ import annotations

import hashlib
import multiprocessing
import os

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, tensorclass
from tensordict.errors import AppendError

from ._kill import kill_at


@tensorclass
class Step:
    obs: torch.Tensor
    info: TensorDict


def _rows(start: int, count: int, note: str = "run") -> TensorDict:
    """Rows ``start`` .. ``start + count - 1``: each leaf's row i holds i."""
    index = torch.arange(start, start + count, dtype=torch.float32)
    return TensorDict(
        {
            "a": index,
            "b": index[:, None].expand(count, 3).to(torch.int64).contiguous(),
            "sub": TensorDict({"c": index[:, None].expand(count, 2).contiguous()}, [count, 2]),
            "note": note,
        },
        [count],
        names=["time"],
    )


def _check(td, rows: int) -> None:
    """Every leaf of ``td`` holds rows 0 .. rows-1, each row its index."""
    expected = torch.arange(rows, dtype=torch.float32)
    assert td.batch_size == (rows,) and td["sub"].batch_size == (rows, 2)
    assert td["a"].tolist() == expected.tolist()
    assert td["b"].tolist() == expected[:, None].expand(rows, 3).to(torch.int64).tolist()
    assert td["sub", "c"].tolist() == expected[:, None].expand(rows, 2).tolist()
    assert td["note"] == "run"


def _snapshot(folder) -> dict:
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name == "meta%lock":  # the format's lock: taken, never part of the data
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def test_rows_grow_every_level_and_keep_names_and_values(tmp_path):
    """Appending 2 rows to 3: every leaf and level has 5, in order; names and non-tensor values stay."""
    tensordict.save(_rows(0, 3), tmp_path / "td")
    tensordict.append_memmap(tmp_path / "td", _rows(3, 2))
    td = tensordict.load_memmap(tmp_path / "td")
    _check(td, 5)
    assert td.names == ["time"] and td["sub"].names == ["time", None]
    tensordict.append_memmap(tmp_path / "td", _rows(5, 4))
    _check(tensordict.load_memmap(tmp_path / "td"), 9)
    assert not [p for p in tmp_path.iterdir() if p.name != "td"]  # nothing left beside it


def test_a_tensorclass_grows_and_readers_keep_their_rows_until_refresh(tmp_path):
    """A saved tensorclass takes rows of its class; a tensordict loaded before keeps its rows."""
    step = Step(torch.zeros(2, 3), TensorDict({"r": torch.zeros(2)}, [2]), batch_size=[2])
    step.memmap(tmp_path / "step")
    before = tensordict.load_memmap(tmp_path / "step")
    more = Step(torch.ones(3, 3), TensorDict({"r": torch.ones(3)}, [3]), batch_size=[3])
    tensordict.append_memmap(tmp_path / "step", more)
    after = tensordict.load_memmap(tmp_path / "step")
    assert isinstance(after, Step) and after.batch_size == (5,)
    assert after.obs.sum().item() == 9.0 and after.info["r"].tolist() == [0, 0, 1, 1, 1]
    assert before.batch_size == (2,) and before.obs.sum().item() == 0.0


def test_an_empty_saved_batch_grows(tmp_path):
    """A tensordict saved with 0 rows (its leaves have no files) takes its first rows."""
    tensordict.save(_rows(0, 0), tmp_path / "td")
    tensordict.append_memmap(tmp_path / "td", _rows(0, 3))
    _check(tensordict.load_memmap(tmp_path / "td"), 3)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (lambda: _rows(3, 2).exclude("a"), r"lack the entries \['a'\]"),
        (lambda: _rows(3, 2).set("z", torch.zeros(2)), r"add \['z'\]"),
        (
            lambda: _rows(3, 2).set("a", torch.zeros(2, dtype=torch.float64)),
            r"'a' is \[3\] of torch.float32, the rows' is \[2\] of torch.float64",
        ),
        (lambda: _rows(3, 2).set("b", torch.zeros(2, 4, dtype=torch.int64)), "'b' is"),
        (lambda: _rows(3, 2).set("note", "other"), "'note' holds 'run'"),
        (lambda: TensorDict({"a": torch.zeros(2, 2)}, [2, 2]), "batch size"),
        (lambda: torch.zeros(2), "the rows must have a batch dimension|TensorDict"),
        (lambda: _rows(3, 2).set("sub", torch.zeros(2, 2)), "'sub' is a TensorDict"),
    ],
    ids=["missing", "extra", "dtype", "shape", "value", "batch", "tensor", "sub"],
)
def test_rows_that_do_not_fit_are_refused_before_anything_is_written(tmp_path, rows, match):
    """Another key set, dtype, trailing shape, batch size or non-tensor value: AppendError, folder unchanged."""
    tensordict.save(_rows(0, 3), tmp_path / "td")
    before = _snapshot(tmp_path / "td")
    with pytest.raises(AppendError, match=match) as info:
        tensordict.append_memmap(tmp_path / "td", rows())
    assert isinstance(info.value, ValueError)
    assert _snapshot(tmp_path / "td") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["td"]


def test_equal_values_in_a_non_tensor_stack_are_the_saved_value(tmp_path):
    """A NonTensorStack of values equal to the saved one is accepted, one that differs is not."""
    tensordict.save(_rows(0, 3), tmp_path / "td")
    rows = _rows(3, 2)
    rows["note"] = NonTensorStack("run", "run")
    tensordict.append_memmap(tmp_path / "td", rows)
    rows = _rows(5, 2)
    rows["note"] = NonTensorStack("run", "walk")
    with pytest.raises(AppendError, match="'note' holds 'run'"):
        tensordict.append_memmap(tmp_path / "td", rows)
    _check(tensordict.load_memmap(tmp_path / "td"), 5)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("kind", ["lazy", "nested", "stack", "archive"])
def test_what_cannot_grow_raises(tmp_path, kind):
    """A lazy stack, a nested tensor, a NonTensorStack entry and an archive cannot grow."""
    if kind == "lazy":
        saved = LazyStackedTensorDict(TensorDict({"a": torch.zeros(2)}, [2]), stack_dim=0)
        rows, match, path = saved, "LazyStackedTensorDict, which cannot grow", "td"
    elif kind == "nested":
        nt = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
        saved = TensorDict({"nt": nt}, [2])
        rows, match, path = saved, "'nt' is a nested tensor", "td"
    elif kind == "stack":
        saved = TensorDict({"s": NonTensorStack("x", "y")}, [2])
        rows, match, path = saved, "'s' is a NonTensorStack", "td"
    else:
        saved = _rows(0, 2)
        rows, match, path = saved, "an archive cannot grow", "td.tdz"
    saved.memmap(tmp_path / path)
    with pytest.raises(AppendError, match=match):
        tensordict.append_memmap(tmp_path / path, rows)


def test_a_pickled_saved_value_is_compared_only_when_allowed(tmp_path):
    """A saved value JSON cannot hold is unpickled for the comparison only with allow_pickle=True."""
    saved = TensorDict({"a": torch.zeros(2), "v": {1, 2}}, [2])
    saved.memmap(tmp_path / "td")
    rows = TensorDict({"a": torch.ones(1), "v": {1, 2}}, [1])
    with pytest.raises(AppendError, match="allow_pickle=True"):
        tensordict.append_memmap(tmp_path / "td", rows)
    tensordict.append_memmap(tmp_path / "td", rows, allow_pickle=True)
    assert tensordict.load_memmap(tmp_path / "td", allow_pickle=True)["a"].tolist() == [0, 0, 1]


def test_an_append_killed_at_every_step_leaves_the_old_rows_or_the_new(tmp_path):
    """kill -9 before each change an append makes: the folder loads with 3 rows or 5, every leaf
    and level agreeing; the next append removes what the dead one left, and succeeds."""
    folder = tmp_path / "td"
    tensordict.save(_rows(0, 3), folder)
    rows = _rows(3, 2)
    killed = grown = 0
    for step in range(1, 300):
        tensordict.save(_rows(0, 3), folder)
        done = not kill_at(step, lambda: tensordict.append_memmap(folder, rows))
        td = tensordict.load_memmap(folder)
        _check(td, td.batch_size[0])
        assert td.batch_size[0] in (3, 5)
        grown += td.batch_size[0] == 5
        if done:
            break
        killed += 1
    assert killed >= 10 and 1 <= grown < killed  # steps before and after the exchange
    tensordict.append_memmap(folder, _rows(td.batch_size[0], 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["td"]  # the dead writers' leftovers went


def _read_while_appending(folder: str, stop, out) -> None:
    try:
        seen = set()
        while not stop.is_set():
            td = tensordict.load_memmap(folder)
            _check(td, td.batch_size[0])
            seen.add(td.batch_size[0])
        out.put(("ok", sorted(seen)))
    except BaseException as err:  # reported: the parent fails with it
        out.put(("error", repr(err)))


@pytest.mark.timeout(180)
def test_a_reader_during_appends_sees_old_or_new_rows_never_a_mix(tmp_path):
    """A process loading in a loop while another appends 40 times: every load is one whole tree."""
    folder = tmp_path / "td"
    tensordict.save(_rows(0, 1), folder)
    ctx = multiprocessing.get_context("fork")
    stop, out = ctx.Event(), ctx.Queue()
    reader = ctx.Process(target=_read_while_appending, args=(str(folder), stop, out))
    reader.start()
    try:
        for i in range(1, 41):
            tensordict.append_memmap(folder, _rows(i, 1))
    finally:
        stop.set()
        result = out.get(timeout=60)
        reader.join(30)
    assert result[0] == "ok", result[1]
    assert len(result[1]) > 1  # it did read while the rows grew
    _check(tensordict.load_memmap(folder), 41)
