"""MemoryMappedTensor: constructors, files, views, pickling, processes and bad inputs."""

from __future__ import annotations

import copy
import itertools
import multiprocessing
import os
import pickle
import shutil
import stat
import tempfile

import pytest
import torch
import torch.multiprocessing as mp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensordict.memmap.tensor import (
    MemoryMappedTensor,
    _nbytes,
    _open_file,
    _storage_filename,
)

DTYPES = [
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
]
SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 4), (3, 1, 2)]
pytestmark = [
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning"),
    pytest.mark.filterwarnings("ignore:TypedStorage is deprecated:UserWarning"),
]
NESTED = torch.tensor([[2, 3], [1, 3], [0, 3]])
_counter = itertools.count()


def _sample(shape, dtype: torch.dtype) -> torch.Tensor:
    """Deterministic non-trivial values of ``dtype`` (no NaN), shaped ``shape``."""
    n = int(torch.Size(shape).numel())
    values = (torch.arange(n) * 5 + 3) % (2 if dtype == torch.bool else 11)
    return values.to(dtype).reshape(shape)


def _raw(tensor: torch.Tensor) -> bytes:
    """The bytes of ``tensor`` in C order, as a .memmap file holds them."""
    plain = torch.Tensor(tensor) if isinstance(tensor, MemoryMappedTensor) else tensor
    return plain.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _nested_sample(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    parts = [_sample(tuple(row), dtype) + i for i, row in enumerate(NESTED.tolist())]
    return torch.nested.nested_tensor(parts)


def _files(folder) -> list[str]:
    return sorted(os.listdir(folder))


# ---------------------------------------------------------------------------- constructors
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_from_tensor_writes_the_raw_bytes_to_the_file(tmp_path, dtype, shape):
    """from_tensor(filename=...) writes exactly the tensor's C-order bytes and maps them."""
    source = _sample(shape, dtype)
    path = tmp_path / "x.memmap"
    out = MemoryMappedTensor.from_tensor(source, filename=path)
    assert type(out) is MemoryMappedTensor
    assert out.shape == source.shape and out.dtype == dtype
    assert torch.equal(out, source)
    assert path.read_bytes() == _raw(source)
    assert out.filename == str(path)
    assert out.is_contiguous()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_from_tensor_without_filename_uses_shared_memory(dtype, shape):
    """from_tensor() without a filename copies into shared memory and has no file."""
    source = _sample(shape, dtype)
    out = MemoryMappedTensor.from_tensor(source)
    assert type(out) is MemoryMappedTensor and torch.equal(out, source)
    assert out.is_shared()
    assert (
        out.untyped_storage().data_ptr() != source.untyped_storage().data_ptr()
        or not source.numel()
    )
    with pytest.raises(RuntimeError, match="no file"):
        _ = out.filename


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_from_filename_maps_a_raw_file_and_writes_reach_it(tmp_path, dtype, shape):
    """from_filename reads a headerless file and in-place writes land in the file."""
    source = _sample(shape, dtype)
    path = tmp_path / "x.memmap"
    path.write_bytes(_raw(source))
    out = MemoryMappedTensor.from_filename(path, dtype, shape)
    assert type(out) is MemoryMappedTensor and out.shape == torch.Size(shape)
    assert torch.equal(out, source) and out.filename == str(path)
    out.fill_(1)
    assert path.read_bytes() == _raw(torch.ones(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_file", [True, False])
@pytest.mark.parametrize(
    ("factory", "fill"),
    [("empty", 0), ("zeros", 0), ("ones", 1), ("full", 1)],
)
def test_factories_make_filled_tensors(tmp_path, dtype, with_file, factory, fill):
    """empty/zeros read as zeros, ones as ones, full as fill_value; files have the exact size."""
    path = tmp_path / "x.memmap" if with_file else None
    kwargs = {"fill_value": fill} if factory == "full" else {}
    out = getattr(MemoryMappedTensor, factory)(2, 3, dtype=dtype, filename=path, **kwargs)
    assert type(out) is MemoryMappedTensor and out.shape == (2, 3) and out.dtype == dtype
    assert torch.equal(out, torch.full((2, 3), fill, dtype=dtype))
    if with_file:
        assert out.filename == str(path)
        assert path.stat().st_size == 6 * dtype.itemsize
        assert path.read_bytes() == _raw(torch.full((2, 3), fill, dtype=dtype))
    else:
        assert out.is_shared()


@pytest.mark.parametrize("factory", ["empty", "zeros", "ones"])
def test_factories_accept_every_call_form(factory):
    """Sizes as ints, as one sequence, as a torch.Size and as shape= give the same shape."""
    make = getattr(MemoryMappedTensor, factory)
    forms = [make(2, 3), make((2, 3)), make([2, 3]), make(torch.Size([2, 3])), make(shape=(2, 3))]
    assert all(t.shape == (2, 3) and t.dtype == torch.get_default_dtype() for t in forms)
    assert make(()).shape == () and make(0).shape == (0,)


def test_full_accepts_the_torch_full_call_form():
    """full((2, 3), 7) fills like full(2, 3, fill_value=7)."""
    a = MemoryMappedTensor.full((2, 3), 7, dtype=torch.int64)
    b = MemoryMappedTensor.full(2, 3, fill_value=7, dtype=torch.int64)
    assert torch.equal(a, b) and torch.equal(a, torch.full((2, 3), 7))


def test_factories_refuse_missing_or_doubled_shapes_and_fill():
    """No shape, two shapes, or a missing fill_value raise TypeError."""
    with pytest.raises(TypeError, match="shape is needed"):
        MemoryMappedTensor.empty()
    with pytest.raises(TypeError, match="pass only one"):
        MemoryMappedTensor.zeros(2, shape=(3,))
    with pytest.raises(TypeError, match="fill_value"):
        MemoryMappedTensor.full(2, 3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        MemoryMappedTensor.empty(2, foo=1)
    with pytest.raises(ValueError, match="negative"):
        MemoryMappedTensor.empty(2, -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("method", "args", "fill"),
    [("empty_like", (), 0), ("zeros_like", (), 0), ("ones_like", (), 1), ("full_like", (1,), 1)],
)
def test_like_factories_take_shape_and_dtype(tmp_path, dtype, method, args, fill):
    """The *_like forms copy the shape and dtype of the input, not its values."""
    source = _sample((3, 2), dtype)
    path = tmp_path / "x.memmap"
    out = getattr(MemoryMappedTensor, method)(source, *args, filename=path)
    assert out.shape == source.shape and out.dtype == dtype and out.filename == str(path)
    assert torch.equal(out, torch.full((3, 2), fill, dtype=dtype))
    with pytest.raises(RuntimeError, match="already exists"):
        getattr(MemoryMappedTensor, method)(source, *args, filename=path)


def test_from_tensor_broadcasts_to_shape_and_skips_data_on_request(tmp_path):
    """shape= broadcasts the input; copy_data=False keeps only shape and dtype (zeros)."""
    row = torch.arange(4.0)
    out = MemoryMappedTensor.from_tensor(row, shape=(3, 4), filename=tmp_path / "b.memmap")
    assert torch.equal(out, row.expand(3, 4))
    empty = MemoryMappedTensor.from_tensor(row + 1, copy_data=False)
    assert torch.equal(empty, torch.zeros(4))
    with pytest.raises(ValueError, match="cannot broadcast"):
        MemoryMappedTensor.from_tensor(row, shape=(3, 5))


def test_from_tensor_makes_strided_and_conjugated_sources_contiguous(tmp_path):
    """A transposed or lazily conjugated source is written in C order with its true values."""
    source = torch.arange(12.0).reshape(3, 4).T
    out = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "t.memmap")
    assert torch.equal(out, source) and out.is_contiguous()
    assert (tmp_path / "t.memmap").read_bytes() == _raw(source.contiguous())
    cplx = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64).conj()
    mapped = MemoryMappedTensor.from_tensor(cplx, filename=tmp_path / "c.memmap")
    assert torch.equal(mapped, cplx.resolve_conj())
    again = MemoryMappedTensor.from_filename(tmp_path / "c.memmap", torch.complex64, (2,))
    assert torch.equal(again, cplx.resolve_conj())


def test_from_tensor_returns_the_input_when_no_copy_is_needed(tmp_path):
    """An input already in the requested place (same file, or shared memory) is returned as is."""
    path = tmp_path / "x.memmap"
    mapped = MemoryMappedTensor.from_tensor(torch.arange(3), filename=path)
    assert MemoryMappedTensor.from_tensor(mapped, filename=path) is mapped
    assert (
        MemoryMappedTensor.from_tensor(mapped, filename=str(tmp_path / "." / "x.memmap")) is mapped
    )
    anonymous = MemoryMappedTensor.from_tensor(torch.arange(3))
    assert MemoryMappedTensor.from_tensor(anonymous) is anonymous
    copied = MemoryMappedTensor.from_tensor(mapped)
    assert copied is not mapped and copied._filename is None and torch.equal(copied, mapped)


def test_from_tensor_refuses_to_copy_a_file_to_another_unless_asked(tmp_path):
    """A tensor with a file is copied to a second file only with copy_existing=True."""
    mapped = MemoryMappedTensor.from_tensor(torch.arange(3), filename=tmp_path / "a.memmap")
    with pytest.raises(RuntimeError, match="copy_existing=True"):
        MemoryMappedTensor.from_tensor(mapped, filename=tmp_path / "b.memmap")
    assert _files(tmp_path) == ["a.memmap"]
    copied = MemoryMappedTensor.from_tensor(
        mapped, filename=tmp_path / "b.memmap", copy_existing=True
    )
    assert copied.filename == str(tmp_path / "b.memmap") and torch.equal(copied, mapped)


def test_relative_and_pathlike_filenames_become_absolute(tmp_path, monkeypatch):
    """filename accepts str and os.PathLike, relative to the working folder; .filename is absolute."""
    monkeypatch.chdir(tmp_path)
    out = MemoryMappedTensor.zeros(2, filename="rel.memmap")
    assert out.filename == str(tmp_path / "rel.memmap")
    again = MemoryMappedTensor.from_filename("rel.memmap", torch.float32, [2])
    assert again.filename == out.filename


def test_complex_dtypes_round_trip(tmp_path):
    """Complex tensors are supported like every other fixed-size dtype."""
    source = torch.tensor([1 + 2j, -3j], dtype=torch.complex128)
    out = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "c.memmap")
    assert torch.equal(out, source)
    assert torch.equal(MemoryMappedTensor.from_filename(out.filename, torch.complex128, 2), source)


# ---------------------------------------------------------------------------- storages
def test_from_storage_keeps_the_file_of_a_file_storage(tmp_path):
    """A storage from UntypedStorage.from_file gives a tensor with that file, without a copy."""
    path = tmp_path / "s.memmap"
    path.write_bytes(_raw(torch.arange(6.0)))
    storage = torch.UntypedStorage.from_file(str(path), shared=True, nbytes=24)
    out = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=(2, 3))
    assert out.filename == str(path) and torch.equal(out, torch.arange(6.0).reshape(2, 3))
    assert out.untyped_storage().data_ptr() == storage.data_ptr()
    assert _storage_filename(storage) == str(path)


