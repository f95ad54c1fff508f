"""@tensorclass: dataclass-like classes over a tensordict, their methods, and their folders on disk."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib
import inspect
import json
import os
import pickle
import sys
from typing import Any, ClassVar, Optional

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tensordict
from tensordict import MemoryMappedTensor, NonTensorData, TensorDict, is_tensor_collection
from tensordict.tensorclass import (
    ReservedFieldError,
    UnknownFieldError,
    is_tensorclass,
    tensorclass,
)

from conftest import MANIFEST


@tensorclass
class Frame:
    pixels: torch.Tensor
    label: torch.Tensor
    source: str = "camera"
    extra: torch.Tensor | None = None
    info: Any = None
    scale = 2.0  # no annotation: a plain class attribute
    registry: ClassVar[dict] = {}

    def brightness(self) -> torch.Tensor:
        return self.pixels.float().mean()


@tensorclass
class Inner:
    x: torch.Tensor


@tensorclass
class Outer:
    inner: Inner
    y: torch.Tensor = None


def frame(n: int = 4, **kwargs) -> Frame:
    pixels = torch.arange(n * 4, dtype=torch.uint8).reshape(n, 2, 2)
    return Frame(pixels=pixels, label=torch.arange(n), batch_size=[n], **kwargs)


def tree(folder) -> dict:
    """Every file under ``folder``, relative, with the parsed content of each meta.json."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            out[rel] = json.loads(open(path).read()) if name == "meta.json" else None
    return out


# ====================================================================== construction
def test_fields_are_set_positionally_or_by_name():
    """Positional arguments fill the fields in declaration order; keywords by name."""
    f = Frame(torch.zeros(3, 2, 2), torch.ones(3), "lidar", batch_size=[3])
    assert f.pixels.shape == (3, 2, 2) and torch.equal(f.label, torch.ones(3))
    assert f.source == "lidar"
    assert f.batch_size == torch.Size([3]) and f.shape == torch.Size([3])


def test_defaults_fill_missing_fields_and_none_stores_no_entry():
    """A field with a default may be left out; a None field reads None and has no key."""
    f = frame()
    assert f.source == "camera" and f.extra is None and f.info is None
    assert sorted(f.keys()) == ["label", "pixels", "source"]


def test_default_factory_is_called_for_each_instance():
    """A field(default_factory=...) builds a fresh value for every instance."""

    @tensorclass
    class WithFactory:
        x: torch.Tensor = dataclasses.field(default_factory=lambda: torch.zeros(2))

    a, b = WithFactory(batch_size=[2]), WithFactory(batch_size=[2])
    a.x += 1
    assert torch.equal(b.x, torch.zeros(2))


def test_attributes_without_annotation_are_class_attributes_not_fields():
    """Non-annotated and ClassVar attributes stay class attributes and are not fields."""
    f = frame()
    assert [fd.name for fd in dataclasses.fields(Frame)] == [
        "pixels",
        "label",
        "source",
        "extra",
        "info",
    ]
    assert f.scale == 2.0 and Frame.registry == {}
    f.scale = 3.0
    assert f.scale == 3.0 and Frame.scale == 2.0 and "scale" not in f.keys()


def test_batch_size_device_and_names_keywords():
    """batch_size, device and names go to the tensordict; batch_size defaults to []."""
    f = frame(device="cpu", names=["t"])
    assert f.device == torch.device("cpu") and f.pixels.device.type == "cpu"
    assert f.names == ["t"]
    assert Frame(pixels=torch.zeros(2), label=torch.zeros(2)).batch_size == torch.Size([])


def test_signature_lists_fields_then_keyword_only_options():
    """inspect.signature shows the fields, then keyword-only batch_size, device, names."""
    params = inspect.signature(Frame).parameters
    assert list(params) == [
        "pixels",
        "label",
        "source",
        "extra",
        "info",
        "batch_size",
        "device",
        "names",
    ]
    assert params["source"].default == "camera"
    assert params["batch_size"].kind is inspect.Parameter.KEYWORD_ONLY


