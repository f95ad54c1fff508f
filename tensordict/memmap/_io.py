"""Writing, loading and refreshing memory-mapped TensorDict trees (format v1, see ``format``).

Every memory-mapped level carries a :class:`_Level`: its folder (or ``None`` for
a tensordict in anonymous shared memory), the parsed ``meta.json`` as last read
or written, the serialised member strings (so that adding an entry re-serialises
one record, not the whole file), and the ``stat`` of that ``meta.json`` (so that
a refresh skips every level whose file did not change).
"""

from __future__ import annotations

import os
import pickle
import shutil
import stat as _stat
from concurrent.futures import ThreadPoolExecutor

import torch

from tensordict._nontensor import NonTensorData
from tensordict.errors import MemmapFormatError, MemmapNotFoundError
from tensordict.memmap import format as fmt

_Tensor = torch.Tensor

# class string or type string -> loader(folder, meta, stat, options) for classes other
# than TensorDict (lazy stacks, tensorclasses); filled in by the modules that define them.
LOADERS: dict = {}


def _mmt():
    from tensordict.memmap.tensor import MemoryMappedTensor

    return MemoryMappedTensor


class _Level:
    """Memory-mapping state of one tensordict level."""

    __slots__ = ("path", "meta", "text", "stat", "robust_key", "taken", "inodes")

    def __init__(
        self, path: str | None, meta: dict | None = None, stat=None, robust_key=None
    ) -> None:
        self.path = path
        self.meta = {} if meta is None else meta
        self.text: str | None = None
        self.taken: dict | None = None  # file name -> key, built on the first added entry
        self.inodes: dict = {}  # key -> inode of the file mapped at load, to spot replaced files
        self.stat = stat
        self.robust_key = robust_key

    def __getstate__(self):
        return {"path": self.path, "meta": self.meta, "robust_key": self.robust_key}

    def __setstate__(self, state) -> None:
        self.path = state["path"]
        self.meta = state["meta"]
        self.text = None
        self.taken = None
        self.inodes = {}
        self.stat = None
        self.robust_key = state["robust_key"]

    def body(self) -> str:
        """The members of meta.json, serialised and joined (cached until a key is replaced)."""
        if self.text is None:
            self.text = ", ".join(fmt.dumps_record(k, v) for k, v in self.meta.items())
        return self.text

    def update(self, changes: dict) -> None:
        """Applies ``{key: record or None}`` to this level's meta.json under the folder lock.

        When another writer changed the file since we last read or wrote it, it is read
        again first, so that no writer loses another's records. A new key is appended
        to the cached serialised text, so adding an entry does not re-serialise the others.
        """
        with fmt.locked(self.path):
            path = fmt.meta_path(self.path)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if not fmt.same_file(current, self.stat):
                if current is not None:
                    self.meta, _ = fmt.read_meta(self.path)
                self.text = None
            for key, record in changes.items():
                if record is None or key in self.meta:
                    self.text = None
                if record is None:
                    self.meta.pop(key, None)
                    continue
                self.meta[key] = record
                if self.text is not None:
                    member = fmt.dumps_record(key, record)
                    self.text = f"{self.text}, {member}" if self.text else member
            self.stat = fmt.write_meta(self.path, [self.body()])


# ====================================================================== writing
class _Plan:
    """What writing one tree will do, checked in full before anything touches the disk."""

    def __init__(self) -> None:
        self.folders: list = []  # (folder, level_meta_fields, td, entries) children first
        self.tensors: list = []  # (path, tensor, shape_path)
        self.nontensors: list = []  # (folder, value)


def _entry_kind(value) -> str:
    if isinstance(value, _Tensor):
        return "nested" if value.is_nested else "tensor"
    return "folder"


