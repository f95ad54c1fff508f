"""Tensordicts as safetensors files (the optional ``safetensors`` extra).

A file holds every tensor leaf under its nested key joined with ``"."`` (the
names a model's ``state_dict`` uses), and, in the file's ``__metadata__`` under
the key ``"tensordict"``, one JSON string describing the tree, as the
well-known implementation writes it (so files go both ways):
``{"version": 1, "root": LEVEL}``, where a LEVEL is an object with
``"batch_size"`` (a list), ``"names"`` (a list, or ``null`` when no dimension
is named), ``"stack_dim"`` (lazy stacks only), ``"class"`` (tensorclasses only,
the class as Python prints it) and ``"keys"``: for each key of the level one
of ``{"tensor": NAME}`` (plus ``"unbatched": true`` for an
:class:`~tensordict.UnbatchedTensor`), ``{"non_tensor": VALUE}`` (a JSON
value) or ``{"td": LEVEL}``. A file without that metadata (a Hub checkpoint,
say) loads as nested TensorDicts of empty batch size, each name split on ".".
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import torch

from tensordict._collection import TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nontensor_stack import NonTensorStack
from tensordict._shared_value import holds_json
from tensordict._td import TensorDict
from tensordict._tensorclass.decorator import REGISTRY, is_tensorclass
from tensordict._typing import DeviceType
from tensordict._unbatched import UnbatchedTensor
from tensordict.errors import MemmapFormatError

try:  # the optional 'safetensors' extra
    from safetensors import safe_open
    from safetensors.torch import save_file
except ImportError:  # without it, the two functions raise ImportError saying how to install it
    safe_open = save_file = None

__all__ = ["from_safetensors", "to_safetensors"]

METADATA_KEY = "tensordict"
FORMAT_VERSION = 1
SEPARATOR = "."
# The safetensors format's own bound on its JSON header: a longer one is refused before a byte
# of it is read, so that a damaged length field cannot make the reader allocate gigabytes.
MAX_HEADER_BYTES = 100_000_000


def _require_safetensors():
    if safe_open is None:
        msg = (
            "safetensors files need the safetensors package: install it with "
            "`pip install tensordict[safetensors]` (or `pip install safetensors`)"
        )
        raise ImportError(msg)


def _keys_differ(td) -> bool:
    """True when a lazy stack (or one inside it) has members whose keys differ."""
    if not isinstance(td, LazyStackedTensorDict):
        return False
    members = td.tensordicts
    if len({frozenset(m.keys()) for m in members}) > 1:
        return True
    return any(_keys_differ(m) for m in members)


def _describe(td, prefix: tuple, tensors: dict) -> dict:
    """The LEVEL object of ``td``; its tensors are added to ``tensors`` by name."""
    tensorclass = is_tensorclass(td)
    inner = td._tensordict if tensorclass else td
    if _keys_differ(inner):
        where = SEPARATOR.join(prefix) or "the root"
        msg = (
            f"cannot save the lazy stack at {where!r} as safetensors: its members have "
            "different keys; give every member the same keys first"
        )
        raise TypeError(msg)
    names = list(inner.names)
    level = {
        "batch_size": list(td.batch_size),
        "names": names if any(n is not None for n in names) else None,
    }
    if isinstance(inner, LazyStackedTensorDict):
        level["stack_dim"] = inner.stack_dim
    if tensorclass:
        level["class"] = str(type(td))
    keys = level["keys"] = {}
    for key, value in inner.items():
        path = (*prefix, key)
        if isinstance(value, NonTensorStack):
            msg = f"cannot save the non-tensor stack at {path} as safetensors: only single JSON values can be"
            raise TypeError(msg)
        if is_non_tensor(value):
            if not holds_json(value.data):
                msg = (
                    f"cannot save the non-tensor value at {path} as safetensors: a "
                    f"{type(value.data).__name__} is not a JSON value (str, int, float, bool, "
                    "None, list or dict)"
                )
                raise TypeError(msg)
            keys[key] = {"non_tensor": value.data}
        elif is_tensor_collection(value):
            keys[key] = {"td": _describe(value, path, tensors)}
        else:
            unbatched = isinstance(value, UnbatchedTensor)
            if unbatched:
                value = value.as_subclass(torch.Tensor)
            if value.is_nested or value.layout != torch.strided:
                msg = (
                    f"cannot save the tensor at {path} as safetensors: only dense tensors can "
                    f"be, got {'a nested tensor' if value.is_nested else value.layout}"
                )
                raise TypeError(msg)
            name = SEPARATOR.join(path)
            if name in tensors:
                msg = (
                    f"cannot save {path} as safetensors: another key is also named {name!r} "
                    f"once its parts are joined with {SEPARATOR!r}; rename one of them"
                )
                raise ValueError(msg)
            tensors[name] = value.detach().contiguous()
            keys[key] = {"tensor": name, "unbatched": True} if unbatched else {"tensor": name}
    return level


def _unshare(tensors: dict) -> None:
    """Copies the tensors whose bytes overlap another's: safetensors refuses shared memory."""
    groups = defaultdict(list)
    for name, tensor in tensors.items():
        if tensor.numel():
            groups[(tensor.device, tensor.untyped_storage().data_ptr())].append(name)
    for names in groups.values():
        if len(names) < 2:
            continue
        end = 0
        for name in sorted(names, key=lambda n: tensors[n].data_ptr()):
            tensor = tensors[name]
            if tensor.data_ptr() < end:
                tensors[name] = tensor.clone()
            else:
                end = tensor.data_ptr() + tensor.numel() * tensor.element_size()


