"""The ``tensordict`` command: look into memory-mapped folders, check them, see a demo.

Subcommands:

* ``tensordict info PATH [--depth N|all] [--json]``: the tree of a memory-mapped folder
  (or ``.tdz`` archive), read from its files (no class is imported): keys, classes,
  batch sizes, dtypes and shapes, bytes on disk, and the entries whose file is missing
  (loading drops them). Only the top level is opened unless ``--depth`` asks for
  more, so a huge folder is shown at once.
* ``tensordict verify PATH [--strict]``: checks every record against its file (for an
  archive, also every entry's CRC-32); prints each problem and warning with its path;
  exits 0 when the folder is sound, 1 when it is not. An entry listed in
  ``meta.json`` without its file (``load_memmap`` drops it) is a warning: exit 0,
  or 1 with ``--strict``. It never writes.
* ``tensordict demo``: a memory-mapped replay buffer filled by worker processes,
  sampled, reloaded and checked (see :mod:`tensordict.cli._demo`).

Run it as ``python -m tensordict`` or through the ``tensordict`` console script.
Exit codes: 0 success, 1 failure (an unsound or unreadable folder), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from tensordict._version import REFERENCE_API, __version__
from tensordict.cli import _demo, _demo_shared
from tensordict.cli._report import CliError, counts, human_bytes, plural, render_info, scan_folder

_ROOT_EPILOG = """\
examples:
  tensordict info /data/buffer            the top level of a memory-mapped folder
  tensordict info /data/buffer --depth all   its whole tree
  tensordict info /data/buffer --json     the top level, as JSON
  tensordict info /data/buffer.tdz        the tree of an archive
  tensordict verify /data/buffer          check every file against meta.json
  tensordict demo --rows 100000           a replay buffer filled by 2 processes
  tensordict demo --shared                one writer, 2 readers over torch.distributed

Run `tensordict COMMAND --help` for the options of each command.
"""

_INFO_EPILOG = """\
Reads only the files (meta.json, and the shape files of nested tensors): no class
is imported and nothing is written. Entries listed in meta.json whose file is
missing are marked (load_memmap would drop them); a tensor without elements has
no file and is not missing. Damaged parts are marked with '!'.

Only what is shown is read: the top level by default (its sub-levels are listed,
not opened, and their bytes are not counted), N levels with --depth N, the whole
tree with --depth all. Non-tensor entries always show their value. `tensordict
verify` checks the whole tree.

examples:
  tensordict info /data/buffer
  tensordict info /data/buffer --depth 2
  tensordict info /data/buffer --depth all --json | python -m json.tool
"""

_VERIFY_EPILOG = """\
Checks, for every record of every meta.json: the file exists and has exactly the
bytes its dtype and shape need (nested tensors: the sum over the rows of the
.shape.memmap file), its name stays inside the folder, no file or folder is a
symbolic link, the dtype, shape and class are known, and lazy stacks have their
members 0/ .. N-1/ without gaps. For a .tdz archive, also every entry's name
and CRC-32. Files are opened read-only; nothing is written.

An entry listed in meta.json whose file or folder is missing is a warning, not
a problem: load_memmap drops it, and a folder holds such an entry by design when
it was made from a storage without a file (make_memmap_from_storage).

exit status: 0 sound (warnings allowed, unless --strict), 1 problems found (or
warnings with --strict, or the folder cannot be read), 2 bad arguments.

examples:
  tensordict verify /data/buffer
  tensordict verify /data/buffer --strict && echo complete
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        msg = f"expected a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _depth(text: str) -> int | None:
    """``--depth``: a positive number of levels, or ``all`` (None: no limit)."""
    if text == "all":
        return None
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        msg = f"expected a positive integer or 'all', got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _add_command(
    commands: argparse._SubParsersAction,
    name: str,
    run: Callable,
    *,
    summary: str,
    description: str,
    epilog: str,
) -> argparse.ArgumentParser:
    """Adds the subcommand ``name``, which ``main`` runs with ``run``, and returns its parser."""
    command = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog as written
    )
    command.set_defaults(run=run)
    return command


