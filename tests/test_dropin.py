"""Drop-in: the well-known import paths and names, and the recipes of its tutorials."""

from __future__ import annotations

import importlib
import importlib.metadata
import tempfile

import pytest
import torch
from torch.utils.data import DataLoader

import tensordict
from tensordict import TensorDict

from conftest import ours_only

PACKAGE_NAMES = [
    "KEY_SEPARATOR",
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "MetaData",
    "NestedKey",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "TensorAttrs",
    "TensorClass",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "TypedTensorDict",
    "UnbatchedTensor",
    "assert_allclose_td",
    "assert_close",
    "capture_non_tensor_stack",
    "cat",
    "collate",
    "default_is_leaf",
    "dense_stack_tds",
    "from_dict",
    "from_any",
    "from_dataclass",
    "from_module",
    "from_modules",
    "from_namedtuple",
    "from_pytree",
    "from_struct_array",
    "from_tuple",
    "fromkeys",
    "get_defaults_to_none",
    "get_printoptions",
    "group_by",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
    "is_leaf_nontensor",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "lazy_legacy",
    "lazy_stack",
    "list_to_stack",
    "load",
    "load_memmap",
    "make_tensordict",
    "maybe_dense_stack",
    "memmap",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
    "save",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "stack",
    "tensorclass",
    "unpad_sequence",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
]

MODULE_NAMES = {
    "tensordict.tensordict": [
        "LazyStackedTensorDict",
        "MemoryMappedTensor",
        "NO_DEFAULT",
        "NestedKey",
        "TensorDict",
        "TensorDictBase",
        "assert_allclose_td",
        "dense_stack_tds",
        "expand_as_right",
        "expand_right",
        "is_tensor_collection",
        "is_tensorclass",
        "make_tensordict",
        "merge_tensordicts",
        "pad",
        "pad_sequence",
    ],
    "tensordict.base": [
        "KEY_SEPARATOR",
        "NO_DEFAULT",
        "MemoryMappedTensor",
        "NestedKey",
        "TensorCollection",
        "TensorDictBase",
        "capture_non_tensor_stack",
        "expand_as_right",
        "get_defaults_to_none",
        "is_tensor_collection",
        "list_to_stack",
        "set_capture_non_tensor_stack",
        "set_get_defaults_to_none",
        "unravel_key",
        "unravel_key_list",
    ],
    "tensordict.utils": [
        "KEY_SEPARATOR",
        "NestedKey",
        "assert_allclose_td",
        "assert_close",
        "capture_non_tensor_stack",
        "is_non_tensor",
        "expand_as_right",
        "expand_right",
        "get_printoptions",
        "is_bool",
        "is_floating",
        "is_inexact",
        "is_integer",
        "is_tensorclass",
        "lazy_legacy",
        "list_to_stack",
        "set_capture_non_tensor_stack",
        "set_lazy_legacy",
        "set_list_to_stack",
        "set_printoptions",
        "unravel_key",
        "unravel_key_list",
        "unravel_key_to_tuple",
    ],
    "tensordict.functional": [
        "collate",
        "dense_stack_tds",
        "group_by",
        "make_tensordict",
        "merge_tensordicts",
        "pad",
        "pad_sequence",
        "unpad_sequence",
    ],
    "tensordict.memmap": ["MemoryMappedTensor"],
    "tensordict.tensorclass": [
        "MetaData",
        "NonTensorData",
        "NonTensorDataBase",
        "NonTensorStack",
        "TensorClass",
        "tensorclass",
    ],
}


@pytest.mark.parametrize("name", PACKAGE_NAMES)
def test_package_exports(name):
    """Every name of the well-known package within our scope imports from ``tensordict``."""
    assert getattr(tensordict, name) is not None


@pytest.mark.parametrize(
    ("path", "name"), [(path, name) for path, names in MODULE_NAMES.items() for name in names]
)
def test_module_exports(path, name):
    """Every well-known import path exports its names: ``from tensordict.utils import ...``."""
    module = importlib.import_module(path)
    assert getattr(module, name) is not None


