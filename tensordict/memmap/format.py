"""On-disk format v1 of memory-mapped tensordicts: the specification, names, and meta.json.

Layout
------
A tensordict level is a folder holding ``meta.json``, a JSON object. It MUST hold
the level's own fields and one record per entry, side by side:

* ``"shape"``: the batch size, a list of non-negative ints;
* ``"device"``: the device as a string (``"cpu"``);
* ``"_type"``: the class as Python prints it, ``"<class 'tensordict._td.TensorDict'>"``;
* ``"_format_version"``: ``1``;
* ``"_class"``: ``"tensordict:TensorDict"``;
* ``"_names"``: present only when a batch dimension is named: the names, a list
  with one string or ``null`` per batch dimension (``["time", null]``); the
  non-null names MUST be unique. A writer leaves it out when no dimension is named.

Because fields and entries share one object, an entry MUST NOT be named like a
field (``shape``, ``device``, ``_type``, ``_format_version``, ``_class``): the
writer refuses such a key before writing anything (the reference silently
loses it). ``_names`` is told apart by its value: a list (or ``null``) is the
field, an object is the record of an entry named ``_names`` (the reference
writes such an entry and then leaves the names out); a writer refuses a level
that has both named dimensions and an entry named ``_names``.

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
  value that JSON cannot hold is pickled to ``other.pickle`` in that folder as the
  dict ``{"data": value}`` and ``"data"`` is left out of ``meta.json``; it is read
  back only when the caller passes ``allow_pickle=True``. A :class:`MetaData` entry
  is the same with ``{"type": "MetaData"}`` and ``"_type"``
  ``"<class 'tensordict.tensorclass.MetaData'>"``.
* A stack of non-tensor values: ``{"type": "NonTensorStack"}``; the folder
  ``<name>/`` holds a ``meta.json`` with ``"_type"``
  (``"<class 'tensordict.tensorclass.NonTensorStack'>"``), ``"_format_version"``,
  ``"_class"`` (``"tensordict:NonTensorStack"``), ``"stack_dim"``, ``"device"`` and
  ``"data"``: the values as nested lists, one level per batch dimension (the batch
  size is read from them). Values that JSON cannot hold are pickled, as that
  nested list, to ``pickle.pkl`` in the folder, and ``"data"`` is the string
  ``"pickle.pkl"``; they are read back only with ``allow_pickle=True``.

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
``meta.json`` or the format's own files (the lock file and temporary files): the
writer refuses such keys, naming both.

A writer adding an entry writes its files under temporary names, then, holding the
lock and having re-read ``meta.json``, renames them into place and records the entry;
a key another writer recorded meanwhile is refused and its files are left alone.
Temporary files and staging folders are named ``%tmp.<host>.<pid>.<random>``
(``meta%tmp.`` for ``meta.json``): ``<host>`` hashes the host name and pid namespace. A writer
holding a folder's lock removes those of this host whose process is dead; names of
another host (a shared file system) or without a host are never removed.

Writing and reading
~~~~~~~~~~~~~~~~~~~
``meta.json`` is replaced atomically: written to a temporary file in the same
folder, then renamed over. It holds at most 64 MiB (:data:`MAX_META_BYTES`, some
600,000 entries at one level): a reader refuses a larger one before reading it,
so that no ``meta.json`` (an archive's, compressed, least of all) can take more
memory than that. Each read-change-write of one folder's ``meta.json``
holds an exclusive ``flock`` on ``meta%lock`` in that folder. Readers never write.
A tree whose root folder holds ``meta%writer`` (a JSON object: ``host``, ``pid``,
``token``; at most 4096 bytes) has one writer: a process without that token MUST NOT
change any ``meta.json`` of the tree, and this library refuses to. A claimer MUST
make the file visible only whole and only if no claim is there
(:func:`tensordict.memmap.claim_writer` writes it to a temporary file and links
that to ``meta%writer``, which fails when the name exists). A ``meta%writer`` that
is not such an object (empty, not JSON) is nobody's claim: no process may change
the tree until it is replaced. Readers ignore the file.
Nothing is unpickled unless asked; nothing is imported.

The temporary names, the atomic replace of ``meta.json``, the exchange of folders,
the lock and the writer's claim are the file-system machinery of
:mod:`tensordict.memmap._fs`; this module holds what is written, not how.

The reader
~~~~~~~~~~
This module is the one reader of the format: :func:`level_kind` tells a level's
class, :func:`parse_td_level` its batch size and device, :func:`parse_names` the
names of its batch dimensions, :func:`is_field` which members of ``meta.json`` are
the level's fields (:func:`entries` yields the others), :func:`parse_lazy_level`
a lazy stack's fields and :func:`lazy_members` its member folders,
:func:`parse_record` an entry's record, :func:`parse_tensor_record` a tensor's
dtype and shape, and :func:`entry_path` an entry's file (the encoded name, or
the unencoded name that older writers used). Each raises
:class:`~tensordict.errors.MemmapFormatError` naming the path on the first
problem. The loader lets it propagate; ``tensordict verify`` records it and goes
on, so the two agree on every folder.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat as _stat
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch

from tensordict._keys import NestedKey
from tensordict._typing import DeviceType, ShapeType
from tensordict.errors import (
    InvalidArgumentError,
    KeyFileNameError,
    MemmapFormatError,
    MemmapNotFoundError,
    SymlinkError,
)

FORMAT_VERSION = 1
META_FILE = "meta.json"
LOCK_FILE = "meta%lock"
WRITER_FILE = "meta%writer"  # the claim of the one writer of a tree (claim_writer)
TMP_PREFIX = "meta%tmp."
DATA_TMP_PREFIX = "%tmp."  # data files being written, before they are moved into place
MEMMAP_SUFFIX = ".memmap"
SHAPE_SUFFIX = ".shape.memmap"
PICKLE_FILE = "other.pickle"
TENSORCLASS_DATA = "_tensordict"
NAME_MAX = 255
MAX_DEPTH = 128  # levels of folders below a root; deeper trees are refused on write and load
MAX_META_BYTES = 64 << 20  # the largest meta.json a reader accepts (see "Writing and reading")
_MAX_SIZE = (1 << 62) - 1  # a larger dimension cannot be a tensor's: its byte count overflows

LEVEL_FIELDS = ("shape", "device", "_type", "_format_version", "_class")  # never entries' names
# "_names" is a level field when its value is a list or null, an entry's record otherwise.
NAMES_FIELD = "_names"
FIELD_NAMES = frozenset((*LEVEL_FIELDS, NAMES_FIELD))  # the keys that may be a field: see is_field

TD_TYPE = "<class 'tensordict._td.TensorDict'>"
TD_CLASS = "tensordict:TensorDict"
LAZY_TYPE = "<class 'tensordict._lazy.LazyStackedTensorDict'>"
LAZY_CLASS = "tensordict:LazyStackedTensorDict"
NONTENSOR_TYPE = "<class 'tensordict.tensorclass.NonTensorData'>"
METADATA_TYPE = "<class 'tensordict.tensorclass.MetaData'>"
NONTENSOR_STACK_TYPE = "<class 'tensordict.tensorclass.NonTensorStack'>"
NONTENSOR_STACK_CLASS = "tensordict:NonTensorStack"
STACK_PICKLE_FILE = "pickle.pkl"

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
        KeyFileNameError: with ``robust_key=False``, if the key is not a valid single file
            name (a ``ValueError`` and a ``RuntimeError``).

    Examples:
        >>> encode_key("a/b")
        'a%2Fb'
        >>> encode_key("..")
        '%2E%2E'
    """
    if robust_key is False:
        if key in ("", ".", "..") or "/" in key or "\x00" in key:
            msg = (
                f"key {key!r} is not a valid file name (it would leave the folder, or names "
                "none), so it cannot be used with robust_key=False; use robust_key=True to "
                "percent-encode it"
            )
            raise KeyFileNameError(msg)
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

    Raises:
        ValueError: if the key is not a valid file name with ``robust_key=False``, or
            holds a lone surrogate (no file name can).

    Examples:
        >>> file_name("obs", ".memmap")
        'obs.memmap'
        >>> len(file_name("k" * 400, ".memmap").encode())
        255
    """
    stem = encode_key(key, robust_key)
    if not stem.isascii():
        try:
            stem.encode()
        except UnicodeEncodeError as err:
            msg = f"key {key!r} cannot be a file name: it is not valid Unicode (a lone surrogate)"
            raise MemmapFormatError(msg) from err
    name = stem + suffix
    if len(name.encode()) <= NAME_MAX:
        return name
    digest = "%~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    budget = NAME_MAX - len(digest) - len(suffix.encode())
    prefix = stem.encode()[:budget].decode("utf-8", "ignore")
    return prefix + digest + suffix


def is_own_file(name: str) -> bool:
    """True for the names this module writes besides entries (meta, lock, temporary files)."""
    return name in (META_FILE, LOCK_FILE, WRITER_FILE) or name.startswith(
        (TMP_PREFIX, DATA_TMP_PREFIX)
    )


def entry_names(key: str, kind: str, robust_key: bool | None) -> tuple:
    """The names in the folder that an entry of ``kind`` (tensor, nested, folder) occupies."""
    if kind == "tensor":
        return (file_name(key, MEMMAP_SUFFIX, robust_key),)
    if kind == "nested":
        return (file_name(key, MEMMAP_SUFFIX, robust_key), file_name(key, SHAPE_SUFFIX, robust_key))
    return (file_name(key, "", robust_key),)


def check_level_keys(
    folder: str, entries: dict, robust_key: bool | None, *, named: bool = False
) -> None:
    """Refuses keys that the format cannot store at one level, before anything is written.

    Args:
        folder (str): the level's folder, for messages.
        entries (dict): key -> kind (``"tensor"``, ``"nested"`` or ``"folder"``).
        robust_key (bool, optional): the key encoding of file names.

    Keyword Args:
        named (bool, optional): the level has named batch dimensions, so that its
            ``"_names"`` field is written. Defaults to False.

    Raises:
        ValueError: for a key named like a level field, an entry named ``"_names"``
            at a level with named dimensions, or two entries whose names collide
            (with each other, ``meta.json`` or the lock file).
    """
    if named and NAMES_FIELD in entries:
        msg = (
            f"cannot memory-map the entry {NAMES_FIELD!r} in {folder!r}: the level's named batch "
            f"dimensions are stored in the field {NAMES_FIELD!r} of meta.json; rename the entry "
            "or clear the names (td.names = None)"
        )
        raise MemmapFormatError(msg)
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


def parse_dtype(value: object, where: str) -> torch.dtype:
    """Returns the dtype named by a record, or raises naming ``where``."""
    dtype = DTYPES.get(value) if isinstance(value, str) else None
    if dtype is None:
        msg = f"{where}: unknown dtype {value!r}; expected one of {sorted(DTYPES)}"
        raise MemmapFormatError(msg)
    return dtype


def parse_shape(value: object, where: str) -> torch.Size:
    """Returns the shape of a record, or raises naming ``where`` and the bad value."""
    if not isinstance(value, list) or not all(
        type(s) is int and 0 <= s <= _MAX_SIZE for s in value
    ):
        msg = f"{where}: shape is not valid: {value!r} (expected a list of non-negative ints)"
        raise MemmapFormatError(msg)
    return torch.Size(value)


def nbytes(shape: ShapeType, dtype: torch.dtype) -> int:
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
        ValueError: if ``meta.json`` is a symlink or not a regular file (a FIFO, a
            folder, a device: it is never read, so it cannot block), is not valid JSON,
            nests deeper than Python can parse, or is not an object.
    """
    raw, stat = read_meta_bytes(folder)
    return parse_meta(meta_path(folder), raw), stat