def _add_path(command: argparse.ArgumentParser) -> None:
    """Adds the ``PATH`` argument of the commands that read a saved folder or archive."""
    command.add_argument(
        "path", metavar="PATH", help="the folder (the one holding meta.json) or a .tdz archive"
    )


def build_parser() -> argparse.ArgumentParser:
    """Returns the argument parser of the ``tensordict`` command, with its subcommands.

    Examples:
        >>> build_parser().parse_args(["info", "/data/buffer"]).path
        '/data/buffer'
    """
    parser = argparse.ArgumentParser(
        prog="tensordict",
        description="Inspect, check and demonstrate memory-mapped tensordict folders.",
        epilog=_ROOT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"tensordict {__version__} (the API of tensordict {REFERENCE_API})",
        help="print the version of the package and of the API it implements, and exit",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = _add_command(
        commands,
        "info",
        run_info,
        summary="print the tree of a memory-mapped folder",
        description="Print the tree of a memory-mapped folder, read straight from its files.",
        epilog=_INFO_EPILOG,
    )
    _add_path(info)
    info.add_argument(
        "--depth",
        type=_depth,
        default=1,
        metavar="N|all",
        help="open this many levels below the top (default: 1, the top level's entries); "
        "'all' reads the whole tree",
    )
    info.add_argument("--json", action="store_true", help="print the tree as JSON")

    verify = _add_command(
        commands,
        "verify",
        run_verify,
        summary="check every record of a memory-mapped folder against its file",
        description="Check every record of a memory-mapped folder against its file.",
        epilog=_VERIFY_EPILOG,
    )
    _add_path(verify)
    verify.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on warnings too (entries listed in meta.json without their file)",
    )

    demo = _add_command(
        commands,
        "demo",
        run_demo,
        summary="fill, sample and reload a memory-mapped replay buffer from worker processes",
        description="Showcase: a memory-mapped replay buffer shared by worker processes.",
        epilog=_DEMO_EPILOG,
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
    demo.add_argument(
        "--shared",
        action="store_true",
        help="instead: one folder grown by rank 0 of a torch.distributed group while "
        "--workers reader ranks refresh it on each broadcast message",
    )
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
def run_info(args: argparse.Namespace) -> int:
    """``tensordict info``: prints the tree down to ``--depth`` (or its JSON); 0 unless the
    root is unreadable."""
    scan = scan_folder(args.path, depth=args.depth)
    if args.json:
        print(json.dumps(scan.as_json(), indent=2, ensure_ascii=False))
    else:
        print(render_info(scan))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """``tensordict verify``: prints each problem and warning, and a summary.

    Returns 0 when sound (with warnings unless ``--strict``), else 1.
    """
    scan = scan_folder(args.path, check_payloads=True)
    for path, message in scan.problems:
        print(f"{path}: {message}")
    for path, message in scan.warnings:
        print(f"{path}: warning: {message}")
    summary = scan.summary()
    checked = counts(summary)
    warned = plural(len(scan.warnings), "warning")
    if not scan.sound:
        problems = plural(len(scan.problems), "problem")
        extra = f" and {warned}" if scan.warnings else ""
        print(f"FAILED: {scan.shown} has {problems}{extra} ({checked} checked)")
        return 1
    if scan.warnings and args.strict:
        print(f"FAILED (--strict): {scan.shown} has {warned} ({checked} checked)")
        return 1
    size = human_bytes(summary["bytes"])
    if scan.warnings:
        print(f"OK: {scan.shown} is sound, with {warned} ({checked}, {size})")
    else:
        print(f"OK: {scan.shown} is sound ({checked}, {size})")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """``tensordict demo``: runs the replay-buffer showcase (see :mod:`tensordict.cli._demo`)."""
    try:
        if args.shared:
            ranks = args.workers + 1  # one writer, the workers read
            return _demo_shared.run(ranks=ranks, rows=args.rows, folder=args.dir, seed=args.seed)
        return _demo.run(rows=args.rows, workers=args.workers, folder=args.dir, seed=args.seed)
    except (_demo.DemoError, _demo_shared.SharedDemoError, OSError) as err:
        raise CliError(" ".join(str(err).split())) from err