def _plan_level(
    td, folder: str | None, plan: _Plan, robust_key, existsok: bool, like: bool
) -> None:
    from tensordict._td import TensorDict

    if type(td) is not TensorDict:
        hook = getattr(type(td), "_memmap_plan", None)
        if hook is None:
            msg = f"cannot memory-map a {type(td).__name__} at {folder!r}"
            raise TypeError(msg)
        hook(td, folder, plan, robust_key, existsok, like)
        return
    entries = {key: _entry_kind(value) for key, value in td._tensordict.items()}
    if folder is not None:
        fmt.check_level_keys(folder, entries, robust_key)
    for key, value in td._tensordict.items():
        if isinstance(value, _Tensor):
            if value.device.type == "meta":
                msg = (
                    f"cannot memory-map the entry {key!r}: it is on the meta device and has no data"
                )
                raise ValueError(msg)
            if folder is None:
                plan.tensors.append((None, value, None))
                continue
            path = os.path.join(folder, fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key))
            shape_path = None
            if value.is_nested:
                shape_path = os.path.join(folder, fmt.file_name(key, fmt.SHAPE_SUFFIX, robust_key))
            if not existsok and not _is_file_of(value, path) and os.path.lexists(path):
                msg = f"cannot memory-map the entry {key!r}: {path!r} already exists and existsok=False"
                raise FileExistsError(msg)
            plan.tensors.append((path, value, shape_path))
        elif isinstance(value, NonTensorData):
            if folder is not None:
                plan.nontensors.append(
                    (os.path.join(folder, fmt.file_name(key, "", robust_key)), value)
                )
        else:
            sub = (
                None if folder is None else os.path.join(folder, fmt.file_name(key, "", robust_key))
            )
            _plan_level(value, sub, plan, robust_key, existsok, like)
    plan.folders.append((folder, td))


def _is_file_of(value, path: str) -> bool:
    filename = getattr(value, "_filename", None)
    if filename is None:
        return False
    try:
        return os.path.samefile(filename, path)
    except OSError:
        return False


def _remove_stale(folder: str, keep: set, robust_key) -> None:
    """Removes what an earlier tensordict's meta.json in ``folder`` references and ``keep`` does not.

    Only names listed by the old ``meta.json`` (and lazy-stack member folders) are
    touched, so a folder that also holds unrelated files keeps them.
    """
    try:
        old, _ = fmt.read_meta(folder)
    except (OSError, ValueError):
        return
    names = set()
    for key, record in old.items():
        if key in fmt.LEVEL_FIELDS or not isinstance(record, dict):
            continue
        if "type" in record:
            names.add(fmt.file_name(key, "", robust_key))
        else:
            names.add(fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key))
            names.add(fmt.file_name(key, fmt.SHAPE_SUFFIX, robust_key))
    if old.get("_class") == fmt.LAZY_CLASS or old.get("_type") == fmt.LAZY_TYPE:
        names.update(n for n in os.listdir(folder) if n.isdigit())
    elif "_type" in old and "_class" not in old:
        names.add(fmt.TENSORCLASS_DATA)  # an earlier tensorclass
    for name in names - keep:
        path = os.path.join(folder, name)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)


def _write_tensor(path: str | None, tensor: torch.Tensor, shape_path: str | None, like: bool):
    MemoryMappedTensor = _mmt()
    if path is None:
        if like:
            return (
                MemoryMappedTensor.zeros_like(tensor)
                if not tensor.is_nested
                else MemoryMappedTensor.from_tensor(tensor.clone().zero_())
            )
        if isinstance(tensor, MemoryMappedTensor) and tensor._filename is None:
            return tensor
        return MemoryMappedTensor.from_tensor(tensor.detach())
    if not like and _is_file_of(tensor, path):
        return tensor
    if not tensor.is_nested and tensor.numel() == 0:
        if os.path.lexists(path):
            os.unlink(path)
        return MemoryMappedTensor.empty(
            tensor.shape, dtype=tensor.dtype
        )  # no file: nothing to store
    if os.path.lexists(path):
        os.unlink(path)  # fresh storage: never hand back an earlier tensordict's bytes
    if shape_path is not None:
        if os.path.lexists(shape_path):
            os.unlink(shape_path)
        sizes = tensor._nested_tensor_size() if hasattr(tensor, "_nested_tensor_size") else None
        MemoryMappedTensor.from_tensor(sizes.to(torch.int64), filename=shape_path)
    if like:
        if tensor.is_nested:
            return MemoryMappedTensor.from_tensor(
                tensor.detach().clone().zero_(), filename=path, copy_existing=True
            )
        return MemoryMappedTensor.zeros(tensor.shape, dtype=tensor.dtype, filename=path)
    return MemoryMappedTensor.from_tensor(tensor.detach(), filename=path, copy_existing=True)