def test_from_storage_reads_untyped_as_int64_and_typed_as_its_dtype():
    """dtype defaults to int64 for an untyped storage and to the storage's dtype for a typed one."""
    assert MemoryMappedTensor.from_storage(torch.UntypedStorage(24)).dtype == torch.int64
    typed = torch.arange(3, dtype=torch.int16).untyped_storage()
    assert MemoryMappedTensor.from_storage(typed, dtype=torch.int16).tolist() == [0, 1, 2]
    legacy = torch.arange(3, dtype=torch.int32).storage()
    assert MemoryMappedTensor.from_storage(legacy).dtype == torch.int32
    indexed = MemoryMappedTensor.from_storage(typed, dtype=torch.int16, index=slice(1, None))
    assert indexed.tolist() == [1, 2]


def test_from_storage_with_a_nested_shape_makes_a_nested_tensor():
    """A 2-D shape tensor views the storage as components back to back."""
    storage = torch.arange(9.0).untyped_storage()
    out = MemoryMappedTensor.from_storage(
        storage, dtype=torch.float32, shape=torch.tensor([[2, 3], [1, 3]])
    )
    assert out.is_nested and torch.equal(out[1], torch.tensor([[6.0, 7.0, 8.0]]))


def test_from_storage_refuses_bad_storages(tmp_path):
    """Non-storages, meta storages, wrong sizes and a conflicting filename are refused."""
    with pytest.raises(TypeError, match="UntypedStorage, got list"):
        MemoryMappedTensor.from_storage([1, 2])
    with pytest.raises(ValueError, match="physical"):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(8, device="meta"))
    with pytest.raises(ValueError, match="holds 24 bytes; the dtype and shape need 32"):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(24), dtype=torch.int64, shape=(4,))
    with pytest.raises(ValueError, match="whole number"):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(6), dtype=torch.float32)
    with pytest.raises(TypeError, match="handler"):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(8), handler=object())
    path = tmp_path / "s.memmap"
    path.write_bytes(bytes(8))
    storage = torch.UntypedStorage.from_file(str(path), shared=True, nbytes=8)
    with pytest.raises(RuntimeError, match="other.memmap"):
        MemoryMappedTensor.from_storage(storage, filename=tmp_path / "other.memmap")