def test_post_init_runs_after_the_fields_are_set():
    """__post_init__ sees the fields."""

    @tensorclass
    class Normalised:
        x: torch.Tensor

        def __post_init__(self):
            self.x = self.x / self.x.sum()

    assert torch.allclose(Normalised(x=torch.ones(4), batch_size=[4]).x, torch.full((4,), 0.25))


def test_user_methods_and_repr_are_kept():
    """Methods of the class are kept; a user-defined __repr__ wins over the generated one."""

    @tensorclass
    class Named:
        x: torch.Tensor

        def __repr__(self):
            return "Named!"

    assert frame().brightness() == torch.arange(16, dtype=torch.float32).mean()
    assert repr(Named(x=torch.zeros(1))) == "Named!"


# ====================================================================== bad input
def test_unknown_keyword_raises_type_error_naming_it():
    """A keyword that is not a field raises TypeError (also AttributeError) naming it."""
    with pytest.raises(TypeError, match="'colour'.*no such field"):
        Frame(pixels=torch.zeros(2), label=torch.zeros(2), colour=1, batch_size=[2])
    assert issubclass(UnknownFieldError, AttributeError)


def test_missing_required_argument_raises_type_error_naming_it():
    """Fields without a default are required, Optional ones too (as in a dataclass)."""

    @tensorclass
    class Maybe:
        x: Optional[torch.Tensor]  # noqa: UP045 - the typing spelling is what users write

    with pytest.raises(TypeError, match="missing 2 required argument.*'pixels', 'label'"):
        Frame(batch_size=[4])
    with pytest.raises(TypeError, match="missing 1 required argument.*'label'"):
        Frame(torch.zeros(4), batch_size=[4])
    with pytest.raises(TypeError, match="missing 1 required argument.*'x'"):
        Maybe()
    assert Maybe(x=None).x is None


def test_too_many_positional_and_duplicate_arguments_raise_type_error():
    """Extra positional arguments and a field given twice raise TypeError."""
    with pytest.raises(TypeError, match="positional arguments but"):
        Frame(torch.zeros(2), torch.zeros(2), "s", None, None, [2])
    with pytest.raises(TypeError, match="multiple values for argument 'pixels'"):
        Frame(torch.zeros(2), pixels=torch.zeros(2), label=torch.zeros(2))


def test_tensor_not_matching_the_batch_size_raises_naming_the_field():
    """At construction and on assignment, RuntimeError names the field and both shapes."""
    with pytest.raises(RuntimeError, match="'label'.*batch_size=\\[4\\].*\\[3\\]"):
        Frame(pixels=torch.zeros(4, 2), label=torch.zeros(3), batch_size=[4])
    f = frame()
    with pytest.raises(RuntimeError, match="'pixels'"):
        f.pixels = torch.zeros(5, 2, 2)
    assert f.pixels.shape == (4, 2, 2)


def test_setting_an_unknown_attribute_raises_naming_the_fields():
    """Setting a name that is neither a field nor a class attribute raises AttributeError."""
    with pytest.raises(AttributeError, match="'colour'.*fields are \\['pixels'"):
        frame().colour = 1


def test_reading_an_unknown_attribute_raises_attribute_error():
    """An unknown attribute names the fields; hasattr stays False."""
    with pytest.raises(AttributeError, match="no attribute or field 'colour'"):
        frame().colour  # noqa: B018
    assert not hasattr(frame(), "colour")


def test_field_named_like_a_tensordict_method_is_refused_unless_shadow():
    """A field called 'apply' raises ReservedFieldError (an AttributeError); shadow=True allows it."""
    with pytest.raises(AttributeError, match="'apply'.*shadow=True"):

        @tensorclass
        class Bad:
            apply: torch.Tensor

    @tensorclass(shadow=True)
    class Shadowing:
        apply: torch.Tensor

    assert torch.equal(Shadowing(apply=torch.ones(2)).apply, torch.ones(2))
    assert issubclass(ReservedFieldError, AttributeError)