def test_the_same_objects_under_every_path():
    """A name imported from two paths is the same object, not a copy."""
    from tensordict.memmap import MemoryMappedTensor
    from tensordict.tensordict import TensorDict as FromModule
    from tensordict.utils import unravel_key

    assert FromModule is TensorDict
    assert MemoryMappedTensor is tensordict.MemoryMappedTensor
    assert unravel_key is tensordict.unravel_key


@ours_only  # the reference's __version__ is its own release; it has no command line
def test_one_version_in_the_metadata_the_module_and_the_command(capsys):
    """The package metadata, ``__version__`` and ``tensordict --version`` say one version."""
    from tensordict.cli import main

    installed = importlib.metadata.version("tensordict")
    assert tensordict.__version__ == installed
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"tensordict {installed} (the API of tensordict 0.15.3)\n"


def test_module_memmap_save_and_load(tmp_path):
    """tensordict.memmap/save write a folder that tensordict.load/load_memmap read back."""
    td = TensorDict(a=torch.arange(3.0), batch_size=[3])
    out = tensordict.memmap(td, tmp_path / "m")
    assert out.is_memmap() and out.is_locked
    tensordict.save(td, tmp_path / "s")
    for folder in ("m", "s"):
        for loader in (tensordict.load, tensordict.load_memmap):
            back = loader(tmp_path / folder)
            assert torch.equal(back["a"], td["a"])


def test_from_dict_and_fromkeys():
    """The module functions build tensordicts as the class methods do."""
    td = tensordict.from_dict(
        {"a": torch.zeros(3, 2), "b": {"c": torch.ones(3)}}, batch_dims=1, auto_batch_size=True
    )
    assert td.batch_size == torch.Size([3])
    made = tensordict.fromkeys(["x", ("y", "z")], 2)
    assert made["y", "z"].item() == 2


def test_dtype_predicates():
    """is_bool/is_floating/is_integer/is_inexact test their last argument."""
    assert tensordict.is_bool(torch.zeros(2, dtype=torch.bool))
    assert tensordict.is_floating("key", torch.zeros(2))
    assert tensordict.is_integer(torch.zeros(2, dtype=torch.int32))
    assert not tensordict.is_integer(torch.zeros(2, dtype=torch.bool))
    assert tensordict.is_inexact(torch.zeros(2, dtype=torch.complex64))


def test_assert_close():
    """assert_close passes for close tensordicts and names the key that is not."""
    a = TensorDict(x=torch.zeros(3), sub={"y": torch.ones(3)}, batch_size=[3])
    assert tensordict.assert_close(a, a.clone())
    b = a.clone()
    b["sub", "y"] += 1
    with pytest.raises(AssertionError, match="y"):
        tensordict.assert_close(a, b)
    with pytest.raises(KeyError):
        tensordict.assert_close(a, a.exclude("x"))
    with pytest.raises(TypeError):
        tensordict.assert_close(a, torch.zeros(3))


def test_expand_right():
    """expand_right adds dims on the right; expand_as_right takes the shape of its target."""
    from tensordict.utils import expand_as_right, expand_right

    assert torch.equal(expand_right(torch.arange(3), (3, 2)), torch.arange(3)[:, None].expand(3, 2))
    assert expand_as_right(torch.ones(2), torch.zeros(2, 3, 4)).shape == torch.Size([2, 3, 4])
    with pytest.raises(RuntimeError):
        expand_right(torch.zeros(2, 3), (2,))


def test_dataloader_recipe_yields_tensordicts():
    """DataLoader(td, batch_size=64, collate_fn=lambda x: x) yields tensordicts of 64 rows."""
    td = TensorDict(images=torch.zeros(100, 2, 2), labels=torch.arange(100), batch_size=[100])
    loader = DataLoader(td, batch_size=64, collate_fn=lambda x: x)
    batches = list(loader)
    assert [b.batch_size for b in batches] == [torch.Size([64]), torch.Size([36])]
    assert torch.equal(batches[1]["labels"], torch.arange(64, 100))


def test_row_assignment_broadcasts_as_tensors_do():
    """data[i] = TensorDict({"images": img}, []) with img [1, 28, 28] fills row i of [N, 28, 28]."""
    data = TensorDict(images=torch.zeros(10, 28, 28), batch_size=[10])
    data[3] = TensorDict({"images": torch.ones(1, 28, 28)}, [])
    assert data["images"][3].sum() == 28 * 28
    assert data["images"].sum() == 28 * 28