def test_from_handler_views_a_shared_storage():
    """from_handler(storage, dtype, shape) shares the storage of a tensor without a file."""
    source = MemoryMappedTensor.from_tensor(torch.arange(4))
    view = MemoryMappedTensor.from_handler(source.untyped_storage(), torch.int64, (2, 2))
    view[0, 0] = 9
    assert source[0] == 9


def test_storage_filename_names_the_file_or_none(tmp_path):
    """_storage_filename gives the absolute file of a file storage and None for memory."""
    mapped = MemoryMappedTensor.zeros(2, filename=tmp_path / "x.memmap")
    assert _storage_filename(mapped.untyped_storage()) == str(tmp_path / "x.memmap")
    assert _storage_filename(MemoryMappedTensor.zeros(2).untyped_storage()) is None
    assert _storage_filename(torch.zeros(2).storage()) is None
    with pytest.raises(TypeError, match="UntypedStorage"):
        _storage_filename(torch.zeros(2))


def test_nbytes_counts_dense_and_nested_shapes():
    """_nbytes is numel times the item size, summed over components for a nested shape."""
    assert _nbytes((2, 3), torch.float32) == 24
    assert _nbytes((), torch.bfloat16) == 2
    assert _nbytes(torch.Size([0, 5]), torch.int64) == 0
    assert _nbytes(NESTED, torch.int16) == (6 + 3 + 0) * 2


