"""Writes ``docs/methods.md``: every public method and function of tensordict, and its file.

The API is spread over the mixins of ``tensordict/_ops`` and the classes; this index says
where each name is defined, and which classes define their own. Run it after moving or
adding a method (``make generate`` runs it); ``tests/test_method_index.py`` fails while
the checked-in page differs from what this script writes.

    python scripts/method_index.py            # rewrite docs/methods.md
    python scripts/method_index.py --check    # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "methods.md"


def _file_of(obj) -> str:
    """The repository path of the file that defines ``obj`` (a function, property or class)."""
    target = obj
    if isinstance(target, (classmethod, staticmethod)):
        target = target.__func__
    if isinstance(target, property):
        target = target.fget
    target = inspect.unwrap(target)
    try:
        path = Path(inspect.getfile(target)).resolve()
    except TypeError:
        return "(built in)"
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return f"(outside the repository: {path.name})"


def _definer(cls: type, name: str) -> type:
    """The class of ``cls``'s method resolution order that defines ``name``."""
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def _own_members(cls: type, base: type, public: list) -> list:
    """The public names that ``cls`` defines itself (or through a private class) and ``base`` lacks.

    A name that another public class defines is left to that class; torch's and Python's
    own names are left out.
    """
    names = []
    for name in sorted(dir(cls)):
        if name.startswith("_") or name in dir(base):
            continue
        definer = next((k for k in cls.__mro__ if name in vars(k)), None)
        if definer is None or definer is object:
            continue
        if definer.__module__.split(".")[0] in ("torch", "builtins", "abc", "typing"):
            continue
        if definer is not cls and definer.__name__ in public:
            continue
        names.append(name)
    return names


def _class_rows(base: type, concrete: list) -> list:
    rows = []
    for name in sorted(n for n in dir(base) if not n.startswith("_")):
        definer = _definer(base, name)
        if definer.__module__.startswith("torch") or definer is object:
            continue
        where = _file_of(vars(definer)[name])
        own = [
            cls.__name__
            for cls in concrete
            if _definer(cls, name) not in base.__mro__ and _definer(cls, name) is not None
        ]
        rows.append((name, where, ", ".join(own)))
    return rows


def index() -> dict:
    """The one walk of the public API: every name, the file that defines it, and its object.

    Returns a dict of lists of rows: ``"base"`` (name, file, classes with their own version)
    for TensorDictBase, ``"tensorclass"`` (name, file) for the methods only tensorclasses
    have, ``"memmap_tensor"`` (name, file) for MemoryMappedTensor's own methods, and
    ``"functions"`` / ``"classes"`` (name, file) for the routines and classes of
    ``tensordict.__all__``, and ``"class_members"``: each of those classes' own public
    names (MemoryMappedTensor's: the ones it adds to ``torch.Tensor``).
    ``scripts/api_pages.py`` writes the site's reference from it.
    """
    sys.path.insert(0, str(ROOT))
    import tensordict
    from tensordict import (
        LazyStackedTensorDict,
        MemoryMappedTensor,
        NonTensorStack,
        TensorDict,
        TensorDictBase,
        TypedTensorDict,
    )
    from tensordict._tensorclass.methods import _TensorClassMethods

    concrete = [TensorDict, LazyStackedTensorDict, NonTensorStack, TypedTensorDict]
    classes = [
        name for name in sorted(tensordict.__all__) if inspect.isclass(getattr(tensordict, name))
    ]
    memmap_tensor = [
        (name, _file_of(value))
        for name, value in sorted(vars(MemoryMappedTensor).items())
        if not name.startswith("_")
    ]
    members = {
        name: _own_members(getattr(tensordict, name), TensorDictBase, tensordict.__all__)
        for name in classes
    }
    members["MemoryMappedTensor"] = [name for name, _ in memmap_tensor]
    return {
        "base": _class_rows(TensorDictBase, concrete),
        "tensorclass": [
            (name, _file_of(vars(_TensorClassMethods)[name]))
            for name in sorted(vars(_TensorClassMethods))
            if not name.startswith("_") and name not in dir(TensorDictBase)
        ],
        "memmap_tensor": memmap_tensor,
        "functions": [
            (name, _file_of(obj))
            for name in sorted(tensordict.__all__)
            if inspect.isroutine(obj := getattr(tensordict, name))
        ],
        "classes": [(name, _file_of(getattr(tensordict, name))) for name in classes],
        "class_members": members,
    }


def render() -> str:
    """The page's text, made from the package as it is imported now."""
    rows = index()
    out = [
        "<!-- Written by scripts/method_index.py (make generate). Do not edit by hand. -->",
        "# Where each method lives",
        "",
        "Every public method of `TensorDictBase`, the file that defines it, and the classes",
        "that define their own version. Every tensorclass has these methods too: they",
        "forward to the tensordict it holds (`tensordict/_tensorclass/forwarding.py`).",
        "",
        "| method | defined in | own version in |",
        "| --- | --- | --- |",
    ]
    out += [f"| `{n}` | `{w}` | {o} |" for n, w, o in rows["base"]]
    out += [
        "",
        "## Tensorclass methods that tensordicts do not have",
        "",
        "| method | defined in |",
        "| --- | --- |",
    ]
    out += [f"| `{n}` | `{w}` |" for n, w in rows["tensorclass"]]
    out += [
        "",
        "## `MemoryMappedTensor`",
        "",
        "Its own methods (the others are `torch.Tensor`'s).",
        "",
        "| method | defined in |",
        "| --- | --- |",
    ]
    out += [f"| `{n}` | `{w}` |" for n, w in rows["memmap_tensor"]]
    out += ["", "## Functions of `tensordict`", "", "| function | defined in |", "| --- | --- |"]
    out += [f"| `{n}` | `{w}` |" for n, w in rows["functions"]]
    out += ["", "## Classes of `tensordict`", "", "| class | defined in |", "| --- | --- |"]
    out += [f"| `{n}` | `{w}` |" for n, w in rows["classes"]]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run `make generate`")
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