def test_set_and_update_refuse_keys_that_are_not_fields():
    """set() and update() with a non-field key raise (TypeError and ValueError) and change nothing."""
    f = frame()
    with pytest.raises(TypeError, match="'zz'"):
        f.set("zz", torch.zeros(4))
    with pytest.raises(ValueError, match="'zz'"):
        f.update({"zz": torch.zeros(4)})
    assert "zz" not in f.keys()


# ====================================================================== attributes
def test_non_tensor_fields_are_non_tensor_data_read_back_as_values():
    """Strings and other objects are NonTensorData in the tensordict and read back as themselves."""
    f = frame()
    f.info = {"camera": 3}
    assert f.info == {"camera": 3} and f.get("info") == {"camera": 3}
    assert isinstance(f._tensordict.get("info"), NonTensorData)
    assert f._tensordict.get("source").batch_size == torch.Size([4])


def test_setting_a_field_to_none_removes_its_entry():
    """Assigning None drops the entry; the field reads None."""
    f = frame(extra=torch.ones(4))
    assert "extra" in f.keys()
    f.extra = None
    assert f.extra is None and "extra" not in f.keys()


def test_set_get_and_update_use_fields():
    """set/get/update address fields and return the instance."""
    f = frame()
    assert f.set("extra", torch.ones(4)) is f and torch.equal(f.get("extra"), torch.ones(4))
    assert f.update({"label": torch.zeros(4, dtype=torch.int64)}) is f
    assert f.label.sum() == 0 and f.get("source") == "camera"


def test_nocast_stores_numbers_as_values():
    """With nocast=True a Python number is a non-tensor value, not a tensor."""

    @tensorclass(nocast=True)
    class Config:
        x: torch.Tensor
        steps: int = 3

    c = Config(x=torch.zeros(2), batch_size=[2])
    assert c.steps == 3 and isinstance(c.steps, int)


def test_batch_size_and_names_are_settable():
    """Assigning batch_size and names changes the tensordict's."""
    f = frame()
    f.batch_size = []
    assert f.batch_size == torch.Size([]) and f._tensordict.batch_size == torch.Size([])
    f.batch_size = [4]
    f.names = ["time"]
    assert f.names == ["time"]


# ====================================================================== forwarded methods
@pytest.mark.parametrize(
    "index, size",
    [(0, []), (slice(1, 3), [2]), (torch.tensor([True, False, True, False]), [2])]
    + [(torch.tensor([3, 0]), [2]), (None, [1, 4]), ((..., None), [4, 1])],
)
def test_indexing_returns_the_class(index, size):
    """Indexing on the batch dims returns an instance holding the indexed fields."""
    f = frame()
    out = f[index]
    assert type(out) is Frame and list(out.batch_size) == size
    assert torch.equal(out.label, f.label[index]) and out.source == "camera"


def test_indexing_with_a_string_raises_value_error():
    """tc["key"] is refused: fields are read as attributes or with get()."""
    with pytest.raises(ValueError, match="'label'.*attribute"):
        frame()["label"]


def test_index_assignment_writes_every_field():
    """tc[idx] = instance writes into each tensor field; a scalar fills them."""
    f = frame()
    f[1] = Frame(pixels=torch.full((2, 2), 9, dtype=torch.uint8), label=torch.tensor(7))
    assert f.label.tolist() == [0, 7, 2, 3] and (f.pixels[1] == 9).all()
    f[2:] = 0
    assert f.label.tolist() == [0, 7, 0, 0]


def test_torch_stack_and_cat_return_the_class():
    """torch.stack and torch.cat of instances return the class; stacked values read as nested lists."""
    a, b = frame(), frame()
    stacked = torch.stack([a, b], 1)
    assert type(stacked) is Frame and stacked.batch_size == torch.Size([4, 2])
    assert torch.equal(stacked.label[:, 1], b.label) and stacked.source == [["camera"] * 2] * 4
    cat = torch.cat([a, b])
    assert type(cat) is Frame and cat.batch_size == torch.Size([8])


