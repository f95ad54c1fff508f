"""What ``tensordict info`` and ``verify`` print: a folder's scan, rendered for people."""

from __future__ import annotations

import os
import tempfile

from tensordict.cli._scan import FolderScan
from tensordict.memmap import _archive


class CliError(Exception):
    """A failure reported on one line (exit status 1), without a traceback."""


def scan_folder(path: str, *, check_payloads: bool = False, depth: int | None = None) -> FolderScan:
    """Scans ``path`` (a folder or a ``.tdz`` archive), turning an unreadable root into a :class:`CliError`.

    For an archive, ``check_payloads`` also checks the CRC-32 of every entry (``verify``).
    ``depth`` limits the levels opened (see :class:`FolderScan`); None reads them all.
    """
    try:
        if _archive.is_archive_file(path):
            return _scan_archive(path, check_payloads, depth)
        return FolderScan(path, depth=depth)
    except (OSError, ValueError) as err:
        raise CliError(" ".join(str(err).split())) from err


def _scan_archive(path: str, check_payloads: bool, depth: int | None) -> FolderScan:
    """Scans an archive: its folder is laid out (payloads as sparse files) and scanned as one."""
    problems = _archive.scan_problems(path) if check_payloads else []
    with tempfile.TemporaryDirectory(prefix="tensordict-scan-") as staged:
        _archive.stage_for_scan(path, staged)
        scan = FolderScan(staged, shown=path, depth=depth)
    archive = os.path.abspath(path)
    scan.problems = [(p, m.replace(staged, archive)) for p, m in scan.problems]
    scan.warnings = [(p, m.replace(staged, archive)) for p, m in scan.warnings]
    scan.problems.extend(problems)
    return scan


def plural(n: int, word: str) -> str:
    """``"1 tensor"``, ``"2 tensors"``."""
    return f"{n} {word}{'s' * (n != 1)}"


def counts(summary: dict) -> str:
    """The counts of a scan summary in words: tensors, non-tensors, levels."""
    parts = [plural(summary["tensors"], "tensor")]
    if summary["non_tensors"]:
        parts.append(plural(summary["non_tensors"], "non-tensor"))
    parts.append(plural(summary["levels"], "level"))
    return ", ".join(parts)


def human_bytes(n: float) -> str:
    """A byte count for people: ``"48 B"``, ``"1.9 KiB"``, ``"7.8 MiB"``."""
    if n < 1024:
        return f"{int(n)} B"
    size = n / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def render_info(scan: FolderScan) -> str:
    """The text of ``tensordict info``: an aligned tree, then missing entries and problems.

    Examples:
        >>> _ = TensorDict({"obs": torch.zeros(4, 3)}, [4]).memmap("buffer")
        >>> print(render_info(FolderScan("buffer")))  # doctest: +ELLIPSIS
        buffer  TensorDict  batch_size=[4]  ... B
        └── obs  float32  [4, 3]       48 B
        <BLANKLINE>
        1 tensor, 1 level, ... on disk (... bytes)
    """
    tree = scan.tree
    kind, detail = _describe(tree)
    lines = [
        f"{scan.shown}  {kind}  {detail}  {human_bytes(tree['bytes'])}  {_note(tree)}".rstrip()
    ]
    rows: list = []
    _child_rows(tree, "", rows)
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for label, kind, detail, size, note in rows:
        line = f"{label.ljust(widths[0])}  {kind.ljust(widths[1])}  {detail.ljust(widths[2])}  {size.rjust(9)}"
        lines.append(f"{line}  {note}".rstrip())
    summary = scan.summary()
    lines.append("")
    if scan.complete:
        lines.append(
            f"{counts(summary)}, {human_bytes(summary['bytes'])} on disk ({summary['bytes']:,} bytes)"
        )
    else:
        unopened = plural(len(summary["unopened"]), "level")
        lines.append(
            f"shown: {counts(summary)}, {human_bytes(summary['bytes'])} on disk "
            f"({summary['bytes']:,} bytes); {unopened} below depth {scan.depth} not opened "
            "(--depth N or --depth all reads them)"
        )
    if summary["missing"]:
        listed = ", ".join(summary["missing"])
        lines.append(f"missing (listed in meta.json, no file; load_memmap drops them): {listed}")
    if scan.problems:
        lines.append(f"{plural(len(scan.problems), 'problem')}:")
        lines.extend(f"  ! {path}: {message}" for path, message in scan.problems)
    return "\n".join(lines)


def _child_rows(node: dict, indent: str, rows: list) -> None:
    """Appends one row per child of ``node`` (label, kind, detail, bytes, note), recursively."""
    children = node.get("entries", ())
    for i, child in enumerate(children):
        last = i == len(children) - 1
        kind, detail = _describe(child)
        label = indent + ("└── " if last else "├── ") + show_key(child["key"])
        opened = child.get("opened", True)
        label += "/" if "entries" in child or not opened else ""
        size = human_bytes(child["bytes"]) if opened else "-"
        rows.append((label, kind, detail if opened else "(not opened)", size, _note(child)))
        _child_rows(child, indent + ("    " if last else "│   "), rows)


def _describe(node: dict) -> tuple:
    """The kind and detail columns of a node."""
    kind = node["kind"]
    if kind in ("tensor", "nested"):
        dtype = str(node["dtype"]).removeprefix("torch.")
        if kind == "tensor":
            return dtype, _shape(node["shape"])
        sizes = node.get("component_shape")
        shape = "[" + ", ".join("*" if s is None else str(s) for s in sizes) + "]" if sizes else "?"
        components = "?" if node["components"] is None else node["components"]
        return dtype, f"{shape} nested, {components} components"
    if kind == "NonTensorData":
        value = "<pickled>" if node.get("pickled") else repr(node.get("value"))
        return kind, value if len(value) <= 40 else value[:37] + "..."
    if kind == "tensorclass":
        kind = f"tensorclass {node.get('type', '?')}"
    detail = f"batch_size={_shape(node.get('batch_size'))}"
    if "stack_dim" in node:
        detail += f" stack_dim={node['stack_dim']}"
    return kind, detail


def _note(node: dict) -> str:
    """The note column: the node's problems, else where its bytes live when not obvious."""
    if node["missing"]:
        return "! MISSING (load_memmap drops it)"
    if node["problems"]:
        extra = len(node["problems"]) - 1
        return "! " + node["problems"][0] + (f" (+{extra} more)" if extra else "")
    kind = node["kind"]
    if kind == "tensor" and node["bytes"] == 0 and node["expected_bytes"] == 0:
        return "(no file: no elements)"
    if kind == "nested":
        return f"{_shorten(node['file'])} + {_shorten(node['shape_file'])}"
    if kind == "tensor" and node["file"] != f"{node['key']}.memmap":
        return f"-> {_shorten(node['file'])}"
    return ""


def _shape(shape) -> str:
    return "?" if shape is None else "[" + ", ".join(str(s) for s in shape) + "]"


def show_key(key: str) -> str:
    """A key as printed in the tree: itself, or its repr when it could be misread.

    The repr is used for the empty key, keys with unprintable characters, outer spaces
    or a ``/``. A long key is shortened in the middle (``--json`` has it whole).
    """
    if not (key and key.isprintable() and key.strip() == key and "/" not in key):
        key = repr(key)
    return _shorten(key)


def _shorten(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 15] + "..." + text[-12:]
