"""Memory-mapped archives (``.tdz``): a whole memory-mapped tree in one zip file.

Layout
------
An archive is an ordinary zip file (PKWARE APPNOTE, with the zip64 extensions
when sizes or offsets need them). Its entries are the files of a memory-mapped
folder of format v1 (see :mod:`tensordict.memmap.format`), named by their path
relative to the folder with ``/`` between parts: ``meta.json``, ``obs.memmap``,
``next/meta.json``, ``stack/0/meta.json``, ... A writer MUST put the root
``meta.json`` in the archive; that entry is what makes a zip file an archive
(:func:`is_memmap_archive`). A writer puts each level's ``meta.json`` before the
other files of that level. A folder entry (``name/``, no bytes) stands for an
empty folder only; a reader takes it as a folder and nothing else.

Tensor payloads (``*.memmap`` entries) SHOULD be stored uncompressed (method 0)
with their first byte at an offset of the file that is a multiple of 64 (every
itemsize divides 64). This writer pads the *extra field* of the entry's local
header to get there: one extra block of id ``0x5444`` whose body is zero bytes,
followed by the zip64 block that every tensor entry carries. ``meta.json`` and
the other small files are stored uncompressed too. A payload MAY be compressed
(``compression="deflate"``, ``"bzip2"`` or ``"lzma"``).

Because the entries *are* the folder's files, extracting an archive with any
zip tool (``unzip``, :meth:`zipfile.ZipFile.extractall`, :func:`unpack_memmap`)
gives a folder that :func:`~tensordict.load_memmap` reads, and
:func:`pack_memmap` of a folder gives an archive.

Reading
-------
The reader maps the whole archive once (a private, copy-on-write mapping, read
lazily by the operating system) and makes every leaf a *zero-copy view* of that
mapping when its entry is stored uncompressed at an offset its dtype's itemsize
divides. Any other leaf is a *copying read*: a compressed entry is decompressed
(its CRC-32 checked), an unaligned one (an archive from ``zip -0``, say) copied
from the mapping; the leaves of a nested tensor are always copied. The leaves
are plain tensors, not :class:`~tensordict.MemoryMappedTensor` (the result is
not memory-mapped in a folder: :meth:`~tensordict.TensorDictBase.is_memmap` is
False and it is unlocked), as with the well-known implementation.

A compressed entry (deflate, bzip2 or lzma) is inflated 1 MiB at a time straight
into its destination (the leaf's tensor, or the file :func:`unpack_memmap`
writes), and never past the size its zip headers record, which for a tensor is
first checked against what its ``meta.json`` record needs: a stream that inflates
to more (a zip bomb) is refused as soon as it does, so that no archive, however
it lies, takes more than a few MiB beyond the leaves it really holds. A
``meta.json`` entry whose headers record more than 64 MiB
(:data:`~tensordict.memmap.format.MAX_META_BYTES`) is refused before it is read
or extracted.

The reader parses the zip's own records (the end of central directory, zip64
ones included, the central directory, each local header) from the mapping and
checks every entry before it builds any leaf. Each failure raises
:class:`~tensordict.errors.ArchiveFormatError` (a ``ValueError``) naming the
archive and the entry: a name that leaves the archive's root (absolute, a
``..`` or ``.`` part, a backslash, NUL), a name given twice, an encrypted
entry, an entry recorded as a symbolic link, a local header that is not one or
names another file, a payload past the end of the file (a truncated archive), a
stored entry whose two sizes differ, a tensor entry whose size is not what its
``meta.json`` record needs, a CRC-32 mismatch where CRCs are checked
(``meta.json`` and the other small files on each load, compressed payloads as
they are decompressed, every entry in :func:`unpack_memmap` and ``tensordict
verify``), and a file that is not a zip at all. The ``meta.json`` files go
through the same strict field checks as a folder's
(:mod:`tensordict.memmap.format`). Missing entries are dropped as in a folder.
Errors of the file system (a missing archive, no permission) are ``OSError``
subclasses.

Writing
-------
An archive is written to a temporary file beside its final path and renamed
over it, so that a crash leaves either the old archive or the new one. Writing
a tensordict stages its folder next to the archive first (the ordinary
:meth:`~tensordict.TensorDictBase.memmap` writer, so an archive holds exactly
the files a folder would), packs it, then removes the staging folder. Both carry
the format's temporary names; a writer first removes those that a dead writer of
this host left in the folder (by host and process id, as for folders).

Hooks
-----
This layer builds tensordicts without knowing their classes: the modules that
define them fill :data:`BUILDERS` when they are imported.
"""

from __future__ import annotations

import bz2
import contextlib
import lzma
import os
import pathlib
import pickle
import shutil
import stat as _stat
import struct
import zipfile
import zlib
from collections.abc import Iterator

import torch

from tensordict._collection import TensorCollection
from tensordict._helpers import contiguous_strides
from tensordict._nontensor import MetaData, NonTensorData, NonTensorDataBase
from tensordict.errors import (
    ArchiveFormatError,
    ArchiveNotWritableError,
    ArchiveTargetError,
    ExistingFileError,
    InvalidArgumentError,
    MemmapFormatError,
    MemmapNotFoundError,
    PickleRefusedError,
    SymlinkError,
)
from tensordict.memmap import _fs
from tensordict.memmap import format as fmt
from tensordict.memmap._io import Options
from tensordict.memmap.tensor import _nested_view

ARCHIVE_SUFFIX = ".tdz"
ALIGNMENT = 64
PAD_EXTRA_ID = 0x5444  # the extra block that pads a local header (b"DT" little-endian)

BUILDERS: dict = {}
"""How this layer builds the loaded objects, filled by the modules that define the classes:

* ``BUILDERS[fmt.KIND_TD](data, batch_size, device, names)``: a TensorDict over checked
  entries (``names``: of its batch dimensions, ``None`` when none is named);
* ``BUILDERS[fmt.KIND_LAZY](where, members, stack_dim, stack_dim_name)``: a lazy stack;
* ``BUILDERS[fmt.KIND_NONTENSOR_STACK](values, device=...)``: a NonTensorStack;
* ``BUILDERS[type_str]`` for each tensorclass (``"<class 'm.Frame'>"``):
  ``(where, inner)`` gives the instance over the loaded tensordict ``inner``.
"""