def test_open_file_matches_from_filename(tmp_path):
    """_open_file maps like from_filename, with the same size check."""
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(6), filename=path)
    out = _open_file(str(path), torch.int64, torch.Size([2, 3]))
    assert type(out) is MemoryMappedTensor and out.filename == str(path)
    assert torch.equal(out, torch.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="holds 48 bytes; the dtype and shape need 56"):
        _open_file(str(path), torch.int64, torch.Size([7]))
    with pytest.raises(FileNotFoundError, match="none.memmap' does not exist"):
        _open_file(str(tmp_path / "none.memmap"), torch.int64, torch.Size([6]))
    (tmp_path / "link.memmap").symlink_to(path)
    with pytest.raises(ValueError, match="link.memmap': it is a symbolic link"):
        _open_file(str(tmp_path / "link.memmap"), torch.int64, torch.Size([6]))
    nested = _open_file(str(path), torch.int64, torch.tensor([[2, 2], [1, 2]]))
    assert nested.is_nested and torch.equal(nested[1], torch.tensor([[4, 5]]))


# ---------------------------------------------------------------------------- nested
@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_from_tensor_writes_components_back_to_back(tmp_path, dtype):
    """A nested tensor is written as its components' bytes in order and comes back nested."""
    source = _nested_sample(dtype)
    path = tmp_path / "n.memmap"
    out = MemoryMappedTensor.from_tensor(source, filename=path)
    assert type(out) is MemoryMappedTensor and out.is_nested and out.filename == str(path)
    assert path.read_bytes() == b"".join(_raw(part) for part in source.unbind())
    for got, want in zip(out.unbind(), source.unbind()):
        assert torch.equal(got, want)


def test_nested_from_filename_views_the_file(tmp_path):
    """from_filename with a 2-D shape tensor gives a nested tensor whose writes reach the file."""
    source = _nested_sample()
    path = tmp_path / "n.memmap"
    MemoryMappedTensor.from_tensor(source, filename=path)
    out = MemoryMappedTensor.from_filename(path, torch.float32, NESTED)
    assert out.is_nested and torch.equal(out._nested_tensor_size(), NESTED)
    part = out[1]
    assert type(part) is MemoryMappedTensor and part.filename == str(path)
    part.fill_(-1)
    flat = torch.from_file(str(path), size=9, dtype=torch.float32)
    assert (
        flat[6:].tolist() == [-1.0, -1.0, -1.0]
        and flat[:6].tolist() == source[0].flatten().tolist()
    )
    with pytest.raises(ValueError, match="holds 36 bytes; the dtype and shape need 40"):
        MemoryMappedTensor.from_filename(path, torch.float32, torch.tensor([[2, 5]]))


@pytest.mark.parametrize("factory", ["empty", "zeros", "ones"])
def test_nested_factories_and_like(factory):
    """Factories take a 2-D shape tensor; the *_like forms copy a nested input's shapes."""
    out = getattr(MemoryMappedTensor, factory)(NESTED, dtype=torch.int32)
    assert out.is_nested and torch.equal(out._nested_tensor_size(), NESTED)
    like = MemoryMappedTensor.ones_like(_nested_sample())
    assert like.is_nested and all(bool((p == 1).all()) for p in like.unbind())


def test_nested_shapes_are_validated():
    """A nested shape needs at least one row, no negative sizes and an integer dtype."""
    with pytest.raises(ValueError, match="row per component"):
        MemoryMappedTensor.empty(torch.zeros(0, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="negative"):
        MemoryMappedTensor.empty(torch.tensor([[2, -1]]))
    with pytest.raises(TypeError, match="integers"):
        MemoryMappedTensor.empty(torch.tensor([[2.0, 1.0]]))
    with pytest.raises(ValueError, match="does not match"):
        MemoryMappedTensor.from_tensor(_nested_sample(), shape=torch.tensor([[1, 1]] * 3))


def test_jagged_nested_tensors_are_not_supported():
    """A nested tensor of the jagged layout raises NotImplementedError naming the layout."""
    jagged = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(1, 3)], layout=torch.jagged)
    with pytest.raises(NotImplementedError, match="torch.jagged"):
        MemoryMappedTensor.from_tensor(jagged)


# ---------------------------------------------------------------------------- views and ops
@pytest.fixture
def mapped(tmp_path) -> MemoryMappedTensor:
    return MemoryMappedTensor.from_tensor(
        torch.arange(24.0).reshape(2, 3, 4), filename=tmp_path / "v.memmap"
    )