def to_safetensors(data: TensorCollection, path: str | os.PathLike) -> None:
    """Saves a tensordict or a tensorclass instance to a safetensors file.

    Each tensor is stored under its nested key joined with ``"."``; the structure
    (batch sizes and dimension names of every level, lazy stacks' stack dims,
    tensorclasses, non-tensor JSON values, unbatched tensors) goes into the
    file's metadata, so that :func:`from_safetensors` rebuilds the same tree.
    Files are the same as the well-known implementation's. Tensors that share
    memory are stored as separate copies; tensors on an accelerator go through
    the CPU. Needs the ``safetensors`` extra.

    Args:
        data (TensorDictBase): the tensordict or tensorclass instance to save.
        path (str or path): the file to write.

    Raises:
        ImportError: if the ``safetensors`` package is not installed.
        TypeError: if a value cannot be stored: a nested or sparse tensor, a
            non-tensor value that is not JSON, a stack of non-tensor values, a lazy
            stack whose members have different keys, or a bare non-tensor value.
        ValueError: if two keys have the same name once joined with ``"."``
            (``"a.b"`` and ``("a", "b")``).

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict, from_safetensors, to_safetensors
        >>> td = TensorDict({"w": torch.ones(2, 3), "sub": {"b": torch.zeros(2)}}, [2])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     to_safetensors(td, f"{tmp}/td.safetensors")
        ...     loaded = from_safetensors(f"{tmp}/td.safetensors")
        >>> loaded.batch_size, loaded["sub", "b"]
        (torch.Size([2]), tensor([0., 0.]))
    """
    _require_safetensors()
    if is_non_tensor(data) or not is_tensor_collection(data):
        msg = f"to_safetensors saves a tensordict or a tensorclass instance, got a {type(data).__name__}; put the value in a tensordict first"
        raise TypeError(msg)
    tensors: dict = {}
    root = _describe(data, (), tensors)
    _unshare(tensors)
    metadata = json.dumps({"version": FORMAT_VERSION, "root": root})
    save_file(tensors, os.fspath(path), metadata={METADATA_KEY: metadata})


def _check_names_nest(path: str, names) -> None:
    """Refuses names that cannot all be keys once split on ``"."``: ``"a"`` and ``"a.b"``.

    The first would be a tensor and the second needs ``"a"`` to be a level; loading one would
    silently drop or overwrite the other.
    """
    known = set(names)
    for name in sorted(known):
        parts = name.split(SEPARATOR)
        for cut in range(1, len(parts)):
            prefix = SEPARATOR.join(parts[:cut])
            if prefix in known:
                msg = (
                    f"{path!r}: its tensors {prefix!r} and {name!r} cannot both load: split on "
                    f"{SEPARATOR!r}, {prefix!r} would be both a tensor and a level; rename one "
                    "of them"
                )
                raise MemmapFormatError(msg)


def _tensorclass(name: str, path):
    cls = REGISTRY.get(name)
    if cls is None:
        msg = (
            f"cannot load {os.fspath(path)!r}: it holds the tensorclass {name}, which is not "
            "registered; import the module that defines it first (loading never imports code)"
        )
        raise MemmapFormatError(msg)
    return cls


