"""On-disk format v1 of memory-mapped tensordicts: the specification, names, and meta.json.

Layout
------
A tensordict level is a folder holding ``meta.json``, a JSON object. It MUST hold
the level's own fields and one record per entry, side by side:

* ``"shape"``: the batch size, a list of non-negative ints;
* ``"device"``: the device as a string (``"cpu"``);
* ``"_type"``: the class as Python prints it, ``"<class 'tensordict._td.TensorDict'>"``;
* ``"_format_version"``: ``1``;
* ``"_class"``: ``"tensordict:TensorDict"``.

Because fields and entries share one object, an entry MUST NOT be named like a
field (``shape``, ``device``, ``_type``, ``_format_version``, ``_class``): the
writer refuses such a key before writing anything (the reference silently
loses it).

Records
~~~~~~~
* A tensor: ``{"device", "shape", "dtype": "torch.float32", "is_nested": false}``.
  Its bytes are in ``<name>.memmap`` beside ``meta.json``: raw, C-contiguous,
  native byte order, exactly ``numel * itemsize`` bytes (a reader MUST refuse a
  file of another size).
* A nested (jagged) tensor: the same record with ``"is_nested": true``; its
  ``"shape"`` is the shape of its *shape tensor*, stored as int64 in
  ``<name>.shape.memmap`` (one row of sizes per component); the components'
  bytes lie back to back in ``<name>.memmap``.
* A sub-tensordict: ``{"type": "TensorDict"}``; its content is the folder ``<name>/``.
  Other tensor collections use their class name (``"LazyStackedTensorDict"``,
  a tensorclass's name).
* A non-tensor value: ``{"type": "NonTensorData"}``; the folder ``<name>/`` holds a
  ``meta.json`` with ``"_type"`` (``"<class 'tensordict.tensorclass.NonTensorData'>"``),
  ``"data"`` (the JSON value), ``"_metadata"`` and ``"_is_non_tensor": true``. A
  value that JSON cannot hold is pickled to ``other.pickle`` in that folder and
  ``"data"`` is left out; it is read back only when the caller passes
  ``allow_pickle=True``.

A lazily stacked tensordict's folder holds ``meta.json`` with ``"_type"``,
``"_format_version"``, ``"_class"``, ``"stack_dim"``, ``"stack_dim_name"`` and one
sub-folder per member, ``0/``, ``1/``, ... A tensorclass folder holds ``meta.json``
with ``"_type"`` (the class's import path as Python prints it) and its data in
``_tensordict/``.

Names
~~~~~
With ``robust_key`` True (the default; ``None`` means the same) a key is written
in file and folder names with ``/ < > : " | ? * \\``, space, ``%`` and the control
characters 0-31 and 127 as ``%XX`` (upper-case hex); the empty key is ``%``; the
keys ``.`` and ``..`` are ``%2E`` and ``%2E%2E``. Keys inside ``meta.json`` are never
encoded. With ``robust_key=False`` the key itself is the name, and a key that is
not a valid single file name (empty, ``.``, ``..``, containing ``/`` or NUL) is
refused. A name longer than 255 bytes is shortened to a prefix, ``%~`` and a hash
of the key (a sequence no encoded key contains), so it stays unique and loads.

Two entries of one level MUST NOT map to the same file or folder, nor to
``meta.json`` or this module's own files (the lock file and temporary files): the
writer refuses such keys, naming both.

Writing and reading
~~~~~~~~~~~~~~~~~~~
``meta.json`` is replaced atomically: written to a temporary file in the same
folder, then renamed over. Each read-change-write of one folder's ``meta.json``
holds an exclusive ``flock`` on ``meta%lock`` in that folder. Readers never write.
Nothing is unpickled unless asked; nothing is imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterator

import torch

from tensordict.errors import MemmapFormatError, MemmapNotFoundError

FORMAT_VERSION = 1
META_FILE = "meta.json"
LOCK_FILE = "meta%lock"
TMP_PREFIX = "meta%tmp."
MEMMAP_SUFFIX = ".memmap"
SHAPE_SUFFIX = ".shape.memmap"
PICKLE_FILE = "other.pickle"
TENSORCLASS_DATA = "_tensordict"
NAME_MAX = 255

LEVEL_FIELDS = ("shape", "device", "_type", "_format_version", "_class")

TD_TYPE = "<class 'tensordict._td.TensorDict'>"
TD_CLASS = "tensordict:TensorDict"
LAZY_TYPE = "<class 'tensordict._lazy.LazyStackedTensorDict'>"
LAZY_CLASS = "tensordict:LazyStackedTensorDict"
NONTENSOR_TYPE = "<class 'tensordict.tensorclass.NonTensorData'>"

DTYPES = {
    str(dtype): dtype
    for dtype in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint16,
        torch.uint32,
        torch.uint64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
    )
}

_ENCODE = re.compile(r'[/<>:"|?*\\ %\x00-\x1f\x7f]')


def _percent(match: re.Match) -> str:
    return f"%{ord(match.group()):02X}"


def encode_key(key: str, robust_key: bool | None = True) -> str:
    """Returns the file-name stem for ``key`` (before any suffix and before shortening).

    Args:
        key (str): one part of a nested key.
        robust_key (bool, optional): percent-encode unsafe characters (``None`` is True).

    Raises:
        ValueError: with ``robust_key=False``, if the key is not a valid single file name.

    Examples:
        >>> encode_key("a/b")
        'a%2Fb'
        >>> encode_key("..")
        '%2E%2E'
    """
    if robust_key is False:
        if key in ("", ".", "..") or "/" in key or "\x00" in key:
            msg = (
                f"key {key!r} is not a valid file name, so it cannot be stored with "
                "robust_key=False; use robust_key=True to percent-encode it"
            )
            raise ValueError(msg)
        return key
    if not key:
        return "%"
    if key == ".":
        return "%2E"
    if key == "..":
        return "%2E%2E"
    return _ENCODE.sub(_percent, key)


@functools.lru_cache(maxsize=1 << 16)
def file_name(key: str, suffix: str = "", robust_key: bool | None = True) -> str:
    """Returns the name of the file (``suffix`` given) or folder (no suffix) of ``key``.

    Names over 255 bytes are shortened deterministically to a prefix, ``%~`` and a
    SHA-256 of the key, so that they stay unique.

    Examples:
        >>> file_name("obs", ".memmap")
        'obs.memmap'
        >>> len(file_name("k" * 400, ".memmap").encode())
        255
    """
    stem = encode_key(key, robust_key)
    name = stem + suffix
    if len(name.encode()) <= NAME_MAX:
        return name
    digest = "%~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    budget = NAME_MAX - len(digest) - len(suffix.encode())
    prefix = stem.encode()[:budget].decode("utf-8", "ignore")
    return prefix + digest + suffix


def is_own_file(name: str) -> bool:
    """True for the names this module writes besides entries (meta, lock, temporary files)."""
    return name in (META_FILE, LOCK_FILE) or name.startswith(TMP_PREFIX)


def entry_names(key: str, kind: str, robust_key: bool | None) -> tuple:
    """The names in the folder that an entry of ``kind`` (tensor, nested, folder) occupies."""
    if kind == "tensor":
        return (file_name(key, MEMMAP_SUFFIX, robust_key),)
    if kind == "nested":
        return (file_name(key, MEMMAP_SUFFIX, robust_key), file_name(key, SHAPE_SUFFIX, robust_key))
    return (file_name(key, "", robust_key),)


def check_level_keys(folder: str, entries: dict, robust_key: bool | None) -> None:
    """Refuses keys that the format cannot store at one level, before anything is written.

    Args:
        folder (str): the level's folder, for messages.
        entries (dict): key -> kind (``"tensor"``, ``"nested"`` or ``"folder"``).

    Raises:
        ValueError: for a key named like a level field, or two entries whose names
            collide (with each other, ``meta.json`` or the lock file).
    """
    taken: dict = {}
    for key, kind in entries.items():
        if key in LEVEL_FIELDS:
            msg = (
                f"cannot memory-map the entry {key!r} in {folder!r}: {key!r} is a field of "
                f"meta.json at every level ({', '.join(LEVEL_FIELDS)}); rename the entry"
            )
            raise MemmapFormatError(msg)
        for name in entry_names(key, kind, robust_key):
            if is_own_file(name):
                msg = f"cannot memory-map the entry {key!r} in {folder!r}: its name {name!r} is reserved by the format"
                raise MemmapFormatError(msg)
            other = taken.get(name)
            if other is not None:
                msg = (
                    f"cannot memory-map the entries {other!r} and {key!r} in {folder!r}: both would be "
                    f"stored as {name!r}; rename one of them"
                )
                raise MemmapFormatError(msg)
            taken[name] = key


# ---------------------------------------------------------------------- records
def tensor_record(tensor: torch.Tensor) -> dict:
    """The meta.json record of a tensor entry."""
    if tensor.is_nested:
        shape = [tensor.size(0), tensor.dim() - 1]
        return {
            "device": str(tensor.device),
            "shape": shape,
            "dtype": str(tensor.dtype),
            "is_nested": True,
        }
    return {
        "device": str(tensor.device),
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype),
        "is_nested": False,
    }


def parse_dtype(value, where: str) -> torch.dtype:
    """Returns the dtype named by a record, or raises naming ``where``."""
    dtype = DTYPES.get(value) if isinstance(value, str) else None
    if dtype is None:
        msg = f"{where}: unknown dtype {value!r}; expected one of {sorted(DTYPES)}"
        raise MemmapFormatError(msg)
    return dtype


def parse_shape(value, where: str) -> torch.Size:
    """Returns the shape of a record, or raises naming ``where`` and the bad value."""
    if not isinstance(value, list) or not all(type(s) is int and s >= 0 for s in value):
        msg = f"{where}: shape is not valid: {value!r} (expected a list of non-negative ints)"
        raise MemmapFormatError(msg)
    return torch.Size(value)


def nbytes(shape, dtype: torch.dtype) -> int:
    """The number of bytes of a C-contiguous tensor of ``shape`` and ``dtype``."""
    numel = 1
    for s in shape:
        numel *= s
    return numel * dtype.itemsize


# ---------------------------------------------------------------------- meta.json
def meta_path(folder: str) -> str:
    """The path of ``meta.json`` in ``folder``."""
    return os.path.join(folder, META_FILE)


def read_meta(folder: str) -> tuple:
    """Reads ``meta.json`` of ``folder``.

    Returns:
        ``(meta, stat)``: the parsed JSON object and the ``os.stat_result`` of the
        file that was read.

    Raises:
        FileNotFoundError: if the folder or its ``meta.json`` is missing.
        ValueError: if ``meta.json`` is a symlink, not valid JSON, or not an object.
    """
    path = meta_path(folder)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError as err:
        what = "folder" if not os.path.isdir(folder) else "meta.json"
        msg = f"cannot load {folder!r}: the {what} is missing ({path!r}); is it a memory-mapped tensordict?"
        raise MemmapNotFoundError(msg) from err
    except OSError as err:
        if os.path.islink(path):
            msg = f"refusing to read {path!r}: it is a symbolic link"
            raise MemmapFormatError(msg) from err
        raise
    try:
        stat = os.fstat(fd)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read()
    finally:
        os.close(fd)
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        msg = f"{path!r} is not valid JSON: {err}"
        raise MemmapFormatError(msg) from err
    if not isinstance(meta, dict):
        msg = f"{path!r} must hold a JSON object, got {type(meta).__name__}"
        raise MemmapFormatError(msg)
    return meta, stat


def dumps_record(key: str, record) -> str:
    """One ``"key": record`` member of meta.json, serialised (cached by writers)."""
    return json.dumps(key) + ": " + json.dumps(record)


def write_meta(folder: str, members) -> os.stat_result:
    """Atomically replaces ``meta.json`` of ``folder`` with the given serialised members.

    Args:
        folder (str): the folder.
        members (iterable of str): ``"key": value`` strings (see :func:`dumps_record`).

    Returns:
        The ``os.stat_result`` of the new ``meta.json``.
    """
    text = "{" + ", ".join(members) + "}"
    tmp = os.path.join(folder, f"{TMP_PREFIX}{os.getpid()}.{id(text):x}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(text.encode())
        stat = os.fstat(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, meta_path(folder))
    return stat


def write_meta_dict(folder: str, meta: dict) -> os.stat_result:
    """Atomically replaces ``meta.json`` of ``folder`` with ``meta``."""
    return write_meta(folder, [dumps_record(k, v) for k, v in meta.items()])


@contextlib.contextmanager
def locked(folder: str) -> Iterator[None]:
    """Holds an exclusive ``flock`` on the folder's lock file for one read-change-write."""
    fd = os.open(
        os.path.join(folder, LOCK_FILE),
        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
        0o644,
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def same_file(stat_a, stat_b) -> bool:
    """True when two stat results describe the same unchanged file."""
    return (
        stat_a is not None
        and stat_b is not None
        and stat_a.st_ino == stat_b.st_ino
        and stat_a.st_dev == stat_b.st_dev
        and stat_a.st_size == stat_b.st_size
        and stat_a.st_mtime_ns == stat_b.st_mtime_ns
    )


def level_meta(batch_size, device, type_str: str = TD_TYPE, class_str: str = TD_CLASS) -> dict:
    """The level's own fields of a TensorDict folder."""
    return {
        "shape": list(batch_size),
        "device": "cpu" if device is None else str(device),
        "_type": type_str,
        "_format_version": FORMAT_VERSION,
        "_class": class_str,
    }


def nontensor_meta(data, pickled: bool) -> dict:
    """The ``meta.json`` of a non-tensor entry's folder."""
    meta = {"_type": NONTENSOR_TYPE}
    if not pickled:
        meta["data"] = data
    meta["_metadata"] = None
    meta["_is_non_tensor"] = True
    return meta


def json_compatible(value) -> bool:
    """True when ``value`` survives a JSON round trip unchanged."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, (int, float)) and type(value) in (int, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if type(value) is list:
        return all(json_compatible(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and json_compatible(v) for k, v in value.items())
    return False


def child_path(folder: str, name: str) -> str:
    """The path of ``name`` in ``folder``, refused when it is a symbolic link.

    Raises:
        ValueError: if ``name`` would leave the folder or the path is a symbolic link.
    """
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        msg = f"refusing the name {name!r} in {folder!r}: it would leave the folder"
        raise MemmapFormatError(msg)
    path = os.path.join(folder, name)
    if os.path.islink(path):
        msg = f"refusing to follow the symbolic link {path!r}"
        raise MemmapFormatError(msg)
    return path