def _write_nontensor(folder: str, value: NonTensorData) -> None:
    os.makedirs(folder, exist_ok=True)
    data = value.data
    pickled = not fmt.json_compatible(data)
    pickle_path = os.path.join(folder, fmt.PICKLE_FILE)
    if pickled:
        with open(pickle_path, "wb") as handle:
            pickle.dump(data, handle)
    elif os.path.lexists(pickle_path):
        os.unlink(pickle_path)
    fmt.write_meta_dict(folder, fmt.nontensor_meta(data, pickled))


def write_tree(
    td, prefix, *, like: bool, inplace: bool, num_threads: int, existsok: bool, robust_key
):
    """Memory-maps ``td`` into ``prefix`` (or anonymous shared memory) and returns the result.

    Everything is checked first; tensors are written next (in ``num_threads``
    threads), then each level's ``meta.json``, children before parents, each
    atomically. ``inplace`` swaps the leaves of ``td`` itself; otherwise a new tree
    is returned. The result is locked.
    """
    folder = None if prefix is None else os.path.abspath(os.fspath(prefix))
    plan = _Plan()
    _plan_level(td, folder, plan, robust_key, existsok, like)
    if folder is not None:
        for level_folder, _ in plan.folders:
            os.makedirs(level_folder, exist_ok=True)
        for level_folder, level_td in plan.folders:
            _remove_stale(level_folder, _kept_names(level_td, robust_key), robust_key)
    jobs = [(path, tensor, shape_path) for path, tensor, shape_path in plan.tensors]
    if num_threads and num_threads > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(num_threads) as pool:
            written = list(pool.map(lambda job: _write_tensor(*job, like), jobs))
    else:
        written = [_write_tensor(*job, like) for job in jobs]
    replacement = {id(tensor): new for (_, tensor, _), new in zip(jobs, written)}
    for nt_folder, value in plan.nontensors:
        _write_nontensor(nt_folder, value)
    out = _rebuild(td, folder, replacement, inplace, robust_key)
    if folder is not None:
        _write_levels(out, folder, robust_key)
    out.lock_()
    return out


def _kept_names(td, robust_key) -> set:
    from tensordict._td import TensorDict

    if type(td) is not TensorDict:
        return set(getattr(type(td), "_memmap_names", lambda t: set())(td))
    names = set()
    for key, value in td._tensordict.items():
        names.update(fmt.entry_names(key, _entry_kind(value), robust_key))
    return names


def _rebuild(td, folder, replacement: dict, inplace: bool, robust_key):
    from tensordict._td import TensorDict

    if type(td) is not TensorDict:
        return type(td)._memmap_rebuild(td, folder, replacement, inplace, robust_key)
    data = td._tensordict if inplace else {}
    for key, value in td._tensordict.items():
        if isinstance(value, _Tensor):
            data[key] = replacement[id(value)]
        elif isinstance(value, NonTensorData):
            data[key] = value
        else:
            sub = (
                None if folder is None else os.path.join(folder, fmt.file_name(key, "", robust_key))
            )
            data[key] = _rebuild(value, sub, replacement, inplace, robust_key)
    out = td if inplace else TensorDict._new_unsafe(data, td.batch_size, td.device, td._names)
    out._mm = _Level(folder, robust_key=robust_key)
    return out


def _write_levels(td, folder: str, robust_key) -> None:
    """Writes the meta.json of every level of a rebuilt tree, children first."""
    from tensordict._td import TensorDict

    if type(td) is not TensorDict:
        type(td)._memmap_write_meta(td, folder, robust_key)
        return
    meta = {}
    for key, value in td._tensordict.items():
        if isinstance(value, _Tensor):
            meta[key] = fmt.tensor_record(value)
        else:
            meta[key] = {"type": _type_name(value)}
            if not isinstance(value, NonTensorData):
                _write_levels(
                    value, os.path.join(folder, fmt.file_name(key, "", robust_key)), robust_key
                )
    meta.update(fmt.level_meta(td.batch_size, td.device))
    level = td._mm
    level.meta = meta
    level.text = None
    level.stat = fmt.write_meta(folder, [level.body()])


def _type_name(value) -> str:
    if isinstance(value, NonTensorData):
        return "NonTensorData"
    return type(value).__name__


# ====================================================================== loading
class _Options:
    __slots__ = ("robust_key", "allow_pickle", "device")

    def __init__(self, robust_key, allow_pickle: bool, device) -> None:
        self.robust_key = robust_key
        self.allow_pickle = allow_pickle
        self.device = device


