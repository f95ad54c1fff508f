"""The ``tensordict`` command: look into memory-mapped folders, check them, see a demo.

Subcommands:

* ``tensordict info PATH [--json]``: the tree of a memory-mapped folder, read from
  its files (no class is imported): keys, classes, batch sizes, dtypes and shapes,
  bytes on disk, and the entries whose file is missing (loading drops them).
* ``tensordict verify PATH``: checks every record against its file; prints each
  problem with its path; exits 0 when the folder is sound, 1 when it is not.
  It never writes.
* ``tensordict demo``: a memory-mapped replay buffer filled by worker processes,
  sampled, reloaded and checked (see :mod:`tensordict._demo`).

Run it as ``python -m tensordict`` or through the ``tensordict`` console script.
Exit codes: 0 success, 1 failure (an unsound or unreadable folder), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from tensordict._scan import FolderScan

_ROOT_EPILOG = """\
examples:
  tensordict info /data/buffer            the tree of a memory-mapped folder
  tensordict info /data/buffer --json     the same, as JSON
  tensordict verify /data/buffer          check every file against meta.json
  tensordict demo --rows 100000           a replay buffer filled by 2 processes

Run `tensordict COMMAND --help` for the options of each command.
"""

_INFO_EPILOG = """\
Reads only the files (meta.json, and the shape files of nested tensors): no class
is imported and nothing is written. Entries listed in meta.json whose file is
missing are marked (load_memmap would drop them); a tensor without elements has
no file and is not missing. Damaged parts are marked with '!'.

examples:
  tensordict info /data/buffer
  tensordict info /data/buffer --json | python -m json.tool
"""

_VERIFY_EPILOG = """\
Checks, for every record of every meta.json: the file exists and has exactly the
bytes its dtype and shape need (nested tensors: the sum over the rows of the
.shape.memmap file), its name stays inside the folder, no file or folder is a
symbolic link, the dtype, shape and class are known, and lazy stacks have their
members 0/ .. N-1/ without gaps. Files are opened read-only; nothing is written.

exit status: 0 sound, 1 problems found (or the folder cannot be read), 2 bad arguments.

examples:
  tensordict verify /data/buffer
  tensordict verify /data/buffer && echo sound
"""

_DEMO_EPILOG = """\
Builds a memory-mapped replay buffer (memmap_like of a template), fills it from
worker processes that each load the folder and add an entry with
make_memmap_from_storage, samples random batches, reloads the folder and checks
every row, then prints a summary and the folder's tree.

examples:
  tensordict demo
  tensordict demo --rows 1000000 --workers 4 --dir /tmp/buffer
"""


class CliError(Exception):
    """A failure reported on one line (exit status 1), without a traceback."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        msg = f"expected a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def build_parser() -> argparse.ArgumentParser:
    """Returns the argument parser of the ``tensordict`` command, with its subcommands.

    Examples:
        >>> build_parser().parse_args(["info", "/data/buffer"]).path
        '/data/buffer'
    """
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="tensordict",
        description="Inspect, check and demonstrate memory-mapped tensordict folders.",
        epilog=_ROOT_EPILOG,
        formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = commands.add_parser(
        "info",
        help="print the tree of a memory-mapped folder",
        description="Print the tree of a memory-mapped folder, read straight from its files.",
        epilog=_INFO_EPILOG,
        formatter_class=formatter,
    )
    info.add_argument("path", metavar="PATH", help="the folder (the one holding meta.json)")
    info.add_argument("--json", action="store_true", help="print the tree as JSON")
    info.set_defaults(run=run_info)

    verify = commands.add_parser(
        "verify",
        help="check every record of a memory-mapped folder against its file",
        description="Check every record of a memory-mapped folder against its file.",
        epilog=_VERIFY_EPILOG,
        formatter_class=formatter,
    )
    verify.add_argument("path", metavar="PATH", help="the folder (the one holding meta.json)")
    verify.set_defaults(run=run_verify)

    demo = commands.add_parser(
        "demo",
        help="fill, sample and reload a memory-mapped replay buffer from worker processes",
        description="Showcase: a memory-mapped replay buffer shared by worker processes.",
        epilog=_DEMO_EPILOG,
        formatter_class=formatter,
    )
    demo.add_argument(
        "--rows", type=_positive_int, default=100_000, help="rows in the buffer (default: 100000)"
    )
    demo.add_argument(
        "--workers", type=_positive_int, default=2, help="worker processes (default: 2)"
    )
    demo.add_argument(
        "--dir",
        metavar="PATH",
        help="where to put the buffer (default: a temporary folder, removed after)",
    )
    demo.add_argument("--seed", type=int, default=0, help="seed of the made-up data (default: 0)")
    demo.set_defaults(run=run_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``tensordict`` command and returns its exit status.

    Args:
        argv (sequence of str, optional): the arguments, without the program name.
            Defaults to ``sys.argv[1:]``.

    Returns:
        0 on success, 1 on failure; bad arguments exit with status 2 (argparse).

    Examples:
        >>> main(["verify", "/data/buffer"])  # doctest: +SKIP
        0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable = args.run
    try:
        return run(args)
    except CliError as err:
        print(f"tensordict {args.command}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tensordict {args.command}: interrupted", file=sys.stderr)
        return 130


# ---------------------------------------------------------------------- info / verify
def scan_folder(path: str) -> FolderScan:
    """Scans ``path``, turning an unreadable root into a one-line :class:`CliError`."""
    try:
        return FolderScan(path)
    except (OSError, ValueError) as err:
        raise CliError(" ".join(str(err).split())) from err


def run_info(args: argparse.Namespace) -> int:
    """``tensordict info``: prints the tree (or its JSON); 0 unless the root is unreadable."""
    scan = scan_folder(args.path)
    if args.json:
        print(json.dumps(scan.as_json(), indent=2, ensure_ascii=False))
    else:
        print(render_info(scan))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """``tensordict verify``: prints each problem and a summary; 0 when sound, else 1."""
    scan = scan_folder(args.path)
    for path, message in scan.problems:
        print(f"{path}: {message}")
    summary = scan.summary()
    checked = counts(summary)
    if scan.sound:
        print(f"OK: {scan.shown} is sound ({checked}, {human_bytes(summary['bytes'])})")
        return 0
    print(f"FAILED: {scan.shown} has {plural(len(scan.problems), 'problem')} ({checked} checked)")
    return 1


def run_demo(args: argparse.Namespace) -> int:
    """``tensordict demo``: runs the replay-buffer showcase (see :mod:`tensordict._demo`)."""
    from tensordict._demo import DemoError, run

    try:
        return run(rows=args.rows, workers=args.workers, folder=args.dir, seed=args.seed)
    except (DemoError, OSError) as err:
        raise CliError(" ".join(str(err).split())) from err


# ---------------------------------------------------------------------- rendering
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
        >>> print(render_info(FolderScan("/tmp/buffer")))  # doctest: +SKIP
        /tmp/buffer  TensorDict  batch_size=[4]      204 B
        └── obs      float32     [4, 3]               48 B
        ...
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
    lines.append(
        f"{counts(summary)}, {human_bytes(summary['bytes'])} on disk ({summary['bytes']:,} bytes)"
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
        label += "/" if "entries" in child else ""
        rows.append((label, kind, detail, human_bytes(child["bytes"]), _note(child)))
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
