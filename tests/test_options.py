"""Global options: the setters as context managers, decorators and ``.set()``, and their effects."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

import tensordict
from tensordict import (
    TensorDict,
    capture_non_tensor_stack,
    get_printoptions,
    lazy_legacy,
    lazy_stack,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_lazy_legacy,
    set_list_to_stack,
    set_printoptions,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_defaults():
    """The options start at the well-known defaults."""
    assert lazy_legacy() is False
    assert capture_non_tensor_stack() is False
    assert list_to_stack() is True
    assert get_printoptions()["compact"] is True
    assert get_printoptions()["sort_keys"] == "alphabetical"


@pytest.mark.parametrize(
    ("setter", "getter", "value"),
    [
        (set_lazy_legacy, lazy_legacy, True),
        (set_capture_non_tensor_stack, capture_non_tensor_stack, True),
        (set_list_to_stack, list_to_stack, False),
    ],
)
def test_block_sets_and_restores(setter, getter, value):
    """A with-block sets the option and puts the old value back, even when it raises."""
    before = getter()
    with setter(value):
        assert getter() is value
    assert getter() is before
    with pytest.raises(ZeroDivisionError), setter(value):
        raise ZeroDivisionError
    assert getter() is before


@pytest.mark.parametrize(
    ("setter", "getter", "value"),
    [
        (set_lazy_legacy, lazy_legacy, True),
        (set_capture_non_tensor_stack, capture_non_tensor_stack, True),
        (set_list_to_stack, list_to_stack, False),
    ],
)
def test_decorator_applies_per_call(setter, getter, value):
    """A setter used as a decorator sets the option during each call only."""
    before = getter()

    @setter(value)
    def read():
        return getter()

    assert read() is value
    assert getter() is before


def test_nested_blocks_restore_in_order():
    """Nested blocks, even of one setter object, unwind to each outer value."""
    on = set_capture_non_tensor_stack(True)
    with on:
        with set_capture_non_tensor_stack(False):
            assert capture_non_tensor_stack() is False
            with on:
                assert capture_non_tensor_stack() is True
            assert capture_non_tensor_stack() is False
        assert capture_non_tensor_stack() is True
    assert capture_non_tensor_stack() is False


def test_set_changes_the_process_value():
    """``.set()`` changes the value for good, until set again."""
    set_capture_non_tensor_stack(True).set()
    try:
        assert capture_non_tensor_stack() is True
    finally:
        set_capture_non_tensor_stack(False).set()
    assert capture_non_tensor_stack() is False


# differs from the reference: its block value is one process-wide global, which another
# thread sees and which overlapping blocks in two threads undo for each other.
def test_blocks_in_two_threads_do_not_interfere():
    """A block in one thread is not seen by another, nor undone by its block ending."""
    inside = threading.Event()
    other_done = threading.Event()
    seen = {}

    def other():
        inside.wait()
        seen["other"] = capture_non_tensor_stack()
        with set_capture_non_tensor_stack(False):
            pass
        other_done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with set_capture_non_tensor_stack(True):
        inside.set()
        other_done.wait()
        seen["mine"] = capture_non_tensor_stack()
    thread.join()
    assert seen == {"other": False, "mine": True}


def test_printoptions_block_and_unknown_option():
    """set_printoptions changes the options for a block; an unknown option is a TypeError."""
    with set_printoptions(show_dtype=False):
        assert get_printoptions()["show_dtype"] is False
    assert get_printoptions()["show_dtype"] is True
    with pytest.raises(TypeError, match="foo"):
        set_printoptions(foo=True)


def test_printoptions_detailed_only_option_turns_compact_off():
    """An option only the detailed layout uses asks for it, unless compact is passed."""
    with set_printoptions(show_grad=True):
        assert get_printoptions()["compact"] is False
    with set_printoptions(show_grad=True, compact=True):
        assert get_printoptions()["compact"] is True


def test_verbose_false_hides_device_dtype_and_sharing():
    """verbose=False turns the device, dtype and is_shared parts off."""
    with set_printoptions(verbose=False):
        options = get_printoptions()
    assert not options["show_dtype"] and not options["show_device"]
    assert not options["show_is_shared"] and not options["show_field_device"]


def test_compact_repr_sorts_keys_unless_told():
    """The compact repr lists keys alphabetically; sort_keys='insertion' keeps their order."""
    td = TensorDict(z=torch.zeros(2), a=torch.ones(2, 3), batch_size=[2])
    assert repr(td) == "TensorDict(batch_size=[2], fields={a: f32[3], z: f32[]})"
    with set_printoptions(sort_keys="insertion", show_dtype=False):
        assert repr(td) == "TensorDict(batch_size=[2], fields={z: [], a: [3]})"


def test_detailed_repr_layout():
    """compact=False prints one Tensor(...) line per entry and an indented block per level."""
    td = TensorDict(a=torch.zeros(3, 4), b={"c": torch.ones(3, dtype=torch.int64)}, batch_size=[3])
    with set_printoptions(compact=False):
        text = repr(td)
    assert text == (
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, is_shared=False),\n"
        "        b: TensorDict(\n"
        "            fields={\n"
        "                c: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.int64, is_shared=False)},\n"
        "            batch_size=torch.Size([3]),\n"
        "            device=None,\n"
        "            is_shared=False)},\n"
        "    batch_size=torch.Size([3]),\n"
        "    device=None,\n"
        "    is_shared=False)"
    )


def test_detailed_repr_of_a_ragged_lazy_stack():
    """A lazy stack's detailed repr shows -1 where members differ, and their own keys apart."""
    stack = lazy_stack(
        [TensorDict(z=torch.zeros(1)), TensorDict(z=torch.zeros(2), y=torch.ones(()))]
    )
    assert repr(stack) == (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    z: f32[-1]}, exclusive_fields={1: {y: f32[]}})"
    )
    with set_printoptions(compact=False, verbose=False):
        text = repr(stack)
    assert text == (
        "LazyStackedTensorDict(\n"
        "    fields={\n"
        "        z: Tensor(shape=torch.Size([2, -1]))},\n"
        "    exclusive_fields={\n"
        "        1 ->\n"
        "            y: Tensor(shape=torch.Size([]))},\n"
        "    batch_size=torch.Size([2]),\n"
        "    stack_dim=0)"
    )