VIEWS = {
    "slice": lambda t: t[1:],
    "int": lambda t: t[1],
    "scalar": lambda t: t[1, 2, 3],
    "ellipsis": lambda t: t[..., 1],
    "none": lambda t: t[None],
    "step": lambda t: t[:, ::2],
    "view": lambda t: t.view(6, 4),
    "view_dtype": lambda t: t.view(torch.int32),
    "reshape": lambda t: t.reshape(-1),
    "flatten": lambda t: t.flatten(),
    "T": lambda t: t.mT,
    "permute": lambda t: t.permute(2, 0, 1),
    "transpose": lambda t: torch.transpose(t, 0, 1),
    "unsqueeze": lambda t: t.unsqueeze(0),
    "squeeze": lambda t: t[:1].squeeze(0),
    "narrow": lambda t: t.narrow(1, 1, 2),
    "select": lambda t: t.select(2, 0),
    "expand": lambda t: t[:1].expand(5, 3, 4),
    "detach": lambda t: t.detach(),
    "unflatten": lambda t: t.unflatten(2, (2, 2)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_keep_the_class_and_the_file(mapped, name):
    """Indexing and view operations return MemoryMappedTensor views that know their file."""
    view = VIEWS[name](mapped)
    assert type(view) is MemoryMappedTensor
    assert view.filename == mapped.filename
    assert view.untyped_storage().data_ptr() == mapped.untyped_storage().data_ptr()


@pytest.mark.parametrize("name", ["unbind", "split", "chunk"])
def test_multi_output_views_keep_the_class_and_the_file(mapped, name):
    """unbind, split and chunk return sequences of MemoryMappedTensor views."""
    parts = {"unbind": mapped.unbind, "split": mapped.split, "chunk": mapped.chunk}[name](1)
    parts = mapped.chunk(2) if name == "chunk" else parts
    assert len(parts) >= 2
    assert all(type(p) is MemoryMappedTensor and p.filename == mapped.filename for p in parts)


OPS = {
    "add": lambda t: t + 1,
    "mul": lambda t: t * 2,
    "neg": lambda t: -t,
    "clone": lambda t: t.clone(),
    "sum": lambda t: t.sum(),
    "mean": lambda t: t.mean(0),
    "eq": lambda t: t == 3,
    "stack": lambda t: torch.stack([t, t]),
    "to_double": lambda t: t.to(torch.float64),
    "index_tensor": lambda t: t[torch.tensor([1, 0])],
    "mask": lambda t: t[t > 3],
    "reshape_copy": lambda t: t.mT.reshape(-1),
    "contiguous_copy": lambda t: t.mT.contiguous(),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_operations_that_allocate_return_plain_tensors(mapped, name):
    """Arithmetic, reductions, copies and gathers return torch.Tensor, not the subclass."""
    assert type(OPS[name](mapped)) is torch.Tensor


def test_in_place_operations_return_the_tensor_and_write_the_file(mapped):
    """add_, fill_ and index assignment change the file and return the tensor itself."""
    assert mapped.add_(1) is mapped
    mapped[0] = 0
    mapped[1, 0].fill_(-1)
    on_disk = MemoryMappedTensor.from_filename(mapped.filename, torch.float32, (2, 3, 4))
    assert torch.equal(on_disk, mapped) and on_disk[0].sum() == 0 and on_disk[1, 0, 0] == -1
    assert mapped.to(torch.float32) is mapped and mapped.contiguous() is mapped


def test_repr_names_the_class(mapped):
    """The repr prints like a tensor, prefixed with MemoryMappedTensor."""
    assert repr(mapped[0, 0]) == "MemoryMappedTensor([0., 1., 2., 3.])"


# ---------------------------------------------------------------------------- files
def test_existing_file_needs_existsok_and_is_replaced(tmp_path):
    """An existing file raises unless existsok; then it is replaced, leaving no stray file."""
    path = tmp_path / "x.memmap"
    old = MemoryMappedTensor.from_tensor(torch.arange(3), filename=path)
    with pytest.raises(RuntimeError, match="already exists; pass existsok=True"):
        MemoryMappedTensor.from_tensor(torch.arange(5), filename=path)
    with pytest.raises(RuntimeError, match="x.memmap' already exists"):
        MemoryMappedTensor.empty(5, filename=path)
    assert path.read_bytes() == _raw(torch.arange(3))
    new = MemoryMappedTensor.from_tensor(torch.arange(5) + 10, filename=path, existsok=True)
    assert path.read_bytes() == _raw(torch.arange(5) + 10) and torch.equal(
        new, torch.arange(5) + 10
    )
    assert torch.equal(old, torch.arange(3))  # the old mapping keeps the old bytes, no SIGBUS
    fresh = MemoryMappedTensor.zeros(5, dtype=torch.int64, filename=path, existsok=True)
    assert torch.equal(fresh, torch.zeros(5, dtype=torch.int64))  # never stale bytes
    assert _files(tmp_path) == ["x.memmap"]


def test_a_tensor_can_rewrite_its_own_file_from_a_view(tmp_path):
    """Writing a view of a file over that same file reads the old bytes, writes new ones."""
    path = tmp_path / "x.memmap"
    whole = MemoryMappedTensor.from_tensor(torch.arange(6), filename=path)
    out = MemoryMappedTensor.from_tensor(whole[2:], filename=path, existsok=True, shape=(4,))
    assert out.tolist() == [2, 3, 4, 5] and path.read_bytes() == _raw(torch.arange(2, 6))


def test_symlinks_are_refused_for_writing_and_reading(tmp_path):
    """A symbolic link at the path is neither written through nor mapped."""
    target = tmp_path / "target.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(3), filename=target)
    link = tmp_path / "link.memmap"
    link.symlink_to(target)
    for existsok in (False, True):
        with pytest.raises(RuntimeError, match="symbolic link '.*link.memmap'"):
            MemoryMappedTensor.from_tensor(torch.arange(9), filename=link, existsok=existsok)
    with pytest.raises(ValueError, match="link.memmap': it is a symbolic link"):
        MemoryMappedTensor.from_filename(link, torch.int64, (3,))
    dangling = tmp_path / "dangling.memmap"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="symbolic link"):
        MemoryMappedTensor.zeros(2, filename=dangling, existsok=True)
    assert not (tmp_path / "nowhere").exists()
    assert target.read_bytes() == _raw(torch.arange(3))


def test_missing_folder_raises_file_not_found_naming_it(tmp_path):
    """A filename in a folder that does not exist raises FileNotFoundError naming the folder."""
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="folder '.*nope' does not exist"):
        MemoryMappedTensor.from_tensor(torch.zeros(2), filename=missing / "x.memmap")
    with pytest.raises(FileNotFoundError, match="nope"):
        MemoryMappedTensor.empty(2, filename=missing / "x.memmap")
    assert not missing.exists()


def test_missing_file_raises_and_is_not_created(tmp_path):
    """from_filename of a missing file raises FileNotFoundError and creates nothing."""
    with pytest.raises(FileNotFoundError, match="'.*absent.memmap' does not exist"):
        MemoryMappedTensor.from_filename(tmp_path / "absent.memmap", torch.float32, (2,))
    assert _files(tmp_path) == []


@pytest.mark.parametrize("nbytes", [0, 20, 28])
def test_wrong_size_file_is_refused_and_left_unchanged(tmp_path, nbytes):
    """A file shorter or longer than dtype and shape need raises ValueError with both sizes."""
    path = tmp_path / "x.memmap"
    path.write_bytes(bytes(range(nbytes)))
    with pytest.raises(ValueError, match=f"x.memmap' holds {nbytes} bytes; .* need 24"):
        MemoryMappedTensor.from_filename(path, torch.float32, (2, 3))
    assert path.read_bytes() == bytes(range(nbytes))


def test_paths_that_are_not_regular_files_are_refused(tmp_path):
    """A folder at the path is refused for writing and for mapping."""
    folder = tmp_path / "sub"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="sub': it is a folder"):
        MemoryMappedTensor.zeros(2, filename=folder, existsok=True)
    with pytest.raises(ValueError, match="sub': it is not a regular file"):
        MemoryMappedTensor.from_filename(folder, torch.float32, (0,))