def read_meta_bytes(folder: str) -> tuple:
    """``(raw, stat)``: the bytes of ``meta.json`` of ``folder``, unparsed (see :func:`read_meta`).

    Raises:
        FileNotFoundError: if the folder or its ``meta.json`` is missing.
        ValueError: if ``meta.json`` is a symlink, not a regular file, or larger
            than :data:`MAX_META_BYTES`.
    """
    path = meta_path(folder)
    try:
        # O_NONBLOCK: opening a FIFO returns at once, and fstat below refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError as err:
        what = "folder" if not os.path.isdir(folder) else "meta.json"
        msg = f"cannot load {folder!r}: the {what} is missing ({path!r}); is it a memory-mapped tensordict?"
        raise MemmapNotFoundError(msg) from err
    except OSError as err:
        if os.path.islink(path):
            msg = f"refusing to read {path!r}: it is a symbolic link"
            raise SymlinkError(msg) from err
        raise
    try:
        stat = os.fstat(fd)
        if not _stat.S_ISREG(stat.st_mode):
            msg = f"refusing to read {path!r}: it is not a regular file"
            raise MemmapFormatError(msg)
        if stat.st_size > MAX_META_BYTES:
            msg = (
                f"refusing to read {path!r}: it holds {stat.st_size} bytes, more than the "
                f"{MAX_META_BYTES} a meta.json may hold"
            )
            raise MemmapFormatError(msg)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read()
    finally:
        os.close(fd)
    return raw, stat