def load_tree(prefix, *, robust_key=None, allow_pickle: bool = False, device=None):
    """Opens the memory-mapped folder ``prefix`` without copying and returns its tensordict."""
    folder = os.path.abspath(os.fspath(prefix))
    if os.path.islink(folder):
        msg = f"refusing to load {folder!r}: it is a symbolic link"
        raise MemmapFormatError(msg)
    meta, stat = fmt.read_meta(folder)
    return load_folder(folder, meta, stat, _Options(robust_key, allow_pickle, device))


def load_folder(folder: str, meta: dict, stat, options: _Options):
    """Loads one folder whose ``meta.json`` is already parsed, dispatching on its class."""
    cls = meta.get("_class")
    type_str = meta.get("_type")
    if meta.get("_is_non_tensor"):
        return _load_nontensor(folder, meta, options)
    if cls == fmt.TD_CLASS or (cls is None and type_str == fmt.TD_TYPE):
        return _load_td(folder, meta, stat, options)
    loader = LOADERS.get(cls) or LOADERS.get(type_str)
    if loader is None:
        if isinstance(type_str, str) and type_str.startswith("<class '"):
            msg = (
                f"cannot load {folder!r}: its class {type_str[8:-2]!r} is not registered. Import the "
                "module that defines it first (loading never imports code), or call "
                "YourClass.load_memmap(path)"
            )
        else:
            msg = f"cannot load {folder!r}: meta.json names no known class (_type={type_str!r}, _class={cls!r})"
        raise MemmapFormatError(msg)
    return loader(folder, meta, stat, options)


def _check_version(folder: str, meta: dict) -> None:
    version = meta.get("_format_version", fmt.FORMAT_VERSION)
    if version != fmt.FORMAT_VERSION:
        msg = f"{fmt.meta_path(folder)!r}: unsupported _format_version {version!r} (this library reads {fmt.FORMAT_VERSION})"
        raise MemmapFormatError(msg)


def _load_td(folder: str, meta: dict, stat, options: _Options, into=None):
    from tensordict._td import TensorDict

    _check_version(folder, meta)
    where = fmt.meta_path(folder)
    batch_size = fmt.parse_shape(meta.get("shape"), f"{where!r} field 'shape'")
    device = options.device
    if device is None:
        device_str = meta.get("device")
        device = None if device_str in (None, "None") else torch.device(device_str)
    data = {}
    existing = None if into is None else into._tensordict
    from tensordict.memmap.tensor import _open_file

    prefix = folder + os.sep
    robust_key = options.robust_key
    lstat, from_file, S_ISREG, mmt_cls = os.lstat, torch.from_file, _stat.S_ISREG, _mmt()
    inodes: dict = {}
    dtypes = fmt.DTYPES
    fields = fmt.LEVEL_FIELDS
    for key, record in meta.items():
        if key in fields:
            continue
        # The common case, a plain tensor, inline: this loop runs once per entry on load.
        if (
            type(record) is dict
            and "type" not in record
            and record.get("is_nested") is False
            and robust_key is not False
        ):
            dtype = dtypes.get(record.get("dtype"))
            shape = record.get("shape")
            if (
                dtype is not None
                and type(shape) is list
                and all(type(s) is int for s in shape)
                and (not shape or min(shape) >= 0)
            ):
                try:
                    shape = torch.Size(shape)
                except TypeError:
                    shape = None
                if shape is not None:
                    path = prefix + fmt.file_name(key, fmt.MEMMAP_SUFFIX, robust_key)
                    try:
                        info = lstat(path)
                    except FileNotFoundError:
                        value = _load_tensor(
                            folder, key, record, options
                        )  # legacy names, no elements
                        if value is not None:
                            data[key] = value
                        continue
                    numel = shape.numel()
                    if (
                        info.st_size != numel * dtype.itemsize
                        or not S_ISREG(info.st_mode)
                        or numel == 0
                    ):
                        data[key] = _open_file(path, dtype, shape)  # it raises the precise error
                        continue
                    try:
                        flat = from_file(path, True, numel, dtype=dtype)
                    except RuntimeError:  # a read-only file: _open_file maps it copy-on-write
                        data[key] = _open_file(path, dtype, shape)
                        continue
                    if len(shape) != 1:
                        flat = flat.view(*shape) if shape else flat.view(shape)
                    tensor = flat.as_subclass(mmt_cls)
                    tensor._filename = path
                    data[key] = tensor
                    inodes[key] = info.st_ino
                    continue
        previous = None if existing is None else existing.get(key)
        value = _load_entry(folder, key, record, options, previous)
        if value is not None:
            data[key] = value
    if into is not None:
        into._tensordict.clear()
        into._tensordict.update(data)
        into._batch_size = batch_size
        td = into
    else:
        td = TensorDict._new_unsafe(data, batch_size, device, None)
    td._mm = _Level(folder, meta, stat, options.robust_key)
    td._mm.inodes = inodes
    return td