def test_copy_on_write_mode_keeps_writes_in_memory(tmp_path):
    """mode='r' maps copy-on-write: writes stay in the tensor and never reach the file."""
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(4), filename=path)
    private = MemoryMappedTensor.from_filename(path, torch.int64, (4,), mode="r")
    private[0] = 100
    assert private.tolist() == [100, 1, 2, 3] and private.filename == str(path)
    assert path.read_bytes() == _raw(torch.arange(4))
    again = pickle.loads(pickle.dumps(private[1:]))
    assert again._cow and again.tolist() == [1, 2, 3]
    assert MemoryMappedTensor.from_tensor(private, filename=path, existsok=True) is not private
    with pytest.raises(ValueError, match="mode must be None, 'r' or 'r\\+', got 'w'"):
        MemoryMappedTensor.from_filename(path, torch.int64, (4,), mode="w")


def _deny_shared_mapping(monkeypatch):
    """Makes torch.from_file fail like a read-only file does for a shared mapping."""
    real = torch.from_file

    def from_file(filename, shared=None, size=0, *, dtype=None):
        if shared:
            msg = f"unable to open file <{filename}> in read-write mode: Permission denied (13)"
            raise RuntimeError(msg)
        return real(filename, shared, size, dtype=dtype)

    monkeypatch.setattr(torch, "from_file", from_file)
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)