def test_stack_refuses_mixed_classes():
    """Stacking a Frame with another class raises TypeError naming both."""
    with pytest.raises(TypeError, match="Frame with a Inner"):
        torch.stack([frame(), Inner(x=torch.zeros(4), batch_size=[4])])


@pytest.mark.parametrize(
    "op, size",
    [
        (lambda f: f.reshape(2, 2), [2, 2]),
        (lambda f: f.view(2, 2), [2, 2]),
        (lambda f: f.unsqueeze(0), [1, 4]),
        (lambda f: f.unsqueeze(-1).squeeze(-1), [4]),
        (lambda f: f.reshape(2, 2).permute(1, 0), [2, 2]),
        (lambda f: f.reshape(2, 2).transpose(0, 1), [2, 2]),
        (lambda f: f.reshape(2, 2).flatten(), [4]),
        (lambda f: f.unflatten(0, (2, 2)), [2, 2]),
        (lambda f: f[0].expand(3), [3]),
        (lambda f: torch.reshape(f, (2, 2)), [2, 2]),
    ],
)
def test_shape_methods_return_the_class(op, size):
    """Reshaping methods (and their torch.* forms) return an instance with the new batch size."""
    out = op(frame())
    assert type(out) is Frame and list(out.batch_size) == size
    assert list(out.pixels.shape) == size + [2, 2]


def test_unbind_split_and_iteration_yield_the_class():
    """unbind/split/chunk return tuples of instances; iterating walks the first dim."""
    f = frame()
    assert [type(x) for x in f.unbind(0)] == [Frame] * 4
    assert [x.batch_size[0] for x in f.split(3)] == [3, 1]
    assert all(type(x) is Frame for x in f.chunk(2))
    assert [int(x.label) for x in f] == [0, 1, 2, 3] and len(f) == 4


def test_apply_returns_the_class_and_accepts_other_instances():
    """apply maps every tensor; another instance's tensors are passed alongside."""
    f = frame()
    doubled = f.apply(lambda x: x * 2)
    assert type(doubled) is Frame and doubled.label.tolist() == [0, 2, 4, 6]
    summed = f.apply(lambda x, y: x + y, doubled)
    assert summed.label.tolist() == [0, 3, 6, 9] and summed.source == "camera"
    assert f.apply_(lambda x: x + 1) is f and f.label.tolist() == [1, 2, 3, 4]


def test_to_and_clone_return_the_class():
    """to(dtype) converts every tensor; clone copies the data."""
    f = frame()
    as_float = f.to(torch.float64)
    assert type(as_float) is Frame and as_float.pixels.dtype == torch.float64
    assert type(f.to("cpu")) is Frame
    twin = f.clone()
    twin.label += 10
    assert type(twin) is Frame and f.label.tolist() == [0, 1, 2, 3]


def test_equality_returns_an_instance_of_booleans():
    """== and != return the class holding boolean tensors."""
    a, b = frame(), frame()
    b.label[0] = 9
    eq = a == b
    assert type(eq) is Frame and eq.label.tolist() == [False, True, True, True]
    assert eq.pixels.dtype == torch.bool and (a != b).label.tolist() == [True, False, False, False]
    assert (a + a).label.tolist() == [0, 2, 4, 6]


def test_lock_and_unlock_return_the_instance():
    """lock_/unlock_ return the instance; a locked one refuses to rebind a field."""
    f = frame()
    assert f.lock_() is f and f.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        f.label = torch.zeros(4)
    assert f.unlock_() is f and not f.is_locked


def test_keys_items_and_repr():
    """keys/items list the stored entries; the repr names the class, dtypes and non-tensor types."""
    f = frame()
    assert dict(f.items())["label"] is f.label
    assert repr(f) == (
        "Frame(batch_size=[4], fields={\n    extra: None,\n    info: None,\n    label: i64[],\n"
        "    pixels: u8[2,2],\n    source: str})"
    )


def test_is_tensorclass_and_is_tensor_collection():
    """Both helpers accept a class or an instance."""
    assert is_tensorclass(Frame) and is_tensorclass(frame())
    assert not is_tensorclass(TensorDict()) and not is_tensorclass(torch.zeros(1))
    assert is_tensor_collection(Frame) and is_tensor_collection(frame())


