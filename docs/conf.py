"""Sphinx configuration of the documentation site (``make docs``).

The site builds offline: no inventory of another project is fetched (references to torch,
numpy and the standard library stay plain text), and the theme ships its own assets.
Before each build, ``scripts/api_pages.py`` writes the reference pages into
``docs/reference/generated/``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path

from sphinx.pycode import ModuleAnalyzer
from sphinx.util.nodes import make_refnode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import api_pages  # noqa: E402

import tensordict  # noqa: E402
from tensordict.cli import build_parser  # noqa: E402

project = "tensordict"
author = "the tensordict authors"
copyright = "the tensordict authors"
release = version = tensordict.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
]
exclude_patterns = ["_build", "methods.md"]
html_theme = "furo"
html_title = f"tensordict {release}"
html_static_path: list[str] = []

autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_param = True
napoleon_use_keyword = True
napoleon_use_rtype = False
napoleon_preprocess_types = False
copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True

nitpicky = True
# Other projects' names: without their inventories (never fetched) they stay plain text.
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|numpy|np|typing|typing_extensions|collections|os|pathlib|zipfile)(\..*)?"),
    (r"py:.*", r"(concurrent|multiprocessing|threading|dataclasses|enum|types|abc|io|json)(\..*)?"),
    (
        r"py:.*",
        r"(safetensors|h5py|tqdm|functools|contextlib|argparse|weakref|queue|pickle)(\..*)?",
    ),
    (r"py:.*", r"(int|float|str|bool|bytes|list|tuple|dict|set|type|object|callable)"),
    (
        r"py:.*",
        r"(None|Ellipsis|EllipsisType|slice|range|Any|Callable|Sequence|Iterator|Iterable|Mapping)",
    ),
    (r"py:.*", r"(Exception|RuntimeError|ValueError|TypeError|KeyError|IndexError).*"),
    (r"py:.*", r"(OSError|FileNotFoundError|FileExistsError|AttributeError|NotImplementedError)"),
    (r"py:.*", r"(Warning|UserWarning|FutureWarning|DeprecationWarning|ImportError)"),
    (r"py:.*", r"(Path|ProcessGroup|ReduceOp|DeviceType|ShapeType|IndexType|T|Self)"),
    # Private modules and names are not on the site.
    (r"py:.*", r"(tensordict\.)?(.*\.)?_[A-Za-z].*|(tensordict\.utils\.)?LinkedList"),
    # tensordict.nn has no pages yet; its classes in tensordict.__all__ do.
    (r"py:.*", r"tensordict\.nn\..*|TensorDictModule.*|TensorDictPipe"),
    # The words of a docstring's type field ("int, optional", "sequence of str").
    (r"py:class", r"[a-z][a-z_ -]*|array-like|\"feature\"|.* .*"),
]
# Our short names in docstrings (``DimensionError``, ``NestedKey``, ``keys``): where they
# are documented on the site.
CLASS_KINDS = ("class", "exception", "data")
CALL_KINDS = ("method", "function", "property", "attribute", "classmethod", "staticmethod")
SHORT_NAME_HOMES = (
    "tensordict.errors",
    "tensordict",
    "tensordict.TensorDictBase",
    "tensordict.memmap",
)


def _aliases(modname: str, tags: dict) -> dict:
    """Tags under the public class names for the methods that a mixin of ``modname`` defines.

    viewcode looks a method up as ``TensorDictBase.memmap`` in the module that defines the
    function, where the source knows it as ``MemmapMixin.memmap``; this maps one to the other.
    """
    extra = {}
    for cname in tensordict.__all__:
        cls = getattr(tensordict, cname)
        if not inspect.isclass(cls):
            continue
        for name in dir(cls):
            definer = next((k for k in cls.__mro__ if name in vars(k)), None)
            if definer is None or definer.__module__ != modname:
                continue
            tag = tags.get(f"{definer.__qualname__}.{name}")
            if tag is not None:
                extra[f"{cname}.{name}"] = tag
    return extra


def _find_source(app, modname):
    if not modname.startswith("tensordict"):
        return None
    try:
        importlib.import_module(modname)
        analyzer = ModuleAnalyzer.for_module(modname)
        analyzer.find_tags()
    except Exception:
        return None
    tags = dict(analyzer.tags)
    tags.update(_aliases(modname, tags))
    return analyzer.code, tags


def _resolve_short_name(app, env, node, contnode):
    """Resolves a short name of ours (``DimensionError``) to its page, or leaves it missing."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    if "." in target and not target.startswith("tensordict."):
        return None  # another project's name (torch.dtype): plain text, never ours
    kinds = CLASS_KINDS if node.get("reftype") in ("class", "exc", "data", "obj") else CALL_KINDS
    last = target.rsplit(".", 1)[-1]
    for home in SHORT_NAME_HOMES:
        found = domain.objects.get(f"{home}.{last}")
        if found is not None and found.objtype in kinds:
            return make_refnode(
                app.builder, node["refdoc"], found.docname, found.node_id, contnode, target
            )
    return None


def _write_cli_page() -> None:
    """Writes the command line's page from its argparse parser (``docs/cli.rst``)."""
    os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal; the page must not vary
    parser = build_parser()
    lines = [
        ".. Written by docs/conf.py from tensordict/cli's parser. Do not edit by hand.",
        "",
        "The command line",
        "================",
        "",
        "The ``tensordict`` command (also ``python -m tensordict``) inspects memory-mapped",
        "folders and archives without writing Python, and runs the demos.",
        "",
        ".. code-block:: text",
        "",
        *[f"   {line}" for line in parser.format_help().splitlines()],
        "",
    ]
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in commands.choices.items():
        title = f"``tensordict {name}``"
        lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
        lines += [f"   {line}" for line in sub.format_help().splitlines()]
        lines.append("")
    page = Path(__file__).parent / "cli.rst"
    text = "\n".join(lines)
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


def setup(app):
    api_pages.write()
    _write_cli_page()
    app.connect("viewcode-find-source", _find_source)
    app.connect("missing-reference", _resolve_short_name)