def _rebuild(level, file, device, path, used: set):
    if type(level) is not dict or type(level.get("keys")) is not dict:
        msg = f"{os.fspath(path)!r}: its tensordict metadata has a level that is not an object with 'keys'"
        raise MemmapFormatError(msg)
    td = TensorDict(batch_size=level["batch_size"], names=level.get("names"), device=device)
    for key, item in level["keys"].items():
        if "tensor" in item:
            used.add(item["tensor"])
            tensor = file.get_tensor(item["tensor"])
            td.set(key, UnbatchedTensor(tensor) if item.get("unbatched") else tensor)
        elif "non_tensor" in item:
            td.set_non_tensor(key, item["non_tensor"])
        elif "td" in item:
            td.set(key, _rebuild(item["td"], file, device, path, used))
        else:
            msg = f"{os.fspath(path)!r}: the metadata of {key!r} is neither a tensor, a value nor a level"
            raise MemmapFormatError(msg)
    stack_dim = level.get("stack_dim")
    if stack_dim is not None:
        members = td.unbind(stack_dim)
        batch_size = None
        if not members:
            batch_size = td.batch_size[:stack_dim] + td.batch_size[stack_dim + 1 :]
        td = LazyStackedTensorDict(
            *members, stack_dim=stack_dim, batch_size=batch_size, device=device
        )
    name = level.get("class")
    if name is not None:
        return _tensorclass(name, path)._from_tensordict(td)
    return td


def _check_tiling(path: str, records: dict, data_start: int, data_end: int) -> None:
    """Refuses byte ranges that overlap or leave holes: the format tiles its data exactly.

    Two entries over the same bytes would load as views of one another, so that writing one
    changes the other; a hole or a tail means the header and the data disagree.
    """
    position, previous = data_start, None
    for begin, end, name in sorted((r[2], r[3], name) for name, r in records.items()):
        if begin < position:
            msg = (
                f"{path!r}: the safetensors entries {previous!r} and {name!r} overlap in the "
                "file; each entry must have bytes of its own"
            )
            raise MemmapFormatError(msg)
        if begin > position:
            msg = (
                f"{path!r}: the safetensors header leaves {begin - position} bytes before "
                f"{name!r} to no entry; the entries must tile the data"
            )
            raise MemmapFormatError(msg)
        position, previous = end, name
    if position != data_end:
        msg = (
            f"{path!r}: the safetensors entries cover {position - data_start} bytes of a "
            f"{data_end - data_start}-byte data section; the header and the data disagree"
        )
        raise MemmapFormatError(msg)


_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U64": torch.uint64,
    "U32": torch.uint32,
    "U16": torch.uint16,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    "C64": torch.complex64,
}