def test_pickle_copy_and_deepcopy():
    """Pickling round-trips; copy shares tensors, deepcopy copies them."""
    f = frame()
    back = pickle.loads(pickle.dumps(f))
    assert type(back) is Frame and torch.equal(back.pixels, f.pixels) and back.source == "camera"
    assert copy.copy(f).label is f.label
    deep = copy.deepcopy(f)
    assert type(deep) is Frame and deep.label is not f.label


def test_from_dict_from_tensordict_and_to_tensordict():
    """from_dict and from_tensordict return the class; to_tensordict returns a plain copy."""
    f = Frame.from_dict({"pixels": torch.zeros(3, 2), "label": torch.ones(3)}, batch_size=[3])
    assert type(f) is Frame and f.batch_size == torch.Size([3]) and f.source is None
    auto = Frame.from_dict(
        {"pixels": torch.zeros(3, 2), "label": torch.ones(3)}, auto_batch_size=True
    )
    assert auto.batch_size == torch.Size([3])
    td = f.to_tensordict()
    assert type(td) is TensorDict and td["label"] is not f.label
    assert type(Frame.from_tensordict(td)) is Frame
    with pytest.raises(ValueError, match="'zz'"):
        Frame.from_dict({"zz": torch.zeros(3)})


def test_frozen_refuses_assignment_and_is_locked():
    """A frozen class raises FrozenInstanceError on assignment; its tensordict is locked."""

    @tensorclass(frozen=True)
    class Fixed:
        x: torch.Tensor

    f = Fixed(x=torch.zeros(3), batch_size=[3])
    assert f.is_locked
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        f.x = torch.ones(3)


def test_kw_only_and_subclass_fields():
    """kw_only refuses positional fields; a subclass adds fields after its parent's."""

    @tensorclass(kw_only=True)
    class Keywords:
        x: torch.Tensor

    with pytest.raises(TypeError, match="positional"):
        Keywords(torch.zeros(2))

    @tensorclass
    class Labelled(Inner):
        tag: str = "t"

    obj = Labelled(torch.zeros(2), batch_size=[2])
    assert obj.tag == "t" and type(obj[0]) is Labelled and isinstance(obj, Inner)


def test_nested_tensorclass_field():
    """A field holding another tensorclass keeps its class through indexing and stacking."""
    o = Outer(inner=Inner(x=torch.zeros(4, 3), batch_size=[4]), batch_size=[4])
    assert type(o.inner) is Inner and type(o[0].inner) is Inner
    assert torch.stack([o, o]).inner.batch_size == torch.Size([2, 4])
    assert o.get(("inner", "x")).shape == (4, 3)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_indexing_commutes_with_reading_a_field(data):
    """tc[idx].field equals tc.field[idx] for slices and integer lists."""
    n = data.draw(st.integers(1, 6))
    f = frame(n)
    start = data.draw(st.integers(0, n))
    step = data.draw(st.integers(1, 3))
    rows = data.draw(st.lists(st.integers(0, n - 1), max_size=5))
    for index in (slice(start, None, step), torch.tensor(rows, dtype=torch.long)):
        assert torch.equal(f[index].pixels, f.pixels[index])
        assert torch.equal(f[index].label, f.label[index])


# ====================================================================== as a leaf of a TensorDict
def test_instance_as_a_tensordict_entry():
    """td["frame"] returns the Frame; indexing and stacking the tensordict keep the class."""
    td = TensorDict({"frame": frame(), "r": torch.zeros(4)}, [4])
    assert type(td["frame"]) is Frame
    assert type(td[0]["frame"]) is Frame and td[0]["frame"].batch_size == torch.Size([])
    assert torch.equal(td["frame", "label"], torch.arange(4))
    stacked = torch.stack([td, td])
    assert type(stacked["frame"]) is Frame and stacked["frame"].batch_size == torch.Size([2, 4])
    assert type(td.reshape(2, 2)["frame"]) is Frame
    assert type(td.apply(lambda x: x + 1)["frame"]) is Frame