def parse_meta(path: str, raw: bytes) -> dict:
    """The JSON object in the bytes ``raw`` of the ``meta.json`` at ``path``.

    Raises:
        ValueError: if ``raw`` is not valid JSON, nests deeper than Python can parse,
            or is not an object.

    Examples:
        >>> parse_meta("buffer/meta.json", b'{"shape": [2]}')
        {'shape': [2]}
    """
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        msg = f"{path!r} is not valid JSON: {err}"
        raise MemmapFormatError(msg) from err
    except RecursionError as err:
        msg = f"{path!r} nests its JSON values too deeply to be read"
        raise MemmapFormatError(msg) from err
    if not isinstance(meta, dict):
        msg = f"{path!r} must hold a JSON object, got {type(meta).__name__}"
        raise MemmapFormatError(msg)
    return meta


def dumps_record(key: str, record: object) -> str:
    """One ``"key": record`` member of meta.json, serialised (cached by writers)."""
    return json.dumps(key) + ": " + json.dumps(record)


def level_meta(
    batch_size: ShapeType,
    device: DeviceType | None,
    type_str: str = TD_TYPE,
    class_str: str = TD_CLASS,
    names: Sequence[str | None] | None = None,
) -> dict:
    """The level's own fields of a TensorDict folder; ``"_names"`` only when a dimension is named.

    Examples:
        >>> level_meta([2, 3], "cpu", names=["time", None])["_names"]
        ['time', None]
        >>> "_names" in level_meta([2], "cpu", names=[None])
        False
    """
    meta = {
        "shape": list(batch_size),
        "device": "cpu" if device is None else str(device),
        "_type": type_str,
        "_format_version": FORMAT_VERSION,
        "_class": class_str,
    }
    if names is not None and any(name is not None for name in names):
        meta[NAMES_FIELD] = list(names)
    return meta


