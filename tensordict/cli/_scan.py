"""Reads the tree of a memory-mapped folder straight from its files, and checks it.

This is what ``tensordict info`` and ``tensordict verify`` show. It needs none of
the tensordict classes (a tensorclass folder is described, never imported) and it
never writes: ``meta.json`` files are read with :func:`format.read_meta`, the
shape files of nested tensors are opened read-only, data files are only
``lstat``-ed, and no symbolic link is followed.

It reads the format with the same functions as ``load_memmap`` (the reader of
:mod:`tensordict.memmap.format`): where the loader raises on the first problem,
the scan records it and goes on, so the two agree on every folder.

The result is a tree of plain dicts (JSON-ready), one *node* per level or entry:

* every node: ``"key"`` (``None`` at the root), ``"path"`` (relative to the root,
  ``"."`` for the root), ``"kind"``, ``"bytes"`` (on disk, the whole subtree,
  ``meta.json`` files included), ``"missing"`` (listed in ``meta.json`` but its file
  or folder is missing, so loading drops it: a warning, not a problem) and
  ``"problems"`` (messages);
* ``"tensor"`` and ``"nested"``: ``"file"``, ``"dtype"``, ``"shape"`` (the record's;
  for a nested tensor the shape of its shape tensor), ``"expected_bytes"``; a
  nested tensor also has ``"shape_file"``, ``"components"`` and
  ``"component_shape"`` (one size per dimension, ``None`` where components differ);
* ``"TensorDict"``: ``"batch_size"``, ``"device"``, ``"entries"`` (child nodes);
* ``"LazyStackedTensorDict"``: ``"batch_size"``, ``"stack_dim"``, ``"entries"`` (the
  members, keys ``"0"``, ``"1"``, ...);
* ``"tensorclass"``: ``"type"`` (the class's import path), ``"batch_size"``,
  ``"entries"`` (its ``_tensordict`` level);
* ``"NonTensorData"``: ``"value"`` (the JSON value) or ``"pickled": true``;
* ``"unknown"``: a folder whose ``meta.json`` names no known class.

A scan limited to a ``depth`` (``tensordict info`` reads the top level unless asked
for more) opens the levels down to it only: a level below is a node of its
record alone, with ``"opened": false``, its ``"kind"`` as the parent's record
announces it, no ``"entries"``, no batch size and ``"bytes"`` 0 (its files are not
counted). Its folder is still checked to be there (missing: a warning) and not to
be a symbolic link. Non-tensor entries are opened at any depth: what they hold is
their value. Levels shown are described exactly as by a full scan.
"""

from __future__ import annotations

import array
import os
import stat as _stat
from collections.abc import Iterator

import torch

from tensordict.memmap import format as fmt

_VALUES = (fmt.KIND_NONTENSOR, fmt.KIND_NONTENSOR_STACK)  # opened at any depth
_KINDS = (
    fmt.KIND_TD,
    fmt.KIND_LAZY,
    fmt.KIND_TENSORCLASS,
    fmt.KIND_NONTENSOR,
    fmt.KIND_NONTENSOR_STACK,
    "unknown",
)