def test_row_assignment_of_a_batch_that_does_not_fit_writes_nothing():
    """A tensordict whose batch cannot fill the indexed rows is refused before any write."""
    data = TensorDict(a=torch.zeros(10), b=torch.zeros(10, 2), batch_size=[10])
    with pytest.raises(RuntimeError):
        data[2:5] = TensorDict(a=torch.ones(2), b=torch.ones(2, 2), batch_size=[2])
    assert data["a"].sum() == 0 and data["b"].sum() == 0


def test_lock_as_a_context_manager_restores_the_previous_state():
    """with td.lock_(): ... locks for the block; with td.unlock_(): unlocks for it."""
    td = TensorDict(a=torch.zeros(2))
    with td.lock_():
        assert td.is_locked
        with pytest.raises(RuntimeError):
            td["b"] = torch.zeros(2)
    assert not td.is_locked
    td.lock_()
    with td.unlock_():
        assert not td.is_locked
        td["b"] = torch.zeros(2)
    assert td.is_locked


def test_nested_lock_blocks_unwind_in_order():
    """Nested lock/unlock blocks each put back the state they found."""
    td = TensorDict()
    with td.lock_():
        with td.unlock_():
            assert not td.is_locked
        assert td.is_locked
    assert not td.is_locked


def test_device_of_a_memory_mapped_tensordict_is_cpu(tmp_path):
    """After memmap(), memmap_like() and memmap_() the tensordict's device is cpu."""
    td = TensorDict(a=torch.zeros(3), sub={"b": torch.zeros(3)}, batch_size=[3])
    assert td.device is None
    assert td.memmap().device == torch.device("cpu")
    assert td.memmap_like(tmp_path / "like").device == torch.device("cpu")
    mapped = td.memmap(tmp_path / "m")
    assert mapped["sub"].device == torch.device("cpu")
    assert TensorDict.load_memmap(tmp_path / "m").device == torch.device("cpu")
    td.memmap_()
    assert td.device == torch.device("cpu")


def test_load_memmap_of_a_file_names_it():
    """load_memmap on a path that is a file raises ValueError naming the path."""
    with tempfile.NamedTemporaryFile() as handle:
        with pytest.raises(ValueError, match=handle.name):
            TensorDict.load_memmap(handle.name)


def test_attrs_records_each_leaf_and_to_casts_by_it():
    """td.attrs() holds a TensorAttrs per tensor leaf; other.to(attrs) casts leaf by leaf."""
    td = TensorDict(a=torch.zeros(3, 2), b={"c": torch.ones(3, dtype=torch.int64)}, batch_size=[3])
    attrs = td.attrs()
    assert isinstance(attrs["a"], tensordict.TensorAttrs)
    assert attrs["b", "c"].tgt_dtype == torch.int64
    assert attrs["a"].tgt_shape == torch.Size([3, 2])
    assert attrs["a"].tgt_device == torch.device("cpu")
    assert attrs.batch_size == torch.Size([])
    other = TensorDict(
        a=torch.zeros(3, 2, dtype=torch.float64), b={"c": torch.ones(3)}, batch_size=[3]
    )
    out = other.to(attrs)
    assert out["a"].dtype == torch.float32 and out["b", "c"].dtype == torch.int64


def test_to_by_attrs_refuses_other_positional_arguments_and_pinning():
    """to(attrs, "cpu") raises TypeError and to(attrs, non_blocking_pin=True) NotImplementedError."""
    td = TensorDict({"a": torch.zeros(3)}, batch_size=[3])
    spec = td.attrs(fields=("dtype",))
    with pytest.raises(TypeError):
        td.to(spec, "cpu")
    with pytest.raises(NotImplementedError):
        td.to(spec, non_blocking_pin=True)


def test_attrs_fields_choose_what_is_recorded():
    """attrs(fields=...) records only those attributes; the others are None."""
    attrs = TensorDict(a=torch.zeros(2)).attrs(fields=("dtype",))
    assert attrs["a"].tgt_dtype == torch.float32
    assert attrs["a"].tgt_device is None and attrs["a"].tgt_shape is None