def nontensor_meta(data: object, pickled: bool, type_str: str = NONTENSOR_TYPE) -> dict:
    """The ``meta.json`` of a non-tensor entry's folder (``type_str``: its class, as printed)."""
    meta = {"_type": type_str}
    if not pickled:
        meta["data"] = data
    meta["_metadata"] = None
    meta["_is_non_tensor"] = True
    return meta


def json_compatible(value: object) -> bool:
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
        raise SymlinkError(msg)
    return path


# ---------------------------------------------------------------------- the reader
KIND_TD = "TensorDict"
KIND_LAZY = "LazyStackedTensorDict"
KIND_TENSORCLASS = "tensorclass"
KIND_NONTENSOR = "NonTensorData"
KIND_NONTENSOR_STACK = "NonTensorStack"

# a class defined inside a function has "<locals>" in its qualified name
_CLASS_TYPE = re.compile(r"^<class '([A-Za-z_][\w.]*(?:\.<locals>\.[A-Za-z_][\w.]*)*)'>$")


def level_kind(folder: str, meta: dict) -> str:
    """Returns the kind of the level stored in ``folder``: one of the ``KIND_*`` names.

    Args:
        folder (str): the level's folder, for messages.
        meta (dict): its parsed ``meta.json``.

    Raises:
        ValueError: if ``"_class"`` or ``"_type"`` is not a string, or they name no
            known kind.

    Examples:
        >>> level_kind("buffer", level_meta([3], "cpu"))
        'TensorDict'
        >>> level_kind("frame", {"_type": "<class 'shapes.Frame'>"})
        'tensorclass'
    """
    cls, type_str = meta.get("_class"), meta.get("_type")
    for field, value in (("_class", cls), ("_type", type_str)):
        if value is not None and not isinstance(value, str):
            msg = f"{meta_path(folder)!r}: field {field!r} must be a string, got {value!r}"
            raise MemmapFormatError(msg)
    if meta.get("_is_non_tensor") is True or (cls is None and type_str == NONTENSOR_TYPE):
        return KIND_NONTENSOR
    if cls == NONTENSOR_STACK_CLASS or (cls is None and type_str == NONTENSOR_STACK_TYPE):
        return KIND_NONTENSOR_STACK
    if cls == TD_CLASS or (cls is None and type_str == TD_TYPE):
        return KIND_TD
    if cls == LAZY_CLASS or (cls is None and type_str == LAZY_TYPE):
        return KIND_LAZY
    if cls is None and type_str is not None and _CLASS_TYPE.match(type_str) and "shape" not in meta:
        return KIND_TENSORCLASS
    msg = (
        f"{meta_path(folder)!r} names no known class (_type={type_str!r}, _class={cls!r}); "
        "is it a memory-mapped tensordict folder?"
    )
    raise MemmapFormatError(msg)


def tensorclass_name(type_str: str) -> str:
    """The import path in a tensorclass's ``"_type"``: ``"<class 'm.Frame'>"`` gives ``"m.Frame"``."""
    return _CLASS_TYPE.match(type_str).group(1)


