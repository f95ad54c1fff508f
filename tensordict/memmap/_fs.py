"""The file-system machinery under format v1: temporaries, atomic replaces, the lock, the one writer.

:mod:`tensordict.memmap.format` says what a folder holds; this module does the
changing of it safely, as that specification requires:

* temporary names (``%tmp.<host>.<pid>.<random>``, ``meta%tmp.`` for ``meta.json``)
  and the removal of those a dead writer of this host left behind
  (:func:`temporary_name`, :func:`remove_stale_temporaries`);
* ``meta.json`` written to a temporary file and renamed over (:func:`write_meta`);
* two folders swapped in one step with Linux ``renameat2`` (:func:`exchange`,
  :func:`can_exchange`);
* the exclusive ``flock`` on ``meta%lock`` held for each read-change-write of a
  folder (:func:`locked`);
* the claim of the one writer of a tree, ``meta%writer`` (:func:`claim_writer`,
  :func:`release_writer`, checked by :func:`locked` through :func:`check_writer`).

Readers use none of it: reading a folder never writes, locks or claims.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import stat as _stat
import uuid
from collections.abc import Iterable, Iterator

from tensordict.errors import ForeignWriterError, MemmapNotFoundError
from tensordict.memmap.format import (
    DATA_TMP_PREFIX,
    LOCK_FILE,
    MAX_DEPTH,
    META_FILE,
    TMP_PREFIX,
    WRITER_FILE,
    dumps_record,
    meta_path,
)


# ---------------------------------------------------------------------- temporaries
def _host_tag() -> str:
    """A short tag of this host (its name and process-id namespace), for temporary names.

    Process ids mean something only on one host and in one pid namespace (containers
    on one host may share a file system), so both go into the tag.
    """
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    host = f"{socket.gethostname()}/{namespace}"
    return hashlib.sha256(host.encode("utf-8", "surrogatepass")).hexdigest()[:8]


HOST_TAG = _host_tag()


def temporary_name(path: str) -> str:
    """A fresh temporary path in the folder of ``path``: ``%tmp.<host>.<pid>.<random>``.

    ``<host>`` is :data:`HOST_TAG` and ``<pid>`` the writer's process id, so that
    :func:`remove_stale_temporaries` can tell a dead writer's leftovers from a live
    writer's work. No encoded key starts with ``%t``, so it never names an entry,
    and it is short whatever the length of ``path``'s name; readers ignore it.
    """
    return os.path.join(
        os.path.dirname(path),
        f"{DATA_TMP_PREFIX}{HOST_TAG}.{os.getpid()}.{os.urandom(6).hex()}",
    )


_TEMPORARY = re.compile(r"^(?:meta)?%tmp\.([0-9a-f]{8})\.([0-9]+)\.[0-9a-f]+$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's live process (or no such pid can be ours)
    return True


def stale_temporaries(folder: str) -> list:
    """The names in ``folder`` that :func:`remove_stale_temporaries` would remove now."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith((DATA_TMP_PREFIX, TMP_PREFIX))]
    except OSError:
        return []
    stale = []
    me = os.getpid()
    for name in names:
        match = _TEMPORARY.match(name)
        if match is None or match.group(1) != HOST_TAG:
            continue
        pid = int(match.group(2))
        if pid != me and not _pid_alive(pid):
            stale.append(name)
    return stale


def remove_stale_temporaries(folder: str) -> list:
    """Removes the temporary files and staging folders that dead writers left in ``folder``.

    Only names this module writes (``%tmp.<host>.<pid>.*`` and ``meta%tmp.<host>.<pid>.*``)
    are touched, and only when ``<host>`` is this host and no process ``<pid>`` runs
    here: a live writer's work, another host's (on a shared file system) and names of
    older writers without a host tag are left alone. Call it holding the folder's lock.

    Returns:
        The paths removed.
    """
    removed = []
    for name in stale_temporaries(folder):
        path = os.path.join(folder, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            continue  # another cleaner was first
        removed.append(path)
    return removed


# ---------------------------------------------------------------------- meta.json, replaced atomically
def write_meta(folder: str, members: Iterable[str]) -> os.stat_result:
    """Atomically replaces ``meta.json`` of ``folder`` with the given serialised members.

    Args:
        folder (str): the folder.
        members (iterable of str): ``"key": value`` strings (see :func:`dumps_record`).

    Returns:
        The ``os.stat_result`` of the new ``meta.json``.
    """
    text = "{" + ", ".join(members) + "}"
    tmp = os.path.join(folder, f"{TMP_PREFIX}{HOST_TAG}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            with os.fdopen(fd, "wb", closefd=False) as handle:
                handle.write(text.encode())
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, meta_path(folder))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return stat


def write_meta_dict(folder: str, meta: dict) -> os.stat_result:
    """Atomically replaces ``meta.json`` of ``folder`` with ``meta``."""
    return write_meta(folder, [dumps_record(k, v) for k, v in meta.items()])


# ---------------------------------------------------------------------- exchanging folders
_RENAME_EXCHANGE = 2


def _renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return function


_RENAMEAT2 = _renameat2()
_AT_FDCWD = -100


def exchange(a: str, b: str) -> None:
    """Swaps the folders ``a`` and ``b`` in one atomic step (Linux ``renameat2``).

    Raises:
        OSError: if the file system cannot (``EINVAL``), or either path is missing.
    """
    if _RENAMEAT2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available", a)
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), a, None, b)