class FolderScan:
    """The tree of one memory-mapped folder and the problems found in it.

    A problem makes loading fail or read wrong values. A warning is an entry listed
    in ``meta.json`` whose file or folder is missing: ``load_memmap`` drops it, which
    is what a normal folder holds for an entry made from a storage without a file
    (``make_memmap_from_storage``), and what a deleted file looks like.

    Args:
        path (str or os.PathLike): the folder, as the user wrote it (problems are
            reported under this spelling).
        shown (str or os.PathLike, optional): the spelling to report instead (an
            archive whose folder was laid out at ``path``). Defaults to ``path``.
        depth (int, optional): open the levels down to this many below the root
            (1: the root's entries are listed, its sub-levels are not opened).
            Defaults to None: the whole tree, as ``verify`` needs it.

    Raises:
        FileNotFoundError: if the folder or its ``meta.json`` is missing.
        ValueError: if the root ``meta.json`` is not a readable JSON object (or is a
            symbolic link).

    Examples:
        >>> _ = TensorDict({"obs": torch.zeros(4, 3), "sub": {"x": torch.zeros(4)}}, [4]).memmap("buffer")
        >>> scan = FolderScan("buffer")
        >>> scan.tree["kind"], scan.tree["batch_size"], scan.sound
        ('TensorDict', [4], True)
        >>> top = FolderScan("buffer", depth=1)
        >>> [(node["key"], node.get("opened", True)) for node in top.tree["entries"]]
        [('obs', True), ('sub', False)]
    """

    def __init__(
        self,
        path: str | os.PathLike,
        shown: str | os.PathLike | None = None,
        *,
        depth: int | None = None,
    ) -> None:
        self.shown = os.fspath(path) if shown is None else os.fspath(shown)
        self.root = os.path.abspath(os.fspath(path))
        self.depth = depth
        self.problems: list = []  # (path as shown, message)
        self.warnings: list = []  # (path as shown, message): entries load_memmap drops
        self.unopened: list = []  # paths (relative) of the levels below the depth
        self._flagged: set = set()
        if not os.path.lexists(self.root):
            msg = f"no such folder: {self.shown!r}"
            raise FileNotFoundError(msg)
        if not os.path.isdir(self.root):
            msg = f"{self.shown!r} is not a folder"
            raise NotADirectoryError(msg)
        meta, stat = fmt.read_meta(self.root)
        self.tree = self._level(self.root, None, meta, stat)
        if os.path.islink(self.root):
            self._problem(
                self.tree, self.root, "the folder is a symbolic link (load_memmap refuses it)"
            )

    # ------------------------------------------------------------------ results
    @property
    def sound(self) -> bool:
        """True when no problem was found (warnings aside)."""
        return not self.problems

    @property
    def complete(self) -> bool:
        """True when every level was opened (no depth limit cut the tree)."""
        return not self.unopened

    def summary(self) -> dict:
        """Counts over the tree: tensors, levels, bytes, missing entries, problems, warnings.

        With a depth limit they count what the levels shown hold; ``"unopened"`` lists
        the levels below it (empty when the whole tree was read).
        """
        counts = {"tensors": 0, "non_tensors": 0, "levels": 0}
        missing = []
        for node in walk(self.tree):
            if node["missing"]:
                missing.append(node["path"])
            elif node.get("opened") is False:
                continue
            elif node["kind"] in ("tensor", "nested"):
                counts["tensors"] += 1
            elif node["kind"] == "NonTensorData":
                counts["non_tensors"] += 1
            else:
                counts["levels"] += 1
        return {
            **counts,
            "bytes": self.tree["bytes"],
            "missing": missing,
            "problems": [{"path": p, "message": m} for p, m in self.problems],
            "warnings": [{"path": p, "message": m} for p, m in self.warnings],
            "unopened": list(self.unopened),
        }

    def as_json(self) -> dict:
        """The whole scan as one JSON-ready dict: path, depth (None: all), tree and summary."""
        return {
            "path": self.shown,
            "depth": self.depth,
            "tree": self.tree,
            "summary": self.summary(),
        }

    # ------------------------------------------------------------------ helpers
    def _rel(self, path: str) -> str:
        # Paths below the root are built by joining names to it: cut the prefix (relpath
        # costs tens of microseconds a call, and a huge level has thousands of entries).
        prefix = self.root + os.sep
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            if rest and os.path.normpath(rest) == rest:
                return rest
        return os.path.relpath(path, self.root)

    def _shown(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.shown, self._rel(path)))

    def _problem(self, node: dict, path: str, message: str) -> None:
        node["problems"].append(message)
        self.problems.append((self._shown(path), message))

    def _node(self, path: str, key, kind: str) -> dict:
        node = {"key": key, "path": self._rel(path), "kind": kind, "bytes": 0, "missing": False}
        node["problems"] = []
        if kind in _KINDS and kind != "NonTensorData":
            node["entries"] = []
        return node

    def _missing(self, node: dict, path: str, what: str) -> dict:
        """Marks an entry that load_memmap drops: a warning."""
        node["missing"] = True
        message = f"{what} is listed in meta.json but missing: load_memmap drops it"
        self.warnings.append((self._shown(path), message))
        return node

    def _entry_path(self, node: dict, folder: str, suffix: str) -> str | None:
        """The path of an entry's file or folder as the loader finds it, or None (a problem)."""
        key = node["key"]
        try:
            return fmt.entry_path(folder, key, suffix)
        except fmt.MemmapFormatError as err:
            path = os.path.join(folder, fmt.file_name(key, suffix))
            self._flagged.add(path)
            self._problem(node, path, _one_line(err))
        return None

    def _check(self, node: dict, path: str, check, *args):
        """Runs one check of the reader; returns its result, or None after recording its error."""
        try:
            return check(*args)
        except fmt.MemmapFormatError as err:
            self._problem(node, path, _one_line(err))
        return None

    def _link(self, node: dict, path: str) -> bool:
        """True (and a problem) when ``path`` is a symbolic link; links are never followed."""
        if not os.path.islink(path):
            return False
        self._flagged.add(path)
        self._problem(
            node, path, "is a symbolic link (the format never creates one; load_memmap refuses it)"
        )
        return True

    def _read_meta(self, node: dict, folder: str, required: bool = False):
        """``(meta, stat)`` of a sub-folder, or None (missing, or a problem).

        A missing entry folder is dropped on load; a missing ``required`` folder (a
        lazy stack's member, a tensorclass's data) makes loading fail.
        """
        try:
            return fmt.read_meta(folder)
        except FileNotFoundError:
            what = "the folder" if not os.path.isdir(folder) else "its meta.json"
            if required:
                self._problem(
                    node, folder, f"{what} is missing, so it is not a valid TensorDict folder"
                )
            else:
                self._missing(node, folder, f"entry {node['key']!r}: {what}")
        except (ValueError, OSError) as err:
            self._problem(node, fmt.meta_path(folder), f"unreadable meta.json: {_one_line(err)}")
        return None

    def _stray_links(self, node: dict, folder: str) -> None:
        """Flags the symbolic links in ``folder`` that no record pointed at.

        A linked ``meta.json`` is left out: reading it already reported it.
        """
        try:
            with os.scandir(folder) as found:
                links = sorted(e.name for e in found if e.is_symlink())  # no stat per name
        except OSError:
            return
        for name in links:
            path = os.path.join(folder, name)
            if name != fmt.META_FILE and path not in self._flagged:
                self._link(node, path)

    def _check_version(self, node: dict, folder: str, meta: dict) -> None:
        self._check(node, fmt.meta_path(folder), fmt.check_version, folder, meta)

    # ------------------------------------------------------------------ levels
    def _depth_of(self, folder: str) -> int:
        return 0 if folder == self.root else self._rel(folder).count(os.sep) + 1

    def _below(self, path: str) -> bool:
        """True when the level at ``path`` lies below the depth limit: it is not opened."""
        return self.depth is not None and self._depth_of(path) >= self.depth

    def _mark_unopened(self, node: dict) -> dict:
        node.pop("entries", None)
        node["opened"] = False
        self.unopened.append(node["path"])
        return node

    def _unopened(self, node: dict, path: str, required: bool = False) -> dict | None:
        """``node`` marked as not opened when ``path`` lies below the depth limit, else None.

        Its folder is only checked to be there (else a warning, or a problem when it is
        ``required``, as when read) and not to be a link.
        """
        if not self._below(path):
            return None
        mode = _lstat_mode(path)
        if _stat.S_ISDIR(mode):
            return self._mark_unopened(node)
        if not (_stat.S_ISLNK(mode) and self._link(node, path)):
            if required:
                message = "the folder is missing, so it is not a valid TensorDict folder"
                self._problem(node, path, message)
            else:
                self._missing(node, path, f"entry {node['key']!r}: the folder")
        return node

    def _level(self, folder: str, key, meta: dict, stat) -> dict:
        """The node of a folder whose meta.json is parsed, dispatching on its class."""
        depth = self._depth_of(folder)
        if depth >= fmt.MAX_DEPTH:
            node = self._node(folder, key, "unknown")
            message = (
                f"is nested more than {fmt.MAX_DEPTH} levels deep; the format refuses deeper trees"
            )
            self._problem(node, folder, message)
            return node
        try:
            kind = fmt.level_kind(folder, meta)
        except fmt.MemmapFormatError as err:
            node = self._node(folder, key, "unknown")
            node["bytes"] = stat.st_size
            self._problem(node, fmt.meta_path(folder), _one_line(err))
            self._stray_links(node, folder)
            return node
        node = self._node(folder, key, kind)
        node["bytes"] = stat.st_size
        if kind == fmt.KIND_TD:
            self._tensordict(node, folder, meta)
        elif kind == fmt.KIND_LAZY:
            self._lazy(node, folder, meta)
        elif kind == fmt.KIND_TENSORCLASS:
            self._tensorclass(node, folder, meta)
        elif kind == fmt.KIND_NONTENSOR_STACK:
            self._nontensor_stack(node, folder, meta)
        else:
            self._nontensor(node, folder, meta)
        self._stray_links(node, folder)
        return node

    def _tensordict(self, node: dict, folder: str, meta: dict) -> None:
        where = fmt.meta_path(folder)
        self._check_version(node, folder, meta)
        batch = self._check(
            node, where, fmt.parse_shape, meta.get("shape"), f"{where!r} field 'shape'"
        )
        batch = None if batch is None else list(batch)
        node["batch_size"] = batch
        node["device"] = meta.get("device")
        self._check(node, where, fmt.parse_device, node["device"], f"{where!r} field 'device'")
        self._check(node, where, fmt.parse_names, folder, meta, batch)
        node["entries"] = []
        taken: dict = {}
        for entry_key, record in fmt.entries(meta):
            child = self._entry(folder, entry_key, record, batch)
            self._check_names(node, folder, child, taken)
            node["entries"].append(child)
            node["bytes"] += child["bytes"]

    def _check_names(self, node: dict, folder: str, child: dict, taken: dict) -> None:
        """Flags two entries of one level stored under one name, or a reserved name."""
        kind = {"tensor": "tensor", "nested": "nested"}.get(child["kind"], "folder")
        key = child["key"]
        for name in fmt.entry_names(key, kind, True):
            if fmt.is_own_file(name):
                self._problem(
                    node,
                    os.path.join(folder, name),
                    f"entry {key!r} is stored under a name reserved by the format",
                )
            other = taken.setdefault(name, key)
            if other != key:
                self._problem(
                    node,
                    os.path.join(folder, name),
                    f"entries {other!r} and {key!r} are both stored as {name!r}",
                )

    def _lazy(self, node: dict, folder: str, meta: dict) -> None:
        self._check(node, fmt.meta_path(folder), fmt.parse_lazy_level, folder, meta)
        stack_dim = meta.get("stack_dim", 0)
        node["stack_dim"] = stack_dim
        node["entries"] = members = []
        for number in self._member_numbers(node, folder):
            path = os.path.join(folder, str(number))
            member = self._node(path, str(number), "TensorDict")
            if self._unopened(member, path) is not None:
                pass
            elif not self._link(member, path):
                read = self._read_meta(member, path, required=True)
                if read is not None:
                    member = self._level(path, str(number), *read)
                    if member["kind"] not in ("TensorDict", "LazyStackedTensorDict", "tensorclass"):
                        self._problem(
                            member,
                            path,
                            f"member {number} is a {member['kind']} folder, not a tensordict",
                        )
            members.append(member)
            node["bytes"] += member["bytes"]
        if any(member.get("opened") is False for member in members):
            node["batch_size"] = None  # the members' batch sizes were not read
            return
        node["batch_size"] = self._stack_batch(node, folder, members, stack_dim)

    def _stack_batch(self, node: dict, folder: str, members: list, stack_dim):
        """The batch size of a lazy stack (None, and a problem, when it has none)."""
        sizes = {tuple(m["batch_size"]) for m in members if m.get("batch_size") is not None}
        if len(sizes) > 1:
            self._problem(
                node, folder, f"the members' batch sizes differ: {sorted(list(s) for s in sizes)}"
            )
            return None
        size = list(next(iter(sizes))) if sizes else []
        if type(stack_dim) is not int or not -len(size) - 1 <= stack_dim <= len(size):
            self._problem(
                node,
                fmt.meta_path(folder),
                f"stack_dim {stack_dim!r} is not valid for members of batch size {size}",
            )
            return None
        if not sizes:
            return None
        stack_dim = stack_dim % (len(size) + 1)
        return size[:stack_dim] + [len(members)] + size[stack_dim:]

    def _member_numbers(self, node: dict, folder: str) -> list:
        """The member numbers of a lazy stack folder (a gap or a link is a problem)."""
        try:
            return list(range(len(fmt.lazy_members(folder))))
        except fmt.MemmapFormatError as err:
            self._problem(node, folder, _one_line(err))
        except OSError as err:
            self._problem(node, folder, f"cannot list the folder: {_one_line(err)}")
            return []
        names = os.listdir(folder)
        return sorted(int(n) for n in names if n.isdigit() and n == str(int(n)))

    def _tensorclass(self, node: dict, folder: str, meta: dict) -> None:
        node["type"] = fmt.tensorclass_name(meta["_type"])
        node["batch_size"] = None
        node["entries"] = []
        path = os.path.join(folder, fmt.TENSORCLASS_DATA)
        data = self._node(path, fmt.TENSORCLASS_DATA, "TensorDict")
        if self._unopened(data, path, required=True) is not None:
            pass
        elif not self._link(data, path):
            read = self._read_meta(data, path, required=True)
            if read is not None:
                data = self._level(path, fmt.TENSORCLASS_DATA, *read)
                node["batch_size"] = data.get("batch_size")
        node["entries"].append(data)
        node["bytes"] += data["bytes"]

    def _nontensor_stack(self, node: dict, folder: str, meta: dict) -> None:
        self._check_version(node, folder, meta)
        found = self._check(node, folder, fmt.parse_nontensor_stack, folder, meta)
        if found is None:
            return
        values, pickled = found
        if pickled is not None:
            node["pickled"] = True
            self._flagged.add(pickled)
            node["bytes"] += os.lstat(pickled).st_size
        else:
            node["value"] = values

    def _nontensor(self, node: dict, folder: str, meta: dict) -> None:
        if meta.get("_type") == fmt.METADATA_TYPE:
            node["type"] = "MetaData"
        path = os.path.join(folder, fmt.PICKLE_FILE)
        if "data" not in meta:
            node["pickled"] = True
            self._flagged.add(path)
        found = self._check(node, path, fmt.parse_nontensor, folder, meta)
        if found is None:
            return
        how, value = found
        if how == "data":
            node["value"] = value
        else:
            node["bytes"] += os.lstat(value).st_size

    # ------------------------------------------------------------------ entries
    def _entry(self, folder: str, key: str, record, batch) -> dict:
        try:
            declared = fmt.parse_record(folder, key, record)
        except fmt.MemmapFormatError as err:
            node = self._node(os.path.join(folder, fmt.file_name(key)), key, "unknown")
            self._problem(node, fmt.meta_path(folder), _one_line(err))
            return node
        if declared is not None:
            return self._sub_folder(folder, key, declared, batch)
        return self._tensor(folder, key, record, batch)

    def _sub_folder(self, folder: str, key: str, declared: str, batch) -> dict:
        encoded = os.path.join(folder, fmt.file_name(key))
        node = self._node(encoded, key, _declared_kind(declared))
        if node["kind"] == fmt.KIND_TENSORCLASS:
            node["type"] = declared
        elif node["kind"] == "unknown":
            self._problem(
                node,
                fmt.meta_path(folder),
                f"the record of {key!r} has an invalid type {declared!r}",
            )
        elif (
            node["kind"] not in _VALUES
            and self._below(encoded)
            and _stat.S_ISDIR(_lstat_mode(encoded))
        ):
            # A folder (not a link) under the encoded name is what entry_path finds: one
            # lstat instead of its lookups, for each of the many sub-levels not opened.
            return self._mark_unopened(node)
        path = self._entry_path(node, folder, "")
        if path is None:
            return node
        node["path"] = self._rel(path)
        if node["kind"] not in _VALUES and self._unopened(node, path) is not None:
            return node
        read = self._read_meta(node, path)
        if read is None:
            return node
        node = self._level(path, key, *read)
        actual = node.get("type", node["kind"]).rsplit(".", 1)[-1]
        if declared != actual and node["kind"] != "unknown":  # an unknown level has its problem
            self._problem(
                node,
                fmt.meta_path(folder),
                f"the record of {key!r} says {declared!r} but its folder holds a {actual!r}",
            )
        sub_batch = node.get("batch_size")
        if batch is not None and sub_batch is not None and node["kind"] != fmt.KIND_NONTENSOR:
            self._check(node, path, fmt.check_batch_prefix, folder, key, sub_batch, batch)
        return node

    def _tensor(self, folder: str, key: str, record: dict, batch) -> dict:
        nested = record.get("is_nested") is True
        name = fmt.file_name(key, fmt.MEMMAP_SUFFIX)
        node = self._node(os.path.join(folder, name), key, "nested" if nested else "tensor")
        node.update(
            file=name, dtype=record.get("dtype"), shape=record.get("shape"), expected_bytes=None
        )
        parsed = self._check(
            node, fmt.meta_path(folder), fmt.parse_tensor_record, folder, key, record
        )
        dtype, shape = (None, None) if parsed is None else parsed[:2]
        path = self._entry_path(node, folder, fmt.MEMMAP_SUFFIX)
        if path is None:
            return node
        node["file"] = os.path.basename(path)
        node["path"] = self._rel(path)
        if nested:
            self._nested(node, folder, path, dtype, shape, batch)
            return node
        if parsed is not None:
            node["expected_bytes"] = fmt.nbytes(shape, dtype)
            if batch is not None:
                self._check(
                    node, fmt.meta_path(folder), fmt.check_batch_prefix, folder, key, shape, batch
                )
        if os.path.lexists(path):
            self._file(node, path)
        elif node["expected_bytes"] != 0:
            self._missing(node, path, f"entry {key!r} ({_describe(node)})")
        return node

    def _file(self, node: dict, path: str) -> None:
        """Counts an existing data file's bytes and checks it (a link, not a file, its size)."""
        if self._link(node, path):
            return
        info = os.lstat(path)
        if not _stat.S_ISREG(info.st_mode):
            self._problem(node, path, "is not a regular file")
            return
        node["bytes"] += info.st_size
        expected = node["expected_bytes"]
        if expected is not None and info.st_size != expected:
            message = f"has {info.st_size} bytes but its record needs {expected} (truncated or overwritten)"
            self._problem(node, path, message)

    def _nested(self, node: dict, folder: str, path: str, dtype, shape, batch) -> None:
        key = node["key"]
        node.update(shape_file=fmt.file_name(key, fmt.SHAPE_SUFFIX), components=None)
        node["component_shape"] = None
        if not os.path.lexists(path):
            self._missing(node, path, f"nested entry {key!r}")
            return
        shape_path = self._entry_path(node, folder, fmt.SHAPE_SUFFIX)
        if shape is not None and shape_path is not None:
            node["shape_file"] = os.path.basename(shape_path)
            shape = list(shape)
            rows = self._shape_rows(node, shape_path, shape)
            if rows is not None:
                node["components"] = len(rows)
                node["component_shape"] = [len(rows)] + _common_sizes(rows, shape[1])
                if dtype is not None:
                    node["expected_bytes"] = sum(fmt.nbytes(row, dtype) for row in rows)
        self._file(node, path)

    def _shape_rows(self, node: dict, shape_path: str, shape: list):
        """The rows of a nested tensor's shape file (read-only), or None (a problem)."""
        expected = fmt.nbytes(shape, torch.int64)
        if self._link(node, shape_path):
            return None
        try:
            fd = os.open(shape_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            self._problem(
                node, shape_path, f"the shape file of nested entry {node['key']!r} is missing"
            )
            return None
        try:
            raw = os.read(fd, expected + 1)
            node["bytes"] += os.fstat(fd).st_size
        finally:
            os.close(fd)
        if len(raw) != expected:
            self._problem(
                node,
                shape_path,
                f"has {len(raw)} bytes but its record needs {expected} (truncated or overwritten)",
            )
            return None
        values = array.array("q")
        values.frombytes(raw)
        width = shape[1]
        rows = [list(values[i * width : (i + 1) * width]) for i in range(shape[0])]
        if any(size < 0 for row in rows for size in row):
            self._problem(node, shape_path, "holds a negative size")
            return None
        return rows


def _lstat_mode(path: str) -> int:
    """The ``st_mode`` of ``path`` itself (a link is not followed), 0 when there is nothing."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _declared_kind(declared) -> str:
    """The kind a record's ``"type"`` announces (a tensorclass records its class name)."""
    if declared in ("TensorDict", "LazyStackedTensorDict", "NonTensorData", "NonTensorStack"):
        return declared
    if declared == "MetaData":
        return "NonTensorData"
    return "tensorclass" if isinstance(declared, str) and declared.isidentifier() else "unknown"


def walk(node: dict) -> Iterator[dict]:
    """Yields ``node`` and every node below it, depth first, in order."""
    yield node
    for child in node.get("entries", ()):
        yield from walk(child)


def _common_sizes(rows: list, width: int) -> list:
    """Per dimension, the size all components share, or None where they differ."""
    return [
        rows[0][d] if rows and len({row[d] for row in rows}) == 1 else None for d in range(width)
    ]


def _describe(node: dict) -> str:
    dtype = str(node["dtype"]).removeprefix("torch.")
    return f"{dtype} {node['shape']}, {node['expected_bytes']} bytes"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())
