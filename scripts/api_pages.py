"""Writes the API reference of the documentation site: a page per public name, and "Methods by task".

The pages are made from the one walk of the API in ``scripts/method_index.py`` and the task
table of ``scripts/method_tasks.py``; Sphinx's autodoc fills each page from the docstring
and the signature. ``docs/conf.py`` runs this before every build, into
``docs/reference/generated/`` (not checked in):

    python scripts/api_pages.py            # write the pages
    python scripts/api_pages.py --list     # print the page names
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
GENERATED = REFERENCE / "generated"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import method_index  # noqa: E402
from method_tasks import task_table  # noqa: E402

import tensordict  # noqa: E402
import tensordict.memmap  # noqa: E402
from tensordict import TensorDictBase, tensorclass  # noqa: E402

CLOSING = (
    "Every tensordict class and every tensorclass has this method. For the other methods, "
    "see :doc:`Methods by task <../by_task>`."
)
# The memory-mapped forms are these same classes (``td.memmap()`` returns its own class).
TENSORDICT_CLASSES = (
    tensordict.TensorDict,
    tensordict.LazyStackedTensorDict,
    tensordict.NonTensorStack,
    tensordict.TypedTensorDict,
    tensordict.TensorDictParams,
)
MEMMAP_FUNCTIONS = ("claim_writer", "release_writer", "memmap")


@tensorclass
class _Sample:
    """A tensorclass to ask which methods every tensorclass has."""

    x: torch.Tensor


def _page(qualname: str) -> str:
    return f"tensordict.{qualname}" if not qualname.startswith("tensordict.") else qualname


def _kind(owner, name: str) -> str:
    """The autodoc directive that documents ``owner.name``."""
    raw = inspect.getattr_static(owner, name)
    if isinstance(raw, property) or type(raw).__name__ == "cached_property":
        return "autoproperty"
    if isinstance(raw, (classmethod, staticmethod)) or inspect.isroutine(raw):
        return "automethod"
    return "autoattribute"


def _heading(title: str) -> list[str]:
    return [title, "=" * len(title), ""]


def _page_heading(title: str) -> list[str]:
    # Outside every toctree: the theme draws the navigation on each page, and ~500 more
    # entries in it would make every page, and the build, many times larger.
    return [":orphan:", "", *_heading(title)]


def _summary(obj) -> str:
    """The first paragraph of ``obj``'s docstring on one line, its roles as plain literals."""
    doc = inspect.getdoc(obj) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return re.sub(r":[a-z]+:`~?([^`<]*?)(?: <[^>]*>)?`", lambda m: f"``{m[1]}``", first)


def _holders(name: str) -> list[str]:
    """The tensordict classes, and the sample tensorclass, that lack ``name``."""
    missing = [cls.__name__ for cls in TENSORDICT_CLASSES if not hasattr(cls, name)]
    if not hasattr(_Sample, name):
        missing.append("tensorclasses")
    return missing


def _closing(name: str) -> str:
    missing = _holders(name)
    if not missing:
        return CLOSING
    return (
        f"Not every class has this method: {', '.join(missing)} do not. For the other "
        "methods, see :doc:`Methods by task <../by_task>`."
    )


def _member_page(owner_name: str, owner, name: str, closing: str | None) -> str:
    title = f"{owner_name}.{name}"
    lines = _page_heading(title)
    lines += [".. currentmodule:: tensordict", "", f".. {_kind(owner, name)}:: {title}", ""]
    if closing:
        lines += [closing, ""]
    return "\n".join(lines)


def documented_callables() -> list[tuple[str, object]]:
    """Every method and function that has a page, as (title, object); properties left out."""
    rows = method_index.index()
    found = [
        (f"TensorDictBase.{name}", getattr(TensorDictBase, name))
        for name, _, _ in rows["base"]
        if _kind(TensorDictBase, name) == "automethod"
    ]
    for cname, members in rows["class_members"].items():
        cls = getattr(tensordict, cname)
        found += [
            (f"{cname}.{n}", getattr(cls, n)) for n in members if _kind(cls, n) == "automethod"
        ]
    found += [(f"tensordict.{n}", getattr(tensordict, n)) for n, _ in rows["functions"]]
    found += [(f"tensordict.memmap.{n}", getattr(tensordict.memmap, n)) for n in MEMMAP_FUNCTIONS]
    return found