_COMPRESSIONS = {
    None: zipfile.ZIP_STORED,
    "stored": zipfile.ZIP_STORED,
    "deflate": zipfile.ZIP_DEFLATED,
    "deflated": zipfile.ZIP_DEFLATED,
    "bzip2": zipfile.ZIP_BZIP2,
    "lzma": zipfile.ZIP_LZMA,
}
_CHUNK = 1 << 20  # bytes copied, or inflated, at a time: what a read takes beyond its destination
_INPUT_CHUNK = 64 << 10  # compressed bytes handed to a decompressor at a time
_DATE = (1980, 1, 1, 0, 0, 0)  # entries carry no time: the same tree gives the same bytes
_LOCAL = struct.Struct("<4s5H3I2H")
_CENTRAL = struct.Struct("<4s6H3I5H2I")
_EOCD = struct.Struct("<4s4H2IH")
_EOCD_SIG = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sIQI")
_LOCATOR_SIG = b"PK\x06\x07"
_EOCD64 = struct.Struct("<4sQ2H2I4Q")
_EOCD64_SIG = b"PK\x06\x06"
_LIMIT = 0xFFFFFFFF  # a 32-bit field holding this has its value in the zip64 extra block
_LOCAL_SIG = b"PK\x03\x04"
_CENTRAL_SIG = b"PK\x01\x02"
_ZIP64_LOCAL_BLOCK = 20  # the zip64 block zipfile puts in a local header: id, size, two sizes


def is_archive_path(path: str | os.PathLike) -> bool:
    """True when :func:`~tensordict.save` and the ``memmap`` methods write an archive at ``path``.

    That is when its name ends in ``.tdz``, as for the well-known implementation.

    Examples:
        >>> is_archive_path("run/ckpt.tdz"), is_archive_path("run/ckpt")
        (True, False)
    """
    return path is not None and os.fspath(path).endswith(ARCHIVE_SUFFIX)


def is_archive_file(path: str | os.PathLike) -> bool:
    """True when the loaders read ``path`` as an archive: a file (not a folder) there.

    A file that is not a zip and whose name does not end in ``.tdz`` is left to
    the folder loader, which says it is not a folder.
    """
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    if not _stat.S_ISREG(info.st_mode):
        return False
    return is_archive_path(path) or zipfile.is_zipfile(path)


def _compression(compression) -> int:
    if type(compression) is int and compression in _COMPRESSIONS.values():
        return compression
    key = compression.lower() if isinstance(compression, str) else compression
    if key not in _COMPRESSIONS:
        names = sorted(k for k in _COMPRESSIONS if k is not None)
        msg = f"unknown compression {compression!r}; expected one of {names}, None or a zipfile constant"
        raise ValueError(msg)
    return _COMPRESSIONS[key]


# ====================================================================== reading
class _Entry:
    __slots__ = ("name", "offset", "size", "packed", "method", "crc")

    def __init__(self, name, offset, size, packed, method, crc) -> None:
        self.name = name
        self.offset = offset  # of the payload's first byte in the file
        self.size = size
        self.packed = packed  # bytes in the file (the size, unless compressed)
        self.method = method
        self.crc = crc


def _bad(path: str, name: str | None, what: str) -> ArchiveFormatError:
    where = f"{path!r}" if name is None else f"{path!r}, entry {name!r}"
    return ArchiveFormatError(f"{where}: {what}")


def _zip64(buf, at: int, length: int, size: int, packed: int, header: int) -> tuple:
    """The sizes and header offset of a central record, read from its zip64 extra block."""
    end = at + length
    while at + 4 <= end:
        block, block_len = struct.unpack_from("<2H", buf, at)
        if block == 1:
            values = iter(struct.unpack_from(f"<{block_len // 8}Q", buf, at + 4))
            size = next(values, size) if size == _LIMIT else size
            packed = next(values, packed) if packed == _LIMIT else packed
            header = next(values, header) if header == _LIMIT else header
            break
        at += 4 + block_len
    return size, packed, header


def _check_name(path: str, name: str) -> None:
    # The common name (no backslash, NUL, drive, leading "/" or "." part) is checked in one pass.
    if (
        name
        and "\\" not in name
        and "\x00" not in name
        and "/." not in f"/{name}"
        and "//" not in name
        and name[0] != "/"
        and ":" not in name[:2]
    ):
        return
    parts = name.rstrip("/").split("/")
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or any(p in ("", ".", "..") for p in parts)
        or (len(name) > 1 and name[1] == ":")
    ):
        raise _bad(path, name, "the name leaves the archive's root (or names no file); refused")