def test_read_only_file_is_mapped_copy_on_write(tmp_path, monkeypatch):
    """A file that cannot be opened for writing is still mapped, copy-on-write, without a crash."""
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(4), filename=path)
    _deny_shared_mapping(monkeypatch)
    out = MemoryMappedTensor.from_filename(path, torch.int64, (4,))
    out[0] = 7
    assert out._cow and out.tolist() == [7, 1, 2, 3]
    assert path.read_bytes() == _raw(torch.arange(4))
    with pytest.raises(PermissionError, match="x.memmap' with mode='r\\+': it is read-only"):
        MemoryMappedTensor.from_filename(path, torch.int64, (4,), mode="r+")
    with pytest.raises(PermissionError, match="cannot replace '.*x.memmap': it is read-only"):
        MemoryMappedTensor.from_tensor(torch.arange(4), filename=path, existsok=True)
    assert _files(tmp_path) == ["x.memmap"]


def _read_only_checks(path: str, drop_root: bool, results) -> None:
    """Runs in a forked child: maps the read-only file as a user that cannot write it."""
    try:
        if drop_root:
            os.setgid(65534)
            os.setuid(65534)  # root may write any file: check as an unprivileged user
        out = MemoryMappedTensor.from_filename(path, torch.int64, (4,))
        out[0] = 7
        assert out.tolist() == [7, 1, 2, 3] and out._cow
        try:
            MemoryMappedTensor.from_filename(path, torch.int64, (4,), mode="r+")
        except PermissionError as err:
            assert "x.memmap" in str(err)
        else:
            raise AssertionError("mode='r+' on a read-only file did not raise")
        results.put("ok")
    except BaseException as err:  # report anything to the parent
        results.put(repr(err))


@pytest.mark.timeout(120)
def test_read_only_file_on_disk_is_mapped_copy_on_write():
    """A chmod 444 file maps copy-on-write for a user who cannot write it; mode='r+' raises naming it."""
    folder = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "x.memmap")
        MemoryMappedTensor.from_tensor(torch.arange(4), filename=path)
        os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        ctx = multiprocessing.get_context("fork")
        results = ctx.Queue()
        child = ctx.Process(target=_read_only_checks, args=(path, os.geteuid() == 0, results))
        child.start()
        outcome = results.get(timeout=100)
        child.join()
        assert outcome == "ok"
        assert open(path, "rb").read() == _raw(torch.arange(4))
    finally:
        shutil.rmtree(folder)


# ---------------------------------------------------------------------------- bad inputs
def test_from_tensor_refuses_bad_inputs():
    """Gradients, the meta device, NumPy arrays and sparse tensors get clear errors."""
    with pytest.raises(RuntimeError, match="requires gradients; pass input.detach"):
        MemoryMappedTensor.from_tensor(torch.zeros(2, requires_grad=True))
    with pytest.raises(ValueError, match="meta device: a MemoryMappedTensor must be in physical"):
        MemoryMappedTensor.from_tensor(torch.zeros(2, device="meta"))
    with pytest.raises(TypeError, match="got ndarray; convert it with torch.as_tensor"):
        MemoryMappedTensor.from_tensor(torch.zeros(2).numpy())
    with pytest.raises(ValueError, match="layout torch.sparse_coo"):
        MemoryMappedTensor.from_tensor(torch.zeros(2).to_sparse())


def test_bad_dtype_device_and_filename_arguments():
    """A non-dtype, a quantized dtype, another device or a bad filename type are refused."""
    with pytest.raises(TypeError, match="dtype must be a torch.dtype, got 'float32'"):
        MemoryMappedTensor.zeros(2, dtype="float32")
    with pytest.raises(ValueError, match="torch.qint8 cannot be memory-mapped"):
        MemoryMappedTensor.empty(2, dtype=torch.qint8)
    with pytest.raises(RuntimeError, match="device='meta'"):
        MemoryMappedTensor.empty(2, device="meta")
    with pytest.raises(TypeError, match="filename must be a non-empty str"):
        MemoryMappedTensor.zeros(2, filename=b"x.memmap")
    with pytest.raises(TypeError, match="filename must be a non-empty str"):
        MemoryMappedTensor.from_filename("", torch.float32, (2,))
    with pytest.raises(TypeError, match="sequence of ints"):
        MemoryMappedTensor.zeros((2.5,))
    assert MemoryMappedTensor.empty(2, device="cpu").shape == (2,)


# ---------------------------------------------------------------------------- pickling
def test_pickled_file_tensor_reopens_the_same_file(mapped):
    """Pickling sends the file name and layout; the copy maps the same file both ways."""
    view = mapped[1, :, 1:3]
    payload = pickle.dumps(view)
    assert len(payload) < 1000  # the data is not in the pickle
    loaded = pickle.loads(payload)
    assert type(loaded) is MemoryMappedTensor and loaded.filename == mapped.filename
    assert loaded.shape == view.shape and loaded.stride() == view.stride()
    assert loaded.storage_offset() == view.storage_offset() and torch.equal(loaded, view)
    loaded.fill_(-5)
    assert bool((mapped[1, :, 1:3] == -5).all())
    mapped[1, 0, 1] = 42
    assert loaded[0, 0] == 42