def pages() -> dict[str, str]:
    """Every page of the reference: file name (without ``.rst``) to its text."""
    rows = method_index.index()
    out: dict[str, str] = {}
    for name, _, _ in rows["base"]:
        out[_page(f"TensorDictBase.{name}")] = _member_page(
            "TensorDictBase", TensorDictBase, name, _closing(name)
        )
    class_members = rows["class_members"]
    for cname, members in class_members.items():
        cls = getattr(tensordict, cname)
        for name in members:
            out[_page(f"{cname}.{name}")] = _member_page(cname, cls, name, None)
    for cname, members in class_members.items():
        lines = _page_heading(cname)
        lines += [".. currentmodule:: tensordict", "", f".. autoclass:: {cname}", ""]
        if cname == "TensorDictBase":
            lines += [
                "Its methods, which every tensordict class has, are listed by what they do "
                "on :doc:`Methods by task <../by_task>`.",
                "",
            ]
        elif issubclass(getattr(tensordict, cname), TensorDictBase):
            lines += [
                "It has every method of :class:`TensorDictBase` (see "
                ":doc:`Methods by task <../by_task>`), and these of its own:",
                "",
            ]
        if members:
            cls = getattr(tensordict, cname)
            lines += _link_list([(f"{cname}.{n}", getattr(cls, n)) for n in members])
        out[_page(cname)] = "\n".join(lines)
    for fname, _ in rows["functions"]:
        title = f"tensordict.{fname}"
        lines = _page_heading(title) + [f".. autofunction:: {title}", ""]
        out[title] = "\n".join(lines)
    for fname in MEMMAP_FUNCTIONS:
        title = f"tensordict.memmap.{fname}"
        lines = _page_heading(title) + [f".. autofunction:: {title}", ""]
        out[title] = "\n".join(lines)
    return out


def _link_list(entries: list[tuple[str, object]], folder: str = "") -> list[str]:
    """A two-column table: a link to each page, and its summary."""
    lines = [".. list-table::", "   :widths: 30 70", ""]
    for qualname, obj in entries:
        lines += [
            f"   * - :doc:`{qualname.rsplit('.', 1)[-1]} <{folder}{_page(qualname)}>`",
            f"     - {_summary(obj) or ' '}",
        ]
    lines.append("")
    return lines


def by_task() -> str:
    """The "Methods by task" page: every method of TensorDictBase, and every function, once."""
    lines = [
        ".. Written by scripts/api_pages.py from scripts/method_tasks.py. Do not edit by hand.",
        "",
        *_heading("Methods by task"),
        "Every public method of :class:`~tensordict.TensorDictBase`, grouped by what it is for,",
        "with the functions of ``tensordict`` that do the same job. Every tensordict class and",
        "every tensorclass has these methods, unless a method's page says otherwise.",
        "",
    ]
    for title, about, methods, functions in task_table():
        lines += [title, "-" * len(title), "", about, ""]
        if methods:
            entries = [(f"TensorDictBase.{n}", getattr(TensorDictBase, n)) for n in methods]
            lines += _link_list(entries, "generated/")
        if functions:
            lines += ["Functions:", ""]
            entries = [(f"tensordict.{n}", getattr(tensordict, n)) for n in functions]
            lines += _link_list(entries, "generated/")
    return "\n".join(lines)


def reference_index() -> str:
    """The reference's front page: the classes, the functions and "Methods by task"."""
    rows = method_index.index()
    classes = [name for name, _ in rows["classes"]]
    functions = [name for name, _ in rows["functions"]]
    lines = [
        ".. Written by scripts/api_pages.py. Do not edit by hand.",
        "",
        *_heading("API reference"),
        ".. currentmodule:: tensordict",
        "",
        "A page for every public class, method and function, made from its docstring and",
        "its signature. The methods of the tensordict classes are listed by what they do on",
        ":doc:`Methods by task <by_task>`.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
        "   by_task",
        "",
        "Names",
        "-----",
        "",
        ".. py:data:: tensordict.NestedKey",
        "",
        "   A key: a string, or a tuple of strings for an entry of a nested tensordict",
        '   (``("next", "obs")``). Nested tuples are flattened (:func:`unravel_key`).',
        "",
        ".. py:data:: tensordict.NO_DEFAULT",
        "",
        "   The default of ``get``-like methods that raise when the key is missing.",
        "",
        ".. py:data:: tensordict.KEY_SEPARATOR",
        "",
        '   The separator of flattened keys (``"."``), as in :meth:`TensorDictBase.flatten_keys`.',
        "",
        "Classes",
        "-------",
        "",
        *_link_list([(name, getattr(tensordict, name)) for name in classes], "generated/"),
        "Functions",
        "---------",
        "",
        *_link_list([(f"tensordict.{n}", getattr(tensordict, n)) for n in functions], "generated/"),
        "``tensordict.memmap``",
        "---------------------",
        "",
        *_link_list(
            [(f"tensordict.memmap.{n}", getattr(tensordict.memmap, n)) for n in MEMMAP_FUNCTIONS],
            "generated/",
        ),
    ]
    return "\n".join(lines)


def write(folder: Path = GENERATED) -> int:
    """Writes every page into ``folder`` (removing stale ones) and "Methods by task"; returns the count."""
    folder.mkdir(parents=True, exist_ok=True)
    written = pages()
    for stale in folder.glob("*.rst"):
        if stale.stem not in written:
            stale.unlink()
    for name, text in written.items():
        _write_if_changed(folder / f"{name}.rst", text)
    _write_if_changed(folder.parent / "by_task.rst", by_task())
    _write_if_changed(folder.parent / "index.rst", reference_index())
    return len(written)


def _write_if_changed(path: Path, text: str) -> None:
    # An unchanged page keeps its time stamp, so that Sphinx does not read it again.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the page names")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(pages())))
        return 0
    print(f"wrote {write()} pages into {GENERATED.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