def test_instance_with_wrong_batch_size_is_refused_by_a_tensordict():
    """A Frame whose batch size does not start with the tensordict's raises RuntimeError naming the key."""
    with pytest.raises(RuntimeError, match="'frame'"):
        TensorDict({"frame": frame(4)}, [5])


def test_locking_a_tensordict_locks_its_tensorclass_entries():
    """lock_() on the parent locks the Frame's tensordict too."""
    td = TensorDict({"frame": frame()}, [4]).lock_()
    assert td["frame"].is_locked
    td.unlock_()
    assert not td["frame"].is_locked


# ====================================================================== memory mapping
def test_memmap_layout_is_meta_type_plus_tensordict_folder(tmp_path):
    """memmap writes meta.json with only _type and the data under _tensordict/, like the reference."""
    f = frame()
    f.info = {"k": 1}
    out = f.memmap(tmp_path / "f")
    assert type(out) is Frame and out.is_locked and out.is_memmap()
    files = tree(tmp_path / "f")
    assert files["meta.json"] == {"_type": str(Frame)}
    inner = files[os.path.join("_tensordict", "meta.json")]
    assert inner["shape"] == [4] and inner["_class"] == "tensordict:TensorDict"
    assert inner["pixels"] == {
        "device": "cpu",
        "shape": [4, 2, 2],
        "dtype": "torch.uint8",
        "is_nested": False,
    }
    assert inner["source"] == {"type": "NonTensorData"} and inner["info"] == {
        "type": "NonTensorData"
    }
    assert "extra" not in inner
    source = files[os.path.join("_tensordict", "source", "meta.json")]
    assert source["data"] == "camera" and source["_is_non_tensor"] is True
    assert os.path.join("_tensordict", "pixels.memmap") in files
    assert out.saved_path == str(tmp_path / "f" / "_tensordict")


def test_memmap_load_memmap_round_trip(tmp_path):
    """Cls.load_memmap and TensorDict.load_memmap both return an unlocked, memory-mapped Frame."""
    f = frame()
    f.memmap(tmp_path / "f")
    for loaded in (Frame.load_memmap(tmp_path / "f"), TensorDict.load_memmap(tmp_path / "f")):
        assert type(loaded) is Frame and not loaded.is_locked and loaded.is_memmap()
        assert isinstance(loaded.pixels, MemoryMappedTensor)
        assert torch.equal(loaded.pixels, f.pixels) and loaded.source == "camera"
        assert loaded._tensordict.get("source").batch_size == torch.Size([4])


def test_memmap_of_a_tensordict_holding_a_tensorclass(tmp_path):
    """The parent records {"type": "Frame"}; the entry's folder is a tensorclass folder; it loads back."""
    td = TensorDict({"frame": frame(), "r": torch.zeros(4)}, [4])
    td.memmap(tmp_path / "td")
    files = tree(tmp_path / "td")
    assert files["meta.json"]["frame"] == {"type": "Frame"}
    assert files[os.path.join("frame", "meta.json")] == {"_type": str(Frame)}
    assert os.path.join("frame", "_tensordict", "label.memmap") in files
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert type(loaded["frame"]) is Frame and loaded["frame"].source == "camera"
    assert torch.equal(loaded["frame", "label"], torch.arange(4)) and loaded.is_memmap()


def test_nested_tensorclass_round_trip(tmp_path):
    """A tensorclass field of a tensorclass gets its own tensorclass folder."""
    o = Outer(inner=Inner(x=torch.ones(2, 3), batch_size=[2]), y=torch.zeros(2), batch_size=[2])
    o.memmap(tmp_path / "o")
    files = tree(tmp_path / "o")
    assert files[os.path.join("_tensordict", "inner", "meta.json")] == {"_type": str(Inner)}
    loaded = Outer.load_memmap(tmp_path / "o")
    assert type(loaded.inner) is Inner and torch.equal(loaded.inner.x, torch.ones(2, 3))