def test_pickled_file_tensor_checks_the_file_again(mapped):
    """Unpickling refuses a file that has shrunk since, naming it."""
    payload = pickle.dumps(mapped)
    os.truncate(mapped.filename, 8)
    with pytest.raises(ValueError, match="v.memmap'.*needs 96 bytes"):
        pickle.loads(payload)


def test_plain_pickle_of_a_shared_memory_tensor_copies_into_shared_memory():
    """Without a file, plain pickle copies the bytes; the copy lives in shared memory too."""
    source = MemoryMappedTensor.from_tensor(torch.arange(6).reshape(2, 3))
    loaded = pickle.loads(pickle.dumps(source[:, 1:]))
    assert type(loaded) is MemoryMappedTensor and loaded.is_shared() and loaded._filename is None
    assert torch.equal(loaded, source[:, 1:])


def test_nested_tensors_pickle_with_and_without_a_file(tmp_path):
    """Nested tensors pickle as their file (or storage) plus the table of shapes."""
    with_file = MemoryMappedTensor.from_tensor(_nested_sample(), filename=tmp_path / "n.memmap")
    for source in (with_file, MemoryMappedTensor.from_tensor(_nested_sample())):
        loaded = pickle.loads(pickle.dumps(source))
        assert loaded.is_nested and loaded._filename == source._filename
        assert all(torch.equal(a, b) for a, b in zip(loaded.unbind(), source.unbind()))
    loaded = pickle.loads(pickle.dumps(with_file))
    loaded[0].fill_(3)
    assert bool((with_file[0] == 3).all())


def test_copy_shares_and_deepcopy_copies(mapped):
    """copy.copy maps the same data; copy.deepcopy makes an independent shared-memory copy."""
    shallow = copy.copy(mapped)
    deep = copy.deepcopy(mapped)
    mapped.fill_(1)
    assert bool((shallow == 1).all()) and deep.sum() == sum(range(24))
    assert type(deep) is MemoryMappedTensor and deep._filename is None and deep.is_shared()


def _child_writes(inbox, outbox) -> None:
    """Runs in a spawned process: fills every received tensor and reports what it got."""
    tensors = inbox.get()
    for value, tensor in enumerate(tensors, start=7):
        tensor.fill_(value)
    outbox.put([(type(t).__name__, t._filename, tuple(t.shape)) for t in tensors])


@pytest.mark.timeout(120)
def test_spawned_process_writes_into_file_and_shared_memory_tensors(tmp_path):
    """Through a torch.multiprocessing queue a spawned child writes both kinds; the parent sees it."""
    with_file = MemoryMappedTensor.zeros(3, 4, dtype=torch.int32, filename=tmp_path / "q.memmap")
    shared = MemoryMappedTensor.zeros(5, dtype=torch.float64)
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_child_writes, args=(inbox, outbox))
    child.start()
    try:
        inbox.put([with_file[1:], shared])
        report = outbox.get(timeout=100)
    finally:
        child.join(timeout=30)
    assert child.exitcode == 0
    assert report == [
        ("MemoryMappedTensor", with_file.filename, (2, 4)),
        ("MemoryMappedTensor", None, (5,)),
    ]
    assert with_file[0].tolist() == [0] * 4 and bool((with_file[1:] == 7).all())
    assert bool((shared == 8).all())


# ---------------------------------------------------------------------------- properties
_shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)
_settings = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(shape=_shapes, dtype=st.sampled_from(DTYPES), with_file=st.booleans())
def test_from_tensor_round_trip_property(tmp_path, shape, dtype, with_file):
    """Any shape and dtype survive from_tensor, from_filename and pickling unchanged."""
    source = _sample(shape, dtype)
    path = tmp_path / f"p{next(_counter)}.memmap" if with_file else None
    out = MemoryMappedTensor.from_tensor(source, filename=path)
    assert torch.equal(out, source) and torch.equal(pickle.loads(pickle.dumps(out)), source)
    if with_file:
        assert path.stat().st_size == _nbytes(shape, dtype)
        assert torch.equal(MemoryMappedTensor.from_filename(path, dtype, shape), source)


@_settings
@given(data=st.data())
def test_sliced_views_pickle_to_the_same_elements_property(tmp_path, data):
    """Every basic-slice view keeps its file and pickles to a view of the same elements."""
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    path = tmp_path / f"s{next(_counter)}.memmap"
    mapped = MemoryMappedTensor.from_tensor(_sample(shape, torch.int32), filename=path)
    index = tuple(
        slice(
            data.draw(st.integers(0, n)), data.draw(st.integers(0, n)), data.draw(st.integers(1, 3))
        )
        for n in shape
    )
    view = mapped[index]
    assert type(view) is MemoryMappedTensor and view.filename == str(path)
    loaded = pickle.loads(pickle.dumps(view))
    assert torch.equal(loaded, view) and loaded.stride() == view.stride()