def _entry_file_name(folder: str, key: str, suffix: str, robust_key) -> str:
    """The file name of an entry read from meta.json; a name that would leave the folder is refused."""
    try:
        return fmt.file_name(key, suffix, robust_key)
    except ValueError as err:
        msg = (
            f"{fmt.meta_path(folder)!r}: the entry {key!r} cannot be loaded with robust_key=False: "
            "its name would leave the folder (or is not a file name)"
        )
        raise MemmapFormatError(msg) from err


def _existing_name(folder: str, key: str, suffix: str, robust_key) -> str:
    """The entry's name; when the encoded name is absent, a legacy unencoded name that is on disk.

    Older writers stored keys unencoded. A raw name is used only when it is a plain
    file name (no ``/``, not ``.`` or ``..``), so it cannot leave the folder.
    """
    name = _entry_file_name(folder, key, suffix, robust_key)
    if robust_key is False or os.path.lexists(os.path.join(folder, name)):
        return name
    try:
        raw = fmt.file_name(key, suffix, False)
    except ValueError:
        return name
    return raw if raw != name and os.path.lexists(os.path.join(folder, raw)) else name


def _load_entry(folder: str, key: str, record, options: _Options, previous=None):
    """Loads one entry; None when its file is missing (the entry is dropped)."""
    if not isinstance(record, dict):
        msg = f"{fmt.meta_path(folder)!r}: the record of {key!r} must be an object, got {record!r}"
        raise MemmapFormatError(msg)
    kind = record.get("type")
    if kind is not None:
        path = fmt.child_path(folder, _existing_name(folder, key, "", options.robust_key))
        try:
            sub_meta, sub_stat = fmt.read_meta(path)
        except MemmapNotFoundError:
            return None
        if previous is not None and getattr(previous, "_mm", None) is not None:
            if type(previous).__name__ == "TensorDict" and sub_meta.get("_class") == fmt.TD_CLASS:
                _refresh_td(previous, sub_meta, sub_stat, options)
                return previous
            if hasattr(previous, "_memmap_refresh") and str(type(previous)) == sub_meta.get(
                "_type"
            ):
                previous._memmap_refresh()  # lazy stacks and tensorclasses keep their identity
                return previous
        return load_folder(path, sub_meta, sub_stat, options)
    return _load_tensor(folder, key, record, options)


def _load_tensor(folder: str, key: str, record: dict, options: _Options):
    where = f"{fmt.meta_path(folder)!r}, entry {key!r}"
    dtype = fmt.parse_dtype(record.get("dtype"), where)
    shape = fmt.parse_shape(record.get("shape"), where)
    name = _existing_name(folder, key, fmt.MEMMAP_SUFFIX, options.robust_key)
    path = fmt.child_path(folder, name) if options.robust_key is False else folder + os.sep + name
    from tensordict.memmap.tensor import _open_file

    if record.get("is_nested"):
        shape_path = os.path.join(
            folder, _existing_name(folder, key, fmt.SHAPE_SUFFIX, options.robust_key)
        )
        if not os.path.lexists(path):
            return None
        try:
            sizes = _open_file(shape_path, torch.int64, shape).clone()
        except FileNotFoundError as err:
            msg = f"{where}: the nested tensor's shape file {shape_path!r} is missing"
            raise MemmapFormatError(msg) from err
        return _open_file(path, dtype, sizes)
    try:
        return _open_file(path, dtype, shape)
    except FileNotFoundError:
        if fmt.nbytes(shape, dtype) == 0:
            # The format writes no file for a tensor without elements.
            return _mmt().empty(shape, dtype=dtype)
        return None