class _MappedFile:
    """A safetensors file read on the CPU through one private mapping of the whole file.

    The layout (the safetensors specification): an 8-byte little-endian header size
    ``n``, ``n`` bytes of JSON (``name -> {"dtype", "shape", "data_offsets": [begin,
    end]}`` and ``"__metadata__"``), then the data, offsets counting from its start.
    Each tensor is a view of the mapping, as ``safe_open`` gives it, but made with one
    ``as_strided`` instead of a storage per tensor; a tensor whose offset its itemsize
    does not divide is copied.
    """

    def __init__(self, path) -> None:
        self.path = os.fspath(path)
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as handle:
            head = handle.read(8)
            length = int.from_bytes(head, "little") if len(head) == 8 else -1
            if length < 2 or 8 + length > size:
                msg = f"{self.path!r} is not a safetensors file (its header size is not valid)"
                raise MemmapFormatError(msg)
            if length > MAX_HEADER_BYTES:
                msg = (
                    f"{self.path!r}: its safetensors header claims {length} bytes, more than "
                    f"the format's limit of {MAX_HEADER_BYTES}; the file is damaged or not "
                    "a safetensors file"
                )
                raise MemmapFormatError(msg)
            try:
                header = json.loads(handle.read(length))
            except ValueError as err:
                msg = f"{self.path!r} is not a safetensors file (its header is not JSON): {err}"
                raise MemmapFormatError(msg) from err
        if type(header) is not dict:
            msg = f"{self.path!r} is not a safetensors file (its header is not an object)"
            raise MemmapFormatError(msg)
        self._metadata = header.pop("__metadata__", None)
        self._start = 8 + length
        self._size = size
        self._header = {name: self._record(name, info) for name, info in header.items()}
        _check_tiling(self.path, self._header, self._start, size)
        self._storage = torch.from_file(self.path, False, size, dtype=torch.uint8)
        self._views: dict = {}

    def _record(self, name: str, info) -> tuple:
        """``(dtype, shape, begin, end)`` of one header record, checked against the file."""
        dtype = _DTYPES.get(info.get("dtype")) if type(info) is dict else None
        shape, offsets = (info.get("shape"), info.get("data_offsets")) if dtype else (None, None)
        valid = (
            type(shape) is list
            and all(type(n) is int and n >= 0 for n in shape)
            and type(offsets) is list
            and len(offsets) == 2
            and all(type(n) is int and n >= 0 for n in offsets)
        )
        if valid:
            begin, end = self._start + offsets[0], self._start + offsets[1]
            size = torch.Size(shape)
            valid = begin <= end <= self._size and end - begin == size.numel() * dtype.itemsize
        if not valid:
            msg = f"{self.path!r}: the header record of {name!r} is not valid: {info!r}"
            raise MemmapFormatError(msg)
        return dtype, size, begin, end

    def metadata(self):
        return self._metadata

    def keys(self):
        return list(self._header)

    def get_tensor(self, name: str) -> torch.Tensor:
        dtype, size, begin, end = self._header[name]
        itemsize = dtype.itemsize
        if begin % itemsize:
            flat = self._storage[begin:end].clone().view(dtype)
            return flat.view(size)
        whole = self._views.get(dtype)
        if whole is None:
            whole = self._views[dtype] = self._storage[: self._size - self._size % itemsize].view(
                dtype
            )
        strides = []
        step = 1
        for n in reversed(size):
            strides.append(step)
            step *= max(n, 1)
        return whole.as_strided(size, tuple(reversed(strides)), begin // itemsize)

    def __enter__(self) -> _MappedFile:
        return self

    def __exit__(self, *exc) -> None:
        self._views.clear()


def from_safetensors(
    path: str | os.PathLike, *, device: DeviceType | None = None
) -> TensorCollection:
    """Loads a tensordict from a safetensors file.

    A file written by :func:`to_safetensors` (here or by the well-known
    implementation) loads with the structure it was saved with: batch sizes,
    dimension names, lazy stacks (their members as TensorDicts), tensorclasses
    (the class must be imported: nothing is imported by name) and non-tensor
    values. Any other safetensors file loads as nested TensorDicts of empty batch
    size, each tensor name split on ``"."`` (the layout of
    :meth:`~tensordict.TensorDict.from_module`). Needs the ``safetensors`` extra.

    Args:
        path (str or path): the file.

    Keyword Args:
        device (torch.device or str, optional): load the tensors there; it is also
            the result's device. Defaults to ``None``: on the CPU, with no device.

    Returns:
        A TensorDict, a LazyStackedTensorDict or the tensorclass that was saved.

    Raises:
        ImportError: if the ``safetensors`` package is not installed.
        ValueError: if the metadata has another version, or the file holds tensors
            the metadata does not list; if the header is longer than the format's
            100 MB bound, or its entries overlap, leave holes or miss the data's end;
            if, without our metadata, one name is a dotted prefix of another
            (``"a"`` and ``"a.b"``). Each message names the file.

    Examples:
        >>> import tempfile, torch
        >>> from safetensors.torch import save_file
        >>> from tensordict import from_safetensors
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     save_file({"0.weight": torch.ones(4, 3)}, f"{tmp}/model.safetensors")
        ...     params = from_safetensors(f"{tmp}/model.safetensors")
        >>> params["0", "weight"].shape
        torch.Size([4, 3])
    """
    _require_safetensors()
    if device is not None:
        device = torch.device(device)
    if device is None or device.type == "cpu":
        opened = _MappedFile(path)  # one mapping of the file for every tensor
    else:
        opened = safe_open(os.fspath(path), framework="pt", device=str(device))
    with opened as file:
        text = (file.metadata() or {}).get(METADATA_KEY)
        if text is None:
            _check_names_nest(os.fspath(path), file.keys())
            td = TensorDict(device=device)
            for name in file.keys():
                td.set(tuple(name.split(SEPARATOR)), file.get_tensor(name))
            return td
        try:
            meta = json.loads(text)
        except ValueError as err:
            msg = f"{os.fspath(path)!r}: its tensordict metadata is not valid JSON: {err}"
            raise MemmapFormatError(msg) from err
        version = meta.get("version") if type(meta) is dict else None
        if version != FORMAT_VERSION:
            msg = (
                f"cannot load {os.fspath(path)!r}: its tensordict metadata has version "
                f"{version!r}; this library reads version {FORMAT_VERSION}"
            )
            raise MemmapFormatError(msg)
        used: set = set()
        out = _rebuild(meta.get("root"), file, device, path, used)
        extra = set(file.keys()) - used
        if extra:
            msg = f"{os.fspath(path)!r} holds tensors {sorted(extra)} that its tensordict metadata does not list"
            raise MemmapFormatError(msg)
        return out