def test_compact_repr_wraps_past_80_characters():
    """A compact repr longer than 80 characters puts one entry a line, nesting as needed."""
    inner = {f"key_{i}": torch.zeros(3) for i in range(12)}
    text = repr(TensorDict(a=inner, b=torch.zeros(3), batch_size=[3]))
    lines = text.splitlines()
    assert lines[0] == "TensorDict(batch_size=[3], fields={"
    assert lines[1] == "    a: {"
    assert lines[2] == "        key_0: f32[],"
    # keys sort as their "key:" lines do, so key_10 comes before key_1
    assert lines[3] == "        key_10: f32[],"
    assert lines[-1] == "    b: f32[]})"


def test_compact_repr_of_nested_collections():
    """Nested levels show their own batch dims, and a lazy stack its class name."""
    inner = TensorDict(x=torch.zeros(3, 2), batch_size=[3])
    stack = lazy_stack([TensorDict(x=torch.zeros(3), batch_size=[3])] * 2, 1)
    assert repr(TensorDict(a=inner)) == "TensorDict(batch_size=[], fields={a: [3]{x: f32[2]}})"
    assert repr(TensorDict(l=stack)) == (
        "TensorDict(batch_size=[], fields={l: LazyStackedTensorDict[3,2]{x: f32[]}})"
    )


def test_plain_shows_summaries():
    """plain=True adds the mean and spread of floating entries and the range of the others."""
    td = TensorDict(a=torch.tensor([0.1, 0.25, 1 / 3]), c=torch.tensor([3, 7, 9]), batch_size=[3])
    with set_printoptions(plain=True, verbose=False):
        text = repr(td)
    assert "a: Tensor(shape=torch.Size([3]), mean=0.2278, std=0.1182)" in text
    assert "c: Tensor(shape=torch.Size([3]), min=3, max=9)" in text


def test_get_defaults_to_none_false_makes_get_raise():
    """After set_get_defaults_to_none(False), get without a default raises KeyError."""
    td = TensorDict(a={})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tensordict.set_get_defaults_to_none(False)
        try:
            with pytest.raises(KeyError):
                td.get("missing")
            with pytest.raises(KeyError):
                td.get(("a", "b"))
            assert td.get("missing", None) is None
        finally:
            tensordict.set_get_defaults_to_none(True)
    assert td.get("missing") is None


def test_deprecated_modes_warn():
    """Turning on the legacy lazy mode or turning list_to_stack off warns DeprecationWarning."""
    with pytest.warns(DeprecationWarning):
        set_lazy_legacy(True)
    with pytest.warns(DeprecationWarning):
        set_list_to_stack(False)


def test_exit_after_set_undoes_the_global_print_options():
    """set_printoptions(...).set() changes them for good; __exit__ on the same object restores them."""
    before = get_printoptions()
    setter = set_printoptions(show_is_shared=False)
    setter.set()
    try:
        assert get_printoptions()["show_is_shared"] is False
    finally:
        setter.__exit__(None, None, None)
    assert get_printoptions() == before