def check_version(folder: str, meta: dict) -> None:
    """Refuses a ``"_format_version"`` other than :data:`FORMAT_VERSION` (absent means 1).

    Raises:
        ValueError: naming the file and the version found.
    """
    version = meta.get("_format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION or type(version) is not int:
        msg = (
            f"{meta_path(folder)!r}: unsupported _format_version {version!r} "
            f"(this library reads {FORMAT_VERSION})"
        )
        raise MemmapFormatError(msg)


def parse_device(value: object, where: str) -> torch.device | None:
    """Returns the ``torch.device`` of a ``"device"`` field (``None`` for ``null``/``"None"``).

    Raises:
        ValueError: if the value names no device, quoting it and ``where``.
    """
    if value is None or value == "None":
        return None
    if isinstance(value, str):
        try:
            return torch.device(value)
        except (RuntimeError, ValueError):
            pass
    msg = f"{where}: unknown device {value!r}"
    raise MemmapFormatError(msg)


def parse_td_level(folder: str, meta: dict) -> tuple:
    """Returns ``(batch_size, device)`` of a TensorDict level.

    Raises:
        ValueError: for an unsupported version, a batch size that is not a list of
            non-negative ints, or an unknown device; the message names the file.

    Examples:
        >>> parse_td_level("buffer", level_meta([3], "cpu"))
        (torch.Size([3]), device(type='cpu'))
    """
    check_version(folder, meta)
    where = f"{meta_path(folder)!r} field"
    batch_size = parse_shape(meta.get("shape"), f"{where} 'shape'")
    return batch_size, parse_device(meta.get("device"), f"{where} 'device'")


def parse_names(folder: str, meta: dict, batch_size: torch.Size | None = None) -> list | None:
    """Returns the names of a TensorDict level's batch dimensions, or ``None`` when none is named.

    Args:
        folder (str): the level's folder, for messages.
        meta (dict): its parsed ``meta.json``.
        batch_size (torch.Size, optional): the level's batch size; the names must
            have one item per dimension. ``None`` checks the items only.

    Raises:
        ValueError: if ``"_names"`` is neither a list nor ``null`` nor an entry's
            record, holds an item that is not a string or ``null``, repeats a name,
            or does not have one item per batch dimension; the message names the file.

    Examples:
        >>> parse_names("buffer", level_meta([2, 3], "cpu", names=["time", None]), torch.Size([2, 3]))
        ['time', None]
        >>> parse_names("buffer", level_meta([2], "cpu")) is None
        True
    """
    names = meta.get(NAMES_FIELD)
    if names is None or type(names) is dict:  # absent, null, or an entry named "_names"
        return None
    where = f"{meta_path(folder)!r} field {NAMES_FIELD!r}"
    if type(names) is not list or not all(n is None or type(n) is str for n in names):
        msg = f"{where}: expected a list of dimension names (strings or null), got {names!r}"
        raise MemmapFormatError(msg)
    if batch_size is not None and len(names) != len(batch_size):
        msg = (
            f"{where}: {names!r} must name each of the {len(batch_size)} batch dimensions "
            f"of the batch size {list(batch_size)}"
        )
        raise MemmapFormatError(msg)
    named = [n for n in names if n is not None]
    if len(named) != len(set(named)):
        msg = f"{where}: the dimension names {names!r} repeat a name"
        raise MemmapFormatError(msg)
    return names if named else None


def parse_lazy_level(folder: str, meta: dict) -> tuple:
    """Returns ``(stack_dim, stack_dim_name)`` of a lazy stack level.

    Raises:
        ValueError: for an unsupported version, a ``stack_dim`` that is not an int or
            a ``stack_dim_name`` that is not a string or ``null``.
    """
    check_version(folder, meta)
    stack_dim = meta.get("stack_dim", 0)
    if type(stack_dim) is not int:
        msg = f"{meta_path(folder)!r}: stack_dim must be an int, got {stack_dim!r}"
        raise MemmapFormatError(msg)
    name = meta.get("stack_dim_name")
    if name is not None and not isinstance(name, str):
        msg = f"{meta_path(folder)!r}: stack_dim_name must be a string or null, got {name!r}"
        raise MemmapFormatError(msg)
    return stack_dim, name


def lazy_members(folder: str) -> list:
    """Returns the member folders ``0/ .. N-1/`` of a lazy stack, in order.

    Raises:
        ValueError: if the numbering has a gap, a member is a symbolic link, or there
            is no member.
    """
    numbers = member_numbers(
        folder, [n for n in os.listdir(folder) if os.path.isdir(os.path.join(folder, n))]
    )
    paths = [os.path.join(folder, str(n)) for n in numbers]
    for path in paths:
        if os.path.islink(path):
            msg = f"refusing to follow the symbolic link {path!r}"
            raise SymlinkError(msg)
    return paths


def member_numbers(folder: str, names: Iterable[str]) -> list:
    """Returns the member numbers ``0 .. N-1`` of a lazy stack whose sub-folders are ``names``.

    Raises:
        ValueError: if the numbering has a gap or there is no member, naming ``folder``.

    Examples:
        >>> member_numbers("stack", ["1", "0", "x"])
        [0, 1]
    """
    numbers = sorted(int(n) for n in names if n.isdigit() and n == str(int(n)))
    if not numbers:
        msg = f"the lazy stack in {folder!r} has no member folder (0/, 1/, ...)"
        raise MemmapFormatError(msg)
    if numbers != list(range(len(numbers))):
        missing = sorted(set(range(numbers[-1] + 1)) - set(numbers))
        msg = (
            f"the lazy stack in {folder!r} has member folders {numbers} with gaps: members "
            f"{missing} are missing (members must be numbered 0 to N-1 without gaps)"
        )
        raise MemmapFormatError(msg)
    return numbers


def is_field(key: str, record: object) -> bool:
    """True when the member ``key: record`` of a level's ``meta.json`` is a field of the level, not an entry.

    ``"_names"`` is the field when its value is not an object (an object is the record
    of an entry named ``"_names"``, which the reference writes).

    Examples:
        >>> is_field("shape", [2]), is_field("_names", ["x"]), is_field("_names", {"type": "TensorDict"})
        (True, True, False)
    """
    return key in LEVEL_FIELDS or (key == NAMES_FIELD and type(record) is not dict)


def subpath_parts(subpath: NestedKey) -> tuple:
    """The keys of the ``subpath`` of a load: a nested key, or its parts joined by ``"/"``.

    A nested key may nest tuples in tuples: ``("a", ("b",))`` is ``("a", "b")``. A
    step through a lazy stack is a member's position, ``"0"``, ``"1"``, ...

    Raises:
        TypeError: if ``subpath`` is neither a string nor a (nested) tuple of strings.
        ValueError: if it is empty or has an empty part.

    Examples:
        >>> subpath_parts("module/0"), subpath_parts(("a", ("b/c",)))
        (('module', '0'), ('a', 'b/c'))
    """
    if isinstance(subpath, str):
        parts = tuple(subpath.split("/"))
    else:
        parts = _flat_key(subpath)
        if parts is None:
            msg = f"subpath must be a nested key or a '/'-separated string, got {subpath!r}"
            raise TypeError(msg)
    if not parts or "" in parts:
        msg = f"subpath {subpath!r} has an empty part; give the keys of a nested tensordict"
        raise InvalidArgumentError(msg)
    return parts


def _flat_key(key: object) -> tuple | None:
    """The strings of a tuple that may nest tuples, in order; ``None`` if ``key`` is not one."""
    if not isinstance(key, tuple):
        return None
    parts: list = []
    for part in key:
        if isinstance(part, str):
            parts.append(part)
            continue
        inner = _flat_key(part)
        if inner is None:
            return None
        parts.extend(inner)
    return tuple(parts)


def member_step(where: str, names: Iterable[str], key: str, subpath: tuple) -> str:
    """The folder name of the member at position ``key`` of the lazy stack in ``where``.

    ``names`` are the names in the stack's folder, as :func:`member_numbers` reads them.

    Raises:
        ValueError: if ``key`` is not the position of a member, naming the subpath, the
            folder and the positions there are (or the numbering's fault).
    """
    numbers = member_numbers(where, names)
    if not (key.isdigit() and key == str(int(key)) and int(key) < len(numbers)):
        msg = (
            f"subpath {subpath!r} names no saved tensordict: {where!r} holds a lazy stack of "
            f"{len(numbers)} members, so a step through it is a position 0 to "
            f"{len(numbers) - 1}, not {key!r}"
        )
        raise InvalidArgumentError(msg)
    return key


def check_subpath_step(where: str, meta: dict, key: str, subpath: tuple) -> None:
    """Refuses a step of a ``subpath`` that is not a sub-tensordict of the level ``meta`` of ``where``.

    Raises:
        ValueError: if the level records no entry ``key``, or records a tensor or a
            non-tensor value there, naming the subpath and the folder.
    """
    record = meta.get(key)
    kind = None
    if record is not None and not is_field(key, record):
        kind = parse_record(where, key, record)
    if kind is None or kind in (KIND_NONTENSOR, "MetaData", KIND_NONTENSOR_STACK):
        what = "no entry" if record is None else f"{kind or 'a tensor'}, not a tensordict,"
        msg = f"subpath {subpath!r} names no saved tensordict: {where!r} holds {what} at {key!r}"
        raise InvalidArgumentError(msg)


def entries(meta: dict) -> Iterator:
    """Yields the ``(key, record)`` pairs of a TensorDict level, its own fields left out."""
    fields = FIELD_NAMES
    for key, record in meta.items():
        if key not in fields or not is_field(key, record):
            yield key, record


def parse_record(folder: str, key: str, record: object) -> str | None:
    """Returns the sub-folder type a record announces (``"TensorDict"``, ...), or ``None`` for a tensor.

    Raises:
        ValueError: if the record is not an object, or its ``"type"`` is not a string.
    """
    if type(record) is not dict:
        msg = f"{meta_path(folder)!r}: the record of {key!r} must be an object, got {record!r}"
        raise MemmapFormatError(msg)
    kind = record.get("type")
    if kind is not None and not isinstance(kind, str):
        msg = f"{meta_path(folder)!r}: the record of {key!r} has an invalid type {kind!r}"
        raise MemmapFormatError(msg)
    return kind


# (dtype name, is_nested, *shape) of a valid tensor record -> what parse_tensor_record returns
_PARSED: dict[tuple, tuple] = {}
_PARSED_MAX = 4096
_INT_ONLY = frozenset((int,))  # the exact type of every dimension (bool, a subclass, is refused)


def parse_tensor_record(folder: str, key: str, record: dict) -> tuple:
    """Returns ``(dtype, shape, is_nested)`` of a tensor record.

    For a nested tensor ``shape`` is the shape of its shape tensor, ``[components, dims]``.

    Raises:
        ValueError: for an unknown dtype, a shape that is not a list of non-negative
            ints, or a nested record whose shape is not two-dimensional.

    Examples:
        >>> parse_tensor_record("buffer", "obs", tensor_record(torch.zeros(3, 2)))
        (torch.float32, torch.Size([3, 2]), False)
    """
    # Runs once per entry on load: the checks are inline, messages are built on failure only.
    name = record.get("dtype")
    shape = record.get("shape")
    nested = record.get("is_nested", False)
    if (
        type(shape) is list
        and type(name) is str
        and _INT_ONLY.issuperset(map(type, shape))
        and (nested is False or nested is True)
    ):
        # The exact types are checked above, so equal keys are equal records: a folder of
        # many entries of a few kinds parses each kind once.
        seen = (name, nested, *shape)
        parsed = _PARSED.get(seen)
        if parsed is not None:
            return parsed
        dtype = DTYPES.get(name)
        if dtype is not None and (nested is False or len(shape) == 2):
            fits = not shape or (min(shape) >= 0 and max(shape) <= _MAX_SIZE)
            size = torch.Size(shape) if fits else None
            if size is not None and size.numel() * dtype.itemsize <= _MAX_SIZE:
                if len(_PARSED) >= _PARSED_MAX:
                    _PARSED.clear()
                parsed = _PARSED[seen] = (dtype, size, nested)
                return parsed
            msg = f"{meta_path(folder)!r}, entry {key!r}: shape {shape} of {name} needs more bytes than a file can hold"
            raise MemmapFormatError(msg)
    where = f"{meta_path(folder)!r}, entry {key!r}"
    dtype = parse_dtype(name, where)
    shape = parse_shape(shape, where)
    if type(nested) is not bool:
        msg = f"{where}: is_nested must be true or false, got {nested!r}"
        raise MemmapFormatError(msg)
    msg = f"{where}: the shape {list(shape)} of a nested tensor must be [components, dims]"
    raise MemmapFormatError(msg)


_ESCAPE = re.compile(r"%([0-9A-F]{2})")


def _is_encoded_stem(stem: str) -> bool:
    """True when ``stem`` is what :func:`encode_key` gives for some key."""
    if stem == "%":
        return True
    decoded = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), stem)
    return encode_key(decoded) == stem


