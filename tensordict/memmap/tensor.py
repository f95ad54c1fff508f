"""``MemoryMappedTensor``: a tensor whose data lives in a file or in shared memory.

Where the bytes live
    With a file, the data *is* the file: raw, C-contiguous, native byte order, no
    header, mapped shared by ``torch.from_file(..., shared=True)``, so every process
    mapping it sees writes at once. Without a file, it is in torch's shared memory
    (``UntypedStorage._new_shared``), which ``torch.multiprocessing`` sends to other
    processes, spawned ones too, as a descriptor (one kept open per tensor), no copy.

Creating files
    Files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: an existing path needs
    ``existsok=True``, and nothing is written through a symbolic link. ``existsok=True``
    writes a new file in the same folder and renames it over the old one, so tensors
    that map the old file keep its bytes and never see it shrink (a ``SIGBUS``). A
    contiguous CPU source is written with ``write(2)``; any other is copied into the
    mapped file. A file made without data is sparse and reads as zeros.

Read-only files
    A file this process may not write is mapped copy-on-write (``MAP_PRIVATE``): writes
    stay in this process, where a shared mapping would turn the first one into a
    ``SIGSEGV``. ``mode="r"`` asks for copy-on-write, ``mode="r+"`` for a shared mapping.

Nested tensors
    A 2-D integer tensor as a shape (a row of sizes per component) makes a nested tensor
    over one buffer of the components back to back (``torch._nested_view_from_buffer``).

Pickling
    With a file, as its name and layout (unpickling maps the file again); without, as
    its storage, which ``torch.multiprocessing`` shares and plain ``pickle`` copies.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import secrets
import stat
from collections.abc import Sequence
from typing import Any, Union

import torch

from tensordict.errors import (
    ExistingFileError,
    MemmapFormatError,
    MemmapNotFoundError,
    SymlinkError,
)

__all__ = ["MemoryMappedTensor"]

ShapeLike = Union[torch.Size, Sequence[int], int, torch.Tensor]

_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_WRITE_CHUNK = 1 << 30  # write(2) moves at most ~2 GiB per call on Linux
_MODES = (None, "r", "r+")
_NO_DATA = frozenset(
    getattr(torch, name)
    for name in ("qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16")
    if hasattr(torch, name)
)
_DisableSubclass = torch._C.DisableTorchFunctionSubclass
_GETITEM, _SETITEM = torch.Tensor.__getitem__, torch.Tensor.__setitem__


# Torch methods that change a tensor's shape, strides or storage in place.
_RESHAPE_INPLACE = frozenset(
    getattr(torch.Tensor, name)
    for name in (
        "set_ resize_ resize_as_ as_strided_ unsqueeze_ squeeze_ t_ transpose_ "
        "swapdims_ swapaxes_ share_memory_"
    ).split()
    if hasattr(torch.Tensor, name)
)


def rows_alias(tensor: MemoryMappedTensor) -> torch.Tensor:
    """A plain tensor over the memory of ``tensor``, with its shape and strides (kept on it).

    Writes through it are writes into ``tensor``'s mapping, without the subclass
    dispatch: the replay-buffer hot path of ``td[rows] = batch``.
    """
    alias = tensor._plain
    if alias is None:
        with _DisableSubclass():
            alias = tensor.as_subclass(torch.Tensor)
        tensor._plain = alias
    return alias


def rows_fit(tensor: MemoryMappedTensor, given: torch.Size, bd: int) -> tuple:
    """``(given, bd, alias, shape)``: :func:`rows_alias` of ``tensor``, and the whole shape
    of a value of batch size ``given`` whose feature shape is the tensor's beyond its
    ``bd`` batch dims (kept on the tensor for the next write of such a batch).

    A value of exactly that shape fits the rows without the cost of slicing shapes; any
    other shape is checked the slow way (it may still broadcast).
    """
    alias = rows_alias(tensor)
    fit = (given, bd, alias, given + alias.shape[bd:])
    tensor._rows_fit = fit
    return fit


def _view_functions() -> frozenset:
    """The torch functions whose result may be a view of their first argument."""
    names = (
        "__getitem__ view view_as reshape reshape_as flatten unflatten ravel squeeze "
        "unsqueeze permute transpose swapaxes swapdims t adjoint narrow select expand "
        "expand_as as_strided unbind split split_with_sizes chunk tensor_split hsplit "
        "vsplit dsplit unfold diagonal movedim moveaxis detach contiguous conj"
    ).split()
    funcs = {
        getattr(owner, n) for n in names for owner in (torch.Tensor, torch) if hasattr(owner, n)
    }
    for prop in ("T", "mT", "H", "mH", "real", "imag"):
        funcs.add(getattr(torch.Tensor, prop).__get__)
    funcs.update((torch.view_as_real, torch.view_as_complex, torch.real, torch.imag))
    return frozenset(funcs)


_VIEW_FUNCS = _view_functions()


# ---------------------------------------------------------------------------- checks
def _as_path(filename: Any) -> str:
    """Returns ``filename`` as an absolute path string."""
    path = os.fspath(filename) if isinstance(filename, (str, os.PathLike)) else None
    if not isinstance(path, str) or not path:
        msg = f"filename must be a non-empty str or os.PathLike of str, got {filename!r}"
        raise TypeError(msg)
    return os.path.abspath(path)


def _check_dtype(dtype: Any) -> torch.dtype:
    """Returns ``dtype`` if it can be memory-mapped, else raises."""
    if not isinstance(dtype, torch.dtype):
        msg = f"dtype must be a torch.dtype, got {dtype!r}"
        raise TypeError(msg)
    if dtype in _NO_DATA:
        msg = f"dtype {dtype} cannot be memory-mapped: it has no plain element layout"
        raise ValueError(msg)
    return dtype


def _check_device(device: Any) -> None:
    """Refuses any ``device`` but ``None`` and the CPU."""
    if device is not None and torch.device(device).type != "cpu":
        msg = f"a MemoryMappedTensor lives in CPU memory; got device={device!r} (use None or 'cpu')"
        raise RuntimeError(msg)


def _parse_shape(shape: Any) -> torch.Size | torch.Tensor:
    """Returns a ``torch.Size``, or for a nested shape a 2-D int64 CPU tensor of sizes."""
    if isinstance(shape, torch.Tensor):
        if shape.dtype.is_floating_point or shape.dtype.is_complex or shape.dtype == torch.bool:
            msg = f"shape must hold integers, got a tensor of {shape.dtype}"
            raise TypeError(msg)
        if shape.ndim > 2 or (shape.ndim == 2 and shape.shape[0] == 0):
            msg = f"a shape tensor must be 1-D, or 2-D with a row per component; got {tuple(shape.shape)}"
            raise ValueError(msg)
        if shape.ndim == 2:
            sizes = shape.to(device="cpu", dtype=torch.int64, copy=True).contiguous()
            if bool((sizes < 0).any()):
                msg = f"shape must not hold negative sizes, got {sizes.tolist()}"
                raise ValueError(msg)
            return sizes
        shape = shape.reshape(-1).tolist()
    elif isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        if any(isinstance(s, bool) for s in shape):
            raise TypeError
        size = torch.Size(shape)
    except TypeError as err:
        msg = f"shape must be a sequence of ints, a torch.Size or a tensor, got {shape!r}"
        raise TypeError(msg) from err
    if size and min(size) < 0:
        msg = f"shape must not hold negative sizes, got {tuple(size)}"
        raise ValueError(msg)
    return size


def _numel(shape: torch.Size | torch.Tensor) -> int:
    """Returns the number of elements of a parsed shape (all components if nested)."""
    if isinstance(shape, torch.Tensor):
        return int(shape.prod(-1).sum())
    return math.prod(shape)


def _nbytes(shape: ShapeLike, dtype: torch.dtype) -> int:
    """Returns the bytes a tensor of ``shape`` (a 2-D tensor: nested) and ``dtype`` needs.

    Examples:
        >>> _nbytes(torch.tensor([[2, 3], [1, 3]]), torch.int16)
        18
    """
    return _numel(_parse_shape(shape)) * _check_dtype(dtype).itemsize


def mapped_path(address: int) -> str | None:
    """The file mapped at ``address`` in this process, as the kernel names it now, or None.

    A file renamed after it was mapped (a folder written in a staging folder and then
    put in place) is found at its new path; a deleted one ends with ``" (deleted)"``.
    Reads ``/proc/self/maps``: None where there is none, or for anonymous memory.
    """
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                low, _, high = fields[0].partition("-")
                if int(low, 16) <= address < int(high, 16):
                    path = fields[5].rstrip("\n") if len(fields) == 6 else ""
                    return path if path.startswith("/") else None
    except OSError:
        return None
    return None


def _storage_filename(storage: torch.UntypedStorage | torch.TypedStorage) -> str | None:
    """Returns the absolute path of the file ``storage`` maps, or ``None``.

    Torch records the file of a storage mapped shared (``torch.from_file`` or
    ``torch.UntypedStorage.from_file`` with ``shared=True``); memory, shared memory and
    copy-on-write mappings have none.

    Raises:
        TypeError: if ``storage`` is not a torch storage.
    """
    if isinstance(storage, torch.TypedStorage):
        storage = storage.untyped()
    if not isinstance(storage, torch.UntypedStorage):
        msg = f"storage must be a torch.UntypedStorage, got {type(storage).__name__}"
        raise TypeError(msg)
    name = storage.filename
    return None if name is None else os.path.abspath(name)


# ---------------------------------------------------------------------------- files
def _check_existing_file(filename: str, nbytes: int | None) -> os.stat_result:
    """Checks with one ``lstat`` that ``filename`` is a regular file of ``nbytes`` bytes."""
    try:
        st = os.lstat(filename)
    except FileNotFoundError as err:
        msg = f"the memory-mapped file {filename!r} does not exist"
        raise MemmapNotFoundError(msg) from err
    if not stat.S_ISREG(st.st_mode):
        if stat.S_ISLNK(st.st_mode):
            msg = f"refusing to map {filename!r}: it is a symbolic link"
            raise SymlinkError(msg)
        msg = f"refusing to map {filename!r}: it is not a regular file"
        raise MemmapFormatError(msg)
    if nbytes is not None and st.st_size != nbytes:
        msg = f"the file {filename!r} holds {st.st_size} bytes; the dtype and shape need {nbytes}"
        raise MemmapFormatError(msg)
    return st


def _create_file(filename: str, existsok: bool) -> tuple[int, str | None]:
    """Creates ``filename`` exclusively and returns its descriptor and ``None``; with
    ``existsok``, creates a temporary file beside an existing one and returns its name,
    for the caller to rename over ``filename`` once written."""
    try:
        return os.open(filename, _CREATE_FLAGS, 0o666), None
    except FileNotFoundError as err:
        msg = f"cannot create {filename!r}: the folder {os.path.dirname(filename)!r} does not exist"
        raise MemmapNotFoundError(msg) from err
    except FileExistsError as err:
        st = os.lstat(filename)
        if stat.S_ISLNK(st.st_mode):
            msg = f"refusing to write a memory-mapped tensor through the symbolic link {filename!r}"
            raise SymlinkError(msg) from err
        if stat.S_ISDIR(st.st_mode):
            msg = f"cannot write a memory-mapped tensor to {filename!r}: it is a folder"
            raise IsADirectoryError(msg) from err
        if not existsok:
            msg = f"the file {filename!r} already exists; pass existsok=True to replace it"
            raise ExistingFileError(msg) from err
        if not stat.S_ISREG(st.st_mode):
            msg = f"cannot replace {filename!r}: it is not a regular file"
            raise ValueError(msg) from err
        if not os.access(filename, os.W_OK):
            msg = f"cannot replace {filename!r}: it is read-only"
            raise PermissionError(msg) from err
    folder, base = os.path.split(filename)
    tmp = os.path.join(folder, f".{base[:32]}.{secrets.token_hex(6)}.tmp")
    return os.open(tmp, _CREATE_FLAGS, 0o666), tmp


def _write_all(fd: int, tensor: torch.Tensor) -> None:
    """Writes the bytes of a contiguous CPU tensor to ``fd`` with ``write(2)``."""
    if tensor.numel() == 0:
        return
    with _DisableSubclass():
        raw = tensor.resolve_conj().resolve_neg().reshape(-1).view(torch.uint8)
    view = memoryview(raw.numpy())
    done = 0
    while done < len(view):
        done += os.write(fd, view[done : done + _WRITE_CHUNK])


def _new_flat(
    numel: int,
    dtype: torch.dtype,
    filename: str | None,
    existsok: bool,
    chunks: Sequence[torch.Tensor] = (),
) -> torch.Tensor:
    """Returns a new 1-D tensor of ``numel`` elements in a file or in shared memory.

    ``chunks`` are CPU contiguous tensors of ``dtype`` whose bytes, back to back, fill
    the start of the buffer; the rest reads as zeros.
    """
    nbytes = numel * dtype.itemsize
    if filename is None:
        storage = torch.UntypedStorage._new_shared(nbytes)
        flat = torch.empty(0, dtype=dtype).set_(storage)
        offset = 0
        for chunk in chunks:
            flat.narrow(0, offset, chunk.numel()).copy_(chunk.reshape(-1))
            offset += chunk.numel()
        return flat
    fd, tmp = _create_file(filename, existsok)
    try:
        try:
            for chunk in chunks:
                _write_all(fd, chunk)
            if not chunks:
                _reserve(fd, nbytes)
        finally:
            os.close(fd)
        if tmp is not None:
            os.replace(tmp, filename)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp if tmp is not None else filename)
        if isinstance(err, OSError) and err.errno in _NO_SPACE:
            msg = f"no space left to create {filename!r} ({nbytes} bytes); nothing was kept"
            raise OSError(err.errno, msg, filename) from err
        raise
    return torch.from_file(filename, True, numel, dtype=dtype)


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _reserve(fd: int, nbytes: int) -> None:
    """Sizes a new file to ``nbytes`` with its space reserved now, so that a full disk
    fails here (``ENOSPC``) and never as a ``SIGBUS`` at a later write into the mapping.

    A file system that cannot reserve space (``EOPNOTSUPP``, ``EINVAL``) gets a sparse file.
    """
    if nbytes == 0:
        return
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as err:
        if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        os.ftruncate(fd, nbytes)


def _map_file(
    filename: str, numel: int, dtype: torch.dtype, mode: str | None
) -> tuple[torch.Tensor, bool]:
    """Maps ``numel`` elements of ``filename``; returns the 1-D tensor and whether it is copy-on-write."""
    if mode != "r":
        try:
            return torch.from_file(filename, True, numel, dtype=dtype), False
        except RuntimeError as err:
            if os.access(filename, os.W_OK):
                raise
            if mode == "r+":
                msg = f"cannot map {filename!r} with mode='r+': it is read-only (use mode='r')"
                raise PermissionError(msg) from err
    return torch.from_file(filename, False, numel, dtype=dtype), True


def _nested_view(buffer: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Returns a nested tensor over a 1-D buffer holding C-contiguous components back to back."""
    strides = torch.ones_like(sizes)
    if sizes.shape[1] > 1:
        strides[:, :-1] = sizes[:, 1:].flip(-1).cumprod(-1).flip(-1)
    numels = sizes.prod(-1)
    offsets = numels.cumsum(0) - numels
    return torch._nested_view_from_buffer(buffer, sizes, strides, offsets)