class ArchiveReader:
    """The checked index of one archive and its single mapping.

    Args:
        path (str or os.PathLike): the archive.

    Keyword Args:
        writable (bool, optional): map the file shared, so that writes into the
            leaves reach it (for ``memmap_like``). Defaults to False (copy-on-write).

    Raises:
        ArchiveFormatError: if the archive breaks the rules of the module docstring.
        OSError: if the file cannot be opened.
    """

    def __init__(self, path: str | os.PathLike, *, writable: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        if os.path.islink(self.path):
            msg = f"refusing to load {self.path!r}: it is a symbolic link"
            raise SymlinkError(msg)
        self.writable = writable
        self.files: dict = {}  # entry name -> _Entry
        self.children: dict = {"": set()}  # folder -> names of its files and sub-folders
        self.dirs: set = {""}
        self._views: dict = {}  # dtype -> the whole mapping viewed as that dtype
        try:
            self.size = os.stat(self.path).st_size
        except FileNotFoundError as err:
            msg = f"cannot load {self.path!r}: no such archive"
            raise MemmapNotFoundError(msg) from err
        if self.size < _EOCD.size:
            raise _bad(self.path, None, "not a zip file, or truncated (too short)")
        self.storage = torch.from_file(
            self.path, self.writable, self.size, dtype=torch.uint8, device="cpu"
        )
        self._index(memoryview(self.storage.numpy()))

    def _index(self, buf: memoryview) -> None:
        """Reads the central directory and every local header from the mapping ``buf``."""
        count, central = self._directory(buf)
        size = self.size
        at = central
        for _ in range(count):
            if at + _CENTRAL.size > size or buf[at : at + 4] != _CENTRAL_SIG:
                raise _bad(self.path, None, f"its central directory is damaged at byte {at}")
            (
                _,
                made_by,
                _,
                flags,
                method,
                _,
                _,
                crc,
                packed,
                length,
                n,
                m,
                k,
                _,
                _,
                mode,
                header,
            ) = _CENTRAL.unpack_from(buf, at)
            raw = bytes(buf[at + _CENTRAL.size : at + _CENTRAL.size + n])
            name = raw.decode("utf-8" if flags & 0x800 else "cp437", "replace")
            if _LIMIT in (packed, length, header):
                length, packed, header = _zip64(
                    buf, at + _CENTRAL.size + n, m, length, packed, header
                )
            at += _CENTRAL.size + n + m + k
            _check_name(self.path, name)
            if flags & 0x1:
                raise _bad(self.path, name, "the entry is encrypted; tensordict reads none")
            if made_by >> 8 == 3 and _stat.S_ISLNK(mode >> 16):  # made on Unix, a link
                raise _bad(self.path, name, "the entry is a symbolic link; refused")
            if name.endswith("/"):
                self._add_dir(name.rstrip("/"))
                continue
            if name in self.files or name in self.dirs:
                raise _bad(self.path, name, "the name is given twice")
            if header + _LOCAL.size > size or buf[header : header + 4] != _LOCAL_SIG:
                raise _bad(self.path, name, "its local header is missing or damaged")
            name_len, extra_len = struct.unpack_from("<2H", buf, header + 26)
            offset = header + _LOCAL.size + name_len + extra_len
            if bytes(buf[header + _LOCAL.size : header + _LOCAL.size + name_len]) != raw:
                raise _bad(self.path, name, "its local header names another file")
            if offset + packed > size:
                raise _bad(
                    self.path,
                    name,
                    f"its payload ends at byte {offset + packed} of a file of {size} bytes "
                    "(the archive is truncated)",
                )
            if method == zipfile.ZIP_STORED and packed != length:
                raise _bad(
                    self.path,
                    name,
                    f"stored uncompressed, it records {length} bytes but holds {packed}",
                )
            self.files[name] = _Entry(name, offset, length, packed, method, crc)
            parent, _, base = name.rpartition("/")
            if parent not in self.dirs:
                self._add_dir(parent)
            self.children[parent].add(base)

    def _directory(self, buf: memoryview) -> tuple:
        """``(entries, offset)`` of the central directory, from the end records (zip64 too)."""
        size = self.size
        tail = bytes(buf[max(0, size - _EOCD.size - 0xFFFF) :])
        at = tail.rfind(_EOCD_SIG)
        # A signature in the last 21 bytes starts no whole end record (a file cut inside it).
        while at >= 0 and (
            len(tail) - at < _EOCD.size
            or at + _EOCD.size + struct.unpack_from("<H", tail, at + 20)[0] != len(tail)
        ):
            at = tail.rfind(_EOCD_SIG, 0, at)
        if at < 0:
            raise _bad(
                self.path, None, "not a zip file, or truncated (no end of central directory)"
            )
        eocd = size - len(tail) + at
        _, disk, _, _, count, _, central, _ = _EOCD.unpack_from(buf, eocd)
        if disk:
            raise _bad(self.path, None, "a zip split over several files is not supported")
        locator = eocd - _LOCATOR.size
        if locator >= 0 and buf[locator : locator + 4] == _LOCATOR_SIG:
            record = _LOCATOR.unpack_from(buf, locator)[2]
            if record + _EOCD64.size > size or buf[record : record + 4] != _EOCD64_SIG:
                raise _bad(self.path, None, "its zip64 end record is damaged")
            fields = _EOCD64.unpack_from(buf, record)
            count, central = fields[7], fields[9]
        if central > size:
            raise _bad(
                self.path,
                None,
                "not a zip file, or truncated (the central directory is past the end)",
            )
        return count, central

    def _add_dir(self, name: str) -> None:
        while name not in self.dirs:
            if name in self.files:
                raise _bad(self.path, name, "the name is both a file and a folder")
            self.dirs.add(name)
            self.children.setdefault(name, set())
            parent, _, base = name.rpartition("/")
            self.children.setdefault(parent, set()).add(base)
            name = parent

    def close(self) -> None:
        """Nothing to release: the mapping lives as long as the tensors that view it."""

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def label(self, name: str) -> str:
        """The path that names entry (or folder) ``name`` in messages: ``archive/name``."""
        return os.path.join(self.path, name) if name else self.path

    def read(self, name: str, check: bool = True) -> bytearray:
        """The bytes of entry ``name``, their CRC-32 checked (``check``; always when decompressed).

        A compressed entry is inflated in chunks into a buffer of the size its headers
        record, never more (see :meth:`inflated`); a ``meta.json`` recording more than
        :data:`~tensordict.memmap.format.MAX_META_BYTES` is refused before it is read.

        Raises:
            ArchiveFormatError: if the CRC or the compressed stream is bad, or a
                ``meta.json`` is too large.
        """
        entry = self.files[name]
        self.check_meta_size(entry)
        if entry.method == zipfile.ZIP_STORED:
            data = bytearray(self.storage[entry.offset : entry.offset + entry.size].numpy())
            if check and zlib.crc32(data) != entry.crc:
                raise _bad(self.path, name, "its CRC-32 does not match its bytes")
            return data
        data = bytearray(entry.size)
        view = memoryview(data)
        at = 0
        for chunk in self.inflated(entry):
            view[at : at + len(chunk)] = chunk
            at += len(chunk)
        return data

    def check_meta_size(self, entry: _Entry) -> None:
        """Refuses a ``meta.json`` entry whose headers record more than ``MAX_META_BYTES``.

        Raises:
            ArchiveFormatError: naming the entry and the bound.
        """
        name = entry.name
        if entry.size > fmt.MAX_META_BYTES and (
            name == fmt.META_FILE or name.endswith("/" + fmt.META_FILE)
        ):
            raise _bad(
                self.path,
                name,
                f"its headers record {entry.size} bytes, more than the {fmt.MAX_META_BYTES} a "
                "meta.json may hold; refused before reading it",
            )

    def inflated(self, entry: _Entry) -> Iterator[bytes]:
        """Yields the decompressed bytes of the compressed ``entry``, at most 1 MiB at a time.

        The stream is read from the mapping and inflated in bounded steps, and it may
        not give more bytes than the entry's headers record: a stream that inflates to
        more (a zip bomb), to fewer, or whose CRC-32 does not match raises as soon as
        that is known, so inflating takes at most a few MiB beyond the destination.

        Raises:
            ArchiveFormatError: naming the entry, if its stream is damaged, inflates to
                another size than its headers record, or its method is unsupported.
        """
        buf = memoryview(self.storage.numpy())
        pos, end = entry.offset, entry.offset + entry.packed
        decompressor, pos = _decompressor(self.path, entry, buf, pos, end)
        left, crc = entry.size, 0
        try:
            while not decompressor.eof:
                data = b""
                if decompressor.needs_input and pos < end:
                    data = buf[pos : min(end, pos + _INPUT_CHUNK)]
                    pos += len(data)
                out = decompressor.decompress(data, min(_CHUNK, left + 1))
                if not out and not data and decompressor.needs_input:
                    break  # all read, nothing more comes out: a stream without an end marker
                if len(out) > left:
                    raise _bad(
                        self.path,
                        entry.name,
                        f"it inflates to more than the {entry.size} bytes its headers record; "
                        "refused (stopped after that many)",
                    )
                left -= len(out)
                crc = zlib.crc32(out, crc)
                if out:
                    yield out
        except (zlib.error, OSError, EOFError, lzma.LZMAError) as err:
            raise _bad(self.path, entry.name, f"cannot be decompressed: {err}") from err
        if left:
            raise _bad(
                self.path,
                entry.name,
                f"it inflates to {entry.size - left} bytes, but its headers record {entry.size}",
            )
        if decompressor.eof and (pos < end or decompressor.unused_data):
            raise _bad(self.path, entry.name, "its compressed stream ends before its payload does")
        if crc != entry.crc:
            raise _bad(self.path, entry.name, "its CRC-32 does not match its bytes")

    def stored(self, entry: _Entry) -> Iterator[bytes]:
        """Yields the bytes of the stored (uncompressed) ``entry``, at most 1 MiB at a time.

        They are read from the file, not the mapping; a file cut short ends the bytes early,
        so that the caller tells a truncated payload by their count or their CRC-32.
        """
        with open(self.path, "rb") as handle:
            handle.seek(entry.offset)
            left = entry.size
            while left:
                chunk = handle.read(min(left, _CHUNK))
                if not chunk:
                    return
                yield chunk
                left -= len(chunk)

    def check_crc(self, name: str) -> bool:
        """True when the CRC-32 of entry ``name`` matches its bytes (read in chunks)."""
        entry = self.files[name]
        if entry.method != zipfile.ZIP_STORED:
            try:
                for _ in self.inflated(entry):
                    pass
            except ArchiveFormatError:
                return False
            return True
        return _crc_of(self, entry) == entry.crc

    def refuse_writes(self, name: str, why: str) -> None:
        """Raises ``ArchiveNotWritableError`` for entry ``name``: the archive was opened ``mode="r+"``.

        Raises:
            ArchiveNotWritableError: always, naming the archive, the entry and ``why``.
        """
        msg = (
            f"cannot open {self.path!r} with mode='r+': its entry {name!r} {why}, and writes "
            "into a copy never reach the file; load it with mode='r' (or None), or save the "
            "archive again uncompressed (nested tensors are never written in place)"
        )
        raise ArchiveNotWritableError(msg)

    def meta(self, folder: str) -> dict:
        """The parsed ``meta.json`` of ``folder`` (``""``: the root), CRC checked.

        Raises:
            FileNotFoundError: if the archive has no such ``meta.json``.
            ValueError: if it is not a JSON object, or its CRC does not match.
        """
        name = f"{folder}/{fmt.META_FILE}" if folder else fmt.META_FILE
        if name not in self.files:
            msg = f"cannot load {self.label(folder)!r}: the archive has no entry {name!r}"
            raise MemmapNotFoundError(msg)
        return fmt.parse_meta(self.label(name), self.read(name))

    def flat(self, name: str, dtype: torch.dtype, numel: int) -> torch.Tensor:
        """The payload of entry ``name`` as ``numel`` items of ``dtype``: a view when aligned.

        Raises:
            ArchiveFormatError: if the entry's size is not ``numel`` items.
        """
        return self.tensor(name, dtype, torch.Size([numel]))

    def tensor(self, name: str, dtype: torch.dtype, shape: torch.Size) -> torch.Tensor:
        """The payload of entry ``name`` as a C-contiguous tensor: a view of the mapping when aligned.

        Raises:
            ArchiveFormatError: if the entry's size is not what ``shape`` and ``dtype`` need.
        """
        entry = self.files[name]
        itemsize = dtype.itemsize
        numel = shape.numel()
        if entry.size != numel * itemsize:
            raise _bad(
                self.path,
                name,
                f"holds {entry.size} bytes, but its record needs {numel * itemsize} "
                f"({list(shape)} of {dtype})",
            )
        if entry.method == zipfile.ZIP_STORED and not entry.offset % itemsize:
            whole = self._views.get(dtype)
            if whole is None:
                whole = self._views[dtype] = self.storage[: self.size - self.size % itemsize].view(
                    dtype
                )
            return whole.as_strided(shape, contiguous_strides(shape), entry.offset // itemsize)
        if self.writable:
            what = (
                "is compressed"
                if entry.method != zipfile.ZIP_STORED
                else f"is not aligned (its data starts at byte {entry.offset}, not a multiple "
                f"of {itemsize}, as an external zip tool writes it)"
            )
            self.refuse_writes(name, f"{what}, so it is copied when read")
        if entry.method == zipfile.ZIP_STORED:
            # A view must start at a multiple of the itemsize: this one is copied.
            flat = self.storage[entry.offset : entry.offset + entry.size].clone()
        else:
            flat = torch.empty(entry.size, dtype=torch.uint8)
            view = memoryview(flat.numpy())
            at = 0
            for chunk in self.inflated(entry):  # straight into the tensor, chunk by chunk
                view[at : at + len(chunk)] = chunk
                at += len(chunk)
        return flat.view(dtype).view(shape)


class _Inflate:
    """``zlib``'s raw deflate with the interface of ``bz2``'s and ``lzma``'s decompressors."""

    __slots__ = ("_zlib",)

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(-15)

    @property
    def eof(self) -> bool:
        return self._zlib.eof

    @property
    def needs_input(self) -> bool:
        return not self._zlib.unconsumed_tail

    @property
    def unused_data(self) -> bytes:
        return self._zlib.unused_data

    def decompress(self, data, max_length: int) -> bytes:
        tail = self._zlib.unconsumed_tail  # the input the last call left for this one
        if tail:
            data = tail + bytes(data) if data else tail
        return self._zlib.decompress(data, max_length)


def _decompressor(path: str, entry: _Entry, buf, pos: int, end: int) -> tuple:
    """``(decompressor, pos)``: a decompressor of ``entry``'s stream and where its data starts.

    Raises:
        ArchiveFormatError: for a method this reader does not inflate, or a damaged
            LZMA header.
    """
    if entry.method == zipfile.ZIP_DEFLATED:
        return _Inflate(), pos
    if entry.method == zipfile.ZIP_BZIP2:
        return bz2.BZ2Decompressor(), pos
    if entry.method == zipfile.ZIP_LZMA:
        # APPNOTE 5.8.8: a version (2 bytes), the size of the properties (2), then the
        # LZMA1 properties: lc, lp and pb in one byte, the dictionary size in four.
        if end - pos < 4:
            raise _bad(path, entry.name, "its LZMA header is truncated")
        size = struct.unpack_from("<H", buf, pos + 2)[0]
        if size != 5 or end - pos < 4 + size:
            raise _bad(path, entry.name, f"its LZMA header is damaged (properties of {size} bytes)")
        first, dict_size = struct.unpack_from("<BI", buf, pos + 4)
        if first >= 9 * 5 * 5:
            raise _bad(path, entry.name, f"its LZMA properties are damaged (byte {first})")
        pb, rest = divmod(first, 45)
        lp, lc = divmod(rest, 9)
        props = {"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp, "pb": pb}
        try:
            decompressor = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[props])
        except (lzma.LZMAError, ValueError) as err:
            raise _bad(path, entry.name, f"its LZMA properties are damaged ({err})") from err
        return decompressor, pos + 4 + size
    raise _bad(
        path,
        entry.name,
        f"it uses compression method {entry.method}, which tensordict does not read",
    )


# ====================================================================== loading
def load_archive(
    path: str | os.PathLike, options: Options, *, writable: bool = False, subpath: tuple = ()
) -> TensorCollection:
    """Loads the tree stored in the archive ``path`` (see the module docstring).

    Args:
        path (str or os.PathLike): the archive.
        options (tensordict.memmap._io.Options): key encoding, unpickling, device.

    Keyword Args:
        writable (bool, optional): map it shared, so that writes reach the file.
        subpath (tuple of str, optional): the keys of the nested tensordict to load
            (see :func:`~tensordict.memmap.format.subpath_parts`). Defaults to the root.

    Returns:
        The loaded tensordict, of the class the archive records.

    Raises:
        ArchiveFormatError: if the archive breaks the format (naming the entry).
        FileNotFoundError: if the archive or its root ``meta.json`` is missing.
        ValueError: if ``subpath`` names no sub-tensordict.
    """
    with ArchiveReader(path, writable=writable) as reader:
        return _load_level(reader, _subpath_folder(reader, subpath, options.robust_key), options)


def _subpath_folder(reader: ArchiveReader, subpath: tuple, robust_key) -> str:
    """The folder (in the archive) of the nested tensordict at the keys ``subpath``."""
    folder = ""
    for key in subpath:
        meta = reader.meta(folder)
        kind = fmt.level_kind(reader.label(folder), meta)
        if kind == fmt.KIND_TENSORCLASS:
            folder = _join(folder, fmt.TENSORCLASS_DATA)
            meta = reader.meta(folder)
            kind = fmt.level_kind(reader.label(folder), meta)
        names = reader.children[folder]
        if kind == fmt.KIND_LAZY:
            dirs = [n for n in names if _join(folder, n) in reader.dirs]
            folder = _join(folder, fmt.member_step(reader.label(folder), dirs, key, subpath))
            continue
        if kind != fmt.KIND_TD:
            msg = f"subpath {subpath!r}: {reader.label(folder)!r} holds a {kind}, whose entries no key reaches"
            raise InvalidArgumentError(msg)
        fmt.check_subpath_step(reader.label(folder), meta, key, subpath)
        folder = _join(
            folder, fmt.entry_name(reader.label(folder), key, "", robust_key, names.__contains__)
        )
    return folder


def _load_level(reader: ArchiveReader, folder: str, options):
    if options.depth >= fmt.MAX_DEPTH:
        msg = f"{reader.label(folder)!r} is nested more than {fmt.MAX_DEPTH} levels deep"
        raise MemmapFormatError(msg)
    options.depth += 1
    try:
        return _load_kind(reader, folder, reader.meta(folder), options)
    finally:
        options.depth -= 1


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _load_kind(reader: ArchiveReader, folder: str, meta: dict, options):
    where = reader.label(folder)
    kind = fmt.level_kind(where, meta)
    if kind == fmt.KIND_TD:
        return _load_td(reader, folder, meta, options)
    if kind == fmt.KIND_NONTENSOR:
        return _load_nontensor(reader, folder, meta, options)
    if kind == fmt.KIND_LAZY:
        stack_dim, stack_dim_name = fmt.parse_lazy_level(where, meta)
        names = [n for n in reader.children[folder] if _join(folder, n) in reader.dirs]
        numbers = fmt.member_numbers(where, names)
        members = [_load_level(reader, _join(folder, str(n)), options) for n in numbers]
        return BUILDERS[fmt.KIND_LAZY](where, members, stack_dim, stack_dim_name)
    if kind == fmt.KIND_NONTENSOR_STACK:
        return _load_nontensor_stack(reader, folder, meta, options)
    type_str = meta.get("_type")
    build = BUILDERS.get(type_str)
    if build is None:
        msg = (
            f"cannot load {where!r}: its class {fmt.tensorclass_name(type_str)!r} is not "
            "registered. Import the module that defines it first (loading never imports code)"
        )
        raise MemmapFormatError(msg)
    inner = _join(folder, fmt.TENSORCLASS_DATA)
    if inner not in reader.dirs:
        msg = f"cannot load {where!r}: a tensorclass keeps its data in {fmt.TENSORCLASS_DATA}/, which is missing"
        raise MemmapNotFoundError(msg)
    return build(reader.label(inner), _load_level(reader, inner, options))


def _load_td(reader: ArchiveReader, folder: str, meta: dict, options):
    where = reader.label(folder)
    batch_size, device = fmt.parse_td_level(where, meta)
    dim_names = fmt.parse_names(where, meta, batch_size)
    if options.device is not None:
        device = options.device
    names = reader.children[folder]
    robust_key = options.robust_key
    n = len(batch_size)
    data: dict = {}
    for key, record in fmt.entries(meta):
        sub = fmt.parse_record(where, key, record)
        if sub is not None:
            name = fmt.entry_name(where, key, "", robust_key, names.__contains__)
            child = _join(folder, name)
            if _join(child, fmt.META_FILE) not in reader.files:
                continue  # a missing sub-folder: the entry is dropped, as in a folder
            value = _load_level(reader, child, options)
            if isinstance(value, NonTensorDataBase):
                data[key] = value if value.batch_size == batch_size else value._with(batch_size)
            else:
                fmt.check_batch_prefix(where, key, value.batch_size, batch_size)
                data[key] = value
            continue
        dtype, shape, nested = fmt.parse_tensor_record(where, key, record)
        name = fmt.entry_name(where, key, fmt.MEMMAP_SUFFIX, robust_key, names.__contains__)
        entry = _join(folder, name)
        if nested:
            if entry not in reader.files:
                continue
            data[key] = _nested(reader, folder, key, entry, dtype, shape, robust_key)
            continue
        if n and shape[:n] != batch_size:
            fmt.check_batch_prefix(where, key, shape, batch_size)
        if entry not in reader.files:
            if fmt.nbytes(shape, dtype) == 0:
                data[key] = torch.empty(shape, dtype=dtype)  # the format keeps no file for it
            continue
        data[key] = reader.tensor(entry, dtype, shape)
    return BUILDERS[fmt.KIND_TD](data, batch_size, device, dim_names)


def _nested(reader: ArchiveReader, folder: str, key, entry: str, dtype, shape, robust_key):
    names = reader.children[folder]
    where = reader.label(folder)
    shape_name = fmt.entry_name(where, key, fmt.SHAPE_SUFFIX, robust_key, names.__contains__)
    shape_entry = _join(folder, shape_name)
    if shape_entry not in reader.files:
        msg = f"{fmt.meta_path(where)!r}, entry {key!r}: the nested tensor's shape entry {shape_entry!r} is missing"
        raise ArchiveFormatError(msg)
    if reader.writable:
        reader.refuse_writes(entry, "is a nested tensor, so it is copied when read")
    sizes = reader.flat(shape_entry, torch.int64, shape.numel()).view(shape).clone()
    numel = int(sizes.prod(-1).sum()) if sizes.numel() else 0
    # The nested view addresses its buffer's storage from the start: the buffer is a copy.
    return _nested_view(reader.flat(entry, dtype, numel).clone(), sizes)


def _present(reader: ArchiveReader):
    prefix = reader.path + os.sep

    def present(path: str) -> bool:
        return path.startswith(prefix) and path[len(prefix) :] in reader.files

    return present


def _unpickle(reader: ArchiveReader, path: str, options):
    name = path[len(reader.path) + 1 :]
    if not options.allow_pickle:
        msg = (
            f"{path!r} holds a pickled value; loading never unpickles unless asked: pass "
            "allow_pickle=True if you trust this archive"
        )
        raise PickleRefusedError(msg)
    return pickle.loads(reader.read(name))  # noqa: S301 - the caller allowed it


def _load_nontensor(reader: ArchiveReader, folder: str, meta: dict, options):
    where = reader.label(folder)
    how, value = fmt.parse_nontensor(where, meta, _present(reader))
    cls = MetaData if meta.get("_type") == fmt.METADATA_TYPE else NonTensorData
    if how == "pickle":
        content = _unpickle(reader, value, options)
        if type(content) is not dict or "data" not in content:
            msg = f"{value!r} must hold a pickled dict with a 'data' item, got {type(content).__name__}"
            raise MemmapFormatError(msg)
        value = content["data"]
    return cls(value, metadata=meta.get("_metadata"))


def _load_nontensor_stack(reader: ArchiveReader, folder: str, meta: dict, options):
    where = reader.label(folder)
    data, pickled = fmt.parse_nontensor_stack(where, meta, _present(reader))
    if pickled is not None:
        data = _unpickle(reader, pickled, options)
        if type(data) is not list:
            msg = f"{pickled!r} must hold a pickled list of values, got {type(data).__name__}"
            raise MemmapFormatError(msg)
    device = meta.get("device") if options.device is None else options.device
    return BUILDERS[fmt.KIND_NONTENSOR_STACK](data, device=device)


# ====================================================================== writing
def _folder_files(root: str) -> list:
    """The files of a memory-mapped folder, ``meta.json`` first at each level, sorted.

    The format's own lock and temporary files are left out; a symbolic link is refused.
    """
    out = []
    pending = [""]
    while pending:
        rel = pending.pop(0)
        folder = os.path.join(root, rel) if rel else root
        names = sorted(os.listdir(folder))
        files, dirs = [], []
        for name in names:
            if name != fmt.META_FILE and fmt.is_own_file(name):
                continue
            path = os.path.join(folder, name)
            if os.path.islink(path):
                msg = f"refusing to pack the symbolic link {path!r}"
                raise SymlinkError(msg)
            (dirs if os.path.isdir(path) else files).append(name)
        files.sort(key=lambda n: n != fmt.META_FILE)
        if rel and not files and not dirs:
            out.append((f"{rel}/", None))  # an empty folder is kept, as a folder entry
        out.extend((_join(rel, n), os.path.join(folder, n)) for n in files)
        pending[:0] = [_join(rel, n) for n in dirs]
    return out


def _write_entry(zf: zipfile.ZipFile, name: str, path: str | None, method: int, level) -> None:
    if path is None:
        info = zipfile.ZipInfo(name, date_time=_DATE)
        info.external_attr = 0o40755 << 16 | 0x10
        zf.writestr(info, b"")
        return
    size = os.path.getsize(path)
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.external_attr = 0o644 << 16
    info.file_size = size
    tensor = name.endswith(fmt.MEMMAP_SUFFIX)
    info.compress_type = method if tensor else zipfile.ZIP_STORED
    if level is not None:
        info._compresslevel = level  # zipfile reads the level of an entry from here
    align = tensor and info.compress_type == zipfile.ZIP_STORED
    if align:
        encoded = name.encode("ascii") if name.isascii() else name.encode("utf-8")
        start = zf.fp.tell() + _LOCAL.size + len(encoded) + 4 + _ZIP64_LOCAL_BLOCK
        pad = -start % ALIGNMENT
        info.extra = struct.pack("<HH", PAD_EXTRA_ID, pad) + bytes(pad)
    with zf.open(info, "w", force_zip64=tensor) as out, open(path, "rb") as source:
        if align and zf.fp.tell() % ALIGNMENT:
            msg = f"internal error: the payload of {name!r} is not aligned (zipfile changed its layout)"
            raise RuntimeError(msg)
        while chunk := source.read(_CHUNK):
            out.write(chunk)


def _replace_atomically(target: str, write) -> None:
    """Runs ``write(temporary)`` on a fresh file beside ``target``, then renames it over.

    The fresh file is created as any new file (the umask applies); replacing an
    existing archive keeps that archive's permissions.
    """
    # the format's temporary name: a dead writer's leftover is removed by the next writer
    tmp = _fs.temporary_name(target)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
    try:
        write(tmp)
        if os.path.exists(target):
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _check_target(source: str | None, target: str, what: str) -> None:
    if os.path.isdir(target):
        msg = f"cannot write the archive {target!r}: a folder is there; remove it or pick another name"
        raise ArchiveTargetError(msg)
    if source is not None:
        real_source, real_target = os.path.realpath(source), os.path.realpath(target)
        if real_target == real_source or real_target.startswith(real_source + os.sep):
            msg = (
                f"cannot {what} {source!r} into {target!r}: the archive must lie outside the folder"
            )
            raise ArchiveTargetError(msg)


def pack_memmap(
    prefix: str | os.PathLike,
    archive_path: str | os.PathLike,
    *,
    compression: str | int | None = None,
    compresslevel: int | None = None,
) -> pathlib.Path:
    """Packs a memory-mapped folder into one ``.tdz`` archive file and returns its path.

    Each file of the folder becomes an entry named by its relative path, so that
    :func:`unpack_memmap` (or any unzip tool) gives the folder back. Tensor payloads
    are stored uncompressed at offsets that are multiples of 64 bytes, so that
    :func:`~tensordict.load_memmap` maps the archive once and each leaf is a view of
    that mapping. The archive is written to a temporary file beside ``archive_path``
    and renamed over it: a crash leaves the old archive or the new one.

    Args:
        prefix (str or path): a folder written by :meth:`~tensordict.TensorDictBase.memmap`.
        archive_path (str or path): the archive to write, outside ``prefix``; an
            existing file there is replaced.

    Keyword Args:
        compression (str or int, optional): how tensor payloads are compressed:
            ``"stored"``, ``"deflate"``, ``"bzip2"``, ``"lzma"`` or a :mod:`zipfile`
            constant. A compressed leaf is decompressed into memory when loaded
            instead of being mapped. Defaults to ``None`` (stored).
        compresslevel (int, optional): the compression level passed to :mod:`zipfile`.
            Defaults to ``None`` (the method's default).

    Returns:
        pathlib.Path: the archive's path.

    Raises:
        FileNotFoundError: if ``prefix`` has no ``meta.json``.
        ValueError: if ``archive_path`` is a folder or lies inside ``prefix``, the
            compression is unknown, or the folder holds a symbolic link.

    Examples:
        >>> import pathlib, tempfile, torch
        >>> from tensordict import TensorDict, load_memmap, pack_memmap
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = TensorDict(a=torch.arange(3)).memmap(f"{tmp}/folder")
        ...     archive = pack_memmap(f"{tmp}/folder", f"{tmp}/td.tdz")
        ...     print(archive.name, load_memmap(archive)["a"].tolist())
        td.tdz [0, 1, 2]
    """
    source = os.path.abspath(os.fspath(prefix))
    target = os.path.abspath(os.fspath(archive_path))
    if not os.path.isfile(fmt.meta_path(source)):
        msg = f"cannot pack {source!r}: it holds no meta.json; is it a memory-mapped tensordict folder?"
        raise MemmapNotFoundError(msg)
    _check_target(source, target, "pack")
    method = _compression(compression)
    files = _folder_files(source)
    target = os.path.realpath(
        target
    )  # a symbolic link at the target: the file it names is replaced

    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as zf:
            for name, path in files:
                _write_entry(zf, name, path, method, compresslevel)

    _replace_atomically(target, write)
    return pathlib.Path(os.fspath(archive_path))


def write_archive(
    obj: TensorCollection,
    archive_path: str | os.PathLike,
    *,
    like: bool,
    robust_key: bool | None,
    num_threads: int,
    compression: str | int | None,
    existsok: bool,
) -> None:
    """Writes the tree ``obj`` as the archive ``archive_path`` (staged as a folder beside it).

    The staging folder and the archive's temporary file carry the format's temporary
    names (``%tmp.<host>.<pid>.<random>``), so that what a killed writer left beside
    the archive is removed by the next writer there (see
    :func:`~tensordict.memmap._fs.remove_stale_temporaries`).

    Raises:
        FileExistsError: with ``existsok=False``, if a file is at ``archive_path``.
        ValueError: if a folder is at ``archive_path``, or a key cannot be stored.
    """
    target = os.path.abspath(os.fspath(archive_path))
    _check_target(None, target, "write")
    if not existsok and os.path.lexists(target):
        msg = f"cannot write the archive {target!r}: a file is there and existsok=False"
        raise ExistingFileError(msg)
    _compression(compression)  # refused before anything is written
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    _fs.remove_stale_temporaries(parent)  # what killed writers left: staging folders, archives
    stage = _fs.temporary_name(target)
    os.mkdir(stage)
    try:
        tree = os.path.join(stage, "tree")
        write = obj.memmap_like if like else obj.memmap
        write(tree, num_threads=num_threads, robust_key=robust_key)
        pack_memmap(tree, target, compression=compression)
    except OSError as err:
        if err.errno is None:
            raise
        msg = (
            f"cannot write the archive {target!r}: {os.strerror(err.errno)} (while staging it "
            f"in {stage!r}: {err}; nothing was kept)"
        )
        raise OSError(err.errno, msg) from err
    finally:
        shutil.rmtree(stage, ignore_errors=True)


# ====================================================================== module functions
def is_memmap_archive(path: str | os.PathLike) -> bool:
    """Tells whether ``path`` is a memory-mapped tensordict archive.

    An archive is a zip file with a ``meta.json`` entry at its root, as
    :func:`pack_memmap` and ``save("x.tdz")`` write. A folder, a missing path or
    any other file gives False; nothing is raised.

    Args:
        path (str or path): the path to look at.

    Returns:
        bool: True for an archive.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict, is_memmap_archive
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = TensorDict(a=torch.zeros(2)).save(f"{tmp}/td.tdz")
        ...     _ = TensorDict(a=torch.zeros(2)).save(f"{tmp}/td")
        ...     print(is_memmap_archive(f"{tmp}/td.tdz"), is_memmap_archive(f"{tmp}/td"))
        True False
    """
    try:
        if not os.path.isfile(path) or not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as zf:
            return any(info.orig_filename == fmt.META_FILE for info in zf.infolist())
    except (OSError, ValueError, zipfile.BadZipFile):
        return False


def unpack_memmap(archive_path: str | os.PathLike, prefix: str | os.PathLike) -> pathlib.Path:
    """Extracts an archive into the folder ``prefix`` and returns the folder's path.

    The inverse of :func:`pack_memmap`: the folder holds one file per entry and
    :func:`~tensordict.load_memmap` reads it. Every entry's name and CRC-32 are
    checked as it is written; files already in ``prefix`` with an entry's name are
    replaced. The folder is created if needed.

    Args:
        archive_path (str or path): the archive.
        prefix (str or path): the folder to extract into.

    Returns:
        pathlib.Path: the folder's path.

    Raises:
        ValueError: if ``archive_path`` is not an archive (see
            :func:`is_memmap_archive`), or an entry is damaged (a name leaving the
            folder, a bad CRC), naming the entry.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict, load_memmap, unpack_memmap
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = TensorDict(a=torch.arange(2)).save(f"{tmp}/td.tdz")
        ...     folder = unpack_memmap(f"{tmp}/td.tdz", f"{tmp}/td")
        ...     print(load_memmap(folder)["a"].tolist())
        [0, 1]
    """
    source = os.path.abspath(os.fspath(archive_path))
    if not is_memmap_archive(source):
        raise _bad(
            source, None, "not a memory-mapped tensordict archive (a zip with a root meta.json)"
        )
    root = os.path.abspath(os.fspath(prefix))
    with ArchiveReader(source) as reader:
        for name in sorted(reader.dirs - {""}):
            os.makedirs(os.path.join(root, *name.split("/")), exist_ok=True)
        os.makedirs(root, exist_ok=True)
        for name, entry in reader.files.items():
            path = os.path.join(root, *name.split("/"))
            if os.path.islink(path):
                msg = f"refusing to write through the symbolic link {path!r}"
                raise SymlinkError(msg)
            _extract(reader, entry, path)
    return pathlib.Path(os.fspath(prefix))


def _extract(reader: ArchiveReader, entry: _Entry, path: str) -> None:
    """Writes ``entry`` to ``path`` chunk by chunk (a compressed one as it inflates), CRC checked.

    On any failure the partly written file is removed.
    """
    reader.check_meta_size(entry)
    try:
        with open(path, "wb") as out:
            if entry.method != zipfile.ZIP_STORED:
                for chunk in reader.inflated(entry):
                    out.write(chunk)
                return
            crc = 0
            for chunk in reader.stored(entry):
                crc = zlib.crc32(chunk, crc)
                out.write(chunk)
        if crc != entry.crc:
            raise _bad(reader.path, entry.name, "its CRC-32 does not match its bytes")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise


def refresh_archive_checksums(archive_path: str | os.PathLike) -> pathlib.Path:
    """Recomputes the CRC-32 of every uncompressed entry of an archive, in place.

    Writes into a tensordict loaded writable from an archive (``memmap_like`` with a
    ``.tdz`` path) reach the archive's bytes but not the CRC-32 the zip format keeps
    for each entry; loading never checks those of tensor payloads, but ``unzip``,
    :mod:`zipfile` and :func:`unpack_memmap` do. Call this before giving the
    archive to them. Both copies of each CRC (the local header, or its data
    descriptor, and the central directory) are rewritten.

    Args:
        archive_path (str or path): the archive, changed in place.

    Returns:
        pathlib.Path: the archive's path.

    Raises:
        ValueError: if ``archive_path`` is not an archive or its headers are damaged.

    Examples:
        >>> import tempfile, zipfile, torch
        >>> from tensordict import TensorDict, refresh_archive_checksums
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     buffer = TensorDict(a=torch.zeros(3)).memmap_like(f"{tmp}/td.tdz")
        ...     _ = buffer["a"].fill_(1)
        ...     print(zipfile.ZipFile(f"{tmp}/td.tdz").testzip())
        ...     _ = refresh_archive_checksums(f"{tmp}/td.tdz")
        ...     print(zipfile.ZipFile(f"{tmp}/td.tdz").testzip())
        a.memmap
        None
    """
    path = os.path.abspath(os.fspath(archive_path))
    if not is_memmap_archive(path):
        raise _bad(
            path, None, "not a memory-mapped tensordict archive (a zip with a root meta.json)"
        )
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        central = zf.start_dir
    with ArchiveReader(path) as reader:
        crcs = {}
        for name, entry in reader.files.items():
            if entry.method == zipfile.ZIP_STORED:
                crcs[name] = _crc_of(reader, entry)
    with open(path, "r+b") as handle:
        for info in infos:
            crc = crcs.get(info.orig_filename)
            if crc is None:
                continue
            entry = reader.files[info.orig_filename]
            if info.flag_bits & 0x8:  # the CRC is in the data descriptor after the payload
                handle.seek(entry.offset + entry.packed)
                at = entry.offset + entry.packed + (4 if handle.read(4) == b"PK\x07\x08" else 0)
            else:
                at = info.header_offset + 14
            handle.seek(at)
            handle.write(struct.pack("<I", crc))
        at = central
        for _ in infos:
            handle.seek(at)
            record = handle.read(46)
            if record[:4] != _CENTRAL_SIG:
                raise _bad(path, None, f"its central directory is damaged at byte {at}")
            (flags,) = struct.unpack_from("<H", record, 8)
            name_len, extra_len, comment_len = struct.unpack_from("<3H", record, 28)
            name = handle.read(name_len).decode("utf-8" if flags & 0x800 else "cp437")
            crc = crcs.get(name)
            if crc is not None:
                handle.seek(at + 16)
                handle.write(struct.pack("<I", crc))
            at += 46 + name_len + extra_len + comment_len
    return pathlib.Path(os.fspath(archive_path))


def _crc_of(reader: ArchiveReader, entry: _Entry) -> int:
    crc, left = 0, entry.size
    for chunk in reader.stored(entry):
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
    if left:
        raise _bad(reader.path, entry.name, "its payload is truncated")
    return crc


def scan_problems(path: str | os.PathLike) -> list:
    """The problems of an archive's zip layer, as ``(entry path, message)`` pairs, for ``verify``.

    Checks every entry's CRC-32 and reports tensor payloads that are not aligned
    (they load as copies). Problems of the index itself raise (see :class:`ArchiveReader`).
    """
    problems = []
    with ArchiveReader(path) as reader:
        for name in reader.files:
            if not reader.check_crc(name):
                problems.append((reader.label(name), "its CRC-32 does not match its bytes"))
    return problems


def stage_for_scan(path: str | os.PathLike, folder: str) -> None:
    """Lays out the archive ``path`` in ``folder`` for the folder scanner of ``tensordict info``.

    Small files (``meta.json``, pickles, shape files) are extracted; each tensor
    payload becomes a sparse file of its size, so nothing big is read or written.
    """
    with ArchiveReader(path) as reader:
        for name in sorted(reader.dirs - {""}):
            os.makedirs(os.path.join(folder, *name.split("/")), exist_ok=True)
        for name, entry in reader.files.items():
            target = os.path.join(folder, *name.split("/"))
            if name.endswith(fmt.MEMMAP_SUFFIX) and not name.endswith(fmt.SHAPE_SUFFIX):
                with open(target, "wb") as out:
                    out.truncate(entry.size)
            else:
                with open(target, "wb") as out:
                    out.write(reader.read(name, check=False))