def check_batch_prefix(folder: str, key: str, shape: ShapeType, batch_size: ShapeType) -> None:
    """Refuses an entry whose shape (a sub-level's batch size) does not start with the level's batch size.

    Raises:
        ValueError: naming the file, the key and both shapes.
    """
    n = len(batch_size)
    if tuple(shape[:n]) != tuple(batch_size):
        msg = (
            f"{meta_path(folder)!r}, entry {key!r}: its shape {list(shape)} does not start with "
            f"the batch size {list(batch_size)}"
        )
        raise MemmapFormatError(msg)


def entry_path(folder: str, key: str, suffix: str, robust_key: bool | None = True) -> str:
    """Returns the path of an entry's file (``suffix`` given) or folder, as a reader finds it.

    The name is the encoded key (see :func:`file_name`); when that name is absent
    and the unencoded key is a plain file name that is present, the unencoded name
    is used: older writers stored keys unencoded.

    Raises:
        ValueError: if the name would leave the folder (``robust_key=False`` and a key
            such as ``".."``), or the path is a symbolic link.

    Examples:
        >>> os.path.basename(entry_path("buffer", "a b", ".memmap"))
        'a%20b.memmap'
    """
    name = entry_name(
        folder, key, suffix, robust_key, lambda n: os.path.lexists(os.path.join(folder, n))
    )
    path = os.path.join(folder, name)
    if os.path.islink(path):
        msg = f"refusing to follow the symbolic link {path!r}"
        raise SymlinkError(msg)
    return path