def test_memmap_in_place_and_again_without_prefix(tmp_path):
    """memmap_ returns the instance itself; a second memmap_() reuses its folder and files."""
    f = frame()
    assert f.memmap_(tmp_path / "f") is f and f.is_memmap() and f.is_locked
    filename = f.pixels._filename
    loaded = Frame.load_memmap(tmp_path / "f")
    assert loaded.memmap_() is loaded and loaded.pixels._filename == filename


def test_memmap_like_gives_zeros_and_shared_memory_without_prefix(tmp_path):
    """memmap_like has the layout and zeros; memmap() without prefix needs no folder."""
    like = frame().memmap_like(tmp_path / "like")
    assert type(like) is Frame and (like.label == 0).all() and like.pixels.shape == (4, 2, 2)
    shared = frame().memmap()
    assert type(shared) is Frame and shared.is_memmap() and shared.saved_path is None


def test_reference_fixture_loads_as_fixture_classes_frame(fixture_copy, fixture_classes):
    """The reference's tensorclass folder loads as fixture_classes.Frame matching MANIFEST.json."""
    folder = fixture_copy("tensorclass")
    manifest = MANIFEST["tensorclass"]
    for loaded in (TensorDict.load_memmap(folder), fixture_classes.Frame.load_memmap(folder)):
        assert type(loaded) is fixture_classes.Frame
        assert list(loaded.batch_size) == manifest["batch_size"] and loaded.is_memmap()
        for raw_key, info in manifest["entries"].items():
            (name,) = json.loads(raw_key)
            value = getattr(loaded, name)
            assert str(value.dtype) == info["dtype"] and list(value.shape) == info["shape"]
            digest = hashlib.sha256(value.contiguous().view(torch.uint8).numpy().tobytes())
            assert digest.hexdigest() == info["sha256"], name


def test_our_layout_matches_the_reference_fixture(tmp_path, fixture_copy, fixture_classes):
    """Writing the loaded fixture again gives the same files and the same top meta.json."""
    folder = fixture_copy("tensorclass")
    fixture_classes.Frame.load_memmap(folder).memmap(tmp_path / "ours")
    ours, theirs = tree(tmp_path / "ours"), tree(folder)
    assert set(ours) == set(theirs)
    assert ours["meta.json"] == theirs["meta.json"] == {"_type": "<class 'fixture_classes.Frame'>"}


def test_unregistered_class_fails_with_a_clear_error(tmp_path):
    """A folder naming a class never decorated here raises, naming it and the ways out; nothing is imported."""
    folder = tmp_path / "missing"
    TensorDict({"x": torch.zeros(3)}, [3]).memmap(folder / "_tensordict")
    (folder / "meta.json").write_text(json.dumps({"_type": "<class 'nowhere.Missing'>"}))
    with pytest.raises(ValueError, match="'nowhere.Missing'.*not registered.*Import.*load_memmap"):
        TensorDict.load_memmap(folder)
    assert "nowhere" not in sys.modules
    loaded = Inner.load_memmap(folder)
    assert type(loaded) is Inner and torch.equal(loaded.x, torch.zeros(3))


def test_cls_load_memmap_of_a_tensordict_folder(tmp_path):
    """Cls.load_memmap wraps a plain TensorDict folder whose keys are fields; other keys raise."""
    TensorDict({"x": torch.ones(2)}, [2]).memmap(tmp_path / "td")
    assert type(Inner.load_memmap(tmp_path / "td")) is Inner
    TensorDict({"zz": torch.ones(2)}, [2]).memmap(tmp_path / "other")
    with pytest.raises(ValueError, match="'zz'"):
        Inner.load_memmap(tmp_path / "other")


def test_tensorclass_folder_without_its_data_raises(tmp_path):
    """A meta.json naming a tensorclass without _tensordict/ raises FileNotFoundError naming it."""
    (tmp_path / "meta.json").write_text(json.dumps({"_type": str(Inner)}))
    with pytest.raises(FileNotFoundError, match="_tensordict"):
        TensorDict.load_memmap(tmp_path)