def _shape_of(flat: torch.Tensor, shape: torch.Size | torch.Tensor) -> torch.Tensor:
    """Gives the 1-D ``flat`` the parsed ``shape`` (a nested view for a 2-D tensor of shapes)."""
    if isinstance(shape, torch.Tensor):
        return _nested_view(flat, shape)
    if len(shape) == 1:
        return flat
    return flat.view(*shape) if shape else flat.view(shape)


def _wrap(cls: type, tensor: torch.Tensor, filename: str | None, cow: bool = False) -> Any:
    """Returns ``tensor`` as an instance of ``cls`` that records its file."""
    out = tensor.as_subclass(cls)
    out._filename = filename
    if cow:
        out._cow = True
    return out


def _open_file(
    filename: str, dtype: torch.dtype, shape: torch.Size | torch.Tensor, mode: str | None = None
) -> MemoryMappedTensor:
    """Maps an existing file: ``from_filename`` for an absolute ``str`` path, a
    ``torch.dtype`` and a parsed shape (``torch.Size`` or 2-D int64 tensor), with the
    same checks and errors.
    """
    # Called once per entry when a folder is loaded, hence inlined: one lstat, one map.
    nested = type(shape) is not torch.Size
    nbytes = (_numel(shape) if nested else math.prod(shape)) * dtype.itemsize
    try:
        st = os.lstat(filename)
        valid = stat.S_ISREG(st.st_mode) and st.st_size == nbytes
    except OSError:
        valid = False
    if not valid:
        _check_existing_file(filename, nbytes)  # raises the precise error
    flat, cow = _map_file(filename, nbytes // dtype.itemsize, dtype, mode)
    if nested:
        flat = _nested_view(flat, shape)
    elif len(shape) != 1:
        flat = flat.view(*shape) if shape else flat.view(shape)
    out = flat.as_subclass(MemoryMappedTensor)
    out._filename = filename
    if cow:
        out._cow = True
    return out


# ---------------------------------------------------------------------------- pickling
def _rebuild_from_file(
    cls: type,
    filename: str,
    dtype: torch.dtype,
    shape: tuple[int, ...] | torch.Tensor,
    offset: int,
    strides: tuple[int, ...],
    nbytes: int,
    cow: bool,
) -> MemoryMappedTensor:
    """Unpickles a tensor with a file by mapping the file again."""
    if isinstance(shape, torch.Tensor):
        out = _open_file(filename, dtype, shape, "r" if cow else None)
        return out if cls is MemoryMappedTensor else _wrap(cls, out, filename, out._cow)
    st = _check_existing_file(filename, None)
    if st.st_size < nbytes:
        msg = f"cannot unpickle a tensor of {filename!r}: it needs {nbytes} bytes, the file holds {st.st_size}"
        raise MemmapFormatError(msg)
    flat, cow = _map_file(filename, nbytes, torch.uint8, "r" if cow else None)
    tensor = torch.empty(0, dtype=dtype).set_(flat.untyped_storage(), offset, shape, strides)
    return _wrap(cls, tensor, filename, cow)


def _rebuild_from_storage(
    cls: type,
    data: torch.Tensor,
    dtype: torch.dtype,
    shape: tuple[int, ...] | torch.Tensor,
    offset: int,
    strides: tuple[int, ...],
) -> MemoryMappedTensor:
    """Unpickles a tensor without a file from a byte tensor over its whole storage.

    A plain tensor carries the storage: torch sends it as shared memory through
    ``torch.multiprocessing``, while a bare ``UntypedStorage`` fails plain ``pickle``.
    """
    storage = data.untyped_storage()
    if not storage.is_shared():
        storage.share_memory_()
    if isinstance(shape, torch.Tensor):
        tensor = _nested_view(torch.empty(0, dtype=dtype).set_(storage), shape)
    else:
        tensor = torch.empty(0, dtype=dtype).set_(storage, offset, shape, strides)
    return _wrap(cls, tensor, None)


def _view_of(out: Any, src: MemoryMappedTensor, storage_id: int) -> Any:
    """Returns ``out`` as a MemoryMappedTensor when it views the storage of ``src``."""
    if type(out) is not torch.Tensor or out.untyped_storage()._cdata != storage_id:
        return out
    return _wrap(type(src), out, src._filename, src._cow)


def _size_args(size: tuple, shape: Any) -> torch.Size | torch.Tensor:
    """Parses the ``(*size)`` / ``(shape)`` / ``shape=`` call forms of the factories."""
    if shape is not None:
        if size:
            msg = f"got sizes {size!r} and shape={shape!r}; pass only one"
            raise TypeError(msg)
        return _parse_shape(shape)
    if not size:
        msg = "a shape is needed: sizes (2, 3), one sequence ((2, 3)) or shape=(2, 3)"
        raise TypeError(msg)
    if len(size) == 1 and not isinstance(size[0], int):
        return _parse_shape(size[0])
    return _parse_shape(size)


# ---------------------------------------------------------------------------- the class
class MemoryMappedTensor(torch.Tensor):
    """A tensor whose data lives in a file or in anonymous shared memory.

    Build one with the class methods (``from_tensor``, ``from_filename``, ``empty`` ...);
    calling the class gives a tensor in ordinary memory. Views (indexing, ``view``,
    ``reshape``, ``t`` ...) stay MemoryMappedTensors over the same file; other operations
    return plain tensors, and in-place ones return the tensor itself.

    Examples:
        >>> x = MemoryMappedTensor.from_tensor(torch.arange(6).reshape(2, 3))
        >>> x[1], type(x + 1).__name__
        (MemoryMappedTensor([3, 4, 5]), 'Tensor')
    """

    _filename: str | None = None
    _cow: bool = False
    # A plain tensor over the same memory, same shape and strides (see rows_alias): index
    # writes through it skip the subclass dispatch. Dropped by any op that changes this
    # tensor's geometry in place.
    _plain: torch.Tensor | None = None
    _rows_fit: tuple | None = None  # see rows_fit, dropped with _plain

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Runs ``func`` on plain tensors; views of a MemoryMappedTensor keep its class and file."""
        if func in _RESHAPE_INPLACE and args and isinstance(args[0], MemoryMappedTensor):
            kept = vars(args[0])
            kept.pop("_plain", None)
            kept.pop("_rows_fit", None)
        with _DisableSubclass():
            out = func(*args, **kwargs) if kwargs else func(*args)
            if func in _VIEW_FUNCS and args and isinstance(args[0], MemoryMappedTensor):
                src = args[0]
                storage_id = src.untyped_storage()._cdata
                if type(out) in (tuple, list):
                    return type(out)(_view_of(o, src, storage_id) for o in out)
                return _view_of(out, src, storage_id)
        return out

    def __getitem__(self, index: Any) -> Any:
        """Indexes like a plain tensor; views keep the class and file, copies are plain tensors."""
        # The hot path of replay buffers: a direct override skips the generic dispatch.
        with _DisableSubclass():
            out = _GETITEM(self, index)
        if type(index) is torch.Tensor and index.ndim:
            return out  # advanced indexing always copies: no view to wrap
        return _view_of(out, self, self.untyped_storage()._cdata)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Writes ``value`` at ``index`` straight into the mapped memory (the file, if shared)."""
        with _DisableSubclass():
            _SETITEM(self, index, value)

    # ------------------------------------------------------------------ properties
    @property
    def filename(self) -> str:
        """The absolute path of the file that holds the data.

        A tensor mapped copy-on-write reports its file too, though its writes never reach it.

        Raises:
            RuntimeError: if the data lives in anonymous shared memory (there is no file).

        Examples:
            >>> x = MemoryMappedTensor.zeros(3, filename="filename.memmap")
            >>> x[1:].filename == os.path.abspath("filename.memmap")
            True
        """
        name = self._filename
        if name is None:
            msg = "this MemoryMappedTensor has no file: its data lives in anonymous shared memory"
            raise RuntimeError(msg)
        return name

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_tensor(
        cls,
        input: torch.Tensor,
        *,
        filename: str | os.PathLike | None = None,
        existsok: bool = False,
        copy_existing: bool = False,
        copy_data: bool = True,
        shape: ShapeLike | None = None,
    ) -> MemoryMappedTensor:
        """Copies a tensor into a new file, or into anonymous shared memory, and returns the copy.

        ``input`` itself is returned, with no copy, when it is a MemoryMappedTensor, ``shape`` is
        ``None`` and ``filename`` names where it already lives: ``None`` for a tensor without a
        file, or its own file when mapped shared (not copy-on-write). Otherwise the result is a
        new C-contiguous tensor.

        Args:
            input (torch.Tensor): the data. A nested tensor of the ``torch.strided`` layout is
                stored component after component.

        Keyword Args:
            filename (str or os.PathLike, optional): the file to create. Defaults to ``None``,
                which puts the data in anonymous shared memory.
            existsok (bool, optional): if ``True``, an existing file at ``filename`` is replaced
                by a new one renamed over it. Defaults to ``False``.
            copy_existing (bool, optional): if ``True``, a MemoryMappedTensor with a file may be
                copied to another file. Defaults to ``False``.
            copy_data (bool, optional): if ``False``, nothing is copied: the result only takes
                the dtype and shape, and reads as zeros. Defaults to ``True``.
            shape (torch.Size, sequence of int or torch.Tensor, optional): the shape of the
                result, to which ``input`` is broadcast; for a nested input, the 2-D tensor of
                its component shapes. Defaults to ``None``, which keeps the shape of ``input``.

        Returns:
            The new MemoryMappedTensor, or ``input`` itself when no copy is needed.

        Raises:
            TypeError: if ``input`` is no tensor, or ``filename`` or ``shape`` has the wrong type.
            RuntimeError: if ``input`` requires gradients; if ``filename`` is a symbolic link, or
                exists while ``existsok`` is false; or if ``input`` has another file and
                ``copy_existing`` is false.
            ValueError: if ``input`` is on the meta device, not strided (sparse) or of a dtype
                without plain elements (quantized); if it cannot be broadcast to ``shape``, or a
                2-D ``shape`` is given for a dense input or differs from a nested one's; if
                ``shape`` has negative sizes; or if ``existsok`` is true and ``filename`` is no
                regular file.
            NotImplementedError: if ``input`` is a nested tensor of the ``torch.jagged`` layout.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.
            PermissionError: if ``existsok`` is true and the existing file is read-only.

        Examples:
            >>> x = MemoryMappedTensor.from_tensor(torch.arange(3.0), filename="from_tensor.memmap")
            >>> x, MemoryMappedTensor.from_tensor(x, filename="from_tensor.memmap") is x
            (MemoryMappedTensor([0., 1., 2.]), True)
        """
        if not isinstance(input, torch.Tensor):
            msg = f"from_tensor() needs a torch.Tensor, got {type(input).__name__}; convert it with torch.as_tensor first"
            raise TypeError(msg)
        with _DisableSubclass():
            if input.requires_grad:
                msg = "from_tensor() cannot copy a tensor that requires gradients; pass input.detach()"
                raise RuntimeError(msg)
            if input.device.type == "meta":
                msg = "from_tensor() got a tensor on the meta device: a MemoryMappedTensor must be in physical memory"
                raise ValueError(msg)
            if input.layout is torch.jagged:
                msg = "nested tensors of the torch.jagged layout cannot be memory-mapped; convert to torch.strided"
                raise NotImplementedError(msg)
            if input.layout is not torch.strided:
                msg = f"from_tensor() cannot map a tensor of layout {input.layout}; convert it with .to_dense()"
                raise ValueError(msg)
        path = None if filename is None else _as_path(filename)
        if isinstance(input, MemoryMappedTensor):
            own = input._filename
            own = None if own is None else os.path.normpath(own)
            if own is not None and path is not None and own != path and not copy_existing:
                msg = f"the tensor has the file {own!r}; copy_existing=True copies it to {path!r}"
                raise RuntimeError(msg)
            if shape is None and own == path and not input._cow:
                return input
        target = _parse_shape(shape) if shape is not None else None
        return cls._copy(input, target, path, existsok, copy_data)

    @classmethod
    def _copy(cls, input, target, path, existsok, copy_data) -> MemoryMappedTensor:
        """Writes ``input`` (broadcast to the parsed shape ``target`` unless ``None``) to
        the file ``path``, or to shared memory if it is ``None``."""
        with _DisableSubclass():
            nested = input.is_nested
            dtype = _check_dtype(input.dtype)
            if nested:
                parts = input.unbind()
                sizes = _parse_shape(torch.tensor([list(p.shape) for p in parts]))
                if target is not None and not torch.equal(target, sizes):
                    msg = f"shape {target.tolist()} does not match the nested input's shapes {sizes.tolist()}"
                    raise ValueError(msg)
                chunks = [p.cpu().contiguous() for p in parts] if copy_data else ()
                flat = _new_flat(_numel(sizes), dtype, path, existsok, chunks)
                return _wrap(cls, _nested_view(flat, sizes), path)
            if target is None:
                target = input.shape
            elif isinstance(target, torch.Tensor):
                msg = "a 2-D shape makes a nested tensor, but the input is not nested"
                raise ValueError(msg)
            src = input
            if copy_data and target != input.shape:
                try:
                    src = input.expand(target)
                except RuntimeError as err:
                    msg = f"cannot broadcast the input of shape {tuple(input.shape)} to shape {tuple(target)}"
                    raise ValueError(msg) from err
            fast = copy_data and src.device.type == "cpu" and src.is_contiguous()
            flat = _new_flat(math.prod(target), dtype, path, existsok, (src,) if fast else ())
            out = flat.view(*target) if target else flat.view(target)
            if copy_data and not fast:
                out.copy_(src)
            return _wrap(cls, out, path)

    @classmethod
    def from_storage(
        cls,
        storage: torch.UntypedStorage | torch.TypedStorage,
        *,
        shape: ShapeLike | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | int | None = None,
        index: Any = None,
        filename: str | os.PathLike | None = None,
        handler: Any = None,
    ) -> MemoryMappedTensor:
        """Views an existing storage as a MemoryMappedTensor, without copying, and returns it.

        The result has the file the storage maps shared, else ``filename`` if given (unchecked);
        it then pickles by file name.

        Args:
            storage (torch.UntypedStorage or torch.TypedStorage): a CPU storage.

        Keyword Args:
            shape (torch.Size, sequence of int or torch.Tensor, optional): the shape, which must
                use exactly the bytes of the storage; a 2-D tensor makes a nested tensor.
                Defaults to ``None``, a 1-D tensor over the whole storage.
            dtype (torch.dtype, optional): the element type. Defaults to ``None``, which uses the
                dtype of a typed storage and ``torch.int64`` for an untyped one.
            device (torch.device, str or int, optional): ``None`` or the CPU.
            index (Any, optional): an index applied to the result, as ``result[index]``.
            filename (str or os.PathLike, optional): the file of a storage that records none.
            handler (None): not supported; must stay ``None``.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``handler`` is given, or ``storage``, ``dtype``, ``filename`` or
                ``shape`` has the wrong type (a storage, a dtype, a non-empty path, a shape).
            ValueError: if the storage is not in CPU memory, ``dtype`` has no plain elements,
                ``shape`` has negative sizes, or the storage size is not a whole number of
                elements (no ``shape``) or not exactly what ``shape`` and ``dtype`` need.
            RuntimeError: if ``device`` is not the CPU, or the storage maps a file and
                ``filename`` names another.
            IndexError: if ``index`` is out of range.

        Examples:
            >>> x = MemoryMappedTensor.from_tensor(torch.arange(4), filename="storage.memmap")
            >>> y = MemoryMappedTensor.from_storage(x.untyped_storage(), shape=(2, 2))
            >>> y, y.filename == x.filename
            (MemoryMappedTensor([[0, 1], [2, 3]]), True)
        """
        if handler is not None:
            msg = "from_storage() does not take a handler; pass the storage itself"
            raise TypeError(msg)
        if isinstance(storage, torch.TypedStorage):
            dtype = storage.dtype if dtype is None else dtype
            storage = storage.untyped()
        if not isinstance(storage, torch.UntypedStorage):
            msg = f"storage must be a torch.UntypedStorage, got {type(storage).__name__}"
            raise TypeError(msg)
        if storage.device.type != "cpu":
            msg = f"the storage is on device {str(storage.device)!r}: a MemoryMappedTensor must be in physical (CPU) memory"
            raise ValueError(msg)
        _check_device(device)
        dtype = _check_dtype(torch.int64 if dtype is None else dtype)
        nbytes = storage.nbytes()
        own = _storage_filename(storage)
        path = own
        if filename is not None:
            path = _as_path(filename)
            if own is not None and own != path:
                # torch keeps the name the file was mapped under; the kernel knows where
                # it is now (a folder written in a staging folder was renamed into place)
                current = mapped_path(storage.data_ptr()) if nbytes else None
                if current != os.path.realpath(path):
                    msg = f"the storage maps {current or own!r}, not filename={path!r}"
                    raise RuntimeError(msg)
        if shape is None:
            if nbytes % dtype.itemsize:
                msg = f"a storage of {nbytes} bytes holds no whole number of {dtype} elements"
                raise ValueError(msg)
            target = torch.Size([nbytes // dtype.itemsize])
        else:
            target = _parse_shape(shape)
            needed = _numel(target) * dtype.itemsize
            if needed != nbytes:
                msg = f"the storage holds {nbytes} bytes; the dtype and shape need {needed}"
                raise ValueError(msg)
        with _DisableSubclass():
            flat = torch.empty(0, dtype=dtype).set_(storage)
            out = _wrap(cls, _shape_of(flat, target), path)
        return out if index is None else out[index]

    @classmethod
    def from_filename(
        cls,
        filename: str | os.PathLike,
        dtype: torch.dtype,
        shape: ShapeLike,
        index: Any = None,
        mode: str | None = None,
    ) -> MemoryMappedTensor:
        """Maps an existing file of raw data, and returns the tensor over it.

        The file has no header: ``dtype`` and ``shape`` say how to read its bytes, and its size
        must be exactly the bytes they need. Writes to a shared mapping reach the file, and
        every process mapping it, at once; writes to a copy-on-write one stay in this process.

        Args:
            filename (str or os.PathLike): the file; a symbolic link is refused.
            dtype (torch.dtype): the element type.
            shape (torch.Size, sequence of int, int or torch.Tensor): the shape; a 2-D tensor
                (one row of sizes per component) makes a nested tensor.
            index (Any, optional): an index applied to the result, as ``result[index]``.
            mode (str, optional): ``"r"`` maps the file copy-on-write, ``"r+"`` shared.
                Defaults to ``None``: shared if this process may write the file, else
                copy-on-write.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``filename`` (non-empty path), ``dtype`` or ``shape`` has the wrong type.
            ValueError: if ``mode`` is not ``None``, ``"r"`` or ``"r+"``, ``dtype`` has no plain
                elements, ``shape`` has negative sizes, or the path is a symbolic link, not a
                regular file, or a file of the wrong size.
            FileNotFoundError: if the file does not exist.
            PermissionError: if ``mode`` is ``"r+"`` and the file is read-only.
            RuntimeError: if torch fails to map a file that this process may write.
            IndexError: if ``index`` is out of range.

        Examples:
            >>> _ = MemoryMappedTensor.from_tensor(torch.arange(6), filename="from_filename.memmap")
            >>> MemoryMappedTensor.from_filename("from_filename.memmap", torch.int64, (2, 3))
            MemoryMappedTensor([[0, 1, 2],
                                [3, 4, 5]])
        """
        if mode not in _MODES:
            msg = f"mode must be None, 'r' or 'r+', got {mode!r}"
            raise ValueError(msg)
        path = _as_path(filename)
        parsed = (
            shape
            if type(shape) is torch.Size and shape and min(shape) >= 0
            else _parse_shape(shape)
        )
        out = _open_file(path, _check_dtype(dtype), parsed, mode)
        if cls is not MemoryMappedTensor:
            out = _wrap(cls, out, path, out._cow)
        return out if index is None else out[index]

    @classmethod
    def from_handler(
        cls, handler: torch.UntypedStorage, dtype: torch.dtype, shape: ShapeLike, index: Any = None
    ) -> MemoryMappedTensor:
        """Views a storage without copying: ``from_storage(handler, dtype=, shape=, index=)``.

        Args:
            handler (torch.UntypedStorage): the storage, e.g. of a tensor in shared memory.
            dtype (torch.dtype): the element type.
            shape (torch.Size, sequence of int or torch.Tensor): the shape, which must use
                exactly the bytes of the storage; ``None`` gives a 1-D tensor over all of it.
            index (Any, optional): an index applied to the result.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``handler``, ``dtype`` or ``shape`` has the wrong type.
            ValueError: if the storage is not in CPU memory, ``dtype`` has no plain elements,
                ``shape`` has negative sizes, or the storage size does not match.
            IndexError: if ``index`` is out of range.

        Examples:
            >>> storage = MemoryMappedTensor.from_tensor(torch.arange(4)).untyped_storage()
            >>> MemoryMappedTensor.from_handler(storage, torch.int64, (2, 2))
            MemoryMappedTensor([[0, 1],
                                [2, 3]])
        """
        return cls.from_storage(handler, dtype=dtype, shape=shape, index=index)

    @classmethod
    def _allocate(cls, shape, dtype, device, filename, existsok, fill=None) -> MemoryMappedTensor:
        """Creates a zero-filled tensor of a parsed shape, then fills it unless ``fill`` is None."""
        _check_device(device)
        dtype = _check_dtype(torch.get_default_dtype() if dtype is None else dtype)
        path = None if filename is None else _as_path(filename)
        with _DisableSubclass():
            flat = _new_flat(_numel(shape), dtype, path, existsok)
            if fill is not None:
                flat.fill_(fill)
            return _wrap(cls, _shape_of(flat, shape), path)

    @classmethod
    def empty(
        cls,
        *size: Any,
        shape: ShapeLike | None = None,
        dtype: torch.dtype | None = None,
        device: Any = None,
        filename: str | os.PathLike | None = None,
        existsok: bool = False,
    ) -> MemoryMappedTensor:
        """Creates a tensor without writing its data (it reads as zeros), and returns it.

        Args:
            *size (int, sequence of int, torch.Size or torch.Tensor): the shape, as ints (``2, 3``)
                or one sequence (``(2, 3)``); a 2-D tensor makes a nested tensor, one row of
                sizes per component.

        Keyword Args:
            shape (torch.Size, sequence of int or torch.Tensor, optional): in place of ``*size``.
            dtype (torch.dtype, optional): defaults to ``torch.get_default_dtype()``.
            device (torch.device, str or int, optional): ``None`` or the CPU.
            filename (str or os.PathLike, optional): the file to create. Defaults to ``None``,
                which puts the data in anonymous shared memory.
            existsok (bool, optional): replace an existing file. Defaults to ``False``.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if the shape is missing, doubled or not a shape, an argument has
                the wrong type, or an unknown keyword is passed.
            ValueError: if the shape has negative sizes or over two dimensions, ``dtype`` has no
                plain elements, or ``existsok`` is true and ``filename`` is not a regular file.
            RuntimeError: if ``device`` is not the CPU, or ``filename`` is a symbolic link or
                exists while ``existsok`` is false.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.
            PermissionError: if ``existsok`` is true and the existing file is read-only.

        Examples:
            >>> MemoryMappedTensor.empty(2, 3, dtype=torch.int64).shape
            torch.Size([2, 3])
        """
        return cls._allocate(_size_args(size, shape), dtype, device, filename, existsok)

    @classmethod
    def zeros(cls, *size: Any, **kwargs: Any) -> MemoryMappedTensor:
        """Creates a tensor of zeros (like :meth:`empty`, which reads as zeros), and returns it.

        Args:
            *size (int, sequence, torch.Size or torch.Tensor): the shape, as in :meth:`empty`.

        Keyword Args:
            **kwargs: ``shape``, ``dtype``, ``device``, ``filename``, ``existsok`` of :meth:`empty`.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if the shape is missing, doubled or not a shape, an argument has
                the wrong type, or an unknown keyword is passed.
            ValueError: if the shape has negative sizes or over two dimensions, ``dtype`` has no
                plain elements, or ``existsok`` is true and ``filename`` is not a regular file.
            RuntimeError: if ``device`` is not the CPU, or ``filename`` is a symbolic link or
                exists while ``existsok`` is false.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.
            PermissionError: if ``existsok`` is true and the existing file is read-only.

        Examples:
            >>> MemoryMappedTensor.zeros((2,))
            MemoryMappedTensor([0., 0.])
        """
        return cls.empty(*size, **kwargs)  # new files and shared memory read as zeros

    @classmethod
    def ones(cls, *size: Any, **kwargs: Any) -> MemoryMappedTensor:
        """Creates a tensor of ones, and returns it: ``full(*size, fill_value=1, **kwargs)``.

        Args:
            *size (int, sequence, torch.Size or torch.Tensor): the shape, as in :meth:`empty`.

        Keyword Args:
            **kwargs: ``shape``, ``dtype``, ``device``, ``filename``, ``existsok`` of :meth:`empty`.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``fill_value`` is passed, the shape is missing, doubled or not a
                shape, an argument has the wrong type, or an unknown keyword is passed.
            ValueError: if the shape has negative sizes or over two dimensions, ``dtype`` has no
                plain elements, or ``existsok`` is true and ``filename`` is not a regular file.
            RuntimeError: if ``device`` is not the CPU, or ``filename`` is a symbolic link or
                exists while ``existsok`` is false.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.
            PermissionError: if ``existsok`` is true and the existing file is read-only.

        Examples:
            >>> MemoryMappedTensor.ones(2, dtype=torch.bool)
            MemoryMappedTensor([True, True])
        """
        return cls.full(*size, fill_value=1, **kwargs)

    @classmethod
    def full(cls, *size: Any, fill_value: Any = None, **kwargs: Any) -> MemoryMappedTensor:
        """Creates a tensor with every element set to ``fill_value``, and returns it.

        Besides ``full(2, 3, fill_value=7)`` and ``full((2, 3), fill_value=7)``, it accepts
        ``full((2, 3), 7)``: with no ``fill_value``, two positional arguments whose first is not
        an int are the shape and the value. The tensor (and its file) is made first, then filled.

        Args:
            *size (int, sequence, torch.Size or torch.Tensor): the shape, as in :meth:`empty`;
                or the shape then the fill value.

        Keyword Args:
            fill_value (number or bool): the value of every element.
            **kwargs: ``shape``, ``dtype``, ``device``, ``filename``, ``existsok`` of :meth:`empty`.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``fill_value`` is missing, the shape is missing, doubled or not a
                shape, an argument has the wrong type, or an unknown keyword is passed.
            ValueError: if the shape has negative sizes or over two dimensions, ``dtype`` has no
                plain elements, or ``existsok`` is true and ``filename`` is not a regular file.
            RuntimeError: if ``device`` is not the CPU; if ``filename`` is a symbolic link or
                exists while ``existsok`` is false; or if ``fill_value`` does not fit ``dtype``
                (raised after the file is made, which stays).
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.
            PermissionError: if ``existsok`` is true and the existing file is read-only.

        Examples:
            >>> MemoryMappedTensor.full((3,), 2, dtype=torch.int64)
            MemoryMappedTensor([2, 2, 2])
        """
        if fill_value is None and len(size) == 2 and not isinstance(size[0], int):
            size, fill_value = size[:1], size[1]
        if fill_value is None:
            msg = "full() needs fill_value, as a keyword: full(2, 3, fill_value=1.0)"
            raise TypeError(msg)
        out = cls.empty(*size, **kwargs)
        with _DisableSubclass():
            out.fill_(fill_value)
        return out

    @classmethod
    def _like(cls, input: torch.Tensor, filename: Any, fill: Any) -> MemoryMappedTensor:
        """Allocates a tensor with the shape and dtype of ``input``."""
        if not isinstance(input, torch.Tensor):
            msg = f"expected a torch.Tensor, got {type(input).__name__}"
            raise TypeError(msg)
        with _DisableSubclass():
            shape = input._nested_tensor_size() if input.is_nested else input.shape
            dtype = input.dtype
        return cls._allocate(_parse_shape(shape), dtype, None, filename, False, fill)

    @classmethod
    def empty_like(
        cls, input: torch.Tensor, *, filename: str | os.PathLike | None = None
    ) -> MemoryMappedTensor:
        """Creates a tensor like ``input`` with no data written (it reads as zeros), and returns it.

        Args:
            input (torch.Tensor): the tensor whose shape and dtype (not device nor data) are
                taken; a nested input gives a nested result.

        Keyword Args:
            filename (str or os.PathLike, optional): the file to create; it must not exist.
                Defaults to ``None``, which puts the data in anonymous shared memory.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``input`` is not a tensor, or ``filename`` is not a non-empty path.
            ValueError: if the dtype of ``input`` has no plain elements (quantized).
            NotImplementedError: if ``input`` is a nested tensor of the ``torch.jagged`` layout.
            RuntimeError: if ``filename`` exists or is a symbolic link.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.

        Examples:
            >>> MemoryMappedTensor.empty_like(torch.zeros(2, dtype=torch.int16)).dtype
            torch.int16
        """
        return cls._like(input, filename, None)

    @classmethod
    def zeros_like(
        cls, input: torch.Tensor, *, filename: str | os.PathLike | None = None
    ) -> MemoryMappedTensor:
        """Creates a tensor of zeros with the shape and dtype of ``input``, and returns it.

        Args:
            input (torch.Tensor): the tensor whose shape and dtype (not device nor data) are
                taken; a nested input gives a nested result.

        Keyword Args:
            filename (str or os.PathLike, optional): the file to create; it must not exist.
                Defaults to ``None``, which puts the data in anonymous shared memory.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``input`` is not a tensor, or ``filename`` is not a non-empty path.
            ValueError: if the dtype of ``input`` has no plain elements (quantized).
            NotImplementedError: if ``input`` is a nested tensor of the ``torch.jagged`` layout.
            RuntimeError: if ``filename`` exists or is a symbolic link.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.

        Examples:
            >>> MemoryMappedTensor.zeros_like(torch.ones(2))
            MemoryMappedTensor([0., 0.])
        """
        return cls._like(input, filename, None)

    @classmethod
    def ones_like(
        cls, input: torch.Tensor, *, filename: str | os.PathLike | None = None
    ) -> MemoryMappedTensor:
        """Creates a tensor of ones with the shape and dtype of ``input``, and returns it.

        Args:
            input (torch.Tensor): the tensor whose shape and dtype (not device nor data) are
                taken; a nested input gives a nested result.

        Keyword Args:
            filename (str or os.PathLike, optional): the file to create; it must not exist.
                Defaults to ``None``, which puts the data in anonymous shared memory.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``input`` is not a tensor, or ``filename`` is not a non-empty path.
            ValueError: if the dtype of ``input`` has no plain elements (quantized).
            NotImplementedError: if ``input`` is a nested tensor of the ``torch.jagged`` layout.
            RuntimeError: if ``filename`` exists or is a symbolic link.
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.

        Examples:
            >>> MemoryMappedTensor.ones_like(torch.zeros(2))
            MemoryMappedTensor([1., 1.])
        """
        return cls._like(input, filename, 1)

    @classmethod
    def full_like(
        cls, input: torch.Tensor, fill_value: Any, *, filename: str | os.PathLike | None = None
    ) -> MemoryMappedTensor:
        """Creates a tensor of ``fill_value`` with the shape and dtype of ``input``.

        Args:
            input (torch.Tensor): the tensor whose shape and dtype (not device nor data) are
                taken; a nested input gives a nested result.
            fill_value (number or bool): the value of every element.

        Keyword Args:
            filename (str or os.PathLike, optional): the file to create; it must not exist.
                Defaults to ``None``, which puts the data in anonymous shared memory.

        Returns:
            The new MemoryMappedTensor.

        Raises:
            TypeError: if ``input`` is not a tensor, or ``filename`` is not a non-empty path.
            ValueError: if the dtype of ``input`` has no plain elements (quantized).
            NotImplementedError: if ``input`` is a nested tensor of the ``torch.jagged`` layout.
            RuntimeError: if ``filename`` exists or is a symbolic link, or if ``fill_value``
                does not fit the dtype (raised after the file is made, which stays).
            FileNotFoundError: if the folder of ``filename`` does not exist.
            IsADirectoryError: if ``filename`` is a folder.

        Examples:
            >>> MemoryMappedTensor.full_like(torch.zeros(2, dtype=torch.int64), 7)
            MemoryMappedTensor([7, 7])
        """
        return cls._like(input, filename, fill_value)

    # ------------------------------------------------------------------ copying
    def __reduce_ex__(self, protocol: int) -> tuple:
        """Pickles a tensor with a file by file name and layout, and one without by its storage."""
        with _DisableSubclass():
            cls = type(self)
            storage = self.untyped_storage()
            if self.is_nested:
                layout: tuple = (self._nested_tensor_size(), 0, ())
            else:
                layout = (tuple(self.shape), self.storage_offset(), self.stride())
            if self._filename is not None:
                args = (cls, self._filename, self.dtype, *layout, storage.nbytes(), self._cow)
                return _rebuild_from_file, args
            data = torch.empty(0, dtype=torch.uint8).set_(storage)
            return _rebuild_from_storage, (cls, data, self.dtype, *layout)

    def __deepcopy__(self, memo: dict) -> MemoryMappedTensor:
        """Copies the data into new anonymous shared memory: the copy has no file."""
        return type(self)._copy(self, None, None, False, True)