def entry_name(
    folder: str,
    key: str,
    suffix: str,
    robust_key: bool | None,
    present: Callable[[str], bool],
) -> str:
    """The name under which a reader finds an entry, given ``present(name)``: is it there?

    The rule of :func:`entry_path`, for a folder on disk or a folder in an archive:
    the encoded name, or the unencoded one when only that one is present and it
    cannot be another key's encoded name.

    Raises:
        ValueError: if the key names no file (``robust_key=False`` and a key such as
            ``".."``), naming ``folder``.
    """
    try:
        name = file_name(key, suffix, robust_key)
    except ValueError as err:
        msg = f"{meta_path(folder)!r}: the entry {key!r} cannot be read: {err}"
        raise MemmapFormatError(msg) from err
    if robust_key is not False and not present(name):
        try:
            raw = file_name(key, suffix, False)
        except ValueError:
            raw = name
        stem = raw[: len(raw) - len(suffix)] if suffix else raw
        if raw != name and not _is_encoded_stem(stem) and present(raw):
            return raw
    return name


def _regular_file(path: str) -> bool:
    if os.path.islink(path):
        msg = f"refusing to follow the symbolic link {path!r}"
        raise SymlinkError(msg)
    return os.path.isfile(path)


def parse_nontensor(
    folder: str, meta: dict, present: Callable[[str], bool] = _regular_file
) -> tuple:
    """Returns ``("data", value)`` or ``("pickle", path)`` for a non-tensor level.

    ``present(path)`` tells whether a regular file is at ``path`` (by default, on
    disk, refusing a symbolic link; an archive passes its own).

    Raises:
        ValueError: if the level holds neither ``"data"`` nor a regular ``other.pickle``.
    """
    if "data" in meta:
        return "data", meta["data"]
    path = os.path.join(folder, PICKLE_FILE)
    if not present(path):
        msg = f"{meta_path(folder)!r}: a non-tensor entry holds neither 'data' nor {PICKLE_FILE}"
        raise MemmapFormatError(msg)
    return "pickle", path