@functools.lru_cache(maxsize=64)
def can_exchange(parent: str) -> bool:
    """True when folders in ``parent`` can be exchanged atomically (checked once per parent)."""
    if _RENAMEAT2 is None:
        return False
    try:
        a = temporary_name(os.path.join(parent, "x"))
        b = temporary_name(os.path.join(parent, "y"))
        os.mkdir(a)
        os.mkdir(b)
    except OSError:
        return False
    try:
        exchange(a, b)
        return True
    except OSError:
        return False
    finally:
        os.rmdir(a)
        os.rmdir(b)


# ---------------------------------------------------------------------- the folder lock
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
        check_writer(folder)
        yield
    finally:
        os.close(fd)


# ---------------------------------------------------------------------- one writer per tree
_CLAIMS: dict[str, str] = {}
"""Root folder (resolved) -> the token of this process's claim on it (inherited by forks)."""

MAX_CLAIM_BYTES = 4096  # a claim is a small JSON object; a larger file is not one


def _read_claim(path: str) -> tuple:
    """``(record, problem)`` of the claim file at ``path``.

    ``(None, None)`` when there is no claim, ``(record, None)`` for a readable claim
    (a JSON object with a non-empty string ``"token"``), and ``(None, problem)`` when
    the file is there but is no claim (empty, garbage, not a regular file): such a
    file is nobody's claim, and never this process's.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, f"it cannot be read ({err.strerror or err})"
    try:
        info = os.fstat(fd)
        if not _stat.S_ISREG(info.st_mode):
            return None, "it is not a regular file"
        raw = os.read(fd, MAX_CLAIM_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_CLAIM_BYTES:
        return None, f"it holds more than {MAX_CLAIM_BYTES} bytes"
    if not raw:
        return None, "it is empty"
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "it is not valid JSON"
    if type(record) is not dict or not isinstance(record.get("token"), str) or not record["token"]:
        return None, "it is not a JSON object with a 'token'"
    return record, None


def _claim_text(record: dict) -> str:
    return f"{record.get('host', '?')} (pid {record.get('pid', '?')})"


def _unreadable(what: str, claim: str, problem: str) -> ForeignWriterError:
    msg = (
        f"{what}: its writer claim {claim!r} is damaged ({problem}), so no process counts as "
        "its writer; replace it with claim_writer(folder, force=True)"
    )
    return ForeignWriterError(msg)


def _write_claim(path: str, text: str) -> str:
    """Writes ``text`` whole to a fresh temporary file in ``path`` and returns its path."""
    temporary = os.path.join(path, f"{TMP_PREFIX}{HOST_TAG}.{os.getpid()}.{os.urandom(6).hex()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            os.write(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        os.unlink(temporary)
        raise
    return temporary


def claim_writer(folder: str | os.PathLike, *, force: bool = False) -> None:
    """Makes this process the one writer of the memory-mapped tree at ``folder``, checked.

    Writes the claim file ``meta%writer`` in ``folder``: the claim is written whole
    to a temporary file, then linked to that name, which fails when the name exists
    (so that two processes cannot both claim, and no process ever reads a claim that
    is not complete). From then on, every change of a ``meta.json`` of the tree (new
    entries, deletions, a new ``memmap`` over it) by another process raises
    :class:`~tensordict.errors.ForeignWriterError`, checked under the folder lock;
    processes forked from the writer after the claim count as the writer. Writes
    into existing files (``td[idx] = ...``) touch no ``meta.json`` and are not
    checked. The claim holds where the advisory lock does not (a file system that
    does not honour ``flock`` across nodes), as long as ``link`` is exclusive (it is
    on NFS). A claim file that cannot be read (empty, not JSON) is nobody's claim:
    every writer is refused until it is replaced with ``force=True``.

    Args:
        folder (str or path): the root folder of a memory-mapped tree.

    Keyword Args:
        force (bool, optional): replace the claim there, whoever made it (a writer
            that died, or a damaged claim file). Defaults to ``False``.

    Raises:
        ForeignWriterError: if another writer holds the claim, or the claim file is
            damaged (naming it), and not ``force``.
        MemmapNotFoundError: if ``folder`` holds no ``meta.json``.
        OSError: if the file system cannot link files (naming the claim file).

    Examples:
        >>> root = TensorDict(a=torch.zeros(2)).memmap("claimed")
        >>> claim_writer("claimed")
        >>> sorted(os.listdir("claimed"))
        ['a.memmap', 'meta%writer', 'meta.json']
        >>> release_writer("claimed")
    """
    path = os.path.realpath(os.fspath(folder))
    if not os.path.isfile(meta_path(path)):
        msg = f"cannot claim {path!r}: it holds no {META_FILE} (write the tree first)"
        raise MemmapNotFoundError(msg)
    claim = os.path.join(path, WRITER_FILE)
    token = uuid.uuid4().hex
    record = {"host": socket.gethostname(), "pid": os.getpid(), "token": token}
    temporary = _write_claim(path, json.dumps(record))
    try:
        if force:
            os.replace(temporary, claim)
        elif not _link_claim(path, temporary, claim):
            return  # the claim there is this process's own
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    _CLAIMS[path] = token


def _link_claim(path: str, temporary: str, claim: str) -> bool:
    """Links the complete claim ``temporary`` to ``claim``; False when the claim there is ours.

    Raises:
        ForeignWriterError: if another process's claim, or a damaged one, is there.
    """
    for _ in range(8):  # a claim released between the link and the read: link again
        try:
            os.link(temporary, claim, follow_symlinks=False)
            return True
        except FileExistsError:
            other, problem = _read_claim(claim)
        except OSError as err:
            msg = f"cannot claim {path!r}: linking the claim file {claim!r} failed: {err.strerror}"
            raise OSError(err.errno, msg) from err
        if problem is not None:
            raise _unreadable(f"cannot claim {path!r}", claim, problem)
        if other is not None:
            if other["token"] == _CLAIMS.get(path):
                return False
            msg = (
                f"cannot claim {path!r}: {_claim_text(other)} is its writer; "
                "pass force=True to take over a claim its writer left behind"
            )
            raise ForeignWriterError(msg)
    msg = f"cannot claim {path!r}: other processes keep claiming and releasing it"
    raise ForeignWriterError(msg)


def release_writer(folder: str | os.PathLike) -> None:
    """Removes this process's claim on the tree at ``folder`` (see :func:`claim_writer`).

    Args:
        folder (str or path): the root folder the claim was made on.

    Raises:
        ForeignWriterError: if another writer holds the claim, or the claim file is
            damaged (naming it).

    Examples:
        >>> root = TensorDict(a=torch.zeros(2)).memmap("released")
        >>> claim_writer("released")
        >>> release_writer("released")
        >>> "meta%writer" in os.listdir("released")
        False
    """
    path = os.path.realpath(os.fspath(folder))
    claim = os.path.join(path, WRITER_FILE)
    other, problem = _read_claim(claim)
    if problem is not None:
        raise _unreadable(f"cannot release {path!r}", claim, problem)
    if other is not None and other["token"] != _CLAIMS.get(path):
        msg = f"cannot release {path!r}: {_claim_text(other)} is its writer, not this process"
        raise ForeignWriterError(msg)
    with contextlib.suppress(FileNotFoundError):
        os.remove(claim)
    _CLAIMS.pop(path, None)


def check_writer(folder: str) -> None:
    """Raises when the tree that holds ``folder`` is claimed by another writer (or its claim is damaged).

    Looks for a claim in ``folder`` and each parent that is a level of the same tree
    (holds a ``meta.json``): about two ``stat`` calls per level, on writes only.
    """
    level = os.path.realpath(folder)
    for _ in range(MAX_DEPTH + 1):
        claim = os.path.join(level, WRITER_FILE)
        if os.path.lexists(claim):
            record, problem = _read_claim(claim)
            if problem is not None:
                raise _unreadable(f"cannot change {folder!r}", claim, problem)
            if record is not None and record["token"] != _CLAIMS.get(level):
                msg = (
                    f"cannot change {folder!r}: the tree at {level!r} has one writer, "
                    f"{_claim_text(record)}, and this process is not it"
                )
                raise ForeignWriterError(msg)
            return
        parent = os.path.dirname(level)
        if parent == level or not os.path.isfile(meta_path(parent)):
            return
        level = parent


# ---------------------------------------------------------------------- stat
def same_file(stat_a: os.stat_result | None, stat_b: os.stat_result | None) -> bool:
    """True when two stat results describe the same unchanged file."""
    return (
        stat_a is not None
        and stat_b is not None
        and stat_a.st_ino == stat_b.st_ino
        and stat_a.st_dev == stat_b.st_dev
        and stat_a.st_size == stat_b.st_size
        and stat_a.st_mtime_ns == stat_b.st_mtime_ns
    )