def test_make_memmap_from_storage_forwards_to_the_tensordict(tmp_path):
    """The entry's file is <prefix>/_tensordict/<key>.memmap; the field reads it; readers see it after a refresh."""
    f = frame().memmap(tmp_path / "f")
    reader = Frame.load_memmap(tmp_path / "f")
    path = tmp_path / "f" / "_tensordict" / "extra.memmap"
    storage = MemoryMappedTensor.zeros(4, 3, filename=path).untyped_storage()
    tensor = f.make_memmap_from_storage("extra", storage, (4, 3), dtype=torch.float32)
    assert tensor is f.extra and tensor.untyped_storage().data_ptr() == storage.data_ptr()
    tensor.fill_(5)
    assert reader.memmap_refresh_() is reader
    assert torch.equal(reader.extra, torch.full((4, 3), 5.0))
    assert tree(tmp_path / "f")[os.path.join("_tensordict", "meta.json")]["extra"]["shape"] == [
        4,
        3,
    ]
    with pytest.raises(RuntimeError, match="not the file of the new entry"):
        reader.make_memmap_from_storage("info", storage, (4, 3), dtype=torch.float32)


def test_memmap_refresh_keeps_identity_and_requires_memmap(tmp_path):
    """memmap_refresh_ returns the same instance; on a plain instance it raises RuntimeError."""
    f = frame().memmap(tmp_path / "f")
    assert f.memmap_refresh_() is f
    with pytest.raises(RuntimeError, match="memory-mapped"):
        frame().memmap_refresh_()


def test_a_non_tensor_field_folder_names_the_well_known_type(tmp_path):
    """A non-tensor field's folder records the reference's NonTensorData _type string."""
    frame().memmap(tmp_path / "f")
    meta = tree(tmp_path / "f")[os.path.join("_tensordict", "source", "meta.json")]
    assert meta == {
        "_type": "<class 'tensordict.tensorclass.NonTensorData'>",
        "data": "camera",
        "_metadata": None,
        "_is_non_tensor": True,
    }


# ====================================================================== the tensordict.tensorclass module
# The names that tensordict.tensorclass held before it became a face over tensordict._tensorclass,
# besides __all__: the errors a tensorclass raises, the metaclass and a few internal ones.
KEPT_NAMES = (
    "CLASSES",
    "ClassFlagError",
    "ConversionInputError",
    "GET_DEFAULT",
    "MemmapFormatError",
    "MemmapMixin",
    "MemmapNotFoundError",
    "SHARED_WITH_TENSORCLASS",
    "TENSORCLASS_METHODS",
    "check_batch_args",
    "collection_repr",
    "fmt",
    "_TensorClassMeta",
)


def test_the_module_keeps_every_name_it_exported():
    """Every name of __all__ (TensorAttrs included) and the kept ones import from tensordict.tensorclass."""
    module = importlib.import_module("tensordict.tensorclass")
    assert "TensorAttrs" in module.__all__
    for name in (*module.__all__, *KEPT_NAMES):
        assert getattr(module, name) is not None, name
        if hasattr(tensordict, name):  # the package's name is the same object
            assert getattr(module, name) is getattr(tensordict, name), name


def test_tensor_class_names_the_public_module_on_disk(tmp_path):
    """TensorClass, its metaclass and the classes TensorClass[...] makes name tensordict.tensorclass."""
    module = importlib.import_module("tensordict.tensorclass")
    assert str(module.TensorClass) == "<class 'tensordict.tensorclass.TensorClass'>"
    assert str(type(module.TensorClass)) == "<class 'tensordict.tensorclass._TensorClassMeta'>"
    bracket = module.TensorClass["nocast"]
    bracket(batch_size=[2]).memmap(tmp_path / "c")
    type_string = "<class 'tensordict.tensorclass.TensorClass_nocast'>"
    assert tree(tmp_path / "c")["meta.json"] == {"_type": type_string}
    assert type(TensorDict.load_memmap(tmp_path / "c")) is bracket