def parse_nontensor_stack(
    folder: str, meta: dict, present: Callable[[str], bool] = _regular_file
) -> tuple:
    """Returns ``(values, None)`` or ``(None, pickle_path)`` for a NonTensorStack level.

    ``present`` is as for :func:`parse_nontensor`.

    Raises:
        ValueError: if ``"data"`` is missing, is neither a list nor the name of the
            pickle file, the pickle file is not a regular file, or ``"stack_dim"``
            is not an int.
    """
    stack_dim = meta.get("stack_dim", 0)
    if type(stack_dim) is not int:
        msg = f"{meta_path(folder)!r}: 'stack_dim' must be an int, got {stack_dim!r}"
        raise MemmapFormatError(msg)
    if "data" not in meta:
        msg = f"{meta_path(folder)!r}: a NonTensorStack level has no 'data'"
        raise MemmapFormatError(msg)
    data = meta["data"]
    if type(data) is list:
        return data, None
    if data != STACK_PICKLE_FILE:
        msg = (
            f"{meta_path(folder)!r}: a NonTensorStack's 'data' must be a list of values or "
            f"{STACK_PICKLE_FILE!r}, got {data!r}"
        )
        raise MemmapFormatError(msg)
    path = os.path.join(folder, STACK_PICKLE_FILE)
    if not present(path):
        msg = f"{meta_path(folder)!r}: the pickled values {path!r} are missing"
        raise MemmapFormatError(msg)
    return None, path