def _check_size(path: str, actual: int, expected: int) -> None:
    if actual != expected:
        msg = (
            f"{path!r} has {actual} bytes but its record needs {expected}; the file is damaged "
            "(truncated or overwritten) and was left untouched"
        )
        raise MemmapFormatError(msg)


def _load_nontensor(folder: str, meta: dict, options: _Options) -> NonTensorData:
    if "data" in meta:
        return NonTensorData(meta["data"], metadata=meta.get("_metadata"))
    pickle_path = os.path.join(folder, fmt.PICKLE_FILE)
    if not os.path.isfile(pickle_path):
        msg = f"{fmt.meta_path(folder)!r}: a non-tensor entry holds neither 'data' nor {fmt.PICKLE_FILE}"
        raise MemmapFormatError(msg)
    if not options.allow_pickle:
        msg = (
            f"{pickle_path!r} holds a pickled value; loading never unpickles unless asked: pass "
            "allow_pickle=True if you trust this folder"
        )
        raise MemmapFormatError(msg)
    with open(pickle_path, "rb") as handle:
        return NonTensorData(pickle.load(handle))  # noqa: S301 - the caller allowed it


def fix_batch_sizes(td) -> None:
    """Gives non-tensor entries the batch size of the level that holds them, after loading."""
    data = getattr(td, "_tensordict", None)
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if isinstance(value, NonTensorData):
            if value.batch_size != td.batch_size:
                data[key] = value._with(td.batch_size)
        elif not isinstance(value, _Tensor):
            fix_batch_sizes(value)


# ====================================================================== refreshing
def refresh(td, options: _Options | None = None) -> None:
    """Re-reads the folder of a memory-mapped tensordict in place (never writes).

    A level whose ``meta.json`` did not change is not parsed again; entries that
    ``meta.json`` does not record (storages without a file) are dropped; the
    identity of the tensordict and of its sub-tensordicts is kept.
    """
    level = td._mm
    if level is None or level.path is None:
        return
    if options is None:
        options = _Options(level.robust_key, False, td.device)
    try:
        current = os.stat(fmt.meta_path(level.path))
    except FileNotFoundError as err:
        msg = f"cannot refresh: {fmt.meta_path(level.path)!r} is gone"
        raise MemmapNotFoundError(msg) from err
    if fmt.same_file(current, level.stat):
        data = td._tensordict
        meta = level.meta
        for key in [k for k in data if k not in meta]:
            del data[key]
        for value in data.values():
            if getattr(value, "_mm", None) is not None:
                if type(value).__name__ == "TensorDict":
                    refresh(value, options)
                elif hasattr(type(value), "_memmap_refresh"):
                    value._memmap_refresh()
        return
    meta, stat = fmt.read_meta(level.path)
    _refresh_td(td, meta, stat, options)


def _refresh_td(td, meta: dict, stat, options: _Options) -> None:
    level = td._mm
    if level is not None and fmt.same_file(stat, level.stat):
        refresh(td, options)
        return
    old_meta = {} if level is None else level.meta
    where = f"{fmt.meta_path(level.path)!r} field 'shape'"
    td._batch_size = fmt.parse_shape(meta.get("shape", list(td.batch_size)), where)
    data = td._tensordict
    fresh = {}
    inodes: dict = {}
    for key, record in meta.items():
        if key in fmt.LEVEL_FIELDS:
            continue
        previous = data.get(key)
        if (
            previous is not None
            and isinstance(previous, _Tensor)
            and old_meta.get(key) == record
            and _still_same_file(previous, None if level is None else level.inodes.get(key))
        ):
            fresh[key] = previous
            inodes[key] = level.inodes[key]
            continue
        value = _load_entry(level.path, key, record, options, previous)
        if value is not None:
            fresh[key] = value
    data.clear()
    data.update(fresh)
    fix_batch_sizes(td)
    td._mm = _Level(level.path, meta, stat, level.robust_key)
    td._mm.inodes = inodes
    for key, value in fresh.items():
        filename = getattr(value, "_filename", None)
        if key not in inodes and filename is not None:
            try:
                inodes[key] = os.stat(filename).st_ino
            except OSError:
                pass


def _still_same_file(tensor, inode) -> bool:
    """True when ``tensor`` maps the file that is at its path now (not a replaced one)."""
    filename = getattr(tensor, "_filename", None)
    if filename is None or inode is None:
        return False
    try:
        return os.stat(filename).st_ino == inode
    except OSError:
        return False
